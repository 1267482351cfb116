//! The conformance suite: what every backend must do, as plain async functions over the ports.
//! The embedded backend runs them in its unit tests, the AWS backend against the emulator, so
//! the two cannot drift apart. Each function panics with a message saying what differed.
//!
//! Every function works inside a fresh `scope` (a random prefix) so that runs can share a table
//! or bucket.

use bytes::Bytes;

use crate::ports::{
    Item, KvStore, NewItem, ObjectStore, PutMode, Queue, QueueKind, TxOp, MAX_RECEIVES,
};
use crate::Error;

/// A fresh scope for one run of the suite.
pub fn scope() -> String {
    format!("t{:08x}", rand::random::<u32>())
}

/// Put, get, head, overwrite, conditional puts, delete, list with paging.
pub async fn objects_put_get_delete_list(store: &dyn ObjectStore, bucket: &str) {
    let s = scope();
    let k = |n: &str| format!("{s}/{n}");
    assert!(
        store.get(bucket, &k("none")).await.unwrap().is_none(),
        "missing object is None"
    );
    assert!(store.head(bucket, &k("none")).await.unwrap().is_none());

    let m1 = store
        .put(
            bucket,
            &k("a.json"),
            Bytes::from_static(b"one"),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    assert_eq!(m1.size, 3);
    let (meta, data) = store
        .get(bucket, &k("a.json"))
        .await
        .unwrap()
        .expect("object after put");
    assert_eq!(&data[..], b"one");
    assert_eq!(meta.etag, m1.etag, "get returns the etag of the put");
    assert_eq!(
        store
            .head(bucket, &k("a.json"))
            .await
            .unwrap()
            .unwrap()
            .size,
        3
    );

    let err = store
        .put(
            bucket,
            &k("a.json"),
            Bytes::from_static(b"x"),
            PutMode::Create,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::AlreadyExists { .. }),
        "create over an object: {err:?}"
    );
    let m2 = store
        .put(
            bucket,
            &k("a.json"),
            Bytes::from_static(b"two!"),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    assert_ne!(m1.etag, m2.etag, "etag changes with content");
    store
        .put(
            bucket,
            &k("new.json"),
            Bytes::from_static(b"n"),
            PutMode::Create,
        )
        .await
        .unwrap();

    // Keys with spaces and non-ASCII survive.
    store
        .put(
            bucket,
            &k("dir/sp ace ü.txt"),
            Bytes::from_static(b""),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .get(bucket, &k("dir/sp ace ü.txt"))
            .await
            .unwrap()
            .unwrap()
            .1
            .len(),
        0
    );

    for i in 0..5 {
        store
            .put(
                bucket,
                &k(&format!("p/{i}")),
                Bytes::from(vec![b'x'; i]),
                PutMode::Overwrite,
            )
            .await
            .unwrap();
    }
    let mut seen = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store
            .list(bucket, &k("p/"), after.as_deref(), 2)
            .await
            .unwrap();
        assert!(page.objects.len() <= 2, "page larger than the limit");
        seen.extend(page.objects.iter().map(|o| (o.key.clone(), o.size)));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let want: Vec<_> = (0..5).map(|i| (k(&format!("p/{i}")), i as u64)).collect();
    assert_eq!(seen, want, "paged listing returns every key once, in order");
    let all = store
        .list(bucket, &format!("{s}/"), None, 1000)
        .await
        .unwrap();
    assert_eq!(all.objects.len(), 8);
    assert!(all.next.is_none());

    store.delete(bucket, &k("a.json")).await.unwrap();
    assert!(
        store.get(bucket, &k("a.json")).await.unwrap().is_none(),
        "deleted object is gone"
    );
    store.delete(bucket, &k("a.json")).await.unwrap();

    // The chain depth and trace written with an object are read back; a plain put is depth 0
    // of no chain.
    let d = k("depth.json");
    let m = store
        .put_in_chain(
            bucket,
            &d,
            Bytes::from_static(b"{}"),
            PutMode::Overwrite,
            7,
            Some("0123abcd"),
        )
        .await
        .unwrap();
    assert_eq!(m.depth, 7, "put_in_chain returns the depth");
    assert_eq!(m.trace.as_deref(), Some("0123abcd"), "and the trace");
    let head = store.head(bucket, &d).await.unwrap().unwrap();
    assert_eq!(head.depth, 7, "head reads the depth");
    assert_eq!(
        head.trace.as_deref(),
        Some("0123abcd"),
        "head reads the trace"
    );
    let got = store.get(bucket, &d).await.unwrap().unwrap().0;
    assert_eq!(got.depth, 7, "get reads the depth");
    assert_eq!(
        got.trace.as_deref(),
        Some("0123abcd"),
        "get reads the trace"
    );
    store
        .put(bucket, &d, Bytes::from_static(b"{}"), PutMode::Overwrite)
        .await
        .unwrap();
    assert_eq!(
        store.head(bucket, &d).await.unwrap().unwrap().depth,
        0,
        "a plain put is depth 0"
    );
    assert_eq!(
        store.head(bucket, &d).await.unwrap().unwrap().trace,
        None,
        "a plain put is of no chain"
    );
    store.delete(bucket, &d).await.unwrap();
}

/// Get, put modes, versions, delete with a condition, expiry, queries with prefix and cursor,
/// batch writes.
pub async fn kv_conditional_writes_expiry_query(kv: &dyn KvStore) {
    let pk = scope();
    let far = crate::ports::now_ms() / 1000 + 3600;
    let item = |sk: &str, v: &str, exp: i64| NewItem {
        pk: pk.clone(),
        sk: sk.into(),
        value: v.into(),
        expires_at_s: exp,
    };
    assert!(kv.get(&pk, "a").await.unwrap().is_none());

    let v1 = kv.put(item("a", "1", far), PutMode::Create).await.unwrap();
    let err = kv
        .put(item("a", "2", far), PutMode::Create)
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::AlreadyExists { .. }),
        "second create: {err:?}"
    );
    let got = kv.get(&pk, "a").await.unwrap().unwrap();
    assert_eq!(
        (got.value.as_str(), got.version.as_str()),
        ("1", v1.as_str())
    );

    let v2 = kv
        .put(item("a", "2", far), PutMode::Update(v1.clone()))
        .await
        .unwrap();
    assert_ne!(v1, v2);
    let err = kv
        .put(item("a", "3", far), PutMode::Update(v1.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Precondition { .. }),
        "stale update: {err:?}"
    );
    let err = kv
        .put(item("zz", "3", far), PutMode::Update(v1.clone()))
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Precondition { .. }),
        "update of nothing: {err:?}"
    );

    let err = kv.delete(&pk, "a", Some(&v1)).await.unwrap_err();
    assert!(
        matches!(err, Error::Precondition { .. }),
        "stale delete: {err:?}"
    );
    assert!(kv.delete(&pk, "a", Some(&v2)).await.unwrap());
    assert!(
        !kv.delete(&pk, "a", None).await.unwrap(),
        "second delete finds nothing"
    );

    // Expired items are absent for reads, queries and create, whether or not the backend has
    // removed them yet.
    kv.put(item("old", "x", 1000), PutMode::Overwrite)
        .await
        .unwrap();
    assert!(
        kv.get(&pk, "old").await.unwrap().is_none(),
        "expired item is not read"
    );
    kv.put(item("old", "y", far), PutMode::Create)
        .await
        .unwrap();

    let batch: Vec<_> = (0..25)
        .map(|i| item(&format!("q/{i:02}"), &i.to_string(), far))
        .collect();
    kv.put_batch(batch).await.unwrap();
    kv.put(item("q/99", "gone", 1000), PutMode::Overwrite)
        .await
        .unwrap();
    kv.put(item("r/0", "other", far), PutMode::Overwrite)
        .await
        .unwrap();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = kv.query(&pk, "q/", after.as_deref(), 10).await.unwrap();
        assert!(page.items.len() <= 10);
        seen.extend(page.items.into_iter().map(|i| i.sk));
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let want: Vec<_> = (0..25).map(|i| format!("q/{i:02}")).collect();
    assert_eq!(
        seen, want,
        "query pages through the prefix in order, without expired items"
    );
}

