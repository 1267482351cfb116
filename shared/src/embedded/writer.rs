//! Group commit: one thread owns the writing SQLite connection (`synchronous = FULL`, so a
//! commit returns once the WAL is on stable storage) and runs every write that arrived while
//! the previous commit was syncing in one transaction, each in a savepoint of its own, then
//! commits once. A write is answered only after the commit that holds it: an acknowledged
//! write survives a power cut, and N concurrent writes cost one sync instead of N.
//!
//! Deferred writes (made inside [`crate::ports::durability::deferring`], a script's) are
//! answered at once: a group of only those commits under `synchronous = NORMAL`, visible to
//! every later read but not synced. A later commit under `FULL` syncs the WAL, which holds
//! every frame before it (SQLite appends to the WAL, and recovery keeps every transaction up to
//! the last whole commit), so it makes them durable too. [`Writer::flush`] asks for such a
//! commit when there were deferred ones since the last sync (writing one row of `flushes`, so
//! that the commit has a frame to sync), and returns at once when there were none.
//!
//! Best-effort writes (made inside [`crate::ports::durability::best_effort`]: a key's last use,
//! a queue message's lease and delete) commit like deferred ones but owe no flush: no run waits
//! for a sync for them.
//!
//! A script's write (made where [`crate::blocking::may_block`]: its thread waits for the
//! answer anyway) that finds no group committing commits itself, on its own thread, as a group
//! of one: the same transaction the writing thread would have made of it, without the two
//! thread wake-ups of handing it over and back. The connection is behind a mutex for that;
//! whoever holds it commits. So does a best-effort write from async code (a queue's lease and
//! delete): its commit never syncs, so it costs the tokio worker the WAL write alone. To keep
//! it so, the WAL is never checkpointed by such a commit (SQLite's automatic checkpoint, which
//! syncs the database, is off): a commit that leaves the WAL past [`CHECKPOINT_PAGES`] has the
//! writing thread (or a script's thread, which may block) checkpoint it, as SQLite would have;
//! and a write that finds another connection's transaction in the way goes to the thread rather
//! than wait for it on a worker.
//!
//! A write that fails rolls back its own savepoint only; the others of its group commit. A
//! failed commit (a full disk, say) fails every write of the group with its cause. Folders
//! that a write renamed a file into are synced once per group, before the commit (see
//! `disk.rs`).
//!
//! An object's content is removed only once the row that stopped naming it is synced: an
//! overwrite or a delete notes the content it let go of in `collect`, in its own transaction,
//! and after a synced commit the writer removes those that no object names (issue 50: a
//! deferred overwrite that unlinked the old content at once lost it to a power cut before the
//! run's flush, once a later put had synced its folder). The check and the removal are made in
//! a transaction of their own, only if no other connection committed since the synced commit
//! (`PRAGMA data_version`): what they read is then on stable storage. Notes that a cut left
//! are collected after the first synced commit of the next open.

use std::cell::Cell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

use super::disk::Disk;
use super::faults;
use super::BUSY_TIMEOUT;
use crate::{Error, Result};

/// At most this many writes share a commit: a group's writes wait for the longest of them.
const MAX_GROUP: usize = 256;

/// A commit that leaves the WAL at least this many pages long has it checkpointed: SQLite's
/// automatic checkpoint's default, which the writing connection turns off.
const CHECKPOINT_PAGES: i32 = 1000;

thread_local! {
    /// The pages in the WAL after the last commit on this thread, as SQLite's WAL hook tells it
    /// (the hook runs inside `COMMIT`, on the committing thread).
    static WAL_PAGES: Cell<i32> = const { Cell::new(0) };
}

/// The writing connection's WAL hook: notes the WAL's length for the committing thread.
/// Registering it turns SQLite's automatic checkpoint off.
fn note_wal(_: &rusqlite::hooks::Wal, pages: std::ffi::c_int) -> rusqlite::Result<()> {
    WAL_PAGES.with(|p| p.set(pages));
    Ok(())
}

