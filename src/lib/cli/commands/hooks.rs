//! `install-stop`, `init-repo` (and the Stop hooks).

use super::change::EndpointArgs;
use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::hooks::install::{self, Agent, InstallStopRequest, Remote};
use crate::hooks::managed::ManagedRequest;
use serde_json::Value;
use std::path::PathBuf;

/// Arguments of `install-stop`.
#[derive(Debug, clap::Args)]
pub struct InstallStopArgs {
    /// Which agent's settings to edit (with --managed: only that agent's
    /// managed file; both without it).
    #[arg(long, value_enum)]
    pub agent: Option<Agent>,
    /// The workspace holding `.claude/` or `.codex/` (not with --managed).
    #[arg(long, value_name = "PATH")]
    pub workspace: Option<PathBuf>,
    /// The Change the hook guards (not with --managed).
    #[arg(long)]
    pub change: Option<String>,
    /// The endpoint the hook asks (probed now with the token: an endpoint
    /// that refuses it, is down or does not know the Change on that
    /// repository and profile is refused and nothing is written).
    #[command(flatten)]
    pub remote: EndpointArgs,
    /// Codex only: write the repository's .codex/hooks.json (kept out of
    /// revisions through git's info/exclude) instead of the user-level
    /// $CODEX_HOME/hooks.json.
    #[arg(long)]
    pub repo_hooks: bool,
    /// Root only: write one machine-wide Stop hook into Claude Code's
    /// managed settings (a drop-in /etc/claude-code/managed-settings.d/agent-task.json)
    /// and Codex's /etc/codex/requirements.toml, running `task-stop
    /// --managed`, which finds the invoking user's Change through the
    /// root-owned map /etc/agent-task/hooks.json (docs/hooks.md).
    #[arg(long, conflicts_with_all = ["workspace", "change", "repo_hooks"])]
    pub managed: bool,
    /// With --managed: also set allowManagedHooksOnly / allow_managed_hooks_only,
    /// which disables every non-managed hook of every user of the machine
    /// (with --uninstall: remove them again).
    #[arg(long, requires = "managed")]
    pub exclusive: bool,
    /// With --managed: remove the hook (the file too when nothing else is left in it).
    #[arg(long, requires = "managed")]
    pub uninstall: bool,
    /// With --managed: Claude Code's managed settings file to edit instead
    /// of the drop-in.
    #[arg(long, value_name = "FILE", requires = "managed")]
    pub settings_file: Option<PathBuf>,
    /// With --managed: Codex's requirements file to edit instead of
    /// /etc/codex/requirements.toml.
    #[arg(long, value_name = "FILE", requires = "managed")]
    pub requirements_file: Option<PathBuf>,
    /// With --managed: the uid map the hook reads, when not /etc/agent-task/hooks.json.
    #[arg(long, value_name = "FILE", requires = "managed")]
    pub hooks_map: Option<PathBuf>,
}

/// Arguments of `init-repo`.
#[derive(Debug, clap::Args)]
pub struct InitRepoArgs {
    /// The workspace whose instruction files get the managed block.
    #[arg(long, value_name = "PATH")]
    pub workspace: PathBuf,
    /// Write the instructions of an agent that reaches its authority only
    /// through this endpoint (its commands name the Change with --change;
    /// collection goes through the operator's sudo wrapper) [env:
    /// AGENT_TASK_ENDPOINT].
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// With the endpoint form: the sudo wrapper the agent runs `collect` through.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/usr/local/sbin/agent-task-collect"
    )]
    pub collect_wrapper: PathBuf,
}

fn absolute(p: &std::path::Path) -> Result<PathBuf> {
    std::path::absolute(p).map_err(|e| Error::io("resolve", p, e))
}

fn executable() -> Result<PathBuf> {
    std::env::current_exe()
        .map_err(|e| Error::new(Code::Io, format!("cannot locate agent-task: {e}")))
}

