//! `native.http.request` against real HTTP servers that each test starts on 127.0.0.1: the
//! allow list, private ranges, redirects, timeouts and the deadline, the body cap,
//! `max_http_requests`, and the vault (placeholders filled only where listed, only for allowed
//! names, values redacted from whatever comes back in every encoding a server may echo).

use crate::common;

use std::sync::atomic::Ordering;

use common::{leak_forms, server, Server};
use native_core::ports::Secret;
use native_tests::TestProject;
use serde_json::{json, Value};

const SECRET: &str = "sk_live/ab+c d?=&é9";

/// A deployment that lets scripts reach 127.0.0.1 (`private` true) or not.
fn deployment(private: bool) -> String {
    json!({ "buckets": { "map": { "Out": "t-out" } }, "http": { "allow_private_networks": private } })
        .to_string()
}

/// A tenant `acme` whose allow list names the test server (as 127.0.0.1 and localhost), with
/// `extra` config fields, running `script` as `s`.
async fn project(srv: &Server, private: bool, extra: Value, script: &str) -> TestProject {
    let mut config = json!({
        "http": { "allow": [
            format!("127.0.0.1:{}", srv.port),
            format!("localhost:{}", srv.port),
            format!("127.0.0.1:{}", srv.chunked_port),
        ] },
        "vault": ["api.key"],
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    let p = TestProject::with_tenants(
        &deployment(private),
        &[("acme", &config.to_string(), &[("s", script)])],
    );
    p.rt.services
        .backends
        .vault
        .set("acme", "api.key", &Secret::new(SECRET.into()))
        .await
        .unwrap();
    p
}

async fn run(p: &TestProject, ev: Value) -> Result<Value, String> {
    p.invoke("acme", "s", ev).await.map_err(|e| e.to_string())
}

const CALL: &str = r#"
function on_invoke(ctx, ev)
  local r = native.http.request(ev)
  return { status = r.status, headers = r.headers, body = r.body }
end"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_request_gets_status_headers_and_body_and_any_status_is_an_answer() {
    // GIVEN a server that echoes requests, and a tenant allowed to call it
    let srv = server().await;
    let p = project(&srv, true, json!({}), CALL).await;
    // WHEN the script POSTs with headers and a body
    let r = run(
        &p,
        json!({ "method": "POST", "url": srv.url("/echo?x=1"), "headers": { "X-Thing": "a" }, "body": "hello" }),
    )
    .await
    .unwrap();
    // THEN the server got all of it and the script the answer
    assert_eq!(r["status"], 200);
    let echo: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
    assert_eq!(echo["method"], "POST");
    assert_eq!(echo["uri"], "/echo?x=1");
    assert_eq!(echo["headers"]["x-thing"], "a");
    assert_eq!(echo["body"], "hello");
    assert_eq!(r["headers"]["content-type"], "application/json");
    // AND a 418 and a redirect are answers: the redirect is not followed
    let r = run(&p, json!({ "url": srv.url("/status/418") }))
        .await
        .unwrap();
    assert_eq!(r["status"], 418);
    let before = srv.hits.load(Ordering::SeqCst);
    let r = run(&p, json!({ "url": srv.url("/redirect") }))
        .await
        .unwrap();
    assert_eq!(r["status"], 302);
    assert_eq!(r["headers"]["location"], "/echo");
    assert_eq!(
        srv.hits.load(Ordering::SeqCst),
        before + 1,
        "the redirect was followed"
    );
    // AND a hostname that resolves to 127.0.0.1 is reached by name
    let url = format!("http://localhost:{}/echo", srv.port);
    let r = run(&p, json!({ "url": url })).await.unwrap();
    assert_eq!(r["status"], 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn hosts_off_the_allow_list_are_refused_before_connecting() {
    // GIVEN a tenant whose allow list names the server on another port only
    let srv = server().await;
    let p = project(
        &srv,
        true,
        json!({ "http": { "allow": ["127.0.0.1:1", "*.example.com"] } }),
        CALL,
    )
    .await;
    // WHEN the script calls the server THEN it is refused, saying what to add where
    let e = run(&p, json!({ "url": srv.url("/echo") }))
        .await
        .unwrap_err();
    assert!(
        e.contains(&format!(
            "s.luau:3: native.http.request: 127.0.0.1 (port {}) is not on the tenant's http.allow list; add \"127.0.0.1:{}\" to http.allow in tenants/acme/config.json",
            srv.port, srv.port
        )),
        "{e}"
    );
    // AND example.com itself is not covered by *.example.com
    let e = run(&p, json!({ "url": "https://example.com/" }))
        .await
        .unwrap_err();
    assert!(e.contains("not on the tenant's http.allow list"), "{e}");
    assert_eq!(
        srv.hits.load(Ordering::SeqCst),
        0,
        "nothing reached the server"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn private_loopback_and_link_local_addresses_are_refused_without_the_switch() {
    // GIVEN a deployment without allow_private_networks, and a tenant that allows every
    // private range by address, and localhost by name
    let srv = server().await;
    let hosts = [
        ("127.0.0.1", "127.0.0.0/8"),
        ("10.1.2.3", "10.0.0.0/8"),
        ("172.16.5.4", "172.16.0.0/12"),
        ("192.168.1.1", "192.168.0.0/16"),
        ("169.254.169.254", "169.254.0.0/16"),
        ("100.64.0.1", "100.64.0.0/10"),
        ("[::1]", "::1"),
        ("[fc00::1]", "fc00::/7"),
        ("[fe80::1]", "fe80::/10"),
        ("localhost", "loopback"),
    ];
    let allow: Vec<String> = hosts
        .iter()
        .map(|(h, _)| format!("{h}:{}", srv.port))
        .collect();
    let p = project(&srv, false, json!({ "http": { "allow": allow } }), CALL).await;
    // WHEN the script calls each THEN each is refused, naming the range, and nothing connects
    for (host, range) in hosts {
        let url = format!("http://{host}:{}/echo", srv.port);
        let e = run(&p, json!({ "url": url })).await.unwrap_err();
        assert!(
            e.contains("resolves to")
                && e.contains(range)
                && e.contains("refused")
                && e.contains("\"allow_private_networks\": true"),
            "{host}: {e}"
        );
    }
    assert_eq!(srv.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_slow_server_meets_timeout_s_and_the_deadline() {
    // GIVEN a server that answers /slow after 4 s, and a tenant with a 2 s deadline
    let srv = server().await;
    let script = r#"
function on_invoke(ctx, ev)
  local ok, err = pcall(native.http.request, ev)
  return { ok = ok, err = tostring(err) }
end"#;
    let p = project(&srv, true, json!({ "limits": { "timeout_s": 2 } }), script).await;
    // WHEN the request's own timeout_s is shorter than the deadline
    let t = std::time::Instant::now();
    let r = run(&p, json!({ "url": srv.url("/slow"), "timeout_s": 1 }))
        .await
        .unwrap();
    // THEN the script gets an error it may catch, after about 1 s
    assert_eq!(r["ok"], false);
    assert!(
        r["err"]
            .as_str()
            .unwrap()
            .contains("native.http.request: no response from 127.0.0.1 within timeout_s = 1 s"),
        "{r}"
    );
    assert!(
        t.elapsed() < std::time::Duration::from_millis(1900),
        "{:?}",
        t.elapsed()
    );
    // WHEN the deadline comes first THEN the invocation fails with the limit, pcall or not
    let t = std::time::Instant::now();
    let e = run(&p, json!({ "url": srv.url("/slow"), "timeout_s": 30 }))
        .await
        .unwrap_err();
    assert!(
        e.contains("limit timeout_s exceeded: the invocation ran past its deadline of 2 s"),
        "{e}"
    );
    assert!(
        t.elapsed() < std::time::Duration::from_millis(3500),
        "{:?}",
        t.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_body_over_max_http_response_mb_fails_the_invocation_while_it_streams() {
    // GIVEN a tenant allowed 1 MB responses, and a server that streams 2 MB without a length
    // and one that declares 2 MB
    let srv = server().await;
    let script = r#"
function on_invoke(ctx, ev)
  local ok, err = pcall(native.http.request, ev)
  return { ok = ok }
end"#;
    let p = project(
        &srv,
        true,
        json!({ "limits": { "max_http_response_mb": 1 } }),
        script,
    )
    .await;
    let chunked = format!("http://127.0.0.1:{}/", srv.chunked_port);
    for url in [chunked, srv.url("/big")] {
        // WHEN the script reads it, even under pcall
        let e = run(&p, json!({ "url": url })).await.unwrap_err();
        // THEN the invocation fails with the limit and its figures
        assert!(
            e.contains("limit max_http_response_mb exceeded: native.http.request: the response from 127.0.0.1 is larger than the 1 MB the tenant allows"),
            "{url}: {e}"
        );
    }
    // AND a body under the cap is read whole, and HEAD, which declares 2 MB but sends
    // nothing, is an answer
    let r = run(&p, json!({ "url": srv.url("/big?bytes=1000") }))
        .await
        .unwrap();
    assert_eq!(r["ok"], true);
    let r = run(&p, json!({ "url": srv.url("/big"), "method": "HEAD" }))
        .await
        .unwrap();
    assert_eq!(r["ok"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn max_http_requests_is_counted_per_invocation() {
    // GIVEN a tenant allowed 2 requests per invocation
    let srv = server().await;
    let script = r#"
function on_invoke(ctx, ev)
  for i = 1, ev.n do
    pcall(native.http.request, { url = ev.url })
  end
  return "done"
end"#;
    let p = project(
        &srv,
        true,
        json!({ "limits": { "max_http_requests": 2 } }),
        script,
    )
    .await;
    // WHEN an invocation makes 2, and the next 2 each
    assert_eq!(
        run(&p, json!({ "n": 2, "url": srv.url("/echo") }))
            .await
            .unwrap(),
        "done"
    );
    assert_eq!(
        run(&p, json!({ "n": 2, "url": srv.url("/echo") }))
            .await
            .unwrap(),
        "done"
    );
    // WHEN one makes a third, caught or not THEN it fails with the limit
    let e = run(&p, json!({ "n": 3, "url": srv.url("/echo") }))
        .await
        .unwrap_err();
    assert!(
        e.contains("limit max_http_requests exceeded: native.http.request would be HTTP request 3 of this invocation and the tenant allows 2"),
        "{e}"
    );
    assert_eq!(srv.hits.load(Ordering::SeqCst), 6, "the third was not sent");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_secret_echoed_back_in_every_encoding_never_reaches_the_script_its_files_or_logs() {
    // GIVEN a server that echoes the authorization header back raw, in base64 (standard and
    // URL-safe, alone and inside Basic credentials), percent-encoded and in hex, in its body,
    // its headers and its error answers
    let srv = server().await;
    let script = r#"
function on_invoke(ctx, ev)
  local r = native.http.request({
    method = "POST", url = ev.url,
    headers = { authorization = "Bearer {{vault:api.key}}" },
    vault = { "header" },
  })
  native.log("info", "got " .. r.body, { headers = r.headers })
  print(r.headers["x-echo"])
  native.bucket.Out.put("resp.json", native.json.encode(r))
  return r
end"#;
    let p = project(&srv, true, json!({}), script).await;
    // WHEN the script calls it with the secret filled into a header
    let r = run(&p, json!({ "url": srv.url("/leak") })).await.unwrap();
    // THEN the server got the secret
    assert_eq!(
        srv.last_auth.lock().unwrap().as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    // AND nothing of it is in the script's result, its file or its logs
    let stored = p.get("acme", "Out", "resp.json").await.unwrap();
    let logs = serde_json::to_string(&*p.log.0.lock().unwrap()).unwrap();
    let result = r.to_string();
    for (what, text) in [("result", &result), ("file", &stored), ("logs", &logs)] {
        for form in leak_forms(SECRET) {
            assert!(!text.contains(&form), "{what} holds {form:?}: {text}");
        }
        assert!(text.contains("[redacted:api.key]"), "{what}: {text}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn vault_names_off_the_list_and_secrets_in_parts_not_listed_are_never_filled() {
    // GIVEN a tenant whose vault list has api.key only
    let srv = server().await;
    let p = project(&srv, true, json!({}), CALL).await;
    p.rt.services
        .backends
        .vault
        .set("acme", "other", &Secret::new("other-secret".into()))
        .await
        .unwrap();
    // WHEN a request uses a name off the list THEN it is refused before anything is sent
    let e = run(
        &p,
        json!({ "url": srv.url("/echo"), "body": "{{vault:other}}", "vault": ["body"] }),
    )
    .await
    .unwrap_err();
    assert!(
        e.contains("native.http.request: vault name \"other\" is not on the tenant's vault list; add it to \"vault\" in tenants/acme/config.json"),
        "{e}"
    );
    assert_eq!(srv.hits.load(Ordering::SeqCst), 0);
    // WHEN placeholders stand in the header and the url but vault lists only the body
    let r = run(
        &p,
        json!({
            "method": "PUT", "url": srv.url("/echo?k={{vault:api.key}}"),
            "headers": { "x-key": "{{vault:api.key}}" }, "body": "key={{vault:api.key}}",
            "vault": ["body"],
        }),
    )
    .await
    .unwrap();
    // THEN only the body got the value; the header and url kept the placeholder as written
    let got = srv.last_body.lock().unwrap().clone();
    assert_eq!(got, format!("key={SECRET}"));
    let echo = r["body"].as_str().unwrap();
    assert!(echo.contains("\"x-key\":\"{{vault:api.key}}\""), "{echo}");
    assert!(echo.contains("k={{vault:api.key}}"), "{echo}");
    assert!(!echo.contains(SECRET), "{echo}");
    // AND a name on the list with no secret says how to set it
    p.rt.services
        .backends
        .vault
        .delete("acme", "api.key")
        .await
        .unwrap();
    let e = run(
        &p,
        json!({ "url": srv.url("/echo"), "headers": { "a": "{{vault:api.key}}" }, "vault": ["header"] }),
    )
    .await
    .unwrap_err();
    assert!(
        e.contains("the vault has no secret \"api.key\" for tenant \"acme\"; set it with `native vault set acme api.key`"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn bad_options_are_refused_with_the_field_and_why() {
    // GIVEN a tenant allowed to call the server
    let srv = server().await;
    let p = project(&srv, true, json!({}), CALL).await;
    let url = srv.url("/echo");
    // WHEN options are wrong THEN each error names the function, the option and what is right
    for (ev, want) in [
        (json!({ "url": url, "methd": "GET" }), "unknown option \"methd\"; the options are method, url, headers, body, timeout_s, vault"),
        (json!({ "url": url, "method": "TRACE" }), "method \"TRACE\" is not one of GET, POST"),
        (json!({}), "url is missing"),
        (json!({ "url": "ftp://x/" }), "must start with https:// or http://"),
        (json!({ "url": url, "timeout_s": 0 }), "timeout_s must be 1 to 900, not 0"),
        (json!({ "url": url, "vault": ["head"] }), "vault lists \"head\"; the parts are \"url\", \"header\" and \"body\""),
        (json!({ "url": url, "vault": ["url", "url", "url", "url"] }), "vault lists more than 3 parts"),
        (json!({ "url": url, "headers": { "host": "x" } }), "header \"host\" is set by the platform"),
        (json!({ "url": url, "headers": { "a": "b\nc" } }), "line break or control character"),
        (json!({ "url": url, "headers": { "a": true } }), "header \"a\" must be a string, not a boolean"),
    ] {
        let e = run(&p, ev.clone()).await.unwrap_err();
        assert!(e.contains("native.http.request: ") && e.contains(want), "{ev}: {e}");
    }
    assert_eq!(srv.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_request_counts_one_data_op() {
    // GIVEN a tenant allowed 2 backend calls per invocation
    let srv = server().await;
    let script = r#"
function on_invoke(ctx, ev)
  for i = 1, ev.n do native.http.request({ url = ev.url }) end
  return "done"
end"#;
    let p = project(
        &srv,
        true,
        json!({ "limits": { "max_data_ops": 2 } }),
        script,
    )
    .await;
    // WHEN an invocation makes 2 requests, and another 3
    assert_eq!(
        run(&p, json!({ "n": 2, "url": srv.url("/echo") }))
            .await
            .unwrap(),
        "done"
    );
    let e = run(&p, json!({ "n": 3, "url": srv.url("/echo") }))
        .await
        .unwrap_err();
    // THEN the third is over max_data_ops
    assert!(e.contains("limit max_data_ops exceeded"), "{e}");
    assert_eq!(srv.hits.load(Ordering::SeqCst), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_secret_in_the_url_is_percent_encoded_and_redacted_from_the_echo() {
    // GIVEN a secret with a space, a slash, '&' and 'é', used in the query of a URL
    let srv = server().await;
    let p = project(&srv, true, json!({}), CALL).await;
    // WHEN the script calls with vault = { "url" }
    let r = run(
        &p,
        json!({ "url": srv.url("/echo?key={{vault:api.key}}&x=1"), "vault": ["url"] }),
    )
    .await
    .unwrap();
    // THEN the server got the value percent-encoded, as one query parameter
    let echo: Value = serde_json::from_str(r["body"].as_str().unwrap()).unwrap();
    assert_eq!(
        echo["uri"], "/echo?key=[redacted:api.key]&x=1",
        "the echoed URI holds the mark, not the value"
    );
    assert!(!r.to_string().contains("sk_live"), "{r}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn https_to_a_server_that_does_not_speak_tls_fails_cleanly() {
    // GIVEN a plain HTTP server, called with https://
    let srv = server().await;
    let p = project(&srv, true, json!({}), CALL).await;
    // WHEN the script calls it THEN the TLS failure is an error naming the host
    let url = format!("https://127.0.0.1:{}/echo", srv.port);
    let e = run(&p, json!({ "url": url })).await.unwrap_err();
    assert!(
        e.contains("native.http.request: TLS with 127.0.0.1:")
            || e.contains("native.http.request: no root certificates"),
        "{e}"
    );
}
