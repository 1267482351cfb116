//! Config loading: `deployment.json` and a tenant's `config.json`, as a careless or hostile
//! operator could write them. Loading never panics, errors name the file, and whatever loads
//! keeps the promises the runtime relies on: an object at the top, every limit between 1 and
//! its ceiling, valid names, and a batch bucket apart from the data buckets.
#![no_main]

use libfuzzer_sys::fuzz_target;
use native_core::config::{Deployment, Limits, Tenant, TenantConfig};
use native_core::keys::check_name;

/// What the top of the text is, skipping whitespace.
fn is_object_text(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

fn limits_in_range(l: &Limits) {
    let c = native_core::config::CEILINGS;
    let pairs = [
        (l.max_data_ops, c.max_data_ops),
        (l.timeout_s, c.timeout_s),
        (l.max_memory_mb, c.max_memory_mb),
        (l.max_object_mb, c.max_object_mb),
        (l.max_stream_mb, c.max_stream_mb),
        (l.max_http_requests, c.max_http_requests),
        (l.max_http_response_mb, c.max_http_response_mb),
        (l.max_sends, c.max_sends),
        (l.max_chain_depth, c.max_chain_depth),
    ];
    for (v, ceiling) in pairs {
        assert!(
            (1..=ceiling).contains(&v),
            "limit {v} accepted outside 1..={ceiling}: {l:?}"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Deployment::from_json("deployment.json", text) {
        Ok(d) => {
            assert!(
                is_object_text(text),
                "a deployment that is no JSON object loaded: {text:?}"
            );
            for logical in d.buckets.map.keys() {
                assert!(check_name("bucket", logical).is_ok());
            }
            if let Some(b) = &d.batch {
                assert!(b.prefix.is_empty() || b.prefix.ends_with('/'));
                assert!(!d.buckets.map.values().any(|r| *r == b.bucket));
            }
        }
        Err(e) => assert!(e.to_string().contains("deployment.json"), "{e}"),
    }
    let file = "tenants/acme/config.json";
    match TenantConfig::from_json(file, text) {
        Ok(c) => {
            assert!(
                is_object_text(text),
                "a config that is no JSON object loaded: {text:?}"
            );
            limits_in_range(&c.limits);
            assert!(c.router.as_deref().is_none_or(|r| check_name("script", r).is_ok()));
            assert!(c.config.is_object());
            Tenant::new("acme", c, Vec::new()).expect("a loaded config makes a tenant");
        }
        Err(e) => assert!(e.to_string().contains(file), "{e}"),
    }
});
