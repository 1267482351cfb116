//! The access log of the Fargate server's serve loop (`native_core::inbound::serve`, what
//! `functions/server` runs), over real HTTP on 127.0.0.1: one record per request, the failed
//! invocation's error in it, and requests the listener turns away before any route runs logged
//! with the status the caller got. (`native serve`'s own is tested in cli/tests/serve.rs.)

use std::sync::Arc;
use std::time::Duration;

use native_core::api_keys;
use native_core::inbound::{serve, Hygiene};
use native_tests::{TestProject, DEPLOYMENT};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Sends one request with `Connection: close` and returns its status.
async fn http(addr: &str, path: &str, auth: Option<&str>, body: &[u8]) -> u16 {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(key) = auth {
        head.push_str(&format!("Authorization: Bearer {key}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).await.unwrap();
    // The server may answer (413) before it takes the body: a reset write is fine then.
    let _ = s.write_all(body).await;
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp).await;
    let text = String::from_utf8_lossy(&resp);
    text.split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {text:?}"))
}

/// A project with tenant `acme` and its `scripts`, a key of it, and a runtime logging to the
/// project's log.
async fn acme(
    scripts: &[(&str, &str)],
) -> (TestProject, String, Arc<native_core::runtime::Runtime>) {
    let p = TestProject::with_tenants(DEPLOYMENT, &[("acme", "{}", scripts)]);
    let key = api_keys::create(&*p.rt.services.backends.kv, "acme", "t")
        .await
        .unwrap()
        .key;
    let rt = Arc::new(p.project.runtime().with_log(p.log.clone()));
    (p, key, rt)
}

/// The access log's records.
fn requests(p: &TestProject) -> Vec<Value> {
    p.log
        .0
        .lock()
        .unwrap()
        .iter()
        .filter(|r| r["msg"] == "request")
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_servers_access_log_records_every_request_with_its_error() {
    // Alone in a process: the serve loop's stop ends every rendezvous wait of its process.
    if !native_tests::own_process::alone(
        module_path!(),
        "the_servers_access_log_records_every_request_with_its_error",
    ) {
        return;
    }
    // GIVEN the Fargate server's serve loop over a tenant with a script that fails on line 2
    let (p, key, rt) = acme(&[
        ("ok", "function on_invoke() return 1 end"),
        (
            "boom",
            "function on_invoke()\n  error('no such order')\nend",
        ),
    ])
    .await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve(
        listener,
        rt,
        async move {
            let _ = stop_rx.await;
        },
        Duration::from_secs(5),
        Hygiene::default(),
    ));
    // WHEN it answers a success, a failing script, a caller without a key and a body over the
    // invoke route's 6 MB cap (turned away by the listener, before any route runs)
    assert_eq!(http(&addr, "/v1/invoke/ok", Some(&key), b"{}").await, 200);
    assert_eq!(http(&addr, "/v1/invoke/boom", Some(&key), b"{}").await, 500);
    assert_eq!(http(&addr, "/v1/invoke/ok", None, b"{}").await, 401);
    let big = vec![b' '; 7 * 1024 * 1024];
    assert_eq!(http(&addr, "/v1/invoke/ok", Some(&key), &big).await, 413);
    stop_tx.send(()).unwrap();
    assert!(serving.await.unwrap().unwrap());
    // THEN there is one record per request, in order, with what the caller got
    let records = requests(&p);
    let seen: Vec<_> = records
        .iter()
        .map(|r| (r["status"].clone(), r["tenant"].clone(), r["level"].clone()))
        .collect();
    assert_eq!(
        seen,
        [
            (json!(200), json!("acme"), json!("info")),
            (json!(500), json!("acme"), json!("error")),
            (json!(401), Value::Null, json!("warn")),
            (json!(413), Value::Null, json!("warn")),
        ],
        "{records:?}"
    );
    assert!(records
        .iter()
        .all(|r| r["method"] == "POST" && r["duration_ms"].is_number()));
    // AND the failure's record says which script and line failed, the refusal why
    let error = |i: usize| records[i]["error"].as_str().unwrap_or("").to_string();
    assert!(
        error(1).contains("boom.luau:2: no such order"),
        "{}",
        error(1)
    );
    assert!(
        error(3).contains("takes at most 6291456 bytes"),
        "{}",
        error(3)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_record_is_bounded_and_console_requests_are_logged_without_their_token() {
    use native_core::inbound::{app, console, serve_app};
    // GIVEN native serve's app (the API and the console) over a tenant whose script fails
    // with a 100 KB message
    let (p, key, rt) = acme(&[(
        "long",
        "function on_invoke() error(string.rep('e', 100000)) end",
    )])
    .await;
    let token = console::new_token();
    let c = console::Console::new(rt.clone(), token.clone(), "test".into(), true);
    let hygiene = Hygiene::default();
    let served = app(rt, &hygiene).with_console(console::router(c));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(serve_app(
        listener,
        served,
        hygiene,
        async move {
            let _ = stop_rx.await;
        },
        Duration::from_secs(5),
    ));
    // WHEN a caller asks a 63 KB path, a 63 KB rendezvous method, the failing script, and
    // the console with its token in the query
    let long = "x".repeat(63 * 1024);
    assert_eq!(http(&addr, &format!("/{long}"), None, b"").await, 404);
    let method = format!("/com.evrblk.grackle.v1beta.GrackleApi/{long}");
    assert_eq!(http(&addr, &method, Some(&key), b"{}").await, 404);
    assert_eq!(http(&addr, "/v1/invoke/long", Some(&key), b"{}").await, 500);
    let mut s = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let get =
        format!("GET /console/?token={token} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    s.write_all(get.as_bytes()).await.unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp).await;
    assert!(
        resp.starts_with(b"HTTP/1.1 303"),
        "{}",
        String::from_utf8_lossy(&resp)
    );
    stop_tx.send(()).unwrap();
    serving.await.unwrap();
    // THEN every record is a few KB at most, its method, path and status kept
    let records = requests(&p);
    assert_eq!(records.len(), 4, "{records:?}");
    for r in &records {
        let text = r.to_string();
        assert!(text.len() < 4096, "a record of {} bytes", text.len());
        assert!(r["method"].is_string() && r["status"].is_number(), "{text}");
        assert!(r["path"].as_str().unwrap().starts_with('/'), "{text}");
        assert!(!text.contains(&token), "the console's token logged: {text}");
    }
    let statuses: Vec<_> = records.iter().map(|r| r["status"].clone()).collect();
    assert_eq!(statuses, [json!(404), json!(404), json!(500), json!(303)]);
    assert_eq!(records[3]["path"], "/console/");
}

/// The console's guard over real requests: a token in the query in any spelling is taken out
/// by the redirect, and past the wrong tokens of a second none is compared (429).
#[tokio::test]
async fn the_console_strips_its_token_in_every_spelling_and_limits_wrong_ones() {
    use axum::body::Body;
    use native_core::inbound::console;
    use tower::ServiceExt;
    let (_p, _key, rt) = acme(&[]).await;
    let token = console::new_token();
    let router = console::router(console::Console::new(
        rt,
        token.clone(),
        "test".into(),
        true,
    ));
    let get = |uri: String| {
        let router = router.clone();
        async move {
            router
                .oneshot(axum::http::Request::get(uri).body(Body::empty()).unwrap())
                .await
                .unwrap()
        }
    };
    for spelling in ["token", "tok%65n", "%74oken", "t%6F%6B%65%6E"] {
        let r = get(format!("/console/dlq?a=1&{spelling}={token}&b=2")).await;
        assert_eq!(r.status(), 303, "{spelling}");
        let to = r.headers()["location"].to_str().unwrap();
        assert_eq!(to, "/console/dlq?a=1&b=2", "{spelling}");
    }
    let wrong = "0".repeat(64);
    let mut statuses = Vec::new();
    // (Up to 100, in case the first ones straddle two seconds.)
    while statuses.len() < 100 && !statuses.contains(&429) {
        statuses.push(
            get(format!("/console/?token={wrong}"))
                .await
                .status()
                .as_u16(),
        );
    }
    assert!(statuses.contains(&401), "{statuses:?}");
    assert!(statuses.contains(&429), "{statuses:?}");
}
