//! The fake world of one test: the project's deployment, tenant config and scripts over an
//! empty embedded store in a temporary folder, the clock frozen at [`START_MS`], ids drawn
//! from a generator seeded for the test, outbound HTTP answered by the test's stubs, and the
//! runs' log records kept in memory. Everything a test does goes through the same core
//! functions as the CLI's verbs (`invoke`, `send`, `put`, `drain`, `partner`, `clock advance`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use native_core::config::Deployment;
use native_core::embedded::Embedded;
use native_core::local::{drain, DrainOptions};
use native_core::observe::LogSink;
use native_core::outbound::client::{Intercept, Request};
use native_core::outbound::{Failure, Response};
use native_core::ports::{QueueKind, WorkMessage};
use native_core::runtime::Runtime;
use native_core::tenants::DirTenants;
use native_core::Error;
use serde_json::{json, Value};

/// Where every test's clock starts: 2026-01-01T00:00:00Z.
pub const START_MS: i64 = 1_767_225_600_000;

/// The most log records a world keeps (later ones are counted, not kept).
const MAX_LOG_RECORDS: usize = 10_000;

/// The most outbound requests a world records.
const MAX_REQUESTS: usize = 10_000;

/// What a test's world shares with the rest of the run: the project, read once.
pub struct Shared {
    /// The project folder.
    pub root: PathBuf,
    /// Its deployment config.
    pub deployment: Deployment,
    /// Its tenants, read from the project's folder (scripts and config only: their state is
    /// each world's own).
    pub tenants: Arc<DirTenants>,
    /// The engine: its VM pools serve every world, as they serve every invocation of a process
    /// (each run gets fresh globals).
    pub engine: Arc<native_core::engine::Engine>,
    /// The async runtime the worlds' work runs on.
    pub handle: tokio::runtime::Handle,
}

/// One test's world.
pub struct World {
    /// The tenant under test.
    pub tenant: String,
    shared: Arc<Shared>,
    rt: Arc<Runtime>,
    log: Arc<Records>,
    stubs: Arc<Stubs>,
    /// The tenant's API key for `t:http`, made at its first use.
    api_key: Mutex<Option<String>>,
    // Dropped last: the store's files.
    _backend: Embedded,
    _dir: tempfile::TempDir,
}

/// A failure inside the world, as the test sees it.
pub type Result<T> = std::result::Result<T, String>;

fn err(e: Error) -> String {
    e.to_string()
}

/// A folder in memory where there is one (a test's store is thrown away: its syncs need not
/// reach a disk), else the system's temporary folder.
fn temp_dir() -> std::io::Result<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    if std::env::var_os("TMPDIR").is_none() && shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("native-test")
            .tempdir_in(shm)
        {
            return Ok(d);
        }
    }
    tempfile::Builder::new().prefix("native-test").tempdir()
}

impl World {
    /// A fresh world for `tenant`: an empty store, the clock at [`START_MS`], the ids of
    /// `seed`, no stubs. Process-wide settings (clock, ids, outbound HTTP) are this world's
    /// until the next is made: tests run one at a time.
    pub fn new(shared: Arc<Shared>, tenant: &str, seed: u64) -> Result<World> {
        let dir = temp_dir().map_err(|e| format!("cannot make a temporary folder: {e}"))?;
        let backend =
            Embedded::open(dir.path(), shared.deployment.notifying_buckets()).map_err(err)?;
        native_core::ports::freeze_clock(Some(START_MS));
        native_core::ports::set_clock_offset_ms(0);
        native_core::random::seed(Some(seed));
        let stubs = Arc::new(Stubs::default());
        native_core::outbound::client::intercept(Some(stubs.clone()));
        let log = Arc::new(Records::default());
        let mut rt = Runtime::new(
            shared.deployment.clone(),
            backend.backends(),
            shared.tenants.clone(),
        )
        .with_log(log.clone())
        .with_http_jobs();
        // The callback key comes from the test's seed too: its callback URLs are the same on
        // every run.
        let key: Vec<u8> = [native_core::random::u128(), native_core::random::u128()]
            .iter()
            .flat_map(|n| n.to_be_bytes())
            .collect();
        if let Ok(signer) = native_core::callback::Signer::new(key, "http://127.0.0.1:8787") {
            rt = rt.with_callback(Arc::new(signer));
        }
        rt.engine = shared.engine.clone();
        Ok(World {
            tenant: tenant.to_string(),
            shared,
            rt: Arc::new(rt),
            log,
            stubs,
            api_key: Mutex::new(None),
            _backend: backend,
            _dir: dir,
        })
    }

