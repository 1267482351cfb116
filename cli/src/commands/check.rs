//! `native check`: validate configs, compile every script and module, and lint them
//! ([`lints`]); with the project's `.native/` state, find pending work that names a script
//! that is gone ([`pending`]); and type-check every script and module with Luau's analyzer
//! ([`types`]). Each finding is `path:line:col: error|warning: message`; errors exit 2. Each
//! kind of check is a module of its own that [`tenant`] and [`run`] call.

mod types;

mod lex;
pub mod lints;
mod pending;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use native_core::engine::{compile, compile_module};
use native_core::local::Project;
use native_core::tenants::DirTenants;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};
use lints::{Diagnostic, Severity};

pub async fn run(project: &Path) -> Outcome {
    let p = open(project)?;
    let names = DirTenants::new(&p.root).names()?;
    if names.is_empty() {
        return Err(Failed::usage(format!(
            "{} has no tenants: add tenants/<tenant>/config.json",
            p.root.display()
        )));
    }
    let api = api(&p)?;
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let (mut scripts, mut modules) = (0, 0);
    let (mut uncompiled, mut linted) = (BTreeSet::new(), BTreeSet::new());
    for name in &names {
        let found = tenant_with(&p, name, &api).await;
        scripts += found.scripts;
        modules += found.modules;
        errors.extend(found.errors);
        warnings.extend(found.warnings);
        uncompiled.extend(found.uncompiled);
        linted.extend(found.linted);
    }
    // The type check's findings are shown beside the lints', but not where they would say
    // again what is said already: a file that does not compile has said so above (Luau's
    // parse errors would repeat it), and a line with a lint error (`native.db.gett`) would
    // be named again as a missing key.
    match types::check(&p.root, &names) {
        Ok(found) => {
            for f in found {
                if uncompiled.contains(&f.path) || linted.contains(&(f.path.clone(), f.line)) {
                    continue;
                }
                match f.severity {
                    types::Severity::Error => errors.push(f.text),
                    types::Severity::Warning => warnings.push(f.text),
                }
            }
        }
        Err(why) => errors.push(format!("type check: {why}")),
    }
    for w in &warnings {
        errln!("{w}");
    }
    let warned = match warnings.len() {
        0 => String::new(),
        n => format!(", {n} warning(s)"),
    };
    if errors.is_empty() {
        outln!(
            "ok: {} tenant(s), {scripts} script(s), {modules} module(s){warned}",
            names.len()
        );
        Ok(())
    } else {
        Err(Failed::usage(format!(
            "{}\n{} error(s){warned}",
            errors.join("\n"),
            errors.len()
        )))
    }
}

/// Every name a script of this project's deployment reaches.
fn api(p: &Project) -> Result<BTreeMap<String, bool>, Failed> {
    native_core::engine::names::reachable(&p.deployment)
        .map_err(|e| Failed::usage(format!("cannot make a script VM to check against: {e}")))
}

/// What checking one tenant found.
#[derive(Debug, Default)]
pub struct Found {
    /// How many scripts it has.
    pub scripts: usize,
    /// How many modules.
    pub modules: usize,
    /// What fails it, one line each.
    pub errors: Vec<String>,
    /// What is shown and does not fail it.
    pub warnings: Vec<String>,
    /// The files (project-relative) that do not compile.
    pub uncompiled: Vec<String>,
    /// The lines (file, line) that a lint says are wrong.
    pub linted: Vec<(String, usize)>,
}

/// Checks one tenant: its config, that every script and module compiles, the lints, and the
/// pending work in `.native/`. `native deploy` refuses a tenant with errors.
pub async fn tenant(p: &Project, name: &str) -> Result<Found, Failed> {
    Ok(tenant_with(p, name, &api(p)?).await)
}

async fn tenant_with(p: &Project, name: &str, api: &BTreeMap<String, bool>) -> Found {
    let mut found = Found::default();
    let t = match DirTenants::new(&p.root).read(name) {
        Ok(t) => t,
        Err(e) => {
            found
                .errors
                .push(crate::show::text(&e.to_string()).into_owned());
            return found;
        }
    };
    found.scripts = t.scripts.len();
    found.modules = t.modules.len();
    let compiled = t
        .scripts
        .values()
        .map(|s| (&s.name, compile(&s.name, &s.source)))
        .chain(
            t.modules
                .values()
                .map(|m| (&m.name, compile_module(&m.name, &m.source))),
        );
    for (file, e) in compiled.filter_map(|(file, r)| Some((file, r.err()?))) {
        found
            .errors
            .push(format!("tenants/{name}/scripts/{}", crate::show::text(&e)));
        found
            .uncompiled
            .push(format!("tenants/{name}/scripts/{file}.luau"));
    }
    // A tenant switched on for native.batch in a deployment that has no batch bucket would
    // fail at its first batch call: say so now.
    if t.config.batch && p.deployment.batch.is_none() {
        found.errors.push(format!(
            "tenants/{name}/config.json: batch: true needs a batch bucket, and deployment.json has \
             none; add \"batch\": {{ \"bucket\": \"...\" }} to deployment.json, or set \"batch\": false"
        ));
    }
    // A router named in config.json must exist: events would fail and be retried into the
    // dead letters. Without one named, scripts/router.luau or the built-in routing serves.
    if let Some(router) = &t.config.router {
        if !t.scripts.contains_key(router) {
            found.errors.push(format!(
                "tenants/{name}/config.json: router: there is no script {router:?} (scripts/{router}.luau); \
                 add it, or leave \"router\" out to use scripts/router.luau if present, else the \
                 built-in routing (batch jobs' done.json to their continuation, other events dropped)"
            ));
        }
    }
    let mut diagnostics = lints::tenant(&t, api);
    diagnostics.extend(pending::tenant(p, &t).await);
    for d in diagnostics {
        let line = crate::show::text(&d.to_string()).into_owned();
        match d.severity {
            Severity::Error => {
                found.linted.push((d.file.clone(), d.line));
                found.errors.push(line)
            }
            Severity::Warning => found.warnings.push(line),
        }
    }
    found
}

/// A diagnostic for the whole of a file.
fn at_file(file: String, severity: Severity, message: String) -> Diagnostic {
    Diagnostic {
        file,
        line: 1,
        col: 1,
        severity,
        message,
    }
}
