//! native.barrier with its members in shards (issue 53): an ack is at most four backend calls
//! and never a query or a transaction, counted per call by a wrapper around the port; a crash
//! at any call of any ack loses nothing; the first ack wins with outcomes in and out of their
//! slots; members added to and cancelled on a barrier of many shards; and a barrier of member
//! rows, written before shards, stays ackable.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use native_core::barrier::{Barriers, CreateSpec, Outcome};
use native_core::ports::{
    Item, ItemPage, KvStore, NewItem, PutMode, TallyAnswer, TallyOp, TxOp, TxPlan,
};
use native_core::Result;
use native_tests::barriers::{barriers, continuations, ok, spec, Count};
use native_tests::faults::{Fault, Faulty, Plan};
use native_tests::{Backend, TestBackends};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    an_ack_is_at_most_four_calls_and_never_a_query,
    a_crash_at_any_call_of_any_ack_loses_nothing,
    a_shard_whose_emptying_ack_died_for_good_does_not_hold_the_barrier,
    the_first_ack_wins_in_and_out_of_its_slot,
    add_and_cancel_across_shards,
    long_names_make_more_shards_than_some_get_members_and_the_barrier_still_completes,
    a_barrier_of_member_rows_from_before_shards_stays_ackable,
);

/// The key-value port with every call counted by kind (`tally:fill`, `query`, ...).
#[derive(Debug)]
struct Counting {
    kv: Arc<dyn KvStore>,
    calls: Mutex<BTreeMap<String, u32>>,
}

impl Counting {
    fn new(kv: Arc<dyn KvStore>) -> Self {
        Counting {
            kv,
            calls: Mutex::default(),
        }
    }
    fn note(&self, what: &str) {
        *self.calls.lock().unwrap().entry(what.into()).or_default() += 1;
    }
    /// The calls since the last take.
    fn take(&self) -> BTreeMap<String, u32> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

#[async_trait]
impl KvStore for Counting {
    async fn get(&self, pk: &str, sk: &str) -> Result<Option<Item>> {
        self.note("get");
        self.kv.get(pk, sk).await
    }
    async fn put_as(&self, item: NewItem, mode: PutMode, token: &str) -> Result<String> {
        self.note("put");
        self.kv.put_as(item, mode, token).await
    }
    async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool> {
        self.note("delete");
        self.kv.delete(pk, sk, if_version).await
    }
    async fn query(
        &self,
        pk: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        self.note("query");
        self.kv.query(pk, prefix, after, limit).await
    }
    async fn query_back(
        &self,
        pk: &str,
        prefix: &str,
        before: Option<&str>,
        limit: usize,
    ) -> Result<ItemPage> {
        self.note("query");
        self.kv.query_back(pk, prefix, before, limit).await
    }
    async fn put_batch(&self, items: Vec<NewItem>) -> Result<()> {
        self.note("put_batch");
        self.kv.put_batch(items).await
    }
    async fn transact_as(
        &self,
        ops: Vec<TxOp>,
        token: &str,
    ) -> Result<std::result::Result<(), usize>> {
        self.note("transact");
        self.kv.transact_as(ops, token).await
    }
    async fn transact_on(
        &self,
        seen: Item,
        plan: TxPlan,
    ) -> Result<std::result::Result<(), usize>> {
        self.note("transact");
        self.kv.transact_on(seen, plan).await
    }
    async fn tally(&self, op: TallyOp) -> Result<TallyAnswer> {
        self.note(match &op {
            TallyOp::Create(_) => "tally:create",
            TallyOp::Get { .. } => "tally:get",
            TallyOp::Fill { .. } => "tally:fill",
            TallyOp::Open { .. } => "tally:open",
            TallyOp::Close { .. } => "tally:close",
        });
        self.kv.tally(op).await
    }
}

/// The ports of `t` behind a fault plan.
fn faulty(t: &TestBackends) -> (Arc<Plan>, Faulty) {
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: t.backends.kv.clone(),
        queue: t.backends.queue.clone(),
        plan: plan.clone(),
    };
    (plan, f)
}

fn failed(why: &str) -> Outcome {
    Outcome {
        ok: false,
        error: Some(why.into()),
        result: None,
    }
}

