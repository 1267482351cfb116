//! `native console --aws`: the operator's console of a deployment on AWS, served on this
//! machine. It reads the deployment's table, queues (with their dead-letter queues) and buckets
//! with the operator's own credentials, and acts through the same calls as the CLI's verbs.
//! (A local project's console is served by `native serve`, at /console/.)
//!
//! What it works on comes from the deployment itself: with `--stack`, from a function the
//! stack's outputs name; with `--function`, from that function; otherwise from the `NATIVE_*`
//! variables the functions read (NATIVE_TABLE, NATIVE_EVENTS_QUEUE_URL, ...) in this
//! environment.

use std::sync::Arc;

use native_core::aws::{load_sdk_config, AwsConfig, Clients, S3Tenants, RECHECK_EVERY};
use native_core::inbound::console::{self, Console};
use native_core::inbound::shutdown_signal;
use native_core::runtime::Runtime;

use super::{Failed, Outcome};
use crate::out::{errln, outln};

/// Where `native console` looks.
pub struct Target {
    /// `--aws`.
    pub aws: bool,
    /// `--stack`.
    pub stack: Option<String>,
    /// `--function`.
    pub function: Option<String>,
}

pub async fn run(target: Target, listen: &str) -> Outcome {
    if !target.aws {
        return Err(Failed::usage(
            "the console of a local project is served by `native serve` (it prints the console's URL); pass --aws for a deployment on AWS",
        ));
    }
    let sdk = load_sdk_config().await;
    let function = match (&target.function, &target.stack) {
        (Some(f), _) => Some(f.clone()),
        (None, Some(stack)) => {
            let outputs = native_core::aws::deployed::stack_outputs(&sdk, stack).await?;
            Some(outputs.functions.into_iter().next().ok_or_else(|| {
                Failed::usage(format!(
                    "stack {stack:?} names no function in its outputs (…FunctionName); pass --function NAME"
                ))
            })?)
        }
        (None, None) => None,
    };
    let (config, source) = match &function {
        Some(f) => {
            let env = native_core::aws::deployed::function_environment(&sdk, f).await?;
            let config = AwsConfig::from_vars(|name| env.get(name).cloned()).map_err(|e| {
                Failed::usage(format!("function {f}'s environment: {e}"))
            })?;
            (config, format!("AWS, as function {f} sees it"))
        }
        None => (
            AwsConfig::from_env().map_err(|e| {
                Failed::usage(format!(
                    "{e}; or pass --stack NAME (or --function NAME) to read them from the deployment"
                ))
            })?,
            "AWS, from this environment's NATIVE_* variables".to_string(),
        ),
    };
    let source = format!("{source}: table {}", config.table);
    let backends = Clients::new(&sdk).backends(&config);
    let tenants = Arc::new(S3Tenants::new(
        backends.objects.clone(),
        &config.scripts_bucket,
        RECHECK_EVERY,
    ));
    let rt = Arc::new(Runtime::new(config.deployment.clone(), backends, tenants));
    let listener = tokio::net::TcpListener::bind(listen).await.map_err(|e| {
        Failed::usage(format!(
            "cannot listen on {listen}: {e}; pass another --listen ADDR (port 0 picks a free one)"
        ))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Failed::usage(format!("cannot read the listening address: {e}")))?;
    // A token per run: this machine keeps nothing of the deployment's.
    let console = Console::new(rt, console::new_token(), source, false);
    outln!("listening on http://{addr}");
    outln!("console: {}", console.url(&format!("http://{addr}")));
    errln!(
        "serving the console of the deployment on AWS (table {}); Ctrl-C stops",
        config.table
    );
    axum::serve(listener, console::router(console))
        .with_graceful_shutdown(async {
            let which = shutdown_signal().await;
            errln!("{which}: stopping");
        })
        .await
        .map_err(|e| Failed::script(format!("the HTTP server failed: {e}")))?;
    errln!("stopped");
    Ok(())
}
