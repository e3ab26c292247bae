//! `collect`: running a collector, deriving record ids and envelopes,
//! index documents, and committing prepared records (one request, or many
//! sharing one transaction).

use super::super::canon::{canonical_json, clone_object, js_number_text};
use super::super::collectors::{self, Collector, Item};
use super::super::syntax::{
    check_collection_id, check_record_id, is_textual, normalize_date, normalize_media_type,
};
use super::super::writer::{self, WriteOp, WriteResult};
use super::{Node, PROTOCOL};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, OptionalExtension};
use crate::wire::digest::Sha256Hex;
use serde::Serialize;
use serde_json::{Map, Value, json};

/// `collect` request (`POST /v1/data/collect`). Fields keep their raw JSON
/// so that validation follows the reference order exactly.
#[derive(Debug, Clone, Default)]
pub struct CollectRequest {
    /// `collection_id`.
    pub collection_id: Option<Value>,
    /// `collector_id`.
    pub collector_id: Option<Value>,
    /// `input` (an object or absent).
    pub input: Option<Value>,
    /// `cursor` (a string or absent).
    pub cursor: Option<Value>,
}

impl CollectRequest {
    /// From a JSON body (unknown members are ignored, as in the reference).
    pub fn from_json(body: &Map<String, Value>) -> CollectRequest {
        CollectRequest {
            collection_id: body.get("collection_id").cloned(),
            collector_id: body.get("collector_id").cloned(),
            input: body.get("input").cloned(),
            cursor: body.get("cursor").cloned(),
        }
    }
}

/// `collect` response.
#[derive(Debug, Serialize)]
pub struct CollectResponse {
    /// One envelope per item.
    pub records: Vec<Value>,
    /// New records.
    pub inserted: u64,
    /// Records that already existed (first envelope returned).
    pub existing: u64,
    /// A collector continuation cursor.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

/// An item ready to store: its envelope, bytes and index document.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Record id.
    pub id: String,
    /// Collection id.
    pub collection_id: String,
    /// The envelope.
    pub envelope: Map<String, Value>,
    /// Its canonical JSON.
    pub canonical: String,
    /// SHA-256 of the bytes.
    pub sha256: Sha256Hex,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// FTS document.
    pub document: String,
    /// ingested_at.
    pub ingested_at: String,
}

impl Prepared {
    /// Whether the content is stored inline with the record row.
    pub fn is_inline(&self) -> bool {
        self.bytes.len() <= super::super::schema::INLINE_MAX_BYTES
    }
}

