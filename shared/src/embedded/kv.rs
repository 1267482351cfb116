//! The key-value table of the embedded backend.

use async_trait::async_trait;
use rusqlite::{params, OptionalExtension};

use super::{db_err, token, Embedded};
use crate::ports::{
    apply_tally, check_batch_len, check_tally_op, new_token, now_ms, Count, Counts, Item, ItemPage,
    KvStore, NewItem, PutMode, Tally, TallyAnswer, TallyOp, TxOp, TxPlan, MAX_TX_OPS,
};
use crate::{Error, Result};

fn now_s() -> i64 {
    now_ms() / 1000
}

/// An item written whole, a new version with it (put, put_batch, a transaction's put).
const PUT: &str =
    "INSERT OR REPLACE INTO kv (pk, sk, value, expires_at, version) VALUES (?1, ?2, ?3, ?4, ?5)";
/// An item deleted (delete, a transaction's delete).
const DELETE: &str = "DELETE FROM kv WHERE pk = ?1 AND sk = ?2";

fn get_row(conn: &rusqlite::Connection, pk: &str, sk: &str) -> Result<Option<Item>> {
    // Prepared once per connection: every request reads its API key through here, and
    // SQLite's parser was a few percent of an invoke (issue 31).
    super::query_row(
        conn,
        "SELECT value, expires_at, version, counts FROM kv WHERE pk = ?1 AND sk = ?2 AND expires_at > ?3",
        params![pk, sk, now_s()],
        |r| {
            Ok(Item {
                pk: pk.to_string(),
                sk: sk.to_string(),
                value: r.get(0)?,
                expires_at_s: r.get(1)?,
                version: r.get(2)?,
                counts: counts_of(r.get(3)?),
            })
        },
    )
    .optional()
    .map_err(db_err)
}

/// An item's counts as the `counts` column holds them (a JSON object, or NULL for none). A
/// column that does not parse reads as none: only [`count_row`] writes it.
fn counts_of(text: Option<String>) -> Counts {
    text.and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default()
}

/// Applies a [`Count`] whose conditions held to the live item `old`, with version `token`.
fn count_row(tx: &rusqlite::Connection, c: &Count, old: &Item, token: &str) -> Result<()> {
    let counts = serde_json::to_string(&c.apply(&old.counts)).map_err(|e| Error::Backend {
        backend: "sqlite",
        message: format!("cannot write the counts of item {:?}/{:?}: {e}", c.pk, c.sk),
        source: None,
    })?;
    super::execute(
        tx,
        "UPDATE kv SET value = ?3, expires_at = ?4, version = ?5, counts = ?6 WHERE pk = ?1 AND sk = ?2",
        params![
            c.pk,
            c.sk,
            c.value.as_deref().unwrap_or(&old.value),
            c.expires_at_s.unwrap_or(old.expires_at_s),
            token,
            counts
        ],
    )
    .map_err(db_err)?;
    Ok(())
}

/// One page of `pk`'s items under `prefix` (at most 1 000), read with `sql`, whose `?3` is the
/// page's bound (`where_.2`), `?5` now and `?6` one item over the page, to tell whether there
/// is a page after it.
fn page(
    conn: &rusqlite::Connection,
    sql: &str,
    where_: (&str, &str, &dyn rusqlite::ToSql),
    limit: usize,
) -> Result<ItemPage> {
    let (pk, prefix, bound) = where_;
    let limit = limit.clamp(1, 1000);
    let mut stmt = conn.prepare_cached(sql).map_err(db_err)?;
    let rows = stmt
        .query_map(
            params![
                pk,
                prefix,
                bound,
                prefix.chars().count() as i64,
                now_s(),
                limit as i64 + 1
            ],
            |r| {
                Ok(Item {
                    pk: pk.to_string(),
                    sk: r.get(0)?,
                    value: r.get(1)?,
                    expires_at_s: r.get(2)?,
                    version: r.get(3)?,
                    counts: counts_of(r.get(4)?),
                })
            },
        )
        .map_err(db_err)?;
    let items = rows.collect::<Result<Vec<_>, _>>().map_err(db_err)?;
    Ok(ItemPage::from_overfetch(items, limit))
}

