//! `native.log(level, msg[, fields])`: structured logs, one JSON object a line.

use mlua::{Lua, Table};
use serde_json::{json, Map, Value};

/// Where script logs go.
pub trait LogSink: Send + Sync + std::fmt::Debug {
    /// Writes one record.
    fn write(&self, record: &Value);
}

/// Writes each record as a JSON line on stderr (CloudWatch on Lambda, the terminal locally).
#[derive(Debug, Default)]
pub struct StderrLog;

impl LogSink for StderrLog {
    fn write(&self, record: &Value) {
        eprintln!("{record}");
    }
}

const LEVELS: [&str; 4] = ["debug", "info", "warn", "error"];

pub(super) fn log(
    lua: &Lua,
    (level, msg, fields): (String, mlua::Value, Option<Table>),
) -> mlua::Result<()> {
    if !LEVELS.contains(&level.as_str()) {
        return Err(super::raise(
            lua,
            format!("native.log: level {level:?} is not one of debug, info, warn, error"),
        ));
    }
    let inv = super::invocation(lua)?;
    let msg = match msg {
        mlua::Value::String(s) => s.to_string_lossy(),
        other => other.to_string()?,
    };
    let mut rec = Map::new();
    rec.insert("ts_ms".into(), json!(crate::ports::now_ms()));
    rec.insert("level".into(), json!(level));
    rec.insert("tenant".into(), json!(inv.tenant.name));
    rec.insert("script".into(), json!(inv.script));
    rec.insert("request_id".into(), json!(inv.request_id));
    rec.insert("msg".into(), json!(msg));
    if let Some(f) = fields {
        let services = inv.services.clone();
        drop(inv);
        if let Value::Object(m) = super::from_lua(lua, mlua::Value::Table(f))? {
            for (k, v) in m {
                rec.entry(k).or_insert(v);
            }
        }
        services.log.write(&Value::Object(rec));
        return Ok(());
    }
    inv.services.log.write(&Value::Object(rec));
    Ok(())
}
