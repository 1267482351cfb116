//! The access log: one record per request on the runtime's log (stderr for `native serve`,
//! stdout as JSON lines on the Fargate server and the function URL), with the method, the path
//! (a callback URL's token left out: it is a credential), the status, the duration and, once
//! the request's key or callback token told it, the tenant, and the request's chain id
//! (`trace`): the invocation it runs, and the continuation an ack releases, carry it on
//! (`ctx.trace`), so one id finds every line of the chain. An error answer carries its
//! message too, so that a 500 from a failing script says on the server which script and line
//! failed, not only to the caller.

use std::borrow::Cow;
use std::cell::RefCell;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::extract::Request;
use axum::response::Response;
use axum::Router;

use crate::runtime::Runtime;

tokio::task_local! {
    /// What the request's handler learnt: its tenant, once known, and the chain it joins
    /// when that is not the one the request came with ([`note_chain`]).
    static NOTED: RefCell<Noted>;
}

/// See [`NOTED`].
#[derive(Default)]
struct Noted {
    tenant: Option<String>,
    chain: Option<String>,
}

/// The header of a request's and an answer's chain (W3C Trace Context).
static TRACEPARENT: axum::http::HeaderName = axum::http::HeaderName::from_static("traceparent");

/// The message of an error answer, for the access log (set by [`super::ApiError`] and the
/// body limit's answers).
#[derive(Debug, Clone)]
pub(crate) struct ErrorNote(pub String);

/// The longest path written, in bytes: a caller chooses it.
const MAX_PATH_CHARS: usize = crate::text::MAX_ECHO_BYTES;

/// The longest error message written, in bytes: a script's error may quote what it was given.
/// With the path and the method cut to [`crate::text::MAX_ECHO_BYTES`], a record stays within
/// a few KB, so that no log keeps only a part of it (the log file cuts records past 64 KB).
const MAX_ERROR_BYTES: usize = 2048;

/// Records the tenant of the request being handled, for its access log record.
pub(crate) fn note_tenant(tenant: &str) {
    let _ = NOTED.try_with(|n| n.borrow_mut().tenant = Some(tenant.to_string()));
}

/// Records that the request being handled is of `chain` (a callback URL's, for a POST that
/// named none), for its access log record and its answer's `traceparent`.
pub(crate) fn note_chain(chain: &str) {
    let _ = NOTED.try_with(|n| n.borrow_mut().chain = Some(chain.to_string()));
}

/// The path as logged: a callback token replaced, cut to [`MAX_PATH_CHARS`].
fn shown_path(path: &str) -> Cow<'_, str> {
    if path.starts_with("/v1/callback/") {
        return Cow::Borrowed("/v1/callback/{token}");
    }
    if path.len() <= MAX_PATH_CHARS {
        return Cow::Borrowed(path);
    }
    Cow::Owned(crate::text::echo(path))
}

/// `text` as logged: cut to `max` bytes.
fn shown(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(crate::text::cut_text(text.to_string(), max))
    }
}

/// `app` with the access log around it, and within that (where `body_timeout` is given) each
/// request's body bounded ([`super::body_limit`]): outermost, so that what layers below answer
/// (a body over its cap, one too slow) is logged as the caller got it.
///
/// Both wrap the router as a whole, in one service whose future is boxed once, rather than as
/// `Router::layer` middlewares, which box each layer's service and future again for every
/// request (allocations of kilobytes, most of them past the allocator's per-thread cache:
/// BENCHMARKS.md, Figures behind the code); the routes are the same, and so is what the layers do.
pub(super) fn around(app: Router, rt: Arc<Runtime>, body_timeout: Option<Duration>) -> Router {
    Router::new().fallback_service(logged(app, rt, body_timeout))
}

/// What [`around`] serves, as a service of its own: for a listener that calls it without a
/// router around it ([`super::App`]).
pub(super) fn logged(app: Router, rt: Arc<Runtime>, body_timeout: Option<Duration>) -> Logged {
    Logged {
        routes: app,
        rt,
        body_timeout,
    }
}

