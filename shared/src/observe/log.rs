//! Where log records go: a [`LogSink`] takes one JSON record at a time.

use serde_json::Value;

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
