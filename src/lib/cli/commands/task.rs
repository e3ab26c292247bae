//! Agent task commands: capabilities, requirements, next, instructions,
//! reference, claim, heartbeat, status, cancel, reconcile, result, recovery.

use super::change::{ChangeSelArgs, with_agent};
use super::to_value;
use crate::cli::ctx::Ctx;
use crate::error::{Code, Error, Result};
use crate::task::contract::{
    MutationAction, ReferenceFetchRequest, SCHEMA_VERSION, TaskResultAssertion,
};
use crate::task::ops;
use serde_json::Value;
use std::io::Read;
use std::path::PathBuf;

/// Largest result document.
const MAX_RESULT_BYTES: u64 = 1024 * 1024;

/// Arguments of `instructions`.
#[derive(Debug, clap::Args)]
pub struct InstructionsArgs {
    /// Task id.
    pub task: String,
    /// Schema version the caller speaks.
    #[arg(long, default_value_t = SCHEMA_VERSION)]
    pub schema_version: u32,
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
}

/// Arguments of `claim`.
#[derive(Debug, clap::Args)]
pub struct ClaimArgs {
    /// Task id.
    pub task: String,
    /// Idempotency key (an identical retry returns the retained outcome).
    #[arg(long)]
    pub request_id: String,
    /// Requested lease.
    #[arg(long, default_value_t = 300_000)]
    pub lease_ms: u64,
    /// Executor registration that will run the task.
    #[arg(long)]
    pub executor: Option<String>,
}

/// Arguments of heartbeat, cancel and reconcile.
#[derive(Debug, clap::Args)]
pub struct MutateArgs {
    /// Attempt id.
    #[arg(long)]
    pub attempt: String,
    /// The fence the caller holds.
    #[arg(long)]
    pub fence: u64,
    /// Idempotency key.
    #[arg(long)]
    pub request_id: String,
    /// Requested lease (heartbeat).
    #[arg(long)]
    pub lease_ms: Option<u64>,
    /// Reason (cancel, reconcile).
    #[arg(long)]
    pub reason: Option<String>,
}

/// Arguments of `status`.
#[derive(Debug, clap::Args)]
pub struct StatusArgs {
    /// Task id.
    #[arg(long)]
    pub task: String,
    /// Attempt id.
    #[arg(long)]
    pub attempt: String,
}

/// Arguments of `result`.
#[derive(Debug, clap::Args)]
pub struct ResultArgs {
    /// TaskResultAssertion JSON file (`-` for stdin).
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
}

/// Arguments of `recovery`.
#[derive(Debug, clap::Args)]
pub struct RecoveryArgs {
    /// Task id.
    #[arg(long)]
    pub task: String,
    /// Attempt id (default: the task's current attempt).
    #[arg(long)]
    pub attempt: Option<String>,
    /// Request id to resolve.
    #[arg(long)]
    pub request_id: Option<String>,
}

pub(super) fn capabilities() -> Result<Value> {
    Ok(crate::task::facade::capabilities())
}

pub(super) fn requirements(ctx: &Ctx, a: ChangeSelArgs) -> Result<Value> {
    let sel = a.sel()?;
    with_agent(ctx, |cx| ops::requirements(cx, &sel))
}

pub(super) fn next(ctx: &Ctx, a: ChangeSelArgs) -> Result<Value> {
    let sel = a.sel()?;
    with_agent(ctx, |cx| ops::next(cx, &sel))
}

pub(super) fn instructions(ctx: &Ctx, a: InstructionsArgs) -> Result<Value> {
    with_agent(ctx, |cx| {
        to_value(&ops::instructions(cx, &a.task, a.schema_version)?)
    })
}

pub(super) fn reference(ctx: &Ctx, a: ReferenceArgs) -> Result<Value> {
    let expected = a
        .expected_sha256
        .as_deref()
        .map(crate::wire::digest::Sha256Hex::parse)
        .transpose()?;
    let req = ReferenceFetchRequest {
        expected_schema_version: a.schema_version,
        task_id: a.task,
        task_digest: None,
        name: a.name,
        expected_sha256: expected,
    };
    with_agent(ctx, |cx| to_value(&ops::reference(cx, &req)?))
}

pub(super) fn claim(ctx: &Ctx, a: ClaimArgs) -> Result<Value> {
    with_agent(ctx, |cx| {
        ops::claim(cx, &a.task, &a.request_id, a.lease_ms, a.executor.clone())
    })
}

pub(super) fn mutate(ctx: &Ctx, action: MutationAction, a: MutateArgs) -> Result<Value> {
    let lease = match action {
        MutationAction::Heartbeat => Some(a.lease_ms.unwrap_or(300_000)),
        _ => a.lease_ms,
    };
    let m = crate::task::journal::MutationArgs {
        action,
        attempt_id: a.attempt,
        fence: a.fence,
        request_id: a.request_id,
        lease_ms: lease,
        reason: a.reason,
    };
    with_agent(ctx, |cx| ops::mutate(cx, &m))
}

pub(super) fn status(ctx: &Ctx, a: StatusArgs) -> Result<Value> {
    with_agent(ctx, |cx| ops::status(cx, &a.task, &a.attempt))
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
    let assertion: TaskResultAssertion = serde_json::from_slice(&bytes)?;
    with_agent(ctx, |cx| ops::result(cx, &assertion))
}

pub(super) fn recovery(ctx: &Ctx, a: RecoveryArgs) -> Result<Value> {
    with_agent(ctx, |cx| {
        to_value(&ops::recovery(
            cx,
            &a.task,
            a.attempt.as_deref(),
            a.request_id.as_deref(),
        )?)
    })
}
