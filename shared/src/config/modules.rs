//! Modules: the `.luau` files in subfolders of a tenant's `scripts/`, which scripts and other
//! modules `require` with Luau's string-require semantics, and the `.luaurc` aliases of the
//! tenant's folder. Plain data and path logic: the engine evaluates what [`Tenant::resolve`]
//! finds.
//!
//! A path starts with `./` or `../` (relative to the requiring file's folder; in an
//! `init.luau`, relative to its folder's parent, as in Luau), `@self/` (the requiring
//! module's own folder) or `@alias/` (a `.luaurc` alias, relative to the tenant's folder). It
//! names a file without its `.luau`: `x` is `x.luau` or `x/init.luau`. Whatever the path, the
//! module found is a file under the tenant's own `scripts/`, never outside it.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Script, Tenant};
use crate::keys::check_name;
use crate::Error;

/// The most modules a tenant may have.
pub const MAX_MODULES: usize = 2000;

/// The deepest a module may sit under `scripts/`, in folders.
pub const MAX_DEPTH: usize = 8;

/// The longest name a module may have (`lib/orders`), in bytes: Luau names a chunk's file in
/// error messages and debug information with at most 256 bytes, and `require` finds the
/// requiring file by that name.
pub const MAX_NAME_BYTES: usize = 200;

/// The longest path `require` is given that is looked at, in bytes.
const MAX_PATH_BYTES: usize = 512;

/// The name of a module from its file's path under `scripts/` (`lib/orders.luau` ->
/// `lib/orders`), checking each part: folders and the file are named like scripts, and a
/// module is at most [`MAX_DEPTH`] folders deep. `None` for a file that is not `.luau`.
pub fn module_name(rel: &str) -> Option<Result<String, String>> {
    let name = rel.strip_suffix(".luau")?;
    let parts: Vec<&str> = name.split('/').collect();
    if parts.len() > MAX_DEPTH + 1 {
        return Some(Err(format!(
            "is {} folders deep under scripts/; a module may be at most {MAX_DEPTH} deep",
            parts.len() - 1
        )));
    }
    for part in &parts {
        if let Err(why) = check_name("module or folder", part) {
            return Some(Err(why));
        }
    }
    if name.len() > MAX_NAME_BYTES {
        return Some(Err(format!(
            "a module's path under scripts/ is at most {MAX_NAME_BYTES} bytes; this one is {}",
            name.len()
        )));
    }
    Some(Ok(name.to_string()))
}

/// What a tenant's `.luaurc` says that native uses: its aliases. Other fields (the language
/// mode, lints, globals) are for the type checker and editors and are left alone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Luaurc {
    /// Alias names, lower-cased (Luau's aliases are case-insensitive), to their paths as
    /// written, relative to the tenant's folder.
    pub aliases: BTreeMap<String, String>,
}

impl Luaurc {
    /// Parses a `.luaurc`; `file` names it in errors. Luau reads it as JSON that may have `//`
    /// comments and trailing commas; so does this.
    pub fn from_json(file: &str, text: &str) -> Result<Self, Error> {
        let clean = strip_comments(text);
        let value: serde_json::Value =
            serde_json::from_str(&clean).map_err(|e| Error::config(file, "-", e))?;
        let mut out = Luaurc::default();
        let Some(aliases) = value.get("aliases") else {
            return Ok(out);
        };
        let aliases = aliases
            .as_object()
            .ok_or_else(|| Error::config(file, "aliases", "must be an object of name: path"))?;
        for (name, path) in aliases {
            let field = format!("aliases.{name}");
            check_name("alias", name).map_err(|why| Error::config(file, &field, why))?;
            let path = path
                .as_str()
                .ok_or_else(|| Error::config(file, &field, "must be a path (a string)"))?;
            if path.starts_with('/') || path.contains('\\') || path.contains(':') {
                return Err(Error::config(
                    file,
                    &field,
                    format!(
                        "{path:?} is not a relative path; write it relative to the tenant's folder, e.g. \"./scripts/lib\""
                    ),
                ));
            }
            if out
                .aliases
                .insert(name.to_ascii_lowercase(), path.to_string())
                .is_some()
            {
                return Err(Error::config(
                    file,
                    &field,
                    "is given twice (aliases are case-insensitive)",
                ));
            }
        }
        Ok(out)
    }
}

