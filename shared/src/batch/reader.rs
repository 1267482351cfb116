//! Reading NDJSON parts as verified streams: gzip detected from the data, sha256 and size of the
//! stored bytes checked when a part is read to its end, rows counted against the manifest, and
//! every byte counted against the stream budget. Nothing holds a whole part in memory.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};

use sha2::{Digest, Sha256};

use super::manifest::Part;
use crate::ports::ObjectReader;
use crate::{Error, Result};

/// Where a row sits in the output buffer: start, end, line number, index of its part.
pub type Span = (usize, usize, u64, usize);

/// What a reader needs from its invocation: opening parts, and the limits.
pub trait PartSource {
    /// Opens a part (the key relative to the job folder) as a blocking reader with its size;
    /// counts one data op. `None` when it is missing.
    fn open(&mut self, key: &str) -> Result<Option<Opened>>;
    /// Counts decompressed bytes read against `max_stream_mb` and checks the deadline.
    fn consumed(&mut self, bytes: u64) -> Result<()>;
    /// The longest row allowed, in bytes.
    fn max_row(&self) -> usize;
}

/// A part opened by a [`PartSource`].
pub struct Opened {
    /// Its size in bytes, as stored.
    pub size: u64,
    /// Its stored bytes.
    pub reader: Box<dyn Read + Send>,
    /// The SHA-256 that the reader itself checks ([`ObjectReader::verified_sha256`]).
    pub verified_sha256: Option<String>,
}

/// Opens `part`: from the manifest when its data is inline (no backend call, nothing charged),
/// else through `src`. None when its object is missing.
pub fn open_part(src: &mut dyn PartSource, part: &Part) -> Result<Option<Opened>> {
    match &part.data {
        Some(text) => Ok(Some(Opened {
            size: text.len() as u64,
            reader: Box::new(std::io::Cursor::new(text.clone().into_bytes())),
            verified_sha256: None,
        })),
        None => src.open(&part.key),
    }
}

/// Whether a part opened with `verified_sha256` needs no hash of its own against the manifest's
/// `sha256`: the store checks that very digest (any case) as the read ends, so reading to the
/// end without an error is the check.
pub fn store_checks(sha256: Option<&str>, verified_sha256: Option<&str>) -> bool {
    matches!((sha256, verified_sha256), (Some(want), Some(got)) if want.eq_ignore_ascii_case(got))
}

/// Adapts an async [`ObjectReader`] to [`Read`] by blocking on each chunk.
pub struct Blocking {
    inner: Box<dyn ObjectReader>,
    handle: tokio::runtime::Handle,
    chunk: bytes::Bytes,
    deadline: std::time::Instant,
}

impl Blocking {
    /// A blocking reader; each chunk is awaited on `handle`, until `deadline`.
    pub fn new(
        inner: Box<dyn ObjectReader>,
        handle: tokio::runtime::Handle,
        deadline: std::time::Instant,
    ) -> Self {
        Blocking {
            inner,
            handle,
            chunk: bytes::Bytes::new(),
            deadline,
        }
    }
}

impl Read for Blocking {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            let left = self
                .deadline
                .saturating_duration_since(std::time::Instant::now());
            let next = crate::blocking::wait(
                &self.handle,
                tokio::time::timeout(left, self.inner.next_chunk()),
            );
            match next {
                Err(_) => {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "the invocation's deadline passed while reading",
                    ))
                }
                Ok(Err(e)) => return Err(std::io::Error::other(e)),
                Ok(Ok(None)) => return Ok(0),
                Ok(Ok(Some(c))) => self.chunk = c,
            }
        }
        let n = buf.len().min(self.chunk.len());
        buf[..n].copy_from_slice(&self.chunk[..n]);
        bytes::Buf::advance(&mut self.chunk, n);
        Ok(n)
    }
}

/// Counts and hashes the stored bytes as they pass (`sha` is `None` where the store checks
/// the digest the manifest gives: the bytes are hashed once, not twice).
struct Hashing<R> {
    inner: R,
    sha: Option<Sha256>,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if let Some(sha) = &mut self.sha {
            sha.update(&buf[..n]);
        }
        self.bytes += n as u64;
        Ok(n)
    }
}

type Raw = BufReader<Hashing<Box<dyn Read + Send>>>;

