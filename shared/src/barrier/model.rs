//! The barrier's values: what create takes, what an ack records and returns, what status says.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{MAX_MEMBER_BYTES, MAX_OUTCOME_BYTES};
use crate::ports::Item;
use crate::{Error, Result};

/// What `native.barrier.create` takes.
#[derive(Debug, Clone, Default)]
pub struct CreateSpec {
    /// The id; generated when absent.
    pub id: Option<String>,
    /// The member names, fixed at create.
    pub members: Vec<String>,
    /// The script whose `on_queue` gets `{ barrier = id }` once every member is resolved.
    pub continue_with: Option<String>,
    /// Handed to the continuation.
    pub state: Value,
    /// Seconds after creation when the barrier is overdue (`status().overdue`).
    pub deadline_s: Option<u64>,
    /// The script whose `on_queue` gets `{ barrier = id, overdue = true }` once, when the
    /// deadline passes with members pending.
    pub on_overdue: Option<String>,
}

impl CreateSpec {
    /// Checks the member list: not empty, names 1 to 1024 bytes without control characters,
    /// no name twice.
    pub fn validate(&self) -> Result<()> {
        if self.members.is_empty() {
            return Err(Error::InvalidInput(
                "barrier.create: members is empty; a barrier needs at least one member".into(),
            ));
        }
        let mut seen = HashSet::with_capacity(self.members.len());
        for m in &self.members {
            if m.is_empty() || m.len() > MAX_MEMBER_BYTES || m.chars().any(char::is_control) {
                // Quoted cut: a hostile member may be megabytes long.
                let m = crate::text::cut_text(m.clone(), 80);
                return Err(Error::InvalidInput(format!(
                    "barrier.create: member {m:?} must be 1 to {MAX_MEMBER_BYTES} bytes without control characters"
                )));
            }
            if !seen.insert(m.as_str()) {
                return Err(Error::InvalidInput(format!(
                    "barrier.create: member {m:?} is listed twice"
                )));
            }
        }
        Ok(())
    }

    /// A hash of the member list, to tell a retried create from a different one.
    pub fn members_hash(&self) -> String {
        let mut h = Sha256::new();
        for m in &self.members {
            h.update(m.as_bytes());
            h.update([0]);
        }
        hex::encode(&h.finalize()[..16])
    }
}

/// The barrier's `meta` row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// How many members.
    pub members: u64,
    /// The continuation script.
    pub continue_with: Option<String>,
    /// The state for the continuation.
    pub state: Value,
    /// Seconds after creation when the barrier is overdue.
    pub deadline_s: Option<u64>,
    /// When it was created.
    pub created_ms: i64,
    /// When its rows expire.
    pub expires_at_s: i64,
    /// The generation: the random token of the create call that wrote this meta row. Its
    /// pending rows are `p#<generation>#<member>`; pending rows that another create call wrote
    /// (one that lost the race, or died half way) are under another token and count for
    /// nothing. Absent in barriers created before generations: their rows are `p#<member>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<String>,
    /// The overdue script, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_overdue: Option<String>,
    /// The id of the overdue timer the create call set, which the completing ack cancels, so
    /// that a complete barrier's timer is not listed until it lapses. Absent in barriers
    /// created before it was kept: their timer stays until due, and then sends nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overdue_timer: Option<String>,
    /// The chain that created the barrier: its continuation runs in it, and each ack is
    /// recorded in it as a step ([`crate::observe::step`]). Absent in barriers created before
    /// issue 55 and outside any chain: the continuation then runs in the completing ack's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
    /// How many shards hold the members (see `shards`); absent in barriers created before
    /// shards, whose members are rows of their own (`p#`, `o#`), acked as they were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shards: Option<u32>,
}

impl Meta {
    /// The sort key prefix of this barrier's pending rows.
    pub(super) fn pending_prefix(&self) -> String {
        pending_prefix(self.generation.as_deref())
    }

    pub(super) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub(super) fn from_item(item: &Item) -> Result<Self> {
        let mut meta: Meta = serde_json::from_str(&item.value).map_err(|e| Error::Backend {
            backend: "barrier",
            message: format!("barrier meta row is damaged: {e}"),
            source: None,
        })?;
        // The row's own expiry, should it be the earlier: acks stop an hour before either.
        meta.expires_at_s = meta.expires_at_s.min(item.expires_at_s);
        Ok(meta)
    }
}

/// The sort key prefix of the pending rows of a generation (`None`: before generations).
pub(super) fn pending_prefix(generation: Option<&str>) -> String {
    match generation {
        Some(g) => format!("p#{g}#"),
        None => "p#".into(),
    }
}

/// One member's outcome: `{ ok, error?, result? }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    /// Whether the member succeeded; a failed member is resolved all the same.
    pub ok: bool,
    /// Why it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Anything small the partner answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
}

impl Outcome {
    /// The outcome as stored, at most [`MAX_OUTCOME_BYTES`].
    pub fn encode(&self) -> Result<String> {
        let s = serde_json::to_string(self).map_err(|e| Error::InvalidInput(e.to_string()))?;
        if s.len() > MAX_OUTCOME_BYTES {
            return Err(Error::InvalidInput(format!(
                "barrier outcome is {} bytes encoded; the limit is {MAX_OUTCOME_BYTES} (8 KB): put large results in a bucket and ack with their key",
                s.len()
            )));
        }
        Ok(s)
    }
}

/// What an ack reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckResult {
    /// The barrier's chain ([`Meta::chain`]), where the caller records the ack as a step.
    pub chain: Option<String>,
    /// The member was already resolved; this ack changed nothing.
    pub duplicate: bool,
    /// No member is pending.
    pub complete: bool,
    /// This call sent the continuation.
    pub dispatched: bool,
}

/// Where a barrier stands.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The id.
    pub id: String,
    /// Members in all.
    pub total: u64,
    /// Members not yet acknowledged.
    pub pending: u64,
    /// Members acknowledged.
    pub resolved: u64,
    /// Members acknowledged with `ok = false`.
    pub failed: u64,
    /// Nothing pending.
    pub complete: bool,
    /// The continuation was sent (and marked so).
    pub dispatched: bool,
    /// The continuation script.
    pub continue_with: Option<String>,
    /// When it was created.
    pub created_ms: i64,
    /// `created + deadline_s`, when a deadline was given.
    pub deadline_ms: Option<i64>,
    /// Past its deadline and not complete.
    pub overdue: bool,
    /// When its rows expire.
    pub expires_at_s: i64,
    /// Names of pending members, a page of them.
    pub pending_members: Vec<String>,
    /// Pass back for the next page of pending members.
    pub cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_meta_row_written_before_chains_is_read_without_one() {
        let old = r#"{"members":2,"continue_with":"next","state":{},"deadline_s":null,"created_ms":1,"expires_at_s":2,"generation":"g"}"#;
        let item = Item {
            pk: "b#t#x".into(),
            sk: "meta".into(),
            value: old.into(),
            version: Default::default(),
            expires_at_s: 2,
            counts: Default::default(),
        };
        let meta = Meta::from_item(&item).unwrap();
        assert_eq!(meta.chain, None);
        assert_eq!(meta.continue_with.as_deref(), Some("next"));
        // And a chain is written only when there is one.
        assert!(!meta.to_json().contains("chain"));
    }
}
