//! Bulk ingest (`data collect --jsonl`): one collector input object per
//! line, streamed through a three-stage pipeline.
//!
//! - A reading thread splits the input into lines and hands them on a few
//!   at a time (at most [`CHUNK_LINES`] lines or [`CHUNK_BYTES`] bytes, or
//!   as many as have arrived when the input has no more ready).
//! - The calling thread prepares them (JSON parsing, the collector,
//!   hashing, record ids, canonical envelopes, index documents) and hands
//!   batches to the writer over a channel that holds at most one waiting
//!   batch, so memory stays bounded whatever the input size. A batch is
//!   complete at its line count (the first [`FIRST_BATCH_LINES`], each
//!   next one four times the last, up to `batch_lines`, so the writer starts
//!   early), at [`MAX_BATCH_BYTES`], at the end of
//!   the input, or once its first line has waited `flush` and no more
//!   input is ready (a slow producer,
//!   such as a pipe that writes a line now and then, has each line
//!   acknowledged within about `flush`, not only after a full batch).
//! - The writer thread stores any large content (fsynced CAS objects, in
//!   parallel), then takes the data-directory lock and commits the batch's
//!   rows in **one** transaction (one WAL fsync), with statements prepared
//!   once for the whole run. After each commit it reports the last line the
//!   commit covers: that report is the acknowledgement. A SIGKILL at any
//!   point leaves every acknowledged line stored; rerunning the same input
//!   stores each line exactly once (record ids do not depend on time).
//!
//! Failures are per line: a line that is not a JSON object, that the
//! collector refuses or that names a missing superseded record is reported
//! with its (1-based, physical) line number and stores nothing, and the
//! other lines of its batch commit. A failure of the store itself (I/O,
//! database) rolls back the batch in progress and stops the ingest with a
//! typed error that says which line the last commit covered.

use super::Node;
use super::collect::{CollectTarget, check_supersedes};
use crate::clock::rfc3339_millis;
use crate::data::record::Prepared;
use crate::data::schema::SPEC;
use crate::data::syntax::check_collection_id;
use crate::data::writer::{self, Inserted};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, Kept, KeptDirLock, Session};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Longest accepted input line.
pub const MAX_LINE_BYTES: u64 = 32 << 20;
/// A batch is cut early once its prepared records (content, canonical
/// envelopes, index documents) reach this many bytes, whatever its line
/// count: with one batch being read, one waiting and one being written,
/// this bounds the pipeline's memory.
pub const MAX_BATCH_BYTES: usize = 16 << 20;
/// Line errors kept for the summary (the count is always exact).
pub const MAX_LISTED_ERRORS: usize = 100;
/// Lines the reading thread hands on at once, at most.
pub const CHUNK_LINES: usize = 256;
/// Bytes of lines the reading thread hands on at once (one line may be
/// longer, up to [`MAX_LINE_BYTES`]). With two chunks
/// waiting this bounds what is read ahead of the preparing thread.
pub const CHUNK_BYTES: usize = 1 << 20;
/// The first batch's lines, at most: the writer starts on it while the
/// next one, four times as long, is prepared, and so on up to `batch_lines`
/// (the writer waits for this small first batch rather than for a whole
/// large one).
pub const FIRST_BATCH_LINES: usize = 1024;
/// Chunks read and not yet taken by the preparing thread, at most.
const CHUNKS_WAITING: usize = 2;
/// Size of the reading thread's input buffer.
const READ_BUFFER: usize = 1 << 20;
/// The default longest wait, in milliseconds, of a batch's first line
/// before the batch commits however few lines it has (`data collect
/// --flush-ms`).
pub const DEFAULT_FLUSH_MS: u64 = 1000;
/// [`DEFAULT_FLUSH_MS`] as a duration.
pub const DEFAULT_FLUSH: Duration = Duration::from_millis(DEFAULT_FLUSH_MS);

/// What a bulk ingest writes to.
#[derive(Debug, Clone)]
pub struct BulkRequest {
    /// Collection id (must exist).
    pub collection_id: String,
    /// Collector id (`text`, `file`, …).
    pub collector_id: String,
    /// Input lines per transaction (at least 1).
    pub batch_lines: usize,
    /// A batch also commits once its first line has waited this long (at
    /// least 1 ms), however few lines it has.
    pub flush: Duration,
}

