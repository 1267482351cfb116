//! native.barrier, the seed's guarantees: races, crashes between steps, duplicates, unknown
//! members, oversized outcomes, expiry, busy claims, retried creates, no-queue mode, isolation.

use std::sync::Arc;

use native_core::barrier::{AckResult, Barriers, Outcome};
use native_core::ports::WorkMessage;
use native_core::ports::{KvStore, NewItem, PutMode, Queue, QueueKind};
use native_tests::barriers::{barriers, ok, spec, Count};
use native_tests::faults::{Fault, Faulty, Plan};
use native_tests::{Backend, TestBackends, TestProject};
use serde_json::{json, Value};

// Every test runs on the embedded backend (`embedded::<name>`) and on S3/DynamoDB/SQS in the
// emulator (`aws::<name>`).
native_tests::on_both_backends!(
    acks_resolve_members_and_the_last_one_sends_one_continuation,
    backend_calls_per_ack_and_create,
    unknown_members_oversized_outcomes_and_unknown_barriers_are_refused,
    a_busy_claim_raises_until_the_lease_lapses,
    expiry_stops_acks_an_hour_before_and_hydrate_returns_nil_after,
    create_again_does_nothing_and_a_crashed_create_is_completed_by_the_same_create,
    without_a_queue_every_caller_that_finds_nothing_pending_sees_complete,
    status_names_pending_members_page_by_page_and_tells_overdue,
    racing_acks_complete_every_barrier_and_send_exactly_one_continuation_each,
    crashes_at_every_step_are_repaired_by_redelivery,
    the_seed_scripts_run_as_written_end_to_end,
    barrier_rows_are_out_of_reach_of_native_db_and_other_tenants,
    create_must_fit_in_max_data_ops,
    script_errors_for_bad_barrier_calls,
    an_id_used_again_after_its_rows_expired_is_a_new_barrier,
    a_slow_second_create_cannot_bring_back_acked_members,
    a_held_claim_ends_a_script_as_held_and_its_words_raised_again_are_the_scripts,
);

/// Fresh storage on a backend, and its key-value store and queue.
struct Env {
    t: TestBackends,
}

impl Env {
    fn kv(&self) -> &dyn KvStore {
        &*self.t.backends.kv
    }
    fn q(&self) -> &dyn Queue {
        &*self.t.backends.queue
    }
}

async fn env(backend: Backend) -> Env {
    Env {
        t: TestBackends::new(backend).await,
    }
}

/// Continuations sent so far, by barrier id (received and deleted, so call once per check).
/// An SQS receive may return fewer than the visible messages, even none: it stops only when the
/// queue's counts say that nothing is left.
async fn continuations(q: &dyn Queue) -> Vec<String> {
    let mut out = Vec::new();
    let mut empty_rounds = 0;
    loop {
        let msgs = q.receive(QueueKind::Work, 10, 30).await.unwrap();
        if msgs.is_empty() {
            let st = q.stats(QueueKind::Work).await.unwrap();
            if st.visible + st.waiting == 0 {
                return out;
            }
            empty_rounds += 1;
            assert!(empty_rounds < 100, "the work queue does not empty: {st:?}");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        }
        for m in msgs {
            let w: WorkMessage = serde_json::from_str(&m.body).unwrap();
            assert_eq!(w.script, "finalize");
            out.push(w.event["barrier"].as_str().unwrap().to_string());
            q.delete(QueueKind::Work, &m.receipt).await.unwrap();
        }
    }
}

