//! JSON text straight into Luau values: the hot path of `job:rows` and `native.ndjson.rows`.
//!
//! Building a row through mlua's safe API costs a protected call per field (every `raw_set`
//! may raise a memory error); at a million rows that is most of the time. Here one protected
//! call per row (`Lua::exec_raw`) parses the line with serde and pushes the values with the raw
//! C API, which inside that protected call may raise freely. Same mapping as
//! [`super::to_lua`]: objects and arrays become tables, arrays carry mlua's array metatable so
//! that they encode back as arrays, `null` is nil.
#![allow(unsafe_code)]

use std::fmt;
use std::os::raw::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Lua, LuaSerdeExt, Table};
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

/// Parses one JSON line per span of `data` into `buf[1..]`, in one protected call. Returns how
/// many rows it stored and, if a line is not JSON, that line's number and the parse error (the
/// rows before it are stored). A `null` row is stored as `native.json.null`.
pub fn parse_rows(
    lua: &Lua,
    buf: &Table,
    data: &[u8],
    spans: &[(usize, usize, u64)],
) -> mlua::Result<(usize, Option<(u64, String)>)> {
    let mut stored = 0usize;
    let mut failure: Option<(u64, String)> = None;
    let array_mt = lua.array_metatable();
    let hint = std::cell::Cell::new(0);
    // SAFETY: `exec_raw` runs the closure inside a protected call with the array metatable at
    // stack index 1 and the buffer at 2, and restores the stack afterwards. The closure only
    // pushes values (checking stack space for every nesting level), stores each row into the
    // buffer with `lua_rawseti` and clears the stack; a Lua error (out of memory) raised by a
    // push unwinds to the protected call, and nothing here holds a resource that would leak.
    unsafe {
        lua.exec_raw::<()>((array_mt, buf), |state| {
            for (i, &(start, end, line)) in spans.iter().enumerate() {
                let mut de = serde_json::Deserializer::from_slice(&data[start..end]);
                let ok = Push {
                    state,
                    mt: 1,
                    hint: &hint,
                    top: true,
                }
                .deserialize(&mut de)
                .and_then(|()| de.end());
                if let Err(e) = ok {
                    failure = Some((line, e.to_string()));
                    break;
                }
                if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
                    ffi::lua_pop(state, 1);
                    ffi::lua_pushlightuserdata(state, std::ptr::null_mut());
                }
                ffi::lua_rawseti(state, 2, (i + 1) as ffi::lua_Integer);
                stored = i + 1;
            }
            ffi::lua_settop(state, 0);
        })?;
    }
    Ok((stored, failure))
}

/// Parses one JSON text straight into a Luau value, in one protected call: nothing of the value
/// is built on the host, so a large text costs the script's heap (and its `max_memory_mb`), not
/// the host's. `Err` holds the parse error.
pub fn parse_value(lua: &Lua, data: &[u8]) -> mlua::Result<Result<mlua::Value, String>> {
    let array_mt = lua.array_metatable();
    let hint = std::cell::Cell::new(0);
    let mut failure: Option<String> = None;
    // SAFETY: as in `parse_rows`: the closure runs inside a protected call with the array
    // metatable at stack index 1; it pushes one value, then removes the metatable so that the
    // value alone is returned, or on a parse error clears the stack.
    let v = unsafe {
        lua.exec_raw::<mlua::Value>(array_mt, |state| {
            let mut de = serde_json::Deserializer::from_slice(data);
            let ok = Push {
                state,
                mt: 1,
                hint: &hint,
                top: false,
            }
            .deserialize(&mut de)
            .and_then(|()| de.end());
            match ok {
                Ok(()) => ffi::lua_remove(state, 1),
                Err(e) => {
                    failure = Some(e.to_string());
                    ffi::lua_settop(state, 0);
                }
            }
        })?
    };
    Ok(match failure {
        Some(e) => Err(e),
        None => Ok(v),
    })
}

/// A serde seed that pushes the value it reads onto the Lua stack.
struct Push<'a> {
    state: *mut lua_State,
    /// Stack index of the array metatable.
    mt: c_int,
    /// Keys of the last object at the top level: rows of one dataset mostly share a shape, and
    /// sizing the table up front saves rehashing it key by key.
    hint: &'a std::cell::Cell<usize>,
    top: bool,
}

impl Push<'_> {
    fn room<E: de::Error>(&self) -> Result<(), E> {
        // SAFETY: a plain stack check on the state of the running protected call.
        if unsafe { ffi::lua_checkstack(self.state, 4) } == 0 {
            return Err(E::custom("JSON nested too deep for the Lua stack"));
        }
        Ok(())
    }
}

impl<'de> DeserializeSeed<'de> for Push<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

// SAFETY (for every block below): each visit pushes exactly one value onto the stack of the
// protected call that `parse` runs, after `room` made space for it.
impl<'de> Visitor<'de> for Push<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        unsafe { ffi::lua_pushboolean(self.state, c_int::from(v)) };
        Ok(())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        unsafe { ffi::lua_pushnumber(self.state, v as f64) };
        Ok(())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        unsafe { ffi::lua_pushnumber(self.state, v as f64) };
        Ok(())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        unsafe { ffi::lua_pushnumber(self.state, v) };
        Ok(())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        unsafe { ffi::lua_pushlstring(self.state, v.as_ptr().cast(), v.len()) };
        Ok(())
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        unsafe { ffi::lua_pushnil(self.state) };
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.room()?;
        let (state, mt, hint) = (self.state, self.mt, self.hint);
        // serde_json does not know a list's length up front: room for a few saves the first
        // regrowths of small lists.
        unsafe { ffi::lua_createtable(state, seq.size_hint().unwrap_or(4) as c_int, 0) };
        let mut i = 1;
        while seq
            .next_element_seed(Push {
                state,
                mt,
                hint,
                top: false,
            })?
            .is_some()
        {
            unsafe { ffi::lua_rawseti(state, -2, i) };
            i += 1;
        }
        unsafe {
            ffi::lua_pushvalue(state, mt);
            ffi::lua_setmetatable(state, -2);
        }
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.room()?;
        let (state, mt, hint, top) = (self.state, self.mt, self.hint, self.top);
        let size = map.size_hint().unwrap_or(if top { hint.get() } else { 0 });
        unsafe { ffi::lua_createtable(state, 0, size.min(64) as c_int) };
        let mut keys = 0;
        while let Some(k) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            unsafe { ffi::lua_pushlstring(state, k.as_ptr().cast(), k.len()) };
            map.next_value_seed(Push {
                state,
                mt,
                hint,
                top: false,
            })?;
            // A nil value sets nothing: the key is absent, as for `null` elsewhere.
            unsafe { ffi::lua_rawset(state, -3) };
            keys += 1;
        }
        if top {
            hint.set(keys);
        }
        Ok(())
    }
}
