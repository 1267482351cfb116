//! What the `native` command lists, logs and hints at: a project without a router whose verbs
//! succeed, a configured router that is missing refused by `check` and `deploy`, `send` refusing a
//! script with no `on_queue`, the project found from a subfolder, `-v` telling what ran, the queues
//! and barriers listed, the dead letters' attempts and one of them redriven, `init`'s editor and
//! git files, errors that suggest the name meant, and the log history (`native logs`: by trace,
//! readable, followed) with a dead letter's trace.

use std::path::Path;
use std::process::{Command, Stdio};

use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::Value;

use native_tests::cli::Run;

use crate::support::native_bin;

/// `native ARGS` in `cwd`, logs as JSON.
fn native_in(cwd: &Path, args: &[&str]) -> Run {
    native_tests::cli::run_in(&native_bin(), cwd, args, &[("NATIVE_LOG_FORMAT", "json")])
}

/// `native --project DIR ARGS` from the temporary folder.
fn native(project: &Path, args: &[&str]) -> Run {
    native_tests::cli::run_at(
        &native_bin(),
        project,
        args,
        &[("NATIVE_LOG_FORMAT", "json")],
    )
}

/// A project with the tenant `acme`.
fn project(config: &str, scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(dir.path(), "acme", config, scripts);
    dir
}

/// `native init` in a fresh folder: the `hello` example.
fn hello() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("proj");
    native_in(tmp.path(), &["init", p.to_str().unwrap()]).code(0);
    (tmp, p)
}

const BARRIER: &str = r#"
function on_invoke(ctx, ev)
  native.bucket.In.put("sent/" .. ev.id .. ".xml", "<doc/>")
  return native.barrier.create{ id = ev.id, members = { "a", "b" }, continue_with = "fin" }
end"#;
const FIN: &str =
    "function on_queue(ctx, ev) native.bucket.In.put('done/' .. ev.barrier, 'ok') end";

