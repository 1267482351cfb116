//! The project's generation counter ([`crate::ports::Generation`]): eight bytes in
//! `.native/generation`, mapped shared into every process of the project, so that a revocation
//! made by `native keys revoke` is seen by a running `native serve` at its very next request,
//! and reading it costs no system call (a request's check of its API key is one load).
//!
//! The file's contents matter only while processes share it: after a restart every cache that
//! the counter guards is empty, so a power cut that loses the last bumps loses nothing. The file
//! is written through (eight zero bytes, not a sparse `set_len`) before it is mapped, so that a
//! write to the mapping can never need a disk block the disk no longer has (a `SIGBUS`). Where
//! the file cannot be made or mapped (a read-only project, a full disk), there is no counter and
//! the callers go without their cache.

#![allow(unsafe_code)]

use std::fs::OpenOptions;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The file, inside the project's `.native/`.
pub const FILE: &str = "generation";

/// The mapped counter.
#[derive(Debug)]
pub struct SharedCounter {
    /// The start of the mapping: eight bytes, aligned to a page, so an `AtomicU64`.
    at: std::ptr::NonNull<AtomicU64>,
}

// SAFETY: the mapping is only ever accessed through the `AtomicU64` it holds, which is Sync;
// it lives until `drop`, which no other thread can race because it takes `self` by value.
unsafe impl Send for SharedCounter {}
// SAFETY: as above.
unsafe impl Sync for SharedCounter {}

impl SharedCounter {
    /// The counter of the project whose state folder is `root`, or why it cannot be had.
    pub fn open(root: &Path) -> std::io::Result<SharedCounter> {
        let path = root.join(FILE);
        if !path.exists() {
            // Made whole beside it and linked into place, which fails if another process got
            // there first: a counter that exists is never written over with zeros.
            let tmp = root.join(format!("{FILE}.tmp{}", std::process::id()));
            let made = std::fs::File::create(&tmp)
                .and_then(|mut f| f.write_all(&[0; 8]).and_then(|()| f.sync_data()))
                .and_then(|()| match std::fs::hard_link(&tmp, &path) {
                    Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(e),
                    _ => Ok(()),
                });
            let _ = std::fs::remove_file(&tmp);
            made?;
        }
        let file = OpenOptions::new().read(true).write(true).open(&path)?;
        let len = file.metadata()?.len();
        if len != 8 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} is {len} bytes, not 8: not a generation counter (delete it while no native process of the project runs)",
                    path.display()
                ),
            ));
        }
        // SAFETY: a fresh shared mapping of the file's eight bytes (its length was checked
        // above, and nothing truncates it); the kernel picks the address. The mapping outlives the file handle, as mmap
        // allows.
        let at = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                8,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if at == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let at = std::ptr::NonNull::new(at.cast::<AtomicU64>())
            .ok_or_else(|| std::io::Error::other("mmap returned a null mapping"))?;
        Ok(SharedCounter { at })
    }

    fn atomic(&self) -> &AtomicU64 {
        // SAFETY: the mapping is eight bytes, page aligned, readable and writable, and stays
        // mapped while `self` lives; other processes touch it only atomically too.
        unsafe { self.at.as_ref() }
    }
}

impl crate::ports::Generation for SharedCounter {
    fn current(&self) -> u64 {
        self.atomic().load(Ordering::Acquire)
    }

    fn bump(&self) {
        self.atomic().fetch_add(1, Ordering::AcqRel);
    }
}

impl Drop for SharedCounter {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`, unmapped once.
        unsafe {
            libc::munmap(self.at.as_ptr().cast(), 8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::Generation;

    #[test]
    fn two_mappings_of_one_project_see_each_others_bumps_at_once() {
        // GIVEN the counter mapped twice, as two processes of one project map it
        let dir = tempfile::tempdir().unwrap();
        let a = SharedCounter::open(dir.path()).unwrap();
        let b = SharedCounter::open(dir.path()).unwrap();
        assert_eq!((a.current(), b.current()), (0, 0));
        // WHEN one bumps THEN the other sees it with no call in between
        a.bump();
        assert_eq!(b.current(), 1);
        b.bump();
        assert_eq!(a.current(), 2);
        // AND a later opening (a process started afterwards) sees the count, not zeros
        drop(a);
        let c = SharedCounter::open(dir.path()).unwrap();
        assert_eq!(c.current(), 2);
    }

    #[test]
    fn a_file_of_another_length_is_no_counter_and_says_so() {
        // GIVEN .native/generation holding something else than eight bytes
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), b"garbage!!").unwrap();
        // THEN it is not mapped (the store goes without the cache) and the error names it
        let e = SharedCounter::open(dir.path()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidData);
        assert!(e.to_string().contains("is 9 bytes, not 8"), "{e}");
        // AND it was not written over
        assert_eq!(std::fs::read(dir.path().join(FILE)).unwrap(), b"garbage!!");
    }

    #[test]
    fn a_missing_folder_gives_no_counter_and_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("not-there");
        let e = SharedCounter::open(&missing).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
    }
}