/// A transaction's operations are 1 to [`MAX_TX_OPS`], at most one per item (as on DynamoDB:
/// code that works here works there).
fn check_tx(ops: &[TxOp]) -> Result<()> {
    if ops.is_empty() || ops.len() > MAX_TX_OPS {
        return Err(Error::InvalidInput(format!(
            "a transaction takes 1 to {MAX_TX_OPS} operations, not {}",
            ops.len()
        )));
    }
    let mut items = std::collections::HashSet::new();
    for op in ops {
        if let TxOp::Count(c) = op {
            c.check()?;
        }
        let key = match op {
            TxOp::Check { pk, sk, .. } | TxOp::Absent { pk, sk } | TxOp::Delete { pk, sk } => {
                (pk, sk)
            }
            TxOp::Put { item, .. } => (&item.pk, &item.sk),
            TxOp::Count(c) => (&c.pk, &c.sk),
        };
        if !items.insert(key) {
            return Err(Error::InvalidInput(format!(
                "a transaction may not have two operations on one item ({}/{})",
                key.0, key.1
            )));
        }
    }
    Ok(())
}

/// Applies `ops` in the writer's transaction `tx`, each item put with version `token`: every
/// condition is checked first, in order, so that the first failing one is reported
/// (`Ok(Err(i))`) and nothing is written; unless an item it puts holds `token` already (an
/// earlier attempt of this transaction was applied), which answers `Ok(Ok(()))`.
fn apply_tx(tx: &rusqlite::Connection, ops: &[TxOp], token: &str) -> Result<Result<(), usize>> {
    for (i, op) in ops.iter().enumerate() {
        let ok = match op {
            TxOp::Check {
                pk,
                sk,
                live_until_s,
            } => get_row(tx, pk, sk)?.is_some_and(|it| it.expires_at_s > *live_until_s),
            TxOp::Absent { pk, sk } => get_row(tx, pk, sk)?.is_none(),
            TxOp::Put { item, mode } => {
                let old = get_row(tx, &item.pk, &item.sk)?;
                match mode {
                    PutMode::Overwrite => true,
                    PutMode::Create => old.is_none(),
                    PutMode::Update(v) => old.is_some_and(|o| o.version == *v),
                }
            }
            TxOp::Delete { pk, sk } => get_row(tx, pk, sk)?.is_some(),
            TxOp::Count(c) => get_row(tx, &c.pk, &c.sk)?.is_some_and(|it| c.holds(&it.counts)),
        };
        if !ok {
            for op in ops {
                if let TxOp::Put { item, .. } = op {
                    if get_row(tx, &item.pk, &item.sk)?.is_some_and(|o| o.version == token) {
                        return Ok(Ok(()));
                    }
                }
                if let TxOp::Count(c) = op {
                    if get_row(tx, &c.pk, &c.sk)?.is_some_and(|o| o.version == token) {
                        return Ok(Ok(()));
                    }
                }
            }
            return Ok(Err(i));
        }
    }
    for op in ops {
        match op {
            TxOp::Check { .. } | TxOp::Absent { .. } => {}
            TxOp::Put { item, .. } => {
                super::execute(
                    tx,
                    PUT,
                    params![item.pk, item.sk, item.value, item.expires_at_s, token],
                )
                .map_err(db_err)?;
            }
            TxOp::Delete { pk, sk } => {
                super::execute(tx, DELETE, params![pk, sk]).map_err(db_err)?;
            }
            TxOp::Count(c) => {
                // Checked above: the item is there and live.
                if let Some(old) = get_row(tx, &c.pk, &c.sk)? {
                    count_row(tx, c, &old, token)?;
                }
            }
        }
    }
    Ok(Ok(()))
}

