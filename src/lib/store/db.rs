//! Opening SQLite databases, in one place.
//!
//! Writers open with WAL, `synchronous=FULL`, foreign keys on, a busy
//! timeout, and run the migration runner inside an immediate transaction.
//! Readers open with `SQLITE_OPEN_READ_ONLY`: they never create a file, never
//! migrate and never change the journal mode. A database whose schema is
//! newer than this binary is refused (`schema_too_new`); a reader that finds
//! an older schema fails with `schema_outdated`.

use super::lock::DirLock;
use crate::error::{Code, Error, Result};
use rusqlite::{Connection, OpenFlags, OptionalExtension, config::DbConfig};
use std::path::Path;
use std::time::Duration;

/// One schema migration: applied once, in order, inside a transaction.
#[derive(Debug)]
pub struct Migration {
    /// Version reached after this migration (1, 2, 3, … without gaps).
    pub version: u32,
    /// One line saying what it does.
    pub description: &'static str,
    /// The SQL to run.
    pub sql: &'static str,
}

/// A database of the data directory and its migrations.
#[derive(Debug)]
pub struct DbSpec {
    /// Short name used in `info` (`authority`, `journal`, `data`).
    pub name: &'static str,
    /// Path relative to the data directory.
    pub file: &'static str,
    /// Every migration, in version order.
    pub migrations: &'static [Migration],
    /// Run on every connection the store opens for this database: a
    /// writer's after its migrations, inside an immediate transaction of
    /// its own; a reader's after its schema checks. The connection
    /// settings and one-off repairs its owner needs.
    pub on_open: Option<fn(&Connection, Opened) -> Result<()>>,
}

/// What a [`DbSpec::on_open`] hook is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opened {
    /// A read-only connection.
    Reader,
    /// A writer connection (created and migrated), in a transaction.
    Writer,
}

impl DbSpec {
    /// The schema version this binary writes.
    pub fn latest(&self) -> u32 {
        self.migrations.last().map_or(0, |m| m.version)
    }
}

const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements a connection caches (`prepare_cached`): enough for
/// every statement of the workflow's hot paths, so a kept connection
/// (the `serve` writer's, a handler thread's reader) parses each once.
const STATEMENT_CACHE: usize = 128;

const META_SQL: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    description TEXT NOT NULL,
    applied_at TEXT NOT NULL
) STRICT";

/// Opens (creating if missing) and migrates a database for writing. The
/// `DirLock` argument is the proof that the caller holds the lock.
pub(crate) fn open_write(
    path: &Path,
    spec: &DbSpec,
    now: &str,
    _lock: &DirLock,
) -> Result<Connection> {
    // Create the file 0600 ourselves (never trust the umask); SQLite gives
    // its -wal and -shm files the database file's mode.
    drop(super::private_fs::open_private_rw(path)?);
    let conn = connect(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE,
    )?;
    // Keep the WAL across closes: the last connection need not checkpoint
    // and delete it on every short command (about 1 ms and 3 fsyncs each).
    // Autocheckpoint still bounds its size.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(Error::internal(format!(
            "could not enable WAL on {} (got {mode})",
            path.display()
        )));
    }
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
    migrate(&conn, spec, now)?;
    if let Some(hook) = spec.on_open {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        match hook(&conn, Opened::Writer) {
            Ok(()) => conn.execute_batch("COMMIT")?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
    }
    super::private_fs::check_private(path, super::private_fs::Kind::File)?;
    truncate_large_wal(&conn, path, _lock, WAL_TRUNCATE_AT_OPEN_BYTES)?;
    Ok(conn)
}

/// Opens `path` with `flags` (plus no mutex and no symlink) and the
/// settings every connection of the store has: the busy timeout, the
/// statement cache and stable plans.
#[allow(clippy::disallowed_methods)] // `store` owns SQLite opens.
fn connect(path: &Path, flags: OpenFlags) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        flags | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_NOFOLLOW,
    )
    .map_err(|e| open_error(path, e))?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    stable_plans(&conn)?;
    Ok(conn)
}

