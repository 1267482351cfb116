//! Schedules (`"schedules"` in a tenant's config, `native_core::schedule`): every and cron
//! slots over simulated days (DST included), one run per slot under racing ticks, at least one
//! after a crash at any backend call of the tick, missed slots coalesced or caught up, the
//! overlap rule, and the operators' pause, resume, trigger and backfill. The tick takes its now
//! as an option, so these tests move time without sleeping.

use std::sync::Arc;

use native_core::ports::{now_ms, KvStore, Queue, QueueKind, WorkMessage};
use native_core::schedule::{self, Schedules, TickOptions, TickReport, LEASE_MS};
use native_tests::faults::{Fault, Faulty, Plan};
use native_tests::{Backend, TestProject, DEPLOYMENT};
use serde_json::Value;

native_tests::on_both_backends!(
    every_and_cron_slots_over_two_days_run_once_each_at_their_slot,
    missed_slots_run_once_with_their_count_or_each_with_catch_up_all,
    a_slot_is_skipped_while_the_previous_run_still_retries,
    pause_survives_a_reload_and_trigger_resume_backfill_run,
    racing_ticks_run_a_slot_once,
    a_crash_at_every_backend_call_of_the_tick_still_runs_the_slot,
);

const MIN: i64 = 60_000;
const HOUR: i64 = 60 * MIN;
const DAY: i64 = 24 * HOUR;

const JOB: &str = "function on_queue(ctx, ev)\n  if ev.event and ev.event.fail then error('boom') end\n  return nil\nend\n";

async fn project(backend: Backend, config: &str) -> TestProject {
    TestProject::on(backend, DEPLOYMENT, &[("acme", config, &[("job", JOB)])]).await
}

fn at(now_ms: i64) -> TickOptions {
    TickOptions {
        now_ms,
        ..TickOptions::local()
    }
}

async fn tick_on(p: &TestProject, kv: &dyn KvStore, q: &dyn Queue, now: i64) -> TickReport {
    let r = schedule::tick(p.rt.tenants.as_ref(), kv, q, at(now)).await;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    r
}

async fn tick(p: &TestProject, now: i64) -> TickReport {
    let b = &p.rt.services.backends;
    tick_on(p, b.kv.as_ref(), b.queue.as_ref(), now).await
}

/// Every work message sent so far, each run with `attempt` through the runtime (which records
/// its outcome), as (schedule, at_ms, missed, manual), sorted by schedule and slot.
async fn run_all(p: &TestProject, attempt: u32) -> Vec<(String, i64, u64, bool)> {
    let q = p.rt.services.backends.queue.clone();
    let mut out = Vec::new();
    loop {
        let msgs = q.receive(QueueKind::Work, 10, 30).await.unwrap();
        if msgs.is_empty() {
            let st = q.stats(QueueKind::Work).await.unwrap();
            if st.visible + st.waiting == 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        }
        for m in msgs {
            let w: WorkMessage = serde_json::from_str(&m.body).unwrap();
            let ev = &w.event;
            out.push((
                ev["schedule"].as_str().unwrap().to_string(),
                ev["at_ms"].as_i64().unwrap(),
                ev["missed"].as_u64().unwrap(),
                ev["manual"] == Value::Bool(true),
            ));
            let _ = p.rt.handle_work_message(&m.body, attempt).await;
            q.delete(QueueKind::Work, &m.receipt).await.unwrap();
        }
    }
    out.sort();
    out
}

fn slots_of(runs: &[(String, i64, u64, bool)], name: &str) -> Vec<i64> {
    runs.iter()
        .filter(|r| r.0 == name)
        .map(|r| {
            assert_eq!(r.2, 0, "{r:?} missed nothing");
            r.1
        })
        .collect()
}

fn utc(s: &str) -> i64 {
    // 2026-03-28T12:00:00Z
    let (date, time) = s.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    let t: Vec<i64> = time.split(':').map(|x| x.parse().unwrap()).collect();
    // Days from 1970-01-01 (civil from days, Howard Hinnant's algorithm).
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    days * DAY + t[0] * HOUR + t[1] * MIN + t[2] * 1000
}

