//! Replay of lost notifications: `native.bucket.<Name>.replay(prefix)` re-sends the object
//! events under a prefix to the tenant's router, so a barrier whose ack notification was lost
//! completes, once; replay stops within `max_data_ops` and gives a cursor to go on.

use native_core::ports::QueueKind;
use native_tests::{Backend, TestProject};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    replay_repairs_a_barrier_whose_ack_event_was_dropped,
    replay_stops_within_max_data_ops_with_a_cursor,
);

const ROUTER: &str = r#"
function on_route(ctx, ev)
  if ev.bucket == "Acks" then return "ack" end
  return nil
end
"#;
const ACK: &str = r#"
function on_invoke(ctx, ev)
  if ev.replay then return native.bucket.Acks.replay(ev.replay, { cursor = ev.cursor }) end
  return native.barrier.create{ id = "b1", members = { "a", "b", "c" }, continue_with = "done" }
end
function on_queue(ctx, ev)
  local member = ev.key:match("^acks/(.+)%.json$")
  native.barrier.ack("b1", member, { ok = true })
end
"#;
const DONE: &str = r#"
function on_queue(ctx, ev)
  local n = (native.db.get("runs", "done") or { n = 0 }).n
  native.db.put("runs", "done", { n = n + 1, total = native.barrier.hydrate(ev).total })
end
"#;

async fn project(backend: Backend, limits: &str) -> TestProject {
    let config = format!(r#"{{ "queue": true, "limits": {limits} }}"#);
    TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[(
            "acme",
            config.as_str(),
            &[("router", ROUTER), ("ack", ACK), ("done", DONE)],
        )],
    )
    .await
}

/// Takes every message off the events queue unprocessed: the notifications are lost.
async fn lose_events(p: &TestProject) -> usize {
    let q = &p.rt.services.backends.queue;
    let mut lost = 0;
    for _ in 0..50 {
        let msgs = q.receive(QueueKind::Events, 10, 30).await.unwrap();
        for m in &msgs {
            q.delete(QueueKind::Events, &m.receipt).await.unwrap();
            lost += 1;
        }
        let st = q.stats(QueueKind::Events).await.unwrap();
        if msgs.is_empty() && st.visible + st.waiting == 0 {
            break;
        }
    }
    lost
}

async fn replay_repairs_a_barrier_whose_ack_event_was_dropped(backend: Backend) {
    // GIVEN a barrier of a, b, c whose acks are objects routed to an ack script
    let p = project(backend, "{}").await;
    p.rt.invoke("acme", "ack", json!({})).await.unwrap();
    for m in ["a", "c"] {
        p.rt.put_object("acme", "Acks", &format!("acks/{m}.json"), "{}".into())
            .await
            .unwrap();
    }
    p.drain().await;
    // AND b's ack object landed, but its notification was lost
    p.rt.put_object("acme", "Acks", "acks/b.json", "{}".into())
        .await
        .unwrap();
    assert_eq!(lose_events(&p).await, 1);
    p.drain().await;
    let kv = p.rt.services.backends.kv.clone();
    assert!(
        kv.get("d#acme#runs", "done").await.unwrap().is_none(),
        "b is still pending"
    );
    // WHEN the script replays acks/
    let r =
        p.rt.invoke("acme", "ack", json!({ "replay": "acks/" }))
            .await
            .unwrap();
    assert_eq!(r["replayed"], 3);
    assert!(r.get("cursor").is_none_or(Value::is_null), "{r}");
    p.drain().await;
    // THEN the barrier completed and its continuation ran once (a and c were duplicates)
    let done = kv
        .get("d#acme#runs", "done")
        .await
        .unwrap()
        .expect("continued");
    assert_eq!(
        serde_json::from_str::<Value>(&done.value).unwrap(),
        json!({ "n": 1, "total": 3 })
    );
}

async fn replay_stops_within_max_data_ops_with_a_cursor(backend: Backend) {
    // GIVEN 12 objects and a tenant allowed 8 backend calls per invocation
    let p = project(backend, r#"{ "max_data_ops": 8 }"#).await;
    for i in 0..12 {
        p.rt.put_object("acme", "Acks", &format!("x/{i:02}"), "{}".into())
            .await
            .unwrap();
    }
    lose_events(&p).await;
    // WHEN it replays x/ page by page with the cursor
    let mut cursor = Value::Null;
    let mut total = 0;
    let mut invocations = 0;
    loop {
        let r =
            p.rt.invoke("acme", "ack", json!({ "replay": "x/", "cursor": cursor }))
                .await
                .unwrap();
        invocations += 1;
        total += r["replayed"].as_u64().unwrap();
        assert!(r["replayed"].as_u64().unwrap() <= 7, "{r}");
        cursor = r.get("cursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
        assert!(invocations < 10);
    }
    // THEN every key was replayed once, in invocations that each stayed within the limit
    assert_eq!((total, invocations), (12, 2));
    assert_eq!(lose_events(&p).await, 12);
}
