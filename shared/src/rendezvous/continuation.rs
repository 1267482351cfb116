//! A trip's continuation: the claim taken in the transaction that trips a generation, the
//! message sent under it, and the take-over by a repeated arrival when the call that tripped
//! died before marking it sent.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::{
    busy, damaged, gen_key, notify, side_item_at, Barrier, BarrierRow, Found, Rendezvous, LEASE_MS,
};
use crate::budget::Budget;
use crate::ports::{Item, NewItem, PutMode, QueueKind, TxOp, WorkMessage};
use crate::{Error, Result};

/// The claim on a trip's continuation.
#[derive(Debug, Serialize, Deserialize)]
struct Claim {
    lease_until_ms: i64,
    sent: bool,
}

/// The claim on the continuation of `generation`, taken at `now_ms` for [`LEASE_MS`].
pub(super) fn claim_item_at(
    now_ms: i64,
    b: &Barrier,
    parts_pk: &str,
    generation: u64,
    sent: bool,
) -> NewItem {
    let claim = Claim {
        lease_until_ms: now_ms + LEASE_MS,
        sent,
    };
    side_item_at(
        now_ms,
        b,
        parts_pk,
        format!("c#{}", gen_key(generation)),
        serde_json::to_string(&claim).unwrap_or_default(),
    )
}

impl<B: Budget + ?Sized> Rendezvous<'_, B> {
    pub(super) fn claim_item(
        &self,
        b: &Barrier,
        parts_pk: &str,
        generation: u64,
        sent: bool,
    ) -> NewItem {
        claim_item_at(self.now_ms(), b, parts_pk, generation, sent)
    }

    pub(super) fn continues(&self, b: &Barrier) -> bool {
        b.continue_with.is_some() && self.queue_enabled
    }

    /// For a transaction that trips `found`'s current generation: adds the claim on its
    /// continuation to `ops` when the barrier continues, so that the trip and the claim commit
    /// together. Whether it did.
    pub(super) fn claim_continuation(&self, found: &Found, ops: &mut Vec<TxOp>) -> bool {
        let b = &found.row.barrier;
        if !self.continues(b) {
            return false;
        }
        ops.push(TxOp::Put {
            item: self.claim_item(b, &found.parts_pk, b.generation, false),
            mode: PutMode::Create,
        });
        true
    }

    /// After the transaction that tripped `found`'s generation into `next` committed: wakes
    /// this process's waiters, and sends the continuation under the claim it took
    /// (`continues`, from [`Self::claim_continuation`]).
    pub(super) async fn after_trip(
        &self,
        ns: &str,
        name: &str,
        found: &Found,
        next: &BarrierRow,
        continues: bool,
    ) -> Result<()> {
        let tripped = Some((next.incarnation.as_str(), &next.barrier));
        super::waiting::note(self.kv, self.tenant, ns, name, tripped);
        notify::wake(self.tenant, ns, name, tripped);
        if continues {
            self.send_continuation(found, found.row.barrier.generation)
                .await?;
        }
        Ok(())
    }

    /// Sends the continuation of `generation` under the claim this call holds, and marks it
    /// sent.
    pub(super) async fn send_continuation(&self, found: &Found, generation: u64) -> Result<()> {
        let b = &found.row.barrier;
        let Some(script) = b.continue_with.clone() else {
            return Ok(());
        };
        // The namespace is the second part of the partition key (`r#<tenant>#<ns>#...`).
        let ns = found.pk.split('#').nth(2).unwrap_or_default().to_string();
        let width = self.budget.child_width(&format!(
            "the continuation {script:?} of rendezvous barrier {:?}",
            b.name
        ))?;
        let body = serde_json::to_string(&WorkMessage {
            tenant: self.tenant.to_string(),
            script,
            event: json!({ "rendezvous": { "namespace": ns, "name": b.name, "generation": generation } }),
            depth: self.budget.depth() + 1,
            width,
            chain: found.row.chain.clone().or_else(crate::observe::chain),
            // This incarnation's generation: a message sent twice continues it once.
            once: Some(format!("rendezvous/{}/{generation}", found.parts_pk)),
            slot: None,
        })
        .map_err(|e| Error::InvalidInput(e.to_string()))?;
        self.budget.spend(1)?;
        self.queue.send(QueueKind::Work, body, 0).await?;
        self.budget.spend(1)?;
        self.kv
            .put(
                self.claim_item(b, &found.parts_pk, generation, true),
                PutMode::Overwrite,
            )
            .await?;
        Ok(())
    }

    /// After a repeated arrival at a tripped generation: sends its continuation if the call
    /// that tripped it died before marking it sent and its lease has lapsed.
    pub(super) async fn continue_after(&self, found: &Found, generation: u64) -> Result<()> {
        if !self.continues(&found.row.barrier) {
            return Ok(());
        }
        let sk = format!("c#{}", gen_key(generation));
        self.budget.spend(1)?;
        let Some(item) = self.kv.get(&found.parts_pk, &sk).await? else {
            return Ok(());
        };
        let claim: Claim = serde_json::from_str(&item.value).map_err(|e| damaged("claim", e))?;
        if claim.sent {
            return Ok(());
        }
        if claim.lease_until_ms > self.now_ms() {
            return Err(busy(generation));
        }
        self.take_over(found, generation, &item).await
    }

    pub(super) async fn take_over(
        &self,
        found: &Found,
        generation: u64,
        item: &Item,
    ) -> Result<()> {
        self.budget.spend(1)?;
        match self
            .kv
            .put(
                self.claim_item(&found.row.barrier, &found.parts_pk, generation, false),
                PutMode::Update(item.version.clone()),
            )
            .await
        {
            Ok(_) => self.send_continuation(found, generation).await,
            Err(Error::Precondition { .. }) => Err(busy(generation)),
            Err(e) => Err(e),
        }
    }
}
