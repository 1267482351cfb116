//! native.batch on both backends: submit, route, hydrate, verified streaming reads, and
//! partners that misbehave. The partner is played here by writing into the batch bucket; on AWS
//! its done.json reaches the events queue through S3's (moto's) notification, as deployed.

use std::io::Write;
use std::sync::Arc;

use native_core::local::{drain, DrainOptions};
use native_core::ports::{ObjectStore, PutMode};
use native_core::runtime::Runtime;
use native_tests::{Backend, TestProject};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

// Every test runs on the embedded backend (`embedded::<name>`) and on S3/DynamoDB/SQS in the
// emulator (`aws::<name>`).
native_tests::on_both_backends!(
    submit_writes_inputs_state_and_a_v1_request,
    the_partner_answers_and_the_continuation_reads_verified_rows_then_cleans_up,
    misbehaving_partners_get_clear_errors_and_the_job_stays_intact,
    allow_failure_hands_the_failure_to_the_script,
    part_keys_of_a_failed_job_are_checked_too,
    a_done_json_written_before_its_parts_fails_until_they_land,
    streams_obey_max_stream_mb_and_rows_obey_max_object_mb,
    gzip_is_detected_from_the_data_and_parts_are_read_in_order,
    route_owns_only_batch_done_json_and_says_when_the_state_is_gone,
    ids_make_resubmits_idempotent_and_bad_calls_are_refused,
    an_id_is_one_job_whatever_is_resubmitted_and_whenever,
    a_continuation_can_submit_the_next_stage,
    ndjson_rows_reads_strings,
    inline_results_are_read_verified_and_have_no_object,
    a_round_trip_makes_a_fixed_number_of_batch_bucket_calls,
);

const DEPLOYMENT: &str = r#"{
  "buckets": { "map": { "Out": "shop-out", "In": "shop-in" } },
  "batch": { "bucket": "shop-batch", "prefix": "tenants/" }
}"#;

fn script(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/batch/tenants/shop/scripts")
        .join(format!("{name}.luau"));
    std::fs::read_to_string(p).unwrap()
}

