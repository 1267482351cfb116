//! The project clock of the embedded backend: an offset from the system clock kept in
//! `.native/clock.json`, so that `native clock advance 8d` makes a week pass for TTL expiry,
//! delays, leases, barrier deadlines and `os.time` in every process using the project, without
//! waiting. Each process applies the offset through [`crate::ports::set_clock_offset_ms`] when
//! it opens the project; `native serve` re-reads it as it polls its queues.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The file, inside the project's `.native/`.
pub const FILE: &str = "clock.json";
/// The furthest the clock may be advanced in total: ten years.
pub const MAX_OFFSET_MS: i64 = 10 * 365 * 86_400_000;

fn file(state_dir: &Path) -> PathBuf {
    state_dir.join(FILE)
}

/// The offset stored for a project's `.native/` folder, in ms (0 when none is stored).
pub fn load(state_dir: &Path) -> Result<i64> {
    let path = file(state_dir);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => {
            return Err(Error::backend(
                "embedded",
                format!("cannot read {}", path.display()),
                e,
            ))
        }
    };
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::config(
            format!(".native/{FILE}"),
            "-",
            format!("{e}; run `native clock reset`"),
        )
    })?;
    v["offset_ms"].as_i64().ok_or_else(|| {
        Error::config(
            format!(".native/{FILE}"),
            "offset_ms",
            "must be an integer; run `native clock reset`",
        )
    })
}

/// Stores an offset (written to a temporary file and renamed, so that a reader never sees half
/// of it). Processes pick it up with [`apply`].
pub fn store(state_dir: &Path, offset_ms: i64) -> Result<()> {
    let path = file(state_dir);
    let tmp = state_dir.join(format!("{FILE}.tmp{}", std::process::id()));
    let text = serde_json::json!({ "offset_ms": offset_ms }).to_string();
    std::fs::write(&tmp, text)
        .and_then(|()| std::fs::rename(&tmp, &path))
        .map_err(|e| Error::backend("embedded", format!("cannot write {}", path.display()), e))
}

/// Reads the stored offset and applies it to this process.
pub fn apply(state_dir: &Path) -> Result<i64> {
    let offset = load(state_dir)?;
    crate::ports::set_clock_offset_ms(offset);
    Ok(offset)
}

/// Parses a duration such as `90s`, `15m`, `2h`, `8d` or `1w` into ms.
pub fn parse_duration(s: &str) -> std::result::Result<i64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let per: i64 = match unit {
        "ms" => 1,
        "s" => 1000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        "w" => 7 * 86_400_000,
        _ => {
            return Err(format!(
                "duration {s:?} must be a whole number with a unit: ms, s, m, h, d or w (e.g. 90s, 2h, 8d)"
            ))
        }
    };
    n.parse::<i64>()
        .ok()
        .and_then(|n| n.checked_mul(per))
        .filter(|ms| *ms <= MAX_OFFSET_MS)
        .ok_or_else(|| format!("duration {s:?} must be a whole number of {unit} up to ten years"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_a_number_and_a_unit() {
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert_eq!(parse_duration("8d"), Ok(8 * 86_400_000));
        for bad in ["", "8", "d", "-1d", "1.5h", "8 days", "99999999999999w"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_offset_is_kept_in_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load(dir.path()).unwrap(), 0);
        store(dir.path(), 5_000).unwrap();
        assert_eq!(load(dir.path()).unwrap(), 5_000);
    }
}
