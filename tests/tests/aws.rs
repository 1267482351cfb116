//! The AWS backend against an emulator (moto): the conformance suite on S3, DynamoDB and SQS,
//! and the Lambda handlers end to end, fed the messages that the emulator's S3 notifications
//! and SQS really produce.
//!
//! Run with `tests/moto.sh`, which starts moto and sets `NATIVE_TEST_AWS_ENDPOINT`. Without that
//! variable every test here fails and says so, unless `NATIVE_SKIP_AWS=1` is set.

use native_tests::aws_endpoint as endpoint;

#[cfg(feature = "aws")]
use crate::common;

#[cfg(not(feature = "aws"))]
#[test]
fn aws_tests_need_the_aws_feature() {
    if endpoint().is_some() {
        panic!("NATIVE_TEST_AWS_ENDPOINT is set but native-tests was built without its `aws` feature: run `cargo test -p native-tests --features aws --test integration aws::`");
    }
}

#[cfg(feature = "aws")]
mod with_aws {
    use std::collections::HashMap;
    use std::sync::Arc;
    use std::time::Duration;

    use native_core::aws::lambda::{self, SqsEvent};
    use native_core::aws::sdk::{s3, sqs};
    use native_core::aws::{AwsConfig, Clients, DynamoKv, S3Objects, SqsQueues};
    use native_core::conformance;
    use native_core::ports::{ObjectStore, Queue, QueueKind, Vault};
    use native_tests::aws_env::{
        clients, lambda_record, make_bucket, make_queue, make_table, notify, unique,
    };
    use native_tests::MemLog;
    use serde_json::{json, Value};

    use super::endpoint;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_objects_on_s3() {
        let Some(ep) = endpoint() else { return };
        let c = clients(&ep).await;
        let bucket = unique("objects");
        make_bucket(&c, &bucket).await;
        let store = S3Objects::new(c.s3.clone());
        conformance::objects_put_get_delete_list(&store, &bucket).await;
        // open streams the body in chunks.
        let big: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        store
            .put(
                &bucket,
                "big.bin",
                big.clone().into(),
                native_core::ports::PutMode::Overwrite,
            )
            .await
            .unwrap();
        let (meta, mut r) = store.open(&bucket, "big.bin").await.unwrap().unwrap();
        assert_eq!(meta.size, big.len() as u64);
        let mut got = Vec::new();
        let mut chunks = 0;
        while let Some(c) = r.next_chunk().await.unwrap() {
            got.extend_from_slice(&c);
            chunks += 1;
        }
        assert!(
            got == big && chunks > 1,
            "{chunks} chunks, {} bytes",
            got.len()
        );
        assert!(store.open(&bucket, "none").await.unwrap().is_none());
        // A missing bucket is an error that names it, not a missing object.
        let e = store
            .get(&unique("missing"), "k")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("s3 backend: cannot get nt-missing-") && e.contains("NoSuchBucket"),
            "{e}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_vault_on_secrets_manager() {
        let Some(ep) = endpoint() else { return };
        let c = clients(&ep).await;
        let prefix = format!("{}/", unique("vault"));
        let vault = native_core::aws::SecretsVault::new(c.secrets.clone(), &prefix);
        conformance::vault_set_get_list_delete(&vault).await;
        // The secret id is <prefix><tenant>/<name>, as IAM policies scope it.
        use native_core::ports::Secret;
        vault
            .set("acme", "stripe.key", &Secret::new("sk_9".into()))
            .await
            .unwrap();
        let got = c
            .secrets
            .get_secret_value()
            .secret_id(format!("{prefix}acme/stripe.key"))
            .send()
            .await
            .unwrap();
        assert_eq!(got.secret_string(), Some("sk_9"));
        // A value changed behind this process's back is seen within the cache time, not at once.
        c.secrets
            .put_secret_value()
            .secret_id(format!("{prefix}acme/stripe.key"))
            .secret_string("sk_10")
            .send()
            .await
            .unwrap();
        let cached = vault.get("acme", "stripe.key").await.unwrap().unwrap();
        assert_eq!(cached.expose(), "sk_9", "read again before the cache time");
        let fresh = native_core::aws::SecretsVault::new(c.secrets.clone(), &prefix);
        assert_eq!(
            fresh
                .get("acme", "stripe.key")
                .await
                .unwrap()
                .unwrap()
                .expose(),
            "sk_10"
        );
        vault.delete("acme", "stripe.key").await.unwrap();
    }

