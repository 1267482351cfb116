//! native-tests' integration tests, one binary (`--test integration`): each file of this folder
//! is a module below, so the core is linked once for all of them instead of once per file. A test
//! is named by its file: `cargo test -p native-tests --test integration barrier::` runs
//! `barrier.rs`. `tests/README.md` maps each file to what it tests; shared helpers are the
//! `native_tests` crate (`tests/src/`) and `common/` (an HTTP server for outbound requests).
//!
//! The tests of all files share this process and run concurrently: none may change what is
//! global to it (environment variables, the current folder) or wait on a fixed port; a test
//! that must runs alone in a child process (`native_tests::own_process`). `hostile.rs` is a
//! binary of its own (`--test hostile`): its cases are timed and measured, with nothing beside.

mod access_log;
mod admission;
mod aws;
mod aws_faults;
mod aws_isolation;
mod barrier;
mod barrier_changes;
mod barrier_dispatch;
mod barrier_shards;
mod batch;
mod batch_stale;
mod bounds;
mod common;
mod drain_give_back;
mod engine;
mod fanout;
#[cfg(feature = "aws")]
mod fault_proxy;
mod host;
mod host_args;
mod http;
mod inbound;
mod job_http;
mod luau;
mod modules;
mod power_loss;
mod proto;
mod redrive;
mod rendezvous;
mod replay;
mod router_defaults;
mod routing;
mod schedules;
mod timers;
mod trace;
mod types;

/// A file of this folder that is neither declared above nor a binary of its own in Cargo.toml
/// would never be compiled or run.
#[test]
fn every_test_file_is_a_module_of_this_binary() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let missing = native_tests::test_files::undeclared(
        &dir,
        include_str!("main.rs"),
        include_str!("../Cargo.toml"),
    );
    assert!(
        missing.is_empty(),
        "tests/tests/main.rs does not declare {missing:?}: add `mod NAME;` for each, or they never run"
    );
}
