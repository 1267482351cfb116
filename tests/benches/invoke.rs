//! Warm `on_invoke` that does nothing, through the engine (fresh isolated globals, cached
//! bytecode, the call, JSON in and out), beside bare mlua baselines measured in the same run.
//!
//! Run: `cargo bench -p native-tests --bench invoke` (release profile). Prints medians and p99s.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::chunk::{ChunkMode, Compiler};
use mlua::{Function, Lua};
use native_core::engine::{Call, Entry};
use native_tests::TestProject;
use serde_json::json;

const SRC: &str = "function on_invoke(ctx, ev) return nil end";

/// A warm invoke that reads one item of the key-value store (the embedded backend).
const SRC_GET: &str = "function on_invoke(ctx, ev) return native.db.get('t', 'k') end";

/// A warm invoke that hands a small document back: the conversion of its return value (20
/// fields, a nested list) is measured too.
const SRC_DOC: &str = r#"function on_invoke(ctx, ev)
  local doc = { id = ctx.request_id, tenant = ctx.tenant, n = ev.a, items = { 1, 2, 3, 4, 5 } }
  for i = 1, 16 do doc["field" .. i] = i end
  return doc
end"#;

fn stats(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let pct = |p: f64| samples[((samples.len() as f64 - 1.0) * p) as usize];
    println!(
        "{name:<58} median {:>8.2} µs   p99 {:>8.2} µs   (n={})",
        pct(0.5).as_secs_f64() * 1e6,
        pct(0.99).as_secs_f64() * 1e6,
        samples.len()
    );
}

