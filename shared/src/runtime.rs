//! The runtime: what each trigger does, as plain async functions over the ports. The Lambda
//! functions and the CLI's local runtime call exactly these.
//!
//! - [`Runtime::invoke`]: a direct invocation runs `on_invoke` and returns its value.
//! - [`Runtime::handle_event_message`]: an S3 notification is resolved to a tenant, its router's
//!   `on_route` picks a script, and that script's `on_queue` runs.
//! - [`Runtime::handle_work_message`]: a script message runs `on_queue`.
//!
//! A handler that returns `{ delete = keys }` has those objects deleted after it succeeded.

use std::sync::Arc;

use bytes::Bytes;
use serde_json::{json, Value};

use crate::config::MAX_DELETES;
use crate::config::{Deployment, Tenant};
use crate::engine::{Answer, Call, Engine, Entry, Event};
use crate::events::{parse_notification, Notification};
use crate::host::Services;
use crate::observe::recent::{Recent, Run};
use crate::observe::{LogSink, StderrLog};
use crate::ports::{Backends, WorkMessage};
use crate::tenants::TenantSource;
use crate::{Error, Result};

/// Every kind of conditioned timer that the primitives register: the barrier's overdue timer
/// and dispatch guard, and the batch job's stale timer. The runtime hands them to each tick.
pub const TIMER_KINDS: [&dyn crate::timer::Kind; 3] = [
    &crate::barrier::Overdue,
    &crate::barrier::Dispatch,
    &crate::batch::stale::Stale,
];

/// Fires every due timer (see [`crate::timer::tick`]) with the kinds of [`TIMER_KINDS`]: what
/// the `tick` function, `native serve` and `native drain` run.
pub async fn tick(
    kv: &dyn crate::ports::KvStore,
    queue: &dyn crate::ports::Queue,
    objects: &dyn crate::ports::ObjectStore,
    opts: crate::timer::TickOptions,
) -> Result<crate::timer::TickReport> {
    crate::timer::tick(kv, queue, objects, &TIMER_KINDS, opts).await
}

/// What became of one event-queue message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// A script ran and succeeded.
    Handled,
    /// Nothing to do (a test event, an object outside any tenant folder, a router that
    /// returned nothing); logged and dropped.
    Dropped(String),
}

/// Gives the backends that one tenant's script calls go through. On AWS they carry credentials
/// of the tenant role with the session tag `tenant=<name>` (`aws::StsTenantScope`), so that IAM
/// also keeps tenants apart; without a scope every tenant uses the runtime's own backends.
#[async_trait::async_trait]
pub trait TenantScope: Send + Sync + std::fmt::Debug {
    /// The backends for `tenant`'s calls; `shared` are the runtime's own.
    async fn backends(&self, tenant: &str, shared: &Backends) -> Result<Backends>;
}

/// How long a Lambda function waits for its spans to reach the collector, at most, before it
/// answers ([`Runtime::flushing`]): a collector beside the function (an extension, an agent)
/// takes a batch in a few milliseconds.
pub const FLUSH_WITHIN: std::time::Duration = std::time::Duration::from_millis(200);

/// The runtime of one process.
#[derive(Debug)]
pub struct Runtime {
    /// Deployment, backends, logs.
    pub services: Arc<Services>,
    /// Where tenants come from.
    pub tenants: Arc<dyn TenantSource>,
    /// The engine, with its VM pools.
    pub engine: Arc<Engine>,
    /// Per-tenant backends for scripts' calls (none: the shared ones).
    scope: Option<Arc<dyn TenantScope>>,
    /// The services last built for each tenant over its scoped backends.
    /// (With the backends the scope gave, to tell when it gives others.)
    scoped: std::sync::Mutex<std::collections::HashMap<String, (Backends, Arc<Services>)>>,
    /// Script memory that scripts in flight share (none: unbounded).
    memory: Option<crate::capacity::ScriptMemory>,
    /// The namespace of per-tenant metrics written as EMF log records (none: no metrics).
    metrics: Option<String>,
    /// How many invocations run at once, on a server (none: no cap, as on Lambda).
    admission: Option<Arc<crate::capacity::Admission>>,
    /// Where finished runs are recorded for the operator's console (none: nowhere).
    recent: Option<Arc<Recent>>,
    /// Log each script run and each routing choice (`native -v`).
    run_log: bool,
    /// The log sink as given, before [`Self::with_recent`] made it keep steps too.
    plain_log: Arc<dyn LogSink>,
    /// API keys this process has verified, where the key-value store lets it cache them.
    keys: crate::api_keys::Verified,
}

/// What started a run, for the console's record of it.
#[derive(Debug, Clone)]
struct Origin {
    /// `invoke`, `queue`, `route` or `object`.
    trigger: &'static str,
    /// The chain the work came with; `None` starts one.
    chain: Option<String>,
    /// What started it, for the steps it records in other chains (`observe::step`).
    cause: Option<String>,
}

impl Origin {
    fn new(trigger: &'static str, chain: Option<String>) -> Self {
        Origin {
            trigger,
            chain,
            cause: None,
        }
    }
}

