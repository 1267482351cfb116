//! The partner's side of `native.batch`: find the requests of a tenant that have no answer yet,
//! and answer one by running each query (a shell command, or a folder of fixture files), writing
//! the result parts and then `done.json` last.
//!
//! Real partners implement this contract themselves (see `docs/partners.md`); this module is the
//! reference implementation behind `native partner`, which tests and local projects use.
//!
//! What it writes, per query `<name>` of `jobs/<job>/request.json`:
//!
//! ```text
//! jobs/<job>/<name>.0000.ndjson      whole NDJSON lines, at most `part_bytes` of them per part
//! jobs/<job>/<name>.0001.ndjson      (`.ndjson.gz` with gzip: each part one gzip stream)
//! jobs/<job>/done.json               last: rows of each result, bytes and sha256 of each part
//! ```
//!
//! Blank lines are dropped and every other line must be JSON, so `rows` is the number of lines
//! stored. A result without rows has no parts. When a query fails, the parts written for the job
//! are deleted and `done.json` is `{ "ok": false, "error": "query <name>: ..." }`.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bytes::Bytes;
use flate2::read::MultiGzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use sha2::{Digest, Sha256};

use super::manifest::{
    check_job_id, check_part_key, job_dir, Dataset, Done, Part, Request, MAX_INLINE_BYTES,
};
use crate::config::Deployment;
use crate::ports::{ObjectStore, PutMode};
use crate::{Error, Result};

/// The default largest part: 64 MiB of NDJSON.
pub const DEFAULT_PART_BYTES: u64 = 64 << 20;

/// How much of a failed command's stderr goes into the error of `done.json`.
const STDERR_TAIL_BYTES: usize = 2000;

/// Where the rows of a query come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// `sh -c CMD`, once per query: the request JSON on stdin, the query in the environment
    /// (`NATIVE_TENANT`, `NATIVE_JOB`, `NATIVE_QUERY_NAME`, `NATIVE_QUERY`,
    /// `NATIVE_QUERY_PARAMS` as JSON, and `NATIVE_INPUTS_DIR` when the request has inputs: a
    /// folder with `<input>.ndjson` per input, verified and decompressed). Stdout is the result.
    Exec(String),
    /// A folder of files: `<query>.ndjson` (by the query string), else `<name>.ndjson` (by the
    /// query's name). Gzipped files are read as such.
    Fixtures(PathBuf),
    /// Rows handed over by the caller (`native test`'s `t:partner`): per query name, its NDJSON
    /// text, or why the query fails. A query not named fails, saying so.
    Given(BTreeMap<String, std::result::Result<String, String>>),
}

/// How [`answer`] answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// Where rows come from.
    pub source: Source,
    /// Store each part gzipped (`<name>.NNNN.ndjson.gz`).
    pub gzip: bool,
    /// The largest part, counted in NDJSON bytes before compression. A part holds whole lines,
    /// so a single line longer than this gets a part of its own.
    pub part_bytes: u64,
    /// Put a result that fits in one plain part into `done.json` itself (`Part::data`) rather
    /// than an object, while `done.json` holds at most [`MAX_INLINE_BYTES`] of them: one PUT
    /// fewer for the partner and one GET fewer for the continuation per such result.
    pub inline: bool,
}

impl Options {
    /// Plain parts of [`DEFAULT_PART_BYTES`] from `source`.
    pub fn new(source: Source) -> Self {
        Options {
            source,
            gzip: false,
            part_bytes: DEFAULT_PART_BYTES,
            inline: true,
        }
    }
}

/// What [`answer`] did for one job.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// The job id.
    pub job: String,
    /// The `done.json` of the job: the one written, or the one that was already there.
    pub done: Done,
    /// Whether this call wrote `done.json` (false when the job had been answered already).
    pub written: bool,
}

impl Answer {
    /// Rows over all results.
    pub fn rows(&self) -> u64 {
        self.done.results.values().filter_map(|d| d.rows).sum()
    }
}

/// The key of part `index` of the result `name`, relative to the job folder.
pub fn part_key(name: &str, index: usize, gzip: bool) -> String {
    let ext = if gzip { "ndjson.gz" } else { "ndjson" };
    format!("{name}.{index:04}.{ext}")
}

