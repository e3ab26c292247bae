//! The `agent-data/v1` local node (spec/agent-data-protocol.md,
//! spec/agent-data-facts.md): `DATA_DIR/data/data.sqlite` plus content bytes
//! in the data directory's CAS.

pub mod beneath;
pub mod canon;
pub mod collection;
pub mod collectors;
pub mod config;
pub mod cursor;
pub mod fts;
pub mod key;
pub mod node;
pub mod record;
pub mod replica;
pub mod schema;
pub mod syntax;
pub mod writer;

pub use node::{
    BulkLines, BulkProgress, BulkRequest, BulkSummary, ChangesRequest, CollectRequest,
    CollectResponse, InitOutput, InitRequest, Limits, Node, QueryRequest, RecordRead,
    TombstoneRequest,
};
/// The data database's spec (its file and migrations), for the faces that
/// list a data directory's databases (`init`, `info`).
pub use schema::SPEC;
