//! A sandboxed Luau VM for one tenant. The standard library is trimmed to what cannot reach
//! outside the invocation, the host `native` table is added, and everything shared is made
//! read-only before `sandbox(true)`. Each invocation then runs in its own globals table whose
//! misses fall through to the shared read-only globals: nothing one invocation writes is seen by
//! the next.

use std::sync::Arc;

use mlua::{Lua, LuaOptions, LuaSerdeExt, StdLib, Table, Value};

use super::bytecode::SourceKey;
use crate::config::{Deployment, Tenant};
use crate::host;
use crate::host::helpers::{self, Debug};

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

/// `error` that gives a table raised without a metatable a `__tostring`, so that an uncaught
/// `error({ code = 1 })` reads `s.luau:3: error {"code":1}` rather than `table: 0x7f...`. The
/// table itself is still what pcall catches. Levels count from the caller, as Luau's own.
/// `os.time` and `os.date` over the process clock: with no time given, "now" is
/// `ports::now_ms`; with one, Luau's own functions answer.
const OS_CLOCK: &str = r#"
local time, date, now = ...
return function(t)
  if t == nil then return now() end
  return time(t)
end, function(fmt, t)
  if t == nil then t = now() end
  return date(fmt or "%c", t)
end
"#;

const ERROR: &str = r#"
local rawerror, tag, type = ...
return function(v, level)
  if type(v) == "table" then tag(v) end
  if level == nil then level = 1 end
  if type(level) == "number" and level > 0 then level += 1 end
  return rawerror(v, level)
end
"#;

/// An invocation: makes its frame (`frame`, the host's C function: see frame.rs), runs the
/// main function, finds the entry point (in the table it returned, else in its globals) and
/// calls it, so that the host makes one call into the VM rather than three (each a protected
/// call with its own error handler) and two lookups. Compiled without line information, so
/// that `error(msg, 2)` in an entry point names no position, as when the host called it
/// directly. `type` and `rawget` are the read-only globals' builtins, which Luau calls without
/// a frame (a `type` passed in as a local would be a full call that interns its answer:
/// BENCHMARKS.md, Figures behind the code).
const ENTER: &str = r#"
local frame = ...
return function(main, name, ev)
  local env, chunk, ctx, event, key = frame(main, name, ev)
  local r = chunk()
  local f = nil
  if type(r) == "table" then f = rawget(r, key) end
  if f == nil then f = rawget(env, key) end
  if type(f) ~= "function" then return false, f end
  return true, f(ctx, event)
end
"#;

/// The most scripts whose loaded main function a VM keeps; past it the cache starts again.
const CACHED_CHUNKS: usize = 64;

/// A VM with its shared read-only globals.
pub struct Vm {
    /// The Luau state.
    pub lua: Lua,
    /// The read-only globals every invocation's environment falls through to.
    pub globals: Table,
    /// The tenant's `max_chain_width` when the VM was made: a root's `ctx.width`.
    root_width: u32,
    /// Each script's main function as loaded once into this VM, by source hash, with the
    /// script name it was loaded under (which errors name). An invocation runs a clone of it
    /// with its own environment, rather than loading the bytecode again.
    chunks: std::cell::RefCell<crate::fast_map::FastMap<SourceKey, Arc<Loaded>>>,
    /// Runs an invocation (see `ENTER`).
    enter: mlua::Function,
}

/// A script's main function as loaded into a VM, with its name as given and as a Luau string.
struct Loaded {
    name: String,
    name_lua: mlua::LuaString,
    main: mlua::Function,
}

/// A VM made for no tenant yet: the trimmed standard library, the host's helpers, the
/// `native` table (its `config` a placeholder) and the sandbox, all of which are the same for
/// every tenant of a deployment. Nearly all of a VM's making (BENCHMARKS.md, First invoke and
/// memory per tenant), so a server makes one ahead, off the request path, for the next tenant's
/// first invoke ([`super::spare`]).
pub struct Blank {
    lua: Lua,
    pub(super) globals: Table,
    native: Table,
    env_meta: Table,
}

