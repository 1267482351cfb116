//! The timer tick's cost on the embedded backend: store calls per tick (so per minute on AWS)
//! with 100 000 pending timers, spread over 1 and over 100 tenants, none due; and how many due
//! timers one tick fires per second. And the schedules' tick with 10 000 schedules across 1 000
//! tenants: a tick with every slot due (each schedule every minute), and one with none.
//!
//! Run: `cargo bench --all-features -p native-tests --bench timers`.

use std::time::Instant;

use native_core::embedded::Embedded;
use native_core::ports::{now_ms, KvStore, NewItem, Queue, QueueKind};
use native_core::runtime::tick;
use native_core::timer::{Row, TickOptions, INDEX_PK};

/// Writes `n` timers of `tenant` due from `at_ms` on, 25 rows a call, and its index row.
async fn fill(db: &Embedded, tenant: &str, n: usize, at_ms: i64) {
    let row = serde_json::to_string(&Row {
        script: "wake".into(),
        body: r#"{"tenant":"t","script":"wake","event":{}}"#.into(),
        claim_until_ms: 0,
        condition: Default::default(),
    })
    .unwrap();
    let items: Vec<NewItem> = (0..n)
        .map(|i| NewItem {
            pk: native_core::timer::pk(tenant),
            sk: format!("{:013}-{:016x}", at_ms + i as i64, i),
            value: row.clone(),
            expires_at_s: at_ms / 1000 + 30 * 86_400,
        })
        .collect();
    for chunk in items.chunks(25) {
        db.put_batch(chunk.to_vec()).await.unwrap();
    }
    db.put(
        NewItem {
            pk: INDEX_PK.into(),
            sk: tenant.into(),
            value: "{}".into(),
            expires_at_s: at_ms / 1000 + 400 * 86_400,
        },
        native_core::ports::PutMode::Overwrite,
    )
    .await
    .unwrap();
}

/// 1 000 tenants of 10 schedules each, every minute, in a project folder: the schedules' tick
/// when it starts them, when all 10 000 slots are due, and when none is.
async fn schedules() {
    use native_core::schedule::{tick as tick_schedules, TickOptions as Opts};
    let dir = tempfile::tempdir().unwrap();
    let each: serde_json::Map<String, serde_json::Value> = (0..10)
        .map(|i| {
            (
                format!("s{i}"),
                serde_json::json!({ "script": "job", "every": "1m" }),
            )
        })
        .collect();
    let config = serde_json::json!({ "schedules": each }).to_string();
    for t in 0..1000 {
        let d = dir.path().join("tenants").join(format!("t{t:04}"));
        std::fs::create_dir_all(d.join("scripts")).unwrap();
        std::fs::write(d.join("config.json"), &config).unwrap();
        std::fs::write(d.join("scripts/job.luau"), "function on_queue(ctx, ev) end").unwrap();
    }
    let tenants = native_core::tenants::DirTenants::new(dir.path());
    let db = Embedded::open(&dir.path().join(".native"), vec![]).unwrap();
    let slot = (now_ms() / 60_000 + 10) * 60_000;
    for (what, at, fired) in [
        ("first tick: every schedule's row made", slot - 30_000, 0),
        ("every one of the 10 000 slots due", slot, 10_000),
        ("none due", slot + 30_000, 0),
    ] {
        let t = Instant::now();
        let opts = Opts {
            now_ms: at,
            ..Opts::local()
        };
        let r = tick_schedules(&tenants, &db, &db, opts).await;
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        assert_eq!((r.tenants, r.fired), (1000, fired));
        println!(
            "schedules, 10 000 over 1 000 tenants, {what}: {:>5} store calls, {:>8.1} ms",
            r.calls,
            t.elapsed().as_secs_f64() * 1e3
        );
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let later = now_ms() + 86_400_000;
        for tenants in [1usize, 100] {
            let dir = tempfile::tempdir().unwrap();
            let db = Embedded::open(dir.path(), vec![]).unwrap();
            for t in 0..tenants {
                fill(&db, &format!("t{t:03}"), 100_000 / tenants, later).await;
            }
            let t = Instant::now();
            let r = tick(&db, &db, &db, TickOptions::every_minute(native_core::deadline::tick_end(None))).await.unwrap();
            println!(
                "100 000 pending timers over {tenants:>3} tenant(s), none due: {:>3} store calls per tick, {:>6.2} ms",
                r.calls,
                t.elapsed().as_secs_f64() * 1e3
            );
            assert_eq!(r.fired, 0);
        }
        let dir = tempfile::tempdir().unwrap();
        let db = Embedded::open(dir.path(), vec![]).unwrap();
        let due = 10_000;
        fill(&db, "t000", due, now_ms() - 60_000).await;
        let t = Instant::now();
        let r = tick(
            &db,
            &db,
            &db,
            TickOptions {
                per_tenant: due,
                ..TickOptions::local()
            },
        )
        .await
        .unwrap();
        let s = t.elapsed().as_secs_f64();
        assert_eq!(r.fired as usize, due);
        assert_eq!(db.stats(QueueKind::Work).await.unwrap().visible as usize, due);
        println!(
            "one tick firing {due} due timers: {:.2} s, {:.0} timers/s, {:.2} store calls per timer",
            s,
            due as f64 / s,
            r.calls as f64 / due as f64
        );
        schedules().await;
    });
}