/// The real batch bucket and the tenant's folder in it (`<prefix><tenant>/`).
pub(crate) fn batch_folder(deployment: &Deployment, tenant: &str) -> Result<(String, String)> {
    crate::keys::check_name("tenant", tenant).map_err(Error::InvalidInput)?;
    let bucket = deployment
        .real_bucket("$batch")
        .ok_or_else(|| Error::NotFound {
            what: "the batch bucket".into(),
            hint: "deployment.json has no \"batch\" section".into(),
            missing: crate::error::Missing::Other,
        })?;
    Ok((
        bucket.to_string(),
        deployment.full_key("$batch", tenant, ""),
    ))
}

/// The requests of `tenant` that have no `done.json` yet, in job id order. A `request.json`
/// that is not a v1 request of its folder's job is an [`Error::InvalidInput`] naming its key.
pub async fn pending(
    objects: &dyn ObjectStore,
    deployment: &Deployment,
    tenant: &str,
) -> Result<Vec<Request>> {
    let (bucket, folder) = batch_folder(deployment, tenant)?;
    let jobs = format!("{folder}jobs/");
    let mut requested = BTreeSet::new();
    let mut done = BTreeSet::new();
    let mut after: Option<String> = None;
    loop {
        let page = objects.list(&bucket, &jobs, after.as_deref(), 1000).await?;
        for o in &page.objects {
            let Some((job, file)) = o.key[jobs.len()..].split_once('/') else {
                continue;
            };
            match file {
                "request.json" => requested.insert(job.to_string()),
                "done.json" => done.insert(job.to_string()),
                _ => false,
            };
        }
        match page.next {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    let mut out = Vec::new();
    for job in requested.difference(&done) {
        let key = format!("{jobs}{job}/request.json");
        let Some((_, body)) = objects.get(&bucket, &key).await? else {
            continue; // cleaned up since the listing
        };
        let request: Request = super::contract::read_request(&body).map_err(|e| {
            Error::InvalidInput(format!("{bucket}/{key} is not a request.json: {e}"))
        })?;
        if request.job != *job {
            return Err(Error::InvalidInput(format!(
                "{bucket}/{key} names the job {:?}, but sits in the folder of {job:?}",
                request.job
            )));
        }
        out.push(request);
    }
    Ok(out)
}

/// Answers one request of `tenant`: runs its queries in order, writes each result's parts, and
/// writes `done.json` last (create-only, so a second answer never replaces the first). A query
/// that fails (a command exiting non-zero, output that is not NDJSON, a missing fixture, an input
/// that does not verify) makes the answer `ok: false` with an error naming the query; errors of
/// the backend or of this machine are returned instead, and leave the job unanswered.
pub async fn answer(
    objects: &dyn ObjectStore,
    deployment: &Deployment,
    tenant: &str,
    request: &Request,
    opts: &Options,
) -> Result<Answer> {
    let (bucket, folder) = batch_folder(deployment, tenant)?;
    check_job_id(&request.job).map_err(Error::InvalidInput)?;
    let dir = format!("{folder}{}", job_dir(&request.job));
    let done_key = format!("{dir}done.json");
    if let Some(existing) = existing_done(objects, &bucket, &done_key).await? {
        return Ok(Answer {
            job: request.job.clone(),
            done: existing,
            written: false,
        });
    }

    let mut written = Vec::new();
    let job = Job {
        objects,
        bucket: &bucket,
        dir: &dir,
        tenant,
        request,
        opts,
        inline_left: std::sync::atomic::AtomicU64::new(if opts.inline && !opts.gzip {
            MAX_INLINE_BYTES
        } else {
            0
        }),
    };
    let outcome = job.run(&mut written).await;
    let done = match outcome {
        Ok(Ok(results)) => Done {
            ok: true,
            error: None,
            results,
        },
        Ok(Err(error)) => {
            for key in &written {
                objects.delete(&bucket, key).await?;
            }
            Done {
                ok: false,
                error: Some(error),
                results: BTreeMap::new(),
            }
        }
        Err(e) => return Err(e),
    };
    let body = serde_json::to_vec_pretty(&done)
        .map_err(|e| Error::InvalidInput(format!("cannot encode done.json: {e}")))?;
    match objects
        .put(&bucket, &done_key, Bytes::from(body), PutMode::Create)
        .await
    {
        Ok(_) => Ok(Answer {
            job: request.job.clone(),
            done,
            written: true,
        }),
        Err(Error::AlreadyExists { .. }) => Ok(Answer {
            job: request.job.clone(),
            done: existing_done(objects, &bucket, &done_key)
                .await?
                .unwrap_or(done),
            written: false,
        }),
        Err(e) => Err(e),
    }
}

/// The `done.json` already at `key`, if any (an unreadable one reads as a failure).
async fn existing_done(objects: &dyn ObjectStore, bucket: &str, key: &str) -> Result<Option<Done>> {
    let Some((_, body)) = objects.get(bucket, key).await? else {
        return Ok(None);
    };
    Ok(Some(serde_json::from_slice(&body).unwrap_or_else(|e| {
        Done {
            ok: false,
            error: Some(format!("the existing done.json is not valid: {e}")),
            results: BTreeMap::new(),
        }
    })))
}

/// A query's outcome: the partner's failure (for `done.json`) inside the tool's own errors.
type Outcome<T> = Result<std::result::Result<T, String>>;

/// One request being answered.
struct Job<'a> {
    objects: &'a dyn ObjectStore,
    bucket: &'a str,
    /// The job folder, as a full key ending in `/`.
    dir: &'a str,
    tenant: &'a str,
    request: &'a Request,
    opts: &'a Options,
    /// What `done.json` may still take inline.
    inline_left: std::sync::atomic::AtomicU64,
}

impl Job<'_> {
    /// Runs every query; `written` collects the full keys of the parts stored.
    async fn run(&self, written: &mut Vec<String>) -> Outcome<BTreeMap<String, Dataset>> {
        let r = self.request;
        if r.v != super::manifest::REQUEST_VERSION {
            return Ok(Err(format!(
                "request.json has version {}; this partner answers version {}",
                r.v,
                super::manifest::REQUEST_VERSION
            )));
        }
        let mut names = BTreeSet::new();
        for q in &r.queries {
            if !names.insert(q.name.as_str()) {
                return Ok(Err(format!("query {} appears twice", q.name)));
            }
            if let Err(why) = check_part_key(&part_key(&q.name, 0, self.opts.gzip)) {
                return Ok(Err(format!(
                    "query {}: the name cannot name result parts: {why}",
                    q.name
                )));
            }
        }
        let inputs = match &self.opts.source {
            Source::Exec(_) if !r.inputs.is_empty() => {
                let tmp = TempDir::new(&r.job)
                    .map_err(|e| Error::backend("local", "cannot make a folder for inputs", e))?;
                if let Err(why) = self.fetch_inputs(tmp.path()).await? {
                    return Ok(Err(why));
                }
                Some(tmp)
            }
            _ => None,
        };
        let mut results = BTreeMap::new();
        for q in &r.queries {
            let ctx = QueryCtx {
                tenant: self.tenant.to_string(),
                request: r.clone(),
                name: q.name.clone(),
                query: q.query.clone(),
                params: q.params.to_string(),
                inputs_dir: inputs.as_ref().map(|t| t.path().to_path_buf()),
            };
            match self.query(ctx, written).await? {
                Ok(dataset) => {
                    results.insert(q.name.clone(), dataset);
                }
                Err(why) => return Ok(Err(format!("query {}: {why}", q.name))),
            }
        }
        Ok(Ok(results))
    }

    /// Runs one query in a blocking thread, storing each part as the thread hands it over, so
    /// that at most one part or two is in memory however long the result is.
    async fn query(&self, ctx: QueryCtx, written: &mut Vec<String>) -> Outcome<Dataset> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<(Vec<u8>, u64)>(1);
        let source = self.opts.source.clone();
        let split = Split {
            part_bytes: usize::try_from(self.opts.part_bytes.max(1)).unwrap_or(usize::MAX),
            gzip: self.opts.gzip,
        };
        let name = ctx.name.clone();
        let producer = tokio::task::spawn_blocking(move || {
            let mut emit = |data, rows| tx.blocking_send((data, rows)).is_ok();
            produce(&source, &ctx, split, &mut emit)
        });
        let mut parts = Vec::new();
        let mut rows = 0;
        // Each part is stored when the next one comes, so that a result of one part may go
        // inline instead, once the producer says it was the last.
        let mut held: Option<Vec<u8>> = None;
        while let Some((data, n)) = rx.recv().await {
            rows += n;
            let Some(prev) = held.replace(data) else {
                continue;
            };
            if let Err(e) = self.store(&name, prev, &mut parts, written).await {
                drop(rx); // the producer stops at its next part
                let _ = producer.await;
                return Err(e);
            }
        }
        let produced = producer
            .await
            .map_err(|e| Error::backend("local", "the query's thread failed", e))?;
        match produced {
            Ok(()) => {
                if let Some(last) = held {
                    match self.inline(&name, &last, parts.is_empty()) {
                        Some(part) => parts.push(part),
                        None => self.store(&name, last, &mut parts, written).await?,
                    }
                }
                Ok(Ok(Dataset {
                    rows: Some(rows),
                    parts,
                    extra: BTreeMap::new(),
                }))
            }
            Err(Stop::Fail(why)) => Ok(Err(why)),
            Err(Stop::Tool(why)) => Err(Error::Backend {
                backend: "local",
                message: why,
                source: None,
            }),
            Err(Stop::Gone) => Err(Error::Backend {
                backend: "local",
                message: "the query stopped early".into(),
                source: None,
            }),
        }
    }

    /// Stores `data` as the next part of the result `name`.
    async fn store(
        &self,
        name: &str,
        data: Vec<u8>,
        parts: &mut Vec<Part>,
        written: &mut Vec<String>,
    ) -> Result<()> {
        let key = part_key(name, parts.len(), self.opts.gzip);
        let full = format!("{}{key}", self.dir);
        let part = Part {
            key,
            bytes: Some(data.len() as u64),
            sha256: Some(hex::encode(Sha256::digest(&data))),
            data: None,
        };
        self.objects
            .put(self.bucket, &full, Bytes::from(data), PutMode::Overwrite)
            .await?;
        written.push(full);
        parts.push(part);
        Ok(())
    }

    /// `data` as an inline part, when it is the result's only part, is text, and fits in
    /// what `done.json` may still take.
    fn inline(&self, name: &str, data: &[u8], only: bool) -> Option<Part> {
        use std::sync::atomic::Ordering;
        let text = std::str::from_utf8(data).ok().filter(|_| only)?;
        let len = text.len() as u64;
        self.inline_left
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                left.checked_sub(len)
            })
            .ok()?;
        Some(Part {
            key: part_key(name, 0, false),
            bytes: Some(len),
            sha256: Some(hex::encode(Sha256::digest(data))),
            data: Some(text.to_string()),
        })
    }

    /// Downloads every input into `dir` as `<input>.ndjson`, checking what the request promises
    /// (bytes, sha256, rows) and decompressing gzipped parts, as a partner reading inputs would.
    async fn fetch_inputs(&self, dir: &Path) -> Outcome<()> {
        for (name, input) in &self.request.inputs {
            if !is_file_name(name) {
                return Ok(Err(format!("input {name:?} cannot be a file name")));
            }
            let mut file = Vec::new();
            let mut rows = 0u64;
            for part in &input.parts {
                if let Err(why) = check_part_key(&part.key) {
                    return Ok(Err(format!("input {name}: {why}")));
                }
                let full = format!("{}{}", self.dir, part.key);
                let Some((_, data)) = self.objects.get(self.bucket, &full).await? else {
                    return Ok(Err(format!("input {name}: part {} is missing", part.key)));
                };
                if let Err(why) = verify(part, &data) {
                    return Ok(Err(format!("input {name}: {why}")));
                }
                let plain = match gunzip_if_gzip(&data) {
                    Ok(p) => p,
                    Err(e) => return Ok(Err(format!("input {name}: part {}: {e}", part.key))),
                };
                rows += plain
                    .split(|b| *b == b'\n')
                    .filter(|l| !l.trim_ascii().is_empty())
                    .count() as u64;
                file.extend_from_slice(&plain);
                if !file.is_empty() && !file.ends_with(b"\n") {
                    file.push(b'\n');
                }
            }
            if let Some(want) = input.rows {
                if want != rows {
                    return Ok(Err(format!(
                        "input {name}: the request promises {want} rows, the parts hold {rows}"
                    )));
                }
            }
            std::fs::write(dir.join(format!("{name}.ndjson")), &file)
                .map_err(|e| Error::backend("local", format!("cannot write input {name}"), e))?;
        }
        Ok(Ok(()))
    }
}

