//! Deferred durability: a run of a script makes its writes lazily and syncs once, before its
//! answer.
//!
//! Every write through the ports is durable when it returns, unless it is made inside
//! [`deferring`]: then a backend that can (the embedded one) may answer it once it is visible to
//! every later read but before it is on stable storage. Whoever opened the scope makes those
//! writes durable with [`Backends::flush`](super::Backends::flush) before it acknowledges
//! anything that covers them: the runtime does at the end of every run of a script, before an
//! invocation's 2xx; a drain pass once for all its runs (see [`caller_flushing`]), before it
//! deletes their messages. A script that makes 100
//! writes then waits for one sync, not 100, and still reads its own writes.
//!
//! The scope is tokio's task-local, entered synchronously on the thread that runs the script:
//! the backend calls a script waits for are polled on that thread, inside the scope. Tasks
//! spawned from there are outside it, so their writes are durable when they return.
//!
//! Writes inside [`best_effort`] are never owed a sync: those whose loss in a power cut costs
//! nothing (a key's last use, a queue message's lease and delete, which at worst deliver it
//! once more).

use std::future::Future;

tokio::task_local! {
    static DEFERRED: ();
    static BEST_EFFORT: ();
    static CALLER_FLUSHES: ();
}

/// Runs `f`, with the writes made on this thread meanwhile deferred.
pub fn deferring<T>(f: impl FnOnce() -> T) -> T {
    DEFERRED.sync_scope((), f)
}

/// Runs `fut`, with its writes deferred.
pub async fn deferring_async<F: Future>(fut: F) -> F::Output {
    DEFERRED.scope((), fut).await
}

/// Whether a write made here may be answered before it is synced. Call it synchronously where
/// the write starts (before its first `.await`).
pub fn deferred() -> bool {
    DEFERRED.try_with(|_| ()).is_ok()
}

/// Runs `fut`, with its writes best-effort: writes whose loss in a power cut costs nothing (a
/// key's last use, a queue message's lease and delete). A backend that can (the embedded one) commits them without a sync and
/// never makes a flush sync for them; the next synced commit makes them durable with it. The
/// write still returns once it is visible to every later read.
pub async fn best_effort<F: Future>(fut: F) -> F::Output {
    BEST_EFFORT.scope((), fut).await
}

/// Whether a write made here is best-effort ([`best_effort`]). Call it synchronously where the
/// write starts (before its first `.await`).
pub fn is_best_effort() -> bool {
    BEST_EFFORT.try_with(|_| ()).is_ok()
}

/// Runs `fut`, whose runs of scripts leave their flush to the caller: it flushes once, before
/// it acknowledges any of them. A drain pass does, before it deletes the messages it handled, so
/// that ten runs that wrote wait for one sync, not ten.
pub async fn caller_flushing<F: Future>(fut: F) -> F::Output {
    CALLER_FLUSHES.scope((), fut).await
}

/// Whether a run of a script made here leaves its flush to the caller ([`caller_flushing`]).
pub fn caller_flushes() -> bool {
    CALLER_FLUSHES.try_with(|_| ()).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_are_deferred_only_inside_the_scope() {
        assert!(!deferred());
        assert!(deferring(deferred));
        assert!(!deferred());
        let inner = deferring(|| std::thread::spawn(deferred).join().unwrap());
        assert!(!inner, "another thread is outside the scope");
    }

    #[tokio::test]
    async fn a_spawned_task_is_outside_the_scope() {
        let (here, spawned) = deferring_async(async {
            (
                deferred(),
                tokio::spawn(async { deferred() }).await.unwrap(),
            )
        })
        .await;
        assert!(here);
        assert!(!spawned);
    }
}
