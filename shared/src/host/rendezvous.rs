//! `native.rendezvous`: the rendezvous barriers of [`crate::rendezvous`] for scripts, with the
//! contract's field names in option tables. Scripts never block on a barrier: instead of
//! waiting they name a `continue_with` script, which gets one message per trip.

use mlua::{Lua, Table, Value};

use super::Signature;
use super::{invocation, raise, to_lua, Invocation};
use crate::rendezvous::{
    Barrier, CreateBarrier, Metadata, Rendezvous, UpdateBarrier, DEFAULT_NAMESPACE,
};
use crate::Error;

fn rdv(inv: &Invocation) -> Rendezvous<'_, Invocation> {
    let b = &inv.services.backends;
    let mut r = Rendezvous::new(&*b.kv, &*b.queue, &inv.tenant.name, inv);
    r.queue_enabled = inv.tenant.config.queue;
    r.limit_to(&inv.tenant.config.limits);
    r
}

/// A string field of an option table (`None` when absent).
fn opt_str(lua: &Lua, t: &Table, func: &str, field: &str) -> mlua::Result<Option<String>> {
    match t.get::<Value>(field)? {
        Value::Nil => Ok(None),
        Value::String(s) => Ok(Some(s.to_str()?.to_string())),
        other => Err(raise(
            lua,
            format!(
                "{func}: parameter \"{field}\" must be a string, not {}",
                super::function::a_type(&other)
            ),
        )),
    }
}

fn need_str(lua: &Lua, t: &Table, func: &str, field: &str) -> mlua::Result<String> {
    opt_str(lua, t, func, field)?
        .ok_or_else(|| raise(lua, format!("{func}: parameter \"{field}\" is required")))
}

/// The `namespace` field (default `default`), checked here so that a bad one is named as the
/// script wrote it, not as the HTTP API's `namespace_name`.
fn namespace(lua: &Lua, t: &Table, func: &str) -> mlua::Result<String> {
    let ns = opt_str(lua, t, func, "namespace")?.unwrap_or_else(|| DEFAULT_NAMESPACE.into());
    named(lua, func, "namespace", ns)
}

/// The `name` field (the HTTP API's `barrier_name`), required and checked.
fn barrier_name(lua: &Lua, t: &Table, func: &str) -> mlua::Result<String> {
    let name = need_str(lua, t, func, "name")?;
    named(lua, func, "name", name)
}

fn named(lua: &Lua, func: &str, field: &str, v: String) -> mlua::Result<String> {
    match crate::rendezvous::check_name(field, &v) {
        Ok(()) => Ok(v),
        Err(Error::InvalidInput(m)) => Err(raise(lua, format!("{func}: {m}"))),
        Err(e) => Err(raise(lua, format!("{func}: {e}"))),
    }
}

fn whole(
    lua: &Lua,
    t: &Table,
    func: &str,
    field: &str,
    range: std::ops::RangeInclusive<i64>,
) -> mlua::Result<Option<u64>> {
    Ok(super::opt_whole(lua, Some(t), func, field, range)?.map(|n| n as u64))
}

fn need_whole(
    lua: &Lua,
    t: &Table,
    func: &str,
    field: &str,
    range: std::ops::RangeInclusive<i64>,
) -> mlua::Result<u64> {
    whole(lua, t, func, field, range)?
        .ok_or_else(|| raise(lua, format!("{func}: parameter \"{field}\" is required")))
}

/// A metadata table of strings (the core checks the counts and sizes).
fn metadata(lua: &Lua, t: &Table, func: &str) -> mlua::Result<Metadata> {
    let m = match t.get::<Value>("metadata")? {
        Value::Nil => return Ok(Metadata::new()),
        Value::Table(m) => m,
        other => {
            return Err(raise(
                lua,
                format!(
                    "{func}: parameter \"metadata\" must be a table of strings, not {}",
                    super::function::a_type(&other)
                ),
            ))
        }
    };
    let mut out = Metadata::new();
    for pair in m.pairs::<Value, Value>() {
        let (k, v) = pair?;
        match (k, v) {
            (Value::String(k), Value::String(v)) => {
                out.insert(k.to_str()?.to_string(), v.to_str()?.to_string());
            }
            (k, v) => {
                return Err(raise(
                    lua,
                    format!(
                        "{func}: metadata must map strings to strings, not {} to {}",
                        super::function::a_type(&k),
                        super::function::a_type(&v)
                    ),
                ))
            }
        }
        if out.len() > crate::rendezvous::MAX_METADATA_ENTRIES {
            break; // the core names the limit; stop reading a huge table here
        }
    }
    Ok(out)
}

