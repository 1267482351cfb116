//! `native.batch`: jobs for partners through the batch bucket. `new` gives a draft to fill and
//! submit; `route` tells a router which script owns a `done.json`; `hydrate` gives the
//! continuation the verified results.

use std::collections::BTreeMap;
use std::io::Read;

use bytes::Bytes;
use mlua::{Lua, Table, UserData, UserDataFields, UserDataMethods, Value};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::Signature;
use super::{from_lua, invocation, raise, to_json_text, to_lua, Invocation};
use crate::batch::manifest::{
    check_job_id, check_part_key, done_job, id_record_key, job_dir, request_fingerprint, state_key,
    Dataset, Done, IdRecord, Part, Query, Request, State, REQUEST_VERSION,
};
use crate::batch::reader::{store_checks, Blocking, Opened, PartSource, Rows};
use crate::outbound::jobs::{HttpJob, JobRequest, REQUEST_TIMEOUT};
use crate::ports::PutMode;

const MB: u64 = 1024 * 1024;
/// Input parts are cut at this size (or `max_object_mb`, if smaller).
const INPUT_PART_BYTES: u64 = 64 * MB;
/// The most keys `job:keys()` returns: what `{ delete = ... }` takes.
const MAX_KEYS: usize = crate::config::MAX_DELETES;

/// The batch bucket and this tenant's folder in it, or why the tenant cannot use it.
fn batch_place(lua: &Lua, inv: &Invocation) -> mlua::Result<(String, String)> {
    if !inv.tenant.config.batch {
        return Err(raise(
            lua,
            format!(
                "native.batch is off for tenant {:?}: set \"batch\": true in {}",
                inv.tenant.name,
                inv.config_file()
            ),
        ));
    }
    let d = &inv.services.deployment;
    let Some(bucket) = d.real_bucket("$batch") else {
        return Err(raise(lua, "native.batch needs a batch bucket: add { \"batch\": { \"bucket\": ..., \"prefix\": ... } } to deployment.json"));
    };
    Ok((
        bucket.to_string(),
        d.full_key("$batch", &inv.tenant.name, ""),
    ))
}

fn put(lua: &Lua, inv: &Invocation, key: &str, data: Vec<u8>) -> mlua::Result<()> {
    let (bucket, folder) = batch_place(lua, inv)?;
    inv.charge(lua, 1)?;
    let full = format!("{folder}{key}");
    inv.block_on(
        lua,
        inv.services.backends.objects.put_in_chain(
            &bucket,
            &full,
            Bytes::from(data),
            PutMode::Overwrite,
            inv.depth + 1,
            Some(&inv.trace),
        ),
    )?;
    Ok(())
}

fn get(lua: &Lua, inv: &Invocation, key: &str) -> mlua::Result<Option<Bytes>> {
    let (bucket, folder) = batch_place(lua, inv)?;
    inv.charge(lua, 1)?;
    let full = format!("{folder}{key}");
    Ok(inv
        .block_on(lua, inv.services.backends.objects.get(&bucket, &full))?
        .map(|(_, b)| b))
}

/// What the id of a draft was used for before, looked up once per draft.
#[derive(Debug, Clone, Default, PartialEq)]
enum Prior {
    /// Not looked up yet.
    #[default]
    Unknown,
    /// Nothing was submitted under the id (or no id was given): inputs are written as attached.
    Fresh,
    /// A job was submitted under the id; `recorded` tells whether its id record exists (a
    /// submit that died between request.json and the record leaves only request.json).
    Submitted {
        fingerprint: String,
        recorded: bool,
        created_ms: i64,
    },
}

/// A job being built by a script.
#[derive(Debug, Default)]
struct Draft {
    id: String,
    id_given: bool,
    inputs: BTreeMap<String, Dataset>,
    input_keys: Vec<String>,
    queries: Vec<Query>,
    state: serde_json::Value,
    continue_with: Option<String>,
    submitted: bool,
    prior: Prior,
    stale_after_s: Option<u64>,
    on_stale: Option<String>,
    /// `job:http` requests, performed in the background after submit.
    http: Vec<JobRequest>,
}

