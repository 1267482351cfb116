//! `POST /v1/invoke/{script}`: runs `on_invoke` of the caller's tenant's script with the body
//! as the event and answers its return value as JSON.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use super::{tenant_of, ApiError, Code, MAX_BODY_BYTES};
use crate::engine::Answer;
use crate::host::Reply;
use crate::runtime::Runtime;

/// The route's path up to the script's name.
const PREFIX: &str = "/v1/invoke/";

/// The handler, as the router calls it: for a name with percent-escapes, which its `Path`
/// decodes ([`direct`] takes the others).
pub(super) async fn invoke(
    State(rt): State<Arc<Runtime>>,
    Path(script): Path<String>,
    req: Request,
) -> Result<Response, ApiError> {
    handle(&rt, &script, req).await
}

/// Whether `req` is `POST /v1/invoke/{script}` with a name the router would pass on as it is
/// (one segment, no percent-escapes): such a request is answered by [`direct`] without the
/// router, whose lookup, URL parameters (three allocations into the request's extensions) and
/// boxed futures were a measurable part of a no-op invocation (BENCHMARKS.md, Figures behind
/// the code).
pub(super) fn is_direct(req: &Request) -> bool {
    req.method() == axum::http::Method::POST
        && req
            .uri()
            .path()
            .strip_prefix(PREFIX)
            .is_some_and(|name| !name.is_empty() && !name.contains(['/', '%']))
}

/// The handler for a request [`is_direct`] takes.
pub(super) async fn direct(rt: &Arc<Runtime>, req: Request) -> Response {
    // The URI shares hyper's buffer: a clone counts a reference.
    let uri = req.uri().clone();
    let script = uri.path().strip_prefix(PREFIX).unwrap_or_default();
    // Boxed, as the router boxes a handler's future: the run's future is kilobytes, and held
    // inline it would be copied with every future around it (the access log's, the body
    // limit's), more `memcpy` than the router had cost (BENCHMARKS.md, Figures behind the
    // code).
    Box::pin(handle(rt, script, req)).await.into_response()
}

async fn handle(rt: &Runtime, script: &str, req: Request) -> Result<Response, ApiError> {
    // The request taken whole: its headers are read in place, not copied out (axum's
    // `HeaderMap` extractor clones them).
    let (parts, body) = req.into_parts();
    let headers = &parts.headers;
    let tenant = tenant_of(rt, headers).await?;
    let body = read_body(headers, body).await?;
    // An empty body is the event `{}`; any other is parsed by the engine, straight onto the
    // script's heap.
    let body = if body.iter().all(u8::is_ascii_whitespace) {
        bytes::Bytes::from_static(b"{}")
    } else {
        body
    };
    Ok(match rt.invoke_http(&tenant, script, body).await? {
        Answer::Json(text) => json(text),
        Answer::Value(v) => json(v.to_string().into_bytes()),
        Answer::Reply(r) => reply(r),
    })
}

fn json(text: Vec<u8>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        text,
    )
        .into_response()
}

/// The answer a script chose with `native.response`, its headers checked when it was made.
/// Every such answer is sandboxed (`Content-Security-Policy: sandbox`) and not sniffed: a
/// tenant's HTML then runs in an origin of its own, never in the one the console and every
/// other tenant share.
fn reply(r: Reply) -> Response {
    let content_type = r.default_content_type();
    let mut out = Response::new(Body::from(r.body));
    *out.status_mut() = StatusCode::from_u16(r.status).unwrap_or(StatusCode::OK);
    let h = out.headers_mut();
    for (name, value) in &r.headers {
        if let (Ok(n), Ok(v)) = (
            header::HeaderName::from_bytes(name.as_bytes()),
            header::HeaderValue::from_str(value),
        ) {
            h.append(n, v);
        }
    }
    if !h.contains_key(header::CONTENT_TYPE) {
        h.insert(
            header::CONTENT_TYPE,
            header::HeaderValue::from_static(content_type),
        );
    }
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static("sandbox"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    out
}

fn too_large() -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!(
            "request body is over {MAX_BODY_BYTES} bytes (6 MB, Lambda's payload limit); put large data in a bucket and send its key"
        ),
    )
}

/// The body's bytes, or an error when over the cap.
async fn read_body(headers: &HeaderMap, body: Body) -> Result<bytes::Bytes, ApiError> {
    // Refuse a declared oversize body before reading a byte of it.
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_BODY_BYTES as u64) {
        return Err(too_large());
    }
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large()),
        Err(e) => Err(ApiError::new(
            Code::InvalidArgument,
            format!("cannot read the request body: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use axum::extract::Request;

    fn req(method: &str, uri: &str) -> Request {
        Request::builder()
            .method(method)
            .uri(uri)
            .body(Body::empty())
            .unwrap()
    }

    #[test]
    fn only_a_post_of_one_plain_name_skips_the_router() {
        assert!(super::is_direct(&req("POST", "/v1/invoke/hello")));
        assert!(super::is_direct(&req("POST", "/v1/invoke/hello?x=1")));
        for (method, uri) in [
            ("GET", "/v1/invoke/hello"),
            ("POST", "/v1/invoke/"),
            ("POST", "/v1/invoke/a/b"),
            ("POST", "/v1/invoke/hel%6Co"),
            ("POST", "/v1/invokes/hello"),
            ("POST", "//v1/invoke/hello"),
        ] {
            assert!(!super::is_direct(&req(method, uri)), "{method} {uri}");
        }
    }
}
