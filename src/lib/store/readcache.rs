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
//!
//! # Early writers
//!
//! A local `collect` reads the authority and the journal twice (the
//! recheck before the run, the import's validation after it) and then
//! writes both under the lock. With [`enable_read_cache_for_writes`] its
//! cache opens them read-write ([`db::open_early_writer`]: nothing is
//! created, migrated or written until a session holds the lock), and the
//! next [`super::Session::open`] on the same thread and data directory
//! takes them out of the cache as its writer connections
//! ([`take_writers`]), through the checks every kept writer connection
//! passes ([`super::session::Kept`]): the same file (device and inode),
//! out of any transaction, the schema cookie compared inside the batch's
//! first transaction (the migration check runs again when it moved).

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
static WRITERS: AtomicBool = AtomicBool::new(false);

/// Turns the per-thread read cache on for this process (`serve`).
pub fn enable_read_cache() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// [`enable_read_cache`], its connections opened as early writers for
/// this thread's next session (see "Early writers" above): for a command
/// that reads a data directory's databases and then writes them itself
/// (a local `collect`).
pub fn enable_read_cache_for_writes() {
    WRITERS.store(true, Ordering::Relaxed);
    enable_read_cache();
}

struct Kept {
    conn: Connection,
    home: Home,
}

/// Where a [`ReadConn`] goes back on drop, and what it was opened as.
struct Home {
    path: PathBuf,
    /// The file's identity when it was opened.
    id: (u64, u64),
    /// Its schema cookie when last checked.
    cookie: i64,
    /// An early writer of this database (`None`: read-only).
    writer: Option<&'static DbSpec>,
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
    keep: Option<Home>,
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
}

impl Drop for ReadConn {
    fn drop(&mut self) {
        let (Some(conn), Some(home)) = (self.conn.take(), self.keep.take()) else {
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
            c.retain(|k| k.home.path != home.path);
            if c.len() >= MAX_PER_THREAD {
                c.remove(0);
            }
            c.push(Kept { conn, home });
        });
    }
}

