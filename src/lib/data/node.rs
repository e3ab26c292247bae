//! The data node: opening, identity, collections, collect, exact reads,
//! query, the change feed and tombstones. Every face (CLI, HTTP) calls
//! these functions with the same request structs.

use super::canon::{canonical_json, clone_object, js_number_text, subset_match, utf16_len};
use super::collection;
use super::collectors::{self, Collector, Item};
use super::config::{self, NodeConfig};
use super::cursor;
use super::schema::SPEC;
use super::syntax::{
    check_collection_id, check_record_id, is_textual, normalize_date, normalize_media_type,
};
use super::writer::{self, WriteOp, WriteResult, Writer};
use crate::clock::{Clock, rfc3339_millis};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, params};
use crate::wire::digest::Sha256Hex;
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::cell::RefCell;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// The protocol name.
pub const PROTOCOL: &str = "agent-data/v1";

/// Node limits (advertised verbatim in the manifest).
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Limits {
    /// HTTP request body cap.
    pub max_body_bytes: u64,
    /// Node-wide cap per record.
    pub max_record_bytes: u64,
    /// Largest query `limit`.
    pub max_query_limit: u64,
    /// Largest changes `limit`.
    pub max_change_limit: u64,
    /// Cap on items from one collector run.
    pub max_collect_items: u64,
    /// Query `limit` when absent or null.
    pub default_query_limit: u64,
    /// Changes `limit` when absent.
    pub default_change_limit: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 1_048_576,
            max_record_bytes: 10_485_760,
            max_query_limit: 100,
            max_change_limit: 1000,
            max_collect_items: 100,
            default_query_limit: 20,
            default_change_limit: 100,
        }
    }
}

/// An open data node.
pub struct Node {
    pub(crate) dir: DataDir,
    node_id: String,
    feed_id: String,
    limits: Limits,
    file_roots: Vec<PathBuf>,
    http_allow_private_networks: bool,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) lock_timeout: Duration,
    writer: Writer,
}

impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("node_id", &self.node_id)
            .finish()
    }
}

fn not_initialized(dir: &DataDir) -> Error {
    Error::new(
        Code::NotInitialized,
        format!("no data node in {}", dir.root().display()),
    )
    .with("fix", "run `agent-task data init` first")
}

thread_local! {
    static READER: RefCell<Option<(PathBuf, Connection)>> = const { RefCell::new(None) };
}

/// What `data init` asks for.
#[derive(Debug, Clone, Default)]
pub struct InitRequest {
    /// A node id to assert (a different persisted one is `node_id_conflict`).
    pub node_id: Option<String>,
    /// File-collector roots to add to the node config.
    pub file_roots: Vec<PathBuf>,
}

/// What `data init` reports.
#[derive(Debug, Serialize)]
pub struct InitOutput {
    /// The data directory.
    pub data_dir: String,
    /// The persisted node id.
    pub node_id: String,
    /// The persisted change-feed id.
    pub feed_id: String,
    /// Whether this call created the node identity.
    pub created: bool,
    /// The config file.
    pub config_file: String,
    /// Configured file roots (canonical).
    pub file_roots: Vec<String>,
    /// Collection ids on the node.
    pub collections: Vec<String>,
}

fn new_uuid() -> Result<String> {
    let b = crate::wire::random_bytes::<16>()?;
    Ok(uuid::Builder::from_random_bytes(b)
        .into_uuid()
        .hyphenated()
        .to_string())
}

fn is_feed_id(s: &str) -> bool {
    let Some(u) = s.strip_prefix("feed_") else {
        return false;
    };
    let b = u.as_bytes();
    let hex = |r: std::ops::Range<usize>| {
        b[r].iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
    };
    b.len() == 36
        && b[8] == b'-'
        && b[13] == b'-'
        && b[18] == b'-'
        && b[23] == b'-'
        && hex(0..8)
        && hex(9..13)
        && (b'1'..=b'5').contains(&b[14])
        && hex(15..18)
        && matches!(b[19], b'8' | b'9' | b'a' | b'b')
        && hex(20..23)
        && hex(24..36)
}

