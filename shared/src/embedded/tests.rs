//! The embedded backend's own tests (the conformance suite runs from here too): kept out
//! of `mod.rs`, which they outgrew.

use super::*;
use crate::conformance;
use crate::ports::QueueKind;

fn open() -> (tempfile::TempDir, Embedded) {
    let dir = tempfile::tempdir().unwrap();
    let e = Embedded::open(
        dir.path(),
        vec![
            ("notify-b".into(), None),
            ("batch-b".into(), Some("done.json".into())),
        ],
    )
    .unwrap();
    (dir, e)
}

#[tokio::test]
async fn conformance_objects() {
    let (_d, e) = open();
    conformance::objects_put_get_delete_list(&e, "data-b").await;
}

#[tokio::test]
async fn conformance_kv() {
    let (_d, e) = open();
    conformance::kv_conditional_writes_expiry_query(&e).await;
}

#[tokio::test]
async fn conformance_kv_tallies() {
    let (_d, e) = open();
    conformance::kv_tallies(&e).await;
}

#[tokio::test]
async fn conformance_kv_counts() {
    let (_d, e) = open();
    conformance::kv_counts(&e).await;
}

#[tokio::test]
async fn conformance_kv_transactions() {
    let (_d, e) = open();
    conformance::kv_transactions(&e).await;
}

#[tokio::test]
async fn contents_noted_for_collection_when_a_process_died_are_collected_after_it() {
    use crate::ports::{ObjectStore, PutMode};
    use sha2::{Digest, Sha256};
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let path_of = |data: &[u8]| {
        let d = hex::encode(Sha256::digest(data));
        (root.join("blobs").join(&d[..2]).join(&d), d)
    };
    // GIVEN two contents noted for collection, as a synced overwrite leaves them when its
    // process dies before it collects: one that no object names, one named again since
    let e = Embedded::open(root, vec![]).unwrap();
    e.put("b", "gone", "old".into(), PutMode::Overwrite)
        .await
        .unwrap();
    e.put("b", "kept", "still".into(), PutMode::Overwrite)
        .await
        .unwrap();
    drop(e);
    let ((old, old_blob), (still, still_blob)) = (path_of(b"old"), path_of(b"still"));
    let c = rusqlite::Connection::open(root.join(DB_FILE)).unwrap();
    c.execute("DELETE FROM objects WHERE key = 'gone'", [])
        .unwrap();
    for b in [&old_blob, &still_blob] {
        c.execute("INSERT INTO collect (blob) VALUES (?1)", [b])
            .unwrap();
    }
    drop(c);
    // WHEN the project is opened again and makes its first synced write
    let e = Embedded::open(root, vec![]).unwrap();
    assert!(old.exists());
    e.put("b", "new", "new".into(), PutMode::Overwrite)
        .await
        .unwrap();
    // THEN the content no object names is gone, the named one stays, and no note is left
    assert!(!old.exists(), "the orphaned content is collected");
    assert!(still.exists(), "a content an object names is kept");
    assert_eq!(
        e.get("b", "kept").await.unwrap().unwrap().1,
        bytes::Bytes::from_static(b"still")
    );
    let notes: i64 = e
        .read(|c| {
            c.query_row("SELECT count(*) FROM collect", [], |r| r.get(0))
                .map_err(db_err)
        })
        .unwrap();
    assert_eq!(notes, 0);
}

#[tokio::test]
async fn conformance_kv_own_writes() {
    let (_d, e) = open();
    conformance::kv_own_writes(&e).await;
}

#[tokio::test]
async fn conformance_queue() {
    let (_d, e) = open();
    conformance::queue_delivery_and_dead_letters(&e, QueueKind::Work).await;
    conformance::queue_delete_many(&e, QueueKind::Events).await;
}

#[tokio::test]
async fn conformance_queue_redrive() {
    let (_d, e) = open();
    conformance::queue_redrive(&e, QueueKind::Events).await;
}

