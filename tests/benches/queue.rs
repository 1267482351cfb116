//! Messages per second through `on_queue` on the embedded backend: what `native serve` does
//! with its work queue (its loop calls `local::drain`, which receives ten messages at a time,
//! runs each message's script and deletes the message once the script succeeded). Three rows
//! from one backlog each: the queue alone (receive and delete, no script), a script that does
//! nothing, and one that does one `native.db.put`.
//!
//! Sends are timed twice: one at a time, and from 16 senders at once.
//!
//! Run: `cargo bench -p native-tests --bench queue` (`NATIVE_BENCH_N` messages, default 5 000;
//! `NATIVE_BENCH_RUNS` runs of each row, default 3, the fastest printed; `NATIVE_BENCH_ROWS`,
//! some of `queue,noop,put`, runs only those drain rows, e.g. to profile one).

use std::time::{Duration, Instant};

use native_core::local::{drain, DrainOptions};
use native_core::ports::QueueKind;
use native_tests::TestProject;
use serde_json::json;

/// Senders at once in the second send row.
const SENDERS: usize = 16;

const NOOP: &str = "function on_queue(ctx, ev) end";
const PUT: &str = "function on_queue(ctx, ev) native.db.put(\"bench\", ev.k, ev) end";

fn main() {
    let env = |k: &str, d: usize| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let (n, runs) = (env("NATIVE_BENCH_N", 5_000), env("NATIVE_BENCH_RUNS", 3));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let rows = std::env::var("NATIVE_BENCH_ROWS").unwrap_or_else(|_| "queue,noop,put".into());
    let mut best = [Duration::MAX; 3];
    let mut sends = Duration::MAX;
    let mut concurrent_sends = Duration::MAX;
    // The rows alternate within each run, so that load from elsewhere falls on all of them.
    for _ in 0..runs {
        for (row, script) in ["-", "noop", "put"].into_iter().enumerate() {
            let name = if script == "-" { "queue" } else { script };
            if !rows.split(',').any(|r| r.trim() == name) {
                continue;
            }
            let p = TestProject::new(
                "bench",
                r#"{ "queue": true }"#,
                &[("noop", NOOP), ("put", PUT)],
            );
            let q = p.rt.services.backends.queue.clone();
            let t = Instant::now();
            rt.block_on(async {
                for i in 0..n {
                    let body = json!({ "tenant": "bench", "script": script, "event": { "k": format!("k{i}") } });
                    q.send(QueueKind::Work, body.to_string(), 0).await.unwrap();
                }
            });
            sends = sends.min(t.elapsed());
            // The same backlog again, from 16 senders at once (an HTTP server's callers):
            // each send is synced before it returns, and sends in flight together share a sync.
            // (Into a project of its own: the backlog drained below stays n messages.)
            let other = TestProject::new("bench", r#"{ "queue": true }"#, &[("noop", NOOP)]);
            let q2 = other.rt.services.backends.queue.clone();
            let t = Instant::now();
            rt.block_on(async {
                let mut senders = tokio::task::JoinSet::new();
                for s in 0..SENDERS {
                    let q = q2.clone();
                    senders.spawn(async move {
                        for i in (s..n).step_by(SENDERS) {
                            let body = json!({ "tenant": "bench", "script": script, "event": { "k": format!("c{i}") } });
                            q.send(QueueKind::Work, body.to_string(), 0).await.unwrap();
                        }
                    });
                }
                while let Some(r) = senders.join_next().await {
                    r.unwrap();
                }
            });
            concurrent_sends = concurrent_sends.min(t.elapsed());
            let t = Instant::now();
            if script == "-" {
                rt.block_on(async {
                    loop {
                        let got = q.receive(QueueKind::Work, 10, 900).await.unwrap();
                        if got.is_empty() {
                            break;
                        }
                        for m in got {
                            q.delete(QueueKind::Work, &m.receipt).await.unwrap();
                        }
                    }
                });
            } else {
                let rt_ = &p.rt;
                let report = rt.block_on(drain(rt_, DrainOptions::default())).unwrap();
                assert_eq!(report.handled as usize, n, "{:?}", report.failures.first());
            }
            best[row] = best[row].min(t.elapsed());
        }
    }
    let rate = |d: Duration| n as f64 / d.as_secs_f64();
    println!("{n} messages, fastest of {runs} alternating runs");
    println!(
        "{:<58} {:>9.0} msg/s",
        "send (one transaction each)",
        rate(sends)
    );
    println!(
        "{:<58} {:>9.0} msg/s",
        format!("send, {SENDERS} senders at once"),
        rate(concurrent_sends)
    );
    for (name, d) in [
        ("queue alone: receive 10 + delete each, no script", best[0]),
        ("drain through on_queue that does nothing", best[1]),
        (
            "drain through on_queue that does one native.db.put",
            best[2],
        ),
    ] {
        if d != Duration::MAX {
            println!("{name:<58} {:>9.0} msg/s", rate(d));
        }
    }
}
