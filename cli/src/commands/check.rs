//! `native check`: validate configs, compile every script, and type-check every script and
//! module ([`types`]).

mod types;

use std::path::Path;

use native_core::engine::compile;
use native_core::local::Project;
use native_core::tenants::DirTenants;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};

pub fn run(project: &Path) -> Outcome {
    let p = open(project)?;
    let names = DirTenants::new(&p.root).names()?;
    if names.is_empty() {
        return Err(Failed::usage(format!(
            "{} has no tenants: add tenants/<tenant>/config.json",
            p.root.display()
        )));
    }
    let mut errors = Vec::new();
    let mut scripts = 0;
    for name in &names {
        match tenant(&p, name) {
            Ok(n) => scripts += n,
            Err(mut e) => errors.append(&mut e),
        }
    }
    // A script that does not compile has said so above; Luau's parse errors for it would
    // only repeat that.
    let broken: Vec<String> = errors
        .iter()
        .filter_map(|e| {
            e.split_once(".luau:")
                .map(|(file, _)| format!("{file}.luau"))
        })
        .collect();
    let mut warnings = Vec::new();
    match types::check(&p.root, &names) {
        Ok(found) => {
            for f in found {
                if broken.contains(&f.path) {
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
        outln!("ok: {} tenant(s), {scripts} script(s){warned}", names.len());
        Ok(())
    } else {
        Err(Failed::usage(format!(
            "{}\n{} error(s){warned}",
            errors.join("\n"),
            errors.len()
        )))
    }
}

/// Checks one tenant: its config, and every script compiles. Returns how many scripts it has,
/// or every error found.
pub fn tenant(p: &Project, name: &str) -> Result<usize, Vec<String>> {
    let t = DirTenants::new(&p.root)
        .read(name)
        .map_err(|e| vec![crate::show::text(&e.to_string()).into_owned()])?;
    let mut errors: Vec<String> = t
        .scripts
        .values()
        .filter_map(|s| {
            compile(&s.name, &s.source)
                .err()
                .map(|e| format!("tenants/{name}/scripts/{}", crate::show::text(&e)))
        })
        .collect();
    // A tenant switched on for native.batch in a deployment that has no batch bucket would
    // fail at its first batch call: say so now.
    if t.config.batch && p.deployment.batch.is_none() {
        errors.push(format!(
            "tenants/{name}/config.json: batch: true needs a batch bucket, and deployment.json has \
             none; add \"batch\": {{ \"bucket\": \"...\" }} to deployment.json, or set \"batch\": false"
        ));
    }
    // A router named in config.json must exist: events would fail and be retried into the
    // dead letters. Without one named, scripts/router.luau or the built-in routing serves.
    if let Some(router) = &t.config.router {
        if !t.scripts.contains_key(router) {
            errors.push(format!(
                "tenants/{name}/config.json: router: there is no script {router:?} (scripts/{router}.luau); \
                 add it, or leave \"router\" out to use scripts/router.luau if present, else the \
                 built-in routing (batch jobs' done.json to their continuation, other events dropped)"
            ));
        }
    }
    if errors.is_empty() {
        Ok(t.scripts.len())
    } else {
        Err(errors)
    }
}
