//! `native test`: the examples' suites pass; a planted bug fails at the test file's line with
//! a diff, a script's error names the script's file and line; tests are isolated from each
//! other and from the project's `.native/`; the results are the same on every run; JUnit XML;
//! exit codes.

use std::path::Path;
use std::process::Command;

use crate::support::{native_bin, root};

/// `native --project DIR test ARGS`: exit code, stdout, stderr.
fn native_test(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(native_bin())
        .arg("--project")
        .arg(dir)
        .arg("test")
        .args(args)
        .output()
        .unwrap();
    (
        o.status.code().expect("native was killed by a signal"),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A copy of `examples/<name>` in a temporary folder.
fn example(name: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    copy(&root().join("examples").join(name), tmp.path());
    tmp
}

fn copy(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A project of one tenant `acme` with these scripts and one test file.
fn project(scripts: &[(&str, &str)], tests: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    std::fs::write(
        p.join("deployment.json"),
        r#"{ "buckets": { "map": { "Data": "data" } } }"#,
    )
    .unwrap();
    std::fs::create_dir_all(p.join("tenants/acme/scripts")).unwrap();
    std::fs::create_dir_all(p.join("tenants/acme/tests/more")).unwrap();
    std::fs::write(
        p.join("tenants/acme/config.json"),
        r#"{ "queue": true, "http": { "allow": ["api.example.com"] }, "vault": ["key"] }"#,
    )
    .unwrap();
    for (name, src) in scripts {
        std::fs::write(p.join(format!("tenants/acme/scripts/{name}.luau")), src).unwrap();
    }
    std::fs::write(p.join("tenants/acme/tests/more/a.test.luau"), tests).unwrap();
    tmp
}

#[test]
fn the_examples_suites_pass_without_touching_their_projects() {
    for name in ["hello", "barrier", "batch", "shop"] {
        // GIVEN an example project with its tests
        let dir = example(name);
        // WHEN `native test` runs
        let (code, out, err) = native_test(dir.path(), &[]);
        // THEN every test passes and the summary is alone on its line
        assert_eq!(code, 0, "{name}:\n{out}\n{err}");
        let summary = out.lines().last().unwrap_or("");
        assert!(
            summary.ends_with(" passed, 0 failed") && !summary.starts_with("0 "),
            "{name}: {out}"
        );
        assert!(out.contains(" ... ok\n"), "{out}");
        // AND the project has no .native/: nothing of the tests reached it
        assert!(!dir.path().join(".native").exists(), "{name}");
    }
}

#[test]
fn init_writes_an_example_test_that_passes() {
    // GIVEN a project made by `native init`
    let tmp = tempfile::tempdir().unwrap();
    let o = Command::new(native_bin())
        .args(["init", tmp.path().to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success());
    // WHEN its tests run THEN the chain invoke -> drain -> greeting in Out passes
    let (code, out, err) = native_test(tmp.path(), &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(
            "test tenants/hello/tests/greeting.test.luau :: a greeting lands in Out ... ok"
        ),
        "{out}"
    );
    assert!(out.ends_with("\n1 passed, 0 failed\n"), "{out}");
}

#[test]
fn a_planted_bug_fails_at_the_test_line_with_a_diff() {
    // GIVEN the barrier example with a bug planted in finalize (the failures are dropped)
    let dir = example("barrier");
    let finalize = dir.path().join("tenants/acme/scripts/finalize.luau");
    let src = std::fs::read_to_string(&finalize).unwrap();
    std::fs::write(
        &finalize,
        src.replace(
            "failed[member] = outcome.error or \"failed\"",
            "failed[member] = nil",
        ),
    )
    .unwrap();
    // WHEN the suite runs
    let (code, out, _) = native_test(dir.path(), &[]);
    // THEN it fails with exit 1, at the assertion's path:line, with expected and actual
    assert_eq!(code, 1, "{out}");
    let tests =
        std::fs::read_to_string(dir.path().join("tenants/acme/tests/order.test.luau")).unwrap();
    let line = tests
        .lines()
        .position(|l| l.contains("assert_eq(json.decode(t:get(\"Out\", \"summaries/b1.json\")), {"))
        .unwrap()
        + 1;
    assert!(
        out.contains(&format!(
            "tenants/acme/tests/order.test.luau:{line}: assert_eq: not equal (- expected, + actual):"
        )),
        "{out}"
    );
    assert!(
        out.contains(
            "-   failed = {\n-     [\"b.xml\"] = \"schema violation\",\n-   },\n+   failed = {},"
        ),
        "{out}"
    );
    assert!(out.contains("test tenants/acme/tests/order.test.luau :: an order completes when the partner has acked every document ... FAILED"), "{out}");
    assert!(out.ends_with(" passed, 1 failed\n"), "{out}");
}

#[test]
fn a_script_error_names_the_script_file_and_line() {
    // GIVEN a script that fails on line 3, invoked and run from the queue
    let dir = project(
        &[(
            "bad",
            "function on_invoke(ctx, ev)\n  local x = ev.n\n  return x + 1\nend\nfunction on_queue(ctx, ev)\n\n  error(\"no \" .. ev.what)\nend",
        )],
        r#"
test("invoke", function(t)
  t:invoke("bad", {})
end)
test("drain", function(t)
  t:send("bad", { what = "luck" })
  t:drain()
end)
test("drain allowing failures", function(t)
  t:send("bad", { what = "luck" })
  local r = t:drain({ allow_failures = true })
  assert_eq(#r.failures, 1)
  t:advance("6m")
  t:drain({ allow_failures = true })
  assert_eq(#t:dead_letters(), 0, "four attempts left")
end)
"#,
    );
    let (code, out, _) = native_test(dir.path(), &[]);
    assert_eq!(code, 1, "{out}");
    // THEN the test's line and the script's file:line are named
    assert!(
        out.contains("tenants/acme/tests/more/a.test.luau:3: t:invoke: "),
        "{out}"
    );
    assert!(
        out.contains("tenants/acme/scripts/bad.luau:3: attempt to perform arithmetic"),
        "{out}"
    );
    assert!(
        out.contains("tenants/acme/tests/more/a.test.luau:7: t:drain: 1 message(s) failed"),
        "{out}"
    );
    assert!(
        out.contains("tenants/acme/scripts/bad.luau:7: no luck"),
        "{out}"
    );
    assert!(out.contains("drain allowing failures ... ok"), "{out}");
    // AND under a failure, what its runs logged as warnings and errors
    assert!(
        out.contains("warnings and errors its runs logged:\n  {")
            && out.contains("message failed; it will be retried"),
        "{out}"
    );
    assert!(out.ends_with("\n1 passed, 2 failed\n"), "{out}");
}

#[test]
fn a_test_requires_the_tenants_modules_as_scripts_do_and_errors_name_its_line() {
    // GIVEN a tenant with a module lib/money (alias @lib), two modules that require each
    // other, and a script that uses lib/money too
    let dir = project(
        &[(
            "price",
            "local money = require(\"@lib/money\")\nfunction on_invoke(ctx, ev)\n  return money.cents(ev.eur)\nend",
        )],
        r#"local money = require("@lib/money")
test("a module's function, unit-tested", function()
  assert_eq(money.cents("1.25"), 125)
  assert(rawequal(require("../../scripts/lib/money"), money), "./ is the test file's folder")
end)
test("the script that requires it agrees", function(t)
  assert_eq(t:invoke("price", { eur = "2.50" }), money.cents("2.50"))
end)
test("a missing module", function()
  require("@lib/mony")
end)
test("a cycle", function()
  require("../../scripts/cyc/a")
end)
test("out of the tenant", function()
  require("../../../../other/scripts/x")
end)
test("the host API", function()
  money.log()
end)
"#,
    );
    let p = dir.path().join("tenants/acme");
    std::fs::write(
        p.join(".luaurc"),
        r#"{ "aliases": { "lib": "./scripts/lib" } }"#,
    )
    .unwrap();
    for (file, src) in [
        ("lib/money.luau", "local M = {}\nfunction M.cents(eur)\n  return math.round(tonumber(eur) * 100)\nend\nfunction M.log()\n  native.log(\"info\", \"x\")\nend\nreturn M\n"),
        ("cyc/a.luau", "local b = require(\"./b\")\nreturn {}\n"),
        ("cyc/b.luau", "local a = require(\"./a\")\nreturn {}\n"),
    ] {
        let path = p.join("scripts").join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, src).unwrap();
    }
    // WHEN its tests run
    let (code, out, _) = native_test(dir.path(), &[]);
    assert_eq!(code, 1, "{out}");
    // THEN the module is unit-tested in the test file, and is the scripts' module
    assert!(
        out.contains("a module's function, unit-tested ... ok"),
        "{out}"
    );
    assert!(
        out.contains("the script that requires it agrees ... ok"),
        "{out}"
    );
    // AND each error names the test file's line, the path and the cause
    let file = "tenants/acme/tests/more/a.test.luau";
    for want in [
        format!("{file}:10: require(\"@lib/mony\"): there is no module tenants/acme/scripts/lib/mony.luau"),
        format!("{file}:13: require(\"../../scripts/cyc/a\"): the module raised an error: tenants/acme/scripts/cyc/a.luau:1: require(\"./b\"): the module raised an error: tenants/acme/scripts/cyc/b.luau:1: require(\"./a\"): a cycle of requires: cyc/a.luau -> cyc/b.luau -> cyc/a.luau"),
        format!("{file}:16: require(\"../../../../other/scripts/x\"): the path leaves the tenant's scripts"),
        "tenants/acme/scripts/lib/money.luau:6: native.log: a module required by a test file runs in the test's VM, which has no host API".to_string(),
    ] {
        assert!(out.contains(&want), "{want}\nin:\n{out}");
    }
    assert!(out.ends_with("\n2 passed, 4 failed\n"), "{out}");
}

#[test]
fn tests_never_see_each_others_writes_clock_or_stubs() {
    // GIVEN a first test that writes, stubs, sets a secret and moves the clock, and a second that
    // looks for each of them
    let dir = project(
        &[(
            "call",
            r#"function on_invoke(ctx, ev)
  return native.http.request({ url = "https://api.example.com/x", headers = { k = "{{vault:key}}" }, vault = { "header" } }).body
end"#,
        )],
        r#"
test("one", function(t)
  t:put("Data", "k", "v")
  t:vault("key", "s3cret")
  t:stub("api.example.com", "/x", { body = "stubbed" })
  assert_eq(t:invoke("call"), "stubbed")
  assert_eq(t:requests()[1].headers.k, "s3cret")
  t:advance("30d")
  _G.kept = t
end)
test("two", function(t)
  assert_eq(t:get("Data", "k"), nil)
  assert_eq(t:list("Data"), {})
  assert_eq(t:now(), 1767225600000)
  assert_eq(os.time(), 1767225600)
  assert_eq(t:requests(), {})
  local ok, err = pcall(function() t:invoke("call") end)
  assert(not ok)
  assert(string.find(err, "the vault has no secret \"key\""), err)
  t:vault("key", "another-secret")
  ok, err = pcall(function() t:invoke("call") end)
  assert(string.find(err, "no stub answers GET api.example.com/x"), err)
  ok, err = pcall(function() _G.kept:get("Data", "k") end)
  assert(string.find(err, "the world of this test is gone"), err)
end)
"#,
    );
    // WHEN both run, in order
    let (code, out, err) = native_test(dir.path(), &[]);
    // THEN the second sees none of the first
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.ends_with("\n2 passed, 0 failed\n"), "{out}");
    // AND the project's .native/ was never made
    assert!(!dir.path().join(".native").exists());
}

#[test]
fn ids_are_the_same_on_every_run_and_filter_and_junit_work() {
    // GIVEN a test that fails with the ids it was given
    let dir = project(
        &[(
            "ids",
            "function on_invoke(ctx, ev)\n  return { ctx.request_id, native.timer.at({ in_s = 60 }, \"ids\", {}), tostring(math.random(1, 1000000000)) }\nend\nfunction on_queue(ctx, ev)\n  native.timer.at({ in_s = 60 }, \"ids\", {})\nend",
        )],
        r#"
test("ids", function(t)
  local ids = t:invoke("ids")
  table.insert(ids, tostring(math.random(1, 1000000000)))
  -- Messages that one drain runs draw their ids in the same order on every run.
  for _ = 1, 5 do t:send("ids") end
  t:drain()
  for _, timer in t:timers() do table.insert(ids, timer.id) end
  error(table.concat(ids, " "))
end)
test("other", function(t) end)
"#,
    );
    // WHEN it runs twice
    let junit = dir.path().join("junit.xml");
    let (code, first, _) = native_test(
        dir.path(),
        &["--filter", ":: ids", "--junit", junit.to_str().unwrap()],
    );
    let (_, again, _) = native_test(dir.path(), &["--filter", ":: ids"]);
    // THEN both runs show the same ids, and the filter left the other test out
    assert_eq!(code, 1);
    assert_eq!(first, again);
    assert!(first.ends_with("\n0 passed, 1 failed\n"), "{first}");
    assert!(!first.contains("other"), "{first}");
    // AND the JUnit XML names the failure
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"1\" failures=\"1\""), "{xml}");
    assert!(
        xml.contains("<testcase classname=\"tenants/acme/tests/more/a.test.luau\" name=\"ids\""),
        "{xml}"
    );
}

#[test]
fn a_partner_acks_through_a_callback_url_and_the_url_is_the_same_on_every_run() {
    // GIVEN a script that makes a barrier of one member and hands out its callback URL
    let dir = project(
        &[
            (
                "make",
                r#"function on_invoke(ctx, ev)
  native.barrier.create({ id = "b1", members = { "a" }, continue_with = "done" })
  return native.barrier.callback_url("b1", "a")
end"#,
            ),
            (
                "done",
                "function on_queue(ctx, ev)\n  native.bucket.Data.put('done', 'yes')\nend",
            ),
        ],
        r#"
test("callback", function(t)
  local url = t:invoke("make")
  -- WHEN the partner POSTs its outcome to the URL
  local r = t:http("POST", url, { ok = true }, { authorization = "" })
  assert_eq(r.status, 200, r.body)
  t:drain()
  -- THEN the member is acked and the continuation ran
  assert_eq(t:get("Data", "done"), "yes")
  error("url " .. url)
end)
"#,
    );
    let (code, first, _) = native_test(dir.path(), &[]);
    let (_, again, _) = native_test(dir.path(), &[]);
    assert_eq!(code, 1, "{first}");
    assert!(
        first.contains("a.test.luau:10: url http://127.0.0.1:8787/v1/callback/"),
        "{first}"
    );
    // AND the URL (its key from the test's seed, its expiry from the frozen clock) is the same
    assert_eq!(first, again);
}

#[test]
fn a_job_http_request_in_the_background_is_answered_by_a_stub() {
    // GIVEN a tenant whose job:http charges through an API, and whose continuation stores the
    // answer
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path();
    std::fs::write(
        p.join("deployment.json"),
        r#"{ "buckets": { "map": { "Out": "shop-out" } }, "batch": { "bucket": "shop-batch", "prefix": "t/" } }"#,
    )
    .unwrap();
    std::fs::create_dir_all(p.join("tenants/shop/scripts")).unwrap();
    std::fs::create_dir_all(p.join("tenants/shop/tests")).unwrap();
    std::fs::write(
        p.join("tenants/shop/config.json"),
        r#"{ "queue": true, "batch": true, "router": "router", "http": { "allow": ["pay.example.com"] }, "vault": ["pay.key"] }"#,
    )
    .unwrap();
    let scripts = [
        (
            "router",
            "local function on_route(ctx, ev)\n  local r = native.batch.route(ev)\n  return r and r.script and { script = r.script, event = r.event } or nil\nend",
        ),
        (
            "charge",
            r#"function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("charge", { method = "POST", url = "https://pay.example.com/charges",
    headers = { authorization = "Bearer {{vault:pay.key}}" }, body = "7", vault = { "header" } })
  job:continue_with("charged")
  return job:submit()
end"#,
        ),
        (
            "charged",
            r#"function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev)
  if not job then return end
  native.bucket.Out.put("charged", job:body("charge"))
end"#,
        ),
    ];
    for (name, src) in scripts {
        std::fs::write(p.join(format!("tenants/shop/scripts/{name}.luau")), src).unwrap();
    }
    std::fs::write(
        p.join("tenants/shop/tests/charge.test.luau"),
        r#"
test("a charge answered in the background", function(t)
  t:vault("pay.key", "sk_live_123")
  t:stub("pay.example.com", "/charges", { status = 201, body = "charged 7" })
  t:invoke("charge")
  -- WHEN the queues drain (the request runs in the background, its done.json comes after)
  t:drain()
  -- THEN the stub answered it, with the secret filled in, and the continuation stored it
  assert_eq(t:requests()[1].headers.authorization, "Bearer sk_live_123")
  assert_eq(t:get("Out", "charged"), "charged 7")
end)
"#,
    )
    .unwrap();
    let (code, out, err) = native_test(p, &[]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.ends_with("\n1 passed, 0 failed\n"), "{out}");
}

