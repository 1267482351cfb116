//! The rows of a schedule: its [`State`] (the tick's and the operators') and its [`Runs`] (the
//! runtime's record of how runs ended).

use serde::{Deserialize, Serialize};

use crate::ports::Item;

/// A schedule's state row.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// What the slots were computed from ([`crate::config::Schedule::spec`]).
    #[serde(default)]
    pub spec: String,
    /// The first slot not yet claimed, in ms since the epoch (0: not yet set).
    #[serde(default)]
    pub next_ms: i64,
    /// Paused by an operator.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub paused: bool,
    /// Slots skipped by the overlap rule since the last run, which the next run counts.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub skipped: u64,
    /// The last slot the clock (not an operator) sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_ms: Option<i64>,
    /// Runs claimed and not yet known to be sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outbox: Vec<Fire>,
    /// Until when the writer of the outbox holds it (0: nobody).
    #[serde(default, skip_serializing_if = "is_zero_i")]
    pub claim_until_ms: i64,
}

impl State {
    /// The state an item holds (a row that does not parse: a new one).
    pub fn of(item: &Item) -> State {
        serde_json::from_str(&item.value).unwrap_or_default()
    }
}

/// One run to send: a slot, and the slots before it that it stands for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fire {
    /// The slot, in ms since the epoch.
    pub at_ms: i64,
    /// Slots missed before it.
    #[serde(default)]
    pub missed: u64,
    /// Asked for by an operator (trigger, backfill).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
}

/// A schedule's runs row: how its last runs ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Runs {
    /// The last run, of the clock or an operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last: Option<LastRun>,
    /// The last run of a slot of the clock (what the overlap rule reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<LastRun>,
}

impl Runs {
    /// The runs an item holds.
    pub fn of(item: &Item) -> Runs {
        serde_json::from_str(&item.value).unwrap_or_default()
    }
}

/// How one run ended, on which attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LastRun {
    /// Its slot.
    pub at_ms: i64,
    /// Whether it succeeded.
    pub ok: bool,
    /// Its delivery attempt (1 on first).
    pub attempt: u32,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When it ended.
    pub ended_ms: i64,
    /// Asked for by an operator.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub manual: bool,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

fn is_zero_i(n: &i64) -> bool {
    *n == 0
}
