//! The ceiling of bulk ingest on this machine: inserts exactly the rows
//! `agent-task data collect --jsonl` writes for a benchmark corpus (inline
//! blobs, record rows, change events, FTS5 rows, token counts), in the
//! order it writes them, with rusqlite, in one transaction, on the node's
//! schema (its own migrations) and with the node's pragmas, and nothing
//! else: no input file, no JSON parsing, no hashing, no canonicalisation,
//! no lock, no checkpoint beyond SQLite's automatic one. Digests and record
//! ids are stand-ins of the same length and randomness (a splitmix64
//! stream); envelopes are filled into the template a text record's
//! canonical envelope has, so every row has the bytes and the (random) key
//! order a real one has. Rows are generated before the clock starts.
//!
//! Usage: `ingest-probe DIR short|kb N [BATCH]` (BATCH: records per
//! transaction, default all N in one). Prints `{"records", "seconds",
//! "records_per_s"}`, measured from opening the database to the last
//! commit. Built and run by `scripts/bench-data.sh`.
//!
//! FTS5 configuration trials (issue #13), applied after the node's
//! migrations: env `PROBE_FTS`, a comma-separated list of `automerge=N`,
//! `crisismerge=N`, `pgsz=N`. Unset: the node's own schema, unchanged.
//! (Data schema 4 adopted two earlier trials, `contentless-delete`, an
//! index without stored content or id columns, and `PROBE_KEYS=unhex`, the
//! random-key unique indexes on 32-byte digests; data schema 5 adopted the
//! row layout trials `bin-id`, `bin-sha` and `chg-rid` below, and data
//! schema 6 the trials `key-int` and `sha-int`: see
//! `src/lib/data/schema.rs`.)
//!
//! Attribution trials: env `PROBE_SKIP`, a comma-separated list of `blobs`,
//! `changes`, `fts`, `doclen` (that kind of row is not written; `fts` also
//! skips `doclen`): what each costs, by difference. Not a layout the node
//! can use.
//!
//! Row layout trials (issue #13 item 2), env `PROBE_ROWS`, a
//! comma-separated list; the named tables are created again, empty, after
//! the node's migrations, otherwise as the node's schema has them:
//!
//! - `page=N`: `PRAGMA page_size = N` before the database is created (a
//!   new database only; it needs no migration);
//! - `chg-nocoll`: changes carry no `collection_id` and have no
//!   `changes_collection_idx` (what the column and its index cost);
//! - `no-sha`, `no-created`: `records` without `content_sha256` /
//!   `created_at` (the envelope holds both);
//! - `no-fk`: `records.collection_id` without its foreign key (a lookup in
//!   `collections` per insert);
//! - `coll-int`: records and changes name their collection by the
//!   collection's row id (an integer, no foreign key) instead of its id
//!   text;
//! - `no-collidx`: no `records_collection_idx` (attribution only);
//! - `env-nosha`: envelopes without the three copies of the content
//!   digest (attribution only: what 192 bytes of envelope cost).
//!
//! Trials since adopted by data schema 5 (and so no longer here):
//! `chg-rid`, a `record` change naming its record by `rid` instead of the
//! 68-byte id text; `bin-id`, the record key a 32-byte BLOB with a plain
//! UNIQUE instead of the id text, its `CHECK` and the `unhex` expression
//! index; `bin-sha`, `records.content_sha256` and `inline_blobs.sha256` as
//! 32-byte BLOBs, the latter plainly unique.
//!
//! Trials since adopted by data schema 6 (and so no longer here):
//! `key-int`, `sha-int`, the random-key indexes holding the first 8 bytes
//! of the record key / inline blob digest as an integer, not unique (an
//! adversary can make two digests share 8 bytes), an insert looking the
//! full key up first instead of relying on a UNIQUE 32-byte index. Each
//! batch of random keys dirties nearly every leaf of those two indexes, so
//! their size is written to the WAL again per batch: at 100,000 records
//! they were 1,110 pages each with 32-byte keys. Measured on schema 5
//! (2026-12-02, batches of 20,000, alternating, records/s): 100,000 short
//! records 45,142 / 47,562 / 38,750 against 36,814 / 45,538 / 37,370 (db
//! 135 against 145 MB); 1,000,000 short records 33,541 / 33,271 against
//! 23,576 / 25,368 (+36%; db 1,091 against 1,176 MB). The probe's rows
//! and lookups are now the node's: each inline blob and record row is
//! looked up by prefix and key, then inserted.
//!
//! Measured (2026-12-02, a slow shared 2-core machine; one transaction),
//! against data schema 4, before schema 5 adopted `bin-id,bin-sha,chg-rid`.
//! Instructions: callgrind, 20,000 records, the whole process (row
//! generation included, so the shares of SQLite's own work are larger);
//! bytes: database and WAL after the commit. Short records, against schema 4:
//!
//! | trial                          | instr  | db     | wal    |
//! |--------------------------------|--------|--------|--------|
//! | `page=8192`                    | -1.7%  | -5.7%  | -4.5%  |
//! | `page=16384`                   | -2.2%  | -5.2%  | -1.3%  |
//! | `chg-rid`                      | -0.0%  | -5.1%  | -4.9%  |
//! | `chg-nocoll`                   | -5.2%  | -2.2%  | -2.1%  |
//! | `bin-id`                       | -8.0%  | +0.0%  | +0.2%  |
//! | `bin-sha`                      | -5.2%  | -2.5%  | -2.1%  |
//! | `no-sha`                       | -0.9%  | -10.2% | -9.8%  |
//! | `no-created`                   | -0.4%  | +0.0%  | +0.2%  |
//! | `no-fk`                        | -0.8%  | +0.0%  | +0.2%  |
//! | `no-collidx`                   | -5.0%  | -1.5%  | -1.4%  |
//! | `env-nosha`                    | -1.2%  | -17.5% | -17.2% |
//! | `bin-id,bin-sha`               | -13.9% | -12.6% | -12.2% |
//! | `bin-id,bin-sha,chg-rid`       | -13.8% | -17.7% | -17.0% |
//! | the same and `page=8192`       | -15.3% | -17.7% | -15.4% |
//! | `coll-int`                     | -2.9%  | -1.7%  | -1.3%  |
//! | `coll-int,bin-id,bin-sha,chg-rid` | -16.8% | -19.4% | -18.7% |
//!
//! A record row is about 720 bytes, five to a 4 KiB page: a column 36
//! bytes shorter (`bin-id`, `no-created`) leaves the row count per page,
//! and so the bytes, unchanged until enough of them add up to a sixth row.
//! 1 KB records: `bin-id,bin-sha,chg-rid` -6.5% instructions, -6.8% db;
//! with `page=8192` -8.0%, -13.2%; `page=8192` alone -1.6%, -8.9%.
//!
//! Wall, 100,000 records, 5 alternating rounds, median records/s (and
//! median user+sys CPU seconds of the process, row generation included):
//! short: schema 4 20,047 (4.47 s); `bin-id,bin-sha,chg-rid` 23,011, +15%
//! (3.91 s); `page=8192` 23,814, +19% (3.97 s); both 25,309, +26%
//! (3.67 s). A second session: schema 4 22,845 (4.17 s);
//! `bin-id,bin-sha,chg-rid` 26,538, +16% (3.66 s); with `coll-int` 27,510,
//! +20% (3.47 s); `coll-int` alone 22,921 (4.13 s). 1 KB: schema 4 10,700 (9.57 s); `bin-id,bin-sha,chg-rid`
//! 10,440, -2% (9.59 s); with `page=8192` 11,479, +7% (8.78 s). A second
//! session of 6 alternating rounds, schema 4 against `bin-id,bin-sha,chg-rid`
//! alone: 10,111 (9.77 s) vs 10,615, +5% (9.49 s). No loss on 1 KB records.
#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]
#![allow(clippy::disallowed_methods)] // a benchmark probe: it opens SQLite itself

