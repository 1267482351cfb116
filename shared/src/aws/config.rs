//! The typed configuration of a Lambda function, read once per cold start from the environment
//! that the SAM template sets. Every error names the variable and what a right value looks like.
//!
//! | Variable | Meaning |
//! |---|---|
//! | `NATIVE_TABLE` | the DynamoDB table (required) |
//! | `NATIVE_EVENTS_QUEUE_URL` | the events queue (required) |
//! | `NATIVE_WORK_QUEUE_URL` | the work queue (required) |
//! | `NATIVE_SCRIPTS_BUCKET` | the bucket holding `<tenant>/config.json` and scripts (required) |
//! | `NATIVE_BUCKETS` | `buckets.map` as JSON, e.g. `{"In":"acme-in"}` (default `{}`) |
//! | `NATIVE_BATCH_BUCKET` | the batch bucket (optional) |
//! | `NATIVE_BATCH_PREFIX` | prefix before tenant folders in the batch bucket (optional) |
//! | `NATIVE_VAULT_PREFIX` | prefix of the vault's Secrets Manager ids, `<prefix><tenant>/<name>` (default `native/`) |
//! | `NATIVE_HTTP_ALLOW_PRIVATE_NETWORKS` | `true` lets scripts reach private addresses (tests only; default `false`) |
//! | `NATIVE_EVENTS_DLQ_URL`, `NATIVE_WORK_DLQ_URL` | the dead-letter queues (optional; read from each queue's `RedrivePolicy` when unset) |
//! | `NATIVE_TENANT_ROLE_ARN` | the role scripts' data calls run under, one session per tenant (optional; unset, they use the function's own credentials) |
//!
//! `AWS_ENDPOINT_URL`, `AWS_REGION` and credentials are read by `aws-config` itself.

use std::collections::BTreeMap;

use crate::config::{BatchConfig, Deployment};
use crate::{Error, Result};

/// What names the environment in config errors.
pub const ENV_FILE: &str = "environment";

/// The configuration of one function process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsConfig {
    /// The DynamoDB table.
    pub table: String,
    /// URL of the events queue.
    pub events_queue_url: String,
    /// URL of the work queue.
    pub work_queue_url: String,
    /// URL of the events queue's dead-letter queue, when given.
    pub events_dlq_url: Option<String>,
    /// URL of the work queue's dead-letter queue, when given.
    pub work_dlq_url: Option<String>,
    /// The scripts bucket.
    pub scripts_bucket: String,
    /// The deployment built from these variables, validated.
    pub deployment: Deployment,
    /// The tenant role (`NATIVE_TENANT_ROLE_ARN`), when given.
    pub tenant_role_arn: Option<String>,
    /// Prefix of the vault's secret ids: empty or ending in `/`.
    pub vault_prefix: String,
}

