//! Who holds a received message, and whether that holder still lives. Each open backend is an
//! owner: a file `owners/<id>` that it keeps locked (an exclusive `flock`) for as long as it is
//! open. The kernel drops the lock when the process ends, `kill -9` and a crash included, so
//! another process can tell at once that the messages that owner received are nobody's any
//! more and make them visible again, instead of waiting out their lease.

use std::fs::File;
use std::path::{Path, PathBuf};

use super::faults;
use crate::Result;

/// The folder of owner files under the backend's root.
pub(crate) const DIR: &str = "owners";

/// An owner file still being made (`.<id>.new`) is left alone for this long.
const UNBORN_MS: u128 = 60_000;

/// This backend's identity, held for as long as it is open.
#[derive(Debug)]
pub(crate) struct Owner {
    /// The owner's id: what `messages.owner` and temporary files' names carry.
    pub(crate) id: String,
    path: PathBuf,
    // Locked while open; closing it (the drop, or the process's end) releases the lock.
    _lock: File,
}

impl Owner {
    /// Makes and locks a new owner file in `root/owners`.
    pub(crate) fn claim(root: &Path) -> Result<Owner> {
        let dir = root.join(DIR);
        std::fs::create_dir_all(&dir)
            .map_err(|e| faults::io("cannot create the owners folder", &dir, &e))?;
        let id = format!("{:016x}", rand::random::<u64>());
        let path = dir.join(&id);
        // Locked under a name no one looks at, then renamed into place (the lock stays with
        // the file): no other process ever sees this owner's file unlocked and takes it for
        // dead.
        let fresh = dir.join(format!(".{id}.new"));
        let lock = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&fresh)
            .map_err(|e| faults::io("cannot create an owner file", &fresh, &e))?;
        lock.try_lock().map_err(|e| {
            let e = match e {
                std::fs::TryLockError::Error(e) => e,
                std::fs::TryLockError::WouldBlock => std::io::ErrorKind::WouldBlock.into(),
            };
            faults::io("cannot lock an owner file", &fresh, &e)
        })?;
        std::fs::rename(&fresh, &path)
            .map_err(|e| faults::io("cannot name an owner file", &path, &e))?;
        Ok(Owner {
            id,
            path,
            _lock: lock,
        })
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        // Removed while still locked: no other process takes a live owner's file for dead.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether the owner `id` of the backend in `root` is alive: its file exists and is locked.
/// A file that cannot be looked at counts as alive (its messages then wait for their lease).
pub(crate) fn alive(root: &Path, id: &str) -> bool {
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let f = match File::open(root.join(DIR).join(id)) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return false,
        Err(_) => return true,
    };
    match f.try_lock_shared() {
        Ok(()) => false,
        Err(std::fs::TryLockError::WouldBlock) => true,
        Err(std::fs::TryLockError::Error(_)) => true,
    }
}

/// Removes the owner file of `id` (dead: its messages were made visible again).
pub(crate) fn forget(root: &Path, id: &str) {
    if id.bytes().all(|b| b.is_ascii_hexdigit()) && !id.is_empty() {
        let _ = std::fs::remove_file(root.join(DIR).join(id));
    }
}

/// The owners whose files are in `root/owners`, alive or not. Files of owners that died
/// while being made (`.<id>.new`, unlocked, and older than [`UNBORN_MS`]) are removed on the
/// way.
pub(crate) fn listed(root: &Path) -> Vec<String> {
    let names: Vec<String> = std::fs::read_dir(root.join(DIR))
        .map(|d| {
            d.filter_map(|e| e.ok()?.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    let mut out = Vec::new();
    for n in names {
        if n.starts_with('.') {
            let path = root.join(DIR).join(&n);
            // A fresh one is unlocked for a moment between its creation and its lock, while
            // another process opens the project: it is not dead, only young.
            let young = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_none_or(|age| age.as_millis() < UNBORN_MS);
            if !young && File::open(&path).is_ok_and(|f| f.try_lock_shared().is_ok()) {
                let _ = std::fs::remove_file(path);
            }
        } else {
            out.push(n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_alive_while_its_handle_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let o = Owner::claim(dir.path()).unwrap();
        assert!(alive(dir.path(), &o.id));
        let id = o.id.clone();
        drop(o);
        assert!(!alive(dir.path(), &id));
        assert!(!alive(dir.path(), "../x"));
    }

    #[test]
    fn a_file_nobody_locks_is_a_dead_owner() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(DIR)).unwrap();
        std::fs::write(dir.path().join(DIR).join("00ff"), "").unwrap();
        assert!(!alive(dir.path(), "00ff"));
        forget(dir.path(), "00ff");
        assert!(listed(dir.path()).is_empty());
    }
}
