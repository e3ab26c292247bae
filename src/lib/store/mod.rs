//! The store: the only module that touches SQLite, the advisory lock or blob
//! files.
//!
//! A [`DataDir`] is an owner-private directory (0700, files 0600, no
//! symlinks). Mutations are units of work ([`Session`], and the group
//! commit of a [`Writer`]): they take the advisory lock with a bounded
//! wait, then open the databases their [`Plan`] lists, in its order
//! (creating and migrating those they write). Reads use
//! [`DataDir::open_read`], which never creates or migrates anything. Lock
//! order, always: data-dir lock → the plan's databases, in the plan's
//! order. The store knows no database by name: its owners pass their
//! [`DbSpec`]s.

mod blob;
mod cas;
mod db;
mod hashed;
mod lock;
mod migrate;
pub mod private_fs;
mod readcache;
mod s3;
mod session;
mod staging;
mod writer;

pub use blob::{BlobBatch, BlobStore, LOCAL_KIND, ListedBlob};
pub use cas::{Cas, CasBatch, CasStats, PutOutcome, TEMP_SWEEP_AGE};
pub use db::{DbSpec, Migration, Opened};
#[cfg(test)]
pub(crate) use db::{in_memory, raw_file};
pub use lock::{DEFAULT_TIMEOUT, DirLock, KeptLock, Waiter};
pub use migrate::{
    DRAINING_FILE, MigrateOutput, MigrateTo, Step as MigrateStep, migrate as migrate_blobs,
};
pub use readcache::{MAX_PER_THREAD, ReadConn, enable_read_cache, enable_read_cache_for_writes};
pub use rusqlite::{
    CachedStatement, Connection, MAIN_DB, OptionalExtension, Transaction, TransactionBehavior,
    params,
};
/// The decoders of an S3 server's answers (for the fuzz target `s3_answer`).
pub use s3::{
    ListPage as S3ListPage, MAX_ANSWER_BYTES as S3_MAX_LIST_PAGE,
    MAX_ERROR_BODY as S3_MAX_ERROR_BODY, error_code as s3_error_code, list_page as s3_list_page,
};
pub use session::{Access, CommitOrder, Kept, Plan, Session, Tail, Work};
pub use staging::Staging;
pub use writer::{Deferred, Tuning, Writer, WriterConfig, WriterStats};

use crate::error::{Code, Error, Result};
use private_fs::Kind;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Name of the lock file inside the data directory.
pub const LOCK_FILE: &str = "lock";
/// Name of the CAS directory inside the data directory.
pub const CAS_DIR: &str = "cas";

