//! `native.barrier`: create, ack, hydrate and status, over [`crate::barrier::Barriers`].

use mlua::{Lua, Table, Value};

use super::Signature;
use super::{from_lua, invocation, raise, to_lua, Invocation};
use crate::barrier::{Barriers, CreateSpec, Meta, Outcome};
use crate::observe::step;
use crate::Error;

fn barriers(inv: &Invocation) -> Barriers<'_> {
    Barriers {
        kv: inv.services.backends.kv.as_ref(),
        queue: inv.services.backends.queue.as_ref(),
        tenant: &inv.tenant.name,
        queue_enabled: inv.tenant.config.queue,
        budget: inv,
    }
}

/// Runs a barrier operation, turning a breached limit into a recorded breach: a pre-check
/// (create's `max_data_ops`) fails the invocation even under `pcall`, like any breach.
fn run<T>(
    lua: &Lua,
    inv: &Invocation,
    fut: impl std::future::Future<Output = crate::Result<T>>,
) -> mlua::Result<T> {
    inv.block_on(lua, async {
        let r = fut.await;
        if let Err(Error::LimitExceeded { limit, detail }) = &r {
            inv.record_breach(limit, detail);
        }
        r
    })
}

/// [`run`] for the calls that change a barrier after create: a refusal names the function
/// (`native.barrier.add: unknown barrier "x" ...`), as argument errors do.
fn run_named<T>(
    lua: &Lua,
    inv: &Invocation,
    func: &str,
    fut: impl std::future::Future<Output = crate::Result<T>>,
) -> mlua::Result<T> {
    run(lua, inv, async {
        fut.await.map_err(|e| match e {
            Error::InvalidInput(msg) => {
                // Core messages may already carry the short name (`barrier.add: ...`).
                let short = func.trim_start_matches("native.");
                let msg = msg
                    .strip_prefix(short)
                    .and_then(|m| m.strip_prefix(": "))
                    .unwrap_or(&msg);
                Error::InvalidInput(format!("{func}: {msg}"))
            }
            other => other,
        })
    })
}

fn create(lua: &Lua, opts: Table) -> mlua::Result<String> {
    let members: Vec<String> = match opts.get::<Value>("members")? {
        Value::Table(t) => t
            .sequence_values::<String>()
            .collect::<mlua::Result<_>>()
            .map_err(|_| raise(lua, "barrier.create: members must be a list of strings"))?,
        _ => {
            return Err(raise(
                lua,
                "barrier.create: members must be a list of strings",
            ))
        }
    };
    let continue_with: Option<String> = opts.get("continue_with")?;
    let on_overdue: Option<String> = opts.get("on_overdue")?;
    // A deadline past the barrier's own life (a week) could never be met or missed.
    let deadline_s = super::opt_whole(
        lua,
        Some(&opts),
        "native.barrier.create",
        "deadline_s",
        1..=crate::barrier::TTL_S,
    )?;
    let state = from_lua(
        lua,
        opts.get::<Value>("state")?,
        "native.barrier.create: the state",
    )?;
    let spec = CreateSpec {
        id: opts.get("id")?,
        members,
        continue_with: continue_with.clone(),
        state,
        deadline_s: deadline_s.map(|d| d as u64),
        on_overdue: on_overdue.clone(),
    };
    let inv = invocation(lua)?;
    for (field, script) in [
        ("continue_with", &continue_with),
        ("on_overdue", &on_overdue),
    ] {
        if let Some(script) = script {
            inv.tenant
                .script(script)
                .map_err(|e| raise(lua, format!("barrier.create: {field}: {e}")))?;
        }
    }
    let members = spec.members.len();
    let id = run(lua, &inv, barriers(&inv).create(spec))?;
    // The chain now waits on it: a step of its own chain, for the console's timeline.
    record_wait(
        &inv,
        "barrier created",
        serde_json::json!({ "wait": "barrier", "barrier": id, "members": members,
            "continue_with": continue_with }),
    );
    Ok(id)
}

