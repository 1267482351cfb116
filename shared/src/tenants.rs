//! Where tenants come from: a project folder (`tenants/<tenant>/...`) locally, the scripts bucket
//! on AWS. Both give a [`Tenant`] with its config and every script.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::config::{Script, Tenant, TenantConfig};
use crate::keys::check_name;
use crate::{Error, Result};

/// A source of tenants.
#[async_trait]
pub trait TenantSource: std::fmt::Debug + Send + Sync {
    /// Loads a tenant; [`Error::NotFound`] when there is none of that name.
    async fn load(&self, tenant: &str) -> Result<Arc<Tenant>>;

    /// The names of the tenants there are, sorted (for people: the operator's console). A
    /// source that cannot tell says so.
    async fn list(&self) -> Result<Vec<String>> {
        Err(Error::InvalidInput(
            "this tenant source cannot list its tenants".into(),
        ))
    }
}

/// Tenants in a project folder: `tenants/<tenant>/config.json` and
/// `tenants/<tenant>/scripts/<name>.luau`. Each tenant is read once per process.
#[derive(Debug)]
pub struct DirTenants {
    root: PathBuf,
    cache: Mutex<HashMap<String, Arc<Tenant>>>,
}

impl DirTenants {
    /// Tenants under `<project>/tenants`.
    pub fn new(project: &Path) -> Self {
        DirTenants {
            root: project.join("tenants"),
            cache: Mutex::default(),
        }
    }

    /// The names of every tenant folder, sorted.
    pub fn names(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let rd = match std::fs::read_dir(&self.root) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => {
                return Err(Error::backend(
                    "embedded",
                    format!("cannot read {}", self.root.display()),
                    e,
                ))
            }
        };
        for entry in rd.flatten() {
            if entry.path().is_dir() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Reads a tenant from disk, without the cache.
    pub fn read(&self, tenant: &str) -> Result<Tenant> {
        check_name("tenant", tenant).map_err(Error::InvalidInput)?;
        let dir = self.root.join(tenant);
        if !dir.is_dir() {
            let names = self.names().unwrap_or_default();
            return Err(Error::NotFound {
                what: format!("tenant {tenant:?}"),
                hint: format!(
                    "{}there is no folder tenants/{tenant}; the project's tenants: {}",
                    crate::text::suggest::did_you_mean(tenant, names.iter().map(String::as_str)),
                    if names.is_empty() {
                        "none (make one with `native init`)".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            });
        }
        let file = format!("tenants/{tenant}/config.json");
        let config = match std::fs::read_to_string(dir.join("config.json")) {
            Ok(text) => TenantConfig::from_json(&file, &text)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => TenantConfig::default(),
            Err(e) => return Err(Error::config(&file, "-", e)),
        };
        let mut scripts = Vec::new();
        let sdir = dir.join("scripts");
        if let Ok(rd) = std::fs::read_dir(&sdir) {
            for entry in rd.flatten() {
                let path = entry.path();
                let Some(name) = path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_suffix(".luau"))
                else {
                    continue;
                };
                let rel = format!("tenants/{tenant}/scripts/{name}.luau");
                check_name("script", name).map_err(|why| Error::config(&rel, "-", why))?;
                let source =
                    std::fs::read_to_string(&path).map_err(|e| Error::config(&rel, "-", e))?;
                scripts.push(Script::from_file(&rel, name, &source)?);
            }
        }
        Tenant::new(tenant, config, scripts)
    }
}

#[async_trait]
impl TenantSource for DirTenants {
    async fn load(&self, tenant: &str) -> Result<Arc<Tenant>> {
        if let Some(t) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(tenant)
        {
            return Ok(t.clone());
        }
        let t = Arc::new(self.read(tenant)?);
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tenant.to_string(), t.clone());
        Ok(t)
    }

    async fn list(&self) -> Result<Vec<String>> {
        self.names()
    }
}
