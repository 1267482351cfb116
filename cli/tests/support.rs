//! What the CLI's test files share: the `native` binary cargo built for them, the repository's
//! root, and the usual ways of running the binary on a project (`native_tests::cli` does the
//! running; it cannot know the binary's path, which only this crate's tests are given).

use std::path::{Path, PathBuf};
use std::process::Output;

use native_tests::cli::Run;
use native_tests::serve::Server;

/// The `native` binary that cargo built for these tests.
pub fn native_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_native"))
}

/// The repository's root (this crate is `cli/`).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// `native --project project args...` with no standard input, to its end.
pub fn run(project: &Path, args: &[&str]) -> Output {
    native_tests::cli::run(&native_bin(), project, args)
}

/// [`run`], which must succeed; its standard output.
pub fn ok(project: &Path, args: &[&str]) -> String {
    native_tests::cli::run_ok(&native_bin(), project, args)
}

/// `native args...` in `cwd`, checked through [`Run`].
pub fn run_in(cwd: &Path, args: &[&str]) -> Run {
    native_tests::cli::run_in(&native_bin(), cwd, args, &[])
}

/// `native --project project args...` from another folder, checked through [`Run`].
pub fn run_at(project: &Path, args: &[&str]) -> Run {
    native_tests::cli::run_at(&native_bin(), project, args, &[])
}

/// `native serve` on `project`, on a free port, its standard error not kept.
pub fn serve(project: &Path) -> Server {
    Server::start(&native_bin(), project, false)
}
