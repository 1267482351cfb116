//! The work queue's message: which script of which tenant gets which event. Every primitive
//! that continues work (a barrier's continuation, a job's, a timer's, `native.queue.send`)
//! writes one; the runtime reads it.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A work-queue message: which script of which tenant gets which event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkMessage {
    /// The tenant.
    pub tenant: String,
    /// The script whose `on_queue` runs.
    pub script: String,
    /// The event, exactly as sent.
    #[serde(default)]
    pub event: Value,
    /// The chain depth the script runs at (`ctx.depth`): 0 for a message from outside, one
    /// more than the sender's for a message a script sent.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub depth: u32,
    /// The share of its chain's width the script runs with (`ctx.width`,
    /// `crate::host::chain`); none for a message from outside, which starts a chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub width: Option<u32>,
    /// The chain the work belongs to: the id of the run at depth 0 it came from, for people
    /// (the console's invocations). Absent for work from outside, which starts a chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
    /// The work this message does, when it must run once though the message arrive twice (a
    /// continuation's: its barrier and generation); see `crate::once`. Absent for messages
    /// that run at least once (`native.queue.send`, timers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub once: Option<String>,
    /// The schedule slot this message runs (`crate::schedule`), whose outcome the runtime
    /// records for `native schedules` and the overlap rule. Only the scheduler sets it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<Slot>,
}

/// A schedule's slot that a work message runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Slot {
    /// The schedule's name.
    pub schedule: String,
    /// The slot, in ms since the epoch (a manual run's: when it was asked for).
    pub at_ms: i64,
    /// Whether an operator asked for it (`trigger`, `backfill`) rather than the clock.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
}

/// The chain (trace) a queue message's body names, when it is a work message with one in its
/// own form ([`is_trace`]): for the log line of its failure and the dead-letter
/// listing. An object event's message names none (its object holds it).
pub fn trace_of_body(body: &str) -> Option<String> {
    #[derive(Deserialize)]
    struct Chain {
        chain: Option<String>,
    }
    serde_json::from_str::<Chain>(body)
        .ok()?
        .chain
        .filter(|c| is_trace(c))
}

/// Whether `s` can be a chain id that came from storage or a queue: 1 to 64 characters of
/// `[0-9a-zA-Z_-]`. Anything else (an outsider's object metadata) is not carried on.
pub fn is_trace(s: &str) -> bool {
    (1..=64).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn is_zero(d: &u32) -> bool {
    *d == 0
}
