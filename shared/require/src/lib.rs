//! Luau's string `require` as native resolves it: the rules that the runtime
//! (native-core's `config::modules`, which evaluates what they find) and the type checker
//! (native-luau-check, for `native check`) share, so that the checker accepts what runs and
//! refuses what does not. Plain path logic, without dependencies.
//!
//! A path starts with `./` or `../` (relative to the requiring file's folder; in an
//! `init.luau`, relative to its folder's parent, as in Luau), `@self/` (the requiring
//! module's own folder) or `@alias/` (a `.luaurc` alias, relative to the tenant's folder). It
//! names a file without its `.luau`: `x` is `x.luau` or `x/init.luau`. Whatever the path, the
//! module found is a file in a subfolder of the tenant's own `scripts/`, never a script and
//! never outside it.

use std::collections::BTreeMap;

/// The longest path `require` is given that is looked at, in bytes.
pub const MAX_PATH_BYTES: usize = 512;

/// The file that calls `require`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirer<'a> {
    /// A script or module of the tenant, by its name (`main`, `lib/orders`).
    Script(&'a str),
    /// Another file of the tenant's folder, by its path there without `.luau`
    /// (`tests/orders.test`): a test file of `native test`, whose `./` is its own folder.
    File(&'a str),
}

/// A tenant's files, as `require` finds modules among them.
pub trait Files {
    /// What a module found is (the runtime's script, the checker's file path).
    type Module;
    /// The tenant's folder as messages show it: `tenants/acme`.
    fn dir(&self) -> &str;
    /// The aliases of the tenant folder's `.luaurc`: names lower-cased (Luau's aliases are
    /// case-insensitive) to paths relative to the tenant's folder.
    fn aliases(&self) -> &BTreeMap<String, String>;
    /// Whether `name` (without a `/`) is a script of `scripts/`.
    fn is_script(&self, name: &str) -> bool;
    /// The module of that name under `scripts/` (`lib/orders`, `lib/util/init`).
    fn module(&self, name: &str) -> Option<Self::Module>;
    /// What to say before the list of aliases when `alias` is none of them (a suggestion).
    fn alias_hint(&self, alias: &str) -> String {
        let _ = alias;
        String::new()
    }
    /// What to say after "there is no module ..." when `name` is none (a suggestion, the
    /// modules there are).
    fn module_hint(&self, name: &str) -> String {
        let _ = name;
        String::new()
    }
}

/// The folder parts of where a file's `./` points: a module `lib/orders` -> `lib`, a script
/// `main` -> the root, and an `init` module `lib/init` -> the root (its folder is the module).
fn base_of(from: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = from.split('/').collect();
    parts.pop();
    if from.ends_with("/init") || from == "init" {
        parts.pop();
    }
    parts
}

/// The module's own folder, for `@self`: `lib/init` -> `lib`, `lib/orders` -> `lib/orders`.
fn self_of(from: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = from.split('/').collect();
    if parts.last() == Some(&"init") {
        parts.pop();
    }
    parts
}

/// Walks `rest` (parts joined by `/`) from `at`; `None` when a `..` climbs above the start.
fn walk<'a>(mut at: Vec<&'a str>, rest: &'a str) -> Option<Vec<&'a str>> {
    for part in rest.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                at.pop()?;
            }
            p => at.push(p),
        }
    }
    Some(at)
}

