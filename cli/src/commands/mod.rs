//! What each verb does. Errors become exit codes here: 1 for a failed script, 2 for usage and
//! config errors.

mod barrier;
mod check;
mod clock;
mod console;
mod demo;
mod deploy;
mod doctor;
mod keys;
mod logs;
mod objects;
mod partner;
mod queues;
mod rendezvous;
mod schedules;
mod serve;
mod test;
mod timers;
mod vault;

use std::path::Path;
use std::process::ExitCode;

use native_core::local::{drain, DrainOptions, Failure, Project};
use native_core::Error;
use serde_json::Value;

use crate::out::{errln, outln};
use crate::{Cli, Command};

/// A failed command: its exit code and what to print.
pub struct Failed {
    code: u8,
    message: String,
}

impl Failed {
    fn usage(message: impl Into<String>) -> Self {
        Failed {
            code: 2,
            message: message.into(),
        }
    }

    fn script(message: impl Into<String>) -> Self {
        Failed {
            code: 1,
            message: message.into(),
        }
    }
}

impl From<Error> for Failed {
    fn from(e: Error) -> Self {
        let code = match e {
            Error::Config { .. } | Error::InvalidInput(_) | Error::NotFound { .. } => 2,
            _ => 1,
        };
        Failed {
            code,
            // Errors carry script text (a script's error message): one line, escaped.
            message: crate::show::text(&e.to_string()).into_owned(),
        }
    }
}

type Outcome = Result<(), Failed>;

