//! Evidence as data: the operator's evidence targets and the outbox the
//! evidence writer drains (docs/architecture.md, "Room for the jobs that
//! leave the machine").
//!
//! The workflow half never writes the data half. When a repository has an
//! evidence target, the import of a collector transfer writes one `run`
//! row into `evidence_outbox` in the same transaction as the import, and
//! the receipt-issuing transaction writes one `receipt` row per transfer
//! the receipt names (when that transfer had a `run` row). A face-level
//! job (`agent-task evidence sync`, or `serve`'s drain thread) reads the
//! pending rows through `workflow::service::evidence`, writes each as a
//! record of the target's data node and marks it done. Each row's content
//! is fixed when it is written, so the record id it becomes is stable: a
//! repeated write (a crash between the write and the mark) stores nothing
//! new.

use crate::contract::canonical_bytes;
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, params};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// The largest output tail kept per stream in an evidence record.
pub const MAX_TAIL_BYTES: usize = 4096;
/// The largest `detail` kept in an evidence record.
pub const MAX_DETAIL_BYTES: usize = 1024;
/// The schema name every evidence record's content carries.
pub const RECORD_SCHEMA: &str = "agent-task.evidence.v1";
/// The largest collection id length the target accepts (the data
/// protocol's own syntax is checked by the face).
const MAX_COLLECTION_ID: usize = 128;
/// The largest evidence directory path (bytes).
const MAX_DIR_BYTES: usize = 4096;

/// Where a repository's evidence goes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Target {
    /// The repository.
    pub repo_id: String,
    /// The evidence data node's directory (absolute).
    pub evidence_dir: PathBuf,
    /// The collection the records go into.
    pub collection_id: String,
    /// When the operator configured it.
    pub configured_at: String,
}

/// One pending outbox row with its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboxRow {
    /// Its order.
    pub seq: i64,
    /// `run` or `receipt`.
    pub kind: String,
    /// The repository.
    pub repo_id: String,
    /// The transfer it describes.
    pub transfer_digest: String,
    /// The receipt (a `receipt` row).
    pub receipt_digest: Option<String>,
    /// The record content (canonical JSON text).
    pub payload: String,
    /// The content of the record a `receipt` row supersedes (the run's).
    pub prior_payload: Option<String>,
    /// The repository's target now (`None`: removed since).
    pub target: Option<(PathBuf, String)>,
}

/// The target of `repo_id`, if one is configured.
pub fn target_for(at: &Connection, repo_id: &str) -> Result<Option<Target>> {
    Ok(at
        .prepare_cached(
            "SELECT repo_id, evidence_dir, collection_id, configured_at FROM evidence_targets WHERE repo_id = ?1",
        )?
        .query_row(params![repo_id], |r| {
            Ok(Target {
                repo_id: r.get(0)?,
                evidence_dir: PathBuf::from(r.get::<_, String>(1)?),
                collection_id: r.get(2)?,
                configured_at: r.get(3)?,
            })
        })
        .optional()?)
}