/// The bytes a request's record takes besides its path, with room for a tenant's name: what
/// its text is given up front.
const RECORD_CAPACITY: usize = 224;

/// The service of [`around`].
#[derive(Clone)]
pub(super) struct Logged {
    routes: Router,
    rt: Arc<Runtime>,
    body_timeout: Option<Duration>,
}

impl Logged {
    /// `req` answered by `console` (the operator's console), recorded as an API request is:
    /// its path without the query, so without a `?token=`.
    pub(super) fn console(
        &self,
        console: Router,
        req: Request,
    ) -> Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>> {
        let rt = self.rt.clone();
        Box::pin(async move {
            Ok(record(&rt, req, |req| async move {
                match tower::ServiceExt::oneshot(console, req).await {
                    Ok(r) => r,
                    Err(never) => match never {},
                }
            })
            .await)
        })
    }
}

impl tower::Service<Request> for Logged {
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let Logged {
            routes,
            rt,
            body_timeout,
        } = self.clone();
        Box::pin(async move {
            let route = |req| super::route(routes, &rt, req);
            Ok(record(&rt, req, |req| async move {
                match body_timeout {
                    Some(t) => super::body_limit::limit_with(t, req, route).await,
                    None => route(req).await,
                }
            })
            .await)
        })
    }
}

/// Handles the request with `handle`, then writes its record.
async fn record<F, Fut>(rt: &Runtime, req: Request, handle: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    // A standard method is held inline: cloned without an allocation.
    let method = req.method().clone();
    // The URI shares hyper's buffer (a clone counts a reference); its path is shown from it
    // once the request is answered.
    let uri = req.uri().clone();
    let started = Instant::now();
    // The caller's chain when its `traceparent` names one (its span the parent of this
    // request's), else a new one.
    let (trace, caller) = match req
        .headers()
        .get(&TRACEPARENT)
        .and_then(|v| crate::observe::w3c::parse(v.as_bytes()))
    {
        Some((trace, parent)) => (trace, Some(parent)),
        None => (crate::observe::new_trace(), None),
    };
    // The request's span: the parent id its answer names, and where spans are exported, the
    // parent of the run it serves.
    let span = crate::observe::w3c::new_span();
    let exporter = rt.services.exporter.as_ref();
    let started_ns = exporter.map(|_| crate::observe::otlp::now_ns());
    let handled = NOTED.scope(RefCell::new(Noted::default()), async {
        let r = handle(req).await;
        (r, NOTED.with(|n| n.take()))
    });
    let (mut response, noted) = crate::observe::in_context(
        |c| {
            c.chain = Some(trace.clone());
            c.span = exporter.map(|_| span);
        },
        handled,
    )
    .await;
    let (tenant, trace) = (noted.tenant, noted.chain.unwrap_or(trace));
    // Every answer, errors included, names its chain: what `native logs --trace` takes.
    if let Some(v) = crate::observe::w3c::header_bytes(&trace, span)
        .and_then(|h| axum::http::HeaderValue::from_bytes(&h).ok())
    {
        response.headers_mut().insert(TRACEPARENT.clone(), v);
    }
    let status = response.status().as_u16();
    let level = match status {
        500.. => "error",
        400.. => "warn",
        _ => "info",
    };
    let path = shown_path(uri.path());
    let method = shown(method.as_str(), crate::text::MAX_ECHO_BYTES);
    let rec = Record {
        ts_ms: crate::ports::now_ms(),
        level,
        msg: "request",
        method: &method,
        path: &path,
        status,
        duration_ms: (started.elapsed().as_secs_f64() * 1000.0 * 10.0).round() / 10.0,
        tenant: tenant.as_deref(),
        trace: &trace,
        error: response
            .extensions()
            .get::<ErrorNote>()
            .map(|ErrorNote(e)| shown(e, MAX_ERROR_BYTES)),
    };
    if let (Some(e), Some(start_ns)) = (exporter, started_ns) {
        use crate::observe::otlp::{Attr, Kind, SpanData};
        let mut attributes = vec![
            ("http.request.method", Attr::Str(rec.method.to_string())),
            ("url.path", Attr::Str(rec.path.to_string())),
            ("http.response.status_code", Attr::Int(status.into())),
        ];
        if let Some(t) = rec.tenant {
            attributes.push(("native.tenant", Attr::Str(t.to_string())));
        }
        e.record(SpanData {
            chain: trace.clone(),
            span,
            parent: caller,
            name: format!("{} {}", rec.method, rec.path),
            kind: Kind::Server,
            start_ns,
            end_ns: crate::observe::otlp::now_ns(),
            attributes,
            error: (status >= 500).then(|| rec.error.as_deref().unwrap_or("").to_string()),
            links: Vec::new(),
            events: Vec::new(),
            dropped_events: 0,
        });
    }
    // Serialised straight from the struct (strings and numbers: it cannot fail); a `Value` is
    // made only for a sink that reads fields.
    // Into a buffer of a record's usual size, rather than one grown from empty (reallocated
    // at every request: BENCHMARKS.md, Figures behind the code); serde_json writes UTF-8.
    let mut buf = Vec::with_capacity(RECORD_CAPACITY + path.len());
    let text = match serde_json::to_writer(&mut buf, &rec) {
        Ok(()) => String::from_utf8(buf).unwrap_or_default(),
        Err(_) => String::new(),
    };
    rt.services
        .log
        .write_json(text, &|| serde_json::to_value(&rec).unwrap_or_default());
    response
}

