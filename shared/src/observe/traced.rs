//! The ports as a recorded run sees them (issue 55): each backend call a run makes, whichever
//! host function or primitive makes it (a bucket read, a db write, a barrier's transaction, a
//! timer, a rendezvous arrival, a message of its outbox, a secret read), is a child span of the
//! run's span ([`super::calls`]). The runtime wraps its backends in these only where spans are
//! exported; a call made outside a recorded run passes straight through.
//!
//! Every method of every port is forwarded to the backend's own, the defaulted ones included
//! (a backend may override them: `put_in_chain`, `transact_on`, `delete_many`): a method added
//! to a port must be forwarded here too.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use super::calls::{start, Call, Outcome};
use crate::ports::{
    Backends, DeadLetter, Generation, Item, ItemPage, Keep, KvStore, ListPage, Message, NewItem,
    ObjectMeta, ObjectReader, ObjectStore, PutMode, Queue, QueueKind, QueueStats, Secret,
    TallyAnswer, TallyOp, TxOp, TxPlan, Vault,
};
use crate::Result;

/// `b` with every port recording the calls of recorded runs (a port already wrapped is left
/// as it is: a tenant's scoped backends may share the runtime's).
pub fn backends(b: &Backends) -> Backends {
    Backends {
        objects: match wrapped(&b.objects) {
            true => b.objects.clone(),
            false => Arc::new(Objects(b.objects.clone())),
        },
        kv: match wrapped(&b.kv) {
            true => b.kv.clone(),
            false => Arc::new(Kv(b.kv.clone())),
        },
        queue: match wrapped(&b.queue) {
            true => b.queue.clone(),
            false => Arc::new(Queues(b.queue.clone())),
        },
        vault: match wrapped(&b.vault) {
            true => b.vault.clone(),
            false => Arc::new(Secrets(b.vault.clone())),
        },
    }
}

/// Whether every port of `b` is one of these wrappers.
pub fn is_traced(b: &Backends) -> bool {
    wrapped(&b.objects) && wrapped(&b.kv) && wrapped(&b.queue) && wrapped(&b.vault)
}

/// The name every wrapper's `Debug` starts with.
const TRACED: &str = "Traced";

/// Whether `port` is a wrapper: its `Debug` starts with [`TRACED`] (read no further).
fn wrapped(port: &dyn std::fmt::Debug) -> bool {
    struct Head(String);
    impl std::fmt::Write for Head {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            self.0.push_str(s);
            match self.0.len() >= TRACED.len() {
                true => Err(std::fmt::Error),
                false => Ok(()),
            }
        }
    }
    let mut head = Head(String::new());
    let _ = std::fmt::write(&mut head, format_args!("{port:?}"));
    head.0.starts_with(TRACED)
}

/// Runs `fut`, a call of `kind`'s `operation` on `target` sending `sent` bytes, as a child span
/// of the run recorded on this thread; `read` says how a success ended and the bytes it got.
/// Outside a recorded run (or past its cap) only `fut` runs.
async fn call<T>(
    what: impl FnOnce() -> (&'static str, &'static str, String),
    sent: Option<u64>,
    fut: impl Future<Output = Result<T>>,
    read: impl FnOnce(&T) -> (Outcome, Option<u64>),
) -> Result<T> {
    let Some(started) = start() else {
        return fut.await;
    };
    let out = fut.await;
    let (outcome, got) = match &out {
        Ok(v) => read(v),
        Err(e) => (Outcome::of_error(e), None),
    };
    let bytes = match (sent, got) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    let (kind, operation, target) = what();
    started.end(Call {
        kind,
        operation: operation.into(),
        target,
        outcome,
        bytes,
        error: out.as_ref().err().map(ToString::to_string),
    });
    out
}

fn ok<T>(_: &T) -> (Outcome, Option<u64>) {
    (Outcome::Ok, None)
}

fn found<T>(v: &Option<T>) -> (Outcome, Option<u64>) {
    match v {
        Some(_) => (Outcome::Ok, None),
        None => (Outcome::Absent, None),
    }
}

fn applied(v: &std::result::Result<(), usize>) -> (Outcome, Option<u64>) {
    match v {
        Ok(()) => (Outcome::Ok, None),
        Err(_) => (Outcome::Conflict, None),
    }
}

/// A bucket and the folder of a key in it (its prefix up to the last `/`): names, not the
/// object's own.
fn folder(bucket: &str, key: &str) -> String {
    let prefix = key.rfind('/').map_or("", |i| &key[..=i]);
    format!("{bucket}/{prefix}")
}

