//! Which addresses a tenant's request may never reach: private, loopback, link-local (the
//! cloud metadata service lives there), shared (carrier-grade NAT) and other non-public ranges.
//! Checked on the addresses a name resolved to, and the connection then goes to the address
//! that passed, so a name that resolves differently the second time (DNS rebinding) gains
//! nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The non-public range `ip` is in, by name, or `None` for a public address. IPv4 addresses
/// inside IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`, 6to4 `2002::/16`) are judged
/// by the IPv4 address they carry.
pub fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    Some(match (a, b) {
        (0, _) => "0.0.0.0/8 (this network)",
        (10, _) => "10.0.0.0/8 (private)",
        (100, 64..=127) => "100.64.0.0/10 (shared address space)",
        (127, _) => "127.0.0.0/8 (loopback)",
        (169, 254) => "169.254.0.0/16 (link-local, where the metadata service is)",
        (172, 16..=31) => "172.16.0.0/12 (private)",
        (192, 168) => "192.168.0.0/16 (private)",
        (192, 0) if ip.octets()[2] == 0 => "192.0.0.0/24 (IETF protocol assignments)",
        (198, 18..=19) => "198.18.0.0/15 (benchmarking)",
        (224..=239, _) => "224.0.0.0/4 (multicast)",
        (240..=255, _) => "240.0.0.0/4 (reserved, broadcast)",
        _ => return None,
    })
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    let s = ip.segments();
    if ip.is_loopback() {
        return Some("::1 (loopback)");
    }
    if ip.is_unspecified() {
        return Some(":: (unspecified)");
    }
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return blocked_v4(embedded_v4(s[6], s[7]));
    }
    if s[0] == 0x2002 {
        return blocked_v4(embedded_v4(s[1], s[2]));
    }
    // IPv4-compatible (deprecated) ::a.b.c.d.
    if s[..6] == [0, 0, 0, 0, 0, 0] {
        return blocked_v4(embedded_v4(s[6], s[7]));
    }
    Some(match s[0] {
        x if x & 0xfe00 == 0xfc00 => "fc00::/7 (unique local, where the metadata service is)",
        x if x & 0xffc0 == 0xfe80 => "fe80::/10 (link-local)",
        x if x & 0xffc0 == 0xfec0 => "fec0::/10 (site-local)",
        x if x & 0xff00 == 0xff00 => "ff00::/8 (multicast)",
        _ => return None,
    })
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_named_range_is_blocked_and_public_addresses_pass() {
        // GIVEN one address in each range the platform refuses, and some public ones
        let blocked = [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:0a00:0001::",
            "::7f00:1",
        ];
        let public = [
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ];
        // WHEN each is judged THEN the blocked ones name their range and the rest pass
        for a in blocked {
            assert!(
                blocked_range(a.parse().unwrap()).is_some(),
                "{a} should be refused"
            );
        }
        for a in public {
            assert_eq!(blocked_range(a.parse().unwrap()), None, "{a}");
        }
        assert_eq!(
            blocked_range("169.254.169.254".parse().unwrap()),
            Some("169.254.0.0/16 (link-local, where the metadata service is)")
        );
    }
}
