//! A fault-injecting wrapper around the key-value and queue ports: call number `at` (counting
//! from 1 across both) either fails before reaching the backend, or reaches it and then loses
//! its reply, as a process that dies or a network that drops a response would; or waits before
//! it is made until the test releases it, as a slow process would (see [`Plan::hold`]).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use async_trait::async_trait;
use native_core::ports::{
    DeadLetter, Item, ItemPage, KvStore, Message, NewItem, PutMode, Queue, QueueKind, QueueStats,
    TxOp, TxPlan,
};
use native_core::{Error, Result};

/// What happens at the faulty call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The call fails without reaching the backend.
    Fail,
    /// The call is applied, then its reply is lost.
    LoseReply,
}

/// Counts calls and injects one fault; optionally also reorders calls (see [`Plan::jittering`]).
#[derive(Debug, Default)]
pub struct Plan {
    calls: AtomicU32,
    at: AtomicU32,
    fault: std::sync::Mutex<Option<Fault>>,
    /// xorshift state for [`Plan::jittering`]; 0 when off.
    jitter: std::sync::atomic::AtomicU64,
    /// A call to hold, see [`Plan::hold`].
    hold: std::sync::Mutex<Option<Arc<Hold>>>,
    /// Which call the fault hit, once it did (e.g. `kv.put`).
    hit: std::sync::Mutex<Option<&'static str>>,
}

/// A call held back until the test releases it: see [`Plan::hold`].
#[derive(Debug, Default)]
pub struct Hold {
    at: u32,
    reached: tokio::sync::Notify,
    release: tokio::sync::Notify,
}

impl Hold {
    /// Waits until the held call is reached (everything before it has been made).
    pub async fn reached(&self) {
        self.reached.notified().await
    }

    /// Lets the held call (and everything after it) go on.
    pub fn release(&self) {
        self.release.notify_one()
    }
}

impl Plan {
    /// A plan without a fault whose every call first yields to other tasks a pseudo-random
    /// number of times (0 to 3): on a single-threaded runtime, each seed is one reproducible
    /// interleaving of concurrent tasks' backend calls, each call itself atomic.
    pub fn jittering(seed: u64) -> Self {
        let plan = Plan::default();
        plan.jitter.store(
            seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            Ordering::Relaxed,
        );
        plan
    }

    async fn shuffle(&self) {
        let mut x = self.jitter.load(Ordering::Relaxed);
        if x == 0 {
            return;
        }
        // xorshift64*
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.jitter.store(x, Ordering::Relaxed);
        for _ in 0..(x.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 62) {
            tokio::task::yield_now().await;
        }
    }

    /// Arms a fault at the `at`-th call from now (1 = the next call).
    pub fn arm(&self, at: u32, fault: Fault) {
        self.calls.store(0, Ordering::SeqCst);
        self.at.store(at, Ordering::SeqCst);
        *self.fault.lock().unwrap() = Some(fault);
    }

    /// Holds the `at`-th call from now (1 = the next call) before it reaches the backend, until
    /// [`Hold::release`]: the caller stalls between two calls, as a slow or paused process
    /// would, while the test makes other calls. Counts from now, like [`Plan::arm`].
    pub fn hold(&self, at: u32) -> Arc<Hold> {
        let hold = Arc::new(Hold {
            at,
            ..Hold::default()
        });
        self.calls.store(0, Ordering::SeqCst);
        *self.hold.lock().unwrap() = Some(hold.clone());
        hold
    }

    /// Waits at the held call, if this is it.
    async fn pause(&self, n: u32) {
        let held = self.hold.lock().unwrap().clone();
        if let Some(h) = held.filter(|h| h.at == n) {
            h.reached.notify_one();
            h.release.notified().await;
        }
    }

    /// Which call the armed fault hit (`kv.transact`, `queue.send`, ...), once it did.
    pub fn hit(&self) -> Option<&'static str> {
        *self.hit.lock().unwrap()
    }

    /// Disarms; calls go through.
    pub fn disarm(&self) {
        *self.fault.lock().unwrap() = None;
    }

    /// Calls since the last `arm`.
    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    /// Counts a call: its number, and its fault if it is the armed one.
    fn next(&self) -> (u32, Option<Fault>) {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let f = *self.fault.lock().unwrap();
        (
            n,
            (n == self.at.load(Ordering::SeqCst)).then_some(f).flatten(),
        )
    }
}

