//! `native deploy TENANT --bucket B`: checks a tenant, then uploads it to the scripts bucket of
//! a deployment on AWS, where the functions pick it up within seconds. A tenant whose limits the
//! functions cannot honour (`--function-timeout`, `--function-memory`: the stack's
//! FunctionTimeout and MemorySize) is refused, naming the limit and the setting.

use std::path::Path;

use native_core::aws::{load_sdk_config, upload_tenant, Clients, S3Objects};
use native_core::budget::FunctionSettings;
use native_core::tenants::{DirTenants, TenantSource};

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};

pub async fn run(
    project: &Path,
    tenant: &str,
    bucket: &str,
    function: FunctionSettings,
) -> Outcome {
    let p = open(project)?;
    let scripts = super::check::tenant(&p, tenant).map_err(|e| {
        Failed::usage(format!(
            "not deployed, `native check` fails:\n{}",
            e.join("\n")
        ))
    })?;
    let t = DirTenants::new(&p.root).load(tenant).await?;
    let file = format!("tenants/{tenant}/config.json");
    let unfit = function.check(&file, &t.config.limits);
    if !unfit.is_empty() {
        return Err(Failed::usage(format!(
            "not deployed, the functions cannot honour this tenant's limits:\n{}",
            unfit.join("\n")
        )));
    }
    let sdk = load_sdk_config().await;
    let store = S3Objects::new(Clients::new(&sdk).s3);
    let dir = p.root.join("tenants").join(tenant);
    let (written, deleted) = upload_tenant(&store, bucket, tenant, &dir).await?;
    for k in &written {
        outln!("uploaded s3://{bucket}/{k}");
    }
    for k in &deleted {
        outln!("deleted  s3://{bucket}/{k}");
    }
    errln!("deployed tenant {tenant:?}: {scripts} script(s) to s3://{bucket}/{tenant}/; warm functions see it within {} s", native_core::aws::RECHECK_EVERY.as_secs());
    Ok(())
}