enum Body {
    Plain(Raw),
    // Boxed: zlib-rs keeps its inflate state inline, which would size every `Body` by it.
    Gzip(Box<BufReader<flate2::bufread::MultiGzDecoder<Raw>>>),
}

impl Body {
    fn buf(&mut self) -> &mut dyn BufRead {
        match self {
            Body::Plain(r) => r,
            Body::Gzip(r) => r,
        }
    }

    fn raw(&mut self) -> &mut Raw {
        match self {
            Body::Plain(r) => r,
            Body::Gzip(r) => r.get_mut().get_mut(),
        }
    }
}

struct Current {
    part: Part,
    body: Body,
    line: u64,
}

/// The rows of one dataset (a result or an input): its parts in order, verified.
pub struct Rows {
    what: String,
    /// Every part's key, in order, for errors about rows already handed out.
    keys: Vec<String>,
    parts: VecDeque<Part>,
    expected_rows: Option<u64>,
    rows: u64,
    current: Option<Current>,
    done: bool,
}

fn bad(what: &str, part: &Part, why: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("{what}, part {:?}: {why}", part.key))
}

impl Rows {
    /// Rows of `parts`; `what` names the dataset in errors (`result "customers"`).
    pub fn new(what: impl Into<String>, parts: Vec<Part>, expected_rows: Option<u64>) -> Self {
        Rows {
            what: what.into(),
            keys: parts.iter().map(|p| p.key.clone()).collect(),
            parts: parts.into(),
            expected_rows,
            rows: 0,
            current: None,
            done: false,
        }
    }

    fn open_next(&mut self, src: &mut dyn PartSource) -> Result<bool> {
        let Some(part) = self.parts.pop_front() else {
            return Ok(false);
        };
        let Some(Opened {
            size,
            reader,
            verified_sha256,
        }) = open_part(src, &part)?
        else {
            return Err(bad(
                &self.what,
                &part,
                "the part is missing (done.json must be written after every part)",
            ));
        };
        if let Some(b) = part.bytes {
            if b != size {
                return Err(bad(
                    &self.what,
                    &part,
                    format!("the object is {size} bytes, the manifest says {b}"),
                ));
            }
        }
        let checked = store_checks(part.sha256.as_deref(), verified_sha256.as_deref());
        let mut raw = BufReader::with_capacity(
            256 * 1024,
            Hashing {
                inner: reader,
                sha: (!checked).then(Sha256::new),
                bytes: 0,
            },
        );
        let head = raw.fill_buf().map_err(|e| bad(&self.what, &part, e))?;
        let body = if head.starts_with(&[0x1f, 0x8b]) {
            Body::Gzip(Box::new(BufReader::with_capacity(
                256 * 1024,
                flate2::bufread::MultiGzDecoder::new(raw),
            )))
        } else {
            Body::Plain(raw)
        };
        self.current = Some(Current {
            part,
            body,
            line: 0,
        });
        Ok(true)
    }

    /// Finishes the current part: reads the stored bytes to their end and checks size and hash.
    fn finish_part(&mut self, mut cur: Current) -> Result<()> {
        let raw = cur.body.raw();
        std::io::copy(raw, &mut std::io::sink()).map_err(|e| bad(&self.what, &cur.part, e))?;
        let h = raw.get_ref();
        if let Some(b) = cur.part.bytes {
            if b != h.bytes {
                return Err(bad(
                    &self.what,
                    &cur.part,
                    format!("read {} bytes, the manifest says {b}", h.bytes),
                ));
            }
        }
        if let (Some(want), Some(sha)) = (&cur.part.sha256, &h.sha) {
            let got = hex::encode(sha.clone().finalize());
            if !got.eq_ignore_ascii_case(want) {
                return Err(bad(
                    &self.what,
                    &cur.part,
                    format!("sha256 is {got}, the manifest says {want}"),
                ));
            }
        }
        Ok(())
    }

