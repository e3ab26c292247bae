//! The data node: opening, identity, the manifest and collections. Each
//! other concern has its own file: [`init`] (creating a node), [`collect`]
//! (collectors, record ids, index documents, bulk batches), [`read`] (exact
//! reads), [`query`] (full text and `where`) and [`changes`] (the change
//! feed and tombstones). Every face (CLI, HTTP) calls these functions with
//! the same request structs.

mod bulk;
mod changes;
mod collect;
mod init;
mod query;
mod read;
mod replica;
pub(crate) mod write;

pub use super::fts::index_document;
pub use super::record::{PROTOCOL, Prepared, record_id};
pub use bulk::{
    BulkLines, BulkProgress, BulkRequest, BulkSummary, DEFAULT_FLUSH, DEFAULT_FLUSH_MS, LineError,
};
pub use changes::{ChangesRequest, TombstoneRequest};
#[cfg(test)]
pub(crate) use collect::check_supersedes;
pub use collect::{CollectRequest, CollectResponse};
pub use init::{InitOutput, InitRequest, init, is_feed_id};
pub use query::QueryRequest;
#[cfg(test)]
pub(crate) use query::Strategy;
pub use read::RecordRead;

/// A fresh node at `root` on a clock fixed at the epoch (unit tests).
#[cfg(test)]
pub(crate) fn test_node(root: &std::path::Path) -> Node {
    let clock = crate::clock::FixedClock(jiff::Timestamp::UNIX_EPOCH);
    let t = std::time::Duration::from_secs(5);
    init(root, &InitRequest::default(), &clock, t).expect("init");
    Node::open(root, std::sync::Arc::new(clock), t).expect("open")
}

use super::collection;
use super::collectors;
use super::config::NodeConfig;
use super::schema::SPEC;
use crate::clock::{Clock, rfc3339_millis};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use write::{WriteOp, WriteResult, Writer};

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
    /// Collection definitions read so far. A definition never changes once
    /// stored (an identical one is "existing", a different one a conflict)
    /// and is never deleted, so only found ones are kept, at most
    /// [`COLLECTION_CACHE`] of them.
    collections: Mutex<HashMap<String, Arc<Map<String, Value>>>>,
}

/// Most collection definitions a node keeps parsed (past it the cache
/// starts over).
const COLLECTION_CACHE: usize = 256;

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

/// Where a preparation reads from when it must: a connection at hand, or
/// one opened on first use.
pub(crate) trait ReadSource {
    /// The read connection.
    fn conn(&self) -> Result<&Connection>;
}

impl ReadSource for Connection {
    fn conn(&self) -> Result<&Connection> {
        Ok(self)
    }
}

/// A node read connection (the thread's kept one under `serve`, as
/// [`Node::read`] takes it) opened on the first [`ReadSource::conn`].
pub(crate) struct LazyRead<'a> {
    node: &'a Node,
    conn: std::cell::OnceCell<crate::store::ReadConn>,
}

impl ReadSource for LazyRead<'_> {
    fn conn(&self) -> Result<&Connection> {
        if let Some(c) = self.conn.get() {
            return Ok(c);
        }
        let c = self
            .node
            .dir
            .open_read_cached(&SPEC)?
            .ok_or_else(|| not_initialized(&self.node.dir))?;
        if c.is_fresh() {
            // As in `Node::read`: another connection's `data_version`s.
            query::forget_vocab();
        }
        Ok(self.conn.get_or_init(|| c))
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
            collections: Mutex::new(HashMap::new()),
        })
    }

    /// Switches writes to a group-commit writer thread (used by `serve`).
    pub fn start_group_commit(&mut self) -> Result<()> {
        self.start_group_commit_with(write::QUEUE)
    }

    /// [`Node::start_group_commit`] with a queue of at most `queue` writes.
    pub(crate) fn start_group_commit_with(&mut self, queue: usize) -> Result<()> {
        self.writer = Writer::start_group(self, queue)?;
        Ok(())
    }

    /// One write through the node's writer (for the node's other modules,
    /// such as replica import).
    pub(crate) fn writer_write(&self, op: WriteOp) -> Result<WriteResult> {
        self.writer.write(self, op)
    }

    /// One write queued to the node's writer without waiting for it.
    pub(crate) fn writer_deferred(&self, op: WriteOp) -> crate::store::Deferred<WriteResult> {
        self.writer.write_deferred(self, op)
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

    /// Runs `f` with a read-only connection: under `serve`, this
    /// thread's kept one (`store::readcache`: checked by file identity and
    /// schema cookie before it serves).
    pub(crate) fn read<T>(&self, f: impl FnOnce(&Connection) -> Result<T>) -> Result<T> {
        let conn = self
            .dir
            .open_read_cached(&SPEC)?
            .ok_or_else(|| not_initialized(&self.dir))?;
        if conn.is_fresh() {
            // Another connection: its `data_version`s are not the ones
            // the thread's cached term counts were read at.
            query::forget_vocab();
        }
        f(&conn)
    }

    /// Runs `f` with a read connection opened only if `f` asks for one
    /// ([`LazyRead`]): a collect whose collection is cached and that
    /// supersedes nothing reads nothing.
    pub(crate) fn read_lazy<T>(&self, f: impl FnOnce(&LazyRead<'_>) -> Result<T>) -> Result<T> {
        f(&LazyRead {
            node: self,
            conn: std::cell::OnceCell::new(),
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

    /// A collection's stored definition (`collection_not_found` if none).
    fn collection(&self, conn: &Connection, id: &str) -> Result<Arc<Map<String, Value>>> {
        if let Some(c) = self.cached_collection(id) {
            return Ok(c);
        }
        let c = Arc::new(self.read_collection(conn, id)?);
        if let Ok(mut cache) = self.collections.lock() {
            if cache.len() >= COLLECTION_CACHE {
                cache.clear();
            }
            cache.insert(id.to_owned(), c.clone());
        }
        Ok(c)
    }

    /// [`Node::collection`], reading through `src` only when the
    /// definition is not cached.
    fn collection_via(&self, src: &dyn ReadSource, id: &str) -> Result<Arc<Map<String, Value>>> {
        if let Some(c) = self.cached_collection(id) {
            return Ok(c);
        }
        self.collection(src.conn()?, id)
    }

    fn cached_collection(&self, id: &str) -> Option<Arc<Map<String, Value>>> {
        self.collections.lock().ok()?.get(id).cloned()
    }

    fn read_collection(&self, conn: &Connection, id: &str) -> Result<Map<String, Value>> {
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
}
