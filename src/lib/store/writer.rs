//! A group-commit writer of one data directory (under `serve`: the
//! workflow's mutations, and the data node's writes, each with a writer
//! of its own).
//!
//! One thread owns the writing: callers [`Writer::submit`] a mutation (a
//! closure over a [`Work`]) with its session [`Plan`] into a bounded queue
//! and block until it is durable. The thread takes the oldest queued
//! mutation, drains whatever else is queued *now* with the same plan (at
//! most [`WriterConfig::max_batch`]; it never waits to fill a batch), opens
//! one [`Session`] for them (data-dir lock → the plan's databases, one
//! clock reading), applies each in its own savepoint with its own outcome,
//! commits once per database in the plan's order, releases the lock, and
//! only then answers every caller of the batch. So:
//!
//! - a mutation that fails fails alone with its own error; its neighbours
//!   keep their effects;
//! - a commit that fails fails every mutation of the batch that had
//!   succeeded (none of them is durable), with the commit's error;
//! - the lock is released between batches, and the next batch waits for it
//!   behind any other process already waiting (`store::lock`'s queue), so
//!   a CLI command beside `serve` is not starved, nor is `serve`;
//! - a full queue answers `busy` at once ([`WriterConfig::queue`]): memory
//!   is bounded, and the caller retries;
//! - a mutation that panics fails its whole batch with `internal_error`
//!   (the batch is rolled back; nothing of it is durable) and the writer
//!   goes on: the panic is caught around each mutation, the batch rolled
//!   back, and a connection still in a transaction after that is dropped
//!   (the next batch reopens it) while the others are kept.
//!
//! The writer knows no database: a mutation's [`Plan`] lists what its
//! batch opens. The workflow's writer and the data node's group commit
//! are two writers of this kind, tuned apart ([`Tuning`]).
//!
//! Mutations with another plan wait in arrival order for a later batch.
//! A mutation runs on the writer thread, so it must not do slow work:
//! validate (signatures, records, replays) before submitting.

use super::session::{Kept, Plan, Session, Work};
use super::{DataDir, KeptDirLock};
use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::thread::JoinHandle;
use std::time::Duration;

/// Bounds of a writer.
#[derive(Debug, Clone, Copy)]
pub struct WriterConfig {
    /// Mutations queued (waiting for a batch) at most; past it `busy`.
    pub queue: usize,
    /// Mutations in one batch at most.
    pub max_batch: usize,
    /// The bounded wait for the data-dir lock, per batch.
    pub lock_timeout: Duration,
    /// Test hook (set only by `serve`, from `crate::testhooks::writer_gather`,
    /// 0 without `test-hooks`): the first batch waits, at most
    /// 60 s, until this many mutations have arrived, so that a test knows
    /// they share one batch. 0: never wait (always outside tests).
    pub gather_first: usize,
}

/// How a writer batches and keeps its WAL small, beyond its bounds.
#[derive(Debug, Clone, Copy)]
pub struct Tuning {
    /// The writer thread's name.
    pub name: &'static str,
    /// How long a batch waits for more mutations when fewer have queued
    /// than the previous batch held (the callers that batch answered are
    /// usually about to send again, and one commit for all of them beats
    /// one each). Zero: never wait.
    pub linger: Duration,
    /// `None`: each batch's close tries to truncate a large WAL, at most
    /// once a second. `Some(idle)`: only once the writer has had nothing
    /// to do for `idle` (a writer under steady load leaves the WAL to
    /// SQLite's automatic checkpoints).
    pub idle_truncate: Option<Duration>,
    /// `PRAGMA wal_autocheckpoint` of the writer's connections (`None`:
    /// SQLite's default).
    pub autocheckpoint: Option<u32>,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            name: "agent-task-writer",
            linger: Duration::ZERO,
            idle_truncate: None,
            autocheckpoint: None,
        }
    }
}

impl Default for WriterConfig {
    fn default() -> Self {
        WriterConfig {
            queue: 1024,
            max_batch: 256,
            lock_timeout: super::DEFAULT_TIMEOUT,
            gather_first: 0,
        }
    }
}

/// Counters of a writer (for the benchmark and tests).
#[derive(Debug, Default)]
pub struct WriterStats {
    batches: AtomicU64,
    mutations: AtomicU64,
    largest: AtomicU64,
    queued: AtomicU64,
}

impl WriterStats {
    /// Batches committed (or attempted), mutations applied in them, and the
    /// largest batch.
    pub fn snapshot(&self) -> (u64, u64, u64) {
        (
            self.batches.load(Ordering::Relaxed),
            self.mutations.load(Ordering::Relaxed),
            self.largest.load(Ordering::Relaxed),
        )
    }

    /// Mutations waiting in the queue now.
    pub fn queued(&self) -> u64 {
        self.queued.load(Ordering::Relaxed)
    }

    /// The counters as one JSON object, for an operator (`serve
    /// --writer-stats-ms`): batches, mutations, their mean batch size, the
    /// largest batch and the queue depth now.
    pub fn json(&self) -> serde_json::Value {
        let (batches, mutations, largest) = self.snapshot();
        let mean = if batches == 0 {
            0.0
        } else {
            (mutations as f64 / batches as f64 * 100.0).round() / 100.0
        };
        serde_json::json!({
            "batches": batches, "mutations": mutations, "mean_batch": mean,
            "largest_batch": largest, "queued": self.queued(),
        })
    }
}

