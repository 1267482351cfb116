//! Reading NDJSON parts as verified streams: gzip detected from the data, sha256 and size of the
//! stored bytes checked when a part is read to its end, rows counted against the manifest, and
//! every byte counted against the stream budget. Nothing holds a whole part in memory.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read};

use sha2::{Digest, Sha256};

use super::manifest::Part;
use crate::ports::ObjectReader;
use crate::{Error, Result};

/// What a reader needs from its invocation: opening parts, and the limits.
pub trait PartSource {
    /// Opens a part (the key relative to the job folder) as a blocking reader with its size;
    /// counts one data op. `None` when it is missing.
    fn open(&mut self, key: &str) -> Result<Option<(u64, Box<dyn Read + Send>)>>;
    /// Counts decompressed bytes read against `max_stream_mb` and checks the deadline.
    fn consumed(&mut self, bytes: u64) -> Result<()>;
    /// The longest row allowed, in bytes.
    fn max_row(&self) -> usize;
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
            let next = self
                .handle
                .block_on(async { tokio::time::timeout(left, self.inner.next_chunk()).await });
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

/// Counts and hashes the stored bytes as they pass.
struct Hashing<R> {
    inner: R,
    sha: Sha256,
    bytes: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.sha.update(&buf[..n]);
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
        let Some((size, reader)) = src.open(&part.key)? else {
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
        let mut raw = BufReader::with_capacity(
            256 * 1024,
            Hashing {
                inner: reader,
                sha: Sha256::new(),
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
        if let Some(want) = &cur.part.sha256 {
            let got = hex::encode(h.sha.clone().finalize());
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
    ) -> Result<Option<(usize, usize, u64, usize)>> {
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
            let part_no = self.keys.len() - self.parts.len() - 1;
            return Ok(Some((start, end, cur.line, part_no)));
        }
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
