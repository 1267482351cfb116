//! Reading `request.json` and `done.json` as the JSON Schemas in `docs/schemas/` describe them:
//! the one place that decides whether a manifest is valid, so that the schemas partners check
//! against and the code that reads their files give the same verdict. A corpus of valid and
//! invalid manifests (`tests/manifests/`) is checked against both: here against these readers,
//! in `tests/schemas.py` against the schemas.
//!
//! What the schemas cannot say, and only the reader checks: that query names are unique in a
//! request, that every query of the request has a result (that needs both files), and that the
//! inline data of one `done.json`'s parts is at most [`MAX_INLINE_BYTES`] in all.

use serde_json::Value;

use super::manifest::{
    check_job_id, check_part_key, Dataset, Done, Request, MAX_INLINE_BYTES, REQUEST_VERSION,
};

/// The largest whole number JSON carries exactly (2^53 - 1): the schemas' `maximum` for counts,
/// sizes and times.
pub const MAX_WHOLE: u64 = (1 << 53) - 1;

/// Reads `done.json`: its fields and types, part keys that stay in the job folder, sha256 as 64
/// hex digits (either case), `results` when `ok` is true, and inline part data of at most
/// [`MAX_INLINE_BYTES`] in all.
pub fn read_done(bytes: &[u8]) -> Result<Done, String> {
    let invalid = |e: String| format!("not a valid manifest: {e}");
    let v: Value = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
    if v.get("ok") == Some(&Value::Bool(true)) && v.get("results").is_none() {
        return Err(invalid("ok is true and there are no results".into()));
    }
    let done: Done = serde_json::from_value(v).map_err(|e| invalid(e.to_string()))?;
    let mut inline = 0u64;
    for (name, d) in &done.results {
        check_dataset(d).map_err(|e| format!("result {name:?}: {e}"))?;
        inline += d
            .parts
            .iter()
            .filter_map(|p| p.data.as_ref())
            .map(|t| t.len() as u64)
            .sum::<u64>();
    }
    if inline > MAX_INLINE_BYTES {
        return Err(format!(
            "the parts' inline data is {inline} bytes, more than the {MAX_INLINE_BYTES} one done.json may hold: store larger parts as objects"
        ));
    }
    Ok(done)
}

/// Reads `request.json`: version 1, a valid job id, input and query names of 1 to 64 letters,
/// digits, `-` or `_`, unique query names, non-empty queries, and valid parts.
pub fn read_request(bytes: &[u8]) -> Result<Request, String> {
    let r: Request = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    if r.v != REQUEST_VERSION {
        return Err(format!(
            "version {} is not known (this reader knows {REQUEST_VERSION})",
            r.v
        ));
    }
    check_job_id(&r.job)?;
    if let Some(t) = &r.trace {
        if t.len() != 32 || !t.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(format!(
                "trace {:?} is not a W3C trace id (32 lower-case hex digits)",
                crate::text::cut_text(t.clone(), 40)
            ));
        }
    }
    for (name, d) in &r.inputs {
        crate::keys::check_name("input", name)?;
        check_dataset(d).map_err(|e| format!("input {name:?}: {e}"))?;
        if let Some(p) = d.parts.iter().find(|p| !p.stored()) {
            return Err(format!(
                "input {name:?}, part {:?}: inline data is for results in done.json; an input's part is an object",
                p.key
            ));
        }
    }
    for (i, q) in r.queries.iter().enumerate() {
        crate::keys::check_name("query", &q.name)?;
        if q.query.is_empty() {
            return Err(format!("query {:?} is empty", q.name));
        }
        if r.queries[..i].iter().any(|p| p.name == q.name) {
            return Err(format!("query name {:?} is used twice", q.name));
        }
    }
    Ok(r)
}

fn check_dataset(d: &Dataset) -> Result<(), String> {
    for p in &d.parts {
        check_part_key(&p.key)?;
        if let Some(h) = &p.sha256 {
            if h.len() != 64 || !h.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(format!(
                    "part {:?}: sha256 {h:?} is not 64 hex digits",
                    p.key
                ));
            }
        }
    }
    Ok(())
}

