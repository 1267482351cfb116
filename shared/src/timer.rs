//! Durable timers: `native.timer.at(when, script, event)` runs a script's `on_queue` at a time
//! up to a year ahead, at least once, and once when nothing fails. The queue's own delay stops
//! at 15 minutes, so a timer is a row in the key-value table, fired by a periodic [`tick`]: the
//! `tick` Lambda on an EventBridge schedule on AWS, `native serve` and `native drain` locally.
//!
//! | partition | sort key | what |
//! | --- | --- | --- |
//! | `t#<tenant>` | `<at_ms, 13 digits>-<16 hex>` (the id) | one timer: the work message to send, and its claim |
//! | `T` | `<tenant>` | the index: tenants that may have timers, so the tick never lists tenants |
//!
//! Scripts' `native.db` partitions are `d#<tenant>#...`, barriers `b#...`: neither reaches
//! these. A timer's id is its sort key, so timers sort by when they are due and cancel is one
//! call; ids carry the tenant nowhere, and every call is made in the caller's tenant partition.
//!
//! Firing one timer is three calls: claim (a compare-and-set on the row's version that writes
//! a lease), send the work message, delete the row if it still has the claim's version. A tick
//! that dies after the send and before the delete leaves a claimed row whose lease lapses; the
//! next tick fires it again (at least once). Two ticks racing for one row cannot both claim it
//! (once when nothing fails).
//!
//! A barrier's dispatch guard (`dispatch` on the row) is a timer of its own kind: it is not
//! claimed, and sends only if the barrier's dispatch claim lapsed unsent (see
//! `barrier::dispatch`).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::barrier::Budget;
use crate::ports::{
    now_ms, Item, KvStore, NewItem, ObjectStore, PutMode, Queue, QueueKind, TxOp, MAX_DELAY_S,
};
use crate::{Error, Result};

/// The index partition: one row per tenant that may have timers.
pub const INDEX_PK: &str = "T";
/// How far ahead a timer may be set: a year.
pub const MAX_AHEAD_MS: i64 = 365 * 86_400_000;
/// A timer row outlives its due time by a week, then expires even if no tick ever fired it.
pub const KEEP_AFTER_DUE_S: i64 = 7 * 86_400;
/// How long a tick holds its claim on a timer between sending it and deleting its row.
pub const LEASE_MS: i64 = 60_000;
/// An index row younger than this is kept even when its tenant has no timer rows: a timer row
/// written after its index row (see [`Timers::dispatch_guard`]) may be on its way.
pub const INDEX_GRACE_MS: i64 = 60_000;
/// Rows read per query.
const PAGE: usize = 25;

/// The partition of a tenant's timers.
pub fn pk(tenant: &str) -> String {
    format!("t#{tenant}")
}

/// What a timer row holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The script whose `on_queue` runs (for people: the body names it too).
    pub script: String,
    /// The work message, ready to send.
    pub body: String,
    /// Until when a tick holds it (0: unclaimed).
    #[serde(default)]
    pub claim_until_ms: i64,
    /// Set for a barrier's overdue timer: fire only if that barrier (of that generation) still
    /// has pending members.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub barrier: Option<Guard>,
    /// Set for a batch job's stale timer: fire only if the job's `done.json` is not there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobGuard>,
    /// Set for a barrier's dispatch guard: send only if that barrier's dispatch claim lapsed
    /// unsent (see `barrier::redispatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<DispatchGuard>,
}

/// The condition of a barrier's dispatch guard: the barrier whose continuation it repairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DispatchGuard {
    /// The barrier id.
    pub id: String,
}

/// The condition of a batch job's stale timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobGuard {
    /// The job id.
    pub id: String,
    /// The real batch bucket.
    pub bucket: String,
    /// The full key of the job's `done.json`.
    pub done_key: String,
}

/// The condition of a barrier's overdue timer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Guard {
    /// The barrier id.
    pub id: String,
    /// The generation of the create call that set the timer: another create's timer is void.
    pub generation: String,
}

