//! What scripts can reach through the host API: the deployment, the backends, where logs go,
//! and the long-running helpers a runtime may add (`job:http`, callback signing).

use std::sync::Arc;

use crate::config::Deployment;
use crate::observe::LogSink;
use crate::ports::Backends;

/// What scripts can reach: the deployment, the backends and where logs go.
#[derive(Debug, Clone)]
pub struct Services {
    /// The deployment config.
    pub deployment: Deployment,
    /// The backends.
    pub backends: Backends,
    /// Where script and runtime logs go.
    pub log: Arc<dyn LogSink>,
    /// The background performer of `job:http`, on long-running runtimes only (the Fargate
    /// server, the CLI); `None` on the Lambda functions, where nothing runs after a return.
    pub http_jobs: Option<Arc<crate::outbound::jobs::HttpJobs>>,
    /// Signs callback URLs (`native.barrier.callback_url`); `None` where no secret is set.
    pub callback: Option<Arc<crate::callback::Signer>>,
    /// Where spans go ([`crate::observe::otlp`]); `None` when no collector is set, and then
    /// no span is made.
    pub exporter: Option<Arc<crate::observe::otlp::Exporter>>,
}

impl Services {
    /// Services over `backends` logging to `log`, with neither background `job:http` nor
    /// callback signing (the [`Runtime`] builders add those).
    pub fn new(deployment: Deployment, backends: Backends, log: Arc<dyn LogSink>) -> Self {
        Services {
            deployment,
            backends,
            log,
            http_jobs: None,
            callback: None,
            exporter: None,
        }
    }
}
