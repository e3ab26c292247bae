//! The typed workflow task contract, version 1
//! (`agentscm.agent-workflow-tasks/v1`).
//!
//! Every type decodes strictly: unknown fields fail, `version` must be a
//! supported schema version, every string and collection is bounded (see the
//! `MAX_*` constants) and each request has a `validate` that enforces those
//! bounds after decoding. Identities are domain-separated SHA-256 digests
//! (see `docs/wire.md` for each domain and byte layout).

pub mod checkout;
pub mod coverage;
mod next;
pub mod observation;
pub mod protected;
pub mod review;
pub mod snapshot;
pub mod tree_path;
pub mod workflow;

pub use next::{
    Next, ReceiptStanding, Standing, SubjectStanding, decide as decide_next, for_task as task_next,
    hint as next_hint,
};

use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};

/// Name of the Ed25519 signing-key seed file (hex) in a collector
/// directory.
pub const KEY_FILE: &str = "signing-key.ed25519";

/// The capability name.
pub const CAPABILITY: &str = "agentscm.agent-workflow-tasks/v1";
/// The schema version this build writes.
pub const SCHEMA_VERSION: u32 = 1;
/// Every schema version this build reads.
pub const SUPPORTED_SCHEMA_VERSIONS: &[u32] = &[1];
/// The fixed hint returned with a schema mismatch.
pub const SCHEMA_MISMATCH_ACTION: &str =
    "reinstall a client that supports one of server_schema_versions, then call capabilities again";

/// Longest identifier (ids, names, request ids).
pub const MAX_ID: usize = 128;
/// Longest free text (criterion text, one finding, a reason).
pub const MAX_TEXT: usize = 4096;
/// Longest skill text (step instructions).
pub const MAX_SKILL_TEXT: usize = 64 * 1024;
/// Most criteria per task.
pub const MAX_CRITERIA: usize = 64;
/// Most findings per criterion row.
pub const MAX_FINDINGS: usize = 32;
/// Most evidence digests per criterion row.
pub const MAX_EVIDENCE: usize = 32;
/// Most named references per task.
pub const MAX_REFERENCES: usize = 16;
/// Most dependencies per task.
pub const MAX_DEPENDS: usize = 64;
/// Longest reference path.
pub const MAX_PATH: usize = 1024;
/// Largest reference body returned by `reference`.
pub const MAX_REFERENCE_BYTES: u64 = 128 * 1024;
/// Longest lease an attempt may be issued (one hour).
pub const MAX_LEASE_MS: u64 = 3_600_000;
/// Shortest lease an attempt may be issued.
pub const MIN_LEASE_MS: u64 = 1_000;

/// Domain of the task digest.
pub const DOMAIN_TASK: &str = "agentscm.workflow-task.v1";
/// Domain of the logical task id.
pub const DOMAIN_TASK_ID: &str = "agentscm.workflow-task-id.v1";
/// Domain of the attempt digest.
pub const DOMAIN_ATTEMPT: &str = "agentscm.workflow-task-attempt.v1";
/// Domain of a claim request digest.
pub const DOMAIN_CLAIM: &str = "agentscm.task-claim-request.v1";
/// Domain prefix of a mutation request digest (`.heartbeat`, `.cancel`, `.reconcile`).
pub const DOMAIN_MUTATION: &str = "agentscm.task-mutation-request.v1";
/// Domain of a result request digest.
pub const DOMAIN_RESULT: &str = "agentscm.task-result-request.v1";
/// Domain of a registered observation digest (fixed by the contract).
pub const DOMAIN_OBSERVATION: &str = "agentscm.agent-workflow-observation.v1";
/// Domain of the policy digest in an entrypoint.
pub const DOMAIN_POLICY: &str = "agentscm.workflow-policy.v1";
/// Domain of the compiled plan digest.
pub const DOMAIN_PLAN: &str = "agentscm.workflow-plan.v1";
/// Domain of the skill digest.
pub const DOMAIN_SKILL: &str = "agentscm.workflow-skill.v1";

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidInput, msg)
}

