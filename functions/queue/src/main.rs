//! The `queue` Lambda function: SQS batches of script messages from the work queue
//! (`native.queue.send`, continuations), each run by its script's `on_queue` with `ctx.attempt`
//! from the receive count. Failed messages are reported one by one (`ReportBatchItemFailures`).
//! The logic is in `native_core::aws::lambda`.

use std::sync::Arc;

use lambda_runtime::{service_fn, Error, LambdaEvent};
use native_core::aws::lambda;
use native_core::deadline::lambda_end;
use native_core::observe::in_request;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // The runtime's and the SDK's own events, as JSON lines at the LoggingConfig's level.
    native_core::observe::runtime_log::init();
    let rt = Arc::new(lambda::cold_start().await?);
    lambda_runtime::run(service_fn(move |ev: LambdaEvent<lambda::SqsEvent>| {
        let rt = rt.clone();
        async move {
            // Log lines carry Lambda's request id; scripts end before the request's deadline.
            let id = Some(ev.context.request_id.clone());
            let deadline = ev.context.deadline;
            let work = lambda::handle_work_batch_by(&rt, ev.payload, deadline);
            // Its spans reach the collector before the answer, within a bounded wait.
            let work = rt.flushing(lambda_end(deadline), work);
            Ok::<_, Error>(in_request(id, work).await)
        }
    }))
    .await
}
