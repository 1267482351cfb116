//! A power cut after every acknowledged request (issue 29). A mixed workload goes through the
//! inbound HTTP router of a project on the embedded backend: an API key made, items put,
//! objects put, overwritten and deleted, queue messages sent, twenty items put by one invocation
//! (a script's writes are synced once, before its answer), a barrier created and acked through
//! its callback URLs, a drain. After each request that was answered 2xx (and each drain that
//! returned), the power is cut: SQLite's files keep only their synced bytes
//! (`native_crashsim`, a VFS under every connection of this process) and the object contents and
//! their folders only what was synced (`native_tests::crash::CrashDisk`). The project is then
//! reopened and everything acknowledged so far must be there; every object reads back whole or
//! fails naming itself. Then the workload goes on over the reopened project.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use native_core::api_keys;
use native_core::embedded::Embedded;
use native_core::local::{drain, DrainOptions, Project};
use native_core::ports::QueueKind;
use native_core::runtime::Runtime;
use native_core::tenants::DirTenants;
use native_tests::crash::CrashDisk;
use serde_json::{json, Value};
use tower::ServiceExt;

const DEPLOYMENT: &str = r#"{ "buckets": { "map": { "In": "acme-in" } } }"#;

const SCRIPTS: &[(&str, &str)] = &[
    (
        "put",
        "function on_invoke(ctx, ev) native.db.put('p', ev.k, { v = ev.v }) return true end",
    ),
    (
        "many",
        "function on_invoke(ctx, ev) for i = 1, ev.n do native.db.put('p', ev.k .. i, { v = ev.v }) end return true end",
    ),
    (
        "get",
        "function on_invoke(ctx, ev) local it = native.db.get('p', ev.k) return it and it.v end",
    ),
    (
        "obj",
        "function on_invoke(ctx, ev) native.bucket.In.put(ev.k, string.rep(ev.fill, ev.n)) return true end",
    ),
    (
        "del",
        "function on_invoke(ctx, ev) native.bucket.In.delete(ev.k) return true end",
    ),
    (
        "send",
        "function on_invoke(ctx, ev) native.queue.send('work', { n = ev.n }) return true end",
    ),
    (
        "work",
        "function on_queue(ctx, ev) native.db.put('done', tostring(ev.n), { ok = true }) end",
    ),
    (
        "done",
        "function on_invoke(ctx, ev) return native.db.get('done', tostring(ev.n)) ~= nil end",
    ),
    (
        "bar",
        "function on_invoke(ctx, ev)
           native.barrier.create({ id = ev.id, members = { 'a', 'b' }, continue_with = 'fin' })
           return { a = native.barrier.callback_url(ev.id, 'a'), b = native.barrier.callback_url(ev.id, 'b') }
         end",
    ),
    (
        "status",
        "function on_invoke(ctx, ev) local s = native.barrier.status(ev.id) return s and s.resolved or -1 end",
    ),
    ("fin", "function on_queue(ctx, ev) end"),
    ("router", "function on_route(ctx, ev) return 'fin' end"),
];

/// What was acknowledged so far, to be found after every cut.
#[derive(Default)]
struct Acked {
    key: Option<String>,
    items: Vec<(String, String)>,
    objects: Vec<(String, Option<(String, usize)>)>,
    sent: Vec<u32>,
    drained: Vec<u32>,
    barrier_acks: Vec<(String, String)>,
}

struct Open {
    rt: Arc<Runtime>,
    disk: Arc<CrashDisk>,
}

fn open(root: &Path) -> Open {
    let state = root.join(".native");
    std::fs::create_dir_all(&state).unwrap();
    let disk = Arc::new(CrashDisk::new(&state));
    let text = std::fs::read_to_string(root.join("deployment.json")).unwrap();
    let deployment = native_core::config::Deployment::from_json("deployment.json", &text).unwrap();
    let backend = Embedded::open_on(&state, deployment.notifying_buckets(), disk.clone())
        .unwrap_or_else(|e| panic!("reopening after the cut: {e}"));
    let project = Project {
        root: root.to_path_buf(),
        deployment,
        backend,
        tenants: Arc::new(DirTenants::new(root)),
    };
    Open {
        rt: Arc::new(project.runtime()),
        disk,
    }
}

