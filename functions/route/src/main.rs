//! The `route` Lambda function: SQS batches of S3 notifications from the events queue; each
//! object goes to its tenant's router and the script it picks. Failed messages are reported one
//! by one (`ReportBatchItemFailures`). The logic is in `native_core::aws::lambda`.

use std::sync::Arc;

use lambda_runtime::{service_fn, Error, LambdaEvent};
use native_core::aws::lambda;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let rt = Arc::new(lambda::cold_start().await?);
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<lambda::SqsEvent>| {
        let rt = rt.clone();
        async move {
            Ok::<_, Error>(
                lambda::handle_event_batch_by(&rt, ev.payload, ev.context.deadline).await,
            )
        }
    }))
    .await
}
