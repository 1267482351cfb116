//! A tenant's outbound HTTP settings (`"http"` and `"vault"` in its config.json): the hosts it
//! may call and how many background requests it may run at once, and the vault names its
//! requests may use. Plain data, checked at load; `crate::outbound` enforces them.

use serde::Deserialize;

/// The most entries of an allow list: a longer list is a sign of a mistake, and every request
/// walks it.
pub const MAX_ALLOW_ENTRIES: usize = 256;

/// The most background requests (`job:http`) a tenant may run at once.
pub const MAX_HTTP_CONCURRENCY: u32 = 64;

/// The `http` section of a tenant config.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantHttp {
    /// Hosts the tenant may call: `api.example.com`, `*.stripe.com` (any subdomain, not the
    /// domain itself), optionally with a port (`127.0.0.1:8080`); without one, 80 and 443.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Background requests (`job:http`) the tenant may run at once (default 4).
    #[serde(default = "default_concurrency")]
    pub concurrency: u32,
}

fn default_concurrency() -> u32 {
    4
}

impl Default for TenantHttp {
    fn default() -> Self {
        TenantHttp {
            allow: Vec::new(),
            concurrency: default_concurrency(),
        }
    }
}

/// One parsed entry of an allow list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowEntry {
    /// The host, lowercase, without brackets for IPv6; for a wildcard, the domain after `*.`.
    pub host: String,
    /// `*.` in front: any subdomain of `host`.
    pub wildcard: bool,
    /// The port, when one is named.
    pub port: Option<u16>,
}

impl AllowEntry {
    /// Parses `host`, `*.domain`, `host:port`, `[v6]:port`; says why an entry is refused.
    pub fn parse(entry: &str) -> Result<Self, String> {
        let bad = |why: &str| format!("{entry:?} {why}");
        if entry.contains("://") || entry.contains('/') {
            return Err(bad(
                "is not a host: write the host alone (api.example.com, *.example.com, host:port)",
            ));
        }
        let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
            let (h, after) = rest
                .split_once(']')
                .ok_or_else(|| bad("has '[' without ']'"))?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or_else(|| bad("has text after ']'"))?,
                ),
            };
            if h.parse::<std::net::Ipv6Addr>().is_err() {
                return Err(bad(
                    "has brackets around something that is not an IPv6 address",
                ));
            }
            (h.to_string(), port)
        } else if entry.matches(':').count() > 1 {
            return Err(bad(
                "looks like an IPv6 address: write it in brackets, [::1]:8080",
            ));
        } else {
            match entry.split_once(':') {
                Some((h, p)) => (h.to_string(), Some(p)),
                None => (entry.to_string(), None),
            }
        };
        let port = match port {
            None => None,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => Some(n),
                _ => return Err(bad("has a port that is not 1 to 65535")),
            },
        };
        let host = host.to_ascii_lowercase();
        let (wildcard, host) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest.to_string()),
            None => (false, host),
        };
        let label_ok = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        };
        let is_ip = host.parse::<std::net::IpAddr>().is_ok();
        if host.is_empty() || host.len() > 253 || !(is_ip || host.split('.').all(label_ok)) {
            return Err(bad(
                "is not a host name: letters, digits, '-' and '.', optionally *. in front",
            ));
        }
        if wildcard && (is_ip || !host.contains('.')) {
            return Err(bad(
                "is too wide: *. must be followed by a domain with a dot, as in *.example.com",
            ));
        }
        Ok(AllowEntry {
            host,
            wildcard,
            port,
        })
    }

    /// Whether a request to `host` (lowercase, no brackets) on `port` matches this entry.
    pub fn permits(&self, host: &str, port: u16) -> bool {
        let host_ok = if self.wildcard {
            host.len() > self.host.len() + 1
                && host.ends_with(&self.host)
                && host.as_bytes()[host.len() - self.host.len() - 1] == b'.'
        } else {
            host == self.host
        };
        let port_ok = match self.port {
            Some(p) => p == port,
            None => port == 80 || port == 443,
        };
        host_ok && port_ok
    }
}

/// Checks the `http` section and the `vault` list of a tenant config; says which field is wrong.
pub(crate) fn validate(http: &TenantHttp, vault: &[String]) -> Result<(), (String, String)> {
    if http.allow.len() > MAX_ALLOW_ENTRIES {
        return Err((
            "http.allow".into(),
            format!(
                "has {} entries; at most {MAX_ALLOW_ENTRIES}: use a wildcard (*.example.com)",
                http.allow.len()
            ),
        ));
    }
    for (i, e) in http.allow.iter().enumerate() {
        AllowEntry::parse(e).map_err(|why| (format!("http.allow[{i}]"), why))?;
    }
    if !(1..=MAX_HTTP_CONCURRENCY).contains(&http.concurrency) {
        return Err((
            "http.concurrency".into(),
            format!(
                "must be 1 to {MAX_HTTP_CONCURRENCY}, not {}",
                http.concurrency
            ),
        ));
    }
    for (i, name) in vault.iter().enumerate() {
        crate::keys::check_secret_name(name).map_err(|why| (format!("vault[{i}]"), why))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_match_hosts_and_ports_as_written() {
        // GIVEN an exact host, a wildcard, a host with a port and an IPv6 literal
        let exact = AllowEntry::parse("API.example.com").unwrap();
        let wild = AllowEntry::parse("*.stripe.com").unwrap();
        let port = AllowEntry::parse("127.0.0.1:8080").unwrap();
        let v6 = AllowEntry::parse("[::1]:9000").unwrap();
        // WHEN hosts are checked THEN only what each names passes
        assert!(exact.permits("api.example.com", 443));
        assert!(exact.permits("api.example.com", 80));
        assert!(!exact.permits("api.example.com", 8443));
        assert!(!exact.permits("evil-api.example.com", 443));
        assert!(wild.permits("api.stripe.com", 443));
        assert!(wild.permits("a.b.stripe.com", 443));
        assert!(!wild.permits("stripe.com", 443));
        assert!(!wild.permits("evilstripe.com", 443));
        assert!(port.permits("127.0.0.1", 8080));
        assert!(!port.permits("127.0.0.1", 8081));
        assert!(v6.permits("::1", 9000));
    }

    #[test]
    fn bad_entries_are_refused_with_why() {
        // GIVEN entries that are URLs, too wide, bad ports or unbracketed IPv6
        // WHEN each is parsed THEN it is refused saying what to write instead
        for (entry, why) in [
            ("https://api.example.com", "write the host alone"),
            ("*.com", "too wide"),
            ("*", "not a host name"),
            ("api.example.com:0", "port"),
            ("api.example.com:99999", "port"),
            ("::1", "brackets"),
            ("a b.com", "not a host name"),
            ("", "not a host name"),
        ] {
            let e = AllowEntry::parse(entry).unwrap_err();
            assert!(e.contains(why), "{entry}: {e}");
        }
    }
}