async fn every_and_cron_slots_over_two_days_run_once_each_at_their_slot(backend: Backend) {
    // GIVEN an hourly schedule, a daily 02:30 and an hourly cron in Paris, whose clocks go
    // from 02:00 to 03:00 on 2026-03-29
    let p = project(
        backend,
        r#"{"schedules": {
            "hourly": {"script": "job", "every": "1h"},
            "paris": {"script": "job", "cron": "30 2 * * *", "tz": "Europe/Paris"},
            "paris_hourly": {"script": "job", "cron": "0 * * * *", "tz": "Europe/Paris"}
        }}"#,
    )
    .await;
    // WHEN ticks run every ten minutes for two days, each slot's run run as it comes
    let t0 = utc("2026-03-28T12:00:00Z");
    let mut runs = Vec::new();
    let mut t = t0;
    while t <= t0 + 2 * DAY {
        tick(&p, t).await;
        runs.extend(run_all(&p, 1).await);
        t += 10 * MIN;
    }
    runs.sort();
    // THEN each slot ran once, at its exact time, missing nothing
    let hourly: Vec<i64> = (1..=48).map(|h| t0 + h * HOUR).collect();
    assert_eq!(slots_of(&runs, "hourly"), hourly);
    // 02:30 that the change skips runs at 03:30 CEST, 01:30Z; the next day at 00:30Z.
    assert_eq!(
        slots_of(&runs, "paris"),
        vec![utc("2026-03-29T01:30:00Z"), utc("2026-03-30T00:30:00Z")]
    );
    // The hour that does not exist does not run twice: Paris's hours are UTC's hours.
    assert_eq!(slots_of(&runs, "paris_hourly"), hourly);
}

async fn missed_slots_run_once_with_their_count_or_each_with_catch_up_all(backend: Backend) {
    // GIVEN two schedules every 5 minutes, one catching up on all its slots, and a tenant that
    // sends at most 5 messages per invocation
    let p = project(
        backend,
        r#"{"limits": {"max_sends": 5}, "schedules": {
            "latest": {"script": "job", "every": "5m"},
            "all": {"script": "job", "every": "5m", "catch_up": "all"}
        }}"#,
    )
    .await;
    let t0 = utc("2026-06-01T00:00:00Z");
    tick(&p, t0).await;
    // WHEN nothing ticks for an hour (12 slots), then ticks come
    let r = tick(&p, t0 + HOUR).await;
    // THEN the latest slot runs once, counting the 11 before it; catch_up all runs the first 5
    assert_eq!(r.fired, 6);
    let first = run_all(&p, 1).await;
    let want_all = |from: i64, n: i64| -> Vec<(String, i64, u64, bool)> {
        (from..from + n)
            .map(|i| ("all".to_string(), t0 + i * 5 * MIN, 0, false))
            .collect()
    };
    let mut want = want_all(1, 5);
    want.push(("latest".into(), t0 + HOUR, 11, false));
    assert_eq!(first, want);
    // AND the next ticks run the rest of catch_up all, 5 at a time, and nothing more of latest
    tick(&p, t0 + HOUR + 1000).await;
    assert_eq!(run_all(&p, 1).await, want_all(6, 5));
    tick(&p, t0 + HOUR + 2000).await;
    assert_eq!(run_all(&p, 1).await, want_all(11, 2));
    assert_eq!(tick(&p, t0 + HOUR + 3000).await.fired, 0);
}

