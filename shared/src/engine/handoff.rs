//! How an async caller runs a script, which is synchronous and may block on backend calls.
//!
//! On a multi-threaded tokio runtime (every binary and `native serve`) the script runs inline on
//! the thread that polls the caller, and moves the worker's other tasks away only when it waits
//! or runs long (see [`crate::blocking`]). Elsewhere (a current-thread runtime, as in
//! `#[tokio::test]`) it goes to `spawn_blocking`. Either way a panic in a script fails that call
//! with an error and leaves the threads and the runtime as they were.

use std::panic::{catch_unwind, AssertUnwindSafe};

use tokio::runtime::{Handle, RuntimeFlavor};

use crate::{Error, Result};

/// Runs `f` (a script's run: see [`super::Engine::run`]) to its end and returns what it
/// returned, or an error if it panicked.
pub async fn run<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        return crate::blocking::run_inline(|| guarded(f));
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