fn injected(what: &str) -> Error {
    Error::Backend {
        backend: "faults",
        message: format!("injected fault in {what}"),
        source: None,
    }
}

macro_rules! faulty {
    ($self:ident, $what:literal, $call:expr) => {{
        $self.plan.shuffle().await;
        let (n, fault) = $self.plan.next();
        $self.plan.pause(n).await;
        if fault.is_some() {
            *$self.plan.hit.lock().unwrap() = Some($what);
        }
        match fault {
            Some(Fault::Fail) => Err(injected($what)),
            Some(Fault::LoseReply) => {
                let _ = $call.await;
                Err(injected($what))
            }
            None => $call.await,
        }
    }};
}

/// The wrapper.
#[derive(Debug, Clone)]
pub struct Faulty {
    /// The real key-value store.
    pub kv: Arc<dyn KvStore>,
    /// The real queue.
    pub queue: Arc<dyn Queue>,
    /// The shared plan.
    pub plan: Arc<Plan>,
}

#[async_trait]
impl KvStore for Faulty {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
        faulty!(self, "kv.get", self.kv.get(pk, sk))
    }
    async fn put_as(&self, item: NewItem, mode: PutMode, token: &str) -> Result<String> {
        faulty!(
            self,
            "kv.put",
            self.kv.put_as(item.clone(), mode.clone(), token)
        )
    }
    async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool> {
        faulty!(self, "kv.delete", self.kv.delete(pk, sk, if_version))
    }
    async fn query(
        &self,
        pk: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        faulty!(self, "kv.query", self.kv.query(pk, prefix, after, limit))
    }
    async fn query_back(
        &self,
        pk: &str,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        faulty!(
            self,
            "kv.query_back",
            self.kv.query_back(pk, prefix, before, limit)
        )
    }
    async fn put_batch(&self, items: Vec<NewItem>) -> Result<()> {
        faulty!(self, "kv.put_batch", self.kv.put_batch(items.clone()))
    }
    async fn transact_as(&self, ops: Vec<TxOp>, token: &str) -> Result<Result<(), usize>> {
        faulty!(self, "kv.transact", self.kv.transact_as(ops.clone(), token))
    }
    async fn transact_on(&self, seen: Item, plan: TxPlan) -> Result<Result<(), usize>> {
        faulty!(self, "kv.transact_on", self.kv.transact_on(seen, plan))
    }
    async fn tally(
        &self,
        op: native_core::ports::TallyOp,
    ) -> Result<native_core::ports::TallyAnswer> {
        faulty!(self, "kv.tally", self.kv.tally(op.clone()))
    }
    async fn flush(&self) -> Result<()> {
        self.kv.flush().await
    }
    fn generation(&self) -> Option<&dyn native_core::ports::Generation> {
        self.kv.generation()
    }
}

#[async_trait]
impl Queue for Faulty {
    async fn send(&self, queue: QueueKind, body: String, delay_s: u32) -> Result<()> {
        faulty!(
            self,
            "queue.send",
            self.queue.send(queue, body.clone(), delay_s)
        )
    }
    async fn receive(
        &self,
        queue: QueueKind,
        max: usize,
        visibility_s: u32,
    ) -> Result<Vec<Message>> {
        self.queue.receive(queue, max, visibility_s).await
    }
    async fn delete(&self, queue: QueueKind, receipt: &str) -> Result<()> {
        self.queue.delete(queue, receipt).await
    }
    async fn retry_later(
        &self,
        queue: QueueKind,
        receipt: &str,
        delay_s: u32,
        error: &str,
    ) -> Result<()> {
        self.queue.retry_later(queue, receipt, delay_s, error).await
    }
    async fn hold(&self, queue: QueueKind, receipt: &str, visibility_s: u32) -> Result<()> {
        self.queue.hold(queue, receipt, visibility_s).await
    }
    async fn flush(&self) -> Result<()> {
        self.queue.flush().await
    }
    async fn stats(&self, queue: QueueKind) -> Result<QueueStats> {
        self.queue.stats(queue).await
    }
    async fn dead_letters(&self, queue: QueueKind, max: usize) -> Result<Vec<DeadLetter>> {
        self.queue.dead_letters(queue, max).await
    }

    async fn redrive(
        &self,
        queue: QueueKind,
        keep: &native_core::ports::Keep<'_>,
        max: usize,
    ) -> Result<u64> {
        self.queue.redrive(queue, keep, max).await
    }
}
