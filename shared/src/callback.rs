//! Callback URLs: `native.barrier.callback_url(id, member)` gives a partner that can only make
//! an HTTPS call a URL that acks one member of one barrier of one tenant until it expires.
//! `POST` an outcome (`{ ok, error?, result? }`, or nothing for ok) to it; a second POST is a
//! duplicate, as any second ack.
//!
//! The URL is `<base>/v1/callback/<payload>.<signature>`: the payload is the hex of the JSON
//! `[tenant, barrier, member, expires_s, chain]` (the chain of the script that made it, which
//! a POST without a `traceparent` of its own joins; URLs made before had no chain), the signature HMAC-SHA256 of the payload under the
//! deployment's secret. Whoever changes a byte of it, or makes one up, gets 401; an expired
//! one, correctly signed, 410; neither changes anything. The secret never leaves the process:
//! on the embedded backend it is `.native/callback.key` (made 0600 on first use), on AWS it
//! comes from Secrets Manager through the function's environment (`NATIVE_CALLBACK_SECRET`).
//!
//! The base of the URL is `NATIVE_PUBLIC_URL` when set (the template sets the HTTP function's
//! URL on the functions that run scripts from queues and direct invocations). The HTTP function
//! cannot be given its own URL (the URL resource depends on the function), so it takes the base
//! from each request's domain name ([`base_from_domain`], [`at_base`]); without either, URLs
//! are relative.

use std::future::Future;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::{Error, Result};

/// The file of the embedded backend's secret, in `.native/`.
pub const KEY_FILE: &str = "callback.key";
/// Where the base URL comes from when set: the public address of the HTTP surface.
pub const BASE_URL_VAR: &str = "NATIVE_PUBLIC_URL";
/// The environment variable that holds the secret on AWS.
pub const SECRET_VAR: &str = "NATIVE_CALLBACK_SECRET";
/// The longest a URL may live: a barrier's life.
pub const MAX_TTL_S: i64 = crate::barrier::TTL_S;

/// Runs `f` as the work of an HTTP request that arrived at `base` (e.g. `https://<function
/// URL domain>`): callback URLs signed inside it start there unless `NATIVE_PUBLIC_URL` is set.
/// The base travels in the request's [`crate::observe::RequestContext`], onto the script's
/// thread too.
pub async fn at_base<F: Future>(base: Option<String>, f: F) -> F::Output {
    crate::observe::in_context(|c| c.public_base = base, f).await
}

/// The base of the request the current task or thread serves, if one was set.
pub fn request_base() -> Option<String> {
    crate::observe::context().public_base
}

/// `https://<domain>` for the domain name of a function URL request (its
/// `requestContext.domainName`), if it is a plain host name (letters, digits, '-', '.', at most
/// 253 bytes); None for anything else, which then signs relative URLs rather than a URL to a
/// host the request made up.
pub fn base_from_domain(domain: &str) -> Option<String> {
    let ok = !domain.is_empty()
        && domain.len() <= 253
        && !domain.starts_with(['.', '-'])
        && domain
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.');
    ok.then(|| format!("https://{}", domain.to_ascii_lowercase()))
}

/// Signs and checks callback URLs of one deployment.
pub struct Signer {
    key: Vec<u8>,
    /// The HTTP surface, without a trailing slash.
    pub base_url: String,
}

impl std::fmt::Debug for Signer {
    // Never the key.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer")
            .field("base_url", &self.base_url)
            .finish_non_exhaustive()
    }
}

/// What a valid token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The tenant.
    pub tenant: String,
    /// The barrier.
    pub barrier: String,
    /// The member.
    pub member: String,
    /// When it expires, in seconds since the epoch.
    pub expires_s: i64,
    /// The chain of the script that made the URL: a POST to it that names no chain of its own
    /// (`traceparent`) is of this one. Absent in URLs made before issue 55.
    pub chain: Option<String>,
}

/// A token's payload: `[tenant, barrier, member, expires_s]`, and the chain after them in
/// URLs made since issue 55.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Payload {
    Chained(String, String, String, i64, String),
    Plain(String, String, String, i64),
}

