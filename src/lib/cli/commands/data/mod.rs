//! `data …`: the agent-data/v1 node commands.

pub mod doctor;

use super::Reply;
use crate::cli::ctx::Ctx;
use crate::error::Result;
use clap::Subcommand;

/// The `data` subcommands.
#[derive(Debug, Subcommand)]
pub enum DataCommand {
    /// Run the agent-data/v1-slice1-http conformance profile against a node.
    Doctor(doctor::DoctorArgs),
}

/// Runs one `data` subcommand.
pub fn dispatch(ctx: &Ctx, command: DataCommand) -> Result<Reply> {
    match command {
        DataCommand::Doctor(a) => doctor::doctor(ctx, &a),
    }
}
