//! Collector commands: `profile install`, `collector-claim`, `collect`,
//! `retry-upload`, `finalize`, `qualify` and `land`.

use super::change::{AgentChangeArgs, EndpointArgs};
use super::runtime::RuntimeArg;
use super::to_value;
use crate::cli::ctx::Ctx;
use crate::collector::collect::{self, CollectRequest};
use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::workflow::service::admin::{MAX_PIN_FILE, PinnedRuntime, ProfileInstallRequest};
use crate::workflow::service::collect::LocalUpload;
use crate::workflow::service::facade::{ChangeRequest, CollectorClaimRequest, OperationRequest};
use crate::workflow::service::land::LandRequest;
use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};

/// `profile` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum ProfileCmd {
    /// Install an immutable collector profile for one current registration
    /// epoch and step: for a command step, pins the step's command recipe and
    /// the SHA-256 of the runtime identity (probed now, or read from --file);
    /// for a review step (`--runtime review`), copies in the step's criteria,
    /// coverage and budgets and pins the reviewer executable (script and
    /// interpreter, by path and SHA-256), the model and the provider.
    Install {
        /// Registration id (from `enroll`).
        #[arg(long)]
        registration: String,
        /// Step id (a command or review step of the installed requirement).
        #[arg(long)]
        step: String,
        /// Runtime (`review` for a review step).
        #[arg(long)]
        runtime: ProfileRuntimeArg,
        /// `review` only: the reviewer executable to pin (an npm-installed
        /// `claude`, or another program speaking Claude Code's print-mode JSON).
        #[arg(long, value_name = "PATH")]
        executable: Option<PathBuf>,
        /// `review` only: the full model id passed to `--model`.
        #[arg(long, value_name = "ID")]
        model: Option<String>,
        /// `review` only: the provider scope.
        #[arg(long, value_name = "NAME", default_value = "anthropic")]
        provider: ProviderArg,
        /// `review` only: an operator variable passed to the executable
        /// (repeatable; ANTHROPIC_API_KEY, HTTPS_PROXY, NO_PROXY, NODE_EXTRA_CA_CERTS).
        #[arg(long = "env", value_name = "NAME")]
        env: Vec<String>,
        /// A pinned identity `{"basis": "pinned_file", "identity": {…}}` instead of probing now.
        #[arg(long, value_name = "FILE")]
        file: Option<PathBuf>,
        /// The image an `oci` profile runs, pinned by digest
        /// (`NAME@sha256:<64 hex>`; a tag alone is refused). It must already
        /// be in the engine's local store: collections never pull.
        #[arg(long, value_name = "REF")]
        oci_image: Option<String>,
        /// For `bwrap` (probed now): the limits the identity pins.
        #[command(flatten)]
        limits: super::runtime::LimitArgs,
    },
}

/// The runtime a profile pins: a command runtime, or `review`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ProfileRuntimeArg {
    /// bubblewrap (command steps).
    Bwrap,
    /// unshare: refused (it shares the host file system with candidate code).
    Unshare,
    /// podman or docker with --network none (command steps).
    Oci,
    /// The finite review controller (review steps): a pinned Claude Code executable.
    Review,
}

/// The provider scope of a review profile.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum ProviderArg {
    /// Anthropic's API through the pinned Claude Code executable.
    Anthropic,
}

