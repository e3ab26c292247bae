//! `data/data.sqlite`: node identity, collections, records, tombstones, the
//! change feed and the FTS5 index.

use crate::store::{DbSpec, Migration};

/// The data node database.
pub static SPEC: DbSpec = DbSpec {
    name: "data",
    file: "data/data.sqlite",
    migrations: MIGRATIONS,
};

static MIGRATIONS: &[Migration] = &[Migration {
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
}];
