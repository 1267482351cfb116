//! Whether a tenant's folders changed since it was read, for one system call a load: an
//! inotify instance on Linux watching the tenant's folder, `scripts/` and each folder of its
//! modules. The kernel queues a change's event before the write that made it returns, so the
//! next load after an edit sees it (a watcher thread would see it later). Elsewhere, or when
//! the system has no inotify instance left, [`Watch::new`] gives none and the caller compares
//! every file's time, size and inode instead.
#![allow(unsafe_code)]

use std::path::Path;

/// An inotify instance over a tenant's folders.
#[derive(Debug)]
pub struct Watch {
    #[cfg(target_os = "linux")]
    fd: std::os::fd::OwnedFd,
    /// Set once a change was seen: every later look says so too (the event is read once, and
    /// a load running beside the one that read it must not take the old tenant).
    seen: std::sync::atomic::AtomicBool,
}

impl Watch {
    /// A watch over `folders`, or `None` when one cannot be made (not Linux, no instance or
    /// watch left, a folder gone).
    pub fn new<'a>(folders: impl IntoIterator<Item = &'a Path>) -> Option<Watch> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::{FromRawFd, OwnedFd};
            use std::os::unix::ffi::OsStrExt;
            // SAFETY: plain system calls; the descriptor is owned from here on, and each path
            // is a NUL-terminated copy that outlives its call.
            let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
            if fd < 0 {
                return None;
            }
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            let mask = libc::IN_MODIFY
                | libc::IN_ATTRIB
                | libc::IN_CLOSE_WRITE
                | libc::IN_CREATE
                | libc::IN_DELETE
                | libc::IN_MOVED_FROM
                | libc::IN_MOVED_TO
                | libc::IN_DELETE_SELF
                | libc::IN_MOVE_SELF;
            for folder in folders {
                let path = std::ffi::CString::new(folder.as_os_str().as_bytes()).ok()?;
                let wd = unsafe {
                    libc::inotify_add_watch(
                        std::os::fd::AsRawFd::as_raw_fd(&fd),
                        path.as_ptr(),
                        mask,
                    )
                };
                if wd < 0 {
                    return None;
                }
            }
            Some(Watch {
                fd,
                seen: Default::default(),
            })
        }
        #[cfg(not(target_os = "linux"))]
        {
            let _ = folders.into_iter().count();
            None
        }
    }

    /// Whether anything happened in the folders since the watch was made (or the events could
    /// not be read, which counts as a change).
    pub fn changed(&self) -> bool {
        use std::sync::atomic::Ordering;
        if self.seen.load(Ordering::Acquire) {
            return true;
        }
        #[cfg(target_os = "linux")]
        {
            let mut buf = [0u8; 1024];
            // SAFETY: reads into a buffer of its stated length from a descriptor this owns.
            let n = unsafe {
                libc::read(
                    std::os::fd::AsRawFd::as_raw_fd(&self.fd),
                    buf.as_mut_ptr().cast(),
                    buf.len(),
                )
            };
            let changed =
                n != -1 || std::io::Error::last_os_error().kind() != std::io::ErrorKind::WouldBlock;
            if changed {
                self.seen.store(true, Ordering::Release);
            }
            changed
        }
        #[cfg(not(target_os = "linux"))]
        true
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn an_edit_is_seen_by_the_next_look_and_nothing_else_is_a_change() {
        // GIVEN a watch over a folder with a file
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.luau");
        std::fs::write(&file, "return 1").unwrap();
        let w = Watch::new([dir.path()]).unwrap();
        // WHEN nothing happens, or the file is only read THEN there is no change
        assert!(!w.changed());
        let _ = std::fs::read(&file).unwrap();
        assert!(!w.changed());
        // WHEN the file is written THEN the very next look sees it
        std::fs::write(&file, "return 2").unwrap();
        assert!(w.changed());
        // AND a new watch made after it sees nothing; a new file is a change
        let w = Watch::new([dir.path()]).unwrap();
        assert!(!w.changed());
        std::fs::write(dir.path().join("b.luau"), "").unwrap();
        assert!(w.changed());
    }
}