    /// Appends the next row (one JSON value, blank lines skipped, trimmed) to `out`; returns
    /// where it is in `out`, its line number and the index of its part, or `None` at the end,
    /// when every part has been verified and the row count checked.
    pub fn next_line_into(
        &mut self,
        src: &mut dyn PartSource,
        out: &mut Vec<u8>,
    ) -> Result<Option<Span>> {
        if self.done {
            return Ok(None);
        }
        let max = src.max_row();
        let base = out.len();
        loop {
            if self.current.is_none() && !self.open_next(src)? {
                self.done = true;
                if let Some(want) = self.expected_rows {
                    if want != self.rows {
                        return Err(Error::InvalidInput(format!(
                            "{}: read {} rows, the manifest says {want}",
                            self.what, self.rows
                        )));
                    }
                }
                return Ok(None);
            }
            let cur = self.current.as_mut().expect("opened above");
            out.truncate(base);
            let ended = read_line(cur.body.buf(), out, base, max, src)
                .map_err(|e| bad(&self.what, &cur.part, e))?;
            cur.line += 1;
            let line = &out[base..];
            if line.len() > max {
                let n = cur.line;
                out.truncate(base);
                return Err(bad(
                    &self.what,
                    &cur.part,
                    format!(
                        "limit max_object_mb exceeded: line {n} is longer than {max} bytes \
                         (limits.max_object_mb)"
                    ),
                ));
            }
            if ended && line.is_empty() {
                let cur = self.current.take().expect("current part");
                self.finish_part(cur)?;
                continue;
            }
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            self.rows += 1;
            let start = base + (line.len() - line.trim_ascii_start().len());
            let end = start + trimmed.len();
            return Ok(Some((start, end, cur.line, self.part_no())));
        }
    }

    /// Appends rows to `out` and their spans to `spans` until `spans` holds `rows` or `out`
    /// holds `bytes`, as [`Self::next_line_into`] does one at a time (the same checks, errors
    /// and counting), but takes the lines that lie whole in the reader's buffer in one pass
    /// rather than going back to the reader for each. Returns whether the rows have ended.
    pub fn next_lines_into(
        &mut self,
        src: &mut dyn PartSource,
        out: &mut Vec<u8>,
        spans: &mut Vec<Span>,
        rows: usize,
        bytes: usize,
    ) -> Result<bool> {
        while spans.len() < rows && out.len() < bytes {
            if self.take_buffered(src, out, spans, (rows, bytes))? {
                continue;
            }
            // A line across the buffer's end, one too long, or the end of a part.
            match self.next_line_into(src, out)? {
                Some(span) => spans.push(span),
                None => return Ok(true),
            }
        }
        Ok(false)
    }

    /// The whole lines in the current part's buffer, for [`Self::next_lines_into`]; whether
    /// it took any, up to `(rows, bytes)` as there. A line longer than the limit is left for
    /// `next_line_into` to refuse.
    fn take_buffered(
        &mut self,
        src: &mut dyn PartSource,
        out: &mut Vec<u8>,
        spans: &mut Vec<Span>,
        (rows, bytes): (usize, usize),
    ) -> Result<bool> {
        if self.done || self.current.is_none() {
            return Ok(false);
        }
        let part_no = self.part_no();
        let Rows {
            what,
            current: Some(cur),
            rows: count,
            ..
        } = self
        else {
            return Ok(false);
        };
        let max = src.max_row();
        let r = cur.body.buf();
        let buf = r.fill_buf().map_err(|e| bad(what, &cur.part, e))?;
        let base = out.len();
        let (mut taken, mut line_no, mut failed) = (0, cur.line, None);
        for nl in memchr::memchr_iter(b'\n', buf) {
            let line = &buf[taken..nl];
            if spans.len() >= rows || base + taken >= bytes || line.len() > max {
                break;
            }
            let at = base + taken;
            taken = nl + 1;
            // Counted as `next_line_into` counts: the line's bytes are gone even when they
            // break the budget, its number is not.
            if let Err(e) = src.consumed((line.len() + 1) as u64) {
                failed = Some(e);
                break;
            }
            line_no += 1;
            let trimmed = line.trim_ascii();
            if trimmed.is_empty() {
                continue;
            }
            *count += 1;
            let start = at + (line.len() - line.trim_ascii_start().len());
            spans.push((start, start + trimmed.len(), line_no, part_no));
        }
        out.extend_from_slice(&buf[..taken]);
        r.consume(taken);
        cur.line = line_no;
        match failed {
            Some(e) => Err(bad(what, &cur.part, e)),
            None => Ok(taken > 0),
        }
    }

    /// The index of the part being read (the current one).
    fn part_no(&self) -> usize {
        self.keys.len() - self.parts.len() - 1
    }

    /// The error for a row that is not JSON, naming the part and line.
    pub fn bad_row(&self, line: u64, part_no: usize, err: impl std::fmt::Display) -> Error {
        let part = self.keys.get(part_no).map(String::as_str).unwrap_or("?");
        Error::InvalidInput(format!(
            "{}, part {part:?}, line {line}: invalid JSON: {err}",
            self.what
        ))
    }
}

