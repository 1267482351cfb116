//! OpenTelemetry trace export (OTLP/HTTP, protobuf; issue 55): every script run is a span of
//! its chain's trace (the chain id is the trace id, [`super::w3c`]), a child of the HTTP
//! request it ran in, with its log lines as events; every call it makes out of the process is
//! its child ([`super::calls`]); every request the access log records is a span; every step of
//! a chain ([`super::step`]) is a span linked to the span that made it.
//!
//! Off unless `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` (used as it is) or
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (`/v1/traces` added) names a collector: then no span is made
//! and nothing is spent. On, a span is handed to a bounded queue ([`QUEUE_SPANS`]) without
//! waiting, and one thread of its own sends them in batches (at most [`BATCH_SPANS`], at least
//! every [`FLUSH_EVERY`]) with a [`SEND_TIMEOUT`] per request: a slow or absent collector never
//! slows or fails a run. What cannot be queued or sent is dropped and counted
//! ([`Exporter::dropped`]), and the thread writes a warning line with the count at most once a
//! minute. Plain `http://` endpoints only (a local collector or agent, as beside a Lambda
//! function or a container); an `https://` endpoint is refused at start, saying so.

pub mod proto;

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use prost::Message;

/// The endpoint of the traces signal, used as it is.
pub const TRACES_ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT";
/// The base endpoint of every signal: `/v1/traces` is added.
pub const ENDPOINT_VAR: &str = "OTEL_EXPORTER_OTLP_ENDPOINT";
/// Spans waiting to be sent at most; more are dropped.
pub const QUEUE_SPANS: usize = 4096;
/// Spans a request sends at most.
pub const BATCH_SPANS: usize = 512;
/// How long a span waits for its batch at most.
pub const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// How long one request to the collector may take (connect, send, answer).
pub const SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// What a span is to its trace (OTLP's `SpanKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A step of a chain.
    Internal = 1,
    /// A request served, a direct invocation.
    Server = 2,
    /// A call a run made out of the process (a backend's, an HTTP request).
    Client = 3,
    /// A run of a queued message or an object event.
    Consumer = 5,
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Attr {
    /// Text.
    Str(String),
    /// A whole number.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A number.
    Double(f64),
}

/// One finished span.
#[derive(Debug, Clone, PartialEq)]
pub struct SpanData {
    /// Its chain (the trace).
    pub chain: String,
    /// Its id ([`super::w3c::new_span`]).
    pub span: u64,
    /// The span it is a child of, in the same trace.
    pub parent: Option<u64>,
    /// Its name.
    pub name: String,
    /// Its kind.
    pub kind: Kind,
    /// Start and end, in ns since the epoch.
    pub start_ns: u64,
    /// See `start_ns`.
    pub end_ns: u64,
    /// Its attributes.
    pub attributes: Vec<(&'static str, Attr)>,
    /// Why it failed, if it did.
    pub error: Option<String>,
    /// Spans of other chains it is linked to: (chain, span).
    pub links: Vec<(String, u64)>,
    /// What happened in it (a run's log lines), at most [`super::calls::MAX_EVENTS`].
    pub events: Vec<Event>,
    /// Events left out past that cap.
    pub dropped_events: u32,
}

/// Something that happened at a moment of a span: a log line of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// When, in ns since the epoch.
    pub at_ns: u64,
    /// What (the line's `msg`).
    pub name: String,
    /// Its fields.
    pub attributes: Vec<(String, Attr)>,
}

/// The time now in ns since the epoch, by the project clock.
pub fn now_ns() -> u64 {
    (crate::ports::now_ms().max(0) as u64).saturating_mul(1_000_000)
}

enum Msg {
    Span(Box<SpanData>),
    Flush(Done),
}

/// Whom a flush tells that what was queued before it is sent (or dropped).
enum Done {
    /// A thread that waits.
    Thread(SyncSender<()>),
    /// A task that waits.
    Task(tokio::sync::oneshot::Sender<()>),
}