/// An early writer taken out of the cache for a session: its database,
/// connection, the file identity it was opened on and its schema cookie
/// when last checked.
pub(crate) type EarlyWriter = (&'static DbSpec, Connection, (u64, u64), i64);

/// Takes this thread's early writers of the data directory at `root`
/// (each database's file directly under it) out of the cache.
pub(crate) fn take_writers(root: &Path) -> Vec<EarlyWriter> {
    // A reader (`serve`'s, the hook's) is never looked at further.
    let mine = |k: &mut Kept| {
        k.home
            .writer
            .is_some_and(|s| k.home.path == root.join(s.file))
    };
    CACHE
        .try_with(|c| {
            let Ok(mut c) = c.try_borrow_mut() else {
                return Vec::new();
            };
            c.extract_if(.., mine)
                .filter_map(|k| Some((k.home.writer?, k.conn, k.home.id, k.home.cookie)))
                .collect()
        })
        .unwrap_or_default()
}

fn take(path: &Path) -> Option<Kept> {
    CACHE
        .try_with(|c| {
            let mut c = c.try_borrow_mut().ok()?;
            let i = c.iter().position(|k| k.home.path == path)?;
            Some(c.remove(i))
        })
        .ok()
        .flatten()
}

/// Opens the database at `path` for reading (see the module
/// documentation); `None` when the file does not exist. With `snapshot`,
/// the connection is already in a read transaction (`BEGIN DEFERRED`,
/// ended by the drop: rolled back when the connection goes back to the
/// cache, or closed with it), whose snapshot is the one its schema cookie
/// was checked in: a kept connection's check and the caller's reads are
/// one read transaction, not two. `BEGIN` and the drop's `ROLLBACK` come
/// from the connection's statement cache, not parsed again per request.
pub(crate) fn open(path: &Path, spec: &'static DbSpec, snapshot: bool) -> Result<Option<ReadConn>> {
    open_with(
        path,
        spec,
        ENABLED.load(Ordering::Relaxed),
        WRITERS.load(Ordering::Relaxed),
        snapshot,
    )
}

fn begin(conn: &Connection) -> Result<()> {
    conn.prepare_cached("BEGIN DEFERRED")?.execute([])?;
    Ok(())
}

pub(crate) fn open_with(
    path: &Path,
    spec: &'static DbSpec,
    cache: bool,
    writers: bool,
    snapshot: bool,
) -> Result<Option<ReadConn>> {
    if !cache {
        let Some(conn) = db::open_read(path, spec)? else {
            return Ok(None);
        };
        if snapshot {
            begin(&conn)?;
        }
        return Ok(Some(ReadConn {
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
    // through to a fresh open, which reports why. With `snapshot`, the
    // cookie is read inside the transaction the caller goes on reading
    // in (a failed check drops the connection, which ends it).
    if let Some(k) = kept
        && k.home.id == id
        && (!snapshot || begin(&k.conn).is_ok())
        && let Ok(cookie) = db::schema_cookie(&k.conn)
        && (cookie == k.home.cookie || db::check_readable(&k.conn, path, spec).is_ok())
    {
        return Ok(Some(ReadConn {
            conn: Some(k.conn),
            fresh: false,
            keep: Some(Home { cookie, ..k.home }),
        }));
    }
    let opened = if writers {
        db::open_early_writer(path, spec)?
    } else {
        db::open_read(path, spec)?.map(|c| (c, false))
    };
    let Some((conn, writer)) = opened else {
        return Ok(None);
    };
    if snapshot {
        begin(&conn)?;
    }
    // Kept only when the path named the same file before and after the
    // open, so the identity is the opened file's.
    let keep = match (private_fs::private_file_id(path)?, db::schema_cookie(&conn)) {
        (Some(after), Ok(cookie)) if after == id => Some(Home {
            path: path.to_owned(),
            id,
            cookie,
            writer: writer.then_some(spec),
        }),
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

    /// Gives `J` a schema newer than this binary's (as a later
    /// agent-task would leave it).
    fn make_schema_newer(dir: &DataDir) {
        let lock = dir.lock(Duration::from_secs(1)).expect("lock");
        let w = dir.open_write(&J, "t", &lock).expect("write");
        w.execute_batch(
            "CREATE TABLE later(x INTEGER); \
             INSERT INTO schema_migrations VALUES (99, 'future', 't');",
        )
        .expect("newer schema");
    }

    fn read(path: &Path) -> Option<ReadConn> {
        open_with(path, &J, true, false, false).expect("read")
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
    fn a_snapshot_open_reads_one_snapshot_its_schema_checked_in_it() {
        let (_t, dir, path) = setup();
        let write = |x: i64| {
            let lock = dir.lock(Duration::from_secs(1)).expect("lock");
            let w = dir.open_write(&J, "t", &lock).expect("write");
            w.execute("INSERT INTO j(x) VALUES (?1)", [x])
                .expect("insert");
        };
        for cache in [false, true] {
            // Fresh (and, the second time round, kept): in a transaction
            // from the open, so a commit after it is not seen.
            let c = open_with(&path, &J, cache, false, true)
                .expect("open")
                .expect("exists");
            assert!(!c.is_autocommit(), "in a read transaction");
            let before = xs(&c);
            write(10 + i64::from(cache));
            assert_eq!(xs(&c), before, "one snapshot");
            drop(c);
        }
        let c = open_with(&path, &J, true, false, true)
            .expect("open")
            .expect("exists");
        assert!(c.is_kept(), "taken again");
        assert_eq!(xs(&c), vec![1, 10, 11], "the latest commit at the open");
        drop(c);
        make_schema_newer(&dir);
        let e = open_with(&path, &J, true, false, true).expect_err("newer than this binary");
        assert_eq!(e.code(), Code::SchemaTooNew);
    }

    #[test]
    fn a_schema_change_behind_a_kept_connection_is_checked_again() {
        let (_t, dir, path) = setup();
        drop(read(&path).expect("kept"));
        make_schema_newer(&dir);
        let e = open_with(&path, &J, true, false, false).expect_err("newer than this binary");
        assert_eq!(e.code(), Code::SchemaTooNew);
    }

    /// A plan writing only `J`.
    const J_PLAN: crate::store::Plan = crate::store::Plan {
        dbs: &[(&J, crate::store::Access::Write)],
        order: crate::store::CommitOrder::Listed,
    };

    /// An early writer of `path` read once and given back to the cache,
    /// marked with a temporary table (which only that connection sees).
    fn early_marked(path: &Path) {
        let c = open_with(path, &J, true, true, false)
            .expect("open")
            .expect("exists");
        assert_eq!(xs(&c), vec![1], "it reads");
        c.execute_batch("CREATE TEMP TABLE marker(x)")
            .expect("a temporary table");
        drop(c);
    }

    /// Inserts `x` in a session of its own on this thread; whether the
    /// session's writer was the marked connection.
    fn insert_in_session(root: &Path, x: i64) -> Result<bool> {
        let mut s = crate::store::Session::open(
            root,
            Duration::from_secs(1),
            &crate::clock::SystemClock,
            J_PLAN,
        )?;
        let marked = s.apply(move |w| {
            let c = w.write(&J)?;
            c.execute("INSERT INTO j(x) VALUES (?1)", [x])?;
            Ok(c.prepare("SELECT count(*) FROM temp.marker").is_ok())
        })?;
        s.commit()?;
        Ok(marked)
    }

    #[test]
    fn an_early_writer_is_the_next_sessions_writer_and_changed_nothing_before() {
        let (_t, dir, path) = setup();
        let before = std::fs::read(&path).expect("database");
        early_marked(&path);
        assert_eq!(
            std::fs::read(&path).expect("database"),
            before,
            "reading wrote nothing"
        );
        assert!(
            insert_in_session(dir.root(), 2).expect("session"),
            "the session wrote through the connection the reads opened"
        );
        let r = crate::store::db::open_read(&path, &J)
            .expect("read")
            .expect("exists");
        assert_eq!(xs(&r), vec![1, 2], "committed");
        // Taken out of the cache by the session: the next one opens afresh.
        assert!(!insert_in_session(dir.root(), 3).expect("session"));
    }

    #[test]
    fn an_early_writer_of_a_replaced_file_is_never_used() {
        let (_t, dir, path) = setup();
        early_marked(&path);
        // The database renamed away and a copy put in its place.
        let moved = dir.root().join("moved.sqlite");
        std::fs::rename(&path, &moved).expect("rename");
        std::fs::copy(&moved, &path).expect("copy");
        assert!(
            !insert_in_session(dir.root(), 2).expect("session"),
            "another file: opened afresh"
        );
    }

    #[test]
    fn an_early_writer_opens_no_absent_database_and_checks_its_schema() {
        let t = tempfile::tempdir().expect("tempdir");
        let path = t.path().join("j.sqlite");
        assert!(
            open_with(&path, &J, true, true, false)
                .expect("absent")
                .is_none()
        );
        assert!(!path.exists(), "nothing was created");
        // A schema newer than this binary is refused as a reader refuses it.
        let (_t, dir, path) = setup();
        make_schema_newer(&dir);
        let e = open_with(&path, &J, true, true, false).expect_err("newer");
        assert_eq!(e.code(), Code::SchemaTooNew);
    }

    #[test]
    fn a_schema_moved_behind_an_early_writer_is_checked_again_by_the_session() {
        let (_t, dir, path) = setup();
        early_marked(&path);
        make_schema_newer(&dir);
        let e = insert_in_session(dir.root(), 2).expect_err("newer than this binary");
        assert_eq!(e.code(), Code::SchemaTooNew);
        let r = crate::store::db::raw_file(&path);
        assert_eq!(xs(&r), vec![1], "nothing written");
    }
}
