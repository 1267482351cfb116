//! Sending a completed barrier's continuation: once when nothing fails, at least once when
//! something does, without anyone acking a member again.
//!
//! The completing call (the ack that resolves the last member, a cancel's included) makes these
//! calls:
//!
//! 1. the tenant's timer index row (see [`crate::timer`]), so that a tick looks for the guard;
//! 2. claim, in one transaction with its guard: create the `d` row with a lease of
//!    [`LEASE_MS`] and `sent: false` (or take over a row whose lease lapsed), and a *dispatch
//!    guard*, a timer row due [`GUARD_AFTER_LEASE_MS`] after the lease lapses, holding the
//!    continuation's message;
//! 3. send the continuation;
//! 4. mark the `d` row `sent: true`.
//!
//! A call that dies after the claim leaves the claim to lapse; a retried ack then takes it over.
//! For an ack that is never retried (a dead letter, a direct invocation that failed, a callback
//! URL's POST), the tick fires the guard ([`redispatch`]): `sent` or gone -> the guard is
//! deleted, nothing is sent; lease lapsed and not sent -> the tick claims, sends and marks as
//! the ack would have; lease held (a retried ack took over and set a guard of its own) -> the
//! guard is left for a later tick. Since the claim and the guard are written together, there is
//! no moment at which a claim stands without its guard. The guard is not deleted by the
//! completing call when it marks `sent`: that would be one more call on every completion's path,
//! while the tick's check of a sent barrier is two calls (read `d`, delete the guard) off it.
//!
//! Before the claim, the completing call checks that its invocation can afford every call up to
//! the mark, so running out of `max_data_ops` never strikes between the claim and the send.
//! The duplicate final acks of a completed barrier (redeliveries) write only the index row:
//! their transaction fails on the claim's condition, and one read of `d` says it was sent.

use serde_json::{json, Value};

use super::{pk, Barriers, Meta, LEASE_MS};
use crate::ports::WorkMessage;
use crate::ports::{now_ms, Item, KvStore, NewItem, PutMode, Queue, QueueKind, TxOp};
use crate::timer::Timers;
use crate::{Error, Result};

/// The guard timer is due this long after the claim's lease lapses.
pub const GUARD_AFTER_LEASE_MS: i64 = 1_000;

/// Calls from the claim to the mark: the timer index row, the claim with its guard (one
/// transaction), send, mark.
const CLAIM_CALLS: u32 = 4;

/// Where a `d` row stands at a moment.
#[derive(Debug, PartialEq)]
enum Claim {
    Sent,
    Held,
    Lapsed,
}

fn claim_of(d: &Item, now_ms: i64) -> Claim {
    let v: Value = serde_json::from_str(&d.value).unwrap_or_default();
    if v["sent"] == json!(true) {
        Claim::Sent
    } else if v["lease_until_ms"].as_i64().unwrap_or(0) > now_ms {
        Claim::Held
    } else {
        Claim::Lapsed
    }
}

fn claim_row(tenant: &str, id: &str, until_ms: i64, sent: bool, expires_at_s: i64) -> NewItem {
    NewItem {
        pk: pk(tenant, id),
        sk: "d".into(),
        value: json!({ "lease_until_ms": until_ms, "sent": sent }).to_string(),
        expires_at_s,
    }
}

/// Another call holds the dispatch claim until `lease_until_ms`: not the caller's fault, and a
/// retry after the lease (and its guard) lapsed succeeds.
fn busy(lease_until_ms: i64, now_ms: i64) -> Error {
    let left_ms = (lease_until_ms - now_ms).clamp(0, LEASE_MS) + GUARD_AFTER_LEASE_MS;
    Error::Held {
        what: "barrier completion is being dispatched by another call".into(),
        retry_after_s: ((left_ms + 999) / 1000) as u32,
    }
}

fn lease_of(d: &Item) -> i64 {
    serde_json::from_str::<Value>(&d.value).unwrap_or_default()["lease_until_ms"]
        .as_i64()
        .unwrap_or(0)
}