/// Why a token is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Not a token this deployment signed (forged, altered, malformed): 401.
    BadSignature,
    /// Signed, but past its expiry: 410.
    Expired,
}

/// HMAC-SHA256 (RFC 2104) over `msg`.
pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let pad = |b: u8| k.iter().map(|x| x ^ b).collect::<Vec<u8>>();
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

/// Whether `given` is exactly `expected`, compared in constant time (the length is no secret:
/// every signature is 64 characters).
fn same(given: &[u8], expected: &[u8]) -> bool {
    use subtle::ConstantTimeEq;
    given.len() == expected.len() && bool::from(given.ct_eq(expected))
}

impl Signer {
    /// A signer over a secret of at least 32 bytes.
    pub fn new(key: Vec<u8>, base_url: &str) -> Result<Self> {
        if key.len() < 32 {
            return Err(Error::config(
                "callback secret",
                "-",
                format!("is {} bytes; it needs at least 32", key.len()),
            ));
        }
        Ok(Signer {
            key,
            base_url: base_url.trim_end_matches('/').to_string(),
        })
    }

    /// The token for a member, valid until `expires_s`.
    pub fn token(&self, t: &Target) -> String {
        let payload = match &t.chain {
            Some(chain) => serde_json::json!([t.tenant, t.barrier, t.member, t.expires_s, chain]),
            None => serde_json::json!([t.tenant, t.barrier, t.member, t.expires_s]),
        }
        .to_string();
        let payload = hex::encode(payload);
        let sig = hex::encode(hmac_sha256(&self.key, payload.as_bytes()));
        format!("{payload}.{sig}")
    }

    /// The URL for a member: on this signer's base, or when it has none on the base of the
    /// request being served ([`at_base`]), else relative.
    pub fn url(&self, t: &Target) -> String {
        let base = match self.base_url.as_str() {
            "" => request_base().unwrap_or_default(),
            b => b.to_string(),
        };
        let base = base.trim_end_matches('/');
        format!("{base}/v1/callback/{}", self.token(t))
    }

    /// What a token names, if this deployment signed it and it has not expired at `now_s`.
    pub fn check(&self, token: &str, now_s: i64) -> std::result::Result<Target, Refused> {
        let (payload, sig) = token.rsplit_once('.').ok_or(Refused::BadSignature)?;
        // The signature has one form, the lower-case hex that `token` writes: compared as
        // text, so that no other spelling of the same bytes (upper-case digits) is accepted.
        let expected = hex::encode(hmac_sha256(&self.key, payload.as_bytes()));
        if !same(sig.as_bytes(), expected.as_bytes()) {
            return Err(Refused::BadSignature);
        }
        // Signed by us: what follows can only fail for a token of another format version.
        let text = hex::decode(payload).map_err(|_| Refused::BadSignature)?;
        let (tenant, barrier, member, expires_s, chain) =
            match serde_json::from_slice(&text).map_err(|_| Refused::BadSignature)? {
                Payload::Chained(t, b, m, e, c) => (t, b, m, e, Some(c)),
                Payload::Plain(t, b, m, e) => (t, b, m, e, None),
            };
        if expires_s <= now_s {
            return Err(Refused::Expired);
        }
        Ok(Target {
            tenant,
            barrier,
            member,
            expires_s,
            chain: chain.filter(|c| crate::ports::is_trace(c)),
        })
    }
}

