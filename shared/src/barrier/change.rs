//! Changing a barrier after create: `add` members while it is not complete, `cancel` it, and
//! what its continuation or overdue script reads of that (pending members, the cancel reason).
//!
//! | sort key | what | written by |
//! | --- | --- | --- |
//! | `a#<member>` | a member added after create (counts into the total) | add |
//! | `x` | the cancel and its reason; add is refused once it is there | cancel |
//!
//! An add is one transaction per 7 members: some pending row must still be there (then the
//! barrier is not complete, and the ack that deletes that row sees the new ones), `x` must be
//! absent, and per member its outcome must be absent while its pending and added rows are
//! created. So an add either lands before the last ack's query (which then sees it pending) or
//! fails because nothing is pending: never a continuation with members pending. A member already
//! in the barrier, pending or resolved, fails its own conditions and is left out: adding is
//! idempotent per member.
//!
//! A cancel writes `x`, then acks every pending member as failed with the reason through
//! [`Barriers::ack`], so the continuation is sent by whichever ack resolves the last member:
//! exactly once, whether that is the cancel or a racing ack.

use serde_json::json;

use super::{pk, Barriers, Meta, Outcome};
use crate::ports::{now_ms, TxOp};
use crate::{Error, Result};

/// Members per add transaction: three operations each, and two for the whole.
const ADD_CHUNK: usize = 7;
/// The longest cancel reason.
pub const MAX_REASON_BYTES: usize = 1024;

