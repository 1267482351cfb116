//! The key-value port over one DynamoDB table.
//!
//! Schema: string `pk` (hash key) and `sk` (range key); the value as JSON text in `val`, the
//! version token in `ver`, the expiry in `ttl` (number, epoch seconds; the table's TTL
//! attribute). DynamoDB deletes expired items only eventually (within days), so every read,
//! query and condition here treats an item whose `ttl` has passed as absent. Reads are strongly
//! consistent. An item's counts ([`TxOp::Count`]) are number attributes beside them, each
//! named `c_<count>`.

use std::collections::HashMap;
use std::time::Duration;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, PutRequest, ReturnValue,
    ReturnValuesOnConditionCheckFailure, TransactWriteItem, Update, WriteRequest,
};

use super::{sdk_err, token, LazyClient};
use crate::ports::{
    check_batch_len, now_ms, Cmp, Count, Counts, Item, ItemPage, KvStore, NewItem, PutMode, TxOp,
    MAX_TX_OPS,
};
use crate::{Error, Result};

pub(super) type Attrs = HashMap<String, AttributeValue>;

/// Attempts of a batch write before unprocessed items become an error.
const BATCH_ATTEMPTS: u32 = 8;

/// The key-value table in DynamoDB.
#[derive(Debug, Clone)]
pub struct DynamoKv {
    pub(super) client: LazyClient<aws_sdk_dynamodb::Client>,
    pub(super) table: String,
}

pub(super) fn now_s() -> i64 {
    now_ms() / 1000
}

pub(super) fn s(v: &str) -> AttributeValue {
    AttributeValue::S(v.to_string())
}

pub(super) fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

pub(super) fn key(pk: &str, sk: &str) -> Attrs {
    HashMap::from([("pk".to_string(), s(pk)), ("sk".to_string(), s(sk))])
}

fn attrs(item: &NewItem, version: &str) -> Attrs {
    HashMap::from([
        ("pk".to_string(), s(&item.pk)),
        ("sk".to_string(), s(&item.sk)),
        ("val".to_string(), s(&item.value)),
        ("ver".to_string(), s(version)),
        ("ttl".to_string(), n(item.expires_at_s)),
    ])
}

/// An item as stored, or `None` when it is expired or malformed.
fn item_of(a: &Attrs, now: i64) -> Option<Item> {
    let text = |k: &str| a.get(k).and_then(|v| v.as_s().ok()).cloned();
    let ttl = a
        .get("ttl")
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse::<i64>().ok())?;
    if ttl <= now {
        return None;
    }
    Some(Item {
        pk: text("pk")?,
        sk: text("sk")?,
        value: text("val")?,
        expires_at_s: ttl,
        version: text("ver")?,
        counts: counts_of(a),
    })
}

/// The prefix of the attributes that hold an item's counts.
const COUNT_PREFIX: &str = "c_";

/// An item's counts: its number attributes named `c_<count>`.
fn counts_of(a: &Attrs) -> Counts {
    a.iter()
        .filter_map(|(k, v)| {
            let name = k.strip_prefix(COUNT_PREFIX)?;
            Some((name.to_string(), v.as_n().ok()?.parse::<i64>().ok()?))
        })
        .collect()
}

