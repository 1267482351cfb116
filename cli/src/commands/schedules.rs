//! `native schedules TENANT` and `native schedules pause|resume|trigger|backfill TENANT NAME`:
//! a tenant's schedules (`native_core::schedule`) for operators.

use std::path::Path;

use native_core::config::schedule::parse_instant;
use native_core::schedule::Schedules;

use super::{open, Failed, Outcome};
use crate::out::outln;

const ACTIONS: [&str; 4] = ["pause", "resume", "trigger", "backfill"];

pub async fn run(
    project: &Path,
    args: &[String],
    from: Option<&str>,
    to: Option<&str>,
    no_drain: bool,
) -> Outcome {
    let (action, tenant, name) = match args {
        [tenant] if !ACTIONS.contains(&tenant.as_str()) => ("list", tenant, None),
        [action, tenant, name] if ACTIONS.contains(&action.as_str()) => {
            (action.as_str(), tenant, Some(name.as_str()))
        }
        _ => {
            return Err(Failed::usage(format!(
                "native schedules takes TENANT, or one of {} then TENANT NAME (got {})",
                ACTIONS.join(", "),
                args.join(" ")
            )))
        }
    };
    if action != "backfill" && (from.is_some() || to.is_some()) {
        return Err(Failed::usage("--from and --to are for backfill only"));
    }
    let p = open(project)?;
    let mark = super::mark(&p)?;
    let rt = crate::show::runtime(&p);
    let t = rt.tenants.load(tenant).await?;
    let b = p.backend.backends();
    let s = Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &t);
    let name = name.unwrap_or_default();
    match action {
        "list" => {
            for info in s.list().await? {
                outln!("{}", serde_json::to_string(&info).unwrap_or_default());
            }
            return Ok(());
        }
        "pause" => s.pause(name).await?,
        "resume" => s.resume(name).await?,
        "trigger" => {
            let at_ms = s.trigger(name).await?;
            outln!(
                "{}",
                serde_json::json!({ "schedule": name, "at_ms": at_ms })
            );
        }
        _ => {
            let instant = |flag: &str, v: Option<&str>| {
                let v = v.ok_or_else(|| Failed::usage(format!("backfill needs {flag} T")))?;
                parse_instant(v).map_err(|why| Failed::usage(format!("{flag}: {why}")))
            };
            let (from, to) = (instant("--from", from)?, instant("--to", to)?);
            let slots = s.backfill(name, from, to).await?;
            outln!(
                "{}",
                serde_json::json!({ "schedule": name, "sent": slots.len(), "slots_ms": slots })
            );
        }
    }
    if matches!(action, "trigger" | "backfill") {
        return super::drain_after(&rt, mark, no_drain).await;
    }
    outln!(
        "{}",
        serde_json::json!({ "schedule": name, "done": action })
    );
    Ok(())
}
