//! Bounded conversions and memory breaches: what a script hands the host is counted as it is
//! converted, so a few MB of Luau heap cannot make the host build gigabytes or run past the
//! deadline; a memory breach fails the invocation even when the script catches it.
//! (The child-process corpus in hostile.rs runs the same bombs under a memory ceiling.)

use std::time::{Duration, Instant};

use native_tests::TestProject;
use serde_json::json;

const CONFIG: &str = r#"{ "queue": true,
  "limits": { "timeout_s": 2, "max_memory_mb": 64, "max_object_mb": 1 } }"#;

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
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
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
    // THEN the encoder stops at the size limit, well before the 2 s deadline
    assert!(e.contains("limit max_object_mb exceeded"), "{e}");
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_conversion_meets_the_deadline() {
    // GIVEN a script that spends its time, then converts a large value of small parts
    let src = r#"function on_invoke()
        local t = {} for i = 1, 20000 do t[i] = { i } end
        local x = { t, t, t, t, t, t, t, t }
        local stop = os.clock() + 1.9
        while os.clock() < stop do end
        for i = 1, 1000 do pcall(native.json.encode, x) end
        return 1
    end"#;
    let t = Instant::now();
    let e = run(src).await.unwrap_err();
    // THEN it fails on the deadline, not long after it
    assert!(
        e.contains("limit timeout_s exceeded") || e.contains("limit max_object_mb"),
        "{e}"
    );
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
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
    // GIVEN a script that logs what pcall gave it
    let p = TestProject::new(
        "acme",
        CONFIG,
        &[("s", "function on_invoke() local ok, e = pcall(string.rep, 'x', 2^27) native.log('info', e) end")],
    );
    let _ = p.invoke("acme", "s", json!({})).await;
    let msgs = p.log.messages();
    assert!(
        msgs.iter()
            .any(|m| m.starts_with("limit max_memory_mb exceeded")),
        "{msgs:?}"
    );
    // AND the same tenant's next invocation runs
    let p2 = TestProject::new(
        "acme",
        CONFIG,
        &[("s", "function on_invoke() return 7 end")],
    );
    assert_eq!(p2.invoke("acme", "s", json!({})).await.unwrap(), json!(7));
}
