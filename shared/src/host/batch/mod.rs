//! `native.batch`: jobs for partners through the batch bucket. `new` gives a draft to fill and
//! submit; `route` tells a router which script owns a `done.json`; `hydrate` gives the
//! continuation the verified results.

mod draft;
mod finished;
mod parts;
mod submit;

use bytes::Bytes;
use mlua::{Lua, Table, Value};

use super::Signature;
use super::{invocation, raise, Invocation};
use crate::batch::manifest::{done_job, state_key, State};
use crate::ports::PutMode;
pub(crate) use parts::{fill_rows, JobParts};

const MB: u64 = 1024 * 1024;

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

/// The `native.batch` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const NEW: Signature = ("native.batch.new", &["opts?"]);
    const ROUTE: Signature = ("native.batch.route", &["event"]);
    const HYDRATE: Signature = ("native.batch.hydrate", &["ev", "opts?"]);
    t.set("new", super::function(lua, NEW, draft::new)?)?;
    t.set("route", super::function(lua, ROUTE, route)?)?;
    t.set("hydrate", super::function(lua, HYDRATE, finished::hydrate)?)?;
    Ok(t)
}

/// Registers the job types with a VM without making a job, so that their methods can be listed.
#[cfg(test)]
pub(super) fn register_types(lua: &Lua) -> mlua::Result<()> {
    lua.create_proxy::<draft::Draft>()?;
    lua.create_proxy::<finished::Finished>()?;
    Ok(())
}