impl Draft {
    /// What the draft's id was used for: its id record, else its request.json (1 or 2 backend
    /// calls, once per draft; none without an id).
    fn prior(&mut self, lua: &Lua, inv: &Invocation) -> mlua::Result<Prior> {
        if !self.id_given {
            return Ok(Prior::Fresh);
        }
        if self.prior != Prior::Unknown {
            return Ok(self.prior.clone());
        }
        let record_key = id_record_key(&self.id);
        let request_key = format!("{}request.json", job_dir(&self.id));
        self.prior = if let Some(b) = get(lua, inv, &record_key)? {
            let r: IdRecord = serde_json::from_slice(&b)
                .map_err(|e| raise(lua, format!("{record_key} is damaged: {e}")))?;
            Prior::Submitted {
                fingerprint: r.fingerprint,
                recorded: true,
                created_ms: r.created_ms,
            }
        } else if let Some(b) = get(lua, inv, &request_key)? {
            let r: Request = serde_json::from_slice(&b)
                .map_err(|e| raise(lua, format!("{request_key} is damaged: {e}")))?;
            Prior::Submitted {
                fingerprint: request_fingerprint(&r.inputs, &r.queries),
                recorded: false,
                created_ms: r.created_ms,
            }
        } else {
            Prior::Fresh
        };
        Ok(self.prior.clone())
    }

    /// With `on_stale`: a timer at submit + `stale_after_s` that sends `{ job, stale = true }`
    /// unless `done.json` is there by then. Set after request.json, so it never fires for a
    /// job that was not submitted.
    fn stale_timer(&self, lua: &Lua, inv: &Invocation, created_ms: i64) -> mlua::Result<()> {
        let (Some(script), Some(after_s)) = (&self.on_stale, self.stale_after_s) else {
            return Ok(());
        };
        let (bucket, folder) = batch_place(lua, inv)?;
        let body = serde_json::to_string(&crate::ports::WorkMessage {
            tenant: inv.tenant.name.clone(),
            script: script.clone(),
            event: json!({ "job": self.id, "stale": true }),
            depth: inv.depth + 1,
            width: Some(
                inv.take_width(&format!(
                    "the on_stale timer {script:?} of job {:?}",
                    self.id
                ))
                .map_err(|m| super::raise_error(lua, m))?,
            ),
            chain: crate::observe::chain(),
            once: None,
            slot: None,
        })
        .map_err(|e| raise(lua, e))?;
        let timers = crate::timer::Timers {
            kv: inv.services.backends.kv.as_ref(),
            tenant: &inv.tenant.name,
            budget: inv,
        };
        let guard = crate::batch::stale::JobGuard {
            id: self.id.clone(),
            bucket,
            done_key: format!("{folder}{}done.json", job_dir(&self.id)),
            state_key: Some(format!("{folder}{}", state_key(&self.id))),
        };
        let at = created_ms.saturating_add(after_s as i64 * 1000);
        let condition = crate::batch::stale::Stale::condition(&guard);
        inv.block_on(lua, timers.set(at, script, body, Some(condition)))?;
        Ok(())
    }

    fn write_id_record(
        &self,
        lua: &Lua,
        inv: &Invocation,
        fingerprint: String,
        created_ms: i64,
    ) -> mlua::Result<()> {
        let record = IdRecord {
            v: 1,
            job: self.id.clone(),
            fingerprint,
            created_ms,
        };
        put(
            lua,
            inv,
            &id_record_key(&self.id),
            serde_json::to_vec(&record).map_err(|e| raise(lua, e))?,
        )
    }

    fn not_submitted(&self, lua: &Lua) -> mlua::Result<()> {
        if self.submitted {
            return Err(raise(
                lua,
                format!(
                    "job {:?} is already submitted; start another with native.batch.new()",
                    self.id
                ),
            ));
        }
        Ok(())
    }

    fn no_http(&self, lua: &Lua, func: &str) -> mlua::Result<()> {
        if self.http.is_empty() {
            return Ok(());
        }
        Err(raise(
            lua,
            format!("{func}: the job has job:http requests; a job cannot also have partner queries or inputs: use a job of its own for each"),
        ))
    }

