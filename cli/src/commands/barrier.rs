//! `native barrier list|status|ack|cancel TENANT ...`.

use std::cell::Cell;
use std::path::Path;

use native_core::barrier::{Barriers, Outcome};
use native_core::budget::Budget;
use serde_json::json;

use super::{open, Failed};

type Result = super::Outcome;
use crate::out::{errln, outln};
use crate::BarrierCommand;

/// Tools are not scripts: no data-ops limit, but the calls are counted for people to see.
#[derive(Default)]
pub(crate) struct Calls(Cell<u32>);

impl Budget for Calls {
    fn spend(&self, calls: u32) -> native_core::Result<()> {
        self.0.set(self.0.get() + calls);
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

pub async fn run(project: &Path, command: BarrierCommand) -> Result {
    if let BarrierCommand::List { tenant, limit } = &command {
        return list(project, tenant, *limit).await;
    }
    let (tenant, id) = match &command {
        BarrierCommand::List { .. } => unreachable!("handled above"),
        BarrierCommand::Status { tenant, id, .. }
        | BarrierCommand::Ack { tenant, id, .. }
        | BarrierCommand::Cancel { tenant, id, .. } => (tenant.clone(), id.clone()),
    };
    let p = open(project)?;
    let mark = super::mark(&p)?;
    let t = p.runtime().tenants.load(&tenant).await?;
    let backends = p.backend.backends();
    let calls = Calls::default();
    let b = Barriers {
        kv: backends.kv.as_ref(),
        queue: backends.queue.as_ref(),
        tenant: &t.name,
        queue_enabled: t.config.queue,
        budget: &calls,
    };
    let no_drain = match command {
        BarrierCommand::List { .. } => unreachable!("handled above"),
        BarrierCommand::Status { limit, cursor, .. } => {
            if !(1..=1000).contains(&limit) {
                return Err(Failed::usage(format!(
                    "--limit must be 1 to 1000, not {limit}"
                )));
            }
            return match b.status(&id, cursor.as_deref(), limit).await? {
                Some(s) => {
                    let text = serde_json::to_string_pretty(&s).unwrap_or_default();
                    outln!("{}", crate::show::json(&text));
                    Ok(())
                }
                None => Err(Failed::script(format!("tenant {tenant:?} has no barrier {id:?} (never created, still being created, or expired)"))),
            };
        }
        BarrierCommand::Ack {
            member,
            error,
            no_drain,
            ..
        } => {
            let outcome = Outcome {
                ok: error.is_none(),
                error,
                result: None,
            };
            let ok = outcome.ok;
            let r = b.ack(&id, &member, outcome).await?;
            if !r.duplicate {
                let fields =
                    json!({ "barrier": id, "member": member, "ok": ok, "complete": r.complete });
                operator_step(
                    &p,
                    &t.name,
                    r.chain.as_deref(),
                    "barrier member acked",
                    fields,
                )
                .await;
            }
            outln!(
                "{}",
                json!({ "duplicate": r.duplicate, "complete": r.complete, "dispatched": r.dispatched })
            );
            no_drain
        }
        BarrierCommand::Cancel {
            reason, no_drain, ..
        } => {
            let n = b.cancel(&id, &reason).await?;
            if n > 0 {
                let fields = json!({ "barrier": id, "resolved": n, "reason": reason });
                let chain = b.chain(&id).await?;
                operator_step(&p, &t.name, chain.as_deref(), "barrier cancelled", fields).await;
            }
            outln!("{}", json!({ "resolved": n }));
            no_drain
        }
    };
    super::drain_after(&crate::show::runtime(&p), mark, no_drain).await
}

/// Records an operator's action on a barrier in the barrier's chain (when it has one), in the
/// project's log history: a step ([`native_core::observe::step`]) naming the operator
/// (`$USER`), so that `native logs --trace` shows it among the chain's runs.
async fn operator_step(
    p: &native_core::local::Project,
    tenant: &str,
    chain: Option<&str>,
    msg: &str,
    fields: serde_json::Value,
) {
    use native_core::observe::{step, LogSink};
    let Some(chain) = chain else {
        return;
    };
    // The operator's own environment; shown escaped like every record (`show::readable`).
    let user = std::env::var("USER")
        .ok()
        .filter(|u| !u.is_empty())
        .map(|u| native_core::text::cut_text(u, 64));
    let by = step::Origin::Operator {
        via: "cli",
        who: user.as_deref(),
        chain: None,
    };
    let rec = step::record(chain, tenant, msg, &by, fields);
    crate::logfile::LogFile::new(&p.root.join(".native")).write(&rec);
    // As a span of the chain, where the environment names a collector (as for `native
    // serve`), sent before the command ends, within one send's time.
    match native_core::observe::otlp::Exporter::from_env("native") {
        Ok(Some(e)) => {
            step::export(Some(&e), &rec, None);
            if !e
                .flush_within(native_core::observe::otlp::SEND_TIMEOUT)
                .await
            {
                errln!("the step's span did not reach the collector in time; it is in the project's logs");
            }
        }
        Ok(None) => {}
        Err(e) => errln!("the step's span was not exported: OTEL_EXPORTER_OTLP_ENDPOINT: {e}"),
    }
    // And where the console's timeline of the chain reads it.
    if let Some(step) = native_core::observe::recent::Step::of(&rec) {
        let recent = p.recent(false);
        recent.keep_step(step);
        if let Err(e) = recent.flush().await {
            errln!("the step was not kept for the console's timeline of chain {chain}: {e}");
        }
    }
}

/// `native barrier list TENANT`: every barrier of the tenant in the project's store (its
/// partitions `b#<tenant>#<id>`), with where it stands.
async fn list(project: &Path, tenant: &str, limit: u32) -> Result {
    let p = open(project)?;
    let t = p.runtime().tenants.load(tenant).await?;
    let backends = p.backend.backends();
    let calls = Calls::default();
    let b = Barriers {
        kv: backends.kv.as_ref(),
        queue: backends.queue.as_ref(),
        tenant: &t.name,
        queue_enabled: t.config.queue,
        budget: &calls,
    };
    let prefix = format!("b#{}#", t.name);
    let mut n = 0;
    for pk in p.backend.partitions(&prefix, limit as usize)? {
        let id = &pk[prefix.len()..];
        // Still being created, or expiring between the two reads: not listed.
        let Some(s) = b.status(id, None, 0).await? else {
            continue;
        };
        n += 1;
        let line = json!({
            "id": s.id, "total": s.total, "pending": s.pending, "failed": s.failed,
            "complete": s.complete, "dispatched": s.dispatched, "overdue": s.overdue,
            "continue_with": s.continue_with, "created_ms": s.created_ms,
        });
        outln!("{}", crate::show::json(&line.to_string()));
    }
    errln!("{n} barrier(s) of tenant {tenant:?} (`native barrier status {tenant} ID` for one)");
    Ok(())
}