/// Deletes what earlier runs left in `queue`, so that the counts a test makes are its own.
async fn empty_queue(q: &dyn Queue, queue: QueueKind) {
    loop {
        let msgs = q.receive(queue, 10, 0).await.unwrap();
        if msgs.is_empty() {
            break;
        }
        for m in msgs {
            q.delete(queue, &m.receipt).await.unwrap();
        }
    }
}

/// Deletes of received messages together: each answered alone, a bad receipt failing only
/// itself, and every deleted message gone.
pub async fn queue_delete_many(q: &dyn Queue, queue: QueueKind) {
    empty_queue(q, queue).await;
    for i in 0..12 {
        q.send(queue, format!("{{\"many\":{i}}}"), 0).await.unwrap();
    }
    let mut got = Vec::new();
    for _ in 0..20 {
        got.extend(q.receive(queue, 10, 30).await.unwrap());
        if got.len() == 12 {
            break;
        }
    }
    assert_eq!(got.len(), 12, "every message sent is received");
    // Twelve receipts: more than one SQS batch of ten, with a malformed one among them.
    let mut receipts: Vec<String> = got.iter().map(|m| m.receipt.clone()).collect();
    receipts.insert(3, "not-a-receipt".into());
    let each = q.delete_many(queue, &receipts).await;
    assert_eq!(each.len(), receipts.len(), "one answer per receipt");
    for (i, r) in each.iter().enumerate() {
        if i == 3 {
            assert!(r.is_err(), "the malformed receipt fails: {r:?}");
        } else {
            assert!(r.is_ok(), "receipt {i} is deleted: {r:?}");
        }
    }
    let stats = q.stats(queue).await.unwrap();
    assert_eq!(
        (stats.visible, stats.received),
        (0, 0),
        "every deleted message is gone"
    );
    assert!(q.delete_many(queue, &[]).await.is_empty());
}