impl Done {
    fn tell(self) {
        match self {
            Done::Thread(t) => {
                let _ = t.try_send(());
            }
            Done::Task(t) => {
                let _ = t.send(());
            }
        }
    }
}

/// The exporter of one process: a bounded queue and the thread that empties it.
#[derive(Debug)]
pub struct Exporter {
    tx: SyncSender<Msg>,
    counts: Arc<Counts>,
}

#[derive(Debug, Default)]
struct Counts {
    dropped: AtomicU64,
    exported: AtomicU64,
    late: AtomicU64,
    made: AtomicU64,
}

/// Where a collector listens: `http://host:port/path`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Endpoint {
    host: String,
    port: u16,
    path: String,
}

fn endpoint(url: &str) -> Result<Endpoint, String> {
    let bad = |why: &str| {
        Err(format!(
            "OTLP endpoint {:?} {why}",
            crate::text::cut_text(url.to_string(), 200)
        ))
    };
    let Some(rest) = url.strip_prefix("http://") else {
        return if url.starts_with("https://") {
            bad("is https: native exports to a plain http:// collector (a local one or an agent beside it); point it at one")
        } else {
            bad("is not an http:// URL")
        };
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => match p.parse::<u16>() {
            Ok(p) => (h, p),
            Err(_) => return bad("has a port that is no number"),
        },
        _ => (authority, 80),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() || authority.contains('@') || path.contains(['\r', '\n', ' ']) {
        return bad("has no host, or a user, or spaces in its path");
    }
    Ok(Endpoint {
        host: host.to_string(),
        port,
        path: path.to_string(),
    })
}

/// The traces endpoint the environment names (see the module docs), if any.
pub fn endpoint_from(var: impl Fn(&str) -> Option<String>) -> Option<String> {
    let set = |n: &str| var(n).filter(|v| !v.trim().is_empty());
    if let Some(e) = set(TRACES_ENDPOINT_VAR) {
        return Some(e.trim().to_string());
    }
    set(ENDPOINT_VAR).map(|e| format!("{}/v1/traces", e.trim().trim_end_matches('/')))
}

impl Exporter {
    /// The exporter the process environment asks for (`service` names this process in the
    /// spans' resource), or `None` when no endpoint is set; an error names a bad endpoint.
    pub fn from_env(service: &str) -> Result<Option<Arc<Exporter>>, String> {
        match endpoint_from(|n| std::env::var(n).ok()) {
            Some(url) => Self::start(&url, service).map(Some),
            None => Ok(None),
        }
    }

    /// An exporter to the collector at `url` (`http://host:port/v1/traces`).
    pub fn start(url: &str, service: &str) -> Result<Arc<Exporter>, String> {
        let at = endpoint(url)?;
        let (tx, rx) = sync_channel(QUEUE_SPANS);
        let counts = Arc::new(Counts::default());
        let c = counts.clone();
        let service = service.to_string();
        std::thread::Builder::new()
            .name("otlp-export".into())
            .spawn(move || send_loop(rx, at, service, c))
            .map_err(|e| format!("cannot start the OTLP export thread: {e}"))?;
        Ok(Arc::new(Exporter { tx, counts }))
    }

    /// Queues a finished span, never waiting: when the queue is full it is dropped (counted).
    pub fn record(&self, span: SpanData) {
        self.counts.made.fetch_add(1, Ordering::Relaxed);
        if let Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) =
            self.tx.try_send(Msg::Span(Box::new(span)))
        {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Sends what is queued now and waits, at most `within`, for it to be sent or dropped
    /// (a Lambda function, before its answer). Whether it finished in time.
    pub fn flush(&self, within: Duration) -> bool {
        let end = Instant::now() + within;
        let (done, wait) = sync_channel(1);
        let mut msg = Msg::Flush(Done::Thread(done));
        // Behind the spans queued now, however full the queue is, until `within` ends.
        loop {
            match self.tx.try_send(msg) {
                Ok(()) => break,
                Err(TrySendError::Full(m)) if Instant::now() < end => {
                    msg = m;
                    std::thread::sleep(Duration::from_millis(1));
                }
                Err(_) => return false,
            }
        }
        wait.recv_timeout(end.saturating_duration_since(Instant::now()))
            .is_ok()
    }

    /// [`Self::flush`] for a task: sends what is queued now and waits, at most `within` and
    /// without holding its thread, for it to be sent or dropped. Whether it finished in time;
    /// a flush that did not is counted ([`Self::late_flushes`]), and its spans stay queued.
    pub async fn flush_within(&self, within: Duration) -> bool {
        let (done, wait) = tokio::sync::oneshot::channel();
        let mut msg = Msg::Flush(Done::Task(done));
        let queued = async {
            loop {
                match self.tx.try_send(msg) {
                    Ok(()) => return true,
                    Err(TrySendError::Full(m)) => {
                        msg = m;
                        tokio::time::sleep(Duration::from_millis(1)).await;
                    }
                    Err(TrySendError::Disconnected(_)) => return false,
                }
            }
        };
        let flushed = tokio::time::timeout(within, async { queued.await && wait.await.is_ok() })
            .await
            .unwrap_or(false);
        if !flushed {
            self.counts.late.fetch_add(1, Ordering::Relaxed);
        }
        flushed
    }

    /// Flushes that ran out of their time ([`Self::flush_within`]).
    pub fn late_flushes(&self) -> u64 {
        self.counts.late.load(Ordering::Relaxed)
    }

    /// Counts `n` spans dropped before they were queued (a run's calls past its cap).
    pub fn count_dropped(&self, n: u64) {
        self.counts.made.fetch_add(n, Ordering::Relaxed);
        self.counts.dropped.fetch_add(n, Ordering::Relaxed);
    }

    /// Spans dropped so far: the queue was full, the collector did not take them, or a run
    /// made more calls than it may have spans ([`super::calls::MAX_CALL_SPANS`]).
    pub fn dropped(&self) -> u64 {
        self.counts.dropped.load(Ordering::Relaxed)
    }

    /// Spans made so far (each is exported, dropped, or still queued): those recorded, and a
    /// run's calls past its cap, counted as made and dropped at once.
    pub fn made(&self) -> u64 {
        self.counts.made.load(Ordering::Relaxed)
    }

    /// Spans the collector took so far.
    pub fn exported(&self) -> u64 {
        self.counts.exported.load(Ordering::Relaxed)
    }
}

/// The export thread: batches spans and sends them until every sender is gone.
fn send_loop(rx: Receiver<Msg>, at: Endpoint, service: String, counts: Arc<Counts>) {
    let mut batch: Vec<SpanData> = Vec::with_capacity(BATCH_SPANS);
    let mut since = Instant::now();
    let mut warned: Option<(Instant, u64)> = None;
    loop {
        let left = FLUSH_EVERY.saturating_sub(since.elapsed());
        let (flush, gone) = match rx.recv_timeout(left) {
            Ok(Msg::Span(s)) => {
                batch.push(*s);
                (None, false)
            }
            Ok(Msg::Flush(done)) => (Some(done), false),
            Err(RecvTimeoutError::Timeout) => (None, false),
            Err(RecvTimeoutError::Disconnected) => (None, true),
        };
        let due = batch.len() >= BATCH_SPANS || since.elapsed() >= FLUSH_EVERY;
        if !batch.is_empty() && (due || flush.is_some() || gone) {
            let n = batch.len() as u64;
            match send(&at, &encode(&service, batch.drain(..))) {
                Ok(()) => counts.exported.fetch_add(n, Ordering::Relaxed),
                Err(why) => {
                    let total = counts.dropped.fetch_add(n, Ordering::Relaxed) + n;
                    if warned.is_none_or(|(t, _)| t.elapsed() >= Duration::from_secs(60)) {
                        eprintln!(
                            "{}",
                            serde_json::json!({ "level": "warn", "msg": "OpenTelemetry export failed; its spans are dropped", "why": why, "dropped": total })
                        );
                        warned = Some((Instant::now(), total));
                    }
                    total
                }
            };
        }
        if batch.is_empty() || due {
            since = Instant::now();
        }
        if let Some(done) = flush {
            done.tell();
        }
        if gone {
            return;
        }
    }
}

/// A chain as a trace id: its W3C form, or (a chain of another form) 16 bytes of its digest.
fn trace_bytes(chain: &str) -> Vec<u8> {
    match super::w3c::trace_id_bytes(chain) {
        Some(b) => b.to_vec(),
        None => {
            use sha2::{Digest, Sha256};
            Sha256::digest(chain.as_bytes())[..16].to_vec()
        }
    }
}

/// An attribute as OTLP has it.
fn kv(key: impl Into<String>, v: Attr) -> proto::KeyValue {
    let value = match v {
        Attr::Str(s) => proto::Value::String(s),
        Attr::Int(i) => proto::Value::Int(i),
        Attr::Bool(b) => proto::Value::Bool(b),
        Attr::Double(d) => proto::Value::Double(d),
    };
    proto::KeyValue {
        key: key.into(),
        value: Some(proto::AnyValue { value: Some(value) }),
    }
}

/// The request body of a batch; its spans' texts are moved into it, not copied.
fn encode(service: &str, spans: impl Iterator<Item = SpanData>) -> Vec<u8> {
    let spans = spans
        .map(|s| proto::Span {
            trace_id: trace_bytes(&s.chain),
            span_id: s.span.to_be_bytes().to_vec(),
            parent_span_id: s.parent.map_or(Vec::new(), |p| p.to_be_bytes().to_vec()),
            name: s.name,
            kind: s.kind as i32,
            start_time_unix_nano: s.start_ns,
            end_time_unix_nano: s.end_ns.max(s.start_ns),
            attributes: s.attributes.into_iter().map(|(k, v)| kv(k, v)).collect(),
            links: s
                .links
                .iter()
                .map(|(chain, span)| proto::Link {
                    trace_id: trace_bytes(chain),
                    span_id: span.to_be_bytes().to_vec(),
                })
                .collect(),
            events: s
                .events
                .into_iter()
                .map(|e| proto::Event {
                    time_unix_nano: e.at_ns,
                    name: e.name,
                    attributes: e.attributes.into_iter().map(|(k, v)| kv(k, v)).collect(),
                })
                .collect(),
            dropped_events_count: s.dropped_events,
            status: Some(match s.error {
                Some(e) => proto::Status {
                    message: crate::text::cut_text(e, 1024),
                    code: 2,
                },
                None => proto::Status {
                    message: String::new(),
                    code: 1,
                },
            }),
        })
        .collect();
    proto::ExportTraceServiceRequest {
        resource_spans: vec![proto::ResourceSpans {
            resource: Some(proto::Resource {
                attributes: vec![kv("service.name", Attr::Str(service.to_string()))],
            }),
            scope_spans: vec![proto::ScopeSpans {
                scope: Some(proto::InstrumentationScope {
                    name: "native".into(),
                    version: env!("CARGO_PKG_VERSION").into(),
                }),
                spans,
            }],
        }],
    }
    .encode_to_vec()
}

/// One POST of `body` to the collector, within [`SEND_TIMEOUT`]; Ok when it answers 2xx.
fn send(at: &Endpoint, body: &[u8]) -> Result<(), String> {
    let started = Instant::now();
    let addr = (at.host.as_str(), at.port)
        .to_socket_addrs()
        .map_err(|e| format!("cannot resolve {}: {e}", at.host))?
        .next()
        .ok_or_else(|| format!("{} has no address", at.host))?;
    let mut s = TcpStream::connect_timeout(&addr, SEND_TIMEOUT)
        .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
    let left = SEND_TIMEOUT
        .saturating_sub(started.elapsed())
        .max(Duration::from_millis(1));
    let _ = s.set_write_timeout(Some(left));
    let _ = s.set_read_timeout(Some(left));
    let head = format!(
        "POST {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        at.path, at.host, at.port, body.len()
    );
    s.write_all(head.as_bytes())
        .and_then(|()| s.write_all(body))
        .map_err(|e| format!("sending to {addr}: {e}"))?;
    // The answer is read to its end (the connection closes), at most 64 KB of it, so that the
    // collector is not cut off while it writes; only its status line is looked at.
    let mut line = [0u8; 64];
    let mut got = 0;
    let mut rest = [0u8; 4096];
    let mut total = 0;
    loop {
        let n = if got < line.len() {
            s.read(&mut line[got..])
        } else {
            s.read(&mut rest)
        };
        match n {
            Ok(0) => break,
            Ok(n) if got < line.len() => got += n,
            Ok(n) => total += n,
            Err(_) if got >= 12 => break,
            Err(e) => return Err(format!("reading the answer of {addr}: {e}")),
        }
        if total > 64 * 1024 {
            break;
        }
    }
    let text = String::from_utf8_lossy(&line[..got]);
    match text.split(' ').nth(1) {
        Some(code) if code.starts_with('2') => Ok(()),
        _ => Err(format!(
            "{addr} answered {:?}",
            text.lines().next().unwrap_or_default()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_standard_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |n: &str| {
                pairs
                    .iter()
                    .find(|(k, _)| *k == n)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(endpoint_from(env(&[])), None);
        assert_eq!(endpoint_from(env(&[(ENDPOINT_VAR, " ")])), None);
        assert_eq!(
            endpoint_from(env(&[(ENDPOINT_VAR, "http://c:4318/")])).as_deref(),
            Some("http://c:4318/v1/traces")
        );
        assert_eq!(
            endpoint_from(env(&[
                (ENDPOINT_VAR, "http://c:4318"),
                (TRACES_ENDPOINT_VAR, "http://t:9/x")
            ]))
            .as_deref(),
            Some("http://t:9/x")
        );
        assert_eq!(
            endpoint("http://127.0.0.1:4318/v1/traces"),
            Ok(Endpoint {
                host: "127.0.0.1".into(),
                port: 4318,
                path: "/v1/traces".into()
            })
        );
        assert_eq!(endpoint("http://[::1]:9/").unwrap().host, "::1");
        assert_eq!(endpoint("http://c").unwrap().port, 80);
        for bad in [
            "https://c:4318",
            "c:4318",
            "http://:9/",
            "http://u@c/",
            "http://c:x/",
        ] {
            assert!(endpoint(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_full_queue_drops_and_counts_without_waiting() {
        // A collector that is never there: nothing is taken; the queue fills, then drops.
        let e = Exporter::start("http://127.0.0.1:9/v1/traces", "t").unwrap();
        let span = SpanData {
            chain: super::super::new_trace(),
            span: 1,
            parent: None,
            name: "x".into(),
            kind: Kind::Internal,
            start_ns: 1,
            end_ns: 2,
            attributes: vec![],
            error: None,
            links: vec![],
            events: vec![],
            dropped_events: 0,
        };
        let started = Instant::now();
        for _ in 0..QUEUE_SPANS * 2 {
            e.record(span.clone());
        }
        assert!(
            started.elapsed() < Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        assert!(e.flush(Duration::from_secs(30)));
        assert_eq!(e.exported(), 0);
        assert_eq!(e.dropped(), (QUEUE_SPANS * 2) as u64);
    }
}
