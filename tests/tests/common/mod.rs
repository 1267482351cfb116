//! A real HTTP server on 127.0.0.1 for the outbound HTTP tests: it echoes requests, answers
//! slowly, redirects, sends big bodies, and echoes an authorization header back in every
//! encoding a careless API might.

#![allow(dead_code)]

pub mod console;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, Response, StatusCode};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use http_body_util::BodyExt;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// A running test server.
pub struct Server {
    /// Its port on 127.0.0.1 (axum).
    pub port: u16,
    /// A second port that streams a 2 MB body with chunked encoding (no content-length).
    pub chunked_port: u16,
    /// Requests received.
    pub hits: Arc<AtomicUsize>,
    /// Requests being served right now, and the most at once.
    pub running: Arc<AtomicUsize>,
    /// The most requests served at once.
    pub peak: Arc<AtomicUsize>,
    /// The last authorization header received.
    pub last_auth: Arc<Mutex<Option<String>>>,
    /// The last body received.
    pub last_body: Arc<Mutex<String>>,
}

impl Server {
    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

/// The forms of `secret` that `/leak` echoes.
pub fn leak_forms(secret: &str) -> Vec<String> {
    let pct = utf8_percent_encode(secret, NON_ALPHANUMERIC).to_string();
    vec![
        secret.to_string(),
        STANDARD.encode(secret),
        URL_SAFE_NO_PAD.encode(secret),
        STANDARD.encode(format!("user:{secret}")),
        pct.clone(),
        pct.to_lowercase(),
        hex::encode(secret),
        hex::encode_upper(secret),
    ]
}

/// Starts the server; it runs until the test's runtime ends.
pub async fn server() -> Server {
    let hits = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let last_auth = Arc::new(Mutex::new(None));
    let last_body = Arc::new(Mutex::new(String::new()));
    let (h, r, pk, a, b) = (
        hits.clone(),
        running.clone(),
        peak.clone(),
        last_auth.clone(),
        last_body.clone(),
    );
    let app = axum::Router::new().fallback(move |req: Request<Body>| {
        let (h, r, pk, a, b) = (h.clone(), r.clone(), pk.clone(), a.clone(), b.clone());
        async move {
            h.fetch_add(1, Ordering::SeqCst);
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            pk.fetch_max(now, Ordering::SeqCst);
            let out = handle(req, a, b).await;
            r.fetch_sub(1, Ordering::SeqCst);
            out
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let raw = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let chunked_port = raw.local_addr().unwrap().port();
    let h = hits.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = raw.accept().await {
            h.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
                    .await;
                let chunk = vec![b'x'; 64 * 1024];
                for _ in 0..32 {
                    let head = format!("{:x}\r\n", chunk.len());
                    if s.write_all(head.as_bytes()).await.is_err()
                        || s.write_all(&chunk).await.is_err()
                        || s.write_all(b"\r\n").await.is_err()
                    {
                        return;
                    }
                }
                let _ = s.write_all(b"0\r\n\r\n").await;
            });
        }
    });
    Server {
        port,
        chunked_port,
        hits,
        running,
        peak,
        last_auth,
        last_body,
    }
}

fn query(uri: &axum::http::Uri, key: &str) -> Option<String> {
    uri.query()?.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then(|| v.to_string())
    })
}

async fn handle(
    req: Request<Body>,
    last_auth: Arc<Mutex<Option<String>>>,
    last_body: Arc<Mutex<String>>,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    let body = String::from_utf8_lossy(&body).into_owned();
    let auth = parts
        .headers
        .get("authorization")
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    *last_auth.lock().unwrap() = auth.clone();
    *last_body.lock().unwrap() = body.clone();
    let path = parts.uri.path().to_string();
    let ok = |status: u16, ctype: &str, body: Vec<u8>| {
        Response::builder()
            .status(status)
            .header("content-type", ctype)
            .body(Body::from(body))
            .unwrap()
    };
    match path.as_str() {
        "/echo" => {
            let headers: serde_json::Map<String, serde_json::Value> = parts
                .headers
                .iter()
                .map(|(k, v)| {
                    (
                        k.to_string(),
                        String::from_utf8_lossy(v.as_bytes()).into_owned().into(),
                    )
                })
                .collect();
            let echo = json!({ "method": parts.method.as_str(), "uri": parts.uri.to_string(), "headers": headers, "body": body });
            ok(200, "application/json", echo.to_string().into_bytes())
        }
        "/charges" => {
            // Echoes the credentials back, as a careless API might.
            let out = json!({ "id": "ch_1", "amount": serde_json::from_str::<serde_json::Value>(&body).ok().and_then(|v| v.get("amount").cloned()), "auth": auth });
            ok(201, "application/json", out.to_string().into_bytes())
        }
        "/redirect" => Response::builder()
            .status(302)
            .header("location", "/echo")
            .body(Body::empty())
            .unwrap(),
        "/slow" => {
            let ms = query(&parts.uri, "ms")
                .and_then(|v| v.parse().ok())
                .unwrap_or(4000);
            tokio::time::sleep(Duration::from_millis(ms)).await;
            ok(200, "text/plain", b"slow answer".to_vec())
        }
        "/big" => {
            let n = query(&parts.uri, "bytes")
                .and_then(|v| v.parse().ok())
                .unwrap_or(2 * 1024 * 1024);
            ok(200, "application/octet-stream", vec![b'x'; n])
        }
        "/leak" => {
            let secret = auth
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "))
                .unwrap_or("")
                .to_string();
            let forms = leak_forms(&secret);
            let mut resp = Response::builder().status(200);
            for (i, f) in forms.iter().enumerate() {
                resp = resp.header(format!("x-echo-{i}"), f.as_bytes());
            }
            resp.header("x-echo", forms[1].as_bytes())
                .body(Body::from(forms.join("\n")))
                .unwrap()
        }
        p if p.starts_with("/status/") => {
            let code: u16 = p[8..].parse().unwrap_or(500);
            ok(
                code,
                "text/plain",
                StatusCode::from_u16(code).unwrap().to_string().into_bytes(),
            )
        }
        _ => ok(404, "text/plain", b"no such path".to_vec()),
    }
}
