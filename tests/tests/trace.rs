//! The chain id (`ctx.trace`, issue 27): one id runs through a chain of invocations (a direct
//! invocation, the message it sends, the event of the object that script writes and the
//! router's choice, a barrier's continuation, a `job:http` job's `done.json` and its
//! continuation), and every log line of the chain carries it; on both backends (the AWS one over
//! S3 notifications and SQS in the emulator, the writer's chain kept in the object's metadata),
//! and the metrics (EMF) line of a run names it.

use crate::common;
use crate::common::console::{call, Operator};
use native_tests::otlp::Receiver;

use native_tests::{on_both_backends, Backend, TestProject};
use serde_json::{json, Value};

on_both_backends!(
    one_trace_runs_from_an_invocation_through_queue_object_and_continuation,
    a_failed_run_of_an_outside_object_names_its_tenant_and_chain,
    one_order_is_one_chain_through_partners_callbacks_operators_jobs_and_timers,
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
    drain_all(&rt).await;
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

// One order = one chain (issue 55): the order's barrier, batch job and timer remember the
// chain of the request that created them (the caller's W3C trace id); the continuations run in it, and every ack that
// moved the barrier (three partner objects, a callback URL, an operator in the console) and
// the partner's done.json are steps of it, each with its origin and a link to its own chain.

const SHOP: &str = r#"{
  "buckets": { "map": { "Acks": "shop-acks", "Out": "shop-out" } },
  "batch": { "bucket": "shop-batch", "prefix": "tenants/" }
}"#;

/// Takes an order: a barrier of five members, a partner job, a reminder timer.
const ORDER: &str = r#"
function on_invoke(ctx, ev)
  local id = "order-" .. ev.order
  native.barrier.create({ id = id, members = { "p1", "p2", "p3", "callback", "operator" },
    continue_with = "fulfil", state = { order = ev.order } })
  local job = native.batch.new()
  job:query("stock", "select count from stock where order = :order", { order = ev.order })
  job:continue_with("stocked")
  local job_id = job:submit()
  native.timer.at({ in_s = 0 }, "remind", { order = ev.order })
  native.log("info", "order placed", { order_id = ev.order })
  return { trace = ctx.trace, job = job_id, callback = native.barrier.callback_url(id, "callback") }
end"#;

const SHOP_ROUTER: &str = r#"
function on_route(ctx, ev)
  if ev.bucket == "$batch" then return native.batch.route(ev) end
  if ev.bucket == "Acks" then return "partner_ack" end
  return nil
end"#;

/// A partner's object `acks/<order>/<member>.json` acks its member.
const PARTNER_ACK: &str = r#"
function on_queue(ctx, ev)
  local order, member = string.match(ev.key, "^acks/([^/]+)/([^/.]+)%.json$")
  native.log("info", "partner acked", { order_id = order, member = member })
  native.barrier.ack("order-" .. order, member)
end"#;

const FULFIL: &str = r#"
function on_queue(ctx, ev)
  local b = native.barrier.hydrate(ev)
  native.log("info", "fulfilled", { order_id = b.state.order })
end"#;

const STOCKED: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  native.log("info", "stocked", { job = job.id, ok = job.ok })
end"#;

const REMIND: &str = r#"
function on_queue(ctx, ev)
  native.log("info", "reminded", { order_id = ev.order })
end"#;

