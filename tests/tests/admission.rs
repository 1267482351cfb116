//! What one tenant's invocations may take from a server: a script runs inline on a worker only
//! until it waits or runs long, and a server runs at most so many invocations at once, in all
//! and per tenant (`max_concurrent`), answering "busy" beyond them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use native_core::Error;
use native_tests::TestProject;
use serde_json::json;

/// Spawns a task on the runtime's workers that ticks every 10 ms for `for_` and returns the
/// longest gap it saw between two ticks: what another request waits behind a busy worker.
fn canary(for_: Duration) -> tokio::task::JoinHandle<Duration> {
    tokio::spawn(async move {
        let start = Instant::now();
        let mut last = Instant::now();
        let mut worst = Duration::ZERO;
        while start.elapsed() < for_ {
            tokio::time::sleep(Duration::from_millis(10)).await;
            worst = worst.max(last.elapsed());
            last = Instant::now();
        }
        worst
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_script_that_runs_long_leaves_its_worker_to_other_tasks() {
    // GIVEN a server runtime with one worker thread and a script that computes for 1.5 s
    let p = Arc::new(TestProject::new(
        "acme",
        r#"{ "limits": { "timeout_s": 10 } }"#,
        &[(
            "spin",
            "function on_invoke() local t = os.clock() while os.clock() - t < 1.5 do end return 'done' end",
        )],
    ));
    // WHEN it runs on that worker while another task ticks there
    let tick = canary(Duration::from_millis(1200));
    let q = p.clone();
    let started = Instant::now();
    let spin = tokio::spawn(async move {
        let out = q.invoke("acme", "spin", json!({})).await;
        (out, started.elapsed())
    });
    let worst = tick.await.unwrap();
    let (out, ran) = spin.await.unwrap();
    // THEN the script finished, and the other task was never held up for its run (it was moved
    // off the worker after its slice): held, it would wait the whole run. Half the run leaves
    // room for a loaded machine's scheduling, which slows both alike.
    assert_eq!(out.unwrap(), json!("done"));
    assert!(
        worst < ran / 2,
        "another task waited {worst:?} behind a script computing for {ran:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_script_that_waits_leaves_its_worker_to_other_tasks() {
    // GIVEN a local server that accepts and never answers, and a script that calls it
    let hung = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = hung.local_addr().unwrap();
    let _accept = tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((s, _)) = hung.accept().await {
            held.push(s);
        }
    });
    let p = Arc::new(TestProject::with_tenants(
        r#"{ "buckets": { "map": {} }, "http": { "allow_private_networks": true } }"#,
        &[(
            "acme",
            &format!(
                r#"{{ "limits": {{ "timeout_s": 2 }}, "http": {{ "allow": ["127.0.0.1:{}"] }} }}"#,
                addr.port()
            ),
            &[(
                "call",
                &format!(
                    "function on_invoke() return native.http.request{{ url = 'http://127.0.0.1:{}/', timeout_s = 30 }} end",
                    addr.port()
                ),
            )],
        )],
    ));
    // WHEN it waits on that worker while another task ticks there
    let tick = canary(Duration::from_millis(1000));
    let q = p.clone();
    let started = Instant::now();
    let call = tokio::spawn(async move { q.invoke("acme", "call", json!({})).await });
    let worst = tick.await.unwrap();
    // THEN the other task ran on, and the waiting script ended by its deadline (2 s) with the
    // limit's error, not the request's 30 s
    // (held, it would wait the whole 2 s deadline)
    assert!(
        worst < Duration::from_secs(1),
        "another task waited {worst:?} behind a waiting script"
    );
    let e = call.await.unwrap().unwrap_err().to_string();
    assert!(e.contains("limit timeout_s exceeded"), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_runs_each_tenant_within_its_max_concurrent_and_refuses_more() {
    // GIVEN a server runtime of 8 places, a tenant allowed 2 at once and another tenant
    let slow =
        "function on_invoke() local t = os.clock() while os.clock() - t < 0.5 do end return 1 end";
    let p = TestProject::with_tenants(
        native_tests::DEPLOYMENT,
        &[
            (
                "greedy",
                r#"{ "limits": { "max_concurrent": 2 } }"#,
                &[("s", slow)],
            ),
            (
                "other",
                "{}",
                &[("s", "function on_invoke() return 'ok' end")],
            ),
        ],
    );
    let rt = Arc::new(
        p.project
            .runtime()
            .with_log(p.log.clone())
            .with_admission(8),
    );
    // WHEN the greedy tenant starts 5 invocations at once
    let calls: Vec<_> = (0..5)
        .map(|_| {
            let rt = rt.clone();
            tokio::spawn(async move { rt.invoke("greedy", "s", json!({})).await })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(100)).await;
    // THEN the other tenant is still served at once
    let t = Instant::now();
    assert_eq!(
        rt.invoke("other", "s", json!({})).await.unwrap(),
        json!("ok")
    );
    assert!(
        t.elapsed() < Duration::from_millis(300),
        "{:?}",
        t.elapsed()
    );
    // AND two of the greedy ones ran, three were refused as busy, naming the limit
    let mut ran = 0;
    let mut busy = Vec::new();
    for c in calls {
        match c.await.unwrap() {
            Ok(_) => ran += 1,
            Err(Error::Busy {
                what,
                retry_after_s,
            }) => {
                assert_eq!(retry_after_s, 1);
                busy.push(what);
            }
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((ran, busy.len()), (2, 3), "{busy:?}");
    assert!(
        busy[0].contains("tenant \"greedy\" has 2 invocations running")
            && busy[0].contains("limits.max_concurrent = 2"),
        "{}",
        busy[0]
    );
    // AND every place was given back
    assert_eq!(rt.admission().unwrap().running("greedy"), (0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_tenant_never_takes_more_than_half_of_a_server() {
    // GIVEN a server of 4 places and a tenant whose max_concurrent is above that
    let slow =
        "function on_invoke() local t = os.clock() while os.clock() - t < 0.5 do end return 1 end";
    let p = TestProject::new(
        "big",
        r#"{ "limits": { "max_concurrent": 100 } }"#,
        &[("s", slow)],
    );
    let rt = Arc::new(
        p.project
            .runtime()
            .with_log(p.log.clone())
            .with_admission(4),
    );
    // WHEN it starts 4 at once
    let calls: Vec<_> = (0..4)
        .map(|_| {
            let rt = rt.clone();
            tokio::spawn(async move { rt.invoke("big", "s", json!({})).await })
        })
        .collect();
    // THEN 2 ran and 2 were refused, saying it holds half of the server's places
    let mut outcomes = Vec::new();
    for c in calls {
        outcomes.push(c.await.unwrap().map_err(|e| e.to_string()));
    }
    let refused: Vec<&String> = outcomes.iter().filter_map(|o| o.as_ref().err()).collect();
    assert_eq!(refused.len(), 2, "{outcomes:?}");
    assert!(
        refused[0].contains("half of the server's 4 places (its max_concurrent is 100)"),
        "{}",
        refused[0]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_work_waits_for_a_place_instead_of_failing() {
    // GIVEN a tenant allowed one invocation at once, busy with a direct one
    let p = TestProject::new(
        "acme",
        r#"{ "queue": true, "limits": { "max_concurrent": 1 } }"#,
        &[
            (
                "slow",
                "function on_invoke() local t = os.clock() while os.clock() - t < 0.5 do end native.queue.send('w', {}) return 1 end",
            ),
            ("w", "function on_queue() native.db.put('p', 'k', 1) end"),
        ],
    );
    let rt = Arc::new(
        p.project
            .runtime()
            .with_log(p.log.clone())
            .with_admission(8),
    );
    let q = rt.clone();
    let first = tokio::spawn(async move { q.invoke("acme", "slow", json!({})).await });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // WHEN a work message of the tenant arrives meanwhile
    let body = json!({ "tenant": "acme", "script": "w", "event": {} }).to_string();
    // THEN it waits for the place and runs, rather than failing for want of one
    rt.handle_work_message(&body, 1).await.unwrap();
    first.await.unwrap().unwrap();
}
