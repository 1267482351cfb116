//! Rendezvous barriers (seed 003): N processes arrive at a named barrier, which trips when the
//! last one arrives and starts its next generation. Tenant-private, on the key-value port, so
//! both backends share this code. The contract is `docs/rendezvous.md`.
//!
//! Rows, in partitions no `native.db` call (`d#...`) or work-list barrier (`b#...`) can address:
//!
//! | partition | sort key | what |
//! | --- | --- | --- |
//! | `R#<tenant>` | `n#<namespace>` | a namespace: its fields, incarnation and barrier count |
//! | `r#<tenant>#<namespace>#<ns incarnation>` | `b#<barrier>` | a barrier and its incarnation |
//! | `r#<tenant>#<namespace>#<ns incarnation>#<barrier>#<incarnation>` | `p#<generation>#<process>` | an arrival |
//! | the same | `c#<generation>` | the claim on a trip's continuation |
//!
//! The code: `namespaces`, `barriers` (find, create, update, delete, participants), `arrival`,
//! `continuation` (a trip's claimed message), `waiting` (with `notify`, its in-process
//! wake-ups), `caps` (the tenant's limits); the rows and field checks in `model`, lists in `page`.
//!
//! Incarnations are random per create, so a barrier (or namespace) deleted and created again
//! starts from nothing: the old rows are out of reach and only wait for their expiry.
//!
//! An arrival is one read of the barrier row and one transaction: the participant row
//! created if absent, and the barrier row written on the condition that it is still the
//! version the transaction was planned on (so generation and count are what were read). On
//! the embedded backend the transaction is planned on the row as it stands when it commits
//! (`arrival.rs`, [`KvStore::transact_on`]), so racing arrivals never lose to each other; on
//! DynamoDB it is planned on the row read, and an arrival that another got in before reads
//! again and retries. The barrier row expires at
//! `last_activity_at + delete_inactive_after_seconds` (DynamoDB TTL moves with each arrival),
//! and reads compare that time with the clock themselves, so a barrier is gone the moment its
//! window ends, swept or not.

mod arrival;
mod barriers;
mod caps;
mod continuation;
mod model;
mod namespaces;
pub mod notify;
mod page;
mod waiting;

pub use model::{
    check_name, check_timeout, Barrier, CreateBarrier, Metadata, Namespace, Participant,
    UpdateBarrier, WaitOutcome, DEFAULT_NAMESPACE, MAX_INACTIVE_S, MAX_METADATA_ENTRIES,
    MAX_WAIT_S,
};
pub use page::{check_token, Page};

use std::time::Duration;

use crate::budget::Budget;
use crate::ports::{now_ms, Item, KvStore, NewItem, Queue};
use crate::{Error, Result};
use model::BarrierRow;

/// Namespaces never expire by themselves (31 Dec 9999); they are deleted.
const NEVER_S: i64 = 253_402_300_799;
/// Participant rows and continuation claims outlive the barrier's window at their write by
/// this much: a barrier row that lives on (through later arrivals) still finds them, for
/// repeated arrivals and for listing, unless one generation stays open this long past it.
pub const PARTICIPANT_RETAIN_S: i64 = 30 * 86_400;
/// How long the call that trips a barrier holds the claim on its continuation.
pub const LEASE_MS: i64 = 60_000;
/// The most barriers per namespace.
pub const MAX_BARRIERS_PER_NAMESPACE: u64 = 1_000_000;
/// How often one call retries after losing a race for the barrier row.
const MAX_ATTEMPTS: u32 = 1000;
/// The first and the longest pause of a waiter that polls the store.
pub const POLL_FIRST: Duration = Duration::from_millis(100);

/// The least time a wait gives its first read of the barrier, whatever its timeout.
const FIRST_READ: Duration = Duration::from_secs(2);
/// See [`POLL_FIRST`].
pub const POLL_MAX: Duration = Duration::from_secs(1);

/// What an arrival answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Arrival {
    /// The barrier after the arrival (the next generation when it tripped).
    pub barrier: Barrier,
    /// The generation arrived at has tripped (by this call, or before a repeated one).
    pub all_arrived: bool,
}

/// A budget without a limit, for callers outside scripts (HTTP, the CLI).
#[derive(Debug, Default, Clone, Copy)]
pub struct Unlimited;

