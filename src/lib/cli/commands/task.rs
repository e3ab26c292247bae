//! Agent task commands: capabilities, requirements, next, instructions,
//! reference, claim, heartbeat, status, cancel, reconcile, result, recovery.

use super::change::{AgentChangeArgs, EndpointArgs, with_agent};
use crate::cli::ctx::Ctx;
use crate::contract::{MutationAction, ReferenceFetchRequest, SCHEMA_VERSION, TaskResultAssertion};
use crate::error::{Code, Error, Result};
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
pub struct ResultArgs {
    /// TaskResultAssertion JSON file (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
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
    a: &AgentChangeArgs,
) -> Result<crate::workflow::service::change::ChangeSel> {
    match (a.remote.authority()?, &a.sel.change, &a.sel.workspace) {
        (Some(auth), None, _) => {
            Err(auth.needs("--change", "the endpoint knows no workspace path"))
        }
        (Some(auth), Some(_), Some(_)) => {
            Err(auth.conflict("--workspace", "names a Change by a path of this host"))
        }
        _ => a.sel.sel(),
    }
}

pub(super) fn requirements(ctx: &Ctx, a: AgentChangeArgs) -> Result<Value> {
    let change = change_sel(&a)?;
    run(
        ctx,
        &a.remote,
        OperationRequest::Requirements(ChangeRequest { change }),
    )
}

pub(super) fn next(ctx: &Ctx, a: AgentChangeArgs) -> Result<Value> {
    let change = change_sel(&a)?;
    run(
        ctx,
        &a.remote,
        OperationRequest::Next(ChangeRequest { change }),
    )
}

pub(super) fn instructions(ctx: &Ctx, a: InstructionsArgs) -> Result<Value> {
    run(ctx, &a.remote, OperationRequest::Instructions(a.req))
}

pub(super) fn reference(ctx: &Ctx, a: ReferenceArgs) -> Result<Value> {
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
    run(ctx, &a.remote, OperationRequest::Claim(a.req))
}

pub(super) fn mutate(ctx: &Ctx, action: MutationAction, a: MutateArgs) -> Result<Value> {
    let body = a.req;
    run(
        ctx,
        &a.remote,
        match action {
            MutationAction::Heartbeat => OperationRequest::Heartbeat(body),
            MutationAction::Cancel => OperationRequest::Cancel(body),
            MutationAction::Reconcile => OperationRequest::Reconcile(body),
        },
    )
}

pub(super) fn status(ctx: &Ctx, a: StatusArgs) -> Result<Value> {
    run(ctx, &a.remote, OperationRequest::Status(a.req))
}

pub(super) fn result(ctx: &Ctx, a: ResultArgs) -> Result<Value> {
    let mut bytes = Vec::new();
    let too_large = || Error::new(Code::TooLarge, "result document is over 1 MiB");
    if a.file.as_os_str() == "-" {
        std::io::stdin()
            .take(MAX_RESULT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::new(Code::Io, format!("reading stdin: {e}")))?;
    } else {
        crate::store::private_fs::open_nofollow_read(&a.file)?
            .take(MAX_RESULT_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", &a.file, e))?;
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

pub(super) fn recovery(ctx: &Ctx, a: RecoveryArgs) -> Result<Value> {
    run(ctx, &a.remote, OperationRequest::Recovery(a.req))
}
