//! Events and routing: object events reach the tenant's router, whose choice runs; queued
//! messages arrive exactly as sent; bad input is kept and dead-lettered, never lost.

use native_core::local::{drain, DrainOptions};
use native_core::ports::{PutMode, QueueKind};
use native_tests::TestProject;
use serde_json::json;

const Q: &str = r#"{ "queue": true }"#;

/// The seed's router and ack script, as written there.
const SEED_ROUTER: &str = r#"
local function on_route(_ctx, event)
  if event.bucket == "Acks" then return "ack" end
  return "default"
end
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn object_events_reach_the_routed_script_with_the_s3_fields() {
    // GIVEN the seed's router, and a default script that records the event it got
    let p = TestProject::new(
        "acme",
        Q,
        &[
            ("router", SEED_ROUTER),
            (
                "default",
                "function on_queue(ctx, ev) native.db.put('seen', ev.key, ev) end",
            ),
            (
                "ack",
                "function on_queue(ctx, ev) native.db.put('acks', ev.key, ev) end",
            ),
            (
                "get",
                "function on_invoke(ctx, ev) return native.db.get(ev.p, ev.k) end",
            ),
        ],
    );
    // WHEN an outside party writes objects with awkward keys into In and Acks
    p.rt.put_object("acme", "In", "b1/a doc ü.xml", "<x/>".into())
        .await
        .unwrap();
    p.rt.put_object("acme", "Acks", "b1/a.json", "{}".into())
        .await
        .unwrap();
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // THEN each script saw the logical bucket and the decoded key relative to the tenant folder
    let seen = p
        .invoke("acme", "get", json!({ "p": "seen", "k": "b1/a doc ü.xml" }))
        .await
        .unwrap();
    assert_eq!(seen["bucket"], "In");
    assert_eq!(seen["key"], "b1/a doc ü.xml");
    assert_eq!(seen["size"], 4);
    assert_eq!(seen["event_name"], "ObjectCreated:Put");
    assert!(seen["etag"].as_str().is_some_and(|e| !e.is_empty()));
    let ack = p
        .invoke("acme", "get", json!({ "p": "acks", "k": "b1/a.json" }))
        .await
        .unwrap();
    assert_eq!(ack["bucket"], "Acks");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_can_rewrite_the_event_or_drop_it() {
    let p = TestProject::new(
        "acme",
        Q,
        &[
            (
                "router",
                r#"function on_route(ctx, event)
            if event.key == "skip.txt" then return nil end
            return { script = "h", event = { original = event.key, extra = 1 } }
        end"#,
            ),
            (
                "h",
                "function on_queue(ctx, ev) native.db.put('h', 'ev', ev) end",
            ),
            (
                "get",
                "function on_invoke(ctx, ev) return native.db.get('h', 'ev') end",
            ),
        ],
    );
    p.rt.put_object("acme", "In", "x.txt", "1".into())
        .await
        .unwrap();
    p.rt.put_object("acme", "In", "skip.txt", "1".into())
        .await
        .unwrap();
    assert!(p.drain().await.failures.is_empty());
    assert_eq!(
        p.invoke("acme", "get", json!({})).await.unwrap(),
        json!({ "original": "x.txt", "extra": 1 })
    );
    assert!(p.log.messages().iter().any(|m| m == "event dropped"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_naming_an_unknown_script_keeps_the_message_until_it_is_dead_lettered() {
    let p = TestProject::new(
        "acme",
        Q,
        &[("router", "function on_route() return 'nope' end")],
    );
    p.rt.put_object("acme", "In", "a.txt", "1".into())
        .await
        .unwrap();
    let r = p.drain().await;
    assert_eq!(r.failures.len(), 5, "tried five times: {:?}", r.failures);
    assert_eq!(
        r.failures.iter().map(|f| f.attempt).collect::<Vec<_>>(),
        [1, 2, 3, 4, 5]
    );
    assert!(
        r.failures[0].error.contains(
            "on_route chose an unknown script: script \"nope\" of tenant \"acme\" not found"
        ),
        "{}",
        r.failures[0].error
    );
    let dead =
        p.rt.services
            .backends
            .queue
            .dead_letters(QueueKind::Events, 10)
            .await
            .unwrap();
    assert_eq!(dead.len(), 1);
    assert!(dead[0].last_error.as_deref().unwrap_or("").contains("nope"));
    assert!(dead[0].body.contains("a.txt"), "the message itself is kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_event_messages_are_kept_and_dead_lettered() {
    let p = TestProject::new(
        "acme",
        Q,
        &[("router", "function on_route() return nil end")],
    );
    let q = &p.rt.services.backends.queue;
    q.send(QueueKind::Events, "{not json".into(), 0)
        .await
        .unwrap();
    q.send(QueueKind::Work, r#"{"tenant":"acme"}"#.into(), 0)
        .await
        .unwrap();
    let r = p.drain().await;
    assert_eq!(r.failures.len(), 10);
    assert!(r
        .failures
        .iter()
        .any(|f| f.error.contains("event message is not JSON")));
    assert!(r.failures.iter().any(|f| f
        .error
        .contains("work message is not {tenant, script, event}")));
    assert_eq!(
        q.dead_letters(QueueKind::Events, 10).await.unwrap()[0].body,
        "{not json"
    );
    assert_eq!(q.dead_letters(QueueKind::Work, 10).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_outside_tenant_folders_and_test_events_are_dropped_not_retried() {
    let p = TestProject::new(
        "acme",
        Q,
        &[("router", "function on_route() error('must not run') end")],
    );
    let objects = &p.rt.services.backends.objects;
    objects
        .put("acme-in", "no-folder.txt", "x".into(), PutMode::Overwrite)
        .await
        .unwrap();
    objects
        .put("acme-in", "ghost/x.txt", "x".into(), PutMode::Overwrite)
        .await
        .unwrap();
    let q = &p.rt.services.backends.queue;
    q.send(
        QueueKind::Events,
        r#"{"Service":"Amazon S3","Event":"s3:TestEvent","Bucket":"acme-in"}"#.into(),
        0,
    )
    .await
    .unwrap();
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.handled, 3);
    assert!(q
        .dead_letters(QueueKind::Events, 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_bucket_events_are_dollar_batch_and_only_done_json_notifies() {
    let p = TestProject::new("acme", r#"{ "queue": true, "batch": true }"#, &[
        ("router", "function on_route(ctx, event) native.db.put('r', event.bucket .. ':' .. event.key, true) return nil end"),
        ("list", "function on_invoke() return native.db.query('r').items end"),
    ]);
    let objects = &p.rt.services.backends.objects;
    objects
        .put(
            "partner-batch",
            "tenants/acme/jobs/j1/part.ndjson",
            "x".into(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    objects
        .put(
            "partner-batch",
            "tenants/acme/jobs/j1/done.json",
            "{}".into(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    p.rt.put_object("acme", "In", "jobs/x/done.json", "{}".into())
        .await
        .unwrap();
    assert!(p.drain().await.failures.is_empty());
    let keys: Vec<_> = p
        .invoke("acme", "list", json!({}))
        .await
        .unwrap()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(keys, ["$batch:jobs/j1/done.json", "In:jobs/x/done.json"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_events_arrive_exactly_as_sent_with_attempts_counted() {
    let p = TestProject::new("acme", Q, &[
        ("send", "function on_invoke(ctx, ev) native.queue.send('recv', ev) end"),
        ("recv", r#"function on_queue(ctx, ev)
            native.db.put('got', tostring(ctx.attempt), ev)
            if ctx.attempt < 3 then error('not yet') end
        end"#),
        ("get", "function on_invoke(ctx, ev) return { native.db.get('got', '1'), native.db.get('got', '3') } end"),
    ]);
    let ev = json!({ "s": "x", "n": 1.5, "i": 7, "list": [1, 2, { "k": true }], "nested": { "a": { "b": "c" } } });
    p.invoke("acme", "send", ev.clone()).await.unwrap();
    let r = p.drain().await;
    assert_eq!(r.failures.len(), 2, "failed twice, then succeeded");
    let got = p.invoke("acme", "get", json!({})).await.unwrap();
    assert_eq!(got[0], ev);
    assert_eq!(got[1], ev);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_happen_only_after_the_handler_succeeded() {
    let p = TestProject::new(
        "acme",
        Q,
        &[
            (
                "router",
                "function on_route(ctx, event) if event.bucket == 'In' then return 'h' end end",
            ),
            (
                "h",
                r#"function on_queue(ctx, ev)
            local n = (native.db.get('n', 'n') or 0) + 1
            native.db.put('n', 'n', n)
            if n == 1 then return { delete = { ev.key, { bucket = "Acks", key = "other.txt" } }, fail = error("first attempt fails after choosing deletes") } end
            return { delete = { ev.key, { bucket = "Acks", key = "other.txt" } } }
        end"#,
            ),
        ],
    );
    p.rt.put_object("acme", "Acks", "other.txt", "1".into())
        .await
        .unwrap();
    p.rt.put_object("acme", "In", "doc.txt", "1".into())
        .await
        .unwrap();
    // WHEN the first attempt fails after naming its deletes
    let r = drain(
        &p.rt,
        DrainOptions {
            wait: false,
            retry_delay_s: 1,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(r.failures.len(), 1);
    // THEN nothing is deleted
    assert!(
        p.get("acme", "In", "doc.txt").await.is_some(),
        "kept after a failed handler"
    );
    assert!(p.get("acme", "Acks", "other.txt").await.is_some());
    // WHEN the retry, due a second later, succeeds THEN both objects are deleted (a draining
    // wait does not wait for retries: they come a visibility timeout later)
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    let r = p.drain().await;
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert!(p.get("acme", "In", "doc.txt").await.is_none());
    assert!(p.get("acme", "Acks", "other.txt").await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delete_lists_are_checked() {
    let p = TestProject::new("acme", Q, &[
        ("many", "function on_queue() local t = {} for i = 1, 101 do t[i] = 'k' .. i end return { delete = t } end"),
        ("bad", "function on_queue() return { delete = { { bucket = 'Nope', key = 'x' } } } end"),
        ("climb", "function on_queue() return { delete = { { bucket = 'In', key = '../other/x' } } } end"),
        ("plain", "function on_queue() return { delete = { 'x' } } end"),
    ]);
    for (script, want) in [
        ("many", "returned 101 objects to delete; at most 100"),
        ("bad", "unknown bucket \"Nope\""),
        ("climb", "\"..\" segment"),
        ("plain", "a plain key needs an object event"),
    ] {
        let body = json!({ "tenant": "acme", "script": script, "event": {} }).to_string();
        let e =
            p.rt.handle_work_message(&body, 1)
                .await
                .unwrap_err()
                .to_string();
        assert!(e.contains(want), "{script}: {e}");
    }
}