/// A tally as the embedded store keeps it: one row whose value is the tally as JSON.
#[derive(serde::Serialize, serde::Deserialize)]
struct StoredTally {
    slots: std::collections::BTreeMap<String, String>,
    open: u64,
    marked: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    closed: Option<String>,
}

fn tally_of(item: Item) -> Result<Tally> {
    let t: StoredTally = serde_json::from_str(&item.value).map_err(|e| Error::Backend {
        backend: "embedded",
        message: format!("item {:?}/{:?} is no tally: {e}", item.pk, item.sk),
        source: None,
    })?;
    Ok(Tally {
        pk: item.pk,
        sk: item.sk,
        slots: t.slots,
        open: t.open,
        marked: t.marked,
        closed: t.closed,
        expires_at_s: item.expires_at_s,
    })
}

fn put_tally(tx: &rusqlite::Connection, t: Tally) -> Result<()> {
    let value = serde_json::to_string(&StoredTally {
        slots: t.slots,
        open: t.open,
        marked: t.marked,
        closed: t.closed,
    })
    .map_err(|e| Error::InvalidInput(e.to_string()))?;
    super::execute(tx, PUT, params![t.pk, t.sk, value, t.expires_at_s, token()]).map_err(db_err)?;
    Ok(())
}

/// Runs a tally operation in the writer's transaction `tx`: read, [`apply_tally`], write.
fn run_tally(tx: &rusqlite::Connection, op: &TallyOp) -> Result<TallyAnswer> {
    let (pk, sk) = match op {
        TallyOp::Create(items) => {
            for t in items {
                put_tally(
                    tx,
                    Tally {
                        pk: t.pk.clone(),
                        sk: t.sk.clone(),
                        slots: t.slots.iter().map(|s| (s.clone(), String::new())).collect(),
                        open: t.slots.len() as u64,
                        marked: 0,
                        closed: None,
                        expires_at_s: t.expires_at_s,
                    },
                )?;
            }
            return Ok(TallyAnswer::Created);
        }
        TallyOp::Get { pk, sk }
        | TallyOp::Fill { pk, sk, .. }
        | TallyOp::Open { pk, sk, .. }
        | TallyOp::Close { pk, sk, .. } => (pk, sk),
    };
    let seen = get_row(tx, pk, sk)?.map(tally_of).transpose()?;
    let (write, answer) = apply_tally(op, seen, now_s());
    if let Some(t) = write {
        put_tally(tx, t)?;
    }
    Ok(answer)
}

#[async_trait]
impl KvStore for Embedded {
    async fn tally(&self, op: TallyOp) -> Result<TallyAnswer> {
        check_tally_op(&op)?;
        if let TallyOp::Get { pk, sk } = &op {
            let seen = self.read(|c| get_row(c, pk, sk))?;
            return Ok(TallyAnswer::Found(seen.map(tally_of).transpose()?));
        }
        self.write(move |tx| run_tally(tx, &op)).await
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
        self.read(|c| get_row(c, pk, sk))
    }

    fn generation(&self) -> Option<&dyn crate::ports::Generation> {
        self.inner
            .generation
            .as_ref()
            .map(|g| g as &dyn crate::ports::Generation)
    }

