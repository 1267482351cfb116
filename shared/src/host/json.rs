//! `native.json`, and the conversions between JSON and Luau values that every area uses.

use mlua::{Lua, LuaSerdeExt, Table, Value};

use crate::error::Cause;

use super::luau_to_json::{self, Allowance, Stop};

/// JSON to a Luau value: objects and arrays become tables (arrays with mlua's array
/// metatable), `null` becomes nil. One protected call, whatever the value's size (see
/// [`super::value_to_luau`]).
pub fn to_lua(lua: &Lua, v: &serde_json::Value) -> mlua::Result<Value> {
    super::value_to_luau::value(lua, v)
}

/// A Luau value to JSON, within the running invocation's `max_object_mb` and deadline (see
/// [`super::luau_to_json`]). A table is an array when it has the array marker (it came from a JSON
/// array) or its keys are the integers 1..n (holes become null while at least half the slots
/// are used); otherwise an object with string keys. An empty table is an object. What JSON
/// cannot hold (functions, mixed tables, cycles, NaN) is an error that names where it is; a
/// value past the budget is a breach of `max_object_mb` (or `timeout_s`) that fails the
/// invocation even if the script catches it. `what` names the value in errors
/// (`"native.queue.send: the event"`).
pub fn from_lua(lua: &Lua, v: Value, what: &str) -> mlua::Result<serde_json::Value> {
    let budget = budget(lua);
    luau_to_json::value(lua, &v, budget).map_err(|stop| stopped(lua, stop, &what))
}

/// A Luau value as JSON text, within the same budget as [`from_lua`]. `what` is only written
/// out for an error (`&format_args!(..)` costs nothing on success).
pub fn to_json_text(
    lua: &Lua,
    v: Value,
    pretty: bool,
    what: &dyn std::fmt::Display,
) -> mlua::Result<Vec<u8>> {
    let budget = budget(lua);
    luau_to_json::text(lua, &v, pretty, budget).map_err(|stop| stopped(lua, stop, what))
}

fn budget(lua: &Lua) -> Allowance {
    match lua.app_data_ref::<super::Invocation>() {
        Some(inv) => {
            Allowance::object_mb(inv.tenant.config.limits.max_object_mb, Some(inv.deadline))
        }
        None => Allowance::object_mb(crate::config::Limits::default().max_object_mb, None),
    }
}

fn stopped(lua: &Lua, stop: Stop, what: &dyn std::fmt::Display) -> mlua::Error {
    let inv = lua.app_data_ref::<super::Invocation>();
    match (stop, inv) {
        (Stop::Shape(why), _) => {
            super::raise(lua, format!("{what} cannot be encoded as JSON: {why}"))
        }
        (Stop::TooBig(why), Some(inv)) => {
            let max = inv.tenant.config.limits.max_object_mb;
            inv.breach(
                lua,
                "max_object_mb",
                format!(
                    "{what} {why}; the tenant allows {max} MB for one \
                     value (limits.max_object_mb in {}, ceiling {}): put large data in a bucket",
                    inv.config_file(),
                    crate::config::CEILINGS.max_object_mb
                ),
            )
        }
        (Stop::TooBig(why), None) => super::raise_as(
            lua,
            Cause::Limit("max_object_mb"),
            format!("limit max_object_mb exceeded: {what} {why}"),
        ),
        (Stop::Deadline, Some(inv)) => inv.breach(lua, "timeout_s", inv.timeout_detail()),
        (Stop::Deadline, None) => {
            super::raise_as(lua, Cause::Limit("timeout_s"), "limit timeout_s exceeded")
        }
    }
}

fn encode(lua: &Lua, (v, opts): (Value, Option<Table>)) -> mlua::Result<String> {
    let pretty = match &opts {
        Some(t) => t.get::<Option<bool>>("pretty")?.unwrap_or(false),
        None => false,
    };
    let text = to_json_text(lua, v, pretty, &"native.json.encode: the value")?;
    // The walker writes only valid UTF-8 (strings were checked as they were read).
    String::from_utf8(text).map_err(|e| super::raise(lua, format!("native.json.encode: {e}")))
}

fn decode(lua: &Lua, text: mlua::LuaString) -> mlua::Result<Value> {
    // Straight into the VM: a large text must cost the script's heap, not the host's.
    super::text_to_luau::parse_value(lua, &text.as_bytes())?
        .map_err(|e| super::raise(lua, format!("native.json.decode: invalid JSON: {e}")))
}

/// The `native.json` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    const ENCODE: super::Signature = ("native.json.encode", &["value", "opts?"]);
    t.set("encode", super::function(lua, ENCODE, encode)?)?;
    t.set(
        "decode",
        super::function(lua, ("native.json.decode", &["text"]), decode)?,
    )?;
    // Stands for a JSON null where nil cannot: an NDJSON row that is `null`.
    t.set("null", lua.null())?;
    Ok(t)
}
