//! Fair queues: the group a message belongs to, so that backends serve groups in turn instead
//! of one backlog at a time. The group is the tenant, read from the body every sender already
//! writes, so no sender can put a message in another tenant's group and none has to pass it:
//! a work message names its tenant (`{"tenant": ...}`), an object event its key, whose first
//! segment is the tenant's folder in a data bucket.
//!
//! The embedded backend receives round-robin over groups; on AWS the group is the message's
//! `MessageGroupId` on the standard queues (SQS fair queues), so one tenant's backlog does not
//! delay another tenant's messages.

use serde::Deserialize;
use serde_json::Value;

use super::QueueKind;

/// The longest group kept: SQS takes up to 128 characters.
const MAX_GROUP: usize = 128;

/// The group of a message body: its tenant; `None` when the body does not tell (a malformed
/// message, a test event), which backends serve as a group of its own.
pub fn group_of(queue: QueueKind, body: &str) -> Option<String> {
    let g = match queue {
        QueueKind::Work => tenant_of_work(body)?,
        QueueKind::Events => folder_of_event(body)?,
    };
    let ok = !g.is_empty()
        && g.len() <= MAX_GROUP
        && g.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b));
    ok.then_some(g)
}

/// `tenant` of a work message. Bodies the runtime writes start with it, and tenant names need
/// no escaping, so that is read without parsing the rest (an event of up to 256 KB).
fn tenant_of_work(body: &str) -> Option<String> {
    if let Some(rest) = body.strip_prefix(r#"{"tenant":""#) {
        if let Some(end) = rest.find('"') {
            let t = &rest[..end];
            if !t.contains('\\') {
                return Some(t.to_string());
            }
        }
    }
    #[derive(Deserialize)]
    struct Tenant {
        tenant: String,
    }
    serde_json::from_str::<Tenant>(body).ok().map(|t| t.tenant)
}

/// `<bucket>/<first key segment>` of an object event's first record: the tenant's folder of a
/// data bucket (the batch bucket's keys start with its prefix, so its events share a group).
fn folder_of_event(body: &str) -> Option<String> {
    let v: Value = serde_json::from_str(body).ok()?;
    let s3 = v.get("Records")?.get(0)?.get("s3")?;
    let bucket = s3.get("bucket")?.get("name")?.as_str()?;
    // Keys come as S3 writes them in notifications: `+` for space, `%XX` for the rest.
    let raw = s3.get("object")?.get("key")?.as_str()?.replace('+', " ");
    let key = percent_encoding::percent_decode_str(&raw)
        .decode_utf8()
        .ok()?;
    let folder = key.split('/').next()?;
    Some(format!("{bucket}/{folder}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_group_is_the_tenant_of_work_and_the_folder_of_an_event() {
        // GIVEN a work message as the runtime writes it, one with its fields in another order,
        // an event of a tenant's object, and bodies that tell nothing
        let work = r#"{"tenant":"acme","script":"s","event":{"tenant":"evil"}}"#;
        let reordered = r#"{"script":"s","event":{"x":"{\"tenant\":\"evil\"}"},"tenant":"acme"}"#;
        let event = r#"{"Records":[{"eventName":"ObjectCreated:Put","s3":{"bucket":{"name":"data-bucket"},"object":{"key":"acme/in/x+y.json","size":1}}}]}"#;
        // WHEN their groups are read THEN each is its tenant's, and the rest have none
        assert_eq!(group_of(QueueKind::Work, work).as_deref(), Some("acme"));
        assert_eq!(
            group_of(QueueKind::Work, reordered).as_deref(),
            Some("acme")
        );
        assert_eq!(
            group_of(QueueKind::Events, event).as_deref(),
            Some("data-bucket/acme")
        );
        for bad in [
            "",
            "{}",
            "not json",
            r#"{"tenant":"a b"}"#,
            r#"{"Event":"s3:TestEvent"}"#,
        ] {
            assert_eq!(group_of(QueueKind::Work, bad), None, "{bad}");
            assert_eq!(group_of(QueueKind::Events, bad), None, "{bad}");
        }
    }
}
