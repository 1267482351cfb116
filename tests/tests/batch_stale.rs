//! Stale batch jobs: `native.batch.new{ stale_after_s, on_stale }` sends `{ job, stale = true }`
//! once when `done.json` has not come by then, nothing for a job that was answered (also once its
//! continuation deleted `job:keys()`, done.json with them); and the
//! job list (`native batch list`) tells waiting, stale, done and failed jobs apart.

use native_core::batch::jobs;
use native_core::ports::now_ms;
use native_core::runtime::tick;
use native_core::timer::TickOptions;
use native_tests::{Backend, TestProject};
use serde_json::{json, Value};

native_tests::on_both_backends!(
    a_job_without_done_json_is_stale_once_and_an_answered_one_never,
    a_job_answered_settled_and_cleaned_up_is_never_stale,
);

const SUBMIT: &str = r#"
function on_invoke(ctx, ev)
  if ev.bad then return native.batch.new({ on_stale = "stale" }) end
  for _, id in ipairs({ "j1", "j2" }) do
    local job = native.batch.new({ id = id, stale_after_s = 3600, on_stale = "stale" })
    job:query("q", "select 1")
    job:continue_with("settle")
    job:submit()
  end
end
"#;
const STALE: &str = r#"
function on_queue(ctx, ev)
  local n = (native.db.get("stale", ev.job) or { runs = 0 }).runs
  native.db.put("stale", ev.job, { runs = n + 1, stale = ev.stale })
end
"#;
const SETTLE: &str = "function on_queue(ctx, ev) end";
const ROUTER: &str = "function on_route(ctx, ev) return nil end";

async fn a_job_without_done_json_is_stale_once_and_an_answered_one_never(backend: Backend) {
    // GIVEN two jobs that may wait an hour, and j2 answered (failed) in time
    let p = TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true, "batch": true }"#,
            &[
                ("submit", SUBMIT),
                ("stale", STALE),
                ("settle", SETTLE),
                ("router", ROUTER),
            ],
        )],
    )
    .await;
    let b = p.rt.services.backends.clone();
    let t0 = now_ms();
    p.rt.invoke("acme", "submit", json!({})).await.unwrap();
    p.rt.put_object(
        "acme",
        "$batch",
        "jobs/j2/done.json",
        r#"{"ok":false,"error":"no such table"}"#.into(),
    )
    .await
    .unwrap();
    p.drain().await;
    let d = &p.rt.services.deployment;
    let states = |list: Vec<jobs::JobInfo>| -> Vec<(String, &'static str)> {
        list.into_iter().map(|j| (j.job, j.state)).collect()
    };
    let list = jobs::list(&*b.objects, d, "acme", t0).await.unwrap();
    assert_eq!(
        states(list),
        [("j1".to_string(), "waiting"), ("j2".to_string(), "failed")]
    );
    let at = |ms| TickOptions {
        now_ms: t0 + ms,
        ..TickOptions::local()
    };
    // WHEN the tick runs a second before the hour THEN nothing is sent
    let r = tick(&*b.kv, &*b.queue, &*b.objects, at(3_599_000))
        .await
        .unwrap();
    assert_eq!((r.fired, r.void), (0, 0));
    // WHEN the hour is up THEN j1's on_stale runs once; j2's timer is void
    let r = tick(&*b.kv, &*b.queue, &*b.objects, at(3_601_000))
        .await
        .unwrap();
    assert_eq!((r.fired, r.void), (1, 1), "{r:?}");
    p.drain().await;
    let got = b.kv.get("d#acme#stale", "j1").await.unwrap().unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(&got.value).unwrap(),
        json!({ "runs": 1, "stale": true })
    );
    assert!(b.kv.get("d#acme#stale", "j2").await.unwrap().is_none());
    let r = tick(&*b.kv, &*b.queue, &*b.objects, at(7_200_000))
        .await
        .unwrap();
    assert_eq!(r.fired + r.void, 0);
    // AND the list says j1 is stale, with its age
    let list = jobs::list(&*b.objects, d, "acme", t0 + 3_601_000)
        .await
        .unwrap();
    assert!(list[0].age_s >= 3600, "{list:?}");
    assert_eq!(
        states(list),
        [("j1".to_string(), "stale"), ("j2".to_string(), "failed")]
    );
    // AND on_stale without stale_after_s is refused
    let err =
        p.rt.invoke("acme", "submit", json!({ "bad": true }))
            .await
            .unwrap_err()
            .to_string();
    assert!(err.contains("on_stale needs stale_after_s"), "{err}");
}

const CLEANUP: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  native.db.put("settled", job.id, { ok = job.ok })
  return { delete = job:keys() }
end
"#;

async fn a_job_answered_settled_and_cleaned_up_is_never_stale(backend: Backend) {
    // GIVEN a job that may wait an hour, whose continuation deletes job:keys() (the documented
    // cleanup), with the built-in routing (no router)
    let submit = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new({ id = "j3", stale_after_s = 3600, on_stale = "stale" })
  job:query("q", "select 1")
  job:continue_with("cleanup")
  job:submit()
end
"#;
    let p = TestProject::on(
        backend,
        native_tests::DEPLOYMENT,
        &[(
            "acme",
            r#"{ "queue": true, "batch": true }"#,
            &[("submit", submit), ("stale", STALE), ("cleanup", CLEANUP)],
        )],
    )
    .await;
    let b = p.rt.services.backends.clone();
    let t0 = now_ms();
    p.rt.invoke("acme", "submit", json!({})).await.unwrap();
    // WHEN the partner answers, the continuation settles and cleans up, and two hours pass
    p.rt.put_object(
        "acme",
        "$batch",
        "jobs/j3/done.json",
        r#"{"ok":false,"error":"no such table"}"#.into(),
    )
    .await
    .unwrap();
    p.drain().await;
    let settled = b.kv.get("d#acme#settled", "j3").await.unwrap();
    assert!(settled.is_some(), "the continuation ran");
    let r = tick(
        &*b.kv,
        &*b.queue,
        &*b.objects,
        TickOptions {
            now_ms: t0 + 7_200_000,
            ..TickOptions::local()
        },
    )
    .await
    .unwrap();
    p.drain().await;
    // THEN the stale timer is void and on_stale never runs
    assert_eq!((r.fired, r.void), (0, 1), "{r:?}");
    assert!(b.kv.get("d#acme#stale", "j3").await.unwrap().is_none());
}
