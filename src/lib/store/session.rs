//! One unit of workflow work: the data-dir lock, the journal and authority
//! connections opened in the spec's order (lock → journal → authority), one
//! clock reading, and one place that commits.
//!
//! The shape is a batch: [`Session::apply`] runs one mutation inside a
//! savepoint on each open database, releasing both on `Ok` and rolling
//! both back on `Err` (that mutation's error is its own; the mutations
//! before and after it keep their effects). [`Session::commit`] then
//! commits the batch once per database, in the plan's order. A CLI
//! mutation is a batch of one; a group-commit writer runs many. A session
//! dropped without `commit` commits nothing.
//!
//! The journal is the database a refused mutation must not create: when
//! the session opened it for writing and it did not exist, it is removed
//! again unless a commit kept at least one successful mutation.

use super::lock::DirLock;
use super::private_fs;
use super::{Connection, DataDir, DbSpec};
use crate::clock::{Clock, rfc3339_millis, unix_millis};
use crate::error::{Error, Result};
use jiff::Timestamp;
use std::path::PathBuf;
use std::time::Duration;

/// How a session uses one database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Not opened.
    None,
    /// Journal: opened read-only when it exists, never created or
    /// migrated; statements run outside the batch (reads only).
    /// Authority: opened as a writer (migrated) with a deferred batch
    /// transaction, for mutations that only read it under the lock.
    Read,
    /// Opened as a writer (created and migrated when missing) with an
    /// immediate batch transaction. A journal created this way is removed
    /// again unless a commit keeps a successful mutation.
    Write,
}

/// Which database a batch commits first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOrder {
    /// The spec's order: the journal, then the authority.
    JournalFirst,
    /// The authority, then the journal: for a mutation whose authority row
    /// is the record a retry repairs the journal from (a transfer import:
    /// a retained transfer finishes its attempt on replay).
    AuthorityFirst,
}

/// What a session opens and how it commits.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The journal database and how it is used.
    pub journal: (&'static DbSpec, Access),
    /// The authority database and how it is used.
    pub authority: (&'static DbSpec, Access),
    /// Commit order of a batch.
    pub order: CommitOrder,
}

/// One database of a session.
struct Db {
    spec: &'static DbSpec,
    conn: Connection,
    /// Whether the batch transaction is open on it (writers only).
    writer: Option<&'static str>,
    in_batch: bool,
    /// A writer connection (opened by `open_write`) and the file it was
    /// opened on: what [`Kept`] may keep for the next session.
    rw: Option<(u64, u64)>,
}

/// Writer connections a long-lived writer (the `serve` writer thread)
/// keeps from one session to the next, so that a batch neither reopens
/// its databases (schema parse, WAL index mapping, pragmas, migration
/// check) nor loses its cached prepared statements. A kept connection is
/// used again only under the next session's lock and only when its
/// database file is still the one it was opened on (device and inode,
/// under the private-file rule) and its schema cookie has not moved (else
/// the migration check runs again, which refuses a newer schema). A
/// database removed or replaced between sessions (a CLI `init` of a fresh
/// journal, an operator's restore) is opened afresh; one that appeared (a
/// journal a CLI command created) is opened when the next session wants
/// it.
#[derive(Default)]
pub struct Kept {
    dbs: Vec<KeptDb>,
    /// The last WAL truncation attempt per database file (long-lived
    /// writers only; a one-off session's `Kept` is fresh, so it always
    /// tries).
    truncated: Vec<(&'static str, std::time::Instant)>,
}

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kept")
            .field(
                "dbs",
                &self.dbs.iter().map(|d| d.spec.name).collect::<Vec<_>>(),
            )
            .finish()
    }
}

struct KeptDb {
    spec: &'static DbSpec,
    conn: Connection,
    id: (u64, u64),
    cookie: i64,
}

impl Kept {
    /// How often a long-lived writer tries to truncate a large WAL.
    pub const TRUNCATE_EVERY: Duration = Duration::from_secs(1);