#[tokio::test]
async fn writes_into_notifying_buckets_queue_events() {
    use crate::events::{parse_notification, Notification};
    use crate::ports::{ObjectStore, PutMode, Queue};
    let (_d, e) = open();
    e.put("notify-b", "acme/x y.json", "1".into(), PutMode::Overwrite)
        .await
        .unwrap();
    e.put(
        "batch-b",
        "acme/jobs/j/part.ndjson",
        "1".into(),
        PutMode::Overwrite,
    )
    .await
    .unwrap();
    e.put(
        "batch-b",
        "acme/jobs/j/done.json",
        "{}".into(),
        PutMode::Overwrite,
    )
    .await
    .unwrap();
    e.put("quiet-b", "acme/x", "1".into(), PutMode::Overwrite)
        .await
        .unwrap();
    let msgs = e.receive(QueueKind::Events, 10, 30).await.unwrap();
    let mut keys: Vec<_> = msgs
        .iter()
        .map(|m| match parse_notification(&m.body).unwrap() {
            Notification::Records(r) => r[0].key.clone(),
            Notification::Test => unreachable!(),
        })
        .collect();
    // Two buckets' folders are two fair-queue groups, taken in turn: no order between them.
    keys.sort();
    assert_eq!(keys, ["acme/jobs/j/done.json", "acme/x y.json"]);
}

