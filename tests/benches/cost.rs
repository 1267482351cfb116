//! What native costs on AWS, counted: the real code paths over the AWS SDK, through a proxy in
//! front of the emulator (moto) that records every call (`tests/tests/fault_proxy`, no faults),
//! priced at the list prices below. Counts, not timings: the figures do not depend on the
//! machine. See docs/cost.md for what was measured and what scales with what.
//!
//! Run (moto started as tests/run.sh does, its variables set):
//! `cargo bench --profile dev -p native-tests --bench cost`
//!
//! Flows (issue 53): the HTTP invoke, the barrier member, the barrier's acks through an object
//! and a signed callback, the timer, the batch job (a partner's and `job:http`), the
//! rendezvous peer.

use std::sync::Arc;
use std::time::Duration;

use native_core::aws::lambda;
use native_core::aws::{emulator_sdk_config, Clients};
use native_core::barrier::{Barriers, CreateSpec, Outcome};
use native_core::config::Deployment;
use native_core::ports::{Backends, Tallies};
use native_tests::aws_endpoint;
use native_tests::barriers::Count;
use serde_json::{json, Value};
use tower::ServiceExt;

// The bench uses only the proxy's counting side.
#[allow(dead_code)]
#[path = "../tests/fault_proxy/mod.rs"]
mod fault_proxy;

use fault_proxy::{Call, Faults, Proxy};

/// List prices, us-east-1, in dollars per million (docs/cost.md).
mod price {
    /// DynamoDB on demand: a write request unit (1 KB; transactions 2 per KB).
    pub const WRU: f64 = 0.625;
    /// DynamoDB on demand: a read request unit (a strongly consistent read of 4 KB;
    /// transactions 2).
    pub const RRU: f64 = 0.125;
    /// S3 Standard: PUT, COPY, POST, LIST.
    pub const S3_WRITE_LIST: f64 = 5.0;
    /// S3 Standard: GET, HEAD and the others (DELETE is free).
    pub const S3_READ: f64 = 0.4;
    /// SQS standard queue: a request (of 64 KB).
    pub const SQS: f64 = 0.4;
    /// Lambda: an invocation (duration not counted here).
    pub const LAMBDA: f64 = 0.2;
}

/// Request units of one DynamoDB call, from its body: writes 1 per KB of each item written
/// (the body's size shared by its items stands for theirs, an upper bound), reads 1 per item
/// (items under 4 KB), transactions twice.
fn units(op: &str, body: &str) -> (f64, f64) {
    let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
    let kb = |bytes: usize| (bytes as f64 / 1024.0).ceil().max(1.0);
    match op {
        "GetItem" | "Query" | "Scan" => (0.0, 1.0),
        "PutItem" | "UpdateItem" | "DeleteItem" => (kb(body.len()), 0.0),
        "BatchWriteItem" => {
            let n: usize = v["RequestItems"]
                .as_object()
                .map(|t| t.values().map(|l| l.as_array().map_or(0, Vec::len)).sum())
                .unwrap_or(1);
            (n as f64 * kb(body.len() / n.max(1)), 0.0)
        }
        "TransactWriteItems" => {
            let items = v["TransactItems"].as_array().cloned().unwrap_or_default();
            let n = items.len().max(1);
            let checks = items
                .iter()
                .filter(|i| i["ConditionCheck"].is_object())
                .count();
            let writes = n - checks;
            (
                2.0 * writes as f64 * kb(body.len() / n),
                2.0 * checks as f64,
            )
        }
        "TransactGetItems" => (
            0.0,
            2.0 * v["TransactItems"].as_array().map_or(1, Vec::len) as f64,
        ),
        _ => (0.0, 0.0),
    }
}

/// What the calls of one flow cost, per operation.
#[derive(Debug, Default)]
struct Tally {
    calls: std::collections::BTreeMap<String, f64>,
    wru: f64,
    rru: f64,
    dollars: f64,
}