    /// Whether a session closing into this `Kept` should try to truncate
    /// `spec`'s WAL now (and if so, notes the attempt).
    fn may_truncate(&mut self, spec: &'static DbSpec) -> bool {
        let now = std::time::Instant::now();
        match self.truncated.iter_mut().find(|(f, _)| *f == spec.file) {
            Some((_, last)) if now.saturating_duration_since(*last) < Self::TRUNCATE_EVERY => false,
            Some((_, last)) => {
                *last = now;
                true
            }
            None => {
                self.truncated.push((spec.file, now));
                true
            }
        }
    }

    /// Databases kept now.
    pub fn len(&self) -> usize {
        self.dbs.len()
    }

    /// Whether nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.dbs.is_empty()
    }

    /// The kept connection of `spec`, when its file at `path` is still the
    /// one it was opened on (`id`: the file's identity now) and its schema
    /// checks still pass.
    fn take(
        &mut self,
        spec: &'static DbSpec,
        id: Option<(u64, u64)>,
        now: &str,
    ) -> Option<(Connection, (u64, u64))> {
        let i = self
            .dbs
            .iter()
            .position(|d| std::ptr::eq(d.spec, spec) || d.spec.file == spec.file)?;
        let d = self.dbs.swap_remove(i);
        if Some(d.id) != id {
            return None;
        }
        let cookie = super::db::schema_cookie(&d.conn).ok()?;
        if cookie != d.cookie {
            // Someone changed the schema: the writer's migration check
            // (fast when current, `schema_too_new` when newer) again; a
            // failure reopens, and the fresh open reports it.
            super::db::migrate(&d.conn, spec, now).ok()?;
        }
        Some((d.conn, d.id))
    }

    fn put(&mut self, spec: &'static DbSpec, conn: Connection, id: (u64, u64)) {
        // Outside any transaction, or not kept.
        if !conn.is_autocommit() && conn.execute_batch("ROLLBACK").is_err() {
            return;
        }
        let Ok(cookie) = super::db::schema_cookie(&conn) else {
            return;
        };
        self.dbs.retain(|d| d.spec.file != spec.file);
        self.dbs.push(KeptDb {
            spec,
            conn,
            id,
            cookie,
        });
    }
}

/// Runs one transaction-control statement through the connection's
/// statement cache: a batch runs several per mutation (savepoint, release)
/// and parsing each again was a measurable share of a `serve` request.
fn control(conn: &Connection, sql: &str) -> Result<()> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

impl Db {
    fn begin(&mut self) -> Result<()> {
        if let Some(begin) = self.writer
            && !self.in_batch
        {
            control(&self.conn, begin)?;
            self.in_batch = true;
        }
        Ok(())
    }

    fn savepoint(&self, sqls: &[&str]) -> Result<()> {
        if self.in_batch {
            for sql in sqls {
                control(&self.conn, sql)?;
            }
        }
        Ok(())
    }

    fn end(&mut self, sql: &str) -> Result<()> {
        if self.in_batch {
            self.in_batch = false;
            control(&self.conn, sql)?;
        }
        Ok(())
    }
}

/// What one mutation of a batch sees: the session's connections and its
/// one instant.
pub struct Work<'s> {
    journal: Option<&'s Connection>,
    authority: Option<&'s Connection>,
    dir: &'s DataDir,
    lock: &'s DirLock,
    now: Timestamp,
}

impl<'s> Work<'s> {
    /// The journal, when the plan opened it and it exists (a read-only
    /// journal may be absent).
    pub fn journal(&self) -> Option<&'s Connection> {
        self.journal
    }

    /// The journal of a plan that opens it for writing.
    pub fn journal_write(&self) -> Result<&'s Connection> {
        self.journal
            .ok_or_else(|| Error::internal("the session did not open the journal for writing"))
    }

    /// The authority.
    pub fn authority(&self) -> Result<&'s Connection> {
        self.authority
            .ok_or_else(|| Error::internal("the session did not open the authority"))
    }

    /// The data directory.
    pub fn dir(&self) -> &'s DataDir {
        self.dir
    }

    /// Proof that the data-dir lock is held.
    pub fn lock(&self) -> &'s DirLock {
        self.lock
    }

    /// The session's instant.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The session's instant in milliseconds since the epoch.
    pub fn now_ms(&self) -> i64 {
        unix_millis(self.now)
    }

    /// The session's instant as RFC 3339 with milliseconds.
    pub fn now_text(&self) -> String {
        rfc3339_millis(self.now)
    }
}