/// What a key-value partition holds, from its key's first part, and its name where it has one
/// (a db table, a barrier, a rendezvous namespace): `d#<tenant>#<table>` is `db` `<table>`.
fn partition(pk: &str) -> (&'static str, String) {
    let mut parts = pk.splitn(3, '#');
    let kind = match parts.next().unwrap_or_default() {
        "d" => "db",
        "b" | "B" => "barrier",
        "t" | "T" => "timer",
        "r" => "rendezvous",
        "s" => "schedule",
        "w" => "once",
        "K" | "KT" | "KG" => "api_keys",
        _ => "kv",
    };
    let _tenant = parts.next();
    (kind, parts.next().unwrap_or(kind).to_string())
}

fn kv<'a>(
    op: &'static str,
    pk: &'a str,
) -> impl FnOnce() -> (&'static str, &'static str, String) + 'a {
    move || {
        let (kind, target) = partition(pk);
        (kind, op, target)
    }
}

/// The partition a transaction's first operation is on (a transaction is one primitive's).
fn tx_pk(ops: &[TxOp]) -> String {
    match ops.first() {
        Some(TxOp::Check { pk, .. } | TxOp::Absent { pk, .. } | TxOp::Delete { pk, .. }) => {
            pk.clone()
        }
        Some(TxOp::Put { item, .. }) => item.pk.clone(),
        Some(TxOp::Count(c)) => c.pk.clone(),
        None => String::new(),
    }
}

fn tx_bytes(ops: &[TxOp]) -> Option<u64> {
    Some(
        ops.iter()
            .map(|o| match o {
                TxOp::Put { item, .. } => item.value.len() as u64,
                TxOp::Count(c) => c.value.as_ref().map_or(0, |v| v.len() as u64),
                _ => 0,
            })
            .sum(),
    )
}

struct Objects(Arc<dyn ObjectStore>);

impl std::fmt::Debug for Objects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{TRACED}(")?;
        self.0.fmt(f)?;
        f.write_str(")")
    }
}

#[async_trait]
impl ObjectStore for Objects {
    async fn put(&self, bucket: &str, key: &str, data: Bytes, mode: PutMode) -> Result<ObjectMeta> {
        let what = || ("bucket", "put", folder(bucket, key));
        let sent = Some(data.len() as u64);
        call(what, sent, self.0.put(bucket, key, data, mode), ok).await
    }

    async fn put_in_chain(
        &self,
        bucket: &str,
        key: &str,
        data: Bytes,
        mode: PutMode,
        depth: u32,
        trace: Option<&str>,
    ) -> Result<ObjectMeta> {
        let what = || ("bucket", "put", folder(bucket, key));
        let sent = Some(data.len() as u64);
        let fut = self.0.put_in_chain(bucket, key, data, mode, depth, trace);
        call(what, sent, fut, ok).await
    }

    async fn get(&self, bucket: &str, key: &str) -> Result<Option<(ObjectMeta, Bytes)>> {
        let what = || ("bucket", "get", folder(bucket, key));
        call(what, None, self.0.get(bucket, key), |v| match v {
            Some((_, data)) => (Outcome::Ok, Some(data.len() as u64)),
            None => (Outcome::Absent, None),
        })
        .await
    }

    async fn open(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, Box<dyn ObjectReader>)>> {
        let what = || ("bucket", "open", folder(bucket, key));
        call(what, None, self.0.open(bucket, key), |v| match v {
            Some((meta, _)) => (Outcome::Ok, Some(meta.size)),
            None => (Outcome::Absent, None),
        })
        .await
    }

    async fn head(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>> {
        let what = || ("bucket", "head", folder(bucket, key));
        call(what, None, self.0.head(bucket, key), found).await
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        let what = || ("bucket", "delete", folder(bucket, key));
        call(what, None, self.0.delete(bucket, key), ok).await
    }

    async fn list(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage> {
        let what = || ("bucket", "list", format!("{bucket}/{prefix}"));
        call(what, None, self.0.list(bucket, prefix, after, limit), ok).await
    }

    async fn flush(&self) -> Result<()> {
        self.0.flush().await
    }

    fn may_need_flush(&self) -> bool {
        self.0.may_need_flush()
    }
}

struct Kv(Arc<dyn KvStore>);

impl std::fmt::Debug for Kv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{TRACED}(")?;
        self.0.fmt(f)?;
        f.write_str(")")
    }
}

#[async_trait]
impl KvStore for Kv {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
        call(kv("get", pk), None, self.0.get(pk, sk), |v| match v {
            Some(i) => (Outcome::Ok, Some(i.value.len() as u64)),
            None => (Outcome::Absent, None),
        })
        .await
    }

