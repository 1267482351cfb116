//! The log of `native serve`: every record (each request's access record, the scripts' lines,
//! the runtime's) on stderr and in the project's log file, as the other verbs write them, but
//! gathered and written in batches by a thread of its own.
//!
//! Written one record at a time, a served request cost two `write`s (stderr and the file) under two
//! locks the workers queued on: a large share of the server's CPU per no-op invoke (BENCHMARKS.md,
//! Figures behind the code). A request now only formats its lines and appends them to a buffer; the
//! writer thread writes what has gathered every [`FLUSH_EVERY`], or at once when [`HIGH_WATER`]
//! bytes wait, so that a burst of records costs a few large writes and memory stays bounded. A
//! record reaches stderr and the file within [`FLUSH_EVERY`] of being logged; [`ServedLog::flush`]
//! writes what waits at once (the server calls it before it says it stopped). A process killed
//! outright loses at most that much of its log, never any of its work.

use std::borrow::Cow;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use native_core::observe::LogSink;

use crate::logfile::LogFile;
use crate::show::TerminalLog;

/// How long a record may wait before it is written.
pub const FLUSH_EVERY: Duration = Duration::from_millis(10);
/// The bytes waiting past which the writer is woken at once.
pub const HIGH_WATER: usize = 256 * 1024;
/// The bytes waiting past which a record is written by its own thread rather than appended: the
/// writer cannot keep up (a slow disk, stderr piped to a reader that does not read), and the
/// buffer must not grow without bound.
pub const MAX_WAITING: usize = 4 * 1024 * 1024;

/// The sink: see the module docs.
#[derive(Debug, Clone)]
pub struct ServedLog {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    terminal: TerminalLog,
    /// Where the terminal's lines go: stderr ([`crate::out::err_bytes`]).
    err: fn(&[u8]),
    file: LogFile,
    waiting: Mutex<Waiting>,
    wake: Condvar,
    /// Held while a batch is written, so that batches (and [`ServedLog::flush`]) reach the
    /// terminal and the file in the order they were taken.
    writing: Mutex<()>,
}

#[derive(Debug, Default)]
struct Waiting {
    terminal: Vec<u8>,
    file: Vec<u8>,
}

impl Waiting {
    fn len(&self) -> usize {
        self.terminal.len() + self.file.len()
    }
}

impl ServedLog {
    /// A log to `terminal` (stderr) and `file`, with its writer thread started.
    pub fn new(terminal: TerminalLog, file: LogFile) -> Self {
        Self::writing_to(terminal, crate::out::err_bytes, file)
    }

    fn writing_to(terminal: TerminalLog, err: fn(&[u8]), file: LogFile) -> Self {
        let shared = Arc::new(Shared {
            terminal,
            err,
            file,
            waiting: Mutex::default(),
            wake: Condvar::new(),
            writing: Mutex::new(()),
        });
        let weak = Arc::downgrade(&shared);
        // The thread ends with the last handle on the log.
        let _ = std::thread::Builder::new()
            .name("native-log".into())
            .spawn(move || {
                while let Some(s) = weak.upgrade() {
                    {
                        let w = s.waiting.lock().unwrap_or_else(|p| p.into_inner());
                        let _ = s
                            .wake
                            .wait_timeout_while(w, FLUSH_EVERY, |w| w.len() < HIGH_WATER)
                            .unwrap_or_else(|p| p.into_inner());
                    }
                    s.write_waiting();
                }
            });
        ServedLog { shared }
    }

    /// Writes every record logged so far, now.
    pub fn flush(&self) {
        self.shared.write_waiting();
    }
}

impl Shared {
    fn write_waiting(&self) {
        let _order = self.writing.lock().unwrap_or_else(|p| p.into_inner());
        let batch = std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|p| p.into_inner()));
        if !batch.terminal.is_empty() {
            (self.err)(&batch.terminal);
        }
        if !batch.file.is_empty() {
            // The history is a convenience: a full disk must not fail the work it records.
            let _ = self.file.append(&batch.file);
        }
    }
}

impl LogSink for ServedLog {
    fn write(&self, record: &serde_json::Value) {
        // One serialisation for both lines; straight into a buffer (`Value`'s `Display` goes
        // through a formatter byte by byte: BENCHMARKS.md, Figures behind the code).
        let text = serde_json::to_string(record).unwrap_or_default();
        let terminal = self
            .shared
            .terminal
            .line_of(|| Cow::Borrowed(record), || Cow::Borrowed(&text));
        let file = LogFile::line_of(text, || record.clone());
        self.append(terminal, file);
    }