async fn acks_resolve_members_and_the_last_one_sends_one_continuation(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    // GIVEN a barrier of three members
    assert_eq!(b.create(spec("b1", 3)).await.unwrap(), "b1");
    // WHEN they are acked, one of them failed
    let r1 = b.ack("b1", "m00000.xml", ok()).await.unwrap();
    let r2 = b
        .ack(
            "b1",
            "m00001.xml",
            Outcome {
                ok: false,
                error: Some("rejected".into()),
                result: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(
        r1,
        AckResult {
            chain: None,
            duplicate: false,
            complete: false,
            dispatched: false
        }
    );
    assert_eq!(
        r2,
        AckResult {
            chain: None,
            duplicate: false,
            complete: false,
            dispatched: false
        }
    );
    assert!(b.hydrate("b1").await.unwrap().is_none(), "not complete yet");
    let r3 = b
        .ack(
            "b1",
            "m00002.xml",
            Outcome {
                ok: true,
                error: None,
                result: Some(json!({ "id": "r-17" })),
            },
        )
        .await
        .unwrap();
    // THEN the last ack completes it and sends the continuation once
    assert_eq!(
        r3,
        AckResult {
            chain: None,
            duplicate: false,
            complete: true,
            dispatched: true
        }
    );
    assert_eq!(continuations(e.q()).await, ["b1"]);
    let (meta, failed) = b.hydrate("b1").await.unwrap().unwrap();
    assert_eq!((meta.members, failed), (3, 1));
    assert_eq!(meta.state, json!({ "ref": "b1" }));
    let (rows, next) = b.outcomes("b1", false, None).await.unwrap();
    assert!(next.is_none());
    assert_eq!(rows.len(), 3);
    assert_eq!(rows[2].1, json!({ "ok": true, "result": { "id": "r-17" } }));
    let (fails, _) = b.outcomes("b1", true, None).await.unwrap();
    assert_eq!(
        fails,
        [(
            "m00001.xml".to_string(),
            json!({ "ok": false, "error": "rejected" })
        )]
    );
    // AND a later ack is a duplicate that changes nothing and sends nothing
    let again = b.ack("b1", "m00001.xml", ok()).await.unwrap();
    assert_eq!(
        again,
        AckResult {
            chain: None,
            duplicate: true,
            complete: true,
            dispatched: false
        }
    );
    assert!(continuations(e.q()).await.is_empty());
    assert_eq!(
        b.outcomes("b1", true, None).await.unwrap().0.len(),
        1,
        "first ack wins"
    );
}

async fn backend_calls_per_ack_and_create(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    b.create(spec("b", 2)).await.unwrap();
    c.0.set(0);
    b.ack("b", "m00000.xml", ok()).await.unwrap();
    assert_eq!(
        c.0.get(),
        2,
        "a non-final ack is a read of meta and one fill of its member's slot"
    );
    c.0.set(0);
    b.ack("b", "m00001.xml", ok()).await.unwrap();
    assert_eq!(
        c.0.get(),
        7,
        "final ack: meta, the fill, the list row marked complete, timer index, claim with its dispatch guard (one transaction), send, mark"
    );
    for n in [1000, 10_000] {
        c.0.set(0);
        b.create(spec(&format!("big{n}"), n)).await.unwrap();
        assert_eq!(c.0.get(), Barriers::create_calls(n), "create of {n}");
    }
    assert_eq!(
        Barriers::create_calls(10_000),
        19,
        "a 10 000-member barrier: 359 tallies in 15 batch writes"
    );
    // A glance (the console's barrier page) costs the same at any size: its counts stop at the
    // cap, and say so.
    let mut calls = Vec::new();
    for n in [1000, 10_000] {
        c.0.set(0);
        let (st, capped) = b.glance(&format!("big{n}"), 500).await.unwrap().unwrap();
        calls.push(c.0.get());
        // The root and the shards of about 500 members: a lower bound, said so.
        assert!(st.pending >= 400 && st.pending < n as u64, "{st:?}");
        assert_eq!((capped.pending, capped.failed), (true, true));
        assert_eq!((st.total, capped.added), (n as u64, false));
    }
    assert_eq!(
        calls[0], calls[1],
        "backend calls of a glance at 1 000 and 10 000 members"
    );
    c.0.set(0);
    let (st, capped) = b.glance("b", 500).await.unwrap().unwrap();
    assert!(st.complete && !capped.pending, "{st:?}");
}

async fn unknown_members_oversized_outcomes_and_unknown_barriers_are_refused(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    b.create(spec("b1", 2)).await.unwrap();
    let err = b
        .ack("b1", "stray.xml", ok())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(err, "unknown member \"stray.xml\" of barrier \"b1\"");
    let big = Outcome {
        ok: true,
        error: None,
        result: Some(json!("x".repeat(9000))),
    };
    let err = b
        .ack("b1", "m00000.xml", big)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("barrier outcome is 9023 bytes encoded; the limit is 8192"),
        "{err}"
    );
    let err = b
        .ack("nope", "m00000.xml", ok())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown barrier \"nope\""), "{err}");
    // Ids that a URL parser takes as steps of a path are refused at create; ids that links
    // percent-encode are not.
    for step in [".", ".."] {
        let err = b.create(spec(step, 1)).await.unwrap_err().to_string();
        assert!(err.contains("is a step of a URL path"), "{step}: {err}");
    }
    for fine in ["%2e", "a/..", "...", ".x", "?#\\"] {
        b.create(spec(fine, 1)).await.unwrap();
    }
    let st = b.status("b1", None, 10).await.unwrap().unwrap();
    assert_eq!(
        (st.pending, st.resolved),
        (2, 0),
        "refused acks changed nothing"
    );
}

async fn a_busy_claim_raises_until_the_lease_lapses(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    b.create(spec("b1", 1)).await.unwrap();
    // GIVEN another call holds the dispatch lease
    let now = native_core::ports::now_ms();
    let claim = |until: i64| NewItem {
        pk: "b#acme#b1".into(),
        sk: "d".into(),
        value: json!({ "lease_until_ms": until, "sent": false }).to_string(),
        expires_at_s: now / 1000 + 3600,
    };
    e.kv()
        .put(claim(now + 60_000), PutMode::Create)
        .await
        .unwrap();
    // WHEN the last member is acked THEN the ack raises and sends nothing
    let err = b
        .ack("b1", "m00000.xml", ok())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "barrier completion is being dispatched by another call; retry in 61 s"
    );
    assert!(continuations(e.q()).await.is_empty());
    // WHEN the holder died and its lease lapsed THEN the redelivered ack sends
    e.kv()
        .put(claim(now - 1), PutMode::Overwrite)
        .await
        .unwrap();
    let r = b.ack("b1", "m00000.xml", ok()).await.unwrap();
    assert_eq!(
        r,
        AckResult {
            chain: None,
            duplicate: true,
            complete: true,
            dispatched: true
        }
    );
    assert_eq!(continuations(e.q()).await, ["b1"]);
    assert!(b.status("b1", None, 1).await.unwrap().unwrap().dispatched);
}

