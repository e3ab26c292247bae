//! `init` and `info`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use crate::store::DbSpec;
use crate::workflow::service::setup as admin;
use serde_json::Value;

/// Arguments of `init`.
#[derive(Debug, clap::Args)]
pub struct InitArgs {}

/// Arguments of `info`.
#[derive(Debug, clap::Args)]
pub struct InfoArgs {}

/// The data half's databases of a data directory: `init` migrates them
/// when they exist and `info` reports them, after the workflow's. The face
/// names them, so the workflow half never names the data half.
static DATA_DATABASES: [&DbSpec; 1] = [&crate::data::SPEC];

pub(super) fn init(ctx: &Ctx, _a: &InitArgs) -> Result<Value> {
    to_value(&admin::init(
        ctx.data_dir()?,
        ctx.lock_timeout,
        ctx.clock.as_ref(),
        &DATA_DATABASES,
    )?)
}

pub(super) fn info(ctx: &Ctx, _a: &InfoArgs) -> Result<Value> {
    to_value(&admin::info(ctx.data_dir()?, &DATA_DATABASES)?)
}