impl Barriers<'_> {
    /// Fails, recording the breach, unless the invocation can afford the calls from a claim
    /// to its mark.
    fn afford_claim(&self) -> Result<()> {
        if self.budget.left() < CLAIM_CALLS {
            self.budget.spend(CLAIM_CALLS)?;
        }
        Ok(())
    }

    /// The completing call: claims the dispatch and sets its guard in one transaction, sends
    /// the continuation, marks it sent (see the module docs). Returns whether this call sent it.
    pub(super) async fn complete(&self, id: &str, meta: &Meta, duplicate: bool) -> Result<bool> {
        let Some(script) = meta.continue_with.clone().filter(|_| self.queue_enabled) else {
            return Ok(false);
        };
        let now = now_ms();
        let claim =
            |sent: bool| claim_row(self.tenant, id, now + LEASE_MS, sent, meta.expires_at_s);
        let body = serde_json::to_string(&WorkMessage {
            tenant: self.tenant.to_string(),
            script: script.clone(),
            event: json!({ "barrier": id }),
            depth: self.budget.depth() + 1,
            width: self
                .budget
                .child_width(&format!("the continuation {script:?} of barrier {id:?}"))?,
            // The chain that created the barrier, whichever ack completes it.
            chain: meta.chain.clone().or_else(crate::observe::chain),
            // The barrier of this create: a message sent twice (a send whose answer was lost,
            // a dispatch a later call finished) continues it once.
            once: Some(format!(
                "barrier/{id}/{}",
                meta.generation
                    .clone()
                    .unwrap_or_else(|| meta.created_ms.to_string())
            )),
            slot: None,
        })
        .map_err(|e| Error::InvalidInput(e.to_string()))?;
        let timers = Timers {
            kv: self.kv,
            tenant: self.tenant,
            budget: self.budget,
        };
        // The claim and its guard, all or nothing: a claim never stands without the guard that
        // lets the tick finish it. The tenant's timer index row goes first, on its own.
        let (guard, index) = timers.in_transaction(
            now + LEASE_MS + GUARD_AFTER_LEASE_MS,
            &script,
            body.clone(),
            super::Dispatch::condition(id),
        )?;
        let claim_with_guard = |mode: PutMode| {
            vec![
                TxOp::Put {
                    item: claim(false),
                    mode,
                },
                guard.clone(),
            ]
        };
        self.afford_claim()?;
        self.budget.spend(1)?;
        self.kv.put(index, PutMode::Overwrite).await?;
        self.budget.spend(1)?;
        match self.kv.transact(claim_with_guard(PutMode::Create)).await? {
            Ok(()) => {}
            Err(0) => {
                let Some(d) = self.get(id, "d").await? else {
                    return Err(busy(now + LEASE_MS, now));
                };
                match claim_of(&d, now) {
                    Claim::Sent => return Ok(false),
                    // A repeated ack (the partner's second POST, a redelivery) is answered as
                    // the duplicate it is: the holder sends, or its guard does once its lease
                    // lapsed. Only a first ack that finds the claim taken is told to retry.
                    Claim::Held if duplicate => return Ok(false),
                    Claim::Held => return Err(busy(lease_of(&d), now)),
                    // Whoever held it died before marking the send.
                    Claim::Lapsed => {}
                }
                self.afford_claim()?;
                self.budget.spend(1)?;
                match self
                    .kv
                    .transact(claim_with_guard(PutMode::Update(d.version)))
                    .await?
                {
                    Ok(()) => {}
                    Err(0) => return Err(busy(now + LEASE_MS, now)),
                    Err(i) => return Err(guard_refused(i)),
                }
            }
            Err(i) => return Err(guard_refused(i)),
        }
        self.budget.spend(1)?;
        self.queue.send(QueueKind::Work, body, 0).await?;
        self.budget.spend(1)?;
        // Unconditional: a call that took over a lapsed lease meanwhile sends too (at least
        // once), and its own mark says the same.
        self.kv.put(claim(true), PutMode::Overwrite).await?;
        Ok(true)
    }
}

/// A guard timer's row that could not be created (its id, time and randomness, taken).
fn guard_refused(i: usize) -> Error {
    Error::Backend {
        backend: "kv",
        message: format!(
            "the dispatch guard's timer row (operation {i} of the claim) could not be written; retry"
        ),
        source: None,
    }
}

/// What the tick's look at a dispatch guard found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redispatch {
    /// The continuation was sent already, or the barrier is gone: the guard is spent.
    Done,
    /// Another call holds a live claim: leave the guard for a later tick.
    Held,
    /// The claim had lapsed unsent: this call sent the continuation and marked it.
    Sent,
}

/// The tick's half of a dispatch guard of barrier `id` of `tenant`: if the barrier's dispatch
/// claim lapsed without the continuation being sent, claims it at `now_ms`, sends `body` (the
/// continuation's work message, as the completing call built it) and marks it sent. One read
/// when it was sent; four calls when this call sends. `calls` counts them.
pub async fn redispatch(
    kv: &dyn KvStore,
    queue: &dyn Queue,
    tenant: &str,
    id: &str,
    body: &str,
    now_ms: i64,
    calls: &mut u32,
) -> Result<Redispatch> {
    *calls += 1;
    let Some(d) = kv.get(&pk(tenant, id), "d").await? else {
        // The barrier's rows expired (the guard was set after the claim, so the row existed).
        return Ok(Redispatch::Done);
    };
    match claim_of(&d, now_ms) {
        Claim::Sent => return Ok(Redispatch::Done),
        Claim::Held => return Ok(Redispatch::Held),
        Claim::Lapsed => {}
    }
    let claim = |sent: bool| claim_row(tenant, id, now_ms + LEASE_MS, sent, d.expires_at_s);
    *calls += 1;
    let version = match kv
        .put(claim(false), PutMode::Update(d.version.clone()))
        .await
    {
        Ok(v) => v,
        // A retried ack (or another tick) took it over since the read.
        Err(Error::Precondition { .. }) => return Ok(Redispatch::Held),
        Err(e) => return Err(e),
    };
    *calls += 1;
    queue.send(QueueKind::Work, body.to_string(), 0).await?;
    *calls += 1;
    match kv.put(claim(true), PutMode::Update(version)).await {
        Ok(_) | Err(Error::Precondition { .. }) => Ok(Redispatch::Sent),
        Err(e) => Err(e),
    }
}
