//! The AWS backend behind a fault-injecting proxy (`fault_proxy`): throttling in each service's
//! format, server errors, connections reset before and after the request reached the emulator,
//! stalls. What must hold whatever the network does: a write whose answer was lost is still the
//! caller's own (a claim never answers "taken" for itself), and a barrier whose create met a
//! fault is still listed.
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

    /// A deployment in moto whose tenant `acme` has a script `get` (`native.db.get`), and the
    /// SDK's configuration through a proxy that holds every request `pick` takes for 30 s.
    async fn held(ep: &str, pick: fn(&Call) -> bool) -> (Stack, Proxy, SdkConfig) {
        let d =
            Deployment::from_json("deployment.json", r#"{ "buckets": { "map": {} } }"#).unwrap();
        let stack = native_tests::aws_env::stack(ep, &d).await;
        for (key, body) in [
            ("acme/config.json", "{}"),
            (
                "acme/scripts/get.luau",
                "function on_invoke(ctx, ev) return native.db.get('p', 'k') end",
            ),
        ] {
            stack
                .backends
                .objects
                .put(
                    &stack.config.scripts_bucket,
                    key,
                    body.into(),
                    PutMode::Overwrite,
                )
                .await
                .unwrap();
        }
        let proxy = Proxy::start(
            ep,
            Faults {
                seed: 1,
                rate: 1.0,
                kinds: vec![Fault::Stall],
                stall: Duration::from_secs(30),
                pick: Some(Box::new(pick)),
                once: false,
            },
        )
        .await;
        let sdk = quick_retries(&proxy.endpoint).await;
        (stack, proxy, sdk)
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

    // The seed flows through the functions' entry points, every kind of fault at 5 % and 20 %.

    /// The scripts of the suite's tenant: a claim, a send and its work, a barrier's create,
    /// ack and continuation, and reads of what was done.
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
            "function on_queue(ctx, ev) native.db.put('done', 'fin-' .. ev.barrier, true) end",
        ),
        (
            "done",
            "function on_invoke(ctx, ev)
               local r = {}
               for _, k in ipairs(ev.keys) do r[k] = native.db.get('done', k) ~= nil end
               return r
             end",
        ),
    ];

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
    /// How long a stalled request is held before it is forwarded.
    const STALL: Duration = Duration::from_millis(700);

    /// What a run of the seed flows found.
    #[derive(Debug, Default)]
    struct Report {
        invocations: usize,
        failed: usize,
        false_claims: Vec<String>,
        late: Vec<String>,
        unreadable: Vec<String>,
        lost_sends: Vec<u32>,
        unlisted: Vec<String>,
        not_continued: Vec<String>,
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
            "K#",
            "raw: Response",
        ]
        .iter()
        .any(|bad| message.contains(bad))
    }

    struct Suite {
        stack: Stack,
        rt: Arc<Runtime>,
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
                            r.unreadable.push(text);
                        }
                    }
                }
            }
            None
        }

        /// Takes the work queue's messages to the `queue` function as Lambda does, deleting
        /// those it answered as done, until `want` says it has what it waits for or `limit`
        /// passed; a dispatch guard's tick runs (five minutes ahead) when work is missing.
        async fn drain(&self, limit: Duration, want: impl AsyncFnMut() -> bool) {
            let mut want = want;
            let sqs = &self.stack.clients.sqs;
            let url = self.stack.config.work_queue_url.clone();
            let start = Instant::now();
            let mut idle = 0;
            while start.elapsed() < limit {
                let out = sqs
                    .receive_message()
                    .queue_url(&url)
                    .max_number_of_messages(10)
                    .visibility_timeout(2)
                    .message_system_attribute_names(
                        sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
                    )
                    .send()
                    .await
                    .unwrap();
                if out.messages().is_empty() {
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
                    continue;
                }
                let mut ev = SqsEvent::default();
                ev.records = out.messages().iter().map(lambda_record).collect();
                let deadline_ms = (now_ms() as u64) + DEADLINE.as_millis() as u64;
                let start = Instant::now();
                let resp = lambda::handle_work_batch_by(&self.rt, ev.clone(), deadline_ms).await;
                if start.elapsed() > DEADLINE + MARGIN {
                    self.report
                        .lock()
                        .unwrap()
                        .late
                        .push(format!("work batch: {:?}", start.elapsed()));
                }
                let failed: Vec<_> = resp
                    .batch_item_failures
                    .iter()
                    .map(|f| f.item_identifier.clone())
                    .collect();
                for m in &ev.records {
                    if !failed.contains(m.message_id.as_ref().unwrap()) {
                        sqs.delete_message()
                            .queue_url(&url)
                            .receipt_handle(m.receipt_handle.clone().unwrap())
                            .send()
                            .await
                            .unwrap();
                    }
                }
            }
        }

        /// Which of `keys` the `done` partition has, read with the faults off.
        async fn done(&self, keys: &[String]) -> Vec<String> {
            let mut have = Vec::new();
            for chunk in keys.chunks(100) {
                let req = InvokeRequest {
                    tenant: "acme".into(),
                    script: "done".into(),
                    event: json!({ "keys": chunk }),
                };
                let got = lambda::invoke(&self.rt, req).await.unwrap();
                have.extend(
                    chunk
                        .iter()
                        .filter(|k| got[k.as_str()] == json!(true))
                        .cloned(),
                );
            }
            have
        }
    }

    /// Runs the seed flows behind a proxy that meets `rate` of the requests with a fault of
    /// each kind (stalls of [`STALL`]), and reports what held.
    async fn seed_flows(ep: &str, seed: u64, rate: f64) -> (Report, u64, usize) {
        let d =
            Deployment::from_json("deployment.json", r#"{ "buckets": { "map": {} } }"#).unwrap();
        let stack = native_tests::aws_env::stack(ep, &d).await;
        for (key, body) in std::iter::once((
            "acme/config.json".to_string(),
            r#"{ "queue": true }"#.to_string(),
        ))
        .chain(
            SCRIPTS
                .iter()
                .map(|(n, src)| (format!("acme/scripts/{n}.luau"), src.to_string())),
        ) {
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
        let proxy = Proxy::start(ep, Faults::all(seed, rate, STALL)).await;
        let sdk = quick_retries(&proxy.endpoint).await;
        let rt = Arc::new(
            lambda::runtime_for(&stack.config, &Clients::new(&sdk))
                .with_log(Arc::new(MemLog::default())),
        );
        let suite = Arc::new(Suite {
            stack,
            rt,
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
        let mut want: Vec<String> = sent.iter().map(|n| format!("n{n}")).collect();
        want.extend(barriers.iter().map(|id| format!("fin-{id}")));
        suite
            .drain(Duration::from_secs(40), async || {
                proxy.set_rate(0.0);
                let have = s.done(&want).await;
                proxy.set_rate(rate);
                have.len() == want.len()
            })
            .await;
        proxy.set_rate(0.0);
        let have = suite.done(&want).await;
        let mut r = std::mem::take(&mut *suite.report.lock().unwrap());
        r.lost_sends = sent
            .iter()
            .copied()
            .filter(|n| !have.contains(&format!("n{n}")))
            .collect();
        r.not_continued = barriers
            .iter()
            .filter(|id| !have.contains(&format!("fin-{id}")))
            .cloned()
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
            .filter(|id| !listed.barriers.iter().any(|l| &l.id == *id))
            .cloned()
            .collect();
        let dlq = suite.stack.config.work_dlq_url.clone().unwrap();
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
        r.dead_letters = attrs.attributes().unwrap()
            [&sqs::types::QueueAttributeName::ApproximateNumberOfMessages]
            .parse()
            .unwrap();
        let seen = proxy.seen();
        (r, seen.requests, seen.faults.len())
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
        eprintln!(
            "{:.0} % faults (seed {seed}): {faults} of {requests} requests met a fault; {} invocations, {} failed and were retried; {:?}",
            rate * 100.0,
            r.invocations,
            r.failed,
            start.elapsed()
        );
        assert!(faults > 0, "no fault was injected");
        assert!(
            r.false_claims.is_empty(),
            "claims answered taken for their own write: {:?}",
            r.false_claims
        );
        assert!(
            r.lost_sends.is_empty(),
            "acknowledged sends lost: {:?}",
            r.lost_sends
        );
        assert!(
            r.unlisted.is_empty(),
            "barriers not listed: {:?}",
            r.unlisted
        );
        assert!(
            r.not_continued.is_empty(),
            "barriers never continued: {:?}",
            r.not_continued
        );
        assert!(
            r.late.is_empty(),
            "past the deadline plus {MARGIN:?}: {:?}",
            r.late
        );
        assert!(
            r.unreadable.is_empty(),
            "messages with dumps or internal names: {:?}",
            r.unreadable
        );
        assert_eq!(r.dead_letters, 0, "dead letters");
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
