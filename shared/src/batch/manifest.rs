//! The partner contract: `request.json` (v1, written by the script) and `done.json` (written by
//! the partner last), and the layout of a job in the batch bucket.
//!
//! Everything of a tenant sits under `<batch.prefix><tenant>/`:
//!
//! ```text
//! jobs/<job>/request.json          written by the script; the partner reads it
//! jobs/<job>/inputs/<name>.NNNN.ndjson   inputs the script attached
//! jobs/<job>/<files>               result parts, written by the partner
//! jobs/<job>/done.json             written by the partner last: the manifest and commit marker
//! state/<job>.json                 written by the script; the partner never needs it
//! state/ids/<job>.json             for a job submitted with an id: what it asked for; stays
//!                                  after cleanup, so the id is not used for a second job
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::Digest;

/// The version of `request.json` this build writes.
pub const REQUEST_VERSION: u32 = 1;

/// One part of an input or a result: a key relative to the job folder, with what it promises.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Part {
    /// Relative to `jobs/<job>/`.
    pub key: String,
    /// Size of the stored object in bytes, when promised.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::contract::whole::opt"
    )]
    pub bytes: Option<u64>,
    /// Hex sha256 of the stored object, when promised.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    /// A small part's content in the manifest itself, as text, instead of an object at `key`
    /// (which is then neither read nor deleted, and need not exist); `bytes` and `sha256` are of
    /// this text as UTF-8. Only in `done.json`, at most [`MAX_INLINE_BYTES`] in all: one PUT
    /// and one GET fewer per part (docs/cost.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
}

/// The most inline part data (`Part::data`) one `done.json` may hold, over all its parts: what
/// `native partner` and `job:http` put inline, and what a continuation accepts.
pub const MAX_INLINE_BYTES: u64 = 256 * 1024;

impl Part {
    /// Whether the part is stored as an object (not inline in the manifest).
    pub fn stored(&self) -> bool {
        self.data.is_none()
    }
}

/// An input the script attached, or a result the partner wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// Rows in all parts, when promised.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "super::contract::whole::opt"
    )]
    pub rows: Option<u64>,
    /// The parts, read in this order.
    #[serde(default)]
    pub parts: Vec<Part>,
    /// Anything else the partner adds (for `job:http`: `status`, `headers`).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One query of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Query {
    /// The result's name; `done.json` has an entry for it in `results`.
    pub name: String,
    /// What to run; a contract between the tenant's scripts and the partner.
    pub query: String,
    /// Its parameters.
    #[serde(default)]
    pub params: Value,
}

/// `jobs/<job>/request.json`, version 1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// Always 1.
    pub v: u32,
    /// The job id.
    pub job: String,
    /// When it was submitted, in ms since the epoch.
    #[serde(deserialize_with = "super::contract::whole::ms")]
    pub created_ms: i64,
    /// Inputs by name.
    pub inputs: BTreeMap<String, Dataset>,
    /// The queries, in the order the script added them.
    pub queries: Vec<Query>,
    /// The chain of the script that submitted the job, as a W3C trace id (32 lower-case hex
    /// digits), for the partner's own traces and the `traceparent` of its calls back (issue
    /// 55); absent in requests written before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

/// `jobs/<job>/done.json`: `{ ok: true, results }` or `{ ok: false, error }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Done {
    /// Whether every query was answered.
    pub ok: bool,
    /// Why not, when `ok` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Results by query name.
    #[serde(default)]
    pub results: BTreeMap<String, Dataset>,
}

/// `state/<job>.json`: what the continuation needs, out of the partner's reach.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct State {
    /// Always 1.
    pub v: u32,
    /// The job id.
    pub job: String,
    /// The script whose `on_queue` runs when `done.json` lands.
    pub continue_with: Option<String>,
    /// The script's state for the continuation.
    #[serde(default)]
    pub state: Value,
    /// The names of the queries, which `done.json` must all answer.
    pub queries: Vec<String>,
    /// Every key the script wrote for the job, relative to the tenant folder (for `keys()`).
    #[serde(default)]
    pub inputs: Vec<String>,
    /// When it was submitted.
    pub created_ms: i64,
    /// Seconds after submit when a job without `done.json` is stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_after_s: Option<u64>,
    /// The script that gets `{ job, stale = true }` once the job is stale.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_stale: Option<String>,
}

