//! A drain pass that fails part way gives back what it received (issue 29): the messages it
//! had not finished are visible again at once, not held until their lease lapses (once 900 s).
//! Its runs' writes are synced once for the whole pass, before any of its messages is deleted,
//! and its messages run at once.

use std::sync::Arc;

use async_trait::async_trait;
use native_core::local::{drain, DrainOptions};
use native_core::ports::{Backends, DeadLetter, Keep, Message, Queue, QueueKind, QueueStats};
use native_core::runtime::Runtime;
use native_core::{Error, Result};
use native_tests::TestProject;
use serde_json::json;

/// The project's queue, whose deletes fail (the drain cannot record a handled message), or
/// whose flush fails (the runs' writes cannot be made durable).
#[derive(Debug)]
struct Failing {
    q: Arc<dyn Queue>,
    deletes: bool,
    flush: bool,
}

fn gone() -> Error {
    Error::Backend {
        backend: "test",
        message: "the disk is gone".into(),
        source: None,
    }
}

#[async_trait]
impl Queue for Failing {
    async fn send(&self, queue: QueueKind, body: String, delay_s: u32) -> Result<()> {
        self.q.send(queue, body, delay_s).await
    }
    async fn receive(
        &self,
        queue: QueueKind,
        max: usize,
        visibility_s: u32,
    ) -> Result<Vec<Message>> {
        self.q.receive(queue, max, visibility_s).await
    }
    async fn delete(&self, queue: QueueKind, receipt: &str) -> Result<()> {
        if self.deletes {
            return Err(gone());
        }
        self.q.delete(queue, receipt).await
    }
    async fn retry_later(
        &self,
        queue: QueueKind,
        receipt: &str,
        delay_s: u32,
        error: &str,
    ) -> Result<()> {
        self.q.retry_later(queue, receipt, delay_s, error).await
    }
    async fn hold(&self, queue: QueueKind, receipt: &str, visibility_s: u32) -> Result<()> {
        self.q.hold(queue, receipt, visibility_s).await
    }
    async fn stats(&self, queue: QueueKind) -> Result<QueueStats> {
        self.q.stats(queue).await
    }
    async fn dead_letters(&self, queue: QueueKind, max: usize) -> Result<Vec<DeadLetter>> {
        self.q.dead_letters(queue, max).await
    }
    async fn redrive(&self, queue: QueueKind, keep: &Keep<'_>, max: usize) -> Result<u64> {
        self.q.redrive(queue, keep, max).await
    }
    async fn flush(&self) -> Result<()> {
        if self.flush {
            return Err(gone());
        }
        self.q.flush().await
    }
}

/// Five work messages sent, and a runtime over the project whose queue fails as `failing` says.
async fn five_messages(deletes: bool, flush: bool) -> (TestProject, Arc<Runtime>) {
    let p = TestProject::new(
        "acme",
        r#"{ "queue": true }"#,
        &[
            (
                "send",
                "function on_invoke(ctx, ev) for i = 1, 5 do native.queue.send('work', { n = i }) end end",
            ),
            (
                "work",
                "function on_queue(ctx, ev) native.db.put('done', tostring(ev.n), { ok = true }) end",
            ),
            (
                "done",
                "function on_invoke(ctx, ev) return native.db.get('done', tostring(ev.n)) ~= nil end",
            ),
        ],
    );
    p.invoke("acme", "send", json!({})).await.unwrap();
    let b = &p.rt.services.backends;
    let backends = Backends {
        objects: b.objects.clone(),
        kv: b.kv.clone(),
        queue: Arc::new(Failing {
            q: b.queue.clone(),
            deletes,
            flush,
        }),
        vault: b.vault.clone(),
    };
    let rt = Arc::new(Runtime::new(
        p.rt.services.deployment.clone(),
        backends,
        p.project.tenants.clone(),
    ));
    (p, rt)
}

