//! `native doctor`: what a crash or a power cut left in `.native/`, repaired where it can be
//! (messages of dead processes, temporary files, orphaned object contents) and reported where
//! it cannot (a damaged database, damaged objects).

use std::path::Path;

use native_core::embedded::Checkup;

use super::{open, Failed, Outcome};
use crate::out::outln;

pub async fn run(project: &Path, deep: bool) -> Outcome {
    let p = open(project)?;
    let c = p.backend.checkup(deep).await?;
    for line in report(&c) {
        outln!("{line}");
    }
    if c.healthy() {
        return Ok(());
    }
    Err(Failed::script(format!(
        "{} is damaged: restore it from a backup, or put the damaged objects again (or delete them)",
        p.root.join(".native").display()
    )))
}

/// The checkup, one finding a line.
pub(crate) fn report(c: &Checkup) -> Vec<String> {
    let mut out = vec![format!(
        "database quick_check: {}",
        c.quick_check.join("; ")
    )];
    out.push(format!(
        "messages of dead processes made visible again: {}",
        c.reclaimed
    ));
    out.push(format!(
        "temporary files of dead processes removed: {}",
        c.temp_files
    ));
    out.push(format!(
        "orphaned object contents removed: {} ({} bytes)",
        c.orphans, c.orphan_bytes
    ));
    out.push(format!("damaged objects: {}", c.damaged.len()));
    out.extend(c.damaged.iter().map(|d| format!("  {d}")));
    out
}