/// Serde helpers for counts: a JSON number that is a whole number from 0 to [`MAX_WHOLE`],
/// written `3` or `3.0` (JSON does not tell them apart, and the schemas' `integer` takes both).
pub mod whole {
    use serde::{Deserialize, Deserializer};

    use super::MAX_WHOLE;

    fn check<E: serde::de::Error>(n: &serde_json::Number) -> Result<u64, E> {
        let v = if let Some(u) = n.as_u64() {
            Some(u)
        } else if let Some(f) = n.as_f64() {
            (f >= 0.0 && f.fract() == 0.0 && f <= MAX_WHOLE as f64).then_some(f as u64)
        } else {
            None
        };
        v.filter(|v| *v <= MAX_WHOLE)
            .ok_or_else(|| E::custom(format!("{n} is not a whole number from 0 to {MAX_WHOLE}")))
    }

    /// An optional count.
    pub fn opt<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        match Option::<serde_json::Number>::deserialize(d)? {
            None => Ok(None),
            Some(n) => check(&n).map(Some),
        }
    }

    /// A time in ms since the epoch (whole, 0 to [`MAX_WHOLE`]).
    pub fn ms<'de, D: Deserializer<'de>>(d: D) -> Result<i64, D::Error> {
        let n = serde_json::Number::deserialize(d)?;
        check(&n).map(|v| v as i64)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// Every manifest of the corpus, with the verdict its folder gives (`valid/`, `invalid/`).
    fn corpus(kind: &str) -> Vec<(String, bool, Vec<u8>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/manifests")
            .join(kind);
        let mut out = Vec::new();
        for (dir, valid) in [("valid", true), ("invalid", false)] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let p = e.unwrap().path();
                out.push((
                    format!("{kind}/{dir}/{}", p.file_name().unwrap().to_string_lossy()),
                    valid,
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
        out.sort();
        out
    }

    /// The reader's verdict on every manifest of the corpus is the one its folder gives; the
    /// schemas give the same (`tests/schemas.py`, run by `tests/run.sh`).
    #[test]
    fn the_reader_agrees_with_the_corpus() {
        let mut n = 0;
        for (kind, read) in [
            (
                "done",
                (|b: &[u8]| read_done(b).map(drop)) as fn(&[u8]) -> Result<(), String>,
            ),
            ("request", |b: &[u8]| read_request(b).map(drop)),
        ] {
            for (name, valid, bytes) in corpus(kind) {
                let got = read(&bytes);
                assert_eq!(got.is_ok(), valid, "{name}: {got:?}");
                n += 1;
            }
        }
        assert!(n >= 40, "the corpus has {n} manifests; keep at least 40");
    }

    /// Inline data is bounded over the whole done.json (a partner cannot make a continuation
    /// hold more than that of it), and is never an input's: the partner reads inputs as objects.
    #[test]
    fn inline_data_is_bounded_per_done_json_and_only_for_results() {
        let half = "x".repeat(MAX_INLINE_BYTES as usize / 2);
        let done = |second: &str| {
            serde_json::json!({ "ok": true, "results": {
                "a": { "parts": [{ "key": "a.0000.ndjson", "data": half }] },
                "b": { "parts": [{ "key": "b.0000.ndjson", "data": second }] } } })
            .to_string()
        };
        assert!(read_done(done(&half).as_bytes()).is_ok());
        let err = read_done(done(&format!("{half}y")).as_bytes()).unwrap_err();
        assert!(err.contains("262145 bytes, more than the 262144"), "{err}");
        let request = serde_json::json!({ "v": 1, "job": "j1", "created_ms": 1,
            "inputs": { "ids": { "parts": [{ "key": "inputs/ids.0000.ndjson", "data": "1\n" }] } },
            "queries": [{ "name": "q", "query": "q" }] });
        let err = read_request(request.to_string().as_bytes()).unwrap_err();
        assert!(err.contains("inline data is for results"), "{err}");
    }
}