/// An owner-private data directory.
#[derive(Debug, Clone)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// Creates the data directory if needed (parent must exist) with its lock
    /// file and CAS skeleton, and checks everything is owner-private. Takes
    /// the lock while it works and returns it.
    pub fn create(root: &Path, timeout: Duration) -> Result<(DataDir, DirLock)> {
        let root = absolute(root)?;
        if let Some(parent) = root.parent()
            && !parent.as_os_str().is_empty()
            && !parent.is_dir()
        {
            return Err(Error::new(
                Code::NotFound,
                format!("parent directory {} does not exist", parent.display()),
            ));
        }
        private_fs::ensure_private_dir(&root)?;
        let dir = DataDir { root };
        let lock = dir.lock(timeout)?;
        dir.cas().ensure_dirs()?;
        Ok((dir, lock))
    }

    /// Opens an existing data directory; a missing one is `not_initialized`
    /// and is never created.
    pub fn open(root: &Path) -> Result<DataDir> {
        let root = absolute(root)?;
        if !private_fs::check_private(&root, Kind::Dir)? {
            return Err(Error::new(
                Code::NotInitialized,
                format!("no data directory at {}", root.display()),
            )
            .with("data_dir", root.display().to_string())
            .with("fix", "run `agent-task init` first"));
        }
        let dir = DataDir { root };
        if !private_fs::check_private(&dir.root.join(LOCK_FILE), Kind::File)? {
            return Err(Error::new(
                Code::NotInitialized,
                format!(
                    "{} is not an initialised agent-task data directory (no lock file)",
                    dir.root.display()
                ),
            )
            .with("data_dir", dir.root.display().to_string())
            .with("fix", "run `agent-task init` first"));
        }
        Ok(dir)
    }

    /// The directory's absolute path.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Takes the exclusive advisory lock, waiting at most `timeout`, then
    /// fails with `busy`. Only writers take it; holding it, this also sweeps
    /// the CAS's orphan temp files older than [`cas::TEMP_SWEEP_AGE`] (best
    /// effort: a failed sweep never fails the write).
    pub fn lock(&self, timeout: Duration) -> Result<DirLock> {
        self.lock_with(&mut lock::Waiter::default(), timeout)
    }

    /// [`DataDir::lock`] through a long-lived [`lock::Waiter`] (the `serve`
    /// writer's), which continues a wait that ran out instead of starting
    /// another.
    pub fn lock_with(&self, waiter: &mut lock::Waiter, timeout: Duration) -> Result<DirLock> {
        let lock = waiter.acquire(&self.root.join(LOCK_FILE), timeout)?;
        let _ = self
            .cas()
            .sweep_temp(&lock, std::time::SystemTime::now(), cas::TEMP_SWEEP_AGE);
        Ok(lock)
    }

    /// The lock of a long-lived writer that takes it once per batch (see
    /// [`KeptDirLock`]).
    pub fn keep_lock(&self) -> KeptDirLock {
        KeptDirLock {
            dir: self.clone(),
            lock: KeptLock::new(&self.root.join(LOCK_FILE)),
            swept: None,
            sweep_every: TEMP_SWEEP_EVERY,
        }
    }

    /// The local content-addressed store (`cas/`) itself. Callers that
    /// read or write objects go through [`DataDir::blobs`]; this is for the
    /// local housekeeping (temp sweeps, skeleton) and tests.
    pub fn cas(&self) -> Cas {
        Cas::new(self.root.join(CAS_DIR))
    }

    /// The data directory's blob store: every object the product keeps is
    /// put and read through it (`store::blob`). The local CAS unless the
    /// directory holds a `blob-store.json` naming an S3-compatible bucket
    /// (`docs/blob-store.md`); a broken configuration is `config`, never a
    /// silent fall back to the local CAS.
    pub fn blobs(&self) -> Result<std::sync::Arc<dyn BlobStore>> {
        match s3::load(&self.root, self.root.join(CAS_DIR).join("tmp"))? {
            Some(bucket) => Ok(std::sync::Arc::new(bucket)),
            None => Ok(std::sync::Arc::new(self.cas())),
        }
    }

    /// The bytes of the blob-store configuration (`blob-store.json`;
    /// `None`: the local CAS), to tell whether the store a unit of work
    /// finds under the lock is the one a put before the lock wrote to.
    pub fn blob_config(&self) -> Result<Option<Vec<u8>>> {
        migrate::config_bytes(&self.root.join(s3::CONFIG_FILE))
    }

    /// The staging area of remote checkpoints (always local, beside the
    /// CAS: `cas/staging/`).
    pub fn staging(&self) -> Staging {
        self.cas().staging()
    }

    /// Creates a private subdirectory (for example `data/`), under the lock.
    pub fn ensure_subdir(&self, rel: &str, _lock: &DirLock) -> Result<PathBuf> {
        let p = self.root.join(rel);
        private_fs::ensure_private_dir(&p)?;
        Ok(p)
    }

    /// Opens a database for writing, creating and migrating it.
    pub fn open_write(&self, spec: &DbSpec, now: &str, lock: &DirLock) -> Result<Connection> {
        let path = self.root.join(spec.file);
        if let Some(parent) = path.parent() {
            private_fs::ensure_private_dir(parent)?;
        }
        db::open_write(&path, spec, now, lock)
    }

    /// A guard for a database this write may create: when the database did
    /// not exist, dropping the guard without [`NewDbGuard::keep`] removes
    /// the files the write created (database, `-wal`, `-shm`), so a refused
    /// mutation never leaves a new, empty database behind. Create it after
    /// taking the lock and before [`DataDir::open_write`], call `keep` right
    /// after the first successful commit; its connections must be dropped
    /// before it (declare them after it).
    pub fn new_db_guard<'a>(
        &'a self,
        spec: &'static DbSpec,
        lock: &'a DirLock,
    ) -> Result<NewDbGuard<'a>> {
        let path = self.root.join(spec.file);
        Ok(NewDbGuard {
            fresh: !private_fs::check_private(&path, Kind::File)?,
            path,
            _lock: lock,
        })
    }

    /// Opens an existing database read-only; `None` when it does not exist.
    pub fn open_read(&self, spec: &DbSpec) -> Result<Option<Connection>> {
        db::open_read(&self.root.join(spec.file), spec)
    }

    /// Opens an existing database read-only through this thread's read
    /// cache (when [`enable_read_cache`] turned it on; `store::readcache`
    /// says what each take checks); `None` when it does not exist.
    pub fn open_read_cached(&self, spec: &'static DbSpec) -> Result<Option<ReadConn>> {
        readcache::open(&self.root.join(spec.file), spec, false)
    }

    /// [`DataDir::open_read_cached`], in a read transaction: every read
    /// through it until it is dropped sees one snapshot, the one in which
    /// a kept connection's schema was checked (one read transaction for
    /// the check and the reads, not two).
    pub fn open_read_snapshot(&self, spec: &'static DbSpec) -> Result<Option<ReadConn>> {
        readcache::open(&self.root.join(spec.file), spec, true)
    }

    /// The schema version of a database file without any check beyond
    /// permissions (`None` when absent). Used by `info`.
    #[allow(clippy::disallowed_methods)] // `store` owns SQLite opens.
    pub fn schema_version(&self, spec: &DbSpec) -> Result<Option<u32>> {
        let path = self.root.join(spec.file);
        if !private_fs::check_private(&path, Kind::File)? {
            return Ok(None);
        }
        let conn = Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NOFOLLOW,
        )?;
        db::schema_version(&conn).map(Some)
    }
}

