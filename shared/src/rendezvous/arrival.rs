//! An arrival's transaction, planned on the barrier's row as the store holds it when it
//! commits (see [`crate::ports::KvStore::transact_on`]): on the embedded backend, arrivals
//! racing for one barrier each count on the row the previous one left, so none loses a round;
//! elsewhere the plan is made on the row the arrival read, and a race lost is read again.

use std::sync::{Arc, Mutex};

use super::model::{BarrierRow, Participant};
use crate::ports::{Item, PutMode, TxOp, TxPlan};
use crate::Result;

/// The transaction an arrival planned: the barrier's row it was planned on (`row`, stored as
/// `item`) becomes `next`; `continues` when it trips a barrier with a continuation, whose
/// claim it takes.
pub(super) struct Write {
    pub row: BarrierRow,
    pub item: Item,
    pub next: BarrierRow,
    pub tripped: bool,
    pub continues: bool,
}

/// What an arrival's plan made of the row it was given.
pub(super) enum Planned {
    /// A transaction.
    Write(Box<Write>),
    /// The barrier is at another generation now: the arrival reads it again.
    Moved,
    /// The barrier is gone: deleted, created again, or inactive.
    Gone,
}

/// What an arrival's plan needs, all owned: it may run on the backend's writing thread.
pub(super) struct Plan {
    /// The partition of the barrier's arrivals and claims.
    pub parts_pk: String,
    /// The arrival's sort key there.
    pub part_sk: String,
    /// The incarnation of the barrier the caller found.
    pub incarnation: String,
    /// The generation the caller arrives at.
    pub generation: u64,
    /// Who arrives, with what.
    pub participant: Participant,
    /// The clock, in ms, when the arrival started.
    pub now_ms: i64,
    /// Whether the tenant has a queue for continuations.
    pub queue_enabled: bool,
}

impl Plan {
    /// The plan for [`crate::ports::KvStore::transact_on`], and where it leaves what it made
    /// of the row (once it ran).
    pub(super) fn into_plan(self) -> (TxPlan, Arc<Mutex<Option<Planned>>>) {
        let out = Arc::new(Mutex::new(None));
        let slot = out.clone();
        let plan: TxPlan = Box::new(move |item| {
            let (ops, planned) = self.plan(item)?;
            *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(planned);
            Ok(ops)
        });
        (plan, out)
    }

    fn plan(&self, item: Option<Item>) -> Result<(Vec<TxOp>, Planned)> {
        let Some(item) = item else {
            return Ok((Vec::new(), Planned::Gone));
        };
        let row: BarrierRow =
            serde_json::from_str(&item.value).map_err(|e| super::damaged("barrier", e))?;
        if row.incarnation != self.incarnation || row.barrier.inactive_at_ms() <= self.now_ms {
            return Ok((Vec::new(), Planned::Gone));
        }
        if row.barrier.generation != self.generation {
            return Ok((Vec::new(), Planned::Moved));
        }
        let b = &row.barrier;
        let mut next = row.clone();
        next.barrier.arrived_processes += 1;
        next.barrier.last_activity_at = self.participant.arrived_at;
        let tripped = next.barrier.arrived_processes >= next.barrier.expected_processes;
        if tripped {
            next.barrier.trip();
        }
        let mut ops = vec![
            TxOp::Put {
                item: super::side_item_at(
                    self.now_ms,
                    b,
                    &self.parts_pk,
                    self.part_sk.clone(),
                    serde_json::to_string(&self.participant).unwrap_or_default(),
                ),
                mode: PutMode::Create,
            },
            TxOp::Put {
                item: super::barrier_item(&item.pk, &next),
                mode: PutMode::Update(item.version.clone()),
            },
        ];
        let continues = tripped && b.continue_with.is_some() && self.queue_enabled;
        if continues {
            ops.push(TxOp::Put {
                item: super::claim_item_at(self.now_ms, b, &self.parts_pk, self.generation, false),
                mode: PutMode::Create,
            });
        }
        Ok((
            ops,
            Planned::Write(Box::new(Write {
                row,
                item,
                next,
                tripped,
                continues,
            })),
        ))
    }
}
