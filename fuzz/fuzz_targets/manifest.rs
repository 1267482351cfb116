//! `done.json` and `request.json`, as a hostile partner (or a damaged bucket) could write them:
//! parsing never panics, a parsed manifest serializes back to what it parsed (and a request to
//! the same fingerprint), and every part key the checker accepts stays inside the job folder.
#![no_main]

use libfuzzer_sys::fuzz_target;
use native_core::batch::manifest::{
    check_job_id, check_part_key, job_dir, request_fingerprint, Done, Request,
};
use native_fuzz::{json_eq, stays_in_folder};

fn check_parts<'a>(parts: impl Iterator<Item = &'a str>) {
    for key in parts {
        if check_part_key(key).is_ok() {
            assert!(
                stays_in_folder(key),
                "part key {key:?} accepted but can climb out"
            );
            let lower = key.to_ascii_lowercase();
            assert!(
                !lower.contains("%2e") && !lower.contains("%2f") && !lower.contains("%5c"),
                "part key {key:?} accepted with a percent-encoded dot, slash or backslash"
            );
        }
    }
}

fn round_trip<T: serde::Serialize + serde::de::DeserializeOwned>(v: &T) {
    let text = serde_json::to_string(v).expect("a parsed manifest serializes");
    let again: T = serde_json::from_str(&text).expect("a serialized manifest parses");
    let (a, b) = (
        serde_json::to_value(v).expect("to value"),
        serde_json::to_value(&again).expect("to value"),
    );
    assert!(json_eq(&a, &b), "round trip changed {a} into {b}");
}

fuzz_target!(|data: &[u8]| {
    if let Ok(done) = serde_json::from_slice::<Done>(data) {
        round_trip(&done);
        check_parts(
            done.results
                .values()
                .flat_map(|d| d.parts.iter().map(|p| p.key.as_str())),
        );
    }
    if let Ok(req) = serde_json::from_slice::<Request>(data) {
        round_trip(&req);
        // The fingerprint that guards a job id: the same request, written out and read back,
        // asks for the same thing.
        let text = serde_json::to_string(&req).expect("a parsed request serializes");
        let again: Request = serde_json::from_str(&text).expect("and parses again");
        let fp = request_fingerprint(&req.inputs, &req.queries);
        assert_eq!(fp.len(), 64);
        // (Exact equality: serde_json may not read a float back bit for bit.)
        if serde_json::to_value(&req).ok() == serde_json::to_value(&again).ok() {
            assert_eq!(fp, request_fingerprint(&again.inputs, &again.queries));
        }
        if check_job_id(&req.job).is_ok() {
            let dir = job_dir(&req.job);
            let inner = dir.trim_end_matches('/');
            assert!(
                stays_in_folder(inner),
                "job id {:?} accepted but climbs",
                req.job
            );
            assert_eq!(
                inner.matches('/').count(),
                1,
                "job id {:?} adds a folder",
                req.job
            );
        }
        check_parts(
            req.inputs
                .values()
                .flat_map(|d| d.parts.iter().map(|p| p.key.as_str())),
        );
    }
});
