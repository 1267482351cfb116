//! What one process can honour: the memory its scripts may take together ([`ScriptMemory`]),
//! the invocations a server runs at once ([`Admission`]), and, at deploy, each tenant limit
//! that the function cannot honour with the setting to change ([`FunctionSettings::check`]).
//! Scripts in flight hold their tenants' `max_memory_mb` between them within the function's
//! memory less [`RUNTIME_RESERVE_MB`].

use std::sync::Arc;
use std::time::Instant;

use crate::config::Limits;
use crate::deadline::{before, MARGIN};
use crate::{Error, Result};

/// Memory a function keeps for the runtime itself (SDK clients, pooled VMs, buffers).
pub const RUNTIME_RESERVE_MB: u32 = 128;

/// The settings of the function that runs scripts, as far as limits are concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionSettings {
    /// The function's timeout in seconds (the template's `FunctionTimeout`).
    pub timeout_s: u32,
    /// The function's memory in MB (the template's `MemorySize`).
    pub memory_mb: u32,
}

impl FunctionSettings {
    /// The template's defaults.
    pub const DEFAULT: FunctionSettings = FunctionSettings {
        timeout_s: 60,
        memory_mb: 512,
    };

    /// Memory that scripts in flight may hold together, in MB.
    pub fn script_memory_mb(&self) -> u32 {
        self.memory_mb.saturating_sub(RUNTIME_RESERVE_MB).max(1)
    }

    /// Each limit of `file` (a tenant's config.json) that this function cannot honour, with
    /// the figures and what to change; empty when all fit. The settings are the stack's
    /// (`FunctionTimeout`, `MemorySize`), as given with `--function-timeout` and
    /// `--function-memory` or their defaults.
    pub fn check(&self, file: &str, limits: &Limits) -> Vec<String> {
        self.check_for(file, limits, None, None)
    }

    /// [`Self::check`], naming the deployed function whose `Timeout` (`timeout_of`) and
    /// `MemorySize` (`memory_of`) these settings were read from; None: the stack's setting as
    /// given on the command line.
    pub fn check_for(
        &self,
        file: &str,
        limits: &Limits,
        timeout_of: Option<&str>,
        memory_of: Option<&str>,
    ) -> Vec<String> {
        let mut out = Vec::new();
        let most_s = self.timeout_s.saturating_sub(MARGIN.as_secs() as u32);
        if limits.timeout_s > most_s {
            let (setting, fix) = match timeout_of {
                Some(f) => (format!("function {f}'s timeout (Timeout)"), ""),
                None => (
                    "the functions' timeout (FunctionTimeout)".to_string(),
                    " (and pass --function-timeout)",
                ),
            };
            out.push(format!(
                "{file}: limits.timeout_s is {} s, but {setting} is {} s and a script must end {} s before it: lower timeout_s to at most {most_s}, or deploy the stack with FunctionTimeout of at least {}{fix}",
                limits.timeout_s,
                self.timeout_s,
                MARGIN.as_secs(),
                limits.timeout_s + MARGIN.as_secs() as u32,
            ));
        }
        let most_mb = self.script_memory_mb();
        if limits.max_memory_mb > most_mb {
            let (setting, fix) = match memory_of {
                Some(f) => (format!("function {f}'s memory (MemorySize)"), ""),
                None => (
                    "the functions' memory (MemorySize)".to_string(),
                    " (and pass --function-memory)",
                ),
            };
            out.push(format!(
                "{file}: limits.max_memory_mb is {} MB, but {setting} is {} MB and the runtime keeps {RUNTIME_RESERVE_MB} MB of it: lower max_memory_mb to at most {most_mb}, or deploy the stack with MemorySize of at least {}{fix}",
                limits.max_memory_mb,
                self.memory_mb,
                limits.max_memory_mb + RUNTIME_RESERVE_MB,
            ));
        }
        out
    }
}

