//! JSON into Luau values and back, inside a real sandboxed VM run by the engine: the raw parser
//! (`native.ndjson.rows` and `native.json.decode`, host/text_to_luau.rs), the bounded walker
//! (`native.json.encode` and the return value, host/luau_to_json.rs), and the event (`host::to_lua`).
//!
//! The VM is built once and pooled by the engine, so an execution costs one invocation. The
//! input bytes reach the script as an array of numbers (the event is JSON, and the bytes need
//! not be UTF-8) and are turned back into a string there.
//!
//! Every row is checked against serde_json's reading of the same line: a row without nulls
//! encodes back to the same JSON (numbers as the f64 Luau holds); with nulls, to the same JSON
//! less null members and trailing null elements, or an error for a too sparse list.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use native_core::config::{Deployment, Script, Tenant, TenantConfig};
use native_core::embedded::Embedded;
use native_core::engine::{Call, Engine, Entry};
use native_core::observe::LogSink;
use native_core::host::Services;
use native_fuzz::json_eq;
use serde_json::Value;

const SCRIPT: &str = r#"
local function enc(v)
  local ok, s = pcall(native.json.encode, v)
  if ok then return s end
  return "!" .. tostring(s)
end

function on_invoke(ctx, ev)
  local b = buffer.create(#ev.bytes)
  for i, x in ev.bytes do buffer.writeu8(b, i - 1, x) end
  local text = buffer.tostring(b)
  local rows = {}
  local ok, err = pcall(function()
    for row in native.ndjson.rows(text) do rows[#rows + 1] = enc(row) end
  end)
  local out = { rows = table.concat(rows, "\n"), n = #rows }
  if not ok then out.rows_error = tostring(err) end
  local ok2, v = pcall(native.json.decode, text)
  if ok2 then
    out.decoded = enc(v)
    local okp, p = pcall(native.json.encode, v, { pretty = true })
    if okp then out.pretty = p end
  else
    out.decode_error = tostring(v)
  end
  return out
end
"#;

#[derive(Debug)]
struct NoLog;

impl LogSink for NoLog {
    fn write(&self, _record: &Value) {}
}

struct Harness {
    engine: Engine,
    services: Arc<Services>,
    runtime: tokio::runtime::Runtime,
    tenant: Arc<Tenant>,
    _dir: tempfile::TempDir,
}

fn harness() -> &'static Harness {
    static H: OnceLock<Harness> = OnceLock::new();
    H.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let backend = Embedded::open(dir.path(), Vec::new()).expect("the embedded backend");
        let services = Arc::new(Services::new(
            Deployment::default(),
            backend.backends(),
            Arc::new(NoLog),
        ));
        let tenant = Tenant::new(
            "fuzz",
            TenantConfig::default(),
            vec![Script::new("fuzz", SCRIPT)],
        )
        .expect("the fuzz tenant");
        Harness {
            engine: Engine::new(),
            services,
            runtime: tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime"),
            tenant: Arc::new(tenant),
            _dir: dir,
        }
    })
}

/// What a JSON value becomes through Luau and back: null members dropped, trailing null
/// elements dropped; `None` when a list is too sparse for `from_lua` to call it a list.
fn through_luau(v: &Value) -> Option<Value> {
    Some(match v {
        Value::Array(a) => {
            let mut items = a.iter().map(through_luau).collect::<Option<Vec<_>>>()?;
            while items.last().is_some_and(Value::is_null) {
                items.pop();
            }
            let used = items.iter().filter(|v| !v.is_null()).count();
            if items.len() >= 10 && used * 2 < items.len() {
                return None;
            }
            Value::Array(items)
        }
        Value::Object(o) => {
            let mut out = serde_json::Map::new();
            for (k, v) in o {
                if !v.is_null() {
                    out.insert(k.clone(), through_luau(v)?);
                }
            }
            Value::Object(out)
        }
        other => other.clone(),
    })
}

/// Checks one encoded value against the JSON it came from.
fn check(what: &str, encoded: &str, original: &Value, top_null_ok: bool) {
    let want = if original.is_null() && top_null_ok {
        Some(Value::Null)
    } else {
        through_luau(original)
    };
    match (encoded.strip_prefix('!'), want) {
        (Some(err), None) => assert!(err.contains("too sparse"), "{what}: {err}"),
        (Some(err), Some(w)) => panic!("{what}: {w} did not encode: {err}"),
        (None, None) => panic!("{what}: a too sparse list {original} encoded as {encoded}"),
        (None, Some(w)) => {
            let got: Value = serde_json::from_str(encoded).expect("encode gives JSON");
            assert!(
                json_eq(&got, &w),
                "{what}: {original} came back as {got}, not {w}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    if data.len() > 8192 {
        return;
    }
    let h = harness();
    let call = Call {
        tenant: h.tenant.clone(),
        script: "fuzz".into(),
        entry: Entry::Invoke,
        event: serde_json::json!({ "bytes": data }).into(),
        json_answer: false,
        attempt: 1,
        depth: 0,
        width: None,
    };
    let out = h
        .engine
        .run(&h.services, h.runtime.handle(), &call)
        .and_then(|a| a.into_value())
        .unwrap_or_else(|e| panic!("the invocation failed: {e}"));
    let n = out["n"].as_u64().expect("n") as usize;
    let rows: Vec<&str> = match out["rows"].as_str().expect("rows") {
        "" if n == 0 => Vec::new(),
        s => s.split('\n').collect(),
    };
    assert_eq!(rows.len(), n, "an encoded row holds a newline");

    // The rows serde_json sees, up to the first line that is not JSON.
    let mut want = Vec::new();
    let mut bad_line = false;
    for line in data.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() {
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(v) => want.push(v),
            Err(_) => {
                bad_line = true;
                break;
            }
        }
    }
    assert_eq!(
        rows.len(),
        want.len(),
        "rows handed out: {rows:?}, want {want:?}"
    );
    assert_eq!(out.get("rows_error").is_some(), bad_line, "{out}");
    for (i, (got, w)) in rows.iter().zip(&want).enumerate() {
        // A `null` row is `native.json.null`, which encodes as null.
        check(&format!("row {}", i + 1), got, w, true);
    }

    match serde_json::from_slice::<Value>(data) {
        Ok(v) => {
            let decoded = out["decoded"]
                .as_str()
                .unwrap_or_else(|| panic!("decode failed: {out}"));
            check("decoded", decoded, &v, true);
            if let Some(p) = out.get("pretty").and_then(Value::as_str) {
                let a: Value = serde_json::from_str(p).expect("pretty JSON");
                let b: Value = serde_json::from_str(decoded).expect("JSON");
                assert_eq!(a, b, "pretty and compact encodings differ");
            }
        }
        Err(_) => assert!(out.get("decode_error").is_some(), "{out}"),
    }
});