    fn input_rows(&mut self, lua: &Lua, name: String, rows: Table) -> mlua::Result<String> {
        self.not_submitted(lua)?;
        self.no_http(lua, "job:input_rows")?;
        crate::keys::check_name("input", &name).map_err(|e| raise(lua, e))?;
        if self.inputs.contains_key(&name) {
            return Err(raise(
                lua,
                format!("job:input_rows: input {name:?} is already attached"),
            ));
        }
        let inv = invocation(lua)?;
        // Under an id that was submitted before, the inputs are only measured: the pending job's
        // files stay as its request.json promises them, and submit compares.
        let write = self.prior(lua, &inv)? == Prior::Fresh;
        let cut =
            INPUT_PART_BYTES.min(u64::from(inv.tenant.config.limits.max_object_mb) * MB) as usize;
        let dir = job_dir(&self.id);
        let mut parts = Vec::new();
        let mut buf: Vec<u8> = Vec::new();
        let mut count = 0u64;
        let flush = |buf: &mut Vec<u8>, parts: &mut Vec<Part>| -> mlua::Result<()> {
            let key = format!("inputs/{name}.{:04}.ndjson", parts.len());
            let sha = hex::encode(Sha256::digest(&buf[..]));
            let bytes = buf.len() as u64;
            let data = std::mem::take(buf);
            if write {
                put(lua, &inv, &format!("{dir}{key}"), data)?;
            }
            parts.push(Part {
                key,
                bytes: Some(bytes),
                sha256: Some(sha),
            });
            Ok(())
        };
        for v in rows.sequence_values::<Value>() {
            let line = to_json_text(lua, v?, false, &"job:input_rows: a row")?;
            if !buf.is_empty() && buf.len() + line.len() + 1 > cut {
                flush(&mut buf, &mut parts)?;
            }
            buf.extend_from_slice(&line);
            buf.push(b'\n');
            count += 1;
        }
        if !buf.is_empty() || parts.is_empty() {
            flush(&mut buf, &mut parts)?;
        }
        self.input_keys
            .extend(parts.iter().map(|p| format!("{dir}{}", p.key)));
        self.inputs.insert(
            name.clone(),
            Dataset {
                rows: Some(count),
                parts,
                extra: BTreeMap::new(),
            },
        );
        Ok(name)
    }

    fn http(&mut self, lua: &Lua, name: String, opts: Table) -> mlua::Result<()> {
        self.not_submitted(lua)?;
        crate::keys::check_name("request", &name)
            .map_err(|e| raise(lua, format!("job:http: {e}")))?;
        if !self.queries.is_empty() || !self.inputs.is_empty() {
            return Err(raise(lua, "job:http: the job has partner queries or inputs; a job cannot also have job:http requests: use a job of its own for each"));
        }
        if self.http.iter().any(|r| r.name == name) {
            return Err(raise(
                lua,
                format!("job:http: a request named {name:?} is already in the job"),
            ));
        }
        let inv = invocation(lua)?;
        batch_place(lua, &inv)?;
        if inv.services.http_jobs.is_none() {
            return Err(raise(
                lua,
                "job:http needs the server runtime (native-server on Fargate, native serve, the native CLI), which performs the request in the background; \
                 the Lambda functions cannot, since their sandbox freezes when the invocation returns: call this script through the server, or use native.http.request",
            ));
        }
        // Checked now, exactly as native.http.request would be: a request that could never be
        // sent fails here, in the submitting script.
        let spec = super::http::spec_from_lua(lua, &inv, "job:http", &opts)?;
        super::http::charge_request(lua, &inv, "job:http")?;
        let timeout = spec.timeout_s.map_or(REQUEST_TIMEOUT, |s| {
            std::time::Duration::from_secs(u64::from(s))
        });
        self.http.push(JobRequest {
            name,
            spec,
            timeout,
        });
        Ok(())
    }