/// The acknowledgement printed after each commit.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct BulkProgress {
    /// Every line up to and including this one (1-based) is committed or
    /// reported failed.
    pub committed_through_line: u64,
    /// Non-blank lines so far.
    pub lines: u64,
    /// Records inserted so far.
    pub inserted: u64,
    /// Records that already existed so far.
    pub existing: u64,
    /// Lines that failed so far.
    pub failed: u64,
}

/// One failed line.
#[derive(Debug)]
pub struct LineError {
    /// 1-based line number in the input.
    pub line: u64,
    /// Why.
    pub error: Error,
}

/// The outcome of a whole ingest.
#[derive(Debug)]
pub struct BulkSummary {
    /// The counts at the last commit (which covers the whole input).
    pub progress: BulkProgress,
    /// The first [`MAX_LISTED_ERRORS`] line errors, in line order.
    pub errors: Vec<LineError>,
}

enum Line {
    Ready(u64, Vec<Prepared>),
    Failed(u64, Error),
}

/// What the reading thread hands to the preparing one.
enum Chunk {
    /// Input lines, numbered from 1, with their line ends.
    Lines(Vec<(u64, Vec<u8>)>),
    /// The input ended after the lines already handed on.
    End,
    /// Reading failed after the lines already handed on.
    Failed(Error),
}

struct Batch {
    /// The last input line this batch covers (blank lines included).
    last_line: u64,
    lines: Vec<Line>,
}

/// The writer's running state.
struct Tally {
    progress: BulkProgress,
    errors: Vec<LineError>,
}

impl Tally {
    fn fail(&mut self, line: u64, error: Error) {
        self.progress.failed += 1;
        if self.errors.len() < MAX_LISTED_ERRORS {
            self.errors.push(LineError { line, error });
        }
    }
}