/// Arguments of `collector-claim`.
#[derive(Debug, clap::Args)]
pub struct CollectorClaimArgs {
    /// Task id.
    pub task: String,
    /// Idempotency key (default: a fresh one, printed as `request_id` for a
    /// retry to reuse).
    #[arg(long)]
    pub request_id: Option<String>,
    /// Also write the descriptor to this new 0600 file.
    #[arg(long, value_name = "FILE")]
    pub descriptor_out: Option<PathBuf>,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// `collector` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum CollectorCmd {
    /// Operator (as root): write the sudo wrapper of a privilege-separated
    /// deployment — a root-owned script pinning the binary, --data-dir and
    /// --collector-dir that takes the agent's token and the descriptor on
    /// stdin — and the sudoers rule that lets the agent's user run exactly
    /// it as the operator (checked with visudo -c when --sudoers-out is given).
    Wrapper {
        /// Where to write the wrapper script (in a root-owned directory,
        /// e.g. /usr/local/sbin/agent-task-collect).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The operator's collector directory (signing key and retained state).
        #[arg(long, value_name = "DIR")]
        collector_dir: PathBuf,
        /// The root-owned agent-task binary the wrapper runs.
        #[arg(long, value_name = "FILE")]
        binary: PathBuf,
        /// The operator's user (who owns the data and collector directories).
        #[arg(long, value_name = "USER")]
        operator_user: String,
        /// The agent's user (the only user the rule lets run the wrapper).
        #[arg(long, value_name = "USER")]
        agent_user: String,
        /// Also write the sudoers rule here (e.g. /etc/sudoers.d/agent-task-collect).
        #[arg(long, value_name = "FILE")]
        sudoers_out: Option<PathBuf>,
        /// The operator's `serve` the wrapper's collect uploads to
        /// (`http://HOST:PORT`): it never imports locally, so nothing the
        /// agent starts takes the data directory's lock.
        #[arg(long, value_name = "URL")]
        endpoint: String,
        /// The workspace repository id of the upload route.
        #[arg(long, value_name = "ID")]
        repository: String,
        /// The workspace profile id of the upload route.
        #[arg(long, value_name = "ID")]
        profile: String,
        /// The operator's review credential file (NAME=VALUE lines, the
        /// operator's, mode 0600): a review collect hands the values to the
        /// pinned reviewer only (docs/review.md, "Credentials").
        #[arg(long, value_name = "FILE")]
        review_credential_file: Option<PathBuf>,
    },
}

/// Arguments of `collect`.
#[derive(Debug, clap::Args)]
pub struct CollectArgs {
    /// The descriptor (from `collector-claim`); `-` reads it from stdin.
    #[arg(long, value_name = "FILE")]
    pub descriptor: PathBuf,
    /// Read the agent's token from the first line of stdin, the descriptor
    /// from the rest (with `--descriptor -`): how the sudo wrapper, which
    /// resets the environment, passes them. Excludes --token-file. Marks a
    /// wrapper-started collect: it needs --endpoint and never imports
    /// locally (nothing the agent starts takes the data directory's lock).
    #[arg(long)]
    pub token_on_stdin: bool,
    /// The owner-private collector directory (signing key and retained state).
    #[arg(long, value_name = "DIR")]
    pub collector_dir: PathBuf,
    /// A review collect: the operator's credential file (NAME=VALUE lines,
    /// the caller's, mode 0600) whose values go to the pinned reviewer's
    /// environment only, instead of this process's environment.
    #[arg(long, value_name = "FILE")]
    pub review_credential_file: Option<PathBuf>,
    /// Upload over HTTP to this workspace endpoint instead of importing locally.
    #[command(flatten)]
    pub upload: UploadTarget,
}

/// Where a signed transfer goes: the local authority, or a workspace
/// endpoint's collector-upload route.
#[derive(Debug, clap::Args)]
pub struct UploadTarget {
    /// Workspace endpoint base URL (`http://host:port`).
    #[arg(long, value_name = "URL", requires_all = ["repository", "profile"])]
    pub endpoint: Option<String>,
    /// Repository id of the workspace profile (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub repository: Option<String>,
    /// Profile id (with --endpoint).
    #[arg(long, requires = "endpoint")]
    pub profile: Option<String>,
}

impl UploadTarget {
    fn http(&self, token: &str) -> Option<crate::remote::upload::HttpUpload> {
        match (&self.endpoint, &self.repository, &self.profile) {
            (Some(e), Some(r), Some(p)) => Some(crate::remote::upload::HttpUpload::new(
                e,
                r,
                p,
                token.to_owned(),
            )),
            _ => None,
        }
    }
}

/// Arguments of `retry-upload`.
#[derive(Debug, clap::Args)]
pub struct RetryUploadArgs {
    /// The collector directory.
    #[arg(long, value_name = "DIR")]
    pub collector_dir: PathBuf,
    /// The execution operation id (from the descriptor).
    #[arg(long)]
    pub operation: String,
    /// Resend over HTTP to this workspace endpoint.
    #[command(flatten)]
    pub upload: UploadTarget,
}