    fn submit(&mut self, lua: &Lua) -> mlua::Result<String> {
        self.not_submitted(lua)?;
        let Some(script) = self.continue_with.clone() else {
            return Err(raise(lua, "job:submit: call job:continue_with(script) first; it names the script that runs when the partner is done"));
        };
        if !self.http.is_empty() {
            return self.submit_http(lua, script);
        }
        if self.queries.is_empty() {
            return Err(raise(
                lua,
                "job:submit: the job has no queries; add one with job:query(name, query, params)",
            ));
        }
        let inv = invocation(lua)?;
        let dir = job_dir(&self.id);
        let request_key = format!("{dir}request.json");
        let fingerprint = request_fingerprint(&self.inputs, &self.queries);
        if let Prior::Submitted {
            fingerprint: before,
            recorded,
            created_ms,
        } = self.prior(lua, &inv)?
        {
            // Submitted before under this id: pending, finished, or cleaned up. The same
            // request again is a retry and starts nothing; another one is refused.
            if before != fingerprint {
                return Err(raise(
                    lua,
                    format!(
                        "job:submit: job {:?} was already submitted with other inputs or queries; nothing was written. Submit the same inputs and queries under this id, or use another id",
                        self.id
                    ),
                ));
            }
            if !recorded {
                // The submit that died before its id record may have died before its stale
                // timer too.
                self.stale_timer(lua, &inv, created_ms)?;
                self.write_id_record(lua, &inv, fingerprint, created_ms)?;
            }
            self.submitted = true;
            return Ok(self.id.clone());
        }
        let now = crate::ports::now_ms();
        let state = State {
            v: 1,
            job: self.id.clone(),
            continue_with: Some(script),
            state: self.state.clone(),
            queries: self.queries.iter().map(|q| q.name.clone()).collect(),
            inputs: self.input_keys.clone(),
            created_ms: now,
            stale_after_s: self.stale_after_s,
            on_stale: self.on_stale.clone(),
        };
        let request = Request {
            v: REQUEST_VERSION,
            job: self.id.clone(),
            created_ms: now,
            inputs: self.inputs.clone(),
            queries: self.queries.clone(),
            trace: crate::observe::w3c::trace_id(&inv.trace),
        };
        // State first: request.json is what the partner reacts to, and its answer must find it.
        put(
            lua,
            &inv,
            &state_key(&self.id),
            serde_json::to_vec(&state).map_err(|e| raise(lua, e))?,
        )?;
        put(
            lua,
            &inv,
            &request_key,
            serde_json::to_vec_pretty(&request).map_err(|e| raise(lua, e))?,
        )?;
        self.stale_timer(lua, &inv, now)?;
        // The id record last: until it is there, a retry finds request.json and finishes it.
        if self.id_given {
            self.write_id_record(lua, &inv, fingerprint, now)?;
        }
        self.submitted = true;
        Ok(self.id.clone())
    }
}

impl Draft {
    /// Submits a job of `job:http` requests: the state (and the id record), then the requests
    /// to this process's background performer. Nothing of the requests is written.
    fn submit_http(&mut self, lua: &Lua, script: String) -> mlua::Result<String> {
        let inv = invocation(lua)?;
        let Some(jobs) = inv.services.http_jobs.clone() else {
            return Err(raise(lua, "job:submit: job:http needs the server runtime"));
        };
        if jobs.stopping() {
            return Err(raise(
                lua,
                "job:submit: the server is stopping and takes no new job:http requests; submit again on a running server",
            ));
        }
        // The fingerprint of an id's first submit: names, methods and URLs as written.
        let as_queries: Vec<Query> = self
            .http
            .iter()
            .map(|r| Query {
                name: r.name.clone(),
                query: format!("http {} {}", r.spec.method, r.spec.url),
                params: json!({}),
            })
            .collect();
        let fingerprint = request_fingerprint(&BTreeMap::new(), &as_queries);
        if let Prior::Submitted {
            fingerprint: before,
            ..
        } = self.prior(lua, &inv)?
        {
            if before != fingerprint {
                return Err(raise(
                    lua,
                    format!("job:submit: job {:?} was already submitted with other requests; nothing was sent. Submit the same requests under this id, or use another id", self.id),
                ));
            }
            // Already submitted: a retry sends nothing again.
            self.submitted = true;
            return Ok(self.id.clone());
        }
        let now = crate::ports::now_ms();
        let state = State {
            v: 1,
            job: self.id.clone(),
            continue_with: Some(script),
            state: self.state.clone(),
            queries: self.http.iter().map(|r| r.name.clone()).collect(),
            inputs: Vec::new(),
            created_ms: now,
            stale_after_s: self.stale_after_s,
            on_stale: self.on_stale.clone(),
        };
        put(
            lua,
            &inv,
            &state_key(&self.id),
            serde_json::to_vec(&state).map_err(|e| raise(lua, e))?,
        )?;
        self.stale_timer(lua, &inv, now)?;
        if self.id_given {
            self.write_id_record(lua, &inv, fingerprint, now)?;
        }
        let (bucket, folder) = batch_place(lua, &inv)?;
        jobs.start(
            &inv.handle,
            inv.services.backends.clone(),
            inv.services.log.clone(),
            HttpJob {
                tenant: inv.tenant.name.clone(),
                concurrency: inv.tenant.config.http.concurrency,
                job: self.id.clone(),
                bucket,
                dir: format!("{folder}{}", job_dir(&self.id)),
                depth: inv.depth + 1,
                trace: inv.trace.clone(),
                requests: std::mem::take(&mut self.http),
                policy: super::http::policy(&inv),
            },
        );
        self.submitted = true;
        Ok(self.id.clone())
    }
}

