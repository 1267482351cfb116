//! A job being built by a script: `native.batch.new`, the draft's methods (`input_rows`,
//! `query`, `http`, `state`, `continue_with`) and their checks. Submitting is `submit.rs`.

use std::collections::BTreeMap;

use mlua::{Lua, Table, UserData, UserDataFields, UserDataMethods, Value};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::super::Signature;
use super::super::{from_lua, invocation, raise, to_json_text};
use super::{batch_place, put, MB};
use crate::batch::manifest::{check_job_id, job_dir, Dataset, Part, Query};
use crate::outbound::jobs::{JobRequest, REQUEST_TIMEOUT};

/// Input parts are cut at this size (or `max_object_mb`, if smaller).
const INPUT_PART_BYTES: u64 = 64 * MB;

/// What the id of a draft was used for before, looked up once per draft.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) enum Prior {
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
pub(super) struct Draft {
    pub(super) id: String,
    pub(super) id_given: bool,
    pub(super) inputs: BTreeMap<String, Dataset>,
    pub(super) input_keys: Vec<String>,
    pub(super) queries: Vec<Query>,
    pub(super) state: serde_json::Value,
    pub(super) continue_with: Option<String>,
    pub(super) submitted: bool,
    pub(super) prior: Prior,
    pub(super) stale_after_s: Option<u64>,
    pub(super) on_stale: Option<String>,
    /// `job:http` requests, performed in the background after submit.
    pub(super) http: Vec<JobRequest>,
}

impl Draft {
    pub(super) fn not_submitted(&self, lua: &Lua) -> mlua::Result<()> {
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

    pub(super) fn no_http(&self, lua: &Lua, func: &str) -> mlua::Result<()> {
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
                data: None,
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
        let spec = super::super::http::spec_from_lua(lua, &inv, "job:http", &opts)?;
        super::super::http::charge_request(lua, &inv, "job:http")?;
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
        super::super::add_method_mut(m, INPUT_ROWS, |lua, d, (name, rows): (String, Table)| {
            d.input_rows(lua, name, rows)
        });
        super::super::add_method_mut(
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
        super::super::add_method_mut(m, STATE, |lua, d, v: Value| {
            d.not_submitted(lua)?;
            d.state = from_lua(lua, v, "job:state: the state")?;
            Ok(())
        });
        super::super::add_method_mut(m, CONTINUE_WITH, |lua, d, script: String| {
            d.not_submitted(lua)?;
            invocation(lua)?
                .tenant
                .script(&script)
                .map_err(|e| raise(lua, format!("job:continue_with: {e}")))?;
            d.continue_with = Some(script);
            Ok(())
        });
        super::super::add_method_mut(
            m,
            HTTP,
            |lua, d, (name, opts): (String, Table)| -> mlua::Result<()> { d.http(lua, name, opts) },
        );
        super::super::add_method_mut(m, SUBMIT, |lua, d, ()| d.submit(lua));
    }
}

pub(super) fn new(lua: &Lua, opts: Option<Table>) -> mlua::Result<Draft> {
    let inv = invocation(lua)?;
    batch_place(lua, &inv)?;
    let id: Option<String> = match &opts {
        Some(o) => o.get("id")?,
        None => None,
    };
    if let Some(id) = &id {
        check_job_id(id).map_err(|e| raise(lua, format!("native.batch.new: {e}")))?;
    }
    let stale_after_s = super::super::opt_whole(
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
