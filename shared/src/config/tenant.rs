//! A tenant: its config (`tenants/<tenant>/config.json`) and its scripts
//! (`tenants/<tenant>/scripts/<name>.luau`).

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};

use super::Limits;
use crate::{keys::check_name, Error};

/// What `config.json` of a tenant says.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// Whether the tenant may use the work queue (`native.queue`, continuations).
    #[serde(default)]
    pub queue: bool,
    /// Whether the tenant may use `native.batch`.
    #[serde(default)]
    pub batch: bool,
    /// The router script, which routes object events. Left out: `scripts/router.luau` when
    /// the tenant has one, else the built-in routing ([`Tenant::router`]). A name given here
    /// must be a script of the tenant (`native check` and `native deploy` refuse it otherwise).
    #[serde(default)]
    pub router: Option<String>,
    /// Limits, each with a default and a ceiling.
    #[serde(default)]
    pub limits: Limits,
    /// The tenant's own settings, exposed read-only as `native.config`.
    #[serde(default = "empty_object")]
    pub config: serde_json::Value,
    /// Outbound HTTP: the hosts the tenant may call, background concurrency.
    #[serde(default)]
    pub http: super::TenantHttp,
    /// Vault names the tenant's requests may fill in (`{{vault:NAME}}`).
    #[serde(default)]
    pub vault: Vec<String>,
    /// Scripts run every interval or on a cron, by schedule name (see [`super::schedule`]).
    #[serde(default)]
    pub schedules: BTreeMap<String, super::Schedule>,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

impl Default for TenantConfig {
    fn default() -> Self {
        TenantConfig {
            queue: false,
            batch: false,
            router: None,
            limits: Limits::default(),
            config: empty_object(),
            http: super::TenantHttp::default(),
            vault: Vec::new(),
            schedules: BTreeMap::new(),
        }
    }
}

impl TenantConfig {
    /// Parses and validates a tenant config; `file` names it in errors.
    pub fn from_json(file: &str, text: &str) -> Result<Self, Error> {
        let mut c: TenantConfig = super::parse(file, text, &["", "limits", "http", "schedules"])?;
        c.limits.validate(file)?;
        super::http::validate(&c.http, &c.vault)
            .map_err(|(field, why)| Error::config(file, field, why))?;
        if let Some(router) = &c.router {
            check_name("script", router).map_err(|why| Error::config(file, "router", why))?;
        }
        super::schedule::validate(&mut c.schedules)
            .map_err(|(field, why)| Error::config(file, field, why))?;
        if !c.config.is_object() {
            return Err(Error::config(file, "config", "must be a JSON object"));
        }
        Ok(c)
    }
}

/// One script's source and its content hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// The name scripts and routers use (the file name without `.luau`).
    pub name: String,
    /// The Luau source.
    pub source: String,
    /// sha256 of the source, the key of the bytecode cache.
    pub hash: [u8; 32],
}

impl Script {
    /// A script from its name and source.
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> Self {
        let source = source.into();
        let hash = Sha256::digest(source.as_bytes()).into();
        Script {
            name: name.into(),
            source,
            hash,
        }
    }

    /// Whether the source names `entry` (`on_queue`, ...) as a whole word, comments left out:
    /// a script that never names it cannot define it, so a message for it could
    /// only fail (one that names it may still not define it; running it tells).
    pub fn mentions(&self, entry: &str) -> bool {
        self.source.lines().any(|line| names(line, entry))
    }

    /// The line (from 1) where the source seems to define `entry`: the first that names it
    /// together with `function`. For errors about what the entry point returned, which Luau
    /// cannot place once it has returned.
    pub fn defined_at(&self, entry: &str) -> Option<usize> {
        self.source
            .lines()
            .position(|line| names(line, entry) && names(line, "function"))
            .map(|i| i + 1)
    }

    /// A module (a file in a subfolder of `scripts/`) from its name (`lib/orders`) and source.
    /// Its hash is over the source and a mark of its kind, so that a module and a script with
    /// the same text never share cached bytecode (a script's is compiled with its exports).
    pub fn module(name: impl Into<String>, source: impl Into<String>) -> Self {
        let source = source.into();
        let mut h = Sha256::new_with_prefix(b"module\0");
        h.update(source.as_bytes());
        Script {
            name: name.into(),
            source,
            hash: h.finalize().into(),
        }
    }

    /// A module read from a file: [`Script::from_file`]'s checks, [`Script::module`]'s hash.
    pub fn module_from_file(file: &str, name: &str, text: &str) -> Result<Self, Error> {
        let s = Script::from_file(file, name, text)?;
        Ok(Script::module(s.name, s.source))
    }