/// Drains `rt`'s queues, firing due timers and waiting for delayed messages; nothing fails.
async fn drain_all(rt: &std::sync::Arc<native_core::runtime::Runtime>) {
    let report = native_core::local::drain(
        rt,
        native_core::local::DrainOptions {
            wait: true,
            retry_delay_s: 0,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(report.failures.is_empty(), "{:?}", report.failures);
}

/// A runtime over `p`'s backends and tenants, logging into its log (on either backend).
fn runtime_of(p: &TestProject) -> native_core::runtime::Runtime {
    native_core::runtime::Runtime::new(
        p.rt.services.deployment.clone(),
        p.rt.services.backends.clone(),
        p.project.tenants.clone(),
    )
    .with_log(p.log.clone())
}

async fn one_order_is_one_chain_through_partners_callbacks_operators_jobs_and_timers(
    backend: Backend,
) {
    use axum::body::Body;
    use axum::http::Request;
    use native_core::inbound::{app, console, Hygiene};
    use std::sync::Arc;
    // GIVEN a shop whose order waits on three partners' objects, a partner's callback URL and
    // an operator, a partner's batch job, and a reminder timer; served as native serve serves
    // it (the API and the console), exporting its spans to a real OTLP decoder
    let _exporting = EXPORTING.lock().await;
    let receiver = Receiver::start();
    let exporter = native_core::observe::otlp::Exporter::start(
        &format!("http://127.0.0.1:{}/v1/traces", receiver.port),
        "native-test",
    )
    .unwrap();
    let p = TestProject::on(
        backend,
        SHOP,
        &[
            (
                "shop",
                r#"{ "queue": true, "batch": true }"#,
                &[
                    ("order", ORDER),
                    ("router", SHOP_ROUTER),
                    ("partner_ack", PARTNER_ACK),
                    ("fulfil", FULFIL),
                    ("stocked", STOCKED),
                    ("remind", REMIND),
                ],
            ),
            ("rival", "{}", &[]),
        ],
    )
    .await;
    // (its runs and steps kept in this process's memory, as the Fargate server keeps them)
    let recent = Arc::new(native_core::observe::recent::Recent::new());
    let rt = Arc::new(
        runtime_of(&p)
            .with_recent(recent)
            .with_callback(Arc::new(
                native_core::callback::Signer::new(vec![7; 32], "").unwrap(),
            ))
            .with_exporter(Some(exporter.clone())),
    );
    let key = native_core::api_keys::create(&*rt.services.backends.kv, "shop", "t")
        .await
        .unwrap()
        .key;
    let token = console::new_token();
    let served = app(rt.clone(), &Hygiene::default()).with_console(console::router(
        console::Console::new(rt.clone(), token.clone(), "test".into(), true),
    ));
    let drain = || drain_all(&rt);

    // WHEN the order comes in over HTTP, in the caller's trace
    let chain = native_core::observe::new_trace();
    let (status, headers, body) = call(
        &served,
        Request::post("/v1/invoke/order")
            .header("authorization", format!("Bearer {key}"))
            .header("traceparent", format!("00-{chain}-00f067aa0ba902b7-01"))
            .body(Body::from(r#"{ "order": "o-17" }"#))
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    // (the caller's trace is the chain, and the answer names it)
    assert_eq!(answer["trace"], json!(chain));
    let named = headers["traceparent"].to_str().unwrap();
    assert_eq!(&named[3..35], chain, "{named}");
    let job = answer["job"].as_str().unwrap().to_string();
    // (the partner's request.json names the chain, for its own traces and calls back)
    let (_, request) = rt
        .services
        .backends
        .objects
        .get(
            &p.real_bucket("$batch"),
            &format!("tenants/shop/jobs/{job}/request.json"),
        )
        .await
        .unwrap()
        .unwrap();
    let request: Value = serde_json::from_slice(&request).unwrap();
    assert_eq!(request["trace"], json!(chain), "{request}");
    // AND the timer fires; three partners write their objects
    drain().await;
    let tick = || tokio::time::sleep(std::time::Duration::from_millis(3));
    tick().await;
    for m in ["p1", "p2", "p3"] {
        p.rt.put_object("shop", "Acks", &format!("acks/o-17/{m}.json"), "{}".into())
            .await
            .unwrap();
    }
    drain().await;
    tick().await;
    // AND a partner POSTs to its callback URL (naming no trace: the URL's is the order's)
    let url = answer["callback"].as_str().unwrap();
    let (status, headers, body) = call(
        &served,
        Request::post(&url[url.find("/v1/callback/").unwrap()..])
            .body(Body::from(r#"{ "ok": true }"#))
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(&headers["traceparent"].to_str().unwrap()[3..35], chain);
    tick().await;
    // AND an operator acks the last member in the console
    let operator = Operator::sign_in(served.clone(), &token).await;
    let (status, _, body) = operator
        .act(
            "/console/tenants/shop/barriers/order-o-17",
            "/console/tenants/shop/barriers/order-o-17/ack",
            "member=operator&outcome=ok",
        )
        .await;
    assert!(status == 303 || status == 200, "{status} {body}");
    tick().await;
    // AND the partner finishes the job (a done.json of its own, in no chain)
    rt.services
        .backends
        .objects
        .put(
            &p.real_bucket("$batch"),
            &format!("tenants/shop/jobs/{job}/done.json"),
            r#"{ "ok": false, "error": "out of stock" }"#.into(),
            native_core::ports::PutMode::Overwrite,
        )
        .await
        .unwrap();
    drain().await;

    // THEN every run of the order (its request, the timer's, both continuations) is of the
    // chain the request started
    let log = p.log.0.lock().unwrap().clone();
    let of = |msg: &str| -> Vec<&Value> { log.iter().filter(|r| r["msg"] == msg).collect() };
    for msg in ["order placed", "reminded", "fulfilled", "stocked"] {
        let runs = of(msg);
        assert_eq!(runs.len(), 1, "{msg}: {log:#?}");
        assert_eq!(runs[0]["trace"], json!(chain), "{msg}: {}", runs[0]);
    }
    // AND each ack is a step of it, with its origin and a link to the chain it came from
    let steps: Vec<&Value> = log
        .iter()
        .filter(|r| r["step"] == true && r["trace"] == json!(chain))
        .collect();
    let acks: Vec<&&Value> = steps
        .iter()
        .filter(|s| s["msg"] == "barrier member acked")
        .collect();
    assert_eq!(acks.len(), 5, "{steps:#?}");
    for m in ["p1", "p2", "p3"] {
        let s = acks.iter().find(|s| s["member"] == m).unwrap();
        assert_eq!(s["origin"]["by"], "script", "{s}");
        assert_eq!(s["origin"]["script"], "partner_ack", "{s}");
        assert_eq!(
            s["origin"]["cause"],
            json!(format!("object Acks/acks/o-17/{m}.json")),
            "{s}"
        );
        // The link is the chain of the partner object's run, whose own lines carry it.
        let link = s["link"].as_str().unwrap();
        assert_ne!(link, chain);
        assert!(
            of("partner acked")
                .iter()
                .any(|r| r["member"] == m && r["trace"] == json!(link)),
            "{s}"
        );
    }
    // The callback's POST was of the order's chain itself: its step links nothing, and its
    // request's record is in the chain.
    let cb = acks.iter().find(|s| s["member"] == "callback").unwrap();
    assert_eq!(cb["origin"], json!({ "by": "callback" }), "{cb}");
    assert!(cb.get("link").is_none(), "{cb}");
    assert_eq!(
        log.iter()
            .filter(|r| r["msg"] == "request" && r["trace"] == json!(chain))
            .map(|r| r["path"].as_str().unwrap())
            .collect::<Vec<_>>(),
        ["/v1/invoke/order", "/v1/callback/{token}"]
    );
    let op = acks.iter().find(|s| s["member"] == "operator").unwrap();
    assert_eq!(
        op["origin"],
        json!({ "by": "operator", "via": "console" }),
        "{op}"
    );
    assert_eq!(op["complete"], true, "{op}");
    // The console's step links the request that made it.
    let link = op["link"].as_str().expect("a request's chain");
    assert!(
        log.iter()
            .any(|r| r["msg"] == "request" && r["trace"] == json!(link)),
        "{op}"
    );
    let done: Vec<&&Value> = steps
        .iter()
        .filter(|s| s["msg"] == "batch job done")
        .collect();
    assert_eq!(done.len(), 1, "{steps:#?}");
    assert_eq!(
        done[0]["origin"],
        json!({ "by": "object", "bucket": "$batch", "key": format!("jobs/{job}/done.json") })
    );

    // AND the collector has the same story as spans: the request in the caller's trace, each
    // run of the order in it, each run's calls its children, and each step a span of the
    // order's trace linked to the span that made it (a partner's run, the callback's request,
    // the console's request); the partner's done.json, of no chain, links nothing
    assert!(exporter.flush(std::time::Duration::from_secs(30)));
    assert_eq!(exporter.dropped(), 0);
    let spans = receiver.spans(exporter.exported() as usize);
    let by_id = |id: &Value| spans.iter().find(|s| s["span_id"] == *id);
    let request = spans
        .iter()
        .find(|s| s["name"] == "POST /v1/invoke/order")
        .unwrap();
    assert_eq!(request["trace_id"], chain);
    assert_eq!(request["parent_span_id"], "00f067aa0ba902b7");
    let runs: Vec<&Value> = spans
        .iter()
        .filter(|s| s["trace_id"] == chain && s["name"].as_str().unwrap().starts_with("on_"))
        .collect();
    for script in ["order", "remind", "fulfil", "stocked"] {
        assert!(
            runs.iter()
                .any(|r| r["attributes"]["native.script"] == script),
            "no run of {script} in the order's trace: {runs:#?}"
        );
    }
    let order = runs
        .iter()
        .find(|r| r["attributes"]["native.script"] == "order")
        .unwrap();
    assert_eq!(order["parent_span_id"], request["span_id"]);
    for c in spans.iter().filter(|s| s["kind"] == 3) {
        let parent = by_id(&c["parent_span_id"]).unwrap_or_else(|| panic!("{c}"));
        assert_eq!(parent["trace_id"], c["trace_id"], "{c}");
        assert!(parent["name"].as_str().unwrap().starts_with("on_"), "{c}");
    }
    assert!(
        spans
            .iter()
            .any(|c| c["kind"] == 3 && c["parent_span_id"] == order["span_id"]),
        "the order's run made calls"
    );
    let step_spans: Vec<&Value> = spans
        .iter()
        .filter(|s| s["trace_id"] == chain && s["name"] == "barrier member acked")
        .collect();
    assert_eq!(step_spans.len(), 5, "{step_spans:#?}");
    let linked = |member: &str| -> &Value {
        let s = step_spans
            .iter()
            .find(|s| s["attributes"]["native.member"] == member)
            .unwrap();
        let link = &s["links"][0];
        let to = by_id(&link["span_id"]).unwrap_or_else(|| panic!("{s}"));
        assert_eq!(to["trace_id"], link["trace_id"], "{s}");
        to
    };
    for m in ["p1", "p2", "p3"] {
        let to = linked(m);
        assert_ne!(to["trace_id"], chain);
        assert_eq!(to["attributes"]["native.script"], "partner_ack", "{to}");
    }
    let to = linked("callback");
    assert_eq!(
        to["trace_id"], chain,
        "the callback's request is of the chain"
    );
    assert!(
        to["name"]
            .as_str()
            .unwrap()
            .starts_with("POST /v1/callback/"),
        "{to}"
    );
    let to = linked("operator");
    assert!(
        to["name"].as_str().unwrap().starts_with("POST /console/"),
        "{to}"
    );
    let done = spans
        .iter()
        .find(|s| s["trace_id"] == chain && s["name"] == "batch job done")
        .unwrap();
    assert_eq!(done["links"], json!([]));
    // AND the console shows the whole order as one timeline, in order
    the_console_shows_the_order_as_one_timeline(&operator, &chain, &job).await;
}

/// Asserts that `row` holds `what`.
fn holds_text(row: &str, what: &str) {
    assert!(row.contains(what), "{what:?} in {row}");
}

/// A timeline row without its "how long ago" cell (which moves between two reads).
fn entry(row: &str) -> String {
    let row = row.split("</tr>").next().unwrap_or_default();
    row.split_once("</time></td>")
        .map_or(row, |(_, rest)| rest)
        .to_string()
}

/// The chain page of the order of [`one_order_is_one_chain_through_partners_callbacks_operators_jobs_and_timers`]:
/// every run and step in order with its origin, reachable from the barrier's page, a page at
/// a time; hostile ids refused; another tenant's address for it shows nothing of it.
async fn the_console_shows_the_order_as_one_timeline<S: crate::common::console::Serves>(
    operator: &Operator<S>,
    chain: &str,
    job: &str,
) {
    // The barrier's page links the chain that waits on it.
    let here = format!("/console/tenants/shop/chains/{chain}");
    let (_, _, barrier) = operator
        .get("/console/tenants/shop/barriers/order-o-17")
        .await;
    assert!(barrier.contains(&format!("href=\"{here}\"")), "{barrier}");
    let (status, _, page) = operator.get(&here).await;
    assert_eq!(status, 200, "{page}");
    // Each row, in the page's order; what each entry is, found by what only its row holds.
    let rows: Vec<&str> = page.split("<tr class=\"").skip(1).collect();
    let at = |what: &str| {
        rows.iter()
            .position(|r| r.contains(what))
            .unwrap_or_else(|| panic!("no row with {what:?}: {page}"))
    };
    let order = at("\">order</a> <code>on_invoke</code>");
    let remind = at("\">remind</a> <code>on_queue</code>");
    let partners = ["member p1 ", "member p2 ", "member p3 "].map(&at);
    let callback = at("member callback ");
    let by_operator = at("member operator ");
    let fulfil = at("\">fulfil</a> <code>on_queue</code>");
    let done = at("batch job done");
    let stocked = at("\">stocked</a> <code>on_queue</code>");
    let barrier_wait = at("barrier created");
    let timer_wait = at("timer set");
    let job_wait = at("job submitted");
    assert_eq!(order, 0, "the order's run comes first: {page}");
    // (the job's submit is a wait of the run that submitted it, before its partner's done.json)
    assert!(job_wait < done, "{page}");
    holds_text(
        rows[job_wait],
        &format!("href=\"/console/tenants/shop/jobs/{job}\""),
    );
    holds_text(rows[job_wait], "for its partner then stocked");
    // (the waits it started come after it, and before what ended them)
    assert!(order < barrier_wait && barrier_wait < partners[0], "{page}");
    assert!(order < timer_wait && timer_wait < remind, "{page}");
    assert!(
        rows[timer_wait].contains("<span class=\"badge\">wait</span>"),
        "{}",
        rows[timer_wait]
    );
    assert!(
        partners.iter().all(|p| remind < *p && *p < callback),
        "{page}"
    );
    assert!(callback < by_operator && by_operator < fulfil, "{page}");
    assert!(done < stocked, "{page}");
    // ... with their origins: the partner object's run (and the chain it is), the callback,
    // the operator, the partner's done.json; the ack that released the barrier says so
    let p1 = rows[partners[0]];
    assert!(
        p1.contains("script partner_ack, run by object Acks/acks/o-17/p1.json"),
        "{p1}"
    );
    assert!(
        p1.contains("from chain <a href=\"/console/tenants/shop/chains/"),
        "{p1}"
    );
    let holds = |row: usize, what: &str| {
        assert!(rows[row].contains(what), "{what:?} in {}", rows[row]);
    };
    holds(callback, "a partner's POST to its callback URL");
    holds(by_operator, "an operator through the console");
    holds(by_operator, "released the wait");
    holds(done, &format!("object $batch/jobs/{job}/done.json"));
    holds(done, &format!("href=\"/console/tenants/shop/jobs/{job}\""));
    // ... and the order's log line, folded under its run
    holds(
        order,
        "<details class=\"logs\"><summary>1 log line(s)</summary>",
    );

    // A page of two at a time reads the same rows, in the same order.
    let mut paged = Vec::new();
    let mut next = Some(format!("{here}?limit=2"));
    while let Some(url) = next.take() {
        let (status, _, p) = operator.get(&url).await;
        assert_eq!(status, 200, "{url}: {p}");
        let on_page: Vec<String> = p.split("<tr class=\"").skip(1).map(entry).collect();
        assert!(on_page.len() <= 2, "{url}: {p}");
        paged.extend(on_page);
        next = p
            .split_once("\" rel=\"next\"")
            .and_then(|(head, _)| head.rsplit("href=\"").next())
            .map(|h| h.replace("&amp;", "&"));
    }
    let whole: Vec<String> = rows.iter().copied().map(entry).collect();
    assert_eq!(paged, whole);

    // Another tenant's address for the chain shows nothing of it.
    let (status, _, theirs) = operator
        .get(&format!("/console/tenants/rival/chains/{chain}"))
        .await;
    assert_eq!(status, 404, "{theirs}");
    assert!(!theirs.contains("order"), "{theirs}");
    // Hostile ids are refused, and echoed only as text.
    for bad in [
        "%3Cscript%3Ealert(1)%3C%2Fscript%3E",
        "..%2F..%2F..%2Fetc%2Fpasswd",
        "4BF92F3577B34DA6A3CE929D0E0E4736",
        "00000000000000000000000000000000",
        "4bf92f3577b34da6a3ce929d0e0e47361",
        "4bf92f3577b34da6a3ce929d0e0e473%00",
    ] {
        let (status, _, p) = operator
            .get(&format!("/console/tenants/shop/chains/{bad}"))
            .await;
        assert!(status == 400 || status == 404, "{bad}: {status} {p}");
        assert!(!p.contains("<script>alert"), "{bad}: {p}");
    }
    for bad in ["x", "1r", "-r1", "1r99999999999999999999", "1s2&limit=0"] {
        let (status, _, p) = operator.get(&format!("{here}?after={bad}")).await;
        assert!(status == 400 || status == 200, "{bad}: {status} {p}");
        if !bad.contains('&') {
            assert_eq!(status, 400, "{bad}: {p}");
        }
    }
}

/// A rendezvous barrier's continuation runs, at every trip, in the chain that created the
/// barrier, whichever arrivals trip it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rendezvous_continuation_runs_in_the_chain_that_created_the_barrier() {
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[
                (
                    "setup",
                    r#"function on_invoke(ctx, ev)
  native.rendezvous.create({ name = "r", expected_processes = 2,
    delete_inactive_after_seconds = 3600, continue_with = "after" })
  return ctx.trace
end"#,
                ),
                (
                    "arrive",
                    r#"function on_invoke(ctx, ev)
  native.rendezvous.arrive({ name = "r", process_id = ev.p, expected_generation = 1 })
  return ctx.trace
end"#,
                ),
                (
                    "after",
                    r#"function on_queue(ctx, ev) native.log("info", "after", { generation = ev.rendezvous.generation }) end"#,
                ),
            ],
        )],
    );
    let created = p.invoke("acme", "setup", json!({})).await.unwrap();
    let a = p
        .invoke("acme", "arrive", json!({ "p": "a" }))
        .await
        .unwrap();
    let b = p
        .invoke("acme", "arrive", json!({ "p": "b" }))
        .await
        .unwrap();
    assert!(a != created && b != created);
    let report = p.drain().await;
    assert!(report.failures.is_empty(), "{:?}", report.failures);
    let log = p.log.0.lock().unwrap().clone();
    let after = log
        .iter()
        .find(|r| r["msg"] == "after")
        .expect("the continuation ran");
    assert_eq!(after["trace"], created, "{after}");
    // AND the creating chain recorded its wait on the peers, for the console's timeline
    let wait = log
        .iter()
        .find(|r| r["msg"] == "rendezvous barrier created")
        .expect("the wait was recorded");
    assert_eq!(wait["trace"], created, "{wait}");
    assert_eq!(wait["step"], true, "{wait}");
    assert_eq!(wait["wait"], "rendezvous", "{wait}");
    assert_eq!(wait["rendezvous"], "r", "{wait}");
    assert_eq!(wait["continue_with"], "after", "{wait}");
}

/// Trace context in and out (issue 55): a caller's well-formed `traceparent` names the chain
/// its request runs in; every answer, errors included, names its chain; a hostile value is
/// never taken (the request starts a chain of its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_names_its_chain_and_a_callers_traceparent_is_its_chain() {
    use axum::body::Body;
    use axum::http::Request;
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            "{}",
            &[("t", "function on_invoke(ctx) return ctx.trace end")],
        )],
    );
    let key = native_core::api_keys::create(&*p.rt.services.backends.kv, "acme", "t")
        .await
        .unwrap()
        .key;
    let router = native_core::inbound::router(p.rt.clone());
    let send = |path: &str, auth: bool, tp: Option<&[u8]>| {
        let mut r = Request::post(path);
        if auth {
            r = r.header("authorization", format!("Bearer {key}"));
        }
        if let Some(tp) = tp {
            r = r.header(
                "traceparent",
                axum::http::HeaderValue::from_bytes(tp).unwrap(),
            );
        }
        let req = r.body(Body::from("{}")).unwrap();
        let router = router.clone();
        async move {
            use http_body_util::BodyExt;
            let resp = tower::ServiceExt::oneshot(router, req).await.unwrap();
            let status = resp.status().as_u16();
            let tp = resp.headers()["traceparent"].to_str().unwrap().to_string();
            let body = resp.into_body().collect().await.unwrap().to_bytes();
            (status, tp, String::from_utf8_lossy(&body).into_owned())
        }
    };
    let id = "4bf92f3577b34da6a3ce929d0e0e4736";
    let theirs = format!("00-{id}-00f067aa0ba902b7-01");
    // A caller's trace is the run's chain, and the answer's.
    let (status, tp, body) = send("/v1/invoke/t", true, Some(theirs.as_bytes())).await;
    assert_eq!(status, 200);
    assert_eq!(body, format!("\"{id}\""));
    assert!(
        tp.starts_with(&format!("00-{id}-")) && tp.ends_with("-01"),
        "{tp}"
    );
    assert_ne!(
        tp, theirs,
        "the answer's parent is the server's span, not the caller's"
    );
    // Errors too: refused for want of a key, and a path that is none.
    let (status, tp, _) = send("/v1/invoke/t", false, Some(theirs.as_bytes())).await;
    assert_eq!((status, &tp[3..35]), (401, id));
    let (status, tp, _) = send("/nowhere", false, None).await;
    assert_eq!(status, 404);
    let fresh = tp[3..35].to_string();
    assert!(
        native_core::observe::w3c::trace_id(&fresh).is_some(),
        "{tp}"
    );
    // Hostile values are not taken: each request gets a chain of its own.
    let long = format!("cc-{id}-00f067aa0ba902b7-01-{}", "x".repeat(4000));
    for bad in [
        format!("00-{}-00f067aa0ba902b7-01", id.to_uppercase()).into_bytes(),
        format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)).into_bytes(),
        format!("00-{id}-00f067aa0ba902b7-01-and-more").into_bytes(),
        long.into_bytes(),
        [&b"00-"[..], &[0xe9; 32], &b"-00f067aa0ba902b7-01"[..]].concat(),
    ] {
        let (status, tp, body) = send("/v1/invoke/t", true, Some(&bad)).await;
        assert_eq!(status, 200);
        assert!(!tp.contains(id) && !tp.contains(&"0".repeat(32)), "{tp}");
        assert_eq!(body, format!("\"{}\"", &tp[3..35]));
    }
    // AND the access log names each request's chain, as its answer did
    let log = p.log.0.lock().unwrap().clone();
    let traces: Vec<&str> = log
        .iter()
        .filter(|r| r["msg"] == "request")
        .map(|r| r["trace"].as_str().unwrap())
        .collect();
    assert_eq!(traces.len(), 8, "{traces:?}");
    assert_eq!(traces[..3], [id, id, fresh.as_str()]);
}

