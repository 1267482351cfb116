//! The project's log history: every record a verb's runtime writes (scripts' log lines, the
//! runtime's own, `native serve`'s access log) is also appended, as one JSON line, to
//! `.native/logs/native.log`, which `native logs` reads, filters (`--trace`) and follows.
//!
//! Bounded: when the file passes [`MAX_BYTES`] it becomes `native.log.1` (the previous `.1` goes)
//! and a new file starts, so the history holds at most twice that. Several processes of one
//! project (a `native serve` and the verbs run beside it) append to the same file: each record
//! is one `write` on a file opened for appending, so lines do not interleave; a rotation that
//! two processes start at once loses at most the older half.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use native_core::observe::LogSink;

/// The size past which the log file is rotated.
pub const MAX_BYTES: u64 = 8 * 1024 * 1024;

/// The longest record kept, in bytes: a longer one is cut to its first fields' worth and
/// marked, so that one record cannot take the whole history.
const MAX_RECORD_BYTES: usize = 64 * 1024;

/// The log file of the project whose state folder is `dir` (`.native/`).
pub fn path(dir: &Path) -> PathBuf {
    dir.join("logs").join("native.log")
}

/// The rotated file beside `path`.
pub fn rotated(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".1");
    PathBuf::from(p)
}

/// How often a writer looks whether another process rotated the file (one `stat` of the path)
/// and how long the file has grown through the others' appends (one `fstat`). Between looks a
/// record costs one `write`: `native serve` logs every request, and three `stat`s a record were
/// most of the cost of logging one. A record appended in the meantime to a file another process
/// has just rotated lands in the rotated file, which `native logs` reads too.
const LOOK_EVERY: std::time::Duration = std::time::Duration::from_millis(250);

/// A sink appending each record to the project's log file, rotating it at `max_bytes`.
#[derive(Debug)]
pub struct LogFile {
    path: PathBuf,
    max_bytes: u64,
    file: Mutex<Option<Open>>,
}

/// The file being appended to: its length as last known (read when looked at, then counted as
/// this process appends), and when it was last looked at.
#[derive(Debug)]
struct Open {
    file: File,
    len: u64,
    looked: std::time::Instant,
}

impl LogFile {
    /// The log file of the project whose state folder is `dir`, opened at the first record.
    pub fn new(dir: &Path) -> Self {
        Self::with_max(path(dir), MAX_BYTES)
    }

    /// A log file at `path` rotated at `max_bytes` (tests use a small one).
    pub fn with_max(path: PathBuf, max_bytes: u64) -> Self {
        LogFile {
            path,
            max_bytes,
            file: Mutex::new(None),
        }
    }

    fn open(&self) -> std::io::Result<Open> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let len = file.metadata()?.len();
        Ok(Open {
            file,
            len,
            looked: std::time::Instant::now(),
        })
    }

    /// Appends `lines` (whole lines) to the file, rotating it once past its size.
    pub(crate) fn append(&self, lines: &[u8]) -> std::io::Result<()> {
        let mut slot = self.file.lock().unwrap_or_else(|p| p.into_inner());
        // Another process may have rotated the file (write to the one at the path) or appended
        // to it (count its records towards the size).
        let open = match slot.take() {
            Some(o) if o.looked.elapsed() < LOOK_EVERY => o,
            Some(mut o) => match std::fs::metadata(&self.path) {
                Ok(at_path) if same_file(&o.file, &at_path) => {
                    o.len = at_path.len();
                    o.looked = std::time::Instant::now();
                    o
                }
                _ => self.open()?,
            },
            None => self.open()?,
        };
        let o = slot.insert(open);
        o.file.write_all(lines)?;
        o.len += lines.len() as u64;
        if o.len > self.max_bytes {
            *slot = None;
            std::fs::rename(&self.path, rotated(&self.path))?;
            *slot = Some(self.open()?);
        }
        Ok(())
    }
}

#[cfg(unix)]
fn same_file(f: &File, at_path: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    f.metadata()
        .map(|m| m.ino() == at_path.ino() && m.dev() == at_path.dev())
        .unwrap_or(false)
}

