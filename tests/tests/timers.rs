//! Durable timers (`native.timer`, the tick): due order, not before their time, once when
//! nothing fails, at least once after a crash at any store call of the tick, once under racing
//! ticks, cancel, the index, and the script API. The tick takes its now as an option, so these
//! tests move time without sleeping and without touching the process's clock.

use std::sync::Arc;

use native_core::ports::WorkMessage;
use native_core::ports::{now_ms, KvStore, Queue, QueueKind};
use native_core::runtime::tick;
use native_core::timer::{TickOptions, TickReport, Timers, INDEX_GRACE_MS, INDEX_PK, LEASE_MS};
use native_tests::barriers::Count;
use native_tests::faults::{Fault, Faulty, Plan};
use native_tests::{Backend, TestBackends, TestProject};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    timers_fire_in_due_order_and_not_before_their_time,
    a_crash_at_every_store_call_of_the_tick_still_fires_each_timer,
    cancel_stops_a_timer_unless_a_tick_is_firing_it,
    scripts_set_and_cancel_timers_and_on_queue_runs_when_due,
    bad_timer_calls_raise_clear_errors,
    a_fresh_index_row_outlives_an_empty_partition_for_its_grace,
    a_failed_run_sets_no_timer_and_cancelling_its_own_forgets_it,
);

fn body(n: u32) -> String {
    serde_json::to_string(&WorkMessage {
        tenant: "acme".into(),
        script: "wake".into(),
        event: json!({ "n": n }),
        depth: 1,
        width: None,
        chain: None,
        once: None,
        slot: None,
    })
    .unwrap()
}

/// Sets timers `n` = 1, 2, 3 ... due `at[n-1]` ms from `t0`, in reverse order of setting.
async fn set(kv: &dyn KvStore, t0: i64, at: &[i64]) -> Vec<String> {
    let c = Count::default();
    let timers = Timers {
        kv,
        tenant: "acme",
        budget: &c,
    };
    let mut ids = Vec::new();
    for (i, ms) in at.iter().enumerate().rev() {
        ids.push(
            timers
                .set(t0 + ms, "wake", body(i as u32 + 1), None)
                .await
                .unwrap(),
        );
    }
    assert_eq!(c.0.get(), 2 * at.len() as u32, "two calls per timer");
    ids.reverse();
    ids
}

fn at(now_ms: i64) -> TickOptions {
    TickOptions {
        now_ms,
        ..TickOptions::local()
    }
}

