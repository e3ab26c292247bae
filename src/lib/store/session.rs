//! One unit of work on a data directory: the data-dir lock, the databases
//! its [`Plan`] lists opened in the plan's order, one clock reading, and
//! one place that commits. The store knows no database by name: a plan
//! lists `&'static DbSpec`s, and the unit of work hands out connections by
//! spec ([`Work::db`], [`Work::write`]).
//!
//! The shape is a batch: [`Session::apply`] runs one mutation inside a
//! savepoint on each database in the batch, releasing them on `Ok` and
//! rolling them back on `Err` (that mutation's error is its own; the
//! mutations before and after it keep their effects). [`Session::commit`]
//! then runs the batch's tail (work a mutation left for the end of the
//! batch, [`Work::tail`]) and commits once per database, in the plan's
//! commit order. A CLI mutation is a batch of one; a group-commit writer
//! runs many. A session dropped without `commit` commits nothing.
//!
//! A database opened with [`Access::Write`] that did not exist is removed
//! again unless a commit kept at least one successful mutation: a refused
//! mutation never leaves a new, empty database behind.

use super::lock::DirLock;
use super::private_fs;
use super::{Connection, DataDir, DbSpec};
use crate::clock::{Clock, rfc3339_millis, unix_millis};
use crate::error::{Error, Result};
use jiff::Timestamp;
use std::any::Any;
use std::cell::RefCell;
use std::path::PathBuf;
use std::time::Duration;

/// How a unit of work uses one database. Each value means one thing,
/// whatever the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Opened read-only when it exists (never created or migrated; absent
    /// stays absent: [`Work::db`] is `None`); its statements run outside
    /// the batch (reads only). A kept writer connection of a long-lived
    /// writer serves as well.
    ReadOnly,
    /// Opened as a writer (created and migrated when missing) with a
    /// deferred batch transaction: for mutations that only read it, under
    /// the lock, or write it rarely.
    ReadLocked,
    /// Opened as a writer (created and migrated when missing) with an
    /// immediate batch transaction. A database created this way is removed
    /// again unless a commit keeps a successful mutation.
    Write,
}

/// Which database a batch commits first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitOrder {
    /// The plan's order (the order the databases were opened in).
    Listed,
    /// The reverse of it: for a mutation whose last database's row is the
    /// record a retry repairs the others from.
    Reversed,
}

/// What a unit of work opens and how it commits: its databases, opened in
/// this order (the lock order after the data-dir lock), each with its
/// access, and the batch's commit order.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// The databases, in opening order.
    pub dbs: &'static [(&'static DbSpec, Access)],
    /// Commit order of a batch.
    pub order: CommitOrder,
}

impl Plan {
    /// Whether two plans open the same databases the same way and commit
    /// alike (a writer batches only mutations of one plan).
    pub fn same(&self, other: &Plan) -> bool {
        self.order == other.order
            && self.dbs.len() == other.dbs.len()
            && self
                .dbs
                .iter()
                .zip(other.dbs)
                .all(|(a, b)| std::ptr::eq(a.0, b.0) && a.1 == b.1)
    }
}

/// A writer connection just taken or opened: the connection, the file
/// identity it may be kept under, and the file it created (if any).
type Opened = (Connection, Option<(u64, u64)>, Option<PathBuf>, Cookie);

/// One database of a session.
struct Db {
    spec: &'static DbSpec,
    conn: Connection,
    /// The batch transaction's `BEGIN` (writers only).
    writer: Option<&'static str>,
    /// Whether the batch transaction is open on it.
    in_batch: bool,
    /// A writer connection (opened by `open_write`) and the file it was
    /// opened on: what [`Kept`] may keep for the next session.
    rw: Option<(u64, u64)>,
    /// The file this session created (an [`Access::Write`] database that
    /// did not exist), until a commit keeps it.
    fresh: Option<PathBuf>,
    /// The schema cookie of a kept connection: `Unchecked` as it was kept
    /// (checked inside the batch's first transaction, where reading it
    /// costs no transaction of its own), `Known` once read.
    cookie: Cookie,
}