/// Send, receive, visibility, retry with delay, receive counts and dead letters.
pub async fn queue_delivery_and_dead_letters(q: &dyn Queue, queue: QueueKind) {
    // Drain what earlier runs left, so counts below are ours.
    empty_queue(q, queue).await;
    let body = format!("{{\"n\":\"{}\"}}", scope());
    q.send(queue, body.clone(), 0).await.unwrap();
    q.send(queue, "later".into(), 2).await.unwrap();
    let got = q.receive(queue, 10, 30).await.unwrap();
    assert_eq!(
        got.len(),
        1,
        "only the undelayed message is visible: {got:?}"
    );
    assert_eq!(got[0].body, body);
    assert_eq!(got[0].receive_count, 1);
    assert!(
        q.receive(queue, 10, 30).await.unwrap().is_empty(),
        "received message is hidden"
    );
    q.delete(queue, &got[0].receipt).await.unwrap();

    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let later = q.receive(queue, 10, 30).await.unwrap();
    assert_eq!(later.len(), 1, "delayed message shows after its delay");
    assert_eq!(later[0].body, "later");

    // Fail it until it is dead-lettered.
    let mut receipt = later[0].receipt.clone();
    let mut count = 1;
    while count < MAX_RECEIVES {
        q.retry_later(queue, &receipt, 0, "boom").await.unwrap();
        let again = q.receive(queue, 10, 30).await.unwrap();
        assert_eq!(again.len(), 1, "failed message comes back");
        count += 1;
        assert_eq!(again[0].receive_count, count, "receive count grows");
        receipt = again[0].receipt.clone();
    }
    q.retry_later(queue, &receipt, 0, "boom").await.unwrap();
    let mut gone = true;
    for _ in 0..3 {
        if !q.receive(queue, 10, 30).await.unwrap().is_empty() {
            gone = false;
        }
    }
    assert!(
        gone,
        "a message received {MAX_RECEIVES} times is not delivered again"
    );
    let dead = q.dead_letters(queue, 100).await.unwrap();
    assert!(
        dead.iter().any(|d| d.body == "later"),
        "dead letters hold it: {dead:?}"
    );
}

/// Redrive: dead letters that the filter accepts go back to the queue, visible at once with a
/// fresh receive count; the others stay dead letters.
pub async fn queue_redrive(q: &dyn Queue, queue: QueueKind) {
    let tag = scope();
    let (ours, theirs) = (format!("ours-{tag}"), format!("theirs-{tag}"));
    q.send(queue, ours.clone(), 0).await.unwrap();
    q.send(queue, theirs.clone(), 0).await.unwrap();
    // Fail both until they are dead letters.
    for _ in 0..MAX_RECEIVES {
        let got = q.receive(queue, 10, 30).await.unwrap();
        assert_eq!(got.len(), 2, "both come back: {got:?}");
        for m in got {
            q.retry_later(queue, &m.receipt, 0, "boom").await.unwrap();
        }
    }
    assert!(
        q.receive(queue, 10, 30).await.unwrap().is_empty(),
        "both are dead"
    );
    let dead = q.dead_letters(queue, 100).await.unwrap();
    assert_eq!(dead.len(), 2, "{dead:?}");

    let moved = q
        .redrive(queue, &|body: &str| body.starts_with("ours-"), 100)
        .await
        .unwrap();
    assert_eq!(moved, 1, "only the accepted dead letter moves");
    let back = q.receive(queue, 10, 30).await.unwrap();
    assert_eq!(back.len(), 1, "it is visible at once: {back:?}");
    assert_eq!(back[0].body, ours);
    assert_eq!(back[0].receive_count, 1, "with a fresh receive count");
    q.delete(queue, &back[0].receipt).await.unwrap();
    let dead = q.dead_letters(queue, 100).await.unwrap();
    assert_eq!(
        dead.iter().map(|d| d.body.as_str()).collect::<Vec<_>>(),
        vec![theirs.as_str()],
        "the other stays a dead letter"
    );
    assert_eq!(q.redrive(queue, &|_: &str| false, 100).await.unwrap(), 0);
    assert_eq!(q.redrive(queue, &|_: &str| true, 100).await.unwrap(), 1);
    assert!(q.dead_letters(queue, 100).await.unwrap().is_empty());
}

