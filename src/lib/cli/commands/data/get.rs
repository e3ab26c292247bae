//! `data get`.

use crate::cli::ctx::Ctx;
use crate::error::Result;
use serde_json::Value;
use std::path::PathBuf;

/// Arguments of `data get`.
#[derive(Debug, clap::Args)]
pub struct GetArgs {
    /// Record id (`rec_` + 64 hex).
    pub id: String,
    /// Write the verified bytes to this file (0600) instead of embedding
    /// them in the output.
    #[arg(long, value_name = "F")]
    pub content_out: Option<PathBuf>,
}

pub(super) fn run(ctx: &Ctx, a: &GetArgs) -> Result<Value> {
    let node = super::open_node(ctx)?;
    let read = node.read_record(&a.id)?;
    match &a.content_out {
        None => Ok(read.to_wire()),
        Some(p) => {
            crate::store::private_fs::write_atomic(
                &std::path::absolute(p).map_err(|e| crate::error::Error::io("resolve", p, e))?,
                &read.bytes,
            )?;
            Ok(serde_json::to_value(Written {
                content_out: p.display().to_string(),
                record: &read.record,
                size: read.bytes.len(),
            })?)
        }
    }
}

/// `data get --content-out`'s output: the record, and where its bytes went
/// (a JSON object: fields in key order).
#[derive(serde::Serialize)]
struct Written<'a> {
    content_out: String,
    record: &'a Value,
    size: usize,
}
