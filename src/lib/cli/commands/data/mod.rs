//! `agent-task data …`: the agent-data/v1 local node.

mod changes;
mod collect;
mod collection;
pub mod doctor;
mod get;
mod init;
mod manifest;
mod query;
mod tombstone;

use crate::cli::commands::Reply;
use crate::cli::ctx::Ctx;
use crate::data::Node;
use crate::error::Result;
use clap::Subcommand;
use std::sync::Arc;

/// `data` subcommands.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Create (or re-check) the data node: ids, database, config, `default` collection.
    Init(init::InitArgs),
    /// Print the capability manifest.
    Manifest(manifest::ManifestArgs),
    /// Define or list collections.
    #[command(subcommand)]
    Collection(collection::CollectionCommand),
    /// Collect one record (or many with --jsonl).
    Collect(collect::CollectArgs),
    /// Query records (full text and/or a `where` subset match).
    Query(query::QueryArgs),
    /// Exact read of one record and its verified bytes.
    Get(get::GetArgs),
    /// Read one page of the change feed.
    Changes(changes::ChangesArgs),
    /// Tombstone a record (idempotent; the first tombstone wins).
    Tombstone(tombstone::TombstoneArgs),
    /// Run the agent-data/v1-slice1-http conformance profile against a node.
    Doctor(doctor::DoctorArgs),
}

/// Runs a `data` subcommand.
pub fn dispatch(ctx: &Ctx, cmd: DataCommand) -> Result<Reply> {
    match cmd {
        DataCommand::Init(a) => init::run(ctx, &a).map(Reply::from),
        DataCommand::Manifest(a) => manifest::run(ctx, &a).map(Reply::from),
        DataCommand::Collection(c) => collection::run(ctx, c).map(Reply::from),
        DataCommand::Collect(a) => collect::run(ctx, &a),
        DataCommand::Query(a) => query::run(ctx, &a).map(Reply::from),
        DataCommand::Get(a) => get::run(ctx, &a).map(Reply::from),
        DataCommand::Changes(a) => changes::run(ctx, &a).map(Reply::from),
        DataCommand::Tombstone(a) => tombstone::run(ctx, &a).map(Reply::from),
        DataCommand::Doctor(a) => doctor::doctor(ctx, &a),
    }
}

/// Opens the node of the context's data directory.
pub(crate) fn open_node(ctx: &Ctx) -> Result<Node> {
    Node::open(
        ctx.data_dir()?,
        Arc::from(crate::clock::process_clock()?),
        ctx.lock_timeout,
    )
}

/// Parses a JSON argument that must be an object.
pub(crate) fn json_object(
    flag: &str,
    s: &str,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    use crate::error::{Code, Error};
    match serde_json::from_str::<serde_json::Value>(s) {
        Ok(serde_json::Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::new(
            Code::InvalidJson,
            format!("{flag} must be a JSON object"),
        )),
        Err(e) => Err(Error::new(
            Code::InvalidJson,
            format!("{flag} is not valid JSON: {e}"),
        )),
    }
}
