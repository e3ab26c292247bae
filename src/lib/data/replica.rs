//! Replica import (spec/agent-data-facts.md §17, spec/agent-data-sync-facts.md
//! §11): collections, records and tombstones pulled from another node,
//! re-validated field by field, their record ids re-derived, their bytes
//! checked, then written through the node's writer in one transaction per
//! page with the same row layout a local collect produces (the local
//! `blob_ref` replaces the source's; a local change row is appended and
//! the original `ingested_at`/`tombstoned_at` kept).

use super::canon::{canonical_json, utf16_len};
use super::collection;
use super::record::{PROTOCOL, Prepared};
use super::syntax::{is_collection_id, is_record_id, normalize_date};
use super::writer;
use crate::error::{Code, Error, Result};
use crate::store::Connection;
use serde::Serialize;
use serde_json::{Map, Value};

/// One object of a verified page, in page order.
#[derive(Debug)]
pub enum ReplicaOp {
    /// A normalised collection definition and its source `created_at`.
    Collection(Map<String, Value>, String),
    /// A record ready to store.
    Record(Prepared),
    /// A tombstone `{record_id, collection_id, reason?, tombstoned_at}`.
    Tombstone(Map<String, Value>),
}

/// What one import did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ReplicaOutcome {
    /// Records new here.
    pub records_inserted: u64,
    /// Records already here (identical).
    pub records_existing: u64,
    /// Tombstones new here.
    pub tombstones_applied: u64,
}

pub(crate) fn bad(code: Code, msg: impl Into<String>) -> Error {
    Error::new(code, msg)
}

pub(crate) fn date(field: &str, v: Option<&Value>) -> Result<String> {
    match v {
        Some(Value::String(s)) => {
            normalize_date(field, s)?;
            Ok(s.clone())
        }
        _ => Err(bad(
            Code::InvalidDate,
            format!("{field} must be RFC 3339 with a timezone"),
        )),
    }
}

pub(crate) fn nonempty<'a>(m: &'a Map<String, Value>, k: &str, what: &str) -> Result<&'a str> {
    match m.get(k) {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(bad(
            Code::InvalidRequest,
            format!("{what}.{k} must be a non-empty string"),
        )),
    }
}

pub(crate) fn only(m: &Map<String, Value>, allowed: &[&str], what: &str) -> Result<()> {
    match m.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(k) => Err(bad(
            Code::InvalidRequest,
            format!("{what} has an unknown member {k:?}"),
        )),
        None => Ok(()),
    }
}

/// Validates a pulled collection (the stored `CollectionManifest` shape)
/// and normalises it; returns the definition without `created_at` and
/// the source's `created_at`.
pub fn prepare_collection(v: &Value) -> Result<(Map<String, Value>, String)> {
    let Value::Object(m) = v else {
        return Err(bad(Code::InvalidCollection, "collection must be an object"));
    };
    only(
        m,
        &[
            "protocol",
            "id",
            "name",
            "description",
            "schema",
            "policy",
            "created_at",
        ],
        "collection",
    )?;
    if m.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
        return Err(bad(
            Code::InvalidCollection,
            "collection protocol must be agent-data/v1",
        ));
    }
    if !m.get("schema").is_some_and(Value::is_object)
        || !m.get("policy").is_some_and(Value::is_object)
    {
        return Err(bad(
            Code::InvalidCollection,
            "collection schema and policy are required",
        ));
    }
    if !m["policy"].get("visibility").is_some_and(Value::is_string) {
        return Err(bad(
            Code::InvalidCollection,
            "collection policy.visibility is required",
        ));
    }
    let created_at = date("collection.created_at", m.get("created_at"))?;
    let def = collection::normalize(v)?;
    Ok((def, created_at))
}

/// The envelope without `blob_ref`, canonical (the "same record" test).
fn comparable(env: &Map<String, Value>) -> Result<String> {
    let mut e = env.clone();
    if let Some(Value::Object(c)) = e.get_mut("content") {
        c.remove("blob_ref");
    }
    canonical_json(&Value::Object(e))
}

/// Validates a pulled tombstone.
pub fn prepare_tombstone(v: &Value) -> Result<Map<String, Value>> {
    let Value::Object(t) = v else {
        return Err(bad(Code::InvalidRequest, "tombstone must be an object"));
    };
    only(
        t,
        &["record_id", "collection_id", "reason", "tombstoned_at"],
        "tombstone",
    )?;
    if !t
        .get("record_id")
        .and_then(Value::as_str)
        .is_some_and(is_record_id)
    {
        return Err(bad(Code::InvalidRecordId, "tombstone record_id is invalid"));
    }
    if !t
        .get("collection_id")
        .and_then(Value::as_str)
        .is_some_and(is_collection_id)
    {
        return Err(bad(
            Code::InvalidCollectionId,
            "tombstone collection_id is invalid",
        ));
    }
    if let Some(r) = t.get("reason") {
        match r {
            Value::String(s) if (1..=1000).contains(&utf16_len(s)) => {}
            _ => {
                return Err(bad(
                    Code::InvalidRequest,
                    "tombstone reason must be 1-1000 characters",
                ));
            }
        }
    }
    date("tombstone.tombstoned_at", t.get("tombstoned_at"))?;
    Ok(t.clone())
}

