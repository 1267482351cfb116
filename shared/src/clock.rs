//! The project clock of the embedded backend: an offset from the system clock kept in
//! `.native/clock.json`, so that `native clock advance 8d` makes a week pass for TTL expiry,
//! delays, leases, barrier deadlines and `os.time` in every process using the project, without
//! waiting. Each process applies the offset through [`crate::ports::set_clock_offset_ms`] when
//! it opens the project, and then follows the file ([`follow`]): every read of the clock
//! ([`crate::ports::now_ms`]) looks at the file's metadata (one `stat`, at most once a
//! millisecond) and reloads the offset when the file changed, so that a running `native serve`
//! sees `native clock advance` at its next clock read, not at its next queue poll.

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

/// The clock file this process follows, and what its metadata was when last read.
struct Followed {
    state_dir: PathBuf,
    seen: Option<Signature>,
}

/// What tells one version of the file from the next: [`store`] renames a new file over it,
/// so its inode changes with each version, and its times and length with most.
type Signature = (u64, i64, i64, i64, u64);

static FOLLOWED: std::sync::Mutex<Option<Followed>> = std::sync::Mutex::new(None);
/// When the file was last looked at, in ns since [`epoch`].
static LOOKED_NS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
/// How often at most the file is looked at: a change is seen within this.
const LOOK_EVERY_NS: u64 = 1_000_000;

fn epoch() -> std::time::Instant {
    static EPOCH: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    *EPOCH.get_or_init(std::time::Instant::now)
}

fn signature(state_dir: &Path) -> Option<Signature> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(file(state_dir)).ok()?;
    Some((m.ino(), m.mtime(), m.mtime_nsec(), m.ctime_nsec(), m.len()))
}

/// Applies the offset stored for `state_dir` now, and follows its file from now on: the
/// project this process works on (the last one opened, if several).
pub fn follow(state_dir: &Path) -> Result<i64> {
    let seen = signature(state_dir);
    let offset = apply(state_dir)?;
    *FOLLOWED.lock().unwrap_or_else(|p| p.into_inner()) = Some(Followed {
        state_dir: state_dir.to_path_buf(),
        seen,
    });
    // The clock reads of a process that follows no file (the Lambda functions, the Fargate
    // server) never call it.
    crate::ports::on_clock_read(refresh);
    Ok(offset)
}

/// Reloads the offset when the followed file changed since it was last read (called by every
/// clock read; at most one `stat` a millisecond). A file that cannot be read keeps the offset
/// as it was (`native clock show` says why).
fn refresh() {
    use std::sync::atomic::Ordering::Relaxed;
    let now = epoch().elapsed().as_nanos() as u64;
    let last = LOOKED_NS.load(Relaxed);
    if now.saturating_sub(last) < LOOK_EVERY_NS
        || LOOKED_NS
            .compare_exchange(last, now, Relaxed, Relaxed)
            .is_err()
    {
        return;
    }
    let mut followed = FOLLOWED.lock().unwrap_or_else(|p| p.into_inner());
    let Some(f) = followed.as_mut() else {
        return;
    };
    let sig = signature(&f.state_dir);
    if sig == f.seen {
        return;
    }
    f.seen = sig;
    if let Ok(offset) = load(&f.state_dir) {
        crate::ports::set_clock_offset_ms(offset);
    }
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
