//! The file operations of the embedded backend that change what is on disk (object contents,
//! their folders, temporary files), behind a trait so that a test can stand in a layer that
//! keeps only what was synced and so simulate a power cut (`tests/tests/power_loss.rs`).
//! Reads go straight to the files: after a simulated cut the test rewrites them as they would
//! be.
//!
//! The order that makes an object durable (see `objects.rs`): its content is written to a
//! temporary file and synced ([`Disk::create_file`] with `sync`), renamed to its
//! content-addressed name, and the folder that now names it is synced ([`Disk::sync_dir`])
//! before the database row that refers to it commits.

use std::io::Write;
use std::path::Path;

/// What the embedded backend does to its folder besides SQLite.
pub trait Disk: std::fmt::Debug + Send + Sync {
    /// Creates `path`, which must not exist, with `data`; with `sync`, its content is on
    /// stable storage when this returns (its name is not: see [`Disk::sync_dir`]).
    fn create_file(&self, path: &Path, data: &[u8], sync: bool) -> std::io::Result<()>;
    /// Renames `from` to `to`, replacing `to`.
    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()>;
    /// Puts the names in `dir` (created, renamed, removed) on stable storage.
    fn sync_dir(&self, dir: &Path) -> std::io::Result<()>;
    /// Creates the folder `dir` (its parent exists); `Ok(false)` when it was there already.
    fn create_dir(&self, dir: &Path) -> std::io::Result<bool>;
    /// Removes the file `path`.
    fn remove_file(&self, path: &Path) -> std::io::Result<()>;
}

/// The real file system.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsDisk;

impl Disk for OsDisk {
    fn create_file(&self, path: &Path, data: &[u8], sync: bool) -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)?;
        f.write_all(data)?;
        if sync {
            f.sync_all()?;
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        std::fs::rename(from, to)
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        // On Linux a folder opened read-only can be fsynced; that syncs its entries.
        std::fs::File::open(dir)?.sync_all()
    }

    fn create_dir(&self, dir: &Path) -> std::io::Result<bool> {
        match std::fs::create_dir(dir) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        std::fs::remove_file(path)
    }
}