/// Runs a command line.
pub async fn run(cli: Cli) -> ExitCode {
    crate::show::set_verbose(cli.verbose);
    let given = cli.project.clone();
    let project = given.clone().unwrap_or_else(find_project);
    let result = match cli.command {
        Command::Demo => demo::run(given.as_deref()).await,
        Command::Init { dir, tenant } => init(&init_dir(given.as_deref(), dir.as_deref()), &tenant),
        Command::Check => check::run(&project).await,
        Command::Test {
            tenants,
            filter,
            junit,
            timeout,
        } => {
            let args = test::Args {
                tenants,
                filter,
                junit,
                timeout: std::time::Duration::from_secs(timeout),
            };
            test::run(&project, args).await
        }
        Command::Invoke {
            tenant,
            script,
            event,
            no_drain,
        } => invoke(&project, &tenant, &script, event.as_deref(), no_drain).await,
        Command::Send {
            tenant,
            script,
            event,
            delay,
            no_drain,
        } => {
            queues::send(
                &project,
                &tenant,
                &script,
                event.as_deref(),
                delay,
                no_drain,
            )
            .await
        }
        Command::Put {
            tenant,
            bucket,
            key,
            source,
            data,
            no_drain,
        } => {
            objects::put(
                &project,
                &tenant,
                &bucket,
                &key,
                source.as_deref(),
                data,
                no_drain,
            )
            .await
        }
        Command::Get {
            tenant,
            bucket,
            key,
            wait,
        } => objects::get(&project, &tenant, &bucket, &key, wait).await,
        Command::Ls {
            tenant,
            bucket,
            prefix,
        } => objects::ls(&project, &tenant, &bucket, prefix.as_deref()).await,
        Command::Partner {
            tenant,
            exec,
            fixtures,
            gzip,
            part_mb,
            no_drain,
        } => {
            partner::run(
                &project,
                &tenant,
                exec,
                fixtures,
                partner::Parts { gzip, part_mb },
                no_drain,
            )
            .await
        }
        Command::Drain { wait } => drain_cmd(&project, wait).await,
        Command::Batch {
            command: crate::BatchCommand::List { tenant },
        } => timers::batch_list(&project, &tenant).await,
        Command::Replay {
            tenant,
            bucket,
            prefix,
            no_drain,
        } => timers::replay(&project, &tenant, &bucket, &prefix, no_drain).await,
        Command::Schedules {
            args,
            from,
            to,
            no_drain,
        } => schedules::run(&project, &args, from.as_deref(), to.as_deref(), no_drain).await,
        Command::Timers {
            tenant,
            limit,
            after,
        } => timers::run(&project, &tenant, limit, after.as_deref()).await,
        Command::Logs {
            trace,
            tenant,
            where_,
            grep,
            follow,
            limit,
        } => match logs::fields(&where_) {
            Ok(fields) => {
                let filter = logs::Filter {
                    trace,
                    tenant,
                    fields,
                    text: grep.map(|t| t.to_lowercase()),
                    limit: limit as usize,
                };
                logs::run(&project, filter, follow).await
            }
            Err(e) => Err(e),
        },
        Command::Deploy {
            tenant,
            bucket,
            stack,
            functions,
            function_timeout,
            function_memory,
        } => {
            let target = deploy::Target {
                bucket,
                stack,
                functions,
                timeout_s: function_timeout,
                memory_mb: function_memory,
            };
            deploy::run(&project, &tenant, target).await
        }
        Command::Barrier { command } => barrier::run(&project, command).await,
        Command::Rendezvous { command } => rendezvous::run(&project, command).await,
        Command::Dlq {
            tenant,
            events_queue,
            work_queue,
            command: None,
        } => {
            let on_aws = queues::OnAws {
                events: events_queue,
                work: work_queue,
            };
            queues::dlq(&project, tenant.as_deref(), on_aws).await
        }
        Command::Dlq {
            command:
                Some(crate::DlqCommand::Redrive {
                    tenant,
                    id,
                    no_drain,
                    events_queue,
                    work_queue,
                }),
            ..
        } => {
            let on_aws = queues::OnAws {
                events: events_queue,
                work: work_queue,
            };
            let only = queues::Only {
                tenant: tenant.as_deref(),
                id: id.as_deref(),
            };
            queues::redrive(&project, only, no_drain, on_aws).await
        }
        Command::Queues { tenant, limit } => queues::list(&project, tenant.as_deref(), limit).await,
        Command::Clock { command } => clock::run(&project, command).await,
        Command::Keys { command } => keys::run(&project, command).await,
        Command::Vault { command } => vault::run(&project, command).await,
        Command::Doctor { deep } => doctor::run(&project, deep).await,
        Command::Serve {
            listen,
            max_concurrent,
        } => serve::run(&project, &listen, max_concurrent).await,
        Command::Console {
            aws,
            stack,
            function,
            listen,
        } => {
            let target = console::Target {
                aws,
                stack,
                function,
            };
            console::run(target, &listen).await
        }
    };
    // A closed pipe is not an error (see `out`); another write error fails a verb that
    // otherwise succeeded.
    let result = result.and_then(|()| match crate::out::take_error() {
        Some(e) => Err(Failed::script(e)),
        None => Ok(()),
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            errln!("error: {}", crate::show::lines(&f.message));
            ExitCode::from(f.code)
        }
    }
}

/// The project of a verb run without --project: the nearest folder, from the current one up,
/// that holds deployment.json (as cargo and git find theirs), else the current folder (whose
/// missing deployment.json [`open`] then reports).
fn find_project() -> std::path::PathBuf {
    let here = std::env::current_dir().unwrap_or_else(|_| ".".into());
    here.ancestors()
        .find(|d| d.join(native_core::config::DEPLOYMENT_FILE).is_file())
        .map_or_else(|| ".".into(), Path::to_path_buf)
}

fn open(project: &Path) -> Result<Project, Failed> {
    let file = project.join(native_core::config::DEPLOYMENT_FILE);
    if !file.exists() {
        let shown = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
        return Err(Failed::usage(format!(
            "no project: {} has no deployment.json{}; run `native init DIR` to make one, or pass --project DIR",
            shown.display(),
            if project == Path::new(".") { ", nor has any folder above it" } else { "" },
        )));
    }
    Ok(Project::open(project)?)
}