async fn expiry_stops_acks_an_hour_before_and_hydrate_returns_nil_after(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    b.create(spec("b1", 2)).await.unwrap();
    b.ack("b1", "m00000.xml", ok()).await.unwrap();
    // GIVEN the week is almost over: the meta row expires in 30 minutes
    let meta = e.kv().get("b#acme#b1", "meta").await.unwrap().unwrap();
    let soon = native_core::ports::now_ms() / 1000 + 1800;
    e.kv()
        .put(
            NewItem {
                pk: meta.pk.clone(),
                sk: meta.sk.clone(),
                value: meta.value.clone(),
                expires_at_s: soon,
            },
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    // THEN acks raise barrier expired and record nothing
    let err = b
        .ack("b1", "m00001.xml", ok())
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(err, "barrier expired");
    assert!(e
        .kv()
        .get("b#acme#b1", "o#m00001.xml")
        .await
        .unwrap()
        .is_none());
    // WHEN the rows have expired THEN hydrate returns nil, even with every member resolved
    b.create(spec("b2", 1)).await.unwrap();
    b.ack("b2", "m00000.xml", ok()).await.unwrap();
    let meta = e.kv().get("b#acme#b2", "meta").await.unwrap().unwrap();
    e.kv()
        .put(
            NewItem {
                pk: meta.pk,
                sk: meta.sk,
                value: meta.value,
                expires_at_s: 1,
            },
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    assert!(b.hydrate("b2").await.unwrap().is_none());
}

async fn create_again_does_nothing_and_a_crashed_create_is_completed_by_the_same_create(
    backend: Backend,
) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    b.create(spec("b1", 3)).await.unwrap();
    b.ack("b1", "m00000.xml", ok()).await.unwrap();
    // Created again (with the same or other members): nothing changes.
    b.create(spec("b1", 3)).await.unwrap();
    b.create(spec("b1", 5)).await.unwrap();
    let st = b.status("b1", None, 10).await.unwrap().unwrap();
    assert_eq!((st.total, st.pending), (3, 2));

    // A create that dies after its batch writes, before the meta row:
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: e.t.backends.kv.clone(),
        queue: e.t.backends.queue.clone(),
        plan: plan.clone(),
    };
    let fb = barriers(&f, &f, &c);
    // The meta row: the last write but the list row's.
    plan.arm(Barriers::create_calls(30) - 1, Fault::Fail);
    assert!(fb.create(spec("b2", 30)).await.is_err());
    plan.disarm();
    // acks are refused before anything is recorded,
    let err = b
        .ack("b2", "m00000.xml", ok())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("barrier \"b2\" is still being created; retry"),
        "{err}"
    );
    assert!(e
        .kv()
        .get("b#acme#b2", "o#m00000.xml")
        .await
        .unwrap()
        .is_none());
    // a retry with other members is refused,
    let err = b.create(spec("b2", 31)).await.unwrap_err().to_string();
    assert!(
        err.contains("is being created with another member list"),
        "{err}"
    );
    // and the same create completes it.
    b.create(spec("b2", 30)).await.unwrap();
    assert_eq!(b.status("b2", None, 1).await.unwrap().unwrap().pending, 30);
}

async fn without_a_queue_every_caller_that_finds_nothing_pending_sees_complete(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = Barriers {
        kv: e.kv(),
        queue: e.q(),
        tenant: "acme",
        queue_enabled: false,
        budget: &c,
    };
    let err = b.create(spec("b1", 2)).await.unwrap_err().to_string();
    assert!(
        err.contains(
            "continue_with needs a queue: set \"queue\": true in tenants/acme/config.json"
        ),
        "{err}"
    );
    let mut s = spec("b1", 2);
    s.continue_with = None;
    b.create(s).await.unwrap();
    assert!(!b.ack("b1", "m00000.xml", ok()).await.unwrap().complete);
    let last = b.ack("b1", "m00001.xml", ok()).await.unwrap();
    assert_eq!(
        last,
        AckResult {
            chain: None,
            duplicate: false,
            complete: true,
            dispatched: false
        }
    );
    let dup = b.ack("b1", "m00000.xml", ok()).await.unwrap();
    assert_eq!(
        dup,
        AckResult {
            chain: None,
            duplicate: true,
            complete: true,
            dispatched: false
        }
    );
    assert!(continuations(e.q()).await.is_empty());
}

