//! Where log records go: a [`LogSink`] takes one JSON record at a time.

use serde_json::Value;

/// Where script logs go.
pub trait LogSink: Send + Sync + std::fmt::Debug {
    /// Writes one record.
    fn write(&self, record: &Value);

    /// Writes one record that the caller serialised already: `text` is its JSON (one line, as
    /// `serde_json::to_string` writes it) and `record` makes its value where a sink needs the
    /// fields. A sink that writes JSON lines takes the text as it is and never makes the
    /// value (the access log's record, once per request, costs no `Value` then); by default the
    /// value is made and written.
    fn write_json(&self, text: String, record: &dyn Fn() -> Value) {
        let _ = text;
        self.write(&record());
    }
}

/// Writes each record as a JSON line on stderr (CloudWatch on Lambda, the terminal locally).
#[derive(Debug, Default)]
pub struct StderrLog;

impl LogSink for StderrLog {
    fn write(&self, record: &Value) {
        eprintln!("{record}");
    }
}