impl Node {
    /// Ingests JSON lines from `input` (see the module docs). `progress` is
    /// called on the writer thread after every commit.
    pub fn ingest_lines<R: Read + Send + 'static>(
        &self,
        req: &BulkRequest,
        input: R,
        progress: &(dyn Fn(&BulkProgress) + Sync),
    ) -> Result<BulkSummary> {
        check_collection_id(&req.collection_id)?;
        let target =
            self.read(|c| self.collect_target(c, &req.collection_id, &req.collector_id))?;
        let batch_lines = req.batch_lines.max(1);
        let flush = req.flush.max(Duration::from_millis(1));
        // Not joined: after a store failure it may still be blocked
        // reading a silent producer; it ends at its next line or at the
        // input's end, when it finds nobody taking its lines.
        let (chunk_tx, chunks) = mpsc::sync_channel::<Chunk>(CHUNKS_WAITING);
        std::thread::Builder::new()
            .name("bulk-read".into())
            .spawn(move || read_input(input, &chunk_tx))
            .map_err(|e| Error::internal(format!("cannot start the bulk reader: {e}")))?;
        let (tx, rx) = mpsc::sync_channel::<Batch>(1);
        std::thread::scope(|s| {
            let writer = std::thread::Builder::new()
                .name("bulk-writer".into())
                .spawn_scoped(s, || self.bulk_writer(rx, progress))
                .map_err(|e| Error::internal(format!("cannot start the bulk writer: {e}")))?;
            let read = self.bulk_reader(&target, &chunks, batch_lines, flush, &tx);
            drop(tx);
            drop(chunks);
            let written = writer
                .join()
                .unwrap_or_else(|_| Err(Error::internal("the bulk writer panicked")));
            match (read, written) {
                (Ok(()), Ok(t)) => Ok(BulkSummary {
                    progress: t.progress,
                    errors: t.errors,
                }),
                // The store failed: that is the error (the reader only saw
                // its channel close).
                (_, Err(e)) => Err(e),
                (Err(e), Ok(t)) => {
                    Err(e.with("committed_through_line", t.progress.committed_through_line))
                }
            }
        })
    }

    /// Prepares and batches the reading thread's lines until the input
    /// ends or the writer stops; a batch whose first line has waited
    /// `flush` goes to the writer as it is.
    fn bulk_reader(
        &self,
        target: &CollectTarget,
        chunks: &mpsc::Receiver<Chunk>,
        batch_lines: usize,
        flush: Duration,
        tx: &mpsc::SyncSender<Batch>,
    ) -> Result<()> {
        let mut open = OpenBatch::new(batch_lines);
        self.read(|conn| {
            loop {
                let next = match open.due {
                    None => chunks
                        .recv()
                        .map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                    Some(at) => chunks.recv_timeout(at.saturating_duration_since(Instant::now())),
                };
                let lines = match next {
                    Ok(Chunk::Lines(lines)) => lines,
                    Ok(Chunk::End) => break,
                    Ok(Chunk::Failed(e)) => return Err(e),
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        if tx.send(open.cut()).is_err() {
                            // The writer stopped; its error is the result.
                            return Ok(());
                        }
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => {
                        return Err(Error::internal("the bulk input reader stopped"));
                    }
                };
                for (line_no, buf) in lines {
                    open.batch.last_line = line_no;
                    if open.due.is_none() {
                        open.due = Some(Instant::now() + flush);
                    }
                    let Some(prepared) = BulkLines::prepare_in(self, conn, target, &buf) else {
                        continue;
                    };
                    let line = match prepared {
                        Ok(items) => {
                            open.bytes += items
                                .iter()
                                .map(|p| p.bytes.len() + p.canonical.len())
                                .sum::<usize>();
                            Line::Ready(line_no, items)
                        }
                        Err(e) => Line::Failed(line_no, e),
                    };
                    open.batch.lines.push(line);
                    let full =
                        open.batch.lines.len() >= open.limit || open.bytes >= MAX_BATCH_BYTES;
                    if full && tx.send(open.cut()).is_err() {
                        return Ok(());
                    }
                }
            }
            if !open.batch.lines.is_empty() || open.batch.last_line > open.sent_through {
                let _ = tx.send(open.batch);
            }
            Ok(())
        })
    }

    /// Commits batches as they come; reports each commit.
    fn bulk_writer(
        &self,
        rx: mpsc::Receiver<Batch>,
        progress: &(dyn Fn(&BulkProgress) + Sync),
    ) -> Result<Tally> {
        let mut tally = Tally {
            progress: BulkProgress {
                committed_through_line: 0,
                lines: 0,
                inserted: 0,
                existing: 0,
                failed: 0,
            },
            errors: Vec::new(),
        };
        std::thread::scope(|s| {
            // Freeing a batch's records, and copying committed WAL frames
            // into the database file (`writer::Checkpointer`), are real work
            // that need not hold up the next batch: two helper threads do
            // them on the other core.
            let (dropper, garbage) = mpsc::sync_channel::<Vec<Prepared>>(2);
            std::thread::Builder::new()
                .name("bulk-free".into())
                .spawn_scoped(s, move || garbage.into_iter().for_each(drop))
                .map_err(|e| Error::internal(format!("cannot start a bulk thread: {e}")))?;
            // The writer connection, kept from batch to batch (its own
            // automatic checkpoints off: the checkpointer's thread does
            // them), and the checkpointer, started at the first batch.
            let mut kept = Kept::idle_truncating(Some(0));
            let mut checkpoints: Option<writer::Checkpointer> = None;
            // Taken and released per batch, on lock files kept open.
            let mut held = self.dir.keep_lock();
            let res = (|| -> Result<()> {
                for batch in rx {
                    let mut w = BatchWriter {
                        held: &mut held,
                        kept: &mut kept,
                        checkpoints: &mut checkpoints,
                    };
                    self.commit_batch(batch, &mut w, &mut tally, &dropper)?;
                    progress(&tally.progress);
                }
                Ok(())
            })();
            let res = res.map_err(|e| {
                e.with(
                    "committed_through_line",
                    tally.progress.committed_through_line,
                )
            });
            if let Some(checkpoints) = checkpoints {
                checkpoints.stop();
                if let Ok(lock) = held.acquire(self.lock_timeout) {
                    // Best effort (the data is committed): a large WAL is
                    // checkpointed and truncated now rather than by the
                    // next writer's open.
                    kept.truncate_wals(&self.dir, &lock);
                }
            }
            res.map(|()| tally)
        })
    }

    /// One batch: large content durable first, then one transaction under
    /// the data-directory lock.
    fn commit_batch(
        &self,
        batch: Batch,
        w: &mut BatchWriter<'_>,
        tally: &mut Tally,
        dropper: &mpsc::SyncSender<Vec<Prepared>>,
    ) -> Result<()> {
        let large: Vec<&Prepared> = batch
            .lines
            .iter()
            .filter_map(|l| match l {
                Line::Ready(_, items) => Some(items),
                Line::Failed(..) => None,
            })
            .flatten()
            .filter(|p| !p.is_inline())
            .collect();
        self.store_blobs_parallel(large)?;
        let lock = w.held.acquire(self.lock_timeout)?;
        if let Some(c) = w.checkpoints.as_ref() {
            c.bound();
        }
        let clock = self.clock.as_ref();
        let mut session = Session::with_kept(self.dir.clone(), lock, clock, writer::PLAN, w.kept)?;
        if w.checkpoints.is_none() {
            let now = rfc3339_millis(session.now());
            let started = writer::Checkpointer::start(&self.dir, &now, session.lock())?;
            *w.checkpoints = Some(started);
        }
        let mut next = Tally {
            progress: tally.progress.clone(),
            errors: Vec::new(),
        };
        let done = session.apply(|work| apply_batch(work.write(&SPEC)?, batch.lines, &mut next))?;
        session.commit()?;
        // Releases the lock, keeping the connection.
        session.close_into(w.kept);
        let Some(checkpoints) = w.checkpoints.as_ref() else {
            return Err(Error::internal("the bulk writer lost its checkpointer"));
        };
        checkpoints.kick();
        let _ = dropper.send(done);
        next.progress.committed_through_line = batch.last_line;
        tally.progress = next.progress;
        for e in next.errors {
            if tally.errors.len() < MAX_LISTED_ERRORS {
                tally.errors.push(e);
            }
        }
        Ok(())
    }
}

