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
