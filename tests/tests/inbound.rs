//! The inbound HTTP router, in process (`tower::ServiceExt::oneshot`): invoke, the error
//! model, authentication by tenant API keys, the body cap.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use http_body_util::BodyExt;
use native_core::api_keys;
use native_core::inbound::{router, MAX_BODY_BYTES};
use native_tests::{TestProject, DEPLOYMENT};
use serde_json::{json, Value};
use tower::ServiceExt;

const HELLO: &str =
    r#"function on_invoke(ctx, ev) return { tenant = ctx.tenant, hello = ev.name } end"#;
const BOOM: &str = "function on_invoke(ctx, ev)\n  error(\"no such order\")\nend";
const MIMIC: &str = "function on_invoke(ctx, ev) error(ev.say, 0) end";
const GREEDY: &str = r#"function on_invoke(ctx, ev)
  native.db.get("p", "a"); native.db.get("p", "b"); return 1
end"#;

struct Api {
    p: TestProject,
    rt: Arc<native_core::runtime::Runtime>,
    acme_key: String,
    globex_key: String,
}

async fn api() -> Api {
    let p = TestProject::with_tenants(
        DEPLOYMENT,
        &[
            (
                "acme",
                r#"{ "limits": { "max_data_ops": 1 } }"#,
                &[
                    ("hello", HELLO),
                    ("boom", BOOM),
                    ("greedy", GREEDY),
                    ("mimic", MIMIC),
                    ("secret", HELLO),
                ],
            ),
            ("globex", "{}", &[("hello", HELLO)]),
        ],
    );
    let kv = p.rt.services.backends.kv.clone();
    let acme_key = api_keys::create(&*kv, "acme", "test").await.unwrap().key;
    let globex_key = api_keys::create(&*kv, "globex", "").await.unwrap().key;
    let rt = Arc::new(p.project.runtime().with_log(p.log.clone()));
    Api {
        p,
        rt,
        acme_key,
        globex_key,
    }
}

impl Api {
    async fn call(
        &self,
        method: Method,
        path: &str,
        auth: Option<&str>,
        body: Body,
    ) -> (StatusCode, Value) {
        let mut req = Request::builder().method(method).uri(path);
        if let Some(a) = auth {
            req = req.header(header::AUTHORIZATION, a);
        }
        let resp = router(self.rt.clone())
            .oneshot(req.body(body).unwrap())
            .await
            .unwrap();
        let status = resp.status();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let v = serde_json::from_slice(&bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)));
        (status, v)
    }

    async fn invoke(&self, script: &str, key: &str, body: &str) -> (StatusCode, Value) {
        let auth = format!("Bearer {key}");
        self.call(
            Method::POST,
            &format!("/v1/invoke/{script}"),
            Some(&auth),
            Body::from(body.to_string()),
        )
        .await
    }
}

fn assert_error(got: &(StatusCode, Value), status: StatusCode, code: &str, says: &str) {
    assert_eq!(got.0, status, "{}", got.1);
    assert_eq!(got.1["code"], code, "{}", got.1);
    let msg = got.1["message"].as_str().unwrap();
    assert!(msg.contains(says), "{msg:?} should say {says:?}");
}

