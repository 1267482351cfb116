//! Test kit: throwaway projects with tenants written from strings, a log sink that keeps what
//! scripts log, and helpers to run and drain.

pub mod faults;

use std::path::Path;
use std::sync::{Arc, Mutex};

use native_core::host::LogSink;
use native_core::local::{drain, DrainOptions, DrainReport, Project};
use native_core::runtime::Runtime;
use serde_json::Value;

/// A deployment with two data buckets and a batch bucket.
pub const DEPLOYMENT: &str = r#"{
  "buckets": { "map": { "In": "acme-in", "Acks": "acme-acks" } },
  "batch": { "bucket": "partner-batch", "prefix": "tenants/" }
}"#;

/// Log records kept in memory.
#[derive(Debug, Default)]
pub struct MemLog(pub Mutex<Vec<Value>>);

impl LogSink for MemLog {
    fn write(&self, record: &Value) {
        self.0.lock().unwrap().push(record.clone());
    }
}

impl MemLog {
    /// Every record's `msg`, in order.
    pub fn messages(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|r| r["msg"].as_str().unwrap_or("").to_string())
            .collect()
    }
}

/// A tenant to write: name, config.json text, and (name, source) of each script.
pub type TenantSpec<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

/// A project in a temporary folder.
pub struct TestProject {
    /// Keeps the folder alive.
    pub dir: tempfile::TempDir,
    /// The opened project.
    pub project: Project,
    /// The runtime over it, logging into `log`.
    pub rt: Runtime,
    /// What was logged.
    pub log: Arc<MemLog>,
}

/// Writes a tenant into a project folder.
pub fn write_tenant(root: &Path, tenant: &str, config: &str, scripts: &[(&str, &str)]) {
    let dir = root.join("tenants").join(tenant);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
    for (name, src) in scripts {
        std::fs::write(dir.join("scripts").join(format!("{name}.luau")), src).unwrap();
    }
}

impl TestProject {
    /// A project with [`DEPLOYMENT`] and one tenant.
    pub fn new(tenant: &str, config: &str, scripts: &[(&str, &str)]) -> Self {
        Self::with_tenants(DEPLOYMENT, &[(tenant, config, scripts)])
    }

    /// A project with the given deployment and tenants.
    pub fn with_tenants(deployment: &str, tenants: &[TenantSpec<'_>]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("deployment.json"), deployment).unwrap();
        for (t, c, s) in tenants {
            write_tenant(dir.path(), t, c, s);
        }
        let project = Project::open(dir.path()).unwrap();
        let log = Arc::new(MemLog::default());
        let rt = project.runtime().with_log(log.clone());
        TestProject {
            dir,
            project,
            rt,
            log,
        }
    }

    /// Runs `on_invoke` of a script.
    pub async fn invoke(
        &self,
        tenant: &str,
        script: &str,
        ev: Value,
    ) -> native_core::Result<Value> {
        self.rt.invoke(tenant, script, ev).await
    }

    /// Drains both queues, retrying failures at once, waiting for delayed messages.
    pub async fn drain(&self) -> DrainReport {
        drain(
            &self.rt,
            DrainOptions {
                wait: true,
                retry_delay_s: 0,
                ..Default::default()
            },
        )
        .await
        .unwrap()
    }

    /// Reads an object of a tenant as text.
    pub async fn get(&self, tenant: &str, bucket: &str, key: &str) -> Option<String> {
        let (real, full) = self.rt.locate(tenant, bucket, key).unwrap();
        self.rt
            .services
            .backends
            .objects
            .get(&real, &full)
            .await
            .unwrap()
            .map(|(_, b)| String::from_utf8_lossy(&b).into_owned())
    }
}
