//! The chain id (`ctx.trace`, issue 27): one id runs through a chain of invocations (a direct
//! invocation, the message it sends, the event of the object that script writes and the
//! router's choice, a barrier's continuation, a `job:http` job's `done.json` and its
//! continuation), and every log line of the chain carries it; on both backends (the AWS one over
//! S3 notifications and SQS in the emulator, the writer's chain kept in the object's metadata),
//! and the metrics (EMF) line of a run names it.

use crate::common;

use native_tests::{on_both_backends, Backend, TestProject};
use serde_json::{json, Value};

on_both_backends!(
    one_trace_runs_from_an_invocation_through_queue_object_and_continuation,
    a_failed_run_of_an_outside_object_names_its_tenant_and_chain,
);

const DEPLOYMENT: &str = r#"{ "buckets": { "map": { "In": "acme-in", "Out": "acme-out" } } }"#;

/// Starts the chain: logs, sends a message, answers its trace.
const START: &str = r#"
function on_invoke(ctx, ev)
  native.log("info", "start")
  native.queue.send("middle", { n = 1 })
  return ctx.trace
end"#;

/// Writes an object whose event the router sends on.
const MIDDLE: &str = r#"
function on_queue(ctx, ev)
  print("middle")
  native.bucket.In.put("docs/x.json", native.json.encode({ by = ctx.trace }))
end"#;

const ROUTER: &str = r#"
function on_route(ctx, ev)
  native.log("info", "routing", { key = ev.key })
  if ev.bucket == "In" then return "last" end
  return nil
end"#;

/// Keeps the trace it saw, then completes a barrier whose continuation does the same.
const LAST: &str = r#"
function on_queue(ctx, ev)
  native.log("info", "last")
  native.bucket.Out.put("seen/last.txt", ctx.trace)
  local id = native.barrier.create({ members = { "m" }, continue_with = "finish" })
  native.barrier.ack(id, "m")
end"#;

const FINISH: &str = r#"
function on_queue(ctx, ev)
  native.log("info", "finish")
  native.bucket.Out.put("seen/finish.txt", ctx.trace)
end"#;

async fn one_trace_runs_from_an_invocation_through_queue_object_and_continuation(backend: Backend) {
    // GIVEN a chain of five scripts: start -> (queue) middle -> (object) router -> last ->
    // (barrier) finish
    let p = TestProject::on(
        backend,
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[
                ("start", START),
                ("middle", MIDDLE),
                ("router", ROUTER),
                ("last", LAST),
                ("finish", FINISH),
            ],
        )],
    )
    .await;
    // WHEN start is invoked and the queues drain
    let trace = p.invoke("acme", "start", json!({})).await.unwrap();
    let trace = trace.as_str().expect("ctx.trace is a string").to_string();
    assert!(native_core::observe::is_trace(&trace), "{trace:?}");
    let report = p.drain().await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    // THEN the script the object's event reached and the barrier's continuation saw the
    // trace of the invocation that started it all
    assert_eq!(
        p.get("acme", "Out", "seen/last.txt").await.as_deref(),
        Some(trace.as_str())
    );
    assert_eq!(
        p.get("acme", "Out", "seen/finish.txt").await.as_deref(),
        Some(trace.as_str())
    );
    // AND the object keeps its writer's chain (on S3 as user metadata native-trace)
    let (real, full) = p.rt.locate("acme", "In", "docs/x.json").unwrap();
    let meta =
        p.rt.services
            .backends
            .objects
            .head(&real, &full)
            .await
            .unwrap()
            .unwrap();
    assert_eq!(meta.trace.as_deref(), Some(trace.as_str()));
    #[cfg(feature = "aws")]
    if let Some(stack) = &p.stack {
        let head = stack
            .clients
            .s3
            .head_object()
            .bucket(&real)
            .key(&full)
            .send()
            .await
            .unwrap();
        assert_eq!(
            head.metadata().and_then(|m| m.get("native-trace")),
            Some(&trace),
            "{head:?}"
        );
    }
    // AND every script's log line carries it
    let log = p.log.0.lock().unwrap().clone();
    for msg in ["start", "middle", "routing", "last", "finish"] {
        let rec = log
            .iter()
            .find(|r| r["msg"] == msg)
            .unwrap_or_else(|| panic!("no log line {msg:?}: {log:?}"));
        assert_eq!(rec["trace"], json!(trace), "{rec}");
    }
    // AND no line of the run names another chain
    let others: Vec<&Value> = log
        .iter()
        .filter(|r| r.get("trace").is_some_and(|t| t != &json!(trace)))
        .collect();
    assert!(others.is_empty(), "{others:?}");
}

