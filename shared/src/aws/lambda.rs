//! The Lambda handlers, as plain functions so that tests call them without a Lambda runtime.
//! Each function's `main.rs` builds a [`Runtime`] with [`cold_start`] and hands every event to
//! one of these:
//!
//! - `invoke`: [`invoke`] takes `{ "tenant", "script", "event" }` and returns `on_invoke`'s value.
//! - `route`: [`handle_event_batch`] takes an SQS batch of S3 notifications.
//! - `queue`: [`handle_work_batch`] takes an SQS batch of script messages.
//!
//! Both SQS handlers report partial batch failures (`ReportBatchItemFailures` on the event
//! source mapping): every message runs in its own task, a failing or panicking message is
//! listed in `batchItemFailures` and retried alone, its neighbours are deleted by Lambda. A
//! message's attempt (`ctx.attempt`) is its `ApproximateReceiveCount`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};

pub use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};

use super::{
    backends_on_first_use, load_sdk_config, AwsConfig, Clients, S3Tenants, SdkConfig,
    StsTenantScope, RECHECK_EVERY,
};
use crate::error::Missing;
use crate::ports::QueueKind;
use crate::runtime::Runtime;
use crate::{Error, Result};

/// A direct invocation of the `invoke` function.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InvokeRequest {
    /// The tenant.
    pub tenant: String,
    /// The script whose `on_invoke` runs.
    pub script: String,
    /// The event passed to it (`null` when absent).
    #[serde(default)]
    pub event: Value,
}

/// Why a function could not start. A `main` that returns an error prints it with `Debug`, which
/// for the core's error is its fields in braces; this prints its message, which names the
/// variable and what to do.
pub struct StartError(pub crate::Error);

impl std::fmt::Debug for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl std::error::Error for StartError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl From<crate::Error> for StartError {
    fn from(e: crate::Error) -> Self {
        StartError(e)
    }
}

/// What a function builds once per cold start: the configuration from the environment, the
/// SDK clients, tenants from the scripts bucket, and the runtime over them.
pub async fn cold_start() -> std::result::Result<Runtime, StartError> {
    let config = AwsConfig::from_env()?;
    let sdk = load_sdk_config().await;
    let rt = scoped_runtime_for(&config, &sdk);
    // Callback URLs: the secret comes from Secrets Manager through the environment (the
    // template resolves it at deploy time; it is never in the template).
    match std::env::var(crate::callback::SECRET_VAR) {
        Ok(secret) if !secret.is_empty() => {
            let base = crate::callback::base_url("");
            let signer = crate::callback::Signer::new(secret.into_bytes(), &base)?;
            Ok(rt.with_callback(std::sync::Arc::new(signer)))
        }
        _ => Ok(rt),
    }
}

/// The runtime of the long-running server (Fargate): a function's, performing `job:http` in the
/// background, running at most `NATIVE_MAX_CONCURRENT` invocations at once (default
/// [`crate::capacity::Admission::DEFAULT_MAX`]; see [`Runtime::with_admission`]), with a blank VM
/// kept ready for a tenant's first invoke ([`Runtime::with_spare_vm`]).
pub async fn server_start() -> std::result::Result<Runtime, StartError> {
    let max = match std::env::var("NATIVE_MAX_CONCURRENT") {
        Err(_) => crate::capacity::Admission::DEFAULT_MAX,
        Ok(v) => v.parse::<u32>().ok().filter(|n| *n >= 2).ok_or_else(|| {
            crate::Error::config(
                "environment",
                "NATIVE_MAX_CONCURRENT",
                format!("{v:?} is not a whole number of at least 2"),
            )
        })?,
    };
    Ok(cold_start()
        .await?
        .with_http_jobs()
        .with_admission(max)
        .with_spare_vm())
}

/// The runtime of a function over given clients (tests point them at an emulator); scripts'
/// calls use these clients' credentials.
pub fn runtime_for(config: &AwsConfig, clients: &Clients) -> Runtime {
    runtime_over(config, clients.backends(config))
}

/// The runtime of a function over `backends`, tenants read from the scripts bucket.
fn runtime_over(config: &AwsConfig, backends: crate::ports::Backends) -> Runtime {
    let tenants = S3Tenants::new(
        backends.objects.clone(),
        &config.scripts_bucket,
        RECHECK_EVERY,
    );
    Runtime::new(config.deployment.clone(), backends, Arc::new(tenants))
}

