//! A JSON value already parsed on the host (an event, a stored item) onto the Luau stack with
//! the raw C API, inside one protected call.
//!
//! mlua's serde serializer makes every string and table through its safe API, each a
//! protected call of its own (a C closure made and called), which was a large part of a
//! no-op invocation's work for an event of one field (BENCHMARKS.md, Figures behind the code).
//! The mapping is the serializer's as
//! [`super::to_lua`] configured it: objects and arrays become tables, arrays carry mlua's array
//! metatable (so that they encode back as arrays), `null` is nil (an absent field; a hole in an
//! array), numbers are Luau numbers.
#![allow(unsafe_code)]

use std::os::raw::c_int;

// `lua_pushlstring_` is Luau's own push (see text_to_luau.rs: the wrapper asks for a pointer back).
use mlua::ffi::{self, lua_State};
use mlua::{Lua, LuaSerdeExt};

/// Deepest nesting pushed: mlua's serializer stops at the same depth.
pub const MAX_DEPTH: u32 = 128;

/// The error for a value nested deeper than [`MAX_DEPTH`], in the serializer's words.
pub fn too_deep() -> mlua::Error {
    mlua::Error::SerializeError("recursion limit exceeded".into())
}

/// `v` as a Luau value, made in one protected call.
pub fn value(lua: &Lua, v: &serde_json::Value) -> mlua::Result<mlua::Value> {
    let mut pushed = false;
    // SAFETY: `exec_raw` runs the closure inside a protected call with the array metatable at
    // stack index 1 and returns what is left on the stack: the value alone once the metatable
    // is removed, or nothing.
    let out = unsafe {
        lua.exec_raw::<mlua::Value>(lua.array_metatable(), |state| {
            pushed = push(state, v, 1);
            ffi::lua_remove(state, 1);
        })?
    };
    if pushed {
        Ok(out)
    } else {
        Err(too_deep())
    }
}

/// Pushes `v` onto the stack. `array_mt` is the absolute stack index of the array metatable.
/// Returns `false`, having pushed nothing, when `v` nests deeper than [`MAX_DEPTH`] or the stack
/// cannot grow.
///
/// # Safety
/// Only inside a protected call (`Lua::exec_raw`): a push may raise a memory error, which
/// unwinds to that call. Nothing owned lives in these frames, so the unwind leaks nothing.
pub unsafe fn push(state: *mut lua_State, v: &serde_json::Value, array_mt: c_int) -> bool {
    // SAFETY: as this function's.
    unsafe { push_at(state, v, array_mt, 0) }
}

unsafe fn push_at(
    state: *mut lua_State,
    v: &serde_json::Value,
    array_mt: c_int,
    depth: u32,
) -> bool {
    use serde_json::Value as J;
    // SAFETY (every block below): the caller's: inside a protected call, with room checked on
    // the stack for each level (a table, a key and a value).
    unsafe {
        if ffi::lua_checkstack(state, 3) == 0 {
            return false;
        }
        match v {
            J::Null => ffi::lua_pushnil(state),
            J::Bool(b) => ffi::lua_pushboolean(state, c_int::from(*b)),
            J::Number(n) => ffi::lua_pushnumber(state, n.as_f64().unwrap_or(f64::NAN)),
            J::String(s) => {
                ffi::lua_pushlstring_(state, s.as_ptr().cast(), s.len());
            }
            J::Array(items) => {
                if depth >= MAX_DEPTH {
                    return false;
                }
                ffi::lua_createtable(state, hint(items.len()), 0);
                ffi::lua_pushvalue(state, array_mt);
                ffi::lua_setmetatable(state, -2);
                for (i, item) in items.iter().enumerate() {
                    if !push_at(state, item, array_mt, depth + 1) {
                        ffi::lua_pop(state, 1);
                        return false;
                    }
                    ffi::lua_rawseti(state, -2, (i + 1) as ffi::lua_Integer);
                }
            }
            J::Object(fields) => {
                if depth >= MAX_DEPTH {
                    return false;
                }
                ffi::lua_createtable(state, 0, hint(fields.len()));
                for (key, item) in fields {
                    if item.is_null() {
                        continue; // a nil field is an absent one
                    }
                    ffi::lua_pushlstring_(state, key.as_ptr().cast(), key.len());
                    if !push_at(state, item, array_mt, depth + 1) {
                        ffi::lua_pop(state, 2);
                        return false;
                    }
                    ffi::lua_rawset(state, -3);
                }
            }
        }
    }
    true
}

/// A table's size hint: its length, up to what Luau takes (the table grows past it if needed).
fn hint(len: usize) -> c_int {
    len.min(1 << 24) as c_int
}

#[cfg(test)]
mod tests {
    use mlua::{Lua, LuaSerdeExt};
    use serde_json::json;

    /// GIVEN values of every JSON kind WHEN pushed THEN they come back from Luau as mlua's
    /// serializer made them (the mapping scripts have always seen).
    #[test]
    fn the_same_values_as_mluas_serializer() {
        let lua = Lua::new();
        let opts = mlua::serde::ser::Options::new()
            .serialize_none_to_null(false)
            .serialize_unit_to_null(false);
        let cases = [
            json!(null),
            json!(true),
            json!(-0.5),
            json!(9007199254740993u64),
            json!(-12),
            json!("é\u{0}x"),
            json!([]),
            json!({}),
            json!([1, null, "a", [null], {"k": null, "j": [true]}]),
            json!({"a": {"b": {"c": [1, 2, {"d": "e"}]}}, "z": null}),
        ];
        let check = lua
            .load(
                r#"
                local function same(a, b)
                  if type(a) ~= type(b) then return false end
                  if type(a) ~= "table" then return a == b end
                  if getmetatable(a) ~= getmetatable(b) then return false end
                  for k, v in pairs(a) do if not same(v, b[k]) then return false end end
                  for k, v in pairs(b) do if not same(v, a[k]) then return false end end
                  return true
                end
                return same
                "#,
            )
            .eval::<mlua::Function>()
            .unwrap();
        for v in cases {
            let ours = crate::host::to_lua(&lua, &v).unwrap();
            let theirs = lua.to_value_with(&v, opts).unwrap();
            assert!(
                check.call::<bool>((ours, theirs)).unwrap(),
                "differs for {v}"
            );
        }
    }

    /// GIVEN a value nested past the limit WHEN pushed THEN a clear error, and the VM is
    /// usable after it (the stack was left as it was).
    #[test]
    fn too_deep_is_refused_and_leaves_the_stack() {
        let lua = Lua::new();
        let mut v = json!(1);
        for i in 0..200 {
            v = if i % 2 == 0 {
                json!([v])
            } else {
                json!({ "k": v })
            };
        }
        let e = crate::host::to_lua(&lua, &v).unwrap_err();
        assert!(e.to_string().contains("recursion limit exceeded"), "{e}");
        let mut ok = json!(1);
        for _ in 0..100 {
            ok = json!([ok]);
        }
        assert!(crate::host::to_lua(&lua, &ok).is_ok());
        assert_eq!(lua.load("return 1 + 1").eval::<i32>().unwrap(), 2);
    }
}