impl AwsConfig {
    /// Reads the configuration from the process environment.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|name| std::env::var(name).ok())
    }

    /// Reads the configuration from `var` (the environment, or a map in tests). Empty values
    /// count as unset.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let get = |name: &str| {
            var(name)
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
        };
        let required = |name: &str, what: &str| {
            get(name).ok_or_else(|| {
                Error::config(
                    ENV_FILE,
                    name,
                    format!("is not set; set it to {what} (the SAM template does)"),
                )
            })
        };
        let table = required("NATIVE_TABLE", "the DynamoDB table name")?;
        let events_queue_url = required("NATIVE_EVENTS_QUEUE_URL", "the events queue's URL")?;
        let work_queue_url = required("NATIVE_WORK_QUEUE_URL", "the work queue's URL")?;
        let scripts_bucket = required("NATIVE_SCRIPTS_BUCKET", "the scripts bucket's name")?;
        for (name, url) in [
            ("NATIVE_EVENTS_QUEUE_URL", &events_queue_url),
            ("NATIVE_WORK_QUEUE_URL", &work_queue_url),
        ] {
            check_url(name, url)?;
        }
        let events_dlq_url = get("NATIVE_EVENTS_DLQ_URL");
        let work_dlq_url = get("NATIVE_WORK_DLQ_URL");
        for (name, url) in [
            ("NATIVE_EVENTS_DLQ_URL", &events_dlq_url),
            ("NATIVE_WORK_DLQ_URL", &work_dlq_url),
        ] {
            if let Some(url) = url {
                check_url(name, url)?;
            }
        }

        let tenant_role_arn = get("NATIVE_TENANT_ROLE_ARN");
        if let Some(arn) = &tenant_role_arn {
            if !(arn.starts_with("arn:") && arn.contains(":role/")) {
                return Err(Error::config(
                    ENV_FILE,
                    "NATIVE_TENANT_ROLE_ARN",
                    format!("{arn:?} is not a role ARN; it must look like arn:aws:iam::123456789012:role/native-TenantRole-ABC"),
                ));
            }
        }
        let map: BTreeMap<String, String> = match get("NATIVE_BUCKETS") {
            None => BTreeMap::new(),
            Some(text) => serde_json::from_str(&text).map_err(|e| {
                Error::config(
                    ENV_FILE,
                    "NATIVE_BUCKETS",
                    format!(
                        "is not a JSON object of logical name to bucket, like {{\"In\":\"acme-in\"}}: {e}"
                    ),
                )
            })?,
        };
        let batch = match (get("NATIVE_BATCH_BUCKET"), get("NATIVE_BATCH_PREFIX")) {
            (Some(bucket), prefix) => Some(BatchConfig {
                bucket,
                prefix: prefix.unwrap_or_default(),
            }),
            (None, Some(_)) => {
                return Err(Error::config(
                    ENV_FILE,
                    "NATIVE_BATCH_PREFIX",
                    "is set but NATIVE_BATCH_BUCKET is not; set both or neither",
                ))
            }
            (None, None) => None,
        };
        let mut d = serde_json::json!({
            "buckets": { "map": map },
            "db": { "table": table },
            "queue": { "url": work_queue_url, "events_url": events_queue_url },
        });
        let vault_prefix = get("NATIVE_VAULT_PREFIX").unwrap_or_else(|| "native/".into());
        let prefix_ok = vault_prefix.len() <= 200
            && vault_prefix
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/_+=.@-".contains(c))
            && vault_prefix.ends_with('/');
        if !prefix_ok {
            return Err(Error::config(
                ENV_FILE,
                "NATIVE_VAULT_PREFIX",
                format!("{vault_prefix:?} must end in \"/\" and use letters, digits and /_+=.@- (e.g. native/)"),
            ));
        }
        match get("NATIVE_HTTP_ALLOW_PRIVATE_NETWORKS").as_deref() {
            None | Some("false") => {}
            Some("true") => d["http"] = serde_json::json!({ "allow_private_networks": true }),
            Some(other) => {
                return Err(Error::config(
                    ENV_FILE,
                    "NATIVE_HTTP_ALLOW_PRIVATE_NETWORKS",
                    format!("{other:?} must be true or false"),
                ))
            }
        }
        if let Some(b) = &batch {
            d["batch"] = serde_json::json!({ "bucket": b.bucket, "prefix": b.prefix });
        }
        let deployment = Deployment::from_json(ENV_FILE, &d.to_string()).map_err(rename_fields)?;
        if let Some(logical) = deployment
            .buckets
            .map
            .iter()
            .find(|(_, real)| **real == scripts_bucket)
            .map(|(l, _)| l)
        {
            return Err(Error::config(
                ENV_FILE,
                "NATIVE_SCRIPTS_BUCKET",
                format!(
                    "{scripts_bucket:?} is also the data bucket {logical} in NATIVE_BUCKETS; scripts must live in a bucket of their own"
                ),
            ));
        }
        Ok(AwsConfig {
            table,
            events_queue_url,
            work_queue_url,
            events_dlq_url,
            work_dlq_url,
            scripts_bucket,
            deployment,
            tenant_role_arn,
            vault_prefix,
        })
    }
}

fn check_url(name: &str, url: &str) -> Result<()> {
    if url.starts_with("https://") || url.starts_with("http://") {
        Ok(())
    } else {
        Err(Error::config(
            ENV_FILE,
            name,
            format!("{url:?} is not a queue URL; it must start with https:// (e.g. https://sqs.us-east-1.amazonaws.com/123456789012/native-work)"),
        ))
    }
}

