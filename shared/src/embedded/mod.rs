//! The embedded backend: buckets, the key-value table and both queues in one folder on disk
//! (`.native/` of a project). Metadata, items and messages live in SQLite (WAL mode, so a
//! `native` command beside a running one is safe); object contents are immutable files named by
//! their sha256, written before the transaction that makes them visible.
//!
//! Writing an object into a notifying bucket queues an S3-style notification in the events
//! queue in the same transaction, as S3 notifications to SQS do.

mod disk;
mod doctor;
mod faults;
mod generation;
pub mod inspect;
mod kv;
mod objects;
mod owners;
mod queue;
mod runs;
mod schema;
mod vault;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use rusqlite::Connection;

pub use disk::{Disk, OsDisk};
pub use doctor::Checkup;

use crate::error::StorageFault;
use crate::{ports::Backends, Error, Result};

/// The database file in the backend's folder.
pub const DB_FILE: &str = "native.db";

/// Reading connections per open project (the server's workers are two to a few).
const READERS: usize = 4;

/// How long a connection waits for another connection's write lock (another process on the
/// same folder, or a second handle) before SQLite answers "database is locked".
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The embedded backend. Cheap to clone; every clone shares [`READERS`] reading connections and one
/// writing thread (see `writer.rs`).
#[derive(Clone)]
pub struct Embedded {
    inner: Arc<Inner>,
}

// Fields drop in order: the connections close before the owner file is let go.
struct Inner {
    root: PathBuf,
    db: PathBuf,
    /// Connections for reads, each behind its own lock: WAL readers do not wait for each
    /// other or for the writer, so requests on different workers read at once.
    readers: Vec<Mutex<Connection>>,
    /// Where the next read starts looking for a free reader.
    next_reader: std::sync::atomic::AtomicUsize,
    writer: writer::Writer,
    /// Real buckets that notify, with the suffix a key must end in.
    notify: Vec<(String, Option<String>)>,
    disk: Arc<dyn Disk>,
    owner: owners::Owner,
    /// Owners seen alive, and when (ms): looked at again after a second.
    alive: Mutex<std::collections::HashMap<String, i64>>,
    /// The fair-queue group each queue served last (events, work): the next receive starts
    /// after it.
    served: Arc<Mutex<[String; 2]>>,
    /// The project's generation counter (`generation.rs`), unless the folder cannot hold one.
    generation: Option<generation::SharedCounter>,
}

impl std::fmt::Debug for Embedded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Embedded({})", self.inner.root.display())
    }
}

impl Embedded {
    /// Opens (creating if needed) the backend in `root`, usually `<project>/.native`. `notify`
    /// lists the real buckets whose writes queue an event, with an optional key suffix.
    ///
    /// Refuses, naming the file and what to do, a database that is damaged, or empty (or
    /// missing) while the folder holds a project's state, and a folder it cannot write.
    /// Messages that a dead process had received are made visible again, and its temporary
    /// files removed.
    pub fn open(root: &Path, notify: Vec<(String, Option<String>)>) -> Result<Self> {
        Self::open_on(root, notify, Arc::new(OsDisk))
    }

