//! `native.timer.at(when, script, event)` and `native.timer.cancel(id)`: durable timers over
//! [`crate::timer::Timers`]. Setting a timer counts as a send (`max_sends`) and two data ops;
//! cancelling is up to two data ops. A timer is written when the invocation that set it
//! succeeds, with its messages (the engine): a failed run sets none, so its retries cannot
//! multiply them.

use mlua::{Lua, Table, Value};

use super::{from_lua, invocation, raise};
use crate::ports::now_ms;
use crate::timer::{Timers, MAX_AHEAD_MS};

const FUNC: &str = "native.timer.at";

/// `when`: `{ in_s = N }` or `{ at_ms = T }`, as ms since the epoch.
fn due(lua: &Lua, when: &Value) -> mlua::Result<i64> {
    let Value::Table(t) = when else {
        return Err(raise(
            lua,
            format!(
                "{FUNC}: parameter \"when\" must be a table {{ in_s = N }} or {{ at_ms = T }}, not {}",
                super::function::a_type(when)
            ),
        ));
    };
    let now = now_ms();
    let in_s = super::opt_whole(lua, Some(t), FUNC, "in_s", 0..=MAX_AHEAD_MS / 1000)?;
    let at_ms = super::opt_whole(lua, Some(t), FUNC, "at_ms", 0..=now + MAX_AHEAD_MS)?;
    match (in_s, at_ms) {
        (Some(s), None) => Ok(now + s * 1000),
        // A time already past is due now.
        (None, Some(at)) => Ok(at),
        _ => Err(raise(
            lua,
            format!("{FUNC}: parameter \"when\" must have exactly one of in_s and at_ms"),
        )),
    }
}

fn at(lua: &Lua, (when, script, event): (Value, String, Value)) -> mlua::Result<String> {
    let at_ms = due(lua, &when)?;
    invocation(lua)?.charge_send(lua, &format!("{FUNC} for {script:?}"))?;
    let event = from_lua(lua, event, "native.timer.at: the event")?;
    let body = super::queue::work_body(lua, &script, event)?;
    let inv = invocation(lua)?;
    let timers = Timers {
        kv: inv.services.backends.kv.as_ref(),
        tenant: &inv.tenant.name,
        budget: &*inv,
    };
    let prepared = timers
        .prepare(at_ms, &script, body)
        .map_err(|e| raise(lua, format!("{FUNC}: {e}")))?;
    let id = prepared.id.clone();
    inv.timers.borrow_mut().push(prepared);
    // The chain waits on it: a step of its own chain, for the console's timeline (the timer is
    // set when the run succeeds).
    super::barrier::record_wait(
        &inv,
        "timer set",
        serde_json::json!({ "wait": "timer", "timer": id, "script": script, "due_ms": at_ms }),
    );
    Ok(id)
}

fn cancel(lua: &Lua, id: String) -> mlua::Result<bool> {
    crate::timer::parse_id(&id).map_err(|e| raise(lua, format!("native.timer.cancel: {e}")))?;
    let inv = invocation(lua)?;
    // A timer this invocation set is not written yet: cancelling it is forgetting it.
    let mut mine = inv.timers.borrow_mut();
    if let Some(at) = mine.iter().position(|t| t.id == id) {
        mine.remove(at);
        return Ok(true);
    }
    drop(mine);
    let timers = Timers {
        kv: inv.services.backends.kv.as_ref(),
        tenant: &inv.tenant.name,
        budget: &*inv,
    };
    inv.block_on(lua, timers.cancel(&id))
}

/// The `native.timer` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const AT: super::Signature = (FUNC, &["when", "script", "event"]);
    const CANCEL: super::Signature = ("native.timer.cancel", &["id"]);
    t.set("at", super::function(lua, AT, at)?)?;
    t.set("cancel", super::function(lua, CANCEL, cancel)?)?;
    Ok(t)
}
