//! `data/data.sqlite`: node identity, collections, records, tombstones, the
//! change feed, the FTS5 index, and the content of small records (at most
//! [`INLINE_MAX_BYTES`]), which commits in the same transaction as the row
//! naming it; larger content lives in the CAS, fsynced before that commit.

use crate::store::{DbSpec, Migration};

/// Largest record content stored inline in `inline_blobs` rather than as a
/// CAS object. One SQLite commit makes a whole batch of small records
/// durable, where a CAS object costs a file and a directory fsync each.
pub const INLINE_MAX_BYTES: usize = 16 * 1024;

/// The data node database.
pub static SPEC: DbSpec = DbSpec {
    name: "data",
    file: "data/data.sqlite",
    migrations: MIGRATIONS,
};

static MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        description: "agent-data/v1 node: meta, collections, records, tombstones, changes, FTS5",
        sql: "
CREATE TABLE node_meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
) STRICT;
CREATE TABLE collections (
    id TEXT PRIMARY KEY,
    definition_json TEXT NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE records (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    collection_id TEXT NOT NULL REFERENCES collections(id),
    envelope_json TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    content_size INTEGER NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE INDEX records_collection_idx ON records(collection_id, rid);
CREATE TABLE tombstones (
    record_id TEXT PRIMARY KEY REFERENCES records(id),
    collection_id TEXT NOT NULL,
    tombstone_json TEXT NOT NULL,
    tombstoned_at TEXT NOT NULL
) STRICT;
CREATE TABLE changes (
    sequence INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL CHECK (type IN ('record', 'tombstone')),
    collection_id TEXT NOT NULL,
    record_id TEXT NOT NULL,
    at TEXT NOT NULL,
    payload_json TEXT NOT NULL
);
CREATE INDEX changes_collection_idx ON changes(collection_id, sequence);
CREATE VIRTUAL TABLE record_fts USING fts5(
    record_id UNINDEXED,
    collection_id UNINDEXED,
    document,
    tokenize = 'unicode61'
);
",
    },
    Migration {
        version: 2,
        description: "small record content stored inline, committed with its record row",
        sql: "
CREATE TABLE inline_blobs (
    sha256 TEXT PRIMARY KEY,
    bytes BLOB NOT NULL
) STRICT, WITHOUT ROWID;
",
    },
    Migration {
        version: 3,
        description: "bulk-ingest layout: append-only inline blobs, record events name their record \
                      instead of copying its envelope, per-row token counts and a vocabulary view \
                      for ranked queries",
        sql: MIGRATION_3,
    },
    Migration {
        version: 4,
        description: "contentless FTS5 index: the document is not stored a second time, and \
                      record and collection ids are read from records by row id; record ids and \
                      inline blob digests unique as 32-byte keys",
        sql: MIGRATION_4,
    },
];

/// Data schema 3 (issue #13, measured with `scripts/ingest-probe.rs`):
///
/// - `inline_blobs` becomes a rowid table with a unique index on `sha256`:
///   rows arrive in random digest order, and a `WITHOUT ROWID` tree whose
///   rows are kilobytes long splits a random leaf on almost every insert
///   (100,000 1 KB blobs: 3.2x the CPU time and 899 MB of database and WAL
///   writes instead of 279 MB). The index entries stay small.
/// - A `record` change event no longer stores a second copy of the
///   envelope (`payload_json` is NULL for it): the feed reads the record's
///   `envelope_json`, which is the same canonical text, byte for byte. That
///   was a quarter of the bytes a short record writes. Tombstone events keep
///   their payload. Sequences (and so every cursor) are preserved. The
///   table drops `AUTOINCREMENT` (an extra `sqlite_sequence` write per
///   event): change rows are never deleted, so a new sequence, one above
///   the largest, still only ever increases.
/// - `record_doclen` holds each FTS row's token count (FTS5's own
///   `record_fts_docsize`, decoded), keyed by count then row (one B-tree:
///   a batch's rows append to their count's run). A row whose FTS row is
///   gone or was re-indexed may leave a stale entry behind; readers check
///   each entry against `record_fts_docsize`. And
///   `record_fts_vocab` is an `fts5vocab` view of the index: together they
///   let a ranked query enumerate documents in bm25 order without scoring
///   every match (see `node/query.rs`). `node_meta.doclen_complete` says the
///   table covers every FTS row; a node migrated with FTS rows gets it
///   filled by its next writer ([`super::writer`]).
/// - FTS5 keeps up to 8 MiB of pending terms per transaction (its default
///   is 1 MiB) before it writes them out as an index segment: a bulk batch
///   makes fewer, larger segments and merges less (6% fewer instructions
///   per short record, counted with callgrind). Search results do not
///   depend on segment layout.
const MIGRATION_3: &str = "
CREATE TABLE inline_blobs_v3 (
    bid INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL UNIQUE,
    bytes BLOB NOT NULL
) STRICT;
INSERT INTO inline_blobs_v3(sha256, bytes) SELECT sha256, bytes FROM inline_blobs;
DROP TABLE inline_blobs;
ALTER TABLE inline_blobs_v3 RENAME TO inline_blobs;