    /// [`Embedded::open`] with the object contents written through `disk`.
    pub fn open_on(
        root: &Path,
        notify: Vec<(String, Option<String>)>,
        disk: Arc<dyn Disk>,
    ) -> Result<Self> {
        std::fs::create_dir_all(root).map_err(|e| faults::io("cannot create", root, &e))?;
        let mut made = false;
        for sub in ["blobs", "tmp"] {
            let dir = root.join(sub);
            made |= disk
                .create_dir(&dir)
                .map_err(|e| faults::io("cannot create", &dir, &e))?;
        }
        if made {
            disk.sync_dir(root)
                .map_err(|e| faults::io("cannot sync", root, &e))?;
        }
        let owner = owners::Owner::claim(root)?;
        let db = root.join(DB_FILE);
        refuse_lost_database(root, &db)?;
        let conn = connect(&db)?;
        // The state first, then the tables: another process opening a new project at the same
        // time commits its tables before it writes any state, so state seen means tables seen.
        if holds_state(root) {
            let tables: i64 = conn
                .query_row("SELECT count(*) FROM sqlite_master", [], |r| r.get(0))
                .map_err(|e| faults::db(&db, &e))?;
            if tables == 0 {
                return Err(lost(root, &db));
            }
        }
        let mode = wal_mode(&conn).map_err(|e| faults::db(&db, &e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(faults::db(
                &db,
                &rusqlite::Error::InvalidParameterName(format!("journal_mode is {mode}, not wal")),
            ));
        }
        // FULL in WAL mode: every commit syncs the WAL before it returns, so a write that was
        // answered survives a power cut (NORMAL syncs only at checkpoints).
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| faults::db(&db, &e))?;
        schema::migrate(&conn).map_err(|e| faults::name_db(&db, e))?;
        doctor::recover(&conn, root, &owner.id).map_err(|e| faults::name_db(&db, e))?;
        let readers = (0..READERS)
            .map(|_| connect(&db).map(Mutex::new))
            .collect::<Result<Vec<_>>>()?;
        let writer = writer::Writer::start(conn, db.clone(), disk.clone())?;
        Ok(Embedded {
            inner: Arc::new(Inner {
                root: root.to_path_buf(),
                db,
                readers,
                next_reader: Default::default(),
                writer,
                notify,
                disk,
                owner,
                alive: Mutex::new(Default::default()),
                served: Default::default(),
                generation: generation::SharedCounter::open(root).ok(),
            }),
        })
    }

    /// The ports, all served by this backend.
    pub fn backends(&self) -> Backends {
        Backends {
            objects: Arc::new(self.clone()),
            kv: Arc::new(self.clone()),
            queue: Arc::new(self.clone()),
            vault: Arc::new(self.clone()),
        }
    }

    /// How many commits this backend has synced to stable storage since it opened: a sync is
    /// its dearest step, so tests and benchmarks count them.
    pub fn synced_commits(&self) -> u64 {
        self.inner.writer.synced_commits()
    }

    /// A free reading connection, or the next one in turn when all are busy.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        let readers = &self.inner.readers;
        let start = self
            .inner
            .next_reader
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        for i in 0..readers.len() {
            match readers[(start + i) % readers.len()].try_lock() {
                Ok(c) => return c,
                // A panic while holding the lock leaves SQLite consistent (a read has nothing
                // to roll back), so a poisoned lock is safe to keep using.
                Err(std::sync::TryLockError::Poisoned(p)) => return p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {}
            }
        }
        readers[start % readers.len()]
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Runs a read on a reading connection; its errors name the database file.
    fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        f(&self.reader()).map_err(|e| faults::name_db(&self.inner.db, e))
    }

    /// Runs `f` in the next group commit (see `writer.rs`): answered once it is on stable
    /// storage, or failed with nothing of it written.
    async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T> + Send + 'static,
    {
        self.inner.writer.write(move |c, _| f(c)).await
    }

    /// Makes every write answered so far durable (see `writer.rs`): what every port's `flush`
    /// does, as the ports share one writer.
    async fn flush_writes(&self) -> Result<()> {
        self.inner.writer.flush().await
    }

    /// Whether a write answered before its sync is still unsynced: when not, a flush has
    /// nothing to do (the same test [`writer::Writer::flush`] makes first).
    fn has_unsynced_writes(&self) -> bool {
        self.inner.writer.has_unsynced()
    }
}

