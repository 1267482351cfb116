//! The built-in routing of a tenant that configures no router and has no `scripts/router.luau`
//! ([`crate::config::Router::BuiltIn`]): such a tenant can still write objects and use batch
//! jobs without its writes failing for want of a router.
//!
//! - A batch job's `done.json` (`$batch`, `jobs/<job>/done.json`) goes to the job's
//!   continuation, with the event `native.batch.route` would give it (the S3 fields and
//!   `job`); a job without a continuation, or whose state is gone (expired, cleaned up), is
//!   dropped.
//! - Every other event is dropped: the runtime logs one info line and counts it in the
//!   `DroppedEvents` metric.

use serde_json::Value;

use super::manifest::{done_job, state_key, State};
use crate::config::Tenant;
use crate::ports::ObjectStore;
use crate::{Error, Result};

/// Where the built-in routing sends an object event: `Ok((script, event))`, or `Err(why)` when
/// it drops it.
pub async fn choose(
    objects: &dyn ObjectStore,
    deployment: &crate::config::Deployment,
    tenant: &Tenant,
    event: &Value,
) -> Result<std::result::Result<(String, Value), String>> {
    let key = event["key"].as_str().unwrap_or_default();
    let job = match (event["bucket"].as_str(), done_job(key)) {
        (Some("$batch"), Some(job)) => job,
        _ => {
            return Ok(Err(format!(
                "tenant {:?} has no router (no \"router\" in its config.json, no scripts/router.luau): the event of {}/{key} is dropped; add a router to act on it",
                tenant.name,
                event["bucket"].as_str().unwrap_or("?"),
            )))
        }
    };
    let Some(bucket) = deployment.real_bucket("$batch") else {
        return Ok(Err("the deployment has no batch bucket".into()));
    };
    let full = deployment.full_key("$batch", &tenant.name, &state_key(job));
    let Some((_, bytes)) = objects.get(bucket, &full).await? else {
        return Ok(Err(format!(
            "the state of batch job {job:?} is gone (expired or cleaned up): its done.json is dropped"
        )));
    };
    let state: State = serde_json::from_slice(&bytes).map_err(|e| {
        Error::script(
            &tenant.name,
            "(built-in router)",
            format!("state/{job}.json is damaged: {e}"),
        )
    })?;
    let Some(script) = state.continue_with else {
        return Ok(Err(format!(
            "batch job {job:?} has no continuation: its done.json is dropped"
        )));
    };
    let mut routed = event.clone();
    routed["job"] = Value::String(job.to_string());
    Ok(Ok((script, routed)))
}
