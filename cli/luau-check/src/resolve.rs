//! What the checker reads around the sources: each file's mode from the `.luaurc` files of its
//! folders, and `require` resolved with the runtime's rules (shared/src/config/modules.rs).
//!
//! A path starts with `./` or `../` (relative to the requiring file's folder; in an
//! `init.luau`, to its folder's parent), `@self/` (the requiring module's own folder) or
//! `@alias/` (an alias of the tenant folder's `.luaurc`, relative to that folder). It names a
//! file without its `.luau`: `x` is `x.luau` or `x/init.luau`. The module found is a file in a
//! subfolder of the same tenant's `scripts/`, never a script and never outside it.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::ffi::{parse_config, Mode};
use crate::{Diagnostic, Severity, TenantFiles};

/// The longest `require` path looked at, in bytes.
const MAX_PATH_BYTES: usize = 512;

/// What a tenant's `.luaurc` says that `require` uses: its aliases.
#[derive(Debug, Clone, Default)]
pub struct Luaurc {
    /// Alias names, lower-cased (Luau's aliases are case-insensitive), to their paths,
    /// relative to the tenant's folder.
    pub aliases: BTreeMap<String, String>,
}

/// The mode of each folder, from the `.luaurc` files from the project root down (each over
/// the one above, as Luau reads them), read once each.
pub struct Modes {
    root: PathBuf,
    /// Project-relative folder ("" for the root) to its mode and aliases.
    folders: HashMap<String, (Mode, Vec<(String, String)>)>,
}

impl Modes {
    /// Reads nothing yet.
    pub fn new(root: &Path) -> Modes {
        Modes {
            root: root.to_path_buf(),
            folders: HashMap::new(),
        }
    }

    /// The mode and aliases of folder `dir` (project-relative, "" for the root).
    fn folder(
        &mut self,
        dir: &str,
        sink: &mut dyn FnMut(Diagnostic),
    ) -> (Mode, Vec<(String, String)>) {
        if let Some(f) = self.folders.get(dir) {
            return f.clone();
        }
        let above = match dir.rsplit_once('/') {
            Some((parent, _)) => self.folder(parent, sink).0,
            None if dir.is_empty() => Mode::Nonstrict,
            None => self.folder("", sink).0,
        };
        let rel = if dir.is_empty() {
            ".luaurc".to_string()
        } else {
            format!("{dir}/.luaurc")
        };
        let here = match std::fs::read_to_string(self.root.join(&rel)) {
            Err(_) => (above, Vec::new()),
            Ok(text) => match parse_config(&text, above) {
                Ok(p) => (p.mode, p.aliases),
                Err(why) => {
                    sink(Diagnostic {
                        path: rel,
                        line: 1,
                        col: 1,
                        severity: Severity::Error,
                        message: format!("Luau cannot read this .luaurc: {why}"),
                    });
                    (above, Vec::new())
                }
            },
        };
        self.folders.insert(dir.to_string(), here.clone());
        here
    }

    /// The mode a file gets from its folders' `.luaurc` files.
    pub fn mode_of(&mut self, path: &str, sink: &mut dyn FnMut(Diagnostic)) -> Mode {
        let dir = path.rsplit_once('/').map_or("", |(d, _)| d);
        self.folder(dir, sink).0
    }

