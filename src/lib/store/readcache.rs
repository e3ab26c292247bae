//! Read-only connections kept per thread between requests (`serve`).
//!
//! Opening a SQLite connection parses the schema and maps the WAL index
//! on its first statement; a server answering thousands of reads a second
//! should not pay that per request. When the cache is on
//! ([`enable_read_cache`], called once by `serve`), a [`ReadConn`] that
//! is dropped goes back to its thread's cache (at most
//! [`MAX_PER_THREAD`] connections a thread) instead of being closed, and
//! the next read of the same file on that thread takes it again. Each take
//! checks, before the connection serves anything:
//!
//! - the file at the path is still the one the connection was opened on
//!   (device and inode, under the private-file rule): a file replaced or
//!   removed behind it is never served; a removed one is `None`, exactly
//!   as a fresh open would answer (nothing is ever created);
//! - SQLite's schema cookie is unchanged, else the reader's schema checks
//!   (`schema_too_new`, `schema_outdated`) run again;
//! - any error on the kept connection drops it and opens a fresh one.
//!
//! A kept connection holds no transaction between requests (its drop rolls
//! back whatever its user left open), so each request's first statement
//! (or its `BEGIN`) reads the latest committed snapshot of the WAL, and
//! reads still never wait for a writer. Off (the CLI: one process, one
//! request), every `ReadConn` is a fresh connection closed on drop.

use super::db::{self, DbSpec};
use super::private_fs;
use crate::error::Result;
use rusqlite::Connection;
use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// Kept connections on one thread at most (one per database file; a
/// `serve` with several data directories keeps two per directory).
pub const MAX_PER_THREAD: usize = 8;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns the per-thread read cache on for this process (`serve`).
pub fn enable_read_cache() {
    ENABLED.store(true, Ordering::Relaxed);
}

struct Kept {
    path: PathBuf,
    conn: Connection,
    id: (u64, u64),
    cookie: i64,
}

thread_local! {
    static CACHE: RefCell<Vec<Kept>> = const { RefCell::new(Vec::new()) };
}

/// A read-only connection: fresh, or taken from this thread's cache and
/// given back when dropped. Derefs to the [`Connection`].
pub struct ReadConn {
    conn: Option<Connection>,
    /// Opened for this take (not a kept connection served again).
    fresh: bool,
    /// Where it goes back on drop (`None`: closed on drop).
    keep: Option<(PathBuf, (u64, u64), i64)>,
}

impl std::fmt::Debug for ReadConn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadConn")
            .field("kept", &self.keep.is_some())
            .finish()
    }
}

impl Deref for ReadConn {
    type Target = Connection;
    fn deref(&self) -> &Connection {
        // Present from construction until drop.
        self.conn.as_ref().unwrap_or_else(|| unreachable!())
    }
}

impl DerefMut for ReadConn {
    fn deref_mut(&mut self) -> &mut Connection {
        self.conn.as_mut().unwrap_or_else(|| unreachable!())
    }
}

impl ReadConn {
    /// Whether this connection came from (and goes back to) the cache.
    pub fn is_kept(&self) -> bool {
        self.keep.is_some()
    }

    /// Whether it was opened for this take (not a kept connection served
    /// again): what its user cached per connection (keyed by `PRAGMA
    /// data_version`, which only one connection's values compare) is
    /// stale.
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// Starts a read transaction (`BEGIN DEFERRED`): every statement until
    /// the connection is dropped reads one snapshot. Ended by the drop
    /// (rolled back when the connection goes back to the cache, or closed
    /// with it). The statement comes from the connection's cache, as does
    /// the drop's `ROLLBACK`: neither is parsed again per request.
    pub fn begin_read(&self) -> Result<()> {
        self.prepare_cached("BEGIN DEFERRED")?.execute([])?;
        Ok(())
    }
}

impl Drop for ReadConn {
    fn drop(&mut self) {
        let (Some(conn), Some((path, id, cookie))) = (self.conn.take(), self.keep.take()) else {
            return;
        };
        // Nothing of this request's snapshot survives it.
        if !conn.is_autocommit()
            && conn
                .prepare_cached("ROLLBACK")
                .and_then(|mut s| s.execute([]))
                .is_err()
        {
            return;
        }
        if !conn.is_autocommit() {
            return;
        }
        let _ = CACHE.try_with(|c| {
            let Ok(mut c) = c.try_borrow_mut() else {
                return;
            };
            c.retain(|k| k.path != path);
            if c.len() >= MAX_PER_THREAD {
                c.remove(0);
            }
            c.push(Kept {
                path,
                conn,
                id,
                cookie,
            });
        });
    }
}

fn take(path: &Path) -> Option<Kept> {
    CACHE
        .try_with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            let i = c.iter().position(|k| k.path == path)?;
            Some(c.remove(i))
        })
        .ok()
        .flatten()
}

/// Opens the database at `path` read-only (see the module
/// documentation); `None` when the file does not exist.
pub(crate) fn open(path: &Path, spec: &DbSpec) -> Result<Option<ReadConn>> {
    open_with(path, spec, ENABLED.load(Ordering::Relaxed))
}

