//! Isolation and bounded cost on AWS, against the emulator (moto): scripts' data calls signed
//! with the tenant role's credentials for their own tenant (STS `AssumeRole` with the tenant
//! tag), cached per process.
//!
//! Run with `tests/run.sh -p native-tests --test integration aws_isolation::` (starts moto);
//! without `NATIVE_TEST_AWS_ENDPOINT` these fail and say so, unless `NATIVE_SKIP_AWS=1` is set.

#![cfg(feature = "aws")]

use std::sync::Arc;
use std::time::Duration;

use native_core::aws::lambda::runtime_for;
use native_core::aws::{emulator_sdk_config, Clients, StsTenantScope};
use native_core::config::Deployment;
use native_core::ports::PutMode;
use native_tests::aws_endpoint as endpoint;
use native_tests::aws_env::{stack, Stack};
use native_tests::MemLog;
use serde_json::{json, Value};

const ROLE: &str = "arn:aws:iam::123456789012:role/native-TenantRole-TEST";

/// A script that touches both scoped backends: an object and an item.
const SCRIPT: &str = r#"
function on_invoke(ctx, ev)
  native.bucket.In.put("note.txt", ctx.tenant)
  native.db.put("p", "k", { who = ctx.tenant })
  return { body = native.bucket.In.get("note.txt"), item = native.db.get("p", "k") }
end
"#;

async fn deployed(ep: &str) -> Stack {
    let d = Deployment::from_json(
        "deployment.json",
        r#"{ "buckets": { "map": { "In": "in-bucket" } } }"#,
    )
    .unwrap();
    let s = stack(ep, &d).await;
    for tenant in ["acme", "beta"] {
        for (key, body) in [
            (format!("{tenant}/config.json"), "{}".to_string()),
            (format!("{tenant}/scripts/s.luau"), SCRIPT.to_string()),
        ] {
            s.backends
                .objects
                .put(
                    &s.config.scripts_bucket,
                    &key,
                    body.into(),
                    PutMode::Overwrite,
                )
                .await
                .unwrap();
        }
    }
    s
}

/// Whose session an access key is, as STS says: `GetCallerIdentity` signed with that key.
/// (The emulator knows a key by its id; the secret, which the scope keeps to itself, is not
/// checked there.) An ARN `arn:aws:sts::<account>:assumed-role/<role>/<session>`.
///
/// Asked of STS rather than read from moto's `/moto-api/data.json`, which fails as a whole
/// once any test has made a Lambda function in the same emulator.
async fn session_of(ep: &str, access_key: &str) -> String {
    use native_core::aws::sdk::sts;
    let creds = sts::config::Credentials::new(access_key, "unchecked", None, None, "test");
    let conf = sts::config::Builder::from(&emulator_sdk_config(ep).await)
        .credentials_provider(creds)
        .build();
    let who = sts::Client::from_conf(conf)
        .get_caller_identity()
        .send()
        .await
        .unwrap_or_else(|e| panic!("STS does not know key {access_key}: {e:?}"));
    who.arn().unwrap_or_default().to_string()
}