/// Transactions: all or nothing, the first failing condition reported, expired items absent.
pub async fn kv_transactions(kv: &dyn KvStore) {
    let pk = scope();
    let now = crate::ports::now_ms() / 1000;
    let far = now + 7 * 24 * 3600;
    let item = |sk: &str, v: &str, exp: i64| NewItem {
        pk: pk.clone(),
        sk: sk.into(),
        value: v.into(),
        expires_at_s: exp,
    };
    kv.put(item("meta", "{}", far), PutMode::Overwrite)
        .await
        .unwrap();
    kv.put(item("p#a", "1", far), PutMode::Overwrite)
        .await
        .unwrap();
    kv.put(item("p#b", "1", far), PutMode::Overwrite)
        .await
        .unwrap();
    let ack = |m: &str, live: i64| {
        vec![
            TxOp::Check {
                pk: pk.clone(),
                sk: "meta".into(),
                live_until_s: live,
            },
            TxOp::Put {
                item: item(&format!("o#{m}"), "{\"ok\":true}", far),
                mode: PutMode::Create,
            },
            TxOp::Delete {
                pk: pk.clone(),
                sk: format!("p#{m}"),
            },
        ]
    };
    assert_eq!(
        kv.transact(ack("a", now + 3600)).await.unwrap(),
        Ok(()),
        "first ack applies"
    );
    assert!(
        kv.get(&pk, "o#a").await.unwrap().is_some(),
        "outcome written"
    );
    assert!(
        kv.get(&pk, "p#a").await.unwrap().is_none(),
        "pending deleted in the same call"
    );
    assert_eq!(
        kv.transact(ack("a", now + 3600)).await.unwrap(),
        Err(1),
        "second ack: the create fails"
    );
    assert_eq!(
        kv.transact(ack("zz", now + 3600)).await.unwrap(),
        Err(2),
        "unknown member: the delete fails"
    );
    assert!(
        kv.get(&pk, "o#zz").await.unwrap().is_none(),
        "nothing of a failed transaction is applied"
    );
    assert_eq!(
        kv.transact(ack("b", far + 1)).await.unwrap(),
        Err(0),
        "check of the expiry fails"
    );
    assert!(
        kv.get(&pk, "p#b").await.unwrap().is_some(),
        "nothing applied"
    );
    kv.put(item("old", "x", 1000), PutMode::Overwrite)
        .await
        .unwrap();
    let check_old = vec![TxOp::Check {
        pk: pk.clone(),
        sk: "old".into(),
        live_until_s: 0,
    }];
    assert_eq!(
        kv.transact(check_old).await.unwrap(),
        Err(0),
        "an expired item fails a check"
    );
    let v = kv.get(&pk, "meta").await.unwrap().unwrap().version;
    let upd = vec![TxOp::Put {
        item: item("meta", "{\"n\":1}", far),
        mode: PutMode::Update(v.clone()),
    }];
    assert_eq!(kv.transact(upd.clone()).await.unwrap(), Ok(()));
    assert_eq!(
        kv.transact(upd).await.unwrap(),
        Err(0),
        "a stale version fails"
    );
    let absent = |sk: &str| {
        vec![
            TxOp::Absent {
                pk: pk.clone(),
                sk: sk.into(),
            },
            TxOp::Put {
                item: item("after-absent", "1", far),
                mode: PutMode::Overwrite,
            },
        ]
    };
    assert_eq!(
        kv.transact(absent("meta")).await.unwrap(),
        Err(0),
        "a live item fails an absence check"
    );
    assert!(kv.get(&pk, "after-absent").await.unwrap().is_none());
    assert_eq!(
        kv.transact(absent("old")).await.unwrap(),
        Ok(()),
        "an expired item is absent"
    );
    assert_eq!(kv.transact(absent("never")).await.unwrap(), Ok(()));
    assert!(kv.get(&pk, "after-absent").await.unwrap().is_some());
    let twice = vec![
        TxOp::Absent {
            pk: pk.clone(),
            sk: "twice".into(),
        },
        TxOp::Put {
            item: item("twice", "1", far),
            mode: PutMode::Create,
        },
    ];
    assert!(
        kv.transact(twice).await.is_err(),
        "two operations on one item are refused, as DynamoDB refuses them"
    );
    assert!(kv.get(&pk, "twice").await.unwrap().is_none());

    // transact_on: a plan made of the item, applied as one transaction.
    // One more on the counter the plan is given, on the condition that it is that version.
    let add_one = |pk: String| -> crate::ports::TxPlan {
        Box::new(move |it: Option<Item>| {
            let n: u64 = it.as_ref().map_or(0, |i| i.value.parse().unwrap_or(0));
            Ok(vec![TxOp::Put {
                item: NewItem {
                    pk,
                    sk: "counter".into(),
                    value: (n + 1).to_string(),
                    expires_at_s: far,
                },
                mode: it.map_or(PutMode::Create, |i| PutMode::Update(i.version)),
            }])
        })
    };
    kv.put(item("counter", "0", far), PutMode::Create)
        .await
        .unwrap();
    let seen = kv.get(&pk, "counter").await.unwrap().unwrap();
    assert_eq!(
        kv.transact_on(seen.clone(), add_one(pk.clone()))
            .await
            .unwrap(),
        Ok(())
    );
    assert_eq!(kv.get(&pk, "counter").await.unwrap().unwrap().value, "1");
    // A plan on a version read before that commit: planned again on the item as it is now
    // (one writer), or its condition fails (elsewhere); never a lost update.
    match kv
        .transact_on(seen.clone(), add_one(pk.clone()))
        .await
        .unwrap()
    {
        Ok(()) => assert_eq!(kv.get(&pk, "counter").await.unwrap().unwrap().value, "2"),
        Err(i) => {
            assert_eq!(i, 0);
            assert_eq!(kv.get(&pk, "counter").await.unwrap().unwrap().value, "1");
        }
    }
    // An empty plan writes nothing; a plan's error is the call's.
    let before = kv.get(&pk, "counter").await.unwrap().unwrap();
    assert_eq!(
        kv.transact_on(seen.clone(), Box::new(|_| Ok(Vec::new())))
            .await
            .unwrap(),
        Ok(())
    );
    let failing: crate::ports::TxPlan =
        Box::new(|_| Err(crate::Error::InvalidInput("no plan".into())));
    assert!(kv.transact_on(seen, failing).await.is_err());
    assert_eq!(kv.get(&pk, "counter").await.unwrap().unwrap(), before);
}