/// Checks an identifier: 1..=128 characters from `[A-Za-z0-9._:@/-]`.
pub fn check_id(field: &str, s: &str) -> Result<()> {
    if s.is_empty() || s.len() > MAX_ID {
        return Err(
            invalid(format!("{field} must be 1..={MAX_ID} characters")).with("field", field)
        );
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b':' | b'@' | b'/' | b'-'))
    {
        return Err(
            invalid(format!("{field} may only hold [A-Za-z0-9._:@/-]")).with("field", field)
        );
    }
    Ok(())
}

/// Checks free text: at most `max` bytes and no NUL.
pub fn check_text(field: &str, s: &str, max: usize) -> Result<()> {
    if s.len() > max {
        return Err(
            Error::new(Code::TooLarge, format!("{field} is over {max} bytes")).with("field", field),
        );
    }
    if s.contains('\0') {
        return Err(invalid(format!("{field} contains NUL")).with("field", field));
    }
    Ok(())
}

fn check_len<T>(field: &str, v: &[T], max: usize) -> Result<()> {
    if v.len() > max {
        return Err(Error::new(
            Code::TooLarge,
            format!("{field} has more than {max} entries"),
        )
        .with("field", field));
    }
    Ok(())
}

/// Refuses an unsupported schema version.
pub fn check_version(v: u32) -> Result<()> {
    if SUPPORTED_SCHEMA_VERSIONS.contains(&v) {
        Ok(())
    } else {
        Err(invalid(format!("unsupported schema version {v}")).with(
            "supported_schema_versions",
            SUPPORTED_SCHEMA_VERSIONS.to_vec(),
        ))
    }
}

/// Checks a canonical relative reference path: ASCII, `/` separators, no
/// empty, `.` or `..` components, no leading `/`, backslash, control
/// characters (NUL, DEL) or `:` (drive/prefix forms), at most 1024 bytes.
pub fn check_relative_path(p: &str) -> Result<()> {
    let bad = |why: &str| {
        invalid(format!("reference path {why}"))
            .with("path", p.chars().take(80).collect::<String>())
    };
    if p.is_empty() || p.len() > MAX_PATH {
        return Err(bad("must be 1..=1024 bytes"));
    }
    if !p.is_ascii() {
        return Err(bad("must be ASCII"));
    }
    if p.bytes()
        .any(|b| b.is_ascii_control() || b == b'\\' || b == b':')
    {
        return Err(bad("contains a control character, backslash or ':'"));
    }
    if p.starts_with('/') {
        return Err(bad("must be relative"));
    }
    if p.split('/').any(|c| c.is_empty() || c == "." || c == "..") {
        return Err(bad("has an empty, '.' or '..' component"));
    }
    Ok(())
}

/// Compact JSON bytes of a value in declared field order (the canonical
/// bytes of every type here).
pub fn canonical_bytes<T: Serialize>(v: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(v).map_err(|e| Error::internal(format!("cannot serialise: {e}")))
}

/// The class of a workflow step's action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionClass {
    /// An agent statement; never passing.
    Assertion,
    /// A signed enrolled-executor observation; completes an observation dependency, never passing.
    Observation,
    /// An operator-enrolled TEST collector (later issue); may satisfy admission through a receipt.
    Command,
    /// A finite review controller; controller_only.
    Review,
}

/// Trust classes a caller may name on the wire. The
/// authority-validated collector dependency class is assigned internally
/// and is deliberately not decodable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TrustClass {
    /// Authenticated agent statement. Never satisfies admission.
    AgentAssertion,
    /// Observation attributed to an enrolled local executor. Never satisfies admission.
    RegisteredExecutorObservation,
    /// Controller-owned collection; only through controller finalization.
    IndependentControllerEvidence,
}

/// One criterion row's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CriterionOutcome {
    /// The criterion holds.
    Passed,
    /// The criterion does not hold.
    Failed,
    /// Unknown.
    Uncertain,
    /// Not claimed by this submitter (required for controller-only rows).
    NotClaimed,
}

/// A whole result's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultOutcome {
    /// Every claimed required row passed.
    Passed,
    /// At least one row failed.
    Failed,
    /// Unknown.
    Uncertain,
}

/// The authenticated actor: owner and agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Actor {
    /// The owner.
    pub owner_id: String,
    /// The agent acting for the owner.
    pub agent_id: String,
}

