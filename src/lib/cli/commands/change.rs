//! `change open` and `checkpoint`.

use super::to_value;
use crate::cli::authority::{self, Authority};
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::workflow::service::change::ChangeSel;
use crate::workflow::service::ops::{self, AgentCtx};
use serde_json::Value;
use std::path::PathBuf;

/// Where an agent command runs: a workspace endpoint (the agent needs only
/// its token file), or by default the local data directory. Each value is
/// its flag, else its variable (`crate::cli::authority`, the one resolver).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct EndpointArgs {
    /// Run through this workspace endpoint (base URL, `http://host:port`)
    /// instead of a local data directory: the token file is all the agent
    /// needs (docs/workspace-http.md) [env: AGENT_TASK_ENDPOINT].
    #[arg(long, value_name = "URL")]
    pub endpoint: Option<String>,
    /// Repository id of the workspace profile (with the endpoint) [env:
    /// AGENT_TASK_REPOSITORY].
    #[arg(long)]
    pub repository: Option<String>,
    /// Profile id of the workspace profile (with the endpoint) [env:
    /// AGENT_TASK_PROFILE].
    #[arg(long)]
    pub profile: Option<String>,
}

impl EndpointArgs {
    /// The endpoint these flags and the `AGENT_TASK_*` variables name, if any.
    pub(crate) fn authority(&self) -> Result<Option<Authority>> {
        authority::resolve(
            self.endpoint.as_deref(),
            self.repository.as_deref(),
            self.profile.as_deref(),
        )
    }

    /// The endpoint client for the token of `ctx`, when an endpoint is named.
    pub(crate) fn client(&self, ctx: &Ctx) -> Result<Option<crate::remote::Client>> {
        self.authority()?
            .map(|a| crate::remote::Client::new(a.endpoint(), ctx.token()?))
            .transpose()
    }
}

/// `change` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ChangeCmd {
    /// Open a Change for the token's actor: on a workspace of this host
    /// (--repo, --profile, --workspace), or through a workspace endpoint
    /// (--endpoint, --repository, --profile), where the workspace stays the
    /// client's and is never named.
    Open {
        /// Repository id (local).
        #[arg(long)]
        repo: Option<String>,
        /// Profile id (local: the native profile; with the endpoint: the
        /// workspace profile) [env: AGENT_TASK_PROFILE].
        #[arg(long)]
        profile: Option<String>,
        /// Workspace directory (local).
        #[arg(long, value_name = "PATH")]
        workspace: Option<PathBuf>,
        /// Open through this workspace endpoint (base URL) [env: AGENT_TASK_ENDPOINT].
        #[arg(long, value_name = "URL")]
        endpoint: Option<String>,
        /// Repository id of the workspace profile (with the endpoint) [env:
        /// AGENT_TASK_REPOSITORY].
        #[arg(long)]
        repository: Option<String>,
        /// Idempotency key (with the endpoint): a retry returns the Change this request opened
        /// (default: a fresh one, printed as `request_id` for a retry to reuse).
        #[arg(long)]
        request_id: Option<String>,
        /// The Change's title: the landed commit's subject line (control characters
        /// stripped, at most 200 characters).
        #[arg(long)]
        title: Option<String>,
        /// The Change's body: the landed commit's message body (control characters
        /// stripped, at most 16 KiB; lines shaped like git trailers are indented).
        #[arg(long)]
        body: Option<String>,
        /// The Change's group: several Changes made for the same work
        /// (best-of-N) share one label, and `ls` shows them side by side
        /// ([A-Za-z0-9._:@/-], at most 128 characters).
        #[arg(long, value_name = "LABEL")]
        group: Option<String>,
    },
}

/// Names a Change: by id or by its workspace.
#[derive(Debug, clap::Args)]
pub struct ChangeSelArgs {
    /// Change id.
    #[arg(long)]
    pub change: Option<String>,
    /// Workspace directory of the Change.
    #[arg(long, value_name = "PATH")]
    pub workspace: Option<PathBuf>,
}

