//! What native costs on AWS, counted: the real code paths over the AWS SDK, through a proxy in
//! front of the emulator (moto) that records every call (`tests/tests/fault_proxy`, no faults),
//! priced at the list prices below. Counts, not timings: the figures do not depend on the
//! machine. See docs/cost.md for what was measured and what scales with what.
//!
//! Run (moto started as tests/run.sh does, its variables set):
//! `cargo bench --profile dev -p native-tests --bench cost`
//!
//! A skeleton (issue 53): the HTTP invoke and the barrier member. The timer, batch job and
//! rendezvous flows are still to be added.

use std::sync::Arc;
use std::time::Duration;

use native_core::aws::lambda;
use native_core::aws::{emulator_sdk_config, Clients};
use native_core::barrier::{Barriers, CreateSpec, Outcome};
use native_core::config::Deployment;
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
    /// S3 Standard: GET, HEAD and the others.
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
        let seen = since(proxy, from);
        let tx = seen
            .iter()
            .filter(|(c, _)| c.op == "TransactWriteItems")
            .count();
        Tally::of(&seen, peers, 0.0).print(&format!(
            "rendezvous peer, {peers} peers (create / {peers} + arrive + wait; {tx} transactions)"
        ));
    }
}

/// The calls `proxy` recorded from the `from`-th on.
fn since(proxy: &Proxy, from: usize) -> Vec<(Call, String)> {
    proxy.seen().calls[from..].to_vec()
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

        // A barrier member: create, every member acked once (the last one sends the
        // continuation), divided by the members. The continuation's own run is not counted.
        for members in [10usize, 100] {
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
            for i in 0..members {
                let ok = Outcome {
                    ok: true,
                    error: None,
                    result: None,
                };
                b.ack(&id, &format!("m{i:04}"), ok).await.unwrap();
            }
            Tally::of(&since(from), members, 0.0).print(&format!(
                "barrier member, {members}-member barrier (create + ack, / {members})"
            ));
        }

        rendezvous_peers(&proxy, &backends).await;
    });
}
