//! Tallies: items of named slots, each open until it is filled once, whose counts the store
//! keeps in the same write. What lets a barrier record an ack in one conditional write to a
//! small item, and know from that write's answer whether anything is left open, without a
//! transaction, a counter read first or a query of pending rows.
//!
//! A tally holds its slots (name -> value; an open slot's value is empty), how many are open,
//! how many were filled with a mark (a failed ack, say), and an optional close reason. On
//! DynamoDB it is one item whose slots are a map attribute and whose counts are numbers, changed
//! with one `UpdateItem` (conditions, `ADD`, `ReturnValues`); on the embedded store it is one
//! row changed in the writer's transaction.

use std::collections::BTreeMap;

use super::KvStore;
use crate::{Error, Result};

/// A tally to create: every slot open.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTally {
    /// Partition key.
    pub pk: String,
    /// Sort key.
    pub sk: String,
    /// The slots' names, each open.
    pub slots: Vec<String>,
    /// When it expires, in seconds since the epoch. Expired tallies are never returned.
    pub expires_at_s: i64,
}

/// A stored tally.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Tally {
    /// Partition key.
    pub pk: String,
    /// Sort key.
    pub sk: String,
    /// Every slot: its value once filled, empty while open.
    pub slots: BTreeMap<String, String>,
    /// How many slots are open.
    pub open: u64,
    /// How many slots were filled with a mark.
    pub marked: u64,
    /// The reason it was closed (no slot can be opened after), if it was.
    pub closed: Option<String>,
    /// When it expires.
    pub expires_at_s: i64,
}

/// One operation on tallies, in one backend call.
#[derive(Debug, Clone, PartialEq)]
pub enum TallyOp {
    /// Writes up to [`super::MAX_BATCH_ITEMS`] tallies whole, unconditionally.
    Create(Vec<NewTally>),
    /// Reads one tally.
    Get {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
    },
    /// Fills the open slot `slot` with `value` (not empty), if the tally lives longer than
    /// `live_until_s`: one fewer open, one more marked with `mark`.
    Fill {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// The slot.
        slot: String,
        /// Its value.
        value: String,
        /// Whether it counts into `marked`.
        mark: bool,
        /// The tally must expire later than this (seconds since the epoch).
        live_until_s: i64,
    },
    /// Adds open slots of these names, those not there yet, while some slot is open and the
    /// tally is not closed.
    Open {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// The names.
        slots: Vec<String>,
    },
    /// Closes the tally with `reason` unless it is closed (the first reason stays).
    Close {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// Why.
        reason: String,
    },
}

/// What a [`TallyOp`] answered.
#[derive(Debug, Clone, PartialEq)]
pub enum TallyAnswer {
    /// `Create` wrote its tallies.
    Created,
    /// `Get`: the tally, if it is there (and not expired).
    Found(Option<Tally>),
    /// `Fill` filled the slot: the tally after the write.
    Filled(Tally),
    /// `Fill`: the slot was filled already; the tally as it stands (nothing written).
    Taken(Tally),
    /// `Fill`: no such slot, or the tally expires too soon (the tally as it stands), or no
    /// tally (`None`); nothing written.
    Missed(Option<Tally>),
    /// `Open` added these slots (the others were there): the tally after the write.
    Opened(Vec<String>, Tally),
    /// `Open`: no slot is open, or the tally is closed (as it stands), or there is none.
    Refused(Option<Tally>),
    /// `Close`: the tally after it, with the first close reason.
    Closed(Tally),
}

impl TallyAnswer {
    /// An answer that does not fit its operation: a backend's bug, said as such.
    pub fn unexpected(self, op: &str) -> Error {
        Error::Backend {
            backend: "kv",
            message: format!("a tally's {op} was answered with {self:?}"),
            source: None,
        }
    }
}

