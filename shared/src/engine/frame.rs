//! An invocation's frame, made in one protected call: its globals table (falling through to
//! the VM's read-only globals), the clone of the script's main function that runs in it, the
//! read-only `ctx`, and the event as a Luau value.
//!
//! Made through mlua's safe API this was eight protected calls (each string, table, clone and
//! conversion is one: a C closure made and called), most of a no-op invocation's work. Here the
//! raw C API does it inside `Lua::exec_raw`, where a raise (out of memory) unwinds to that one
//! protected call. What scripts see is unchanged.
//!
//! `ctx` is a copy of a per-VM template rather than a table filled key by key: each
//! `lua_rawsetfield` interns its key and inserts it (about 300 instructions a field), a copy
//! is one allocation and a `memcpy`, and its values are overwritten through keys interned once.
#![allow(unsafe_code)]

// `lua_pushlstring_` is Luau's own push (see host/json_seed.rs: the wrapper asks for a pointer back).
use mlua::ffi;
use mlua::{Function, Lua, LuaString, Table, Value};

use super::sandbox::Ctx;
use crate::host::json_push;

/// Slots of a VM's frame kit (see [`kit`]).
const KIT_ENV_META: ffi::lua_Integer = 1;
const KIT_ARRAY_MT: ffi::lua_Integer = 2;
const KIT_CTX: ffi::lua_Integer = 3;
const KIT_G: ffi::lua_Integer = 4;
/// The keys of `ctx` that change per invocation, in `KIT_KEYS..`, in the order they are set.
const KIT_KEYS: ffi::lua_Integer = 5;
const CTX_KEYS: [&str; 7] = [
    "script",
    "request_id",
    "attempt",
    "depth",
    "deadline_ms",
    "width",
    "trace",
];

/// What every frame of a VM is made from, in one table that only the host holds: the
/// metatable of invocation globals (`__index` = the VM's globals, locked), mlua's array
/// metatable (for the event's arrays), a template of `ctx` with every key present (the
/// tenant's name already set), and the keys `_G` and those of `ctx` as interned strings. A
/// `ctx` is then a copy of the template (`lua_clonetable`, no key inserted or interned) whose
/// values are overwritten.
pub fn kit(lua: &Lua, env_meta: Table, array_mt: Table, tenant: &str) -> mlua::Result<Table> {
    let ctx = lua.create_table_with_capacity(0, 7)?;
    ctx.raw_set("tenant", tenant)?;
    for k in CTX_KEYS {
        // Placeholders: a key with nil would not be there to copy.
        ctx.raw_set(k, false)?;
    }
    let kit = lua.create_table()?;
    kit.raw_set(KIT_ENV_META, env_meta)?;
    kit.raw_set(KIT_ARRAY_MT, array_mt)?;
    kit.raw_set(KIT_CTX, ctx)?;
    kit.raw_set(KIT_G, "_G")?;
    for (i, k) in CTX_KEYS.into_iter().enumerate() {
        kit.raw_set(KIT_KEYS + i as ffi::lua_Integer, k)?;
    }
    Ok(kit)
}

/// What the frame is made of.
pub struct Parts<'a> {
    /// The VM's frame kit (see [`kit`]).
    pub kit: &'a Table,
    /// The script's name.
    pub script: &'a LuaString,
    /// The script's main function as loaded once into the VM.
    pub main: &'a Function,
    /// The invocation's id, attempt, depth and deadline for `ctx`.
    pub ctx: Ctx<'a>,
    /// The event.
    pub event: &'a serde_json::Value,
}

/// The frame: (globals, the main function's clone in them, `ctx`, the event).
pub fn make(lua: &Lua, p: Parts<'_>) -> mlua::Result<(Table, Function, Table, Value)> {
    let mut made = false;
    let args = (p.kit, p.script, p.main);
    // SAFETY: `exec_raw` runs the closure in a protected call with the three arguments at stack
    // indices 1 to 3 and returns what the closure leaves on the stack. The closure checks room
    // for the kit's two metatables, the four values and the temporaries before pushing;
    // `json_push::push` checks its own per level. It leaves exactly the frame (6 to 9 moved
    // down to 1 to 4), or nothing. The kit is the VM's own (`kit`), so its slots hold what
    // they are read as.
    let (env, main, ctx, event) = unsafe {
        lua.exec_raw::<(Option<Table>, Option<Function>, Option<Table>, Value)>(args, |state| {
            if ffi::lua_checkstack(state, 10) == 0 {
                ffi::lua_settop(state, 0);
                return;
            }
            // 4, 5: the metatables.
            ffi::lua_rawgeti(state, 1, KIT_ENV_META);
            ffi::lua_rawgeti(state, 1, KIT_ARRAY_MT);
            // 6: the globals, `_G` being themselves.
            ffi::lua_createtable(state, 0, 4);
            ffi::lua_pushvalue(state, 4);
            ffi::lua_setmetatable(state, 6);
            ffi::lua_rawgeti(state, 1, KIT_G);
            ffi::lua_pushvalue(state, 6);
            ffi::lua_rawset(state, 6);
            // 7: the clone (same prototype) with the frame's globals: functions the chunk
            // defines take them, so nothing of one invocation reaches the next.
            ffi::lua_clonefunction(state, 3);
            ffi::lua_pushvalue(state, 6);
            ffi::lua_setfenv(state, 7);
            // 8: ctx, a copy of the template, frozen.
            ffi::lua_rawgeti(state, 1, KIT_CTX);
            ffi::lua_clonetable(state, 8);
            ffi::lua_remove(state, 8);
            let set = |k: ffi::lua_Integer| {
                ffi::lua_rawgeti(state, 1, KIT_KEYS + k);
                ffi::lua_insert(state, -2);
                ffi::lua_rawset(state, 8);
            };
            ffi::lua_pushvalue(state, 2);
            set(0);
            ffi::lua_pushlstring_(
                state,
                p.ctx.request_id.as_ptr().cast(),
                p.ctx.request_id.len(),
            );
            set(1);
            ffi::lua_pushnumber(state, f64::from(p.ctx.attempt));
            set(2);
            ffi::lua_pushnumber(state, f64::from(p.ctx.depth));
            set(3);
            ffi::lua_pushnumber(state, p.ctx.deadline_ms as f64);
            set(4);
            ffi::lua_pushnumber(state, f64::from(p.ctx.width));
            set(5);
            ffi::lua_pushlstring_(state, p.ctx.trace.as_ptr().cast(), p.ctx.trace.len());
            set(6);
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
