//! The local runtime that the CLI and most tests use: a project folder with `deployment.json`,
//! `tenants/` and the embedded backend in `.native/`, and a drain loop that plays the part of
//! Lambda's SQS triggers.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use crate::config::{Deployment, DEPLOYMENT_FILE};
use crate::embedded::Embedded;
use crate::ports::{Message, QueueKind};
use crate::runtime::Runtime;
use crate::tenants::DirTenants;
use crate::{Error, Result};

/// A local project.
#[derive(Debug)]
pub struct Project {
    /// The project folder.
    pub root: PathBuf,
    /// Its deployment config.
    pub deployment: Deployment,
    /// The embedded backend in `.native/`.
    pub backend: Embedded,
    /// Its tenants.
    pub tenants: Arc<DirTenants>,
}

impl Project {
    /// Opens the project in `root`: reads `deployment.json` and opens `.native/`.
    pub fn open(root: &Path) -> Result<Self> {
        let file = root.join(DEPLOYMENT_FILE);
        let text = std::fs::read_to_string(&file).map_err(|e| {
            Error::config(
                DEPLOYMENT_FILE,
                "-",
                format!("cannot read {} ({e}); run `native init` to make a project, or pass --project DIR", file.display()),
            )
        })?;
        let deployment = Deployment::from_json(DEPLOYMENT_FILE, &text)?;
        let backend = Embedded::open(&root.join(".native"), deployment.notifying_buckets())?;
        // A damaged callback secret is said at once, not as "no callback secret" later.
        crate::callback::check_local_key(&root.join(".native"))?;
        // This process's now follows the project's clock (`native clock advance`), also when
        // another process moves it later.
        crate::clock::follow(&root.join(".native"))?;
        Ok(Project {
            root: root.to_path_buf(),
            deployment,
            backend,
            tenants: Arc::new(DirTenants::new(root)),
        })
    }

    /// A runtime over this project, signing callback URLs with the project's secret for
    /// `native serve`: at [`crate::callback::BASE_URL_VAR`], else at the address a running
    /// `native serve` of the project recorded ([`Project::record_served`]), else at its default
    /// address.
    pub fn runtime(&self) -> Runtime {
        let recorded = std::fs::read_to_string(self.root.join(".native").join(SERVED_FILE))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| {
                s.starts_with("http://") && s.len() <= 100 && !s.contains(char::is_whitespace)
            });
        self.runtime_with_base(recorded.as_deref().unwrap_or(DEFAULT_SERVED))
    }

    /// The project's recent runs, kept in its store, where the console of `native serve`
    /// reads them, whichever process ran them ([`crate::observe::recent`]): give it to a
    /// runtime with [`Runtime::with_recent`]. `served` for a server, which keeps its own in
    /// memory, flushes it every so often and saves it before it exits.
    pub fn recent(&self, served: bool) -> crate::observe::recent::Recent {
        let store = Arc::new(self.backend.clone());
        if served {
            crate::observe::recent::Recent::served(store)
        } else {
            crate::observe::recent::Recent::stored(store)
        }
    }

    /// Records the address `native serve` serves, so that callback URLs signed by other
    /// `native` processes on the project (`native invoke`, `native drain`) name it: a port
    /// picked with `--listen 127.0.0.1:0`, or another than the default. Written at start.
    pub fn record_served(&self, addr: std::net::SocketAddr) -> Result<()> {
        let path = self.root.join(".native").join(SERVED_FILE);
        std::fs::write(&path, served_base(addr) + "\n")
            .map_err(|e| crate::Error::config(format!(".native/{SERVED_FILE}"), "-", e))
    }

    /// Forgets the address [`Project::record_served`] recorded, when `native serve` stops: the
    /// verbs' URLs name the default address again.
    pub fn forget_served(&self) {
        let _ = std::fs::remove_file(self.root.join(".native").join(SERVED_FILE));
    }

    /// [`Project::runtime`] for `native serve` on `addr`: callback URLs name the address
    /// actually served (a port picked with `--listen 127.0.0.1:0` included), unless
    /// [`crate::callback::BASE_URL_VAR`] says otherwise. An unspecified address (`0.0.0.0`,
    /// `::`) is named by its loopback, which it serves too.
    pub fn runtime_served_at(&self, addr: std::net::SocketAddr) -> Runtime {
        self.runtime_with_base(&served_base(addr))
    }

    fn runtime_with_base(&self, default_base: &str) -> Runtime {
        let rt = Runtime::new(
            self.deployment.clone(),
            self.backend.backends(),
            self.tenants.clone(),
        );
        match crate::callback::local_key(&self.root.join(".native")).and_then(|key| {
            crate::callback::Signer::new(key, &crate::callback::base_url(default_base))
        }) {
            Ok(signer) => rt.with_callback(Arc::new(signer)),
            // Without a secret (an unwritable folder) callback URLs are refused with why.
            Err(_) => rt,
        }
    }
}

