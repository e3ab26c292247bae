//! `data/data.sqlite`: node identity, collections, records, tombstones, the
//! change feed, the FTS5 index, and the content of small records (at most
//! [`INLINE_MAX_BYTES`]), which commits in the same transaction as the row
//! naming it; larger content lives in the CAS, fsynced before that commit.

use crate::error::Result;
use crate::store::{Connection, DbSpec, Migration, Opened, OptionalExtension};

/// A larger page cache keeps a big batch's dirty pages in memory until
/// its commit instead of spilling them to the WAL mid-transaction. (Public
/// so that `scripts/ingest-probe.rs` runs with exactly these.)
pub const WRITER_PRAGMAS: &str = "PRAGMA cache_size = -65536;";

/// The read connections' settings: reads map the database file instead
/// of copying each page out of the OS cache with a system call (a scan,
/// list mode with `where`, reads many more pages than a connection's own
/// cache holds).
pub const READER_PRAGMAS: &str = "PRAGMA mmap_size = 1073741824;";

/// The set-up of every connection the store opens on the data database:
/// a reader's pragmas; for a writer (after the migrations, in a
/// transaction of its own) the writer pragmas and the completion of
/// `record_doclen` when a migration left it incomplete.
fn on_open(conn: &Connection, opened: Opened) -> Result<()> {
    match opened {
        Opened::Reader => Ok(conn.execute_batch(READER_PRAGMAS)?),
        Opened::Writer => {
            conn.execute_batch(WRITER_PRAGMAS)?;
            complete_doclen(conn)
        }
    }
}

/// Fills `record_doclen` from FTS5's docsize rows, once, for a node that
/// had FTS rows when it was migrated to data schema 3.
fn complete_doclen(conn: &Connection) -> Result<()> {
    let done: Option<String> = conn
        .query_row(
            "SELECT value FROM node_meta WHERE key = 'doclen_complete'",
            [],
            |r| r.get(0),
        )
        .optional()?;
    if done.is_some() {
        return Ok(());
    }
    super::fts::rebuild_doclen(conn)?;
    conn.execute(
        "INSERT INTO node_meta(key, value) VALUES ('doclen_complete', '1')",
        [],
    )?;
    Ok(())
}

/// Largest record content stored inline in `inline_blobs` rather than as a
/// CAS object. One SQLite commit makes a whole batch of small records
/// durable, where a CAS object costs a file and a directory fsync each.
pub const INLINE_MAX_BYTES: usize = 16 * 1024;

