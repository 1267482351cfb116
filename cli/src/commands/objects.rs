//! `native put`, `get` and `ls`: a tenant's objects, as an outside party sees them.

use std::io::Read;
use std::path::Path;

use bytes::Bytes;

use super::{drain_after, open, Failed, Outcome};
use crate::out::{self, outln};

pub async fn put(
    project: &Path,
    tenant: &str,
    bucket: &str,
    key: &str,
    source: Option<&str>,
    data: Option<String>,
    no_drain: bool,
) -> Outcome {
    let body = match (source, data) {
        (Some(_), Some(_)) => {
            return Err(Failed::usage("give either @FILE, - or --data, not both"))
        }
        (None, Some(d)) => d.into_bytes(),
        (Some("-"), None) => {
            let mut buf = Vec::new();
            std::io::stdin()
                .read_to_end(&mut buf)
                .map_err(|e| Failed::usage(format!("cannot read standard input: {e}")))?;
            buf
        }
        (Some(s), None) => match s.strip_prefix('@') {
            Some(path) => std::fs::read(path)
                .map_err(|e| Failed::usage(format!("cannot read {path}: {e}")))?,
            None => {
                return Err(Failed::usage(format!(
                    "{s:?}: give @FILE, - for standard input, or --data TEXT"
                )))
            }
        },
        (None, None) => {
            return Err(Failed::usage(
                "give the content as @FILE, - (standard input) or --data TEXT",
            ))
        }
    };
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let mark = super::mark(&p)?;
    rt.put_object(tenant, bucket, key, Bytes::from(body))
        .await?;
    drain_after(&rt, mark, no_drain).await
}

/// `native get`; with `wait`, an object that is not there yet (a running `native serve` is
/// still making it) is looked for again every 100 ms for that many seconds.
pub async fn get(
    project: &Path,
    tenant: &str,
    bucket: &str,
    key: &str,
    wait: Option<u32>,
) -> Outcome {
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let (real, full) = rt.locate(tenant, bucket, key)?;
    let until =
        std::time::Instant::now() + std::time::Duration::from_secs(wait.unwrap_or(0).into());
    loop {
        if let Some((_, data)) = rt.services.backends.objects.get(&real, &full).await? {
            crate::show::bytes(&data);
            return Ok(());
        }
        if std::time::Instant::now() >= until {
            return Err(Failed::script(format!(
                "{bucket}/{key} of tenant {tenant:?} does not exist{}",
                match wait {
                    Some(s) => format!(" (waited {s} s)"),
                    None => String::new(),
                }
            )));
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

pub async fn ls(project: &Path, tenant: &str, bucket: &str, prefix: Option<&str>) -> Outcome {
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let prefix = prefix.unwrap_or("");
    native_core::keys::check_prefix(prefix).map_err(Failed::usage)?;
    let (real, _) = rt.locate(tenant, bucket, "x")?;
    let folder = rt.services.deployment.full_key(bucket, tenant, "");
    let full_prefix = format!("{folder}{prefix}");
    let mut after: Option<String> = None;
    loop {
        let page = rt
            .services
            .backends
            .objects
            .list(&real, &full_prefix, after.as_deref(), 1000)
            .await?;
        for o in &page.objects {
            outln!("{}", crate::show::text(&o.key[folder.len()..]));
        }
        match page.next {
            // Nobody reads the rest: stop listing.
            Some(_) if out::stdout_closed() => return Ok(()),
            Some(n) => after = Some(n),
            None => return Ok(()),
        }
    }
}
