//! Pending work in the project's `.native/` that names a script the tenant no longer has: an
//! open barrier's continuation, a waiting batch job's continuation, a timer's script (a plain
//! timer, a barrier's `on_overdue`, a job's `on_stale`). Each would fail when it fires, after
//! the edit that renamed or removed the script was long forgotten.

use native_core::barrier::{Barriers, Filter};
use native_core::config::Tenant;
use native_core::local::Project;
use native_core::timer::Timers;

use super::lints::{missing_script, Diagnostic, Severity};

/// The most pending items read of each kind.
const MAX_READ: usize = 10_000;

/// What of the tenant's pending work names a missing script; nothing when the project has no
/// `.native/` yet. A state that cannot be read is a warning: the lints above still hold.
pub async fn tenant(p: &Project, t: &Tenant) -> Vec<Diagnostic> {
    if !p.root.join(".native").is_dir() {
        return Vec::new();
    }
    let named = match named(p, t).await {
        Ok(named) => named,
        Err(e) => {
            return vec![super::at_file(
                ".native".into(),
                Severity::Warning,
                format!("cannot read the pending work of tenant {:?}: {e}", t.name),
            )]
        }
    };
    named
        .into_iter()
        .filter_map(|(what, script)| {
            let why = missing_script(t, &script)?;
            Some(super::at_file(
                format!("tenants/{}/scripts/{script}.luau", t.name),
                Severity::Error,
                format!("{what} names script {script:?}, which the tenant no longer has: {why}; restore the script, or cancel the pending work"),
            ))
        })
        .collect()
}

/// Every (what, script) the tenant's pending work names.
async fn named(p: &Project, t: &Tenant) -> native_core::Result<Vec<(String, String)>> {
    let backends = p.backend.backends();
    let calls = crate::commands::barrier::Calls::default();
    let mut out = Vec::new();
    let barriers = Barriers {
        kv: backends.kv.as_ref(),
        queue: backends.queue.as_ref(),
        tenant: &t.name,
        queue_enabled: t.config.queue,
        budget: &calls,
    };
    let mut after: Option<String> = None;
    let mut read = 0;
    loop {
        let page = barriers.list(Filter::Open, after.as_deref(), 1000).await?;
        read += page.scanned.max(1);
        for b in page.barriers {
            if let Some(s) = b.continue_with {
                out.push((format!("pending barrier {:?} (its continue_with)", b.id), s));
            }
        }
        match page.next {
            Some(n) if read < MAX_READ => after = Some(n),
            _ => break,
        }
    }
    let timers = Timers {
        kv: backends.kv.as_ref(),
        tenant: &t.name,
        budget: &calls,
    };
    let mut after: Option<String> = None;
    let mut read = 0;
    loop {
        let (page, next) = timers.list(after.as_deref(), 1000).await?;
        read += page.len().max(1);
        for info in page {
            let what = match info.watches.iter().next() {
                Some((kind, id)) => format!("pending timer {} (of {kind} {id})", info.id),
                None => format!("pending timer {}", info.id),
            };
            out.push((what, info.script));
        }
        match next {
            Some(n) if read < MAX_READ => after = Some(n),
            _ => break,
        }
    }
    if t.config.batch && p.deployment.batch.is_some() {
        let objects = backends.objects.as_ref();
        let now = native_core::ports::now_ms();
        let jobs = native_core::batch::jobs::list(objects, &p.deployment, &t.name, now).await?;
        let bucket = p.deployment.real_bucket("$batch");
        for job in jobs
            .iter()
            .filter(|j| j.state == "waiting" || j.state == "stale")
        {
            let Some(bucket) = &bucket else { break };
            let key = p.deployment.full_key(
                "$batch",
                &t.name,
                &native_core::batch::manifest::state_key(&job.job),
            );
            let Some((_, bytes)) = objects.get(bucket, &key).await? else {
                continue;
            };
            let Ok(state) = serde_json::from_slice::<native_core::batch::manifest::State>(&bytes)
            else {
                continue;
            };
            if let Some(s) = state.continue_with {
                out.push((
                    format!("waiting batch job {:?} (its continue_with)", job.job),
                    s,
                ));
            }
        }
    }
    Ok(out)
}