/// The `n` of every work message sent so far, in the order received.
async fn fired(q: &dyn Queue) -> Vec<u64> {
    let mut out = Vec::new();
    let mut idle = 0;
    loop {
        let msgs = q.receive(QueueKind::Work, 10, 30).await.unwrap();
        if msgs.is_empty() {
            let st = q.stats(QueueKind::Work).await.unwrap();
            if st.visible + st.waiting == 0 {
                return out;
            }
            idle += 1;
            assert!(idle < 100, "the work queue does not empty: {st:?}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        }
        for m in msgs {
            let w: WorkMessage = serde_json::from_str(&m.body).unwrap();
            out.push(w.event["n"].as_u64().unwrap());
            q.delete(QueueKind::Work, &m.receipt).await.unwrap();
        }
    }
}

/// On SQS (a standard queue) the order of receipt is not the order of sending.
fn in_order(backend: Backend, mut got: Vec<u64>) -> Vec<u64> {
    if backend == Backend::Aws {
        got.sort();
    }
    got
}

async fn timers_fire_in_due_order_and_not_before_their_time(backend: Backend) {
    // GIVEN three timers due 10, 20 and 30 s from now, set last-first
    let t = TestBackends::new(backend).await;
    let (kv, q) = (t.backends.kv.as_ref(), t.backends.queue.as_ref());
    let o = t.backends.objects.as_ref();
    let t0 = now_ms();
    set(kv, t0, &[10_000, 20_000, 30_000]).await;
    // WHEN a tick runs before the first is due
    let r = tick(kv, q, o, at(t0 + 9_999)).await.unwrap();
    // THEN nothing is sent
    assert_eq!(r.fired, 0);
    assert!(fired(q).await.is_empty());
    // WHEN a tick has no time left THEN it stops before firing anything
    let spent = TickOptions {
        stop_at: std::time::Instant::now(),
        ..at(t0 + 15_000)
    };
    assert_eq!(tick(kv, q, o, spent).await.unwrap().fired, 0);
    // WHEN the first is due: only it
    assert_eq!(tick(kv, q, o, at(t0 + 15_000)).await.unwrap().fired, 1);
    assert_eq!(fired(q).await, vec![1]);
    // WHEN both others are due: both, in due order, once
    let r = tick(kv, q, o, at(t0 + 60_000)).await.unwrap();
    assert_eq!((r.fired, r.tenants), (2, 1), "{r:?}");
    assert_eq!(in_order(backend, fired(q).await), vec![2, 3]);
    assert_eq!(tick(kv, q, o, at(t0 + 90_000)).await.unwrap().fired, 0);
    assert!(fired(q).await.is_empty());
    // AND the tenant left the index once it had no timers: the next tick reads one page
    assert!(kv
        .query(INDEX_PK, "", None, 10)
        .await
        .unwrap()
        .items
        .is_empty());
    assert_eq!(tick(kv, q, o, at(t0 + 90_000)).await.unwrap().calls, 1);
    // AND a horizon hands a timer to the queue early with the delay that is left
    set(kv, t0, &[100_000]).await;
    let r = tick(
        kv,
        q,
        o,
        TickOptions {
            horizon_ms: 60_000,
            ..at(t0 + 50_000)
        },
    )
    .await
    .unwrap();
    assert_eq!(r.fired, 1);
    let st = q.stats(QueueKind::Work).await.unwrap();
    assert_eq!((st.visible, st.waiting), (0, 1), "sent with a delay");
}

/// Runs a tick with a fault at its `k`-th store call; then ticks without faults until nothing
/// is left, each after the previous one's leases lapsed. Returns the `n`s sent, sorted.
async fn crash_at(t: &TestBackends, k: u32, fault: Fault, t0: i64) -> (Vec<u64>, TickReport) {
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: t.backends.kv.clone(),
        queue: t.backends.queue.clone(),
        plan: plan.clone(),
    };
    plan.arm(k, fault);
    let first = tick(&f, &f, &*t.backends.objects, at(t0 + 40_000))
        .await
        .unwrap_or_else(|e| TickReport {
            errors: vec![e.to_string()],
            ..TickReport::default()
        });
    plan.disarm();
    for i in 1..=3 {
        tick(
            &f,
            &f,
            &*t.backends.objects,
            at(t0 + 40_000 + i * (LEASE_MS + 1)),
        )
        .await
        .unwrap();
    }
    let mut got = fired(&*t.backends.queue).await;
    got.sort();
    (got, first)
}

async fn a_crash_at_every_store_call_of_the_tick_still_fires_each_timer(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let kv = t.backends.kv.as_ref();
    // A clean tick of three due timers: index query, tenant query, then claim, send and delete
    // for each.
    let t0 = now_ms();
    set(kv, t0, &[10_000, 20_000, 30_000]).await;
    let clean = tick(
        kv,
        &*t.backends.queue,
        &*t.backends.objects,
        at(t0 + 40_000),
    )
    .await
    .unwrap();
    assert_eq!((clean.fired, clean.calls), (3, 2 + 3 * 3));
    fired(&*t.backends.queue).await;
    for fault in [Fault::Fail, Fault::LoseReply] {
        for k in 1..=clean.calls {
            // GIVEN three due timers
            set(kv, t0, &[10_000, 20_000, 30_000]).await;
            // WHEN the tick crashes at store call k, and later ticks run
            let (got, first) = crash_at(&t, k, fault, t0).await;
            let case = format!("{fault:?} at call {k}: {first:?}");
            // THEN every timer was sent at least once
            let mut unique = got.clone();
            unique.dedup();
            assert_eq!(unique, vec![1, 2, 3], "{case}");
            // AND twice only where the crash fell between sending one and marking it: a send
            // whose reply was lost, or a delete that did not happen after a send
            let call_in_timer = k.checked_sub(3).map(|c| c % 3);
            let may_repeat = matches!(
                (fault, call_in_timer),
                (Fault::LoseReply, Some(1)) | (Fault::Fail, Some(2))
            );
            let expect = if may_repeat { 4 } else { 3 };
            assert_eq!(got.len(), expect, "{case}: sent {got:?}");
            // AND nothing is left
            assert!(
                kv.query("t#acme", "", None, 10)
                    .await
                    .unwrap()
                    .items
                    .is_empty(),
                "{case}"
            );
        }
    }
}

/// Two ticks racing over the same timers, in seeded interleavings of their store calls: each
/// timer is sent exactly once.
#[test]
fn seeded_interleavings_of_racing_ticks_send_each_timer_once() {
    for seed in 0..40u64 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let t = TestBackends::new(Backend::Embedded).await;
            let t0 = now_ms();
            set(
                t.backends.kv.as_ref(),
                t0,
                &[1_000, 2_000, 3_000, 4_000, 5_000],
            )
            .await;
            let ticks: Vec<_> = (0..2)
                .map(|i| {
                    let f = Faulty {
                        kv: t.backends.kv.clone(),
                        queue: t.backends.queue.clone(),
                        plan: Arc::new(Plan::jittering(seed * 2 + i)),
                    };
                    let o = t.backends.objects.clone();
                    tokio::spawn(async move { tick(&f, &f, &*o, at(t0 + 10_000)).await.unwrap() })
                })
                .collect();
            let mut total = 0;
            for h in ticks {
                total += h.await.unwrap().fired;
            }
            let mut got = fired(&*t.backends.queue).await;
            got.sort();
            assert_eq!(got, vec![1, 2, 3, 4, 5], "seed {seed}");
            assert_eq!(total, 5, "seed {seed}");
        });
    }
}

