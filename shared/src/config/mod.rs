//! Configuration that people edit: the deployment (`deployment.json`) and each tenant
//! (`tenants/<tenant>/config.json`). Both are parsed once, validated with errors that name the
//! file, the field and why, and then passed around typed.

pub mod cron;
mod deployment;
pub mod http;
mod limits;
pub mod modules;
pub mod schedule;
mod tenant;

pub use deployment::{BatchConfig, BucketRef, Deployment, HttpDeployment, DEPLOYMENT_FILE};
pub use http::TenantHttp;
pub use limits::{Limits, CEILINGS, MAX_DELETES};
pub use modules::{Luaurc, Requirer};
pub use schedule::Schedule;
pub(crate) use tenant::nul_at;
pub use tenant::{Router, Script, Tenant, TenantConfig, DEFAULT_ROUTER};

use serde::de::DeserializeOwned;

use crate::Error;

/// Parses a config file into `T`. `objects` lists the dotted paths (`""` for the whole file)
/// that must be JSON objects.
///
/// serde lets a struct be read from a JSON array, field by field in declaration order, so
/// `[true]` would be a tenant with the queue on: every place a struct is expected is checked
/// to be an object first. Type errors name the JSON path of the field (through
/// `serde_path_to_error`), since serde_json alone names only a line and column.
pub(crate) fn parse<T: DeserializeOwned>(
    file: &str,
    text: &str,
    objects: &[&str],
) -> Result<T, Error> {
    let value: serde_json::Value =
        serde_json::from_str(text).map_err(|e| Error::config(file, "-", e))?;
    for path in objects {
        let found = if path.is_empty() {
            Some(&value)
        } else {
            path.split('.').try_fold(&value, |v, k| v.get(k))
        };
        // null is left to serde: it is fine for an optional section.
        let optional_null = |v: &serde_json::Value| v.is_null() && !path.is_empty();
        match found {
            Some(v) if !v.is_object() && !optional_null(v) => {
                return Err(Error::config(
                    file,
                    if path.is_empty() { "-" } else { path },
                    format!("must be a JSON object {{ ... }}, not {}", kind(v)),
                ))
            }
            _ => {}
        }
    }
    // From the text, not the value: a value has already folded duplicate keys into one, and
    // `{"queue": false, "queue": true}` must stay an error, not the last one winning.
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let field = if path == "." { "-".to_string() } else { path };
        Error::config(file, field, e.into_inner())
    })
}

/// What kind of JSON value `v` is, for errors.
fn kind(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => "null".into(),
        serde_json::Value::Bool(b) => format!("the boolean {b}"),
        serde_json::Value::Number(n) => format!("the number {n}"),
        serde_json::Value::String(_) => "a string".into(),
        serde_json::Value::Array(_) => "an array".into(),
        serde_json::Value::Object(_) => "an object".into(),
    }
}
