//! A completed barrier whose continuation was lost after its dispatch claim is dispatched by
//! the periodic tick once the claim has lapsed, with no ack retried: not before the lapse, once
//! after it, never doubling a dispatch that was not lost, and at least once when the tick itself
//! crashes at any of its store calls. On both backends; the tick takes its now as an option, so
//! time moves without sleeping.

use std::sync::Arc;

use native_core::barrier::{CreateSpec, GUARD_AFTER_LEASE_MS, LEASE_MS};
use native_core::ports::WorkMessage;
use native_core::ports::{now_ms, Queue, QueueKind};
use native_core::runtime::tick;
use native_core::timer::{TickOptions, TickReport, Timers};
use native_tests::barriers::{barriers, ok, Count};
use native_tests::faults::{Fault, Faulty, Plan};
use native_tests::{Backend, TestBackends};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    a_lost_dispatch_is_sent_by_the_tick_once_its_claim_lapses,
    the_guard_never_doubles_a_dispatch_that_was_not_lost,
    a_crash_at_every_store_call_of_the_redispatching_tick_still_sends,
    the_tick_leaves_a_guard_whose_claim_an_ack_took_over,
    a_claim_whose_reply_was_lost_still_has_its_guard,
    a_continuation_delivered_twice_runs_once,
);

/// Creates barrier `id` of one member `a`, continuing with `fin`.
async fn create(t: &TestBackends, id: &str) {
    let c = Count::default();
    let b = barriers(t.backends.kv.as_ref(), t.backends.queue.as_ref(), &c);
    b.create(CreateSpec {
        id: Some(id.into()),
        members: vec!["a".into()],
        continue_with: Some("fin".into()),
        ..CreateSpec::default()
    })
    .await
    .unwrap();
}

/// The completing ack's calls: read meta, the fill of its member's slot (which says nothing is
/// left open), the list row marked complete, the timer index row, the claim with its guard timer
/// (one transaction), then the continuation's send.
const ACK_SEND_CALL: u32 = 6;

/// Acks the last member of `id` with the continuation's send failing after the claim, as a
/// process that dies there would. Returns the time just after the ack.
async fn ack_losing_the_send(t: &TestBackends, id: &str) -> i64 {
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: t.backends.kv.clone(),
        queue: t.backends.queue.clone(),
        plan: plan.clone(),
    };
    plan.arm(ACK_SEND_CALL, Fault::Fail);
    let c = Count::default();
    let err = barriers(&f, &f, &c)
        .ack(id, "a", ok())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(plan.hit(), Some("queue.send"), "{err}");
    now_ms()
}

/// The `(script, event)` of every work message sent so far (received and deleted).
async fn sent(q: &dyn Queue) -> Vec<(String, Value)> {
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
            out.push((w.script, w.event));
            q.delete(QueueKind::Work, &m.receipt).await.unwrap();
        }
    }
}

fn at(now_ms: i64) -> TickOptions {
    TickOptions {
        now_ms,
        ..TickOptions::local()
    }
}

async fn tick_at(t: &TestBackends, now: i64) -> TickReport {
    let b = &t.backends;
    tick(b.kv.as_ref(), b.queue.as_ref(), b.objects.as_ref(), at(now))
        .await
        .unwrap()
}

async fn dispatched(t: &TestBackends, id: &str) -> bool {
    let c = Count::default();
    let b = barriers(t.backends.kv.as_ref(), t.backends.queue.as_ref(), &c);
    let s = b.status(id, None, 1).await.unwrap().unwrap();
    assert!(s.complete);
    s.dispatched
}

async fn timer_rows(t: &TestBackends) -> usize {
    let c = Count::default();
    let timers = Timers {
        kv: t.backends.kv.as_ref(),
        tenant: "acme",
        budget: &c,
    };
    timers.list(None, 100).await.unwrap().0.len()
}

fn continuation(id: &str) -> (String, Value) {
    ("fin".to_string(), json!({ "barrier": id }))
}

/// A tick after the claim (taken at or before `acked`) has lapsed and its guard is due.
fn lapsed(acked: i64) -> i64 {
    acked + LEASE_MS + GUARD_AFTER_LEASE_MS + 1
}

