//! `job:http` on a runtime that performs it in the background (as the Fargate server, `native
//! serve` and the CLI do), against real HTTP servers on 127.0.0.1: the seed's example end to
//! end, several requests of one job at once, throttling per tenant, failures, a stop in the
//! middle of a request, checks when called, and a Lambda runtime that refuses it.

use crate::common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{server, Server};
use native_core::local::{drain, DrainOptions};
use native_core::ports::Secret;
use native_core::runtime::Runtime;
use native_tests::TestProject;
use serde_json::{json, Value};

const SECRET: &str = "sk_test_51Hx/secret+value";

const DEPLOYMENT: &str = r#"{
  "buckets": { "map": { "Out": "shop-out" } },
  "batch": { "bucket": "shop-batch", "prefix": "tenants/" },
  "http": { "allow_private_networks": true }
}"#;

const ROUTER: &str = r#"
local function on_route(_ctx, event)
  local routed = native.batch.route(event)
  if routed then
    return routed.script and { script = routed.script, event = routed.event } or "gone"
  end
  return nil
end
return { on_route = on_route }"#;

const GONE: &str = "function on_queue(ctx, ev) end";

/// The seed's submitting script, as written.
const CHARGE: &str = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("charge", {                                   -- same options as native.http.request
    method = "POST",
    url = native.config.api_base .. "charges",
    headers = { authorization = "Bearer {{vault:stripe.key}}" },
    body = native.json.encode(ev.order),
    vault = { "header" },
  })
  job:state({ order = ev.order.id })
  job:continue_with("charged")
  return job:submit()
end"#;

/// The seed's continuation, plus a line that keeps what it saw for the test.
const CHARGED: &str = r#"
function on_queue(ctx, ev)                               -- script "charged"
  local job = native.batch.hydrate(ev, { allow_failure = true })
  if not job then return end
  if not job.ok then
    native.bucket.Out.put("failed/" .. job.state.order .. ".json", native.json.encode({ error = job.error }))
    return { delete = job:keys() }
  end
  local r = job.results.charge                           -- { status, headers, parts }
  local body = native.json.decode(job:body("charge"))
  native.bucket.Out.put("charged/" .. job.state.order .. ".json",
    native.json.encode({ status = r.status, ctype = r.headers["content-type"], body = body }))
  return { delete = job:keys() }
end"#;

/// Several requests in one job; the continuation records every status.
const FANOUT: &str = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new()
  for i = 1, ev.n do
    job:http("r" .. i, { url = native.config.api_base .. ev.path })
  end
  job:state({ order = ev.tag })
  job:continue_with("collect")
  return job:submit()
end"#;

const COLLECT: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  if not job then return end
  local statuses = {}
  for name, r in pairs(job.results) do statuses[name] = r.status end
  local prev = native.bucket.Out.get("runs/" .. job.state.order)
  native.bucket.Out.put("runs/" .. job.state.order, tostring((tonumber(prev) or 0) + 1))
  native.bucket.Out.put("collected/" .. job.state.order .. ".json",
    native.json.encode({ ok = job.ok, error = job.error, statuses = statuses }))
  return { delete = job:keys() }
end"#;

async fn shop(srv: &Server, concurrency: u32) -> TestProject {
    let config = json!({
        "queue": true, "batch": true,
        "http": { "allow": [format!("127.0.0.1:{}", srv.port), "127.0.0.1:9"], "concurrency": concurrency },
        "vault": ["stripe.key"],
        "config": { "api_base": format!("http://127.0.0.1:{}/", srv.port) },
    });
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[(
            "shop",
            &config.to_string(),
            &[
                ("router", ROUTER),
                ("gone", GONE),
                ("charge", CHARGE),
                ("charged", CHARGED),
                ("fanout", FANOUT),
                ("collect", COLLECT),
            ],
        )],
    );
    p.rt.services
        .backends
        .vault
        .set("shop", "stripe.key", &Secret::new(SECRET.into()))
        .await
        .unwrap();
    p
}

/// The project's runtime performing job:http, as the server runtimes do.
fn server_runtime(p: &TestProject) -> std::sync::Arc<Runtime> {
    std::sync::Arc::new(p.project.runtime().with_log(p.log.clone()).with_http_jobs())
}