/// An order: a log line, a db write and read, an object, a barrier.
const TRACED_ORDER: &str = r#"function on_invoke(ctx, ev)
  native.log("info", "ordering", { order = "o-17", n = 3 })
  native.db.put("orders", "o-17", { n = 3 })
  native.db.get("orders", "o-17")
  native.bucket.Out.put("orders/o-17.json", "{}")
  native.barrier.create({ id = "b", members = { "m" }, continue_with = "fin" })
  return ctx.trace
end"#;

/// Held by the tests that export spans, and by the one that counts that nothing records a run
/// where nothing is exported ([`native_core::observe::calls::recorders_started`]).
static EXPORTING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// OpenTelemetry export (issue 55): a real OTLP decoder receives the request's span, the run
/// it served as its child, the run's calls (db, bucket, barrier) as the run's children and
/// its log line as an event of its span, the step an ack of another chain made (linked to
/// that run's span) and the continuation, all of one trace; with the collector stopped, runs
/// succeed as fast and every span is dropped and counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn spans_reach_an_otlp_collector_and_a_stopped_one_changes_nothing_but_drops() {
    use axum::body::Body;
    use axum::http::Request;
    use native_core::observe::otlp::Exporter;
    use std::time::{Duration, Instant};
    let _exporting = EXPORTING.lock().await;
    let mut receiver = Receiver::start();
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[
                ("order", TRACED_ORDER),
                (
                    "ack",
                    r#"function on_invoke(ctx, ev) native.barrier.ack("b", "m") return ctx.trace end"#,
                ),
                ("fin", "function on_queue(ctx, ev) end"),
            ],
        )],
    );
    let exporter = Exporter::start(
        &format!("http://127.0.0.1:{}/v1/traces", receiver.port),
        "native-test",
    )
    .unwrap();
    let rt = std::sync::Arc::new(runtime_of(&p).with_exporter(Some(exporter.clone())));
    let key = native_core::api_keys::create(&*rt.services.backends.kv, "acme", "t")
        .await
        .unwrap()
        .key;
    let router = native_core::inbound::router(rt.clone());
    let invoke = |script: &str, tp: Option<String>| {
        let mut r = Request::post(format!("/v1/invoke/{script}"))
            .header("authorization", format!("Bearer {key}"));
        if let Some(tp) = tp {
            r = r.header("traceparent", tp);
        }
        let req = r.body(Body::from("{}")).unwrap();
        let router = router.clone();
        async move {
            let resp = tower::ServiceExt::oneshot(router, req).await.unwrap();
            assert_eq!(resp.status(), 200);
            resp.headers()["traceparent"].to_str().unwrap().to_string()
        }
    };
    let drain = || drain_all(&rt);
    // WHEN an order comes in a caller's trace, another request (a chain of its own) acks its
    // barrier, and the continuation runs
    let chain = "4bf92f3577b34da6a3ce929d0e0e4736";
    let order_tp = invoke("order", Some(format!("00-{chain}-00f067aa0ba902b7-01"))).await;
    let ack_tp = invoke("ack", None).await;
    drain().await;
    assert!(exporter.flush(Duration::from_secs(10)));
    // THEN the collector decoded every span of it
    let spans = receiver.spans(exporter.exported() as usize);
    let named = |name: &str| -> &Value {
        spans
            .iter()
            .find(|s| s["name"] == name)
            .unwrap_or_else(|| panic!("no span {name:?}: {spans:#?}"))
    };
    let request = named("POST /v1/invoke/order");
    assert_eq!(request["trace_id"], chain);
    assert_eq!(
        request["parent_span_id"], "00f067aa0ba902b7",
        "the caller's span"
    );
    assert_eq!(
        request["span_id"],
        &order_tp[36..52],
        "the answer's parent id"
    );
    assert_eq!(request["kind"], 2);
    assert_eq!(request["attributes"]["http.response.status_code"], 200);
    assert_eq!(request["service"], "native-test");
    let run = named("on_invoke order");
    assert_eq!(run["trace_id"], chain);
    assert_eq!(
        run["parent_span_id"], request["span_id"],
        "the run is the request's child"
    );
    assert_eq!(run["attributes"]["native.tenant"], "acme");
    assert!(run["attributes"]["native.data_ops"].as_i64().unwrap() > 0);
    assert_eq!(run["status"], 1);
    // AND its log line is an event of its span, with its fields
    assert_eq!(run["events"].as_array().unwrap().len(), 1, "{run}");
    let event = &run["events"][0];
    assert_eq!(event["name"], "ordering");
    assert_eq!(event["attributes"]["level"], "info");
    assert_eq!(event["attributes"]["order"], "o-17");
    assert_eq!(event["attributes"]["n"], 3);
    assert_eq!(run["dropped_events"], 0);
    assert_eq!(run["attributes"]["native.calls_dropped"], 0);
    // AND each call it made out of the process is a child of its span, named by what it did
    let calls: Vec<&Value> = spans
        .iter()
        .filter(|s| s["parent_span_id"] == run["span_id"])
        .collect();
    for c in &calls {
        assert_eq!(c["trace_id"], chain);
        assert_eq!(c["kind"], 3, "a client span: {c}");
        assert!(c["start"].as_u64() >= run["start"].as_u64(), "{c}");
        assert!(c["end"].as_u64() <= run["end"].as_u64(), "{c}");
        let outcome = &c["attributes"]["native.call.outcome"];
        assert!(outcome == "ok" || outcome == "absent", "{c}");
        assert!(
            !c.to_string().contains("o-17.json"),
            "names, not the object's own: {c}"
        );
    }
    let call = |name: &str| -> &Value {
        calls
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no call {name:?} of the run: {calls:#?}"))
    };
    let put = call("db put");
    assert_eq!(put["attributes"]["native.call.target"], "orders");
    assert_eq!(put["attributes"]["native.call.bytes"], 7, "{{\"n\":3}}");
    assert_eq!(call("db get")["attributes"]["native.call.target"], "orders");
    let object = call("bucket put");
    let out = &p.rt.services.deployment.buckets.map["Out"];
    assert!(
        object["attributes"]["native.call.target"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{out}/")),
        "{object}"
    );
    assert!(object["attributes"]["native.call.target"]
        .as_str()
        .unwrap()
        .ends_with("orders/"));
    assert_eq!(object["attributes"]["native.call.bytes"], 2);
    assert_eq!(call("barrier put")["attributes"]["native.call.target"], "b");
    let acker = named("on_invoke ack");
    let ack_chain = &ack_tp[3..35];
    assert_eq!(acker["trace_id"], ack_chain);
    // AND the ack's run sent the continuation: a call of its own span, in its own trace
    let send = spans
        .iter()
        .find(|s| s["name"] == "queue send" && s["parent_span_id"] == acker["span_id"])
        .unwrap_or_else(|| panic!("no send of the ack's run: {spans:#?}"));
    assert_eq!(send["trace_id"], ack_chain);
    assert_eq!(send["attributes"]["native.call.target"], "work");
    assert!(send["attributes"]["native.call.bytes"].as_i64().unwrap() > 0);
    let step = named("barrier member acked");
    assert_eq!(step["trace_id"], chain, "the step is of the order's trace");
    assert_eq!(
        step["links"],
        json!([{ "trace_id": ack_chain, "span_id": acker["span_id"] }]),
        "linked to the run that acked"
    );
    assert_eq!(step["attributes"]["native.member"], "m");
    let fin = named("on_queue fin");
    assert_eq!(
        fin["trace_id"], chain,
        "the continuation is of the order's trace"
    );
    assert_eq!(fin["kind"], 5);
    assert_eq!(exporter.dropped(), 0);
    let exported = exporter.exported();
    assert_eq!(exported, exporter.made());
    let runs = spans
        .iter()
        .filter(|s| s["name"].as_str().unwrap().starts_with("on_"))
        .count();
    let children = spans.iter().filter(|s| s["kind"] == 3).count();
    assert_eq!(
        (spans.len(), runs),
        (6 + children, 3),
        "two requests, three runs, one step and the runs' calls: {spans:#?}"
    );

    // WHEN the collector is stopped, a listener that never answers takes its place (the
    // worst collector: each send waits its whole timeout), and the same work runs again
    receiver.stop();
    let _hole = std::net::TcpListener::bind(("127.0.0.1", receiver.port));
    let made = exporter.made();
    for _ in 0..10 {
        let started = Instant::now();
        invoke("order", None).await;
        // THEN every run succeeds without waiting on the collector
        let took = started.elapsed();
        assert!(took < native_core::observe::otlp::SEND_TIMEOUT, "{took:?}");
    }
    // AND the spans that could not be sent are counted as dropped
    assert!(exporter.flush(Duration::from_secs(30)));
    assert_eq!(exporter.exported(), exported);
    assert!(
        exporter.made() - made >= 10 * 6,
        "a request's span, its run's and its calls', 10 times: {}",
        exporter.made() - made
    );
    assert_eq!(exporter.dropped(), exporter.made() - made);
}

/// The order's tenant, for the tests of export on and off.
fn order_project() -> TestProject {
    TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[
                ("order", TRACED_ORDER),
                ("fin", "function on_queue(ctx, ev) end"),
            ],
        )],
    )
}

