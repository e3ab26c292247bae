//! The workspace facade: one typed request per agent operation. Each
//! operation's request is one struct ([`ClaimRequest`], [`MutationBody`],
//! [`StatusRequest`], [`ChangeRequest`], …; `reference` takes the
//! contract's `ReferenceFetchRequest`), an [`OperationRequest`] variant:
//! clap builds it from the CLI's flags (`#[command(flatten)]`) where the
//! flags map one to one, the HTTP endpoint and the MCP tools decode it
//! strictly from JSON ([`decode`]), and [`run`] passes it to the one
//! service function. [`execute`] adds the operator profile's scope check
//! and then calls [`run`]. The actor always comes from the caller's bearer
//! (an agent token), never from the body. The requests are defined with
//! every other request and output type in [`super::requests`] and
//! re-exported here, where the faces name them.
//! Wire format: `docs/workspace-http.md`.

use super::ctx::AgentCtx;
use super::ops;
pub use super::requests::{
    ChangeOpenRequest, ChangeRequest, CheckpointCommitRequest, ClaimRequest, CollectorClaimRequest,
    CollectorDescriptorRequest, ExplainRequest, InstructionsRequest, MutationBody,
    OperationRequest, RecoveryRequest, ResultRequest, StatusRequest, default_lease,
};
use crate::contract::{CAPABILITY, MutationAction, SUPPORTED_SCHEMA_VERSIONS, check_id};
use crate::error::{Code, Error, Result};
use crate::store::Deferred;
use crate::wire::digest::Sha256Hex;
use crate::workflow::authority::change::{self, ChangeSel, Scope};
use serde::Deserialize;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Version of the operator's workspace configuration file.
pub const CONFIG_VERSION: u32 = 1;
/// Most profiles in one configuration.
pub const MAX_PROFILES: usize = 256;
/// Largest configuration file.
pub const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// One operator-configured task profile.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskProfile {
    /// The repository id in the URL.
    pub repository_id: String,
    /// The profile id in the URL.
    pub profile_id: String,
    /// The repository id inside the native authority.
    pub native_repository: String,
    /// The authority's data directory (absolute).
    pub data_dir: PathBuf,
    /// The protected target the profile serves.
    pub target: String,
    /// The installed requirement digest the profile serves.
    pub requirement_digest: Sha256Hex,
    /// The spec's switch for commit statuses: `serve` refuses to start
    /// (`config`) when it is true and the repository's forge does not
    /// publish them (`repo forge set --forge-status`), which is where this
    /// product switches them on (docs/forge.md).
    #[serde(default)]
    pub publish_forge_status: bool,
}

impl TaskProfile {
    /// What a request through this profile may name: the authority's
    /// repository and this profile.
    pub fn scope(&self) -> Scope {
        Scope {
            repository: self.native_repository.clone(),
            profile: self.profile_id.clone(),
        }
    }
}

/// The operator's workspace configuration (strict, version 1).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkspaceConfig {
    /// Always 1.
    pub version: u32,
    /// The task profiles.
    pub agent_task_profiles: Vec<TaskProfile>,
}