/// What a session knows of its connection's schema cookie.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cookie {
    /// Not known (a fresh connection): read when the connection is kept.
    Unknown,
    /// The cookie the connection was kept at, not yet checked against the
    /// file.
    Unchecked(i64),
    /// Read from the file in this session.
    Known(i64),
}

/// Writer connections a long-lived writer (a `serve` writer thread)
/// keeps from one session to the next, so that a batch neither reopens
/// its databases (schema parse, WAL index mapping, pragmas, migration
/// check) nor loses its cached prepared statements. A kept connection is
/// used again only under the next session's lock, only when its database
/// file is still the one it was opened on (device and inode, under the
/// private-file rule) and its schema cookie has not moved (else the
/// migration check runs again, which refuses a newer schema), and only
/// when it is out of any transaction. A database removed or replaced
/// between sessions (a CLI `init` of a fresh database, an operator's
/// restore) is opened afresh; one that appeared (a database a CLI command
/// created) is opened when the next session wants it.
#[derive(Default)]
pub struct Kept {
    dbs: Vec<KeptDb>,
    /// The last WAL truncation attempt per database file (long-lived
    /// writers only; a one-off session's `Kept` is fresh, so it always
    /// tries).
    truncated: Vec<(&'static str, std::time::Instant)>,
    /// Whether a session closing into this `Kept` tries to truncate a
    /// large WAL (at most once per [`Kept::TRUNCATE_EVERY`]); a writer that
    /// truncates when idle instead turns it off.
    no_truncate_on_close: bool,
    /// `PRAGMA wal_autocheckpoint` of the writer connections opened for
    /// this `Kept` (`None`: SQLite's default).
    autocheckpoint: Option<u32>,
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
    /// An early writer (`store::readcache`): opened without the lock, by
    /// this command, for this session.
    early: bool,
}

impl Kept {
    /// How often a long-lived writer tries to truncate a large WAL.
    pub const TRUNCATE_EVERY: Duration = Duration::from_secs(1);

    /// A `Kept` whose sessions leave WAL truncation to their writer's
    /// idle moments ([`Kept::truncate_wals`]) and whose fresh writer
    /// connections checkpoint automatically every `autocheckpoint` pages.
    pub(crate) fn idle_truncating(autocheckpoint: Option<u32>) -> Kept {
        Kept {
            no_truncate_on_close: true,
            autocheckpoint,
            ..Kept::default()
        }
    }

