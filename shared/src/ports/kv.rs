//! The key-value port: JSON items in partitions, with conditional writes, expiry and ordered
//! queries of one partition.

use async_trait::async_trait;

use super::PutMode;
use crate::Result;

/// An item to write.
#[derive(Debug, Clone, PartialEq)]
pub struct NewItem {
    /// Partition key.
    pub pk: String,
    /// Sort key within the partition.
    pub sk: String,
    /// The value, as JSON text.
    pub value: String,
    /// When the item expires, in seconds since the epoch. Expired items are never returned.
    pub expires_at_s: i64,
}

/// A stored item.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Partition key.
    pub pk: String,
    /// Sort key within the partition.
    pub sk: String,
    /// The value, as JSON text.
    pub value: String,
    /// When the item expires, in seconds since the epoch.
    pub expires_at_s: i64,
    /// Changes with every write; pass to [`PutMode::Update`] for a compare-and-set.
    pub version: String,
    /// Its counts ([`TxOp::Count`]); none after a put, which replaces the item whole.
    pub counts: Counts,
}

/// One page of a query.
#[derive(Debug, Clone, Default)]
pub struct ItemPage {
    /// Items in sort key order.
    pub items: Vec<Item>,
    /// Pass back as `after` for the next page; `None` on the last page.
    pub next: Option<String>,
}

impl ItemPage {
    /// A page from up to `limit + 1` items read in order: the first `limit`, with a cursor
    /// when there were more (reading one extra tells whether another page exists).
    pub fn from_overfetch(mut items: Vec<Item>, limit: usize) -> Self {
        let next = (items.len() > limit).then(|| {
            items.truncate(limit);
            items.last().map(|i| i.sk.clone())
        });
        ItemPage {
            items,
            next: next.flatten(),
        }
    }
}

/// The most items that [`KvStore::put_batch`] takes in one call (DynamoDB's BatchWriteItem).
pub const MAX_BATCH_ITEMS: usize = 25;

/// Refuses a batch write of more than [`MAX_BATCH_ITEMS`] items.
pub fn check_batch_len(items: usize) -> crate::Result<()> {
    if items > MAX_BATCH_ITEMS {
        return Err(crate::Error::InvalidInput(format!(
            "a batch write takes at most {MAX_BATCH_ITEMS} items, not {items}"
        )));
    }
    Ok(())
}

/// The most operations of one [`KvStore::transact`] call.
pub const MAX_TX_OPS: usize = 25;

/// Integers kept on an item beside its value, by name, changed only by [`TxOp::Count`] (atomic
/// adds, so racing writers commute). A count that is not there reads as 0.
pub type Counts = std::collections::BTreeMap<String, i64>;

/// The longest name of a count.
pub const MAX_COUNT_NAME: usize = 32;

/// How a count compares with a figure in a [`Count`]'s condition (a missing count is 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// Equal to it.
    Eq,
    /// Less than it.
    Lt,
}

impl Cmp {
    /// Whether `count` compares so with `figure`.
    pub fn holds(self, count: i64, figure: i64) -> bool {
        match self {
            Cmp::Eq => count == figure,
            Cmp::Lt => count < figure,
        }
    }
}

/// A change of one item's counts in a transaction ([`TxOp::Count`]): the item must be there
/// and live, and every condition of `when` hold; then `add` is added (commutative: writers
/// that race do not conflict unless a condition tells them apart), `set` is set, and the value
/// and expiry are replaced when given. The item takes the transaction's version, as a put's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Count {
    /// Partition key.
    pub pk: String,
    /// Sort key.
    pub sk: String,
    /// Conditions on counts: (name, comparison, figure), all of which must hold.
    pub when: Vec<(String, Cmp, i64)>,
    /// Added to counts (a missing one starts at 0).
    pub add: Vec<(String, i64)>,
    /// Counts set.
    pub set: Vec<(String, i64)>,
    /// The new value; `None` keeps it.
    pub value: Option<String>,
    /// The new expiry, in seconds since the epoch; `None` keeps it.
    pub expires_at_s: Option<i64>,
}

