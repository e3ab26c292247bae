//! `install-stop`, `init-repo` (and the Stop hooks).

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::hooks::install::{self, Agent, InstallStopRequest, Remote};
use serde_json::Value;
use std::path::PathBuf;

/// Arguments of `install-stop`.
#[derive(Debug, clap::Args)]
pub struct InstallStopArgs {
    /// Which agent's settings to edit.
    #[arg(long, value_enum)]
    pub agent: Agent,
    /// The workspace holding `.claude/` or `.codex/`.
    #[arg(long, value_name = "PATH")]
    pub workspace: PathBuf,
    /// The Change the hook guards.
    #[arg(long)]
    pub change: String,
    /// Remote workspace endpoint (base URL) the hook asks for qualification.
    #[arg(long, value_name = "URL", requires_all = ["repository", "profile"])]
    pub endpoint: Option<String>,
    /// Repository id of the workspace profile (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub repository: Option<String>,
    /// Profile id (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub profile: Option<String>,
    /// Codex only: write the repository's .codex/hooks.json (kept out of
    /// revisions through git's info/exclude) instead of the user-level
    /// $CODEX_HOME/hooks.json.
    #[arg(long)]
    pub repo_hooks: bool,
}

/// Arguments of `init-repo`.
#[derive(Debug, clap::Args)]
pub struct InitRepoArgs {
    /// The workspace whose instruction files get the managed block.
    #[arg(long, value_name = "PATH")]
    pub workspace: PathBuf,
}

fn absolute(p: &std::path::Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io("resolve", p, e))
}

pub(super) fn install_stop(ctx: &Ctx, a: InstallStopArgs) -> Result<Value> {
    let token_file = ctx.token_file().ok_or_else(|| {
        Error::new(
            Code::Usage,
            "install-stop needs --token-file (an absolute path) for the hook",
        )
    })?;
    if !token_file.is_absolute() {
        return Err(Error::new(
            Code::Usage,
            "the token file must be an absolute path",
        ));
    }
    let executable = std::env::current_exe()
        .map_err(|e| Error::new(Code::Io, format!("cannot locate agent-task: {e}")))?;
    // Through an endpoint the data directory goes into the hook only when
    // this user can read it (a privilege-separated agent cannot: the hook
    // then reads its Change through the endpoint).
    let data_dir = match (&a.endpoint, ctx.data_dir()) {
        (None, d) => Some(absolute(d?)?),
        (Some(_), Ok(d)) if crate::workflow::authority::admin::open_read(d).is_ok() => {
            Some(absolute(d)?)
        }
        (Some(_), _) => None,
    };
    let req = InstallStopRequest {
        agent: a.agent,
        workspace: absolute(&a.workspace)?,
        change: a.change,
        data_dir,
        token_file: token_file.to_path_buf(),
        remote: match (a.endpoint, a.repository, a.profile) {
            (Some(endpoint), Some(repository), Some(profile)) => Some(Remote {
                endpoint,
                repository,
                profile,
            }),
            _ => None,
        },
        executable,
        repo_hooks: a.repo_hooks,
        codex_home: codex_home(),
    };
    to_value(&install::install_stop(&req)?)
}

/// `$CODEX_HOME`, else `$HOME/.codex` (absolute only).
fn codex_home() -> Option<PathBuf> {
    let nonempty = |k: &str| {
        crate::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    nonempty("CODEX_HOME")
        .or_else(|| nonempty("HOME").map(|h| h.join(".codex")))
        .filter(|p| p.is_absolute())
}

pub(super) fn init_repo(a: InitRepoArgs) -> Result<Value> {
    to_value(&crate::hooks::init_repo::init_repo(&a.workspace)?)
}

/// Arguments of `task-stop` and `task-codex-stop`.
#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// The Change the hook guards.
    pub change: String,
    /// The workspace the agent edits (the Change's workspace).
    #[arg(long, value_name = "PATH")]
    pub workspace: PathBuf,
    /// Ask qualification from a workspace endpoint (base URL) instead of
    /// computing it from --data-dir (30 s limit).
    #[arg(long, value_name = "URL", requires_all = ["repository", "profile"])]
    pub endpoint: Option<String>,
    /// Repository id of the workspace profile (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub repository: Option<String>,
    /// Profile id (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub profile: Option<String>,
}

pub(super) fn stop(
    ctx: &Ctx,
    flavor: crate::hooks::stop::Flavor,
    a: StopArgs,
) -> Result<super::Reply> {
    use crate::hooks::stop;
    // An unreadable stdin decodes as malformed (exit 1).
    let stdin = stop::read_stdin().unwrap_or_default();
    let req = stop::StopRequest {
        flavor,
        change: a.change,
        workspace: a.workspace,
        data_dir: ctx.data_dir().ok().map(std::path::Path::to_path_buf),
        token_file: ctx.token_file().map(std::path::Path::to_path_buf),
        remote: match (a.endpoint, a.repository, a.profile) {
            (Some(endpoint), Some(repository), Some(profile)) => Some(stop::Remote {
                endpoint,
                repository,
                profile,
            }),
            _ => None,
        },
        stdin: &stdin,
        clock: ctx.clock.as_ref(),
        timeout: ctx.lock_timeout,
        counter_dir: None,
    };
    let out = stop::run(&req);
    if let Some(line) = &out.stderr {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{line}");
        }
    }
    Ok(super::Reply {
        value: out.stdout,
        exit_code: out.exit_code,
    })
}
