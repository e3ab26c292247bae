//! A record of the data node as it is stored: the protocol name, a
//! record's id, and the prepared form (envelope, bytes, index document)
//! every write path stores.

use crate::error::Result;
use crate::wire::digest::Sha256Hex;
use serde_json::{Map, Value};

use super::canon::canonical_json;

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