/// See the module documentation.
pub struct Session {
    // Declared before the lock: dropped (closed) while it is still held.
    journal: Option<Db>,
    authority: Option<Db>,
    order: CommitOrder,
    /// The journal file this session created, until a commit keeps it.
    fresh_journal: Option<PathBuf>,
    /// Successful mutations in the open batch.
    applied: usize,
    /// A savepoint could not be rolled back: the batch is unusable.
    broken: bool,
    now: Timestamp,
    dir: DataDir,
    lock: DirLock,
}

const SAVEPOINT: &[&str] = &["SAVEPOINT agent_task_work"];
const RELEASE: &[&str] = &["RELEASE agent_task_work"];
const ROLLBACK_TO: &[&str] = &["ROLLBACK TO agent_task_work", "RELEASE agent_task_work"];

impl Session {
    /// Opens a session on an existing data directory: takes the lock
    /// (waiting at most `timeout`), reads the clock once, then opens the
    /// journal and the authority, in that order.
    pub fn open(
        root: &std::path::Path,
        timeout: Duration,
        clock: &dyn Clock,
        plan: Plan,
    ) -> Result<Session> {
        let dir = DataDir::open(root)?;
        let lock = dir.lock(timeout)?;
        Session::with_lock(dir, lock, clock, plan)
    }

    /// Opens a session under a lock the caller already holds (set-up
    /// code that created the directory under it).
    pub fn with_lock(
        dir: DataDir,
        lock: DirLock,
        clock: &dyn Clock,
        plan: Plan,
    ) -> Result<Session> {
        Session::with_kept(dir, lock, clock, plan, &mut Kept::default())
    }

    /// [`Session::with_lock`] using the writer connections `kept` holds
    /// (see [`Kept`]); [`Session::close_into`] gives them back.
    pub fn with_kept(
        dir: DataDir,
        lock: DirLock,
        clock: &dyn Clock,
        plan: Plan,
        kept: &mut Kept,
    ) -> Result<Session> {
        let now = clock.now();
        let ts = rfc3339_millis(now);
        let mut s = Session {
            journal: None,
            authority: None,
            order: plan.order,
            fresh_journal: None,
            applied: 0,
            broken: false,
            now,
            dir,
            lock,
        };
        let (jspec, jaccess) = plan.journal;
        match jaccess {
            Access::None => {}
            Access::Read => {
                let path = s.dir.root().join(jspec.file);
                let id = private_fs::private_file_id(&path)?;
                s.journal = match kept.take(jspec, id, &ts) {
                    // A kept writer connection reads as well, outside the
                    // batch; an absent journal stays absent.
                    Some((conn, id)) => Some(Db {
                        spec: jspec,
                        conn,
                        writer: None,
                        in_batch: false,
                        rw: Some(id),
                    }),
                    None => s.dir.open_read(jspec)?.map(|conn| Db {
                        spec: jspec,
                        conn,
                        writer: None,
                        in_batch: false,
                        rw: None,
                    }),
                };
            }
            Access::Write => {
                let (conn, id) = s.open_writer(jspec, &ts, kept, true)?;
                s.journal = Some(Db {
                    spec: jspec,
                    conn,
                    writer: Some("BEGIN IMMEDIATE"),
                    in_batch: false,
                    rw: id,
                });
            }
        }
        let (aspec, aaccess) = plan.authority;
        if aaccess != Access::None {
            let (conn, id) = s.open_writer(aspec, &ts, kept, false)?;
            s.authority = Some(Db {
                spec: aspec,
                conn,
                writer: Some(if aaccess == Access::Write {
                    "BEGIN IMMEDIATE"
                } else {
                    "BEGIN DEFERRED"
                }),
                in_batch: false,
                rw: id,
            });
        }
        Ok(s)
    }

