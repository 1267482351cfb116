//! `native send`, `native queues` and `native dlq`.

use std::path::Path;

use native_core::ports::WorkMessage;
use native_core::ports::{QueueKind, MAX_DELAY_S};

use super::{drain_after, event_arg, open, Failed, Outcome};
use crate::out::{errln, outln};

pub async fn send(
    project: &Path,
    tenant: &str,
    script: &str,
    event: Option<&str>,
    delay: u32,
    no_drain: bool,
) -> Outcome {
    if delay > MAX_DELAY_S {
        return Err(Failed::usage(format!(
            "--delay {delay} is above the maximum of {MAX_DELAY_S} s"
        )));
    }
    let event = event_arg(event)?;
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let mark = super::mark(&p)?;
    // Refuse what could never run, instead of queueing it for the dead-letter place.
    let t = rt.tenants.load(tenant).await?;
    let source = t.script(script)?;
    if !source.mentions("on_queue") {
        return Err(Failed::usage(format!(
            "script {script:?} of tenant {tenant:?} has no on_queue(ctx, ev) (tenants/{tenant}/scripts/{script}.luau never names it): \
             a message for it could only fail five times and become a dead letter; define function on_queue(ctx, ev) in it, \
             or run its on_invoke with `native invoke {tenant} {script}`"
        )));
    }
    // The message starts a chain here, so that every attempt of it (and what it leads to) is
    // one trace: `native logs --trace` finds them, `native dlq` names it.
    let trace = native_core::observe::new_trace();
    let body = serde_json::to_string(&WorkMessage {
        tenant: tenant.into(),
        script: script.into(),
        event,
        depth: 0,
        width: None,
        chain: Some(trace.clone()),
        once: None,
        slot: None,
    })
    .map_err(|e| Failed::usage(e.to_string()))?;
    rt.services
        .backends
        .queue
        .send(QueueKind::Work, body, delay)
        .await?;
    crate::show::started_chain(&rt, "sent", tenant, script, &trace);
    drain_after(&rt, mark, no_drain).await
}

/// The queues of a deployment on AWS whose dead letters `native dlq` lists (none given: the
/// project's embedded ones). Their dead-letter queues come from their redrive policies.
#[derive(Debug, Default)]
pub struct OnAws {
    /// The events queue's URL.
    pub events: Option<String>,
    /// The work queue's URL.
    pub work: Option<String>,
}

/// The queue port and the queues `native dlq` verbs work on: the project's embedded ones, or
/// those of a deployment on AWS given by URL (their dead-letter queues come from their redrive
/// policies). The flag says which.
async fn queues_of(
    rt: &native_core::runtime::Runtime,
    on_aws: OnAws,
) -> (
    std::sync::Arc<dyn native_core::ports::Queue>,
    Vec<QueueKind>,
    bool,
) {
    if on_aws.events.is_none() && on_aws.work.is_none() {
        return (
            rt.services.backends.queue.clone(),
            vec![QueueKind::Events, QueueKind::Work],
            false,
        );
    }
    use native_core::aws::{load_sdk_config, Clients, QueueUrls, SqsQueues};
    let sdk = load_sdk_config().await;
    let mut kinds = Vec::new();
    if on_aws.events.is_some() {
        kinds.push(QueueKind::Events);
    }
    if on_aws.work.is_some() {
        kinds.push(QueueKind::Work);
    }
    let urls = QueueUrls {
        events: on_aws.events.unwrap_or_default(),
        work: on_aws.work.unwrap_or_default(),
        events_dlq: None,
        work_dlq: None,
    };
    (
        std::sync::Arc::new(SqsQueues::new(Clients::new(&sdk).sqs, urls)),
        kinds,
        true,
    )
}

/// `native queues [TENANT]`: the messages waiting in the project's queues.
pub async fn list(project: &Path, tenant: Option<&str>, limit: u32) -> Outcome {
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let now = native_core::ports::now_ms();
    let mut n = 0;
    for kind in [QueueKind::Events, QueueKind::Work] {
        for m in p.backend.queued(kind, limit as usize)? {
            let owner = owner(&rt, kind, &m.body);
            if tenant.is_some_and(|t| owner.as_deref() != Some(t)) {
                continue;
            }
            n += 1;
            let line = serde_json::json!({
                "queue": kind.name(), "id": m.id, "tenant": owner, "state": m.standing.name(),
                "attempts": m.receive_count, "due_in_s": ((m.visible_at_ms - now).max(0) + 999) / 1000,
                "sent_ms": m.sent_ms, "last_error": m.last_error, "body": body_json(&m.body),
            });
            outln!("{}", crate::show::json(&line.to_string()));
        }
    }
    errln!("{n} message(s) waiting (dead letters: `native dlq`)");
    Ok(())
}

