//! `native.queue.send(script, event[, { delay_s }])`: a message for a script's `on_queue`.

use mlua::{Lua, Table, Value};

use super::{from_lua, invocation, raise};
use crate::ports::WorkMessage;
use crate::ports::{QueueKind, MAX_DELAY_S};

/// The largest message body (SQS's limit).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Checks that the running tenant may queue, and that `script` exists; returns the body.
pub(crate) fn work_body(lua: &Lua, script: &str, event: serde_json::Value) -> mlua::Result<String> {
    let inv = invocation(lua)?;
    if !inv.tenant.config.queue {
        return Err(raise(
            lua,
            format!(
                "tenant {:?} has no queue: set \"queue\": true in {}",
                inv.tenant.name,
                inv.config_file()
            ),
        ));
    }
    inv.tenant.script(script).map_err(|e| raise(lua, e))?;
    let body = serde_json::to_string(&WorkMessage {
        tenant: inv.tenant.name.clone(),
        script: script.to_string(),
        event,
        depth: inv.depth + 1,
    })
    .map_err(|e| raise(lua, e))?;
    if body.len() > MAX_MESSAGE_BYTES {
        return Err(raise(
            lua,
            format!("queue message for {script:?} is {} bytes; the limit is {MAX_MESSAGE_BYTES}; put large data in a bucket and send its key", body.len()),
        ));
    }
    Ok(body)
}

fn send(lua: &Lua, (script, event, opts): (String, Value, Option<Table>)) -> mlua::Result<()> {
    let delay = super::opt_whole(
        lua,
        opts.as_ref(),
        "native.queue.send",
        "delay_s",
        0..=i64::from(MAX_DELAY_S),
    )?
    .unwrap_or(0);
    invocation(lua)?.charge_send(lua, &format!("native.queue.send to {script:?}"))?;
    let event = from_lua(lua, event, "native.queue.send: the event")?;
    let body = work_body(lua, &script, event)?;
    let inv = invocation(lua)?;
    inv.charge(lua, 1)?;
    inv.block_on(
        lua,
        inv.services
            .backends
            .queue
            .send(QueueKind::Work, body, delay as u32),
    )
}

/// The `native.queue` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const SEND: super::Signature = ("native.queue.send", &["script", "event", "opts?"]);
    t.set("send", super::function(lua, SEND, send)?)?;
    Ok(t)
}
