//! Serving HTTP/1.1 and HTTP/2 (h2c, for gRPC clients) connections with bounds that a hostile
//! client cannot stretch: headers must arrive within a time (slowloris), a connection waiting
//! for its next request is closed after the same time (idle keep-alive), bodies are capped per
//! route and must arrive within a time ([`super::body_limit`]), and the number of open
//! connections is capped. At the cap a new connection closes the oldest one that has no request
//! in flight (an idle or half-sent one, as nginx reclaims keep-alive connections; one that never
//! sent a byte before one that did, asking the kernel whether bytes wait unread so that a client
//! whose request the server has not read yet keeps its place), so that idle connections cannot
//! lock others out; only when every connection is serving a request is a new one turned away,
//! with a 503.
//!
//! Which protocol a connection speaks is read from its first bytes (HTTP/2's client preface or
//! not), within the header timeout, so that a client that sends nothing, or a preface a byte at
//! a time, is closed as a slow HTTP/1 client is. An HTTP/2 connection carries at most
//! [`H2_MAX_STREAMS`] requests at once and headers of at most [`H2_MAX_HEADER_BYTES`]; it is
//! pinged while open and closed once it has served nothing for a header timeout.
//!
//! A client must also take its answers: every answer is handed to hyper a piece at a time and
//! counted until written ([`super::answers`]). A connection whose client takes nothing of an
//! answer for a send timeout (an HTTP/2 window left at 0, PINGs answered or not), or whose
//! socket takes nothing for as long, is closed; a connection holds at most so many answer bytes
//! unsent (past them its new requests are refused with 503), all connections together at most
//! so many (past them the connections stalled longest are closed first); a connection with an
//! answer pending is busy, not idle; and a graceful close (the server stopping, an idle HTTP/2
//! connection) drops the connection when a send timeout has passed.
//!
//! Used by every long-running listener: `native serve` and the Fargate server.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};
use tower::ServiceExt;

use super::answers::{Held, Ledger};

/// The bounds of a listener. [`Hygiene::from_env`] reads them, with these defaults:
///
/// | variable | default | what |
/// | --- | --- | --- |
/// | `NATIVE_HTTP_HEADER_TIMEOUT_S` | 10 | a request's headers must arrive within, counted from when the connection is ready for it (so also the longest idle keep-alive) |
/// | `NATIVE_HTTP_BODY_TIMEOUT_S` | 60 | a request's body must arrive within |
/// | `NATIVE_HTTP_MAX_CONNECTIONS` | 10 000, or three quarters of the open-files limit if lower | connections open at once |
/// | `NATIVE_HTTP_THREADS` | the cores the process may use | threads serving connections, each a lane of its own ([`super::lanes`]; the first listener of a process starts them); 0 serves connections on the caller's runtime, at most 1024 |
/// | `NATIVE_HTTP_SEND_TIMEOUT_S` | 30 | an answer that its client takes nothing of for this long (and a connection whose writes wait this long) closes its connection; also the longest a connection takes to close gracefully |
/// | `NATIVE_HTTP_CONNECTION_ANSWER_MB` | 16 | answer bytes a connection holds unsent; past it its new requests are refused (503), though one answer alone may be larger |
/// | `NATIVE_HTTP_ANSWER_MB` | 256 | answer bytes every connection together holds unsent; past it the connections stalled longest are closed |
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hygiene {
    /// See the table above.
    pub header_timeout: Duration,
    /// See the table above.
    pub body_timeout: Duration,
    /// See the table above.
    pub max_connections: usize,
    /// See the table above.
    pub threads: usize,
    /// See the table above.
    pub send_timeout: Duration,
    /// See the table above, in bytes.
    pub connection_answer_bytes: u64,
    /// See the table above, in bytes.
    pub answer_bytes: u64,
}

/// The most connections by default.
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// Connections the kernel holds for `accept` (the system's `somaxconn` may lower it). tokio's
/// 1024 overflows when a flood opens thousands at once, and a client whose connection does not
/// fit waits a second for its SYN to be sent again.
pub const BACKLOG: u32 = 4096;

/// Binds `addr` (`host:port`) as [`tokio::net::TcpListener::bind`] does (address reuse on Unix),
/// with a [`BACKLOG`] deep enough for floods of connections.
pub async fn bind(addr: &str) -> std::io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let socket = match a {
            std::net::SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4()?,
            std::net::SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6()?,
        };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?;
        match socket.bind(a).and_then(|()| socket.listen(BACKLOG)) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{addr} resolves to no address"),
        )
    }))
}

impl Default for Hygiene {
    fn default() -> Self {
        Hygiene {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(60),
            max_connections: connection_ceiling(DEFAULT_MAX_CONNECTIONS),
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            send_timeout: Duration::from_secs(30),
            connection_answer_bytes: 16 << 20,
            answer_bytes: 256 << 20,
        }
    }
}

