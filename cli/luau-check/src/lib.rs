//! Type-checks a native project's scripts and modules with Luau's own analyzer (Luau 0.710's
//! `Analysis`, compiled by `native-luau-analysis`), for `native check`.
//!
//! [`check_project`] reads every `.luau` file under each tenant's `scripts/`, gives each the
//! mode its `.luaurc` files set (Luau's default, nonstrict, when none does; a `--!strict` or
//! `--!nonstrict` line in the file wins), resolves `require` with the runtime's string-require
//! rules (`./`, `../`, `@self/`, and `@alias/` from the tenant folder's `.luaurc`), and checks
//! each file against the host API's definitions (`native.d.luau`).
//!
//! Architecture invariant: only the `native-check-types` binary links this crate. The runtime
//! links mlua's Luau, another version with the same C and C++ symbols; one binary with both
//! would fail to link or, worse, mix the two silently.

// The FFI to shim.cpp: each unsafe block is a call into it, or a callback from it reading the
// pointers and lengths it passes for the duration of the call.
#![allow(unsafe_code)]

mod ffi;
mod resolve;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use resolve::Luaurc;

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// A type error, a fatal lint, a module that does not resolve: `native check` fails.
    Error,
    /// A lint warning: reported, and `native check` still passes.
    Warning,
}

/// One finding, at a 1-based line and column of a file named relative to the project.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// The file, relative to the project root (`tenants/shop/scripts/ack.luau`).
    pub path: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
    /// Error or warning.
    pub severity: Severity,
    /// What Luau (or the resolver) says.
    pub message: String,
}

/// Limits of one check.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Seconds Luau may spend on one module before it stops and reports it.
    pub module_time_s: f64,
    /// The largest file read, in bytes.
    pub file_bytes: u64,
    /// The most files of one tenant.
    pub files: usize,
    /// The deepest folder under `scripts/`.
    pub depth: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            module_time_s: 10.0,
            file_bytes: 1 << 20,
            files: 2000,
            depth: 8,
        }
    }
}

/// A tenant's files, as the checker and the resolver see them.
pub(crate) struct TenantFiles {
    /// `tenants/<name>`.
    pub dir: String,
    /// Names under `scripts/` without `.luau` (`main`, `lib/orders`), to the project-relative
    /// path of the file.
    pub files: BTreeMap<String, String>,
    /// The tenant's `.luaurc` aliases.
    pub luaurc: Luaurc,
}

/// Checks every script and module of `tenants` (names of folders under `root/tenants`) against
/// `definitions` (`(name, text)` of a definitions file), returning what Luau reports, sorted
/// by file and position, each once.
pub fn check_project(
    root: &Path,
    tenants: &[String],
    definitions: (&str, &str),
    limits: &Limits,
) -> Vec<Diagnostic> {
    let mut out = BTreeSet::new();
    let mut checker = match ffi::Checker::new() {
        Some(c) => c,
        None => {
            return vec![Diagnostic {
                path: definitions.0.to_string(),
                line: 1,
                col: 1,
                severity: Severity::Error,
                message: "Luau's analyzer could not start".into(),
            }]
        }
    };
    let mut sink = |d: Diagnostic| {
        if !is_entry_unused(&d) {
            out.insert(d);
        }
    };
    if !checker.load_definitions(definitions.0, definitions.1, &mut sink) {
        return out.into_iter().collect();
    }
    let mut modes = resolve::Modes::new(root);
    let mut all = Vec::new();
    for name in tenants {
        let dir = format!("tenants/{name}");
        let files = list_files(root, &dir, limits, &mut sink);
        let luaurc = modes.tenant_luaurc(&dir, &mut sink);
        for (_, path) in files.iter() {
            let Some(source) = read(root, path, limits.file_bytes, &mut sink) else {
                continue;
            };
            let mode = modes.mode_of(path, &mut sink);
            checker.add_source(path, &source, mode);
        }
        all.push(TenantFiles { dir, files, luaurc });
    }
    for tenant in &all {
        for path in tenant.files.values() {
            let mut resolver = |from: &str, path: &str, line: u32, col: u32| {
                resolve::resolve(&all, from, path).map_err(|why| Diagnostic {
                    path: from.to_string(),
                    line: line + 1,
                    col: col + 1,
                    severity: Severity::Error,
                    message: format!("require({path:?}): {why}"),
                })
            };
            checker.check(path, limits.module_time_s, &mut resolver, &mut sink);
        }
    }
    out.into_iter().collect()
}

/// The entry points that native calls: Luau's linter cannot know that they are used.
const ENTRIES: &[&str] = &["on_invoke", "on_queue", "on_route"];

/// Whether `d` is Luau's "never used" lint about an entry point.
fn is_entry_unused(d: &Diagnostic) -> bool {
    d.severity == Severity::Warning
        && d.message.ends_with("(FunctionUnused)")
        && ENTRIES.iter().any(|e| {
            d.message
                .starts_with(&format!("Function '{e}' is never used"))
        })
}

/// Every `.luau` file under `<dir>/scripts`, by name without `.luau`; symlinks are not
/// followed (a link could reach another tenant's files), and what is skipped is said.
fn list_files(
    root: &Path,
    dir: &str,
    limits: &Limits,
    sink: &mut dyn FnMut(Diagnostic),
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack: Vec<(String, usize)> = vec![(String::new(), 0)];
    let scripts = format!("{dir}/scripts");
    while let Some((rel, depth)) = stack.pop() {
        let folder: PathBuf = root.join(&scripts).join(&rel);
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                continue;
            };
            let child = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let Ok(kind) = e.file_type() else { continue };
            let warn = |message: String| Diagnostic {
                path: format!("{scripts}/{child}"),
                line: 1,
                col: 1,
                severity: Severity::Warning,
                message,
            };
            if kind.is_symlink() {
                if name.ends_with(".luau") || !name.contains('.') {
                    sink(warn(
                        "a symbolic link: not checked (native reads no links)".into(),
                    ));
                }
            } else if kind.is_dir() {
                if depth + 1 > limits.depth {
                    sink(warn(format!(
                        "deeper than {} folders under scripts/: not checked",
                        limits.depth
                    )));
                } else {
                    stack.push((child, depth + 1));
                }
            } else if let Some(stem) = child.strip_suffix(".luau") {
                if out.len() >= limits.files {
                    sink(warn(format!(
                        "the tenant has more than {} .luau files: the rest are not checked",
                        limits.files
                    )));
                    return out;
                }
                out.insert(stem.to_string(), format!("{scripts}/{child}"));
            }
        }
    }
    out
}

/// A file's text, or `None` having said why not.
fn read(root: &Path, path: &str, max: u64, sink: &mut dyn FnMut(Diagnostic)) -> Option<String> {
    let fail = |message: String| Diagnostic {
        path: path.to_string(),
        line: 1,
        col: 1,
        severity: Severity::Error,
        message,
    };
    let full = root.join(path);
    match std::fs::metadata(&full) {
        Ok(m) if m.len() > max => {
            sink(fail(format!(
                "{} bytes: larger than the {max} bytes the type checker reads",
                m.len()
            )));
            return None;
        }
        Ok(_) => {}
        Err(e) => {
            sink(fail(format!("cannot read it: {e}")));
            return None;
        }
    }
    match std::fs::read(&full) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => Some(s.strip_prefix('\u{feff}').map(str::to_string).unwrap_or(s)),
            Err(e) => {
                sink(fail(format!("not UTF-8: {e}")));
                None
            }
        },
        Err(e) => {
            sink(fail(format!("cannot read it: {e}")));
            None
        }
    }
}
