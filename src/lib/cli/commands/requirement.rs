//! `requirement install` and `requirement show`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use crate::workflow::authority::admin;
use serde_json::Value;
use std::path::PathBuf;

/// `requirement` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RequirementCmd {
    /// Install a workflow file (docs/workflow-file.md) for a repository profile; bumps the policy epoch.
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
        } => to_value(&admin::requirement_install(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &repo,
            &profile,
            &file,
        )?),
        RequirementCmd::Show { repo, profile } => {
            to_value(&admin::requirement_show(ctx.data_dir()?, &repo, &profile)?)
        }
    }
}
