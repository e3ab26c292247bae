//! The SQL of every data write: records (their inline content, rows and
//! change events), tombstones and collections, each inside the caller's
//! unit of work ([`PLAN`]: the store's engine; `data::node::write` runs
//! them), and bulk ingest's checkpointer. A record's FTS row and token
//! count are `data::fts`'s: this file says when they are written.
//!
//! Content bytes are fsynced into the CAS by the caller *before* a write
//! naming them is queued.

use super::canon::canonical_json;
use super::collection::comparison_key;
use super::fts;
use super::key::{prefix, record_key};
use super::record::Prepared;
use super::schema::SPEC;
use crate::error::{Code, Error, Result};
use crate::store::{
    Access, CommitOrder, Connection, DataDir, DirLock, OptionalExtension, Plan, params,
};
use serde_json::{Map, Value};
use std::sync::mpsc;

pub use super::schema::WRITER_PRAGMAS;

/// Every data write's unit of work: the data database, an immediate
/// transaction.
pub const PLAN: Plan = Plan {
    dbs: &[(&SPEC, Access::Write)],
    order: CommitOrder::Listed,
};

/// Opens the data database for writing (creating and migrating it; the
/// store runs [`super::schema::SPEC`]'s writer set-up: the writer pragmas
/// and the `record_doclen` completion).
pub(crate) fn open(dir: &DataDir, now: &str, lock: &DirLock) -> Result<Connection> {
    dir.open_write(&SPEC, now, lock)
}

/// Bulk ingest's checkpointer: copies committed WAL frames into the database file on a thread of its
/// own (`PRAGMA wal_checkpoint(PASSIVE)`: it never waits for, or blocks,
/// readers or the writer), so that a commit never stops to; the writer's
/// own automatic checkpoints are off. When the WAL still grows past
/// [`MAX_WAL_BYTES`] (checkpoints run while the next commit writes, so the
/// WAL rarely finds a moment to start over), the writer makes one at its
/// next batch ([`Checkpointer::bound`]).
pub(crate) struct Checkpointer {
    kick: mpsc::SyncSender<()>,
    wal: std::path::PathBuf,
    conn: std::sync::Arc<std::sync::Mutex<Connection>>,
    thread: std::thread::JoinHandle<()>,
}

/// The WAL grows past this only until the writer's next batch.
pub(crate) const MAX_WAL_BYTES: u64 = 64 << 20;

impl Checkpointer {
    /// Starts the thread, on a connection of its own (the writer's
    /// connections run without automatic checkpoints: `store::Kept`).
    pub(crate) fn start(dir: &DataDir, now: &str, lock: &DirLock) -> Result<Checkpointer> {
        let ckpt = std::sync::Arc::new(std::sync::Mutex::new(dir.open_write(&SPEC, now, lock)?));
        let (kick, rx) = mpsc::sync_channel::<()>(1);
        let mine = ckpt.clone();
        let thread = std::thread::Builder::new()
            .name("data-checkpoint".into())
            .spawn(move || {
                for () in rx {
                    // A failure only leaves more WAL for the next one.
                    if let Ok(c) = mine.lock() {
                        let _ = c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    }
                }
            })
            .map_err(|e| Error::internal(format!("cannot start the checkpoint thread: {e}")))?;
        let mut wal = dir.root().join(SPEC.file).into_os_string();
        wal.push("-wal");
        Ok(Checkpointer {
            kick,
            wal: wal.into(),
            conn: ckpt,
            thread,
        })
    }

    /// Ends the thread once its last checkpoint is done.
    pub(crate) fn stop(self) {
        drop(self.kick);
        let _ = self.thread.join();
    }

    /// After a commit: copy its frames soon (coalesced with a pending kick).
    pub(crate) fn kick(&self) {
        let _ = self.kick.try_send(());
    }

    /// Before a batch, under the lock and outside any transaction of the
    /// writer: restart an oversized WAL.
    pub(crate) fn bound(&self) {
        if std::fs::symlink_metadata(&self.wal).is_ok_and(|m| m.len() > MAX_WAL_BYTES)
            && let Ok(c) = self.conn.lock()
        {
            let _ = c.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()));
        }
    }
}

fn parse(s: &str) -> Result<Value> {
    serde_json::from_str(s).map_err(|e| Error::internal(format!("stored JSON is corrupt: {e}")))
}

/// Inserts collected records inside the caller's savepoint: per item its
/// canonical envelope text (a new record's prepared one, or an existing
/// record's stored one) and whether it is new; the FTS rows still to write
/// go to `index` (a batch writes them together, before its commit).
pub(crate) fn collect_rows(
    conn: &Connection,
    items: Vec<Prepared>,
    index: &mut Vec<(i64, String)>,
) -> Result<Vec<(String, bool)>> {
    let mut out = Vec::with_capacity(items.len());
    let mut dedup = Dedup::default();
    let mut stmts = RowStatements::new(conn)?;
    for p in items {
        let (inserted, pending) = insert_rows(conn, &mut stmts, &p)?;
        if let Some(i) = pending
            && dedup.first(&i)
        {
            let doc = i.repair_document.unwrap_or_else(|| p.document.clone());
            index.push((i.rid, doc));
        }
        out.push(match inserted {
            Inserted::New => (p.canonical, true),
            Inserted::Existing(env) => (env, false),
        });
    }
    Ok(out)
}

/// What inserting a prepared record did.
pub(crate) enum Inserted {
    /// A new record (its envelope is the prepared one).
    New,
    /// The record existed: its stored envelope (the first one wins).
    Existing(String),
}