async fn a_slot_is_skipped_while_the_previous_run_still_retries(backend: Backend) {
    // GIVEN a schedule with the default overlap rule, one that allows overlap, and one whose
    // runs fail
    let p = project(
        backend,
        r#"{"schedules": {
            "skip": {"script": "job", "every": "5m"},
            "allow": {"script": "job", "every": "5m", "overlap": "allow"},
            "flaky": {"script": "job", "every": "5m", "event": {"fail": true}}
        }}"#,
    )
    .await;
    let q = p.rt.services.backends.queue.clone();
    let t0 = utc("2026-06-01T00:00:00Z");
    tick(&p, t0).await;
    assert_eq!(tick(&p, t0 + 5 * MIN).await.fired, 3);
    // WHEN the next slot falls before the first slot's runs have run
    let r = tick(&p, t0 + 10 * MIN).await;
    // THEN only the schedule that allows overlap runs it
    assert_eq!((r.fired, r.skipped), (1, 2));
    assert_eq!(q.stats(QueueKind::Work).await.unwrap().visible, 4);
    // WHEN the runs run (flaky's fails on its first attempt, and may be retried)
    let ran = run_all(&p, 1).await;
    assert_eq!(ran.len(), 4);
    // THEN the next slot of skip runs, counting the one it skipped; flaky's is skipped again
    let r = tick(&p, t0 + 15 * MIN).await;
    assert_eq!((r.fired, r.skipped), (2, 1));
    let ran = run_all(&p, 5).await;
    assert!(
        ran.contains(&("skip".into(), t0 + 15 * MIN, 1, false)),
        "{ran:?}"
    );
    // AND the list shows flaky's run failed on its first attempt, with why
    let tenant = p.rt.tenants.load("acme").await.unwrap();
    let s = Schedules::new(p.rt.services.backends.kv.as_ref(), q.as_ref(), &tenant);
    let list = s.list().await.unwrap();
    let flaky = list.iter().find(|i| i.name == "flaky").unwrap();
    let last = flaky.last.as_ref().unwrap();
    assert_eq!(
        (last.at_ms, last.ok, last.attempt),
        (t0 + 5 * MIN, false, 1)
    );
    assert!(last.error.as_deref().unwrap().contains("boom"), "{last:?}");
    // WHEN that run fails its last receive THEN the next slot runs, counting the 2 skipped
    let slot = native_core::ports::Slot {
        schedule: "flaky".into(),
        at_ms: t0 + 5 * MIN,
        manual: false,
    };
    s.record(&slot, native_core::ports::MAX_RECEIVES, Some("boom".into()))
        .await
        .unwrap();
    assert_eq!(tick(&p, t0 + 20 * MIN).await.fired, 3);
    let ran = run_all(&p, 1).await;
    assert!(
        ran.contains(&("flaky".into(), t0 + 20 * MIN, 2, false)),
        "{ran:?}"
    );
}

async fn pause_survives_a_reload_and_trigger_resume_backfill_run(backend: Backend) {
    // GIVEN a schedule every 5 minutes, ticked once so that it has a next slot
    let config = r#"{"schedules": {"five": {"script": "job", "every": "5m"}}}"#;
    let p = project(backend, config).await;
    let b = p.rt.services.backends.clone();
    let now = now_ms();
    tick(&p, now).await;
    let tenant = p.rt.tenants.load("acme").await.unwrap();
    let s = Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &tenant);
    // WHEN an operator pauses it, and its config is edited and read again
    s.pause("five").await.unwrap();
    let file = p.dir.path().join("tenants/acme/config.json");
    std::fs::write(
        &file,
        r#"{"config": {"edited": true}, "schedules": {"five": {"script": "job", "every": "5m"}}}"#,
    )
    .unwrap();
    let reloaded = p.rt.tenants.load("acme").await.unwrap();
    assert_eq!(reloaded.config.config["edited"], true, "read again");
    // THEN it is still paused, and an hour of ticks runs nothing
    let list = Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &reloaded)
        .list()
        .await
        .unwrap();
    assert!(list[0].paused, "{list:?}");
    for m in (5..=60).step_by(5) {
        assert_eq!(tick(&p, now + m * MIN).await.fired, 0);
    }
    assert!(run_all(&p, 1).await.is_empty());
    // WHEN it is triggered THEN it runs once now, paused or not, marked manual
    let s = Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &reloaded);
    let when = s.trigger("five").await.unwrap();
    assert_eq!(run_all(&p, 1).await, vec![("five".into(), when, 0, true)]);
    // WHEN it is resumed THEN its next slot runs, the paused ones not caught up
    s.resume("five").await.unwrap();
    let next = s.list().await.unwrap()[0].next_ms.unwrap();
    assert!(
        next > now_ms() - 1000 && next <= now_ms() + 5 * MIN,
        "{next}"
    );
    tick(&p, next).await;
    assert_eq!(run_all(&p, 1).await, vec![("five".into(), next, 0, false)]);
    // WHEN an hour is backfilled THEN each of its 12 slots runs once, marked manual
    let from = next - HOUR + 1;
    let sent = s.backfill("five", from, next).await.unwrap();
    assert_eq!(sent.len(), 12);
    let ran = run_all(&p, 1).await;
    let want: Vec<_> = sent
        .iter()
        .map(|&t| ("five".to_string(), t, 0, true))
        .collect();
    assert_eq!(ran, want);
    // AND a backfill of more than 500 slots is refused with the figures, an unknown name too
    let e = s.backfill("five", next - 3 * DAY, next).await.unwrap_err();
    assert!(e.to_string().contains("more than 500 slots"), "{e}");
    let e = s.pause("fiev").await.unwrap_err().to_string();
    assert!(e.contains("did you mean \"five\""), "{e}");
}