impl Blank {
    /// A blank VM for `deployment` (its buckets name `native.bucket`'s).
    pub fn new(deployment: &Deployment) -> mlua::Result<Blank> {
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
        // Nil, as in Luau's own sandbox: `type(require)` is "nil". A call or index of one
        // fails with a sentence naming it (`super::removed::explain`).
        for (name, _) in super::removed::GLOBALS {
            g.raw_set(name, Value::Nil)?;
        }
        // Luau's string require, over the tenant's modules (`super::require`).
        g.raw_set("require", lua.create_function(super::require::require)?)?;
        // Only `os.clock`, `os.date`, `os.difftime` and `os.time` exist in Luau's os library;
        // check anyway, so that a newer Luau cannot bring more in unnoticed.
        let os: Table = g.get("os")?;
        for pair in os.clone().pairs::<String, Value>() {
            let (k, _) = pair?;
            if !["clock", "date", "difftime", "time"].contains(&k.as_str()) {
                os.raw_set(k, Value::Nil)?;
            }
        }
        // `os.time()` and `os.date(fmt)` read the process clock (`ports::now_ms`), so that
        // scripts see the embedded backend's project clock (`native clock advance`) too.
        let (time, date): (mlua::Function, mlua::Function) =
            helpers::chunk(&lua, OS_CLOCK, Debug::Lines)?.call((
                os.raw_get::<mlua::Function>("time")?,
                os.raw_get::<mlua::Function>("date")?,
                lua.create_function(|_, ()| Ok(crate::ports::now_ms().div_euclid(1000)))?,
            ))?;
        os.raw_set("time", time)?;
        os.raw_set("date", date)?;
        g.raw_set(
            "collectgarbage",
            host::function(&lua, ("collectgarbage", &["option?"]), collectgarbage)?,
        )?;
        // Errors raised by host functions reach Luau as error values; a script that catches one
        // with pcall or xpcall gets its message as a plain string, as for Luau's own errors.
        let clean = lua.create_function(clean_error)?;
        let coroutine: Table = g.get("coroutine")?;
        let resume: mlua::Function = coroutine.get("resume")?;
        let (pcall, xpcall, resume): (mlua::Function, mlua::Function, mlua::Function) =
            helpers::chunk(&lua, PCALL, Debug::Lines)?.call((clean, resume))?;
        g.raw_set("pcall", pcall)?;
        g.raw_set("xpcall", xpcall)?;
        coroutine.raw_set("resume", resume)?;
        let error: mlua::Function = helpers::chunk(&lua, ERROR, Debug::Lines)?.call((
            g.raw_get::<mlua::Function>("error")?,
            lua.create_function(tag_error)?,
            g.raw_get::<mlua::Function>("type")?,
        ))?;
        g.raw_set("error", error)?;
        g.raw_set("print", lua.create_function(print)?)?;
        let native = host::native_table(&lua, deployment)?;
        g.raw_set("native", &native)?;
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
        super::require::install(&lua, env_meta.clone());
        Ok(Blank {
            lua,
            globals: g,
            native,
            env_meta,
        })
    }
}

impl Vm {
    /// A new VM for a tenant: [`Blank::new`], then [`Vm::for_tenant`].
    pub fn new(tenant: &Tenant, deployment: &Deployment) -> mlua::Result<Vm> {
        Vm::for_tenant(Blank::new(deployment)?, tenant)
    }

    /// Gives `blank` to `tenant`: its config as `native.config`, and the frame that names it
    /// in every `ctx`. What is left of making a VM once the blank is made: a few per cent.
    pub fn for_tenant(blank: Blank, tenant: &Tenant) -> mlua::Result<Vm> {
        let Blank {
            lua,
            globals: g,
            native,
            env_meta,
        } = blank;
        let config = host::to_lua(&lua, &tenant.config.config)?;
        if let Value::Table(t) = &config {
            host::deep_readonly(&lua, t)?;
        }
        // The blank's `native.config` is a placeholder (`false`), so the key's slot is there and
        // setting it does not reshape the table; `native` is read-only again straight after.
        native.set_readonly(false);
        let set = native.raw_set("config", config);
        native.set_readonly(true);
        set?;
        let root_width = tenant.config.limits.max_chain_width;
        let frame = super::frame::function(
            &lua,
            env_meta,
            lua.array_metatable(),
            &tenant.name,
            root_width,
        )?;
        let enter: mlua::Function = helpers::chunk(&lua, ENTER, Debug::None)?
            .set_environment(g.clone())
            .call(frame)?;
        Ok(Vm {
            lua,
            globals: g,
            root_width,
            chunks: Default::default(),
            enter,
        })
    }

    /// Runs `entry` of the script whose source hash and bytecode are given, for one invocation
    /// with `ctx`, in a fresh globals table (its `_G` is itself; misses fall through to the
    /// shared read-only globals). The event is `ev` when not nil (made on the VM's heap
    /// already), else `event`. The script's main function is a clone of the one loaded once
    /// per VM (keyed by the script's source hash and name), or of the bytecode loaded now.
    /// Returns whether the entry point was found, and what it returned (or what was found in
    /// its place).
    pub fn call(
        &self,
        hash: &[u8; 32],
        code: &[u8],
        ctx: Ctx<'_>,
        entry: super::Entry,
        given: super::frame::Given<'_>,
    ) -> mlua::Result<(bool, Value)> {
        use super::frame::Given;
        static NO_EVENT: serde_json::Value = serde_json::Value::Null;
        let loaded = self.loaded(hash, code, ctx.script)?;
        let (event, ev, json) = match given {
            Given::Host(v) => (v, Value::Nil, None),
            Given::Made(v) => (&NO_EVENT, v, None),
            Given::Short(s) => (&NO_EVENT, Value::Nil, Some(s)),
        };
        let parts = super::frame::Parts {
            ctx,
            root_width: self.root_width,
            entry,
            event,
            json,
        };
        super::frame::with(&parts, || {
            self.enter.call((&loaded.main, &loaded.name_lua, ev))
        })
    }

