//! A tenant that configures no router and has no `scripts/router.luau`: its writes succeed and
//! their events are dropped (one info line, a metric), nothing is retried or dead-lettered, and
//! the built-in routing still runs batch and `job:http` continuations. A router that
//! `config.json` names is used, and must exist (`native check` refuses it otherwise: see
//! cli/tests/listings_logs_and_hints.rs).

use crate::common;

use native_core::local::{drain, DrainOptions};
use native_core::ports::{PutMode, QueueKind};
use native_tests::{Backend, TestProject};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    writes_without_a_router_succeed_and_their_events_are_dropped_once,
    a_batch_continuation_runs_without_a_router,
    a_done_json_whose_job_state_is_gone_is_dropped,
);

const DEPLOYMENT: &str = r#"{
  "buckets": { "map": { "In": "acme-in", "Out": "acme-out" } },
  "batch": { "bucket": "acme-batch", "prefix": "tenants/" },
  "http": { "allow_private_networks": true }
}"#;

const CONFIG: &str = r#"{ "queue": true, "batch": true }"#;

/// Writes an object into In and Out, as a script does.
const WRITE: &str = r#"
function on_invoke(ctx, ev)
  native.bucket.In.put("docs/" .. ev.n .. ".json", "{}")
  native.bucket.Out.put("results/" .. ev.n .. ".txt", "done")
  return "written"
end"#;

/// Submits a batch job continued by `settle`.
const SUBMIT: &str = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new({ id = ev.id })
  job:query("q", "select 1")
  job:state({ ref = ev.ref })
  job:continue_with("settle")
  return job:submit()
end"#;

/// The continuation: records what it saw.
const SETTLE: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  if not job then return end
  native.bucket.Out.put("settled/" .. job.state.ref .. ".json",
    native.json.encode({ job = ev.job, ok = job.ok, error = job.error }))
end"#;

async fn project(backend: Backend) -> TestProject {
    TestProject::on(
        backend,
        DEPLOYMENT,
        &[(
            "acme",
            CONFIG,
            &[("write", WRITE), ("submit", SUBMIT), ("settle", SETTLE)],
        )],
    )
    .await
}

/// Drains with retries at once: a failure would show on its first attempt.
async fn drain_now(p: &TestProject) -> native_core::local::DrainReport {
    drain(
        &p.rt,
        DrainOptions {
            wait: true,
            retry_delay_s: 0,
            ..Default::default()
        },
    )
    .await
    .unwrap()
}

/// No dead letter on either queue.
async fn assert_no_dead_letters(p: &TestProject) {
    for kind in [QueueKind::Events, QueueKind::Work] {
        let dead =
            p.rt.services
                .backends
                .queue
                .dead_letters(kind, 100)
                .await
                .unwrap();
        assert!(dead.is_empty(), "{} queue: {dead:?}", kind.name());
    }
}

/// The log records whose `msg` is `msg`.
fn records(p: &TestProject, msg: &str) -> Vec<Value> {
    p.log
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["msg"] == msg)
        .cloned()
        .collect()
}

async fn writes_without_a_router_succeed_and_their_events_are_dropped_once(backend: Backend) {
    // GIVEN a tenant with no "router" in its config and no scripts/router.luau
    let p = project(backend).await;
    // WHEN a script writes two objects and the queues are drained
    let out = p.invoke("acme", "write", json!({ "n": 1 })).await.unwrap();
    assert_eq!(out, "written");
    let r = drain_now(&p).await;
    // THEN both events were handled on their first attempt, none failed or was dead-lettered
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.handled, 2, "one event per object written");
    assert_no_dead_letters(&p).await;
    // AND each was dropped with one info line naming the tenant and the object
    let dropped = records(&p, "event dropped");
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    for d in &dropped {
        assert_eq!(d["level"], "info");
        assert_eq!(d["tenant"], "acme");
        let why = d["why"].as_str().unwrap();
        assert!(why.contains("has no router"), "{why}");
    }
    assert!(dropped
        .iter()
        .any(|d| d["why"].as_str().unwrap().contains("In/docs/1.json")));
}