impl ChangeSelArgs {
    pub(crate) fn sel(&self) -> Result<ChangeSel> {
        match (&self.change, &self.workspace) {
            (Some(_), Some(_)) => Err(Error::new(
                Code::Usage,
                "name the Change by --change or by --workspace, not both",
            )),
            (Some(c), None) => Ok(ChangeSel::Id(c.clone())),
            (None, Some(w)) => Ok(ChangeSel::Workspace(w.clone())),
            (None, None) => std::env::current_dir()
                .map(ChangeSel::Workspace)
                .map_err(|_| Error::new(Code::Usage, "pass --change or --workspace")),
        }
    }
}

pub(super) fn with_agent<T>(ctx: &Ctx, f: impl FnOnce(&AgentCtx<'_>) -> Result<T>) -> Result<T> {
    let token = ctx.token()?;
    let cx = AgentCtx {
        root: ctx.data_dir()?,
        timeout: ctx.lock_timeout,
        clock: ctx.clock.as_ref(),
        token: &token,
        writer: None,
        scope: None,
    };
    f(&cx)
}

pub(super) fn change(ctx: &Ctx, c: ChangeCmd) -> Result<Value> {
    let ChangeCmd::Open {
        repo,
        profile,
        workspace,
        endpoint,
        repository,
        request_id,
        title,
        body,
        group,
    } = c;
    let profile = authority::pick(profile.as_deref(), authority::PROFILE_VAR).ok_or_else(|| {
        Error::new(
            Code::Usage,
            "change open needs --profile (or AGENT_TASK_PROFILE)",
        )
    })?;
    let remote = match authority::pick(endpoint.as_deref(), authority::ENDPOINT_VAR) {
        Some(e) if repo.is_some() => {
            return Err(authority::conflict(
                &e,
                "--repo",
                "names a repository of this host's data directory",
            ));
        }
        Some(e) if workspace.is_some() => {
            return Err(authority::conflict(
                &e,
                "--workspace",
                "opens a Change on a local workspace (the endpoint never sees the client's paths)",
            ));
        }
        Some(_) => authority::resolve(
            endpoint.as_deref(),
            repository.as_deref(),
            Some(&profile.value),
        )?,
        None => None,
    };
    match remote {
        Some(a) => {
            let client = crate::remote::Client::new(a.endpoint(), ctx.token()?)?;
            let mut rid = request_id.unwrap_or_default();
            let generated = fresh_request_id(&mut rid)?;
            let out = client.op(
                &crate::workflow::service::facade::OperationRequest::ChangeOpen(
                    crate::workflow::service::facade::ChangeOpenRequest {
                        request_id: Some(rid),
                        title,
                        body,
                        group,
                    },
                ),
            )?;
            Ok(with_request_id(out, generated))
        }
        None => {
            if repository.is_some() || request_id.is_some() {
                return Err(Error::new(
                    Code::Usage,
                    "--repository and --request-id go with --endpoint (or AGENT_TASK_ENDPOINT)",
                ));
            }
            let (Some(repo), Some(workspace)) = (repo, workspace) else {
                return Err(Error::new(
                    Code::Usage,
                    "change open needs --repo and --workspace (or --endpoint and --repository)",
                ));
            };
            with_agent(ctx, |cx| {
                to_value(&ops::change_open(
                    cx,
                    &repo,
                    &profile.value,
                    &workspace,
                    (title.as_deref(), body.as_deref(), group.as_deref()),
                )?)
            })
        }
    }
}

/// A Change, on this host or through an endpoint.
#[derive(Debug, clap::Args)]
pub struct AgentChangeArgs {
    /// Which Change.
    #[command(flatten)]
    pub sel: ChangeSelArgs,
    /// Through a workspace endpoint (name the Change with --change).
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// Arguments of `checkpoint`.
#[derive(Debug, clap::Args)]
pub struct CheckpointArgs {
    /// Which Change.
    #[command(flatten)]
    pub sel: ChangeSelArgs,
    /// Refuse (`revision_too_large`, before reading any file) a workspace
    /// whose files add up to more than this many bytes.
    #[arg(long, value_name = "BYTES", default_value_t = crate::workflow::service::snapshot::DEFAULT_MAX_REVISION_BYTES)]
    pub max_revision_bytes: u64,
    /// Checkpoint through a workspace endpoint: the workspace is walked and
    /// hashed here, only the blobs the authority lacks are uploaded
    /// (--change names the Change; --workspace or the current directory is
    /// the tree).
    #[command(flatten)]
    pub remote: EndpointArgs,
    /// Set the Change's title (first line) and body (the rest): the landed
    /// commit's message.
    #[arg(long, short = 'm')]
    pub message: Option<String>,
    /// Mint a new subject (fresh task ids) even when the tree is the
    /// current subject's revision and that subject still has live or
    /// pending tasks.
    #[arg(long)]
    pub new_subject: bool,
}

pub(super) fn checkpoint(ctx: &Ctx, a: CheckpointArgs) -> Result<Value> {
    // Files hashed and blobs sent, on stderr at a terminal.
    crate::progress::enable_at_terminal();
    let _bar = crate::progress::Bar::start("checkpoint");
    if let Some(auth) = a.remote.authority()? {
        let change = a
            .sel
            .change
            .clone()
            .ok_or_else(|| auth.needs("--change", "the endpoint knows no workspace path"))?;
        let client = crate::remote::Client::new(auth.endpoint(), ctx.token()?)?;
        let ws = match &a.sel.workspace {
            Some(w) => w.clone(),
            None => {
                std::env::current_dir().map_err(|_| Error::new(Code::Usage, "pass --workspace"))?
            }
        };
        let canon = std::fs::canonicalize(&ws).map_err(|e| Error::io("resolve", &ws, e))?;
        let cache = canon.to_str().and_then(crate::remote::cache::path_for);
        return client.checkpoint(
            &change,
            &canon,
            a.max_revision_bytes,
            cache.as_deref(),
            (a.new_subject, a.message.as_deref()),
        );
    }
    let sel = resolve_sel(ctx, &a.remote, a.sel.sel()?)?;
    with_agent(ctx, |cx| {
        to_value(&ops::checkpoint(
            cx,
            &sel,
            a.max_revision_bytes,
            &crate::workflow::service::change::CheckpointOptions {
                message: a.message,
                new_subject: a.new_subject,
            },
        )?)
    })
}

/// A Change selector with its id prefix resolved (see [`resolve`]).
pub(super) fn resolve_sel(
    ctx: &Ctx,
    remote: &EndpointArgs,
    sel: crate::workflow::service::change::ChangeSel,
) -> Result<crate::workflow::service::change::ChangeSel> {
    use crate::workflow::service::change::{ChangeSel, IdKind};
    Ok(match sel {
        ChangeSel::Id(mut id) => {
            resolve(ctx, remote, IdKind::Change, &mut id)?;
            ChangeSel::Id(id)
        }
        other => other,
    })
}

/// Replaces a Change, task or attempt id given on the command line by the
/// one whole id it is a unique prefix of, among the ids the caller may
/// view in the local data directory. Through an endpoint (no read lists
/// ids there) and for an id of the whole form, the id goes as it is.
pub(super) fn resolve(
    ctx: &Ctx,
    remote: &EndpointArgs,
    kind: crate::workflow::service::change::IdKind,
    id: &mut String,
) -> Result<()> {
    if kind.is_full(id) || remote.authority()?.is_some() {
        return Ok(());
    }
    *id = with_agent(ctx, |cx| {
        crate::workflow::service::ops::resolve_id(cx, kind, id)
    })?;
    Ok(())
}

/// A fresh idempotency key in `id` when the command line gave none (clap
/// leaves it empty); the key, to print, when it generated one.
pub(super) fn fresh_request_id(id: &mut String) -> Result<Option<String>> {
    if !id.is_empty() {
        return Ok(None);
    }
    *id = crate::wire::random_id("req")?;
    Ok(Some(id.clone()))
}

/// `out` with the generated request id as its `request_id` member, so that
/// a retry can name it (`--request-id`); `out` as it is when the caller
/// named the id (the output keeps its shape).
pub(super) fn with_request_id(out: Value, generated: Option<String>) -> Value {
    match (out, generated) {
        (Value::Object(mut m), Some(id)) => {
            m.insert("request_id".into(), Value::String(id));
            Value::Object(m)
        }
        (out, _) => out,
    }
}