/// Where `native serve` records the address it serves ([`Project::record_served`]).
const SERVED_FILE: &str = "served-url";

/// `native serve`'s default address, which callback URLs name when none is recorded.
const DEFAULT_SERVED: &str = "http://127.0.0.1:8787";

/// The base URL of a served address; an unspecified address (`0.0.0.0`, `::`) is named by
/// its loopback, which it serves too.
fn served_base(addr: std::net::SocketAddr) -> String {
    let ip = match addr.ip() {
        std::net::IpAddr::V4(v4) if v4.is_unspecified() => std::net::Ipv4Addr::LOCALHOST.into(),
        std::net::IpAddr::V6(v6) if v6.is_unspecified() => std::net::Ipv6Addr::LOCALHOST.into(),
        ip => ip,
    };
    format!("http://{}", std::net::SocketAddr::new(ip, addr.port()))
}

/// One message that failed while draining.
#[derive(Debug, Clone)]
pub struct Failure {
    /// Which queue it came from.
    pub queue: QueueKind,
    /// Its delivery attempt (1 on first).
    pub attempt: u32,
    /// The message's id on its queue (on the embedded backend, ids grow as messages are sent:
    /// see [`Embedded::last_message_id`]).
    pub message_id: String,
    /// What failed.
    pub error: String,
}

/// What a drain did.
#[derive(Debug, Default)]
pub struct DrainReport {
    /// Messages handled and deleted.
    pub handled: u32,
    /// Messages that failed (each attempt counts).
    pub failures: Vec<Failure>,
    /// Messages that failed in this drain and wait for their retry, a visibility timeout
    /// later (a `wait` drain does not wait for those).
    pub retrying: usize,
}

/// How a drain behaves.
#[derive(Debug, Clone, Copy)]
pub struct DrainOptions {
    /// Also wait for delayed messages until nothing is left but retries of messages that
    /// failed (those come back after `retry_delay_s` on the project clock).
    pub wait: bool,
    /// Seconds before a failed message is retried: the queues' visibility timeout on AWS.
    pub retry_delay_s: u32,
    /// Give up waiting after this long.
    pub max_wait: Duration,
    /// Run the messages of a receive one after another, in the order received, instead of at
    /// once: `native test`, whose ids are drawn from one seeded generator, gets the same ids on
    /// every run only when the runs draw in the same order.
    pub one_at_a_time: bool,
}

impl Default for DrainOptions {
    fn default() -> Self {
        DrainOptions {
            wait: false,
            retry_delay_s: crate::ports::VISIBILITY_TIMEOUT_S,
            max_wait: Duration::from_secs(1800),
            one_at_a_time: false,
        }
    }
}

/// How long a drain holds a message it received: a short lease, extended every
/// [`LEASE_S`]/3 while the drain works on it. A message of a process that died is visible again
/// at the next receive of a live one (the embedded backend knows its owner is gone); one held
/// by a process that hangs, after this.
pub const LEASE_S: u32 = 30;

