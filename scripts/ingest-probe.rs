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
//! random-key unique indexes on 32-byte digests: see `src/lib/data/schema.rs`.)
//!
//! Attribution trials: env `PROBE_SKIP`, a comma-separated list of `blobs`,
//! `changes`, `fts`, `doclen` (that kind of row is not written; `fts` also
//! skips `doclen`): what each costs, by difference. Not a layout the node
//! can use.
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

/// One record's rows, as bulk ingest writes them.
struct Row {
    sha: String,
    id: String,
    text: String,
    envelope: String,
    document: String,
}

fn row(kind: corpus::Kind, i: u64) -> Row {
    let at = "2026-12-01T10:03:02.791Z";
    let text = corpus::text(kind, i);
    let sha = hex64(i);
    let id = format!("rec_{}", hex64(i ^ (1 << 62)));
    let size = text.len();
    let envelope = format!(
        "{{\"collection_id\":\"default\",\"content\":{{\"blob_ref\":\"sha256:{sha}\",\
         \"media_type\":\"text/plain\",\"sha256\":\"{sha}\",\"size\":{size}}},\
         \"id\":\"{id}\",\"ingested_at\":\"{at}\",\"metadata\":{{\"i\":{i}}},\
         \"protocol\":\"agent-data/v1\",\"schema_version\":\"1\",\"source\":\
         {{\"collector_id\":\"text\",\"uri\":\"urn:agent-data:text:sha256:{sha}\"}}}}"
    );
    let document = format!("{text}\nurn:agent-data:text:sha256:{sha}\ni\n{i}");
    Row {
        sha,
        id,
        text,
        envelope,
        document,
    }
}

fn tokens(sz: &[u8]) -> i64 {
    agent_task::data::fts::docsize_tokens(sz)
        .and_then(|n| i64::try_from(n).ok())
        .unwrap_or(0)
}

fn run(dir: &std::path::Path, kind: corpus::Kind, n: u64, batch: u64) -> rusqlite::Result<f64> {
    let rows: Vec<Row> = (0..n).map(|i| row(kind, i)).collect();
    let at = "2026-12-01T10:03:02.791Z";
    let start = Instant::now();
    let conn = Connection::open(dir.join("probe.sqlite"))?;
    // The pragmas of agent-task's writers (src/lib/store/db.rs open_write)
    // plus the data writer's own.
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true)?;
    conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get::<_, String>(0))?;
    conn.execute_batch("PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;")?;
    conn.execute_batch(agent_task::data::writer::WRITER_PRAGMAS)?;
    for m in agent_task::data::schema::SPEC.migrations {
        conn.execute_batch(m.sql)?;
    }
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
        let mut blob = conn
            .prepare_cached("INSERT OR REPLACE INTO inline_blobs(sha256, bytes) VALUES (?1, ?2)")?;
        let mut rec = conn.prepare_cached(
            "INSERT INTO records(id, collection_id, envelope_json, content_sha256, content_size, created_at) \
             VALUES (?1, 'default', ?2, ?3, ?4, ?5) ON CONFLICT(unhex(substr(id, 5))) DO NOTHING",
        )?;
        let mut chg = conn.prepare_cached(
            "INSERT INTO changes(type, collection_id, record_id, at) VALUES ('record', 'default', ?1, ?2)",
        )?;
        let mut fts =
            conn.prepare_cached("INSERT INTO record_fts(rowid, document) VALUES (?1, ?2)")?;
        let mut rids = Vec::with_capacity(chunk.len());
        for r in chunk {
            if !no_blobs {
                blob.execute(params![r.sha, r.text.as_bytes()])?;
            }
            rec.execute(params![r.id, r.envelope, r.sha, r.text.len() as i64, at])?;
            rids.push(conn.last_insert_rowid());
            if !no_changes {
                chg.execute(params![r.id, at])?;
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