#[path = "bench-corpus.rs"]
#[allow(dead_code)]
mod corpus;

use rusqlite::{Connection, config::DbConfig, params};
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Instant;

fn hex64(seed: u64) -> String {
    let mut out = String::with_capacity(64);
    for k in 0..4 {
        let _ = write!(
            out,
            "{:016x}",
            corpus::mix(seed.wrapping_mul(4).wrapping_add(k))
        );
    }
    out
}

fn unhex32(h: &str) -> Vec<u8> {
    (0..32)
        .map(|k| u8::from_str_radix(&h[2 * k..2 * k + 2], 16).unwrap_or(0))
        .collect()
}

/// One record's rows, as bulk ingest writes them (data schema 5: the
/// record key and content digest as their 32 bytes).
struct Row {
    sha: Vec<u8>,
    key: Vec<u8>,
    text: String,
    envelope: String,
    document: String,
}

fn row(kind: corpus::Kind, i: u64, env_nosha: bool) -> Row {
    let at = "2026-12-01T10:03:02.791Z";
    let text = corpus::text(kind, i);
    let sha = hex64(i);
    let id = format!("rec_{}", hex64(i ^ (1 << 62)));
    let size = text.len();
    let esha = if env_nosha { "" } else { sha.as_str() };
    let envelope = format!(
        "{{\"collection_id\":\"default\",\"content\":{{\"blob_ref\":\"sha256:{esha}\",\
         \"media_type\":\"text/plain\",\"sha256\":\"{esha}\",\"size\":{size}}},\
         \"id\":\"{id}\",\"ingested_at\":\"{at}\",\"metadata\":{{\"i\":{i}}},\
         \"protocol\":\"agent-data/v1\",\"schema_version\":\"1\",\"source\":\
         {{\"collector_id\":\"text\",\"uri\":\"urn:agent-data:text:sha256:{esha}\"}}}}"
    );
    let document = format!("{text}\nurn:agent-data:text:sha256:{sha}\ni\n{i}");
    Row {
        sha: unhex32(&sha),
        key: unhex32(&id[4..]),
        text,
        envelope,
        document,
    }
}