async fn drain_all(rt: &std::sync::Arc<Runtime>) {
    let r = drain(
        rt,
        DrainOptions {
            wait: true,
            retry_delay_s: 0,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
}

async fn out(p: &TestProject, key: &str) -> Option<Value> {
    p.get("shop", "Out", key)
        .await
        .map(|s| serde_json::from_str(&s).unwrap())
}

/// Every object of the batch bucket, key and content.
async fn batch_objects(p: &TestProject) -> Vec<(String, String)> {
    let objects = &p.rt.services.backends.objects;
    let page = objects
        .list("shop-batch", "tenants/shop/", None, 1000)
        .await
        .unwrap();
    let mut all = Vec::new();
    for k in page.objects.into_iter().map(|m| m.key) {
        let (_, b) = objects.get("shop-batch", &k).await.unwrap().unwrap();
        all.push((k, String::from_utf8_lossy(&b).into_owned()));
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_seed_example_charges_in_the_background_and_the_continuation_reads_the_answer() {
    // GIVEN the seed's charge and charged scripts, api_base in config and the key in the vault
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let rt = server_runtime(&p);
    // WHEN charge is invoked
    let job = rt
        .invoke(
            "shop",
            "charge",
            json!({ "order": { "id": "o1", "amount": 42 } }),
        )
        .await
        .unwrap();
    let job = job.as_str().unwrap().to_string();
    // THEN the request is not in the bucket: only the state is, until the answer
    let early = batch_objects(&p).await;
    assert!(
        early.iter().all(|(k, _)| !k.ends_with("request.json")),
        "{early:?}"
    );
    for (k, v) in &early {
        assert!(!v.contains(SECRET), "{k} holds the secret");
    }
    // AND `native batch list` and the console's Jobs page see it waiting, without request.json
    let listed = native_core::batch::jobs::list(
        &*p.rt.services.backends.objects,
        &p.rt.services.deployment,
        "shop",
        native_core::ports::now_ms(),
    )
    .await
    .unwrap();
    let listed: Vec<_> = listed.iter().map(|j| (j.job.as_str(), j.state)).collect();
    assert_eq!(listed, [(job.as_str(), "waiting")]);
    // WHEN the process performs the job and drains
    drain_all(&rt).await;
    // THEN the server got the secret, and the continuation the answer with it redacted
    assert_eq!(
        srv.last_auth.lock().unwrap().as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let seen = out(&p, "charged/o1.json").await.expect("charged ran");
    assert_eq!(seen["status"], 201);
    assert_eq!(seen["ctype"], "application/json");
    assert_eq!(seen["body"]["id"], "ch_1");
    assert_eq!(seen["body"]["amount"], 42);
    assert_eq!(seen["body"]["auth"], "Bearer [redacted:stripe.key]");
    // AND the job was cleaned up by the continuation: nothing of it is left, and nothing
    // stored or logged anywhere holds the secret
    let left = batch_objects(&p).await;
    assert!(left.iter().all(|(k, _)| !k.contains(&job)), "{left:?}");
    let logs = serde_json::to_string(&*p.log.0.lock().unwrap()).unwrap();
    assert!(!logs.contains(SECRET), "{logs}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_stored_answer_is_a_body_part_and_done_json_with_status_and_headers() {
    // GIVEN a charge submitted on a server runtime, with the continuation not yet run
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let rt = server_runtime(&p);
    let job = rt
        .invoke(
            "shop",
            "charge",
            json!({ "order": { "id": "o2", "amount": 7 } }),
        )
        .await
        .unwrap();
    let job = job.as_str().unwrap();
    rt.services.http_jobs.as_ref().unwrap().wait_idle().await;
    // WHEN the job folder is read
    let objects = &p.rt.services.backends.objects;
    let done_of = |job: &str| {
        let dir = format!("tenants/shop/jobs/{job}/");
        async move {
            let (_, done) = objects
                .get("shop-batch", &format!("{dir}done.json"))
                .await
                .unwrap()
                .unwrap();
            serde_json::from_slice::<Value>(&done).unwrap()
        }
    };
    let done = done_of(job).await;
    // THEN done.json says ok with status, headers and the part, the body inline in it (text,
    // small) and redacted, with no object of its own
    assert_eq!(done["ok"], true);
    let r = &done["results"]["charge"];
    assert_eq!(r["status"], 201);
    assert_eq!(r["headers"]["content-type"], "application/json");
    assert_eq!(r["parts"][0]["key"], "charge.0000.body");
    let body = r["parts"][0]["data"].as_str().unwrap();
    assert_eq!(r["parts"][0]["bytes"], body.len());
    assert!(
        body.contains("[redacted:stripe.key]") && !body.contains(SECRET),
        "{body}"
    );
    let dir = format!("tenants/shop/jobs/{job}/");
    assert!(objects
        .get("shop-batch", &format!("{dir}charge.0000.body"))
        .await
        .unwrap()
        .is_none());
    // AND of two bodies that do not both fit in what done.json may hold inline (256 KiB), the
    // second is an object of its own, with the size done.json promises
    let job = rt
        .invoke(
            "shop",
            "fanout",
            json!({ "n": 2, "path": "big?bytes=150000", "tag": "big" }),
        )
        .await
        .unwrap();
    let job = job.as_str().unwrap();
    rt.services.http_jobs.as_ref().unwrap().wait_idle().await;
    let done = done_of(job).await;
    assert_eq!(done["ok"], true, "{done}");
    let (r1, r2) = (
        &done["results"]["r1"]["parts"][0],
        &done["results"]["r2"]["parts"][0],
    );
    assert_eq!(r1["data"].as_str().map(str::len), Some(150_000));
    assert!(r2.get("data").is_none(), "{r2}");
    let (_, stored) = objects
        .get(
            "shop-batch",
            &format!("tenants/shop/jobs/{job}/r2.0000.body"),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.len(), 150_000);
    assert_eq!(r2["bytes"], 150_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_of_a_job_run_at_once_and_the_continuation_runs_once() {
    // GIVEN a tenant with http.concurrency 4 and a server that answers after 600 ms
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let rt = server_runtime(&p);
    // WHEN a job of three requests is submitted and performed
    let t = Instant::now();
    rt.invoke(
        "shop",
        "fanout",
        json!({ "n": 3, "path": "slow?ms=600", "tag": "three" }),
    )
    .await
    .unwrap();
    drain_all(&rt).await;
    // THEN the three ran at once (about 600 ms in all, not 1800) and the continuation ran once
    // with every status
    assert_eq!(srv.peak.load(Ordering::SeqCst), 3);
    assert!(
        t.elapsed() < Duration::from_millis(1500),
        "{:?}",
        t.elapsed()
    );
    let seen = out(&p, "collected/three.json").await.unwrap();
    assert_eq!(seen["ok"], true);
    assert_eq!(seen["statuses"], json!({ "r1": 200, "r2": 200, "r3": 200 }));
    assert_eq!(
        p.get("shop", "Out", "runs/three").await.as_deref(),
        Some("1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_runs_at_most_http_concurrency_requests_at_once_and_the_rest_wait() {
    // GIVEN a tenant with http.concurrency 2
    let srv = server().await;
    let p = shop(&srv, 2).await;
    let rt = server_runtime(&p);
    // WHEN two jobs of three slow requests each are submitted
    for tag in ["a", "b"] {
        rt.invoke(
            "shop",
            "fanout",
            json!({ "n": 3, "path": "slow?ms=300", "tag": tag }),
        )
        .await
        .unwrap();
    }
    drain_all(&rt).await;
    // THEN never more than two ran at once, and every request was answered after its wait
    assert_eq!(srv.peak.load(Ordering::SeqCst), 2);
    assert_eq!(srv.hits.load(Ordering::SeqCst), 6);
    for tag in ["a", "b"] {
        let seen = out(&p, &format!("collected/{tag}.json")).await.unwrap();
        assert_eq!(seen["ok"], true, "{seen}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_response_is_ok_false_with_the_error_and_any_status_is_an_answer() {
    // GIVEN a job with a request to a port where nothing listens, and one answered 500
    let srv = server().await;
    let script = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("down", { url = "http://127.0.0.1:9/" })
  job:http("err", { url = native.config.api_base .. "status/500" })
  job:state({ order = "f" })
  job:continue_with("collect")
  return job:submit()
end"#;
    let p = shop(&srv, 4).await;
    std::fs::write(p.dir.path().join("tenants/shop/scripts/two.luau"), script).unwrap();
    let rt = server_runtime(&p);
    // WHEN it is performed
    rt.invoke("shop", "two", json!({})).await.unwrap();
    drain_all(&rt).await;
    // THEN the job failed naming the request without an answer; the 500 is an answer
    let seen = out(&p, "collected/f.json").await.unwrap();
    assert_eq!(seen["ok"], false);
    let err = seen["error"].as_str().unwrap();
    assert!(
        err.starts_with("down: cannot connect to 127.0.0.1"),
        "{err}"
    );
    assert_eq!(seen["statuses"], json!({ "err": 500 }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_stop_fails_the_running_request_with_server_stopping() {
    // GIVEN a charge whose server answers after 20 s
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let rt = server_runtime(&p);
    rt.invoke(
        "shop",
        "fanout",
        json!({ "n": 1, "path": "slow?ms=20000", "tag": "stop" }),
    )
    .await
    .unwrap();
    let jobs = rt.services.http_jobs.clone().unwrap();
    while srv.running.load(Ordering::SeqCst) == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // WHEN the process is told to stop (SIGTERM on a server) mid-request
    let t = Instant::now();
    assert!(jobs.stop(Duration::from_secs(5)).await);
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    // THEN the job was answered ok = false "server stopping" and its continuation runs
    drain_all(&rt).await;
    let seen = out(&p, "collected/stop.json").await.unwrap();
    assert_eq!(seen["ok"], false);
    assert_eq!(seen["error"], "r1: server stopping");
    // AND new jobs are refused while stopping
    let e = rt
        .invoke(
            "shop",
            "fanout",
            json!({ "n": 1, "path": "echo", "tag": "late" }),
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("the server is stopping"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn requests_are_checked_when_job_http_is_called() {
    // GIVEN a server runtime
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let rt = server_runtime(&p);
    // WHEN a job:http names a host off the allow list, a vault name off the list, mixes with
    // a partner query, or goes past max_http_requests
    let cases = [
        (
            r#"function on_invoke() local j = native.batch.new(); j:http("a", { url = "http://127.0.0.1:1/" }) end"#,
            "bad0.luau:1: job:http: 127.0.0.1 (port 1) is not on the tenant's http.allow list",
        ),
        (
            r#"function on_invoke() local j = native.batch.new(); j:http("a", { url = native.config.api_base, body = "{{vault:x}}", vault = { "body" } }) end"#,
            "job:http: vault name \"x\" is not on the tenant's vault list",
        ),
        (
            r#"function on_invoke() local j = native.batch.new(); j:query("q", "x"); j:http("a", { url = native.config.api_base }) end"#,
            "job:http: the job has partner queries or inputs; a job cannot also have job:http requests",
        ),
        (
            r#"function on_invoke() local j = native.batch.new(); j:http("a", { url = native.config.api_base }); j:query("q", "x") end"#,
            "job:query: the job has job:http requests",
        ),
        (
            r#"function on_invoke() local j = native.batch.new(); for i = 1, 21 do pcall(j.http, j, "r" .. i, { url = native.config.api_base }) end end"#,
            "limit max_http_requests exceeded: job:http would be HTTP request 21 of this invocation and the tenant allows 20",
        ),
    ];
    for (i, (src, _)) in cases.iter().enumerate() {
        let file = p
            .dir
            .path()
            .join(format!("tenants/shop/scripts/bad{i}.luau"));
        std::fs::write(file, src).unwrap();
    }
    for (i, (src, want)) in cases.iter().enumerate() {
        let e = rt
            .invoke("shop", &format!("bad{i}"), json!({}))
            .await
            .unwrap_err()
            .to_string();
        // THEN it fails in the submitting script, and nothing was sent
        assert!(e.contains(want), "{src}: {e}");
    }
    assert_eq!(srv.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_lambda_runtime_refuses_job_http_and_says_to_use_the_server() {
    // GIVEN the runtime the Lambda functions use (no background performer)
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let lambda: Arc<Runtime> = Arc::new(p.project.runtime());
    // WHEN the seed's charge runs there
    let e = lambda
        .invoke(
            "shop",
            "charge",
            json!({ "order": { "id": "o1", "amount": 1 } }),
        )
        .await
        .unwrap_err()
        .to_string();
    // THEN job:http raises an error that names the server runtime, and nothing was sent
    assert!(
        e.contains("charge.luau:4: job:http needs the server runtime (native-server on Fargate, native serve, the native CLI)"),
        "{e}"
    );
    assert_eq!(srv.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_id_makes_a_resubmit_send_nothing_again() {
    // GIVEN a script that submits a job:http under a fixed id, and one that reuses the id
    // for another request
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let once = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new({ id = "pay-1" })
  job:http("charge", { method = "POST", url = native.config.api_base .. ev.path })
  job:state({ order = "pay-1" })
  job:continue_with("collect")
  return job:submit()
end"#;
    std::fs::write(p.dir.path().join("tenants/shop/scripts/once.luau"), once).unwrap();
    let rt = server_runtime(&p);
    // WHEN it runs twice (a retried message), then with another request under the same id
    let a = rt
        .invoke("shop", "once", json!({ "path": "echo" }))
        .await
        .unwrap();
    rt.services.http_jobs.as_ref().unwrap().wait_idle().await;
    let b = rt
        .invoke("shop", "once", json!({ "path": "echo" }))
        .await
        .unwrap();
    rt.services.http_jobs.as_ref().unwrap().wait_idle().await;
    let e = rt
        .invoke("shop", "once", json!({ "path": "status/201" }))
        .await
        .unwrap_err()
        .to_string();
    // THEN the request was sent once, the retry returned the same id, and another request
    // under the id is refused
    assert_eq!((a, b), (json!("pay-1"), json!("pay-1")));
    assert_eq!(srv.hits.load(Ordering::SeqCst), 1);
    assert!(
        e.contains("job \"pay-1\" was already submitted with other requests; nothing was sent"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_servers_graceful_stop_fails_running_jobs_before_it_returns() {
    // Alone in a process: the serve loop's stop ends every rendezvous wait of its process.
    if !native_tests::own_process::alone(
        module_path!(),
        "the_servers_graceful_stop_fails_running_jobs_before_it_returns",
    ) {
        return;
    }
    // GIVEN the Fargate server's serve loop over a server runtime, with a job in flight to an
    // API that answers after 20 s
    let srv = server().await;
    let p = shop(&srv, 4).await;
    let rt = server_runtime(&p);
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
    rt.invoke(
        "shop",
        "fanout",
        json!({ "n": 2, "path": "slow?ms=20000", "tag": "term" }),
    )
    .await
    .unwrap();
    while srv.running.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // WHEN it is told to stop, as SIGTERM does
    let t = Instant::now();
    stop_tx.send(()).unwrap();
    assert!(serving.await.unwrap().unwrap(), "stopped in time");
    // THEN it returned at once, with the job already answered "server stopping"
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    assert_eq!(rt.services.http_jobs.as_ref().unwrap().running(), 0);
    drain_all(&rt).await;
    let seen = out(&p, "collected/term.json").await.unwrap();
    assert_eq!(seen["error"], "r1: server stopping; r2: server stopping");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_that_waits_too_long_for_a_slot_fails_and_the_others_are_answered() {
    // GIVEN a tenant with http.concurrency 1 on a server whose wait for a slot is 300 ms (an
    // hour in production), and a server that answers after 1 s
    let srv = server().await;
    let p = shop(&srv, 1).await;
    let rt = Arc::new(
        p.project
            .runtime()
            .with_log(p.log.clone())
            .with_http_performer(
                native_core::outbound::jobs::HttpJobs::new()
                    .with_slot_wait(Duration::from_millis(300)),
            ),
    );
    // WHEN a job of two requests is performed
    rt.invoke(
        "shop",
        "fanout",
        json!({ "n": 2, "path": "slow?ms=1000", "tag": "wait" }),
    )
    .await
    .unwrap();
    drain_all(&rt).await;
    // THEN one was answered, and the other failed for want of a slot, saying why
    let seen = out(&p, "collected/wait.json").await.unwrap();
    assert_eq!(seen["ok"], false);
    assert_eq!(seen["statuses"].as_object().unwrap().len(), 1, "{seen}");
    let err = seen["error"].as_str().unwrap();
    assert!(
        err.ends_with(
            ": waited 300 ms for a slot (the tenant's http.concurrency is 1) and got none"
        ),
        "{err}"
    );
    assert_eq!(srv.hits.load(Ordering::SeqCst), 1);
}
