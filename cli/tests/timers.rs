//! Timers and barrier deadlines through the CLI, driven by `native clock` (no sleeps):
//! `native drain` fires what is due and nothing before, `native timers` lists what is pending,
//! `native barrier ack` and `native barrier cancel` act as a partner or an operator would.

use std::path::Path;

use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::Value;

use crate::support::{ok, run as native};

const WAKE: &str = r#"
function on_invoke(ctx, ev)
  if ev.barrier then
    return native.barrier.create{ id = "b1", members = { "a", "b" }, continue_with = "wake",
      deadline_s = 7200, on_overdue = "wake" }
  end
  if ev.read then return native.db.query("woke") end
  return native.timer.at({ in_s = 86400 }, "wake", { n = 1 })
end
function on_queue(ctx, ev)
  local key = ev.n and "timer" or (ev.overdue and "overdue" or "continued")
  local b = ev.barrier and native.barrier.hydrate(ev)
  native.db.put("woke", key, { pending = b and b.pending, cancelled = b and b.cancelled })
end
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        dir.path(),
        "acme",
        r#"{ "queue": true }"#,
        &[("wake", WAKE)],
    );
    dir
}

fn woke(p: &Path) -> Vec<String> {
    let v: Value =
        serde_json::from_str(&ok(p, &["invoke", "acme", "wake", r#"{"read":true}"#])).unwrap();
    // An empty Luau table encodes as {}: no items.
    v["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .map(|it| it["key"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_timer_a_day_ahead_fires_when_the_clock_gets_there_and_not_before() {
    // GIVEN a timer set a day ahead
    let dir = project();
    let p = dir.path();
    let id: Value = serde_json::from_str(&ok(p, &["invoke", "acme", "wake"])).unwrap();
    let listed = ok(p, &["timers", "acme"]);
    let row: Value = serde_json::from_str(listed.lines().next().unwrap()).unwrap();
    assert_eq!(row["id"], id);
    assert_eq!(row["script"], "wake");
    // WHEN 23 hours pass and the queues are drained THEN it has not fired
    ok(p, &["clock", "advance", "23h"]);
    ok(p, &["drain", "--wait"]);
    assert!(woke(p).is_empty());
    // WHEN the day is up THEN drain fires it, once
    ok(p, &["clock", "advance", "2h"]);
    ok(p, &["drain", "--wait"]);
    assert_eq!(woke(p), ["timer"]);
    assert_eq!(ok(p, &["timers", "acme"]), "");
}

#[test]
fn an_overdue_barrier_is_handed_over_and_cancel_continues_it_once() {
    // GIVEN a barrier of a and b with a two-hour deadline; a acked through the CLI
    let dir = project();
    let p = dir.path();
    ok(p, &["invoke", "acme", "wake", r#"{"barrier":true}"#]);
    let r: Value = serde_json::from_str(&ok(p, &["barrier", "ack", "acme", "b1", "a"])).unwrap();
    assert_eq!(r["complete"], false);
    // WHEN the deadline passes THEN the overdue script runs, seeing one pending member
    ok(p, &["clock", "advance", "1h"]);
    ok(p, &["drain"]);
    assert!(woke(p).is_empty(), "not before the deadline");
    ok(p, &["clock", "advance", "61m"]);
    ok(p, &["drain"]);
    assert_eq!(woke(p), ["overdue"]);
    // WHEN an operator cancels it THEN the continuation runs once, seeing why
    let r: Value = serde_json::from_str(&ok(
        p,
        &[
            "barrier",
            "cancel",
            "acme",
            "b1",
            "--reason",
            "partner down",
        ],
    ))
    .unwrap();
    assert_eq!(r["resolved"], 1);
    assert_eq!(woke(p), ["continued", "overdue"]);
    let again = native(p, &["barrier", "ack", "acme", "b1", "b", "--error", "late"]);
    let r: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(r["duplicate"], true);
    let st: Value = serde_json::from_str(&ok(p, &["barrier", "status", "acme", "b1"])).unwrap();
    assert_eq!(
        (st["failed"].as_u64(), st["dispatched"].as_bool()),
        (Some(1), Some(true))
    );
}