/// The batch the preparing thread is filling.
struct OpenBatch {
    batch: Batch,
    /// Its line count: [`FIRST_BATCH_LINES`] at first, fourfold at every
    /// cut, up to `batch_lines`.
    limit: usize,
    batch_lines: usize,
    /// Prepared bytes in it.
    bytes: usize,
    /// The last line of the last batch handed on.
    sent_through: u64,
    /// When it must go, whatever its size (set by its first line).
    due: Option<Instant>,
}

impl OpenBatch {
    fn new(batch_lines: usize) -> OpenBatch {
        OpenBatch {
            batch: Self::fresh(0, batch_lines),
            limit: batch_lines.min(FIRST_BATCH_LINES),
            batch_lines,
            bytes: 0,
            sent_through: 0,
            due: None,
        }
    }

    fn fresh(last_line: u64, batch_lines: usize) -> Batch {
        Batch {
            last_line,
            lines: Vec::with_capacity(batch_lines.min(1 << 16)),
        }
    }

    /// Ends the batch (to hand it on) and opens the next, larger one.
    fn cut(&mut self) -> Batch {
        let last = self.batch.last_line;
        self.bytes = 0;
        self.limit = self.limit.saturating_mul(4).min(self.batch_lines);
        self.sent_through = last;
        self.due = None;
        std::mem::replace(&mut self.batch, Self::fresh(last, self.batch_lines))
    }
}

/// The per-line half of a bulk ingest, on its own: what
/// [`Node::ingest_lines`] does to each line it reads (trimmed, blank lines
/// skipped, the JSON object run through the target's collector), for a
/// caller that has one line in hand (the fuzz target `bulk_jsonl`).
pub struct BulkLines<'a> {
    node: &'a Node,
    target: CollectTarget,
}

impl Node {
    /// The line preparer of a bulk ingest with `req`'s collection and
    /// collector (which must exist, as for [`Node::ingest_lines`]).
    pub fn bulk_lines(&self, req: &BulkRequest) -> Result<BulkLines<'_>> {
        check_collection_id(&req.collection_id)?;
        let target =
            self.read(|c| self.collect_target(c, &req.collection_id, &req.collector_id))?;
        Ok(BulkLines { node: self, target })
    }
}

