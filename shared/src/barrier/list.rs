//! The tenant's list of barriers, for people (the operator's console): newest first, filtered by
//! state, a page at a time; and one barrier's members with their outcomes.
//!
//! | partition | sort key | what | written by |
//! | --- | --- | --- | --- |
//! | `B#<tenant>` | `<9999999999999 - created_ms, 13 digits>#<id>` | id, created, members, deadline, continuation; `done_ms` once complete | create (after `meta`); the completing ack |
//!
//! The row is written after `meta` by the create call that finds or writes it (a create that
//! died between the two is finished by the same create again, which finds `meta` and writes
//! the row), and only if absent, so a late retry of a create never takes back a completion.
//! The ack that finds nothing pending marks it complete, unconditionally, before it dispatches,
//! so a redelivered final ack marks it again. It expires with the barrier's rows. The sort key
//! is the creation time's complement, so a query in key order reads the newest first.
//!
//! Filters read the rows only: no barrier's own partition is touched to list or count.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{pk, Barriers, Meta};
use crate::ports::{now_ms, NewItem, PutMode};
use crate::{Error, Result};

/// Sort keys count down from this, so the newest barrier sorts first.
const TIME_TOP: i64 = 9_999_999_999_999;
/// The most rows one list call reads while filtering, so a filter that matches little answers
/// in bounded time with a cursor to go on.
pub const MAX_SCAN: usize = 5_000;
/// The longest cursor taken back (a sort key: 14 bytes and an id of at most 200).
const MAX_CURSOR_BYTES: usize = 256;

/// The list's partition for a tenant.
fn list_pk(tenant: &str) -> String {
    format!("B#{tenant}")
}

fn list_sk(created_ms: i64, id: &str) -> String {
    format!("{:013}#{id}", (TIME_TOP - created_ms).clamp(0, TIME_TOP))
}

/// A barrier as the list has it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listed {
    /// The id.
    pub id: String,
    /// When it was created.
    pub created_ms: i64,
    /// Members at create.
    pub members: u64,
    /// `created + deadline_s`, when it has a deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
    /// The continuation script.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_with: Option<String>,
    /// When the last member was resolved, once it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_ms: Option<i64>,
}

impl Listed {
    /// Its state at `now_ms`.
    pub fn state(&self, now_ms: i64) -> ListState {
        if self.done_ms.is_some() {
            ListState::Complete
        } else if self.deadline_ms.is_some_and(|d| now_ms > d) {
            ListState::Overdue
        } else {
            ListState::Open
        }
    }

    fn of(id: &str, meta: &Meta, done_ms: Option<i64>) -> Self {
        Listed {
            id: id.to_string(),
            created_ms: meta.created_ms,
            members: meta.members,
            deadline_ms: meta.deadline_s.map(|s| {
                meta.created_ms
                    .saturating_add((s.min(i64::MAX as u64) as i64).saturating_mul(1000))
            }),
            continue_with: meta.continue_with.clone(),
            done_ms,
        }
    }
}

/// What decides a listed barrier's state, read alone to count them.
#[derive(Deserialize)]
struct Times {
    #[serde(default)]
    deadline_ms: Option<i64>,
    #[serde(default)]
    done_ms: Option<i64>,
}

/// Where a listed barrier stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListState {
    /// Members are pending, within the deadline (or without one).
    Open,
    /// Members are pending past the deadline.
    Overdue,
    /// Every member is resolved.
    Complete,
}

impl ListState {
    /// As people read it.
    pub fn name(self) -> &'static str {
        match self {
            ListState::Open => "open",
            ListState::Overdue => "overdue",
            ListState::Complete => "complete",
        }
    }
}

/// Which barriers a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Filter {
    /// Every one.
    #[default]
    All,
    /// Not complete (overdue ones included).
    Open,
    /// Not complete and past the deadline.
    Overdue,
    /// Complete.
    Complete,
}

