//! `native logs [--trace ID] [--tenant T] [--where FIELD=VALUE]... [--grep TEXT] [--follow]`:
//! the project's log history ([`crate::logfile`]), the records every verb and `native serve`
//! wrote, oldest first; with `--trace`, one chain's (`ctx.trace`, and the steps of other chains
//! that link it); `--where` and `--grep` narrow by field and by text; with `--follow`, then each new record as it is written,
//! until Ctrl-C. One readable line a record on a terminal, JSON lines otherwise
//! (`NATIVE_LOG_FORMAT=json|text` chooses).

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};

/// Which records `native logs` prints.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Only this chain's, and the steps of other chains that link it.
    pub trace: Option<String>,
    /// Only this tenant's.
    pub tenant: Option<String>,
    /// Only records whose field (a dotted path) is the value (`--where`), every one.
    pub fields: Vec<(Vec<String>, String)>,
    /// Only records with this text, lower-cased, in one of their values (`--grep`).
    pub text: Option<String>,
    /// At most this many of the history (the newest), before following.
    pub limit: usize,
}

/// The `--where FIELD=VALUE` filters, each as its path and value; a usage error names one
/// without `=` or a field.
pub fn fields(given: &[String]) -> std::result::Result<Vec<(Vec<String>, String)>, Failed> {
    given
        .iter()
        .map(|w| match w.split_once('=') {
            Some((field, value)) if !field.is_empty() && !field.split('.').any(str::is_empty) => {
                Ok((field.split('.').map(str::to_string).collect(), value.to_string()))
            }
            _ => Err(Failed::usage(format!(
                "--where {:?}: write FIELD=VALUE (e.g. --where order_id=o-17, --where origin.by=operator)",
                crate::show::text(w)
            ))),
        })
        .collect()
}

/// Whether `v` is `want` as written: a string is itself, a number or a boolean its JSON text.
fn is_value(v: &Value, want: &str) -> bool {
    match v {
        Value::String(s) => s == want,
        Value::Number(n) => n.to_string() == want,
        Value::Bool(b) => want == if *b { "true" } else { "false" },
        Value::Null => want == "null",
        _ => false,
    }
}

/// Whether a value of `v` (at any depth; keys are not read) holds `text`, lower-cased.
fn holds(v: &Value, text: &str) -> bool {
    match v {
        Value::String(s) => s.to_lowercase().contains(text),
        Value::Number(_) | Value::Bool(_) => v.to_string().contains(text),
        Value::Array(a) => a.iter().any(|x| holds(x, text)),
        Value::Object(o) => o.values().any(|x| holds(x, text)),
        Value::Null => false,
    }
}

impl Filter {
    fn wants(&self, rec: &Value) -> bool {
        let is = |k: &str, want: &str| rec.get(k).and_then(Value::as_str) == Some(want);
        self.trace
            .as_deref()
            .is_none_or(|t| is("trace", t) || is("link", t))
            && self.tenant.as_deref().is_none_or(|t| is("tenant", t))
            && self.fields.iter().all(|(path, want)| {
                path.iter()
                    .try_fold(rec, |v, k| v.get(k))
                    .is_some_and(|v| is_value(v, want))
            })
            && self.text.as_deref().is_none_or(|t| holds(rec, t))
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
            let narrowed = !filter.fields.is_empty() || filter.text.is_some();
            let what = match (&filter.trace, &filter.tenant) {
                (Some(t), _) => format!("no log record of trace {t:?}"),
                (None, Some(t)) => format!("no log record of tenant {t:?}"),
                (None, None) if narrowed => "no log record".to_string(),
                (None, None) => "no log records yet".to_string(),
            };
            let what = if narrowed {
                format!("{what} matches --where and --grep")
            } else {
                what
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn filter(wheres: &[&str], grep: Option<&str>) -> Filter {
        let given: Vec<String> = wheres.iter().map(|w| w.to_string()).collect();
        Filter {
            fields: fields(&given).unwrap_or_else(|_| panic!("{given:?}")),
            text: grep.map(str::to_lowercase),
            limit: 10,
            ..Default::default()
        }
    }

    #[test]
    fn where_and_grep_narrow_by_field_and_by_text() {
        let rec = json!({ "msg": "Order placed", "order_id": "o-17", "attempt": 2, "ok": true,
            "origin": { "by": "operator", "via": "cli" }, "trace": "t1" });
        for (w, g, want) in [
            (&["order_id=o-17"][..], None, true),
            (&["order_id=o-1"], None, false),
            (&["attempt=2", "ok=true"], None, true),
            (&["attempt=2", "ok=false"], None, false),
            (&["origin.by=operator"], None, true),
            (&["origin.by.x=operator"], None, false),
            (&["origin=operator"], None, false),
            (&["missing="], None, false),
            (&[], Some("ORDER PLACED"), true),
            (&[], Some("operator"), true),
            (&[], Some("origin"), false),
            (&["order_id=o-17"], Some("nothing"), false),
        ] {
            assert_eq!(filter(w, g).wants(&rec), want, "{w:?} {g:?}");
        }
        // A value may hold '=': the first one splits.
        assert_eq!(
            fields(&["q=a=b".into()]).ok().unwrap(),
            [(vec!["q".to_string()], "a=b".to_string())]
        );
        for bad in ["order_id", "=x", "a..b=x", ".a=x"] {
            assert!(fields(&[bad.into()]).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_trace_shows_the_steps_that_link_it() {
        let f = Filter {
            trace: Some("t2".into()),
            ..Default::default()
        };
        assert!(f.wants(&json!({ "trace": "t2" })));
        assert!(f.wants(&json!({ "trace": "t1", "step": true, "link": "t2" })));
        assert!(!f.wants(&json!({ "trace": "t1" })));
    }
}