impl Runtime {
    /// A runtime over the given parts, logging to stderr.
    pub fn new(deployment: Deployment, backends: Backends, tenants: Arc<dyn TenantSource>) -> Self {
        let log: Arc<dyn LogSink> = Arc::new(StderrLog);
        Runtime {
            services: Arc::new(Services::new(deployment, backends, log.clone())),
            plain_log: log,
            tenants,
            engine: Arc::new(Engine::new()),
            scope: None,
            scoped: Default::default(),
            memory: None,
            metrics: None,
            admission: None,
            recent: None,
            run_log: false,
            keys: Default::default(),
        }
    }

    /// The same runtime keeping a blank VM ready for the next tenant's first invoke
    /// ([`Engine::with_spare_vm`]): for servers (`native serve`, the Fargate server), not for
    /// Lambda functions, where the blank would be made on the next invoke's CPU.
    pub fn with_spare_vm(mut self) -> Self {
        self.engine = Arc::new(Engine::with_spare_vm());
        self
    }

    /// The API keys this runtime has verified ([`crate::api_keys::Verified`]): what inbound HTTP
    /// checks a request's key with.
    pub fn verified_keys(&self) -> &crate::api_keys::Verified {
        &self.keys
    }

    /// The same runtime logging, at debug level, each script it runs (`"msg": "ran"`: tenant,
    /// script, entry point, attempt, depth, duration, ok or the error) and where each object
    /// event went (`"msg": "routed"`): what `native -v` shows.
    pub fn with_run_log(mut self) -> Self {
        self.run_log = true;
        self
    }

    /// The same runtime recording each finished run (script, trigger, outcome, duration, data
    /// ops, its first log lines, its chain) in `recent`, for the operator's console; and each
    /// step of a chain its log is handed ([`crate::observe::recent::KeepingSteps`]).
    pub fn with_recent(mut self, recent: Arc<Recent>) -> Self {
        self.recent = Some(recent);
        let log = self.services.log.clone();
        self.with_log(log)
    }

    /// Where finished runs are recorded, when they are.
    pub fn recent(&self) -> Option<&Arc<Recent>> {
        self.recent.as_ref()
    }

    /// The same runtime writing a metrics record (CloudWatch EMF, see [`crate::observe`]) of
    /// each script run and dead letter to its log, in `namespace`.
    pub fn with_metrics(mut self, namespace: &str) -> Self {
        self.metrics = Some(namespace.to_string());
        self
    }

    /// Writes the metrics record of a dead letter of `tenant` (unknown: `-`), when metrics
    /// are on.
    pub fn dead_letter_metric(&self, tenant: Option<&str>, why: &str) {
        if let Some(ns) = &self.metrics {
            let rec = crate::observe::dead_letter_metrics(ns, tenant.unwrap_or("-"), why);
            self.services.log.write(&rec);
        }
    }

    /// Writes the metrics record of an object event of `tenant` that the built-in routing
    /// dropped, when metrics are on.
    pub(crate) fn dropped_metric(&self, tenant: &str, why: &str) {
        if let Some(ns) = &self.metrics {
            let rec = crate::observe::dropped_event_metrics(ns, tenant, why);
            self.services.log.write(&rec);
        }
    }

    /// The same runtime running at most as many scripts at once as their tenants'
    /// `max_memory_mb` fit in `memory`.
    pub fn with_script_memory(mut self, memory: crate::capacity::ScriptMemory) -> Self {
        self.memory = Some(memory);
        self
    }

    /// The same runtime running at most `max` invocations at once, and per tenant at most its
    /// `max_concurrent` (see [`crate::capacity::Admission`]): what a server sets. A direct
    /// invocation beyond them is refused with [`Error::Busy`]; work from the queues waits.
    pub fn with_admission(mut self, max: u32) -> Self {
        self.admission = Some(crate::capacity::Admission::new(max));
        self
    }

    /// The admission, if this runtime has one.
    pub fn admission(&self) -> Option<&Arc<crate::capacity::Admission>> {
        self.admission.as_ref()
    }

    /// The same runtime with scripts' calls made through `scope`'s per-tenant backends.
    pub fn with_tenant_scope(mut self, scope: Arc<dyn TenantScope>) -> Self {
        self.scope = Some(scope);
        self
    }

    /// The services that `tenant`'s script calls use: the shared ones, or the same over the
    /// tenant's scoped backends.
    pub async fn services_for(&self, tenant: &str) -> Result<Arc<Services>> {
        let Some(scope) = &self.scope else {
            return Ok(self.services.clone());
        };
        let b = scope.backends(tenant, &self.services.backends).await?;
        let mut cache = self.scoped.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((was, s)) = cache.get(tenant) {
            if Arc::ptr_eq(&was.objects, &b.objects)
                && Arc::ptr_eq(&was.kv, &b.kv)
                && Arc::ptr_eq(&was.vault, &b.vault)
            {
                return Ok(s.clone());
            }
        }
        // Where spans are exported, the tenant's own backends record its runs' calls too.
        let backends = match &self.services.exporter {
            Some(_) => crate::observe::traced::backends(&b),
            None => b.clone(),
        };
        let s = Arc::new(Services {
            backends,
            ..Services::clone(&self.services)
        });
        cache.insert(tenant.to_string(), (b, s.clone()));
        Ok(s)
    }