impl Node {
    /// Validates a collect request, runs the collector and prepares every
    /// item (no write).
    pub fn prepare_collect(&self, req: &CollectRequest) -> Result<(Vec<Prepared>, Option<String>)> {
        let collection_id = match &req.collection_id {
            Some(Value::String(s)) => s.as_str(),
            _ => "",
        };
        check_collection_id(collection_id)?;
        let collector_id = match &req.collector_id {
            Some(Value::String(s)) if !s.is_empty() => s.as_str(),
            _ => return Err(Error::new(Code::InvalidRequest, "collector_id is required")),
        };
        let empty = Map::new();
        let input = match &req.input {
            None => &empty,
            Some(Value::Object(m)) => m,
            Some(_) => return Err(Error::new(Code::InvalidJson, "input must be a JSON object")),
        };
        if matches!(&req.cursor, Some(v) if !v.is_string()) {
            return Err(Error::new(Code::InvalidRequest, "cursor must be a string"));
        }
        self.read(|conn| {
            let coll = self.collection(conn, collection_id)?;
            let collector: Collector = collectors::lookup(collector_id).ok_or_else(|| {
                Error::new(
                    Code::CollectorNotFound,
                    format!("Collector {collector_id} was not found"),
                )
            })?;
            let policy = coll.get("policy").and_then(Value::as_object);
            let mut limit = self.limits.max_record_bytes;
            if let Some(p) = policy
                .and_then(|p| p.get("max_record_bytes"))
                .and_then(Value::as_u64)
            {
                limit = limit.min(p);
            }
            let allowed: Option<Vec<&str>> = policy
                .and_then(|p| p.get("allowed_media_types"))
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect());
            let schema_version = coll
                .get("schema")
                .and_then(|s| s.get("version"))
                .and_then(Value::as_str)
                .unwrap_or("1")
                .to_owned();
            let env = collectors::Env {
                limit,
                file_roots: &self.file_roots,
                http_allow_private_networks: self.http_allow_private_networks,
            };
            let out = collector.run(input, &env)?;
            if out.items.len() as u64 > self.limits.max_collect_items {
                return Err(Error::new(
                    Code::CollectorItemLimit,
                    format!(
                        "Collector returned more than {} items",
                        self.limits.max_collect_items
                    ),
                ));
            }
            let ingested_at = self.now();
            let mut prepared = Vec::with_capacity(out.items.len());
            for item in out.items {
                prepared.push(self.prepare_item(
                    conn,
                    collection_id,
                    collector.id(),
                    &schema_version,
                    limit,
                    allowed.as_deref(),
                    item,
                    &ingested_at,
                )?);
            }
            Ok((prepared, out.cursor))
        })
    }

    #[allow(clippy::too_many_arguments)]
    fn prepare_item(
        &self,
        conn: &Connection,
        collection_id: &str,
        collector_id: &str,
        schema_version: &str,
        limit: u64,
        allowed: Option<&[&str]>,
        item: Item,
        ingested_at: &str,
    ) -> Result<Prepared> {
        if item.bytes.len() as u64 > limit {
            return Err(collectors::too_large(limit));
        }
        let media_type = normalize_media_type(&item.media_type)?;
        if let Some(allowed) = allowed
            && !allowed.contains(&media_type.as_str())
        {
            return Err(Error::new(
                Code::MediaTypeNotAllowed,
                format!("Media type {media_type} is not allowed in collection {collection_id}"),
            ));
        }
        if item.uri.is_empty() {
            return Err(Error::new(
                Code::InvalidInput,
                "source uri must be a non-empty string",
            ));
        }
        if let Some(sup) = &item.supersedes_id {
            check_record_id(sup)?;
            let coll: Option<String> = conn
                .prepare_cached("SELECT collection_id FROM records WHERE id=?1")?
                .query_row([sup], |r| r.get(0))
                .optional()?;
            match coll {
                None => {
                    return Err(Error::new(
                        Code::SupersededRecordNotFound,
                        format!("Superseded record {sup} was not found"),
                    ));
                }
                Some(c) if c != collection_id => {
                    return Err(Error::new(
                        Code::SupersededRecordCollectionMismatch,
                        "Superseded record belongs to another collection",
                    ));
                }
                Some(_) => {}
            }
        }
        let metadata = clone_object("metadata", item.metadata.as_ref())?;
        let observed_at = match &item.observed_at {
            Some(s) => Some(normalize_date("observed_at", s)?),
            None => None,
        };
        let provenance = match &item.provenance {
            Some(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for e in entries {
                    let mut n = e.clone();
                    if let Some(Value::String(at)) = e.get("at") {
                        n.insert("at".into(), normalize_date("provenance.at", at)?.into());
                    }
                    out.push(Value::Object(n));
                }
                Some(Value::Array(out))
            }
            None => None,
        };
        let sha256 = Sha256Hex::digest(&item.bytes);
        let size = item.bytes.len() as u64;
        let mut source = Map::new();
        source.insert("collector_id".into(), collector_id.into());
        source.insert("uri".into(), item.uri.clone().into());
        if let Some(e) = &item.external_id {
            source.insert("external_id".into(), e.clone().into());
        }
        let mut core = Map::new();
        core.insert("protocol".into(), PROTOCOL.into());
        core.insert("collection_id".into(), collection_id.into());
        core.insert("source".into(), Value::Object(source.clone()));
        core.insert(
            "content".into(),
            json!({"sha256": sha256.as_str(), "size": size, "media_type": media_type}),
        );
        core.insert("schema_version".into(), schema_version.into());
        for (k, v) in [
            ("key", &item.key),
            ("version", &item.version),
            ("supersedes_id", &item.supersedes_id),
        ] {
            if let Some(v) = v {
                core.insert(k.into(), v.clone().into());
            }
        }
        let id = record_id(&Value::Object(core))?;
        let mut env = Map::new();
        env.insert("protocol".into(), PROTOCOL.into());
        env.insert("id".into(), id.clone().into());
        env.insert("collection_id".into(), collection_id.into());
        env.insert("source".into(), Value::Object(source));
        env.insert(
            "content".into(),
            json!({"sha256": sha256.as_str(), "size": size, "media_type": media_type,
                   "blob_ref": format!("sha256:{sha256}")}),
        );
        env.insert("schema_version".into(), schema_version.into());
        env.insert("metadata".into(), Value::Object(metadata));
        env.insert("ingested_at".into(), ingested_at.into());
        if let Some(o) = observed_at {
            env.insert("observed_at".into(), o.into());
        }
        for (k, v) in [
            ("key", &item.key),
            ("version", &item.version),
            ("supersedes_id", &item.supersedes_id),
        ] {
            if let Some(v) = v {
                env.insert(k.into(), v.clone().into());
            }
        }
        if let Some(p) = provenance {
            env.insert("provenance".into(), p);
        }
        if let Some(s) = &item.signature {
            env.insert("signature".into(), Value::Object(s.clone()));
        }
        let canonical = canonical_json(&Value::Object(env.clone()))?;
        let document = index_document(&env, &item.bytes, &media_type);
        Ok(Prepared {
            id,
            collection_id: collection_id.into(),
            envelope: env,
            canonical,
            sha256,
            bytes: item.bytes,
            document,
            ingested_at: ingested_at.into(),
        })
    }

    /// Writes prepared items' bytes durably into the CAS (before any row
    /// naming them commits). Small content is skipped: the writer stores it
    /// inline in the same transaction as its record row.
    pub fn store_blobs(&self, items: &[Prepared]) -> Result<()> {
        let cas = self.dir.cas();
        for p in items.iter().filter(|p| !p.is_inline()) {
            let out = cas.put_bytes(&p.bytes)?;
            if out.digest != p.sha256 {
                return Err(Error::internal(
                    "CAS digest differs from the prepared digest",
                ));
            }
        }
        Ok(())
    }

    /// Commits prepared items whose bytes are already durable. Returns one
    /// `(envelope, inserted)` per item.
    pub fn commit_prepared(&self, items: Vec<Prepared>) -> Result<Vec<(Value, bool)>> {
        match self.writer.write(self, WriteOp::Collect(items))? {
            WriteResult::Collect(v) => Ok(v),
            _ => Err(Error::internal("unexpected writer result")),
        }
    }

    /// `collect`: validate, run the collector, store bytes, commit.
    pub fn collect(&self, req: &CollectRequest) -> Result<CollectResponse> {
        let (prepared, cursor) = self.prepare_collect(req)?;
        // Each request's bytes are fsynced by its own thread; concurrent
        // requests' syncs share journal commits, and the writer then
        // commits all their rows with one WAL fsync.
        self.store_blobs(&prepared)?;
        let results = self.commit_prepared(prepared)?;
        let mut resp = CollectResponse {
            records: Vec::with_capacity(results.len()),
            inserted: 0,
            existing: 0,
            cursor,
        };
        for (env, inserted) in results {
            if inserted {
                resp.inserted += 1;
            } else {
                resp.existing += 1;
            }
            resp.records.push(env);
        }
        Ok(resp)
    }

    /// Bulk collect: every request is prepared on its own (a bad one fails
    /// alone), the bytes of all of them are made durable in parallel, then
    /// all records commit in one transaction.
    pub fn collect_batch(&self, reqs: &[CollectRequest]) -> Vec<Result<CollectResponse>> {
        let mut prepared: Vec<Result<(Vec<Prepared>, Option<String>)>> =
            reqs.iter().map(|r| self.prepare_collect(r)).collect();
        let stored = self.store_blobs_parallel(
            prepared
                .iter()
                .filter_map(|p| p.as_ref().ok())
                .flat_map(|(items, _)| items.iter())
                .filter(|p| !p.is_inline())
                .collect(),
        );
        if let Err(e) = stored {
            return reqs.iter().map(|_| Err(writer::clone_err(&e))).collect();
        }
        let mut slots = Vec::with_capacity(prepared.len());
        let mut ops = Vec::new();
        for p in prepared.iter_mut() {
            match p {
                Ok((items, cursor)) => {
                    slots.push(Ok(cursor.take()));
                    ops.push(WriteOp::Collect(std::mem::take(items)));
                }
                Err(e) => slots.push(Err(writer::clone_err(e))),
            }
        }
        let mut results = self.writer.write_many(self, ops).into_iter();
        slots
            .into_iter()
            .map(|slot| {
                let cursor = slot?;
                match results.next() {
                    Some(Ok(WriteResult::Collect(v))) => {
                        let mut resp = CollectResponse {
                            records: Vec::with_capacity(v.len()),
                            inserted: 0,
                            existing: 0,
                            cursor,
                        };
                        for (env, inserted) in v {
                            if inserted {
                                resp.inserted += 1;
                            } else {
                                resp.existing += 1;
                            }
                            resp.records.push(env);
                        }
                        Ok(resp)
                    }
                    Some(Ok(_)) | None => Err(Error::internal("unexpected writer result")),
                    Some(Err(e)) => Err(e),
                }
            })
            .collect()
    }

    /// Writes many items' bytes durably, many at once: each object is
    /// fsynced (file and directory) by one of several threads, so the file
    /// system folds concurrent syncs into shared journal commits.
    fn store_blobs_parallel(&self, items: Vec<&Prepared>) -> Result<()> {
        const THREADS: usize = 32;
        if items.is_empty() {
            return Ok(());
        }
        let chunk = items.len().div_ceil(THREADS);
        std::thread::scope(|s| {
            let handles: Vec<_> = items
                .chunks(chunk)
                .map(|c| {
                    s.spawn(move || {
                        c.iter()
                            .try_for_each(|p| self.store_blobs(std::slice::from_ref(*p)))
                    })
                })
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::internal("a blob writer thread panicked")))
            })
        })
    }
}