impl WorkspaceConfig {
    /// Parses and validates configuration bytes.
    pub fn parse(bytes: &[u8]) -> Result<WorkspaceConfig> {
        let bad = |m: String| Error::new(Code::Config, m);
        let c: WorkspaceConfig = crate::wire::json::decode(
            bytes,
            crate::wire::json::Limits::bytes(MAX_CONFIG_BYTES as usize),
            Code::Config,
            "workspace config",
        )?;
        if c.version != CONFIG_VERSION {
            return Err(bad(format!(
                "workspace config version {} is not supported (1)",
                c.version
            )));
        }
        if c.agent_task_profiles.len() > MAX_PROFILES {
            return Err(bad("workspace config has too many profiles".into()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for p in &c.agent_task_profiles {
            for (f, v) in [
                ("repository_id", &p.repository_id),
                ("profile_id", &p.profile_id),
                ("native_repository", &p.native_repository),
                ("target", &p.target),
            ] {
                check_id(f, v).map_err(|e| bad(format!("workspace config: {e}")))?;
            }
            if !p.data_dir.is_absolute() {
                return Err(bad("workspace config: data_dir must be absolute".into()));
            }
            if !seen.insert((p.repository_id.clone(), p.profile_id.clone())) {
                return Err(bad(format!(
                    "workspace config: profile {}/{} is listed twice",
                    p.repository_id, p.profile_id
                )));
            }
        }
        Ok(c)
    }

    /// Loads a configuration file.
    pub fn load(path: &Path) -> Result<WorkspaceConfig> {
        use std::io::Read;
        let mut bytes = Vec::new();
        crate::store::private_fs::open_nofollow_read(path)?
            .take(MAX_CONFIG_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", path, e))?;
        if bytes.len() as u64 > MAX_CONFIG_BYTES {
            return Err(Error::new(Code::Config, "workspace config is over 256 KiB"));
        }
        Self::parse(&bytes)
    }

    /// The profile served at `repository`/`profile`.
    pub fn profile(&self, repository: &str, profile: &str) -> Result<&TaskProfile> {
        self.agent_task_profiles
            .iter()
            .find(|p| p.repository_id == repository && p.profile_id == profile)
            .ok_or_else(|| Error::new(Code::NotFound, "no such workspace task profile"))
    }
}

/// Every operation this facade serves, sorted.
pub const OPERATIONS: &[&str] = &[
    "cancel",
    "capabilities",
    "change_list",
    "change_open",
    "change_subject",
    "checkpoint_commit",
    "claim",
    "collector_claim",
    "collector_descriptor",
    "collector_finalize",
    "explain",
    "heartbeat",
    "instructions",
    "next",
    "overview",
    "qualification",
    "reconcile",
    "recovery",
    "reference",
    "requirements",
    "result",
    "status",
];

/// Fields a body may never carry: the actor and paths come from the
/// bearer and the operator's profile.
const FORBIDDEN_FIELDS: &[&str] = &[
    "actor",
    "owner_id",
    "agent_id",
    "agent",
    "token",
    "workspace",
    "data_dir",
    "path",
    "native_repository",
    "repository",
    "profile",
];

/// Decodes one operation request from a JSON object. A body naming an
/// actor or a path is refused as `forbidden`; unknown operations and
/// unknown fields are `invalid_request`.
pub fn decode(v: Value) -> Result<OperationRequest> {
    let Value::Object(m) = &v else {
        return Err(Error::new(
            Code::InvalidRequest,
            "the request must be a JSON object",
        ));
    };
    for f in FORBIDDEN_FIELDS {
        if m.contains_key(*f) {
            return Err(Error::new(
                Code::Forbidden,
                format!("the request may not name `{f}`: the actor comes from the bearer and paths from the operator's profile"),
            )
            .with("field", *f));
        }
    }
    match m.get("operation").and_then(Value::as_str) {
        None => {
            return Err(Error::new(
                Code::InvalidRequest,
                "the request has no `operation` string",
            ));
        }
        Some(op) if !OPERATIONS.contains(&op) => {
            return Err(Error::new(
                Code::InvalidRequest,
                format!(
                    "unknown operation `{}`",
                    op.chars().take(64).collect::<String>()
                ),
            )
            .with("operations", OPERATIONS.to_vec()));
        }
        Some(_) => {}
    }
    serde_json::from_value(v)
        .map_err(|e| Error::new(Code::InvalidRequest, format!("invalid request: {e}")))
}

/// `capabilities`' output (a JSON object: fields in key order).
#[derive(serde::Serialize)]
struct Capabilities {
    capability: &'static str,
    operations: &'static [&'static str],
    supported_schema_versions: &'static [u32],
}

/// `capabilities` of this facade.
pub fn capabilities() -> Value {
    let c = Capabilities {
        capability: CAPABILITY,
        operations: OPERATIONS,
        supported_schema_versions: SUPPORTED_SCHEMA_VERSIONS,
    };
    serde_json::to_value(c).unwrap_or_default()
}

/// `collector_descriptor`'s output (fields in key order).
#[derive(serde::Serialize)]
struct DescriptorOutput {
    descriptor: crate::collector::transfer::CollectorDescriptor,
    descriptor_digest: Sha256Hex,
}

/// Authenticates the bearer against the profile's authority and checks
/// that the profile's pins hold: the workspace routes' and MCP's
/// authorize step, on the head alone (before a byte of the body is read).
/// What a request names is checked against the profile's [`Scope`] by the
/// operation itself, where it looks it up ([`execute`]). Read-only.
pub fn check_scope(cx: &AgentCtx<'_>, p: &TaskProfile) -> Result<()> {
    // One snapshot for the token and the pins (one read transaction, not
    // one per statement).
    let (_dir, conn) = crate::workflow::authority::admin::open_read_snapshot(cx.root)?;
    crate::workflow::authority::admin::authenticate(&conn, cx.token)?;
    check_pins(&conn, p)
}

/// The profile's pins (registered repository, target, installed
/// requirement) still hold in its authority.
fn check_pins(conn: &crate::store::Connection, p: &TaskProfile) -> Result<()> {
    let repo = crate::workflow::authority::repository(conn, &p.native_repository)
        .map_err(|_| Error::new(Code::Conflict, "the profile's repository is not registered"))?;
    // The digest alone: the requirement's bytes are not read per request.
    let installed = crate::workflow::authority::installed_requirement_digest(
        conn,
        &p.native_repository,
        &p.profile_id,
    )?;
    if repo.target != p.target || installed.as_deref() != Some(p.requirement_digest.as_str()) {
        return Err(Error::new(
            Code::Conflict,
            "the authority no longer matches the operator's profile pins (target or requirement)",
        ));
    }
    Ok(())
}

/// Checks the bearer, the profile's pins and that `change_id` belongs to
/// the profile: the authorize step of the manifest and blob routes, which
/// name the Change in their path, so that a body (up to the pack cap) is
/// never read for a Change of another profile. Their operations check the
/// scope again in their own unit of work.
pub fn check_change_scope(cx: &AgentCtx<'_>, p: &TaskProfile, change_id: &str) -> Result<()> {
    check_id("change_id", change_id)?;
    let (_dir, conn) = crate::workflow::authority::admin::open_read_snapshot(cx.root)?;
    crate::workflow::authority::admin::authenticate(&conn, cx.token)?;
    check_pins(&conn, p)?;
    change::select_in(
        &conn,
        &ChangeSel::Id(change_id.to_owned()),
        Some(&p.scope()),
    )
    .map(drop)
}

/// Runs one operation for the bearer's actor inside profile `p`, for a
/// caller that has checked the bearer and the pins with [`check_scope`]
/// (the workspace routes' and MCP's authorize step, before any body byte
/// was read): [`run`], exactly as the CLI runs it, with `cx.scope` set to
/// the profile's [`Scope`]. Each operation authenticates the bearer again
/// in its own unit of work (the authoritative check: a token revoked
/// since the authorize step fails there), looks up the Change, task or
/// attempt it names once and refuses one outside the scope with
/// `not_found` before anything else. The endpoint-only operations
/// (`change_open` on the profile's repository and profile,
/// `checkpoint_commit` under the operator's `limits`) run here.
pub fn execute(
    cx: &AgentCtx<'_>,
    p: &TaskProfile,
    r: &OperationRequest,
    limits: &crate::workflow::service::remote::RemoteLimits,
) -> Result<Value> {
    execute_deferred(cx, p, r, limits)?.wait()
}

/// [`execute`], answering a mutation queued to the context's writer
/// later ([`run_deferred`]): the HTTP server awaits it without holding a
/// handler thread.
pub fn execute_deferred(
    cx: &AgentCtx<'_>,
    p: &TaskProfile,
    r: &OperationRequest,
    limits: &crate::workflow::service::remote::RemoteLimits,
) -> Result<Deferred<Value>> {
    let cx = &AgentCtx {
        scope: Some(p.scope()),
        ..cx.clone()
    };
    match r {
        OperationRequest::ChangeOpen(req) => crate::workflow::service::remote::change_open(
            cx,
            &p.native_repository,
            &p.profile_id,
            req.request_id.as_deref(),
            (
                req.title.as_deref(),
                req.body.as_deref(),
                req.group.as_deref(),
            ),
        ),
        OperationRequest::CheckpointCommit(CheckpointCommitRequest {
            change: ChangeSel::Id(id),
            revision,
            new_subject,
            message,
        }) => crate::workflow::service::remote::commit(
            cx,
            id,
            revision,
            (*new_subject, message.as_deref()),
            limits,
        ),
        _ => run_deferred(cx, r),
    }
}

/// An outcome known now.
fn ready(v: Value) -> Deferred<Value> {
    Deferred::done(Ok(v))
}

/// Runs one operation for the bearer's actor. The CLI calls this directly
/// (its data directory is the scope); HTTP and MCP call it through
/// [`execute`] after the profile scope check.
pub fn run(cx: &AgentCtx<'_>, r: &OperationRequest) -> Result<Value> {
    run_deferred(cx, r)?.wait()
}

/// [`run`], with the outcome of a mutation (claim, heartbeat, cancel,
/// reconcile, result, collector-claim, finalize) queued to the context's
/// group-commit writer answered once its batch is durable instead of
/// waited for here; every other operation (and every mutation without a
/// writer: the CLI) is answered at once.
pub fn run_deferred(cx: &AgentCtx<'_>, r: &OperationRequest) -> Result<Deferred<Value>> {
    let now = |v: Result<Value>| v.map(ready);
    match r {
        // Authenticated like every operation (the bearer checked in its
        // own read), although the answer is the same for every caller: a
        // revoked token gets nothing, whatever a gate admitted before.
        OperationRequest::Capabilities {} => now(cx.read(|_, _, _, _| Ok(capabilities()))),
        OperationRequest::Requirements(req) => now(ops::requirements(cx, &req.change)),
        OperationRequest::Next(req) => now(ops::next(cx, &req.change)),
        OperationRequest::Instructions(req) => now(to_value(&ops::instructions(cx, req)?)),
        OperationRequest::Reference(req) => now(to_value(&ops::reference(cx, req)?)),
        OperationRequest::Claim(req) => ops::claim(cx, req),
        OperationRequest::Heartbeat(b) => mutate(cx, MutationAction::Heartbeat, b),
        OperationRequest::Cancel(b) => mutate(cx, MutationAction::Cancel, b),
        OperationRequest::Reconcile(b) => mutate(cx, MutationAction::Reconcile, b),
        OperationRequest::Result(req) => ops::result(cx, &req.assertion),
        OperationRequest::Status(req) => now(ops::status(cx, req)),
        OperationRequest::CollectorClaim(req) => {
            crate::workflow::service::collect::collector_claim(cx, req)
        }
        OperationRequest::CollectorDescriptor(req) => now(cx.read(|j, a, who, _now| {
            let attempt_id = &req.attempt_id;
            check_id("attempt_id", attempt_id)?;
            let j = j.ok_or_else(|| Error::new(Code::NotFound, "no such attempt"))?;
            // The attempt's task, looked up once and checked against the
            // scope before the descriptor is derived from it.
            let task = crate::workflow::journal::attempt_task(j, attempt_id)?
                .ok_or_else(|| Error::new(Code::NotFound, "no such attempt"))?;
            let rechecks = cx.rechecks(a);
            let found = rechecks.task(&task)?;
            let s = found.subject();
            let d = crate::workflow::authority::collector::derive_descriptor_in(
                j, &rechecks, attempt_id,
            )?;
            if !change::may_view(&s.change, &who.actor) {
                return Err(Error::new(
                    Code::Forbidden,
                    "the task belongs to another owner",
                ));
            }
            to_value(&DescriptorOutput {
                descriptor_digest: crate::collector::transfer::descriptor_digest(&d)?,
                descriptor: d,
            })
        })),
        OperationRequest::CollectorFinalize(req) => {
            crate::workflow::service::receipt::finalize(cx, &req.change)
        }
        OperationRequest::Qualification(req) => {
            now(crate::workflow::service::receipt::qualify(cx, &req.change))
        }
        OperationRequest::Explain(req) => now(to_value(
            &crate::workflow::service::explain::explain(cx, req)?,
        )),
        OperationRequest::ChangeSubject(req) => {
            now(crate::workflow::service::remote::subject(cx, &req.change))
        }
        OperationRequest::ChangeList {} => now(crate::workflow::service::remote::open_changes(cx)),
        OperationRequest::Overview(req) => now(to_value(
            &crate::workflow::service::overview::agent(cx, req)?,
        )),
        OperationRequest::ChangeOpen(_) | OperationRequest::CheckpointCommit(_) => Err(Error::new(
            Code::Usage,
            format!(
                "{} runs only through the workspace endpoint (the CLI's local forms are \
                     `change open` and `checkpoint`)",
                r.name()
            ),
        )),
        OperationRequest::Recovery(req) => now(to_value(&ops::recovery(cx, req)?)),
    }
}

/// A signed collector transfer uploaded to profile `p`: the bearer is
/// authenticated, the transfer must name the profile's repository and
/// profile, then the authority imports it (the same call `collect` makes
/// locally). An identical retry returns the retained view.
pub fn collector_upload(
    cx: &AgentCtx<'_>,
    p: &TaskProfile,
    bytes: &[u8],
) -> Result<Deferred<Value>> {
    let env = crate::collector::transfer::open(bytes)?;
    Scope::check(
        Some(&p.scope()),
        &env.header.repository,
        &env.header.profile,
    )?;
    crate::workflow::service::collect::import(cx, bytes)
}

fn mutate(cx: &AgentCtx<'_>, action: MutationAction, b: &MutationBody) -> Result<Deferred<Value>> {
    let lease = match action {
        MutationAction::Heartbeat => Some(b.lease_ms.unwrap_or(default_lease())),
        _ => b.lease_ms,
    };
    ops::mutate(
        cx,
        &crate::workflow::journal::MutationArgs {
            action,
            attempt_id: b.attempt_id.clone(),
            fence: b.fence,
            request_id: b.request_id.clone(),
            lease_ms: lease,
            reason: b.reason.clone(),
        },
    )
}

fn to_value<T: serde::Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v).map_err(|e| Error::internal(format!("cannot render output: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decode_is_strict() {
        assert!(matches!(
            decode(json!({"operation": "capabilities"})),
            Ok(OperationRequest::Capabilities {})
        ));
        assert!(matches!(
            decode(json!({"operation": "next", "change_id": "c"})),
            Ok(OperationRequest::Next(_))
        ));
        let code = |v: Value| decode(v).err().map(|e| e.code());
        assert_eq!(
            code(json!({"operation": "next", "change_id": "c", "x": 1})),
            Some(Code::InvalidRequest)
        );
        assert_eq!(
            code(json!({"operation": "launch"})),
            Some(Code::InvalidRequest)
        );
        assert_eq!(
            code(json!({"operation": "next", "change_id": "c", "owner_id": "bob"})),
            Some(Code::Forbidden)
        );
        assert_eq!(
            code(json!({"operation": "next", "workspace": "/etc"})),
            Some(Code::Forbidden)
        );
        assert_eq!(code(json!([])), Some(Code::InvalidRequest));
        assert!(matches!(
            decode(
                json!({"operation": "heartbeat", "attempt_id": "a", "fence": 1, "request_id": "r"})
            ),
            Ok(OperationRequest::Heartbeat(_))
        ));
    }

    #[test]
    fn operations_are_sorted_and_named() {
        let mut s = OPERATIONS.to_vec();
        s.sort_unstable();
        assert_eq!(s, OPERATIONS);
    }

    #[test]
    fn config_is_strict() {
        let ok = br#"{"version":1,"agent_task_profiles":[{"repository_id":"demo-basic","profile_id":"default",
            "native_repository":"demo/basic","data_dir":"/d","target":"main",
            "requirement_digest":"0000000000000000000000000000000000000000000000000000000000000000"}]}"#;
        assert!(WorkspaceConfig::parse(ok).is_ok());
        let rel = String::from_utf8_lossy(ok).replace("\"/d\"", "\"d\"");
        assert!(WorkspaceConfig::parse(rel.as_bytes()).is_err());
        let v2 = String::from_utf8_lossy(ok).replace("\"version\":1", "\"version\":2");
        assert!(WorkspaceConfig::parse(v2.as_bytes()).is_err());
        let extra = String::from_utf8_lossy(ok).replace("\"target\"", "\"docker\":1,\"target\"");
        assert!(WorkspaceConfig::parse(extra.as_bytes()).is_err());
    }
}
