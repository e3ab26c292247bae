//! `completions SHELL` and `man --out DIR`, generated from the clap
//! definitions (the committed `completions/` and `man/` are checked for
//! drift by the tests).

use super::to_value;
use crate::error::{Code, Error, Result};
use clap::CommandFactory;
use serde_json::Value;
use std::path::PathBuf;

/// Shells with completion scripts.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Shell {
    /// GNU Bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// Arguments of `completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to generate for.
    pub shell: Shell,
    /// Write the script to this file (and print a JSON summary) instead of
    /// printing the script itself on stdout. The script asks `agent-task`
    /// (on `PATH`) for each completion.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// Arguments of `man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Directory to write `agent-task.1` and `agent-task-<cmd>.1` into
    /// (created, with its parents, when missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// The variable that turns a run of the binary into a completion request
/// (`AGENT_TASK_COMPLETE=bash agent-task -- WORDS…`), which the scripts
/// `completions SHELL` prints set.
pub const COMPLETE_VAR: &str = "AGENT_TASK_COMPLETE";

/// The completion script for `shell`: it registers `agent-task` with the
/// shell and asks the binary (found on `PATH`) for each completion, so
/// that ids complete from the data directory.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    use clap_complete::env::EnvCompleter;
    let mut buf = Vec::new();
    let sh: &dyn EnvCompleter = match shell {
        Shell::Bash => &clap_complete::env::Bash,
        Shell::Zsh => &clap_complete::env::Zsh,
        Shell::Fish => &clap_complete::env::Fish,
    };
    // Writing into a Vec cannot fail.
    let _ = sh.write_registration(
        COMPLETE_VAR,
        "agent-task",
        "agent-task",
        "agent-task",
        &mut buf,
    );
    buf
}

/// The command tree completion runs on: values without a hint complete
/// nothing (no file-name fallback) and Change, task and attempt ids
/// complete from the ids the caller may view.
pub fn completion_command() -> clap::Command {
    ids_complete(hint_values(crate::cli::Cli::command()))
        .mut_subcommand("data", |c| {
            names_complete(c, &["collection", "collections"], local_collections)
        })
        .mut_subcommand("sync", |c| names_complete(c, &["peer"], local_peers))
}

/// `cmd` (and its subcommands) with the arguments `ids` completing from
/// the names `list` gives.
fn names_complete(
    cmd: clap::Command,
    ids: &'static [&'static str],
    list: fn() -> Result<Vec<String>>,
) -> clap::Command {
    let mut cmd = cmd;
    for id in ids {
        if cmd.get_arguments().any(|a| a.get_id() == *id) {
            cmd = cmd.mut_arg(*id, |a| {
                a.add(clap_complete::engine::ArgValueCompleter::new(
                    move |current: &std::ffi::OsStr| {
                        let current = current.to_str().unwrap_or("\u{0}");
                        list()
                            .unwrap_or_default()
                            .into_iter()
                            .filter(|n| n.starts_with(current))
                            .map(clap_complete::engine::CompletionCandidate::new)
                            .collect()
                    },
                ))
            });
        }
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, |c| names_complete(c, ids, list));
    }
    cmd
}

/// The data node's collection ids (on `AGENT_TASK_DATA_DIR`).
fn local_collections() -> Result<Vec<String>> {
    let ctx = crate::cli::ctx::Ctx::for_completion()?;
    let list = super::data::open_node(&ctx)?.collections()?;
    Ok(list["collections"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default())
}

/// The configured sync peers' aliases (on `AGENT_TASK_DATA_DIR`).
fn local_peers() -> Result<Vec<String>> {
    let ctx = crate::cli::ctx::Ctx::for_completion()?;
    Ok(super::sync::store(&ctx)?
        .peers()?
        .into_iter()
        .map(|p| p.peer_id)
        .collect())
}

/// `cmd` with the id completers on every `change`, `task` and `attempt`
/// argument.
fn ids_complete(cmd: clap::Command) -> clap::Command {
    use crate::workflow::service::change::IdKind;
    let mut cmd = cmd;
    for (id, kind) in [
        ("change", IdKind::Change),
        ("task", IdKind::Task),
        ("attempt", IdKind::Attempt),
    ] {
        if cmd.get_arguments().any(|a| a.get_id() == id) {
            cmd = cmd.mut_arg(id, |a| {
                a.add(clap_complete::engine::ArgValueCompleter::new(
                    move |current: &std::ffi::OsStr| complete_ids(kind, current),
                ))
            });
        }
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, ids_complete);
    }
    cmd
}

/// Most ids one completion offers.
const MAX_COMPLETED_IDS: usize = 100;

