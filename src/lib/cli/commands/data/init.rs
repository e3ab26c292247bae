//! `data init`.

use crate::cli::commands::to_value;
use crate::cli::ctx::Ctx;
use crate::data::node::{InitRequest, init};
use crate::error::Result;
use serde_json::Value;
use std::path::PathBuf;

/// Arguments of `data init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {
    /// Node id to assert (default on first init: `node_` + a random UUID).
    #[arg(long, value_name = "ID")]
    pub node_id: Option<String>,
    /// A directory the `file` collector may read under (repeatable; added
    /// to the node config).
    #[arg(long = "file-root", value_name = "DIR")]
    pub file_roots: Vec<PathBuf>,
}

pub(super) fn run(ctx: &Ctx, a: &InitArgs) -> Result<Value> {
    let req = InitRequest {
        node_id: a.node_id.clone(),
        file_roots: a.file_roots.clone(),
    };
    to_value(&init(
        ctx.data_dir()?,
        &req,
        ctx.clock.as_ref(),
        ctx.lock_timeout,
    )?)
}
