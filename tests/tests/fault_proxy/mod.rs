//! A fault-injecting HTTP proxy between the AWS SDK and the emulator (moto): the SDK's clients
//! point at it (`emulator_sdk_config(&proxy.endpoint)`), and it forwards each request to moto
//! over a connection of its own, or, for a seeded share of the requests it is told to pick,
//! fails it the ways AWS and networks fail:
//!
//! - `Throttle`: the service's own throttling error, in its own format (DynamoDB's
//!   `ThrottlingException`, SQS's `RequestThrottled`, S3's `503 SlowDown`, STS's `Throttling`);
//! - `ServerError`: a 500 or 503 in the service's format, without forwarding;
//! - `ResetBefore`: the connection closed before the request reached moto;
//! - `ResetAfter`: the request forwarded and applied, then the connection closed before the
//!   answer went back (the answer lost: what makes the SDK retry a write that was made);
//! - `Stall`: the request held for a while, then forwarded (a held backend).
//!
//! The faults a request meets are drawn from a seeded generator in the order requests arrive, so
//! a run reproduces with its seed (up to the order of concurrent requests).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

/// One way a request fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The service's throttling error, in its format.
    Throttle,
    /// A 500 or 503 in the service's format, the request not forwarded.
    ServerError,
    /// The connection closed before the request reached the emulator.
    ResetBefore,
    /// The request applied, its answer lost.
    ResetAfter,
    /// The request held for [`Faults::stall`], then forwarded.
    Stall,
}

/// Which service and operation a request is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// `dynamodb`, `sqs`, `s3`, `sts`, `secretsmanager`.
    pub service: &'static str,
    /// The operation: `PutItem`, `SendMessage`, ...; for S3 the HTTP method.
    pub op: String,
}

/// Which requests may meet a fault.
pub type Pick = Box<dyn Fn(&Call) -> bool + Send + Sync>;

/// What the proxy does.
pub struct Faults {
    /// The generator's seed.
    pub seed: u64,
    /// The share of the picked requests that meet a fault, 0 to 1.
    pub rate: f64,
    /// The faults, drawn evenly.
    pub kinds: Vec<Fault>,
    /// How long a stalled request is held.
    pub stall: Duration,
    /// Which requests may meet a fault (every one when `None`).
    pub pick: Option<Pick>,
    /// At most one fault for each request (by its body): the SDK's retry of it goes through,
    /// so that a test sees what a retry makes of a fault, not the SDK giving up.
    pub once: bool,
}

impl Faults {
    /// `rate` of every request, with every kind of fault, stalls of `stall`.
    pub fn all(seed: u64, rate: f64, stall: Duration) -> Self {
        Faults {
            seed,
            rate,
            kinds: vec![
                Fault::Throttle,
                Fault::ServerError,
                Fault::ResetBefore,
                Fault::ResetAfter,
                Fault::Stall,
            ],
            stall,
            pick: None,
            once: false,
        }
    }
}

/// What the proxy saw.
#[derive(Debug, Default, Clone)]
pub struct Seen {
    /// Requests received.
    pub requests: u64,
    /// Faults injected, by kind and call.
    pub faults: Vec<(Fault, Call)>,
    /// Every request, in order of arrival: its call, and what it asks for (for S3 the method,
    /// path and query; else its body, where a DynamoDB request names its keys and items).
    pub calls: Vec<(Call, String)>,
}

impl Seen {
    /// How many faults of `kind` were injected.
    pub fn count(&self, kind: Fault) -> usize {
        self.faults.iter().filter(|(k, _)| *k == kind).count()
    }
}

struct State {
    upstream: String,
    faults: Mutex<Faults>,
    draws: AtomicU64,
    seen: Mutex<Seen>,
    /// The bodies of the requests that met a fault (with [`Faults::once`]).
    faulted: Mutex<std::collections::HashSet<Bytes>>,
}

/// A running proxy; stops when dropped.
pub struct Proxy {
    /// `http://127.0.0.1:<port>`: the endpoint to give the SDK.
    pub endpoint: String,
    state: Arc<State>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy to the emulator at `upstream` (`http://host:port`) on a free port.
    pub async fn start(upstream: &str, faults: Faults) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            upstream: upstream
                .trim_start_matches("http://")
                .trim_end_matches('/')
                .to_string(),
            faults: Mutex::new(faults),
            draws: AtomicU64::new(0),
            seen: Mutex::new(Seen::default()),
            faulted: Mutex::default(),
        });
        let st = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let st = st.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| serve(st.clone(), req));
                    // An error here is a connection the proxy (or the client) cut: expected.
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Proxy {
            endpoint,
            state,
            task,
        }
    }

    /// What the proxy saw so far.
    pub fn seen(&self) -> Seen {
        self.state.seen.lock().unwrap().clone()
    }

    /// Changes the share of requests that meet a fault (0: none from now on).
    pub fn set_rate(&self, rate: f64) {
        self.state.faults.lock().unwrap().rate = rate;
    }
}