/// Checks a stored part against what its manifest entry promises.
fn verify(part: &Part, data: &[u8]) -> std::result::Result<(), String> {
    if let Some(bytes) = part.bytes {
        if bytes != data.len() as u64 {
            return Err(format!(
                "part {} has {} bytes, not the {bytes} promised",
                part.key,
                data.len()
            ));
        }
    }
    if let Some(sha) = &part.sha256 {
        let got = hex::encode(Sha256::digest(data));
        if !got.eq_ignore_ascii_case(sha) {
            return Err(format!(
                "part {} has sha256 {got}, not the {sha} promised",
                part.key
            ));
        }
    }
    Ok(())
}

/// The data, decompressed when it starts with the gzip magic bytes.
fn gunzip_if_gzip(data: &[u8]) -> std::io::Result<Vec<u8>> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Ok(data.to_vec());
    }
    let mut out = Vec::new();
    MultiGzDecoder::new(data).read_to_end(&mut out)?;
    Ok(out)
}

/// Whether `s` is safe as a file name in a folder: letters, digits, `-`, `_` and `.`, not only
/// dots.
fn is_file_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 128
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !s.chars().all(|c| c == '.')
}

/// What the thread running a query needs.
struct QueryCtx {
    tenant: String,
    request: Request,
    name: String,
    query: String,
    /// The params as JSON text.
    params: String,
    inputs_dir: Option<PathBuf>,
}