/// Arguments of `land`.
#[derive(Debug, clap::Args)]
pub struct LandArgs {
    /// Repository id.
    #[arg(long)]
    pub repo: String,
    /// Change id, or a unique prefix of one (`ch_` may be left out).
    #[arg(long)]
    pub change: String,
    /// Land a revision that changes protected paths (the operator's explicit
    /// override: no receipt is required for it, since its tests are not the
    /// operator's; the landing row and the commit message record it).
    #[arg(long)]
    pub allow_protected_change: bool,
    /// When the target branch is checked out in the repository's (non-bare)
    /// work tree, move its index and files along as `git merge --ff-only`
    /// would (clean work trees only: a dirty one is refused, no ref moved;
    /// no filter drivers run). Without it such a landing is refused before
    /// any ref moves (`worktree_checked_out`).
    #[arg(long)]
    pub update_worktree: bool,
    /// The commit's author and committer, "Name <email>" (default: the
    /// operator's git identity in the repository: user.name, user.email).
    #[arg(long, value_name = "NAME <EMAIL>")]
    pub author: Option<String>,
    /// After landing, push to the repository's forge (`repo forge set`) with git: the commit to
    /// `agent-task/<change>`, the target (fast-forward only), then `refs/notes/agent-task`.
    /// A failed push leaves the landing recorded; run `land --push` again to finish it (once).
    #[arg(long)]
    pub push: bool,
}

fn read_small(p: &Path, max: u64) -> Result<Vec<u8>> {
    let f = std::fs::File::open(p).map_err(|e| Error::io("open", p, e))?;
    let mut b = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut b)
        .map_err(|e| Error::io("read", p, e))?;
    if b.len() as u64 > max {
        return Err(Error::new(
            Code::TooLarge,
            format!("{} is over {max} bytes", p.display()),
        ));
    }
    Ok(b)
}

pub(super) fn profile(ctx: &Ctx, c: ProfileCmd) -> Result<Value> {
    match c {
        ProfileCmd::Install {
            registration,
            step,
            runtime,
            executable,
            model,
            provider,
            env,
            file,
            oci_image,
            limits,
        } => {
            let runtime = match runtime {
                ProfileRuntimeArg::Review => {
                    if file.is_some() || oci_image.is_some() {
                        return Err(Error::new(
                            Code::Usage,
                            "--runtime review takes --executable and --model, not --file or --oci-image",
                        ));
                    }
                    let (Some(executable), Some(model)) = (executable, model) else {
                        return Err(Error::new(
                            Code::Usage,
                            "--runtime review needs --executable PATH and --model ID",
                        ));
                    };
                    let ProviderArg::Anthropic = provider;
                    return to_value(&crate::workflow::service::admin::review_profile_install(
                        ctx.data_dir()?,
                        ctx.lock_timeout,
                        ctx.clock.as_ref(),
                        &crate::workflow::service::admin::ReviewInstallRequest {
                            registration_id: registration,
                            step_id: step,
                            executable,
                            model,
                            provider: crate::collector::review::types::Provider::Anthropic,
                            env,
                        },
                    )?);
                }
                ProfileRuntimeArg::Bwrap => RuntimeArg::Bwrap,
                ProfileRuntimeArg::Unshare => RuntimeArg::Unshare,
                ProfileRuntimeArg::Oci => RuntimeArg::Oci,
            };
            if executable.is_some() || model.is_some() || !env.is_empty() {
                return Err(Error::new(
                    Code::Usage,
                    "--executable, --model and --env are for --runtime review",
                ));
            }
            let pinned = match file {
                Some(f) => Some(crate::wire::json::decode::<PinnedRuntime>(
                    &read_small(&f, MAX_PIN_FILE)?,
                    crate::wire::json::Limits::bytes(MAX_PIN_FILE as usize),
                    crate::error::Code::InvalidInput,
                    "pinned runtime file",
                )?),
                None => None,
            };
            to_value(&crate::workflow::service::admin::profile_install(
                ctx.data_dir()?,
                ctx.lock_timeout,
                ctx.clock.as_ref(),
                &ProfileInstallRequest {
                    registration_id: registration,
                    step_id: step,
                    runtime: runtime.into(),
                    pinned,
                    oci_image,
                    limits: limits.request(),
                },
            )?)
        }
    }
}

pub(super) fn collector_claim(ctx: &Ctx, mut a: CollectorClaimArgs) -> Result<Value> {
    super::change::resolve(
        ctx,
        &a.remote,
        crate::workflow::service::change::IdKind::Task,
        &mut a.task,
    )?;
    let mut rid = a.request_id.unwrap_or_default();
    let generated = super::change::fresh_request_id(&mut rid)?;
    let out = super::task::run(
        ctx,
        &a.remote,
        OperationRequest::CollectorClaim(CollectorClaimRequest {
            task_id: a.task,
            request_id: rid,
        }),
    )?;
    let out = super::change::with_request_id(out, generated);
    if let Some(p) = a.descriptor_out {
        let p = std::path::absolute(&p).map_err(|e| Error::io("resolve", &p, e))?;
        let bytes = serde_json::to_vec_pretty(&out["descriptor"])?;
        if std::fs::symlink_metadata(&p).is_ok() {
            return Err(Error::new(
                Code::Conflict,
                format!("{} already exists", p.display()),
            ));
        }
        private_fs::write_atomic(&p, &bytes)?;
    }
    Ok(out)
}