/// An FTS row still to write after [`insert_rows`]: a new record's, or a
/// repair of an existing record's missing one (with the document of its
/// stored envelope).
struct PendingIndex {
    rid: i64,
    repair_document: Option<String>,
}

/// Inserts one prepared record inside the caller's transaction, its FTS
/// row and token count included (for replica import): the stored envelope
/// and whether it is new.
pub(crate) fn insert_record(conn: &Connection, p: Prepared) -> Result<(Value, bool)> {
    let inserted = insert_many(conn, &[&p])?
        .pop()
        .ok_or_else(|| Error::internal("an insert reported nothing"))?;
    match inserted {
        Inserted::New if p.envelope.is_empty() => Ok((parse(&p.canonical)?, true)),
        Inserted::New => Ok((Value::Object(p.envelope), true)),
        Inserted::Existing(env) => Ok((parse(&env)?, false)),
    }
}

/// Inserts prepared records inside the caller's transaction: their inline
/// content, record rows, change events, FTS rows and token counts. An
/// existing record keeps its first envelope; collecting it again repairs
/// its inline content and a missing index row. The order is the one FTS5 absorbs
/// fastest: every record row first, then every FTS row, then every token
/// count. (FTS5 flushes its pending terms to a new index segment whenever
/// a statement opens a savepoint while it holds some, and a multi-index
/// insert does: interleaving rows made one tiny segment per record, and
/// then merged them.)
pub(crate) fn insert_many(conn: &Connection, items: &[&Prepared]) -> Result<Vec<Inserted>> {
    let mut out = Vec::with_capacity(items.len());
    let mut pending = Vec::with_capacity(items.len());
    let mut dedup = Dedup::default();
    {
        let mut stmts = RowStatements::new(conn)?;
        for p in items {
            let (inserted, idx) = insert_rows(conn, &mut stmts, p)?;
            out.push(inserted);
            if let Some(i) = idx
                && dedup.first(&i)
            {
                pending.push((*p, i));
            }
        }
    }
    fts::insert(
        conn,
        pending.iter().map(|(p, i)| {
            (
                i.rid,
                i.repair_document.as_deref().unwrap_or(p.document.as_str()),
            )
        }),
    )?;
    // New rows have the consecutive rids this transaction assigned.
    let mut new_rids = pending
        .iter()
        .filter(|(_, i)| i.repair_document.is_none())
        .map(|(_, i)| i.rid);
    if let Some(first) = new_rids.next() {
        let last = new_rids.fold(first, |_, r| r);
        fts::insert_doclen_range(conn, first, last)?;
    }
    for (_, i) in pending.iter().filter(|(_, i)| i.repair_document.is_some()) {
        fts::insert_doclen(conn, i.rid)?;
    }
    Ok(out)
}

/// A record met twice in one call is indexed once: its second copy sees
/// the row the first wrote, and no FTS row yet, so it asks for a repair of
/// a row this call created. Rows a call creates have row ids above every
/// existing row's (and new rows never repeat), so only repairs need a set.
#[derive(Default)]
struct Dedup {
    first_new: Option<i64>,
    repaired: std::collections::HashSet<i64>,
}

impl Dedup {
    /// Whether `i` is the first FTS row asked for its row.
    fn first(&mut self, i: &PendingIndex) -> bool {
        if i.repair_document.is_none() {
            self.first_new.get_or_insert(i.rid);
            return true;
        }
        if self.first_new.is_some_and(|f| i.rid >= f) {
            return false;
        }
        self.repaired.insert(i.rid)
    }
}

/// The statements every record insert runs, looked up in the statement
/// cache once per call rather than once per record.
///
/// Data schema 6 indexes keys by their integer [`prefix`], not uniquely:
/// each insert first looks its key up (prefix and full key), and only
/// inserts what is not there. This is safe because every write runs in
/// one immediate transaction (`writer::PLAN`) of the one writer holding the
/// data-directory lock, and a key met twice in one call finds the row its
/// first copy inserted.
struct RowStatements<'c> {
    blob_find: crate::store::CachedStatement<'c>,
    blob_insert: crate::store::CachedStatement<'c>,
    blob_repair: crate::store::CachedStatement<'c>,
    record_find: crate::store::CachedStatement<'c>,
    record: crate::store::CachedStatement<'c>,
    change: crate::store::CachedStatement<'c>,
}

