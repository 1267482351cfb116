//! A finished job as its continuation sees it: `native.batch.hydrate` checks `done.json`
//! against the state, and the job's `rows`, `body` and `keys` read and clean up its results.

use std::io::Read;

use mlua::{Lua, Table, UserData, UserDataFields, UserDataMethods, Value};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::super::Signature;
use super::super::{invocation, raise, to_lua};
use super::parts::{JobParts, JobRows};
use super::{batch_place, get, MB};
use crate::batch::manifest::{
    check_job_id, check_part_key, job_dir, state_key, Dataset, Done, State,
};
use crate::batch::reader::{open_part, store_checks, Opened, PartSource, Rows};

/// The most keys `job:keys()` returns: what `{ delete = ... }` takes.
const MAX_KEYS: usize = crate::config::MAX_DELETES;

/// A job as its continuation sees it.
pub(super) struct Finished {
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
            // An inline part has no object.
            keys.extend(
                d.parts
                    .iter()
                    .filter(|p| p.stored())
                    .map(|p| format!("{dir}{}", p.key)),
            );
        }
        keys.extend(self.state.inputs.iter().cloned());
        keys.dedup();
        keys
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
        super::super::add_method(m, ROWS, |lua, j, name: String| {
            let d = j.dataset(lua, &name)?;
            let inv = invocation(lua)?;
            let (bucket, folder) = batch_place(lua, &inv)?;
            let rows = Rows::new(
                format!("result {name:?} of job {:?}", j.id),
                d.parts.clone(),
                d.rows,
            );
            drop(inv);
            super::super::rows::iterator(
                lua,
                JobRows {
                    rows,
                    bucket,
                    dir: format!("{folder}{}", job_dir(&j.id)),
                },
            )
        });
        super::super::add_method(m, BODY, |lua, j, name: String| {
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
                } = open_part(&mut src, part)
                    .map_err(|e| super::super::raise_error(lua, e))?
                    .ok_or_else(|| raise(lua, format!("{what}: the part is missing")))?;
                if out.len() as u64 + size > max {
                    return Err(raise(lua, format!("{what}: the body is larger than max_object_mb ({max} bytes); read it with job:rows")));
                }
                let start = out.len();
                r.read_to_end(&mut out)
                    .map_err(|e| raise(lua, format!("{what}: {e}")))?;
                src.consumed((out.len() - start) as u64)
                    .map_err(|e| super::super::raise_error(lua, e))?;
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
        super::super::add_method(m, KEYS, |lua, j, ()| {
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

pub(super) fn hydrate(lua: &Lua, (ev, opts): (Value, Option<Table>)) -> mlua::Result<Value> {
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
