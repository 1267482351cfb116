//! Dead letters moved back to their queue (`Queue::redrive`, `native dlq redrive`), and the
//! barrier whose final ack ran out of data ops: it claims nothing, so the redriven ack
//! dispatches at once, with no member acked again by hand. On both backends. (A dispatch lost
//! after its claim is sent by the tick: tests/barrier_dispatch.rs.)

use native_core::ports::QueueKind;
use native_tests::{Backend, TestProject};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    a_final_ack_out_of_data_ops_claims_nothing_and_completes_on_redrive,
    redrive_moves_one_tenants_dead_letters_back,
);

/// The tenant's `max_data_ops`, and what the ack burns when `burn` is set: the ack's own calls
/// (meta, transaction, pending query) leave one, fewer than the dispatch needs (claim, guard,
/// send, mark), so the ack fails before it claims.
const MAX_OPS: u32 = 20;

/// `ack` acks a member; while the key-value item `t/burn` holds a number, it first spends that
/// many backend calls (a cause that an operator fixes by deleting it). `fin` is the
/// continuation: it records that it ran, and `done` tells.
fn scripts() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "create",
            "function on_invoke(ctx, ev)
               native.db.put('t', 'burn', ev.burn)
               return native.barrier.create({ id = 'b1', members = { 'a' }, continue_with = 'fin' })
             end",
        ),
        (
            "ack",
            "function on_queue(ctx, ev)
               local burn = native.db.get('t', 'burn') or 0
               for i = 1, burn do native.db.get('t', 'x') end
               native.barrier.ack(ev.id, ev.member, { ok = true })
             end",
        ),
        (
            "fix",
            "function on_invoke() native.db.delete('t', 'burn') end",
        ),
        (
            "fin",
            "function on_queue(ctx, ev)
               local b = native.barrier.hydrate(ev)
               native.db.put('t', 'done', { id = b.id, ok = b.ok })
             end",
        ),
        (
            "done",
            "function on_invoke() return native.db.get('t', 'done') end",
        ),
        ("bad", "function on_queue() error('always') end"),
    ]
}

async fn project(backend: Backend) -> TestProject {
    let scripts = scripts();
    let config = format!(r#"{{ "queue": true, "limits": {{ "max_data_ops": {MAX_OPS} }} }}"#);
    TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[("acme", &config, &scripts), ("other", &config, &scripts)],
    )
    .await
}

async fn status(p: &TestProject) -> Value {
    let kv = p.rt.services.backends.kv.clone();
    let q = p.rt.services.backends.queue.clone();
    let budget = Unlimited;
    let b = native_core::barrier::Barriers {
        kv: kv.as_ref(),
        queue: q.as_ref(),
        tenant: "acme",
        queue_enabled: true,
        budget: &budget,
    };
    let s = b.status("b1", None, 10).await.unwrap().unwrap();
    json!({ "complete": s.complete, "dispatched": s.dispatched })
}

struct Unlimited;

impl native_core::budget::Budget for Unlimited {
    fn spend(&self, _: u32) -> native_core::Result<()> {
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

async fn send(p: &TestProject, tenant: &str, script: &str, event: Value) {
    let body = serde_json::to_string(&native_core::ports::WorkMessage {
        tenant: tenant.into(),
        script: script.into(),
        event,
        depth: 0,
        width: None,
        chain: None,
        once: None,
        slot: None,
    })
    .unwrap();
    p.rt.services
        .backends
        .queue
        .send(QueueKind::Work, body, 0)
        .await
        .unwrap();
}

async fn dead(p: &TestProject) -> usize {
    p.rt.services
        .backends
        .queue
        .dead_letters(QueueKind::Work, 100)
        .await
        .unwrap()
        .len()
}

async fn a_final_ack_out_of_data_ops_claims_nothing_and_completes_on_redrive(backend: Backend) {
    // GIVEN a barrier whose last ack runs out of data ops before its dispatch, on every
    // attempt
    let p = project(backend).await;
    p.invoke("acme", "create", json!({ "burn": MAX_OPS - 5 }))
        .await
        .unwrap();
    send(&p, "acme", "ack", json!({ "id": "b1", "member": "a" })).await;
    let r = p.drain().await;
    assert_eq!(r.failures.len(), 5, "{:?}", r.failures);
    assert!(
        r.failures[0].error.contains("limit max_data_ops exceeded"),
        "{}",
        r.failures[0].error
    );
    // THEN the ack is a dead letter and the barrier is complete but not dispatched
    assert_eq!(dead(&p).await, 1);
    assert_eq!(
        status(&p).await,
        json!({ "complete": true, "dispatched": false })
    );
    assert_eq!(
        p.invoke("acme", "done", json!({})).await.unwrap(),
        Value::Null
    );
    // AND it claimed nothing: no claim must lapse before a retry can dispatch
    let kv = p.rt.services.backends.kv.clone();
    assert!(kv.get("b#acme#b1", "d").await.unwrap().is_none());

    // WHEN the cause is fixed and the ack redriven
    p.invoke("acme", "fix", json!({})).await.unwrap();
    let q = p.rt.services.backends.queue.clone();
    assert_eq!(
        q.redrive(QueueKind::Work, &|_: &str| true, 100)
            .await
            .unwrap(),
        1
    );
    let r = p.drain().await;
    // THEN the continuation is dispatched and runs, without a member acked again by hand
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    assert_eq!(
        status(&p).await,
        json!({ "complete": true, "dispatched": true })
    );
    assert_eq!(
        p.invoke("acme", "done", json!({})).await.unwrap(),
        json!({ "id": "b1", "ok": 1 })
    );
    assert_eq!(dead(&p).await, 0);
}

async fn redrive_moves_one_tenants_dead_letters_back(backend: Backend) {
    // GIVEN dead letters of two tenants
    let p = project(backend).await;
    send(&p, "acme", "bad", json!({ "n": 1 })).await;
    send(&p, "other", "bad", json!({ "n": 2 })).await;
    p.drain().await;
    assert_eq!(dead(&p).await, 2);
    // WHEN one tenant's are redriven (by the body's tenant, as `native dlq redrive acme` does)
    let q = p.rt.services.backends.queue.clone();
    let acme = |body: &str| body.contains(r#""tenant":"acme""#);
    assert_eq!(q.redrive(QueueKind::Work, &acme, 100).await.unwrap(), 1);
    // THEN only it runs again, five more attempts, and the other tenant's stays put
    let r = p.drain().await;
    assert_eq!(r.failures.len(), 5, "{:?}", r.failures);
    assert!(r
        .failures
        .iter()
        .all(|f| f.error.contains("bad.luau:1: always")));
    assert_eq!(dead(&p).await, 2);
}