/// Appends one line (without its newline) to `out` after `base`, at most `max + 1` bytes;
/// returns whether the stream ended before any byte of this line.
fn read_line(
    r: &mut dyn BufRead,
    out: &mut Vec<u8>,
    base: usize,
    max: usize,
    src: &mut dyn PartSource,
) -> std::io::Result<bool> {
    loop {
        let buf = r.fill_buf()?;
        if buf.is_empty() {
            return Ok(out.len() == base);
        }
        let (take, found) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let room = (max + 1).saturating_sub(out.len() - base);
        out.extend_from_slice(&buf[..take.min(room)]);
        r.consume(take);
        src.consumed(take as u64).map_err(std::io::Error::other)?;
        if found {
            if out.len() > base && out.last() == Some(&b'\n') {
                out.pop();
            }
            return Ok(false);
        }
        if out.len() - base > max {
            return Ok(false);
        }
    }
}

#[cfg(test)]
mod tests {
    //! `next_lines_into` against `next_line_into`, which reads one line at a time.
    use super::*;

    /// One stored part, with a stream budget.
    struct OnePart {
        stored: Vec<u8>,
        max_row: usize,
        budget: u64,
        consumed: u64,
    }

    impl PartSource for OnePart {
        fn open(&mut self, _key: &str) -> Result<Option<Opened>> {
            Ok(Some(Opened {
                size: self.stored.len() as u64,
                reader: Box::new(std::io::Cursor::new(self.stored.clone())),
                verified_sha256: None,
            }))
        }
        fn consumed(&mut self, bytes: u64) -> Result<()> {
            self.consumed += bytes;
            if self.consumed > self.budget {
                return Err(Error::LimitExceeded {
                    limit: "max_stream_mb",
                    detail: format!("read {} bytes", self.consumed),
                });
            }
            Ok(())
        }
        fn max_row(&self) -> usize {
            self.max_row
        }
    }

    /// A part whose store vouches for a digest, and whose reader fails at its end when told
    /// to (as the embedded store's does for a blob that does not have its digest).
    struct Vouched {
        stored: Vec<u8>,
        digest: String,
        damaged: bool,
    }

    /// Reads `stored`, then fails instead of ending, as a store that found it damaged.
    struct FailsAtEnd(std::io::Cursor<Vec<u8>>);