/// A timer as `native timers` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Info {
    /// The id.
    pub id: String,
    /// When it is due.
    pub at_ms: i64,
    /// The script.
    pub script: String,
    /// Held by a tick that is firing it.
    pub firing: bool,
    /// The barrier it watches, for an overdue timer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub barrier: Option<String>,
    /// The batch job it watches, for a stale timer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The barrier whose continuation it sends if that barrier's dispatch was lost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dispatch: Option<String>,
}

/// The due time of an id, or an error naming the id's form.
pub fn parse_id(id: &str) -> Result<i64> {
    let bad = || {
        Error::InvalidInput(format!(
            "timer id {:?} is not one that native.timer.at returned (13 digits, '-', 16 hex digits)",
            crate::host::cut_text(id.to_string(), 80)
        ))
    };
    let (at, rand) = id.split_once('-').ok_or_else(bad)?;
    if at.len() != 13
        || !at.bytes().all(|b| b.is_ascii_digit())
        || rand.len() != 16
        || !rand.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(bad());
    }
    at.parse().map_err(|_| bad())
}

fn new_id(at_ms: i64) -> String {
    format!("{at_ms:013}-{:016x}", rand::random::<u64>())
}

/// The timers of one tenant.
pub struct Timers<'a> {
    /// The key-value table.
    pub kv: &'a dyn KvStore,
    /// The tenant.
    pub tenant: &'a str,
    /// The data-ops budget.
    pub budget: &'a dyn Budget,
}

