//! `native.response(status, body, headers?)`: the HTTP answer an `on_invoke` chooses, for the
//! callers of `POST /v1/invoke/{script}` (a 422 for a failed validation, a 201 with a
//! `Location`, a text body). Returned from `on_invoke`, it is the request's answer on every edge
//! that serves the HTTP API; a plain return stays a 200 with the value as JSON.
//!
//! The headers a script may set are checked here, when it calls: not the hop-by-hop ones, which
//! belong to the connection, nor those that speak for the whole origin every tenant shares
//! (cookies, CORS, HSTS, the content security policy), nor those the server writes itself.

use mlua::{Lua, Table, UserData, Value};

use super::function::a_type;
use super::{raise, to_json_text};

const FUNC: &str = "native.response";

/// The most headers a response may set.
pub const MAX_HEADERS: usize = 32;

/// The most bytes a response's header names and values may take, together.
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

/// Header names a script may not set, each with why.
const DENIED: &[(&str, &str)] = &[
    ("connection", "hop-by-hop: it belongs to the connection"),
    ("keep-alive", "hop-by-hop: it belongs to the connection"),
    ("te", "hop-by-hop: it belongs to the connection"),
    ("trailer", "hop-by-hop: it belongs to the connection"),
    (
        "transfer-encoding",
        "hop-by-hop: it belongs to the connection",
    ),
    ("upgrade", "hop-by-hop: it belongs to the connection"),
    ("content-length", "the server writes it from the body"),
    ("date", "the server writes it"),
    ("server", "the server writes it"),
    ("host", "a request header"),
    (
        "set-cookie",
        "cookies would be set for the origin every tenant shares",
    ),
    (
        "set-cookie2",
        "cookies would be set for the origin every tenant shares",
    ),
    (
        "strict-transport-security",
        "it speaks for the origin every tenant shares",
    ),
    (
        "content-security-policy",
        "the server sets it (every script's answer is sandboxed)",
    ),
    (
        "content-security-policy-report-only",
        "it speaks for the origin every tenant shares",
    ),
    ("x-content-type-options", "the server sets it (nosniff)"),
    ("alt-svc", "it speaks for the origin every tenant shares"),
    (
        "clear-site-data",
        "it speaks for the origin every tenant shares",
    ),
    ("traceparent", "the server answers with the request's own"),
    ("tracestate", "the server answers with the request's own"),
];

/// Prefixes of header names a script may not set.
const DENIED_PREFIXES: &[(&str, &str)] = &[
    ("proxy-", "hop-by-hop: it belongs to the connection"),
    (
        "access-control-",
        "CORS speaks for the origin every tenant shares",
    ),
    ("sec-", "reserved for browsers"),
];

/// What `native.response` made: the status, the headers (lower-case names, sorted) and the
/// body's bytes, with whether the body is JSON (a value encoded) or text as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// 200 to 599.
    pub status: u16,
    /// Checked names (lower case) and values, sorted by name.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// Whether the body is a value encoded as JSON (else a string as the script gave it).
    pub json: bool,
}

impl UserData for Reply {}

impl Reply {
    /// The `Content-Type` the answer carries when the script set none.
    pub fn default_content_type(&self) -> &'static str {
        if self.json {
            "application/json"
        } else {
            "text/plain; charset=utf-8"
        }
    }

    /// The body as a value, for callers that take one (`native invoke`, the invoke function):
    /// the JSON it encodes, or the text.
    pub fn body_value(&self) -> serde_json::Value {
        match self.json {
            true => serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null),
            false => serde_json::Value::String(String::from_utf8_lossy(&self.body).into_owned()),
        }
    }
}

fn status(lua: &Lua, v: &Value) -> mlua::Result<u16> {
    let n = match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    };
    match n {
        Some(n) if n.fract() == 0.0 && (200.0..=599.0).contains(&n) => Ok(n as u16),
        _ => Err(raise(
            lua,
            format!(
                "{FUNC}: status must be a whole number from 200 to 599, not {}",
                match n {
                    Some(n) => n.to_string(),
                    None => a_type(v),
                }
            ),
        )),
    }
}