/// One queued mutation.
trait Job: Send {
    fn plan(&self) -> Plan;
    /// Runs the mutation in the batch's session, keeping its outcome;
    /// `false` when it panicked (caught here).
    fn apply(&mut self, s: &mut Session) -> bool;
    /// Answers the caller: its own outcome, or `batch` when the batch as a
    /// whole failed (open, commit, panic) and its own outcome was not an
    /// error of its own.
    fn finish(self: Box<Self>, batch: Option<&Error>);
    /// Forgets its outcome (the batch was rolled back as a whole).
    fn discard(&mut self);
}

struct Call<T, F> {
    plan: Plan,
    /// Run after the batch's tail so far ([`Session::apply_after_tail`]).
    after_tail: bool,
    f: Option<F>,
    out: Option<Result<T>>,
    answer: Answer<T>,
}

/// Where a mutation's outcome goes once its batch is durable: a caller
/// blocked in [`Writer::submit`], or a [`Deferred`] awaited elsewhere.
enum Answer<T> {
    Blocking(SyncSender<Result<T>>),
    Deferred(tokio::sync::oneshot::Sender<Result<T>>),
}

impl<T> Answer<T> {
    /// Sends the outcome; a caller that went away (a dropped receiver, a
    /// client that disconnected) needs no answer, and its mutation stays
    /// applied.
    fn send(self, out: Result<T>) {
        match self {
            Answer::Blocking(tx) => {
                let _ = tx.send(out);
            }
            Answer::Deferred(tx) => {
                let _ = tx.send(out);
            }
        }
    }
}

/// The outcome of a mutation queued with [`Writer::submit_deferred`] (or
/// one already known: [`Deferred::done`]), delivered once its batch is
/// durable. Await it on an async runtime ([`Deferred::answer`]) so that
/// no thread waits for the batch, or [`Deferred::wait`] for it on a thread
/// that may block. Dropping it drops only the answer: the mutation, once
/// queued, is applied (or fails) exactly as if it were awaited.
#[derive(Debug)]
pub struct Deferred<T> {
    rx: tokio::sync::oneshot::Receiver<Result<T>>,
}

impl<T> Deferred<T> {
    /// An outcome known already (no writer, or a mutation run in place).
    pub fn done(out: Result<T>) -> Deferred<T> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let _ = tx.send(out);
        Deferred { rx }
    }

    /// The outcome another writer (the data node's) sends on `rx`.
    pub fn from_receiver(rx: tokio::sync::oneshot::Receiver<Result<T>>) -> Deferred<T> {
        Deferred { rx }
    }

    /// The outcome, awaited without holding a thread.
    pub async fn answer(self) -> Result<T> {
        self.rx
            .await
            .unwrap_or_else(|_| Err(Error::internal("the writer stopped before answering")))
    }

    /// The outcome, blocking this thread until it is known (an outcome
    /// known already returns at once). Not for an async runtime's threads.
    pub fn wait(mut self) -> Result<T> {
        use tokio::sync::oneshot::error::TryRecvError;
        match self.rx.try_recv() {
            Ok(out) => out,
            Err(TryRecvError::Closed) => {
                Err(Error::internal("the writer stopped before answering"))
            }
            Err(TryRecvError::Empty) => self
                .rx
                .blocking_recv()
                .unwrap_or_else(|_| Err(Error::internal("the writer stopped before answering"))),
        }
    }
}

impl<T, F> Job for Call<T, F>
where
    T: Send + 'static,
    F: FnOnce(&Work<'_>) -> Result<T> + Send + 'static,
{
    fn plan(&self) -> Plan {
        self.plan
    }

    fn apply(&mut self, s: &mut Session) -> bool {
        if let Some(f) = self.f.take() {
            let after_tail = self.after_tail;
            let run = AssertUnwindSafe(|| {
                if after_tail {
                    s.apply_after_tail(f)
                } else {
                    s.apply(f)
                }
            });
            match catch_unwind(run) {
                Ok(out) => self.out = Some(out),
                Err(_) => return false,
            }
        }
        true
    }

    fn finish(self: Box<Self>, batch: Option<&Error>) {
        let out = match (self.out, batch) {
            (Some(Err(own)), _) => Err(own),
            (_, Some(e)) => Err(e.clone()),
            (Some(ok), None) => ok,
            (None, None) => Err(Error::internal("the mutation was not run")),
        };
        self.answer.send(out);
    }

    fn discard(&mut self) {
        self.out = None;
    }
}

/// See the module documentation.
pub struct Writer {
    root: PathBuf,
    queue_len: usize,
    tx: Option<SyncSender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    stats: Arc<WriterStats>,
}

impl std::fmt::Debug for Writer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer").field("root", &self.root).finish()
    }
}