impl Actor {
    /// Bounds check.
    pub fn validate(&self) -> Result<()> {
        check_id("owner_id", &self.owner_id)?;
        check_id("agent_id", &self.agent_id)
    }
}

/// An enrolled executor as named in an observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorRef {
    /// The registration.
    pub registration_id: String,
    /// The executor's name.
    pub executor_id: String,
    /// The registration's immutable epoch.
    pub registration_epoch: u64,
    /// The verification key's id.
    pub verification_key_id: String,
}

impl ExecutorRef {
    /// Bounds check.
    pub fn validate(&self) -> Result<()> {
        check_id("registration_id", &self.registration_id)?;
        check_id("executor_id", &self.executor_id)?;
        check_id("verification_key_id", &self.verification_key_id)
    }
}

/// One criterion of a task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Criterion {
    /// Unique id within the task.
    pub id: String,
    /// Whether it is required.
    pub required: bool,
    /// Only the controller may claim it.
    pub controller_only: bool,
    /// What must hold.
    pub text: String,
}

/// A named reference: name, expected SHA-256 (null when the path is absent
/// from the revision) and canonical relative path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NamedReference {
    /// Its name.
    pub name: String,
    /// SHA-256 of its bytes in the subject's revision.
    pub expected_sha256: Option<Sha256Hex>,
    /// Canonical relative path in the revision.
    pub path: String,
}

/// Everything a task is bound to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowTaskSubject {
    /// Repository id.
    pub repository: String,
    /// Execution profile.
    pub profile: String,
    /// Protected target name.
    pub target: String,
    /// The target's head revision when the context was made.
    pub target_head: Option<Sha256Hex>,
    /// The immutable revision under work.
    pub revision: Sha256Hex,
    /// The Change.
    pub change_id: String,
    /// The Change version.
    pub change_version: u64,
    /// Digest of the exact context bytes.
    pub context_digest: Sha256Hex,
    /// The policy epoch.
    pub policy_epoch: u64,
    /// The installed requirement.
    pub requirement_digest: Sha256Hex,
    /// The compiled plan.
    pub plan_digest: Sha256Hex,
    /// The immutable skill (the step's instruction text).
    pub skill_digest: Sha256Hex,
    /// The workflow step.
    pub step_id: String,
}

/// A logical task. Its digest covers every field but `task_digest`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowTask {
    /// Schema version.
    pub version: u32,
    /// Logical task id.
    pub task_id: String,
    /// What it is bound to.
    pub subject: WorkflowTaskSubject,
    /// Action class.
    pub action_class: ActionClass,
    /// Required or optional in the graph.
    pub required: bool,
    /// Task ids this task depends on (same subject).
    pub depends_on: Vec<String>,
    /// Every criterion (at least one).
    pub criteria: Vec<Criterion>,
    /// Named references.
    pub references: Vec<NamedReference>,
    /// The step's skill text (compact entrypoint: criteria stay inline).
    pub instructions: String,
}

impl WorkflowTask {
    /// The task digest: `domain_digest(DOMAIN_TASK, canonical_bytes(task))`.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_TASK, &canonical_bytes(self)?))
    }

    /// Bounds check.
    pub fn validate(&self) -> Result<()> {
        check_version(self.version)?;
        check_id("task_id", &self.task_id)?;
        if self.criteria.is_empty() {
            return Err(invalid("a task has at least one criterion"));
        }
        check_len("criteria", &self.criteria, MAX_CRITERIA)?;
        check_len("references", &self.references, MAX_REFERENCES)?;
        check_len("depends_on", &self.depends_on, MAX_DEPENDS)?;
        for c in &self.criteria {
            check_id("criterion", &c.id)?;
            check_text("criterion text", &c.text, MAX_TEXT)?;
        }
        for r in &self.references {
            check_id("reference name", &r.name)?;
            check_relative_path(&r.path)?;
        }
        check_text("instructions", &self.instructions, MAX_SKILL_TEXT)
    }
}

