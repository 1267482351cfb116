//! End-to-end tests of `native serve` over real HTTP on 127.0.0.1: the binary is spawned on a
//! free port, its first stdout line read for the address, and requests sent over TCP. (A file
//! of its own beside `cli.rs`: these tests hold a server process and an HTTP client.)

use std::net::TcpStream;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use native_tests::serve::Server;
use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::{json, Value};

use crate::support::{http, native_bin, ok as native};

/// A new API key of `tenant`, made with `native keys create`.
fn key(project: &Path, tenant: &str) -> String {
    let out = native(project, &["keys", "create", tenant]);
    out.lines().next().unwrap().to_string()
}

/// `native serve` on `project`, from this crate's binary.
fn serve(project: &Path) -> Server {
    Server::start(&native_bin(), project, true)
}

fn invoke(addr: &str, script: &str, key: &str, body: &str) -> (u16, Value) {
    http(
        addr,
        "POST",
        &format!("/v1/invoke/{script}"),
        Some(&format!("Bearer {key}")),
        body.as_bytes(),
    )
}

const HELLO: &str =
    r#"function on_invoke(ctx, ev) return { tenant = ctx.tenant, hello = ev.name } end"#;
const SLOW: &str = r#"function on_invoke(ctx, ev)
  local t = os.clock()
  while os.clock() - t < 1.5 do end
  return "done"
end"#;

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        dir.path(),
        "acme",
        "{}",
        &[("hello", HELLO), ("slow", SLOW), ("secret", HELLO)],
    );
    write_tenant(dir.path(), "globex", "{}", &[("hello", HELLO)]);
    dir
}

