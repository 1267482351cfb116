//! Recovery after a process died, and `native doctor`'s checkup.
//!
//! At open, and whenever a receive finds messages held by another owner: messages whose owner
//! is dead (see `owners.rs`) are visible again at once, and its temporary files and owner file
//! are removed. The checkup also removes orphaned object contents (a put that died between
//! placing its content and committing its row, a delete that died before collecting it), runs
//! SQLite's `quick_check`, and lists objects whose content is missing or of the wrong size (with
//! `deep`, also of the wrong digest).

use std::path::Path;

use rusqlite::{params, Connection, OptionalExtension};
use sha2::{Digest, Sha256};

use super::{db_err, owners, Embedded};
use crate::ports::now_ms;
use crate::Result;

/// Temporary files without an owner in their name (made by older builds) are removed once
/// they are this old.
const STALE_TMP_MS: u128 = 3_600_000;

/// What a checkup found and did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Checkup {
    /// SQLite's `quick_check`: `["ok"]`, or the problems it lists.
    pub quick_check: Vec<String>,
    /// Messages of dead processes made visible again.
    pub reclaimed: usize,
    /// Object contents that no object referred to, removed.
    pub orphans: usize,
    /// Their bytes.
    pub orphan_bytes: u64,
    /// Temporary files of dead processes, removed.
    pub temp_files: usize,
    /// Objects whose content is missing or damaged: `bucket/key: why`.
    pub damaged: Vec<String>,
}

impl Checkup {
    /// Whether the database and every object are whole.
    pub fn healthy(&self) -> bool {
        self.quick_check == ["ok"] && self.damaged.is_empty()
    }
}

/// Makes the messages held by `owner` visible now (it is dead), and takes it off the
/// holders; how many messages.
///
/// The messages are found by a scan (no index names a message's owner, so that a lease and a
/// delete write no page for one): once per dead process that ever received, not per message.
pub(crate) fn reclaim(conn: &Connection, owner: &str) -> Result<usize> {
    let n = super::execute(
        conn,
        "UPDATE messages SET owner = NULL, receipt = NULL, visible_at = min(visible_at, ?2)
         WHERE owner = ?1",
        params![owner, now_ms()],
    )
    .map_err(db_err)?;
    super::execute(conn, "DELETE FROM holders WHERE owner = ?1", [owner]).map_err(db_err)?;
    Ok(n)
}

/// Notes that `owner` holds messages: a receive that leased some calls it, in its transaction.
/// Once listed, it stays listed until it is dead and reclaimed, so this writes nothing again.
pub(crate) fn hold(conn: &Connection, owner: &str) -> Result<()> {
    super::execute(
        conn,
        "INSERT OR IGNORE INTO holders (owner) VALUES (?1)",
        [owner],
    )
    .map_err(db_err)?;
    Ok(())
}

/// The owners other than `me` that may hold messages: those that received some and were not
/// reclaimed since.
pub(crate) fn holders(conn: &Connection, me: &str) -> Result<Vec<String>> {
    let mut stmt = conn
        .prepare_cached("SELECT owner FROM holders WHERE owner != ?1")
        .map_err(db_err)?;
    let rows = stmt
        .query_map([me], |r| r.get::<_, String>(0))
        .map_err(db_err)?;
    rows.collect::<Result<Vec<_>, _>>().map_err(db_err)
}

/// Recovery at open: messages of dead owners visible again, their files removed. Returns how
/// many messages and temporary files.
pub(crate) fn recover(conn: &Connection, root: &Path, me: &str) -> Result<(usize, usize)> {
    let mut reclaimed = 0;
    for h in holders(conn, me)? {
        if !owners::alive(root, &h) {
            reclaimed += reclaim(conn, &h)?;
        }
    }
    for o in owners::listed(root) {
        if o != me && !owners::alive(root, &o) {
            owners::forget(root, &o);
        }
    }
    Ok((reclaimed, sweep_tmp(root, me)))
}

