//! `runtime probe`: the observed identity of a sandbox runtime on this
//! host.

use super::to_value;
use crate::collector::runtime::{self, LimitRequest, RuntimeKind};
use crate::error::Result;
use serde_json::Value;

/// Runtimes selectable on the command line.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum RuntimeArg {
    /// bubblewrap: read-only snapshot, no network, pid namespace, sized private tmpfs, pinned limits.
    Bwrap,
    /// unshare: refused (it shares the host file system with candidate code).
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

/// The sandbox limits a `bwrap` identity pins (see docs/runtimes.md).
#[derive(Debug, Clone, clap::Args)]
pub struct LimitArgs {
    /// Size of each writable tmpfs inside the sandbox (/tmp, /scratch, /dev/shm).
    #[arg(long, value_name = "BYTES", default_value_t = runtime::DEFAULT_TMPFS_BYTES)]
    pub sandbox_tmpfs_bytes: u64,
    /// Address space of each sandboxed process (RLIMIT_AS).
    #[arg(long, value_name = "BYTES", default_value_t = runtime::DEFAULT_ADDRESS_SPACE_BYTES)]
    pub sandbox_address_space_bytes: u64,
    /// Processes and threads of the sandbox's uid (RLIMIT_NPROC).
    #[arg(long, value_name = "N", default_value_t = runtime::DEFAULT_PROCESSES)]
    pub sandbox_processes: u64,
    /// Largest file a sandboxed process may write (RLIMIT_FSIZE).
    #[arg(long, value_name = "BYTES", default_value_t = runtime::DEFAULT_FILE_SIZE_BYTES)]
    pub sandbox_file_size_bytes: u64,
    /// CPU time of each sandboxed process (RLIMIT_CPU).
    #[arg(long, value_name = "SECONDS", default_value_t = runtime::DEFAULT_CPU_SECONDS)]
    pub sandbox_cpu_seconds: u64,
    /// The dedicated uid (and gid) candidate code runs as; only when the
    /// collector runs as root, where it is required (default 2000000000).
    #[arg(long, value_name = "UID")]
    pub sandbox_uid: Option<u32>,
}

impl LimitArgs {
    pub(super) fn request(&self) -> LimitRequest {
        LimitRequest {
            tmpfs_bytes: self.sandbox_tmpfs_bytes,
            address_space_bytes: self.sandbox_address_space_bytes,
            processes: self.sandbox_processes,
            file_size_bytes: self.sandbox_file_size_bytes,
            cpu_seconds: self.sandbox_cpu_seconds,
            sandbox_uid: self.sandbox_uid,
        }
    }
}

/// The `runtime` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RuntimeCommand {
    /// Print the observed identity (program digest, version, pinned arguments,
    /// isolation facts, for bwrap the pinned limits, for oci the engine and
    /// resolved image, and their digest) after a trial run (bwrap).
    Probe {
        /// Which runtime.
        #[arg(long)]
        runtime: RuntimeArg,
        /// For `oci`: the image, pinned by digest (`NAME@sha256:<64 hex>`);
        /// it must be in the engine's local store (never pulled).
        #[arg(long, value_name = "REF")]
        oci_image: Option<String>,
        /// For `bwrap`: the limits the identity pins.
        #[command(flatten)]
        limits: LimitArgs,
    },
}

pub(super) fn run(c: &RuntimeCommand) -> Result<Value> {
    match c {
        RuntimeCommand::Probe {
            runtime: r,
            oci_image,
            limits,
        } => {
            let kind: RuntimeKind = (*r).into();
            let limits = match kind {
                RuntimeKind::Bwrap => Some(limits.request().resolve()?),
                _ => None,
            };
            to_value(&runtime::probe(
                kind,
                &runtime::Plan {
                    oci_image: oci_image.as_deref(),
                    limits: limits.as_ref(),
                    collector_dir: None,
                },
            )?)
        }
    }
}