/// Turns on SQLite's query planner stability guarantee
/// (`SQLITE_DBCONFIG_ENABLE_QPSG`): a statement's plan does not depend on
/// the values bound to it. Without it (the bundled SQLite is built with
/// `STAT4`) a statement whose planning looked at a bound value (constant
/// propagation across a join, a partial index, `LIKE`) is marked to be
/// prepared again whenever that parameter is rebound, so a cached
/// statement was parsed and planned again on every execution: under
/// `serve` that was a fifth of a request's CPU (the installed-requirement
/// joins of every authorize step and qualification). Results are the
/// same either way; only plan choice by bound value is given up, and no
/// query here relies on it (no `LIKE ?`, no partial index matched by a
/// parameter).
fn stable_plans(conn: &Connection) -> Result<()> {
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)?;
    Ok(())
}

/// WAL size above which a long-lived writer (`serve`'s) checkpoints and
/// truncates the WAL, when a batch's session closes or the writer idles:
/// its readers keep their WAL index, and a smaller bound would only add
/// checkpoints.
pub(crate) const WAL_TRUNCATE_BYTES: u64 = 1024 * 1024;

/// The same bound for a command's writer, when it opens the database and
/// when a one-off session closes ([`super::Session::close`]): every
/// short-lived process is the
/// first connection of the database, which rebuilds the WAL index by
/// reading and checksumming the whole WAL (about 0.3 µs a KiB here). At
/// 1 MiB a command that opens the authority and the journal rebuilt about
/// 0.3 ms of index on average; at 256 KiB about a quarter of that, for a
/// checkpoint (two fsyncs) every 256 KiB of writes instead of every MiB
/// (`docs/transfer.md`, "What collecting costs").
pub(crate) const WAL_TRUNCATE_AT_OPEN_BYTES: u64 = 256 * 1024;

/// Keeps the WAL short. Every short-lived process is the first connection
/// of its database, so SQLite rebuilds the WAL index by reading the whole
/// WAL on open, and the backfill mark it kept is lost with it: a WAL that
/// is never closed with a checkpoint (`NO_CKPT_ON_CLOSE`) is never
/// restarted and grows without bound, making every later open slower. A
/// writer (holding the data-directory lock) therefore truncates it once it
/// passes `limit`: [`WAL_TRUNCATE_AT_OPEN_BYTES`] when a command's writer
/// opens it or a one-off session closes, [`WAL_TRUNCATE_BYTES`] for a
/// long-lived writer. A reader still inside the WAL makes the checkpoint
/// report busy; that is harmless and retried by the next writer. The checkpoint never
/// waits for readers: a `TRUNCATE` checkpoint would otherwise sleep in the
/// busy handler (up to the 5 s busy timeout) until every reader has left
/// the WAL, which under `serve`'s steady reads stalled the writer thread
/// and every mutation queued behind it (the 256-agent heartbeat tail).
/// Without the wait it backfills what it can, as a passive checkpoint.
/// Whether the WAL of the database at `path` has grown past
/// [`WAL_TRUNCATE_BYTES`].
pub(crate) fn wal_is_large(path: &Path) -> bool {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    std::fs::symlink_metadata(&wal).is_ok_and(|m| m.len() > WAL_TRUNCATE_BYTES)
}

pub(crate) fn truncate_large_wal(
    conn: &Connection,
    path: &Path,
    _lock: &DirLock,
    limit: u64,
) -> Result<()> {
    let mut wal = path.as_os_str().to_owned();
    wal.push("-wal");
    let big = std::fs::symlink_metadata(&wal).is_ok_and(|m| m.len() > limit);
    if big {
        conn.busy_timeout(Duration::ZERO)?;
        let done = conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
            r.get::<_, i64>(0)
        });
        conn.busy_timeout(BUSY_TIMEOUT)?;
        done?;
    }
    Ok(())
}

