//! `require`: a script's or module's way to use a module of its tenant
//! ([`crate::config::modules`] says which file a path names).
//!
//! A module is compiled once per process (the bytecode cache, by content hash), loaded once
//! per VM, and evaluated at most once per invocation: in globals of its own, fresh for the
//! invocation and falling through to the VM's read-only ones like a script's, under the
//! invocation's deadline and memory limit. What it returned is kept in the invocation's state
//! ([`crate::host::Invocation::required`]), so a second `require` of it in the same
//! invocation returns the same value, and nothing of it reaches the next invocation. Modules
//! come from the tenant the invocation started with: an edit never mixes versions in one run.

use std::cell::RefCell;

use mlua::{Function, Lua, MultiValue, Table, Value};

use super::bytecode::{module_bytecode, SourceKey};
use crate::fast_map::FastMap;
use crate::host;

/// The most modules whose loaded main function a VM keeps; past it the cache starts again.
const CACHED_MODULES: usize = 256;

/// What a VM keeps for `require`, as its app data: the metatable of invocation globals, and
/// each module's main function as loaded once into the VM, by source hash, with its name.
pub struct Kit {
    env_meta: Table,
    loaded: RefCell<FastMap<SourceKey, (String, Function)>>,
}

/// Gives a VM what `require` needs; `env_meta` is the metatable of invocation globals.
pub fn install(lua: &Lua, env_meta: Table) {
    lua.set_app_data(Kit {
        env_meta,
        loaded: RefCell::default(),
    });
}

/// The file and line of the nearest script or module frame that called: (`lib/orders`,
/// `lib/orders.luau:3: `).
fn caller(lua: &Lua) -> Option<(String, String)> {
    (1..16)
        .map_while(|level| {
            lua.inspect_stack(level, |d| {
                let src = d.source().short_src.map(|s| s.into_owned());
                (src, d.current_line())
            })
        })
        .find_map(|(src, line)| match (src, line) {
            (Some(src), Some(line)) if src.ends_with(".luau") => {
                let at = format!("{src}:{line}: ");
                Some((src.strip_suffix(".luau")?.to_string(), at))
            }
            _ => None,
        })
}

/// `require(path)`.
pub fn require(lua: &Lua, path: Value) -> mlua::Result<Value> {
    let Some((from, at)) = caller(lua) else {
        return Err(mlua::Error::runtime(
            "require is called from a script or a module",
        ));
    };
    let (path, fail) = path_arg(&at, &path)?;
    let tenant = host::invocation(lua)?.tenant.clone();
    let module = tenant.resolve(&from, &path).map_err(&fail)?;
    let name = module.name.as_str();
    {
        let inv = host::invocation(lua)?;
        if let Some((_, v)) = inv.required.borrow().iter().find(|(n, _)| n == name) {
            return Ok(v.clone());
        }
        let why = cycle(&inv.requiring.borrow(), name);
        if let Some(why) = why {
            return Err(fail(why));
        }
    }
    let code = module_bytecode(module).map_err(&fail)?;
    let main = loaded(lua, module.hash, name, &code)?.deep_clone()?;
    let env = lua.create_table_with_capacity(0, 4)?;
    let kit = lua
        .app_data_ref::<Kit>()
        .ok_or_else(|| mlua::Error::runtime("require: the VM has no module kit"))?;
    env.set_metatable(Some(kit.env_meta.clone()))?;
    drop(kit);
    env.raw_set("_G", &env)?;
    main.set_environment(env)?;

    host::invocation(lua)?
        .requiring
        .borrow_mut()
        .push(name.to_string());
    let out = main.call::<MultiValue>(());
    host::invocation(lua)?.requiring.borrow_mut().pop();
    let out = match out {
        Ok(out) => out,
        // A limit's breach is the invocation's, not the module's: the engine reports it.
        Err(e) if matches!(super::root_error(&e), mlua::Error::MemoryError(_)) => return Err(e),
        Err(e) => {
            return Err(fail(format!(
                "the module raised an error: {}",
                host::message_of(&e)
            )))
        }
    };
    let value = module_value(name, out).map_err(fail)?;
    host::invocation(lua)?
        .required
        .borrow_mut()
        .push((name.to_string(), value.clone()));
    Ok(value)
}

/// `require`'s argument as a path, and how its failures read: `at` (the requiring file and
/// line), the path, then why. Fails when the argument is not a string.
pub fn path_arg(at: &str, path: &Value) -> mlua::Result<(String, impl Fn(String) -> mlua::Error)> {
    let path = match path {
        Value::String(s) => s.to_string_lossy(),
        other => {
            return Err(mlua::Error::RuntimeError(format!(
            "{at}require takes a module path as a string, e.g. require(\"./lib/orders\"), not {}",
            other.type_name()
        )))
        }
    };
    let head = format!(
        "{at}require({:?}): ",
        crate::text::cut_text(path.clone(), 200)
    );
    Ok((path, move |why: String| {
        mlua::Error::RuntimeError(format!("{head}{why}"))
    }))
}

/// Why requiring `name` is a cycle, when `requiring` (the modules being evaluated, outermost
/// first) holds it; `None` otherwise.
pub fn cycle(requiring: &[String], name: &str) -> Option<String> {
    let first = requiring.iter().position(|n| n == name)?;
    let cycle: Vec<String> = requiring[first..]
        .iter()
        .map(String::as_str)
        .chain([name])
        .map(|n| format!("{n}.luau"))
        .collect();
    Some(format!(
        "a cycle of requires: {}; move what they share into a module that neither requires",
        cycle.join(" -> ")
    ))
}

/// The value of the module `name` from what its main function returned: exactly one value,
/// not nil; or why not.
pub fn module_value(name: &str, out: MultiValue) -> Result<Value, String> {
    let value = match out.len() {
        0 => Value::Nil,
        1 => out.into_iter().next().unwrap_or(Value::Nil),
        n => {
            return Err(format!(
                "{name}.luau returned {n} values; a module returns one (a table of what it shares)"
            ))
        }
    };
    if value.is_nil() {
        return Err(format!(
            "{name}.luau returned nothing; a module ends with `return` of its value, e.g. `return {{ total = total }}`"
        ));
    }
    Ok(value)
}

/// The module's main function as loaded into this VM (a clone of it runs).
fn loaded(lua: &Lua, hash: [u8; 32], name: &str, code: &[u8]) -> mlua::Result<Function> {
    let key = SourceKey(hash);
    let kit = lua
        .app_data_ref::<Kit>()
        .ok_or_else(|| mlua::Error::runtime("require: the VM has no module kit"))?;
    if let Some((n, f)) = kit.loaded.borrow().get(&key) {
        // Two modules of one tenant may have the same source: each keeps its own name.
        if n == name {
            return Ok(f.clone());
        }
    }
    let f = lua
        .load(code)
        .set_name(format!("@{name}.luau"))
        .set_mode(mlua::chunk::ChunkMode::Binary)
        .into_function()?;
    let mut loaded = kit.loaded.borrow_mut();
    if loaded.len() >= CACHED_MODULES {
        loaded.clear();
    }
    loaded.insert(key, (name.to_string(), f.clone()));
    Ok(f)
}