/// A request's record, its fields in the order they are written.
#[derive(serde::Serialize)]
struct Record<'a> {
    ts_ms: i64,
    level: &'a str,
    msg: &'a str,
    method: &'a str,
    path: &'a str,
    status: u16,
    duration_ms: f64,
    tenant: Option<&'a str>,
    trace: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<Cow<'a, str>>,
}

#[cfg(test)]
mod tests {
    use super::shown_path;

    #[test]
    fn the_record_is_written_as_it_always_was() {
        // The fields, in their order, with a tenant not known (null) and no error (left out).
        let rec = super::Record {
            ts_ms: 1_700_000_000_123,
            level: "warn",
            msg: "request",
            method: "POST",
            path: "/v1/invoke/start",
            status: 401,
            duration_ms: 0.1,
            tenant: None,
            trace: "t-1",
            error: None,
        };
        assert_eq!(
            serde_json::to_string(&rec).unwrap(),
            r#"{"ts_ms":1700000000123,"level":"warn","msg":"request","method":"POST","path":"/v1/invoke/start","status":401,"duration_ms":0.1,"tenant":null,"trace":"t-1"}"#
        );
        // A known tenant and an error's message; the value for sinks that read fields agrees.
        let rec = super::Record {
            tenant: Some("acme"),
            error: Some("no \"x\"".into()),
            duration_ms: 12.0,
            ..rec
        };
        let text = serde_json::to_string(&rec).unwrap();
        assert!(
            text.ends_with(
                r#""duration_ms":12.0,"tenant":"acme","trace":"t-1","error":"no \"x\""}"#
            ),
            "{text}"
        );
        let value = serde_json::to_value(&rec).unwrap();
        assert_eq!(value.to_string(), text);
        assert_eq!(value["tenant"], "acme");
    }

    #[test]
    fn callback_tokens_are_not_logged_and_long_paths_are_cut() {
        assert_eq!(shown_path("/v1/callback/abc.def"), "/v1/callback/{token}");
        assert_eq!(shown_path("/v1/invoke/start"), "/v1/invoke/start");
        let long = format!("/{}", "x".repeat(10_000));
        assert!(shown_path(&long).len() < 300);
    }
}
