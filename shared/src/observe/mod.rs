//! Observability on Lambda: log lines that carry Lambda's request id, and metrics per tenant
//! in CloudWatch's Embedded Metric Format (EMF), written as log lines that CloudWatch turns
//! into metrics without an API call.
//!
//! - [`in_request`] marks the work of one Lambda request with its id (in a [`RequestContext`],
//!   a task-local the runtime carries onto the script's thread with [`on_thread`]);
//!   [`LambdaLog`] adds it to every record as `aws_request_id` and writes JSON lines on stdout.
//! - [`invocation_metrics`] and [`dead_letter_metrics`] build the EMF records: namespace
//!   [`NAMESPACE`] (or `NATIVE_METRICS_NAMESPACE`), one dimension, `tenant`, so that each tenant
//!   costs a fixed number of custom metrics; the script is a property, searchable in Logs
//!   Insights, not a dimension.

use std::cell::RefCell;
use std::future::Future;

use serde_json::{json, Value};

pub mod calls;
mod log;
pub mod otlp;
pub mod recent;
pub mod step;
pub mod traced;
pub mod w3c;

pub use log::{LogSink, StderrLog};

#[cfg(feature = "aws")]
pub mod runtime_log;

/// The default metrics namespace.
pub const NAMESPACE: &str = "native";

/// What the work of one request carries onto every thread it runs on (a task-local, and on a
/// script's thread a thread-local set by [`on_thread`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestContext {
    /// Lambda's request id, for log lines.
    pub aws_request_id: Option<String>,
    /// The public address the request came to (`https://<function URL domain>`), for callback
    /// URLs when `NATIVE_PUBLIC_URL` is not set (see [`crate::callback::at_base`]).
    pub public_base: Option<String>,
    /// The chain the running script's work belongs to ([`recent::Run::chain`]): work messages
    /// it causes carry it, so the console can show a chain from its root.
    pub chain: Option<String>,
    /// What started the running script's run, when it is worth a step's origin
    /// ([`step::Origin::Script`]): for a run of an object event, `object <bucket>/<key>`.
    pub cause: Option<String>,
    /// The span the work is in, where spans are exported ([`otlp`]): the request's on its
    /// task, the run's on a script's thread; steps link it.
    pub span: Option<u64>,
}

tokio::task_local! {
    static REQUEST: RequestContext;
}

thread_local! {
    static THREAD_REQUEST: RefCell<RequestContext> = const {
        RefCell::new(RequestContext { aws_request_id: None, public_base: None, chain: None, cause: None, span: None })
    };
}

/// The context of the current task or thread: each field from the task where it is set there,
/// else from the thread.
pub fn context() -> RequestContext {
    let thread = THREAD_REQUEST.with(|r| r.borrow().clone());
    match REQUEST.try_with(Clone::clone) {
        Ok(task) => RequestContext {
            aws_request_id: task.aws_request_id.or(thread.aws_request_id),
            public_base: task.public_base.or(thread.public_base),
            chain: task.chain.or(thread.chain),
            cause: task.cause.or(thread.cause),
            // A script's thread is in its run's span, within the request's on the task.
            span: thread.span.or(task.span),
        },
        Err(_) => thread,
    }
}

/// Runs `f` in the current context changed by `set`.
pub async fn in_context<F: Future>(set: impl FnOnce(&mut RequestContext), f: F) -> F::Output {
    let mut c = context();
    set(&mut c);
    REQUEST.scope(c, f).await
}

/// Runs `f` as the work of the Lambda request `aws_request_id` (None: of no request).
pub async fn in_request<F: Future>(aws_request_id: Option<String>, f: F) -> F::Output {
    in_context(|c| c.aws_request_id = aws_request_id, f).await
}

/// A new chain id (a trace), for work that starts a chain: a W3C trace id, 32 lower-case hex
/// digits ([`w3c`]).
pub fn new_trace() -> String {
    hex32(crate::random::u128())
}

/// `n` as 32 lower-case hex digits (`format!("{n:032x}")` without the formatting machinery: a
/// trace is made for every request served).
fn hex32(n: u128) -> String {
    let mut b = [0u8; 32];
    w3c::write_hex(n, &mut b);
    String::from_utf8(b.to_vec()).unwrap_or_default()
}

pub use crate::ports::is_trace;

/// The chain of the work on the current task or thread, if one is set.
pub fn chain() -> Option<String> {
    // Every invocation asks: the chain alone, not a copy of the whole context.
    match REQUEST.try_with(|t| t.chain.clone()) {
        Ok(Some(chain)) => Some(chain),
        _ => THREAD_REQUEST.with(|r| r.borrow().chain.clone()),
    }
}

/// The Lambda request id of the current task or thread, if one is set.
pub fn request_id() -> Option<String> {
    context().aws_request_id
}