/// A write tells its own earlier attempt from another writer's: repeated with its token (an
/// attempt whose answer was lost, sent again), a put or a transaction answers as the first
/// attempt did; with another token, as a conflict. Puts under every mode, and transactions
/// whose puts are conditional, unconditional, or beside checks and deletes (an ack).
pub async fn kv_own_writes(kv: &dyn KvStore) {
    use crate::ports::new_token;
    let pk = scope();
    let far = crate::ports::now_ms() / 1000 + 3600;
    let item = |sk: &str, v: &str| NewItem {
        pk: pk.clone(),
        sk: sk.into(),
        value: v.into(),
        expires_at_s: far,
    };
    // put_if_absent's put: a repeat is its own write, another writer's finds it there.
    let t1 = new_token();
    for attempt in 0..2 {
        let got = kv.put_as(item("a", "1"), PutMode::Create, &t1).await;
        assert_eq!(got.unwrap(), t1, "create, attempt {attempt}");
    }
    let err = kv
        .put_as(item("a", "2"), PutMode::Create, &new_token())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::AlreadyExists { .. }),
        "another writer's create: {err:?}"
    );
    // A compare-and-set: its repeat finds its own version, another's a changed item.
    let t2 = new_token();
    for attempt in 0..2 {
        let got = kv
            .put_as(item("a", "2"), PutMode::Update(t1.clone()), &t2)
            .await;
        assert_eq!(got.unwrap(), t2, "update, attempt {attempt}");
    }
    let err = kv
        .put_as(item("a", "3"), PutMode::Update(t1.clone()), &new_token())
        .await
        .unwrap_err();
    assert!(
        matches!(err, Error::Precondition { .. }),
        "another writer's update: {err:?}"
    );
    assert_eq!(kv.get(&pk, "a").await.unwrap().unwrap().value, "2");

    // A claim of two rows at once.
    let claim = || {
        vec![
            TxOp::Put {
                item: item("claim", "me"),
                mode: PutMode::Create,
            },
            TxOp::Put {
                item: item("list", "me"),
                mode: PutMode::Create,
            },
        ]
    };
    let t3 = new_token();
    assert_eq!(kv.transact_as(claim(), &t3).await.unwrap(), Ok(()));
    assert_eq!(kv.transact_as(claim(), &t3).await.unwrap(), Ok(()));
    assert_eq!(kv.transact_as(claim(), &new_token()).await.unwrap(), Err(0));

    // An ack: a check, a create and a delete; its repeat fails the create and the delete.
    kv.put(item("p#m", "1"), PutMode::Overwrite).await.unwrap();
    let ack = || {
        vec![
            TxOp::Check {
                pk: pk.clone(),
                sk: "a".into(),
                live_until_s: far - 60,
            },
            TxOp::Put {
                item: item("o#m", "ok"),
                mode: PutMode::Create,
            },
            TxOp::Delete {
                pk: pk.clone(),
                sk: "p#m".into(),
            },
        ]
    };
    let t4 = new_token();
    assert_eq!(kv.transact_as(ack(), &t4).await.unwrap(), Ok(()));
    assert_eq!(kv.transact_as(ack(), &t4).await.unwrap(), Ok(()));
    assert_eq!(kv.transact_as(ack(), &new_token()).await.unwrap(), Err(1));

    // A delete beside an unconditional put: only the put can tell.
    kv.put(item("d", "1"), PutMode::Overwrite).await.unwrap();
    let moved = || {
        vec![
            TxOp::Delete {
                pk: pk.clone(),
                sk: "d".into(),
            },
            TxOp::Put {
                item: item("e", "moved"),
                mode: PutMode::Overwrite,
            },
        ]
    };
    let t5 = new_token();
    assert_eq!(kv.transact_as(moved(), &t5).await.unwrap(), Ok(()));
    assert_eq!(kv.transact_as(moved(), &t5).await.unwrap(), Ok(()));
    assert_eq!(kv.transact_as(moved(), &new_token()).await.unwrap(), Err(0));
}

