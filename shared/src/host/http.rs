//! `native.http.request{ method, url, headers?, body?, timeout_s?, vault? }`: one HTTP request
//! from a script, checked against the tenant's rules, with vault placeholders filled and the
//! values redacted from the answer (see `crate::outbound`). Also the option reading that
//! `job:http` shares.

use std::time::{Duration, Instant};

use mlua::{Lua, Table, Value};

use super::{invocation, raise, Invocation};
use crate::outbound::{self, Failure, HttpError, Policy, Spec, VaultParts};

/// The options a request takes.
const OPTIONS: &[&str] = &["method", "url", "headers", "body", "timeout_s", "vault"];

/// A request's timeout when the script gives none, in seconds.
pub(crate) const DEFAULT_TIMEOUT_S: u32 = 30;

/// The longest timeout a request may ask for: 15 minutes, what `job:http` allows.
pub(crate) const MAX_TIMEOUT_S: u32 = 900;

const MB: u64 = 1024 * 1024;

/// Reads a request's options table into a [`Spec`] and checks it against the tenant's rules
/// (allow list, vault names). `func` names the caller in errors.
pub(crate) fn spec_from_lua(
    lua: &Lua,
    inv: &Invocation,
    func: &str,
    opts: &Table,
) -> mlua::Result<Spec> {
    let bad = |why: String| raise(lua, format!("{func}: {why}"));
    for pair in opts.pairs::<Value, Value>() {
        let (k, _) = pair?;
        let known =
            matches!(&k, Value::String(s) if OPTIONS.iter().any(|o| s.as_bytes() == o.as_bytes()));
        if !known {
            let shown = match &k {
                Value::String(s) => format!("{:?}", s.to_string_lossy()),
                other => format!("a {} key", other.type_name()),
            };
            return Err(bad(format!(
                "unknown option {shown}; the options are {}",
                OPTIONS.join(", ")
            )));
        }
    }
    let text = |field: &str| -> mlua::Result<Option<mlua::LuaString>> {
        match opts.get::<Value>(field)? {
            Value::Nil => Ok(None),
            Value::String(s) => Ok(Some(s)),
            other => Err(bad(format!(
                "{field} must be a string, not {}",
                super::function::a_type(&other)
            ))),
        }
    };
    let method = text("method")?.map_or("GET".to_string(), |s| s.to_string_lossy());
    let url = text("url")?
        .ok_or_else(|| bad("url is missing; pass url = \"https://...\"".into()))?
        .to_str()
        .map_err(|_| bad("url is not UTF-8".into()))?
        .to_string();
    let max_body = u64::from(inv.tenant.config.limits.max_object_mb) * MB;
    let body = match text("body")? {
        None => Vec::new(),
        Some(b) if b.as_bytes().len() as u64 > max_body => {
            return Err(inv.breach(
                lua,
                "max_object_mb",
                format!(
                    "{func}: the body is {} bytes and the tenant allows {max_body}",
                    b.as_bytes().len()
                ),
            ))
        }
        Some(b) => b.as_bytes().to_vec(),
    };
    let mut headers = Vec::new();
    match opts.get::<Value>("headers")? {
        Value::Nil => {}
        Value::Table(t) => {
            for pair in t.pairs::<Value, Value>() {
                let (k, v) = pair?;
                if headers.len() >= outbound::MAX_HEADERS {
                    return Err(bad(format!(
                        "headers has more than {} entries",
                        outbound::MAX_HEADERS
                    )));
                }
                let Value::String(k) = k else {
                    return Err(bad(format!(
                        "headers must map names to values; a key is {}",
                        super::function::a_type(&k)
                    )));
                };
                let v = match v {
                    Value::String(s) => s.as_bytes().to_vec(),
                    Value::Integer(i) => i.to_string().into_bytes(),
                    Value::Number(n) => n.to_string().into_bytes(),
                    other => {
                        return Err(bad(format!(
                            "header {:?} must be a string, not {}",
                            k.to_string_lossy(),
                            super::function::a_type(&other)
                        )))
                    }
                };
                headers.push((k.to_string_lossy(), v));
            }
            headers.sort_by(|a, b| a.0.cmp(&b.0));
        }
        other => {
            return Err(bad(format!(
                "headers must be a table, not {}",
                super::function::a_type(&other)
            )))
        }
    }
    let timeout_s = super::opt_whole(
        lua,
        Some(opts),
        func,
        "timeout_s",
        1..=i64::from(MAX_TIMEOUT_S),
    )?
    .map(|n| n as u32);
    let mut vault = VaultParts::default();
    match opts.get::<Value>("vault")? {
        Value::Nil => {}
        Value::Table(t) => {
            // Three parts at most: a longer list is a mistake, and is not walked to its end.
            for (i, v) in t.sequence_values::<Value>().enumerate() {
                if i >= 3 {
                    return Err(bad(
                        "vault lists more than 3 parts; the parts are \"url\", \"header\" and \"body\"".into(),
                    ));
                }
                match v? {
                    Value::String(s) => vault.add(&s.to_string_lossy()).map_err(bad)?,
                    other => {
                        return Err(bad(format!(
                        "vault must list parts as strings (\"url\", \"header\", \"body\"), not {}",
                        super::function::a_type(&other)
                    )))
                    }
                }
            }
        }
        other => {
            return Err(bad(format!(
                "vault must be a list such as {{ \"header\" }}, not {}",
                super::function::a_type(&other)
            )))
        }
    }
    let spec = Spec::new(&method, &url, headers, body, timeout_s, vault).map_err(bad)?;
    spec.check(&inv.tenant).map_err(bad)?;
    Ok(spec)
}

