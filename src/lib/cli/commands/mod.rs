//! The command tree and the single dispatch `match`.

mod docs;
mod setup;

use super::ctx::Ctx;
use crate::error::Result;
use clap::Subcommand;
use serde_json::Value;

/// Every top-level command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create (or re-check and migrate) the owner-private data directory.
    Init(setup::InitArgs),
    /// Show the data directory, schema versions and counts (changes nothing).
    Info(setup::InfoArgs),
    /// Print a shell completion script.
    Completions(docs::CompletionsArgs),
    /// Write a man page per subcommand into a directory.
    Man(docs::ManArgs),
}

/// Runs one command.
pub fn dispatch(ctx: &Ctx, command: Command) -> Result<Value> {
    match command {
        Command::Init(a) => setup::init(ctx, &a),
        Command::Info(a) => setup::info(ctx, &a),
        Command::Completions(a) => docs::completions(&a),
        Command::Man(a) => docs::man(&a),
    }
}

pub(crate) fn to_value<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v)
        .map_err(|e| crate::error::Error::internal(format!("cannot render output: {e}")))
}
