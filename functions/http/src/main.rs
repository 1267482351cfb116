//! The `http` Lambda function: the inbound HTTP router (`native_core::inbound`) behind a
//! function URL. `lambda_http` turns each function URL event into an HTTP request for the same
//! router that `native serve` and the Fargate server run; the handlers never know which.
//!
//! Callback URLs that scripts make here start at the function URL the request came to (its
//! `requestContext.domainName`): the template cannot give this function its own URL in
//! `NATIVE_PUBLIC_URL`, since the URL resource depends on the function.

use std::sync::Arc;

use lambda_http::request::RequestContext;
use lambda_http::tower::ServiceExt;
use lambda_http::{service_fn, Request, RequestExt};
use native_core::aws::lambda;
use native_core::callback::{at_base, base_from_domain};
use native_core::deadline::{lambda_end, within};
use native_core::inbound::router;
use native_core::observe::in_request;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    // The runtime's and the SDK's own events, as JSON lines at the LoggingConfig's level.
    native_core::observe::runtime_log::init();
    let rt = Arc::new(lambda::cold_start().await?);
    let app = router(rt.clone());
    lambda_http::run(service_fn(move |req: Request| {
        let (app, rt) = (app.clone(), rt.clone());
        // Log lines carry Lambda's request id; scripts end before the request's deadline.
        let lambda = req
            .lambda_context_ref()
            .map(|c| (c.request_id.clone(), c.deadline));
        let base = match req.request_context_ref() {
            Some(RequestContext::ApiGatewayV2(c)) => {
                c.domain_name.as_deref().and_then(base_from_domain)
            }
            _ => None,
        };
        async move {
            let work = at_base(base, app.oneshot(req));
            match lambda {
                Some((id, deadline_ms)) => {
                    // Its spans reach the collector before the answer, within a bounded wait.
                    let end = lambda_end(deadline_ms);
                    in_request(Some(id), rt.flushing(end, within(end, work))).await
                }
                None => work.await,
            }
        }
    }))
    .await
}