/// How often a [`KeptDirLock`] sweeps the CAS's orphan temp files: with
/// [`cas::TEMP_SWEEP_AGE`] (an hour) this bounds an orphan's life to about
/// 70 minutes under a writer that never stops.
pub const TEMP_SWEEP_EVERY: Duration = Duration::from_secs(600);

/// The data-directory lock of a long-lived writer (the `serve` data
/// writer, a bulk ingest), taken and released once per batch: the lock
/// files stay open ([`KeptLock`]), and the CAS temp sweep that
/// [`DataDir::lock`] does on every acquisition runs at the first one and
/// then at most once per [`TEMP_SWEEP_EVERY`]. The sweep still removes
/// only files older than [`cas::TEMP_SWEEP_AGE`], so a put in progress
/// (whose temp file a batch in flight is about to name) is never swept;
/// sweeping less often only lets a crashed put's orphan stay longer.
#[derive(Debug)]
pub struct KeptDirLock {
    dir: DataDir,
    lock: KeptLock,
    swept: Option<std::time::Instant>,
    sweep_every: Duration,
}

impl KeptDirLock {
    /// Takes the lock, waiting at most `timeout` (see [`DataDir::lock`]).
    pub fn acquire(&mut self, timeout: Duration) -> Result<DirLock> {
        let lock = self.lock.acquire(timeout)?;
        let now = std::time::Instant::now();
        if self
            .swept
            .is_none_or(|t| now.saturating_duration_since(t) >= self.sweep_every)
        {
            // Best effort, as in `DataDir::lock`.
            let _ =
                self.dir
                    .cas()
                    .sweep_temp(&lock, std::time::SystemTime::now(), cas::TEMP_SWEEP_AGE);
            self.swept = Some(now);
        }
        Ok(lock)
    }