/// Switches the connection to WAL. The switch takes the database alone, and SQLite answers
/// "database is locked" at once, without the busy timeout, to a switch that finds other
/// connections opening a new database at the same moment (one in 15 of twelve concurrent
/// opens, in `many_opens_of_one_new_folder_at_once_all_succeed`): tried again for up to 5 s.
fn wal_mode(conn: &Connection) -> rusqlite::Result<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0)) {
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy
                    && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(
                    2 + u64::from(rand::random::<u8>() % 8),
                ));
            }
            other => return other,
        }
    }
}

/// Opens a connection to `db` with the backend's settings.
fn connect(db: &Path) -> Result<Connection> {
    let conn = Connection::open(db).map_err(|e| faults::db(db, &e))?;
    conn.busy_timeout(BUSY_TIMEOUT)
        .map_err(|e| faults::db(db, &e))?;
    // Room for every statement the backend prepares (rusqlite keeps 16 by default).
    conn.set_prepared_statement_cache_capacity(64);
    // Plans made once per statement, not once per call. Without the query planner stability
    // guarantee SQLite plans a `LIMIT ?` with the value bound to it, marks the statement to be
    // made again whenever that parameter is bound, and so parses and plans each of the
    // backend's paged reads (a queue's due messages, a key-value query) at every call
    // (BENCHMARKS.md, Queue throughput).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(|e| faults::db(db, &e))?;
    Ok(conn)
}

/// Whether the folder holds a project's state besides its database: objects' contents, the
/// callback secret, vault secrets.
fn holds_state(root: &Path) -> bool {
    let non_empty =
        |d: &str| std::fs::read_dir(root.join(d)).is_ok_and(|mut it| it.next().is_some());
    root.join(crate::callback::KEY_FILE).exists() || non_empty("blobs") || non_empty("vault")
}

/// Refuses to make a new database in place of one that was lost (missing or empty, with no
/// WAL beside it) while the folder holds state that the database indexed.
fn refuse_lost_database(root: &Path, db: &Path) -> Result<()> {
    let len = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let wal = db.with_file_name(format!("{DB_FILE}-wal"));
    // The state before the files' lengths, as in `open_on`.
    if holds_state(root) && len(db) == 0 && len(&wal) == 0 {
        return Err(lost(root, db));
    }
    Ok(())
}

fn lost(root: &Path, db: &Path) -> Error {
    Error::Storage {
        fault: StorageFault::Empty,
        path: db.display().to_string(),
        message: format!(
            "the database {} is empty or missing, but {} holds this project's state (object contents, callback.key, vault): the database was lost (a power cut before it was synced, or a copy that missed it); native will not start a new one over that state: restore {DB_FILE} (and {DB_FILE}-wal beside it) from a backup, or to start the project anew move {} aside",
            db.display(),
            root.display(),
            root.display()
        ),
    }
}

/// Runs `sql` from the connection's cache of prepared statements, as
/// `Connection::execute` does without one: SQLite parses and plans each statement once per
/// connection, not at every call (an `INSERT` of a message was parsed at every send:
/// BENCHMARKS.md, Queue throughput; [`connect`] keeps room for all of them).
pub(crate) fn execute<P: rusqlite::Params>(
    c: &Connection,
    sql: &str,
    p: P,
) -> rusqlite::Result<usize> {
    c.prepare_cached(sql)?.execute(p)
}

/// `Connection::query_row` from the cache of prepared statements ([`execute`]).
pub(crate) fn query_row<T, P, F>(c: &Connection, sql: &str, p: P, f: F) -> rusqlite::Result<T>
where
    P: rusqlite::Params,
    F: FnOnce(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
{
    c.prepare_cached(sql)?.query_row(p, f)
}

pub(crate) fn db_err(e: rusqlite::Error) -> Error {
    Error::backend("embedded", "database error", e)
}

pub(crate) fn io_err(what: String, e: std::io::Error) -> Error {
    Error::backend("embedded", what, e)
}

/// A random token: receipts, item versions.
pub(crate) fn token() -> String {
    format!("{:016x}", rand::random::<u64>())
}

#[cfg(test)]
mod tests;
