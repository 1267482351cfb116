//! What a run does, as parts of its span (issue 55): every call it makes out of the process (a
//! backend's, through the ports [`super::traced`] wraps; an HTTP request) is a child span, and
//! every log line it writes is an event of its span.
//!
//! A run being exported is recorded on its script's thread ([`recording`]); everything else
//! (a run not exported, work outside runs) finds no recorder there and records nothing. Where
//! no collector is set the runtime neither wraps the ports nor starts a recorder: nothing here
//! is reached ([`recorders_started`] counts what is).
//!
//! Bounded per run: at most [`MAX_CALL_SPANS`] child spans (the rest are counted on the run's
//! span, `native.calls_dropped`, and as the exporter's drops) and at most [`MAX_EVENTS`] events
//! of at most [`MAX_EVENT_BYTES`] each (the rest counted in the span's dropped events), the caps
//! the console keeps a run's log lines within ([`super::recent`]).

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use super::otlp::{now_ns, Attr, Event, Exporter, Kind, SpanData};

/// Child spans a run may have at most; its further calls are counted, not recorded.
pub const MAX_CALL_SPANS: u32 = 256;
/// Events a run's span may have at most: the log lines the console keeps of a run.
pub const MAX_EVENTS: usize = super::recent::MAX_LINES;
/// The longest event, in bytes of text (its name and values together).
pub const MAX_EVENT_BYTES: usize = super::recent::MAX_LINE_BYTES;

/// The run being recorded on a thread.
#[derive(Debug)]
pub struct Recorder {
    exporter: Arc<Exporter>,
    chain: String,
    span: u64,
    calls: AtomicU32,
    dropped: AtomicU32,
    events: Mutex<Vec<Event>>,
    events_dropped: AtomicU32,
}

/// What a recorded run leaves for its own span.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Its log lines, the first [`MAX_EVENTS`].
    pub events: Vec<Event>,
    /// How many more lines there were.
    pub events_dropped: u32,
    /// Calls made past [`MAX_CALL_SPANS`], whose spans were not made.
    pub calls_dropped: u32,
}

thread_local! {
    static RUN: RefCell<Option<Arc<Recorder>>> = const { RefCell::new(None) };
}

/// Recorders started in this process: stays 0 where nothing is exported.
static STARTED: AtomicU64 = AtomicU64::new(0);

/// Recorders started in this process so far (none where no collector is set).
pub fn recorders_started() -> u64 {
    STARTED.load(Ordering::Relaxed)
}

impl Recorder {
    /// The recorder of the run whose span is `span` of `chain`, exported to `exporter`.
    pub fn new(exporter: Arc<Exporter>, chain: String, span: u64) -> Self {
        STARTED.fetch_add(1, Ordering::Relaxed);
        Recorder {
            exporter,
            chain,
            span,
            calls: AtomicU32::new(0),
            dropped: AtomicU32::new(0),
            events: Mutex::new(Vec::new()),
            events_dropped: AtomicU32::new(0),
        }
    }
}

/// Runs `f` on this thread with the run `recorder` records (none: `f` alone), and gives what
/// it recorded for the run's span. The run's calls past the cap count as the exporter's drops.
pub fn recording<R>(recorder: Option<Recorder>, f: impl FnOnce() -> R) -> (R, Recorded) {
    let Some(recorder) = recorder else {
        return (f(), Recorded::default());
    };
    let rec = Arc::new(recorder);
    let before = RUN.with(|r| r.replace(Some(rec.clone())));
    struct Restore(Option<Option<Arc<Recorder>>>);
    impl Drop for Restore {
        fn drop(&mut self) {
            let before = self.0.take().flatten();
            RUN.with(|r| *r.borrow_mut() = before);
        }
    }
    let restore = Restore(Some(before));
    let out = f();
    drop(restore);
    let calls_dropped = rec.dropped.load(Ordering::Relaxed);
    if calls_dropped > 0 {
        rec.exporter.count_dropped(calls_dropped.into());
    }
    let events = std::mem::take(&mut *rec.events.lock().unwrap_or_else(|p| p.into_inner()));
    let recorded = Recorded {
        events,
        events_dropped: rec.events_dropped.load(Ordering::Relaxed),
        calls_dropped,
    };
    (out, recorded)
}

