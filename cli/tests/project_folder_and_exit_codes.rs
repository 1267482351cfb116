//! Where the `native` command keeps a project and what its exit codes mean: `--project` for
//! `demo` and `init DIR`, one drain summary, exit codes that are about the verb's own work, retries a
//! visibility timeout apart on the project clock, `native dlq redrive`, and `native check`
//! refusing a batch tenant without a batch bucket. Each test drives the built binary.

use native_tests::{write_tenant, DEPLOYMENT};

use crate::support::{root, run_at as native, run_in as native_in};

/// A project with the tenant `acme` and `scripts`.
fn project(config: &str, scripts: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(dir.path(), "acme", config, scripts);
    dir
}

const QUEUE: &str = r#"{ "queue": true, "limits": { "timeout_s": 10 } }"#;

/// A script whose `on_queue` always fails on line 1, and scripts that run well or send to it.
fn failing_project() -> tempfile::TempDir {
    project(
        QUEUE,
        &[
            ("bad", "function on_queue(ctx) error('attempt ' .. ctx.attempt) end"),
            ("good", "function on_invoke(ctx, ev) return { fine = true } end"),
            (
                "sends_bad",
                "function on_invoke() native.queue.send('bad', {}) return 1 end",
            ),
            ("later", "function on_invoke() native.queue.send('good_q', {}, { delay_s = 2 }) return 1 end"),
            ("good_q", "function on_queue() end"),
        ],
    )
}

#[test]
fn demo_keeps_its_projects_in_the_project_folder() {
    // GIVEN an empty folder
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("tour");
    // WHEN `native --project DIR demo` runs
    let r = native_in(tmp.path(), &["--project", dir.to_str().unwrap(), "demo"]);
    r.code(0);
    // THEN the three example projects are kept there, in the state the demo left them
    for name in ["hello", "barrier", "batch"] {
        assert!(dir.join(name).join("deployment.json").is_file(), "{name}");
    }
    let r = native(
        &dir.join("hello"),
        &["get", "hello", "Out", "results/Ada.txt"],
    );
    assert_eq!(r.code(0).stdout, "Hello, Ada!");
    // WHEN run again on the same folder THEN it refuses to overwrite them
    native_in(tmp.path(), &["--project", dir.to_str().unwrap(), "demo"])
        .code(2)
        .err_has("already exists");
}

#[test]
fn init_takes_a_relative_dir_inside_the_project_folder() {
    // GIVEN a folder, and the command run from somewhere else
    let tmp = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    // WHEN `native --project P init sub` runs THEN the project is P/sub, not ./sub
    native_in(
        elsewhere.path(),
        &["--project", tmp.path().to_str().unwrap(), "init", "sub"],
    )
    .code(0);
    assert!(tmp.path().join("sub/deployment.json").is_file());
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    // WHEN `native --project P init` runs THEN the project is P itself
    let q = tmp.path().join("q");
    native_in(
        elsewhere.path(),
        &["--project", q.to_str().unwrap(), "init"],
    )
    .code(0);
    assert!(q.join("deployment.json").is_file());
    native(&q, &["check"]).code(0);
}

#[test]
fn drain_prints_its_summary_once() {
    // GIVEN a message that fails
    let p = failing_project();
    native(p.path(), &["send", "acme", "bad", "--no-drain"]).code(0);
    // WHEN drained THEN exit 1 with one summary line naming the failure
    let r = native(p.path(), &["drain"]);
    r.code(1).err_has("attempt 1");
    assert_eq!(r.stderr.matches("handled").count(), 1, "{}", r.stderr);
    assert_eq!(r.stderr.matches("drained:").count(), 1, "{}", r.stderr);
    // AND a drain with nothing to do prints its one line and succeeds
    let r = native(p.path(), &["drain"]);
    r.code(0);
    assert_eq!(r.stderr.trim(), "drained: 0 handled, 0 failed");
}

