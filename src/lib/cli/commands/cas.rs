//! `cas put | cat | fsck | migrate`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::ops::cas;
use crate::store::MigrateTo;
use crate::wire::digest::Sha256Hex;
use serde_json::Value;
use std::path::PathBuf;

/// The `cas` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CasCommand {
    /// Store a file (or `-` for stdin) and print its SHA-256 and size.
    Put {
        /// File to store, or `-` for standard input.
        path: PathBuf,
    },
    /// Verify an object and write its bytes to a file.
    Cat {
        /// The object's SHA-256 (64 lowercase hex).
        digest: String,
        /// Where to write the bytes (created 0600; must not exist).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
    },
    /// Verify every object against its digest (changes nothing).
    Fsck,
    /// Move every object to a bucket or back to the local store, then
    /// switch the data directory to it (resumable: run it again after an
    /// interruption).
    Migrate {
        /// The destination: `s3` (the bucket `--config` names) or `local`.
        #[arg(long, value_enum)]
        to: MigrateDest,
        /// With `--to s3`: a configuration file in the `blob-store.json`
        /// format (owner-only); it becomes the data directory's own.
        #[arg(long, value_name = "FILE", required_if_eq("to", "s3"))]
        config: Option<PathBuf>,
    },
}

/// Where `cas migrate` moves the objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum MigrateDest {
    /// The bucket named by `--config`.
    S3,
    /// The data directory's own `cas/`.
    Local,
}

pub(super) fn run(ctx: &Ctx, c: &CasCommand) -> Result<Value> {
    let root = ctx.data_dir()?;
    match c {
        CasCommand::Put { path } => {
            let out = if path.as_os_str() == "-" {
                cas::put(root, ctx.lock_timeout, &mut std::io::stdin().lock())?
            } else {
                let mut f = std::fs::File::open(path).map_err(|e| Error::io("open", path, e))?;
                cas::put(root, ctx.lock_timeout, &mut f)?
            };
            to_value(&out)
        }
        CasCommand::Cat { digest, out } => {
            let d = Sha256Hex::parse(digest)?;
            let bytes = cas::cat(root, &d)?;
            write_new_private(out, &bytes)?;
            to_value(&Catted {
                digest: &d,
                out: out.display().to_string(),
                size: bytes.len(),
            })
        }
        CasCommand::Fsck => to_value(&cas::fsck(root)?),
        CasCommand::Migrate { to, config } => {
            let to = match (to, config) {
                (MigrateDest::S3, Some(config)) => MigrateTo::S3 { config },
                (MigrateDest::Local, None) => MigrateTo::Local,
                (MigrateDest::S3, None) => {
                    return Err(Error::new(Code::Usage, "--to s3 needs --config FILE"));
                }
                (MigrateDest::Local, Some(_)) => {
                    return Err(Error::new(Code::Usage, "--to local takes no --config"));
                }
            };
            to_value(&cas::migrate(root, ctx.lock_timeout, to)?)
        }
    }
}

fn write_new_private(path: &std::path::Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                Error::new(Code::Conflict, format!("{} already exists", path.display()))
            } else {
                Error::io("create", path, e)
            }
        })?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| Error::io("write", path, e))
}

/// `cas cat`'s output (a JSON object: fields in key order).
#[derive(serde::Serialize)]
struct Catted<'a> {
    digest: &'a Sha256Hex,
    out: String,
    size: usize,
}