/// Vault: set, get, replace, list (names only, per tenant), delete, and bad names refused.
pub async fn vault_set_get_list_delete(vault: &dyn crate::ports::Vault) {
    use crate::ports::Secret;
    let s = scope();
    let (a, b) = (format!("{s}-a"), format!("{s}-b"));
    assert_eq!(vault.get(&a, "stripe.key").await.unwrap(), None);
    assert!(
        vault.list(&a).await.unwrap().is_empty(),
        "a new tenant has no secrets"
    );
    vault
        .set(&a, "stripe.key", &Secret::new("sk_1".into()))
        .await
        .unwrap();
    vault
        .set(&a, "other_key", &Secret::new("o".into()))
        .await
        .unwrap();
    vault
        .set(&b, "stripe.key", &Secret::new("sk_b".into()))
        .await
        .unwrap();
    assert_eq!(
        vault.get(&a, "stripe.key").await.unwrap().unwrap().expose(),
        "sk_1"
    );
    vault
        .set(
            &a,
            "stripe.key",
            &Secret::new("sk_2 with spaces & ünïcode".into()),
        )
        .await
        .unwrap();
    assert_eq!(
        vault.get(&a, "stripe.key").await.unwrap().unwrap().expose(),
        "sk_2 with spaces & ünïcode",
        "set replaces"
    );
    assert_eq!(
        vault.get(&b, "stripe.key").await.unwrap().unwrap().expose(),
        "sk_b",
        "tenants do not share names"
    );
    assert_eq!(
        vault.list(&a).await.unwrap(),
        vec!["other_key".to_string(), "stripe.key".to_string()]
    );
    vault.delete(&a, "stripe.key").await.unwrap();
    vault.delete(&a, "stripe.key").await.unwrap();
    assert_eq!(vault.get(&a, "stripe.key").await.unwrap(), None);
    assert_eq!(vault.list(&a).await.unwrap(), vec!["other_key".to_string()]);
    for bad in ["../x", "a/b", "", ".hidden"] {
        let e = vault.get(&a, bad).await.unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{bad:?}: {e}");
    }
    let e = vault
        .set(&a, "k", &Secret::new(String::new()))
        .await
        .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    vault.delete(&a, "other_key").await.unwrap();
    vault.delete(&b, "stripe.key").await.unwrap();
}

