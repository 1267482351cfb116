//! `native timers TENANT`: a tenant's pending timers, in due order; `native batch list TENANT`:
//! its batch jobs with their age and state (what a stale timer watches); `native replay`.

use std::path::Path;

use native_core::timer::Timers;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};

pub async fn run(project: &Path, tenant: &str, limit: u32, after: Option<&str>) -> Outcome {
    let p = open(project)?;
    let t = p.runtime().tenants.load(tenant).await?;
    if let Some(id) = after {
        native_core::timer::parse_id(id).map_err(|e| Failed::usage(format!("--after: {e}")))?;
    }
    let backends = p.backend.backends();
    let calls = super::barrier::Calls::default();
    let timers = Timers {
        kv: backends.kv.as_ref(),
        tenant: &t.name,
        budget: &calls,
    };
    let (page, next) = timers.list(after, limit as usize).await?;
    for info in &page {
        outln!("{}", serde_json::to_string(info).unwrap_or_default());
    }
    if let Some(next) = next {
        errln!("more: pass --after {next}");
    }
    Ok(())
}

pub async fn batch_list(project: &Path, tenant: &str) -> Outcome {
    let p = open(project)?;
    p.runtime().tenants.load(tenant).await?;
    let backends = p.backend.backends();
    let jobs = native_core::batch::jobs::list(
        backends.objects.as_ref(),
        &p.deployment,
        tenant,
        native_core::ports::now_ms(),
    )
    .await?;
    for j in &jobs {
        outln!("{}", serde_json::to_string(j).unwrap_or_default());
    }
    Ok(())
}

pub async fn replay(
    project: &Path,
    tenant: &str,
    bucket: &str,
    prefix: &str,
    no_drain: bool,
) -> Outcome {
    let p = open(project)?;
    let mark = super::mark(&p)?;
    let t = p.runtime().tenants.load(tenant).await?;
    let backends = p.backend.backends();
    let calls = super::barrier::Calls::default();
    let r = native_core::replay::Replay {
        objects: backends.objects.as_ref(),
        queue: backends.queue.as_ref(),
        deployment: &p.deployment,
        tenant: &t.name,
        budget: &calls,
    }
    .run(bucket, prefix, None)
    .await?;
    outln!("{}", serde_json::json!({ "replayed": r.replayed }));
    super::drain_after(&crate::show::runtime(&p), mark, no_drain).await
}
