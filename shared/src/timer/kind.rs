//! What a primitive registers for the timers it conditions: a [`Kind`] says what a due timer
//! of its kind does. The tick knows kinds only through this trait.

use serde_json::Value;

use crate::ports::{KvStore, ObjectStore, Queue};
use crate::Result;

/// What a kind is shown of a due timer, and what it may call.
pub struct Due<'a> {
    /// The key-value table.
    pub kv: &'a dyn KvStore,
    /// The queues.
    pub queue: &'a dyn Queue,
    /// The buckets.
    pub objects: &'a dyn ObjectStore,
    /// The timer's tenant.
    pub tenant: &'a str,
    /// The tick's now.
    pub now_ms: i64,
    /// The work message the timer holds.
    pub body: &'a str,
    /// The condition's data, as the primitive wrote it.
    pub data: &'a Value,
}

/// What a kind decided about one due timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The condition holds: the tick sends the timer's work message (claimed kinds).
    Send,
    /// The condition no longer holds, or the work was done: the timer is spent, nothing sent.
    Void,
    /// The kind sent what was due itself (unclaimed kinds): the timer is spent.
    Sent,
    /// Another holder is at work: leave the timer for a later tick (unclaimed kinds).
    Held,
}

/// A kind of conditioned timer, registered by the primitive that sets such timers.
#[async_trait::async_trait]
pub trait Kind: Send + Sync {
    /// The field of the timer row that carries this kind's condition (`"barrier"`).
    fn field(&self) -> &'static str;

    /// Whether the tick claims a due timer of this kind (a lease on the row) before asking
    /// [`Kind::fire`], then sends on [`Verdict::Send`] and deletes the row: at least once, and
    /// once when nothing fails. An unclaimed kind decides by itself who sends (its own claim
    /// elsewhere): the tick never fires it before it is due, even within the horizon, since
    /// what it checks is commonly a lease that lapses at that time.
    fn claimed(&self) -> bool {
        true
    }

    /// Decides about a due timer, adding the backend calls it made to `calls`.
    async fn fire(&self, due: &Due<'_>, calls: &mut u32) -> Result<Verdict>;
}