impl UserData for Draft {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("id", |_, d| Ok(d.id.clone()));
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        const INPUT_ROWS: Signature = ("job:input_rows", &["name", "rows"]);
        const QUERY: Signature = ("job:query", &["name", "query", "params?"]);
        const STATE: Signature = ("job:state", &["state"]);
        const CONTINUE_WITH: Signature = ("job:continue_with", &["script"]);
        const HTTP: Signature = ("job:http", &["name", "opts"]);
        const SUBMIT: Signature = ("job:submit", &[]);
        super::add_method_mut(m, INPUT_ROWS, |lua, d, (name, rows): (String, Table)| {
            d.input_rows(lua, name, rows)
        });
        super::add_method_mut(
            m,
            QUERY,
            |lua, d, (name, query, params): (String, String, Value)| {
                d.not_submitted(lua)?;
                d.no_http(lua, "job:query")?;
                crate::keys::check_name("query", &name).map_err(|e| raise(lua, e))?;
                if d.queries.iter().any(|q| q.name == name) {
                    return Err(raise(
                        lua,
                        format!("job:query: a query named {name:?} is already in the job"),
                    ));
                }
                if query.is_empty() {
                    return Err(raise(lua, "job:query: the query is empty"));
                }
                let params = match params {
                    Value::Nil => json!({}),
                    v => from_lua(lua, v, "job:query: the params")?,
                };
                d.queries.push(Query {
                    name: name.clone(),
                    query,
                    params,
                });
                Ok(name)
            },
        );
        super::add_method_mut(m, STATE, |lua, d, v: Value| {
            d.not_submitted(lua)?;
            d.state = from_lua(lua, v, "job:state: the state")?;
            Ok(())
        });
        super::add_method_mut(m, CONTINUE_WITH, |lua, d, script: String| {
            d.not_submitted(lua)?;
            invocation(lua)?
                .tenant
                .script(&script)
                .map_err(|e| raise(lua, format!("job:continue_with: {e}")))?;
            d.continue_with = Some(script);
            Ok(())
        });
        super::add_method_mut(
            m,
            HTTP,
            |lua, d, (name, opts): (String, Table)| -> mlua::Result<()> { d.http(lua, name, opts) },
        );
        super::add_method_mut(m, SUBMIT, |lua, d, ()| d.submit(lua));
    }
}

fn new(lua: &Lua, opts: Option<Table>) -> mlua::Result<Draft> {
    let inv = invocation(lua)?;
    batch_place(lua, &inv)?;
    let id: Option<String> = match &opts {
        Some(o) => o.get("id")?,
        None => None,
    };
    if let Some(id) = &id {
        check_job_id(id).map_err(|e| raise(lua, format!("native.batch.new: {e}")))?;
    }
    let stale_after_s = super::opt_whole(
        lua,
        opts.as_ref(),
        "native.batch.new",
        "stale_after_s",
        1..=crate::timer::MAX_AHEAD_MS / 1000,
    )?;
    let on_stale: Option<String> = match &opts {
        Some(o) => o.get("on_stale")?,
        None => None,
    };
    if let Some(script) = &on_stale {
        if stale_after_s.is_none() {
            return Err(raise(
                lua,
                "native.batch.new: on_stale needs stale_after_s (how long a job may wait for done.json)",
            ));
        }
        if !inv.tenant.config.queue {
            return Err(raise(
                lua,
                format!(
                    "native.batch.new: on_stale needs a queue: set \"queue\": true in {}",
                    inv.config_file()
                ),
            ));
        }
        inv.tenant
            .script(script)
            .map_err(|e| raise(lua, format!("native.batch.new: on_stale: {e}")))?;
    }
    Ok(Draft {
        stale_after_s: stale_after_s.map(|s| s as u64),
        on_stale,
        id_given: id.is_some(),
        id: id.unwrap_or_else(|| format!("{:032x}", crate::random::u128())),
        state: json!({}),
        ..Default::default()
    })
}

