//! Oracles the fuzz targets share: independent statements of what the checkers promise, written
//! plainly so that a bug in the core's checker does not hide in the same bug here.

use serde_json::Value;

/// Whether `key`, placed under a folder, can only ever name something inside that folder: not
/// empty, not absolute, no backslash, no control character, and no empty, `.` or `..` segment.
pub fn stays_in_folder(key: &str) -> bool {
    !key.is_empty()
        && !key.starts_with('/')
        && !key.contains('\\')
        && !key.chars().any(char::is_control)
        && key
            .split('/')
            .all(|s| !s.is_empty() && s != "." && s != "..")
}

/// JSON equality with numbers compared as the f64 a Luau number holds (and serde_json's float
/// parsing is not always correctly rounded, so a relative slack of a few ulps).
pub fn json_eq(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if x == y {
                return true;
            }
            let (x, y) = (
                x.as_f64().unwrap_or(f64::NAN),
                y.as_f64().unwrap_or(f64::NAN),
            );
            x == y || (x - y).abs() <= 1e-15 * x.abs().max(y.abs())
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| json_eq(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_eq(v, w)))
        }
        _ => a == b,
    }
}

/// Whether a JSON value holds a `null` anywhere.
pub fn has_null(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.iter().any(has_null),
        Value::Object(o) => o.values().any(has_null),
        _ => false,
    }
}