/// `state/ids/<job>.json`: the record that a job was submitted under an id the script chose.
/// Cleanup (`job:keys()`) leaves it, so that submitting the id again after the job finished
/// starts nothing; the batch bucket's lifecycle rule expires it with everything else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IdRecord {
    /// Always 1.
    pub v: u32,
    /// The job id.
    pub job: String,
    /// [`request_fingerprint`] of what was submitted.
    pub fingerprint: String,
    /// When it was submitted.
    pub created_ms: i64,
}

/// The id record of a job, relative to the tenant folder. A job id has no `/`, so this never
/// names another job's state file.
pub fn id_record_key(job: &str) -> String {
    format!("state/ids/{job}.json")
}

/// What a request asks the partner for, as a hash: its inputs (rows, parts with bytes and
/// sha256) and its queries, with object keys sorted so that the order a table was built in
/// does not matter. Two submits under one id ask for the same thing when these are equal.
pub fn request_fingerprint(inputs: &BTreeMap<String, Dataset>, queries: &[Query]) -> String {
    fn sorted(v: Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut pairs: Vec<(String, Value)> = m.into_iter().collect();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                Value::Object(pairs.into_iter().map(|(k, v)| (k, sorted(v))).collect())
            }
            Value::Array(a) => Value::Array(a.into_iter().map(sorted).collect()),
            other => other,
        }
    }
    let both = serde_json::json!({ "inputs": inputs, "queries": queries });
    let text = serde_json::to_vec(&sorted(both)).unwrap_or_default();
    hex::encode(sha2::Sha256::digest(&text))
}

/// The job folder of a job, relative to the tenant folder: `jobs/<job>/`.
pub fn job_dir(job: &str) -> String {
    format!("jobs/{job}/")
}

/// The state file of a job, relative to the tenant folder.
pub fn state_key(job: &str) -> String {
    format!("state/{job}.json")
}

/// The job id of a `jobs/<job>/done.json` key (relative to the tenant folder).
pub fn done_job(key: &str) -> Option<&str> {
    let job = key.strip_prefix("jobs/")?.strip_suffix("/done.json")?;
    (!job.is_empty() && !job.contains('/')).then_some(job)
}

/// Checks a job id: 1 to 128 letters, digits, `-`, `_` or `.` (not only dots).
pub fn check_job_id(id: &str) -> Result<(), String> {
    let ok = !id.is_empty()
        && id.len() <= 128
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && !id.chars().all(|c| c == '.');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "job id {id:?} must be 1 to 128 letters, digits, '-', '_' or '.'"
        ))
    }
}

/// Checks a part key from a manifest: relative to the job folder and unable to climb out of it.
/// Refuses empty, `.` and `..` segments, absolute keys, backslashes, control characters and
/// percent-encoded dots, slashes or backslashes (which a decoding step could turn into one).
pub fn check_part_key(key: &str) -> Result<(), String> {
    // Printable ASCII only: then a key's length in characters (what the schema's maxLength
    // counts) is its length in bytes (what S3 limits).
    if let Some(c) = key.chars().find(|c| !(' '..='~').contains(c) || *c == '\\') {
        return Err(format!(
            "part {key:?} has {c:?}; part keys are printable ASCII without backslashes"
        ));
    }
    let lower = key.to_ascii_lowercase();
    if ["%2e", "%2f", "%5c"].iter().any(|p| lower.contains(p)) {
        return Err(format!(
            "part {key:?} has a percent-encoded dot, slash or backslash"
        ));
    }
    crate::keys::check_relative_key(key)
        .map_err(|why| format!("part {key:?} climbs out of the job folder or is not a key: {why}"))
}

