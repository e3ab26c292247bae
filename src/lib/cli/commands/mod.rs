//! The command tree and the single dispatch `match`.

mod cas;
pub mod data;
mod docs;
mod runtime;
mod serve;
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
    /// Store, read and verify content-addressed objects.
    #[command(subcommand)]
    Cas(cas::CasCommand),
    /// Sandbox runtimes for command collectors.
    #[command(subcommand)]
    Runtime(runtime::RuntimeCommand),
    /// Print a shell completion script.
    Completions(docs::CompletionsArgs),
    /// Write a man page per subcommand into a directory.
    Man(docs::ManArgs),
    /// The agent-data/v1 local node.
    #[command(subcommand)]
    Data(data::DataCommand),
    /// Serve the data node over HTTP (tiny_http, loopback by default).
    Serve(serve::ServeArgs),
}

/// What a successful command prints on stdout, and its exit code (0 for
/// almost every command; a few, such as a conformance run that found
/// failures, print their report and exit non-zero).
#[derive(Debug)]
pub struct Reply {
    /// The JSON value printed on stdout.
    pub value: Value,
    /// The process exit code.
    pub exit_code: u8,
}

impl From<Value> for Reply {
    fn from(value: Value) -> Self {
        Reply {
            value,
            exit_code: 0,
        }
    }
}

/// Runs one command.
pub fn dispatch(ctx: &Ctx, command: Command) -> Result<Reply> {
    match command {
        Command::Init(a) => setup::init(ctx, &a).map(Reply::from),
        Command::Info(a) => setup::info(ctx, &a).map(Reply::from),
        Command::Cas(c) => cas::run(ctx, &c).map(Reply::from),
        Command::Runtime(c) => runtime::run(&c).map(Reply::from),
        Command::Completions(a) => docs::completions(&a).map(Reply::from),
        Command::Man(a) => docs::man(&a).map(Reply::from),
        Command::Data(c) => data::dispatch(ctx, c),
        Command::Serve(a) => serve::run(ctx, &a),
    }
}

pub(crate) fn to_value<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v)
        .map_err(|e| crate::error::Error::internal(format!("cannot render output: {e}")))
}