async fn an_ack_is_at_most_four_calls_and_never_a_query(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let kv = Counting::new(t.backends.kv.clone());
    let q = t.backends.queue.as_ref();
    let c = Count::default();
    let b = barriers(&kv, q, &c);
    // GIVEN a barrier of 1 000 members
    b.create(spec("big", 1000)).await.unwrap();
    let created = kv.take();
    let shards = native_core::barrier::shard_count(1000, 1000 * 10);
    assert_eq!(shards, 36);
    // THEN its create wrote 37 tallies (36 shards and the root) in two batch writes
    assert_eq!(created.get("tally:create"), Some(&2), "{created:?}");
    assert_eq!(
        created.get("put_batch"),
        None,
        "no row per member: {created:?}"
    );
    // WHEN every member is acked (every seventh as failed)
    let mut most = 0;
    for i in 0..1000 {
        let outcome = if i % 7 == 0 { failed("no") } else { ok() };
        let r = b
            .ack("big", &format!("m{i:05}.xml"), outcome)
            .await
            .unwrap();
        let calls = kv.take();
        let n: u32 = calls.values().sum();
        assert!(!calls.contains_key("query"), "ack {i}: {calls:?}");
        if i < 999 {
            // THEN an ack that does not complete the barrier is at most 4 calls: meta, the
            // fill of its shard, for the ack that empties its shard the root's, and when that
            // leaves one shard open, a look at it
            assert!(!r.complete, "ack {i}");
            assert!(n <= 4, "ack {i}: {calls:?}");
            assert!(!calls.contains_key("transact"), "ack {i}: {calls:?}");
            most = most.max(n);
        } else {
            assert!(r.complete && r.dispatched && !r.duplicate);
            // the completing one: meta, shard, root, the list row, the timer index, the claim
            // with its guard, the send, the mark
            assert_eq!(n, 7, "the completing ack (and the send): {calls:?}");
        }
    }
    assert_eq!(most, 4);
    assert_eq!(continuations(q).await, ["big"]);
    // AND the continuation's view is two calls, with every outcome to iterate
    c.0.set(0);
    let (meta, failed_n) = b.hydrate("big").await.unwrap().unwrap();
    assert_eq!(
        c.0.get(),
        2,
        "hydrate of a complete barrier: meta and the root"
    );
    assert_eq!((meta.members, failed_n), (1000, 143));
    let mut seen = 0;
    let mut fails = 0;
    let mut after: Option<String> = None;
    loop {
        let (rows, next) = b.outcomes("big", false, after.as_deref()).await.unwrap();
        for (_, o) in &rows {
            seen += 1;
            fails += usize::from(o["ok"] == json!(false));
            assert!(o.get("k").is_none() && o.get("at_ms").is_none(), "{o}");
        }
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!((seen, fails), (1000, 143));
    let st = b.status("big", None, 10).await.unwrap().unwrap();
    assert_eq!(
        (st.total, st.pending, st.failed, st.complete),
        (1000, 0, 143, true)
    );
}

async fn a_crash_at_any_call_of_any_ack_loses_nothing(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    let members = 60;
    for fault in [Fault::Fail, Fault::LoseReply] {
        // meta, the shard's fill, the root's fill
        for k in 1..=3 {
            let id = format!("c{fault:?}{k}");
            let (plan, f) = faulty(&t);
            let c = Count::default();
            let b = barriers(&f, &f, &c);
            b.create(spec(&id, members)).await.unwrap();
            let case = format!("{fault:?} at call {k} of every ack");
            for i in 0..members {
                let m = format!("m{i:05}.xml");
                plan.arm(k, fault);
                let first = b.ack(&id, &m, ok()).await;
                plan.disarm();
                // GIVEN the ack failed at call k WHEN it is delivered again THEN it succeeds
                let r = match first {
                    Ok(r) => r,
                    Err(_) => b.ack(&id, &m, ok()).await.unwrap(),
                };
                assert_eq!(r.complete, i == members - 1, "{case}: ack {i}");
                let st = b.status(&id, None, 1).await.unwrap().unwrap();
                assert_eq!(
                    st.pending as usize,
                    members - 1 - i,
                    "{case}: one short or early at ack {i}"
                );
            }
            assert_eq!(continuations(q).await, [id.as_str()], "{case}");
        }
    }
}

async fn a_shard_whose_emptying_ack_died_for_good_does_not_hold_the_barrier(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    let (plan, f) = faulty(&t);
    let c = Count::default();
    let b = barriers(&f, &f, &c);
    b.create(spec("h", 60)).await.unwrap();
    // GIVEN the first ack that empties a shard dies before marking it in the root (its third
    // call), and is never delivered again
    let mut died = None;
    for i in 0..60 {
        let m = format!("m{i:05}.xml");
        if died.is_none() {
            plan.arm(3, Fault::Fail);
        }
        match b.ack("h", &m, ok()).await {
            Ok(r) => assert_eq!(r.complete, i == 59, "ack {i}"),
            Err(_) => died = Some(i),
        }
        plan.disarm();
    }
    // THEN the ack that empties the last other shard looks at it, and completes the barrier
    assert!(died.is_some_and(|i| i < 59), "{died:?}");
    assert_eq!(continuations(q).await, ["h"]);
    let st = b.status("h", None, 1).await.unwrap().unwrap();
    assert!(st.complete && st.dispatched, "{st:?}");
}

async fn the_first_ack_wins_in_and_out_of_its_slot(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    let c = Count::default();
    let b = barriers(t.backends.kv.as_ref(), q, &c);
    b.create(spec("w", 60)).await.unwrap();
    let big = |tag: &str| Outcome {
        ok: true,
        error: None,
        result: Some(json!({ "tag": tag, "pad": "x".repeat(200) })),
    };
    // GIVEN an outcome too large for its slot, acked first
    let r1 = b.ack("w", "m00001.xml", big("first")).await.unwrap();
    // WHEN the member is acked again, large or small
    let r2 = b.ack("w", "m00001.xml", big("second")).await.unwrap();
    let r3 = b.ack("w", "m00001.xml", ok()).await.unwrap();
    // THEN the later ones are duplicates and the first outcome stands
    assert!(!r1.duplicate && r2.duplicate && r3.duplicate);
    // AND the same the other way round: small first, then large
    b.ack("w", "m00002.xml", failed("small")).await.unwrap();
    assert!(
        b.ack("w", "m00002.xml", big("late"))
            .await
            .unwrap()
            .duplicate
    );
    let mut all: BTreeMap<String, Value> = BTreeMap::new();
    let mut after: Option<String> = None;
    loop {
        let (rows, next) = b.outcomes("w", false, after.as_deref()).await.unwrap();
        all.extend(rows);
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    assert_eq!(all["m00001.xml"]["result"]["tag"], json!("first"));
    assert_eq!(all["m00002.xml"], json!({ "ok": false, "error": "small" }));
    assert_eq!(all.len(), 2);
    // AND an unknown member is refused, in any shard
    let e = b.ack("w", "nope", ok()).await.unwrap_err().to_string();
    assert_eq!(e, "unknown member \"nope\" of barrier \"w\"");
    assert!(continuations(q).await.is_empty());
}

async fn long_names_make_more_shards_than_some_get_members_and_the_barrier_still_completes(
    backend: Backend,
) {
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    let c = Count::default();
    let b = barriers(t.backends.kv.as_ref(), q, &c);
    // GIVEN 30 members of 1 000 bytes each: 67 shards, so most get no member
    let members: Vec<String> = (0..30)
        .map(|i| format!("{i:02}{}", "x".repeat(998)))
        .collect();
    assert_eq!(native_core::barrier::shard_count(30, 30_000), 67);
    b.create(CreateSpec {
        members: members.clone(),
        ..spec("long", 1)
    })
    .await
    .unwrap();
    // WHEN every member is acked THEN the barrier completes and sends once
    for (i, m) in members.iter().enumerate() {
        let r = b.ack("long", m, ok()).await.unwrap();
        assert_eq!(r.complete, i == 29, "ack {i}");
    }
    assert_eq!(continuations(q).await, ["long"]);
    let st = b.status("long", None, 10).await.unwrap().unwrap();
    assert_eq!((st.total, st.pending, st.complete), (30, 0, true));
    let (rows, next) = b.outcomes("long", false, None).await.unwrap();
    assert_eq!((rows.len(), next), (30, None));
}

async fn add_and_cancel_across_shards(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let q = t.backends.queue.as_ref();
    let c = Count::default();
    let b = barriers(t.backends.kv.as_ref(), q, &c);
    b.create(spec("a", 60)).await.unwrap();
    // GIVEN members added to a barrier of three shards, one of them there already
    let added = b
        .add("a", &["m00001.xml".into(), "new1".into(), "new2".into()])
        .await
        .unwrap();
    assert_eq!(added, 2);
    assert_eq!(b.add("a", &["new1".into()]).await.unwrap(), 0, "idempotent");
    let st = b.status("a", None, 1000).await.unwrap().unwrap();
    assert_eq!((st.total, st.pending), (62, 62));
    assert!(st.pending_members.contains(&"new2".to_string()));
    // WHEN every member created is acked THEN the added ones hold the barrier open
    for i in 0..60 {
        let r = b.ack("a", &format!("m{i:05}.xml"), ok()).await.unwrap();
        assert!(!r.complete);
    }
    b.ack("a", "new1", ok()).await.unwrap();
    let r = b.ack("a", "new2", failed("late")).await.unwrap();
    assert!(r.complete && r.dispatched);
    assert_eq!(continuations(q).await, ["a"]);
    let e = b.add("a", &["new3".into()]).await.unwrap_err().to_string();
    assert!(e.contains("is complete"), "{e}");
    let (meta, failed_n) = b.hydrate("a").await.unwrap().unwrap();
    assert_eq!((meta.members, failed_n), (62, 1));

    // GIVEN another barrier of three shards, cancelled with members pending
    b.create(spec("x", 60)).await.unwrap();
    b.ack("x", "m00005.xml", ok()).await.unwrap();
    let n = b.cancel("x", "stop").await.unwrap();
    // THEN every pending member is resolved as failed, and the continuation sent once
    assert_eq!(n, 59);
    assert_eq!(continuations(q).await, ["x"]);
    let st = b.status("x", None, 10).await.unwrap().unwrap();
    assert_eq!((st.pending, st.failed, st.complete), (0, 59, true));
    // AND nothing can be added after
    let e = b.add("x", &["late".into()]).await.unwrap_err().to_string();
    assert!(
        e.contains("is cancelled") || e.contains("is complete"),
        "{e}"
    );
}

async fn a_barrier_of_member_rows_from_before_shards_stays_ackable(backend: Backend) {
    let t = TestBackends::new(backend).await;
    let kv = t.backends.kv.as_ref();
    let q = t.backends.queue.as_ref();
    // GIVEN a barrier written by the layout before shards (in flight during an upgrade): meta
    // without a shard count, and a pending row per member
    let far = native_core::ports::now_ms() / 1000 + 7 * 24 * 3600;
    let pk = "b#acme#old";
    let row = |sk: &str, value: String| NewItem {
        pk: pk.into(),
        sk: sk.into(),
        value,
        expires_at_s: far,
    };
    let meta = json!({
        "members": 2, "continue_with": "finalize", "state": {}, "deadline_s": null,
        "created_ms": native_core::ports::now_ms(), "expires_at_s": far, "generation": "g0"
    });
    kv.put(
        row("c", json!({ "hash": "h" }).to_string()),
        PutMode::Overwrite,
    )
    .await
    .unwrap();
    for m in ["a", "b"] {
        kv.put(row(&format!("p#g0#{m}"), "1".into()), PutMode::Overwrite)
            .await
            .unwrap();
    }
    kv.put(row("meta", meta.to_string()), PutMode::Overwrite)
        .await
        .unwrap();
    let c = Count::default();
    let b = barriers(kv, q, &c);
    // WHEN its members are acked THEN it behaves as it did: duplicates, unknown members,
    // status, one continuation
    assert!(!b.ack("old", "a", ok()).await.unwrap().complete);
    assert!(b.ack("old", "a", ok()).await.unwrap().duplicate);
    assert!(b.ack("old", "zz", ok()).await.is_err());
    let st = b.status("old", None, 10).await.unwrap().unwrap();
    assert_eq!(
        (st.pending, st.pending_members.clone()),
        (1, vec!["b".to_string()])
    );
    let r = b.ack("old", "b", failed("no")).await.unwrap();
    assert!(r.complete && r.dispatched);
    assert_eq!(continuations(q).await, ["old"]);
    assert_eq!(b.hydrate("old").await.unwrap().unwrap().1, 1);
    let _ = Barriers::create_calls(1);
}
