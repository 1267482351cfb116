//! End-to-end tests of the `native` command: each test drives the built binary as a subprocess
//! against a project in a temporary folder, and checks exit codes, stdout and stderr.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::{json, Value};

use crate::support::native_bin;

/// What one run of `native` did.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: Vec<u8>,
    stderr: String,
}

impl Run {
    fn from(o: Output) -> Self {
        Run {
            code: o.status.code().expect("native was killed by a signal"),
            stdout: o.stdout,
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        }
    }

    fn out(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    /// Asserts the exit code, showing everything when it differs.
    fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code,
            want,
            "exit code\n--- stdout:\n{}\n--- stderr:\n{}",
            self.out(),
            self.stderr
        );
        self
    }

    fn ok(&self) -> &Self {
        self.code(0)
    }

    /// The JSON lines of stderr (script and runtime logs).
    fn logs(&self) -> Vec<Value> {
        self.stderr
            .lines()
            .filter(|l| l.starts_with('{'))
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("log line {l:?}: {e}")))
            .collect()
    }

    /// Asserts that stderr names this, with everything shown when it does not.
    fn err_has(&self, want: &str) -> &Self {
        assert!(
            self.stderr.contains(want),
            "stderr lacks {want:?}:\n{}",
            self.stderr
        );
        self
    }
}

/// `native ARGS` in `cwd`.
fn native_in(cwd: &Path, args: &[&str]) -> Run {
    Run::from(
        Command::new(native_bin())
            .current_dir(cwd)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .expect("cannot run native"),
    )
}

/// `native --project DIR ARGS`, from another folder.
fn native(project: &Path, args: &[&str]) -> Run {
    let mut all = vec!["--project", project.to_str().unwrap()];
    all.extend_from_slice(args);
    native_in(&std::env::temp_dir(), &all)
}

/// `native --project DIR ARGS` with `input` on standard input.
fn native_stdin(project: &Path, args: &[&str], input: &[u8]) -> Run {
    let mut child = Command::new(native_bin())
        .arg("--project")
        .arg(project)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run native");
    child.stdin.take().unwrap().write_all(input).unwrap();
    Run::from(child.wait_with_output().unwrap())
}

/// A router that sends every `In` object to `copy`, which writes it to `Acks` under the same key.
const ROUTER: &str = r#"
local function on_route(_ctx, event)
  if event.bucket == "In" then return "copy" end
  return nil
end
return { on_route = on_route }
"#;

const COPY: &str = r#"
function on_queue(ctx, ev)
  local body = native.bucket.In.get(ev.key)
  native.bucket.Acks.put(ev.key, body)
end
"#;

/// A project with [`DEPLOYMENT`] (buckets In and Acks) and the tenant `acme` with `scripts`.
fn project(scripts: &[(&str, &str)]) -> tempfile::TempDir {
    project_with_config(
        r#"{ "queue": true, "limits": { "timeout_s": 10 } }"#,
        scripts,
    )
}

fn project_with_config(config: &str, scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(dir.path(), "acme", config, scripts);
    dir
}

// ---------------------------------------------------------------------------------------------
// demo, init, check, --help

#[test]
fn demo_runs_the_example_end_to_end() {
    // GIVEN nothing but the binary
    // WHEN `native demo` runs
    let r = native_in(&std::env::temp_dir(), &["demo"]);
    // THEN it succeeds and prints each step and the greeting
    r.ok();
    let out = r.out();
    assert!(out.contains("Hello, Ada!"), "{out}");
    assert!(out.contains("== 1.") && out.contains("== 3."), "{out}");
    assert!(
        out.contains("deleted after the continuation succeeded: true"),
        "{out}"
    );
    // AND the script's log is a JSON line on stderr
    assert!(
        r.logs().iter().any(|l| l["msg"] == "document written"),
        "{}",
        r.stderr
    );
}

#[test]
fn help_documents_every_verb_and_unknown_verbs_are_usage_errors() {
    // WHEN `native --help` runs THEN every verb is listed
    let r = native_in(&std::env::temp_dir(), &["--help"]);
    r.ok();
    for verb in [
        "demo", "init", "check", "invoke", "send", "put", "get", "ls", "partner", "drain", "dlq",
    ] {
        assert!(
            r.out().lines().any(|l| l.trim_start().starts_with(verb)),
            "{verb} missing from --help:\n{}",
            r.out()
        );
    }
    // WHEN a verb does not exist, or an argument is missing THEN it is a usage error
    native_in(&std::env::temp_dir(), &["frobnicate"]).code(2);
    native_in(&std::env::temp_dir(), &["invoke", "acme"]).code(2);
}

