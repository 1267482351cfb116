//! `job:http` in the background: a long-running process (the Fargate server, `native serve`,
//! the CLI) performs a submitted job's requests after the invocation has ended, several at once,
//! within each tenant's `http.concurrency`, then stores each body as
//! `jobs/<job>/<name>.0000.body` and writes `done.json` last, which wakes the continuation as
//! a partner's would. The requests live only in this process's memory (vault values
//! included); on a stop every running job is answered `ok = false` ("server stopping").

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::{watch, Notify, Semaphore};

use super::{perform, HttpError, Policy, Spec};
use crate::batch::manifest::{Dataset, Done, Part, MAX_INLINE_BYTES};
use crate::observe::LogSink;
use crate::ports::{Backends, PutMode};

/// How long a request waits for its tenant's slot before it fails.
pub const SLOT_WAIT: Duration = Duration::from_secs(3600);

/// The longest a background request may take once it has its slot.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(900);

/// The error of a request cut off by a stop.
pub const STOPPING: &str = "server stopping";

/// One request of a job.
#[derive(Debug, Clone)]
pub struct JobRequest {
    /// Its name in the job (the result's name).
    pub name: String,
    /// What to send.
    pub spec: Spec,
    /// Its timeout: `timeout_s`, at most [`REQUEST_TIMEOUT`].
    pub timeout: Duration,
}

/// A submitted job with requests.
#[derive(Debug, Clone)]
pub struct HttpJob {
    /// The tenant.
    pub tenant: String,
    /// Its `http.concurrency`.
    pub concurrency: u32,
    /// The job id.
    pub job: String,
    /// The real batch bucket.
    pub bucket: String,
    /// The full key of the job's folder, ending in `/`.
    pub dir: String,
    /// The chain depth of the objects written (one more than the submitting script).
    pub depth: u32,
    /// The submitting script's chain (`ctx.trace`), which `done.json`'s event continues.
    pub trace: String,
    /// The requests.
    pub requests: Vec<JobRequest>,
    /// What the requests may reach and read.
    pub policy: Policy,
}

/// The background performer of one process.
#[derive(Debug)]
pub struct HttpJobs {
    /// Per tenant: its semaphore and the concurrency it was made for.
    slots: Mutex<HashMap<String, (Arc<Semaphore>, usize)>>,
    running: AtomicUsize,
    idle: Notify,
    stop: watch::Sender<bool>,
    slot_wait: Duration,
}

impl Default for HttpJobs {
    fn default() -> Self {
        HttpJobs {
            slots: Mutex::new(HashMap::new()),
            running: AtomicUsize::new(0),
            idle: Notify::new(),
            stop: watch::channel(false).0,
            slot_wait: SLOT_WAIT,
        }
    }
}

impl HttpJobs {
    /// A performer with no jobs.
    pub fn new() -> Self {
        Self::default()
    }

    /// The same performer with another wait for a slot than [`SLOT_WAIT`] (tests use a short
    /// one rather than waiting an hour).
    pub fn with_slot_wait(self, wait: Duration) -> Self {
        HttpJobs {
            slot_wait: wait,
            ..self
        }
    }

    /// Jobs started and not yet finished (their `done.json` not yet written).
    pub fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Whether [`Self::stop`] was called: new jobs are refused.
    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }

    /// The tenant's slots; a changed `http.concurrency` takes effect for new requests.
    fn slots(&self, tenant: &str, concurrency: u32) -> Arc<Semaphore> {
        let mut m = self.slots.lock().unwrap_or_else(|p| p.into_inner());
        let want = concurrency.max(1) as usize;
        match m.get(tenant) {
            Some((s, n)) if *n == want => s.clone(),
            _ => {
                let s = Arc::new(Semaphore::new(want));
                m.insert(tenant.to_string(), (s.clone(), want));
                s
            }
        }
    }

    /// Starts a job on `handle`: its requests run concurrently within the tenant's slots, then
    /// its bodies and `done.json` are written through `backends`.
    pub fn start(
        self: &Arc<Self>,
        handle: &tokio::runtime::Handle,
        backends: Backends,
        log: Arc<dyn LogSink>,
        job: HttpJob,
    ) {
        self.running.fetch_add(1, Ordering::SeqCst);
        let me = self.clone();
        handle.spawn(async move {
            let (ok, error) = me.run(&backends, &job).await;
            log.write(&json!({
                "ts_ms": crate::ports::now_ms(), "level": if ok { "info" } else { "warn" },
                "msg": "job:http finished", "tenant": job.tenant, "job": job.job, "ok": ok,
                "error": error,
            }));
            if me.running.fetch_sub(1, Ordering::SeqCst) == 1 {
                me.idle.notify_waiters();
            }
        });
    }

    /// Waits until no job is running.
    pub async fn wait_idle(&self) {
        while self.running() > 0 {
            let notified = self.idle.notified();
            if self.running() == 0 {
                return;
            }
            let _ = tokio::time::timeout(Duration::from_millis(200), notified).await;
        }
    }

    /// Fails every running request with [`STOPPING`] and waits at most `grace` for their jobs
    /// to write `done.json`. Returns whether all did.
    pub async fn stop(&self, grace: Duration) -> bool {
        let _ = self.stop.send(true);
        tokio::time::timeout(grace, self.wait_idle()).await.is_ok()
    }

    async fn run(&self, backends: &Backends, job: &HttpJob) -> (bool, Option<String>) {
        let mut set = tokio::task::JoinSet::new();
        for (i, r) in job.requests.iter().enumerate() {
            let slots = self.slots(&job.tenant, job.concurrency);
            let mut stop = self.stop.subscribe();
            let vault = backends.vault.clone();
            let (tenant, policy, concurrency) = (job.tenant.clone(), job.policy, job.concurrency);
            let r = r.clone();
            let wait = self.slot_wait;
            set.spawn(async move {
                let slot = Slot {
                    slots,
                    concurrency,
                    wait,
                };
                let out = tokio::select! {
                    out = one(&r, &tenant, vault.as_ref(), policy, slot) => out,
                    _ = stop.wait_for(|s| *s) => Err(STOPPING.to_string()),
                };
                (i, out)
            });
        }
        let mut outs: Vec<Option<Result<super::Response, String>>> = vec![None; job.requests.len()];
        while let Some(done) = set.join_next().await {
            if let Ok((i, out)) = done {
                outs[i] = Some(out);
            }
        }
        let mut results = BTreeMap::new();
        let mut errors = Vec::new();
        let mut inline_left = MAX_INLINE_BYTES;
        for (r, out) in job.requests.iter().zip(outs) {
            let out = out.unwrap_or_else(|| Err("the request's task failed".into()));
            match out {
                Ok(resp) => match store(backends, job, &r.name, resp, &mut inline_left).await {
                    Ok(d) => {
                        results.insert(r.name.clone(), d);
                    }
                    Err(e) => {
                        errors.push(format!("{}: the response could not be stored: {e}", r.name))
                    }
                },
                Err(e) => errors.push(format!("{}: {e}", r.name)),
            }
        }
        let error = (!errors.is_empty()).then(|| errors.join("; "));
        let done = Done {
            ok: errors.is_empty(),
            error: error.clone(),
            results,
        };
        let text = serde_json::to_vec_pretty(&done).unwrap_or_default();
        let key = format!("{}done.json", job.dir);
        if let Err(e) = backends
            .objects
            .put_in_chain(
                &job.bucket,
                &key,
                Bytes::from(text),
                PutMode::Overwrite,
                job.depth,
                Some(&job.trace),
            )
            .await
        {
            return (false, Some(format!("done.json could not be written: {e}")));
        }
        (done.ok, error)
    }
}