fn time(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    for _ in 0..n / 10 {
        f();
    }
    (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

fn main() {
    // NATIVE_BENCH_N sets the samples per row; NATIVE_BENCH_ONLY=noop|doc runs that engine row
    // alone (for `valgrind --tool=callgrind --toggle-collect=*Engine*run*`), =first the first
    // invokes of fresh tenants alone.
    let n: usize = std::env::var("NATIVE_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let only = std::env::var("NATIVE_BENCH_ONLY").ok();
    let wanted = |row: &str| only.as_deref().is_none_or(|o| o == row);
    let code = Compiler::new().compile(SRC).unwrap();
    if only.is_none() {
        baselines(n, &code);
    }

    let p = TestProject::new(
        "bench",
        "{}",
        &[("noop", SRC), ("doc", SRC_DOC), ("get", SRC_GET)],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    if only.as_deref() == Some("first") {
        firsts(&rt);
        return;
    }
    let tenant = rt.block_on(p.rt.tenants.load("bench")).unwrap();
    let call = Call {
        tenant,
        script: "noop".into(),
        entry: Entry::Invoke,
        event: json!({ "a": 1 }).into(),
        json_answer: false,
        attempt: 1,
        depth: 0,
        width: None,
    };
    let services = p.rt.services.clone();
    let engine = p.rt.engine.clone();
    let handle = rt.handle().clone();
    if wanted("noop") {
        stats(
            "native engine: warm on_invoke (isolated globals + cache + call)",
            time(n, || {
                engine.run(&services, &handle, &call).unwrap();
            }),
        );
    }

    let doc = Call {
        script: "doc".into(),
        ..call.clone()
    };
    if wanted("doc") {
        stats(
            "native engine: warm on_invoke returning a 20-field table",
            time(n, || {
                engine.run(&services, &handle, &doc).unwrap();
            }),
        );
    }
    if only.is_some() {
        return;
    }

    let rtp = Arc::new(p);
    stats(
        "native Runtime::invoke from block_on (tenant lookup + hand-off)",
        time(n / 4, || {
            rt.block_on(rtp.rt.invoke("bench", "noop", json!({ "a": 1 })))
                .unwrap();
        }),
    );
    // Where the binaries call it: inside a task on a worker thread of the runtime.
    stats(
        "native Runtime::invoke in a task on a worker thread",
        in_task(&rt, &rtp, "noop", n / 4),
    );
    // The same with one backend call: a read, which the embedded backend answers at once.
    stats(
        "native Runtime::invoke on a worker, one native.db.get",
        in_task(&rt, &rtp, "get", n / 4),
    );
    firsts(&rt);
}

/// `n` invokes of `script`, one after the other in a task on a worker thread, after n/10 to
/// warm up.
fn in_task(
    rt: &tokio::runtime::Runtime,
    p: &Arc<TestProject>,
    script: &'static str,
    n: usize,
) -> Vec<Duration> {
    let p = p.clone();
    rt.block_on(rt.spawn(async move {
        let mut samples = Vec::with_capacity(n);
        for i in 0..n + n / 10 {
            let t = Instant::now();
            p.rt.invoke("bench", script, json!({ "a": 1 }))
                .await
                .unwrap();
            if i >= n / 10 {
                samples.push(t.elapsed());
            }
        }
        samples
    }))
    .unwrap()
}

/// A tenant's first invoke (the goal, under 1 ms at the median over HTTP: BENCHMARKS.md, First
/// invoke and memory per tenant): of 200 fresh
/// tenants, each read from disk, given its VM and run once, and each part alone.
fn firsts(rt: &tokio::runtime::Runtime) {
    const TENANTS: usize = 200;
    let names: Vec<String> = (0..TENANTS).map(|i| format!("t{i:03}")).collect();
    let scripts: &[(&str, &str)] = &[("noop", SRC), ("doc", SRC_DOC)];
    let specs: Vec<native_tests::TenantSpec<'_>> =
        names.iter().map(|n| (n.as_str(), "{}", scripts)).collect();
    let p = TestProject::with_tenants(native_tests::DEPLOYMENT, &specs);
    // The process's own first invoke (bytecode compiled, clock started) is not a tenant's.
    rt.block_on(p.rt.invoke("t000", "noop", json!({}))).unwrap();
    let mut first = Vec::new();
    for name in &names[1..] {
        let t = Instant::now();
        rt.block_on(p.rt.invoke(name, "noop", json!({}))).unwrap();
        first.push(t.elapsed());
    }
    stats("first invoke of a fresh tenant (Runtime::invoke)", first);
    let fresh = native_core::tenants::DirTenants::new(p.dir.path());
    let mut read = Vec::new();
    let mut blanks = Vec::new();
    let mut given = Vec::new();
    for name in &names[1..] {
        let t = Instant::now();
        let tenant = fresh.read(name).unwrap();
        read.push(t.elapsed());
        let t = Instant::now();
        let blank = native_core::engine::Blank::new(&p.rt.services.deployment).unwrap();
        blanks.push(t.elapsed());
        let t = Instant::now();
        let vm = native_core::engine::Vm::for_tenant(blank, &tenant).unwrap();
        given.push(t.elapsed());
        drop(vm);
    }
    stats(
        "  of which: the tenant read from disk (DirTenants::read)",
        read,
    );
    stats(
        "  of which: a blank VM made (Blank::new; ahead, on a server)",
        blanks,
    );
    stats("  of which: the VM given to it (Vm::for_tenant)", given);
}

/// Bare mlua, for comparison: what a call costs without the engine.
fn baselines(n: usize, code: &[u8]) {
    // Baseline 1: a reused state, cached bytecode loaded and the function called.
    let lua = Lua::new();
    stats(
        "bare mlua: load cached bytecode into reused state + call",
        time(n, || {
            lua.load(code).set_mode(ChunkMode::Binary).exec().unwrap();
            let f: Function = lua.globals().get("on_invoke").unwrap();
            f.call::<()>(()).unwrap();
        }),
    );

    // Baseline 2: a new sandboxed state per call.
    stats(
        "bare mlua: new sandboxed state + load + call",
        time(n / 10, || {
            let lua = Lua::new();
            lua.sandbox(true).unwrap();
            lua.load(code).set_mode(ChunkMode::Binary).exec().unwrap();
            let f: Function = lua.globals().get("on_invoke").unwrap();
            f.call::<()>(()).unwrap();
        }),
    );
}