impl Writer {
    /// Starts the writer thread of the data directory at `root` (each
    /// batch opens it, so a directory that is not initialised yet fails
    /// its mutations, not the start).
    pub fn start(root: &Path, clock: Arc<dyn Clock>, cfg: WriterConfig) -> Result<Writer> {
        Writer::start_tuned(root, clock, cfg, Tuning::default())
    }

    /// [`Writer::start`] tuned (see [`Tuning`]).
    pub fn start_tuned(
        root: &Path,
        clock: Arc<dyn Clock>,
        cfg: WriterConfig,
        tuning: Tuning,
    ) -> Result<Writer> {
        let (queue, max_batch) = (cfg.queue.max(1), cfg.max_batch.max(1));
        let (tx, rx) = mpsc::sync_channel::<Box<dyn Job>>(queue);
        let stats = Arc::new(WriterStats::default());
        let st = stats.clone();
        let r = root.to_owned();
        let timeout = cfg.lock_timeout;
        let thread = std::thread::Builder::new()
            .name(tuning.name.into())
            .spawn(move || {
                let gather = cfg.gather_first.min(max_batch);
                let limits = Limits {
                    timeout,
                    max_batch,
                    tuning,
                };
                run(rx, &r, clock.as_ref(), limits, gather, &st)
            })
            .map_err(|e| Error::internal(format!("cannot start the writer: {e}")))?;
        Ok(Writer {
            root: root.to_owned(),
            queue_len: queue,
            tx: Some(tx),
            thread: Some(thread),
            stats,
        })
    }

    /// The data directory it writes.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Its counters.
    pub fn stats(&self) -> &WriterStats {
        &self.stats
    }

    /// Its counters, shared (for a thread that reports them).
    pub fn stats_handle(&self) -> Arc<WriterStats> {
        self.stats.clone()
    }

