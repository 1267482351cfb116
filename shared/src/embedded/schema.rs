//! The embedded database's schema, and bringing a database made by an older build up to it.
//!
//! Several processes may open one project at the same moment (`native put` beside
//! `native drain` beside `native serve`), each running this. So the checks and the changes run
//! in one `BEGIN IMMEDIATE` transaction: it takes the database's write lock before it reads the
//! schema, so the second process finds what the first added and adds nothing (checking
//! `pragma_table_info` outside the lock let two processes both find a column missing, and the
//! second's `ALTER TABLE` failed with "duplicate column name").
//!
//! A database already at this schema is left alone without taking the lock: its
//! `user_version` holds a fingerprint of the schema text below, so any change to it (a new
//! column, a new index) runs the migration once on every existing database, with no version
//! number to remember to bump.

use rusqlite::Connection;

use super::db_err;
use crate::Result;

/// The tables and indexes of a new database.
const TABLES: &str = "
CREATE TABLE IF NOT EXISTS objects (
  bucket TEXT NOT NULL, key TEXT NOT NULL, size INTEGER NOT NULL, etag TEXT NOT NULL,
  blob TEXT NOT NULL, modified_ms INTEGER NOT NULL, depth INTEGER NOT NULL DEFAULT 0, trace TEXT,
  PRIMARY KEY (bucket, key)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS objects_blob ON objects(blob);
CREATE TABLE IF NOT EXISTS kv (
  pk TEXT NOT NULL, sk TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER NOT NULL,
  version TEXT NOT NULL, PRIMARY KEY (pk, sk)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, body TEXT NOT NULL,
  visible_at INTEGER NOT NULL, receive_count INTEGER NOT NULL DEFAULT 0, receipt TEXT,
  last_error TEXT, dead INTEGER NOT NULL DEFAULT 0, sent_ms INTEGER NOT NULL,
  grp TEXT NOT NULL DEFAULT '', owner TEXT);
CREATE TABLE IF NOT EXISTS holders (owner TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS flushes (id INTEGER PRIMARY KEY, n INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS attempts (
  message_id INTEGER NOT NULL, attempt INTEGER NOT NULL, at_ms INTEGER NOT NULL, error TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS attempts_of ON attempts(message_id);
CREATE TABLE IF NOT EXISTS collect (blob TEXT PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS runs (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, script TEXT NOT NULL,
  chain TEXT NOT NULL, started_ms INTEGER NOT NULL, failed INTEGER NOT NULL, rest TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS runs_of ON runs(tenant, seq);
CREATE TABLE IF NOT EXISTS steps (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, tenant TEXT NOT NULL, chain TEXT NOT NULL,
  at_ms INTEGER NOT NULL, rank INTEGER NOT NULL, record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS steps_of ON steps(tenant, seq);
CREATE INDEX IF NOT EXISTS steps_of_chain ON steps(tenant, chain, at_ms, rank, seq);
";

/// Columns that databases made by older builds lack: (table, column, its definition).
const ADDED_COLUMNS: &[(&str, &str, &str)] = &[
    // Objects keep their chain depth.
    ("objects", "depth", "INTEGER NOT NULL DEFAULT 0"),
    // Received messages name the process holding them (owners.rs).
    ("messages", "owner", "TEXT"),
    // Messages keep their fair-queue group (queue::receive).
    ("messages", "grp", "TEXT NOT NULL DEFAULT ''"),
    // Objects keep the chain that wrote them (ObjectMeta::trace).
    ("objects", "trace", "TEXT"),
    // Items keep their counts (TxOp::Count), a JSON object; NULL when none.
    ("kv", "counts", "TEXT"),
];

/// What refers to added columns, made after them. A message has one index, its fair-queue
/// place: each index is a page more that every lease and every delete writes (with the two
/// that used to be here, a delete wrote four pages and a queue alone ran at 0.6x). Due messages
/// are found through the groups (`queue::any_due`), and the processes holding messages are
/// listed in `holders` (`doctor::holders`). Runs are read by `seq` alone since a server keeps
/// its console's runs in memory (`RunStore::since`): their index by chain is gone.
const AFTER_COLUMNS: &str = "
CREATE INDEX IF NOT EXISTS messages_fair ON messages(queue, grp, dead, visible_at);
DROP INDEX IF EXISTS messages_due;
DROP INDEX IF EXISTS messages_owner;
DROP INDEX IF EXISTS runs_of_chain;
INSERT OR IGNORE INTO holders (owner) SELECT DISTINCT owner FROM messages WHERE owner IS NOT NULL;
";

/// Brings the database of `conn` to this build's schema; a no-op (one read) when it is there.
pub(super) fn migrate(conn: &Connection) -> Result<()> {
    let want = fingerprint();
    let version = |c: &Connection| -> Result<i64> {
        c.query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(db_err)
    };
    if version(conn)? == want {
        return Ok(());
    }
    // The write lock first, then the checks: see the header.
    conn.execute_batch("BEGIN IMMEDIATE").map_err(db_err)?;
    let r = (|| {
        if version(conn)? == want {
            return Ok(());
        }
        conn.execute_batch(TABLES).map_err(db_err)?;
        for (table, column, definition) in ADDED_COLUMNS {
            let has: bool = conn
                .query_row(
                    "SELECT COUNT(*) > 0 FROM pragma_table_info(?1) WHERE name = ?2",
                    [table, column],
                    |r| r.get(0),
                )
                .map_err(db_err)?;
            if !has {
                conn.execute_batch(&format!(
                    "ALTER TABLE {table} ADD COLUMN {column} {definition}"
                ))
                .map_err(db_err)?;
            }
        }
        conn.execute_batch(AFTER_COLUMNS).map_err(db_err)?;
        conn.execute_batch(&format!("PRAGMA user_version = {want}"))
            .map_err(db_err)
    })();
    match r {
        Ok(()) => conn.execute_batch("COMMIT").map_err(db_err),
        Err(e) => {
            if !conn.is_autocommit() {
                let _ = conn.execute_batch("ROLLBACK");
            }
            Err(e)
        }
    }
}

/// A positive 31-bit FNV-1a hash of the schema's text: what `user_version` holds once a
/// database is at it (0, a new database's, is never one).
fn fingerprint() -> i64 {
    let mut h: u32 = 0x811c_9dc5;
    let mut eat = |s: &str| {
        for b in s.bytes().chain([0]) {
            h ^= u32::from(b);
            h = h.wrapping_mul(0x0100_0193);
        }
    };
    eat(TABLES);
    for (t, c, d) in ADDED_COLUMNS {
        eat(t);
        eat(c);
        eat(d);
    }
    eat(AFTER_COLUMNS);
    i64::from(h & 0x7fff_ffff).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schema of projects made before the owner, group and depth columns.
    const OLDEST: &str = "
CREATE TABLE objects (
  bucket TEXT NOT NULL, key TEXT NOT NULL, size INTEGER NOT NULL, etag TEXT NOT NULL,
  blob TEXT NOT NULL, modified_ms INTEGER NOT NULL, PRIMARY KEY (bucket, key)) WITHOUT ROWID;
CREATE TABLE kv (
  pk TEXT NOT NULL, sk TEXT NOT NULL, value TEXT NOT NULL, expires_at INTEGER NOT NULL,
  version TEXT NOT NULL, PRIMARY KEY (pk, sk)) WITHOUT ROWID;
CREATE TABLE messages (
  id INTEGER PRIMARY KEY AUTOINCREMENT, queue TEXT NOT NULL, body TEXT NOT NULL,
  visible_at INTEGER NOT NULL, receive_count INTEGER NOT NULL DEFAULT 0, receipt TEXT,
  last_error TEXT, dead INTEGER NOT NULL DEFAULT 0, sent_ms INTEGER NOT NULL);
INSERT INTO messages (queue, body, visible_at, sent_ms) VALUES ('work', 'old', 0, 0);
";

    fn columns(conn: &Connection, table: &str) -> Vec<String> {
        let mut s = conn
            .prepare("SELECT name FROM pragma_table_info(?1)")
            .unwrap();
        s.query_map([table], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap()
    }

    /// Opens `db` from `n` threads at once, each migrating on a connection of its own;
    /// every error.
    fn migrate_at_once(db: &std::path::Path, n: usize) -> Vec<String> {
        let start = std::sync::Arc::new(std::sync::Barrier::new(n));
        let threads: Vec<_> = (0..n)
            .map(|_| {
                let (db, start) = (db.to_path_buf(), start.clone());
                std::thread::spawn(move || {
                    let conn = Connection::open(&db).unwrap();
                    conn.busy_timeout(std::time::Duration::from_secs(30))
                        .unwrap();
                    start.wait();
                    migrate(&conn).err().map(|e| e.to_string())
                })
            })
            .collect();
        threads
            .into_iter()
            .filter_map(|t| t.join().unwrap())
            .collect()
    }

    #[test]
    fn an_old_database_migrated_by_many_at_once_gets_each_column_once() {
        for _ in 0..5 {
            // GIVEN a database of the oldest schema, with a message, in WAL mode
            let dir = tempfile::tempdir().unwrap();
            let db = dir.path().join("native.db");
            let c = Connection::open(&db).unwrap();
            c.pragma_update(None, "journal_mode", "WAL").unwrap();
            c.execute_batch(OLDEST).unwrap();
            drop(c);
            // WHEN 12 connections migrate it at the same moment
            let errors = migrate_at_once(&db, 12);
            // THEN none fails, and it has every column, the message kept
            assert_eq!(errors, Vec::<String>::new());
            let c = Connection::open(&db).unwrap();
            let m = columns(&c, "messages");
            for col in ["owner", "grp"] {
                assert_eq!(m.iter().filter(|n| *n == col).count(), 1, "{m:?}");
            }
            assert!(columns(&c, "objects").contains(&"depth".to_string()));
            let (body, grp): (String, String) = c
                .query_row("SELECT body, grp FROM messages", [], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .unwrap();
            assert_eq!((body.as_str(), grp.as_str()), ("old", ""));
            let v: i64 = c
                .query_row("PRAGMA user_version", [], |r| r.get(0))
                .unwrap();
            assert_eq!(v, fingerprint());
        }
    }

    #[test]
    fn a_database_with_the_owner_and_due_indexes_loses_them_and_keeps_its_holders() {
        // GIVEN a database as the build before the holders table left it: two more indexes on
        // messages, and a message held by a process
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("native.db");
        let c = Connection::open(&db).unwrap();
        migrate(&c).unwrap();
        c.execute_batch(
            "DROP TABLE holders;
             CREATE INDEX messages_due ON messages(queue, dead, visible_at);
             CREATE INDEX messages_owner ON messages(owner) WHERE owner IS NOT NULL;
             INSERT INTO messages (queue, body, visible_at, sent_ms, owner, receipt)
               VALUES ('work', 'held', 0, 0, 'p1', '1:x');
             PRAGMA user_version = 7;",
        )
        .unwrap();
        // WHEN it is migrated
        migrate(&c).unwrap();
        // THEN the message has its fair-queue index alone, and its holder is listed
        let indexes: Vec<String> = c
            .prepare("SELECT name FROM pragma_index_list('messages') ORDER BY name")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<rusqlite::Result<_>>()
            .unwrap();
        assert_eq!(indexes, vec!["messages_fair".to_string()]);
        assert_eq!(super::super::doctor::holders(&c, "me").unwrap(), vec!["p1"]);
    }

    #[test]
    fn a_database_at_the_schema_is_not_written() {
        // GIVEN a migrated database
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("native.db");
        migrate(&Connection::open(&db).unwrap()).unwrap();
        // WHEN it is opened read-only and migrated again
        let ro =
            Connection::open_with_flags(&db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY).unwrap();
        // THEN that needs no write
        migrate(&ro).unwrap();
    }
}