/// Counts one request against `max_http_requests`; past it, records the breach and raises.
pub(crate) fn charge_request(lua: &Lua, inv: &Invocation, func: &str) -> mlua::Result<()> {
    let used = inv.http_requests.get() + 1;
    inv.http_requests.set(used);
    let max = inv.tenant.config.limits.max_http_requests;
    if used > max {
        return Err(inv.breach(
            lua,
            "max_http_requests",
            format!(
                "{func} would be HTTP request {used} of this \
                 invocation and the tenant allows {max}; make fewer requests or raise \
                 limits.max_http_requests in {} (ceiling {})",
                inv.config_file(),
                crate::config::CEILINGS.max_http_requests
            ),
        ));
    }
    Ok(())
}

/// What the deployment and the tenant's limits allow a request.
pub(crate) fn policy(inv: &Invocation) -> Policy {
    Policy {
        allow_private: inv.services.deployment.http.allow_private_networks,
        max_body: u64::from(inv.tenant.config.limits.max_http_response_mb) * MB,
    }
}

/// What a breach of `max_http_response_mb` says after `limit max_http_response_mb exceeded: `.
fn too_large_detail(inv: &Invocation, func: &str, host: &str) -> String {
    format!(
        "{func}: the response from {host} is larger than \
         the {} MB the tenant allows; ask for less (a page, a range) or raise \
         limits.max_http_response_mb in {} (ceiling {})",
        inv.tenant.config.limits.max_http_response_mb,
        inv.config_file(),
        crate::config::CEILINGS.max_http_response_mb
    )
}

fn request(lua: &Lua, opts: Table) -> mlua::Result<Table> {
    const FUNC: &str = "native.http.request";
    let inv = invocation(lua)?;
    let spec = spec_from_lua(lua, &inv, FUNC, &opts)?;
    charge_request(lua, &inv, FUNC)?;
    inv.charge(lua, 1)?;
    let host = spec.target.host.clone();
    let want = Duration::from_secs(u64::from(spec.timeout_s.unwrap_or(DEFAULT_TIMEOUT_S)));
    let left = inv.deadline.saturating_duration_since(Instant::now());
    // Whichever ends first: the request's own timeout (an error the script may catch) or the
    // invocation's deadline (a breach).
    let by_deadline = left <= want;
    let vault = inv.services.backends.vault.clone();
    let tenant = inv.tenant.name.clone();
    let policy = policy(&inv);
    let fut = async { outbound::perform(&spec, &tenant, vault.as_ref(), policy).await };
    let out = crate::blocking::wait(
        &inv.handle,
        tokio::time::timeout(if by_deadline { left } else { want }, fut),
    );
    let resp = match out {
        Err(_) if by_deadline => return Err(inv.breach(lua, "timeout_s", inv.timeout_detail())),
        Err(_) => {
            return Err(raise(
                lua,
                format!(
                    "{FUNC}: no response from {host} within timeout_s = {} s",
                    want.as_secs()
                ),
            ))
        }
        Ok(Err(HttpError::Failed(Failure::TooLarge(_)))) => {
            return Err(inv.breach(
                lua,
                "max_http_response_mb",
                too_large_detail(&inv, FUNC, &host),
            ))
        }
        Ok(Err(e)) => return Err(raise(lua, format!("{FUNC}: {e}"))),
        Ok(Ok(r)) => r,
    };
    let t = lua.create_table()?;
    t.set("status", resp.status)?;
    let headers = lua.create_table()?;
    for (k, v) in &resp.headers {
        // A repeated header is joined with ", ", as HTTP allows for all but set-cookie, whose
        // values a script rarely needs apart.
        let joined = match headers.get::<Option<mlua::LuaString>>(k.as_str())? {
            Some(prev) => [prev.as_bytes().as_ref(), b", ", v].concat(),
            None => v.clone(),
        };
        headers.set(k.as_str(), lua.create_string(&joined)?)?;
    }
    t.set("headers", headers)?;
    t.set("body", lua.create_string(&resp.body)?)?;
    Ok(t)
}

/// The `native.http` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const REQUEST: super::Signature = ("native.http.request", &["opts"]);
    t.set("request", super::function(lua, REQUEST, request)?)?;
    Ok(t)
}