/// The data node database.
pub static SPEC: DbSpec = DbSpec {
    name: "data",
    file: "data/data.sqlite",
    migrations: MIGRATIONS,
    on_open: Some(on_open),
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
    Migration {
        version: 5,
        description: "binary keys: record ids and content digests stored as their 32 bytes; \
                      change events and tombstones name their record by row id",
        sql: MIGRATION_5,
    },
    Migration {
        version: 6,
        description: "integer-prefix indexes: records and inline blobs are found by the first \
                      8 bytes of their key (a plain index) and then the whole key",
        sql: MIGRATION_6,
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
///   filled by its next writer (`data::writer`).
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

/// Data schema 5 (issue #13, measured with `scripts/ingest-probe.rs`,
/// `PROBE_ROWS=bin-id,bin-sha,chg-rid` against schema 4: 13.8% fewer
/// instructions and 17.7% fewer database bytes for short records, +15-16%
/// records a second, no loss for 1 KB ones): the rows a record writes hold
/// its keys once, as bytes.
///
/// - `records` keeps the 32 bytes its id names (`key`, plainly unique)
///   instead of the 68-byte id text, its `CHECK` and the `unhex`
///   expression index: a unique index on an expression computes it for
///   every insert and every lookup, and holds the key a second time
///   beside the text. `content_sha256` is the digest's 32 bytes too. The
///   id text exists only in the envelope (and in what the node answers):
///   [`super::key`] converts, in Rust, and only the canonical form, so a
///   non-canonical id finds nothing, as before.
/// - `inline_blobs.sha256` is the digest's 32 bytes, plainly unique.
/// - Every change event names its record by row id (`rid`) instead of
///   its id text; the feed reads the id from `records`. Sequences (and so
///   every cursor) are preserved. A change whose record is missing fails
///   the migration (`rid` is `NOT NULL`) rather than vanishing.
/// - `tombstones` is keyed by the record's row id (its `tombstone_json`
///   keeps the id text). A tombstone is only ever written for a record the
///   same transaction found, and records are never deleted; a tombstone
///   without its record would get a fresh row id, so the migration first
///   counts them and refuses to run if there is one.
/// - Row ids (`rid`, the FTS row id; `bid`; `sequence`) are copied, never
///   renumbered: `record_fts` and `record_doclen` stay as they are.
const MIGRATION_5: &str = "
CREATE TABLE records_v5 (
    rid INTEGER PRIMARY KEY,
    key BLOB NOT NULL UNIQUE CHECK (length(key) = 32),
    collection_id TEXT NOT NULL REFERENCES collections(id),
    envelope_json TEXT NOT NULL,
    content_sha256 BLOB NOT NULL CHECK (length(content_sha256) = 32),
    content_size INTEGER NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
INSERT INTO records_v5(rid, key, collection_id, envelope_json, content_sha256, content_size, created_at)
    SELECT rid, unhex(substr(id, 5)), collection_id, envelope_json, unhex(content_sha256),
           content_size, created_at
    FROM records ORDER BY rid;

CREATE TABLE changes_v5 (
    sequence INTEGER PRIMARY KEY,
    type TEXT NOT NULL CHECK (type IN ('record', 'tombstone')),
    collection_id TEXT NOT NULL,
    rid INTEGER NOT NULL,
    at TEXT NOT NULL,
    payload_json TEXT,
    CHECK ((type = 'record') = (payload_json IS NULL))
);
INSERT INTO changes_v5(sequence, type, collection_id, rid, at, payload_json)
    SELECT c.sequence, c.type, c.collection_id,
           (SELECT r.rid FROM records r
            WHERE unhex(substr(r.id, 5)) = unhex(substr(c.record_id, 5)) AND r.id = c.record_id),
           c.at, c.payload_json
    FROM changes c ORDER BY c.sequence;

CREATE TEMP TABLE migration_5_check (orphan_tombstones INTEGER NOT NULL CHECK (orphan_tombstones = 0));
INSERT INTO migration_5_check SELECT count(*) FROM tombstones t WHERE NOT EXISTS (
    SELECT 1 FROM records r
    WHERE unhex(substr(r.id, 5)) = unhex(substr(t.record_id, 5)) AND r.id = t.record_id
);
DROP TABLE migration_5_check;
CREATE TABLE tombstones_v5 (
    rid INTEGER PRIMARY KEY,
    collection_id TEXT NOT NULL,
    tombstone_json TEXT NOT NULL,
    tombstoned_at TEXT NOT NULL
) STRICT;
INSERT INTO tombstones_v5(rid, collection_id, tombstone_json, tombstoned_at)
    SELECT r.rid, t.collection_id, t.tombstone_json, t.tombstoned_at
    FROM tombstones t CROSS JOIN records r
    ON unhex(substr(r.id, 5)) = unhex(substr(t.record_id, 5)) AND r.id = t.record_id
    ORDER BY r.rid;

DROP TABLE tombstones;
ALTER TABLE tombstones_v5 RENAME TO tombstones;
DROP TABLE changes;
ALTER TABLE changes_v5 RENAME TO changes;
CREATE INDEX changes_collection_idx ON changes(collection_id, sequence);
DROP TABLE records;
ALTER TABLE records_v5 RENAME TO records;
CREATE INDEX records_collection_idx ON records(collection_id, rid);

CREATE TABLE inline_blobs_v5 (
    bid INTEGER PRIMARY KEY,
    sha256 BLOB NOT NULL UNIQUE CHECK (length(sha256) = 32),
    bytes BLOB NOT NULL
) STRICT;
INSERT INTO inline_blobs_v5(bid, sha256, bytes) SELECT bid, unhex(sha256), bytes FROM inline_blobs ORDER BY bid;
DROP TABLE inline_blobs;
ALTER TABLE inline_blobs_v5 RENAME TO inline_blobs;
";

/// One hex digit (1 to 16) of the first 8 bytes of the blob column `$col`,
/// as its value 0-15 (`hex` writes upper-case digits).
macro_rules! prefix_digit {
    ($col:literal, $j:literal) => {
        concat!(
            "(instr('0123456789ABCDEF', substr(hex(substr(",
            $col,
            ", 1, 8)), ",
            $j,
            ", 1)) - 1)"
        )
    };
}

/// The SQL value of [`super::key::prefix`] for the 32-byte blob column
/// `$col`: its first 8 bytes, big-endian, as a signed 64-bit integer. The
/// top byte is taken signed (minus 256 when its high digit is 8 or more),
/// so that the sum never leaves the range of an integer, where SQLite
/// would turn it into a float. SQLite has no blob-to-integer function;
/// only the migration computes this (the writer binds it from Rust).
macro_rules! prefix_sql {
    ($col:literal) => {
        concat!(
            "((",
            prefix_digit!($col, 1),
            " * 16 + ",
            prefix_digit!($col, 2),
            " - 256 * (",
            prefix_digit!($col, 1),
            " >= 8)) * 72057594037927936 + ",
            prefix_digit!($col, 3),
            " * 4503599627370496 + ",
            prefix_digit!($col, 4),
            " * 281474976710656 + ",
            prefix_digit!($col, 5),
            " * 17592186044416 + ",
            prefix_digit!($col, 6),
            " * 1099511627776 + ",
            prefix_digit!($col, 7),
            " * 68719476736 + ",
            prefix_digit!($col, 8),
            " * 4294967296 + ",
            prefix_digit!($col, 9),
            " * 268435456 + ",
            prefix_digit!($col, 10),
            " * 16777216 + ",
            prefix_digit!($col, 11),
            " * 1048576 + ",
            prefix_digit!($col, 12),
            " * 65536 + ",
            prefix_digit!($col, 13),
            " * 4096 + ",
            prefix_digit!($col, 14),
            " * 256 + ",
            prefix_digit!($col, 15),
            " * 16 + ",
            prefix_digit!($col, 16),
            ")"
        )
    };
}

/// Data schema 6 (issue #13, the ingest probe's `PROBE_ROWS=key-int,sha-int`
/// trial against schema 5): the two random-key indexes hold an integer
/// prefix of the key instead of the key.
///
/// - `records.kp` and `inline_blobs.sp` are the first 8 bytes of
///   `records.key` / `inline_blobs.sha256`, big-endian, as a signed
///   integer ([`super::key::prefix`], the one place it is computed;
///   the writer binds it), under a plain, non-unique index
///   (`records_kp`, `inline_blobs_sp`). The 32-byte columns stay, with
///   their length `CHECK`, but lose their `UNIQUE` index. A bulk batch of
///   random keys dirties nearly every leaf of those indexes, so each batch
///   wrote their whole size to the WAL again: with 8-byte integer entries
///   they are 0.41x as large (100,000 short records: 454 and 451 pages
///   instead of 1,111 and 1,110; `inline_blobs` itself grows by 216
///   pages, `records` not at all).
/// - The prefix is not unique: anyone can make two digests share 8 bytes.
///   Every lookup names the prefix (to use the index) and the full key
///   (to match exactly), and uniqueness is the writer's: all writes run in
///   one immediate transaction (`writer::PLAN`) of the one writer under the
///   data-directory lock, which looks a key up before inserting it (a
///   record found is an existing record, as before; an inline blob found
///   keeps its row and gets the new bytes if they differ, the repair the
///   old `INSERT OR REPLACE` made; the same key twice in one batch is
///   stored once, the second insert seeing the first's row).
/// - A record read looks its inline blob up with the prefix computed in
///   Rust from the record's `content_sha256` (a second, cached statement),
///   rather than storing the blob's prefix in the record row.
/// - The migration computes the prefixes in SQL ([`prefix_sql`]) and
///   copies both tables in row id order, keeping every `rid` and `bid`;
///   it fails (and the whole migration rolls back) if a copy holds fewer
///   rows than its table. Nothing else changes. A 102,001-record schema-5
///   node migrated in 1.06 s (0.94 s CPU, 14 MiB peak RSS), its answers
///   byte for byte the same.
///
/// Measured with the real binary against schema 5's, alternating, bulk
/// `data collect --jsonl` in batches of 20,000 (records/s): 1,000,000
/// short records 50,530 / 47,620 / 48,857 against 39,802 / 35,551 /
/// 36,522 (+31%, 17% less CPU, 1,078 against 1,125 MB); 100,000 short records median 71,457
/// against 67,549 (+6%); 100,000 1 KB records 29,955 / 30,362 against
/// 29,051 / 30,559 (the same). See `docs/data-node.md`.
const MIGRATION_6: &str = concat!(
    "
CREATE TABLE records_v6 (
    rid INTEGER PRIMARY KEY,
    kp INTEGER NOT NULL,
    key BLOB NOT NULL CHECK (length(key) = 32),
    collection_id TEXT NOT NULL REFERENCES collections(id),
    envelope_json TEXT NOT NULL,
    content_sha256 BLOB NOT NULL CHECK (length(content_sha256) = 32),
    content_size INTEGER NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
INSERT INTO records_v6(rid, kp, key, collection_id, envelope_json, content_sha256, content_size, created_at)
    SELECT rid, ",
    prefix_sql!("key"),
    ", key, collection_id, envelope_json, content_sha256, content_size, created_at
    FROM records ORDER BY rid;
CREATE TABLE inline_blobs_v6 (
    bid INTEGER PRIMARY KEY,
    sp INTEGER NOT NULL,
    sha256 BLOB NOT NULL CHECK (length(sha256) = 32),
    bytes BLOB NOT NULL
) STRICT;
INSERT INTO inline_blobs_v6(bid, sp, sha256, bytes)
    SELECT bid, ",
    prefix_sql!("sha256"),
    ", sha256, bytes FROM inline_blobs ORDER BY bid;

CREATE TEMP TABLE migration_6_check (lost INTEGER NOT NULL CHECK (lost = 0));
INSERT INTO migration_6_check
    SELECT (SELECT count(*) FROM records) - (SELECT count(*) FROM records_v6);
INSERT INTO migration_6_check
    SELECT (SELECT count(*) FROM inline_blobs) - (SELECT count(*) FROM inline_blobs_v6);
DROP TABLE migration_6_check;

DROP TABLE records;
ALTER TABLE records_v6 RENAME TO records;
CREATE INDEX records_kp ON records(kp);
CREATE INDEX records_collection_idx ON records(collection_id, rid);
DROP TABLE inline_blobs;
ALTER TABLE inline_blobs_v6 RENAME TO inline_blobs;
CREATE INDEX inline_blobs_sp ON inline_blobs(sp);
"
);

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
            let blobs: Vec<(Vec<u8>, Vec<u8>)> = c
                .prepare("SELECT sha256, bytes FROM inline_blobs ORDER BY sha256")
                .expect("p")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("q")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            assert_eq!(blobs.len(), 3);
            let key = crate::data::key::hex_key(&format!("{:064x}", 101)).expect("key");
            assert_eq!(blobs[0], (key.to_vec(), b"blob1".to_vec()));
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
                "INSERT INTO changes(type, collection_id, rid, at, payload_json) \
                 VALUES ('tombstone', 'default', 1, 't', '{}')",
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

    /// What a node's layout could change, written by the current schema:
    /// ties (equal lengths), repeated terms, non-ASCII text, records too
    /// large to be inline, two collections, every sixth record tombstoned.
    /// Returns every record id (sorted), the tombstoned ones, and the
    /// index document of each live one (the index keeps none).
    fn rich_node(root: &std::path::Path) -> (Vec<String>, Vec<String>, Vec<(String, String)>) {
        use crate::data::node::{BulkRequest, TombstoneRequest};
        use serde_json::json;
        let node = crate::data::node::test_node(root);
        node.create_collection(&json!({"id": "other"}))
            .expect("collection");
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
        (ids, gone, docs)
    }

    /// The `CREATE TABLE name_v5 (...) STRICT;` statement of migration 5.
    fn migration_5_ddl(name: &str) -> &'static str {
        let start = MIGRATION_5
            .find(&format!("CREATE TABLE {name}_v5 ("))
            .expect("table");
        let len = MIGRATION_5[start..].find(") STRICT;").expect("end") + ") STRICT;".len();
        &MIGRATION_5[start..start + len]
    }

    /// Migrates the node at `root` by opening its first writer, then checks
    /// that every answer about `ids` is the one `native` recorded.
    fn migrate_and_compare(root: &std::path::Path, ids: &[String], native: &[String]) {
        {
            let dir = DataDir::open(root).expect("dir");
            let lock = dir.lock(Duration::from_secs(5)).expect("lock");
            drop(crate::data::writer::open(&dir, "now", &lock).expect("migrate"));
        }
        let migrated = answers(root, ids);
        assert_eq!(native.len(), migrated.len());
        for (a, b) in native.iter().zip(&migrated) {
            assert_eq!(a, b);
        }
    }

    /// Every row the queries `sqls` return, each as its columns' debug
    /// forms joined by `|` (prefixed by its query when `named`): what a
    /// migration test compares before and after.
    fn dump_rows(c: &rusqlite::Connection, sqls: &[&str], named: bool) -> Vec<String> {
        let mut out = Vec::new();
        for sql in sqls {
            let mut st = c.prepare(sql).expect("p");
            let n = st.column_count();
            let mut q = st.query([]).expect("q");
            while let Some(r) = q.next().expect("row") {
                let v: Vec<String> = (0..n)
                    .map(|i| format!("{:?}", r.get_ref(i).expect("col")))
                    .collect();
                out.push(if named {
                    format!("{sql}: {}", v.join("|"))
                } else {
                    v.join("|")
                });
            }
        }
        out
    }

    /// The schema of a database, every table, index and trigger with its
    /// SQL text, by name.
    fn schema_text(c: &rusqlite::Connection) -> Vec<(String, String, String, Option<String>)> {
        c.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY name")
            .expect("p")
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
            .expect("q")
            .collect::<rusqlite::Result<_>>()
            .expect("schema")
    }

    /// Rewrites a node's schema-6 tables in place into schema 5's layout,
    /// by migration 5's own DDL: `records.key` and `inline_blobs.sha256`
    /// plainly unique, no prefix columns or their indexes. Row ids and
    /// blob ids are kept; the other tables are the same in both.
    fn schema_5_tables(c: &rusqlite::Connection) {
        c.execute_batch(&format!(
            "{records}
             INSERT INTO records_v5(rid, key, collection_id, envelope_json, content_sha256, content_size, created_at)
                 SELECT rid, key, collection_id, envelope_json, content_sha256, content_size, created_at
                 FROM records ORDER BY rid;
             DROP TABLE records;
             ALTER TABLE records_v5 RENAME TO records;
             CREATE INDEX records_collection_idx ON records(collection_id, rid);
             {blobs}
             INSERT INTO inline_blobs_v5(bid, sha256, bytes) SELECT bid, sha256, bytes FROM inline_blobs ORDER BY bid;
             DROP TABLE inline_blobs;
             ALTER TABLE inline_blobs_v5 RENAME TO inline_blobs;
             DELETE FROM schema_migrations WHERE version = 6;",
            records = migration_5_ddl("records"),
            blobs = migration_5_ddl("inline_blobs"),
        ))
        .expect("schema 5 tables");
    }

    /// The SQL prefix migration 6 computes is [`crate::data::key::prefix`],
    /// an integer (never a float), for top bytes with the sign bit set and
    /// clear, the extremes and random keys.
    #[test]
    fn the_migration_prefix_is_the_rust_prefix() {
        let c = crate::store::in_memory();
        let sql = concat!(
            "SELECT ",
            prefix_sql!("k"),
            ", typeof(",
            prefix_sql!("k"),
            ") FROM (SELECT ?1 AS k)"
        );
        let mut st = c.prepare(sql).expect("prepare");
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let mut heads: Vec<[u8; 8]> = vec![
            [0x80, 0, 0, 0, 0, 0, 0, 0],
            [0x80, 0, 0, 0, 0, 0, 0, 1],
            [0xff; 8],
            [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe],
            [0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
            [0x7f, 0, 0, 0, 0, 0, 0, 0],
            [0; 8],
            [0, 0, 0, 0, 0, 0, 0, 1],
            [0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef],
            [0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10],
        ];
        for top in 0..=255u8 {
            heads.push([top, 0xa5, 0x5a, 0xff, 0, 0x80, 0x7f, top]);
        }
        for _ in 0..500 {
            heads.push(next().to_be_bytes());
        }
        let mut signs = [false; 2];
        for head in heads {
            let mut k: crate::data::key::Key = [0; 32];
            k[..8].copy_from_slice(&head);
            for chunk in k[8..].chunks_mut(8) {
                chunk.copy_from_slice(&next().to_be_bytes());
            }
            let (v, ty): (i64, String) = st
                .query_row([&k[..]], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("prefix");
            assert_eq!(ty, "integer", "{head:02x?}");
            let want = crate::data::key::prefix(&k);
            assert_eq!(v, want, "{head:02x?}");
            signs[usize::from(want < 0)] = true;
        }
        assert_eq!(signs, [true, true]);
    }

    /// A node written by data schema 5 (32-byte keys plainly unique, no
    /// prefix columns) gives the same answers, byte for byte, after
    /// migration 6 as the node schema 6 wrote: records, blobs (inline and
    /// CAS), the feed with its cursors, ranked and plain queries,
    /// tombstones, two collections. Its rows are the same rows with the
    /// same row ids, blob ids and sequences, and the prefixes migration 6
    /// computed in SQL are the ones the writer computed in Rust.
    #[test]
    fn migration_6_keeps_every_answer() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let (ids, gone, _) = rich_node(&root);
        assert!(!gone.is_empty());
        let native = answers(&root, &ids);
        let path = root.join(SPEC.file);
        let dump = |c: &rusqlite::Connection, sqls: &[&str]| dump_rows(c, sqls, true);
        // Every row of every table, prefixes included.
        let all = [
            "SELECT * FROM records ORDER BY rid",
            "SELECT * FROM changes ORDER BY sequence",
            "SELECT * FROM tombstones ORDER BY rid",
            "SELECT * FROM inline_blobs ORDER BY bid",
            "SELECT * FROM record_doclen ORDER BY rid",
            "SELECT id, sz FROM record_fts_docsize ORDER BY id",
            "SELECT * FROM collections ORDER BY id",
            "SELECT * FROM node_meta ORDER BY key",
        ];
        // What schema 5 stores of records and inline blobs.
        let schema_5_rows = [
            "SELECT rid, key, collection_id, envelope_json, content_sha256, content_size, created_at \
             FROM records ORDER BY rid",
            "SELECT bid, sha256, bytes FROM inline_blobs ORDER BY bid",
        ];
        let (native_rows, old_rows) = {
            let c = crate::store::raw_file(&path);
            let native_rows = dump(&c, &all);
            schema_5_tables(&c);
            // The layout is exactly the one migrations 1-5 create.
            let five = crate::store::in_memory();
            for m in &SPEC.migrations[..5] {
                five.execute_batch(m.sql).expect("migration");
            }
            let mut want = schema_text(&five);
            let mut got = schema_text(&c);
            got.retain(|t| t.1 != "schema_migrations");
            want.retain(|t| t.1 != "schema_migrations");
            assert_eq!(got, want);
            let v: i64 = c
                .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                    r.get(0)
                })
                .expect("v");
            assert_eq!(v, 5);
            (native_rows, dump(&c, &schema_5_rows))
        };
        // Reads refuse an outdated schema; the first writer migrates.
        assert_eq!(
            Node::open(
                &root,
                Arc::new(FixedClock(jiff::Timestamp::UNIX_EPOCH)),
                Duration::from_secs(5)
            )
            .and_then(|n| n.read_record(&ids[0]).map(|_| ()))
            .map_err(|e| e.code()),
            Err(crate::error::Code::SchemaOutdated)
        );
        migrate_and_compare(&root, &ids, &native);
        let c = crate::store::raw_file(&path);
        assert_eq!(dump(&c, &schema_5_rows), old_rows);
        assert_eq!(dump(&c, &all), native_rows);
        // The migrated prefixes, against Rust's, of both signs.
        let mut signs = [0usize; 2];
        for sql in [
            "SELECT kp, key FROM records",
            "SELECT sp, sha256 FROM inline_blobs",
        ] {
            let rows: Vec<(i64, Vec<u8>)> = c
                .prepare(sql)
                .expect("p")
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .expect("q")
                .collect::<rusqlite::Result<_>>()
                .expect("rows");
            assert!(!rows.is_empty(), "{sql}");
            for (p, k) in rows {
                let k = crate::data::key::Key::try_from(&k[..]).expect("32 bytes");
                assert_eq!(p, crate::data::key::prefix(&k), "{sql}");
                signs[usize::from(p < 0)] += 1;
            }
        }
        assert!(signs[0] > 0 && signs[1] > 0, "{signs:?}");
        let names: Vec<String> = c
            .prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ORDER BY name")
            .expect("p")
            .query_map([], |r| r.get(0))
            .expect("q")
            .collect::<rusqlite::Result<_>>()
            .expect("names");
        for want in ["inline_blobs_sp", "records_collection_idx", "records_kp"] {
            assert!(names.iter().any(|n| n == want), "{names:?}");
        }
        let autos: i64 = c
            .query_row(
                "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'sqlite_autoindex_records%' \
                 OR name LIKE 'sqlite_autoindex_inline_blobs%'",
                [],
                |r| r.get(0),
            )
            .expect("autoindexes");
        assert_eq!(autos, 0);
        c.execute_batch("INSERT INTO record_fts(record_fts) VALUES ('integrity-check')")
            .expect("integrity");
        let v: i64 = c
            .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .expect("v");
        assert_eq!(v, 6);
    }

    /// Migration 6 refuses a schema-5 node with a row it cannot keep (a
    /// key or digest that is not 32 bytes, written past the `CHECK`)
    /// rather than dropping it: the first writer fails, and the node is
    /// left at schema 5 with every row as it was.
    #[test]
    fn migration_6_refuses_rows_it_cannot_keep() {
        for bad in [
            "INSERT INTO records(key, collection_id, envelope_json, content_sha256, content_size, created_at) \
             VALUES (zeroblob(31), 'default', '{}', zeroblob(32), 1, 't')",
            "INSERT INTO inline_blobs(sha256, bytes) VALUES (zeroblob(33), x'00')",
        ] {
            let t = tempfile::tempdir().expect("tempdir");
            let root = t.path().join("d");
            drop(crate::data::node::test_node(&root));
            let path = root.join(SPEC.file);
            let rows = |c: &rusqlite::Connection| -> Vec<String> {
                dump_rows(
                    c,
                    &[
                        "SELECT * FROM records ORDER BY rid",
                        "SELECT * FROM inline_blobs ORDER BY bid",
                        "SELECT version FROM schema_migrations ORDER BY version",
                        "SELECT type, name, sql FROM sqlite_schema ORDER BY name",
                    ],
                    false,
                )
            };
            let before = {
                let c = crate::store::raw_file(&path);
                schema_5_tables(&c);
                c.execute_batch("PRAGMA ignore_check_constraints = ON")
                    .expect("pragma");
                c.execute_batch(bad).expect("bad row");
                c.execute_batch("PRAGMA ignore_check_constraints = OFF")
                    .expect("pragma");
                rows(&c)
            };
            let dir = DataDir::open(&root).expect("dir");
            let lock = dir.lock(Duration::from_secs(5)).expect("lock");
            let e = crate::data::writer::open(&dir, "now", &lock).expect_err("refused");
            assert!(e.to_string().contains("migration 6"), "{e}");
            drop(lock);
            let c = crate::store::raw_file(&path);
            assert_eq!(rows(&c), before, "{bad}");
            assert!(before.iter().any(|r| r == "Integer(5)"));
            assert!(!before.iter().any(|r| r == "Integer(6)"));
        }
    }

    /// Rewrites a node's tables in place into schema 4's layout (through
    /// schema 5's), by schema 4's own DDL (migrations 3 and 4): record ids and digests
    /// as text with their expression indexes, change events and tombstones
    /// naming their record by id text. Row ids are kept. The FTS table and
    /// `record_doclen` are the same in both.
    fn schema_4_tables(c: &rusqlite::Connection) {
        schema_5_tables(c);
        c.execute_batch(
            "CREATE TABLE records_v4 (
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
             INSERT INTO records_v4 SELECT rid, 'rec_' || lower(hex(key)), collection_id,
                 envelope_json, lower(hex(content_sha256)), content_size, created_at
                 FROM records ORDER BY rid;
             CREATE TABLE changes_v4 (
                sequence INTEGER PRIMARY KEY,
                type TEXT NOT NULL CHECK (type IN ('record', 'tombstone')),
                collection_id TEXT NOT NULL,
                record_id TEXT NOT NULL,
                at TEXT NOT NULL,
                payload_json TEXT,
                CHECK ((type = 'record') = (payload_json IS NULL))
             );
             INSERT INTO changes_v4 SELECT c.sequence, c.type, c.collection_id,
                 'rec_' || lower(hex(r.key)), c.at, c.payload_json
                 FROM changes c JOIN records r ON r.rid = c.rid ORDER BY c.sequence;
             CREATE TABLE tombstones_v4 (
                record_id TEXT PRIMARY KEY,
                collection_id TEXT NOT NULL,
                tombstone_json TEXT NOT NULL,
                tombstoned_at TEXT NOT NULL
             ) STRICT;
             INSERT INTO tombstones_v4 SELECT 'rec_' || lower(hex(r.key)), t.collection_id,
                 t.tombstone_json, t.tombstoned_at FROM tombstones t JOIN records r ON r.rid = t.rid;
             CREATE TABLE inline_blobs_v4 (
                bid INTEGER PRIMARY KEY,
                sha256 TEXT NOT NULL CHECK (
                    length(sha256) = 64 AND sha256 = lower(sha256) AND unhex(sha256) IS NOT NULL
                ),
                bytes BLOB NOT NULL
             ) STRICT;
             INSERT INTO inline_blobs_v4 SELECT bid, lower(hex(sha256)), bytes FROM inline_blobs ORDER BY bid;
             DROP TABLE tombstones; ALTER TABLE tombstones_v4 RENAME TO tombstones;
             DROP TABLE changes; ALTER TABLE changes_v4 RENAME TO changes;
             CREATE INDEX changes_collection_idx ON changes(collection_id, sequence);
             DROP TABLE records; ALTER TABLE records_v4 RENAME TO records;
             CREATE UNIQUE INDEX records_key ON records(unhex(substr(id, 5)));
             CREATE INDEX records_collection_idx ON records(collection_id, rid);
             DROP TABLE inline_blobs; ALTER TABLE inline_blobs_v4 RENAME TO inline_blobs;
             CREATE UNIQUE INDEX inline_blobs_key ON inline_blobs(unhex(sha256));
             DELETE FROM schema_migrations WHERE version = 5;",
        )
        .expect("schema 4 tables");
    }

    /// A node written by data schema 3 (an FTS5 table that stores every
    /// document and the record and collection ids of its row) gives the
    /// same answers, byte for byte, after migration 4 as a node written by
    /// schema 4 itself, and those are the answers schema 3's own ranked
    /// SQL gives: the same records, blobs (inline and CAS), feed, cursors,
    /// and ranked ids, order and scores, tombstones included.
    #[test]
    fn migration_4_keeps_every_answer() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let (ids, gone, docs) = rich_node(&root);
        let native = answers(&root, &ids);

        // The same node as schema 3 wrote it: every row indexed at
        // collect in row order, with its ids and document stored, and the
        // tombstoned ones deleted afterwards.
        let path = root.join(SPEC.file);
        {
            let c = crate::store::raw_file(&path);
            schema_4_tables(&c);
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
            assert_eq!(v, SPEC.migrations.len() as i64);
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

    /// A node written by data schema 4 (record ids and digests as text,
    /// change events and tombstones naming their record by id text) gives
    /// the same answers, byte for byte, after migration 5 as the node that
    /// schema 5 wrote: records, blobs (inline and CAS), the feed with its
    /// cursors, ranked and plain queries, tombstones, two collections.
    /// Its rows read by schema 4's own SQL are the migrated rows read by
    /// schema 5's, and every row id, blob id and sequence is kept.
    #[test]
    fn migration_5_keeps_every_answer() {
        let t = tempfile::tempdir().expect("tempdir");
        let root = t.path().join("d");
        let (ids, gone, _) = rich_node(&root);
        assert!(!gone.is_empty());
        let native = answers(&root, &ids);
        let path = root.join(SPEC.file);
        let tables = |c: &rusqlite::Connection| -> Vec<String> {
            dump_rows(
                c,
                &[
                    "SELECT * FROM records ORDER BY rid",
                    "SELECT * FROM changes ORDER BY sequence",
                    "SELECT * FROM tombstones ORDER BY rid",
                    "SELECT * FROM inline_blobs ORDER BY bid",
                    "SELECT * FROM record_doclen ORDER BY rid",
                    "SELECT id, sz FROM record_fts_docsize ORDER BY id",
                ],
                true,
            )
        };
        // Each record's row as (id, collection, envelope, digest, inline
        // bytes, tombstone), each event as (sequence, type, collection,
        // record id, at, payload): schema 4's SQL, then schema 5's.
        type Rows = (Vec<[Option<String>; 6]>, Vec<[Option<String>; 6]>);
        let text = |r: &rusqlite::Row<'_>, i: usize| -> Option<String> {
            match r.get_ref(i).expect("col") {
                rusqlite::types::ValueRef::Null => None,
                rusqlite::types::ValueRef::Text(t) => Some(String::from_utf8_lossy(t).into()),
                rusqlite::types::ValueRef::Blob(b) => Some(format!("{b:?}")),
                v => Some(format!("{v:?}")),
            }
        };
        let rows = |c: &rusqlite::Connection, record: &str, feed: &str| -> Rows {
            let mut st = c.prepare(record).expect("p");
            let recs = ids
                .iter()
                .map(|id| {
                    st.query_row([id], |r| Ok(std::array::from_fn(|i| text(r, i))))
                        .expect("record")
                })
                .collect();
            let mut st = c.prepare(feed).expect("p");
            let events = st
                .query_map([], |r| Ok(std::array::from_fn(|i| text(r, i))))
                .expect("q")
                .collect::<rusqlite::Result<_>>()
                .expect("events");
            (recs, events)
        };
        let (before_tables, before_rows) = {
            let c = crate::store::raw_file(&path);
            let native_tables = tables(&c);
            schema_4_tables(&c);
            let v: i64 = c
                .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                    r.get(0)
                })
                .expect("v");
            assert_eq!(v, 4);
            let old = rows(
                &c,
                "SELECT r.id, r.collection_id, r.envelope_json, r.content_sha256, \
                 (SELECT b.bytes FROM inline_blobs b \
                  WHERE unhex(b.sha256) = unhex(r.content_sha256) AND b.sha256 = r.content_sha256), \
                 (SELECT t.tombstone_json FROM tombstones t WHERE t.record_id = r.id) \
                 FROM records r WHERE unhex(substr(r.id, 5)) = unhex(substr(?1, 5)) AND r.id = ?1",
                "SELECT c.sequence, c.type, c.collection_id, c.record_id, c.at, \
                 COALESCE(c.payload_json, (SELECT r.envelope_json FROM records r \
                   WHERE unhex(substr(r.id, 5)) = unhex(substr(c.record_id, 5)) AND r.id = c.record_id)) \
                 FROM changes c ORDER BY c.sequence",
            );
            (native_tables, old)
        };
        // The first writer migrates.
        migrate_and_compare(&root, &ids, &native);
        let c = crate::store::raw_file(&path);
        assert_eq!(tables(&c), before_tables);
        let new = rows(
            &c,
            "SELECT 'rec_' || lower(hex(r.key)), r.collection_id, r.envelope_json, \
             lower(hex(r.content_sha256)), \
             (SELECT b.bytes FROM inline_blobs b WHERE b.sha256 = r.content_sha256), \
             (SELECT t.tombstone_json FROM tombstones t WHERE t.rid = r.rid) \
             FROM records r WHERE r.key = unhex(substr(?1, 5))",
            "SELECT c.sequence, c.type, c.collection_id, 'rec_' || lower(hex(r.key)), c.at, \
             COALESCE(c.payload_json, r.envelope_json) \
             FROM changes c JOIN records r ON r.rid = c.rid ORDER BY c.sequence",
        );
        assert_eq!(new, before_rows);
        // Inline and CAS content, live and tombstoned records, both
        // collections, both kinds of event were there to compare.
        let (recs, events) = &new;
        assert!(recs.iter().any(|r| r[4].is_none()));
        assert!(recs.iter().any(|r| r[4].is_some() && r[5].is_some()));
        assert!(recs.iter().any(|r| r[1].as_deref() == Some("other")));
        assert!(events.iter().any(|e| e[1].as_deref() == Some("tombstone")));
        assert_eq!(events.len(), ids.len() + gone.len());
        c.execute_batch("INSERT INTO record_fts(record_fts) VALUES ('integrity-check')")
            .expect("integrity");
        let v: i64 = c
            .query_row("SELECT max(version) FROM schema_migrations", [], |r| {
                r.get(0)
            })
            .expect("v");
        assert_eq!(v, SPEC.migrations.len() as i64);
    }

    /// Migration 5 refuses a schema-4 node whose change event or tombstone
    /// names a record that is not stored, rather than dropping the event
    /// or giving the tombstone a row id of no record.
    #[test]
    fn migration_5_refuses_rows_without_their_record() {
        let one = format!("rec_{}", "a".repeat(64));
        let missing = format!("rec_{}", "b".repeat(64));
        for orphan in [
            format!(
                "INSERT INTO changes(type, collection_id, record_id, at, payload_json) \
                 VALUES ('tombstone', 'default', '{missing}', 't', '{{}}')"
            ),
            format!("INSERT INTO tombstones VALUES ('{missing}', 'default', '{{}}', 't')"),
        ] {
            let c = crate::store::in_memory();
            for m in &SPEC.migrations[..4] {
                c.execute_batch(m.sql).expect("migration");
            }
            c.execute_batch(&format!(
                "INSERT INTO collections VALUES ('default', '{{}}', 't');
                 INSERT INTO records(id, collection_id, envelope_json, content_sha256, content_size, created_at)
                   VALUES ('{one}', 'default', '{{}}', printf('%064d', 2), 1, 't');
                 INSERT INTO changes(type, collection_id, record_id, at) VALUES ('record', 'default', '{one}', 't');"
            ))
            .expect("rows");
            c.execute_batch("SAVEPOINT m").expect("savepoint");
            c.execute_batch(SPEC.migrations[4].sql)
                .expect("a whole node migrates");
            c.execute_batch("ROLLBACK TO m; RELEASE m").expect("undo");
            c.execute_batch(&orphan).expect("orphan");
            assert!(c.execute_batch(SPEC.migrations[4].sql).is_err(), "{orphan}");
        }
    }

    /// The lookup shapes the node uses (a record by key prefix and key, a
    /// change event's record by row id, inline content by digest prefix
    /// and digest, tombstones by row id) find their row through an index,
    /// not by a scan; the keys are the database's to keep well-formed
    /// (their uniqueness is the writer's: see
    /// `writer::tests::keys_sharing_their_prefix_are_told_apart`).
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
        for (sql, want) in [
            (
                "SELECT rid, collection_id FROM records WHERE kp = ?1 AND key = ?2",
                &["SEARCH records USING INDEX records_kp (kp=?)"][..],
            ),
            (
                "SELECT r.envelope_json, r.content_sha256, r.content_size, \
                 EXISTS(SELECT 1 FROM tombstones t WHERE t.rid = r.rid) \
                 FROM records r WHERE r.kp = ?1 AND r.key = ?2",
                &[
                    "SEARCH r USING INDEX records_kp (kp=?)",
                    "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)",
                ],
            ),
            (
                "SELECT c.sequence, r.key, COALESCE(c.payload_json, r.envelope_json) \
                 FROM changes c LEFT JOIN records r ON r.rid = c.rid \
                 WHERE c.sequence > ?1 AND (?2 IS NULL OR c.collection_id = ?2) \
                 ORDER BY c.sequence LIMIT ?3",
                &["SEARCH r USING INTEGER PRIMARY KEY (rowid=?)"],
            ),
            (
                "SELECT bytes FROM inline_blobs WHERE sp = ?1 AND sha256 = ?2",
                &["SEARCH inline_blobs USING INDEX inline_blobs_sp (sp=?)"],
            ),
            (
                "SELECT bid, bytes = ?3 FROM inline_blobs WHERE sp = ?1 AND sha256 = ?2",
                &["SEARCH inline_blobs USING INDEX inline_blobs_sp (sp=?)"],
            ),
            (
                "SELECT tombstone_json FROM tombstones WHERE rid = ?1",
                &["SEARCH tombstones USING INTEGER PRIMARY KEY (rowid=?)"],
            ),
        ] {
            let p = plan(sql);
            for w in want {
                assert!(p.contains(w), "{sql}: {p}");
            }
            assert!(
                !p.contains("SCAN r") && !p.contains("SCAN t") && !p.contains("SCAN inline"),
                "{sql}: {p}"
            );
        }
        // A key or digest that is not 32 bytes (or is text) is refused.
        let key = vec![7u8; 32];
        c.execute_batch("INSERT INTO collections VALUES ('default', '{}', 't')")
            .expect("collection");
        let insert = "INSERT INTO records(kp, key, collection_id, envelope_json, content_sha256, content_size, created_at) \
                      VALUES (1, ?1, 'default', '{}', ?2, 1, 't')";
        let sha = vec![9u8; 32];
        assert_eq!(c.execute(insert, params![key, sha]).expect("first"), 1);
        let bad: [(rusqlite::types::Value, rusqlite::types::Value); 5] = [
            (vec![1u8; 31].into(), sha.clone().into()),
            (vec![1u8; 33].into(), sha.clone().into()),
            ("a".repeat(32).into(), sha.clone().into()),
            (vec![1u8; 32].into(), vec![9u8; 31].into()),
            (vec![1u8; 32].into(), "9".repeat(32).into()),
        ];
        for (k, d) in bad {
            assert!(c.execute(insert, params![k, d]).is_err(), "{k:?} {d:?}");
        }
        c.execute(
            "INSERT INTO inline_blobs(sp, sha256, bytes) VALUES (1, ?1, x'00')",
            [&sha],
        )
        .expect("blob");
        for bad in [
            rusqlite::types::Value::from(vec![1u8; 31]),
            vec![1u8; 33].into(),
            "a".repeat(32).into(),
        ] {
            let r = c.execute(
                "INSERT INTO inline_blobs(sp, sha256, bytes) VALUES (1, ?1, x'01')",
                [&bad],
            );
            assert!(r.is_err(), "{bad:?}");
        }
        // A prefix is an integer.
        for bad in [
            "INSERT INTO inline_blobs(sp, sha256, bytes) VALUES ('x', ?1, x'01')",
            "INSERT INTO inline_blobs(sp, sha256, bytes) VALUES (NULL, ?1, x'01')",
        ] {
            assert!(c.execute(bad, [&sha]).is_err(), "{bad}");
        }
    }

    /// With binary keys, a lookup that compares a key column to text, or
    /// names a record by id text, would still run and find nothing. No SQL
    /// in the crate outside this file (whose migrations and tests convert
    /// between layouts on purpose) that reads or writes the record tables
    /// converts hex in SQL, compares a key to a text literal or names an id
    /// text column: ids and digests convert in Rust, in `data::key`. (A
    /// text value bound to a key parameter finds nothing either; the
    /// suite's reads by canonical id through every entry point catch that.)
    /// And since data schema 6 no key is unique in the database: a line
    /// that compares `key` or `sha256` names its prefix (`kp = ?`,
    /// `sp = ?`) too, so the lookup uses the prefix index, and no insert
    /// relies on a conflict with a unique key (`ON CONFLICT(key)`,
    /// `OR REPLACE`, `OR IGNORE` into the two tables).
    #[test]
    fn no_lookup_bypasses_the_key_indexes() {
        fn walk(dir: &std::path::Path, out: &mut Vec<String>) {
            for e in std::fs::read_dir(dir).expect("dir").flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") && !p.ends_with("data/schema.rs")
                {
                    let text = std::fs::read_to_string(&p).expect("read");
                    for (n, line) in text.lines().enumerate() {
                        let table = ["records", "inline_blobs", "tombstones", "changes"]
                            .iter()
                            .any(|t| {
                                ["FROM ", "JOIN ", "INTO ", "UPDATE "]
                                    .iter()
                                    .any(|k| line.contains(&format!("{k}{t}")))
                            });
                        let by_text = [
                            "unhex(",
                            "hex(",
                            "substr(",
                            "lower(",
                            "record_id",
                            " id =",
                            " id=",
                            ".id =",
                            ".id=",
                            "key = '",
                            "sha256 = '",
                        ]
                        .iter()
                        .any(|k| line.contains(k));
                        // Data schema 6: a key or digest compared in
                        // SQL comes with its prefix (or the lookup scans),
                        // and no statement relies on a unique key.
                        let names = |col: &str| {
                            [" = ", "=", " IN "].iter().any(|op| {
                                line.contains(&format!(" {col}{op}"))
                                    || line.contains(&format!(".{col}{op}"))
                            })
                        };
                        let unprefixed = (table && names("key") && !line.contains("kp = ?"))
                            || (table && names("sha256") && !line.contains("sp = ?"))
                            || line.contains("ON CONFLICT(key)")
                            || line.contains("OR REPLACE INTO inline_blobs")
                            || line.contains("OR IGNORE INTO records")
                            || line.contains("OR IGNORE INTO inline_blobs");
                        if (table && by_text) || unprefixed {
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
        assert!(found.is_empty(), "{found:#?}");
    }
}
