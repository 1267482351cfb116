//! Submitting a draft: what its id was used for before (a retry starts nothing), the state,
//! request.json and id record in the order that survives a crash between any two, the stale
//! timer, and `job:http` jobs handed to the background performer.

use std::collections::BTreeMap;

use mlua::Lua;
use serde_json::json;

use super::super::{invocation, raise, Invocation};
use super::draft::{Draft, Prior};
use super::{batch_place, get, put};
use crate::batch::manifest::{
    id_record_key, job_dir, request_fingerprint, state_key, IdRecord, Query, Request, State,
    REQUEST_VERSION,
};
use crate::outbound::jobs::HttpJob;

impl Draft {
    /// What the draft's id was used for: its id record, else its request.json (1 or 2 backend
    /// calls, once per draft; none without an id).
    pub(super) fn prior(&mut self, lua: &Lua, inv: &Invocation) -> mlua::Result<Prior> {
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
                .map_err(|m| super::super::raise_error(lua, m))?,
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

    pub(super) fn submit(&mut self, lua: &Lua) -> mlua::Result<String> {
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
        self.record_wait(&inv, "job submitted", "bucket");
        Ok(self.id.clone())
    }

    /// Records in the run's chain that it now waits on this job, for the console's timeline
    /// (a retry of a submit records nothing again).
    fn record_wait(&self, inv: &Invocation, msg: &str, via: &str) {
        super::super::barrier::record_wait(
            inv,
            msg,
            json!({ "wait": "job", "job": self.id, "via": via,
                "continue_with": self.continue_with, "parts": self.queries.len() + self.http.len() }),
        );
    }

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
        self.record_wait(&inv, "job submitted", "http");
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
                policy: super::super::http::policy(&inv),
            },
        );
        self.submitted = true;
        Ok(self.id.clone())
    }
}
