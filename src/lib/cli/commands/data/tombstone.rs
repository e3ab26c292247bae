//! `data tombstone`.

use crate::cli::ctx::Ctx;
use crate::data::TombstoneRequest;
use crate::error::Result;
use serde_json::Value;

/// Arguments of `data tombstone`.
#[derive(Debug, clap::Args)]
pub struct TombstoneArgs {
    /// Record id.
    pub id: String,
    /// Why (at most 1000 UTF-16 units; empty means none).
    #[arg(long)]
    pub reason: Option<String>,
}

pub(super) fn run(ctx: &Ctx, a: &TombstoneArgs) -> Result<Value> {
    let node = super::open_node(ctx)?;
    node.tombstone(&TombstoneRequest {
        record_id: a.id.clone(),
        reason: a.reason.clone(),
    })
}