impl Timers<'_> {
    /// Backend calls that setting one timer makes.
    pub const SET_CALLS: u32 = 2;

    /// Stores a timer that sends `body` (a work message for `script`) at `at_ms`; returns its
    /// id. The row first, then the index row: a tick that sees the index row finds the timer.
    pub async fn set(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        guard: Option<Guard>,
    ) -> Result<String> {
        self.set_row(at_ms, script, body, guard, None).await
    }

    /// A barrier's dispatch guard timer, for the completing call to write: the row, as an
    /// operation of the transaction that also writes its claim (so that no crash leaves a
    /// claim without its guard), and the tenant's index row, which it writes just before that
    /// transaction (a tick keeps an index row younger than [`INDEX_GRACE_MS`], so the guard
    /// that follows cannot be missed). The index row stays out of the transaction: every
    /// completing transaction of a tenant would write that one item, and DynamoDB cancels
    /// transactions that meet on an item. No backend call here.
    pub fn dispatch_guard(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        dispatch: DispatchGuard,
    ) -> Result<(TxOp, NewItem)> {
        let (row, index) = self.rows(at_ms, script, body, None, None, Some(dispatch))?;
        Ok((
            TxOp::Put {
                item: row,
                mode: PutMode::Create,
            },
            index,
        ))
    }

    /// [`Timers::set`] for a batch job's stale timer.
    pub async fn set_for_job(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        job: JobGuard,
    ) -> Result<String> {
        self.set_row(at_ms, script, body, None, Some(job)).await
    }

    async fn set_row(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        guard: Option<Guard>,
        job: Option<JobGuard>,
    ) -> Result<String> {
        let (row, index) = self.rows(at_ms, script, body, guard, job, None)?;
        let id = row.sk.clone();
        self.budget.spend(1)?;
        self.kv.put(row, PutMode::Create).await?;
        self.budget.spend(1)?;
        self.kv.put(index, PutMode::Overwrite).await?;
        Ok(id)
    }

    /// A new timer's row (its sort key is the id) and the tenant's index row.
    fn rows(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        guard: Option<Guard>,
        job: Option<JobGuard>,
        dispatch: Option<DispatchGuard>,
    ) -> Result<(NewItem, NewItem)> {
        let now = now_ms();
        if at_ms > now.saturating_add(MAX_AHEAD_MS) || at_ms < 0 {
            return Err(Error::InvalidInput(format!(
                "a timer may be set from now up to a year ahead, not at {at_ms} ms (now is {now})"
            )));
        }
        let id = new_id(at_ms);
        let row = Row {
            script: script.to_string(),
            body,
            claim_until_ms: 0,
            barrier: guard,
            job,
            dispatch,
        };
        let expires = at_ms.max(now) / 1000 + KEEP_AFTER_DUE_S;
        let row = NewItem {
            pk: pk(self.tenant),
            sk: id,
            value: serde_json::to_string(&row).unwrap_or_default(),
            expires_at_s: expires,
        };
        let index = NewItem {
            pk: INDEX_PK.into(),
            sk: self.tenant.to_string(),
            value: serde_json::json!({ "at_ms": now }).to_string(),
            // The index row outlives every timer it may point at.
            expires_at_s: (now + MAX_AHEAD_MS) / 1000 + 2 * KEEP_AFTER_DUE_S,
        };
        Ok((row, index))
    }

    /// Cancels a timer. Returns false when there is no such timer (fired, cancelled, expired)
    /// or a tick is firing it now: then it runs all the same.
    pub async fn cancel(&self, id: &str) -> Result<bool> {
        parse_id(id)?;
        self.budget.spend(1)?;
        let Some(item) = self.kv.get(&pk(self.tenant), id).await? else {
            return Ok(false);
        };
        if row_of(&item).is_some_and(|r| r.claim_until_ms > now_ms()) {
            return Ok(false);
        }
        self.budget.spend(1)?;
        match self
            .kv
            .delete(&pk(self.tenant), id, Some(&item.version))
            .await
        {
            Ok(there) => Ok(there),
            // Claimed meanwhile by a tick.
            Err(Error::Precondition { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// One page of the tenant's timers in due order, after the id `after`.
    pub async fn list(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<Info>, Option<String>)> {
        self.budget.spend(1)?;
        let page = self.kv.query(&pk(self.tenant), "", after, limit).await?;
        let now = now_ms();
        let infos = page
            .items
            .iter()
            .map(|it| {
                let row = row_of(it);
                Info {
                    id: it.sk.clone(),
                    at_ms: parse_id(&it.sk).unwrap_or(0),
                    script: row.as_ref().map(|r| r.script.clone()).unwrap_or_default(),
                    firing: row.as_ref().is_some_and(|r| r.claim_until_ms > now),
                    job: row
                        .as_ref()
                        .and_then(|r| r.job.as_ref())
                        .map(|j| j.id.clone()),
                    dispatch: row
                        .as_ref()
                        .and_then(|r| r.dispatch.as_ref())
                        .map(|d| d.id.clone()),
                    barrier: row.and_then(|r| r.barrier).map(|g| g.id),
                }
            })
            .collect();
        Ok((infos, page.next))
    }
}

fn row_of(item: &Item) -> Option<Row> {
    serde_json::from_str(&item.value).ok()
}

/// How a tick runs.
#[derive(Debug, Clone, Copy)]
pub struct TickOptions {
    /// The tick's now.
    pub now_ms: i64,
    /// Also hand to the queue, with the queue's delay, timers due up to this long after now:
    /// the interval of a periodic tick, so that a timer is not a whole interval late. 0
    /// locally, where the tick runs every moment. At most 900 s, the queue's longest delay.
    pub horizon_ms: i64,
    /// The most timers fired per tenant per tick, so one tenant cannot hold up the others.
    pub per_tenant: usize,
    /// The most tenants looked at per tick.
    pub max_tenants: usize,
    /// Wall-clock time after which the tick stops firing (what is left waits for the next
    /// tick): below the Lambda's timeout, so a tick never dies half way for want of time.
    pub time_budget: std::time::Duration,
}

impl TickOptions {
    /// Local ticks: now, no horizon.
    pub fn local() -> Self {
        TickOptions {
            now_ms: now_ms(),
            horizon_ms: 0,
            per_tenant: 1000,
            max_tenants: 10_000,
            time_budget: std::time::Duration::from_secs(300),
        }
    }

    /// The periodic tick on AWS, every minute: a minute's horizon.
    pub fn every_minute() -> Self {
        TickOptions {
            horizon_ms: 60_000,
            // The tick Lambda's timeout is 60 s.
            time_budget: std::time::Duration::from_secs(45),
            ..Self::local()
        }
    }
}

/// What a tick did.
#[derive(Debug, Default, Clone, PartialEq, Serialize)]
pub struct TickReport {
    /// Tenants whose timers were looked at.
    pub tenants: u32,
    /// Timers sent.
    pub fired: u32,
    /// Overdue timers of barriers that had completed meanwhile, stale timers of jobs that were
    /// done, dispatch guards of barriers whose continuation was sent: deleted, not sent.
    pub void: u32,
    /// Backend calls made.
    pub calls: u32,
    /// Tenants that failed, with why (the others were still ticked).
    pub errors: Vec<String>,
}

/// Fires every timer that is due (or due within the horizon) of every tenant in the index, a
/// bounded number per tenant. A tenant that fails is reported and the others still ticked; its
/// timers are fired by a later tick.
pub async fn tick(
    kv: &dyn KvStore,
    queue: &dyn Queue,
    objects: &dyn ObjectStore,
    opts: TickOptions,
) -> Result<TickReport> {
    let mut report = TickReport::default();
    let started = std::time::Instant::now();
    let mut after: Option<String> = None;
    loop {
        report.calls += 1;
        let page = kv.query(INDEX_PK, "", after.as_deref(), 1000).await?;
        for entry in &page.items {
            if report.tenants as usize >= opts.max_tenants || started.elapsed() > opts.time_budget {
                return Ok(report);
            }
            report.tenants += 1;
            if let Err(e) =
                tick_tenant(kv, queue, objects, &opts, started, entry, &mut report).await
            {
                report.errors.push(format!("tenant {:?}: {e}", entry.sk));
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return Ok(report),
        }
    }
}

async fn tick_tenant(
    kv: &dyn KvStore,
    queue: &dyn Queue,
    objects: &dyn ObjectStore,
    opts: &TickOptions,
    started: std::time::Instant,
    index: &Item,
    report: &mut TickReport,
) -> Result<()> {
    let tenant = &index.sk;
    let pk = pk(tenant);
    let until = opts.now_ms + opts.horizon_ms.clamp(0, i64::from(MAX_DELAY_S) * 1000);
    let mut fired = 0usize;
    let mut after: Option<String> = None;
    let mut first = true;
    loop {
        report.calls += 1;
        let page = kv.query(&pk, "", after.as_deref(), PAGE).await?;
        if first && page.items.is_empty() {
            // No timers: take the tenant off the index, unless a timer was set since the
            // index row was read (that write changed its version), or the row is younger than
            // INDEX_GRACE_MS: a writer that puts the index row before its timer row (a
            // barrier's dispatch guard) may be about to write it.
            let written: i64 = serde_json::from_str::<serde_json::Value>(&index.value)
                .ok()
                .and_then(|v| v["at_ms"].as_i64())
                .unwrap_or(0);
            if written > opts.now_ms - INDEX_GRACE_MS {
                return Ok(());
            }
            report.calls += 1;
            match kv.delete(INDEX_PK, tenant, Some(&index.version)).await {
                Ok(_) | Err(Error::Precondition { .. }) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        first = false;
        for item in &page.items {
            let at = parse_id(&item.sk).unwrap_or(0);
            if at > until || fired >= opts.per_tenant || started.elapsed() > opts.time_budget {
                return Ok(());
            }
            if fire(kv, queue, objects, opts, tenant, at, item, report).await? {
                fired += 1;
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return Ok(()),
        }
    }
}

/// Claims, sends and deletes one due timer. Returns whether this call sent it.
#[allow(clippy::too_many_arguments)]
async fn fire(
    kv: &dyn KvStore,
    queue: &dyn Queue,
    objects: &dyn ObjectStore,
    opts: &TickOptions,
    tenant: &str,
    at_ms: i64,
    item: &Item,
    report: &mut TickReport,
) -> Result<bool> {
    let pk = pk(tenant);
    let Some(mut row) = row_of(item) else {
        // Not a row this module wrote: drop it rather than trip on it every minute.
        report.calls += 1;
        kv.delete(&pk, &item.sk, Some(&item.version)).await?;
        return Ok(false);
    };
    if let Some(guard) = &row.dispatch {
        return fire_dispatch_guard(
            kv, queue, opts, tenant, at_ms, item, &guard.id, &row.body, report,
        )
        .await;
    }
    if row.claim_until_ms > opts.now_ms {
        // Another tick holds it; if that tick died, its lease lapses and a later tick fires.
        return Ok(false);
    }
    row.claim_until_ms = opts.now_ms + LEASE_MS;
    report.calls += 1;
    let claimed = match kv
        .put(
            NewItem {
                pk: pk.clone(),
                sk: item.sk.clone(),
                value: serde_json::to_string(&row).unwrap_or_default(),
                expires_at_s: item.expires_at_s,
            },
            PutMode::Update(item.version.clone()),
        )
        .await
    {
        Ok(v) => v,
        // Another tick claimed it, or it was cancelled, since the query.
        Err(Error::Precondition { .. }) => return Ok(false),
        Err(e) => return Err(e),
    };
    let live = match (&row.barrier, &row.job) {
        (Some(g), _) => {
            report.calls += 2;
            crate::barrier::overdue_pending(kv, tenant, &g.id, &g.generation).await?
        }
        (None, Some(j)) => {
            report.calls += 1;
            objects.head(&j.bucket, &j.done_key).await?.is_none()
        }
        (None, None) => true,
    };
    if live {
        let delay = ((at_ms - opts.now_ms).max(0) / 1000).min(i64::from(MAX_DELAY_S)) as u32;
        report.calls += 1;
        queue.send(QueueKind::Work, row.body.clone(), delay).await?;
    } else {
        report.void += 1;
    }
    report.calls += 1;
    match kv.delete(&pk, &item.sk, Some(&claimed)).await {
        // Taken over by a tick after our lease lapsed: it sends again, at least once.
        Ok(_) | Err(Error::Precondition { .. }) => {}
        Err(e) => return Err(e),
    }
    if live {
        report.fired += 1;
    }
    Ok(live)
}

/// Fires a barrier's dispatch guard (see `barrier::redispatch`): never before it is due, even
/// within the horizon, since what it checks is a lease that lapses at that time. Its row is
/// not claimed: the barrier's own claim row decides who sends.
#[allow(clippy::too_many_arguments)]
async fn fire_dispatch_guard(
    kv: &dyn KvStore,
    queue: &dyn Queue,
    opts: &TickOptions,
    tenant: &str,
    at_ms: i64,
    item: &Item,
    barrier: &str,
    body: &str,
    report: &mut TickReport,
) -> Result<bool> {
    if at_ms > opts.now_ms {
        return Ok(false);
    }
    use crate::barrier::Redispatch;
    let found = crate::barrier::redispatch(
        kv,
        queue,
        tenant,
        barrier,
        body,
        opts.now_ms,
        &mut report.calls,
    )
    .await?;
    match found {
        Redispatch::Held => return Ok(false),
        Redispatch::Done => report.void += 1,
        Redispatch::Sent => report.fired += 1,
    }
    report.calls += 1;
    match kv.delete(&pk(tenant), &item.sk, Some(&item.version)).await {
        Ok(_) | Err(Error::Precondition { .. }) => Ok(found == Redispatch::Sent),
        Err(e) => Err(e),
    }
}

/// The JSON of a work message's event, for people (`native timers`).
pub fn event_of(body: &str) -> Value {
    serde_json::from_str::<Value>(body)
        .map(|v| v["event"].clone())
        .unwrap_or(Value::Null)
}
