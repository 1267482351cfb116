//! Inbound HTTP: the one router that `native serve`, the Fargate server and the Lambda function
//! URL all serve (outbound HTTP, what scripts call, lives elsewhere). The handlers only see a
//! [`Runtime`]; whether hyper or `lambda_http` carries the request, they never know.
//!
//! - `POST /v1/invoke/{script}` ([`invoke`]): the caller's tenant's `on_invoke`, body as event.
//! - `POST /com.evrblk.grackle.v1beta.GrackleApi/{method}` ([`rendezvous`]): the rendezvous
//!   barriers' API (seed 003) as Grackle's gRPC service: Connect JSON and binary, gRPC (over
//!   HTTP/2, h2c where no load balancer terminates TLS) and gRPC-Web.
//! - `GET /healthz`: 200 when the key-value store and the queue answer; the same check as
//!   gRPC's `grpc.health.v1.Health/Check`, for a load balancer that health-checks with gRPC.
//! - `POST /v1/callback/{token}` ([`callback`]): a partner's ack through a signed callback URL.
//!
//! Every error is JSON, `{ "code": ..., "message": ... }`, with the Connect protocol's codes and
//! statuses ([`ApiError`]). Callers authenticate with `Authorization: Bearer <key>`
//! ([`crate::api_keys`]); the tenant is the key's. Every request is logged ([`access_log`]).

mod access_log;
mod answers;
pub mod body_limit;
mod callback;
pub mod console;
mod error;
mod invoke;
pub mod lanes;
pub mod listener;
pub mod rendezvous;
mod serve;

use std::sync::Arc;

use axum::body::Body;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

pub use error::{ApiError, Code};
pub use listener::{serve_app, Hygiene, Served};
pub use serve::{serve, shutdown_signal};

use crate::api_keys::{self, AuthError};
use crate::ports::QueueKind;
use crate::runtime::Runtime;

/// The largest request body: Lambda's payload limit, so a request that works on
/// `native serve` also fits through a function URL.
pub const MAX_BODY_BYTES: usize = 6 * 1024 * 1024;

/// The router over a runtime, with its access log: what the function URL serves (Lambda caps
/// the body itself).
pub fn router(rt: Arc<Runtime>) -> Router {
    access_log::around(routes(rt.clone()), rt, None)
}

/// The routes as a long-running listener serves them ([`serve_app`]): each route's body
/// bounded within `hygiene` ([`body_limit`]), and the access log around that, so that a request
/// turned away for its body is logged with the status the caller got.
pub fn app(rt: Arc<Runtime>, hygiene: &Hygiene) -> App {
    App {
        api: access_log::logged(routes(rt.clone()), rt, Some(hygiene.body_timeout)),
        console: None,
    }
}

/// The service [`app`] makes: the API with its access log, and beside it, when given, the
/// operator's console ([`App::with_console`]).
///
/// A request goes to one or the other by its path, without a router: merged into one, every
/// API request went through a router that only ever chose its fallback (a route lookup, URL
/// parameters and a boxed future: BENCHMARKS.md, Figures behind the code).
#[derive(Clone)]
pub struct App {
    api: access_log::Logged,
    console: Option<Router>,
}

impl App {
    /// The app with `console` answering `/console` and every path under `/console/` (its
    /// routes must all be there: any other path is the API's).
    pub fn with_console(self, console: Router) -> Self {
        App {
            console: Some(console),
            ..self
        }
    }
}

/// Whether `path` (as sent, not decoded: as a router matches it) is the console's.
fn is_console(path: &str) -> bool {
    path.strip_prefix("/console")
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

impl tower::Service<axum::extract::Request> for App {
    type Response = Response;
    type Error = std::convert::Infallible;
    type Future =
        std::pin::Pin<Box<dyn std::future::Future<Output = Result<Response, Self::Error>> + Send>>;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: axum::extract::Request) -> Self::Future {
        match &self.console {
            Some(console) if is_console(req.uri().path()) => self.api.console(console.clone(), req),
            // The access log's future is boxed already: returned as it is.
            _ => tower::Service::call(&mut self.api, req),
        }
    }
}

/// The routes alone.
fn routes(rt: Arc<Runtime>) -> Router {
    Router::new()
        .route("/v1/invoke/{script}", post(invoke::invoke))
        .route(
            &format!("{}/{{method}}", rendezvous::SERVICE),
            post(rendezvous::call),
        )
        .route("/healthz", get(healthz))
        .route("/grpc.health.v1.Health/Check", post(grpc_health))
        .route("/v1/callback/{token}", post(callback::callback))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .with_state(rt)
}

