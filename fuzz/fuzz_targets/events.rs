//! Queue message bodies: S3 notifications on the events queue and script messages on the work
//! queue, as anyone who can write to the queues could send them. Parsing never panics; every
//! record read back comes out the same when written and read again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use native_core::events::{object_created_body, parse_notification, Notification};
use native_core::ports::ObjectMeta;
use native_core::ports::WorkMessage;
use native_fuzz::json_eq;

fuzz_target!(|data: &[u8]| {
    let Ok(body) = std::str::from_utf8(data) else {
        return;
    };
    match parse_notification(body) {
        Ok(Notification::Records(records)) => {
            for r in records {
                assert!(!r.etag.starts_with('"') && !r.etag.ends_with('"'));
                let meta = ObjectMeta {
                    key: r.key.clone(),
                    size: r.size,
                    etag: r.etag.clone(),
                    modified_ms: 7,
                    depth: 0,
                    trace: None,
                };
                let again = object_created_body(&r.bucket, &meta, "local");
                let Ok(Notification::Records(back)) = parse_notification(&again) else {
                    panic!("our own notification does not parse: {again}");
                };
                assert_eq!(back.len(), 1);
                let b = &back[0];
                assert_eq!(
                    (&b.bucket, &b.key, b.size, &b.etag),
                    (&r.bucket, &r.key, r.size, &r.etag)
                );
            }
        }
        Ok(Notification::Test) | Err(_) => {}
    }
    if let Ok(msg) = serde_json::from_str::<WorkMessage>(body) {
        let text = serde_json::to_string(&msg).expect("a work message serializes");
        let back: WorkMessage = serde_json::from_str(&text).expect("and parses again");
        assert_eq!(
            (&back.tenant, &back.script, back.depth),
            (&msg.tenant, &msg.script, msg.depth)
        );
        assert!(json_eq(&back.event, &msg.event), "event changed on the way");
    }
});
