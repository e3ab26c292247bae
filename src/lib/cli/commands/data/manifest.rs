//! `data manifest`.

use crate::cli::ctx::Ctx;
use crate::error::Result;
use serde_json::Value;

/// Arguments of `data manifest`.
#[derive(Debug, clap::Args)]
pub struct ManifestArgs {
    /// Origin to build absolute endpoint URLs on (for example
    /// `http://127.0.0.1:7742`); without it the endpoints are paths.
    #[arg(long, value_name = "ORIGIN")]
    pub origin: Option<String>,
}

pub(super) fn run(ctx: &Ctx, a: &ManifestArgs) -> Result<Value> {
    let node = super::open_node(ctx)?;
    let origin = a.origin.as_deref().map(|o| o.trim_end_matches('/'));
    let mut m = node.manifest(origin);
    crate::sync::service::decorate_manifest(&node, &mut m, origin);
    Ok(m)
}
