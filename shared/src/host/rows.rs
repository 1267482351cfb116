//! Row iterators for scripts (`for row in job:rows("x") do`, `native.ndjson.rows(s)`): rows
//! are read and converted in batches on the Rust side and handed out one by one by a small Luau
//! closure, so that the per-row cost is a table lookup, not a call into Rust.

use mlua::{Function, Lua, Table};

use super::text_to_luau::parse_rows;

/// Rows fetched per call into Rust.
const BATCH_ROWS: usize = 256;
/// Bytes of JSON text fetched per call into Rust, at most (a single longer row still goes).
const BATCH_BYTES: usize = 1 << 20;

/// Where a line sits in the batch buffer (the reader's span).
pub use crate::batch::reader::Span;

/// Where the lines of an iterator come from.
pub trait LineSource: Send + 'static {
    /// Appends up to `rows` lines (JSON values, not blank), or until `data` holds `bytes`, to
    /// `data`, with their spans. Returns whether the source has ended, and an error that
    /// stopped it after the lines it did append.
    fn fill(
        &mut self,
        lua: &Lua,
        data: &mut Vec<u8>,
        spans: &mut Vec<Span>,
        rows: usize,
        bytes: usize,
    ) -> (bool, Option<mlua::Error>);
    /// The error for a line that is not JSON.
    fn bad_row(&self, line: u64, part: usize, err: String) -> String;
}

const WRAP: &str = r#"
local fill = ...
local buf, i, n = {}, 0, 0
return function()
  i += 1
  if i > n then
    table.clear(buf)
    n = fill(buf)
    i = 1
    if n == 0 then return nil end
  end
  return buf[i]
end
"#;

/// An iterator function over the rows of `src`.
pub fn iterator<S: LineSource>(lua: &Lua, mut src: S) -> mlua::Result<Function> {
    let mut data: Vec<u8> = Vec::new();
    let mut spans: Vec<Span> = Vec::new();
    let mut lines: Vec<(usize, usize, u64)> = Vec::new();
    // Errors to raise, in order: a bad row, then whatever stopped the reading after it.
    let mut pending: std::collections::VecDeque<mlua::Error> = Default::default();
    let mut ended = false;
    // Rows read but not yet handed out start at `from` (a bad row in the middle of a batch
    // is raised, and the rows after it still follow if the script catches the error).
    let mut from = 0usize;
    let fill = lua.create_function_mut(move |lua, buf: Table| -> mlua::Result<usize> {
        if let Some(e) = pending.pop_front() {
            return Err(e);
        }
        if from >= spans.len() {
            if ended {
                return Ok(0);
            }
            data.clear();
            spans.clear();
            from = 0;
            let (end, err) = src.fill(lua, &mut data, &mut spans, BATCH_ROWS, BATCH_BYTES);
            ended = end;
            pending.extend(err);
            lines.clear();
            lines.extend(spans.iter().map(|&(s, e, l, _)| (s, e, l)));
        }
        let (n, bad) = parse_rows(lua, &buf, &data, &lines[from..])?;
        if let Some((line, err)) = bad {
            let part = spans[from + n].3;
            // Raised after the rows before it; the rows after it stay for the next call.
            let e = super::raise(lua, src.bad_row(line, part, err));
            from += n + 1;
            if n == 0 {
                return Err(e);
            }
            pending.push_front(e);
            return Ok(n);
        }
        from = spans.len();
        if n == 0 {
            if let Some(e) = pending.pop_front() {
                return Err(e);
            }
        }
        Ok(n)
    })?;
    super::helpers::chunk(lua, WRAP, super::helpers::Debug::Lines)?.call(fill)
}
