//! `require` in a test file: the tenant's modules, unit-tested in the test file's VM.
//!
//! Paths are found by the runtime's own resolver ([`Tenant::resolve_from`]), as Luau's
//! string-require finds them: a test file's `./` is its own folder, `@alias/` is an alias of
//! the tenant's `.luaurc` (the nearest one above the test file, as for Luau and Lune), and the
//! module found is a file under the tenant's `scripts/`. A module required by a module
//! resolves from that module, as at runtime.
//!
//! A module is evaluated once per test file (as Luau evaluates it once per VM), in globals of
//! its own that fall through to the test file's, under the test's deadline. Its `native` is
//! absent: the host API is the world's, reached through `t`; a module's function that uses it
//! fails naming the module's line and saying so.

use std::cell::RefCell;
use std::sync::Arc;

use mlua::{Lua, MultiValue, Table, Value};
use native_core::config::{Requirer, Tenant};
use native_core::engine::require::{cycle, module_value, path_arg};

use super::vm::message;

/// What `require` of one test file knows: the tenant, the file, and the modules evaluated.
struct Modules {
    tenant: Arc<Tenant>,
    /// The test file's path in the project (`tenants/shop/tests/orders.test.luau`).
    file: String,
    /// `tenants/<tenant>/`.
    folder: String,
    /// Each module's value, by name, once evaluated.
    loaded: RefCell<Vec<(String, Value)>>,
    /// The modules being evaluated, outermost first.
    requiring: RefCell<Vec<String>>,
}

impl Modules {
    /// Who called, by its chunk's name: the test file, or a module of the tenant.
    fn requirer(&self, src: &str) -> Option<(Requirer<'_>, String)> {
        if src == self.file {
            let rel = self
                .file
                .strip_prefix(&self.folder)?
                .strip_suffix(".luau")?;
            return Some((Requirer::File(rel), src.to_string()));
        }
        let name = src
            .strip_prefix(&self.folder)?
            .strip_prefix("scripts/")?
            .strip_suffix(".luau")?;
        let module = self.tenant.modules.get(name)?;
        Some((Requirer::Script(&module.name), src.to_string()))
    }

    /// The chunk name of a module: its path in the project.
    fn chunk(&self, name: &str) -> String {
        format!("{}scripts/{name}.luau", self.folder)
    }
}

/// The file and line of the nearest frame of the test file or one of its modules: (its chunk
/// name, `path:line: `).
fn caller(lua: &Lua, m: &Modules) -> Option<(String, String)> {
    (1..32)
        .map_while(|level| {
            lua.inspect_stack(level, |d| {
                let src = d.source().short_src.map(|s| s.into_owned());
                (src, d.current_line())
            })
        })
        .find_map(|(src, line)| {
            let src = src?;
            m.requirer(&src)?;
            let at = format!("{src}:{}: ", line?);
            Some((src, at))
        })
}

/// Gives the test file's VM a global `require` that loads `tenant`'s modules; `file` is the
/// test file's path in the project.
pub fn install(lua: &Lua, tenant: Arc<Tenant>, file: &str) -> mlua::Result<()> {
    let m = Modules {
        folder: format!("tenants/{}/", tenant.name),
        tenant,
        file: file.to_string(),
        loaded: RefCell::default(),
        requiring: RefCell::default(),
    };
    let no_native = no_native(lua)?;
    let require =
        lua.create_function(move |lua, path: Value| require(lua, &m, &no_native, path))?;
    lua.globals().set("require", require)
}

/// The `native` a module sees in a test: every field fails, at the module's line, saying why
/// (a string error, as `error` raises, so that a test's `pcall` reads it).
fn no_native(lua: &Lua) -> mlua::Result<Table> {
    lua.load(
        r#"return setmetatable({}, { __index = function(_, key)
  error("native." .. tostring(key) .. ": a module required by a test file runs in the test's VM, "
    .. "which has no host API; test what uses native.* through t:invoke of a script that calls it", 2)
end })"#,
    )
    .set_name("=native test")
    .eval()
}

/// `require(path)` from the test file or one of its modules.
fn require(lua: &Lua, m: &Modules, no_native: &Table, path: Value) -> mlua::Result<Value> {
    let Some((src, at)) = caller(lua, m) else {
        return Err(mlua::Error::runtime(
            "require is called from the test file or a module it required",
        ));
    };
    let (path, fail) = path_arg(&at, &path)?;
    let Some((from, _)) = m.requirer(&src) else {
        return Err(fail("the requiring file is not the test's".into()));
    };
    let module = m.tenant.resolve_from(from, &path).map_err(&fail)?.clone();
    let name = module.name.as_str();
    if let Some((_, v)) = m.loaded.borrow().iter().find(|(n, _)| n == name) {
        return Ok(v.clone());
    }
    if let Some(why) = cycle(&m.requiring.borrow(), name) {
        return Err(fail(why));
    }
    let env = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.set("__index", lua.globals())?;
    env.set_metatable(Some(meta))?;
    env.raw_set("_G", &env)?;
    env.raw_set("native", no_native)?;
    let main = lua
        .load(module.source.as_str())
        .set_name(format!("={}", m.chunk(name)))
        .set_environment(env)
        .into_function()
        .map_err(|e| fail(format!("the module does not compile: {}", message(&e))))?;
    m.requiring.borrow_mut().push(name.to_string());
    let out = main.call::<MultiValue>(());
    m.requiring.borrow_mut().pop();
    let out = match out {
        Ok(out) => out,
        Err(e)
            if matches!(
                native_core::engine::root_error(&e),
                mlua::Error::MemoryError(_)
            ) =>
        {
            return Err(e)
        }
        Err(e) => return Err(fail(format!("the module raised an error: {}", message(&e)))),
    };
    let value = module_value(name, out).map_err(fail)?;
    m.loaded
        .borrow_mut()
        .push((name.to_string(), value.clone()));
    Ok(value)
}