#[test]
fn init_makes_a_project_that_checks_and_runs() {
    // GIVEN an empty folder
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("proj");
    // WHEN `native init DIR` runs
    native_in(tmp.path(), &["init", dir.to_str().unwrap()]).ok();
    // THEN it made a project that `native check` accepts, run from inside it (no --project)
    let r = native_in(&dir, &["check"]);
    r.ok();
    assert!(
        r.out().contains("ok: 1 tenant(s), 4 script(s)"),
        "{}",
        r.out()
    );
    // AND `invoke` prints the return value as JSON on stdout, logs as JSON lines on stderr
    let r = native_in(&dir, &["invoke", "hello", "start", r#"{"name":"Ada"}"#]);
    r.ok();
    let out: Value = serde_json::from_slice(&r.stdout).expect("stdout is JSON");
    assert_eq!(out, json!({ "key": "greetings/Ada.json" }));
    let written = r
        .logs()
        .into_iter()
        .find(|l| l["msg"] == "document written")
        .unwrap_or_else(|| panic!("no log record:\n{}", r.stderr));
    assert_eq!(written["level"], "info");
    assert_eq!(written["tenant"], "hello");
    assert_eq!(written["script"], "start");
    assert_eq!(written["key"], "greetings/Ada.json");
    assert_eq!(written["request_id"].as_str().map(str::len), Some(32));
    // AND the drain after it ran router, greet and finish: the result is there, the request gone
    assert_eq!(
        native_in(&dir, &["get", "hello", "Out", "results/Ada.txt"])
            .ok()
            .out(),
        "Hello, Ada!"
    );
    assert_eq!(native_in(&dir, &["ls", "hello", "In"]).ok().out(), "");
    // WHEN init runs again on the same folder THEN it refuses to overwrite
    native_in(tmp.path(), &["init", dir.to_str().unwrap()])
        .code(2)
        .err_has("already exists");
}

#[test]
fn check_names_the_file_and_field_of_bad_config() {
    // GIVEN a tenant whose limits are above the ceiling
    let p = project_with_config(
        r#"{ "limits": { "max_data_ops": 20000 } }"#,
        &[("s", "function on_invoke() end")],
    );
    // WHEN `native check` runs THEN exit 2 names the file, the field and the ceiling
    native(p.path(), &["check"]).code(2).err_has(
        "tenants/acme/config.json: limits.max_data_ops: 20000 is above the ceiling of 10000",
    );
    // AND invoking a script of that tenant is refused the same way
    native(p.path(), &["invoke", "acme", "s"])
        .code(2)
        .err_has("limits.max_data_ops");

    // GIVEN a tenant config with an unknown field
    let p = project_with_config(r#"{ "queue": true, "routr": "x" }"#, &[]);
    // THEN check names the file and the field
    native(p.path(), &["check"])
        .code(2)
        .err_has("tenants/acme/config.json")
        .err_has("unknown field `routr`");

    // GIVEN a deployment.json that is not JSON
    let p = project(&[]);
    std::fs::write(p.path().join("deployment.json"), "{ \"buckets\": ").unwrap();
    // THEN every verb that opens the project fails with exit 2 naming it
    native(p.path(), &["check"])
        .code(2)
        .err_has("deployment.json");
    native(p.path(), &["ls", "acme", "In"])
        .code(2)
        .err_has("deployment.json");
}

#[test]
fn check_refuses_configs_that_are_not_objects_and_names_json_paths() {
    // GIVEN a tenant config that is a JSON array
    let p = project_with_config("[true, true]", &[("s", "function on_invoke() end")]);
    // WHEN `native check` runs THEN exit 2 names the file and why
    native(p.path(), &["check"])
        .code(2)
        .err_has("tenants/acme/config.json: must be a JSON object { ... }, not an array");
    // GIVEN a limit of the wrong type THEN the error gives its JSON path
    let p = project_with_config(r#"{ "limits": { "timeout_s": "5" } }"#, &[]);
    native(p.path(), &["check"]).code(2).err_has(
        "tenants/acme/config.json: limits.timeout_s: invalid type: string \"5\", expected u32",
    );
}

#[test]
fn check_refuses_nul_bytes_and_accepts_a_bom() {
    // GIVEN a script whose second line holds a NUL byte, with an error hidden after it
    let p = project(&[(
        "nul",
        "function on_invoke() return 1 end\n--\0\nlocal = = 1\n",
    )]);
    // WHEN `native check` runs, or the script is invoked
    // THEN both refuse it naming the file and the line (Luau alone ignores all after the NUL)
    native(p.path(), &["check"])
        .code(2)
        .err_has("tenants/acme/scripts/nul.luau:2: contains a NUL byte");
    native(p.path(), &["invoke", "acme", "nul"])
        .code(2)
        .err_has("tenants/acme/scripts/nul.luau:2: contains a NUL byte");
    // GIVEN a script saved with a UTF-8 BOM THEN it checks and runs
    let p = project(&[("bom", "\u{feff}function on_invoke() return 7 end")]);
    native(p.path(), &["check"]).ok();
    assert_eq!(
        native(p.path(), &["invoke", "acme", "bom"])
            .ok()
            .out()
            .trim(),
        "7"
    );
}

#[test]
fn check_names_file_and_line_of_a_syntax_error() {
    // GIVEN a good script and a script with a syntax error on line 3
    let p = project(&[
        ("good", "function on_invoke() return 1 end"),
        (
            "bad",
            "-- a comment\nfunction on_invoke(ctx, ev)\n  local x = = 1\nend\n",
        ),
    ]);
    // WHEN `native check` runs THEN exit 2 names the file and the line
    native(p.path(), &["check"])
        .code(2)
        .err_has("tenants/acme/scripts/bad.luau:3:");
    // AND the good script still runs
    native(p.path(), &["invoke", "acme", "good"]).ok();
    // WHEN the bad one is invoked THEN it fails naming the script and line
    native(p.path(), &["invoke", "acme", "bad"])
        .code(1)
        .err_has("bad.luau:3:");
}

#[test]
fn check_lints_what_would_fail_only_at_run_time() {
    // GIVEN a script with a mistyped global, host function, bucket and script name
    let p = project(&[
        ("finish", "function on_queue() end"),
        (
            "typos",
            "function on_invoke(ctx, ev)\n  nativ.log('info', 'x')\n  native.db.gett('p', 'k')\n  \
             native.bucket.Outt.put('k', 'v')\n  native.queue.send(\"finsh\", {})\nend",
        ),
    ]);
    // WHEN `native check` runs THEN exit 2, each error at its file, line and column
    native(p.path(), &["check"])
        .code(2)
        .err_has("tenants/acme/scripts/typos.luau:2:3: error: unknown global `nativ`: did you mean \"native\"?")
        .err_has("tenants/acme/scripts/typos.luau:3:13: error: `native.db.gett` does not exist: did you mean \"get\"?")
        .err_has("tenants/acme/scripts/typos.luau:4:17: error: unknown bucket `Outt`: deployment.json maps no bucket of that name; its buckets: Acks, In")
        .err_has("tenants/acme/scripts/typos.luau:5:21: error: there is no script \"finsh\" (scripts/finsh.luau) in tenant \"acme\"; did you mean \"finish\"?");
}

#[test]
fn check_finds_pending_work_that_names_a_script_that_is_gone() {
    // GIVEN an open barrier whose continuation is `finish`, named at run time
    let p = project(&[
        ("finish", "function on_queue() end"),
        (
            "start",
            "function on_invoke(ctx, ev)\n  return native.barrier.create({ id = 'b1', members = { 'a' }, continue_with = ev.next })\nend",
        ),
    ]);
    native(
        p.path(),
        &["invoke", "acme", "start", r#"{"next": "finish"}"#],
    )
    .ok();
    native(p.path(), &["check"]).ok();
    // WHEN the continuation is removed THEN `native check` fails on the pending barrier
    std::fs::remove_file(p.path().join("tenants/acme/scripts/finish.luau")).unwrap();
    native(p.path(), &["check"]).code(2).err_has(
        "tenants/acme/scripts/finish.luau:1:1: error: pending barrier \"b1\" (its continue_with) names \
         script \"finish\", which the tenant no longer has",
    );
}

#[test]
fn project_flag_and_the_current_folder() {
    // GIVEN a project, and another folder that is none
    let p = project(&[("s", "function on_invoke(ctx, ev) return ev end")]);
    let elsewhere = tempfile::tempdir().unwrap();
    // WHEN run from elsewhere with --project (before or after the verb) THEN it works
    let r = native_in(
        elsewhere.path(),
        &[
            "--project",
            p.path().to_str().unwrap(),
            "invoke",
            "acme",
            "s",
            "[1]",
        ],
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&r.ok().stdout).unwrap(),
        json!([1])
    );
    let r = native_in(
        elsewhere.path(),
        &[
            "invoke",
            "acme",
            "s",
            "[2]",
            "--project",
            p.path().to_str().unwrap(),
        ],
    );
    assert_eq!(
        serde_json::from_slice::<Value>(&r.ok().stdout).unwrap(),
        json!([2])
    );
    // WHEN run from inside the project without --project THEN it works too
    native_in(p.path(), &["invoke", "acme", "s"]).ok();
    // WHEN run elsewhere without --project THEN exit 2 says how to fix it
    native_in(elsewhere.path(), &["invoke", "acme", "s"])
        .code(2)
        .err_has("deployment.json")
        .err_has("--project");
    // AND the folder that is no project stays untouched
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------------------------
// invoke, send

#[test]
fn invoke_prints_the_return_value_as_json_and_takes_events_from_files() {
    // GIVEN a script that echoes what it got, with ctx
    let p = project(&[(
        "echo",
        r#"function on_invoke(ctx, ev)
  native.log("debug", "dbg", { n = 1 })
  native.log("warn", "careful")
  return { ev = ev, tenant = ctx.tenant, script = ctx.script, attempt = ctx.attempt }
end"#,
    )]);
    // WHEN invoked with inline JSON
    let r = native(
        p.path(),
        &[
            "invoke",
            "acme",
            "echo",
            r#"{"a":[1,2,{"b":null}],"s":"é"}"#,
        ],
    );
    // THEN stdout is exactly the return value as JSON
    r.ok();
    let out: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(
        out,
        json!({ "ev": { "a": [1, 2, {}], "s": "é" }, "tenant": "acme", "script": "echo", "attempt": 1 })
    );
    // AND stderr holds nothing but JSON log lines, with their levels and fields
    for line in r.stderr.lines() {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "not a JSON line: {line:?}"
        );
    }
    let logs = r.logs();
    assert!(
        logs.iter()
            .any(|l| l["level"] == "debug" && l["msg"] == "dbg" && l["n"] == 1),
        "{logs:?}"
    );
    assert!(
        logs.iter()
            .any(|l| l["level"] == "warn" && l["msg"] == "careful"),
        "{logs:?}"
    );

    // WHEN invoked with @FILE, or with no event at all
    let file = p.path().join("ev.json");
    std::fs::write(&file, r#"{ "from": "file" }"#).unwrap();
    let at = format!("@{}", file.display());
    let r = native(p.path(), &["invoke", "acme", "echo", &at]);
    // THEN the event is the file's content, or {}
    assert_eq!(
        serde_json::from_slice::<Value>(&r.ok().stdout).unwrap()["ev"],
        json!({ "from": "file" })
    );
    let r = native(p.path(), &["invoke", "acme", "echo"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&r.ok().stdout).unwrap()["ev"],
        json!({})
    );
}

#[test]
fn a_script_error_exits_1_naming_script_and_line() {
    // GIVEN a script that fails on line 3
    let p = project(&[(
        "boom",
        "function on_invoke(ctx, ev)\n  local x = 1\n  error('it broke')\nend",
    )]);
    // WHEN invoked THEN exit 1, stderr names tenant, script and line, and stdout is empty
    let r = native(p.path(), &["invoke", "acme", "boom"]);
    r.code(1)
        .err_has("script \"boom\" of tenant \"acme\" failed: boom.luau:3: it broke");
    assert!(r.stdout.is_empty(), "{}", r.out());
}

#[test]
fn send_queues_for_on_queue_and_delay_holds_it_back() {
    // GIVEN a script whose on_queue writes the event it got into Acks (whose events are dropped)
    let p = project(&[
        ("router", "function on_route() return nil end"),
        (
            "ack",
            r#"function on_queue(ctx, ev)
  native.bucket.Acks.put(ev.id .. ".json", native.json.encode({ ev = ev, attempt = ctx.attempt }))
end"#,
        ),
    ]);
    // WHEN sent without delay THEN the drain after it ran on_queue with exactly that event
    native(
        p.path(),
        &["send", "acme", "ack", r#"{"id":"now","n":[1,2]}"#],
    )
    .ok();
    let got = native(p.path(), &["get", "acme", "Acks", "now.json"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&got.ok().stdout).unwrap(),
        json!({ "ev": { "id": "now", "n": [1, 2] }, "attempt": 1 })
    );

    // WHEN sent with --delay 3
    native(
        p.path(),
        &["send", "acme", "ack", r#"{"id":"later"}"#, "--delay", "3"],
    )
    .ok();
    // THEN it has not run yet, and a plain drain leaves it waiting
    native(p.path(), &["get", "acme", "Acks", "later.json"]).code(1);
    native(p.path(), &["drain"])
        .ok()
        .err_has("drained: 0 handled, 0 failed");
    native(p.path(), &["get", "acme", "Acks", "later.json"]).code(1);
    // AND `drain --wait` waits for it and runs it (two messages: it, and the event of its write)
    native(p.path(), &["drain", "--wait"])
        .ok()
        .err_has("drained: 2 handled, 0 failed");
    native(p.path(), &["get", "acme", "Acks", "later.json"]).ok();

    // WHEN the delay is above 900 s THEN it is a usage error and nothing is queued
    native(
        p.path(),
        &["send", "acme", "ack", r#"{"id":"x"}"#, "--delay", "901"],
    )
    .code(2)
    .err_has("900");
    native(p.path(), &["drain", "--wait"])
        .ok()
        .err_has("drained: 0 handled, 0 failed");
}

#[test]
fn no_drain_leaves_the_queues_for_a_later_drain() {
    // GIVEN a router that copies In objects to Acks, and a script that queues a message
    let p = project(&[
        ("router", ROUTER),
        ("copy", COPY),
        (
            "start",
            r#"function on_invoke(ctx, ev)
  native.bucket.In.put("from-invoke.txt", "i")
  native.queue.send("mark", { key = "from-send-by-script.txt" })
  return "started"
end"#,
        ),
        (
            "mark",
            r#"function on_queue(ctx, ev) native.bucket.Acks.put(ev.key, "m") end"#,
        ),
    ]);
    // WHEN invoke, put and send run with --no-drain
    let r = native(p.path(), &["invoke", "acme", "start", "--no-drain"]);
    assert_eq!(
        serde_json::from_slice::<Value>(&r.ok().stdout).unwrap(),
        json!("started")
    );
    native(
        p.path(),
        &[
            "put",
            "acme",
            "In",
            "from-put.txt",
            "--data",
            "p",
            "--no-drain",
        ],
    )
    .ok();
    native(
        p.path(),
        &[
            "send",
            "acme",
            "mark",
            r#"{"key":"from-send.txt"}"#,
            "--no-drain",
        ],
    )
    .ok();
    // THEN nothing was processed yet
    assert_eq!(native(p.path(), &["ls", "acme", "Acks"]).ok().out(), "");
    // WHEN drained THEN everything ran once: four messages, and the four events of the Acks
    // objects that they wrote (which the router drops)
    native(p.path(), &["drain"])
        .ok()
        .err_has("drained: 8 handled, 0 failed");
    assert_eq!(
        native(p.path(), &["ls", "acme", "Acks"]).ok().out(),
        "from-invoke.txt\nfrom-put.txt\nfrom-send-by-script.txt\nfrom-send.txt\n"
    );
}

// ---------------------------------------------------------------------------------------------
// put, get, ls

#[test]
fn put_from_data_file_and_stdin_then_get_and_ls() {
    // GIVEN a tenant whose router drops every event
    let p = project(&[("router", "function on_route() return nil end")]);
    let file = p.path().join("upload.bin");
    let binary: Vec<u8> = (0..=255u8).collect();
    std::fs::write(&file, &binary).unwrap();
    // WHEN objects are put with --data, @FILE and - (stdin)
    native(
        p.path(),
        &["put", "acme", "In", "docs/a.txt", "--data", "alpha"],
    )
    .ok();
    let at = format!("@{}", file.display());
    native(p.path(), &["put", "acme", "In", "docs/b.bin", &at]).ok();
    native_stdin(
        p.path(),
        &["put", "acme", "In", "docs/sub/c.txt", "-"],
        b"from stdin\n",
    )
    .ok();
    native(p.path(), &["put", "acme", "In", "other.txt", "--data", ""]).ok();
    // THEN get prints each byte for byte
    assert_eq!(
        native(p.path(), &["get", "acme", "In", "docs/a.txt"])
            .ok()
            .stdout,
        b"alpha"
    );
    assert_eq!(
        native(p.path(), &["get", "acme", "In", "docs/b.bin"])
            .ok()
            .stdout,
        binary
    );
    assert_eq!(
        native(p.path(), &["get", "acme", "In", "docs/sub/c.txt"])
            .ok()
            .stdout,
        b"from stdin\n"
    );
    assert_eq!(
        native(p.path(), &["get", "acme", "In", "other.txt"])
            .ok()
            .stdout,
        b""
    );
    // AND ls prints one key a line, in order, relative to the tenant folder, by prefix
    assert_eq!(
        native(p.path(), &["ls", "acme", "In"]).ok().out(),
        "docs/a.txt\ndocs/b.bin\ndocs/sub/c.txt\nother.txt\n"
    );
    assert_eq!(
        native(p.path(), &["ls", "acme", "In", "docs/s"]).ok().out(),
        "docs/sub/c.txt\n"
    );
    assert_eq!(native(p.path(), &["ls", "acme", "Acks"]).ok().out(), "");
    // AND another tenant sees none of it
    assert_eq!(native(p.path(), &["ls", "other", "In"]).ok().out(), "");
    // WHEN an object is put again THEN get prints the new content
    native(
        p.path(),
        &["put", "acme", "In", "docs/a.txt", "--data", "beta"],
    )
    .ok();
    assert_eq!(
        native(p.path(), &["get", "acme", "In", "docs/a.txt"])
            .ok()
            .out(),
        "beta"
    );
}

#[test]
fn the_batch_bucket_takes_puts_and_only_done_json_notifies() {
    // GIVEN a router that logs each event it gets, and a tenant with batch on
    let p = project_with_config(
        r#"{ "queue": true, "batch": true }"#,
        &[(
            "router",
            "function on_route(ctx, ev) native.log('info', 'routed', ev) return nil end",
        )],
    );
    // WHEN a part and then done.json are put into $batch
    let part = native(
        p.path(),
        &[
            "put",
            "acme",
            "$batch",
            "jobs/j1/part.ndjson",
            "--data",
            "{}\n",
        ],
    );
    let done = native(
        p.path(),
        &[
            "put",
            "acme",
            "$batch",
            "jobs/j1/done.json",
            "--data",
            "{\"ok\":true}",
        ],
    );
    // THEN only done.json reached the router, as the $batch bucket with its relative key
    assert!(
        !part.ok().logs().iter().any(|l| l["msg"] == "routed"),
        "{}",
        part.stderr
    );
    let routed = done
        .ok()
        .logs()
        .into_iter()
        .find(|l| l["msg"] == "routed")
        .unwrap_or_else(|| panic!("done.json was not routed:\n{}", done.stderr));
    assert_eq!(routed["bucket"], "$batch");
    assert_eq!(routed["key"], "jobs/j1/done.json");
    assert_eq!(routed["size"], 11);
    assert_eq!(routed["event_name"], "ObjectCreated:Put");
    // AND ls and get see both
    assert_eq!(
        native(p.path(), &["ls", "acme", "$batch", "jobs/"])
            .ok()
            .out(),
        "jobs/j1/done.json\njobs/j1/part.ndjson\n"
    );
    assert_eq!(
        native(p.path(), &["get", "acme", "$batch", "jobs/j1/done.json"])
            .ok()
            .out(),
        "{\"ok\":true}"
    );
}

#[test]
fn put_without_content_or_with_bad_keys_is_a_usage_error() {
    let p = project(&[("router", "function on_route() return nil end")]);
    // WHEN put has no content, two contents, or a source that is neither @FILE nor -
    native(p.path(), &["put", "acme", "In", "k"])
        .code(2)
        .err_has("--data");
    native(p.path(), &["put", "acme", "In", "k", "-", "--data", "x"])
        .code(2)
        .err_has("not both");
    native(p.path(), &["put", "acme", "In", "k", "text"])
        .code(2)
        .err_has("@FILE");
    native(p.path(), &["put", "acme", "In", "k", "@/no/such/file"])
        .code(2)
        .err_has("/no/such/file");
    // WHEN keys or prefixes would leave the tenant folder THEN exit 2 says why
    native(p.path(), &["put", "acme", "In", "../x", "--data", "x"])
        .code(2)
        .err_has("\"..\" segment");
    native(p.path(), &["get", "acme", "In", "/abs"])
        .code(2)
        .err_has("absolute");
    native(p.path(), &["ls", "acme", "In", "../"]).code(2);
    // THEN nothing was written
    assert_eq!(native(p.path(), &["ls", "acme", "In"]).ok().out(), "");
}

#[test]
fn get_of_a_missing_object_exits_1() {
    // GIVEN an empty bucket
    let p = project(&[]);
    // WHEN a missing object is read THEN exit 1 names it, and stdout is empty
    let r = native(p.path(), &["get", "acme", "In", "nope.txt"]);
    r.code(1).err_has("In/nope.txt").err_has("does not exist");
    assert!(r.stdout.is_empty());
}

// ---------------------------------------------------------------------------------------------
// bad input: clear errors, nothing lost

#[test]
fn malformed_json_events_are_usage_errors_and_queue_nothing() {
    let p = project(&[
        ("s", "function on_invoke() return 1 end"),
        ("q", "function on_queue() end"),
    ]);
    // WHEN the event argument is not JSON THEN exit 2 says so
    native(p.path(), &["invoke", "acme", "s", "{bad"])
        .code(2)
        .err_has("event is not valid JSON");
    native(p.path(), &["send", "acme", "q", "{\"a\":"])
        .code(2)
        .err_has("event is not valid JSON");
    // AND an event file that is not JSON, or missing, is named
    let file = p.path().join("ev.json");
    std::fs::write(&file, "not json").unwrap();
    let at = format!("@{}", file.display());
    native(p.path(), &["send", "acme", "q", &at])
        .code(2)
        .err_has("ev.json is not valid JSON");
    native(p.path(), &["invoke", "acme", "s", "@/no/such/event.json"])
        .code(2)
        .err_has("cannot read event file /no/such/event.json");
    // THEN nothing was queued
    native(p.path(), &["drain", "--wait"])
        .ok()
        .err_has("drained: 0 handled, 0 failed");
}

#[test]
fn unknown_bucket_script_or_tenant_are_usage_errors() {
    let p = project(&[
        ("s", "function on_invoke() return 1 end"),
        ("q", "function on_queue() end"),
    ]);
    // WHEN a bucket is not in buckets.map THEN exit 2 lists the known ones
    for verb in [
        &["put", "acme", "Nope", "k", "--data", "x"][..],
        &["get", "acme", "Nope", "k"][..],
        &["ls", "acme", "Nope"][..],
    ] {
        native(p.path(), verb)
            .code(2)
            .err_has("bucket \"Nope\" not found: deployment.json has Acks, In and $batch");
    }
    // WHEN a script does not exist THEN exit 2 lists the tenant's scripts
    for verb in ["invoke", "send"] {
        native(p.path(), &[verb, "acme", "ghost"])
            .code(2)
            .err_has("script \"ghost\" of tenant \"acme\" not found: the tenant has q, s");
    }
    // WHEN the tenant does not exist THEN exit 2 says so
    native(p.path(), &["invoke", "nobody", "s"])
        .code(2)
        .err_has("tenant \"nobody\" not found");
    native(p.path(), &["send", "nobody", "q"])
        .code(2)
        .err_has("tenant \"nobody\" not found");
    // THEN nothing was queued or dead-lettered
    native(p.path(), &["drain", "--wait"])
        .ok()
        .err_has("drained: 0 handled, 0 failed");
    assert_eq!(native(p.path(), &["dlq"]).ok().out(), "");
}

#[test]
fn router_returning_an_unknown_script_is_retried_then_dead_lettered() {
    // GIVEN a router that routes to a script that does not exist
    let p = project(&[
        (
            "router",
            "local function on_route(ctx, event) return 'ghost' end\nreturn { on_route = on_route }",
        ),
        ("real", "function on_queue() end"),
    ]);
    // WHEN an object lands THEN the first attempt fails: exit 1, naming the router's choice
    native(p.path(), &["put", "acme", "In", "doc.json", "--data", "{}"])
        .code(1)
        .err_has("on_route chose an unknown script")
        .err_has("\"ghost\"")
        .err_has("attempt 1");
    // AND the message stays: it is not yet dead
    assert_eq!(native(p.path(), &["dlq"]).ok().out(), "");
    // WHEN retried as the clock passes the visibility timeout THEN it fails until its fifth
    // receive, each attempt counted
    let stderr = drain_until_dead(p.path());
    for n in 2..=5 {
        assert!(stderr.contains(&format!("attempt {n} of 5")), "{stderr}");
    }
    // AND after the fifth the drain says it is a dead letter now, not that it comes back
    let fifth = &stderr[stderr.find("attempt 5 of 5").unwrap()..];
    assert!(fifth.contains("(the last: a dead letter now)"), "{fifth}");
    assert!(!fifth.contains("comes back after"), "{fifth}");
    assert!(fifth.contains("native dlq redrive"), "{fifth}");
    // AND `native dlq` lists it with its receive count and last error
    let r = native(p.path(), &["dlq"]);
    r.ok().err_has("1 dead letter(s)");
    let lines: Vec<Value> = r
        .out()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{}", r.out());
    let d = &lines[0];
    assert_eq!(d["queue"], "events");
    assert_eq!(d["tenant"], "acme");
    assert_eq!(d["receives"], 5);
    let last = d["last_error"].as_str().unwrap();
    assert!(
        last.contains("on_route chose an unknown script") && last.contains("ghost"),
        "{last}"
    );
    // AND with each attempt's error and time
    let attempts = d["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 5, "{d}");
    for (i, a) in attempts.iter().enumerate() {
        assert_eq!(a["attempt"], i + 1, "{d}");
        assert!(a["error"].as_str().unwrap().contains("ghost"), "{d}");
        assert!(a["at_ms"].as_i64().unwrap() > 0, "{d}");
    }
    // AND filtering by tenant keeps it for acme, hides it for another
    assert_eq!(
        native(p.path(), &["dlq", "acme"])
            .ok()
            .out()
            .lines()
            .count(),
        1
    );
    assert_eq!(native(p.path(), &["dlq", "other"]).ok().out(), "");
    // AND it is not retried again; the object itself is untouched
    native(p.path(), &["drain", "--wait"])
        .ok()
        .err_has("drained: 0 handled, 0 failed");
    assert_eq!(
        native(p.path(), &["get", "acme", "In", "doc.json"])
            .ok()
            .out(),
        "{}"
    );
}

/// Retries a project's one failing message until it is a dead letter: four times, the project
/// clock passes the queues' visibility timeout (360 s) and `native drain` runs, each drain
/// failing. Returns the drains' stderr, joined.
fn drain_until_dead(project: &Path) -> String {
    (0..4)
        .map(|_| {
            native(project, &["clock", "advance", "6m"]).ok();
            let r = native(project, &["drain"]);
            r.code(1);
            r.stderr
        })
        .collect()
}

/// Whether `s` holds a control that a terminal acts on (all but newline; C1 and DEL included).
fn has_raw_control(s: &str) -> bool {
    s.chars().any(|c| c.is_control() && c != '\n')
}

#[test]
fn script_text_reaches_the_terminal_with_controls_escaped() {
    // GIVEN scripts whose error, logs, return value and queued failure carry a screen clear,
    // a carriage return, a bell, DEL, a C1 CSI and a forged line
    let nasty = r#""\27[2J\r\7\127\u{9b}31m\nerror: forged""#;
    let p = project(&[
        (
            "boom",
            &format!("function on_invoke()\n  native.log('info', {nasty}, {{ f = {nasty} }})\n  print({nasty})\n  error({nasty})\nend"),
        ),
        ("ret", &format!("function on_invoke() return {{ v = {nasty} }} end")),
        ("q", &format!("function on_queue() error({nasty}) end")),
    ]);
    // WHEN it is invoked
    let r = native(p.path(), &["invoke", "acme", "boom"]);
    // THEN the error line shows the controls as escapes, on one line
    r.code(1)
        .err_has(r"boom.luau:4: \u{1b}[2J\r\u{7}\u{7f}\u{9b}31m\nerror: forged");
    assert!(!has_raw_control(&r.stderr), "{:?}", r.stderr);
    assert!(!r.stderr.contains("\nerror: forged"), "{}", r.stderr);
    // AND the log lines are still JSON, with the text intact once parsed
    // (and the verb's own line naming the chain it started)
    let logs = r.logs();
    assert_eq!(logs.len(), 3, "{}", r.stderr);
    assert_eq!(logs[2]["msg"], "invoked");
    assert_eq!(
        logs[0]["msg"],
        "\u{1b}[2J\r\u{7}\u{7f}\u{9b}31m\nerror: forged"
    );
    assert_eq!(logs[0]["f"], logs[0]["msg"]);
    assert_eq!(logs[1]["msg"], logs[0]["msg"]);

    // WHEN a script returns such text THEN stdout is JSON of the same value, with no raw control
    let r = native(p.path(), &["invoke", "acme", "ret"]);
    let out = r.ok().out();
    assert!(!has_raw_control(&out), "{out:?}");
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["v"], logs[0]["msg"]);

    // WHEN a queued script fails with it until it is dead-lettered
    native(p.path(), &["send", "acme", "q", "{}"]).code(1);
    let stderr = drain_until_dead(p.path());
    assert!(!has_raw_control(&stderr), "{stderr:?}");
    // THEN the drain report and `native dlq` show it escaped
    let r = native(p.path(), &["dlq", "acme"]);
    let out = r.ok().out();
    assert!(!has_raw_control(&out), "{out:?}");
    let d: Value = serde_json::from_str(out.trim()).unwrap();
    assert!(
        d["last_error"]
            .as_str()
            .unwrap()
            .contains("\u{9b}31m\nerror: forged"),
        "{d}"
    );

    // GIVEN an object holding such bytes WHEN `native get` writes it to a pipe
    // THEN the bytes are exact (escaping is for terminals only)
    let body = "\u{1b}[2J\r\u{7}\u{9b}x\n";
    native(
        p.path(),
        &["put", "acme", "In", "n.txt", "--data", body, "--no-drain"],
    )
    .ok();
    let r = native(p.path(), &["get", "acme", "In", "n.txt"]);
    assert_eq!(r.ok().stdout, body.as_bytes());
}

#[test]
fn a_failing_queued_script_is_dead_lettered_with_its_error() {
    // GIVEN a script whose on_queue always fails on line 2
    let p = project(&[(
        "flaky",
        "function on_queue(ctx, ev)\n  error('attempt ' .. ctx.attempt .. ' failed')\nend",
    )]);
    // WHEN a message is sent and drained until it is dead
    native(p.path(), &["send", "acme", "flaky", r#"{"id":7}"#])
        .code(1)
        .err_has("flaky.luau:2: attempt 1 failed");
    drain_until_dead(p.path());
    // THEN dlq shows it on the work queue with the event it carried and its last error
    let r = native(p.path(), &["dlq", "acme"]);
    let d: Value = serde_json::from_str(r.ok().out().trim()).unwrap();
    assert_eq!(d["queue"], "work");
    assert_eq!(d["receives"], 5);
    // (the chain `native send` started is the body's and the listing's trace)
    assert_eq!(
        d["body"],
        json!({ "tenant": "acme", "script": "flaky", "event": { "id": 7 }, "chain": d["trace"] })
    );
    assert!(d["trace"].is_string(), "{d}");
    assert!(
        d["last_error"]
            .as_str()
            .unwrap()
            .contains("flaky.luau:2: attempt 5 failed"),
        "{d}"
    );
}

// ---------------------------------------------------------------------------------------------
// two processes at once

#[test]
fn concurrent_processes_on_one_project_lose_nothing() {
    // GIVEN a router that copies every In object to Acks
    let p = project(&[("router", ROUTER), ("copy", COPY)]);
    let bin = native_bin();
    let n = 8;
    // WHEN several puts (each draining) and two drains run at the same time
    let mut children = Vec::new();
    for i in 0..n {
        children.push((
            format!("put {i}"),
            Command::new(&bin)
                .arg("--project")
                .arg(p.path())
                .args(["put", "acme", "In", &format!("k{i:02}.txt"), "--data"])
                .arg(format!("body {i}"))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap(),
        ));
        if i % 4 == 0 {
            children.push((
                format!("drain {i}"),
                Command::new(&bin)
                    .arg("--project")
                    .arg(p.path())
                    .arg("drain")
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap(),
            ));
        }
    }
    // THEN every process succeeds
    for (what, c) in children {
        let r = Run::from(c.wait_with_output().unwrap());
        assert_eq!(r.code, 0, "{what} failed:\n{}", r.stderr);
    }
    // AND after a final drain every object was copied exactly as written, none lost
    native(p.path(), &["drain", "--wait"]).ok();
    let keys: Vec<String> = (0..n).map(|i| format!("k{i:02}.txt")).collect();
    let want: String = keys.iter().map(|k| format!("{k}\n")).collect();
    assert_eq!(native(p.path(), &["ls", "acme", "In"]).ok().out(), want);
    assert_eq!(native(p.path(), &["ls", "acme", "Acks"]).ok().out(), want);
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            native(p.path(), &["get", "acme", "Acks", k]).ok().out(),
            format!("body {i}")
        );
    }
    assert_eq!(native(p.path(), &["dlq"]).ok().out(), "");
}

// ---------------------------------------------------------------------------------------------
// partner

/// A router that logs every event it gets and routes batch jobs to their continuation.
const BATCH_ROUTER: &str = r#"
function on_route(ctx, event)
  native.log("info", "routed", event)
  local routed = native.batch.route(event)
  if routed and routed.script then
    return { script = routed.script, event = routed.event }
  end
  return nil
end
"#;

/// A project whose tenant `acme` has batch on, with `scripts` beside [`BATCH_ROUTER`].
fn batch_project(scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let mut all = vec![("router", BATCH_ROUTER)];
    all.extend_from_slice(scripts);
    project_with_config(r#"{ "queue": true, "batch": true }"#, &all)
}

/// Puts `request` as `jobs/<job>/request.json` of acme, as a script's submit would.
fn put_request(p: &Path, request: &Value) {
    let file = p.join("request.json");
    std::fs::write(&file, serde_json::to_vec(request).unwrap()).unwrap();
    let key = format!("jobs/{}/request.json", request["job"].as_str().unwrap());
    let at = format!("@{}", file.display());
    native(p, &["put", "acme", "$batch", &key, &at, "--no-drain"]).ok();
}

fn request(job: &str, queries: &[(&str, &str)]) -> Value {
    json!({ "v": 1, "job": job, "created_ms": 1761300000000_i64, "inputs": {},
            "queries": queries.iter().map(|(n, q)| json!({ "name": n, "query": q, "params": {} })).collect::<Vec<_>>() })
}

/// Reads `jobs/<job>/done.json` and checks every part it names against the bucket: present,
/// the promised bytes and sha256, and the promised rows. Returns done.json and the NDJSON text
/// of each result, decompressed.
fn check_done(p: &Path, job: &str) -> (Value, std::collections::BTreeMap<String, String>) {
    use sha2::Digest;
    let done: Value = serde_json::from_slice(
        &native(
            p,
            &["get", "acme", "$batch", &format!("jobs/{job}/done.json")],
        )
        .ok()
        .stdout,
    )
    .unwrap();
    let mut texts = std::collections::BTreeMap::new();
    for (name, result) in done["results"].as_object().into_iter().flatten() {
        let mut text = Vec::new();
        for part in result["parts"].as_array().unwrap() {
            let key = format!("jobs/{job}/{}", part["key"].as_str().unwrap());
            let data = native(p, &["get", "acme", "$batch", &key])
                .ok()
                .stdout
                .clone();
            assert_eq!(part["bytes"], json!(data.len()), "bytes of {key}");
            assert_eq!(
                part["sha256"],
                json!(hex::encode(sha2::Sha256::digest(&data))),
                "sha256 of {key}"
            );
            if data.starts_with(&[0x1f, 0x8b]) {
                use std::io::Read;
                flate2::read::MultiGzDecoder::new(&data[..])
                    .read_to_end(&mut text)
                    .unwrap();
            } else {
                text.extend(data);
            }
        }
        let text = String::from_utf8(text).unwrap();
        let rows = text.lines().filter(|l| !l.trim().is_empty()).count();
        assert_eq!(result["rows"], json!(rows), "rows of {name}");
        texts.insert(name.clone(), text);
    }
    (done, texts)
}

#[test]
fn partner_exec_writes_verified_parts_then_done_json_and_the_router_sees_it() {
    // GIVEN a request with two queries, the second of which looks at the bucket while it runs
    let p = batch_project(&[]);
    put_request(
        p.path(),
        &request("j1", &[("nums", "seq"), ("probe", "probe")]),
    );
    let probe = format!(
        "n='{}'; d='{}'; \
         if \"$n\" --project \"$d\" get acme '$batch' jobs/j1/done.json >/dev/null 2>&1; \
         then done=true; else done=false; fi; \
         if \"$n\" --project \"$d\" get acme '$batch' jobs/j1/nums.0001.ndjson.gz >/dev/null 2>&1; \
         then part=true; else part=false; fi; \
         echo \"{{\\\"done_json\\\":$done,\\\"nums_part\\\":$part}}\"",
        native_bin().display(),
        p.path().display()
    );
    let cmd = format!("if [ \"$NATIVE_QUERY\" = seq ]; then seq 1 300000; else {probe}; fi");
    // WHEN the partner answers it, gzipped, in parts of at most 1 MiB
    let r = native(
        p.path(),
        &[
            "partner",
            "acme",
            "--exec",
            &cmd,
            "--gzip",
            "--part-mb",
            "1",
        ],
    );
    // THEN it prints the job and drains: the router saw done.json, and no part
    r.ok();
    assert_eq!(r.out(), "j1: 2 queries, 300001 rows: ok\n");
    let routed: Vec<_> = r
        .logs()
        .into_iter()
        .filter(|l| l["msg"] == "routed")
        .map(|l| l["key"].clone())
        .collect();
    assert_eq!(routed, [json!("jobs/j1/done.json")], "{}", r.stderr);
    // AND every part done.json names is there with its bytes, sha256 and rows
    let (done, texts) = check_done(p.path(), "j1");
    assert_eq!(done["ok"], true);
    let parts: Vec<_> = done["results"]["nums"]["parts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(parts, ["nums.0000.ndjson.gz", "nums.0001.ndjson.gz"]);
    let want: String = (1..=300000).map(|i| format!("{i}\n")).collect();
    assert_eq!(texts["nums"], want);
    // AND while the last query ran, the first query's parts were there and done.json was not
    assert_eq!(texts["probe"], "{\"done_json\":false,\"nums_part\":true}\n");
    // AND a second run finds nothing pending
    let again = native(p.path(), &["partner", "acme", "--exec", "exit 9"]);
    again.ok().err_has("no pending requests");
    assert_eq!(again.out(), "");
}

#[test]
fn partner_fixtures_drive_a_script_submitted_job_to_its_continuation() {
    // GIVEN a script that submits a job, and a continuation that reads it and cleans up
    let start = r#"
function on_invoke(ctx, ev)
  local job = native.batch.new({ id = ev.id })
  job:query("customers", "customers_by_id", { ids = ev.ids })
  job:query("orders", "open_orders", {})
  job:state({ ref = ev.ref })
  job:continue_with("settle")
  return job:submit()
end
"#;
    let settle = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev)
  if not job then return end
  local names, total = {}, 0
  for row in job:rows("customers") do table.insert(names, row.name) end
  for row in job:rows("orders") do total = total + row.amount end
  native.bucket.Acks.put("summary/" .. job.state.ref .. ".json",
    native.json.encode({ names = table.concat(names, ","), total = total }))
  return { delete = job:keys() }
end
"#;
    let p = batch_project(&[("start", start), ("settle", settle)]);
    let fixtures = p.path().join("fixtures");
    std::fs::create_dir(&fixtures).unwrap();
    std::fs::write(
        fixtures.join("customers_by_id.ndjson"),
        "{\"name\":\"Ada\"}\n\n{\"name\":\"Grace\"}\n",
    )
    .unwrap();
    std::fs::write(
        fixtures.join("orders.ndjson"),
        "{\"amount\":5}\n{\"amount\":7}",
    )
    .unwrap();
    // WHEN the job is submitted
    let submitted = native(
        p.path(),
        &[
            "invoke",
            "acme",
            "start",
            r#"{"id":"job-1","ref":"r1","ids":[1,2]}"#,
        ],
    );
    assert_eq!(submitted.ok().out().trim(), "\"job-1\"");
    let fixtures_arg = fixtures.display().to_string();
    let r = native(
        p.path(),
        &["partner", "acme", "--fixtures", &fixtures_arg, "--gzip"],
    );
    // THEN the partner answers it (orders by name, since there is no open_orders.ndjson)
    r.ok();
    assert_eq!(r.out(), "job-1: 2 queries, 4 rows: ok\n");
    // AND the continuation ran on the results and cleaned the job up
    assert_eq!(
        native(p.path(), &["get", "acme", "Acks", "summary/r1.json"])
            .ok()
            .out(),
        r#"{"names":"Ada,Grace","total":12}"#
    );
    // (only the record of its id stays, so that the id cannot start a second job; the
    // batch bucket's lifecycle rule expires it)
    assert_eq!(
        native(p.path(), &["ls", "acme", "$batch"]).ok().out(),
        "state/ids/job-1.json\n",
        "the job's objects are left after the continuation"
    );
}

#[test]
fn partner_answers_ok_false_when_a_query_fails() {
    // GIVEN two jobs: one whose command fails, one whose fixture is missing
    let p = batch_project(&[]);
    put_request(p.path(), &request("a", &[("x", "q")]));
    let r = native(
        p.path(),
        &[
            "partner",
            "acme",
            "--exec",
            "echo '{}'; echo 'no such table' >&2; exit 3",
            "--no-drain",
        ],
    );
    // THEN the job is answered ok:false with the exit code and stderr, and nothing else is left
    r.ok();
    assert_eq!(
        r.out(),
        "a: 1 query, 0 rows: failed: query x: command exited with 3: no such table\n"
    );
    let (done, _) = check_done(p.path(), "a");
    assert_eq!(
        done,
        json!({ "ok": false, "error": "query x: command exited with 3: no such table", "results": {} })
    );
    assert_eq!(
        native(p.path(), &["ls", "acme", "$batch", "jobs/a/"])
            .ok()
            .out(),
        "jobs/a/done.json\njobs/a/request.json\n"
    );
    // AND --no-drain left the notification for a later drain
    let drained = native(p.path(), &["drain"]);
    assert!(
        drained.ok().logs().iter().any(|l| l["msg"] == "routed"),
        "{}",
        drained.stderr
    );
    // WHEN a fixture is missing THEN the error says what was looked for
    put_request(p.path(), &request("b", &[("x", "q")]));
    let empty = tempfile::tempdir().unwrap();
    let r = native(
        p.path(),
        &[
            "partner",
            "acme",
            "--fixtures",
            empty.path().to_str().unwrap(),
        ],
    );
    assert!(
        r.ok()
            .out()
            .starts_with("b: 1 query, 0 rows: failed: query x: no fixture file"),
        "{}",
        r.out()
    );
}

#[test]
fn partner_usage_errors() {
    let p = batch_project(&[]);
    // no source, both sources, a fixture folder that is not there, a zero part size
    native(p.path(), &["partner", "acme"]).code(2);
    native(
        p.path(),
        &["partner", "acme", "--exec", "true", "--fixtures", "."],
    )
    .code(2);
    native(p.path(), &["partner", "acme", "--fixtures", "/no/such/dir"])
        .code(2)
        .err_has("not a folder");
    native(
        p.path(),
        &["partner", "acme", "--exec", "true", "--part-mb", "0"],
    )
    .code(2);
    // a bad tenant name
    native(p.path(), &["partner", "../x", "--exec", "true"]).code(2);
    // a request.json that is not a request names its key
    native(
        p.path(),
        &[
            "put",
            "acme",
            "$batch",
            "jobs/j/request.json",
            "--data",
            "{",
            "--no-drain",
        ],
    )
    .ok();
    native(p.path(), &["partner", "acme", "--exec", "true"])
        .code(2)
        .err_has("tenants/acme/jobs/j/request.json");
    // a deployment without a batch bucket
    std::fs::write(p.path().join("deployment.json"), "{}").unwrap();
    native(p.path(), &["partner", "acme", "--exec", "true"])
        .code(2)
        .err_has("batch");
}

/// The emulator's endpoint for the AWS tests (tests/run.sh starts moto and sets it).
fn aws_endpoint() -> Option<String> {
    match std::env::var("NATIVE_TEST_AWS_ENDPOINT") {
        Ok(e) => Some(e),
        Err(_) if std::env::var("NATIVE_SKIP_AWS").as_deref() == Ok("1") => None,
        Err(_) => panic!("NATIVE_TEST_AWS_ENDPOINT is not set: run tests/run.sh, which starts moto (or set NATIVE_SKIP_AWS=1 to skip the AWS tests)"),
    }
}

/// `python3 -c CODE` with boto3 (which moto brings) against the emulator.
fn boto(endpoint: &str, code: &str) -> String {
    let prelude = format!("import boto3, json\ns3 = boto3.client('s3', endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n");
    let o = Command::new("python3")
        .arg("-c")
        .arg(format!("{prelude}{code}"))
        .output()
        .expect("python3");
    assert!(
        o.status.success(),
        "boto3: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn deploy_checks_then_uploads_the_tenant_to_the_scripts_bucket() {
    let Some(endpoint) = aws_endpoint() else {
        return;
    };
    // GIVEN a project and a scripts bucket in the emulator
    let bucket = format!("scripts-{}", std::process::id());
    boto(&endpoint, &format!("s3.create_bucket(Bucket='{bucket}')"));
    let dir = tempfile::tempdir().unwrap();
    native(dir.path(), &["init", dir.path().to_str().unwrap()]).ok();
    let deploy = |p: &Path| {
        Run::from(
            Command::new(native_bin())
                .args([
                    "--project",
                    p.to_str().unwrap(),
                    "deploy",
                    "hello",
                    "--bucket",
                    &bucket,
                ])
                .env("AWS_ENDPOINT_URL", &endpoint)
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .output()
                .unwrap(),
        )
    };
    // WHEN it is deployed THEN config and scripts are in <tenant>/ of the bucket, and the
    // deploy marker that warm functions check is written
    deploy(dir.path()).ok();
    let keys = boto(&endpoint, &format!("print(json.dumps(sorted(o['Key'] for o in s3.list_objects_v2(Bucket='{bucket}')['Contents'])))"));
    let keys: Vec<String> = serde_json::from_str(&keys).unwrap();
    assert_eq!(
        keys,
        [
            ".native/deployed",
            "hello/config.json",
            "hello/scripts/finish.luau",
            "hello/scripts/greet.luau",
            "hello/scripts/router.luau",
            "hello/scripts/start.luau"
        ]
    );
    // WHEN a script does not compile THEN nothing is deployed and the error names file and line
    std::fs::write(
        dir.path().join("tenants/hello/scripts/start.luau"),
        "function on_invoke(\n  x = = 1\nend",
    )
    .unwrap();
    deploy(dir.path())
        .code(2)
        .err_has("tenants/hello/scripts/start.luau:2:");
    let body = boto(&endpoint, &format!("print(s3.get_object(Bucket='{bucket}', Key='hello/scripts/start.luau')['Body'].read().decode())"));
    assert!(
        body.contains("document written"),
        "the deployed script is unchanged"
    );
}

#[test]
fn deploy_refuses_limits_the_functions_cannot_honour() {
    let Some(endpoint) = aws_endpoint() else {
        return;
    };
    // GIVEN a scripts bucket in the emulator and a tenant allowed 120 s and 1024 MB
    let bucket = format!("scripts-fit-{}", std::process::id());
    boto(&endpoint, &format!("s3.create_bucket(Bucket='{bucket}')"));
    let dir = tempfile::tempdir().unwrap();
    native(dir.path(), &["init", dir.path().to_str().unwrap()]).ok();
    let config = dir.path().join("tenants/hello/config.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    c["limits"] = serde_json::json!({ "timeout_s": 120, "max_memory_mb": 1024 });
    std::fs::write(&config, c.to_string()).unwrap();
    let deploy = |extra: &[&str]| {
        let mut args = vec![
            "--project",
            dir.path().to_str().unwrap(),
            "deploy",
            "hello",
            "--bucket",
            &bucket,
        ];
        args.extend_from_slice(extra);
        Run::from(
            Command::new(native_bin())
                .args(&args)
                .env("AWS_ENDPOINT_URL", &endpoint)
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .output()
                .unwrap(),
        )
    };
    // WHEN it is deployed to functions of the template's defaults (60 s, 512 MB)
    // THEN it is refused, naming each limit, its figures and the setting, and nothing is uploaded
    deploy(&[])
        .code(2)
        .err_has("limits.timeout_s is 120 s, but the functions' timeout (FunctionTimeout) is 60 s")
        .err_has(
            "limits.max_memory_mb is 1024 MB, but the functions' memory (MemorySize) is 512 MB",
        )
        .err_has("MemorySize of at least 1152");
    let listed = boto(
        &endpoint,
        &format!("print(s3.list_objects_v2(Bucket='{bucket}').get('KeyCount', 0))"),
    );
    assert_eq!(listed.trim(), "0", "nothing is deployed");
    // WHEN the stack's functions are large enough THEN it deploys
    deploy(&["--function-timeout", "122", "--function-memory", "1152"]).ok();
}

#[test]
fn deploy_checks_limits_against_the_functions_the_stack_deployed() {
    let Some(endpoint) = aws_endpoint() else {
        return;
    };
    // GIVEN in the emulator a stack whose outputs name a function deployed with Timeout 30 s
    // and MemorySize 1024 MB and a scripts bucket, another function with 256 MB given by ARN,
    // and a tenant allowed 40 s and 200 MB
    let id = std::process::id();
    let (stack, bucket) = (format!("native-fit-{id}"), format!("scripts-stack-{id}"));
    let other = boto(
        &endpoint,
        &format!(
            "import io, zipfile\n\
             kw = dict(endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n\
             s3.create_bucket(Bucket='{bucket}')\n\
             role = boto3.client('iam', **kw).create_role(RoleName='fit-{id}', AssumeRolePolicyDocument='{{}}')['Role']['Arn']\n\
             fn = {{'Type': 'AWS::Lambda::Function', 'Properties': {{'Runtime': 'provided.al2023', 'Handler': 'bootstrap', 'Role': role, 'Code': {{'ZipFile': 'x'}}, 'Timeout': 30, 'MemorySize': 1024}}}}\n\
             outputs = {{'QueueFunctionName': {{'Value': {{'Ref': 'Fn'}}}}, 'ScriptsBucketName': {{'Value': '{bucket}'}}, 'TableName': {{'Value': 't'}}}}\n\
             boto3.client('cloudformation', **kw).create_stack(StackName='{stack}', TemplateBody=json.dumps({{'Resources': {{'Fn': fn}}, 'Outputs': outputs}}))\n\
             z = io.BytesIO(); w = zipfile.ZipFile(z, 'w'); w.writestr('bootstrap', 'x'); w.close()\n\
             print(boto3.client('lambda', **kw).create_function(FunctionName='small-{id}', Runtime='provided.al2023', Role=role, Handler='bootstrap', Code={{'ZipFile': z.getvalue()}}, Timeout=900, MemorySize=256)['FunctionArn'])"
        ),
    );
    let other = other.trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    native(dir.path(), &["init", dir.path().to_str().unwrap()]).ok();
    let config = dir.path().join("tenants/hello/config.json");
    let mut c: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&config).unwrap()).unwrap();
    c["limits"] = serde_json::json!({ "timeout_s": 40, "max_memory_mb": 200 });
    std::fs::write(&config, c.to_string()).unwrap();
    let deploy = |extra: &[&str]| {
        let mut args = vec!["--project", dir.path().to_str().unwrap(), "deploy", "hello"];
        args.extend_from_slice(extra);
        Run::from(
            Command::new(native_bin())
                .args(&args)
                .env("AWS_ENDPOINT_URL", &endpoint)
                .env("AWS_ACCESS_KEY_ID", "testing")
                .env("AWS_SECRET_ACCESS_KEY", "testing")
                .env("AWS_REGION", "us-east-1")
                .env("AWS_EC2_METADATA_DISABLED", "true")
                .output()
                .unwrap(),
        )
    };
    let listed = || {
        boto(
            &endpoint,
            &format!("print(s3.list_objects_v2(Bucket='{bucket}').get('KeyCount', 0))"),
        )
        .trim()
        .to_string()
    };
    // WHEN it is deployed to the stack
    // THEN it is refused, naming the limit, its figures, the function and its setting, and
    // nothing is uploaded
    deploy(&["--stack", &stack])
        .code(2)
        .err_has(&format!("function {stack}-Fn-"))
        .err_has("Timeout 30 s, MemorySize 1024 MB")
        .err_has("limits.timeout_s is 40 s, but function ")
        .err_has("'s timeout (Timeout) is 30 s and a script must end 2 s before it: lower timeout_s to at most 28, or deploy the stack with FunctionTimeout of at least 42");
    assert_eq!(listed(), "0", "nothing is deployed");
    // WHEN the function given by ARN is also checked THEN its memory is refused too, by name
    deploy(&["--stack", &stack, "--function", &other])
        .code(2)
        .err_has("limits.timeout_s is 40 s")
        .err_has(&format!(
            "limits.max_memory_mb is 200 MB, but function small-{id}'s memory (MemorySize) is 256 MB and the runtime keeps 128 MB of it: lower max_memory_mb to at most 128"
        ));
    assert_eq!(listed(), "0", "nothing is deployed");
    // WHEN the timeout is overridden (the stack is being redeployed with FunctionTimeout 42)
    // THEN the stack's function fits, and the tenant goes to the bucket the stack names
    deploy(&["--stack", &stack, "--function-timeout", "42"])
        .ok()
        .err_has("(checked with --function-timeout 42)");
    assert_eq!(listed(), "6", "config, four scripts and the deploy marker");
    // AND a stack that does not exist is said so
    deploy(&["--stack", &format!("nope-{id}")])
        .code(2)
        .err_has(&format!("cannot read the outputs of stack \"nope-{id}\" (cloudformation:DescribeStacks): HTTP 400 ValidationError"));
}

#[test]
fn dlq_on_aws_shows_the_error_a_message_was_dead_lettered_with() {
    let Some(endpoint) = aws_endpoint() else {
        return;
    };
    // GIVEN a work queue whose dead-letter queue holds a message the runtime dead-lettered at
    // once (its error in the native_error attribute), of tenant acme, and one of tenant beta
    let name = format!("dlq-cli-{}", std::process::id());
    let urls = boto(
        &endpoint,
        &format!(
            "sqs = boto3.client('sqs', endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n\
             dlq = sqs.create_queue(QueueName='{name}-dlq')['QueueUrl']\n\
             arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=['QueueArn'])['Attributes']['QueueArn']\n\
             q = sqs.create_queue(QueueName='{name}', Attributes={{'RedrivePolicy': json.dumps({{'deadLetterTargetArn': arn, 'maxReceiveCount': '5'}})}})['QueueUrl']\n\
             sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps({{'tenant': 'acme', 'script': 's', 'event': {{}}, 'depth': 40}}), MessageAttributes={{'native_error': {{'DataType': 'String', 'StringValue': 'limit max_chain_depth exceeded: too deep'}}}})\n\
             sqs.send_message(QueueUrl=dlq, MessageBody=json.dumps({{'tenant': 'beta', 'script': 's', 'event': {{}}}}))\n\
             print(q)"
        ),
    );
    let work_queue = urls.trim().to_string();
    let dir = tempfile::tempdir().unwrap();
    native(dir.path(), &["init", dir.path().to_str().unwrap()]).ok();
    // WHEN `native dlq acme --work-queue URL` lists them
    let run = Run::from(
        Command::new(native_bin())
            .args([
                "--project",
                dir.path().to_str().unwrap(),
                "dlq",
                "acme",
                "--work-queue",
                &work_queue,
            ])
            .env("AWS_ENDPOINT_URL", &endpoint)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .output()
            .unwrap(),
    );
    // THEN it shows acme's dead letter with its error, and not beta's
    run.ok().err_has("1 dead letter(s)");
    let out = String::from_utf8_lossy(&run.stdout).into_owned();
    let line: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(line["tenant"], "acme");
    assert_eq!(line["queue"], "work");
    assert_eq!(
        line["last_error"],
        "limit max_chain_depth exceeded: too deep"
    );
}

#[test]
fn dlq_redrive_on_aws_moves_one_tenants_dead_letters_back_and_drains_nothing() {
    let Some(endpoint) = aws_endpoint() else {
        return;
    };
    // GIVEN an events queue and a work queue, each with a dead-letter queue holding dead
    // letters of tenants acme and beta: work messages naming them, and notifications of
    // objects in their folders of the project's bucket hello-in (plus S3's test event, whose
    // tenant cannot be told)
    let name = format!("redrive-cli-{}", std::process::id());
    let note = |key: &str| {
        format!(
            r#"json.dumps({{'Records': [{{'eventName': 'ObjectCreated:Put', 's3': {{'bucket': {{'name': 'hello-in'}}, 'object': {{'key': '{key}', 'size': 1}}}}}}]}})"#
        )
    };
    let sqs = format!("sqs = boto3.client('sqs', endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n");
    let urls = boto(
        &endpoint,
        &format!(
            "{sqs}\
             def pair(n):\n\
             \x20   dlq = sqs.create_queue(QueueName=n + '-dlq')['QueueUrl']\n\
             \x20   arn = sqs.get_queue_attributes(QueueUrl=dlq, AttributeNames=['QueueArn'])['Attributes']['QueueArn']\n\
             \x20   q = sqs.create_queue(QueueName=n, Attributes={{'RedrivePolicy': json.dumps({{'deadLetterTargetArn': arn, 'maxReceiveCount': '5'}})}})['QueueUrl']\n\
             \x20   return q, dlq\n\
             wq, wdlq = pair('{name}-work')\n\
             eq, edlq = pair('{name}-events')\n\
             for t in ['acme', 'beta']:\n\
             \x20   sqs.send_message(QueueUrl=wdlq, MessageBody=json.dumps({{'tenant': t, 'script': 's', 'event': {{}}, 'depth': 0}}))\n\
             sqs.send_message(QueueUrl=edlq, MessageBody={})\n\
             sqs.send_message(QueueUrl=edlq, MessageBody={})\n\
             sqs.send_message(QueueUrl=edlq, MessageBody=json.dumps({{'Event': 's3:TestEvent'}}))\n\
             print(json.dumps([wq, wdlq, eq, edlq]))",
            note("acme/a.txt"),
            note("beta/b.txt"),
        ),
    );
    let urls: Vec<String> = serde_json::from_str(urls.trim()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    native(dir.path(), &["init", dir.path().to_str().unwrap()]).ok();
    // WHEN acme's dead letters are redriven on AWS
    let run = Run::from(
        Command::new(native_bin())
            .args([
                "--project",
                dir.path().to_str().unwrap(),
                "dlq",
                "redrive",
                "acme",
                "--work-queue",
                &urls[0],
                "--events-queue",
                &urls[2],
            ])
            .env("AWS_ENDPOINT_URL", &endpoint)
            .env("AWS_ACCESS_KEY_ID", "testing")
            .env("AWS_SECRET_ACCESS_KEY", "testing")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .output()
            .unwrap(),
    );
    // THEN it says what it moved per queue, and that it drains nothing
    run.ok()
        .err_has("1 dead letter(s) moved back to the work queue")
        .err_has("1 dead letter(s) moved back to the events queue")
        .err_has("2 dead letter(s) moved back to their queue")
        .err_has("nothing is drained here");
    // AND acme's are back on their queues, beta's and the test event are still dead letters
    let bodies = |url: &str| -> Vec<String> {
        let out = boto(
            &endpoint,
            &format!(
                "{sqs}\
                 seen = {{}}\n\
                 for _ in range(6):\n\
                 \x20   for m in sqs.receive_message(QueueUrl='{url}', MaxNumberOfMessages=10, VisibilityTimeout=30).get('Messages', []):\n\
                 \x20       seen[m['MessageId']] = m['Body']\n\
                 print(json.dumps(sorted(seen.values())))"
            ),
        );
        serde_json::from_str(out.trim()).unwrap()
    };
    let tenants = |url: &str| -> Vec<String> {
        bodies(url)
            .iter()
            .map(|b| {
                let v: serde_json::Value = serde_json::from_str(b).unwrap();
                match (&v["tenant"], &v["Records"][0]["s3"]["object"]["key"]) {
                    (serde_json::Value::String(t), _) => t.clone(),
                    (_, serde_json::Value::String(k)) => k.split('/').next().unwrap().to_string(),
                    _ => "test event".to_string(),
                }
            })
            .collect()
    };
    assert_eq!(tenants(&urls[0]), ["acme"], "the work queue");
    assert_eq!(tenants(&urls[1]), ["beta"], "the work dead-letter queue");
    let mut events = tenants(&urls[2]);
    events.sort();
    assert_eq!(events, ["acme"], "the events queue");
    let mut dead = tenants(&urls[3]);
    dead.sort();
    assert_eq!(dead, ["beta", "test event"], "the events dead-letter queue");
}

// ---------------------------------------------------------------------------------------------
// a reader that goes away: `native ... | head -1`

/// What a run whose stdout reader went away did: its exit status and its stderr.
struct Closed {
    status: std::process::ExitStatus,
    stderr: String,
}

impl Closed {
    /// Quiet: success, or the conventional death by SIGPIPE; no panic, no write error.
    fn quiet(&self, what: &str) {
        use std::os::unix::process::ExitStatusExt;
        assert!(
            self.status.success() || self.status.signal() == Some(13),
            "{what}: {:?}\n{}",
            self.status,
            self.stderr
        );
        for bad in ["panicked", "Broken pipe", "error:"] {
            assert!(
                !self.stderr.contains(bad),
                "{what}: stderr has {bad:?}:\n{}",
                self.stderr
            );
        }
    }
}

/// `native ARGS` with stdout a pipe whose reader has already gone: the write end of a pipe
/// into `true`, which has exited, so the first write fails with EPIPE.
fn native_closed(cwd: &Path, args: &[&str]) -> Closed {
    let mut reader = Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("cannot run true");
    let write_end = reader.stdin.take().unwrap();
    reader.wait().unwrap();
    let o = Command::new(native_bin())
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end))
        .stderr(Stdio::piped())
        .output()
        .expect("cannot run native");
    Closed {
        status: o.status,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// `native ARGS 2>&1` into a pipe whose reader has already gone: stdout and stderr both fail
/// with EPIPE. Only the exit status can tell what happened.
fn native_all_closed(cwd: &Path, args: &[&str]) -> std::process::ExitStatus {
    let mut reader = Command::new("true")
        .stdin(Stdio::piped())
        .spawn()
        .expect("cannot run true");
    let write_end = std::os::fd::OwnedFd::from(reader.stdin.take().unwrap());
    reader.wait().unwrap();
    Command::new(native_bin())
        .current_dir(cwd)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::from(write_end.try_clone().unwrap()))
        .stderr(Stdio::from(write_end))
        .status()
        .expect("cannot run native")
}

/// `native --project DIR ARGS | head -1`: reads the first line of stdout, then closes it.
fn native_head_1(project: &Path, args: &[&str]) -> (String, Closed) {
    use std::io::BufRead;
    let mut child = Command::new(native_bin())
        .arg("--project")
        .arg(project)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run native");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let o = child.wait_with_output().unwrap();
    (
        first,
        Closed {
            status: o.status,
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
        },
    )
}

const BIG: &str = r#"
function on_invoke(ctx, ev)
  local members = {}
  for i = 1, 1000 do members[i] = string.format("%04d-", i) .. string.rep("m", 100) end
  native.barrier.create({ id = "big", members = members })
  for i = 1, 900 do native.bucket.In.put(string.format("k%04d-", i) .. string.rep("k", 100), "x") end
  native.queue.send("later", { n = 1 })
  return string.rep("r", 200000)
end
"#;

const LATER: &str = r#"
function on_queue(ctx, ev) print("later runs") native.bucket.Acks.put("later.txt", "ran") end
"#;

#[test]
fn every_verb_exits_quietly_when_stdout_is_closed() {
    // GIVEN a project with a barrier of 1000 long member names, 900 objects, a pending batch
    // request, and an object bigger than a pipe's buffer
    let p = batch_project(&[("big", BIG), ("later", LATER)]);
    let dir = p.path().to_str().unwrap();
    native(p.path(), &["invoke", "acme", "big", "--no-drain"]).ok();
    let large = p.path().join("large.txt");
    std::fs::write(&large, "x".repeat(300_000)).unwrap();
    let at = format!("@{}", large.display());
    native(
        p.path(),
        &["put", "acme", "In", "large.txt", &at, "--no-drain"],
    )
    .ok();
    put_request(p.path(), &request("j1", &[("q", "q")]));

    // WHEN `native barrier status ... | head -1` reads one line of a long answer
    let (first, r) = native_head_1(
        p.path(),
        &["barrier", "status", "acme", "big", "--limit", "1000"],
    );
    // THEN it got its line and native exited quietly
    assert_eq!(first, "{\n");
    r.quiet("barrier status | head -1");

    // WHEN every verb that prints runs with its stdout already closed THEN each exits quietly
    let init_dir = tempfile::tempdir().unwrap();
    let tmp = std::env::temp_dir();
    let cases: Vec<Vec<&str>> = vec![
        vec!["--help"],
        vec!["--version"],
        vec!["barrier", "--help"],
        vec!["init", init_dir.path().to_str().unwrap()],
        vec!["--project", dir, "check"],
        vec!["--project", dir, "get", "acme", "In", "large.txt"],
        vec!["--project", dir, "ls", "acme", "In"],
        vec![
            "--project",
            dir,
            "barrier",
            "status",
            "acme",
            "big",
            "--limit",
            "1000",
        ],
        vec!["--project", dir, "dlq"],
        vec![
            "--project",
            dir,
            "partner",
            "acme",
            "--exec",
            "seq 1 3",
            "--no-drain",
        ],
        vec!["--project", dir, "invoke", "acme", "big"],
        vec!["demo"],
    ];
    for args in &cases {
        native_closed(&tmp, args).quiet(&args.join(" "));
    }
    // AND a verb whose output nobody read still did the rest of its work: the invoke drained
    native(p.path(), &["get", "acme", "Acks", "later.txt"]).ok();
    // WHEN stderr is closed too (`2>&1 | head -1`) THEN script logs and the CLI's own lines are
    // dropped as quietly
    for args in [
        vec!["--project", dir, "invoke", "acme", "big"],
        vec!["--project", dir, "drain"],
        vec!["--project", dir, "get", "acme", "In", "missing.txt"],
    ] {
        let status = native_all_closed(&tmp, &args);
        let want = if args.contains(&"missing.txt") { 1 } else { 0 };
        assert_eq!(status.code(), Some(want), "{}: {status:?}", args.join(" "));
    }
}
