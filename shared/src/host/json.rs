//! `native.json`, and the conversions between JSON and Luau values that every area uses.

use mlua::{Lua, LuaSerdeExt, Table, Value};

/// JSON to a Luau value: objects and arrays become tables, `null` becomes nil.
pub fn to_lua(lua: &Lua, v: &serde_json::Value) -> mlua::Result<Value> {
    let opts = mlua::serde::ser::Options::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false);
    lua.to_value_with(v, opts)
}

/// A Luau value to JSON. A table is an array when it has the array marker (it came from a JSON
/// array) or its keys are the integers 1..n (holes become null while at least half the slots are
/// used); otherwise an object with string keys. An empty table is an object. What JSON cannot
/// hold (functions, mixed tables, cycles, NaN) is an error that names where it is.
pub fn from_lua(lua: &Lua, v: Value) -> mlua::Result<serde_json::Value> {
    let mut path = String::from("value");
    let mut seen = Vec::new();
    convert(lua, v, &mut path, &mut seen, 0)
        .map_err(|why| super::raise(lua, format!("value cannot be encoded as JSON: {why}")))
}

fn convert(
    lua: &Lua,
    v: Value,
    path: &mut String,
    seen: &mut Vec<*const std::ffi::c_void>,
    depth: usize,
) -> Result<serde_json::Value, String> {
    use serde_json::Value as J;
    Ok(match v {
        Value::Nil => J::Null,
        Value::LightUserData(u) if u.0.is_null() => J::Null,
        Value::Boolean(b) => J::Bool(b),
        Value::Integer(i) => J::from(i),
        Value::Number(n) => {
            if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
                J::from(n as i64)
            } else {
                J::from(serde_json::Number::from_f64(n).ok_or(format!("{path} is {n}"))?)
            }
        }
        Value::String(s) => J::String(
            s.to_str()
                .map_err(|_| format!("{path} is not valid UTF-8"))?
                .to_string(),
        ),
        Value::Table(t) => {
            if depth > 128 {
                return Err(format!("{path} is nested more than 128 deep"));
            }
            let ptr = t.to_pointer();
            if seen.contains(&ptr) {
                return Err(format!("{path} contains itself"));
            }
            seen.push(ptr);
            let out = table(lua, &t, path, seen, depth)?;
            seen.pop();
            out
        }
        other => return Err(format!("{path} is a {}", other.type_name())),
    })
}

fn table(
    lua: &Lua,
    t: &Table,
    path: &mut String,
    seen: &mut Vec<*const std::ffi::c_void>,
    depth: usize,
) -> Result<serde_json::Value, String> {
    let mut ints: Vec<(usize, Value)> = Vec::new();
    let mut named: Vec<(String, Value)> = Vec::new();
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| e.to_string())?;
        match k {
            Value::Integer(i) if i >= 1 => ints.push((i as usize, v)),
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => ints.push((n as usize, v)),
            Value::String(s) => named.push((
                s.to_str()
                    .map_err(|_| format!("{path} has a key that is not UTF-8"))?
                    .to_string(),
                v,
            )),
            other => {
                return Err(format!(
                    "{path} has a key of type {} ({other:?}); JSON keys are strings",
                    other.type_name()
                ))
            }
        }
    }
    let is_array = t.metatable().is_some_and(|m| m == lua.array_metatable());
    let len = path.len();
    if !ints.is_empty() && !named.is_empty() {
        return Err(format!(
            "{path} mixes list entries (1, 2, ...) with named keys ({:?}, ...); JSON holds one or the other",
            named[0].0
        ));
    }
    if !ints.is_empty() || (is_array && named.is_empty()) {
        ints.sort_by_key(|(i, _)| *i);
        let max = ints.last().map_or(0, |(i, _)| *i);
        if max >= 10 && ints.len() * 2 < max {
            return Err(format!("{path} is a list with {} entries spread up to index {max}; too sparse for a JSON array", ints.len()));
        }
        let mut arr = vec![serde_json::Value::Null; max];
        for (i, v) in ints {
            path.push_str(&format!("[{i}]"));
            arr[i - 1] = convert(lua, v, path, seen, depth + 1)?;
            path.truncate(len);
        }
        return Ok(serde_json::Value::Array(arr));
    }
    let mut map = serde_json::Map::new();
    named.sort_by(|a, b| a.0.cmp(&b.0));
    for (k, v) in named {
        path.push('.');
        path.push_str(&k);
        let j = convert(lua, v, path, seen, depth + 1)?;
        path.truncate(len);
        if !j.is_null() {
            map.insert(k, j);
        }
    }
    Ok(serde_json::Value::Object(map))
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