pub(super) fn install_stop(ctx: &Ctx, a: InstallStopArgs) -> Result<Value> {
    if a.managed {
        if a.remote.endpoint.is_some()
            || a.remote.repository.is_some()
            || a.remote.profile.is_some()
        {
            return Err(Error::new(
                Code::Usage,
                "install-stop --managed names no endpoint: the hook reads each user's from the uid map",
            ));
        }
        return to_value(&crate::hooks::managed::install(&ManagedRequest {
            agents: match a.agent {
                Some(x) => vec![x],
                None => vec![Agent::Claude, Agent::Codex],
            },
            executable: executable()?,
            hooks_map: a.hooks_map.as_deref().map(absolute).transpose()?,
            settings_file: a.settings_file.as_deref().map(absolute).transpose()?,
            requirements_file: a.requirements_file.as_deref().map(absolute).transpose()?,
            exclusive: a.exclusive,
            uninstall: a.uninstall,
        })?);
    }
    let (Some(agent), Some(workspace), Some(change)) = (a.agent, a.workspace, a.change) else {
        return Err(Error::new(
            Code::Usage,
            "install-stop needs --agent, --workspace and --change (or --managed)",
        ));
    };
    let token_file = ctx.token_file().ok_or_else(|| {
        Error::new(
            Code::Usage,
            "install-stop needs --token-file (or AGENT_TASK_TOKEN_FILE) for the hook",
        )
    })?;
    if !token_file.is_absolute() {
        return Err(Error::new(
            Code::Usage,
            "the token file must be an absolute path (the hook runs in another directory)",
        ));
    }
    let token_file = token_file.to_path_buf();
    let remote = a.remote.authority()?;
    // Through an endpoint the data directory goes into the hook only when
    // this user can read it (a privilege-separated agent cannot: the hook
    // then reads its Change through the endpoint). Locally it must be
    // readable (checked before anything is written).
    let data_dir = match (&remote, ctx.data_dir()) {
        (None, d) => Some(absolute(d?)?),
        (Some(_), Ok(d)) if crate::workflow::service::admin::open_read(d).is_ok() => {
            Some(absolute(d)?)
        }
        (Some(_), _) => None,
    };
    let req = InstallStopRequest {
        agent,
        workspace: absolute(&workspace)?,
        change,
        data_dir,
        token_file,
        remote: remote.map(|r| Remote {
            endpoint: r.endpoint.value,
            repository: r.repository.value,
            profile: r.profile.value,
        }),
        executable: executable()?,
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
    let endpoint =
        crate::cli::authority::pick(a.endpoint.as_deref(), crate::cli::authority::ENDPOINT_VAR);
    let form = match endpoint {
        None => crate::hooks::init_repo::Form::Local,
        Some(e) => crate::hooks::init_repo::Form::Endpoint {
            endpoint: e.value,
            collect_wrapper: absolute(&a.collect_wrapper)?,
        },
    };
    to_value(&crate::hooks::init_repo::init_repo(&a.workspace, &form)?)
}

/// Arguments of `task-stop` and `task-codex-stop`. The hooks read no
/// `AGENT_TASK_*` variable: every value is on their command line, which
/// `install-stop` writes.
#[derive(Debug, clap::Args)]
pub struct StopArgs {
    /// The Change the hook guards.
    #[arg(required_unless_present = "managed", conflicts_with = "managed")]
    pub change: Option<String>,
    /// The workspace the agent edits (the Change's workspace).
    #[arg(
        long,
        value_name = "PATH",
        required_unless_present = "managed",
        conflicts_with = "managed"
    )]
    pub workspace: Option<PathBuf>,
    /// Ask qualification from a workspace endpoint (base URL) instead of
    /// computing it from --data-dir (30 s limit).
    #[arg(long, value_name = "URL", requires_all = ["repository", "profile"], conflicts_with = "managed")]
    pub endpoint: Option<String>,
    /// Repository id of the workspace profile (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub repository: Option<String>,
    /// Profile id (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub profile: Option<String>,
    /// The machine-wide hook (`install-stop --managed`): the invoking user
    /// (real uid) is looked up in the root-owned map; a user it does not
    /// list passes silently.
    #[arg(long)]
    pub managed: bool,
    /// With --managed: the uid map (default /etc/agent-task/hooks.json).
    #[arg(long, value_name = "FILE", requires = "managed")]
    pub hooks_map: Option<PathBuf>,
}

pub(super) fn stop(
    ctx: &Ctx,
    flavor: crate::hooks::stop::Flavor,
    a: StopArgs,
) -> Result<super::Reply> {
    use crate::hooks::stop;
    // One run reads the authority four times (the check that it opens, the
    // subject before and after, qualification): a kept read connection
    // serves them all, instead of a schema parse and a WAL-index rebuild
    // per open. Each read still begins its own snapshot, and the cache
    // checks the file and its schema on every take (`store::readcache`).
    crate::store::enable_read_cache();
    // An unreadable stdin decodes as malformed (exit 1).
    let stdin = stop::read_stdin().unwrap_or_default();
    let out = if a.managed {
        stop::managed::run(&stop::ManagedStopRequest {
            flavor,
            map: a
                .hooks_map
                .unwrap_or_else(|| PathBuf::from(crate::hooks::managed::HOOKS_MAP)),
            uid: rustix::process::getuid().as_raw(),
            stdin: &stdin,
            clock: ctx.clock.as_ref(),
            timeout: ctx.lock_timeout,
            counter_dir: None,
        })
    } else {
        let (Some(change), Some(workspace)) = (a.change, a.workspace) else {
            return Err(Error::new(
                Code::Usage,
                "name the Change and --workspace, or --managed",
            ));
        };
        stop::run(&stop::StopRequest {
            flavor,
            change,
            workspace,
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
        })
    };
    if let Some(line) = &out.stderr {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{line}");
        }
    }
    Ok(super::Reply {
        text: None,
        value: serde_json::to_value(&out.stdout)
            .map_err(|e| Error::internal(format!("stop hook output: {e}")))?,
        exit_code: out.exit_code,
    })
}