/// The `Update` of a transaction for a [`Count`], with `version` as the item's new version:
/// the item there and live and each condition met (a missing count as 0: `attribute_not_exists`
/// where 0 satisfies the comparison); `ADD` for the additions (commutative), `SET` for the rest.
fn count_update(table: &str, c: &Count, version: &str, now: i64) -> Result<Update> {
    c.check()?;
    let mut names = HashMap::from([
        ("#ttl".to_string(), "ttl".to_string()),
        ("#ver".to_string(), "ver".to_string()),
    ]);
    let mut values = HashMap::from([
        (":now".to_string(), n(now)),
        (":ver".to_string(), s(version)),
    ]);
    let mut cond = vec!["attribute_exists(pk) AND #ttl > :now".to_string()];
    for (i, (name, cmp, figure)) in c.when.iter().enumerate() {
        let (a, v) = (format!("#w{i}"), format!(":w{i}"));
        names.insert(a.clone(), format!("{COUNT_PREFIX}{name}"));
        values.insert(v.clone(), n(*figure));
        let op = match cmp {
            Cmp::Eq => "=",
            Cmp::Lt => "<",
        };
        cond.push(if cmp.holds(0, *figure) {
            format!("(attribute_not_exists({a}) OR {a} {op} {v})")
        } else {
            format!("{a} {op} {v}")
        });
    }
    let mut set = vec!["#ver = :ver".to_string()];
    if let Some(value) = &c.value {
        names.insert("#val".to_string(), "val".to_string());
        values.insert(":val".to_string(), s(value));
        set.push("#val = :val".to_string());
    }
    if let Some(ttl) = c.expires_at_s {
        values.insert(":ttl".to_string(), n(ttl));
        set.push("#ttl = :ttl".to_string());
    }
    for (i, (name, v)) in c.set.iter().enumerate() {
        names.insert(format!("#s{i}"), format!("{COUNT_PREFIX}{name}"));
        values.insert(format!(":s{i}"), n(*v));
        set.push(format!("#s{i} = :s{i}"));
    }
    let mut add = Vec::new();
    for (i, (name, by)) in c.add.iter().enumerate() {
        names.insert(format!("#a{i}"), format!("{COUNT_PREFIX}{name}"));
        values.insert(format!(":a{i}"), n(*by));
        add.push(format!("#a{i} :a{i}"));
    }
    let mut expr = format!("SET {}", set.join(", "));
    if !add.is_empty() {
        expr.push_str(&format!(" ADD {}", add.join(", ")));
    }
    Update::builder()
        .table_name(table)
        .set_key(Some(key(&c.pk, &c.sk)))
        .update_expression(expr)
        .condition_expression(cond.join(" AND "))
        .set_expression_attribute_names(Some(names))
        .set_expression_attribute_values(Some(values))
        .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
        .build()
        .map_err(|e| sdk_err("dynamodb", "cannot build a transaction", e))
}

impl DynamoKv {
    /// The port over `table`.
    pub fn new(client: aws_sdk_dynamodb::Client, table: &str) -> Self {
        DynamoKv {
            client: LazyClient::ready(client),
            table: table.to_string(),
        }
    }

    /// The port over `table` with the client that `make` makes when it is first used
    /// ([`LazyClient`]).
    pub fn on_first_use(
        make: impl FnOnce() -> aws_sdk_dynamodb::Client + Send + 'static,
        table: &str,
    ) -> Self {
        DynamoKv {
            client: LazyClient::on_first_use(make),
            table: table.to_string(),
        }
    }

    /// The table name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// What failed, naming the table and no key: keys hold the core's own layout
    /// (`b#<tenant>#<barrier>`), which is no business of a script or a caller.
    pub(super) fn cannot(&self, what: &str) -> String {
        format!("cannot {what} table {}", self.table)
    }

    /// Whether an unconditional put of `ops` holds `version`, read after the transaction's
    /// conditions failed: a transaction whose puts are all conditional learns that from the
    /// failure itself (`ALL_OLD`), one with an [`PutMode::Overwrite`] put reads it (the one
    /// kind of put whose condition cannot fail on a repeat).
    async fn own_overwrite(&self, ops: &[TxOp], version: &str) -> Result<bool> {
        let conditional = ops
            .iter()
            .any(|op| matches!(op, TxOp::Put { mode, .. } if *mode != PutMode::Overwrite));
        let overwrite = ops.iter().find_map(|op| match op {
            TxOp::Put {
                item,
                mode: PutMode::Overwrite,
            } => Some(item),
            _ => None,
        });
        match overwrite {
            Some(item) if !conditional => Ok(self
                .get(&item.pk, &item.sk)
                .await?
                .is_some_and(|i| i.version == version)),
            _ => Ok(false),
        }
    }

    /// Sends `writes` in one `BatchWriteItem` call, and what it leaves unprocessed (throttled)
    /// again, a few times with a back-off.
    pub(super) async fn write_batch(&self, mut writes: Vec<WriteRequest>) -> Result<()> {
        for attempt in 0..BATCH_ATTEMPTS {
            let out = self
                .client
                .batch_write_item()
                .request_items(&self.table, writes)
                .send()
                .await
                .map_err(|e| sdk_err("dynamodb", self.cannot("batch-write items of"), e))?;
            writes = out
                .unprocessed_items()
                .and_then(|u| u.get(&self.table))
                .cloned()
                .unwrap_or_default();
            if writes.is_empty() {
                return Ok(());
            }
            // Throttled: back off (25 ms, 50 ms, ... up to about 3 s) and send the rest.
            tokio::time::sleep(Duration::from_millis(25 << attempt.min(7))).await;
        }
        Err(Error::Backend {
            backend: "dynamodb",
            message: format!(
                "{} items of a batch write to table {} stayed unprocessed after {BATCH_ATTEMPTS} attempts (throttled); retry later or raise the table's capacity",
                writes.len(),
                self.table
            ),
            source: None,
        })
    }
}

