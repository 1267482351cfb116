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
//! The timer is a mechanism: it knows nothing of barriers or batch jobs. A primitive that
//! wants a timer to fire only while something still holds attaches a [`Condition`] (a field of
//! the row named for its [`Kind`], with the primitive's own data), and registers a [`Kind`]
//! that says what a due timer of that kind does; the runtime hands [`tick`] every kind it
//! wires. A timer without a condition just sends its work message.

mod kind;
mod tick;

pub use kind::{Due, Kind, Verdict};
pub use tick::{event_of, tick, TickOptions, TickReport};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::budget::Budget;
use crate::ports::{now_ms, Item, KvStore, NewItem, PutMode, TxOp};
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
    /// The condition a primitive attached, as one field named for its kind (`"barrier": {..}`);
    /// empty for a plain timer.
    #[serde(flatten)]
    pub condition: serde_json::Map<String, Value>,
}

impl Row {
    /// The condition's kind (its field) and data, if the row has one.
    pub fn condition(&self) -> Option<(&str, &Value)> {
        self.condition.iter().next().map(|(k, v)| (k.as_str(), v))
    }
}

/// A condition a primitive attaches to a timer: the field named for its [`Kind`] and the
/// primitive's data, which carries an `"id"` that `native timers` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    /// The kind's field ([`Kind::field`]).
    pub kind: &'static str,
    /// The primitive's data.
    pub data: Value,
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
    /// What its condition watches, as the kind's field and the watched thing's id
    /// (`"barrier": "b1"`); empty for a plain timer.
    #[serde(flatten)]
    pub watches: serde_json::Map<String, Value>,
    /// The event its script gets, when its JSON is at most [`EVENT_SHOWN_BYTES`]; a larger
    /// one is said by its size.
    #[serde(skip_serializing_if = "Value::is_null")]
    pub event: Value,
}

/// The most bytes of a timer's event a listing shows: a page of a hundred timers stays small,
/// whatever their events hold.
pub const EVENT_SHOWN_BYTES: usize = 2048;

/// A timer's event for a listing, from its row's work message.
fn shown_event(row: &Row) -> Value {
    let event = serde_json::from_str::<Value>(&row.body)
        .ok()
        .and_then(|mut m| m.get_mut("event").map(Value::take))
        .unwrap_or(Value::Null);
    match serde_json::to_string(&event) {
        Ok(text) if text.len() > EVENT_SHOWN_BYTES => {
            Value::String(format!("({} bytes of JSON, too large to show)", text.len()))
        }
        _ => event,
    }
}

impl Info {
    /// The id of what the timer's condition of `kind` watches, if it has one.
    pub fn watching(&self, kind: &str) -> Option<&str> {
        self.watches.get(kind).and_then(Value::as_str)
    }
}

/// The due time of an id, or an error naming the id's form.
pub fn parse_id(id: &str) -> Result<i64> {
    let bad = || {
        Error::InvalidInput(format!(
            "timer id {:?} is not one that native.timer.at returned (13 digits, '-', 16 hex digits)",
            crate::text::cut_text(id.to_string(), 80)
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
    format!("{at_ms:013}-{:016x}", crate::random::u64())
}

/// A timer made but not yet written ([`Timers::prepare`]): a script's timer, held until its
/// invocation succeeds, as its messages are.
#[derive(Debug)]
pub struct Prepared {
    /// The id [`Timers::set`] would have returned.
    pub id: String,
    row: NewItem,
    index: NewItem,
}

/// Writes timers made by [`Timers::prepare`], each row in turn, then the tenant's index row
/// once (the newest): a tick that sees the index row finds every timer.
pub async fn write_prepared(kv: &dyn KvStore, timers: Vec<Prepared>) -> Result<()> {
    let mut index = None;
    for t in timers {
        kv.put(t.row, PutMode::Create).await?;
        index = Some(t.index);
    }
    match index {
        Some(index) => kv.put(index, PutMode::Overwrite).await.map(|_| ()),
        None => Ok(()),
    }
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
    /// Backend calls that cancelling one timer makes at most.
    pub const CANCEL_CALLS: u32 = 2;

    /// Stores a timer that sends `body` (a work message for `script`) at `at_ms`; returns its
    /// id. The row first, then the index row: a tick that sees the index row finds the timer.
    pub async fn set(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        condition: Option<Condition>,
    ) -> Result<String> {
        let (row, index) = self.rows(at_ms, script, body, condition)?;
        let id = row.sk.clone();
        self.budget.spend(1)?;
        self.kv.put(row, PutMode::Create).await?;
        self.budget.spend(1)?;
        self.kv.put(index, PutMode::Overwrite).await?;
        Ok(id)
    }

    /// [`Timers::set`] without the writes: the timer's id and rows, its backend calls counted
    /// now, to be written by [`write_prepared`] when (and only if) the invocation that set it
    /// succeeds. A failed run then leaves no timer, and its retries do not multiply them.
    pub fn prepare(&self, at_ms: i64, script: &str, body: String) -> Result<Prepared> {
        let (row, index) = self.rows(at_ms, script, body, None)?;
        self.budget.spend(Self::SET_CALLS)?;
        Ok(Prepared {
            id: row.sk.clone(),
            row,
            index,
        })
    }

    /// A timer for a primitive to write inside a transaction of its own (a barrier's dispatch
    /// guard, written with its claim so that no crash leaves a claim without its guard): the
    /// row, as an operation of that transaction, and the tenant's index row, which the caller
    /// writes just before the transaction (a tick keeps an index row younger than
    /// [`INDEX_GRACE_MS`], so the row that follows cannot be missed). The index row stays out
    /// of the transaction: every such transaction of a tenant would write that one item, and
    /// DynamoDB cancels transactions that meet on an item. No backend call here.
    pub fn in_transaction(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        condition: Condition,
    ) -> Result<(TxOp, NewItem)> {
        let (row, index) = self.rows(at_ms, script, body, Some(condition))?;
        Ok((
            TxOp::Put {
                item: row,
                mode: PutMode::Create,
            },
            index,
        ))
    }

    /// A new timer's row (its sort key is the id) and the tenant's index row.
    fn rows(
        &self,
        at_ms: i64,
        script: &str,
        body: String,
        condition: Option<Condition>,
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
            condition: condition
                .map(|c| serde_json::Map::from_iter([(c.kind.to_string(), c.data)]))
                .unwrap_or_default(),
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
                    watches: row
                        .as_ref()
                        .and_then(Row::condition)
                        .map(|(kind, data)| {
                            serde_json::Map::from_iter([(kind.to_string(), data["id"].clone())])
                        })
                        .unwrap_or_default(),
                    event: row.as_ref().map(shown_event).unwrap_or(Value::Null),
                }
            })
            .collect();
        Ok((infos, page.next))
    }
}

pub(crate) fn row_of(item: &Item) -> Option<Row> {
    serde_json::from_str(&item.value).ok()
}
