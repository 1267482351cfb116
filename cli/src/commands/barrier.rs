//! `native barrier status TENANT ID`.

use std::cell::Cell;
use std::path::Path;

use native_core::barrier::{Barriers, Budget};

use super::{open, Failed, Outcome};
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

pub async fn run(project: &Path, command: BarrierCommand) -> Outcome {
    let BarrierCommand::Status {
        tenant,
        id,
        limit,
        cursor,
    } = command;
    if !(1..=1000).contains(&limit) {
        return Err(Failed::usage(format!(
            "--limit must be 1 to 1000, not {limit}"
        )));
    }
    let p = open(project)?;
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
    match b.status(&id, cursor.as_deref(), limit).await? {
        Some(s) => {
            let text = serde_json::to_string_pretty(&s).unwrap_or_default();
            outln!("{}", crate::show::json(&text));
            Ok(())
        }
        None => Err(Failed::script(format!("tenant {tenant:?} has no barrier {id:?} (never created, still being created, or expired)"))),
    }
}