#[tokio::test]
async fn tenants_are_received_in_turn_whatever_their_backlogs() {
    use crate::ports::Queue;
    // GIVEN a backlog of 500 messages of tenant a, then one of b and one of c
    let (_d, e) = open();
    let msg = |t: &str, n: usize| format!(r#"{{"tenant":"{t}","script":"s","event":{{"n":{n}}}}}"#);
    for n in 0..500 {
        e.send(QueueKind::Work, msg("a", n), 0).await.unwrap();
    }
    e.send(QueueKind::Work, msg("b", 0), 0).await.unwrap();
    e.send(QueueKind::Work, msg("c", 0), 0).await.unwrap();
    // WHEN one batch of ten is received
    let got = e.receive(QueueKind::Work, 10, 30).await.unwrap();
    let tenants: Vec<String> = got
        .iter()
        .map(|m| crate::ports::fair::group_of(QueueKind::Work, &m.body).unwrap())
        .collect();
    // THEN b's and c's messages are in it, beside a's first eight in their order
    assert_eq!(
        tenants.iter().filter(|t| *t == "b").count(),
        1,
        "{tenants:?}"
    );
    assert_eq!(
        tenants.iter().filter(|t| *t == "c").count(),
        1,
        "{tenants:?}"
    );
    let a: Vec<&str> = got
        .iter()
        .filter(|m| m.body.contains(r#""tenant":"a""#))
        .map(|m| m.body.as_str())
        .collect();
    assert_eq!(a, (0..8).map(|n| msg("a", n)).collect::<Vec<_>>());
    // AND the next batch goes on with a's backlog where it stopped
    let next = e.receive(QueueKind::Work, 10, 30).await.unwrap();
    assert_eq!(next[0].body, msg("a", 8));
}

#[test]
fn a_paged_statement_is_planned_once_whatever_its_limit() {
    // GIVEN a connection as the backend makes them, and a read paged with `LIMIT ?`
    let d = tempfile::tempdir().unwrap();
    let c = connect(&d.path().join("t.db")).unwrap();
    c.execute_batch("CREATE TABLE t (k INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3);")
        .unwrap();
    let sql = "SELECT k FROM t WHERE k > ?1 ORDER BY k LIMIT ?2";
    // WHEN it runs from the statement cache with other bounds and limits
    for limit in 1..=4_i64 {
        let mut s = c.prepare_cached(sql).unwrap();
        let n = s
            .query_map(rusqlite::params![limit - 1, limit], |r| r.get::<_, i64>(0))
            .unwrap()
            .count();
        assert!(n as i64 <= limit);
    }
    // THEN SQLite never parsed and planned it again (it does, at each bind of the limit,
    // without the query planner stability guarantee)
    let s = c.prepare_cached(sql).unwrap();
    assert_eq!(s.get_status(rusqlite::StatementStatus::RePrepare), 0);
}

#[test]
fn many_opens_of_one_new_folder_at_once_all_succeed() {
    for _ in 0..5 {
        // GIVEN a folder with no project yet
        let dir = tempfile::tempdir().unwrap();
        let n = 12;
        let start = Arc::new(std::sync::Barrier::new(n));
        // WHEN 12 threads open it at the same moment
        let opened: Vec<_> = (0..n)
            .map(|_| {
                let (root, start) = (dir.path().to_path_buf(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    Embedded::open(&root, vec![])
                })
            })
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect();
        // THEN every open succeeds, and each sees the others' writes
        let opened: Vec<Embedded> = opened
            .into_iter()
            .map(|r| r.unwrap_or_else(|e| panic!("an open failed: {e}")))
            .collect();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            use crate::ports::{ObjectStore, PutMode};
            for (i, e) in opened.iter().enumerate() {
                e.put("b", &format!("k{i}"), "v".into(), PutMode::Create)
                    .await
                    .unwrap();
            }
            let listed = opened[0].list("b", "", None, 100).await.unwrap();
            assert_eq!(listed.objects.len(), n);
        });
    }
}

/// How many flushes wrote their row: synced commits that deferred writes waited for.
fn flush_marks(e: &Embedded) -> i64 {
    e.read(|c| {
        c.query_row(
            "SELECT coalesce((SELECT n FROM flushes WHERE id = 1), 0)",
            [],
            |r| r.get(0),
        )
        .map_err(db_err)
    })
    .unwrap()
}

#[tokio::test]
async fn deferred_writes_are_read_at_once_and_synced_by_one_flush() {
    use crate::ports::{durability, KvStore, NewItem, PutMode};
    let (_d, e) = open();
    let item = |sk: String| NewItem {
        pk: "p".into(),
        sk,
        value: "1".into(),
        expires_at_s: i64::MAX,
    };
    // GIVEN writes outside a deferring scope: synced when they return
    e.put(item("a".into()), PutMode::Create).await.unwrap();
    // THEN a flush has nothing to do
    KvStore::flush(&e).await.unwrap();
    assert_eq!(flush_marks(&e), 0);
    // WHEN a script's 50 writes are made in the scope, each read back at once
    durability::deferring_async(async {
        for i in 0..50 {
            e.put(item(format!("d{i}")), PutMode::Create).await.unwrap();
            assert!(e.get("p", &format!("d{i}")).await.unwrap().is_some());
        }
    })
    .await;
    // THEN one flush makes them durable with one synced commit that writes a frame
    KvStore::flush(&e).await.unwrap();
    assert_eq!(flush_marks(&e), 1);
    // AND a second flush, with nothing deferred since, does nothing
    KvStore::flush(&e).await.unwrap();
    assert_eq!(flush_marks(&e), 1);
    // AND a durable write after deferred ones syncs them itself: no flush row needed after
    durability::deferring_async(e.put(item("e".into()), PutMode::Create))
        .await
        .unwrap();
    e.put(item("f".into()), PutMode::Create).await.unwrap();
    assert_eq!(flush_marks(&e), 2, "the durable write carried the row");
    KvStore::flush(&e).await.unwrap();
    assert_eq!(flush_marks(&e), 2);
}

#[tokio::test]
async fn the_backends_flush_skips_only_when_nothing_is_unsynced() {
    use crate::ports::{durability, KvStore, NewItem, ObjectStore, PutMode, Queue};
    let (_d, e) = open();
    let b = e.backends();
    let unsynced = || {
        let all = [
            KvStore::may_need_flush(&e),
            ObjectStore::may_need_flush(&e),
            Queue::may_need_flush(&e),
        ];
        assert!(all.iter().all(|x| *x == all[0]), "one writer, one answer");
        all[0]
    };
    // GIVEN a fresh backend: nothing to flush, and a flush writes no row
    assert!(!unsynced());
    b.flush().await.unwrap();
    assert_eq!(flush_marks(&e), 0);
    // WHEN a script's write is deferred
    let item = NewItem {
        pk: "p".into(),
        sk: "a".into(),
        value: "1".into(),
        expires_at_s: i64::MAX,
    };
    durability::deferring_async(KvStore::put(&e, item, PutMode::Create))
        .await
        .unwrap();
    // THEN the backends say so, and their flush syncs it (the row written)
    assert!(unsynced());
    b.flush().await.unwrap();
    assert_eq!(flush_marks(&e), 1);
    // AND afterwards there is nothing left to flush
    assert!(!unsynced());
    b.flush().await.unwrap();
    assert_eq!(flush_marks(&e), 1);
}

#[tokio::test]
async fn best_effort_writes_are_read_at_once_and_never_synced_for() {
    use crate::ports::{durability, KvStore, NewItem, PutMode};
    let (_d, e) = open();
    let item = |sk: &str| NewItem {
        pk: "p".into(),
        sk: sk.into(),
        value: "1".into(),
        expires_at_s: i64::MAX,
    };
    let synced = || e.inner.writer.synced_commits();
    // GIVEN a durable write: one synced commit
    e.put(item("a"), PutMode::Create).await.unwrap();
    let base = synced();
    // WHEN best-effort writes are made, each read back at once
    for k in ["b", "c"] {
        durability::best_effort(e.put(item(k), PutMode::Create))
            .await
            .unwrap();
        assert!(e.get("p", k).await.unwrap().is_some());
    }
    // THEN none was synced, and a flush owes them nothing
    KvStore::flush(&e).await.unwrap();
    assert_eq!(synced(), base);
    assert_eq!(flush_marks(&e), 0);
    // AND a deferred write before a best-effort one is still owed its flush
    durability::deferring_async(e.put(item("d"), PutMode::Create))
        .await
        .unwrap();
    durability::best_effort(e.put(item("e"), PutMode::Create))
        .await
        .unwrap();
    KvStore::flush(&e).await.unwrap();
    assert_eq!(flush_marks(&e), 1);
    assert_eq!(synced(), base + 1);
    // AND the next durable write syncs them all with it
    e.put(item("f"), PutMode::Create).await.unwrap();
    assert_eq!(synced(), base + 2);
}

#[tokio::test]
async fn a_send_is_synced_and_its_lease_and_delete_are_not() {
    use crate::ports::{Queue, QueueKind};
    let (_d, e) = open();
    let synced = || e.inner.writer.synced_commits();
    // GIVEN a message sent: synced before the send returns
    let before = synced();
    e.send(QueueKind::Work, "{}".into(), 0).await.unwrap();
    assert_eq!(synced(), before + 1);
    // WHEN it is received and deleted
    let got = e.receive(QueueKind::Work, 10, 30).await.unwrap();
    e.delete(QueueKind::Work, &got[0].receipt).await.unwrap();
    // THEN neither waited for a sync (a power cut can only deliver it once more), and the
    // delete holds for every later receive
    assert_eq!(synced(), before + 1);
    assert!(e.receive(QueueKind::Work, 10, 0).await.unwrap().is_empty());
}

/// Pages appended to the WAL of the project in `dir` since `from` bytes.
fn wal_frames(dir: &Path, from: u64) -> (u64, u64) {
    let len = std::fs::metadata(dir.join(format!("{DB_FILE}-wal")))
        .unwrap()
        .len();
    // A frame is a page of 4 096 bytes after a header of 24.
    ((len - from) / (4096 + 24), len)
}

#[tokio::test]
async fn a_lease_and_a_delete_write_the_message_and_its_fair_queue_place_alone() {
    use crate::ports::Queue;
    // GIVEN ten messages of ten tenants
    let (d, e) = open();
    for t in 0..10 {
        let body = format!(r#"{{"tenant":"t{t}","script":"s","event":{{}}}}"#);
        e.send(QueueKind::Work, body, 0).await.unwrap();
    }
    let (_, at) = wal_frames(d.path(), 0);
    // WHEN they are received, then deleted one at a time
    let got = e.receive(QueueKind::Work, 10, 30).await.unwrap();
    assert_eq!(got.len(), 10);
    let (leased, mut at) = wal_frames(d.path(), at);
    let mut deletes = Vec::new();
    for m in &got {
        e.delete(QueueKind::Work, &m.receipt).await.unwrap();
        let (n, now) = wal_frames(d.path(), at);
        deletes.push(n);
        at = now;
    }
    // THEN the lease wrote the messages' page, their fair-queue index's and the holders'
    // (the first lease of this process), and each delete two pages: an index more is a
    // page more for every message (with the due and owner indexes: 4 and 4)
    assert_eq!(leased, 3);
    assert_eq!(deletes, vec![2; 10]);
    // AND nothing is left to receive
    assert!(e.receive(QueueKind::Work, 10, 30).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_due_message_behind_many_waiting_groups_is_found() {
    use crate::ports::Queue;
    // GIVEN 50 tenants with a delayed message each, and one, last in order, with a due one
    let (_d, e) = open();
    for t in 0..50 {
        let body = format!(r#"{{"tenant":"a{t:02}","script":"s","event":{{}}}}"#);
        e.send(QueueKind::Work, body, 60).await.unwrap();
    }
    assert!(e.receive(QueueKind::Work, 10, 30).await.unwrap().is_empty());
    let due = r#"{"tenant":"z","script":"s","event":{}}"#;
    e.send(QueueKind::Work, due.into(), 0).await.unwrap();
    // WHEN the queue is received
    let got = e.receive(QueueKind::Work, 10, 30).await.unwrap();
    // THEN the due one comes, and only it
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body, due);
}

#[tokio::test]
async fn two_handles_on_one_folder_see_each_other() {
    use crate::ports::{ObjectStore, PutMode};
    let (d, a) = open();
    let b = Embedded::open(d.path(), vec![]).unwrap();
    a.put("b1", "k", "v".into(), PutMode::Create).await.unwrap();
    let err = b
        .put("b1", "k", "w".into(), PutMode::Create)
        .await
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists { .. }));
    assert_eq!(&b.get("b1", "k").await.unwrap().unwrap().1[..], b"v");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripts_write_commits_on_its_own_thread_when_no_group_is_committing() {
    let (_d, e) = open();
    let writer = &e.inner.writer;
    // GIVEN a write from async code: the writing thread commits it
    let name = writer
        .write(|_, _| Ok(std::thread::current().name().map(String::from)))
        .await
        .unwrap();
    assert_eq!(name.as_deref(), Some("native-db-writer"));
    // WHEN a script waits for a write (its thread may block)
    let handle = tokio::runtime::Handle::current();
    let (here, committed_on, synced) = crate::blocking::run_inline(|| {
        let here = std::thread::current().id();
        let before = writer.synced_commits();
        let on = crate::blocking::wait(
            &handle,
            crate::ports::durability::deferring_async(writer.write(|c, _| {
                c.execute_batch(
                    "INSERT INTO flushes (id, n) VALUES (2, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1",
                )
                .map_err(db_err)?;
                Ok(std::thread::current().id())
            })),
        )
        .unwrap();
        (here, on, writer.synced_commits() - before)
    });
    // THEN that thread committed it, a group of one, unsynced (it was deferred), and a
    // flush owes it a sync as it would after the writing thread's commit
    assert_eq!(here, committed_on);
    assert_eq!(synced, 0);
    let before = writer.synced_commits();
    writer.flush().await.unwrap();
    assert_eq!(writer.synced_commits(), before + 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_best_effort_write_from_async_code_commits_on_its_caller() {
    use crate::ports::durability;
    let (_d, e) = open();
    let writer = &e.inner.writer;
    let name = || std::thread::current().name().map(String::from);
    // WHEN async code (no script's thread) makes best-effort writes (a queue's lease)
    let here = name();
    let before = writer.synced_commits();
    let mut on_caller = 0;
    for _ in 0..20 {
        let on = durability::best_effort(writer.write(move |_, _| Ok(name())))
            .await
            .unwrap();
        on_caller += usize::from(on == here);
    }
    // THEN its own thread committed them (all but those that found the writing thread
    // still holding the connection a moment after a commit), and none was synced
    assert!(
        on_caller >= 10,
        "{on_caller} of 20 committed on their caller"
    );
    assert_ne!(here.as_deref(), Some("native-db-writer"));
    assert_eq!(writer.synced_commits(), before);
    // AND a durable write from async code still goes to the writing thread
    let on = writer.write(move |_, _| Ok(name())).await.unwrap();
    assert_eq!(on.as_deref(), Some("native-db-writer"));
}

#[test]
fn a_best_effort_write_never_waits_on_a_worker_for_another_connections_lock() {
    use crate::ports::durability;
    let (d, e) = open();
    // GIVEN another connection (another process, say) holding the write lock
    let other = rusqlite::Connection::open(d.path().join(DB_FILE)).unwrap();
    other.execute_batch("BEGIN IMMEDIATE").unwrap();
    // AND one tokio thread, which a commit waiting for that lock would stop
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let w = e.clone();
        let write = tokio::spawn(durability::best_effort(async move {
            w.inner.writer.write(|_, _| Ok(())).await
        }));
        // WHEN a best-effort write is made from async code
        let started = std::time::Instant::now();
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        // THEN the thread went on meanwhile (the write went to the writing thread, which
        // waits for the lock)
        assert!(
            started.elapsed() < std::time::Duration::from_secs(2),
            "the worker waited for the lock"
        );
        assert!(!write.is_finished());
        // AND it commits once the lock is let go
        other.execute_batch("COMMIT").unwrap();
        write.await.unwrap().unwrap();
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_wal_is_checkpointed_after_best_effort_writes_made_inline() {
    use crate::ports::durability;
    let (d, e) = open();
    let db = d.path().join(DB_FILE);
    let len = || std::fs::metadata(&db).unwrap().len();
    let before = len();
    e.inner
        .writer
        .write(|c, _| {
            c.execute_batch("CREATE TABLE t (v BLOB)").map_err(db_err)?;
            Ok(())
        })
        .await
        .unwrap();
    // WHEN async code commits best-effort writes that take the WAL past 1 000 pages (8 MB
    // of 8 KB rows), each itself (SQLite's own checkpoint is off on the writing connection)
    for _ in 0..1100 {
        durability::best_effort(e.inner.writer.write(|c, _| {
            c.execute("INSERT INTO t (v) VALUES (zeroblob(8192))", [])
                .map_err(db_err)?;
            Ok(())
        }))
        .await
        .unwrap();
    }
    // THEN the writing thread checkpoints them into the database file soon after
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while len() < before + 4_000_000 && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(
        len() >= before + 4_000_000,
        "the database file is {} bytes: the WAL was never checkpointed",
        len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receive_with_nothing_due_does_not_wait_for_the_writer() {
    use crate::ports::Queue;
    let (_d, e) = open();
    // GIVEN the writer busy with a write that holds it until told to go on
    let (go, wait) = std::sync::mpsc::channel::<()>();
    let held = {
        let e = e.clone();
        tokio::spawn(async move {
            e.inner
                .writer
                .write(move |_, _| {
                    let _ = wait.recv();
                    Ok(())
                })
                .await
        })
    };
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    // WHEN both queues, empty, are asked for messages
    let got = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        (
            e.receive(QueueKind::Work, 10, 30).await,
            e.receive(QueueKind::Events, 10, 30).await,
        )
    })
    .await;
    go.send(()).unwrap();
    held.await.unwrap().unwrap();
    // THEN they answered nothing at once, from a reading connection
    let (work, events) = got.expect("an empty receive waited for the writer");
    assert!(work.unwrap().is_empty() && events.unwrap().is_empty());
    // AND a message sent now is received as before
    e.send(QueueKind::Work, "{}".into(), 0).await.unwrap();
    assert_eq!(e.receive(QueueKind::Work, 10, 30).await.unwrap().len(), 1);
}
