//! Outbound HTTP: requests that tenants' scripts make to other services (`native.http.request`
//! now, `job:http` in the background), with the vault's secrets filled in out of the script's
//! sight. Not to be confused with `crate::inbound`, the API that callers reach native through.
//!
//! A request is first a [`Spec`]: what the script asked for, validated, placeholders still in
//! it. [`Spec::check`] applies the tenant's rules (the allow list, the vault names) before
//! anything is sent, so a request that could never go out fails where it is made.
//! [`perform`] fills the placeholders, sends it through [`client`] and redacts the answer.

pub mod address;
pub mod client;
pub mod jobs;
pub mod secrets;
pub mod target;
mod unescape;

use std::collections::BTreeSet;

use hyper::header::{HeaderName, HeaderValue};
use hyper::Method;

pub use client::{Failure, Policy, Response};
pub use secrets::Redactor;
pub use target::Target;

use crate::config::http::AllowEntry;
use crate::config::Tenant;
use crate::ports::{Secret, Vault};

/// The methods a request may use.
pub const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];

/// The most headers a request may set.
pub const MAX_HEADERS: usize = 100;

/// The longest header value, in bytes.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;

/// Headers the client sets itself, which a script may not.
const RESERVED_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

/// Where `{{vault:NAME}}` placeholders are filled: the parts a request's `vault` option lists.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VaultParts {
    /// The URL's path and query.
    pub url: bool,
    /// Header values.
    pub header: bool,
    /// The body.
    pub body: bool,
}

impl VaultParts {
    /// Adds a part by the name scripts use: `url`, `header` or `body`.
    pub fn add(&mut self, part: &str) -> Result<(), String> {
        match part {
            "url" => self.url = true,
            "header" | "headers" => self.header = true,
            "body" => self.body = true,
            other => {
                return Err(format!(
                    "vault lists {other:?}; the parts are \"url\", \"header\" and \"body\""
                ))
            }
        }
        Ok(())
    }
}

/// A request as a script asked for it, validated; placeholders not yet filled.
#[derive(Debug, Clone)]
pub struct Spec {
    /// The method.
    pub method: Method,
    /// The URL as written, placeholders and all.
    pub url: String,
    /// The URL's scheme, host and port (never holding a placeholder) and path.
    pub target: Target,
    /// Header names and values as written.
    pub headers: Vec<(HeaderName, Vec<u8>)>,
    /// The body as written.
    pub body: Vec<u8>,
    /// The request's own timeout, when the script gave one.
    pub timeout_s: Option<u32>,
    /// Where placeholders are filled.
    pub vault: VaultParts,
}

impl Spec {
    /// A spec from its parts; says which part is wrong.
    pub fn new(
        method: &str,
        url: &str,
        headers: Vec<(String, Vec<u8>)>,
        body: Vec<u8>,
        timeout_s: Option<u32>,
        vault: VaultParts,
    ) -> Result<Spec, String> {
        let upper = method.to_ascii_uppercase();
        if !METHODS.contains(&upper.as_str()) {
            return Err(format!(
                "method {method:?} is not one of {}",
                METHODS.join(", ")
            ));
        }
        let method = Method::from_bytes(upper.as_bytes()).map_err(|e| e.to_string())?;
        let target = Target::parse(url)?;
        if headers.len() > MAX_HEADERS {
            return Err(format!(
                "headers has {} entries; at most {MAX_HEADERS}",
                headers.len()
            ));
        }
        let mut hs = Vec::with_capacity(headers.len());
        for (name, value) in headers {
            let lower = name.to_ascii_lowercase();
            let hname = HeaderName::from_bytes(lower.as_bytes()).map_err(|_| {
                format!(
                    "header name {:?} is not valid",
                    crate::text::cut_text(name.clone(), 100)
                )
            })?;
            if RESERVED_HEADERS.contains(&hname.as_str()) {
                return Err(format!(
                    "header {lower:?} is set by the platform, not by scripts"
                ));
            }
            if value.len() > MAX_HEADER_BYTES {
                return Err(format!(
                    "header {lower:?} is {} bytes long; at most {MAX_HEADER_BYTES}",
                    value.len()
                ));
            }
            // Checked as written too, so that a bad value fails where the script made it.
            HeaderValue::from_bytes(&value).map_err(|_| {
                format!("header {lower:?} has a value with a line break or control character")
            })?;
            hs.push((hname, value));
        }
        Ok(Spec {
            method,
            url: url.to_string(),
            target,
            headers: hs,
            body,
            timeout_s,
            vault,
        })
    }

    /// The vault names used in the parts the `vault` option lists.
    pub fn vault_names(&self) -> Result<BTreeSet<String>, String> {
        let mut names = BTreeSet::new();
        if self.vault.url {
            names.extend(
                secrets::placeholders(self.url.as_bytes()).map_err(|e| format!("url: {e}"))?,
            );
        }
        if self.vault.header {
            for (n, v) in &self.headers {
                names.extend(secrets::placeholders(v).map_err(|e| format!("header {n}: {e}"))?);
            }
        }
        if self.vault.body {
            names.extend(secrets::placeholders(&self.body).map_err(|e| format!("body: {e}"))?);
        }
        Ok(names)
    }