/// A failed `done.json` for the job, as a partner writes it.
async fn answer_failed(p: &TestProject, job: &str) {
    let bucket = p.real_bucket("$batch");
    p.rt.services
        .backends
        .objects
        .put(
            &bucket,
            &format!("tenants/acme/jobs/{job}/done.json"),
            json!({ "ok": false, "error": "partner is closed" })
                .to_string()
                .into(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
}

async fn a_batch_continuation_runs_without_a_router(backend: Backend) {
    // GIVEN a tenant without a router that submitted a batch job continued by `settle`
    let p = project(backend).await;
    let job = p
        .invoke("acme", "submit", json!({ "id": "j1", "ref": "r-1" }))
        .await
        .unwrap();
    assert_eq!(job, "j1");
    // WHEN the partner answers with done.json and the queues are drained
    answer_failed(&p, "j1").await;
    let r = drain_now(&p).await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // THEN the built-in routing ran the job's continuation with the job's event
    let settled: Value =
        serde_json::from_str(&p.get("acme", "Out", "settled/r-1.json").await.unwrap()).unwrap();
    assert_eq!(
        settled,
        json!({ "job": "j1", "ok": false, "error": "partner is closed" })
    );
    assert_no_dead_letters(&p).await;
}

async fn a_done_json_whose_job_state_is_gone_is_dropped(backend: Backend) {
    // GIVEN a tenant without a router, and a done.json for a job it never submitted
    let p = project(backend).await;
    answer_failed(&p, "unknown-job").await;
    // WHEN the queues are drained
    let r = drain_now(&p).await;
    // THEN the event is dropped, saying why, and nothing failed or ran
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_no_dead_letters(&p).await;
    let dropped = records(&p, "event dropped");
    assert_eq!(dropped.len(), 1, "{dropped:?}");
    assert!(
        dropped[0]["why"]
            .as_str()
            .unwrap()
            .contains("state of batch job \"unknown-job\" is gone"),
        "{dropped:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_http_continuation_runs_without_a_router() {
    // GIVEN a tenant without a router whose script submits a job:http job, on a runtime that
    // performs job:http (as `native serve` and the Fargate server do)
    let srv = common::server().await;
    let config = json!({
        "queue": true, "batch": true,
        "http": { "allow": [format!("127.0.0.1:{}", srv.port)] },
    });
    let fetch = format!(
        r#"function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("page", {{ url = "{}" }})
  job:state({{ ref = "h-1" }})
  job:continue_with("fetched")
  return job:submit()
end"#,
        srv.url("/echo")
    );
    let fetched = r#"function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  if not job then return end
  native.bucket.Out.put("fetched/" .. job.state.ref .. ".json",
    native.json.encode({ ok = job.ok, status = job.ok and job.results.page.status or nil }))
end"#;
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            &config.to_string(),
            &[("fetch", fetch.as_str()), ("fetched", fetched)],
        )],
    );
    let rt = std::sync::Arc::new(p.project.runtime().with_log(p.log.clone()).with_http_jobs());
    // WHEN it is invoked and the queues are drained (the request's done.json included)
    rt.invoke("acme", "fetch", json!({})).await.unwrap();
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
    // THEN the continuation ran, routed by the built-in routing, and nothing failed
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    let got: Value =
        serde_json::from_str(&p.get("acme", "Out", "fetched/h-1.json").await.unwrap()).unwrap();
    assert_eq!(got["ok"], true, "{got}");
    assert_no_dead_letters(&p).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drop_is_counted_in_a_metric_when_metrics_are_on() {
    // GIVEN a runtime writing metrics, over a tenant without a router
    let p = project(Backend::Embedded).await;
    let rt = std::sync::Arc::new(
        p.project
            .runtime()
            .with_log(p.log.clone())
            .with_metrics("native"),
    );
    // WHEN a script writes an object and its event is handled
    rt.invoke("acme", "write", json!({ "n": 2 })).await.unwrap();
    let r = drain(&rt, DrainOptions::default()).await.unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // THEN one DroppedEvents record per event, with the tenant as its dimension
    let metrics: Vec<Value> = p
        .log
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.get("DroppedEvents").is_some())
        .cloned()
        .collect();
    assert_eq!(metrics.len(), 2, "{metrics:?}");
    assert_eq!(metrics[0]["tenant"], "acme");
    assert_eq!(
        metrics[0]["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"],
        "DroppedEvents"
    );
}

/// Whether `seen` recorded the object of `write`'s `{ n = 3 }`.
const HAS: &str =
    "function on_invoke(ctx, ev) return native.db.get('seen', 'docs/3.json') ~= nil end";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_named_in_the_config_is_used_and_a_present_router_luau_too() {
    // GIVEN one tenant naming its router "pick", and one with scripts/router.luau and no name
    let pick = "function on_route(ctx, ev) return 'seen' end";
    let seen = "function on_queue(ctx, ev) native.db.put('seen', ev.key, true) end";
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[
            (
                "named",
                r#"{ "queue": true, "router": "pick" }"#,
                &[
                    ("write", WRITE),
                    ("pick", pick),
                    ("seen", seen),
                    ("has", HAS),
                ],
            ),
            (
                "plain",
                r#"{ "queue": true }"#,
                &[
                    ("write", WRITE),
                    ("router", pick),
                    ("seen", seen),
                    ("has", HAS),
                ],
            ),
        ],
    );
    // WHEN each writes an object
    for t in ["named", "plain"] {
        p.invoke(t, "write", json!({ "n": 3 })).await.unwrap();
    }
    let r = drain_now(&p).await;
    // THEN each tenant's router ran and routed to `seen`
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    for t in ["named", "plain"] {
        let has = p.invoke(t, "has", json!({})).await.unwrap();
        assert_eq!(has, true, "{t}: its router ran and chose `seen`");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrongly_shaped_router_return_names_the_router_and_its_line() {
    // GIVEN a router whose on_route, defined on line 3, returns a number
    let router = "-- routes nothing well\n\nlocal function on_route(ctx, ev)\n  return 42\nend\nreturn { on_route = on_route }";
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[("write", WRITE), ("router", router)],
        )],
    );
    // WHEN an object's event reaches it
    p.invoke("acme", "write", json!({ "n": 4 })).await.unwrap();
    let r = drain(&p.rt, DrainOptions::default()).await.unwrap();
    // THEN the failure names the router's file and line and says what to return
    let e = &r.failures[0].error;
    assert!(e.contains("router.luau:3: on_route returned 42"), "{e}");
    assert!(e.contains("or nil to drop the event"), "{e}");
}