impl<'c> RowStatements<'c> {
    fn new(conn: &'c Connection) -> Result<RowStatements<'c>> {
        Ok(RowStatements {
            // Small content commits with its row. Content collected again
            // repairs a damaged copy (what `INSERT OR REPLACE` did before
            // schema 6): an existing row whose bytes differ gets the new
            // ones.
            blob_find: conn
                .prepare_cached("SELECT bid FROM inline_blobs WHERE sp = ?1 AND sha256 = ?2")?,
            blob_insert: conn
                .prepare_cached("INSERT INTO inline_blobs(sp, sha256, bytes) VALUES (?1, ?2, ?3)")?,
            // Only a stored row is compared with the bytes (new content,
            // the common case, is bound once, by its insert); an equal
            // copy is left unwritten.
            blob_repair: conn.prepare_cached(
                "UPDATE inline_blobs SET bytes = ?2 WHERE bid = ?1 AND bytes IS NOT ?2",
            )?,
            record_find: conn.prepare_cached(
                "SELECT r.rid, r.envelope_json, \
                 EXISTS(SELECT 1 FROM tombstones t WHERE t.rid = r.rid) \
                 FROM records r WHERE r.kp = ?1 AND r.key = ?2",
            )?,
            record: conn.prepare_cached(
                "INSERT INTO records(kp, key, collection_id, envelope_json, content_sha256, content_size, created_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?,
            change: conn.prepare_cached(
                "INSERT INTO changes(type, collection_id, rid, at) VALUES ('record', ?1, ?2, ?3)",
            )?,
        })
    }
}

/// Stores inline content under its digest unless that digest is stored
/// with these bytes already (see [`RowStatements`]).
fn put_blob(stmts: &mut RowStatements<'_>, sha: &super::key::Key, bytes: &[u8]) -> Result<()> {
    let sp = prefix(sha);
    let found: Option<i64> = stmts
        .blob_find
        .query_row(params![sp, &sha[..]], |r| r.get(0))
        .optional()?;
    match found {
        None => stmts.blob_insert.execute(params![sp, &sha[..], bytes])?,
        Some(bid) => stmts.blob_repair.execute(params![bid, bytes])?,
    };
    Ok(())
}

/// The non-FTS part of an insert (see [`insert_many`]); says which FTS row
/// is still to write.
fn insert_rows(
    conn: &Connection,
    stmts: &mut RowStatements<'_>,
    p: &Prepared,
) -> Result<(Inserted, Option<PendingIndex>)> {
    let key = record_key(&p.id)
        .ok_or_else(|| Error::internal("a prepared record id is not canonical"))?;
    let sha = p.sha256.to_bytes();
    if p.is_inline() {
        put_blob(stmts, &sha, &p.bytes)?;
    }
    let kp = prefix(&key);
    let existing: Option<(i64, String, bool)> = stmts
        .record_find
        .query_row(params![kp, &key[..]], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?))
        })
        .optional()?;
    let Some((rid, env, tombstoned)) = existing else {
        stmts.record.execute(params![
            kp,
            &key[..],
            p.collection_id,
            p.canonical,
            &sha[..],
            p.bytes.len() as i64,
            p.ingested_at
        ])?;
        let rid = conn.last_insert_rowid();
        stmts
            .change
            .execute(params![p.collection_id, rid, p.ingested_at])?;
        return Ok((
            Inserted::New,
            Some(PendingIndex {
                rid,
                repair_document: None,
            }),
        ));
    };
    let mut pending = None;
    if !tombstoned {
        // Repair a missing index row (re-collect re-indexes).
        if !fts::is_indexed(conn, rid)? {
            let doc = match parse(&env)? {
                Value::Object(m) => fts::index_document(
                    &m,
                    &p.bytes,
                    m.get("content")
                        .and_then(|c| c.get("media_type"))
                        .and_then(Value::as_str)
                        .unwrap_or(""),
                ),
                _ => p.document.clone(),
            };
            pending = Some(PendingIndex {
                rid,
                repair_document: Some(doc),
            });
        }
    }
    Ok((Inserted::Existing(env), pending))
}