    fn block_on<F: std::future::Future>(&self, f: F) -> F::Output {
        self.shared.handle.block_on(f)
    }

    /// The tenant's folder in the project, for messages.
    fn scripts_dir(&self) -> String {
        format!("tenants/{}/scripts", self.tenant)
    }

    /// Runs `on_invoke` of `script` and nothing else; its value.
    pub fn invoke(&self, script: &str, event: Value) -> Result<Value> {
        let trace = native_core::observe::new_trace();
        let run = self.rt.invoke(&self.tenant, script, event);
        self.block_on(native_core::observe::in_context(
            |c| c.chain = Some(trace),
            run,
        ))
        .map_err(|e| self.name_scripts(&e.to_string()))
    }

    /// `text` with each script's `name.luau:LINE` named by its path in the project
    /// (`tenants/<tenant>/scripts/name.luau:LINE`), so that a failure points at the file.
    pub fn name_scripts(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 32);
        let mut rest = text;
        while let Some(i) = rest.find(".luau:") {
            let before = &rest[..i];
            let start = before
                .rfind(|c: char| !(c.is_ascii_alphanumeric() || "_-./".contains(c)))
                .map_or(0, |j| j + 1);
            let name = &before[start..];
            out.push_str(&before[..start]);
            let line = rest[i + 6..].starts_with(|c: char| c.is_ascii_digit());
            if line && !name.is_empty() && !name.starts_with("tenants/") {
                out.push_str(&self.scripts_dir());
                out.push('/');
            }
            out.push_str(name);
            out.push_str(".luau:");
            rest = &rest[i + 6..];
        }
        out.push_str(rest);
        out
    }

    /// Queues a message for `on_queue` of `script`, as `native send` does.
    pub fn send(&self, script: &str, event: Value, delay_s: u32) -> Result<()> {
        if delay_s > native_core::ports::MAX_DELAY_S {
            return Err(format!(
                "delay_s {delay_s} is above the maximum of {} s",
                native_core::ports::MAX_DELAY_S
            ));
        }
        let t = self
            .block_on(self.rt.tenants.load(&self.tenant))
            .map_err(err)?;
        t.script(script).map_err(err)?;
        let body = serde_json::to_string(&WorkMessage {
            tenant: self.tenant.clone(),
            script: script.into(),
            event,
            depth: 0,
            width: None,
            chain: Some(native_core::observe::new_trace()),
            once: None,
            slot: None,
        })
        .map_err(|e| e.to_string())?;
        self.block_on(
            self.rt
                .services
                .backends
                .queue
                .send(QueueKind::Work, body, delay_s),
        )
        .map_err(err)
    }

    /// Writes an object as an outside party would: its notification is queued.
    pub fn put(&self, bucket: &str, key: &str, body: Vec<u8>) -> Result<()> {
        self.block_on(
            self.rt
                .put_object(&self.tenant, bucket, key, Bytes::from(body)),
        )
        .map_err(err)
    }

    /// An object's content, `None` when absent.
    pub fn get(&self, bucket: &str, key: &str) -> Result<Option<Vec<u8>>> {
        let (real, full) = self.rt.locate(&self.tenant, bucket, key).map_err(err)?;
        let got = self
            .block_on(self.rt.services.backends.objects.get(&real, &full))
            .map_err(err)?;
        Ok(got.map(|(_, data)| data.to_vec()))
    }

    /// The keys under `prefix` of a bucket of the tenant, relative to its folder, in order.
    pub fn list(&self, bucket: &str, prefix: &str) -> Result<Vec<String>> {
        native_core::keys::check_prefix(prefix)?;
        let (real, _) = self.rt.locate(&self.tenant, bucket, "x").map_err(err)?;
        let folder = self
            .rt
            .services
            .deployment
            .full_key(bucket, &self.tenant, "");
        let full_prefix = format!("{folder}{prefix}");
        let mut keys = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .block_on(self.rt.services.backends.objects.list(
                    &real,
                    &full_prefix,
                    after.as_deref(),
                    1000,
                ))
                .map_err(err)?;
            keys.extend(
                page.objects
                    .iter()
                    .map(|o| o.key[folder.len()..].to_string()),
            );
            match page.next {
                Some(n) => after = Some(n),
                None => return Ok(keys),
            }
        }
    }

    /// Fires due timers and runs due messages until none is left: what it handled, and each
    /// failure.
    pub fn drain(&self) -> Result<Value> {
        let r = self
            .block_on(drain(
                &self.rt,
                DrainOptions {
                    one_at_a_time: true,
                    ..Default::default()
                },
            ))
            .map_err(err)?;
        let failures: Vec<Value> = r
            .failures
            .iter()
            .map(|f| json!({ "queue": f.queue.name(), "attempt": f.attempt, "error": self.name_scripts(&f.error) }))
            .collect();
        Ok(json!({ "handled": r.handled, "failures": failures }))
    }

    /// Moves the clock on by `duration` (`90s`, `2h`, `3d`); the new now, in ms.
    pub fn advance(&self, duration: &str) -> Result<i64> {
        let ms = native_core::clock::parse_duration(duration)?;
        let offset = native_core::ports::clock_offset_ms().saturating_add(ms);
        if offset > native_core::clock::MAX_OFFSET_MS {
            return Err(format!(
                "the clock would be {} days past the start; ten years is the most",
                offset / 86_400_000
            ));
        }
        native_core::ports::set_clock_offset_ms(offset);
        Ok(native_core::ports::now_ms())
    }

    /// Calls the HTTP API as a caller would: `path` is the request's path (and query), or a
    /// whole URL such as a callback URL. Without an `authorization` header, the tenant's API
    /// key is sent.
    pub fn http(
        &self,
        method: &str,
        path: &str,
        body: Vec<u8>,
        headers: Vec<(String, String)>,
    ) -> Result<Value> {
        use tower::Service;
        let path = match path.find("://") {
            Some(i) => {
                let rest = &path[i + 3..];
                rest.find('/').map_or("/", |j| &rest[j..])
            }
            None => path,
        };
        let mut req = axum::http::Request::builder().method(method).uri(path);
        let mut authorized = false;
        for (k, v) in &headers {
            authorized |= k.eq_ignore_ascii_case("authorization");
            req = req.header(k.as_str(), v.as_str());
        }
        if !authorized {
            req = req.header("authorization", format!("Bearer {}", self.api_key()?));
        }
        let req = req
            .body(axum::body::Body::from(body))
            .map_err(|e| format!("t:http({method:?}, {path:?}): {e}"))?;
        let mut router = native_core::inbound::router(self.rt.clone());
        self.block_on(async move {
            let resp = router.call(req).await.map_err(|e| format!("t:http: {e}"))?;
            let status = resp.status().as_u16();
            let mut headers = serde_json::Map::new();
            for (k, v) in resp.headers() {
                headers.insert(
                    k.as_str().to_string(),
                    json!(String::from_utf8_lossy(v.as_bytes())),
                );
            }
            let bytes = http_body_util::BodyExt::collect(resp.into_body())
                .await
                .map_err(|e| format!("t:http: the body: {e}"))?
                .to_bytes();
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut out = json!({ "status": status, "headers": headers, "body": text });
            if let Ok(v) = serde_json::from_slice::<Value>(&bytes) {
                out["json"] = v;
            }
            Ok(out)
        })
    }

    fn api_key(&self) -> Result<String> {
        let mut key = self.api_key.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = key.as_ref() {
            return Ok(k.clone());
        }
        let made = self
            .block_on(native_core::api_keys::create(
                self.rt.services.backends.kv.as_ref(),
                &self.tenant,
                "native test",
            ))
            .map_err(err)?;
        *key = Some(made.key.clone());
        Ok(made.key)
    }

    /// The tenant's pending batch requests, in job id order.
    pub fn pending(&self) -> Result<Vec<native_core::batch::manifest::Request>> {
        self.block_on(native_core::batch::partner::pending(
            self.rt.services.backends.objects.as_ref(),
            &self.rt.services.deployment,
            &self.tenant,
        ))
        .map_err(err)
    }

    /// Answers one pending request from `source`, as `native partner` does.
    pub fn answer(
        &self,
        request: &native_core::batch::manifest::Request,
        source: native_core::batch::partner::Source,
    ) -> Result<Value> {
        let opts = native_core::batch::partner::Options::new(source);
        let a = self
            .block_on(native_core::batch::partner::answer(
                self.rt.services.backends.objects.as_ref(),
                &self.rt.services.deployment,
                &self.tenant,
                request,
                &opts,
            ))
            .map_err(err)?;
        Ok(json!({ "job": a.job, "ok": a.done.ok, "error": a.done.error, "rows": a.rows() }))
    }

    /// A path given by a test, relative to the project folder.
    pub fn project_path(&self, path: &str) -> PathBuf {
        self.shared.root.join(path)
    }

    /// Answers the requests to `host` whose path is `path` (or starts with it, when it ends in
    /// `*`) with `response`, in place of the network.
    pub fn stub(&self, host: &str, path: &str, response: Response) {
        self.stubs
            .routes
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((host.to_ascii_lowercase(), path.to_string(), response));
    }

    /// The outbound requests made so far, as the remote end saw them (the vault's values
    /// filled in), oldest first; only those to `host` when given.
    pub fn requests(&self, host: Option<&str>) -> Vec<Value> {
        let seen = self.stubs.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.iter()
            .filter(|r| host.is_none_or(|h| r["host"].as_str() == Some(h)))
            .cloned()
            .collect()
    }

    /// Sets a secret of the tenant's vault.
    pub fn vault(&self, name: &str, value: &str) -> Result<()> {
        let secret = native_core::ports::Secret::new(value.to_string());
        self.block_on(
            self.rt
                .services
                .backends
                .vault
                .set(&self.tenant, name, &secret),
        )
        .map_err(err)
    }

    /// An item of the tenant's `native.db`, decoded.
    pub fn db(&self, partition: &str, key: &str) -> Result<Option<Value>> {
        let pk = native_core::host::db_pk(&self.tenant, partition);
        let item = self
            .block_on(self.rt.services.backends.kv.get(&pk, key))
            .map_err(err)?;
        item.map(|i| serde_json::from_str(&i.value).map_err(|e| format!("db item {key:?}: {e}")))
            .transpose()
    }

    /// A barrier's status (its first 1000 members), `None` when there is no such barrier.
    pub fn barrier(&self, id: &str) -> Result<Option<Value>> {
        let t = self
            .block_on(self.rt.tenants.load(&self.tenant))
            .map_err(err)?;
        let backends = &self.rt.services.backends;
        let calls = Unlimited;
        let b = native_core::barrier::Barriers {
            kv: backends.kv.as_ref(),
            queue: backends.queue.as_ref(),
            tenant: &t.name,
            queue_enabled: t.config.queue,
            budget: &calls,
        };
        let s = self.block_on(b.status(id, None, 1000)).map_err(err)?;
        Ok(s.map(|s| serde_json::to_value(s).unwrap_or(Value::Null)))
    }

    /// The tenant's batch jobs with their state.
    pub fn jobs(&self) -> Result<Vec<Value>> {
        let jobs = self
            .block_on(native_core::batch::jobs::list(
                self.rt.services.backends.objects.as_ref(),
                &self.rt.services.deployment,
                &self.tenant,
                native_core::ports::now_ms(),
            ))
            .map_err(err)?;
        Ok(jobs
            .iter()
            .map(|j| serde_json::to_value(j).unwrap_or(Value::Null))
            .collect())
    }

    /// The tenant's pending timers, in due order.
    pub fn timers(&self) -> Result<Vec<Value>> {
        let calls = Unlimited;
        let timers = native_core::timer::Timers {
            kv: self.rt.services.backends.kv.as_ref(),
            tenant: &self.tenant,
            budget: &calls,
        };
        let (page, _) = self.block_on(timers.list(None, 1000)).map_err(err)?;
        Ok(page
            .iter()
            .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
            .collect())
    }

    /// The dead letters of both queues.
    pub fn dead_letters(&self) -> Result<Vec<Value>> {
        let q = &self.rt.services.backends.queue;
        let mut out = Vec::new();
        for kind in [QueueKind::Events, QueueKind::Work] {
            for d in self.block_on(q.dead_letters(kind, 1000)).map_err(err)? {
                let body = serde_json::from_str(&d.body).unwrap_or(Value::String(d.body));
                out.push(json!({
                    "queue": kind.name(), "receives": d.receive_count,
                    "error": d.last_error, "body": body,
                }));
            }
        }
        Ok(out)
    }

    /// The log records of the runs so far (`native.log` lines and the runtime's own).
    pub fn logs(&self) -> Vec<Value> {
        self.log
            .kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

impl Drop for World {
    fn drop(&mut self) {
        // Nothing of this test reaches the next: its stubs go now (the clock and the ids are
        // set again by the next world).
        native_core::outbound::client::intercept(None);
        if let Some(jobs) = &self.rt.services.http_jobs {
            self.shared.handle.block_on(jobs.wait_idle());
        }
    }
}

/// Tools are not scripts: no data-ops limit.
struct Unlimited;

impl native_core::budget::Budget for Unlimited {
    fn spend(&self, _calls: u32) -> native_core::Result<()> {
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

/// The log records of a world's runs, in memory.
#[derive(Debug, Default)]
struct Records {
    kept: Mutex<Vec<Value>>,
}

impl LogSink for Records {
    fn write(&self, record: &Value) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        if kept.len() < MAX_LOG_RECORDS {
            kept.push(record.clone());
        }
    }
}

/// The stubs of a world, and the requests they answered.
#[derive(Default)]
struct Stubs {
    routes: Mutex<Vec<(String, String, Response)>>,
    seen: Mutex<Vec<Value>>,
}

impl Intercept for Stubs {
    fn answer(&self, req: &Request) -> std::result::Result<Response, Failure> {
        let t = &req.target;
        let host = t.host.to_ascii_lowercase();
        let path = t.path.split('?').next().unwrap_or("").to_string();
        {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.len() < MAX_REQUESTS {
                let headers: BTreeMap<String, String> = req
                    .headers
                    .iter()
                    .map(|(k, v)| {
                        (
                            k.as_str().to_string(),
                            String::from_utf8_lossy(v.as_bytes()).into_owned(),
                        )
                    })
                    .collect();
                let body = String::from_utf8_lossy(&req.body).into_owned();
                let mut r = json!({
                    "method": req.method.as_str(), "host": host, "path": path,
                    "url": format!("{}://{}{}", if t.https { "https" } else { "http" }, t.authority(), t.path),
                    "headers": headers, "body": body,
                });
                if let Ok(v) = serde_json::from_slice::<Value>(&req.body) {
                    r["json"] = v;
                }
                seen.push(r);
            }
        }
        let routes = self.routes.lock().unwrap_or_else(|p| p.into_inner());
        // The last stub that matches wins, so a test can replace an earlier one.
        let found = routes.iter().rev().find(|(h, p, _)| {
            *h == host
                && match p.strip_suffix('*') {
                    Some(prefix) => path.starts_with(prefix),
                    None => *p == path,
                }
        });
        match found {
            Some((_, _, resp)) => Ok(resp.clone()),
            None => Err(Failure::Connect(format!(
                "native test: no stub answers {} {host}{path}; add t:stub({host:?}, {path:?}, {{ status = 200, body = \"...\" }}) to the test",
                req.method
            ))),
        }
    }
}
