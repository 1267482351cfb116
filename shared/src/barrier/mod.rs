//! `native.barrier`: a work list that continues once, when every member has been acknowledged.
//!
//! Rows live in the tenant-private partitions `b#<tenant>#<id>...` of the key-value table, which
//! `native.db` (partitions `d#<tenant>#...`) cannot address:
//!
//! | sort key | what | written by |
//! | --- | --- | --- |
//! | `c` | the member list's hash, while and after creating | create, first |
//! | `p#<generation>#<member>` | a pending member (before shards) | create; deleted by its first ack |
//! | `r#<generation>` | the root tally (see `shards`) | create; acks |
//! | `meta` | members, continuation, state, deadline: the barrier exists | create, last |
//! | `o#<member>` | the member's outcome (first ack wins; before shards) | ack |
//! | `f#<member>` | the outcome again, for failed ones (before shards) | ack |
//! | `d` | the dispatch claim: lease and whether the continuation was sent | the completing ack, or the tick (see `dispatch`) |
//!
//! Every row expires with `meta` (a week after create), outcomes included, so an id used again
//! after that starts from nothing: no outcome of the old barrier can make an ack of the new one
//! a duplicate.
//!
//! Each create call writes its pending rows under a random generation of its own and names it
//! in `meta`, which only the first call to finish writes. Acks, status and hydrate read pending
//! rows of that generation only, so the rows of a slow second create of the same id (a retry
//! racing the first call), which may land after members were acked, count for nothing: it
//! cannot bring a member back. A create that died half way is finished by the same create again,
//! under a generation of its own; what the dead one wrote only expires.
//!
//! Barriers created since issue 53 keep their members in tallies (`shards`: a root and ~28
//! members a shard, each shard its own partition), and `meta` says how many shards. An ack is
//! one read (meta, for its expiry and the shard count) and one conditional write to the
//! member's shard, which answers whether the shard has anything open; the ack that fills a
//! shard's last slot fills the shard's slot in the root, which answers whether the barrier is
//! complete. No item is written by every ack, and none is queried. Barriers created before
//! (`meta` without `shards`, in flight during an upgrade) keep the rows above and are acked as
//! they were: one read, one transaction (meta must exist and live another hour; create the
//! outcome; delete the pending row) and one query (is any member still pending?). In both, a
//! process that dies half way is repaired by the redelivered ack, which repeats the steps.

mod change;
mod dispatch;
mod list;
mod model;
mod shards;
mod timers;

pub use dispatch::{redispatch, Redispatch, GUARD_AFTER_LEASE_MS};
pub use list::{
    DispatchState, Filter, ListCounts, ListPage, ListState, Listed, Member, MemberFilter, MAX_SCAN,
};
pub use model::{AckResult, CreateSpec, Meta, Outcome, Status};
pub use shards::{shard_count, shard_of, INLINE_BYTES, PER_SHARD};
pub use timers::{Dispatch, DispatchGuard, Overdue, OverdueGuard};

use serde_json::{json, Value};

use crate::budget::Budget;
use crate::ports::WorkMessage;
use crate::ports::{now_ms, KvStore, NewItem, PutMode, Queue, Tallies, TxOp, MAX_BATCH_ITEMS};
use crate::{Error, Result};

/// Rows live a week, like every `native.db` item.
pub const TTL_S: i64 = 7 * 24 * 3600;
/// Acks stop this long before the rows expire, so an expired pending row can never make a
/// barrier look finished.
pub const ACK_MARGIN_S: i64 = 3600;
/// How long a completing call holds the dispatch claim.
pub const LEASE_MS: i64 = 60_000;
/// The largest encoded outcome.
pub const MAX_OUTCOME_BYTES: usize = 8 * 1024;
/// The longest member name.
// A member's rows have sort keys `p#<generation>#<member>` and `o#<member>`: with 1 000 bytes
// of name they stay within DynamoDB's 1 024-byte sort key.
pub const MAX_MEMBER_BYTES: usize = 1000;
/// Members per page when iterating results.
const PAGE: usize = 100;

