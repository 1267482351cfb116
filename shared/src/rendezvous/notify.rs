//! In-process wake-ups for waiters: one `watch` channel per barrier that has waiters, keyed by
//! tenant, namespace and name. A trip in this process wakes every waiter of the barrier at once
//! and hands them the barrier as the trip wrote it, so 64 waiters do not make 64 reads; a
//! delete wakes them without a barrier, and they read the store, which stays the source of
//! truth (a missed or extra wake-up costs at most a read). Waiters in other processes poll.
//!
//! The registry is bounded ([`MAX_KEYS`]): past it, a waiter gets no channel and polls. An
//! entry is removed when its last waiter leaves.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};

use tokio::sync::watch;

use super::Barrier;

/// What a wake-up carries: a counter, and the barrier as a trip left it with its incarnation
/// (none for a delete).
type Signal = (u64, Option<(String, Barrier)>);

/// The most barriers with in-process waiters at once.
pub const MAX_KEYS: usize = 100_000;

static REGISTRY: LazyLock<Mutex<HashMap<String, watch::Sender<Signal>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn key(tenant: &str, namespace: &str, name: &str) -> String {
    // None of the three can hold '#': tenant names and barrier names are checked.
    format!("{tenant}#{namespace}#{name}")
}

/// A waiter's registration; leaving (drop) removes the channel when it was the last.
#[derive(Debug)]
pub struct Subscription {
    key: String,
    rx: watch::Receiver<Signal>,
}

impl Subscription {
    /// Resolves at the next wake-up after the last one seen, with the barrier a trip left and
    /// its incarnation.
    pub async fn woken(&mut self) -> Option<(String, Barrier)> {
        if self.rx.changed().await.is_err() {
            // The sender is never dropped while a receiver is registered; if it were, poll.
            std::future::pending::<()>().await
        }
        self.rx.borrow_and_update().1.clone()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        let mut map = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        // Under the lock nobody subscribes meanwhile; our own receiver is still counted.
        if map
            .get(&self.key)
            .is_some_and(|tx| tx.receiver_count() <= 1)
        {
            map.remove(&self.key);
        }
    }
}

/// Waits parked in this process, per tenant.
static PARKED: LazyLock<Mutex<HashMap<String, u64>>> = LazyLock::new(|| Mutex::new(HashMap::new()));

/// A parked wait of a tenant, counted until dropped.
#[derive(Debug)]
pub struct Parked(String);

impl Drop for Parked {
    fn drop(&mut self) {
        let mut map = PARKED.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = map.get_mut(&self.0) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.0);
            }
        }
    }
}

/// Counts a wait of `tenant`, refused with `max_rendezvous_waits`'s error when it has `max`
/// parked already.
pub fn park(tenant: &str, max: u64) -> crate::Result<Parked> {
    let mut map = PARKED.lock().unwrap_or_else(|e| e.into_inner());
    let n = map.entry(tenant.to_string()).or_default();
    if *n >= max {
        return Err(crate::Error::LimitExceeded {
            limit: "max_rendezvous_waits",
            detail: format!(
                "tenant {tenant:?} has {n} WaitAtBarrier calls parked and may have {max}; let some end, or raise limits.max_rendezvous_waits in tenants/{tenant}/config.json (ceiling {})",
                crate::config::CEILINGS.max_rendezvous_waits
            ),
        });
    }
    *n += 1;
    Ok(Parked(tenant.to_string()))
}

/// Registers a waiter of a barrier, or `None` when the registry is full (the waiter polls).
pub fn subscribe(tenant: &str, namespace: &str, name: &str) -> Option<Subscription> {
    let key = key(tenant, namespace, name);
    let mut map = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let rx = match map.get(&key) {
        Some(tx) => tx.subscribe(),
        None if map.len() < MAX_KEYS => {
            let (tx, rx) = watch::channel((0, None));
            map.insert(key.clone(), tx);
            rx
        }
        None => return None,
    };
    Some(Subscription { key, rx })
}

/// Wakes every waiter of a barrier in this process, handing them `tripped`: the barrier as a
/// trip wrote it with its incarnation (a waiter takes it only for the incarnation it waits
/// on), or none (a delete: they read the store).
pub fn wake(tenant: &str, namespace: &str, name: &str, tripped: Option<(&str, &Barrier)>) {
    let map = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(tx) = map.get(&key(tenant, namespace, name)) {
        tx.send_modify(|(n, b)| {
            *n = n.wrapping_add(1);
            *b = tripped.map(|(i, b)| (i.to_string(), b.clone()));
        });
    }
}

static STOPPING: LazyLock<watch::Sender<bool>> = LazyLock::new(|| watch::channel(false).0);

/// Ends every wait in this process (they answer TIMED_OUT with the barrier as it is), now and
/// from now on: a server that is stopping finishes its requests in flight, and a long-poll
/// must not hold it for minutes. A timed-out caller waits again, at another server.
pub fn stop_waits() {
    STOPPING.send_replace(true);
}

/// Resolves once [`stop_waits`] was called (at once if it was already).
pub async fn stopping() {
    let mut rx = STOPPING.subscribe();
    // The sender is a static and never dropped.
    let _ = rx.wait_for(|stop| *stop).await;
}

/// How many waiters of a barrier are parked in this process now (the operator's console).
pub fn waiters(tenant: &str, namespace: &str, name: &str) -> usize {
    REGISTRY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&key(tenant, namespace, name))
        .map_or(0, |tx| tx.receiver_count())
}

/// Whether a barrier has waiters in this process now (for tests of the clean-up).
pub fn has_waiters(tenant: &str, namespace: &str, name: &str) -> bool {
    REGISTRY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains_key(&key(tenant, namespace, name))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_tenant_parks_at_most_its_waits_and_another_is_not_held_by_it() {
        let held: Vec<_> = (0..3).map(|_| park("pk-a", 3).unwrap()).collect();
        let e = park("pk-a", 3).unwrap_err().to_string();
        assert!(e.contains("limit max_rendezvous_waits exceeded"), "{e}");
        assert!(
            e.contains("has 3 WaitAtBarrier calls parked and may have 3"),
            "{e}"
        );
        let other = park("pk-b", 3).unwrap();
        drop(held);
        let again = park("pk-a", 3).unwrap();
        drop((other, again));
        assert!(!PARKED.lock().unwrap().contains_key("pk-a"), "cleaned up");
    }

    use super::*;

    #[tokio::test]
    async fn a_wake_reaches_every_waiter_and_leaving_cleans_up() {
        // GIVEN two waiters of one barrier
        let mut a = subscribe("t1", "ns", "notify_test").unwrap();
        let mut b = subscribe("t1", "ns", "notify_test").unwrap();
        // WHEN it is woken
        wake("t1", "ns", "notify_test", None);
        // THEN both see it at once
        tokio::time::timeout(std::time::Duration::from_millis(100), async {
            a.woken().await;
            b.woken().await;
        })
        .await
        .unwrap();
        // AND another tenant's barrier of the same name is not woken
        let mut other = subscribe("t2", "ns", "notify_test").unwrap();
        wake("t1", "ns", "notify_test", None);
        assert!(
            tokio::time::timeout(std::time::Duration::from_millis(20), other.woken())
                .await
                .is_err()
        );
        // AND when all leave, the entries are gone
        drop((a, b, other));
        let map = REGISTRY.lock().unwrap();
        assert!(!map.contains_key(&key("t1", "ns", "notify_test")));
        assert!(!map.contains_key(&key("t2", "ns", "notify_test")));
    }
}