impl Tally {
    /// The calls `seen` recorded, over `ops` operations, plus `lambdas` invocations per
    /// operation.
    fn of(seen: &[(Call, String)], ops: usize, lambdas: f64) -> Tally {
        let mut t = Tally::default();
        let per = 1.0 / ops as f64;
        for (call, asked) in seen {
            let name = match call.service {
                "s3" => format!("s3 {}", s3_op(asked)),
                s => format!("{s} {}", call.op),
            };
            *t.calls.entry(name).or_default() += per;
            t.dollars += per
                * match call.service {
                    "dynamodb" => {
                        let (w, r) = units(&call.op, asked);
                        t.wru += w * per;
                        t.rru += r * per;
                        w * price::WRU + r * price::RRU
                    }
                    "s3" if matches!(s3_op(asked), "PUT" | "POST" | "LIST") => price::S3_WRITE_LIST,
                    // S3 charges nothing for DELETE.
                    "s3" if s3_op(asked) == "DELETE" => 0.0,
                    "s3" => price::S3_READ,
                    "sqs" => price::SQS,
                    _ => 0.0,
                };
        }
        t.dollars += lambdas * price::LAMBDA;
        t
    }

    fn total(&self) -> f64 {
        self.calls.values().sum()
    }

    fn print(&self, flow: &str) {
        let calls: Vec<String> = self
            .calls
            .iter()
            .map(|(k, n)| format!("{k} {n:.3}"))
            .collect();
        println!(
            "| {flow} | {:.3} | {:.2} WRU, {:.2} RRU | {:.2} | {} |",
            self.total(),
            self.wru,
            self.rru,
            self.dollars,
            calls.join(", ")
        );
    }
}

/// An S3 request's kind from its method and query.
fn s3_op(asked: &str) -> &'static str {
    let method = asked.split(' ').next().unwrap_or("");
    match method {
        "GET" if asked.contains("list-type=") => "LIST",
        "GET" => "GET",
        "HEAD" => "HEAD",
        "PUT" => "PUT",
        "POST" => "POST",
        "DELETE" => "DELETE",
        _ => "other",
    }
}

/// `n` HTTP invokes of `script` with `key`, `at_once` at a time, all answered 200.
async fn invokes(rt: &Arc<native_core::runtime::Runtime>, key: &str, n: usize, at_once: usize) {
    for _ in 0..n / at_once {
        let mut all = tokio::task::JoinSet::new();
        for _ in 0..at_once {
            let req = axum::http::Request::post("/v1/invoke/noop")
                .header("authorization", format!("Bearer {key}"))
                .body(axum::body::Body::from("{}"))
                .unwrap();
            let router = native_core::inbound::router(rt.clone());
            all.spawn(async move { router.oneshot(req).await.unwrap().status().as_u16() });
        }
        assert!(all.join_all().await.iter().all(|s| *s == 200));
    }
}

/// A rendezvous peer at barriers of 4, 64 and 256 peers (issue 53): each peer arrives, then
/// waits for the trip (`WaitAtBarrier`), all at once in one process (a waiter is woken by the
/// trip in its process; until then the waiters share one read per 100 ms); the create's calls
/// shared among them. The calls go through one lock (`one_kv_call_at_a_time`: moto does not apply
/// concurrent conditional writes atomically, DynamoDB does); their count is what DynamoDB
/// would see. Prints one row per size, and the attempts: the transactions per arrival.
async fn rendezvous_peers(proxy: &Proxy, backends: &native_core::ports::Backends) {
    use native_core::rendezvous::{CreateBarrier, Metadata, Rendezvous, Unlimited, WaitOutcome};
    // The tenant's `default` namespace is written once, when first read: not a barrier's cost.
    Rendezvous::new(&*backends.kv, &*backends.queue, "acme", &Unlimited)
        .get_namespace("default")
        .await
        .unwrap();
    for peers in [4usize, 64, 256] {
        let [b] = native_tests::aws_env::one_kv_call_at_a_time([backends.clone()]);
        let name = format!("bench-{peers}-{}", native_core::ports::new_token());
        let from = proxy.seen().calls.len();
        let r = Rendezvous::new(&*b.kv, &*b.queue, "acme", &Unlimited);
        r.create(CreateBarrier {
            namespace: "default".into(),
            name: name.clone(),
            expected_processes: peers as u64,
            delete_inactive_after_seconds: 3600,
            ..CreateBarrier::default()
        })
        .await
        .unwrap();
        let mut all = tokio::task::JoinSet::new();
        for p in 0..peers {
            let (b, name) = (b.clone(), name.clone());
            all.spawn(async move {
                let r = Rendezvous::new(&*b.kv, &*b.queue, "acme", &Unlimited);
                let pid = format!("p{p}");
                r.arrive("default", &name, &pid, 1, Metadata::new())
                    .await
                    .unwrap();
                let (_, out) = r
                    .wait("default", &name, 1, Duration::from_secs(60))
                    .await
                    .unwrap();
                out
            });
        }
        let outs = all.join_all().await;
        assert!(outs.iter().all(|o| *o == WaitOutcome::Tripped));
        let seen = since_from(proxy, from);
        let tx = seen
            .iter()
            .filter(|(c, _)| c.op == "TransactWriteItems")
            .count();
        Tally::of(&seen, peers, 0.0).print(&format!(
            "rendezvous peer, {peers} peers (create / {peers} + arrive + wait; {tx} transactions)"
        ));
    }
}