fn route(lua: &Lua, event: Value) -> mlua::Result<Value> {
    let Value::Table(ev) = &event else {
        return Ok(Value::Nil);
    };
    let bucket: Option<String> = super::function::field(lua, ev, "native.batch.route", "bucket")?;
    if bucket.as_deref() != Some("$batch") {
        return Ok(Value::Nil);
    }
    let key: String =
        super::function::field::<Option<String>>(lua, ev, "native.batch.route", "key")?
            .unwrap_or_default();
    let Some(job) = done_job(&key) else {
        return Ok(Value::Nil);
    };
    let inv = invocation(lua)?;
    let state = get(lua, &inv, &state_key(job))?;
    let routed_ev = lua.create_table()?;
    for pair in ev.pairs::<Value, Value>() {
        let (k, v) = pair?;
        routed_ev.set(k, v)?;
    }
    routed_ev.set("job", job)?;
    let out = lua.create_table()?;
    out.set("event", routed_ev)?;
    if let Some(bytes) = state {
        let st: State = serde_json::from_slice(&bytes)
            .map_err(|e| raise(lua, format!("state/{job}.json is damaged: {e}")))?;
        out.set("script", st.continue_with)?;
    }
    Ok(Value::Table(out))
}

/// A job as its continuation sees it.
struct Finished {
    id: String,
    ok: bool,
    error: Option<String>,
    done: Done,
    state: State,
}

impl Finished {
    fn dataset(&self, lua: &Lua, name: &str) -> mlua::Result<&Dataset> {
        self.done.results.get(name).ok_or_else(|| {
            raise(
                lua,
                format!(
                    "job {:?} has no result {name:?}; it has {}",
                    self.id,
                    self.done
                        .results
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })
    }

    fn keys(&self) -> Vec<String> {
        let dir = job_dir(&self.id);
        let mut keys = vec![
            format!("{dir}done.json"),
            state_key(&self.id),
            format!("{dir}request.json"),
        ];
        for d in self.done.results.values() {
            keys.extend(d.parts.iter().map(|p| format!("{dir}{}", p.key)));
        }
        keys.extend(self.state.inputs.iter().cloned());
        keys.dedup();
        keys
    }
}

/// Opens parts of a job in the batch bucket for a reader, within the invocation's limits.
pub(crate) struct JobParts<'a> {
    pub(crate) inv: &'a Invocation,
    pub(crate) bucket: &'a str,
    pub(crate) dir: &'a str,
}

impl PartSource for JobParts<'_> {
    fn open(&mut self, key: &str) -> crate::Result<Option<Opened>> {
        use crate::budget::Budget;
        self.inv.spend(1)?;
        let full = format!("{}{key}", self.dir);
        let objects = self.inv.services.backends.objects.clone();
        let got = crate::blocking::wait(&self.inv.handle, objects.open(self.bucket, &full))?;
        Ok(got.map(|(meta, r)| Opened {
            size: meta.size,
            verified_sha256: r.verified_sha256().map(str::to_string),
            reader: Box::new(Blocking::new(r, self.inv.handle.clone(), self.inv.deadline)),
        }))
    }

    fn consumed(&mut self, bytes: u64) -> crate::Result<()> {
        self.inv.stream_consumed(bytes)
    }

    fn max_row(&self) -> usize {
        (u64::from(self.inv.tenant.config.limits.max_object_mb) * MB) as usize
    }
}

/// Reads up to `rows` rows (or `bytes`) of `r` into `data`: the batch step of a row iterator.
pub(crate) fn fill_rows(
    r: &mut Rows,
    src: &mut dyn PartSource,
    lua: &Lua,
    data: &mut Vec<u8>,
    spans: &mut Vec<super::rows::Span>,
    rows: usize,
    bytes: usize,
) -> (bool, Option<mlua::Error>) {
    match r.next_lines_into(src, data, spans, rows, bytes) {
        Ok(ended) => (ended, None),
        Err(e) => (false, Some(super::raise_error(lua, e))),
    }
}