#[test]
fn serve_invokes_over_http_with_tenant_keys_and_clear_errors() {
    // GIVEN a project, keys made with `native keys create`, and `native serve` on a free port
    let dir = project();
    let p = dir.path();
    let acme = native(p, &["keys", "create", "acme", "--name", "ci"]);
    let acme = acme.lines().next().unwrap().to_string();
    let globex = key(p, "globex");
    let srv = serve(p);
    let a = srv.addr.as_str();

    // WHEN acme's key invokes hello THEN its return value comes back
    assert_eq!(
        invoke(a, "hello", &acme, r#"{"name":"ada"}"#),
        (200, json!({ "tenant": "acme", "hello": "ada" }))
    );
    assert_eq!(
        http(a, "GET", "/healthz", None, b""),
        (200, json!({ "status": "ok" }))
    );

    // AND requests without a valid key are 401
    let missing = http(a, "POST", "/v1/invoke/hello", None, b"{}");
    assert_eq!(
        (missing.0, missing.1["code"].clone()),
        (401, json!("unauthenticated"))
    );
    let malformed = http(
        a,
        "POST",
        "/v1/invoke/hello",
        Some("Bearer not-a-key"),
        b"{}",
    );
    assert_eq!(malformed.0, 401);
    assert!(malformed.1["message"]
        .as_str()
        .unwrap()
        .contains("malformed"));
    let unknown = invoke(
        a,
        "hello",
        &format!("nk_{}_{}", "0".repeat(16), "1".repeat(64)),
        "{}",
    );
    assert_eq!(unknown.0, 401);

    // AND a revoked key stops working (revoked from another process)
    let temp = native(p, &["keys", "create", "acme", "--name", "temp"]);
    let temp = temp.lines().next().unwrap();
    assert_eq!(invoke(a, "hello", temp, "{}").0, 200);
    let id = &temp[3..19];
    let listed = native(p, &["keys", "list", "acme"]);
    assert!(
        listed.contains(id) && listed.contains("\"temp\"") && !listed.contains(&temp[20..]),
        "{listed}"
    );
    native(p, &["keys", "revoke", "acme", id]);
    let revoked = invoke(a, "hello", temp, "{}");
    assert_eq!(revoked.0, 401);
    assert!(
        revoked.1["message"].as_str().unwrap().contains("revoked"),
        "{}",
        revoked.1
    );

    // AND another tenant's key reaches only its own scripts
    assert_eq!(invoke(a, "secret", &globex, "{}").0, 404);
    assert_eq!(
        invoke(a, "hello", &globex, "{}"),
        (200, json!({ "tenant": "globex" }))
    );

    // AND bad bodies and unknown scripts are refused with their codes
    let bad = invoke(a, "hello", &acme, "{\"name\":");
    assert_eq!(
        (bad.0, bad.1["code"].clone()),
        (400, json!("invalid_argument"))
    );
    let big = format!("\"{}\"", "x".repeat(6 * 1024 * 1024));
    let over = invoke(a, "hello", &acme, &big);
    assert_eq!(
        (over.0, over.1["code"].clone()),
        (413, json!("resource_exhausted"))
    );
    let nope = invoke(a, "nope", &acme, "{}");
    assert_eq!((nope.0, nope.1["code"].clone()), (404, json!("not_found")));

    // WHEN SIGTERM comes THEN it exits 0
    let (code, err) = srv.terminate();
    assert_eq!(code, 0, "{err}");
    // AND no key was ever logged
    assert!(
        !err.contains(&acme[20..]) && !err.contains(&globex[20..]),
        "{err}"
    );
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits_0() {
    // GIVEN a server running a 1.5 s request
    let dir = project();
    let key = key(dir.path(), "acme");
    let srv = serve(dir.path());
    let addr = srv.addr.clone();
    let (k, a) = (key.clone(), addr.clone());
    let in_flight = std::thread::spawn(move || invoke(&a, "slow", &k, "{}"));
    std::thread::sleep(Duration::from_millis(500));
    // WHEN SIGTERM arrives while it runs
    let (code, err) = srv.terminate();
    // THEN the request still gets its answer, and the server exits 0 having said why
    assert_eq!(in_flight.join().unwrap(), (200, json!("done")));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("SIGTERM"), "{err}");
    // AND nothing listens any more
    assert!(TcpStream::connect(&addr).is_err());
}

#[test]
fn serve_processes_a_put_from_another_process_within_a_second() {
    // GIVEN the README's demo project (`native init`) served by `native serve`
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("proj");
    let o = Command::new(native_bin())
        .arg("init")
        .arg(&p)
        .output()
        .unwrap();
    assert!(o.status.success());
    let _srv = serve(&p);
    // WHEN another process puts a document without draining
    native(
        &p,
        &[
            "put",
            "hello",
            "In",
            "greetings/Ada.json",
            "--data",
            r#"{"name":"Ada"}"#,
            "--no-drain",
        ],
    );
    let put_at = Instant::now();
    // THEN the router, greet and finish run by themselves: the result appears within a second
    loop {
        let o = Command::new(native_bin())
            .arg("--project")
            .arg(&p)
            .args(["get", "hello", "Out", "results/Ada.txt"])
            .output()
            .unwrap();
        if o.status.success() {
            assert_eq!(String::from_utf8_lossy(&o.stdout), "Hello, Ada!");
            break;
        }
        assert!(
            put_at.elapsed() < Duration::from_secs(1),
            "not handled within a second"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn serve_logs_every_request_and_the_error_of_a_failed_invocation() {
    // GIVEN a served project with a script that fails on its line 2
    let dir = project();
    let p = dir.path();
    write_tenant(
        p,
        "acme",
        "{}",
        &[
            ("hello", HELLO),
            (
                "boom",
                "function on_invoke(ctx, ev)\n  error('the ledger is closed')\nend",
            ),
        ],
    );
    let key = key(p, "acme");
    let srv = serve(p);
    let a = srv.addr.clone();
    // WHEN it answers a success, a failing script, a health check and a forged callback
    assert_eq!(invoke(&a, "hello", &key, "{}").0, 200);
    assert_eq!(invoke(&a, "boom", &key, "{}").0, 500);
    assert_eq!(http(&a, "GET", "/healthz", None, b"").0, 200);
    let token = "forged-token-that-must-not-be-logged";
    assert_eq!(
        http(&a, "POST", &format!("/v1/callback/{token}"), None, b"").0,
        401
    );
    // AND a body over its route's cap, which the listener turns away before any route runs
    let big = vec![b' '; 64 * 1024];
    assert_eq!(http(&a, "POST", "/v1/callback/x", None, &big).0, 413);
    let (code, err) = srv.terminate();
    assert_eq!(code, 0, "{err}");
    // THEN stderr has one access record per request: method, path, status, duration, tenant
    let records: Vec<Value> = err
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["msg"] == "request")
        .collect();
    assert_eq!(records.len(), 5, "{err}");
    let ok = &records[0];
    assert_eq!(
        (
            &ok["method"],
            &ok["path"],
            &ok["status"],
            &ok["tenant"],
            &ok["level"]
        ),
        (
            &json!("POST"),
            &json!("/v1/invoke/hello"),
            &json!(200),
            &json!("acme"),
            &json!("info")
        ),
        "{ok}"
    );
    assert!(ok["duration_ms"].as_f64().is_some(), "{ok}");
    // AND the failed invocation's record is an error naming the script and line
    let failed = &records[1];
    assert_eq!(
        (&failed["status"], &failed["level"]),
        (&json!(500), &json!("error"))
    );
    assert!(
        failed["error"]
            .as_str()
            .unwrap()
            .contains("boom.luau:2: the ledger is closed"),
        "{failed}"
    );
    assert_eq!(records[2]["path"], "/healthz");
    assert_eq!(records[2]["tenant"], Value::Null);
    // AND a callback URL's token (a credential) is never logged
    assert_eq!(records[3]["path"], "/v1/callback/{token}");
    assert!(!err.contains(token), "{err}");
    // AND the refused body is logged with the status the caller got, and why
    assert_eq!(records[4]["status"], 413, "{}", records[4]);
    assert!(
        records[4]["error"]
            .as_str()
            .unwrap()
            .contains("takes at most 16384 bytes"),
        "{}",
        records[4]
    );
}

#[test]
fn a_running_server_follows_clock_advance_at_once() {
    // GIVEN a served project with a script that tells the time
    let dir = project();
    let p = dir.path();
    write_tenant(
        p,
        "acme",
        "{}",
        &[("now", "function on_invoke() return os.time() end")],
    );
    let key = key(p, "acme");
    let srv = serve(p);
    let a = srv.addr.clone();
    let (_, before) = invoke(&a, "now", &key, "{}");
    for day in 1..=3i64 {
        // WHEN another process advances the clock a day, and a request follows at once
        native(p, &["clock", "advance", "1d"]);
        let (status, now) = invoke(&a, "now", &key, "{}");
        // THEN the server's scripts already see the new time (no wait for a queue poll)
        assert_eq!(status, 200);
        let moved = now.as_i64().unwrap() - before.as_i64().unwrap();
        assert!(
            (day * 86_400..day * 86_400 + 60).contains(&moved),
            "day {day}: moved {moved} s"
        );
    }
}

#[test]
fn a_running_server_uses_an_edited_module_script_and_config_from_the_next_request() {
    // GIVEN a served project whose script requires a module, each answered once
    let dir = project();
    let p = dir.path();
    write_tenant(
        p,
        "acme",
        r#"{ "config": { "greeting": "hi" } }"#,
        &[
            ("lib/words", "return { word = 'one' }"),
            (
                "main",
                "local w = require('./lib/words')\nfunction on_invoke() return { w = w.word, g = native.config.greeting } end",
            ),
            ("other", "function on_invoke() return 'fine' end"),
        ],
    );
    let key = key(p, "acme");
    let srv = serve(p);
    let a = srv.addr.clone();
    assert_eq!(
        invoke(&a, "main", &key, "{}"),
        (200, json!({"w": "one", "g": "hi"}))
    );
    let scripts = p.join("tenants/acme/scripts");
    // WHEN the module is edited (same length), with no restart
    std::fs::write(scripts.join("lib/words.luau"), "return { word = 'two' }").unwrap();
    // THEN the next request uses it
    assert_eq!(
        invoke(&a, "main", &key, "{}"),
        (200, json!({"w": "two", "g": "hi"}))
    );
    // WHEN the tenant's config changes THEN the next request sees it
    std::fs::write(
        p.join("tenants/acme/config.json"),
        r#"{ "config": { "greeting": "hello" } }"#,
    )
    .unwrap();
    assert_eq!(
        invoke(&a, "main", &key, "{}"),
        (200, json!({"w": "two", "g": "hello"}))
    );
    // WHEN the script no longer compiles THEN it fails with the compile error, and the
    // tenant's other scripts still run
    std::fs::write(
        scripts.join("main.luau"),
        "function on_invoke(\n  x = = 1\nend",
    )
    .unwrap();
    let (status, body) = invoke(&a, "main", &key, "{}");
    assert_eq!(status, 500, "{body}");
    assert!(body.to_string().contains("main.luau:2:"), "{body}");
    assert_eq!(invoke(&a, "other", &key, "{}"), (200, json!("fine")));
}