    impl Read for FailsAtEnd {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(std::io::Error::other(
                    "object b/r.0000 is damaged: does not have the sha256 it is named by",
                )),
                n => Ok(n),
            }
        }
    }

    impl PartSource for Vouched {
        fn open(&mut self, _key: &str) -> Result<Option<Opened>> {
            let cursor = std::io::Cursor::new(self.stored.clone());
            Ok(Some(Opened {
                size: self.stored.len() as u64,
                reader: if self.damaged {
                    Box::new(FailsAtEnd(cursor))
                } else {
                    Box::new(cursor)
                },
                verified_sha256: Some(self.digest.clone()),
            }))
        }
        fn consumed(&mut self, _bytes: u64) -> Result<()> {
            Ok(())
        }
        fn max_row(&self) -> usize {
            1 << 20
        }
    }

    fn all_rows(src: &mut dyn PartSource, sha256: &str, len: usize) -> Result<u64> {
        let part = Part {
            key: "r.0000".into(),
            bytes: Some(len as u64),
            sha256: Some(sha256.into()),
            data: None,
        };
        let mut rows = Rows::new("result \"r\"", vec![part], None);
        let mut out = Vec::new();
        let mut n = 0;
        while rows.next_line_into(src, &mut out)?.is_some() {
            out.clear();
            n += 1;
        }
        Ok(n)
    }

    #[test]
    fn a_digest_the_store_checks_is_not_hashed_again_and_its_failure_fails_the_rows() {
        let stored = b"{\"a\":1}\n{\"a\":2}\n".to_vec();
        let real = hex::encode(Sha256::digest(&stored));
        let other = "ab".repeat(32);
        // GIVEN a store that vouches for the manifest's digest (here a digest the bytes do not
        // have, to tell whether the reader hashed them itself) THEN the rows are read unhashed
        let mut src = Vouched {
            stored: stored.clone(),
            digest: other.clone(),
            damaged: false,
        };
        assert_eq!(
            all_rows(&mut src, &other.to_uppercase(), stored.len()).unwrap(),
            2
        );
        // WHEN the store finds the content damaged at its end THEN the rows fail with its words
        let mut src = Vouched {
            stored: stored.clone(),
            digest: real.clone(),
            damaged: true,
        };
        let e = all_rows(&mut src, &real, stored.len())
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not have the sha256 it is named by"), "{e}");
        // AND where the store vouches for another digest than the manifest's, the reader
        // hashes as before and names the mismatch
        let mut src = Vouched {
            stored: stored.clone(),
            digest: real.clone(),
            damaged: false,
        };
        let e = all_rows(&mut src, &other, stored.len())
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(&format!("sha256 is {real}, the manifest says {other}")),
            "{e}"
        );
    }

    type Got = (Vec<(Vec<u8>, u64)>, Option<String>, u64);

    /// Every row with its line number, the error that ended the reading, and the bytes
    /// counted; `batch` is 0 for one line at a time.
    fn read(stored: &[u8], max_row: usize, budget: u64, batch: usize) -> Got {
        let mut src = OnePart {
            stored: stored.to_vec(),
            max_row,
            budget,
            consumed: 0,
        };
        let part = Part {
            key: "r.0000".into(),
            bytes: Some(stored.len() as u64),
            sha256: None,
            data: None,
        };
        let mut rows = Rows::new("result \"r\"", vec![part], None);
        let (mut got, mut out, mut spans) = (Vec::new(), Vec::new(), Vec::new());
        let err = loop {
            out.clear();
            spans.clear();
            let r = if batch == 0 {
                rows.next_line_into(&mut src, &mut out).map(|s| match s {
                    Some(s) => {
                        spans.push(s);
                        false
                    }
                    None => true,
                })
            } else {
                rows.next_lines_into(&mut src, &mut out, &mut spans, batch, 64 << 10)
            };
            got.extend(spans.iter().map(|&(s, e, l, _)| (out[s..e].to_vec(), l)));
            match r {
                Ok(true) => break None,
                Ok(false) => {}
                Err(e) => break Some(e.to_string()),
            }
        };
        (got, err, src.consumed)
    }

    #[test]
    fn lines_taken_from_the_buffer_are_the_lines_read_one_at_a_time() {
        // GIVEN parts of short, blank, padded, CRLF and overlong lines, some of them across
        // the reader's 256 KB buffer, read with and without a stream budget that breaks
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for case in 0..40u64 {
            let mut stored = Vec::new();
            while stored.len() < 300_000 + (case as usize) * 3_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                match x % 64 {
                    0..=3 => stored.extend_from_slice(b"\n"),
                    4..=7 => stored.extend_from_slice(b"  \t \r\n"),
                    8..=11 => stored.extend_from_slice(b" {\"padded\":1} \r\n"),
                    // Long lines, under the limit.
                    12 => {
                        stored.extend(std::iter::repeat_n(b'x', 2_000 + (x % 6_000) as usize));
                        stored.push(b'\n');
                    }
                    _ => stored.extend_from_slice(format!("{{\"n\":{x}}}\n").as_bytes()),
                }
            }
            // Past the first buffer: a line over the limit, or a last line without a newline.
            match case % 4 {
                1 => stored.extend_from_slice(b"{\"last\":\"no newline\"}"),
                2 => stored.extend(std::iter::repeat_n(b'y', 9_000)),
                _ => {}
            }
            let budget = if case % 3 == 0 {
                200_000 + case * 1_000
            } else {
                u64::MAX
            };
            // WHEN they are read in batches of several sizes and one line at a time
            let want = read(&stored, 8_000, budget, 0);
            for batch in [1, 7, 256] {
                let got = read(&stored, 8_000, budget, batch);
                // THEN the rows, their line numbers, the error and the bytes counted agree
                assert_eq!(
                    got.0.len(),
                    want.0.len(),
                    "case {case}, batch {batch}: rows"
                );
                assert!(got.0 == want.0, "case {case}, batch {batch}: rows differ");
                assert_eq!(got.1, want.1, "case {case}, batch {batch}: error");
                assert_eq!(got.2, want.2, "case {case}, batch {batch}: bytes counted");
            }
            // (the reading reaches the part's end, the budget or the long line)
            assert!(want.2 > 200_000, "case {case}: read only {} bytes", want.2);
        }
    }
}