async fn status_names_pending_members_page_by_page_and_tells_overdue(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    let mut s = spec("b1", 5);
    s.deadline_s = Some(3);
    let created = std::time::Instant::now();
    b.create(s).await.unwrap();
    b.ack(
        "b1",
        "m00001.xml",
        Outcome {
            ok: false,
            error: None,
            result: None,
        },
    )
    .await
    .unwrap();
    let st = b.status("b1", None, 2).await.unwrap().unwrap();
    assert_eq!(st.pending_members, ["m00000.xml", "m00002.xml"]);
    assert_eq!((st.total, st.pending, st.resolved, st.failed), (5, 4, 1, 1));
    assert!(!st.complete);
    // Not overdue before its deadline (a loaded machine may take the 3 s to get here: then
    // there is nothing to tell).
    assert!(!st.overdue || created.elapsed() >= std::time::Duration::from_secs(3));
    let st2 = b
        .status("b1", st.cursor.as_deref(), 2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(st2.pending_members, ["m00003.xml", "m00004.xml"]);
    assert!(st2.cursor.is_none());
    let past = std::time::Duration::from_millis(3100).saturating_sub(created.elapsed());
    tokio::time::sleep(past).await;
    assert!(b.status("b1", None, 1).await.unwrap().unwrap().overdue);
    assert!(b.status("ghost", None, 1).await.unwrap().is_none());
}

/// Many barriers, every ack in parallel through two handles on the same storage (two
/// processes: the folder opened twice, or two sets of SDK clients on one table and queue);
/// busy claims are retried as a queue would redeliver them.
async fn racing_acks_complete_every_barrier_and_send_exactly_one_continuation_each(
    backend: Backend,
) {
    let e = env(backend).await;
    let a = e.t.backends.clone();
    let b2 = e.t.another().await;
    // DynamoDB applies each request atomically; moto, under concurrent requests, does not (a
    // conditional put can succeed twice, a cancelled transaction undoes others' writes: see
    // `one_kv_call_at_a_time`). On moto each table call is made atomic, as on AWS; the acks
    // still interleave freely between calls.
    #[cfg(feature = "aws")]
    let [a, b2] = if backend == Backend::Aws {
        native_tests::aws_env::one_kv_call_at_a_time([a, b2])
    } else {
        [a, b2]
    };
    let n_barriers = 24;
    let n_members = 6;
    {
        let c = Count::default();
        let b = barriers(&*a.kv, &*a.queue, &c);
        for i in 0..n_barriers {
            b.create(spec(&format!("r{i}"), n_members)).await.unwrap();
        }
    }
    let mut tasks = Vec::new();
    for i in 0..n_barriers {
        for m in 0..n_members {
            let db = if (i + m) % 2 == 0 {
                a.clone()
            } else {
                b2.clone()
            };
            // Scripts run on blocking threads and block on backend calls, as here.
            let handle = tokio::runtime::Handle::current();
            tasks.push(tokio::task::spawn_blocking(move || {
                let c = Count::default();
                let b = barriers(&*db.kv, &*db.queue, &c);
                let id = format!("r{i}");
                let member = format!("m{m:05}.xml");
                for attempt in 0..200 {
                    match handle.block_on(b.ack(&id, &member, ok())) {
                        Ok(r) => return r,
                        Err(e) if e.to_string().contains("retry") => {
                            assert!(attempt < 199, "never got through: {e}");
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                        Err(e) => panic!("{e}"),
                    }
                }
                unreachable!()
            }));
        }
    }
    let mut dispatched = 0;
    for t in tasks {
        if t.await.unwrap().dispatched {
            dispatched += 1;
        }
    }
    let mut sent = continuations(&*a.queue).await;
    sent.sort();
    let mut want: Vec<_> = (0..n_barriers).map(|i| format!("r{i}")).collect();
    want.sort();
    assert_eq!(sent, want, "exactly one continuation per barrier");
    assert_eq!(dispatched, n_barriers);
}

/// The crash matrix: every call k of create, of a non-final ack, and of the final ack with its
/// dispatch, fails (and separately is applied with its reply lost); then the event is
/// redelivered until it succeeds. No barrier completes early, none is left one short, every
/// completed one sends at least once.
///
/// Each case has a barrier of its own in one store (a table and queue per case would make the
/// AWS variant slow); every case takes its continuations off the queue before the next.
async fn crashes_at_every_step_are_repaired_by_redelivery(backend: Backend) {
    let e = env(backend).await;
    let mut n = 0;
    for fault in [Fault::Fail, Fault::LoseReply] {
        for phase in ["create", "first ack", "last ack"] {
            let calls = match phase {
                "create" => Barriers::create_calls(3),
                "first ack" => 2,
                // meta, the fill, the list row marked complete, timer index, claim with its
                // guard (one transaction), send, mark
                _ => 7,
            };
            for k in 1..=calls {
                n += 1;
                let id = format!("b{n}");
                let id = id.as_str();
                let plan = Arc::new(Plan::default());
                let f = Faulty {
                    kv: e.t.backends.kv.clone(),
                    queue: e.t.backends.queue.clone(),
                    plan: plan.clone(),
                };
                let c = Count::default();
                let b = barriers(&f, &f, &c);
                let case = format!("{fault:?} at call {k} of {phase}");
                let members = ["m00000.xml", "m00001.xml", "m00002.xml"];

                // create, with redelivery
                if phase == "create" {
                    plan.arm(k, fault);
                }
                if b.create(spec(id, 3)).await.is_err() {
                    plan.disarm();
                    // Nothing may be ackable yet, unless the failed call was the last write.
                    b.create(spec(id, 3))
                        .await
                        .unwrap_or_else(|e| panic!("{case}: retried create: {e}"));
                }
                plan.disarm();
                for (i, m) in members.iter().enumerate() {
                    let armed = (phase == "first ack" && i == 0) || (phase == "last ack" && i == 2);
                    if armed {
                        plan.arm(k, fault);
                    }
                    let mut tries = 0;
                    loop {
                        tries += 1;
                        match b.ack(id, m, ok()).await {
                            Ok(r) => {
                                assert_eq!(
                                    r.complete,
                                    i == 2,
                                    "{case}: complete too early or not at the end"
                                );
                                // A repeated ack that found the claim held by a call that died
                                // is answered as a duplicate: the holder's guard sends once the
                                // lease lapsed. Here the lease lapses and the ack comes again.
                                let queued = e.q().stats(QueueKind::Work).await.unwrap();
                                if r.complete && queued.visible + queued.waiting == 0 && tries < 4 {
                                    plan.disarm();
                                    lapse(e.kv(), id).await;
                                    continue;
                                }
                                break;
                            }
                            Err(err) => {
                                plan.disarm();
                                assert!(tries < 4, "{case}: still failing: {err}");
                                // No early completion: while members are pending, nothing was sent.
                                let st = b.status(id, None, 10).await.unwrap().unwrap();
                                if st.pending > 0 {
                                    assert!(
                                        continuations(e.q()).await.is_empty(),
                                        "{case}: sent early"
                                    );
                                }
                                if err.to_string().contains("being dispatched") {
                                    // the holder died: let its lease lapse
                                    lapse(e.kv(), id).await;
                                }
                            }
                        }
                    }
                    if i < 2 {
                        assert_eq!(
                            b.status(id, None, 10).await.unwrap().unwrap().pending as usize,
                            2 - i,
                            "{case}: one short or early"
                        );
                    }
                }
                let st = b.status(id, None, 10).await.unwrap().unwrap();
                assert!(st.complete, "{case}: not complete");
                let sent = continuations(e.q()).await;
                assert!(!sent.is_empty(), "{case}: completed without a continuation");
                assert!(sent.iter().all(|s| s == id));
                if fault == Fault::Fail || phase != "last ack" || k != 6 {
                    assert!(sent.len() <= 2, "{case}: {} continuations", sent.len());
                }
            }
        }
    }
}

/// Lets the dispatch claim of barrier `id` lapse, as when its holder died.
async fn lapse(kv: &dyn KvStore, id: &str) {
    let d = kv.get(&format!("b#acme#{id}"), "d").await.unwrap().unwrap();
    let mut v: Value = serde_json::from_str(&d.value).unwrap();
    v["lease_until_ms"] = json!(0);
    kv.put(
        NewItem {
            pk: d.pk,
            sk: d.sk,
            value: v.to_string(),
            expires_at_s: d.expires_at_s,
        },
        PutMode::Overwrite,
    )
    .await
    .unwrap();
}

/// Every row of a barrier, expired ones left out.
async fn rows(kv: &dyn KvStore, id: &str) -> Vec<native_core::ports::Item> {
    let page = kv
        .query(&format!("b#acme#{id}"), "", None, 1000)
        .await
        .unwrap();
    assert!(page.next.is_none());
    page.items
}

/// Rewrites a row with another expiry (and, for meta, the same in its value).
async fn set_expiry(kv: &dyn KvStore, it: &native_core::ports::Item, expires_at_s: i64) {
    let mut value = it.value.clone();
    if it.sk == "meta" {
        let mut v: Value = serde_json::from_str(&value).unwrap();
        v["expires_at_s"] = json!(expires_at_s);
        value = v.to_string();
    }
    kv.put(
        NewItem {
            pk: it.pk.clone(),
            sk: it.sk.clone(),
            value,
            expires_at_s,
        },
        PutMode::Overwrite,
    )
    .await
    .unwrap();
}

async fn an_id_used_again_after_its_rows_expired_is_a_new_barrier(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    // GIVEN a barrier created almost a week ago: its rows expire in two hours
    b.create(spec("b1", 2)).await.unwrap();
    let end = native_core::ports::now_ms() / 1000 + 2 * 3600;
    for it in rows(e.kv(), "b1").await {
        set_expiry(e.kv(), &it, end).await;
    }
    // AND acked in its last hours, one member failed: it completes
    let failed = Outcome {
        ok: false,
        error: Some("old".into()),
        result: None,
    };
    b.ack("b1", "m00000.xml", failed).await.unwrap();
    assert!(b.ack("b1", "m00001.xml", ok()).await.unwrap().dispatched);
    assert_eq!(continuations(e.q()).await, ["b1"]);
    // WHEN the week is over: every row that expires by then is gone
    for it in rows(e.kv(), "b1").await {
        if it.expires_at_s <= end {
            set_expiry(e.kv(), &it, 1).await;
        }
    }
    assert!(
        rows(e.kv(), "b1").await.is_empty(),
        "no row outlives the barrier"
    );
    // AND the id is used again, for three members
    b.create(spec("b1", 3)).await.unwrap();
    let st = b.status("b1", None, 10).await.unwrap().unwrap();
    assert_eq!((st.total, st.pending, st.failed), (3, 3, 0));
    // THEN its acks are not duplicates of the old ones, and it completes once, on its own outcomes
    for (i, m) in ["m00000.xml", "m00001.xml", "m00002.xml"]
        .iter()
        .enumerate()
    {
        let r = b.ack("b1", m, ok()).await.unwrap();
        assert_eq!(
            r,
            AckResult {
                chain: None,
                duplicate: false,
                complete: i == 2,
                dispatched: i == 2
            },
            "{m}"
        );
    }
    assert_eq!(continuations(e.q()).await, ["b1"]);
    let (meta, failed) = b.hydrate("b1").await.unwrap().unwrap();
    assert_eq!((meta.members, failed), (3, 0));
    let (outcomes, _) = b.outcomes("b1", false, None).await.unwrap();
    assert!(outcomes.iter().all(|(_, o)| *o == json!({ "ok": true })));
}

async fn a_slow_second_create_cannot_bring_back_acked_members(backend: Backend) {
    let e = env(backend).await;
    let c = Count::default();
    let b = barriers(e.kv(), e.q(), &c);
    // GIVEN a second create of b1 (a retry) that found no barrier yet, then stalls
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: e.t.backends.kv.clone(),
        queue: e.t.backends.queue.clone(),
        plan: plan.clone(),
    };
    let hold = plan.hold(2);
    let handle = tokio::runtime::Handle::current();
    let slow = tokio::task::spawn_blocking(move || {
        let c = Count::default();
        handle.block_on(barriers(&f, &f, &c).create(spec("b1", 3)))
    });
    hold.reached().await;
    // WHEN meanwhile the first create finishes and a member is acked
    b.create(spec("b1", 3)).await.unwrap();
    assert!(!b.ack("b1", "m00000.xml", ok()).await.unwrap().duplicate);
    // AND the stalled create goes on
    hold.release();
    assert_eq!(slow.await.unwrap().unwrap(), "b1");
    // THEN the acked member stays resolved
    let st = b.status("b1", None, 10).await.unwrap().unwrap();
    assert_eq!((st.pending, st.resolved), (2, 1), "{st:?}");
    // AND the other two complete the barrier, with one continuation
    assert!(!b.ack("b1", "m00001.xml", ok()).await.unwrap().complete);
    assert!(b.ack("b1", "m00002.xml", ok()).await.unwrap().dispatched);
    assert_eq!(continuations(e.q()).await, ["b1"]);
}

// ---- through scripts: the seed's scripts as written, limits, isolation ----

fn example(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../examples/barrier/tenants/acme/scripts")
        .join(format!("{name}.luau"));
    std::fs::read_to_string(p).unwrap()
}

async fn seed_project(backend: Backend, extra: &[(&str, &str)]) -> TestProject {
    let (send, router, default, ack, finalize) = (
        example("send"),
        example("router"),
        example("default"),
        example("ack"),
        example("finalize"),
    );
    let mut scripts: Vec<(&str, &str)> = vec![
        ("send", &send),
        ("router", &router),
        ("default", &default),
        ("ack", &ack),
        ("finalize", &finalize),
    ];
    scripts.extend_from_slice(extra);
    let deployment =
        r#"{ "buckets": { "map": { "In": "acme-in", "Acks": "acme-acks", "Out": "acme-out" } } }"#;
    TestProject::on(
        backend,
        deployment,
        &[
            ("acme", r#"{ "queue": true }"#, &scripts),
            ("other", r#"{ "queue": true }"#, &scripts),
        ],
    )
    .await
}

async fn the_seed_scripts_run_as_written_end_to_end(backend: Backend) {
    let p = seed_project(backend, &[]).await;
    let docs = json!({ "batch": "b1", "ref": "r", "docs": { "a.xml": "<a/>", "b.xml": "<b/>" } });
    p.invoke("acme", "send", docs).await.unwrap();
    assert!(p.drain().await.failures.is_empty());
    p.rt.put_object("acme", "Acks", "b1/a.json", r#"{"status":"ok"}"#.into())
        .await
        .unwrap();
    assert!(p.drain().await.failures.is_empty());
    assert!(
        p.get("acme", "Out", "summaries/b1.json").await.is_none(),
        "not before the last ack"
    );
    p.rt.put_object(
        "acme",
        "Acks",
        "b1/b.json",
        r#"{"status":"no","error":"bad"}"#.into(),
    )
    .await
    .unwrap();
    // The partner's retry of the last one, before the drain: a duplicate.
    p.rt.put_object(
        "acme",
        "Acks",
        "b1/b.json",
        r#"{"status":"no","error":"bad"}"#.into(),
    )
    .await
    .unwrap();
    let r = p.drain().await;
    // The two run at once, in one drain pass. When the duplicate claims the dispatch first, the
    // original finds it held and is told to retry (a first ack that finds the claim taken
    // retries; its retry is a duplicate then): that, and nothing else, may fail here.
    assert!(
        r.failures.len() <= 1
            && r.failures.iter().all(|f| f
                .error
                .contains("barrier completion is being dispatched by another call")),
        "{:?}",
        r.failures
    );
    let summary: Value =
        serde_json::from_str(&p.get("acme", "Out", "summaries/b1.json").await.unwrap()).unwrap();
    assert_eq!(
        summary,
        json!({ "ref": "r", "total": 2, "ok": 1, "failed": { "b.xml": "bad" } })
    );
    let finalize_runs = p
        .log
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["script"] == "finalize")
        .count();
    assert_eq!(finalize_runs, 1, "one continuation, one warning logged");
}

async fn barrier_rows_are_out_of_reach_of_native_db_and_other_tenants(backend: Backend) {
    let probe = r##"function on_invoke(ctx, ev)
        local seen = {}
        for _, part in { "b1", "b#acme#b1", "#acme#b1", "acme#b1", "" .. ev.p } do
            local ok, q = pcall(native.db.query, part)
            if ok and #q.items > 0 then table.insert(seen, part) end
            local ok2, v = pcall(native.db.get, part, "meta")
            if ok2 and v ~= nil then table.insert(seen, part .. ":meta") end
        end
        -- forging: writing rows where the barrier's would be changes nothing
        native.db.put("b1", "p#a.xml", 1)
        native.db.put("b#acme#b1", "meta", { members = 1 })
        return seen
    end"##;
    let acker =
        r#"function on_invoke(ctx, ev) return native.barrier.ack(ev.id, ev.m, { ok = true }) end"#;
    let status = r#"function on_invoke(ctx, ev) return native.barrier.status(ev.id) end"#;
    let p = seed_project(
        backend,
        &[("probe", probe), ("acker", acker), ("status", status)],
    )
    .await;
    p.invoke(
        "acme",
        "send",
        json!({ "batch": "b1", "docs": { "a.xml": "1", "b.xml": "2" } }),
    )
    .await
    .unwrap();
    assert_eq!(
        p.invoke("acme", "probe", json!({ "p": "p" }))
            .await
            .unwrap(),
        json!({})
    );
    // another tenant cannot ack or read it
    let e = p
        .invoke("other", "acker", json!({ "id": "b1", "m": "a.xml" }))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown barrier \"b1\""), "{e}");
    assert_eq!(
        p.invoke("other", "status", json!({ "id": "b1" }))
            .await
            .unwrap(),
        Value::Null
    );
    let st = p
        .invoke("acme", "status", json!({ "id": "b1" }))
        .await
        .unwrap();
    assert_eq!(
        (st["pending"].clone(), st["total"].clone()),
        (json!(2), json!(2))
    );
    assert_eq!(st["pending_members"], json!(["a.xml", "b.xml"]));
}

async fn create_must_fit_in_max_data_ops(backend: Backend) {
    let create = r#"function on_invoke(ctx, ev)
        local m = {}
        for i = 1, ev.n do m[i] = "d" .. i end
        return native.barrier.create({ members = m })
    end"#;
    let forgive = r#"function on_invoke(ctx, ev)
        local m = {}
        for i = 1, ev.n do m[i] = "d" .. i end
        local ok = pcall(native.barrier.create, { members = m })
        return "forgiven"
    end"#;
    let p = TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[
            (
                "big",
                r#"{ "limits": { "max_data_ops": 10000 } }"#,
                &[("create", create)],
            ),
            // The 24 000-member create makes 963 calls: on a loaded machine moto takes more
            // than the default 30 s for them, and this test is about max_data_ops.
            (
                "small",
                r#"{ "limits": { "timeout_s": 300, "max_data_ops": 40 } }"#,
                &[("create", create), ("forgive", forgive)],
            ),
        ],
    )
    .await;
    p.invoke("big", "create", json!({ "n": 10000 }))
        .await
        .unwrap();
    let e = p
        .invoke("small", "create", json!({ "n": 30000 }))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("creating a barrier of 30000 members needs 47 backend calls and this invocation has 40 left"), "{e}");
    p.invoke("small", "create", json!({ "n": 24000 }))
        .await
        .unwrap();
    // GIVEN a script that catches the pre-check's error with pcall WHEN it runs THEN the
    // invocation still fails with the breach: pcall cannot forgive a limit
    let e = p
        .invoke("small", "forgive", json!({ "n": 30000 }))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("limit max_data_ops exceeded") && e.contains("30000 members"),
        "{e}"
    );
}