/// `rec_` + SHA-256 of the canonical JSON of an id core.
pub fn record_id(core: &Value) -> Result<String> {
    Ok(format!(
        "rec_{}",
        Sha256Hex::digest(canonical_json(core)?.as_bytes())
    ))
}

/// The FTS document of a record (spec/agent-data-facts.md §8.3).
pub fn index_document(env: &Map<String, Value>, bytes: &[u8], media_type: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if is_textual(media_type)
        && let Ok(s) = std::str::from_utf8(bytes)
    {
        parts.push(s.to_owned());
    }
    let source = env.get("source");
    for v in [
        source.and_then(|s| s.get("uri")),
        source.and_then(|s| s.get("external_id")),
        env.get("key"),
    ] {
        if let Some(s) = v.and_then(Value::as_str) {
            parts.push(s.to_owned());
        }
    }
    let mut flat = Vec::new();
    if let Some(m) = env.get("metadata") {
        flatten(m, &mut flat);
    }
    parts.extend(flat);
    parts.retain(|p| !p.is_empty());
    parts.join("\n")
}

fn flatten(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                out.push(k.clone());
                flatten(v, out);
            }
        }
        Value::Array(a) => a.iter().for_each(|x| flatten(x, out)),
        Value::String(s) => out.push(s.clone()),
        Value::Number(n) => out.push(js_number_text(n)),
        Value::Bool(b) => out.push(b.to_string()),
        Value::Null => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_record_id_vectors() {
        let doc: Value = serde_json::from_str(include_str!(
            "../../../../fixtures/agent-data-record-ids.json"
        ))
        .expect("fixture");
        for v in doc["vectors"].as_array().expect("vectors") {
            let core_text = v["canonical_core"].as_str().expect("core");
            let core: Value = serde_json::from_str(core_text).expect("core json");
            assert_eq!(
                canonical_json(&core).expect("canon"),
                core_text,
                "{}",
                v["name"]
            );
            assert_eq!(record_id(&core).expect("id"), v["id"], "{}", v["name"]);
        }
    }

    #[test]
    fn document() {
        let env = json!({"source":{"uri":"urn:x","external_id":"e"},"key":"k","metadata":{"a":[1.5,true,null,"s"],"b":{"c":1e21}}});
        let Value::Object(env) = env else { panic!() };
        assert_eq!(
            index_document(&env, b"hi", "text/plain"),
            "hi\nurn:x\ne\nk\na\n1.5\ntrue\ns\nb\nc\n1e+21"
        );
        assert_eq!(
            index_document(&env, b"hi", "image/png"),
            "urn:x\ne\nk\na\n1.5\ntrue\ns\nb\nc\n1e+21"
        );
    }
}