impl BulkLines<'_> {
    /// One physical line (its newline included or not): `None` when it is
    /// blank, else its records or the line's typed refusal.
    pub fn prepare(&self, line: &[u8]) -> Result<Option<Vec<Prepared>>> {
        self.node.read(|conn| {
            Ok(
                match Self::prepare_in(self.node, conn, &self.target, line) {
                    None => None,
                    Some(r) => Some(r?),
                },
            )
        })
    }

    /// The one body both callers run.
    fn prepare_in(
        node: &Node,
        conn: &Connection,
        target: &CollectTarget,
        line: &[u8],
    ) -> Option<Result<Vec<Prepared>>> {
        let text = line.trim_ascii();
        if text.is_empty() {
            return None;
        }
        let input: Map<String, Value> = match serde_json::from_slice::<Value>(text) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Some(Err(Error::new(
                    Code::InvalidJson,
                    "line must be a JSON object",
                )));
            }
            Err(e) => {
                return Some(Err(Error::new(
                    Code::InvalidJson,
                    format!("line is not valid JSON: {e}"),
                )));
            }
        };
        Some(node.prepare_input(conn, target, &input, true).map(|p| p.0))
    }
}

/// The reading thread: splits `input` into numbered lines and hands them
/// on in chunks, one as soon as the input has nothing more ready (so a
/// slow producer's line is never held back waiting for the next), ending
/// with [`Chunk::End`] or [`Chunk::Failed`]. Stops when nobody takes its
/// chunks.
fn read_input<R: Read>(input: R, tx: &mpsc::SyncSender<Chunk>) {
    let mut input = BufReader::with_capacity(READ_BUFFER, input);
    let mut line_no = 0u64;
    let mut chunk = Vec::new();
    let mut bytes = 0usize;
    let last = loop {
        let mut buf = Vec::new();
        let n =
            match std::io::Read::take(&mut input, MAX_LINE_BYTES + 1).read_until(b'\n', &mut buf) {
                Ok(n) => n,
                Err(e) => break Chunk::Failed(Error::new(Code::Io, format!("reading input: {e}"))),
            };
        if n == 0 {
            break Chunk::End;
        }
        line_no += 1;
        if n as u64 > MAX_LINE_BYTES && !buf.ends_with(b"\n") {
            break Chunk::Failed(
                Error::new(
                    Code::TooLarge,
                    format!("line {line_no} is longer than {MAX_LINE_BYTES} bytes"),
                )
                .with("line", line_no),
            );
        }
        bytes += buf.len();
        chunk.push((line_no, buf));
        if chunk.len() >= CHUNK_LINES || bytes >= CHUNK_BYTES || input.buffer().is_empty() {
            bytes = 0;
            if tx.send(Chunk::Lines(std::mem::take(&mut chunk))).is_err() {
                return;
            }
        }
    };
    if !chunk.is_empty() && tx.send(Chunk::Lines(chunk)).is_err() {
        return;
    }
    let _ = tx.send(last);
}

/// What the bulk writer keeps from batch to batch.
struct BatchWriter<'a> {
    held: &'a mut KeptDirLock,
    kept: &'a mut Kept,
    checkpoints: &'a mut Option<writer::Checkpointer>,
}