    /// Changes the sweep interval (tests).
    #[cfg(test)]
    pub(crate) fn set_sweep_every(&mut self, every: Duration) {
        self.sweep_every = every;
    }
}

/// See [`DataDir::new_db_guard`].
#[must_use = "a dropped guard removes the new database at once"]
#[derive(Debug)]
pub struct NewDbGuard<'a> {
    path: PathBuf,
    fresh: bool,
    _lock: &'a DirLock,
}

impl NewDbGuard<'_> {
    /// The write committed: keep the database.
    pub fn keep(mut self) {
        self.fresh = false;
    }
}

impl Drop for NewDbGuard<'_> {
    fn drop(&mut self) {
        if !self.fresh {
            return;
        }
        let mut removed = false;
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut p = self.path.clone().into_os_string();
            p.push(suffix);
            removed |= std::fs::remove_file(&p).is_ok();
        }
        if removed && let Some(dir) = self.path.parent() {
            let _ = private_fs::sync_dir(dir);
        }
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io("resolve", p, e))
}

/// Row count of every ordinary table of an open database (for `info`).
pub fn row_counts(conn: &Connection) -> Result<std::collections::BTreeMap<String, u64>> {
    let tables: Vec<String> = conn
        .prepare(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%' \
             AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name",
        )?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    let mut out = std::collections::BTreeMap::new();
    for t in tables {
        let q = format!("SELECT count(*) FROM \"{}\"", t.replace('"', "\"\""));
        let n: i64 = conn.query_row(&q, [], |r| r.get(0))?;
        out.insert(t, n.max(0) as u64);
    }
    Ok(out)
}

/// An exclusive advisory lock on the private lock file `path` (created
/// 0600 when missing), waiting at most `timeout`, then `busy`: what keeps
/// two processes off one collector execution at once.
pub fn lock_file(path: &Path, timeout: Duration) -> Result<DirLock> {
    lock::acquire(path, timeout)
}

/// An exclusive advisory lock on the private lock file `path` (created
/// 0600 when missing), taken without waiting: `Ok(None)` when another
/// process holds it.
pub fn try_lock_file(path: &Path) -> Result<Option<DirLock>> {
    lock::try_lock_file(path)
}

/// An exclusive advisory lock on the owner-private directory `path`
/// itself, taken without waiting: `Ok(None)` when another process holds
/// it. What keeps two `collect`s off one collector execution at once.
pub fn try_lock_dir(path: &Path) -> Result<Option<DirLock>> {
    lock::try_lock_dir(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept lock sweeps the CAS's old temp files at its first
    /// acquisition and then only once per interval; a young temp file (a
    /// put in progress) is never swept.
    #[test]
    fn a_kept_lock_sweeps_at_the_start_and_then_per_interval() {
        let t = tempfile::tempdir().expect("tempdir");
        let (dir, lock) =
            DataDir::create(&t.path().join("d"), Duration::from_secs(5)).expect("dir");
        drop(lock);
        let tmp = dir.root().join(CAS_DIR).join("tmp");
        let plant = |name: &str, age_s: u64| {
            let p = tmp.join(name);
            let f = std::fs::File::create(&p).expect("create");
            f.set_modified(std::time::SystemTime::now() - Duration::from_secs(age_s))
                .expect("mtime");
            p
        };
        let orphan = plant("put-orphan", 7200);
        let young = plant("put-young", 5);
        let mut kept = dir.keep_lock();
        drop(kept.acquire(Duration::from_secs(5)).expect("first"));
        assert!(!orphan.exists(), "swept at the first acquisition");
        assert!(young.exists());
        let later = plant("put-later", 7200);
        drop(kept.acquire(Duration::from_secs(5)).expect("second"));
        assert!(later.exists(), "not swept again within the interval");
        kept.set_sweep_every(Duration::ZERO);
        drop(kept.acquire(Duration::from_secs(5)).expect("third"));
        assert!(!later.exists(), "swept once the interval passed");
        assert!(young.exists(), "a put in progress is never swept");
    }
}
