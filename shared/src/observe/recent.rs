//! Recent invocations, per tenant: what the operator's console shows on a tenant's invocations
//! page (script, trigger, outcome, duration, data ops, log lines, the chain), and the counts of
//! the last hour on its front page.
//!
//! Kept in one of two places. In this process's memory ([`Recent::new`]): bounded whatever
//! the tenants do, at most [`PER_TENANT`] runs per tenant, [`MAX_BYTES`] in all (past it the
//! tenant holding the most bytes loses its oldest runs first, so one busy tenant cannot push
//! the others out); the hour's counts are 60 per-minute counters per tenant; a process that
//! stops forgets. Or in a project's store ([`Recent::stored`], a [`RunStore`]), which every
//! `native` process on the project writes (`native serve`, and the verbs that run scripts:
//! `invoke`, `drain`, `put`, `partner`, ...) and the console of `native serve` reads: the
//! last [`PER_TENANT`] runs of each tenant. A verb writes each run as it ends; the server
//! holds its runs and writes them together every so often ([`Recent::stored_in_batches`]). Either way a run keeps at most [`MAX_LINES`] log
//! lines of at most [`MAX_LINE_BYTES`] and [`MAX_ERROR_BYTES`] of error.
//!
//! A run's log lines are caught on the script's thread ([`capturing`] around the run,
//! [`keep_line`] from the host's log writer), so concurrent runs never mix their lines.

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
    /// Per minute of the last hour: (minute since the epoch, runs, failed runs).
    minutes: Vec<(i64, u32, u32)>,
}

#[derive(Debug, Default)]
struct State {
    tenants: HashMap<String, Tenant>,
    bytes: usize,
}

/// Where runs are kept beyond a process: a project's store, written by every process on the
/// project at once (each write its own transaction), read by the console.
#[async_trait::async_trait]
pub trait RunStore: Send + Sync + std::fmt::Debug {
    /// Keeps `runs` (oldest first) under new `seq`s (larger than every one before, whichever
    /// process wrote them), and of each of their tenants' runs only the newest `keep`: one
    /// write for them all.
    async fn append(&self, runs: Vec<Run>, keep: usize) -> Result<()>;

    /// Up to `limit` runs of `tenant` that `filter` takes, newest first, with a `seq` below
    /// `before`; and the `seq` to pass for the next page.
    fn page(
        &self,
        tenant: &str,
        filter: &RunFilter,
        before: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<Run>, Option<u64>)>;

    /// One run of `tenant` by its `seq`, if it is still kept.
    fn get(&self, tenant: &str, seq: u64) -> Result<Option<Run>>;

    /// Runs of `tenant` started in `(from_ms, to_ms]`, and how many of them failed.
    fn count(&self, tenant: &str, from_ms: i64, to_ms: i64) -> Result<(u64, u64)>;
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

/// The recent runs of every tenant: a ring in memory, or a project's store.
#[derive(Debug, Default)]
pub struct Recent {
    state: Mutex<State>,
    seq: AtomicU64,
    store: Option<Arc<dyn RunStore>>,
    /// With a store, batching: the runs not yet written ([`Recent::flush`]).
    pending: Option<Mutex<VecDeque<Run>>>,
    dropped: AtomicU64,
}

impl Recent {
    /// An empty ring in this process's memory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Runs kept in `store`, shared with the other processes on it; each run written as it
    /// finishes (a verb's few runs).
    pub fn stored(store: Arc<dyn RunStore>) -> Self {
        Recent {
            store: Some(store),
            ..Self::default()
        }
    }

    /// [`Recent::stored`], the runs held in memory and written together by [`Recent::flush`],
    /// which the owner calls every so often and before it exits: a server's run pays a push,
    /// not a write.
    pub fn stored_in_batches(store: Arc<dyn RunStore>) -> Self {
        Recent {
            store: Some(store),
            pending: Some(Mutex::default()),
            ..Self::default()
        }
    }

    /// Writes the runs held since the last flush (batching only; a no-op otherwise).
    pub async fn flush(&self) -> Result<()> {
        let (Some(store), Some(pending)) = (&self.store, &self.pending) else {
            return Ok(());
        };
        let runs: Vec<Run> =
            std::mem::take(&mut *pending.lock().unwrap_or_else(|p| p.into_inner())).into();
        if runs.is_empty() {
            return Ok(());
        }
        store.append(runs, PER_TENANT).await
    }

    /// Runs a batching store dropped because [`MAX_PENDING`] were waiting.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Where the runs are kept, for people: "this process's memory" or "the project's store".
    pub fn kept_in(&self) -> &'static str {
        if self.store.is_some() {
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
        if let Some(e) = run.error.take() {
            run.error = Some(crate::text::cut_text(e, MAX_ERROR_BYTES));
        }
        let Some(pending) = &self.pending else {
            return store.append(vec![run], PER_TENANT).await;
        };
        let mut pending = pending.lock().unwrap_or_else(|p| p.into_inner());
        if pending.len() >= MAX_PENDING {
            pending.pop_front();
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        pending.push_back(run);
        Ok(())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new chain id, for a run at depth 0.
    pub fn new_chain() -> String {
        super::new_trace()
    }

    /// Records a finished run (its `seq` is set here), within the bounds of the module docs.
    pub fn record(&self, mut run: Run) {
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
                return;
            }
            s.tenants.insert(run.tenant.clone(), Default::default());
        }
        // Looked up rather than `entry`, which would take a copy of the name every run.
        let Some(t) = s.tenants.get_mut(&run.tenant) else {
            return;
        };
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
        t.runs.push_back(Arc::new(run));
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
        if let Some(store) = &self.store {
            let (runs, next) = store.page(tenant, filter, before, limit)?;
            return Ok((runs.into_iter().map(Arc::new).collect(), next));
        }
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
        if let Some(store) = &self.store {
            return Ok(store.get(tenant, seq)?.map(Arc::new));
        }
        let s = self.state();
        let Some(t) = s.tenants.get(tenant) else {
            return Ok(None);
        };
        let i = t.runs.binary_search_by_key(&seq, |r| r.seq).ok();
        Ok(i.and_then(|i| t.runs.get(i).cloned()))
    }

    /// Runs of `tenant` and failed ones in the hour up to `now_ms`.
    pub fn last_hour(&self, tenant: &str, now_ms: i64) -> Result<(u64, u64)> {
        if let Some(store) = &self.store {
            return store.count(tenant, now_ms - 3_600_000, now_ms);
        }
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