    /// Whether a session closing into this `Kept` should try to truncate
    /// `spec`'s WAL now (and if so, notes the attempt).
    fn may_truncate(&mut self, spec: &'static DbSpec) -> bool {
        if self.no_truncate_on_close {
            return false;
        }
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

    /// Under the lock: checkpoints and truncates each kept database's WAL
    /// that has grown past [`super::db::WAL_TRUNCATE_BYTES`], without
    /// waiting for readers. Whether every WAL is small now.
    pub(crate) fn truncate_wals(&self, dir: &DataDir, lock: &DirLock) -> bool {
        let mut small = true;
        for d in &self.dbs {
            let path = dir.root().join(d.spec.file);
            let _ =
                super::db::truncate_large_wal(&d.conn, &path, lock, super::db::WAL_TRUNCATE_BYTES);
            small &= !super::db::wal_is_large(&path);
        }
        small
    }

    /// This thread's early writers of `dir` (`store::readcache`, "Early
    /// writers"), taken out of its read cache.
    fn early(dir: &DataDir) -> Kept {
        Kept {
            dbs: super::readcache::take_writers(dir.root())
                .into_iter()
                .map(|(spec, conn, id, cookie)| KeptDb {
                    spec,
                    conn,
                    id,
                    cookie,
                    early: true,
                })
                .collect(),
            ..Kept::default()
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
    /// With `check_now` the cookie is checked here (a connection that
    /// reads outside any batch transaction); otherwise it is returned
    /// unchecked, for the batch's first transaction to check
    /// ([`Db::check_cookie`]).
    fn take(
        &mut self,
        spec: &'static DbSpec,
        id: Option<(u64, u64)>,
        now: &dyn Fn() -> String,
        check_now: bool,
    ) -> Option<(Connection, (u64, u64), Cookie, bool)> {
        let i = self
            .dbs
            .iter()
            .position(|d| std::ptr::eq(d.spec, spec) || d.spec.file == spec.file)?;
        let d = self.dbs.swap_remove(i);
        if Some(d.id) != id || !d.conn.is_autocommit() {
            return None;
        }
        if !check_now {
            return Some((d.conn, d.id, Cookie::Unchecked(d.cookie), d.early));
        }
        let cookie = super::db::schema_cookie(&d.conn).ok()?;
        if cookie != d.cookie {
            // Someone changed the schema: the writer's migration check
            // (fast when current, `schema_too_new` when newer) again; a
            // failure reopens, and the fresh open reports it.
            super::db::migrate(&d.conn, spec, &now()).ok()?;
            let cookie = super::db::schema_cookie(&d.conn).ok()?;
            return Some((d.conn, d.id, Cookie::Known(cookie), d.early));
        }
        Some((d.conn, d.id, Cookie::Known(cookie), d.early))
    }

    fn put(&mut self, spec: &'static DbSpec, conn: Connection, id: (u64, u64), cookie: Cookie) {
        // Outside any transaction, or not kept (dropped: the next session
        // opens the database afresh).
        if !conn.is_autocommit() {
            let _ = conn.execute_batch("ROLLBACK");
            if !conn.is_autocommit() {
                return;
            }
        }
        // A cookie read in this session (inside its last transaction:
        // nothing committed since) or kept unchecked (no transaction ran,
        // so nothing of ours changed it) is the one to compare next time;
        // a fresh connection's is read now.
        let cookie = match cookie {
            Cookie::Known(c) | Cookie::Unchecked(c) => c,
            Cookie::Unknown => match super::db::schema_cookie(&conn) {
                Ok(c) => c,
                Err(_) => return,
            },
        };
        self.dbs.retain(|d| d.spec.file != spec.file);
        self.dbs.push(KeptDb {
            spec,
            conn,
            id,
            cookie,
            early: false,
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
    fn begin(&mut self, now: Timestamp) -> Result<()> {
        if let Some(begin) = self.writer
            && !self.in_batch
        {
            control(&self.conn, begin)?;
            self.in_batch = true;
            if let Cookie::Unchecked(kept) = self.cookie {
                // Inside the transaction the cookie is read from the page
                // the transaction already holds.
                let now_cookie = match super::db::schema_cookie(&self.conn) {
                    Ok(c) => c,
                    Err(e) => {
                        self.abandon();
                        return Err(e);
                    }
                };
                if now_cookie != kept {
                    // Someone changed the schema since the connection was
                    // kept: the migration check (fast when current,
                    // `schema_too_new` when newer) runs outside the
                    // transaction, which then starts again.
                    self.abandon();
                    super::db::migrate(&self.conn, self.spec, &rfc3339_millis(now))?;
                    control(&self.conn, begin)?;
                    self.in_batch = true;
                    self.cookie = Cookie::Known(super::db::schema_cookie(&self.conn)?);
                } else {
                    self.cookie = Cookie::Known(now_cookie);
                }
            }
        }
        Ok(())
    }

    /// Ends the open batch transaction without a word (on the way to an
    /// error).
    fn abandon(&mut self) {
        self.in_batch = false;
        let _ = control(&self.conn, "ROLLBACK");
    }

    /// Before a commit: the cookie as the commit will leave it (a unit
    /// may have changed the schema), read inside the transaction.
    fn note_cookie(&mut self) {
        if self.rw.is_some() && self.in_batch {
            self.cookie = match super::db::schema_cookie(&self.conn) {
                Ok(c) => Cookie::Known(c),
                Err(_) => Cookie::Unknown,
            };
        }
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

/// Work a batch's mutations leave for the end of the batch, run once
/// before its commit (inside the batch's transactions, outside any
/// mutation's savepoint): for writes that are cheaper together than one
/// per mutation. A failure fails the whole batch (nothing is committed).
pub trait Tail: Any {
    /// Runs the work left so far (and forgets it). Also run by a mutation
    /// that must see it done ([`Work::flush_tail`]).
    fn flush(&mut self, work: &Work<'_>) -> Result<()>;
}

/// What one mutation of a batch sees: the session's connections and its
/// one instant.
pub struct Work<'s> {
    dbs: &'s [Db],
    tail: &'s RefCell<Option<Box<dyn Tail>>>,
    tail_failed: &'s RefCell<Option<Error>>,
    dir: &'s DataDir,
    lock: &'s DirLock,
    now: Timestamp,
}

impl<'s> Work<'s> {
    /// The connection of `spec`, when the plan opened it and it exists (a
    /// read-only database may be absent).
    pub fn db(&self, spec: &DbSpec) -> Option<&'s Connection> {
        let dbs: &'s [Db] = self.dbs;
        dbs.iter()
            .find(|d| std::ptr::eq(d.spec, spec) || d.spec.file == spec.file)
            .map(|d| &d.conn)
    }

    /// The connection of `spec` when the plan opened it as a writer
    /// ([`Access::ReadLocked`] or [`Access::Write`]).
    pub fn write(&self, spec: &DbSpec) -> Result<&'s Connection> {
        let dbs: &'s [Db] = self.dbs;
        dbs.iter()
            .find(|d| {
                d.writer.is_some() && (std::ptr::eq(d.spec, spec) || d.spec.file == spec.file)
            })
            .map(|d| &d.conn)
            .ok_or_else(|| {
                Error::internal(format!(
                    "the unit of work did not open {} for writing",
                    spec.name
                ))
            })
    }

    /// The batch's tail of type `T` (created empty by the first mutation
    /// that asks), for `f` to add to; it runs before the commit.
    pub fn tail<T: Tail + Default, R>(&self, f: impl FnOnce(&mut T) -> R) -> Result<R> {
        let mut slot = self
            .tail
            .try_borrow_mut()
            .map_err(|_| Error::internal("the batch's tail is in use"))?;
        let t = slot.get_or_insert_with(|| Box::new(T::default()));
        let any: &mut dyn Any = &mut **t;
        match any.downcast_mut::<T>() {
            Some(t) => Ok(f(t)),
            None => Err(Error::internal("a batch mixes two kinds of tail")),
        }
    }

    /// Runs the batch's tail now (for a mutation that reads or changes
    /// what the tail writes).
    pub fn flush_tail(&self) -> Result<()> {
        flush_tail(self)
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

fn flush_tail(work: &Work<'_>) -> Result<()> {
    let taken = work
        .tail
        .try_borrow_mut()
        .map_err(|_| Error::internal("the batch's tail is in use"))?
        .take();
    let Some(mut t) = taken else {
        return Ok(());
    };
    let out = t.flush(work);
    if let Err(e) = &out
        && let Ok(mut f) = work.tail_failed.try_borrow_mut()
    {
        // The batch cannot commit without its tail.
        f.get_or_insert_with(|| e.clone());
    }
    // Put back (emptied) so that its allocation serves the rest of the
    // batch.
    if let Ok(mut slot) = work.tail.try_borrow_mut()
        && slot.is_none()
    {
        *slot = Some(t);
    }
    out
}

/// See the module documentation.
pub struct Session {
    // Declared before the lock: dropped (closed) while it is still held.
    dbs: Vec<Db>,
    order: CommitOrder,
    tail: RefCell<Option<Box<dyn Tail>>>,
    /// A failure of the tail: the batch can only be rolled back.
    tail_failed: RefCell<Option<Error>>,
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
    /// plan's databases, in its order.
    pub fn open(
        root: &std::path::Path,
        timeout: Duration,
        clock: &dyn Clock,
        plan: Plan,
    ) -> Result<Session> {
        let dir = DataDir::open(root)?;
        let lock = dir.lock(timeout)?;
        // Early writers this command opened for the session, if any.
        let mut kept = Kept::early(&dir);
        Session::with_kept(dir, lock, clock, plan, &mut kept)
    }

    /// A unit of work on no database: `f` runs once under the data-dir
    /// lock (waiting at most `timeout`), for work on the data directory's
    /// files alone (the CAS).
    pub fn run_locked<T>(
        root: &std::path::Path,
        timeout: Duration,
        f: impl FnOnce(&Work<'_>) -> Result<T>,
    ) -> Result<T> {
        const NONE: Plan = Plan {
            dbs: &[],
            order: CommitOrder::Listed,
        };
        let mut s = Session::open(root, timeout, &crate::clock::SystemClock, NONE)?;
        let out = s.apply(f)?;
        s.commit()?;
        s.close();
        Ok(out)
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
        let ts = || rfc3339_millis(now);
        let mut s = Session {
            dbs: Vec::with_capacity(plan.dbs.len()),
            order: plan.order,
            tail: RefCell::new(None),
            tail_failed: RefCell::new(None),
            applied: 0,
            broken: false,
            now,
            dir,
            lock,
        };
        for &(spec, access) in plan.dbs {
            let db = match access {
                Access::ReadOnly => {
                    let path = s.dir.root().join(spec.file);
                    let id = private_fs::private_file_id(&path)?;
                    match kept.take(spec, id, &ts, true) {
                        // A kept writer connection reads as well, outside
                        // the batch.
                        Some((conn, id, cookie, _)) => Some(Db {
                            spec,
                            conn,
                            writer: None,
                            in_batch: false,
                            rw: Some(id),
                            fresh: None,
                            cookie,
                        }),
                        None => s.dir.open_read(spec)?.map(|conn| Db {
                            spec,
                            conn,
                            writer: None,
                            in_batch: false,
                            rw: None,
                            fresh: None,
                            cookie: Cookie::Unknown,
                        }),
                    }
                }
                Access::ReadLocked | Access::Write => {
                    let write = access == Access::Write;
                    let (conn, id, fresh, cookie) = s.open_writer(spec, &ts, kept, write)?;
                    Some(Db {
                        spec,
                        conn,
                        writer: Some(if write {
                            "BEGIN IMMEDIATE"
                        } else {
                            "BEGIN DEFERRED"
                        }),
                        in_batch: false,
                        rw: id,
                        fresh,
                        cookie,
                    })
                }
            };
            if let Some(db) = db {
                s.dbs.push(db);
            }
        }
        Ok(s)
    }

    /// A writer connection of `spec`: the kept one when it still names the
    /// file, else a fresh `open_write` (creating and migrating; with
    /// `removable`, a database created here is removed again unless a
    /// commit keeps it). The file's identity is returned when the
    /// connection may be kept, and the created file's path.
    fn open_writer(
        &mut self,
        spec: &'static DbSpec,
        ts: &dyn Fn() -> String,
        kept: &mut Kept,
        removable: bool,
    ) -> Result<Opened> {
        let path = self.dir.root().join(spec.file);
        let id = private_fs::private_file_id(&path)?;
        if let Some((conn, id, cookie, early)) = kept.take(spec, id, ts, false) {
            if early {
                // What `open_write` does after opening, under the lock.
                super::db::truncate_large_wal(
                    &conn,
                    &path,
                    &self.lock,
                    super::db::WAL_TRUNCATE_AT_OPEN_BYTES,
                )?;
            }
            return Ok((conn, Some(id), None, cookie));
        }
        let fresh = (removable && id.is_none()).then(|| path.clone());
        let conn = self.dir.open_write(spec, &ts(), &self.lock)?;
        if let Some(pages) = kept.autocheckpoint {
            conn.execute_batch(&format!("PRAGMA wal_autocheckpoint = {pages}"))?;
        }
        // Under the lock nobody else of ours creates or replaces it; the
        // identity after the open is the opened file's.
        Ok((
            conn,
            private_fs::private_file_id(&path)?,
            fresh,
            Cookie::Unknown,
        ))
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

    fn work(&self) -> Work<'_> {
        Work {
            dbs: &self.dbs,
            tail: &self.tail,
            tail_failed: &self.tail_failed,
            dir: &self.dir,
            lock: &self.lock,
            now: self.now,
        }
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
        // Lock order: the plan's order.
        let now = self.now;
        for db in &mut self.dbs {
            db.begin(now)?;
        }
        for db in &self.dbs {
            if let Err(e) = db.savepoint(SAVEPOINT) {
                self.broken = true;
                return Err(e);
            }
        }
        let out = f(&self.work());
        let end = if out.is_ok() { RELEASE } else { ROLLBACK_TO };
        for db in &self.dbs {
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

    /// [`Session::apply`] after running the batch's tail so far (outside
    /// any savepoint: the mutation's own failure does not undo it), for a
    /// mutation that reads or changes what the tail writes. A failure of
    /// the tail fails this mutation and the whole batch.
    pub fn apply_after_tail<T>(&mut self, f: impl FnOnce(&Work<'_>) -> Result<T>) -> Result<T> {
        if self.broken {
            return Err(Error::internal(
                "the session's batch could not be rolled back",
            ));
        }
        if self.tail.borrow().is_some() {
            flush_tail(&self.work())?;
        }
        self.apply(f)
    }

    /// Commits the open batch: runs its tail, then commits once per
    /// database, in the plan's commit order. A batch without a successful
    /// mutation is rolled back instead (and a database this session
    /// created stays uncreated). The session stays usable for a next batch
    /// (a multi-phase mutation such as landing commits its phases one by
    /// one).
    pub fn commit(&mut self) -> Result<()> {
        if self.broken {
            self.rollback();
            return Err(Error::internal(
                "the session's batch could not be rolled back",
            ));
        }
        let failed = self.tail_failed.get_mut().take();
        if let Some(e) = failed {
            self.rollback();
            return Err(e);
        }
        if self.applied == 0 {
            self.rollback();
            return Ok(());
        }
        if let Err(e) = flush_tail(&self.work()) {
            self.rollback();
            return Err(e);
        }
        self.applied = 0;
        let n = self.dbs.len();
        for step in 0..n {
            let i = match self.order {
                CommitOrder::Listed => step,
                CommitOrder::Reversed => n - 1 - step,
            };
            let db = &mut self.dbs[i];
            db.note_cookie();
            if let Err(e) = db.end("COMMIT") {
                self.rollback();
                return Err(e);
            }
            // Committed: kept from here on.
            db.fresh = None;
        }
        Ok(())
    }

    /// Discards the open batch (nothing of it is committed, its tail
    /// included).
    pub fn rollback(&mut self) {
        for db in &mut self.dbs {
            let _ = db.end("ROLLBACK");
        }
        if let Ok(mut t) = self.tail.try_borrow_mut() {
            *t = None;
        }
        if let Ok(mut t) = self.tail_failed.try_borrow_mut() {
            *t = None;
        }
        self.applied = 0;
        self.broken = false;
    }

    /// Whether every connection is out of any transaction (after a
    /// rollback: what a writer checks before keeping them).
    pub fn is_autocommit(&self) -> bool {
        self.dbs.iter().all(|d| d.conn.is_autocommit())
    }

    /// Ends the session: rolls back any uncommitted batch, checkpoints a
    /// grown WAL of each writer (best effort, past
    /// [`super::db::WAL_TRUNCATE_AT_OPEN_BYTES`], as a command's writer
    /// does at open) and releases the lock.
    pub fn close(self) {
        self.close_with(&mut Kept::default(), super::db::WAL_TRUNCATE_AT_OPEN_BYTES);
    }

    /// [`Session::close`], giving the writer connections to `kept` for
    /// the next session (a database this session created and no commit
    /// kept is removed instead, with its connection; a connection still in
    /// a transaction after the rollback is dropped). A long-lived writer's
    /// WAL is truncated past [`super::db::WAL_TRUNCATE_BYTES`].
    pub fn close_into(self, kept: &mut Kept) {
        self.close_with(kept, super::db::WAL_TRUNCATE_BYTES);
    }

    fn close_with(mut self, kept: &mut Kept, wal_limit: u64) {
        self.rollback();
        for db in std::mem::take(&mut self.dbs) {
            if db.fresh.is_some() {
                // Dropped by `Drop` (which removes the file).
                self.dbs.push(db);
                continue;
            }
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
                    wal_limit,
                );
            }
            if let Some(id) = db.rw {
                kept.put(db.spec, db.conn, id, db.cookie);
            }
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.rollback();
        // Close the connections before removing a database nobody kept.
        let fresh: Vec<PathBuf> = std::mem::take(&mut self.dbs)
            .into_iter()
            .filter_map(|d| d.fresh)
            .collect();
        for path in fresh {
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
        on_open: None,
    };
    pub(crate) static A: DbSpec = DbSpec {
        name: "a",
        file: "a.sqlite",
        migrations: AMIG,
        on_open: None,
    };
    pub(crate) const PLAN: Plan = Plan {
        dbs: &[(&J, Access::Write), (&A, Access::Write)],
        order: CommitOrder::Listed,
    };
    /// [`PLAN`] with `J` read-only.
    pub(crate) const READ_PLAN: Plan = Plan {
        dbs: &[(&J, Access::ReadOnly), (&A, Access::Write)],
        order: CommitOrder::Listed,
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use crate::error::Code;

    use super::test_plan::{A, J, PLAN, READ_PLAN};

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
        w.write(&J)?.execute("INSERT INTO j(x) VALUES (?1)", [x])?;
        w.write(&A)?.execute("INSERT INTO a(x) VALUES (?1)", [x])?;
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
        let mut s =
            Session::open(&root, Duration::from_secs(1), &clock(), READ_PLAN).expect("open");
        s.apply(|w| {
            assert!(w.db(&J).is_none());
            w.write(&A)?.execute("INSERT INTO a(x) VALUES (7)", [])?;
            Ok(())
        })
        .expect("apply");
        s.commit().expect("commit");
        s.close();
        assert!(!root.join("j.sqlite").exists());
        assert_eq!(rows(&root, &A), vec![7]);
    }

    fn wal_len(root: &std::path::Path, spec: &DbSpec) -> u64 {
        std::fs::metadata(root.join(format!("{}-wal", spec.file))).map_or(0, |m| m.len())
    }

    /// Commits `n` rows of about 4 KiB each to `J` in one session closed
    /// into `kept`.
    fn grow(root: &std::path::Path, kept: &mut Kept, from: i64, n: i64) {
        let dir = DataDir::open(root).expect("open");
        let lock = dir.lock(Duration::from_secs(1)).expect("lock");
        let mut s = Session::with_kept(dir, lock, &clock(), PLAN, kept).expect("session");
        s.apply(|w| {
            let j = w.write(&J)?;
            j.execute_batch("CREATE TABLE IF NOT EXISTS big(x INTEGER PRIMARY KEY, b BLOB)")?;
            for x in from..from + n {
                j.execute("INSERT INTO big(x, b) VALUES (?1, zeroblob(4000))", [x])?;
            }
            Ok(())
        })
        .expect("rows");
        s.commit().expect("commit");
        s.close_into(kept);
    }

    /// A long-lived writer (`serve`'s, closing into the same `Kept`) lets
    /// the WAL grow to 1 MiB; a command's writer truncates one over
    /// 256 KiB when it opens the database, and a one-off session when it
    /// closes, because the next process rebuilds its WAL index from the
    /// whole WAL.
    #[test]
    fn a_commands_writer_keeps_the_wal_under_256_kib_and_a_long_lived_one_under_1_mib() {
        let (_t, root) = setup();
        let mut kept = Kept::default();
        grow(&root, &mut kept, 0, 100);
        let long_lived = wal_len(&root, &J);
        assert!(
            long_lived > super::super::db::WAL_TRUNCATE_AT_OPEN_BYTES
                && long_lived <= super::super::db::WAL_TRUNCATE_BYTES,
            "{long_lived}"
        );
        drop(kept);
        // A command's session: its open checkpoints and truncates the WAL.
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        assert_eq!(wal_len(&root, &J), 0, "truncated at open");
        s.apply(|w| insert(w, 1)).expect("insert");
        s.commit().expect("commit");
        drop(s);
        // A one-off session that grew it past 256 KiB truncates it when it closes.
        let mut s = Session::open(&root, Duration::from_secs(1), &clock(), PLAN).expect("open");
        s.apply(|w| {
            let j = w.write(&J)?;
            for x in 2000..2100 {
                j.execute("INSERT INTO big(x, b) VALUES (?1, zeroblob(4000))", [x])?;
            }
            Ok(())
        })
        .expect("rows");
        s.commit().expect("commit");
        assert!(wal_len(&root, &J) > super::super::db::WAL_TRUNCATE_AT_OPEN_BYTES);
        s.close();
        assert_eq!(wal_len(&root, &J), 0, "truncated at close");
    }
}
