//! `native partner`: answers a tenant's pending batch requests as a partner system would, so
//! that batch jobs can run end to end on a local project.

use std::path::{Path, PathBuf};

use native_core::batch::partner::{answer, pending, Options, Source};

use super::{drain_after, open, Failed, Outcome};
use crate::out::{errln, outln};

/// How results are stored.
pub struct Parts {
    /// Gzip each part.
    pub gzip: bool,
    /// The largest part in MiB of NDJSON.
    pub part_mb: u64,
}

pub async fn run(
    project: &Path,
    tenant: &str,
    exec: Option<String>,
    fixtures: Option<PathBuf>,
    parts: Parts,
    no_drain: bool,
) -> Outcome {
    let source = match (exec, fixtures) {
        (Some(cmd), None) => Source::Exec(cmd),
        (None, Some(dir)) if dir.is_dir() => Source::Fixtures(dir),
        (None, Some(dir)) => {
            return Err(Failed::usage(format!(
                "--fixtures {}: not a folder",
                dir.display()
            )))
        }
        _ => return Err(Failed::usage("give either --exec CMD or --fixtures DIR")),
    };
    let opts = Options {
        source,
        gzip: parts.gzip,
        part_bytes: parts.part_mb << 20,
        inline: true,
    };
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let mark = super::mark(&p)?;
    let objects = rt.services.backends.objects.clone();
    let deployment = &rt.services.deployment;
    let requests = pending(&*objects, deployment, tenant).await?;
    if requests.is_empty() {
        errln!("no pending requests for tenant {tenant:?}");
    }
    for request in &requests {
        let a = answer(&*objects, deployment, tenant, request, &opts).await?;
        let outcome = match (&a.done.ok, &a.done.error) {
            (true, _) => "ok".to_string(),
            (false, Some(e)) => format!("failed: {}", crate::show::text(e)),
            (false, None) => "failed".to_string(),
        };
        let already = if a.written { "" } else { " (already answered)" };
        outln!(
            "{}: {}, {}: {outcome}{already}",
            a.job,
            crate::show::count(request.queries.len(), "query", "queries"),
            crate::show::count(a.rows() as usize, "row", "rows")
        );
    }
    drain_after(&rt, mark, no_drain).await
}