impl Budget for Unlimited {
    fn spend(&self, _calls: u32) -> Result<()> {
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

/// The clock, in ms since the epoch: [`now_ms`] unless a test moves it.
pub type Clock = dyn Fn() -> i64 + Send + Sync;

/// The rendezvous barriers of one tenant.
pub struct Rendezvous<'a, B: Budget + ?Sized> {
    /// The key-value table.
    pub kv: &'a dyn KvStore,
    /// The queues (for continuations).
    pub queue: &'a dyn Queue,
    /// The tenant.
    pub tenant: &'a str,
    /// Whether the tenant has a queue; continuations need one.
    pub queue_enabled: bool,
    /// Counts backend calls.
    pub budget: &'a B,
    /// Now, in ms.
    pub clock: &'a Clock,
    /// The most barriers per namespace ([`MAX_BARRIERS_PER_NAMESPACE`]).
    pub max_barriers: u64,
    /// The most namespaces of the tenant (`default` not counted); unbounded unless set
    /// ([`Rendezvous::limit_to`]).
    pub max_namespaces: u64,
    /// The most barriers of the tenant over all its namespaces; unbounded unless set.
    pub max_tenant_barriers: u64,
    /// The most waits of the tenant parked at once in this process; unbounded unless set.
    pub max_waits: u64,
}

static SYSTEM_CLOCK: fn() -> i64 = now_ms;

/// The process clock ([`now_ms`]), as a [`Clock`].
pub fn system_clock() -> &'static Clock {
    &SYSTEM_CLOCK
}

fn ns_pk(tenant: &str) -> String {
    format!("R#{tenant}")
}

fn barriers_pk(tenant: &str, ns: &str, ns_inc: &str) -> String {
    format!("r#{tenant}#{ns}#{ns_inc}")
}

fn gen_key(generation: u64) -> String {
    format!("{generation:020}")
}

fn token() -> String {
    format!("{:016x}", crate::random::u64())
}

/// The stored row of a barrier, in partition `pk`.
fn barrier_item(pk: &str, row: &BarrierRow) -> NewItem {
    NewItem {
        pk: pk.into(),
        sk: format!("b#{}", row.barrier.name),
        value: serde_json::to_string(row).unwrap_or_default(),
        // Rounded up: the backend's expiry never hides a barrier that reads call live.
        expires_at_s: (row.barrier.inactive_at_ms() + 999).div_euclid(1000),
    }
}

/// A row beside a barrier (an arrival, a claim) in partition `parts_pk`, written at `now_ms`:
/// it outlives the barrier's inactivity window by [`PARTICIPANT_RETAIN_S`].
fn side_item_at(now_ms: i64, b: &Barrier, parts_pk: &str, sk: String, value: String) -> NewItem {
    NewItem {
        pk: parts_pk.into(),
        sk,
        value,
        expires_at_s: (now_ms / 1000)
            .saturating_add(b.delete_inactive_after_seconds as i64)
            .saturating_add(PARTICIPANT_RETAIN_S),
    }
}

fn damaged(what: &str, e: serde_json::Error) -> Error {
    Error::Backend {
        backend: "rendezvous",
        message: format!("stored {what} row is damaged: {e}"),
        source: None,
    }
}

fn busy(generation: u64) -> Error {
    Error::Backend {
        backend: "rendezvous",
        message: format!(
            "the continuation of generation {generation} is being sent by another call; retry within {} s",
            LEASE_MS / 1000
        ),
        source: None,
    }
}

fn contended() -> Error {
    Error::Backend {
        backend: "rendezvous",
        message: format!("the barrier changed under {MAX_ATTEMPTS} attempts in a row; retry"),
        source: None,
    }
}

fn barrier_not_found() -> Error {
    Error::not_found("barrier")
}

/// A barrier row read with its item version and where its participants live.
struct Found {
    row: BarrierRow,
    /// The barrier's item as read (its version is the condition of a write of the row).
    seen: Item,
    pk: String,
    parts_pk: String,
}

impl<'a, B: Budget + ?Sized> Rendezvous<'a, B> {
    /// The barriers of `tenant`, on the system clock, with the contract's limits.
    pub fn new(kv: &'a dyn KvStore, queue: &'a dyn Queue, tenant: &'a str, budget: &'a B) -> Self {
        Rendezvous {
            kv,
            queue,
            tenant,
            queue_enabled: false,
            budget,
            clock: system_clock(),
            max_barriers: MAX_BARRIERS_PER_NAMESPACE,
            max_namespaces: u64::MAX,
            max_tenant_barriers: u64::MAX,
            max_waits: u64::MAX,
        }
    }

    fn now_ms(&self) -> i64 {
        (self.clock)()
    }

    fn now_ns(&self) -> i64 {
        self.now_ms().saturating_mul(1_000_000)
    }
}