/// A job:http job's done.json, written by the process that performs it, keeps the submitting
/// script's chain: its continuation (the built-in routing: no router) is of that chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_job_http_continuation_is_of_the_submitting_scripts_chain() {
    let srv = common::server().await;
    let config = json!({
        "batch": true, "queue": true,
        "http": { "allow": [format!("127.0.0.1:{}", srv.port)] },
        "config": { "api_base": format!("http://127.0.0.1:{}/", srv.port) },
    });
    let submit = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("one", { url = native.config.api_base .. "status/200" })
  job:continue_with("got")
  job:submit()
  return ctx.trace
end"#;
    let got = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  if not job then return end
  native.bucket.Out.put("got.txt", ctx.trace)
  return { delete = job:keys() }
end"#;
    let p = TestProject::with_tenants(
        r#"{ "buckets": { "map": { "Out": "shop-out" } },
             "batch": { "bucket": "shop-batch", "prefix": "tenants/" },
             "http": { "allow_private_networks": true } }"#,
        &[(
            "shop",
            &config.to_string(),
            &[("submit", submit), ("got", got)],
        )],
    );
    let rt = std::sync::Arc::new(p.project.runtime().with_log(p.log.clone()).with_http_jobs());
    let trace = rt.invoke("shop", "submit", json!({})).await.unwrap();
    let report = native_core::local::drain(
        &rt,
        native_core::local::DrainOptions {
            wait: true,
            retry_delay_s: 0,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    assert_eq!(
        p.get("shop", "Out", "got.txt").await.map(Value::from),
        Some(trace)
    );
}

/// On AWS the functions write each run's metrics as an EMF log line: it names the run's chain
/// beside the script, so Logs Insights finds a chain's metrics with its log lines.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_line_of_a_run_names_its_trace() {
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[("start", START), ("middle", MIDDLE)],
        )],
    );
    let rt = p
        .project
        .runtime()
        .with_log(p.log.clone())
        .with_metrics("native");
    let trace = rt.invoke("acme", "start", json!({})).await.unwrap();
    let log = p.log.0.lock().unwrap().clone();
    let emf = log
        .iter()
        .find(|r| r.get("_aws").is_some() && r["script"] == "start")
        .unwrap_or_else(|| panic!("no metrics line: {log:?}"));
    assert_eq!(emf["trace"], trace, "{emf}");
    assert_eq!(emf["Invocations"], 1, "{emf}");
}

const FAILS: &str = r#"
function on_queue(ctx, ev)
  native.log("info", "about to fail")
  error("cannot read " .. ev.key)
end"#;

const TO_FAILS: &str = r#"function on_route(ctx, ev) return "fails" end"#;

async fn a_failed_run_of_an_outside_object_names_its_tenant_and_chain(backend: Backend) {
    // GIVEN a router that sends every object to a script that fails
    let p = TestProject::on(
        backend,
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[("router", TO_FAILS), ("fails", FAILS)],
        )],
    )
    .await;
    // WHEN an object is written from outside and its run fails
    p.rt.put_object("acme", "In", "docs/bad.json", "{}".into())
        .await
        .unwrap();
    let report = p.drain().await;
    assert!(!report.failures.is_empty());
    // THEN the failure's line names the tenant and the chain its run's own lines carry, so
    // that `native logs --tenant` and `--trace` find it
    let records = p.log.0.lock().unwrap().clone();
    let run = records
        .iter()
        .find(|r| r["msg"] == "about to fail")
        .expect("the run logged");
    let chain = run["trace"]
        .as_str()
        .expect("the run has a chain")
        .to_string();
    let failed: Vec<_> = records
        .iter()
        .filter(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("message failed"))
        })
        .collect();
    assert_eq!(failed.len(), report.failures.len(), "{records:?}");
    for f in failed {
        assert_eq!(f["tenant"], "acme", "{f}");
        assert_eq!(f["trace"].as_str(), Some(chain.as_str()), "{f}");
    }
}
