//! The host API: the read-only `native` table that scripts call. Each area is a module with a
//! `fn module(lua, ...) -> LuaResult<Table>`; per-invocation state is read from the VM's app
//! data ([`Invocation`]), so the tables are built once per VM.

mod barrier;
mod batch;
mod bucket;
pub mod chain;
mod db;
mod function;
pub mod helpers;
mod http;
mod invocation;
mod json;
mod log;
pub mod luau_to_json;
mod ndjson;
mod queue;
mod readonly;
mod rendezvous;
mod response;
mod rows;
mod services;
mod text_to_luau;
mod timer;
#[cfg(test)]
mod types_test;
pub(crate) mod value_to_luau;

pub use db::db_pk;
pub use function::{add_method, add_method_mut, function, method, method_mut, Signature};
pub use invocation::{too_deep, Breach, Invocation};
pub use json::{from_lua, to_json_text, to_lua};
pub use log::message_text;
pub use readonly::deep_readonly;
pub use response::Reply;
pub use services::Services;
pub use text_to_luau::{parse_value as parse_json, Short as ShortJson};

use std::fmt::Display;

use mlua::{AppDataRef, Lua, Table};

use crate::config::Deployment;
use crate::error::Cause;

/// Builds the `native` table for a VM of a deployment, read-only all through; `native.config`
/// is `false` until the VM is given to a tenant.
pub fn native_table(lua: &Lua, deployment: &Deployment) -> mlua::Result<Table> {
    let native = lua.create_table()?;
    native.set("json", json::module(lua)?)?;
    native.set(
        "log",
        function(lua, ("native.log", &["level", "msg", "fields?"]), log::log)?,
    )?;
    // The tenant's config, set when the VM is given to a tenant (`engine::Vm::for_tenant`).
    native.set("config", false)?;
    native.set("bucket", bucket::module(lua, deployment)?)?;
    native.set("db", db::module(lua)?)?;
    native.set("queue", queue::module(lua)?)?;
    native.set("ndjson", ndjson::module(lua)?)?;
    native.set("barrier", barrier::module(lua)?)?;
    native.set("batch", batch::module(lua)?)?;
    native.set("timer", timer::module(lua)?)?;
    native.set("rendezvous", rendezvous::module(lua)?)?;
    native.set("http", http::module(lua)?)?;
    native.set("response", response::function(lua)?)?;
    readonly::deep_readonly(lua, &native)?;
    Ok(native)
}

/// The running invocation. Host functions are only reachable while one runs.
pub fn invocation(lua: &Lua) -> mlua::Result<AppDataRef<'_, Invocation>> {
    lua.app_data_ref::<Invocation>()
        .ok_or_else(|| mlua::Error::runtime("native host API used outside an invocation"))
}

/// An error raised into the script, prefixed with the script and line that called the host
/// function, as Luau's own errors are. Its cause is [`Cause::Raised`]: for a core error, whose
/// kind decides how the invocation fails, use [`raise_error`].
pub fn raise(lua: &Lua, message: impl Display) -> mlua::Error {
    mlua::Error::RuntimeError(format!("{}{message}", at_line(lua)))
}

/// [`raise`] for a core error: the error's kind goes with it ([`Cause::of`]).
pub fn raise_error(lua: &Lua, e: crate::Error) -> mlua::Error {
    raise_as(lua, Cause::of(&e), e)
}

/// [`raise`] with the cause the invocation fails with if the script does not catch the error
/// ([`cause_of`]). A script that catches it gets its message as a string (`engine::sandbox`),
/// so an error it raises again is its own.
pub fn raise_as(lua: &Lua, cause: Cause, message: impl Display) -> mlua::Error {
    match cause {
        Cause::Raised => raise(lua, message),
        cause => mlua::Error::external(Raised {
            cause,
            message: format!("{}{message}", at_line(lua)),
        }),
    }
}