/// Why a query's rows stopped.
enum Stop {
    /// The query failed: goes into `done.json`.
    Fail(String),
    /// This machine failed (the shell could not start): the job stays unanswered.
    Tool(String),
    /// The receiving side went away.
    Gone,
}

/// How rows are cut into parts.
#[derive(Debug, Clone, Copy)]
struct Split {
    part_bytes: usize,
    gzip: bool,
}

/// Produces the query's parts through `emit` (blocking).
fn produce(
    source: &Source,
    ctx: &QueryCtx,
    split: Split,
    emit: &mut dyn FnMut(Vec<u8>, u64) -> bool,
) -> std::result::Result<(), Stop> {
    match source {
        Source::Exec(cmd) => exec(cmd, ctx, split, emit),
        Source::Given(rows) => match rows.get(&ctx.name) {
            Some(Ok(text)) => split_lines(
                &mut text.as_bytes(),
                &format!("the rows given for query {}", ctx.name),
                split,
                emit,
            ),
            Some(Err(why)) => Err(Stop::Fail(why.clone())),
            None => Err(Stop::Fail(format!(
                "no rows were given for it (given: {})",
                rows.keys().cloned().collect::<Vec<_>>().join(", ")
            ))),
        },
        Source::Fixtures(dir) => {
            let mut tried = Vec::new();
            if is_file_name(&ctx.query) {
                tried.push(dir.join(format!("{}.ndjson", ctx.query)));
            }
            tried.push(dir.join(format!("{}.ndjson", ctx.name)));
            let Some(path) = tried.iter().find(|p| p.is_file()) else {
                let looked: Vec<_> = tried.iter().map(|p| p.display().to_string()).collect();
                return Err(Stop::Fail(format!(
                    "no fixture file (looked for {})",
                    looked.join(" and ")
                )));
            };
            let file = std::fs::File::open(path)
                .map_err(|e| Stop::Fail(format!("cannot read fixture {}: {e}", path.display())))?;
            let mut input = BufReader::new(file);
            let gz = input
                .fill_buf()
                .map(|b| b.starts_with(&[0x1f, 0x8b]))
                .unwrap_or(false);
            let what = format!("fixture {}", path.display());
            if gz {
                split_lines(
                    &mut BufReader::new(MultiGzDecoder::new(input)),
                    &what,
                    split,
                    emit,
                )
            } else {
                split_lines(&mut input, &what, split, emit)
            }
        }
    }
}

