//! What the `native` command shows of the embedded backend beyond the ports: the messages
//! waiting in a queue and where each stands, the errors of each failed attempt of a message,
//! and the partitions of the key-value table under a prefix (a tenant's barriers).

use rusqlite::params;

use super::{db_err, Embedded};
use crate::ports::{now_ms, QueueKind, MAX_RECEIVES};
use crate::Result;

/// The most attempts kept per message: a message redriven again and again keeps its latest.
pub const KEPT_ATTEMPTS: i64 = 20;

/// Where a queued message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// Sent with a delay that has not passed.
    Delayed,
    /// Due: the next drain (or `native serve`) takes it.
    Pending,
    /// Received and being handled, by this or another process.
    InFlight,
    /// Failed; it comes back after the visibility timeout.
    Retrying,
}

impl Standing {
    /// The word the CLI prints.
    pub fn name(self) -> &'static str {
        match self {
            Standing::Delayed => "delayed",
            Standing::Pending => "pending",
            Standing::InFlight => "in flight",
            Standing::Retrying => "waiting for a retry",
        }
    }
}

/// A message in a queue (not a dead letter).
#[derive(Debug, Clone)]
pub struct Queued {
    /// Its id.
    pub id: String,
    /// Where it stands.
    pub standing: Standing,
    /// How often it was received.
    pub receive_count: u32,
    /// When it is (or was) due next, ms since the epoch on the project clock.
    pub visible_at_ms: i64,
    /// When it was sent.
    pub sent_ms: i64,
    /// The error of its last failed attempt.
    pub last_error: Option<String>,
    /// The body.
    pub body: String,
}

/// One failed attempt of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// Its receive count then (1 on first delivery; counting starts again after a redrive).
    pub attempt: u32,
    /// When it failed, ms since the epoch on the project clock.
    pub at_ms: i64,
    /// What failed.
    pub error: String,
}

impl Embedded {
    /// Records a failed attempt of message `id` (its `attempt`-th receive), keeping the latest
    /// [`KEPT_ATTEMPTS`].
    pub(super) fn record_attempt(tx: &rusqlite::Connection, id: i64, error: &str) -> Result<()> {
        super::execute(
            tx,
            "INSERT INTO attempts (message_id, attempt, at_ms, error)
             SELECT id, receive_count, ?2, ?3 FROM messages WHERE id = ?1",
            params![id, now_ms(), error],
        )
        .map_err(db_err)?;
        super::execute(
            tx,
            "DELETE FROM attempts WHERE message_id = ?1 AND rowid NOT IN
               (SELECT rowid FROM attempts WHERE message_id = ?1 ORDER BY rowid DESC LIMIT ?2)",
            params![id, KEPT_ATTEMPTS],
        )
        .map_err(db_err)?;
        Ok(())
    }

    /// The messages of a queue that are not dead letters, oldest first, at most `max`.
    pub fn queued(&self, queue: QueueKind, max: usize) -> Result<Vec<Queued>> {
        let conn = self.reader();
        let now = now_ms();
        let mut stmt = conn
            .prepare(
                "SELECT m.id, m.body, m.receive_count, m.visible_at, m.sent_ms, m.last_error,
                   (SELECT max(a.attempt) FROM attempts a WHERE a.message_id = m.id)
                 FROM messages m
                 WHERE m.queue = ?1 AND m.dead = 0 AND NOT (m.receive_count >= ?2 AND m.visible_at <= ?3)
                 ORDER BY m.id LIMIT ?4",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![queue.name(), MAX_RECEIVES, now, max as i64], |r| {
                let receive_count: u32 = r.get(2)?;
                let visible_at_ms: i64 = r.get(3)?;
                let failed_last: Option<u32> = r.get(6)?;
                let standing = if visible_at_ms <= now {
                    Standing::Pending
                } else if receive_count == 0 {
                    Standing::Delayed
                } else if failed_last == Some(receive_count) {
                    Standing::Retrying
                } else {
                    Standing::InFlight
                };
                Ok(Queued {
                    id: r.get::<_, i64>(0)?.to_string(),
                    standing,
                    receive_count,
                    visible_at_ms,
                    sent_ms: r.get(4)?,
                    last_error: r.get(5)?,
                    body: r.get(1)?,
                })
            })
            .map_err(db_err)?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(db_err)
    }

    /// The failed attempts recorded for message `id`, in order.
    pub fn attempts(&self, id: &str) -> Result<Vec<Attempt>> {
        let Ok(id) = id.parse::<i64>() else {
            return Ok(Vec::new());
        };
        let conn = self.reader();
        let mut stmt = conn
            .prepare_cached(
                "SELECT attempt, at_ms, error FROM attempts WHERE message_id = ?1 ORDER BY rowid",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map([id], |r| {
                Ok(Attempt {
                    attempt: r.get(0)?,
                    at_ms: r.get(1)?,
                    error: r.get(2)?,
                })
            })
            .map_err(db_err)?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(db_err)
    }

    /// The partition keys of the key-value table that start with `prefix` and hold an item
    /// that has not expired, in order, at most `max`.
    pub fn partitions(&self, prefix: &str, max: usize) -> Result<Vec<String>> {
        let conn = self.reader();
        let mut stmt = conn
            .prepare(
                "SELECT DISTINCT pk FROM kv
                 WHERE pk >= ?1 AND substr(pk, 1, length(?1)) = ?1 AND expires_at > ?2
                 ORDER BY pk LIMIT ?3",
            )
            .map_err(db_err)?;
        let rows = stmt
            .query_map(params![prefix, now_ms() / 1000, max as i64], |r| r.get(0))
            .map_err(db_err)?;
        rows.collect::<std::result::Result<Vec<_>, _>>()
            .map_err(db_err)
    }
}