fn main() {
    let Some(ep) = aws_endpoint() else {
        eprintln!(
            "cost bench: set NATIVE_TEST_AWS_ENDPOINT to a running moto (tests/run.sh shows how)"
        );
        std::process::exit(2);
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let d =
            Deployment::from_json("deployment.json", r#"{ "buckets": { "map": {} } }"#).unwrap();
        let stack = native_tests::aws_env::stack(&ep, &d).await;
        // Tenant acme deployed as `native deploy` does (its deploy marker written).
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("acme");
        std::fs::create_dir_all(folder.join("scripts")).unwrap();
        std::fs::write(folder.join("config.json"), r#"{ "queue": true }"#).unwrap();
        std::fs::write(
            folder.join("scripts/noop.luau"),
            "function on_invoke(ctx, ev) return 1 end",
        )
        .unwrap();
        native_core::aws::upload_tenant(
            &*stack.backends.objects,
            &stack.config.scripts_bucket,
            "acme",
            &folder,
        )
        .await
        .unwrap();
        let proxy = Proxy::start(&ep, Faults::all(1, 0.0, Duration::ZERO)).await;
        let clients = Clients::new(&emulator_sdk_config(&proxy.endpoint).await);
        let backends = clients.backends(&stack.config);
        let since = |from: usize| proxy.seen().calls[from..].to_vec();
        println!("| per operation | calls | units | $/million | calls by kind |");
        println!("|---|---:|---|---:|---|");

        // The HTTP invoke of a script that calls nothing, warm (the Lambda http function's
        // code path: one invocation per request).
        let key = native_core::api_keys::create(&*stack.backends.kv, "acme", "bench")
            .await
            .unwrap();
        // A cold process given 32 requests at once: the tenant is loaded once.
        let server = Arc::new(lambda::runtime_for(&stack.config, &clients));
        let from = proxy.seen().calls.len();
        invokes(&server, &key.key, 32, 32).await;
        Tally::of(&since(from), 32, 1.0)
            .print("HTTP invoke, cold process, 32 requests at once (per request)");
        // The same process warm, for longer than the scripts bucket's 5 s check.
        let from = proxy.seen().calls.len();
        let n = 12_000;
        let start = std::time::Instant::now();
        invokes(&server, &key.key, n, 16).await;
        let took = start.elapsed();
        Tally::of(&since(from), n, 1.0).print(&format!(
            "HTTP invoke, warm, no-op script ({n} requests in {:.1} s)",
            took.as_secs_f64()
        ));

        for members in [10usize, 1000] {
            barrier_members(&proxy, &backends, members).await;
        }

        coordination_rows(&ep, &proxy).await;
        batch_job_rows(&ep, &proxy).await;
        rendezvous_peers(&proxy, &backends).await;
    });
}

// The batch job round trip (issue 53): a partner job and a `job:http` job, each from the
// submitting script to the continuation's cleanup, through the real code paths.

/// Submits a job of one query; the partner's answer runs `settle`.
const JOB_SUBMIT: &str = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:query("orders", "open_orders", { since = ev.since })
  job:state({ ref = ev.ref })
  job:continue_with("settle")
  return job:submit()
end"#;
/// Submits a job of one `job:http` request.
const JOB_HTTP: &str = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("charge", { method = "POST", url = native.config.api_base .. "charges", body = "{}" })
  job:state({ ref = ev.ref })
  job:continue_with("settle_http")
  return job:submit()
end"#;
/// The router: a job's done.json to its continuation.
const JOB_ROUTER: &str = r#"
function on_route(_ctx, event)
  local routed = native.batch.route(event)
  if routed then return routed.script and { script = routed.script, event = routed.event } or nil end
  return nil
end"#;
/// The partner job's continuation: every row read, then the job's keys deleted.
const JOB_SETTLE: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev)
  if not job then return end
  local n = 0
  for _ in job:rows("orders") do n = n + 1 end
  assert(n == 2, "rows: " .. n)
  return { delete = job:keys() }