/// Runs `sh -c cmd` for one query and splits its stdout into parts.
fn exec(
    cmd: &str,
    ctx: &QueryCtx,
    split: Split,
    emit: &mut dyn FnMut(Vec<u8>, u64) -> bool,
) -> std::result::Result<(), Stop> {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .env("NATIVE_TENANT", &ctx.tenant)
        .env("NATIVE_JOB", &ctx.request.job)
        .env("NATIVE_QUERY_NAME", &ctx.name)
        .env("NATIVE_QUERY", &ctx.query)
        .env("NATIVE_QUERY_PARAMS", &ctx.params)
        .env_remove("NATIVE_INPUTS_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(dir) = &ctx.inputs_dir {
        command.env("NATIVE_INPUTS_DIR", dir);
    }
    let mut child = command
        .spawn()
        .map_err(|e| Stop::Tool(format!("cannot run sh -c {cmd:?}: {e}")))?;
    let request = serde_json::to_vec(&ctx.request).unwrap_or_default();
    let stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(mut stdin) = stdin {
            let _ = stdin.write_all(&request); // a command that does not read stdin is fine
        }
    });
    let stderr = child.stderr.take();
    let tail = std::thread::spawn(move || stderr.map(read_tail).unwrap_or_default());
    let mut out = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let split_result = split_lines(&mut out, "the command's output", split, emit);
    if matches!(split_result, Err(Stop::Gone)) {
        let _ = child.kill();
    } else {
        // Read to the end, so that a command failing after bad output reports its exit status.
        let _ = std::io::copy(&mut out, &mut std::io::sink());
    }
    let status = child
        .wait()
        .map_err(|e| Stop::Tool(format!("cannot wait for sh -c {cmd:?}: {e}")))?;
    let _ = writer.join();
    let tail = tail.join().unwrap_or_default();
    if matches!(split_result, Err(Stop::Gone)) {
        return split_result;
    }
    if !status.success() {
        let how = match status.code() {
            Some(code) => format!("command exited with {code}"),
            None => "command was killed by a signal".to_string(),
        };
        return Err(Stop::Fail(if tail.is_empty() {
            how
        } else {
            format!("{how}: {tail}")
        }));
    }
    split_result
}