/// All five are visible again now (they run again: at least once), and none spent an attempt
/// on a receive given back.
async fn all_five_visible_again(p: &TestProject) {
    let q = &p.rt.services.backends.queue;
    let s = q.stats(QueueKind::Work).await.unwrap();
    assert_eq!((s.visible, s.waiting), (5, 0), "{s:?}");
    let got = q.receive(QueueKind::Work, 10, 30).await.unwrap();
    let mut counts: Vec<u32> = got.iter().map(|m| m.receive_count).collect();
    counts.sort();
    assert_eq!(counts, [1, 1, 1, 1, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_pass_gives_back_what_it_received() {
    // GIVEN five work messages, and a queue that cannot delete
    let (p, rt) = five_messages(true, false).await;
    // WHEN a drain pass handles them and cannot record it (it deletes a pass's handled
    // messages together, at the pass's end)
    let err = drain(&rt, DrainOptions::default()).await.unwrap_err();
    assert!(err.to_string().contains("the disk is gone"), "{err}");
    // THEN all five are visible again
    all_five_visible_again(&p).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_whose_sync_fails_deletes_none_of_its_messages() {
    // GIVEN five work messages whose runs write, and a backend that cannot sync
    let (p, rt) = five_messages(false, true).await;
    // WHEN a drain pass runs them (each run leaves its sync to the pass) and the pass's one
    // sync fails
    let err = drain(&rt, DrainOptions::default()).await.unwrap_err();
    assert!(err.to_string().contains("the disk is gone"), "{err}");
    // THEN none of them was deleted: their writes may be lost, so all five run again
    all_five_visible_again(&p).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_of_a_pass_wait_for_one_sync_between_them() {
    // GIVEN five work messages whose runs each write an item
    let (p, _) = five_messages(false, false).await;
    let synced = || p.project.backend.synced_commits();
    let before = synced();
    // WHEN one drain handles them, in one pass
    let r = drain(&p.rt, DrainOptions::default()).await.unwrap();
    assert_eq!(r.handled, 5);
    // THEN their writes were synced together, once, before the deletes (which need no sync of
    // their own); a sync per run would be five
    assert_eq!(synced() - before, 1, "synced commits in the drain");
    for n in 1..=5 {
        let done = p.invoke("acme", "done", json!({ "n": n })).await.unwrap();
        assert_eq!(done, json!(true), "the item of message {n}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_messages_of_a_pass_run_at_once() {
    // GIVEN a local server that answers its requests only once two are waiting, and two
    // messages whose scripts each make a request to it (within a 2 s timeout)
    let p = two_calls_answered_together().await;
    // WHEN one drain pass receives both
    let r = drain(&p.rt, DrainOptions::default()).await.unwrap();
    // THEN both ran at once: each request was answered (one at a time, the first would wait
    // for the second until its script's timeout)
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(r.handled, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_at_a_time_the_messages_of_a_pass_run_in_turn() {
    // GIVEN the same server and messages
    let p = two_calls_answered_together().await;
    // WHEN a drain that runs them one at a time (`native test`'s, for ids drawn in order)
    // receives both
    let opts = DrainOptions {
        one_at_a_time: true,
        ..Default::default()
    };
    let r = drain(&p.rt, opts).await.unwrap();
    // THEN the first waited alone until its timeout and failed; the second found the first's
    // request still held by the server and was answered with it
    assert_eq!(r.failures.len(), 1, "{:?}", r.failures);
    assert!(r.failures[0].error.contains("timeout"), "{:?}", r.failures);
    assert_eq!(r.handled, 1);
}

/// A project whose two queued messages each call a local server that answers only once two
/// requests are waiting.
async fn two_calls_answered_together() -> TestProject {
    let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = server.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let mut waiting = Vec::new();
        while let Ok((mut s, _)) = server.accept().await {
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            waiting.push(s);
            if waiting.len() == 2 {
                for mut s in waiting.drain(..) {
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 8\r\nconnection: close\r\n\r\ntogether")
                        .await;
                }
            }
        }
    });
    let p = TestProject::with_tenants(
        r#"{ "buckets": { "map": {} }, "http": { "allow_private_networks": true } }"#,
        &[(
            "acme",
            &format!(
                r#"{{ "queue": true, "limits": {{ "timeout_s": 2 }}, "http": {{ "allow": ["127.0.0.1:{port}"] }} }}"#
            ),
            &[
                (
                    "send",
                    "function on_invoke(ctx, ev) for i = 1, 2 do native.queue.send('call', { n = i }) end end",
                ),
                (
                    "call",
                    &format!(
                        "function on_queue(ctx, ev) local r = native.http.request{{ url = 'http://127.0.0.1:{port}/' }} assert(r.body == 'together', r.body) end"
                    ),
                ),
            ],
        )],
    );
    p.invoke("acme", "send", json!({})).await.unwrap();
    p
}
