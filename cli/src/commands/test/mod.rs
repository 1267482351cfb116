//! `native test [TENANT...] [--filter TEXT] [--junit FILE]`: runs every
//! `tenants/<tenant>/tests/**/*.test.luau` of the project. Each file runs in a Luau VM of its
//! own and calls `test(name, fn)`; each test's `fn(t)` gets a fresh [`world::World`]. A test is a
//! function call, not a process: the files and their tests run one after the other in this one.
//!
//! Output as cargo test's: `test <file> :: <name> ... ok` (or `FAILED`) for each, the failures
//! with their messages, then `N passed, M failed` alone on a line. Exit 0, 1 when a test failed,
//! 2 for a usage or config error.

mod diff;
mod junit;
mod require;
mod vm;
mod world;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{Failed, Outcome};
use crate::out::{errln, outln};

/// The longest a test file may be.
const MAX_FILE_BYTES: u64 = 4 << 20;

/// What `native test` was asked.
pub struct Args {
    /// Only these tenants (none: every tenant with tests).
    pub tenants: Vec<String>,
    /// Only tests whose `<file> :: <name>` contains this.
    pub filter: Option<String>,
    /// Where to write JUnit XML.
    pub junit: Option<PathBuf>,
    /// How long a test's own Luau may run.
    pub timeout: Duration,
}

/// One test's result.
pub struct Ran {
    /// The test file, relative to the project.
    pub file: String,
    /// The test's name.
    pub name: String,
    /// Why it failed.
    pub failure: Option<String>,
    /// How long it took.
    pub time: Duration,
}

pub async fn run(project: &Path, args: Args) -> Outcome {
    let (root, deployment) = open_config(project)?;
    let tenants = Arc::new(native_core::tenants::DirTenants::new(&root));
    let files = find(&root, &args.tenants)?;
    // Each tenant's config and scripts are read (and checked) before any test runs: a broken
    // one is a config error, not a failure of each of its tests.
    // The test files `require` the tenant's modules from them.
    let mut loaded = std::collections::BTreeMap::new();
    for (tenant, _) in &files {
        if !loaded.contains_key(tenant) {
            let t = native_core::tenants::TenantSource::load(tenants.as_ref(), tenant).await?;
            loaded.insert(tenant.clone(), t);
        }
    }
    if let Some(path) = &args.junit {
        // Say a bad place now, not after the whole run.
        std::fs::write(path, "")
            .map_err(|e| Failed::usage(format!("--junit {}: cannot write: {e}", path.display())))?;
    }
    let shared = Arc::new(world::Shared {
        root: root.clone(),
        deployment,
        tenants,
        engine: Arc::new(native_core::engine::Engine::new()),
        handle: tokio::runtime::Handle::current(),
    });
    let filter = args.filter.clone();
    let timeout = args.timeout;
    let started = Instant::now();
    // The tests' Luau and the worlds' waits run on a thread of their own, which may block.
    let ran = tokio::task::spawn_blocking(move || {
        run_files(&shared, &loaded, &files, filter.as_deref(), timeout)
    })
    .await
    .map_err(|e| Failed::script(format!("the test run stopped: {e}")))?;
    let elapsed = started.elapsed();
    native_core::ports::freeze_clock(None);
    native_core::random::seed(None);
    let failed: Vec<&Ran> = ran.iter().filter(|r| r.failure.is_some()).collect();
    if !failed.is_empty() {
        outln!("");
        outln!("failures:");
        for r in &failed {
            outln!("");
            outln!("---- {} :: {} ----", r.file, r.name);
            outln!("{}", r.failure.as_deref().unwrap_or(""));
        }
        outln!("");
        outln!("failures:");
        for r in &failed {
            outln!("    {} :: {}", r.file, r.name);
        }
    }
    outln!("");
    outln!(
        "{} passed, {} failed",
        ran.len() - failed.len(),
        failed.len()
    );
    errln!("finished in {:.2}s", elapsed.as_secs_f64());
    if let Some(path) = &args.junit {
        std::fs::write(path, junit::xml(&ran, elapsed))
            .map_err(|e| Failed::usage(format!("--junit {}: cannot write: {e}", path.display())))?;
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(Failed::script(format!("{} test(s) failed", failed.len())))
    }
}

/// The project's folder and deployment, read without opening its `.native/`, which no test
/// touches.
fn open_config(project: &Path) -> Result<(PathBuf, native_core::config::Deployment), Failed> {
    let file = project.join(native_core::config::DEPLOYMENT_FILE);
    let text = std::fs::read_to_string(&file).map_err(|e| {
        Failed::usage(format!(
            "no project: cannot read {} ({e}); run `native init DIR` to make one, or pass --project DIR",
            file.display()
        ))
    })?;
    let deployment =
        native_core::config::Deployment::from_json(native_core::config::DEPLOYMENT_FILE, &text)?;
    Ok((project.to_path_buf(), deployment))
}

