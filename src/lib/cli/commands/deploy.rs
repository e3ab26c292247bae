//! `deploy check` and `deploy config` (docs/security.md,
//! "Privilege-separated deployment").

use super::{Reply, to_value};
use crate::cli::ctx::Ctx;
use crate::deploy::{check, config};
use crate::error::{Code, Error, Result};
use std::path::PathBuf;

/// `deploy` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum DeployCmd {
    /// Operator (as root): check the privilege-separated set-up and print each
    /// check with its fix (owners and modes, the wrapper's pins, the sudoers
    /// rule, what the agent's user can open, the endpoint, the managed hook).
    /// Changes nothing; exits 1 when a check failed.
    Check(Box<CheckArgs>),
    /// Operator: write serve's workspace config from the registered repositories
    /// and installed requirements (0600, atomic); an identical file is left alone,
    /// another one replaced only with --force.
    Config(ConfigArgs),
}

/// Arguments of `deploy check` (the data directory is the global --data-dir,
/// on the command line).
#[derive(Debug, clap::Args)]
pub struct CheckArgs {
    /// The operator's collector directory (signing key and retained state).
    #[arg(long, value_name = "DIR")]
    collector_dir: PathBuf,
    /// The operator's user.
    #[arg(long, value_name = "USER")]
    operator_user: String,
    /// The agent's user.
    #[arg(long, value_name = "USER")]
    agent_user: String,
    /// The collect wrapper.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/usr/local/sbin/agent-task-collect"
    )]
    wrapper: PathBuf,
    /// The sudoers rule of the wrapper.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/sudoers.d/agent-task-collect"
    )]
    sudoers: PathBuf,
    /// serve's workspace config, to check too.
    #[arg(long, value_name = "FILE")]
    workspace_config: Option<PathBuf>,
    /// The workspace endpoint to try with the agent's token (needs --repository,
    /// --profile and --token-file).
    #[arg(long, value_name = "URL", requires_all = ["repository", "profile", "token_file"])]
    endpoint: Option<String>,
    /// The endpoint's repository id.
    #[arg(long, value_name = "ID")]
    repository: Option<String>,
    /// The profile id.
    #[arg(long, value_name = "ID")]
    profile: Option<String>,
    /// The agent's token file (opened as the agent's user when run as root).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Claude Code's base managed settings file; the `managed-settings.d/*.json`
    /// drop-ins beside it are read too.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/claude-code/managed-settings.json"
    )]
    claude_managed: PathBuf,
    /// Codex's requirements file.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/codex/requirements.toml"
    )]
    codex_requirements: PathBuf,
    /// The managed hook's uid map.
    #[arg(
        long,
        value_name = "FILE",
        default_value = "/etc/agent-task/hooks.json"
    )]
    hook_map: PathBuf,
    /// Do not run a check or a group of checks (users, paths, config, wrapper,
    /// sudoers, agent, endpoint, hooks); reported as skipped. Repeatable.
    #[arg(long, value_name = "NAME")]
    skip: Vec<String>,
}

/// Arguments of `deploy config` (the data directory is the global --data-dir).
#[derive(Debug, clap::Args)]
pub struct ConfigArgs {
    /// Where to write the config (serve --workspace-config FILE).
    #[arg(long, value_name = "FILE")]
    out: PathBuf,
    /// Replace a file that holds another config.
    #[arg(long)]
    force: bool,
}

pub(super) fn run(ctx: &Ctx, c: DeployCmd) -> Result<Reply> {
    match c {
        DeployCmd::Check(a) => {
            let a = *a;
            let endpoint = match (a.endpoint, a.repository, a.profile, a.token_file) {
                (Some(url), Some(repository), Some(profile), Some(token_file)) => {
                    Some(check::EndpointCheck {
                        url,
                        repository,
                        profile,
                        token_file,
                    })
                }
                (None, ..) => None,
                _ => {
                    return Err(Error::new(
                        Code::Usage,
                        "--endpoint needs --repository, --profile and --token-file",
                    ));
                }
            };
            let report = check::run(&check::CheckRequest {
                data_dir: ctx
                    .data_dir_from_command_line("deploy check")?
                    .to_path_buf(),
                collector_dir: a.collector_dir,
                operator_user: a.operator_user,
                agent_user: a.agent_user,
                wrapper: a.wrapper,
                sudoers: a.sudoers,
                workspace_config: a.workspace_config,
                endpoint,
                hooks: check::HookPaths {
                    claude: a.claude_managed,
                    codex: a.codex_requirements,
                    map: a.hook_map,
                },
                skip: a.skip,
            })?;
            Ok(Reply {
                exit_code: if report.ok { 0 } else { 1 },
                value: to_value(&report)?,
                text: None,
            })
        }
        DeployCmd::Config(a) => {
            let data_dir = ctx.data_dir()?;
            let data_dir =
                std::path::absolute(data_dir).map_err(|e| Error::io("resolve", data_dir, e))?;
            to_value(&config::write(&config::ConfigRequest {
                data_dir,
                out: a.out,
                force: a.force,
            })?)
            .map(Reply::from)
        }
    }
}
