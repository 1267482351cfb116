//! What each verb does. Errors become exit codes here: 1 for a failed script, 2 for usage and
//! config errors.

mod barrier;
mod check;
mod clock;
mod demo;
mod deploy;
mod keys;
mod objects;
mod partner;
mod queues;
mod serve;

use std::path::Path;
use std::process::ExitCode;

use native_core::local::{drain, DrainOptions, DrainReport, Project};
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
    let project = cli.project.clone();
    let result = match cli.command {
        Command::Demo => demo::run().await,
        Command::Init { dir } => init(dir.as_deref().unwrap_or(&project)),
        Command::Check => check::run(&project),
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
        } => objects::get(&project, &tenant, &bucket, &key).await,
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
        Command::Deploy {
            tenant,
            bucket,
            function_timeout,
            function_memory,
        } => {
            let function = native_core::budget::FunctionSettings {
                timeout_s: function_timeout,
                memory_mb: function_memory,
            };
            deploy::run(&project, &tenant, &bucket, function).await
        }
        Command::Barrier { command } => barrier::run(&project, command).await,
        Command::Dlq {
            tenant,
            events_queue,
            work_queue,
        } => {
            let on_aws = queues::OnAws {
                events: events_queue,
                work: work_queue,
            };
            queues::dlq(&project, tenant.as_deref(), on_aws).await
        }
        Command::Clock { command } => clock::run(&project, command),
        Command::Keys { command } => keys::run(&project, command).await,
        Command::Serve { listen } => serve::run(&project, &listen).await,
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

fn open(project: &Path) -> Result<Project, Failed> {
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

/// Drains after a verb, unless told not to; failures make the command fail.
async fn drain_after(rt: &native_core::runtime::Runtime, no_drain: bool) -> Outcome {
    if no_drain {
        return Ok(());
    }
    report(drain(rt, DrainOptions::default()).await?)
}

fn report(r: DrainReport) -> Outcome {
    if r.failures.is_empty() {
        return Ok(());
    }
    let mut msg = format!(
        "{} message(s) handled, {} failed:",
        r.handled,
        r.failures.len()
    );
    for f in &r.failures {
        msg.push_str(&format!(
            "\n  {} queue, attempt {}: {}",
            f.queue.name(),
            f.attempt,
            crate::show::text(&f.error)
        ));
    }
    msg.push_str("\nfailed messages are retried by `native drain --wait` and listed by `native dlq` after 5 attempts");
    Err(Failed::script(msg))
}

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
    errln!(
        "drained: {} handled, {} failed",
        r.handled,
        r.failures.len()
    );
    report(r)
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
    let out = rt.invoke(tenant, script, event).await?;
    let text = serde_json::to_string_pretty(&out).unwrap_or_default();
    outln!("{}", crate::show::json(&text));
    drain_after(&rt, no_drain).await
}

fn init(dir: &Path) -> Outcome {
    crate::examples::write(dir, crate::examples::HELLO)
        .map_err(|e| Failed::usage(format!("cannot make a project in {}: {e}", dir.display())))?;
    outln!(
        "made a project in {} with the tenant \"hello\"; try:",
        dir.display()
    );
    outln!(
        "  native --project {} invoke hello start '{{\"name\":\"Ada\"}}'",
        dir.display()
    );
    outln!(
        "  native --project {} get hello Out results/Ada.txt",
        dir.display()
    );
    Ok(())
}
