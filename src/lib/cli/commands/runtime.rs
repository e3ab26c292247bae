//! `runtime probe`: the observed identity of a sandbox runtime on this
//! host; and the hidden `sandbox-exec` launcher a `bwrap` run goes through.

use super::to_value;
use crate::collector::runtime::{self, LimitRequest, RuntimeKind, SandboxLimits};
use crate::collector::sandbox::Launch;
use crate::error::{Code, Error, Result};
use serde_json::Value;
use std::path::PathBuf;

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
            let launcher = std::env::current_exe()
                .map_err(|e| Error::new(Code::Io, format!("cannot locate agent-task: {e}")))?;
            to_value(&runtime::probe(
                kind,
                &runtime::Plan {
                    oci_image: oci_image.as_deref(),
                    limits: limits.as_ref(),
                    launcher: &launcher,
                },
            )?)
        }
    }
}

/// Arguments of the hidden `sandbox-exec` launcher (see
/// `src/lib/collector/sandbox.rs`): what the collector passes it.
#[derive(Debug, clap::Args)]
pub struct SandboxExecArgs {
    /// The pinned limits and process attributes, as the runtime identity's
    /// `limits` JSON.
    #[arg(long, value_name = "JSON", value_parser = parse_limits)]
    pub limits: SandboxLimits,
    /// The program (bwrap) and its arguments.
    #[arg(last = true, required = true, num_args = 1..)]
    pub command: Vec<String>,
}

fn parse_limits(s: &str) -> std::result::Result<SandboxLimits, String> {
    serde_json::from_str(s).map_err(|e| e.to_string())
}

impl SandboxExecArgs {
    /// The launch these arguments describe.
    pub fn launch(&self) -> Launch {
        let mut it = self.command.iter();
        Launch {
            limits: self.limits.clone(),
            program: it.next().map(PathBuf::from).unwrap_or_default(),
            args: it.cloned().collect(),
        }
    }
}

pub(super) fn sandbox_exec(a: &SandboxExecArgs) -> Result<Value> {
    Err(crate::collector::sandbox::exec(&a.launch()))
}

/// The launcher as every bwrap run starts it (`agent-task sandbox-exec
/// …`, `sandbox::argv`): parsed by its own subcommand alone. Building
/// the whole command tree first, then dropping it, was about 2M of the
/// launcher's 3.4M instructions (callgrind), on every sandbox start.
/// The same derive parses the same arguments; it returns only on failure.
pub(crate) fn sandbox_exec_only(args: Vec<std::ffi::OsString>) -> std::process::ExitCode {
    match parse_sandbox_exec(args) {
        Ok(a) => crate::cli::output::failure(&crate::collector::sandbox::exec(&a.launch())),
        Err(e) => crate::cli::output::clap_error(e),
    }
}

/// The launcher's own parser: `agent-task sandbox-exec …` with only that
/// subcommand in the tree.
fn parse_sandbox_exec<I, T>(args: I) -> Result<SandboxExecArgs, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    use clap::{Args, FromArgMatches};
    clap::Command::new("agent-task")
        .subcommand_required(true)
        .subcommand(SandboxExecArgs::augment_args(clap::Command::new(
            "sandbox-exec",
        )))
        .try_get_matches_from(args)
        .and_then(|m| match m.subcommand() {
            Some(("sandbox-exec", sub)) => SandboxExecArgs::from_arg_matches(sub),
            _ => Err(clap::Error::new(clap::error::ErrorKind::MissingSubcommand)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sandbox::argv` (what the collector runs) parses back, through the
    /// CLI, into the same launch.
    #[test]
    fn sandbox_argv_round_trips_through_the_cli() {
        use clap::Parser;
        let l = Launch {
            limits: crate::collector::runtime::SandboxLimits {
                tmpfs_bytes: 1 << 30,
                address_space_bytes: 1 << 33,
                processes: 512,
                file_size_bytes: 1 << 30,
                cpu_seconds: 600,
                run_as_uid: Some(2_000_000_000),
                process: Some(crate::collector::runtime::ProcessAttributes::pinned(
                    1 << 33,
                )),
            },
            program: "/usr/bin/bwrap".into(),
            args: vec!["--ro-bind".into(), "/s".into(), "/work".into()],
        };
        let mut words = vec!["agent-task".to_owned()];
        words.extend(crate::collector::sandbox::argv(&l).expect("argv"));
        let cli = crate::cli::Cli::try_parse_from(&words).expect("parses");
        match cli.command {
            crate::cli::commands::Command::SandboxExec(a) => assert_eq!(a.launch(), l),
            other => panic!("parsed as {other:?}"),
        }
        // The launcher's own parser (`sandbox_exec_only`) reads the same.
        assert_eq!(
            parse_sandbox_exec(&words).expect("parses alone").launch(),
            l
        );
    }
}