/// The test files of the given tenants (none: every tenant), as (tenant, path), in order.
fn find(root: &Path, only: &[String]) -> Result<Vec<(String, PathBuf)>, Failed> {
    let tenants_dir = root.join("tenants");
    let mut tenants: Vec<String> = std::fs::read_dir(&tenants_dir)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.path().is_dir())
                .filter_map(|e| e.file_name().to_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    tenants.sort();
    for t in only {
        if !tenants.contains(t) {
            return Err(Failed::usage(format!(
                "no tenant {t:?}: tenants/{t}/ does not exist (tenants: {})",
                tenants.join(", ")
            )));
        }
    }
    let mut out = Vec::new();
    for t in tenants
        .iter()
        .filter(|t| only.is_empty() || only.contains(t))
    {
        let mut files = Vec::new();
        walk(&tenants_dir.join(t).join("tests"), 0, &mut files);
        files.sort();
        out.extend(files.into_iter().map(|f| (t.clone(), f)));
    }
    if out.is_empty() {
        errln!("no test files: tests are tenants/<tenant>/tests/**/*.test.luau");
    }
    Ok(out)
}

fn walk(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    // Folders nest a few levels; a link that loops stops here.
    if depth > 16 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.filter_map(|e| e.ok()) {
        let p = e.path();
        let Ok(kind) = e.file_type() else { continue };
        if kind.is_dir() {
            walk(&p, depth + 1, out);
        } else if p.to_str().is_some_and(|s| s.ends_with(".test.luau")) {
            out.push(p);
        }
    }
}

/// The most log records shown under a failure.
const MAX_SHOWN_RECORDS: usize = 20;

/// The warnings and errors the runs of a failed test logged (the last
/// [`MAX_SHOWN_RECORDS`]), as cargo test shows a failed test's output.
fn warnings(w: &world::World) -> String {
    let logs = w.logs();
    let picked: Vec<_> = logs
        .iter()
        .filter(|r| matches!(r["level"].as_str(), Some("warn" | "error")))
        .collect();
    if picked.is_empty() {
        return String::new();
    }
    let skip = picked.len().saturating_sub(MAX_SHOWN_RECORDS);
    let mut out = format!(
        "\nwarnings and errors its runs logged{}:",
        if skip > 0 {
            format!(" (the last {MAX_SHOWN_RECORDS} of {})", picked.len())
        } else {
            String::new()
        }
    );
    for r in &picked[skip..] {
        out.push_str("\n  ");
        out.push_str(&w.name_scripts(&crate::show::text(&r.to_string())));
    }
    out
}

/// A test's seed: the same for the same file and name on every run and machine (FNV-1a).
fn seed(file: &str, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in file.bytes().chain([0]).chain(name.bytes()) {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A test file's path in the project, and its VM with the tests it declared, or why it did not
/// load.
fn load(
    shared: &world::Shared,
    tenant: &Arc<native_core::config::Tenant>,
    path: &Path,
    timeout: Duration,
) -> (String, Result<vm::FileVm, String>) {
    let file = path
        .strip_prefix(&shared.root)
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned();
    let source = match std::fs::metadata(path) {
        Ok(m) if m.len() > MAX_FILE_BYTES => Err(format!(
            "the file is {} bytes; a test file may have {MAX_FILE_BYTES}",
            m.len()
        )),
        _ => std::fs::read_to_string(path).map_err(|e| format!("cannot read it: {e}")),
    };
    let vm = source.and_then(|s| vm::FileVm::load(&file, &s, tenant.clone(), timeout));
    (file, vm)
}

fn run_files(
    shared: &Arc<world::Shared>,
    tenants: &std::collections::BTreeMap<String, Arc<native_core::config::Tenant>>,
    files: &[(String, PathBuf)],
    filter: Option<&str>,
    timeout: Duration,
) -> Vec<Ran> {
    let loaded: Vec<_> = files
        .iter()
        .filter_map(|(tenant, path)| {
            Some((tenant, load(shared, tenants.get(tenant)?, path, timeout)))
        })
        .collect();
    let selected =
        |file: &str, name: &str| filter.is_none_or(|f| format!("{file} :: {name}").contains(f));
    let count: usize = loaded
        .iter()
        .map(|(_, (file, vm))| match vm {
            Ok(vm) => vm.tests.iter().filter(|(n, _)| selected(file, n)).count(),
            Err(_) => 1,
        })
        .sum();
    outln!("running {count} test{}", if count == 1 { "" } else { "s" });
    let mut ran = Vec::new();
    for (tenant, (file, vm)) in loaded {
        let vm = match vm {
            Ok(vm) => vm,
            Err(e) => {
                // A file that does not load fails as one test, named for the file.
                let r = Ran {
                    file: file.clone(),
                    name: "(loading the file)".into(),
                    failure: Some(e),
                    time: Duration::ZERO,
                };
                outln!("test {} :: {} ... FAILED", r.file, r.name);
                ran.push(r);
                continue;
            }
        };
        if vm.tests.is_empty() {
            errln!("note: {file} declares no test (call test(name, fn))");
        }
        for (name, f) in &vm.tests {
            if !selected(&file, name) {
                continue;
            }
            let label = format!("{file} :: {name}");
            let started = Instant::now();
            let failure = match world::World::new(shared.clone(), tenant, seed(&file, name)) {
                // The world ends here, before the next test's is made.
                Ok(w) => {
                    let w = Arc::new(w);
                    vm.run(f, &w).err().map(|e| e + &warnings(&w))
                }
                Err(e) => Some(format!("cannot make the test's world: {e}")),
            };
            outln!(
                "test {label} ... {}",
                if failure.is_some() { "FAILED" } else { "ok" }
            );
            ran.push(Ran {
                file: file.clone(),
                name: name.clone(),
                failure,
                time: started.elapsed(),
            });
        }
    }
    ran
}