impl Hygiene {
    /// The defaults, overridden by the environment (see [`Hygiene`]); a value out of its
    /// range is an error naming the variable.
    pub fn from_env() -> Result<Self, String> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// [`Hygiene::from_env`] over `var`, what each variable is set to.
    fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self, String> {
        let d = Hygiene::default();
        let read = |name: &str, default: u64| -> Result<u64, String> {
            match var(name) {
                None => Ok(default),
                Some(v) => v.trim().parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("{name}={v:?} is not a positive whole number; unset it for the default {default}")
                }),
            }
        };
        let threads = match var("NATIVE_HTTP_THREADS") {
            None => d.threads,
            Some(v) => v.trim().parse::<usize>().ok().filter(|n| *n <= 1024).ok_or_else(|| {
                format!(
                    "NATIVE_HTTP_THREADS={v:?} is not a whole number from 0 to 1024; unset it for one thread per core ({})",
                    d.threads
                )
            })?,
        };
        Ok(Hygiene {
            header_timeout: Duration::from_secs(read(
                "NATIVE_HTTP_HEADER_TIMEOUT_S",
                d.header_timeout.as_secs(),
            )?),
            body_timeout: Duration::from_secs(read(
                "NATIVE_HTTP_BODY_TIMEOUT_S",
                d.body_timeout.as_secs(),
            )?),
            max_connections: connection_ceiling(read(
                "NATIVE_HTTP_MAX_CONNECTIONS",
                DEFAULT_MAX_CONNECTIONS as u64,
            )? as usize),
            threads,
            send_timeout: Duration::from_secs(read(
                "NATIVE_HTTP_SEND_TIMEOUT_S",
                d.send_timeout.as_secs(),
            )?),
            connection_answer_bytes: read(
                "NATIVE_HTTP_CONNECTION_ANSWER_MB",
                d.connection_answer_bytes >> 20,
            )?
            .saturating_mul(1 << 20),
            answer_bytes: read("NATIVE_HTTP_ANSWER_MB", d.answer_bytes >> 20)?
                .saturating_mul(1 << 20),
        })
    }
}

/// `wanted`, lowered to three quarters of the process's open-files limit when that is lower:
/// past it `accept` fails, and the rest of the process needs files too.
fn connection_ceiling(wanted: usize) -> usize {
    let soft = std::fs::read_to_string("/proc/self/limits")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("Max open files"))
                .and_then(|l| l.split_whitespace().nth(3))
                .and_then(|n| n.parse::<usize>().ok())
        });
    match soft {
        Some(n) => wanted.min((n / 4 * 3).max(16)),
        None => wanted,
    }
}

/// Requests an HTTP/2 connection may carry at once (each a task of its own).
pub const H2_MAX_STREAMS: u32 = 100;

/// The most bytes of headers an HTTP/2 request may carry (decoded), as HTTP/1's reader allows.
pub const H2_MAX_HEADER_BYTES: u32 = 64 * 1024;

/// The client preface every HTTP/2 connection starts with (RFC 9113, 3.4).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// One open connection.
struct Slot {
    /// Requests it is serving (0 or 1 on HTTP/1).
    busy: AtomicUsize,
    /// Requests it has begun, so that an idle HTTP/2 connection can be told from a busy one.
    begun: AtomicU64,
    /// It has sent its first bytes: at the cap, connections that never spoke make room first.
    spoke: std::sync::atomic::AtomicBool,
    /// Its socket, open while the slot is listed ([`Socket`] closes it after the slot leaves),
    /// to ask whether bytes it sent wait unread.
    #[cfg(unix)]
    fd: std::os::fd::RawFd,
    /// Told when the connection is closed to make room.
    evict: Notify,
    /// Its answers: the bytes not yet written, and whether its client takes them.
    held: Arc<Held>,
}

/// The open connections, oldest first.
struct Conns {
    open: Mutex<BTreeMap<u64, Arc<Slot>>>,
    next: AtomicU64,
    cap: usize,
    /// Connections closed to make room, and turned away, for people and tests.
    evicted: AtomicU64,
    refused: AtomicU64,
    /// The answer bytes every connection holds unsent, and their bound.
    ledger: Arc<Ledger>,
    answer_bytes: u64,
    /// Connections closed as the slowest readers when the answers held passed their bound.
    shed: AtomicU64,
}

impl Conns {
    /// No connections yet, at most `cap` open, at most `answer_bytes` of answers held in all.
    fn new(cap: usize, answer_bytes: u64) -> Self {
        Conns {
            open: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(0),
            cap: cap.max(1),
            evicted: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            ledger: Arc::new(Ledger::default()),
            answer_bytes,
            shed: AtomicU64::new(0),
        }
    }

