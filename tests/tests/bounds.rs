//! Bounded conversions and memory breaches: what a script hands the host is counted as it is
//! converted, so a few MB of Luau heap cannot make the host build gigabytes or run past the
//! deadline; a memory breach fails the invocation even when the script catches it.
//! (The child-process corpus in hostile.rs runs the same bombs under a memory ceiling.)

use std::time::{Duration, Instant};

use native_tests::TestProject;
use serde_json::json;

const CONFIG: &str = r#"{ "queue": true,
  "limits": { "timeout_s": 20, "max_memory_mb": 64, "max_object_mb": 1 } }"#;

async fn run(src: &str) -> Result<serde_json::Value, String> {
    let p = TestProject::new(
        "acme",
        CONFIG,
        &[("s", src), ("q", "function on_queue() end")],
    );
    p.invoke("acme", "s", json!({}))
        .await
        .map_err(|e| e.to_string())
}

/// Builds `n` references to one 1 MB string: 5 MB of JSON from about 1 MB of heap.
const AMPLIFY: &str = "local big = table.create(5, string.rep('x', 2^20))\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_conversion_path_stops_at_max_object_mb_even_under_pcall() {
    // GIVEN a 1 MB max_object_mb and a value that would encode to 5 MB
    let paths = [
        ("return", "return big"),
        ("json", "pcall(native.json.encode, big) return 1"),
        (
            "json-pretty",
            "pcall(native.json.encode, big, { pretty = true }) return 1",
        ),
        ("queue", "pcall(native.queue.send, 'q', big) return 1"),
        ("db", "pcall(native.db.put, 'p', 'k', big) return 1"),
        (
            "log",
            "pcall(native.log, 'info', 'm', { big = big }) return 1",
        ),
        (
            "barrier-state",
            "pcall(native.barrier.create, { members = { 'a' }, state = big }) return 1",
        ),
    ];
    for (name, body) in paths {
        // WHEN the script hands it over (and catches the error where it can)
        let src = format!("function on_invoke()\n{AMPLIFY}{body}\nend");
        let e = run(&src).await.unwrap_err();
        // THEN the invocation fails with the limit and its figures
        assert!(
            e.contains("limit max_object_mb exceeded") && e.contains("1 MB"),
            "{name}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_amplification_bomb_fails_fast() {
    // GIVEN the issue's bomb: 5 000 references to one 1 MB string (5 GB of JSON)
    let src = "function on_invoke() return table.create(5000, string.rep('x', 2^20)) end";
    let t = Instant::now();
    let e = run(src).await.unwrap_err();
    // THEN it is refused at the limit, quickly, and the process lives on
    assert!(e.contains("limit max_object_mb exceeded"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_subtables_count_each_time_and_stop_in_time() {
    // GIVEN a table that holds the same subtable twice at each of 24 levels (16 M leaves)
    let src = r#"function on_invoke()
        local x = "leaf" for i = 1, 24 do x = { x, x } end
        local ok, e = pcall(native.json.encode, x)
        return { ok = ok }
    end"#;
    let t = Instant::now();
    let e = run(src).await.unwrap_err();
    // THEN the encoder stops at the size limit, long before the deadline
    assert!(e.contains("limit max_object_mb exceeded"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_conversion_meets_the_deadline() {
    // GIVEN a script that spends most of its time, then makes one conversion that takes longer
    // than what is left (the interrupt cannot stop host code: the encoder looks at the clock)
    let src = r#"function on_invoke()
        local t = {} for i = 1, 200000 do t[i] = { i } end
        local x = table.create(64, t) -- 128 MB of JSON: seconds of host work in one call
        local stop = os.clock() + 1.5
        while os.clock() < stop do end
        pcall(native.json.encode, x)
        return 1
    end"#;
    let p = TestProject::new(
        "acme",
        r#"{ "limits": { "timeout_s": 2, "max_object_mb": 256 } }"#,
        &[("s", src)],
    );
    let t = Instant::now();
    let e = p
        .invoke("acme", "s", json!({}))
        .await
        .unwrap_err()
        .to_string();
    // THEN it fails on the deadline (the values are within max_object_mb), not long after it
    assert!(e.contains("limit timeout_s exceeded"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn values_within_the_limit_convert_as_before() {
    let out = run(r#"function on_invoke()
        local s = native.json.encode({ b = { 1, 2, native.json.null, 4 }, a = "x", n = native.json.null })
        local p = native.json.encode({ a = { 1, {} }, b = {} }, { pretty = true })
        return { s = s, p = p, big = string.rep("y", 1000) }
    end"#)
    .await
    .unwrap();
    assert_eq!(out["s"], json!(r#"{"a":"x","b":[1,2,null,4]}"#));
    // The same text as serde_json's pretty printer.
    let want = serde_json::to_string_pretty(&json!({ "a": [1, {}], "b": {} })).unwrap();
    assert_eq!(out["p"], json!(want));
    assert_eq!(out["big"].as_str().unwrap().len(), 1000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_and_log_messages_are_cut_not_multiplied() {
    // GIVEN print with the same 1 MB string a thousand times
    let p = TestProject::new(
        "acme",
        CONFIG,
        &[(
            "s",
            "function on_invoke() local s = string.rep('z', 2^20) print(table.unpack(table.create(200, s))) native.log('info', s) return 1 end",
        )],
    );
    p.invoke("acme", "s", json!({})).await.unwrap();
    // THEN each record is cut at 64 KB and says how long it was
    let logged = p.log.0.lock().unwrap().clone();
    let msgs: Vec<&str> = logged.iter().filter_map(|r| r["msg"].as_str()).collect();
    assert_eq!(msgs.len(), 2, "{msgs:?}");
    for m in msgs {
        assert!(m.len() < 70 * 1024, "{}", m.len());
        assert!(m.contains("[cut: "), "{}", &m[m.len() - 40..]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memory_breach_fails_even_when_caught() {
    for (name, catch) in [
        ("pcall", "local ok, e = pcall(string.rep, 'x', 2^27) return { ok = ok, e = e }"),
        ("xpcall", "local ok, e = xpcall(string.rep, function(e) return e end, 'x', 2^27) return { ok = ok, e = e }"),
        ("coroutine", "local co = coroutine.create(function() return string.rep('x', 2^27) end) local ok, e = coroutine.resume(co) return { ok = ok, e = e }"),
        ("host", "local ok, e = pcall(native.json.decode, '[' .. string.rep('1,', 2^22) .. '1]') return { ok = ok }"),
    ] {
        // GIVEN a script that catches the memory error and returns normally
        let src = format!("function on_invoke() {catch} end");
        let e = run(&src).await.unwrap_err();
        // THEN the invocation fails, naming the limit and the figures
        assert!(
            e.contains("limit max_memory_mb exceeded") && e.contains("64 MB") && e.contains("in use"),
            "{name}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caught_memory_error_reads_as_the_breach() {
    // GIVEN a script that logs what pcall gave it, beside another of the same tenant
    let p = TestProject::new(
        "acme",
        CONFIG,
        &[
            ("s", "function on_invoke() local ok, e = pcall(string.rep, 'x', 2^27) native.log('info', e) end"),
            ("seven", "function on_invoke() return 7 end"),
        ],
    );
    let tenant = p.rt.tenants.load("acme").await.unwrap();
    // (a VM of the tenant's, pooled)
    assert_eq!(
        p.invoke("acme", "seven", json!({})).await.unwrap(),
        json!(7)
    );
    assert_eq!(p.rt.engine.idle_vms(&tenant), 1);
    // WHEN the script breaches max_memory_mb and catches it
    assert!(p.invoke("acme", "s", json!({})).await.is_err());
    // THEN it saw the breach's message
    let msgs = p.log.messages();
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("limit max_memory_mb exceeded")),
        "{msgs:?}"
    );
    // AND the VM that hit the limit is not pooled again
    assert_eq!(p.rt.engine.idle_vms(&tenant), 0);
    // AND the same tenant's next invocation, in the same runtime, runs (on a VM made anew)
    assert_eq!(
        p.invoke("acme", "seven", json!({})).await.unwrap(),
        json!(7)
    );
    assert_eq!(p.rt.engine.idle_vms(&tenant), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_invocation_writes_at_most_4_mb_of_logs() {
    // GIVEN a script that logs 64 KB a thousand times (64 MB)
    let p = TestProject::new(
        "acme",
        CONFIG,
        &[(
            "s",
            "function on_invoke() local s = string.rep('z', 60000) for i = 1, 1000 do native.log('info', s) end return 1 end",
        )],
    );
    p.invoke("acme", "s", json!({})).await.unwrap();
    // THEN about 4 MB were written, and one record says the rest was dropped
    let logged = p.log.0.lock().unwrap().clone();
    let bytes: usize = logged.iter().map(|r| r.to_string().len() + 1).sum();
    assert!(bytes <= 4 * 1024 * 1024 + 1024, "{bytes}");
    assert!(logged.len() < 80, "{}", logged.len());
    let last = logged.last().unwrap();
    assert_eq!(last["level"], "warn");
    assert!(last["msg"]
        .as_str()
        .unwrap()
        .contains("further records are dropped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_error_message_is_cut() {
    // GIVEN a script whose error is 8 MB of text
    let e = run("function on_invoke() error(string.rep('e', 2^23)) end")
        .await
        .unwrap_err();
    // THEN the host keeps 16 KB of it and says how long it was
    assert!(e.len() < 17 * 1024, "{}", e.len());
    assert!(e.contains("[cut: "), "{}", &e[e.len() - 60..]);
}
