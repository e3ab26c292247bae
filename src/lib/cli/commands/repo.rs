//! `repo add`, `repo list` and `repo forge set|show|remove`.

use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::workflow::service::admin;
use crate::workflow::service::admin as write;
use crate::workflow::service::forge::{ForgeCredential, ForgeKind, ForgeSetRequest};
use serde_json::Value;
use std::path::PathBuf;

/// `repo` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum RepoCmd {
    /// Register a source directory as a repository; its tree becomes the target head.
    Add {
        /// Repository id (e.g. `acme/api`).
        id: String,
        /// Source directory.
        #[arg(long, value_name = "PATH")]
        source: PathBuf,
        /// Protected target name.
        #[arg(long, default_value = "main")]
        target: String,
    },
    /// List repositories (with each one's forge, when set).
    List,
    /// A repository's forge: where `land --push` pushes and statuses go (docs/forge.md).
    #[command(subcommand)]
    Forge(ForgeCmd),
}

/// The forge's API family.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum KindArg {
    /// GitHub or GitHub Enterprise Server.
    Github,
    /// GitLab.
    Gitlab,
}

/// `repo forge` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ForgeCmd {
    /// Set a repository's forge (replacing any earlier one); the credential is a file, checked now and on every use.
    Set {
        /// Repository id.
        #[arg(long)]
        repo: String,
        /// The forge's kind.
        #[arg(long, value_enum)]
        kind: KindArg,
        /// API base URL (https; http only on a loopback host), e.g. `https://api.github.com`.
        #[arg(long, value_name = "URL")]
        api_url: String,
        /// `OWNER/NAME` (GitHub) or the project's id or full path (GitLab).
        #[arg(long, value_name = "PROJECT")]
        project: String,
        /// The git remote landed commits are pushed to (https; http only on a loopback host; no credentials in it).
        #[arg(long, value_name = "GIT_URL")]
        remote_url: String,
        /// A token file (absolute, 0600, owned by you): never copied, never printed.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["app_id", "app_key_file", "installation_id"], required_unless_present = "app_id")]
        token_file: Option<PathBuf>,
        /// GitHub App id (with --app-key-file and --installation-id): installation tokens are minted per use.
        #[arg(long, value_name = "N", requires_all = ["app_key_file", "installation_id"])]
        app_id: Option<u64>,
        /// The GitHub App's private key (PEM; absolute, 0600, owned by you).
        #[arg(long, value_name = "FILE", requires = "app_id")]
        app_key_file: Option<PathBuf>,
        /// The GitHub App's installation id on the repository's owner.
        #[arg(long, value_name = "N", requires = "app_id")]
        installation_id: Option<u64>,
        /// Publish commit statuses (context `agent-task/<profile>`): `land --push` posts success
        /// on the landed commit, its tree checked, before it pushes the target.
        #[arg(long)]
        forge_status: bool,
        /// The statuses' target URL (https; http only on a loopback host).
        #[arg(long, value_name = "URL", requires = "forge_status")]
        status_target_url: Option<String>,
    },
    /// Show a repository's forge (paths and ids, never a secret).
    Show {
        /// Repository id.
        #[arg(long)]
        repo: String,
    },
    /// Remove a repository's forge.
    Remove {
        /// Repository id.
        #[arg(long)]
        repo: String,
    },
}

pub(super) fn run(ctx: &Ctx, c: RepoCmd) -> Result<Value> {
    match c {
        RepoCmd::Add { id, source, target } => to_value(&write::repo_add(
            ctx.data_dir()?,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &admin::RepoAddRequest {
                repo_id: id,
                source,
                target,
            },
        )?),
        RepoCmd::List => {
            let repositories = crate::workflow::service::forge::repo_list(ctx.data_dir()?)?;
            Ok(serde_json::to_value(Repositories { repositories })?)
        }
        RepoCmd::Forge(f) => forge(ctx, f),
    }
}