pub(crate) fn open_with(path: &Path, spec: &DbSpec, cache: bool) -> Result<Option<ReadConn>> {
    if !cache {
        return Ok(db::open_read(path, spec)?.map(|conn| ReadConn {
            conn: Some(conn),
            fresh: true,
            keep: None,
        }));
    }
    let kept = take(path);
    let Some(id) = private_fs::private_file_id(path)? else {
        // Removed: the kept connection (if any) is dropped with `kept`.
        return Ok(None);
    };
    // A schema that moved to something this binary does not read falls
    // through to a fresh open, which reports why.
    if let Some(k) = kept
        && k.id == id
        && let Ok(cookie) = db::schema_cookie(&k.conn)
        && (cookie == k.cookie || db::check_readable(&k.conn, path, spec).is_ok())
    {
        return Ok(Some(ReadConn {
            conn: Some(k.conn),
            fresh: false,
            keep: Some((k.path, id, cookie)),
        }));
    }
    let Some(conn) = db::open_read(path, spec)? else {
        return Ok(None);
    };
    // Kept only when the path named the same file before and after the
    // open, so the identity is the opened file's.
    let keep = match (private_fs::private_file_id(path)?, db::schema_cookie(&conn)) {
        (Some(after), Ok(cookie)) if after == id => Some((path.to_owned(), id, cookie)),
        _ => None,
    };
    Ok(Some(ReadConn {
        conn: Some(conn),
        fresh: true,
        keep,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Code;
    use crate::store::DataDir;
    use crate::store::session::test_plan::J;
    use std::time::Duration;

    fn setup() -> (tempfile::TempDir, DataDir, PathBuf) {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let (dir, lock) = DataDir::create(&root, Duration::from_secs(1)).expect("create");
        let c = dir
            .open_write(&J, "2026-12-01T00:00:00Z", &lock)
            .expect("j");
        c.execute("INSERT INTO j(x) VALUES (1)", [])
            .expect("insert");
        let path = root.join(J.file);
        (t, dir, path)
    }

    fn xs(c: &Connection) -> Vec<i64> {
        c.prepare("SELECT x FROM j ORDER BY x")
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    fn read(path: &Path) -> Option<ReadConn> {
        open_with(path, &J, true).expect("read")
    }

    #[test]
    fn a_kept_connection_serves_the_next_read_and_sees_new_commits() {
        let (_t, dir, path) = setup();
        let c = read(&path).expect("exists");
        assert!(c.is_kept());
        assert_eq!(xs(&c), vec![1]);
        c.execute_batch("BEGIN").expect("begin");
        drop(c);
        let lock = dir.lock(Duration::from_secs(1)).expect("lock");
        let w = dir.open_write(&J, "t", &lock).expect("write");
        w.execute("INSERT INTO j(x) VALUES (2)", [])
            .expect("insert");
        let c = read(&path).expect("exists");
        assert!(c.is_autocommit(), "the request's transaction was ended");
        assert_eq!(xs(&c), vec![1, 2], "the latest commit");
        drop(c);
        let again = read(&path).expect("exists");
        assert!(again.is_kept(), "taken again");
        assert_eq!(xs(&again), vec![1, 2]);
    }

    #[test]
    fn a_replaced_or_removed_file_is_never_served_from_the_cache() {
        let (_t, dir, path) = setup();
        drop(read(&path).expect("kept"));
        // Another database (other rows) renamed over the path.
        let other = dir.root().join("other.sqlite");
        let lock = dir.lock(Duration::from_secs(1)).expect("lock");
        let spec_other = DbSpec {
            name: "j",
            file: "other.sqlite",
            migrations: J.migrations,
            on_open: None,
        };
        let o = crate::store::db::open_write(&other, &spec_other, "t", &lock).expect("other");
        o.execute("INSERT INTO j(x) VALUES (7)", [])
            .expect("insert");
        o.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)")
            .expect("checkpoint");
        drop(o);
        std::fs::rename(&other, &path).expect("rename");
        for suffix in ["-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        assert_eq!(xs(&read(&path).expect("exists")), vec![7], "the new file");
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
        assert!(
            read(&path).is_none(),
            "removed: absent, as a fresh open says"
        );
        assert!(!path.exists(), "nothing was created");
    }

    #[test]
    fn a_schema_change_behind_a_kept_connection_is_checked_again() {
        let (_t, dir, path) = setup();
        drop(read(&path).expect("kept"));
        let lock = dir.lock(Duration::from_secs(1)).expect("lock");
        let w = dir.open_write(&J, "t", &lock).expect("write");
        w.execute_batch(
            "CREATE TABLE later(x INTEGER); \
             INSERT INTO schema_migrations VALUES (99, 'future', 't');",
        )
        .expect("newer schema");
        let e = open_with(&path, &J, true).expect_err("newer than this binary");
        assert_eq!(e.code(), Code::SchemaTooNew);
    }
}