/// Reads stdin: at most `max` bytes.
fn read_stdin(max: u64) -> Result<Vec<u8>> {
    let mut b = Vec::new();
    std::io::stdin()
        .take(max + 1)
        .read_to_end(&mut b)
        .map_err(|e| Error::new(Code::Io, format!("reading stdin: {e}")))?;
    if b.len() as u64 > max {
        return Err(Error::new(
            Code::TooLarge,
            format!("stdin is over {max} bytes"),
        ));
    }
    Ok(b)
}

/// Splits `token line \n descriptor` (what the sudo wrapper passes on).
fn split_token(stdin: &[u8]) -> Result<(String, &[u8])> {
    let unauth = |m: &str| Error::new(Code::Unauthorized, m.to_owned());
    let cut = stdin
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| unauth("stdin holds no token line before the descriptor"))?;
    let line = &stdin[..cut];
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.is_empty()
        || line.len() as u64 > crate::workflow::service::admin::MAX_TOKEN_FILE
        || !line.iter().all(|b| (0x21..=0x7e).contains(b))
    {
        return Err(unauth(
            "the first line of stdin is not a token (1-512 printable ASCII characters)",
        ));
    }
    Ok((
        String::from_utf8_lossy(line).into_owned(),
        &stdin[cut + 1..],
    ))
}

pub(super) fn collector(ctx: &Ctx, c: CollectorCmd) -> Result<Value> {
    match c {
        CollectorCmd::Wrapper {
            out,
            collector_dir,
            binary,
            operator_user,
            agent_user,
            sudoers_out,
            endpoint,
            repository,
            profile,
            review_credential_file,
        } => to_value(&crate::collector::wrapper::write(
            &crate::collector::wrapper::WrapperRequest {
                out,
                data_dir: ctx
                    .data_dir_from_command_line("collector wrapper")?
                    .to_path_buf(),
                collector_dir,
                binary,
                operator_user,
                agent_user,
                sudoers_out,
                endpoint,
                repository,
                profile,
                review_credential_file,
            },
        )?),
    }
}

pub(super) fn collect(ctx: &Ctx, a: CollectArgs) -> Result<Value> {
    // Phases on stderr at a terminal, drawn only between the steps that
    // lock (the wrapper-started collect, whose stderr is the agent's, holds
    // no data-directory lock at all).
    crate::progress::enable_at_terminal();
    let _bar = crate::progress::Bar::start("collect");
    let from_stdin = a.descriptor.as_os_str() == "-";
    let (bytes, token) = if a.token_on_stdin {
        if !from_stdin {
            return Err(Error::new(
                Code::Usage,
                "--token-on-stdin reads the descriptor from stdin too: pass --descriptor -",
            ));
        }
        if ctx.token_file().is_some() {
            return Err(Error::new(
                Code::Usage,
                "--token-on-stdin excludes --token-file and AGENT_TASK_TOKEN_FILE",
            ));
        }
        // A wrapper-started collect: the agent can stop it at any point
        // (sudo relays SIGTSTP), so it must never hold the data
        // directory's lock. It uploads through the operator's serve.
        if a.upload.endpoint.is_none() {
            return Err(Error::new(
                Code::Usage,
                "--token-on-stdin (the sudo wrapper's collect) uploads through the operator's \
                 serve and never imports locally: pass --endpoint, --repository and --profile \
                 (rewrite the wrapper with `collector wrapper --endpoint …`)",
            ));
        }
        let stdin = read_stdin(
            crate::workflow::service::admin::MAX_TOKEN_FILE + 2 + collect::MAX_DESCRIPTOR_BYTES,
        )?;
        let (token, rest) = split_token(&stdin)?;
        if rest.len() as u64 > collect::MAX_DESCRIPTOR_BYTES {
            return Err(Error::new(
                Code::TooLarge,
                format!(
                    "the descriptor is over {} bytes",
                    collect::MAX_DESCRIPTOR_BYTES
                ),
            ));
        }
        (rest.to_vec(), token)
    } else if from_stdin {
        (read_stdin(collect::MAX_DESCRIPTOR_BYTES)?, ctx.token()?)
    } else {
        (
            read_small(&a.descriptor, collect::MAX_DESCRIPTOR_BYTES)?,
            ctx.token()?,
        )
    };
    let root = ctx.data_dir_from_command_line("collect")?;
    let http = a.upload.http(&token);
    // The recheck before the reservation and the import's validation
    // after the run read the same two databases: keep the read
    // connections between them (`store::readcache`: each take checks the
    // file and the schema cookie), so each is opened and its schema
    // parsed once. Importing here (no endpoint), the import's session
    // then writes through them too ("Early writers").
    if http.is_none() {
        crate::store::enable_read_cache_for_writes();
    } else {
        crate::store::enable_read_cache();
    }
    let local = LocalUpload {
        root,
        timeout: ctx.lock_timeout,
        clock: ctx.clock.as_ref(),
        token: &token,
    };
    // `local` answers the rechecks (lock-free reads that end before the
    // run) and, without --endpoint, imports; a wrapper-started collect
    // always has an endpoint (checked above), so it never imports here.
    let up: &dyn collect::Uploader = match &http {
        Some(h) => h,
        None => &local,
    };
    let credential = match &a.review_credential_file {
        Some(p) => Some(std::path::absolute(p).map_err(|e| Error::io("resolve", p, e))?),
        None => None,
    };
    collect::collect(
        &CollectRequest {
            root,
            clock: ctx.clock.as_ref(),
            authority: &local,
            descriptor: &bytes,
            collector_dir: &a.collector_dir,
            review_credential_file: credential.as_deref(),
        },
        up,
    )
}

