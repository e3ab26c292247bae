//! How the node runs its writes, both as units of work on the store's
//! engine over [`writer::PLAN`] (the SQL is `data::writer`'s):
//!
//! - `Direct` (CLI): one session for the call (the data-directory lock,
//!   one transaction, each write in its own savepoint);
//! - `Group` (`serve`): a `store::Writer` drains a queue of writes, applies
//!   each inside its own savepoint and commits the whole batch with one
//!   transaction (one WAL fsync) — group commit. A write that panics fails
//!   its batch alone (rolled back, `internal_error`) and the writer goes on
//!   with the same kept connection.

use super::Node;
use crate::data::fts;
use crate::data::record::Prepared;
use crate::data::replica;
use crate::data::schema::SPEC;
use crate::data::writer::{self, PLAN};
use crate::error::{Code, Error, Result};
use crate::store::Deferred as Answer;
use crate::store::{Connection, Session, Tail, Tuning, Work, WriterConfig};
use serde_json::{Map, Value};
use std::time::Duration;

/// Most writes folded into one group commit.
pub(crate) const MAX_BATCH: usize = 512;

/// Writes waiting for the group writer at most (besides the batch it is
/// applying); past it a write is answered `busy` at once and nothing of it
/// is applied. A full queue means the writer is behind by two of its
/// largest batches: a client retries shortly.
pub const QUEUE: usize = 1024;

/// One write.
#[derive(Debug)]
pub enum WriteOp {
    /// Insert records (first envelope wins).
    Collect(Vec<Prepared>),
    /// Tombstone a record.
    Tombstone {
        /// Record id.
        record_id: String,
        /// Reason (non-empty) or none.
        reason: Option<String>,
        /// Tombstone time.
        now: String,
    },
    /// Define a collection.
    PutCollection(Map<String, Value>, String),
    /// Import a verified sync page's objects, in order (`data::replica`).
    Replica(Vec<replica::ReplicaOp>),
}

/// The result of one write.
#[derive(Debug)]
pub enum WriteResult {
    /// `(canonical envelope text, inserted)` per item: a new record's
    /// prepared text, or an existing record's stored one.
    Collect(Vec<(String, bool)>),
    /// The (first) tombstone.
    Tombstone(Value),
    /// The stored collection and whether it was created.
    Collection(Value, bool),
    /// What a replica import inserted or found.
    Replica(replica::ReplicaOutcome),
}

/// How the node writes.
pub(crate) enum Writer {
    /// One session per call.
    Direct,
    /// The group-commit writer.
    Group(crate::store::Writer),
}

/// The server writer's automatic checkpoint interval, in WAL pages (SQLite's
/// default is 1,000): a checkpoint runs inside a commit, and one every
/// 16,000 pages copies each hot page (page 1, the FTS structure record, the
/// tables' last leaves) once for far more commits. Measured with
/// `scripts/data-load.rs collect` (8 clients, 10,000 records, alternating
/// runs): 7-12% more collects a second on a quiet disk. The WAL grows to
/// about 64 MiB under load (the bulk writer's bound, [`writer::MAX_WAL_BYTES`]) and
/// is truncated once the writer has been idle for [`IDLE_TRUNCATE`].
const SERVER_CHECKPOINT_PAGES: u32 = 16_000;

/// How long the server writer waits without a write before it checkpoints
/// and truncates a WAL over 1 MiB (so that an idle server's database file
/// is complete and the next process to open it, such as a CLI read after
/// the server stopped, does not rebuild its WAL index from a large WAL).
const IDLE_TRUNCATE: Duration = Duration::from_secs(1);

/// How long a batch waits for more writes when fewer have queued than the
/// previous batch held: the clients that batch answered are usually about
/// to send again, and one commit for all of them beats one each.
const LINGER: Duration = Duration::from_micros(500);

impl Writer {
    /// Starts a group-commit writer for `node`'s data directory whose queue
    /// holds at most `queue` writes.
    pub fn start_group(node: &Node, queue: usize) -> Result<Writer> {
        // The server's writer keeps SQLite's automatic checkpoints, inside
        // the commit, but rare ([`SERVER_CHECKPOINT_PAGES`]), and truncates
        // the WAL once idle: a checkpoint thread (as bulk ingest has)
        // competed with the commits for the disk and the CPU (measured:
        // fewer collects a second, not more). The lock files stay open for
        // the server's life.
        let cfg = WriterConfig {
            queue: queue.max(1),
            max_batch: MAX_BATCH,
            lock_timeout: node.lock_timeout,
            gather_first: 0,
        };
        let tuning = Tuning {
            name: "data-writer",
            linger: LINGER,
            idle_truncate: Some(IDLE_TRUNCATE),
            autocheckpoint: Some(SERVER_CHECKPOINT_PAGES),
        };
        crate::store::Writer::start_tuned(node.dir.root(), node.clock.clone(), cfg, tuning)
            .map(Writer::Group)
    }

    /// Applies one write durably.
    pub fn write(&self, node: &Node, op: WriteOp) -> Result<WriteResult> {
        self.write_many(node, vec![op])
            .pop()
            .unwrap_or_else(|| Err(Error::internal("writer returned no result")))
    }

    /// Queues one write without waiting for it: the [`Answer`] is
    /// answered once its batch is durable (`Group`), or holds the result
    /// already (`Direct`: written now; `Group` with a full queue: `busy`,
    /// nothing queued). Dropping it drops only the answer. Never blocks.
    pub fn write_deferred(&self, node: &Node, op: WriteOp) -> Answer<WriteResult> {
        match self {
            Writer::Direct => Answer::done(self.write(node, op)),
            Writer::Group(w) => match queue(w, op) {
                Ok(a) => a,
                Err(e) => Answer::done(Err(e)),
            },
        }
    }