/// The logical task id: `task_` + the first 32 hex characters of
/// `domain_digest(DOMAIN_TASK_ID, context_digest || 0x00 || step_id)`.
/// A new checkpoint has a new context, hence fresh task ids.
pub fn task_id_for(context_digest: &Sha256Hex, step_id: &str) -> String {
    let mut b = context_digest.as_str().as_bytes().to_vec();
    b.push(0);
    b.extend_from_slice(step_id.as_bytes());
    format!("task_{}", &domain_digest(DOMAIN_TASK_ID, &b).as_str()[..32])
}

/// One fresh execution of a task. The digest covers every field (all
/// immutable; lease renewals are journal state, not identity).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowTaskAttempt {
    /// Schema version.
    pub version: u32,
    /// The task.
    pub task_id: String,
    /// The task digest.
    pub task_digest: Sha256Hex,
    /// Fresh attempt id.
    pub attempt_id: String,
    /// The claim's request id (immutable).
    pub claim_request_id: String,
    /// Fresh execution operation id (immutable).
    pub execution_operation_id: String,
    /// Authenticated owner and agent.
    pub agent: Actor,
    /// Executor registration named at claim, if any.
    pub executor: Option<String>,
    /// Issued lease (≤ requested, bounded).
    pub lease_ms: u64,
    /// Monotonic fence.
    pub fence: u64,
}

impl WorkflowTaskAttempt {
    /// The attempt digest.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_ATTEMPT, &canonical_bytes(self)?))
    }

    /// Binds the attempt to the exact claim: same request id, task and
    /// digest, executor, and an issued lease in `MIN_LEASE_MS..=requested`.
    pub fn validate_for_claim(&self, req: &TaskClaimRequest) -> Result<()> {
        if self.claim_request_id != req.request_id
            || self.task_id != req.task_id
            || self.task_digest != req.task_digest
            || self.executor != req.executor
        {
            return Err(Error::internal("attempt does not bind its claim request"));
        }
        if self.lease_ms == 0
            || self.lease_ms > req.requested_lease_ms
            || self.lease_ms > MAX_LEASE_MS
        {
            return Err(Error::internal("issued lease outside the requested bound"));
        }
        Ok(())
    }
}

/// A claim: the exact task and a requested bounded lease.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskClaimRequest {
    /// Schema version.
    pub version: u32,
    /// Idempotency key.
    pub request_id: String,
    /// The task.
    pub task_id: String,
    /// Its exact digest.
    pub task_digest: Sha256Hex,
    /// Requested lease.
    pub requested_lease_ms: u64,
    /// Executor registration that will run it, if any.
    pub executor: Option<String>,
}

impl TaskClaimRequest {
    /// Bounds check.
    pub fn validate(&self) -> Result<()> {
        check_version(self.version)?;
        check_id("request_id", &self.request_id)?;
        check_id("task_id", &self.task_id)?;
        if let Some(e) = &self.executor {
            check_id("executor", e)?;
        }
        if !(MIN_LEASE_MS..=MAX_LEASE_MS).contains(&self.requested_lease_ms) {
            return Err(invalid(format!(
                "requested_lease_ms must be {MIN_LEASE_MS}..={MAX_LEASE_MS}"
            )));
        }
        Ok(())
    }

    /// Canonical request digest.
    pub fn request_digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_CLAIM, &canonical_bytes(self)?))
    }
}

/// A mutation action.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MutationAction {
    /// Renew the lease.
    Heartbeat,
    /// Stop the attempt (does not prove execution stopped).
    Cancel,
    /// Explicitly supersede the attempt's fence.
    Reconcile,
}

impl MutationAction {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            MutationAction::Heartbeat => "heartbeat",
            MutationAction::Cancel => "cancel",
            MutationAction::Reconcile => "reconcile",
        }
    }
}

/// Heartbeat, cancellation or reconciliation of one exact attempt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskMutationRequest {
    /// Schema version.
    pub version: u32,
    /// Idempotency key.
    pub request_id: String,
    /// The action.
    pub action: MutationAction,
    /// The task.
    pub task_id: String,
    /// Its digest.
    pub task_digest: Sha256Hex,
    /// The attempt.
    pub attempt_id: String,
    /// Its digest.
    pub attempt_digest: Sha256Hex,
    /// The attempt's execution operation id.
    pub execution_operation_id: String,
    /// The authenticated actor (set by the service, never from request JSON).
    pub agent: Actor,
    /// Executor registration, if any.
    pub executor: Option<String>,
    /// The fence the caller holds.
    pub fence: u64,
    /// Requested lease (heartbeat only).
    pub requested_lease_ms: Option<u64>,
    /// Reason (cancel/reconcile).
    pub reason: Option<String>,
}