    /// The aliases of the tenant folder's `.luaurc` (`dir` is `tenants/<name>`).
    pub fn tenant_luaurc(&mut self, dir: &str, sink: &mut dyn FnMut(Diagnostic)) -> Luaurc {
        let aliases = self.folder(dir, sink).1;
        Luaurc {
            aliases: aliases
                .into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect(),
        }
    }
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

/// The project-relative file of the module that `path`, required from the file `from`,
/// names; or why there is none.
pub fn resolve(tenants: &[TenantFiles], from: &str, path: &str) -> Result<String, String> {
    let Some(t) = tenants
        .iter()
        .find(|t| from.starts_with(&format!("{}/scripts/", t.dir)))
    else {
        return Err(format!("{from} is no tenant's script"));
    };
    let scripts = format!("{}/scripts/", t.dir);
    let me = from
        .strip_prefix(&scripts)
        .and_then(|n| n.strip_suffix(".luau"))
        .unwrap_or_default();
    if path.len() > MAX_PATH_BYTES {
        return Err(format!(
            "the path is {} bytes; a module path is at most {MAX_PATH_BYTES}",
            path.len()
        ));
    }
    if path.contains('\\') || path.contains('\0') {
        return Err("a module path uses '/' between its parts".into());
    }
    let leaves =
        || format!("the path leaves the tenant's scripts: a module is a file under {scripts}");
    let mut folder: Vec<&str> = me.split('/').collect();
    let is_init = folder.last() == Some(&"init");
    let parts = if let Some(rest) = path.strip_prefix('@') {
        let (alias, rest) = rest.split_once('/').unwrap_or((rest, ""));
        let alias = alias.to_ascii_lowercase();
        if alias == "self" {
            if is_init {
                folder.pop();
            }
            walk(folder, rest).ok_or_else(leaves)?
        } else {
            let Some(target) = t.luaurc.aliases.get(&alias) else {
                let known: Vec<String> = t.luaurc.aliases.keys().map(|a| format!("@{a}")).collect();
                return Err(if known.is_empty() {
                    format!(
                        "there is no alias @{alias}: {}/.luaurc defines no \"aliases\"",
                        t.dir
                    )
                } else {
                    format!(
                        "there is no alias @{alias} in {}/.luaurc; its aliases: {}",
                        t.dir,
                        known.join(", ")
                    )
                });
            };
            let from_tenant = walk(Vec::new(), target)
                .and_then(|at| walk(at, rest))
                .ok_or_else(leaves)?;
            match from_tenant.split_first() {
                Some((&"scripts", inside)) => inside.to_vec(),
                _ => return Err(leaves()),
            }
        }
    } else if path.starts_with("./") || path.starts_with("../") {
        folder.pop();
        if is_init {
            folder.pop();
        }
        walk(folder, path).ok_or_else(leaves)?
    } else {
        return Err(format!(
            "{path:?} is not a module path: start it with \"./\" or \"../\" (relative to this \
             file), \"@self/\" or \"@alias/\" (an alias of the tenant's .luaurc), as in Luau"
        ));
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
    if parts.len() == 1 && t.files.contains_key(&name) {
        return Err(format!(
            "{scripts}{name}.luau is a script, not a module: put shared code in a subfolder \
             of scripts/, e.g. scripts/lib/{name}.luau"
        ));
    }
    let module = |n: &str| t.files.get(n).filter(|_| n.contains('/'));
    match (module(&name), module(&format!("{name}/init"))) {
        (Some(m), None) | (None, Some(m)) => Ok(m.clone()),
        (Some(_), Some(_)) => Err(format!(
            "both {scripts}{name}.luau and {scripts}{name}/init.luau exist; remove one"
        )),
        (None, None) => Err(format!(
            "there is no module {scripts}{name}.luau (nor {name}/init.luau)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tenants() -> Vec<TenantFiles> {
        let files = ["main", "lib/orders", "lib/util/init", "lib/util/fmt"]
            .iter()
            .map(|n| (n.to_string(), format!("tenants/acme/scripts/{n}.luau")))
            .collect();
        let other = [(
            "lib/secret".to_string(),
            "tenants/evil/scripts/lib/secret.luau".to_string(),
        )]
        .into_iter()
        .collect();
        vec![
            TenantFiles {
                dir: "tenants/acme".into(),
                files,
                luaurc: Luaurc {
                    aliases: [
                        ("lib".to_string(), "./scripts/lib".to_string()),
                        ("up".to_string(), "..".to_string()),
                    ]
                    .into_iter()
                    .collect(),
                },
            },
            TenantFiles {
                dir: "tenants/evil".into(),
                files: other,
                luaurc: Luaurc::default(),
            },
        ]
    }

    #[test]
    fn paths_resolve_as_the_runtime_resolves_them() {
        let t = tenants();
        let ok = |from: &str, path: &str| {
            resolve(&t, &format!("tenants/acme/scripts/{from}.luau"), path)
        };
        // GIVEN a tenant with modules, WHEN paths are resolved, THEN ./ is the file's folder,
        // an init.luau's ./ is its folder's parent and @self its folder, aliases are the
        // tenant folder's
        assert_eq!(
            ok("main", "./lib/orders").unwrap(),
            "tenants/acme/scripts/lib/orders.luau"
        );
        assert_eq!(
            ok("lib/orders", "./util").unwrap(),
            "tenants/acme/scripts/lib/util/init.luau"
        );
        assert_eq!(
            ok("lib/util/init", "./orders").unwrap(),
            "tenants/acme/scripts/lib/orders.luau"
        );
        assert_eq!(
            ok("lib/util/init", "@self/fmt").unwrap(),
            "tenants/acme/scripts/lib/util/fmt.luau"
        );
        assert_eq!(
            ok("main", "@LIB/orders").unwrap(),
            "tenants/acme/scripts/lib/orders.luau"
        );
        // AND what the runtime refuses is refused, saying why
        let why = |from: &str, path: &str| ok(from, path).unwrap_err();
        assert!(why("main", "lib/orders").contains("is not a module path"));
        assert!(why("main", "./lib/orders.luau").contains("leave the extension out"));
        assert!(why("lib/orders", "../main").contains("main.luau is a script, not a module"));
        assert!(why("main", "./lib/nope")
            .contains("there is no module tenants/acme/scripts/lib/nope.luau"));
        assert!(why("main", "@nope/x")
            .contains("there is no alias @nope in tenants/acme/.luaurc; its aliases: @lib, @up"));
        // AND no path reaches another tenant's files
        assert!(
            why("main", "../../evil/scripts/lib/secret").contains("leaves the tenant's scripts")
        );
        assert!(why("main", "@up/evil/scripts/lib/secret").contains("leaves the tenant's scripts"));
        assert!(why("lib/orders", "../../x").contains("leaves the tenant's scripts"));
    }
}