/// A call being made by a recorded run, from [`start`] to [`Started::end`].
#[derive(Debug)]
pub struct Started {
    rec: Arc<Recorder>,
    start_ns: u64,
}

/// How a call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// It did what was asked.
    Ok,
    /// What it read was not there.
    Absent,
    /// Its condition failed (the item or object changed, or was already there).
    Conflict,
    /// It failed.
    Error,
}

impl Outcome {
    fn name(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::Absent => "absent",
            Outcome::Conflict => "conflict",
            Outcome::Error => "error",
        }
    }

    /// The outcome of a backend's error.
    pub fn of_error(e: &crate::Error) -> Outcome {
        match e {
            crate::Error::AlreadyExists { .. } | crate::Error::Precondition { .. } => {
                Outcome::Conflict
            }
            _ => Outcome::Error,
        }
    }
}

/// A call starting now, when a run on this thread is recorded and has spans left; `None`
/// (nothing to do) otherwise.
pub fn start() -> Option<Started> {
    let rec = RUN.with(|r| r.borrow().clone())?;
    if rec.calls.fetch_add(1, Ordering::Relaxed) >= MAX_CALL_SPANS {
        rec.dropped.fetch_add(1, Ordering::Relaxed);
        return None;
    }
    Some(Started {
        rec,
        start_ns: now_ns(),
    })
}

/// What a call was: its kind (`bucket`, `db`, `barrier`, `queue`, `vault`, `http`...), its
/// operation and its target (a bucket and key prefix, a table, a queue, a host), names only.
#[derive(Debug)]
pub struct Call {
    /// `bucket`, `db`, `barrier`, `timer`, `rendezvous`, `queue`, `vault`, `http`...
    pub kind: &'static str,
    /// What it did (`get`, `put`, `transact`, `send`, `POST`...).
    pub operation: std::borrow::Cow<'static, str>,
    /// What it did it to: names, never values.
    pub target: String,
    /// How it ended.
    pub outcome: Outcome,
    /// Bytes sent and received, where known.
    pub bytes: Option<u64>,
    /// Why it failed, if it did.
    pub error: Option<String>,
}

impl Started {
    /// Ends the call: its span, a child of the run's, goes to the exporter.
    pub fn end(self, call: Call) {
        let mut attributes = vec![
            ("native.call.kind", Attr::Str(call.kind.into())),
            (
                "native.call.operation",
                Attr::Str(call.operation.to_string()),
            ),
            (
                "native.call.target",
                Attr::Str(crate::text::cut_text(call.target, 256)),
            ),
            ("native.call.outcome", Attr::Str(call.outcome.name().into())),
        ];
        if let Some(b) = call.bytes {
            attributes.push(("native.call.bytes", Attr::Int(b as i64)));
        }
        self.rec.exporter.record(SpanData {
            chain: self.rec.chain.clone(),
            span: super::w3c::new_span(),
            parent: Some(self.rec.span),
            name: format!("{} {}", call.kind, call.operation),
            kind: Kind::Client,
            start_ns: self.start_ns,
            end_ns: now_ns(),
            attributes,
            error: call.error.map(|e| crate::text::cut_text(e, 1024)),
            links: Vec::new(),
            events: Vec::new(),
            dropped_events: 0,
        });
    }
}

/// Fields of a log line that its span already says (the run's names, the time).
const SAID: [&str; 6] = ["ts_ms", "msg", "tenant", "script", "request_id", "trace"];