/// Removes the temporary files of dead owners (named `<owner>.<token>`); how many.
fn sweep_tmp(root: &Path, me: &str) -> usize {
    let Ok(dir) = std::fs::read_dir(root.join("tmp")) else {
        return 0;
    };
    let mut removed = 0;
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let dead = match name.split_once('.') {
            Some((owner, _)) => owner != me && !owners::alive(root, owner),
            None => e
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age.as_millis() > STALE_TMP_MS),
        };
        if dead && std::fs::remove_file(e.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

impl Embedded {
    /// `native doctor`: recovers what dead processes left, removes orphaned object contents,
    /// runs SQLite's `quick_check` and checks every object's content (its size; with `deep`
    /// also its digest).
    pub async fn checkup(&self, deep: bool) -> Result<Checkup> {
        let root = self.inner.root.clone();
        let me = self.inner.owner.id.clone();
        let disk = self.inner.disk.clone();
        let (reclaimed, temp_files, orphans, orphan_bytes) = self
            .write(move |c| {
                let (reclaimed, temp_files) = recover(c, &root, &me)?;
                // In the write transaction: no put is between placing a content and
                // committing the row that names it.
                let mut orphans = 0;
                let mut bytes = 0;
                for blob in blob_files(&root) {
                    let name = blob
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let used: Option<i64> = c
                        .query_row(
                            "SELECT 1 FROM objects WHERE blob = ?1 LIMIT 1",
                            [&name],
                            |r| r.get(0),
                        )
                        .optional()
                        .map_err(db_err)?;
                    if used.is_none() {
                        let len = std::fs::metadata(&blob).map(|m| m.len()).unwrap_or(0);
                        if disk.remove_file(&blob).is_ok() {
                            orphans += 1;
                            bytes += len;
                        }
                    }
                }
                Ok((reclaimed, temp_files, orphans, bytes))
            })
            .await?;
        let quick_check = self.read(|c| {
            let mut stmt = c.prepare("PRAGMA quick_check").map_err(db_err)?;
            let rows = stmt
                .query_map([], |r| r.get::<_, String>(0))
                .map_err(db_err)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(db_err)
        })?;
        let objects: Vec<(String, String, u64, String)> = self.read(|c| {
            let mut stmt = c
                .prepare("SELECT bucket, key, size, blob FROM objects ORDER BY bucket, key")
                .map_err(db_err)?;
            let rows = stmt
                .query_map([], |r| {
                    Ok((r.get(0)?, r.get(1)?, r.get::<_, i64>(2)? as u64, r.get(3)?))
                })
                .map_err(db_err)?;
            rows.collect::<Result<Vec<_>, _>>().map_err(db_err)
        })?;
        let mut damaged = Vec::new();
        for (bucket, key, size, blob) in objects {
            let path = self.blob_path(&blob);
            let why = match std::fs::metadata(&path) {
                Err(e) => Some(format!(
                    "its content {} cannot be read ({e})",
                    path.display()
                )),
                Ok(m) if m.len() != size => Some(format!(
                    "its content {} has {} bytes, not {size}",
                    path.display(),
                    m.len()
                )),
                Ok(_) if deep => match std::fs::read(&path) {
                    Ok(data) if hex::encode(Sha256::digest(&data)) == blob => None,
                    Ok(_) => Some(format!(
                        "its content {} does not have its sha256",
                        path.display()
                    )),
                    Err(e) => Some(format!(
                        "its content {} cannot be read ({e})",
                        path.display()
                    )),
                },
                Ok(_) => None,
            };
            if let Some(why) = why {
                damaged.push(format!("{bucket}/{key}: {why}"));
            }
        }
        Ok(Checkup {
            quick_check,
            reclaimed,
            orphans,
            orphan_bytes,
            temp_files,
            damaged,
        })
    }
}

/// Every file under `root/blobs/<2 hex>/`.
fn blob_files(root: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let Ok(dirs) = std::fs::read_dir(root.join("blobs")) else {
        return out;
    };
    for d in dirs.flatten() {
        if let Ok(files) = std::fs::read_dir(d.path()) {
            out.extend(files.flatten().map(|f| f.path()));
        }
    }
    out
}
