//! `native check`: validate configs and compile every script.

use std::path::Path;

use native_core::engine::compile;
use native_core::tenants::DirTenants;

use super::{open, Failed, Outcome};

pub fn run(project: &Path) -> Outcome {
    let p = open(project)?;
    let tenants = DirTenants::new(&p.root);
    let names = tenants.names()?;
    if names.is_empty() {
        return Err(Failed::usage(format!(
            "{} has no tenants: add tenants/<tenant>/config.json",
            p.root.display()
        )));
    }
    let mut errors = Vec::new();
    let mut scripts = 0;
    for name in &names {
        let t = match tenants.read(name) {
            Ok(t) => t,
            Err(e) => {
                errors.push(e.to_string());
                continue;
            }
        };
        for s in t.scripts.values() {
            scripts += 1;
            if let Err(e) = compile(&s.name, &s.source) {
                errors.push(format!("tenants/{name}/scripts/{e}"));
            }
        }
        if !t.scripts.contains_key(&t.config.router) && !p.deployment.buckets.map.is_empty() {
            eprintln!(
                "warning: tenants/{name}: no router script {:?}; object events for this tenant will fail until scripts/{}.luau exists",
                t.config.router, t.config.router
            );
        }
    }
    if errors.is_empty() {
        println!("ok: {} tenant(s), {scripts} script(s)", names.len());
        Ok(())
    } else {
        Err(Failed::usage(errors.join("\n")))
    }
}
