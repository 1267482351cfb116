//! The HTTP client: one request on one connection that this module opens itself. The host is
//! resolved here, every address it resolves to is checked ([`super::address`]), and the TCP
//! connection goes to a checked address; TLS (rustls on ring, the system's roots) verifies the
//! host's name on top. hyper speaks HTTP/1.1 over it. Redirects are answers, never followed;
//! the body is read as it streams and stops at the cap.

use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::header::{HeaderName, HeaderValue, CONTENT_LENGTH, HOST, USER_AGENT};
use hyper::Method;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::rustls::{self, pki_types::ServerName};

use super::address::refusal;
use super::target::Target;

/// A request, ready to send: placeholders already filled.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method.
    pub method: Method,
    /// Where it goes.
    pub target: Target,
    /// Headers, in order.
    pub headers: Vec<(HeaderName, HeaderValue)>,
    /// The body (empty for none).
    pub body: Bytes,
}

/// A response: any status is one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    /// The status code.
    pub status: u16,
    /// Header names (lowercase) and values, in order; a repeated header appears once per value.
    pub headers: Vec<(String, Vec<u8>)>,
    /// The body.
    pub body: Vec<u8>,
}

/// Why no response arrived.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// The address is in a range the platform refuses.
    Refused(String),
    /// The name did not resolve, or the connection or TLS failed.
    Connect(String),
    /// The body is larger than the cap (in bytes).
    TooLarge(u64),
    /// The server broke the protocol or the connection dropped mid-answer.
    Protocol(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Refused(m) | Failure::Connect(m) | Failure::Protocol(m) => f.write_str(m),
            Failure::TooLarge(max) => write!(f, "the response body is larger than {max} bytes"),
        }
    }
}

/// What the deployment and the tenant allow a request.
#[derive(Debug, Clone, Copy)]
pub struct Policy {
    /// Private, loopback and link-local addresses may be reached (tests only).
    pub allow_private: bool,
    /// The largest body read, in bytes.
    pub max_body: u64,
}

/// What answers requests in place of the network, in a process that set one ([`intercept`]).
pub trait Intercept: Send + Sync {
    /// The answer to `req` (its vault placeholders filled, as the remote end would see it).
    fn answer(&self, req: &Request) -> Result<Response, Failure>;
}

/// The process's [`Intercept`], if it set one.
static INTERCEPT: std::sync::RwLock<Option<Arc<dyn Intercept>>> = std::sync::RwLock::new(None);

/// Has every later request of this process answered by `with` instead of the network, or,
/// with `None`, sent again: `native test`'s stubs of outbound HTTP, one test at a time.
pub fn intercept(with: Option<Arc<dyn Intercept>>) {
    *INTERCEPT.write().unwrap_or_else(|p| p.into_inner()) = with;
}

/// Sends `req` and reads the whole response, within `policy`. No timeout here: the caller
/// bounds the whole exchange.
pub async fn send(req: Request, policy: Policy) -> Result<Response, Failure> {
    let stub = INTERCEPT.read().unwrap_or_else(|p| p.into_inner()).clone();
    if let Some(stub) = stub {
        // A stub's answer is held to the tenant's cap as the network's is.
        return stub.answer(&req).and_then(|r| {
            if r.body.len() as u64 > policy.max_body {
                Err(Failure::TooLarge(policy.max_body))
            } else {
                Ok(r)
            }
        });
    }
    let t = &req.target;
    let addrs = resolve(t, policy).await?;
    let mut last = String::new();
    for addr in addrs {
        match TcpStream::connect(addr).await {
            Ok(tcp) => {
                let _ = tcp.set_nodelay(true);
                return if t.https {
                    let name = ServerName::try_from(t.host.clone()).map_err(|_| {
                        Failure::Connect(format!("{:?} is not a name TLS can verify", t.host))
                    })?;
                    let tls = tokio_rustls::TlsConnector::from(tls_config()?)
                        .connect(name, tcp)
                        .await
                        .map_err(|e| Failure::Connect(format!("TLS with {}: {e}", t.host)))?;
                    exchange(tls, req, policy).await
                } else {
                    exchange(tcp, req, policy).await
                };
            }
            Err(e) => last = format!("cannot connect to {} ({addr}): {e}", t.host),
        }
    }
    Err(Failure::Connect(last))
}