impl TaskMutationRequest {
    /// Bounds check.
    pub fn validate(&self) -> Result<()> {
        check_version(self.version)?;
        check_id("request_id", &self.request_id)?;
        check_id("task_id", &self.task_id)?;
        check_id("attempt_id", &self.attempt_id)?;
        check_id("execution_operation_id", &self.execution_operation_id)?;
        self.agent.validate()?;
        if let Some(r) = &self.reason {
            check_text("reason", r, MAX_TEXT)?;
        }
        match (self.action, self.requested_lease_ms) {
            (MutationAction::Heartbeat, Some(l)) if (MIN_LEASE_MS..=MAX_LEASE_MS).contains(&l) => {
                Ok(())
            }
            (MutationAction::Heartbeat, _) => Err(invalid(format!(
                "heartbeat needs requested_lease_ms in {MIN_LEASE_MS}..={MAX_LEASE_MS}"
            ))),
            (_, None) => Ok(()),
            (_, Some(_)) => Err(invalid("requested_lease_ms is only for heartbeat")),
        }
    }

    /// Canonical request digest, domain-separated by action.
    pub fn request_digest(&self) -> Result<Sha256Hex> {
        let domain = format!("{DOMAIN_MUTATION}.{}", self.action.as_str());
        Ok(domain_digest(&domain, &canonical_bytes(self)?))
    }
}

/// One criterion row of a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CriterionResult {
    /// The criterion id.
    pub criterion: String,
    /// Its outcome.
    pub outcome: CriterionOutcome,
    /// Bounded findings (no NUL).
    pub findings: Vec<String>,
    /// Evidence commitments.
    pub evidence_digests: Vec<Sha256Hex>,
}

/// Signature material of a registered observation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorProvenance {
    /// The observation digest (64 lowercase hex).
    pub observation_digest: Sha256Hex,
    /// Ed25519 over the 32 raw digest bytes (128 lowercase hex).
    pub signature: String,
}

/// A result: an agent assertion or a registered observation. Field order
/// is the signing order fixed by the contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskResultAssertion {
    /// Schema version.
    pub version: u32,
    /// The task.
    pub task_id: String,
    /// Its digest.
    pub task_digest: Sha256Hex,
    /// The attempt.
    pub attempt_id: String,
    /// Its digest.
    pub attempt_digest: Sha256Hex,
    /// Idempotency key of this result.
    pub request_id: String,
    /// The attempt's execution operation id.
    pub execution_operation_id: String,
    /// The actor (must equal the authenticated one).
    pub agent: Actor,
    /// The executor (observations only).
    pub executor: Option<ExecutorRef>,
    /// The fence.
    pub fence: u64,
    /// Trust class.
    pub trust_class: TrustClass,
    /// Overall outcome (checked against the rows).
    pub outcome: ResultOutcome,
    /// One row per task criterion.
    pub criteria: Vec<CriterionResult>,
    /// Signature material (observations only).
    pub executor_provenance: Option<ExecutorProvenance>,
}

impl TaskResultAssertion {
    /// Structural bounds (task-independent).
    pub fn validate(&self) -> Result<()> {
        check_version(self.version)?;
        check_id("task_id", &self.task_id)?;
        check_id("attempt_id", &self.attempt_id)?;
        check_id("request_id", &self.request_id)?;
        check_id("execution_operation_id", &self.execution_operation_id)?;
        self.agent.validate()?;
        if let Some(e) = &self.executor {
            e.validate()?;
        }
        check_len("criteria", &self.criteria, MAX_CRITERIA)?;
        for r in &self.criteria {
            check_id("criterion", &r.criterion)?;
            check_len("findings", &r.findings, MAX_FINDINGS)?;
            check_len("evidence_digests", &r.evidence_digests, MAX_EVIDENCE)?;
            for f in &r.findings {
                check_text("finding", f, MAX_TEXT)?;
            }
        }
        match (self.trust_class, &self.executor, &self.executor_provenance) {
            (TrustClass::AgentAssertion, None, None) => Ok(()),
            (TrustClass::RegisteredExecutorObservation, Some(_), None) => Ok(()),
            (TrustClass::RegisteredExecutorObservation, Some(_), Some(p)) => {
                if p.signature.len() != 128
                    || !p
                        .signature
                        .bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                {
                    return Err(invalid("signature must be 128 lowercase hex characters"));
                }
                Ok(())
            }
            (TrustClass::IndependentControllerEvidence, _, _) => Err(Error::new(
                Code::Forbidden,
                "independent_controller_evidence is only produced by the controller",
            )),
            _ => Err(invalid(
                "agent_assertion carries no executor or provenance; an observation names its executor",
            )),
        }
    }

