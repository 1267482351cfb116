//! The `http` Lambda function: the inbound HTTP router (`native_core::inbound`) behind a
//! function URL. `lambda_http` turns each function URL event into an HTTP request for the same
//! router that `native serve` and the Fargate server run; the handlers never know which.

use std::sync::Arc;

use native_core::aws::lambda;
use native_core::inbound::router;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    // The runtime's own errors and the SDK's, as JSON when the function's LoggingConfig says so.
    lambda_http::tracing::init_default_subscriber();
    let rt = Arc::new(lambda::cold_start().await?);
    lambda_http::run(router(rt)).await
}
