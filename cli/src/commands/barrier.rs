//! `native barrier status|ack|cancel TENANT ID ...`.

use std::cell::Cell;
use std::path::Path;

use native_core::barrier::{Barriers, Outcome};
use native_core::budget::Budget;
use serde_json::json;

use super::{open, Failed};

type Result = super::Outcome;
use crate::out::outln;
use crate::BarrierCommand;

/// Tools are not scripts: no data-ops limit, but the calls are counted for people to see.
#[derive(Default)]
pub(super) struct Calls(Cell<u32>);

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
    let (tenant, id) = match &command {
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
            let r = b.ack(&id, &member, outcome).await?;
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
            outln!("{}", json!({ "resolved": n }));
            no_drain
        }
    };
    super::drain_after(&crate::show::runtime(&p), mark, no_drain).await
}
