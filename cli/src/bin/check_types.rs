//! `native-check-types ROOT TENANT...`: type-checks the tenants' scripts and modules with
//! Luau's analyzer (native-luau-check), the definitions file's text on standard input, one
//! diagnostic a line on standard output as JSON: `{ path, line, col, severity, message }`.
//!
//! Run by `native check` (cli/src/commands/check/types.rs), which installs beside it. A
//! binary of its own because the `native` binary links mlua's Luau, another version of the
//! same C and C++ symbols (native-luau-check's docs); and so a crash or a runaway check of a
//! hostile script ends this process, not `native`.

use std::io::{Read, Write};
use std::path::Path;

use native_luau_check::{check_project, Limits, Severity};

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some((root, tenants)) = args.split_first() else {
        eprintln!("usage: native-check-types ROOT TENANT... < native.d.luau");
        return std::process::ExitCode::from(2);
    };
    let mut definitions = String::new();
    if let Err(e) = std::io::stdin().read_to_string(&mut definitions) {
        eprintln!("native-check-types: reading the definitions from standard input: {e}");
        return std::process::ExitCode::from(2);
    }
    let found = check_project(
        Path::new(root),
        tenants,
        ("native.d.luau", &definitions),
        &Limits::default(),
    );
    let mut out = std::io::stdout().lock();
    for d in found {
        let line = serde_json::json!({
            "path": d.path,
            "line": d.line,
            "col": d.col,
            "severity": match d.severity { Severity::Error => "error", Severity::Warning => "warning" },
            "message": d.message,
        });
        if writeln!(out, "{line}").is_err() {
            return std::process::ExitCode::from(2);
        }
    }
    std::process::ExitCode::SUCCESS
}
