//! `native deploy TENANT --stack S`: checks a tenant, then uploads it to the scripts bucket of
//! a deployment on AWS, where the functions pick it up within seconds. A tenant whose limits a
//! function that runs scripts cannot honour is refused, naming the limit, the figures, the
//! function and its setting. The functions are those the stack's outputs name (`--stack`) or
//! given by name (`--function`), each read from Lambda as deployed; `--function-timeout` and
//! `--function-memory` override what was read, and stand for the stack's settings when no
//! function is named (the template's defaults without them).

use std::path::Path;

use native_core::aws::deployed::{function_config, stack_outputs};
use native_core::aws::{load_sdk_config, upload_tenant, Clients, S3Objects};
use native_core::capacity::FunctionSettings;
use native_core::tenants::{DirTenants, TenantSource};

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};

/// Where a tenant goes and what its limits are checked against.
pub struct Target {
    /// The scripts bucket (else the stack's `ScriptsBucketName` output).
    pub bucket: Option<String>,
    /// The stack whose outputs name the functions and the bucket.
    pub stack: Option<String>,
    /// More functions that run scripts, by name or ARN.
    pub functions: Vec<String>,
    /// Overrides the functions' timeout (s).
    pub timeout_s: Option<u32>,
    /// Overrides the functions' memory (MB).
    pub memory_mb: Option<u32>,
}

pub async fn run(project: &Path, tenant: &str, target: Target) -> Outcome {
    let p = open(project)?;
    let found = super::check::tenant(&p, tenant).await?;
    if !found.errors.is_empty() {
        return Err(Failed::usage(format!(
            "not deployed, `native check` fails:\n{}",
            found.errors.join("\n")
        )));
    }
    for w in &found.warnings {
        errln!("{w}");
    }
    let (scripts, modules) = (found.scripts, found.modules);
    let t = DirTenants::new(&p.root).load(tenant).await?;
    let file = format!("tenants/{tenant}/config.json");
    let sdk = load_sdk_config().await;
    // Without a region the SDK cannot name an endpoint, and its error is a debug string
    // (`DispatchFailure(...)`): say what to set instead, as every other AWS verb does.
    if sdk.region().is_none_or(|r| r.as_ref().is_empty()) && sdk.endpoint_url().is_none() {
        return Err(Failed::usage(
            "not deployed: no AWS region is set: set AWS_REGION (e.g. eu-west-1), or a region in your AWS profile",
        ));
    }
    let mut names = target.functions.clone();
    let mut bucket = target.bucket.clone();
    if let Some(stack) = &target.stack {
        let outputs = stack_outputs(&sdk, stack).await?;
        if outputs.functions.is_empty() && names.is_empty() {
            return Err(Failed::usage(format!(
                "not deployed: stack {stack:?} has no output ending in FunctionName, so no function to check the tenant's limits against; name them with --function"
            )));
        }
        names.extend(outputs.functions);
        bucket = bucket.or(outputs.scripts_bucket);
    }
    let Some(bucket) = bucket else {
        return Err(Failed::usage(
            "not deployed: no scripts bucket; pass --bucket, or --stack of a stack with a ScriptsBucketName output",
        ));
    };
    let mut unfit = Vec::new();
    if names.is_empty() {
        let settings = FunctionSettings {
            timeout_s: target
                .timeout_s
                .unwrap_or(FunctionSettings::DEFAULT.timeout_s),
            memory_mb: target
                .memory_mb
                .unwrap_or(FunctionSettings::DEFAULT.memory_mb),
        };
        unfit = settings.check(&file, &t.config.limits);
    }
    for name in &names {
        let f = function_config(&sdk, name).await?;
        let settings = FunctionSettings {
            timeout_s: target.timeout_s.unwrap_or(f.timeout_s),
            memory_mb: target.memory_mb.unwrap_or(f.memory_mb),
        };
        errln!(
            "function {}: Timeout {} s, MemorySize {} MB{}",
            f.name,
            f.timeout_s,
            f.memory_mb,
            match (target.timeout_s, target.memory_mb) {
                (None, None) => String::new(),
                (t, m) => format!(
                    " (checked with{}{})",
                    t.map(|t| format!(" --function-timeout {t}"))
                        .unwrap_or_default(),
                    m.map(|m| format!(" --function-memory {m}"))
                        .unwrap_or_default()
                ),
            }
        );
        let timeout_of = target.timeout_s.is_none().then_some(f.name.as_str());
        let memory_of = target.memory_mb.is_none().then_some(f.name.as_str());
        for line in settings.check_for(&file, &t.config.limits, timeout_of, memory_of) {
            // With an override, every function gives the same line: say it once.
            if !unfit.contains(&line) {
                unfit.push(line);
            }
        }
    }
    if !unfit.is_empty() {
        return Err(Failed::usage(format!(
            "not deployed, the functions cannot honour this tenant's limits:\n{}",
            unfit.join("\n")
        )));
    }
    let bucket = bucket.as_str();
    let store = S3Objects::new(Clients::new(&sdk).s3);
    let dir = p.root.join("tenants").join(tenant);
    let (written, deleted) = upload_tenant(&store, bucket, tenant, &dir).await?;
    for k in &written {
        outln!("uploaded s3://{bucket}/{k}");
    }
    for k in &deleted {
        outln!("deleted  s3://{bucket}/{k}");
    }
    errln!("deployed tenant {tenant:?}: {scripts} script(s), {modules} module(s) to s3://{bucket}/{tenant}/; warm functions see it within {} s", native_core::aws::RECHECK_EVERY.as_secs());
    Ok(())
}
