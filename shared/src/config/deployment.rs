//! The deployment config: which real buckets the logical names map to, the table, the queues and
//! the batch bucket. Read from `deployment.json` locally, from the environment on AWS.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::{keys::check_name, Error};

/// The file name of the deployment config at the project root.
pub const DEPLOYMENT_FILE: &str = "deployment.json";

/// The deployment config.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Deployment {
    /// Data buckets.
    #[serde(default)]
    pub buckets: Buckets,
    /// The key-value table.
    #[serde(default)]
    pub db: Option<DbConfig>,
    /// The queues (their URLs on AWS).
    #[serde(default)]
    pub queue: Option<QueueConfig>,
    /// The batch bucket, for `native.batch`.
    #[serde(default)]
    pub batch: Option<BatchConfig>,
    /// Outbound HTTP (`native.http`, `job:http`), deployment-wide switches.
    #[serde(default)]
    pub http: HttpDeployment,
}

/// The `http` section of the deployment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpDeployment {
    /// Lets scripts reach private, loopback and link-local addresses (off by default; for
    /// tests against servers on 127.0.0.1, never for a shared deployment).
    #[serde(default)]
    pub allow_private_networks: bool,
}

/// The `buckets` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Buckets {
    /// Logical name (as scripts write `native.bucket.<Name>`) to real bucket name.
    #[serde(default)]
    pub map: BTreeMap<String, String>,
}

/// The `db` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DbConfig {
    /// The DynamoDB table name.
    pub table: String,
}

/// The `queue` section.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueueConfig {
    /// URL of the work queue (script messages).
    #[serde(default)]
    pub url: Option<String>,
    /// URL of the events queue (object notifications).
    #[serde(default)]
    pub events_url: Option<String>,
}

/// The `batch` section.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// The real batch bucket.
    pub bucket: String,
    /// Prefix before the tenant folders: empty or ending in `/`.
    #[serde(default)]
    pub prefix: String,
}

/// Where an object event came from, in the terms scripts use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketRef {
    /// The logical name (`In`), or `$batch` for the batch bucket.
    pub logical: String,
    /// The tenant whose folder the key is in.
    pub tenant: String,
    /// The key relative to the tenant folder.
    pub key: String,
}

impl Deployment {
    /// Parses and validates a deployment config; `file` names it in errors.
    pub fn from_json(file: &str, text: &str) -> Result<Self, Error> {
        let d: Deployment =
            super::parse(file, text, &["", "buckets", "db", "queue", "batch", "http"])?;
        d.validate(file)?;
        Ok(d)
    }

