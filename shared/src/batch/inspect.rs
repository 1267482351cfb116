//! One job as an operator looks at it (the console): its request, its state, the partner's
//! answer, and each result part as stored; on request, each part read through and checked
//! against what `done.json` promised (bytes and sha256 of the stored object, rows of its
//! decompressed NDJSON). Also how many jobs of a tenant are still running, from one listing.
//!
//! Nothing here is on a script's path: a script's reads go through [`super::reader`], which
//! checks the same promises as it streams.

use std::io::Write;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::manifest::{check_job_id, state_key, Done, State};
use super::partner::batch_folder;
use crate::config::Deployment;
use crate::ports::ObjectStore;
use crate::{Error, Result};

/// The most bytes one check reads, over every part of a job.
pub const MAX_CHECK_BYTES: u64 = 256 * 1024 * 1024;

/// A job as stored.
#[derive(Debug, Clone)]
pub struct JobView {
    /// The job id.
    pub job: String,
    /// `request.json`, parsed as JSON (as written, whatever it holds).
    pub request: Option<Value>,
    /// When `request.json` was written.
    pub requested_ms: Option<i64>,
    /// `state/<job>.json`, the continuation's side.
    pub state: Option<State>,
    /// `done.json`, when the partner answered; `Err` with why when it is not a valid answer.
    pub done: Option<std::result::Result<Done, String>>,
    /// Waiting longer than its `stale_after_s`, with no `done.json`.
    pub stale: bool,
    /// Every part that `done.json` names, in result name order.
    pub parts: Vec<PartView>,
}

/// One result part.
#[derive(Debug, Clone)]
pub struct PartView {
    /// The result (query) name.
    pub result: String,
    /// Relative to the job folder.
    pub key: String,
    /// Size promised in `done.json`.
    pub bytes: Option<u64>,
    /// sha256 promised in `done.json`.
    pub sha256: Option<String>,
    /// Size of the stored object (of the text, for a part inline in `done.json`); `None` when
    /// it is missing.
    pub stored: Option<u64>,
    /// The part's text, when it is inline in `done.json` rather than an object.
    pub inline: Option<String>,
    /// What reading it through found, when a check was asked for.
    pub checked: Option<std::result::Result<Checked, String>>,
}

/// What reading a part through found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Bytes of the stored object.
    pub bytes: u64,
    /// Its sha256, hex.
    pub sha256: String,
    /// Lines of its NDJSON (gunzipped when it is gzip).
    pub rows: u64,
    /// Whether it was gzip.
    pub gzip: bool,
}

/// How many of a tenant's jobs have a `request.json` and no `done.json`, reading at most
/// [`super::jobs::MAX_JOBS`] jobs' keys.
pub async fn running(
    objects: &dyn ObjectStore,
    deployment: &Deployment,
    tenant: &str,
) -> Result<u64> {
    let (bucket, folder) = batch_folder(deployment, tenant)?;
    let jobs = format!("{folder}jobs/");
    let mut running = 0u64;
    let mut current: Option<(String, bool, bool)> = None;
    let mut seen = 0usize;
    let mut after: Option<String> = None;
    let close = |c: Option<(String, bool, bool)>| u64::from(c.is_some_and(|(_, r, d)| r && !d));
    loop {
        let page = objects.list(&bucket, &jobs, after.as_deref(), 1000).await?;
        for o in &page.objects {
            let Some((job, file)) = o.key[jobs.len()..].split_once('/') else {
                continue;
            };
            if current.as_ref().is_none_or(|c| c.0 != job) {
                running += close(current.take());
                seen += 1;
                current = Some((job.to_string(), false, false));
            }
            if let Some(c) = current.as_mut() {
                c.1 |= file == "request.json";
                c.2 |= file == "done.json";
            }
        }
        match page.next {
            Some(n) if seen < super::jobs::MAX_JOBS => after = Some(n),
            _ => break,
        }
    }
    Ok(running + close(current))
}