/// The addresses of the target's host, every one checked: a name that resolves to any refused
/// address is refused, so a record set that mixes public and private answers gains nothing.
async fn resolve(t: &Target, policy: Policy) -> Result<Vec<SocketAddr>, Failure> {
    let addrs: Vec<SocketAddr> = match t.host.parse::<IpAddr>() {
        Ok(ip) => vec![SocketAddr::new(ip, t.port)],
        Err(_) => tokio::net::lookup_host((t.host.as_str(), t.port))
            .await
            .map_err(|e| Failure::Connect(format!("cannot resolve {}: {e}", t.host)))?
            .collect(),
    };
    if addrs.is_empty() {
        return Err(Failure::Connect(format!(
            "{} resolves to no address",
            t.host
        )));
    }
    if !policy.allow_private {
        for a in &addrs {
            if let Some(why) = refusal(a.ip()) {
                return Err(Failure::Refused(format!(
                    "{} resolves to {}, which is {why}; requests to private, loopback, link-local, special-purpose and this machine's own addresses are refused (a deployment that must reach them, such as tests against a local server, sets \"http\": {{ \"allow_private_networks\": true }} in deployment.json, or NATIVE_HTTP_ALLOW_PRIVATE_NETWORKS=true on AWS)",
                    t.host,
                    a.ip()
                )));
            }
        }
    }
    Ok(addrs)
}

/// The TLS configuration: rustls on ring, HTTP/1.1, the system's root certificates (read once).
fn tls_config() -> Result<Arc<rustls::ClientConfig>, Failure> {
    static CONFIG: OnceLock<Result<Arc<rustls::ClientConfig>, String>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let mut roots = rustls::RootCertStore::empty();
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
            if roots.is_empty() {
                return Err(
                    "no root certificates found on this system (install ca-certificates)".into(),
                );
            }
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(roots)
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        })
        .clone()
        .map_err(Failure::Connect)
}

/// One HTTP/1.1 exchange on an open connection.
async fn exchange<S>(io: S, req: Request, policy: Policy) -> Result<Response, Failure>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let host = req.target.host.clone();
    // A HEAD answer declares the length of a body it does not send.
    let is_head = req.method == Method::HEAD;
    let proto = |e: hyper::Error| Failure::Protocol(format!("{host}: {e}"));
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(proto)?;
    // The connection task ends when the response is read or dropped.
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut builder = hyper::Request::builder()
        .method(req.method)
        .uri(req.target.path.as_str())
        .header(HOST, req.target.authority());
    let mut has_agent = false;
    for (name, value) in req.headers {
        has_agent |= name == USER_AGENT;
        builder = builder.header(name, value);
    }
    if !has_agent {
        builder = builder.header(USER_AGENT, concat!("native/", env!("CARGO_PKG_VERSION")));
    }
    let request = builder
        .body(Full::new(req.body))
        .map_err(|e| Failure::Protocol(format!("the request cannot be sent: {e}")))?;
    let resp = sender.send_request(request).await.map_err(proto)?;
    let status = resp.status().as_u16();
    let declared = resp
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if !is_head && declared.is_some_and(|n| n > policy.max_body) {
        return Err(Failure::TooLarge(policy.max_body));
    }
    let headers = resp
        .headers()
        .iter()
        .map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec()))
        .collect();
    let mut body = resp.into_body();
    let mut out: Vec<u8> = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(proto)?;
        if let Ok(data) = frame.into_data() {
            if out.len() as u64 + data.len() as u64 > policy.max_body {
                return Err(Failure::TooLarge(policy.max_body));
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(Response {
        status,
        headers,
        body: out,
    })
}
