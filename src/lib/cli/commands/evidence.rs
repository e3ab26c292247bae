//! `evidence configure|sync|status`: the operator's evidence writer
//! (`crate::evidence`).

use super::{Reply, to_value};
use crate::cli::ctx::Ctx;
use crate::error::Result;
use std::path::PathBuf;
use std::sync::Arc;

/// `evidence` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum EvidenceCmd {
    /// Send a repository's collector evidence to a collection of a separate data node (created 0700 if needed).
    Configure {
        /// Repository id.
        #[arg(long)]
        repo: String,
        /// The evidence data node's directory: not the workflow's data
        /// directory, not a symbolic link, never served with a bearer agents hold.
        #[arg(long, value_name = "PATH")]
        evidence_dir: PathBuf,
        /// The collection the records go into.
        #[arg(long, default_value = crate::evidence::DEFAULT_COLLECTION, value_name = "ID")]
        collection: String,
    },
    /// Write every pending evidence row now; prints the counts (exit 75 when a row failed and stays pending).
    Sync,
    /// The evidence targets and the outbox's pending and done counts.
    Status,
}

/// Exit code of a sync that left failed rows pending (EX_TEMPFAIL).
const EXIT_PENDING: u8 = 75;

pub(super) fn run(ctx: &Ctx, c: EvidenceCmd) -> Result<Reply> {
    let root = ctx.data_dir()?;
    match c {
        EvidenceCmd::Configure {
            repo,
            evidence_dir,
            collection,
        } => to_value(&crate::evidence::configure(
            root,
            ctx.lock_timeout,
            Arc::from(crate::clock::process_clock()?),
            &repo,
            &evidence_dir,
            &collection,
        )?)
        .map(Reply::from),
        EvidenceCmd::Sync => {
            let r = crate::evidence::drain(
                root,
                Arc::from(crate::clock::process_clock()?),
                ctx.lock_timeout,
            )?;
            let exit_code = if r.failed > 0 { EXIT_PENDING } else { 0 };
            Ok(Reply {
                value: to_value(&r)?,
                exit_code,
                text: None,
            })
        }
        EvidenceCmd::Status => crate::evidence::status(root).map(Reply::from),
    }
}