impl Count {
    /// Refuses names that are not 1 to [`MAX_COUNT_NAME`] bytes of `[a-z_]`, and a count both
    /// added to and set (or twice in either).
    pub fn check(&self) -> crate::Result<()> {
        let mut changed = std::collections::HashSet::new();
        let names = self.when.iter().map(|(n, _, _)| n);
        let changes = self.add.iter().chain(&self.set).map(|(n, _)| n);
        for n in names.clone().chain(changes.clone()) {
            if n.is_empty()
                || n.len() > MAX_COUNT_NAME
                || !n.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
            {
                return Err(crate::Error::InvalidInput(format!(
                    "a count's name must be 1 to {MAX_COUNT_NAME} bytes of [a-z_], not {n:?}"
                )));
            }
        }
        for n in changes {
            if !changed.insert(n) {
                return Err(crate::Error::InvalidInput(format!(
                    "count {n:?} is changed twice in one operation"
                )));
            }
        }
        Ok(())
    }

    /// `counts` after this change (its conditions not checked).
    pub fn apply(&self, counts: &Counts) -> Counts {
        let mut out = counts.clone();
        for (n, by) in &self.add {
            let c = out.entry(n.clone()).or_default();
            *c = c.saturating_add(*by);
        }
        for (n, v) in &self.set {
            out.insert(n.clone(), *v);
        }
        out
    }

    /// Whether every condition holds on `counts`.
    pub fn holds(&self, counts: &Counts) -> bool {
        self.when
            .iter()
            .all(|(n, cmp, figure)| cmp.holds(counts.get(n).copied().unwrap_or(0), *figure))
    }
}

/// One operation of a transaction. Conditions treat expired items as absent.
#[derive(Debug, Clone, PartialEq)]
pub enum TxOp {
    /// The item must exist and live at least until `live_until_s` (seconds since the epoch).
    Check {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
        /// The item's expiry must be later than this.
        live_until_s: i64,
    },
    /// No live item may be there (an expired one counts as absent).
    Absent {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
    },
    /// Writes an item under a mode.
    Put {
        /// The item.
        item: NewItem,
        /// Its condition.
        mode: PutMode,
    },
    /// Deletes an item, which must exist.
    Delete {
        /// Partition key.
        pk: String,
        /// Sort key.
        sk: String,
    },
    /// Changes an item's counts ([`Count`]).
    Count(Count),
}

/// What [`KvStore::transact_on`] makes of the item it is given: the operations of one
/// transaction (none: write nothing). It may run on another thread, inside the backend's
/// transaction, so it owns what it needs and returns quickly.
pub type TxPlan = Box<dyn FnOnce(Option<Item>) -> Result<Vec<TxOp>> + Send>;

/// A new version token: random, 16 hex digits. Made once for each write a caller means, and
/// sent with every attempt of it, it is what tells that write's own earlier attempt from
/// another writer's ([`KvStore::put_as`]).
pub fn new_token() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// A key-value table. Every read is strongly consistent and ignores expired items, whether or
/// not the backend has deleted them yet.
#[async_trait]
pub trait KvStore: std::fmt::Debug + Send + Sync {
    /// Reads one item.
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>>;

    /// Writes one item under `mode` and returns its new version. An expired item counts as
    /// absent for [`PutMode::Create`]. [`KvStore::put_as`] with a new token.
    async fn put(&self, item: NewItem, mode: PutMode) -> Result<String> {
        self.put_as(item, mode, &new_token()).await
    }

    /// Writes one item under `mode` with `token` as its new version, and returns it. A write
    /// whose condition fails because the item already holds `token` was applied by an earlier
    /// attempt of this same write (whose answer was lost: the SDK's retry of a put that
    /// reached DynamoDB): it answers `Ok(token)`, as the first attempt would have, never
    /// [`crate::Error::AlreadyExists`] or [`crate::Error::Precondition`]. So `token` must be
    /// new for every write a caller means (as [`new_token`] makes them), and the same for
    /// every attempt of one.
    async fn put_as(&self, item: NewItem, mode: PutMode, token: &str) -> Result<String>;

