//! ArriveAtBarrier: one participant row and one commutative count per arrival, the JSON of
//! the barrier rewritten only by the arrival that completes the count (see the module docs).

use std::time::Duration;

use super::model::{self, Participant};
use super::{
    check_name, contended, expiry_s, gen_key, side_item_at, Arrival, Metadata, Rendezvous, ACTIVE,
    ARRIVED, MAX_ATTEMPTS,
};
use crate::budget::Budget;
use crate::ports::{Cmp, Count, PutMode, TxOp};
use crate::{Error, Result};

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
            let now_ns = now_ms.saturating_mul(1_000_000);
            let participant = Participant {
                process_id: process_id.into(),
                generation: b.generation,
                arrived_at: now_ns,
                metadata: metadata.clone(),
            };
            let mut next = found.row.clone();
            next.barrier.arrived_processes += 1;
            next.barrier.last_activity_at = now_ns;
            let tripped = next.barrier.arrived_processes >= next.barrier.expected_processes;
            // The count this arrival adds to: the arrivals counted beside the JSON as read.
            let counted = found.count(ARRIVED);
            // How many of them there may be before this one for the count to stay below
            // expected_processes (or, tripping, must be: one short of it).
            let short = i64::try_from(next.barrier.expected_processes)
                .unwrap_or(i64::MAX)
                .saturating_sub(1)
                .saturating_sub(i64::try_from(b.arrived_processes).unwrap_or(i64::MAX) - counted);
            let mut ops = vec![TxOp::Put {
                item: side_item_at(
                    now_ms,
                    b,
                    &found.parts_pk,
                    part_sk,
                    serde_json::to_string(&participant).unwrap_or_default(),
                ),
                mode: PutMode::Create,
            }];
            let continues = if tripped {
                next.barrier.trip();
                let mut rewrite = found.rewrite(&next, short);
                rewrite.set.push((ACTIVE.into(), now_ns));
                ops.push(TxOp::Count(rewrite));
                self.claim_continuation(&found, &mut ops)
            } else {
                ops.push(TxOp::Count(Count {
                    pk: found.pk.clone(),
                    sk: format!("b#{name}"),
                    when: found.unchanged(Cmp::Lt, short),
                    add: vec![(ARRIVED.into(), 1)],
                    set: vec![(ACTIVE.into(), now_ns)],
                    value: None,
                    expires_at_s: Some(expiry_s(&next.barrier)),
                }));
                false
            };
            self.budget.spend(1)?;
            let committed = self.kv.transact(ops).await?;
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
                    // The count reached its last place (this arrival trips, read again to
                    // see it), or a trip or an update got in first: read again at once the
                    // first time, then after a random pause whose window doubles from 2 ms to
                    // 64 ms.
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
