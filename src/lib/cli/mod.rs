//! The command-line face: clap definitions, context, output rendering. It
//! parses, calls one library operation and renders its result; behaviour
//! lives in the library modules.

pub mod authority;
pub mod commands;
pub mod ctx;
pub mod output;

use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

/// The top-level command line.
#[derive(Debug, Parser)]
#[command(
    name = "agent-task",
    version,
    about = "Workflow tasks for coding agents under operator rules, and an agent-data/v1 node",
    long_about = "agent-task is a strict command-line toolkit with file-based state and no resident \
server. Every subcommand opens an owner-private data directory, takes an advisory lock when it \
mutates, does one short transaction, prints one JSON document on stdout and exits. Failures \
print one JSON object {\"error\",\"message\",\"details\"?} on stderr with a sysexits exit code.",
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    /// Data directory (created 0700 by `init`) [env: AGENT_TASK_DATA_DIR;
    /// never read by the Stop hooks, which take it only from their command line].
    #[arg(long, global = true, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// Pretty-print JSON output (the default when stdout is a terminal).
    #[arg(long, global = true)]
    pub pretty: bool,

    /// How long a mutating command waits for the data-directory lock before
    /// failing with `busy`.
    #[arg(long, global = true, value_name = "MS", default_value_t = 5000)]
    pub lock_timeout_ms: u64,

    /// The agent's token file (issued by `token issue`); the actor of every
    /// agent command comes from it, never from request JSON [env:
    /// AGENT_TASK_TOKEN_FILE; never read by the Stop hooks].
    #[arg(long, global = true, value_name = "FILE")]
    pub token_file: Option<PathBuf>,

    /// The command to run.
    #[command(subcommand)]
    pub command: commands::Command,
}

/// Runs the command line given by `args` and returns the process exit code.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    crate::store::private_fs::set_private_umask();
    use clap::{CommandFactory, FromArgMatches};
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // A shell asking for completions (`AGENT_TASK_COMPLETE=SHELL agent-task
    // -- WORDS…`, what the script `completions SHELL` prints runs) gets them
    // and nothing else. Only that shape is one: a Stop hook (which reads no
    // `AGENT_TASK_*` variable) or any other command line runs as it is.
    let stop_hook = args
        .iter()
        .any(|a| a == "task-stop" || a == "task-codex-stop");
    if args.get(1).is_some_and(|a| a == "--") && !stop_hook {
        let completion =
            clap_complete::CompleteEnv::with_factory(commands::docs::completion_command)
                .var(commands::docs::COMPLETE_VAR)
                .try_complete(
                    args.iter().cloned(),
                    std::env::current_dir().ok().as_deref(),
                );
        match completion {
            Ok(true) => return ExitCode::SUCCESS,
            Ok(false) => {}
            Err(e) => return output::clap_error(e),
        }
    }
    let mut command = Cli::command();
    let parsed = command.try_get_matches_from_mut(args).and_then(|m| {
        if let Some(e) = empty_request_id(&m) {
            return Err(e);
        }
        Cli::from_arg_matches(&m)
    });
    // Not dropped: freeing the tree of every subcommand and argument was
    // about 0.6M instructions (callgrind, a fifth of a command's start)
    // spent just before the process exits, which frees it all at once.
    std::mem::forget(command);
    let cli = match parsed {
        Ok(p) => p,
        Err(e) => return output::clap_error(e),
    };
    let pretty = cli.pretty;
    let result = ctx::Ctx::from_cli(&cli).and_then(|ctx| commands::dispatch(&ctx, cli.command));
    match result {
        Ok(commands::Reply {
            text: Some(t),
            exit_code,
            ..
        }) => output::text(&t, exit_code),
        Ok(reply) => output::success(&reply.value, pretty, reply.exit_code),
        Err(e) => output::failure(&e),
    }
}

/// A usage error when the command line named `--request-id ""`: an
/// omitted id is generated (and printed for a retry), but an empty one
/// written out is a mistake (an unset shell variable, say) that a fresh id
/// would hide, and a retry would then not be one.
fn empty_request_id(m: &clap::ArgMatches) -> Option<clap::Error> {
    use clap::parser::ValueSource;
    let mut m = m;
    loop {
        // `try_get_raw` first: `value_source` panics (debug builds) on an
        // id the subcommand does not define.
        let empty = m
            .try_get_raw("request_id")
            .ok()
            .flatten()
            .is_some_and(|mut v| v.any(|v| v.is_empty()));
        if empty && m.value_source("request_id") == Some(ValueSource::CommandLine) {
            let cmd = <Cli as clap::CommandFactory>::command();
            let mut e = clap::Error::new(clap::error::ErrorKind::InvalidValue).with_cmd(&cmd);
            e.insert(
                clap::error::ContextKind::InvalidArg,
                clap::error::ContextValue::String("--request-id <REQUEST_ID>".into()),
            );
            e.insert(
                clap::error::ContextKind::InvalidValue,
                clap::error::ContextValue::String(String::new()),
            );
            return Some(e);
        }
        match m.subcommand() {
            Some((_, sub)) => m = sub,
            None => return None,
        }
    }
}

/// Entry point for `src/bin/agent-task.rs`.
pub fn main() -> ExitCode {
    run(std::env::args_os())
}
