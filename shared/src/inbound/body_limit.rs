//! The request body cap of each route, enforced while the body streams in, and the time a body
//! may take to arrive. A declared `Content-Length` over the cap is answered 413 before a byte of
//! the body is read; a body without one (chunked) is cut where it passes the cap and answered
//! 413 without being kept; a body still arriving when its time is up (a chunked body that never
//! ends, a trickle) is answered 408. The handlers behind keep their own checks: this layer makes
//! sure that no route, however it reads its body, holds more than its cap or waits for ever.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};

use super::{rendezvous, ApiError, Code, MAX_BODY_BYTES};

/// The largest rendezvous API request: its messages are small (names of 128 bytes, a
/// description of 1 KB, 32 metadata entries of at most 384 bytes; 16 KB as plain JSON, about
/// 80 KB with every character `\u`-escaped), so that a body cannot make the JSON parser build
/// tens of megabytes.
pub const MAX_RENDEZVOUS_BODY_BYTES: usize = 256 * 1024;

/// The largest body of a route that takes none or a small one (`/healthz`, callbacks' outcomes,
/// unknown paths).
pub const MAX_SMALL_BODY_BYTES: usize = 16 * 1024;

/// The cap of the route at `path`, and its name for the error.
pub fn cap_of(path: &str) -> (usize, &'static str) {
    if path.starts_with("/v1/invoke/") {
        (MAX_BODY_BYTES, "POST /v1/invoke/{script}")
    } else if path
        .strip_prefix(rendezvous::SERVICE)
        .is_some_and(|rest| rest.starts_with('/'))
    {
        (MAX_RENDEZVOUS_BODY_BYTES, "the rendezvous API")
    } else if path.starts_with("/v1/callback/") {
        (MAX_SMALL_BODY_BYTES, "POST /v1/callback/{token}")
    } else {
        (MAX_SMALL_BODY_BYTES, "this path")
    }
}

const FINE: u8 = 0;
const TOO_LARGE: u8 = 1;
const TOO_SLOW: u8 = 2;

/// The middleware: [`cap_of`] the route, and `timeout` for the whole body.
pub async fn limit(timeout: Duration, req: Request, next: Next) -> Response {
    limit_with(timeout, req, |req| next.run(req)).await
}

/// [`limit`] around `run`, a handler of the request called directly rather than as a
/// middleware's [`Next`] (which boxes its service and future for every request).
pub async fn limit_with<F, Fut>(timeout: Duration, req: Request, run: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let (cap, route) = cap_of(req.uri().path());
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > cap as u64) {
        return too_large(cap, route, declared);
    }
    let state = Arc::new(AtomicU8::new(FINE));
    let (parts, body) = req.into_parts();
    let body = Body::new(Capped {
        inner: body,
        left: cap,
        deadline: Box::pin(tokio::time::sleep(timeout)),
        state: state.clone(),
    });
    let resp = run(Request::from_parts(parts, body)).await;
    // Whatever the handler made of the cut body, the caller learns why it was cut.
    match state.load(Ordering::Acquire) {
        TOO_LARGE => too_large(cap, route, None),
        TOO_SLOW => too_slow(timeout),
        _ => resp,
    }
}

fn closing(mut r: Response) -> Response {
    // The rest of the body is never read: the connection cannot carry another request.
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

fn too_large(cap: usize, route: &str, declared: Option<u64>) -> Response {
    let size = match declared {
        Some(n) => format!("{n} bytes"),
        None => format!("over {cap} bytes"),
    };
    closing(
        ApiError::new(
            Code::PayloadTooLarge,
            format!(
                "the request body is {size}; {route} takes at most {cap} bytes; put large data in a bucket and send its key"
            ),
        )
        .into_response(),
    )
}

fn too_slow(timeout: Duration) -> Response {
    let body = serde_json::json!({
        "code": "deadline_exceeded",
        "message": format!(
            "the request body did not arrive within {} s; send it whole, at once",
            timeout.as_secs()
        ),
    });
    let mut r = (
        StatusCode::REQUEST_TIMEOUT,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response();
    r.extensions_mut().insert(super::access_log::ErrorNote(
        body["message"].as_str().unwrap_or_default().into(),
    ));
    closing(r)
}

/// A body that fails once it has given more than its cap, or when its deadline passes.
struct Capped {
    inner: Body,
    left: usize,
    deadline: Pin<Box<tokio::time::Sleep>>,
    state: Arc<AtomicU8>,
}

#[derive(Debug)]
struct Cut(&'static str);

impl std::fmt::Display for Cut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Cut {}

impl HttpBody for Capped {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    if data.len() > this.left {
                        this.state.store(TOO_LARGE, Ordering::Release);
                        return Poll::Ready(Some(Err(
                            Cut("the request body is over its cap").into()
                        )));
                    }
                    this.left -= data.len();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(other) => Poll::Ready(other.map(|r| r.map_err(Into::into))),
            Poll::Pending => {
                if this.deadline.as_mut().poll(cx).is_ready() {
                    this.state.store(TOO_SLOW, Ordering::Release);
                    return Poll::Ready(Some(Err(Cut("the request body took too long").into())));
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_has_its_cap() {
        assert_eq!(cap_of("/v1/invoke/x").0, MAX_BODY_BYTES);
        assert_eq!(
            cap_of("/com.evrblk.grackle.v1beta.GrackleApi/CreateBarrier").0,
            MAX_RENDEZVOUS_BODY_BYTES
        );
        assert_eq!(cap_of("/v1/callback/t").0, MAX_SMALL_BODY_BYTES);
        assert_eq!(cap_of("/healthz").0, MAX_SMALL_BODY_BYTES);
        assert_eq!(
            cap_of("/com.evrblk.grackle.v1beta.GrackleApiX/CreateBarrier").0,
            MAX_SMALL_BODY_BYTES
        );
        const { assert!(MAX_RENDEZVOUS_BODY_BYTES <= 1024 * 1024) };
    }
}