    async fn put_as(&self, item: NewItem, mode: PutMode, token: &str) -> Result<String> {
        let token = token.to_string();
        self.write(move |tx| {
            let old = get_row(tx, &item.pk, &item.sk)?;
            if old.as_ref().is_some_and(|o| o.version == token) {
                // This write's own earlier attempt.
                return Ok(token);
            }
            let what = || format!("item {:?}/{:?}", item.pk, item.sk);
            match (&mode, &old) {
                (PutMode::Create, Some(_)) => return Err(Error::AlreadyExists { what: what() }),
                (PutMode::Update(v), Some(o)) if o.version != *v => {
                    return Err(Error::Precondition {
                        what: format!("{} changed", what()),
                    })
                }
                (PutMode::Update(_), None) => {
                    return Err(Error::Precondition {
                        what: format!("{} is gone", what()),
                    })
                }
                _ => {}
            }
            super::execute(
                tx,
                PUT,
                params![item.pk, item.sk, item.value, item.expires_at_s, token],
            )
            .map_err(db_err)?;
            Ok(token)
        })
        .await
    }

    async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool> {
        let (pk, sk) = (pk.to_string(), sk.to_string());
        let if_version = if_version.map(str::to_string);
        self.write(move |tx| {
            let old = get_row(tx, &pk, &sk)?;
            if let Some(v) = if_version {
                if old.as_ref().map(|o| o.version.as_str()) != Some(v.as_str()) {
                    return Err(Error::Precondition {
                        what: format!("item {pk:?}/{sk:?} changed or is gone"),
                    });
                }
            }
            super::execute(tx, DELETE, params![pk, sk]).map_err(db_err)?;
            Ok(old.is_some())
        })
        .await
    }

    async fn query(
        &self,
        pk: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        self.read(|conn| {
            page(
                conn,
                "SELECT sk, value, expires_at, version, counts FROM kv
                 WHERE pk = ?1 AND sk >= ?2 AND sk > ?3 AND substr(sk, 1, ?4) = ?2 AND expires_at > ?5
                 ORDER BY sk LIMIT ?6",
                (pk, prefix, &after.unwrap_or("")),
                limit,
            )
        })
    }

    async fn query_back(
        &self,
        pk: &str,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        // Two statements rather than `(?3 IS NULL OR sk < ?3)`, which SQLite cannot use as a
        // bound of the index range.
        let sql = if before.is_some() {
            "SELECT sk, value, expires_at, version, counts FROM kv
             WHERE pk = ?1 AND sk >= ?2 AND sk < ?3
               AND substr(sk, 1, ?4) = ?2 AND expires_at > ?5
             ORDER BY sk DESC LIMIT ?6"
        } else {
            "SELECT sk, value, expires_at, version, counts FROM kv
             WHERE pk = ?1 AND sk >= ?2 AND ?3 IS NULL
               AND substr(sk, 1, ?4) = ?2 AND expires_at > ?5
             ORDER BY sk DESC LIMIT ?6"
        };
        self.read(|conn| page(conn, sql, (pk, prefix, &before), limit))
    }

    async fn put_batch(&self, items: Vec<NewItem>) -> Result<()> {
        check_batch_len(items.len())?;
        self.write(move |tx| {
            for item in &items {
                super::execute(
                    tx,
                    PUT,
                    params![item.pk, item.sk, item.value, item.expires_at_s, token()],
                )
                .map_err(db_err)?;
            }
            Ok(())
        })
        .await
    }

    async fn transact_as(&self, ops: Vec<TxOp>, token: &str) -> Result<Result<(), usize>> {
        check_tx(&ops)?;
        let token = token.to_string();
        self.write(move |tx| apply_tx(tx, &ops, &token)).await
    }

    /// Reads the item again in the writer's transaction and plans on it there: nothing can
    /// change it between the read and the commit.
    async fn transact_on(&self, seen: Item, plan: TxPlan) -> Result<Result<(), usize>> {
        self.write(move |tx| {
            let ops = plan(get_row(tx, &seen.pk, &seen.sk)?)?;
            if ops.is_empty() {
                return Ok(Ok(()));
            }
            check_tx(&ops)?;
            apply_tx(tx, &ops, &new_token())
        })
        .await
    }

    async fn flush(&self) -> Result<()> {
        self.flush_writes().await
    }

    fn may_need_flush(&self) -> bool {
        self.has_unsynced_writes()
    }
}
