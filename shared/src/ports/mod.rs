//! The ports: what the core needs from storage and messaging, as traits with one implementation
//! per backend (`embedded` on disk, `aws` with the SDK). Shaped like `object_store`: a small
//! required core per trait, conditional writes as data ([`PutMode`]), and one conformance suite
//! ([`crate::conformance`]) that every implementation passes.

pub mod durability;
pub mod fair;
mod kv;
mod objects;
mod queue;
mod tally;
mod vault;
mod work;

pub use kv::{
    check_batch_len, new_token, Generation, Item, ItemPage, KvStore, NewItem, TxOp, TxPlan,
    MAX_BATCH_ITEMS, MAX_TX_OPS,
};
pub use kv::{Cmp, Count, Counts, MAX_COUNT_NAME};
pub use objects::{InMemory, ListPage, ObjectMeta, ObjectReader, ObjectStore};
pub use queue::{
    DeadLetter, Keep, Message, Queue, QueueKind, QueueStats, MAX_DELAY_S, MAX_RECEIVES,
    VISIBILITY_TIMEOUT_S,
};
pub use tally::{apply_tally, check_tally_op, NewTally, Tallies, Tally, TallyAnswer, TallyOp};
pub(crate) use vault::check as check_secret;
pub use vault::{Secret, Vault, MAX_SECRET_BYTES};
pub use work::{is_trace, trace_of_body, Slot, WorkMessage};

use std::sync::Arc;

/// How a write treats what is already there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PutMode {
    /// Write whatever is there.
    Overwrite,
    /// Write only if nothing is there; otherwise [`crate::Error::AlreadyExists`].
    Create,
    /// Write only if the current version (an etag, or an item's version) is this one; otherwise
    /// [`crate::Error::Precondition`].
    Update(String),
}

/// The backends a runtime uses, as shared trait objects.
#[derive(Clone, Debug)]
pub struct Backends {
    /// Buckets.
    pub objects: Arc<dyn ObjectStore>,
    /// The key-value table.
    pub kv: Arc<dyn KvStore>,
    /// The events and work queues.
    pub queue: Arc<dyn Queue>,
    /// Tenants' secrets.
    pub vault: Arc<dyn Vault>,
}

impl Backends {
    /// Makes every write made so far through these backends durable, those made inside
    /// [`durability::deferring`] included: call it before acknowledging them. A no-op where
    /// every write is durable when it returns (AWS), and where nothing was deferred.
    pub async fn flush(&self) -> crate::Result<()> {
        if self.kv.may_need_flush() {
            self.kv.flush().await?;
        }
        if self.objects.may_need_flush() {
            self.objects.flush().await?;
        }
        if self.queue.may_need_flush() {
            self.queue.flush().await?;
        }
        Ok(())
    }
}

/// How far this process's clock is moved ahead of the system clock, in ms: the embedded
/// backend's project clock (`native clock advance`, see [`crate::clock`]). Zero elsewhere.
static CLOCK_OFFSET_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

/// What every [`now_ms`] calls first, once a process follows a project's clock file
/// (`clock::follow` sets it, so that the ports need not know the clock's file).
static CLOCK_REFRESH: std::sync::OnceLock<fn()> = std::sync::OnceLock::new();

/// Has every [`now_ms`] call `refresh` first (the first such call in a process wins): how the
/// project clock reloads its offset when another process moved it.
pub fn on_clock_read(refresh: fn()) {
    let _ = CLOCK_REFRESH.set(refresh);
}

/// Moves this process's notion of now (every [`now_ms`]) by `offset_ms` from the system clock.
/// One offset per process: a process serves one project.
pub fn set_clock_offset_ms(offset_ms: i64) {
    CLOCK_OFFSET_MS.store(offset_ms, std::sync::atomic::Ordering::Relaxed);
}

/// What the system clock reads while it is frozen ([`freeze_clock`]); `i64::MIN`: not frozen.
static FROZEN_AT_MS: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// Freezes this process's system clock at `at_ms` (ms since the Unix epoch), or lets it run
/// again with `None`: `native test` runs each test from one fixed start, whatever the machine's
/// clock says, and only [`set_clock_offset_ms`] moves it on (`t:advance`).
pub fn freeze_clock(at_ms: Option<i64>) {
    FROZEN_AT_MS.store(
        at_ms.unwrap_or(i64::MIN),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// The offset this process applies to the system clock now, in ms ([`set_clock_offset_ms`]).
pub fn clock_offset_ms() -> i64 {
    CLOCK_OFFSET_MS.load(std::sync::atomic::Ordering::Relaxed)
}

/// Milliseconds since the Unix epoch, now, as this process's clock has it (the system clock
/// plus the project's offset; see [`set_clock_offset_ms`]). Everything that stores or
/// compares times (expiry, delays, leases, deadlines, `os.time`) reads this.
pub fn now_ms() -> i64 {
    // A project's clock file changed by another process (`native clock advance`) counts at once.
    if let Some(refresh) = CLOCK_REFRESH.get() {
        refresh();
    }
    let frozen = FROZEN_AT_MS.load(std::sync::atomic::Ordering::Relaxed);
    let system = if frozen != i64::MIN {
        frozen
    } else {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or(0)
    };
    system.saturating_add(CLOCK_OFFSET_MS.load(std::sync::atomic::Ordering::Relaxed))
}
