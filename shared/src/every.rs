//! A value read at most once per interval and shared by every caller of a process: what makes
//! a fixed cost per process out of a cost per request (the API keys' generation item, the
//! scripts bucket's deploy marker; docs/cost.md).
//!
//! The callers that find the value due wait for one read instead of each making their own
//! (single flight), and what a read answers (a failure too, as the caller's `T` says it) is used
//! until the interval has passed since that read began.

use std::future::Future;
use std::sync::Mutex;
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
}
