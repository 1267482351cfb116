//! `POST /com.evrblk.grackle.v1beta.GrackleApi/<Method>`: the rendezvous barriers
//! ([`crate::rendezvous`]) over the Connect protocol's unary JSON form, so that a Connect client
//! generated from Grackle's proto and a plain `curl` both work. Requests take snake_case or
//! lowerCamelCase names and int64 as numbers or strings; responses use snake_case, numbers, and
//! every field. The caller's tenant is its API key's.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};

use super::{tenant_of, ApiError, Code};
use crate::rendezvous::{
    Arrival, Barrier, CreateBarrier, Metadata, Rendezvous, Unlimited, UpdateBarrier,
};
use crate::runtime::Runtime;
use crate::Error;

/// The path prefix of the service.
pub const SERVICE: &str = "/com.evrblk.grackle.v1beta.GrackleApi";

/// The methods served.
pub const METHODS: &[&str] = &[
    "CreateBarrier",
    "GetBarrier",
    "ListBarriers",
    "UpdateBarrier",
    "DeleteBarrier",
    "ArriveAtBarrier",
    "WaitAtBarrier",
    "ListBarrierParticipants",
    "CreateNamespace",
    "GetNamespace",
    "ListNamespaces",
    "UpdateNamespace",
    "DeleteNamespace",
];

/// A request body: one JSON object whose fields are read by snake_case or lowerCamelCase name.
struct Req(Map<String, Value>);

fn camel(snake: &str) -> String {
    let mut out = String::with_capacity(snake.len());
    let mut up = false;
    for c in snake.chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn bad(msg: impl Into<String>) -> ApiError {
    ApiError::new(Code::InvalidArgument, msg)
}

impl Req {
    fn field(&self, name: &str) -> Option<&Value> {
        self.0
            .get(name)
            .or_else(|| self.0.get(&camel(name)))
            .filter(|v| !v.is_null())
    }

    /// A string field; absent is "" (proto3's default).
    fn str(&self, name: &str) -> Result<String, ApiError> {
        match self.field(name) {
            None => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(bad(format!("{name} must be a string, not {}", kind(other)))),
        }
    }

    /// An optional string field (absent or "" is none).
    fn opt_str(&self, name: &str) -> Result<Option<String>, ApiError> {
        Ok(Some(self.str(name)?).filter(|s| !s.is_empty()))
    }

    /// An integer field, as a JSON number or a string of digits; absent is 0.
    fn u64(&self, name: &str) -> Result<u64, ApiError> {
        let v = match self.field(name) {
            None => return Ok(0),
            Some(v) => v,
        };
        let parsed = match v {
            Value::Number(n) => n.as_u64(),
            Value::String(s) => s.parse::<u64>().ok(),
            _ => None,
        };
        parsed.ok_or_else(|| {
            bad(format!(
                "{name} must be a whole number from 0 to {} (a JSON number or a string of digits), not {}",
                u64::MAX,
                match v {
                    Value::Number(n) => n.to_string(),
                    Value::String(s) => format!("{s:?}"),
                    o => kind(o).to_string(),
                }
            ))
        })
    }

    /// A metadata map of strings; absent is empty.
    fn metadata(&self, name: &str) -> Result<Metadata, ApiError> {
        match self.field(name) {
            None => Ok(Metadata::new()),
            Some(Value::Object(m)) => m
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    other => Err(bad(format!(
                        "{name} values must be strings; {k:?} is {}",
                        kind(other)
                    ))),
                })
                .collect(),
            Some(other) => Err(bad(format!(
                "{name} must be an object of strings, not {}",
                kind(other)
            ))),
        }
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A core error as the contract answers it.
fn api(e: Error) -> ApiError {
    match e {
        Error::NotFound { what, .. } => ApiError::new(Code::NotFound, format!("{what} not found")),
        Error::AlreadyExists { what } => {
            ApiError::new(Code::AlreadyExists, format!("{what} already exists"))
        }
        Error::Precondition { what } => ApiError::new(Code::FailedPrecondition, what),
        Error::InvalidInput(m) => ApiError::new(Code::InvalidArgument, m),
        other => other.into(),
    }
}

fn barrier(b: &Barrier) -> Value {
    serde_json::to_value(b).unwrap_or(Value::Null)
}

fn page_token(next: Option<String>) -> Value {
    json!(next.unwrap_or_default())
}

fn ok(v: Value) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        v.to_string(),
    )
        .into_response()
}