/// Tallies ([`crate::ports::TallyOp`]): create, fill once (a second fill is `Taken`, an
/// unknown slot or a tally about to expire is `Missed`), counts kept with every write, open
/// while something is open and not closed, close keeping the first reason, expiry.
pub async fn kv_tallies(kv: &dyn KvStore) {
    use crate::ports::{NewTally, Tallies, TallyAnswer, TallyOp};
    let pk = format!("{}#tally", scope());
    let now = crate::ports::now_ms() / 1000;
    let far = now + 3600;
    // Names a map attribute must take as they are: dots, hashes, spaces, non-ASCII.
    let odd = "a.b #c é";
    kv.tally_create(vec![
        NewTally {
            pk: pk.clone(),
            sk: "t".into(),
            slots: vec!["x".into(), odd.into(), "z".into()],
            expires_at_s: far,
        },
        NewTally {
            pk: pk.clone(),
            sk: "old".into(),
            slots: vec!["x".into()],
            expires_at_s: now - 1,
        },
    ])
    .await
    .unwrap();
    let t = kv.tally_get(&pk, "t").await.unwrap().expect("the tally");
    assert_eq!((t.open, t.marked, t.slots.len()), (3, 0, 3));
    assert!(t.slots.values().all(String::is_empty), "{t:?}");
    assert_eq!(kv.tally_get(&pk, "old").await.unwrap(), None, "expired");
    assert_eq!(kv.tally_get(&pk, "none").await.unwrap(), None);
    let fill = |slot: &str, value: &str, mark: bool, live: i64| TallyOp::Fill {
        pk: pk.clone(),
        sk: "t".into(),
        slot: slot.into(),
        value: value.into(),
        mark,
        live_until_s: live,
    };
    match kv.tally(fill(odd, "v1", true, now)).await.unwrap() {
        TallyAnswer::Filled(t) => {
            assert_eq!((t.open, t.marked), (2, 1));
            assert_eq!(t.slots[odd], "v1");
        }
        other => panic!("first fill: {other:?}"),
    }
    // The second fill of a slot writes nothing and says what is there.
    match kv.tally(fill(odd, "v2", false, now)).await.unwrap() {
        TallyAnswer::Taken(t) => assert_eq!((t.slots[odd].as_str(), t.open), ("v1", 2)),
        other => panic!("second fill: {other:?}"),
    }
    match kv.tally(fill("nope", "v", false, now)).await.unwrap() {
        TallyAnswer::Missed(Some(t)) => assert_eq!(t.open, 2),
        other => panic!("unknown slot: {other:?}"),
    }
    // A tally that expires before `live_until_s` takes no fill.
    match kv.tally(fill("x", "v", false, far + 1)).await.unwrap() {
        TallyAnswer::Missed(Some(t)) => assert_eq!(t.slots["x"], ""),
        other => panic!("expiring: {other:?}"),
    }
    let missing = TallyOp::Fill {
        pk: pk.clone(),
        sk: "none".into(),
        slot: "x".into(),
        value: "v".into(),
        mark: false,
        live_until_s: now,
    };
    assert_eq!(kv.tally(missing).await.unwrap(), TallyAnswer::Missed(None));
    assert!(
        kv.tally(fill("x", "", false, now)).await.is_err(),
        "an empty value would read as open"
    );
    // Open adds the names not there yet, while something is open.
    let open = |slots: &[&str]| TallyOp::Open {
        pk: pk.clone(),
        sk: "t".into(),
        slots: slots.iter().map(|s| s.to_string()).collect(),
    };
    match kv.tally(open(&["x", "n1", odd, "n2"])).await.unwrap() {
        TallyAnswer::Opened(added, t) => {
            assert_eq!(added, ["n1", "n2"]);
            assert_eq!((t.open, t.slots.len()), (4, 5));
        }
        other => panic!("open: {other:?}"),
    }
    for s in ["x", "z", "n1", "n2"] {
        assert!(matches!(
            kv.tally(fill(s, "v", false, now)).await.unwrap(),
            TallyAnswer::Filled(_)
        ));
    }
    // Nothing open: nothing can be opened.
    match kv.tally(open(&["n3"])).await.unwrap() {
        TallyAnswer::Refused(Some(t)) => assert_eq!((t.open, t.marked), (0, 1)),
        other => panic!("open when full: {other:?}"),
    }
    // Close keeps the first reason, and a closed tally opens nothing.
    let close = |r: &str| TallyOp::Close {
        pk: pk.clone(),
        sk: "c".into(),
        reason: r.into(),
    };
    kv.tally_create(vec![NewTally {
        pk: pk.clone(),
        sk: "c".into(),
        slots: vec!["a".into()],
        expires_at_s: far,
    }])
    .await
    .unwrap();
    for r in ["first", "second"] {
        match kv.tally(close(r)).await.unwrap() {
            TallyAnswer::Closed(t) => assert_eq!(t.closed.as_deref(), Some("first")),
            other => panic!("close: {other:?}"),
        }
    }
    let open_c = TallyOp::Open {
        pk: pk.clone(),
        sk: "c".into(),
        slots: vec!["b".into()],
    };
    assert!(matches!(
        kv.tally(open_c).await.unwrap(),
        TallyAnswer::Refused(Some(_))
    ));
    let close_none = TallyOp::Close {
        pk: pk.clone(),
        sk: "none".into(),
        reason: "r".into(),
    };
    assert_eq!(
        kv.tally(close_none).await.unwrap(),
        TallyAnswer::Missed(None)
    );
}

