//! The AWS backend behind a fault-injecting proxy (`fault_proxy`): throttling in each service's
//! format, server errors, connections reset before and after the request reached the emulator,
//! stalls. What must hold whatever the network does: a write whose answer was lost is still the
//! caller's own (a claim never answers "taken" for itself), and a barrier whose create met a
//! fault is still listed.
//!
//! The seed flows (`the_seed_flows_hold_*`, at 0 %, 5 % and 20 % faults, each run seeded and
//! named by its seed) go through the functions' own entry points: claims, sends and barriers
//! through `invoke_by`; seed 000's barriers acked by partner objects through
//! `handle_event_batch_by` (the router and the ack script, 30 % of the acks notified twice);
//! seed 001's jobs submitted over the HTTP API and continued by their `done.json` through the
//! route function; 3 rendezvous barriers x 4 peers x 4 generations over the HTTP API (Grackle's
//! JSON); every continuation through `handle_work_batch_by`, and the dispatch guard's
//! `runtime::tick`. Nothing acknowledged may be lost, every barrier, job and trip continues
//! exactly once, nothing is dead-lettered, and every answer is right or a clean retryable error
//! within its deadline and a second.
//!
//! Run with `tests/moto.sh` (or the test command), which starts moto and sets
//! `NATIVE_TEST_AWS_ENDPOINT`; without it every test here returns at once.

#[cfg(feature = "aws")]
use crate::fault_proxy;

#[cfg(feature = "aws")]
mod with_aws {
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use native_core::aws::lambda::{self, InvokeRequest, SqsEvent};
    use native_core::aws::sdk::sqs;
    use native_core::aws::{
        emulator_sdk_config, Clients, DynamoKv, QueueUrls, SdkConfig, SqsQueues,
    };
    use native_core::barrier::{CreateSpec, Filter, Outcome};
    use native_core::config::Deployment;
    use native_core::ports::now_ms;
    use native_core::ports::{KvStore, NewItem, PutMode};
    use native_core::runtime::{self, Runtime};
    use native_core::timer::TickOptions;
    use native_core::Error;
    use native_tests::aws_endpoint as endpoint;
    use native_tests::aws_env::Stack;
    use native_tests::aws_env::{clients, lambda_record, make_queue, make_table, unique};
    use native_tests::barriers::{barriers, barriers as barriers_of, Count};
    use native_tests::MemLog;
    use serde_json::{json, Value};

    use super::fault_proxy::{Call, Fault, Faults, Proxy};

    /// Resets after forwarding, on the share `rate` of the calls that `pick` takes, at most
    /// once each (the SDK's retry goes through).
    fn answers_lost(seed: u64, rate: f64, pick: fn(&Call) -> bool) -> Faults {
        Faults {
            seed,
            rate,
            kinds: vec![Fault::ResetAfter],
            stall: std::time::Duration::ZERO,
            pick: Some(Box::new(pick)),
            once: true,
        }
    }

    /// The SDK's configuration for the emulator behind `endpoint`, whose retries wait 10 ms
    /// at first rather than up to a second (the test's run time).
    async fn quick_retries(endpoint: &str) -> SdkConfig {
        use native_core::aws::sdk::dynamodb::config::retry::RetryConfig;
        emulator_sdk_config(endpoint)
            .await
            .to_builder()
            .retry_config(
                RetryConfig::standard().with_initial_backoff(std::time::Duration::from_millis(10)),
            )
            .build()
    }

