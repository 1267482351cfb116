//! Callback URLs end to end over HTTP on `native serve`: a partner POSTs an outcome to the URL
//! a script made; forged, altered, expired and replayed URLs change nothing. Time moves with
//! `native clock`, which the server follows. And the server fires due timers by itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::{json, Value};

use crate::support::{http, native_bin, ok as native, serve};

const CB: &str = r#"
function on_invoke(ctx, ev)
  native.barrier.create{ id = "b1", members = { "a", "b" }, continue_with = "done" }
  return { url = native.barrier.callback_url("b1", ev.member, { ttl_s = ev.ttl_s }) }
end
"#;
const DONE: &str = r#"
function on_queue(ctx, ev)
  local b = native.barrier.hydrate(ev)
  local n = (native.db.get("runs", "done") or { n = 0 }).n
  native.db.put("runs", "done", { n = n + 1, failed = b.failed })
end
function on_invoke(ctx, ev) return native.db.get("runs", "done") end
"#;

/// A callback URL for a member, made by a script in another process that knows where the
/// server listens.
fn url_for(p: &Path, addr: &str, member: &str, ttl_s: u32) -> String {
    let o = Command::new(native_bin())
        .arg("--project")
        .arg(p)
        .args([
            "invoke",
            "acme",
            "cb",
            &json!({ "member": member, "ttl_s": ttl_s }).to_string(),
        ])
        .env("NATIVE_PUBLIC_URL", format!("http://{addr}"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    v["url"].as_str().unwrap().to_string()
}

fn path_of(url: &str, addr: &str) -> String {
    url.strip_prefix(&format!("http://{addr}"))
        .unwrap()
        .to_string()
}

fn pending(p: &Path) -> u64 {
    let st: Value = serde_json::from_str(&native(p, &["barrier", "status", "acme", "b1"])).unwrap();
    st["pending"].as_u64().unwrap()
}

#[test]
fn a_partner_acks_through_a_callback_url_and_bad_urls_change_nothing() {
    // GIVEN a barrier of a and b, `native serve`, and callback URLs for both (b's for 60 s)
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        p,
        "acme",
        r#"{ "queue": true }"#,
        &[("cb", CB), ("done", DONE)],
    );
    let srv = serve(p);
    let addr = srv.addr.clone();
    let a = path_of(&url_for(p, &addr, "a", 3600), &addr);
    let b = path_of(&url_for(p, &addr, "b", 60), &addr);
    assert!(a.starts_with("/v1/callback/"), "{a}");
    // AND the secret is the project's own, readable by its owner only
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(p.join(".native/callback.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    // WHEN a made-up URL is posted THEN 401
    let forged = format!(
        "/v1/callback/{}.{}",
        hex_of(r#"["acme","b1","a",9999999999]"#),
        "ab".repeat(32)
    );
    assert_eq!(http(&addr, "POST", &forged, None, b"{}").0, 401);
    // WHEN a's URL is altered to name b THEN 401
    let (payload, sig) = a
        .trim_start_matches("/v1/callback/")
        .split_once('.')
        .unwrap();
    let altered_payload = hex_of(
        &String::from_utf8(decode_hex(payload))
            .unwrap()
            .replace("\"a\"", "\"b\""),
    );
    assert_ne!(altered_payload, payload);
    let altered = format!("/v1/callback/{altered_payload}.{sig}");
    let (status, body) = http(&addr, "POST", &altered, None, b"{}");
    assert_eq!(
        (status, body["code"].clone()),
        (401, json!("unauthenticated"))
    );
    // THEN nothing changed
    assert_eq!(pending(p), 2);

    // WHEN a's URL is posted with an outcome THEN a is acked; again: a duplicate
    let (status, body) = http(
        &addr,
        "POST",
        &a,
        None,
        br#"{"ok":true,"result":{"pages":3}}"#,
    );
    assert_eq!(
        (status, body["duplicate"].clone(), body["complete"].clone()),
        (200, json!(false), json!(false))
    );
    let (status, body) = http(&addr, "POST", &a, None, br#"{"ok":false}"#);
    assert_eq!((status, body["duplicate"].clone()), (200, json!(true)));
    assert_eq!(pending(p), 1);
    // AND an outcome that is not one is refused
    assert_eq!(http(&addr, "POST", &b, None, b"[1,2]").0, 400);

    // WHEN b's URL has expired (the clock moves two minutes) THEN 410, and b is still pending
    // (the server picks up the clock as it polls its queues, every 100 ms: wait for it with a
    // URL for a member that is not in the barrier, refused 400 before and 410 after)
    let probe = path_of(&url_for(p, &addr, "not-a-member", 60), &addr);
    native(p, &["clock", "advance", "2m"]);
    let mut probed = 0;
    for _ in 0..50 {
        probed = http(&addr, "POST", &probe, None, b"{}").0;
        if probed == 410 {
            break;
        }
        assert_eq!(probed, 400);
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(probed, 410);
    let (status, body) = http(&addr, "POST", &b, None, br#"{"ok":true}"#);
    assert_eq!(status, 410, "{body}");
    assert_eq!(pending(p), 1);

    // WHEN a new URL for b is posted THEN the barrier completes and continues once
    let b2 = path_of(&url_for(p, &addr, "b", 60), &addr);
    let (status, body) = http(
        &addr,
        "POST",
        &b2,
        None,
        br#"{"ok":false,"error":"no pages"}"#,
    );
    assert_eq!((status, body["complete"].clone()), (200, json!(true)));
    let mut done = Value::Null;
    for _ in 0..50 {
        done = serde_json::from_str(&native(p, &["invoke", "acme", "done", "--no-drain"])).unwrap();
        if !done.is_null() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(done, json!({ "n": 1, "failed": 1 }));
    drop(srv);
}

fn hex_of(s: &str) -> String {
    s.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

const WAKE: &str = r#"
function on_invoke(ctx, ev)
  if ev.read then return native.db.get("woke", "x") end
  return native.timer.at({ in_s = 3600 }, "wake", { n = 1 })
end
function on_queue(ctx, ev) native.db.put("woke", "x", ev) end
"#;

#[test]
fn native_serve_fires_a_due_timer_by_itself_when_the_clock_gets_there() {
    // GIVEN a timer an hour ahead and `native serve` running
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(p, "acme", r#"{ "queue": true }"#, &[("wake", WAKE)]);
    native(p, &["invoke", "acme", "wake", "{}", "--no-drain"]);
    let srv = serve(p);
    let woke = || -> Value {
        serde_json::from_str(&native(
            p,
            &["invoke", "acme", "wake", r#"{"read":true}"#, "--no-drain"],
        ))
        .unwrap()
    };
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(woke(), Value::Null, "not before its time");
    // WHEN the project clock moves an hour ahead (no other verb drains)
    native(p, &["clock", "advance", "61m"]);
    // THEN the server fires it on its own, within a few of its 100 ms polls
    let mut got = Value::Null;
    for _ in 0..50 {
        got = woke();
        if !got.is_null() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(got, json!({ "n": 1 }));
    drop(srv);
}

#[test]
fn verbs_sign_callback_urls_for_the_port_native_serve_listens_on() {
    // GIVEN `native serve` on a port it picked (not the default 8787)
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        p,
        "acme",
        r#"{ "queue": true }"#,
        &[("cb", CB), ("done", DONE)],
    );
    let srv = serve(p);
    assert!(!srv.addr.ends_with(":8787"), "{}", srv.addr);
    // WHEN another process on the project makes a callback URL, with no NATIVE_PUBLIC_URL
    let o = Command::new(native_bin())
        .arg("--project")
        .arg(p)
        .args(["invoke", "acme", "cb", r#"{"member":"a","ttl_s":600}"#])
        .env_remove("NATIVE_PUBLIC_URL")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let url = v["url"].as_str().unwrap();
    // THEN the URL names the server's address, and the server takes it
    let path = path_of(url, &srv.addr);
    let (status, body) = http(&srv.addr, "POST", &path, None, b"");
    assert_eq!(status, 200, "{body}");
}
