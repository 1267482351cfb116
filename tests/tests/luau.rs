//! `.luau` script tests: each file of `tests/luau/` is a script of a tenant that exercises the
//! host API and `assert`s. One `#[test]` per file runs its `on_invoke`, then drains the queues
//! (so that `on_queue` of the same file runs for what it sent), and fails with the script's
//! error.
//!
//! A script may return `{ expect_logs = { { level = ..., msg = ... }, ... } }`: those records
//! must have been logged, in that order, by the end of the drain.

use native_tests::TestProject;
use serde_json::{json, Value};

/// The tenant's config: queue on, a short deadline, and settings for `native.config`.
const CONFIG: &str = r#"{
  "queue": true,
  "limits": { "timeout_s": 10 },
  "config": { "greeting": "hi", "nested": { "k": 1, "list": [1, 2, 3] }, "flag": false }
}"#;

/// The router of the test tenant: every object event is dropped, so that scripts may write to
/// buckets freely.
const ROUTER: &str = "function on_route() return nil end";

async fn run_script(name: &str, source: &str) {
    // GIVEN the file as a script of tenant `t`, beside a router that drops object events
    let p = TestProject::new("t", CONFIG, &[(name, source), ("router", ROUTER)]);
    // WHEN its on_invoke runs, and the queues are drained
    let out = p
        .invoke("t", name, json!({ "from": "runner" }))
        .await
        .unwrap_or_else(|e| panic!("tests/luau/{name}.luau failed:\n{e}"));
    let report = p.drain().await;
    // THEN every assert held, in on_invoke and in each on_queue
    let failures: Vec<&str> = report.failures.iter().map(|f| f.error.as_str()).collect();
    assert!(
        failures.is_empty(),
        "tests/luau/{name}.luau failed in on_queue:\n{}",
        failures.join("\n")
    );
    // AND what it expected to be logged was logged, in order
    if let Some(Value::Array(want)) = out.get("expect_logs") {
        let logged = p.log.0.lock().unwrap().clone();
        let mut at = 0;
        for w in want {
            let found = logged[at..]
                .iter()
                .position(|r| r["level"] == w["level"] && r["msg"] == w["msg"]);
            match found {
                Some(i) => {
                    let rec = &logged[at + i];
                    for (k, v) in w.as_object().into_iter().flatten() {
                        assert_eq!(&rec[k], v, "tests/luau/{name}.luau: field {k} of {rec}");
                    }
                    at += i + 1;
                }
                None => panic!(
                    "tests/luau/{name}.luau: expected log {w} (in order) among:\n{}",
                    logged
                        .iter()
                        .map(Value::to_string)
                        .collect::<Vec<_>>()
                        .join("\n")
                ),
            }
        }
    }
}

/// One test per file of `tests/luau/`.
macro_rules! luau_tests {
    ($($(#[$meta:meta])* $name:ident),* $(,)?) => {$(
        $(#[$meta])*
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            run_script(
                stringify!($name),
                include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/luau/", stringify!($name), ".luau")),
            )
            .await;
        }
    )*
        /// The files that have a test.
        const LISTED: &[&str] = &[$(stringify!($name)),*];
    };
}

#[test]
fn every_luau_file_has_a_test() {
    // GIVEN the files of tests/luau/ WHEN compared with the list THEN none is left out
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/luau");
    let mut files: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().into_string().unwrap();
            name.strip_suffix(".luau").map(str::to_string)
        })
        .collect();
    files.sort();
    let mut listed: Vec<&str> = LISTED.to_vec();
    listed.sort();
    assert_eq!(files, listed, "add each file of tests/luau/ to luau_tests!");
}

luau_tests! {
    json,
    ndjson,
    db,
    bucket,
    keys,
    config,
    log,
    queue,
    ctx,
    pcall_errors,
    json_tables,
    ndjson_null,
    ranges,
}
