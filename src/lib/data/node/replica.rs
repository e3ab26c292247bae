//! Replica import on the node: a pulled record checked against its
//! collection and prepared to store, a verified page's objects imported
//! through the node's writer, and a record's content read back for a
//! sync source (the checks and the SQL are `data::replica`'s).

use super::Node;
use super::write::{WriteOp, WriteResult};
use crate::data::canon::canonical_json;
use crate::data::collection;
use crate::data::fts::index_document;
use crate::data::record::{PROTOCOL, Prepared, local_envelope, record_id, replica_core};
use crate::data::replica::{ReplicaOp, ReplicaOutcome, bad, date, nonempty, only};
use crate::data::syntax::{is_collection_id, is_record_id, normalize_media_type};
use crate::data::writer;
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use serde_json::{Map, Value};

impl Node {
    /// Validates a pulled record envelope and its bytes against the
    /// collection `def` (the page's, identical to the local one or about
    /// to become it); returns it ready to store with the local
    /// `blob_ref`.
    pub fn prepare_replica_record(
        &self,
        def: &Map<String, Value>,
        envelope: &Value,
        bytes: Vec<u8>,
    ) -> Result<Prepared> {
        let Value::Object(env) = envelope else {
            return Err(bad(Code::InvalidRequest, "record must be an object"));
        };
        only(
            env,
            &[
                "protocol",
                "id",
                "collection_id",
                "source",
                "content",
                "schema_version",
                "metadata",
                "ingested_at",
                "observed_at",
                "key",
                "version",
                "supersedes_id",
                "provenance",
                "signature",
            ],
            "record",
        )?;
        if env.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
            return Err(bad(
                Code::InvalidRequest,
                "record protocol must be agent-data/v1",
            ));
        }
        let id = env.get("id").and_then(Value::as_str).unwrap_or("");
        if !is_record_id(id) {
            return Err(bad(
                Code::InvalidRecordId,
                "record id must match ^rec_[a-f0-9]{64}$",
            ));
        }
        let collection_id = env
            .get("collection_id")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !is_collection_id(collection_id) {
            return Err(bad(
                Code::InvalidCollectionId,
                "record collection_id is invalid",
            ));
        }
        let Some(Value::Object(source)) = env.get("source") else {
            return Err(bad(Code::InvalidRequest, "record source must be an object"));
        };
        only(
            source,
            &["collector_id", "uri", "external_id"],
            "record.source",
        )?;
        nonempty(source, "collector_id", "record.source")?;
        nonempty(source, "uri", "record.source")?;
        if source.contains_key("external_id") {
            nonempty(source, "external_id", "record.source")?;
        }
        let Some(Value::Object(content)) = env.get("content") else {
            return Err(bad(
                Code::InvalidRequest,
                "record content must be an object",
            ));
        };
        only(
            content,
            &["sha256", "size", "media_type", "blob_ref"],
            "record.content",
        )?;
        let sha = content.get("sha256").and_then(Value::as_str).unwrap_or("");
        let sha = Sha256Hex::parse(sha).map_err(|_| {
            bad(
                Code::InvalidRequest,
                "record content.sha256 must be 64 lowercase hex",
            )
        })?;
        let size = content
            .get("size")
            .and_then(Value::as_u64)
            .filter(|n| *n as f64 <= collection::MAX_SAFE_INTEGER)
            .ok_or_else(|| {
                bad(
                    Code::InvalidNumber,
                    "record content.size must be a safe integer >= 0",
                )
            })?;
        let media_type = content
            .get("media_type")
            .and_then(Value::as_str)
            .unwrap_or("");
        if normalize_media_type(media_type)? != media_type {
            return Err(bad(
                Code::InvalidMediaType,
                "record content.media_type is not normalised",
            ));
        }
        nonempty(content, "blob_ref", "record.content")?;
        let schema_version = nonempty(env, "schema_version", "record")?;
        if !env.get("metadata").is_some_and(Value::is_object) {
            return Err(bad(
                Code::InvalidJson,
                "record metadata must be a JSON object",
            ));
        }
        let ingested_at = date("record.ingested_at", env.get("ingested_at"))?;
        if env.contains_key("observed_at") {
            date("record.observed_at", env.get("observed_at"))?;
        }
        for k in ["key", "version", "supersedes_id"] {
            if env.contains_key(k) {
                nonempty(env, k, "record")?;
            }
        }
        if let Some(s) = env.get("supersedes_id").and_then(Value::as_str)
            && (!is_record_id(s) || s == id)
        {
            return Err(bad(
                Code::InvalidRecordId,
                "record supersedes_id is invalid",
            ));
        }
        if let Some(p) = env.get("provenance") {
            let Value::Array(entries) = p else {
                return Err(bad(
                    Code::InvalidRequest,
                    "record provenance must be an array",
                ));
            };
            for e in entries {
                let Value::Object(e) = e else {
                    return Err(bad(
                        Code::InvalidRequest,
                        "provenance entries must be objects",
                    ));
                };
                only(e, &["activity", "at", "actor", "input_ids"], "provenance[]")?;
                nonempty(e, "activity", "provenance[]")?;
                date("provenance.at", e.get("at"))?;
                if e.contains_key("actor") {
                    nonempty(e, "actor", "provenance[]")?;
                }
                if let Some(ids) = e.get("input_ids") {
                    let ok = ids.as_array().is_some_and(|a| {
                        a.iter().all(|x| x.as_str().is_some_and(|s| !s.is_empty()))
                    });
                    if !ok {
                        return Err(bad(
                            Code::InvalidRequest,
                            "provenance input_ids must be non-empty strings",
                        ));
                    }
                }
            }
        }
        if let Some(s) = env.get("signature") {
            let Value::Object(s) = s else {
                return Err(bad(
                    Code::InvalidRequest,
                    "record signature must be an object",
                ));
            };
            only(s, &["algorithm", "signer", "value"], "record.signature")?;
            for k in ["algorithm", "signer", "value"] {
                nonempty(s, k, "record.signature")?;
            }
        }
        // The id is re-derived from the identity subset.
        if record_id(&replica_core(
            env,
            collection_id,
            source,
            &sha,
            size,
            media_type,
            schema_version,
        ))? != id
        {
            return Err(bad(
                Code::ReplicaRecordIdMismatch,
                format!("Replica record id {id} does not match its envelope"),
            ));
        }
        if bytes.len() as u64 != size {
            return Err(bad(
                Code::ReplicaContentSizeMismatch,
                "Replica content size does not match",
            ));
        }
        if Sha256Hex::digest(&bytes) != sha {
            return Err(bad(
                Code::ReplicaContentHashMismatch,
                "Replica content SHA-256 does not match",
            ));
        }
        let policy = def.get("policy");
        let mut limit = self.limits().max_record_bytes;
        if let Some(p) = policy
            .and_then(|p| p.get("max_record_bytes"))
            .and_then(Value::as_u64)
        {
            limit = limit.min(p);
        }
        if size > limit {
            return Err(bad(
                Code::ContentTooLarge,
                format!("Collected content exceeds the {limit}-byte limit"),
            ));
        }
        if let Some(Value::Array(allowed)) = policy.and_then(|p| p.get("allowed_media_types"))
            && !allowed.iter().any(|t| t.as_str() == Some(media_type))
        {
            return Err(bad(
                Code::MediaTypeNotAllowed,
                format!("Media type {media_type} is not allowed in collection {collection_id}"),
            ));
        }
        let local_schema = def
            .get("schema")
            .and_then(|s| s.get("version"))
            .and_then(Value::as_str);
        if local_schema != Some(schema_version) {
            return Err(bad(
                Code::ReplicaSchemaMismatch,
                "Replica schema_version differs from the local collection's",
            ));
        }
        let envelope = local_envelope(env, &sha);
        let canonical = canonical_json(&Value::Object(envelope.clone()))?;
        let document = index_document(&envelope, &bytes, media_type);
        Ok(Prepared {
            id: id.to_owned(),
            collection_id: collection_id.to_owned(),
            envelope,
            canonical,
            sha256: sha,
            bytes,
            document,
            ingested_at,
            supersedes_id: env
                .get("supersedes_id")
                .and_then(Value::as_str)
                .map(str::to_owned),
        })
    }

    /// Imports one verified page's objects: large bytes fsynced into the
    /// CAS first, then everything in one write of the node's writer.
    pub fn apply_replica(&self, ops: Vec<ReplicaOp>) -> Result<ReplicaOutcome> {
        for op in &ops {
            if let ReplicaOp::Record(p) = op {
                self.store_blobs(std::slice::from_ref(p))?;
            }
        }
        match self.writer_write(WriteOp::Replica(ops))? {
            WriteResult::Replica(o) => Ok(o),
            _ => Err(Error::internal("unexpected writer result")),
        }
    }
}