/// What a write may ask of its group besides SQL.
#[derive(Default)]
pub(crate) struct Group {
    /// Folders to sync before the commit: they name files that rows of the group refer to.
    sync_dirs: BTreeSet<PathBuf>,
    /// A write noted contents to collect (`collect` rows).
    collect: bool,
}

impl Group {
    /// Syncs `dir` before this group commits.
    pub(crate) fn sync_before_commit(&mut self, dir: &Path) {
        self.sync_dirs.insert(dir.to_path_buf());
    }

    /// Notes in `conn`'s transaction that no object may name the content `blob` any more:
    /// it is removed after a synced commit, if none does then.
    pub(crate) fn collect_after_sync(&mut self, conn: &Connection, blob: &str) -> Result<()> {
        conn.prepare_cached("INSERT OR IGNORE INTO collect (blob) VALUES (?1)")
            .and_then(|mut s| s.execute([blob]))
            .map_err(super::db_err)?;
        self.collect = true;
        Ok(())
    }
}

/// Contents collected at most in one go, after a synced commit; the rest after the next one.
const COLLECT_AT_ONCE: usize = 64;

/// A write waiting for its group.
trait Job: Send {
    /// When it is on stable storage.
    fn durability(&self) -> Durability;
    /// Runs the write in a savepoint; keeps its result.
    fn run(&mut self, conn: &Connection, group: &mut Group, db: &Path);
    /// Answers the caller once the group committed (`Ok`) or failed to (`Err`).
    fn finish(self: Box<Self>, commit: std::result::Result<(), &Error>);
}

/// When a write is on stable storage.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// Before it is answered.
    Durable,
    /// By the next flush, which the writer owes it ([`Writer::flush`]).
    Deferred,
    /// With the next synced commit, whenever that comes; no flush is owed it.
    BestEffort,
}

struct Typed<T, F> {
    durability: Durability,
    f: Option<F>,
    out: Option<Result<T>>,
    reply: tokio::sync::oneshot::Sender<Result<T>>,
}

impl<T, F> Job for Typed<T, F>
where
    T: Send,
    F: FnOnce(&Connection, &mut Group) -> Result<T> + Send,
{
    fn durability(&self) -> Durability {
        self.durability
    }

    fn run(&mut self, conn: &Connection, group: &mut Group, db: &Path) {
        let Some(f) = self.f.take() else { return };
        self.out = Some(savepoint(conn, db, |c| f(c, group)));
    }

    fn finish(self: Box<Self>, commit: std::result::Result<(), &Error>) {
        let out = match (self.out, commit) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(v)), Ok(())) => Ok(v),
            (_, Err(e)) => Err(e.again()),
            (None, Ok(())) => Err(Error::Backend {
                backend: "embedded",
                message: "a write was committed without being run".into(),
                source: None,
            }),
        };
        // The caller may have gone (its request was dropped): the write stands anyway.
        let _ = self.reply.send(out);
    }
}

fn savepoint<T>(
    conn: &Connection,
    db: &Path,
    f: impl FnOnce(&Connection) -> Result<T>,
) -> Result<T> {
    exec(conn, "SAVEPOINT w").map_err(|e| faults::db(db, &e))?;
    match f(conn) {
        Ok(v) => {
            exec(conn, "RELEASE w").map_err(|e| faults::db(db, &e))?;
            Ok(v)
        }
        Err(e) => {
            // The transaction may be gone already (SQLite rolls back on some I/O errors); the
            // caller checks that.
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK TO w; RELEASE w");
            }
            Err(faults::name_db(db, e))
        }
    }
}

/// The writing thread's handle. Dropping it lets the thread finish the writes sent so far,
/// close the connection and end; the drop waits for that.
pub(crate) struct Writer {
    jobs: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The writing connection, held by whoever commits a group: the thread, or a caller that
    /// may block and found it free (see [`Writer::write`]).
    committer: Arc<Mutex<Committer>>,
    /// A deferred write was committed since the last synced commit: set by the writing thread
    /// before it answers that write, cleared after a synced commit.
    unsynced: Arc<AtomicBool>,
    /// Synced commits so far.
    synced: Arc<AtomicU64>,
}

