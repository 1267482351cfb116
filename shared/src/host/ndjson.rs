//! `native.ndjson.rows(string_or_stream)`: an iterator over the JSON values of NDJSON, one a line,
//! blank lines skipped, a `null` line as `native.json.null`; a bad line is an error naming the
//! line. A stream (`native.bucket.<Name>.open(key)`) is read in chunks, gzip detected from the
//! data, within `max_stream_mb`, exactly as batch results are.

use mlua::{Lua, Table, UserData, Value};

use super::rows::{iterator, LineSource, Span};
use super::{invocation, raise};
use crate::batch::manifest::Part;
use crate::batch::reader::Rows;

/// An object opened for streaming by `native.bucket.<Name>.open(key)`.
#[derive(Debug, Clone)]
pub struct Stream {
    /// The real bucket.
    pub bucket: String,
    /// The full key.
    pub key: String,
    /// How scripts name it, for errors.
    pub label: String,
}

impl UserData for Stream {}

/// NDJSON text held in memory.
struct Text {
    bytes: Vec<u8>,
    pos: usize,
    line: u64,
    max: usize,
}

impl LineSource for Text {
    fn fill(
        &mut self,
        lua: &Lua,
        data: &mut Vec<u8>,
        spans: &mut Vec<Span>,
        rows: usize,
        bytes: usize,
    ) -> (bool, Option<mlua::Error>) {
        while spans.len() < rows && data.len() < bytes {
            if self.pos >= self.bytes.len() {
                return (true, None);
            }
            let start = self.pos;
            let end =
                memchr::memchr(b'\n', &self.bytes[start..]).map_or(self.bytes.len(), |i| start + i);
            self.pos = end + 1;
            self.line += 1;
            if end - start > self.max {
                let detail = format!(
                    "ndjson line {} is {} bytes and a row may be at \
                     most {} MB (limits.max_object_mb)",
                    self.line,
                    end - start,
                    self.max >> 20
                );
                let e = match invocation(lua) {
                    Ok(inv) => inv.breach(lua, "max_object_mb", detail),
                    Err(e) => e,
                };
                return (false, Some(e));
            }
            let row = self.bytes[start..end].trim_ascii();
            if !row.is_empty() {
                let at = data.len();
                data.extend_from_slice(row);
                spans.push((at, data.len(), self.line, 0));
            }
        }
        (false, None)
    }

    fn bad_row(&self, line: u64, _part: usize, err: String) -> String {
        format!("ndjson line {line}: invalid JSON: {err}")
    }
}

/// NDJSON read from an object, as a stream.
struct Object {
    rows: Rows,
    bucket: String,
}

impl LineSource for Object {
    fn fill(
        &mut self,
        lua: &Lua,
        data: &mut Vec<u8>,
        spans: &mut Vec<Span>,
        rows: usize,
        bytes: usize,
    ) -> (bool, Option<mlua::Error>) {
        let inv = match invocation(lua) {
            Ok(inv) => inv,
            Err(e) => return (true, Some(e)),
        };
        let mut src = super::batch::JobParts {
            inv: &inv,
            bucket: &self.bucket,
            dir: "",
        };
        super::batch::fill_rows(&mut self.rows, &mut src, lua, data, spans, rows, bytes)
    }

    fn bad_row(&self, line: u64, part: usize, err: String) -> String {
        self.rows.bad_row(line, part, err).to_string()
    }
}

fn rows(lua: &Lua, source: Value) -> mlua::Result<mlua::Function> {
    let max =
        (u64::from(invocation(lua)?.tenant.config.limits.max_object_mb) * 1024 * 1024) as usize;
    match source {
        Value::String(s) => iterator(lua, Text { bytes: s.as_bytes().to_vec(), pos: 0, line: 0, max }),
        Value::UserData(ud) => {
            let s = ud.borrow::<Stream>().map_err(|_| raise(lua, "native.ndjson.rows takes a string or a stream from native.bucket.<Name>.open(key)"))?;
            let part = Part { key: s.key.clone(), bytes: None, sha256: None, data: None };
            let rows = Rows::new(s.label.clone(), vec![part], None);
            iterator(lua, Object { rows, bucket: s.bucket.clone() })
        }
        other => Err(raise(lua, format!("native.ndjson.rows takes a string or a stream from native.bucket.<Name>.open(key), not {}", super::function::a_type(&other)))),
    }
}

/// The `native.ndjson` table.
pub fn module(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "rows",
        super::function(lua, ("native.ndjson.rows", &["source"]), rows)?,
    )?;
    Ok(t)
}
