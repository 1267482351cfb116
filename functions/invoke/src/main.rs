//! The `invoke` Lambda function: a direct invocation `{ "tenant", "script", "event" }` runs the
//! script's `on_invoke` and returns its value. The logic is in `native_core::aws::lambda`.

use std::sync::Arc;

use lambda_runtime::{service_fn, Error, LambdaEvent};
use native_core::aws::lambda;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let rt = Arc::new(lambda::cold_start().await?);
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<lambda::InvokeRequest>| {
        let rt = rt.clone();
        async move { Ok::<_, Error>(lambda::invoke_by(&rt, ev.payload, ev.context.deadline).await?) }
    }))
    .await
}