    /// The same runtime with another log sink (which also keeps chains' steps where runs are
    /// recorded, [`Self::with_recent`]).
    pub fn with_log(self, log: Arc<dyn LogSink>) -> Self {
        // The runtime's own sink handed back is its plain one: steps are kept once.
        let plain = if Arc::ptr_eq(&log, &self.services.log) {
            self.plain_log.clone()
        } else {
            log
        };
        let log: Arc<dyn LogSink> = match &self.recent {
            Some(recent) => Arc::new(crate::observe::recent::KeepingSteps {
                inner: plain.clone(),
                recent: recent.clone(),
            }),
            None => plain.clone(),
        };
        let services = Arc::new(Services {
            log,
            ..Services::clone(&self.services)
        });
        Runtime {
            services,
            plain_log: plain,
            scoped: Default::default(),
            ..self
        }
    }

    /// The same runtime performing `job:http` in the background: for processes that outlive
    /// their invocations (the Fargate server, `native serve`, the CLI).
    pub fn with_http_jobs(self) -> Self {
        self.with_http_performer(crate::outbound::jobs::HttpJobs::new())
    }

    /// [`Self::with_http_jobs`] with a given performer (tests shorten its waits).
    pub fn with_http_performer(self, jobs: crate::outbound::jobs::HttpJobs) -> Self {
        let services = Arc::new(Services {
            http_jobs: Some(Arc::new(jobs)),
            ..Services::clone(&self.services)
        });
        Runtime { services, ..self }
    }

    /// The same runtime exporting spans to `exporter` ([`crate::observe::otlp`]); `None`
    /// exports nothing and makes no span.
    /// With one, the backends are wrapped so that each run's calls are its child spans
    /// ([`crate::observe::traced`]); without, they are left as they are.
    pub fn with_exporter(self, exporter: Option<Arc<crate::observe::otlp::Exporter>>) -> Self {
        let backends = match &exporter {
            Some(_) => crate::observe::traced::backends(&self.services.backends),
            None => self.services.backends.clone(),
        };
        let services = Arc::new(Services {
            exporter,
            backends,
            ..Services::clone(&self.services)
        });
        Runtime {
            services,
            scoped: Default::default(),
            ..self
        }
    }

    /// Runs `work` (a Lambda request's), then, where spans are exported, sends its spans to
    /// the collector before it returns: waiting at most [`FLUSH_WITHIN`], and never past
    /// `end` (the request's end, [`crate::deadline::lambda_end`]). A slow or absent collector
    /// delays the answer by that at most and never fails it; the spans it did not take in time
    /// stay queued for the next flush, or are dropped and counted. Without an exporter it is
    /// `work` alone.
    pub async fn flushing<F: std::future::Future>(
        &self,
        end: std::time::Instant,
        work: F,
    ) -> F::Output {
        let out = work.await;
        let left = end.saturating_duration_since(std::time::Instant::now());
        self.flush_spans(FLUSH_WITHIN.min(left)).await;
        out
    }

    /// Where spans are exported, sends those queued now, waiting at most `within` (a server
    /// that stops, before it exits); whether they went in time (true without an exporter).
    pub async fn flush_spans(&self, within: std::time::Duration) -> bool {
        match &self.services.exporter {
            Some(e) => e.flush_within(within).await,
            None => true,
        }
    }

    /// The same runtime exporting spans where the process environment names a collector
    /// (`OTEL_EXPORTER_OTLP_ENDPOINT`, `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`), as `service`.
    pub fn with_exporter_from_env(self, service: &str) -> Result<Self> {
        let e = crate::observe::otlp::Exporter::from_env(service)
            .map_err(|e| Error::config("environment", "OTEL_EXPORTER_OTLP_ENDPOINT", e))?;
        Ok(self.with_exporter(e))
    }

    /// The same runtime signing callback URLs with `signer`.
    pub fn with_callback(self, signer: Arc<crate::callback::Signer>) -> Self {
        let services = Arc::new(Services {
            callback: Some(signer),
            ..Services::clone(&self.services)
        });
        Runtime {
            services,
            scoped: Default::default(),
            ..self
        }
    }

    fn log(&self, level: &str, msg: &str, fields: Value) {
        let mut rec = json!({ "ts_ms": crate::ports::now_ms(), "level": level, "msg": msg });
        if let (Value::Object(r), Value::Object(f)) = (&mut rec, fields) {
            r.extend(f);
        }
        self.services.log.write(&rec);
    }