/// The cause of an error that ended a script: the one it was raised with ([`raise_as`]),
/// else [`Cause::Raised`].
pub fn cause_of(e: &mlua::Error) -> Cause {
    match root_error(e) {
        mlua::Error::ExternalError(e) => e
            .downcast_ref::<Raised>()
            .map_or(Cause::Raised, |r| r.cause),
        _ => Cause::Raised,
    }
}

/// An error raised into a script with its cause ([`raise_as`]); it reads as its message.
#[derive(Debug)]
struct Raised {
    cause: Cause,
    message: String,
}

impl Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Raised {}

/// `<script>.luau:<line>: ` of the nearest script frame, or nothing outside a script.
fn at_line(lua: &Lua) -> String {
    // The nearest script frame: host functions may be called through pcall or a wrapper.
    (1..16)
        .map_while(|level| {
            lua.inspect_stack(level, |d| {
                let src = d.source().short_src.map(|s| s.into_owned());
                (src, d.current_line())
            })
        })
        .find_map(|(src, line)| match (src, line) {
            (Some(src), Some(line)) if src.ends_with(".luau") => Some(format!("{src}:{line}: ")),
            _ => None,
        })
        .unwrap_or_default()
}

/// The error under mlua's wrapping (callback errors, added context).
pub fn root_error(e: &mlua::Error) -> &mlua::Error {
    match e {
        mlua::Error::CallbackError { cause, .. } => root_error(cause),
        mlua::Error::WithContext { cause, .. } => root_error(cause),
        other => other,
    }
}

/// The message of an mlua error without mlua's wrapping ("callback error", tracebacks).
pub fn message_of(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => message_of(cause),
        mlua::Error::WithContext { cause, .. } => message_of(cause),
        // Tracebacks go to the logs, not into the message people read first.
        mlua::Error::RuntimeError(m) => match m.split("\nstack traceback:").next().unwrap_or(m) {
            // `error()` or `error(nil)`: say so rather than print a bare "nil".
            "nil" => "the script raised an error with no message (error(nil))".into(),
            first => first.to_string(),
        },
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::MemoryError(_) => {
            "limit max_memory_mb exceeded: the script's Luau heap reached its limit".into()
        }
        mlua::Error::ExternalError(e) => e.to_string(),
        other => other.to_string(),
    }
}

/// Checks a relative key, raising a clear error for a bad one.
pub(crate) fn check_key(lua: &Lua, key: &str) -> mlua::Result<()> {
    crate::keys::check_relative_key(key).map_err(|why| raise(lua, why))
}

/// A whole number from an option table's field (`None` when the table or the field is
/// absent). Another type, a fraction, NaN or a number outside `range` is an error that names
/// the function, the field, the range and the value: numbers from scripts feed deadlines,
/// TTLs and delays, where an unchecked one overflows or wraps.
pub(crate) fn opt_whole(
    lua: &Lua,
    opts: Option<&Table>,
    func: &str,
    field: &str,
    range: std::ops::RangeInclusive<i64>,
) -> mlua::Result<Option<i64>> {
    let Some(opts) = opts else { return Ok(None) };
    let v: mlua::Value = opts.get(field)?;
    let (lo, hi) = (*range.start(), *range.end());
    let n = match v {
        mlua::Value::Nil => return Ok(None),
        mlua::Value::Integer(i) => i as f64,
        mlua::Value::Number(n) => n,
        other => {
            return Err(raise(
                lua,
                format!(
                    "{func}: {field} must be a number from {lo} to {hi}, not {}",
                    function::a_type(&other)
                ),
            ))
        }
    };
    let shown = if n.abs() < 1e15 {
        format!("{n}")
    } else {
        format!("{n:e}")
    };
    if !n.is_finite() || n < lo as f64 || n > hi as f64 {
        return Err(raise(
            lua,
            format!("{func}: {field} must be {lo} to {hi}, not {shown}"),
        ));
    }
    if n.fract() != 0.0 {
        return Err(raise(
            lua,
            format!("{func}: {field} must be a whole number from {lo} to {hi}, not {shown}"),
        ));
    }
    Ok(Some(n as i64))
}
