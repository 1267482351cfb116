//! `native.queue.send(script, event[, { delay_s }])`: a message for a script's `on_queue`.

use mlua::{Lua, Table, Value};

use super::{from_lua, invocation, raise};
use crate::ports::{WorkMessage, MAX_DELAY_S};

/// The largest message body (SQS's limit).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;

/// Checks that the running tenant may queue, that `script` exists and that the message is
/// within the size limit; returns it, its width still to be set ([`super::chain`]).
pub(crate) fn work_message(
    lua: &Lua,
    script: &str,
    event: serde_json::Value,
) -> mlua::Result<WorkMessage> {
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
    inv.tenant
        .script(script)
        .map_err(|e| super::raise_error(lua, e))?;
    let message = WorkMessage {
        tenant: inv.tenant.name.clone(),
        script: script.to_string(),
        event,
        depth: inv.depth + 1,
        width: None,
        chain: crate::observe::chain(),
        once: None,
        slot: None,
    };
    let len = serde_json::to_string(&message)
        .map_err(|e| raise(lua, e))?
        .len()
        + super::chain::WIDTH_FIELD_BYTES;
    if len > MAX_MESSAGE_BYTES {
        return Err(raise(
            lua,
            format!("queue message for {script:?} is {len} bytes; the limit is {MAX_MESSAGE_BYTES}; put large data in a bucket and send its key"),
        ));
    }
    Ok(message)
}

/// [`work_message`] as a body to store now (a timer's), with its share of the chain's width.
pub(crate) fn work_body(lua: &Lua, script: &str, event: serde_json::Value) -> mlua::Result<String> {
    let mut message = work_message(lua, script, event)?;
    let inv = invocation(lua)?;
    let width = inv
        .take_width(&format!("native.timer.at for {script:?}"))
        .map_err(|m| super::raise_error(lua, m))?;
    message.width = Some(width);
    serde_json::to_string(&message).map_err(|e| raise(lua, e))
}

/// Queues a message, sent when the invocation succeeds ([`super::chain`]).
fn send(lua: &Lua, (script, event, opts): (String, Value, Option<Table>)) -> mlua::Result<()> {
    let delay = super::opt_whole(
        lua,
        opts.as_ref(),
        "native.queue.send",
        "delay_s",
        0..=i64::from(MAX_DELAY_S),
    )?
    .unwrap_or(0);
    let what = format!("native.queue.send to {script:?}");
    invocation(lua)?.charge_send(lua, &what)?;
    let event = from_lua(lua, event, "native.queue.send: the event")?;
    let message = work_message(lua, &script, event)?;
    let inv = invocation(lua)?;
    inv.charge(lua, 1)?;
    inv.defer_send(lua, &what, message, delay as u32)
}

/// The `native.queue` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const SEND: super::Signature = ("native.queue.send", &["script", "event", "opts?"]);
    t.set("send", super::function(lua, SEND, send)?)?;
    Ok(t)
}
