//! native-cli's integration tests, one binary (`--test integration`): each file of this folder is
//! a module below, so the core is linked once for all of them instead of once per file. A test is
//! named by its file: `cargo test -p native-cli --test integration serve::` runs `serve.rs`.
//! `tests/README.md` maps each file to what it tests; `support.rs` holds what the files share.
//!
//! The tests of all files share this process and run concurrently: none may change what is
//! global to it (environment variables, the current folder) or wait on a fixed port. The
//! hostile-load suite is a binary of its own (`--test hostile_load`; tests/README.md says why).

mod callback;
mod check_types;
mod cli;
mod clients;
mod clock;
mod console;
mod guides;
mod http_jobs;
mod listings_logs_and_hints;
mod project_folder_and_exit_codes;
mod recovery;
mod rendezvous;
mod serve;
mod storage;
mod support;
mod testing;
mod timers;

/// A file of this folder that is not declared above would never be compiled or run.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = support::root().join("cli/tests");
    let missing = native_tests::test_files::undeclared(
        &dir,
        include_str!("main.rs"),
        include_str!("../Cargo.toml"),
    );
    assert!(
        missing.is_empty(),
        "cli/tests/main.rs does not declare {missing:?}: add `mod NAME;` for each, or they never run"
    );
}
