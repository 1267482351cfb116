//! Barriers after create: deadlines that act (`on_overdue`, fired by the timer tick), `add`
//! and `cancel`, each racing the final ack (exactly one continuation), and what the overdue
//! script and the continuation see.

use std::sync::Arc;

use native_core::barrier::CreateSpec;
use native_core::ports::WorkMessage;
use native_core::ports::{now_ms, Queue, QueueKind};
use native_core::runtime::tick;
use native_core::timer::{TickOptions, Timers};
use native_tests::barriers::{barriers, ok, Count};
use native_tests::faults::{Faulty, Plan};
use native_tests::{Backend, TestBackends, TestProject};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    overdue_fires_once_not_before_the_deadline_and_sees_pending_members,
    a_barrier_complete_before_its_deadline_sends_no_overdue,
    add_is_idempotent_per_member_and_refused_once_complete,
    cancel_resolves_pending_members_and_the_continuation_sees_it,
);

fn spec(id: &str, members: &[&str]) -> CreateSpec {
    CreateSpec {
        id: Some(id.into()),
        members: members.iter().map(|m| m.to_string()).collect(),
        continue_with: Some("finalize".into()),
        state: json!(null),
        deadline_s: None,
        on_overdue: None,
    }
}

/// (script, event) of every work message sent so far.
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

const CREATE: &str = r#"
function on_invoke(ctx, ev)
  if ev.ack then return native.barrier.ack("b1", ev.ack, { ok = true }) end
  return native.barrier.create{ id = "b1", members = { "a", "b", "c" }, continue_with = "finalize",
    deadline_s = 3600, on_overdue = "late", state = { ref = 7 } }
end
"#;
const LATE: &str = r#"
function on_queue(ctx, ev)
  local b = native.barrier.hydrate(ev)
  local names = {}
  for m in b:pending_members() do table.insert(names, m) end
  native.db.put("seen", "late", { overdue = ev.overdue, pending = b.pending, complete = b.complete,
    names = names, total = b.total, ok = b.ok, state = b.state })
  -- act: the late ones fail, which completes the barrier
  for _, m in ipairs(names) do native.barrier.ack(ev.barrier, m, { ok = false, error = "late" }) end
end
"#;
const FINALIZE: &str = r#"
function on_queue(ctx, ev)
  local b = native.barrier.hydrate(ev)
  local n = (native.db.get("seen", "final") or { runs = 0 }).runs
  native.db.put("seen", "final", { runs = n + 1, failed = b.failed, total = b.total,
    cancelled = b.cancelled or false })
end
"#;
const CHANGE: &str = r#"
function on_invoke(ctx, ev)
  if ev.add then return native.barrier.add("b1", ev.add) end
  if ev.cancel then return native.barrier.cancel("b1", ev.cancel) end
  return native.barrier.create{ id = "b1", members = { "a", "b" }, continue_with = "finalize" }
end
"#;

async fn project(backend: Backend) -> TestProject {
    TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true }"#,
            &[
                ("create", CREATE),
                ("late", LATE),
                ("finalize", FINALIZE),
                ("change", CHANGE),
            ],
        )],
    )
    .await
}

async fn seen(p: &TestProject, key: &str) -> Option<Value> {
    p.rt.services
        .backends
        .kv
        .get("d#acme#seen", key)
        .await
        .unwrap()
        .map(|it| serde_json::from_str(&it.value).unwrap())
}

async fn overdue_fires_once_not_before_the_deadline_and_sees_pending_members(backend: Backend) {
    // GIVEN a barrier of three with a one-hour deadline and an overdue script; "a" acked
    let p = project(backend).await;
    let (kv, q) = (
        p.rt.services.backends.kv.clone(),
        p.rt.services.backends.queue.clone(),
    );
    let t0 = now_ms();
    p.rt.invoke("acme", "create", json!({})).await.unwrap();
    p.rt.invoke("acme", "create", json!({ "ack": "a" }))
        .await
        .unwrap();
    p.drain().await;
    // WHEN the tick runs a second before the deadline
    let r = tick(
        kv.as_ref(),
        q.as_ref(),
        &*p.rt.services.backends.objects,
        at(t0 + 3_599_000),
    )
    .await
    .unwrap();
    p.drain().await;
    // THEN nothing was sent
    assert_eq!(r.fired, 0);
    assert!(seen(&p, "late").await.is_none());
    // WHEN the deadline has passed
    let r = tick(
        kv.as_ref(),
        q.as_ref(),
        &*p.rt.services.backends.objects,
        at(t0 + 3_601_000),
    )
    .await
    .unwrap();
    assert_eq!(r.fired, 1);
    p.drain().await;
    // THEN the overdue script ran once and saw the pending members and the state
    let late = seen(&p, "late").await.expect("on_overdue ran");
    assert_eq!(
        late,
        json!({ "overdue": true, "pending": 2, "complete": false, "names": ["b", "c"],
                "total": 3, "ok": 1, "state": { "ref": 7 } })
    );
    // AND its failing acks completed the barrier: one continuation, two failed
    let fin = seen(&p, "final").await.expect("the continuation ran");
    assert_eq!(fin["runs"], 1);
    assert_eq!(fin["failed"], 2);
    // AND later ticks send nothing more: the one timer left, the continuation's dispatch
    // guard, finds it sent
    let r = tick(
        kv.as_ref(),
        q.as_ref(),
        &*p.rt.services.backends.objects,
        at(t0 + 7_200_000),
    )
    .await
    .unwrap();
    assert_eq!((r.fired, r.void), (0, 1), "{r:?}");
}