async fn racing_ticks_run_a_slot_once(backend: Backend) {
    // GIVEN a schedule every 5 minutes
    let p = project(
        backend,
        r#"{"schedules": {"five": {"script": "job", "every": "5m"}}}"#,
    )
    .await;
    let t0 = utc("2026-06-01T00:00:00Z");
    tick(&p, t0).await;
    // WHEN eight ticks race for its slot
    let mut racing = Vec::new();
    for _ in 0..8 {
        let rt = p.rt.clone();
        racing.push(tokio::spawn(async move {
            let b = &rt.services.backends;
            schedule::tick(
                rt.tenants.as_ref(),
                b.kv.as_ref(),
                b.queue.as_ref(),
                at(t0 + 5 * MIN),
            )
            .await
        }));
    }
    let mut fired = 0;
    for r in racing {
        let r = r.await.unwrap();
        assert!(r.errors.is_empty(), "{:?}", r.errors);
        fired += r.fired;
    }
    // THEN one of them sends it, once
    assert_eq!(fired, 1);
    assert_eq!(
        run_all(&p, 1).await,
        vec![("five".into(), t0 + 5 * MIN, 0, false)]
    );
}

async fn a_crash_at_every_backend_call_of_the_tick_still_runs_the_slot(backend: Backend) {
    // GIVEN a schedule every 5 minutes, and a clean tick of one slot: the tenant's query, the
    // claim, the send, and taking the run out of the outbox
    let p = project(
        backend,
        r#"{"schedules": {"five": {"script": "job", "every": "5m"}}}"#,
    )
    .await;
    let b = p.rt.services.backends.clone();
    let t0 = utc("2026-06-01T00:00:00Z");
    tick(&p, t0).await;
    let plan = Arc::new(Plan::default());
    let f = Faulty {
        kv: b.kv.clone(),
        queue: b.queue.clone(),
        plan: plan.clone(),
    };
    let clean = tick_on(&p, &f, &f, t0 + 5 * MIN).await;
    assert_eq!((clean.fired, plan.calls()), (1, 4));
    run_all(&p, 1).await;
    let mut slot = t0 + 5 * MIN;
    for k in 1..=4 {
        for fault in [Fault::Fail, Fault::LoseReply] {
            // WHEN the tick of the next slot fails at call k (before it is made, or after,
            // its answer lost), as a tick that dies there
            slot += 5 * MIN;
            plan.arm(k, fault);
            let _ = schedule::tick(p.rt.tenants.as_ref(), &f, &f, at(slot)).await;
            plan.disarm();
            // AND ticks come after its lease lapsed
            for i in 1..=2 {
                tick(&p, slot + i * (LEASE_MS + 1)).await;
            }
            // THEN the slot ran: once, or twice when the tick died after sending
            let ran = run_all(&p, 1).await;
            let n = ran.iter().filter(|r| r.1 == slot).count();
            assert!(
                (1..=2).contains(&n) && ran.iter().all(|r| r.1 == slot),
                "fault {fault:?} at call {k} ({:?}): {ran:?}",
                plan.hit()
            );
            // A call that failed before it was made, up to the send, leaves nothing sent twice.
            if fault == Fault::Fail && k <= 3 {
                assert_eq!(n, 1, "fault {fault:?} at call {k}: {ran:?}");
            }
        }
    }
}

