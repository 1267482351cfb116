//! Serving HTTP/1 connections with bounds that a hostile client cannot stretch: headers must
//! arrive within a time (slowloris), a connection waiting for its next request is closed after
//! the same time (idle keep-alive), bodies are capped per route and must arrive within a time
//! ([`super::body_limit`]), and the number of open connections is capped. At the cap a new
//! connection closes the oldest one that has no request in flight (an idle or half-sent one,
//! as nginx reclaims keep-alive connections), so that idle connections cannot lock others out;
//! only when every connection is serving a request is a new one turned away, with a 503.
//!
//! Used by every long-running listener: `native serve` and the Fargate server.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hygiene {
    /// See the table above.
    pub header_timeout: Duration,
    /// See the table above.
    pub body_timeout: Duration,
    /// See the table above.
    pub max_connections: usize,
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
        }
    }
}

impl Hygiene {
    /// The defaults, overridden by the environment (see [`Hygiene`]); a value that is not a
    /// positive whole number is an error naming the variable.
    pub fn from_env() -> Result<Self, String> {
        let d = Hygiene::default();
        let read = |name: &str, default: u64| -> Result<u64, String> {
            match std::env::var(name) {
                Err(_) => Ok(default),
                Ok(v) => v.trim().parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("{name}={v:?} is not a positive whole number; unset it for the default {default}")
                }),
            }
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

/// One open connection.
struct Slot {
    /// Requests it is serving (0 or 1 on HTTP/1).
    busy: AtomicUsize,
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
            evict: Notify::new(),
        });
        open.insert(id, slot.clone());
        Some((id, slot))
    }

    fn evict_idle(&self, open: &mut BTreeMap<u64, Arc<Slot>>) -> bool {
        let idle = open
            .iter()
            .find(|(_, s)| s.busy.load(Ordering::Acquire) == 0)
            .map(|(id, _)| *id);
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

/// Marks a connection busy while a request is served.
struct Busy(Arc<Slot>);

impl Busy {
    fn new(slot: &Arc<Slot>) -> Self {
        slot.busy.fetch_add(1, Ordering::AcqRel);
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

/// Serves `app` on `listener` within `hygiene` until `stop` resolves; then stops accepting,
/// lets each connection finish the request it is serving (idle ones close at once) for at
/// most `grace`, and closes what is left.
pub async fn serve_app(
    listener: TcpListener,
    app: Router,
    hygiene: Hygiene,
    stop: impl Future<Output = ()>,
    grace: Duration,
) -> Served {
    let timeout = hygiene.body_timeout;
    let app = app.layer(axum::middleware::from_fn(move |req, next| {
        super::body_limit::limit(timeout, req, next)
    }));
    let conns = Arc::new(Conns {
        open: Mutex::new(BTreeMap::new()),
        next: AtomicU64::new(0),
        cap: hygiene.max_connections.max(1),
        evicted: AtomicU64::new(0),
        refused: AtomicU64::new(0),
    });
    let (shutdown, stopping) = watch::channel(false);
    let mut tasks = tokio::task::JoinSet::new();
    let mut stop = std::pin::pin!(stop);
    loop {
        tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => match conns.admit() {
                    Some((id, slot)) => {
                        let conns = conns.clone();
                        let app = app.clone();
                        let stopping = stopping.clone();
                        tasks.spawn(async move {
                            connection(stream, app, hygiene, slot, stopping).await;
                            conns.close(id);
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

/// Serves one connection until it closes, is closed to make room, or the server stops.
async fn connection(
    stream: TcpStream,
    app: Router,
    hygiene: Hygiene,
    slot: Arc<Slot>,
    mut stopping: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
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
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(hygiene.header_timeout)
        .keep_alive(true)
        .serve_connection(TokioIo::new(stream), service);
    let mut conn = std::pin::pin!(conn);
    if *stopping.borrow() {
        conn.as_mut().graceful_shutdown();
    }
    let mut draining = false;
    loop {
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = slot.evict.notified() => return,
            changed = stopping.changed(), if !draining => {
                draining = true;
                if changed.is_ok() {
                    conn.as_mut().graceful_shutdown();
                }
            }
        }
    }
}