/// The embedded backend's secret: `.native/callback.key`, 32 random bytes in hex, made
/// readable by the owner only on first use. It is written whole and synced under a temporary
/// name, then linked into place and its folder synced: a power cut leaves no key or the whole
/// key, never an empty file; of two processes making it at once, the first one's wins.
pub fn local_key(state_dir: &Path) -> Result<Vec<u8>> {
    let path = state_dir.join(KEY_FILE);
    let fail = |e: std::io::Error| {
        Error::backend(
            "embedded",
            format!("cannot read or make {}", path.display()),
            e,
        )
    };
    match std::fs::read_to_string(&path) {
        Ok(text) => return parse_key(&path, &text),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(fail(e)),
        Err(_) => {}
    }
    let key: [u8; 32] = rand::random();
    let tmp = state_dir.join(format!(".{KEY_FILE}.{:016x}", rand::random::<u64>()));
    let write = || -> std::io::Result<()> {
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let mut f = opts.open(&tmp)?;
        std::io::Write::write_all(&mut f, hex::encode(key).as_bytes())?;
        f.sync_all()
    };
    let written = write();
    let linked = written.and_then(|()| std::fs::hard_link(&tmp, &path));
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => {
            std::fs::File::open(state_dir)
                .and_then(|d| d.sync_all())
                .map_err(fail)?;
            Ok(key.to_vec())
        }
        // Another process made it first: use theirs.
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            let text = std::fs::read_to_string(&path).map_err(fail)?;
            parse_key(&path, &text)
        }
        Err(e) => Err(fail(e)),
    }
}

/// Checks `.native/callback.key` if there is one: an empty or malformed key is an error that
/// says so (and what to do), at start rather than at the first callback URL.
pub fn check_local_key(state_dir: &Path) -> Result<()> {
    let path = state_dir.join(KEY_FILE);
    match std::fs::read_to_string(&path) {
        Ok(text) => parse_key(&path, &text).map(|_| ()),
        Err(_) => Ok(()),
    }
}

fn parse_key(path: &Path, text: &str) -> Result<Vec<u8>> {
    let text = text.trim();
    if text.is_empty() {
        return Err(Error::config(
            format!(".native/{KEY_FILE}"),
            "-",
            format!(
                "{} is empty (cut short while it was first written, by a power cut or a full disk); the callback URLs signed with the key it held no longer verify: restore it from a backup to keep them, or delete it to make a new key",
                path.display()
            ),
        ));
    }
    match hex::decode(text) {
        Ok(key) if key.len() >= 16 => Ok(key),
        _ => Err(bad_key_file(path)),
    }
}

fn bad_key_file(path: &Path) -> Error {
    Error::config(
        format!(".native/{KEY_FILE}"),
        "-",
        format!(
            "{} is not a hex key of at least 16 bytes; delete it to make a new one (URLs signed with the old one stop working)",
            path.display()
        ),
    )
}

