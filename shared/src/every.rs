//! A value read at most once per interval and shared by every caller of a process ([`Every`]),
//! and work done by one caller at a time per key ([`InFlight`]): what makes a fixed cost per
//! process out of a cost per request (the API keys' generation item, a key's first check, the
//! scripts bucket's deploy marker; docs/cost.md).
//!
//! The callers that find the value due wait for one read instead of each making their own
//! (single flight), and what a read answers (a failure too, as the caller's `T` says it) is used
//! until the interval has passed since that read began.

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A value of type `T`, read again once `every` has passed since its last read began.
#[derive(Debug)]
pub struct Every<T> {
    every: Duration,
    /// The last read's answer and when it began.
    last: Mutex<Option<(T, Instant)>>,
    /// Held by the one caller that reads.
    reading: tokio::sync::Mutex<()>,
}

impl<T: Clone> Every<T> {
    /// Nothing read yet; each read is used for `every`.
    pub fn new(every: Duration) -> Self {
        Every {
            every,
            last: Mutex::new(None),
            reading: tokio::sync::Mutex::new(()),
        }
    }

    /// The value, from the last read while it is fresh, else from `read` (made by one caller
    /// while the others that find it due wait for its answer).
    ///
    /// A read is timed from its start: a change made after a read answered was made after it
    /// began, so a value is never used longer than `every` after a change it did not see.
    pub async fn get<F, Fut>(&self, read: F) -> T
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = T>,
    {
        if let Some(v) = self.fresh() {
            return v;
        }
        let _one = self.reading.lock().await;
        if let Some(v) = self.fresh() {
            return v;
        }
        let began = Instant::now();
        let v = read().await;
        *self.lock() = Some((v.clone(), began));
        v
    }

    /// The last read's answer while it is fresh.
    fn fresh(&self) -> Option<T> {
        self.lock()
            .as_ref()
            .filter(|(_, began)| began.elapsed() < self.every)
            .map(|(v, _)| v.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(T, Instant)>> {
        self.last.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Work in flight by key: [`InFlight::one`] lets one caller at a time through for each key, and
/// holds an entry only while some caller holds or waits for it, so a map of them stays as small
/// as the callers in flight.
#[derive(Debug)]
pub struct InFlight<K> {
    keys: Mutex<HashMap<K, Arc<tokio::sync::Mutex<()>>>>,
}

impl<K> Default for InFlight<K> {
    fn default() -> Self {
        InFlight {
            keys: Mutex::new(HashMap::new()),
        }
    }
}

/// How many entries [`InFlight`] holds before it drops those nobody holds.
const SWEEP_AT: usize = 1024;

/// A caller's turn for its key, until dropped.
#[derive(Debug)]
pub struct Turn<'a, K: Eq + Hash + Clone> {
    of: &'a InFlight<K>,
    key: K,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl<K: Eq + Hash + Clone> InFlight<K> {
    /// Waits until no other caller has `key`'s turn, and takes it.
    pub async fn one(&self, key: K) -> Turn<'_, K> {
        let lock = {
            let mut keys = self.lock();
            if keys.len() >= SWEEP_AT {
                // Entries whose callers were dropped while they waited (a request cancelled
                // at the moment its turn came) have only the map's handle left.
                keys.retain(|_, l| Arc::strong_count(l) > 1);
            }
            keys.entry(key.clone()).or_default().clone()
        };
        let guard = Some(lock.clone().lock_owned().await);
        Turn {
            of: self,
            key,
            lock,
            guard,
        }
    }

    /// How many keys have a caller in flight.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no key has a caller in flight.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<K, Arc<tokio::sync::Mutex<()>>>> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl<K: Eq + Hash + Clone> Drop for Turn<'_, K> {
    fn drop(&mut self) {
        self.guard.take();
        let mut keys = self.of.lock();
        // The map's handle and this one: nobody else holds or waits for the key (a new
        // caller takes its handle under the map's lock, so it cannot appear meanwhile).
        if Arc::strong_count(&self.lock) == 2 {
            keys.remove(&self.key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_that_find_it_due_share_one_read_and_the_next_comes_after_the_interval() {
        // GIVEN a value whose read takes 50 ms, used for 300 ms
        let every = Arc::new(Every::new(Duration::from_millis(300)));
        let reads = Arc::new(AtomicUsize::new(0));
        let get = |every: Arc<Every<usize>>, reads: Arc<AtomicUsize>| async move {
            every
                .get(|| async {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    reads.fetch_add(1, Ordering::SeqCst) + 1
                })
                .await
        };
        // WHEN 64 callers ask at once
        let mut all = tokio::task::JoinSet::new();
        for _ in 0..64 {
            all.spawn(get(every.clone(), reads.clone()));
        }
        // THEN one read answers them all
        while let Some(v) = all.join_next().await {
            assert_eq!(v.unwrap(), 1);
        }
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        // AND within the interval no caller reads; after it, one does
        assert_eq!(get(every.clone(), reads.clone()).await, 1);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(get(every.clone(), reads.clone()).await, 2);
        assert_eq!(reads.load(Ordering::SeqCst), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_caller_per_key_at_a_time_and_no_entry_left_behind() {
        // GIVEN 32 callers of key 1 and 32 of key 2 at once, each holding its turn 5 ms
        let flight = Arc::new(InFlight::<u8>::default());
        let inside = Arc::new([AtomicUsize::new(0), AtomicUsize::new(0)]);
        let most = Arc::new(AtomicUsize::new(0));
        let mut all = tokio::task::JoinSet::new();
        for i in 0..64u8 {
            let (flight, inside, most) = (flight.clone(), inside.clone(), most.clone());
            all.spawn(async move {
                let key = i % 2;
                let _turn = flight.one(key).await;
                let now = inside[key as usize].fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                inside[key as usize].fetch_sub(1, Ordering::SeqCst);
            });
        }
        all.join_all().await;
        // THEN never two callers of one key were inside at once, and the map is empty again
        assert_eq!(most.load(Ordering::SeqCst), 1);
        assert!(flight.is_empty());
    }
}
