//! `native logs [--trace ID] [--tenant T] [--follow]`: the project's log history
//! ([`crate::logfile`]), the records every verb and `native serve` wrote, oldest first; with
//! `--trace`, one chain's (`ctx.trace`); with `--follow`, then each new record as it is written,
//! until Ctrl-C. One readable line a record on a terminal, JSON lines otherwise
//! (`NATIVE_LOG_FORMAT=json|text` chooses).

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{open, Outcome};
use crate::out::{errln, outln};

/// Which records `native logs` prints.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this chain's.
    pub trace: Option<String>,
    /// Only this tenant's.
    pub tenant: Option<String>,
    /// At most this many of the history (the newest), before following.
    pub limit: usize,
}

impl Filter {
    fn wants(&self, rec: &Value) -> bool {
        let is = |k: &str, want: &Option<String>| {
            want.as_deref()
                .is_none_or(|w| rec.get(k).and_then(Value::as_str) == Some(w))
        };
        is("trace", &self.trace) && is("tenant", &self.tenant)
    }
}

/// How often `--follow` looks for new records.
const POLL: Duration = Duration::from_millis(200);

/// The longest line read; a longer one (not written by native) is skipped.
const MAX_LINE: u64 = 1024 * 1024;

pub async fn run(project: &Path, filter: Filter, follow: bool) -> Outcome {
    let p = open(project)?;
    let path = crate::logfile::path(&p.root.join(".native"));
    let readable = match std::env::var("NATIVE_LOG_FORMAT").as_deref() {
        Ok("json") => false,
        Ok("text") => true,
        _ => std::io::stdout().is_terminal(),
    };
    let show = |rec: &Value| {
        if readable {
            outln!("{}", crate::show::readable(rec));
        } else {
            outln!("{}", crate::show::json(&rec.to_string()));
        }
    };
    // The history: the rotated file, then the live one; the newest `limit` that match.
    let mut kept = VecDeque::new();
    for file in [crate::logfile::rotated(&path), path.clone()] {
        if let Ok(f) = std::fs::File::open(&file) {
            read_records(&mut BufReader::new(f), |rec| {
                if filter.wants(&rec) {
                    if kept.len() == filter.limit {
                        kept.pop_front();
                    }
                    kept.push_back(rec);
                }
            });
        }
    }
    let shown = kept.len();
    kept.iter().for_each(show);
    if !follow {
        if shown == 0 {
            let what = match (&filter.trace, &filter.tenant) {
                (Some(t), _) => format!("no log record of trace {t:?}"),
                (None, Some(t)) => format!("no log record of tenant {t:?}"),
                (None, None) => "no log records yet".to_string(),
            };
            errln!(
                "{what} in {} (written by every verb and `native serve` of this project)",
                path.display()
            );
        }
        return Ok(());
    }
    // Follow the live file from its end; a rotation (a new file at the path) starts over at
    // the new file's beginning.
    let mut at = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    let mut id = file_id(&path);
    loop {
        tokio::time::sleep(POLL).await;
        let now = file_id(&path);
        if now != id {
            (id, at) = (now, 0);
        }
        let Ok(mut f) = std::fs::File::open(&path) else {
            continue;
        };
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        if len < at {
            at = 0;
        }
        if len == at || f.seek(SeekFrom::Start(at)).is_err() {
            continue;
        }
        let mut r = BufReader::new(f);
        // Only whole lines: a record being written is read at the next poll.
        at += read_records(&mut r, |rec| {
            if filter.wants(&rec) {
                show(&rec);
            }
        });
    }
}

/// Reads whole JSON lines from `r`, calling `each` with every record; returns the bytes of the
/// whole lines read (a last line without its newline is left for later).
fn read_records(r: &mut impl BufRead, mut each: impl FnMut(Value)) -> u64 {
    let mut done = 0;
    let mut line = Vec::new();
    loop {
        line.clear();
        let n = match r.by_ref().take(MAX_LINE).read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return done,
            Ok(n) => n as u64,
        };
        if line.last() != Some(&b'\n') {
            if n < MAX_LINE {
                return done;
            }
            // Too long: skip to its end, a bounded piece at a time.
            done += n;
            loop {
                line.clear();
                match r.by_ref().take(MAX_LINE).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => return done,
                    Ok(m) => done += m as u64,
                }
                if line.last() == Some(&b'\n') {
                    break;
                }
            }
            continue;
        }
        done += n;
        if let Ok(rec) = serde_json::from_slice::<Value>(&line) {
            each(rec);
        }
    }
}

#[cfg(unix)]
fn file_id(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()))
}

#[cfg(not(unix))]
fn file_id(p: &Path) -> Option<(u64, u64)> {
    std::fs::metadata(p).ok().map(|_| (0, 0))
}