end"#;
/// The `job:http` continuation: the body read, then the job's keys deleted.
const JOB_SETTLE_HTTP: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev)
  if not job then return end
  assert(job.results.charge.status == 201)
  assert(#job:body("charge") > 0)
  return { delete = job:keys() }
end"#;

/// Receives a queue as the event source mapping does (through the counting proxy), one message
/// a batch (the worst case: see docs/cost.md for batching), until `want` records came; gives
/// the receipts to delete as Lambda does after a batch without failures.
async fn job_events(
    clients: &Clients,
    url: &str,
    want: usize,
) -> (native_core::aws::lambda::SqsEvent, Vec<String>) {
    let mut ev = native_core::aws::lambda::SqsEvent::default();
    for _ in 0..100 {
        let out = clients
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(1)
            .visibility_timeout(30)
            .send()
            .await
            .unwrap();
        ev.records.extend(
            out.messages()
                .iter()
                .map(native_tests::aws_env::lambda_record),
        );
        if ev.records.len() >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let receipts = ev
        .records
        .iter()
        .filter_map(|r| r.receipt_handle.clone())
        .collect();
    (ev, receipts)
}

/// The batch job round trips: `jobs` jobs of each kind, after one that warms the process (the
/// tenant's load is not the job's). Per job: the submitting invocation, the partner's read of
/// request.json and its writes (a real partner's, as `native partner` makes them), S3's
/// notification to the events queue (1 SQS request, made by S3, so not seen by the proxy: added),
/// the event source mapping's receive and delete (here one batch per job, the worst case: see
/// docs/cost.md for batching), the events function (router and continuation in one invocation)
/// and the cleanup.
async fn batch_job_rows(ep: &str, proxy: &Proxy) {
    use native_core::batch::partner::{answer, Options, Source};
    let d = Deployment::from_json(
        "deployment.json",
        r#"{ "buckets": { "map": {} }, "batch": { "bucket": "batch-bucket", "prefix": "tenants/" } }"#,
    )
    .unwrap();
    let mut stack = native_tests::aws_env::stack(ep, &d).await;
    stack.config.deployment.http.allow_private_networks = true;
    // A partner API for job:http: 201 and a small JSON body.
    let api = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = api.local_addr().unwrap().port();
    tokio::spawn(async move {
        let app = axum::Router::new().route(
            "/charges",
            axum::routing::post(|| async {
                (
                    axum::http::StatusCode::CREATED,
                    r#"{"id":"ch_1","paid":true}"#,
                )
            }),
        );
        axum::serve(api, app).await.unwrap();
    });
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("shop");
    std::fs::create_dir_all(folder.join("scripts")).unwrap();
    let config = json!({
        "queue": true, "batch": true,
        "http": { "allow": [format!("127.0.0.1:{port}")] },
        "config": { "api_base": format!("http://127.0.0.1:{port}/") },
    });
    std::fs::write(folder.join("config.json"), config.to_string()).unwrap();
    for (name, src) in [
        ("submit", JOB_SUBMIT),
        ("submit_http", JOB_HTTP),
        ("router", JOB_ROUTER),
        ("settle", JOB_SETTLE),
        ("settle_http", JOB_SETTLE_HTTP),
    ] {
        std::fs::write(folder.join(format!("scripts/{name}.luau")), src).unwrap();
    }
    native_core::aws::upload_tenant(
        &*stack.backends.objects,
        &stack.config.scripts_bucket,
        "shop",
        &folder,
    )
    .await
    .unwrap();
    let clients = Clients::new(&emulator_sdk_config(&proxy.endpoint).await);
    let backends = clients.backends(&stack.config);
    // The Fargate server's runtime: the functions' code plus the background performer.
    let rt = Arc::new(lambda::runtime_for(&stack.config, &clients).with_http_jobs());
    let deployment = stack.config.deployment.clone();
    let events_url = stack.config.events_queue_url.clone();
    let rows = "{\"id\":\"o-1\"}\n{\"id\":\"o-2\"}\n".to_string();
    // One job of `script`, from submit to cleanup.
    let round_trip = |script: &'static str, partner: bool| {
        let (rt, backends, deployment, clients, url, rows) = (
            rt.clone(),
            backends.clone(),
            deployment.clone(),
            clients.clone(),
            events_url.clone(),
            rows.clone(),
        );
        async move {
            let job = rt
                .invoke(
                    "shop",
                    script,
                    json!({ "since": "2026-12-01", "ref": "r-1" }),
                )
                .await
                .unwrap();
            let job = job.as_str().unwrap().to_string();
            if partner {
                let bucket = deployment.real_bucket("$batch").unwrap().to_string();
                let key =
                    deployment.full_key("$batch", "shop", &format!("jobs/{job}/request.json"));
                let (_, body) = backends.objects.get(&bucket, &key).await.unwrap().unwrap();
                let request = serde_json::from_slice(&body).unwrap();
                let given = [("orders".to_string(), Ok(rows))].into_iter().collect();
                let opts = Options::new(Source::Given(given));
                answer(&*backends.objects, &deployment, "shop", &request, &opts)
                    .await
                    .unwrap();
            } else {
                rt.services.http_jobs.as_ref().unwrap().wait_idle().await;
            }
            let (events, receipts) = job_events(&clients, &url, 1).await;
            let out = lambda::handle_event_batch(&rt, events).await;
            assert!(out.batch_item_failures.is_empty(), "{out:?}");
            backends
                .queue
                .delete_many(native_core::ports::QueueKind::Events, &receipts)
                .await;
            // Cleaned up: the job's objects are gone.
            let bucket = deployment.real_bucket("$batch").unwrap();
            let left = backends
                .objects
                .list(
                    bucket,
                    &deployment.full_key("$batch", "shop", "jobs/"),
                    None,
                    10,
                )
                .await
                .unwrap();
            assert!(left.objects.is_empty(), "{:?}", left.objects);
        }
    };
    let jobs = 5;
    for (script, partner, flow) in [
        (
            "submit",
            true,
            "batch job round trip (1 query, its result inline in done.json)",
        ),
        (
            "submit_http",
            false,
            "batch job round trip, job:http (1 request, a text body)",
        ),
    ] {
        round_trip(script, partner).await;
        let from = proxy.seen().calls.len();
        for _ in 0..jobs {
            round_trip(script, partner).await;
        }
        // The cleanup's List above is the bench's, not the job's.
        let seen: Vec<(Call, String)> = proxy.seen().calls[from..]
            .iter()
            .filter(|(c, asked)| !(c.service == "s3" && s3_op(asked) == "LIST"))
            .cloned()
            .collect();
        // Two invocations: the submitting script's and the events function's.
        let mut t = Tally::of(&seen, jobs, 2.0);
        *t.calls
            .entry("sqs SendMessage (S3's notification)".into())
            .or_default() += 1.0;
        t.dollars += price::SQS;
        t.print(&format!("{flow} (per job)"));
    }
}

// The barrier's other ack paths and the timer (issue 53), through scripts as tenants write
// them.

/// Creates a barrier of `ev.members` whose continuation is `noop`; with `ev.callback`, returns
/// each member's signed callback URL too.
const BARRIER_CREATE: &str = r#"
function on_invoke(ctx, ev)
  local id = native.barrier.create({ members = ev.members, continue_with = "noop" })
  local urls = {}
  if ev.callback then
    for _, m in ev.members do table.insert(urls, native.barrier.callback_url(id, m)) end
  end
  return { id = id, urls = urls }
end"#;
/// The router: an object in Acks (`<barrier>/<member>`) is an ack.
const ACK_ROUTER: &str = r#"
function on_route(_ctx, event)
  if event.bucket == "Acks" then return { script = "ack", event = event } end
  return nil
end"#;
/// The ack script: the object's key names the barrier and the member.
const ACK: &str = r#"
function on_queue(ctx, ev)
  local id, member = string.match(ev.key, "^([^/]+)/(.+)$")
  native.barrier.ack(id, member, { ok = true })
end"#;
/// Sets `ev.n` timers due in a second, each running `noop`.
const TIMERS: &str = r#"
function on_invoke(ctx, ev)
  for i = 1, ev.n do native.timer.at({ in_s = 1 }, "noop", { i = i }) end
  return ev.n
end"#;
const NOOP: &str = "function on_queue(ctx, ev) end";

/// Receives `want` messages of a queue as the event source mapping does (through the proxy),
/// runs them in the function of `kind` and deletes them as Lambda does.
async fn run_queue(
    rt: &Arc<native_core::runtime::Runtime>,
    clients: &Clients,
    backends: &native_core::ports::Backends,
    kind: native_core::ports::QueueKind,
    url: &str,
    want: usize,
) {
    let mut got = 0;
    for _ in 0..200 {
        if got >= want {
            return;
        }
        let (events, receipts) = job_events(clients, url, 1).await;
        if events.records.is_empty() {
            continue;
        }
        got += events.records.len();
        let out = match kind {
            native_core::ports::QueueKind::Events => lambda::handle_event_batch(rt, events).await,
            native_core::ports::QueueKind::Work => lambda::handle_work_batch(rt, events).await,
        };
        assert!(out.batch_item_failures.is_empty(), "{out:?}");
        backends.queue.delete_many(kind, &receipts).await;
    }
    panic!("{want} messages did not come");
}

/// A barrier ack through an object the partner writes (the seed's path), a signed callback
/// ack, and a timer set and fired. Each over `members` (or timers), divided by them; the
/// barrier's create is not counted in the acks (it is in the barrier member rows).
async fn coordination_rows(ep: &str, proxy: &Proxy) {
    use native_core::ports::QueueKind;
    let d = Deployment::from_json(
        "deployment.json",
        r#"{ "buckets": { "map": { "Acks": "acks-bucket" } } }"#,
    )
    .unwrap();
    let stack = native_tests::aws_env::stack(ep, &d).await;
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("acme");
    std::fs::create_dir_all(folder.join("scripts")).unwrap();
    std::fs::write(folder.join("config.json"), r#"{ "queue": true }"#).unwrap();
    for (name, src) in [
        ("create", BARRIER_CREATE),
        ("router", ACK_ROUTER),
        ("ack", ACK),
        ("timers", TIMERS),
        ("noop", NOOP),
    ] {
        std::fs::write(folder.join(format!("scripts/{name}.luau")), src).unwrap();
    }
    native_core::aws::upload_tenant(
        &*stack.backends.objects,
        &stack.config.scripts_bucket,
        "acme",
        &folder,
    )
    .await
    .unwrap();
    let clients = Clients::new(&emulator_sdk_config(&proxy.endpoint).await);
    let backends = clients.backends(&stack.config);
    let signer =
        native_core::callback::Signer::new(vec![7; 32], "https://native.example/").unwrap();
    let rt = Arc::new(lambda::runtime_for(&stack.config, &clients).with_callback(Arc::new(signer)));
    let (events_url, work_url) = (
        stack.config.events_queue_url.clone(),
        stack.config.work_queue_url.clone(),
    );
    let acks = stack.deployment().real_bucket("Acks").unwrap().to_string();
    let members = 10usize;
    let names: Vec<String> = (0..members).map(|i| format!("m{i:02}.json")).collect();
    // Warm: the tenant loaded, a barrier acked through both paths.
    for round in 0..2 {
        // Through objects in Acks.
        let made = rt
            .invoke("acme", "create", json!({ "members": names }))
            .await
            .unwrap();
        let id = made["id"].as_str().unwrap().to_string();
        let from = proxy.seen().calls.len();
        for m in &names {
            backends
                .objects
                .put(
                    &acks,
                    &format!("acme/{id}/{m}"),
                    "{}".into(),
                    native_core::ports::PutMode::Overwrite,
                )
                .await
                .unwrap();
        }
        run_queue(
            &rt,
            &clients,
            &backends,
            QueueKind::Events,
            &events_url,
            members,
        )
        .await;
        let acked = since_from(proxy, from);
        // The continuation (noop) on the work queue, counted with the acks.
        let from = proxy.seen().calls.len();
        run_queue(&rt, &clients, &backends, QueueKind::Work, &work_url, 1).await;
        let continued = since_from(proxy, from);
        if round == 1 {
            let all: Vec<_> = acked.into_iter().chain(continued).collect();
            let mut t = Tally::of(&all, members, 1.0 + 1.0 / members as f64);
            *t.calls
                .entry("sqs SendMessage (S3's notification)".into())
                .or_default() += 1.0;
            t.dollars += price::SQS;
            t.print(&format!(
                "barrier ack via S3 object, {members}-member barrier (the partner's PUT, the event, the ack; the continuation's share)"
            ));
        }
        // Through signed callback URLs.
        let made = rt
            .invoke(
                "acme",
                "create",
                json!({ "members": names, "callback": true }),
            )
            .await
            .unwrap();
        let urls: Vec<String> = made["urls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u.as_str().unwrap().to_string())
            .collect();
        let from = proxy.seen().calls.len();
        for url in &urls {
            let token = url.rsplit_once("/v1/callback/").unwrap().1;
            let req = axum::http::Request::post(format!("/v1/callback/{token}"))
                .body(axum::body::Body::empty())
                .unwrap();
            let resp = native_core::inbound::router(rt.clone())
                .oneshot(req)
                .await
                .unwrap();
            assert!(resp.status().is_success(), "{}", resp.status());
        }
        let acked = since_from(proxy, from);
        let from = proxy.seen().calls.len();
        run_queue(&rt, &clients, &backends, QueueKind::Work, &work_url, 1).await;
        let continued = since_from(proxy, from);
        if round == 1 {
            let all: Vec<_> = acked.into_iter().chain(continued).collect();
            Tally::of(&all, members, 1.0 + 1.0 / members as f64).print(&format!(
                "signed callback ack, {members}-member barrier (the POST, the ack; the continuation's share)"
            ));
        }
    }
    // Timers: set by one invocation, fired by one tick, each run once on the work queue.
    let n = 10usize;
    let from = proxy.seen().calls.len();
    rt.invoke("acme", "timers", json!({ "n": n }))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let report = native_core::runtime::tick(
        &*backends.kv,
        &*backends.queue,
        &*backends.objects,
        native_core::timer::TickOptions::every_minute(native_core::deadline::tick_end(None)),
    )
    .await
    .unwrap();
    assert_eq!(report.fired as usize, n, "{report:?}");
    run_queue(&rt, &clients, &backends, QueueKind::Work, &work_url, n).await;
    // The setting invocation is the script's own; the tick's is shared by its timers.
    Tally::of(&since_from(proxy, from), n, 1.0 + 1.0 / n as f64).print(&format!(
        "timer set and fired ({n} timers, one tick; the run on the work queue)"
    ));
}

/// The calls the proxy saw from `from` on.
fn since_from(proxy: &Proxy, from: usize) -> Vec<(Call, String)> {
    proxy.seen().calls[from..].to_vec()
}

/// DynamoDB's size of a tally item (attribute names and values; a map 3 bytes and 1 a member;
/// a number about half its digits), to price the `UpdateItem`s that fill it.
fn tally_bytes(t: &native_core::ports::Tally) -> usize {
    let num = |n: i64| n.to_string().len().div_ceil(2) + 1;
    let slots: usize = t.slots.iter().map(|(k, v)| k.len() + v.len() + 1).sum();
    "pk".len()
        + t.pk.len()
        + "sk".len()
        + t.sk.len()
        + "slots".len()
        + 3
        + slots
        + "open".len()
        + num(t.open as i64)
        + "marked".len()
        + num(t.marked as i64)
        + "ttl".len()
        + num(t.expires_at_s)
        + t.closed.as_ref().map_or(0, |x| 1 + x.len())
}

/// A barrier member (issue 53): the create, every member acked once with `{ ok = true }` (the
/// last ack sends the continuation), all divided by the members; the continuation's own run is
/// not counted. Each `UpdateItem` (a fill) is priced at its tally's size after it (DynamoDB
/// charges the larger of before and after), from the size the tally ends with, read after the
/// run, not at its request's size. Prints the acks' own calls too, and the acks a
/// second one barrier takes, derived from the units.
async fn barrier_members(proxy: &Proxy, backends: &Backends, members: usize) {
    let count = Count::default();
    let b = Barriers {
        kv: &*backends.kv,
        queue: &*backends.queue,
        tenant: "acme",
        queue_enabled: true,
        budget: &count,
    };
    let from = proxy.seen().calls.len();
    let id = b
        .create(CreateSpec {
            id: None,
            members: (0..members).map(|i| format!("m{i:04}")).collect(),
            continue_with: Some("noop".into()),
            state: json!({}),
            deadline_s: None,
            on_overdue: None,
        })
        .await
        .unwrap();
    let created = proxy.seen().calls.len();
    for i in 0..members {
        let ok = Outcome {
            ok: true,
            error: None,
            result: None,
        };
        b.ack(&id, &format!("m{i:04}"), ok).await.unwrap();
    }
    let seen = proxy.seen().calls[from..].to_vec();
    // The fills' units from their tallies' sizes: each tally's size after each fill, from its
    // size at the end less the values filled after (every fill here fills an open slot).
    let mut fills: Vec<((String, String), usize, f64)> = Vec::new();
    for (call, body) in &seen {
        if call.op != "UpdateItem" {
            continue;
        }
        let v: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let key = (
            v["Key"]["pk"]["S"].as_str().unwrap_or_default().to_string(),
            v["Key"]["sk"]["S"].as_str().unwrap_or_default().to_string(),
        );
        let value = v["ExpressionAttributeValues"][":v"]["S"]
            .as_str()
            .map_or(0, str::len);
        fills.push((key, value, units(&call.op, body).0));
    }
    let ack_fills = fills.len();
    let mut sizes = std::collections::HashMap::new();
    for (key, _, _) in &fills {
        if !sizes.contains_key(key) {
            let t = backends
                .kv
                .tally_get(&key.0, &key.1)
                .await
                .unwrap()
                .unwrap();
            sizes.insert(key.clone(), tally_bytes(&t));
        }
    }
    let mut extra_wru = 0.0;
    let mut after = sizes.clone();
    for (key, value, estimated) in fills.iter().rev() {
        let size = after[key];
        extra_wru += (size as f64 / 1024.0).ceil().max(1.0) - estimated;
        *after.get_mut(key).unwrap() = size.saturating_sub(*value);
    }
    let mut t = Tally::of(&seen, members, 0.0);
    t.wru += extra_wru / members as f64;
    t.dollars += extra_wru / members as f64 * price::WRU;
    t.print(&format!(
        "barrier member, {members}-member barrier (create + ack, / {members})"
    ));
    let create = Tally::of(&seen[..created - from], 1, 0.0);
    let acks = Tally::of(&seen[created - from..], members, 0.0);
    let biggest = sizes.values().max().copied().unwrap_or(0);
    println!(
        "<!-- {members} members: create {} calls, {:.0} WRU; the acks {:.3} calls each ({} fills), the largest tally {biggest} bytes ({} WRU a fill at most) -->",
        created - from,
        create.wru,
        acks.total(),
        ack_fills,
        (biggest as f64 / 1024.0).ceil()
    );
}
