//! A power cut for the embedded backend's own files (object contents, their folders,
//! temporary files): [`CrashDisk`] does every change through the real file system and keeps a
//! model of what a power cut would leave, as POSIX promises it: a file's bytes once it was
//! synced, a name once its folder was synced. [`CrashDisk::cut`] then rewrites `blobs/` and
//! `tmp/` as the cut left them. With `native_crashsim` doing the same for SQLite's files, a test
//! can cut the power at any point and reopen.

use std::collections::HashMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use native_core::embedded::{Disk, OsDisk};

#[derive(Debug, Clone, Copy)]
enum Node {
    File(u64),
    Dir,
}

#[derive(Debug, Default)]
struct Model {
    next: u64,
    /// Names as they are now, under the tracked folders.
    live: HashMap<PathBuf, Node>,
    /// Per folder, the names a power cut keeps: as of its last sync.
    durable: HashMap<PathBuf, HashMap<OsString, Node>>,
    /// File contents as last synced; a file never synced is empty after a cut.
    synced: HashMap<u64, Vec<u8>>,
}

/// The real file system, and what a power cut would leave of `blobs/` and `tmp/` of one
/// backend folder. What exists when it is made counts as synced.
#[derive(Debug)]
pub struct CrashDisk {
    root: PathBuf,
    model: Mutex<Model>,
    cut: AtomicBool,
}

const TRACKED: [&str; 2] = ["blobs", "tmp"];

impl CrashDisk {
    /// Tracks `root/blobs` and `root/tmp` (made if missing).
    pub fn new(root: &Path) -> Self {
        let mut m = Model::default();
        for t in TRACKED {
            let dir = root.join(t);
            std::fs::create_dir_all(&dir).unwrap();
            m.baseline(&dir);
        }
        CrashDisk {
            root: root.to_path_buf(),
            model: Mutex::new(m),
            cut: AtomicBool::new(false),
        }
    }

    fn model(&self) -> std::sync::MutexGuard<'_, Model> {
        self.model.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn alive(&self) -> std::io::Result<()> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(std::io::Error::other("the power is cut"));
        }
        Ok(())
    }

    /// Cuts the power: no later change reaches the disk. Call [`CrashDisk::restore`] once the
    /// backend is closed.
    pub fn cut(&self) {
        self.cut.store(true, Ordering::SeqCst);
    }

    /// Rewrites `blobs/` and `tmp/` as the power cut left them.
    pub fn restore(&self) {
        let m = self.model();
        for t in TRACKED {
            let dir = self.root.join(t);
            std::fs::remove_dir_all(&dir).unwrap();
            m.build(&dir);
        }
    }
}

impl Model {
    fn baseline(&mut self, dir: &Path) {
        let mut names = HashMap::new();
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let path = e.path();
            let node = if e.file_type().unwrap().is_dir() {
                self.baseline(&path);
                Node::Dir
            } else {
                self.next += 1;
                self.synced.insert(self.next, std::fs::read(&path).unwrap());
                Node::File(self.next)
            };
            self.live.insert(path, node);
            names.insert(e.file_name(), node);
        }
        self.durable.insert(dir.to_path_buf(), names);
    }

    fn build(&self, dir: &Path) {
        std::fs::create_dir_all(dir).unwrap();
        let Some(names) = self.durable.get(dir) else {
            return;
        };
        for (name, node) in names {
            let path = dir.join(name);
            match node {
                Node::Dir => self.build(&path),
                Node::File(i) => {
                    std::fs::write(&path, self.synced.get(i).map_or(&[][..], |v| v)).unwrap()
                }
            }
        }
    }
}

impl Disk for CrashDisk {
    fn create_file(&self, path: &Path, data: &[u8], sync: bool) -> std::io::Result<()> {
        self.alive()?;
        OsDisk.create_file(path, data, sync)?;
        let mut m = self.model();
        m.next += 1;
        let i = m.next;
        m.live.insert(path.to_path_buf(), Node::File(i));
        if sync {
            m.synced.insert(i, data.to_vec());
        }
        Ok(())
    }

    fn rename(&self, from: &Path, to: &Path) -> std::io::Result<()> {
        self.alive()?;
        OsDisk.rename(from, to)?;
        let mut m = self.model();
        if let Some(node) = m.live.remove(from) {
            m.live.insert(to.to_path_buf(), node);
        }
        Ok(())
    }

    fn sync_dir(&self, dir: &Path) -> std::io::Result<()> {
        self.alive()?;
        OsDisk.sync_dir(dir)?;
        let mut m = self.model();
        let names = m
            .live
            .iter()
            .filter(|(p, _)| p.parent() == Some(dir))
            .map(|(p, n)| (p.file_name().unwrap().to_os_string(), *n))
            .collect();
        m.durable.insert(dir.to_path_buf(), names);
        Ok(())
    }

    fn create_dir(&self, dir: &Path) -> std::io::Result<bool> {
        self.alive()?;
        let made = OsDisk.create_dir(dir)?;
        if made {
            self.model().live.insert(dir.to_path_buf(), Node::Dir);
        }
        Ok(made)
    }

    fn remove_file(&self, path: &Path) -> std::io::Result<()> {
        self.alive()?;
        OsDisk.remove_file(path)?;
        self.model().live.remove(path);
        Ok(())
    }
}
