//! Schedules: a tenant's script run every interval or on a cron (`"schedules"` in its config,
//! [`crate::config::schedule`]). A periodic tick (the `tick` Lambda every minute, `native serve`
//! and `native drain` locally) looks at each schedule's state row and sends a work message for
//! each due slot to the script's `on_queue`, with `ev = { schedule, at_ms, missed, event }`.
//!
//! | partition | sort key | what |
//! | --- | --- | --- |
//! | `s#<tenant>` | `<schedule>` | its [`State`]: the next slot, the operator's pause, the outbox |
//! | `s#<tenant>` | `<schedule>#run` | its [`Runs`]: the last run's outcome, written by the runtime |
//!
//! **One run per slot.** A tick claims the due slots with one conditional write of the state row
//! (its version, or create when new) that moves [`State::next_ms`] past them: two ticks racing
//! for one slot cannot both write, and the loser sends nothing.
//!
//! **At least once under crashes: claim, then send.** That same write puts the slots' runs in
//! the row's outbox with a lease ([`LEASE_MS`]); the tick then sends them and takes them out of
//! the outbox. A tick that dies between the claim and the send (or before taking them out)
//! leaves them there; once the lease lapses the next tick claims the outbox again and sends
//! them: a slot is never lost, and runs twice only when a tick dies after sending.
//!
//! **Missed slots.** Slots that fell while nothing ticked (a stopped `native serve`, a disabled
//! tick function) run as one, the latest, whose `missed` counts the others (at most
//! [`LOOKBACK_MS`] back); with `catch_up: "all"` each runs, at most the tenant's `max_sends` per
//! tick. **Overlap.** A slot falls while the previous slot's run is still retrying (its message
//! not yet run, or failed with receives left, for at most [`RUN_GIVE_UP_MS`]) is skipped, and
//! the next run counts it in `missed`, unless `overlap: "allow"`.
//!
//! **Pause.** A schedule runs nothing while it is paused in its config or by an operator
//! ([`Schedules::pause`]). The operator's pause lives in the state row, not the config: a
//! reload or a deploy of the config leaves it until [`Schedules::resume`]. Slots that fall while
//! paused are passed over, not caught up. A changed `every`/`cron`/`tz` starts again from the
//! next slot.

mod state;

pub use state::{Fire, LastRun, Runs, State};

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU32, Ordering};

use futures_util::stream::{self, StreamExt};
use serde::Serialize;
use serde_json::json;

use crate::config::schedule::{CatchUp, Overlap, Schedule};
use crate::config::Tenant;
use crate::ports::{
    now_ms, Item, KvStore, NewItem, PutMode, Queue, QueueKind, Slot, WorkMessage, MAX_DELAY_S,
    MAX_RECEIVES,
};
use crate::tenants::TenantSource;
use crate::{Error, Result};

/// How long a tick holds the outbox it claimed before another may send it again.
pub const LEASE_MS: i64 = 60_000;
/// How far back missed slots are counted: a schedule that did not tick for longer runs once,
/// and its `missed` counts the slots of the last week.
pub const LOOKBACK_MS: i64 = 7 * 86_400_000;
/// How long after its slot a run that never said how it ended counts as still running, for
/// the overlap rule: a message's five receives a visibility timeout apart, and more.
pub const RUN_GIVE_UP_MS: i64 = 3_600_000;
/// The most slots one backfill sends.
pub const MAX_BACKFILL: usize = 500;
/// A state row outlives its last write by this long (a schedule removed from the config leaves
/// its row, which then expires).
const KEEP_S: i64 = 400 * 86_400;
/// How often a read-modify-write of a row is tried when others write it meanwhile.
const TRIES: usize = 8;

/// The partition of a tenant's schedule rows.
pub fn pk(tenant: &str) -> String {
    format!("s#{tenant}")
}

fn runs_sk(name: &str) -> String {
    format!("{name}#run")
}