/// The runtime of a function as it runs on AWS: with `NATIVE_TENANT_ROLE_ARN` set, every
/// script's S3 and DynamoDB calls use credentials of that role for its tenant
/// ([`StsTenantScope`]); the runtime's own calls (tenants, queues) use `sdk`'s.
///
/// In a Lambda function, scripts in flight share the function's memory less what the runtime
/// keeps ([`crate::capacity::ScriptMemory`]).
///
/// Log records go to stdout as JSON lines with Lambda's request id
/// ([`crate::observe::LambdaLog`]), with a metrics record per script run in the namespace
/// `NATIVE_METRICS_NAMESPACE` (default `native`).
pub fn scoped_runtime_for(config: &AwsConfig, sdk: &SdkConfig) -> Runtime {
    let namespace = std::env::var("NATIVE_METRICS_NAMESPACE")
        .ok()
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| crate::observe::NAMESPACE.to_string());
    // Spans go where OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT says; a bad endpoint is said once
    // and exports nothing rather than failing every event.
    let exporter = crate::observe::otlp::Exporter::from_env("native").unwrap_or_else(|e| {
        let why =
            serde_json::json!({ "level": "error", "msg": "OpenTelemetry export is off", "why": e });
        crate::observe::LogSink::write(&crate::observe::LambdaLog, &why);
        None
    });
    let mut rt = runtime_over(config, backends_on_first_use(sdk, config))
        .with_log(Arc::new(crate::observe::LambdaLog))
        .with_metrics(&namespace)
        .with_exporter(exporter);
    if let Some(memory) = crate::capacity::ScriptMemory::from_lambda_env() {
        rt = rt.with_script_memory(memory);
    }
    match &config.tenant_role_arn {
        Some(arn) => rt.with_tenant_scope(Arc::new(StsTenantScope::new(sdk, arn, config))),
        None => rt,
    }
}

/// The `invoke` function: runs `on_invoke` and returns its value.
pub async fn invoke(rt: &Runtime, req: InvokeRequest) -> Result<Value> {
    rt.invoke(&req.tenant, &req.script, req.event).await
}

/// [`invoke`] for a Lambda request whose deadline is `deadline_ms` (the context's): the script
/// ends [`crate::deadline::MARGIN`] before it, or at its `timeout_s` if sooner.
pub async fn invoke_by(rt: &Runtime, req: InvokeRequest, deadline_ms: u64) -> Result<Value> {
    crate::deadline::within(crate::deadline::lambda_end(deadline_ms), invoke(rt, req)).await
}

/// The `invoke` function's input as raw JSON, with an error that says what shape it must have.
pub fn parse_invoke(event: Value) -> Result<InvokeRequest> {
    serde_json::from_value(event).map_err(|e| {
        Error::InvalidInput(format!(
            "invoke event must be {{ \"tenant\": ..., \"script\": ..., \"event\": ... }}: {e}"
        ))
    })
}

/// Which of the two SQS functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Events,
    Work,
}

/// The `route` function: every record is an S3 notification (or `s3:TestEvent`).
pub async fn handle_event_batch(rt: &Arc<Runtime>, batch: SqsEvent) -> SqsBatchResponse {
    handle_batch(rt, batch, Kind::Events, None).await
}

/// The `queue` function: every record is a script message `{ tenant, script, event }`.
pub async fn handle_work_batch(rt: &Arc<Runtime>, batch: SqsEvent) -> SqsBatchResponse {
    handle_batch(rt, batch, Kind::Work, None).await
}

/// [`handle_event_batch`] for a Lambda request whose deadline is `deadline_ms`: every script
/// ends [`crate::deadline::MARGIN`] before it, so that the batch response (and its
/// partial failures) always gets back.
pub async fn handle_event_batch_by(
    rt: &Arc<Runtime>,
    batch: SqsEvent,
    deadline_ms: u64,
) -> SqsBatchResponse {
    let end = crate::deadline::lambda_end(deadline_ms);
    handle_batch(rt, batch, Kind::Events, Some(end)).await
}