    /// Task-aware validation: one unique row per criterion, no unknown or
    /// omitted row, controller-only rows `not_claimed`, outcome consistent
    /// with rows and a pass needs an eligible passed required row.
    pub fn validate_for_task(&self, task: &WorkflowTask) -> Result<()> {
        let mut seen = std::collections::BTreeSet::new();
        for r in &self.criteria {
            if !seen.insert(r.criterion.as_str()) {
                return Err(invalid(format!("duplicate criterion row {}", r.criterion)));
            }
            let c = task
                .criteria
                .iter()
                .find(|c| c.id == r.criterion)
                .ok_or_else(|| invalid(format!("unknown criterion {}", r.criterion)))?;
            if (c.controller_only || task.action_class == ActionClass::Review)
                && r.outcome != CriterionOutcome::NotClaimed
            {
                return Err(Error::new(
                    Code::Forbidden,
                    format!(
                        "criterion {} is controller-only: its row must be not_claimed",
                        c.id
                    ),
                ));
            }
        }
        if let Some(c) = task.criteria.iter().find(|c| !seen.contains(c.id.as_str())) {
            return Err(invalid(format!("criterion {} has no row", c.id)));
        }
        let eligible = |id: &str| {
            task.criteria
                .iter()
                .any(|c| c.id == id && c.required && !c.controller_only)
        };
        let any_failed = self
            .criteria
            .iter()
            .any(|r| r.outcome == CriterionOutcome::Failed);
        if self.outcome == ResultOutcome::Passed {
            if any_failed {
                return Err(invalid("outcome passed with a failed row"));
            }
            let mut passed_required = 0;
            for r in &self.criteria {
                if eligible(&r.criterion) {
                    if r.outcome != CriterionOutcome::Passed {
                        return Err(invalid(format!(
                            "outcome passed but required criterion {} is {:?}",
                            r.criterion, r.outcome
                        )));
                    }
                    passed_required += 1;
                }
            }
            if passed_required == 0 {
                return Err(invalid(
                    "a pass needs at least one eligible required criterion",
                ));
            }
        } else if self.outcome == ResultOutcome::Uncertain && any_failed {
            return Err(invalid("outcome uncertain with a failed row: use failed"));
        }
        Ok(())
    }

    /// Canonical result request digest.
    pub fn request_digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_RESULT, &canonical_bytes(self)?))
    }
}

/// A side-effect-free exact-attempt read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskStatusRequest {
    /// Schema version.
    pub version: u32,
    /// The task.
    pub task_id: String,
    /// The attempt.
    pub attempt_id: String,
}

/// The one permitted progression named by an entrypoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Progression {
    /// `claim`, `reconcile`, `checkpoint` or `none`.
    pub operation: String,
    /// The task it applies to, when any.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub task_id: Option<String>,
}

/// Everything an agent needs to work on one task; required criteria inline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstructionEntrypoint {
    /// Capability name.
    pub capability: String,
    /// Schema version.
    pub schema_version: u32,
    /// The task.
    pub task_id: String,
    /// Its digest.
    pub task_digest: Sha256Hex,
    /// The step.
    pub step_id: String,
    /// Action class.
    pub action_class: ActionClass,
    /// Required in the graph.
    pub required: bool,
    /// The installed requirement's digest.
    pub workflow_digest: Sha256Hex,
    /// The policy digest (repository, profile, epoch, requirement).
    pub policy_digest: Sha256Hex,
    /// Every criterion.
    pub criteria: Vec<Criterion>,
    /// Named references.
    pub references: Vec<NamedReference>,
    /// The step's skill text.
    pub instructions: String,
    /// The one permitted progression.
    pub progression: Progression,
}

