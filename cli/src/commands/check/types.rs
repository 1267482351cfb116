//! `native check`'s type check: every script and module of every tenant, checked by Luau's own
//! analyzer against the host API's definitions (`native.d.luau`), in the mode each file's
//! `.luaurc` files and first line give it, with `require` resolved as the runtime resolves it.
//!
//! The analyzer runs as its own process, `native-check-types` (cli/src/bin/check_types.rs),
//! installed beside `native`: it links Luau's analyzer, which cannot share a binary with the
//! runtime's Luau (native-luau-check says why), and a runaway check of a hostile script is
//! stopped after [`DEADLINE`] without taking `native` down.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The longest the whole check may take before the checker is stopped.
pub const DEADLINE: Duration = Duration::from_secs(300);

/// The most output read from the checker, in bytes.
const MAX_OUTPUT: u64 = 16 << 20;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// `native check` fails (exit 2).
    Error,
    /// Printed; `native check` passes.
    Warning,
}

/// One finding of the checker, printed as `path:line:col: message`.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The file, relative to the project.
    pub path: String,
    /// Its line, from 1.
    pub line: usize,
    /// Error or warning.
    pub severity: Severity,
    /// `path:line:col: message` (warnings as `path:line:col: warning: message`), later lines
    /// of a message indented.
    pub text: String,
}

/// The checker binary: `native-check-types` beside this `native` binary.
fn checker() -> Result<PathBuf, String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the native binary's folder: {e}"))?;
    let bin = exe.with_file_name(format!(
        "native-check-types{}",
        std::env::consts::EXE_SUFFIX
    ));
    if bin.is_file() {
        Ok(bin)
    } else {
        Err(format!(
            "the type checker {} is missing: it is built and installed with native \
             (`cargo install --path cli` installs both `native` and `native-check-types`)",
            bin.display()
        ))
    }
}

/// Type-checks the tenants' scripts and modules under `root`; the findings in file order, or
/// why the check could not run.
pub fn check(root: &Path, tenants: &[String]) -> Result<Vec<Finding>, String> {
    let bin = checker()?;
    let mut child = Command::new(&bin)
        .arg(root)
        .args(tenants)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start the type checker {}: {e}", bin.display()))?;
    let mut stdin = child.stdin.take().expect("piped stdin");
    let writer =
        std::thread::spawn(move || stdin.write_all(crate::examples::NATIVE_D_LUAU.as_bytes()));
    let mut stdout = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        (&mut stdout)
            .take(MAX_OUTPUT)
            .read_to_string(&mut out)
            .map(|_| out)
    });
    let mut stderr = child.stderr.take().expect("piped stderr");
    let errors = std::thread::spawn(move || {
        let mut out = String::new();
        let _ = (&mut stderr).take(64 << 10).read_to_string(&mut out);
        out
    });
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < DEADLINE => {
                std::thread::sleep(Duration::from_millis(20))
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "the type check took longer than {} s and was stopped",
                    DEADLINE.as_secs()
                ));
            }
            Err(e) => return Err(format!("waiting for the type checker: {e}")),
        }
    };
    let _ = writer.join();
    let out = reader
        .join()
        .map_err(|_| "reading the type checker's output failed".to_string())?
        .map_err(|e| format!("reading the type checker's output: {e}"))?;
    let err = errors.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "the type checker failed ({status}){}{}",
            if err.trim().is_empty() { "" } else { ": " },
            crate::show::text(err.trim())
        ));
    }
    out.lines().map(finding).collect()
}

/// A finding from one line of the checker's output.
fn finding(line: &str) -> Result<Finding, String> {
    let bad = || format!("the type checker wrote {:?}", crate::show::text(line));
    let v: Value = serde_json::from_str(line).map_err(|_| bad())?;
    let path = v["path"].as_str().ok_or_else(bad)?.to_string();
    let (l, c) = (
        v["line"].as_u64().ok_or_else(bad)?,
        v["col"].as_u64().ok_or_else(bad)?,
    );
    let severity = match v["severity"].as_str() {
        Some("error") => Severity::Error,
        Some("warning") => Severity::Warning,
        _ => return Err(bad()),
    };
    let message = v["message"].as_str().ok_or_else(bad)?;
    // Luau's messages may run over lines ("caused by: ..."): each later line indented, and
    // whatever the script put in them (a string literal quoted in a message) escaped.
    let message: Vec<String> = message
        .lines()
        .map(|l| crate::show::text(&l.trim_end().replace('\t', "  ")).into_owned())
        .collect();
    let label = match severity {
        Severity::Error => "",
        Severity::Warning => "warning: ",
    };
    Ok(Finding {
        text: format!(
            "{}:{l}:{c}: {label}{}",
            crate::show::text(&path),
            message.join("\n    ")
        ),
        path,
        line: l as usize,
        severity,
    })
}