pub(super) fn conditional_failed<E>(e: &aws_sdk_dynamodb::error::SdkError<E>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    e.as_service_error()
        .and_then(|se| se.code())
        .is_some_and(|c| c == "ConditionalCheckFailedException")
}

/// A condition expression with its attribute names and values.
type Condition = (&'static str, Vec<(&'static str, &'static str)>, Attrs);

/// The condition of a write under `mode`. `ttl` and `ver` go through placeholders (`ttl` is a
/// reserved word).
fn put_condition(mode: &PutMode, now: i64) -> Option<Condition> {
    match mode {
        PutMode::Overwrite => None,
        PutMode::Create => Some((
            "attribute_not_exists(pk) OR #ttl <= :now",
            vec![("#ttl", "ttl")],
            HashMap::from([(":now".to_string(), n(now))]),
        )),
        PutMode::Update(v) => Some((
            "#ver = :v AND #ttl > :now",
            vec![("#ver", "ver"), ("#ttl", "ttl")],
            HashMap::from([(":v".to_string(), s(v)), (":now".to_string(), n(now))]),
        )),
    }
}

fn names(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// The item as it stood when a put's condition failed (asked for with `ALL_OLD`).
fn old_item_of(e: &aws_sdk_dynamodb::error::SdkError<PutItemError>) -> Option<&Attrs> {
    match e.as_service_error()? {
        PutItemError::ConditionalCheckFailedException(c) => c.item(),
        _ => None,
    }
}

/// Whether `item` holds version `version`: written by the write that made the token.
fn holds_version(item: Option<&Attrs>, version: &str) -> bool {
    item.and_then(|a| a.get("ver"))
        .and_then(|v| v.as_s().ok())
        .is_some_and(|v| v == version)
}

/// What a cancelled transaction says of its operations: the index of the first whose condition
/// failed, from its `CancellationReasons` or else the list DynamoDB also puts in the message
/// (`... reasons [None, ConditionalCheckFailed]`); and whether an item it failed on holds
/// `version` (asked for with `ALL_OLD`: an earlier attempt of this transaction was applied).
fn failed_op(
    e: &aws_sdk_dynamodb::error::SdkError<TransactWriteItemsError>,
    version: &str,
) -> Option<(usize, bool)> {
    use aws_sdk_dynamodb::error::ProvideErrorMetadata;
    let se = e.as_service_error()?;
    if se.code() != Some("TransactionCanceledException") {
        return None;
    }
    if let TransactWriteItemsError::TransactionCanceledException(tc) = se {
        let reasons = tc.cancellation_reasons();
        if let Some(i) = reasons
            .iter()
            .position(|r| r.code() == Some("ConditionalCheckFailed"))
        {
            let own = reasons.iter().any(|r| holds_version(r.item(), version));
            return Some((i, own));
        }
    }
    let msg = se.message()?;
    let list = msg.rsplit_once('[')?.1.split_once(']')?.0;
    let i = list
        .split(',')
        .position(|r| r.trim() == "ConditionalCheckFailed")?;
    Some((i, false))
}

#[async_trait]
impl KvStore for DynamoKv {
    async fn tally(&self, op: crate::ports::TallyOp) -> Result<crate::ports::TallyAnswer> {
        self.run_tally(op).await
    }

    /// Every write is durable when its call returns: a flush has nothing to do.
    fn may_need_flush(&self) -> bool {
        false
    }

    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| sdk_err("dynamodb", self.cannot("read an item of"), e))?;
        Ok(out.item().and_then(|a| item_of(a, now_s())))
    }

    async fn put_as(&self, item: NewItem, mode: PutMode, version: &str) -> Result<String> {
        let mut req = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(attrs(&item, version)));
        if let Some((cond, ns, vs)) = put_condition(&mode, now_s()) {
            // The item as it stands when the condition fails: this write's own, should an
            // earlier attempt of it have been applied (the SDK retries a put whose answer was
            // lost, and the retry then fails its condition).
            req = req
                .condition_expression(cond)
                .set_expression_attribute_names(Some(names(&ns)))
                .set_expression_attribute_values(Some(vs))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                );
        }
        match req.send().await {
            Ok(_) => Ok(version.to_string()),
            Err(e) if conditional_failed(&e) => {
                if holds_version(old_item_of(&e), version) {
                    return Ok(version.to_string());
                }
                let what = format!("an item of table {}", self.table);
                Err(match mode {
                    PutMode::Create => Error::AlreadyExists { what },
                    _ => Error::Precondition {
                        what: format!("{what} changed or is gone"),
                    },
                })
            }
            Err(e) => Err(sdk_err("dynamodb", self.cannot("write an item of"), e)),
        }
    }

    async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool> {
        let now = now_s();
        let mut req = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .return_values(ReturnValue::AllOld);
        if let Some(v) = if_version {
            req = req
                .condition_expression("#ver = :v AND #ttl > :now")
                .expression_attribute_names("#ver", "ver")
                .expression_attribute_names("#ttl", "ttl")
                .expression_attribute_values(":v", s(v))
                .expression_attribute_values(":now", n(now));
        }
        match req.send().await {
            // An expired item that DynamoDB had not removed yet was not there.
            Ok(out) => Ok(out.attributes().and_then(|a| item_of(a, now)).is_some()),
            Err(e) if conditional_failed(&e) => Err(Error::Precondition {
                what: format!("an item of table {} changed or is gone", self.table),
            }),
            Err(e) => Err(sdk_err("dynamodb", self.cannot("delete an item of"), e)),
        }
    }

    async fn query(
        &self,
        pk: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        let limit = limit.clamp(1, 1000);
        let now = now_s();
        let mut items = Vec::new();
        let mut start: Option<Attrs> = after.map(|a| key(pk, a));
        // DynamoDB applies Limit before the expiry filter, so a page may come back short:
        // keep reading until there is one item more than asked (to know whether there is a
        // next page) or the partition's prefix is exhausted.
        loop {
            // `begins_with` refuses an empty prefix: then the whole partition matches.
            let mut values =
                HashMap::from([(":pk".to_string(), s(pk)), (":now".to_string(), n(now))]);
            let condition = if prefix.is_empty() {
                "pk = :pk"
            } else {
                values.insert(":p".to_string(), s(prefix));
                "pk = :pk AND begins_with(sk, :p)"
            };
            let req = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .key_condition_expression(condition)
                .filter_expression("#ttl > :now")
                .expression_attribute_names("#ttl", "ttl")
                .set_expression_attribute_values(Some(values))
                .limit((limit + 1 - items.len()) as i32)
                .set_exclusive_start_key(start.take());
            let out = req
                .send()
                .await
                .map_err(|e| sdk_err("dynamodb", self.cannot("query"), e))?;
            items.extend(out.items().iter().filter_map(|a| item_of(a, now)));
            match out.last_evaluated_key() {
                Some(k) if items.len() <= limit => start = Some(k.clone()),
                _ => break,
            }
        }
        Ok(ItemPage::from_overfetch(items, limit))
    }

    async fn query_back(
        &self,
        pk: &str,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        let limit = limit.clamp(1, 1000);
        if before.is_some_and(|b| b < prefix) {
            // Nothing under the prefix sorts before a bound below it.
            return Ok(ItemPage::default());
        }
        let now = now_s();
        let mut items = Vec::new();
        let mut start: Option<Attrs> = None;
        // A key condition bounds the range on both sides: `BETWEEN` is inclusive, so the
        // bound itself may come back and is dropped here (a filter expression cannot name the
        // sort key). Read until one item more than asked, as `query` does.
        loop {
            let mut values = HashMap::from([(":pk".to_string(), s(pk))]);
            values.insert(":now".to_string(), n(now));
            let condition = match (prefix.is_empty(), before) {
                (true, None) => "pk = :pk",
                (false, None) => {
                    values.insert(":p".to_string(), s(prefix));
                    "pk = :pk AND begins_with(sk, :p)"
                }
                (true, Some(b)) => {
                    values.insert(":b".to_string(), s(b));
                    "pk = :pk AND sk < :b"
                }
                (false, Some(b)) => {
                    values.insert(":p".to_string(), s(prefix));
                    values.insert(":b".to_string(), s(b));
                    "pk = :pk AND sk BETWEEN :p AND :b"
                }
            };
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .consistent_read(true)
                .scan_index_forward(false)
                .key_condition_expression(condition)
                .filter_expression("#ttl > :now")
                .expression_attribute_names("#ttl", "ttl")
                .set_expression_attribute_values(Some(values))
                .limit((limit + 2 - items.len()) as i32)
                .set_exclusive_start_key(start.take())
                .send()
                .await
                .map_err(|e| sdk_err("dynamodb", self.cannot("query"), e))?;
            items.extend(
                out.items()
                    .iter()
                    .filter_map(|a| item_of(a, now))
                    .filter(|i| Some(i.sk.as_str()) != before),
            );
            match out.last_evaluated_key() {
                Some(k) if items.len() <= limit => start = Some(k.clone()),
                _ => break,
            }
        }
        Ok(ItemPage::from_overfetch(items, limit))
    }

    async fn put_batch(&self, items: Vec<NewItem>) -> Result<()> {
        check_batch_len(items.len())?;
        if items.is_empty() {
            return Ok(());
        }
        // DynamoDB refuses two writes of one key in a batch; the last one wins, as it would
        // written one by one.
        let mut by_key: Vec<NewItem> = Vec::with_capacity(items.len());
        for it in items {
            by_key.retain(|o| (o.pk.as_str(), o.sk.as_str()) != (it.pk.as_str(), it.sk.as_str()));
            by_key.push(it);
        }
        let writes = by_key
            .iter()
            .map(|it| {
                PutRequest::builder()
                    .set_item(Some(attrs(it, &token())))
                    .build()
                    .map(|p| WriteRequest::builder().put_request(p).build())
                    .map_err(|e| sdk_err("dynamodb", "cannot build a batch write", e))
            })
            .collect::<Result<Vec<_>>>()?;
        self.write_batch(writes).await
    }

    /// One `TransactWriteItems` call. DynamoDB refuses two operations on one item in a
    /// transaction (a `ValidationException`, reported as a backend error).
    async fn transact_as(&self, ops: Vec<TxOp>, version: &str) -> Result<Result<(), usize>> {
        if ops.is_empty() || ops.len() > MAX_TX_OPS {
            return Err(Error::InvalidInput(format!(
                "a transaction takes 1 to {MAX_TX_OPS} operations, not {}",
                ops.len()
            )));
        }
        let now = now_s();
        let build = |e| sdk_err("dynamodb", "cannot build a transaction", e);
        let mut items = Vec::with_capacity(ops.len());
        for op in &ops {
            let it = match op {
                TxOp::Check {
                    pk,
                    sk,
                    live_until_s,
                } => TransactWriteItem::builder().condition_check(
                    ConditionCheck::builder()
                        .table_name(&self.table)
                        .set_key(Some(key(pk, sk)))
                        .condition_expression("#ttl > :live AND #ttl > :now")
                        .expression_attribute_names("#ttl", "ttl")
                        .expression_attribute_values(":live", n(*live_until_s))
                        .expression_attribute_values(":now", n(now))
                        .build()
                        .map_err(build)?,
                ),
                TxOp::Absent { pk, sk } => TransactWriteItem::builder().condition_check(
                    ConditionCheck::builder()
                        .table_name(&self.table)
                        .set_key(Some(key(pk, sk)))
                        .condition_expression("attribute_not_exists(pk) OR #ttl <= :now")
                        .expression_attribute_names("#ttl", "ttl")
                        .expression_attribute_values(":now", n(now))
                        .build()
                        .map_err(build)?,
                ),
                TxOp::Put { item, mode } => {
                    let mut p = Put::builder()
                        .table_name(&self.table)
                        .set_item(Some(attrs(item, version)));
                    if let Some((cond, ns, vs)) = put_condition(mode, now) {
                        p = p
                            .condition_expression(cond)
                            .set_expression_attribute_names(Some(names(&ns)))
                            .set_expression_attribute_values(Some(vs))
                            .return_values_on_condition_check_failure(
                                ReturnValuesOnConditionCheckFailure::AllOld,
                            );
                    }
                    TransactWriteItem::builder().put(p.build().map_err(build)?)
                }
                TxOp::Count(c) => {
                    TransactWriteItem::builder().update(count_update(&self.table, c, version, now)?)
                }
                TxOp::Delete { pk, sk } => TransactWriteItem::builder().delete(
                    Delete::builder()
                        .table_name(&self.table)
                        .set_key(Some(key(pk, sk)))
                        .condition_expression("attribute_exists(pk) AND #ttl > :now")
                        .expression_attribute_names("#ttl", "ttl")
                        .expression_attribute_values(":now", n(now))
                        .build()
                        .map_err(build)?,
                ),
            };
            items.push(it.build());
        }
        // The token also makes the call idempotent on DynamoDB itself for ten minutes.
        match self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .client_request_token(version)
            .send()
            .await
        {
            Ok(_) => Ok(Ok(())),
            Err(e) => match failed_op(&e, version) {
                Some((_, true)) => Ok(Ok(())),
                Some((i, false)) => match self.own_overwrite(&ops, version).await? {
                    true => Ok(Ok(())),
                    false => Ok(Err(i)),
                },
                None => Err(sdk_err(
                    "dynamodb",
                    format!(
                        "a transaction of {} operations on table {} failed",
                        ops.len(),
                        self.table
                    ),
                    e,
                )),
            },
        }
    }
}
