//! `repo add` and `repo list`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use crate::workflow::service::admin;
use crate::workflow::service::admin as write;
use serde_json::Value;
use std::path::PathBuf;

/// `repo` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RepoCmd {
    /// Register a source directory as a repository; its tree becomes the target head.
    Add {
        /// Repository id (e.g. `acme/api`).
        id: String,
        /// Source directory.
        #[arg(long, value_name = "PATH")]
        source: PathBuf,
        /// Protected target name.
        #[arg(long, default_value = "main")]
        target: String,
    },
    /// List repositories.
    List,
}

pub(super) fn run(ctx: &Ctx, c: RepoCmd) -> Result<Value> {
    match c {
        RepoCmd::Add { id, source, target } => to_value(&write::repo_add(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &admin::RepoAddRequest {
                repo_id: id,
                source,
                target,
            },
        )?),
        RepoCmd::List => {
            let repositories = admin::repo_list(ctx.data_dir()?)?;
            Ok(serde_json::to_value(Repositories { repositories })?)
        }
    }
}

/// `repo list`'s output.
#[derive(serde::Serialize)]
struct Repositories<T: serde::Serialize> {
    repositories: T,
}