/// Applies a page's objects inside the writer's transaction (one
/// savepoint: a failure leaves nothing of the page), in page order.
/// Consecutive records without `supersedes_id` go in as one batch of
/// [`writer::insert_many`] (rows, then FTS rows, then token counts: one
/// record at a time interleaved them and FTS5 wrote one tiny index
/// segment per record), and then each one that already existed is
/// compared, in page order, so the first conflict is the one reported, as
/// one at a time. A collection, a tombstone or a superseding record ends
/// the batch and is applied after it.
pub(crate) fn apply(conn: &Connection, ops: Vec<ReplicaOp>) -> Result<ReplicaOutcome> {
    let mut out = ReplicaOutcome::default();
    let mut run: Vec<Prepared> = Vec::new();
    for op in ops {
        match op {
            ReplicaOp::Record(p) if !p.envelope.contains_key("supersedes_id") => run.push(p),
            op => {
                insert_run(conn, &mut run, &mut out)?;
                apply_one(conn, op, &mut out)?;
            }
        }
    }
    insert_run(conn, &mut run, &mut out)?;
    Ok(out)
}

/// Inserts a batch of records (none supersedes another), then checks the
/// ones that already existed, in order.
fn insert_run(conn: &Connection, run: &mut Vec<Prepared>, out: &mut ReplicaOutcome) -> Result<()> {
    if run.is_empty() {
        return Ok(());
    }
    let items: Vec<&Prepared> = run.iter().collect();
    let inserted = writer::insert_many(conn, &items)?;
    if inserted.len() != run.len() {
        return Err(Error::internal(
            "an insert reported another number of records",
        ));
    }
    for (p, ins) in run.iter().zip(inserted) {
        match ins {
            writer::Inserted::New => out.records_inserted += 1,
            writer::Inserted::Existing(stored) => {
                let stored: Value = serde_json::from_str(&stored)
                    .map_err(|e| Error::internal(format!("stored JSON is corrupt: {e}")))?;
                let same = match &stored {
                    Value::Object(m) => comparable(m)? == comparable(&p.envelope)?,
                    _ => false,
                };
                if !same {
                    return Err(conflict(&p.id));
                }
                out.records_existing += 1;
            }
        }
    }
    run.clear();
    Ok(())
}

fn conflict(id: &str) -> Error {
    bad(
        Code::ReplicaRecordConflict,
        format!("Record {id} already exists with a different envelope"),
    )
}

/// One object of a page, alone.
fn apply_one(conn: &Connection, op: ReplicaOp, out: &mut ReplicaOutcome) -> Result<()> {
    match op {
        ReplicaOp::Collection(def, created_at) => {
            writer::put_collection(conn, def, &created_at)?;
        }
        ReplicaOp::Record(p) => {
            if let Some(sup) = p.envelope.get("supersedes_id").and_then(Value::as_str) {
                match writer::record_collection(conn, sup)? {
                    None => {
                        return Err(bad(
                            Code::SupersededRecordNotFound,
                            format!("Superseded record {sup} was not found"),
                        ));
                    }
                    Some(c) if c != p.collection_id => {
                        return Err(bad(
                            Code::SupersededRecordCollectionMismatch,
                            "Superseded record belongs to another collection",
                        ));
                    }
                    Some(_) => {}
                }
            }
            // The "same record" form is only needed when the record
            // is already here (kept before `p` moves into the insert).
            let id = p.id.clone();
            let mine = p.envelope.clone();
            let (stored, inserted) = writer::insert_record(conn, p)?;
            if inserted {
                out.records_inserted += 1;
            } else {
                let same = match &stored {
                    Value::Object(m) => comparable(m)? == comparable(&mine)?,
                    _ => false,
                };
                if !same {
                    return Err(conflict(&id));
                }
                out.records_existing += 1;
            }
        }
        ReplicaOp::Tombstone(t) => {
            let record_id = t
                .get("record_id")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let Some((rid, coll)) = writer::find_record(conn, &record_id)? else {
                return Err(bad(
                    Code::RecordNotFound,
                    format!("Record {record_id} was not found"),
                ));
            };
            if t.get("collection_id").and_then(Value::as_str) != Some(coll.as_str()) {
                return Err(bad(
                    Code::ReplicaTombstoneCollectionMismatch,
                    "Replica tombstone names a record of another collection",
                ));
            }
            let want = canonical_json(&Value::Object(t.clone()))?;
            match writer::stored_tombstone(conn, rid)? {
                Some(e) => {
                    let e: Value = serde_json::from_str(&e)
                        .map_err(|e| Error::internal(format!("stored JSON is corrupt: {e}")))?;
                    if canonical_json(&e)? != want {
                        return Err(bad(
                            Code::ReplicaTombstoneConflict,
                            format!("Record {record_id} already has a different tombstone"),
                        ));
                    }
                }
                None => {
                    let reason = t.get("reason").and_then(Value::as_str).map(str::to_owned);
                    let at = t.get("tombstoned_at").and_then(Value::as_str).unwrap_or("");
                    writer::tombstone(conn, &record_id, reason, at)?;
                    out.tombstones_applied += 1;
                }
            }
        }
    }
    Ok(())
}