/// Why a header name may not be set, if it may not.
fn denied(name: &str) -> Option<&'static str> {
    DENIED
        .iter()
        .find(|(n, _)| *n == name)
        .or_else(|| DENIED_PREFIXES.iter().find(|(p, _)| name.starts_with(p)))
        .map(|(_, why)| *why)
}

/// RFC 9110's token characters, which a field name is made of.
fn is_tchar(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

fn headers(lua: &Lua, t: Option<Table>) -> mlua::Result<Vec<(String, String)>> {
    let Some(t) = t else {
        return Ok(Vec::new());
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let mut bytes = 0usize;
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair?;
        let (Value::String(k), Value::String(v)) = (&k, &v) else {
            return Err(raise(
                lua,
                format!(
                    "{FUNC}: headers must map strings to strings, not {} to {}",
                    a_type(&k),
                    a_type(&v)
                ),
            ));
        };
        let (name, value) = (k.as_bytes(), v.as_bytes());
        if out.len() == MAX_HEADERS {
            return Err(raise(
                lua,
                format!("{FUNC}: at most {MAX_HEADERS} headers may be set"),
            ));
        }
        bytes += name.len() + value.len();
        if bytes > MAX_HEADER_BYTES {
            return Err(raise(
                lua,
                format!("{FUNC}: the headers' names and values are over {MAX_HEADER_BYTES} bytes together"),
            ));
        }
        if name.is_empty() || !name.iter().all(|b| is_tchar(*b)) {
            return Err(raise(
                lua,
                format!(
                    "{FUNC}: header name {:?} is not a valid HTTP field name (letters, digits and !#$%&'*+-.^_`|~)",
                    crate::text::cut_text(String::from_utf8_lossy(&name).into_owned(), 80)
                ),
            ));
        }
        let name = String::from_utf8_lossy(&name).to_ascii_lowercase();
        if let Some(why) = denied(&name) {
            return Err(raise(
                lua,
                format!("{FUNC}: header {name:?} may not be set by a script: {why}"),
            ));
        }
        if !value
            .iter()
            .all(|b| *b == b'\t' || (0x20..0x7f).contains(b))
        {
            return Err(raise(
                lua,
                format!(
                    "{FUNC}: the value of header {name:?} must be printable ASCII (no line breaks or control characters)"
                ),
            ));
        }
        if out.iter().any(|(n, _)| *n == name) {
            return Err(raise(
                lua,
                format!("{FUNC}: header {name:?} is given twice (names are case-insensitive)"),
            ));
        }
        out.push((name, String::from_utf8_lossy(&value).into_owned()));
    }
    out.sort();
    Ok(out)
}

fn response(lua: &Lua, (status_v, body, hs): (Value, Value, Option<Table>)) -> mlua::Result<Reply> {
    let status = status(lua, &status_v)?;
    let headers = headers(lua, hs)?;
    let (body, json) = match body {
        Value::Nil => (Vec::new(), false),
        Value::String(s) => {
            let max = super::invocation(lua)?.tenant.config.limits.max_object_mb as usize;
            if s.as_bytes().len() > max * 1024 * 1024 {
                return Err(raise(
                    lua,
                    format!(
                        "{FUNC}: the body is {} bytes, over max_object_mb ({max} MB)",
                        s.as_bytes().len()
                    ),
                ));
            }
            (s.as_bytes().to_vec(), false)
        }
        other => (
            to_json_text(lua, other, false, &format_args!("{FUNC}: the body"))?,
            true,
        ),
    };
    Ok(Reply {
        status,
        headers,
        body,
        json,
    })
}

/// `native.response`, for the `native` table.
pub fn function(lua: &Lua) -> mlua::Result<mlua::Function> {
    super::function(lua, (FUNC, &["status", "body?", "headers?"]), response)
}
