//! Who may open the console: the holder of the operator token, and no one else (tenants' API
//! keys open nothing here).
//!
//! - The token is 32 random bytes in hex, kept in `.native/console-token` (mode 0600), made on
//!   the first start of `native serve` and printed with the console's URL at every start
//!   (`native console --aws` makes one per run).
//! - `?token=` on any console URL sets the token as a cookie (`HttpOnly`, `SameSite=Strict`,
//!   path `/console/`) and redirects to the same URL without it, so the token leaves the address
//!   bar and the history (in every spelling of its name: `?tok%65n=` too); later requests
//!   carry the cookie.
//! - At most [`MAX_FAILED_TOKENS_PER_S`] wrong tokens are compared a second; past them every
//!   token is answered 429 until the next second.
//! - Every action is a POST carrying its sign-in's CSRF token in a hidden field (each
//!   `?token=` sign-in starts a session with a cookie of its own, [`csrf_of`]); with
//!   `SameSite=Strict` another site's form cannot even send the cookie, and without the page it
//!   cannot know the field.
//! - Tokens are compared in constant time.

use std::io::Write;
use std::path::Path;

use axum::http::{header, HeaderMap};
use subtle::ConstantTimeEq;

/// The cookie that carries the token.
pub const COOKIE: &str = "native_console";
/// The token's file under `.native/`.
pub const TOKEN_FILE: &str = "console-token";

/// Wrong tokens the console compares in one second, from every caller together; past them,
/// every token is refused for the rest of that second (429) without being compared. A token
/// cannot be guessed (256 bits), but a flood of guesses is noise and work.
pub const MAX_FAILED_TOKENS_PER_S: u32 = 20;

/// The wrong tokens of the current second.
#[derive(Debug, Default)]
pub struct Failures(std::sync::Mutex<(u64, u32)>);

impl Failures {
    /// Whether a token may be compared in second `now_s`.
    pub fn open(&self, now_s: u64) -> bool {
        let g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        g.0 != now_s || g.1 < MAX_FAILED_TOKENS_PER_S
    }

    /// A wrong token in second `now_s`.
    pub fn failed(&self, now_s: u64) {
        let mut g = self.0.lock().unwrap_or_else(|p| p.into_inner());
        if g.0 != now_s {
            *g = (now_s, 0);
        }
        g.1 = g.1.saturating_add(1);
    }
}

/// A new random token: 32 bytes in hex.
pub fn new_token() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The operator token kept in `dir` (a project's `.native/`): read, or made (mode 0600) when
/// there is none. A file that is not a token is an error naming it.
pub fn token_in(dir: &Path) -> std::io::Result<String> {
    let path = dir.join(TOKEN_FILE);
    std::fs::create_dir_all(dir)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    match options.open(&path) {
        Ok(mut f) => {
            let token = new_token();
            f.write_all(token.as_bytes())?;
            f.sync_all()?;
            return Ok(token);
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    #[cfg(unix)]
    {
        // Whoever made it, it stays the operator's alone.
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    let token = std::fs::read_to_string(&path)?.trim().to_string();
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "{} is not a console token (64 hex digits); delete it and a new one is made",
                path.display()
            ),
        ));
    }
    Ok(token)
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// The token a request's cookie carries, if any.
pub fn from_cookie(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, COOKIE)
}

/// The session a request's cookie names, if any: made at each sign-in (`?token=`), so that each
/// has a CSRF token of its own ([`csrf_of`]).
pub fn session(headers: &HeaderMap) -> Option<&str> {
    cookie(headers, SESSION_COOKIE)
}

/// The cookie that names the session.
pub const SESSION_COOKIE: &str = "native_console_session";

/// The CSRF token of `session` under the console's `secret`: forms of one sign-in are refused
/// in another. (A client that sends the token's cookie alone has the session "".)
pub fn csrf_of(secret: &str, session: &str) -> String {
    use sha2::Digest;
    let mut h = sha2::Sha256::new();
    h.update(secret.as_bytes());
    h.update(b"\0");
    h.update(session.as_bytes());
    hex::encode(h.finalize())
}

/// The value of the cookie `name` a request carries, if any.
fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|pair| {
            let (k, value) = pair.trim().split_once('=')?;
            (k == name).then_some(value)
        })
}

/// The `Set-Cookie` value that names a new `session`.
pub fn set_session(session: &str) -> String {
    format!(
        "{SESSION_COOKIE}={session}; Path={}; HttpOnly; SameSite=Strict",
        super::ROOT
    )
}

/// The `Set-Cookie` value that keeps `token`.
pub fn set_cookie(token: &str) -> String {
    format!(
        "{COOKIE}={token}; Path={}; HttpOnly; SameSite=Strict",
        super::ROOT
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn each_session_has_a_csrf_token_of_its_own() {
        let secret = new_token();
        let (a, b) = (new_token(), new_token());
        assert_eq!(csrf_of(&secret, &a), csrf_of(&secret, &a));
        assert_ne!(csrf_of(&secret, &a), csrf_of(&secret, &b));
        assert_ne!(csrf_of(&secret, &a), csrf_of(&new_token(), &a));
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            format!("{COOKIE}=t; {SESSION_COOKIE}={a}").parse().unwrap(),
        );
        assert_eq!(
            (from_cookie(&h), session(&h)),
            (Some("t"), Some(a.as_str()))
        );
    }

    #[test]
    fn past_the_wrong_tokens_of_a_second_none_is_compared_until_the_next() {
        let f = Failures::default();
        for _ in 0..MAX_FAILED_TOKENS_PER_S {
            assert!(f.open(7));
            f.failed(7);
        }
        assert!(!f.open(7), "the second's share is spent");
        assert!(f.open(8), "the next second compares again");
        f.failed(8);
        assert!(f.open(8));
    }

    use super::*;

    #[test]
    fn a_token_is_made_once_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let a = token_in(dir.path()).unwrap();
        assert_eq!(a.len(), 64);
        assert_eq!(
            token_in(dir.path()).unwrap(),
            a,
            "the same token at every start"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.path().join(TOKEN_FILE))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        std::fs::write(dir.path().join(TOKEN_FILE), "nope").unwrap();
        let err = token_in(dir.path()).unwrap_err().to_string();
        assert!(err.contains("is not a console token"), "{err}");
    }

    #[test]
    fn tokens_compare_whole_and_the_cookie_is_found_among_others() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "abcd"));
        let mut h = HeaderMap::new();
        h.insert(
            header::COOKIE,
            "a=1; native_console=t0k; b=2".parse().unwrap(),
        );
        assert_eq!(from_cookie(&h), Some("t0k"));
        assert!(set_cookie("x").contains("HttpOnly; SameSite=Strict"));
    }
}
