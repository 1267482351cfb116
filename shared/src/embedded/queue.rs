//! The two queues of the embedded backend, with SQS's semantics: delay, visibility timeout,
//! receive count, and a dead-letter place after [`MAX_RECEIVES`] receives.
//!
//! A send is durable before it returns: it may acknowledge work to a caller. A receive's lease
//! and a delete are best-effort ([`durability::best_effort`]): committed at once, synced with
//! the next synced commit. Losing one in a power cut delivers a message once more, which
//! at-least-once delivery allows (a lost lease also does not count that receive), and nothing
//! acknowledged is lost: a handled message is deleted after its run's writes were synced, so
//! the WAL never holds the delete without them. Synced, each cost a disk sync per message, and
//! a drain handled 3 700 messages a second instead of 24 000.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::{db_err, token, Embedded};
use crate::ports::{
    durability, now_ms, DeadLetter, Keep, Message, Queue, QueueKind, QueueStats, MAX_DELAY_S,
    MAX_RECEIVES,
};
use crate::{Error, Result};

impl Embedded {
    /// The id of the last message sent to either queue, 0 before the first. Ids only grow
    /// (SQLite's AUTOINCREMENT never reuses one), so a message with a larger id was sent after
    /// this call: the CLI tells the messages a verb caused from older ones by it.
    pub fn last_message_id(&self) -> Result<i64> {
        self.read(|c| {
            super::query_row(
                c,
                "SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'messages'), 0)",
                [],
                |r| r.get(0),
            )
            .map_err(db_err)
        })
    }

    /// The owners other than this backend that hold messages and are dead, found at most
    /// once a second per live owner: their messages become visible now.
    fn dead_holders(&self, conn: &rusqlite::Connection) -> Result<Vec<String>> {
        let now = now_ms();
        let mut alive = self.inner.alive.lock().unwrap_or_else(|p| p.into_inner());
        let mut dead = Vec::new();
        for h in super::doctor::holders(conn, &self.inner.owner.id)? {
            if alive.get(&h).is_some_and(|at| now - at < 1000) {
                continue;
            }
            if super::owners::alive(&self.inner.root, &h) {
                alive.insert(h, now);
            } else {
                alive.remove(&h);
                dead.push(h);
            }
        }
        Ok(dead)
    }

    pub(super) fn enqueue(
        tx: &rusqlite::Connection,
        queue: QueueKind,
        body: &str,
        delay_s: u32,
    ) -> Result<()> {
        let now = now_ms();
        let group = crate::ports::fair::group_of(queue, body).unwrap_or_default();
        super::execute(
            tx,
            "INSERT INTO messages (queue, body, visible_at, sent_ms, grp) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![queue.name(), body, now + i64::from(delay_s) * 1000, now, group],
        )
        .map_err(db_err)?;
        Ok(())
    }