fn outcome(lua: &Lua, v: Value) -> mlua::Result<Outcome> {
    let t = match v {
        Value::Nil => {
            return Ok(Outcome {
                ok: true,
                error: None,
                result: None,
            })
        }
        Value::Table(t) => t,
        other => {
            let kind = match other {
                Value::Integer(_) | Value::Number(_) => "number",
                o => o.type_name(),
            };
            return Err(raise(lua, format!("native.barrier.ack: parameter \"outcome\" must be a table, not a {kind} (an outcome is {{ ok = true|false, error = string?, result = any? }})")));
        }
    };
    let ok = match t.get::<Value>("ok")? {
        Value::Nil => true,
        Value::Boolean(b) => b,
        other => {
            return Err(raise(
                lua,
                format!(
                    "barrier.ack: outcome.ok must be a boolean, not {}",
                    super::function::a_type(&other)
                ),
            ))
        }
    };
    let error = match t.get::<Value>("error")? {
        Value::Nil => None,
        Value::String(s) => Some(s.to_string_lossy()),
        other => Some(other.to_string()?),
    };
    let result = match t.get::<Value>("result")? {
        Value::Nil => None,
        v => Some(from_lua(
            lua,
            v,
            "native.barrier.ack: the outcome's result",
        )?),
    };
    Ok(Outcome { ok, error, result })
}

/// Records in the barrier's chain `chain` that this script's run moved it (`msg`): a step
/// ([`crate::observe::step`]) linked to the run's own chain, naming what started the run.
fn record_step(inv: &Invocation, chain: Option<&str>, msg: &str, fields: serde_json::Value) {
    let Some(chain) = chain else {
        return;
    };
    let cause = crate::observe::context().cause;
    let by = step::Origin::Script {
        script: &inv.script,
        chain: &inv.trace,
        cause: cause.as_deref(),
    };
    let rec = step::record(chain, &inv.tenant.name, msg, &by, fields);
    inv.services.log.write(&rec);
    let exporter = inv.services.exporter.as_deref();
    step::export(exporter, &rec, exporter.and(crate::observe::context().span));
}

/// Records in the run's own chain that it now waits on something (a barrier, a timer): a step
/// ([`crate::observe::step`]) for the console's timeline, not a span (the run's span is where
/// exported traces see it).
pub(super) fn record_wait(inv: &Invocation, msg: &str, fields: serde_json::Value) {
    let by = step::Origin::Script {
        script: &inv.script,
        chain: &inv.trace,
        cause: None,
    };
    let rec = step::record(&inv.trace, &inv.tenant.name, msg, &by, fields);
    inv.services.log.write(&rec);
}

fn ack(lua: &Lua, (id, member, out): (String, String, Value)) -> mlua::Result<Table> {
    let out = outcome(lua, out)?;
    let ok = out.ok;
    let inv = invocation(lua)?;
    let r = run(lua, &inv, barriers(&inv).ack(&id, &member, out))?;
    if !r.duplicate {
        record_step(
            &inv,
            r.chain.as_deref(),
            "barrier member acked",
            serde_json::json!({ "barrier": id, "member": member, "ok": ok, "complete": r.complete }),
        );
    }
    let t = lua.create_table()?;
    t.set("duplicate", r.duplicate)?;
    t.set("complete", r.complete)?;
    t.set("dispatched", r.dispatched)?;
    Ok(t)
}

/// An iterator over a barrier's outcomes, a page at a time.
fn iterator(lua: &Lua, id: String, failed_only: bool) -> mlua::Result<mlua::Function> {
    let mut page: std::vec::IntoIter<(String, serde_json::Value)> = Vec::new().into_iter();
    let mut next: Option<String> = None;
    let mut started = false;
    lua.create_function_mut(move |lua, ()| -> mlua::Result<(Value, Value)> {
        loop {
            if let Some((member, outcome)) = page.next() {
                return Ok((
                    Value::String(lua.create_string(&member)?),
                    to_lua(lua, &outcome)?,
                ));
            }
            if started && next.is_none() {
                return Ok((Value::Nil, Value::Nil));
            }
            started = true;
            let inv = invocation(lua)?;
            let (rows, more) = run(
                lua,
                &inv,
                barriers(&inv).outcomes(&id, failed_only, next.as_deref()),
            )?;
            page = rows.into_iter();
            next = more;
        }
    })
}

