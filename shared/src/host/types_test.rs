//! Checks `native.d.luau` against the host API itself: every function of the real `native`
//! table of a VM (bucket functions included) and every method of a batch job is declared, and
//! everything declared exists. The file is ours and kept regular (one function a line, tables
//! opened by `name: {` and closed by `},`), so a line reader suffices.

use std::collections::BTreeSet;

use mlua::{Table, Value};

use crate::config::{Deployment, Tenant, TenantConfig};
use crate::engine::Vm;

const TYPES: &str = include_str!("native.d.luau");

/// What the type definitions declare: `native.<...>` function paths (bucket functions as
/// `native.bucket.<Name>.<fn>`), and methods as `job:<name>` / `barrier:<name>`.
fn declared() -> BTreeSet<String> {
    // A function is `name: (` at the start of a line; a table opens with `name: {` or
    // `type Name = {` / `declare native: {` and closes with `}` or `},`.
    let mut out = BTreeSet::new();
    let mut stack: Vec<String> = Vec::new();
    for line in TYPES.lines() {
        let line = line.trim();
        if line.starts_with("--") || line.is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("declare ") {
            stack = vec![rest.split(':').next().unwrap_or("").trim().to_string()];
            continue;
        }
        if let Some(rest) = line
            .strip_prefix("type ")
            .or(line.strip_prefix("export type "))
        {
            if line.ends_with('{') {
                stack = vec![rest.split('=').next().unwrap_or("").trim().to_string()];
            }
            continue;
        }
        if line == "}" || line == "}," {
            stack.pop();
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let rest = rest.trim();
        if rest == "{" {
            stack.push(name.to_string());
        } else if rest.starts_with('(') && !stack.is_empty() {
            let owner = stack.join(".");
            let path = match owner.as_str() {
                "Bucket" => format!("native.bucket.<Name>.{name}"),
                "BatchJob" | "BatchResult" => format!("job:{name}"),
                "BarrierResult" => format!("barrier:{name}"),
                o if o == "native" || o.starts_with("native.") => format!("{o}.{name}"),
                _ => continue,
            };
            out.insert(path);
        }
    }
    out
}

/// Every function reachable from `t`, by path; the tables of buckets are one `<Name>`.
fn walk(t: &Table, path: &str, buckets: &BTreeSet<String>, out: &mut BTreeSet<String>) {
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.unwrap();
        let Value::String(k) = k else { continue };
        let k = k.to_string_lossy();
        let k = if path == "native.bucket" && buckets.contains(&k) {
            "<Name>".to_string()
        } else {
            k
        };
        let p = format!("{path}.{k}");
        match v {
            Value::Function(_) => {
                out.insert(p);
            }
            Value::Table(inner) if path != "native.config" && p != "native.config" => {
                walk(&inner, &p, buckets, out)
            }
            _ => {}
        }
    }
}

#[test]
fn every_host_function_is_declared_and_every_declared_function_exists() {
    // GIVEN a VM of a tenant with two buckets, and the job types registered
    let deployment = Deployment::from_json(
        "deployment.json",
        r#"{ "buckets": { "map": { "In": "b-in", "Out": "b-out" } },
             "batch": { "bucket": "b-batch" } }"#,
    )
    .unwrap();
    let tenant = Tenant::new("t", TenantConfig::default(), vec![]).unwrap();
    let vm = Vm::new(&tenant, &deployment).unwrap();
    super::batch::register_types(&vm.lua).unwrap();
    // WHEN its native table is walked and the registered methods are listed
    let buckets: BTreeSet<String> = deployment.buckets.map.keys().cloned().collect();
    let mut real = BTreeSet::new();
    let native: Table = vm.globals.raw_get("native").unwrap();
    walk(&native, "native", &buckets, &mut real);
    assert!(real.contains("native.bucket.<Name>.get"), "{real:?}");
    real.extend(
        super::function::registered_methods()
            .into_iter()
            .map(String::from),
    );
    // The barrier result's iterators exist only on a hydrated barrier: named here.
    real.extend([
        "barrier:results".into(),
        "barrier:failures".into(),
        "barrier:pending_members".into(),
    ]);
    // THEN both lists are the same
    let declared = declared();
    let undeclared: Vec<_> = real.difference(&declared).collect();
    let missing: Vec<_> = declared.difference(&real).collect();
    assert!(
        undeclared.is_empty() && missing.is_empty(),
        "not declared in native.d.luau: {undeclared:?}\ndeclared but not in the host API: {missing:?}"
    );
    assert!(declared.contains("job:rows") && declared.contains("native.batch.new"));
}

#[test]
fn every_declared_function_has_a_line_of_documentation_for_editors() {
    // GIVEN native.d.luau, WHEN each function's line is looked at, THEN the line above it is a
    // `---` comment (what luau-lsp shows on hover)
    let lines: Vec<&str> = TYPES.lines().map(str::trim).collect();
    let undocumented: Vec<&str> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| {
            l.split_once(':').is_some_and(|(name, rest)| {
                name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                    && rest.trim_start().starts_with('(')
            })
        })
        .filter(|(i, _)| !lines[i - 1].starts_with("--- "))
        .map(|(_, l)| *l)
        .collect();
    assert!(
        undocumented.is_empty(),
        "no `---` line above: {undocumented:#?}"
    );
}