async fn script_errors_for_bad_barrier_calls(backend: Backend) {
    let p = seed_project(backend, &[
        ("bad_outcome", "function on_invoke() native.barrier.ack('b1', 'a.xml', { ok = 'yes' }) end"),
        ("no_members", "function on_invoke() native.barrier.create({ members = {} }) end"),
        ("dup_members", "function on_invoke() native.barrier.create({ members = { 'a', 'a' } }) end"),
        ("bad_cont", "function on_invoke() native.barrier.create({ members = { 'a' }, continue_with = 'ghost' }) end"),
        ("not_a_barrier", "function on_invoke() return { native.barrier.hydrate({}) == nil, native.barrier.hydrate({ bucket = 'In', key = 'k' }) == nil, native.barrier.hydrate('x') == nil, native.barrier.hydrate({ barrier = 'never-made' }) == nil } end"),
    ]).await;
    // GIVEN events that are not a barrier's continuation WHEN hydrated THEN nil, as the README
    // says (a script shared by several triggers may ask)
    assert_eq!(
        p.invoke("acme", "not_a_barrier", json!({})).await.unwrap(),
        json!([true, true, true, true])
    );
    for (script, want) in [
        ("bad_outcome", "outcome.ok must be a boolean, not a string"),
        ("no_members", "members is empty"),
        ("dup_members", "member \"a\" is listed twice"),
        (
            "bad_cont",
            "continue_with: script \"ghost\" of tenant \"acme\" not found",
        ),
    ] {
        let e = p
            .invoke("acme", script, json!({}))
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(want) && e.contains(&format!("{script}.luau:1:")),
            "{script}: {e}"
        );
    }
}

