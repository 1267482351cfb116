//! Recent invocations, per tenant: what the operator's console shows on a tenant's invocations
//! page (script, trigger, outcome, duration, data ops, log lines, the chain), and the counts of
//! the last hour on its front page.
//!
//! Kept in one of three ways:
//! - In this process's memory ([`Recent::new`], the Fargate server): bounded whatever the
//!   tenants do, at most [`PER_TENANT`] runs per tenant, [`MAX_BYTES`] in all (past it the
//!   tenant holding the most bytes loses its oldest runs first, so one busy tenant cannot push
//!   the others out); the hour's counts are 60 per-minute counters per tenant; a process that
//!   stops forgets.
//! - In a project's store ([`Recent::stored`], a [`RunStore`]): the verbs that run scripts
//!   (`invoke`, `drain`, `put`, `partner`, ...) write each run as it ends; the store keeps the
//!   last [`PER_TENANT`] runs of each tenant.
//! - Served ([`Recent::served`], `native serve`): the server's own runs in its memory as above,
//!   which a run pays with a push and no write; beside them the runs the project's other
//!   processes wrote to the store, which [`Recent::flush`] (every 200 ms) copies into memory;
//!   and when it stops, its own runs written to the store ([`Recent::save`]) for the next
//!   server's console. Writing every run as it ends cost a served no-op request 45 000
//!   instructions, more than the run itself (BENCHMARKS.md, instructions a request).
//!
//! Either way a run keeps at most [`MAX_LINES`] log lines of at most [`MAX_LINE_BYTES`] and
//! [`MAX_ERROR_BYTES`] of error.
//!
//! A run's log lines are caught on the script's thread ([`capturing`] around the run,
//! [`keep_line`] from the host's log writer), so concurrent runs never mix their lines.
//!
//! Beside the runs, the linked steps of chains ([`super::step`]: acks, a partner's
//! `done.json`, operators' actions), which the runtime's log sink hands over
//! ([`KeepingSteps`]), so that the console shows a chain as one timeline ([`Recent::chain`]):
//! its runs and steps in time order, a page at a time. In memory at most
//! [`STEPS_IN_MEMORY`] per tenant and [`MAX_STEP_BYTES_IN_MEMORY`] in all; in a store (served
//! too: steps are few, and a chain's may be long) the newest [`STEPS_PER_TENANT`] of each
//! tenant. A step waits in memory ([`MAX_PENDING`] at most) until the next run kept or the
//! next flush writes it: a log sink cannot wait for a write.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use crate::Result;

/// Runs kept per tenant.
pub const PER_TENANT: usize = 500;
/// Bytes kept in all (approximately: the texts of the runs).
pub const MAX_BYTES: usize = 32 * 1024 * 1024;
/// Tenants tracked; runs of further tenants are counted nowhere.
pub const MAX_TENANTS: usize = 10_000;
/// Log lines kept per run; the rest are counted.
pub const MAX_LINES: usize = 50;
/// The longest log line kept, in bytes (cut past it).
pub const MAX_LINE_BYTES: usize = 1024;
/// The longest error kept, in bytes.
pub const MAX_ERROR_BYTES: usize = 4096;

/// One finished run of a script.
#[derive(Debug, Clone, PartialEq)]
pub struct Run {
    /// Grows by one per run recorded (in this process, or in the store); newest is largest.
    pub seq: u64,
    /// The tenant.
    pub tenant: String,
    /// The script.
    pub script: String,
    /// What ran it: `invoke`, `queue` (a work message), `route` (an object's router), `object`
    /// (the script a router chose).
    pub trigger: &'static str,
    /// The chain: the id of the run at depth 0 that the work came from (its own for a root).
    pub chain: String,
    /// `ctx.depth`.
    pub depth: u32,
    /// Delivery attempt (1 first).
    pub attempt: u32,
    /// When it started, ms since the epoch.
    pub started_ms: i64,
    /// How long it took.
    pub duration_ms: f64,
    /// Backend calls it made.
    pub data_ops: u32,
    /// Why it failed; `None` when it succeeded.
    pub error: Option<String>,
    /// Its log records, as JSON lines, the first [`MAX_LINES`].
    pub logs: Vec<String>,
    /// Log records past [`MAX_LINES`], not kept.
    pub logs_dropped: u32,
}

impl Run {
    fn bytes(&self) -> usize {
        200 + self.tenant.len()
            + self.script.len()
            + self.chain.len()
            + self.error.as_ref().map_or(0, String::len)
            + self.logs.iter().map(String::len).sum::<usize>()
    }
}

/// Steps kept per tenant in a store (the newest).
pub const STEPS_PER_TENANT: usize = 100_000;
/// Steps kept per tenant in memory (the newest).
pub const STEPS_IN_MEMORY: usize = 2_000;
/// Bytes of steps kept in memory in all; past it the tenant holding the most loses its oldest.
pub const MAX_STEP_BYTES_IN_MEMORY: usize = 16 * 1024 * 1024;
/// The longest step record kept, in bytes (cut past it).
pub const MAX_STEP_BYTES: usize = 4096;

