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
    /// printing the script itself on stdout.
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

/// The completion script for `shell`.
pub fn completion_script(shell: Shell) -> Vec<u8> {
    let mut cmd = hint_values(crate::cli::Cli::command());
    let mut buf = Vec::new();
    let sh = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    clap_complete::generate(sh, &mut cmd, "agent-task", &mut buf);
    buf
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
            Ok(super::Reply {
                value: Value::Null,
                exit_code: 0,
                raw: Some(text),
            })
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