    /// The script's main function as loaded into this VM.
    fn loaded(&self, hash: &[u8; 32], code: &[u8], script: &str) -> mlua::Result<Arc<Loaded>> {
        let key = SourceKey(*hash);
        if let Some(l) = self.chunks.borrow().get(&key) {
            // Two scripts of one tenant may have the same source: each keeps its own name.
            if l.name == script {
                return Ok(l.clone());
            }
        }
        let main = self
            .lua
            .load(code)
            .set_name(format!("@{script}.luau"))
            .set_mode(mlua::chunk::ChunkMode::Binary)
            .into_function()?;
        let l = Arc::new(Loaded {
            name: script.to_string(),
            name_lua: self.lua.create_string(script)?,
            main,
        });
        let mut chunks = self.chunks.borrow_mut();
        if chunks.len() >= CACHED_CHUNKS {
            chunks.clear();
        }
        chunks.insert(key, l.clone());
        Ok(l)
    }
}

/// What an invocation's `ctx` holds besides the tenant's name (the VM's tenant).
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The script's name.
    pub script: &'a str,
    /// The invocation's id.
    pub request_id: &'a str,
    /// The chain's id (`ctx.trace`).
    pub trace: &'a str,
    /// 1 on first delivery.
    pub attempt: u32,
    /// The chain depth.
    pub depth: u32,
    /// The share of its chain's width.
    pub width: u32,
    /// The deadline, in ms since the epoch.
    pub deadline_ms: i64,
}

/// Gives a table about to be raised a `__tostring` that shows where it was raised and what it
/// holds, unless it has a metatable of its own or is read-only.
fn tag_error(lua: &Lua, t: Table) -> mlua::Result<()> {
    if t.metatable().is_some() || t.is_readonly() {
        return Ok(());
    }
    let at = match host::raise(lua, "") {
        mlua::Error::RuntimeError(at) => at,
        _ => String::new(),
    };
    let meta = lua.create_table()?;
    meta.raw_set(
        "__tostring",
        lua.create_function(move |_, t: Table| {
            let mut out = format!("{at}error ");
            describe(&Value::Table(t), 0, &mut out);
            Ok(out)
        })?,
    )?;
    t.set_metatable(Some(meta))
}

/// The most of an error value [`describe`] shows.
const DESCRIBE_CHARS: usize = 500;

/// Writes a value as JSON-like text for an error message, bounded in depth, entries and length
/// (an error value may be any size); `...` marks what was left out.
fn describe(v: &Value, depth: usize, out: &mut String) {
    if out.len() > DESCRIBE_CHARS {
        return;
    }
    match v {
        Value::Nil => out.push_str("null"),
        Value::Boolean(b) => out.push_str(&b.to_string()),
        Value::Integer(i) => out.push_str(&i.to_string()),
        Value::Number(n) => out.push_str(&serde_json::json!(n).to_string()),
        Value::String(s) => {
            let s = s.to_string_lossy();
            let cut: String = s.chars().take(100).collect();
            out.push_str(&serde_json::Value::String(cut).to_string());
            if s.chars().count() > 100 {
                out.push_str("...");
            }
        }
        Value::Table(t) if depth < 3 => {
            let len = t.raw_len();
            let pairs: Vec<(Value, Value)> = t.pairs().take(17).flatten().collect();
            let is_array = len > 0
                && pairs.len() == len.min(17)
                && pairs.iter().all(|(k, _)| match k {
                    Value::Integer(i) => (1..=len as i64).contains(i),
                    Value::Number(n) => n.fract() == 0.0 && *n >= 1.0 && *n <= len as f64,
                    _ => false,
                });
            out.push(if is_array { '[' } else { '{' });
            for (i, (k, v)) in pairs.iter().take(16).enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if !is_array {
                    match k {
                        Value::String(s) => out
                            .push_str(&serde_json::Value::String(s.to_string_lossy()).to_string()),
                        Value::Integer(i) => out.push_str(&format!("\"{i}\"")),
                        Value::Number(n) => out.push_str(&format!("\"{n}\"")),
                        other => out.push_str(&format!("\"<{}>\"", other.type_name())),
                    }
                    out.push(':');
                }
                describe(v, depth + 1, out);
                if out.len() > DESCRIBE_CHARS {
                    out.push_str("...");
                    return;
                }
            }
            if pairs.len() > 16 {
                out.push_str(",...");
            }
            out.push(if is_array { ']' } else { '}' });
        }
        Value::Table(_) => out.push_str("{...}"),
        other => out.push_str(&format!("<{}>", other.type_name())),
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
            let message = inv.memory_breach(lua);
            return lua.create_string(message).map(Value::String);
        }
    }
    match v {
        Value::Error(e) => lua.create_string(host::message_of(&e)).map(Value::String),
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
        "script": inv.script, "request_id": inv.request_id, "trace": inv.trace, "msg": msg,
    });
    inv.write_log(&rec);
    Ok(())
}
