//! Serving the router over hyper with a graceful stop, for long-running processes (the Fargate
//! server), within the listener's bounds ([`super::listener`]): on SIGTERM or SIGINT fail the
//! running `job:http` requests (their jobs get `done.json` with ok = false), stop accepting,
//! give requests in flight a grace period to finish, then fail what is left by ending the
//! process's serving, and return.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use super::listener::{serve_app, Hygiene};
use crate::runtime::Runtime;

/// Serves [`super::app`] on `listener` within `hygiene` ([`super::listener`]) until `stop`
/// resolves, then waits at most `grace` for requests in flight. Returns whether they all
/// finished in time.
pub async fn serve(
    listener: TcpListener,
    rt: Arc<Runtime>,
    stop: impl Future<Output = ()> + Send + 'static,
    grace: Duration,
    hygiene: Hygiene,
) -> std::io::Result<bool> {
    let jobs = rt.services.http_jobs.clone();
    let stop = async move {
        stop.await;
        // Rendezvous long-polls answer TIMED_OUT now instead of holding the stop for minutes.
        crate::rendezvous::notify::stop_waits();
        // Background job:http requests are answered ok = false ("server stopping") before the
        // process goes, so their continuations run instead of waiting for ever.
        // Bounded apart from the grace: failing them is a few writes.
        if let Some(jobs) = jobs {
            jobs.stop(grace.min(Duration::from_secs(10))).await;
        }
    };
    // Requests still running after the grace are dropped: their connections close.
    let app = super::app(rt.clone(), &hygiene);
    let served = serve_app(listener, app, hygiene, stop, grace).await;
    // The last spans go to the collector before the process does, within one send's time.
    rt.flush_spans(crate::observe::otlp::SEND_TIMEOUT).await;
    Ok(served.finished)
}

/// Resolves on SIGTERM (what ECS sends) or SIGINT, and says which.
pub async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = tokio::signal::ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    }
}
