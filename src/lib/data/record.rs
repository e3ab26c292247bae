//! A record of the data node as it is stored: the protocol name, a
//! record's id, its id core and envelope (built as canonical text from
//! their fields: [`Fields`]; a pulled replica's checked core and local
//! envelope), and the prepared form (envelope, bytes, index document)
//! every write path stores.

use crate::error::Result;
use crate::wire::digest::Sha256Hex;
use serde_json::{Map, Value};

use super::canon::{canonical_json, push_json_string};

/// The protocol name.
pub const PROTOCOL: &str = "agent-data/v1";

/// An item ready to store: its envelope, bytes and index document.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// Record id.
    pub id: String,
    /// Collection id.
    pub collection_id: String,
    /// The envelope as a map: set by replica import, which checks its
    /// members; empty for a collected record, whose writer and answer
    /// need only its canonical text.
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
    /// The record it supersedes, if any.
    pub supersedes_id: Option<String>,
}

impl Prepared {
    /// Whether the content is stored inline with the record row.
    pub fn is_inline(&self) -> bool {
        self.bytes.len() <= super::schema::INLINE_MAX_BYTES
    }
}

/// `rec_` + SHA-256 of the canonical JSON of an id core.
pub fn record_id(core: &Value) -> Result<String> {
    Ok(format!(
        "rec_{}",
        Sha256Hex::digest(canonical_json(core)?.as_bytes())
    ))
}

/// The id core of a pulled replica's envelope `env` (spec/agent-data-facts.md
/// §3), from its checked members: its collection, `source` object, the
/// content's digest, size and media type, and its schema version.
pub fn replica_core(
    env: &Map<String, Value>,
    collection_id: &str,
    source: &Map<String, Value>,
    sha: &Sha256Hex,
    size: u64,
    media_type: &str,
    schema_version: &str,
) -> Value {
    let mut content = Map::new();
    content.insert("sha256".into(), sha.as_str().into());
    content.insert("size".into(), size.into());
    content.insert("media_type".into(), media_type.into());
    let mut core = Map::new();
    core.insert("protocol".into(), PROTOCOL.into());
    core.insert("collection_id".into(), collection_id.into());
    core.insert("source".into(), Value::Object(source.clone()));
    core.insert("content".into(), Value::Object(content));
    core.insert("schema_version".into(), schema_version.into());
    for k in ["key", "version", "supersedes_id"] {
        if let Some(v) = env.get(k) {
            core.insert(k.into(), v.clone());
        }
    }
    Value::Object(core)
}

/// A pulled replica's envelope as this node stores it: the envelope with
/// the local `blob_ref` of its content.
pub fn local_envelope(env: &Map<String, Value>, sha: &Sha256Hex) -> Map<String, Value> {
    let mut envelope = env.clone();
    if let Some(Value::Object(c)) = envelope.get_mut("content") {
        c.insert("blob_ref".into(), format!("sha256:{sha}").into());
    }
    envelope
}

/// The identity and content fields of a record, from which its id core
/// and envelope are built.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields<'a> {
    pub(crate) collection_id: &'a str,
    pub(crate) collector_id: &'a str,
    pub(crate) uri: &'a str,
    pub(crate) external_id: Option<&'a str>,
    pub(crate) sha256: &'a str,
    pub(crate) size: u64,
    pub(crate) media_type: &'a str,
    pub(crate) schema_version: &'a str,
    pub(crate) key: Option<&'a str>,
    pub(crate) version: Option<&'a str>,
    pub(crate) supersedes_id: Option<&'a str>,
}

/// The envelope members outside the id core (each already canonical
/// text where it is JSON).
pub(crate) struct Extra<'a> {
    pub(crate) id: &'a str,
    pub(crate) ingested_at: &'a str,
    pub(crate) metadata: &'a str,
    pub(crate) observed_at: Option<&'a str>,
    pub(crate) provenance: Option<&'a str>,
    pub(crate) signature: Option<&'a str>,
}

/// Writes canonical JSON objects member by member; the caller supplies the
/// members in canonical (UTF-16 code unit) key order. Every key this file
/// writes is ASCII, where that order is byte order.
struct Obj<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    fn open(out: &'o mut Vec<u8>) -> Obj<'o> {
        out.push(b'{');
        Obj { out, first: true }
    }
    fn key(&mut self, k: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        push_json_string(self.out, k);
        self.out.push(b':');
        self.out
    }
    fn str(&mut self, k: &str, v: &str) {
        let out = self.key(k);
        push_json_string(out, v);
    }
    fn opt_str(&mut self, k: &str, v: Option<&str>) {
        if let Some(v) = v {
            self.str(k, v);
        }
    }
    fn raw(&mut self, k: &str, json: &str) {
        self.key(k).extend_from_slice(json.as_bytes());
    }
    fn close(self) {
        self.out.push(b'}');
    }
}

impl Fields<'_> {
    fn content(&self, out: &mut Vec<u8>, blob_ref: bool) {
        let mut o = Obj::open(out);
        if blob_ref {
            o.str("blob_ref", &format!("sha256:{}", self.sha256));
        }
        o.str("media_type", self.media_type);
        o.str("sha256", self.sha256);
        // A size is an integer below 2^53: its ECMAScript text is its digits.
        o.raw("size", &self.size.to_string());
        o.close();
    }

    fn source(&self, out: &mut Vec<u8>) {
        let mut o = Obj::open(out);
        o.str("collector_id", self.collector_id);
        o.opt_str("external_id", self.external_id);
        o.str("uri", self.uri);
        o.close();
    }

    /// The canonical JSON of the id core (spec/agent-data-facts.md §3).
    pub(crate) fn core_text(&self) -> String {
        let mut out = Vec::with_capacity(320);
        let mut o = Obj::open(&mut out);
        o.str("collection_id", self.collection_id);
        self.content(o.key("content"), false);
        o.opt_str("key", self.key);
        o.str("protocol", PROTOCOL);
        o.str("schema_version", self.schema_version);
        self.source(o.key("source"));
        o.opt_str("supersedes_id", self.supersedes_id);
        o.opt_str("version", self.version);
        o.close();
        utf8(out)
    }

    /// The canonical JSON of the stored envelope.
    pub(crate) fn envelope_text(&self, x: &Extra<'_>) -> String {
        let mut out = Vec::with_capacity(640 + x.metadata.len());
        let mut o = Obj::open(&mut out);
        o.str("collection_id", self.collection_id);
        self.content(o.key("content"), true);
        o.str("id", x.id);
        o.str("ingested_at", x.ingested_at);
        o.opt_str("key", self.key);
        o.raw("metadata", x.metadata);
        o.opt_str("observed_at", x.observed_at);
        o.str("protocol", PROTOCOL);
        if let Some(p) = x.provenance {
            o.raw("provenance", p);
        }
        o.str("schema_version", self.schema_version);
        if let Some(s) = x.signature {
            o.raw("signature", s);
        }
        self.source(o.key("source"));
        o.opt_str("supersedes_id", self.supersedes_id);
        o.opt_str("version", self.version);
        o.close();
        utf8(out)
    }
}

/// Bytes this file assembled from `&str` pieces and JSON text.
fn utf8(out: Vec<u8>) -> String {
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
