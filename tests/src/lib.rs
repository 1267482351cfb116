//! Test kit: throwaway projects with tenants written from strings, a log sink that keeps what
//! scripts log, and helpers to run and drain.

#[cfg(feature = "aws")]
pub mod aws_env;
pub mod barriers;
pub mod cli;
pub mod counted;
pub mod crash;
pub mod faults;
pub mod otlp;
pub mod own_process;
pub mod serve;
pub mod test_files;

use std::path::Path;
use std::sync::{Arc, Mutex};

use native_core::embedded::Embedded;
use native_core::local::{drain, DrainOptions, DrainReport, Project};
use native_core::observe::LogSink;
use native_core::ports::Backends;
use native_core::runtime::Runtime;
use serde_json::Value;

/// Where the AWS emulator is (`NATIVE_TEST_AWS_ENDPOINT`), or `None` when the AWS tests are
/// skipped on purpose (`NATIVE_SKIP_AWS=1`). Panics when neither is set: the AWS tests must not
/// pass silently for want of an emulator.
pub fn aws_endpoint() -> Option<String> {
    if let Some(e) = std::env::var("NATIVE_TEST_AWS_ENDPOINT")
        .ok()
        .filter(|e| !e.is_empty())
    {
        return Some(e);
    }
    if std::env::var("NATIVE_SKIP_AWS").as_deref() == Ok("1") {
        eprintln!("NATIVE_SKIP_AWS=1: AWS tests skipped");
        return None;
    }
    panic!(
        "NATIVE_TEST_AWS_ENDPOINT is not set. The AWS tests need an emulator: run `tests/moto.sh` \
         (it makes the test tools' virtual environment with moto[server] if missing, starts moto \
         on a free port and runs these tests), or start `python3 tests/moto_server.py 127.0.0.1 5000` \
         (moto with DynamoDB's writes atomic, as on AWS) and set \
         NATIVE_TEST_AWS_ENDPOINT=http://127.0.0.1:5000. To skip them on purpose, set NATIVE_SKIP_AWS=1."
    );
}

/// The backend a test runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// The embedded backend in a temporary folder.
    Embedded,
    /// S3, DynamoDB and SQS in the emulator at [`aws_endpoint`] (feature `aws`).
    Aws,
}

/// Runs each listed test body, an `async fn(Backend)`, once per backend: as `embedded::<name>`
/// and, with the `aws` feature, as `aws::<name>` (skipped when [`aws_endpoint`] says so). The
/// tests run on a multi-threaded runtime, as scripts block on backend calls.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod embedded {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    super::$name($crate::Backend::Embedded).await
                }
            )*
        }
        #[cfg(feature = "aws")]
        mod aws {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    if $crate::aws_endpoint().is_some() {
                        super::$name($crate::Backend::Aws).await
                    }
                }
            )*
        }
    };
}

/// The three ports on one backend, with no project around them (for tests of core APIs).
#[derive(Debug)]
pub struct TestBackends {
    /// The ports.
    pub backends: Backends,
    /// Which backend.
    pub backend: Backend,
    origin: Origin,
}

#[derive(Debug)]
enum Origin {
    Embedded(tempfile::TempDir),
    #[cfg(feature = "aws")]
    Aws(Box<aws_env::Stack>),
}

impl TestBackends {
    /// Fresh, empty storage on `backend`: a temporary folder, or a table and queues of their
    /// own in the emulator.
    pub async fn new(backend: Backend) -> Self {
        let origin = match backend {
            Backend::Embedded => Origin::Embedded(tempfile::tempdir().unwrap()),
            #[cfg(feature = "aws")]
            Backend::Aws => Origin::Aws(Box::new(
                aws_env::stack(
                    &aws_endpoint().expect("the AWS tests are skipped"),
                    &native_core::config::Deployment::default(),
                )
                .await,
            )),
            #[cfg(not(feature = "aws"))]
            Backend::Aws => panic!("native-tests is built without its `aws` feature"),
        };
        let backends = match &origin {
            Origin::Embedded(dir) => Embedded::open(dir.path(), vec![]).unwrap().backends(),
            #[cfg(feature = "aws")]
            Origin::Aws(stack) => stack.backends.clone(),
        };
        TestBackends {
            backends,
            backend,
            origin,
        }
    }