#[cfg(not(unix))]
fn same_file(_: &File, _: &std::fs::Metadata) -> bool {
    true
}

impl LogFile {
    /// The record as this file keeps it, newline included: cut when over [`MAX_RECORD_BYTES`].
    pub fn line(record: &serde_json::Value) -> String {
        Self::line_of(record.to_string(), || record.clone())
    }

    /// [`Self::line`] of a record already written as JSON `text`.
    pub fn line_of(text: String, record: impl FnOnce() -> serde_json::Value) -> String {
        let mut line = text;
        if line.len() > MAX_RECORD_BYTES {
            let record = &record();
            let mut cut = serde_json::json!({
                "ts_ms": record.get("ts_ms"), "level": record.get("level"),
                "tenant": record.get("tenant"), "script": record.get("script"),
                "trace": record.get("trace"),
                // An access log record's request, whatever else is cut.
                "method": record.get("method").and_then(|m| m.as_str()).map(native_core::text::echo),
                "path": record.get("path").and_then(|m| m.as_str()).map(native_core::text::echo),
                "status": record.get("status"),
                "msg": native_core::text::cut_text(
                    record.get("msg").and_then(|m| m.as_str()).unwrap_or("").to_string(),
                    4096,
                ),
            });
            cut["cut"] = serde_json::json!(format!(
                "the record was {} bytes; the log file keeps {MAX_RECORD_BYTES}",
                line.len()
            ));
            line = cut.to_string();
        }
        line.push('\n');
        line
    }
}

impl LogSink for LogFile {
    fn write(&self, record: &serde_json::Value) {
        // The history is a convenience: a full disk must not fail the work it records.
        let _ = self.append(Self::line(record).as_bytes());
    }
}

/// Writes each record to both sinks: the terminal and the log file.
#[derive(Debug)]
pub struct Both<A, B>(pub A, pub B);

impl<A: LogSink, B: LogSink> LogSink for Both<A, B> {
    fn write(&self, record: &serde_json::Value) {
        self.0.write(record);
        self.1.write(record);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_rotates_past_its_size_and_keeps_two_generations() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("logs").join("native.log");
        let log = LogFile::with_max(p.clone(), 1000);
        for i in 0..100 {
            log.write(&serde_json::json!({ "msg": format!("record {i}"), "pad": "x".repeat(50) }));
        }
        let now = std::fs::metadata(&p).unwrap().len();
        let old = std::fs::metadata(rotated(&p)).unwrap().len();
        assert!(now <= 1000 + 100, "the live file stays near its cap: {now}");
        assert!(old <= 1000 + 100, "so does the rotated one: {old}");
        let last = std::fs::read_to_string(&p).unwrap();
        assert!(last.contains("record 99"), "the newest record is kept");
        assert!(!std::path::Path::new(&format!("{}.2", p.display())).exists());
    }

    #[test]
    fn a_huge_record_is_cut_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("native.log");
        let log = LogFile::with_max(p.clone(), MAX_BYTES);
        log.write(&serde_json::json!({ "msg": "big", "trace": "t1", "blob": "y".repeat(200_000) }));
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.len() < 10_000, "{} bytes", text.len());
        let rec: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(rec["trace"], "t1");
        assert!(rec["cut"].as_str().unwrap().contains("bytes"));
    }

    #[test]
    fn a_cut_request_record_keeps_its_method_path_and_status() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("native.log");
        let log = LogFile::with_max(p.clone(), MAX_BYTES);
        let path = format!("/{}", "p".repeat(70_000));
        log.write(&serde_json::json!({ "msg": "request", "method": "POST", "path": path, "status": 404, "error": "e".repeat(70_000) }));
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(text.len() < 10_000, "{} bytes", text.len());
        let rec: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(
            (&rec["method"], &rec["status"]),
            (&"POST".into(), &404.into())
        );
        assert!(rec["path"].as_str().unwrap().starts_with("/ppp"), "{rec}");
    }
}
