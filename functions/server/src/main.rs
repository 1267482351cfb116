//! The long-running server for ECS Fargate: the inbound HTTP router (the same one the function
//! URL and `native serve` run) on `NATIVE_LISTEN` (default `0.0.0.0:8080`), configured from the
//! environment as the functions are. Background work (`job:http`) joins it here. On SIGTERM it
//! stops accepting, gives requests in flight `NATIVE_STOP_GRACE_S` (default 25 s, inside ECS's
//! default 30 s stop timeout) and exits 0. Connections are bounded as `native serve`'s are
//! (`native_core::inbound::listener`: header, idle and body timeouts, a connection cap, a body
//! cap per route; `NATIVE_HTTP_*`).

use std::sync::Arc;
use std::time::Duration;

use native_core::aws::lambda::server_start;
use native_core::inbound::{serve, shutdown_signal, Hygiene};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The SDK's own events, as JSON lines (RUST_LOG sets the level; INFO by default).
    native_core::observe::runtime_log::init();
    let listen = std::env::var("NATIVE_LISTEN").unwrap_or_else(|_| "0.0.0.0:8080".into());
    let grace = std::env::var("NATIVE_STOP_GRACE_S").map_or(Ok(25), |s| s.parse::<u64>())?;
    // Header, idle and body timeouts and the connection cap (NATIVE_HTTP_*), checked first.
    let hygiene = Hygiene::from_env()?;
    let rt = Arc::new(server_start().await?);
    let listener = native_core::inbound::listener::bind(&listen).await?;
    println!("listening on http://{}", listener.local_addr()?);
    let stop = async { eprintln!("{}: stopping", shutdown_signal().await) };
    let finished = serve(listener, rt, stop, Duration::from_secs(grace), hygiene).await?;
    eprintln!(
        "stopped{}",
        if finished {
            ""
        } else {
            "; requests still running were cut off"
        }
    );
    Ok(())
}