async fn cancel_stops_a_timer_unless_a_tick_is_firing_it(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let (kv, q) = (t.backends.kv.as_ref(), t.backends.queue.as_ref());
    let o = t.backends.objects.as_ref();
    let c = Count::default();
    let timers = Timers {
        kv,
        tenant: "acme",
        budget: &c,
    };
    // GIVEN two timers
    let t0 = now_ms();
    let ids = set(kv, t0, &[10_000, 20_000]).await;
    // WHEN the first is cancelled
    assert!(timers.cancel(&ids[0]).await.unwrap());
    // THEN it never fires, and cancelling again says so
    assert!(!timers.cancel(&ids[0]).await.unwrap());
    assert_eq!(tick(kv, q, o, at(t0 + 30_000)).await.unwrap().fired, 1);
    assert_eq!(fired(q).await, vec![2]);
    // AND another tenant cannot cancel a timer: the id only names a row in its own partition
    let ids = set(kv, t0, &[10_000]).await;
    let other = Timers {
        kv,
        tenant: "other",
        budget: &c,
    };
    assert!(!other.cancel(&ids[0]).await.unwrap());
    let (listed, _) = timers.list(None, 10).await.unwrap();
    assert_eq!(listed.len(), 1);
    // AND a timer held by a tick that is firing it cannot be cancelled (it runs)
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: t.backends.kv.clone(),
        queue: t.backends.queue.clone(),
        plan: plan.clone(),
    };
    plan.arm(4, Fault::Fail); // index query, tenant query, claim, then the send fails
    assert_eq!(
        tick(&f, &f, o, at(t0 + 30_000)).await.unwrap().errors.len(),
        1
    );
    assert!(!timers.cancel(&ids[0]).await.unwrap());
    assert!(timers.list(None, 10).await.unwrap().0[0].firing);
    // AND malformed ids are refused with the form they must have
    let err = timers.cancel("nope").await.unwrap_err().to_string();
    assert!(err.contains("13 digits"), "{err}");
}