/// Maps the deployment's field names (`buckets.map.In`, `batch.prefix`) to the variables they
/// came from, so that the error names what to change.
fn rename_fields(e: Error) -> Error {
    match e {
        Error::Config { file, field, why } => {
            let var = if field.starts_with("buckets.map") {
                format!("NATIVE_BUCKETS ({field})")
            } else if field == "batch.bucket" {
                "NATIVE_BATCH_BUCKET".to_string()
            } else if field == "batch.prefix" {
                "NATIVE_BATCH_PREFIX".to_string()
            } else {
                field
            };
            Error::Config {
                file,
                field: var,
                why,
            }
        }
        other => other,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A configuration from the variables a function needs, plus `extra`.
    pub(crate) fn vars(extra: &[(&str, &str)]) -> Result<AwsConfig> {
        let mut m: HashMap<String, String> = [
            ("NATIVE_TABLE", "native"),
            (
                "NATIVE_EVENTS_QUEUE_URL",
                "https://sqs.us-east-1.amazonaws.com/1/ev",
            ),
            (
                "NATIVE_WORK_QUEUE_URL",
                "https://sqs.us-east-1.amazonaws.com/1/wk",
            ),
            ("NATIVE_SCRIPTS_BUCKET", "native-scripts"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        for (k, v) in extra {
            m.insert(k.to_string(), v.to_string());
        }
        AwsConfig::from_vars(|n| m.get(n).cloned())
    }

    #[test]
    fn builds_a_validated_deployment() {
        let c = vars(&[
            ("NATIVE_BUCKETS", r#"{"In":"acme-in"}"#),
            ("NATIVE_BATCH_BUCKET", "acme-batch"),
            ("NATIVE_BATCH_PREFIX", "tenants/"),
        ])
        .unwrap();
        assert_eq!(c.deployment.real_bucket("In"), Some("acme-in"));
        assert_eq!(c.deployment.real_bucket("$batch"), Some("acme-batch"));
        assert_eq!(c.deployment.db.as_ref().unwrap().table, "native");
        assert_eq!(
            c.deployment.queue.as_ref().unwrap().events_url.as_deref(),
            Some("https://sqs.us-east-1.amazonaws.com/1/ev")
        );
    }

    #[test]
    fn errors_name_the_variable() {
        let e = vars(&[("NATIVE_TABLE", "")]).unwrap_err().to_string();
        assert!(
            e.starts_with("environment: NATIVE_TABLE: is not set"),
            "{e}"
        );
        let e = vars(&[("NATIVE_BUCKETS", "[1]")]).unwrap_err().to_string();
        assert!(e.contains("NATIVE_BUCKETS: is not a JSON object"), "{e}");
        let e = vars(&[("NATIVE_BUCKETS", r#"{"In":"Bad_Name"}"#)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("NATIVE_BUCKETS (buckets.map.In)"), "{e}");
        let e = vars(&[("NATIVE_BATCH_BUCKET", "b-b"), ("NATIVE_BATCH_PREFIX", "x")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("NATIVE_BATCH_PREFIX"), "{e}");
        let e = vars(&[("NATIVE_BATCH_PREFIX", "x/")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("NATIVE_BATCH_BUCKET is not"), "{e}");
        let e = vars(&[("NATIVE_WORK_QUEUE_URL", "native-work")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("NATIVE_WORK_QUEUE_URL") && e.contains("not a queue URL"),
            "{e}"
        );
        let e = vars(&[("NATIVE_TENANT_ROLE_ARN", "native-tenant")])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("NATIVE_TENANT_ROLE_ARN") && e.contains("not a role ARN"),
            "{e}"
        );
        let arn = "arn:aws:iam::123456789012:role/native-TenantRole-X";
        let c = vars(&[("NATIVE_TENANT_ROLE_ARN", arn)]).unwrap();
        assert_eq!(c.tenant_role_arn.as_deref(), Some(arn));
        let e = vars(&[("NATIVE_BUCKETS", r#"{"In":"native-scripts"}"#)])
            .unwrap_err()
            .to_string();
        assert!(e.contains("NATIVE_SCRIPTS_BUCKET"), "{e}");
    }
}
