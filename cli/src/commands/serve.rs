//! `native serve`: the inbound HTTP router over the project's embedded backend, and continuous
//! processing of both queues (delays, retries, dead letters), so a local project runs by
//! itself. SIGINT or SIGTERM stops it gracefully: no new connections, in-flight requests and
//! the current queue pass finish, exit 0. Connections are bounded by
//! `native_core::inbound::listener` (header, idle and body timeouts, a connection cap, a body
//! cap per route; `NATIVE_HTTP_*`).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use native_core::inbound::console::{self, Console};
use native_core::inbound::listener::bound;
use native_core::inbound::{app, serve_app, shutdown_signal, Hygiene};
use native_core::local::{drain, DrainOptions};
use native_core::runtime::Runtime;
use tokio::sync::watch;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};

/// How often the queues are looked at when they were idle: a message put by another process
/// is picked up within this (plus its run time).
const POLL: Duration = Duration::from_millis(100);

/// How long requests in flight may take to finish once a stop was asked for.
const GRACE: Duration = Duration::from_secs(60);

pub async fn run(project: &Path, listen: &str, max_concurrent: u32) -> Outcome {
    let p = open(project)?;
    // What a crash left is repaired before serving; a damaged database is refused here rather
    // than at the first request that touches the damaged page.
    let c = p.backend.checkup(false).await?;
    if c.quick_check != ["ok"] {
        return Err(Failed::script(format!(
            "the database {} is damaged (SQLite's quick_check: {}); stop every native process of this project, then restore .native/ from a backup (`native doctor` tells what it can still read)",
            p.root.join(".native").join(native_core::embedded::DB_FILE).display(),
            c.quick_check.join("; ")
        )));
    }
    if c.reclaimed + c.temp_files + c.orphans > 0 || !c.damaged.is_empty() {
        for line in super::doctor::report(&c).iter().skip(1) {
            errln!("doctor: {line}");
        }
    }
    let hygiene = Hygiene::from_env().map_err(Failed::usage)?;
    let token = console::token_in(&p.root.join(".native")).map_err(|e| {
        Failed::usage(format!(
            "cannot read or make the console's token in {}: {e}",
            p.root.join(".native").display()
        ))
    })?;
    let listener = native_core::inbound::listener::bind(listen)
        .await
        .map_err(|e| {
            Failed::usage(format!(
            "cannot listen on {listen}: {e}; pass another --listen ADDR (port 0 picks a free one)"
        ))
        })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failed::usage(format!("cannot read the listening address: {e}")))?;
    // Script logs on stderr, escaped for the terminal as the other verbs print them; callback
    // URLs name the address bound (the port picked for `--listen 127.0.0.1:0` included).
    // Finished runs are kept in memory for the console's invocations pages, beside the runs
    // of the other verbs on the project, copied from its store (`flush_runs`); the server's
    // own are written to the store when it stops (`Recent::served`).
    let (rt, log) = crate::show::served_runtime(&p, addr);
    // The verbs' callback URLs name this address while the server runs.
    p.record_served(addr)?;
    let recent = Arc::new(p.recent(true));
    let rt = Arc::new(
        rt.with_admission(max_concurrent)
            .with_spare_vm()
            .with_recent(recent.clone())
            .with_exporter_from_env("native")?,
    );
    // Scripts and tests read this line to learn the port: exactly this, first, on stdout.
    outln!("listening on http://{addr}");
    let console = Console::new(
        rt.clone(),
        token,
        format!(
            "project {}",
            std::fs::canonicalize(&p.root)
                .unwrap_or_else(|_| p.root.clone())
                .display()
        ),
        true,
    );
    // The second line: the operator's console, token included (kept in .native/console-token).
    outln!("console: {}", console.url(&format!("http://{addr}")));
    errln!("serving project {} (POST /v1/invoke/{{script}}, GET /healthz, the console at /console/) and processing its queues; Ctrl-C stops", p.root.display());
    let (stop_tx, stop_rx) = watch::channel(false);
    // The runs kept from before (the verbs', the last server's) come first in the console.
    if let Err(e) = recent.flush().await {
        errln!("the console does not show the project's earlier runs: {e}");
    }
    let flusher = tokio::spawn(flush_runs(recent.clone(), stop_rx.clone()));
    let worker = tokio::spawn(process_queues(rt.clone(), stop_rx));
    let jobs = rt.services.http_jobs.clone();
    let stop = async move {
        let which = shutdown_signal().await;
        // Rendezvous long-polls answer TIMED_OUT now instead of holding the stop.
        native_core::rendezvous::notify::stop_waits();
        errln!("{which}: no new requests; finishing those in flight and the current queue pass");
        let _ = stop_tx.send(true);
        if let Some(jobs) = &jobs {
            if !jobs.stop(Duration::from_secs(20)).await {
                errln!("some job:http jobs could not write their done.json in 20 s");
            }
        }
    };
    // The API with its access log, and beside it the console (bounded the same way).
    let console = bound(console::router(console), &hygiene);
    let app = app(rt.clone(), &hygiene).with_console(console);
    let served = serve_app(listener, app, hygiene, stop, GRACE).await;
    let _ = worker.await;
    // The last spans go to the collector before the process does, within one send's time.
    rt.flush_spans(native_core::observe::otlp::SEND_TIMEOUT)
        .await;
    let _ = flusher.await;
    if let Err(e) = recent.save().await {
        errln!("this server's runs' summaries for the console were not kept: {e}");
    }
    p.forget_served();
    // Every record of the run is written before the last lines say how it ended.
    log.flush();
    if !served.finished {
        errln!(
            "requests still running {} s after the stop were cut off",
            GRACE.as_secs()
        );
    }
    errln!("stopped");
    Ok(())
}

/// How often the server copies the runs of the project's other processes into its console's
/// memory, and writes the steps of chains it holds to the project's store.
const FLUSH_RUNS: Duration = Duration::from_millis(200);

/// Every [`FLUSH_RUNS`], until told to stop (the caller flushes once before it serves): copies
/// the runs of the project's other processes (the verbs, the last server) from its store
/// into the console's memory, and writes the chains' steps waiting. A run of the server pays
/// a push into memory, not a write of its own; the caller saves them at the stop.
async fn flush_runs(
    recent: Arc<native_core::observe::recent::Recent>,
    mut stop: watch::Receiver<bool>,
) {
    let mut every = tokio::time::interval(FLUSH_RUNS);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut said = false;
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.changed() => return,
        }
        match recent.flush().await {
            Ok(()) => said = false,
            // Said once per spell of failures, not every 200 ms.
            Err(e) if !said => {
                said = true;
                errln!("the console is not being given the project's other runs and the chains' steps: {e}");
            }
            Err(_) => {}
        }
    }
}

/// Drains whatever is due, then looks again after [`POLL`], until told to stop.
async fn process_queues(rt: Arc<Runtime>, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        // Failed messages are logged by the drain and retried later; after their fifth
        // receive they go to the dead-letter place (`native dlq`).
        if let Err(e) = drain(&rt, DrainOptions::default()).await {
            let e = e.to_string();
            errln!(
                "error: processing the queues failed: {}; trying again in 1 s",
                crate::show::text(&e)
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep(POLL) => {}
        }
    }
}