/// Checks a tally operation before any backend sees it: slot names and values not empty, at
/// most [`super::MAX_BATCH_ITEMS`] tallies to create.
pub fn check_tally_op(op: &TallyOp) -> Result<()> {
    let bad = |what: &str| Err(Error::InvalidInput(format!("a tally's {what}")));
    match op {
        TallyOp::Create(items) => {
            super::check_batch_len(items.len())?;
            if items.iter().any(|t| t.slots.iter().any(String::is_empty)) {
                return bad("slot name may not be empty");
            }
        }
        TallyOp::Fill { slot, value, .. } => {
            if slot.is_empty() || value.is_empty() {
                return bad("slot and value may not be empty");
            }
        }
        TallyOp::Open { slots, .. } => {
            if slots.is_empty() || slots.iter().any(String::is_empty) {
                return bad("slots to open must be named");
            }
        }
        TallyOp::Get { .. } | TallyOp::Close { .. } => {}
    }
    Ok(())
}

/// Applies `op` to `t` (the tally as it stands, `None` when absent or expired) at `now_s`: the
/// tally to write, if any, and the answer. The rules every backend follows; the embedded store
/// runs it in its writer's transaction.
pub fn apply_tally(op: &TallyOp, t: Option<Tally>, now_s: i64) -> (Option<Tally>, TallyAnswer) {
    let t = t.filter(|t| t.expires_at_s > now_s);
    match op {
        TallyOp::Create(_) => (None, TallyAnswer::Created),
        TallyOp::Get { .. } => (None, TallyAnswer::Found(t)),
        TallyOp::Fill {
            slot,
            value,
            mark,
            live_until_s,
            ..
        } => {
            let Some(mut t) = t else {
                return (None, TallyAnswer::Missed(None));
            };
            match t.slots.get(slot) {
                Some(v) if v.is_empty() && t.expires_at_s > *live_until_s => {
                    t.slots.insert(slot.clone(), value.clone());
                    t.open = t.open.saturating_sub(1);
                    t.marked += u64::from(*mark);
                    (Some(t.clone()), TallyAnswer::Filled(t))
                }
                Some(v) if !v.is_empty() => (None, TallyAnswer::Taken(t)),
                _ => (None, TallyAnswer::Missed(Some(t))),
            }
        }
        TallyOp::Open { slots, .. } => {
            let Some(mut t) = t else {
                return (None, TallyAnswer::Refused(None));
            };
            if t.open == 0 || t.closed.is_some() {
                return (None, TallyAnswer::Refused(Some(t)));
            }
            let mut added = Vec::new();
            for s in slots {
                if !t.slots.contains_key(s) {
                    t.slots.insert(s.clone(), String::new());
                    added.push(s.clone());
                }
            }
            t.open += added.len() as u64;
            (Some(t.clone()), TallyAnswer::Opened(added, t))
        }
        TallyOp::Close { reason, .. } => {
            let Some(mut t) = t else {
                return (None, TallyAnswer::Missed(None));
            };
            if t.closed.is_none() {
                t.closed = Some(reason.clone());
            }
            (Some(t.clone()), TallyAnswer::Closed(t))
        }
    }
}

/// The tally ops of a [`KvStore`], typed.
#[async_trait::async_trait]
pub trait Tallies {
    /// Writes up to [`super::MAX_BATCH_ITEMS`] tallies in one call.
    async fn tally_create(&self, items: Vec<NewTally>) -> Result<()>;
    /// Reads one tally.
    async fn tally_get(&self, pk: &str, sk: &str) -> Result<Option<Tally>>;
}

#[async_trait::async_trait]
impl<K: KvStore + ?Sized> Tallies for K {
    async fn tally_create(&self, items: Vec<NewTally>) -> Result<()> {
        if items.is_empty() {
            return Ok(());
        }
        match self.tally(TallyOp::Create(items)).await? {
            TallyAnswer::Created => Ok(()),
            other => Err(other.unexpected("create")),
        }
    }

    async fn tally_get(&self, pk: &str, sk: &str) -> Result<Option<Tally>> {
        match self
            .tally(TallyOp::Get {
                pk: pk.into(),
                sk: sk.into(),
            })
            .await?
        {
            TallyAnswer::Found(t) => Ok(t),
            other => Err(other.unexpected("read")),
        }
    }
}
