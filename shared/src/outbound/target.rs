//! Where a request goes: the scheme, host and port of its URL (what the allow list and the
//! address checks judge) and the path and query sent to it.
//!
//! Parsed here rather than by a URL library because the URL may still hold `{{vault:NAME}}`
//! placeholders in its path or query (filled only later, out of the script's sight), and
//! because nothing is normalised: the host checked is the host connected to.

/// The longest URL accepted, in bytes.
pub const MAX_URL_BYTES: usize = 8 * 1024;

/// A parsed URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// `https` (TLS) or `http`.
    pub https: bool,
    /// The host, lowercase; an IPv6 address without its brackets.
    pub host: String,
    /// The port, explicit or the scheme's.
    pub port: u16,
    /// The path and query, starting with `/`; the fragment is dropped (it is never sent).
    pub path: String,
}

impl Target {
    /// Parses an `http://` or `https://` URL; says why one is refused.
    pub fn parse(url: &str) -> Result<Target, String> {
        if url.len() > MAX_URL_BYTES {
            return Err(format!(
                "url is {} bytes long; at most {MAX_URL_BYTES}",
                url.len()
            ));
        }
        if url.chars().any(|c| c.is_control() || c == ' ') {
            return Err("url contains a space or a control character; percent-encode it".into());
        }
        let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
        let (https, rest) = if lower.starts_with("https://") {
            (true, &url[8..])
        } else if lower.starts_with("http://") {
            (false, &url[7..])
        } else {
            return Err(format!(
                "url {:?} must start with https:// or http://",
                crate::text::cut_text(url.to_string(), 200)
            ));
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, tail) = rest.split_at(end);
        if authority.contains("{{") {
            return Err(
                "url: vault placeholders may not be in the host; put the secret in the path, a header or the body"
                    .into(),
            );
        }
        if authority.contains('@') {
            return Err(
                "url: user:password@ in the URL is not supported; send an authorization header"
                    .into(),
            );
        }
        let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
            let (h, after) = v6
                .split_once(']')
                .ok_or("url: the host has '[' without ']'")?;
            h.parse::<std::net::Ipv6Addr>()
                .map_err(|_| format!("url: [{h}] is not an IPv6 address"))?;
            let port = match after {
                "" => None,
                p => Some(
                    p.strip_prefix(':')
                        .ok_or("url: text after ']' in the host")?,
                ),
            };
            (h.to_ascii_lowercase(), port)
        } else {
            match authority.split_once(':') {
                Some((h, p)) => (h.to_ascii_lowercase(), Some(p)),
                None => (authority.to_ascii_lowercase(), None),
            }
        };
        let port = match port {
            None if https => 443,
            None => 80,
            Some(p) => match p.parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(format!("url: port {p:?} is not 1 to 65535")),
            },
        };
        let host_ok = !host.is_empty()
            && host.len() <= 253
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
        if !host_ok {
            return Err(format!("url: {host:?} is not a host name"));
        }
        let tail = tail.split('#').next().unwrap_or("");
        let path = if tail.starts_with('/') {
            tail.to_string()
        } else {
            format!("/{tail}")
        };
        Ok(Target {
            https,
            host: host.trim_end_matches('.').to_string(),
            port,
            path,
        })
    }

    /// The `host` header: the host (in brackets for IPv6), with the port unless it is the
    /// scheme's.
    pub fn authority(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        let default = if self.https { 443 } else { 80 };
        if self.port == default {
            host
        } else {
            format!("{host}:{}", self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_hosts_ports_and_paths_and_refuses_what_cannot_be_checked() {
        // GIVEN URLs of each shape
        // WHEN parsed THEN host, port and path are what is connected to and sent
        let t = Target::parse("HTTPS://Api.Example.com/v1/charges?x=1#frag").unwrap();
        assert_eq!(
            (t.https, t.host.as_str(), t.port, t.path.as_str()),
            (true, "api.example.com", 443, "/v1/charges?x=1")
        );
        assert_eq!(t.authority(), "api.example.com");
        let t = Target::parse("http://127.0.0.1:8080").unwrap();
        assert_eq!((t.port, t.path.as_str()), (8080, "/"));
        assert_eq!(t.authority(), "127.0.0.1:8080");
        let t = Target::parse("http://[::1]:9/x").unwrap();
        assert_eq!((t.host.as_str(), t.authority()), ("::1", "[::1]:9".into()));
        let t = Target::parse("https://a.com/p/{{vault:k}}?q={{vault:k}}").unwrap();
        assert_eq!(t.path, "/p/{{vault:k}}?q={{vault:k}}");
        // AND refuses what it cannot check or send
        for (url, why) in [
            ("ftp://a.com/", "must start with"),
            ("https://user:pw@a.com/", "user:password"),
            ("https://{{vault:k}}.a.com/", "may not be in the host"),
            ("https://a.com:0/", "port"),
            ("https://a.com:x/", "port"),
            ("https://a com/", "space"),
            ("https:///x", "not a host name"),
            ("https://a.com\n/", "control"),
        ] {
            let e = Target::parse(url).unwrap_err();
            assert!(e.contains(why), "{url}: {e}");
        }
    }
}