/// The power goes: nothing more reaches the disk; the process's handles close; the files are
/// rewritten as the cut left them.
fn cut(o: Open, state: &Path) {
    native_crashsim::freeze(state);
    o.disk.cut();
    let Open { rt, disk } = o;
    drop(rt);
    // A real cut ends every thread at once. Here the backend closes when its last handle goes,
    // and a task it spawned may hold one a moment longer (until its worker drops it): its
    // files are rewritten only once it closed them, or it would write into what the cut left
    // (the WAL's delete at its close took every acknowledged write with it).
    assert!(
        native_crashsim::wait_closed(state, std::time::Duration::from_secs(30)),
        "the backend of the process that lost power still has its files open 30 s after its last handle was dropped"
    );
    native_crashsim::restore(state);
    disk.restore();
    let _ = std::fs::remove_file(state.join("native.db-shm"));
}

async fn call(
    rt: &Arc<Runtime>,
    method: Method,
    path: &str,
    key: Option<&str>,
    body: Value,
) -> (StatusCode, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(path)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(k) = key {
        req = req.header(header::AUTHORIZATION, format!("Bearer {k}"));
    }
    let resp = native_core::inbound::router(rt.clone())
        .oneshot(req.body(Body::from(body.to_string())).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn invoke(rt: &Arc<Runtime>, key: &str, script: &str, ev: Value) -> Value {
    let (status, body) = call(
        rt,
        Method::POST,
        &format!("/v1/invoke/{script}"),
        Some(key),
        ev,
    )
    .await;
    assert!(status.is_success(), "{script}: {status} {body}");
    body
}

/// Everything acknowledged is there; every object reads back whole or fails by name.
async fn check(rt: &Arc<Runtime>, acked: &Acked, step: &str) {
    let Some(key) = acked.key.as_deref() else {
        return;
    };
    let (status, body) = call(
        rt,
        Method::POST,
        "/v1/invoke/get",
        Some(key),
        json!({ "k": "none" }),
    )
    .await;
    assert_eq!(
        status,
        StatusCode::OK,
        "after {step}: the API key made before is refused: {body}"
    );
    for (k, v) in &acked.items {
        let got = invoke(rt, key, "get", json!({ "k": k })).await;
        assert_eq!(got, json!(v), "after {step}: item {k} was acknowledged");
    }
    let objects = rt.services.backends.objects.clone();
    for (k, want) in &acked.objects {
        let got = objects.get("acme-in", &format!("acme/{k}")).await;
        match (want, got) {
            (Some((fill, n)), Ok(Some((_, data)))) => {
                assert_eq!(data.len(), *n, "after {step}: object {k} is short");
                assert!(
                    data.iter().all(|b| *b == fill.as_bytes()[0]),
                    "after {step}: object {k} altered"
                );
            }
            (None, Ok(None)) => {}
            (want, got) => panic!(
                "after {step}: object {k}: acknowledged {want:?}, read {:?}",
                got.map(|o| o.map(|(m, _)| m.size))
            ),
        }
    }
    // Every object there reads back whole, or fails naming itself.
    let page = objects.list("acme-in", "", None, 1000).await.unwrap();
    for m in page.objects {
        match objects.get("acme-in", &m.key).await {
            Ok(Some((meta, data))) => assert_eq!(data.len() as u64, meta.size),
            Ok(None) => {}
            Err(e) => assert!(e.to_string().contains(&m.key), "after {step}: {e}"),
        }
    }
    let q = rt.services.backends.queue.clone();
    let s = q.stats(QueueKind::Work).await.unwrap();
    let pending = acked
        .sent
        .iter()
        .filter(|n| !acked.drained.contains(n))
        .count() as u64;
    assert!(
        s.visible + s.waiting >= pending,
        "after {step}: {pending} acknowledged messages not drained, the queue holds {}",
        s.visible + s.waiting
    );
    for n in &acked.drained {
        let done = invoke(rt, key, "done", json!({ "n": n })).await;
        assert_eq!(done, json!(true), "after {step}: message {n} was drained");
    }
    let mut ids: Vec<&String> = acked.barrier_acks.iter().map(|(i, _)| i).collect();
    ids.dedup();
    for id in ids {
        let acks = acked.barrier_acks.iter().filter(|(i, _)| i == id).count();
        let got = invoke(rt, key, "status", json!({ "id": id })).await;
        assert_eq!(got, json!(acks), "after {step}: acks of barrier {id}");
    }
}

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("deployment.json"), DEPLOYMENT).unwrap();
    native_tests::write_tenant(&root, "acme", r#"{ "queue": true }"#, SCRIPTS);
    // The project exists (and its database) before the simulation starts to look.
    drop(Project::open(&root).unwrap().runtime());
    (dir, root)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn everything_acknowledged_survives_a_power_cut_after_each_request() {
    // Alone in a process: crashsim becomes SQLite's VFS for every connection of it.
    if !native_tests::own_process::alone(
        module_path!(),
        "everything_acknowledged_survives_a_power_cut_after_each_request",
    ) {
        return;
    }
    native_crashsim::install();
    let (_dir, root) = project();
    let state = root.join(".native");
    let mut acked = Acked::default();
    let mut o = open(&root);
    let mut steps = 0;
    for round in 0..3u32 {
        let n = |i: u32| round * 10 + i;
        // 1. An API key (made once).
        if acked.key.is_none() {
            let k = api_keys::create(&*o.rt.services.backends.kv, "acme", "t")
                .await
                .unwrap();
            acked.key = Some(k.key);
            cut(o, &state);
            o = open(&root);
            check(&o.rt, &acked, "an API key").await;
        }
        let key = acked.key.clone().unwrap();
        let fills = ["b", "c", "d"];
        let reqs: Vec<(&str, Value)> = vec![
            (
                "put",
                json!({ "k": format!("k{}", n(1)), "v": format!("v{}", n(1)) }),
            ),
            (
                "obj",
                json!({ "k": format!("o{}", n(1)), "fill": "a", "n": 70_000 }),
            ),
            (
                "obj",
                json!({ "k": "same", "fill": fills[round as usize], "n": 1000 + round as usize }),
            ),
            ("put", json!({ "k": format!("k{}", n(2)), "v": "x" })),
            (
                "many",
                json!({ "k": format!("m{}-", n(1)), "v": format!("w{}", n(1)), "n": 20 }),
            ),
            ("send", json!({ "n": n(1) })),
            (
                "obj",
                json!({ "k": format!("o{}", n(2)), "fill": "e", "n": 1 }),
            ),
            ("del", json!({ "k": format!("o{}", n(1)) })),
            ("send", json!({ "n": n(2) })),
        ];
        for (script, ev) in reqs {
            invoke(&o.rt, &key, script, ev.clone()).await;
            match script {
                "put" => acked.items.push((
                    ev["k"].as_str().unwrap().into(),
                    ev["v"].as_str().unwrap().into(),
                )),
                "many" => {
                    for i in 1..=ev["n"].as_u64().unwrap() {
                        acked.items.push((
                            format!("{}{i}", ev["k"].as_str().unwrap()),
                            ev["v"].as_str().unwrap().into(),
                        ));
                    }
                }
                "obj" => {
                    let k = ev["k"].as_str().unwrap().to_string();
                    acked.objects.retain(|(o, _)| *o != k);
                    acked.objects.push((
                        k,
                        Some((
                            ev["fill"].as_str().unwrap().into(),
                            ev["n"].as_u64().unwrap() as usize,
                        )),
                    ));
                }
                "del" => {
                    let k = ev["k"].as_str().unwrap().to_string();
                    acked.objects.retain(|(o, _)| *o != k);
                    acked.objects.push((k, None));
                }
                "send" => acked.sent.push(ev["n"].as_u64().unwrap() as u32),
                _ => {}
            }
            steps += 1;
            cut(o, &state);
            o = open(&root);
            check(&o.rt, &acked, &format!("request {steps} ({script} {ev})")).await;
        }
        // A barrier, acked by a partner through its callback URLs.
        let id = format!("b{round}");
        let urls = invoke(&o.rt, &key, "bar", json!({ "id": id })).await;
        for m in ["a", "b"] {
            let url = urls[m].as_str().unwrap();
            let path = &url[url.find("/v1/callback/").unwrap()..];
            let (status, body) = call(&o.rt, Method::POST, path, None, json!({ "ok": true })).await;
            assert!(status.is_success(), "callback {m}: {status} {body}");
            acked.barrier_acks.push((id.clone(), m.into()));
            steps += 1;
            cut(o, &state);
            o = open(&root);
            check(
                &o.rt,
                &acked,
                &format!("request {steps} (callback ack {id}/{m})"),
            )
            .await;
        }
        // A drain: its "done" covers every message it handled.
        let r = drain(
            &o.rt,
            DrainOptions {
                wait: false,
                retry_delay_s: 0,
                ..Default::default()
            },
        )
        .await
        .unwrap();
        assert!(r.failures.is_empty(), "{:?}", r.failures);
        acked.drained = acked.sent.clone();
        steps += 1;
        cut(o, &state);
        o = open(&root);
        check(&o.rt, &acked, &format!("request {steps} (a drain)")).await;
    }
    eprintln!(
        "{steps} power cuts, each after an acknowledged request: nothing acknowledged was lost"
    );
}

/// Content of `len` bytes whose blob lands in the folder of `like`'s (its digest's first two
/// hex digits): putting it syncs that folder.
fn same_folder_as(like: &[u8], len: usize) -> Vec<u8> {
    use sha2::{Digest, Sha256};
    let want = hex::encode(Sha256::digest(like))[..2].to_string();
    (0u32..)
        .map(|i| {
            let mut v = format!("{i:08}").into_bytes();
            v.resize(len, b'z');
            v
        })
        .find(|v| hex::encode(Sha256::digest(v))[..2] == want)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unflushed_overwrite_or_delete_never_destroys_acknowledged_content() {
    // Alone in a process: crashsim becomes SQLite's VFS for every connection of it.
    if !native_tests::own_process::alone(
        module_path!(),
        "an_unflushed_overwrite_or_delete_never_destroys_acknowledged_content",
    ) {
        return;
    }
    use native_core::ports::{durability, ObjectStore, PutMode};
    native_crashsim::install();
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().canonicalize().unwrap().join(".native");
    std::fs::create_dir_all(&state).unwrap();
    let reopen = |state: &Path| {
        let disk = Arc::new(CrashDisk::new(state));
        let e = Embedded::open_on(state, Vec::new(), disk.clone()).unwrap();
        (e, disk)
    };
    let (e, disk) = reopen(&state);
    // GIVEN two acknowledged objects (synced before their answer)
    let (old_a, old_d) = (
        b"the first content of a".to_vec(),
        b"d, to be deleted".to_vec(),
    );
    e.put("b", "a", old_a.clone().into(), PutMode::Overwrite)
        .await
        .unwrap();
    e.put("b", "d", old_d.clone().into(), PutMode::Overwrite)
        .await
        .unwrap();
    // WHEN a run overwrites one and deletes the other, then puts objects whose contents land
    // in the same folders (which syncs them), and the power is cut before the run's flush
    durability::deferring_async(async {
        e.put(
            "b",
            "a",
            b"the second content".to_vec().into(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
        e.delete("b", "d").await.unwrap();
        for (key, like) in [("x", &old_a), ("y", &old_d)] {
            e.put(
                "b",
                key,
                same_folder_as(like, 40).into(),
                PutMode::Overwrite,
            )
            .await
            .unwrap();
        }
    })
    .await;
    native_crashsim::freeze(&state);
    disk.cut();
    drop(e);
    assert!(native_crashsim::wait_closed(
        &state,
        std::time::Duration::from_secs(30)
    ));
    native_crashsim::restore(&state);
    disk.restore();
    let _ = std::fs::remove_file(state.join("native.db-shm"));
    // THEN both read back whole as they were acknowledged (the run was never answered)
    let (e, _disk) = reopen(&state);
    for (key, want) in [("a", &old_a), ("d", &old_d)] {
        let got = e.get("b", key).await;
        match got {
            Ok(Some((_, data))) => assert_eq!(&data[..], &want[..], "object b/{key}"),
            other => panic!("object b/{key} after the cut: {other:?}"),
        }
    }
    // AND once an overwrite and a delete are flushed, the contents they let go of are
    // collected, and the new one stays
    durability::deferring_async(async {
        e.put(
            "b",
            "a",
            b"the third content".to_vec().into(),
            PutMode::Overwrite,
        )
        .await
        .unwrap();
        e.delete("b", "d").await.unwrap();
    })
    .await;
    let blob = |data: &[u8]| {
        use sha2::{Digest, Sha256};
        let d = hex::encode(Sha256::digest(data));
        state.join("blobs").join(&d[..2]).join(d)
    };
    assert!(
        blob(&old_a).exists() && blob(&old_d).exists(),
        "kept until the flush"
    );
    ObjectStore::flush(&e).await.unwrap();
    assert!(
        !blob(&old_a).exists(),
        "the first content of a is collected"
    );
    assert!(!blob(&old_d).exists(), "the content of d is collected");
    assert!(blob(b"the third content").exists());
    assert_eq!(
        &e.get("b", "a").await.unwrap().unwrap().1[..],
        b"the third content"
    );
}
