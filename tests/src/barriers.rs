//! Barrier test kit: a budget that counts the store calls spent from it, and the barriers of
//! the tenant `acme` over given backends.

use std::cell::Cell;

use native_core::barrier::{Barriers, CreateSpec, Outcome};
use native_core::budget::Budget;
use native_core::ports::{KvStore, Queue};
use native_core::Result;

/// A budget that never runs out and counts the store calls spent from it (`.0.get()`).
#[derive(Debug, Default)]
pub struct Count(pub Cell<u32>);

impl Budget for Count {
    fn spend(&self, calls: u32) -> Result<()> {
        self.0.set(self.0.get() + calls);
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

/// The barriers of the tenant `acme` over `kv` and `q`, with the queue on, spending from
/// `budget`.
pub fn barriers<'a>(kv: &'a dyn KvStore, q: &'a dyn Queue, budget: &'a Count) -> Barriers<'a> {
    Barriers {
        kv,
        queue: q,
        tenant: "acme",
        queue_enabled: true,
        budget,
    }
}

/// A barrier `id` of `n` members `m00000.xml`, ... that continues with `finalize`, its state
/// naming it.
pub fn spec(id: &str, n: usize) -> CreateSpec {
    CreateSpec {
        id: Some(id.into()),
        members: (0..n).map(|i| format!("m{i:05}.xml")).collect(),
        continue_with: Some("finalize".into()),
        state: serde_json::json!({ "ref": id }),
        deadline_s: None,
        on_overdue: None,
    }
}

/// A member's outcome: it succeeded, with no result.
pub fn ok() -> Outcome {
    Outcome {
        ok: true,
        error: None,
        result: None,
    }
}

/// The barrier ids of the continuations sent so far (received and deleted, so call once per
/// check). An SQS receive may return fewer than the visible messages, even none: it stops only
/// when the queue's counts say that nothing is left.
pub async fn continuations(q: &dyn Queue) -> Vec<String> {
    let mut out = Vec::new();
    let mut empty_rounds = 0;
    loop {
        let msgs = q
            .receive(native_core::ports::QueueKind::Work, 10, 30)
            .await
            .unwrap();
        if msgs.is_empty() {
            let st = q.stats(native_core::ports::QueueKind::Work).await.unwrap();
            if st.visible + st.waiting == 0 {
                return out;
            }
            empty_rounds += 1;
            assert!(empty_rounds < 100, "the work queue does not empty: {st:?}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        }
        for m in msgs {
            let w: native_core::ports::WorkMessage = serde_json::from_str(&m.body).unwrap();
            out.push(w.event["barrier"].as_str().unwrap_or_default().to_string());
            q.delete(native_core::ports::QueueKind::Work, &m.receipt)
                .await
                .unwrap();
        }
    }
}