/// The barriers of one tenant.
pub struct Barriers<'a> {
    /// The key-value table.
    pub kv: &'a dyn KvStore,
    /// The queues.
    pub queue: &'a dyn Queue,
    /// The tenant.
    pub tenant: &'a str,
    /// Whether the tenant has a queue (`"queue": true`); without one, a barrier is a plain
    /// work list.
    pub queue_enabled: bool,
    /// The data-ops budget.
    pub budget: &'a dyn Budget,
}

fn pk(tenant: &str, id: &str) -> String {
    format!("b#{tenant}#{id}")
}

/// Checks a barrier id: 1 to 200 bytes, no control characters.
pub fn check_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 200 || id.chars().any(char::is_control) {
        return Err(Error::InvalidInput(format!(
            "barrier id {id:?} must be 1 to 200 bytes without control characters"
        )));
    }
    Ok(())
}

/// Checks the id of a barrier being created: [`check_id`], and not `.` or `..`, which every
/// URL parser takes as a step of the path (`%2e` too), so that no link to the barrier (the
/// console's) could reach it. Other characters are percent-encoded in links.
pub fn check_new_id(id: &str) -> Result<()> {
    check_id(id)?;
    if id == "." || id == ".." {
        return Err(Error::InvalidInput(format!(
            "barrier id {id:?} is a step of a URL path ('.' or '..'), which no link can name: choose another id"
        )));
    }
    Ok(())
}

