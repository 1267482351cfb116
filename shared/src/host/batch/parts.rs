//! A job's parts in the batch bucket as a reader's source, within the invocation's limits, and
//! a result's rows as a Luau iterator's lines (also used by `native.ndjson`).

use mlua::Lua;

use super::super::{invocation, Invocation};
use super::MB;
use crate::batch::reader::{Blocking, Opened, PartSource, Rows};

/// Opens parts of a job in the batch bucket for a reader, within the invocation's limits.
pub(crate) struct JobParts<'a> {
    pub(crate) inv: &'a Invocation,
    pub(crate) bucket: &'a str,
    pub(crate) dir: &'a str,
}

impl PartSource for JobParts<'_> {
    fn open(&mut self, key: &str) -> crate::Result<Option<Opened>> {
        use crate::budget::Budget;
        self.inv.spend(1)?;
        let full = format!("{}{key}", self.dir);
        let objects = self.inv.services.backends.objects.clone();
        let got = crate::blocking::wait(&self.inv.handle, objects.open(self.bucket, &full))?;
        Ok(got.map(|(meta, r)| Opened {
            size: meta.size,
            verified_sha256: r.verified_sha256().map(str::to_string),
            reader: Box::new(Blocking::new(r, self.inv.handle.clone(), self.inv.deadline)),
        }))
    }

    fn consumed(&mut self, bytes: u64) -> crate::Result<()> {
        self.inv.stream_consumed(bytes)
    }

    fn max_row(&self) -> usize {
        (u64::from(self.inv.tenant.config.limits.max_object_mb) * MB) as usize
    }
}

/// Reads up to `rows` rows (or `bytes`) of `r` into `data`: the batch step of a row iterator.
pub(crate) fn fill_rows(
    r: &mut Rows,
    src: &mut dyn PartSource,
    lua: &Lua,
    data: &mut Vec<u8>,
    spans: &mut Vec<super::super::rows::Span>,
    rows: usize,
    bytes: usize,
) -> (bool, Option<mlua::Error>) {
    match r.next_lines_into(src, data, spans, rows, bytes) {
        Ok(ended) => (ended, None),
        Err(e) => (false, Some(super::super::raise_error(lua, e))),
    }
}

/// The rows of a result, read from the batch bucket.
pub(super) struct JobRows {
    pub(super) rows: Rows,
    pub(super) bucket: String,
    pub(super) dir: String,
}

impl super::super::rows::LineSource for JobRows {
    fn fill(
        &mut self,
        lua: &Lua,
        data: &mut Vec<u8>,
        spans: &mut Vec<super::super::rows::Span>,
        rows: usize,
        bytes: usize,
    ) -> (bool, Option<mlua::Error>) {
        let inv = match invocation(lua) {
            Ok(inv) => inv,
            Err(e) => return (true, Some(e)),
        };
        let mut src = JobParts {
            inv: &inv,
            bucket: &self.bucket,
            dir: &self.dir,
        };
        fill_rows(&mut self.rows, &mut src, lua, data, spans, rows, bytes)
    }

    fn bad_row(&self, line: u64, part: usize, err: String) -> String {
        self.rows.bad_row(line, part, err).to_string()
    }
}