    /// Runs a call to its end (scripts are synchronous; backend calls inside them block on
    /// this runtime): see [`crate::engine::handoff`].
    ///
    /// The deadline is the tenant's `timeout_s` or the end set with [`crate::deadline::within`]
    /// (a Lambda's remaining time), whichever comes first; a script waits for its share of the
    /// script memory ([`crate::capacity::ScriptMemory`]) until then.
    async fn run(&self, call: Call, origin: Origin) -> Result<Answer> {
        let engine = self.engine.clone();
        let not_after = crate::deadline::current();
        // A direct invocation has a caller to tell "not now"; work from the queues waits.
        let tenant_max = call.tenant.config.limits.max_concurrent;
        let _admitted = match &self.admission {
            Some(a) if call.entry == Entry::Invoke => {
                Some(a.try_admit(&call.tenant.name, tenant_max)?)
            }
            Some(a) => Some(a.admit(&call.tenant.name, tenant_max, not_after).await?),
            None => None,
        };
        let _memory = match &self.memory {
            Some(m) => Some(
                m.take(call.tenant.config.limits.max_memory_mb, not_after)
                    .await?,
            ),
            None => None,
        };
        let services = self.services_for(&call.tenant.name).await?;
        let backends = services.backends.clone();
        let handle = tokio::runtime::Handle::current();
        let mut request = crate::observe::context();
        // Work that came without a chain (from outside, or an object written from outside)
        // joins the request it runs in (an HTTP request's, see `inbound::access_log`) or
        // starts one; what this run sends, schedules and writes carries it on (`ctx.trace`,
        // every log line of the run).
        let chain = origin
            .chain
            .or_else(|| request.chain.take())
            .unwrap_or_else(crate::observe::new_trace);
        request.chain = Some(chain.clone());
        request.cause = origin.cause;
        // Where spans are exported, the run is one: a child of the request it runs in.
        let span = self.services.exporter.as_ref().map(|_| {
            let parent = request.span;
            let own = crate::observe::w3c::new_span();
            request.span = Some(own);
            (own, parent, crate::observe::otlp::now_ns())
        });
        let (tenant, script) = (call.tenant.name.clone(), call.script.clone());
        let (entry, attempt, depth) = (call.entry, call.attempt, call.depth);
        let started = std::time::Instant::now();
        let started_ms = crate::ports::now_ms();
        let recording = self.recent.is_some();
        // Where spans are exported, the run's calls and log lines are recorded for its span.
        let recorder = match (&self.services.exporter, span) {
            (Some(e), Some((own, _, _))) => Some(crate::observe::calls::Recorder::new(
                e.clone(),
                chain.clone(),
                own,
            )),
            _ => None,
        };
        // The script's writes are answered before they are synced, and synced once below,
        // before this run's answer acknowledges them (see `ports::durability`).
        let (((out, data_ops), caught), recorded) = crate::engine::handoff::run(move || {
            crate::observe::on_thread(request, || {
                crate::observe::calls::recording(recorder, || {
                    let run = || {
                        crate::ports::durability::deferring(|| {
                            engine.run_measured(&services, &handle, &call, not_after)
                        })
                    };
                    if recording {
                        crate::observe::recent::capturing(run)
                    } else {
                        (run(), Default::default())
                    }
                })
            })
        })
        .await?;
        // Unless whoever called this flushes once for many runs (a drain pass).
        let flushed = if crate::ports::durability::caller_flushes() {
            Ok(())
        } else {
            backends.flush().await
        };
        // A failed script's error says more than a failed sync; a sync that failed after a
        // script that succeeded fails the run: nothing of it is acknowledged.
        let out = match (out, flushed) {
            (Ok(_), Err(e)) => Err(e),
            (out, _) => out,
        };
        if let Some(ns) = &self.metrics {
            let figures = crate::observe::RunFigures {
                failed: out.is_err(),
                limit_breach: matches!(
                    &out,
                    Err(Error::Script {
                        cause: crate::error::Cause::Limit(_),
                        ..
                    })
                ),
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                data_ops,
            };
            let rec = crate::observe::invocation_metrics(ns, &tenant, &script, &chain, &figures);
            self.services.log.write(&rec);
        }
        if self.run_log {
            let ms = (started.elapsed().as_secs_f64() * 10_000.0).round() / 10.0;
            let mut fields = json!({
                "tenant": tenant, "script": script, "entry": entry.name(), "attempt": attempt,
                "depth": depth, "duration_ms": ms, "ok": out.is_ok(), "trace": chain,
            });
            if let Err(e) = &out {
                fields["error"] = json!(e.to_string());
            }
            self.log("debug", "ran", fields);
        }
        if let (Some(e), Some((own, parent, start_ns))) = (&self.services.exporter, span) {
            use crate::observe::otlp::{Attr, Kind, SpanData};
            e.record(SpanData {
                chain: chain.clone(),
                span: own,
                parent,
                name: format!("{} {script}", entry.name()),
                kind: if entry == Entry::Invoke {
                    Kind::Server
                } else {
                    Kind::Consumer
                },
                start_ns,
                end_ns: crate::observe::otlp::now_ns(),
                attributes: vec![
                    ("native.tenant", Attr::Str(tenant.clone())),
                    ("native.script", Attr::Str(script.clone())),
                    ("native.entry", Attr::Str(entry.name().into())),
                    ("native.trigger", Attr::Str(origin.trigger.into())),
                    ("native.attempt", Attr::Int(attempt.into())),
                    ("native.depth", Attr::Int(depth.into())),
                    ("native.data_ops", Attr::Int(data_ops.into())),
                    ("native.ok", Attr::Bool(out.is_ok())),
                    (
                        "native.calls_dropped",
                        Attr::Int(recorded.calls_dropped.into()),
                    ),
                ],
                error: out.as_ref().err().map(ToString::to_string),
                links: Vec::new(),
                events: recorded.events,
                dropped_events: recorded.events_dropped,
            });
        }
        // Last, so that the run's names move into its record rather than being copied.
        if let Some(recent) = &self.recent {
            let kept = recent.keep(Run {
                seq: 0,
                tenant,
                script,
                trigger: origin.trigger,
                chain,
                depth,
                attempt,
                started_ms,
                duration_ms: started.elapsed().as_secs_f64() * 1000.0,
                data_ops,
                error: out.as_ref().err().map(ToString::to_string),
                logs: caught.lines,
                logs_dropped: caught.dropped,
            });
            // The console's summary of a run is not the run: it stands without it.
            if let Err(e) = kept.await {
                self.log(
                    "warn",
                    "the run's summary for the console was not kept",
                    json!({ "error": e.to_string() }),
                );
            }
        }
        out
    }