impl Barriers<'_> {
    fn row(&self, id: &str, sk: &str, value: String, expires_at_s: i64) -> NewItem {
        NewItem {
            pk: pk(self.tenant, id),
            sk: sk.into(),
            value,
            expires_at_s,
        }
    }

    async fn get(&self, id: &str, sk: &str) -> Result<Option<crate::ports::Item>> {
        self.budget.spend(1)?;
        self.kv.get(&pk(self.tenant, id), sk).await
    }

    async fn meta(&self, id: &str) -> Result<Option<Meta>> {
        match self.get(id, "meta").await? {
            Some(item) => Ok(Some(Meta::from_item(&item)?)),
            None => Ok(None),
        }
    }

    /// Backend calls that creating a barrier of `members` makes at most, on the path where
    /// nothing is there yet, with names of at most 16 bytes (see [`Barriers::create_calls_of`]).
    pub fn create_calls(members: usize) -> u32 {
        Self::calls_for(shards::shard_count(members, members * 16))
    }

    fn calls_for(shards: u32) -> u32 {
        // get meta, put the creating marker, the batch writes of the tallies, put meta, the
        // list row
        (4 + shards::tally_count(shards).div_ceil(MAX_BATCH_ITEMS)) as u32
    }

    /// Backend calls that creating the barrier of `spec` makes at most.
    pub fn create_calls_of(spec: &CreateSpec) -> u32 {
        let bytes = spec.members.iter().map(String::len).sum();
        let timer = if spec.on_overdue.is_some() {
            crate::timer::Timers::SET_CALLS
        } else {
            0
        };
        Self::calls_for(shards::shard_count(spec.members.len(), bytes)) + timer
    }

    /// Creates a barrier; creating it again with the same id does nothing. Returns the id.
    pub async fn create(&self, spec: CreateSpec) -> Result<String> {
        let id = spec
            .id
            .clone()
            .unwrap_or_else(|| format!("{:032x}", crate::random::u128()));
        check_new_id(&id)?;
        spec.validate()?;
        if spec.continue_with.is_some() && !self.queue_enabled {
            return Err(Error::InvalidInput(format!(
                "continue_with needs a queue: set \"queue\": true in tenants/{}/config.json, or leave continue_with out and act on ack's complete",
                self.tenant
            )));
        }
        if let Some(script) = &spec.on_overdue {
            if spec.deadline_s.is_none() || !self.queue_enabled {
                return Err(Error::InvalidInput(format!(
                    "on_overdue = {script:?} needs deadline_s and a queue (\"queue\": true in tenants/{}/config.json)",
                    self.tenant
                )));
            }
        }
        let needed = Self::create_calls_of(&spec);
        if needed > self.budget.left() {
            return Err(Error::LimitExceeded {
                limit: "max_data_ops",
                detail: format!(
                    "creating a barrier of {} members needs {needed} backend calls and this invocation has {} left; raise limits.max_data_ops (ceiling 10000) or split the work list",
                    spec.members.len(),
                    self.budget.left()
                ),
            });
        }
        if let Some(meta) = self.meta(&id).await? {
            // A create that died after meta left no list row: this one writes it.
            self.list_created(&id, &meta).await?;
            return Ok(id);
        }
        let now = now_ms();
        let expires = now / 1000 + TTL_S;
        let hash = spec.members_hash();
        self.budget.spend(1)?;
        let marker = self.row(&id, "c", json!({ "hash": hash }).to_string(), expires);
        match self.kv.put(marker, PutMode::Create).await {
            Ok(_) => {}
            Err(Error::AlreadyExists { .. }) => {
                let old = self.get(&id, "c").await?;
                let same = old
                    .and_then(|it| serde_json::from_str::<Value>(&it.value).ok())
                    .is_some_and(|v| v["hash"] == json!(hash));
                if !same {
                    return Err(Error::InvalidInput(format!(
                        "barrier {id:?} is being created with another member list (did a create with other members crash?); create it with the same members, or use another id"
                    )));
                }
            }
            Err(e) => return Err(e),
        }
        // This call's own generation: if another create of the id writes meta first, these
        // rows are never read, however late they land.
        let generation = format!("{:012x}", crate::random::u64() >> 16);
        let bytes = spec.members.iter().map(String::len).sum();
        let shards = shards::shard_count(spec.members.len(), bytes);
        self.create_shards(&id, &spec.members, &generation, shards, expires)
            .await?;
        let overdue_timer = match (&spec.on_overdue, spec.deadline_s) {
            // Set before meta, under this call's generation: if another create of the id
            // writes meta, this timer finds the generation changed and sends nothing.
            (Some(script), Some(deadline_s)) => Some(
                self.overdue_timer(&id, script, now, deadline_s, &generation)
                    .await?,
            ),
            _ => None,
        };
        let meta = Meta {
            members: spec.members.len() as u64,
            continue_with: spec.continue_with.clone(),
            state: spec.state.clone(),
            deadline_s: spec.deadline_s,
            created_ms: now,
            expires_at_s: expires,
            generation: Some(generation),
            on_overdue: spec.on_overdue.clone(),
            overdue_timer,
            chain: crate::observe::chain(),
            shards: Some(shards),
        };
        self.budget.spend(1)?;
        let meta = match self
            .kv
            .put(
                self.row(&id, "meta", meta.to_json(), expires),
                PutMode::Create,
            )
            .await
        {
            Ok(_) => meta,
            // Another create of the id wrote meta first. It writes the list row, unless it
            // died first: write it here too (a second list row is never made). The backend
            // answers this call's own meta, written by an attempt whose answer was lost, as
            // written (`KvStore::put_as`), so this path is another writer's.
            Err(Error::AlreadyExists { .. }) => match self.meta(&id).await? {
                Some(theirs) => theirs,
                None => return Ok(id),
            },
            Err(e) => return Err(e),
        };
        self.list_created(&id, &meta).await?;
        Ok(id)
    }

    async fn overdue_timer(
        &self,
        id: &str,
        script: &str,
        now: i64,
        deadline_s: u64,
        generation: &str,
    ) -> Result<String> {
        let body = serde_json::to_string(&WorkMessage {
            tenant: self.tenant.to_string(),
            script: script.to_string(),
            event: json!({ "barrier": id, "overdue": true }),
            depth: self.budget.depth() + 1,
            width: self.budget.child_width(&format!(
                "the on_overdue timer {script:?} of barrier {id:?}"
            ))?,
            chain: crate::observe::chain(),
            once: None,
            slot: None,
        })
        .map_err(|e| Error::InvalidInput(e.to_string()))?;
        let at = now.saturating_add((deadline_s.min(TTL_S as u64) as i64) * 1000);
        let timers = crate::timer::Timers {
            kv: self.kv,
            tenant: self.tenant,
            budget: self.budget,
        };
        timers
            .set(at, script, body, Some(Overdue::condition(id, generation)))
            .await
    }

    /// Records the outcome of one member. See the module docs for the steps.
    pub async fn ack(&self, id: &str, member: &str, outcome: Outcome) -> Result<AckResult> {
        check_id(id)?;
        let encoded = outcome.encode()?;
        let now = now_ms();
        let now_s = now / 1000;
        // The ack's time, for people (the console); scripts see the outcome without it.
        let encoded = list::stamped(&encoded, now);
        // The outcome expires with the barrier, not a week from now: an outcome that outlived
        // its barrier would make the first ack of a barrier created again with this id a
        // duplicate.
        let Some(meta) = self.meta(id).await? else {
            return Err(self.why_not_ackable(id, false).await);
        };
        if meta.expires_at_s <= now_s + ACK_MARGIN_S {
            return Err(expired());
        }
        if meta.shards.is_some() {
            let f = self
                .fill(id, &meta, member, outcome.ok, &encoded, now_s)
                .await?;
            return self.finish_ack(id, &meta, f.duplicate, f.complete).await;
        }
        let far = meta.expires_at_s;
        let pk = pk(self.tenant, id);
        let mut ops = vec![
            TxOp::Check {
                pk: pk.clone(),
                sk: "meta".into(),
                live_until_s: now_s + ACK_MARGIN_S,
            },
            TxOp::Put {
                item: self.row(id, &format!("o#{member}"), encoded.clone(), far),
                mode: PutMode::Create,
            },
            TxOp::Delete {
                pk: pk.clone(),
                sk: format!("{}{member}", meta.pending_prefix()),
            },
        ];
        if !outcome.ok {
            ops.push(TxOp::Put {
                item: self.row(id, &format!("f#{member}"), encoded, far),
                mode: PutMode::Create,
            });
        }
        self.budget.spend(1)?;
        let duplicate = match self.kv.transact(ops).await? {
            Ok(()) => false,
            Err(0) => return Err(self.why_not_ackable(id, true).await),
            Err(1) => true,
            Err(_) => {
                return Err(Error::InvalidInput(format!(
                    "unknown member {member:?} of barrier {id:?}"
                )));
            }
        };
        let complete = !self.any_pending(id, &meta).await?;
        self.finish_ack(id, &meta, duplicate, complete).await
    }

    /// What an ack does once its member is recorded: if nothing is pending, marks the list row
    /// complete and dispatches the continuation.
    async fn finish_ack(
        &self,
        id: &str,
        meta: &Meta,
        duplicate: bool,
        complete: bool,
    ) -> Result<AckResult> {
        let meta = meta.clone();
        if !complete {
            return Ok(AckResult {
                chain: meta.chain,
                duplicate,
                complete: false,
                dispatched: false,
            });
        }
        self.list_done(id, &meta).await?;
        let dispatched = self.complete(id, &meta, duplicate).await?;
        self.drop_overdue_timer(&meta).await;
        Ok(AckResult {
            chain: meta.chain,
            duplicate,
            complete: true,
            dispatched,
        })
    }

    /// Cancels the overdue timer of a barrier that completed, so that listings stop showing
    /// it. Best effort: a timer that stays (this call failed, the invocation had no calls
    /// left, a tick holds it) finds no pending member when due and sends nothing.
    async fn drop_overdue_timer(&self, meta: &Meta) {
        let Some(timer) = &meta.overdue_timer else {
            return;
        };
        if self.budget.left() < crate::timer::Timers::CANCEL_CALLS {
            return;
        }
        let timers = crate::timer::Timers {
            kv: self.kv,
            tenant: self.tenant,
            budget: self.budget,
        };
        // Its failure leaves the timer, which is harmless (above): the ack stands.
        let _ = timers.cancel(timer).await;
    }

    /// Why an ack found no live meta: the barrier is unknown, still being created, or about to
    /// expire. `read_meta`: look at meta again (its check failed in the transaction).
    async fn why_not_ackable(&self, id: &str, read_meta: bool) -> Error {
        let meta = if read_meta {
            self.meta(id).await
        } else {
            Ok(None)
        };
        match meta {
            Err(e) => e,
            Ok(Some(_)) => expired(),
            Ok(None) => match self.get(id, "c").await {
                Err(e) => e,
                Ok(Some(_)) => Error::InvalidInput(format!(
                    "barrier {id:?} is still being created; retry (if its create crashed, run the same create again)"
                )),
                Ok(None) => Error::InvalidInput(format!(
                    "unknown barrier {id:?}: it was never created, or it expired"
                )),
            },
        }
    }

    /// The chain that created barrier `id` ([`Meta::chain`]), if it is known: where an
    /// operator's cancel is recorded. One read.
    pub async fn chain(&self, id: &str) -> Result<Option<String>> {
        check_id(id)?;
        Ok(self.meta(id).await?.and_then(|m| m.chain))
    }

    async fn any_pending(&self, id: &str, meta: &Meta) -> Result<bool> {
        if meta.shards.is_some() {
            return self.shard_pending(id, meta).await;
        }
        self.budget.spend(1)?;
        Ok(!self
            .kv
            .query(&pk(self.tenant, id), &meta.pending_prefix(), None, 1)
            .await?
            .items
            .is_empty())
    }

    /// The barrier's meta (`members` counting those added since) and its failed count if it is
    /// complete; `None` if it is not (yet), or is gone.
    pub async fn hydrate(&self, id: &str) -> Result<Option<(Meta, u64)>> {
        Ok(self
            .hydrate_with(id, false)
            .await?
            .map(|(meta, failed, _)| (meta, failed)))
    }

    /// As [`Barriers::hydrate`]; with `allow_pending` (an overdue script's view) also while
    /// members are pending. The third value is how many are pending.
    pub async fn hydrate_with(
        &self,
        id: &str,
        allow_pending: bool,
    ) -> Result<Option<(Meta, u64, u64)>> {
        check_id(id)?;
        let Some(mut meta) = self.meta(id).await? else {
            return Ok(None);
        };
        if meta.shards.is_some() {
            let (pending, failed, added) = self.shard_counts(id, &meta).await?;
            if pending > 0 && !allow_pending {
                return Ok(None);
            }
            meta.members += added;
            return Ok(Some((meta, failed, pending)));
        }
        let pending = if self.any_pending(id, &meta).await? {
            if !allow_pending {
                return Ok(None);
            }
            self.count(id, &meta.pending_prefix()).await?
        } else {
            0
        };
        let failed = self.count(id, "f#").await?;
        meta.members += self.added(id).await?;
        Ok(Some((meta, failed, pending)))
    }

    /// Counts the rows with a prefix, a page of 1000 per call.
    async fn count(&self, id: &str, prefix: &str) -> Result<u64> {
        let mut n = 0;
        let mut after: Option<String> = None;
        loop {
            self.budget.spend(1)?;
            let page = self
                .kv
                .query(&pk(self.tenant, id), prefix, after.as_deref(), 1000)
                .await?;
            n += page.items.len() as u64;
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(n),
            }
        }
    }

    /// One page of outcomes (`failed_only`: of failed members), after the member `after`.
    pub async fn outcomes(
        &self,
        id: &str,
        failed_only: bool,
        after: Option<&str>,
    ) -> Result<(Vec<(String, Value)>, Option<String>)> {
        check_id(id)?;
        if let Some(meta) = self.meta(id).await?.filter(|m| m.shards.is_some()) {
            let (rows, next) = self
                .shard_page(id, &meta, after, PAGE, |v| {
                    !v.is_empty() && (!failed_only || v.contains("\"ok\":false"))
                })
                .await?;
            let rows = rows
                .into_iter()
                .map(|(m, o)| (m, shards::for_scripts(o.unwrap_or(Value::Null))))
                .collect();
            return Ok((rows, next));
        }
        let prefix = if failed_only { "f#" } else { "o#" };
        let after = after.map(|m| format!("{prefix}{m}"));
        self.budget.spend(1)?;
        let page = self
            .kv
            .query(&pk(self.tenant, id), prefix, after.as_deref(), PAGE)
            .await?;
        let rows = page
            .items
            .into_iter()
            .map(|it| {
                let v = serde_json::from_str(&it.value).unwrap_or(Value::Null);
                (it.sk[prefix.len()..].to_string(), list::unstamped(v))
            })
            .collect();
        Ok((rows, page.next.map(|sk| sk[prefix.len()..].to_string())))
    }

    /// Where a barrier stands, with up to `limit` pending member names after `cursor`.
    pub async fn status(
        &self,
        id: &str,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Option<Status>> {
        check_id(id)?;
        let Some(meta) = self.meta(id).await? else {
            return Ok(None);
        };
        if meta.shards.is_some() {
            let (pending, failed, added) = self.shard_counts(id, &meta).await?;
            let (names, next) = if pending > 0 {
                self.shard_page(id, &meta, cursor, limit.max(1), str::is_empty)
                    .await?
            } else {
                (Vec::new(), None)
            };
            let names: Vec<String> = names.into_iter().map(|(m, _)| m).take(limit).collect();
            let total = meta.members + added;
            return self
                .status_of(id, &meta, total, pending, failed, names, next)
                .await
                .map(Some);
        }
        let pk = pk(self.tenant, id);
        let mut pending = 0u64;
        let mut names = Vec::new();
        let mut next_cursor = None;
        let mut after: Option<String> = None;
        let prefix = meta.pending_prefix();
        let start = cursor.map(|c| format!("{prefix}{c}"));
        loop {
            self.budget.spend(1)?;
            let page = self.kv.query(&pk, &prefix, after.as_deref(), 1000).await?;
            for it in &page.items {
                pending += 1;
                let passed = start.as_ref().is_none_or(|s| it.sk > *s);
                if passed && names.len() < limit {
                    names.push(it.sk[prefix.len()..].to_string());
                } else if passed && names.len() == limit && next_cursor.is_none() {
                    next_cursor = names.last().cloned();
                }
            }
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        let failed = self.count(id, "f#").await?;
        let total = meta.members + self.added(id).await?;
        self.status_of(id, &meta, total, pending, failed, names, next_cursor)
            .await
            .map(Some)
    }

    /// Where a barrier stands for a page that shows it (the operator's console): as
    /// [`Barriers::status`] without member names, but each count read with one query of at
    /// most `cap` rows, so that its cost does not grow with the barrier's members. A count that
    /// reached `cap` is "`cap` or more" ([`Capped`]); `resolved` is then not known.
    pub async fn glance(&self, id: &str, cap: usize) -> Result<Option<(Status, Capped)>> {
        check_id(id)?;
        let Some(meta) = self.meta(id).await? else {
            return Ok(None);
        };
        if meta.shards.is_some() {
            // The root, and as many shards not yet full as hold about `cap` members.
            let most = cap.div_ceil(shards::PER_SHARD).max(1);
            let ((pending, failed, added), short) = self.shard_counts_upto(id, &meta, most).await?;
            let total = meta.members + added;
            let st = self
                .status_of(id, &meta, total, pending, failed, Vec::new(), None)
                .await?;
            let capped = Capped {
                pending: short,
                failed: short,
                added: false,
            };
            return Ok(Some((st, capped)));
        }
        let (pending, p) = self.count_upto(id, &meta.pending_prefix(), cap).await?;
        let (failed, f) = self.count_upto(id, "f#", cap).await?;
        let (added, a) = self.count_upto(id, "a#", cap).await?;
        let total = meta.members + added;
        let st = self
            .status_of(id, &meta, total, pending, failed, Vec::new(), None)
            .await?;
        Ok(Some((
            st,
            Capped {
                pending: p,
                failed: f,
                added: a,
            },
        )))
    }

    /// The rows with `prefix` of barrier `id`, counted up to `cap` in one query; whether there
    /// are `cap` or more.
    async fn count_upto(&self, id: &str, prefix: &str, cap: usize) -> Result<(u64, bool)> {
        self.budget.spend(1)?;
        let page = self
            .kv
            .query(&pk(self.tenant, id), prefix, None, cap.max(1))
            .await?;
        let n = page.items.len() as u64;
        Ok((n, page.next.is_some() || n >= cap as u64))
    }

    /// A [`Status`] of barrier `id` from its counts.
    #[allow(clippy::too_many_arguments)]
    async fn status_of(
        &self,
        id: &str,
        meta: &Meta,
        total: u64,
        pending: u64,
        failed: u64,
        names: Vec<String>,
        next_cursor: Option<String>,
    ) -> Result<Status> {
        let dispatched = match self.get(id, "d").await? {
            Some(d) => serde_json::from_str::<Value>(&d.value)
                .map(|v| v["sent"] == json!(true))
                .unwrap_or(false),
            None => false,
        };
        let now = now_ms();
        // Saturating: rows written before deadlines were range-checked may hold any number.
        let deadline_ms = meta.deadline_s.map(|s| {
            meta.created_ms
                .saturating_add((s.min(i64::MAX as u64) as i64).saturating_mul(1000))
        });
        Ok(Status {
            id: id.to_string(),
            total,
            pending,
            resolved: total.saturating_sub(pending),
            failed,
            complete: pending == 0,
            dispatched,
            continue_with: meta.continue_with.clone(),
            created_ms: meta.created_ms,
            deadline_ms,
            overdue: pending > 0 && deadline_ms.is_some_and(|d| now > d),
            expires_at_s: meta.expires_at_s,
            pending_members: names,
            cursor: next_cursor,
        })
    }
}

/// Which counts of a [`Barriers::glance`] stopped at its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capped {
    /// Pending members.
    pub pending: bool,
    /// Failed members.
    pub failed: bool,
    /// Members added after the create.
    pub added: bool,
}

/// Whether the barrier `id` of `tenant` was created by the create call of `generation` and still
/// has pending members: whether its overdue timer should send. Two calls.
pub async fn overdue_pending(
    kv: &dyn KvStore,
    tenant: &str,
    id: &str,
    generation: &str,
) -> Result<bool> {
    let Some(item) = kv.get(&pk(tenant, id), "meta").await? else {
        return Ok(false);
    };
    let meta = Meta::from_item(&item)?;
    if meta.generation.as_deref() != Some(generation) {
        return Ok(false);
    }
    if meta.shards.is_some() {
        let root = kv
            .tally_get(&pk(tenant, id), &format!("r#{generation}"))
            .await?;
        return Ok(root.is_some_and(|t| t.open > 0));
    }
    Ok(!kv
        .query(&pk(tenant, id), &meta.pending_prefix(), None, 1)
        .await?
        .items
        .is_empty())
}

fn expired() -> Error {
    Error::InvalidInput("barrier expired".into())
}