/// One linked step of a chain ([`super::step::record`]), as kept.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// Grows by one per step kept (in this process, or in the store).
    pub seq: u64,
    /// The tenant.
    pub tenant: String,
    /// The chain it is a step of.
    pub chain: String,
    /// When it happened, ms since the epoch.
    pub at_ms: i64,
    /// Made by a run of the chain itself (a wait it starts), not from outside it.
    pub inside: bool,
    /// The record as JSON, at most [`MAX_STEP_BYTES`].
    pub record: String,
}

impl Step {
    /// The step of a log record, when the record is one (`"step": true`, with its tenant and
    /// a chain in the form chains have).
    pub fn of(record: &Value) -> Option<Step> {
        if record.get("step") != Some(&Value::Bool(true)) {
            return None;
        }
        let text = |k: &str| record.get(k).and_then(Value::as_str);
        let (tenant, chain) = (text("tenant")?, text("trace")?);
        if !crate::ports::is_trace(chain) {
            return None;
        }
        Some(Step {
            seq: 0,
            tenant: tenant.to_string(),
            chain: chain.to_string(),
            at_ms: record
                .get("ts_ms")
                .and_then(Value::as_i64)
                .unwrap_or_else(crate::ports::now_ms),
            inside: record.get("link").is_none()
                && record.get("origin").and_then(|o| o.get("by")) == Some(&json!("script")),
            record: crate::text::cut_text(record.to_string(), MAX_STEP_BYTES),
        })
    }

    /// Where it stands in its chain's timeline.
    pub fn place(&self) -> Place {
        Place {
            at_ms: self.at_ms,
            rank: if self.inside {
                Place::INSIDE
            } else {
                Place::OUTSIDE
            },
            seq: self.seq,
        }
    }

    fn bytes(&self) -> usize {
        100 + self.tenant.len() + self.chain.len() + self.record.len()
    }
}

/// Where an entry stands in its chain's timeline: by time, then within one millisecond by
/// [`Place::rank`] (a step from outside the chain, then a run, then a step a run of the chain
/// made: what moves a chain from outside comes before the continuation it sends, and a run
/// comes before the waits it starts, though all often share a millisecond), then by `seq`.
/// What a page of the timeline goes on after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Place {
    /// A run's start, a step's time.
    pub at_ms: i64,
    /// [`Place::OUTSIDE`], [`Place::RUN`] or [`Place::INSIDE`].
    pub rank: u8,
    /// The run's or the step's `seq`.
    pub seq: u64,
}

impl Place {
    /// The rank of a step from outside the chain (an ack of another chain, an operator).
    pub const OUTSIDE: u8 = 0;
    /// The rank of a run.
    pub const RUN: u8 = 1;
    /// The rank of a step made by a run of the chain itself (a wait it starts).
    pub const INSIDE: u8 = 2;
    const MARKS: [char; 3] = ['o', 'r', 'i'];

    /// The place as a URL's cursor: `<at_ms><o|r|i><seq>`.
    pub fn cursor(&self) -> String {
        let mark = Self::MARKS[usize::from(self.rank.min(2))];
        format!("{}{mark}{}", self.at_ms, self.seq)
    }

    /// A cursor made by [`Place::cursor`]; `None` for anything else.
    pub fn parse(cursor: &str) -> Option<Place> {
        let at = cursor.find(Self::MARKS)?;
        let (ms, rest) = cursor.split_at(at);
        let mark = rest.chars().next()?;
        let seq = &rest[1..];
        let digits = |t: &str, max: usize| {
            !t.is_empty() && t.len() <= max && t.bytes().all(|b| b.is_ascii_digit())
        };
        let ms_digits = ms.strip_prefix('-').unwrap_or(ms);
        if !digits(ms_digits, 18) || !digits(seq, 19) {
            return None;
        }
        Some(Place {
            at_ms: ms.parse().ok()?,
            rank: Self::MARKS.iter().position(|m| *m == mark)? as u8,
            seq: seq.parse().ok()?,
        })
    }

    /// For a store's query of what comes after `place`: its time, rank and seq as SQL
    /// compares them (`(time, rank, seq) > (?, ?, ?)`; before everything without a place).
    pub fn bounds(place: Option<&Place>) -> (i64, i64, i64) {
        match place {
            None => (i64::MIN, -1, -1),
            Some(p) => (
                p.at_ms,
                i64::from(p.rank),
                p.seq.min(i64::MAX as u64) as i64,
            ),
        }
    }
}

/// One entry of a chain's timeline.
#[derive(Debug, Clone)]
pub enum Entry {
    /// A run of a script in the chain.
    Run(Arc<Run>),
    /// A linked step of the chain.
    Step(Arc<Step>),
}