impl Writer {
    /// Starts the thread over `conn`.
    pub(crate) fn start(conn: Connection, db: PathBuf, disk: Arc<dyn Disk>) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Box<dyn Job>>();
        conn.wal_hook(Some(note_wal));
        let unsynced = Arc::new(AtomicBool::new(false));
        let synced = Arc::new(AtomicU64::new(0));
        let committer = Arc::new(Mutex::new(Committer {
            conn,
            // The connection was opened with FULL (mod.rs).
            synced_mode: true,
            db,
            disk,
            unsynced: unsynced.clone(),
            synced: synced.clone(),
            checkpoint_due: false,
            // What a cut may have left noted: looked at after the first synced commit.
            collect_due: true,
        }));
        let c = committer.clone();
        let thread = std::thread::Builder::new()
            .name("native-db-writer".into())
            .spawn(move || run(&c, rx))
            .map_err(|e| Error::backend("embedded", "cannot start the database writer", e))?;
        Ok(Writer {
            jobs: Some(tx),
            thread: Some(thread),
            committer,
            unsynced,
            synced,
        })
    }

    /// How many commits were synced so far.
    pub(crate) fn synced_commits(&self) -> u64 {
        self.synced.load(Ordering::SeqCst)
    }

    /// Runs `f` in the next group's transaction and answers once that group committed: synced,
    /// unless the caller is inside [`crate::ports::durability::deferring`] or
    /// [`crate::ports::durability::best_effort`].
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Group) -> Result<T> + Send + 'static,
    {
        // Before the first await: the scope is the polling thread's.
        let durability = if crate::ports::durability::deferred() {
            Durability::Deferred
        } else if crate::ports::durability::is_best_effort() {
            Durability::BestEffort
        } else {
            Durability::Durable
        };
        self.send(durability, f).await
    }

    /// Whether a write answered before its sync may still be unsynced ([`Self::flush`] has
    /// something to do).
    pub(crate) fn has_unsynced(&self) -> bool {
        self.unsynced.load(Ordering::SeqCst)
    }

    /// Makes every deferred write answered so far durable: returns at once when none was
    /// deferred since the last synced commit, else after a synced commit. (Best-effort writes
    /// are made durable by any synced commit, this one included, but never wait for one.)
    pub(crate) async fn flush(&self) -> Result<()> {
        if !self.has_unsynced() {
            return Ok(());
        }
        self.send(Durability::Durable, |_, _| Ok(())).await
    }

    async fn send<T, F>(&self, durability: Durability, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection, &mut Group) -> Result<T> + Send + 'static,
    {
        let (reply, answer) = tokio::sync::oneshot::channel();
        let job = Box::new(Typed {
            durability,
            f: Some(f),
            out: None,
            reply,
        });
        let gone = || Error::Backend {
            backend: "embedded",
            message: "the database writer has stopped".into(),
            source: None,
        };
        // A write that would wait for the writing thread to wake, commit and wake it in turn
        // commits itself when no group is committing: a group of one, as the thread would have
        // made of it alone. A script's call (a thread that may block) does so with any write;
        // async code only with a best-effort one, which syncs nothing, and only if no other
        // connection holds the database's write lock.
        // (Asked first: other callers never touch the lock the writing thread commits under.)
        let may_block = crate::blocking::may_block();
        let inline = may_block || durability == Durability::BestEffort;
        let job = match (inline && self.jobs.is_some())
            .then(|| self.committer.try_lock().ok())
            .flatten()
        {
            Some(c) => {
                let (left, due) = commit_and_answer(c, vec![job], !may_block);
                if due && may_block {
                    // This thread may block: it checkpoints, as SQLite would have in the commit.
                    self.committer
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .checkpoint_if_due();
                } else if due {
                    // The thread checkpoints after the (empty) group this wakes it for.
                    if let Some(jobs) = &self.jobs {
                        let _ = jobs.send(Box::new(Wake));
                    }
                }
                // A group of one leaves its write over only when it was not run (the lock was
                // taken, or SQLite rolled back); the thread takes it then.
                left.into_iter().next()
            }
            None => Some(job as Box<dyn Job>),
        };
        if let Some(job) = job {
            self.jobs
                .as_ref()
                .ok_or_else(gone)?
                .send(job)
                .map_err(|_| gone())?;
        }
        answer.await.map_err(|_| gone())?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The writing connection and what its commits keep track of.
struct Committer {
    conn: Connection,
    /// Whether the connection is set to `synchronous = FULL` now.
    synced_mode: bool,
    db: PathBuf,
    disk: Arc<dyn Disk>,
    /// See [`Writer`].
    unsynced: Arc<AtomicBool>,
    synced: Arc<AtomicU64>,
    /// A commit left the WAL past [`CHECKPOINT_PAGES`]: the next one who may block checkpoints.
    checkpoint_due: bool,
    /// Rows of `collect` may be waiting for a synced commit.
    collect_due: bool,
}

/// A group's outcome, to be answered once the connection is let go.
struct Committed {
    /// The jobs run (or failed before they could be), answered with `commit`.
    done: Vec<Box<dyn Job>>,
    commit: Result<()>,
    /// The jobs not run: they go in the next group.
    left: Vec<Box<dyn Job>>,
}

impl Committed {
    fn failed(jobs: Vec<Box<dyn Job>>, e: Error) -> Self {
        Committed {
            done: jobs,
            commit: Err(e),
            left: Vec::new(),
        }
    }

    /// Answers the jobs run; returns those left.
    fn answer(self) -> Vec<Box<dyn Job>> {
        for j in self.done {
            j.finish(self.commit.as_ref().map(|_| ()));
        }
        self.left
    }
}

/// A job that only wakes the writing thread (to checkpoint).
struct Wake;

impl Job for Wake {
    fn durability(&self) -> Durability {
        Durability::BestEffort
    }
    fn run(&mut self, _: &Connection, _: &mut Group, _: &Path) {}
    fn finish(self: Box<Self>, _: std::result::Result<(), &Error>) {}
}

/// The writing thread: commits every group that arrives, until the writer is dropped.
fn run(committer: &Mutex<Committer>, rx: mpsc::Receiver<Box<dyn Job>>) {
    let mut waiting: Vec<Box<dyn Job>> = Vec::new();
    loop {
        if waiting.is_empty() {
            match rx.recv() {
                Ok(j) => waiting.push(j),
                Err(_) => return,
            }
        }
        // Everything that arrived meanwhile (while the last commit synced) joins this group.
        while waiting.len() < MAX_GROUP {
            match rx.try_recv() {
                Ok(j) => waiting.push(j),
                Err(_) => break,
            }
        }
        let jobs = std::mem::take(&mut waiting);
        let lock = || committer.lock().unwrap_or_else(|p| p.into_inner());
        let (left, due) = commit_and_answer(lock(), jobs, false);
        waiting = left;
        if due {
            lock().checkpoint_if_due();
        }
    }
}

/// Commits `jobs` as one group on the connection `c` holds ([`Committer::commit_group`]),
/// lets the connection go, then answers them: a caller that writes again at once (a script's
/// next write) finds it free and commits itself. Returns the jobs left for the next group,
/// and whether a checkpoint is due.
fn commit_and_answer(
    mut c: MutexGuard<'_, Committer>,
    jobs: Vec<Box<dyn Job>>,
    no_wait: bool,
) -> (Vec<Box<dyn Job>>, bool) {
    let group = c.commit_group(jobs, no_wait);
    let due = c.checkpoint_due;
    drop(c);
    (group.answer(), due)
}

impl Committer {
    /// Runs `jobs` in one transaction, each in a savepoint of its own, and commits (synced if
    /// any of them is durable); the caller answers them ([`Committed::answer`]) once it let
    /// the connection go. The jobs left unrun when SQLite rolled the transaction back part way
    /// go in the next group. With `no_wait`, a transaction that would wait for another
    /// connection's write lock is not begun, and every job is left.
    fn commit_group(&mut self, mut jobs: Vec<Box<dyn Job>>, no_wait: bool) -> Committed {
        let (conn, db) = (&self.conn, self.db.as_path());
        // One durable write makes the whole group's commit a synced one.
        let durable = jobs.iter().any(|j| j.durability() == Durability::Durable);
        let owes_flush = jobs.iter().any(|j| j.durability() == Durability::Deferred);
        if durable != self.synced_mode {
            let set = if durable {
                "PRAGMA synchronous = FULL"
            } else {
                "PRAGMA synchronous = NORMAL"
            };
            if let Err(e) = exec(conn, set) {
                return Committed::failed(jobs, faults::db(db, &e));
            }
            self.synced_mode = durable;
        }
        let begun = if no_wait {
            let _ = conn.busy_timeout(Duration::ZERO);
            let begun = exec(conn, "BEGIN IMMEDIATE");
            let _ = conn.busy_timeout(BUSY_TIMEOUT);
            match begun {
                Err(rusqlite::Error::SqliteFailure(e, _))
                    if e.code == rusqlite::ErrorCode::DatabaseBusy =>
                {
                    return Committed {
                        done: Vec::new(),
                        commit: Ok(()),
                        left: jobs,
                    };
                }
                other => other,
            }
        } else {
            exec(conn, "BEGIN IMMEDIATE")
        };
        if let Err(e) = begun {
            return Committed::failed(jobs, faults::db(db, &e));
        }
        let mut group = Group::default();
        let mut done: Vec<Box<dyn Job>> = Vec::with_capacity(jobs.len());
        let mut aborted = None;
        let mut rest = jobs.drain(..);
        for mut j in rest.by_ref() {
            j.run(conn, &mut group, db);
            let gone = conn.is_autocommit();
            done.push(j);
            if gone {
                // SQLite rolled the whole transaction back (a full disk, an I/O error): the
                // group's earlier writes are gone with it.
                aborted = Some(Error::Storage {
                    fault: crate::error::StorageFault::Io,
                    path: db.display().to_string(),
                    message: format!(
                        "a write to {} failed and SQLite rolled back the writes made with it; retry",
                        db.display()
                    ),
                });
                break;
            }
        }
        let left: Vec<Box<dyn Job>> = rest.collect();
        self.collect_due |= group.collect;
        // What other connections had committed when this synced commit began to sync.
        let before_sync = (durable && self.collect_due && aborted.is_none())
            .then(|| data_version(conn).ok())
            .flatten();
        // Deferred commits before this one are synced with it only if it writes a frame.
        let unsynced_before = self.unsynced.load(Ordering::SeqCst);
        let commit = match aborted {
            Some(e) => Err(e),
            None if durable && unsynced_before => {
                mark(conn, db).and_then(|()| commit(conn, &group, db, self.disk.as_ref()))
            }
            None => commit(conn, &group, db, self.disk.as_ref()),
        };
        let pages = WAL_PAGES.with(|p| p.replace(0));
        match &commit {
            Ok(()) => {
                self.checkpoint_due |= pages >= CHECKPOINT_PAGES;
                // Before the answers: a flush that follows one of them must see this. A group
                // of best-effort writes alone changes nothing: no flush is owed them, and one
                // owed before is owed still.
                if durable {
                    self.unsynced.store(false, Ordering::SeqCst);
                    self.synced.fetch_add(1, Ordering::SeqCst);
                } else if owes_flush {
                    self.unsynced.store(true, Ordering::SeqCst);
                }
                if let Some(version) = before_sync {
                    self.collect_due = !self.collect(version);
                }
            }
            Err(_) => {
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
            }
        }
        Committed { done, commit, left }
    }

    /// Removes the contents noted in `collect` that no object names, right after a synced
    /// commit that began when other connections had committed `version` (its data_version).
    /// Only if none has committed since: then every row read here is on stable storage, and
    /// no row that a cut could bring back names what is removed. Its own commit is not synced:
    /// a note it deleted that a cut brings back is looked at again, and finds its content
    /// named again or gone. Returns whether every note was looked at.
    fn collect(&mut self, version: i64) -> bool {
        let (conn, disk) = (&self.conn, self.disk.as_ref());
        let Some(root) = self.db.parent() else {
            return true;
        };
        if self.synced_mode && exec(conn, "PRAGMA synchronous = NORMAL").is_ok() {
            self.synced_mode = false;
        }
        // Never waits for another connection: the next synced commit tries again.
        let _ = conn.busy_timeout(Duration::ZERO);
        let begun = exec(conn, "BEGIN IMMEDIATE");
        let _ = conn.busy_timeout(BUSY_TIMEOUT);
        if begun.is_err() {
            return false;
        }
        let done = (|| -> rusqlite::Result<bool> {
            if data_version(conn)? != version {
                return Ok(false);
            }
            let notes: Vec<String> = conn
                .prepare_cached("SELECT blob FROM collect LIMIT ?1")?
                .query_map([COLLECT_AT_ONCE as i64], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            for blob in &notes {
                let named: Option<i64> = conn
                    .prepare_cached("SELECT 1 FROM objects WHERE blob = ?1 LIMIT 1")?
                    .query_row([blob], |r| r.get(0))
                    .optional()?;
                if named.is_none() && blob.len() > 2 {
                    let path = root.join("blobs").join(&blob[..2]).join(blob);
                    // Gone already (a note a cut brought back), or left to `native doctor`.
                    let _ = disk.remove_file(&path);
                }
                conn.prepare_cached("DELETE FROM collect WHERE blob = ?1")?
                    .execute([blob])?;
            }
            Ok(notes.len() < COLLECT_AT_ONCE)
        })();
        match done {
            Ok(all) if exec(conn, "COMMIT").is_ok() => all,
            _ => {
                if !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                false
            }
        }
    }

    /// Checkpoints the WAL if a commit left it long (see [`CHECKPOINT_PAGES`]), as SQLite's
    /// automatic checkpoint would have after that commit: passive, so it never waits for
    /// readers; a failed one is tried again after the next long commit, and recovery reads the
    /// WAL meanwhile.
    fn checkpoint_if_due(&mut self) {
        if std::mem::take(&mut self.checkpoint_due) {
            let _ = self
                .conn
                .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        }
    }
}

/// Writes one row, so that the synced commit that follows deferred ones has a frame to sync
/// (a commit that changed nothing writes none, and syncs nothing).
fn mark(conn: &Connection, db: &Path) -> Result<()> {
    exec(
        conn,
        "INSERT INTO flushes (id, n) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET n = n + 1",
    )
    .map_err(|e| faults::db(db, &e))
}

/// How many commits other connections made, as far as `conn` knows: it changes with each.
fn data_version(conn: &Connection) -> rusqlite::Result<i64> {
    conn.prepare_cached("PRAGMA data_version")?
        .query_row([], |r| r.get(0))
}

/// Runs one statement of the writer's own (a transaction's control, a pragma) from the
/// connection's cache of prepared statements: parsed once, not at every commit.
fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.raw_execute().map(|_| ())
}

fn commit(conn: &Connection, group: &Group, db: &Path, disk: &dyn Disk) -> Result<()> {
    for dir in &group.sync_dirs {
        disk.sync_dir(dir)
            .map_err(|e| faults::io("cannot sync a folder of object contents", dir, &e))?;
    }
    exec(conn, "COMMIT").map_err(|e| faults::db(db, &e))
}
