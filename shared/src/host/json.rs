//! `native.json`, and the conversions between JSON and Luau values that every area uses.

use mlua::{Lua, LuaSerdeExt, Table, Value};

/// JSON to a Luau value: objects and arrays become tables, `null` becomes nil.
pub fn to_lua(lua: &Lua, v: &serde_json::Value) -> mlua::Result<Value> {
    let opts = mlua::serde::ser::Options::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    lua.to_value_with(v, opts)
}

/// A Luau value to JSON. Functions and other values JSON cannot hold are an error that says so.
pub fn from_lua(lua: &Lua, v: Value) -> mlua::Result<serde_json::Value> {
    let opts = mlua::serde::de::Options::new()
        .deny_unsupported_types(true)
        .deny_recursive_tables(true)
        .sort_keys(true);
    lua.from_value_with(v, opts).map_err(|e| {
        super::raise(
            lua,
            format!(
                "value cannot be encoded as JSON: {}",
                super::super::engine::message_of(&e)
            ),
        )
    })
}

fn encode(lua: &Lua, (v, opts): (Value, Option<Table>)) -> mlua::Result<String> {
    let pretty = match &opts {
        Some(t) => t.get::<Option<bool>>("pretty")?.unwrap_or(false),
        None => false,
    };
    let json = from_lua(lua, v)?;
    let out = if pretty {
        serde_json::to_string_pretty(&json)
    } else {
        serde_json::to_string(&json)
    };
    out.map_err(|e| super::raise(lua, format!("native.json.encode: {e}")))
}

fn decode(lua: &Lua, text: mlua::LuaString) -> mlua::Result<Value> {
    let v: serde_json::Value = serde_json::from_slice(&text.as_bytes())
        .map_err(|e| super::raise(lua, format!("native.json.decode: invalid JSON: {e}")))?;
    to_lua(lua, &v)
}

/// The `native.json` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("encode", lua.create_function(encode)?)?;
    t.set("decode", lua.create_function(decode)?)?;
    Ok(t)
}