impl Entry {
    /// Where it stands in the timeline.
    pub fn place(&self) -> Place {
        match self {
            Entry::Run(r) => Place {
                at_ms: r.started_ms,
                rank: Place::RUN,
                seq: r.seq,
            },
            Entry::Step(s) => s.place(),
        }
    }
}

/// Merges a page of runs and a page of steps (each of at most `limit + 1`, in their order,
/// after the same place) into the first `limit` entries, and the place the next page starts
/// after, when there is more.
fn merge(
    runs: impl IntoIterator<Item = Arc<Run>>,
    steps: impl IntoIterator<Item = Arc<Step>>,
    limit: usize,
) -> (Vec<Entry>, Option<Place>) {
    let mut all: Vec<Entry> = runs
        .into_iter()
        .map(Entry::Run)
        .chain(steps.into_iter().map(Entry::Step))
        .collect();
    all.sort_by_key(Entry::place);
    let more = all.len() > limit;
    all.truncate(limit);
    let next = more.then(|| all.last().map(Entry::place)).flatten();
    (all, next)
}

/// Which runs a page shows.
#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    /// Only runs of this chain.
    pub chain: Option<String>,
    /// Only failed runs.
    pub failed: bool,
    /// Only runs of this script.
    pub script: Option<String>,
}

impl RunFilter {
    /// Whether it takes the run.
    pub fn takes(&self, r: &Run) -> bool {
        self.chain.as_ref().is_none_or(|c| *c == r.chain)
            && (!self.failed || r.error.is_some())
            && self.script.as_ref().is_none_or(|s| *s == r.script)
    }
}

#[derive(Debug, Default)]
struct Tenant {
    runs: VecDeque<Arc<Run>>,
    bytes: usize,
    steps: VecDeque<Arc<Step>>,
    step_bytes: usize,
    /// Per minute of the last hour: (minute since the epoch, runs, failed runs).
    minutes: Vec<(i64, u32, u32)>,
}

#[derive(Debug, Default)]
struct State {
    tenants: HashMap<String, Tenant>,
    bytes: usize,
    step_bytes: usize,
    step_seq: u64,
}

/// Where runs are kept beyond a process: a project's store, written by every process on the
/// project at once (each write its own transaction), read by a server ([`Recent::served`]):
/// its runs copied into memory, its chains' steps a page at a time.
#[async_trait::async_trait]
pub trait RunStore: Send + Sync + std::fmt::Debug {
    /// Keeps `runs` (oldest first) under new `seq`s (larger than every one before, whichever
    /// process wrote them), and of each of their tenants' runs only the newest `keep`: one
    /// write for them all.
    async fn append(&self, runs: Vec<Run>, keep: usize) -> Result<()>;

    /// Up to `limit` runs of any tenant with a `seq` above `after`, oldest first (what a
    /// server copies into its memory, [`Recent::served`]).
    fn since(&self, after: u64, limit: usize) -> Result<Vec<Run>>;

    /// Keeps `steps` (oldest first) under new `seq`s, and of each of their tenants' steps only
    /// the newest `keep`: one write for them all.
    async fn append_steps(&self, steps: Vec<Step>, keep: usize) -> Result<()>;

    /// Up to `limit` steps of `tenant` in `chain` after `after`, in timeline order.
    fn chain_steps(
        &self,
        tenant: &str,
        chain: &str,
        after: Option<&Place>,
        limit: usize,
    ) -> Result<Vec<Step>>;
}

/// A run's fields besides those a store indexes (`seq`, `tenant`, `script`, `chain`,
/// `started_ms`, whether it failed), as the JSON a store keeps.
pub fn rest_of(run: &Run) -> String {
    json!({
        "trigger": run.trigger, "depth": run.depth, "attempt": run.attempt,
        "duration_ms": run.duration_ms, "data_ops": run.data_ops, "error": run.error,
        "logs": run.logs, "logs_dropped": run.logs_dropped,
    })
    .to_string()
}

/// The triggers a run may have ([`Run::trigger`]).
const TRIGGERS: [&str; 4] = ["invoke", "queue", "route", "object"];

