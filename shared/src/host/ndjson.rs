//! `native.ndjson.rows(string)`: an iterator over the JSON values of NDJSON text, one a line,
//! blank lines skipped; a bad line is an error that names the line.

use mlua::{Lua, LuaSerdeExt, Table, Value};

use super::{invocation, raise, to_lua};

fn rows(lua: &Lua, text: mlua::LuaString) -> mlua::Result<mlua::Function> {
    let bytes = text.as_bytes().to_vec();
    let max_row = u64::from(invocation(lua)?.tenant.config.limits.max_object_mb) * 1024 * 1024;
    let mut pos = 0usize;
    let mut line_no = 0u64;
    lua.create_function_mut(move |lua, ()| -> mlua::Result<Value> {
        loop {
            if pos >= bytes.len() {
                return Ok(Value::Nil);
            }
            let end = bytes[pos..]
                .iter()
                .position(|b| *b == b'\n')
                .map_or(bytes.len(), |i| pos + i);
            let line = &bytes[pos..end];
            pos = end + 1;
            line_no += 1;
            if line.len() as u64 > max_row {
                return Err(raise(
                    lua,
                    format!(
                        "ndjson line {line_no} is {} bytes; rows may be at most max_object_mb",
                        line.len()
                    ),
                ));
            }
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            let v: serde_json::Value = serde_json::from_slice(trimmed)
                .map_err(|e| raise(lua, format!("ndjson line {line_no}: invalid JSON: {e}")))?;
            // A null row must not end the caller's for loop: it is native.json.null.
            if v.is_null() {
                return Ok(lua.null());
            }
            return to_lua(lua, &v);
        }
    })
}

/// The `native.ndjson` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set("rows", lua.create_function(rows)?)?;
    Ok(t)
}