async fn a_lost_dispatch_is_sent_by_the_tick_once_its_claim_lapses(backend: Backend) {
    // GIVEN a barrier whose final ack claimed the dispatch and then failed to send it
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    let t0 = now_ms();
    create(&t, "b1").await;
    let acked = ack_losing_the_send(&t, "b1").await;
    assert!(!dispatched(&t, "b1").await);
    assert!(sent(q).await.is_empty());
    // WHEN the tick runs before the claim lapses THEN it sends nothing
    let r = tick_at(&t, t0 + LEASE_MS - 1).await;
    assert_eq!((r.fired, r.void), (0, 0), "{r:?}");
    assert!(sent(q).await.is_empty());
    assert!(!dispatched(&t, "b1").await);
    // WHEN a tick runs after it lapsed THEN it sends the continuation, once, and records it
    let r = tick_at(&t, lapsed(acked)).await;
    assert_eq!(r.fired, 1, "{r:?}");
    assert!(r.errors.is_empty(), "{r:?}");
    assert_eq!(sent(q).await, vec![continuation("b1")]);
    assert!(dispatched(&t, "b1").await);
    // AND a second tick sends nothing, and no timer row is left
    let r = tick_at(&t, lapsed(acked) + 2 * LEASE_MS).await;
    assert_eq!((r.fired, r.void), (0, 0), "{r:?}");
    assert!(sent(q).await.is_empty());
    assert_eq!(timer_rows(&t).await, 0);
}

async fn the_guard_never_doubles_a_dispatch_that_was_not_lost(backend: Backend) {
    // GIVEN a barrier completed by an ack that nothing interrupted
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    create(&t, "b1").await;
    let c = Count::default();
    let b = barriers(t.backends.kv.as_ref(), q, &c);
    let r = b.ack("b1", "a", ok()).await.unwrap();
    let acked = now_ms();
    assert!(r.complete && r.dispatched);
    // THEN the completing ack made 7 calls: 2 of any ack (meta, the fill), the list row, the
    // timer index, the claim with its guard (one transaction), send, mark
    assert_eq!(c.0.get(), 7);
    assert_eq!(sent(q).await, vec![continuation("b1")]);
    // AND left a guard timer for the barrier
    let timers = Timers {
        kv: t.backends.kv.as_ref(),
        tenant: "acme",
        budget: &c,
    };
    let (rows, _) = timers.list(None, 10).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0].watching("dispatch"), Some("b1"));
    assert_eq!(rows[0].script, "fin");
    // WHEN the guard is due and a tick runs
    let r = tick_at(&t, lapsed(acked)).await;
    // THEN it finds the continuation sent: the guard is deleted, nothing more is sent, in two
    // store calls beside the tick's two queries
    assert_eq!((r.fired, r.void, r.calls), (0, 1, 4), "{r:?}");
    assert!(sent(q).await.is_empty());
    assert_eq!(timer_rows(&t).await, 0);
    // AND a duplicate final ack afterwards sends nothing and sets no guard
    assert!(!b.ack("b1", "a", ok()).await.unwrap().dispatched);
    assert!(sent(q).await.is_empty());
    assert_eq!(timer_rows(&t).await, 0);
}

/// The redispatching tick's store calls: the index query, the tenant's query, read `d`,
/// claim it, send, mark it sent, delete the guard.
const TICK_CALLS: u32 = 7;

async fn a_crash_at_every_store_call_of_the_redispatching_tick_still_sends(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    for fault in [Fault::Fail, Fault::LoseReply] {
        for k in 1..=TICK_CALLS {
            // GIVEN a barrier whose dispatch was lost after its claim
            let id = format!("b-{fault:?}-{k}");
            create(&t, &id).await;
            let acked = ack_losing_the_send(&t, &id).await;
            // WHEN the tick that redispatches it crashes at store call k
            let plan = Arc::new(Plan::default());
            let f = Faulty {
                kv: t.backends.kv.clone(),
                queue: t.backends.queue.clone(),
                plan: plan.clone(),
            };
            plan.arm(k, fault);
            let first = tick(&f, &f, t.backends.objects.as_ref(), at(lapsed(acked))).await;
            plan.disarm();
            let case = format!("{fault:?} at call {k} ({:?}): {first:?}", plan.hit());
            assert!(plan.hit().is_some(), "{case}");
            // AND later ticks run, each after the previous one's claim lapsed
            for i in 1..=3 {
                let r = tick_at(&t, lapsed(acked) + i * (LEASE_MS + 1)).await;
                assert!(r.errors.is_empty(), "{case}: {r:?}");
            }
            // THEN the continuation was sent at least once, and twice only where the crash
            // fell between sending it and marking it: a send whose reply was lost, or a mark
            // that did not happen
            let got = sent(q).await;
            let twice = matches!((fault, k), (Fault::LoseReply, 5) | (Fault::Fail, 6));
            let want = if twice { 2 } else { 1 };
            assert_eq!(got, vec![continuation(&id); want], "{case}");
            assert!(dispatched(&t, &id).await, "{case}");
            // AND no guard is left
            assert_eq!(timer_rows(&t).await, 0, "{case}");
        }
    }
}

