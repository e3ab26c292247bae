//! `keygen`, `enroll` and `enrollment revoke`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use crate::workflow::service::admin;
use crate::workflow::service::admin as write;
use serde_json::Value;
use std::path::PathBuf;

/// Arguments of `keygen`.
#[derive(Debug, clap::Args)]
pub struct KeygenArgs {
    /// Owner-private collector directory (created 0700); the key file is 0600 and never printed.
    #[arg(long, value_name = "DIR")]
    pub collector_dir: PathBuf,
}

/// Arguments of `enroll`.
#[derive(Debug, clap::Args)]
pub struct EnrollArgs {
    /// Repository id.
    #[arg(long)]
    pub repo: String,
    /// Profile id.
    #[arg(long)]
    pub profile: String,
    /// Step id of the installed requirement.
    #[arg(long)]
    pub step: String,
    /// Executor name.
    #[arg(long)]
    pub executor: String,
    /// Ed25519 public key, 64 lowercase hex characters.
    #[arg(long, value_name = "HEX")]
    pub public_key: String,
}

/// `enrollment` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum EnrollmentCmd {
    /// Revoke a registration (bumps the policy epoch; old evidence stays invalid).
    Revoke {
        /// Registration id.
        #[arg(long)]
        registration: String,
    },
}

pub(super) fn keygen(_ctx: &Ctx, a: KeygenArgs) -> Result<Value> {
    to_value(&admin::keygen(&a.collector_dir)?)
}

pub(super) fn enroll(ctx: &Ctx, a: EnrollArgs) -> Result<Value> {
    to_value(&write::enroll(
        ctx.data_dir()?,
        ctx.lock_timeout,
        ctx.clock.as_ref(),
        &admin::EnrollRequest {
            repo_id: a.repo,
            profile: a.profile,
            step_id: a.step,
            executor_id: a.executor,
            public_key: a.public_key,
        },
    )?)
}

pub(super) fn enrollment(ctx: &Ctx, c: EnrollmentCmd) -> Result<Value> {
    match c {
        EnrollmentCmd::Revoke { registration } => to_value(&write::enrollment_revoke(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &registration,
        )?),
    }
}