    async fn put(&self, item: NewItem, mode: PutMode) -> Result<String> {
        let pk = item.pk.clone();
        let sent = Some(item.value.len() as u64);
        call(kv("put", &pk), sent, self.0.put(item, mode), ok).await
    }

    async fn put_as(&self, item: NewItem, mode: PutMode, token: &str) -> Result<String> {
        let pk = item.pk.clone();
        let sent = Some(item.value.len() as u64);
        call(kv("put", &pk), sent, self.0.put_as(item, mode, token), ok).await
    }

    async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool> {
        call(
            kv("delete", pk),
            None,
            self.0.delete(pk, sk, if_version),
            |gone| (if *gone { Outcome::Ok } else { Outcome::Absent }, None),
        )
        .await
    }

    async fn query(
        &self,
        pk: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        let fut = self.0.query(pk, prefix, after, limit);
        call(kv("query", pk), None, fut, page_bytes).await
    }

    async fn query_back(
        &self,
        pk: &str,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        let fut = self.0.query_back(pk, prefix, before, limit);
        call(kv("query", pk), None, fut, page_bytes).await
    }

    async fn put_batch(&self, items: Vec<NewItem>) -> Result<()> {
        let pk = items.first().map(|i| i.pk.clone()).unwrap_or_default();
        let sent = Some(items.iter().map(|i| i.value.len() as u64).sum());
        call(kv("put_batch", &pk), sent, self.0.put_batch(items), ok).await
    }

    async fn transact(&self, ops: Vec<TxOp>) -> Result<std::result::Result<(), usize>> {
        let (pk, sent) = (tx_pk(&ops), tx_bytes(&ops));
        call(kv("transact", &pk), sent, self.0.transact(ops), applied).await
    }

    async fn transact_as(
        &self,
        ops: Vec<TxOp>,
        token: &str,
    ) -> Result<std::result::Result<(), usize>> {
        let (pk, sent) = (tx_pk(&ops), tx_bytes(&ops));
        call(
            kv("transact", &pk),
            sent,
            self.0.transact_as(ops, token),
            applied,
        )
        .await
    }

    async fn transact_on(
        &self,
        seen: Item,
        plan: TxPlan,
    ) -> Result<std::result::Result<(), usize>> {
        let pk = seen.pk.clone();
        call(
            kv("transact", &pk),
            None,
            self.0.transact_on(seen, plan),
            applied,
        )
        .await
    }

    async fn tally(&self, op: TallyOp) -> Result<TallyAnswer> {
        let (operation, pk, sent) = match &op {
            TallyOp::Create(t) => (
                "tally_create",
                t.first().map(|t| t.pk.clone()).unwrap_or_default(),
                Some(
                    t.iter()
                        .flat_map(|t| &t.slots)
                        .map(|s| s.len() as u64)
                        .sum(),
                ),
            ),
            TallyOp::Get { pk, .. } => ("tally_get", pk.clone(), None),
            TallyOp::Fill { pk, value, .. } => ("tally_fill", pk.clone(), Some(value.len() as u64)),
            TallyOp::Open { pk, .. } => ("tally_open", pk.clone(), None),
            TallyOp::Close { pk, .. } => ("tally_close", pk.clone(), None),
        };
        call(kv(operation, &pk), sent, self.0.tally(op), |a| match a {
            TallyAnswer::Found(None) | TallyAnswer::Missed(None) | TallyAnswer::Refused(None) => {
                (Outcome::Absent, None)
            }
            TallyAnswer::Taken(_) | TallyAnswer::Missed(_) | TallyAnswer::Refused(_) => {
                (Outcome::Conflict, None)
            }
            _ => (Outcome::Ok, None),
        })
        .await
    }

    async fn flush(&self) -> Result<()> {
        self.0.flush().await
    }

    fn may_need_flush(&self) -> bool {
        self.0.may_need_flush()
    }

    fn generation(&self) -> Option<&dyn Generation> {
        self.0.generation()
    }
}

fn page_bytes(p: &ItemPage) -> (Outcome, Option<u64>) {
    let bytes = p.items.iter().map(|i| i.value.len() as u64).sum();
    (Outcome::Ok, Some(bytes))
}

