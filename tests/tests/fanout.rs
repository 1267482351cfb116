//! Fan-out limits: every message and every object event carries its chain depth (`ctx.depth`);
//! work past `max_chain_depth` is refused and dead-lettered, not run; one invocation sends at
//! most `max_sends` messages. On both backends (the depth of an object a script wrote travels
//! with the object: a column on the embedded backend, user metadata on S3).

use native_core::ports::QueueKind;
use native_tests::{on_both_backends, Backend, TestProject, DEPLOYMENT};
use serde_json::json;

const CONFIG: &str = r#"{ "queue": true, "limits": { "max_chain_depth": 3, "max_sends": 5 } }"#;

/// A project of tenant `acme` ([`CONFIG`]) with `scripts` on `backend`.
async fn project(backend: Backend, scripts: &[(&str, &str)]) -> TestProject {
    TestProject::on(backend, DEPLOYMENT, &[("acme", CONFIG, scripts)]).await
}

/// How many messages of `queue` were dead-lettered.
async fn dead(p: &TestProject, queue: QueueKind) -> usize {
    let q = &p.rt.services.backends.queue;
    q.dead_letters(queue, 10).await.unwrap().len()
}

/// The depths that `on_queue`/`on_invoke` logged, in order.
fn depths(p: &TestProject) -> Vec<i64> {
    p.log
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["msg"] == "depth")
        .map(|r| r["depth"].as_i64().unwrap())
        .collect()
}

async fn a_message_loop_stops_at_max_chain_depth(backend: Backend) {
    // GIVEN a script whose on_queue sends itself two messages (a doubling flood)
    let looping = r#"
        function on_invoke(ctx) native.log("info", "depth", { depth = ctx.depth }) native.queue.send("loop", {}) end
        function on_queue(ctx)
            native.log("info", "depth", { depth = ctx.depth })
            native.queue.send("loop", {})
            native.queue.send("loop", {})
        end"#;
    let p = project(
        backend,
        &[("loop", looping), ("router", "function on_route() end")],
    )
    .await;
    // WHEN it is started and the queues drain
    p.invoke("acme", "loop", json!({})).await.unwrap();
    let report = p.drain().await;
    // THEN messages ran at depths 1 to 3 only (1 + 2 + 4 of them), and the four at depth 3
    // failed on the limit (each of their five attempts) instead of queueing depth 4
    let d = depths(&p);
    let count = |n: i64| d.iter().filter(|&&x| x == n).count();
    assert_eq!(
        (count(0), count(1), count(2), count(3), d.len()),
        (1, 1, 2, 20, 24),
        "{d:?}"
    );
    assert!(
        report
            .failures
            .iter()
            .all(|f| f.error.contains("limit max_chain_depth exceeded")
                && f.error.contains("chain depth 4")),
        "{:?}",
        report.failures
    );
    assert!(!report.failures.is_empty());
}

async fn an_object_loop_stops_at_max_chain_depth(backend: Backend) {
    // GIVEN a handler that writes the next object into the bucket it is triggered by
    let copy = r#"function on_queue(ctx, ev)
        native.log("info", "depth", { depth = ctx.depth })
        local n = tonumber(string.match(ev.key, "%d+$"))
        native.bucket.In.put("n/" .. (n + 1), "x")
    end"#;
    let p = project(
        backend,
        &[
            ("copy", copy),
            ("router", "function on_route(ctx, ev) return 'copy' end"),
        ],
    )
    .await;
    // WHEN an outside party writes the first object
    p.rt.put_object("acme", "In", "n/0", "x".into())
        .await
        .unwrap();
    let report = p.drain().await;
    // THEN the handler ran at depths 0 to 3, the object written at depth 3 exists, and its
    // event was refused (not run) and dead-lettered with the limit's error
    assert_eq!(depths(&p), vec![0, 1, 2, 3]);
    assert!(p.get("acme", "In", "n/4").await.is_some());
    assert!(p.get("acme", "In", "n/5").await.is_none());
    assert!(
        report.failures.iter().any(|f| f.error.contains(
            "limit max_chain_depth exceeded: the event of In/n/4 would run at chain depth 4"
        )),
        "{:?}",
        report.failures
    );
    assert_eq!(dead(&p, QueueKind::Events).await, 1);
}

async fn a_continuation_past_the_depth_is_dead_lettered_not_run(backend: Backend) {
    // GIVEN an on_queue at the deepest allowed depth that completes a barrier
    let s = r#"
        function on_invoke(ctx) native.queue.send("s", { hop = 1 }) end
        function on_queue(ctx, ev)
            native.log("info", "depth", { depth = ctx.depth })
            if ev.barrier then return end
            if ctx.depth < 3 then native.queue.send("s", {}) return end
            local id = native.barrier.create({ members = { "m" }, continue_with = "s" })
            native.barrier.ack(id, "m")
        end"#;
    let p = project(backend, &[("s", s), ("router", "function on_route() end")]).await;
    // WHEN it runs and the queues drain
    p.invoke("acme", "s", json!({})).await.unwrap();
    let report = p.drain().await;
    // THEN the continuation (depth 4) never ran; it failed on the limit until dead-lettered
    assert_eq!(depths(&p), vec![1, 2, 3]);
    assert!(report.failures.iter().all(|f| f.error.contains(
        "limit max_chain_depth exceeded: the message for \"s\" would run at chain depth 4"
    )));
    assert_eq!(dead(&p, QueueKind::Work).await, 1);
}

