//! The key checkers: relative keys (every key a script passes), listing prefixes, part keys of a
//! manifest, job ids and names. An accepted key can never leave the folder it is placed in, and
//! placing it in a tenant's folder and reading the notification back gives the same tenant and
//! key.
#![no_main]

use libfuzzer_sys::fuzz_target;
use native_core::batch::manifest::{check_job_id, check_part_key, done_job};
use native_core::config::Deployment;
use native_core::events::{decode_key, object_created_body, parse_notification, Notification};
use native_core::keys::{check_name, check_prefix, check_relative_key, MAX_KEY_BYTES};
use native_core::ports::ObjectMeta;
use native_fuzz::stays_in_folder;

fn deployment() -> &'static Deployment {
    static D: std::sync::OnceLock<Deployment> = std::sync::OnceLock::new();
    D.get_or_init(|| {
        Deployment::from_json(
            "deployment.json",
            r#"{ "buckets": { "map": { "In": "acme-in" } },
                 "batch": { "bucket": "partner-batch", "prefix": "tenants/" } }"#,
        )
        .expect("the fuzz deployment is valid")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(key) = std::str::from_utf8(data) else {
        return;
    };
    if check_relative_key(key).is_ok() {
        assert!(
            stays_in_folder(key),
            "key {key:?} accepted but can leave the folder"
        );
        assert!(key.len() <= MAX_KEY_BYTES);
        // Through a bucket notification and back, in a data bucket and in the batch bucket.
        let d = deployment();
        for logical in ["In", "$batch"] {
            let real = d.real_bucket(logical).expect("configured");
            let full = d.full_key(logical, "acme", key);
            let at = d.resolve(real, &full).expect("an accepted key resolves");
            assert_eq!(
                (at.logical.as_str(), at.tenant.as_str(), at.key.as_str()),
                (logical, "acme", key)
            );
            let meta = ObjectMeta {
                key: full.clone(),
                size: 1,
                etag: "e".into(),
                modified_ms: 1,
                depth: 0,
                trace: None,
            };
            let body = object_created_body(real, &meta, "local");
            let Ok(Notification::Records(r)) = parse_notification(&body) else {
                panic!("our own notification for {full:?} does not parse");
            };
            assert_eq!(r[0].key, full, "notification key changed on the way");
        }
    }
    if check_prefix(key).is_ok() && !key.is_empty() {
        assert!(
            stays_in_folder(key.strip_suffix('/').unwrap_or(key)),
            "prefix {key:?}"
        );
    }
    if check_part_key(key).is_ok() {
        assert!(
            check_relative_key(key).is_ok(),
            "part key {key:?} is no relative key"
        );
        // One decoding step (as an S3 notification or a careless partner tool applies) must not
        // turn an accepted part key into one that climbs.
        if let Ok(decoded) = decode_key(key) {
            let climbs = decoded.starts_with('/')
                || decoded.contains('\\')
                || decoded.split('/').any(|s| s == "." || s == "..");
            assert!(!climbs, "part key {key:?} decodes to {decoded:?}");
        }
    }
    if check_job_id(key).is_ok() {
        let done = format!("jobs/{key}/done.json");
        assert_eq!(
            done_job(&done),
            Some(key),
            "job id {key:?} does not round-trip"
        );
        assert!(stays_in_folder(&done));
    }
    if let Some(job) = done_job(key) {
        assert!(!job.is_empty() && !job.contains('/'));
    }
    for kind in ["script", "tenant", "bucket"] {
        if check_name(kind, key).is_ok() {
            assert!(stays_in_folder(key) && !key.contains('/') && !key.starts_with('.'));
        }
    }
});