impl Filter {
    /// The filter of a name (`all`, `open`, `overdue`, `complete`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "" | "all" => Filter::All,
            "open" => Filter::Open,
            "overdue" => Filter::Overdue,
            "complete" => Filter::Complete,
            _ => return None,
        })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            Filter::All => "all",
            Filter::Open => "open",
            Filter::Overdue => "overdue",
            Filter::Complete => "complete",
        }
    }

    fn takes(self, state: ListState) -> bool {
        match self {
            Filter::All => true,
            Filter::Open => state != ListState::Complete,
            Filter::Overdue => state == ListState::Overdue,
            Filter::Complete => state == ListState::Complete,
        }
    }
}

/// One page of the list.
#[derive(Debug, Clone, Default)]
pub struct ListPage {
    /// Newest first.
    pub barriers: Vec<Listed>,
    /// Pass back as `after` for the next page; `None` at the end.
    pub next: Option<String>,
    /// Rows read for this page (more than shown when a filter skipped some).
    pub scanned: usize,
}

/// How many barriers of a tenant are in each state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListCounts {
    /// Not complete (overdue ones included).
    pub open: u64,
    /// Of those, past their deadline.
    pub overdue: u64,
    /// Complete.
    pub complete: u64,
}

/// A member as the console shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Member {
    /// Its name.
    pub name: String,
    /// `None` while pending; else whether it succeeded.
    pub ok: Option<bool>,
    /// Why it failed.
    pub error: Option<String>,
    /// What the partner answered.
    pub result: Option<Value>,
    /// When it was acknowledged (acks recorded before ack times were kept have none).
    pub at_ms: Option<i64>,
}

impl Member {
    /// Member `name` with its stored outcome (`{"ok", "error", "result", "at_ms"}`), or
    /// pending without one.
    fn of(name: String, outcome: Option<&Value>) -> Member {
        match outcome {
            None => Member {
                name,
                ok: None,
                error: None,
                result: None,
                at_ms: None,
            },
            Some(v) => Member {
                name,
                ok: Some(v["ok"].as_bool().unwrap_or(false)),
                error: v["error"].as_str().map(str::to_string),
                result: v.get("result").cloned(),
                at_ms: v["at_ms"].as_i64(),
            },
        }
    }
}

/// Which members a page shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemberFilter {
    /// Every one, in name order.
    #[default]
    All,
    /// Not yet acknowledged.
    Pending,
    /// Acknowledged (ok or failed).
    Resolved,
    /// Acknowledged as failed.
    Failed,
}

impl MemberFilter {
    /// The filter of a name (`all`, `pending`, `resolved`, `failed`).
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "" | "all" => MemberFilter::All,
            "pending" => MemberFilter::Pending,
            "resolved" => MemberFilter::Resolved,
            "failed" => MemberFilter::Failed,
            _ => return None,
        })
    }

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            MemberFilter::All => "all",
            MemberFilter::Pending => "pending",
            MemberFilter::Resolved => "resolved",
            MemberFilter::Failed => "failed",
        }
    }
}

/// The continuation's dispatch as its claim row (`d`) has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DispatchState {
    /// Nobody has claimed it: the barrier is not complete, or has no continuation.
    Unclaimed,
    /// A call holds the claim until this time (ms) and has not marked the send.
    Claimed(i64),
    /// The continuation was sent.
    Sent,
}

/// The outcome row as stored, with the ack's time beside the outcome.
pub(super) fn stamped(encoded: &str, at_ms: i64) -> String {
    match serde_json::from_str::<Value>(encoded) {
        Ok(Value::Object(mut m)) => {
            m.insert("at_ms".into(), Value::from(at_ms));
            Value::Object(m).to_string()
        }
        _ => encoded.to_string(),
    }
}

/// The outcome as scripts see it: without the ack's time, which is for people.
pub(super) fn unstamped(mut v: Value) -> Value {
    if let Value::Object(m) = &mut v {
        m.remove("at_ms");
    }
    v
}

fn cursor(after: Option<&str>) -> Result<Option<&str>> {
    match after {
        Some(a) if a.len() > MAX_CURSOR_BYTES || a.chars().any(char::is_control) => {
            Err(Error::InvalidInput(format!(
                "cursor {:?} is not one a page of barriers gave",
                crate::text::cut_text(a.to_string(), 40)
            )))
        }
        Some("") | None => Ok(None),
        Some(a) => Ok(Some(a)),
    }
}

