//! A drain pass that fails part way gives back what it received (issue 29): the messages it
//! had not finished are visible again at once, not held until their lease lapses (once 900 s).

use std::sync::Arc;

use async_trait::async_trait;
use native_core::local::{drain, DrainOptions};
use native_core::ports::{Backends, DeadLetter, Keep, Message, Queue, QueueKind, QueueStats};
use native_core::runtime::Runtime;
use native_core::{Error, Result};
use native_tests::TestProject;
use serde_json::json;

/// The project's queue, whose deletes fail: the drain cannot record a handled message.
#[derive(Debug)]
struct DeletesFail(Arc<dyn Queue>);

#[async_trait]
impl Queue for DeletesFail {
    async fn send(&self, queue: QueueKind, body: String, delay_s: u32) -> Result<()> {
        self.0.send(queue, body, delay_s).await
    }
    async fn receive(
        &self,
        queue: QueueKind,
        max: usize,
        visibility_s: u32,
    ) -> Result<Vec<Message>> {
        self.0.receive(queue, max, visibility_s).await
    }
    async fn delete(&self, _queue: QueueKind, _receipt: &str) -> Result<()> {
        Err(Error::Backend {
            backend: "test",
            message: "the disk is gone".into(),
            source: None,
        })
    }
    async fn retry_later(
        &self,
        queue: QueueKind,
        receipt: &str,
        delay_s: u32,
        error: &str,
    ) -> Result<()> {
        self.0.retry_later(queue, receipt, delay_s, error).await
    }
    async fn hold(&self, queue: QueueKind, receipt: &str, visibility_s: u32) -> Result<()> {
        self.0.hold(queue, receipt, visibility_s).await
    }
    async fn stats(&self, queue: QueueKind) -> Result<QueueStats> {
        self.0.stats(queue).await
    }
    async fn dead_letters(&self, queue: QueueKind, max: usize) -> Result<Vec<DeadLetter>> {
        self.0.dead_letters(queue, max).await
    }
    async fn redrive(&self, queue: QueueKind, keep: &Keep<'_>, max: usize) -> Result<u64> {
        self.0.redrive(queue, keep, max).await
    }
    async fn flush(&self) -> Result<()> {
        self.0.flush().await
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_pass_gives_back_what_it_received() {
    // GIVEN five work messages, and a queue that cannot delete
    let p = TestProject::new(
        "acme",
        r#"{ "queue": true }"#,
        &[
            (
                "send",
                "function on_invoke(ctx, ev) for i = 1, 5 do native.queue.send('work', { n = i }) end end",
            ),
            ("work", "function on_queue(ctx, ev) end"),
        ],
    );
    p.invoke("acme", "send", json!({})).await.unwrap();
    let b = &p.rt.services.backends;
    let backends = Backends {
        objects: b.objects.clone(),
        kv: b.kv.clone(),
        queue: Arc::new(DeletesFail(b.queue.clone())),
        vault: b.vault.clone(),
    };
    let rt = Runtime::new(
        p.rt.services.deployment.clone(),
        backends,
        p.project.tenants.clone(),
    );
    // WHEN a drain pass handles them and cannot record it (it deletes a pass's handled
    // messages together, at the pass's end)
    let err = drain(&rt, DrainOptions::default()).await.unwrap_err();
    assert!(err.to_string().contains("the disk is gone"), "{err}");
    // THEN all five are visible again now (they run again: at least once), and none spent an
    // attempt on a receive given back
    let s = b.queue.stats(QueueKind::Work).await.unwrap();
    assert_eq!((s.visible, s.waiting), (5, 0), "{s:?}");
    let got = b.queue.receive(QueueKind::Work, 10, 30).await.unwrap();
    let mut counts: Vec<u32> = got.iter().map(|m| m.receive_count).collect();
    counts.sort();
    assert_eq!(counts, [1, 1, 1, 1, 1]);
}