/// The continuation's barrier, or nil for any other event (an object event, a message of
/// `native.queue.send`, a batch job's): a script shared by several triggers can ask. An event
/// with a `barrier` field that is no id is an error naming the field.
fn hydrate(lua: &Lua, ev: Value) -> mlua::Result<Value> {
    let Value::Table(t) = &ev else {
        return Ok(Value::Nil);
    };
    let Some(id) =
        super::function::field::<Option<String>>(lua, t, "native.barrier.hydrate", "barrier")?
    else {
        return Ok(Value::Nil);
    };
    // The overdue script's event: the barrier is handed over with members pending.
    let overdue = matches!(t.get::<Value>("overdue")?, Value::Boolean(true));
    let inv = invocation(lua)?;
    let b = barriers(&inv);
    let Some((meta, failed, pending)) = run(lua, &inv, b.hydrate_with(&id, overdue))? else {
        return Ok(Value::Nil);
    };
    let cancelled = run(lua, &inv, b.cancelled(&id))?;
    drop(inv);
    let complete = pending == 0;
    let t = result_table(lua, &id, &meta, failed)?;
    t.set("ok", meta.members.saturating_sub(failed + pending))?;
    t.set("pending", pending)?;
    t.set("complete", complete)?;
    t.set("cancelled", cancelled)?;
    const PENDING: Signature = ("barrier:pending_members", &[]);
    t.set(
        "pending_members",
        super::function(lua, PENDING, move |lua, _: Value| {
            pending_iterator(lua, id.clone(), meta.clone())
        })?,
    )?;
    Ok(Value::Table(t))
}

/// An iterator over a barrier's pending member names, a page at a time.
fn pending_iterator(lua: &Lua, id: String, meta: Meta) -> mlua::Result<mlua::Function> {
    let mut page: std::vec::IntoIter<String> = Vec::new().into_iter();
    let mut next: Option<String> = None;
    let mut started = false;
    lua.create_function_mut(move |lua, ()| -> mlua::Result<Value> {
        loop {
            if let Some(member) = page.next() {
                return Ok(Value::String(lua.create_string(&member)?));
            }
            if started && next.is_none() {
                return Ok(Value::Nil);
            }
            started = true;
            let inv = invocation(lua)?;
            let (names, more) = run(
                lua,
                &inv,
                barriers(&inv).pending(&id, &meta, next.as_deref()),
            )?;
            page = names.into_iter();
            next = more;
        }
    })
}

fn add(lua: &Lua, (id, members): (String, Value)) -> mlua::Result<u64> {
    let members: Vec<String> = match members {
        Value::Table(t) => t
            .sequence_values::<String>()
            .collect::<mlua::Result<_>>()
            .map_err(|_| {
                raise(
                    lua,
                    "native.barrier.add: parameter \"members\" must be a list of strings",
                )
            })?,
        other => {
            return Err(raise(
                lua,
                format!(
                    "native.barrier.add: parameter \"members\" must be a list of strings, not {}",
                    super::function::a_type(&other)
                ),
            ))
        }
    };
    let inv = invocation(lua)?;
    run_named(
        lua,
        &inv,
        "native.barrier.add",
        barriers(&inv).add(&id, &members),
    )
}

fn callback_url(
    lua: &Lua,
    (id, member, opts): (String, String, Option<Table>),
) -> mlua::Result<String> {
    const FUNC: &str = "native.barrier.callback_url";
    let ttl_s = super::opt_whole(
        lua,
        opts.as_ref(),
        FUNC,
        "ttl_s",
        60..=crate::callback::MAX_TTL_S,
    )?
    .unwrap_or(crate::callback::MAX_TTL_S);
    crate::barrier::check_id(&id).map_err(|e| raise(lua, format!("{FUNC}: {e}")))?;
    if member.is_empty() || member.len() > crate::barrier::MAX_MEMBER_BYTES {
        return Err(raise(
            lua,
            format!(
                "{FUNC}: parameter \"member\" must be 1 to {} bytes",
                crate::barrier::MAX_MEMBER_BYTES
            ),
        ));
    }
    let inv = invocation(lua)?;
    let Some(signer) = inv.services.callback.clone() else {
        return Err(raise(lua, format!("{FUNC}: this deployment has no callback secret (on AWS, {}; locally, .native/ must be writable)", crate::callback::SECRET_VAR)));
    };
    let target = crate::callback::Target {
        tenant: inv.tenant.name.clone(),
        barrier: id,
        member,
        expires_s: crate::ports::now_ms() / 1000 + ttl_s,
        chain: Some(inv.trace.clone()),
    };
    Ok(signer.url(&target))
}

