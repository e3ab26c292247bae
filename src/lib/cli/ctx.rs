//! What every command receives: the resolved data directory, lock timeout
//! and clock.

use super::Cli;
use crate::clock::{Clock, process_clock};
use crate::error::{Code, Error, Result};
use std::path::PathBuf;
use std::time::Duration;

/// Per-invocation context.
pub struct Ctx {
    data_dir: Option<PathBuf>,
    /// Whether `--data-dir` itself was on the command line (not the
    /// environment or the default).
    data_dir_on_command_line: bool,
    /// Bounded wait for the data-directory lock.
    pub lock_timeout: Duration,
    /// The clock (system, or the test override in test builds).
    pub clock: Box<dyn Clock>,
    token_file: Option<PathBuf>,
}

impl Ctx {
    /// The context of `cli`: each path from its flag, then (except for the
    /// Stop hooks, which read no `AGENT_TASK_*` variable and no default)
    /// from its variable, then (the data directory) the default.
    pub(crate) fn from_cli(cli: &Cli) -> Result<Ctx> {
        use super::authority::{DATA_DIR_VAR, TOKEN_FILE_VAR};
        let hook = cli.command.is_stop_hook();
        let g = &cli.globals;
        let var = |name: &str| {
            (!hook)
                .then(|| crate::env::var_os(name))
                .flatten()
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Ctx {
            data_dir: g
                .data_dir
                .clone()
                .or_else(|| var(DATA_DIR_VAR))
                .or_else(|| (!hook).then(default_data_dir).flatten()),
            data_dir_on_command_line: g.data_dir.is_some(),
            lock_timeout: Duration::from_millis(g.lock_timeout_ms),
            clock: process_clock()?,
            token_file: g.token_file.clone().or_else(|| var(TOKEN_FILE_VAR)),
        })
    }

    /// The data directory, or a `config` error saying how to name one.
    pub fn data_dir(&self) -> Result<&std::path::Path> {
        self.data_dir.as_deref().ok_or_else(|| {
            Error::new(
                Code::Config,
                "no data directory: pass --data-dir or set AGENT_TASK_DATA_DIR",
            )
        })
    }
}

impl Ctx {
    /// The data directory, which `command` takes only from `--data-dir` on
    /// its own command line: nothing in the environment (which the agent
    /// may set) can point a collection at another data directory.
    pub fn data_dir_from_command_line(&self, command: &str) -> Result<&std::path::Path> {
        if !self.data_dir_on_command_line {
            return Err(Error::new(
                Code::Usage,
                format!(
                    "{command} takes its data directory only from --data-dir on the command line \
                     (not AGENT_TASK_DATA_DIR or a default)"
                ),
            ));
        }
        self.data_dir()
    }

    /// The token text from `--token-file` / `AGENT_TASK_TOKEN_FILE`.
    pub fn token(&self) -> Result<String> {
        let p = self.token_file.as_deref().ok_or_else(|| {
            Error::new(
                Code::Unauthorized,
                "no token: pass --token-file or set AGENT_TASK_TOKEN_FILE",
            )
        })?;
        crate::workflow::service::admin::read_token_file(p)
    }

    /// The `--token-file` / `AGENT_TASK_TOKEN_FILE` path, as given.
    pub fn token_file(&self) -> Option<&std::path::Path> {
        self.token_file.as_deref()
    }
}

impl Ctx {
    /// The context of a shell completion request: the data directory and
    /// token file from their variables (or the default directory), since
    /// the line being completed is not parsed.
    pub(crate) fn for_completion() -> Result<Ctx> {
        use super::authority::{DATA_DIR_VAR, TOKEN_FILE_VAR};
        let var = |name: &str| {
            crate::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        Ok(Ctx {
            data_dir: var(DATA_DIR_VAR).or_else(default_data_dir),
            data_dir_on_command_line: false,
            lock_timeout: Duration::from_millis(0),
            clock: process_clock()?,
            token_file: var(TOKEN_FILE_VAR),
        })
    }
}

/// `$XDG_DATA_HOME/agent-task`, else `$HOME/.local/share/agent-task`.
fn default_data_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| {
        crate::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    nonempty("XDG_DATA_HOME")
        .map(|p| p.join("agent-task"))
        .or_else(|| nonempty("HOME").map(|h| h.join(".local/share/agent-task")))
}