/// A run from a store's columns and [`rest_of`]'s JSON; a field that does not read is left
/// empty rather than losing the run.
pub fn from_stored(
    seq: u64,
    tenant: String,
    script: String,
    chain: String,
    started_ms: i64,
    rest: &str,
) -> Run {
    let v: Value = serde_json::from_str(rest).unwrap_or(Value::Null);
    let int = |k: &str| u32::try_from(v[k].as_u64().unwrap_or(0)).unwrap_or(u32::MAX);
    Run {
        seq,
        tenant,
        script,
        trigger: TRIGGERS
            .into_iter()
            .find(|t| v["trigger"] == *t)
            .unwrap_or("?"),
        chain,
        depth: int("depth"),
        attempt: int("attempt"),
        started_ms,
        duration_ms: v["duration_ms"].as_f64().unwrap_or(0.0),
        data_ops: int("data_ops"),
        error: v["error"].as_str().map(str::to_string),
        logs: v["logs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|l| l.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
        logs_dropped: int("logs_dropped"),
    }
}

/// The most runs a batching [`Recent`] holds between flushes; past it the oldest are dropped
/// (counted in [`Recent::dropped`]): a store that cannot keep up costs summaries, not memory.
pub const MAX_PENDING: usize = 10_000;

/// What a served [`Recent`] keeps besides its memory.
#[derive(Debug, Default)]
struct Served {
    /// This process's runs, oldest first, for [`Recent::save`]: at most [`MAX_PENDING`] and
    /// [`MAX_BYTES`] (the runs it holds that memory no longer does count again).
    unsaved: Mutex<Unsaved>,
    /// The store's runs up to this `seq` are in memory.
    copied: Mutex<u64>,
}

/// See [`Served::unsaved`].
#[derive(Debug, Default)]
struct Unsaved {
    runs: VecDeque<Arc<Run>>,
    bytes: usize,
}

/// The most of the store's runs one [`Recent::flush`] copies into a served memory; the rest
/// come at the next.
const COPY_AT_ONCE: usize = 1_000;

/// The recent runs of every tenant: a ring in memory, a project's store, or both (served).
#[derive(Debug, Default)]
pub struct Recent {
    state: Mutex<State>,
    seq: AtomicU64,
    store: Option<Arc<dyn RunStore>>,
    /// Served ([`Recent::served`]): this process's runs not yet written to the store (at
    /// [`Recent::save`]), and the last `seq` of the store's runs copied into memory.
    served: Option<Served>,
    /// With a store: the steps not yet written (at the next run kept, or flush).
    pending_steps: Mutex<VecDeque<Step>>,
    dropped: AtomicU64,
}

impl Recent {
    /// An empty ring in this process's memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs kept in `store`, shared with the other processes on it; each run written as it
    /// finishes (a verb's few runs), none kept in memory: a server's console reads them
    /// ([`Recent::served`]).
    pub fn stored(store: Arc<dyn RunStore>) -> Self {
        Recent {
            store: Some(store),
            ..Self::default()
        }
    }

    /// A server's: its own runs in memory, the runs of the project's other processes copied
    /// from `store` by [`Recent::flush`], which the owner calls every so often (the first time
    /// before it serves), and its own written to `store` by [`Recent::save`] when it stops.
    pub fn served(store: Arc<dyn RunStore>) -> Self {
        Recent {
            store: Some(store),
            served: Some(Served::default()),
            ..Self::default()
        }
    }

    /// Writes the steps waiting for the store; served, also copies the runs the project's
    /// other processes wrote since the last flush into memory ([`COPY_AT_ONCE`] at most).
    /// A no-op in memory.
    pub async fn flush(&self) -> Result<()> {
        self.flush_steps().await?;
        let (Some(store), Some(served)) = (&self.store, &self.served) else {
            return Ok(());
        };
        let after = *served.copied.lock().unwrap_or_else(|p| p.into_inner());
        let theirs = store.since(after, COPY_AT_ONCE)?;
        if let Some(last) = theirs.last() {
            *served.copied.lock().unwrap_or_else(|p| p.into_inner()) = last.seq;
        }
        for run in theirs {
            self.record(run);
        }
        Ok(())
    }

    /// Served: writes this process's runs (of each tenant the newest [`PER_TENANT`]) and the
    /// waiting steps to the store, for the console of the project's next server; what it
    /// wrote is not written again. A [`Recent::flush`] otherwise.
    pub async fn save(&self) -> Result<()> {
        let Some(served) = &self.served else {
            return self.flush().await;
        };
        self.flush_steps().await?;
        let Some(store) = &self.store else {
            return Ok(());
        };
        let mine: Vec<Arc<Run>> =
            std::mem::take(&mut *served.unsaved.lock().unwrap_or_else(|p| p.into_inner()))
                .runs
                .into();
        // Only the newest of each tenant would stay: the older are not written at all.
        let mut per: HashMap<&str, usize> = HashMap::new();
        let mut newest: Vec<Run> = Vec::new();
        for run in mine.iter().rev() {
            let n = per.entry(run.tenant.as_str()).or_default();
            if *n < PER_TENANT {
                *n += 1;
                newest.push(Run::clone(run));
            }
        }
        newest.reverse();
        if newest.is_empty() {
            return Ok(());
        }
        store.append(newest, PER_TENANT).await
    }

    /// Writes the steps waiting for a store (a no-op in memory, or with none waiting).
    async fn flush_steps(&self) -> Result<()> {
        let Some(store) = &self.store else {
            return Ok(());
        };
        let steps: Vec<Step> =
            std::mem::take(&mut *self.pending_steps.lock().unwrap_or_else(|p| p.into_inner()))
                .into();
        if steps.is_empty() {
            return Ok(());
        }
        store.append_steps(steps, STEPS_PER_TENANT).await
    }

    /// Keeps a step of a chain where this keeps runs: at once in memory; in a store at the
    /// next run kept or flush (at most [`MAX_PENDING`] wait; past it the oldest are dropped and
    /// counted in [`Recent::dropped`]).
    pub fn keep_step(&self, mut step: Step) {
        if self.store.is_some() {
            let mut pending = self.pending_steps.lock().unwrap_or_else(|p| p.into_inner());
            if pending.len() >= MAX_PENDING {
                pending.pop_front();
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            pending.push_back(step);
            return;
        }
        let size = step.bytes();
        let mut s = self.state();
        s.step_seq += 1;
        step.seq = s.step_seq;
        if !s.tenants.contains_key(&step.tenant) {
            if s.tenants.len() >= MAX_TENANTS {
                return;
            }
            s.tenants.insert(step.tenant.clone(), Default::default());
        }
        let Some(t) = s.tenants.get_mut(&step.tenant) else {
            return;
        };
        t.steps.push_back(Arc::new(step));
        t.step_bytes += size;
        let mut freed = 0;
        while t.steps.len() > STEPS_IN_MEMORY {
            if let Some(old) = t.steps.pop_front() {
                t.step_bytes -= old.bytes();
                freed += old.bytes();
            }
        }
        s.step_bytes = s.step_bytes + size - freed;
        while s.step_bytes > MAX_STEP_BYTES_IN_MEMORY {
            let Some(big) = s
                .tenants
                .values_mut()
                .filter(|t| !t.steps.is_empty())
                .max_by_key(|t| t.step_bytes)
            else {
                break;
            };
            let b = big.steps.pop_front().map_or(0, |r| r.bytes());
            big.step_bytes -= b;
            s.step_bytes -= b;
        }
    }

    /// Up to `limit` entries of `tenant`'s chain `chain` (its runs and its steps) after
    /// `after`, in time order; and the place the next page starts after. Reads at most
    /// `limit + 1` runs and as many steps, however long the chain.
    pub fn chain(
        &self,
        tenant: &str,
        chain: &str,
        after: Option<&Place>,
        limit: usize,
    ) -> Result<(Vec<Entry>, Option<Place>)> {
        let later = |p: Place| after.is_none_or(|a| p > *a);
        // The rings are bounded ([`PER_TENANT`], [`STEPS_IN_MEMORY`]): what is read is too.
        let runs: Vec<Arc<Run>> = self.state().tenants.get(tenant).map_or_else(Vec::new, |t| {
            t.runs
                .iter()
                .filter(|r| {
                    r.chain == chain
                        && later(Place {
                            at_ms: r.started_ms,
                            rank: Place::RUN,
                            seq: r.seq,
                        })
                })
                .cloned()
                .collect()
        });
        let steps: Vec<Arc<Step>> = match &self.store {
            // Served: the steps are in the store.
            Some(store) => store
                .chain_steps(tenant, chain, after, limit + 1)?
                .into_iter()
                .map(Arc::new)
                .collect(),
            None => self.state().tenants.get(tenant).map_or_else(Vec::new, |t| {
                t.steps
                    .iter()
                    .filter(|x| x.chain == chain && later(x.place()))
                    .cloned()
                    .collect()
            }),
        };
        Ok(merge(runs, steps, limit))
    }

    /// A server's own runs (not saved) and steps (of any store) dropped because
    /// [`MAX_PENDING`] were waiting.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Where the runs are kept, for people: "this process's memory" or "the project's store".
    pub fn kept_in(&self) -> &'static str {
        if self.served.is_some() {
            "this server's memory, with the runs of the project's other native processes \
             (the server writes its own to the project's store when it stops)"
        } else if self.store.is_some() {
            "the project's store (every native process on the project adds its runs)"
        } else {
            "this process's memory"
        }
    }

    /// Keeps a finished run where this keeps runs ([`Recent::record`] in memory).
    pub async fn keep(&self, mut run: Run) -> Result<()> {
        let Some(store) = &self.store else {
            self.record(run);
            return Ok(());
        };
        if let Some(served) = &self.served {
            // Kept in memory at once, written when the server stops.
            let Some(run) = self.record(run) else {
                return Ok(());
            };
            let mut unsaved = served.unsaved.lock().unwrap_or_else(|p| p.into_inner());
            unsaved.bytes += run.bytes();
            unsaved.runs.push_back(run);
            while unsaved.runs.len() > MAX_PENDING || unsaved.bytes > MAX_BYTES {
                let Some(old) = unsaved.runs.pop_front() else {
                    break;
                };
                unsaved.bytes -= old.bytes();
                self.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return Ok(());
        }
        if let Some(e) = run.error.take() {
            run.error = Some(crate::text::cut_text(e, MAX_ERROR_BYTES));
        }
        // The steps the run made go with it.
        self.flush_steps().await?;
        store.append(vec![run], PER_TENANT).await
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new chain id, for a run at depth 0.
    pub fn new_chain() -> String {
        super::new_trace()
    }

    /// Records a finished run in memory (its `seq` is set here), within the bounds of the
    /// module docs; the run as kept, unless its tenant is past [`MAX_TENANTS`].
    pub fn record(&self, mut run: Run) -> Option<Arc<Run>> {
        run.seq = self.seq.fetch_add(1, Ordering::Relaxed) + 1;
        if let Some(e) = run.error.take() {
            run.error = Some(crate::text::cut_text(e, MAX_ERROR_BYTES));
        }
        let minute = run.started_ms.div_euclid(60_000);
        let failed = run.error.is_some();
        let size = run.bytes();
        let mut s = self.state();
        if !s.tenants.contains_key(&run.tenant) {
            if s.tenants.len() >= MAX_TENANTS {
                return None;
            }
            s.tenants.insert(run.tenant.clone(), Default::default());
        }
        // Looked up rather than `entry`, which would take a copy of the name every run.
        let t = s.tenants.get_mut(&run.tenant)?;
        match t.minutes.iter_mut().find(|m| m.0 == minute) {
            Some(m) => {
                m.1 += 1;
                m.2 += u32::from(failed);
            }
            None => {
                t.minutes.retain(|m| m.0 > minute - 60);
                t.minutes.push((minute, 1, u32::from(failed)));
            }
        }
        let run = Arc::new(run);
        t.runs.push_back(run.clone());
        t.bytes += size;
        let mut freed = 0;
        while t.runs.len() > PER_TENANT {
            if let Some(old) = t.runs.pop_front() {
                let b = old.bytes();
                t.bytes -= b;
                freed += b;
            }
        }
        s.bytes = s.bytes + size - freed;
        while s.bytes > MAX_BYTES {
            // The tenant that holds the most gives up its oldest run.
            let Some(big) = s
                .tenants
                .iter_mut()
                .filter(|(_, t)| !t.runs.is_empty())
                .max_by_key(|(_, t)| t.bytes)
                .map(|(_, t)| t)
            else {
                break;
            };
            let b = big.runs.pop_front().map_or(0, |r| r.bytes());
            big.bytes -= b;
            s.bytes -= b;
        }
        Some(run)
    }

    /// The tenants with runs recorded in memory ([`Recent::new`]), sorted.
    pub fn tenants(&self) -> Vec<String> {
        let mut out: Vec<String> = self.state().tenants.keys().cloned().collect();
        out.sort();
        out
    }

    /// Up to `limit` runs of `tenant` that `filter` takes, newest first, older than the run
    /// `before` (a `seq`); and the `seq` to pass for the next page.
    pub fn runs(
        &self,
        tenant: &str,
        filter: &RunFilter,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<Arc<Run>>, Option<u64>)> {
        let s = self.state();
        let Some(t) = s.tenants.get(tenant) else {
            return Ok((Vec::new(), None));
        };
        let mut out = Vec::new();
        let mut more = false;
        for r in t.runs.iter().rev() {
            if before.is_some_and(|b| r.seq >= b) || !filter.takes(r) {
                continue;
            }
            if out.len() == limit {
                more = true;
                break;
            }
            out.push(r.clone());
        }
        let next = more.then(|| out.last().map(|r| r.seq)).flatten();
        Ok((out, next))
    }

    /// One run of `tenant` by its `seq`, if it is still kept.
    pub fn run(&self, tenant: &str, seq: u64) -> Result<Option<Arc<Run>>> {
        let s = self.state();
        let Some(t) = s.tenants.get(tenant) else {
            return Ok(None);
        };
        let i = t.runs.binary_search_by_key(&seq, |r| r.seq).ok();
        Ok(i.and_then(|i| t.runs.get(i).cloned()))
    }

    /// Runs of `tenant` and failed ones in the hour up to `now_ms`.
    pub fn last_hour(&self, tenant: &str, now_ms: i64) -> Result<(u64, u64)> {
        let minute = now_ms.div_euclid(60_000);
        let s = self.state();
        let Some(t) = s.tenants.get(tenant) else {
            return Ok((0, 0));
        };
        Ok(t.minutes
            .iter()
            .filter(|m| m.0 > minute - 60 && m.0 <= minute)
            .fold((0, 0), |(n, f), m| (n + u64::from(m.1), f + u64::from(m.2))))
    }

    /// Bytes held now (for tests of the bound).
    pub fn bytes(&self) -> usize {
        self.state().bytes
    }

    /// Bytes of a server's runs held for [`Recent::save`] (for tests of the bound).
    pub fn unsaved_bytes(&self) -> usize {
        self.served.as_ref().map_or(0, |s| {
            s.unsaved.lock().unwrap_or_else(|p| p.into_inner()).bytes
        })
    }
}

/// The log lines a run wrote on its thread.
#[derive(Debug, Default)]
pub struct Captured {
    /// JSON lines, the first [`MAX_LINES`], each cut to [`MAX_LINE_BYTES`].
    pub lines: Vec<String>,
    /// How many more there were.
    pub dropped: u32,
}

thread_local! {
    static CAPTURE: RefCell<Option<Captured>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread with its log records ([`keep_line`]) caught.
pub fn capturing<R>(f: impl FnOnce() -> R) -> (R, Captured) {
    let before = CAPTURE.with(|c| c.replace(Some(Captured::default())));
    let out = f();
    let caught = CAPTURE.with(|c| c.replace(before)).unwrap_or_default();
    (out, caught)
}

/// Keeps a log record of the run on this thread, if one is being caught (a no-op otherwise).
pub fn keep_line(record: &Value) {
    CAPTURE.with(|c| {
        if let Some(cap) = c.borrow_mut().as_mut() {
            if cap.lines.len() < MAX_LINES {
                cap.lines
                    .push(crate::text::cut_text(record.to_string(), MAX_LINE_BYTES));
            } else {
                cap.dropped += 1;
            }
        }
    });
}

/// A log sink that also keeps every step record ([`Step::of`]) in `recent`: what the runtime's
/// sink becomes when it records runs (the runtime's `with_recent`), so that each
/// place that records a step (the host's acks, callbacks, the console, a partner's
/// `done.json`) reaches the console's timeline through the one sink it writes to.
#[derive(Debug)]
pub struct KeepingSteps {
    /// Where every record goes.
    pub inner: Arc<dyn super::LogSink>,
    /// Where steps are kept besides.
    pub recent: Arc<Recent>,
}

impl super::LogSink for KeepingSteps {
    fn write(&self, record: &Value) {
        if let Some(step) = Step::of(record) {
            self.recent.keep_step(step);
        }
        self.inner.write(record);
    }

    fn write_json(&self, text: String, record: &dyn Fn() -> Value) {
        // The records written as text are the access log's, never steps.
        self.inner.write_json(text, record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(tenant: &str, script: &str, at: i64, error: Option<&str>, log_bytes: usize) -> Run {
        Run {
            seq: 0,
            tenant: tenant.into(),
            script: script.into(),
            trigger: "invoke",
            chain: "c1".into(),
            depth: 0,
            attempt: 1,
            started_ms: at,
            duration_ms: 1.0,
            data_ops: 0,
            error: error.map(str::to_string),
            logs: vec!["x".repeat(log_bytes)],
            logs_dropped: 0,
        }
    }

    #[test]
    fn runs_page_newest_first_and_the_hour_is_counted() {
        let r = Recent::new();
        for i in 0..7 {
            let err = (i % 3 == 0).then_some("boom");
            r.record(run("acme", "s", 3_600_000 + i * 1000, err, 10));
        }
        r.record(run("globex", "s", 3_600_000, None, 10));
        let (page, next) = r.runs("acme", &RunFilter::default(), None, 3).unwrap();
        assert_eq!(page.iter().map(|r| r.seq).collect::<Vec<_>>(), [7, 6, 5]);
        let (page, next) = r.runs("acme", &RunFilter::default(), next, 3).unwrap();
        assert_eq!(page.iter().map(|r| r.seq).collect::<Vec<_>>(), [4, 3, 2]);
        let (page, next) = r.runs("acme", &RunFilter::default(), next, 3).unwrap();
        assert_eq!(page.iter().map(|r| r.seq).collect::<Vec<_>>(), [1]);
        assert_eq!(next, None);
        let failed = RunFilter {
            failed: true,
            ..Default::default()
        };
        assert_eq!(r.runs("acme", &failed, None, 10).unwrap().0.len(), 3);
        assert_eq!(r.last_hour("acme", 3_610_000).unwrap(), (7, 3));
        assert_eq!(r.last_hour("acme", 3_610_000 + 3_600_000).unwrap(), (0, 0));
        assert_eq!(r.run("acme", 4).unwrap().unwrap().seq, 4);
        assert_eq!(r.tenants(), ["acme", "globex"]);
    }

    #[test]
    fn memory_stays_bounded_and_a_busy_tenant_loses_its_own_runs_first() {
        let r = Recent::new();
        r.record(run("quiet", "s", 0, None, 100));
        // Past the per-tenant count, the oldest go.
        for i in 0..(PER_TENANT + 10) {
            r.record(run("busy", "s", i as i64, None, 10));
        }
        assert_eq!(
            r.runs("busy", &RunFilter::default(), None, 10_000)
                .unwrap()
                .0
                .len(),
            PER_TENANT
        );
        // Past the byte bound, the biggest tenant gives way, the quiet one keeps its run.
        for i in 0..100 {
            r.record(run("busy", "s", i, None, 1024 * 1024));
        }
        assert!(r.bytes() <= MAX_BYTES, "{}", r.bytes());
        assert_eq!(
            r.runs("quiet", &RunFilter::default(), None, 10)
                .unwrap()
                .0
                .len(),
            1
        );
    }

    fn step(tenant: &str, chain: &str, at: i64, msg: &str) -> Step {
        Step::of(&json!({
            "ts_ms": at, "tenant": tenant, "trace": chain, "step": true, "msg": msg,
        }))
        .unwrap()
    }

    /// Every entry of `tenant`'s chain, a page of `limit` at a time, as (what, place).
    fn pages(r: &Recent, tenant: &str, chain: &str, limit: usize) -> Vec<String> {
        let mut all = Vec::new();
        let mut after = None;
        loop {
            let (page, next) = r.chain(tenant, chain, after.as_ref(), limit).unwrap();
            assert!(page.len() <= limit);
            all.extend(page.iter().map(|e| {
                match e {
                    Entry::Run(r) => r.script.clone(),
                    Entry::Step(s) => serde_json::from_str::<Value>(&s.record).unwrap()["msg"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                }
            }));
            match next {
                Some(n) => after = Some(n),
                None => return all,
            }
        }
    }

    #[test]
    fn a_chain_reads_as_its_runs_and_steps_in_time_order_a_page_at_a_time() {
        // GIVEN runs and steps of two chains of acme, and of the same chain id in globex
        let r = Recent::new();
        let mut order = run("acme", "order", 1_000, None, 1);
        order.chain = "a".repeat(32);
        let mut fulfil = run("acme", "fulfil", 3_000, None, 1);
        fulfil.chain = "a".repeat(32);
        let mut other = run("acme", "other", 2_000, None, 1);
        other.chain = "b".repeat(32);
        let mut theirs = run("globex", "theirs", 2_000, None, 1);
        theirs.chain = "a".repeat(32);
        // (the continuation is recorded first: runs are recorded as they end)
        r.record(fulfil);
        r.record(order);
        r.record(other);
        r.record(theirs);
        r.keep_step(step("acme", &"a".repeat(32), 2_000, "p1 acked"));
        r.keep_step(step("acme", &"a".repeat(32), 2_500, "p2 acked"));
        // (released in the millisecond its continuation starts: the step comes first)
        r.keep_step(step("acme", &"a".repeat(32), 3_000, "operator acked"));
        r.keep_step(step("globex", &"a".repeat(32), 2_600, "not acme's"));
        // WHEN acme's chain is read a page of 1, 2 and 10 at a time THEN it reads in time order,
        // without the other chain or the other tenant
        let want = ["order", "p1 acked", "p2 acked", "operator acked", "fulfil"];
        for limit in [1, 2, 10] {
            assert_eq!(pages(&r, "acme", &"a".repeat(32), limit), want, "{limit}");
        }
        assert_eq!(
            pages(&r, "globex", &"a".repeat(32), 10),
            ["theirs", "not acme's"]
        );
        assert!(pages(&r, "initech", &"a".repeat(32), 10).is_empty());
        // AND a record that is not a step, or names no chain of ours, is not one
        assert!(Step::of(&json!({ "tenant": "acme", "trace": "a", "msg": "x" })).is_none());
        assert!(Step::of(&json!({ "step": true, "tenant": "acme", "trace": "../x" })).is_none());
        assert!(Step::of(&json!({ "step": true, "trace": "abc" })).is_none());
    }

    #[test]
    fn steps_in_memory_stay_bounded() {
        let r = Recent::new();
        for i in 0..(STEPS_IN_MEMORY + 10) {
            r.keep_step(step("busy", &"c".repeat(32), i as i64, "s"));
        }
        let (page, _) = r.chain("busy", &"c".repeat(32), None, 100_000).unwrap();
        assert_eq!(page.len(), STEPS_IN_MEMORY);
        // Past the byte bound, the tenant holding the most loses its oldest steps first.
        r.keep_step(step("quiet", &"c".repeat(32), 0, "kept"));
        let big = "x".repeat(MAX_STEP_BYTES - 200);
        for i in 0..(MAX_STEP_BYTES_IN_MEMORY / MAX_STEP_BYTES * 2) {
            r.keep_step(step(&format!("t{}", i % 3), &"c".repeat(32), 0, &big));
        }
        let held = r.state().step_bytes;
        assert!(held <= MAX_STEP_BYTES_IN_MEMORY, "{held}");
        assert_eq!(pages(&r, "quiet", &"c".repeat(32), 10), ["kept"]);
    }

    #[test]
    fn lines_are_caught_on_the_running_thread_only_and_bounded() {
        keep_line(&serde_json::json!({ "msg": "outside" }));
        let ((), caught) = capturing(|| {
            for i in 0..(MAX_LINES + 5) {
                keep_line(&serde_json::json!({ "msg": "x".repeat(5000), "i": i }));
            }
        });
        assert_eq!(caught.lines.len(), MAX_LINES);
        assert_eq!(caught.dropped, 5);
        assert!(caught.lines.iter().all(|l| l.len() <= MAX_LINE_BYTES + 64));
        let ((), none) = capturing(|| {});
        assert!(none.lines.is_empty());
    }
}
