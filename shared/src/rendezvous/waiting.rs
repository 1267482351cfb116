//! WaitAtBarrier: a wait woken at once by a trip in this process, polling the store otherwise.
//!
//! Polls are shared: the waiters of one barrier in one process read the store at most once per
//! [`POLL_FIRST`] between them, one at a time (a waiter due to poll waits for a read in flight
//! and takes it, or one made within [`POLL_FIRST`]), so 256 waiters cost what one does. A trip or a delete in this process updates what they share
//! at once, so it never hides what this process did.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use super::{
    barrier_not_found, check_name, model, notify, Barrier, Rendezvous, WaitOutcome, FIRST_READ,
    POLL_FIRST, POLL_MAX,
};
use crate::budget::Budget;
use crate::ports::KvStore;
use crate::{Error, Result};

/// The last read of each barrier by a waiter (or the last trip) in this process: when, the
/// barrier's incarnation, the barrier. Bounded as the wake-ups are ([`notify::MAX_KEYS`]).
type Polls = HashMap<String, (Instant, String, Barrier)>;

static POLLS: LazyLock<Mutex<Polls>> = LazyLock::new(|| Mutex::new(HashMap::new()));

fn polls() -> std::sync::MutexGuard<'static, Polls> {
    POLLS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A barrier's key among the polls: the store (by address: a process has one, tests many,
/// and one store's reads must not answer another's waiters), tenant, namespace and name.
fn poll_key(kv: &dyn KvStore, tenant: &str, ns: &str, name: &str) -> String {
    let store = kv as *const dyn KvStore as *const () as usize;
    format!("{store:x}#{tenant}#{ns}#{name}")
}

/// Notes a barrier as read or tripped in this process now (`None`: deleted), for the
/// waiters that poll it.
pub(super) fn note(
    kv: &dyn KvStore,
    tenant: &str,
    ns: &str,
    name: &str,
    read: Option<(&str, &Barrier)>,
) {
    let mut map = polls();
    let key = poll_key(kv, tenant, ns, name);
    match read {
        Some((incarnation, b)) => {
            if map.len() >= notify::MAX_KEYS && !map.contains_key(&key) {
                map.clear();
            }
            map.insert(key, (Instant::now(), incarnation.to_string(), b.clone()));
        }
        None => {
            map.remove(&key);
        }
    }
}

/// One gate per barrier being read by a waiter: the reads of one barrier are made one at a
/// time, and each waiter past the gate first looks for the read the one before it made.
static GATES: LazyLock<Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// A waiter's hold on a barrier's gate; the last to leave (or to be dropped with its wait)
/// removes it.
struct Gate(Arc<tokio::sync::Mutex<()>>, String);

impl Gate {
    fn enter(key: &str) -> Gate {
        let mut gates = GATES.lock().unwrap_or_else(|p| p.into_inner());
        Gate(
            gates.entry(key.to_string()).or_default().clone(),
            key.to_string(),
        )
    }
}

impl Drop for Gate {
    fn drop(&mut self) {
        let mut gates = GATES.lock().unwrap_or_else(|p| p.into_inner());
        // The map's and this one's: nobody else is at the gate.
        if Arc::strong_count(&self.0) <= 2 {
            gates.remove(&self.1);
        }
    }
}

/// A read of the barrier made within [`POLL_FIRST`] in this process, of `incarnation` (any,
/// when empty).
fn recent(key: &str, incarnation: &str) -> Option<(String, Barrier)> {
    polls()
        .get(key)
        .filter(|(at, i, _)| {
            at.elapsed() < POLL_FIRST && (incarnation.is_empty() || i == incarnation)
        })
        .map(|(_, i, b)| (i.clone(), b.clone()))
}

