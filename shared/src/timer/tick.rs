//! The tick: fires the due timers of every tenant in the index, a bounded number per tenant,
//! each through its [`Kind`] when it carries a condition.

use serde::Serialize;
use serde_json::Value;

use super::{parse_id, pk, row_of, Due, Kind, Verdict, INDEX_GRACE_MS, INDEX_PK, LEASE_MS};
use crate::ports::{
    now_ms, Item, KvStore, NewItem, ObjectStore, PutMode, Queue, QueueKind, MAX_DELAY_S,
};
use crate::{Error, Result};

/// Rows read per query.
const PAGE: usize = 25;

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
    /// When the tick stops firing (what is left waits for the next tick): before the Lambda's
    /// timeout, so a tick never dies half way for want of time.
    pub stop_at: std::time::Instant,
}

impl TickOptions {
    /// Local ticks: now, no horizon.
    pub fn local() -> Self {
        TickOptions {
            now_ms: now_ms(),
            horizon_ms: 0,
            per_tenant: 1000,
            max_tenants: 10_000,
            stop_at: std::time::Instant::now() + std::time::Duration::from_secs(300),
        }
    }

    /// The periodic tick on AWS: [`crate::deadline::TICK_EVERY`]'s horizon, stopping at
    /// `stop_at` ([`crate::deadline::tick_end`]), the end the schedules' tick of the same run
    /// shares.
    pub fn every_minute(stop_at: std::time::Instant) -> Self {
        TickOptions {
            horizon_ms: crate::deadline::TICK_EVERY.as_millis() as i64,
            stop_at,
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

/// What a tick works with.
struct Env<'a> {
    kv: &'a dyn KvStore,
    queue: &'a dyn Queue,
    objects: &'a dyn ObjectStore,
    kinds: &'a [&'a dyn Kind],
    opts: TickOptions,
}

/// Fires every timer that is due (or due within the horizon) of every tenant in the index, a
/// bounded number per tenant. A tenant that fails is reported and the others still ticked; its
/// timers are fired by a later tick.
pub async fn tick(
    kv: &dyn KvStore,
    queue: &dyn Queue,
    objects: &dyn ObjectStore,
    kinds: &[&dyn Kind],
    opts: TickOptions,
) -> Result<TickReport> {
    let env = Env {
        kv,
        queue,
        objects,
        kinds,
        opts,
    };
    let mut report = TickReport::default();
    let mut after: Option<String> = None;
    loop {
        report.calls += 1;
        let page = kv.query(INDEX_PK, "", after.as_deref(), 1000).await?;
        for entry in &page.items {
            if report.tenants as usize >= opts.max_tenants
                || std::time::Instant::now() > opts.stop_at
            {
                return Ok(report);
            }
            report.tenants += 1;
            if let Err(e) = tick_tenant(&env, entry, &mut report).await {
                report.errors.push(format!("tenant {:?}: {e}", entry.sk));
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return Ok(report),
        }
    }
}

async fn tick_tenant(env: &Env<'_>, index: &Item, report: &mut TickReport) -> Result<()> {
    let (kv, opts) = (env.kv, &env.opts);
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
            if at > until || fired >= opts.per_tenant || std::time::Instant::now() > opts.stop_at {
                return Ok(());
            }
            if fire(env, tenant, at, item, report).await? {
                fired += 1;
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return Ok(()),
        }
    }
}

/// Fires one due timer: a plain one or one of a claimed kind is claimed, sent (if its kind says
/// so) and deleted; one of an unclaimed kind is left to its kind. Returns whether this call sent
/// it.
async fn fire(
    env: &Env<'_>,
    tenant: &str,
    at_ms: i64,
    item: &Item,
    report: &mut TickReport,
) -> Result<bool> {
    let (kv, opts) = (env.kv, &env.opts);
    let pk = pk(tenant);
    let Some(mut row) = row_of(item) else {
        // Not a row this module wrote: drop it rather than trip on it every minute.
        report.calls += 1;
        kv.delete(&pk, &item.sk, Some(&item.version)).await?;
        return Ok(false);
    };
    let kind = match row.condition() {
        None => None,
        Some((field, _)) => match env.kinds.iter().find(|k| k.field() == field) {
            Some(k) => Some(*k),
            None => {
                // Left in place (and said every tick) rather than fired without its check.
                report.errors.push(format!(
                    "tenant {tenant:?}: timer {:?} has a condition of kind {field:?}, which this \
                     runtime does not register: it stays until a tick that knows the kind fires it",
                    item.sk
                ));
                return Ok(false);
            }
        },
    };
    if let Some(kind) = kind.filter(|k| !k.claimed()) {
        return fire_unclaimed(env, kind, tenant, at_ms, item, &row, report).await;
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
    let verdict = match (kind, row.condition()) {
        (Some(kind), Some((_, data))) => {
            let due = due(env, tenant, &row.body, data);
            kind.fire(&due, &mut report.calls).await?
        }
        _ => Verdict::Send,
    };
    match verdict {
        // Our claim lapses; a later tick asks the kind again.
        Verdict::Held => return Ok(false),
        Verdict::Send => {
            let delay = ((at_ms - opts.now_ms).max(0) / 1000).min(i64::from(MAX_DELAY_S)) as u32;
            report.calls += 1;
            env.queue
                .send(QueueKind::Work, row.body.clone(), delay)
                .await?;
        }
        Verdict::Void => report.void += 1,
        Verdict::Sent => {}
    }
    report.calls += 1;
    match kv.delete(&pk, &item.sk, Some(&claimed)).await {
        // Taken over by a tick after our lease lapsed: it sends again, at least once.
        Ok(_) | Err(Error::Precondition { .. }) => {}
        Err(e) => return Err(e),
    }
    let sent = matches!(verdict, Verdict::Send | Verdict::Sent);
    if sent {
        report.fired += 1;
    }
    Ok(sent)
}

fn due<'a>(env: &Env<'a>, tenant: &'a str, body: &'a str, data: &'a Value) -> Due<'a> {
    Due {
        kv: env.kv,
        queue: env.queue,
        objects: env.objects,
        tenant,
        now_ms: env.opts.now_ms,
        body,
        data,
    }
}

/// Fires a timer of an unclaimed kind: never before it is due, even within the horizon (see
/// [`Kind::claimed`]). Its row is not claimed: the kind decides who sends; the row goes once the
/// kind says it is spent.
async fn fire_unclaimed(
    env: &Env<'_>,
    kind: &dyn Kind,
    tenant: &str,
    at_ms: i64,
    item: &Item,
    row: &super::Row,
    report: &mut TickReport,
) -> Result<bool> {
    if at_ms > env.opts.now_ms {
        return Ok(false);
    }
    let Some((_, data)) = row.condition() else {
        return Ok(false);
    };
    let verdict = kind
        .fire(&due(env, tenant, &row.body, data), &mut report.calls)
        .await?;
    match verdict {
        Verdict::Held => return Ok(false),
        Verdict::Send => {
            report.calls += 1;
            env.queue.send(QueueKind::Work, row.body.clone(), 0).await?;
            report.fired += 1;
        }
        Verdict::Void => report.void += 1,
        Verdict::Sent => report.fired += 1,
    }
    report.calls += 1;
    match env
        .kv
        .delete(&pk(tenant), &item.sk, Some(&item.version))
        .await
    {
        Ok(_) | Err(Error::Precondition { .. }) => {
            Ok(matches!(verdict, Verdict::Send | Verdict::Sent))
        }
        Err(e) => Err(e),
    }
}

/// The JSON of a work message's event, for people (`native timers`).
pub fn event_of(body: &str) -> Value {
    serde_json::from_str::<Value>(body)
        .map(|v| v["event"].clone())
        .unwrap_or(Value::Null)
}