struct Queues(Arc<dyn Queue>);

impl std::fmt::Debug for Queues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{TRACED}(")?;
        self.0.fmt(f)?;
        f.write_str(")")
    }
}

fn queue(op: &'static str, q: QueueKind) -> impl FnOnce() -> (&'static str, &'static str, String) {
    move || ("queue", op, q.name().to_string())
}

#[async_trait]
impl Queue for Queues {
    async fn send(&self, q: QueueKind, body: String, delay_s: u32) -> Result<()> {
        let sent = Some(body.len() as u64);
        call(queue("send", q), sent, self.0.send(q, body, delay_s), ok).await
    }

    async fn receive(&self, q: QueueKind, max: usize, visibility_s: u32) -> Result<Vec<Message>> {
        call(
            queue("receive", q),
            None,
            self.0.receive(q, max, visibility_s),
            ok,
        )
        .await
    }

    async fn delete(&self, q: QueueKind, receipt: &str) -> Result<()> {
        call(queue("delete", q), None, self.0.delete(q, receipt), ok).await
    }

    async fn delete_many(&self, q: QueueKind, receipts: &[String]) -> Vec<Result<()>> {
        self.0.delete_many(q, receipts).await
    }

    async fn retry_later(
        &self,
        q: QueueKind,
        receipt: &str,
        delay_s: u32,
        error: &str,
    ) -> Result<()> {
        let fut = self.0.retry_later(q, receipt, delay_s, error);
        call(queue("retry_later", q), None, fut, ok).await
    }

    async fn hold(&self, q: QueueKind, receipt: &str, visibility_s: u32) -> Result<()> {
        call(
            queue("hold", q),
            None,
            self.0.hold(q, receipt, visibility_s),
            ok,
        )
        .await
    }

    async fn stats(&self, q: QueueKind) -> Result<QueueStats> {
        call(queue("stats", q), None, self.0.stats(q), ok).await
    }

    async fn dead_letters(&self, q: QueueKind, max: usize) -> Result<Vec<DeadLetter>> {
        call(
            queue("dead_letters", q),
            None,
            self.0.dead_letters(q, max),
            ok,
        )
        .await
    }

    async fn dead_letter_now(&self, q: QueueKind, body: &str, error: &str) -> Result<()> {
        let fut = self.0.dead_letter_now(q, body, error);
        call(queue("dead_letter", q), None, fut, ok).await
    }

    async fn redrive(&self, q: QueueKind, keep: &Keep<'_>, max: usize) -> Result<u64> {
        call(queue("redrive", q), None, self.0.redrive(q, keep, max), ok).await
    }

    async fn flush(&self) -> Result<()> {
        self.0.flush().await
    }

    fn may_need_flush(&self) -> bool {
        self.0.may_need_flush()
    }
}

struct Secrets(Arc<dyn Vault>);

impl std::fmt::Debug for Secrets {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{TRACED}(")?;
        self.0.fmt(f)?;
        f.write_str(")")
    }
}

#[async_trait]
impl Vault for Secrets {
    async fn get(&self, tenant: &str, name: &str) -> Result<Option<Secret>> {
        // The secret's name, never its value.
        let what = || ("vault", "get", name.to_string());
        call(what, None, self.0.get(tenant, name), found).await
    }

    async fn set(&self, tenant: &str, name: &str, value: &Secret) -> Result<()> {
        let what = || ("vault", "set", name.to_string());
        call(what, None, self.0.set(tenant, name, value), ok).await
    }

    async fn list(&self, tenant: &str) -> Result<Vec<String>> {
        let what = || ("vault", "list", String::new());
        call(what, None, self.0.list(tenant), ok).await
    }

    async fn delete(&self, tenant: &str, name: &str) -> Result<()> {
        let what = || ("vault", "delete", name.to_string());
        call(what, None, self.0.delete(tenant, name), ok).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_are_names_not_values() {
        assert_eq!(
            folder("acme-in", "tenants/acme/orders/o-17.json"),
            "acme-in/tenants/acme/orders/"
        );
        assert_eq!(folder("b", "top.json"), "b/");
        assert_eq!(partition("d#acme#orders"), ("db", "orders".into()));
        assert_eq!(partition("b#acme#order-17"), ("barrier", "order-17".into()));
        assert_eq!(partition("t#acme"), ("timer", "timer".into()));
        assert_eq!(partition("T"), ("timer", "timer".into()));
        assert_eq!(partition("x"), ("kv", "kv".into()));
    }
}
