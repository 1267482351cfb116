//! What the checker reads around the sources: each file's mode from the `.luaurc` files of its
//! folders, and `require` resolved with the runtime's own rules ([`native_require`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::ffi::{parse_config, Mode};
use crate::{Diagnostic, Severity, TenantFiles};

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

impl native_require::Files for TenantFiles {
    type Module = String;

    fn dir(&self) -> &str {
        &self.dir
    }

    fn aliases(&self) -> &BTreeMap<String, String> {
        &self.luaurc.aliases
    }

    fn is_script(&self, name: &str) -> bool {
        self.files.contains_key(name)
    }

    fn module(&self, name: &str) -> Option<String> {
        self.files.get(name).cloned()
    }
}

/// The project-relative file of the module that `path`, required from the file `from`,
/// names; or why there is none.
pub fn resolve(tenants: &[TenantFiles], from: &str, path: &str) -> Result<String, String> {
    let Some((t, me)) = tenants.iter().find_map(|t| {
        let name = from.strip_prefix(&t.dir)?.strip_prefix("/scripts/")?;
        Some((t, name.strip_suffix(".luau").unwrap_or(name)))
    }) else {
        return Err(format!("{from} is no tenant's script"));
    };
    native_require::resolve(t, native_require::Requirer::Script(me), path)
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
        // AND a path may climb out of scripts/ and back, as the runtime walks it
        assert_eq!(
            ok("main", "../scripts/lib/orders").unwrap(),
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