// ---- a seeded simulation of interleavings ----

/// 400 seeds, each a different interleaving of six concurrent acks (four members, two of them
/// delivered twice) with busy claims retried as a queue would: every barrier completes, exactly
/// one ack dispatches, exactly one continuation is sent.
#[test]
fn seeded_interleavings_of_concurrent_acks_send_exactly_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for seed in 0..400u64 {
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let t = TestBackends::new(Backend::Embedded).await;
            // Every port call first yields a seeded number of times: see Plan::jittering.
            let j = Faulty {
                kv: t.backends.kv.clone(),
                queue: t.backends.queue.clone(),
                plan: Arc::new(Plan::jittering(seed)),
            };
            let c = Count::default();
            barriers(&j, &j, &c).create(spec("b", 4)).await.unwrap();
            let members = [
                0usize,
                1,
                2,
                3,
                (seed % 4) as usize,
                ((seed / 4) % 4) as usize,
            ];
            let mut tasks = Vec::new();
            for m in members {
                let j = j.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let c = Count::default();
                    let b = barriers(&j, &j, &c);
                    for _ in 0..1000 {
                        match b.ack("b", &format!("m{m:05}.xml"), ok()).await {
                            Ok(r) => return r,
                            Err(e) if e.to_string().contains("being dispatched") => {
                                tokio::task::yield_now().await
                            }
                            Err(e) => panic!("seed {seed}: {e}"),
                        }
                    }
                    panic!("seed {seed}: an ack never got through");
                }));
            }
            let mut dispatched = 0;
            for task in tasks {
                if task.await.unwrap().dispatched {
                    dispatched += 1;
                }
            }
            assert_eq!(dispatched, 1, "seed {seed}: acks that dispatched");
            assert_eq!(
                continuations(&*t.backends.queue).await,
                ["b"],
                "seed {seed}"
            );
            let c = Count::default();
            assert!(
                barriers(&j, &j, &c)
                    .status("b", None, 1)
                    .await
                    .unwrap()
                    .unwrap()
                    .complete,
                "seed {seed}"
            );
        });
    }
}