/// Runs `f` on this (blocking) thread in `context`: how a script, run on its own thread, gets
/// the request id for its log lines and the public address for its callback URLs.
pub fn on_thread<R>(context: RequestContext, f: impl FnOnce() -> R) -> R {
    let before = THREAD_REQUEST.with(|r| r.replace(context));
    let out = f();
    THREAD_REQUEST.with(|r| *r.borrow_mut() = before);
    out
}

/// Writes each record as one JSON line on stdout, with `aws_request_id` when the record is
/// written inside a Lambda request: what CloudWatch Logs (JSON log format) and EMF read.
#[derive(Debug, Default)]
pub struct LambdaLog;

impl LambdaLog {
    /// The record as written: `aws_request_id` added when known and not already there.
    pub fn stamp(record: &Value) -> Value {
        let mut r = record.clone();
        if let (Value::Object(m), Some(id)) = (&mut r, request_id()) {
            m.entry("aws_request_id").or_insert(Value::String(id));
        }
        r
    }
}

impl LogSink for LambdaLog {
    fn write(&self, record: &Value) {
        use std::io::Write;
        let line = Self::stamp(record).to_string();
        // One write of the whole line, so that lines of concurrent scripts never interleave.
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(format!("{line}\n").as_bytes());
    }
}

/// What one script run did, for metrics.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunFigures {
    /// It failed.
    pub failed: bool,
    /// It failed on a limit (`limit <name> exceeded`).
    pub limit_breach: bool,
    /// Wall time, in milliseconds.
    pub duration_ms: f64,
    /// Backend calls it made.
    pub data_ops: u32,
}

fn emf(namespace: &str, tenant: &str, metrics: &[(&str, &str, Value)], extra: Value) -> Value {
    let defs: Vec<Value> = metrics
        .iter()
        .map(|(name, unit, _)| json!({ "Name": name, "Unit": unit }))
        .collect();
    let mut rec = json!({
        "_aws": {
            "Timestamp": crate::ports::now_ms(),
            "CloudWatchMetrics": [{
                "Namespace": namespace,
                "Dimensions": [["tenant"]],
                "Metrics": defs,
            }],
        },
        "tenant": tenant,
    });
    if let (Value::Object(r), Value::Object(e)) = (&mut rec, extra) {
        r.extend(e);
    }
    for (name, _, value) in metrics {
        rec[*name] = value.clone();
    }
    rec
}

/// The EMF record of one script run of `tenant`: Invocations, Errors, LimitBreaches (counts),
/// Duration (milliseconds) and DataOps (count), with the script as a property.
/// The run's chain (`trace`) is a property beside the script, so that Logs Insights finds the
/// metrics of one chain.
pub fn invocation_metrics(
    namespace: &str,
    tenant: &str,
    script: &str,
    trace: &str,
    f: &RunFigures,
) -> Value {
    emf(
        namespace,
        tenant,
        &[
            ("Invocations", "Count", json!(1)),
            ("Errors", "Count", json!(u8::from(f.failed))),
            ("LimitBreaches", "Count", json!(u8::from(f.limit_breach))),
            ("Duration", "Milliseconds", json!(f.duration_ms)),
            ("DataOps", "Count", json!(f.data_ops)),
        ],
        json!({ "script": script, "trace": trace }),
    )
}

/// The EMF record of a message of `tenant` that went to a dead-letter queue, and why.
pub fn dead_letter_metrics(namespace: &str, tenant: &str, why: &str) -> Value {
    emf(
        namespace,
        tenant,
        &[("DeadLetters", "Count", json!(1))],
        json!({ "dead_letter": why }),
    )
}

/// The EMF record of an object event of `tenant` dropped because the tenant has no router
/// (see `batch::default_route`), and why.
pub fn dropped_event_metrics(namespace: &str, tenant: &str, why: &str) -> Value {
    emf(
        namespace,
        tenant,
        &[("DroppedEvents", "Count", json!(1))],
        json!({ "dropped": why }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_are_w3c_trace_ids_as_format_writes_them() {
        for n in [0, 1, 0xf, 0x1234_5678_9abc_def0, u128::MAX, rand::random()] {
            assert_eq!(hex32(n), format!("{n:032x}"));
        }
        let t = new_trace();
        assert!(t.len() == 32 && is_trace(&t), "{t}");
        assert_eq!(w3c::trace_id(&t).as_deref(), Some(t.as_str()));
    }

    #[tokio::test]
    async fn the_request_id_reaches_records_on_the_task_and_on_the_scripts_thread() {
        let rec = json!({ "msg": "x" });
        assert_eq!(
            LambdaLog::stamp(&rec),
            rec,
            "outside a request nothing is added"
        );
        let (on_task, on_thread) = in_request(Some("req-1".into()), async {
            let c = context();
            let t = tokio::task::spawn_blocking(move || {
                on_thread(c, || LambdaLog::stamp(&json!({ "msg": "y" })))
            });
            (LambdaLog::stamp(&rec), t.await.unwrap())
        })
        .await;
        assert_eq!(on_task["aws_request_id"], "req-1");
        assert_eq!(on_thread["aws_request_id"], "req-1");
        assert_eq!(request_id(), None);
    }
}