/// The module that `path`, required from `from`, names among `files`; or why there is none,
/// as a sentence for the error that follows the requiring file and line. Paths are walked
/// from the tenant's folder as Luau walks them from the requiring file, and the module found
/// is a file under `scripts/`, whoever requires it.
pub fn resolve<F: Files + ?Sized>(
    files: &F,
    from: Requirer<'_>,
    path: &str,
) -> Result<F::Module, String> {
    if path.len() > MAX_PATH_BYTES {
        return Err(format!(
            "the path is {} bytes; a module path is at most {MAX_PATH_BYTES}",
            path.len()
        ));
    }
    let dir = files.dir();
    let scripts = format!("{dir}/scripts/");
    let leaves =
        || format!("the path leaves the tenant's scripts: a module is a file under {scripts}");
    if path.contains('\\') || path.contains('\0') {
        return Err("a module path uses '/' between its parts".into());
    }
    // Where `./` and `@self/` start, as parts of a path from the tenant's folder.
    let (base, own) = match from {
        Requirer::Script(name) => {
            let mut base = vec!["scripts"];
            base.extend(base_of(name));
            let mut own = vec!["scripts"];
            own.extend(self_of(name));
            (base, own)
        }
        Requirer::File(file) => (base_of(file), self_of(file)),
    };
    let from_tenant = if let Some(rest) = path.strip_prefix('@') {
        let (alias, rest) = rest.split_once('/').unwrap_or((rest, ""));
        let alias = alias.to_ascii_lowercase();
        if alias == "self" {
            walk(own, rest)
        } else {
            let aliases = files.aliases();
            let Some(target) = aliases.get(&alias) else {
                return Err(if aliases.is_empty() {
                    format!("there is no alias @{alias}: {dir}/.luaurc defines no \"aliases\"")
                } else {
                    format!(
                        "there is no alias @{alias} in {dir}/.luaurc; {}its aliases: {}",
                        files.alias_hint(&alias),
                        aliases
                            .keys()
                            .map(|a| format!("@{a}"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                });
            };
            // An alias is relative to the tenant's folder.
            walk(Vec::new(), target).and_then(|at| walk(at, rest))
        }
    } else if path.starts_with("./") || path.starts_with("../") {
        walk(base, path)
    } else {
        return Err(format!(
            "{path:?} is not a module path: start it with \"./\" or \"../\" (relative to this \
             file), \"@self/\" or \"@alias/\" (an alias of the tenant's .luaurc), as in Luau"
        ));
    };
    // Whatever the path, what it reaches must be in `scripts/`.
    let parts = match from_tenant.as_deref().and_then(<[&str]>::split_first) {
        Some((&"scripts", inside)) => inside.to_vec(),
        _ => return Err(leaves()),
    };
    if let Some(last) = parts
        .last()
        .filter(|l| l.ends_with(".luau") || l.ends_with(".lua"))
    {
        return Err(format!(
            "leave the extension out: a module path names {last:?} without it, as in Luau"
        ));
    }
    let name = parts.join("/");
    if name.is_empty() {
        return Err(format!("the path names {scripts} itself, not a module"));
    }
    if parts.len() == 1 && files.is_script(&name) {
        return Err(format!(
            "{scripts}{name}.luau is a script, not a module: put shared code in a subfolder \
             of scripts/, e.g. scripts/lib/{name}.luau"
        ));
    }
    // A module sits in a subfolder of `scripts/`.
    let module = |n: &str| n.contains('/').then(|| files.module(n)).flatten();
    match (module(&name), module(&format!("{name}/init"))) {
        (Some(m), None) | (None, Some(m)) => Ok(m),
        (Some(_), Some(_)) => Err(format!(
            "both {scripts}{name}.luau and {scripts}{name}/init.luau exist; remove one"
        )),
        (None, None) => {
            let hint = files.module_hint(&name);
            Err(format!(
                "there is no module {scripts}{name}.luau (nor {name}/init.luau){}{hint}",
                if hint.is_empty() { "" } else { "; " }
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tenant `tenants/acme` of names only.
    struct Names {
        dir: String,
        scripts: Vec<&'static str>,
        modules: Vec<&'static str>,
        aliases: BTreeMap<String, String>,
    }

    impl Files for Names {
        type Module = String;
        fn dir(&self) -> &str {
            &self.dir
        }
        fn aliases(&self) -> &BTreeMap<String, String> {
            &self.aliases
        }
        fn is_script(&self, name: &str) -> bool {
            self.scripts.contains(&name)
        }
        fn module(&self, name: &str) -> Option<String> {
            self.modules
                .iter()
                .find(|m| **m == name)
                .map(|m| m.to_string())
        }
    }

    fn acme() -> Names {
        Names {
            dir: "tenants/acme".into(),
            scripts: vec!["main"],
            modules: vec![
                "lib/orders",
                "lib/util/init",
                "lib/util/fmt",
                "lib/a",
                "lib/a/init",
            ],
            aliases: [("lib".to_string(), "./scripts/lib".to_string())].into(),
        }
    }

    #[test]
    fn a_module_is_one_file_in_a_subfolder_of_scripts() {
        let t = acme();
        let found = |from: &str, path: &str| resolve(&t, Requirer::Script(from), path);
        assert_eq!(found("main", "./lib/util").as_deref(), Ok("lib/util/init"));
        assert_eq!(found("main", "@lib/orders").as_deref(), Ok("lib/orders"));
        // Out of scripts/ and back, as Luau walks it.
        assert_eq!(
            found("lib/orders", "../../scripts/lib/orders").as_deref(),
            Ok("lib/orders")
        );
        let e = found("main", "./lib/a").unwrap_err();
        assert!(
            e.starts_with("both tenants/acme/scripts/lib/a.luau and"),
            "{e}"
        );
        let e = found("main", "./lib/nope").unwrap_err();
        assert_eq!(
            e,
            "there is no module tenants/acme/scripts/lib/nope.luau (nor lib/nope/init.luau)"
        );
        let e = found("main", "../../other/scripts/lib/orders").unwrap_err();
        assert!(e.starts_with("the path leaves"), "{e}");
        let e = found("main", &"a/".repeat(300)).unwrap_err();
        assert!(e.contains("at most 512"), "{e}");
    }
}
