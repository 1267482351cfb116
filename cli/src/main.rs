//! `native`: the local runtime and tools for native projects. Every verb works on the embedded
//! backend in the project's `.native/` folder.

// Every verb prints through `out`, which treats a closed pipe as a reader that is done.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod commands;
mod examples;
mod logfile;
mod out;
mod served_log;
mod show;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// native: run tenants' Luau scripts locally, on the embedded backend.
///
/// What `native --version` prints: the version, and whether this is a debug build (its figures,
/// a benchmark's or the hostile-load suite's, are not a release build's).
const VERSION: &str = if cfg!(debug_assertions) {
    concat!(env!("CARGO_PKG_VERSION"), " (debug build)")
} else {
    env!("CARGO_PKG_VERSION")
};

/// A project is a folder with deployment.json, tenants/<tenant>/config.json and
/// tenants/<tenant>/scripts/<name>.luau. State lives in its .native/ folder.
/// Exit codes: 0 success; 1 the verb's own work failed, its invocation or a message it caused
/// (stderr names script and line; older messages failing again are only reported); 2 usage or
/// config error.
#[derive(Parser, Debug)]
#[command(name = "native", version = VERSION, about, long_about)]
pub struct Cli {
    /// The project folder (default: the nearest folder holding deployment.json, from the
    /// current one up, as cargo and git look for theirs).
    #[arg(long, global = true, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Say what ran: each script run (tenant, script, entry point, attempt, time, outcome)
    /// and where each object event was routed, on stderr.
    #[arg(short, long, global = true)]
    verbose: bool,
    #[command(subcommand)]
    command: Command,
}