/// Export off (no endpoint, issue 55): the backends are the very ones given, not wrapped, and
/// no run starts a recorder: nothing of the export is reached, so it cannot cost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_export_off_no_span_is_made_and_nothing_is_wrapped() {
    use native_core::observe::{calls, traced};
    let _exporting = EXPORTING.lock().await;
    let p = order_project();
    let rt = runtime_of(&p);
    assert!(rt.services.exporter.is_none());
    let given = &p.rt.services.backends;
    let b = &rt.services.backends;
    assert!(!traced::is_traced(b));
    assert!(std::sync::Arc::ptr_eq(&b.kv, &given.kv));
    assert!(std::sync::Arc::ptr_eq(&b.objects, &given.objects));
    assert!(std::sync::Arc::ptr_eq(&b.queue, &given.queue));
    assert!(std::sync::Arc::ptr_eq(&b.vault, &given.vault));
    let before = calls::recorders_started();
    for _ in 0..3 {
        rt.invoke("acme", "order", json!({})).await.unwrap();
    }
    assert_eq!(calls::recorders_started(), before, "no run was recorded");
    // AND the same runtime with an exporter wraps them once, however often it is asked
    let e =
        native_core::observe::otlp::Exporter::start("http://127.0.0.1:9/v1/traces", "t").unwrap();
    let on = runtime_of(&p)
        .with_exporter(Some(e.clone()))
        .with_exporter(Some(e));
    assert!(traced::is_traced(&on.services.backends));
    assert!(format!("{:?}", on.services.backends.kv).starts_with("Traced(Embedded"));
}

