//! An arrival's transaction, planned on the barrier's row as the store holds it when it
//! commits (see [`crate::ports::KvStore::transact_on`]): on the embedded backend, arrivals
//! racing for one barrier each count on the row the previous one left, so none loses a round;
//! elsewhere the plan is made on the row the arrival read, and a race lost is read again.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::model::{BarrierRow, Participant};
use super::{
    barrier_not_found, check_name, contended, gen_key, model, Arrival, Found, Metadata, Rendezvous,
    MAX_ATTEMPTS,
};
use crate::budget::Budget;
use crate::ports::{Item, PutMode, TxOp, TxPlan};
use crate::{Error, Result};

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
                item: super::continuation::claim_item_at(
                    self.now_ms,
                    b,
                    &self.parts_pk,
                    self.generation,
                    false,
                ),
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

impl<B: Budget + ?Sized> Rendezvous<'_, B> {
    /// Records a process's arrival; see the module docs for the steps.
    pub async fn arrive(
        &self,
        ns: &str,
        name: &str,
        process_id: &str,
        expected_generation: u64,
        metadata: Metadata,
    ) -> Result<Arrival> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        check_name("process_id", process_id)?;
        model::check_positive("expected_generation", expected_generation)?;
        model::check_metadata(&metadata)?;
        for attempt in 0..MAX_ATTEMPTS {
            let found = self.need(ns, name).await?;
            let b = &found.row.barrier;
            let part_sk = format!("p#{}#{process_id}", gen_key(expected_generation));
            if expected_generation != b.generation {
                if expected_generation < b.generation {
                    self.budget.spend(1)?;
                    if self.kv.get(&found.parts_pk, &part_sk).await?.is_some() {
                        // A repeat after the trip: the promise of idempotency holds. Finish
                        // the trip's continuation, in case the call that tripped died.
                        self.continue_after(&found, expected_generation).await?;
                        return Ok(Arrival {
                            barrier: found.row.barrier,
                            all_arrived: true,
                        });
                    }
                }
                return Err(Error::Precondition {
                    what: format!(
                        "expected_generation {expected_generation} does not match the barrier's current generation {}",
                        b.generation
                    ),
                });
            }
            let now_ms = self.now_ms();
            let (plan, planned) = Plan {
                parts_pk: found.parts_pk.clone(),
                part_sk,
                incarnation: found.row.incarnation.clone(),
                generation: expected_generation,
                participant: Participant {
                    process_id: process_id.into(),
                    generation: b.generation,
                    arrived_at: now_ms.saturating_mul(1_000_000),
                    metadata: metadata.clone(),
                },
                now_ms,
                queue_enabled: self.queue_enabled,
            }
            .into_plan();
            self.budget.spend(1)?;
            let committed = self.kv.transact_on(found.seen.clone(), plan).await?;
            let planned = planned.lock().unwrap_or_else(|p| p.into_inner()).take();
            let (found, next, tripped, continues) = match planned {
                Some(Planned::Write(w)) => {
                    let Write {
                        row,
                        item,
                        next,
                        tripped,
                        continues,
                    } = *w;
                    let found = Found {
                        row,
                        seen: item,
                        pk: found.pk,
                        parts_pk: found.parts_pk,
                    };
                    (found, next, tripped, continues)
                }
                // Tripped without this arrival (or updated to another generation): read
                // again, which tells a repeat from an arrival too late.
                Some(Planned::Moved) => continue,
                Some(Planned::Gone) => return Err(barrier_not_found()),
                None => {
                    return Err(Error::Backend {
                        backend: "rendezvous",
                        message: "the store answered an arrival without planning it".into(),
                        source: None,
                    })
                }
            };
            match committed {
                Ok(()) => {
                    if tripped {
                        self.after_trip(ns, name, &found, &next, continues).await?;
                    }
                    return Ok(Arrival {
                        barrier: next.barrier,
                        all_arrived: tripped,
                    });
                }
                Err(0) => {
                    // Already arrived: a no-op that answers the barrier as it is now (one
                    // read: the namespace was read a moment ago).
                    let now = self.reread(&found).await?;
                    let all_arrived = now.row.barrier.generation > expected_generation;
                    if all_arrived {
                        self.continue_after(&now, expected_generation).await?;
                    }
                    return Ok(Arrival {
                        barrier: now.row.barrier,
                        all_arrived,
                    });
                }
                Err(_) => {
                    // Another arrival (or an update) got in first (on DynamoDB: the embedded
                    // backend plans on the row it commits on): read again at once the first
                    // time (two peers that met), then after a random pause whose window
                    // doubles from 2 ms to 64 ms. Peers that read one version together all
                    // lose but one: spread out, most of them read the next version before they
                    // write.
                    if attempt > 0 {
                        let us = rand::random::<u64>() % (1000 << attempt.min(6));
                        tokio::time::sleep(Duration::from_micros(us)).await;
                    }
                }
            }
        }
        Err(contended())
    }
}