fn valid_node_id(s: &str) -> bool {
    !s.is_empty() && s.len() <= 512 && !s.chars().any(char::is_control)
}

/// Creates (or re-checks) the data node in `root`: the data directory if
/// needed, `data/data.sqlite`, the node and feed ids, the config file and
/// the collections it declares plus `default`. Idempotent.
pub fn init(
    root: &Path,
    req: &InitRequest,
    clock: &dyn Clock,
    timeout: Duration,
) -> Result<InitOutput> {
    if let Some(id) = &req.node_id
        && !valid_node_id(id)
    {
        return Err(Error::new(
            Code::InvalidInput,
            "node id must be 1-512 characters without control characters",
        ));
    }
    let mut roots = Vec::new();
    for r in &req.file_roots {
        roots.push(config::canonical_root(r)?);
    }
    let (dir, lock) = DataDir::create(root, timeout)?;
    let sub = dir.ensure_subdir("data", &lock)?;
    let mut cfg = NodeConfig::load(&sub)?;
    let mut defs = vec![collection::default_definition()];
    defs.extend(cfg.collections.iter().cloned());
    let normalized = defs
        .iter()
        .map(collection::normalize)
        .collect::<Result<Vec<_>>>()?;
    let now = rfc3339_millis(clock.now());
    let mut conn = dir.open_write(&SPEC, &now, &lock)?;
    let tx = conn.transaction_with_behavior(crate::store::TransactionBehavior::Immediate)?;
    let meta = |k: &str| -> Result<Option<String>> {
        Ok(tx
            .query_row("SELECT value FROM node_meta WHERE key=?1", [k], |r| {
                r.get(0)
            })
            .optional()?)
    };
    let (node_id, created) = match (meta("node_id")?, &req.node_id) {
        (Some(have), Some(want)) if &have != want => {
            return Err(Error::new(
                Code::NodeIdConflict,
                format!("this node's id is {have:?}, not {want:?}"),
            ));
        }
        (Some(have), _) => (have, false),
        (None, want) => {
            let id = match want {
                Some(w) => w.clone(),
                None => format!("node_{}", new_uuid()?),
            };
            tx.execute(
                "INSERT INTO node_meta(key, value) VALUES ('node_id', ?1)",
                [&id],
            )?;
            (id, true)
        }
    };
    let feed_id = match meta("change_feed_id")? {
        Some(f) => f,
        None => {
            let f = format!("feed_{}", new_uuid()?);
            tx.execute(
                "INSERT INTO node_meta(key, value) VALUES ('change_feed_id', ?1)",
                [&f],
            )?;
            f
        }
    };
    if !is_feed_id(&feed_id) {
        return Err(Error::new(
            Code::InvalidFeedId,
            "the persisted change feed id is malformed",
        ));
    }
    for def in normalized {
        writer::put_collection(&tx, def, &now)?;
    }
    tx.commit()?;
    for r in roots {
        if !cfg.file_roots.contains(&r) {
            cfg.file_roots.push(r);
        }
    }
    cfg.version = 1;
    cfg.save(&sub)?;
    let collections: Vec<String> = conn
        .prepare("SELECT id FROM collections ORDER BY id")?
        .query_map([], |r| r.get(0))?
        .collect::<rusqlite::Result<_>>()?;
    drop(lock);
    Ok(InitOutput {
        data_dir: dir.root().display().to_string(),
        node_id,
        feed_id,
        created,
        config_file: sub.join(config::FILE).display().to_string(),
        file_roots: cfg
            .file_roots
            .iter()
            .map(|p| p.display().to_string())
            .collect(),
        collections,
    })
}

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
        self.bytes.len() <= super::schema::INLINE_MAX_BYTES
    }
}