fn cancel(lua: &Lua, (id, reason): (String, Option<String>)) -> mlua::Result<u64> {
    let reason = reason.unwrap_or_else(|| "cancelled".into());
    let inv = invocation(lua)?;
    let b = barriers(&inv);
    let resolved = run_named(lua, &inv, "native.barrier.cancel", b.cancel(&id, &reason))?;
    if resolved > 0 {
        let chain = run(lua, &inv, b.chain(&id))?;
        record_step(
            &inv,
            chain.as_deref(),
            "barrier cancelled",
            serde_json::json!({ "barrier": id, "resolved": resolved, "reason": reason }),
        );
    }
    Ok(resolved)
}

fn result_table(lua: &Lua, id: &str, meta: &Meta, failed: u64) -> mlua::Result<Table> {
    const RESULTS: Signature = ("barrier:results", &[]);
    const FAILURES: Signature = ("barrier:failures", &[]);
    let t = lua.create_table()?;
    t.set("id", id)?;
    t.set("state", to_lua(lua, &meta.state)?)?;
    t.set("total", meta.members)?;
    t.set("failed", failed)?;
    t.set("ok", meta.members.saturating_sub(failed))?;
    let rid = id.to_string();
    t.set(
        "results",
        super::function(lua, RESULTS, move |lua, _: Value| {
            iterator(lua, rid.clone(), false)
        })?,
    )?;
    let fid = id.to_string();
    t.set(
        "failures",
        super::function(lua, FAILURES, move |lua, _: Value| {
            iterator(lua, fid.clone(), true)
        })?,
    )?;
    Ok(t)
}

fn status(lua: &Lua, (id, opts): (String, Option<Table>)) -> mlua::Result<Value> {
    let cursor = match &opts {
        Some(o) => o.get::<Option<String>>("cursor")?,
        None => None,
    };
    let limit = super::opt_whole(
        lua,
        opts.as_ref(),
        "native.barrier.status",
        "limit",
        1..=1000,
    )?
    .unwrap_or(100) as usize;
    let inv = invocation(lua)?;
    match run(
        lua,
        &inv,
        barriers(&inv).status(&id, cursor.as_deref(), limit),
    )? {
        Some(s) => to_lua(
            lua,
            &serde_json::to_value(s).map_err(|e| raise(lua, Error::InvalidInput(e.to_string())))?,
        ),
        None => Ok(Value::Nil),
    }
}

/// The `native.barrier` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const CREATE: Signature = ("native.barrier.create", &["opts"]);
    const ACK: Signature = ("native.barrier.ack", &["id", "member", "outcome?"]);
    const HYDRATE: Signature = ("native.barrier.hydrate", &["ev"]);
    const STATUS: Signature = ("native.barrier.status", &["id", "opts?"]);
    t.set("create", super::function(lua, CREATE, create)?)?;
    t.set("ack", super::function(lua, ACK, ack)?)?;
    t.set("hydrate", super::function(lua, HYDRATE, hydrate)?)?;
    t.set("status", super::function(lua, STATUS, status)?)?;
    const ADD: Signature = ("native.barrier.add", &["id", "members"]);
    const CANCEL: Signature = ("native.barrier.cancel", &["id", "reason?"]);
    t.set("add", super::function(lua, ADD, add)?)?;
    t.set("cancel", super::function(lua, CANCEL, cancel)?)?;
    const CALLBACK_URL: Signature = ("native.barrier.callback_url", &["id", "member", "opts?"]);
    t.set(
        "callback_url",
        super::function(lua, CALLBACK_URL, callback_url)?,
    )?;
    Ok(t)
}