/// Memory that scripts in flight in one process hold together: each takes its tenant's
/// `max_memory_mb` (at most all of it) before it runs and gives it back after.
#[derive(Debug, Clone)]
pub struct ScriptMemory {
    total_mb: u32,
    permits: Arc<tokio::sync::Semaphore>,
}

impl ScriptMemory {
    /// `total_mb` of script memory.
    pub fn new(total_mb: u32) -> Self {
        let total_mb = total_mb.max(1);
        ScriptMemory {
            total_mb,
            permits: Arc::new(tokio::sync::Semaphore::new(total_mb as usize)),
        }
    }

    /// The script memory of a Lambda function, from `AWS_LAMBDA_FUNCTION_MEMORY_SIZE`; None outside
    /// Lambda.
    pub fn from_lambda_env() -> Option<Self> {
        let mb: u32 = std::env::var("AWS_LAMBDA_FUNCTION_MEMORY_SIZE")
            .ok()?
            .parse()
            .ok()?;
        let f = FunctionSettings {
            memory_mb: mb,
            ..FunctionSettings::DEFAULT
        };
        Some(Self::new(f.script_memory_mb()))
    }

    /// MB not held by a script now.
    pub fn available_mb(&self) -> usize {
        self.permits.available_permits()
    }

    /// Waits for `mb` of it, until `not_after` at most; the memory is held until the
    /// returned permit drops.
    pub async fn take(
        &self,
        mb: u32,
        not_after: Option<Instant>,
    ) -> Result<tokio::sync::OwnedSemaphorePermit> {
        let want = mb.clamp(1, self.total_mb);
        let acquire = self.permits.clone().acquire_many_owned(want);
        let got = before(not_after, acquire, || Error::Backend {
            backend: "runtime",
            message: format!(
                "no room to run the script before its deadline: scripts in flight hold the process's {} MB of script memory and this one needs {want} MB (max_memory_mb); it is retried",
                self.total_mb
            ),
            source: None,
        })
        .await?;
        got.map_err(|e| Error::Backend {
            backend: "runtime",
            message: format!("script memory closed: {e}"),
            source: None,
        })
    }
}

/// How many invocations a server (`native serve`, the Fargate server) runs at once: at most
/// `max` in all, and per tenant at most its `max_concurrent` and never more than half of `max`,
/// so that one tenant cannot take every place. A script that waits holds a thread while it
/// waits (see [`crate::blocking`]): this is what bounds those threads. The Lambda functions run
/// one invocation per sandbox and have none.
#[derive(Debug)]
pub struct Admission {
    max: u32,
    running: std::sync::Mutex<Running>,
    freed: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct Running {
    all: u32,
    /// Per tenant; entries stay (tenants are the deployment's, a bounded set), their names
    /// shared with the places taken, so that taking one allocates nothing.
    tenants: std::collections::HashMap<Arc<str>, u32>,
}

/// A place taken in an [`Admission`], given back on drop.
#[derive(Debug)]
pub struct Admitted {
    admission: Arc<Admission>,
    tenant: Arc<str>,
}

impl Drop for Admitted {
    fn drop(&mut self) {
        {
            let mut r = self.admission.lock();
            r.all = r.all.saturating_sub(1);
            if let Some(n) = r.tenants.get_mut(&*self.tenant) {
                *n = n.saturating_sub(1);
            }
        }
        self.admission.freed.notify_waiters();
    }
}

impl Admission {
    /// The default cap of a server, below tokio's 512 blocking threads, which waiting scripts
    /// and the runtime's own blocking work share.
    pub const DEFAULT_MAX: u32 = 256;
    /// What a refused caller is told to wait, in seconds.
    pub const RETRY_AFTER_S: u32 = 1;

    /// An admission of at most `max` invocations at once (at least 2).
    pub fn new(max: u32) -> Arc<Self> {
        Arc::new(Admission {
            max: max.max(2),
            running: Default::default(),
            freed: tokio::sync::Notify::new(),
        })
    }

    /// The cap in all.
    pub fn max(&self) -> u32 {
        self.max
    }

