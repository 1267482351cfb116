//! Rendezvous barriers: backend calls per arrival (counted, not timed) through the core on the
//! embedded backend: a first arrival, a repeat, the tripping one with and without a
//! continuation, and the average under contention of 64 concurrent peers.
//!
//! Run: `cargo bench -p native-tests --bench rendezvous`.

use std::cell::Cell;

use native_core::budget::Budget;
use native_core::embedded::Embedded;
use native_core::rendezvous::{CreateBarrier, Metadata, Rendezvous};
use native_tests::faults::{Faulty, Plan};

#[derive(Default)]
struct Count(Cell<u32>);

impl Budget for Count {
    fn spend(&self, calls: u32) -> native_core::Result<()> {
        self.0.set(self.0.get() + calls);
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

fn spec(name: &str, n: u64, continuation: bool) -> CreateBarrier {
    CreateBarrier {
        namespace: "default".into(),
        name: name.into(),
        expected_processes: n,
        delete_inactive_after_seconds: 3600,
        continue_with: continuation.then(|| "next".into()),
        ..CreateBarrier::default()
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        let dir = tempfile::tempdir().unwrap();
        let db = Embedded::open(dir.path(), vec![]).unwrap();
        let c = Count::default();
        let mut r = Rendezvous::new(&db, &db, "bench", &c);
        r.queue_enabled = true;
        let measure = |what: &str, n: u32| println!("{what:<55} {n:>5}");
        let rr = &r;
        let cc = &c;
        let arrive = |name: &'static str, p: &'static str| async move {
            cc.0.set(0);
            rr.arrive("default", name, p, 1, Metadata::new())
                .await
                .unwrap();
            cc.0.get()
        };
        r.create(spec("a", 2, false)).await.unwrap();
        r.create(spec("k", 2, true)).await.unwrap();
        measure("arrival (not the last)", arrive("a", "p0").await);
        measure("repeated arrival, same generation", arrive("a", "p0").await);
        measure("tripping arrival, no continuation", arrive("a", "p1").await);
        measure("repeated arrival after the trip", arrive("a", "p1").await);
        arrive("k", "p0").await;
        measure(
            "tripping arrival with a continuation",
            arrive("k", "p1").await,
        );
        measure(
            "repeated arrival after a trip with a continuation",
            arrive("k", "p1").await,
        );

        // 64 peers at once on one barrier, on this one thread: every store call first yields
        // a seeded number of times, so the peers' calls interleave and they race for the row.
        r.create(spec("race", 64, false)).await.unwrap();
        let kv: std::sync::Arc<dyn native_core::ports::KvStore> =
            std::sync::Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        let q: std::sync::Arc<dyn native_core::ports::Queue> =
            std::sync::Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        let j = Faulty {
            kv,
            queue: q,
            plan: std::sync::Arc::new(Plan::jittering(7)),
        };
        let total = Count::default();
        let mut tasks = Vec::new();
        for p in 0..64 {
            let db = &j;
            let total = &total;
            tasks.push(async move {
                let c = Count::default();
                let r = Rendezvous::new(db, db, "bench", &c);
                r.arrive("default", "race", &format!("p{p}"), 1, Metadata::new())
                    .await
                    .unwrap();
                total.0.set(total.0.get() + c.0.get());
            });
        }
        futures_join(tasks).await;
        println!(
            "{:<55} {:>5.1}",
            "64 concurrent peers: calls per arrival (mean)",
            f64::from(total.0.get()) / 64.0
        );
    });
}

/// Runs futures concurrently on this task (no extra crate).
async fn futures_join<F: std::future::Future<Output = ()>>(fs: Vec<F>) {
    let mut fs: Vec<_> = fs.into_iter().map(Box::pin).collect();
    std::future::poll_fn(|cx| {
        fs.retain_mut(|f| f.as_mut().poll(cx).is_pending());
        if fs.is_empty() {
            std::task::Poll::Ready(())
        } else {
            std::task::Poll::Pending
        }
    })
    .await
}