    /// A script read from a file (`file` names it in errors): a leading UTF-8 byte order mark,
    /// which some editors write, is dropped; a NUL byte is refused with its line, since Luau
    /// would silently ignore everything after it.
    pub fn from_file(file: &str, name: &str, text: &str) -> Result<Self, Error> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if let Some(at) = nul_at(text) {
            return Err(Error::InvalidInput(format!("{file}:{at}")));
        }
        Ok(Script::new(name, text))
    }
}

/// Whether `line` names `word` as a whole word, its `--` comment left out.
fn names(line: &str, word: &str) -> bool {
    let code = line.split("--").next().unwrap_or(line);
    let part = |c: char| c.is_alphanumeric() || c == '_';
    code.match_indices(word).any(|(at, _)| {
        !code[..at].chars().next_back().is_some_and(part)
            && !code[at + word.len()..].chars().next().is_some_and(part)
    })
}

/// Where the first NUL byte of a script is, as `<line>: contains a NUL byte ...`, or `None`.
pub(crate) fn nul_at(source: &str) -> Option<String> {
    let pos = memchr::memchr(0, source.as_bytes())?;
    let before = &source.as_bytes()[..pos];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let column = pos - memchr::memrchr(b'\n', before).map_or(0, |n| n + 1) + 1;
    Some(format!(
        "{line}: contains a NUL byte (column {column}); remove it: Luau would ignore everything after it"
    ))
}

/// The router script used when `config.json` names none and the tenant has one of this name.
pub const DEFAULT_ROUTER: &str = "router";

/// What routes a tenant's object events ([`Tenant::router`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Router<'a> {
    /// This script's `on_route` (it may be missing, when `config.json` names it: then routing
    /// fails, and `native check` says so).
    Script(&'a str),
    /// No router configured and none present: a batch job's `done.json` goes to the job's
    /// continuation, as `native.batch.route` would send it, and every other event is dropped.
    BuiltIn,
}

/// A loaded tenant: its name, config and scripts.
#[derive(Debug, Clone)]
pub struct Tenant {
    /// The tenant's name, which is also its folder in every bucket.
    pub name: String,
    /// The parsed config.
    pub config: TenantConfig,
    /// Scripts by name.
    pub scripts: BTreeMap<String, Arc<Script>>,
    /// Modules (files in subfolders of `scripts/`) by name: their path under `scripts/`
    /// without `.luau` (`lib/orders`). Scripts `require` them ([`super::modules`]).
    pub modules: BTreeMap<String, Arc<Script>>,
    /// The aliases of the tenant's `.luaurc`, lower-cased, to their paths.
    pub aliases: BTreeMap<String, String>,
    /// A hash over the config and every script: changes when anything of the tenant changes.
    pub version: [u8; 32],
}

impl Tenant {
    /// Builds a tenant, checking its name and its scripts' names.
    pub fn new(name: &str, config: TenantConfig, scripts: Vec<Script>) -> Result<Self, Error> {
        Tenant::with_modules(name, config, scripts, Vec::new(), Default::default())
    }

    /// Builds a tenant with modules and its `.luaurc`, checking names and the number of
    /// modules ([`super::modules::MAX_MODULES`]).
    pub fn with_modules(
        name: &str,
        config: TenantConfig,
        scripts: Vec<Script>,
        modules: Vec<Script>,
        luaurc: super::Luaurc,
    ) -> Result<Self, Error> {
        check_name("tenant", name).map_err(Error::InvalidInput)?;
        if modules.len() > super::modules::MAX_MODULES {
            return Err(Error::InvalidInput(format!(
                "tenant {name:?} has {} modules under scripts/; the most is {}",
                modules.len(),
                super::modules::MAX_MODULES
            )));
        }
        let mut h = Sha256::new();
        h.update(serde_json::to_vec(&config.config).unwrap_or_default());
        h.update(format!(
            "{:?}{}{}{:?}{:?}{:?}{:?}",
            config.limits,
            config.queue,
            config.batch,
            config.router,
            config.http,
            config.vault,
            config.schedules
        ));
        let mut map = BTreeMap::new();
        for s in scripts {
            check_name("script", &s.name).map_err(Error::InvalidInput)?;
            h.update(s.name.as_bytes());
            h.update(s.hash);
            map.insert(s.name.clone(), Arc::new(s));
        }
        let mut mods = BTreeMap::new();
        for m in modules {
            h.update(b"\0module\0");
            h.update(m.name.as_bytes());
            h.update(m.hash);
            mods.insert(m.name.clone(), Arc::new(m));
        }
        for (alias, path) in &luaurc.aliases {
            h.update(b"\0alias\0");
            h.update(alias.as_bytes());
            h.update(b"\0");
            h.update(path.as_bytes());
        }
        Ok(Tenant {
            name: name.to_string(),
            config,
            scripts: map,
            modules: mods,
            aliases: luaurc.aliases,
            version: h.finalize().into(),
        })
    }