    /// [`Runtime::run`] of a call whose answer is a value.
    async fn run_value(&self, call: Call, origin: Origin) -> Result<Value> {
        self.run(call, origin).await?.into_value()
    }

    /// A direct invocation: `on_invoke(ctx, event)` of `script`, returning its value.
    pub async fn invoke(&self, tenant: &str, script: &str, event: Value) -> Result<Value> {
        let t = self.tenants.load(tenant).await?;
        t.script(script)?;
        self.run_value(
            Call {
                tenant: t,
                script: script.into(),
                entry: Entry::Invoke,
                event: event.into(),
                json_answer: false,
                attempt: 1,
                depth: 0,
                width: None,
            },
            Origin::new("invoke", None),
        )
        .await
    }

    /// A direct invocation over HTTP: the body, JSON text, is parsed straight onto the script's
    /// heap (an [`Error::InvalidInput`] if it is not JSON), and the return value comes back as
    /// JSON text encoded straight from it. Nothing of either is built on the host.
    pub async fn invoke_json(
        &self,
        tenant: &str,
        script: &str,
        body: bytes::Bytes,
    ) -> Result<Vec<u8>> {
        Ok(match self.invoke_http(tenant, script, body).await? {
            Answer::Json(text) => text,
            Answer::Value(v) => v.to_string().into_bytes(),
            Answer::Reply(r) => r.body,
        })
    }

    /// [`Runtime::invoke_json`], with the answer as the script made it: JSON text, or the HTTP
    /// answer it chose with `native.response` (status, headers, body).
    pub async fn invoke_http(
        &self,
        tenant: &str,
        script: &str,
        body: bytes::Bytes,
    ) -> Result<Answer> {
        let t = self.tenants.load(tenant).await?;
        t.script(script)?;
        self.run(
            Call {
                tenant: t,
                script: script.into(),
                entry: Entry::Invoke,
                event: Event::Json(body),
                json_answer: true,
                attempt: 1,
                depth: 0,
                width: None,
            },
            Origin::new("invoke", None),
        )
        .await
    }

    /// A work-queue message body: runs `on_queue` of its script, then its deletes.
    pub async fn handle_work_message(&self, body: &str, attempt: u32) -> Result<()> {
        let msg: WorkMessage = serde_json::from_str(body).map_err(|e| {
            Error::InvalidInput(format!(
                "work message is not {{tenant, script, event}}: {e}"
            ))
        })?;
        let t = self.tenants.load(&msg.tenant).await?;
        t.script(&msg.script)?;
        check_depth(&t, &format!("the message for {:?}", msg.script), msg.depth)?;
        // Work that must run once (a continuation) is claimed first: a second delivery of it
        // is dropped, or retried while the first runs (`crate::once`).
        let once = match msg.once.clone() {
            None => None,
            Some(key) => {
                let kv = &*self.services.backends.kv;
                // The lease outlasts the run: the script's timeout and a second.
                let run_ms = i64::from(t.config.limits.timeout_s) * 1000 + 1000;
                match crate::once::claim(kv, &t.name, &key, crate::ports::now_ms() + run_ms).await?
                {
                    crate::once::Claim::Done => {
                        self.log(
                            "info",
                            "duplicate delivery dropped: its work already ran",
                            json!({ "tenant": t.name, "script": msg.script, "once": key }),
                        );
                        return Ok(());
                    }
                    crate::once::Claim::Run => Some(key),
                }
            }
        };
        let slot = msg.slot.clone();
        let script = msg.script.clone();
        let ran = async {
            let out = self
                .run_value(
                    Call {
                        tenant: t.clone(),
                        script: msg.script.clone(),
                        entry: Entry::Queue,
                        event: msg.event.into(),
                        json_answer: false,
                        attempt,
                        depth: msg.depth,
                        width: msg.width,
                    },
                    // A chain id is carried on only in its own form (a message may come from
                    // anyone with access to the queue).
                    Origin::new("queue", msg.chain.filter(|c| crate::ports::is_trace(c))),
                )
                .await;
            if let Some(slot) = &slot {
                self.record_slot(&t, slot, attempt, out.as_ref().err())
                    .await;
            }
            self.apply_deletes(&t, &script, None, &out?).await
        }
        .await;
        let Some(key) = once else { return ran };
        let kv = &*self.services.backends.kv;
        match ran {
            Ok(()) => crate::once::finish(kv, &t.name, &key).await,
            Err(e) => {
                // The retry runs at once; should the release fail, after the lease.
                let _ = crate::once::release(kv, &t.name, &key).await;
                Err(e)
            }
        }
    }

    /// Records how a schedule's run ended (for `native schedules` and the overlap rule). A
    /// record that fails is logged: the run's own outcome stands.
    async fn record_slot(
        &self,
        t: &Tenant,
        slot: &crate::ports::Slot,
        attempt: u32,
        e: Option<&Error>,
    ) {
        let b = &self.services.backends;
        let s = crate::schedule::Schedules::new(b.kv.as_ref(), b.queue.as_ref(), t);
        if let Err(why) = s.record(slot, attempt, e.map(ToString::to_string)).await {
            self.log(
                "warn",
                "recording a schedule's run failed",
                json!({ "tenant": t.name, "schedule": slot.schedule, "error": why.to_string() }),
            );
        }
    }