/// What a tick did.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct TickReport {
    /// Tenants with schedules that were looked at.
    pub tenants: u32,
    /// Runs sent.
    pub fired: u32,
    /// Slots skipped because the previous slot's run was still retrying.
    pub skipped: u32,
    /// Backend calls made (listing and loading tenants not counted).
    pub calls: u32,
    /// Tenants or schedules that failed, with why (the others were still ticked).
    pub errors: Vec<String>,
}

/// How a tick runs.
#[derive(Debug, Clone, Copy)]
pub struct TickOptions {
    /// The tick's now.
    pub now_ms: i64,
    /// Also claim slots due up to this long after now, sent with the queue's delay: the
    /// interval of a periodic tick (at most 900 s).
    pub horizon_ms: i64,
    /// When the tick stops (what is left waits for the next tick).
    pub stop_at: std::time::Instant,
}

impl TickOptions {
    /// Local ticks: now, no horizon.
    pub fn local() -> Self {
        TickOptions {
            now_ms: now_ms(),
            horizon_ms: 0,
            stop_at: std::time::Instant::now() + std::time::Duration::from_secs(300),
        }
    }

    /// The periodic tick on AWS: [`crate::deadline::TICK_EVERY`]'s horizon, stopping at
    /// `stop_at` ([`crate::deadline::tick_end`]), the end the timers' tick of the same run shares.
    pub fn every_minute(stop_at: std::time::Instant) -> Self {
        TickOptions {
            horizon_ms: crate::deadline::TICK_EVERY.as_millis() as i64,
            stop_at,
            ..Self::local()
        }
    }
}

/// Ticks the schedules of every tenant `tenants` lists; a tenant whose schedules fail to tick is
/// reported and the others still ticked (a listing that fails is reported too: the timers the
/// same tick fires do not wait on it).
pub async fn tick(
    tenants: &dyn TenantSource,
    kv: &dyn KvStore,
    queue: &dyn Queue,
    opts: TickOptions,
) -> TickReport {
    let mut report = TickReport::default();
    let names = match tenants.list().await {
        Ok(names) => names,
        Err(e) => {
            report.errors.push(format!("listing the tenants: {e}"));
            return report;
        }
    };
    // Tenants a few at a time: one after another, a tick at 5 to 10 ms a call sends 1 500 to
    // 3 000 slots in its 45 s (BENCHMARKS.md, the schedules' tick). `buffered` keeps the
    // reports in the listing's order.
    let per_tenant = stream::iter(names)
        .map(|name| async move {
            let mut report = TickReport::default();
            if std::time::Instant::now() > opts.stop_at {
                return report;
            }
            // A tenant that does not load (a config being fixed) is passed over without a
            // word: its error is said by whatever runs it, and a drain pass every 100 ms would
            // repeat it. Its slots wait, and run as missed ones once it loads.
            let Ok(t) = tenants.load(&name).await else {
                return report;
            };
            if t.config.schedules.is_empty() {
                return report;
            }
            report.tenants = 1;
            let s = Schedules::new(kv, queue, &t);
            s.tick(opts, &mut report).await;
            report.calls += s.calls();
            report
        })
        .buffered(TENANTS_AT_ONCE);
    let mut per_tenant = std::pin::pin!(per_tenant);
    while let Some(one) = per_tenant.next().await {
        report.tenants += one.tenants;
        report.fired += one.fired;
        report.skipped += one.skipped;
        report.calls += one.calls;
        report.errors.extend(one.errors);
    }
    report
}

/// How many tenants a tick works on at once: enough to send 10 000 slots in a minute at 10 ms a
/// backend call, few enough that one tick is a small share of a tenant's table's capacity.
pub const TENANTS_AT_ONCE: usize = 16;

/// A schedule as `native schedules` and the console show it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Info {
    /// Its name.
    pub name: String,
    /// Its script.
    pub script: String,
    /// `every 5m`, `cron 0 2 * * * tz Europe/Paris`.
    pub when: String,
    /// The next slot that runs, in ms since the epoch (none: a cron with no slot ahead).
    pub next_ms: Option<i64>,
    /// Paused in the config.
    pub paused_in_config: bool,
    /// Paused by an operator.
    pub paused: bool,
    /// The last run and its outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last: Option<LastRun>,
}

