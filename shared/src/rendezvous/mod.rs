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
mod caps;
mod model;
pub mod notify;
mod page;

pub use model::{
    check_name, check_timeout, Barrier, CreateBarrier, Metadata, Namespace, Participant,
    UpdateBarrier, WaitOutcome, DEFAULT_NAMESPACE, MAX_INACTIVE_S, MAX_METADATA_ENTRIES,
    MAX_WAIT_S,
};
pub use page::{check_token, Page};

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::budget::Budget;
use crate::ports::WorkMessage;
use crate::ports::{now_ms, Item, KvStore, NewItem, PutMode, Queue, QueueKind, TxOp};
use crate::{Error, Result};
use model::{BarrierRow, NamespaceRow};
use page::Lister;

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

/// Every tenant has `default`; its row is written the first time anything reads it, created
/// then, always with the same incarnation (so barriers made before its row are still its own).
fn default_namespace(now_ns: i64) -> NamespaceRow {
    NamespaceRow {
        namespace: Namespace {
            name: DEFAULT_NAMESPACE.into(),
            description: String::new(),
            metadata: Metadata::new(),
            created_at: now_ns,
            updated_at: now_ns,
        },
        incarnation: "0".into(),
        barriers: 0,
    }
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

/// The claim on the continuation of `generation`, taken at `now_ms` for [`LEASE_MS`].
fn claim_item_at(now_ms: i64, b: &Barrier, parts_pk: &str, generation: u64, sent: bool) -> NewItem {
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

/// The claim on a trip's continuation.
#[derive(Debug, Serialize, Deserialize)]
struct Claim {
    lease_until_ms: i64,
    sent: bool,
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

    // ---- namespaces ----

    async fn ns_row(&self, name: &str) -> Result<Option<(NamespaceRow, Option<String>)>> {
        // Twice at most: a missing `default` is written, and read again if another call wrote
        // it first.
        for _ in 0..2 {
            self.budget.spend(1)?;
            match self
                .kv
                .get(&ns_pk(self.tenant), &format!("n#{name}"))
                .await?
            {
                Some(item) => {
                    let row: NamespaceRow =
                        serde_json::from_str(&item.value).map_err(|e| damaged("namespace", e))?;
                    return Ok(Some((row, Some(item.version))));
                }
                None if name == DEFAULT_NAMESPACE => {
                    let row = default_namespace(self.now_ns());
                    self.budget.spend(1)?;
                    match self.kv.put(self.ns_item(&row), PutMode::Create).await {
                        Ok(version) => return Ok(Some((row, Some(version)))),
                        Err(Error::AlreadyExists { .. } | Error::Precondition { .. }) => continue,
                        Err(e) => return Err(e),
                    }
                }
                None => return Ok(None),
            }
        }
        Err(contended())
    }

    async fn need_ns(&self, name: &str) -> Result<(NamespaceRow, Option<String>)> {
        check_name("namespace_name", name)?;
        self.ns_row(name)
            .await?
            .ok_or_else(|| Error::not_found("namespace"))
    }

    fn ns_item(&self, row: &NamespaceRow) -> NewItem {
        NewItem {
            pk: ns_pk(self.tenant),
            sk: format!("n#{}", row.namespace.name),
            value: serde_json::to_string(row).unwrap_or_default(),
            expires_at_s: NEVER_S,
        }
    }

    fn ns_mode(version: &Option<String>) -> PutMode {
        match version {
            Some(v) => PutMode::Update(v.clone()),
            None => PutMode::Create,
        }
    }

    /// Creates a namespace.
    pub async fn create_namespace(
        &self,
        name: &str,
        description: &str,
        metadata: Metadata,
    ) -> Result<Namespace> {
        check_name("name", name)?;
        model::check_description(description)?;
        model::check_metadata(&metadata)?;
        if name == DEFAULT_NAMESPACE {
            return Err(Error::AlreadyExists {
                what: "namespace \"default\" (every tenant has it)".into(),
            });
        }
        let now = self.now_ns();
        let row = NamespaceRow {
            namespace: Namespace {
                name: name.into(),
                description: description.into(),
                metadata,
                created_at: now,
                updated_at: now,
            },
            incarnation: token(),
            barriers: 0,
        };
        self.check_namespace_cap().await?;
        self.budget.spend(1)?;
        match self.kv.put(self.ns_item(&row), PutMode::Create).await {
            Ok(_) => Ok(row.namespace),
            Err(Error::AlreadyExists { .. }) => Err(Error::AlreadyExists {
                what: "namespace".into(),
            }),
            Err(e) => Err(e),
        }
    }

    /// A namespace.
    pub async fn get_namespace(&self, name: &str) -> Result<Namespace> {
        Ok(self.need_ns(name).await?.0.namespace)
    }

    /// A page of namespaces in name order ([`Page`]: either token gives the page beside it).
    pub async fn list_namespaces(&self, token: &str, limit: u64) -> Result<Page<Namespace>> {
        check_token(token)?;
        let limit = model::page_limit(limit)?;
        // `default` is listed as every other namespace: its row is written if it is not yet.
        self.ns_row(DEFAULT_NAMESPACE).await?;
        let pk = ns_pk(self.tenant);
        let lister = Lister {
            kv: self.kv,
            budget: self.budget,
            pk: &pk,
            prefix: "n#",
            keep: |item: &Item| {
                let row: NamespaceRow =
                    serde_json::from_str(&item.value).map_err(|e| damaged("namespace", e))?;
                Ok(Some(row.namespace))
            },
        };
        lister.page(token, limit).await
    }

    /// How many barriers the tenant's namespaces hold, as their counts have it (barriers gone
    /// for inactivity count until a create at the limit counts again), reading at most
    /// `max_namespaces` namespace rows; and whether there were more.
    pub async fn barrier_count(&self, max_namespaces: usize) -> Result<(u64, bool)> {
        let mut n = 0;
        let mut read = 0;
        let mut after: Option<String> = None;
        loop {
            self.budget.spend(1)?;
            let page = self
                .kv
                .query(&ns_pk(self.tenant), "n#", after.as_deref(), 1000)
                .await?;
            for item in &page.items {
                let row: NamespaceRow =
                    serde_json::from_str(&item.value).map_err(|e| damaged("namespace", e))?;
                n += row.barriers;
            }
            read += page.items.len();
            match page.next {
                Some(next) if read < max_namespaces => after = Some(next),
                Some(_) => return Ok((n, true)),
                None => return Ok((n, false)),
            }
        }
    }

    /// Replaces a namespace's description and metadata.
    pub async fn update_namespace(
        &self,
        name: &str,
        description: &str,
        metadata: Metadata,
    ) -> Result<Namespace> {
        model::check_description(description)?;
        model::check_metadata(&metadata)?;
        for _ in 0..MAX_ATTEMPTS {
            let (mut row, version) = self.need_ns(name).await?;
            row.namespace.description = description.into();
            row.namespace.metadata = metadata.clone();
            row.namespace.updated_at = self.now_ns();
            self.budget.spend(1)?;
            match self
                .kv
                .put(self.ns_item(&row), Self::ns_mode(&version))
                .await
            {
                Ok(_) => return Ok(row.namespace),
                // A barrier create or delete moved its count meanwhile: read again.
                Err(Error::Precondition { .. } | Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(contended())
    }

    /// Deletes a namespace with all its barriers (they are out of reach at once, their rows
    /// expire). The `default` namespace cannot be deleted.
    pub async fn delete_namespace(&self, name: &str) -> Result<()> {
        check_name("namespace_name", name)?;
        if name == DEFAULT_NAMESPACE {
            return Err(Error::InvalidInput(
                "the default namespace cannot be deleted; delete its barriers one by one".into(),
            ));
        }
        if self.ns_row(name).await?.is_none() {
            return Err(Error::not_found("namespace"));
        }
        self.budget.spend(1)?;
        self.kv
            .delete(&ns_pk(self.tenant), &format!("n#{name}"), None)
            .await?;
        Ok(())
    }

    // ---- barriers ----

    /// Reads a live barrier: `None` when there is none, or it is past its inactivity window.
    async fn find(&self, ns: &str, name: &str) -> Result<Option<Found>> {
        let (ns_row, _) = self.need_ns(ns).await?;
        check_name("barrier_name", name)?;
        let pk = barriers_pk(self.tenant, ns, &ns_row.incarnation);
        self.budget.spend(1)?;
        let Some(item) = self.kv.get(&pk, &format!("b#{name}")).await? else {
            return Ok(None);
        };
        let row: BarrierRow =
            serde_json::from_str(&item.value).map_err(|e| damaged("barrier", e))?;
        if row.barrier.inactive_at_ms() <= self.now_ms() {
            return Ok(None);
        }
        let parts_pk = format!("{pk}#{name}#{}", row.incarnation);
        Ok(Some(Found {
            row,
            seen: item,
            pk,
            parts_pk,
        }))
    }

    /// Reads a barrier found a moment ago again, by its partition: `not_found` if it is gone
    /// or is another incarnation now.
    async fn reread(&self, found: &Found) -> Result<Found> {
        let name = &found.row.barrier.name;
        self.budget.spend(1)?;
        let item = self
            .kv
            .get(&found.pk, &format!("b#{name}"))
            .await?
            .ok_or_else(barrier_not_found)?;
        let row: BarrierRow =
            serde_json::from_str(&item.value).map_err(|e| damaged("barrier", e))?;
        if row.incarnation != found.row.incarnation || row.barrier.inactive_at_ms() <= self.now_ms()
        {
            return Err(barrier_not_found());
        }
        Ok(Found {
            row,
            seen: item,
            pk: found.pk.clone(),
            parts_pk: found.parts_pk.clone(),
        })
    }

    async fn need(&self, ns: &str, name: &str) -> Result<Found> {
        self.find(ns, name).await?.ok_or_else(barrier_not_found)
    }

    fn claim_item(&self, b: &Barrier, parts_pk: &str, generation: u64, sent: bool) -> NewItem {
        claim_item_at(self.now_ms(), b, parts_pk, generation, sent)
    }

    /// Creates a barrier at generation 1.
    pub async fn create(&self, spec: CreateBarrier) -> Result<Barrier> {
        spec.validate()?;
        if spec.continue_with.is_some() && !self.queue_enabled {
            return Err(Error::InvalidInput(format!(
                "continue_with needs a queue: set \"queue\": true in tenants/{}/config.json",
                self.tenant
            )));
        }
        if let Some(s) = &spec.continue_with {
            crate::keys::check_name("script", s).map_err(Error::InvalidInput)?;
        }
        for attempt in 0..MAX_ATTEMPTS {
            let (mut ns, ns_version) = self.need_ns(&spec.namespace).await?;
            let pk = barriers_pk(self.tenant, &spec.namespace, &ns.incarnation);
            if attempt == 0 {
                self.check_barrier_cap(&spec.namespace, self.count_barriers(&pk))
                    .await?;
            }
            if ns.barriers >= self.max_barriers {
                // Barriers gone for inactivity still count: count the live ones.
                ns.barriers = self.count_barriers(&pk).await?;
                if ns.barriers >= self.max_barriers {
                    return Err(Error::LimitExceeded {
                        limit: "barriers_per_namespace",
                        detail: format!(
                            "namespace {:?} holds {} barriers, the most it may; delete some first",
                            spec.namespace, ns.barriers
                        ),
                    });
                }
            }
            ns.barriers += 1;
            // A row past its window may still be in the store (sweeps lag): replace it.
            self.budget.spend(1)?;
            let mode = match self.kv.get(&pk, &format!("b#{}", spec.name)).await? {
                None => PutMode::Create,
                Some(item) => {
                    let old: BarrierRow =
                        serde_json::from_str(&item.value).map_err(|e| damaged("barrier", e))?;
                    if old.barrier.inactive_at_ms() > self.now_ms() {
                        return Err(Error::AlreadyExists {
                            what: "barrier".into(),
                        });
                    }
                    PutMode::Update(item.version)
                }
            };
            let now = self.now_ns();
            let row = BarrierRow {
                barrier: Barrier {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    expected_processes: spec.expected_processes,
                    arrived_processes: 0,
                    generation: 1,
                    version: 1,
                    created_at: now,
                    updated_at: now,
                    last_activity_at: now,
                    delete_inactive_after_seconds: spec.delete_inactive_after_seconds,
                    metadata: spec.metadata.clone(),
                    continue_with: spec.continue_with.clone(),
                },
                incarnation: token(),
                chain: crate::observe::chain(),
            };
            let ops = vec![
                TxOp::Put {
                    item: barrier_item(&pk, &row),
                    mode: mode.clone(),
                },
                TxOp::Put {
                    item: self.ns_item(&ns),
                    mode: Self::ns_mode(&ns_version),
                },
            ];
            self.budget.spend(1)?;
            match self.kv.transact(ops).await? {
                Ok(()) => return Ok(row.barrier),
                Err(0) if mode == PutMode::Create => {
                    return Err(Error::AlreadyExists {
                        what: "barrier".into(),
                    })
                }
                // The namespace's count, or the old row, changed meanwhile: read again.
                Err(_) => continue,
            }
        }
        Err(contended())
    }

    async fn count_barriers(&self, pk: &str) -> Result<u64> {
        let mut n = 0;
        let mut after: Option<String> = None;
        loop {
            self.budget.spend(1)?;
            let page = self.kv.query(pk, "b#", after.as_deref(), 1000).await?;
            let now = self.now_ms();
            for item in &page.items {
                let row: BarrierRow =
                    serde_json::from_str(&item.value).map_err(|e| damaged("barrier", e))?;
                n += u64::from(row.barrier.inactive_at_ms() > now);
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(n),
            }
        }
    }

    /// A barrier.
    pub async fn get(&self, ns: &str, name: &str) -> Result<Barrier> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        Ok(self.need(ns, name).await?.row.barrier)
    }

    /// A page of a namespace's barriers in name order ([`Page`]); barriers past their window
    /// are not listed.
    pub async fn list(&self, ns: &str, token: &str, limit: u64) -> Result<Page<Barrier>> {
        check_name("namespace_name", ns)?;
        check_token(token)?;
        let limit = model::page_limit(limit)?;
        let (ns_row, _) = self.need_ns(ns).await?;
        let pk = barriers_pk(self.tenant, ns, &ns_row.incarnation);
        let now = self.now_ms();
        let lister = Lister {
            kv: self.kv,
            budget: self.budget,
            pk: &pk,
            prefix: "b#",
            keep: |item: &Item| {
                let row: BarrierRow =
                    serde_json::from_str(&item.value).map_err(|e| damaged("barrier", e))?;
                Ok((row.barrier.inactive_at_ms() > now).then_some(row.barrier))
            },
        };
        lister.page(token, limit).await
    }

    /// Deletes a barrier with its participants; a missing one is fine.
    pub async fn delete(&self, ns: &str, name: &str) -> Result<()> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        for _ in 0..MAX_ATTEMPTS {
            let (mut ns_row, ns_version) = self.need_ns(ns).await?;
            let Some(found) = self.find(ns, name).await? else {
                return Ok(());
            };
            ns_row.barriers = ns_row.barriers.saturating_sub(1);
            let ops = vec![
                TxOp::Delete {
                    pk: found.pk.clone(),
                    sk: format!("b#{name}"),
                },
                TxOp::Put {
                    item: self.ns_item(&ns_row),
                    mode: Self::ns_mode(&ns_version),
                },
            ];
            self.budget.spend(1)?;
            match self.kv.transact(ops).await? {
                Ok(()) | Err(0) => {
                    notify::wake(self.tenant, ns, name, None);
                    return Ok(());
                }
                Err(_) => continue,
            }
        }
        Err(contended())
    }

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
            let (plan, planned) = arrival::Plan {
                parts_pk: found.parts_pk.clone(),
                part_sk,
                incarnation: found.row.incarnation.clone(),
                generation: expected_generation,
                participant: Participant {
                    process_id: process_id.into(),
                    generation: b.generation,
                    arrived_at: now_ms.saturating_mul(1_000_000),
                    metadata: metadata.clone(),
                },
                now_ms,
                queue_enabled: self.queue_enabled,
            }
            .into_plan();
            self.budget.spend(1)?;
            let committed = self.kv.transact_on(found.seen.clone(), plan).await?;
            let planned = planned.lock().unwrap_or_else(|p| p.into_inner()).take();
            let (found, next, tripped, continues) = match planned {
                Some(arrival::Planned::Write(w)) => {
                    let arrival::Write {
                        row,
                        item,
                        next,
                        tripped,
                        continues,
                    } = *w;
                    let found = Found {
                        row,
                        seen: item,
                        pk: found.pk,
                        parts_pk: found.parts_pk,
                    };
                    (found, next, tripped, continues)
                }
                // Tripped without this arrival (or updated to another generation): read
                // again, which tells a repeat from an arrival too late.
                Some(arrival::Planned::Moved) => continue,
                Some(arrival::Planned::Gone) => return Err(barrier_not_found()),
                None => {
                    return Err(Error::Backend {
                        backend: "rendezvous",
                        message: "the store answered an arrival without planning it".into(),
                        source: None,
                    })
                }
            };
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
                    // Another arrival (or an update) got in first (on DynamoDB: the embedded
                    // backend plans on the row it commits on): read again at once the first
                    // time (two peers that met), then after a random pause whose window
                    // doubles from 2 ms to 64 ms. Peers that read one version together all
                    // lose but one: spread out, most of them read the next version before they
                    // write.
                    if attempt > 0 {
                        let us = rand::random::<u64>() % (1000 << attempt.min(6));
                        tokio::time::sleep(Duration::from_micros(us)).await;
                    }
                }
            }
        }
        Err(contended())
    }

    fn continues(&self, b: &Barrier) -> bool {
        b.continue_with.is_some() && self.queue_enabled
    }

    /// For a transaction that trips `found`'s current generation: adds the claim on its
    /// continuation to `ops` when the barrier continues, so that the trip and the claim commit
    /// together. Whether it did.
    fn claim_continuation(&self, found: &Found, ops: &mut Vec<TxOp>) -> bool {
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
    async fn after_trip(
        &self,
        ns: &str,
        name: &str,
        found: &Found,
        next: &BarrierRow,
        continues: bool,
    ) -> Result<()> {
        notify::wake(
            self.tenant,
            ns,
            name,
            Some((&next.incarnation, &next.barrier)),
        );
        if continues {
            self.send_continuation(found, found.row.barrier.generation)
                .await?;
        }
        Ok(())
    }

    /// Sends the continuation of `generation` under the claim this call holds, and marks it
    /// sent.
    async fn send_continuation(&self, found: &Found, generation: u64) -> Result<()> {
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
    async fn continue_after(&self, found: &Found, generation: u64) -> Result<()> {
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

    async fn take_over(&self, found: &Found, generation: u64, item: &Item) -> Result<()> {
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

    /// Replaces a barrier's description, count, metadata and window if it has
    /// `expected_version`. A count equal to the arrived count trips it.
    pub async fn update(&self, spec: UpdateBarrier) -> Result<Barrier> {
        spec.validate()?;
        for _ in 0..MAX_ATTEMPTS {
            let found = self.need(&spec.namespace, &spec.name).await?;
            let b = &found.row.barrier;
            if b.version != spec.expected_version {
                return Err(Error::Precondition {
                    what: format!(
                        "expected_version {} does not match the barrier's version {}",
                        spec.expected_version, b.version
                    ),
                });
            }
            if spec.expected_processes < b.arrived_processes {
                return Err(Error::InvalidInput(format!(
                    "expected_processes {} is below arrived_processes {}; it may be lowered to {} at least, which trips the barrier",
                    spec.expected_processes, b.arrived_processes, b.arrived_processes
                )));
            }
            let mut next = found.row.clone();
            next.barrier.description = spec.description.clone();
            next.barrier.expected_processes = spec.expected_processes;
            next.barrier.metadata = spec.metadata.clone();
            next.barrier.delete_inactive_after_seconds = spec.delete_inactive_after_seconds;
            next.barrier.version += 1;
            next.barrier.updated_at = self.now_ns();
            let tripped = b.arrived_processes > 0 && spec.expected_processes == b.arrived_processes;
            if tripped {
                next.barrier.trip();
            }
            let mut ops = vec![TxOp::Put {
                item: barrier_item(&found.pk, &next),
                mode: PutMode::Update(found.seen.version.clone()),
            }];
            let continues = tripped && self.claim_continuation(&found, &mut ops);
            self.budget.spend(1)?;
            match self.kv.transact(ops).await? {
                Ok(()) => {
                    if tripped {
                        self.after_trip(&spec.namespace, &spec.name, &found, &next, continues)
                            .await?;
                    }
                    return Ok(next.barrier);
                }
                // An arrival got in first: check the version and the count again.
                Err(_) => continue,
            }
        }
        Err(contended())
    }

    /// Waits until the barrier's generation passes `expected_generation` (TRIPPED) or
    /// `timeout` passes (TIMED_OUT). Woken at once by a trip in this process; polls the store
    /// otherwise, every 100 ms doubling to 1 s.
    pub async fn wait(
        &self,
        ns: &str,
        name: &str,
        expected_generation: u64,
        timeout: Duration,
    ) -> Result<(Barrier, WaitOutcome)> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        model::check_positive("expected_generation", expected_generation)?;
        model::check_timeout(timeout.as_secs())?;
        let start = tokio::time::Instant::now();
        let until = start + timeout;
        let _parked = notify::park(self.tenant, self.max_waits)?;
        // Registered before the first read, so a trip between the read and the wait is seen.
        let mut sub = notify::subscribe(self.tenant, ns, name);
        let mut pause = POLL_FIRST;
        // The barrier a trip in this process handed over: no read needed, if it is of the
        // incarnation this wait read (not a barrier of the name deleted and made again).
        let mut handed: Option<(String, Barrier)> = None;
        let mut incarnation = String::new();
        // The barrier as last read: what a poll that the store holds past the timeout answers.
        let mut last: Option<Barrier> = None;
        loop {
            let b = match handed.take() {
                Some((i, b)) if i == incarnation => b,
                _ => {
                    // A held store never keeps a wait past its timeout (issue 50: a
                    // 3 s wait took 60 s); the first read has at least FIRST_READ.
                    let by = match last {
                        Some(_) => until,
                        None => until.max(start + FIRST_READ),
                    };
                    let found = match tokio::time::timeout_at(by, self.need(ns, name)).await {
                        Ok(found) => found?,
                        Err(_) => match last.take() {
                            Some(b) => return Ok((b, WaitOutcome::TimedOut)),
                            None => {
                                return Err(Error::Backend {
                                    backend: "kv",
                                    message: format!(
                                        "the rendezvous barrier {name:?} of namespace {ns:?} could not be read within {} s; the store is slow or unavailable: retry",
                                        (by - start).as_secs()
                                    ),
                                    source: None,
                                })
                            }
                        },
                    };
                    incarnation = found.row.incarnation;
                    found.row.barrier
                }
            };
            last = Some(b.clone());
            if b.generation > expected_generation {
                return Ok((b, WaitOutcome::Tripped));
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                return Ok((b, WaitOutcome::TimedOut));
            }
            let nap = pause.min(until - now);
            let woken = async {
                match sub.as_mut() {
                    Some(s) => s.woken().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                h = woken => handed = h,
                () = tokio::time::sleep(nap) => pause = (pause * 2).min(POLL_MAX),
                // The process is stopping: answer now rather than hold its shutdown.
                () = notify::stopping() => return Ok((b, WaitOutcome::TimedOut)),
            }
        }
    }

    /// A page of one generation's participants (0: the current one) in process_id order
    /// ([`Page`]).
    pub async fn participants(
        &self,
        ns: &str,
        name: &str,
        generation: u64,
        token: &str,
        limit: u64,
    ) -> Result<Page<Participant>> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        check_token(token)?;
        let limit = model::page_limit(limit)?;
        let found = self.need(ns, name).await?;
        let generation = if generation == 0 {
            found.row.barrier.generation
        } else {
            generation
        };
        let prefix = format!("p#{}#", gen_key(generation));
        let lister = Lister {
            kv: self.kv,
            budget: self.budget,
            pk: &found.parts_pk,
            prefix: &prefix,
            keep: |item: &Item| {
                serde_json::from_str(&item.value)
                    .map(Some)
                    .map_err(|e| damaged("participant", e))
            },
        };
        lister.page(token, limit).await
    }
}
