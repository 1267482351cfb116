//! An invocation's frame, made in one protected call: its globals table (falling through to
//! the VM's read-only globals), the clone of the script's main function that runs in it, the
//! read-only `ctx`, and the event as a Luau value.
//!
//! Made through mlua's safe API this was eight protected calls (each string, table, clone and
//! conversion is one: a C closure made and called), most of a no-op invocation's work. Here the
//! raw C API does it inside `Lua::exec_raw`, where a raise (out of memory) unwinds to that one
//! protected call. What scripts see is unchanged.
#![allow(unsafe_code)]

use mlua::ffi;
use mlua::{Function, Lua, LuaString, Table, Value};

use super::sandbox::Ctx;
use crate::host::json_push;

/// What the frame is made of.
pub struct Parts<'a> {
    /// The metatable of invocation globals (`__index` = the VM's globals, locked).
    pub env_meta: &'a Table,
    /// The tenant's name.
    pub tenant: &'a LuaString,
    /// The script's name.
    pub script: &'a LuaString,
    /// The script's main function as loaded once into the VM.
    pub main: &'a Function,
    /// mlua's array metatable, for the event's arrays.
    pub array_mt: &'a Table,
    /// The invocation's id, attempt, depth and deadline for `ctx`.
    pub ctx: Ctx<'a>,
    /// The event.
    pub event: &'a serde_json::Value,
}

/// The frame: (globals, the main function's clone in them, `ctx`, the event).
pub fn make(lua: &Lua, p: Parts<'_>) -> mlua::Result<(Table, Function, Table, Value)> {
    let mut made = false;
    let args = (p.env_meta, p.tenant, p.script, p.main, p.array_mt);
    // SAFETY: `exec_raw` runs the closure in a protected call with the five arguments at stack
    // indices 1 to 5 and returns what the closure leaves on the stack. The closure checks room
    // for the four values and the temporaries before pushing; `json_push::push` checks its own
    // per level. It leaves exactly the frame (6 to 9 moved down to 1 to 4), or nothing.
    let (env, main, ctx, event) = unsafe {
        lua.exec_raw::<(Option<Table>, Option<Function>, Option<Table>, Value)>(args, |state| {
            if ffi::lua_checkstack(state, 8) == 0 {
                ffi::lua_settop(state, 0);
                return;
            }
            // 6: the globals, `_G` being themselves.
            ffi::lua_createtable(state, 0, 4);
            ffi::lua_pushvalue(state, 1);
            ffi::lua_setmetatable(state, 6);
            ffi::lua_pushvalue(state, 6);
            ffi::lua_rawsetfield(state, 6, c"_G".as_ptr());
            // 7: the clone (same prototype) with the frame's globals: functions the chunk
            // defines take them, so nothing of one invocation reaches the next.
            ffi::lua_clonefunction(state, 4);
            ffi::lua_pushvalue(state, 6);
            ffi::lua_setfenv(state, 7);
            // 8: ctx, frozen.
            ffi::lua_createtable(state, 0, 6);
            ffi::lua_pushvalue(state, 2);
            ffi::lua_rawsetfield(state, 8, c"tenant".as_ptr());
            ffi::lua_pushvalue(state, 3);
            ffi::lua_rawsetfield(state, 8, c"script".as_ptr());
            ffi::lua_pushlstring(
                state,
                p.ctx.request_id.as_ptr().cast(),
                p.ctx.request_id.len(),
            );
            ffi::lua_rawsetfield(state, 8, c"request_id".as_ptr());
            ffi::lua_pushnumber(state, f64::from(p.ctx.attempt));
            ffi::lua_rawsetfield(state, 8, c"attempt".as_ptr());
            ffi::lua_pushnumber(state, f64::from(p.ctx.depth));
            ffi::lua_rawsetfield(state, 8, c"depth".as_ptr());
            ffi::lua_pushnumber(state, p.ctx.deadline_ms as f64);
            ffi::lua_rawsetfield(state, 8, c"deadline_ms".as_ptr());
            ffi::lua_setreadonly(state, 8, 1);
            // 9: the event.
            if !json_push::push(state, p.event, 5) {
                ffi::lua_settop(state, 0);
                return;
            }
            for _ in 0..5 {
                ffi::lua_remove(state, 1);
            }
            made = true;
        })?
    };
    match (made, env, main, ctx) {
        (true, Some(env), Some(main), Some(ctx)) => Ok((env, main, ctx, event)),
        (true, ..) => Err(mlua::Error::runtime("the invocation's frame was not made")),
        (false, ..) => Err(json_push::too_deep()),
    }
}