/// A tenant's slots, how many there are, and how long to wait for one.
struct Slot {
    slots: Arc<Semaphore>,
    concurrency: u32,
    wait: Duration,
}

/// Performs one request: waits for a slot, then sends it within its timeout.
async fn one(
    r: &JobRequest,
    tenant: &str,
    vault: &dyn crate::ports::Vault,
    policy: Policy,
    slot: Slot,
) -> Result<super::Response, String> {
    let _permit = match tokio::time::timeout(slot.wait, slot.slots.acquire_owned()).await {
        Ok(Ok(p)) => p,
        _ => {
            return Err(format!(
                "waited {} ms for a slot (the tenant's http.concurrency is {}) and got none",
                slot.wait.as_millis(),
                slot.concurrency
            ))
        }
    };
    match tokio::time::timeout(r.timeout, perform(&r.spec, tenant, vault, policy)).await {
        Ok(Ok(resp)) => Ok(resp),
        Ok(Err(HttpError::Failed(super::Failure::TooLarge(max)))) => Err(format!(
            "limit max_http_response_mb exceeded: the response from {} is larger than {} MB",
            r.spec.target.host,
            max / (1024 * 1024)
        )),
        Ok(Err(e)) => Err(e.to_string()),
        Err(_) => Err(format!(
            "no response from {} within {} s",
            r.spec.target.host,
            r.timeout.as_secs()
        )),
    }
}

/// Returns a response's entry in `done.json`: its body inline (`Part::data`) when it is text
/// and fits in what `done.json` may still take (`inline_left`), else written as
/// `<name>.0000.body` (one PUT, and one GET for the continuation, more).
async fn store(
    backends: &Backends,
    job: &HttpJob,
    name: &str,
    resp: super::Response,
    inline_left: &mut u64,
) -> crate::Result<Dataset> {
    let key = format!("{name}.0000.body");
    let sha = hex::encode(Sha256::digest(&resp.body));
    let bytes = resp.body.len() as u64;
    let data = match String::from_utf8(resp.body) {
        Ok(text) if bytes <= *inline_left => {
            *inline_left -= bytes;
            Some(text)
        }
        Ok(text) => {
            put_body(backends, job, &key, text.into_bytes()).await?;
            None
        }
        Err(e) => {
            put_body(backends, job, &key, e.into_bytes()).await?;
            None
        }
    };
    let mut headers = serde_json::Map::new();
    for (k, v) in resp.headers {
        let v = String::from_utf8_lossy(&v).into_owned();
        let joined = match headers.get(&k).and_then(Value::as_str) {
            Some(prev) => format!("{prev}, {v}"),
            None => v,
        };
        headers.insert(k, Value::String(joined));
    }
    let mut extra = BTreeMap::new();
    extra.insert("status".to_string(), json!(resp.status));
    extra.insert("headers".to_string(), Value::Object(headers));
    Ok(Dataset {
        rows: None,
        parts: vec![Part {
            key,
            bytes: Some(bytes),
            sha256: Some(sha),
            data,
        }],
        extra,
    })
}

/// Writes a body that does not go inline as the job's object `key`.
async fn put_body(
    backends: &Backends,
    job: &HttpJob,
    key: &str,
    body: Vec<u8>,
) -> crate::Result<()> {
    backends
        .objects
        .put_in_chain(
            &job.bucket,
            &format!("{}{key}", job.dir),
            Bytes::from(body),
            PutMode::Overwrite,
            job.depth,
            Some(&job.trace),
        )
        .await?;
    Ok(())
}