    fn write_json(&self, text: String, record: &dyn Fn() -> serde_json::Value) {
        let terminal = self
            .shared
            .terminal
            .line_of(|| Cow::Owned(record()), || Cow::Borrowed(&text));
        let file = LogFile::line_of(text, record);
        self.append(terminal, file);
    }
}

impl ServedLog {
    /// Appends a record's two lines to what waits for the writer thread.
    fn append(&self, terminal: String, file: String) {
        let mut w = self
            .shared
            .waiting
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        w.terminal.extend_from_slice(terminal.as_bytes());
        w.file.extend_from_slice(file.as_bytes());
        let waiting = w.len();
        drop(w);
        if waiting >= MAX_WAITING {
            self.shared.write_waiting();
        } else if waiting >= HIGH_WATER {
            self.shared.wake.notify_one();
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.write_waiting();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(dir: &std::path::Path) -> (ServedLog, std::path::PathBuf) {
        let path = dir.join("native.log");
        let file = LogFile::with_max(path.clone(), crate::logfile::MAX_BYTES);
        (
            ServedLog::writing_to(TerminalLog::json(), |_| {}, file),
            path,
        )
    }

    #[test]
    fn a_record_given_as_text_is_written_as_its_value_would_be() {
        // GIVEN the served log, and a record in both forms: a plain one, and one too long for
        // the file (which cuts it from the record's fields)
        let dir = tempfile::tempdir().unwrap();
        let (log, path) = log(dir.path());
        for record in [
            serde_json::json!({ "ts_ms": 1, "level": "info", "msg": "request", "status": 200 }),
            serde_json::json!({ "ts_ms": 2, "level": "warn", "msg": "x".repeat(100_000) }),
        ] {
            // WHEN it is written as a value, then as its text
            log.write(&record);
            log.write_json(serde_json::to_string(&record).unwrap(), &|| record.clone());
        }
        log.flush();
        // THEN each pair of lines is the same, and the long one was cut alike
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[0], lines[1]);
        assert_eq!(lines[2], lines[3]);
        assert!(lines[2].contains("\"cut\""), "{}", lines[2]);
        // AND the terminal's readable form reads the fields in both ways
        let readable = TerminalLog::text();
        let record = serde_json::json!({ "ts_ms": 1, "level": "info", "msg": "request" });
        assert_eq!(
            readable.line_of(|| Cow::Owned(record.clone()), || Cow::Borrowed("{}")),
            readable.line(&record)
        );
    }

    #[test]
    fn records_reach_the_file_within_the_flush_interval_in_order() {
        // GIVEN the served log
        let dir = tempfile::tempdir().unwrap();
        let (log, path) = log(dir.path());
        // WHEN records are logged from two threads
        let threads: Vec<_> = (0..2)
            .map(|t| {
                let log = log.clone();
                std::thread::spawn(move || {
                    for i in 0..500 {
                        log.write(&serde_json::json!({ "msg": "request", "t": t, "i": i }));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // THEN without a flush they are in the file shortly after, each thread's in its order
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        let lines = loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            if text.lines().count() == 1000 || std::time::Instant::now() > deadline {
                break text;
            }
            std::thread::sleep(FLUSH_EVERY);
        };
        let recs: Vec<serde_json::Value> = lines
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(recs.len(), 1000);
        for t in 0..2 {
            let is: Vec<_> = recs
                .iter()
                .filter(|r| r["t"] == t)
                .map(|r| r["i"].clone())
                .collect();
            assert_eq!(
                is,
                (0..500).map(|i| serde_json::json!(i)).collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_flush_writes_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let (log, path) = log(dir.path());
        log.write(&serde_json::json!({ "msg": "first" }));
        log.flush();
        assert!(std::fs::read_to_string(&path).unwrap().contains("first"));
    }

    #[test]
    fn a_flood_of_records_is_written_by_the_threads_that_log_once_too_much_waits() {
        // GIVEN the served log
        let dir = tempfile::tempdir().unwrap();
        let (log, path) = log(dir.path());
        let big = "x".repeat(64 * 1024);
        // WHEN more than MAX_WAITING is logged THEN what waits never passes it by much
        for i in 0..200 {
            log.write(&serde_json::json!({ "msg": "big", "i": i, "pad": big }));
            let waiting = log.shared.waiting.lock().unwrap().len();
            assert!(waiting < MAX_WAITING + 2 * big.len() + 1024, "{waiting}");
        }
        log.flush();
        let text = std::fs::read_to_string(&path).unwrap();
        assert_eq!(text.lines().count(), 200);
    }
}