/// A run's calls past its cap are counted, never made: a run of 10 000 db reads exports
/// [`calls::MAX_CALL_SPANS`] child spans and counts the rest as dropped, on its span and the
/// exporter's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_many_calls_keeps_its_cap_and_counts_the_rest() {
    use native_core::observe::calls;
    use native_core::observe::otlp::Exporter;
    let _exporting = EXPORTING.lock().await;
    let receiver = Receiver::start();
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "acme",
            r#"{ "limits": { "max_data_ops": 10000 } }"#,
            &[(
                "many",
                r#"function on_invoke(ctx, ev)
  for i = 1, 10000 do native.db.get("t", "k") end
  for i = 1, 60 do native.log("info", "line", { i = i }) end
end"#,
            )],
        )],
    );
    let e = Exporter::start(
        &format!("http://127.0.0.1:{}/v1/traces", receiver.port),
        "t",
    )
    .unwrap();
    let rt = runtime_of(&p).with_exporter(Some(e.clone()));
    rt.invoke("acme", "many", json!({})).await.unwrap();
    assert!(e.flush(std::time::Duration::from_secs(30)));
    let cap = u64::from(calls::MAX_CALL_SPANS);
    assert_eq!(e.made(), 1 + 10_000);
    assert_eq!(e.exported(), 1 + cap);
    assert_eq!(e.dropped(), 10_000 - cap);
    let spans = receiver.spans(e.exported() as usize);
    let run = spans
        .iter()
        .find(|s| s["name"] == "on_invoke many")
        .unwrap();
    assert_eq!(run["attributes"]["native.calls_dropped"], 10_000 - cap);
    assert_eq!(run["events"].as_array().unwrap().len(), calls::MAX_EVENTS);
    assert_eq!(run["dropped_events"], 60 - calls::MAX_EVENTS as u64);
}