pub(super) fn retry_upload(ctx: &Ctx, a: RetryUploadArgs) -> Result<Value> {
    let token = ctx.token()?;
    let root = ctx.data_dir_from_command_line("retry-upload")?;
    let up = LocalUpload {
        root,
        timeout: ctx.lock_timeout,
        clock: ctx.clock.as_ref(),
        token: &token,
    };
    let http = a.upload.http(&token);
    let up: &dyn collect::Uploader = match &http {
        Some(h) => h,
        None => &up,
    };
    collect::retry_upload(root, &a.collector_dir, &a.operation, up)
}

pub(super) fn finalize(ctx: &Ctx, a: AgentChangeArgs) -> Result<Value> {
    let change = super::task::change_sel(ctx, &a)?;
    super::task::run(
        ctx,
        &a.remote,
        OperationRequest::CollectorFinalize(ChangeRequest { change }),
    )
}

pub(super) fn qualify(ctx: &Ctx, a: AgentChangeArgs) -> Result<Value> {
    let change = super::task::change_sel(ctx, &a)?;
    super::task::run(
        ctx,
        &a.remote,
        OperationRequest::Qualification(ChangeRequest { change }),
    )
}

pub(super) fn land(ctx: &Ctx, a: LandArgs) -> Result<Value> {
    let root = ctx.data_dir()?;
    // A unique prefix of the Change id, as the operator may view every one.
    let change_id = crate::workflow::service::ops::resolve_id_operator(
        root,
        crate::workflow::service::change::IdKind::Change,
        &a.change,
    )?;
    if a.push {
        // Before anything lands: a push needs a forge, and its credential
        // file must pass its checks.
        let forge = crate::workflow::service::forge::forge_of(root, &a.repo)?
            .ok_or_else(|| crate::workflow::service::forge::no_forge(&a.repo))?;
        crate::forge::check_credential_file(&forge.credential)?;
    }
    let mut v = crate::workflow::service::land::land(
        root,
        ctx.lock_timeout,
        ctx.clock.as_ref(),
        &LandRequest {
            repo_id: a.repo.clone(),
            change_id: change_id.clone(),
            allow_protected_change: a.allow_protected_change,
            update_worktree: a.update_worktree,
            author: a.author,
        },
    )?;
    if a.push {
        let pushed = crate::forge::push(
            root,
            ctx.lock_timeout,
            ctx.clock.as_ref(),
            &a.repo,
            &change_id,
        )
        .map_err(|e| e.with("landing", v.clone()))?;
        if let Some(o) = v.as_object_mut() {
            o.insert("push".into(), to_value(&pushed)?);
        }
    }
    Ok(v)
}