    /// A table in moto, and the key-value port over it through a proxy that loses the answers
    /// `faults` says.
    async fn kv_behind(ep: &str, faults: Faults) -> (Proxy, DynamoKv) {
        let table = unique("faults");
        make_table(&clients(ep).await, &table).await;
        let proxy = Proxy::start(ep, faults).await;
        let c = Clients::new(&quick_retries(&proxy.endpoint).await);
        (proxy, DynamoKv::new(c.dynamodb, &table))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_claim_whose_answer_was_lost_is_still_the_claimers_own() {
        let Some(ep) = endpoint() else { return };
        // GIVEN DynamoDB behind a proxy that applies 30 % of the conditional puts and then
        // cuts the connection before their answer (the SDK retries them)
        let (proxy, kv) = kv_behind(
            &ep,
            answers_lost(50, 0.3, |c| c.service == "dynamodb" && c.op == "PutItem"),
        )
        .await;
        // WHEN 150 claims are made, each of a key nobody else writes (put_if_absent's put)
        let mut taken = Vec::new();
        for i in 0..150 {
            let item = NewItem {
                pk: "claims".into(),
                sk: format!("work-{i}"),
                value: format!("\"request-{i}\""),
                expires_at_s: i64::MAX / 2,
            };
            match kv.put(item, PutMode::Create).await {
                Ok(_) => {}
                Err(Error::AlreadyExists { .. }) => taken.push(i),
                Err(e) => panic!("claim {i}: {e}"),
            }
        }
        // THEN every claim answers as made, though answers were lost
        let lost = proxy.seen().count(Fault::ResetAfter);
        assert!(
            lost >= 20,
            "only {lost} answers were lost: the test tests nothing"
        );
        assert!(
            taken.is_empty(),
            "{} of 150 claims answered \"taken\" for their own write ({lost} answers lost): {taken:?}",
            taken.len()
        );
        // AND another writer's claim of one of them is refused
        let again = NewItem {
            pk: "claims".into(),
            sk: "work-0".into(),
            value: "\"another\"".into(),
            expires_at_s: i64::MAX / 2,
        };
        proxy.set_rate(0.0);
        let err = kv.put(again, PutMode::Create).await.unwrap_err();
        assert!(matches!(err, Error::AlreadyExists { .. }), "{err:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_barrier_created_through_lost_answers_is_listed_and_its_acks_are_not_duplicates() {
        let Some(ep) = endpoint() else { return };
        // GIVEN DynamoDB behind a proxy that loses the answers of 30 % of the puts and
        // transactions (creates, claims, list rows and acks)
        let (proxy, kv) = kv_behind(
            &ep,
            answers_lost(7, 0.3, |c| {
                c.service == "dynamodb" && matches!(c.op.as_str(), "PutItem" | "TransactWriteItems")
            }),
        )
        .await;
        let queue = queue_port(&ep).await;
        let count = Count::default();
        let b = barriers(&kv, &queue, &count);
        // WHEN 30 barriers of 3 members, each with a continuation, are created and every
        // member acked once
        let mut ids = Vec::new();
        let mut duplicates = Vec::new();
        let mut undispatched = Vec::new();
        for i in 0..30 {
            let id = b
                .create(CreateSpec {
                    id: Some(format!("b{i:02}")),
                    members: vec!["m1".into(), "m2".into(), "m3".into()],
                    continue_with: Some("finalize".into()),
                    ..CreateSpec::default()
                })
                .await
                .unwrap_or_else(|e| panic!("create b{i:02}: {e}"));
            let ok = Outcome {
                ok: true,
                error: None,
                result: None,
            };
            let mut dispatched = false;
            for m in ["m1", "m2", "m3"] {
                let r = b
                    .ack(&id, m, ok.clone())
                    .await
                    .unwrap_or_else(|e| panic!("ack {id}/{m}: {e}"));
                if r.duplicate {
                    duplicates.push(format!("{id}/{m}"));
                }
                dispatched |= r.dispatched;
            }
            if !dispatched {
                undispatched.push(id.clone());
            }
            ids.push(id);
        }
        let lost = proxy.seen().count(Fault::ResetAfter);
        assert!(
            lost >= 20,
            "only {lost} answers were lost: the test tests nothing"
        );
        // THEN every barrier is in the tenant's list, complete, and no first ack was taken
        // for a duplicate
        proxy.set_rate(0.0);
        let page = b.list(Filter::All, None, 1000).await.unwrap();
        let mut listed: Vec<_> = page.barriers.iter().map(|l| l.id.clone()).collect();
        listed.sort();
        assert_eq!(listed, ids, "{lost} answers lost");
        let open: Vec<_> = page
            .barriers
            .iter()
            .filter(|l| l.done_ms.is_none())
            .collect();
        assert!(open.is_empty(), "listed as open: {open:?}");
        assert!(
            duplicates.is_empty(),
            "first acks taken for duplicates: {duplicates:?}"
        );
        // AND each continuation was claimed and sent by the last ack
        assert!(
            undispatched.is_empty(),
            "never dispatched: {undispatched:?}"
        );
    }

    /// The queue port over queues of its own (the barriers' continuations go to its work queue).
    async fn queue_port(ep: &str) -> SqsQueues {
        let c = clients(ep).await;
        let (work, _, work_dlq) = make_queue(&c, &unique("work")).await;
        let (events, _, events_dlq) = make_queue(&c, &unique("events")).await;
        SqsQueues::new(
            c.sqs.clone(),
            QueueUrls {
                events,
                work,
                events_dlq: Some(events_dlq),
                work_dlq: Some(work_dlq),
            },
        )
    }

    /// A stack in moto for `deployment` (its JSON) with `files` (key, text) in its scripts
    /// bucket, and the SDK's configuration through a proxy that does what `faults` says.
    async fn stack_behind(
        ep: &str,
        deployment: &str,
        files: impl IntoIterator<Item = (String, String)>,
        faults: Faults,
    ) -> (Stack, Proxy, SdkConfig) {
        let d = Deployment::from_json("deployment.json", deployment).unwrap();
        let stack = native_tests::aws_env::stack(ep, &d).await;
        for (key, body) in files {
            stack
                .backends
                .objects
                .put(
                    &stack.config.scripts_bucket,
                    &key,
                    body.into(),
                    PutMode::Overwrite,
                )
                .await
                .unwrap();
        }
        let proxy = Proxy::start(ep, faults).await;
        let sdk = quick_retries(&proxy.endpoint).await;
        (stack, proxy, sdk)
    }

    /// A deployment in moto whose tenant `acme` has a script `get` (`native.db.get`) and a
    /// script `noop` (no backend call), behind a proxy that does what `faults` says
    /// ([`stack_behind`]).
    async fn behind(ep: &str, faults: Faults) -> (Stack, Proxy, SdkConfig) {
        let files = [
            ("acme/config.json", "{}"),
            (
                "acme/scripts/get.luau",
                "function on_invoke(ctx, ev) return native.db.get('p', 'k') end",
            ),
            (
                "acme/scripts/noop.luau",
                "function on_invoke(ctx, ev) return 1 end",
            ),
        ];
        stack_behind(
            ep,
            r#"{ "buckets": { "map": { "In": "acme-in" } } }"#,
            files.map(|(k, v)| (k.to_string(), v.to_string())),
            faults,
        )
        .await
    }

    /// [`behind`] a proxy that holds every request `pick` takes for 30 s.
    async fn held(ep: &str, pick: fn(&Call) -> bool) -> (Stack, Proxy, SdkConfig) {
        let faults = Faults {
            seed: 1,
            rate: 1.0,
            kinds: vec![Fault::Stall],
            stall: Duration::from_secs(30),
            pick: Some(Box::new(pick)),
            once: false,
        };
        behind(ep, faults).await
    }

    /// [`behind`] a proxy that only counts.
    async fn counted(ep: &str) -> (Stack, Proxy, SdkConfig) {
        behind(ep, Faults::all(1, 0.0, Duration::ZERO)).await
    }

    /// `n` HTTP invokes of `script` at once with `key` through `rt`'s router; their statuses.
    async fn invokes(rt: &Arc<Runtime>, script: &str, key: &str, n: usize) -> Vec<u16> {
        use tower::ServiceExt;
        let mut all = tokio::task::JoinSet::new();
        for _ in 0..n {
            let req = axum::http::Request::post(format!("/v1/invoke/{script}"))
                .header("authorization", format!("Bearer {key}"))
                .header("content-type", "application/json")
                .body(axum::body::Body::from("{}"))
                .unwrap();
            let router = native_core::inbound::router(rt.clone());
            all.spawn(async move { router.oneshot(req).await.unwrap().status().as_u16() });
        }
        all.join_all().await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn http_requests_with_one_key_read_the_table_once_a_second_and_a_revocation_lands_within_it(
    ) {
        use native_core::api_keys::GENERATION_EVERY;
        let Some(ep) = endpoint() else { return };
        // GIVEN a function's runtime whose calls are counted by a proxy, a tenant's key, and
        // the function warm (one request served)
        let (stack, proxy, sdk) = counted(&ep).await;
        let key = native_core::api_keys::create(&*stack.backends.kv, "acme", "ci")
            .await
            .unwrap();
        let rt = Arc::new(lambda::runtime_for(&stack.config, &Clients::new(&sdk)));
        assert_eq!(invokes(&rt, "noop", &key.key, 1).await, [200]);
        let before = proxy.seen().calls.len();
        // WHEN requests with the key come 16 at once for 2.5 s
        let start = Instant::now();
        let mut served = 0;
        while start.elapsed() < Duration::from_millis(2500) {
            let got = invokes(&rt, "noop", &key.key, 16).await;
            assert!(got.iter().all(|s| *s == 200), "{got:?}");
            served += got.len();
        }
        let took = start.elapsed();
        // THEN the table was read at most once a second (the keys' generation item), the
        // key's record not at all, and the scripts bucket at most once (its 5 s check)
        let calls = proxy.seen().calls[before..].to_vec();
        let key_reads = calls
            .iter()
            .filter(|(c, asked)| {
                c.op == "GetItem" && (asked.contains(r#""S":"K#"#) || asked.contains(r#""S":"KG#"#))
            })
            .count();
        let seconds = took.as_secs_f64().ceil() as usize;
        assert!(
            (1..=seconds).contains(&key_reads),
            "{key_reads} key reads for {served} requests in {took:?}: {calls:?}"
        );
        let records = calls
            .iter()
            .filter(|(c, asked)| c.op == "GetItem" && asked.contains(r#""S":"K#"#))
            .count();
        assert_eq!(records, 0, "{calls:?}");
        let scripts = calls.iter().filter(|(c, _)| c.service == "s3").count();
        assert!(scripts <= 1, "{calls:?}");
        println!(
            "{served} requests in {took:?}: {} backend calls, {key_reads} of them key reads",
            calls.len()
        );
        // WHEN another process revokes the key
        native_core::api_keys::revoke(&*stack.another().await.kv, "acme", &key.id)
            .await
            .unwrap();
        let revoked = Instant::now();
        // THEN this one refuses it within GENERATION_EVERY (and the emulator's answer time)
        loop {
            let got = invokes(&rt, "noop", &key.key, 1).await;
            if got == [401] {
                break;
            }
            assert_eq!(got, [200]);
            assert!(
                revoked.elapsed() < GENERATION_EVERY + Duration::from_millis(500),
                "a revoked key still accepted {:?} after its revocation",
                revoked.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_scripts_bucket_is_read_once_for_a_cold_burst_and_once_per_check_for_a_warm_one() {
        use native_core::aws::{upload_tenant, S3Objects, S3Tenants};
        use native_core::tenants::TenantSource;
        let Some(ep) = endpoint() else { return };
        // GIVEN tenant acme deployed as `native deploy` does (its deploy marker written), and a
        // cold process's tenants, read through a counting proxy and checked every 500 ms
        let (stack, proxy, sdk) = counted(&ep).await;
        let bucket = stack.config.scripts_bucket.clone();
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("acme");
        std::fs::create_dir_all(folder.join("scripts")).unwrap();
        std::fs::write(folder.join("config.json"), "{}").unwrap();
        std::fs::write(folder.join("scripts/a.luau"), "return 1").unwrap();
        std::fs::write(folder.join("scripts/b.luau"), "return 2").unwrap();
        upload_tenant(&*stack.backends.objects, &bucket, "acme", &folder)
            .await
            .unwrap();
        let recheck = Duration::from_millis(500);
        let objects = Arc::new(S3Objects::new(Clients::new(&sdk).s3));
        let tenants = Arc::new(S3Tenants::new(objects, &bucket, recheck));
        let burst = |n: usize| {
            let mut all = tokio::task::JoinSet::new();
            for _ in 0..n {
                let tenants = tenants.clone();
                all.spawn(async move { tenants.load("acme").await.unwrap() });
            }
            all.join_all()
        };
        let s3 = |from: usize| -> Vec<String> {
            let seen = proxy.seen();
            seen.calls[from..]
                .iter()
                .filter(|(c, _)| c.service == "s3")
                .map(|(_, asked)| asked.clone())
                .collect()
        };
        // WHEN 64 requests for it arrive at once
        let cold = burst(64).await;
        // THEN it is loaded once: the marker, one listing, its three files
        assert!(cold.iter().all(|t| Arc::ptr_eq(t, &cold[0])));
        let calls = s3(0);
        let count =
            |calls: &[String], what: &str| calls.iter().filter(|c| c.contains(what)).count();
        assert_eq!(
            (
                calls.len(),
                count(&calls, "HEAD "),
                count(&calls, "list-type=2"),
                count(&calls, "acme/scripts/"),
            ),
            (5, 1, 1, 2),
            "{calls:?}"
        );
        // WHEN, its check due, 64 more arrive at once
        tokio::time::sleep(recheck + Duration::from_millis(100)).await;
        let before = proxy.seen().calls.len();
        let warm = burst(64).await;
        // THEN they make one request, the marker's HEAD
        assert!(warm.iter().all(|t| Arc::ptr_eq(t, &cold[0])));
        let calls = s3(before);
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert!(
            calls[0].starts_with("HEAD ") && calls[0].contains(".native"),
            "{calls:?}"
        );
        // WHEN a deploy changes a script
        std::fs::write(folder.join("scripts/b.luau"), "return 3").unwrap();
        upload_tenant(&*stack.backends.objects, &bucket, "acme", &folder)
            .await
            .unwrap();
        let deployed = Instant::now();
        // THEN it is run within the check's interval
        loop {
            let t = tenants.load("acme").await.unwrap();
            if t.scripts["b"].source == "return 3" {
                break;
            }
            assert!(
                deployed.elapsed() < recheck + Duration::from_millis(300),
                "a deploy not seen {:?} after it",
                deployed.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_held_backend_is_unavailable_within_the_deadline_not_the_tenants_limit() {
        let Some(ep) = endpoint() else { return };
        // GIVEN a function whose every DynamoDB read is held for 30 s
        let (stack, proxy, sdk) = held(&ep, |c| c.service == "dynamodb" && c.op == "GetItem").await;
        let rt = lambda::runtime_for(&stack.config, &Clients::new(&sdk));
        // WHEN a script reads an item with 4 s left to the function
        let start = Instant::now();
        let req = InvokeRequest {
            tenant: "acme".into(),
            script: "get".into(),
            event: json!({}),
        };
        let e = lambda::invoke_by(&rt, req, now_ms() as u64 + 4000)
            .await
            .unwrap_err();
        // THEN it fails by the deadline (4 s less the 2 s kept back), as the backend's delay:
        // an HTTP caller gets 503 with Retry-After, not the tenant's 429
        let took = start.elapsed();
        assert!(took < Duration::from_secs(3), "{took:?}");
        let text = e.to_string();
        assert!(text.contains("get.luau:1: backend unavailable: "), "{text}");
        assert!(!text.contains("limit timeout_s"), "{text}");
        let api = native_core::inbound::ApiError::from(e);
        assert_eq!(api.code.status().as_u16(), 503, "{}", api.message);
        assert!(api.retry_after_s.is_some());
        assert!(proxy.seen().count(Fault::Stall) >= 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_route_batch_answers_by_the_functions_deadline_while_s3_holds_its_reads() {
        let Some(ep) = endpoint() else { return };
        // GIVEN a route function whose every S3 HEAD is held for 30 s, and an object event of
        // the tenant acme (its run reads the object's head, and so does its failure's log line)
        let (stack, proxy, sdk) = held(&ep, |c| c.service == "s3" && c.op == "HEAD").await;
        let rt = Arc::new(lambda::runtime_for(&stack.config, &Clients::new(&sdk)));
        let bucket = stack.deployment().real_bucket("In").unwrap().to_string();
        let mut m = lambda::SqsMessage::default();
        m.message_id = Some("m1".into());
        m.body = Some(
            json!({ "Records": [{ "eventName": "ObjectCreated:Put", "s3": {
                "bucket": { "name": bucket }, "object": { "key": "acme/x.json", "size": 1, "eTag": "\"e\"" } } }] })
            .to_string(),
        );
        let mut ev = SqsEvent::default();
        ev.records = vec![m];
        // WHEN the batch comes with 4 s left to the function
        let start = Instant::now();
        let resp = lambda::handle_event_batch_by(&rt, ev, now_ms() as u64 + 4000).await;
        // THEN its answer (the message failed, to be retried) is back before the deadline
        let took = start.elapsed();
        assert!(took < Duration::from_secs(4), "{took:?}");
        assert_eq!(resp.batch_item_failures.len(), 1);
        assert!(proxy.seen().count(Fault::Stall) >= 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_held_assume_role_ends_by_the_invocations_deadline() {
        let Some(ep) = endpoint() else { return };
        // GIVEN a function that scopes each tenant with the tenant role, and STS held 30 s
        let (stack, proxy, sdk) = held(&ep, |c| c.service == "sts").await;
        let scope = Arc::new(native_core::aws::StsTenantScope::new(
            &sdk,
            "arn:aws:iam::123456789012:role/native-TenantRole-TEST",
            &stack.config,
        ));
        let rt = lambda::runtime_for(&stack.config, &Clients::new(&sdk)).with_tenant_scope(scope);
        // WHEN a script is invoked with 4 s left to the function
        let start = Instant::now();
        let req = InvokeRequest {
            tenant: "acme".into(),
            script: "get".into(),
            event: json!({}),
        };
        let e = lambda::invoke_by(&rt, req, now_ms() as u64 + 4000)
            .await
            .unwrap_err();
        // THEN it fails by the deadline (4 s less the 2 s kept back), retryable, saying why
        let took = start.elapsed();
        assert!(took < Duration::from_secs(3), "{took:?}");
        let text = e.to_string();
        assert!(
            text.contains("AssumeRole") && text.contains("retry"),
            "{text}"
        );
        let api = native_core::inbound::ApiError::from(e);
        assert_eq!(api.code.status().as_u16(), 503, "{}", api.message);
        assert!(proxy.seen().count(Fault::Stall) >= 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_api_key_lookup_held_by_the_store_answers_503_in_time() {
        use tower::ServiceExt;
        let Some(ep) = endpoint() else { return };
        // GIVEN a tenant's API key, and a function whose DynamoDB reads are held for 30 s
        let (stack, proxy, sdk) = held(&ep, |c| c.service == "dynamodb" && c.op == "GetItem").await;
        let key = native_core::api_keys::create(&*stack.backends.kv, "acme", "ci")
            .await
            .unwrap();
        let rt = Arc::new(lambda::runtime_for(&stack.config, &Clients::new(&sdk)));
        // WHEN a caller invokes with it
        let req = axum::http::Request::post("/v1/invoke/get")
            .header("authorization", format!("Bearer {}", key.key))
            .header("content-type", "application/json")
            .body(axum::body::Body::from("{}"))
            .unwrap();
        let start = Instant::now();
        let resp = native_core::inbound::router(rt).oneshot(req).await.unwrap();
        // THEN it is told 503, retry, by the lookup's bound, not when the store answers
        let took = start.elapsed();
        assert_eq!(resp.status().as_u16(), 503);
        assert!(resp.headers().contains_key("retry-after"));
        assert!(
            took < native_core::inbound::KEY_LOOKUP_TIMEOUT + MARGIN,
            "{took:?}"
        );
        assert!(proxy.seen().count(Fault::Stall) >= 1);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_rendezvous_wait_ends_at_its_timeout_while_the_store_holds_its_polls() {
        use native_core::rendezvous::{CreateBarrier, Rendezvous, WaitOutcome};
        let Some(ep) = endpoint() else { return };
        // GIVEN a rendezvous barrier, and a table whose reads are held for 30 s once the wait
        // has read it
        let faults = Faults {
            seed: 3,
            rate: 0.0,
            kinds: vec![Fault::Stall],
            stall: Duration::from_secs(30),
            pick: Some(Box::new(|c| c.service == "dynamodb")),
            once: false,
        };
        let (proxy, kv) = kv_behind(&ep, faults).await;
        let queue = queue_port(&ep).await;
        let count = Count::default();
        // A tenant of its own: waits are woken per tenant and barrier name in the process.
        let rdv = Rendezvous::new(&kv, &queue, "stalled", &count);
        rdv.create(CreateBarrier {
            namespace: "default".into(),
            name: "b".into(),
            expected_processes: 2,
            delete_inactive_after_seconds: 3600,
            ..CreateBarrier::default()
        })
        .await
        .unwrap();
        let proxy = Arc::new(proxy);
        let p = proxy.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            p.set_rate(1.0);
        });
        // WHEN a peer waits 3 s for the generation to trip
        let start = Instant::now();
        let (_, outcome) = rdv
            .wait("default", "b", 1, Duration::from_secs(3))
            .await
            .unwrap();
        // THEN it times out at 3 s, not when the store answers
        let took = start.elapsed();
        assert_eq!(outcome, WaitOutcome::TimedOut);
        assert!(took < Duration::from_millis(3500), "{took:?}");
        assert!(proxy.seen().count(Fault::Stall) >= 1);
    }

    // The seed flows through the functions' entry points (`invoke_by`, `handle_event_batch_by`,
    // `handle_work_batch_by`, `runtime::tick` and the inbound router), every kind of fault at
    // 0 %, 5 % and 20 %.

    /// The scripts of the suite's tenant: a claim, a send and its work, a barrier's create,
    /// ack and continuation; seed 000's barrier acked by objects (`ship`, the router, `oack`,
    /// `finalize`); seed 001's jobs (`submit`, `settle`); the rendezvous continuation (`next`);
    /// and reads of what was done.
    const SCRIPTS: &[(&str, &str)] = &[
        (
            "claim",
            "function on_invoke(ctx, ev)
               if native.db.put_if_absent('claims', ev.k, ev.who) then return { ok = true } end
               return { ok = false, holder = native.db.get('claims', ev.k) }
             end",
        ),
        (
            "send",
            "function on_invoke(ctx, ev) native.queue.send('work', { n = ev.n }) return true end",
        ),
        (
            "work",
            "function on_queue(ctx, ev) native.db.put('done', 'n' .. ev.n, true) end",
        ),
        (
            "bar",
            "function on_invoke(ctx, ev)
               return native.barrier.create({ id = ev.id, members = { 'a', 'b', 'c' }, continue_with = 'fin' })
             end",
        ),
        (
            "ack",
            "function on_invoke(ctx, ev) native.barrier.ack(ev.id, ev.m, { ok = true }) return true end",
        ),
        (
            "fin",
            "function on_queue(ctx, ev)
               native.db.put('done', 'fin-' .. ev.barrier, true)
               RAN('fin-' .. ev.barrier)
             end",
        ),
        // Seed 000: the documents go out into In, the partner answers each with an object in
        // Acks, whose notification the router sends to `oack`.
        (
            "ship",
            "function on_invoke(ctx, ev)
               local names = {}
               for i = 1, ev.n do names[i] = 'd' .. i .. '.xml' end
               native.barrier.create({ id = ev.batch, members = names, continue_with = 'finalize', state = { n = ev.n } })
               for _, name in names do native.bucket.In.put(ev.batch .. '/' .. name, '<doc/>') end
               return ev.batch
             end",
        ),
        (
            "router",
            "function on_route(ctx, ev)
               local routed = native.batch.route(ev)
               if routed then
                 return routed.script and { script = routed.script, event = routed.event } or nil
               end
               if ev.bucket == 'Acks' then return 'oack' end
               return nil
             end",
        ),
        (
            "oack",
            "function on_queue(ctx, ev)
               local batch, doc = string.match(ev.key, '^([^/]+)/(.+)%.json$')
               if not batch then return end
               local body = native.json.decode(native.bucket.Acks.get(ev.key) or '{}')
               native.barrier.ack(batch, doc .. '.xml', { ok = body.status == 'ok', error = body.error })
             end",
        ),
        (
            "finalize",
            "function on_queue(ctx, ev)
               local b = native.barrier.hydrate(ev)
               if not b then return end
               local n, failed = 0, 0
               for member, outcome in b:results() do
                 n = n + 1
                 if not outcome.ok then failed = failed + 1 end
               end
               if n ~= b.state.n or failed > 0 then
                 error('barrier ' .. ev.barrier .. ': ' .. n .. ' results of ' .. b.state.n .. ', ' .. failed .. ' failed')
               end
               native.db.put('done', 'obj-' .. ev.barrier, n)
               RAN('obj-' .. ev.barrier)
             end",
        ),
        // Seed 001: a job whose query the partner answers with `n` rows.
        (
            "submit",
            "function on_invoke(ctx, ev)
               local job = native.batch.new({ id = ev.job })
               job:query('rows', 'numbers', { n = ev.n })
               job:state({ n = ev.n })
               job:continue_with('settle')
               return job:submit()
             end",
        ),
        (
            "settle",
            "function on_queue(ctx, ev)
               local job = native.batch.hydrate(ev)
               if not job then return end
               local n = 0
               for row in job:rows('rows') do
                 if row.i ~= n then error('job ' .. ev.job .. ': row ' .. n .. ' is ' .. tostring(row.i)) end
                 n = n + 1
               end
               if n ~= job.state.n then error('job ' .. ev.job .. ': ' .. n .. ' rows of ' .. job.state.n) end
               native.db.put('done', 'job-' .. ev.job, n)
               RAN('job-' .. ev.job)
               return { delete = job:keys() }
             end",
        ),
        (
            "next",
            "function on_queue(ctx, ev)
               local r = ev.rendezvous
               native.db.put('done', 'rdv-' .. r.name .. '-' .. r.generation, true)
               RAN('rdv-' .. r.name .. '-' .. r.generation)
             end",
        ),
        (
            "done",
            "function on_invoke(ctx, ev)
               local r = {}
               for _, k in ipairs(ev.keys) do
                 r[k] = native.db.get('done', k) ~= nil
                 if native.db.get('runs', k .. '#2') ~= nil then r['again-' .. k] = true end
               end
               return r
             end",
        ),
    ];

    /// What the continuations above call last: claims the next free slot `<key>#<n>` of the
    /// `runs` partition, so that a second run of one shows as `<key>#2`.
    const RAN: &str = "local function RAN(key)
      local i = 1
      while not native.db.put_if_absent('runs', key .. '#' .. i, true) do i = i + 1 end
    end
    ";

    /// An invocation's deadline in the suite, and the margin past it that any invocation may
    /// take at most (the SDK's answer to a cancelled call, the log).
    const DEADLINE: Duration = Duration::from_secs(10);
    const MARGIN: Duration = Duration::from_secs(1);

    /// The flows of one run: claims (`put_if_absent`), queue sends, barriers of 3 members
    /// (each created, acked and continued), made by this many callers at once.
    const CLAIMS: u32 = 60;
    const SENDS: u32 = 60;
    const BARRIERS: u32 = 10;
    const CALLERS: usize = 8;
    /// Seed 000: barriers of this many documents, acked by objects, this share of the acks
    /// written twice (two notifications).
    const OBJECT_BARRIERS: u32 = 2;
    const DOCUMENTS: u32 = 20;
    const TWICE: f64 = 0.3;
    /// Seed 001: jobs submitted over the HTTP API, answered with up to this many rows.
    const JOBS: u32 = 8;
    const ROWS: u32 = 12;
    /// Seed 003 over the HTTP API: barriers x peers x generations.
    const RENDEZVOUS: u32 = 3;
    const PEERS: u32 = 4;
    const GENERATIONS: u64 = 4;
    /// How long a stalled request is held before it is forwarded.
    const STALL: Duration = Duration::from_millis(700);

    /// What a run of the seed flows found.
    #[derive(Debug, Default)]
    struct Report {
        invocations: usize,
        failed: usize,
        http_calls: usize,
        http_retryable: usize,
        failed_messages: usize,
        false_claims: Vec<String>,
        late: Vec<String>,
        unreadable: Vec<String>,
        wrong: Vec<String>,
        lost_sends: Vec<u32>,
        lost_objects: Vec<String>,
        lost_jobs: Vec<String>,
        unlisted: Vec<String>,
        not_continued: Vec<String>,
        continued_again: Vec<String>,
        dead_letters: usize,
    }

    /// Internal names and dumps that a caller must never read.
    fn unreadable(message: &str) -> bool {
        [
            "Error {",
            "DispatchFailure(",
            "ConnectorError",
            "ServiceError(",
            "b#acme",
            "d#acme",
            "r#acme",
            "R#acme",
            "K#",
            "raw: Response",
        ]
        .iter()
        .any(|bad| message.contains(bad))
    }

    /// What the HTTP API answered one call.
    enum Answer {
        /// 200, and its body.
        Ok(Value),
        /// 503 `unavailable` with `Retry-After`: try again.
        Retry,
        /// Anything else: its status and body.
        Other(u16, Value),
    }

    struct Suite {
        stack: Stack,
        rt: Arc<Runtime>,
        /// What the functions logged.
        log: Arc<MemLog>,
        /// The tenant's API key.
        key: String,
        report: std::sync::Mutex<Report>,
    }

    impl Suite {
        /// Invokes `script` until it succeeds (at most 8 times, as a caller retries a
        /// retryable failure), checking each attempt's time and message; its answer, if any.
        async fn invoke(&self, script: &str, event: impl Fn(u32) -> Value) -> Option<(u32, Value)> {
            for attempt in 0..8 {
                let req = InvokeRequest {
                    tenant: "acme".into(),
                    script: script.into(),
                    event: event(attempt),
                };
                let start = Instant::now();
                let deadline_ms = (now_ms() as u64) + DEADLINE.as_millis() as u64;
                let out = lambda::invoke_by(&self.rt, req, deadline_ms).await;
                let took = start.elapsed();
                let mut r = self.report.lock().unwrap();
                r.invocations += 1;
                if took > DEADLINE + MARGIN {
                    let what = match &out {
                        Ok(_) => "answered".to_string(),
                        Err(e) => e.to_string(),
                    };
                    r.late.push(format!("{script} took {took:?}: {what}"));
                }
                match out {
                    Ok(v) => return Some((attempt, v)),
                    Err(e) => {
                        r.failed += 1;
                        let text = e.to_string();
                        if unreadable(&text) {
                            r.unreadable.push(text.clone());
                        }
                        // What an HTTP caller would be told: retry (503 with Retry-After),
                        // never the tenant's limit or a failure of its own.
                        let api = native_core::inbound::ApiError::from(e);
                        if api.code.status().as_u16() != 503 || api.retry_after_s.is_none() {
                            r.wrong
                                .push(format!("{script}: {} {text}", api.code.status().as_u16()));
                        }
                    }
                }
            }
            None
        }

        /// One call to the HTTP API (the inbound router over the suite's runtime) with the
        /// tenant's key and a 10 s deadline (`Connect-Timeout-Ms`, which `/v1/invoke` leaves
        /// to the tenant's `timeout_s` of 10 s): what it answered, its time and message
        /// checked. A failure that is 503 `unavailable` with `Retry-After`, or 504 at the
        /// caller's deadline, is `Retry`; any other is `Other` (the caller decides whether
        /// that is right).
        async fn http(&self, path: &str, body: &Value) -> Answer {
            use http_body_util::BodyExt;
            use tower::ServiceExt;
            let req = axum::http::Request::post(path)
                .header("authorization", format!("Bearer {}", self.key))
                .header("content-type", "application/json")
                .header("connect-timeout-ms", DEADLINE.as_millis().to_string())
                .body(axum::body::Body::from(body.to_string()))
                .unwrap();
            let start = Instant::now();
            let resp = native_core::inbound::router(self.rt.clone())
                .oneshot(req)
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let retry_after = resp.headers().contains_key("retry-after");
            let bytes = resp.into_body().collect().await.unwrap().to_bytes();
            let took = start.elapsed();
            let v: Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
            let mut r = self.report.lock().unwrap();
            r.http_calls += 1;
            if took > DEADLINE + MARGIN {
                r.late.push(format!("{path} took {took:?}: {status} {v}"));
            }
            if status == 200 {
                return Answer::Ok(v);
            }
            let message = v["message"].as_str().unwrap_or_default();
            if unreadable(message) {
                r.unreadable.push(message.to_string());
            }
            // The backend unavailable (503, Retry-After), or the caller's own deadline passed
            // (504, the call ended at it): both clean, and a retry of these calls is safe.
            let unavailable = status == 503 && retry_after && v["code"] == "unavailable";
            if unavailable || (status == 504 && v["code"] == "deadline_exceeded") {
                r.http_retryable += 1;
                return Answer::Retry;
            }
            Answer::Other(status, v)
        }

        /// [`Suite::http`] until it answers other than "retry" (for at most 75 s, a short
        /// pause between); `None` when every attempt was told to retry. (A repeated arrival
        /// is told to retry for as long as the call that tripped its generation holds the
        /// continuation's claim: a minute, should that call have ended at its deadline
        /// between its commit and the continuation's send.)
        async fn http_until(&self, path: &str, body: &Value) -> Option<Answer> {
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs(75) {
                match self.http(path, body).await {
                    Answer::Retry => tokio::time::sleep(Duration::from_millis(100)).await,
                    other => return Some(other),
                }
            }
            None
        }

        /// Notes an answer that is neither right nor a clean retryable error.
        fn wrong(&self, what: String) {
            self.report.lock().unwrap().wrong.push(what);
        }

        /// Takes both queues' messages to the `route` and `queue` functions as Lambda does,
        /// deleting those they answered as done, until `want` says it has what it waits for
        /// or `limit` passed; a dispatch guard's tick runs (five minutes ahead) when work is
        /// missing.
        async fn drain(&self, limit: Duration, want: impl AsyncFnMut() -> bool) {
            let mut want = want;
            let start = Instant::now();
            let mut idle = 0;
            while start.elapsed() < limit {
                let events = self.stack.config.events_queue_url.clone();
                let work = self.stack.config.work_queue_url.clone();
                let handled = self.batch(&events, true).await + self.batch(&work, false).await;
                if handled > 0 {
                    continue;
                }
                idle += 1;
                if want().await {
                    return;
                }
                if idle % 5 == 0 {
                    let b = &self.rt.services.backends;
                    let mut opts = TickOptions::local();
                    opts.now_ms += 5 * 60 * 1000;
                    // A failed tick is tried again at the next idle round.
                    let _ = runtime::tick(&*b.kv, &*b.queue, &*b.objects, opts).await;
                }
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }

        /// One batch of the queue at `url` through its function (`events`: the route
        /// function): how many messages it had.
        async fn batch(&self, url: &str, events: bool) -> usize {
            let sqs = &self.stack.clients.sqs;
            let out = sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .visibility_timeout(2)
                .message_system_attribute_names(
                    sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
                )
                .send()
                .await
                .unwrap();
            if out.messages().is_empty() {
                return 0;
            }
            let mut ev = SqsEvent::default();
            ev.records = out.messages().iter().map(lambda_record).collect();
            let deadline_ms = (now_ms() as u64) + DEADLINE.as_millis() as u64;
            let start = Instant::now();
            let resp = if events {
                lambda::handle_event_batch_by(&self.rt, ev.clone(), deadline_ms).await
            } else {
                lambda::handle_work_batch_by(&self.rt, ev.clone(), deadline_ms).await
            };
            if start.elapsed() > DEADLINE + MARGIN {
                self.report.lock().unwrap().late.push(format!(
                    "{} batch: {:?}",
                    if events { "route" } else { "queue" },
                    start.elapsed()
                ));
            }
            let failed: Vec<_> = resp
                .batch_item_failures
                .iter()
                .map(|f| f.item_identifier.clone())
                .collect();
            self.report.lock().unwrap().failed_messages += failed.len();
            for m in &ev.records {
                if failed.contains(m.message_id.as_ref().unwrap()) {
                    continue;
                }
                sqs.delete_message()
                    .queue_url(url)
                    .receipt_handle(m.receipt_handle.clone().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
            ev.records.len()
        }

        /// Which of `keys` the `done` partition has, read with the faults off, and of those
        /// the continuations that ran more than once (`again-<key>`).
        async fn done(&self, keys: &[String]) -> Vec<String> {
            let mut have = Vec::new();
            // (Two reads a key: 20 keys an invocation end well within its 10 s.)
            for chunk in keys.chunks(20) {
                let req = InvokeRequest {
                    tenant: "acme".into(),
                    script: "done".into(),
                    event: json!({ "keys": chunk }),
                };
                let got = lambda::invoke(&self.rt, req).await.unwrap();
                for k in chunk {
                    for k in [k.clone(), format!("again-{k}")] {
                        if got[k.as_str()] == json!(true) {
                            have.push(k);
                        }
                    }
                }
            }
            have
        }
    }

    /// The seed's deployment: data buckets In and Acks, and a batch bucket.
    const SEED_DEPLOYMENT: &str = r#"{
      "buckets": { "map": { "In": "acme-in", "Acks": "acme-acks" } },
      "batch": { "bucket": "partner-batch", "prefix": "tenants/" }
    }"#;

    /// Runs the seed flows behind a proxy that meets `rate` of the requests with a fault of
    /// each kind (stalls of [`STALL`]), and reports what held.
    async fn seed_flows(ep: &str, seed: u64, rate: f64) -> (Report, u64, usize) {
        let config = json!({ "queue": true, "batch": true, "limits": { "timeout_s": 10 } });
        let files = std::iter::once(("acme/config.json".to_string(), config.to_string())).chain(
            SCRIPTS.iter().map(|(n, src)| {
                let src = if src.contains("RAN(") {
                    format!("{RAN}{src}")
                } else {
                    src.to_string()
                };
                (format!("acme/scripts/{n}.luau"), src)
            }),
        );
        let faults = Faults::all(seed, rate, STALL);
        let (stack, proxy, sdk) = stack_behind(ep, SEED_DEPLOYMENT, files, faults).await;
        let key = native_core::api_keys::create(&*stack.backends.kv, "acme", "faults")
            .await
            .unwrap()
            .key;
        let log = Arc::new(MemLog::default());
        let rt =
            Arc::new(lambda::runtime_for(&stack.config, &Clients::new(&sdk)).with_log(log.clone()));
        let suite = Arc::new(Suite {
            stack,
            rt,
            log,
            key,
            report: Default::default(),
        });
        let run = format!("{seed:x}");
        let s = &suite;
        // The claims, then the sends, then the barriers, [`CALLERS`] at once, each a task of
        // its own as each Lambda request is.
        let claims = in_tasks(0..CLAIMS, |i| {
            let (s, run) = (s.clone(), run.clone());
            async move {
                let got = s
                    .invoke(
                        "claim",
                        |a| json!({ "k": format!("{run}-{i}"), "who": format!("{run}-{i}-{a}") }),
                    )
                    .await;
                if let Some((attempt, v)) = got {
                    if v["ok"] == json!(false) {
                        // "Taken" by this very call: its own write, its answer lost. (Taken by
                        // an earlier attempt that failed is another caller's, as it should.)
                        let holder = v["holder"].as_str().unwrap_or("");
                        if holder == format!("{run}-{i}-{attempt}") {
                            s.report
                                .lock()
                                .unwrap()
                                .false_claims
                                .push(format!("{i}: {holder}"));
                        }
                    }
                }
            }
        });
        claims.await;
        let mut sent = Vec::new();
        let sends = in_tasks(0..SENDS, |n| {
            let s = s.clone();
            async move { s.invoke("send", |_| json!({ "n": n })).await.map(|_| n) }
        });
        for n in sends.await.into_iter().flatten() {
            sent.push(n);
        }
        let bars = in_tasks(0..BARRIERS, |i| {
            let (s, run) = (s.clone(), run.clone());
            async move {
                let id = format!("b{run}-{i}");
                s.invoke("bar", |_| json!({ "id": id })).await?;
                for m in ["a", "b", "c"] {
                    s.invoke("ack", |_| json!({ "id": id, "m": m })).await?;
                }
                Some(id)
            }
        });
        let barriers: Vec<String> = bars.await.into_iter().flatten().collect();
        let shipped = ship_documents(s, &run, seed).await;
        let jobs = submit_jobs(s, &run).await;
        let trips = rendezvous(s, &run).await;
        let mut want: Vec<String> = sent.iter().map(|n| format!("n{n}")).collect();
        let continuations: Vec<String> = (barriers.iter().map(|id| format!("fin-{id}")))
            .chain(shipped.iter().map(|id| format!("obj-{id}")))
            .chain(jobs.iter().map(|id| format!("job-{id}")))
            .chain(trips)
            .collect();
        want.extend(continuations.iter().cloned());
        suite
            .drain(Duration::from_secs(60), async || {
                proxy.set_rate(0.0);
                let have = s.done(&want).await;
                proxy.set_rate(rate);
                want.iter().all(|k| have.contains(k))
            })
            .await;
        proxy.set_rate(0.0);
        // Late duplicates (a continuation sent twice) are handled too before they are counted.
        suite.drain(Duration::from_secs(3), async || false).await;
        let have = suite.done(&want).await;
        let mut r = std::mem::take(&mut *suite.report.lock().unwrap());
        r.lost_sends = sent
            .iter()
            .copied()
            .filter(|n| !have.contains(&format!("n{n}")))
            .collect();
        r.not_continued = continuations
            .iter()
            .filter(|k| !have.contains(k))
            .cloned()
            .collect();
        r.continued_again = have
            .iter()
            .filter_map(|k| k.strip_prefix("again-"))
            .map(str::to_string)
            .collect();
        let count = Count::default();
        let listed = barriers_of(
            &*suite.stack.backends.kv,
            &*suite.stack.backends.queue,
            &count,
        )
        .list(Filter::All, None, 1000)
        .await
        .unwrap();
        r.unlisted = barriers
            .iter()
            .chain(&shipped)
            .filter(|id| !listed.barriers.iter().any(|l| &l.id == *id))
            .cloned()
            .collect();
        for dlq in [
            suite.stack.config.work_dlq_url.clone().unwrap(),
            suite.stack.config.events_dlq_url.clone().unwrap(),
        ] {
            let attrs = suite
                .stack
                .clients
                .sqs
                .get_queue_attributes()
                .queue_url(dlq)
                .attribute_names(sqs::types::QueueAttributeName::ApproximateNumberOfMessages)
                .send()
                .await
                .unwrap();
            r.dead_letters += attrs.attributes().unwrap()
                [&sqs::types::QueueAttributeName::ApproximateNumberOfMessages]
                .parse::<usize>()
                .unwrap();
        }
        // What the functions logged of the messages that failed reads as well as the answers.
        for rec in suite.log.0.lock().unwrap().iter() {
            if let Some(e) = rec["error"].as_str().filter(|e| unreadable(e)) {
                r.unreadable.push(e.to_string());
            }
        }
        let seen = proxy.seen();
        let mut by_call = std::collections::BTreeMap::<String, usize>::new();
        for (kind, call) in &seen.faults {
            *by_call
                .entry(format!("{kind:?} {} {}", call.service, call.op))
                .or_default() += 1;
        }
        let mut errors = std::collections::BTreeMap::<String, usize>::new();
        for rec in suite.log.0.lock().unwrap().iter() {
            if let Some(e) = rec["error"].as_str() {
                *errors
                    .entry(native_core::text::cut_text(e.to_string(), 120))
                    .or_default() += 1;
            }
        }
        eprintln!("seed {seed}: faults by call: {by_call:?}; messages failed with: {errors:?}");
        (r, seen.requests, seen.faults.len())
    }

    /// Seed 000: `ship` sends out barriers of [`DOCUMENTS`] documents; the partner (outside
    /// the proxy, as it is outside the function) lists what arrived in In and answers each
    /// with an object in Acks, [`TWICE`] of them written twice. The barriers shipped.
    async fn ship_documents(s: &Arc<Suite>, run: &str, seed: u64) -> Vec<String> {
        let ships = in_tasks(0..OBJECT_BARRIERS, |i| {
            let (s, id) = (s.clone(), format!("o{run}-{i}"));
            async move {
                s.invoke("ship", |_| json!({ "batch": id, "n": DOCUMENTS }))
                    .await
                    .map(|_| id)
            }
        });
        let shipped: Vec<String> = ships.await.into_iter().flatten().collect();
        let d = s.stack.deployment();
        let (input, acks) = (d.real_bucket("In").unwrap(), d.real_bucket("Acks").unwrap());
        let objects = &s.stack.backends.objects;
        let mut draw = seed;
        for id in &shipped {
            let folder = d.full_key("In", "acme", &format!("{id}/"));
            let page = objects.list(input, &folder, None, 1000).await.unwrap();
            let docs: Vec<&str> = page
                .objects
                .iter()
                .filter_map(|o| o.key.strip_prefix(&folder)?.strip_suffix(".xml"))
                .collect();
            // Every document of an acknowledged `ship` is there.
            for i in 1..=DOCUMENTS {
                if !docs.contains(&format!("d{i}").as_str()) {
                    s.report
                        .lock()
                        .unwrap()
                        .lost_objects
                        .push(format!("{id}/d{i}.xml"));
                }
            }
            for doc in docs {
                let key = d.full_key("Acks", "acme", &format!("{id}/{doc}.json"));
                draw = splitmix(draw);
                let times = if ((draw >> 11) as f64 / (1u64 << 53) as f64) < TWICE {
                    2
                } else {
                    1
                };
                for _ in 0..times {
                    s.stack
                        .clients
                        .s3
                        .put_object()
                        .bucket(acks)
                        .key(&key)
                        .body(br#"{"status":"ok"}"#.to_vec().into())
                        .send()
                        .await
                        .unwrap();
                }
            }
        }
        shipped
    }

    /// The next number of a seeded sequence (splitmix64).
    fn splitmix(x: u64) -> u64 {
        let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Seed 001: jobs submitted over the HTTP API (`POST /v1/invoke/submit`), each answered
    /// by the partner (`native partner`'s code, outside the proxy) with its rows. The jobs
    /// submitted.
    async fn submit_jobs(s: &Arc<Suite>, run: &str) -> Vec<String> {
        use native_core::batch::partner::{self, Options, Source};
        let submits = in_tasks(0..JOBS, |i| {
            let (s, job) = (s.clone(), format!("j{run}-{i}"));
            async move {
                let body = json!({ "job": job, "n": 1 + i % ROWS });
                match s.http_until("/v1/invoke/submit", &body).await? {
                    Answer::Ok(v) if v == json!(job) => Some(job),
                    Answer::Ok(v) => {
                        s.wrong(format!("submit {job} answered {v}"));
                        None
                    }
                    Answer::Other(status, v) => {
                        s.wrong(format!("submit {job}: {status} {v}"));
                        None
                    }
                    Answer::Retry => None,
                }
            }
        });
        let jobs: Vec<String> = submits.await.into_iter().flatten().collect();
        let objects = &*s.stack.backends.objects;
        let d = s.stack.deployment();
        let pending = partner::pending(objects, d, "acme").await.unwrap();
        for job in &jobs {
            let Some(req) = pending.iter().find(|r| &r.job == job) else {
                s.report.lock().unwrap().lost_jobs.push(job.clone());
                continue;
            };
            let n = req.queries[0].params["n"].as_u64().unwrap();
            let rows: String = (0..n).map(|i| format!("{{\"i\":{i}}}\n")).collect();
            let source = Source::Given([("rows".to_string(), Ok(rows))].into());
            partner::answer(objects, d, "acme", req, &Options::new(source))
                .await
                .unwrap();
        }
        jobs
    }

    /// Seed 003 over the HTTP API (Grackle's JSON): [`RENDEZVOUS`] barriers, each with
    /// [`PEERS`] peers that arrive and wait through [`GENERATIONS`] generations, every answer
    /// checked. The `done` keys of the trips' continuations.
    async fn rendezvous(s: &Arc<Suite>, run: &str) -> Vec<String> {
        const API: &str = "/com.evrblk.grackle.v1beta.GrackleApi/";
        let mut peers = Vec::new();
        let mut names = Vec::new();
        for b in 0..RENDEZVOUS {
            let name = format!("r{run}-{b}");
            let create = json!({
                "namespace_name": "default", "barrier_name": name, "expected_processes": PEERS,
                "delete_inactive_after_seconds": 3600, "continue_with": "next",
            });
            match s.http_until(&format!("{API}CreateBarrier"), &create).await {
                Some(Answer::Ok(v)) if v["barrier"]["generation"] == 1 => {}
                // A create whose answer was lost, retried: the barrier is there.
                Some(Answer::Other(409, _)) => {}
                Some(Answer::Ok(v)) => s.wrong(format!("create {name} answered {v}")),
                Some(Answer::Other(status, v)) => s.wrong(format!("create {name}: {status} {v}")),
                _ => continue,
            }
            names.push(name.clone());
            for p in 0..PEERS {
                let (s, name) = (s.clone(), name.clone());
                peers.push(tokio::spawn(async move { peer(&s, &name, p).await }));
            }
        }
        for p in peers {
            p.await.unwrap();
        }
        // Each barrier is at its last generation, with everyone's arrival at each before.
        for name in &names {
            let b = json!({ "namespace_name": "default", "barrier_name": name });
            match s.http_until(&format!("{API}GetBarrier"), &b).await {
                Some(Answer::Ok(v)) => {
                    let g = &v["barrier"]["generation"];
                    if g != &json!(GENERATIONS + 1) {
                        s.wrong(format!("{name} ends at generation {g}"));
                    }
                }
                _ => s.wrong(format!("{name}: no answer to GetBarrier")),
            }
            for g in 1..=GENERATIONS {
                let list = json!({ "namespace_name": "default", "barrier_name": name,
                    "generation": g, "limit": 10 });
                match s
                    .http_until(&format!("{API}ListBarrierParticipants"), &list)
                    .await
                {
                    Some(Answer::Ok(v))
                        if v["participants"].as_array().map(Vec::len) == Some(PEERS as usize) => {}
                    other => s.wrong(format!(
                        "{name} generation {g}: participants {}",
                        match other {
                            Some(Answer::Ok(v)) | Some(Answer::Other(_, v)) => v.to_string(),
                            _ => "never answered".into(),
                        }
                    )),
                }
            }
        }
        names
            .iter()
            .flat_map(|n| (1..=GENERATIONS).map(move |g| format!("rdv-{n}-{g}")))
            .collect()
    }

    /// One peer of a rendezvous barrier: at each generation it arrives (again, while told to
    /// retry), then waits 3 s at a time until the generation trips.
    async fn peer(s: &Suite, name: &str, p: u32) {
        const API: &str = "/com.evrblk.grackle.v1beta.GrackleApi/";
        let process = format!("p{p}");
        for g in 1..=GENERATIONS {
            let arrive = json!({ "namespace_name": "default", "barrier_name": name,
                "process_id": process, "expected_generation": g });
            match s
                .http_until(&format!("{API}ArriveAtBarrier"), &arrive)
                .await
            {
                Some(Answer::Ok(v)) => {
                    let (all, at) = (&v["all_arrived"], v["barrier"]["generation"].as_u64());
                    let right = match at {
                        Some(at) => (all == true && at > g) || (all == false && at == g),
                        None => false,
                    };
                    if !right {
                        s.wrong(format!("{name}/{process} arriving at {g}: {v}"));
                    }
                }
                Some(Answer::Other(status, v)) => {
                    s.wrong(format!("{name}/{process} arriving at {g}: {status} {v}"));
                    return;
                }
                _ => {
                    s.wrong(format!("{name}/{process} never arrived at {g}"));
                    return;
                }
            }
            let wait = json!({ "namespace_name": "default", "barrier_name": name,
                "expected_generation": g, "timeout_seconds": 3 });
            let start = Instant::now();
            loop {
                if start.elapsed() > Duration::from_secs(40) {
                    s.wrong(format!("{name}/{process}: generation {g} never tripped"));
                    return;
                }
                match s.http(&format!("{API}WaitAtBarrier"), &wait).await {
                    Answer::Ok(v) if v["outcome"] == "BARRIER_WAIT_OUTCOME_TRIPPED" => break,
                    Answer::Ok(v) if v["outcome"] == "BARRIER_WAIT_OUTCOME_TIMED_OUT" => {}
                    Answer::Retry => tokio::time::sleep(Duration::from_millis(100)).await,
                    Answer::Ok(v) | Answer::Other(_, v) => {
                        s.wrong(format!("{name}/{process} waiting at {g}: {v}"));
                        return;
                    }
                }
            }
        }
    }

    /// Runs `f` for each of `items` in a task of its own, [`CALLERS`] at a time; the results
    /// in order.
    async fn in_tasks<I, F, Fut, T>(items: I, f: F) -> Vec<T>
    where
        I: IntoIterator,
        F: Fn(I::Item) -> Fut,
        Fut: std::future::Future<Output = T> + Send + 'static,
        T: Send + 'static,
    {
        let mut out = Vec::new();
        let mut items = items.into_iter().peekable();
        while items.peek().is_some() {
            let wave: Vec<_> = items
                .by_ref()
                .take(CALLERS)
                .map(|i| tokio::spawn(f(i)))
                .collect();
            for task in wave {
                out.push(task.await.unwrap());
            }
        }
        out
    }

    async fn seed_flows_hold(rate: f64, seed: u64) {
        let Some(ep) = endpoint() else { return };
        let start = Instant::now();
        let (r, requests, faults) = seed_flows(&ep, seed, rate).await;
        let run = format!("{:.0} % faults (seed {seed})", rate * 100.0);
        eprintln!(
            "{run}: {faults} of {requests} requests met a fault; {} invocations, {} failed and were retried; {} HTTP calls, {} told to retry; {} messages failed and were retried; {:?}",
            r.invocations,
            r.failed,
            r.http_calls,
            r.http_retryable,
            r.failed_messages,
            start.elapsed()
        );
        assert!(rate == 0.0 || faults > 0, "{run}: no fault was injected");
        let problems: Vec<String> = [
            (
                "claims answered taken for their own write",
                format!("{:?}", r.false_claims),
                r.false_claims.is_empty(),
            ),
            (
                "acknowledged sends lost",
                format!("{:?}", r.lost_sends),
                r.lost_sends.is_empty(),
            ),
            (
                "acknowledged documents lost",
                format!("{:?}", r.lost_objects),
                r.lost_objects.is_empty(),
            ),
            (
                "acknowledged jobs lost",
                format!("{:?}", r.lost_jobs),
                r.lost_jobs.is_empty(),
            ),
            (
                "barriers not listed",
                format!("{:?}", r.unlisted),
                r.unlisted.is_empty(),
            ),
            (
                "never continued",
                format!("{:?}", r.not_continued),
                r.not_continued.is_empty(),
            ),
            (
                "continued more than once",
                format!("{:?}", r.continued_again),
                r.continued_again.is_empty(),
            ),
            (
                &format!("past the deadline plus {MARGIN:?}"),
                format!("{:?}", r.late),
                r.late.is_empty(),
            ),
            (
                "messages with dumps or internal names",
                format!("{:?}", r.unreadable),
                r.unreadable.is_empty(),
            ),
            (
                "answers neither right nor retryable",
                format!("{:?}", r.wrong),
                r.wrong.is_empty(),
            ),
            (
                "dead letters",
                r.dead_letters.to_string(),
                r.dead_letters == 0,
            ),
        ]
        .into_iter()
        .filter(|(_, _, ok)| !ok)
        .map(|(what, detail, _)| format!("{what}: {detail}"))
        .collect();
        assert!(problems.is_empty(), "{run}:\n{}", problems.join("\n"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_seed_flows_hold_without_faults() {
        seed_flows_hold(0.0, 0).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_seed_flows_hold_at_5_percent_faults() {
        seed_flows_hold(0.05, 5).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_seed_flows_hold_at_20_percent_faults() {
        seed_flows_hold(0.20, 20).await;
    }
}