/// Parses an event argument: JSON text, or @FILE.
fn event_arg(arg: Option<&str>) -> Result<Value, Failed> {
    let (text, from) = match arg {
        None => return Ok(Value::Object(Default::default())),
        Some(a) => match a.strip_prefix('@') {
            Some(path) => (
                std::fs::read_to_string(path)
                    .map_err(|e| Failed::usage(format!("cannot read event file {path}: {e}")))?,
                format!("event file {path}"),
            ),
            None => (a.to_string(), "event".to_string()),
        },
    };
    serde_json::from_str(&text).map_err(|e| Failed::usage(format!("{from} is not valid JSON: {e}")))
}

/// Where a verb starts on the queues: messages sent after this mark were caused by the verb.
pub(crate) fn mark(p: &Project) -> Result<i64, Failed> {
    Ok(p.backend.last_message_id()?)
}

/// Drains after a verb, unless told not to. The verb fails only if a message it caused (sent
/// after `mark`) failed; older messages that fail again on the way are reported on stderr and
/// leave the exit code alone: they are not this verb's work.
async fn drain_after(
    rt: &std::sync::Arc<native_core::runtime::Runtime>,
    mark: i64,
    no_drain: bool,
) -> Outcome {
    if no_drain {
        // job:http requests live only in this process: perform them before it exits; their
        // done.json waits in the queue for the next drain.
        if let Some(jobs) = &rt.services.http_jobs {
            jobs.wait_idle().await;
        }
        return Ok(());
    }
    let r = drain(rt, DrainOptions::default()).await?;
    let (ours, older): (Vec<&Failure>, Vec<&Failure>) = r
        .failures
        .iter()
        .partition(|f| f.message_id.parse::<i64>().map_or(true, |id| id > mark));
    if !older.is_empty() {
        errln!(
            "note: {} older message(s) failed again while draining (not caused by this command; see `native dlq`):{}",
            older.len(),
            failure_lines(&older)
        );
    }
    if ours.is_empty() {
        return Ok(());
    }
    Err(Failed::script(format!(
        "{} message(s) this command caused failed:{}\n{}",
        ours.len(),
        failure_lines(&ours),
        hint(&ours)
    )))
}

/// Whether this was the message's last attempt: it is a dead letter now.
fn last(f: &Failure) -> bool {
    f.attempt >= native_core::ports::MAX_RECEIVES
}

/// What to do about failed messages: those with attempts left come back after the visibility
/// timeout; those that failed their last are dead letters now.
fn hint(failures: &[&Failure]) -> String {
    let retrying = failures.iter().any(|f| !last(f));
    let dead = failures.iter().any(|f| last(f));
    let mut out = Vec::new();
    if retrying {
        out.push(format!(
            "a failed message comes back after the queues' visibility timeout of 360 s: \
             `native clock advance 6m` then `native drain` retries it now; after its {} attempt it \
             is a dead letter",
            ordinal(native_core::ports::MAX_RECEIVES)
        ));
    }
    if dead {
        out.push(
            "a message that failed its last attempt is a dead letter now and does not come back by \
             itself: `native dlq` shows it with each attempt's error, `native dlq redrive [TENANT] \
             [--id ID]` brings it back once the cause is fixed"
                .to_string(),
        );
    }
    out.join("\n")
}

fn ordinal(n: u32) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        4 => "fourth".into(),
        5 => "fifth".into(),
        n => format!("{n}th"),
    }
}

fn failure_lines(failures: &[&Failure]) -> String {
    failures
        .iter()
        .map(|f| {
            format!(
                "\n  {} queue, attempt {} of {}{}: {}",
                f.queue.name(),
                f.attempt,
                native_core::ports::MAX_RECEIVES,
                if last(f) {
                    " (the last: a dead letter now)"
                } else {
                    ""
                },
                crate::show::text(&f.error)
            )
        })
        .collect()
}