async fn the_tick_leaves_a_guard_whose_claim_an_ack_took_over(backend: Backend) {
    // GIVEN a lost dispatch, and a tick run while another call holds a fresh claim on it (a
    // retried ack that took the lapsed claim over, simulated by the tick's own claim lease)
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    create(&t, "b1").await;
    let acked = ack_losing_the_send(&t, "b1").await;
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: t.backends.kv.clone(),
        queue: t.backends.queue.clone(),
        plan: plan.clone(),
    };
    // The tick claims `d` (call 4) and then dies at its send (call 5).
    plan.arm(5, Fault::Fail);
    let r = tick(&f, &f, t.backends.objects.as_ref(), at(lapsed(acked)))
        .await
        .unwrap();
    assert_eq!(r.errors.len(), 1, "{r:?}");
    // WHEN a tick runs while that claim holds
    let r = tick_at(&t, lapsed(acked) + LEASE_MS - 1).await;
    // THEN it sends nothing and keeps the guard, after one read
    assert_eq!((r.fired, r.void, r.calls), (0, 0, 3), "{r:?}");
    assert!(sent(q).await.is_empty());
    assert_eq!(timer_rows(&t).await, 1);
    // AND once the claim lapsed, the next tick sends it
    assert_eq!(tick_at(&t, lapsed(acked) + LEASE_MS + 1).await.fired, 1);
    assert_eq!(sent(q).await, vec![continuation("b1")]);
}

/// The completing ack's claim: read meta, the transaction, the pending query, the list row
/// marked complete, the timer index row, then the claim with its guard (one transaction).
const ACK_CLAIM_CALL: u32 = 5;

async fn a_claim_whose_reply_was_lost_still_has_its_guard(backend: Backend) {
    // GIVEN a final ack whose claim was written but whose process died before hearing so (the
    // reply lost: nothing after the claim ran), and that no one retries
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    create(&t, "b1").await;
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: t.backends.kv.clone(),
        queue: t.backends.queue.clone(),
        plan: plan.clone(),
    };
    plan.arm(ACK_CLAIM_CALL, Fault::LoseReply);
    let c = Count::default();
    let err = barriers(&f, &f, &c).ack("b1", "a", ok()).await.unwrap_err();
    assert_eq!(plan.hit(), Some("kv.transact"), "{err}");
    let acked = now_ms();
    assert!(sent(q).await.is_empty());
    // WHEN a tick runs after the claim lapsed
    let r = tick_at(&t, lapsed(acked)).await;
    // THEN the claim's guard was there with it: the continuation is sent, once (with the claim
    // and the guard written apart, a death between them left a claim no tick would finish)
    assert_eq!(r.fired, 1, "{r:?}");
    assert_eq!(sent(q).await, vec![continuation("b1")]);
    assert!(dispatched(&t, "b1").await);
    let r = tick_at(&t, lapsed(acked) + 2 * LEASE_MS).await;
    assert_eq!((r.fired, r.void), (0, 0), "{r:?}");
    assert!(sent(q).await.is_empty());
}

/// A barrier of one member continuing with `fin`, which counts its runs in `native.db`.
const COUNTED: &[(&str, &str)] = &[
    (
        "done",
        "function on_invoke(ctx, ev)
           native.barrier.create({ id = ev.id, members = { 'a' }, continue_with = 'fin' })
           native.barrier.ack(ev.id, 'a', { ok = true })
           return true
         end",
    ),
    (
        "fin",
        "function on_queue(ctx, ev)
           native.db.put('runs', ev.barrier, (native.db.get('runs', ev.barrier) or 0) + 1)
         end",
    ),
    (
        "runs",
        "function on_invoke(ctx, ev) return native.db.get('runs', ev.id) end",
    ),
];

async fn a_continuation_delivered_twice_runs_once(backend: Backend) {
    // GIVEN a completed barrier's continuation message, delivered twice (a SendMessage whose
    // answer was lost is sent again by the SDK; SQS delivers at least once)
    let p = native_tests::TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[("acme", r#"{ "queue": true }"#, COUNTED)],
    )
    .await;
    p.invoke("acme", "done", json!({ "id": "x" }))
        .await
        .unwrap();
    let q = &p.rt.services.backends.queue;
    let sent = q.receive(QueueKind::Work, 10, 30).await.unwrap();
    assert_eq!(sent.len(), 1, "{sent:?}");
    // WHEN the queue function handles both deliveries
    for _ in 0..2 {
        p.rt.handle_work_message(&sent[0].body, 1).await.unwrap();
    }
    // THEN the continuation ran once
    let runs = p
        .invoke("acme", "runs", json!({ "id": "x" }))
        .await
        .unwrap();
    assert_eq!(runs, json!(1));
}