    /// What routes the tenant's object events: the script named in `config.json`, else
    /// `scripts/router.luau` when there is one, else the built-in routing.
    pub fn router(&self) -> Router<'_> {
        match &self.config.router {
            Some(name) => Router::Script(name),
            None if self.scripts.contains_key(DEFAULT_ROUTER) => Router::Script(DEFAULT_ROUTER),
            None => Router::BuiltIn,
        }
    }

    /// A script by name, or an error that says which scripts there are.
    pub fn script(&self, name: &str) -> Result<&Arc<Script>, Error> {
        // A module is not a script: say so rather than that no such script can exist.
        let module = name.strip_suffix(".luau").unwrap_or(name);
        if module.contains('/') && self.modules.contains_key(module) {
            return Err(Error::InvalidInput(format!(
                "{module:?} of tenant {:?} is a module (scripts/{module}.luau), not a script: files in \
                 subfolders of scripts/ are modules that scripts require; name a script of scripts/ \
                 ({})",
                self.name,
                self.scripts.keys().cloned().collect::<Vec<_>>().join(", ")
            )));
        }
        // A name no script file can have (path tricks, megabytes): say so, quoted cut, rather
        // than suggest adding scripts/<name>.luau.
        if check_name("script", name).is_err() {
            let name = crate::text::cut_text(name.to_string(), 80);
            return Err(Error::InvalidInput(format!(
                "script {name:?} of tenant {:?} cannot exist: a script name is 1 to 64 letters, digits, '-' or '_'",
                self.name
            )));
        }
        self.scripts.get(name).ok_or_else(|| Error::NotFound {
            what: format!("script {name:?} of tenant {:?}", self.name),
            hint: format!(
                "{}the tenant has {}; add scripts/{name}.luau",
                crate::text::suggest::did_you_mean(name, self.scripts.keys().map(String::as_str)),
                if self.scripts.is_empty() {
                    "no scripts".to_string()
                } else {
                    self.scripts.keys().cloned().collect::<Vec<_>>().join(", ")
                }
            ),
            missing: crate::error::Missing::Other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_ceilings() {
        let c = TenantConfig::from_json("c.json", "{}").unwrap();
        assert_eq!(c.router, None);
        assert_eq!(c.limits.max_data_ops, 1000);
        assert_eq!(c.limits.timeout_s, 30);
        assert_eq!(c.limits.max_memory_mb, 64);
        let e = TenantConfig::from_json(
            "tenants/a/config.json",
            r#"{"limits":{"max_data_ops":20000}}"#,
        )
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "tenants/a/config.json: limits.max_data_ops: 20000 is above the ceiling of 10000"
        );
        let e = TenantConfig::from_json("c.json", r#"{"limits":{"max_ops":1}}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `max_ops`"), "{e}");
        let e = TenantConfig::from_json("c.json", "{\"queue\":\n true,,}").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn script_files_drop_a_bom_and_refuse_nul_bytes() {
        // GIVEN a script that starts with a UTF-8 BOM, and one with a NUL byte on line 3
        // WHEN each is read as a file
        // THEN the BOM is gone, and the NUL byte is refused with the file, line and column
        let s = Script::from_file("x.luau", "x", "\u{feff}return 1").unwrap();
        assert_eq!(s.source, "return 1");
        let e = Script::from_file(
            "tenants/acme/scripts/x.luau",
            "x",
            "local a = 1\nlocal b = 2\nlocal c\0 = 3\nerror('x')",
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "tenants/acme/scripts/x.luau:3: contains a NUL byte (column 8); remove it: Luau would \
             ignore everything after it"
        );
    }

    #[test]
    fn type_errors_name_the_json_path() {
        // GIVEN a limit given as a string
        // WHEN the config is parsed
        // THEN the error names the file and the path of the field, not "-"
        let e = TenantConfig::from_json(
            "tenants/acme/config.json",
            r#"{ "limits": { "timeout_s": "5" } }"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "tenants/acme/config.json: limits.timeout_s: invalid type: string \"5\", expected u32 at line 1 column 30"
        );
        let e = TenantConfig::from_json("c.json", r#"{"queue":"yes"}"#).unwrap_err();
        assert!(
            e.to_string().starts_with("c.json: queue: invalid type"),
            "{e}"
        );
    }

    #[test]
    fn refuses_a_config_that_is_not_an_object() {
        // GIVEN configs that are an array, a number, or have limits as an array
        // WHEN each is parsed
        // THEN each is refused with the file and why (serde alone reads an array field by field)
        for (text, field, what) in [
            ("[true, true]", "", "an array"),
            ("7", "", "the number 7"),
            (r#"{ "limits": [5, 5] }"#, "limits: ", "an array"),
        ] {
            let e = TenantConfig::from_json("tenants/acme/config.json", text).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "tenants/acme/config.json: {field}must be a JSON object {{ ... }}, not {what}"
                ),
                "{text}"
            );
        }
    }
}