/// The row id and collection of the record with this id, if it is stored
/// (a non-canonical id names none).
pub(crate) fn find_record(conn: &Connection, record_id: &str) -> Result<Option<(i64, String)>> {
    let Some(key) = record_key(record_id) else {
        return Ok(None);
    };
    Ok(conn
        .prepare_cached("SELECT rid, collection_id FROM records WHERE kp = ?1 AND key = ?2")?
        .query_row(params![prefix(&key), &key[..]], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .optional()?)
}

/// The inline content stored under this digest, if any (read as it is
/// stored: the caller verifies it).
pub(crate) fn inline_content(conn: &Connection, sha: &super::key::Key) -> Result<Option<Vec<u8>>> {
    Ok(conn
        .prepare_cached("SELECT bytes FROM inline_blobs WHERE sp = ?1 AND sha256 = ?2")?
        .query_row(params![prefix(sha), &sha[..]], |r| r.get(0))
        .optional()?)
}

/// The collection of the record with this id, if it is stored.
pub(crate) fn record_collection(conn: &Connection, record_id: &str) -> Result<Option<String>> {
    Ok(find_record(conn, record_id)?.map(|(_, c)| c))
}

/// The tombstone of record row `rid`, if it has one.
pub(crate) fn stored_tombstone(conn: &Connection, rid: i64) -> Result<Option<String>> {
    Ok(conn
        .prepare_cached("SELECT tombstone_json FROM tombstones WHERE rid = ?1")?
        .query_row([rid], |r| r.get(0))
        .optional()?)
}

/// Tombstones a stored record inside the caller's transaction (the first
/// tombstone wins): the tombstone.
pub(crate) fn tombstone(
    conn: &Connection,
    record_id: &str,
    reason: Option<String>,
    now: &str,
) -> Result<Value> {
    let Some((rid, collection_id)) = find_record(conn, record_id)? else {
        return Err(Error::new(
            Code::RecordNotFound,
            format!("Record {record_id} was not found"),
        ));
    };
    let existing = stored_tombstone(conn, rid)?;
    if let Some(t) = existing {
        return parse(&t);
    }
    let mut t = Map::new();
    t.insert("record_id".into(), record_id.into());
    t.insert("collection_id".into(), collection_id.clone().into());
    if let Some(r) = reason {
        t.insert("reason".into(), r.into());
    }
    t.insert("tombstoned_at".into(), now.into());
    let t = Value::Object(t);
    let canonical = canonical_json(&t)?;
    conn.execute(
        "INSERT INTO tombstones(rid, collection_id, tombstone_json, tombstoned_at) VALUES (?1, ?2, ?3, ?4)",
        params![rid, collection_id, canonical, now],
    )?;
    conn.execute(
        "INSERT INTO changes(type, collection_id, rid, at, payload_json) VALUES ('tombstone', ?1, ?2, ?3, ?4)",
        params![collection_id, rid, now, canonical],
    )?;
    fts::delete(conn, rid)?;
    Ok(t)
}

/// Inserts a collection, or checks an identical definition exists.
pub(crate) fn put_collection(
    conn: &Connection,
    def: Map<String, Value>,
    now: &str,
) -> Result<(Value, bool)> {
    let id = def
        .get("id")
        .and_then(Value::as_str)
        .ok_or_else(|| Error::internal("normalised collection has no id"))?
        .to_owned();
    let stored: Option<String> = conn
        .query_row(
            "SELECT definition_json FROM collections WHERE id = ?1",
            [&id],
            |r| r.get(0),
        )
        .optional()?;
    if let Some(s) = stored {
        let v = parse(&s)?;
        let Value::Object(m) = &v else {
            return Err(Error::internal("stored collection is not an object"));
        };
        if comparison_key(m)? != comparison_key(&def)? {
            return Err(Error::new(
                Code::CollectionConflict,
                format!("Collection {id} already exists with a different definition"),
            ));
        }
        return Ok((v, false));
    }
    let mut full = def;
    full.insert("created_at".into(), now.into());
    let v = Value::Object(full);
    conn.execute(
        "INSERT INTO collections(id, definition_json, created_at) VALUES (?1, ?2, ?3)",
        params![id, canonical_json(&v)?, now],
    )?;
    Ok((v, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::node::write::{MAX_BATCH, WriteOp, WriteResult, Writer};
    use crate::data::node::{CollectRequest, Node, QueryRequest};
    use crate::data::replica::ReplicaOp;
    use serde_json::json;
    use std::time::Duration;

    /// A collect of `text` with the built-in text collector into `default`.
    fn text_collect(text: &str) -> CollectRequest {
        CollectRequest {
            collection_id: Some(json!("default")),
            collector_id: Some(json!("text")),
            input: Some(json!({"text": text})),
            cursor: None,
        }
    }

    /// Everything a write leaves in the database, in a comparable form.
    fn dump(node: &Node) -> Vec<String> {
        with_write(node, |c| {
            let mut out = Vec::new();
            // Every token of every indexed row (the index holds no
            // document to compare).
            c.execute_batch(
                "CREATE VIRTUAL TABLE IF NOT EXISTS temp.dump_fts_instance \
                 USING fts5vocab(main, record_fts, instance)",
            )?;
            for sql in [
                "SELECT rid, key, collection_id, envelope_json, content_sha256 FROM records ORDER BY rid",
                "SELECT sequence, type, collection_id, rid, at, payload_json FROM changes ORDER BY sequence",
                "SELECT rid, tombstone_json FROM tombstones ORDER BY rid",
                "SELECT id, sz FROM record_fts_docsize ORDER BY id",
                "SELECT term, doc, offset FROM temp.dump_fts_instance ORDER BY doc, offset",
                "SELECT rid, ntok FROM record_doclen ORDER BY rid",
                "SELECT sha256, bytes FROM inline_blobs ORDER BY sha256",
                "SELECT term, doc, cnt FROM record_fts_vocab ORDER BY term",
                "SELECT id, definition_json FROM collections ORDER BY id",
            ] {
                let mut s = c.prepare(sql)?;
                let n = s.column_count();
                let rows = s.query_map([], |r| {
                    let mut v = Vec::with_capacity(n);
                    for i in 0..n {
                        v.push(format!("{:?}", r.get_ref(i)?));
                    }
                    Ok(v.join("|"))
                })?;
                for r in rows {
                    out.push(format!("{sql}: {}", r?));
                }
            }
            c.execute_batch("INSERT INTO record_fts(record_fts) VALUES ('integrity-check')")?;
            Ok(out)
        })
        .expect("dump")
    }

    fn with_write<T>(node: &Node, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let lock = node.dir.lock(node.lock_timeout)?;
        let conn = open(&node.dir, "2026-01-01T00:00:00.000Z", &lock)?;
        f(&conn)
    }

    fn shown(r: &Result<WriteResult>) -> String {
        match r {
            Ok(v) => format!("ok {v:?}"),
            Err(e) => format!("err {}", e.code().as_str()),
        }
    }

    /// A write queued through the group writer without waiting: its
    /// answer comes from the batch; one whose answer was dropped (a client
    /// that went away) is committed all the same, and the writer goes on.
    #[test]
    fn deferred_writes_are_answered_by_the_batch_and_a_dropped_answer_loses_nothing() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("n");
        let mut node = crate::data::node::test_node(&root);
        node.start_group_commit().expect("group");
        let req = text_collect;
        let dropped = node
            .prepare_collect(&req("dropped answer"))
            .expect("prepare")
            .0;
        let dropped_id = dropped[0].id.clone();
        drop(node.writer_deferred(WriteOp::Collect(dropped)));
        let kept = node
            .prepare_collect(&req("kept answer"))
            .expect("prepare")
            .0;
        let kept_id = kept[0].id.clone();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let got = rt
            .block_on(node.writer_deferred(WriteOp::Collect(kept)).answer())
            .expect("answered");
        match got {
            WriteResult::Collect(v) => {
                assert_eq!(v.len(), 1);
                assert!(v[0].1, "inserted");
            }
            other => panic!("{other:?}"),
        }
        for id in [&dropped_id, &kept_id] {
            assert_eq!(
                node.read_record(id).expect("committed").record["id"],
                id.as_str()
            );
        }
        // The futures the HTTP routes await, end to end.
        let body = rt
            .block_on(node.collect_later(&req("kept answer")).expect("queued"))
            .expect("answered");
        let v: Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(v["existing"], 1, "{v}");
        assert_eq!(v["records"][0]["id"], kept_id.as_str(), "{v}");
        let tomb = rt
            .block_on(
                node.tombstone_later(&crate::data::TombstoneRequest {
                    record_id: dropped_id.clone(),
                    reason: None,
                })
                .expect("queued"),
            )
            .expect("answered");
        assert_eq!(tomb["tombstoned"], true, "{tomb}");
        let e = node.read_record(&dropped_id).expect_err("tombstoned");
        assert_eq!(e.code(), Code::RecordTombstoned);
    }

    /// A full queue answers `busy` at once: the handler thread that queues
    /// never waits for the writer (here stuck behind another process's
    /// data-directory lock), the refused write changes nothing, and every
    /// write that was queued is applied and answered once the lock is free.
    #[test]
    fn a_full_queue_is_busy_at_once() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("n");
        let mut node = crate::data::node::test_node(&root);
        node.lock_timeout = Duration::from_secs(600);
        node.start_group_commit_with(1).expect("group");
        let prep = |text: String| {
            node.prepare_collect(&text_collect(&text))
                .expect("prepare")
                .0
        };
        let held = node.dir.lock(Duration::from_secs(5)).expect("lock");
        let mut cx = Context::from_waker(Waker::noop());
        let mut queued = Vec::new();
        let mut refused = None;
        // The writer holds at most MAX_BATCH writes in the batch that waits
        // for the lock, and the queue one more: the next one is refused.
        for i in 0..MAX_BATCH + 2 {
            let p = prep(format!("queued write {i}"));
            let id = p[0].id.clone();
            let mut answer = Box::pin(node.writer_deferred(WriteOp::Collect(p)).answer());
            match answer.as_mut().poll(&mut cx) {
                Poll::Pending => queued.push((id, answer)),
                Poll::Ready(Err(e)) => {
                    refused = Some((id, format!("queued write {i}"), e));
                    break;
                }
                Poll::Ready(Ok(v)) => panic!("answered while the lock is held: {v:?}"),
            }
        }
        let (refused_id, refused_text, e) = refused.expect("a full queue refuses a write");
        assert_eq!(e.code(), Code::Busy, "{e:?}");
        assert_eq!(
            e.details().and_then(|d| d.get("queue")),
            Some(&json!(1)),
            "{e:?}"
        );
        assert!(!queued.is_empty() && queued.len() <= MAX_BATCH + 1);
        drop(held);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        for (id, answer) in queued {
            match rt.block_on(answer).expect("applied once the lock is free") {
                WriteResult::Collect(v) => assert!(v[0].1, "inserted"),
                other => panic!("{other:?}"),
            }
            assert_eq!(
                node.read_record(&id).expect("committed").record["id"],
                id.as_str()
            );
        }
        let e = node.read_record(&refused_id).expect_err("refused");
        assert_eq!(
            e.code(),
            Code::RecordNotFound,
            "the refused write changed nothing"
        );
        // The writer goes on, and the refused write succeeds when retried.
        // The writer goes on: the refused write succeeds when retried, and
        // so does the next one (one at a time: the queue holds one write).
        for text in [refused_text, "one more write".to_owned()] {
            let r = node.writer_write(WriteOp::Collect(prep(text)));
            assert!(r.is_ok(), "{}", shown(&r));
        }
        assert_eq!(
            node.read_record(&refused_id).expect("retried").record["id"],
            refused_id.as_str()
        );
    }

    /// An idle server writer checkpoints and truncates the WAL its batches
    /// grew past 1 MiB (its automatic checkpoints are rare: every
    /// [`SERVER_CHECKPOINT_PAGES`] pages), and every record stays.
    #[test]
    fn an_idle_writer_truncates_its_wal() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("n");
        let mut node = crate::data::node::test_node(&root);
        node.start_group_commit().expect("group");
        let mut wal = root.join(SPEC.file).into_os_string();
        wal.push("-wal");
        let wal = std::path::PathBuf::from(wal);
        let wal_len = || std::fs::symlink_metadata(&wal).map_or(0, |m| m.len());
        let mut ids = Vec::new();
        while wal_len() <= 1 << 20 {
            assert!(ids.len() < 10_000, "the WAL does not grow");
            let text = format!("grow the wal {} {}", ids.len(), "word ".repeat(2000));
            let p = node
                .prepare_collect(&text_collect(&text))
                .expect("prepare")
                .0;
            ids.push(p[0].id.clone());
            let r = node.writer_write(WriteOp::Collect(p));
            assert!(r.is_ok(), "{}", shown(&r));
        }
        // The writer is idle now: wait (without a deadline on the writer's
        // speed, only against a wedged test) for its checkpoint.
        let mut polls = 0;
        while wal_len() > 1 << 20 {
            polls += 1;
            assert!(polls < 6_000, "an idle writer never truncated its WAL");
            std::thread::sleep(Duration::from_millis(10));
        }
        for id in &ids {
            assert_eq!(
                node.read_record(id).expect("kept").record["id"],
                id.as_str()
            );
        }
    }

    /// The differential test of the group commit: a random mix of
    /// collects (new, repeated within and across writes, repairing a lost
    /// index row), tombstones (of records collected earlier in the same
    /// batch, of unknown records), collection definitions and replica
    /// tombstones, applied as one batch (FTS rows deferred to its end),
    /// leaves the same rows, FTS index, token counts and answers as the
    /// same writes applied one transaction each.
    #[test]
    fn one_batch_equals_one_transaction_per_write() {
        for seed in 1..=8u64 {
            let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next = move || {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng
            };
            let t = tempfile::tempdir().expect("tempdir");
            let nodes: Vec<Node> = ["one", "many"]
                .iter()
                .map(|n| {
                    let root = t.path().join(n);
                    crate::data::node::test_node(&root)
                })
                .collect();
            let prep = |node: &Node, texts: &[String]| -> Vec<Prepared> {
                texts
                    .iter()
                    .flat_map(|text| {
                        node.prepare_collect(&text_collect(text))
                            .expect("prepare")
                            .0
                    })
                    .collect()
            };
            // Existing records, one of which loses its index row.
            let setup: Vec<String> = (0..6).map(|k| format!("old alpha w{k}")).collect();
            for node in &nodes {
                let r = Writer::Direct.write(node, WriteOp::Collect(prep(node, &setup)));
                assert!(r.is_ok(), "{}", shown(&r));
                with_write(node, |c| {
                    c.execute_batch(
                        "DELETE FROM record_fts WHERE rowid = 2; DELETE FROM record_doclen WHERE rid = 2",
                    )?;
                    Ok(())
                })
                .expect("damage");
            }
            let ids = prep(&nodes[0], &setup)
                .into_iter()
                .map(|p| p.id)
                .collect::<Vec<_>>();
            // One script of writes, made twice (one per node).
            let mut script = Vec::new();
            let mut made: Vec<String> = Vec::new();
            for _ in 0..(6 + next() % 20) {
                let step = match next() % 8 {
                    0..=2 => {
                        let n = 1 + next() % 3;
                        let texts: Vec<String> = (0..n)
                            .map(|_| match next() % 4 {
                                0 => format!("old alpha w{}", next() % 6),
                                1 if !made.is_empty() => {
                                    made[(next() as usize) % made.len()].clone()
                                }
                                _ => format!("new beta w{} beta", next() % 40),
                            })
                            .collect();
                        made.extend(texts.iter().cloned());
                        ("collect", texts)
                    }
                    3 if !made.is_empty() => (
                        "tombstone",
                        vec![made[(next() as usize) % made.len()].clone()],
                    ),
                    4 => (
                        "tombstone_old",
                        vec![ids[(next() as usize) % ids.len()].clone()],
                    ),
                    5 => ("unknown", vec![]),
                    6 => ("collection", vec![format!("c{}", next() % 3)]),
                    _ if !made.is_empty() => (
                        "replica_tombstone",
                        vec![made[(next() as usize) % made.len()].clone()],
                    ),
                    _ => ("unknown", vec![]),
                };
                script.push(step);
            }
            let ops = |node: &Node| -> Vec<WriteOp> {
                let now = "2026-01-01T00:00:00.000Z".to_owned();
                script
                    .iter()
                    .map(|(kind, args)| match *kind {
                        "collect" => WriteOp::Collect(prep(node, args)),
                        "tombstone" => WriteOp::Tombstone {
                            record_id: prep(node, args)[0].id.clone(),
                            reason: None,
                            now: now.clone(),
                        },
                        "tombstone_old" => WriteOp::Tombstone {
                            record_id: args[0].clone(),
                            reason: Some("old".into()),
                            now: now.clone(),
                        },
                        "unknown" => WriteOp::Tombstone {
                            record_id: "rec_unknown".into(),
                            reason: None,
                            now: now.clone(),
                        },
                        "collection" => {
                            let mut def = Map::new();
                            def.insert("id".into(), json!(args[0]));
                            WriteOp::PutCollection(def, now.clone())
                        }
                        _ => {
                            let mut t = Map::new();
                            t.insert("record_id".into(), json!(prep(node, args)[0].id));
                            t.insert("collection_id".into(), json!("default"));
                            t.insert("tombstoned_at".into(), json!(now));
                            WriteOp::Replica(vec![ReplicaOp::Tombstone(t)])
                        }
                    })
                    .collect()
            };
            let one: Vec<String> = ops(&nodes[0])
                .into_iter()
                .map(|op| shown(&Writer::Direct.write(&nodes[0], op)))
                .collect();
            let many: Vec<String> = Writer::Direct
                .write_many(&nodes[1], ops(&nodes[1]))
                .iter()
                .map(shown)
                .collect();
            assert_eq!(one, many, "seed {seed}: {script:?}");
            assert_eq!(dump(&nodes[0]), dump(&nodes[1]), "seed {seed}: {script:?}");
            for text in ["alpha", "beta", "new beta", "old", "w3"] {
                let q = |node: &Node| {
                    let req = QueryRequest {
                        text: Some(json!(text)),
                        limit: Some(json!(100)),
                        ..QueryRequest::default()
                    };
                    serde_json::to_string(&node.query(&req).expect("query")).expect("json")
                };
                assert_eq!(q(&nodes[0]), q(&nodes[1]), "seed {seed}: {text}");
            }
        }
    }

    /// Data schema 6 indexes records and inline blobs by the first 8 bytes
    /// of their key, which two keys can share. Records whose ids share
    /// them and inline blobs whose digests share them, written before and
    /// after the record they collide with, are each stored once and found
    /// by their own key; repeats (in one batch and later) are stored
    /// once; the feed names each record once; a damaged inline copy is
    /// still repaired in place by collecting its content again.
    #[test]
    fn keys_sharing_their_prefix_are_told_apart() {
        use crate::data::key::{self, Key};
        let t = tempfile::tempdir().expect("tempdir");
        let node = crate::data::node::test_node(&t.path().join("n"));
        let prep = |text: &str| -> Prepared {
            node.prepare_collect(&text_collect(text))
                .expect("prepare")
                .0
                .remove(0)
        };
        let a = prep("alpha the record collided with");
        let a_key = key::record_key(&a.id).expect("key");
        let a_sha = a.sha256.to_bytes();
        // A record whose id shares the first 8 bytes of `a`'s (its own
        // content and envelope otherwise).
        let id_collider = |text: &str| -> Prepared {
            let mut p = prep(text);
            let mut k = key::record_key(&p.id).expect("key");
            k[..8].copy_from_slice(&a_key[..8]);
            let id = key::record_id(&k).expect("id");
            p.canonical = p.canonical.replace(&p.id, &id);
            p.id = id;
            p
        };
        // A record whose content digest shares the first 8 bytes of `a`'s
        // (so its stored bytes do not hash to its digest).
        let sha_collider = |text: &str| -> Prepared {
            let mut p = prep(text);
            let mut d = p.sha256.to_bytes();
            d[..8].copy_from_slice(&a_sha[..8]);
            let sha = key::digest(&d).expect("digest");
            p.canonical = p.canonical.replace(p.sha256.as_str(), sha.as_str());
            p.sha256 = sha;
            p
        };
        let (b, x) = (
            id_collider("beta, written before"),
            sha_collider("gamma, before"),
        );
        let (c, y) = (
            id_collider("delta, written after"),
            sha_collider("epsilon, after"),
        );
        for p in [&b, &c] {
            assert_ne!(p.id, a.id);
            assert_eq!(
                key::prefix(&key::record_key(&p.id).expect("k")),
                key::prefix(&a_key)
            );
        }
        for p in [&x, &y] {
            assert_ne!(p.sha256, a.sha256);
            assert_eq!(key::prefix(&p.sha256.to_bytes()), key::prefix(&a_sha));
        }
        let write = |items: Vec<Prepared>| -> Vec<bool> {
            match Writer::Direct.write(&node, WriteOp::Collect(items)) {
                Ok(WriteResult::Collect(out)) => out.into_iter().map(|(_, new)| new).collect(),
                r => panic!("{}", shown(&r)),
            }
        };
        assert_eq!(
            write(vec![x.clone(), b.clone(), x.clone(), b.clone()]),
            [true, true, false, false]
        );
        assert_eq!(write(vec![a.clone(), a.clone()]), [true, false]);
        assert_eq!(write(vec![y.clone(), c.clone()]), [true, true]);
        assert_eq!(
            write(vec![a.clone(), b.clone(), c.clone(), x.clone(), y.clone()]),
            [false; 5]
        );
        let order = [&x, &b, &a, &y, &c];
        // Each record by its own id, with its own content.
        for p in [&a, &b, &c] {
            let r = node.read_record(&p.id).expect("read");
            assert_eq!(r.bytes, p.bytes, "{}", p.id);
            assert_eq!(r.record, parse(&p.canonical).expect("envelope"));
        }
        let counts = |c: &Connection| -> Result<[i64; 4]> {
            let n = |sql: &str, v: i64| -> Result<i64> { Ok(c.query_row(sql, [v], |r| r.get(0))?) };
            Ok([
                n("SELECT count(*) FROM records WHERE ?1 IS NOT NULL", 0)?,
                n(
                    "SELECT count(*) FROM records WHERE kp = ?1",
                    key::prefix(&a_key),
                )?,
                n("SELECT count(*) FROM inline_blobs WHERE ?1 IS NOT NULL", 0)?,
                n(
                    "SELECT count(*) FROM inline_blobs WHERE sp = ?1",
                    key::prefix(&a_sha),
                )?,
            ])
        };
        with_write(&node, |conn| {
            assert_eq!(counts(conn)?, [5, 3, 5, 3]);
            for p in order {
                let got = inline_content(conn, &p.sha256.to_bytes())?;
                assert_eq!(got.as_deref(), Some(&p.bytes[..]), "{}", p.id);
                let (rid, _) = find_record(conn, &p.id)?.expect("found");
                let key: Vec<u8> =
                    conn.query_row("SELECT key FROM records WHERE rid = ?1", [rid], |r| {
                        r.get(0)
                    })?;
                assert_eq!(key, key::record_key(&p.id).expect("k"));
            }
            // An unknown key with the shared prefix finds nothing.
            let mut other: Key = a_key;
            other[31] ^= 1;
            let id = key::record_id(&other)?;
            assert!(find_record(conn, &id)?.is_none());
            let mut other: Key = a_sha;
            other[31] ^= 1;
            assert!(inline_content(conn, &other)?.is_none());
            // A damaged inline copy, then the content collected again.
            conn.execute(
                "UPDATE inline_blobs SET bytes = x'00' WHERE sp = ?1 AND sha256 = ?2",
                params![key::prefix(&a_sha), &a_sha[..]],
            )?;
            Ok(())
        })
        .expect("rows");
        assert!(node.read_record(&a.id).is_err());
        let bid = |c: &Connection| -> Result<i64> {
            Ok(c.query_row(
                "SELECT bid FROM inline_blobs WHERE sp = ?1 AND sha256 = ?2",
                params![key::prefix(&a_sha), &a_sha[..]],
                |r| r.get(0),
            )?)
        };
        let before = with_write(&node, bid).expect("bid");
        assert_eq!(write(vec![a.clone()]), [false]);
        assert_eq!(with_write(&node, bid).expect("bid"), before);
        assert_eq!(node.read_record(&a.id).expect("repaired").bytes, a.bytes);
        assert_eq!(with_write(&node, counts).expect("counts"), [5, 3, 5, 3]);
        // The feed: each record once, in write order, with its envelope.
        let page = node
            .changes(&crate::data::ChangesRequest {
                limit: Some(100),
                ..crate::data::ChangesRequest::default()
            })
            .expect("changes");
        let events = page["changes"].as_array().expect("events");
        assert_eq!(events.len(), order.len());
        for (e, p) in events.iter().zip(order) {
            assert_eq!(e["record_id"], json!(p.id));
            assert_eq!(e["record"], parse(&p.canonical).expect("envelope"));
        }
    }

    /// Record ids are looked up by their 32-byte key (data schema 5), and
    /// only a canonical id has one: an upper-case or otherwise
    /// non-canonical spelling of a stored record's id finds nothing
    /// through any entry point, with the answer each gave when the id text
    /// was the key (`invalid_record_id` where the id is checked first, not
    /// found where it is not).
    #[test]
    fn non_canonical_ids_find_nothing() {
        let t = tempfile::tempdir().expect("tempdir");
        let node = crate::data::node::test_node(&t.path().join("n"));
        let r = node.collect(&text_collect("the record")).expect("collect");
        let id = r.records[0]["id"].as_str().expect("id").to_owned();
        let hex = &id[4..];
        let spellings = [
            format!("rec_{}", hex.to_uppercase()),
            format!("rec_{}{}", &hex[..63], hex[63..].to_uppercase()),
            format!("REC_{hex}"),
            format!("rec_{hex} "),
            format!(" rec_{hex}"),
            format!("rec_{}", &hex[..63]),
            format!("rec_{hex}0"),
        ];
        let code = |r: Result<Value>| -> String {
            match r {
                Ok(v) => format!("ok {v}"),
                Err(e) => e.code().as_str().to_owned(),
            }
        };
        let replica_tombstone = |node: &Node, record_id: &str| {
            let mut t = Map::new();
            t.insert("record_id".into(), json!(record_id));
            t.insert("collection_id".into(), json!("default"));
            t.insert("tombstoned_at".into(), json!("2026-01-01T00:00:00.000Z"));
            with_write(node, |c| {
                crate::data::replica::apply(c, vec![ReplicaOp::Tombstone(t)])
            })
            .map(|o| json!(o.tombstones_applied))
        };
        let replica_superseding = |node: &Node, sup: &str| {
            let mut p = node
                .prepare_collect(&text_collect("a superseding record"))
                .expect("prepare")
                .0
                .remove(0);
            p.envelope = match parse(&p.canonical).expect("envelope") {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            p.envelope.insert("supersedes_id".into(), json!(sup));
            with_write(node, |c| {
                c.execute_batch("SAVEPOINT s")?;
                let r = crate::data::replica::apply(c, vec![ReplicaOp::Record(p)]);
                c.execute_batch("ROLLBACK TO s; RELEASE s")?;
                r
            })
            .map(|o| json!(o.records_inserted))
        };
        for bad in &spellings {
            let read = node.read_record(bad).map(|r| r.record);
            assert_eq!(code(read), "invalid_record_id", "{bad}");
            let req = crate::data::TombstoneRequest {
                record_id: bad.clone(),
                reason: None,
            };
            assert_eq!(code(node.tombstone(&req)), "invalid_record_id", "{bad}");
            let direct = with_write(&node, |c| tombstone(c, bad, None, "now"));
            assert_eq!(code(direct), "record_not_found", "{bad}");
            let mut sup = text_collect("superseding");
            sup.input = Some(json!({"text": "superseding", "supersedes_id": bad}));
            assert_eq!(
                code(node.collect(&sup).map(|r| json!(r.inserted))),
                "invalid_record_id",
                "{bad}"
            );
            let check = with_write(&node, |c| {
                crate::data::node::check_supersedes(c, "default", bad).map(|()| json!(null))
            });
            assert_eq!(code(check), "superseded_record_not_found", "{bad}");
            assert_eq!(
                code(replica_tombstone(&node, bad)),
                "record_not_found",
                "{bad}"
            );
            assert_eq!(
                code(replica_superseding(&node, bad)),
                "superseded_record_not_found",
                "{bad}"
            );
            let found = with_write(&node, |c| find_record(c, bad));
            assert!(found.expect("lookup").is_none(), "{bad}");
        }
        // The canonical id finds the record everywhere, untouched by the
        // attempts above.
        assert_eq!(
            node.read_record(&id).expect("read").record["id"],
            id.as_str()
        );
        let check = with_write(&node, |c| {
            crate::data::node::check_supersedes(c, "default", &id).map(|()| json!(null))
        });
        assert_eq!(code(check), "ok null");
        assert_eq!(code(replica_superseding(&node, &id)), "ok 1");
        assert_eq!(code(replica_tombstone(&node, &id)), "ok 1");
        let e = node.read_record(&id).expect_err("tombstoned");
        assert_eq!(e.code().as_str(), "record_tombstoned");
    }
}