    /// Deletes one item; with `if_version`, only if it still has that version
    /// ([`crate::Error::Precondition`] otherwise). Returns whether an item was there.
    async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool>;

    /// Items of partition `pk` whose sort key starts with `prefix`, in sort key order, strictly
    /// after `after`, at most `limit`.
    async fn query(
        &self,
        pk: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage>;

    /// The same items in descending sort key order: strictly before `before` (from the last
    /// when `None`), at most `limit`; the page's `next` continues backwards. Backward paging
    /// of the rendezvous lists.
    async fn query_back(
        &self,
        pk: &str,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage>;

    /// Writes up to [`MAX_BATCH_ITEMS`] items unconditionally, in one backend call.
    async fn put_batch(&self, items: Vec<NewItem>) -> Result<()>;

    /// Applies up to [`MAX_TX_OPS`] operations atomically, in one backend call: all or none.
    /// `Ok(Err(i))` means the condition of `ops[i]` (the first failing one, in order) failed and
    /// nothing was applied. [`KvStore::transact_as`] with a new token.
    async fn transact(&self, ops: Vec<TxOp>) -> Result<Result<(), usize>> {
        self.transact_as(ops, &new_token()).await
    }

    /// [`KvStore::transact`], every item it puts or counts with `token` as its version. When a
    /// condition fails and an item the transaction puts or counts already holds `token`, an earlier attempt of this
    /// same transaction was applied (its answer lost): it answers `Ok(Ok(()))`, as that attempt
    /// would have. A transaction that puts nothing cannot tell, and answers as `transact`.
    async fn transact_as(&self, ops: Vec<TxOp>, token: &str) -> Result<Result<(), usize>>;

    /// Applies the transaction that `plan` makes of the item at `seen`'s key, as
    /// [`KvStore::transact`] does, in one backend call; an empty plan writes nothing and
    /// answers `Ok(Ok(()))`. `seen` is the item as the caller read it, and the plan's
    /// operations hold their condition on it (a [`PutMode::Update`] of its version, say).
    ///
    /// The default plans on `seen`: should the item change before the commit, that condition
    /// fails as in `transact` and the caller reads again. A backend whose writes all go
    /// through one writer (the embedded one) reads the item again in the transaction and plans
    /// on what it holds then: the condition holds, and peers racing for one item never lose a
    /// round to each other. (Rendezvous arrivals used it; they now add to a count,
    /// [`TxOp::Count`], which commutes on every backend.) `None` is given to the plan
    /// when the item is gone.
    async fn transact_on(&self, seen: Item, plan: TxPlan) -> Result<Result<(), usize>> {
        let ops = plan(Some(seen))?;
        if ops.is_empty() {
            return Ok(Ok(()));
        }
        self.transact(ops).await
    }

    /// One operation on tallies ([`super::TallyOp`]), in one backend call. Required, not
    /// defaulted: a wrapper that forgot to forward it would fail every barrier ack.
    async fn tally(&self, op: super::TallyOp) -> Result<super::TallyAnswer>;

    /// Makes the writes that this backend answered before syncing them (inside
    /// [`super::durability::deferring`]) durable. The default: every write is durable when it
    /// returns.
    async fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Whether [`Self::flush`] may have anything to do: false lets a caller skip it and the
    /// boxed future every call of it costs (three a request served). The default, true, is
    /// right for any backend; one that never defers a write, or knows that nothing is
    /// pending, says false.
    fn may_need_flush(&self) -> bool {
        true
    }

    /// The store's generation counter, where it has one that costs no I/O to read: what lets
    /// a process cache what it read from the store (verified API keys) and still see at once
    /// that another process changed it. `None` (the default): read the store every time.
    fn generation(&self) -> Option<&dyn Generation> {
        None
    }
}

/// A counter that every process using one store shares, read without I/O: whoever changes
/// something that others may have cached bumps it once the change is committed; a cache entry
/// taken under an older value is stale.
pub trait Generation: std::fmt::Debug + Send + Sync {
    /// Its value now.
    fn current(&self) -> u64;
    /// Adds one, seen by every process at once.
    fn bump(&self);
}
