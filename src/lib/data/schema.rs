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
INSERT INTO node_meta(key, value)
    SELECT 'doclen_complete', '1' WHERE NOT EXISTS (SELECT 1 FROM record_fts_docsize);
";
