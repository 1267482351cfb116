//! Object events: S3 notifications as SQS delivers them, read leniently, and written the same way
//! by the embedded backend so that both backends feed the router one format.

use percent_encoding::{percent_decode_str, utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};

use crate::ports::ObjectMeta;

/// One object record of a notification, with the real bucket and the decoded full key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectRecord {
    /// Real bucket name.
    pub bucket: String,
    /// Full key, URL-decoded.
    pub key: String,
    /// Size in bytes (0 for deletions).
    pub size: u64,
    /// The etag without quotes.
    pub etag: String,
    /// E.g. `ObjectCreated:Put`.
    pub event_name: String,
}

/// What an events-queue message holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Notification {
    /// `s3:TestEvent`, sent when notifications are configured: nothing to do.
    Test,
    /// Object records, usually one.
    Records(Vec<ObjectRecord>),
}

/// The tenant a message of `queue` belongs to, where it can be told: a work message names its
/// tenant; an object notification's tenant is the first folder of its key in a bucket of
/// `deployment` (as the route function tells it). S3's test event, another bucket's object or
/// a body that does not parse belong to none. For dead letters: listing and redriving a
/// tenant's.
pub fn owner(
    deployment: &crate::config::Deployment,
    queue: crate::ports::QueueKind,
    body: &str,
) -> Option<String> {
    match queue {
        crate::ports::QueueKind::Work => serde_json::from_str::<crate::ports::WorkMessage>(body)
            .ok()
            .map(|m| m.tenant),
        crate::ports::QueueKind::Events => match parse_notification(body).ok()? {
            Notification::Records(r) => r
                .first()
                .and_then(|r| deployment.resolve(&r.bucket, &r.key))
                .map(|b| b.tenant),
            Notification::Test => None,
        },
    }
}

/// Parses an events-queue message body. Only the fields that matter are required: real S3
/// sends more, emulators fewer (moto has no `userIdentity`).
pub fn parse_notification(body: &str) -> Result<Notification, String> {
    let v: Value =
        serde_json::from_str(body).map_err(|e| format!("event message is not JSON: {e}"))?;
    if v.get("Event").and_then(Value::as_str) == Some("s3:TestEvent") {
        return Ok(Notification::Test);
    }
    let records = v
        .get("Records")
        .and_then(Value::as_array)
        .ok_or("event message has no \"Records\" array and is no s3:TestEvent")?;
    let mut out = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        let field = |path: &[&str]| -> Option<&Value> { path.iter().try_fold(r, |v, k| v.get(*k)) };
        let bucket = field(&["s3", "bucket", "name"])
            .and_then(Value::as_str)
            .ok_or(format!("Records[{i}].s3.bucket.name is missing"))?;
        let raw_key = field(&["s3", "object", "key"])
            .and_then(Value::as_str)
            .ok_or(format!("Records[{i}].s3.object.key is missing"))?;
        out.push(ObjectRecord {
            bucket: bucket.to_string(),
            key: decode_key(raw_key)?,
            size: field(&["s3", "object", "size"])
                .and_then(Value::as_u64)
                .unwrap_or(0),
            etag: field(&["s3", "object", "eTag"])
                .and_then(Value::as_str)
                .unwrap_or("")
                .trim_matches('"')
                .to_string(),
            event_name: field(&["eventName"])
                .and_then(Value::as_str)
                .unwrap_or("ObjectCreated:Put")
                .to_string(),
        });
    }
    Ok(Notification::Records(out))
}

/// Decodes a key as S3 encodes it in notifications: `+` for space, `%XX` for the rest.
pub fn decode_key(raw: &str) -> Result<String, String> {
    let plus = raw.replace('+', " ");
    percent_decode_str(&plus)
        .decode_utf8()
        .map(|s| s.into_owned())
        .map_err(|_| format!("object key {raw:?} is not valid UTF-8 once decoded"))
}

const KEY_ENCODE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'*')
    .remove(b'~');

/// Writes a notification body as S3 does for one created object.
pub fn object_created_body(bucket: &str, meta: &ObjectMeta, region: &str) -> String {
    let key = utf8_percent_encode(&meta.key, KEY_ENCODE)
        .to_string()
        .replace("%20", "+");
    json!({
        "Records": [{
            "eventVersion": "2.1",
            "eventSource": "aws:s3",
            "awsRegion": region,
            "eventTime": meta.modified_ms,
            "eventName": "ObjectCreated:Put",
            "s3": {
                "s3SchemaVersion": "1.0",
                "bucket": { "name": bucket, "arn": format!("arn:aws:s3:::{bucket}") },
                "object": { "key": key, "size": meta.size, "eTag": meta.etag, "sequencer": format!("{:016X}", meta.modified_ms) }
            }
        }]
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_moto_style_records_and_decodes_keys() {
        let body = r#"{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"b"},"object":{"key":"acme%2Fa+b%C3%A9.json","size":3,"eTag":"\"abc\""}}}]}"#;
        let Notification::Records(r) = parse_notification(body).unwrap() else {
            panic!()
        };
        assert_eq!(r[0].key, "acme/a bé.json");
        assert_eq!(r[0].etag, "abc");
        assert_eq!(
            parse_notification(r#"{"Event":"s3:TestEvent","Service":"Amazon S3"}"#).unwrap(),
            Notification::Test
        );
        assert!(parse_notification("{").unwrap_err().contains("not JSON"));
        assert!(parse_notification(r#"{"Records":[{"s3":{}}]}"#)
            .unwrap_err()
            .contains("bucket.name"));
    }

    #[test]
    fn written_bodies_read_back() {
        let meta = ObjectMeta {
            key: "acme/a b/ü+.json".into(),
            size: 5,
            etag: "e".into(),
            modified_ms: 1,
            depth: 0,
            trace: None,
        };
        let body = object_created_body("bk", &meta, "local");
        let Notification::Records(r) = parse_notification(&body).unwrap() else {
            panic!()
        };
        assert_eq!(r[0].key, meta.key);
        assert_eq!(r[0].bucket, "bk");
    }
}
