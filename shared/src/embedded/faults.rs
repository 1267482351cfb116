//! Storage errors of the embedded backend that name the file, the cause and what to do: a
//! full disk, a read-only folder, a damaged or truncated database, lost state. Everything
//! SQLite or the file system reports goes through here on its way out of the backend.

use std::path::Path;

use rusqlite::ErrorCode;

use crate::error::StorageFault;
use crate::Error;

/// What every no-space message says, in the same words for a file and the database (the kind
/// travels as [`StorageFault::NoSpace`], never read back from these words).
const DISK_FULL: &str = "no space left on the device";

fn storage(fault: StorageFault, path: &Path, message: String) -> Error {
    Error::Storage {
        fault,
        path: path.display().to_string(),
        message,
    }
}

/// An I/O error while doing `what` (e.g. `cannot write object b/k`) to `path`.
pub(crate) fn io(what: &str, path: &Path, e: &std::io::Error) -> Error {
    let shown = path.display();
    if e.raw_os_error() == Some(28) || e.kind() == std::io::ErrorKind::StorageFull {
        return storage(
            StorageFault::NoSpace,
            path,
            format!("{what}: {DISK_FULL} of {shown} ({e}); free space there, then retry"),
        );
    }
    if matches!(
        e.kind(),
        std::io::ErrorKind::ReadOnlyFilesystem | std::io::ErrorKind::PermissionDenied
    ) {
        return storage(
            StorageFault::ReadOnly,
            path,
            format!("{what}: {shown} cannot be written ({e}); native must write to its .native/ folder: make it writable by this user (or remount its file system read-write)"),
        );
    }
    storage(StorageFault::Io, path, format!("{what}: {shown}: {e}"))
}

/// An error of SQLite on the database file `db`.
pub(crate) fn db(db: &Path, e: &rusqlite::Error) -> Error {
    let shown = db.display();
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => storage(
            StorageFault::NoSpace,
            db,
            format!("cannot write the database {shown}: {DISK_FULL} ({e}); free space there, then retry"),
        ),
        Some(ErrorCode::ReadOnly) | Some(ErrorCode::PermissionDenied) | Some(ErrorCode::CannotOpen) => {
            storage(
                StorageFault::ReadOnly,
                db,
                format!("cannot write the database {shown} ({e}); native must write to its .native/ folder and the files in it: make them writable by this user (or remount the file system read-write)"),
            )
        }
        Some(ErrorCode::DatabaseCorrupt) | Some(ErrorCode::NotADatabase) => storage(
            StorageFault::Corrupt,
            db,
            format!("the database {shown} is damaged or truncated ({e}); stop every native process of this project, then restore .native/ from a backup; `native doctor` tells what it can still read"),
        ),
        _ => storage(
            StorageFault::Io,
            db,
            format!("database error on {shown}: {e}"),
        ),
    }
}

/// Maps an error that a database call returned: a plain SQLite error (wrapped by
/// [`super::db_err`]) gets the file's name and its kind; other errors pass.
pub(crate) fn name_db(db_path: &Path, e: Error) -> Error {
    match e {
        Error::Backend {
            backend: "embedded",
            source: Some(source),
            message,
        } => match source.downcast::<rusqlite::Error>() {
            Ok(sqlite) => db(db_path, &sqlite),
            Err(source) => Error::Backend {
                backend: "embedded",
                message,
                source: Some(source),
            },
        },
        other => other,
    }
}