/// Fires the timers that are due (the part of the `tick` Lambda), then processes every due
/// message of both queues until none is due and no `job:http` of this
/// process is running (and, with `wait`, until nothing is left but messages received before:
/// retries of failed ones, or messages in flight in another process). Handled messages are
/// deleted; failed ones come back after `retry_delay_s`, as after SQS's visibility timeout, and
/// go to the dead-letter place after their fifth receive. The messages of one receive (up to
/// ten, of several tenants) run at once, each in a task of its own.
pub async fn drain(rt: &Arc<Runtime>, opts: DrainOptions) -> Result<DrainReport> {
    let q = rt.services.backends.queue.clone();
    let started = std::time::Instant::now();
    let mut report = DrainReport::default();
    // Messages that failed here and have not been received again since.
    let mut retrying = std::collections::HashSet::new();
    loop {
        // Schedules' due slots and timers go onto the work queue first (the part of the
        // `tick` Lambda).
        let scheduled = rt
            .tick_schedules(crate::schedule::TickOptions::local())
            .await;
        for error in &scheduled.errors {
            rt.services.log.write(&json!({
                "ts_ms": crate::ports::now_ms(), "level": "error",
                "msg": "firing schedules failed; a later tick fires them", "error": error,
            }));
        }
        let ticked = crate::runtime::tick(
            rt.services.backends.kv.as_ref(),
            q.as_ref(),
            rt.services.backends.objects.as_ref(),
            crate::timer::TickOptions::local(),
        )
        .await?;
        for error in &ticked.errors {
            rt.services.log.write(&json!({
                "ts_ms": crate::ports::now_ms(), "level": "error",
                "msg": "firing timers failed; a later tick fires them", "error": error,
            }));
        }
        let mut any = false;
        for kind in [QueueKind::Events, QueueKind::Work] {
            let received = q.receive(kind, 10, LEASE_S).await?;
            any |= !received.is_empty();
            let held = Arc::new(Lease::start(q.clone(), kind, &received));
            for m in &received {
                retrying.remove(&(kind, m.id.clone()));
            }
            // The pass's messages run at once, each in a task of its own (the tenant's
            // max_concurrent still holds: runs from the queue wait for their turn), so that
            // scripts use every core and their writes share commits; each run leaves its
            // sync to the pass, which syncs once for all of them below.
            let spawn = |m: &Message| {
                let (rt, held, m) = (rt.clone(), held.clone(), m.clone());
                // The run's future is kilobytes (the script's whole call in it): boxed
                // where it is made, so that the task moves a pointer, not the future.
                tokio::spawn(crate::ports::durability::caller_flushing(async move {
                    Box::pin(one(&rt, &opts, kind, &m, &held)).await
                }))
            };
            let mut runs = Vec::with_capacity(received.len());
            if opts.one_at_a_time {
                for m in &received {
                    runs.push(spawn(m).await);
                }
            } else {
                let started: Vec<_> = received.iter().map(spawn).collect();
                for run in started {
                    runs.push(run.await);
                }
            }
            let mut pass = Pass {
                rt,
                report: &mut report,
                handled: Vec::new(),
            };
            let (mut failed, mut give_back) = (None, Vec::new());
            for (m, run) in received.iter().zip(runs) {
                match run {
                    Ok(Ok(Outcome::Handled)) => pass.handled.push(m.receipt.clone()),
                    Ok(Ok(Outcome::Failed(f))) => {
                        if f.retrying {
                            retrying.insert((kind, m.id.clone()));
                        }
                        pass.report.failures.push(f.failure);
                    }
                    // The queue could not record the message's fate: it is given back below.
                    Ok(Err(e)) => {
                        failed.get_or_insert(e);
                        give_back.push(m.receipt.clone());
                    }
                    Err(e) => {
                        failed.get_or_insert(Error::Backend {
                            backend: "queue",
                            message: format!("the run of a message failed: {e}"),
                            source: None,
                        });
                        give_back.push(m.receipt.clone());
                    }
                }
            }
            let (delete_error, undeleted) = pass.flush_and_delete_handled(kind, &held).await;
            drop(held);
            if let Some(e) = failed.or(delete_error) {
                // Give back what this pass could not finish, or could not record as handled,
                // so that it is not held until its lease lapses.
                for receipt in give_back.iter().chain(undeleted.iter()) {
                    let _ = q.hold(kind, receipt, 0).await;
                }
                return Err(e);
            }
        }
        report.retrying = retrying.len();
        if any {
            continue;
        }
        // job:http requests live only in this process: their done.json is work still to come.
        if let Some(jobs) = rt.services.http_jobs.as_ref().filter(|j| j.running() > 0) {
            let _ = tokio::time::timeout(Duration::from_millis(100), jobs.wait_idle()).await;
            continue;
        }
        if !opts.wait || started.elapsed() > opts.max_wait {
            return Ok(report);
        }
        let (e, w) = (
            q.stats(QueueKind::Events).await?,
            q.stats(QueueKind::Work).await?,
        );
        // Retries come a visibility timeout later: waiting for them is for the clock
        // (`native clock advance`), not for this drain; delayed messages are waited for.
        let delayed =
            (e.waiting - e.received.min(e.waiting)) + (w.waiting - w.received.min(w.waiting));
        if e.visible + w.visible + delayed == 0 {
            return Ok(report);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Keeps the messages a drain pass received hidden while it works on them: every
/// [`LEASE_S`]/3 their lease is extended, until the pass drops this.
struct Lease {
    task: Option<tokio::task::JoinHandle<()>>,
    left: Arc<std::sync::Mutex<Vec<String>>>,
}

impl Lease {
    fn start(q: Arc<dyn crate::ports::Queue>, kind: QueueKind, received: &[Message]) -> Lease {
        let left = Arc::new(std::sync::Mutex::new(
            received
                .iter()
                .map(|m| m.receipt.clone())
                .collect::<Vec<_>>(),
        ));
        if received.is_empty() {
            return Lease { task: None, left };
        }
        let held = left.clone();
        // Weak: an aborted task is dropped when its worker next gets to it, and until then it
        // must not keep the backend (its files, its writer thread) open after the drain ended.
        let q = Arc::downgrade(&q);
        let task = tokio::spawn(async move {
            let every = Duration::from_secs(u64::from(LEASE_S / 3));
            loop {
                tokio::time::sleep(every).await;
                let Some(q) = q.upgrade() else { return };
                let receipts = held.lock().unwrap_or_else(|p| p.into_inner()).clone();
                for r in receipts {
                    // A receipt that is gone was handled meanwhile.
                    let _ = q.hold(kind, &r, LEASE_S).await;
                }
            }
        });
        Lease {
            task: Some(task),
            left,
        }
    }

    /// The message of `receipt` is no longer held by this pass.
    fn done(&self, receipt: &str) {
        self.left
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .retain(|r| r != receipt);
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(t) = self.task.take() {
            t.abort();
        }
    }
}

/// One drain pass over received messages: what it handled, deleted together at its end.
struct Pass<'a> {
    rt: &'a Runtime,
    report: &'a mut DrainReport,
    /// The receipts of the messages handled, deleted together at the pass's end.
    handled: Vec<String>,
}

/// What became of one message of a pass.
enum Outcome {
    /// Its run succeeded: deleted at the pass's end.
    Handled,
    /// Its run failed: it comes back later, or went to the dead letters.
    Failed(Box<Failed>),
}

struct Failed {
    failure: Failure,
    /// It comes back after the retry delay.
    retrying: bool,
}

impl Pass<'_> {
    /// Makes the writes of the runs this pass handled durable, with one sync for all of them
    /// (they left it to the pass: see [`crate::ports::durability::caller_flushing`]), then
    /// deletes their messages together ([`crate::ports::Queue::delete_many`]: one commit on the
    /// embedded backend, a request per ten on SQS). Until then the pass's
    /// lease keeps them hidden; a crash before this delivers them once more, which
    /// at-least-once allows. A failed sync deletes none of them: they run again.
    /// Returns the first error and the receipts not deleted.
    async fn flush_and_delete_handled(
        &mut self,
        kind: QueueKind,
        lease: &Lease,
    ) -> (Option<Error>, Vec<String>) {
        if self.handled.is_empty() {
            return (None, Vec::new());
        }
        if let Err(e) = self.rt.services.backends.flush().await {
            let undeleted = std::mem::take(&mut self.handled);
            for receipt in &undeleted {
                lease.done(receipt);
            }
            return (Some(e), undeleted);
        }
        let handled = std::mem::take(&mut self.handled);
        let each = self
            .rt
            .services
            .backends
            .queue
            .delete_many(kind, &handled)
            .await;
        let (mut first_error, mut undeleted) = (None, Vec::new());
        for (receipt, r) in handled.into_iter().zip(each) {
            lease.done(&receipt);
            match r {
                Ok(()) => self.report.handled += 1,
                Err(e) => {
                    first_error.get_or_insert(e);
                    undeleted.push(receipt);
                }
            }
        }
        (first_error, undeleted)
    }
}

/// Processes one received message of a pass: deleted when handled (at the pass's end), retried
/// later when it failed. An error is the queue's (the message's fate could not be recorded).
async fn one(
    rt: &Runtime,
    opts: &DrainOptions,
    kind: QueueKind,
    m: &Message,
    lease: &Lease,
) -> Result<Outcome> {
    let q = &rt.services.backends.queue;
    let r = match process(rt, kind, m).await {
        Ok(()) => return Ok(Outcome::Handled),
        Err(e) => e,
    };
    let error = r.to_string();
    let failure = Failure {
        queue: kind,
        attempt: m.receive_count,
        message_id: m.id.clone(),
        error: error.clone(),
    };
    // A breach of the chain's width fails the same way every time: it goes to the dead
    // letters at once, as on AWS.
    if crate::host::chain::breached_width(&r)
        && q.dead_letter_now(kind, &m.body, &error).await.is_ok()
    {
        let d = q.delete(kind, &m.receipt).await;
        lease.done(&m.receipt);
        d?;
        let (tenant, trace) = rt.owner_of_message(kind, &m.body).await;
        rt.services.log.write(&json!({
            "ts_ms": crate::ports::now_ms(), "level": "error",
            "msg": "message breached its chain's width; it is a dead letter now",
            "queue": kind.name(), "attempt": m.receive_count, "tenant": tenant, "error": error,
            "trace": trace,
        }));
        return Ok(Outcome::Failed(Box::new(Failed {
            failure,
            retrying: false,
        })));
    }
    // After the last attempt there is nothing to wait for: the next receive moves it to the
    // dead letters (on SQS, its redrive policy).
    let last = m.receive_count >= crate::ports::MAX_RECEIVES;
    let msg = if last {
        "message failed on its last attempt; it is a dead letter now"
    } else {
        "message failed; it will be retried after the visibility timeout"
    };
    let (tenant, trace) = rt.owner_of_message(kind, &m.body).await;
    rt.services.log.write(&json!({
        "ts_ms": crate::ports::now_ms(), "level": "error", "msg": msg,
        "queue": kind.name(), "attempt": m.receive_count, "tenant": tenant, "error": error,
        "trace": trace,
    }));
    let delay = if last { 0 } else { opts.retry_delay_s };
    let r = q.retry_later(kind, &m.receipt, delay, &error).await;
    lease.done(&m.receipt);
    r?;
    Ok(Outcome::Failed(Box::new(Failed {
        failure,
        retrying: !last,
    })))
}

async fn process(rt: &Runtime, kind: QueueKind, m: &Message) -> Result<()> {
    match kind {
        QueueKind::Events => rt
            .handle_event_message(&m.body, m.receive_count)
            .await
            .map(|_| ()),
        QueueKind::Work => rt.handle_work_message(&m.body, m.receive_count).await,
    }
}
