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

/// Makes the crash-simulating VFS SQLite's default for this process (idempotent, also from
/// tests running at once: the C side's own check of whether it is registered is not atomic,
/// and a second registration racing the first could find crashsim already the default and wrap
/// itself, recursing until the stack overflows).
pub fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: registration takes no pointer from Rust, and runs once per process.
        let rc = unsafe { crashsim_register(1) };
        assert_eq!(rc, 0, "cannot register the crashsim VFS: SQLite error {rc}");
    });
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

/// A file-system fault for the files under one folder of a child process (`faultfs.c`, loaded
/// with LD_PRELOAD): a full disk or a read-only mount without root and without a tmpfs. The
/// fault is read from a control file at every call, so it can change while the process runs.
pub mod faultfs {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The fault layer's shared object, built with this crate.
    pub const SHARED_OBJECT: &str = env!("NATIVE_FAULTFS_SO");

    /// The fault of the files under a folder, for the processes started with [`Faults::apply`].
    #[derive(Debug)]
    pub struct Faults {
        dir: PathBuf,
        ctl: PathBuf,
        _ctl_dir: tempfile::TempDir,
    }

    impl Faults {
        /// No fault yet for the files under `dir` (an absolute path, as the child names it).
        pub fn new(dir: &Path) -> Faults {
            let ctl_dir = tempfile::tempdir().expect("a temporary folder");
            let f = Faults {
                dir: dir.to_path_buf(),
                ctl: ctl_dir.path().join("fault"),
                _ctl_dir: ctl_dir,
            };
            f.set("none");
            f
        }

        /// Starts `cmd` under the fault layer.
        pub fn apply<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
            cmd.env("LD_PRELOAD", SHARED_OBJECT)
                .env("NATIVE_FAULTFS_DIR", &self.dir)
                .env("NATIVE_FAULTFS_CTL", &self.ctl)
        }

        /// The disk is full: writes, extensions and new files under the folder fail with ENOSPC.
        pub fn full(&self) {
            self.set("full");
        }

        /// The folder is read-only: opens for writing, new names and writes fail with EROFS.
        pub fn read_only(&self) {
            self.set("ro");
        }

        /// No fault.
        pub fn clear(&self) {
            self.set("none");
        }

        fn set(&self, what: &str) {
            std::fs::write(&self.ctl, what).expect("the fault's control file is writable");
        }
    }
}