    /// Sends the due slots of every tenant's schedules (see [`crate::schedule`]): what the
    /// `tick` function, `native serve` and `native drain` run beside [`tick`].
    pub async fn tick_schedules(
        &self,
        opts: crate::schedule::TickOptions,
    ) -> crate::schedule::TickReport {
        let b = &self.services.backends;
        crate::schedule::tick(self.tenants.as_ref(), b.kv.as_ref(), b.queue.as_ref(), opts).await
    }

    /// An events-queue message body (an S3 notification): routes each record and runs the
    /// chosen script. Records that belong to no tenant are logged and dropped.
    pub async fn handle_event_message(&self, body: &str, attempt: u32) -> Result<Vec<Outcome>> {
        let records = match parse_notification(body).map_err(Error::InvalidInput)? {
            Notification::Test => return Ok(vec![Outcome::Dropped("s3:TestEvent".into())]),
            Notification::Records(r) => r,
        };
        let mut out = Vec::new();
        for r in records {
            let Some(at) = self.services.deployment.resolve(&r.bucket, &r.key) else {
                let why = format!(
                    "object {}/{} is in no tenant folder of a configured bucket",
                    r.bucket, r.key
                );
                self.log("warn", "event dropped", json!({ "why": why }));
                out.push(Outcome::Dropped(why));
                continue;
            };
            let event = json!({
                "bucket": at.logical, "key": at.key, "size": r.size, "etag": r.etag, "event_name": r.event_name,
            });
            let tenant = match self.tenants.load(&at.tenant).await {
                Ok(t) => t,
                Err(Error::NotFound { .. }) => {
                    let why = format!("object {}/{}: no tenant {:?}", r.bucket, r.key, at.tenant);
                    self.log("warn", "event dropped", json!({ "why": why }));
                    out.push(Outcome::Dropped(why));
                    continue;
                }
                Err(e) => return Err(e),
            };
            // Events of an object a script wrote run one deeper than that script, in its chain.
            let (depth, trace) = if r.event_name.starts_with("ObjectCreated") {
                let objects = &self.services_for(&tenant.name).await?.backends.objects;
                let head = objects.head(&r.bucket, &r.key);
                // Within the request's time: a held S3 never keeps the batch's answer past the
                // function's deadline.
                let late = || {
                    Error::Backend {
                    backend: "s3",
                    message: format!(
                        "the head of {}/{} had no answer before the request's deadline; S3 is slow or unavailable: retry",
                        r.bucket, r.key
                    ),
                    source: None,
                }
                };
                crate::deadline::before(crate::deadline::current(), head, late)
                    .await??
                    .map_or((0, None), |m| (m.depth, m.trace))
            } else {
                (0, None)
            };
            // A partner's `done.json` continues the chain of the job it finishes, as a step of
            // it; any other object from outside starts a chain named after the event itself, so
            // that each retry of it is the same chain.
            let trace = match trace {
                Some(t) => Some(t),
                None => match self
                    .job_chain(&tenant.name, &at.logical, &at.key, &r.event_name)
                    .await
                {
                    Some(chain) => {
                        let by = crate::observe::step::Origin::Object {
                            bucket: &at.logical,
                            key: &at.key,
                        };
                        let job = crate::batch::manifest::done_job(&at.key).unwrap_or_default();
                        let rec = crate::observe::step::record(
                            &chain,
                            &tenant.name,
                            "batch job done",
                            &by,
                            json!({ "job": job }),
                        );
                        self.services.log.write(&rec);
                        let exporter = self.services.exporter.as_deref();
                        crate::observe::step::export(exporter, &rec, None);
                        Some(chain)
                    }
                    None => Some(event_trace(&r.bucket, &r.key, &r.etag, &r.event_name)),
                },
            };
            let what = format!("the event of {}/{}", at.logical, at.key);
            check_depth(&tenant, &what, depth)?;
            // The router and the script it picks share one deadline: timeout_s from now, or
            // the request's end if that comes first.
            let timeout = std::time::Duration::from_secs(tenant.config.limits.timeout_s.into());
            let end = std::time::Instant::now() + timeout;
            let routed =
                crate::deadline::within(end, self.route(&tenant, event, attempt, depth, trace));
            out.push(routed.await?);
        }
        Ok(out)
    }