#[test]
fn verbs_of_a_tenant_without_a_router_succeed() {
    // GIVEN a tenant with no router at all whose scripts write objects and use a barrier
    let p = project(r#"{ "queue": true }"#, &[("create", BARRIER), ("fin", FIN)]);
    let p = p.path();
    native(p, &["check"]).code(0);
    // WHEN it creates a barrier (writing an object) and a partner acks both members
    native(p, &["invoke", "acme", "create", r#"{"id":"b1"}"#])
        .code(0)
        .err_has("has no router");
    native(p, &["barrier", "ack", "acme", "b1", "a"]).code(0);
    native(p, &["barrier", "ack", "acme", "b1", "b"]).code(0);
    // THEN the continuation ran (its write's event dropped too), nothing was retried or
    // dead-lettered, and the queues are empty
    assert_eq!(
        native(p, &["get", "acme", "In", "done/b1"]).code(0).stdout,
        "ok"
    );
    native(p, &["dlq"]).code(0).err_has("0 dead letter(s)");
    native(p, &["queues"])
        .code(0)
        .err_has("0 message(s) waiting");
}

#[test]
fn an_operators_ack_from_the_cli_is_a_span_of_the_barriers_chain() {
    // GIVEN a barrier created by an invocation, whose chain the invocation answers
    let p = project(
        r#"{ "queue": true }"#,
        &[
            (
                "create",
                r#"function on_invoke(ctx, ev)
                  native.barrier.create{ id = "b1", members = { "a", "b" }, continue_with = "fin" }
                  return ctx.trace
                end"#,
            ),
            ("fin", FIN),
        ],
    );
    let p = p.path();
    let out = native(p, &["invoke", "acme", "create"])
        .code(0)
        .stdout
        .clone();
    let chain: String = serde_json::from_str(out.trim()).unwrap();
    // WHEN an operator acks a member from the CLI with a collector named in the environment
    let receiver = native_tests::otlp::Receiver::start();
    let url = format!("http://127.0.0.1:{}/v1/traces", receiver.port);
    native_tests::cli::run_at(
        &native_bin(),
        p,
        &["barrier", "ack", "acme", "b1", "a", "--no-drain"],
        &[("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", url.as_str())],
    )
    .code(0);
    // THEN the collector has the ack as a span of the barrier's chain, made by an operator
    // through the CLI, before the command ended
    let spans = receiver.spans(1);
    let s = &spans[0];
    assert_eq!(s["trace_id"], chain, "{s}");
    assert_eq!(s["attributes"]["native.origin.by"], "operator", "{s}");
    assert_eq!(s["attributes"]["native.origin.via"], "cli", "{s}");
    assert_eq!(s["attributes"]["native.barrier"], "b1", "{s}");
}

#[test]
fn a_configured_router_that_is_missing_is_refused_by_check_and_deploy() {
    // GIVEN a tenant whose config names a router it does not have
    let p = project(
        r#"{ "queue": true, "router": "rooter" }"#,
        &[("create", BARRIER)],
    );
    // WHEN it is checked THEN check fails naming the file, the field and what to do
    native(p.path(), &["check"])
        .code(2)
        .err_has("tenants/acme/config.json: router: there is no script \"rooter\"")
        .err_has("leave \"router\" out");
    // AND deploy refuses it before reaching AWS
    native(p.path(), &["deploy", "acme", "--bucket", "scripts-b"])
        .code(2)
        .err_has("not deployed, `native check` fails")
        .err_has("there is no script \"rooter\"");
}

#[test]
fn send_refuses_a_script_without_on_queue() {
    // GIVEN a script with only on_invoke (its comment names on_queue, which does not count)
    let p = project(
        r#"{ "queue": true }"#,
        &[
            (
                "start",
                "-- not on_queue\nfunction on_invoke() return 1 end",
            ),
            ("q", "function on_queue() end"),
        ],
    );
    // WHEN a message is sent to it THEN it is refused (exit 2), naming what to do
    native(p.path(), &["send", "acme", "start", "{}"])
        .code(2)
        .err_has("has no on_queue(ctx, ev)")
        .err_has("native invoke acme start");
    // AND nothing was queued
    native(p.path(), &["queues"])
        .code(0)
        .err_has("0 message(s) waiting");
    // AND a script with on_queue takes it
    native(p.path(), &["send", "acme", "q", "{}"]).code(0);
}

#[test]
fn verbs_find_the_project_from_a_subfolder() {
    // GIVEN the hello project, and a shell inside one of its subfolders
    let (_tmp, p) = hello();
    let sub = p.join("tenants/hello/scripts");
    // WHEN a verb runs there without --project THEN it works on the project above
    native_in(&sub, &["invoke", "hello", "start", r#"{"name":"Ada"}"#]).code(0);
    assert_eq!(
        native_in(&sub, &["get", "hello", "Out", "results/Ada.txt"])
            .code(0)
            .stdout,
        "Hello, Ada!"
    );
    // AND outside any project it says there is none, and how to make one
    let outside = tempfile::tempdir().unwrap();
    native_in(outside.path(), &["check"])
        .code(2)
        .err_has("has no deployment.json, nor has any folder above it")
        .err_has("native init DIR");
}

#[test]
fn verbose_shows_what_an_invoke_ran() {
    // GIVEN the hello project
    let (_tmp, p) = hello();
    // WHEN start is invoked with -v
    let r = native(&p, &["-v", "invoke", "hello", "start", r#"{"name":"Ada"}"#]);
    r.code(0);
    // THEN stderr says what ran, in order: start, the router (and where it sent the event),
    // greet, finish
    let recs: Vec<Value> = r
        .stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["msg"] == "ran" || v["msg"] == "routed")
        .collect();
    let seen: Vec<String> = recs
        .iter()
        .map(|v| match v["msg"].as_str() {
            Some("ran") => format!(
                "{} {}",
                v["script"].as_str().unwrap(),
                v["entry"].as_str().unwrap()
            ),
            _ => format!("routed {} -> {}", v["key"].as_str().unwrap(), v["to"]),
        })
        .collect();
    assert_eq!(
        seen[..5],
        [
            "start on_invoke",
            "router on_route",
            "routed greetings/Ada.json -> \"greet\"",
            "greet on_queue",
            "finish on_queue",
        ],
        "{}",
        r.stderr
    );
    assert!(recs.iter().all(|v| v["msg"] != "ran" || v["ok"] == true));
    // AND without -v nothing of the sort is logged
    let quiet = native(&p, &["invoke", "hello", "start", r#"{"name":"Bo"}"#]);
    assert!(
        !quiet.code(0).stderr.contains("\"ran\""),
        "{}",
        quiet.stderr
    );
}

#[test]
fn barriers_and_waiting_messages_are_listed() {
    // GIVEN two barriers, one complete, and messages delayed, due and failed
    let p = project(
        r#"{ "queue": true }"#,
        &[
            ("create", BARRIER),
            ("fin", FIN),
            ("bad", "function on_queue() error('no ledger') end"),
            ("later", "function on_queue() end"),
        ],
    );
    let p = p.path();
    native(p, &["invoke", "acme", "create", r#"{"id":"b1"}"#]).code(0);
    native(p, &["invoke", "acme", "create", r#"{"id":"b2"}"#]).code(0);
    native(p, &["barrier", "ack", "acme", "b2", "a"]).code(0);
    native(p, &["barrier", "ack", "acme", "b2", "b"]).code(0);
    native(p, &["send", "acme", "later", "{}", "--delay", "600"]).code(0);
    native(p, &["send", "acme", "bad", r#"{"n":1}"#]).code(1);
    native(p, &["send", "acme", "later", r#"{"n":2}"#, "--no-drain"]).code(0);
    // WHEN the barriers are listed THEN each shows where it stands, in id order
    let bs = native(p, &["barrier", "list", "acme"]).code(0).lines();
    assert_eq!(bs.len(), 2, "{bs:?}");
    assert_eq!(
        (&bs[0]["id"], &bs[0]["pending"], &bs[0]["complete"]),
        (&Value::from("b1"), &Value::from(2), &Value::from(false))
    );
    assert_eq!(
        (&bs[1]["id"], &bs[1]["dispatched"], &bs[1]["total"]),
        (&Value::from("b2"), &Value::from(true), &Value::from(2))
    );
    assert!(native(p, &["barrier", "list", "other"]).code != 0);
    // WHEN the queues are listed THEN the delayed, the failed and the due message show
    let qs = native(p, &["queues", "acme"]).code(0).lines();
    let state = |script: &str, n: Option<i64>| {
        qs.iter()
            .find(|m| {
                m["body"]["script"] == script && n.is_none_or(|n| m["body"]["event"]["n"] == n)
            })
            .unwrap_or_else(|| panic!("{script}: {qs:?}"))
            .clone()
    };
    let delayed = state("later", None);
    assert_eq!(delayed["state"], "delayed");
    assert!(delayed["due_in_s"].as_i64().unwrap() > 500, "{delayed}");
    let failed = state("bad", Some(1));
    assert_eq!(failed["state"], "waiting for a retry");
    assert_eq!(failed["attempts"], 1);
    assert!(failed["last_error"].as_str().unwrap().contains("no ledger"));
    assert_eq!(state("later", Some(2))["state"], "pending");
}

#[test]
fn dead_letters_show_each_attempt_and_one_can_be_redriven() {
    // GIVEN two messages that failed five times each
    let p = project(
        r#"{ "queue": true }"#,
        &[(
            "bad",
            "function on_queue(ctx, ev) if not native.db.get('fix', 'x') then error('try ' .. ctx.attempt) end end",
        ), ("fix", "function on_invoke() native.db.put('fix', 'x', true) end")],
    );
    let p = p.path();
    native(p, &["send", "acme", "bad", r#"{"n":1}"#]).code(1);
    native(p, &["send", "acme", "bad", r#"{"n":2}"#]).code(1);
    for _ in 2..=5 {
        native(p, &["clock", "advance", "6m"]).code(0);
        native(p, &["drain"]).code(1);
    }
    // WHEN the dead letters are listed THEN each has its five attempts, each with its error
    let dead = native(p, &["dlq"]).code(0).lines();
    assert_eq!(dead.len(), 2);
    let errors: Vec<&str> = dead[0]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["error"].as_str().unwrap())
        .collect();
    assert_eq!(errors.len(), 5, "{}", dead[0]);
    for (i, e) in errors.iter().enumerate() {
        assert!(e.contains(&format!("bad.luau:1: try {}", i + 1)), "{e}");
    }
    // WHEN the cause is fixed and one of them is redriven by id
    native(p, &["invoke", "acme", "fix"]).code(0);
    let id = dead[1]["id"].as_str().unwrap();
    native(p, &["dlq", "redrive", "--id", id])
        .code(0)
        .err_has("1 dead letter(s) moved back");
    // THEN only that one ran; the other is still a dead letter
    let left = native(p, &["dlq"]).code(0).lines();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["id"], dead[0]["id"]);
    // AND an unknown id is refused
    native(p, &["dlq", "redrive", "--id", "999999"])
        .code(2)
        .err_has("no dead letter with id \"999999\"");
}

#[test]
fn init_writes_the_gitignore_and_the_editor_files() {
    // GIVEN a folder that already has a .gitignore
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join(".gitignore"), "target/").unwrap();
    // WHEN `native init` makes a project there
    native_in(tmp.path(), &["init", "."]).code(0);
    // THEN .native/ is ignored, the old line kept, and the luau-lsp files are there
    let ignore = std::fs::read_to_string(tmp.path().join(".gitignore")).unwrap();
    assert!(
        ignore.starts_with("target/\n") && ignore.contains("\n.native/\n"),
        "{ignore}"
    );
    let types = std::fs::read_to_string(tmp.path().join("native.d.luau")).unwrap();
    assert!(types.contains("declare native"), "{types}");
    let rc: Value =
        serde_json::from_str(&std::fs::read_to_string(tmp.path().join(".luaurc")).unwrap())
            .unwrap();
    // AND the .luaurc names no globals (Luau types those `any`, hiding native.d.luau) and makes
    // strict mode the project's default
    assert!(rc.get("globals").is_none(), "{rc}");
    assert_eq!(rc["languageMode"], "strict");
}

#[test]
fn not_found_errors_suggest_the_name_meant() {
    let (_tmp, p) = hello();
    // A mistyped tenant: the one meant, and the project's tenants
    native(&p, &["invoke", "helo", "start"])
        .code(2)
        .err_has("did you mean \"hello\"?")
        .err_has("the project's tenants: hello");
    // A mistyped script, and a mistyped bucket
    native(&p, &["invoke", "hello", "strat"])
        .code(2)
        .err_has("did you mean \"start\"?");
    native(&p, &["get", "hello", "out", "x"])
        .code(2)
        .err_has("did you mean \"Out\"?");
    // A missing rendezvous barrier says what it looked for and where to look
    native(&p, &["rendezvous", "status", "hello", "default", "nope"])
        .code(1)
        .err_has("tenant \"hello\" has no rendezvous barrier \"nope\" in namespace \"default\"")
        .err_has("native rendezvous list hello default");
}

#[test]
fn help_lists_every_barrier_verb_and_names_no_seed() {
    let r = native_in(&std::env::temp_dir(), &["--help"]);
    r.code(0);
    assert!(
        r.stdout
            .contains("list a tenant's, print one's status, ack"),
        "{}",
        r.stdout
    );
    assert!(!r.stdout.contains("seed"), "{}", r.stdout);
    let r = native_in(&std::env::temp_dir(), &["invoke", "--help"]);
    assert!(
        !r.stdout.contains("demo") && !r.stdout.contains("init"),
        "{}",
        r.stdout
    );
}

/// Scripts that log along a chain: a sends to b, b logs.
const CHAIN_A: &str = r#"
function on_invoke(ctx, ev)
  native.log("info", "a ran", { n = ev.n })
  native.queue.send("b", { n = ev.n })
  return ctx.trace
end"#;
const CHAIN_B: &str = r#"
function on_queue(ctx, ev)
  print("b ran " .. ev.n)
end"#;

/// The trace that `native invoke` or `native send` logged on stderr (`invoked`, `sent`).
fn trace_of(r: &Run) -> String {
    r.stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["msg"] == "invoked" || v["msg"] == "sent")
        .and_then(|v| v["trace"].as_str().map(str::to_string))
        .unwrap_or_else(|| panic!("no invoked or sent line:\n{}", r.stderr))
}

#[test]
fn logs_show_the_history_one_trace_at_a_time_and_follow() {
    // GIVEN two invocations of a chain of two scripts
    let p = project(r#"{ "queue": true }"#, &[("a", CHAIN_A), ("b", CHAIN_B)]);
    let p = p.path();
    let first = native(p, &["invoke", "acme", "a", r#"{"n":1}"#]);
    let t1 = trace_of(first.code(0));
    assert_eq!(
        first.stdout.trim(),
        format!("{t1:?}"),
        "ctx.trace is the one named"
    );
    let t2 = trace_of(native(p, &["invoke", "acme", "a", r#"{"n":2}"#]).code(0));
    assert_ne!(t1, t2);
    // WHEN the history is read
    let all = native(p, &["logs"]).code(0).lines();
    // THEN it holds both chains' lines, oldest first
    let msgs: Vec<&str> = all.iter().filter_map(|r| r["msg"].as_str()).collect();
    assert_eq!(
        msgs,
        ["a ran", "invoked", "b ran 1", "a ran", "invoked", "b ran 2"],
        "{all:?}"
    );
    // WHEN it is filtered by the first trace THEN only the first chain's lines show, both
    // scripts' of it
    let one = native(p, &["logs", "--trace", &t1]).code(0).lines();
    let seen: Vec<(&str, &str)> = one
        .iter()
        .map(|r| (r["script"].as_str().unwrap(), r["msg"].as_str().unwrap()))
        .collect();
    assert_eq!(
        seen,
        [("a", "a ran"), ("a", "invoked"), ("b", "b ran 1")],
        "{one:?}"
    );
    assert!(one.iter().all(|r| r["trace"] == t1.as_str()));
    // AND an unknown trace prints nothing and says so
    let none = native(p, &["logs", "--trace", "nope"]);
    assert!(none.code(0).stdout.is_empty());
    none.err_has("no log record of trace \"nope\"");
    // AND on a terminal's form (NATIVE_LOG_FORMAT=text) a line is readable, not JSON
    let text = Command::new(native_bin())
        .args(["--project", p.to_str().unwrap(), "logs", "--trace", &t1])
        .env("NATIVE_LOG_FORMAT", "text")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout).into_owned();
    let first_line = text.lines().next().unwrap_or_default();
    assert!(
        first_line.contains("INFO  acme/a a ran") && first_line.contains(&format!("trace={t1}")),
        "{text}"
    );

    // WHEN the log is followed and another chain runs
    let mut follow = Command::new(native_bin())
        .args([
            "--project",
            p.to_str().unwrap(),
            "logs",
            "--follow",
            "--tenant",
            "acme",
            "--limit",
            "1",
        ])
        .env("NATIVE_LOG_FORMAT", "json")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = follow.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // (the newest line of the history first: it has read the history and follows now)
    let history = rx.recv_timeout(std::time::Duration::from_secs(30)).unwrap();
    assert!(history.contains("b ran 2"), "{history}");
    let t3 = trace_of(native(p, &["invoke", "acme", "a", r#"{"n":3}"#]).code(0));
    // THEN its lines appear as they are written
    let mut got: Vec<Value> = Vec::new();
    while got.last().is_none_or(|r| r["msg"] != "b ran 3") {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("--follow printed only {got:?}"));
        got.push(serde_json::from_str::<Value>(&line).unwrap());
    }
    let _ = follow.kill();
    let _ = follow.wait();
    let msgs: Vec<&str> = got.iter().filter_map(|r| r["msg"].as_str()).collect();
    assert_eq!(msgs, ["a ran", "invoked", "b ran 3"], "{got:?}");
    assert!(got.iter().all(|r| r["trace"] == t3.as_str()), "{got:?}");
}

#[test]
fn a_dead_letter_names_its_trace_and_its_failures_are_found_by_it() {
    // GIVEN a message sent from outside that fails five times
    let p = project(
        r#"{ "queue": true }"#,
        &[(
            "bad",
            "function on_queue(ctx, ev) error('no ' .. ctx.trace) end",
        )],
    );
    let p = p.path();
    let trace = trace_of(&native(p, &["send", "acme", "bad", "{}"]));
    for _ in 2..=5 {
        native(p, &["clock", "advance", "6m"]).code(0);
        native(p, &["drain"]);
    }
    // WHEN the dead letters are listed THEN it names the trace, which every attempt ran in
    let dead = native(p, &["dlq"]).code(0).lines();
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0]["trace"], trace.as_str());
    assert!(
        dead[0]["last_error"]
            .as_str()
            .unwrap()
            .contains(&format!("no {trace}")),
        "{}",
        dead[0]
    );
    // AND `native logs --trace` finds its five failures
    let lines = native(p, &["logs", "--trace", &trace]).code(0).lines();
    let failed = lines
        .iter()
        .filter(|r| {
            r["msg"]
                .as_str()
                .is_some_and(|m| m.starts_with("message failed"))
        })
        .count();
    assert_eq!(failed, 5, "{lines:?}");
}

#[test]
fn deploy_without_a_region_says_to_set_one() {
    // GIVEN a valid tenant and an environment with no AWS region anywhere (no variable, no
    // profile file, no emulator endpoint)
    let p = project(r#"{ "queue": true }"#, &[("q", "function on_queue() end")]);
    let home = tempfile::tempdir().unwrap();
    let o = std::process::Command::new(native_bin())
        .args(["--project", p.path().to_str().unwrap()])
        .args(["deploy", "acme", "--bucket", "scripts-b"])
        .env_remove("AWS_REGION")
        .env_remove("AWS_DEFAULT_REGION")
        .env_remove("AWS_ENDPOINT_URL")
        .env_remove("AWS_PROFILE")
        .env("HOME", home.path())
        .env("AWS_CONFIG_FILE", home.path().join("none"))
        .env("AWS_SHARED_CREDENTIALS_FILE", home.path().join("none"))
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    // WHEN it is deployed with --bucket THEN it says what to set, not the SDK's debug string
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no AWS region is set: set AWS_REGION"),
        "{err}"
    );
    assert!(!err.contains("DispatchFailure"), "{err}");
}

#[test]
fn invoking_a_script_that_is_not_there_logs_no_invoked_line() {
    // GIVEN the example project
    let (_tmp, p) = hello();
    // WHEN a script it does not have is invoked THEN it fails, and nothing says it was invoked
    let r = native(&p, &["invoke", "hello", "strat", "{}"]);
    r.code(2).err_has("strat");
    assert!(!r.stderr.contains("\"invoked\""), "{}", r.stderr);
    // AND a script that is there still logs the chain it started
    native(&p, &["invoke", "hello", "start", r#"{"name":"Ada"}"#])
        .code(0)
        .err_has("\"msg\":\"invoked\"");
}

#[test]
fn init_names_the_example_tenant_with_tenant() {
    // GIVEN `native init --tenant shop`
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("proj");
    let made = native_in(
        tmp.path(),
        &["init", p.to_str().unwrap(), "--tenant", "shop"],
    );
    made.code(0);
    assert!(
        made.stdout.contains("with the tenant \"shop\""),
        "{}",
        made.stdout
    );
    // THEN the example runs under that name, and no hello was made
    assert!(!p.join("tenants/hello").exists());
    native(&p, &["invoke", "shop", "start", r#"{"name":"Ada"}"#]).code(0);
    // AND a name that is not one is refused
    native_in(tmp.path(), &["init", "x", "--tenant", "../up"])
        .code(2)
        .err_has("--tenant");
}

const ORDER: &str = r#"
function on_invoke(ctx, ev)
  native.log("info", "order placed", { order_id = ev.id, n = 3 })
  native.barrier.create{ id = ev.id, members = { "a", "b" }, continue_with = "shipped" }
  return ctx.trace
end"#;
const SHIPPED: &str = r#"
function on_queue(ctx, ev) native.log("info", "Shipped it", { order_id = ev.barrier }) end"#;

#[test]
fn an_operators_acks_are_steps_of_the_order_and_logs_filter_by_field_and_text() {
    // GIVEN two orders, each waiting on two members
    let p = project(
        r#"{ "queue": true }"#,
        &[
            ("order", ORDER),
            ("shipped", SHIPPED),
            ("router", "function on_route() end"),
        ],
    );
    let p = p.path();
    let o17 = native(p, &["invoke", "acme", "order", r#"{"id":"o-17"}"#]);
    let chain: String = serde_json::from_str(o17.code(0).stdout.trim()).unwrap();
    native(p, &["invoke", "acme", "order", r#"{"id":"o-18"}"#]).code(0);
    // WHEN an operator acks both members of o-17 from the CLI (its continuation runs)
    native(p, &["barrier", "ack", "acme", "o-17", "a"]).code(0);
    native(
        p,
        &["barrier", "ack", "acme", "o-17", "b", "--error", "lost"],
    )
    .code(0);
    // THEN the order's chain holds its run, the wait it started, both acks as steps naming the
    // operator, and the continuation
    let lines = native(p, &["logs", "--trace", &chain]).code(0).lines();
    let msgs: Vec<&str> = lines.iter().filter_map(|r| r["msg"].as_str()).collect();
    assert_eq!(
        msgs,
        [
            "order placed",
            "barrier created",
            "invoked",
            "barrier member acked",
            "barrier member acked",
            "Shipped it"
        ],
        "{lines:?}"
    );
    let step = &lines[4];
    assert_eq!(step["step"], true);
    assert_eq!(step["origin"]["by"], "operator", "{step}");
    assert_eq!(step["origin"]["via"], "cli", "{step}");
    assert_eq!(
        (&step["member"], &step["ok"]),
        (&Value::from("b"), &Value::from(false))
    );
    // AND --where picks records by a field (nested, or a number as written), every one given
    let of_o17 = native(p, &["logs", "--where", "order_id=o-17"])
        .code(0)
        .lines();
    let msgs: Vec<&str> = of_o17.iter().filter_map(|r| r["msg"].as_str()).collect();
    assert_eq!(msgs, ["order placed", "Shipped it"], "{of_o17:?}");
    let by_cli = native(
        p,
        &["logs", "--where", "origin.via=cli", "--where", "ok=true"],
    )
    .code(0)
    .lines();
    assert_eq!(by_cli.len(), 1, "{by_cli:?}");
    assert_eq!(by_cli[0]["member"], "a");
    assert_eq!(
        native(p, &["logs", "--where", "n=3"]).code(0).lines().len(),
        2
    );
    // AND --grep finds text in any value, case ignored
    let shipped = native(p, &["logs", "--grep", "SHIPPED IT"]).code(0).lines();
    assert_eq!(shipped.len(), 1, "{shipped:?}");
    assert_eq!(shipped[0]["trace"], chain.as_str());
    let none = native(p, &["logs", "--grep", "nothing like it"]);
    assert!(none.code(0).stdout.is_empty());
    none.err_has("matches --where and --grep");
    // AND a --where that is no FIELD=VALUE is a usage error that shows the form
    native(p, &["logs", "--where", "order_id"])
        .code(2)
        .err_has("write FIELD=VALUE");
}