/// A message body as JSON when it is JSON, else as a string.
fn body_json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|_| serde_json::Value::String(body.to_string()))
}

pub async fn dlq(project: &Path, tenant: Option<&str>, on_aws: OnAws) -> Outcome {
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let (queue, kinds, aws) = queues_of(&rt, on_aws).await;
    let mut n = 0;
    for kind in kinds {
        for d in queue.dead_letters(kind, 1000).await? {
            let owner = owner(&rt, kind, &d.body);
            if tenant.is_some_and(|t| owner.as_deref() != Some(t)) {
                continue;
            }
            n += 1;
            let (_, trace) = rt.owner_of_message(kind, &d.body).await;
            let mut line = serde_json::json!({
                "queue": kind.name(), "id": d.id, "tenant": owner, "trace": trace,
                "receives": d.receive_count, "last_error": d.last_error, "body": body_json(&d.body),
            });
            // Each attempt's error, as the project's queues keep them (SQS keeps the last).
            if !aws {
                let attempts: Vec<_> = p
                    .backend
                    .attempts(&d.id)?
                    .into_iter()
                    .map(|a| serde_json::json!({ "attempt": a.attempt, "at_ms": a.at_ms, "error": a.error }))
                    .collect();
                line["attempts"] = serde_json::json!(attempts);
            }
            outln!("{}", crate::show::json(&line.to_string()));
        }
    }
    errln!("{n} dead letter(s)");
    Ok(())
}

/// The most dead letters one `native dlq redrive` moves per queue.
const REDRIVE_MAX: usize = 10_000;

/// `native dlq redrive [TENANT]`. A tenant's dead letters are told apart as `native dlq` does:
/// a work message names its tenant; an object notification's tenant is the first folder of its
/// key in a bucket of this project's deployment.json (as the route function tells it), and one
/// that cannot be told (another bucket, S3's test event) stays put.
/// Which dead letters `native dlq redrive` moves.
#[derive(Debug, Clone, Copy)]
pub struct Only<'a> {
    /// Only this tenant's.
    pub tenant: Option<&'a str>,
    /// Only the one with this id.
    pub id: Option<&'a str>,
}

pub async fn redrive(project: &Path, only: Only<'_>, no_drain: bool, on_aws: OnAws) -> Outcome {
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let (queue, kinds, aws) = queues_of(&rt, on_aws).await;
    let tenant = only.tenant;
    let mut moved = 0;
    let mut found_id = false;
    for kind in kinds {
        // One message: found by its id among the dead letters, moved by its body (the port
        // moves messages by what they hold; two dead letters with the same body are the same
        // work, and only one moves).
        let (wanted, max) = match only.id {
            Some(id) => match queue
                .dead_letters(kind, REDRIVE_MAX)
                .await?
                .into_iter()
                .find(|d| d.id == id)
            {
                Some(d) => (Some(d.body), 1),
                None => continue,
            },
            None => (None, REDRIVE_MAX),
        };
        found_id |= wanted.is_some();
        let keep = |body: &str| {
            wanted.as_deref().is_none_or(|w| w == body)
                && tenant.is_none_or(|t| owner(&rt, kind, body).as_deref() == Some(t))
        };
        let n = queue.redrive(kind, &keep, max).await?;
        if aws {
            errln!("{n} dead letter(s) moved back to the {} queue", kind.name());
        }
        moved += n;
    }
    if let (Some(id), false) = (only.id, found_id) {
        return Err(Failed::usage(format!(
            "there is no dead letter with id {id:?}; `native dlq` lists them with their ids"
        )));
    }
    errln!("{moved} dead letter(s) moved back to their queue");
    if aws {
        errln!("on AWS the deployment's functions process them; nothing is drained here");
        return Ok(());
    }
    // The redriven messages are this verb's work, however old: mark 0 counts every failure.
    drain_after(&rt, 0, no_drain).await
}

/// The tenant a message belongs to, where it can be told.
fn owner(rt: &native_core::runtime::Runtime, kind: QueueKind, body: &str) -> Option<String> {
    native_core::events::owner(&rt.services.deployment, kind, body)
}
