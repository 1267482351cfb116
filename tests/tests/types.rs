//! The fields that `shared/src/host/native.d.luau` declares for the tables scripts are handed
//! (`ctx`, a hydrated barrier, a barrier's status) against what a real invocation hands them.
//! The functions of `native` and the job methods are checked by a unit test beside the file.

use std::collections::BTreeSet;

use native_tests::TestProject;
use serde_json::{json, Value};

const TYPES: &str = include_str!("../../shared/src/host/native.d.luau");

/// The fields of `type <name> = {` (or `export type`), one a line: (all, the optional ones).
fn fields(name: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut lines = TYPES.lines().skip_while(|l| {
        let l = l.trim_start_matches("export ");
        !l.starts_with(&format!("type {name} = {{"))
    });
    assert!(lines.next().is_some(), "native.d.luau has no type {name}");
    let (mut all, mut optional) = (BTreeSet::new(), BTreeSet::new());
    for line in lines.take_while(|l| !l.starts_with('}')) {
        let Some((field, ty)) = line.trim().split_once(':') else {
            continue;
        };
        all.insert(field.to_string());
        if ty.trim_end_matches(',').ends_with('?') {
            optional.insert(field.to_string());
        }
    }
    (all, optional)
}

/// Asserts that `real` has every required field of `ty` and nothing undeclared.
fn assert_declared(ty: &str, real: &Value) {
    let real: BTreeSet<String> = real
        .as_array()
        .unwrap_or_else(|| panic!("{ty}: {real}"))
        .iter()
        .map(|k| k.as_str().unwrap().to_string())
        .collect();
    let (all, optional) = fields(ty);
    let undeclared: Vec<_> = real.difference(&all).collect();
    let missing: Vec<_> = all
        .difference(&real)
        .filter(|f| !optional.contains(*f))
        .collect();
    assert!(
        undeclared.is_empty() && missing.is_empty(),
        "type {ty} of native.d.luau: not declared {undeclared:?}, declared but missing {missing:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_handed_to_scripts_have_the_declared_fields() {
    // GIVEN a script that lists the keys of ctx, of a hydrated barrier and of its status
    let src = r#"
        local function keys(t) local out = {} for k in t do table.insert(out, k) end return out end
        function on_invoke(ctx)
            local id = native.barrier.create({ members = { "m" }, continue_with = "s" })
            local status = native.barrier.status(id)
            native.barrier.ack(id, "m", { ok = true })
            local done = native.barrier.hydrate({ barrier = id })
            return { ctx = keys(ctx), status = keys(status), result = keys(done) }
        end
        function on_queue() end"#;
    let p = TestProject::new("acme", r#"{ "queue": true }"#, &[("s", src)]);
    // WHEN it runs
    let out = p.invoke("acme", "s", json!({})).await.unwrap();
    // THEN each has exactly the fields its type declares (optional ones may be absent)
    assert_declared("Ctx", &out["ctx"]);
    assert_declared("BarrierStatus", &out["status"]);
    assert_declared("BarrierResult", &out["result"]);
}
