//! `collect`: running a collector, deriving record ids and envelopes
//! (built by `data::record`), index documents, and committing prepared records (one request, or many
//! sharing one transaction).

use super::super::canon::{canonical_json, canonical_object, push_json_string};
use super::super::collectors::{self, Collector, Item};
use super::super::fts::document_of;
#[cfg(test)]
use super::super::record::PROTOCOL;
use super::super::record::{Extra, Fields, Prepared};
use super::super::syntax::{
    check_collection_id, check_record_id, normalize_date, normalize_media_type,
};
use super::super::writer::record_collection;
use super::write::{WriteOp, WriteResult};
use super::{Node, ReadSource};
use crate::error::{Code, Error, Result};
use crate::store::Connection;
use crate::wire::digest::Sha256Hex;
use serde::Serialize;
use serde_json::{Map, Value};

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

/// Where a collect writes: the collection, its effective policy and the
/// collector (resolved once per request, or once per bulk ingest).
#[derive(Debug, Clone)]
pub(crate) struct CollectTarget {
    pub(crate) collection_id: String,
    pub(crate) collector: Collector,
    pub(crate) limit: u64,
    pub(crate) allowed: Option<Vec<String>>,
    pub(crate) schema_version: String,
}

/// A superseded record must exist, in the same collection.
pub(crate) fn check_supersedes(conn: &Connection, collection_id: &str, sup: &str) -> Result<()> {
    let coll = record_collection(conn, sup)?;
    match coll {
        None => Err(Error::new(
            Code::SupersededRecordNotFound,
            format!("Superseded record {sup} was not found"),
        )),
        Some(c) if c != collection_id => Err(Error::new(
            Code::SupersededRecordCollectionMismatch,
            "Superseded record belongs to another collection",
        )),
        Some(_) => Ok(()),
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
        self.read_lazy(|conn| {
            let target = self.collect_target(conn, collection_id, collector_id)?;
            self.prepare_input(conn, &target, input, false)
        })
    }

    /// Resolves what a collect writes to: the collection (which must exist)
    /// with its effective policy, and the collector.
    pub(crate) fn collect_target(
        &self,
        conn: &dyn ReadSource,
        collection_id: &str,
        collector_id: &str,
    ) -> Result<CollectTarget> {
        let coll = self.collection_via(conn, collection_id)?;
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
        let allowed: Option<Vec<String>> = policy
            .and_then(|p| p.get("allowed_media_types"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            });
        let schema_version = coll
            .get("schema")
            .and_then(|s| s.get("version"))
            .and_then(Value::as_str)
            .unwrap_or("1")
            .to_owned();
        Ok(CollectTarget {
            collection_id: collection_id.to_owned(),
            collector,
            limit,
            allowed,
            schema_version,
        })
    }

    /// Runs the target's collector on one input object and prepares its
    /// items. `conn` is a read connection for the superseded-record checks.
    /// For `bulk` ingest a superseded record it does not see yet is left to
    /// the writer to check (it may be in a batch that has not committed).
    pub(crate) fn prepare_input(
        &self,
        conn: &dyn ReadSource,
        target: &CollectTarget,
        input: &Map<String, Value>,
        bulk: bool,
    ) -> Result<(Vec<Prepared>, Option<String>)> {
        let env = collectors::Env {
            limit: target.limit,
            file_roots: &self.file_roots,
            http_allow_private_networks: self.http_allow_private_networks,
        };
        let out = target.collector.run(input, &env)?;
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
            prepared.push(self.prepare_item(conn, target, item, &ingested_at, bulk)?);
        }
        Ok((prepared, out.cursor))
    }

    fn prepare_item(
        &self,
        conn: &dyn ReadSource,
        target: &CollectTarget,
        item: Item,
        ingested_at: &str,
        bulk: bool,
    ) -> Result<Prepared> {
        let collection_id = target.collection_id.as_str();
        let collector_id = target.collector.id();
        let schema_version = target.schema_version.as_str();
        let limit = target.limit;
        if item.bytes.len() as u64 > limit {
            return Err(collectors::too_large(limit));
        }
        let media_type = normalize_media_type(&item.media_type)?;
        if let Some(allowed) = &target.allowed
            && !allowed.contains(&media_type)
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
            match check_supersedes(conn.conn()?, collection_id, sup) {
                Err(e) if bulk && e.code() == Code::SupersededRecordNotFound => {}
                r => r?,
            }
        }
        let (metadata, metadata_text) = canonical_object("metadata", item.metadata.as_ref())?;
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
        let provenance_text = provenance.as_ref().map(canonical_json).transpose()?;
        let signature = item.signature.as_ref().map(|s| Value::Object(s.clone()));
        let signature_text = signature.as_ref().map(canonical_json).transpose()?;
        let sha256 = Sha256Hex::digest(&item.bytes);
        let size = item.bytes.len() as u64;
        let fields = Fields {
            collection_id,
            collector_id,
            uri: &item.uri,
            external_id: item.external_id.as_deref(),
            sha256: sha256.as_str(),
            size,
            media_type: &media_type,
            schema_version,
            key: item.key.as_deref(),
            version: item.version.as_deref(),
            supersedes_id: item.supersedes_id.as_deref(),
        };
        let id = format!("rec_{}", Sha256Hex::digest(fields.core_text().as_bytes()));
        let canonical = fields.envelope_text(&Extra {
            id: &id,
            ingested_at,
            metadata: &metadata_text,
            observed_at: observed_at.as_deref(),
            provenance: provenance_text.as_deref(),
            signature: signature_text.as_deref(),
        });
        let document = document_of(
            &item.bytes,
            &media_type,
            Some(item.uri.as_str()),
            item.external_id.as_deref(),
            item.key.as_deref(),
            Some(&Value::Object(metadata)),
        );
        Ok(Prepared {
            id,
            collection_id: collection_id.into(),
            envelope: Map::new(),
            canonical,
            sha256,
            bytes: item.bytes,
            document,
            ingested_at: ingested_at.into(),
            supersedes_id: item.supersedes_id,
        })
    }

    /// Writes prepared items' bytes durably into the CAS (before any row
    /// naming them commits). Small content is skipped: the writer stores it
    /// inline in the same transaction as its record row.
    pub fn store_blobs(&self, items: &[Prepared]) -> Result<()> {
        let mut outside = items.iter().filter(|p| !p.is_inline()).peekable();
        if outside.peek().is_none() {
            // All inline: the blob store (and its configuration file) is
            // not consulted.
            return Ok(());
        }
        let cas = self.dir.blobs()?;
        for p in outside {
            let out = cas.put_bytes_as(&p.bytes, &p.sha256)?;
            if out.digest != p.sha256 {
                return Err(Error::internal(
                    "CAS digest differs from the prepared digest",
                ));
            }
        }
        Ok(())
    }

    /// Commits prepared items whose bytes are already durable. Returns one
    /// `(canonical envelope text, inserted)` per item.
    pub fn commit_prepared(&self, items: Vec<Prepared>) -> Result<Vec<(String, bool)>> {
        match self.writer.write(self, WriteOp::Collect(items))? {
            WriteResult::Collect(v) => Ok(v),
            _ => Err(Error::internal("unexpected writer result")),
        }
    }

    /// Validate, run the collector, store bytes, commit: the envelopes as
    /// canonical text, and the collector's cursor.
    fn collect_texts(&self, req: &CollectRequest) -> Result<(Committed, Option<String>)> {
        let (prepared, cursor) = self.prepare_collect(req)?;
        // Each request's bytes are fsynced by its own thread; concurrent
        // requests' syncs share journal commits, and the writer then
        // commits all their rows with one WAL fsync.
        self.store_blobs(&prepared)?;
        Ok((self.commit_prepared(prepared)?, cursor))
    }

    /// `collect`: validate, run the collector, store bytes, commit.
    pub fn collect(&self, req: &CollectRequest) -> Result<CollectResponse> {
        let (results, cursor) = self.collect_texts(req)?;
        response(results, cursor)
    }

    /// [`Node::collect`] answered as the canonical JSON text of its
    /// [`CollectResponse`] (what `POST /v1/data/collect` sends), written
    /// from the envelopes' canonical text without building and
    /// re-canonicalising a JSON tree. A stored envelope (an existing
    /// record) is re-canonicalised, so that the bytes are exactly those of
    /// the response rendered as canonical JSON whatever its stored form.
    pub fn collect_canonical(&self, req: &CollectRequest) -> Result<Vec<u8>> {
        let (results, cursor) = self.collect_texts(req)?;
        canonical_response(&results, cursor)
    }

    /// [`Node::collect_canonical`] without waiting for the writer: the
    /// request is validated, its collector run and its bytes stored here;
    /// the returned future (awaited on the server's runtime, holding no
    /// thread) yields the answer once the writer's batch is durable. A
    /// dropped future drops only the answer: the records are committed.
    pub fn collect_later(
        &self,
        req: &CollectRequest,
    ) -> Result<impl std::future::Future<Output = Result<Vec<u8>>> + Send + 'static> {
        let (prepared, cursor) = self.prepare_collect(req)?;
        self.store_blobs(&prepared)?;
        let written = self.writer_deferred(WriteOp::Collect(prepared));
        Ok(async move {
            match written.answer().await? {
                WriteResult::Collect(v) => canonical_response(&v, cursor),
                _ => Err(Error::internal("unexpected writer result")),
            }
        })
    }

    /// Writes many items' bytes durably, many at once: each object is
    /// fsynced (file and directory) by one of several threads, so the file
    /// system folds concurrent syncs into shared journal commits.
    pub(crate) fn store_blobs_parallel(&self, items: Vec<&Prepared>) -> Result<()> {
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

/// `(canonical envelope text, inserted)` per committed item.
type Committed = Vec<(String, bool)>;

/// The canonical JSON text of a collect's response from its committed
/// envelopes' canonical text.
fn canonical_response(results: &Committed, cursor: Option<String>) -> Result<Vec<u8>> {
    let inserted = results.iter().filter(|(_, new)| *new).count();
    let size: usize = results.iter().map(|(t, _)| t.len() + 1).sum();
    let mut out = Vec::with_capacity(size + 64);
    // Canonical member order: cursor, existing, inserted, records.
    out.push(b'{');
    if let Some(c) = &cursor {
        out.extend_from_slice(b"\"cursor\":");
        push_json_string(&mut out, c);
        out.push(b',');
    }
    out.extend_from_slice(
        format!(
            "\"existing\":{},\"inserted\":{inserted},\"records\":[",
            results.len() - inserted
        )
        .as_bytes(),
    );
    for (k, (text, new)) in results.iter().enumerate() {
        if k > 0 {
            out.push(b',');
        }
        if *new {
            out.extend_from_slice(text.as_bytes());
        } else {
            out.extend_from_slice(canonical_json(&parse_envelope(text)?)?.as_bytes());
        }
    }
    out.extend_from_slice(b"]}");
    Ok(out)
}

/// A stored or prepared envelope's canonical text as JSON.
fn parse_envelope(text: &str) -> Result<Value> {
    serde_json::from_str(text).map_err(|e| Error::internal(format!("stored JSON is corrupt: {e}")))
}

/// The response for committed envelopes (canonical text each).
fn response(results: Vec<(String, bool)>, cursor: Option<String>) -> Result<CollectResponse> {
    let mut resp = CollectResponse {
        records: Vec::with_capacity(results.len()),
        inserted: 0,
        existing: 0,
        cursor,
    };
    for (text, inserted) in results {
        if inserted {
            resp.inserted += 1;
        } else {
            resp.existing += 1;
        }
        resp.records.push(parse_envelope(&text)?);
    }
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::fts::index_document;
    use crate::data::record::record_id;
    use serde_json::json;

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
            // The member-by-member assembly the collect path uses.
            let s = |p: &str| core.pointer(p).and_then(Value::as_str);
            let sha = s("/content/sha256").expect("sha");
            let f = Fields {
                collection_id: s("/collection_id").expect("c"),
                collector_id: s("/source/collector_id").expect("collector"),
                uri: s("/source/uri").expect("uri"),
                external_id: s("/source/external_id"),
                sha256: sha,
                size: core
                    .pointer("/content/size")
                    .and_then(Value::as_u64)
                    .expect("size"),
                media_type: s("/content/media_type").expect("mt"),
                schema_version: s("/schema_version").expect("sv"),
                key: s("/key"),
                version: s("/version"),
                supersedes_id: s("/supersedes_id"),
            };
            assert_eq!(f.core_text(), core_text, "{}", v["name"]);
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

    /// The member-by-member canonical texts equal the canonicaliser's
    /// output for the same values (the record ids and stored bytes depend on
    /// it), over random strings (quotes, controls, non-BMP characters),
    /// optional members and arbitrary metadata.
    mod assembled_canonical_json {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::json;

        fn json_value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|n| json!(n)),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(|f| json!(f)),
                "\\PC{0,8}|[\"\\\\\u{0}-\u{1f}\u{7f}\u{2028}\u{1F600}é]{0,6}"
                    .prop_map(Value::String),
            ];
            leaf.prop_recursive(3, 24, 4, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                    prop::collection::btree_map("\\PC{0,6}", inner, 0..4)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        fn text() -> impl Strategy<Value = String> {
            "\\PC{1,12}|[a-z\"\\\\\u{1}\n\u{1F600}\u{FFFF}]{1,8}"
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(256))]
            #[test]
            fn equals_the_canonicaliser(
                collection_id in text(), uri in text(), external_id in proptest::option::of(text()),
                media_type in text(), schema_version in text(), size in 0u64..(1 << 53),
                key in proptest::option::of(text()), version in proptest::option::of(text()),
                supersedes_id in proptest::option::of(text()), observed_at in proptest::option::of(text()),
                metadata in prop::collection::btree_map("\\PC{0,6}", json_value(), 0..5),
                provenance in proptest::option::of(prop::collection::vec(json_value(), 0..3)),
                signature in proptest::option::of(("\\PC{0,5}", text(), text())),
            ) {
                let sha = Sha256Hex::digest(uri.as_bytes());
                let f = Fields {
                    collection_id: &collection_id, collector_id: "text", uri: &uri,
                    external_id: external_id.as_deref(), sha256: sha.as_str(), size,
                    media_type: &media_type, schema_version: &schema_version,
                    key: key.as_deref(), version: version.as_deref(),
                    supersedes_id: supersedes_id.as_deref(),
                };
                let mut source = Map::new();
                source.insert("collector_id".into(), "text".into());
                source.insert("uri".into(), uri.clone().into());
                if let Some(e) = &external_id {
                    source.insert("external_id".into(), e.clone().into());
                }
                let mut core = Map::new();
                core.insert("protocol".into(), PROTOCOL.into());
                core.insert("collection_id".into(), collection_id.clone().into());
                core.insert("source".into(), Value::Object(source.clone()));
                core.insert("content".into(), json!({"sha256": sha.as_str(), "size": size, "media_type": media_type}));
                core.insert("schema_version".into(), schema_version.clone().into());
                for (k, v) in [("key", &key), ("version", &version), ("supersedes_id", &supersedes_id)] {
                    if let Some(v) = v {
                        core.insert(k.into(), v.clone().into());
                    }
                }
                let want_core = canonical_json(&Value::Object(core)).expect("core");
                prop_assert_eq!(f.core_text(), want_core.clone());

                let metadata = Value::Object(metadata.into_iter().collect());
                let (metadata, metadata_text) = canonical_object("metadata", Some(&metadata)).expect("metadata");
                let provenance = provenance.map(Value::Array);
                let signature = signature.map(|(a, b, c)| json!({"algorithm": a, "signer": b, "value": c}));
                let prov_text = provenance.as_ref().map(|p| canonical_json(p).expect("p"));
                let sig_text = signature.as_ref().map(|s| canonical_json(s).expect("s"));
                let id = format!("rec_{}", Sha256Hex::digest(want_core.as_bytes()));
                let got = f.envelope_text(&Extra {
                    id: &id, ingested_at: "2026-12-01T10:03:02.791Z", metadata: &metadata_text,
                    observed_at: observed_at.as_deref(), provenance: prov_text.as_deref(),
                    signature: sig_text.as_deref(),
                });
                let mut env = Map::new();
                env.insert("protocol".into(), PROTOCOL.into());
                env.insert("id".into(), id.clone().into());
                env.insert("collection_id".into(), collection_id.clone().into());
                env.insert("source".into(), Value::Object(source));
                env.insert("content".into(), json!({"sha256": sha.as_str(), "size": size, "media_type": media_type, "blob_ref": format!("sha256:{sha}")}));
                env.insert("schema_version".into(), schema_version.clone().into());
                env.insert("metadata".into(), Value::Object(metadata));
                env.insert("ingested_at".into(), "2026-12-01T10:03:02.791Z".into());
                if let Some(o) = &observed_at {
                    env.insert("observed_at".into(), o.clone().into());
                }
                for (k, v) in [("key", &key), ("version", &version), ("supersedes_id", &supersedes_id)] {
                    if let Some(v) = v {
                        env.insert(k.into(), v.clone().into());
                    }
                }
                if let Some(p) = provenance {
                    env.insert("provenance".into(), p);
                }
                if let Some(s) = signature {
                    env.insert("signature".into(), s);
                }
                prop_assert_eq!(got, canonical_json(&Value::Object(env)).expect("env"));
            }
        }
    }

    /// `collect_canonical` (the HTTP answer, written from canonical text)
    /// sends exactly the bytes of `collect`'s response rendered as
    /// canonical JSON, for new records (random texts, metadata, optional
    /// members) and for the same requests again (existing records).
    mod canonical_answer {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::json;

        fn leaf() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                any::<i64>().prop_map(|n| json!(n)),
                any::<u64>().prop_map(|n| json!(n)),
                any::<f64>()
                    .prop_filter("finite", |f| f.is_finite())
                    .prop_map(|f| json!(f)),
                Just(json!(-0.0)),
                Just(json!(1e21)),
                Just(json!(5e-324)),
                "\\PC{0,8}|[\"\\\\\u{1}-\u{1f}\u{7f}\u{2028}\u{1F600}é]{0,6}"
                    .prop_map(Value::String),
            ]
        }

        fn text() -> impl Strategy<Value = String> {
            "[a-z]\\PC{0,12}|x[\"\\\\\u{1}\n\u{1F600}\u{FFFF}]{1,8}"
        }

        fn node(root: &std::path::Path) -> Node {
            crate::data::node::test_node(root)
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(48))]
            #[test]
            fn equals_the_rendered_response(
                items in prop::collection::vec((
                    text(),
                    proptest::option::of(text()),
                    proptest::option::of(text()),
                    proptest::option::of(text()),
                    prop::collection::btree_map("\\PC{0,6}", leaf(), 0..5),
                    any::<bool>(),
                ), 1..4),
            ) {
                let t = tempfile::tempdir().expect("tempdir");
                let (a, b) = (node(&t.path().join("a")), node(&t.path().join("b")));
                let reqs: Vec<CollectRequest> = items.into_iter().map(|(txt, uri, ext, key, md, obs)| {
                    let mut input = Map::new();
                    input.insert("text".into(), txt.into());
                    for (k, v) in [("source_uri", uri), ("external_id", ext), ("key", key)] {
                        if let Some(v) = v {
                            input.insert(k.into(), v.into());
                        }
                    }
                    input.insert("metadata".into(), Value::Object(md.into_iter().collect()));
                    if obs {
                        input.insert("observed_at".into(), "2026-01-02T03:04:05+01:00".into());
                        input.insert("provenance".into(), json!([{"activity": "a\u{2028}", "at": "2026-01-02T03:04:05Z", "input_ids": ["x"]}]));
                    }
                    CollectRequest {
                        collection_id: Some(json!("default")),
                        collector_id: Some(json!("text")),
                        input: Some(Value::Object(input)),
                        cursor: None,
                    }
                }).collect();
                // Each twice: new, then existing.
                for req in reqs.iter().chain(reqs.iter()) {
                    // What `Response::json` renders: canonical JSON of the tree.
                    let rendered = a.collect(req).map(|r| {
                        canonical_json(&serde_json::to_value(&r).expect("value")).expect("canonical").into_bytes()
                    });
                    let direct = b.collect_canonical(req);
                    match (rendered, direct) {
                        (Ok(x), Ok(y)) => prop_assert_eq!(String::from_utf8(x).expect("utf8"), String::from_utf8(y).expect("utf8")),
                        (Err(x), Err(y)) => prop_assert_eq!(x.code(), y.code()),
                        (x, y) => prop_assert!(false, "{:?} vs {:?}", x.map(|_| ()), y.map(|_| ())),
                    }
                }
            }
        }
    }
}
