//! An invocation's frame: its globals table (falling through to the VM's read-only globals),
//! the clone of the script's main function that runs in it, the read-only `ctx`, the event as
//! a Luau value and the entry point's name, made by one C function that the VM's `enter`
//! calls first (see `ENTER` in sandbox.rs).
//!
//! Made through mlua's safe API this was eight protected calls (each string, table, clone and
//! conversion is one: a C closure made and called), most of a no-op invocation's work. Made in
//! a protected call of its own and handed to `enter`, each of its four values became a
//! reference of mlua's (a slot in its reference thread, taken and given back) and was pushed
//! again (BENCHMARKS.md, The engine's warm invoke). Made inside `enter`, the frame's values
//! never leave the Luau stack; the host's data reaches the C function through a thread-local
//! pointer, set for the duration of one `enter` call ([`with`]) and taken by the first call
//! of the function. What scripts see is unchanged.
//!
//! `ctx` is a copy of a per-VM template rather than a table filled key by key: each
//! `lua_rawsetfield` interns its key and inserts it (BENCHMARKS.md, Figures behind the code), a
//! copy is one allocation and a `memcpy`, and its values are overwritten through keys interned
//! once.
//! The template holds a root's `attempt`, `depth` and `width`, so that a first delivery of a
//! root overwrites only what is new on every call.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::os::raw::c_int;

// `lua_pushlstring_` is Luau's own push (see host/text_to_luau.rs: the wrapper asks for a pointer back).
use mlua::ffi::{self, lua_State};
use mlua::{Function, Lua, Table};

use super::sandbox::Ctx;
use super::Entry;
use crate::host::value_to_luau;

/// Slots of a VM's frame kit (see [`function`]): `_G`, then the keys of `ctx` that change,
/// then the entry points' names.
const KIT_G: ffi::lua_Integer = 1;
const KIT_KEYS: ffi::lua_Integer = 2;
const CTX_KEYS: [&str; 7] = [
    "script",
    "request_id",
    "deadline_ms",
    "trace",
    "attempt",
    "depth",
    "width",
];
const KIT_ENTRIES: ffi::lua_Integer = KIT_KEYS + CTX_KEYS.len() as ffi::lua_Integer;
const ENTRIES: [Entry; 3] = [Entry::Invoke, Entry::Queue, Entry::Route];

/// The frame function's upvalues.
const UP_KIT: c_int = ffi::lua_upvalueindex(1);
const UP_CTX: c_int = ffi::lua_upvalueindex(2);
const UP_ENV_META: c_int = ffi::lua_upvalueindex(3);
const UP_ARRAY_MT: c_int = ffi::lua_upvalueindex(4);

/// A root's `attempt` and `depth`, which the template of `ctx` holds.
const ROOT_ATTEMPT: u32 = 1;
const ROOT_DEPTH: u32 = 0;

/// The frame function of a VM, holding what every frame is made from, where only the host can
/// reach it: the metatable of invocation globals (`__index` = the VM's globals, locked), mlua's
/// array metatable (for the event's arrays), a template of `ctx` with every key present (the
/// tenant's name set, and a root's `attempt`, `depth` and `width`: the tenant's
/// `max_chain_width`), and the keys `_G`, those of `ctx` and the entry points' names as
/// interned strings. A `ctx` is then a copy of the template (`lua_clonetable`, no key inserted
/// or interned) whose values are overwritten.
pub fn function(
    lua: &Lua,
    env_meta: Table,
    array_mt: Table,
    tenant: &str,
    width: u32,
) -> mlua::Result<Function> {
    let ctx = lua.create_table_with_capacity(0, 1 + CTX_KEYS.len())?;
    ctx.raw_set("tenant", tenant)?;
    for k in CTX_KEYS {
        // Placeholders: a key with nil would not be there to copy.
        ctx.raw_set(k, false)?;
    }
    ctx.raw_set("attempt", ROOT_ATTEMPT)?;
    ctx.raw_set("depth", ROOT_DEPTH)?;
    ctx.raw_set("width", width)?;
    let kit = lua.create_table()?;
    kit.raw_set(KIT_G, "_G")?;
    for (i, k) in CTX_KEYS.into_iter().enumerate() {
        kit.raw_set(KIT_KEYS + i as ffi::lua_Integer, k)?;
    }
    for (i, e) in ENTRIES.into_iter().enumerate() {
        kit.raw_set(KIT_ENTRIES + i as ffi::lua_Integer, e.name())?;
    }
    // SAFETY: the four arguments are at stack indices 1 to 4, and are the closure's upvalues
    // in that order (`UP_*`); the closure is all that is left.
    unsafe {
        lua.exec_raw::<Function>((kit, ctx, env_meta, array_mt), |state| {
            ffi::lua_pushcclosurek(state, make, c"frame".as_ptr(), 4, None);
        })
    }
}

/// The event as the frame is given it.
pub enum Given<'a> {
    /// A host value, pushed by the frame function.
    Host(&'a serde_json::Value),
    /// A Luau value already made (a long JSON text's, read with its shapes).
    Made(mlua::Value),
    /// A short JSON text, read onto the stack by the frame function.
    Short(&'a crate::host::ShortJson<'a>),
}

/// What the frame is made of besides the script's main function and name (which `enter`
/// passes on).
pub struct Parts<'a> {
    /// The invocation's id, attempt, depth and deadline for `ctx`.
    pub ctx: Ctx<'a>,
    /// The tenant's `max_chain_width`: a root's `width`, which the template holds.
    pub root_width: u32,
    /// The entry point to call.
    pub entry: Entry,
    /// The event, when `enter` is not given one already made and there is no `json`.
    pub event: &'a serde_json::Value,
    /// The event as a short JSON text, read onto the stack by the frame function.
    pub json: Option<&'a crate::host::ShortJson<'a>>,
}

