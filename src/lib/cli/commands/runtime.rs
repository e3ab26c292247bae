//! `runtime probe`: the observed identity of a sandbox runtime on this host.

use super::to_value;
use crate::collector::runtime::{self, RuntimeKind};
use crate::error::Result;
use serde_json::Value;

/// Runtimes selectable on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RuntimeArg {
    /// bubblewrap: read-only snapshot, no network, pid namespace, private /tmp.
    Bwrap,
    /// unshare: network cut only; the file system is shared.
    Unshare,
    /// podman or docker with --network none.
    Oci,
}

impl From<RuntimeArg> for RuntimeKind {
    fn from(a: RuntimeArg) -> Self {
        match a {
            RuntimeArg::Bwrap => RuntimeKind::Bwrap,
            RuntimeArg::Unshare => RuntimeKind::Unshare,
            RuntimeArg::Oci => RuntimeKind::Oci,
        }
    }
}

/// The `runtime` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RuntimeCommand {
    /// Print the observed identity (program digest, version, pinned arguments,
    /// isolation facts, for oci the engine and resolved image, and their
    /// digest) after a trial run (bwrap, unshare).
    Probe {
        /// Which runtime.
        #[arg(long)]
        runtime: RuntimeArg,
        /// For `oci`: the image, pinned by digest (`NAME@sha256:<64 hex>`);
        /// it must be in the engine's local store (never pulled).
        #[arg(long, value_name = "REF")]
        oci_image: Option<String>,
    },
}

pub(super) fn run(c: &RuntimeCommand) -> Result<Value> {
    match c {
        RuntimeCommand::Probe {
            runtime: r,
            oci_image,
        } => to_value(&runtime::probe((*r).into(), oci_image.as_deref())?),
    }
}
