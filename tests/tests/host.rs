//! The host API seen from scripts: isolation between tenants, limits, and the errors a script
//! author gets for bad calls. Happy paths of each area are the `.luau` tests.

use native_tests::{TestProject, DEPLOYMENT};
use serde_json::json;

async fn err(p: &TestProject, tenant: &str, script: &str) -> String {
    p.invoke(tenant, script, json!({}))
        .await
        .unwrap_err()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_see_only_their_own_objects_and_items() {
    // GIVEN two tenants using the same relative keys and partitions
    let write = r#"function on_invoke(ctx, ev)
        native.bucket.In.put("shared.txt", ctx.tenant)
        native.db.put("p", "k", ctx.tenant)
    end"#;
    let read = r#"function on_invoke(ctx, ev)
        return { obj = native.bucket.In.get("shared.txt"), item = native.db.get("p", "k"),
                 keys = native.bucket.In.list("").keys, items = #native.db.query("p").items }
    end"#;
    let scripts: &[(&str, &str)] = &[("write", write), ("read", read)];
    let p = TestProject::with_tenants(DEPLOYMENT, &[("a", "{}", scripts), ("b", "{}", scripts)]);
    // WHEN both write
    p.invoke("a", "write", json!({})).await.unwrap();
    p.invoke("b", "write", json!({})).await.unwrap();
    // THEN each reads back its own
    for t in ["a", "b"] {
        let got = p.invoke(t, "read", json!({})).await.unwrap();
        assert_eq!(
            got,
            json!({ "obj": t, "item": t, "keys": ["shared.txt"], "items": 1 }),
            "tenant {t}"
        );
    }
    // AND the objects sit in each tenant's folder of the real bucket
    let page =
        p.rt.services
            .backends
            .objects
            .list("acme-in", "", None, 10)
            .await
            .unwrap();
    let keys: Vec<_> = page.objects.iter().map(|o| o.key.as_str()).collect();
    assert_eq!(keys, ["a/shared.txt", "b/shared.txt"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_calls_get_errors_that_say_what_to_do() {
    let p = TestProject::new("acme", r#"{ "limits": { "max_object_mb": 1 } }"#, &[
        ("unknown_bucket", "function on_invoke() return native.bucket.Nope.get('x') end"),
        ("no_queue", "function on_invoke() native.queue.send('x', {}) end"),
        ("bad_level", "function on_invoke() native.log('loud', 'x') end"),
        ("json_fn", "function on_invoke() return native.json.encode({ f = print }) end"),
        ("json_bad", "function on_invoke() return native.json.decode('{oops') end"),
        ("big_put", "function on_invoke() native.bucket.In.put('big', string.rep('x', 1024 * 1024 + 1)) end"),
        ("abs_key", "function on_invoke() native.bucket.In.put('/etc/passwd', 'x') end"),
        ("backslash", "function on_invoke() native.bucket.In.get('a\\\\b') end"),
        ("ttl", "function on_invoke() native.db.put('p', 'k', 1, { ttl_s = 8 * 24 * 3600 }) end"),
        ("bad_list", "function on_invoke() native.bucket.In.list('', { limit = 0 }) end"),
    ]);
    for (script, want) in [
        ("unknown_bucket", "unknown_bucket.luau:1: unknown bucket \"Nope\": buckets.map of deployment.json has Acks, In"),
        ("no_queue", "tenant \"acme\" has no queue: set \"queue\": true in tenants/acme/config.json"),
        ("bad_level", "level \"loud\" is not one of debug, info, warn, error"),
        ("json_fn", "value cannot be encoded as JSON"),
        ("json_bad", "native.json.decode: invalid JSON"),
        ("big_put", "limit max_object_mb exceeded: the body for In/big is 1048577 bytes; the limit is 1 MB"),
        ("abs_key", "key \"/etc/passwd\" is absolute"),
        ("backslash", "contains a backslash"),
        ("ttl", "ttl_s must be 1 to 604800, not"),
        ("bad_list", "limit must be 1 to 1000, not 0"),
    ] {
        let e = err(&p, "acme", script).await;
        assert!(e.contains(want), "{script}: {e}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_send_checks_script_and_delay() {
    let p = TestProject::new(
        "acme",
        r#"{ "queue": true }"#,
        &[
            (
                "unknown",
                "function on_invoke() native.queue.send('ghost', {}) end",
            ),
            (
                "delay",
                "function on_invoke() native.queue.send('unknown', {}, { delay_s = 901 }) end",
            ),
            (
                "ok",
                "function on_invoke() native.queue.send('sink', { a = 1 }, { delay_s = 900 }) end",
            ),
            ("sink", "function on_queue() end"),
        ],
    );
    assert!(err(&p, "acme", "unknown")
        .await
        .contains("script \"ghost\" of tenant \"acme\" not found"));
    assert!(err(&p, "acme", "delay")
        .await
        .contains("delay_s must be 0 to 900, not 901"));
    p.invoke("acme", "ok", json!({})).await.unwrap();
    let s =
        p.rt.services
            .backends
            .queue
            .stats(native_core::ports::QueueKind::Work)
            .await
            .unwrap();
    assert_eq!((s.visible, s.waiting), (0, 1), "the delayed message waits");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_are_structured_and_name_the_invocation() {
    let p = TestProject::new(
        "acme",
        "{}",
        &[(
            "s",
            r#"function on_invoke(ctx)
        native.log("warn", "careful", { doc = "a.xml", n = 2 })
        print("plain", 1)
        return ctx.request_id
    end"#,
        )],
    );
    let id = p.invoke("acme", "s", json!({})).await.unwrap();
    let logs = p.log.0.lock().unwrap().clone();
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0]["level"], "warn");
    assert_eq!(logs[0]["msg"], "careful");
    assert_eq!(logs[0]["doc"], "a.xml");
    assert_eq!(logs[0]["tenant"], "acme");
    assert_eq!(logs[0]["script"], "s");
    assert_eq!(logs[0]["request_id"], id);
    assert_eq!(logs[1]["msg"], "plain\t1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn db_items_expire_when_told() {
    let p = TestProject::new("acme", "{}", &[
        ("put", "function on_invoke() native.db.put('p', 'short', 1, { ttl_s = 1 }) native.db.put('p', 'long', 2) end"),
        ("get", "function on_invoke() return { native.db.get('p', 'short') or 'gone', native.db.get('p', 'long'), native.db.put_if_absent('p', 'short', 3) } end"),
    ]);
    p.invoke("acme", "put", json!({})).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    assert_eq!(
        p.invoke("acme", "get", json!({})).await.unwrap(),
        json!(["gone", 2, true])
    );
}

// A current-thread runtime: the script runs on a blocking thread of its own (see
// engine::handoff), so the request's base must be handed to that thread.
#[tokio::test]
async fn callback_urls_start_at_the_function_url_the_request_came_to() {
    use native_core::callback::{at_base, Signer};
    // GIVEN a runtime whose signer has no base (the http function: NATIVE_PUBLIC_URL unset)
    let script =
        r#"function on_invoke(ctx, ev) return native.barrier.callback_url("b1", "m1") end"#;
    let p = TestProject::new("acme", "{}", &[("url", script)]);
    let rt = p
        .project
        .runtime()
        .with_log(p.log.clone())
        .with_callback(std::sync::Arc::new(Signer::new(vec![9; 32], "").unwrap()));
    // WHEN a script makes a callback URL while serving a request to a function URL
    let base = Some("https://abc123.lambda-url.eu-west-1.on.aws".to_string());
    let url = at_base(base, rt.invoke("acme", "url", json!({})))
        .await
        .unwrap();
    // THEN the URL is absolute, on that function URL
    let url = url.as_str().unwrap();
    assert!(
        url.starts_with("https://abc123.lambda-url.eu-west-1.on.aws/v1/callback/"),
        "{url}"
    );
    // AND outside a request (a queue message) it stays relative
    let url = rt.invoke("acme", "url", json!({})).await.unwrap();
    assert!(url.as_str().unwrap().starts_with("/v1/callback/"), "{url}");
}