/// The rows of a result, read from the batch bucket.
struct JobRows {
    rows: Rows,
    bucket: String,
    dir: String,
}

impl super::rows::LineSource for JobRows {
    fn fill(
        &mut self,
        lua: &Lua,
        data: &mut Vec<u8>,
        spans: &mut Vec<super::rows::Span>,
        rows: usize,
        bytes: usize,
    ) -> (bool, Option<mlua::Error>) {
        let inv = match invocation(lua) {
            Ok(inv) => inv,
            Err(e) => return (true, Some(e)),
        };
        let mut src = JobParts {
            inv: &inv,
            bucket: &self.bucket,
            dir: &self.dir,
        };
        fill_rows(&mut self.rows, &mut src, lua, data, spans, rows, bytes)
    }

    fn bad_row(&self, line: u64, part: usize, err: String) -> String {
        self.rows.bad_row(line, part, err).to_string()
    }
}

impl UserData for Finished {
    fn add_fields<F: UserDataFields<Self>>(f: &mut F) {
        f.add_field_method_get("id", |_, j| Ok(j.id.clone()));
        f.add_field_method_get("ok", |_, j| Ok(j.ok));
        f.add_field_method_get("error", |_, j| Ok(j.error.clone()));
        f.add_field_method_get("results", |lua, j| {
            to_lua(
                lua,
                &serde_json::to_value(&j.done.results).unwrap_or_default(),
            )
        });
        f.add_field_method_get("state", |lua, j| to_lua(lua, &j.state.state));
    }

    fn add_methods<M: UserDataMethods<Self>>(m: &mut M) {
        const ROWS: Signature = ("job:rows", &["name"]);
        const BODY: Signature = ("job:body", &["name"]);
        const KEYS: Signature = ("job:keys", &[]);
        super::add_method(m, ROWS, |lua, j, name: String| {
            let d = j.dataset(lua, &name)?;
            let inv = invocation(lua)?;
            let (bucket, folder) = batch_place(lua, &inv)?;
            let rows = Rows::new(
                format!("result {name:?} of job {:?}", j.id),
                d.parts.clone(),
                d.rows,
            );
            drop(inv);
            super::rows::iterator(
                lua,
                JobRows {
                    rows,
                    bucket,
                    dir: format!("{folder}{}", job_dir(&j.id)),
                },
            )
        });
        super::add_method(m, BODY, |lua, j, name: String| {
            let d = j.dataset(lua, &name)?;
            let inv = invocation(lua)?;
            let (bucket, folder) = batch_place(lua, &inv)?;
            let max = u64::from(inv.tenant.config.limits.max_object_mb) * MB;
            let dir = format!("{folder}{}", job_dir(&j.id));
            let mut src = JobParts {
                inv: &inv,
                bucket: &bucket,
                dir: &dir,
            };
            let mut out = Vec::new();
            for part in &d.parts {
                let what = format!("result {name:?} of job {:?}, part {:?}", j.id, part.key);
                let Opened {
                    size,
                    reader: mut r,
                    verified_sha256,
                } = src
                    .open(&part.key)
                    .map_err(|e| super::raise_error(lua, e))?
                    .ok_or_else(|| raise(lua, format!("{what}: the part is missing")))?;
                if out.len() as u64 + size > max {
                    return Err(raise(lua, format!("{what}: the body is larger than max_object_mb ({max} bytes); read it with job:rows")));
                }
                let start = out.len();
                r.read_to_end(&mut out)
                    .map_err(|e| raise(lua, format!("{what}: {e}")))?;
                src.consumed((out.len() - start) as u64)
                    .map_err(|e| super::raise_error(lua, e))?;
                let got = &out[start..];
                if part.bytes.is_some_and(|b| b != got.len() as u64) {
                    return Err(raise(
                        lua,
                        format!(
                            "{what}: read {} bytes, the manifest says {}",
                            got.len(),
                            part.bytes.unwrap_or(0)
                        ),
                    ));
                }
                let checked = store_checks(part.sha256.as_deref(), verified_sha256.as_deref());
                if let Some(want) = part.sha256.as_ref().filter(|_| !checked) {
                    let have = hex::encode(Sha256::digest(got));
                    if !have.eq_ignore_ascii_case(want) {
                        return Err(raise(
                            lua,
                            format!("{what}: sha256 is {have}, the manifest says {want}"),
                        ));
                    }
                }
            }
            lua.create_string(&out)
        });
        super::add_method(m, KEYS, |lua, j, ()| {
            let mut keys = j.keys();
            if keys.len() > MAX_KEYS {
                let inv = invocation(lua)?;
                inv.services.log.write(&json!({
                    "level": "warn", "tenant": inv.tenant.name, "script": inv.script,
                    "msg": format!("job {:?} has {} objects; keys() returns the first {MAX_KEYS} (done.json, state, request first): expire jobs/ and state/ with a lifecycle rule", j.id, keys.len()),
                }));
                keys.truncate(MAX_KEYS);
            }
            let t = lua.create_table()?;
            for (i, k) in keys.into_iter().enumerate() {
                let e = lua.create_table()?;
                e.set("bucket", "$batch")?;
                e.set("key", k)?;
                t.raw_seti(i + 1, e)?;
            }
            Ok(t)
        });
    }
}