thread_local! {
    /// The parts of the frame the running `enter` is about to make ([`with`]).
    static PARTS: Cell<*const Parts<'static>> = const { Cell::new(std::ptr::null()) };
}

/// Runs `f` (the VM's `enter` call) with `parts` there for the frame function to take.
pub fn with<R>(parts: &Parts<'_>, f: impl FnOnce() -> R) -> R {
    /// Puts back what was there before, also when `f` panics.
    struct Restore(*const Parts<'static>);
    impl Drop for Restore {
        fn drop(&mut self) {
            PARTS.with(|p| p.set(self.0));
        }
    }
    let erased = (parts as *const Parts<'_>).cast::<Parts<'static>>();
    let _restore = Restore(PARTS.with(|p| p.replace(erased)));
    f()
}

/// Raises `message` as a Luau error.
///
/// # Safety
/// Only from a C function Luau called, with one free stack slot.
unsafe fn raise(state: *mut lua_State, message: &str) -> ! {
    // SAFETY: as this function's.
    unsafe {
        ffi::lua_pushlstring_(state, message.as_ptr().cast(), message.len());
        ffi::lua_error(state)
    }
}

/// `frame(main, name, ev)`: the frame as five values: the globals, the main function's clone
/// in them, `ctx`, the event (`ev` when given, else the parts' event) and the entry point's
/// name.
unsafe extern "C-unwind" fn make(state: *mut lua_State) -> c_int {
    let parts = PARTS.with(|p| p.replace(std::ptr::null()));
    // SAFETY: Luau called this C function with its four upvalues as `function` made them; the
    // pointer is [`with`]'s, whose `parts` outlive the `enter` call that is running this, and
    // it is taken, so a second call (none is made) finds nothing. A raise (out of memory)
    // unwinds to `enter`'s protected call; nothing owned lives in this frame. Room is checked
    // for the ten slots used before anything is pushed; `value_to_luau::push` checks its own per
    // level.
    unsafe {
        if parts.is_null() {
            raise(state, "an invocation's frame is made once, by the host");
        }
        let p = &*parts;
        if ffi::lua_checkstack(state, 12) == 0 {
            raise(state, "no stack left for the invocation's frame");
        }
        // 1: main, 2: name, 3: ev.
        ffi::lua_settop(state, 3);
        // 4: the array metatable, at an absolute index for the event's arrays.
        ffi::lua_pushvalue(state, UP_ARRAY_MT);
        // 5: the globals, `_G` being themselves.
        ffi::lua_createtable(state, 0, 4);
        ffi::lua_pushvalue(state, UP_ENV_META);
        ffi::lua_setmetatable(state, 5);
        ffi::lua_rawgeti(state, UP_KIT, KIT_G);
        ffi::lua_pushvalue(state, 5);
        ffi::lua_rawset(state, 5);
        // 6: the clone (same prototype) with the frame's globals: functions the chunk defines
        // take them, so nothing of one invocation reaches the next.
        ffi::lua_clonefunction(state, 1);
        ffi::lua_pushvalue(state, 5);
        ffi::lua_setfenv(state, 6);
        // 7: ctx, a copy of the template, frozen.
        ffi::lua_clonetable(state, UP_CTX);
        let key = |k: ffi::lua_Integer| {
            ffi::lua_rawgeti(state, UP_KIT, KIT_KEYS + k);
        };
        key(0);
        ffi::lua_pushvalue(state, 2);
        ffi::lua_rawset(state, 7);
        let c = &p.ctx;
        key(1);
        ffi::lua_pushlstring_(state, c.request_id.as_ptr().cast(), c.request_id.len());
        ffi::lua_rawset(state, 7);
        key(2);
        ffi::lua_pushnumber(state, c.deadline_ms as f64);
        ffi::lua_rawset(state, 7);
        key(3);
        if c.trace == c.request_id {
            // A run that starts its own chain: the same string, not a second one.
            ffi::lua_rawgeti(state, UP_KIT, KIT_KEYS + 1);
            ffi::lua_rawget(state, 7);
        } else {
            ffi::lua_pushlstring_(state, c.trace.as_ptr().cast(), c.trace.len());
        }
        ffi::lua_rawset(state, 7);
        for (k, value, root) in [
            (4, c.attempt, ROOT_ATTEMPT),
            (5, c.depth, ROOT_DEPTH),
            (6, c.width, p.root_width),
        ] {
            if value != root {
                key(k);
                ffi::lua_pushnumber(state, f64::from(value));
                ffi::lua_rawset(state, 7);
            }
        }
        ffi::lua_setreadonly(state, 7, 1);
        // 8: the event.
        if ffi::lua_type(state, 3) != ffi::LUA_TNIL {
            ffi::lua_pushvalue(state, 3);
        } else if let Some(text) = p.json {
            if !text.push(state, 4) {
                // The caller tells this from the script's errors by `text.failed()`.
                ffi::lua_settop(state, 7);
                raise(state, "the event is not JSON");
            }
        } else if !value_to_luau::push(state, p.event, 4) {
            raise(
                state,
                "recursion limit exceeded: the event nests deeper than 128 levels",
            );
        }
        // 9: the entry point's name.
        let entry = ENTRIES.iter().position(|e| *e == p.entry).unwrap_or(0);
        ffi::lua_rawgeti(state, UP_KIT, KIT_ENTRIES + entry as ffi::lua_Integer);
    }
    5
}