#[cfg(test)]
pub(crate) mod tests {
    #[test]
    fn job_ids_that_are_steps_of_a_url_path_are_refused() {
        for step in [".", "..", "..."] {
            assert!(super::check_job_id(step).is_err(), "{step}");
        }
        for fine in ["a.b", ".x", "x.", "job-1_2"] {
            assert!(super::check_job_id(fine).is_ok(), "{fine}");
        }
        // '%', '/' and '\\' (which a URL parser could decode or turn into a step) are refused.
        for bad in ["%2e", "a/b", "a\\b"] {
            assert!(super::check_job_id(bad).is_err(), "{bad}");
        }
    }

    use super::*;

    /// Part keys that must be refused: each could leave the job folder, or is no key at all.
    /// The schema tests check that `done.schema.json` refuses exactly these too.
    pub(crate) const BAD_PART_KEYS: &[&str] = &[
        "../x",
        "a/../../x",
        "/abs",
        "a//b",
        ".",
        "a\\b",
        "%2e%2e/x",
        "a%2Fb",
        "a%5c",
        "a\u{7}",
        "a\u{85}",
        "",
        "x/",
        "a/./b",
        "a/..",
    ];

    /// Part keys that must be accepted.
    pub(crate) const GOOD_PART_KEYS: &[&str] = &[
        "customers.0000.ndjson.gz",
        "out/part-1.ndjson",
        "a..b",
        "...",
        ".x",
    ];

    #[test]
    fn part_keys_cannot_climb_out() {
        for bad in BAD_PART_KEYS {
            assert!(check_part_key(bad).is_err(), "{bad:?}");
        }
        for good in GOOD_PART_KEYS {
            assert!(check_part_key(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn fingerprints_ignore_key_order_but_not_content() {
        let q = |params: &str| {
            vec![Query {
                name: "q".into(),
                query: "x".into(),
                params: serde_json::from_str(params).unwrap(),
            }]
        };
        let none = BTreeMap::new();
        assert_eq!(
            request_fingerprint(&none, &q(r#"{"a":1,"b":2}"#)),
            request_fingerprint(&none, &q(r#"{"b":2,"a":1}"#))
        );
        assert_ne!(
            request_fingerprint(&none, &q(r#"{"a":1}"#)),
            request_fingerprint(&none, &q(r#"{"a":2}"#))
        );
        assert_ne!(id_record_key("a"), state_key("ids"));
    }

    #[test]
    fn done_keys_name_their_job() {
        assert_eq!(done_job("jobs/j1/done.json"), Some("j1"));
        assert_eq!(done_job("jobs/j1/x/done.json"), None);
        assert_eq!(done_job("x/jobs/j1/done.json"), None);
        assert_eq!(done_job("jobs//done.json"), None);
    }

    #[test]
    fn the_seed_examples_parse() {
        let r: Request = serde_json::from_str(r#"{ "v": 1, "job": "9f3c", "created_ms": 1761300000000,
          "inputs":  { "ids": { "rows": 3, "parts": [ { "key": "inputs/ids.0000.ndjson", "bytes": 27, "sha256": "ab" } ] } },
          "queries": [ { "name": "customers", "query": "customers_by_id", "params": { "input": "ids" } } ] }"#).unwrap();
        assert_eq!(r.inputs["ids"].parts[0].bytes, Some(27));
        let d: Done = serde_json::from_str(r#"{ "ok": true, "results": {
            "customers": { "rows": 120000, "parts": [ { "key": "customers.0000.ndjson.gz", "bytes": 9100000, "sha256": "x" }, { "key": "customers.0001.ndjson.gz" } ] },
            "orders": { "parts": [ { "key": "orders.0000.ndjson.gz" } ] } } }"#).unwrap();
        assert_eq!(d.results["customers"].parts.len(), 2);
        let f: Done =
            serde_json::from_str(r#"{ "ok": false, "error": "partner timeout" }"#).unwrap();
        assert_eq!(f.error.as_deref(), Some("partner timeout"));
    }
}