on_both_backends!(
    a_message_loop_stops_at_max_chain_depth,
    an_object_loop_stops_at_max_chain_depth,
    a_continuation_past_the_depth_is_dead_lettered_not_run,
    a_fork_bomb_ends_by_itself_on_its_chains_width,
);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_sends_bounds_one_invocation_even_under_pcall() {
    // GIVEN a script that tries to send 1000 messages, catching every error
    let p = TestProject::new(
        "acme",
        CONFIG,
        &[(
            "s",
            "function on_invoke() for i = 1, 1000 do pcall(native.queue.send, 's', { i = i }) end return 'done' end function on_queue() end",
        )],
    );
    // WHEN it runs
    let e = p
        .invoke("acme", "s", json!({}))
        .await
        .unwrap_err()
        .to_string();
    // THEN it fails on the limit, and none of its messages were queued: a failed invocation
    // sends nothing (its messages wait for it to succeed)
    assert!(
        e.contains("limit max_sends exceeded: native.queue.send to \"s\" would be message 6 of this invocation and the tenant allows 5"),
        "{e}"
    );
    let stats =
        p.rt.services
            .backends
            .queue
            .stats(QueueKind::Work)
            .await
            .unwrap();
    assert_eq!(stats.visible, 0);
}

/// The widths that `on_queue` logged, sorted.
fn widths(p: &TestProject) -> Vec<i64> {
    let mut w: Vec<i64> = p
        .log
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["msg"] == "width")
        .map(|r| r["width"].as_i64().unwrap())
        .collect();
    w.sort_unstable();
    w
}

async fn a_fork_bomb_ends_by_itself_on_its_chains_width(backend: Backend) {
    // GIVEN a script whose on_queue sends itself two messages, a tenant whose chains may be 8
    // wide, and a depth limit far beyond what the tree reaches
    let bomb = r#"
        function on_invoke(ctx) native.queue.send("bomb", {}) return ctx.width end
        function on_queue(ctx)
            native.log("info", "width", { width = ctx.width })
            native.queue.send("bomb", {})
            native.queue.send("bomb", {})
        end"#;
    let config = r#"{ "queue": true, "limits": { "max_chain_width": 8, "max_chain_depth": 100 } }"#;
    let p = TestProject::on(
        backend,
        DEPLOYMENT,
        &[(
            "acme",
            config,
            &[("bomb", bomb), ("router", "function on_route() end")],
        )],
    )
    .await;
    // WHEN it is started and the queues drain
    assert_eq!(p.invoke("acme", "bomb", json!({})).await.unwrap(), json!(8));
    let report = p.drain().await;
    // THEN the tree halved its width at each level (8, 4 4, 2 2 2 2, then eight of width 1),
    // and each width-1 message failed on the limit at its second send, sent nothing, and went
    // to the dead letters at once: 15 messages in all, the drain finished by itself
    assert_eq!(
        widths(&p),
        [[1; 8].as_slice(), &[2; 4], &[4; 2], &[8]].concat()
    );
    assert_eq!(report.handled, 7, "{:?}", report.failures);
    assert_eq!(report.failures.len(), 8, "{:?}", report.failures);
    assert!(
        report.failures.iter().all(|f| f.attempt == 1
            && f.error.contains("limit max_chain_width exceeded: native.queue.send to \"bomb\" would be work item 2 of this invocation, whose share of its chain is 1 wide")),
        "{:?}",
        report.failures
    );
    assert_eq!(dead(&p, QueueKind::Work).await, 8);
    let stats =
        p.rt.services
            .backends
            .queue
            .stats(QueueKind::Work)
            .await
            .unwrap();
    assert_eq!((stats.visible, stats.waiting), (0, 0), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chains_width_is_split_evenly_and_timers_and_continuations_take_half() {
    // GIVEN a root that sends three messages, and one that sets a timer, completes a barrier
    // with a continuation, then sends two messages
    let s = r#"
        function on_invoke(ctx, ev)
            if ev.fan then
                for i = 1, 3 do native.queue.send("s", {}) end
            else
                native.timer.at({ in_s = 0 }, "s", {})
                local id = native.barrier.create({ members = { "m" }, continue_with = "s" })
                native.barrier.ack(id, "m")
                native.queue.send("s", {})
                native.queue.send("s", {})
            end
            return ctx.width
        end
        function on_queue(ctx, ev) native.log("info", "width", { width = ctx.width }) end"#;
    let config = r#"{ "queue": true, "limits": { "max_chain_width": 100, "max_sends": 4 } }"#;
    let p = TestProject::new("acme", config, &[("s", s)]);
    // WHEN the fan-out runs THEN its three messages share the root's 100: 34, 33, 33
    assert_eq!(
        p.invoke("acme", "s", json!({ "fan": true })).await.unwrap(),
        json!(100)
    );
    p.drain().await;
    assert_eq!(widths(&p), vec![33, 33, 34]);
    p.log.0.lock().unwrap().clear();
    // WHEN the other runs THEN the timer took half of the 100 beside one for each of the
    // three sends it may still make (48), the continuation half of the 52 left beside those
    // three (24), and the two messages split the 28 left
    p.invoke("acme", "s", json!({})).await.unwrap();
    p.drain().await;
    assert_eq!(widths(&p), vec![14, 14, 24, 48]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctx_depth_is_zero_for_direct_and_outside_work() {
    let p = TestProject::new(
        "acme",
        CONFIG,
        &[("s", "function on_invoke(ctx) return ctx.depth end function on_queue(ctx) native.log('info', 'depth', { depth = ctx.depth }) end")],
    );
    assert_eq!(p.invoke("acme", "s", json!({})).await.unwrap(), json!(0));
    // A message from outside (no depth field, as older senders wrote it) runs at depth 0.
    p.rt.handle_work_message(r#"{"tenant":"acme","script":"s","event":{}}"#, 1)
        .await
        .unwrap();
    assert_eq!(depths(&p), vec![0]);
}
