//! The `http` Lambda function: the inbound HTTP router (`native_core::inbound`) behind a
//! function URL. `lambda_http` turns each function URL event into an HTTP request for the same
//! router that `native serve` and the Fargate server run; the handlers never know which.

use std::sync::Arc;

use lambda_http::tower::ServiceExt;
use lambda_http::{service_fn, Request, RequestExt};
use native_core::aws::lambda;
use native_core::budget::{lambda_end, within};
use native_core::inbound::router;
use native_core::observe::in_request;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    // The runtime's own errors and the SDK's, as JSON when the function's LoggingConfig says so.
    lambda_http::tracing::init_default_subscriber();
    let rt = Arc::new(lambda::cold_start().await?);
    let app = router(rt);
    lambda_http::run(service_fn(move |req: Request| {
        let app = app.clone();
        // Log lines carry Lambda's request id; scripts end before the request's deadline.
        let lambda = req
            .lambda_context_ref()
            .map(|c| (c.request_id.clone(), c.deadline));
        async move {
            let work = app.oneshot(req);
            match lambda {
                Some((id, deadline_ms)) => {
                    in_request(Some(id), within(lambda_end(deadline_ms), work)).await
                }
                None => work.await,
            }
        }
    }))
    .await
}