/// `query` request (`POST /v1/data/query`), raw members as sent.
#[derive(Debug, Clone, Default)]
pub struct QueryRequest {
    /// `collections`.
    pub collections: Option<Value>,
    /// `text`.
    pub text: Option<Value>,
    /// `where`.
    pub r#where: Option<Value>,
    /// `limit` (`null` means the default).
    pub limit: Option<Value>,
    /// `consistency` (absent or `"local"`).
    pub consistency: Option<Value>,
}

impl QueryRequest {
    /// From a JSON body (unknown members are ignored, as in the reference).
    pub fn from_json(body: &Map<String, Value>) -> QueryRequest {
        QueryRequest {
            collections: body.get("collections").cloned(),
            text: body.get("text").cloned(),
            r#where: body.get("where").cloned(),
            limit: body.get("limit").cloned(),
            consistency: body.get("consistency").cloned(),
        }
    }
}

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

/// An exact read: the envelope and its verified bytes.
#[derive(Debug)]
pub struct RecordRead {
    /// The stored envelope.
    pub record: Value,
    /// The verified bytes.
    pub bytes: Vec<u8>,
    /// Normalised media type.
    pub media_type: String,
}

impl RecordRead {
    /// The wire form `{record, content:{encoding, data}}`. Textual content
    /// that is valid UTF-8 is returned as `utf8` byte for byte (a leading BOM
    /// is kept), anything else as padded standard base64.
    pub fn to_wire(&self) -> Value {
        let content = match std::str::from_utf8(&self.bytes) {
            Ok(s) if is_textual(&self.media_type) => json!({"encoding": "utf8", "data": s}),
            _ => json!({"encoding": "base64", "data": data_encoding::BASE64.encode(&self.bytes)}),
        };
        json!({"record": self.record, "content": content})
    }
}

fn parse_json(s: &str) -> Result<Value> {
    serde_json::from_str(s).map_err(|e| Error::internal(format!("stored JSON is corrupt: {e}")))
}

impl Node {
    /// Opens an initialised node (never creates anything).
    pub fn open(root: &Path, clock: Arc<dyn Clock>, lock_timeout: Duration) -> Result<Node> {
        let dir = DataDir::open(root)?;
        let sub = dir.root().join("data");
        let (node_id, feed_id) = {
            let conn = dir.open_read(&SPEC)?.ok_or_else(|| not_initialized(&dir))?;
            let get = |k: &str| -> Result<String> {
                conn.query_row("SELECT value FROM node_meta WHERE key=?1", [k], |r| {
                    r.get(0)
                })
                .optional()?
                .ok_or_else(|| not_initialized(&dir))
            };
            (get("node_id")?, get("change_feed_id")?)
        };
        if !is_feed_id(&feed_id) {
            return Err(Error::new(
                Code::InvalidFeedId,
                "the persisted change feed id is malformed",
            ));
        }
        let cfg = NodeConfig::load(&sub)?;
        let file_roots = cfg.canonical_roots()?;
        Ok(Node {
            dir,
            node_id,
            feed_id,
            limits: Limits::default(),
            file_roots,
            http_allow_private_networks: cfg.http_allow_private_networks,
            clock,
            lock_timeout,
            writer: Writer::Direct,
        })
    }

    /// Switches writes to a group-commit writer thread (used by `serve`).
    pub fn start_group_commit(&mut self) -> Result<()> {
        self.writer = Writer::start_group(self.dir.clone(), self.lock_timeout, self.clock.clone())?;
        Ok(())
    }

    /// One write through the node's writer (for the node's other modules,
    /// such as replica import).
    pub(crate) fn writer_write(&self, op: WriteOp) -> Result<WriteResult> {
        self.writer.write(self, op)
    }

    /// The persisted node id.
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// The persisted change-feed id.
    pub fn feed_id(&self) -> &str {
        &self.feed_id
    }

    /// The node limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The data directory.
    pub fn data_dir(&self) -> &DataDir {
        &self.dir
    }

    fn now(&self) -> String {
        rfc3339_millis(self.clock.now())
    }

