//! Serving HTTP/1.1 and HTTP/2 (h2c, for gRPC clients) connections with bounds that a hostile
//! client cannot stretch: headers must arrive within a time (slowloris), a connection waiting
//! for its next request is closed after the same time (idle keep-alive), bodies are capped per
//! route and must arrive within a time ([`super::body_limit`]), and the number of open
//! connections is capped. At the cap a new connection closes the oldest one that has no request
//! in flight (an idle or half-sent one, as nginx reclaims keep-alive connections; one that never
//! sent a byte before one that did), so that idle connections cannot lock others out; only when
//! every connection is serving a request is a new one turned away, with a 503.
//!
//! Which protocol a connection speaks is read from its first bytes (HTTP/2's client preface or
//! not), within the header timeout, so that a client that sends nothing, or a preface a byte at
//! a time, is closed as a slow HTTP/1 client is. An HTTP/2 connection carries at most
//! [`H2_MAX_STREAMS`] requests at once and headers of at most [`H2_MAX_HEADER_BYTES`]; it is
//! pinged while open and closed once it has served nothing for a header timeout.
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

/// The bounds of a listener. [`Hygiene::from_env`] reads them, with these defaults:
///
/// | variable | default | what |
/// | --- | --- | --- |
/// | `NATIVE_HTTP_HEADER_TIMEOUT_S` | 10 | a request's headers must arrive within, counted from when the connection is ready for it (so also the longest idle keep-alive) |
/// | `NATIVE_HTTP_BODY_TIMEOUT_S` | 60 | a request's body must arrive within |
/// | `NATIVE_HTTP_MAX_CONNECTIONS` | 10 000, or three quarters of the open-files limit if lower | connections open at once |
/// | `NATIVE_HTTP_THREADS` | the cores the process may use | threads serving connections, each a lane of its own ([`super::lanes`]; the first listener of a process starts them); 0 serves connections on the caller's runtime, at most 1024 |
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
    /// Told when the connection is closed to make room.
    evict: Notify,
}

/// The open connections, oldest first.
struct Conns {
    open: Mutex<BTreeMap<u64, Arc<Slot>>>,
    next: AtomicU64,
    cap: usize,
    /// Connections closed to make room, and turned away, for people and tests.
    evicted: AtomicU64,
    refused: AtomicU64,
}

impl Conns {
    /// A slot for a new connection: past the cap, the oldest connection without a request in
    /// flight is closed to make room; `None` when every connection is serving one.
    fn admit(&self) -> Option<(u64, Arc<Slot>)> {
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
            evict: Notify::new(),
        });
        open.insert(id, slot.clone());
        Some((id, slot))
    }

    fn evict_idle(&self, open: &mut BTreeMap<u64, Arc<Slot>>) -> bool {
        // The oldest connection that never sent a byte, else the oldest without a request in
        // flight: a client that connected and is sending its request keeps its place while
        // silent connections remain to close.
        let idle = |silent: bool| {
            open.iter()
                .find(|(_, s)| {
                    s.busy.load(Ordering::Acquire) == 0
                        && !(silent && s.spoke.load(Ordering::Relaxed))
                })
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

    fn close(&self, id: u64) {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
    }
}

/// Closes a connection's slot when dropped.
struct Close(Arc<Conns>, u64);

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
    let conns = Arc::new(Conns {
        open: Mutex::new(BTreeMap::new()),
        next: AtomicU64::new(0),
        cap: hygiene.max_connections.max(1),
        evicted: AtomicU64::new(0),
        refused: AtomicU64::new(0),
    });
    let (shutdown, stopping) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    // Each connection is served whole on one thread of its own lane (`super::lanes`).
    let lanes = super::lanes::Lanes::get(hygiene.threads);
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match conns.admit() {
                    Some((id, slot)) => {
                        // The slot is closed when the connection ends, also when it never
                        // starts (its socket could not move to its lane).
                        let close = Close(conns.clone(), id);
                        let app = app.clone();
                        let stopping = stopping.clone();
                        lanes.spawn(&mut tasks, stream, move |stream| async move {
                            let _close = close;
                            connection(stream, app, hygiene, slot, stopping).await;
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
    mut stream: TcpStream,
    app: S,
    hygiene: Hygiene,
    slot: Arc<Slot>,
    stopping: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    // The protocol, from the first bytes, which must come within the header timeout.
    let first = tokio::select! {
        r = tokio::time::timeout(hygiene.header_timeout, sniff(&mut stream)) => r,
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
        let busy = Busy::new(&for_requests);
        let app = app.clone();
        async move {
            let r = app.oneshot(req.map(Body::new)).await;
            drop(busy);
            r
        }
    });
    let io = TokioIo::new(Prefixed {
        prefix,
        at: 0,
        inner: stream,
    });
    if h2 {
        let conn = http2::Builder::new(TokioExecutor::new())
            .timer(TokioTimer::new())
            .max_concurrent_streams(H2_MAX_STREAMS)
            .max_header_list_size(H2_MAX_HEADER_BYTES)
            .keep_alive_interval(Some(hygiene.header_timeout))
            .keep_alive_timeout(hygiene.header_timeout)
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
struct Prefixed {
    prefix: Vec<u8>,
    at: usize,
    inner: TcpStream,
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
        std::pin::Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Prefixed {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> std::task::Poll<std::io::Result<usize>> {
        std::pin::Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
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

/// Drives a connection until it ends, is evicted, or the server stops (then gracefully). An
/// HTTP/2 connection (`idle_close`) that began no request for a whole header timeout, and
/// serves none, is closed as HTTP/1's idle keep-alive is.
async fn drive<C: Graceful>(
    conn: C,
    hygiene: Hygiene,
    slot: &Slot,
    mut stopping: watch::Receiver<bool>,
    idle_close: bool,
) {
    let mut conn = std::pin::pin!(conn);
    if *stopping.borrow() {
        conn.as_mut().graceful();
    }
    let mut draining = false;
    let mut idle = tokio::time::interval(hygiene.header_timeout);
    idle.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    idle.tick().await;
    let mut seen = slot.begun.load(Ordering::Relaxed);
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = slot.evict.notified() => return,
            changed = stopping.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    conn.as_mut().graceful();
                }
            }
            _ = idle.tick(), if idle_close && !draining => {
                let begun = slot.begun.load(Ordering::Relaxed);
                if begun == seen && slot.busy.load(Ordering::Acquire) == 0 {
                    draining = true;
                    conn.as_mut().graceful();
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
        let listener = bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hygiene = Hygiene {
            header_timeout,
            body_timeout: Duration::from_secs(5),
            max_connections,
            threads: 2,
        };
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
