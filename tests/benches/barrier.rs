//! Barrier costs on the embedded backend: backend calls per create, per non-final and final
//! ack (counted, not timed), and acks per second, through the core and through a script.
//!
//! Run: `cargo bench -p native-tests --bench barrier`.

use std::cell::Cell;
use std::time::Instant;

use native_core::barrier::{Barriers, CreateSpec, Outcome};
use native_core::budget::Budget;
use native_core::embedded::Embedded;
use native_tests::TestProject;
use serde_json::json;

#[derive(Default)]
struct Count(Cell<u32>);

impl Budget for Count {
    fn spend(&self, calls: u32) -> native_core::Result<()> {
        self.0.set(self.0.get() + calls);
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

fn spec(id: &str, n: usize) -> CreateSpec {
    CreateSpec {
        id: Some(id.into()),
        members: (0..n).map(|i| format!("doc-{i:06}.xml")).collect(),
        continue_with: Some("finalize".into()),
        state: json!({}),
        deadline_s: None,
        on_overdue: None,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let db = Embedded::open(dir.path(), vec![]).unwrap();
    let c = Count::default();
    let b = Barriers {
        kv: &db,
        queue: &db,
        tenant: "bench",
        queue_enabled: true,
        budget: &c,
    };
    let ok = || Outcome {
        ok: true,
        error: None,
        result: None,
    };

    for n in [1000, 10_000] {
        c.0.set(0);
        let t = Instant::now();
        rt.block_on(b.create(spec(&format!("c{n}"), n))).unwrap();
        println!(
            "create of {n:>6} members: {:>4} backend calls, {:>7.1} ms",
            c.0.get(),
            t.elapsed().as_secs_f64() * 1e3
        );
    }

    let n = 10_000;
    let mut non_final = 0;
    let t = Instant::now();
    for i in 0..n {
        c.0.set(0);
        let r = rt
            .block_on(b.ack("c10000", &format!("doc-{i:06}.xml"), ok()))
            .unwrap();
        if i + 1 < n {
            non_final = non_final.max(c.0.get());
        } else {
            assert!(r.dispatched);
            println!(
                "backend calls per non-final ack: {non_final}; per final ack: {}",
                c.0.get()
            );
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "acks through the core, one at a time: {:.0} acks/s ({n} acks in {secs:.2} s)",
        n as f64 / secs
    );

    // Through a script: `native invoke` of an ack script, as a routed ack event would run it.
    let p = TestProject::new("bench", r#"{ "queue": true, "limits": { "max_data_ops": 10000 } }"#, &[
        ("create", "function on_invoke(ctx, ev) local m = {} for i = 1, ev.n do m[i] = 'd' .. i end native.barrier.create({ id = 'b', members = m, continue_with = 'fin' }) end"),
        ("ack", "function on_invoke(ctx, ev) return native.barrier.ack('b', ev.m, { ok = true }).complete end"),
        ("fin", "function on_queue() end"),
    ]);
    let n = 5000;
    rt.block_on(p.invoke("bench", "create", json!({ "n": n })))
        .unwrap();
    let t = Instant::now();
    for i in 1..=n {
        rt.block_on(p.invoke("bench", "ack", json!({ "m": format!("d{i}") })))
            .unwrap();
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "acks through a script (Runtime::invoke): {:.0} acks/s ({n} acks in {secs:.2} s)",
        n as f64 / secs
    );
}