impl<B: Budget + ?Sized> Rendezvous<'_, B> {
    /// The barrier for a waiter's poll (see the module docs): a read made within
    /// [`POLL_FIRST`] by this process, or else one made now, past the barrier's gate.
    async fn poll(&self, ns: &str, name: &str, incarnation: &str) -> Result<(String, Barrier)> {
        let key = poll_key(self.kv, self.tenant, ns, name);
        let gate = Gate::enter(&key);
        let _one = gate.0.lock().await;
        if let Some((i, b)) = recent(&key, incarnation) {
            // Read within POLL_FIRST, but its window may have ended since.
            if b.inactive_at_ms() <= self.now_ms() {
                return Err(barrier_not_found());
            }
            return Ok((i, b));
        }
        let row = self.need(ns, name).await?.row;
        note(
            self.kv,
            self.tenant,
            ns,
            name,
            Some((&row.incarnation, &row.barrier)),
        );
        Ok((row.incarnation, row.barrier))
    }

    /// Waits until the barrier's generation passes `expected_generation` (TRIPPED) or
    /// `timeout` passes (TIMED_OUT). Woken at once by a trip in this process; polls the store
    /// otherwise, every 100 ms doubling to 1 s, sharing reads with the other waiters of the
    /// barrier in this process (see the module docs).
    pub async fn wait(
        &self,
        ns: &str,
        name: &str,
        expected_generation: u64,
        timeout: Duration,
    ) -> Result<(Barrier, WaitOutcome)> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        model::check_positive("expected_generation", expected_generation)?;
        model::check_timeout(timeout.as_secs())?;
        let start = tokio::time::Instant::now();
        let until = start + timeout;
        let _parked = notify::park(self.tenant, self.max_waits)?;
        // Registered before the first read, so a trip between the read and the wait is seen.
        let mut sub = notify::subscribe(self.tenant, ns, name);
        let mut pause = POLL_FIRST;
        // The barrier a trip in this process handed over: no read needed, if it is of the
        // incarnation this wait read (not a barrier of the name deleted and made again).
        let mut handed: Option<(String, Barrier)> = None;
        let mut incarnation = String::new();
        // The barrier as last read: what a poll that the store holds past the timeout answers.
        let mut last: Option<Barrier> = None;
        // Woken by a delete in this process: the next read goes to the store.
        let mut woken_up = false;
        loop {
            let b = match handed.take() {
                Some((i, b)) if i == incarnation => b,
                _ => {
                    // A held store never keeps a wait past its timeout (issue 50: a
                    // 3 s wait took 60 s); the first read has at least FIRST_READ.
                    let by = match last {
                        Some(_) => until,
                        None => until.max(start + FIRST_READ),
                    };
                    // Woken by a delete in this process: read the store itself.
                    let read = async {
                        match woken_up {
                            true => self
                                .need(ns, name)
                                .await
                                .map(|f| (f.row.incarnation, f.row.barrier)),
                            false => self.poll(ns, name, &incarnation).await,
                        }
                    };
                    let found = match tokio::time::timeout_at(by, read).await {
                        Ok(found) => found?,
                        Err(_) => match last.take() {
                            Some(b) => return Ok((b, WaitOutcome::TimedOut)),
                            None => {
                                return Err(Error::Backend {
                                    backend: "kv",
                                    message: format!(
                                        "the rendezvous barrier {name:?} of namespace {ns:?} could not be read within {} s; the store is slow or unavailable: retry",
                                        (by - start).as_secs()
                                    ),
                                    source: None,
                                })
                            }
                        },
                    };
                    incarnation = found.0;
                    found.1
                }
            };
            last = Some(b.clone());
            if b.generation > expected_generation {
                return Ok((b, WaitOutcome::Tripped));
            }
            let now = tokio::time::Instant::now();
            if now >= until {
                return Ok((b, WaitOutcome::TimedOut));
            }
            let nap = pause.min(until - now);
            let woken = async {
                match sub.as_mut() {
                    Some(s) => s.woken().await,
                    None => std::future::pending().await,
                }
            };
            woken_up = false;
            tokio::select! {
                h = woken => {
                    woken_up = h.is_none();
                    handed = h;
                }
                () = tokio::time::sleep(nap) => pause = (pause * 2).min(POLL_MAX),
                // The process is stopping: answer now rather than hold its shutdown.
                () = notify::stopping() => return Ok((b, WaitOutcome::TimedOut)),
            }
        }
    }
}