/// An entrypoint, or an explicit schema mismatch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum InstructionEntrypointResponse {
    /// The entrypoint.
    Entrypoint {
        /// It.
        entrypoint: Box<InstructionEntrypoint>,
    },
    /// The caller's schema versions are not served.
    SchemaMismatch(SchemaMismatch),
}

/// A schema mismatch body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SchemaMismatch {
    /// Capability name.
    pub capability: String,
    /// The version the caller asked for.
    pub required_schema_version: u32,
    /// The versions the caller offered.
    pub supported_schema_versions: Vec<u32>,
    /// The versions this server serves.
    pub server_schema_versions: Vec<u32>,
    /// The fixed action hint.
    pub action: String,
}

impl SchemaMismatch {
    /// A mismatch for a requested version.
    pub fn for_version(v: u32) -> SchemaMismatch {
        SchemaMismatch {
            capability: CAPABILITY.into(),
            required_schema_version: v,
            supported_schema_versions: vec![v],
            server_schema_versions: SUPPORTED_SCHEMA_VERSIONS.to_vec(),
            action: SCHEMA_MISMATCH_ACTION.into(),
        }
    }
}

/// A named reference read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReferenceFetchRequest {
    /// Expected schema version (absent: [`SCHEMA_VERSION`]).
    #[serde(default = "current_schema_version")]
    pub expected_schema_version: u32,
    /// The task.
    pub task_id: String,
    /// Its digest, when the caller holds it.
    #[serde(default)]
    pub task_digest: Option<Sha256Hex>,
    /// The reference name.
    pub name: String,
    /// The expected body digest, when the caller holds it.
    #[serde(default)]
    pub expected_sha256: Option<Sha256Hex>,
}

fn current_schema_version() -> u32 {
    SCHEMA_VERSION
}

/// Distinct bounded outcomes of a reference read; no partial success.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReferenceFetchResponse {
    /// The body, whose SHA-256 equals the stored and requested commitments.
    Available {
        /// Name.
        name: String,
        /// Path in the revision.
        path: String,
        /// SHA-256 of `content`.
        sha256: Sha256Hex,
        /// Byte length.
        size: u64,
        /// UTF-8 body.
        content: String,
    },
    /// The path is not in the subject's revision.
    Missing {
        /// Name.
        name: String,
    },
    /// The actor may not view this task.
    Denied {
        /// Name.
        name: String,
    },
    /// Stored bytes or commitments disagree; nothing is returned.
    Uncertain {
        /// Name.
        name: String,
        /// A fixed reason word.
        reason: String,
    },
    /// The body is over the limit (refused before allocation).
    Limit {
        /// Name.
        name: String,
        /// Its size.
        size: u64,
        /// The limit.
        limit: u64,
    },
    /// Unsupported expected schema version.
    SchemaMismatch(SchemaMismatch),
}

/// Recovery disposition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// At least one confirmed effect, nothing unresolved.
    Confirmed,
    /// The request had no effect.
    ConclusiveRejection,
    /// At least one unresolved effect.
    UncertainEffect,
}

/// An unresolved effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnresolvedEffect {
    /// Execution may still run (expired, cancelled or replaced attempt).
    ExecutionMayStillRun,
    /// A result may or may not have been accepted.
    ResultAcceptanceUnknown,
}

/// A recovery action the envelope permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecoveryAction {
    /// Read status.
    Inspect,
    /// Stop work.
    Stop,
    /// Send the identical request again.
    RetryIdentical,
    /// Reconcile (explicit fence supersession).
    Reconcile,
    /// Claim a fresh attempt with a fresh identity.
    PrepareFreshAttempt,
}

/// Explicit fence supersession.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FenceSupersession {
    /// The old fence.
    pub old_fence: u64,
    /// The strictly greater fence.
    pub new_fence: u64,
}