/// The handler of every method.
pub(super) async fn call(
    State(rt): State<Arc<Runtime>>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    if !METHODS.contains(&method.as_str()) {
        return Err(ApiError::new(
            Code::NotFound,
            format!(
                "no method {method:?} in {}; the methods are {}",
                &SERVICE[1..],
                METHODS.join(", ")
            ),
        ));
    }
    let tenant = tenant_of(&rt, &headers).await?;
    if let Some(ct) = headers.get(header::CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or_default();
        if !ct.starts_with("application/json") {
            return Err(bad(format!(
                "Content-Type {ct:?} is not served: send the Connect JSON form, Content-Type: application/json"
            )));
        }
    }
    let req = match super::invoke::read_event(&headers, body).await? {
        Value::Object(m) => Req(m),
        other => {
            return Err(bad(format!(
                "the request body must be a JSON object, not {}",
                kind(&other)
            )))
        }
    };
    // The tenant's own backends: on AWS its calls run under the tenant role.
    let services = rt.services_for(&tenant).await.map_err(api)?;
    let b = &services.backends;
    let mut r = Rendezvous::new(&*b.kv, &*b.queue, &tenant, &Unlimited);
    // The tenant's caps on namespaces and barriers.
    r.limit_to(&rt.tenants.load(&tenant).await.map_err(api)?.config.limits);
    let answer = match method.as_str() {
        "CreateBarrier" => {
            let continue_with = req.opt_str("continue_with")?;
            if let Some(script) = &continue_with {
                let t = rt.tenants.load(&tenant).await.map_err(api)?;
                r.queue_enabled = t.config.queue;
                t.script(script)
                    .map_err(|e| bad(format!("continue_with: {e}")))?;
            }
            let spec = CreateBarrier {
                namespace: req.str("namespace_name")?,
                name: req.str("barrier_name")?,
                description: req.str("description")?,
                expected_processes: req.u64("expected_processes")?,
                delete_inactive_after_seconds: req.u64("delete_inactive_after_seconds")?,
                metadata: req.metadata("metadata")?,
                continue_with,
            };
            json!({ "barrier": barrier(&r.create(spec).await.map_err(api)?) })
        }
        "GetBarrier" => {
            let b = r
                .get(&req.str("namespace_name")?, &req.str("barrier_name")?)
                .await
                .map_err(api)?;
            json!({ "barrier": barrier(&b) })
        }
        "ListBarriers" => {
            let (list, next) = r
                .list(
                    &req.str("namespace_name")?,
                    &req.str("pagination_token")?,
                    req.u64("limit")?,
                )
                .await
                .map_err(api)?;
            json!({
                "barriers": list.iter().map(barrier).collect::<Vec<_>>(),
                "next_pagination_token": page_token(next),
                "previous_pagination_token": "",
            })
        }
        "UpdateBarrier" => {
            // Arrivals may trip a barrier that an update lowers: load the tenant's queue switch.
            let t = rt.tenants.load(&tenant).await.map_err(api)?;
            r.queue_enabled = t.config.queue;
            let spec = UpdateBarrier {
                namespace: req.str("namespace_name")?,
                name: req.str("barrier_name")?,
                description: req.str("description")?,
                expected_processes: req.u64("expected_processes")?,
                metadata: req.metadata("metadata")?,
                expected_version: req.u64("expected_version")?,
                delete_inactive_after_seconds: req.u64("delete_inactive_after_seconds")?,
            };
            json!({ "barrier": barrier(&r.update(spec).await.map_err(api)?) })
        }
        "DeleteBarrier" => {
            r.delete(&req.str("namespace_name")?, &req.str("barrier_name")?)
                .await
                .map_err(api)?;
            json!({})
        }
        "ArriveAtBarrier" => {
            let t = rt.tenants.load(&tenant).await.map_err(api)?;
            r.queue_enabled = t.config.queue;
            let Arrival {
                barrier: b,
                all_arrived,
            } = r
                .arrive(
                    &req.str("namespace_name")?,
                    &req.str("barrier_name")?,
                    &req.str("process_id")?,
                    req.u64("expected_generation")?,
                    req.metadata("metadata")?,
                )
                .await
                .map_err(api)?;
            json!({ "barrier": barrier(&b), "all_arrived": all_arrived })
        }
        "WaitAtBarrier" => {
            let timeout = req.u64("timeout_seconds")?;
            crate::rendezvous::check_timeout(timeout).map_err(api)?;
            let (b, outcome) = r
                .wait(
                    &req.str("namespace_name")?,
                    &req.str("barrier_name")?,
                    req.u64("expected_generation")?,
                    Duration::from_secs(timeout),
                )
                .await
                .map_err(api)?;
            json!({ "barrier": barrier(&b), "outcome": outcome.name() })
        }
        "ListBarrierParticipants" => {
            let (list, next) = r
                .participants(
                    &req.str("namespace_name")?,
                    &req.str("barrier_name")?,
                    req.u64("generation")?,
                    &req.str("pagination_token")?,
                    req.u64("limit")?,
                )
                .await
                .map_err(api)?;
            json!({
                "participants": list,
                "next_pagination_token": page_token(next),
                "previous_pagination_token": "",
            })
        }
        "CreateNamespace" => {
            let ns = r
                .create_namespace(
                    &req.str("name")?,
                    &req.str("description")?,
                    req.metadata("metadata")?,
                )
                .await
                .map_err(api)?;
            json!({ "namespace": ns })
        }
        "GetNamespace" => {
            json!({ "namespace": r.get_namespace(&req.str("name")?).await.map_err(api)? })
        }
        "ListNamespaces" => {
            let (list, next) = r
                .list_namespaces(&req.str("pagination_token")?, req.u64("limit")?)
                .await
                .map_err(api)?;
            json!({
                "namespaces": list,
                "next_pagination_token": page_token(next),
                "previous_pagination_token": "",
            })
        }
        "UpdateNamespace" => {
            let ns = r
                .update_namespace(
                    &req.str("name")?,
                    &req.str("description")?,
                    req.metadata("metadata")?,
                )
                .await
                .map_err(api)?;
            json!({ "namespace": ns })
        }
        "DeleteNamespace" => {
            r.delete_namespace(&req.str("name")?).await.map_err(api)?;
            json!({})
        }
        _ => unreachable!("checked against METHODS above"),
    };
    Ok(ok(answer))
}
