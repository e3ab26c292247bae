//! `change open` and `checkpoint`.

use super::to_value;
use crate::authority::change::ChangeSel;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::task::ops::{self, AgentCtx};
use serde_json::Value;
use std::path::PathBuf;

/// `change` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ChangeCmd {
    /// Open a Change on a workspace for the token's actor.
    Open {
        /// Repository id.
        #[arg(long)]
        repo: String,
        /// Profile id.
        #[arg(long)]
        profile: String,
        /// Workspace directory.
        #[arg(long, value_name = "PATH")]
        workspace: PathBuf,
    },
}

/// Names a Change: by id or by its workspace.
#[derive(Debug, clap::Args)]
pub struct ChangeSelArgs {
    /// Change id.
    #[arg(long, conflicts_with = "workspace")]
    pub change: Option<String>,
    /// Workspace directory of the Change.
    #[arg(long, value_name = "PATH")]
    pub workspace: Option<PathBuf>,
}

impl ChangeSelArgs {
    pub(crate) fn sel(&self) -> Result<ChangeSel> {
        match (&self.change, &self.workspace) {
            (Some(c), _) => Ok(ChangeSel::Id(c.clone())),
            (None, Some(w)) => Ok(ChangeSel::Workspace(w.clone())),
            (None, None) => std::env::current_dir()
                .map(ChangeSel::Workspace)
                .map_err(|_| Error::new(Code::Usage, "pass --change or --workspace")),
        }
    }
}

pub(super) fn with_agent<T>(ctx: &Ctx, f: impl FnOnce(&AgentCtx<'_>) -> Result<T>) -> Result<T> {
    let token = ctx.token()?;
    let cx = AgentCtx {
        root: ctx.data_dir()?,
        timeout: ctx.lock_timeout,
        clock: ctx.clock.as_ref(),
        token: &token,
    };
    f(&cx)
}

pub(super) fn change(ctx: &Ctx, c: ChangeCmd) -> Result<Value> {
    match c {
        ChangeCmd::Open {
            repo,
            profile,
            workspace,
        } => with_agent(ctx, |cx| {
            to_value(&ops::change_open(cx, &repo, &profile, &workspace)?)
        }),
    }
}

/// Arguments of `checkpoint`.
#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    /// Which Change.
    #[command(flatten)]
    pub sel: ChangeSelArgs,
    /// Refuse (`revision_too_large`, before reading any file) a workspace
    /// whose files add up to more than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::authority::snapshot::DEFAULT_MAX_REVISION_BYTES)]
    pub max_revision_bytes: u64,
}

pub(super) fn checkpoint(ctx: &Ctx, a: CheckpointArgs) -> Result<Value> {
    let sel = a.sel.sel()?;
    with_agent(ctx, |cx| {
        to_value(&ops::checkpoint(cx, &sel, a.max_revision_bytes)?)
    })
}