    /// Checks the rules that the types cannot express.
    pub fn validate(&self, file: &str) -> Result<(), Error> {
        for (logical, real) in &self.buckets.map {
            check_name("bucket", logical)
                .map_err(|why| Error::config(file, format!("buckets.map.{logical}"), why))?;
            check_bucket_name(real)
                .map_err(|why| Error::config(file, format!("buckets.map.{logical}"), why))?;
        }
        if let Some(batch) = &self.batch {
            check_bucket_name(&batch.bucket)
                .map_err(|why| Error::config(file, "batch.bucket", why))?;
            if !batch.prefix.is_empty() && !batch.prefix.ends_with('/') {
                return Err(Error::config(
                    file,
                    "batch.prefix",
                    format!("{:?} must be empty or end in \"/\"", batch.prefix),
                ));
            }
            if let Some((logical, _)) = self.buckets.map.iter().find(|(_, r)| **r == batch.bucket) {
                return Err(Error::config(
                    file,
                    "batch.bucket",
                    format!(
                        "{:?} is also buckets.map.{logical}; the batch bucket must be separate, \
                         since the partner may write anything it can reach",
                        batch.bucket
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The real bucket of a logical name (`$batch` for the batch bucket).
    pub fn real_bucket(&self, logical: &str) -> Option<&str> {
        if logical == "$batch" {
            return self.batch.as_ref().map(|b| b.bucket.as_str());
        }
        self.buckets.map.get(logical).map(String::as_str)
    }

    /// The full key of `key` in the tenant's folder of the bucket `logical`.
    pub fn full_key(&self, logical: &str, tenant: &str, key: &str) -> String {
        if logical == "$batch" {
            let prefix = self.batch.as_ref().map(|b| b.prefix.as_str()).unwrap_or("");
            format!("{prefix}{tenant}/{key}")
        } else {
            format!("{tenant}/{key}")
        }
    }

    /// Maps a real bucket and full key back to the logical bucket, the tenant and the relative
    /// key; `None` when the bucket is not configured or the key is in no tenant's folder.
    pub fn resolve(&self, real_bucket: &str, full_key: &str) -> Option<BucketRef> {
        let (logical, rest) = match &self.batch {
            Some(b) if b.bucket == real_bucket => {
                ("$batch".to_string(), full_key.strip_prefix(&b.prefix)?)
            }
            _ => {
                let (logical, _) = self.buckets.map.iter().find(|(_, r)| *r == real_bucket)?;
                (logical.clone(), full_key)
            }
        };
        let (tenant, key) = rest.split_once('/')?;
        if check_name("tenant", tenant).is_err() || crate::keys::check_relative_key(key).is_err() {
            return None;
        }
        Some(BucketRef {
            logical,
            tenant: tenant.to_string(),
            key: key.to_string(),
        })
    }

    /// Real buckets whose writes notify the events queue, with the suffix they must end in:
    /// every data bucket, and the batch bucket for `done.json` only.
    pub fn notifying_buckets(&self) -> Vec<(String, Option<String>)> {
        let mut out: Vec<_> = self
            .buckets
            .map
            .values()
            .map(|b| (b.clone(), None))
            .collect();
        if let Some(b) = &self.batch {
            out.push((b.bucket.clone(), Some("done.json".to_string())));
        }
        out
    }
}

fn check_bucket_name(name: &str) -> Result<(), String> {
    let ok = (3..=63).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        && !name.starts_with(['-', '.'])
        && !name.ends_with(['-', '.']);
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{name:?} is not a valid S3 bucket name: 3 to 63 lowercase letters, digits, '-' or '.'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep() -> Deployment {
        Deployment::from_json(
            "deployment.json",
            r#"{ "buckets": { "map": { "In": "acme-in", "Acks": "acme-acks" } },
                 "batch": { "bucket": "partner-batch", "prefix": "tenants/" } }"#,
        )
        .unwrap()
    }

    #[test]
    fn resolves_keys_to_tenant_and_logical_bucket() {
        let d = dep();
        let r = d.resolve("acme-in", "acme/b1/a.xml").unwrap();
        assert_eq!(
            (r.logical.as_str(), r.tenant.as_str(), r.key.as_str()),
            ("In", "acme", "b1/a.xml")
        );
        let r = d
            .resolve("partner-batch", "tenants/acme/jobs/j/done.json")
            .unwrap();
        assert_eq!(r.logical, "$batch");
        assert_eq!(r.key, "jobs/j/done.json");
        assert!(d
            .resolve("partner-batch", "acme/jobs/j/done.json")
            .is_none());
        assert!(d.resolve("acme-in", "no-folder").is_none());
        assert!(d.resolve("other", "acme/x").is_none());
        assert!(d.resolve("acme-in", "acme/../x").is_none());
    }

    #[test]
    fn refuses_a_batch_bucket_that_is_also_a_data_bucket() {
        let e = Deployment::from_json(
            "deployment.json",
            r#"{ "buckets": { "map": { "In": "x-in" } }, "batch": { "bucket": "x-in" } }"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("batch.bucket"), "{e}");
        let e = Deployment::from_json(
            "deployment.json",
            r#"{ "batch": { "bucket": "x-b", "prefix": "t" } }"#,
        )
        .unwrap_err();
        assert!(e.to_string().contains("batch.prefix"), "{e}");
    }

    #[test]
    fn refuses_a_deployment_that_is_not_an_object() {
        // GIVEN a deployment.json that is an array, and one whose section is an array
        // WHEN it is parsed
        // THEN it is refused with the file, the field and why, not read field by field
        let e = Deployment::from_json("deployment.json", r#"[{ "map": {} }]"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "deployment.json: must be a JSON object { ... }, not an array"
        );
        let e =
            Deployment::from_json("deployment.json", r#"{ "batch": ["b-x", ""] }"#).unwrap_err();
        assert_eq!(
            e.to_string(),
            "deployment.json: batch: must be a JSON object { ... }, not an array"
        );
    }

    #[test]
    fn type_errors_name_the_json_path() {
        // GIVEN a bucket name of the wrong type
        // WHEN the deployment is parsed
        // THEN the error names the path of the field
        let e = Deployment::from_json(
            "deployment.json",
            r#"{ "buckets": { "map": { "In": 5 } } }"#,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "deployment.json: buckets.map.In: invalid type: integer `5`, expected a string at line 1 column 31"
        );
    }

    #[test]
    fn names_the_unknown_field() {
        let e = Deployment::from_json("deployment.json", r#"{ "bucket": {} }"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `bucket`"), "{e}");
    }
}