/// Runs a core call; its error is raised with the function's name in front.
fn run<T>(
    lua: &Lua,
    inv: &Invocation,
    func: &str,
    fut: impl std::future::Future<Output = crate::Result<T>>,
) -> mlua::Result<T> {
    inv.block_on(lua, async {
        fut.await.map_err(|e| match e {
            Error::Precondition { what } => Error::InvalidInput(format!("{func}: {what}")),
            Error::InvalidInput(m) => Error::InvalidInput(format!("{func}: {m}")),
            Error::NotFound { what, .. } => {
                Error::InvalidInput(format!("{func}: {what} not found"))
            }
            Error::AlreadyExists { what } => {
                Error::InvalidInput(format!("{func}: {what} already exists"))
            }
            e => e,
        })
    })
}

fn barrier(lua: &Lua, b: &Barrier) -> mlua::Result<Value> {
    to_lua(lua, &serde_json::to_value(b).map_err(|e| raise(lua, e))?)
}

const PROCESSES: std::ops::RangeInclusive<i64> = 1..=1_000_000;
const WINDOW: std::ops::RangeInclusive<i64> = 60..=(crate::rendezvous::MAX_INACTIVE_S as i64);
const POSITIVE: std::ops::RangeInclusive<i64> = 1..=(1 << 53);

fn create(lua: &Lua, t: Table) -> mlua::Result<Value> {
    const F: &str = "native.rendezvous.create";
    let continue_with = opt_str(lua, &t, F, "continue_with")?;
    let spec = CreateBarrier {
        namespace: namespace(lua, &t, F)?,
        name: barrier_name(lua, &t, F)?,
        description: opt_str(lua, &t, F, "description")?.unwrap_or_default(),
        expected_processes: need_whole(lua, &t, F, "expected_processes", PROCESSES)?,
        delete_inactive_after_seconds: need_whole(
            lua,
            &t,
            F,
            "delete_inactive_after_seconds",
            WINDOW,
        )?,
        metadata: metadata(lua, &t, F)?,
        continue_with: continue_with.clone(),
    };
    let inv = invocation(lua)?;
    if let Some(script) = &continue_with {
        inv.tenant
            .script(script)
            .map_err(|e| raise(lua, format!("{F}: continue_with: {e}")))?;
    }
    let ns = spec.namespace.clone();
    let b = run(lua, &inv, F, rdv(&inv).create(spec))?;
    if let Some(script) = &continue_with {
        // The chain now waits on its peers: a step of its own chain, for the console's
        // timeline (its continuation runs in this chain).
        super::barrier::record_wait(
            &inv,
            "rendezvous barrier created",
            serde_json::json!({ "wait": "rendezvous", "namespace": ns, "rendezvous": b.name,
                "expected_processes": b.expected_processes, "continue_with": script }),
        );
    }
    barrier(lua, &b)
}

fn get(lua: &Lua, t: Table) -> mlua::Result<Value> {
    const F: &str = "native.rendezvous.get";
    let (ns, name) = (namespace(lua, &t, F)?, barrier_name(lua, &t, F)?);
    let inv = invocation(lua)?;
    let r = rdv(&inv);
    let found = run(lua, &inv, F, async {
        match r.get(&ns, &name).await {
            Ok(b) => Ok(Some(b)),
            // A barrier that is not there (or no longer) is nil, as in native.barrier.status;
            // a namespace that is not there stays an error.
            Err(Error::NotFound {
                missing: crate::error::Missing::Rendezvous,
                ..
            }) => Ok(None),
            Err(e) => Err(e),
        }
    })?;
    match found {
        Some(b) => barrier(lua, &b),
        None => Ok(Value::Nil),
    }
}

fn arrive(lua: &Lua, t: Table) -> mlua::Result<Table> {
    const F: &str = "native.rendezvous.arrive";
    let ns = namespace(lua, &t, F)?;
    let name = barrier_name(lua, &t, F)?;
    let process_id = need_str(lua, &t, F, "process_id")?;
    let generation = need_whole(lua, &t, F, "expected_generation", POSITIVE)?;
    let meta = metadata(lua, &t, F)?;
    let inv = invocation(lua)?;
    let a = run(
        lua,
        &inv,
        F,
        rdv(&inv).arrive(&ns, &name, &process_id, generation, meta),
    )?;
    let out = lua.create_table()?;
    out.set("barrier", barrier(lua, &a.barrier)?)?;
    out.set("all_arrived", a.all_arrived)?;
    Ok(out)
}