/// The verbs.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build projects from the examples and run them end to end, printing each step: in a
    /// temporary folder, or kept in --project DIR (as DIR/hello, DIR/barrier, DIR/batch).
    Demo,
    /// Make a working project with an example tenant in DIR (default: --project, else the
    /// current folder; a relative DIR is taken inside --project when both are given), with a
    /// .gitignore for .native/ and the types of the host API for luau-lsp (native.d.luau,
    /// .luaurc).
    Init {
        /// Where to make the project.
        dir: Option<PathBuf>,
        /// The example tenant's name (default: hello).
        #[arg(long, value_name = "NAME", default_value = "hello")]
        tenant: String,
    },
    /// Validate deployment.json and every tenant config, and compile every script.
    Check,
    /// Run the project's tests: every tenants/<tenant>/tests/**/*.test.luau. Each file calls
    /// test(name, fn); each fn(t) gets a fresh world (the project's scripts over an empty store,
    /// the clock frozen at 2026-01-01, the same ids on every run, outbound HTTP stubbed); the
    /// project's .native/ is never touched. See docs/testing.md. Exit 0, 1 when a test failed,
    /// 2 for a usage or config error.
    Test {
        /// Only these tenants' tests (default: every tenant's).
        tenants: Vec<String>,
        /// Only the tests whose "<file> :: <name>" contains TEXT.
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
        /// Also write the results as JUnit XML to FILE.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
        /// Fail a test whose own Luau runs longer than this many seconds (the scripts it runs
        /// keep their own deadlines).
        #[arg(long, value_name = "S", default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
    },
    /// Run a script's on_invoke(ctx, ev) and print its return value as JSON, then drain.
    Invoke {
        /// The tenant.
        tenant: String,
        /// The script.
        script: String,
        /// The event: JSON text, or @FILE to read it from a file (default: {}).
        event: Option<String>,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
    /// Queue a message for a script's on_queue(ctx, ev), then drain. A script without
    /// on_queue is refused (the message could only fail into the dead letters).
    Send {
        /// The tenant.
        tenant: String,
        /// The script.
        script: String,
        /// The event: JSON text, or @FILE (default: {}).
        event: Option<String>,
        /// Seconds before the message is visible (at most 900).
        #[arg(long, default_value_t = 0)]
        delay: u32,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
    /// Write an object into a tenant's folder as an outside party would (its notification
    /// fires), then drain. BUCKET is a logical name of buckets.map, or $batch.
    Put {
        /// The tenant.
        tenant: String,
        /// The logical bucket name, or $batch.
        bucket: String,
        /// The key, relative to the tenant's folder.
        key: String,
        /// @FILE to read the content from a file, - for standard input.
        source: Option<String>,
        /// The content, as text.
        #[arg(long)]
        data: Option<String>,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
    /// Print an object of a tenant's folder (exit 1 if it is missing).
    Get {
        /// The tenant.
        tenant: String,
        /// The logical bucket name, or $batch.
        bucket: String,
        /// The key, relative to the tenant's folder.
        key: String,
        /// Wait up to S seconds for the object to appear (one a running `native serve` is
        /// still making).
        #[arg(long, value_name = "S", value_parser = clap::value_parser!(u32).range(1..=3600))]
        wait: Option<u32>,
    },
    /// List the keys of a tenant's folder in a bucket, one a line.
    Ls {
        /// The tenant.
        tenant: String,
        /// The logical bucket name, or $batch.
        bucket: String,
        /// Only keys starting with this.
        prefix: Option<String>,
    },
    /// Play the partner of native.batch: answer every pending request of a tenant (a
    /// jobs/<job>/request.json without done.json), then drain so that the continuations run.
    ///
    /// Each query's rows come from --exec CMD (run as `sh -c CMD` once per query, with the
    /// request JSON on stdin and NATIVE_TENANT, NATIVE_JOB, NATIVE_QUERY_NAME, NATIVE_QUERY,
    /// NATIVE_QUERY_PARAMS and, when the request has inputs, NATIVE_INPUTS_DIR in the
    /// environment; stdout is the NDJSON result) or from --fixtures DIR (DIR/<query>.ndjson, else
    /// DIR/<name>.ndjson). Results are written as <name>.NNNN.ndjson parts with rows, bytes and
    /// sha256 in done.json, which is written last. A command exiting non-zero, output that is not
    /// NDJSON or a missing fixture answers the job with ok: false. Prints one line per job.
    #[command(group(clap::ArgGroup::new("source").required(true).args(["exec", "fixtures"])))]
    Partner {
        /// The tenant.
        tenant: String,
        /// Run this shell command per query; its stdout is the result.
        #[arg(long, value_name = "CMD")]
        exec: Option<String>,
        /// Answer from the files of this folder.
        #[arg(long, value_name = "DIR")]
        fixtures: Option<PathBuf>,
        /// Store the parts gzipped (<name>.NNNN.ndjson.gz).
        #[arg(long)]
        gzip: bool,
        /// The largest part in MiB of NDJSON (before compression); parts hold whole lines.
        #[arg(long, value_name = "N", default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..=4096))]
        part_mb: u64,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
    /// The project's log history, oldest first: every record its verbs and `native serve`
    /// wrote (scripts' log lines, failures, requests, the steps of chains), kept in
    /// .native/logs/ (8 MB, then the older half goes). One readable line each on a terminal,
    /// JSON lines otherwise.
    Logs {
        /// Only the records of this chain: the `trace` of a log line, `ctx.trace`, a dead
        /// letter's or a request's (a `traceparent`'s trace id), and the steps of other chains
        /// that link it.
        #[arg(long)]
        trace: Option<String>,
        /// Only this tenant's records.
        #[arg(long)]
        tenant: Option<String>,
        /// Only records whose field FIELD is VALUE (`--where order_id=o-17`; a dotted FIELD
        /// reads inside objects: `origin.by=operator`; a number or true/false is compared as
        /// written). Repeat it: every one must hold.
        #[arg(long = "where", value_name = "FIELD=VALUE")]
        where_: Vec<String>,
        /// Only records with TEXT in one of their values (any field, case ignored).
        #[arg(long, value_name = "TEXT")]
        grep: Option<String>,
        /// Then print each new record as it is written, until Ctrl-C.
        #[arg(long, short = 'f')]
        follow: bool,
        /// How many of the newest matching records to print first.
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=100000))]
        limit: u32,
    },
    /// List a tenant's pending timers in due order, one JSON line each: id, at_ms, script,
    /// firing (a tick holds it now), barrier (for a barrier's overdue timer).
    Timers {
        /// The tenant.
        tenant: String,
        /// How many to print.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1000))]
        limit: u32,
        /// Start after this timer id (the last one a previous page printed).
        #[arg(long)]
        after: Option<String>,
    },
    /// A tenant's schedules: `native schedules TENANT` lists them, one JSON line each (name,
    /// script, when, next_ms, paused, paused_in_config, last: the last run and its outcome);
    /// `native schedules pause|resume|trigger TENANT NAME` pauses one (kept across reloads of
    /// the config), resumes it from its next slot, or runs it once now; `native schedules
    /// backfill TENANT NAME --from T --to T` runs each of its slots in that span (T: ms since
    /// the epoch, or 2026-12-01T02:00:00Z). trigger and backfill process the queues afterwards.
    Schedules {
        /// TENANT, or pause|resume|trigger|backfill TENANT NAME.
        #[arg(num_args = 1..=3, required = true)]
        args: Vec<String>,
        /// backfill: the first instant.
        #[arg(long)]
        from: Option<String>,
        /// backfill: the last instant (its slot included).
        #[arg(long)]
        to: Option<String>,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
    /// Batch jobs: `native batch list TENANT` prints every job, one JSON line each, with its
    /// age and state (waiting, stale, done, failed).
    Batch {
        /// What to do with jobs.
        #[command(subcommand)]
        command: BatchCommand,
    },
    /// Re-send the object notifications of every key under PREFIX of a tenant's folder to its
    /// router (lost notifications; duplicates are harmless), then drain. Prints { replayed }.
    Replay {
        /// The tenant.
        tenant: String,
        /// The logical bucket name, or $batch.
        bucket: String,
        /// Keys starting with this, relative to the tenant's folder ("" for all).
        prefix: String,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
    /// Fire the timers that are due and process every due message until idle.
    Drain {
        /// Also wait for delayed messages (not for retries of failed ones, which come back after
        /// the 360 s visibility timeout on the project clock: see `native clock advance`).
        #[arg(long)]
        wait: bool,
    },
    /// Check a tenant, then upload its config and scripts to the scripts bucket of a deployment
    /// on AWS (credentials and region from the environment, AWS_ENDPOINT_URL for emulators).
    /// The tenant's limits are checked against the timeout and memory of the functions that
    /// run scripts, as deployed (with --stack or --function), else against the flags below.
    Deploy {
        /// The tenant.
        tenant: String,
        /// The scripts bucket (the stack's ScriptsBucketName output; read from the stack
        /// with --stack when not given).
        #[arg(long)]
        bucket: Option<String>,
        /// The stack: its outputs name the functions that run scripts (…FunctionName) and
        /// the scripts bucket; each function's Timeout and MemorySize are read from Lambda.
        #[arg(long)]
        stack: Option<String>,
        /// A function that runs scripts (name or ARN), whose Timeout and MemorySize the
        /// tenant's limits must fit; repeat for each.
        #[arg(long = "function", value_name = "NAME_OR_ARN")]
        functions: Vec<String>,
        /// The functions' timeout in seconds (the stack's FunctionTimeout): the tenant's
        /// limits.timeout_s must end 2 s before it. Overrides the deployed functions'
        /// Timeout; without --stack or --function, 60.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..=900))]
        function_timeout: Option<u32>,
        /// The functions' memory in MB (the stack's MemorySize): the tenant's
        /// limits.max_memory_mb must fit in it less 128 MB for the runtime. Overrides the
        /// deployed functions' MemorySize; without --stack or --function, 512.
        #[arg(long, value_parser = clap::value_parser!(u32).range(128..=10240))]
        function_memory: Option<u32>,
    },
    /// Barriers (docs/barriers.md): list a tenant's, print one's status, ack a member as a
    /// partner would, cancel one.
    Barrier {
        /// What to do with barriers.
        #[command(subcommand)]
        command: BarrierCommand,
    },
    /// Rendezvous barriers (docs/rendezvous.md): print one's status with its participants,
    /// list a namespace's, as JSON.
    Rendezvous {
        /// What to do with rendezvous barriers.
        #[command(subcommand)]
        command: RendezvousCommand,
    },
    /// The project clock of the embedded backend: every native process on the project sees
    /// time moved ahead by the offset (expiry, delays, deadlines, os.time), kept in .native/.
    Clock {
        /// What to do with the clock.
        #[command(subcommand)]
        command: ClockCommand,
    },
    /// Tenant API keys for HTTP callers: create, list, revoke.
    Keys {
        /// What to do with keys.
        #[command(subcommand)]
        command: KeysCommand,
    },
    /// The vault: secrets that requests fill in as {{vault:NAME}}, never seen by scripts.
    Vault {
        /// What to do with secrets.
        #[command(subcommand)]
        command: VaultCommand,
    },
    /// Check and repair the project's .native/ folder: make messages of dead processes visible
    /// again, remove their temporary files and orphaned object contents, run SQLite's
    /// quick_check and check every object's content. Exit 1 when something is damaged.
    Doctor {
        /// Also check every object's content against its sha256 (reads every byte).
        #[arg(long)]
        deep: bool,
    },
    /// Serve the HTTP API (POST /v1/invoke/{script}, GET /healthz) and the operator's console
    /// (/console/), and process both queues continuously, until SIGINT or SIGTERM. The first
    /// line on stdout is exactly `listening on http://HOST:PORT`, the second
    /// `console: http://HOST:PORT/console/?token=...` (the token is kept in
    /// .native/console-token).
    Serve {
        /// Where to listen; port 0 picks a free one.
        #[arg(long, default_value = "127.0.0.1:8787")]
        listen: String,
        /// The most invocations run at once; more are answered 429 with Retry-After. Each
        /// tenant runs at most its limits.max_concurrent, and never more than half of this.
        #[arg(long, default_value_t = native_core::capacity::Admission::DEFAULT_MAX)]
        max_concurrent: u32,
    },
    /// Serve the operator's console of a deployment on AWS on this machine (--aws): every
    /// tenant's barriers, jobs, rendezvous barriers, timers and dead letters, read with this
    /// environment's credentials, with ack, cancel and redrive. The deployment is the one a
    /// function of --stack (or --function) is configured for, else the NATIVE_* variables of
    /// this environment. Prints `listening on ...` then `console: URL` with a token made for
    /// this run. (A local project's console is served by `native serve`.)
    Console {
        /// A deployment on AWS (credentials and region from the environment).
        #[arg(long)]
        aws: bool,
        /// The stack: the first function its outputs name (…FunctionName) tells the table,
        /// queues and buckets.
        #[arg(long)]
        stack: Option<String>,
        /// A function of the deployment (name or ARN) whose environment tells them.
        #[arg(long = "function", value_name = "NAME_OR_ARN")]
        function: Option<String>,
        /// Where to listen; port 0 picks a free one.
        #[arg(long, default_value = "127.0.0.1:8790")]
        listen: String,
    },
    /// The messages waiting in the project's queues (not dead letters), one JSON line each,
    /// oldest first: queue, id, tenant, state (delayed, pending, in flight, waiting for a
    /// retry), attempts so far, when it is due, its last error and its body.
    Queues {
        /// Only this tenant's.
        tenant: Option<String>,
        /// How many to print per queue.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10000))]
        limit: u32,
    },
    /// List dead letters (messages that failed five times, or that can never succeed) with
    /// their last error and, on the project's queues, the error of each attempt; with
    /// --events-queue/--work-queue, those of a deployment on AWS.
    /// `native dlq redrive [TENANT] [--id ID]` moves them (or one) back to their queue.
    #[command(args_conflicts_with_subcommands = true)]
    Dlq {
        /// Only this tenant's.
        tenant: Option<String>,
        /// The events queue's URL on AWS (the stack's EventsQueueUrl): list its dead letters.
        #[arg(long)]
        events_queue: Option<String>,
        /// The work queue's URL on AWS (the stack's WorkQueueUrl): list its dead letters.
        #[arg(long)]
        work_queue: Option<String>,
        /// What to do with dead letters (default: list them).
        #[command(subcommand)]
        command: Option<DlqCommand>,
    },
}

/// `native dlq` verbs.
#[derive(Subcommand, Debug)]
pub enum DlqCommand {
    /// Move dead letters (of one tenant, or all) back to their queue, with five attempts
    /// again, then drain: for when their cause is fixed. With --events-queue/--work-queue,
    /// those of a deployment on AWS (its functions process them; nothing is drained here).
    Redrive {
        /// Only this tenant's.
        tenant: Option<String>,
        /// Only the dead letter with this id (as `native dlq` prints it).
        #[arg(long)]
        id: Option<String>,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
        /// The events queue's URL on AWS (the stack's EventsQueueUrl): redrive its dead letters.
        #[arg(long)]
        events_queue: Option<String>,
        /// The work queue's URL on AWS (the stack's WorkQueueUrl): redrive its dead letters.
        #[arg(long)]
        work_queue: Option<String>,
    },
}

/// `native batch` verbs.
#[derive(Subcommand, Debug)]
pub enum BatchCommand {
    /// Every job of a tenant in id order: job, state, age_s, stale_after_s, error.
    List {
        /// The tenant.
        tenant: String,
    },
}

/// `native clock` verbs.
#[derive(Subcommand, Debug)]
pub enum ClockCommand {
    /// Move the project clock ahead by DURATION (90s, 15m, 2h, 8d, 1w).
    Advance {
        /// How far: a whole number with a unit, ms, s, m, h, d or w.
        duration: String,
    },
    /// Print the offset and the project's now, as JSON.
    Show,
    /// Back to the system clock.
    Reset,
}

/// `native keys` verbs.
#[derive(Subcommand, Debug)]
pub enum KeysCommand {
    /// Create an API key for a tenant and print it, alone on the first line of stdout. It is
    /// shown only this once; only its hash is stored.
    Create {
        /// The tenant.
        tenant: String,
        /// A name to tell keys apart in `native keys list`.
        #[arg(long)]
        name: Option<String>,
        /// The DynamoDB table of a deployment on AWS (credentials from the environment)
        /// instead of the project's .native/.
        #[arg(long)]
        table: Option<String>,
    },
    /// List a tenant's keys, one JSON line each: id, name, created_ms, last_used_ms (never
    /// the secret).
    List {
        /// The tenant.
        tenant: String,
        /// The DynamoDB table of a deployment on AWS.
        #[arg(long)]
        table: Option<String>,
    },
    /// Revoke a key: requests with it fail from now on.
    Revoke {
        /// The tenant.
        tenant: String,
        /// The key's id, as `native keys list` shows it.
        id: String,
        /// The DynamoDB table of a deployment on AWS.
        #[arg(long)]
        table: Option<String>,
    },
}

/// `native vault` verbs. With `--aws PREFIX` they work on Secrets Manager (ids
/// `<PREFIX><tenant>/<name>`, the deployment's NATIVE_VAULT_PREFIX, e.g. native/; credentials
/// and region from the environment) instead of the project's .native/vault/.
#[derive(Subcommand, Debug)]
pub enum VaultCommand {
    /// Set a secret from stdin (one trailing newline dropped); the value is never printed.
    Set {
        /// The tenant.
        tenant: String,
        /// The secret's name, as in {{vault:NAME}}.
        name: String,
        /// Secrets Manager, under this prefix.
        #[arg(long, value_name = "PREFIX")]
        aws: Option<String>,
    },
    /// List a tenant's secret names, one a line (never the values).
    List {
        /// The tenant.
        tenant: String,
        /// Secrets Manager, under this prefix.
        #[arg(long, value_name = "PREFIX")]
        aws: Option<String>,
    },
    /// Delete a secret (a missing one is fine).
    Delete {
        /// The tenant.
        tenant: String,
        /// The secret's name.
        name: String,
        /// Secrets Manager, under this prefix.
        #[arg(long, value_name = "PREFIX")]
        aws: Option<String>,
    },
}

/// `native barrier` verbs.
#[derive(Subcommand, Debug)]
pub enum BarrierCommand {
    /// Every barrier of a tenant that has not expired, one JSON line each, in id order: id,
    /// total, pending, failed, complete, dispatched, overdue, continue_with, created_ms.
    List {
        /// The tenant.
        tenant: String,
        /// How many to print.
        #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100000))]
        limit: u32,
    },
    /// Print a barrier's status as JSON: counts, complete, dispatched, times, overdue, and the
    /// names of pending members (a page; pass --cursor for the next).
    Status {
        /// The tenant.
        tenant: String,
        /// The barrier id.
        id: String,
        /// How many pending member names to print.
        #[arg(long, default_value_t = 100)]
        limit: usize,
        /// Continue the pending names after this member.
        #[arg(long)]
        cursor: Option<String>,
    },
    /// Acknowledge a member as a partner would (ok, or failed with --error), then drain so a
    /// continuation runs. Prints { duplicate, complete, dispatched }.
    Ack {
        /// The tenant.
        tenant: String,
        /// The barrier id.
        id: String,
        /// The member.
        member: String,
        /// Resolve the member as failed, with this error.
        #[arg(long, value_name = "TEXT")]
        error: Option<String>,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
    /// Cancel a barrier: pending members are resolved as failed with the reason and the
    /// continuation runs once, seeing `cancelled`; then drain. Prints how many were resolved.
    Cancel {
        /// The tenant.
        tenant: String,
        /// The barrier id.
        id: String,
        /// Why.
        #[arg(long, default_value = "cancelled")]
        reason: String,
        /// Do not process the queues afterwards.
        #[arg(long)]
        no_drain: bool,
    },
}

/// `native rendezvous` verbs.
#[derive(Subcommand, Debug)]
pub enum RendezvousCommand {
    /// Print a barrier as JSON (counts, generation, version, times, metadata) with the
    /// participants of its current generation (up to 250).
    Status {
        /// The tenant.
        tenant: String,
        /// The namespace (`default` for barriers made without one).
        namespace: String,
        /// The barrier.
        name: String,
    },
    /// Print a namespace's barriers as a JSON array, in name order.
    List {
        /// The tenant.
        tenant: String,
        /// The namespace.
        namespace: String,
        /// At most this many.
        #[arg(long, default_value_t = 1000)]
        limit: usize,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            out::errln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(2);
        }
    };
    rt.block_on(commands::run(cli))
}
