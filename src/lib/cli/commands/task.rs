//! Agent task commands: capabilities, requirements, next, instructions,
//! reference, claim, heartbeat, status, cancel, reconcile, result, recovery.

use super::change::{
    AgentChangeArgs, EndpointArgs, fresh_request_id, resolve, with_agent, with_request_id,
};
use crate::cli::ctx::Ctx;
use crate::contract::{MutationAction, ReferenceFetchRequest, SCHEMA_VERSION, TaskResultAssertion};
use crate::error::{Code, Error, Result};
use crate::workflow::service::change::IdKind;
use crate::workflow::service::facade::{
    self, ChangeRequest, ClaimRequest, InstructionsRequest, MutationBody, OperationRequest,
    RecoveryRequest, ResultRequest, StatusRequest,
};
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;

/// Largest result document.
const MAX_RESULT_BYTES: u64 = 1024 * 1024;

/// Arguments of `instructions`.
#[derive(Debug, clap::Args)]
pub struct InstructionsArgs {
    /// The request itself (the same struct HTTP and MCP decode).
    #[command(flatten)]
    pub req: InstructionsRequest,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// Arguments of `reference`.
#[derive(Debug, clap::Args)]
pub struct ReferenceArgs {
    /// Task id.
    pub task: String,
    /// Reference name.
    pub name: String,
    /// Expected schema version.
    #[arg(long, default_value_t = SCHEMA_VERSION)]
    pub schema_version: u32,
    /// Expected body SHA-256 (from instructions).
    #[arg(long, value_name = "HEX")]
    pub expected_sha256: Option<String>,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// Arguments of `claim`.
#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    /// The request itself (the same struct HTTP and MCP decode).
    #[command(flatten)]
    pub req: ClaimRequest,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// Arguments of heartbeat, cancel and reconcile.
#[derive(Debug, clap::Args)]
pub struct MutateArgs {
    /// The request itself (the same struct HTTP and MCP decode).
    #[command(flatten)]
    pub req: MutationBody,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// The request itself (the same struct HTTP and MCP decode).
    #[command(flatten)]
    pub req: StatusRequest,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// Arguments of `result`.
#[derive(Debug, clap::Args)]
#[command(
    after_help = "Example (an agent assertion built from flags; the digests, fence and agent \
come from the attempt; the outcome follows the rows):\n\n  agent-task result --task T --attempt A \\\n      \
--criterion tests-pass=passed --finding tests-pass='cargo test: 212 passed'\n\n\
The printed output names the request id when it was generated: pass it as --request-id to retry."
)]
pub struct ResultArgs {
    /// TaskResultAssertion JSON file (`-` for stdin).
    #[arg(long, value_name = "FILE", required_unless_present = "criterion", conflicts_with_all = ["criterion", "task", "attempt", "finding", "request_id"])]
    pub file: Option<PathBuf>,
    /// Build the agent assertion from flags: one row per criterion of the
    /// task, `NAME=OUTCOME` with OUTCOME `passed`, `failed`, `uncertain` or
    /// `not_claimed` (repeat for each criterion).
    #[arg(long, value_name = "NAME=OUTCOME", requires_all = ["task", "attempt"])]
    pub criterion: Vec<String>,
    /// A finding of a criterion row, `NAME=TEXT` (repeatable).
    #[arg(long, value_name = "NAME=TEXT", requires = "criterion")]
    pub finding: Vec<String>,
    /// The task (with --criterion).
    #[arg(long, value_name = "TASK")]
    pub task: Option<String>,
    /// The claimed attempt (with --criterion).
    #[arg(long, value_name = "ATTEMPT")]
    pub attempt: Option<String>,
    /// Idempotency key of the result (with --criterion; default: a fresh one,
    /// printed as `request_id` for a retry to reuse).
    #[arg(long)]
    pub request_id: Option<String>,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

/// Arguments of `recovery`.
#[derive(Debug, clap::Args)]
pub struct RecoveryArgs {
    /// The request itself (the same struct HTTP and MCP decode).
    #[command(flatten)]
    pub req: RecoveryRequest,
    /// Through a workspace endpoint.
    #[command(flatten)]
    pub remote: EndpointArgs,
}

pub(super) fn capabilities(ctx: &Ctx, a: EndpointArgs) -> Result<Value> {
    match a.client(ctx)? {
        Some(c) => c.op(&OperationRequest::Capabilities {}),
        None => Ok(facade::capabilities()),
    }
}

/// Runs one agent operation through the same request struct and library
/// call the workspace HTTP endpoint and MCP tools use; with `--endpoint`,
/// the same struct goes to the endpoint.
pub(super) fn run(ctx: &Ctx, remote: &EndpointArgs, r: OperationRequest) -> Result<Value> {
    match remote.client(ctx)? {
        Some(c) => c.op(&r),
        None => with_agent(ctx, |cx| facade::run(cx, &r)),
    }
}

/// The Change an agent command names: by id through an endpoint, by id or
/// workspace locally.
pub(super) fn change_sel(
    ctx: &Ctx,
    a: &AgentChangeArgs,
) -> Result<crate::workflow::service::change::ChangeSel> {
    match (a.remote.authority()?, &a.sel.change, &a.sel.workspace) {
        (Some(auth), None, _) => {
            Err(auth.needs("--change", "the endpoint knows no workspace path"))
        }
        (Some(auth), Some(_), Some(_)) => {
            Err(auth.conflict("--workspace", "names a Change by a path of this host"))
        }
        _ => super::change::resolve_sel(ctx, &a.remote, a.sel.sel()?),
    }
}

pub(super) fn requirements(ctx: &Ctx, a: AgentChangeArgs) -> Result<Value> {
    let change = change_sel(ctx, &a)?;
    run(
        ctx,
        &a.remote,
        OperationRequest::Requirements(ChangeRequest { change }),
    )
}

pub(super) fn next(ctx: &Ctx, a: AgentChangeArgs) -> Result<Value> {
    let change = change_sel(ctx, &a)?;
    run(
        ctx,
        &a.remote,
        OperationRequest::Next(ChangeRequest { change }),
    )
}

pub(super) fn instructions(ctx: &Ctx, a: InstructionsArgs) -> Result<Value> {
    let mut req = a.req;
    resolve(ctx, &a.remote, IdKind::Task, &mut req.task_id)?;
    run(ctx, &a.remote, OperationRequest::Instructions(req))
}

pub(super) fn reference(ctx: &Ctx, mut a: ReferenceArgs) -> Result<Value> {
    resolve(ctx, &a.remote, IdKind::Task, &mut a.task)?;
    let expected_sha256 = a
        .expected_sha256
        .as_deref()
        .map(crate::wire::digest::Sha256Hex::parse)
        .transpose()?;
    run(
        ctx,
        &a.remote,
        OperationRequest::Reference(ReferenceFetchRequest {
            task_id: a.task,
            name: a.name,
            expected_schema_version: a.schema_version,
            task_digest: None,
            expected_sha256,
        }),
    )
}

pub(super) fn claim(ctx: &Ctx, a: ClaimArgs) -> Result<Value> {
    let mut req = a.req;
    resolve(ctx, &a.remote, IdKind::Task, &mut req.task_id)?;
    let generated = fresh_request_id(&mut req.request_id)?;
    let out = run(ctx, &a.remote, OperationRequest::Claim(req))?;
    Ok(with_request_id(out, generated))
}

pub(super) fn mutate(ctx: &Ctx, action: MutationAction, a: MutateArgs) -> Result<Value> {
    let mut body = a.req;
    resolve(ctx, &a.remote, IdKind::Attempt, &mut body.attempt_id)?;
    let generated = fresh_request_id(&mut body.request_id)?;
    let out = run(
        ctx,
        &a.remote,
        match action {
            MutationAction::Heartbeat => OperationRequest::Heartbeat(body),
            MutationAction::Cancel => OperationRequest::Cancel(body),
            MutationAction::Reconcile => OperationRequest::Reconcile(body),
        },
    )?;
    Ok(with_request_id(out, generated))
}

pub(super) fn status(ctx: &Ctx, a: StatusArgs) -> Result<Value> {
    let mut req = a.req;
    resolve(ctx, &a.remote, IdKind::Task, &mut req.task_id)?;
    resolve(ctx, &a.remote, IdKind::Attempt, &mut req.attempt_id)?;
    run(ctx, &a.remote, OperationRequest::Status(req))
}

pub(super) fn result(ctx: &Ctx, a: ResultArgs) -> Result<Value> {
    let Some(file) = &a.file else {
        return result_from_flags(ctx, a);
    };
    let mut bytes = Vec::new();
    let too_large = || Error::new(Code::TooLarge, "result document is over 1 MiB");
    if file.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_RESULT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::new(Code::Io, format!("reading stdin: {e}")))?;
    } else {
        crate::store::private_fs::open_nofollow_read(file)?
            .take(MAX_RESULT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", file, e))?;
    }
    if bytes.len() as u64 > MAX_RESULT_BYTES {
        return Err(too_large());
    }
    let assertion: TaskResultAssertion = crate::wire::json::decode(
        &bytes,
        crate::wire::json::Limits::bytes(MAX_RESULT_BYTES as usize),
        Code::InvalidInput,
        "assertion",
    )?;
    run(
        ctx,
        &a.remote,
        OperationRequest::Result(ResultRequest {
            assertion: Box::new(assertion),
        }),
    )
}

/// `result --criterion NAME=OUTCOME …`: the agent assertion built from the
/// attempt the authority knows (locally: no endpoint read names the
/// caller's actor, so through an endpoint the document is `--file`'s).
fn result_from_flags(ctx: &Ctx, a: ResultArgs) -> Result<Value> {
    use crate::contract::{CriterionOutcome, CriterionResult};
    if a.remote.authority()?.is_some() {
        return Err(Error::new(
            Code::Usage,
            "result --criterion builds the assertion from the local data directory; through an \
             endpoint pass the whole document with --file",
        ));
    }
    let (Some(mut task), Some(mut attempt)) = (a.task, a.attempt) else {
        return Err(Error::new(
            Code::Usage,
            "result --criterion needs --task and --attempt",
        ));
    };
    let split = |flag: &str, v: &str| -> Result<(String, String)> {
        v.split_once('=')
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .ok_or_else(|| {
                Error::new(Code::Usage, format!("--{flag} {v:?}: expected NAME=VALUE"))
                    .with("argument", format!("--{flag}"))
            })
    };
    let mut rows: Vec<CriterionResult> = Vec::new();
    for c in &a.criterion {
        let (name, outcome) = split("criterion", c)?;
        let outcome = match outcome.as_str() {
            "passed" => CriterionOutcome::Passed,
            "failed" => CriterionOutcome::Failed,
            "uncertain" => CriterionOutcome::Uncertain,
            "not_claimed" => CriterionOutcome::NotClaimed,
            other => {
                return Err(Error::new(
                    Code::Usage,
                    format!(
                        "--criterion {name}={other}: the outcome is passed, failed, uncertain or \
                         not_claimed"
                    ),
                )
                .with("argument", "--criterion"));
            }
        };
        rows.push(CriterionResult {
            criterion: name,
            outcome,
            findings: Vec::new(),
            evidence_digests: Vec::new(),
        });
    }
    for f in &a.finding {
        let (name, text) = split("finding", f)?;
        let row = rows
            .iter_mut()
            .find(|r| r.criterion == name)
            .ok_or_else(|| {
                Error::new(
                    Code::Usage,
                    format!("--finding {name}=…: no --criterion {name}=… row"),
                )
                .with("argument", "--finding")
            })?;
        row.findings.push(text);
    }
    resolve(ctx, &a.remote, IdKind::Task, &mut task)?;
    resolve(ctx, &a.remote, IdKind::Attempt, &mut attempt)?;
    let mut request_id = a.request_id.unwrap_or_default();
    let generated = fresh_request_id(&mut request_id)?;
    let at = StatusRequest {
        task_id: task,
        attempt_id: attempt,
    };
    let out = with_agent(ctx, |cx| {
        let assertion = crate::workflow::service::ops::agent_assertion(cx, &at, &request_id, rows)?;
        facade::run(
            cx,
            &OperationRequest::Result(ResultRequest {
                assertion: Box::new(assertion),
            }),
        )
    })?;
    Ok(with_request_id(out, generated))
}

pub(super) fn recovery(ctx: &Ctx, a: RecoveryArgs) -> Result<Value> {
    let mut req = a.req;
    resolve(ctx, &a.remote, IdKind::Task, &mut req.task_id)?;
    if let Some(att) = &mut req.attempt_id {
        resolve(ctx, &a.remote, IdKind::Attempt, att)?;
    }
    run(ctx, &a.remote, OperationRequest::Recovery(req))
}