fn update(lua: &Lua, t: Table) -> mlua::Result<Value> {
    const F: &str = "native.rendezvous.update";
    let spec = UpdateBarrier {
        namespace: namespace(lua, &t, F)?,
        name: barrier_name(lua, &t, F)?,
        description: opt_str(lua, &t, F, "description")?.unwrap_or_default(),
        expected_processes: need_whole(lua, &t, F, "expected_processes", PROCESSES)?,
        metadata: metadata(lua, &t, F)?,
        expected_version: need_whole(lua, &t, F, "expected_version", POSITIVE)?,
        delete_inactive_after_seconds: need_whole(
            lua,
            &t,
            F,
            "delete_inactive_after_seconds",
            WINDOW,
        )?,
    };
    let inv = invocation(lua)?;
    let b = run(lua, &inv, F, rdv(&inv).update(spec))?;
    barrier(lua, &b)
}

fn delete(lua: &Lua, t: Table) -> mlua::Result<()> {
    const F: &str = "native.rendezvous.delete";
    let (ns, name) = (namespace(lua, &t, F)?, barrier_name(lua, &t, F)?);
    let inv = invocation(lua)?;
    run(lua, &inv, F, rdv(&inv).delete(&ns, &name))
}

fn page(lua: &Lua, items: Value, next: Option<String>) -> mlua::Result<Table> {
    let out = lua.create_table()?;
    out.set("items", items)?;
    out.set("cursor", next)?;
    Ok(out)
}

fn list(lua: &Lua, t: Option<Table>) -> mlua::Result<Table> {
    const F: &str = "native.rendezvous.list";
    let t = match t {
        Some(t) => t,
        None => lua.create_table()?,
    };
    let ns = namespace(lua, &t, F)?;
    let cursor = opt_str(lua, &t, F, "cursor")?.unwrap_or_default();
    let limit = whole(lua, &t, F, "limit", 1..=250)?.unwrap_or(0);
    let inv = invocation(lua)?;
    let p = run(lua, &inv, F, rdv(&inv).list(&ns, &cursor, limit))?;
    let items = to_lua(
        lua,
        &serde_json::to_value(&p.items).map_err(|e| raise(lua, e))?,
    )?;
    page(lua, items, p.next)
}

fn participants(lua: &Lua, t: Table) -> mlua::Result<Table> {
    const F: &str = "native.rendezvous.participants";
    let ns = namespace(lua, &t, F)?;
    let name = barrier_name(lua, &t, F)?;
    let generation = whole(lua, &t, F, "generation", 0..=(1 << 53))?.unwrap_or(0);
    let cursor = opt_str(lua, &t, F, "cursor")?.unwrap_or_default();
    let limit = whole(lua, &t, F, "limit", 1..=250)?.unwrap_or(0);
    let inv = invocation(lua)?;
    let p = run(
        lua,
        &inv,
        F,
        rdv(&inv).participants(&ns, &name, generation, &cursor, limit),
    )?;
    let items = to_lua(
        lua,
        &serde_json::to_value(&p.items).map_err(|e| raise(lua, e))?,
    )?;
    page(lua, items, p.next)
}

/// The `native.rendezvous` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const CREATE: Signature = ("native.rendezvous.create", &["opts"]);
    const GET: Signature = ("native.rendezvous.get", &["opts"]);
    const ARRIVE: Signature = ("native.rendezvous.arrive", &["opts"]);
    const UPDATE: Signature = ("native.rendezvous.update", &["opts"]);
    const DELETE: Signature = ("native.rendezvous.delete", &["opts"]);
    const LIST: Signature = ("native.rendezvous.list", &["opts?"]);
    const PARTICIPANTS: Signature = ("native.rendezvous.participants", &["opts"]);
    t.set("create", super::function(lua, CREATE, create)?)?;
    t.set("get", super::function(lua, GET, get)?)?;
    t.set("arrive", super::function(lua, ARRIVE, arrive)?)?;
    t.set("update", super::function(lua, UPDATE, update)?)?;
    t.set("delete", super::function(lua, DELETE, delete)?)?;
    t.set("list", super::function(lua, LIST, list)?)?;
    t.set(
        "participants",
        super::function(lua, PARTICIPANTS, participants)?,
    )?;
    Ok(t)
}
