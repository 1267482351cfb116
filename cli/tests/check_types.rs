//! `native check`'s type check: Luau's analyzer (the `native-check-types` binary beside
//! `native`) over every script and module, against native.d.luau, in each file's mode, with
//! `require` resolved across files. Drives the built binary against projects in temporary
//! folders.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{native_bin, root};

/// A deployment with buckets In and Out, and queues.
const DEPLOYMENT: &str = r#"{ "buckets": { "map": { "In": "b-in", "Out": "b-out" } } }"#;

/// What one `native check` did: exit code, stdout, stderr.
struct Run {
    code: i32,
    out: String,
    err: String,
}

impl Run {
    /// Asserts the exit code, showing everything when it differs.
    fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code, want,
            "exit code\n--- stdout:\n{}\n--- stderr:\n{}",
            self.out, self.err
        );
        self
    }

    /// Asserts that stderr has this.
    fn has(&self, want: &str) -> &Self {
        assert!(
            self.err.contains(want),
            "stderr lacks {want:?}:\n{}",
            self.err
        );
        self
    }

    /// Asserts that stderr does not have this.
    fn lacks(&self, unwanted: &str) -> &Self {
        assert!(
            !self.err.contains(unwanted),
            "stderr has {unwanted:?}:\n{}",
            self.err
        );
        self
    }
}

