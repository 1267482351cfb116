//! `native clock advance|show|reset`: the project clock of the embedded backend, so that
//! time-based behaviour (expiry, delays, deadlines, `os.time`, schedules) can be tried without
//! waiting.

use std::path::Path;

use native_core::clock;
use native_core::local::{drain, DrainOptions, Project};
use native_core::ports::now_ms;
use native_core::schedule::Schedules;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};
use crate::ClockCommand;

pub async fn run(project: &Path, command: ClockCommand) -> Outcome {
    // Opening the project applies its stored offset to this process.
    let p = open(project)?;
    let state = p.root.join(".native");
    let offset = clock::load(&state)?;
    let new = match command {
        ClockCommand::Show => offset,
        ClockCommand::Reset => 0,
        ClockCommand::Advance { duration } => {
            let by = clock::parse_duration(&duration).map_err(Failed::usage)?;
            let total = offset.saturating_add(by);
            if total > clock::MAX_OFFSET_MS {
                return Err(Failed::usage(format!(
                    "the clock would be {} days ahead; the limit is ten years: run `native clock reset`",
                    total / 86_400_000
                )));
            }
            total
        }
    };
    if new > offset && !walked_none(&p) {
        walk(&p, &state, new - offset).await?;
    }
    if new != offset {
        clock::store(&state, new)?;
    }
    clock::apply(&state)?;
    outln!(
        "{}",
        serde_json::json!({ "offset_ms": new, "now_ms": now_ms() })
    );
    errln!(
        "the project clock is {} ahead of the system clock; every native process on this project follows it",
        human(new)
    );
    Ok(())
}

/// `8d 2h 0m 5s`.
fn human(ms: i64) -> String {
    let s = ms / 1000;
    format!(
        "{}d {}h {}m {}s",
        s / 86_400,
        s % 86_400 / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// The most slots one advance walks through; past them the clock jumps, and the slots left are
/// missed ones (the next tick runs the latest, counting them).
const MAX_STEPS: u32 = 10_000;

/// Whether the project has no schedules, so the clock just jumps.
fn walked_none(p: &Project) -> bool {
    let names = p.tenants.names().unwrap_or_default();
    names.iter().all(|n| {
        p.tenants
            .read(n)
            .map_or(true, |t| t.config.schedules.is_empty())
    })
}

/// Moves the clock `by` ms forward through each slot of the project's schedules, and at each
/// one runs what is due as `native serve` would have (`native drain`): `native clock advance
/// 1d` shows a day of a schedule's runs, each at its slot, not one run standing for the day.
/// Each slot's runs are printed as `{"at_ms", "handled"}`.
async fn walk(p: &Project, state: &Path, by: i64) -> Outcome {
    let rt = crate::show::runtime(p);
    let b = p.backend.backends();
    let target = now_ms() + by;
    let system_now = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    };
    // Every schedule gets its state (and so its next slot) at the present moment first.
    drain(&rt, DrainOptions::default()).await?;
    for _ in 0..MAX_STEPS {
        let mut next: Option<i64> = None;
        for name in rt.tenants.list().await? {
            let Ok(t) = rt.tenants.load(&name).await else {
                continue;
            };
            if t.config.schedules.is_empty() {
                continue;
            }
            let s = Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &t);
            for info in s.list().await? {
                match info.next_ms {
                    Some(n) if !(info.paused || info.paused_in_config) => {
                        next = Some(next.map_or(n, |m| m.min(n)));
                    }
                    _ => {}
                }
            }
        }
        let Some(at) = next.filter(|n| *n <= target) else {
            return Ok(());
        };
        clock::store(state, at.max(now_ms()) - system_now())?;
        clock::apply(state)?;
        let r = drain(&rt, DrainOptions::default()).await?;
        outln!(
            "{}",
            serde_json::json!({ "at_ms": at, "handled": r.handled })
        );
    }
    errln!(
        "the schedules have more than {MAX_STEPS} slots in this span: the clock jumps past the \
         rest, which the next tick runs as missed ones"
    );
    Ok(())
}