/// The last [`STDERR_TAIL_BYTES`] of a stream, as trimmed text.
fn read_tail(mut r: impl Read) -> String {
    let mut kept: Vec<u8> = Vec::new();
    let mut buf = [0u8; 8192];
    let mut cut = false;
    loop {
        match r.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                kept.extend_from_slice(&buf[..n]);
                if kept.len() > 2 * STDERR_TAIL_BYTES {
                    kept.drain(..kept.len() - STDERR_TAIL_BYTES);
                    cut = true;
                }
            }
        }
    }
    if kept.len() > STDERR_TAIL_BYTES {
        kept.drain(..kept.len() - STDERR_TAIL_BYTES);
        cut = true;
    }
    let text = String::from_utf8_lossy(&kept).trim().to_string();
    if cut {
        format!("...{text}")
    } else {
        text
    }
}

/// Cuts NDJSON into parts of whole lines: blank lines are dropped, every other line must be
/// JSON, and a last line without a newline gets one. Each part goes to `emit` with its rows.
fn split_lines(
    input: &mut dyn BufRead,
    what: &str,
    split: Split,
    emit: &mut dyn FnMut(Vec<u8>, u64) -> bool,
) -> std::result::Result<(), Stop> {
    let mut part = Vec::new();
    let mut rows = 0u64;
    let mut line = Vec::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let n = input
            .read_until(b'\n', &mut line)
            .map_err(|e| Stop::Fail(format!("cannot read {what}: {e}")))?;
        if n == 0 {
            break;
        }
        number += 1;
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(text) {
            return Err(Stop::Fail(format!(
                "line {number} of {what} is not JSON: {e}"
            )));
        }
        if !line.ends_with(b"\n") {
            line.push(b'\n');
        }
        if !part.is_empty() && part.len() + line.len() > split.part_bytes {
            flush(&mut part, &mut rows, split.gzip, emit)?;
        }
        part.extend_from_slice(&line);
        rows += 1;
    }
    if !part.is_empty() {
        flush(&mut part, &mut rows, split.gzip, emit)?;
    }
    Ok(())
}

/// Hands the current part over (gzipped when asked) and starts the next.
fn flush(
    part: &mut Vec<u8>,
    rows: &mut u64,
    gzip: bool,
    emit: &mut dyn FnMut(Vec<u8>, u64) -> bool,
) -> std::result::Result<(), Stop> {
    let plain = std::mem::take(part);
    let data = if gzip {
        let mut enc = GzEncoder::new(Vec::with_capacity(plain.len() / 4), Compression::default());
        enc.write_all(&plain)
            .and_then(|_| enc.finish())
            .map_err(|e| Stop::Tool(format!("cannot gzip a part: {e}")))?
    } else {
        plain
    };
    let n = std::mem::take(rows);
    if emit(data, n) {
        Ok(())
    } else {
        Err(Stop::Gone)
    }
}

/// A folder that is removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(job: &str) -> std::io::Result<Self> {
        let nonce: u64 = rand::random();
        let path = std::env::temp_dir().join(format!("native-partner-{job}-{nonce:016x}"));
        std::fs::create_dir_all(&path)?;
        Ok(TempDir(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(test)]
mod tests;