async fn a_barrier_complete_before_its_deadline_sends_no_overdue(backend: Backend) {
    // GIVEN a barrier with a deadline and an overdue script, every member acked in time
    let p = project(backend).await;
    let (kv, q) = (
        p.rt.services.backends.kv.clone(),
        p.rt.services.backends.queue.clone(),
    );
    let t0 = now_ms();
    p.rt.invoke("acme", "create", json!({})).await.unwrap();
    let c = Count::default();
    let timers = Timers {
        kv: kv.as_ref(),
        tenant: "acme",
        budget: &c,
    };
    let overdue = |list: &[native_core::timer::Info]| {
        list.iter()
            .filter(|t| t.watching("barrier") == Some("b1"))
            .count()
    };
    let listed = timers.list(None, 10).await.unwrap().0;
    assert_eq!(overdue(&listed), 1, "{listed:?}");
    // (its row, as a timer that a tick holds or whose cancel was lost would stay)
    let row = kv
        .query("t#acme", "", None, 5)
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|it| it.value.contains("\"barrier\""))
        .unwrap();
    for m in ["a", "b", "c"] {
        p.rt.invoke("acme", "create", json!({ "ack": m }))
            .await
            .unwrap();
    }
    p.drain().await;
    // THEN its overdue timer is gone with its completion (`native timers`, the console's
    // Timers page): only the continuation's dispatch guard is left, until it lapses
    let listed = timers.list(None, 10).await.unwrap().0;
    assert_eq!(overdue(&listed), 0, "{listed:?}");
    assert_eq!(listed.len(), 1, "{listed:?}");
    // WHEN the overdue timer fires all the same (at least once: it stayed) after the deadline
    kv.put(
        native_core::ports::NewItem {
            pk: row.pk,
            sk: row.sk,
            value: row.value,
            expires_at_s: row.expires_at_s,
        },
        native_core::ports::PutMode::Create,
    )
    .await
    .unwrap();
    let r = tick(
        kv.as_ref(),
        q.as_ref(),
        &*p.rt.services.backends.objects,
        at(t0 + 3_601_000),
    )
    .await
    .unwrap();
    // THEN the timer is void, as is the continuation's dispatch guard (it was sent): nothing
    // sent, nothing left
    assert_eq!((r.fired, r.void), (0, 2), "{r:?}");
    assert!(sent(q.as_ref()).await.is_empty());
    assert!(kv
        .query("t#acme", "", None, 5)
        .await
        .unwrap()
        .items
        .is_empty());
}

async fn add_is_idempotent_per_member_and_refused_once_complete(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let (kv, q) = (t.backends.kv.as_ref(), t.backends.queue.as_ref());
    let c = Count::default();
    let b = barriers(kv, q, &c);
    // GIVEN a barrier of a and b, with a acked
    b.create(spec("b1", &["a", "b"])).await.unwrap();
    b.ack("b1", "a", ok()).await.unwrap();
    // WHEN a (resolved), b (pending) and c, d (new) are added, twice
    let members: Vec<String> = ["a", "b", "c", "d"].iter().map(|s| s.to_string()).collect();
    assert_eq!(b.add("b1", &members).await.unwrap(), 2);
    assert_eq!(b.add("b1", &members).await.unwrap(), 0);
    // THEN only c and d are new: 4 in all, 3 pending
    let st = b.status("b1", None, 10).await.unwrap().unwrap();
    assert_eq!((st.total, st.pending, st.resolved), (4, 3, 1));
    assert_eq!(st.pending_members, ["b", "c", "d"]);
    // AND the barrier completes only when they are acked too, once
    for m in ["b", "c"] {
        assert!(!b.ack("b1", m, ok()).await.unwrap().complete);
    }
    assert!(sent(q).await.is_empty());
    assert!(b.ack("b1", "d", ok()).await.unwrap().dispatched);
    let (meta, failed) = b.hydrate("b1").await.unwrap().unwrap();
    assert_eq!((meta.members, failed), (4, 0));
    // AND once complete, add is refused and changes nothing
    let err = b
        .add("b1", &["e".to_string()])
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("is complete"), "{err}");
    assert_eq!(sent(q).await.len(), 1);
    assert_eq!(b.status("b1", None, 10).await.unwrap().unwrap().total, 4);
}

