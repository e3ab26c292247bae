//! The change feed (opaque cursors) and tombstones.

use super::super::canon::utf16_len;
use super::super::cursor;
use super::super::key::record_id;
use super::super::syntax::{check_collection_id, check_record_id};
use super::write::{WriteOp, WriteResult};
use super::{Node, parse_json};
use crate::error::{Code, Error, Result};
use crate::store::params;
use serde_json::{Map, Value};

/// `changes` request.
#[derive(Debug, Clone, Default)]
pub struct ChangesRequest {
    /// Filter on one collection (an empty string is invalid).
    pub collection_id: Option<String>,
    /// Position (empty or absent: from the start).
    pub cursor: Option<String>,
    /// Page size (absent: the default).
    pub limit: Option<u64>,
}

/// `tombstone` request.
#[derive(Debug, Clone, Default)]
pub struct TombstoneRequest {
    /// Record id.
    pub record_id: String,
    /// Reason (empty counts as none).
    pub reason: Option<String>,
}

impl Node {
    /// `changes`: one page of the change feed after a cursor.
    pub fn changes(&self, req: &ChangesRequest) -> Result<Value> {
        if let Some(c) = &req.collection_id {
            check_collection_id(c)?;
            self.read(|conn| self.collection(conn, c).map(|_| ()))?;
        }
        let limit = req.limit.unwrap_or(self.limits.default_change_limit);
        if limit == 0 {
            return Err(Error::new(
                Code::InvalidQuery,
                "limit must be a positive integer",
            ));
        }
        if limit > self.limits.max_change_limit {
            return Err(Error::new(
                Code::LimitExceeded,
                format!("limit cannot exceed {}", self.limits.max_change_limit),
            ));
        }
        let filter = req.collection_id.as_deref();
        let after = match req.cursor.as_deref() {
            None | Some("") => 0,
            Some(c) => cursor::decode(c, &self.feed_id, filter)?,
        };
        let rows = self.read(|c| {
            let mut st = c.prepare_cached(
                // An event names its record by row id (data schema 5): the
                // record id is its key's, and a record event's payload is
                // its record's envelope (schema 3 stores it once, in
                // `records`). A left join, so that an event whose record is
                // missing is an error rather than a gap in the feed.
                "SELECT c.sequence, c.type, c.collection_id, r.key, c.at, \
                 COALESCE(c.payload_json, r.envelope_json) \
                 FROM changes c LEFT JOIN records r ON r.rid = c.rid \
                 WHERE c.sequence > ?1 AND (?2 IS NULL OR c.collection_id = ?2) \
                 ORDER BY c.sequence LIMIT ?3",
            )?;
            let rows = st.query_map(params![after, filter, (limit + 1) as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<Vec<u8>>>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, Option<String>>(5)?,
                ))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })?;
        let has_more = rows.len() as u64 > limit;
        let mut last = after;
        let mut changes = Vec::new();
        for (seq, ty, coll, key, at, payload) in rows.into_iter().take(limit as usize) {
            let (Some(key), Some(payload)) = (key, payload) else {
                return Err(Error::internal(format!(
                    "change {seq} names a record that is not stored"
                )));
            };
            let rec = record_id(&key)?;
            last = seq;
            let (ty, member) = if ty == "record" {
                ("record.created", "record")
            } else {
                ("record.tombstoned", "tombstone")
            };
            let mut ev = Map::new();
            ev.insert("id".into(), format!("change_{seq}").into());
            ev.insert("type".into(), ty.into());
            ev.insert("sequence".into(), seq.into());
            ev.insert("collection_id".into(), coll.into());
            ev.insert("record_id".into(), rec.into());
            ev.insert("occurred_at".into(), at.into());
            ev.insert(member.into(), parse_json(&payload)?);
            changes.push(Value::Object(ev));
        }
        // Built as a map, not through `to_value` of a struct: that copies
        // every change's envelope once more.
        let mut page = Map::new();
        page.insert("changes".into(), Value::Array(changes));
        page.insert(
            "cursor".into(),
            cursor::encode(&self.feed_id, filter, last).into(),
        );
        page.insert("has_more".into(), has_more.into());
        Ok(Value::Object(page))
    }

    /// `tombstone`: idempotent; the first tombstone wins.
    pub fn tombstone(&self, req: &TombstoneRequest) -> Result<Value> {
        let op = tombstone_op(req, self.now())?;
        tombstone_answer(&req.record_id, self.writer.write(self, op)?)
    }

    /// [`Node::tombstone`] without waiting for the writer: checked and
    /// queued here; the future yields the answer once the batch is durable
    /// (a dropped future drops only the answer).
    pub fn tombstone_later(
        &self,
        req: &TombstoneRequest,
    ) -> Result<impl std::future::Future<Output = Result<Value>> + Send + 'static> {
        let op = tombstone_op(req, self.now())?;
        let written = self.writer_deferred(op);
        let id = req.record_id.clone();
        Ok(async move { tombstone_answer(&id, written.answer().await?) })
    }
}

/// The write of a checked tombstone request.
fn tombstone_op(req: &TombstoneRequest, now: String) -> Result<WriteOp> {
    check_record_id(&req.record_id)?;
    let reason = req.reason.clone().filter(|r| !r.is_empty());
    if reason.as_deref().is_some_and(|r| utf16_len(r) > 1000) {
        return Err(Error::new(
            Code::InvalidRequest,
            "reason must be at most 1000 characters",
        ));
    }
    Ok(WriteOp::Tombstone {
        record_id: req.record_id.clone(),
        reason,
        now,
    })
}

// The answers below are JSON objects: their fields are in key order, the
// order the `Value` they become has.

/// `tombstone`'s answer.
#[derive(serde::Serialize)]
struct Tombstoned<'a> {
    record_id: &'a str,
    tombstone: Value,
    tombstoned: bool,
}

/// The answer to a committed tombstone.
fn tombstone_answer(record_id: &str, r: WriteResult) -> Result<Value> {
    match r {
        WriteResult::Tombstone(tombstone) => Ok(serde_json::to_value(Tombstoned {
            record_id,
            tombstone,
            tombstoned: true,
        })?),
        _ => Err(Error::internal("unexpected writer result")),
    }
}