/// The example tenant, with extra scripts and limits, on `backend`.
async fn shop(backend: Backend, config: &str, extra: &[(&str, &str)]) -> TestProject {
    let names = ["request", "router", "batch-gone", "default", "settle"];
    let sources: Vec<String> = names.iter().map(|n| script(n)).collect();
    let mut scripts: Vec<(&str, &str)> = names
        .iter()
        .copied()
        .zip(sources.iter().map(String::as_str))
        .collect();
    scripts.extend_from_slice(extra);
    TestProject::on(
        backend,
        DEPLOYMENT,
        &[
            ("shop", config, &scripts),
            ("nobatch", r#"{ "queue": true }"#, &scripts),
        ],
    )
    .await
}

const SHOP: &str = r#"{ "queue": true, "batch": true }"#;

/// The real batch bucket ("shop-batch" on the embedded backend, a name of its own on AWS).
fn batch_bucket(p: &TestProject) -> String {
    p.real_bucket("$batch")
}

async fn raw(p: &TestProject, key: &str) -> Option<Vec<u8>> {
    p.rt.services
        .backends
        .objects
        .get(&batch_bucket(p), &format!("tenants/shop/{key}"))
        .await
        .unwrap()
        .map(|(_, b)| b.to_vec())
}

async fn write(p: &TestProject, key: &str, data: Vec<u8>) {
    p.rt.services
        .backends
        .objects
        .put(
            &batch_bucket(p),
            &format!("tenants/shop/{key}"),
            data.into(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn part(key: &str, data: &[u8]) -> Value {
    json!({ "key": key, "bytes": data.len(), "sha256": hex::encode(Sha256::digest(data)) })
}

const CUSTOMERS: &str = "{\"id\":1,\"name\":\"Ada\"}\n{\"id\":3,\"name\":\"Edsger\"}\n";
const ORDERS: &str = "{\"id\":\"o-1\",\"customer_id\":1,\"amount\":120}\n\n{\"id\":\"o-2\",\"customer_id\":3,\"amount\":80}\n";

/// Submits the example request; returns the job id.
async fn submit(p: &TestProject) -> String {
    let id = p
        .invoke(
            "shop",
            "request",
            json!({ "ids": [1, 2, 3], "since": "2026-11-01", "ref": "r-1" }),
        )
        .await
        .unwrap();
    id.as_str().unwrap().to_string()
}

/// A well-behaved partner: both results, customers gzipped, then done.json.
async fn answer(p: &TestProject, job: &str) -> Value {
    let c = gzip(CUSTOMERS.as_bytes());
    write(
        p,
        &format!("jobs/{job}/customers.0000.ndjson.gz"),
        c.clone(),
    )
    .await;
    write(
        p,
        &format!("jobs/{job}/orders.0000.ndjson"),
        ORDERS.as_bytes().to_vec(),
    )
    .await;
    json!({ "ok": true, "results": {
        "customers": { "rows": 2, "parts": [part("customers.0000.ndjson.gz", &c)] },
        "orders": { "rows": 2, "parts": [part("orders.0000.ndjson", ORDERS.as_bytes())] } } })
}

async fn done(p: &TestProject, job: &str, manifest: &Value) {
    write(
        p,
        &format!("jobs/{job}/done.json"),
        manifest.to_string().into_bytes(),
    )
    .await;
}

async fn submit_writes_inputs_state_and_a_v1_request(backend: Backend) {
    let p = shop(backend, SHOP, &[]).await;
    let job = submit(&p).await;
    let req: Value =
        serde_json::from_slice(&raw(&p, &format!("jobs/{job}/request.json")).await.unwrap())
            .unwrap();
    let ids = "1\n2\n3\n";
    assert_eq!(req["v"], 1);
    assert_eq!(req["job"], job.as_str());
    assert!(req["created_ms"].as_i64().unwrap() > 0);
    assert_eq!(
        req["inputs"],
        json!({ "ids": { "rows": 3, "parts": [part("inputs/ids.0000.ndjson", ids.as_bytes())] } })
    );
    assert_eq!(
        req["queries"],
        json!([
            { "name": "customers", "query": "customers_by_id", "params": { "input": "ids" } },
            { "name": "orders", "query": "open_orders", "params": { "since": "2026-11-01" } },
        ])
    );
    assert_eq!(
        raw(&p, &format!("jobs/{job}/inputs/ids.0000.ndjson"))
            .await
            .unwrap(),
        ids.as_bytes()
    );
    let state: Value =
        serde_json::from_slice(&raw(&p, &format!("state/{job}.json")).await.unwrap()).unwrap();
    assert_eq!(state["continue_with"], "settle");
    assert_eq!(state["state"], json!({ "ref": "r-1" }));
    // Parts and request.json do not notify; only done.json does.
    assert_eq!(p.drain().await.handled, 0);
}

async fn the_partner_answers_and_the_continuation_reads_verified_rows_then_cleans_up(
    backend: Backend,
) {
    let p = shop(backend, SHOP, &[]).await;
    let job = submit(&p).await;
    let manifest = answer(&p, &job).await;
    done(&p, &job, &manifest).await;
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    let out: Value =
        serde_json::from_str(&p.get("shop", "Out", "settlements/r-1.json").await.unwrap()).unwrap();
    assert_eq!(out["total"], 200);
    assert_eq!(
        out["orders"][1],
        json!({ "order": "o-2", "customer": "Edsger", "amount": 80 })
    );
    // Cleaned up: every file of the job is gone.
    let left =
        p.rt.services
            .backends
            .objects
            .list(&batch_bucket(&p), "tenants/shop/", None, 100)
            .await
            .unwrap();
    assert!(
        left.objects.is_empty(),
        "left behind: {:?}",
        left.objects.iter().map(|o| &o.key).collect::<Vec<_>>()
    );
    // A duplicate done.json notification now goes to batch-gone.
    done(&p, &job, &manifest).await;
    assert!(p.drain().await.failures.is_empty());
    assert!(p
        .log
        .messages()
        .iter()
        .any(|m| m == "duplicate done.json for a finished job"));
}

/// A partner that puts small results into done.json itself (`data`): the continuation reads
/// them verified as it reads objects, and cleans up without a key for them.
async fn inline_results_are_read_verified_and_have_no_object(backend: Backend) {
    let p = shop(backend, SHOP, &[]).await;
    let job = submit(&p).await;
    let inline = |key: &str, text: &str| {
        json!({ "key": key, "data": text, "bytes": text.len(),
            "sha256": hex::encode(Sha256::digest(text.as_bytes())) })
    };
    let manifest = json!({ "ok": true, "results": {
        "customers": { "rows": 2, "parts": [inline("customers.0000.ndjson", CUSTOMERS)] },
        "orders": { "rows": 2, "parts": [inline("orders.0000.ndjson", ORDERS)] } } });
    done(&p, &job, &manifest).await;
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    let out: Value =
        serde_json::from_str(&p.get("shop", "Out", "settlements/r-1.json").await.unwrap()).unwrap();
    assert_eq!(out["total"], 200);
    let left =
        p.rt.services
            .backends
            .objects
            .list(&batch_bucket(&p), "tenants/shop/", None, 100)
            .await
            .unwrap();
    assert!(
        left.objects.is_empty(),
        "left behind: {:?}",
        left.objects.iter().map(|o| &o.key).collect::<Vec<_>>()
    );
}

/// One job's round trip makes a fixed number of calls on the batch bucket, the figures that
/// docs/cost.md prices: the submit writes the input part, the state and request.json; the
/// partner reads request.json (and whether done.json is there) and writes done.json alone, its
/// small results inline; the continuation reads the state and done.json, no part, and deletes
/// what the job wrote.
async fn a_round_trip_makes_a_fixed_number_of_batch_bucket_calls(backend: Backend) {
    use native_core::batch::partner::{answer, Options, Source};
    use native_tests::counted::CountedObjects;
    use std::collections::BTreeMap;
    let p = shop(backend, SHOP, &[]).await;
    let objects = Arc::new(CountedObjects::new(p.rt.services.backends.objects.clone()));
    let mut backends = p.rt.services.backends.clone();
    backends.objects = objects.clone();
    let rt = Arc::new(
        Runtime::new(
            p.rt.services.deployment.clone(),
            backends,
            p.project.tenants.clone(),
        )
        .with_log(p.log.clone()),
    );
    let bucket = batch_bucket(&p);
    // WHEN a job is submitted
    let job = rt
        .invoke(
            "shop",
            "request",
            json!({ "ids": [1, 2, 3], "since": "2026-11-01", "ref": "r-1" }),
        )
        .await
        .unwrap();
    let job = job.as_str().unwrap();
    // THEN three objects are written: the input's part, the state, request.json
    assert_eq!(objects.take(&bucket), BTreeMap::from([("put", 3)]));
    // WHEN the partner answers it
    let (_, request) = objects
        .get(&bucket, &format!("tenants/shop/jobs/{job}/request.json"))
        .await
        .unwrap()
        .unwrap();
    let request = native_core::batch::contract::read_request(&request).unwrap();
    let given = BTreeMap::from([
        ("customers".to_string(), Ok(CUSTOMERS.to_string())),
        ("orders".to_string(), Ok(ORDERS.to_string())),
    ]);
    let opts = Options::new(Source::Given(given));
    let a = answer(&*objects, &rt.services.deployment, "shop", &request, &opts)
        .await
        .unwrap();
    assert!(a.written && a.done.ok, "{a:?}");
    // THEN it read request.json and looked for done.json, and wrote done.json alone
    assert_eq!(
        objects.take(&bucket),
        BTreeMap::from([("get", 2), ("put", 1)])
    );
    // WHEN the continuation runs
    let r = drain(
        &rt,
        DrainOptions {
            wait: true,
            retry_delay_s: 0,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    let out: Value =
        serde_json::from_str(&p.get("shop", "Out", "settlements/r-1.json").await.unwrap()).unwrap();
    assert_eq!(out["total"], 200);
    // THEN it read the state (router and continuation) and done.json, no part, and deleted the
    // job's four objects; the two HEADs are the event's chain (depth and trace)
    assert_eq!(
        objects.take(&bucket),
        BTreeMap::from([("delete", 4), ("get", 3), ("head", 2)])
    );
}

/// A misbehaviour: its name, how it spoils the manifest, a part to write, the error expected.
type Case = (
    &'static str,
    Box<dyn Fn(&mut Value)>,
    Option<(&'static str, Vec<u8>)>,
    &'static str,
);

/// A partner that misbehaves: each case names the problem, the continuation fails, and the job
/// stays intact for the retry.
async fn misbehaving_partners_get_clear_errors_and_the_job_stays_intact(backend: Backend) {
    let cases: Vec<Case> = vec![
        (
            "missing part",
            Box::new(|m| m["results"]["orders"]["parts"][0]["key"] = json!("orders.9999.ndjson")),
            None,
            "part \"orders.9999.ndjson\": the part is missing",
        ),
        (
            "wrong sha256",
            Box::new(|m| m["results"]["orders"]["parts"][0]["sha256"] = json!("00".repeat(32))),
            None,
            "sha256 is",
        ),
        (
            "wrong bytes",
            Box::new(|m| m["results"]["orders"]["parts"][0]["bytes"] = json!(5)),
            None,
            "the manifest says 5",
        ),
        (
            "wrong rows",
            Box::new(|m| m["results"]["orders"]["rows"] = json!(3)),
            None,
            "read 2 rows, the manifest says 3",
        ),
        (
            "bad JSON line",
            Box::new(|m| {
                m["results"]["orders"]["parts"][0] = json!({ "key": "orders.0000.ndjson" })
            }),
            Some((
                "orders.0000.ndjson",
                b"{\"id\":\"o\",\"customer_id\":1,\"amount\":1}\n{oops\n".to_vec(),
            )),
            "part \"orders.0000.ndjson\", line 2: invalid JSON",
        ),
        (
            "inline, wrong sha256",
            Box::new(|m| {
                m["results"]["orders"]["parts"][0] = json!({ "key": "orders.0000.ndjson",
                    "data": ORDERS, "sha256": "00".repeat(32) })
            }),
            None,
            "sha256 is",
        ),
        (
            "inline, bad JSON line",
            Box::new(|m| {
                m["results"]["orders"]["parts"][0] = json!({ "key": "orders.0000.ndjson",
                    "data": "{\"id\":\"o\",\"customer_id\":1,\"amount\":1}\n{oops\n" })
            }),
            None,
            "part \"orders.0000.ndjson\", line 2: invalid JSON",
        ),
        (
            "inline, more than done.json may hold",
            Box::new(|m| {
                m["results"]["orders"]["parts"][0] =
                    json!({ "key": "orders.0000.ndjson", "data": "x".repeat(262_145) })
            }),
            None,
            "more than the 262144 one done.json may hold",
        ),
        (
            "climbs out",
            Box::new(|m| m["results"]["orders"]["parts"][0]["key"] = json!("../../state/x.json")),
            None,
            "climbs out of the job folder",
        ),
        (
            "encoded climb",
            Box::new(|m| m["results"]["orders"]["parts"][0]["key"] = json!("%2e%2e/x")),
            None,
            "percent-encoded",
        ),
        (
            "absolute",
            Box::new(|m| m["results"]["orders"]["parts"][0]["key"] = json!("/etc/passwd")),
            None,
            "is absolute",
        ),
        (
            "no result",
            Box::new(|m| {
                m["results"].as_object_mut().unwrap().remove("orders");
            }),
            None,
            "done.json has no result for query \"orders\"",
        ),
        (
            "partner failed",
            Box::new(|m| *m = json!({ "ok": false, "error": "partner timeout" })),
            None,
            "failed: partner timeout",
        ),
        (
            "not a manifest",
            Box::new(|m| *m = json!({ "results": 1 })),
            None,
            "done.json: not a valid manifest: invalid type",
        ),
    ];
    for (case, spoil, data, want) in cases {
        let p = shop(backend, SHOP, &[]).await;
        let job = submit(&p).await;
        let mut manifest = answer(&p, &job).await;
        if let Some((key, bytes)) = data {
            write(&p, &format!("jobs/{job}/{key}"), bytes).await;
        }
        spoil(&mut manifest);
        done(&p, &job, &manifest).await;
        let r = native_core::local::drain(
            &p.rt,
            native_core::local::DrainOptions {
                wait: false,
                retry_delay_s: 60,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert_eq!(r.failures.len(), 1, "{case}: {:?}", r.failures);
        assert!(
            r.failures[0].error.contains(want),
            "{case}: {}",
            r.failures[0].error
        );
        assert!(
            r.failures[0].error.contains("settle.luau:"),
            "{case}: names the script line: {}",
            r.failures[0].error
        );
        for key in [
            format!("jobs/{job}/request.json"),
            format!("jobs/{job}/done.json"),
            format!("state/{job}.json"),
            format!("jobs/{job}/orders.0000.ndjson"),
        ] {
            assert!(raw(&p, &key).await.is_some(), "{case}: {key} is gone");
        }
        assert!(
            p.get("shop", "Out", "settlements/r-1.json").await.is_none(),
            "{case}: no partial result"
        );
    }
}

async fn allow_failure_hands_the_failure_to_the_script(backend: Backend) {
    let check = r#"function on_invoke(ctx, ev)
        local job = native.batch.hydrate(ev, { allow_failure = true })
        return { ok = job.ok, error = job.error, ref = job.state.ref, keys = #job:keys() }
    end"#;
    let p = shop(backend, SHOP, &[("check", check)]).await;
    let job = submit(&p).await;
    done(
        &p,
        &job,
        &json!({ "ok": false, "error": "partner timeout" }),
    )
    .await;
    let got = p
        .invoke("shop", "check", json!({ "job": job }))
        .await
        .unwrap();
    assert_eq!(
        got,
        json!({ "ok": false, "error": "partner timeout", "ref": "r-1", "keys": 4 })
    );
}

/// `ok: false` does not excuse the part keys: `job:keys()` of a failed job names its parts too,
/// and the continuation deletes them.
async fn part_keys_of_a_failed_job_are_checked_too(backend: Backend) {
    let check = r#"function on_invoke(ctx, ev)
        local job = native.batch.hydrate(ev, { allow_failure = true })
        return { ok = job.ok, keys = job:keys() }
    end"#;
    let p = shop(backend, SHOP, &[("check", check)]).await;
    for bad in ["../../state/other.json", "%2e%2e/x", "/etc/passwd"] {
        // GIVEN a partner that failed, but still lists a part whose key climbs out
        let job = submit(&p).await;
        done(
            &p,
            &job,
            &json!({ "ok": false, "error": "partner timeout", "results": {
                "orders": { "parts": [{ "key": "orders.0000.ndjson" }, { "key": bad }] } } }),
        )
        .await;
        // WHEN the continuation hydrates it, allowing failure
        let e = p
            .invoke("shop", "check", json!({ "job": job }))
            .await
            .unwrap_err()
            .to_string();
        // THEN done.json is refused, naming the result and the key, and nothing reaches keys()
        assert!(
            e.contains(&format!(
                "jobs/{job}/done.json: result \"orders\": part {bad:?}"
            )),
            "{bad}: {e}"
        );
        assert!(e.contains("check.luau:2:"), "{bad}: names the line: {e}");
    }
    // AND a failed job whose parts are fine still hands its keys to the script
    let job = submit(&p).await;
    done(
        &p,
        &job,
        &json!({ "ok": false, "error": "half done", "results": {
            "orders": { "parts": [{ "key": "orders.0000.ndjson" }] } } }),
    )
    .await;
    let got = p
        .invoke("shop", "check", json!({ "job": job }))
        .await
        .unwrap();
    assert_eq!(got["ok"], false);
    assert!(got["keys"]
        .as_array()
        .unwrap()
        .contains(&json!({ "bucket": "$batch", "key": format!("jobs/{job}/orders.0000.ndjson") })));
}

async fn a_done_json_written_before_its_parts_fails_until_they_land(backend: Backend) {
    let p = shop(backend, SHOP, &[]).await;
    let job = submit(&p).await;
    // GIVEN done.json lands first
    let c = gzip(CUSTOMERS.as_bytes());
    let manifest = json!({ "ok": true, "results": {
        "customers": { "parts": [part("customers.0000.ndjson.gz", &c)] },
        "orders": { "parts": [part("orders.0000.ndjson", ORDERS.as_bytes())] } } });
    done(&p, &job, &manifest).await;
    let r = native_core::local::drain(
        &p.rt,
        native_core::local::DrainOptions {
            wait: false,
            retry_delay_s: 1,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(
        r.failures[0].error.contains("the part is missing"),
        "{:?}",
        r.failures
    );
    // WHEN the parts arrive THEN the retry, due a second later, succeeds
    write(&p, &format!("jobs/{job}/customers.0000.ndjson.gz"), c).await;
    write(
        &p,
        &format!("jobs/{job}/orders.0000.ndjson"),
        ORDERS.as_bytes().to_vec(),
    )
    .await;
    // (a draining wait does not wait for retries: they come a visibility timeout later)
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(p.get("shop", "Out", "settlements/r-1.json").await.is_some());
}

async fn streams_obey_max_stream_mb_and_rows_obey_max_object_mb(backend: Backend) {
    let count = r#"function on_invoke(ctx, ev)
        local job = native.batch.hydrate(ev)
        local n = 0
        for _ in job:rows("orders") do n += 1 end
        return n
    end"#;
    let p = shop(
        backend,
        r#"{ "queue": true, "batch": true, "limits": { "max_stream_mb": 2, "max_object_mb": 1 } }"#,
        &[("count", count)],
    )
    .await;
    // A gzip bomb: 1 KB of gzip that inflates to 64 MB of rows.
    let job = submit(&p).await;
    let row = b"{\"id\":\"o\",\"customer_id\":1,\"amount\":1}\n";
    let mut plain = Vec::with_capacity(64 << 20);
    while plain.len() < 64 << 20 {
        plain.extend_from_slice(row);
    }
    let bomb = gzip(&plain);
    assert!(bomb.len() < 1 << 20);
    write(&p, &format!("jobs/{job}/orders.0000.ndjson"), bomb.clone()).await;
    let c = CUSTOMERS.as_bytes();
    write(&p, &format!("jobs/{job}/c.ndjson"), c.to_vec()).await;
    done(&p, &job, &json!({ "ok": true, "results": { "customers": { "parts": [part("c.ndjson", c)] }, "orders": { "parts": [part("orders.0000.ndjson", &bomb)] } } })).await;
    let e = p
        .invoke("shop", "count", json!({ "job": job }))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("limit max_stream_mb exceeded"), "{e}");
    // A row longer than max_object_mb.
    let job = submit(&p).await;
    let long = format!("{{\"pad\":\"{}\"}}\n", "x".repeat(1_100_000));
    write(
        &p,
        &format!("jobs/{job}/orders.0000.ndjson"),
        long.clone().into_bytes(),
    )
    .await;
    done(&p, &job, &json!({ "ok": true, "results": { "customers": { "parts": [] }, "orders": { "parts": [part("orders.0000.ndjson", long.as_bytes())] } } })).await;
    let e = p
        .invoke("shop", "count", json!({ "job": job }))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("limit max_object_mb exceeded: line 1 is longer than"),
        "{e}"
    );
}

async fn gzip_is_detected_from_the_data_and_parts_are_read_in_order(backend: Backend) {
    let read = r#"function on_invoke(ctx, ev)
        local job = native.batch.hydrate(ev)
        local ids = {}
        for row in job:rows("orders") do table.insert(ids, row.id) end
        return { ids = ids, body = job:body("customers") }
    end"#;
    let p = shop(backend, SHOP, &[("read", read)]).await;
    let job = submit(&p).await;
    let a = gzip(b"{\"id\":1}\n\n{\"id\":2}");
    let b = b"\n{\"id\":3}\r\n".to_vec();
    let c = gzip(b"{\"id\":4}\n");
    write(&p, &format!("jobs/{job}/p/a.ndjson"), a.clone()).await; // gzip, named plain
    write(&p, &format!("jobs/{job}/p/b.ndjson.gz"), b.clone()).await; // plain, named gz
    write(&p, &format!("jobs/{job}/p/c"), c.clone()).await;
    write(&p, &format!("jobs/{job}/cust.txt"), b"raw body".to_vec()).await;
    done(&p, &job, &json!({ "ok": true, "results": {
        "orders": { "rows": 4, "parts": [part("p/a.ndjson", &a), part("p/b.ndjson.gz", &b), { "key": "p/c" }] },
        "customers": { "parts": [part("cust.txt", b"raw body")] } } })).await;
    let got = p
        .invoke("shop", "read", json!({ "job": job }))
        .await
        .unwrap();
    assert_eq!(got, json!({ "ids": [1, 2, 3, 4], "body": "raw body" }));
}

async fn route_owns_only_batch_done_json_and_says_when_the_state_is_gone(backend: Backend) {
    let probe = r#"function on_invoke(ctx, ev) return native.batch.route(ev) or "nil" end"#;
    let p = shop(backend, SHOP, &[("probe", probe)]).await;
    let job = submit(&p).await;
    let r = |ev: Value| p.invoke("shop", "probe", ev);
    assert_eq!(
        r(json!({ "bucket": "In", "key": format!("jobs/{job}/done.json") }))
            .await
            .unwrap(),
        json!("nil")
    );
    assert_eq!(
        r(json!({ "bucket": "$batch", "key": format!("jobs/{job}/request.json") }))
            .await
            .unwrap(),
        json!("nil")
    );
    let ev = json!({ "bucket": "$batch", "key": format!("jobs/{job}/done.json"), "size": 1, "etag": "e", "event_name": "ObjectCreated:Put" });
    let mut want_ev = ev.clone();
    want_ev["job"] = json!(job);
    assert_eq!(
        r(ev.clone()).await.unwrap(),
        json!({ "script": "settle", "event": want_ev })
    );
    p.rt.services
        .backends
        .objects
        .delete(&batch_bucket(&p), &format!("tenants/shop/state/{job}.json"))
        .await
        .unwrap();
    assert_eq!(
        r(ev).await.unwrap(),
        json!({ "event": want_ev }),
        "script is nil when the state is gone"
    );
}

async fn ids_make_resubmits_idempotent_and_bad_calls_are_refused(backend: Backend) {
    let again = r#"function on_invoke(ctx, ev)
        local job = native.batch.new({ id = "order-7" })
        job:query("q", "x", {})
        job:continue_with("settle")
        return job:submit()
    end"#;
    let p = shop(backend, SHOP, &[
        ("again", again),
        ("no_cont", "function on_invoke() local j = native.batch.new() j:query('q', 'x') return j:submit() end"),
        ("no_query", "function on_invoke() local j = native.batch.new() j:continue_with('settle') return j:submit() end"),
        ("bad_id", "function on_invoke() native.batch.new({ id = '../x' }) end"),
        ("http", "function on_invoke() local j = native.batch.new() j:http('charge', { method = 'POST', url = 'https://api.example.com/charges' }) end"),
        ("http_bad", "function on_invoke() local j = native.batch.new() j:http('charge', { url = 'ftp://x' }) end"),
        ("twice", "function on_invoke() local j = native.batch.new() j:query('q', 'x') j:continue_with('settle') j:submit() j:submit() end"),
    ]).await;
    assert_eq!(
        p.invoke("shop", "again", json!({})).await.unwrap(),
        json!("order-7")
    );
    let first = raw(&p, "jobs/order-7/request.json").await.unwrap();
    assert_eq!(
        p.invoke("shop", "again", json!({})).await.unwrap(),
        json!("order-7")
    );
    assert_eq!(
        raw(&p, "jobs/order-7/request.json").await.unwrap(),
        first,
        "not rewritten"
    );
    for (s, want) in [
        ("no_cont", "call job:continue_with(script) first"),
        ("no_query", "the job has no queries"),
        ("bad_id", "job id \"../x\" must be"),
        // This runtime is a Lambda function's: job:http says to use the server runtime
        // (tests/job_http.rs has it on a server runtime).
        ("http", "job:http needs the server runtime"),
        ("http_bad", "job:http needs the server runtime"),
        ("twice", "is already submitted"),
    ] {
        let e = p
            .invoke("shop", s, json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{s}: {e}");
    }
    let e = p
        .invoke("nobatch", "request", json!({ "ids": [1] }))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("native.batch is off for tenant \"nobatch\": set \"batch\": true in tenants/nobatch/config.json"), "{e}");
}

/// Every object of the tenant in the batch bucket, with its content.
async fn snapshot(p: &TestProject) -> Vec<(String, String)> {
    let b = batch_bucket(p);
    let objects = &p.rt.services.backends.objects;
    let list = objects.list(&b, "tenants/shop/", None, 1000).await.unwrap();
    let mut out = Vec::new();
    for o in list.objects {
        let (_, body) = objects.get(&b, &o.key).await.unwrap().unwrap();
        out.push((o.key, String::from_utf8_lossy(&body).into_owned()));
    }
    out
}

async fn an_id_is_one_job_whatever_is_resubmitted_and_whenever(backend: Backend) {
    let order = r#"function on_invoke(ctx, ev)
        local job = native.batch.new({ id = "order-9" })
        job:input_rows("ids", ev.ids)
        job:query("customers", "customers_by_id", { input = "ids" })
        job:query("orders", "open_orders", { since = "2026-11-01" })
        job:state({ ref = ev.ref })
        job:continue_with("settle")
        return job:submit()
    end"#;
    let p = shop(backend, SHOP, &[("order", order)]).await;
    let first = json!({ "ids": [1, 2, 3], "ref": "r-9" });
    let other = json!({ "ids": [4, 5], "ref": "r-9" });
    let refused = "job:submit: job \"order-9\" was already submitted with other inputs or queries; nothing was written";
    // GIVEN a job submitted under an id
    assert_eq!(
        p.invoke("shop", "order", first.clone()).await.unwrap(),
        json!("order-9")
    );
    let submitted = snapshot(&p).await;
    // WHEN it is submitted again with the same inputs THEN that is harmless: nothing changes
    assert_eq!(
        p.invoke("shop", "order", first.clone()).await.unwrap(),
        json!("order-9")
    );
    assert_eq!(snapshot(&p).await, submitted, "a retry rewrites nothing");
    // WHEN it is submitted again with other inputs THEN it is refused and nothing changes: the
    // pending job's input files still hold what its request.json promises
    let e = p
        .invoke("shop", "order", other.clone())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains(refused) && e.contains("order.luau:8:"), "{e}");
    assert_eq!(
        snapshot(&p).await,
        submitted,
        "a refused resubmit writes nothing"
    );
    // GIVEN a submit that died after request.json, before its id record
    p.rt.services
        .backends
        .objects
        .delete(&batch_bucket(&p), "tenants/shop/state/ids/order-9.json")
        .await
        .unwrap();
    // THEN request.json still tells a retry from another job, and the retry finishes the record
    let e = p
        .invoke("shop", "order", other.clone())
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains(refused), "{e}");
    assert_eq!(
        p.invoke("shop", "order", first.clone()).await.unwrap(),
        json!("order-9")
    );
    assert_eq!(snapshot(&p).await, submitted);
    // WHEN the partner answers and the continuation cleans the job up
    let manifest = answer(&p, "order-9").await;
    done(&p, "order-9", &manifest).await;
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(p.get("shop", "Out", "settlements/r-9.json").await.is_some());
    let left: Vec<String> = snapshot(&p).await.into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        left,
        ["tenants/shop/state/ids/order-9.json"],
        "only the id record stays"
    );
    // THEN submitting it again starts no second job: the same request returns the id and
    // writes nothing, another one is refused
    assert_eq!(
        p.invoke("shop", "order", first).await.unwrap(),
        json!("order-9")
    );
    let e = p
        .invoke("shop", "order", other)
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains(refused), "{e}");
    let left: Vec<String> = snapshot(&p).await.into_iter().map(|(k, _)| k).collect();
    assert_eq!(
        left,
        ["tenants/shop/state/ids/order-9.json"],
        "no request.json, no inputs"
    );
    assert_eq!(p.drain().await.handled, 0);
}

async fn a_continuation_can_submit_the_next_stage(backend: Backend) {
    let stage1 = r#"function on_invoke(ctx, ev)
        local job = native.batch.new()
        job:query("a", "first", {})
        job:state({ n = 1 })
        job:continue_with("stage2")
        return job:submit()
    end"#;
    let stage2 = r#"function on_queue(ctx, ev)
        local job = native.batch.hydrate(ev)
        if not job then return end
        local sum = 0
        for row in job:rows("a") do sum += row.v end
        local next = native.batch.new()
        next:input_rows("prev", { { sum = sum } })
        next:query("b", "second", { input = "prev" })
        next:state({ n = job.state.n + 1, sum = sum })
        next:continue_with("stage3")
        next:submit()
        return { delete = job:keys() }
    end"#;
    let stage3 = r#"function on_queue(ctx, ev)
        local job = native.batch.hydrate(ev)
        if not job then return end
        native.bucket.Out.put("stages.json", native.json.encode({ n = job.state.n, sum = job.state.sum, body = job:body("b") }))
        return { delete = job:keys() }
    end"#;
    let p = shop(
        backend,
        SHOP,
        &[("stage1", stage1), ("stage2", stage2), ("stage3", stage3)],
    )
    .await;
    let j1 = p
        .invoke("shop", "stage1", json!({}))
        .await
        .unwrap()
        .as_str()
        .unwrap()
        .to_string();
    let a = b"{\"v\":2}\n{\"v\":5}\n";
    write(&p, &format!("jobs/{j1}/a.ndjson"), a.to_vec()).await;
    done(
        &p,
        &j1,
        &json!({ "ok": true, "results": { "a": { "rows": 2, "parts": [part("a.ndjson", a)] } } }),
    )
    .await;
    assert!(p.drain().await.failures.is_empty());
    // The second job is pending; find it and answer it.
    let left =
        p.rt.services
            .backends
            .objects
            .list(&batch_bucket(&p), "tenants/shop/state/", None, 10)
            .await
            .unwrap();
    assert_eq!(
        left.objects.len(),
        1,
        "only the second stage's state is left"
    );
    let j2 = left.objects[0]
        .key
        .trim_start_matches("tenants/shop/state/")
        .trim_end_matches(".json")
        .to_string();
    assert_ne!(j1, j2);
    let input = raw(&p, &format!("jobs/{j2}/inputs/prev.0000.ndjson"))
        .await
        .unwrap();
    assert_eq!(input, b"{\"sum\":7}\n");
    write(&p, &format!("jobs/{j2}/b.txt"), b"ok".to_vec()).await;
    done(
        &p,
        &j2,
        &json!({ "ok": true, "results": { "b": { "parts": [{ "key": "b.txt" }] } } }),
    )
    .await;
    assert!(p.drain().await.failures.is_empty());
    let out: Value =
        serde_json::from_str(&p.get("shop", "Out", "stages.json").await.unwrap()).unwrap();
    assert_eq!(out, json!({ "n": 2, "sum": 7, "body": "ok" }));
}

async fn ndjson_rows_reads_strings(backend: Backend) {
    let s = r#"function on_invoke(ctx, ev)
        local n = 0
        for row in native.ndjson.rows(ev.text) do n += row.v end
        return n
    end"#;
    let p = shop(backend, SHOP, &[("s", s)]).await;
    assert_eq!(
        p.invoke("shop", "s", json!({ "text": "{\"v\":1}\n\n{\"v\":2}\r\n" }))
            .await
            .unwrap(),
        json!(3)
    );
}