    /// Another handle on the same storage, as a second process has: the folder opened again,
    /// or new SDK clients on the same table and queues.
    pub async fn another(&self) -> Backends {
        match &self.origin {
            Origin::Embedded(dir) => Embedded::open(dir.path(), vec![]).unwrap().backends(),
            #[cfg(feature = "aws")]
            Origin::Aws(stack) => stack.another().await,
        }
    }
}

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

/// A project in a temporary folder: tenants and `deployment.json` there, and a runtime over the
/// embedded backend in its `.native/` or over AWS backends in the emulator.
pub struct TestProject {
    /// Keeps the folder alive.
    pub dir: tempfile::TempDir,
    /// The opened project. On AWS its embedded backend is unused: `rt` runs over the emulator.
    pub project: Project,
    /// The runtime over it, logging into `log`.
    pub rt: Arc<Runtime>,
    /// What was logged.
    pub log: Arc<MemLog>,
    /// Which backend `rt` runs on.
    pub backend: Backend,
    /// On AWS, the resources in the emulator.
    #[cfg(feature = "aws")]
    pub stack: Option<aws_env::Stack>,
}

/// Writes a tenant into a project folder.
pub fn write_tenant(root: &Path, tenant: &str, config: &str, scripts: &[(&str, &str)]) {
    let dir = root.join("tenants").join(tenant);
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("config.json"), config).unwrap();
    for (name, src) in scripts {
        // A name with folders (`lib/orders`) is a module: its folders are made too.
        let file = dir.join("scripts").join(format!("{name}.luau"));
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, src).unwrap();
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
        let rt = Arc::new(project.runtime().with_log(log.clone()));
        TestProject {
            dir,
            project,
            rt,
            log,
            backend: Backend::Embedded,
            #[cfg(feature = "aws")]
            stack: None,
        }
    }

    /// A project with the given deployment and tenants on `backend`. On AWS the deployment's
    /// buckets get real names of their own in the emulator (read them from
    /// `p.rt.services.deployment`), with a table and queues of their own; tenants are still
    /// read from the temporary folder.
    pub async fn on(backend: Backend, deployment: &str, tenants: &[TenantSpec<'_>]) -> Self {
        match backend {
            Backend::Embedded => Self::with_tenants(deployment, tenants),
            Backend::Aws => Self::aws(deployment, tenants).await,
        }
    }

    /// A project with the given deployment and tenants over AWS backends in the emulator.
    #[cfg(feature = "aws")]
    pub async fn aws(deployment: &str, tenants: &[TenantSpec<'_>]) -> Self {
        let ep = aws_endpoint().expect("the AWS tests are skipped (NATIVE_SKIP_AWS=1)");
        let d = native_core::config::Deployment::from_json("deployment.json", deployment).unwrap();
        let stack = aws_env::stack(&ep, &d).await;
        let real = stack.deployment();
        let mut text = serde_json::json!({ "buckets": { "map": real.buckets.map } });
        if let Some(b) = &real.batch {
            text["batch"] = serde_json::json!({ "bucket": b.bucket, "prefix": b.prefix });
        }
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("deployment.json"), text.to_string()).unwrap();
        for (t, c, s) in tenants {
            write_tenant(dir.path(), t, c, s);
        }
        let project = Project::open(dir.path()).unwrap();
        let log = Arc::new(MemLog::default());
        let rt = Arc::new(
            Runtime::new(
                real.clone(),
                stack.backends.clone(),
                project.tenants.clone(),
            )
            .with_log(log.clone()),
        );
        TestProject {
            dir,
            project,
            rt,
            log,
            backend: Backend::Aws,
            stack: Some(stack),
        }
    }

    /// Without the `aws` feature there is no AWS backend.
    #[cfg(not(feature = "aws"))]
    pub async fn aws(_deployment: &str, _tenants: &[TenantSpec<'_>]) -> Self {
        panic!("native-tests is built without its `aws` feature")
    }

    /// The real bucket of a logical name (`$batch` for the batch bucket).
    pub fn real_bucket(&self, logical: &str) -> String {
        self.rt
            .services
            .deployment
            .real_bucket(logical)
            .unwrap_or_else(|| panic!("no bucket {logical} in the deployment"))
            .to_string()
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