/// A side-effect-free recovery projection. Contains no command,
/// credential or path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRecoveryEnvelope {
    /// Schema version.
    pub version: u32,
    /// The request asked about, if any.
    pub request_id: Option<String>,
    /// The task.
    pub task_id: String,
    /// Its digest.
    pub task_digest: Sha256Hex,
    /// The attempt, if any.
    pub attempt_id: Option<String>,
    /// Its digest.
    pub attempt_digest: Option<Sha256Hex>,
    /// Its execution operation id.
    pub execution_operation_id: Option<String>,
    /// Its fence.
    pub fence: Option<u64>,
    /// The disposition.
    pub disposition: Disposition,
    /// The observed attempt state (`pending` when there is none).
    pub observed_state: String,
    /// Confirmed effects (request kinds).
    pub confirmed_effects: Vec<String>,
    /// Unresolved effects.
    pub unresolved_effects: Vec<UnresolvedEffect>,
    /// Explicit supersession, when replaced.
    pub supersession: Option<FenceSupersession>,
    /// What may be done next.
    pub permitted: Vec<RecoveryAction>,
}

/// An operator enrollment of an executor key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutorEnrollment {
    /// Schema version.
    pub version: u32,
    /// Registration id.
    pub registration_id: String,
    /// Repository scope.
    pub repository: String,
    /// Profile scope.
    pub profile: String,
    /// Step scope.
    pub step_id: String,
    /// Executor name.
    pub executor_id: String,
    /// Ed25519 public key (64 hex).
    pub public_key: String,
    /// Key id (`domain_digest("agent-task.ed25519-key-id.v1", key)`).
    pub verification_key_id: String,
    /// Immutable epoch.
    pub epoch: u64,
}

impl ExecutorEnrollment {
    /// Structural scope and binding check only: never admission.
    pub fn validate_scope_and_binding(
        &self,
        repository: &str,
        profile: &str,
        step_id: &str,
        executor: &ExecutorRef,
    ) -> bool {
        self.repository == repository
            && self.profile == profile
            && self.step_id == step_id
            && self.registration_id == executor.registration_id
            && self.executor_id == executor.executor_id
            && self.epoch == executor.registration_epoch
            && self.verification_key_id == executor.verification_key_id
    }
}

/// Key id of a public key: `kid_` + first 32 hex of
/// `domain_digest("agent-task.ed25519-key-id.v1", key bytes)`.
pub fn key_id(public_key: &[u8; 32]) -> String {
    format!(
        "kid_{}",
        &domain_digest("agent-task.ed25519-key-id.v1", public_key).as_str()[..32]
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths() {
        for ok in ["a", "docs/TESTING.md", "a.b/c-d_e"] {
            check_relative_path(ok).expect(ok);
        }
        for bad in [
            "", "/a", "a//b", "a/./b", "../a", "a/..", "a\\b", "c:x", "a\u{0}b", "a\u{7f}", "é",
            "a/",
        ] {
            assert!(check_relative_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn strict_decoding() {
        let j = r#"{"version":1,"request_id":"r","task_id":"t","task_digest":"0000000000000000000000000000000000000000000000000000000000000000","requested_lease_ms":5000,"executor":null,"extra":1}"#;
        assert!(serde_json::from_str::<TaskClaimRequest>(j).is_err());
        let j = r#"{"version":2,"request_id":"r","task_id":"t","task_digest":"0000000000000000000000000000000000000000000000000000000000000000","requested_lease_ms":5000,"executor":null}"#;
        let r: TaskClaimRequest = serde_json::from_str(j).expect("decodes");
        assert!(r.validate().is_err());
    }

    #[test]
    fn digests_change_with_inputs() {
        let c = Sha256Hex::digest(b"c");
        assert_ne!(task_id_for(&c, "a"), task_id_for(&c, "b"));
        assert_ne!(
            task_id_for(&c, "a"),
            task_id_for(&Sha256Hex::digest(b"d"), "a")
        );
        let req = TaskClaimRequest {
            version: 1,
            request_id: "r".into(),
            task_id: "t".into(),
            task_digest: c.clone(),
            requested_lease_ms: 5000,
            executor: None,
        };
        let mut r2 = req.clone();
        r2.requested_lease_ms = 5001;
        assert_ne!(
            req.request_digest().expect("d"),
            r2.request_digest().expect("d")
        );
    }
}