#[test]
fn usage_and_config_errors_exit_2() {
    let dir = project(&[], "test('x', function() end)");
    // An unknown tenant
    let (code, _, err) = native_test(dir.path(), &["nobody"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no tenant \"nobody\""), "{err}");
    // A broken tenant config
    std::fs::write(dir.path().join("tenants/acme/config.json"), "{ nope").unwrap();
    let (code, _, err) = native_test(dir.path(), &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("tenants/acme/config.json"), "{err}");
    // No project
    let empty = tempfile::tempdir().unwrap();
    let (code, _, err) = native_test(empty.path(), &[]);
    assert_eq!(code, 2, "{err}");
    // A test file that does not compile fails as a test of its own
    let dir = project(&[], "test('x', function(t)\n  local = 1\nend)");
    let (code, out, _) = native_test(dir.path(), &[]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(":: (loading the file) ... FAILED"), "{out}");
    assert!(
        out.contains("tenants/acme/tests/more/a.test.luau:2:"),
        "{out}"
    );
    // A test that loops forever fails at its --timeout, and the next one runs
    let dir = project(
        &[],
        "test('loops', function(t)\n  while true do end\nend)\ntest('next', function(t) end)",
    );
    let started = std::time::Instant::now();
    let (code, out, _) = native_test(dir.path(), &["--timeout", "1"]);
    assert_eq!(code, 1, "{out}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert!(
        out.contains("a.test.luau:2: the test ran for more than 1 s (--timeout)"),
        "{out}"
    );
    assert!(out.ends_with("\n1 passed, 1 failed\n"), "{out}");
}