CREATE TABLE changes_v3 (
    sequence INTEGER PRIMARY KEY,
    type TEXT NOT NULL CHECK (type IN ('record', 'tombstone')),
    collection_id TEXT NOT NULL,
    record_id TEXT NOT NULL,
    at TEXT NOT NULL,
    payload_json TEXT,
    CHECK ((type = 'record') = (payload_json IS NULL))
);
INSERT INTO changes_v3(sequence, type, collection_id, record_id, at, payload_json)
    SELECT sequence, type, collection_id, record_id, at,
           CASE type WHEN 'record' THEN NULL ELSE payload_json END
    FROM changes ORDER BY sequence;
DROP TABLE changes;
ALTER TABLE changes_v3 RENAME TO changes;
CREATE INDEX changes_collection_idx ON changes(collection_id, sequence);

CREATE TABLE record_doclen (
    ntok INTEGER NOT NULL,
    rid INTEGER NOT NULL,
    PRIMARY KEY (ntok, rid)
) STRICT, WITHOUT ROWID;
CREATE VIRTUAL TABLE record_fts_vocab USING fts5vocab(record_fts, row);
INSERT INTO record_fts(record_fts, rank) VALUES ('hashsize', 8388608);
INSERT INTO node_meta(key, value)
    SELECT 'doclen_complete', '1' WHERE NOT EXISTS (SELECT 1 FROM record_fts_docsize);
";

/// Data schema 4 (issue #13, measured with `scripts/ingest-probe.rs`,
/// `PROBE_FTS=contentless-delete`): `record_fts` keeps no content. Its
/// content table held each document a second time (the record's content
/// is in `inline_blobs` or the CAS, its metadata in the envelope) and two
/// `UNINDEXED` text columns, `record_id` and `collection_id`, which a query
/// now reads from `records` by row id (`rid` is the FTS row id). 100,000
/// records in one transaction: 17% fewer bytes written for short ones and
/// 34% fewer for 1 KB ones, and 7-23% more records a second.
///
/// - `contentless_delete = 1` keeps `DELETE ... WHERE rowid = ?` (a
///   tombstone) exact without the document: FTS5 subtracts the row's
///   token counts from its docsize row and masks the row in the index.
/// - A contentless table cannot `rebuild`, so the migration indexes every
///   stored document again, in row id order, from the old content table.
///   Ranking reads only the index, `record_fts_docsize` and the averages
///   record: the `UNINDEXED` columns counted 0 tokens, so every token
///   count, row count and bm25 score is the same double as before.
/// - Whether a row is indexed is asked of `record_fts_docsize` (one row
///   per FTS row).
/// - `record_doclen` is keyed by row id and token count, both unchanged.
///
/// And the two random-key unique indexes hold the 32-byte digests instead
/// of their 64-hex text (`PROBE_KEYS=unhex`: 13% fewer bytes written by
/// 100,000 short records in batches of 20,000 or of 10; their lookups were
/// a sixth of bulk ingest's writer thread):
///
/// - `records` is unique on `unhex(substr(id, 5))` (an expression index;
///   a `CHECK` admits only `rec_` and 64 lowercase hex digits, so the key
///   is one-to-one with the id), `inline_blobs` on `unhex(sha256)`
///   (likewise 64 lowercase hex). The rows keep their text. A lookup names
///   the key expression, so that it uses the index, and the text, so that
///   it matches exactly that id.
/// - `tombstones` loses its foreign key to `records(id)`, which SQLite only
///   allows on a plain unique column: a tombstone is written only for a
///   record the same transaction found.
/// - Row ids (`rid`, the FTS row id; `bid`) are copied, not renumbered.
const MIGRATION_4: &str = "
CREATE VIRTUAL TABLE record_fts_v4 USING fts5(
    document,
    tokenize = 'unicode61',
    content = '',
    contentless_delete = 1
);
INSERT INTO record_fts_v4(record_fts_v4, rank) VALUES ('hashsize', 8388608);
INSERT INTO record_fts_v4(rowid, document) SELECT rowid, document FROM record_fts ORDER BY rowid;
DROP TABLE record_fts_vocab;
DROP TABLE record_fts;
ALTER TABLE record_fts_v4 RENAME TO record_fts;
CREATE VIRTUAL TABLE record_fts_vocab USING fts5vocab(record_fts, row);