    /// A slot for a new connection on `socket`: past the cap, the oldest connection without a
    /// request in flight is closed to make room; `None` when every connection is serving one.
    fn admit(&self, socket: &TcpStream) -> Option<(u64, Arc<Slot>)> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.len() >= self.cap && !self.evict_idle(&mut open) {
            self.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot {
            busy: AtomicUsize::new(0),
            begun: AtomicU64::new(0),
            spoke: std::sync::atomic::AtomicBool::new(false),
            #[cfg(unix)]
            fd: std::os::fd::AsRawFd::as_raw_fd(socket),
            evict: Notify::new(),
            held: Arc::new(Held::new(self.ledger.clone())),
        });
        open.insert(id, slot.clone());
        Some((id, slot))
    }

    fn evict_idle(&self, open: &mut BTreeMap<u64, Arc<Slot>>) -> bool {
        // The oldest connection that never sent a byte, else the oldest without a request in
        // flight: a client that connected and is sending its request keeps its place while
        // silent connections remain to close, also before its connection's task has read
        // anything (under a flood of connections that can take a while): the kernel is asked.
        // A slot found to have spoken is marked, so each is asked at most once.
        let idle = |silent: bool| {
            open.iter()
                .find(|(_, s)| s.busy.load(Ordering::Acquire) == 0 && !(silent && spoke(s)))
                .map(|(id, _)| *id)
        };
        let idle = idle(true).or_else(|| idle(false));
        match idle.and_then(|id| open.remove(&id)) {
            Some(slot) => {
                slot.evict.notify_one();
                self.evicted.fetch_add(1, Ordering::Relaxed);
                true
            }
            None => false,
        }
    }

    /// Removes a connection's slot: it is closed, or closing.
    fn close(&self, id: u64) {
        let slot = self
            .open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        if let Some(slot) = slot {
            slot.held.release();
        }
    }

    /// Past the bound on answer bytes held, closes the connections that have waited on their
    /// clients longest until what the rest hold is within it.
    fn shed_slowest(&self) {
        let mut total = self.ledger.total();
        if total <= self.answer_bytes {
            return;
        }
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let mut stalled: Vec<(u64, u64)> = open
            .iter()
            .filter(|(_, s)| s.held.bytes() > 0)
            .filter_map(|(id, s)| Some((s.held.stalled_since()?, *id)))
            .collect();
        stalled.sort_unstable();
        for (_, id) in stalled {
            if total <= self.answer_bytes {
                break;
            }
            if let Some(slot) = open.remove(&id) {
                total = total.saturating_sub(slot.held.bytes());
                slot.held.release();
                slot.evict.notify_one();
                self.shed.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// Whether `slot`'s connection has sent bytes: it said so, or bytes it sent wait unread (which
/// marks it).
fn spoke(slot: &Slot) -> bool {
    if slot.spoke.load(Ordering::Relaxed) {
        return true;
    }
    #[cfg(unix)]
    if bytes_waiting(slot.fd) {
        slot.spoke.store(true, Ordering::Relaxed);
        return true;
    }
    false
}

/// Whether bytes wait unread on the socket `fd`: a peek that neither waits nor takes them.
#[cfg(unix)]
#[allow(unsafe_code)]
fn bytes_waiting(fd: std::os::fd::RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: `recv` writes at most one byte into `byte`, which outlives the call. `fd` is the
    // slot's socket, open while the slot is listed ([`Socket`]); were it another file, the call
    // fails or peeks, and takes nothing either way.
    let n = unsafe {
        libc::recv(
            fd,
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n > 0
}

/// Closes a connection's slot when dropped.
struct Close(Arc<Conns>, u64);

/// A connection's socket and its slot's [`Close`]: the slot leaves the open connections
/// before the socket closes, so that the descriptor a listed slot names is its connection's.
struct Socket {
    // Dropped first (fields drop in order).
    _close: Close,
    stream: TcpStream,
}

impl Drop for Close {
    fn drop(&mut self) {
        self.0.close(self.1);
    }
}

/// Marks a connection busy while a request is served.
struct Busy(Arc<Slot>);

impl Busy {
    fn new(slot: &Arc<Slot>) -> Self {
        slot.busy.fetch_add(1, Ordering::AcqRel);
        slot.begun.fetch_add(1, Ordering::Relaxed);
        Busy(slot.clone())
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.busy.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What a listener did, for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Served {
    /// Every connection in flight finished within the grace period.
    pub finished: bool,
    /// Idle connections closed to make room for new ones.
    pub evicted: u64,
    /// Connections turned away because every open one was serving a request.
    pub refused: u64,
    /// Connections closed as the slowest readers when the answers held passed their bound.
    pub shed: u64,
}

/// The answer to a connection turned away at the cap.
fn full() -> Vec<u8> {
    let body = r#"{"code":"unavailable","message":"the server is at its connection limit with every connection serving a request; retry later"}"#;
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// `app` with each route's body bounded within `hygiene` ([`super::body_limit`]).
pub fn bound(app: Router, hygiene: &Hygiene) -> Router {
    let timeout = hygiene.body_timeout;
    app.layer(axum::middleware::from_fn(move |req, next| {
        super::body_limit::limit(timeout, req, next)
    }))
}

/// Serves `app` on `listener` within `hygiene` until `stop` resolves; then stops accepting,
/// lets each connection finish the request it is serving (idle ones close at once) for at
/// most `grace`, and closes what is left. `app`'s bodies must be bounded already ([`bound`];
/// [`super::app`] is), so that layers around that (the access log) see its answers.
/// `app` is any service that answers every request ([`super::App`] or a [`Router`]).
pub async fn serve_app<S>(
    listener: TcpListener,
    app: S,
    hygiene: Hygiene,
    stop: impl Future<Output = ()>,
    grace: Duration,
) -> Served
where
    S: Answers,
{
    let conns = Arc::new(Conns::new(hygiene.max_connections, hygiene.answer_bytes));
    let (shutdown, stopping) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    // Each connection is served whole on one thread of its own lane (`super::lanes`).
    let lanes = super::lanes::Lanes::get(hygiene.threads);
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match conns.admit(&stream) {
                    Some((id, slot)) => {
                        // The slot is closed when the connection ends, also when it never
                        // starts (its socket could not move to its lane).
                        let close = Close(conns.clone(), id);
                        let app = app.clone();
                        let stopping = stopping.clone();
                        let conns = conns.clone();
                        lanes.spawn(&mut tasks, stream, move |stream| async move {
                            let socket = Socket { _close: close, stream };
                            connection(socket, app, hygiene, slot, conns, stopping).await;
                        });
                    }
                    None => {
                        // Best effort, never waiting on a client that does not read.
                        let _ = stream.try_write(&full());
                    }
                },
                Err(e) => {
                    // Out of file descriptors (or a connection reset before it was taken):
                    // make room, and do not spin.
                    if matches!(e.raw_os_error(), Some(23 | 24)) {
                        let mut open = conns.open.lock().unwrap_or_else(|p| p.into_inner());
                        conns.evict_idle(&mut open);
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            },
            Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
        }
    }
    drop(listener);
    let _ = shutdown.send(true);
    let finished =
        tokio::time::timeout(grace, async { while tasks.join_next().await.is_some() {} })
            .await
            .is_ok();
    tasks.abort_all();
    Served {
        finished,
        evicted: conns.evicted.load(Ordering::Relaxed),
        refused: conns.refused.load(Ordering::Relaxed),
        shed: conns.shed.load(Ordering::Relaxed),
    }
}

/// What [`serve_app`] serves: a service that answers every request (its errors are
/// `Infallible`), cloned for each connection and request.
pub trait Answers:
    tower::Service<
        axum::extract::Request,
        Response = axum::response::Response,
        Error = std::convert::Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static
{
}

impl<S> Answers for S where
    S: tower::Service<
            axum::extract::Request,
            Response = axum::response::Response,
            Error = std::convert::Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + Sync
        + 'static
{
}

/// Serves one connection until it closes, is closed to make room, or the server stops.
async fn connection<S: Answers>(
    mut socket: Socket,
    app: S,
    hygiene: Hygiene,
    slot: Arc<Slot>,
    conns: Arc<Conns>,
    stopping: watch::Receiver<bool>,
) {
    let _ = socket.stream.set_nodelay(true);
    // The protocol, from the first bytes, which must come within the header timeout.
    let first = tokio::select! {
        r = tokio::time::timeout(hygiene.header_timeout, sniff(&mut socket.stream)) => r,
        _ = slot.evict.notified() => return,
    };
    let (h2, prefix) = match first {
        Ok(Ok(Some(p))) => {
            slot.spoke.store(true, Ordering::Relaxed);
            p
        }
        // Silent past the timeout, closed, or broken before a request: nothing to answer.
        _ => return,
    };
    let for_requests = slot.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        // Busy until hyper is done with the answer, not only until it is made.
        let busy = Busy::new(&for_requests);
        let (app, conns) = (app.clone(), conns.clone());
        let held = for_requests.held.clone();
        let cap = hygiene.connection_answer_bytes;
        async move {
            // A connection whose client has not read what it holds is not answered more.
            let (r, counted) = if held.bytes() >= cap {
                (unread(held.bytes(), cap), 0)
            } else {
                let r = match app.oneshot(req.map(Body::new)).await {
                    Ok(r) => r,
                    Err(never) => match never {},
                };
                let size = hyper::body::Body::size_hint(r.body()).lower();
                if held.admit(size, cap) {
                    (r, size)
                } else {
                    (unread(held.bytes(), cap), 0)
                }
            };
            let r = r.map(|body| held.track(body, counted, busy));
            conns.shed_slowest();
            Ok::<_, std::convert::Infallible>(r)
        }
    });
    let io = TokioIo::new(Prefixed {
        prefix,
        at: 0,
        inner: socket,
        held: slot.held.clone(),
    });
    if h2 {
        let conn = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_concurrent_streams(H2_MAX_STREAMS)
            .max_header_list_size(H2_MAX_HEADER_BYTES)
            .keep_alive_interval(Some(hygiene.header_timeout))
            .keep_alive_timeout(hygiene.header_timeout)
            // What h2 buffers of a stream's answer beyond the window its client gives: the
            // answer's pieces are counted until written anyway (`super::answers`).
            .max_send_buf_size(4 * super::answers::CHUNK)
            .serve_connection(io, service);
        drive(conn, hygiene, &slot, stopping, true).await;
    } else {
        let conn = http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(hygiene.header_timeout)
            .keep_alive(true)
            .serve_connection(io, service);
        drive(conn, hygiene, &slot, stopping, false).await;
    }
}

/// The answer to a request on a connection whose client has not read `held` bytes of answers,
/// `cap` or more with this one.
fn unread(held: u64, cap: u64) -> axum::response::Response {
    use axum::response::IntoResponse;
    let mb = |n: u64| n.div_ceil(1 << 20);
    let mut e = super::ApiError::new(
        super::Code::Unavailable,
        format!(
            "this connection holds {} MB of answers its client has not read, and may hold {} MB (NATIVE_HTTP_CONNECTION_ANSWER_MB): read them, or ask on another connection",
            mb(held),
            mb(cap)
        ),
    );
    e.retry_after_s = Some(1);
    e.into_response()
}

/// Reads a connection's first bytes until they are HTTP/2's preface (`true`) or cannot be
/// (`false`, HTTP/1), returning them with the answer; `None` when the peer closes first.
async fn sniff(stream: &mut TcpStream) -> std::io::Result<Option<(bool, Vec<u8>)>> {
    let mut got = Vec::with_capacity(H2_PREFACE.len());
    loop {
        let mut buf = [0u8; 24];
        let n = stream
            .read(&mut buf[..H2_PREFACE.len() - got.len()])
            .await?;
        if n == 0 {
            return Ok(None);
        }
        got.extend_from_slice(&buf[..n]);
        if !H2_PREFACE.starts_with(&got) {
            return Ok(Some((false, got)));
        }
        if got.len() == H2_PREFACE.len() {
            return Ok(Some((true, got)));
        }
    }
}

/// A connection whose first bytes were read to tell its protocol: they are read again first.
/// What is written to it is counted off its answers' bytes, and a write that waits is timed.
struct Prefixed {
    prefix: Vec<u8>,
    at: usize,
    inner: Socket,
    held: Arc<Held>,
}

impl Prefixed {
    fn count(
        &self,
        r: std::task::Poll<std::io::Result<usize>>,
    ) -> std::task::Poll<std::io::Result<usize>> {
        match &r {
            std::task::Poll::Ready(Ok(n)) => self.held.wrote(*n),
            std::task::Poll::Pending => self.held.blocked(),
            std::task::Poll::Ready(Err(_)) => {}
        }
        r
    }
}

impl AsyncRead for Prefixed {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let this = &mut *self;
        if this.at < this.prefix.len() {
            let n = (this.prefix.len() - this.at).min(buf.remaining());
            buf.put_slice(&this.prefix[this.at..this.at + n]);
            this.at += n;
            if this.at == this.prefix.len() {
                this.prefix = Vec::new();
                this.at = 0;
            }
            return std::task::Poll::Ready(Ok(()));
        }
        std::pin::Pin::new(&mut this.inner.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner.stream).poll_write(cx, buf);
        self.count(r)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let r = std::pin::Pin::new(&mut self.inner.stream).poll_write_vectored(cx, bufs);
        self.count(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.stream.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner.stream).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner.stream).poll_shutdown(cx)
    }
}

/// A served connection that can be asked to finish what it serves and close.
trait Graceful: Future {
    fn graceful(self: std::pin::Pin<&mut Self>);
}

impl<I, S> Graceful for http1::Connection<I, S>
where
    Self: Future,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::ResBody: hyper::body::Body + 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    fn graceful(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

impl<I, S, E> Graceful for http2::Connection<I, S, E>
where
    Self: Future,
    I: hyper::rt::Read + hyper::rt::Write + Unpin,
    S: hyper::service::HttpService<hyper::body::Incoming>,
    S::ResBody: hyper::body::Body + 'static,
    <S::ResBody as hyper::body::Body>::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, S::ResBody>,
{
    fn graceful(self: std::pin::Pin<&mut Self>) {
        self.graceful_shutdown();
    }
}

/// Drives a connection until it ends, is evicted, or the server stops (then gracefully, for at
/// most a send timeout). An HTTP/2 connection (`idle_close`) that began no request for a whole
/// header timeout, and serves none, is closed as HTTP/1's idle keep-alive is. A connection
/// that has waited on its client for a send timeout ([`Held::stalled_since`]) is dropped: its
/// client takes nothing of an answer, or its socket takes nothing.
async fn drive<C: Graceful>(
    conn: C,
    hygiene: Hygiene,
    slot: &Slot,
    mut stopping: watch::Receiver<bool>,
    idle_close: bool,
) {
    let mut conn = std::pin::pin!(conn);
    let mut draining = false;
    let mut idle = tokio::time::interval(hygiene.header_timeout);
    idle.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    idle.tick().await;
    let mut seen = slot.begun.load(Ordering::Relaxed);
    // Looked at four times a send timeout: a stalled connection closes within 1¼ of it.
    let mut stall =
        tokio::time::interval((hygiene.send_timeout / 4).max(Duration::from_millis(10)));
    stall.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let limit = hygiene.send_timeout.as_millis() as u64;
    let mut drained = std::pin::pin!(tokio::time::sleep(Duration::MAX));
    let start_draining =
        |conn: std::pin::Pin<&mut C>, drained: std::pin::Pin<&mut tokio::time::Sleep>| {
            conn.graceful();
            // The last answers have a send timeout to go; then the connection is dropped.
            drained.reset(tokio::time::Instant::now() + hygiene.send_timeout);
        };
    if *stopping.borrow() {
        draining = true;
        start_draining(conn.as_mut(), drained.as_mut());
    }
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = slot.evict.notified() => return,
            _ = drained.as_mut(), if draining => return,
            _ = stall.tick() => {
                let now = super::answers::now_ms();
                if slot.held.stalled_since().is_some_and(|t| now.saturating_sub(t) >= limit) {
                    return;
                }
            }
            changed = stopping.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    start_draining(conn.as_mut(), drained.as_mut());
                }
            }
            _ = idle.tick(), if idle_close && !draining => {
                let begun = slot.begun.load(Ordering::Relaxed);
                if begun == seen && slot.busy.load(Ordering::Acquire) == 0 {
                    draining = true;
                    start_draining(conn.as_mut(), drained.as_mut());
                }
                seen = begun;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, Empty};
    use tokio::io::AsyncWriteExt;

    /// A listener on 127.0.0.1 serving `GET /` with "hi", within `header_timeout`.
    async fn start(header_timeout: Duration) -> (std::net::SocketAddr, watch::Sender<bool>) {
        start_capped(header_timeout, 16).await
    }

    async fn start_capped(
        header_timeout: Duration,
        max_connections: usize,
    ) -> (std::net::SocketAddr, watch::Sender<bool>) {
        let app = Router::new().route("/", axum::routing::get(|| async { "hi" }));
        start_app(app, header_timeout, max_connections).await
    }

    /// A listener on 127.0.0.1 serving `app` on two lanes (on a multi-threaded runtime).
    async fn start_app(
        app: Router,
        header_timeout: Duration,
        max_connections: usize,
    ) -> (std::net::SocketAddr, watch::Sender<bool>) {
        let hygiene = Hygiene {
            header_timeout,
            body_timeout: Duration::from_secs(5),
            max_connections,
            threads: 2,
            ..Hygiene::default()
        };
        start_within(app, hygiene).await
    }

    /// A listener on 127.0.0.1 serving `app` within `hygiene`.
    async fn start_within(
        app: Router,
        hygiene: Hygiene,
    ) -> (std::net::SocketAddr, watch::Sender<bool>) {
        let listener = bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, mut stopped) = watch::channel(false);
        tokio::spawn(serve_app(
            listener,
            app,
            hygiene,
            async move {
                let _ = stopped.changed().await;
            },
            Duration::from_secs(1),
        ));
        (addr, stop)
    }

    /// A listener serving `GET /big?n=BYTES` (an answer of that many bytes) within `hygiene`.
    async fn start_big(hygiene: Hygiene) -> (std::net::SocketAddr, watch::Sender<bool>) {
        let app = Router::new().route(
            "/big",
            axum::routing::get(|q: axum::extract::RawQuery| async move {
                let n: usize =
                    q.0.and_then(|q| q.strip_prefix("n=")?.parse().ok())
                        .unwrap_or(0);
                vec![b'x'; n]
            }),
        );
        start_within(app, hygiene).await
    }

    fn readers(send_timeout_ms: u64, connection_mb: u64, total_mb: u64) -> Hygiene {
        Hygiene {
            header_timeout: Duration::from_secs(30),
            send_timeout: Duration::from_millis(send_timeout_ms),
            connection_answer_bytes: connection_mb << 20,
            answer_bytes: total_mb << 20,
            // On the test's runtime: the lanes are the process's, and other tests count them.
            threads: 0,
            ..Hygiene::default()
        }
    }

    /// What a client that never reads keeps: its handle and answers (dropped, they would
    /// reset the streams).
    type Kept = (
        h2::client::SendRequest<bytes::Bytes>,
        Vec<hyper::Response<h2::RecvStream>>,
    );

    /// An HTTP/2 client with a receive window of 0 (it answers PINGs) asking `n` answers of
    /// `bytes`: their statuses, the connection's task (it ends when the server closes it), and
    /// what it must keep.
    async fn h2_never_reading(
        addr: std::net::SocketAddr,
        n: usize,
        bytes: usize,
    ) -> (Vec<u16>, tokio::task::JoinHandle<()>, Kept) {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let (client, conn) = h2::client::Builder::new()
            .initial_window_size(0)
            .handshake::<_, bytes::Bytes>(tcp)
            .await
            .unwrap();
        let task = tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut waiting = Vec::new();
        for _ in 0..n {
            let mut c = client.clone().ready().await.unwrap();
            let req = hyper::Request::get(format!("http://{addr}/big?n={bytes}"))
                .body(())
                .unwrap();
            let (res, _) = c.send_request(req, true).unwrap();
            waiting.push(res);
        }
        let mut statuses = Vec::new();
        let mut kept = Vec::new();
        for res in waiting {
            // The headers come; the bodies never can.
            let res = tokio::time::timeout(Duration::from_secs(5), res)
                .await
                .unwrap();
            statuses.push(res.as_ref().map_or(0, |r| r.status().as_u16()));
            kept.extend(res.ok());
        }
        (statuses, task, (client, kept))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_h2_client_that_never_reads_is_refused_past_its_bound_and_closed_at_the_send_timeout(
    ) {
        // GIVEN a send timeout of 600 ms and 2 MB of answers a connection
        let (addr, _stop) = start_big(readers(600, 2, 64)).await;
        // WHEN a client with a receive window of 0 asks ten answers of 1 MB
        let t = std::time::Instant::now();
        let (statuses, task, _kept) = h2_never_reading(addr, 10, 1 << 20).await;
        // THEN two are answered and held, the rest refused at once (503)
        let ok = statuses.iter().filter(|s| **s == 200).count();
        let refused = statuses.iter().filter(|s| **s == 503).count();
        assert_eq!((ok, refused), (2, 8), "{statuses:?}");
        // AND the connection is closed within 1¼ send timeouts of its answers
        tokio::time::timeout(Duration::from_secs(5), task)
            .await
            .unwrap()
            .unwrap();
        let took = t.elapsed();
        assert!(
            took >= Duration::from_millis(550) && took < Duration::from_millis(600 * 5 / 4 + 400),
            "closed after {took:?}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn past_the_total_bound_the_connection_stalled_longest_is_closed_first() {
        // GIVEN 2 MB a connection, 3 MB in all, a send timeout long enough to tell
        let (addr, _stop) = start_big(readers(10_000, 2, 3)).await;
        // WHEN one client holds 2 MB, then another 2 MB
        let (first, older, _kept1) = h2_never_reading(addr, 2, 1 << 20).await;
        assert_eq!(first, [200, 200]);
        tokio::time::sleep(Duration::from_millis(200)).await;
        let (second, newer, _kept2) = h2_never_reading(addr, 2, 1 << 20).await;
        assert_eq!(second, [200, 200]);
        // THEN the first, stalled longer, is closed at once; the second is kept
        tokio::time::timeout(Duration::from_secs(2), older)
            .await
            .expect("the older reader closed")
            .unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!newer.is_finished(), "the newer reader is kept");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_http1_client_that_never_reads_is_closed_at_the_send_timeout_and_a_slow_one_is_not()
    {
        let (addr, _stop) = start_big(readers(600, 16, 64)).await;
        let ask = |n: usize| format!("GET /big?n={n} HTTP/1.1\r\nHost: x\r\n\r\n");
        // GIVEN a client that asks 12 MB and never reads
        let mut never = TcpStream::connect(addr).await.unwrap();
        never.write_all(ask(12 << 20).as_bytes()).await.unwrap();
        // AND one that reads 64 KB every 100 ms (so its writes never wait 600 ms)
        let mut slow = TcpStream::connect(addr).await.unwrap();
        slow.write_all(ask(2 << 20).as_bytes()).await.unwrap();
        let slow_reader = tokio::spawn(async move {
            let mut got = 0usize;
            let mut buf = vec![0u8; 64 * 1024];
            while got < 2 << 20 {
                let n = slow.read(&mut buf).await.unwrap();
                assert!(n > 0, "the slow reader was closed after {got} bytes");
                got += n;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        });
        // THEN after 1¼ send timeouts and a little, the first is closed: reading it now
        // ends short of its answer (what the kernels held), not with all of it
        tokio::time::sleep(Duration::from_millis(600 * 5 / 4 + 300)).await;
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(5), never.read_to_end(&mut got))
            .await
            .expect("closed")
            .unwrap();
        assert!(got.len() < 12 << 20, "read {} bytes", got.len());
        // AND the slow one reads its whole answer
        tokio::time::timeout(Duration::from_secs(60), slow_reader)
            .await
            .unwrap()
            .unwrap();
    }

    /// Reads until the server closes; how long that took, or `None` past `within`.
    async fn closed_within(c: &mut TcpStream, within: Duration) -> Option<Duration> {
        let t = std::time::Instant::now();
        let mut sink = Vec::new();
        tokio::time::timeout(within, c.read_to_end(&mut sink))
            .await
            .ok()
            .map(|_| t.elapsed())
    }

    #[tokio::test]
    async fn http1_and_h2c_are_served_on_one_port() {
        let (addr, _stop) = start(Duration::from_secs(5)).await;
        // HTTP/1.1
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(b"GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut got = String::new();
        c.read_to_string(&mut got).await.unwrap();
        assert!(
            got.starts_with("HTTP/1.1 200") && got.ends_with("hi"),
            "{got}"
        );
        // HTTP/2 with prior knowledge (h2c), as gRPC clients speak it
        let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
        let (mut send, conn) = hyper::client::conn::http2::handshake(TokioExecutor::new(), io)
            .await
            .unwrap();
        tokio::spawn(conn);
        let req = hyper::Request::get(format!("http://{addr}/"))
            .body(Empty::<bytes::Bytes>::new())
            .unwrap();
        let res = send.send_request(req).await.unwrap();
        assert_eq!(res.version(), hyper::Version::HTTP_2);
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"hi");
    }

    #[tokio::test]
    async fn a_connection_that_never_says_its_protocol_is_closed_by_the_header_timeout() {
        let (addr, _stop) = start(Duration::from_millis(300)).await;
        // Silent, and half of HTTP/2's preface then silent: both closed after the timeout.
        for sent in [&b""[..], &H2_PREFACE[..10]] {
            let mut c = TcpStream::connect(addr).await.unwrap();
            c.write_all(sent).await.unwrap();
            let took = closed_within(&mut c, Duration::from_secs(5)).await;
            assert!(
                took.is_some_and(|t| t >= Duration::from_millis(250)),
                "after {sent:?}: {took:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_idle_h2c_connection_is_closed_as_an_idle_keep_alive_is() {
        let (addr, _stop) = start(Duration::from_millis(300)).await;
        // The preface and an empty SETTINGS frame, then nothing: closed within two timeouts
        // (the server answers with its own SETTINGS and, at the end, a GOAWAY).
        let mut c = TcpStream::connect(addr).await.unwrap();
        c.write_all(H2_PREFACE).await.unwrap();
        c.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]).await.unwrap();
        let took = closed_within(&mut c, Duration::from_secs(5)).await;
        assert!(
            took.is_some_and(|t| t >= Duration::from_millis(250)),
            "{took:?}"
        );
    }

    /// One HTTP/2 frame: its 9-byte header (length, type, flags, stream) and payload.
    fn h2_frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
        let n = payload.len() as u32;
        let mut f = vec![(n >> 16) as u8, (n >> 8) as u8, n as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    }

    /// An HPACK block of literal fields without indexing, names and values shorter than 127.
    fn hpack_literals(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut block = Vec::new();
        for (name, value) in fields {
            block.push(0);
            block.push(name.len() as u8);
            block.extend_from_slice(name.as_bytes());
            block.push(value.len() as u8);
            block.extend_from_slice(value.as_bytes());
        }
        block
    }

    /// What the server did with stream 1 of a POST whose trailers are `trailers`: `Ok(())`
    /// when it answered (a HEADERS frame), `Err(code)` when it reset the stream.
    async fn h2_post_with_trailers(trailers: &[(&str, &str)]) -> Result<(), u32> {
        const HEADERS: u8 = 1;
        const RST_STREAM: u8 = 3;
        const END_STREAM: u8 = 1;
        const END_HEADERS: u8 = 4;
        let app = Router::new().route(
            "/",
            axum::routing::post(|body: String| async move { format!("served {body}") }),
        );
        let (addr, _stop) = start_app(app, Duration::from_secs(5), 16).await;
        let mut c = TcpStream::connect(addr).await.unwrap();
        let mut out = H2_PREFACE.to_vec();
        out.extend(h2_frame(4, 0, 0, &[]));
        let request = [
            (":method", "POST"),
            (":scheme", "http"),
            (":path", "/"),
            (":authority", "x"),
        ];
        out.extend(h2_frame(HEADERS, END_HEADERS, 1, &hpack_literals(&request)));
        out.extend(h2_frame(0, 0, 1, b"x"));
        out.extend(h2_frame(
            HEADERS,
            END_HEADERS | END_STREAM,
            1,
            &hpack_literals(trailers),
        ));
        c.write_all(&out).await.unwrap();
        let read = async {
            loop {
                let mut head = [0u8; 9];
                c.read_exact(&mut head).await.unwrap();
                let n = (head[0] as usize) << 16 | (head[1] as usize) << 8 | head[2] as usize;
                let mut payload = vec![0u8; n];
                c.read_exact(&mut payload).await.unwrap();
                let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]) & !(1 << 31);
                match (head[3], stream) {
                    (HEADERS, 1) => return Ok(()),
                    (RST_STREAM, 1) => {
                        return Err(u32::from_be_bytes(payload[..4].try_into().unwrap()))
                    }
                    _ => {}
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(5), read)
            .await
            .expect("the server neither answered nor reset stream 1 within 5 s")
    }

    #[tokio::test]
    async fn h2_trailers_with_a_pseudo_header_reset_the_stream_as_malformed() {
        // RFC 9113, 8.1: trailers must not include pseudo-header fields; such a request is
        // malformed (8.1.1), a stream error PROTOCOL_ERROR (0x1). vendor/h2 holds the fix.
        assert_eq!(h2_post_with_trailers(&[(":path", "/other")]).await, Err(1));
        assert_eq!(h2_post_with_trailers(&[(":method", "GET")]).await, Err(1));
        // Ordinary trailers are still taken, and the request served.
        assert_eq!(h2_post_with_trailers(&[("x-checksum", "1")]).await, Ok(()));
    }

    #[tokio::test]
    async fn at_the_cap_silent_connections_make_room_before_one_sending_its_request() {
        let (addr, _stop) = start_capped(Duration::from_secs(30), 4).await;
        // A client that has begun its request, then twenty that never speak.
        let mut sending = TcpStream::connect(addr).await.unwrap();
        sending.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut silent = Vec::new();
        for _ in 0..20 {
            silent.push(TcpStream::connect(addr).await.unwrap());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        // THEN the first is still open, and answered when it finishes its request.
        sending
            .write_all(b"Host: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut got = String::new();
        let _ =
            tokio::time::timeout(Duration::from_secs(5), sending.read_to_string(&mut got)).await;
        assert!(got.starts_with("HTTP/1.1 200"), "{got:?}");
    }

    #[tokio::test]
    async fn at_the_cap_a_connection_whose_bytes_wait_unread_keeps_its_place() {
        // No connection here is served: what the server has read is nothing, as when a flood
        // of connections keeps their tasks from running.
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let conns = Conns::new(2, u64::MAX);
        // A client's end and the server's.
        let pair = || async {
            let client = TcpStream::connect(addr).await.unwrap();
            (client, listener.accept().await.unwrap().0)
        };
        // GIVEN a cap of 2, the oldest connection one whose request has arrived unread
        let (mut client, sending) = pair().await;
        client.write_all(b"GET / HTTP/1.1\r\n").await.unwrap();
        sending.peek(&mut [0u8; 1]).await.unwrap();
        let (first, _) = conns.admit(&sending).unwrap();
        // AND then a silent one
        let (_silent_client, silent) = pair().await;
        let (second, _) = conns.admit(&silent).unwrap();
        // WHEN a third connects
        let (_third_client, third) = pair().await;
        let (_, slot) = conns.admit(&third).unwrap();
        // THEN the silent one made room, and the one that sent bytes is kept
        let open = conns.open.lock().unwrap();
        assert!(
            open.contains_key(&first),
            "the sending connection was closed"
        );
        assert!(
            !open.contains_key(&second),
            "the silent connection was kept"
        );
        assert_eq!(conns.evicted.load(Ordering::Relaxed), 1);
        // AND the newcomer, silent too, is not marked as having spoken
        assert!(!slot.spoke.load(Ordering::Relaxed));
    }

    #[test]
    fn the_environment_sets_each_bound_and_a_bad_value_names_its_variable() {
        let vars = |set: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                set.iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let d = Hygiene::default();
        assert_eq!(Hygiene::from_vars(vars(&[])), Ok(d));
        let h = Hygiene::from_vars(vars(&[
            ("NATIVE_HTTP_HEADER_TIMEOUT_S", "3"),
            ("NATIVE_HTTP_THREADS", " 0 "),
        ]))
        .unwrap();
        assert_eq!((h.header_timeout, h.threads), (Duration::from_secs(3), 0));
        for (name, bad) in [
            ("NATIVE_HTTP_THREADS", "1025"),
            ("NATIVE_HTTP_THREADS", "-1"),
            ("NATIVE_HTTP_THREADS", "two"),
            ("NATIVE_HTTP_BODY_TIMEOUT_S", "0"),
        ] {
            let e = Hygiene::from_vars(move |n: &str| (n == name).then(|| bad.to_string()))
                .unwrap_err();
            assert!(e.starts_with(&format!("{name}={bad:?} is not")), "{e}");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn each_connection_is_served_whole_on_one_lane_and_open_ones_spread_over_them() {
        // The handler answers the name of the thread that serves it.
        let app = Router::new().route(
            "/",
            axum::routing::get(|| async {
                std::thread::current().name().unwrap_or("").to_string()
            }),
        );
        let (addr, _stop) = start_app(app, Duration::from_secs(5), 16).await;
        // Two kept-alive connections, open together, three requests each.
        let mut senders = Vec::new();
        for _ in 0..2 {
            let io = TokioIo::new(TcpStream::connect(addr).await.unwrap());
            let (send, conn) = hyper::client::conn::http1::handshake(io).await.unwrap();
            tokio::spawn(conn);
            senders.push(send);
        }
        let mut threads = Vec::new();
        for send in &mut senders {
            let mut names = std::collections::BTreeSet::new();
            for _ in 0..3 {
                let req = hyper::Request::get(format!("http://{addr}/"))
                    .body(Empty::<bytes::Bytes>::new())
                    .unwrap();
                // The connection task takes the last response's end before it is ready again.
                send.ready().await.unwrap();
                let res = send.send_request(req).await.unwrap();
                let body = res.into_body().collect().await.unwrap().to_bytes();
                names.insert(String::from_utf8(body.to_vec()).unwrap());
            }
            assert_eq!(names.len(), 1, "one connection, one thread: {names:?}");
            let name = names.pop_first().unwrap();
            assert!(name.starts_with("native-http-"), "served on {name:?}");
            threads.push(name);
        }
        assert_ne!(
            threads[0], threads[1],
            "the second connection joined the busier lane"
        );
    }
}
