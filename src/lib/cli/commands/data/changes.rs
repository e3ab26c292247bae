//! `data changes`.

use crate::cli::ctx::Ctx;
use crate::data::ChangesRequest;
use crate::error::Result;
use serde_json::Value;

/// Arguments of `data changes`.
#[derive(Debug, clap::Args)]
pub struct ChangesArgs {
    /// Only changes of this collection.
    #[arg(long)]
    pub collection: Option<String>,
    /// Continue after this cursor.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Page size (default 100, at most 1000).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
}

pub(super) fn run(ctx: &Ctx, a: &ChangesArgs) -> Result<Value> {
    let node = super::open_node(ctx)?;
    node.changes(&ChangesRequest {
        collection_id: a.collection.clone(),
        cursor: a.cursor.clone(),
        limit: a.limit,
    })
}