/// The base URL: [`BASE_URL_VAR`] when set, else `default`.
pub fn base_url(default: &str) -> String {
    std::env::var(BASE_URL_VAR)
        .ok()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| default.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_test_cases_1_and_6() {
        let mac = hmac_sha256(&[0x0b; 20], b"Hi There");
        assert_eq!(
            hex::encode(mac),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7"
        );
        let mac = hmac_sha256(
            &[0xaa; 131],
            b"Test Using Larger Than Block-Size Key - Hash Key First",
        );
        assert_eq!(
            hex::encode(mac),
            "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54"
        );
    }

    fn target() -> Target {
        Target {
            tenant: "acme".into(),
            barrier: "b1".into(),
            member: "a/b.xml".into(),
            expires_s: 2_000,
            chain: Some("4bf92f3577b34da6a3ce929d0e0e4736".into()),
        }
    }

    #[test]
    fn a_url_made_before_chains_still_checks_and_names_none() {
        let s = Signer::new(vec![7; 32], "").unwrap();
        let old = Target {
            chain: None,
            ..target()
        };
        let token = s.token(&old);
        let payload = String::from_utf8(hex::decode(token.split('.').next().unwrap()).unwrap());
        assert_eq!(payload.unwrap(), r#"["acme","b1","a/b.xml",2000]"#);
        assert_eq!(s.check(&token, 0), Ok(old));
        assert_eq!(s.check(&s.token(&target()), 0), Ok(target()));
    }

    #[test]
    fn a_token_checks_until_it_expires_and_every_altered_byte_is_refused() {
        let s = Signer::new(vec![7; 32], "http://x/").unwrap();
        let token = s.token(&target());
        assert_eq!(s.check(&token, 1_999), Ok(target()));
        assert_eq!(s.check(&token, 2_000), Err(Refused::Expired));
        for i in 0..token.len() {
            let mut b = token.clone().into_bytes();
            b[i] = if b[i] == b'0' { b'1' } else { b'0' };
            let altered = String::from_utf8(b).unwrap();
            if altered != token {
                assert_eq!(s.check(&altered, 0), Err(Refused::BadSignature), "byte {i}");
            }
        }
        // AND a signature in any other spelling of the same bytes is refused: each hex letter
        // upper-cased, and all of them
        let (payload, sig) = token.rsplit_once('.').unwrap();
        let mut cased = 0;
        for (i, c) in sig.char_indices().filter(|(_, c)| c.is_ascii_alphabetic()) {
            let mut alt = sig.to_string();
            alt.replace_range(i..i + 1, &c.to_ascii_uppercase().to_string());
            let altered = format!("{payload}.{alt}");
            assert_eq!(
                s.check(&altered, 0),
                Err(Refused::BadSignature),
                "{altered}"
            );
            cased += 1;
        }
        assert!(
            cased > 0,
            "the signature {sig} has no hex letter to upper-case"
        );
        let upper = format!("{payload}.{}", sig.to_ascii_uppercase());
        assert_eq!(s.check(&upper, 0), Err(Refused::BadSignature));
        let other = Signer::new(vec![8; 32], "http://x").unwrap();
        assert_eq!(other.check(&token, 0), Err(Refused::BadSignature));
        assert_eq!(s.check("", 0), Err(Refused::BadSignature));
        assert!(s.url(&target()).starts_with("http://x/v1/callback/"));
    }

    #[test]
    fn a_function_url_domain_makes_an_https_base_and_anything_else_none() {
        assert_eq!(
            base_from_domain("Abc123.lambda-url.us-east-1.on.aws").as_deref(),
            Some("https://abc123.lambda-url.us-east-1.on.aws")
        );
        for bad in [
            "",
            "evil.com/x",
            "evil.com:8080",
            "a b",
            "user@evil.com",
            ".x",
            "-x",
            "x\r\nSet-Cookie: y",
        ] {
            assert_eq!(base_from_domain(bad), None, "{bad:?}");
        }
        assert_eq!(base_from_domain(&"a".repeat(254)), None);
    }

    #[tokio::test]
    async fn a_signer_without_a_base_signs_on_the_requests_base() {
        // GIVEN a signer without a base (NATIVE_PUBLIC_URL unset) and one with a base
        let bare = Signer::new(vec![7; 32], "").unwrap();
        let set = Signer::new(vec![7; 32], "https://api.example.com/").unwrap();
        let base = Some("https://abc.lambda-url.us-east-1.on.aws".to_string());
        // WHEN URLs are signed inside a request that arrived at a function URL
        let (task, thread, explicit) = at_base(base.clone(), async {
            let task = bare.url(&target());
            // As the runtime hands a script to its thread: the context read on the task.
            let c = crate::observe::context();
            let thread = std::thread::scope(|s| {
                s.spawn(|| crate::observe::on_thread(c, || bare.url(&target())))
                    .join()
                    .unwrap()
            });
            (task, thread, set.url(&target()))
        })
        .await;
        // THEN the bare signer's URLs start at the request's base, on the task and on the
        // script's thread, and the configured base wins over it
        let token = bare.token(&target());
        let want = format!("https://abc.lambda-url.us-east-1.on.aws/v1/callback/{token}");
        assert_eq!(
            (task.as_str(), thread.as_str()),
            (want.as_str(), want.as_str())
        );
        assert_eq!(
            explicit,
            format!("https://api.example.com/v1/callback/{token}")
        );
        // AND outside any request they are relative
        assert_eq!(bare.url(&target()), format!("/v1/callback/{token}"));
    }

    #[test]
    fn the_local_key_is_made_once_owner_only() {
        let dir = tempfile::tempdir().unwrap();
        let a = local_key(dir.path()).unwrap();
        assert_eq!(a, local_key(dir.path()).unwrap());
        assert_eq!(a.len(), 32);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(KEY_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
    }
}