/// `native drain`: every message it handles is its own work; one line of summary.
async fn drain_cmd(project: &Path, wait: bool) -> Outcome {
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let r = drain(
        &rt,
        DrainOptions {
            wait,
            ..Default::default()
        },
    )
    .await?;
    let summary = format!(
        "drained: {} handled, {} failed",
        r.handled,
        r.failures.len()
    );
    let waiting = if r.retrying > 0 {
        format!(", {} waiting for a retry", r.retrying)
    } else {
        String::new()
    };
    if r.failures.is_empty() {
        errln!("{summary}{waiting}");
        return Ok(());
    }
    let all: Vec<&Failure> = r.failures.iter().collect();
    Err(Failed::script(format!(
        "{summary}{waiting}:{}\n{}",
        failure_lines(&all),
        hint(&all)
    )))
}

async fn invoke(
    project: &Path,
    tenant: &str,
    script: &str,
    event: Option<&str>,
    no_drain: bool,
) -> Outcome {
    let event = event_arg(event)?;
    let p = open(project)?;
    let rt = crate::show::runtime(&p);
    let mark = mark(&p)?;
    // The invocation starts a chain that this verb names, so that what it ran can be found
    // (`native logs --trace`), also when it failed.
    let trace = native_core::observe::new_trace();
    let run = rt.invoke(tenant, script, event);
    let out = native_core::observe::in_context(|c| c.chain = Some(trace.clone()), run).await;
    // A tenant or script that is not there ran nothing: no "invoked" line for it.
    if !matches!(out, Err(native_core::Error::NotFound { .. })) {
        crate::show::started_chain(&rt, "invoked", tenant, script, &trace);
    }
    let out = out?;
    let text = serde_json::to_string_pretty(&out).unwrap_or_default();
    outln!("{}", crate::show::json(&text));
    drain_after(&rt, mark, no_drain).await
}

/// Where `native init [DIR]` makes the project: DIR, inside --project when DIR is relative.
fn init_dir(project: Option<&Path>, dir: Option<&Path>) -> std::path::PathBuf {
    match (project, dir) {
        (Some(p), Some(d)) if d.is_relative() => p.join(d),
        (_, Some(d)) => d.to_path_buf(),
        (Some(p), None) => p.to_path_buf(),
        (None, None) => ".".into(),
    }
}

fn init(dir: &Path, tenant: &str) -> Outcome {
    native_core::keys::check_name("tenant", tenant)
        .map_err(|why| Failed::usage(format!("--tenant: {why}")))?;
    // The example tenant's files, in a folder of the name asked for.
    let hello: Vec<crate::examples::Owned> = crate::examples::HELLO
        .iter()
        .map(|(path, text)| {
            let path = match path.strip_prefix("tenants/hello/") {
                Some(rest) => format!("tenants/{tenant}/{rest}"),
                None => path.to_string(),
            };
            (path, text.to_string())
        })
        .collect();
    crate::examples::write_owned(dir, &hello)
        .and_then(|()| crate::examples::write(dir, crate::examples::EDITOR))
        .and_then(|()| crate::examples::ignore_state(dir))
        .map_err(|e| Failed::usage(format!("cannot make a project in {}: {e}", dir.display())))?;
    outln!(
        "made a project in {} with the tenant {tenant:?}; try:",
        dir.display()
    );
    outln!(
        "  native --project {} invoke {tenant} start '{{\"name\":\"Ada\"}}'",
        dir.display()
    );
    outln!(
        "  native --project {} get {tenant} Out results/Ada.txt",
        dir.display()
    );
    outln!("  native --project {} test", dir.display());
    outln!(
        "(.gitignore keeps .native/ out of git; native.d.luau has the host API's types for luau-lsp: \
         add it to luau-lsp.types.definitionFiles)"
    );
    Ok(())
}
