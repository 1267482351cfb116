//! The engine: sandbox, isolation, limits, entry points and errors.

use native_tests::TestProject;
use serde_json::json;

fn one(src: &str) -> TestProject {
    TestProject::new(
        "acme",
        r#"{ "limits": { "timeout_s": 2, "max_memory_mb": 16 } }"#,
        &[("s", src)],
    )
}

async fn run(p: &TestProject, ev: serde_json::Value) -> Result<serde_json::Value, String> {
    p.invoke("acme", "s", ev).await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn entry_points_as_globals_locals_or_returned_table() {
    let p = TestProject::new("acme", "{}", &[
        ("g", "function on_invoke(ctx, ev) return { n = ev.n + 1, tenant = ctx.tenant, script = ctx.script, attempt = ctx.attempt } end"),
        ("l", "local function on_invoke(_ctx, ev) return ev.n * 2 end"),
        ("t", "local M = {}\nfunction M.on_invoke(_ctx, ev) return 'table' end\nreturn M"),
        ("none", "local x = 1"),
    ]);
    assert_eq!(
        p.invoke("acme", "g", json!({"n": 1})).await.unwrap(),
        json!({"n": 2, "tenant": "acme", "script": "g", "attempt": 1})
    );
    assert_eq!(
        p.invoke("acme", "l", json!({"n": 21})).await.unwrap(),
        json!(42)
    );
    assert_eq!(
        p.invoke("acme", "t", json!({})).await.unwrap(),
        json!("table")
    );
    let e = p
        .invoke("acme", "none", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("none.luau has no on_invoke(ctx, ev)"), "{e}");
    let e = p
        .invoke("acme", "missing", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("script \"missing\" of tenant \"acme\" not found")
            && e.contains("g, l, none, t"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_point_that_is_not_a_function_is_named_and_callers_have_no_position() {
    // GIVEN an entry point that is a number, one in a returned table that is a string, one
    // that raises at level 2 (its caller, the host) and one that returns several values
    let p = TestProject::new(
        "acme",
        "{}",
        &[
            ("num", "on_invoke = 42"),
            ("tbl", "return { on_invoke = 'x' }"),
            (
                "lvl",
                "function on_invoke(ctx, ev) error('from the caller', 2) end",
            ),
            ("many", "function on_invoke(ctx, ev) return 1, 2, 3 end"),
        ],
    );
    // WHEN each runs
    let err = |s: &'static str| {
        let p = &p;
        async move {
            p.invoke("acme", s, json!({}))
                .await
                .unwrap_err()
                .to_string()
        }
    };
    // THEN each error says what the entry point is and what to do; the host as the caller has
    // no position (the host's own frames are not the script's); the first value is the result
    let e = err("num").await;
    assert!(e.contains("num.luau's on_invoke is a number, not a function: define it as function on_invoke(ctx, ev)"), "{e}");
    let e = err("tbl").await;
    assert!(
        e.contains("tbl.luau's on_invoke is a string, not a function"),
        "{e}"
    );
    let e = err("lvl").await;
    assert_eq!(
        e,
        "script \"lvl\" of tenant \"acme\" failed: from the caller"
    );
    assert_eq!(p.invoke("acme", "many", json!({})).await.unwrap(), json!(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctx_has_request_id_and_deadline() {
    let p = one("function on_invoke(ctx) return { id = ctx.request_id, dl = ctx.deadline_ms } end");
    let a = run(&p, json!({})).await.unwrap();
    let b = run(&p, json!({})).await.unwrap();
    assert_ne!(a["id"], b["id"], "request ids are unique per invocation");
    assert_eq!(a["id"].as_str().unwrap().len(), 32);
    let now = native_core::ports::now_ms();
    let dl = a["dl"].as_i64().unwrap();
    assert!(
        dl > now && dl <= now + 2100,
        "deadline is timeout_s ahead: {dl} vs {now}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_name_script_and_line() {
    let p = one("function on_invoke(ctx, ev)\n  local x = 1\n  error('boom')\nend");
    let e = run(&p, json!({})).await.unwrap_err();
    assert_eq!(e, "script \"s\" of tenant \"acme\" failed: s.luau:3: boom");
    let p = one("function on_invoke(ctx, ev)\n\n  native.bucket.In.get('../x')\nend");
    let e = run(&p, json!({})).await.unwrap_err();
    assert!(
        e.contains("s.luau:3: key \"../x\" has a \"..\" segment"),
        "{e}"
    );
    let p = one("function on_invoke(\n  x = = 1\nend");
    let e = run(&p, json!({})).await.unwrap_err();
    assert!(e.contains("s.luau:2:"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dangerous_globals_say_they_are_not_available() {
    for (src, name) in [
        ("load('return 1')", "load"),
        ("loadstring('return 1')()", "loadstring"),
        ("getfenv(1)", "getfenv"),
        ("setfenv(1, {})", "setfenv"),
        ("dofile('/etc/passwd')", "dofile"),
        ("module('m')", "module"),
        ("os.execute('ls')", "os.execute"),
        ("os.exit(1)", "os.exit"),
        ("os.getenv('HOME')", "os.getenv"),
        ("os.remove('x')", "os.remove"),
        ("os.rename('a', 'b')", "os.rename"),
        ("os.tmpname()", "os.tmpname"),
        ("io.write('x')", "io"),
        ("io.open('/etc/passwd')", "io"),
        ("local f = io.popen", "io"),
        ("io()", "io"),
        ("debug.getinfo(1)", "debug"),
        ("package.loaded.x = 1", "package"),
    ] {
        // GIVEN a script that calls or indexes a removed global on line 2
        let p = one(&format!("function on_invoke()\n  {src}\nend"));
        // WHEN it runs
        let e = run(&p, json!({})).await.unwrap_err();
        // THEN Luau's error, with the script and line, says which global is not available
        assert!(e.contains("s.luau:2: attempt to "), "{src}: {e}");
        assert!(
            e.contains(&format!("`{name}` is not available in native scripts")),
            "{src}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_globals_are_nil() {
    // GIVEN a script that looks at each removed global, as feature tests in Lua code do
    let p = one(r#"function on_invoke()
        local seen = {}
        for _, name in { "load", "loadstring", "dofile", "getfenv", "setfenv",
                         "module", "io", "debug", "package" } do
          seen[name] = type(_G[name])
        end
        seen["os.execute"] = type(os.execute)
        seen.branch = if load then "load" else "no load"
        local ok, e = pcall(load, "x")
        seen.pcall = { ok, e }
        return seen
    end"#);
    // WHEN it runs
    let out = run(&p, json!({})).await.unwrap();
    // THEN each is nil, `if load then` takes the nil branch, and a pcall sees Luau's error
    for name in [
        "load",
        "loadstring",
        "dofile",
        "getfenv",
        "setfenv",
        "module",
        "io",
        "debug",
        "package",
        "os.execute",
    ] {
        assert_eq!(out[name], "nil", "{name}: {out}");
    }
    assert_eq!(out["branch"], "no load");
    assert_eq!(out["pcall"][0], false);
    assert!(
        out["pcall"][1]
            .as_str()
            .unwrap()
            .contains("attempt to call a nil value"),
        "{out}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removed_globals_stay_read_only_and_useless() {
    // GIVEN scripts that try to reach an environment or put a removed global back
    for (what, src) in [
        (
            "getfenv through pcall",
            "local ok, env = pcall(getfenv, 0) assert(ok) return env",
        ),
        ("io replaced", "io.write = print"),
        ("io metatable", "setmetatable(io, nil)"),
        (
            "os.getenv replaced",
            "os.getenv = function() return 'x' end",
        ),
        ("string.dump", "return string.dump(print)"),
    ] {
        let p = one(&format!("function on_invoke() {src} end"));
        // WHEN each runs THEN it fails
        run(&p, json!({})).await.expect_err(what);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn collectgarbage_collect_is_refused_and_count_allowed() {
    let p = one("function on_invoke() return collectgarbage('count') > 0 end");
    assert_eq!(run(&p, json!({})).await.unwrap(), json!(true));
    let p = one("function on_invoke() collectgarbage('collect') end");
    let e = run(&p, json!({})).await.unwrap_err();
    assert!(
        e.contains("collectgarbage(\"collect\") is not allowed"),
        "{e}"
    );
    let p = one("function on_invoke() collectgarbage() end");
    assert!(run(&p, json!({})).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_tables_are_read_only() {
    for (what, src) in [
        ("string metatable", "getmetatable('').__index = {}"),
        ("string lib", "string.upper = nil"),
        ("math lib", "math.pi = 3"),
        ("native", "native.json = nil"),
        ("native.bucket.In", "native.bucket.In.get = nil"),
        ("native.config", "native.config.api = 'x'"),
        ("native.config nested", "native.config.nested.k = 2"),
        ("ctx", "ctx.tenant = 'other'"),
        ("env metatable", "setmetatable(_G, nil)"),
        (
            "native.bucket metatable",
            "getmetatable(native.bucket).__index = function() return 1 end",
        ),
        (
            "native.bucket metatable, raw",
            "setmetatable(native.bucket, nil)",
        ),
        (
            "array metatable",
            "getmetatable(native.json.decode('[1]')).__index = function() return 1 end",
        ),
    ] {
        let p = TestProject::new(
            "acme",
            r#"{ "config": { "api": "u", "nested": { "k": 1 } } }"#,
            &[("s", &format!("function on_invoke(ctx) {src} end"))],
        );
        let e = run(&p, json!({})).await.expect_err(what);
        assert!(
            e.contains("readonly")
                || e.contains("protected metatable")
                || e.contains("locked")
                || e.contains("index boolean")
                || e.contains("index string"),
            "{what}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn globals_of_one_invocation_are_invisible_to_the_next() {
    let p = one(r#"
        counter = counter or 0
        function on_invoke(ctx, ev)
            counter += 1
            local seen = { counter = counter, leaked = leaked, g = rawget(_G, "leaked") }
            leaked = "yes"
            _G.also = 1
            return seen
        end"#);
    for _ in 0..3 {
        assert_eq!(
            run(&p, json!({})).await.unwrap(),
            json!({ "counter": 1 }),
            "each invocation starts clean"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants_never_share_a_vm() {
    let p = TestProject::with_tenants(
        native_tests::DEPLOYMENT,
        &[
            (
                "a",
                r#"{ "config": { "who": "a" } }"#,
                &[("s", "function on_invoke() return native.config.who end")],
            ),
            (
                "b",
                r#"{ "config": { "who": "b" } }"#,
                &[("s", "function on_invoke() return native.config.who end")],
            ),
        ],
    );
    for _ in 0..3 {
        assert_eq!(p.invoke("a", "s", json!({})).await.unwrap(), json!("a"));
        assert_eq!(p.invoke("b", "s", json!({})).await.unwrap(), json!("b"));
    }
}

/// A server keeps a blank VM ready for the next tenant's first invoke, made after the last
/// was taken (issue 31). The tenant given it sees its own name and config, as read-only as in
/// a VM made for it; the blank was made before any tenant had it, so nothing of another can be
/// in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_vm_made_ahead_is_given_to_the_next_tenant_as_its_own() {
    let src = r#"
function on_invoke(ctx)
  local function fails(f) return not pcall(f) end
  return {
    tenant = ctx.tenant, who = native.config.who,
    config_read_only = fails(function() native.config.who = "x" end),
    nested_read_only = fails(function() native.config.nested.k = 2 end),
    native_read_only = fails(function() native.config = {} end),
    json = native.json.encode({ 1 }),
  }
end"#;
    let config =
        |who: &str| format!(r#"{{ "config": {{ "who": "{who}", "nested": {{ "k": 1 }} }} }}"#);
    let (ca, cb, cc) = (config("a"), config("b"), config("c"));
    let p = TestProject::with_tenants(
        native_tests::DEPLOYMENT,
        &[
            ("a", &ca, &[("s", src)]),
            ("b", &cb, &[("s", src)]),
            ("c", &cc, &[("s", src)]),
        ],
    );
    let rt = p.project.runtime().with_spare_vm();
    let engine = &rt.engine;
    let made = |n: u64| async move {
        for _ in 0..500 {
            if engine.spare_counts().1 >= n {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        panic!("no blank VM made in 5 s: {:?}", engine.spare_counts());
    };
    let expect = |who: &str| {
        json!({ "tenant": who, "who": who, "config_read_only": true, "nested_read_only": true,
                "native_read_only": true, "json": "[1]" })
    };
    // WHEN the first tenant's first invoke finds no blank ready (none is made before one is
    // asked for), and each next tenant's finds the one made after it
    assert_eq!(rt.invoke("a", "s", json!({})).await.unwrap(), expect("a"));
    assert_eq!(rt.engine.spare_counts().0, 0);
    made(1).await;
    assert_eq!(rt.invoke("b", "s", json!({})).await.unwrap(), expect("b"));
    made(2).await;
    assert_eq!(rt.invoke("c", "s", json!({})).await.unwrap(), expect("c"));
    // THEN both took a blank, and each tenant keeps running as itself on its own VM
    assert_eq!(rt.engine.spare_counts().0, 2);
    for who in ["a", "b", "c", "b", "a"] {
        assert_eq!(rt.invoke(who, "s", json!({})).await.unwrap(), expect(who));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn endless_loops_end_at_the_deadline() {
    for src in [
        "function on_invoke() while true do end end",
        "function on_invoke() while true do pcall(function() while true do end end) end end",
        "local function f(n) return f(n + 1) + 1 end\nfunction on_invoke() return f(1) end",
    ] {
        let p = one(src);
        let t = std::time::Instant::now();
        let e = run(&p, json!({})).await.unwrap_err();
        assert!(
            t.elapsed().as_secs_f64() < 3.5,
            "{src}: took {:?}",
            t.elapsed()
        );
        assert!(
            e.contains("limit timeout_s exceeded") || e.contains("stack overflow"),
            "{src}: {e}"
        );
    }
    let p = one("function on_invoke() while true do end end");
    let e = run(&p, json!({})).await.unwrap_err();
    assert!(e.contains("deadline of 2 s"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_bombs_hit_max_memory_mb() {
    for src in [
        "function on_invoke() local t = {} for i = 1, 1e8 do t[i] = i end end",
        "function on_invoke() return #string.rep('x', 64 * 1024 * 1024) end",
    ] {
        let p = one(src);
        let e = run(&p, json!({})).await.unwrap_err();
        assert!(e.contains("max_memory_mb"), "{src}: {e}");
    }
    // The tenant keeps working after a breach.
    let p = one("function on_invoke(ctx, ev) if ev.bomb then return #string.rep('x', 64 * 1024 * 1024) end return 'ok' end");
    assert!(run(&p, json!({"bomb": true})).await.is_err());
    assert_eq!(run(&p, json!({})).await.unwrap(), json!("ok"));
}

/// The kind of a script's failure is recorded where it happens and read as data: by the engine
/// (a VM that hit a limit is not pooled again), the runtime (the LimitBreaches metric) and
/// inbound HTTP (the status). A script that raises a breach's words itself is its own failure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failures_kind_follows_its_cause_not_its_words() {
    use native_core::error::Cause;
    use native_core::inbound::ApiError;
    use native_core::Error;
    // GIVEN a tenant allowed one backend call, with a script that raises whatever it is told
    // to, one that catches its breaches and returns, and one that loops or bombs its heap
    let p = TestProject::new(
        "acme",
        r#"{ "limits": { "max_data_ops": 1, "timeout_s": 1, "max_memory_mb": 16 } }"#,
        &[
            ("mimic", "function on_invoke(ctx, ev) error(ev.say, 0) end"),
            (
                "sneaky",
                r#"function on_invoke() pcall(native.db.get, "p", "a") pcall(native.db.get, "p", "b") return "sneaky" end"#,
            ),
            (
                "bomb",
                "function on_invoke(ctx, ev) if ev.loop then while true do end end pcall(string.rep, 'x', 64 * 1024 * 1024) return 'caught' end",
            ),
        ],
    );
    let log = std::sync::Arc::new(native_tests::MemLog::default());
    let rt = p.project.runtime().with_log(log.clone()).with_metrics("ns");
    let tenant = rt.tenants.load("acme").await.unwrap();
    let breaches = || -> Vec<u64> {
        let records = log.0.lock().unwrap();
        let m = records.iter().filter(|r| r.get("_aws").is_some());
        m.map(|r| r["LimitBreaches"].as_u64().unwrap()).collect()
    };
    // WHEN the script raises, in its own words, what each kind of failure says
    for say in [
        "limit max_data_ops exceeded: this invocation needs 2 backend calls and the tenant allows 1",
        "barrier completion is being dispatched by another call; retry in 7 s",
        "cannot write object b/k: no space left on the device of /p/x",
        "backend unavailable: a backend call had no answer after 4.9 s",
    ] {
        let e = rt.invoke("acme", "mimic", json!({ "say": say })).await.unwrap_err();
        // THEN it failed as raised: the same words, its VM pooled again, no breach counted,
        // and HTTP 500 without Retry-After
        assert!(
            matches!(&e, Error::Script { cause: Cause::Raised, message, .. } if message == say),
            "{e:?}"
        );
        assert_eq!(rt.engine.idle_vms(&tenant), 1, "{say}");
        let api = ApiError::from(e);
        assert_eq!((api.code.status().as_u16(), api.retry_after_s), (500, None));
    }
    assert_eq!(breaches(), [0, 0, 0, 0]);
    // WHEN a script breaches max_data_ops, catches the errors and returns
    let e = rt.invoke("acme", "sneaky", json!({})).await.unwrap_err();
    // THEN it failed as that breach: its VM is let go, the breach counted, HTTP 429
    assert!(
        matches!(
            &e,
            Error::Script {
                cause: Cause::Limit("max_data_ops"),
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(rt.engine.idle_vms(&tenant), 0);
    assert_eq!(breaches()[4], 1);
    assert_eq!(ApiError::from(e).code.status().as_u16(), 429);
    // AND a heap bomb caught with pcall, and an endless loop, are breaches of theirs
    for (ev, limit) in [
        (json!({}), "max_memory_mb"),
        (json!({ "loop": true }), "timeout_s"),
    ] {
        let e = rt.invoke("acme", "bomb", ev).await.unwrap_err();
        assert!(
            matches!(&e, Error::Script { cause: Cause::Limit(l), .. } if *l == limit),
            "{e:?}"
        );
    }
    assert_eq!(rt.engine.idle_vms(&tenant), 0);
    assert_eq!(breaches()[5..], [1, 1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_data_ops_counts_every_backend_call() {
    let p = TestProject::new(
        "acme",
        r#"{ "limits": { "max_data_ops": 5 } }"#,
        &[(
            "s",
            r#"
        function on_invoke(ctx, ev)
            for i = 1, ev.n do native.db.put("p", tostring(i), i) end
            return "done"
        end"#,
        )],
    );
    assert_eq!(
        p.invoke("acme", "s", json!({"n": 5})).await.unwrap(),
        json!("done")
    );
    let e = p
        .invoke("acme", "s", json!({"n": 6}))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("limit max_data_ops exceeded: this invocation needs 6 backend calls and the tenant allows 5"), "{e}");
    // Catching the error does not make the invocation succeed.
    let p = TestProject::new(
        "acme",
        r#"{ "limits": { "max_data_ops": 1 } }"#,
        &[(
            "s",
            r#"
        function on_invoke() pcall(native.db.get, "p", "a") pcall(native.db.get, "p", "b") return "sneaky" end"#,
        )],
    );
    let e = p
        .invoke("acme", "s", json!({}))
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_data_ops"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bytecode_is_compiled_once_per_content() {
    // GIVEN a script whose source no other test has
    let src = format!(
        "-- {}\nfunction on_invoke() return 1 end",
        std::process::id()
    );
    let p = TestProject::new("acme", "{}", &[("s", &src), ("t", &src)]);
    let before = native_core::engine::cached_count();
    // WHEN it runs many times, and under another name with the same content
    for _ in 0..5 {
        p.invoke("acme", "s", json!({})).await.unwrap();
        p.invoke("acme", "t", json!({})).await.unwrap();
    }
    // THEN it was compiled once (other tests in this binary may add their own meanwhile)
    let cached = native_core::engine::compile_count_of(&src);
    assert_eq!(cached, 1, "compiled {cached} times");
    assert!(native_core::engine::cached_count() > before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_values_that_are_not_strings_are_shown() {
    // GIVEN a script that raises a table on line 2
    let p = one("function on_invoke()\n  error({ code = 1, why = { 'a', 'b' } })\nend");
    // WHEN it runs THEN the error shows where and what, not `table: 0x...`
    let e = run(&p, json!({})).await.unwrap_err();
    assert!(
        e.ends_with(r#"failed: s.luau:2: error {"code":1,"why":["a","b"]}"#)
            || e.ends_with(r#"failed: s.luau:2: error {"why":["a","b"],"code":1}"#),
        "{e}"
    );
    // GIVEN error(nil) THEN the message says there was none
    let p = one("function on_invoke()\n  error(nil)\nend");
    let e = run(&p, json!({})).await.unwrap_err();
    assert!(
        e.ends_with("raised an error with no message (error(nil))"),
        "{e}"
    );
    // GIVEN a huge table raised THEN the message stays short
    let p = one("function on_invoke()\n  local t = {} for i = 1, 1000 do t[i] = string.rep('x', 1000) end error(t)\nend");
    let e = run(&p, json!({})).await.unwrap_err();
    assert!(
        e.len() < 1000 && e.contains("s.luau:2: error [\"xxx"),
        "{e}"
    );
    // GIVEN a script that catches a raised table THEN it gets the table itself, and error levels
    // and string messages still point at the script's own lines
    let p = one(r#"function on_invoke()
        local ok, e = pcall(error, { code = 7 })
        assert(not ok and e.code == 7)
        local function f() error("up", 2) end
        local ok2, e2 = pcall(function()
            f() end)
        local ok3, e3 = pcall(function() error("here") end)
        return { e2, e3, (select(2, pcall(error, "bare", 0))) }
    end"#);
    assert_eq!(
        run(&p, json!({})).await.unwrap(),
        json!(["s.luau:6: up", "s.luau:7: here", "bare"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripts_with_the_same_source_keep_their_own_names() {
    // GIVEN two scripts of one tenant with the same source, which fails on line 2
    let src = "function on_invoke(ctx, ev)\n  error(\"boom\")\nend";
    let p = TestProject::new("acme", "{}", &[("first", src), ("second", src)]);
    // WHEN each runs twice on the tenant's pooled VM (whose loaded chunks are reused)
    for _ in 0..2 {
        for name in ["first", "second"] {
            let err = p.invoke("acme", name, json!({})).await.unwrap_err();
            // THEN each error names the script that ran
            assert!(
                err.to_string().contains(&format!("{name}.luau:2: boom")),
                "{name}: {err}"
            );
        }
    }
}

#[test]
fn ctx_holds_each_calls_own_values_on_one_pooled_vm() {
    // GIVEN a tenant whose max_chain_width is 7, and a script that hands back its ctx and event
    let p = TestProject::new(
        "acme",
        r#"{ "limits": { "max_chain_width": 7 } }"#,
        &[(
            "s",
            "function on_invoke(ctx, ev) return { ctx = ctx, ev = ev, frozen = table.isfrozen(ctx) } end",
        )],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let tenant = rt.block_on(p.rt.tenants.load("acme")).unwrap();
    let (engine, services) = (p.rt.engine.clone(), p.rt.services.clone());
    let run = |attempt, depth, width, event: serde_json::Value| {
        let call = native_core::engine::Call {
            tenant: tenant.clone(),
            script: "s".into(),
            entry: native_core::engine::Entry::Invoke,
            event: event.into(),
            json_answer: false,
            attempt,
            depth,
            width,
        };
        engine
            .run(&services, rt.handle(), &call)
            .unwrap()
            .into_value()
            .unwrap()
    };
    // WHEN a root runs, then a redelivered message three links down, then a root again (the
    // tenant's one pooled VM and its template of ctx serve all three)
    let first = run(1, 0, None, json!({ "n": 1 }));
    let deep = run(3, 2, Some(5), json!({ "n": [2] }));
    let again = run(1, 0, None, json!({}));
    // THEN each sees its own attempt, depth and width, a root's width is the tenant's, a root
    // with no chain is a chain of its own (its trace is its request id), every ctx is frozen
    // and each event is its own
    for (out, attempt, depth, width, ev) in [
        (&first, 1, 0, 7, json!({ "n": 1 })),
        (&deep, 3, 2, 5, json!({ "n": [2] })),
        (&again, 1, 0, 7, json!({})),
    ] {
        let ctx = &out["ctx"];
        assert_eq!(
            (&ctx["attempt"], &ctx["depth"], &ctx["width"]),
            (&json!(attempt), &json!(depth), &json!(width)),
            "{out}"
        );
        assert_eq!(
            (&ctx["tenant"], &ctx["script"]),
            (&json!("acme"), &json!("s"))
        );
        let id = ctx["request_id"].as_str().unwrap();
        assert_eq!(id.len(), 32, "{out}");
        assert_eq!(ctx["trace"], json!(id), "{out}");
        assert!(ctx["deadline_ms"].as_f64().unwrap() > 0.0, "{out}");
        assert_eq!(out["frozen"], json!(true));
        assert_eq!(out["ev"], ev);
    }
    let ids: std::collections::HashSet<_> = [&first, &deep, &again]
        .iter()
        .map(|o| o["ctx"]["request_id"].clone())
        .collect();
    assert_eq!(ids.len(), 3);
}