/// 300 seeds, each a different interleaving of two creates of one barrier (a retry racing the
/// first call, starting a seeded number of steps later) and an ack of every member, each
/// retried while the barrier is still being created, as a queue would redeliver it: every
/// barrier completes with every member resolved, and exactly one continuation is sent.
#[test]
fn seeded_interleavings_of_racing_creates_and_acks_complete_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for seed in 0..300u64 {
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let t = TestBackends::new(Backend::Embedded).await;
            let j = Faulty {
                kv: t.backends.kv.clone(),
                queue: t.backends.queue.clone(),
                plan: Arc::new(Plan::jittering(seed)),
            };
            let mut tasks = Vec::new();
            for late in [0, seed % 12] {
                let j = j.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    for _ in 0..late {
                        tokio::task::yield_now().await;
                    }
                    let c = Count::default();
                    barriers(&j, &j, &c).create(spec("b", 3)).await.unwrap();
                    None
                }));
            }
            for m in 0..3 {
                let j = j.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let c = Count::default();
                    let b = barriers(&j, &j, &c);
                    for _ in 0..10_000 {
                        match b.ack("b", &format!("m{m:05}.xml"), ok()).await {
                            Ok(r) => return Some(r),
                            Err(e) if e.to_string().contains("retry") => {
                                tokio::task::yield_now().await
                            }
                            Err(e) if e.to_string().contains("unknown barrier") => {
                                tokio::task::yield_now().await
                            }
                            Err(e) => panic!("seed {seed}: {e}"),
                        }
                    }
                    panic!("seed {seed}: an ack never got through");
                }));
            }
            let mut dispatched = 0;
            for task in tasks {
                if let Some(r) = task.await.unwrap() {
                    dispatched += usize::from(r.dispatched);
                }
            }
            let c = Count::default();
            let st = barriers(&j, &j, &c)
                .status("b", None, 10)
                .await
                .unwrap()
                .unwrap();
            assert_eq!((st.pending, st.resolved), (0, 3), "seed {seed}: {st:?}");
            assert_eq!(dispatched, 1, "seed {seed}: acks that dispatched");
            assert_eq!(
                continuations(&*t.backends.queue).await,
                ["b"],
                "seed {seed}"
            );
        });
    }
}