impl Barriers<'_> {
    /// Adds members to a barrier that is not complete (nor cancelled). Returns how many were
    /// new. Members already in the barrier are left out.
    pub async fn add(&self, id: &str, members: &[String]) -> Result<u64> {
        super::check_id(id)?;
        super::CreateSpec {
            members: members.to_vec(),
            ..Default::default()
        }
        .validate()
        .map_err(|e| Error::InvalidInput(e.to_string().replace("barrier.create", "barrier.add")))?;
        let Some(meta) = self.meta(id).await? else {
            return Err(self.why_not_ackable(id, false).await);
        };
        let now_s = now_ms() / 1000;
        if meta.expires_at_s <= now_s + super::ACK_MARGIN_S {
            return Err(super::expired());
        }
        if meta.shards.is_some() {
            return self.shard_add(id, &meta, members).await;
        }
        let mut added = 0;
        for chunk in members.chunks(ADD_CHUNK) {
            let mut left: Vec<&String> = chunk.iter().collect();
            // Each failed condition drops one member (or ends the add): bounded.
            while !left.is_empty() {
                let Some(pending) = self.first_pending(id, &meta).await? else {
                    return Err(Error::InvalidInput(format!(
                        "barrier {id:?} is complete: its continuation has run or is running; add members before the last ack, or create another barrier"
                    )));
                };
                // The row checked is that member's pending row: it is in the barrier already.
                // (DynamoDB takes one operation per item in a transaction.)
                let prefix = meta.pending_prefix();
                left.retain(|m| pending.strip_prefix(prefix.as_str()) != Some(m.as_str()));
                if left.is_empty() {
                    break;
                }
                let ops = self.add_ops(id, &meta, &pending, &left, now_s);
                self.budget.spend(1)?;
                match self.kv.transact(ops).await? {
                    Ok(()) => {
                        added += left.len() as u64;
                        break;
                    }
                    // The pending row was acked meanwhile: look again.
                    Err(0) => continue,
                    Err(1) => {
                        return Err(Error::InvalidInput(format!(
                            "barrier {id:?} is cancelled; members cannot be added"
                        )))
                    }
                    Err(i) => {
                        left.remove((i - 2) / 3);
                    }
                }
            }
        }
        Ok(added)
    }

    fn add_ops(
        &self,
        id: &str,
        meta: &Meta,
        pending_sk: &str,
        members: &[&String],
        now_s: i64,
    ) -> Vec<TxOp> {
        let pk = pk(self.tenant, id);
        let mut ops = vec![
            TxOp::Check {
                pk: pk.clone(),
                sk: pending_sk.to_string(),
                live_until_s: now_s,
            },
            TxOp::Absent {
                pk: pk.clone(),
                sk: "x".into(),
            },
        ];
        for m in members {
            ops.push(TxOp::Absent {
                pk: pk.clone(),
                sk: format!("o#{m}"),
            });
            ops.push(TxOp::Put {
                item: self.row(
                    id,
                    &format!("{}{m}", meta.pending_prefix()),
                    "1".into(),
                    meta.expires_at_s,
                ),
                mode: crate::ports::PutMode::Create,
            });
            ops.push(TxOp::Put {
                item: self.row(id, &format!("a#{m}"), "1".into(), meta.expires_at_s),
                mode: crate::ports::PutMode::Create,
            });
        }
        ops
    }

    async fn first_pending(&self, id: &str, meta: &Meta) -> Result<Option<String>> {
        self.budget.spend(1)?;
        let page = self
            .kv
            .query(&pk(self.tenant, id), &meta.pending_prefix(), None, 1)
            .await?;
        Ok(page.items.into_iter().next().map(|it| it.sk))
    }

    /// Cancels a barrier: every pending member is resolved as failed with `reason`, and the
    /// continuation runs once, seeing `cancelled`. Returns how many members this call
    /// resolved; cancelling again, or a complete barrier, resolves none.
    pub async fn cancel(&self, id: &str, reason: &str) -> Result<u64> {
        super::check_id(id)?;
        if reason.len() > MAX_REASON_BYTES {
            return Err(Error::InvalidInput(format!(
                "barrier.cancel: the reason is {} bytes; at most {MAX_REASON_BYTES}",
                reason.len()
            )));
        }
        let Some(meta) = self.meta(id).await? else {
            return Err(self.why_not_ackable(id, false).await);
        };
        self.budget.spend(1)?;
        let marker = self.row(
            id,
            "x",
            json!({ "reason": reason }).to_string(),
            meta.expires_at_s,
        );
        match self.kv.put(marker, crate::ports::PutMode::Create).await {
            // The first cancel's reason stays; a second cancel finishes what a first left.
            Ok(_) | Err(Error::AlreadyExists { .. }) => {}
            Err(e) => return Err(e),
        }
        if meta.shards.is_some() {
            // No member can be added from here on.
            self.shard_close(id, &meta, reason).await?;
        }
        let reason = self
            .cancelled(id)
            .await?
            .unwrap_or_else(|| reason.to_string());
        let mut resolved = 0;
        let mut unresolved: Option<Vec<String>> = None;
        loop {
            let (names, _) = self.pending(id, &meta, None).await?;
            if names.is_empty() {
                return Ok(resolved);
            }
            let mut this_pass = 0;
            for m in &names {
                let r = self
                    .ack(
                        id,
                        m,
                        Outcome {
                            ok: false,
                            error: Some(format!("cancelled: {reason}")),
                            result: None,
                        },
                    )
                    .await?;
                if !r.duplicate {
                    this_pass += 1;
                }
            }
            // Only duplicates (racing acks resolved them) twice over the same names: pending
            // rows of resolved members. Never loop on them.
            if this_pass == 0 && unresolved.replace(names.clone()).as_ref() == Some(&names) {
                return Err(Error::Backend {
                    backend: "barrier",
                    message: format!("barrier {id:?}: pending rows of resolved members"),
                    source: None,
                });
            }
            resolved += this_pass;
        }
    }

    /// The cancel reason, if the barrier was cancelled.
    pub async fn cancelled(&self, id: &str) -> Result<Option<String>> {
        Ok(self.get(id, "x").await?.map(|it| {
            serde_json::from_str::<serde_json::Value>(&it.value)
                .ok()
                .and_then(|v| v["reason"].as_str().map(str::to_string))
                .unwrap_or_default()
        }))
    }

    /// Members added after create (of a barrier with member rows, before shards).
    pub async fn added(&self, id: &str) -> Result<u64> {
        self.count(id, "a#").await
    }

    /// A page of pending member names after `after`.
    pub async fn pending(
        &self,
        id: &str,
        meta: &Meta,
        after: Option<&str>,
    ) -> Result<(Vec<String>, Option<String>)> {
        if meta.shards.is_some() {
            let (names, next) = self.shard_page(id, meta, after, 100, str::is_empty).await?;
            return Ok((names.into_iter().map(|(m, _)| m).collect(), next));
        }
        let prefix = meta.pending_prefix();
        let after = after.map(|m| format!("{prefix}{m}"));
        self.budget.spend(1)?;
        let page = self
            .kv
            .query(&pk(self.tenant, id), &prefix, after.as_deref(), 100)
            .await?;
        let names = page
            .items
            .into_iter()
            .map(|it| it.sk[prefix.len()..].to_string())
            .collect();
        Ok((names, page.next.map(|sk| sk[prefix.len()..].to_string())))
    }
}