#[test]
fn a_verb_exits_1_only_for_its_own_work() {
    // GIVEN an older message that fails, due again
    let p = failing_project();
    native(p.path(), &["send", "acme", "bad"]).code(1);
    native(p.path(), &["clock", "advance", "6m"]).code(0);
    // WHEN an unrelated invocation runs and its drain meets the older failure
    let r = native(p.path(), &["invoke", "acme", "good"]);
    // THEN it prints its result and exits 0; the older failure is a note on stderr
    r.code(0)
        .err_has("1 older message(s) failed again")
        .err_has("not caused by this command")
        .err_has("attempt 2");
    assert!(r.stdout.contains("\"fine\": true"), "{}", r.stdout);
    assert!(!r.stderr.contains("error:"), "{}", r.stderr);
    // WHEN the invocation itself sends a message that fails THEN exit 1, naming it
    native(p.path(), &["invoke", "acme", "sends_bad"])
        .code(1)
        .err_has("1 message(s) this command caused failed")
        .err_has("bad.luau:1: attempt 1");
    // AND `send` and `put` count their own message the same way
    native(p.path(), &["send", "acme", "bad"])
        .code(1)
        .err_has("this command caused");
    native(p.path(), &["send", "acme", "good_q"]).code(0);
}

#[test]
fn retries_come_a_visibility_timeout_later_on_the_project_clock() {
    // GIVEN a message that failed once
    let p = failing_project();
    native(p.path(), &["send", "acme", "bad"])
        .code(1)
        .err_has("360 s");
    // WHEN drained at once, or after five minutes THEN it is not retried yet, and `drain
    // --wait` does not sit waiting for it
    let started = std::time::Instant::now();
    native(p.path(), &["drain", "--wait"])
        .code(0)
        .err_has("drained: 0 handled, 0 failed");
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
    native(p.path(), &["clock", "advance", "5m"]).code(0);
    native(p.path(), &["drain"])
        .code(0)
        .err_has("drained: 0 handled, 0 failed");
    // WHEN the clock passes 360 s since the failure THEN the second attempt runs
    native(p.path(), &["clock", "advance", "61s"]).code(0);
    let r = native(p.path(), &["drain"]);
    r.code(1)
        .err_has("attempt 2")
        .err_has("1 waiting for a retry");
    // AND after the fifth attempt it is a dead letter at once
    for n in 3..=5 {
        native(p.path(), &["clock", "advance", "6m"]).code(0);
        native(p.path(), &["drain"])
            .code(1)
            .err_has(&format!("attempt {n}"));
    }
    let r = native(p.path(), &["dlq", "acme"]);
    r.code(0).err_has("1 dead letter(s)");
    // AND `drain --wait` still waits for a delayed message that has not failed
    native(p.path(), &["invoke", "acme", "later", "--no-drain"]).code(0);
    native(p.path(), &["drain", "--wait"])
        .code(0)
        .err_has("drained: 1 handled, 0 failed");
}

