//! Runs of the `native` command on a project, for the CLI's own tests (which know the
//! command's path as `env!("CARGO_BIN_EXE_native")`).

use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `bin --project project args...` with no standard input, to its end.
pub fn run(bin: &Path, project: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .arg("--project")
        .arg(project)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()))
}

/// [`run`], which must succeed; its standard output.
pub fn run_ok(bin: &Path, project: &Path, args: &[&str]) -> String {
    let o = run(bin, project, args);
    assert!(
        o.status.success(),
        "native {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// What one run of `native` did, with checks that print both streams when they fail.
pub struct Run {
    /// The exit code.
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Run {
    /// Checks the exit code.
    pub fn code(&self, want: i32) -> &Self {
        assert_eq!(
            self.code, want,
            "exit code\n--- stdout:\n{}\n--- stderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }

    /// Checks that standard error holds `want`.
    pub fn err_has(&self, want: &str) -> &Self {
        assert!(
            self.stderr.contains(want),
            "stderr lacks {want:?}:\n{}",
            self.stderr
        );
        self
    }

    /// Standard output's JSON lines.
    pub fn lines(&self) -> Vec<serde_json::Value> {
        self.stdout
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
            .collect()
    }
}

/// `bin ARGS` in `cwd` with `env` added, no standard input, to its end.
pub fn run_in(bin: &Path, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let o = Command::new(bin)
        .current_dir(cwd)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", bin.display()));
    Run {
        code: o.status.code().expect("native was killed by a signal"),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// [`run_in`] with `--project project` first, from the temporary folder.
pub fn run_at(bin: &Path, project: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut all = vec!["--project", project.to_str().expect("a UTF-8 path")];
    all.extend_from_slice(args);
    run_in(bin, &std::env::temp_dir(), &all, env)
}
