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
//! The barrier row holds the barrier as JSON and three counts beside it ([`crate::ports::Count`]):
//! `arrived` (arrivals since the JSON was written, added to its `arrived_processes`), `active`
//! (the last arrival's time, ns) and `epoch` (how often the JSON was rewritten: by a trip or an
//! update). An arrival is one read of the barrier row (the namespace's incarnation is cached
//! per process, `namespaces.rs`) and one transaction: the participant row created if absent,
//! and 1 added to `arrived` on the condition that `epoch` is still the one read (no trip and no
//! update since) and the count stays below `expected_processes`. Adds commute, so racing
//! arrivals all pass at their first attempt; only the arrival that completes the count writes
//! the JSON: the next generation, `arrived` back to 0 and `epoch` + 1, on the condition that
//! the count is one short. An arrival that raced to that point reads again and trips. A row
//! written before the counts (none of them) reads as its JSON says and takes the counts on
//! its first arrival. The barrier row expires at
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
pub use namespaces::NS_CACHE;
pub use page::{check_token, Page};

use std::time::Duration;

use crate::budget::Budget;
use crate::ports::{now_ms, Cmp, Count, Item, KvStore, NewItem, Queue};
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
    /// How long a namespace's incarnation read is taken as it is ([`NS_CACHE`]).
    pub ns_cache: Duration,
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
        expires_at_s: expiry_s(&row.barrier),
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

/// The counts of a barrier row (see the module docs).
const ARRIVED: &str = "arrived";
/// See [`ARRIVED`].
const ACTIVE: &str = "active";
/// See [`ARRIVED`].
const EPOCH: &str = "epoch";

/// A barrier row as stored: its JSON with its counts applied (arrivals since the JSON was
/// written, the last one's time).
fn barrier_row(item: &Item) -> Result<BarrierRow> {
    let mut row: BarrierRow =
        serde_json::from_str(&item.value).map_err(|e| damaged("barrier", e))?;
    let count = |n: &str| item.counts.get(n).copied().unwrap_or(0);
    let b = &mut row.barrier;
    b.arrived_processes = b
        .arrived_processes
        .saturating_add(u64::try_from(count(ARRIVED)).unwrap_or(0));
    b.last_activity_at = b.last_activity_at.max(count(ACTIVE));
    Ok(row)
}

fn barrier_not_found() -> Error {
    Error::missing(crate::error::Missing::Rendezvous, "barrier")
}

/// A barrier row read with its item and where its participants live.
struct Found {
    /// The barrier, its counts applied ([`barrier_row`]).
    row: BarrierRow,
    /// The barrier's item as read (its counts are the conditions of a write of the row).
    seen: Item,
    pk: String,
    parts_pk: String,
}

impl Found {
    /// A count of the row as read (0 when it has none).
    fn count(&self, name: &str) -> i64 {
        self.seen.counts.get(name).copied().unwrap_or(0)
    }

    /// The conditions of a write planned on this read: no trip or update since (`epoch`), and
    /// `arrived` compared with `figure`.
    fn unchanged(&self, arrived: Cmp, figure: i64) -> Vec<(String, Cmp, i64)> {
        vec![
            (EPOCH.into(), Cmp::Eq, self.count(EPOCH)),
            (ARRIVED.into(), arrived, figure),
        ]
    }

    /// A write of `next`'s JSON whole, planned on this read: its arrivals folded into it
    /// (`arrived` back to 0), `epoch` + 1, on the condition that nothing changed since. For a
    /// trip (arrivals counted in `next`) and an update.
    fn rewrite(&self, next: &BarrierRow, arrived_before: i64) -> Count {
        Count {
            pk: self.pk.clone(),
            sk: format!("b#{}", next.barrier.name),
            when: self.unchanged(Cmp::Eq, arrived_before),
            add: vec![(EPOCH.into(), 1)],
            set: vec![(ARRIVED.into(), 0)],
            value: Some(serde_json::to_string(next).unwrap_or_default()),
            expires_at_s: Some(expiry_s(&next.barrier)),
        }
    }
}

/// When a barrier row expires, in s: rounded up, so that the backend's expiry never hides a
/// barrier that reads call live.
fn expiry_s(b: &Barrier) -> i64 {
    (b.inactive_at_ms() + 999).div_euclid(1000)
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
            ns_cache: NS_CACHE,
        }
    }

    fn now_ms(&self) -> i64 {
        (self.clock)()
    }

    fn now_ns(&self) -> i64 {
        self.now_ms().saturating_mul(1_000_000)
    }
}