/// `text` with `//` comments and commas before `}` or `]` removed, strings left alone.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                out.extend(chars.next());
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '/' if chars.peek() == Some(&'/') => {
                for c in chars.by_ref() {
                    if c == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            '}' | ']' => {
                let kept = out.trim_end().len();
                if out[..kept].ends_with(',') {
                    out.truncate(kept - 1);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
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

/// Walks `rest` (parts joined by `/`) from `base`; `None` when a `..` climbs above the start.
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

/// The file that calls `require`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Requirer<'a> {
    /// A script or module of the tenant, by its name (`main`, `lib/orders`).
    Script(&'a str),
    /// Another file of the tenant's folder, by its path there without `.luau`
    /// (`tests/orders.test`): a test file of `native test`, whose `./` is its own folder.
    File(&'a str),
}

impl Tenant {
    /// The module that `path`, required from the script or module `from` (its name: `main`,
    /// `lib/orders`), names; or why there is none, as a sentence for the error that the
    /// engine puts after the requiring file and line.
    pub fn resolve(&self, from: &str, path: &str) -> Result<&Arc<Script>, String> {
        self.resolve_from(Requirer::Script(from), path)
    }

    /// As [`Tenant::resolve`], from any file of the tenant's folder: paths are walked from
    /// the tenant's folder as Luau walks them from the requiring file, and the module found
    /// is a file under `scripts/`, whoever requires it.
    pub fn resolve_from(&self, from: Requirer<'_>, path: &str) -> Result<&Arc<Script>, String> {
        if path.len() > MAX_PATH_BYTES {
            return Err(format!(
                "the path is {} bytes; a module path is at most {MAX_PATH_BYTES}",
                path.len()
            ));
        }
        let scripts = format!("tenants/{}/scripts/", self.name);
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
        let from_tenant = if let Some(rest) = path.strip_prefix("@") {
            let (alias, rest) = rest.split_once('/').unwrap_or((rest, ""));
            let alias = alias.to_ascii_lowercase();
            if alias == "self" {
                walk(own, rest)
            } else {
                let Some(target) = self.aliases.get(&alias) else {
                    return Err(if self.aliases.is_empty() {
                        format!(
                            "there is no alias @{alias}: tenants/{}/.luaurc defines no \"aliases\"",
                            self.name
                        )
                    } else {
                        format!(
                            "there is no alias @{alias} in tenants/{}/.luaurc; {}its aliases: {}",
                            self.name,
                            crate::text::suggest::did_you_mean(
                                &alias,
                                self.aliases.keys().map(String::as_str)
                            ),
                            self.aliases
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
        if parts.len() == 1 && self.scripts.contains_key(&name) {
            return Err(format!(
                "{scripts}{name}.luau is a script, not a module: put shared code in a subfolder \
                 of scripts/, e.g. scripts/lib/{name}.luau"
            ));
        }
        let file = self.modules.get(&name);
        let init = self.modules.get(&format!("{name}/init"));
        match (file, init) {
            (Some(m), None) | (None, Some(m)) => Ok(m),
            (Some(_), Some(_)) => Err(format!(
                "both {scripts}{name}.luau and {scripts}{name}/init.luau exist; remove one"
            )),
            (None, None) => Err(format!(
                "there is no module {scripts}{name}.luau (nor {name}/init.luau); {}{}",
                crate::text::suggest::did_you_mean(&name, self.modules.keys().map(String::as_str)),
                if self.modules.is_empty() {
                    "the tenant has no modules: a module is a .luau file in a subfolder of scripts/"
                        .to_string()
                } else {
                    format!(
                        "the tenant's modules: {}",
                        self.modules.keys().cloned().collect::<Vec<_>>().join(", ")
                    )
                }
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TenantConfig;

    fn tenant(aliases: &[(&str, &str)]) -> Tenant {
        let modules = ["lib/orders", "lib/util/init", "lib/util/fmt", "deep/a/b"]
            .map(|n| Script::module(n, "return {}"))
            .to_vec();
        Tenant::with_modules(
            "acme",
            TenantConfig::default(),
            vec![Script::new("main", "")],
            modules,
            Luaurc {
                aliases: aliases
                    .iter()
                    .map(|(a, p)| (a.to_string(), p.to_string()))
                    .collect(),
            },
        )
        .unwrap()
    }

    #[test]
    fn paths_resolve_as_in_luau() {
        // GIVEN a tenant with modules in subfolders and an alias @lib
        let t = tenant(&[("lib", "./scripts/lib")]);
        let found = |from: &str, path: &str| t.resolve(from, path).map(|m| m.name.clone());
        // THEN ./ is relative to the requiring file's folder, ../ climbs, an init.luau is its
        // folder's module and resolves ./ from the folder's parent, @self from the folder
        for (from, path, want) in [
            ("main", "./lib/orders", "lib/orders"),
            ("lib/orders", "./util", "lib/util/init"),
            ("lib/util/fmt", "../orders", "lib/orders"),
            ("lib/util/init", "./orders", "lib/orders"),
            ("lib/util/init", "@self/fmt", "lib/util/fmt"),
            ("deep/a/b", "../../lib/./orders", "lib/orders"),
            ("main", "@lib/orders", "lib/orders"),
            ("main", "@LIB/util", "lib/util/init"),
        ] {
            assert_eq!(found(from, path).as_deref(), Ok(want), "{from} {path}");
        }
    }

    #[test]
    fn paths_that_fail_say_why() {
        let t = tenant(&[("lib", "./scripts/lib"), ("up", "../other/scripts")]);
        let why = |from: &str, path: &str| t.resolve(from, path).unwrap_err();
        assert!(why("main", "../x").starts_with("the path leaves the tenant's scripts"));
        assert!(why("lib/orders", "../../other/scripts/x").starts_with("the path leaves"));
        assert!(why("main", "@up/x").starts_with("the path leaves"));
        assert!(why("main", "@lib/../../config").starts_with("the path leaves"));
        assert!(why("main", "lib/orders").contains("is not a module path"));
        assert!(why("main", "./lib/orders.luau").starts_with("leave the extension out"));
        assert!(why("main", "./main").contains("scripts/main.luau is a script, not a module"));
        assert!(
            why("main", "@nope/x").contains("no alias @nope"),
            "{}",
            why("main", "@nope/x")
        );
        let e = why("main", "./lib/order");
        assert!(
            e.starts_with("there is no module tenants/acme/scripts/lib/order.luau")
                && e.contains("did you mean \"lib/orders\"")
                && e.contains("the tenant's modules: deep/a/b, lib/orders"),
            "{e}"
        );
    }

    #[test]
    fn a_file_outside_scripts_requires_from_its_own_folder() {
        // GIVEN a tenant with an alias @lib, and a test file tests/unit/orders.test.luau
        let t = tenant(&[("lib", "./scripts/lib")]);
        let file = Requirer::File("tests/unit/orders.test");
        let found = |path: &str| t.resolve_from(file, path).map(|m| m.name.clone());
        // THEN ./ is the file's own folder, and the tenant's .luaurc aliases work as in scripts
        assert_eq!(
            found("../../scripts/lib/orders").as_deref(),
            Ok("lib/orders")
        );
        assert_eq!(found("@lib/util").as_deref(), Ok("lib/util/init"));
        // AND a path that does not reach a module under scripts/ says so
        for path in ["./helpers", "../../../other/scripts/x", "../../config"] {
            let e = found(path).unwrap_err();
            assert!(
                e.starts_with("the path leaves the tenant's scripts"),
                "{path}: {e}"
            );
        }
        let e = found("../../scripts/main").unwrap_err();
        assert!(
            e.contains("scripts/main.luau is a script, not a module"),
            "{e}"
        );
        // AND a script may reach a module by climbing out of scripts/ and back, as in Luau
        assert_eq!(
            t.resolve("main", "../scripts/lib/orders")
                .map(|m| m.name.as_str()),
            Ok("lib/orders")
        );
    }

    #[test]
    fn module_files_are_named_and_checked() {
        assert_eq!(module_name("lib/a.luau"), Some(Ok("lib/a".into())));
        assert_eq!(module_name("lib/a.txt"), None);
        assert!(module_name("lib/a b.luau").unwrap().is_err());
        let deep = format!("{}x.luau", "d/".repeat(MAX_DEPTH + 1));
        assert!(module_name(&deep)
            .unwrap()
            .unwrap_err()
            .contains("at most 8 deep"));
    }

    #[test]
    fn luaurc_aliases_with_comments_and_trailing_commas() {
        let rc = Luaurc::from_json(
            ".luaurc",
            "{ // editors\n \"languageMode\": \"strict\",\n \"aliases\": { \"Lib\": \"./scripts/lib\", },\n}",
        )
        .unwrap();
        assert_eq!(rc.aliases["lib"], "./scripts/lib");
        let e = Luaurc::from_json("t/.luaurc", r#"{"aliases": {"x": "/etc"}}"#).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("t/.luaurc: aliases.x: \"/etc\" is not a relative path"),
            "{e}"
        );
        let e = Luaurc::from_json("t/.luaurc", r#"{"aliases": {"a": "x", "A": "y"}}"#).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
    }
}