/// A held dispatch claim that ends a script travels as its kind: the caller is told 503 with the
/// lease's Retry-After. The same words, caught and raised again by the script, are the script's
/// own failure (500): no message is read back for its kind.
async fn a_held_claim_ends_a_script_as_held_and_its_words_raised_again_are_the_scripts(
    backend: Backend,
) {
    use native_core::error::Cause;
    use native_core::inbound::ApiError;
    use native_core::Error;
    // GIVEN barriers b1 and b2 of one member each, whose dispatch claims another call holds
    let make = "function on_invoke(ctx, ev) native.barrier.create({ id = ev.id, members = { 'a' }, continue_with = 'make' }) end";
    let ack = "function on_invoke(ctx, ev) native.barrier.ack(ev.id, 'a', { ok = true }) end";
    let again = "function on_invoke(ctx, ev) local ok, e = pcall(native.barrier.ack, ev.id, 'a', { ok = true }) error(e, 0) end";
    let p = TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[("make", make), ("ack", ack), ("again", again)],
        )],
    )
    .await;
    let now = native_core::ports::now_ms();
    for id in ["b1", "b2"] {
        p.invoke("acme", "make", json!({ "id": id })).await.unwrap();
        let claim = NewItem {
            pk: format!("b#acme#{id}"),
            sk: "d".into(),
            value: json!({ "lease_until_ms": now + 60_000, "sent": false }).to_string(),
            expires_at_s: now / 1000 + 3600,
        };
        let kv = &p.rt.services.backends.kv;
        kv.put(claim, PutMode::Create).await.unwrap();
    }
    // WHEN a script acks b1's last member and does not catch the error
    let e = p
        .invoke("acme", "ack", json!({ "id": "b1" }))
        .await
        .unwrap_err();
    // THEN it failed as held, and HTTP says 503, retry after the lease and its guard
    let held = match &e {
        Error::Script {
            cause: Cause::Held { retry_after_s },
            ..
        } => *retry_after_s,
        other => panic!("not held: {other:?}"),
    };
    assert!((55..=61).contains(&held), "{held}");
    let api = ApiError::from(e);
    assert_eq!(api.code.status().as_u16(), 503, "{}", api.message);
    assert_eq!(api.retry_after_s, Some(held));
    // WHEN a script catches the same error on b2 and raises its message again
    let e = p
        .invoke("acme", "again", json!({ "id": "b2" }))
        .await
        .unwrap_err();
    // THEN that is the script's own failure, in the same words
    let text = e.to_string();
    assert!(
        text.contains("is being dispatched by another call; retry in"),
        "{text}"
    );
    assert!(
        matches!(
            &e,
            Error::Script {
                cause: Cause::Raised,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(ApiError::from(e).code.status().as_u16(), 500);
}
