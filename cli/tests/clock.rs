//! `native clock`: the embedded backend's project clock, followed by every process on the
//! project, so that time-based behaviour is tested without sleeping.

use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::Value;

use crate::support::{ok, run as native};

const BARRIER: &str = r#"
function on_invoke(ctx, ev)
  if ev.create then
    return native.barrier.create{ id = "b1", members = { "a", "b" }, deadline_s = 3600 }
  end
  return native.barrier.ack("b1", ev.member, { ok = true })
end
"#;
const NOW: &str = "function on_invoke(ctx, ev) return { time = os.time(), date = os.date(\"!%Y-%m-%d\", os.time()) } end";
const LATE: &str = r#"
function on_invoke(ctx, ev) return native.db.get("p", "late") end
function on_queue(ctx, ev) native.db.put("p", "late", ev) end
"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        dir.path(),
        "acme",
        r#"{ "queue": true }"#,
        &[("barrier", BARRIER), ("now", NOW), ("late", LATE)],
    );
    dir
}

#[test]
fn a_week_old_barrier_expires_after_advancing_the_clock_8d() {
    // GIVEN a barrier created now, one member acked
    let dir = project();
    let p = dir.path();
    ok(p, &["invoke", "acme", "barrier", r#"{"create":true}"#]);
    ok(p, &["invoke", "acme", "barrier", r#"{"member":"a"}"#]);
    ok(p, &["barrier", "status", "acme", "b1"]);
    let before: Value = serde_json::from_str(&ok(p, &["invoke", "acme", "now"])).unwrap();
    // WHEN the project clock moves 8 days ahead (no sleep)
    let shown: Value = serde_json::from_str(&ok(p, &["clock", "advance", "8d"])).unwrap();
    assert_eq!(shown["offset_ms"], 8 * 86_400_000i64);
    // THEN another process sees the barrier expired: the ack is refused, the status gone
    let o = native(p, &["invoke", "acme", "barrier", r#"{"member":"b"}"#]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("expired"), "{err}");
    assert!(!native(p, &["barrier", "status", "acme", "b1"])
        .status
        .success());
    // AND scripts' os.time follows the clock
    let after: Value = serde_json::from_str(&ok(p, &["invoke", "acme", "now"])).unwrap();
    let moved = after["time"].as_i64().unwrap() - before["time"].as_i64().unwrap();
    assert!(
        (8 * 86_400..8 * 86_400 + 60).contains(&moved),
        "{before} -> {after}"
    );
    assert_ne!(before["date"], after["date"]);
    // AND show and reset report the offset
    let shown: Value = serde_json::from_str(&ok(p, &["clock", "show"])).unwrap();
    assert_eq!(shown["offset_ms"], 8 * 86_400_000i64);
    let shown: Value = serde_json::from_str(&ok(p, &["clock", "reset"])).unwrap();
    assert_eq!(shown["offset_ms"], 0);
}

#[test]
fn a_delayed_message_is_due_once_the_clock_passes_its_delay() {
    // GIVEN a message delayed 15 minutes
    let dir = project();
    let p = dir.path();
    ok(
        p,
        &[
            "send",
            "acme",
            "late",
            r#"{"n":1}"#,
            "--delay",
            "900",
            "--no-drain",
        ],
    );
    ok(p, &["drain"]);
    assert_eq!(
        ok(p, &["invoke", "acme", "late", "--no-drain"]).trim(),
        "null"
    );
    // WHEN the clock advances 15 minutes and the queues are drained
    ok(p, &["clock", "advance", "15m"]);
    ok(p, &["drain"]);
    // THEN it ran
    let got: Value =
        serde_json::from_str(&ok(p, &["invoke", "acme", "late", "--no-drain"])).unwrap();
    assert_eq!(got, serde_json::json!({ "n": 1 }));
    // AND bad durations are usage errors
    let o = native(p, &["clock", "advance", "2 days"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("90s, 2h, 8d"));
}
