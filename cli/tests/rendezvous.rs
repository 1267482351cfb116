//! Rendezvous barriers over HTTP against `native serve` (seed 003): the seed's example workflow
//! request by request, the Connect error model, inactivity with `native clock advance`, the CLI
//! verbs, and a race of 64 peers through 20 generations with a continuation per trip.

use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::{json, Value};

use crate::support::{ok, run, serve};

/// `native --project DIR ARGS`: exit code, stdout, stderr.
fn native(project: &Path, args: &[&str]) -> (i32, String, String) {
    let o = run(project, args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// One POST with a JSON body; the status and the body as JSON, awaited for as long as a
/// rendezvous long poll may hold it.
fn post(addr: &str, path: &str, key: Option<&str>, body: &Value) -> (u16, Value) {
    let auth = key.map(|k| format!("Bearer {k}"));
    crate::support::http_within(
        addr,
        "POST",
        path,
        auth.as_deref(),
        body.to_string().as_bytes(),
        Duration::from_secs(330),
    )
}

/// Calls a method of the Grackle service.
fn grackle(addr: &str, key: &str, method: &str, body: Value) -> (u16, Value) {
    post(
        addr,
        &format!("/com.evrblk.grackle.v1beta.GrackleApi/{method}"),
        Some(key),
        &body,
    )
}

/// Calls a method that must succeed; its answer.
fn call(addr: &str, key: &str, method: &str, body: Value) -> Value {
    let (status, v) = grackle(addr, key, method, body);
    assert_eq!(status, 200, "{method}: {v}");
    v
}

/// Calls a method that must fail; its status, code and message.
fn fails(addr: &str, key: &str, method: &str, body: Value) -> (u16, String, String) {
    let (status, v) = grackle(addr, key, method, body);
    assert_ne!(status, 200, "{method} succeeded: {v}");
    (
        status,
        v["code"].as_str().unwrap().to_string(),
        v["message"].as_str().unwrap().to_string(),
    )
}

/// The continuation: records each message it gets, once per delivery.
const NEXT: &str = r#"
function on_queue(ctx, ev)
  local g = ev.rendezvous.generation
  native.db.put("runs", string.format("%06d#%s", g, ctx.request_id), ev)
end
function on_invoke(ctx, ev)
  local out, cursor = {}, nil
  repeat
    local page = native.db.query("runs", { cursor = cursor, limit = 100 })
    for _, it in page.items do table.insert(out, it.key) end
    cursor = page.cursor
  until cursor == nil
  return out
end
"#;

/// Arrives from a script, in whichever process runs it.
const ARRIVE: &str = r#"function on_invoke(ctx, ev)
  return native.rendezvous.arrive{ name = ev.name, process_id = ev.p, expected_generation = ev.g }
end"#;

fn project() -> (tempfile::TempDir, String, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        dir.path(),
        "acme",
        r#"{ "queue": true }"#,
        &[("next", NEXT), ("arrive", ARRIVE)],
    );
    write_tenant(dir.path(), "globex", "{}", &[]);
    let key = |t: &str| {
        ok(dir.path(), &["keys", "create", t])
            .lines()
            .next()
            .unwrap()
            .to_string()
    };
    let (acme, globex) = (key("acme"), key("globex"));
    (dir, acme, globex)
}

/// Only the listed fields of a barrier (the seed's shorter responses show only these).
fn pick(v: &Value, fields: &[&str]) -> Value {
    Value::Object(
        fields
            .iter()
            .map(|f| (f.to_string(), v[*f].clone()))
            .collect(),
    )
}

#[test]
fn the_seed_workflow_over_http_request_by_request() {
    let (dir, key, _) = project();
    let srv = serve(dir.path());
    let a = srv.addr.as_str();
    // GIVEN the namespace pipelines exists
    let ns = call(a, &key, "CreateNamespace", json!({ "name": "pipelines" }));
    assert_eq!(ns["namespace"]["name"], "pipelines");

    // WHEN the coordinator creates the barrier as the seed does
    let created = call(
        a,
        &key,
        "CreateBarrier",
        json!({
            "namespace_name": "pipelines",
            "barrier_name": "phase_1_complete",
            "description": "End of map phase",
            "expected_processes": 4,
            "delete_inactive_after_seconds": 3600
        }),
    );
    // THEN the response has every field of the seed's, with its values
    let b = &created["barrier"];
    let t = b["created_at"].clone();
    assert!(t.as_i64().unwrap() > 1_700_000_000_000_000_000, "{t}");
    assert_eq!(
        created,
        json!({ "barrier": {
            "name": "phase_1_complete",
            "description": "End of map phase",
            "expected_processes": 4,
            "arrived_processes": 0,
            "generation": 1,
            "version": 1,
            "created_at": t,
            "updated_at": t,
            "last_activity_at": t,
            "delete_inactive_after_seconds": 3600,
            "metadata": {}
        }})
    );

    // WHEN shard-0 arrives THEN not yet released, one arrived, generation 1
    let arrive = |shard: &str, generation: u64| {
        call(
            a,
            &key,
            "ArriveAtBarrier",
            json!({
                "namespace_name": "pipelines",
                "barrier_name": "phase_1_complete",
                "process_id": shard,
                "expected_generation": generation
            }),
        )
    };
    let r = arrive("shard-0", 1);
    let fields = [
        "name",
        "expected_processes",
        "arrived_processes",
        "generation",
    ];
    assert_eq!(
        (pick(&r["barrier"], &fields), &r["all_arrived"]),
        (
            json!({ "name": "phase_1_complete", "expected_processes": 4, "arrived_processes": 1, "generation": 1 }),
            &json!(false)
        )
    );
    // AND a retry of the same (process_id, expected_generation) is a no-op
    assert_eq!(arrive("shard-0", 1)["barrier"]["arrived_processes"], 1);
    arrive("shard-1", 1);
    arrive("shard-2", 1);

    // WHEN a worker waits and the timeout fires first THEN TIMED_OUT, the barrier unchanged
    let wait = |timeout: u64| {
        call(
            a,
            &key,
            "WaitAtBarrier",
            json!({
                "namespace_name": "pipelines",
                "barrier_name": "phase_1_complete",
                "expected_generation": 1,
                "timeout_seconds": timeout
            }),
        )
    };
    let w = wait(1);
    assert_eq!(
        (pick(&w["barrier"], &fields), &w["outcome"]),
        (
            json!({ "name": "phase_1_complete", "expected_processes": 4, "arrived_processes": 3, "generation": 1 }),
            &json!("BARRIER_WAIT_OUTCOME_TIMED_OUT")
        )
    );

    // WHEN workers wait with timeout 300 and the last shard arrives
    let waiters: Vec<_> = (0..3)
        .map(|_| {
            let (a, key) = (a.to_string(), key.clone());
            std::thread::spawn(move || {
                let (s, v) = grackle(
                    &a,
                    &key,
                    "WaitAtBarrier",
                    json!({
                    "namespace_name": "pipelines", "barrier_name": "phase_1_complete",
                    "expected_generation": 1, "timeout_seconds": 300 }),
                );
                (s, v, Instant::now())
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let tripped_at = Instant::now();
    let r = arrive("shard-3", 1);
    // THEN the last arrival trips it: generation 2, arrived reset to 0
    assert_eq!(r["all_arrived"], true);
    assert_eq!(
        pick(&r["barrier"], &fields),
        json!({ "name": "phase_1_complete", "expected_processes": 4, "arrived_processes": 0, "generation": 2 })
    );
    // AND every waiter is released together, TRIPPED, seeing generation 2
    for w in waiters {
        let (s, v, at) = w.join().unwrap();
        assert_eq!(s, 200);
        assert_eq!(
            (pick(&v["barrier"], &fields), &v["outcome"]),
            (
                json!({ "name": "phase_1_complete", "expected_processes": 4, "arrived_processes": 0, "generation": 2 }),
                &json!("BARRIER_WAIT_OUTCOME_TRIPPED")
            )
        );
        assert!(at.duration_since(tripped_at) < Duration::from_secs(1));
    }
    // AND a wait on generation 1 now answers at once
    assert_eq!(wait(300)["outcome"], "BARRIER_WAIT_OUTCOME_TRIPPED");

    // WHEN inspecting THEN GetBarrier shows generation 2, and generation 1's four shards are
    // listed in process order
    let g = call(
        a,
        &key,
        "GetBarrier",
        json!({ "namespace_name": "pipelines", "barrier_name": "phase_1_complete" }),
    );
    assert_eq!(g["barrier"]["generation"], 2);
    let l = call(
        a,
        &key,
        "ListBarrierParticipants",
        json!({ "namespace_name": "pipelines", "barrier_name": "phase_1_complete", "generation": 1 }),
    );
    let ids: Vec<&str> = l["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["process_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["shard-0", "shard-1", "shard-2", "shard-3"]);
    assert_eq!(l["next_pagination_token"], "");
    assert_eq!(l["previous_pagination_token"], "");
    let p0 = &l["participants"][0];
    assert_eq!(
        (p0["generation"].clone(), p0["metadata"].clone()),
        (json!(1), json!({}))
    );
    assert!(p0["arrived_at"].as_i64().unwrap() >= t.as_i64().unwrap());

    // AND the next phase uses expected_generation 2
    assert_eq!(arrive("shard-0", 2)["barrier"]["arrived_processes"], 1);
    // AND DeleteBarrier removes it
    assert_eq!(
        call(
            a,
            &key,
            "DeleteBarrier",
            json!({ "namespace_name": "pipelines", "barrier_name": "phase_1_complete" })
        ),
        json!({})
    );
    let (s, code, msg) = fails(
        a,
        &key,
        "GetBarrier",
        json!({ "namespace_name": "pipelines", "barrier_name": "phase_1_complete" }),
    );
    assert_eq!(
        (s, code.as_str(), msg.as_str()),
        (404, "not_found", "barrier not found")
    );
}

#[test]
fn connect_errors_codes_and_field_names() {
    let (dir, key, globex) = project();
    let srv = serve(dir.path());
    let a = srv.addr.as_str();
    let create = json!({ "namespace_name": "default", "barrier_name": "b", "expected_processes": 2,
                         "delete_inactive_after_seconds": 60 });
    call(a, &key, "CreateBarrier", create.clone());
    // already_exists 409
    assert_eq!(fails(a, &key, "CreateBarrier", create.clone()).0, 409);
    // invalid_argument 400, naming the field
    let (s, code, msg) = fails(
        a,
        &key,
        "CreateBarrier",
        json!({ "namespace_name": "default",
        "barrier_name": "c", "expected_processes": 0, "delete_inactive_after_seconds": 60 }),
    );
    assert_eq!(
        (s, code.as_str(), msg.as_str()),
        (
            400,
            "invalid_argument",
            "expected_processes must be greater than 0"
        )
    );
    let (_, _, msg) = fails(
        a,
        &key,
        "CreateBarrier",
        json!({ "namespace_name": "default",
        "barrier_name": "c", "expected_processes": 1.5, "delete_inactive_after_seconds": 60 }),
    );
    assert!(
        msg.starts_with("expected_processes must be a whole number"),
        "{msg}"
    );
    // failed_precondition 400, with both generations
    let (s, code, msg) = fails(
        a,
        &key,
        "ArriveAtBarrier",
        json!({ "namespace_name": "default",
        "barrier_name": "b", "process_id": "p", "expected_generation": 3 }),
    );
    assert_eq!((s, code.as_str()), (400, "failed_precondition"));
    assert_eq!(
        msg,
        "expected_generation 3 does not match the barrier's current generation 1"
    );
    // lowerCamelCase names and int64 as strings are accepted
    let r = call(
        a,
        &key,
        "ArriveAtBarrier",
        json!({ "namespaceName": "default",
        "barrierName": "b", "processId": "p", "expectedGeneration": "1",
        "metadata": { "host": "h1" } }),
    );
    assert_eq!(r["barrier"]["arrived_processes"], 1);
    // not_found 404: a missing namespace, a missing barrier
    let (s, code, msg) = fails(
        a,
        &key,
        "GetBarrier",
        json!({ "namespace_name": "nope", "barrier_name": "b" }),
    );
    assert_eq!(
        (s, code.as_str(), msg.as_str()),
        (404, "not_found", "namespace not found")
    );
    // unauthenticated 401
    let (s, v) = post(
        a,
        "/com.evrblk.grackle.v1beta.GrackleApi/GetBarrier",
        None,
        &json!({}),
    );
    assert_eq!((s, v["code"].as_str()), (401, Some("unauthenticated")));
    // another tenant never sees it
    let (s, _, msg) = fails(
        a,
        &globex,
        "GetBarrier",
        json!({ "namespace_name": "default", "barrier_name": "b" }),
    );
    assert_eq!((s, msg.as_str()), (404, "barrier not found"));
    // an unknown method is 404 and lists the methods
    let (s, _, msg) = fails(a, &key, "Frobnicate", json!({}));
    assert!(s == 404 && msg.contains("ArriveAtBarrier"), "{msg}");
    // a body that is not an object is refused
    let (s, _, msg) = fails(a, &key, "GetBarrier", json!([1]));
    assert_eq!(
        (s, msg.as_str()),
        (400, "the request body must be a JSON object, not an array")
    );
    // continue_with needs the tenant's queue
    let (s, _, msg) = fails(
        a,
        &globex,
        "CreateBarrier",
        json!({ "namespace_name": "default",
        "barrier_name": "c", "expected_processes": 1, "delete_inactive_after_seconds": 60,
        "continue_with": "next" }),
    );
    assert!(
        s == 400 && msg.contains("script \"next\" of tenant \"globex\" not found"),
        "{msg}"
    );
    // the CLI shows the barrier and lists the namespace's barriers
    let st: Value = serde_json::from_str(&ok(
        dir.path(),
        &["rendezvous", "status", "acme", "default", "b"],
    ))
    .unwrap();
    assert_eq!(
        (st["arrived_processes"].clone(), st["generation"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(st["participants"][0]["metadata"]["host"], "h1");
    let list = ok(dir.path(), &["rendezvous", "list", "acme", "default"]);
    assert!(list.contains("\"b\""), "{list}");
    let (code, _, err) = native(
        dir.path(),
        &["rendezvous", "status", "acme", "default", "zz"],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("has no rendezvous barrier \"zz\""), "{err}");
}

/// Waits until the server's clock is `offset_s` ahead of the system clock (it follows the
/// project clock as it polls its queues), probing with throwaway barriers.
fn server_clock_at(a: &str, key: &str, offset_s: i64) {
    let until = Instant::now() + Duration::from_secs(10);
    for i in 0.. {
        let (s, v) = grackle(
            a,
            key,
            "CreateBarrier",
            json!({ "namespace_name": "probes",
            "barrier_name": format!("probe{offset_s}_{i}"), "expected_processes": 1,
            "delete_inactive_after_seconds": 60 }),
        );
        assert_eq!(s, 200, "{v}");
        let system_s = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let server_s = v["barrier"]["created_at"].as_i64().unwrap() / 1_000_000_000;
        if server_s >= system_s + offset_s - 1 {
            return;
        }
        assert!(
            Instant::now() < until,
            "the server did not follow the clock"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn an_inactive_barrier_is_gone_after_native_clock_advance() {
    let (dir, key, _) = project();
    let srv = serve(dir.path());
    let a = srv.addr.as_str();
    call(a, &key, "CreateNamespace", json!({ "name": "probes" }));
    // GIVEN a barrier that is deleted after 60 s without activity
    call(
        a,
        &key,
        "CreateBarrier",
        json!({ "namespace_name": "default", "barrier_name": "idle",
        "expected_processes": 2, "delete_inactive_after_seconds": 60 }),
    );
    // WHEN 50 s pass and a process arrives, then 50 s more
    ok(dir.path(), &["clock", "advance", "50s"]);
    server_clock_at(a, &key, 50);
    let first = call(
        a,
        &key,
        "ArriveAtBarrier",
        json!({ "namespace_name": "default",
        "barrier_name": "idle", "process_id": "p", "expected_generation": 1 }),
    );
    assert_eq!(first["barrier"]["arrived_processes"], 1);
    ok(dir.path(), &["clock", "advance", "50s"]);
    server_clock_at(a, &key, 100);
    // THEN it lives: the arrival moved its window
    let get = || {
        grackle(
            a,
            &key,
            "GetBarrier",
            json!({ "namespace_name": "default", "barrier_name": "idle" }),
        )
    };
    assert_eq!(get().0, 200);
    let st = ok(
        dir.path(),
        &["rendezvous", "status", "acme", "default", "idle"],
    );
    assert!(st.contains("\"arrived_processes\": 1"), "{st}");
    // WHEN 11 s more pass THEN it is gone, for the server and the CLI alike
    ok(dir.path(), &["clock", "advance", "11s"]);
    let (code, _, err) = native(
        dir.path(),
        &["rendezvous", "status", "acme", "default", "idle"],
    );
    assert!(
        code == 1 && err.contains("has no rendezvous barrier \"idle\""),
        "{code} {err}"
    );
    server_clock_at(a, &key, 111);
    let (s, v) = get();
    assert_eq!((s, v["message"].as_str()), (404, Some("barrier not found")));
    assert_eq!(
        ok(dir.path(), &["rendezvous", "list", "acme", "default"]).trim(),
        "[]"
    );
}

#[test]
fn a_trip_in_another_process_releases_the_server_s_waiters_by_polling() {
    let (dir, key, _) = project();
    let srv = serve(dir.path());
    let a = srv.addr.clone();
    call(
        &a,
        &key,
        "CreateBarrier",
        json!({ "namespace_name": "default", "barrier_name": "x",
        "expected_processes": 1, "delete_inactive_after_seconds": 600 }),
    );
    // GIVEN a waiter on the server, parked long enough for its polls to back off to 1 s
    let waiter = {
        let (a, key) = (a.clone(), key.clone());
        std::thread::spawn(move || {
            let out = call(
                &a,
                &key,
                "WaitAtBarrier",
                json!({ "namespace_name": "default",
                "barrier_name": "x", "expected_generation": 1, "timeout_seconds": 60 }),
            );
            (out, Instant::now())
        })
    };
    std::thread::sleep(Duration::from_millis(2500));
    // WHEN a script run by another process (`native invoke`) trips the barrier
    let out = ok(
        dir.path(),
        &[
            "invoke",
            "acme",
            "arrive",
            r#"{"name":"x","p":"cli","g":1}"#,
        ],
    );
    let tripped_at = Instant::now();
    assert!(out.contains("\"all_arrived\": true"), "{out}");
    // THEN the server's waiter sees it at its next poll: within a second and a bit
    let (w, at) = waiter.join().unwrap();
    assert_eq!(w["outcome"], "BARRIER_WAIT_OUTCOME_TRIPPED");
    assert_eq!(w["barrier"]["generation"], 2);
    assert!(
        at.duration_since(tripped_at) < Duration::from_millis(1500),
        "{:?}",
        at.duration_since(tripped_at)
    );
}

#[test]
fn sigterm_answers_long_polls_timed_out_and_the_server_stops_at_once() {
    let (dir, key, _) = project();
    let mut srv = serve(dir.path());
    let a = srv.addr.clone();
    call(
        &a,
        &key,
        "CreateBarrier",
        json!({ "namespace_name": "default", "barrier_name": "held",
        "expected_processes": 2, "delete_inactive_after_seconds": 600 }),
    );
    // GIVEN a client waiting up to 300 s
    let waiter = {
        let (a, key) = (a.clone(), key.clone());
        std::thread::spawn(move || {
            grackle(
                &a,
                &key,
                "WaitAtBarrier",
                json!({ "namespace_name": "default",
            "barrier_name": "held", "expected_generation": 1, "timeout_seconds": 300 }),
            )
        })
    };
    std::thread::sleep(Duration::from_millis(500));
    // WHEN the server gets SIGTERM
    let t = Instant::now();
    let pid = srv.child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    // THEN the wait answers TIMED_OUT at once (the caller waits again elsewhere)
    let (s, v) = waiter.join().unwrap();
    assert_eq!(
        (s, v["outcome"].as_str()),
        (200, Some("BARRIER_WAIT_OUTCOME_TIMED_OUT")),
        "{v}"
    );
    assert_eq!(v["barrier"]["generation"], 1);
    // AND the server exits 0 without waiting the poll out
    let status = srv.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
}

/// 64 peers, 20 generations: each peer arrives, waits, and goes on to the next generation.
#[test]
fn sixty_four_peers_through_twenty_generations_trip_each_once_with_one_continuation() {
    const PEERS: usize = 64;
    const GENERATIONS: u64 = 20;
    let (dir, key, _) = project();
    let srv = serve(dir.path());
    let a = srv.addr.clone();
    call(
        &a,
        &key,
        "CreateBarrier",
        json!({ "namespace_name": "default", "barrier_name": "race",
        "expected_processes": PEERS, "delete_inactive_after_seconds": 3600, "continue_with": "next" }),
    );
    // Peers that have sent their arrival, per generation: none may be released before all 64.
    let sent: Arc<Vec<AtomicUsize>> =
        Arc::new((0..=GENERATIONS).map(|_| AtomicUsize::new(0)).collect());
    let trips = Arc::new(AtomicUsize::new(0));
    let peers: Vec<_> = (0..PEERS)
        .map(|p| {
            let (a, key, sent, trips) = (a.clone(), key.clone(), sent.clone(), trips.clone());
            std::thread::spawn(move || {
                for g in 1..=GENERATIONS {
                    sent[g as usize].fetch_add(1, Ordering::SeqCst);
                    let r = call(&a, &key, "ArriveAtBarrier", json!({ "namespace_name": "default",
                        "barrier_name": "race", "process_id": format!("peer-{p}"), "expected_generation": g }));
                    if r["all_arrived"] == true {
                        trips.fetch_add(1, Ordering::SeqCst);
                    }
                    let w = call(&a, &key, "WaitAtBarrier", json!({ "namespace_name": "default",
                        "barrier_name": "race", "expected_generation": g, "timeout_seconds": 120 }));
                    assert_eq!(w["outcome"], "BARRIER_WAIT_OUTCOME_TRIPPED", "peer {p} gen {g}: {w}");
                    // (the next generation cannot trip yet: this peer has not arrived there)
                    assert_eq!(w["barrier"]["generation"], g + 1, "peer {p}");
                    // THEN nobody is released before every peer sent its arrival
                    assert_eq!(sent[g as usize].load(Ordering::SeqCst), PEERS, "peer {p} released early in gen {g}");
                }
            })
        })
        .collect();
    for p in peers {
        p.join().unwrap();
    }
    // THEN exactly 20 trips, and no arrival lost: each generation lists all 64
    assert_eq!(trips.load(Ordering::SeqCst), GENERATIONS as usize);
    let b = call(
        &a,
        &key,
        "GetBarrier",
        json!({ "namespace_name": "default", "barrier_name": "race" }),
    );
    assert_eq!(
        (
            b["barrier"]["generation"].clone(),
            b["barrier"]["arrived_processes"].clone()
        ),
        (json!(GENERATIONS + 1), json!(0))
    );
    for g in 1..=GENERATIONS {
        let l = call(
            &a,
            &key,
            "ListBarrierParticipants",
            json!({ "namespace_name": "default",
            "barrier_name": "race", "generation": g, "limit": 250 }),
        );
        assert_eq!(
            l["participants"].as_array().unwrap().len(),
            PEERS,
            "generation {g}"
        );
    }
    // AND one continuation ran per generation (the server runs them from its queue)
    let until = Instant::now() + Duration::from_secs(20);
    loop {
        let (s, runs) = post(&a, "/v1/invoke/next", Some(&key), &json!({}));
        assert_eq!(s, 200, "{runs}");
        let gens: Vec<u64> = runs
            .as_array()
            .map(|r| {
                r.iter()
                    .map(|k| k.as_str().unwrap()[..6].parse().unwrap())
                    .collect()
            })
            .unwrap_or_default();
        if gens.len() >= GENERATIONS as usize || Instant::now() > until {
            assert_eq!(gens, (1..=GENERATIONS).collect::<Vec<_>>());
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}