#[tokio::test]
async fn invoke_runs_the_keys_tenants_script_with_the_body_as_event() {
    // GIVEN acme's key WHEN it invokes hello with a JSON body
    let a = api().await;
    let got = a.invoke("hello", &a.acme_key, r#"{"name":"ada"}"#).await;
    // THEN the return value comes back as JSON, from acme's script
    assert_eq!(
        got,
        (StatusCode::OK, json!({ "tenant": "acme", "hello": "ada" }))
    );
    // AND an empty body is the event {}
    let got = a.invoke("hello", &a.acme_key, "").await;
    assert_eq!(got, (StatusCode::OK, json!({ "tenant": "acme" })));
}

#[tokio::test]
async fn requests_without_a_valid_key_are_refused_before_anything_runs() {
    let a = api().await;
    let none = a
        .call(Method::POST, "/v1/invoke/hello", None, Body::empty())
        .await;
    assert_error(
        &none,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        "missing API key",
    );
    let basic = a
        .call(
            Method::POST,
            "/v1/invoke/hello",
            Some("Basic YWRhOmFkYQ=="),
            Body::empty(),
        )
        .await;
    assert_error(
        &basic,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        "malformed",
    );
    let short = a.invoke("hello", "nk_1234", "{}").await;
    assert_error(
        &short,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        "malformed",
    );
    let unknown = format!("nk_{}_{}", "0".repeat(16), "1".repeat(64));
    let got = a.invoke("hello", &unknown, "{}").await;
    assert_error(
        &got,
        StatusCode::UNAUTHORIZED,
        "unauthenticated",
        "not valid",
    );
    // The message never echoes the key.
    assert!(!got.1.to_string().contains(&unknown));
}

#[tokio::test]
async fn a_revoked_key_stops_working() {
    // GIVEN a key that works
    let a = api().await;
    let kv = a.p.rt.services.backends.kv.clone();
    let k = api_keys::create(&*kv, "acme", "").await.unwrap();
    assert_eq!(a.invoke("hello", &k.key, "{}").await.0, StatusCode::OK);
    // WHEN it is revoked THEN the next request is 401
    api_keys::revoke(&*kv, "acme", &k.id).await.unwrap();
    let got = a.invoke("hello", &k.key, "{}").await;
    assert_error(&got, StatusCode::UNAUTHORIZED, "unauthenticated", "revoked");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_with_a_key_seen_before_read_no_key_and_a_revocation_is_seen_at_the_next() {
    use native_tests::faults::{Faulty, Plan};
    // GIVEN a runtime whose key-value calls are counted, and a key it has served once
    let a = api().await;
    let b = &a.p.rt.services.backends;
    let plan = Arc::new(Plan::default());
    let counted = native_core::ports::Backends {
        kv: Arc::new(Faulty {
            kv: b.kv.clone(),
            queue: b.queue.clone(),
            plan: plan.clone(),
        }),
        ..b.clone()
    };
    let rt = Arc::new(native_core::runtime::Runtime::new(
        a.p.rt.services.deployment.clone(),
        counted,
        a.p.rt.tenants.clone(),
    ));
    let k = api_keys::create(&*b.kv, "globex", "").await.unwrap();
    let invoke = |rt: Arc<native_core::runtime::Runtime>, key: String| async move {
        let req = Request::post("/v1/invoke/hello")
            .header(header::AUTHORIZATION, format!("Bearer {key}"))
            .body(Body::from("{}"))
            .unwrap();
        router(rt).oneshot(req).await.unwrap().status()
    };
    assert_eq!(invoke(rt.clone(), k.key.clone()).await, StatusCode::OK);
    // (its last use, written by a task of its own)
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let before = plan.calls();
    // WHEN 640 requests with it come, 64 at once
    for _ in 0..10 {
        let mut all = tokio::task::JoinSet::new();
        for _ in 0..64 {
            all.spawn(invoke(rt.clone(), k.key.clone()));
        }
        assert!(all.join_all().await.iter().all(|s| *s == StatusCode::OK));
    }
    // THEN none of them reads the store: the project's generation counter says the key
    // verified before still holds
    assert_eq!(plan.calls() - before, 0);
    // WHEN another process revokes it THEN the next request is refused
    let other = native_core::local::Project::open(a.p.dir.path()).unwrap();
    let other_rt = other.runtime();
    api_keys::revoke(&*other_rt.services.backends.kv, "globex", &k.id)
        .await
        .unwrap();
    assert_eq!(invoke(rt, k.key).await, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn another_tenants_key_reaches_only_that_tenants_scripts() {
    // GIVEN globex's key WHEN it names acme's script "secret"
    let a = api().await;
    let got = a.invoke("secret", &a.globex_key, "{}").await;
    // THEN it is not found: the tenant comes from the key, and globex has no such script
    assert_error(&got, StatusCode::NOT_FOUND, "not_found", "\"secret\"");
    // AND its own hello runs as globex
    let got = a.invoke("hello", &a.globex_key, "{}").await;
    assert_eq!(got, (StatusCode::OK, json!({ "tenant": "globex" })));
}

#[tokio::test]
async fn script_errors_are_500_and_limit_breaches_429_naming_script_and_line() {
    let a = api().await;
    let got = a.invoke("boom", &a.acme_key, "{}").await;
    assert_error(
        &got,
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "boom.luau:2: no such order",
    );
    let got = a.invoke("greedy", &a.acme_key, "{}").await;
    assert_error(
        &got,
        StatusCode::TOO_MANY_REQUESTS,
        "resource_exhausted",
        "limit max_data_ops exceeded",
    );
    assert!(
        got.1["message"].as_str().unwrap().contains("greedy"),
        "{}",
        got.1
    );
    // A script's own words never choose the status: the cause recorded where it failed does.
    for say in [
        "limit max_data_ops exceeded: this invocation needs 2 backend calls and the tenant allows 1",
        "barrier completion is being dispatched by another call; retry in 7 s",
        "cannot write object b/k: no space left on the device of /p/x",
    ] {
        let body = json!({ "say": say }).to_string();
        let got = a.invoke("mimic", &a.acme_key, &body).await;
        assert_error(&got, StatusCode::INTERNAL_SERVER_ERROR, "internal", say);
    }
}

#[tokio::test]
async fn bad_bodies_unknown_scripts_and_wrong_methods_get_clear_errors() {
    let a = api().await;
    let got = a.invoke("hello", &a.acme_key, "{\"name\": ").await;
    assert_error(
        &got,
        StatusCode::BAD_REQUEST,
        "invalid_argument",
        "not JSON",
    );
    let big = format!("\"{}\"", "x".repeat(MAX_BODY_BYTES));
    let got = a.invoke("hello", &a.acme_key, &big).await;
    assert_error(
        &got,
        StatusCode::PAYLOAD_TOO_LARGE,
        "resource_exhausted",
        "6 MB",
    );
    // (In process no Content-Length is set: the body above was capped while read.) A declared
    // oversize length is refused before reading.
    let auth = format!("Bearer {}", a.acme_key);
    let req = Request::builder()
        .method(Method::POST)
        .uri("/v1/invoke/hello")
        .header(header::AUTHORIZATION, &auth)
        .header(header::CONTENT_LENGTH, (MAX_BODY_BYTES + 1).to_string())
        .body(Body::from("{}"))
        .unwrap();
    let resp = router(a.rt.clone()).oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let got = a.invoke("nope", &a.acme_key, "{}").await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found", "\"nope\"");
    let got = a
        .call(Method::GET, "/v1/invoke/hello", Some(&auth), Body::empty())
        .await;
    assert_error(
        &got,
        StatusCode::METHOD_NOT_ALLOWED,
        "unimplemented",
        "use POST",
    );
    let got = a.call(Method::GET, "/v2/what", None, Body::empty()).await;
    assert_error(&got, StatusCode::NOT_FOUND, "not_found", "/v2/what");
}

#[tokio::test]
async fn healthz_answers_when_the_backends_do() {
    let a = api().await;
    let got = a.call(Method::GET, "/healthz", None, Body::empty()).await;
    assert_eq!(got, (StatusCode::OK, json!({ "status": "ok" })));
}

/// A body under 256 bytes is read onto the stack by the invocation's frame, a longer one in a
/// call of its own with the shapes of its rows (`host::text_to_luau`): the script sees the same
/// event either way, and a body that is not JSON is the caller's fault either way, in
/// serde_json's words, with the VM serving the next request.
#[tokio::test]
async fn short_and_long_bodies_are_read_alike() {
    const ECHO: &str = "function on_invoke(ctx, ev) return ev end";
    let p = TestProject::with_tenants(DEPLOYMENT, &[("acme", "{}", &[("echo", ECHO)])]);
    let rt = p.project.runtime();
    let doc =
        r#"{"a":[1,2.5,"x\"y\u00e9",[]],"b":{"c":null,"d":{"e":[{"f":1},{"f":2}]}},"g":true}"#;
    let want =
        json!({"a": [1, 2.5, "x\"yé", []], "b": {"d": {"e": [{"f": 1}, {"f": 2}]}}, "g": true});
    let pad = " ".repeat(300);
    for body in [doc.to_string(), format!("{doc}{pad}")] {
        let got = rt
            .invoke_json("acme", "echo", bytes::Bytes::from(body.clone()))
            .await
            .unwrap();
        let got: Value = serde_json::from_slice(&got).unwrap();
        assert_eq!(got, want, "a body of {} bytes", body.len());
    }
    for bad in ["{\"name\": ".to_string(), format!("{pad}{{\"name\": ")] {
        let err = rt
            .invoke_json("acme", "echo", bytes::Bytes::from(bad.clone()))
            .await
            .unwrap_err();
        match &err {
            native_core::Error::InvalidInput(m) => {
                assert!(m.contains("EOF while parsing"), "{m}")
            }
            other => panic!("a bad body of {} bytes: {other:?}", bad.len()),
        }
        let got = rt
            .invoke_json("acme", "echo", bytes::Bytes::from_static(b"{\"n\":1}"))
            .await
            .unwrap();
        assert_eq!(got, b"{\"n\":1}");
    }
}

/// An invoke of a plain script name is answered without the router (`inbound::route`), one
/// whose name has percent-escapes through it: the same answers and errors either way, and what
/// is not an invoke of one name is the router's.
#[tokio::test]
async fn invokes_are_answered_alike_with_and_without_the_router() {
    let a = api().await;
    for (plain, escaped, key) in [
        ("hello", "hel%6Co", a.acme_key.as_str()),
        ("boom", "bo%6Fm", a.acme_key.as_str()),
        ("nope", "n%6Fpe", a.acme_key.as_str()),
        ("hello", "hel%6Co", "not-a-key"),
    ] {
        let direct = a.invoke(plain, key, r#"{"name":"ada"}"#).await;
        let routed = a.invoke(escaped, key, r#"{"name":"ada"}"#).await;
        assert_eq!(direct, routed, "{plain} and {escaped}");
    }
    assert_eq!(a.invoke("hello", &a.acme_key, "{}").await.0, StatusCode::OK);
    let auth = format!("Bearer {}", a.acme_key);
    let get = a
        .call(Method::GET, "/v1/invoke/hello", Some(&auth), Body::empty())
        .await;
    assert_error(
        &get,
        StatusCode::METHOD_NOT_ALLOWED,
        "unimplemented",
        "use POST",
    );
    for path in ["/v1/invoke/", "/v1/invoke/hello/more"] {
        let got = a
            .call(Method::POST, path, Some(&auth), Body::from("{}"))
            .await;
        assert_error(&got, StatusCode::NOT_FOUND, "not_found", "no endpoint");
    }
}

const REPLY: &str = r#"
function on_invoke(ctx, ev)
  if ev.case == "invalid" then
    return native.response(422, { error = "amount must be positive" }, { ["X-Reason"] = "validation" })
  elseif ev.case == "text" then
    return native.response(201, "made", { ["Content-Type"] = "text/csv", Location = "/orders/o1" })
  elseif ev.case == "empty" then
    return native.response(204)
  elseif ev.case == "cookie" then
    return native.response(200, "x", { ["Set-Cookie"] = "a=b" })
  elseif ev.case == "cors" then
    return native.response(200, "x", { ["Access-Control-Allow-Origin"] = "*" })
  elseif ev.case == "split" then
    return native.response(200, "x", { ["X-A"] = "a\r\nSet-Cookie: a=b" })
  elseif ev.case == "status" then
    return native.response(700, "x")
  elseif ev.case == "caught" then
    local ok, err = pcall(native.response, 99)
    return { caught = err }
  end
  return { plain = true }
end
"#;

/// One raw answer of the router: status, headers and body text.
async fn raw(
    rt: &Arc<native_core::runtime::Runtime>,
    key: &str,
    body: &str,
) -> axum::response::Response<String> {
    let req = Request::post("/v1/invoke/reply")
        .header(header::AUTHORIZATION, format!("Bearer {key}"))
        .body(Body::from(body.to_string()))
        .unwrap();
    let resp = router(rt.clone()).oneshot(req).await.unwrap();
    let (parts, body) = resp.into_parts();
    let bytes = body.collect().await.unwrap().to_bytes();
    axum::response::Response::from_parts(parts, String::from_utf8_lossy(&bytes).into_owned())
}

#[tokio::test]
async fn a_script_chooses_its_http_answer_with_native_response() {
    // GIVEN a script that answers with native.response
    let p = TestProject::with_tenants(DEPLOYMENT, &[("acme", "{}", &[("reply", REPLY)])]);
    let key = api_keys::create(&*p.rt.services.backends.kv, "acme", "t")
        .await
        .unwrap()
        .key;
    let rt = Arc::new(p.project.runtime().with_log(p.log.clone()));
    // WHEN validation fails THEN the caller gets the status, the JSON body and the header
    let r = raw(&rt, &key, r#"{"case":"invalid"}"#).await;
    assert_eq!(r.status(), 422);
    assert_eq!(r.headers()["content-type"], "application/json");
    assert_eq!(r.headers()["x-reason"], "validation");
    assert_eq!(r.body(), r#"{"error":"amount must be positive"}"#);
    // AND every chosen answer is sandboxed and not sniffed
    assert_eq!(r.headers()["content-security-policy"], "sandbox");
    assert_eq!(r.headers()["x-content-type-options"], "nosniff");
    // WHEN the body is a string with its own type THEN it goes as it is
    let r = raw(&rt, &key, r#"{"case":"text"}"#).await;
    assert_eq!((r.status().as_u16(), r.body().as_str()), (201, "made"));
    assert_eq!(r.headers()["content-type"], "text/csv");
    assert_eq!(r.headers()["location"], "/orders/o1");
    let r = raw(&rt, &key, r#"{"case":"empty"}"#).await;
    assert_eq!((r.status().as_u16(), r.body().as_str()), (204, ""));
    // AND a plain return stays a 200 with the value as JSON
    let r = raw(&rt, &key, "{}").await;
    assert_eq!(
        (r.status().as_u16(), r.body().as_str()),
        (200, r#"{"plain":true}"#)
    );
    assert!(r.headers().get("content-security-policy").is_none());
    // WHEN a script sets a header that speaks for the shared origin or the connection, splits
    // a header, or gives a status out of range THEN its run fails (500) naming what and why
    for (case, says) in [
        (
            "cookie",
            r#"header "set-cookie" may not be set by a script: cookies"#,
        ),
        (
            "cors",
            r#"header "access-control-allow-origin" may not be set by a script: CORS"#,
        ),
        (
            "split",
            r#"the value of header "x-a" must be printable ASCII"#,
        ),
        (
            "status",
            "status must be a whole number from 200 to 599, not 700",
        ),
    ] {
        let r = raw(&rt, &key, &format!(r#"{{"case":"{case}"}}"#)).await;
        assert_eq!(r.status(), 500, "{case}: {}", r.body());
        let msg = serde_json::from_str::<Value>(r.body()).unwrap()["message"].to_string();
        let msg: String = serde_json::from_str(&msg).unwrap();
        assert!(msg.contains(says), "{case}: {msg}");
        assert!(msg.contains("reply.luau:"), "{case}: {msg}");
        assert!(r.headers().get("set-cookie").is_none());
    }
    // AND the refusal can be caught like any error
    let r = raw(&rt, &key, r#"{"case":"caught"}"#).await;
    assert!(r.body().contains("not 99"), "{}", r.body());
    // AND callers that take a value (native invoke, the invoke function) get the body's value
    let v = rt
        .invoke("acme", "reply", json!({ "case": "invalid" }))
        .await
        .unwrap();
    assert_eq!(v, json!({ "error": "amount must be positive" }));
}

/// Error answers echo a caller's path or method name cut to a few hundred bytes: a 63 KB path
/// or method is not answered (nor logged) whole.
#[tokio::test]
async fn errors_echo_a_long_path_or_method_cut_short() {
    let a = api().await;
    let auth = format!("Bearer {}", a.acme_key);
    let long = "x".repeat(63 * 1024);
    let service = native_core::inbound::rendezvous::SERVICE;
    for (method, path, status, says) in [
        (
            Method::POST,
            format!("/{long}"),
            StatusCode::NOT_FOUND,
            "no endpoint",
        ),
        (
            Method::POST,
            format!("{service}/{long}"),
            StatusCode::NOT_FOUND,
            "no method",
        ),
        (
            Method::from_bytes(long.as_bytes()).unwrap(),
            "/healthz".to_string(),
            StatusCode::METHOD_NOT_ALLOWED,
            "is not allowed",
        ),
    ] {
        let got = a.call(method, &path, Some(&auth), Body::from("{}")).await;
        assert_eq!(got.0, status, "{}", got.1);
        let msg = got.1["message"].as_str().unwrap();
        assert!(msg.contains(says), "{msg:?}");
        assert!(msg.len() < 1024, "a message of {} bytes", msg.len());
        assert!(msg.contains("[cut: 64"), "{msg:?}");
    }
}
