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
    /// The options every subcommand takes.
    #[command(flatten)]
    pub globals: Globals,

    /// The command to run.
    #[command(subcommand)]
    pub command: commands::Command,
}

/// The options every subcommand takes (`global`): one definition, which
/// both the whole command tree and a hot subcommand's ([`hot_command`])
/// use.
#[derive(Debug, clap::Args)]
pub struct Globals {
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
}

/// Runs the command line given by `args` and returns the process exit code.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    crate::store::private_fs::set_private_umask();
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
    let parsed = parse_args(args);
    let cli = match parsed {
        Ok(p) => p,
        Err(e) => return output::clap_error(e),
    };
    let pretty = cli.globals.pretty;
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

/// Parses a command line. A hot subcommand ([`commands::HOT`]) is parsed
/// against a tree of it alone first; only what that parse refuses (help,
/// version, a usage error, anything else) is parsed again against the
/// whole tree, which gives the answer and the message the command line
/// always got.
fn parse_args(args: Vec<OsString>) -> Result<Cli, clap::Error> {
    use clap::{CommandFactory, FromArgMatches};
    let parse = |mut command: clap::Command, args: Vec<OsString>| {
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
        parsed
    };
    if let Some(hot) = hot_command(&args)
        && let Ok(cli) = parse(hot, args.clone())
    {
        return Ok(cli);
    }
    parse(Cli::command(), args)
}

/// The tree of one hot subcommand ([`commands::HOT`]) under the global
/// options, when `args` names one after them (`None` for anything else,
/// which the whole tree parses).
fn hot_command(args: &[OsString]) -> Option<clap::Command> {
    use clap::Args;
    let mut words = args.iter().skip(1);
    let name = loop {
        let w = words.next()?.to_str()?;
        match w {
            "--pretty" => {}
            "--data-dir" | "--lock-timeout-ms" | "--token-file" => {
                words.next()?;
            }
            _ if w.starts_with("--data-dir=")
                || w.starts_with("--lock-timeout-ms=")
                || w.starts_with("--token-file=") => {}
            _ => break w,
        }
    };
    let (name, augment) = commands::HOT.iter().find(|(n, _)| *n == name)?;
    Some(
        Globals::augment_args(clap::Command::new("agent-task"))
            .subcommand_required(true)
            .subcommand(augment(clap::Command::new(*name))),
    )
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn args(words: &[&str]) -> Vec<OsString> {
        std::iter::once("agent-task")
            .chain(words.iter().copied())
            .map(OsString::from)
            .collect()
    }

    /// Every argument and group of `c` as clap describes it.
    fn shape(c: &clap::Command) -> (Vec<String>, Vec<String>) {
        (
            c.get_arguments().map(|a| format!("{a:?}")).collect(),
            c.get_groups().map(|g| format!("{g:?}")).collect(),
        )
    }

    /// clap's own checks of the whole tree (a hot subcommand's parse no
    /// longer builds it, so a command line alone may not run them).
    #[test]
    fn the_whole_tree_passes_claps_checks() {
        Cli::command().debug_assert();
    }

    #[test]
    fn a_hot_subcommand_is_defined_as_in_the_whole_tree() {
        let full = Cli::command();
        for (name, _) in commands::HOT {
            let hot = hot_command(&args(&[name])).expect("a hot subcommand");
            // The global options and their group (the whole tree also has
            // the group of `Cli` itself, which names no argument).
            let (args, groups) = shape(&full);
            let groups: Vec<String> = groups
                .into_iter()
                .filter(|g| !g.starts_with("ArgGroup { id: \"Cli\", args: [],"))
                .collect();
            assert_eq!(shape(&hot), (args, groups), "the global options");
            let h = hot.find_subcommand(name).expect("in the hot tree");
            let f = full.find_subcommand(name).expect("in the whole tree");
            assert_eq!(shape(h), shape(f), "{name}");
            assert!(!f.has_subcommands(), "{name}");
            assert_eq!(
                (
                    f.is_arg_required_else_help_set(),
                    f.is_subcommand_required_set()
                ),
                (false, false),
                "{name}"
            );
        }
    }

    #[test]
    fn only_a_hot_subcommand_after_the_global_options_gets_its_own_tree() {
        for words in [
            &["qualify"][..],
            &["--pretty", "qualify", "--change", "c"],
            &["--data-dir", "d", "--token-file", "t", "status"],
            &["--lock-timeout-ms=5", "--data-dir=d", "collect"],
        ] {
            assert!(hot_command(&args(words)).is_some(), "{words:?}");
        }
        for words in [
            &[][..],
            &["ls"],
            &["--data-dir"],
            &["--data-dir", "qualify"],
            &["-h", "qualify"],
            &["--help"],
            &["--version", "qualify"],
            &["--bogus", "qualify"],
            &["cas", "qualify"],
        ] {
            assert!(hot_command(&args(words)).is_none(), "{words:?}");
        }
    }

    /// What the whole tree alone makes of `words`.
    fn whole(words: &[&str]) -> Result<String, (clap::error::ErrorKind, String)> {
        use clap::FromArgMatches;
        Cli::command()
            .try_get_matches_from(args(words))
            .and_then(|m| match empty_request_id(&m) {
                Some(e) => Err(e),
                None => Cli::from_arg_matches(&m),
            })
            .map(|c| format!("{c:?}"))
            .map_err(|e| (e.kind(), e.render().to_string()))
    }

    #[test]
    fn a_command_line_parses_as_the_whole_tree_parses_it() {
        for words in [
            &["qualify", "--change", "ch_1"][..],
            &[
                "--data-dir",
                "/d",
                "qualify",
                "--workspace",
                "w",
                "--pretty",
            ],
            &["qualify", "--change", "a", "--change", "b"],
            &[
                "qualify",
                "--change",
                "c",
                "--endpoint",
                "http://h:1",
                "--repository",
                "r",
            ],
            &["qualify", "--change"],
            &["qualify", "--bogus"],
            &["qualify", "extra"],
            &["qualify", "--help"],
            &["qualify", "-h"],
            &["qualify", "--version"],
            &["qualify", "-V"],
            &["--lock-timeout-ms", "x", "qualify"],
            &["--token-file=t", "next", "--change", "c"],
            &["finalize", "--workspace", "w"],
            &[
                "checkpoint",
                "--workspace",
                "w",
                "--max-revision-bytes",
                "10",
            ],
            &["checkpoint", "--max-revision-bytes", "-1"],
            &["status", "--help"],
            &["status"],
            &["collect", "--descriptor", "-"],
            &["collect"],
            &[
                "--data-dir",
                "/d",
                "--token-file",
                "/t",
                "task-stop",
                "ch_1",
                "--workspace",
                "/w",
            ],
            &["task-stop"],
            &["task-stop", "ch_1", "--endpoint", "http://h:1"],
            &["task-codex-stop", "ch_1", "--help"],
            &["task-codex-stop", "ch_1", "--workspace"],
            &["ls"],
            &["help", "qualify"],
        ] {
            let got = parse_args(args(words))
                .map(|c| format!("{c:?}"))
                .map_err(|e| (e.kind(), e.render().to_string()));
            assert_eq!(got, whole(words), "{words:?}");
        }
    }
}
