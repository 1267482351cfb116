//! Which addresses a tenant's request may never reach: every block of IANA's IPv4 and IPv6
//! special-purpose address registries that is not globally reachable (private, loopback,
//! link-local where the cloud metadata service lives, shared, documentation, benchmarking,
//! reserved, ...), multicast, IPv6 outside global unicast, and the addresses of this machine's
//! own interfaces ([`own_address`]). Checked on the addresses a name resolved to, and the
//! connection then goes to the address that passed, so a name that resolves differently the
//! second time (DNS rebinding) gains nothing.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The non-public range `ip` is in, by name, or `None` for a public address. IPv4 addresses
/// inside IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::/96`) are judged by the IPv4 address
/// they carry, since that is where a connection to them goes.
pub fn blocked_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

/// IPv4 blocks that are not globally reachable: IANA's IPv4 special-purpose registry (RFC 6890
/// and its updates) where "Globally Reachable" is false or N/A, plus multicast. Longest first
/// where blocks nest, so that the more telling name wins.
const V4: &[(u32, u8, &str)] = &[
    (0xffff_ffff, 32, "255.255.255.255/32 (limited broadcast)"),
    (0xc000_0008, 32, "192.0.0.8/32 (IPv4 dummy address)"),
    (0xc000_00aa, 32, "192.0.0.170/32 (NAT64/DNS64 discovery)"),
    (0xc000_00ab, 32, "192.0.0.171/32 (NAT64/DNS64 discovery)"),
    (
        0xc000_0000,
        29,
        "192.0.0.0/29 (IPv4 service continuity prefix)",
    ),
    (0xc000_0000, 24, "192.0.0.0/24 (IETF protocol assignments)"),
    (0xc000_0200, 24, "192.0.2.0/24 (documentation, TEST-NET-1)"),
    (
        0xc058_6300,
        24,
        "192.88.99.0/24 (deprecated 6to4 relay anycast)",
    ),
    (
        0xc633_6400,
        24,
        "198.51.100.0/24 (documentation, TEST-NET-2)",
    ),
    (
        0xcb00_7100,
        24,
        "203.0.113.0/24 (documentation, TEST-NET-3)",
    ),
    (
        0xa9fe_0000,
        16,
        "169.254.0.0/16 (link-local, where the metadata service is)",
    ),
    (0xc0a8_0000, 16, "192.168.0.0/16 (private)"),
    (0xc612_0000, 15, "198.18.0.0/15 (benchmarking)"),
    (0xac10_0000, 12, "172.16.0.0/12 (private)"),
    (0x6440_0000, 10, "100.64.0.0/10 (shared address space)"),
    (0x0000_0000, 8, "0.0.0.0/8 (this network)"),
    (0x0a00_0000, 8, "10.0.0.0/8 (private)"),
    (0x7f00_0000, 8, "127.0.0.0/8 (loopback)"),
    (0xe000_0000, 4, "224.0.0.0/4 (multicast)"),
    (0xf000_0000, 4, "240.0.0.0/4 (reserved)"),
];

/// Single addresses inside a blocked IPv4 block that the registry lists as globally reachable.
const V4_GLOBAL: &[(u32, &str)] = &[(0xc000_0009, "PCP anycast"), (0xc000_000a, "TURN anycast")];

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let a = u32::from(ip);
    if V4_GLOBAL.iter().any(|(g, _)| *g == a) {
        return None;
    }
    V4.iter()
        .find(|(net, len, _)| a & mask32(*len) == *net)
        .map(|(_, _, name)| *name)
}

fn mask32(len: u8) -> u32 {
    u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0)
}

fn mask128(len: u8) -> u128 {
    u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0)
}

/// IPv6 blocks inside global unicast (`2000::/3`) that are not globally reachable (IANA's
/// IPv6 special-purpose registry); everything outside `2000::/3` is refused as a whole, since
/// it is not global unicast (loopback, unspecified, ULA, link-local, site-local, multicast,
/// discard, SRv6 SIDs, the reserved blocks).
const V6: &[(u128, u8, &str)] = &[
    (
        0x2001_0db8_0000_0000_0000_0000_0000_0000,
        32,
        "2001:db8::/32 (documentation)",
    ),
    (
        0x2001_0000_0000_0000_0000_0000_0000_0000,
        23,
        "2001::/23 (IETF protocol assignments: Teredo, benchmarking, ORCHID)",
    ),
    (
        0x2002_0000_0000_0000_0000_0000_0000_0000,
        16,
        "2002::/16 (6to4)",
    ),
    (
        0x3fff_0000_0000_0000_0000_0000_0000_0000,
        20,
        "3fff::/20 (documentation)",
    ),
];