CREATE TABLE tombstones_v4 (
    record_id TEXT PRIMARY KEY,
    collection_id TEXT NOT NULL,
    tombstone_json TEXT NOT NULL,
    tombstoned_at TEXT NOT NULL
) STRICT;
INSERT INTO tombstones_v4 SELECT record_id, collection_id, tombstone_json, tombstoned_at
    FROM tombstones ORDER BY record_id;
DROP TABLE tombstones;
ALTER TABLE tombstones_v4 RENAME TO tombstones;

CREATE TABLE records_v4 (
    rid INTEGER PRIMARY KEY,
    id TEXT NOT NULL CHECK (
        length(id) = 68 AND substr(id, 1, 4) = 'rec_' AND id = lower(id)
        AND unhex(substr(id, 5)) IS NOT NULL
    ),
    collection_id TEXT NOT NULL REFERENCES collections(id),
    envelope_json TEXT NOT NULL,
    content_sha256 TEXT NOT NULL,
    content_size INTEGER NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
INSERT INTO records_v4(rid, id, collection_id, envelope_json, content_sha256, content_size, created_at)
    SELECT rid, id, collection_id, envelope_json, content_sha256, content_size, created_at
    FROM records ORDER BY rid;
DROP TABLE records;
ALTER TABLE records_v4 RENAME TO records;
CREATE UNIQUE INDEX records_key ON records(unhex(substr(id, 5)));
CREATE INDEX records_collection_idx ON records(collection_id, rid);

CREATE TABLE inline_blobs_v4 (
    bid INTEGER PRIMARY KEY,
    sha256 TEXT NOT NULL CHECK (
        length(sha256) = 64 AND sha256 = lower(sha256) AND unhex(sha256) IS NOT NULL
    ),
    bytes BLOB NOT NULL
) STRICT;
INSERT INTO inline_blobs_v4(bid, sha256, bytes) SELECT bid, sha256, bytes FROM inline_blobs ORDER BY bid;
DROP TABLE inline_blobs;
ALTER TABLE inline_blobs_v4 RENAME TO inline_blobs;
CREATE UNIQUE INDEX inline_blobs_key ON inline_blobs(unhex(sha256));
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FixedClock;
    use crate::data::{ChangesRequest, Node};
    use crate::store::DataDir;
    use rusqlite::params;
    use std::sync::Arc;
    use std::time::Duration;

    /// A node written by data schema 2 (envelopes copied into record
    /// events, a `WITHOUT ROWID` blob table) reads the same after
    /// migration 3, its feed continues above its last sequence, and its
    /// token counts are filled in by the first writer.
    #[test]
    fn migration_3_keeps_the_feed_and_the_bytes() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let (dir, lock) = DataDir::create(&root, Duration::from_secs(5)).expect("dir");
        dir.ensure_subdir("data", &lock).expect("data");
        let path = root.join(SPEC.file);
        drop(crate::store::private_fs::open_private_rw(&path).expect("file"));
        {
            let c = crate::store::raw_file(&path);
            c.execute_batch(
                "PRAGMA journal_mode=WAL; CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, \
                 description TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT;",
            )
            .expect("meta");
            for m in &SPEC.migrations[..2] {
                c.execute_batch(m.sql).expect("old migration");
                c.execute(
                    "INSERT INTO schema_migrations VALUES (?1, ?2, 'then')",
                    params![m.version, m.description],
                )
                .expect("version");
            }
            c.execute_batch(
                "INSERT INTO node_meta VALUES ('node_id', 'node_old'), \
                   ('change_feed_id', 'feed_123e4567-e89b-42d3-a456-426614174000');
                 INSERT INTO collections VALUES ('default', '{\"id\":\"default\"}', 't');",
            )
            .expect("meta rows");
            for i in 1..=3i64 {
                let id = format!("rec_{:064x}", i);
                let sha = format!("{:064x}", 100 + i);
                let env = format!(
                    "{{\"content\":{{\"sha256\":\"{sha}\",\"size\":5}},\"id\":\"{id}\",\"n\":{i}}}"
                );
                c.execute(
                    "INSERT INTO records(id, collection_id, envelope_json, content_sha256, content_size, created_at) \
                     VALUES (?1, 'default', ?2, ?3, 5, 't')",
                    params![id, env, sha],
                )
                .expect("record");
                c.execute(
                    "INSERT INTO changes(type, collection_id, record_id, at, payload_json) \
                     VALUES ('record', 'default', ?1, 't', ?2)",
                    params![id, env],
                )
                .expect("change");
                c.execute(
                    "INSERT INTO inline_blobs(sha256, bytes) VALUES (?1, ?2)",
                    params![sha, format!("blob{i}").into_bytes()],
                )
                .expect("blob");
                c.execute(
                    "INSERT INTO record_fts(rowid, record_id, collection_id, document) \
                     VALUES (?1, ?2, 'default', ?3)",
                    params![i, id, "word ".repeat(i as usize)],
                )
                .expect("fts");
            }
            c.execute_batch(
                "INSERT INTO tombstones VALUES ('rec_0000000000000000000000000000000000000000000000000000000000000003', \
                   'default', '{\"tomb\":1}', 't');
                 INSERT INTO changes(type, collection_id, record_id, at, payload_json) VALUES ('tombstone', \
                   'default', 'rec_0000000000000000000000000000000000000000000000000000000000000003', 't', '{\"tomb\":1}');
                 DELETE FROM record_fts WHERE rowid = 3;",
            )
            .expect("tombstone");
        }
        drop(lock);
        let clock = Arc::new(FixedClock(jiff::Timestamp::UNIX_EPOCH));
        let node = {
            let lock = dir.lock(Duration::from_secs(5)).expect("lock");
            let c = crate::data::writer::open(&dir, "now", &lock).expect("migrate");
            let v: i64 = c
                .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                    r.get(0)
                })
                .expect("v");
            assert_eq!(v, SPEC.migrations.len() as i64);
            let doclen: Vec<(i64, i64)> = c
                .prepare("SELECT rid, ntok FROM record_doclen ORDER BY rid")
                .expect("p")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("q")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            assert_eq!(doclen, [(1, 1), (2, 2)]);
            let blobs: Vec<(String, Vec<u8>)> = c
                .prepare("SELECT sha256, bytes FROM inline_blobs ORDER BY sha256")
                .expect("p")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("q")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            assert_eq!(blobs.len(), 3);
            assert_eq!(blobs[0], (format!("{:064x}", 101), b"blob1".to_vec()));
            let nulls: i64 = c
                .query_row(
                    "SELECT count(*) FROM changes WHERE payload_json IS NULL",
                    [],
                    |r| r.get(0),
                )
                .expect("n");
            assert_eq!(nulls, 3);
            // A new event continues above the old ones.
            c.execute(
                "INSERT INTO changes(type, collection_id, record_id, at, payload_json) \
                 VALUES ('tombstone', 'default', 'x', 't', '{}')",
                [],
            )
            .expect("insert");
            assert_eq!(c.last_insert_rowid(), 5);
            c.execute("DELETE FROM changes WHERE sequence = 5", [])
                .expect("undo");
            Node::open(&root, clock, Duration::from_secs(5)).expect("node")
        };
        let page = node
            .changes(&ChangesRequest {
                limit: Some(10),
                ..ChangesRequest::default()
            })
            .expect("changes");
        let events = page["changes"].as_array().expect("events");
        assert_eq!(events.len(), 4);
        for (i, e) in events.iter().take(3).enumerate() {
            assert_eq!(e["sequence"], i as i64 + 1);
            assert_eq!(e["record"]["n"], i as i64 + 1, "{e}");
        }
        assert_eq!(events[3]["tombstone"], serde_json::json!({"tomb": 1}));
    }

    /// Every answer a node gives that its layout could change: each record
    /// read (or its error), the whole feed in pages of 3 with their
    /// cursors, and ranked and list queries (ids, order, scores), as text.
    fn answers(root: &std::path::Path, ids: &[String]) -> Vec<String> {
        use crate::data::node::QueryRequest;
        use serde_json::json;
        let root = root.to_owned();
        let ids = ids.to_vec();
        // A thread of its own: no reader connection cached from before.
        std::thread::spawn(move || {
            let clock = Arc::new(FixedClock(jiff::Timestamp::UNIX_EPOCH));
            let node = Node::open(&root, clock, Duration::from_secs(5)).expect("node");
            let mut out = Vec::new();
            for id in &ids {
                out.push(match node.read_record(id) {
                    Ok(r) => r.to_wire().to_string(),
                    Err(e) => format!("{id}: {}", e.code().as_str()),
                });
            }
            let mut cursor = None;
            loop {
                let page = node
                    .changes(&ChangesRequest {
                        cursor: cursor.clone(),
                        limit: Some(3),
                        ..ChangesRequest::default()
                    })
                    .expect("changes");
                out.push(page.to_string());
                if page["has_more"] != json!(true) {
                    break;
                }
                cursor = page["cursor"].as_str().map(str::to_owned);
            }
            for (text, limit, collections, r#where) in [
                ("shared", 100, None, None),
                ("shared", 5, None, None),
                ("shared words", 20, Some(json!(["other"])), None),
                ("urn", 100, None, None),
                ("word7", 100, None, None),
                ("shared", 10, None, Some(json!({"metadata": {"g": 1}}))),
                ("", 100, None, None),
            ] {
                for strategy in [
                    crate::data::node::Strategy::Ranked,
                    crate::data::node::Strategy::Plain,
                ] {
                    let req = QueryRequest {
                        text: Some(json!(text)),
                        limit: Some(json!(limit)),
                        collections: collections.clone(),
                        r#where: r#where.clone(),
                        ..QueryRequest::default()
                    };
                    out.push(node.query_with(&req, strategy).expect("query").to_string());
                }
            }
            out
        })
        .join()
        .expect("answers")
    }

    /// A node written by data schema 3 (an FTS5 table that stores every
    /// document and the record and collection ids of its row) gives the
    /// same answers, byte for byte, after migration 4 as a node written by
    /// schema 4 itself, and those are the answers schema 3's own ranked
    /// SQL gives: the same records, blobs (inline and CAS), feed, cursors,
    /// and ranked ids, order and scores, tombstones included.
    #[test]
    fn migration_4_keeps_every_answer() {
        use crate::data::node::{BulkRequest, TombstoneRequest};
        use serde_json::json;
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let node = crate::data::node::test_node(&root);
        node.create_collection(&json!({"id": "other"}))
            .expect("collection");
        // Ties (equal lengths), repeated terms, non-ASCII text, a record
        // too large to be inline, two collections.
        for (coll, from) in [("default", 0), ("other", 40)] {
            let mut body = String::new();
            for k in from..from + 40 {
                let text = match k % 5 {
                    0 => format!("shared words word{} café n{k}", k % 9),
                    1 => format!("shared shared word{} n{k}", k % 9),
                    2 => format!("shared words and more words word{} n{k}", k % 9),
                    3 => "x".repeat(20_000) + &format!(" shared n{k}"),
                    _ => format!("shared word{} n{k}", k % 9),
                };
                body.push_str(&json!({"text": text, "metadata": {"g": k % 3}}).to_string());
                body.push('\n');
            }
            let req = BulkRequest {
                collection_id: coll.into(),
                collector_id: "text".into(),
                batch_lines: 7,
                flush: crate::data::node::DEFAULT_FLUSH,
            };
            node.ingest_lines(&req, std::io::Cursor::new(body), &|_| {})
                .expect("ingest");
        }
        let listed = node
            .query(&crate::data::node::QueryRequest {
                limit: Some(json!(100)),
                ..crate::data::node::QueryRequest::default()
            })
            .expect("list");
        let mut ids: Vec<String> = listed["records"]
            .as_array()
            .expect("records")
            .iter()
            .map(|r| r["record"]["id"].as_str().expect("id").to_owned())
            .collect();
        ids.sort();
        assert_eq!(ids.len(), 80);
        let gone: Vec<String> = ids.iter().step_by(6).cloned().collect();
        for id in &gone {
            node.tombstone(&TombstoneRequest {
                record_id: id.clone(),
                reason: Some("test".into()),
            })
            .expect("tombstone");
        }
        // Every document, from what the node serves (the index keeps none).
        let mut docs: Vec<(String, String)> = Vec::new();
        for id in &ids {
            if gone.contains(id) {
                continue;
            }
            let r = node.read_record(id).expect("read");
            let serde_json::Value::Object(env) = &r.record else {
                panic!("envelope");
            };
            docs.push((
                id.clone(),
                crate::data::node::index_document(env, &r.bytes, &r.media_type),
            ));
        }
        drop(node);
        let native = answers(&root, &ids);

        // The same node as schema 3 wrote it: every row indexed at
        // collect in row order, with its ids and document stored, and the
        // tombstoned ones deleted afterwards.
        let path = root.join(SPEC.file);
        {
            let c = crate::store::raw_file(&path);
            c.execute_batch(
                "DROP TABLE record_fts_vocab; DROP TABLE record_fts;
                 DELETE FROM schema_migrations WHERE version = 4;",
            )
            .expect("drop");
            c.execute_batch(
                &SPEC.migrations[0].sql[SPEC.migrations[0]
                    .sql
                    .find("CREATE VIRTUAL TABLE record_fts")
                    .expect("fts")..],
            )
            .expect("old fts");
            c.execute_batch(
                "CREATE VIRTUAL TABLE record_fts_vocab USING fts5vocab(record_fts, row);
                 INSERT INTO record_fts(record_fts, rank) VALUES ('hashsize', 8388608);",
            )
            .expect("old vocab");
            let mut rows: Vec<(i64, String, String)> = c
                .prepare("SELECT rid, id, collection_id FROM records ORDER BY rid")
                .expect("p")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .expect("q")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            for (rid, id, coll) in &rows {
                let doc = match docs.iter().find(|(d, _)| d == id) {
                    Some((_, doc)) => doc.clone(),
                    None => format!("tombstoned {id}"),
                };
                c.execute(
                    "INSERT INTO record_fts(rowid, record_id, collection_id, document) \
                     VALUES (?1, ?2, ?3, ?4)",
                    params![rid, id, coll, doc],
                )
                .expect("fts row");
            }
            rows.retain(|(_, id, _)| gone.contains(id));
            for (rid, ..) in &rows {
                c.execute("DELETE FROM record_fts WHERE rowid = ?1", [rid])
                    .expect("delete");
            }
            let v: i64 = c
                .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                    r.get(0)
                })
                .expect("v");
            assert_eq!(v, 3);
        }
        // Schema 3's own ranked answer (every match scored by FTS5), to
        // compare with the migrated node's.
        let old_ranked = |text: &str| -> Vec<(String, u64)> {
            let c = crate::store::raw_file(&path);
            let m = crate::data::syntax::fts_match(text)
                .expect("match")
                .expect("some");
            c.prepare(
                "SELECT record_id, bm25(record_fts) AS rank FROM record_fts \
                 WHERE record_fts MATCH ?1 ORDER BY rank",
            )
            .expect("p")
            .query_map([m], |r| {
                Ok((r.get(0)?, (-r.get::<_, f64>(1)?).max(0.0).to_bits()))
            })
            .expect("q")
            .collect::<rusqlite::Result<_>>()
            .expect("rows")
        };
        let before: Vec<_> = ["shared", "urn", "word7"].map(old_ranked).into();

        // Reads refuse an outdated schema; the first writer migrates.
        {
            let dir = DataDir::open(&root).expect("dir");
            let lock = dir.lock(Duration::from_secs(5)).expect("lock");
            drop(crate::data::writer::open(&dir, "now", &lock).expect("migrate"));
        }
        let migrated = answers(&root, &ids);
        {
            let c = crate::store::raw_file(&path);
            let v: i64 = c
                .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                    r.get(0)
                })
                .expect("v");
            assert_eq!(v, 4);
            c.execute_batch("INSERT INTO record_fts(record_fts) VALUES ('integrity-check')")
                .expect("integrity");
            let stored: i64 = c
                .query_row(
                    "SELECT count(*) FROM sqlite_schema WHERE name = 'record_fts_content'",
                    [],
                    |r| r.get(0),
                )
                .expect("content table");
            assert_eq!(stored, 0);
        }
        assert_eq!(native.len(), migrated.len());
        for (a, b) in native.iter().zip(&migrated) {
            assert_eq!(a, b);
        }
        // The migrated node's ranked pages against schema 3's SQL: the
        // query answers follow the 80 reads and the feed pages.
        let queries = &migrated[migrated.len() - 14..];
        for (k, want) in [(0usize, &before[0]), (6, &before[1]), (8, &before[2])] {
            let page: serde_json::Value = serde_json::from_str(&queries[k]).expect("json");
            let got: Vec<(String, u64)> = page["records"]
                .as_array()
                .expect("records")
                .iter()
                .map(|h| {
                    (
                        h["record"]["id"].as_str().expect("id").to_owned(),
                        h["score"].as_f64().expect("score").to_bits(),
                    )
                })
                .collect();
            assert!(!got.is_empty());
            assert_eq!(&got, want, "query {k}");
        }
    }

    /// The lookup shapes the node uses (by record id, by a change event's
    /// record, by content digest, the insert's conflict target) find their
    /// row through the key indexes, not by a scan.
    #[test]
    fn lookups_use_the_key_indexes() {
        let c = crate::store::in_memory();
        for m in SPEC.migrations {
            c.execute_batch(m.sql).expect("migration");
        }
        let plan = |sql: &str| -> String {
            let mut st = c
                .prepare(&format!("EXPLAIN QUERY PLAN {sql}"))
                .expect("plan");
            // Unbound parameters are NULL: the plan does not depend on them.
            let mut q = st.raw_query();
            let mut rows = Vec::new();
            while let Some(r) = q.next().expect("row") {
                rows.push(r.get::<_, String>(3).expect("detail"));
            }
            rows.join("; ")
        };
        for (sql, index) in [
            (
                "SELECT collection_id FROM records WHERE unhex(substr(id, 5)) = unhex(substr(?1, 5)) AND id = ?1",
                "records_key",
            ),
            (
                "SELECT r.envelope_json, \
                 (SELECT b.bytes FROM inline_blobs b \
                  WHERE unhex(b.sha256) = unhex(r.content_sha256) AND b.sha256 = r.content_sha256) \
                 FROM records r WHERE unhex(substr(r.id, 5)) = unhex(substr(?1, 5)) AND r.id = ?1",
                "inline_blobs_key",
            ),
            (
                "SELECT c.sequence, (SELECT r.envelope_json FROM records r \
                   WHERE unhex(substr(r.id, 5)) = unhex(substr(c.record_id, 5)) AND r.id = c.record_id) \
                 FROM changes c WHERE c.sequence > ?1 ORDER BY c.sequence LIMIT ?2",
                "records_key",
            ),
            (
                "SELECT bytes FROM inline_blobs WHERE unhex(sha256) = unhex(?1) AND sha256 = ?1",
                "inline_blobs_key",
            ),
        ] {
            let p = plan(sql);
            assert!(p.contains(&format!("USING INDEX {index}")), "{sql}: {p}");
            assert!(!p.contains("SCAN r") || p.contains("SCAN c"), "{sql}: {p}");
        }
        // Uniqueness is the database's: the same id or digest twice is a
        // conflict, whatever else differs, and malformed keys are refused.
        c.execute_batch(
            "INSERT INTO collections VALUES ('default', '{}', 't');
             INSERT INTO records(id, collection_id, envelope_json, content_sha256, content_size, created_at)
               VALUES ('rec_' || printf('%064d', 1), 'default', '{}', printf('%064d', 2), 1, 't');
             INSERT INTO inline_blobs(sha256, bytes) VALUES (printf('%064d', 2), x'00');",
        )
        .expect("rows");
        let again = c.execute(
            "INSERT INTO records(id, collection_id, envelope_json, content_sha256, content_size, created_at) \
             VALUES ('rec_' || printf('%064d', 1), 'default', '{\"other\":1}', 'x', 2, 'u') \
             ON CONFLICT(unhex(substr(id, 5))) DO NOTHING",
            [],
        );
        assert_eq!(again.expect("upsert"), 0);
        for bad in [
            format!("rec_{}", "A".repeat(64)),
            format!("rec_{}", "g".repeat(64)),
            format!("rec_{}", "a".repeat(63)),
            format!("xyz_{}", "a".repeat(64)),
        ] {
            let r = c.execute(
                "INSERT INTO records(id, collection_id, envelope_json, content_sha256, content_size, created_at) \
                 VALUES (?1, 'default', '{}', 'x', 1, 't')",
                [&bad],
            );
            assert!(r.is_err(), "{bad}");
        }
        for bad in ["A".repeat(64), "g".repeat(64), "a".repeat(62)] {
            let r = c.execute(
                "INSERT INTO inline_blobs(sha256, bytes) VALUES (?1, x'00')",
                [&bad],
            );
            assert!(r.is_err(), "{bad}");
        }
        let dup = c.execute(
            "INSERT INTO inline_blobs(sha256, bytes) VALUES (printf('%064d', 2), x'01')",
            [],
        );
        assert!(dup.is_err());
    }

    /// A lookup by record id or content digest written as a plain
    /// `id = ?` would still work on schema 4, by scanning the whole table:
    /// no SQL in the crate that reads `records` or `inline_blobs` compares
    /// those columns without the key expression on the same line.
    #[test]
    fn no_lookup_bypasses_the_key_indexes() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).expect("dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).expect("read");
                    for (n, line) in text.lines().enumerate() {
                        let table = [
                            "FROM records",
                            "JOIN records",
                            "FROM inline_blobs",
                            "JOIN inline_blobs",
                        ]
                        .iter()
                        .any(|t| line.contains(t));
                        let by_key = [" id =", " id=", ".id =", ".id=", "sha256 =", "sha256="]
                            .iter()
                            .any(|k| line.contains(k));
                        if table && by_key && !line.contains("unhex(") {
                            out.push(format!("{}:{}: {}", p.display(), n + 1, line.trim()));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        // This test's own patterns name the tables and columns.
        found.retain(|l| !l.contains("let table =") && !l.contains("let by_key ="));
        assert!(found.is_empty(), "{found:#?}");
    }
}
