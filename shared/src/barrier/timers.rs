//! The barrier's two kinds of conditioned timer, registered with the tick by the runtime:
//!
//! - **overdue** (`"barrier"` on the row): `on_overdue`'s message, sent only if the barrier of
//!   the create call that set it (its generation) still has pending members;
//! - **dispatch guard** (`"dispatch"`): the continuation, re-sent only if the completing call's
//!   dispatch claim lapsed unsent (see `dispatch`). Not claimed by the tick: the barrier's own
//!   claim row decides who sends.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::timer::{Condition, Due, Kind, Verdict};
use crate::Result;

/// The condition of a barrier's overdue timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverdueGuard {
    /// The barrier id.
    pub id: String,
    /// The generation of the create call that set the timer: another create's timer is void.
    pub generation: String,
}

/// The condition of a barrier's dispatch guard: the barrier whose continuation it repairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchGuard {
    /// The barrier id.
    pub id: String,
}

/// The overdue timer's kind.
#[derive(Debug, Clone, Copy)]
pub struct Overdue;

/// The dispatch guard's kind.
#[derive(Debug, Clone, Copy)]
pub struct Dispatch;

impl Overdue {
    /// The row's field.
    pub const FIELD: &'static str = "barrier";

    /// The condition for barrier `id` created by `generation`.
    pub fn condition(id: &str, generation: &str) -> Condition {
        condition(
            Self::FIELD,
            &OverdueGuard {
                id: id.to_string(),
                generation: generation.to_string(),
            },
        )
    }
}

impl Dispatch {
    /// The row's field.
    pub const FIELD: &'static str = "dispatch";

    /// The condition for the continuation of barrier `id`.
    pub fn condition(id: &str) -> Condition {
        condition(Self::FIELD, &DispatchGuard { id: id.to_string() })
    }
}

fn condition(kind: &'static str, data: &impl Serialize) -> Condition {
    Condition {
        kind,
        data: serde_json::to_value(data).unwrap_or(Value::Null),
    }
}

#[async_trait::async_trait]
impl Kind for Overdue {
    fn field(&self) -> &'static str {
        Self::FIELD
    }

    async fn fire(&self, due: &Due<'_>, calls: &mut u32) -> Result<Verdict> {
        // A condition that does not read is void: nothing it watched can be found.
        let Ok(g) = OverdueGuard::deserialize(due.data) else {
            return Ok(Verdict::Void);
        };
        *calls += 2;
        Ok(
            if super::overdue_pending(due.kv, due.tenant, &g.id, &g.generation).await? {
                Verdict::Send
            } else {
                Verdict::Void
            },
        )
    }
}

#[async_trait::async_trait]
impl Kind for Dispatch {
    fn field(&self) -> &'static str {
        Self::FIELD
    }

    fn claimed(&self) -> bool {
        false
    }

    async fn fire(&self, due: &Due<'_>, calls: &mut u32) -> Result<Verdict> {
        let Ok(g) = DispatchGuard::deserialize(due.data) else {
            return Ok(Verdict::Void);
        };
        let found = super::redispatch(
            due.kv, due.queue, due.tenant, &g.id, due.body, due.now_ms, calls,
        )
        .await?;
        Ok(match found {
            super::Redispatch::Held => Verdict::Held,
            super::Redispatch::Done => Verdict::Void,
            super::Redispatch::Sent => Verdict::Sent,
        })
    }
}