    /// Up to `max` due messages of `queue`, the fair-queue groups taken in turn
    /// ([`crate::ports::fair`]): the groups after the one served last, then round from the
    /// first, one message of each group at a time, so that a group with a backlog of any size
    /// delays another group's message by one receive at most. Returns up to twice `max` as
    /// (group, id, body, receive count), in the order to take them.
    #[allow(clippy::type_complexity)]
    fn due_in_turn(
        tx: &rusqlite::Connection,
        queue: QueueKind,
        max: usize,
        now: i64,
        after: &str,
    ) -> Result<Vec<(String, i64, String, u32)>> {
        let mut due = tx
            .prepare_cached(
                "SELECT id, body, receive_count FROM messages
                 WHERE queue = ?1 AND grp = ?2 AND dead = 0 AND visible_at <= ?3
                 ORDER BY visible_at, id LIMIT ?4",
            )
            .map_err(db_err)?;
        let mut lists: Vec<(String, std::collections::VecDeque<(i64, String, u32)>)> = Vec::new();
        // The groups after `after`, then from the first up to `after` itself.
        let mut at: Option<String> = Some(after.to_string());
        let mut wrapped = false;
        while lists.len() < max {
            let g = group_after(tx, queue, at.as_deref())?;
            let g = match g {
                Some(g) if wrapped && g.as_str() > after => break,
                Some(g) => g,
                None if wrapped => break,
                None => {
                    wrapped = true;
                    at = None;
                    continue;
                }
            };
            let rows = due
                .query_map(params![queue.name(), g, now, max as i64 * 2], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, u32>(2)?,
                    ))
                })
                .map_err(db_err)?
                .collect::<Result<std::collections::VecDeque<_>, _>>()
                .map_err(db_err)?;
            if !rows.is_empty() {
                lists.push((g.clone(), rows));
            }
            if wrapped && g == after {
                break;
            }
            at = Some(g);
        }
        // One of each group in turn (twice `max`, for the dead ones the caller skips).
        let mut out = Vec::new();
        'turns: while lists.iter().any(|(_, l)| !l.is_empty()) {
            for (g, l) in &mut lists {
                if let Some((id, body, count)) = l.pop_front() {
                    out.push((g.clone(), id, body, count));
                    if out.len() == max * 2 {
                        break 'turns;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The message id a receipt (`<id>:<token>`, made by `receive`) starts with. Deletes and
/// retries find the row by it, through the primary key: matching on the receipt alone read
/// every message of the backlog for each one handled.
fn id_of(receipt: &str) -> Result<i64> {
    receipt
        .split_once(':')
        .and_then(|(id, _)| id.parse().ok())
        .ok_or_else(|| bad_receipt(receipt))
}

fn bad_receipt(receipt: &str) -> Error {
    Error::Precondition {
        what: format!(
            "receipt {receipt:?} is no longer valid (the message was received again or deleted)"
        ),
    }
}

/// Deletes the message `id` if `receipt` still holds it. The outer error is SQLite's (it fails
/// the transaction); the inner one, a stale receipt, fails this delete alone.
fn delete_one(tx: &rusqlite::Connection, id: i64, receipt: &str) -> Result<Result<()>> {
    let n = super::execute(
        tx,
        "DELETE FROM messages WHERE id = ?1 AND receipt = ?2 AND dead = 0",
        params![id, receipt],
    )
    .map_err(db_err)?;
    if n == 0 {
        return Ok(Err(bad_receipt(receipt)));
    }
    super::execute(tx, "DELETE FROM attempts WHERE message_id = ?1", [id]).map_err(db_err)?;
    Ok(Ok(()))
}

/// Whether `queue` has a message due at `now`: through its groups in the fair-queue index, a
/// seek for each group until one has a message due (no index of its own: see the schema). A
/// group is a tenant, or a tenant's folder of a bucket, so there are as many seeks at most,
/// when nothing is due; with a backlog the first group usually answers.
fn any_due(c: &rusqlite::Connection, queue: QueueKind, now: i64) -> Result<bool> {
    let mut due = c
        .prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM messages
             WHERE queue = ?1 AND grp = ?2 AND dead = 0 AND visible_at <= ?3)",
        )
        .map_err(db_err)?;
    let mut group = group_after(c, queue, None)?;
    while let Some(g) = group {
        if due
            .query_row(params![queue.name(), g, now], |r| r.get::<_, bool>(0))
            .map_err(db_err)?
        {
            return Ok(true);
        }
        group = group_after(c, queue, Some(&g))?;
    }
    Ok(false)
}

/// The first group of `queue` after `after` (from the first with `None`), in the fair-queue
/// index's order.
fn group_after(
    c: &rusqlite::Connection,
    queue: QueueKind,
    after: Option<&str>,
) -> Result<Option<String>> {
    match after {
        Some(a) => super::query_row(
            c,
            "SELECT grp FROM messages WHERE queue = ?1 AND grp > ?2 ORDER BY grp LIMIT 1",
            params![queue.name(), a],
            |r| r.get(0),
        ),
        None => super::query_row(
            c,
            "SELECT grp FROM messages WHERE queue = ?1 ORDER BY grp LIMIT 1",
            params![queue.name()],
            |r| r.get(0),
        ),
    }
    .optional()
    .map_err(db_err)
}

#[async_trait]
impl Queue for Embedded {
    async fn send(&self, queue: QueueKind, body: String, delay_s: u32) -> Result<()> {
        if delay_s > MAX_DELAY_S {
            return Err(Error::InvalidInput(format!(
                "delay of {delay_s} s is above the maximum of {MAX_DELAY_S} s"
            )));
        }
        self.write(move |tx| Self::enqueue(tx, queue, &body, delay_s))
            .await
    }

    async fn receive(
        &self,
        queue: QueueKind,
        max: usize,
        visibility_s: u32,
    ) -> Result<Vec<Message>> {
        let max = max.clamp(1, 10);
        let turn = usize::from(queue == QueueKind::Work);
        let served = self.inner.served.clone();
        // Whose messages to take back first: a receive is when a live process looks.
        let dead = self.read(|c| self.dead_holders(c))?;
        // Nothing due and nothing to take back: answered from a reading connection, without a
        // transaction on the writer (a drain asks both queues every pass; one is often empty).
        if dead.is_empty() && !self.read(|c| any_due(c, queue, now_ms()))? {
            return Ok(Vec::new());
        }
        let root = self.inner.root.clone();
        let me = self.inner.owner.id.clone();
        // Best-effort (the module's docs).
        durability::best_effort(self.write(move |tx| {
            for d in &dead {
                super::doctor::reclaim(tx, d)?;
                super::owners::forget(&root, d);
            }
            let now = now_ms();
            let mut out = Vec::new();
            // Nothing due (any more): answer without walking the groups.
            if !any_due(tx, queue, now)? {
                return Ok(out);
            }
            let mut served = served.lock().unwrap_or_else(|p| p.into_inner());
            let due = Self::due_in_turn(tx, queue, max, now, &served[turn])?;
            for (group, id, body, count) in due {
                if out.len() == max {
                    break;
                }
                served[turn] = group;
                if count >= MAX_RECEIVES {
                    super::execute(
                        tx,
                        "UPDATE messages SET dead = 1, owner = NULL WHERE id = ?1",
                        [id],
                    )
                    .map_err(db_err)?;
                    continue;
                }
                let receipt = format!("{id}:{}", token());
                super::execute(
                    tx,
                    "UPDATE messages SET receive_count = receive_count + 1, receipt = ?2, visible_at = ?3, owner = ?4 WHERE id = ?1",
                    params![id, receipt, now + i64::from(visibility_s) * 1000, me],
                )
                .map_err(db_err)?;
                out.push(Message { id: id.to_string(), receipt, body, receive_count: count + 1 });
            }
            if !out.is_empty() {
                super::doctor::hold(tx, &me)?;
            }
            Ok(out)
        }))
        .await
    }

    async fn delete(&self, _queue: QueueKind, receipt: &str) -> Result<()> {
        let id = id_of(receipt)?;
        let receipt = receipt.to_string();
        // Best-effort (the module's docs).
        durability::best_effort(self.write(move |tx| delete_one(tx, id, &receipt)?)).await
    }

    /// One best-effort write for all of them: a drain pass's deletes share one commit.
    async fn delete_many(&self, _queue: QueueKind, receipts: &[String]) -> Vec<Result<()>> {
        let ids: Vec<Result<i64>> = receipts.iter().map(|r| id_of(r)).collect();
        let owned: Vec<String> = receipts.to_vec();
        let n = receipts.len();
        let done = durability::best_effort(self.write(move |tx| {
            let mut out = Vec::with_capacity(ids.len());
            for (id, receipt) in ids.into_iter().zip(&owned) {
                out.push(match id {
                    Ok(id) => delete_one(tx, id, receipt)?,
                    Err(e) => Err(e),
                });
            }
            Ok(out)
        }))
        .await;
        match done {
            Ok(each) => each,
            // The commit failed: none of them was deleted.
            Err(e) => (0..n).map(|_| Err(e.again())).collect(),
        }
    }

    async fn retry_later(
        &self,
        _queue: QueueKind,
        receipt: &str,
        delay_s: u32,
        error: &str,
    ) -> Result<()> {
        let id = id_of(receipt)?;
        let (receipt, error) = (receipt.to_string(), error.to_string());
        // No longer held: it waits for its retry, which any process may make.
        self.write(move |tx| {
            let n = super::execute(
                tx,
                "UPDATE messages SET visible_at = ?3, last_error = ?4, owner = NULL WHERE id = ?1 AND receipt = ?2 AND dead = 0",
                params![id, receipt, now_ms() + i64::from(delay_s) * 1000, error],
            )
            .map_err(db_err)?;
            if n == 0 {
                return Err(bad_receipt(&receipt));
            }
            // Each attempt's error, for `native dlq` (the message keeps only the last).
            Self::record_attempt(tx, id, &error)?;
            Ok(())
        })
        .await
    }

    async fn hold(&self, _queue: QueueKind, receipt: &str, visibility_s: u32) -> Result<()> {
        let id = id_of(receipt)?;
        let receipt = receipt.to_string();
        self.write(move |tx| {
            let n = if visibility_s == 0 {
                // Given back unhandled: this receive does not count toward the dead letters.
                super::execute(
                    tx,
                    "UPDATE messages SET visible_at = ?3, owner = NULL, receipt = NULL,
                     receive_count = max(receive_count - 1, 0)
                     WHERE id = ?1 AND receipt = ?2 AND dead = 0",
                    params![id, receipt, now_ms()],
                )
            } else {
                super::execute(
                    tx,
                    "UPDATE messages SET visible_at = ?3 WHERE id = ?1 AND receipt = ?2 AND dead = 0",
                    params![id, receipt, now_ms() + i64::from(visibility_s) * 1000],
                )
            }
            .map_err(db_err)?;
            if n == 0 {
                return Err(bad_receipt(&receipt));
            }
            Ok(())
        })
        .await
    }

    async fn dead_letter_now(&self, queue: QueueKind, body: &str, error: &str) -> Result<()> {
        let now = now_ms();
        let group = crate::ports::fair::group_of(queue, body).unwrap_or_default();
        let (body, error) = (body.to_string(), error.to_string());
        self.write(move |tx| {
            super::execute(
                tx,
                "INSERT INTO messages (queue, body, visible_at, sent_ms, receive_count, dead, last_error, grp)
                 VALUES (?1, ?2, ?3, ?3, 1, 1, ?4, ?5)",
                params![queue.name(), body, now, error, group],
            )
            .map_err(db_err)?;
            Ok(())
        })
        .await
    }

    async fn stats(&self, queue: QueueKind) -> Result<QueueStats> {
        self.read(|conn| {
            super::query_row(
                conn,
                "SELECT
               coalesce(sum(dead = 0 AND visible_at <= ?2), 0),
               coalesce(sum(dead = 0 AND visible_at > ?2), 0),
               coalesce(sum(dead = 0 AND visible_at > ?2 AND receive_count > 0), 0),
               coalesce(sum(dead = 1), 0)
             FROM messages WHERE queue = ?1",
                params![queue.name(), now_ms()],
                |r| {
                    Ok(QueueStats {
                        visible: r.get::<_, i64>(0)? as u64,
                        waiting: r.get::<_, i64>(1)? as u64,
                        received: r.get::<_, i64>(2)? as u64,
                        dead: r.get::<_, i64>(3)? as u64,
                    })
                },
            )
            .map_err(db_err)
        })
    }

    async fn dead_letters(&self, queue: QueueKind, max: usize) -> Result<Vec<DeadLetter>> {
        // A message past its last receive counts as dead even before a receive moves it.
        self.read(|conn| {
        let mut stmt = conn
            .prepare_cached(
                "SELECT id, body, receive_count, last_error FROM messages
                 WHERE queue = ?1 AND (dead = 1 OR (receive_count >= ?2 AND visible_at <= ?3)) ORDER BY id LIMIT ?4",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(
                params![queue.name(), MAX_RECEIVES, now_ms(), max as i64],
                |r| {
                    Ok(DeadLetter {
                        id: r.get::<_, i64>(0)?.to_string(),
                        body: r.get(1)?,
                        receive_count: r.get(2)?,
                        last_error: r.get(3)?,
                    })
                },
            )
            .map_err(db_err)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(db_err)
        })
    }

    async fn redrive(&self, queue: QueueKind, keep: &Keep<'_>, max: usize) -> Result<u64> {
        // `keep` is the caller's and borrowed: read the dead letters, choose here, then move
        // the chosen ones in one write.
        let now = now_ms();
        let chosen: Vec<i64> = self.read(|c| {
            let mut stmt = c
                .prepare_cached(
                    "SELECT id, body FROM messages WHERE queue = ?1
                     AND (dead = 1 OR (receive_count >= ?2 AND visible_at <= ?3)) ORDER BY id",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(params![queue.name(), MAX_RECEIVES, now], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?))
                })
                .map_err(db_err)?;
            let mut chosen = Vec::new();
            for row in rows {
                let (id, body) = row.map_err(db_err)?;
                if chosen.len() >= max {
                    break;
                }
                if keep(&body) {
                    chosen.push(id);
                }
            }
            Ok(chosen)
        })?;
        self.write(move |tx| {
            let mut moved = 0;
            for id in chosen {
                // In one transaction: out of the dead letters and back, nothing in between;
                // one that left the dead letters since the read stays where it is.
                moved += super::execute(
                    tx,
                    "UPDATE messages SET dead = 0, receive_count = 0, receipt = NULL, owner = NULL,
                     visible_at = ?2, last_error = NULL
                     WHERE id = ?1 AND (dead = 1 OR (receive_count >= ?3 AND visible_at <= ?2))",
                    params![id, now, MAX_RECEIVES],
                )
                .map_err(db_err)? as u64;
            }
            Ok(moved)
        })
        .await
    }

    async fn flush(&self) -> Result<()> {
        self.flush_writes().await
    }

    fn may_need_flush(&self) -> bool {
        self.has_unsynced_writes()
    }
}