/// A batch's rows, in the unit of work's transaction; on any store error
/// the unit is rolled back and the error returned (per-line failures are
/// tallied, not errors).
fn apply_batch(conn: &Connection, lines: Vec<Line>, tally: &mut Tally) -> Result<Vec<Prepared>> {
    // Lines whose checks pass; written together (see `insert_many`).
    let mut accepted: Vec<Prepared> = Vec::new();
    let res = (|| -> Result<()> {
        // The records of earlier lines, for lines that supersede one (kept
        // only when some line of the batch does).
        let superseding = lines.iter().any(|l| match l {
            Line::Ready(_, items) => items.iter().any(|p| p.supersedes_id.is_some()),
            Line::Failed(..) => false,
        });
        let mut batch_ids: HashMap<String, String> = HashMap::new();
        for line in lines {
            match line {
                Line::Failed(n, e) => {
                    tally.progress.lines += 1;
                    tally.fail(n, e);
                }
                Line::Ready(n, items) => {
                    tally.progress.lines += 1;
                    // Check every item of the line before writing any, so
                    // a line stores all of its records or none. A record
                    // an earlier line of this batch (or an earlier item of
                    // this line) carries is not in the database yet.
                    let mut refused = None;
                    for (k, p) in items.iter().enumerate() {
                        let Some(sup) = p.supersedes_id.as_deref() else {
                            continue;
                        };
                        let earlier = batch_ids.get(sup).map(String::as_str).or_else(|| {
                            items[..k]
                                .iter()
                                .find(|q| q.id == sup)
                                .map(|q| q.collection_id.as_str())
                        });
                        let r = match earlier {
                            Some(c) if c == p.collection_id => Ok(()),
                            Some(_) => Err(Error::new(
                                Code::SupersededRecordCollectionMismatch,
                                "Superseded record belongs to another collection",
                            )),
                            None => check_supersedes(conn, &p.collection_id, sup),
                        };
                        if let Err(e) = r {
                            refused = Some(e);
                            break;
                        }
                    }
                    match refused {
                        Some(e)
                            if matches!(
                                e.code(),
                                Code::SupersededRecordNotFound
                                    | Code::SupersededRecordCollectionMismatch
                            ) =>
                        {
                            tally.fail(n, e);
                            continue;
                        }
                        Some(e) => return Err(e),
                        None => {}
                    }
                    if superseding {
                        for p in &items {
                            batch_ids.insert(p.id.clone(), p.collection_id.clone());
                        }
                    }
                    accepted.extend(items);
                }
            }
        }
        let refs: Vec<&Prepared> = accepted.iter().collect();
        let refs = refs.as_slice();
        for inserted in writer::insert_many(conn, refs)? {
            match inserted {
                Inserted::New => tally.progress.inserted += 1,
                Inserted::Existing(_) => tally.progress.existing += 1,
            }
        }
        Ok(())
    })();
    res.map(|()| accepted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::node::{DEFAULT_FLUSH, test_node};

    #[test]
    fn the_line_preparer_refuses_and_skips_the_lines_the_ingest_does() {
        let t = tempfile::tempdir().expect("tempdir");
        let node = test_node(&t.path().join("d"));
        let req = BulkRequest {
            collection_id: "default".into(),
            collector_id: "text".into(),
            batch_lines: 2,
            flush: DEFAULT_FLUSH,
        };
        let input = "{\"text\":\"one\"}\n  \r\n[1]\n{\"text\":\"two\"\n{\"text\":\"one\"}";
        let lines = node.bulk_lines(&req).expect("preparer");
        let outcomes: Vec<_> = input
            .as_bytes()
            .split_inclusive(|b| *b == b'\n')
            .map(|l| lines.prepare(l))
            .collect();
        let ids = |o: &Result<Option<Vec<Prepared>>>| match o {
            Ok(Some(v)) => v.iter().map(|p| p.id.clone()).collect::<Vec<_>>(),
            _ => Vec::new(),
        };
        assert_eq!(ids(&outcomes[0]).len(), 1);
        assert!(matches!(outcomes[1], Ok(None)), "a blank line is skipped");
        for refused in [&outcomes[2], &outcomes[3]] {
            let Err(e) = refused else {
                panic!("a bad line was prepared")
            };
            assert_eq!(e.code(), Code::InvalidJson);
        }
        assert_eq!(
            ids(&outcomes[0]),
            ids(&outcomes[4]),
            "ids do not depend on time"
        );
        drop(lines);
        let s = node
            .ingest_lines(&req, std::io::Cursor::new(input.to_owned()), &|_| {})
            .expect("ingest");
        assert_eq!(s.errors.iter().map(|e| e.line).collect::<Vec<_>>(), [3, 4]);
        assert_eq!(
            (s.progress.lines, s.progress.inserted, s.progress.existing),
            (4, 1, 1)
        );
        let missing = BulkRequest {
            collection_id: "nope".into(),
            ..req
        };
        assert!(node.bulk_lines(&missing).is_err());
    }
}