    /// Runs `f` with this thread's read-only connection.
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let path = self.dir.root().join(SPEC.file);
        READER.with(|cell| {
            let mut slot = cell.borrow_mut();
            let fresh = !matches!(&*slot, Some((p, _)) if *p == path);
            if fresh {
                let conn = self
                    .dir
                    .open_read(&SPEC)?
                    .ok_or_else(|| not_initialized(&self.dir))?;
                *slot = Some((path.clone(), conn));
            }
            match &*slot {
                Some((_, c)) => f(c),
                None => Err(Error::internal("reader connection missing")),
            }
        })
    }

    /// The capability manifest; `origin` is the HTTP origin the client used.
    pub fn manifest(&self, origin: Option<&str>) -> Value {
        let mut m = Map::new();
        m.insert("protocol".into(), PROTOCOL.into());
        m.insert("node_id".into(), self.node_id.clone().into());
        m.insert("generated_at".into(), self.now().into());
        if let Some(o) = origin {
            m.insert("base_url".into(), o.into());
        }
        m.insert(
            "capabilities".into(),
            json!({
                "consistency": ["local"],
                "immutable_records": true, "content_addressed_blobs": true,
                "full_text_search": true, "opaque_change_cursors": true, "tombstones": true,
                "peer_sync": false, "signature_verification": false, "schema_validation": false,
                "http_data_auth": "dedicated_node_bearer",
                "policy_enforcement": {"max_record_bytes": true, "allowed_media_types": true,
                    "visibility": false, "ttl": false, "allowed_dids": false, "retention": false}
            }),
        );
        m.insert(
            "collectors".into(),
            Value::Array(
                collectors::registry()
                    .iter()
                    .map(|c| c.describe())
                    .collect(),
            ),
        );
        let o = origin.unwrap_or("");
        m.insert(
            "endpoints".into(),
            json!({
                "manifest": format!("{o}/v1/data/manifest"),
                "collections": format!("{o}/v1/data/collections"),
                "collect": format!("{o}/v1/data/collect"),
                "query": format!("{o}/v1/data/query"),
                "record": format!("{o}/v1/data/records/{{id}}"),
                "changes": format!("{o}/v1/data/changes"),
                "tombstone": format!("{o}/v1/data/records/{{id}}/tombstone"),
            }),
        );
        m.insert("limits".into(), json!(self.limits));
        Value::Object(m)
    }

    /// Every collection, ordered by id.
    pub fn collections(&self) -> Result<Value> {
        let list = self.read(|c| {
            let mut st = c.prepare_cached("SELECT definition_json FROM collections ORDER BY id")?;
            let rows = st.query_map([], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for r in rows {
                out.push(parse_json(&r?)?);
            }
            Ok(out)
        })?;
        Ok(json!({"collections": list}))
    }

    /// Asserts `default` and every collection of the node config (used
    /// when `serve` starts; a conflict stops it).
    pub fn assert_config_collections(&self) -> Result<()> {
        let cfg = NodeConfig::load(&self.dir.root().join("data"))?;
        let mut defs = vec![collection::default_definition()];
        defs.extend(cfg.collections);
        for d in &defs {
            self.create_collection(d)?;
        }
        Ok(())
    }

    /// Defines a collection: idempotent for an identical definition,
    /// `collection_conflict` for a different one.
    pub fn create_collection(&self, def: &Value) -> Result<Value> {
        let normalized = collection::normalize(def)?;
        match self
            .writer
            .write(self, WriteOp::PutCollection(normalized, self.now()))?
        {
            WriteResult::Collection(c, created) => Ok(json!({"collection": c, "created": created})),
            _ => Err(Error::internal("unexpected writer result")),
        }
    }

    fn collection(&self, conn: &Connection, id: &str) -> Result<Map<String, Value>> {
        let def: Option<String> = conn
            .prepare_cached("SELECT definition_json FROM collections WHERE id=?1")?
            .query_row([id], |r| r.get(0))
            .optional()?;
        match def {
            Some(d) => match parse_json(&d)? {
                Value::Object(m) => Ok(m),
                _ => Err(Error::internal("stored collection is not an object")),
            },
            None => Err(Error::new(
                Code::CollectionNotFound,
                format!("Collection {id} was not found"),
            )),
        }
    }

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

    /// Exact read: the envelope and its bytes, verified against the
    /// envelope's size and SHA-256 before anything is returned.
    pub fn read_record(&self, record_id: &str) -> Result<RecordRead> {
        check_record_id(record_id)?;
        type Row = (String, String, i64, bool, Option<Vec<u8>>);
        let row: Option<Row> = self.read(|c| {
            Ok(c.prepare_cached(
                "SELECT r.envelope_json, r.content_sha256, r.content_size, \
                 EXISTS(SELECT 1 FROM tombstones t WHERE t.record_id = r.id), \
                 (SELECT b.bytes FROM inline_blobs b WHERE b.sha256 = r.content_sha256) \
                 FROM records r WHERE r.id = ?1",
            )?
            .query_row([record_id], |r| {
                Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
            })
            .optional()?)
        })?;
        let Some((env, sha, size, tombstoned, inline)) = row else {
            return Err(Error::new(
                Code::RecordNotFound,
                format!("Record {record_id} was not found"),
            ));
        };
        if tombstoned {
            return Err(Error::new(
                Code::RecordTombstoned,
                format!("Record {record_id} has been tombstoned"),
            ));
        }
        let record = parse_json(&env)?;
        let digest = Sha256Hex::parse(&sha).map_err(|_| {
            Error::new(
                Code::RecordIntegrityError,
                "stored content digest is malformed",
            )
        })?;
        let size = u64::try_from(size).map_err(|_| {
            Error::new(
                Code::RecordIntegrityError,
                "stored content size is negative",
            )
        })?;
        let cas = self.dir.cas();
        let from_cas = match inline {
            Some(b) if Sha256Hex::digest(&b) == digest => Ok(b),
            Some(_) => {
                return Err(Error::new(
                    Code::BlobIntegrityError,
                    format!("The blob of record {record_id} does not match its reference"),
                ));
            }
            None if size <= super::schema::INLINE_MAX_BYTES as u64
                && !cas.object_path(&digest).exists() =>
            {
                return Err(Error::new(
                    Code::BlobNotFound,
                    format!("The blob of record {record_id} was not found"),
                ));
            }
            None => cas.read(&digest, None, self.limits.max_record_bytes.max(size)),
        };
        let bytes = match from_cas {
            Ok(b) => b,
            Err(e) if e.code() == Code::IntegrityError && !cas.object_path(&digest).exists() => {
                return Err(Error::new(
                    Code::BlobNotFound,
                    format!("The blob of record {record_id} was not found"),
                ));
            }
            Err(e) if e.code() == Code::IntegrityError => {
                return Err(Error::new(
                    Code::BlobIntegrityError,
                    format!("The blob of record {record_id} does not match its reference"),
                ));
            }
            Err(e) => return Err(e),
        };
        let env_sha = record.pointer("/content/sha256").and_then(Value::as_str);
        let env_size = record.pointer("/content/size").and_then(Value::as_u64);
        if bytes.len() as u64 != size
            || env_size != Some(size)
            || env_sha != Some(digest.as_str())
            || Sha256Hex::digest(&bytes) != digest
        {
            return Err(Error::new(
                Code::RecordIntegrityError,
                format!("The bytes of record {record_id} do not match its envelope"),
            ));
        }
        let media_type = record
            .pointer("/content/media_type")
            .and_then(Value::as_str)
            .unwrap_or("application/octet-stream")
            .to_owned();
        Ok(RecordRead {
            record,
            bytes,
            media_type,
        })
    }

    /// `query`.
    pub fn query(&self, req: &QueryRequest) -> Result<Value> {
        match &req.consistency {
            None => {}
            Some(Value::String(s)) if s == "local" => {}
            Some(_) => {
                return Err(Error::new(
                    Code::UnsupportedConsistency,
                    "Only local consistency is available",
                ));
            }
        }
        let collections: Option<Vec<String>> = match &req.collections {
            None => None,
            Some(Value::Array(a)) => {
                let mut ids: Vec<String> = Vec::with_capacity(a.len());
                for v in a {
                    let s = v.as_str().unwrap_or("");
                    check_collection_id(s)?;
                    if !ids.iter().any(|x| x == s) {
                        ids.push(s.to_owned());
                    }
                }
                self.read(|c| {
                    for id in &ids {
                        self.collection(c, id)?;
                    }
                    Ok(())
                })?;
                Some(ids)
            }
            Some(_) => {
                return Err(Error::new(
                    Code::InvalidRequest,
                    "collections must be an array",
                ));
            }
        };
        let limit = match &req.limit {
            None | Some(Value::Null) => self.limits.default_query_limit,
            Some(v) => {
                let n = collection::positive_safe_integer(v).ok_or_else(|| {
                    Error::new(Code::InvalidNumber, "limit must be a positive integer")
                })?;
                if n > self.limits.max_query_limit {
                    return Err(Error::new(
                        Code::LimitExceeded,
                        format!("limit cannot exceed {}", self.limits.max_query_limit),
                    ));
                }
                n
            }
        };
        let filter = clone_object("where", req.r#where.as_ref())?;
        let text = match &req.text {
            None => None,
            Some(Value::String(s)) => Some(s.clone()),
            _ => return Err(Error::new(Code::InvalidRequest, "text must be a string")),
        };
        let empty = json!({"records": [], "consistency": "local"});
        if collections.as_ref().is_some_and(Vec::is_empty) {
            return Ok(empty);
        }
        let text_mode = text.as_deref().is_some_and(|t| !t.trim().is_empty());
        let match_expr = match (&text, text_mode) {
            (Some(t), true) => match super::syntax::fts_match(t)? {
                Some(m) => Some(m),
                None => return Ok(empty),
            },
            _ => None,
        };
        let has_where = !filter.is_empty();
        let filter = Value::Object(filter);
        let limit = limit as usize;
        let batch = if has_where {
            (4 * limit).clamp(100, 500)
        } else {
            limit
        };
        let coll_list = collections.unwrap_or_default();
        let hits = self.read(|c| {
            let mut hits: Vec<Value> = Vec::new();
            let mut seen = std::collections::HashSet::new();
            let mut offset = 0usize;
            let placeholders = (0..coll_list.len())
                .map(|i| format!("?{}", i + 4))
                .collect::<Vec<_>>()
                .join(",");
            loop {
                let mut params: Vec<rusqlite::types::Value> = Vec::new();
                let candidates: Vec<(String, Option<f64>)> = if let Some(m) = &match_expr {
                    let sql = format!(
                        "SELECT record_id, bm25(record_fts) AS rank FROM record_fts \
                         WHERE record_fts MATCH ?1 {} ORDER BY rank LIMIT ?2 OFFSET ?3",
                        if coll_list.is_empty() {
                            String::new()
                        } else {
                            format!("AND collection_id IN ({placeholders})")
                        }
                    );
                    params.push(m.clone().into());
                    params.push((batch as i64).into());
                    params.push((offset as i64).into());
                    params.extend(coll_list.iter().map(|s| s.clone().into()));
                    let mut st = c.prepare_cached(&sql)?;
                    let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                        Ok((r.get::<_, String>(0)?, Some(r.get::<_, f64>(1)?)))
                    })?;
                    rows.collect::<rusqlite::Result<_>>()?
                } else {
                    let sql = format!(
                        "SELECT r.id FROM records r WHERE ?1 IS NULL {} \
                         AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.record_id = r.id) \
                         ORDER BY r.rid DESC LIMIT ?2 OFFSET ?3",
                        if coll_list.is_empty() {
                            String::new()
                        } else {
                            format!("AND r.collection_id IN ({placeholders})")
                        }
                    );
                    params.push(rusqlite::types::Value::Null);
                    params.push((batch as i64).into());
                    params.push((offset as i64).into());
                    params.extend(coll_list.iter().map(|s| s.clone().into()));
                    let mut st = c.prepare_cached(&sql)?;
                    let rows = st.query_map(rusqlite::params_from_iter(params.iter()), |r| {
                        Ok((r.get::<_, String>(0)?, None))
                    })?;
                    rows.collect::<rusqlite::Result<_>>()?
                };
                let n = candidates.len();
                let mut new = 0usize;
                for (id, rank) in candidates {
                    if !seen.insert(id.clone()) {
                        continue;
                    }
                    new += 1;
                    let env: Option<String> = c
                        .prepare_cached(
                            "SELECT r.envelope_json FROM records r WHERE r.id = ?1 \
                             AND NOT EXISTS (SELECT 1 FROM tombstones t WHERE t.record_id = r.id)",
                        )?
                        .query_row([&id], |r| r.get(0))
                        .optional()?;
                    let Some(env) = env else { continue };
                    let env = parse_json(&env)?;
                    if has_where && !subset_match(&filter, Some(&env)) {
                        continue;
                    }
                    let mut hit = Map::new();
                    hit.insert("record".into(), env);
                    if let Some(rank) = rank {
                        let score = (-rank).max(0.0);
                        hit.insert(
                            "score".into(),
                            serde_json::Number::from_f64(score)
                                .map(Value::Number)
                                .unwrap_or(Value::Null),
                        );
                    }
                    hits.push(Value::Object(hit));
                    if hits.len() >= limit {
                        break;
                    }
                }
                if hits.len() >= limit || n < batch || new == 0 {
                    break;
                }
                offset += batch;
            }
            hits.truncate(limit);
            Ok(hits)
        })?;
        Ok(json!({"records": hits, "consistency": "local"}))
    }

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
                "SELECT sequence, type, collection_id, record_id, at, payload_json FROM changes \
                 WHERE sequence > ?1 AND (?2 IS NULL OR collection_id = ?2) \
                 ORDER BY sequence LIMIT ?3",
            )?;
            let rows = st.query_map(params![after, filter, (limit + 1) as i64], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })?;
            Ok(rows.collect::<rusqlite::Result<Vec<_>>>()?)
        })?;
        let has_more = rows.len() as u64 > limit;
        let mut last = after;
        let mut changes = Vec::new();
        for (seq, ty, coll, rec, at, payload) in rows.into_iter().take(limit as usize) {
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
        Ok(json!({
            "changes": changes,
            "cursor": cursor::encode(&self.feed_id, filter, last),
            "has_more": has_more,
        }))
    }

    /// `tombstone`: idempotent; the first tombstone wins.
    pub fn tombstone(&self, req: &TombstoneRequest) -> Result<Value> {
        check_record_id(&req.record_id)?;
        let reason = req.reason.clone().filter(|r| !r.is_empty());
        if reason.as_deref().is_some_and(|r| utf16_len(r) > 1000) {
            return Err(Error::new(
                Code::InvalidRequest,
                "reason must be at most 1000 characters",
            ));
        }
        match self.writer.write(
            self,
            WriteOp::Tombstone {
                record_id: req.record_id.clone(),
                reason,
                now: self.now(),
            },
        )? {
            WriteResult::Tombstone(t) => Ok(json!({
                "record_id": req.record_id, "tombstoned": true, "tombstone": t
            })),
            _ => Err(Error::internal("unexpected writer result")),
        }
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
        let doc: Value =
            serde_json::from_str(include_str!("../../../fixtures/agent-data-record-ids.json"))
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
    fn feed_ids() {
        assert!(is_feed_id("feed_123e4567-e89b-42d3-a456-426614174000"));
        assert!(!is_feed_id("feed_123e4567-e89b-62d3-a456-426614174000"));
        let f = format!("feed_{}", new_uuid().expect("uuid"));
        assert!(is_feed_id(&f), "{f}");
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