    /// Applies many writes; with `Direct` they share one transaction.
    pub fn write_many(&self, node: &Node, ops: Vec<WriteOp>) -> Vec<Result<WriteResult>> {
        match self {
            Writer::Direct => {
                let n = ops.len();
                let res = (|| {
                    let mut s = Session::open(
                        node.dir.root(),
                        node.lock_timeout,
                        node.clock.as_ref(),
                        PLAN,
                    )?;
                    let mut out: Vec<Result<WriteResult>> = Vec::with_capacity(n);
                    for op in ops {
                        out.push(apply_in(&mut s, op));
                    }
                    if let Err(e) = s.commit() {
                        for r in &mut out {
                            if r.is_ok() {
                                *r = Err(e.clone());
                            }
                        }
                    }
                    s.close();
                    Ok::<_, Error>(out)
                })();
                match res {
                    Ok(v) => v,
                    Err(e) => (0..n).map(|_| Err(e.clone())).collect(),
                }
            }
            Writer::Group(w) => {
                // Once one write finds the queue full, the later ones are
                // not queued either (each is answered that `busy`).
                let mut refused: Option<Error> = None;
                let mut waits = Vec::with_capacity(ops.len());
                for op in ops {
                    if let Some(e) = &refused {
                        waits.push(Err(e.clone()));
                        continue;
                    }
                    match queue(w, op) {
                        Ok(a) => waits.push(Ok(a)),
                        Err(e) => {
                            waits.push(Err(e.clone()));
                            refused = Some(e);
                        }
                    }
                }
                waits
                    .into_iter()
                    .map(|w| w.and_then(Answer::wait))
                    .collect()
            }
        }
    }
}

/// Queues one write to the group writer without blocking: a full queue is
/// `busy` (with the bound in `details.queue`) and nothing is queued.
fn queue(w: &crate::store::Writer, op: WriteOp) -> Result<Answer<WriteResult>> {
    let after_tail = !matches!(op, WriteOp::Collect(_));
    w.submit_deferred_ordered(PLAN, after_tail, move |work| apply_op(work, op))
        .map_err(|e| {
            if e.code() == Code::Busy {
                let n = e
                    .details()
                    .and_then(|d| d.get("queue"))
                    .cloned()
                    .unwrap_or(Value::Null);
                Error::new(
                    Code::Busy,
                    format!("the data writer's queue is full ({n} writes waiting); retry shortly"),
                )
                .with("queue", n)
            } else {
                e
            }
        })
}

/// One write in `s`'s batch (see [`apply_op`]).
fn apply_in(s: &mut Session, op: WriteOp) -> Result<WriteResult> {
    if matches!(op, WriteOp::Collect(_)) {
        s.apply(|w| apply_op(w, op))
    } else {
        s.apply_after_tail(|w| apply_op(w, op))
    }
}

/// One write, inside its own savepoint of the batch. The FTS rows of
/// collected records are left to the batch's tail ([`FtsRows`]): written
/// after the record rows of every write (FTS5 writes a segment per
/// savepoint otherwise), before the commit; anything but a collect may
/// read or delete FTS rows (a tombstone, a replica import), so it runs
/// after the tail so far is written (`after_tail`). A failure in the tail
/// fails the whole batch.
fn apply_op(work: &Work<'_>, op: WriteOp) -> Result<WriteResult> {
    let conn = work.write(&SPEC)?;
    panic_hook(&op);
    let mut mine = Vec::new();
    let out = apply(conn, op, &mut mine)?;
    if !mine.is_empty() {
        work.tail(|t: &mut FtsRows| t.add(mine))?;
    }
    Ok(out)
}

/// The test hook [`crate::testhooks::data_write_panics`]: a collect of the
/// named record panics inside the writer (what a bug in a write would do),
/// to show that it fails its batch alone.
fn panic_hook(op: &WriteOp) {
    let WriteOp::Collect(items) = op else { return };
    if items
        .iter()
        .any(|p| crate::testhooks::data_write_panics(&p.bytes))
    {
        panic!("a data write panicked (test hook)");
    }
}

/// FTS rows a batch has still to write: (rid, document).
#[derive(Default)]
struct FtsRows {
    rows: Vec<(i64, String)>,
    rids: std::collections::HashSet<i64>,
}

impl FtsRows {
    fn add(&mut self, rows: Vec<(i64, String)>) {
        for r in rows {
            if self.rids.insert(r.0) {
                self.rows.push(r);
            }
        }
    }
}

impl Tail for FtsRows {
    fn flush(&mut self, work: &Work<'_>) -> Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let conn = work.write(&SPEC)?;
        fts::insert(
            conn,
            self.rows.iter().map(|(rid, doc)| (*rid, doc.as_str())),
        )?;
        for (rid, _) in &self.rows {
            fts::insert_doclen(conn, *rid)?;
        }
        self.rows.clear();
        self.rids.clear();
        Ok(())
    }
}

fn apply(conn: &Connection, op: WriteOp, index: &mut Vec<(i64, String)>) -> Result<WriteResult> {
    match op {
        WriteOp::Collect(items) => {
            writer::collect_rows(conn, items, index).map(WriteResult::Collect)
        }
        WriteOp::Tombstone {
            record_id,
            reason,
            now,
        } => writer::tombstone(conn, &record_id, reason, &now).map(WriteResult::Tombstone),
        WriteOp::Replica(ops) => replica::apply(conn, ops).map(WriteResult::Replica),
        WriteOp::PutCollection(def, now) => {
            writer::put_collection(conn, def, &now).map(|(v, c)| WriteResult::Collection(v, c))
        }
    }
}