/// The next draw of the seeded generator (splitmix64 of the draw's number).
fn draw(st: &State, seed: u64) -> u64 {
    let n = st.draws.fetch_add(1, Ordering::Relaxed);
    let mut z = seed
        .wrapping_add(n.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15))
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Which service and operation a request is, from its `X-Amz-Target` (the JSON protocols),
/// its form body (STS's query protocol) or else S3's REST.
fn call_of(req: &hyper::http::request::Parts, body: &[u8]) -> Call {
    if let Some(t) = req
        .headers
        .get("x-amz-target")
        .and_then(|v| v.to_str().ok())
    {
        let (svc, op) = t.split_once('.').unwrap_or((t, ""));
        let service = match svc {
            s if s.starts_with("DynamoDB") => "dynamodb",
            "AmazonSQS" => "sqs",
            "secretsmanager" => "secretsmanager",
            _ => "other",
        };
        return Call {
            service,
            op: op.to_string(),
        };
    }
    let text = std::str::from_utf8(body).unwrap_or("");
    if let Some(action) = text
        .split('&')
        .find_map(|kv| kv.strip_prefix("Action="))
        .filter(|_| req.method == hyper::Method::POST && req.uri.path() == "/")
    {
        return Call {
            service: "sts",
            op: action.to_string(),
        };
    }
    Call {
        service: "s3",
        op: req.method.to_string(),
    }
}

/// The throttling or server error `call`'s service answers with.
fn error_answer(call: &Call, throttle: bool) -> Response<Full<Bytes>> {
    let (status, ctype, body) = match (call.service, throttle) {
        ("s3", true) => (
            503,
            "application/xml",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>".to_string(),
        ),
        ("s3", false) => (
            500,
            "application/xml",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>".to_string(),
        ),
        ("sts", true) => (
            400,
            "text/xml",
            "<ErrorResponse><Error><Type>Sender</Type><Code>Throttling</Code><Message>Rate exceeded</Message></Error><RequestId>fault</RequestId></ErrorResponse>".to_string(),
        ),
        ("sts", false) => (
            503,
            "text/xml",
            "<ErrorResponse><Error><Type>Receiver</Type><Code>ServiceUnavailable</Code><Message>Service unavailable</Message></Error><RequestId>fault</RequestId></ErrorResponse>".to_string(),
        ),
        ("dynamodb", true) => (
            400,
            "application/x-amz-json-1.0",
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException","message":"Rate of requests exceeds the allowed throughput."}"#.to_string(),
        ),
        ("sqs", true) => (
            400,
            "application/x-amz-json-1.0",
            r#"{"__type":"com.amazonaws.sqs#RequestThrottled","message":"Request is throttled."}"#.to_string(),
        ),
        (_, true) => (
            400,
            "application/x-amz-json-1.1",
            r#"{"__type":"ThrottlingException","message":"Rate exceeded"}"#.to_string(),
        ),
        (_, false) => (
            500,
            "application/x-amz-json-1.0",
            r#"{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError","message":"Internal server error"}"#.to_string(),
        ),
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
    r.headers_mut()
        .insert("content-type", ctype.parse().unwrap());
    r.headers_mut()
        .insert("x-amzn-requestid", "fault-injected".parse().unwrap());
    if throttle && call.service == "sqs" {
        r.headers_mut().insert(
            "x-amzn-query-error",
            "RequestThrottled;Sender".parse().unwrap(),
        );
    }
    r
}

/// The error that makes hyper drop the client's connection without an answer.
#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset by the fault proxy")
    }
}

impl std::error::Error for Reset {}

async fn serve(st: Arc<State>, req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Reset> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.map_err(|_| Reset)?.to_bytes();
    let call = call_of(&parts, &body);
    let fault = {
        let f = st.faults.lock().unwrap();
        let picked = f.pick.as_ref().is_none_or(|p| p(&call));
        let r = draw(&st, f.seed);
        let share = (r >> 11) as f64 / (1u64 << 53) as f64;
        let hit = picked
            && !f.kinds.is_empty()
            && share < f.rate
            && (!f.once || st.faulted.lock().unwrap().insert(body.clone()));
        hit.then(|| (f.kinds[(r % f.kinds.len() as u64) as usize], f.stall))
    };
    {
        let mut seen = st.seen.lock().unwrap();
        seen.requests += 1;
        let asked = match call.service {
            "s3" => format!("{} {}", parts.method, parts.uri),
            _ => String::from_utf8_lossy(&body).into_owned(),
        };
        seen.calls.push((call.clone(), asked));
        if let Some((k, _)) = fault {
            seen.faults.push((k, call.clone()));
        }
    }
    match fault {
        Some((Fault::Throttle, _)) => return Ok(error_answer(&call, true)),
        Some((Fault::ServerError, _)) => return Ok(error_answer(&call, false)),
        Some((Fault::ResetBefore, _)) => return Err(Reset),
        Some((Fault::Stall, d)) => tokio::time::sleep(d).await,
        Some((Fault::ResetAfter, _)) | None => {}
    }
    let answer = forward(&st.upstream, parts, body).await?;
    if matches!(fault, Some((Fault::ResetAfter, _))) {
        return Err(Reset);
    }
    Ok(answer)
}

/// Sends the request to the emulator on a new connection and reads its whole answer.
async fn forward(
    upstream: &str,
    mut parts: hyper::http::request::Parts,
    body: Bytes,
) -> Result<Response<Full<Bytes>>, Reset> {
    let stream = tokio::net::TcpStream::connect(upstream)
        .await
        .map_err(|_| Reset)?;
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|_| Reset)?;
    tokio::spawn(conn);
    // The request line as a client sends it to a server: the path only.
    if let Some(pq) = parts.uri.path_and_query() {
        parts.uri = pq.as_str().parse().map_err(|_| Reset)?;
    }
    let answer = send
        .send_request(Request::from_parts(parts, Full::new(body)))
        .await
        .map_err(|_| Reset)?;
    let (parts, body) = answer.into_parts();
    let body = body.collect().await.map_err(|_| Reset)?.to_bytes();
    Ok(Response::from_parts(parts, Full::new(body)))
}