#[test]
fn check_refuses_a_batch_tenant_without_a_batch_bucket() {
    // GIVEN a deployment without a batch bucket and a tenant with "batch": true
    let p = project(r#"{ "batch": true }"#, &[("s", "function on_invoke() end")]);
    std::fs::write(
        p.path().join("deployment.json"),
        r#"{ "buckets": { "map": { "In": "acme-in" } } }"#,
    )
    .unwrap();
    // WHEN checked THEN exit 2 naming the tenant's file, the field and the fix
    native(p.path(), &["check"])
        .code(2)
        .err_has("tenants/acme/config.json: batch: true needs a batch bucket")
        .err_has("deployment.json");
    // AND with a batch bucket it passes
    std::fs::write(p.path().join("deployment.json"), DEPLOYMENT).unwrap();
    native(p.path(), &["check"]).code(0);
}

#[test]
fn the_partner_guide_states_the_default_prefix_of_each_backend() {
    // GIVEN the guide, the template and the reader of deployment.json
    let root = root();
    let guide = std::fs::read_to_string(root.join("docs/partners.md")).unwrap();
    let template = std::fs::read_to_string(root.join("template.yaml")).unwrap();
    let local = native_core::config::Deployment::from_json(
        "deployment.json",
        r#"{ "batch": { "bucket": "batch-bucket" } }"#,
    )
    .unwrap();
    // THEN on AWS the stack's BatchPrefix defaults to tenants/, as the guide says
    let param = template.split("  BatchPrefix:").nth(1).unwrap();
    let default = param
        .lines()
        .find_map(|l| l.trim().strip_prefix("Default:"))
        .unwrap()
        .trim();
    assert_eq!(default, "tenants/");
    assert!(guide.contains("`BatchPrefix` parameter (`tenants/` unless changed)"));
    // AND locally a deployment.json without a prefix has none, as the guide says
    assert_eq!(local.batch.unwrap().prefix, "");
    assert!(guide.contains("`batch.prefix` in `deployment.json` (empty when left out"));
}

#[test]
fn dlq_redrive_brings_back_a_lost_barrier_dispatch_once_fixed() {
    // GIVEN a barrier whose last ack runs out of data ops at its dispatch (while `t/burn` is
    // set), on all five attempts
    let p = project(
        r#"{ "queue": true, "limits": { "max_data_ops": 20 } }"#,
        &[
            (
                "create",
                "function on_invoke(ctx, ev)
                   native.db.put('t', 'burn', 15)
                   return native.barrier.create({ id = 'b1', members = { 'a' }, continue_with = 'fin' })
                 end",
            ),
            (
                "ack",
                "function on_queue(ctx, ev)
                   for i = 1, native.db.get('t', 'burn') or 0 do native.db.get('t', 'x') end
                   native.barrier.ack('b1', 'a', { ok = true })
                 end",
            ),
            ("fix", "function on_invoke() native.db.delete('t', 'burn') end"),
            (
                "fin",
                "function on_queue(ctx, ev) native.db.put('t', 'done', native.barrier.hydrate(ev).ok) end",
            ),
            ("done", "function on_invoke() return native.db.get('t', 'done') end"),
        ],
    );
    native(p.path(), &["invoke", "acme", "create"]).code(0);
    native(p.path(), &["send", "acme", "ack"])
        .code(1)
        .err_has("limit max_data_ops exceeded");
    for _ in 2..=5 {
        native(p.path(), &["clock", "advance", "6m"]).code(0);
        native(p.path(), &["drain"]).code(1);
    }
    native(p.path(), &["dlq", "acme"])
        .code(0)
        .err_has("1 dead letter(s)");
    let r = native(p.path(), &["barrier", "status", "acme", "b1"]);
    let st: serde_json::Value = serde_json::from_str(&r.code(0).stdout).unwrap();
    assert_eq!(
        (st["complete"].as_bool(), st["dispatched"].as_bool()),
        (Some(true), Some(false))
    );
    // WHEN the cause is fixed and the tenant's dead letters are redriven
    native(p.path(), &["invoke", "acme", "fix"]).code(0);
    native(p.path(), &["dlq", "redrive", "other"])
        .code(0)
        .err_has("0 dead letter(s) moved");
    native(p.path(), &["dlq", "redrive", "acme"])
        .code(0)
        .err_has("1 dead letter(s) moved back");
    // THEN the ack ran again and dispatched: the continuation ran
    assert_eq!(
        native(p.path(), &["invoke", "acme", "done"])
            .code(0)
            .stdout
            .trim(),
        "1"
    );
    let r = native(p.path(), &["barrier", "status", "acme", "b1"]);
    let st: serde_json::Value = serde_json::from_str(&r.code(0).stdout).unwrap();
    assert_eq!(st["dispatched"], true);
    native(p.path(), &["dlq"])
        .code(0)
        .err_has("0 dead letter(s)");
}