    /// Invocations running now, in all and of `tenant`.
    pub fn running(&self, tenant: &str) -> (u32, u32) {
        let r = self.lock();
        (r.all, r.tenants.get(tenant).copied().unwrap_or(0))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Running> {
        self.running.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A place for an invocation of `tenant`, whose `max_concurrent` is `tenant_max`, now, or
    /// [`Error::Busy`] saying which cap is full.
    pub fn try_admit(self: &Arc<Self>, tenant: &str, tenant_max: u32) -> Result<Admitted> {
        let share = tenant_max.min(self.max / 2).max(1);
        let mut r = self.lock();
        let mine = r.tenants.get(tenant).copied().unwrap_or(0);
        let what = if mine >= share {
            let why = if share < tenant_max {
                format!(
                    "half of the server's {} places (its max_concurrent is {tenant_max})",
                    self.max
                )
            } else {
                format!("limits.max_concurrent = {tenant_max} in its config")
            };
            format!("tenant {tenant:?} has {mine} invocations running, the most it may run at once: {why}")
        } else if r.all >= self.max {
            format!(
                "the server runs {} invocations, the most it runs at once (its max_concurrent)",
                r.all
            )
        } else {
            r.all += 1;
            let name = match r.tenants.get_key_value(tenant) {
                Some((name, _)) => name.clone(),
                None => Arc::from(tenant),
            };
            *r.tenants.entry(name.clone()).or_insert(0) += 1;
            drop(r);
            return Ok(Admitted {
                admission: self.clone(),
                tenant: name,
            });
        };
        Err(Error::Busy {
            what,
            retry_after_s: Self::RETRY_AFTER_S,
        })
    }

    /// [`Admission::try_admit`], waiting for a place until `not_after` (work from the queues,
    /// which must not fail for want of one).
    pub async fn admit(
        self: &Arc<Self>,
        tenant: &str,
        tenant_max: u32,
        not_after: Option<Instant>,
    ) -> Result<Admitted> {
        loop {
            let freed = self.freed.notified();
            tokio::pin!(freed);
            freed.as_mut().enable();
            let busy = match self.try_admit(tenant, tenant_max) {
                Ok(a) => return Ok(a),
                Err(e) => e,
            };
            match not_after {
                Some(end) => {
                    if tokio::time::timeout_at(end.into(), freed).await.is_err() {
                        return Err(busy);
                    }
                }
                None => freed.await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_check_names_the_limit_the_figures_and_the_setting() {
        let f = FunctionSettings::DEFAULT;
        let mut l = Limits::default();
        assert!(f.check("tenants/acme/config.json", &l).is_empty());
        l.timeout_s = 59;
        l.max_memory_mb = 512;
        let e = f.check("tenants/acme/config.json", &l);
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e[0].starts_with("tenants/acme/config.json: limits.timeout_s is 59 s"));
        assert!(e[0].contains("FunctionTimeout) is 60 s") && e[0].contains("at most 58"));
        assert!(e[1].contains("limits.max_memory_mb is 512 MB") && e[1].contains("at most 384"));
        assert!(e[1].contains("MemorySize of at least 640"));
        l.timeout_s = 58;
        l.max_memory_mb = 384;
        assert!(f.check("c", &l).is_empty());
    }

    #[tokio::test]
    async fn script_memory_waits_then_gives_up_at_the_end() {
        let b = ScriptMemory::new(100);
        let held = b.take(64, None).await.unwrap();
        assert_eq!(b.available_mb(), 36);
        let end = Instant::now() + Duration::from_millis(50);
        let e = b.take(64, Some(end)).await.unwrap_err().to_string();
        assert!(
            e.contains("no room to run the script") && e.contains("100 MB"),
            "{e}"
        );
        drop(held);
        // A tenant allowed more than all of it still runs, alone.
        let all = b.take(1000, None).await.unwrap();
        assert_eq!(b.available_mb(), 0);
        drop(all);
    }
}