/// A Lambda function's answer waits for its spans (issue 55): with a collector there, they are
/// taken before [`Runtime::flushing`] returns; with one that never answers, the answer comes
/// within [`native_core::runtime::FLUSH_WITHIN`] (or the request's end, if sooner) and
/// succeeds, and the late flush is counted; with none listening, the spans are dropped and
/// counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lambda_answer_waits_for_its_spans_only_within_a_bound() {
    use native_core::observe::otlp::Exporter;
    use native_core::runtime::FLUSH_WITHIN;
    use std::time::{Duration, Instant};
    let _exporting = EXPORTING.lock().await;
    let p = order_project();
    let far = Instant::now() + Duration::from_secs(60);
    // A collector there: every span made is taken when the answer comes, not a second later.
    let receiver = Receiver::start();
    let e = Exporter::start(
        &format!("http://127.0.0.1:{}/v1/traces", receiver.port),
        "t",
    )
    .unwrap();
    let rt = runtime_of(&p).with_exporter(Some(e.clone()));
    let out = rt
        .flushing(far, rt.invoke("acme", "order", json!({})))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert!(e.made() >= 5, "the run and its calls: {}", e.made());
    assert_eq!(e.exported(), e.made(), "taken before the answer");
    assert_eq!(e.late_flushes(), 0);
    // A collector that accepts and never answers: the answer waits the bound, no more.
    let stalled = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/v1/traces", stalled.local_addr().unwrap());
    let e = Exporter::start(&url, "t").unwrap();
    let rt = runtime_of(&p).with_exporter(Some(e.clone()));
    let started = Instant::now();
    rt.invoke("acme", "order", json!({})).await.unwrap();
    let run_alone = started.elapsed();
    let started = Instant::now();
    let out = rt
        .flushing(far, rt.invoke("acme", "order", json!({})))
        .await;
    let took = started.elapsed();
    assert!(out.is_ok(), "{out:?}");
    assert!(
        took < run_alone + FLUSH_WITHIN + Duration::from_millis(500),
        "{took:?} (the run alone {run_alone:?})"
    );
    assert_eq!(e.late_flushes(), 1);
    // AND never past the request's end, however much of the bound is left
    let started = Instant::now();
    let end = Instant::now() + Duration::from_millis(20);
    let out = rt.flushing(end, async { 7 }).await;
    assert_eq!(out, 7);
    assert!(started.elapsed() < Duration::from_millis(20) + Duration::from_millis(300));
    assert_eq!(e.late_flushes(), 2);
    // A collector that is gone: the spans are dropped and counted, the answer unaffected.
    drop(stalled);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = Exporter::start(&format!("http://127.0.0.1:{port}/v1/traces"), "t").unwrap();
    let rt = runtime_of(&p).with_exporter(Some(e.clone()));
    let out = rt
        .flushing(far, rt.invoke("acme", "order", json!({})))
        .await;
    assert!(out.is_ok(), "{out:?}");
    assert_eq!(e.exported(), 0);
    assert_eq!(
        e.dropped(),
        e.made(),
        "all of them, counted before the answer"
    );
}