/// [`handle_work_batch`] for a Lambda request whose deadline is `deadline_ms`; see
/// [`handle_event_batch_by`].
pub async fn handle_work_batch_by(
    rt: &Arc<Runtime>,
    batch: SqsEvent,
    deadline_ms: u64,
) -> SqsBatchResponse {
    let end = crate::deadline::lambda_end(deadline_ms);
    handle_batch(rt, batch, Kind::Work, Some(end)).await
}

/// A record's attempt: its `ApproximateReceiveCount` (1 on first delivery).
pub fn attempt_of(m: &SqsMessage) -> u32 {
    m.attributes
        .get("ApproximateReceiveCount")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

async fn handle_batch(
    rt: &Arc<Runtime>,
    batch: SqsEvent,
    kind: Kind,
    end: Option<std::time::Instant>,
) -> SqsBatchResponse {
    let mut tasks = Vec::with_capacity(batch.records.len());
    let aws_request_id = crate::observe::request_id();
    for m in batch.records {
        let id = m.message_id.clone().unwrap_or_default();
        let attempt = attempt_of(&m);
        let body = m.body.unwrap_or_default();
        let rt2 = rt.clone();
        let body2 = body.clone();
        // A task per message: a panic ends that task only and comes back as a JoinError.
        // Boxed: the run's future is kilobytes, which the task would otherwise move about.
        let work = Box::pin(async move {
            match kind {
                Kind::Events => rt2.handle_event_message(&body2, attempt).await.map(|_| ()),
                Kind::Work => rt2.handle_work_message(&body2, attempt).await,
            }
        });
        // Task-locals do not pass into spawned tasks: the request's id and end are set again.
        let work = crate::observe::in_request(aws_request_id.clone(), work);
        let task = match end {
            Some(end) => tokio::spawn(crate::deadline::within(end, work)),
            None => tokio::spawn(work),
        };
        tasks.push((id, attempt, body, task));
    }
    let queue = match kind {
        Kind::Events => QueueKind::Events,
        Kind::Work => QueueKind::Work,
    };
    // What follows the scripts (a failure's owner and chain, read for its log line; a move to
    // the dead letters) ends half the margin after them, so that the answer still gets back
    // before the function's deadline however the backends answer.
    let after = end.map(|e| tokio::time::Instant::from_std(e + crate::deadline::MARGIN / 2));
    let mut response = SqsBatchResponse::default();
    for (id, attempt, body, task) in tasks {
        let (error, permanent) = match task.await {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => (e.to_string(), cannot_succeed(&e)),
            Err(join) if join.is_panic() => {
                let p = join.into_panic();
                let what = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                (format!("internal error (panic): {what}"), None)
            }
            Err(join) => (format!("internal error: {join}"), None),
        };
        let (tenant, trace) = match bounded(after, rt.owner_of_message(queue, &body)).await {
            Some(owner) => owner,
            None => (
                crate::events::owner(&rt.services.deployment, queue, &body),
                None,
            ),
        };
        let mut rec = json!({
            "ts_ms": crate::ports::now_ms(),
            "level": "error",
            "queue": queue.name(),
            "message_id": id,
            "attempt": attempt,
            "tenant": tenant,
            "trace": trace,
            "error": error,
        });
        // An error that no retry can heal goes to the dead-letter queue now, with the error
        // beside it (`native dlq` shows it), instead of five receives over half an hour.
        if let Some(why) = permanent {
            let q = &rt.services.backends.queue;
            let moved = bounded(after, q.dead_letter_now(queue, &body, &error))
                .await
                .unwrap_or_else(|| {
                    Err(Error::Timeout(
                        "the move to the dead letters did not finish before the function's deadline"
                            .into(),
                    ))
                });
            match moved {
                Ok(()) => {
                    rec["msg"] = json!(format!(
                        "message dead-lettered at once: {why} never succeeds on a retry"
                    ));
                    rt.services.log.write(&rec);
                    rt.dead_letter_metric(tenant.as_deref(), why);
                    continue;
                }
                Err(e) => rec["dead_letter_error"] = json!(e.to_string()),
            }
        }
        rec["msg"] = json!(
            "message failed; SQS retries it, and moves it to the dead-letter queue after its fifth receive"
        );
        rt.services.log.write(&rec);
        if attempt >= crate::ports::MAX_RECEIVES {
            rt.dead_letter_metric(tenant.as_deref(), "failed on its last receive");
        }
        if id.is_empty() {
            // Without an id Lambda cannot retry one message alone; failing the whole batch
            // would repeat its neighbours, so it is logged and dropped.
            continue;
        }
        response.add_failure(id);
    }
    response
}

/// `work`'s answer, or `None` when `until` came first.
async fn bounded<T>(
    until: Option<tokio::time::Instant>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    match until {
        Some(at) => tokio::time::timeout_at(at, work).await.ok(),
        None => Some(work.await),
    }
}

/// Why an error can never turn into a success on a retry, if it cannot: the message is
/// malformed, names a tenant that does not exist, is past the tenant's chain depth, or its
/// script breached its chain's width.
pub fn cannot_succeed(e: &Error) -> Option<&'static str> {
    match e {
        e if crate::host::chain::breached_width(e) => Some("work past its chain's width"),
        Error::InvalidInput(_) => Some("a malformed message"),
        Error::NotFound {
            missing: Missing::Tenant,
            ..
        } => Some("a message for an unknown tenant"),
        Error::LimitExceeded {
            limit: "max_chain_depth",
            ..
        } => Some("work past the chain depth"),
        _ => None,
    }
}