/// The ids of `kind` the caller (`AGENT_TASK_TOKEN_FILE` on
/// `AGENT_TASK_DATA_DIR`) may view that start with `current`; nothing on
/// any failure (no token, no data directory, a busy store).
fn complete_ids(
    kind: crate::workflow::service::change::IdKind,
    current: &std::ffi::OsStr,
) -> Vec<clap_complete::engine::CompletionCandidate> {
    let Some(current) = current.to_str() else {
        return Vec::new();
    };
    let prefix = if kind.id_prefix().starts_with(current) {
        kind.id_prefix()
    } else if current.starts_with(kind.id_prefix()) {
        current
    } else {
        return Vec::new();
    };
    let ids = crate::cli::ctx::Ctx::for_completion().and_then(|ctx| {
        super::change::with_agent(&ctx, |cx| {
            crate::workflow::service::ops::visible_ids(cx, kind, prefix, MAX_COMPLETED_IDS)
        })
    });
    ids.unwrap_or_default()
        .into_iter()
        .map(clap_complete::engine::CompletionCandidate::new)
        .collect()
}

/// `cmd` where no argument value falls back to file names unless it is a
/// path: clap hints a `PathBuf` value as a path by itself; every other
/// value without a hint (ids, names, numbers) is hinted `Other`.
fn hint_values(cmd: clap::Command) -> clap::Command {
    use clap::ValueHint;
    let ids: Vec<clap::Id> = cmd
        .get_arguments()
        .filter(|a| a.get_action().takes_values() && a.get_value_hint() == ValueHint::Unknown)
        .map(|a| a.get_id().clone())
        .collect();
    let mut cmd = cmd;
    for id in ids {
        cmd = cmd.mut_arg(id, |a| a.value_hint(ValueHint::Other));
    }
    let subs: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_owned())
        .collect();
    for name in subs {
        cmd = cmd.mut_subcommand(name, hint_values);
    }
    cmd
}

pub(super) fn completions(a: &CompletionsArgs) -> Result<super::Reply> {
    let script = completion_script(a.shell);
    match &a.out {
        Some(p) => {
            std::fs::write(p, &script).map_err(|e| Error::io("write", p, e))?;
            to_value(&WrittenScript {
                bytes: script.len(),
                path: p.display().to_string(),
                shell: shell_name(a.shell),
            })
            .map(super::Reply::from)
        }
        None => {
            let text = String::from_utf8(script)
                .map_err(|_| Error::internal("completion script is not UTF-8"))?;
            Ok(super::Reply::text(text))
        }
    }
}

pub(super) fn man(a: &ManArgs) -> Result<Value> {
    // A missing directory is created (with its parents); an existing path
    // that is not a directory is refused.
    if !a.out.exists() {
        std::fs::create_dir_all(&a.out).map_err(|e| Error::io("create", &a.out, e))?;
    }
    if !a.out.is_dir() {
        return Err(Error::new(
            Code::NotFound,
            format!("{} is not a directory", a.out.display()),
        ));
    }
    let mut pages = Vec::new();
    let mut cmd = crate::cli::Cli::command();
    // Building propagates global options and the version into subcommands.
    cmd.build();
    write_pages(cmd, "agent-task", "agent-task", &a.out, &mut pages)?;
    pages.sort();
    to_value(&Pages {
        out: a.out.display().to_string(),
        pages,
    })
}

// The outputs below are JSON objects: their fields are in key order, the
// order the printed `Value` has.

/// `completions --out`'s output.
#[derive(serde::Serialize)]
struct WrittenScript {
    bytes: usize,
    path: String,
    shell: String,
}

/// `man`'s output.
#[derive(serde::Serialize)]
struct Pages {
    out: String,
    pages: Vec<String>,
}

fn shell_name(shell: Shell) -> String {
    format!("{shell:?}").to_lowercase()
}

fn write_pages(
    cmd: clap::Command,
    name: &str,
    bin_name: &str,
    out: &std::path::Path,
    pages: &mut Vec<String>,
) -> Result<()> {
    let cmd = cmd.name(name.to_owned()).bin_name(bin_name.to_owned());
    let file = format!("{name}.1");
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .date("")
        .render(&mut buf)
        .map_err(|e| Error::internal(format!("man render: {e}")))?;
    let path = out.join(&file);
    std::fs::write(&path, &buf).map_err(|e| Error::io("write", &path, e))?;
    pages.push(file);
    for sub in cmd
        .get_subcommands()
        .filter(|s| !s.is_hide_set() && s.get_name() != "help")
    {
        write_pages(
            sub.clone(),
            &format!("{name}-{}", sub.get_name()),
            &format!("{bin_name} {}", sub.get_name()),
            out,
            pages,
        )?;
    }
    Ok(())
}