/// A server that stops sends its last spans before its serve loop returns (the Fargate
/// server's `inbound::serve`; `native serve` does the same), not a batch period later, when
/// the process is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_server_sends_its_last_spans_before_it_returns() {
    use native_core::observe::otlp::Exporter;
    use std::time::Duration;
    // Alone in a process: the serve loop's stop ends every rendezvous wait of its process.
    if !native_tests::own_process::alone(
        module_path!(),
        "a_stopping_server_sends_its_last_spans_before_it_returns",
    ) {
        return;
    }
    let receiver = Receiver::start();
    let e = Exporter::start(
        &format!("http://127.0.0.1:{}/v1/traces", receiver.port),
        "t",
    )
    .unwrap();
    let p = order_project();
    let rt = std::sync::Arc::new(runtime_of(&p).with_exporter(Some(e.clone())));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(native_core::inbound::serve(
        listener,
        rt.clone(),
        async move {
            let _ = stop_rx.await;
        },
        Duration::from_secs(5),
        native_core::inbound::Hygiene::default(),
    ));
    rt.invoke("acme", "order", json!({})).await.unwrap();
    let _ = stop_tx.send(());
    serving.await.unwrap().unwrap();
    assert!(e.made() >= 5, "the run and its calls: {}", e.made());
    assert_eq!(e.exported(), e.made(), "taken before the loop returned");
}