/// Counts ([`TxOp::Count`]): adds commute and start from 0, sets replace, conditions (a missing
/// count as 0) fail the transaction at their index with nothing applied, the value and expiry
/// replaced or kept, a put clearing them; a count needs a live item; a repeat with the token
/// of an applied attempt answers as that attempt; counts read back by get and by query.
pub async fn kv_counts(kv: &dyn KvStore) {
    use crate::ports::{Cmp, Count};
    let pk = scope();
    let now = crate::ports::now_ms() / 1000;
    let far = now + 7 * 24 * 3600;
    let item = |sk: &str, v: &str, exp: i64| NewItem {
        pk: pk.clone(),
        sk: sk.into(),
        value: v.into(),
        expires_at_s: exp,
    };
    let count = |sk: &str| Count {
        pk: pk.clone(),
        sk: sk.into(),
        ..Count::default()
    };
    let when = |n: &str, cmp: Cmp, v: i64| (n.to_string(), cmp, v);
    let counts = |pairs: &[(&str, i64)]| -> crate::ports::Counts {
        pairs.iter().map(|(n, v)| (n.to_string(), *v)).collect()
    };
    kv.put(item("b", "{\"n\":3}", far), PutMode::Create)
        .await
        .unwrap();
    // GIVEN an item without counts: they read as 0, so `< 1` and `= 0` hold on them
    let add = |by: i64, below: i64| {
        TxOp::Count(Count {
            when: vec![when("gen", Cmp::Eq, 0), when("arrived", Cmp::Lt, below)],
            add: vec![("arrived".into(), by)],
            ..count("b")
        })
    };
    assert_eq!(kv.transact(vec![add(1, 2)]).await.unwrap(), Ok(()));
    assert_eq!(kv.transact(vec![add(1, 2)]).await.unwrap(), Ok(()));
    let got = kv.get(&pk, "b").await.unwrap().unwrap();
    assert_eq!(got.counts, counts(&[("arrived", 2)]), "adds start from 0");
    assert_eq!(got.value, "{\"n\":3}", "a count keeps the value");
    // WHEN a condition fails, beside a put: the index of the count, and nothing applied
    let beside = vec![
        TxOp::Put {
            item: item("p#x", "1", far),
            mode: PutMode::Create,
        },
        add(1, 2),
    ];
    assert_eq!(kv.transact(beside.clone()).await.unwrap(), Err(1));
    assert!(kv.get(&pk, "p#x").await.unwrap().is_none(), "all or none");
    // AND with the condition met, the put and the count commit together
    let mut ok = beside;
    ok[1] = add(1, 3);
    assert_eq!(kv.transact(ok).await.unwrap(), Ok(()));
    assert!(kv.get(&pk, "p#x").await.unwrap().is_some());
    // AND sets, equality on a count that is there, a new value and expiry, in one change
    let trip = Count {
        when: vec![when("arrived", Cmp::Eq, 3), when("gen", Cmp::Eq, 0)],
        add: vec![("gen".into(), 1)],
        set: vec![("arrived".into(), 0)],
        value: Some("{\"n\":4}".into()),
        expires_at_s: Some(far + 60),
        ..count("b")
    };
    let token = crate::ports::new_token();
    assert_eq!(
        kv.transact_as(vec![TxOp::Count(trip.clone())], &token)
            .await
            .unwrap(),
        Ok(())
    );
    let got = kv.get(&pk, "b").await.unwrap().unwrap();
    assert_eq!(got.counts, counts(&[("arrived", 0), ("gen", 1)]));
    assert_eq!(
        (got.value.as_str(), got.expires_at_s, got.version.as_str()),
        ("{\"n\":4}", far + 60, token.as_str()),
        "value, expiry and the transaction's version"
    );
    // AND its repeat with the same token (a lost answer) answers as the first attempt, and
    // applies nothing more; with another token its failed condition is reported
    assert_eq!(
        kv.transact_as(vec![TxOp::Count(trip.clone())], &token)
            .await
            .unwrap(),
        Ok(())
    );
    assert_eq!(kv.transact(vec![TxOp::Count(trip)]).await.unwrap(), Err(0));
    assert_eq!(
        kv.get(&pk, "b").await.unwrap().unwrap().counts,
        counts(&[("arrived", 0), ("gen", 1)])
    );
    // AND a query reads the counts too
    let page = kv.query(&pk, "b", None, 10).await.unwrap();
    assert_eq!(page.items[0].counts, counts(&[("arrived", 0), ("gen", 1)]));
    // AND a put replaces the item whole: its counts are gone
    kv.put(item("b", "{}", far), PutMode::Overwrite)
        .await
        .unwrap();
    assert!(kv.get(&pk, "b").await.unwrap().unwrap().counts.is_empty());
    // AND a count needs a live item: a missing or expired one fails its condition
    assert_eq!(
        kv.transact(vec![TxOp::Count(count("none"))]).await.unwrap(),
        Err(0)
    );
    kv.put(item("old", "{}", now - 10), PutMode::Overwrite)
        .await
        .unwrap();
    assert_eq!(
        kv.transact(vec![TxOp::Count(Count {
            add: vec![("n".into(), 1)],
            ..count("old")
        })])
        .await
        .unwrap(),
        Err(0)
    );
    // AND a bad name, or a count changed twice, is refused before anything is sent
    for bad in [
        Count {
            add: vec![("Bad-Name".into(), 1)],
            ..count("b")
        },
        Count {
            add: vec![("n".into(), 1)],
            set: vec![("n".into(), 1)],
            ..count("b")
        },
    ] {
        let e = kv.transact(vec![TxOp::Count(bad)]).await.unwrap_err();
        assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    }
}