/// The index prefix of a key or digest, as the node computes it (data
/// schema 6).
fn prefix(d: &[u8]) -> i64 {
    let mut k = [0u8; 32];
    k.copy_from_slice(&d[..32]);
    agent_task::data::key::prefix(&k)
}

fn tokens(sz: &[u8]) -> i64 {
    agent_task::data::fts::docsize_tokens(sz)
        .and_then(|n| i64::try_from(n).ok())
        .unwrap_or(0)
}

/// The `PROBE_ROWS` trials.
#[derive(Default)]
struct Layout {
    page: Option<i64>,
    chg_nocoll: bool,
    no_sha: bool,
    no_created: bool,
    no_fk: bool,
    coll_int: bool,
    no_collidx: bool,
    env_nosha: bool,
}

impl Layout {
    fn from_env() -> Result<Layout, String> {
        let mut l = Layout::default();
        let trials = std::env::var("PROBE_ROWS").unwrap_or_default();
        for t in trials.split(',').filter(|t| !t.is_empty()) {
            match t {
                "chg-nocoll" => l.chg_nocoll = true,
                "no-sha" => l.no_sha = true,
                "no-created" => l.no_created = true,
                "no-fk" => l.no_fk = true,
                "coll-int" => l.coll_int = true,
                "no-collidx" => l.no_collidx = true,
                "env-nosha" => l.env_nosha = true,
                _ => match t.strip_prefix("page=").and_then(|v| v.parse().ok()) {
                    Some(n) => l.page = Some(n),
                    None => return Err(format!("PROBE_ROWS {t}")),
                },
            }
        }
        Ok(l)
    }

    fn records_changed(&self) -> bool {
        self.no_sha || self.no_created || self.no_fk || self.coll_int || self.no_collidx
    }

    /// The tables this layout changes, created again (they are empty).
    fn ddl(&self) -> String {
        let mut sql = String::new();
        if self.records_changed() {
            let coll = if self.coll_int {
                "collection_id INTEGER NOT NULL,"
            } else if self.no_fk {
                "collection_id TEXT NOT NULL,"
            } else {
                "collection_id TEXT NOT NULL REFERENCES collections(id),"
            };
            let sha = if self.no_sha {
                ""
            } else {
                "content_sha256 BLOB NOT NULL CHECK (length(content_sha256) = 32),"
            };
            let created = if self.no_created {
                ""
            } else {
                ", created_at TEXT NOT NULL"
            };
            let key = "kp INTEGER NOT NULL, key BLOB NOT NULL CHECK (length(key) = 32),";
            let _ = write!(
                sql,
                "DROP TABLE records; CREATE TABLE records (rid INTEGER PRIMARY KEY, \
                 {key} {coll} \
                 envelope_json TEXT NOT NULL, {sha} content_size INTEGER NOT NULL{created}) STRICT;"
            );
            sql.push_str("CREATE INDEX records_kp ON records(kp);");
            if !self.no_collidx {
                sql.push_str("CREATE INDEX records_collection_idx ON records(collection_id, rid);");
            }
        }
        if self.chg_nocoll || self.coll_int {
            let coll = if self.chg_nocoll {
                ""
            } else if self.coll_int {
                "collection_id INTEGER NOT NULL,"
            } else {
                "collection_id TEXT NOT NULL,"
            };
            let _ = write!(
                sql,
                "DROP TABLE changes; CREATE TABLE changes (sequence INTEGER PRIMARY KEY, \
                 type TEXT NOT NULL CHECK (type IN ('record', 'tombstone')), {coll} rid INTEGER NOT NULL, \
                 at TEXT NOT NULL, payload_json TEXT, CHECK ((type = 'record') = (payload_json IS NULL)));"
            );
            if !self.chg_nocoll {
                sql.push_str(
                    "CREATE INDEX changes_collection_idx ON changes(collection_id, sequence);",
                );
            }
        }
        sql
    }