/// One tenant's schedules over the key-value table and the work queue.
pub struct Schedules<'a> {
    kv: &'a dyn KvStore,
    queue: &'a dyn Queue,
    tenant: &'a Tenant,
    calls: AtomicU32,
}

impl<'a> Schedules<'a> {
    /// The schedules of `tenant`.
    pub fn new(kv: &'a dyn KvStore, queue: &'a dyn Queue, tenant: &'a Tenant) -> Self {
        Schedules {
            kv,
            queue,
            tenant,
            calls: AtomicU32::new(0),
        }
    }

    /// Backend calls made so far.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::Relaxed)
    }

    fn call(&self) {
        self.calls.fetch_add(1, Ordering::Relaxed);
    }

    fn schedule(&self, name: &str) -> Result<&'a Schedule> {
        self.tenant
            .config
            .schedules
            .get(name)
            .ok_or_else(|| Error::NotFound {
                what: format!("schedule {name:?} of tenant {:?}", self.tenant.name),
                hint: format!(
                    "{}the tenant's config.json has {}",
                    crate::text::suggest::did_you_mean(
                        name,
                        self.tenant.config.schedules.keys().map(String::as_str)
                    ),
                    if self.tenant.config.schedules.is_empty() {
                        "no schedules".to_string()
                    } else {
                        self.tenant
                            .config
                            .schedules
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                ),
                missing: crate::error::Missing::Other,
            })
    }

    /// Every row of the tenant's schedules: states and runs by schedule name.
    async fn rows(&self) -> Result<(BTreeMap<String, Item>, BTreeMap<String, Runs>)> {
        let (mut states, mut runs) = (BTreeMap::new(), BTreeMap::new());
        let mut after: Option<String> = None;
        loop {
            self.call();
            let page = self
                .kv
                .query(&pk(&self.tenant.name), "", after.as_deref(), 1000)
                .await?;
            for it in page.items {
                match it.sk.strip_suffix("#run") {
                    Some(name) => {
                        runs.insert(name.to_string(), Runs::of(&it));
                    }
                    None => {
                        states.insert(it.sk.clone(), it);
                    }
                }
            }
            match page.next {
                Some(n) => after = Some(n),
                None => return Ok((states, runs)),
            }
        }
    }

    /// Ticks every schedule of the tenant, adding to `report`.
    pub async fn tick(&self, opts: TickOptions, report: &mut TickReport) {
        let (states, runs) = match self.rows().await {
            Ok(r) => r,
            Err(e) => {
                report
                    .errors
                    .push(format!("tenant {:?}: {e}", self.tenant.name));
                return;
            }
        };
        for (name, s) in &self.tenant.config.schedules {
            let ran = self
                .tick_one(name, s, states.get(name), runs.get(name), opts, report)
                .await;
            if let Err(e) = ran {
                report.errors.push(format!(
                    "tenant {:?}, schedule {name:?}: {e}",
                    self.tenant.name
                ));
            }
        }
    }

    async fn tick_one(
        &self,
        name: &str,
        s: &Schedule,
        item: Option<&Item>,
        runs: Option<&Runs>,
        opts: TickOptions,
        report: &mut TickReport,
    ) -> Result<()> {
        let now = opts.now_ms;
        let until = now + opts.horizon_ms.clamp(0, i64::from(MAX_DELAY_S) * 1000);
        let mut version = item.map(|i| i.version.clone());
        let mut st = item.map(State::of).unwrap_or_default();
        // An outbox whose tick died before emptying it: send it again.
        if !st.outbox.is_empty() {
            if st.claim_until_ms > now {
                return Ok(());
            }
            st.claim_until_ms = now + LEASE_MS;
            let Some(v) = self.write(name, &st, version.as_deref()).await? else {
                return Ok(());
            };
            let fires = st.outbox.clone();
            report.fired += self.send(name, s, &fires, now).await?;
            let (v, fresh) = self.take_out_at(name, st, &v, &fires).await?;
            (version, st) = (Some(v), fresh);
        }
        // New, or its slots changed in the config: start from the next slot.
        let spec = s.spec();
        if st.spec != spec || st.next_ms == 0 {
            st.spec = spec;
            st.next_ms = s.when.next_after(now).unwrap_or(i64::MAX);
            st.skipped = 0;
            self.write(name, &st, version.as_deref()).await?;
            return Ok(());
        }
        if st.next_ms > until {
            return Ok(());
        }
        let cap = match s.catch_up {
            CatchUp::Latest => usize::MAX,
            CatchUp::All => self.tenant.config.limits.max_sends.max(1) as usize,
        };
        let due = due_slots(s, st.next_ms, until, cap);
        let Some(&last) = due.last() else {
            st.next_ms = s.when.next_after(until).unwrap_or(i64::MAX);
            self.write(name, &st, version.as_deref()).await?;
            return Ok(());
        };
        let after_due = s.when.next_after(last).unwrap_or(i64::MAX);
        if s.paused || st.paused {
            st.next_ms = after_due;
            self.write(name, &st, version.as_deref()).await?;
            return Ok(());
        }
        let missed = due.len() as u64 - 1;
        if s.overlap == Overlap::Skip && still_running(&st, runs, now) {
            st.skipped += missed + 1;
            st.next_ms = after_due;
            if self.write(name, &st, version.as_deref()).await?.is_some() {
                report.skipped += (missed + 1) as u32;
            }
            return Ok(());
        }
        let fires: Vec<Fire> = match s.catch_up {
            CatchUp::Latest => vec![Fire {
                at_ms: last,
                missed: missed + st.skipped,
                manual: false,
            }],
            CatchUp::All => due
                .iter()
                .enumerate()
                .map(|(i, &at_ms)| Fire {
                    at_ms,
                    missed: if i == 0 { st.skipped } else { 0 },
                    manual: false,
                })
                .collect(),
        };
        st.skipped = 0;
        st.next_ms = after_due;
        st.last_ms = Some(last);
        self.claim_and_send(name, s, st, version.as_deref(), fires, now, report)
            .await
    }

    /// Writes `fires` into the outbox of `st` (at `version`) with a lease, sends them and takes
    /// them out: the claim that makes a slot run once, and the outbox that makes it run at
    /// least once. A claim that loses to another writer sends nothing.
    #[allow(clippy::too_many_arguments)]
    async fn claim_and_send(
        &self,
        name: &str,
        s: &Schedule,
        mut st: State,
        version: Option<&str>,
        fires: Vec<Fire>,
        now: i64,
        report: &mut TickReport,
    ) -> Result<()> {
        st.outbox.extend(fires.iter().cloned());
        st.claim_until_ms = now + LEASE_MS;
        let Some(v) = self.write(name, &st, version).await? else {
            return Ok(());
        };
        report.fired += self.send(name, s, &fires, now).await?;
        self.take_out_at(name, st, &v, &fires).await?;
        Ok(())
    }

    /// [`Schedules::take_out`] from the state this caller wrote at `version`: one write when
    /// nobody wrote the row since (the common case), else a read and a write.
    async fn take_out_at(
        &self,
        name: &str,
        mut st: State,
        version: &str,
        fires: &[Fire],
    ) -> Result<(String, State)> {
        for f in fires {
            if let Some(i) = st.outbox.iter().position(|o| o == f) {
                st.outbox.remove(i);
            }
        }
        if st.outbox.is_empty() {
            st.claim_until_ms = 0;
        }
        if let Some(v) = self.write(name, &st, Some(version)).await? {
            return Ok((v, st));
        }
        self.take_out(name, fires).await
    }

    /// Sends one work message per fire; returns how many.
    async fn send(&self, name: &str, s: &Schedule, fires: &[Fire], now: i64) -> Result<u32> {
        for f in fires {
            let mut event = json!({
                "schedule": name, "at_ms": f.at_ms, "missed": f.missed, "event": s.event,
            });
            if f.manual {
                event["manual"] = json!(true);
            }
            let body = WorkMessage {
                tenant: self.tenant.name.clone(),
                script: s.script.clone(),
                event,
                depth: 0,
                width: None,
                chain: None,
                // A slot runs at least once; the per-slot claim, not `crate::once`, keeps
                // racing ticks to one send.
                once: None,
                slot: Some(Slot {
                    schedule: name.to_string(),
                    at_ms: f.at_ms,
                    manual: f.manual,
                }),
            };
            // A slot claimed ahead (the tick's horizon) waits for its time; an operator's run
            // goes now, even for a slot still to come.
            let delay = if f.manual {
                0
            } else {
                ((f.at_ms - now).max(0) / 1000).min(i64::from(MAX_DELAY_S)) as u32
            };
            self.call();
            self.queue
                .send(
                    QueueKind::Work,
                    serde_json::to_string(&body).unwrap_or_default(),
                    delay,
                )
                .await?;
        }
        Ok(fires.len() as u32)
    }

    /// Takes `fires` out of the outbox once they are sent (others' fires stay), releasing the
    /// lease when it empties. Returns the row's new version and state. Should it fail, the
    /// fires are sent again after the lease: at least once.
    async fn take_out(&self, name: &str, fires: &[Fire]) -> Result<(String, State)> {
        self.update(name, |st| {
            for f in fires {
                if let Some(i) = st.outbox.iter().position(|o| o == f) {
                    st.outbox.remove(i);
                }
            }
            if st.outbox.is_empty() {
                st.claim_until_ms = 0;
            }
            Ok(())
        })
        .await
    }

    /// Writes a state row under the version it was read at (create when `None`). `Ok(None)`:
    /// another writer got there first, and nothing was written.
    async fn write(&self, name: &str, st: &State, version: Option<&str>) -> Result<Option<String>> {
        let mode = match version {
            Some(v) => PutMode::Update(v.to_string()),
            None => PutMode::Create,
        };
        self.call();
        match self.kv.put(self.state_item(name, st), mode).await {
            Ok(v) => Ok(Some(v)),
            Err(Error::Precondition { .. } | Error::AlreadyExists { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn state_item(&self, name: &str, st: &State) -> NewItem {
        NewItem {
            pk: pk(&self.tenant.name),
            sk: name.to_string(),
            value: serde_json::to_string(st).unwrap_or_default(),
            expires_at_s: now_ms() / 1000 + KEEP_S,
        }
    }

    /// Reads the state row, changes it with `change` and writes it back under the version
    /// read, again while other writers get there first. A new row starts from the next slot.
    async fn update(
        &self,
        name: &str,
        mut change: impl FnMut(&mut State) -> Result<()>,
    ) -> Result<(String, State)> {
        let s = self.schedule(name)?;
        for _ in 0..TRIES {
            self.call();
            let item = self.kv.get(&pk(&self.tenant.name), name).await?;
            let mut st = item.as_ref().map(State::of).unwrap_or_default();
            if st.spec != s.spec() || st.next_ms == 0 {
                st.spec = s.spec();
                st.next_ms = s.when.next_after(now_ms()).unwrap_or(i64::MAX);
                st.skipped = 0;
            }
            change(&mut st)?;
            if let Some(v) = self
                .write(name, &st, item.as_ref().map(|i| i.version.as_str()))
                .await?
            {
                return Ok((v, st));
            }
        }
        Err(Error::Busy {
            what: format!(
                "the state of schedule {name:?} of tenant {:?} changed {TRIES} times while it \
                 was being written",
                self.tenant.name
            ),
            retry_after_s: 1,
        })
    }

    /// Pauses a schedule until [`Schedules::resume`]; kept in its state row, so a reload of
    /// the config does not undo it.
    pub async fn pause(&self, name: &str) -> Result<()> {
        self.update(name, |st| {
            st.paused = true;
            Ok(())
        })
        .await
        .map(|_| ())
    }

    /// Resumes a schedule an operator paused, from its next slot (the slots that fell while it
    /// was paused do not run). A schedule paused in its config stays paused.
    pub async fn resume(&self, name: &str) -> Result<()> {
        let s = self.schedule(name)?;
        self.update(name, |st| {
            st.paused = false;
            st.next_ms = s.when.next_after(now_ms()).unwrap_or(i64::MAX);
            st.skipped = 0;
            Ok(())
        })
        .await
        .map(|_| ())
    }

    /// Runs a schedule now, once, also when it is paused: `ev.at_ms` is now, `ev.manual` true.
    /// Returns the run's `at_ms`.
    pub async fn trigger(&self, name: &str) -> Result<i64> {
        let now = now_ms();
        self.manual(name, vec![now]).await?;
        Ok(now)
    }

    /// Runs a schedule once for each of its slots from `from_ms` to `to_ms` (both included),
    /// at most [`MAX_BACKFILL`]; `ev.manual` is true. Returns the slots sent.
    pub async fn backfill(&self, name: &str, from_ms: i64, to_ms: i64) -> Result<Vec<i64>> {
        let s = self.schedule(name)?;
        if from_ms > to_ms {
            return Err(Error::InvalidInput(format!(
                "backfill from {from_ms} to {to_ms}: --from is after --to"
            )));
        }
        let slots = due_slots(
            s,
            s.when.next_after(from_ms - 1).unwrap_or(i64::MAX),
            to_ms,
            MAX_BACKFILL + 1,
        );
        if slots.len() > MAX_BACKFILL {
            return Err(Error::InvalidInput(format!(
                "schedule {name:?} has more than {MAX_BACKFILL} slots from {from_ms} to {to_ms}; \
                 backfill at most {MAX_BACKFILL} at a time (a shorter --from/--to)"
            )));
        }
        self.manual(name, slots.clone()).await?;
        Ok(slots)
    }

    async fn manual(&self, name: &str, slots: Vec<i64>) -> Result<()> {
        let s = self.schedule(name)?;
        let fires: Vec<Fire> = slots
            .into_iter()
            .map(|at_ms| Fire {
                at_ms,
                missed: 0,
                manual: true,
            })
            .collect();
        let now = now_ms();
        let (v, st) = self
            .update(name, |st| {
                st.outbox.extend(fires.iter().cloned());
                st.claim_until_ms = now + LEASE_MS;
                Ok(())
            })
            .await?;
        self.send(name, s, &fires, now).await?;
        self.take_out_at(name, st, &v, &fires).await?;
        Ok(())
    }

    /// The tenant's schedules with their next slot, pause and last run.
    pub async fn list(&self) -> Result<Vec<Info>> {
        let (states, runs) = self.rows().await?;
        let now = now_ms();
        Ok(self
            .tenant
            .config
            .schedules
            .iter()
            .map(|(name, s)| {
                let st = states.get(name).map(State::of).unwrap_or_default();
                let next = if st.spec == s.spec() && st.next_ms > 0 {
                    Some(st.next_ms).filter(|n| *n != i64::MAX)
                } else {
                    s.when.next_after(now)
                };
                Info {
                    name: name.clone(),
                    script: s.script.clone(),
                    when: s.spec(),
                    next_ms: next,
                    paused_in_config: s.paused,
                    paused: st.paused,
                    last: runs.get(name).and_then(|r| r.last.clone()),
                }
            })
            .collect())
    }

    /// Records how a run of a slot ended (`error` none: it succeeded) on its attempt: what
    /// [`Schedules::list`] shows and the overlap rule reads. A run older than the one recorded
    /// is not recorded over it.
    pub async fn record(&self, slot: &Slot, attempt: u32, error: Option<String>) -> Result<()> {
        let sk = runs_sk(&slot.schedule);
        let run = LastRun {
            at_ms: slot.at_ms,
            ok: error.is_none(),
            attempt,
            error: error.map(|e| crate::text::cut_text(e, 300)),
            ended_ms: now_ms(),
            manual: slot.manual,
        };
        for _ in 0..TRIES {
            self.call();
            let item = self.kv.get(&pk(&self.tenant.name), &sk).await?;
            let mut runs = item.as_ref().map(Runs::of).unwrap_or_default();
            let newer = |r: &Option<LastRun>| r.as_ref().is_none_or(|r| r.at_ms <= run.at_ms);
            let mut changed = false;
            if newer(&runs.last) {
                runs.last = Some(run.clone());
                changed = true;
            }
            if !slot.manual && newer(&runs.slot) {
                runs.slot = Some(run.clone());
                changed = true;
            }
            if !changed {
                return Ok(());
            }
            let mode = match &item {
                Some(i) => PutMode::Update(i.version.clone()),
                None => PutMode::Create,
            };
            let row = NewItem {
                pk: pk(&self.tenant.name),
                sk: sk.clone(),
                value: serde_json::to_string(&runs).unwrap_or_default(),
                expires_at_s: now_ms() / 1000 + KEEP_S,
            };
            self.call();
            match self.kv.put(row, mode).await {
                Ok(_) => return Ok(()),
                Err(Error::Precondition { .. } | Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// The slots from `first` (a slot) to `until`, at most `cap`, counted from [`LOOKBACK_MS`]
/// before `until` at the earliest.
fn due_slots(s: &Schedule, first: i64, until: i64, cap: usize) -> Vec<i64> {
    let mut at = first;
    if at < until - LOOKBACK_MS {
        at = s.when.next_after(until - LOOKBACK_MS).unwrap_or(i64::MAX);
    }
    let mut out = Vec::new();
    while at <= until && out.len() < cap {
        out.push(at);
        match s.when.next_after(at) {
            Some(n) => at = n,
            None => break,
        }
    }
    out
}

/// Whether the previous slot's run may still be retrying: no outcome recorded for it yet (its
/// message not run, or delayed) or a failure with receives left, within [`RUN_GIVE_UP_MS`].
fn still_running(st: &State, runs: Option<&Runs>, now: i64) -> bool {
    let Some(last) = st.last_ms else {
        return false;
    };
    if now > last + RUN_GIVE_UP_MS {
        return false;
    }
    match runs.and_then(|r| r.slot.as_ref()) {
        Some(r) if r.at_ms >= last => !r.ok && r.attempt < MAX_RECEIVES,
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// Tenants that take 20 ms to load and then turn out not to exist, counting how many
    /// loads are in flight at once.
    #[derive(Debug, Default)]
    struct SlowTenants {
        now: AtomicUsize,
        most: AtomicUsize,
    }

    #[async_trait::async_trait]
    impl TenantSource for SlowTenants {
        async fn load(&self, tenant: &str) -> Result<Arc<Tenant>> {
            let now = self.now.fetch_add(1, Ordering::SeqCst) + 1;
            self.most.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(20)).await;
            self.now.fetch_sub(1, Ordering::SeqCst);
            Err(Error::no_tenant(tenant, ""))
        }

        async fn list(&self) -> Result<Vec<String>> {
            Ok((0..64).map(|i| format!("t{i:02}")).collect())
        }
    }

    #[tokio::test]
    async fn a_tick_works_on_a_few_tenants_at_once_and_no_more() {
        let dir = tempfile::tempdir().unwrap();
        let b = crate::embedded::Embedded::open(dir.path(), vec![])
            .unwrap()
            .backends();
        let tenants = SlowTenants::default();
        let started = std::time::Instant::now();
        let report = tick(&tenants, &*b.kv, &*b.queue, TickOptions::local()).await;
        assert_eq!(report, TickReport::default());
        // One after another, 64 loads of 20 ms would take 1.28 s and never overlap.
        assert_eq!(tenants.most.load(Ordering::SeqCst), TENANTS_AT_ONCE);
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
    }
}