    async fn route(
        &self,
        tenant: &Arc<Tenant>,
        event: Value,
        attempt: u32,
        depth: u32,
        trace: Option<String>,
    ) -> Result<Outcome> {
        // The router and the script it picks are one chain: the writer's, when a script wrote
        // the object, else one this event starts.
        let chain = Some(trace.unwrap_or_else(crate::observe::new_trace));
        let (router, choice) = match tenant.router() {
            crate::config::Router::Script(router) => (
                router.to_string(),
                self.run_router(tenant, router, &event, attempt, depth, chain.clone())
                    .await?,
            ),
            crate::config::Router::BuiltIn => {
                let objects = &self.services_for(&tenant.name).await?.backends.objects;
                let deployment = &self.services.deployment;
                let choice = crate::batch::default_route::choose(
                    objects.as_ref(),
                    deployment,
                    tenant,
                    &event,
                )
                .await?;
                if let Err(why) = &choice {
                    self.dropped_metric(&tenant.name, why);
                }
                ("(built-in router)".to_string(), choice)
            }
        };
        if self.run_log {
            let to = choice.as_ref().map_or(Value::Null, |(s, _)| json!(s));
            self.log(
                "debug",
                "routed",
                json!({ "tenant": tenant.name, "bucket": event["bucket"], "key": event["key"], "by": router, "to": to, "trace": chain }),
            );
        }
        let (script, ev) = match choice {
            Ok(c) => c,
            Err(why) => {
                self.log(
                    "info",
                    "event dropped",
                    json!({ "tenant": tenant.name, "why": why, "trace": chain }),
                );
                return Ok(Outcome::Dropped(why));
            }
        };
        tenant.script(&script).map_err(|e| {
            Error::script(
                &tenant.name,
                router.as_str(),
                format!("on_route chose an unknown script: {e}"),
            )
        })?;
        let out = self
            .run_value(
                Call {
                    tenant: tenant.clone(),
                    script: script.clone(),
                    entry: Entry::Queue,
                    event: ev.into(),
                    json_answer: false,
                    attempt,
                    depth,
                    width: None,
                },
                Origin {
                    cause: Some(format!(
                        "object {}/{}",
                        event["bucket"].as_str().unwrap_or_default(),
                        event["key"].as_str().unwrap_or_default()
                    )),
                    ..Origin::new("object", chain)
                },
            )
            .await?;
        let bucket = event["bucket"].as_str().map(str::to_string);
        self.apply_deletes(tenant, &script, bucket.as_deref(), &out)
            .await?;
        Ok(Outcome::Handled)
    }

    /// Runs the tenant's router script on an object event: the script and event it chose, or
    /// why the event is dropped (the router returned nothing).
    async fn run_router(
        &self,
        tenant: &Arc<Tenant>,
        router: &str,
        event: &Value,
        attempt: u32,
        depth: u32,
        chain: Option<String>,
    ) -> Result<std::result::Result<(String, Value), String>> {
        let routed = self
            .run_value(
                Call {
                    tenant: tenant.clone(),
                    script: router.to_string(),
                    entry: Entry::Route,
                    event: event.clone().into(),
                    json_answer: false,
                    attempt,
                    depth,
                    width: None,
                },
                Origin::new("route", chain),
            )
            .await?;
        let choice = match &routed {
            Value::Null => {
                return Ok(Err(format!(
                    "router {router:?} returned nothing for {}",
                    event["key"]
                )))
            }
            Value::String(s) => Some((s.clone(), event.clone())),
            Value::Object(m) => match (m.get("script"), m.get("event")) {
                (Some(Value::String(s)), ev) => {
                    Some((s.clone(), ev.cloned().unwrap_or_else(|| event.clone())))
                }
                _ => None,
            },
            _ => None,
        };
        choice.map(Ok).ok_or_else(|| {
            let at = tenant
                .scripts
                .get(router)
                .and_then(|s| s.defined_at("on_route"))
                .map_or(String::new(), |line| format!("{router}.luau:{line}: "));
            Error::script(
                &tenant.name,
                router,
                format!("{at}on_route returned {}; return a script name, {{ script = name, event = ev }}, or nil to drop the event", crate::text::cut_text(routed.to_string(), 200)),
            )
        })
    }

    /// Deletes what a successful handler returned in `{ delete = keys }`: strings are keys in
    /// the triggering event's bucket, `{ bucket, key }` tables name the bucket.
    async fn apply_deletes(
        &self,
        tenant: &Tenant,
        script: &str,
        event_bucket: Option<&str>,
        out: &Value,
    ) -> Result<()> {
        let Some(list) = out.get("delete") else {
            return Ok(());
        };
        let bad = |why: String| Error::script(&tenant.name, script, why);
        let items = match list {
            Value::Array(a) => a.clone(),
            Value::Object(o) if o.is_empty() => Vec::new(),
            other => {
                return Err(bad(format!(
                    "returned delete = {other}; it must be a list of keys"
                )))
            }
        };
        if items.len() > MAX_DELETES {
            return Err(bad(format!(
                "returned {} objects to delete; at most {MAX_DELETES} are deleted per result: expire the rest with a lifecycle rule",
                items.len()
            )));
        }
        let mut targets = Vec::new();
        for it in &items {
            let (bucket, key) = match it {
                Value::String(k) => match event_bucket {
                    Some(b) => (b.to_string(), k.clone()),
                    None => return Err(bad(format!("delete entry {it}: a plain key needs an object event; use {{ bucket = ..., key = ... }}"))),
                },
                Value::Object(o) => match (o.get("bucket").and_then(Value::as_str), o.get("key").and_then(Value::as_str)) {
                    (Some(b), Some(k)) => (b.to_string(), k.to_string()),
                    _ => return Err(bad(format!("delete entry {it} needs bucket and key"))),
                },
                other => return Err(bad(format!("delete entry {other} is neither a key nor {{ bucket, key }}"))),
            };
            crate::keys::check_relative_key(&key)
                .map_err(|why| bad(format!("delete entry: {why}")))?;
            let real = self
                .services
                .deployment
                .real_bucket(&bucket)
                .ok_or_else(|| bad(format!("delete entry names unknown bucket {bucket:?}")))?;
            if bucket == "$batch" && !tenant.config.batch {
                return Err(bad(
                    "delete entry in $batch, but the tenant has no \"batch\": true".into(),
                ));
            }
            targets.push((
                real.to_string(),
                self.services
                    .deployment
                    .full_key(&bucket, &tenant.name, &key),
            ));
        }
        let objects = &self.services_for(&tenant.name).await?.backends.objects;
        for (real, full) in targets {
            objects.delete(&real, &full).await?;
        }
        Ok(())
    }