    const CHARGE: &str = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("charge", {
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
    const CHARGED: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  if not job then return end
  if not job.ok then error(job.error) end
  local r = job.results.charge
  local body = native.json.decode(job:body("charge"))
  native.bucket.Acks.put("charged/" .. job.state.order .. ".json", native.json.encode({ status = r.status, body = body }))
  return { delete = job:keys() }
end"#;
    const JOB_ROUTER: &str = r#"
function on_route(_ctx, event)
  local routed = native.batch.route(event)
  if routed then return routed.script and { script = routed.script, event = routed.event } or nil end
  return nil
end"#;

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn the_fargate_server_performs_job_http_and_the_route_function_continues() {
        use axum::body::Body;
        use axum::http::Request;
        use tower::ServiceExt;
        let Some(ep) = endpoint() else { return };
        // GIVEN a deployment in the emulator whose server may reach a partner API on
        // 127.0.0.1, the seed's scripts uploaded, and the key in Secrets Manager
        let api = super::common::server().await;
        let prefix = format!("{}/", unique("vault"));
        let d = deploy_with(
            &ep,
            &[
                ("NATIVE_HTTP_ALLOW_PRIVATE_NETWORKS", "true".into()),
                ("NATIVE_VAULT_PREFIX", prefix.clone()),
            ],
        )
        .await;
        let config = json!({
            "batch": true,
            "http": { "allow": [format!("127.0.0.1:{}", api.port)] },
            "vault": ["stripe.key"],
            "config": { "api_base": format!("http://127.0.0.1:{}/", api.port) },
        });
        upload_tenant(
            &d,
            "shop",
            &config.to_string(),
            &[
                ("router", JOB_ROUTER),
                ("charge", CHARGE),
                ("charged", CHARGED),
            ],
        )
        .await;
        use native_core::ports::Secret;
        let secret = "sk_moto_42/x+y";
        d.rt.services
            .backends
            .vault
            .set("shop", "stripe.key", &Secret::new(secret.into()))
            .await
            .unwrap();
        // AND the Fargate server's runtime (the route function's plus the background
        // performer) behind the HTTP API, with an API key
        let server = Arc::new(
            lambda::runtime_for(&d.config, &d.clients)
                .with_log(d.log.clone())
                .with_http_jobs(),
        );
        let key = native_core::api_keys::create(&*d.rt.services.backends.kv, "shop", "")
            .await
            .unwrap()
            .key;
        // WHEN charge is invoked over the server's HTTP API
        let resp = native_core::inbound::router(server.clone())
            .oneshot(
                Request::post("/v1/invoke/charge")
                    .header("authorization", format!("Bearer {key}"))
                    .body(Body::from(r#"{"order":{"id":"o1","amount":3}}"#))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        server
            .services
            .http_jobs
            .as_ref()
            .unwrap()
            .wait_idle()
            .await;
        // THEN the partner got the secret from Secrets Manager, done.json notified the events
        // queue, and the route function runs the continuation with the redacted answer
        assert_eq!(
            api.last_auth.lock().unwrap().as_deref(),
            Some(format!("Bearer {secret}").as_str())
        );
        // (Any other record of the batch is dropped by the router.)
        let events = receive_batch(&d, &d.events_url, 3).await;
        assert!(
            events
                .records
                .iter()
                .any(|r| r.body.as_deref().unwrap_or("").contains("done.json")),
            "no done.json event"
        );
        let out = lambda::handle_event_batch(&d.rt, events.clone()).await;
        assert!(failures(&out).is_empty(), "{:?}", d.log.messages());
        let acks = d.config.deployment.real_bucket("Acks").unwrap().to_string();
        let seen: Value =
            serde_json::from_str(&read(&d, &acks, "shop/charged/o1.json").await.unwrap()).unwrap();
        assert_eq!(seen["status"], 201);
        assert_eq!(seen["body"]["auth"], "Bearer [redacted:stripe.key]");
        d.rt.services
            .backends
            .vault
            .delete("shop", "stripe.key")
            .await
            .unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_kv_on_dynamodb() {
        let Some(ep) = endpoint() else { return };
        let c = clients(&ep).await;
        let table = unique("kv");
        make_table(&c, &table).await;
        let kv = DynamoKv::new(c.dynamodb.clone(), &table);
        conformance::kv_conditional_writes_expiry_query(&kv).await;
        conformance::kv_transactions(&kv).await;
        conformance::kv_own_writes(&kv).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_kv_tallies_on_dynamodb() {
        let Some(ep) = endpoint() else { return };
        let c = clients(&ep).await;
        let table = unique("kv");
        make_table(&c, &table).await;
        conformance::kv_tallies(&DynamoKv::new(c.dynamodb.clone(), &table)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_kv_counts_on_dynamodb() {
        let Some(ep) = endpoint() else { return };
        let c = clients(&ep).await;
        let table = unique("kv");
        make_table(&c, &table).await;
        conformance::kv_counts(&DynamoKv::new(c.dynamodb.clone(), &table)).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_redrive_on_sqs() {
        let Some(ep) = endpoint() else { return };
        let c = clients(&ep).await;
        let (events, _, _) = make_queue(&c, &unique("events")).await;
        let (work, _, _) = make_queue(&c, &unique("work")).await;
        let q = SqsQueues::new(
            c.sqs.clone(),
            native_core::aws::QueueUrls {
                events,
                work,
                events_dlq: None,
                work_dlq: None,
            },
        );
        conformance::queue_redrive(&q, QueueKind::Work).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn conformance_queues_on_sqs() {
        let Some(ep) = endpoint() else { return };
        let c = clients(&ep).await;
        let (events, _, events_dlq) = make_queue(&c, &unique("events")).await;
        let (work, _, _) = make_queue(&c, &unique("work")).await;
        // The events DLQ is given; the work DLQ is found through the redrive policy.
        let q = SqsQueues::new(
            c.sqs.clone(),
            native_core::aws::QueueUrls {
                events,
                work,
                events_dlq: Some(events_dlq),
                work_dlq: None,
            },
        );
        tokio::join!(
            conformance::queue_delivery_and_dead_letters(&q, QueueKind::Events),
            conformance::queue_delivery_and_dead_letters(&q, QueueKind::Work),
        );
        let stats = q.stats(QueueKind::Work).await.unwrap();
        assert_eq!(stats.dead, 1, "the dead letter counts in stats: {stats:?}");
        assert_eq!(stats.visible, 0, "{stats:?}");
        conformance::queue_delete_many(&q, QueueKind::Events).await;
    }

    /// A whole deployment in the emulator: data buckets, batch bucket, scripts bucket, both
    /// queues with dead-letter queues, the table, and notifications as the template sets them.
    struct Deployed {
        clients: Clients,
        config: AwsConfig,
        events_url: String,
        work_url: String,
        log: Arc<MemLog>,
        rt: Arc<native_core::runtime::Runtime>,
    }

    async fn deploy(ep: &str) -> Deployed {
        deploy_with(ep, &[]).await
    }

    /// [`deploy`] with more variables for the functions.
    async fn deploy_with(ep: &str, extra: &[(&'static str, String)]) -> Deployed {
        let c = clients(ep).await;
        let s = unique("e2e");
        let (data_in, acks, batch, scripts, table) = (
            format!("{s}-in"),
            format!("{s}-acks"),
            format!("{s}-batch"),
            format!("{s}-scripts"),
            format!("{s}-table"),
        );
        for b in [&data_in, &acks, &batch, &scripts] {
            make_bucket(&c, b).await;
        }
        make_table(&c, &table).await;
        let (events_url, events_arn, _) = make_queue(&c, &format!("{s}-events")).await;
        let (work_url, _, _) = make_queue(&c, &format!("{s}-work")).await;
        notify(&c, &data_in, &events_arn, None).await;
        notify(&c, &batch, &events_arn, Some("/done.json")).await;

        let mut vars: HashMap<&str, String> = HashMap::from([
            ("NATIVE_TABLE", table),
            ("NATIVE_EVENTS_QUEUE_URL", events_url.clone()),
            ("NATIVE_WORK_QUEUE_URL", work_url.clone()),
            ("NATIVE_SCRIPTS_BUCKET", scripts),
            (
                "NATIVE_BUCKETS",
                json!({ "In": data_in, "Acks": acks }).to_string(),
            ),
            ("NATIVE_BATCH_BUCKET", batch),
            ("NATIVE_BATCH_PREFIX", "tenants/".into()),
        ]);
        vars.extend(extra.iter().cloned());
        let config = AwsConfig::from_vars(|n| vars.get(n).cloned()).unwrap();
        let log = Arc::new(MemLog::default());
        let rt = Arc::new(lambda::runtime_for(&config, &c).with_log(log.clone()));
        Deployed {
            clients: c,
            config,
            events_url,
            work_url,
            log,
            rt,
        }
    }

    /// Uploads a tenant to the scripts bucket as `native deploy` does.
    async fn upload_tenant(d: &Deployed, tenant: &str, config: &str, scripts: &[(&str, &str)]) {
        let o = S3Objects::new(d.clients.s3.clone());
        let b = &d.config.scripts_bucket;
        o.put(
            b,
            &format!("{tenant}/config.json"),
            config.to_string().into(),
            native_core::ports::PutMode::Overwrite,
        )
        .await
        .unwrap();
        for (name, src) in scripts {
            o.put(
                b,
                &format!("{tenant}/scripts/{name}.luau"),
                src.to_string().into(),
                native_core::ports::PutMode::Overwrite,
            )
            .await
            .unwrap();
        }
    }

    /// Receives from a queue as Lambda's event source mapping does, until `want` messages came
    /// or a few seconds passed, and wraps them in the event Lambda would send.
    async fn receive_batch(d: &Deployed, url: &str, want: usize) -> SqsEvent {
        let mut records = Vec::new();
        for _ in 0..50 {
            let out = d
                .clients
                .sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .visibility_timeout(30)
                .message_system_attribute_names(
                    sqs::types::MessageSystemAttributeName::ApproximateReceiveCount,
                )
                .send()
                .await
                .unwrap();
            records.extend(out.messages().iter().map(lambda_record));
            if records.len() >= want {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut ev = SqsEvent::default();
        ev.records = records;
        ev
    }

    /// What Lambda does after a batch: deletes every message not reported as failed.
    async fn finish_batch(d: &Deployed, url: &str, batch: &SqsEvent, failed: &[String]) {
        for r in &batch.records {
            if !failed.contains(r.message_id.as_ref().unwrap()) {
                d.clients
                    .sqs
                    .delete_message()
                    .queue_url(url)
                    .receipt_handle(r.receipt_handle.as_ref().unwrap())
                    .send()
                    .await
                    .unwrap();
            }
        }
    }

    fn failures(resp: &lambda::SqsBatchResponse) -> Vec<String> {
        resp.batch_item_failures
            .iter()
            .map(|f| f.item_identifier.clone())
            .collect()
    }

    async fn read(d: &Deployed, bucket: &str, key: &str) -> Option<String> {
        S3Objects::new(d.clients.s3.clone())
            .get(bucket, key)
            .await
            .unwrap()
            .map(|(_, b)| String::from_utf8(b.to_vec()).unwrap())
    }

    const ROUTER: &str = r#"
function on_route(ctx, ev)
  if ev.bucket == "$batch" then return "batch_done" end
  return "ingest"
end"#;
    const INGEST: &str = r#"
function on_queue(ctx, ev)
  native.bucket.Acks.put(ev.key .. ".ack", native.json.encode({ key = ev.key, size = ev.size, attempt = ctx.attempt }))
  native.queue.send("later", { key = ev.key })
end"#;
    const LATER: &str = r#"
function on_queue(ctx, ev)
  if ev.poison then error("poisoned message") end
  native.bucket.Acks.put(ev.key .. ".done", native.json.encode({ attempt = ctx.attempt }))
end"#;
    const BATCH_DONE: &str = r#"
function on_queue(ctx, ev)
  native.bucket.Acks.put("batch/" .. ev.key, "seen")
end"#;
    const HELLO: &str = r#"
function on_invoke(ctx, ev)
  native.db.put("p", "k", { n = ev.n })
  return { hello = ctx.tenant, n = native.db.get("p", "k").n + 1 }
end"#;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn end_to_end_object_to_router_to_script_to_queue() {
        let Some(ep) = endpoint() else { return };
        let d = deploy(&ep).await;
        upload_tenant(
            &d,
            "acme",
            r#"{ "queue": true, "batch": true }"#,
            &[
                ("router", ROUTER),
                ("ingest", INGEST),
                ("later", LATER),
                ("batch_done", BATCH_DONE),
                ("hello", HELLO),
            ],
        )
        .await;
        let data_in = d.config.deployment.real_bucket("In").unwrap().to_string();
        let acks = d.config.deployment.real_bucket("Acks").unwrap().to_string();
        let batch = d
            .config
            .deployment
            .real_bucket("$batch")
            .unwrap()
            .to_string();

        // The first message in the events queue is moto's s3:TestEvent: the route function
        // drops it without failing.
        // An outside party writes into the data bucket; S3 notifies the events queue.
        d.clients
            .s3
            .put_object()
            .bucket(&data_in)
            .key("acme/in dir/a b+ü.json")
            .body(s3::primitives::ByteStream::from_static(b"{\"x\":1}"))
            .send()
            .await
            .unwrap();
        // In the batch bucket only done.json notifies.
        for key in [
            "tenants/acme/jobs/j1/part-0.ndjson",
            "tenants/acme/jobs/j1/done.json",
        ] {
            d.clients
                .s3
                .put_object()
                .bucket(&batch)
                .key(key)
                .body(s3::primitives::ByteStream::from_static(b"{}"))
                .send()
                .await
                .unwrap();
        }
        let events = receive_batch(&d, &d.events_url, 4).await;
        let bodies: Vec<&str> = events
            .records
            .iter()
            .map(|r| r.body.as_deref().unwrap())
            .collect();
        assert!(
            bodies.iter().any(|b| b.contains("s3:TestEvent")),
            "moto sends a test event first: {bodies:?}"
        );
        let objects: Vec<_> = bodies.iter().filter(|b| b.contains("Records")).collect();
        assert_eq!(
            objects.len(),
            2,
            "one notification from the data bucket, one for done.json only: {bodies:?}"
        );
        let resp = lambda::handle_event_batch(&d.rt, events.clone()).await;
        assert!(
            resp.batch_item_failures.is_empty(),
            "every event handled: {:?}\nlog: {:?}",
            resp,
            d.log.0.lock().unwrap()
        );
        finish_batch(&d, &d.events_url, &events, &[]).await;

        let ack: Value =
            serde_json::from_str(&read(&d, &acks, "acme/in dir/a b+ü.json.ack").await.expect(
                "the router picked ingest, which wrote its ack into the Acks bucket in S3",
            ))
            .unwrap();
        assert_eq!(
            ack,
            json!({ "key": "in dir/a b+ü.json", "size": 7, "attempt": 1 })
        );
        assert_eq!(
            read(&d, &acks, "acme/batch/jobs/j1/done.json")
                .await
                .as_deref(),
            Some("seen"),
            "done.json in the batch bucket was routed"
        );

        // The script's native.queue.send landed in SQS's work queue; the queue function runs it,
        // in a batch with a poisoned message and a malformed one that fail alone.
        let poison_id = d
            .clients
            .sqs
            .send_message()
            .queue_url(&d.work_url)
            .message_body(
                json!({ "tenant": "acme", "script": "later", "event": { "poison": true } })
                    .to_string(),
            )
            .send()
            .await
            .unwrap()
            .message_id()
            .unwrap()
            .to_string();
        let junk_id = d
            .clients
            .sqs
            .send_message()
            .queue_url(&d.work_url)
            .message_body("not json")
            .send()
            .await
            .unwrap()
            .message_id()
            .unwrap()
            .to_string();
        let work = receive_batch(&d, &d.work_url, 3).await;
        assert_eq!(work.records.len(), 3, "{work:?}");
        let sent: Value = serde_json::from_str(
            work.records
                .iter()
                .find_map(|r| r.body.as_deref().filter(|b| b.contains("in dir")))
                .expect("the script's message is in the work queue"),
        )
        .unwrap();
        // It carries its sender's chain on (ctx.trace, tests/tests/trace.rs).
        let mut sent = sent;
        let chain = sent["chain"].take();
        assert!(
            chain.as_str().is_some_and(native_core::observe::is_trace),
            "{chain}"
        );
        sent.as_object_mut().unwrap().remove("chain");
        assert_eq!(
            sent,
            json!({ "tenant": "acme", "script": "later", "event": { "key": "in dir/a b+ü.json" }, "depth": 1, "width": 10000 })
        );
        let resp = lambda::handle_work_batch(&d.rt, work.clone()).await;
        let mut failed = failures(&resp);
        failed.sort();
        assert_eq!(
            failed,
            vec![poison_id.clone()],
            "only the poisoned message is retried: the malformed one can never succeed"
        );
        // The malformed message went straight to the dead-letter queue, with its error.
        let dead =
            d.rt.services
                .backends
                .queue
                .dead_letters(native_core::ports::QueueKind::Work, 10)
                .await
                .unwrap();
        let junk = dead
            .iter()
            .find(|m| m.body == "not json")
            .unwrap_or_else(|| {
                panic!("the malformed message {junk_id} is dead-lettered: {dead:?}")
            });
        assert!(
            junk.last_error
                .as_deref()
                .is_some_and(|e| e.contains("work message is not")),
            "{junk:?}"
        );
        finish_batch(&d, &d.work_url, &work, &failed).await;
        assert_eq!(
            read(&d, &acks, "acme/in dir/a b+ü.json.done")
                .await
                .as_deref(),
            Some(r#"{"attempt":1}"#),
            "the good neighbour ran once, on its first attempt"
        );
        let log = d.log.0.lock().unwrap().clone();
        assert!(
            log.iter().any(|r| r["message_id"] == poison_id.as_str()
                && r["error"].as_str().unwrap().contains("poisoned message")),
            "the failure is logged with its message id: {log:?}"
        );

        // A failed message comes back with its receive count as ctx.attempt.
        let c = &d.clients.sqs;
        for r in &work.records {
            if failed.contains(r.message_id.as_ref().unwrap()) {
                c.change_message_visibility()
                    .queue_url(&d.work_url)
                    .receipt_handle(r.receipt_handle.as_ref().unwrap())
                    .visibility_timeout(0)
                    .send()
                    .await
                    .unwrap();
            }
        }
        let again = receive_batch(&d, &d.work_url, 1).await;
        assert_eq!(again.records.len(), 1, "{again:?}");
        assert!(again.records.iter().all(|r| lambda::attempt_of(r) == 2));

        // Direct invocation, with the table in DynamoDB.
        let out = lambda::invoke(
            &d.rt,
            lambda::parse_invoke(
                json!({ "tenant": "acme", "script": "hello", "event": { "n": 41 } }),
            )
            .unwrap(),
        )
        .await
        .unwrap();
        assert_eq!(out, json!({ "hello": "acme", "n": 42 }));
        let e = lambda::parse_invoke(json!({ "tenant": "acme" })).unwrap_err();
        assert!(e.to_string().contains("missing field `script`"), "{e}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn events_for_unknown_tenants_and_folders_are_dropped_not_failed() {
        let Some(ep) = endpoint() else { return };
        let d = deploy(&ep).await;
        let data_in = d.config.deployment.real_bucket("In").unwrap().to_string();
        for key in ["nobody/x.json", "no-folder.json"] {
            d.clients
                .s3
                .put_object()
                .bucket(&data_in)
                .key(key)
                .body(s3::primitives::ByteStream::from_static(b"1"))
                .send()
                .await
                .unwrap();
        }
        // Two s3:TestEvents (one per notifying bucket) and the two objects.
        let events = receive_batch(&d, &d.events_url, 4).await;
        assert_eq!(events.records.len(), 4, "{events:?}");
        let resp = lambda::handle_event_batch(&d.rt, events).await;
        assert!(resp.batch_item_failures.is_empty(), "{resp:?}");
        let whys: Vec<String> = d
            .log
            .0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| r["why"].as_str().map(str::to_string))
            .collect();
        assert!(
            whys.iter().any(|w| w.contains("no tenant \"nobody\"")),
            "{whys:?}"
        );
        assert!(
            whys.iter().any(|w| w.contains("no-folder.json")),
            "{whys:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn scripts_bucket_changes_reach_a_warm_function() {
        let Some(ep) = endpoint() else { return };
        let d = deploy(&ep).await;
        let tenants = native_core::aws::S3Tenants::new(
            Arc::new(S3Objects::new(d.clients.s3.clone())),
            &d.config.scripts_bucket,
            Duration::from_millis(500),
        );
        use native_core::tenants::TenantSource;
        upload_tenant(&d, "acme", "{}", &[("a", "return 1")]).await;
        let t1 = tenants.load("acme").await.unwrap();
        upload_tenant(&d, "acme", "{}", &[("a", "return 2")]).await;
        let t2 = tenants.load("acme").await.unwrap();
        assert_eq!(t1.version, t2.version, "cached between checks");
        tokio::time::sleep(Duration::from_millis(600)).await;
        let t3 = tenants.load("acme").await.unwrap();
        assert_ne!(t1.version, t3.version, "a changed script is read again");
        assert_eq!(t3.scripts["a"].source, "return 2");
        assert_eq!(t3.scripts.keys().collect::<Vec<_>>(), ["a"]);
    }
}
