//! `requirement install` and `requirement show`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use crate::workflow::service::admin;
use crate::workflow::service::admin as write;
use serde_json::Value;
use std::path::PathBuf;

/// `requirement` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RequirementCmd {
    /// Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy
    /// epoch (which makes every live subject stale: `stale_subjects`) unless the file is
    /// canonically identical to the installed requirement (`unchanged: true`).
    Install {
        /// Repository id.
        #[arg(long)]
        repo: String,
        /// Profile id.
        #[arg(long)]
        profile: String,
        /// Workflow JSON file.
        #[arg(long, value_name = "WORKFLOW.json")]
        file: PathBuf,
        /// Bump the policy epoch even when the requirement is unchanged (invalidates the
        /// evidence of every live subject).
        #[arg(long)]
        bump_epoch: bool,
    },
    /// Show the installed requirement of a repository profile.
    Show {
        /// Repository id.
        #[arg(long)]
        repo: String,
        /// Profile id.
        #[arg(long)]
        profile: String,
    },
}

pub(super) fn run(ctx: &Ctx, c: RequirementCmd) -> Result<Value> {
    match c {
        RequirementCmd::Install {
            repo,
            profile,
            file,
            bump_epoch,
        } => to_value(&write::requirement_install(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &repo,
            &profile,
            &file,
            bump_epoch,
        )?),
        RequirementCmd::Show { repo, profile } => {
            to_value(&admin::requirement_show(ctx.data_dir()?, &repo, &profile)?)
        }
    }
}