/// Keeps the log line `record` as an event of the run recorded on this thread, if one is
/// (a no-op otherwise): its `msg` the event's name, its other fields its attributes, within
/// [`MAX_EVENTS`] and [`MAX_EVENT_BYTES`] (and the note of a cut).
pub fn event(record: &Value) {
    let Some(rec) = RUN.with(|r| r.borrow().clone()) else {
        return;
    };
    let mut events = rec.events.lock().unwrap_or_else(|p| p.into_inner());
    if events.len() >= MAX_EVENTS {
        rec.events_dropped.fetch_add(1, Ordering::Relaxed);
        return;
    }
    // What is left of the event's bytes; a cut text says so past it.
    let left = std::cell::Cell::new(MAX_EVENT_BYTES);
    let text = |s: String| {
        let s = crate::text::cut_text(s, left.get());
        left.set(left.get().saturating_sub(s.len()));
        s
    };
    let name = text(
        record
            .get("msg")
            .and_then(Value::as_str)
            .unwrap_or("log")
            .to_string(),
    );
    let mut attributes = Vec::new();
    if let Value::Object(fields) = record {
        for (k, v) in fields.iter().filter(|(k, _)| !SAID.contains(&k.as_str())) {
            if left.get() == 0 {
                break;
            }
            let key = text(k.clone());
            let value = match v {
                Value::Bool(b) => Attr::Bool(*b),
                Value::Number(n) => match n.as_i64() {
                    Some(i) => Attr::Int(i),
                    None => Attr::Double(n.as_f64().unwrap_or_default()),
                },
                Value::String(s) => Attr::Str(text(s.clone())),
                other => Attr::Str(text(other.to_string())),
            };
            attributes.push((key, value));
        }
    }
    events.push(Event {
        at_ns: record
            .get("ts_ms")
            .and_then(Value::as_u64)
            .map_or_else(now_ns, |ms| ms.saturating_mul(1_000_000)),
        name,
        attributes,
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_run_keeps_its_caps_and_counts_the_rest() {
        // A collector that is never there: what is recorded is counted, never waited for.
        let e = Exporter::start("http://127.0.0.1:9/v1/traces", "t").unwrap();
        let before = recorders_started();
        assert!(start().is_none(), "no run is recorded on this thread");
        event(&json!({ "msg": "outside" }));
        let rec = Recorder::new(e.clone(), super::super::new_trace(), 7);
        let ((), got) = recording(Some(rec), || {
            for i in 0..10_000 {
                if let Some(s) = start() {
                    s.end(Call {
                        kind: "db",
                        operation: "get".into(),
                        target: "orders".into(),
                        outcome: Outcome::Ok,
                        bytes: Some(i),
                        error: None,
                    });
                }
            }
            for i in 0..MAX_EVENTS + 5 {
                event(
                    &json!({ "msg": "line", "level": "info", "i": i, "big": "x".repeat(5000), "ts_ms": 1 }),
                );
            }
        });
        assert!(recorders_started() > before);
        assert_eq!(got.calls_dropped, 10_000 - MAX_CALL_SPANS);
        assert_eq!(got.events.len(), MAX_EVENTS);
        assert_eq!(got.events_dropped, 5);
        let first = &got.events[0];
        assert_eq!(first.name, "line");
        assert_eq!(first.at_ns, 1_000_000);
        let bytes: usize = first.name.len()
            + first
                .attributes
                .iter()
                .map(|(k, v)| {
                    k.len()
                        + match v {
                            Attr::Str(s) => s.len(),
                            _ => 0,
                        }
                })
                .sum::<usize>();
        assert!(
            bytes <= MAX_EVENT_BYTES + 80,
            "within the cap and two notes of a cut: {bytes}"
        );
        assert!(first
            .attributes
            .iter()
            .any(|(k, v)| k == "level" && *v == Attr::Str("info".into())));
        // AND the recorder is gone from the thread with the run
        assert!(start().is_none());
        assert!(e.flush(std::time::Duration::from_secs(30)));
        assert_eq!(
            e.dropped(),
            u64::from(MAX_CALL_SPANS) + u64::from(got.calls_dropped),
            "spans the absent collector did not take, and those never made"
        );
    }
}
