//! `token issue` and `token revoke`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use crate::workflow::authority::admin;
use serde_json::Value;
use std::path::PathBuf;

/// `token` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum TokenCmd {
    /// Issue an agent token into a new 0600 file (only its hash is kept).
    Issue {
        /// Owner id.
        #[arg(long)]
        owner: String,
        /// Agent id.
        #[arg(long)]
        agent: String,
        /// Token file to create (must not exist).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Revoke an agent's token (bumps its grant generation).
    Revoke {
        /// Owner id.
        #[arg(long)]
        owner: String,
        /// Agent id.
        #[arg(long)]
        agent: String,
    },
}

pub(super) fn run(ctx: &Ctx, c: TokenCmd) -> Result<Value> {
    match c {
        TokenCmd::Issue { owner, agent, out } => to_value(&admin::token_issue(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &owner,
            &agent,
            &out,
        )?),
        TokenCmd::Revoke { owner, agent } => to_value(&admin::token_revoke(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &owner,
            &agent,
        )?),
    }
}
