//! A batch job's stale timer (`"job"` on the timer row): `on_stale`'s message, sent only if the
//! job is still waiting by then: its `done.json` is not there, and its state is (a continuation
//! that settled the job and deleted `job:keys()` took both). Registered with the tick by the
//! runtime.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::timer::{Condition, Due, Kind, Verdict};
use crate::Result;

/// The condition of a batch job's stale timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobGuard {
    /// The job id.
    pub id: String,
    /// The real batch bucket.
    pub bucket: String,
    /// The full key of the job's `done.json`.
    pub done_key: String,
    /// The full key of the job's `state/<job>.json`, which only the tenant writes and a
    /// settled job's cleanup deletes. Absent in timers set before it was recorded, which check
    /// `done.json` alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_key: Option<String>,
}

/// The stale timer's kind.
#[derive(Debug, Clone, Copy)]
pub struct Stale;

impl Stale {
    /// The row's field.
    pub const FIELD: &'static str = "job";

    /// The condition for `guard`'s job.
    pub fn condition(guard: &JobGuard) -> Condition {
        Condition {
            kind: Self::FIELD,
            data: serde_json::to_value(guard).unwrap_or(Value::Null),
        }
    }
}

#[async_trait::async_trait]
impl Kind for Stale {
    fn field(&self) -> &'static str {
        Self::FIELD
    }

    async fn fire(&self, due: &Due<'_>, calls: &mut u32) -> Result<Verdict> {
        // A condition that does not read is void: nothing it watched can be found.
        let Ok(j) = JobGuard::deserialize(due.data) else {
            return Ok(Verdict::Void);
        };
        *calls += 1;
        if due.objects.head(&j.bucket, &j.done_key).await?.is_some() {
            return Ok(Verdict::Void);
        }
        // No done.json: still waiting, unless the job is gone. A job answered, settled and
        // cleaned up (`{ delete = job:keys() }`) has no done.json either, but no state; the
        // partner cannot write state/, so it cannot hide a waiting job this way.
        if let Some(state) = &j.state_key {
            *calls += 1;
            if due.objects.head(&j.bucket, state).await?.is_none() {
                return Ok(Verdict::Void);
            }
        }
        Ok(Verdict::Send)
    }
}
