//! Modules: `require` with Luau's string-require semantics over a tenant's `scripts/` tree,
//! evaluated once per invocation in its own fresh globals, and every way it can fail.

use native_tests::TestProject;
use serde_json::json;

fn project(files: &[(&str, &str)]) -> TestProject {
    TestProject::new(
        "acme",
        r#"{ "queue": true, "limits": { "timeout_s": 2, "max_memory_mb": 16 } }"#,
        files,
    )
}

async fn err(p: &TestProject, script: &str) -> String {
    p.invoke("acme", script, json!({}))
        .await
        .unwrap_err()
        .to_string()
}

const COUNTER: &str =
    "local n = 0\nleaked = true\nreturn { bump = function() n += 1; return n end }";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_is_shared_evaluated_once_per_invocation_and_fresh_in_the_next() {
    // GIVEN a module with state, required by a script directly and through another module
    // by a relative path, an @self path and an alias of the tenant's .luaurc
    let p = project(&[
        ("lib/counter", COUNTER),
        (
            "lib/util/init",
            "local c = require('./counter')\nreturn { c = c, fmt = require('@self/fmt') }",
        ),
        (
            "lib/util/fmt",
            "return { money = function(c) return string.format('%.2f', c / 100) end }",
        ),
        (
            "main",
            "local c = require('./lib/counter')\nlocal u = require('@lib/util')\n\
             function on_invoke()\n  c.bump()\n  return { n = u.c.bump(), same = rawequal(c, u.c), \
             money = u.fmt.money(1250), leaked = leaked == nil }\nend",
        ),
    ]);
    std::fs::write(
        p.dir.path().join("tenants/acme/.luaurc"),
        r#"{ "languageMode": "strict", "aliases": { "lib": "./scripts/lib" } }"#,
    )
    .unwrap();
    // WHEN it runs twice
    // THEN both requires give the one table (evaluated once), the module's globals are its
    // own, and the second invocation starts from a fresh module
    for _ in 0..2 {
        let out = p.invoke("acme", "main", json!({})).await.unwrap();
        assert_eq!(
            out,
            json!({ "n": 2, "same": true, "money": "12.50", "leaked": true })
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_failure_names_the_requiring_file_and_line_and_the_module() {
    // GIVEN scripts that require a missing module, a cycle, a path out of scripts/, a module
    // that raises, one that returns nothing and one that does not compile
    let p = project(&[
        ("missing", "\nlocal m = require('./lib/ordres')"),
        ("lib/orders", "return {}"),
        ("cycle", "local a = require('./lib/a')"),
        ("lib/a", "return require('./b')"),
        ("lib/b", "local c = require('./c')\nreturn c"),
        ("lib/c", "\n\nreturn require('./a')"),
        ("leaves", "return require('../../config')"),
        ("raises", "local m = require('./lib/boom')"),
        ("lib/boom", "local x = 1\nerror('no warehouse configured')"),
        ("nothing", "local m = require('./lib/empty')"),
        ("lib/empty", "local x = 1"),
        ("broken", "local m = require('./lib/broken')"),
        ("lib/broken", "local = 1"),
        ("bare", "local m = require('lib/orders')"),
    ]);
    // WHEN each runs THEN its error says which file and line required what, and why
    let e = err(&p, "missing").await;
    assert!(
        e.contains("missing.luau:2: require(\"./lib/ordres\"): there is no module tenants/acme/scripts/lib/ordres.luau")
            && e.contains("did you mean \"lib/orders\""),
        "{e}"
    );
    let e = err(&p, "cycle").await;
    assert!(
        e.contains("lib/c.luau:3: require(\"./a\"): a cycle of requires: lib/a.luau -> lib/b.luau -> lib/c.luau -> lib/a.luau"),
        "{e}"
    );
    let e = err(&p, "leaves").await;
    assert!(
        e.contains(
            "leaves.luau:1: require(\"../../config\"): the path leaves the tenant's scripts"
        ),
        "{e}"
    );
    let e = err(&p, "raises").await;
    assert!(
        e.contains("raises.luau:1: require(\"./lib/boom\"): the module raised an error: lib/boom.luau:2: no warehouse configured"),
        "{e}"
    );
    let e = err(&p, "nothing").await;
    assert!(
        e.contains("nothing.luau:1: require(\"./lib/empty\"): lib/empty.luau returned nothing"),
        "{e}"
    );
    let e = err(&p, "broken").await;
    assert!(
        e.contains("broken.luau:1: require(\"./lib/broken\"): lib/broken.luau:1:"),
        "{e}"
    );
    let e = err(&p, "bare").await;
    assert!(e.contains("bare.luau:1: require(\"lib/orders\"): \"lib/orders\" is not a module path: start it with \"./\""), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_cannot_reach_another_tenants_files() {
    // GIVEN two tenants; acme tries the other's module by a relative path, by an alias of its
    // .luaurc that points into the other's folder, and by an absolute-looking path
    let p = TestProject::with_tenants(
        native_tests::DEPLOYMENT,
        &[
            (
                "acme",
                "{}",
                &[
                    ("rel", "local m = require('../../other/scripts/lib/secret')"),
                    ("alias", "local m = require('@other/lib/secret')"),
                    ("deep", "local m = require('./lib/x')"),
                    (
                        "lib/x",
                        "return require('../../../other/scripts/lib/secret')",
                    ),
                ],
            ),
            ("other", "{}", &[("lib/secret", "return { key = 'k' }")]),
        ],
    );
    std::fs::write(
        p.dir.path().join("tenants/acme/.luaurc"),
        r#"{ "aliases": { "other": "../other/scripts" } }"#,
    )
    .unwrap();
    // WHEN each runs THEN each is refused: the path leaves the tenant's scripts
    for script in ["rel", "alias", "deep"] {
        let e = err(&p, script).await;
        assert!(
            e.contains("the path leaves the tenant's scripts: a module is a file under tenants/acme/scripts/"),
            "{script}: {e}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_module_is_not_a_script() {
    // GIVEN a module, and a script that sends a message to it and requires a script
    let p = project(&[
        ("lib/orders", "function on_invoke() return 1 end\nreturn {}"),
        (
            "send",
            "function on_invoke() native.queue.send('lib/orders', {}) end",
        ),
        ("other", "function on_invoke() return 1 end"),
        ("req", "local o = require('./other')"),
    ]);
    // WHEN it is invoked by name THEN it is refused as a module
    let e = err(&p, "lib/orders").await;
    assert!(
        e.contains(
            "\"lib/orders\" of tenant \"acme\" is a module (scripts/lib/orders.luau), not a script"
        ),
        "{e}"
    );
    // WHEN a script sends a message to it THEN the send is refused the same way
    let e = err(&p, "send").await;
    assert!(
        e.contains("is a module (scripts/lib/orders.luau), not a script"),
        "{e}"
    );
    // WHEN a script requires a script THEN that is refused: scripts are not modules
    let e = err(&p, "req").await;
    assert!(
        e.contains("scripts/other.luau is a script, not a module: put shared code in a subfolder"),
        "{e}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edited_module_is_used_from_the_next_invocation() {
    // GIVEN a script that requires a module, run once
    let p = project(&[
        ("lib/v", "return { v = 1 }"),
        (
            "main",
            "local m = require('./lib/v')\nfunction on_invoke() return m.v end",
        ),
    ]);
    assert_eq!(p.invoke("acme", "main", json!({})).await.unwrap(), json!(1));
    // WHEN the module is edited (same length) THEN the next invocation uses the new one
    let file = p.dir.path().join("tenants/acme/scripts/lib/v.luau");
    std::fs::write(&file, "return { v = 2 }").unwrap();
    assert_eq!(p.invoke("acme", "main", json!({})).await.unwrap(), json!(2));
    // WHEN it no longer compiles THEN only the invocations that require it fail, with the
    // compile error
    std::fs::write(&file, "return { v = = 3 }").unwrap();
    let e = err(&p, "main").await;
    assert!(
        e.contains("main.luau:1: require(\"./lib/v\"): lib/v.luau:1:"),
        "{e}"
    );
}