/// Opens an existing database read-only. Returns `Ok(None)` when the file
/// does not exist; nothing is ever created.
pub(crate) fn open_read(path: &Path, spec: &DbSpec) -> Result<Option<Connection>> {
    if !super::private_fs::check_private(path, super::private_fs::Kind::File)? {
        return Ok(None);
    }
    let conn = connect(path, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    check_readable(&conn, path, spec)?;
    if let Some(hook) = spec.on_open {
        hook(&conn, Opened::Reader)?;
    }
    Ok(Some(conn))
}

/// Opens an existing database read-write without the data-directory
/// lock, for a command that reads it first and writes it later, under the
/// lock, in a [`super::Session`] (a local `collect`: the recheck and the
/// import's validation read both databases, the import writes them). The
/// session takes it as its writer instead of opening the file again
/// (`store::readcache`, "Early writers"), which saves the second open, its
/// schema parse and its pragmas.
///
/// Until a session takes it, it is a reader and changes nothing: no
/// database is created (`None` when the file does not exist; SQLite's own
/// `-wal` and `-shm` files are created, with the database's mode, only if
/// they are missing, as any connection that may write creates them), no
/// migration runs and the journal mode is read, never set; the reader's schema
/// checks apply (`schema_too_new`, `schema_outdated`). It has the writer's
/// connection settings (`synchronous=FULL`, foreign keys, no checkpoint on
/// close), which change nothing on disk. Where it could not serve as a
/// writer (a database that is not in WAL mode, a file this user may not
/// write, a database whose [`DbSpec::on_open`] hook a writer must run) a
/// plain read-only connection is returned instead: the `bool` says which.
pub(crate) fn open_early_writer(path: &Path, spec: &DbSpec) -> Result<Option<(Connection, bool)>> {
    let read_only = |path: &Path| Ok(open_read(path, spec)?.map(|c| (c, false)));
    if spec.on_open.is_some() {
        return read_only(path);
    }
    if !super::private_fs::check_private(path, super::private_fs::Kind::File)? {
        return Ok(None);
    }
    let conn = connect(path, OpenFlags::SQLITE_OPEN_READ_WRITE)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    check_readable(&conn, path, spec)?;
    let mode: String = conn.query_row("PRAGMA journal_mode", [], |r| r.get(0))?;
    // SQLite opens a file it may not write read-only without a word.
    if !mode.eq_ignore_ascii_case("wal") || conn.is_readonly(rusqlite::MAIN_DB)? {
        drop(conn);
        return read_only(path);
    }
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
    Ok(Some((conn, true)))
}

/// The schema checks of a reader: not newer than this binary
/// (`schema_too_new`), not older (`schema_outdated`).
pub(crate) fn check_readable(conn: &Connection, path: &Path, spec: &DbSpec) -> Result<()> {
    let v = schema_version(conn)?;
    check_version(path, spec, v)?;
    if v < spec.latest() {
        return Err(Error::new(
            Code::SchemaOutdated,
            format!(
                "{} has schema version {v}; this agent-task reads version {}",
                path.display(),
                spec.latest()
            ),
        )
        .with("path", path.display().to_string())
        .with(
            "fix",
            "run `agent-task init` on this data directory to migrate it",
        ));
    }
    Ok(())
}

/// SQLite's schema cookie of an open database (`PRAGMA schema_version`):
/// it changes with every schema change, whoever makes it, so a kept
/// connection whose cookie moved re-runs its schema checks.
pub(crate) fn schema_cookie(conn: &Connection) -> Result<i64> {
    // Cached: a kept connection reads it on every take.
    Ok(conn
        .prepare_cached("PRAGMA schema_version")?
        .query_row([], |r| r.get(0))?)
}

/// The applied schema version of an open database (0 when none).
pub(crate) fn schema_version(conn: &Connection) -> Result<u32> {
    let has: Option<i64> = conn
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type='table' AND name='schema_migrations'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if has.is_none() {
        return Ok(0);
    }
    let v: Option<i64> = conn.query_row("SELECT max(version) FROM schema_migrations", [], |r| {
        r.get(0)
    })?;
    u32::try_from(v.unwrap_or(0))
        .map_err(|_| Error::new(Code::IntegrityError, "schema version out of range"))
}

fn check_version(path: &Path, spec: &DbSpec, v: u32) -> Result<()> {
    if v > spec.latest() {
        return Err(Error::new(
            Code::SchemaTooNew,
            format!(
                "{} has schema version {v}, newer than the {} this agent-task knows; upgrade agent-task",
                path.display(),
                spec.latest()
            ),
        )
        .with("path", path.display().to_string())
        .with("schema_version", v)
        .with("supported_schema_version", spec.latest()));
    }
    Ok(())
}

pub(crate) fn migrate(conn: &Connection, spec: &DbSpec, now: &str) -> Result<()> {
    // Fast path: already current, no write transaction needed.
    let v = schema_version(conn)?;
    check_version(
        conn.path().map(Path::new).unwrap_or(Path::new("?")),
        spec,
        v,
    )?;
    if v == spec.latest() {
        return Ok(());
    }
    conn.execute_batch("BEGIN IMMEDIATE")?;
    let res = (|| -> Result<()> {
        conn.execute_batch(META_SQL)?;
        let v = schema_version(conn)?;
        for m in spec.migrations.iter().filter(|m| m.version > v) {
            conn.execute_batch(m.sql).map_err(|e| {
                Error::internal(format!(
                    "migration {} of {} failed: {e}",
                    m.version, spec.name
                ))
            })?;
            conn.execute(
                "INSERT INTO schema_migrations(version, description, applied_at) VALUES (?1, ?2, ?3)",
                rusqlite::params![m.version, m.description, now],
            )?;
        }
        Ok(())
    })();
    match res {
        Ok(()) => conn.execute_batch("COMMIT").map_err(Error::from),
        Err(e) => {
            let _ = conn.execute_batch("ROLLBACK");
            Err(e)
        }
    }
}

fn open_error(path: &Path, e: rusqlite::Error) -> Error {
    Error::new(
        Code::Io,
        format!("cannot open database {}: {e}", path.display()),
    )
    .with("path", path.display().to_string())
}

/// A private in-memory database, for unit tests that exercise SQL
/// directly (migrations, FTS queries) without a data directory.
#[cfg(test)]
#[allow(clippy::disallowed_methods)] // `store` owns SQLite opens.
pub(crate) fn in_memory() -> Connection {
    Connection::open_in_memory().expect("in-memory database")
}

/// A plain connection to the database file at `path`, without the
/// checks and pragmas of [`open_write`], for unit tests that build an old
/// schema by hand.
#[cfg(test)]
#[allow(clippy::disallowed_methods)] // `store` owns SQLite opens.
pub(crate) fn raw_file(path: &Path) -> Connection {
    Connection::open(path).expect("open database file")
}

#[cfg(test)]
mod tests {
    use super::*;

    static MIGS: &[Migration] = &[
        Migration {
            version: 1,
            description: "t",
            sql: "CREATE TABLE t(x INTEGER) STRICT;",
        },
        Migration {
            version: 2,
            description: "u",
            sql: "CREATE TABLE u(x INTEGER) STRICT;",
        },
    ];
    static SPEC: DbSpec = DbSpec {
        name: "test",
        file: "t.sqlite",
        migrations: MIGS,
        on_open: None,
    };

    #[test]
    fn migrates_once_and_refuses_newer() {
        let t = tempfile::tempdir().expect("tempdir");
        let lock = super::super::lock::acquire(&t.path().join("lock"), BUSY_TIMEOUT).expect("lock");
        let p = t.path().join("t.sqlite");
        assert!(open_read(&p, &SPEC).expect("ok").is_none());
        assert!(!p.exists(), "a read must not create the database");
        let c = open_write(&p, &SPEC, "2026-01-01T00:00:00Z", &lock).expect("open");
        assert_eq!(schema_version(&c).expect("v"), 2);
        c.execute(
            "INSERT INTO schema_migrations VALUES (3, 'future', 'x')",
            [],
        )
        .expect("insert");
        drop(c);
        let e = open_write(&p, &SPEC, "x", &lock).expect_err("refused");
        assert_eq!(e.code(), Code::SchemaTooNew);
        let e = open_read(&p, &SPEC).expect_err("refused");
        assert_eq!(e.code(), Code::SchemaTooNew);
    }
}