/// Blocks inside `2001::/23` that the registry lists as globally reachable.
const V6_GLOBAL: &[(u128, u8)] = &[
    (0x2001_0001_0000_0000_0000_0000_0000_0001, 128), // PCP anycast
    (0x2001_0001_0000_0000_0000_0000_0000_0002, 128), // TURN anycast
    (0x2001_0001_0000_0000_0000_0000_0000_0003, 128), // DNS-SD service registration anycast
    (0x2001_0003_0000_0000_0000_0000_0000_0000, 32),  // AMT
    (0x2001_0004_0112_0000_0000_0000_0000_0000, 48),  // AS112-v6
    (0x2001_0020_0000_0000_0000_0000_0000_0000, 28),  // ORCHIDv2
    (0x2001_0030_0000_0000_0000_0000_0000_0000, 28),  // drone remote ID tags
];

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    let a = u128::from(ip);
    let s = ip.segments();
    // NAT64's well-known prefix is globally reachable for what it carries.
    if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
        return blocked_v4(embedded_v4(s[6], s[7]));
    }
    if a >> 125 != 0b001 {
        return Some(match s[0] {
            _ if ip.is_loopback() => "::1 (loopback)",
            _ if ip.is_unspecified() => ":: (unspecified)",
            0 => "::/8 (reserved: IPv4-compatible and other embedded forms)",
            0x64 if s[1] == 0xff9b && s[2] == 1 => {
                "64:ff9b:1::/48 (local-use IPv4/IPv6 translation)"
            }
            0x100 if s[1..4] == [0, 0, 0] => "100::/64 (discard-only)",
            x if x & 0xfe00 == 0xfc00 => "fc00::/7 (unique local, where the metadata service is)",
            x if x & 0xffc0 == 0xfe80 => "fe80::/10 (link-local)",
            x if x & 0xffc0 == 0xfec0 => "fec0::/10 (site-local)",
            x if x & 0xff00 == 0xff00 => "ff00::/8 (multicast)",
            0x5f00 => "5f00::/16 (segment routing SIDs)",
            _ => "an IPv6 block outside 2000::/3 (reserved, not global unicast)",
        });
    }
    if V6_GLOBAL.iter().any(|(net, len)| a & mask128(*len) == *net) {
        return None;
    }
    V6.iter()
        .find(|(net, len, _)| a & mask128(*len) == *net)
        .map(|(_, _, name)| *name)
}

fn embedded_v4(hi: u16, lo: u16) -> Ipv4Addr {
    Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8)
}

/// How long the list of this machine's addresses is reused before it is read again: a
/// flood of requests costs one interface listing per second, and an address the machine
/// gains is refused within this.
const OWN_TTL: Duration = Duration::from_secs(1);

/// Whether `ip` is an address of one of this machine's network interfaces (a service bound
/// to `0.0.0.0` answers on each of them, whatever range it is in). IPv4 inside IPv6 is judged
/// by the IPv4 address. When the interfaces cannot be listed, no address counts as this
/// machine's: the range check still applies.
pub fn own_address(ip: IpAddr) -> bool {
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    static CACHE: Mutex<Option<(Instant, Vec<IpAddr>)>> = Mutex::new(None);
    let mut cache = CACHE.lock().unwrap_or_else(|p| p.into_inner());
    let fresh = cache.as_ref().is_some_and(|(at, _)| at.elapsed() < OWN_TTL);
    if !fresh {
        let list = if_addrs::get_if_addrs()
            .map(|ifs| ifs.into_iter().map(|i| i.ip()).collect())
            .unwrap_or_default();
        *cache = Some((Instant::now(), list));
    }
    cache.as_ref().is_some_and(|(_, list)| list.contains(&ip))
}

