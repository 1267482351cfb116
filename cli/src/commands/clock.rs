//! `native clock advance|show|reset`: the project clock of the embedded backend, so that
//! time-based behaviour (expiry, delays, deadlines, `os.time`) can be tried without waiting.

use std::path::Path;

use native_core::clock;
use native_core::ports::now_ms;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};
use crate::ClockCommand;

pub fn run(project: &Path, command: ClockCommand) -> Outcome {
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
