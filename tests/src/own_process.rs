//! Tests that must own their process, inside the one test binary: such a test runs itself again
//! as a child process of the same binary, filtered to itself, and passes when the child passes.

use std::process::Command;

/// Set in the child: the name of the test it runs.
const CHILD: &str = "NATIVE_TEST_OWN_PROCESS";

/// Whether the calling test is to run its body here: `true` in a child process that runs only
/// this test, `false` in the test binary's own process, after a child ran the test alone and
/// passed (it panics with the child's output when the child failed). For a test that changes
/// what is global to its process (the server's stop ends every rendezvous wait of the process,
/// say), so that the tests beside it in the binary never see the change.
///
/// `module` is the caller's `module_path!()` and `test` its function's name.
pub fn alone(module: &str, test: &str) -> bool {
    // The test's name within the binary: the module path without the crate's name.
    let name = match module.split_once("::") {
        Some((_, path)) => format!("{path}::{test}"),
        None => test.to_string(),
    };
    if std::env::var(CHILD).is_ok_and(|n| n == name) {
        return true;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let o = Command::new(&exe)
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, &name)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} again for {name}: {e}", exe.display()));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && out.contains("test result: ok. 1 passed"),
        "{name}, run alone in a process of its own, failed ({}):\n--- stdout:\n{out}\n--- stderr:\n{}",
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    false
}