/// Every configured target, by repository.
pub fn targets(at: &Connection) -> Result<Vec<Target>> {
    let mut st = at.prepare_cached(
        "SELECT repo_id, evidence_dir, collection_id, configured_at FROM evidence_targets ORDER BY repo_id",
    )?;
    let rows = st
        .query_map([], |r| {
            Ok(Target {
                repo_id: r.get(0)?,
                evidence_dir: PathBuf::from(r.get::<_, String>(1)?),
                collection_id: r.get(2)?,
                configured_at: r.get(3)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// `evidence configure`'s write (staged: the checks that need no
/// database first): sets `repo_id`'s target, replacing any earlier one.
/// The directory must be absolute; the face has created and checked it.
pub fn configure(
    repo_id: &str,
    evidence_dir: &Path,
    collection_id: &str,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<Target>> {
    let dir = evidence_dir
        .to_str()
        .filter(|d| evidence_dir.is_absolute() && !d.is_empty() && d.len() <= MAX_DIR_BYTES)
        .ok_or_else(|| {
            Error::new(
                Code::InvalidInput,
                "the evidence directory must be an absolute UTF-8 path of at most 4096 bytes",
            )
        })?
        .to_owned();
    if collection_id.is_empty() || collection_id.len() > MAX_COLLECTION_ID {
        return Err(Error::new(
            Code::InvalidInput,
            "the collection id must be 1-128 bytes",
        ));
    }
    let (repo_id, collection_id) = (repo_id.to_owned(), collection_id.to_owned());
    Ok(move |at: &Connection, _dir: &DataDir, now: &str| {
        super::repository(at, &repo_id)?;
        at.prepare_cached(
            "INSERT INTO evidence_targets(repo_id, evidence_dir, collection_id, configured_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(repo_id) DO UPDATE SET evidence_dir = excluded.evidence_dir,
                 collection_id = excluded.collection_id, configured_at = excluded.configured_at",
        )?
        .execute(params![repo_id, dir, collection_id, now])?;
        target_for(at, &repo_id)?.ok_or_else(|| Error::internal("the target just written is gone"))
    })
}

/// The last `max` bytes of `s`, cut at a character boundary.
pub fn tail(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = s.len() - max;
    while !s.is_char_boundary(i) {
        i += 1;
    }
    &s[i..]
}

/// The first `max` bytes of `s`, cut at a character boundary.
pub fn head(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut i = max;
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    &s[..i]
}

fn text_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

fn bounded_text(v: Option<&Value>, max: usize, from_end: bool) -> Value {
    match v.and_then(Value::as_str) {
        Some(s) if from_end => Value::String(tail(s, max).to_owned()),
        Some(s) => Value::String(head(s, max).to_owned()),
        None => Value::Null,
    }
}

/// What the import knows of a transfer that its evidence record keeps.
#[derive(Debug)]
pub struct Imported<'a> {
    /// The signed header.
    pub header: &'a crate::collector::transfer::TransferHeader,
    /// The transfer's second record (the execution or review record).
    pub record: &'a [u8],
    /// The transfer digest.
    pub transfer_digest: &'a str,
    /// The Change it was retained under.
    pub change_id: &'a str,
    /// And its version.
    pub change_version: u64,
    /// `passed` or `failed`.
    pub outcome: &'a str,
    /// The execution status.
    pub status: &'a str,
}

/// The bounded run fields of a transfer's record (read loosely: nothing
/// in it can fail a caller): exit status, duration, the output tails and
/// `detail`; for a review, its failure and findings count. The evidence
/// record and `explain` both read a record through this one function.
pub fn record_fields(kind: &str, rec: &Value, m: &mut Map<String, Value>) {
    let run = rec.get("run").filter(|r| r.is_object());
    let num = |k: &str| run.and_then(|r| r.get(k)).cloned().unwrap_or(Value::Null);
    m.insert("exit_code".into(), num("exit_code"));
    m.insert("signal".into(), num("signal"));
    m.insert("timed_out".into(), num("timed_out"));
    m.insert("output_capped".into(), num("output_capped"));
    m.insert("duration_ms".into(), num("duration_ms"));
    m.insert(
        "stdout_tail".into(),
        bounded_text(
            text_at(rec, &["run", "stdout", "tail"]),
            MAX_TAIL_BYTES,
            true,
        ),
    );
    m.insert(
        "stderr_tail".into(),
        bounded_text(
            text_at(rec, &["run", "stderr", "tail"]),
            MAX_TAIL_BYTES,
            true,
        ),
    );
    m.insert(
        "detail".into(),
        bounded_text(rec.get("detail"), MAX_DETAIL_BYTES, false),
    );
    if kind == "review" {
        m.insert(
            "review_failure".into(),
            bounded_text(rec.get("failure"), 128, false),
        );
        m.insert(
            "findings_total".into(),
            rec.get("findings_total").cloned().unwrap_or(Value::Null),
        );
    }
}

/// The retained transfer of an imported row, opened (the bytes are the
/// content-addressed object the import stored): its signed header and
/// its second record (the execution or review record) as JSON.
pub fn retained_record(
    dir: &DataDir,
    transfer_digest: &str,
    size: u64,
) -> Result<(crate::collector::transfer::TransferHeader, Value)> {
    use crate::collector::transfer::{self, MAX_TRANSFER_BYTES};
    let d = crate::wire::digest::Sha256Hex::parse(transfer_digest)?;
    let bytes = dir.blobs()?.get(&d, Some(size), MAX_TRANSFER_BYTES)?;
    let env = transfer::open(&bytes)?;
    let rec = env
        .records
        .get(1)
        .and_then(|r| serde_json::from_slice(r).ok())
        .unwrap_or(Value::Null);
    Ok((env.header, rec))
}

/// The bounded content of a run's evidence record.
fn run_payload(at: &Connection, i: &Imported<'_>, ts: &str) -> Result<Value> {
    let h = i.header;
    let revision: Option<String> = at
        .prepare_cached(
            "SELECT revision FROM change_versions WHERE change_id = ?1 AND version = ?2",
        )?
        .query_row(params![i.change_id, i.change_version as i64], |r| r.get(0))
        .optional()?;
    // The record was validated by the import; read it loosely here so
    // that nothing in it can fail the import.
    let rec: Value = serde_json::from_slice(i.record).unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("schema".into(), RECORD_SCHEMA.into());
    m.insert("repository".into(), h.repository.clone().into());
    m.insert("profile".into(), h.profile.clone().into());
    m.insert("change_id".into(), i.change_id.into());
    m.insert("change_version".into(), i.change_version.into());
    m.insert("revision".into(), revision.map_or(Value::Null, Value::from));
    m.insert("step_id".into(), h.step_id.clone().into());
    m.insert("collector_kind".into(), h.kind.clone().into());
    m.insert("task_id".into(), h.task_id.clone().into());
    m.insert("attempt_id".into(), h.attempt_id.clone().into());
    m.insert(
        "execution_operation_id".into(),
        h.execution_operation_id.clone().into(),
    );
    m.insert("outcome".into(), i.outcome.into());
    m.insert("status".into(), i.status.into());
    record_fields(&h.kind, &rec, &mut m);
    m.insert("transfer_digest".into(), i.transfer_digest.into());
    m.insert("imported_at".into(), ts.into());
    Ok(Value::Object(m))
}

fn text(v: &Value) -> Result<String> {
    String::from_utf8(canonical_bytes(v)?)
        .map_err(|_| Error::internal("canonical JSON is not UTF-8"))
}

/// In the import's transaction: one `run` row for the transfer, when its
/// repository has a target. Returns whether a row was written.
pub fn on_import(at: &Connection, i: &Imported<'_>, ts: &str) -> Result<bool> {
    if target_for(at, &i.header.repository)?.is_none() {
        return Ok(false);
    }
    let payload = text(&run_payload(at, i, ts)?)?;
    let n = at
        .prepare_cached(
            "INSERT OR IGNORE INTO evidence_outbox(record_key, kind, repo_id, transfer_digest, payload, created_at)
             VALUES (?1, 'run', ?2, ?3, ?4, ?5)",
        )?
        .execute(params![
            format!("run:{}", i.transfer_digest),
            i.header.repository,
            i.transfer_digest,
            payload,
            ts
        ])?;
    Ok(n == 1)
}

/// In the receipt-issuing transaction: one `receipt` row per transfer the
/// receipt names that has a `run` row (its content is the run's plus the
/// receipt digest), when the repository has a target. Returns the rows
/// written.
pub fn on_receipt<'t>(
    at: &Connection,
    repo_id: &str,
    receipt_digest: &str,
    transfers: impl IntoIterator<Item = &'t str>,
    ts: &str,
) -> Result<u64> {
    if target_for(at, repo_id)?.is_none() {
        return Ok(0);
    }
    let mut written = 0;
    for t in transfers {
        let prior: Option<String> = at
            .prepare_cached("SELECT payload FROM evidence_outbox WHERE record_key = ?1")?
            .query_row(params![format!("run:{t}")], |r| r.get(0))
            .optional()?;
        let Some(prior) = prior else { continue };
        let mut v: Value = serde_json::from_str(&prior)
            .map_err(|e| Error::internal(format!("an outbox payload is not JSON: {e}")))?;
        let Some(m) = v.as_object_mut() else {
            return Err(Error::internal("an outbox payload is not an object"));
        };
        m.insert("receipt_digest".into(), receipt_digest.into());
        written += at
            .prepare_cached(
                "INSERT OR IGNORE INTO evidence_outbox(record_key, kind, repo_id, transfer_digest, receipt_digest, payload, prior_payload, created_at)
                 VALUES (?1, 'receipt', ?2, ?3, ?4, ?5, ?6, ?7)",
            )?
            .execute(params![
                format!("receipt:{receipt_digest}:{t}"),
                repo_id,
                t,
                receipt_digest,
                text(&v)?,
                prior,
                ts
            ])? as u64;
    }
    Ok(written)
}

/// Up to `limit` pending rows after `after_seq`, oldest first, each with
/// its repository's target now.
pub fn pending(at: &Connection, after_seq: i64, limit: u32) -> Result<Vec<OutboxRow>> {
    let mut st = at.prepare_cached(
        "SELECT o.seq, o.kind, o.repo_id, o.transfer_digest, o.receipt_digest, o.payload, o.prior_payload,
                t.evidence_dir, t.collection_id
         FROM evidence_outbox o LEFT JOIN evidence_targets t ON t.repo_id = o.repo_id
         WHERE o.done_at IS NULL AND o.seq > ?1 ORDER BY o.seq LIMIT ?2",
    )?;
    let rows = st
        .query_map(params![after_seq, limit], |r| {
            let dir: Option<String> = r.get(7)?;
            let coll: Option<String> = r.get(8)?;
            Ok(OutboxRow {
                seq: r.get(0)?,
                kind: r.get(1)?,
                repo_id: r.get(2)?,
                transfer_digest: r.get(3)?,
                receipt_digest: r.get(4)?,
                payload: r.get(5)?,
                prior_payload: r.get(6)?,
                target: dir.zip(coll).map(|(d, c)| (PathBuf::from(d), c)),
            })
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    Ok(rows)
}

/// Marks rows done with the record each became (a row already done keeps
/// its first mark). Returns how many were marked now.
pub fn mark_done(
    done: Vec<(i64, String)>,
) -> impl FnOnce(&Connection, &DataDir, &str) -> Result<u64> {
    move |at, _dir, now| mark_done_in(at, &done, now)
}

/// [`mark_done`] inside the caller's transaction.
fn mark_done_in(at: &Connection, done: &[(i64, String)], now: &str) -> Result<u64> {
    let mut n = 0;
    for (seq, record_id) in done {
        n += at
            .prepare_cached(
                "UPDATE evidence_outbox SET done_at = ?2, record_id = ?3 WHERE seq = ?1 AND done_at IS NULL",
            )?
            .execute(params![seq, now, record_id])? as u64;
    }
    Ok(n)
}

/// The outbox's counts and the targets (`evidence status`).
pub fn status(at: &Connection) -> Result<Value> {
    let (pending, done): (i64, i64) = at
        .prepare_cached(
            "SELECT COALESCE(SUM(done_at IS NULL), 0), COALESCE(SUM(done_at IS NOT NULL), 0) FROM evidence_outbox",
        )?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(json!({
        "targets": targets(at)?,
        "pending": pending,
        "done": done,
    }))
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{CHANGE, REPO, fixture};
    use super::*;
    use crate::collector::transfer::{
        CollectorIdentity, Origin, RegistrationBinding, TransferHeader,
    };
    use crate::wire::digest::Sha256Hex;

    fn header() -> TransferHeader {
        let d = Sha256Hex::digest(b"x");
        TransferHeader {
            version: 1,
            kind: "command".into(),
            audience: "dd_1".into(),
            repository: REPO.into(),
            profile: "default".into(),
            step_id: "tests".into(),
            collector_profile_id: "cp_1".into(),
            collector_profile_digest: d.clone(),
            task_id: "task_1".into(),
            task_digest: d.clone(),
            attempt_id: "att_1".into(),
            attempt_digest: d.clone(),
            execution_operation_id: "exec_1".into(),
            fence: 1,
            origin: Origin {
                owner_id: "alice".into(),
                agent_id: "a".into(),
                grant_generation: 1,
            },
            registration: RegistrationBinding {
                registration_id: "reg_1".into(),
                executor_id: "ci".into(),
                epoch: 1,
                key_id: "kid_1".into(),
            },
            request_digest: d,
            collector_identity: CollectorIdentity {
                runtime: "bwrap".into(),
                runtime_identity_digest: None,
                agent_task_version: "0".into(),
            },
            upload_request_id: "up_1".into(),
            records: vec![],
        }
    }

    fn count(a: &Connection) -> i64 {
        a.query_row("SELECT COUNT(*) FROM evidence_outbox", [], |r| r.get(0))
            .expect("count")
    }

    #[test]
    fn the_outbox_gets_a_run_row_and_a_receipt_row_only_with_a_target() {
        let f = fixture();
        let h = header();
        let long = format!("{}FAIL: the end", "é".repeat(3000));
        let record = serde_json::to_vec(&json!({
            "status": "completed", "outcome": "failed", "detail": null,
            "run": {"exit_code": 1, "signal": null, "timed_out": false, "output_capped": false,
                    "duration_ms": 42, "stdout": {"tail": "ok"}, "stderr": {"tail": long}},
        }))
        .expect("json");
        let i = Imported {
            header: &h,
            record: &record,
            transfer_digest: "td",
            change_id: CHANGE,
            change_version: 1,
            outcome: "failed",
            status: "completed",
        };
        // No target: nothing.
        assert!(!on_import(&f.a, &i, "t0").expect("import"));
        assert_eq!(
            on_receipt(&f.a, REPO, "rd", ["td"], "t0").expect("receipt"),
            0
        );
        assert_eq!(count(&f.a), 0);
        f.a.execute(
            "INSERT INTO evidence_targets VALUES (?1, '/ev', 'evidence', 't')",
            params![REPO],
        )
        .expect("target");
        assert!(on_import(&f.a, &i, "t1").expect("import"));
        assert!(!on_import(&f.a, &i, "t2").expect("a repeat writes nothing"));
        let rows = pending(&f.a, 0, 10).expect("pending");
        assert_eq!(rows.len(), 1);
        let run: Value = serde_json::from_str(&rows[0].payload).expect("json");
        assert_eq!(run["exit_code"], 1);
        assert_eq!(run["duration_ms"], 42);
        assert_eq!(run["stdout_tail"], "ok");
        let tail = run["stderr_tail"].as_str().expect("tail");
        assert!(tail.len() <= MAX_TAIL_BYTES && tail.ends_with("FAIL: the end"));
        assert!(run["revision"].is_string(), "{run}");
        assert_eq!(run["transfer_digest"], "td");
        assert_eq!(
            rows[0].target,
            Some((PathBuf::from("/ev"), "evidence".to_owned()))
        );
        // A receipt naming the run and one it has no row for.
        assert_eq!(
            on_receipt(&f.a, REPO, "rd", ["td", "other"], "t3").expect("receipt"),
            1
        );
        assert_eq!(
            on_receipt(&f.a, REPO, "rd", ["td"], "t4").expect("again"),
            0
        );
        let rows = pending(&f.a, 0, 10).expect("pending");
        assert_eq!(rows.len(), 2);
        let r = &rows[1];
        assert_eq!(r.kind, "receipt");
        assert_eq!(r.receipt_digest.as_deref(), Some("rd"));
        assert_eq!(r.prior_payload.as_deref(), Some(rows[0].payload.as_str()));
        let fin: Value = serde_json::from_str(&r.payload).expect("json");
        assert_eq!(fin["receipt_digest"], "rd");
        assert_eq!(fin["stderr_tail"], run["stderr_tail"]);
        // Marked once; a second mark keeps the first.
        let done = vec![(rows[0].seq, "rec_1".to_owned())];
        assert_eq!(mark_done_in(&f.a, &done, "t5").expect("mark"), 1);
        assert_eq!(mark_done_in(&f.a, &done, "t6").expect("mark"), 0);
        assert_eq!(pending(&f.a, 0, 10).expect("pending").len(), 1);
        assert_eq!(pending(&f.a, rows[1].seq, 10).expect("after").len(), 0);
        let st = status(&f.a).expect("status");
        assert_eq!(
            (st["pending"].clone(), st["done"].clone()),
            (json!(1), json!(1))
        );
    }

    #[test]
    fn tails_and_heads_cut_at_character_boundaries() {
        assert_eq!(tail("abc", 5), "abc");
        assert_eq!(tail("abcdef", 3), "def");
        // "é" is two bytes: a cut inside it moves past it.
        assert_eq!(tail("aéb", 2), "b");
        assert_eq!(tail("aéb", 3), "éb");
        assert_eq!(head("aéb", 2), "a");
        assert_eq!(head("aéb", 3), "aé");
        let big = "é".repeat(5000);
        assert!(tail(&big, MAX_TAIL_BYTES).len() <= MAX_TAIL_BYTES);
    }
}