/// Why a request may not go to `ip`, or `None` when it may: a non-public range
/// ([`blocked_range`]) or an address of this machine ([`own_address`]).
pub fn refusal(ip: IpAddr) -> Option<String> {
    if let Some(range) = blocked_range(ip) {
        return Some(format!("in {range}"));
    }
    own_address(ip).then(|| "an address of this machine's own network interfaces".to_string())
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

    #[test]
    fn every_special_purpose_block_that_is_not_globally_reachable_is_refused() {
        // GIVEN the first, a middle and the last address of every block of IANA's IPv4 and
        // IPv6 special-purpose registries whose "Globally Reachable" is false or N/A, with
        // the name the refusal must carry
        let v4 = [
            ("0.0.0.0", "0.0.0.0", "this network"),
            ("0.255.255.255", "0.1.2.3", "this network"),
            ("10.0.0.0", "10.255.255.255", "private"),
            ("100.64.0.0", "100.127.255.255", "shared address space"),
            ("127.0.0.0", "127.255.255.255", "loopback"),
            ("169.254.0.0", "169.254.255.255", "link-local"),
            ("172.16.0.0", "172.31.255.255", "private"),
            ("192.0.0.0", "192.0.0.7", "service continuity"),
            ("192.0.0.8", "192.0.0.8", "dummy"),
            ("192.0.0.11", "192.0.0.255", "IETF protocol assignments"),
            ("192.0.0.170", "192.0.0.171", "NAT64/DNS64"),
            ("192.0.2.0", "192.0.2.255", "TEST-NET-1"),
            ("192.88.99.0", "192.88.99.255", "6to4 relay"),
            ("192.168.0.0", "192.168.255.255", "private"),
            ("198.18.0.0", "198.19.255.255", "benchmarking"),
            ("198.51.100.0", "198.51.100.255", "TEST-NET-2"),
            ("203.0.113.0", "203.0.113.255", "TEST-NET-3"),
            ("224.0.0.0", "239.255.255.255", "multicast"),
            ("240.0.0.0", "255.255.255.254", "reserved"),
            ("255.255.255.255", "255.255.255.255", "broadcast"),
        ];
        let v6 = [
            ("::", "::", "unspecified"),
            ("::1", "::1", "loopback"),
            ("::ffff:10.0.0.1", "::ffff:192.0.2.1", ""),
            ("64:ff9b:1::", "64:ff9b:1:ffff::1", "local-use"),
            ("64:ff9b::c000:201", "64:ff9b::cb00:7101", "TEST-NET"),
            ("100::", "100::ffff:ffff:ffff:ffff", "discard"),
            ("100:0:0:1::", "100:0:0:1:ffff::", "outside 2000::/3"),
            ("2001::", "2001:0:ffff::1", "IETF protocol assignments"),
            ("2001:2::", "2001:2:0:ffff::", "IETF protocol assignments"),
            ("2001:10::", "2001:1f:ffff::", "IETF protocol assignments"),
            ("2001:1::4", "2001:1ff:ffff::", "IETF protocol assignments"),
            ("2001:db8::", "2001:db8:ffff:ffff::1", "documentation"),
            ("2002::", "2002:808:808::1", "6to4"),
            ("3fff::", "3fff:fff:ffff::1", "documentation"),
            ("5f00::", "5f00:ffff::1", "segment routing"),
            ("fc00::", "fdff:ffff::1", "unique local"),
            ("fe80::", "febf:ffff::1", "link-local"),
            ("fec0::", "feff::1", "site-local"),
            ("ff00::", "ff02::1", "multicast"),
            ("4000::", "1000::1", "not global unicast"),
        ];
        // WHEN each is judged THEN it is refused with its block's name
        for (a, b, name) in v4.iter().chain(v6.iter()) {
            for ip in [a, b] {
                let r = blocked_range(ip.parse().unwrap());
                assert!(
                    r.is_some_and(|r| r.contains(name)),
                    "{ip} should be refused as {name:?}, got {r:?}"
                );
            }
        }
        // AND the globally reachable exceptions inside refused blocks, and public space, pass
        for ip in [
            "192.0.0.9",
            "192.0.0.10",
            "192.31.196.1",
            "192.52.193.1",
            "192.175.48.1",
            "2001:1::1",
            "2001:1::2",
            "2001:1::3",
            "2001:3::1",
            "2001:4:112::1",
            "2001:20::1",
            "2001:30::1",
            "2001:200::1",
            "2620:4f:8000::1",
            "2a00:1450::1",
            "64:ff9b::808:808",
        ] {
            assert_eq!(blocked_range(ip.parse().unwrap()), None, "{ip}");
        }
    }

    #[test]
    fn this_machines_interface_addresses_are_its_own() {
        // GIVEN the addresses of this machine's interfaces (loopback at least)
        let ifs = if_addrs::get_if_addrs().unwrap();
        assert!(!ifs.is_empty());
        // WHEN each is judged THEN it is this machine's, and refused
        for i in &ifs {
            assert!(own_address(i.ip()), "{}", i.ip());
            assert!(refusal(i.ip()).is_some(), "{}", i.ip());
        }
        // AND a public address no interface has is neither
        assert!(!own_address("8.8.8.8".parse().unwrap()));
        assert_eq!(refusal("8.8.8.8".parse().unwrap()), None);
    }
}