fn hydrate(lua: &Lua, (ev, opts): (Value, Option<Table>)) -> mlua::Result<Value> {
    let allow_failure = match &opts {
        Some(o) => o.get::<Option<bool>>("allow_failure")?.unwrap_or(false),
        None => false,
    };
    let job = match &ev {
        Value::Table(t) => t.get::<Option<String>>("job")?,
        _ => None,
    }
    .ok_or_else(|| {
        raise(
            lua,
            "batch.hydrate expects the routed event, which has job (see native.batch.route)",
        )
    })?;
    check_job_id(&job).map_err(|e| raise(lua, e))?;
    let inv = invocation(lua)?;
    let Some(state) = get(lua, &inv, &state_key(&job))? else {
        return Ok(Value::Nil);
    };
    let state: State = serde_json::from_slice(&state)
        .map_err(|e| raise(lua, format!("state/{job}.json is damaged: {e}")))?;
    let Some(done) = get(lua, &inv, &format!("{}done.json", job_dir(&job)))? else {
        return Ok(Value::Nil);
    };
    let done: Done = crate::batch::contract::read_done(&done)
        .map_err(|e| raise(lua, format!("jobs/{job}/done.json: {e}")))?;
    drop(inv);
    // Part keys first, whatever `ok` says: a failed job's keys() still names its parts, and a
    // key that climbs out would make the continuation's `{ delete = job:keys() }` fail on every
    // retry (or reach outside the job) instead of saying what the partner got wrong.
    for (name, d) in &done.results {
        for p in &d.parts {
            check_part_key(&p.key)
                .map_err(|e| raise(lua, format!("jobs/{job}/done.json: result {name:?}: {e}")))?;
        }
    }
    if !done.ok {
        let why = done
            .error
            .clone()
            .unwrap_or_else(|| "the partner gave no error".into());
        if !allow_failure {
            return Err(raise(lua, format!("batch job {job:?} failed: {why} (pass {{ allow_failure = true }} to hydrate to handle it)")));
        }
        let f = Finished {
            id: job,
            ok: false,
            error: Some(why),
            done,
            state,
        };
        return lua.create_userdata(f).map(Value::UserData);
    }
    for q in &state.queries {
        if !done.results.contains_key(q) {
            return Err(raise(
                lua,
                format!("jobs/{job}/done.json has no result for query {q:?}"),
            ));
        }
    }
    let f = Finished {
        id: job,
        ok: true,
        error: None,
        done,
        state,
    };
    lua.create_userdata(f).map(Value::UserData)
}

/// The `native.batch` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const NEW: Signature = ("native.batch.new", &["opts?"]);
    const ROUTE: Signature = ("native.batch.route", &["event"]);
    const HYDRATE: Signature = ("native.batch.hydrate", &["ev", "opts?"]);
    t.set("new", super::function(lua, NEW, new)?)?;
    t.set("route", super::function(lua, ROUTE, route)?)?;
    t.set("hydrate", super::function(lua, HYDRATE, hydrate)?)?;
    Ok(t)
}

/// Registers the job types with a VM without making a job, so that their methods can be listed.
#[cfg(test)]
pub(super) fn register_types(lua: &Lua) -> mlua::Result<()> {
    lua.create_proxy::<Draft>()?;
    lua.create_proxy::<Finished>()?;
    Ok(())
}
