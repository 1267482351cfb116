//! `native.log(level, msg[, fields])`: structured logs, one JSON object a line.

use mlua::{Lua, Table};
use serde_json::{json, Map, Value};

const LEVELS: [&str; 4] = ["debug", "info", "warn", "error"];

/// The longest message of one log record, in bytes; longer ones are cut with a note of their
/// length. Log services cut records anyway (CloudWatch at 256 KB), and one `print` of the same
/// large string a thousand times must not make the host build gigabytes.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024;

/// The values of `print(...)` or a log message as one text, tab-separated, at most
/// [`MAX_MESSAGE_BYTES`]: nothing past the cut is copied out of the VM.
pub fn message_text(values: &[mlua::Value]) -> mlua::Result<String> {
    let mut out: Vec<u8> = Vec::new();
    let mut total = 0usize;
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            total += 1;
            if out.len() < MAX_MESSAGE_BYTES {
                out.push(b'\t');
            }
        }
        let room = MAX_MESSAGE_BYTES.saturating_sub(out.len());
        match v {
            mlua::Value::String(s) => {
                let b = s.as_bytes();
                total += b.len();
                out.extend_from_slice(&b[..b.len().min(room)]);
            }
            other => {
                let s = other.to_string()?;
                total += s.len();
                out.extend_from_slice(&s.as_bytes()[..s.len().min(room)]);
            }
        }
    }
    let mut text = String::from_utf8_lossy(&out).into_owned();
    if total > out.len() {
        text.push_str(&format!(" [cut: {total} bytes in all]"));
    }
    Ok(text)
}

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
    let msg = message_text(&[msg])?;
    let mut rec = Map::new();
    rec.insert("ts_ms".into(), json!(crate::ports::now_ms()));
    rec.insert("level".into(), json!(level));
    rec.insert("tenant".into(), json!(inv.tenant.name));
    rec.insert("script".into(), json!(inv.script));
    rec.insert("request_id".into(), json!(inv.request_id));
    rec.insert("trace".into(), json!(inv.trace));
    rec.insert("msg".into(), json!(msg));
    if let Some(f) = fields {
        if let Value::Object(m) =
            super::from_lua(lua, mlua::Value::Table(f), "native.log: the fields")?
        {
            for (k, v) in m {
                rec.entry(k).or_insert(v);
            }
        }
    }
    inv.write_log(&Value::Object(rec));
    Ok(())
}

/// The most log output one invocation writes, in bytes of JSON lines: a loop of log calls
/// must not flood the process's log (and the log bill) for every tenant.
pub const MAX_LOG_BYTES: usize = 4 * 1024 * 1024;

/// The length of a record as a JSON line, without building the line.
pub(crate) fn encoded_len(rec: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(1);
    let _ = serde_json::to_writer(&mut c, rec);
    c.0
}