/// The tenant a message belongs to, where its body tells.
#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Deployment, Tenant};
    use crate::embedded::Embedded;
    use crate::ports::{ObjectStore, Queue};
    use crate::tenants::{DirTenants, TenantSource};

    /// Tenants from a folder, except one whose loading panics.
    #[derive(Debug)]
    struct Panicky(DirTenants);

    #[async_trait::async_trait]
    impl TenantSource for Panicky {
        async fn load(&self, tenant: &str) -> Result<Arc<Tenant>> {
            if tenant == "boom" {
                panic!("tenant source exploded");
            }
            self.0.load(tenant).await
        }
    }

    fn record(id: &str, body: &str, count: u32) -> SqsMessage {
        let mut m = SqsMessage::default();
        m.message_id = Some(id.into());
        m.body = Some(body.into());
        m.attributes
            .insert("ApproximateReceiveCount".into(), count.to_string());
        m
    }

    fn setup() -> (tempfile::TempDir, Embedded, Arc<Runtime>) {
        let dir = tempfile::tempdir().unwrap();
        let scripts = dir.path().join("tenants/acme/scripts");
        std::fs::create_dir_all(&scripts).unwrap();
        std::fs::write(dir.path().join("tenants/acme/config.json"), "{}").unwrap();
        std::fs::write(
            scripts.join("s.luau"),
            "function on_queue(ctx, ev) native.bucket.Out.put('attempt.txt', tostring(ctx.attempt)) end\n\
             function on_invoke(ctx, ev) return { n = ev.n + 1 } end",
        )
        .unwrap();
        let d = Deployment::from_json("d.json", r#"{"buckets":{"map":{"Out":"out-b"}}}"#).unwrap();
        let e = Embedded::open(&dir.path().join(".native"), vec![]).unwrap();
        let rt = Runtime::new(
            d,
            e.backends(),
            Arc::new(Panicky(DirTenants::new(dir.path()))),
        )
        .with_log(Arc::new(crate::observe::StderrLog));
        (dir, e, Arc::new(rt))
    }

    #[tokio::test]
    async fn only_a_tenant_that_does_not_exist_is_a_missing_thing_no_retry_heals() {
        let (dir, _e, _rt) = setup();
        let tenants = DirTenants::new(dir.path());
        // GIVEN the tenant source's own error for a tenant that does not exist
        let e = tenants.load("ghost").await.unwrap_err();
        // THEN its message goes to the dead letters at once
        assert_eq!(cannot_succeed(&e), Some("a message for an unknown tenant"));
        // AND a missing thing of a tenant that exists may appear later, whatever its text says
        let acme = tenants.load("acme").await.unwrap();
        let e = acme.script("nope").unwrap_err();
        assert_eq!(cannot_succeed(&e), None, "{e}");
        let e = Error::not_found("tenant \"acme\" has no job \"j1\"");
        assert_eq!(cannot_succeed(&e), None, "{e}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_or_panicking_message_fails_alone() {
        let (_d, e, rt) = setup();
        let mut batch = SqsEvent::default();
        batch.records = vec![
            record("ok", r#"{"tenant":"acme","script":"s","event":{}}"#, 3),
            record("panics", r#"{"tenant":"boom","script":"s","event":{}}"#, 1),
            record("junk", "not json", 1),
            record("missing", r#"{"tenant":"acme","script":"nope"}"#, 1),
        ];
        let resp = handle_work_batch(&rt, batch).await;
        let failed: Vec<_> = resp
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        // The junk can never succeed: it went to the dead letters at once, with its error.
        assert_eq!(failed, ["panics", "missing"]);
        let dead = e.dead_letters(QueueKind::Work, 10).await.unwrap();
        assert_eq!(dead.len(), 1);
        assert_eq!(dead[0].body, "not json");
        assert!(dead[0]
            .last_error
            .as_deref()
            .is_some_and(|m| m.contains("not {tenant, script, event}")));
        let (_, data) = e.get("out-b", "acme/attempt.txt").await.unwrap().unwrap();
        assert_eq!(&data[..], b"3", "ctx.attempt is the receive count");
        let json = serde_json::to_value(&resp).unwrap();
        assert_eq!(
            json["batchItemFailures"][0],
            json!({ "itemIdentifier": "panics" })
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn test_events_are_dropped_and_invoke_returns_the_value() {
        let (_d, _e, rt) = setup();
        let mut batch = SqsEvent::default();
        batch.records = vec![record(
            "t",
            r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"x"}"#,
            1,
        )];
        assert!(handle_event_batch(&rt, batch)
            .await
            .batch_item_failures
            .is_empty());
        let req =
            parse_invoke(json!({ "tenant": "acme", "script": "s", "event": { "n": 1 } })).unwrap();
        assert_eq!(invoke(&rt, req).await.unwrap(), json!({ "n": 2 }));
        let e = parse_invoke(json!({ "tenant": "acme", "scrpit": "s" })).unwrap_err();
        assert!(e.to_string().contains("unknown field `scrpit`"), "{e}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scripts_in_flight_share_the_script_memory() {
        // GIVEN a runtime whose script memory fits one 64 MB script at a time, and a script
        // that notes when another copy of it is running
        let (dir, e, _) = setup();
        std::fs::write(
            dir.path().join("tenants/acme/scripts/busy.luau"),
            "function on_queue(ctx, ev)\n\
               if not native.db.put_if_absent('run', 'lock', true) then native.db.put('run', 'overlap', true) end\n\
               local t = os.clock() while os.clock() - t < 0.3 do end\n\
               native.db.delete('run', 'lock')\n\
             end",
        )
        .unwrap();
        let d = Deployment::from_json("d.json", r#"{"buckets":{"map":{"Out":"out-b"}}}"#).unwrap();
        let rt = Arc::new(
            Runtime::new(d, e.backends(), Arc::new(DirTenants::new(dir.path())))
                .with_log(Arc::new(crate::observe::StderrLog))
                .with_script_memory(crate::capacity::ScriptMemory::new(100)),
        );
        // WHEN a batch of three runs it
        let mut batch = SqsEvent::default();
        batch.records = (0..3)
            .map(|i| {
                record(
                    &format!("m{i}"),
                    r#"{"tenant":"acme","script":"busy","event":{}}"#,
                    1,
                )
            })
            .collect();
        let resp = handle_work_batch(&rt, batch).await;
        // THEN all three ran, one after another
        assert!(resp.batch_item_failures.is_empty());
        let kv = e.backends().kv;
        let pk = "d#acme#run";
        assert!(
            kv.get(pk, "overlap").await.unwrap().is_none(),
            "two ran at once"
        );
        assert!(kv.get(pk, "lock").await.unwrap().is_none());
    }

    #[test]
    fn sample_events_parse() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../events");
        for f in ["route.json", "queue.json"] {
            let text = std::fs::read_to_string(root.join(f)).unwrap();
            let ev: SqsEvent = serde_json::from_str(&text).unwrap();
            assert_eq!(ev.records.len(), 2, "{f}");
        }
        let ev: Value =
            serde_json::from_str(&std::fs::read_to_string(root.join("invoke.json")).unwrap())
                .unwrap();
        parse_invoke(ev).unwrap();
        let q: SqsEvent =
            serde_json::from_str(&std::fs::read_to_string(root.join("queue.json")).unwrap())
                .unwrap();
        assert_eq!(attempt_of(&q.records[1]), 3);
    }
}
