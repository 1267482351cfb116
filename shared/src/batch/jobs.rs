//! Every job of a tenant with its age and state, for `native batch list` and the console:
//! waiting (no `done.json` yet), stale (waiting longer than its `stale_after_s`), done, failed
//! (`done.json` says `ok: false`). A partner's job is known by its `request.json`; a `job:http`
//! job, which writes none (the server performs its requests), by its state file.

use std::collections::BTreeMap;

use serde::Serialize;

use super::manifest::{state_key, Done, State};
use super::partner::batch_folder;
use crate::config::Deployment;
use crate::ports::ObjectStore;
use crate::Result;

/// The most jobs listed at once.
pub const MAX_JOBS: usize = 10_000;

/// One job.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct JobInfo {
    /// The job id.
    pub job: String,
    /// waiting, stale, done or failed.
    pub state: &'static str,
    /// Seconds since the job was submitted (its request.json, or its state's creation).
    pub age_s: i64,
    /// The stale limit, when the job has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_after_s: Option<u64>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// The tenant's jobs in id order (at most [`MAX_JOBS`]), as of `now_ms`.
pub async fn list(
    objects: &dyn ObjectStore,
    deployment: &Deployment,
    tenant: &str,
    now_ms: i64,
) -> Result<Vec<JobInfo>> {
    let (bucket, folder) = batch_folder(deployment, tenant)?;
    let jobs = format!("{folder}jobs/");
    let states = format!("{folder}state/");
    // job -> (request.json's time, whether done.json is there, whether it has a state file)
    let mut seen: BTreeMap<String, (Option<i64>, bool, bool)> = BTreeMap::new();
    for prefix in [&jobs, &states] {
        let mut after: Option<String> = None;
        loop {
            let page = objects
                .list(&bucket, prefix, after.as_deref(), 1000)
                .await?;
            for o in &page.objects {
                let rest = &o.key[prefix.len()..];
                if prefix == &states {
                    if let Some(job) = rest.strip_suffix(".json").filter(|j| !j.contains('/')) {
                        seen.entry(job.to_string()).or_default().2 = true;
                    }
                    continue;
                }
                let Some((job, file)) = rest.split_once('/') else {
                    continue;
                };
                let e = seen.entry(job.to_string()).or_default();
                match file {
                    "request.json" => e.0 = Some(o.modified_ms),
                    "done.json" => e.1 = true,
                    _ => {}
                }
            }
            match page.next {
                Some(next) if seen.len() < MAX_JOBS => after = Some(next),
                _ => break,
            }
        }
    }
    let mut out = Vec::new();
    for (job, (requested, done, has_state)) in seen {
        // Neither a request nor a state: stray objects in jobs/, no job.
        if requested.is_none() && !has_state {
            continue;
        }
        let state: Option<State> = match has_state {
            true => objects
                .get(&bucket, &format!("{folder}{}", state_key(&job)))
                .await?
                .and_then(|(_, b)| serde_json::from_slice(&b).ok()),
            false => None,
        };
        let Some(at) = requested.or(state.as_ref().map(|s| s.created_ms)) else {
            continue;
        };
        let age_s = (now_ms - at).max(0) / 1000;
        let stale_after_s = state.and_then(|s| s.stale_after_s);
        let (state, error) = if done {
            let key = format!("{jobs}{job}/done.json");
            match super::contract::fetch_manifest(objects, &bucket, &key).await {
                Ok(b) => match b.and_then(|(_, b)| serde_json::from_slice::<Done>(&b).ok()) {
                    Some(d) if d.ok => ("done", None),
                    Some(d) => ("failed", d.error),
                    None => ("failed", Some("done.json is not a valid answer".into())),
                },
                // Too large to read: the job's listing says so, and the others still list.
                Err(crate::Error::InvalidInput(why)) => ("failed", Some(why)),
                Err(e) => return Err(e),
            }
        } else if stale_after_s.is_some_and(|s| age_s >= s as i64) {
            ("stale", None)
        } else {
            ("waiting", None)
        };
        out.push(JobInfo {
            job,
            state,
            age_s,
            stale_after_s,
            error,
        });
    }
    Ok(out)
}