fn forge(ctx: &Ctx, c: ForgeCmd) -> Result<Value> {
    let root = ctx.data_dir()?;
    let forge = match c {
        ForgeCmd::Set {
            repo,
            kind,
            api_url,
            project,
            remote_url,
            token_file,
            app_id,
            app_key_file,
            installation_id,
            forge_status,
            status_target_url,
        } => {
            let credential = match (token_file, app_id, app_key_file, installation_id) {
                (Some(path), None, None, None) => ForgeCredential::TokenFile { path },
                (None, Some(app_id), Some(key_file), Some(installation_id)) => {
                    ForgeCredential::GithubApp {
                        app_id,
                        key_file,
                        installation_id,
                    }
                }
                _ => {
                    return Err(Error::new(
                        Code::Usage,
                        "name one credential: --token-file, or --app-id with --app-key-file and --installation-id",
                    ));
                }
            };
            let kind = match kind {
                KindArg::Github => ForgeKind::Github,
                KindArg::Gitlab => ForgeKind::Gitlab,
            };
            crate::forge::set(
                root,
                ctx.lock_timeout,
                ctx.clock.as_ref(),
                &ForgeSetRequest {
                    repo_id: repo,
                    kind,
                    api_url,
                    project,
                    remote_url,
                    credential,
                    publish_status: forge_status,
                    status_target_url,
                },
            )?
        }
        ForgeCmd::Show { repo } => crate::workflow::service::forge::show(root, &repo)?,
        ForgeCmd::Remove { repo } => crate::workflow::service::forge::remove(
            root,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &repo,
        )?,
    };
    Ok(serde_json::to_value(Wrapped { forge })?)
}

/// `forge` subcommands: the jobs of the repositories' forges.
#[derive(Debug, clap::Subcommand)]
pub enum ForgeJobCmd {
    /// One pass of the commit-status publisher: post the outbox's pending statuses whose commit
    /// is on the forge (exit 75 when the forge refused one; it stays pending).
    Publish,
    /// After forge-side merges: fetch the forge's target, write and push the attestation note of
    /// each new commit whose tree is a qualified revision (recording its landing), fast-forward
    /// the local target, close the requests of Changes landed without a push.
    Sync {
        /// Repository id.
        #[arg(long)]
        repo: String,
    },
    /// git's credential helper for a repository's forge remote (gitcredentials(7)): `get`
    /// answers from the operator's credential file; `store` and `erase` do nothing.
    #[command(hide = true)]
    Credential {
        /// Repository id.
        #[arg(long)]
        repo: String,
        /// The helper action git passes: get, store or erase.
        action: String,
    },
}

pub(super) fn forge_job(ctx: &Ctx, c: ForgeJobCmd) -> Result<super::Reply> {
    match c {
        ForgeJobCmd::Publish => {
            let r = crate::forge::publish(ctx.data_dir()?, ctx.lock_timeout, ctx.clock.as_ref())?;
            Ok(super::Reply {
                text: None,
                exit_code: if r.failed > 0 { 75 } else { 0 },
                value: to_value(&r)?,
            })
        }
        ForgeJobCmd::Sync { repo } => {
            let r =
                crate::forge::sync(ctx.data_dir()?, ctx.lock_timeout, ctx.clock.as_ref(), &repo)?;
            Ok(to_value(&r)?.into())
        }
        ForgeJobCmd::Credential { repo, action } => {
            let text = crate::forge::credential_helper(
                ctx.data_dir()?,
                ctx.clock.as_ref(),
                &repo,
                &action,
                &mut std::io::stdin().lock(),
            )?;
            Ok(super::Reply::text(text))
        }
    }
}

/// `repo list`'s output.
#[derive(serde::Serialize)]
struct Repositories<T: serde::Serialize> {
    repositories: T,
}

/// `repo forge`'s output.
#[derive(serde::Serialize)]
struct Wrapped<T: serde::Serialize> {
    forge: T,
}

/// `propose`'s arguments.
#[derive(Debug, clap::Args)]
pub struct ProposeArgs {
    /// Repository id.
    #[arg(long)]
    pub repo: String,
    /// Change id, or a unique prefix of one (`ch_` may be left out).
    #[arg(long)]
    pub change: String,
    /// Propose a current subject that does not qualify yet (no note; the request says so), so
    /// that its pending and failure statuses have a commit to be published on.
    #[arg(long)]
    pub unqualified: bool,
    /// The commit's author and committer, "Name <email>" (default: the operator's git identity
    /// in the repository).
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,
}

pub(super) fn propose(ctx: &Ctx, a: ProposeArgs) -> Result<Value> {
    let root = ctx.data_dir()?;
    let change_id = crate::workflow::service::ops::resolve_id_operator(
        root,
        crate::workflow::service::change::IdKind::Change,
        &a.change,
    )?;
    to_value(&crate::forge::propose(
        root,
        ctx.lock_timeout,
        ctx.clock.as_ref(),
        &crate::workflow::service::propose::ProposeRequest {
            repo_id: a.repo,
            change_id,
            allow_unqualified: a.unqualified,
            author: a.author,
        },
    )?)
}
