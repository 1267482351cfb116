//! Configuration that people edit: the deployment (`deployment.json`) and each tenant
//! (`tenants/<tenant>/config.json`). Both are parsed once, validated with errors that name the
//! file, the field and why, and then passed around typed.

mod deployment;
mod limits;
mod tenant;

pub use deployment::{BatchConfig, BucketRef, Deployment, DEPLOYMENT_FILE};
pub use limits::{Limits, CEILINGS};
pub use tenant::{Script, Tenant, TenantConfig};

use crate::Error;

/// Turns a serde_json error into a config error that names the file, the line and the column.
pub(crate) fn json_error(file: &str, err: serde_json::Error) -> Error {
    // serde_json ends its message with "at line L column C", which points at the field (and
    // names it, for unknown or mistyped fields), so the field column stays "-".
    Error::config(file, "-", err)
}