const WAKE: &str = r#"
function on_invoke(ctx, ev)
  if ev.cancel then return native.timer.cancel(ev.cancel) end
  local a = native.timer.at({ in_s = 3600 }, "wake", { n = 2 })
  local b = native.timer.at({ at_ms = 1 }, "wake", { n = 1 })
  return { a = a, b = b }
end
function on_queue(ctx, ev)
  native.db.put("woke", tostring(ev.n), { depth = ctx.depth })
end
"#;

async fn scripts_set_and_cancel_timers_and_on_queue_runs_when_due(backend: Backend) {
    // GIVEN a script that sets a timer an hour ahead and one already due
    let p = TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[("acme", r#"{ "queue": true }"#, &[("wake", WAKE)])],
    )
    .await;
    let kv = p.rt.services.backends.kv.clone();
    let ids = p.rt.invoke("acme", "wake", json!({})).await.unwrap();
    // WHEN the queues are drained now
    p.drain().await;
    // THEN the due one ran, one deeper than its setter; the other has not
    let woke = |n: &str| {
        let kv = kv.clone();
        let n = n.to_string();
        async move { kv.get("d#acme#woke", &n).await.unwrap() }
    };
    let one = woke("1").await.expect("the due timer ran");
    assert_eq!(
        serde_json::from_str::<Value>(&one.value).unwrap()["depth"],
        1
    );
    assert!(woke("2").await.is_none());
    // WHEN an hour passes (the tick's now) and the queues are drained
    let q = p.rt.services.backends.queue.clone();
    tick(
        kv.as_ref(),
        q.as_ref(),
        &*p.rt.services.backends.objects,
        at(now_ms() + 3_601_000),
    )
    .await
    .unwrap();
    p.drain().await;
    // THEN the second ran
    assert!(woke("2").await.is_some());
    // AND cancelling it afterwards says it was not pending
    let gone =
        p.rt.invoke("acme", "wake", json!({ "cancel": ids["a"] }))
            .await
            .unwrap();
    assert_eq!(gone, json!(false));
}

const BAD: &str = r#"
function on_invoke(ctx, ev)
  local ok, err = pcall(function()
    if ev.case == 1 then native.timer.at({ in_s = 1e12 }, "wake", {}) end
    if ev.case == 2 then native.timer.at({ in_s = 1, at_ms = 1 }, "wake", {}) end
    if ev.case == 3 then native.timer.at(5, "wake", {}) end
    if ev.case == 4 then native.timer.at({ in_s = 1 }, "nope", {}) end
    if ev.case == 5 then native.timer.cancel("x") end
    if ev.case == 6 then native.timer.at({ in_s = 1 }, "wake", {}) end
  end)
  return tostring(err)
end
function on_queue(ctx, ev) end
"#;

async fn bad_timer_calls_raise_clear_errors(backend: Backend) {
    let p = TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[
            ("acme", r#"{ "queue": true }"#, &[("wake", BAD)]),
            ("noq", r#"{}"#, &[("wake", BAD)]),
        ],
    )
    .await;
    let cases = [
        (
            1,
            "native.timer.at: in_s must be 0 to 31536000, not 1000000000000",
        ),
        (2, "exactly one of in_s and at_ms"),
        // An integer is "a number", never "a integer".
        (3, "{ at_ms = T }, not a number"),
        (4, "nope"),
        (5, "13 digits"),
    ];
    for (case, want) in cases {
        let got =
            p.rt.invoke("acme", "wake", json!({ "case": case }))
                .await
                .unwrap();
        let got = got.as_str().unwrap();
        assert!(got.contains(want), "case {case}: {got}");
        assert!(got.starts_with("wake.luau:"), "case {case}: {got}");
    }
    let got =
        p.rt.invoke("noq", "wake", json!({ "case": 6 }))
            .await
            .unwrap();
    assert!(got.as_str().unwrap().contains("has no queue"), "{got}");
}

async fn a_fresh_index_row_outlives_an_empty_partition_for_its_grace(backend: Backend) {
    // GIVEN a tenant whose index row was just written and whose timer row is not there yet (a
    // barrier's dispatch guard writes the index row first, then the guard in a transaction)
    let t = TestBackends::new(backend).await;
    let (kv, q, o) = (
        t.backends.kv.as_ref(),
        t.backends.queue.as_ref(),
        t.backends.objects.as_ref(),
    );
    let c = Count::default();
    let timers = Timers {
        kv,
        tenant: "acme",
        budget: &c,
    };
    let t0 = native_core::ports::now_ms();
    let id = timers
        .set(t0 + 3_600_000, "later", "{}".into(), None)
        .await
        .unwrap();
    assert!(timers.cancel(&id).await.unwrap());
    let index = || async { kv.query(INDEX_PK, "", None, 10).await.unwrap().items.len() };
    assert_eq!(index().await, 1);
    // WHEN a tick finds the partition empty within the grace THEN it keeps the index row
    let r = tick(kv, q, o, at(t0 + 1_000)).await.unwrap();
    assert_eq!(r.calls, 2, "{r:?}");
    assert_eq!(index().await, 1);
    // WHEN a tick finds it empty after the grace THEN it takes the tenant off the index
    let r = tick(kv, q, o, at(t0 + INDEX_GRACE_MS + 1_000))
        .await
        .unwrap();
    assert_eq!(r.calls, 3, "{r:?}");
    assert_eq!(index().await, 0);
}

const SETS_THEN: &str = r#"
function on_invoke(ctx, ev)
  local id = native.timer.at({ in_s = 3600 }, "wake", { order = "o1" })
  if ev.cancel then return native.timer.cancel(id) end
  if ev.fail then error("boom after setting a timer") end
  return id
end
function on_queue(ctx, ev) end
"#;

async fn a_failed_run_sets_no_timer_and_cancelling_its_own_forgets_it(backend: Backend) {
    let p = TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[("acme", r#"{ "queue": true }"#, &[("wake", SETS_THEN)])],
    )
    .await;
    let kv = p.rt.services.backends.kv.clone();
    let pending = || {
        let kv = kv.clone();
        async move {
            let c = Count::default();
            let timers = Timers {
                kv: kv.as_ref(),
                tenant: "acme",
                budget: &c,
            };
            let (list, _) = timers.list(None, 100).await.unwrap();
            list.into_iter().map(|t| t.id).collect::<Vec<_>>()
        }
    };
    // GIVEN a run that sets a timer and then fails, three times (its retries)
    for _ in 0..3 {
        let err =
            p.rt.invoke("acme", "wake", json!({ "fail": true }))
                .await
                .unwrap_err();
        assert!(err.to_string().contains("boom"), "{err}");
    }
    // THEN no timer was set, as no message would have been sent
    assert_eq!(pending().await, Vec::<String>::new());
    // WHEN a run cancels the timer it set THEN the cancel says it was pending, and none is set
    let cancelled =
        p.rt.invoke("acme", "wake", json!({ "cancel": true }))
            .await
            .unwrap();
    assert_eq!(cancelled, json!(true));
    assert_eq!(pending().await, Vec::<String>::new());
    // WHEN a run succeeds THEN its timer is there, under the id the script was given
    let id = p.rt.invoke("acme", "wake", json!({})).await.unwrap();
    assert_eq!(pending().await, vec![id.as_str().unwrap().to_string()]);
    // AND a listing (native timers, the console) shows the event its script will get
    let c = Count::default();
    let timers = Timers {
        kv: kv.as_ref(),
        tenant: "acme",
        budget: &c,
    };
    let (list, _) = timers.list(None, 100).await.unwrap();
    assert_eq!(list[0].event, json!({ "order": "o1" }));
}