    fn insert_record(&self) -> String {
        let (sha_col, sha_val) = if self.no_sha {
            ("", "")
        } else {
            (", content_sha256", ", ?3")
        };
        let (cr_col, cr_val) = if self.no_created {
            ("", "")
        } else {
            (", created_at", ", ?5")
        };
        let coll = self.coll_value();
        // No unique index (data schema 6): the caller looks the key up first.
        format!(
            "INSERT INTO records(kp, key, collection_id, envelope_json{sha_col}, content_size{cr_col}) \
             VALUES (?6, ?1, {coll}, ?2{sha_val}, ?4{cr_val})"
        )
    }

    /// The collection as a record or change row names it.
    fn coll_value(&self) -> &'static str {
        if self.coll_int { "1" } else { "'default'" }
    }

    fn insert_change(&self) -> String {
        let sql = if self.chg_nocoll {
            "INSERT INTO changes(type, rid, at) VALUES ('record', ?1, ?2)"
        } else {
            "INSERT INTO changes(type, collection_id, rid, at) VALUES ('record', 'default', ?1, ?2)"
        };
        sql.replace("'default'", self.coll_value())
    }
}

fn run(dir: &std::path::Path, kind: corpus::Kind, n: u64, batch: u64) -> rusqlite::Result<f64> {
    let layout = Layout::from_env().map_err(rusqlite::Error::InvalidParameterName)?;
    let rows: Vec<Row> = (0..n).map(|i| row(kind, i, layout.env_nosha)).collect();
    let at = "2026-12-01T10:03:02.791Z";
    let start = Instant::now();
    let conn = Connection::open(dir.join("probe.sqlite"))?;
    // The pragmas of agent-task's writers (src/lib/store/db.rs open_write)
    // plus the data writer's own.
    if let Some(page) = layout.page {
        conn.execute_batch(&format!("PRAGMA page_size = {page}"))?;
    }
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
    conn.execute_batch(agent_task::data::writer::WRITER_PRAGMAS)?;
    for m in agent_task::data::schema::SPEC.migrations {
        conn.execute_batch(m.sql)?;
    }
    conn.execute_batch(&layout.ddl())?;
    if let Ok(trials) = std::env::var("PROBE_FTS") {
        for t in trials.split(',').filter(|t| !t.is_empty()) {
            match t.split_once('=') {
                Some((k @ ("automerge" | "crisismerge" | "pgsz"), v)) => {
                    let v: i64 = v.parse().map_err(|_| {
                        rusqlite::Error::InvalidParameterName(format!("PROBE_FTS {t}"))
                    })?;
                    conn.execute(
                        "INSERT INTO record_fts(record_fts, rank) VALUES (?1, ?2)",
                        params![k, v],
                    )?;
                }
                _ => {
                    return Err(rusqlite::Error::InvalidParameterName(format!(
                        "PROBE_FTS {t}"
                    )));
                }
            }
        }
    }
    let skips = std::env::var("PROBE_SKIP").unwrap_or_default();
    let skip: Vec<&str> = skips.split(',').filter(|t| !t.is_empty()).collect();
    if let Some(t) = skip
        .iter()
        .find(|t| !["blobs", "changes", "fts", "doclen"].contains(t))
    {
        return Err(rusqlite::Error::InvalidParameterName(format!(
            "PROBE_SKIP {t}"
        )));
    }
    let (no_blobs, no_changes, no_fts) = (
        skip.contains(&"blobs"),
        skip.contains(&"changes"),
        skip.contains(&"fts"),
    );
    let no_doclen = no_fts || skip.contains(&"doclen");
    conn.execute(
        "INSERT INTO collections(id, definition_json, created_at) VALUES ('default', '{}', ?1)",
        [at],
    )?;
    for chunk in rows.chunks(usize::try_from(batch).unwrap_or(usize::MAX)) {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let mut blob =
            conn.prepare_cached("INSERT INTO inline_blobs(sp, sha256, bytes) VALUES (?1, ?2, ?3)")?;
        // The lookups the node makes before each insert (data schema 6).
        let mut blob_seen = conn.prepare_cached(
            "SELECT bid, bytes = ?3 FROM inline_blobs WHERE sp = ?1 AND sha256 = ?2",
        )?;
        let mut rec_seen = conn.prepare_cached(
            "SELECT r.rid, r.envelope_json, EXISTS(SELECT 1 FROM tombstones t WHERE t.rid = r.rid) \
             FROM records r WHERE r.kp = ?1 AND r.key = ?2",
        )?;
        let mut rec = conn.prepare_cached(&layout.insert_record())?;
        let mut chg = conn.prepare_cached(&layout.insert_change())?;
        let mut fts =
            conn.prepare_cached("INSERT INTO record_fts(rowid, document) VALUES (?1, ?2)")?;
        let mut rids = Vec::with_capacity(chunk.len());
        for r in chunk {
            if !no_blobs {
                let sp = prefix(&r.sha);
                if !blob_seen.exists(params![sp, r.sha, r.text.as_bytes()])? {
                    blob.execute(params![sp, r.sha, r.text.as_bytes()])?;
                }
            }
            let kp = prefix(&r.key);
            if rec_seen.exists(params![kp, r.key])? {
                continue;
            }
            rec.raw_bind_parameter(6, kp)?;
            // Parameters are numbered: a dropped column's number is skipped.
            let len = r.text.len() as i64;
            rec.raw_bind_parameter(1, &r.key)?;
            rec.raw_bind_parameter(2, &r.envelope)?;
            if !layout.no_sha {
                rec.raw_bind_parameter(3, &r.sha)?;
            }
            rec.raw_bind_parameter(4, len)?;
            if !layout.no_created {
                rec.raw_bind_parameter(5, at)?;
            }
            rec.raw_execute()?;
            let rid = conn.last_insert_rowid();
            rids.push(rid);
            if !no_changes {
                chg.execute(params![rid, at])?;
            }
        }
        if !no_fts {
            for (r, rid) in chunk.iter().zip(&rids) {
                fts.execute(params![rid, r.document])?;
            }
        }
        if !no_doclen && let (Some(first), Some(last)) = (rids.first(), rids.last()) {
            let mut read = conn.prepare_cached(
                "SELECT id, sz FROM record_fts_docsize WHERE id BETWEEN ?1 AND ?2",
            )?;
            let mut ins = conn
                .prepare_cached("INSERT OR IGNORE INTO record_doclen(ntok, rid) VALUES (?1, ?2)")?;
            let mut q = read.query(params![first, last])?;
            while let Some(r) = q.next()? {
                let rid: i64 = r.get(0)?;
                let sz: Vec<u8> = r.get(1)?;
                ins.execute(params![tokens(&sz), rid])?;
            }
        }
        conn.execute_batch("COMMIT")?;
    }
    Ok(start.elapsed().as_secs_f64())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(kind), Some(n)) = (
        args.get(1),
        args.get(2).and_then(|k| corpus::Kind::parse(k)),
        args.get(3).and_then(|n| n.parse::<u64>().ok()),
    ) else {
        eprintln!("usage: ingest-probe DIR short|kb N [BATCH]");
        return ExitCode::from(64);
    };
    let n = n.clamp(1, 10_000_000);
    let batch = args
        .get(4)
        .and_then(|b| b.parse::<u64>().ok())
        .unwrap_or(n)
        .max(1);
    match run(std::path::Path::new(dir), kind, n, batch) {
        Ok(secs) => {
            println!(
                "{{\"records\":{n},\"seconds\":{secs:.3},\"records_per_s\":{:.1}}}",
                n as f64 / secs
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ingest-probe: {e}");
            ExitCode::from(70)
        }
    }
}