    /// Writes an object as an outside party would (the CLI's `native put`).
    pub async fn put_object(
        &self,
        tenant: &str,
        logical: &str,
        key: &str,
        data: Bytes,
    ) -> Result<()> {
        let (real, full) = self.locate(tenant, logical, key)?;
        self.services
            .backends
            .objects
            .put(&real, &full, data, crate::ports::PutMode::Overwrite)
            .await?;
        Ok(())
    }

    /// The real bucket and full key of a tenant's relative key, checked.
    pub fn locate(&self, tenant: &str, logical: &str, key: &str) -> Result<(String, String)> {
        crate::keys::check_name("tenant", tenant).map_err(Error::InvalidInput)?;
        crate::keys::check_relative_key(key).map_err(Error::InvalidInput)?;
        let d = &self.services.deployment;
        let real = d.real_bucket(logical).ok_or_else(|| Error::NotFound {
            what: format!("bucket {logical:?}"),
            hint: format!(
                "{}deployment.json has {}{}",
                crate::text::suggest::did_you_mean(
                    logical,
                    d.buckets
                        .map
                        .keys()
                        .map(String::as_str)
                        .chain(d.batch.as_ref().map(|_| "$batch"))
                ),
                if d.buckets.map.is_empty() {
                    "no buckets".to_string()
                } else {
                    d.buckets.map.keys().cloned().collect::<Vec<_>>().join(", ")
                },
                if d.batch.is_some() { " and $batch" } else { "" }
            ),
            missing: crate::error::Missing::Other,
        })?;
        Ok((real.to_string(), d.full_key(logical, tenant, key)))
    }
}

impl Runtime {
    /// The tenant and the chain of a queued message, as its run names them, for the lines,
    /// dead letters and listings that speak of a message that failed: a work message's own; an
    /// object event's tenant by its folder, and its chain the writer's when a script wrote the
    /// object (and it is still there), else the one the event itself names (an object from
    /// outside), as [`Runtime::handle_event_message`] gives its run.
    pub async fn owner_of_message(
        &self,
        kind: crate::ports::QueueKind,
        body: &str,
    ) -> (Option<String>, Option<String>) {
        let tenant = crate::events::owner(&self.services.deployment, kind, body);
        if kind == crate::ports::QueueKind::Work {
            return (tenant, crate::ports::trace_of_body(body));
        }
        let Ok(Notification::Records(records)) = parse_notification(body) else {
            return (tenant, None);
        };
        let Some(r) = records.first() else {
            return (tenant, None);
        };
        let mut written = None;
        if let (Some(t), true) = (&tenant, r.event_name.starts_with("ObjectCreated")) {
            if let Ok(services) = self.services_for(t).await {
                if let Ok(Some(meta)) = services.backends.objects.head(&r.bucket, &r.key).await {
                    written = meta.trace;
                }
            }
            if written.is_none() {
                if let Some(at) = self.services.deployment.resolve(&r.bucket, &r.key) {
                    written = self.job_chain(t, &at.logical, &at.key, &r.event_name).await;
                }
            }
        }
        let chain =
            written.unwrap_or_else(|| event_trace(&r.bucket, &r.key, &r.etag, &r.event_name));
        (tenant, Some(chain))
    }
}

impl Runtime {
    /// The chain of the batch job whose `done.json` an event of `logical`/`key` of `tenant` is
    /// about: the chain that submitted the job, which wrote its state file
    /// (`ObjectMeta::trace`). None for any other object, or when the state is gone. One read.
    async fn job_chain(
        &self,
        tenant: &str,
        logical: &str,
        key: &str,
        event_name: &str,
    ) -> Option<String> {
        if logical != "$batch" || !event_name.starts_with("ObjectCreated") {
            return None;
        }
        let job = crate::batch::manifest::done_job(key)?;
        let d = &self.services.deployment;
        let bucket = d.real_bucket("$batch")?;
        let state = d.full_key("$batch", tenant, &crate::batch::manifest::state_key(job));
        let objects = &self.services_for(tenant).await.ok()?.backends.objects;
        objects.head(bucket, &state).await.ok()??.trace
    }
}

/// The chain id of an event of an object from outside: a W3C trace id, 32 hex digits of a
/// digest of the object's place, version and the kind of event (the same on every retry of
/// the event).
fn event_trace(bucket: &str, key: &str, etag: &str, event_name: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    for part in [bucket, key, etag, event_name] {
        h.update(part.as_bytes());
        h.update([0]);
    }
    hex::encode(&h.finalize()[..16])
}

/// Refuses work past the tenant's `max_chain_depth`: it is not run, and the queue retries it
/// until it is dead-lettered with this error.
fn check_depth(tenant: &Tenant, what: &str, depth: u32) -> Result<()> {
    if depth <= tenant.config.limits.max_chain_depth {
        return Ok(());
    }
    Err(crate::host::too_deep(tenant, what, depth))
}