impl Barriers<'_> {
    /// Writes the list row of a barrier whose `meta` is there, unless one is (see the module
    /// docs). One call.
    pub(super) async fn list_created(&self, id: &str, meta: &Meta) -> Result<()> {
        self.budget.spend(1)?;
        let row = self.list_row(id, meta, None)?;
        match self.kv.put(row, PutMode::Create).await {
            Ok(_) | Err(Error::AlreadyExists { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Marks a barrier's list row complete. One call.
    pub(super) async fn list_done(&self, id: &str, meta: &Meta) -> Result<()> {
        self.budget.spend(1)?;
        let row = self.list_row(id, meta, Some(now_ms()))?;
        self.kv.put(row, PutMode::Overwrite).await.map(|_| ())
    }

    fn list_row(&self, id: &str, meta: &Meta, done_ms: Option<i64>) -> Result<NewItem> {
        let value = serde_json::to_string(&Listed::of(id, meta, done_ms))
            .map_err(|e| Error::InvalidInput(e.to_string()))?;
        Ok(NewItem {
            pk: list_pk(self.tenant),
            sk: list_sk(meta.created_ms, id),
            value,
            expires_at_s: meta.expires_at_s,
        })
    }

    /// A page of the tenant's barriers, newest first, of those `filter` takes, after the cursor
    /// `after` (a previous page's `next`). Reads at most [`MAX_SCAN`] rows: a page may come
    /// back short, with a cursor to go on.
    pub async fn list(
        &self,
        filter: Filter,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage> {
        let mut after = cursor(after)?.map(str::to_string);
        let limit = limit.clamp(1, 1000);
        let now = now_ms();
        let mut out = ListPage::default();
        loop {
            let want = if filter == Filter::All {
                limit - out.barriers.len()
            } else {
                1000
            };
            self.budget.spend(1)?;
            let page = self
                .kv
                .query(&list_pk(self.tenant), "", after.as_deref(), want)
                .await?;
            let mut last = None;
            let mut read = 0;
            for item in &page.items {
                read += 1;
                last = Some(item.sk.clone());
                let Ok(l) = serde_json::from_str::<Listed>(&item.value) else {
                    continue;
                };
                if filter.takes(l.state(now)) {
                    out.barriers.push(l);
                    if out.barriers.len() == limit {
                        break;
                    }
                }
            }
            out.scanned += read;
            // Rows left in this page, or pages after it.
            let more = read < page.items.len() || page.next.is_some();
            if !more {
                return Ok(out);
            }
            if out.barriers.len() == limit || out.scanned >= MAX_SCAN {
                out.next = last;
                return Ok(out);
            }
            after = last;
        }
    }

    /// How many of the tenant's barriers are open, overdue and complete: every list row read,
    /// a page of 1000 per call.
    pub async fn list_counts(&self) -> Result<ListCounts> {
        let now = now_ms();
        let mut c = ListCounts::default();
        let mut after: Option<String> = None;
        loop {
            self.budget.spend(1)?;
            let page = self
                .kv
                .query(&list_pk(self.tenant), "", after.as_deref(), 1000)
                .await?;
            for item in &page.items {
                // Only the two fields that decide the state are read (every row is read here).
                let Ok(t) = serde_json::from_str::<Times>(&item.value) else {
                    continue;
                };
                if t.done_ms.is_some() {
                    c.complete += 1;
                } else {
                    c.open += 1;
                    c.overdue += u64::from(t.deadline_ms.is_some_and(|d| now > d));
                }
            }
            match page.next {
                Some(n) => after = Some(n),
                None => return Ok(c),
            }
        }
    }

    /// The barrier's `meta` row, if it exists.
    pub async fn describe(&self, id: &str) -> Result<Option<Meta>> {
        super::check_id(id)?;
        self.meta(id).await
    }

    /// A page of a barrier's members in name order, after the member `after`, with their
    /// outcomes; `None` when the barrier does not exist. Two queries (one for `Pending` and
    /// `Failed`; `Resolved` reads outcomes only).
    pub async fn members(
        &self,
        id: &str,
        filter: MemberFilter,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Option<(Vec<Member>, Option<String>)>> {
        super::check_id(id)?;
        let limit = limit.clamp(1, 1000);
        let Some(meta) = self.meta(id).await? else {
            return Ok(None);
        };
        if meta.shards.is_some() {
            let (rows, next) = self
                .shard_page(id, &meta, after, limit, |v| match filter {
                    MemberFilter::All => true,
                    MemberFilter::Pending => v.is_empty(),
                    MemberFilter::Resolved => !v.is_empty(),
                    MemberFilter::Failed => v.contains("\"ok\":false"),
                })
                .await?;
            let all = rows
                .into_iter()
                .map(|(name, o)| Member::of(name, o.as_ref()))
                .collect();
            return Ok(Some((all, next)));
        }
        let pk = pk(self.tenant, id);
        let pending_prefix = meta.pending_prefix();
        let read = |prefix: String| {
            let after = after.map(|a| format!("{prefix}{a}"));
            let pk = pk.clone();
            async move {
                self.budget.spend(1)?;
                let page = self
                    .kv
                    .query(&pk, &prefix, after.as_deref(), limit + 1)
                    .await?;
                Ok::<_, Error>(
                    page.items
                        .into_iter()
                        .map(|it| (it.sk[prefix.len()..].to_string(), it.value))
                        .collect::<Vec<_>>(),
                )
            }
        };
        let pending = match filter {
            MemberFilter::All | MemberFilter::Pending => read(pending_prefix).await?,
            _ => Vec::new(),
        };
        let resolved = match filter {
            MemberFilter::All | MemberFilter::Resolved => read("o#".into()).await?,
            MemberFilter::Failed => read("f#".into()).await?,
            MemberFilter::Pending => Vec::new(),
        };
        let mut all: Vec<Member> = pending
            .into_iter()
            .map(|(name, _)| Member::of(name, None))
            .chain(resolved.into_iter().map(|(name, value)| {
                let v: Value = serde_json::from_str(&value).unwrap_or(Value::Null);
                Member::of(name, Some(&v))
            }))
            .collect();
        // A member acked between the two queries may be in both: its outcome wins.
        all.sort_by(|a, b| {
            a.name
                .cmp(&b.name)
                .then(b.ok.is_some().cmp(&a.ok.is_some()))
        });
        all.dedup_by(|later, first| later.name == first.name);
        let next = (all.len() > limit).then(|| {
            all.truncate(limit);
            all.last().map(|m| m.name.clone())
        });
        Ok(Some((all, next.flatten())))
    }

    /// The continuation's dispatch, as its claim row says. One call.
    pub async fn dispatch_state(&self, id: &str) -> Result<DispatchState> {
        super::check_id(id)?;
        let Some(d) = self.get(id, "d").await? else {
            return Ok(DispatchState::Unclaimed);
        };
        let v: Value = serde_json::from_str(&d.value).unwrap_or(Value::Null);
        Ok(if v["sent"] == Value::Bool(true) {
            DispatchState::Sent
        } else {
            DispatchState::Claimed(v["lease_until_ms"].as_i64().unwrap_or(0))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newer_barriers_sort_first_and_states_follow_the_row() {
        assert!(list_sk(2_000, "a") < list_sk(1_000, "a"));
        assert!(list_sk(1_000, "a") < list_sk(1_000, "b"));
        let l = Listed {
            id: "x".into(),
            created_ms: 0,
            members: 1,
            deadline_ms: Some(10),
            continue_with: None,
            done_ms: None,
        };
        assert_eq!(l.state(5), ListState::Open);
        assert_eq!(l.state(11), ListState::Overdue);
        let done = Listed {
            done_ms: Some(12),
            ..l
        };
        assert_eq!(done.state(11), ListState::Complete);
        assert!(Filter::Open.takes(ListState::Overdue));
        assert!(!Filter::Open.takes(ListState::Complete));
    }

    #[test]
    fn the_ack_time_is_kept_for_people_and_hidden_from_scripts() {
        let s = stamped(r#"{"ok":true,"result":1}"#, 42);
        let v: Value = serde_json::from_str(&s).unwrap();
        assert_eq!(v["at_ms"], 42);
        assert_eq!(unstamped(v), serde_json::json!({ "ok": true, "result": 1 }));
    }
}
