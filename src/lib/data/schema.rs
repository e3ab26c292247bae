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
];
