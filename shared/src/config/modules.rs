//! Modules: the `.luau` files in subfolders of a tenant's `scripts/`, which scripts and other
//! modules `require` with Luau's string-require semantics, and the `.luaurc` aliases of the
//! tenant's folder. Plain data: what a `require` path names is found by [`native_require`]'s
//! rules (shared with the type checker, which says what a path may be), and the engine
//! evaluates what [`Tenant::resolve`] finds.

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

pub use native_require::Requirer;

/// A tenant's scripts and modules as [`native_require::resolve`] looks modules up in them.
struct Files<'a> {
    tenant: &'a Tenant,
    dir: String,
}

impl<'a> native_require::Files for Files<'a> {
    type Module = &'a Arc<Script>;

    fn dir(&self) -> &str {
        &self.dir
    }

    fn aliases(&self) -> &BTreeMap<String, String> {
        &self.tenant.aliases
    }

    fn is_script(&self, name: &str) -> bool {
        self.tenant.scripts.contains_key(name)
    }

    fn module(&self, name: &str) -> Option<&'a Arc<Script>> {
        self.tenant.modules.get(name)
    }

    fn alias_hint(&self, alias: &str) -> String {
        crate::text::suggest::did_you_mean(alias, self.tenant.aliases.keys().map(String::as_str))
    }

    fn module_hint(&self, name: &str) -> String {
        let modules = &self.tenant.modules;
        format!(
            "{}{}",
            crate::text::suggest::did_you_mean(name, modules.keys().map(String::as_str)),
            if modules.is_empty() {
                "the tenant has no modules: a module is a .luau file in a subfolder of scripts/"
                    .to_string()
            } else {
                format!(
                    "the tenant's modules: {}",
                    modules.keys().cloned().collect::<Vec<_>>().join(", ")
                )
            }
        )
    }
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
    /// is a file under `scripts/`, whoever requires it ([`native_require::resolve`], the
    /// rules the type checker shares).
    pub fn resolve_from(&self, from: Requirer<'_>, path: &str) -> Result<&Arc<Script>, String> {
        let files = Files {
            tenant: self,
            dir: format!("tenants/{}", self.name),
        };
        native_require::resolve(&files, from, path)
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