    /// Queues one mutation and waits until its batch is durable; its own
    /// outcome, or the batch's failure. A full queue is `busy` at once.
    pub fn submit<T, F>(&self, plan: Plan, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&Work<'_>) -> Result<T> + Send + 'static,
    {
        let (answer, rx) = mpsc::sync_channel(1);
        self.enqueue(plan, false, f, Answer::Blocking(answer))?;
        rx.recv()
            .unwrap_or_else(|_| Err(Error::internal("the writer stopped before answering")))
    }

    /// Queues one mutation like [`Writer::submit`] without waiting for it:
    /// the returned [`Deferred`] is answered by the writer thread once the
    /// batch is durable (its own outcome, or the batch's failure). A full
    /// queue is `busy` at once, and nothing was queued. Dropping the
    /// [`Deferred`] does not withdraw the mutation.
    pub fn submit_deferred<T, F>(&self, plan: Plan, f: F) -> Result<Deferred<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Work<'_>) -> Result<T> + Send + 'static,
    {
        self.submit_deferred_ordered(plan, false, f)
    }

    /// [`Writer::submit_deferred`]; with `after_tail`, the mutation runs
    /// after its batch's tail so far ([`Session::apply_after_tail`]).
    pub fn submit_deferred_ordered<T, F>(
        &self,
        plan: Plan,
        after_tail: bool,
        f: F,
    ) -> Result<Deferred<T>>
    where
        T: Send + 'static,
        F: FnOnce(&Work<'_>) -> Result<T> + Send + 'static,
    {
        let (answer, rx) = tokio::sync::oneshot::channel();
        self.enqueue(plan, after_tail, f, Answer::Deferred(answer))?;
        Ok(Deferred { rx })
    }

    fn enqueue<T, F>(&self, plan: Plan, after_tail: bool, f: F, answer: Answer<T>) -> Result<()>
    where
        T: Send + 'static,
        F: FnOnce(&Work<'_>) -> Result<T> + Send + 'static,
    {
        let job = Box::new(Call {
            plan,
            after_tail,
            f: Some(f),
            out: None,
            answer,
        });
        let tx = self
            .tx
            .as_ref()
            .ok_or_else(|| Error::internal("the writer has stopped"))?;
        // Counted before it is sent so that the writer's count-down never
        // runs ahead of it.
        self.stats.queued.fetch_add(1, Ordering::Relaxed);
        let sent = tx.try_send(job);
        if sent.is_err() {
            self.stats.queued.fetch_sub(1, Ordering::Relaxed);
        }
        match sent {
            Ok(()) => {}
            Err(TrySendError::Full(_)) => {
                return Err(Error::new(
                    Code::Busy,
                    format!(
                        "the writer's queue is full ({} mutations waiting); retry shortly",
                        self.queue_len
                    ),
                )
                .with("queue", self.queue_len as u64));
            }
            Err(TrySendError::Disconnected(_)) => {
                return Err(Error::internal("the writer has stopped"));
            }
        }
        Ok(())
    }
}

impl Drop for Writer {
    /// Stops taking mutations, lets the thread finish what is queued, and
    /// waits for it.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn same_plan(a: &Plan, b: &Plan) -> bool {
    a.same(b)
}

/// A writer thread's bounds and tuning.
struct Limits {
    timeout: Duration,
    max_batch: usize,
    tuning: Tuning,
}

/// How a batch ended (short of an error of its own).
enum BatchEnd {
    Committed,
    /// A mutation panicked: the batch was rolled back.
    Panicked,
}

fn run(
    rx: Receiver<Box<dyn Job>>,
    root: &Path,
    clock: &dyn Clock,
    limits: Limits,
    mut gather: usize,
    stats: &WriterStats,
) {
    let Limits {
        timeout,
        max_batch,
        tuning,
    } = limits;
    // The lock's files, kept open between batches (taken and released
    // per batch; the CAS temp sweep runs once per interval, not per
    // batch): opened at the first batch that finds the directory.
    let mut lock: Option<KeptDirLock> = None;
    // The writer connections, kept from batch to batch.
    let mut kept = if tuning.idle_truncate.is_some() {
        Kept::idle_truncating(tuning.autocheckpoint)
    } else {
        Kept::default()
    };
    // Batch sizes, for the linger; and whether a batch ran since the
    // last idle truncation.
    let mut previous = 1usize;
    let mut wrote = false;
    // Jobs taken off the queue whose plan differs from the batch's, oldest
    // first; at most `max_batch` of them.
    let mut later: VecDeque<Box<dyn Job>> = VecDeque::new();
    loop {
        let first = match later.pop_front() {
            Some(j) => j,
            None => match (tuning.idle_truncate, wrote) {
                (Some(idle), true) => match rx.recv_timeout(idle) {
                    Ok(j) => {
                        stats.queued.fetch_sub(1, Ordering::Relaxed);
                        j
                    }
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        // Not settled (a reader was in the WAL, or the
                        // lock was held): again after the next idle spell.
                        wrote = !settle(root, &mut lock, &kept, timeout);
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => return,
                },
                _ => match rx.recv() {
                    Ok(j) => {
                        stats.queued.fetch_sub(1, Ordering::Relaxed);
                        j
                    }
                    Err(_) => return,
                },
            },
        };
        wrote = true;
        let plan = first.plan();
        let mut batch = vec![first];
        if gather > 1 {
            let end = std::time::Instant::now() + Duration::from_secs(60);
            while batch.len() < gather {
                let left = end.saturating_duration_since(std::time::Instant::now());
                let Ok(j) = rx.recv_timeout(left) else { break };
                stats.queued.fetch_sub(1, Ordering::Relaxed);
                if same_plan(&j.plan(), &plan) {
                    batch.push(j);
                } else {
                    later.push_back(j);
                }
            }
        }
        gather = 0;
        let mut keep = VecDeque::new();
        while let Some(j) = later.pop_front() {
            if batch.len() < max_batch && same_plan(&j.plan(), &plan) {
                batch.push(j);
            } else {
                keep.push_back(j);
            }
        }
        later = keep;
        let linger = std::time::Instant::now() + tuning.linger;
        while batch.len() < max_batch && later.len() < max_batch {
            let j = match rx.try_recv() {
                Ok(j) => j,
                Err(mpsc::TryRecvError::Disconnected) => break,
                Err(mpsc::TryRecvError::Empty) => {
                    let left = linger.saturating_duration_since(std::time::Instant::now());
                    if batch.len() >= previous || left.is_zero() {
                        break;
                    }
                    match rx.recv_timeout(left) {
                        Ok(j) => j,
                        Err(_) => break,
                    }
                }
            };
            stats.queued.fetch_sub(1, Ordering::Relaxed);
            if same_plan(&j.plan(), &plan) {
                batch.push(j);
            } else {
                later.push_back(j);
            }
        }
        previous = batch.len();
        let n = batch.len() as u64;
        let outcome = catch_unwind(AssertUnwindSafe(|| {
            commit_batch(root, clock, &mut lock, &mut kept, timeout, plan, &mut batch)
        }));
        stats.batches.fetch_add(1, Ordering::Relaxed);
        stats.mutations.fetch_add(n, Ordering::Relaxed);
        stats.largest.fetch_max(n, Ordering::Relaxed);
        match outcome {
            Ok(Ok(BatchEnd::Committed)) => {
                for j in batch {
                    j.finish(None);
                }
            }
            Ok(Err(e)) => {
                for j in batch {
                    j.finish(Some(&e));
                }
            }
            Ok(Ok(BatchEnd::Panicked)) | Err(_) => {
                // A panic outside the mutations (caught around the whole
                // batch) dropped the session and its connections: the
                // next batch opens them afresh.
                let e =
                    Error::internal("a mutation of the batch panicked; the batch was rolled back");
                for mut j in batch {
                    // Its own outcome is not durable either.
                    j.discard();
                    j.finish(Some(&e));
                }
            }
        }
    }
}

/// An idle writer's WAL truncation: under the data-dir lock, each kept
/// connection's WAL over 1 MiB is checkpointed and truncated without
/// waiting for readers. Whether every WAL is small now.
fn settle(root: &Path, keeper: &mut Option<KeptDirLock>, kept: &Kept, timeout: Duration) -> bool {
    if kept.is_empty() {
        return true;
    }
    let Ok(dir) = DataDir::open(root) else {
        return false;
    };
    let Ok(lock) = keeper
        .get_or_insert_with(|| dir.keep_lock())
        .acquire(timeout)
    else {
        return false;
    };
    kept.truncate_wals(&dir, &lock)
}

/// One batch: one session, each job in its savepoint, one commit per
/// database. Dropping the session (any early return, a panic) commits
/// nothing. A job that panics (caught around it) ends the batch: the
/// batch is rolled back and the connections kept only when they are out
/// of any transaction.
/// The lock is taken per batch (and released after it) through the kept
/// lock files (`DataDir::keep_lock`: its wait queues fairly behind other
/// processes and continues a wait that ran out); the connections are
/// `kept` between batches (`Session::with_kept`), dropped when the batch
/// fails (the next opens afresh).
fn commit_batch(
    root: &Path,
    clock: &dyn Clock,
    keeper: &mut Option<KeptDirLock>,
    kept: &mut Kept,
    timeout: Duration,
    plan: Plan,
    batch: &mut [Box<dyn Job>],
) -> Result<BatchEnd> {
    let dir = DataDir::open(root)?;
    let lock = keeper
        .get_or_insert_with(|| dir.keep_lock())
        .acquire(timeout)?;
    let mut session = Session::with_kept(dir, lock, clock, plan, kept)?;
    for j in batch.iter_mut() {
        if !j.apply(&mut session) {
            session.rollback();
            // `close_into` keeps only connections out of any transaction.
            session.close_into(kept);
            return Ok(BatchEnd::Panicked);
        }
    }
    session.commit()?;
    session.close_into(kept);
    Ok(BatchEnd::Committed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use crate::store::DbSpec;

    use crate::store::session::test_plan::{A, J, PLAN, READ_PLAN};

    fn setup(queue: usize) -> (tempfile::TempDir, PathBuf, Arc<Writer>) {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        drop(DataDir::create(&root, Duration::from_secs(1)).expect("create"));
        let clock: Arc<dyn Clock> =
            Arc::new(FixedClock("2026-12-01T00:00:00Z".parse().expect("instant")));
        let cfg = WriterConfig {
            queue,
            max_batch: 64,
            lock_timeout: Duration::from_secs(30),
            gather_first: 0,
        };
        let w = Arc::new(Writer::start(&root, clock, cfg).expect("start"));
        (t, root, w)
    }

    fn insert(w: &Work<'_>, x: i64) -> Result<i64> {
        w.write(&J)?.execute("INSERT INTO j(x) VALUES (?1)", [x])?;
        w.write(&A)?.execute("INSERT INTO a(x) VALUES (?1)", [x])?;
        Ok(x)
    }

    fn rows(root: &Path, spec: &'static DbSpec, table: &str) -> Vec<i64> {
        let dir = DataDir::open(root).expect("open");
        let Some(c) = dir.open_read(spec).expect("read") else {
            return Vec::new();
        };
        c.prepare(&format!("SELECT x FROM {table} ORDER BY x"))
            .expect("prepare")
            .query_map([], |r| r.get(0))
            .expect("query")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
    }

    /// Submits a job that blocks the writer until the returned sender is
    /// used (or dropped), and waits until the writer is running it.
    fn block(w: &Arc<Writer>) -> (mpsc::Sender<()>, std::thread::JoinHandle<Result<i64>>) {
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let (running_tx, running_rx) = mpsc::channel::<()>();
        let w2 = w.clone();
        let h = std::thread::spawn(move || {
            w2.submit(PLAN, move |work| {
                let _ = running_tx.send(());
                let _ = go_rx.recv();
                insert(work, 0)
            })
        });
        running_rx.recv().expect("the blocker runs");
        (go_tx, h)
    }

    fn wait_queued(w: &Writer, n: u64) {
        while w.stats().queued() < n {
            std::thread::yield_now();
        }
    }

    #[test]
    fn a_failing_mutation_in_a_batch_fails_alone_and_the_batch_commits_once() {
        let (_t, root, w) = setup(16);
        let (go, blocker) = block(&w);
        let (b0, _, _) = w.stats().snapshot();
        let mut hs = Vec::new();
        for x in 1..=5i64 {
            let w2 = w.clone();
            hs.push(std::thread::spawn(move || {
                w2.submit(PLAN, move |work| {
                    let v = insert(work, x)?;
                    if x == 3 {
                        return Err(Error::new(Code::Conflict, "three is refused"));
                    }
                    Ok(v)
                })
            }));
            // One at a time, so the batch's order is known.
            wait_queued(&w, x as u64);
        }
        go.send(()).expect("go");
        assert_eq!(blocker.join().expect("join").expect("blocker"), 0);
        let outs: Vec<Result<i64>> = hs.into_iter().map(|h| h.join().expect("join")).collect();
        for (i, o) in outs.iter().enumerate() {
            let x = i as i64 + 1;
            if x == 3 {
                let e = o.as_ref().expect_err("three fails");
                assert_eq!(e.code(), Code::Conflict, "its own error");
            } else {
                assert_eq!(*o.as_ref().expect("ok"), x);
            }
        }
        let (b1, m1, largest) = w.stats().snapshot();
        assert_eq!(b1 - b0, 2, "the blocker's batch, then one batch of five");
        assert_eq!(m1, 6);
        assert_eq!(largest, 5);
        assert_eq!(rows(&root, &J, "j"), vec![0, 1, 2, 4, 5]);
        assert_eq!(rows(&root, &A, "a"), vec![0, 1, 2, 4, 5]);
    }

    #[test]
    fn deferred_mutations_share_one_batch_each_answered_with_its_own_outcome() {
        let (_t, root, w) = setup(16);
        let (go, blocker) = block(&w);
        let (b0, m0, _) = w.stats().snapshot();
        // Queued from this one thread: no thread waits for any of them.
        let mut pending = Vec::new();
        for x in 1..=8i64 {
            pending.push(
                w.submit_deferred(PLAN, move |work| {
                    let v = insert(work, x)?;
                    if x % 4 == 0 {
                        return Err(Error::new(Code::Conflict, format!("{x} is refused")));
                    }
                    Ok(v)
                })
                .expect("queued"),
            );
        }
        assert_eq!(w.stats().queued(), 8);
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        for (i, d) in pending.into_iter().enumerate() {
            let x = i as i64 + 1;
            match d.wait() {
                Ok(v) => {
                    assert_ne!(x % 4, 0, "{x} should have failed");
                    assert_eq!(v, x);
                }
                Err(e) => {
                    assert_eq!(x % 4, 0, "{x} failed: {e}");
                    assert_eq!(e.code(), Code::Conflict, "its own error");
                    assert!(e.to_string().contains(&format!("{x} is refused")), "{e}");
                }
            }
        }
        let (b1, m1, largest) = w.stats().snapshot();
        assert_eq!(b1 - b0, 2, "the blocker's batch, then one batch of eight");
        assert_eq!(m1 - m0, 9);
        assert_eq!(largest, 8);
        assert_eq!(rows(&root, &J, "j"), vec![0, 1, 2, 3, 5, 6, 7]);
        assert_eq!(rows(&root, &A, "a"), vec![0, 1, 2, 3, 5, 6, 7]);
    }

    #[test]
    fn a_deferred_answer_is_awaited_on_a_runtime() {
        let (_t, root, w) = setup(16);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let d = w
            .submit_deferred(PLAN, |work| insert(work, 7))
            .expect("queued");
        assert_eq!(rt.block_on(d.answer()).expect("answered"), 7);
        assert_eq!(rows(&root, &J, "j"), vec![7]);
    }

    #[test]
    fn a_full_queue_is_busy_at_once_for_a_deferred_mutation_too() {
        let (_t, root, w) = setup(1);
        let (go, blocker) = block(&w);
        let queued = w
            .submit_deferred(PLAN, |work| insert(work, 1))
            .expect("queued");
        let e = w
            .submit_deferred(PLAN, |work| insert(work, 2))
            .expect_err("the queue is full");
        assert_eq!(e.code(), Code::Busy);
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        assert_eq!(queued.wait().expect("queued one"), 1);
        assert_eq!(
            rows(&root, &J, "j"),
            vec![0, 1],
            "the refused one changed nothing"
        );
    }

    #[test]
    fn a_dropped_answer_neither_withdraws_its_mutation_nor_wedges_the_writer() {
        let (_t, root, w) = setup(16);
        let (go, blocker) = block(&w);
        // The caller goes away (a client that disconnected) while queued.
        drop(
            w.submit_deferred(PLAN, |work| insert(work, 1))
                .expect("queued"),
        );
        let kept = w
            .submit_deferred(PLAN, |work| insert(work, 2))
            .expect("queued");
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        assert_eq!(kept.wait().expect("answered"), 2);
        // Dropped after its batch, too.
        drop(
            w.submit_deferred(PLAN, |work| insert(work, 3))
                .expect("queued"),
        );
        assert_eq!(w.submit(PLAN, |work| insert(work, 4)).expect("goes on"), 4);
        assert_eq!(
            rows(&root, &J, "j"),
            vec![0, 1, 2, 3, 4],
            "applied once each, answered or not"
        );
    }

    #[test]
    fn a_panicking_deferred_mutation_fails_its_batch_and_the_writer_goes_on() {
        let (_t, root, w) = setup(16);
        let (go, blocker) = block(&w);
        let ok = w
            .submit_deferred(PLAN, |work| insert(work, 1))
            .expect("queued");
        let bad = w
            .submit_deferred(PLAN, |work| -> Result<i64> {
                insert(work, 2)?;
                panic!("a bug in a mutation")
            })
            .expect("queued");
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        assert_eq!(ok.wait().expect_err("rolled back").code(), Code::Internal);
        assert_eq!(bad.wait().expect_err("panicked").code(), Code::Internal);
        assert_eq!(w.submit(PLAN, |work| insert(work, 3)).expect("goes on"), 3);
        assert_eq!(rows(&root, &J, "j"), vec![0, 3]);
    }

    #[test]
    fn a_full_queue_is_busy_at_once() {
        let (_t, root, w) = setup(1);
        let (go, blocker) = block(&w);
        // Filled synchronously: a blocking submit on another thread could
        // reach the queue after this thread's, which would then be the one
        // queued and wait for a batch the blocker never lets start.
        let queued = w
            .submit_deferred(PLAN, |work| insert(work, 1))
            .expect("queued");
        let e = w
            .submit(PLAN, |work| insert(work, 2))
            .expect_err("the queue is full");
        assert_eq!(e.code(), Code::Busy);
        assert_eq!(
            e.details().and_then(|d| d.get("queue")),
            Some(&serde_json::json!(1))
        );
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        assert_eq!(queued.wait().expect("queued one"), 1);
        assert_eq!(
            rows(&root, &J, "j"),
            vec![0, 1],
            "the refused one changed nothing"
        );
    }

    #[test]
    fn a_panicking_mutation_fails_its_batch_and_the_writer_goes_on() {
        let (_t, root, w) = setup(16);
        let (go, blocker) = block(&w);
        let w2 = w.clone();
        let ok = std::thread::spawn(move || w2.submit(PLAN, |work| insert(work, 1)));
        wait_queued(&w, 1);
        let w3 = w.clone();
        let bad = std::thread::spawn(move || {
            w3.submit(PLAN, |work| -> Result<i64> {
                insert(work, 2)?;
                panic!("a bug in a mutation")
            })
        });
        wait_queued(&w, 2);
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        assert_eq!(
            ok.join().expect("join").expect_err("rolled back").code(),
            Code::Internal
        );
        assert_eq!(
            bad.join().expect("join").expect_err("panicked").code(),
            Code::Internal
        );
        assert_eq!(w.submit(PLAN, |work| insert(work, 3)).expect("goes on"), 3);
        assert_eq!(rows(&root, &J, "j"), vec![0, 3]);
    }

    /// A mutation that panics in the middle of a batch (after writing)
    /// fails that batch; the writer survives with its connections out of
    /// any transaction and keeps them (a connection's own temp table, made
    /// by the batch before, is still there), and the next unit commits.
    #[test]
    fn a_panic_mid_batch_rolls_back_and_the_next_unit_commits_on_the_kept_connection() {
        let (_t, root, w) = setup(16);
        w.submit(PLAN, |work| {
            work.write(&J)?
                .execute_batch("CREATE TEMP TABLE this_connection(x INTEGER)")?;
            insert(work, 1)
        })
        .expect("first");
        let (go, blocker) = block(&w);
        let before = w
            .submit_deferred(PLAN, |work| insert(work, 2))
            .expect("queued");
        let bad = w
            .submit_deferred(PLAN, |work| -> Result<i64> {
                insert(work, 3)?;
                panic!("a bug in the middle of a batch")
            })
            .expect("queued");
        let after = w
            .submit_deferred(PLAN, |work| insert(work, 4))
            .expect("queued");
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        for d in [before, bad, after] {
            assert_eq!(d.wait().expect_err("rolled back").code(), Code::Internal);
        }
        let (same, autocommit) = w
            .submit(PLAN, |work| {
                let j = work.write(&J)?;
                let same = j
                    .query_row(
                        "SELECT count(*) FROM temp.sqlite_master WHERE name = 'this_connection'",
                        [],
                        |r| r.get::<_, i64>(0),
                    )
                    .map_err(Error::from)?;
                // Inside the batch now; out of it between batches (the
                // writer checked before keeping it).
                let in_batch = !j.is_autocommit();
                insert(work, 5)?;
                Ok((same == 1, in_batch))
            })
            .expect("the next unit commits");
        assert!(same, "the kept connection serves the next batch");
        assert!(autocommit, "the next batch opened its own transaction");
        assert_eq!(rows(&root, &J, "j"), vec![0, 1, 5]);
        assert_eq!(rows(&root, &A, "a"), vec![0, 1, 5]);
    }

    #[test]
    fn mutations_of_another_plan_wait_for_a_batch_of_their_own() {
        let (_t, root, w) = setup(16);
        let (go, blocker) = block(&w);
        let w2 = w.clone();
        let other = std::thread::spawn(move || {
            w2.submit(READ_PLAN, |work| {
                work.write(&A)?.execute("INSERT INTO a(x) VALUES (9)", [])?;
                Ok(work.db(&J).is_some())
            })
        });
        wait_queued(&w, 1);
        let w3 = w.clone();
        let same = std::thread::spawn(move || w3.submit(PLAN, |work| insert(work, 1)));
        wait_queued(&w, 2);
        go.send(()).expect("go");
        blocker.join().expect("join").expect("blocker");
        assert!(
            other.join().expect("join").expect("other plan"),
            "journal exists"
        );
        same.join().expect("join").expect("same plan");
        assert_eq!(rows(&root, &A, "a"), vec![0, 1, 9]);
        assert_eq!(
            w.stats().snapshot().0,
            3,
            "blocker, then each plan its own batch"
        );
    }

    /// What a CLI process beside `serve` does between two batches: its
    /// own session under the lock.
    fn cli_session(root: &Path, f: impl FnOnce(&Work<'_>) -> Result<()>) {
        let clock = FixedClock("2026-12-01T00:00:00Z".parse().expect("instant"));
        let mut s = Session::open(root, Duration::from_secs(30), &clock, PLAN).expect("session");
        s.apply(f).expect("apply");
        s.commit().expect("commit");
        s.close();
    }

    fn remove_db(root: &Path, spec: &DbSpec) {
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(root.join(format!("{}{suffix}", spec.file)));
        }
    }

    #[test]
    fn kept_connections_follow_a_journal_replaced_between_batches() {
        let (_t, root, w) = setup(16);
        assert_eq!(w.submit(PLAN, |work| insert(work, 1)).expect("first"), 1);
        // Between batches a CLI process (under the lock) replaces the
        // journal with a fresh one: the writer must write the new file,
        // not the unlinked one its kept connection still has open.
        {
            let dir = DataDir::open(&root).expect("open");
            let _lock = dir.lock(Duration::from_secs(30)).expect("lock");
            remove_db(&root, &J);
        }
        cli_session(&root, |work| {
            work.write(&J)?
                .execute("INSERT INTO j(x) VALUES (100)", [])?;
            Ok(())
        });
        assert_eq!(w.submit(PLAN, |work| insert(work, 2)).expect("second"), 2);
        assert_eq!(rows(&root, &J, "j"), vec![2, 100], "the new journal");
        assert_eq!(rows(&root, &A, "a"), vec![1, 2], "the kept authority");
    }

    #[test]
    fn a_journal_created_between_batches_is_opened_by_the_next_batch() {
        let (_t, root, w) = setup(16);
        let count = |work: &Work<'_>| -> Result<Option<i64>> {
            work.write(&A)?
                .execute("INSERT OR IGNORE INTO a(x) VALUES (0)", [])?;
            match work.db(&J) {
                None => Ok(None),
                Some(j) => Ok(Some(
                    j.query_row("SELECT count(*) FROM j", [], |r| r.get(0))?,
                )),
            }
        };
        assert_eq!(w.submit(READ_PLAN, count).expect("absent"), None);
        assert!(
            !root.join(J.file).exists(),
            "a read journal is never created"
        );
        cli_session(&root, |work| insert(work, 5).map(drop));
        assert_eq!(w.submit(READ_PLAN, count).expect("present"), Some(1));
        // And a write batch after it writes the same file.
        assert_eq!(w.submit(PLAN, |work| insert(work, 6)).expect("write"), 6);
        assert_eq!(w.submit(READ_PLAN, count).expect("present"), Some(2));
    }

    #[test]
    fn a_newer_schema_written_between_batches_is_refused_by_the_kept_connection() {
        let (_t, root, w) = setup(16);
        assert_eq!(w.submit(PLAN, |work| insert(work, 1)).expect("first"), 1);
        {
            let dir = DataDir::open(&root).expect("open");
            let _lock = dir.lock(Duration::from_secs(30)).expect("lock");
            let c = crate::store::raw_file(&root.join(A.file));
            c.execute_batch(
                "CREATE TABLE later(x INTEGER); \
                 INSERT INTO schema_migrations VALUES (99, 'future', 't');",
            )
            .expect("a newer binary's migration");
        }
        let e = w
            .submit(PLAN, |work| insert(work, 2))
            .expect_err("newer than this binary");
        assert_eq!(e.code(), Code::SchemaTooNew);
        assert_eq!(rows(&root, &J, "j"), vec![1], "nothing applied");
    }

    #[test]
    fn a_compatible_schema_change_between_batches_is_checked_inside_the_next_batch() {
        // The kept connection's cookie is compared inside the batch's own
        // transaction; a change of the current schema (an index, say)
        // passes the migration check again and the batch commits, and a
        // refused one leaves the next batch able to run.
        let (_t, root, w) = setup(16);
        assert_eq!(w.submit(PLAN, |work| insert(work, 1)).expect("first"), 1);
        {
            let dir = DataDir::open(&root).expect("open");
            let _lock = dir.lock(Duration::from_secs(30)).expect("lock");
            let c = crate::store::raw_file(&root.join(J.file));
            c.execute_batch("CREATE INDEX j_x ON j(x)")
                .expect("a schema change of the same version");
        }
        assert_eq!(w.submit(PLAN, |work| insert(work, 2)).expect("second"), 2);
        assert_eq!(w.submit(PLAN, |work| insert(work, 3)).expect("third"), 3);
        assert_eq!(rows(&root, &J, "j"), vec![1, 2, 3]);
    }

    #[test]
    fn a_batch_waits_for_the_lock_and_fails_busy_when_it_is_held() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let (dir, held) = DataDir::create(&root, Duration::from_secs(1)).expect("create");
        let clock: Arc<dyn Clock> =
            Arc::new(FixedClock("2026-12-01T00:00:00Z".parse().expect("instant")));
        let cfg = WriterConfig {
            lock_timeout: Duration::from_millis(20),
            ..WriterConfig::default()
        };
        let w = Writer::start(dir.root(), clock, cfg).expect("start");
        let e = w
            .submit(PLAN, |work| insert(work, 1))
            .expect_err("the lock is held");
        assert_eq!(e.code(), Code::Busy);
        drop(held);
        assert_eq!(w.submit(PLAN, |work| insert(work, 2)).expect("free"), 2);
        assert_eq!(rows(&root, &J, "j"), vec![2]);
    }
}