fn native(args: &[&str], cwd: &Path) -> Run {
    let o = Command::new(native_bin())
        .args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .output()
        .expect("cannot run native");
    Run {
        code: o.status.code().expect("native was killed by a signal"),
        out: String::from_utf8_lossy(&o.stdout).into_owned(),
        err: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn check(project: &Path) -> Run {
    native(&["--project", project.to_str().unwrap(), "check"], project)
}

/// A project with tenant `acme` (queues on) and these files under its folder
/// (`scripts/x.luau`, `.luaurc`, ...).
fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(root.join("deployment.json"), DEPLOYMENT).unwrap();
    let tenant = root.join("tenants/acme");
    std::fs::create_dir_all(tenant.join("scripts")).unwrap();
    std::fs::write(tenant.join("config.json"), r#"{ "queue": true }"#).unwrap();
    for (path, text) in files {
        let p = tenant.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

#[test]
fn strict_mode_catches_wrong_argument_types_by_file_and_line() {
    // GIVEN a strict script that passes a number as a db key, and a log level that is not one
    let p = project(&[(
        "scripts/put.luau",
        "--!strict\n\
         function on_invoke(ctx: Ctx, ev: InvokeEvent)\n\
         \x20 native.db.put(\"orders\", 42, { by = ctx.request_id })\n\
         \x20 native.log(\"warning\", \"stored\")\n\
         \x20 return nil\n\
         end\n",
    )]);
    // WHEN `native check` runs
    let r = check(p.path());
    // THEN it fails (exit 2) naming the file, line and column of each, with Luau's reason
    r.code(2)
        .has("tenants/acme/scripts/put.luau:3:")
        .has("number")
        .has("tenants/acme/scripts/put.luau:4:")
        .has("\"warning\"")
        .has("2 error(s)");
}

#[test]
fn each_file_is_checked_in_its_own_mode() {
    // GIVEN a project whose .luaurc makes strict the default, and three scripts that pass an
    // optional string where a string is wanted: one plain, one `--!nonstrict`, one `--!nocheck`
    let body = "function on_invoke(ctx: Ctx, ev: InvokeEvent)\n\
                \x20 native.bucket.Out.put(\"copy\", native.bucket.In.get(\"k\"))\n\
                \x20 return nil\n\
                end\n";
    let p = project(&[
        ("scripts/plain.luau", body),
        ("scripts/loose.luau", &format!("--!nonstrict\n{body}")),
        ("scripts/off.luau", &format!("--!nocheck\n{body}")),
    ]);
    std::fs::write(p.path().join(".luaurc"), r#"{ "languageMode": "strict" }"#).unwrap();
    // WHEN `native check` runs
    let r = check(p.path());
    // THEN the strict one fails at its line, the others (checked as they ask) do not
    r.code(2)
        .has("tenants/acme/scripts/plain.luau:2:")
        .lacks("loose.luau")
        .lacks("off.luau")
        .has("1 error(s)");
    // AND without the .luaurc, Luau's default (nonstrict) applies to the plain one too
    std::fs::remove_file(p.path().join(".luaurc")).unwrap();
    check(p.path()).code(0);
}

#[test]
fn require_resolves_across_files_and_types_flow_through_it() {
    // GIVEN a module with a typed function, required by path and by a .luaurc alias, and a
    // script that calls it with a string
    let module = "--!strict\n\
                  local M = {}\n\
                  function M.double(n: number): number\n\
                  \x20 return n * 2\n\
                  end\n\
                  return M\n";
    let p = project(&[
        ("scripts/lib/math.luau", module),
        (".luaurc", r#"{ "aliases": { "lib": "./scripts/lib", } }"#),
        (
            "scripts/good.luau",
            "--!strict\nlocal m = require(\"@lib/math\")\n\
             function on_invoke(ctx: Ctx, ev: InvokeEvent): number\n\
             \x20 return m.double(2)\nend\n",
        ),
        (
            "scripts/bad.luau",
            "--!strict\nlocal m = require(\"./lib/math\")\n\
             function on_invoke(ctx: Ctx, ev: InvokeEvent): number\n\
             \x20 return m.double(\"two\")\nend\n",
        ),
    ]);
    // WHEN `native check` runs THEN the call with a string is caught at its line, and the
    // aliased require checks clean
    check(p.path())
        .code(2)
        .has("tenants/acme/scripts/bad.luau:4:")
        .has("string")
        .lacks("good.luau")
        .lacks("math.luau");
    // WHEN a require names no module, a script, or a file of another tenant
    std::fs::write(
        p.path().join("tenants/acme/scripts/bad.luau"),
        "--!strict\nlocal a = require(\"./lib/nope\")\nlocal b = require(\"../../other/scripts/lib/x\")\nlocal c = require(\"@nope/x\")\nreturn nil\n",
    )
    .unwrap();
    // THEN each is an error naming the file, line and why
    check(p.path())
        .code(2)
        .has("tenants/acme/scripts/bad.luau:2:19: require(\"./lib/nope\"): there is no module tenants/acme/scripts/lib/nope.luau")
        .has("tenants/acme/scripts/bad.luau:3:19: require(\"../../other/scripts/lib/x\"): the path leaves the tenant's scripts")
        .has("tenants/acme/scripts/bad.luau:4:19: require(\"@nope/x\"): there is no alias @nope in tenants/acme/.luaurc; its aliases: @lib");
}

#[test]
fn a_module_is_checked_on_its_own_and_lints_are_warnings() {
    // GIVEN a module with a type error that no script requires, and a script with an unused
    // local (a lint, not an error)
    let p = project(&[
        ("scripts/lib/broken.luau", "--!strict\nlocal n: number = \"x\"\nreturn n\n"),
        (
            "scripts/s.luau",
            "--!strict\nfunction on_invoke(ctx: Ctx, ev: InvokeEvent)\n  local unused = 1\n  return nil\nend\n",
        ),
    ]);
    // WHEN `native check` runs
    let r = check(p.path());
    // THEN the module's error is reported, and the lint as a warning
    r.code(2)
        .has("tenants/acme/scripts/lib/broken.luau:2:")
        .has("tenants/acme/scripts/s.luau:3:9: warning: Variable 'unused' is never used")
        .has("1 error(s), 1 warning(s)");
}

#[test]
fn a_file_with_a_lint_error_still_shows_its_type_errors_each_mistake_once() {
    // GIVEN a script with a name of the host API that does not exist (a lint error) on one
    // line and a type error on another
    let p = project(&[(
        "scripts/s.luau",
        "--!strict\nfunction on_invoke(ctx: Ctx, ev: InvokeEvent)\n  native.db.gett(\"p\", \"k\")\n  local n: number = \"x\"\n  return n\nend\n",
    )]);
    // WHEN `native check` runs
    let r = check(p.path());
    // THEN both are reported, and the lint's line only by the lint
    r.code(2)
        .has("tenants/acme/scripts/s.luau:3:13: error: `native.db.gett` does not exist")
        .has("tenants/acme/scripts/s.luau:4:")
        .has("2 error(s)");
    let line3 = r.err.matches("tenants/acme/scripts/s.luau:3:").count();
    assert_eq!(line3, 1, "{}", r.err);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

#[test]
fn the_shipped_examples_and_init_pass_with_no_diagnostics() {
    // GIVEN each example of examples/ with the .luaurc and native.d.luau that init writes, and
    // a project that `native init` made
    let tmp = tempfile::tempdir().unwrap();
    native(&["init", "made"], tmp.path()).code(0);
    let mut projects = vec![tmp.path().join("made")];
    for e in std::fs::read_dir(root().join("examples")).unwrap() {
        let e = e.unwrap();
        if !e.path().join("deployment.json").exists() {
            continue;
        }
        let to = tmp.path().join(e.file_name());
        copy_tree(&e.path(), &to);
        std::fs::copy(tmp.path().join("made/.luaurc"), to.join(".luaurc")).unwrap();
        projects.push(to);
    }
    assert!(projects.len() >= 4, "{projects:?}");
    // WHEN `native check` runs on each THEN it passes in strict mode and says nothing else
    for p in projects {
        let r = check(&p);
        r.code(0);
        assert!(r.err.is_empty(), "{}:\n{}", p.display(), r.err);
        assert!(r.out.starts_with("ok: "), "{}", r.out);
    }
}