impl Node {
    /// The verified bytes of a record's content by digest and size,
    /// tombstoned or not (a sync source sends a record's content even when
    /// a later change tombstones it).
    pub fn content_bytes(&self, sha: &Sha256Hex, size: u64) -> Result<Vec<u8>> {
        let key = sha.to_bytes();
        let inline = self.read(|c| writer::inline_content(c, &key))?;
        self.checked_content(sha, size, inline)
    }

    /// [`Node::content_bytes`] of many records, in order, their inline
    /// contents read through one take of the read connection (a page of
    /// the sync source reads up to 100: taking the connection for each
    /// was most of the cost). The first failure in order is returned.
    pub fn content_bytes_many(&self, items: &[(Sha256Hex, u64)]) -> Result<Vec<Vec<u8>>> {
        let inline = self.read(|c| {
            items
                .iter()
                .map(|(sha, _)| writer::inline_content(c, &sha.to_bytes()))
                .collect::<Result<Vec<_>>>()
        })?;
        items
            .iter()
            .zip(inline)
            .map(|((sha, size), inline)| self.checked_content(sha, *size, inline))
            .collect()
    }

    /// The content of `sha` (its inline bytes when stored inline, else
    /// the blob store's), checked against its size and digest.
    fn checked_content(
        &self,
        sha: &Sha256Hex,
        size: u64,
        inline: Option<Vec<u8>>,
    ) -> Result<Vec<u8>> {
        let bytes = match inline {
            Some(b) => b,
            None => {
                self.data_dir()
                    .blobs()?
                    .get(sha, None, self.limits().max_record_bytes.max(size))?
            }
        };
        if bytes.len() as u64 != size || Sha256Hex::digest(&bytes) != *sha {
            return Err(bad(
                Code::BlobIntegrityError,
                "stored content does not match its record",
            ));
        }
        Ok(bytes)
    }
}