async fn cancel_resolves_pending_members_and_the_continuation_sees_it(backend: Backend) {
    // GIVEN a barrier of a and b, with a added c, and a acked
    let p = project(backend).await;
    p.rt.invoke("acme", "change", json!({})).await.unwrap();
    assert_eq!(
        p.rt.invoke("acme", "change", json!({ "add": ["c"] }))
            .await
            .unwrap(),
        json!(1)
    );
    let c = Count::default();
    let kv = p.rt.services.backends.kv.clone();
    let q = p.rt.services.backends.queue.clone();
    barriers(kv.as_ref(), q.as_ref(), &c)
        .ack("b1", "a", ok())
        .await
        .unwrap();
    // WHEN it is cancelled (twice)
    let n =
        p.rt.invoke("acme", "change", json!({ "cancel": "partner gone" }))
            .await
            .unwrap();
    let again =
        p.rt.invoke("acme", "change", json!({ "cancel": "other" }))
            .await
            .unwrap();
    p.drain().await;
    // THEN the pending two were resolved as failed by the first, none by the second
    assert_eq!((n, again), (json!(2), json!(0)));
    // AND the continuation ran once and saw the first reason
    let fin = seen(&p, "final").await.expect("the continuation ran");
    assert_eq!(
        fin,
        json!({ "runs": 1, "failed": 2, "total": 3, "cancelled": "partner gone" })
    );
    // AND members cannot be added to a cancelled barrier
    let err =
        p.rt.invoke("acme", "change", json!({ "add": ["z"] }))
            .await
            .unwrap_err()
            .to_string();
    assert!(
        err.contains("is complete") || err.contains("cancelled"),
        "{err}"
    );
}

/// Seeded interleavings of the final ack racing an add, and racing a cancel: whatever the
/// order of their store calls, exactly one continuation is sent, and only once nothing is
/// pending.
#[test]
fn seeded_interleavings_of_add_and_cancel_racing_the_final_ack_continue_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for seed in 0..200u64 {
        let local = tokio::task::LocalSet::new();
        local.block_on(&rt, async move {
            let t = TestBackends::new(Backend::Embedded).await;
            let j = Faulty {
                kv: t.backends.kv.clone(),
                queue: t.backends.queue.clone(),
                plan: Arc::new(Plan::jittering(seed)),
            };
            let c = Count::default();
            let b = barriers(&j, &j, &c);
            b.create(spec("add", &["a", "b"])).await.unwrap();
            b.create(spec("cancel", &["a", "b"])).await.unwrap();
            b.ack("add", "a", ok()).await.unwrap();
            b.ack("cancel", "a", ok()).await.unwrap();
            let mut tasks = Vec::new();
            for what in ["ack add", "add", "ack cancel", "cancel"] {
                let j = j.clone();
                tasks.push(tokio::task::spawn_local(async move {
                    let c = Count::default();
                    let b = barriers(&j, &j, &c);
                    for _ in 0..1000 {
                        let r = match what {
                            "ack add" => b.ack("add", "b", ok()).await.map(|_| true),
                            "add" => match b.add("add", &["c".to_string()]).await {
                                Err(e) if e.to_string().contains("is complete") => Ok(false),
                                r => r.map(|n| n == 1),
                            },
                            "ack cancel" => b.ack("cancel", "b", ok()).await.map(|_| true),
                            _ => b.cancel("cancel", "stop").await.map(|_| true),
                        };
                        match r {
                            Ok(added) => return added,
                            Err(e) if e.to_string().contains("being dispatched") => {
                                tokio::task::yield_now().await
                            }
                            Err(e) => panic!("seed {seed}: {what}: {e}"),
                        }
                    }
                    panic!("seed {seed}: {what} never got through");
                }));
            }
            let mut results = Vec::new();
            for task in tasks {
                results.push(task.await.unwrap());
            }
            let added = results[1];
            let mut got: Vec<String> = sent(&*t.backends.queue)
                .await
                .into_iter()
                .map(|(_, ev)| ev["barrier"].as_str().unwrap().to_string())
                .collect();
            got.sort();
            if added {
                // c was added before the last ack's query: nothing sent for it yet
                assert_eq!(got, ["cancel"], "seed {seed}");
                let st = b.status("add", None, 5).await.unwrap().unwrap();
                assert_eq!((st.pending, st.total), (1, 3), "seed {seed}");
                assert!(b.ack("add", "c", ok()).await.unwrap().dispatched);
                got.push("add".into());
                got.sort();
            }
            assert_eq!(got, ["add", "cancel"], "seed {seed}: one continuation each");
            assert!(sent(&*t.backends.queue).await.len() == usize::from(added));
        });
    }
}