    /// A writer connection of `spec`: the kept one when it still names the
    /// file, else a fresh `open_write` (creating and migrating; a journal
    /// created here is removed again unless a commit keeps it). The file's
    /// identity is returned when the connection may be kept.
    fn open_writer(
        &mut self,
        spec: &'static DbSpec,
        ts: &str,
        kept: &mut Kept,
        journal: bool,
    ) -> Result<(Connection, Option<(u64, u64)>)> {
        let path = self.dir.root().join(spec.file);
        let id = private_fs::private_file_id(&path)?;
        if let Some((conn, id)) = kept.take(spec, id, ts) {
            return Ok((conn, Some(id)));
        }
        if journal && id.is_none() {
            self.fresh_journal = Some(path.clone());
        }
        let conn = self.dir.open_write(spec, ts, &self.lock)?;
        // Under the lock nobody else of ours creates or replaces it; the
        // identity after the open is the opened file's.
        Ok((conn, private_fs::private_file_id(&path)?))
    }

    /// The session's instant (read once, at open).
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// The data directory.
    pub fn dir(&self) -> &DataDir {
        &self.dir
    }

    /// Proof that the data-dir lock is held.
    pub fn lock(&self) -> &DirLock {
        &self.lock
    }

    /// Runs one mutation of the batch (starting the batch's transactions
    /// when none is open) inside a savepoint on each open writer: kept on
    /// `Ok`, rolled back on `Err`, which is returned as it is.
    pub fn apply<T>(&mut self, f: impl FnOnce(&Work<'_>) -> Result<T>) -> Result<T> {
        if self.broken {
            return Err(Error::internal(
                "the session's batch could not be rolled back",
            ));
        }
        // Lock order: the journal's transaction first, then the authority's.
        for db in [&mut self.journal, &mut self.authority]
            .into_iter()
            .flatten()
        {
            db.begin()?;
        }
        for db in [&self.journal, &self.authority].into_iter().flatten() {
            if let Err(e) = db.savepoint(SAVEPOINT) {
                self.broken = true;
                return Err(e);
            }
        }
        let work = Work {
            journal: self.journal.as_ref().map(|d| &d.conn),
            authority: self.authority.as_ref().map(|d| &d.conn),
            dir: &self.dir,
            lock: &self.lock,
            now: self.now,
        };
        let out = f(&work);
        let end = if out.is_ok() { RELEASE } else { ROLLBACK_TO };
        for db in [&self.journal, &self.authority].into_iter().flatten() {
            if let Err(e) = db.savepoint(end) {
                self.broken = true;
                return Err(out.err().unwrap_or(e));
            }
        }
        if out.is_ok() {
            self.applied += 1;
        }
        out
    }

    /// Commits the open batch, once per database, in the plan's order.
    /// A batch without a successful mutation is rolled back instead (and
    /// a journal this session created stays uncreated). The session stays
    /// usable for a next batch (a multi-phase mutation such as landing
    /// commits its phases one by one).
    pub fn commit(&mut self) -> Result<()> {
        if self.broken {
            self.rollback();
            return Err(Error::internal(
                "the session's batch could not be rolled back",
            ));
        }
        if self.applied == 0 {
            self.rollback();
            return Ok(());
        }
        self.applied = 0;
        let journal_first = self.order == CommitOrder::JournalFirst;
        for step in 0..2 {
            let is_journal = (step == 0) == journal_first;
            let db = if is_journal {
                &mut self.journal
            } else {
                &mut self.authority
            };
            if let Some(db) = db
                && let Err(e) = db.end("COMMIT")
            {
                self.rollback();
                return Err(e);
            }
            if is_journal {
                // Committed: the journal is kept from here on.
                self.fresh_journal = None;
            }
        }
        Ok(())
    }

    /// Discards the open batch (nothing of it is committed).
    pub fn rollback(&mut self) {
        for db in [&mut self.journal, &mut self.authority]
            .into_iter()
            .flatten()
        {
            let _ = db.end("ROLLBACK");
        }
        self.applied = 0;
        self.broken = false;
    }

    /// Ends the session: rolls back any uncommitted batch, checkpoints a
    /// grown WAL of each writer (best effort) and releases the lock.
    pub fn close(self) {
        self.close_into(&mut Kept::default());
    }

    /// [`Session::close`], giving the writer connections to `kept` for
    /// the next session (a journal this session created and no commit
    /// kept is removed instead, with its connection).
    pub fn close_into(mut self, kept: &mut Kept) {
        self.rollback();
        let fresh = self.fresh_journal.is_some();
        for (is_journal, db) in [(true, self.journal.take()), (false, self.authority.take())] {
            let Some(db) = db else { continue };
            // A long-lived writer tries at most once per
            // [`Kept::TRUNCATE_EVERY`]: while readers keep the WAL busy the
            // attempt cannot truncate and only adds a checkpoint's fsync
            // to the batch (SQLite's own passive checkpoints still bound
            // the WAL meanwhile).
            if db.writer.is_some() && kept.may_truncate(db.spec) {
                let _ = super::db::truncate_large_wal(
                    &db.conn,
                    &self.dir.root().join(db.spec.file),
                    &self.lock,
                );
            }
            if let Some(id) = db.rw
                && !(is_journal && fresh)
            {
                kept.put(db.spec, db.conn, id);
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.rollback();
        // Close the connections before removing a journal nobody kept.
        self.journal = None;
        self.authority = None;
        if let Some(path) = self.fresh_journal.take() {
            let mut removed = false;
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut p = path.clone().into_os_string();
                p.push(suffix);
                removed |= std::fs::remove_file(&p).is_ok();
            }
            if removed && let Some(dir) = path.parent() {
                let _ = private_fs::sync_dir(dir);
            }
        }
    }
}

/// Two one-table databases and a plan over them, for the unit tests of
/// sessions and of the writer.
#[cfg(test)]
pub(crate) mod test_plan {
    use super::{Access, CommitOrder, Plan};
    use crate::store::{DbSpec, Migration};

    pub(crate) static JMIG: &[Migration] = &[Migration {
        version: 1,
        description: "j",
        sql: "CREATE TABLE j(x INTEGER PRIMARY KEY) STRICT;",
    }];
    pub(crate) static AMIG: &[Migration] = &[Migration {
        version: 1,
        description: "a",
        sql: "CREATE TABLE a(x INTEGER PRIMARY KEY) STRICT;",
    }];
    pub(crate) static J: DbSpec = DbSpec {
        name: "j",
        file: "j.sqlite",
        migrations: JMIG,
    };
    pub(crate) static A: DbSpec = DbSpec {
        name: "a",
        file: "a.sqlite",
        migrations: AMIG,
    };
    pub(crate) const PLAN: Plan = Plan {
        journal: (&J, Access::Write),
        authority: (&A, Access::Write),
        order: CommitOrder::JournalFirst,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use crate::error::Code;

    use super::test_plan::{A, J, PLAN};

    fn clock() -> FixedClock {
        FixedClock("2026-12-01T00:00:00Z".parse().expect("instant"))
    }

    fn setup() -> (tempfile::TempDir, PathBuf) {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let (_dir, _lock) = DataDir::create(&root, Duration::from_secs(1)).expect("create");
        (t, root)
    }

    fn insert(w: &Work<'_>, x: i64) -> Result<()> {
        w.journal_write()?
            .execute("INSERT INTO j(x) VALUES (?1)", [x])?;
        w.authority()?
            .execute("INSERT INTO a(x) VALUES (?1)", [x])?;
        Ok(())
    }

    fn rows(root: &std::path::Path, spec: &'static DbSpec) -> Vec<i64> {
        let dir = DataDir::open(root).expect("open");
        let Some(c) = dir.open_read(spec).expect("read") else {
            return Vec::new();
        };
        let table = if spec.name == "j" { "j" } else { "a" };
        c.prepare(&format!("SELECT x FROM {table} ORDER BY x"))
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    #[test]
    fn a_failing_mutation_rolls_back_only_itself() {
        let (_t, root) = setup();
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        s.apply(|w| insert(w, 1)).expect("first");
        let e = s
            .apply(|w| {
                insert(w, 2)?;
                Err::<(), _>(Error::new(Code::Conflict, "refused"))
            })
            .expect_err("second fails");
        assert_eq!(e.code(), Code::Conflict, "the mutation's own error");
        s.apply(|w| insert(w, 3)).expect("third");
        s.commit().expect("commit");
        s.close();
        assert_eq!(rows(&root, &J), vec![1, 3]);
        assert_eq!(rows(&root, &A), vec![1, 3]);
    }

    #[test]
    fn nothing_is_visible_before_commit_and_a_dropped_session_commits_nothing() {
        let (_t, root) = setup();
        // Create both databases with one committed row.
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        s.apply(|w| insert(w, 1)).expect("apply");
        s.commit().expect("commit");
        s.close();
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        s.apply(|w| insert(w, 2)).expect("apply");
        // Another connection (a reader) sees only the committed row.
        assert_eq!(rows(&root, &J), vec![1]);
        assert_eq!(rows(&root, &A), vec![1]);
        drop(s);
        assert_eq!(rows(&root, &J), vec![1]);
        assert_eq!(rows(&root, &A), vec![1]);
    }

    #[test]
    fn a_refused_first_mutation_creates_no_journal() {
        let (_t, root) = setup();
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        let e = s
            .apply(|w| {
                insert(w, 1)?;
                Err::<(), _>(Error::new(Code::Forbidden, "bad token"))
            })
            .expect_err("refused");
        assert_eq!(e.code(), Code::Forbidden);
        s.commit().expect("empty batch");
        s.close();
        for suffix in ["", "-wal", "-shm"] {
            assert!(
                !root.join(format!("j.sqlite{suffix}")).exists(),
                "no journal file {suffix} left behind"
            );
        }
        // Dropped without commit: the same.
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        s.apply(|w| insert(w, 1)).expect("apply");
        drop(s);
        assert!(!root.join("j.sqlite").exists());
    }

    #[test]
    fn a_session_holds_the_lock_and_batches_commit_one_by_one() {
        let (_t, root) = setup();
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        let e = Session::open(&root, Duration::from_millis(10), &clock(), PLAN)
            .err()
            .expect("busy while held");
        assert_eq!(e.code(), Code::Busy);
        s.apply(|w| insert(w, 1)).expect("phase 1");
        s.commit().expect("commit 1");
        assert_eq!(rows(&root, &J), vec![1], "phase 1 durable on its own");
        s.apply(|w| insert(w, 2)).expect("phase 2");
        s.commit().expect("commit 2");
        assert_eq!(s.now(), clock().now(), "one instant for the unit of work");
        s.close();
        assert_eq!(rows(&root, &A), vec![1, 2]);
    }

    #[test]
    fn a_read_journal_is_never_created() {
        let (_t, root) = setup();
        let plan = Plan {
            journal: (&J, Access::Read),
            ..PLAN
        };
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), plan).expect("open");
        s.apply(|w| {
            assert!(w.journal().is_none());
            w.authority()?.execute("INSERT INTO a(x) VALUES (7)", [])?;
            Ok(())
        })
        .expect("apply");
        s.commit().expect("commit");
        s.close();
        assert!(!root.join("j.sqlite").exists());
        assert_eq!(rows(&root, &A), vec![7]);
    }
}
