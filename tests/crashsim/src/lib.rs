//! Test-only: a power cut for SQLite. `crashsim.c` is a VFS over SQLite's default one that
//! keeps, beside each file, what a power cut would leave of it (the bytes of its last sync,
//! and whether its name was synced into its folder); [`freeze`] cuts the power for the files
//! under a folder and [`restore`] rewrites them as the cut left them. Registered as the default
//! VFS, it is under every connection of the process: the code under test is unchanged.
#![allow(unsafe_code)] // FFI to the C VFS, four calls.

use std::ffi::CString;
use std::path::Path;

extern "C" {
    fn crashsim_register(make_default: i32) -> i32;
    fn crashsim_freeze(prefix: *const std::ffi::c_char) -> i32;
    fn crashsim_restore(prefix: *const std::ffi::c_char) -> i32;
    fn crashsim_open_count(prefix: *const std::ffi::c_char) -> i32;
}

// libsqlite3-sys links SQLite, which the C VFS calls.
use libsqlite3_sys as _;

fn c_path(dir: &Path) -> CString {
    CString::new(dir.to_str().expect("a UTF-8 path")).expect("a path without NUL")
}

/// Makes the crash-simulating VFS SQLite's default for this process (idempotent).
pub fn install() {
    // SAFETY: registration takes no pointer from Rust; it is idempotent and thread-safe in
    // SQLite (sqlite3_vfs_register holds SQLite's own mutex).
    let rc = unsafe { crashsim_register(1) };
    assert_eq!(rc, 0, "cannot register the crashsim VFS: SQLite error {rc}");
}

/// The power goes for every SQLite file under `dir`: what is written, synced or deleted after
/// this reaches no disk. Returns how many files are affected.
pub fn freeze(dir: &Path) -> usize {
    let p = c_path(dir);
    // SAFETY: `p` is a valid NUL-terminated string that outlives the call.
    unsafe { crashsim_freeze(p.as_ptr()) as usize }
}

/// Once the frozen files are closed: rewrites each as the power cut left it (its last synced
/// bytes, or nothing when its name was never synced) and forgets it. Returns how many.
///
/// Panics while a connection still has a file under `dir` open: the power cut of a real
/// process ends every connection at once, so rewriting files that a connection of the old one
/// still holds would let it write into what the cut left (a checkpoint, or the WAL's delete at
/// its close). Close every handle first (see [`wait_closed`]).
pub fn restore(dir: &Path) -> usize {
    let p = c_path(dir);
    // SAFETY: as in `freeze`.
    let n = unsafe { crashsim_restore(p.as_ptr()) };
    assert!(
        n != -2,
        "crashsim: a connection still has a file under {} open; the process that lost power is not gone",
        dir.display()
    );
    assert!(
        n >= 0,
        "crashsim could not rewrite a file under {}",
        dir.display()
    );
    n as usize
}

/// Whether a connection has a file under `dir` open.
pub fn any_open(dir: &Path) -> bool {
    let p = c_path(dir);
    // SAFETY: as in `freeze`.
    unsafe { crashsim_open_count(p.as_ptr()) > 0 }
}

/// Waits up to `limit` for every connection's files under `dir` to be closed; whether they
/// were.
pub fn wait_closed(dir: &Path, limit: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    while any_open(dir) {
        if start.elapsed() > limit {
            return false;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    true
}
