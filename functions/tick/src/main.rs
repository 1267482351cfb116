//! The `tick` Lambda function, on an EventBridge schedule every minute: sends the tenants'
//! schedules' slots and fires the durable timers (`native.timer.at`, barriers' `on_overdue`)
//! due within the next minute, handing each to the work queue with the delay that is left. The
//! logic is `Runtime::tick_schedules` and `native_core::runtime::tick`.

use std::sync::Arc;

use lambda_runtime::{service_fn, Error, LambdaEvent};
use native_core::aws::lambda;
use native_core::runtime::tick;
use native_core::schedule;
use native_core::timer::TickOptions;

#[tokio::main]
async fn main() -> Result<(), Error> {
    // The runtime's and the SDK's own events, as JSON lines at the LoggingConfig's level.
    native_core::observe::runtime_log::init();
    let rt = Arc::new(lambda::cold_start().await?);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<serde_json::Value>| {
        let rt = rt.clone();
        // Schedules and timers share one end, within the request's deadline.
        let stop_at = native_core::deadline::tick_end(Some(event.context.deadline));
        async move {
            let b = &rt.services.backends;
            // Schedules first: a slot they send runs as soon as a timer would.
            let scheduled = rt
                .tick_schedules(schedule::TickOptions::every_minute(stop_at))
                .await;
            let report = tick(
                b.kv.as_ref(),
                b.queue.as_ref(),
                b.objects.as_ref(),
                TickOptions::every_minute(stop_at),
            )
            .await?;
            for e in scheduled.errors.iter().chain(&report.errors) {
                // A tenant that failed is ticked again next minute; the log line feeds alarms.
                rt.services.log.write(&serde_json::json!({
                    "ts_ms": native_core::ports::now_ms(), "level": "error",
                    "msg": "firing schedules or timers failed; the next tick fires them", "error": e,
                }));
            }
            Ok::<_, Error>(serde_json::json!({ "timers": report, "schedules": scheduled }))
        }
    }))
    .await
}
