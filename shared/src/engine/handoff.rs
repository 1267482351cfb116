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
use std::sync::Arc;

use tokio::runtime::{Handle, RuntimeFlavor};

use super::{Call, Engine};
use crate::runtime::Services;
use crate::{Error, Result};

/// Runs `call` to its end and returns the entry point's value (see [`Engine::run`]).
pub async fn run(
    engine: &Arc<Engine>,
    services: &Arc<Services>,
    call: Call,
) -> Result<serde_json::Value> {
    let handle = Handle::current();
    if handle.runtime_flavor() == RuntimeFlavor::MultiThread {
        return tokio::task::block_in_place(|| guarded(engine, services, &handle, &call));
    }
    let (engine, services) = (engine.clone(), services.clone());
    tokio::task::spawn_blocking(move || guarded(&engine, &services, &handle, &call))
        .await
        .map_err(|e| failed(&e.to_string()))?
}

/// [`Engine::run`], with a panic turned into the call's error.
fn guarded(
    engine: &Engine,
    services: &Arc<Services>,
    handle: &Handle,
    call: &Call,
) -> Result<serde_json::Value> {
    catch_unwind(AssertUnwindSafe(|| engine.run(services, handle, call))).unwrap_or_else(|p| {
        let what = p
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into());
        Err(failed(&what))
    })
}

fn failed(what: &str) -> Error {
    Error::Backend {
        backend: "engine",
        message: format!("script thread failed: {what}"),
        source: None,
    }
}
