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

use super::{load_sdk_config, AwsConfig, Clients, S3Tenants, RECHECK_EVERY};
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

/// What a function builds once per cold start: the configuration from the environment, the
/// SDK clients, tenants from the scripts bucket, and the runtime over them.
pub async fn cold_start() -> Result<Runtime> {
    let config = AwsConfig::from_env()?;
    let sdk = load_sdk_config().await;
    Ok(runtime_for(&config, &Clients::new(&sdk)))
}

/// The runtime of a function over given clients (tests point them at an emulator).
pub fn runtime_for(config: &AwsConfig, clients: &Clients) -> Runtime {
    let backends = clients.backends(config);
    let tenants = S3Tenants::new(
        backends.objects.clone(),
        &config.scripts_bucket,
        RECHECK_EVERY,
    );
    Runtime::new(config.deployment.clone(), backends, Arc::new(tenants))
}

/// The `invoke` function: runs `on_invoke` and returns its value.
pub async fn invoke(rt: &Runtime, req: InvokeRequest) -> Result<Value> {
    rt.invoke(&req.tenant, &req.script, req.event).await
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
    handle_batch(rt, batch, Kind::Events).await
}

/// The `queue` function: every record is a script message `{ tenant, script, event }`.
pub async fn handle_work_batch(rt: &Arc<Runtime>, batch: SqsEvent) -> SqsBatchResponse {
    handle_batch(rt, batch, Kind::Work).await
}

/// A record's attempt: its `ApproximateReceiveCount` (1 on first delivery).
pub fn attempt_of(m: &SqsMessage) -> u32 {
    m.attributes
        .get("ApproximateReceiveCount")
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
        .max(1)
}

async fn handle_batch(rt: &Arc<Runtime>, batch: SqsEvent, kind: Kind) -> SqsBatchResponse {
    let mut tasks = Vec::with_capacity(batch.records.len());
    for m in batch.records {
        let id = m.message_id.clone().unwrap_or_default();
        let attempt = attempt_of(&m);
        let rt2 = rt.clone();
        // A task per message: a panic ends that task only and comes back as a JoinError.
        let task = tokio::spawn(async move {
            let body = m.body.as_deref().unwrap_or("");
            match kind {
                Kind::Events => rt2.handle_event_message(body, attempt).await.map(|_| ()),
                Kind::Work => rt2.handle_work_message(body, attempt).await,
            }
        });
        tasks.push((id, attempt, task));
    }
    let mut response = SqsBatchResponse::default();
    for (id, attempt, task) in tasks {
        let error = match task.await {
            Ok(Ok(())) => continue,
            Ok(Err(e)) => e.to_string(),
            Err(join) if join.is_panic() => {
                let p = join.into_panic();
                let what = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "a panic".to_string());
                format!("internal error (panic): {what}")
            }
            Err(join) => format!("internal error: {join}"),
        };
        rt.services.log.write(&json!({
            "ts_ms": crate::ports::now_ms(),
            "level": "error",
            "msg": "message failed; SQS retries it, and moves it to the dead-letter queue after its fifth receive",
            "queue": match kind { Kind::Events => "events", Kind::Work => "work" },
            "message_id": id,
            "attempt": attempt,
            "error": error,
        }));
        if id.is_empty() {
            // Without an id Lambda cannot retry one message alone; failing the whole batch
            // would repeat its neighbours, so it is logged and dropped.
            continue;
        }
        response.add_failure(id);
    }
    response
}