/// On moto: the tick function's runtime (tenants read from the scripts bucket, as
/// `functions/tick` builds it) sends a tenant's due slot, with the minute's horizon as its
/// delay, and the queue function's run of it records its outcome.
#[cfg(feature = "aws")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_moto_the_tick_function_fires_a_tenants_schedule() {
    let Some(ep) = native_tests::aws_endpoint() else {
        return;
    };
    // GIVEN a tenant with a schedule every minute, deployed to the scripts bucket
    let d = native_core::config::Deployment::from_json("deployment.json", DEPLOYMENT).unwrap();
    let stack = native_tests::aws_env::stack(&ep, &d).await;
    let objects = stack.backends.objects.clone();
    let bucket = &stack.config.scripts_bucket;
    for (key, text) in [
        (
            "acme/config.json",
            r#"{"schedules": {"minutely": {"script": "job", "every": "1m", "event": {"k": 1}}}}"#,
        ),
        ("acme/scripts/job.luau", JOB),
    ] {
        objects
            .put(
                bucket,
                key,
                text.into(),
                native_core::ports::PutMode::Overwrite,
            )
            .await
            .unwrap();
    }
    let rt = native_core::aws::lambda::runtime_for(&stack.config, &stack.clients);
    // WHEN the tick runs at a slot (which starts the schedule) and 5 s before the next
    let slot = (now_ms() / MIN + 2) * MIN;
    let first = rt.tick_schedules(schedule::TickOptions {
        now_ms: slot - MIN,
        ..TickOptions::every_minute(native_core::deadline::tick_end(None))
    });
    assert!(first.await.errors.is_empty());
    let r = rt
        .tick_schedules(schedule::TickOptions {
            now_ms: slot - 5_000,
            ..TickOptions::every_minute(native_core::deadline::tick_end(None))
        })
        .await;
    // THEN it sent the slot's run, delayed until the slot, with the schedule's event
    assert_eq!((r.tenants, r.fired, r.errors.len()), (1, 1, 0), "{r:?}");
    let q = &stack.backends.queue;
    let st = q.stats(QueueKind::Work).await.unwrap();
    assert_eq!(st.waiting, 1, "{st:?}");
    let mut got = Vec::new();
    while got.is_empty() {
        got = q.receive(QueueKind::Work, 10, 30).await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
    let w: WorkMessage = serde_json::from_str(&got[0].body).unwrap();
    assert_eq!(
        (w.tenant.as_str(), w.script.as_str(), &w.event),
        (
            "acme",
            "job",
            &serde_json::json!({"schedule": "minutely", "at_ms": slot, "missed": 0, "event": {"k": 1}})
        )
    );
    // AND the queue function's run of it records that it succeeded
    rt.handle_work_message(&got[0].body, 1).await.unwrap();
    let tenant = rt.tenants.load("acme").await.unwrap();
    let list = Schedules::new(stack.backends.kv.as_ref(), q.as_ref(), &tenant)
        .list()
        .await
        .unwrap();
    let last = list[0].last.as_ref().unwrap();
    assert_eq!((last.at_ms, last.ok), (slot, true));
    assert_eq!(list[0].next_ms, Some(slot + MIN));
}

/// The console's Schedules tab: it lists a tenant's schedules, and its pause form acts only
/// with the page's CSRF token, as the console's other forms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_console_lists_schedules_and_pauses_one_with_the_pages_csrf_token() {
    use crate::common::console::{csrf_of, Operator};
    use native_core::inbound::console;
    // GIVEN a tenant with a schedule, and the console over its runtime, signed in
    let p = project(
        Backend::Embedded,
        r#"{"schedules": {"five": {"script": "job", "every": "5m"}}}"#,
    )
    .await;
    let token = console::new_token();
    let router = console::router(console::Console::new(
        p.rt.clone(),
        token.clone(),
        "test".into(),
        true,
    ));
    let operator = Operator::sign_in(router, &token).await;
    let page = "/console/tenants/acme/schedules";
    let (status, _, html) = operator.get(page).await;
    assert_eq!(status, 200);
    // THEN the page lists the schedule with its slots
    assert!(html.contains("five") && html.contains("every 5m"), "{html}");
    let csrf = csrf_of(&html);
    let action = format!("{page}/act");
    let b = p.rt.services.backends.clone();
    let tenant = p.rt.tenants.load("acme").await.unwrap();
    let paused = || async {
        Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &tenant)
            .list()
            .await
            .unwrap()[0]
            .paused
    };
    // WHEN a pause comes with a forged token THEN it is refused and changes nothing
    let (status, _, _) = operator.post(&action, "name=five&do=pause", "forged").await;
    assert_eq!(status, 403);
    assert!(!paused().await);
    // WHEN it comes with the page's token THEN the schedule is paused
    let (status, _, _) = operator.post(&action, "name=five&do=pause", &csrf).await;
    assert_eq!(status, 303);
    assert!(paused().await);
}