/// A job of a tenant, `None` when it has neither a request nor a state file. With `check`,
/// every part is read through (at most [`MAX_CHECK_BYTES`] in all; parts past it say so).
pub async fn view(
    objects: &dyn ObjectStore,
    deployment: &Deployment,
    tenant: &str,
    job: &str,
    now_ms: i64,
    check: bool,
) -> Result<Option<JobView>> {
    check_job_id(job).map_err(Error::InvalidInput)?;
    let (bucket, folder) = batch_folder(deployment, tenant)?;
    let dir = format!("{folder}jobs/{job}/");
    let request = objects.get(&bucket, &format!("{dir}request.json")).await?;
    let state: Option<State> = objects
        .get(&bucket, &format!("{folder}{}", state_key(job)))
        .await?
        .and_then(|(_, b)| serde_json::from_slice(&b).ok());
    if request.is_none() && state.is_none() {
        return Ok(None);
    }
    let requested_ms = request.as_ref().map(|(m, _)| m.modified_ms);
    let request = request.map(|(_, b)| {
        serde_json::from_slice(&b)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&b).into_owned()))
    });
    let done = objects
        .get(&bucket, &format!("{dir}done.json"))
        .await?
        .map(|(_, b)| super::contract::read_done(&b));
    let created = state.as_ref().map(|s| s.created_ms).or(requested_ms);
    let stale = done.is_none()
        && match (created, state.as_ref().and_then(|s| s.stale_after_s)) {
            (Some(c), Some(after_s)) => (now_ms - c) / 1000 >= after_s as i64,
            _ => false,
        };
    let mut parts = Vec::new();
    if let Some(Ok(d)) = &done {
        for (name, set) in &d.results {
            for p in &set.parts {
                parts.push(PartView {
                    result: name.clone(),
                    key: p.key.clone(),
                    bytes: p.bytes,
                    sha256: p.sha256.clone(),
                    stored: None,
                    inline: p.data.clone(),
                    checked: None,
                });
            }
        }
    }
    let mut budget = MAX_CHECK_BYTES;
    for p in &mut parts {
        if let Some(text) = &p.inline {
            p.stored = Some(text.len() as u64);
            if check {
                let mut lines = Lines::default();
                let _ = lines.write(text.as_bytes());
                p.checked = Some(Ok(Checked {
                    bytes: text.len() as u64,
                    sha256: hex::encode(Sha256::digest(text.as_bytes())),
                    rows: lines.rows(),
                    gzip: false,
                }));
            }
            continue;
        }
        let full = format!("{dir}{}", p.key);
        p.stored = objects.head(&bucket, &full).await?.map(|m| m.size);
        if check {
            p.checked = Some(match p.stored {
                None => Err("missing".into()),
                Some(size) if size > budget => Err(format!(
                    "not read: this check reads at most {} MB in all",
                    MAX_CHECK_BYTES >> 20
                )),
                Some(_) => {
                    let c = read_through(objects, &bucket, &full).await;
                    if let Ok(c) = &c {
                        budget = budget.saturating_sub(c.bytes);
                    }
                    c
                }
            });
        }
    }
    Ok(Some(JobView {
        job: job.to_string(),
        request,
        requested_ms,
        state,
        done,
        stale,
        parts,
    }))
}

/// Counts lines written into it.
#[derive(Default)]
struct Lines {
    rows: u64,
    last: Option<u8>,
}

impl Write for Lines {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.rows += memchr::memchr_iter(b'\n', buf).count() as u64;
        if let Some(b) = buf.last() {
            self.last = Some(*b);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Lines {
    /// Lines, counting a last one without its newline.
    fn rows(&self) -> u64 {
        self.rows + u64::from(self.last.is_some_and(|b| b != b'\n'))
    }
}

async fn read_through(
    objects: &dyn ObjectStore,
    bucket: &str,
    key: &str,
) -> std::result::Result<Checked, String> {
    let Some((_, mut reader)) = objects.open(bucket, key).await.map_err(|e| e.to_string())? else {
        return Err("missing".into());
    };
    let mut hash = Sha256::new();
    let mut bytes = 0u64;
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Lines::default()));
    // gzip or not is decided by the first bytes (gzip's magic number), as the reader does.
    let mut gz: Option<flate2::write::MultiGzDecoder<Shared>> = None;
    let mut gzip = false;
    while let Some(chunk) = reader.next_chunk().await.map_err(|e| e.to_string())? {
        if bytes == 0 {
            gzip = chunk.starts_with(&[0x1f, 0x8b]);
            if gzip {
                gz = Some(flate2::write::MultiGzDecoder::new(Shared(lines.clone())));
            }
        }
        bytes += chunk.len() as u64;
        hash.update(&chunk);
        match gz.as_mut() {
            Some(d) => d
                .write_all(&chunk)
                .map_err(|e| format!("not valid gzip: {e}"))?,
            None => Shared(lines.clone())
                .write_all(&chunk)
                .map_err(|e| e.to_string())?,
        }
    }
    if let Some(d) = gz {
        d.finish().map_err(|e| format!("not valid gzip: {e}"))?;
    }
    let rows = lines.lock().unwrap_or_else(|p| p.into_inner()).rows();
    Ok(Checked {
        bytes,
        sha256: hex::encode(hash.finalize()),
        rows,
        gzip,
    })
}

/// A line counter the gzip decoder writes into while the caller still reads it after.
struct Shared(std::sync::Arc<std::sync::Mutex<Lines>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_count_a_last_row_without_its_newline() {
        let mut l = Lines::default();
        l.write_all(b"{}\n{}\n{}").unwrap();
        assert_eq!(l.rows(), 3);
        let mut l = Lines::default();
        l.write_all(b"{}\n").unwrap();
        assert_eq!(l.rows(), 1);
        assert_eq!(Lines::default().rows(), 0);
    }
}
