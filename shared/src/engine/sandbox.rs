//! A sandboxed Luau VM for one tenant. The standard library is trimmed to what cannot reach
//! outside the invocation, the host `native` table is added, and everything shared is made
//! read-only before `sandbox(true)`. Each invocation then runs in its own globals table whose
//! misses fall through to the shared read-only globals: nothing one invocation writes is seen by
//! the next.

use mlua::{Lua, LuaOptions, LuaSerdeExt, StdLib, Table, Value};

use crate::config::{Deployment, Tenant};
use crate::host;

/// Globals removed before sandboxing: they load code, reach other environments or the process.
const REMOVED: [&str; 6] = [
    "require",
    "loadstring",
    "getfenv",
    "setfenv",
    "load",
    "dofile",
];

/// `pcall`, `xpcall` and `coroutine.resume` that hand scripts error messages as strings, and
/// that tell the host about a memory error they catch: a breach of `max_memory_mb` fails the
/// invocation even when the script catches it, like every other limit.
const PCALL: &str = r#"
local clean, rawresume = ...
local rawpcall, rawxpcall, typeof = pcall, xpcall, typeof
local function fix(ok, ...)
  if ok then return ok, ... end
  local e = ...
  if typeof(e) == "error" or e == "not enough memory" then e = clean(e) end
  return false, e
end
return function(f, ...) return fix(rawpcall(f, ...)) end,
  function(f, handler, ...)
    return rawxpcall(f, function(e)
      if typeof(e) == "error" or e == "not enough memory" then e = clean(e) end
      return handler(e)
    end, ...)
  end,
  function(co, ...) return fix(rawresume(co, ...)) end
"#;

/// A VM with its shared read-only globals.
pub struct Vm {
    /// The Luau state.
    pub lua: Lua,
    /// The read-only globals every invocation's environment falls through to.
    pub globals: Table,
    /// The metatable for invocation environments.
    env_meta: Table,
}

impl Vm {
    /// A new VM for a tenant.
    pub fn new(tenant: &Tenant, deployment: &Deployment) -> mlua::Result<Vm> {
        let libs = StdLib::COROUTINE
            | StdLib::TABLE
            | StdLib::OS
            | StdLib::STRING
            | StdLib::UTF8
            | StdLib::BIT
            | StdLib::MATH
            | StdLib::BUFFER;
        let lua = Lua::new_with(libs, LuaOptions::default())?;
        let g = lua.globals();
        for name in REMOVED {
            g.raw_set(name, Value::Nil)?;
        }
        // Only `os.clock`, `os.date`, `os.difftime` and `os.time` exist in Luau's os library;
        // check anyway, so that a newer Luau cannot bring more in unnoticed.
        let os: Table = g.get("os")?;
        for pair in os.clone().pairs::<String, Value>() {
            let (k, _) = pair?;
            if !["clock", "date", "difftime", "time"].contains(&k.as_str()) {
                os.raw_set(k, Value::Nil)?;
            }
        }
        g.raw_set("collectgarbage", lua.create_function(collectgarbage)?)?;
        // Errors raised by host functions reach Luau as error values; a script that catches one
        // with pcall or xpcall gets its message as a plain string, as for Luau's own errors.
        let clean = lua.create_function(clean_error)?;
        let coroutine: Table = g.get("coroutine")?;
        let resume: mlua::Function = coroutine.get("resume")?;
        let (pcall, xpcall, resume): (mlua::Function, mlua::Function, mlua::Function) = lua
            .load(PCALL)
            .set_name("=[native]")
            .call((clean, resume))?;
        g.raw_set("pcall", pcall)?;
        g.raw_set("xpcall", xpcall)?;
        coroutine.raw_set("resume", resume)?;
        g.raw_set("print", lua.create_function(print)?)?;
        g.raw_set(
            "native",
            host::native_table(&lua, deployment, &tenant.config.config)?,
        )?;
        // Tables that mlua shares between conversions must not be writable either.
        lua.array_metatable().set_readonly(true);
        super::interrupt::install(&lua)?;
        // Scripts that stream rows make garbage fast and keep little alive: let the heap grow
        // to four times the live data between cycles (Luau's default is two), which halves the
        // collector's work. max_memory_mb still bounds the heap.
        lua.gc_set_mode(mlua::state::GcMode::Incremental(
            mlua::state::GcIncParams::default().goal(400),
        ));
        lua.sandbox(true)?;
        let env_meta = lua.create_table()?;
        env_meta.raw_set("__index", g.clone())?;
        env_meta.raw_set("__metatable", "locked")?;
        env_meta.set_readonly(true);
        Ok(Vm {
            lua,
            globals: g,
            env_meta,
        })
    }

    /// A fresh globals table for one invocation.
    pub fn new_env(&self) -> mlua::Result<Table> {
        let env = self.lua.create_table()?;
        env.raw_set("_G", env.clone())?;
        env.set_metatable(Some(self.env_meta.clone()))?;
        Ok(env)
    }
}

/// An error caught by `pcall`, `xpcall` or `coroutine.resume`, as the script sees it: host
/// errors become their message; a memory error is recorded as a breach of `max_memory_mb`
/// (so the invocation fails even though the script caught it) and reads as that breach.
fn clean_error(lua: &Lua, v: Value) -> mlua::Result<Value> {
    let memory = match &v {
        Value::Error(e) => matches!(super::root_error(e), mlua::Error::MemoryError(_)),
        Value::String(s) => s.as_bytes() == b"not enough memory",
        _ => false,
    };
    if memory {
        if let Some(inv) = lua.app_data_ref::<host::Invocation>() {
            let message = inv.memory_message(lua);
            let mut b = inv.breach.borrow_mut();
            if b.is_none() {
                *b = Some(message.clone());
            }
            return lua.create_string(message).map(Value::String);
        }
    }
    match v {
        Value::Error(e) => lua.create_string(super::message_of(&e)).map(Value::String),
        other => Ok(other),
    }
}

/// `collectgarbage`: only `"count"` is allowed; a full collection would let one script slow the
/// VM for everyone and leak timing.
fn collectgarbage(lua: &Lua, opt: Option<String>) -> mlua::Result<f64> {
    match opt.as_deref() {
        Some("count") => Ok(lua.used_memory() as f64 / 1024.0),
        other => Err(host::raise(
            lua,
            format!(
                "collectgarbage({:?}) is not allowed; only collectgarbage(\"count\") is",
                other.unwrap_or("collect")
            ),
        )),
    }
}

/// `print(...)`: an info log line, so that nothing is written to the function's stdout.
fn print(lua: &Lua, args: mlua::Variadic<Value>) -> mlua::Result<()> {
    let msg = host::message_text(&args)?;
    let inv = host::invocation(lua)?;
    let rec = serde_json::json!({
        "ts_ms": crate::ports::now_ms(), "level": "info", "tenant": inv.tenant.name,
        "script": inv.script, "request_id": inv.request_id, "msg": msg,
    });
    inv.services.log.write(&rec);
    Ok(())
}