    /// Applies the tenant's rules: the host must be on its `http.allow` list and every vault
    /// name on its `vault` list. Says what to change where.
    pub fn check(&self, tenant: &Tenant) -> Result<(), String> {
        let file = format!("tenants/{}/config.json", tenant.name);
        let t = &self.target;
        let allowed = tenant
            .config
            .http
            .allow
            .iter()
            .filter_map(|e| AllowEntry::parse(e).ok())
            .any(|e| e.permits(&t.host, t.port));
        if !allowed {
            let entry = t.authority();
            return Err(format!(
                "{} (port {}) is not on the tenant's http.allow list; add {entry:?} to http.allow in {file}",
                t.host, t.port
            ));
        }
        for name in self.vault_names()? {
            if !tenant.config.vault.contains(&name) {
                return Err(format!(
                    "vault name {name:?} is not on the tenant's vault list; add it to \"vault\" in {file}"
                ));
            }
        }
        Ok(())
    }
}

/// Why a performed request has no response. Messages are already redacted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HttpError {
    /// A vault name has no secret.
    Vault(String),
    /// The filled request cannot be sent (a header value that became invalid).
    Request(String),
    /// No response: refused address, connection, TLS or protocol failure.
    Failed(Failure),
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HttpError::Vault(m) | HttpError::Request(m) => f.write_str(m),
            HttpError::Failed(e) => e.fmt(f),
        }
    }
}

/// Fills the spec's placeholders from the tenant's vault, sends it and returns the response,
/// with every form of every value used redacted from it and from any error. No timeout here:
/// callers bound it (the invocation's deadline, or 15 minutes in the background).
pub async fn perform(
    spec: &Spec,
    tenant: &str,
    vault: &dyn Vault,
    policy: Policy,
) -> Result<Response, HttpError> {
    let names = spec.vault_names().map_err(HttpError::Request)?;
    let mut values: Vec<(String, Secret)> = Vec::new();
    for name in names {
        match vault.get(tenant, &name).await {
            Ok(Some(v)) => values.push((name, v)),
            Ok(None) => {
                return Err(HttpError::Vault(format!(
                    "the vault has no secret {name:?} for tenant {tenant:?}; set it with `native vault set {tenant} {name}`"
                )))
            }
            Err(e) => return Err(HttpError::Vault(format!("vault: {e}"))),
        }
    }
    let redactor = Redactor::new(&values);
    let fill = |on: bool, text: &[u8]| {
        if on && !values.is_empty() {
            secrets::fill(text, &values)
        } else {
            text.to_vec()
        }
    };
    let mut target = spec.target.clone();
    if spec.vault.url {
        let url = String::from_utf8(secrets::fill_url(spec.url.as_bytes(), &values))
            .map_err(|_| HttpError::Request("url: not UTF-8 after the vault was filled".into()))?;
        let filled = Target::parse(&url).map_err(|e| HttpError::Request(redactor.text(&e)))?;
        target.path = filled.path;
    }
    let mut headers = Vec::with_capacity(spec.headers.len());
    for (name, value) in &spec.headers {
        let v = HeaderValue::from_bytes(&fill(spec.vault.header, value)).map_err(|_| {
            HttpError::Request(format!(
                "header {name:?}: a vault value made it invalid (a line break or control character)"
            ))
        })?;
        headers.push((name.clone(), v));
    }
    let req = client::Request {
        method: spec.method.clone(),
        target,
        headers,
        body: fill(spec.vault.body, &spec.body).into(),
    };
    // A run's request is a child span of its run (where spans are exported): its method and
    // host, never its path or what it carries.
    let started = crate::observe::calls::start();
    let (method, authority, sent) = match &started {
        Some(_) => (
            req.method.to_string(),
            req.target.authority(),
            req.body.len(),
        ),
        None => Default::default(),
    };
    let resp = client::send(req, policy).await;
    if let Some(started) = started {
        use crate::observe::calls::{Call, Outcome};
        let (outcome, got, error) = match &resp {
            Ok(r) if r.status < 400 => (Outcome::Ok, r.body.len(), None),
            Ok(r) => (
                Outcome::Error,
                r.body.len(),
                Some(format!("HTTP {}", r.status)),
            ),
            Err(_) => (
                Outcome::Error,
                0,
                Some("no response (see the run's error)".into()),
            ),
        };
        started.end(Call {
            kind: "http",
            operation: method.into(),
            target: authority,
            outcome,
            bytes: Some((sent + got) as u64),
            error,
        });
    }
    let resp = resp.map_err(|f| {
        HttpError::Failed(match f {
            Failure::Refused(m) => Failure::Refused(redactor.text(&m)),
            Failure::Connect(m) => Failure::Connect(redactor.text(&m)),
            Failure::Protocol(m) => Failure::Protocol(redactor.text(&m)),
            other => other,
        })
    })?;
    if redactor.is_empty() {
        return Ok(resp);
    }
    Ok(Response {
        status: resp.status,
        headers: resp
            .headers
            .into_iter()
            .map(|(k, v)| (redactor.name(&k), redactor.bytes(&v)))
            .collect(),
        body: redactor.bytes(&resp.body),
    })
}