/// Answers `req` through `routes`, or directly when it is an invoke of a plain script name
/// ([`invoke::is_direct`]): the same handler, without the router's work.
async fn route(routes: Router, rt: &Arc<Runtime>, req: axum::extract::Request) -> Response {
    if invoke::is_direct(&req) {
        return invoke::direct(rt, req).await;
    }
    // The router's own errors are `Infallible`.
    match tower::ServiceExt::oneshot(routes, req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// The longest a request waits for its API key to be checked.
pub const KEY_LOOKUP_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(4);

/// The tenant whose key the request carries, or why there is none.
pub(crate) async fn tenant_of(rt: &Runtime, headers: &HeaderMap) -> Result<String, ApiError> {
    let header = match headers.get(header::AUTHORIZATION) {
        None => None,
        Some(v) => Some(
            v.to_str()
                .map_err(|_| ApiError::unauthenticated(AuthError::Malformed.to_string()))?,
        ),
    };
    let key = api_keys::bearer(header).map_err(|e| ApiError::unauthenticated(e.to_string()))?;
    let lookup = rt
        .verified_keys()
        .authenticate(&rt.services.backends.kv, key);
    // A held store answers as unavailable, never keeps the caller (issue 50: 60.9 s).
    let looked_up = tokio::time::timeout(KEY_LOOKUP_TIMEOUT, lookup)
        .await
        .map_err(|_| ApiError {
            retry_after_s: Some(2),
            ..ApiError::new(
                Code::Unavailable,
                format!(
                    "the API key could not be checked within {} s: the key store is slow or unavailable; retry",
                    KEY_LOOKUP_TIMEOUT.as_secs()
                ),
            )
        })?;
    match looked_up? {
        Ok(tenant) => {
            access_log::note_tenant(&tenant);
            Ok(tenant)
        }
        Err(e) => Err(ApiError::unauthenticated(e.to_string())),
    }
}

/// Whether the key-value store and the queue answer.
async fn backends_answer(rt: &Runtime) -> Result<(), ApiError> {
    let b = &rt.services.backends;
    let kv = b.kv.get("H#health", "-").await;
    let queue = b.queue.stats(QueueKind::Work).await;
    match (kv, queue) {
        (Ok(_), Ok(_)) => Ok(()),
        (Err(e), _) | (_, Err(e)) => Err(ApiError::new(
            Code::Unavailable,
            format!("a backend does not answer: {e}"),
        )),
    }
}

async fn healthz(State(rt): State<Arc<Runtime>>) -> Response {
    match backends_answer(&rt).await {
        Ok(()) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            r#"{"status":"ok"}"#,
        )
            .into_response(),
        Err(e) => e.into_response(),
    }
}

/// `grpc.health.v1.Health/Check` over gRPC: `SERVING` when [`healthz`] would say 200,
/// `unavailable` otherwise (the service named in the request is not looked at: there is one).
async fn grpc_health(State(rt): State<Arc<Runtime>>, headers: HeaderMap, body: Body) -> Response {
    let read = rendezvous::wire::read_body(&headers, body).await;
    let form = match rendezvous::wire::Form::of(&headers) {
        Ok(f) if f.is_proto() => f,
        Ok(_) => rendezvous::wire::Form::Grpc,
        Err(e) => return rendezvous::wire::unsupported(e),
    };
    match read.and(backends_answer(&rt).await) {
        // HealthCheckResponse { status = 1 (SERVING) }: field 1, varint 1.
        Ok(()) => rendezvous::wire::reply(form, String::new, || vec![0x08, 0x01]),
        Err(e) => rendezvous::wire::error(form, e),
    }
}

/// A request to no endpoint: read (so the answer reaches the client), then answered 404, or
/// `unimplemented` in the caller's form when it speaks gRPC.
async fn not_found(uri: axum::http::Uri, headers: HeaderMap, body: Body) -> Response {
    let read = rendezvous::wire::read_body(&headers, body).await;
    let e = read.err().unwrap_or_else(|| not_found_error(&uri));
    match rendezvous::wire::Form::of(&headers) {
        Ok(f @ (rendezvous::wire::Form::Grpc | rendezvous::wire::Form::GrpcWeb { .. })) => {
            let e = ApiError::new(Code::Unimplemented, e.message);
            rendezvous::wire::error(f, e)
        }
        _ => e.into_response(),
    }
}

fn not_found_error(uri: &axum::http::Uri) -> ApiError {
    ApiError::new(
        Code::NotFound,
        format!(
            "no endpoint {}: the endpoints are POST /v1/invoke/{{script}}, POST {}/{{method}} and GET /healthz",
            crate::text::echo(uri.path()),
            rendezvous::SERVICE
        ),
    )
}

async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        Code::MethodNotAllowed,
        format!(
            "{} {} is not allowed: use {}",
            crate::text::echo(method.as_str()),
            crate::text::echo(uri.path()),
            if uri.path() == "/healthz" {
                "GET"
            } else {
                "POST"
            }
        ),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_console_answers_its_own_paths_and_the_api_every_other() {
        for path in [
            "/console",
            "/console/",
            "/console/tenants/a",
            "/console/assets/x.css",
        ] {
            assert!(super::is_console(path), "{path}");
        }
        for path in [
            "/",
            "/consoles",
            "/console.css",
            "//console/",
            "/%63onsole/",
            "/v1/invoke/console",
            "/healthz",
        ] {
            assert!(!super::is_console(path), "{path}");
        }
    }
}