/// The ARN of tenant `tenant`'s session of [`ROLE`].
fn session_arn(tenant: &str) -> String {
    format!("arn:aws:sts::123456789012:assumed-role/native-TenantRole-TEST/native-{tenant}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_calls_are_signed_with_their_own_tenants_assumed_role() {
    let Some(ep) = endpoint() else { return };
    // GIVEN a function runtime with the tenant role configured, and two tenants
    let s = deployed(&ep).await;
    let sdk = emulator_sdk_config(&ep).await;
    let scope = Arc::new(StsTenantScope::new(&sdk, ROLE, &s.config));
    let log = Arc::new(MemLog::default());
    let rt = runtime_for(&s.config, &Clients::new(&sdk))
        .with_log(log)
        .with_tenant_scope(scope.clone());

    // THEN the AssumeRole request carries the tenant as a session tag and names the session
    let req = scope.assume_request("acme");
    let tags = req.get_tags().clone().unwrap();
    assert_eq!(
        (tags[0].key(), tags[0].value()),
        ("tenant", "acme"),
        "{tags:?}"
    );
    assert_eq!(req.get_role_session_name().as_deref(), Some("native-acme"));
    assert_eq!(req.get_role_arn().as_deref(), Some(ROLE));

    // WHEN each tenant's script writes and reads an object and an item
    for tenant in ["acme", "beta"] {
        let out = rt.invoke(tenant, "s", json!({})).await.unwrap();
        assert_eq!(out, json!({ "body": tenant, "item": { "who": tenant } }));
    }

    // THEN both clients of each tenant signed with the key moto issued for that tenant's
    // session of the tenant role, not with the function's own key ("testing")
    let mut keys = Vec::new();
    for tenant in ["acme", "beta"] {
        let (s3_key, ddb_key) = scope.signed_with(tenant).await;
        let s3_key = s3_key.expect("the tenant's S3 client made a call");
        assert_eq!(
            Some(&s3_key),
            ddb_key.as_ref(),
            "S3 and DynamoDB sign alike"
        );
        assert_ne!(s3_key, "testing");
        assert_eq!(session_of(&ep, &s3_key).await, session_arn(tenant));
        keys.push(s3_key);
    }
    assert_ne!(keys[0], keys[1], "each tenant has a session of its own");

    // AND the credentials are reused while fresh: one AssumeRole per tenant for three calls
    rt.invoke("acme", "s", json!({})).await.unwrap();
    assert_eq!(scope.assumed(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_tenants_vault_reads_with_its_own_assumed_role() {
    use native_core::ports::Secret;
    let Some(ep) = endpoint() else { return };
    // GIVEN a function runtime with the tenant role configured, and a secret of one name for
    // each of two tenants in Secrets Manager (set by an operator, as `native vault set` does)
    let s = deployed(&ep).await;
    let sdk = emulator_sdk_config(&ep).await;
    let scope = Arc::new(StsTenantScope::new(&sdk, ROLE, &s.config));
    let rt = runtime_for(&s.config, &Clients::new(&sdk))
        .with_log(Arc::new(MemLog::default()))
        .with_tenant_scope(scope.clone());
    let name = format!("key{:x}", rand_u32());
    for tenant in ["acme", "beta"] {
        let value = Secret::new(format!("{tenant}-secret"));
        s.backends.vault.set(tenant, &name, &value).await.unwrap();
    }

    // WHEN each tenant's services (what its scripts' calls go through) read the secret
    let mut keys = Vec::new();
    for tenant in ["acme", "beta"] {
        let services = rt.services_for(tenant).await.unwrap();
        let got = services.backends.vault.get(tenant, &name).await.unwrap();
        assert_eq!(
            got.map(|v| v.expose().to_string()),
            Some(format!("{tenant}-secret"))
        );
        // THEN the Secrets Manager request was signed with the key moto issued for that
        // tenant's session of the tenant role, not with the function's own key ("testing")
        let key = scope
            .vault_signed_with(tenant)
            .await
            .expect("the tenant's vault made a call");
        assert_ne!(key, "testing");
        assert_eq!(session_of(&ep, &key).await, session_arn(tenant));
        // AND it is the same session as the tenant's data calls
        rt.invoke(tenant, "s", json!({})).await.unwrap();
        assert_eq!(
            scope.signed_with(tenant).await.0.as_deref(),
            Some(key.as_str())
        );
        keys.push(key);
    }
    assert_ne!(
        keys[0], keys[1],
        "each tenant's vault has a session of its own"
    );
    // AND the runtime's own vault (used by operators' tools, not scripts) is not what tenants get
    let acme = rt.services_for("acme").await.unwrap();
    assert!(!Arc::ptr_eq(
        &acme.backends.vault,
        &rt.services.backends.vault
    ));
}

fn rand_u32() -> u32 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_are_renewed_before_they_expire() {
    let Some(ep) = endpoint() else { return };
    // GIVEN a scope whose refresh margin is longer than a session (so every cached
    // credential counts as about to expire)
    let s = deployed(&ep).await;
    let sdk = emulator_sdk_config(&ep).await;
    let scope = Arc::new(
        StsTenantScope::new(&sdk, ROLE, &s.config)
            .with_refresh_margin(Duration::from_secs(2 * 3600)),
    );
    let rt = runtime_for(&s.config, &Clients::new(&sdk))
        .with_log(Arc::new(MemLog::default()))
        .with_tenant_scope(scope.clone());
    // WHEN one tenant runs twice
    rt.invoke("acme", "s", json!({})).await.unwrap();
    let first = scope.signed_with("acme").await.0.unwrap();
    rt.invoke("acme", "s", json!({})).await.unwrap();
    // THEN the role was assumed again and the new key signed the second run's calls
    assert_eq!(scope.assumed(), 2);
    let second = scope.signed_with("acme").await.0.unwrap();
    assert_ne!(first, second);
}

/// Puts a tenant's config and scripts in the stack's scripts bucket.
async fn tenant(s: &Stack, name: &str, config: &str, scripts: &[(&str, &str)]) {
    let mut files = vec![(format!("{name}/config.json"), config.to_string())];
    for (script, src) in scripts {
        files.push((format!("{name}/scripts/{script}.luau"), src.to_string()));
    }
    for (key, body) in files {
        s.backends
            .objects
            .put(
                &s.config.scripts_bucket,
                &key,
                body.into(),
                PutMode::Overwrite,
            )
            .await
            .unwrap();
    }
}

fn record(id: &str, body: &str) -> native_core::aws::lambda::SqsMessage {
    let mut m = native_core::aws::lambda::SqsMessage::default();
    m.message_id = Some(id.into());
    m.body = Some(body.into());
    m.attributes
        .insert("ApproximateReceiveCount".into(), "1".into());
    m
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

const SPIN: &str = "function on_queue(ctx, ev) while true do end end";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_script_ends_before_the_lambda_does() {
    use native_core::aws::lambda::{handle_work_batch_by, SqsEvent};
    let Some(ep) = endpoint() else { return };
    // GIVEN a tenant allowed 30 s whose script never ends, and a Lambda request with 4 s left
    let s = deployed(&ep).await;
    tenant(&s, "slow", r#"{ "queue": true }"#, &[("spin", SPIN)]).await;
    let log = Arc::new(MemLog::default());
    let rt = Arc::new(runtime_for(&s.config, &s.clients).with_log(log.clone()));
    let mut batch = SqsEvent::default();
    batch.records = vec![record(
        "m1",
        r#"{"tenant":"slow","script":"spin","event":{}}"#,
    )];
    let deadline_ms = now_ms() + 4000;
    // WHEN the queue function handles it
    let started = std::time::Instant::now();
    let resp = handle_work_batch_by(&rt, batch, deadline_ms).await;
    // THEN the script was stopped 2 s before the Lambda's deadline, the batch response came
    // back in time with the message as a partial failure, and the error says why
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(3000),
        "returned after {took:?}, past the margin"
    );
    assert!(
        took >= Duration::from_millis(1500),
        "stopped early: {took:?}"
    );
    assert_eq!(resp.batch_item_failures.len(), 1);
    let records = log.0.lock().unwrap().clone();
    let error = records
        .iter()
        .find_map(|r| r["error"].as_str().map(str::to_string))
        .expect("the failure is logged");
    assert!(
        error.contains("limit timeout_s exceeded")
            && error.contains("what was left of the function's time")
            && error.contains("timeout_s is 30 s"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_and_handler_share_one_deadline() {
    use native_core::aws::lambda::{handle_event_batch_by, SqsEvent};
    let Some(ep) = endpoint() else { return };
    // GIVEN a tenant with timeout_s 2 whose router takes 1.5 s and whose handler never ends
    let s = deployed(&ep).await;
    let router = "function on_route(ctx, ev) local t = os.clock() while os.clock() - t < 1.5 do end return 'spin' end";
    tenant(
        &s,
        "slowr",
        r#"{ "limits": { "timeout_s": 2 } }"#,
        &[("router", router), ("spin", SPIN)],
    )
    .await;
    let bucket = s.deployment().real_bucket("In").unwrap().to_string();
    s.backends
        .objects
        .put(&bucket, "slowr/doc.json", "{}".into(), PutMode::Overwrite)
        .await
        .unwrap();
    let body = json!({ "Records": [{ "eventName": "ObjectCreated:Put",
        "s3": { "bucket": { "name": bucket }, "object": { "key": "slowr/doc.json", "size": 2 } } }] });
    let log = Arc::new(MemLog::default());
    let rt = Arc::new(runtime_for(&s.config, &s.clients).with_log(log.clone()));
    let mut batch = SqsEvent::default();
    batch.records = vec![record("e1", &body.to_string())];
    // WHEN the route function handles the event with a minute left
    let started = std::time::Instant::now();
    let resp = handle_event_batch_by(&rt, batch, now_ms() + 60_000).await;
    // THEN the handler got only what the router left of the 2 s, not 2 s of its own
    let took = started.elapsed();
    assert_eq!(resp.batch_item_failures.len(), 1);
    assert!(
        took < Duration::from_millis(2800),
        "router and handler took {took:?}: the handler had its own 2 s"
    );
    let records = log.0.lock().unwrap().clone();
    let error = records
        .iter()
        .find_map(|r| r["error"].as_str().map(str::to_string))
        .unwrap();
    assert!(error.contains("limit timeout_s exceeded"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_that_cannot_heal_are_dead_lettered_at_once_with_their_error() {
    use native_core::aws::lambda::{handle_work_batch_by, SqsEvent};
    use native_core::ports::QueueKind;
    let Some(ep) = endpoint() else { return };
    // GIVEN a tenant with max_chain_depth 1, and four work messages: one malformed, one for an
    // unknown tenant, one past the chain depth, and one whose script fails (which may heal)
    let s = deployed(&ep).await;
    tenant(
        &s,
        "deep",
        r#"{ "queue": true, "limits": { "max_chain_depth": 1 } }"#,
        &[("fails", "function on_queue(ctx, ev) error('not yet') end")],
    )
    .await;
    let log = Arc::new(MemLog::default());
    let rt = Arc::new(
        runtime_for(&s.config, &s.clients)
            .with_log(log.clone())
            .with_metrics("native-test"),
    );
    let mut batch = SqsEvent::default();
    batch.records = vec![
        record("junk", "{not json"),
        record("ghost", r#"{"tenant":"ghost","script":"s","event":{}}"#),
        record(
            "deep",
            r#"{"tenant":"deep","script":"fails","event":{},"depth":5}"#,
        ),
        record("fails", r#"{"tenant":"deep","script":"fails","event":{}}"#),
    ];
    // WHEN the queue function handles the batch (first receive of each)
    let resp = handle_work_batch_by(&rt, batch, now_ms() + 30_000).await;
    // THEN only the message that may heal is reported for a retry
    let failed: Vec<_> = resp
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(failed, ["fails"]);
    // AND the other three are in the work dead-letter queue now, each with its error
    let dead = s
        .backends
        .queue
        .dead_letters(QueueKind::Work, 10)
        .await
        .unwrap();
    assert_eq!(dead.len(), 3, "{dead:?}");
    let error_of = |needle: &str| {
        dead.iter()
            .find(|d| d.body.contains(needle))
            .and_then(|d| d.last_error.clone())
            .unwrap_or_else(|| panic!("no dead letter with {needle} and an error: {dead:?}"))
    };
    assert!(error_of("{not json").contains("work message is not"));
    assert!(error_of("ghost").contains("tenant \"ghost\" not found"));
    assert!(error_of("\"depth\":5").contains("limit max_chain_depth exceeded"));
    // AND each is counted as a dead letter of its tenant
    let records = log.0.lock().unwrap().clone();
    let dead_metrics: Vec<_> = records
        .iter()
        .filter(|r| r.get("DeadLetters").is_some())
        .map(|r| r["tenant"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(dead_metrics.len(), 3, "{records:?}");
    assert!(
        dead_metrics.contains(&"ghost".to_string()) && dead_metrics.contains(&"deep".to_string())
    );
}

/// Checks one record against the CloudWatch Embedded Metric Format specification: the `_aws`
/// metadata (Timestamp in ms, CloudWatchMetrics directives with Namespace, Dimensions and
/// Metrics of Name and a valid Unit) and that every dimension and metric it names is a member
/// of the record with a value of the right type.
fn check_emf(r: &Value) {
    const UNITS: &[&str] = &[
        "Seconds",
        "Microseconds",
        "Milliseconds",
        "Bytes",
        "Kilobytes",
        "Megabytes",
        "Gigabytes",
        "Terabytes",
        "Bits",
        "Kilobits",
        "Megabits",
        "Gigabits",
        "Terabits",
        "Percent",
        "Count",
        "Bytes/Second",
        "Kilobytes/Second",
        "Megabytes/Second",
        "Gigabytes/Second",
        "Terabytes/Second",
        "Bits/Second",
        "Kilobits/Second",
        "Megabits/Second",
        "Gigabits/Second",
        "Terabits/Second",
        "Count/Second",
        "None",
    ];
    let aws = r["_aws"].as_object().expect("_aws is an object");
    let ts = aws["Timestamp"].as_i64().expect("Timestamp is an integer");
    assert!(
        (ts - now_ms() as i64).abs() < 60_000,
        "Timestamp {ts} is ms since the epoch, now"
    );
    let directives = aws["CloudWatchMetrics"]
        .as_array()
        .expect("CloudWatchMetrics is an array");
    assert!(!directives.is_empty());
    for d in directives {
        let ns = d["Namespace"].as_str().expect("Namespace is a string");
        assert!(!ns.is_empty() && ns.len() <= 255);
        let sets = d["Dimensions"].as_array().expect("Dimensions is an array");
        for set in sets {
            let set = set.as_array().expect("a dimension set is an array");
            assert!(set.len() <= 30);
            for dim in set {
                let dim = dim.as_str().expect("a dimension is a string");
                assert!(
                    r[dim].is_string(),
                    "dimension {dim} is a string member of {r}"
                );
            }
        }
        let metrics = d["Metrics"].as_array().expect("Metrics is an array");
        assert!(!metrics.is_empty() && metrics.len() <= 100);
        for m in metrics {
            let name = m["Name"].as_str().expect("a metric has a Name");
            assert!(!name.is_empty() && name.len() <= 255);
            let unit = m["Unit"].as_str().expect("a metric has a Unit");
            assert!(UNITS.contains(&unit), "unit {unit}");
            assert!(
                r[name].is_number(),
                "metric {name} is a number member of {r}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_script_run_writes_an_emf_record_of_its_tenant() {
    use native_core::aws::lambda::{handle_work_batch_by, SqsEvent};
    let Some(ep) = endpoint() else { return };
    // GIVEN a tenant with three scripts: one that makes two data calls, one that fails, one
    // that breaches max_data_ops
    let s = deployed(&ep).await;
    tenant(
        &s,
        "metered",
        r#"{ "queue": true, "limits": { "max_data_ops": 2 } }"#,
        &[
            (
                "two",
                "function on_queue(ctx, ev) native.db.put('p', 'k', 1) native.db.get('p', 'k') end",
            ),
            ("boom", "function on_queue(ctx, ev) error('boom') end"),
            (
                "greedy",
                "function on_queue(ctx, ev) for i = 1, 5 do pcall(native.db.get, 'p', 'k') end end",
            ),
        ],
    )
    .await;
    let log = Arc::new(MemLog::default());
    let rt = Arc::new(
        runtime_for(&s.config, &s.clients)
            .with_log(log.clone())
            .with_metrics("native-test"),
    );
    let mut batch = SqsEvent::default();
    batch.records = ["two", "boom", "greedy"]
        .iter()
        .map(|script| {
            let body = json!({ "tenant": "metered", "script": script, "event": {} });
            record(script, &body.to_string())
        })
        .collect();
    // WHEN they run
    handle_work_batch_by(&rt, batch, now_ms() + 30_000).await;
    // THEN each run wrote one record that follows the EMF specification, in the namespace,
    // with the tenant as its only dimension and the figures of that run
    let records: Vec<Value> = log
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r.get("_aws").is_some())
        .cloned()
        .collect();
    assert_eq!(records.len(), 3, "{records:?}");
    for r in &records {
        check_emf(r);
        let d = &r["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(d["Namespace"], "native-test");
        assert_eq!(d["Dimensions"], json!([["tenant"]]));
        assert_eq!(r["tenant"], "metered");
        assert_eq!(r["Invocations"], 1);
        assert!(r["Duration"].as_f64().unwrap() > 0.0);
    }
    let of = |script: &str| records.iter().find(|r| r["script"] == script).unwrap();
    let names: Vec<&str> = of("two")["_aws"]["CloudWatchMetrics"][0]["Metrics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["Name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Invocations",
            "Errors",
            "LimitBreaches",
            "Duration",
            "DataOps"
        ]
    );
    assert_eq!(
        (of("two")["Errors"].clone(), of("two")["DataOps"].clone()),
        (json!(0), json!(2))
    );
    assert_eq!(
        (
            of("boom")["Errors"].clone(),
            of("boom")["LimitBreaches"].clone()
        ),
        (json!(1), json!(0))
    );
    assert_eq!(
        (
            of("greedy")["Errors"].clone(),
            of("greedy")["LimitBreaches"].clone()
        ),
        (json!(1), json!(1))
    );
    assert_eq!(
        of("greedy")["DataOps"],
        5,
        "counted as max_data_ops counts: every call asked for"
    );
}
