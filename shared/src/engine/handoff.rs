//! How an async caller runs a script, which is synchronous and blocks on backend calls.
//!
//! On a worker thread of a multi-threaded tokio runtime (every binary and `native serve`), the
//! script runs right there under `tokio::task::block_in_place`: tokio hands the worker's other
//! tasks to another thread, off the caller's path, instead of the call waiting for a wake-up of
//! a pooled thread and another back (`spawn_blocking` cost 15 to 40 µs of a 6 µs invoke on a
//! loaded machine). Elsewhere (a current-thread runtime, as in `#[tokio::test]`) it goes to
//! `spawn_blocking` as before. Either way at most tokio's blocking-thread limit of scripts run
//! at once, and a panic in a script fails that call with an error and leaves the threads and
//! the runtime as they were.

use std::panic::{catch_unwind, AssertUnwindSafe};

use tokio::runtime::{Handle, RuntimeFlavor};

use crate::{Error, Result};

/// Runs `f` (a script's run: see [`super::Engine::run`]) to its end and returns what it
/// returned, or an error if it panicked.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        return tokio::task::block_in_place(|| guarded(f));
    }
    tokio::task::spawn_blocking(|| guarded(f))
        .await
        .map_err(|e| failed(&e.to_string()))?
}

/// `f`, with a panic turned into an error.
fn guarded<T>(f: impl FnOnce() -> T) -> Result<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        failed(&what)
    })
}

fn failed(what: &str) -> Error {
    Error::Backend {
        backend: "engine",
        message: format!("script thread failed: {what}"),
        source: None,
    }
}
