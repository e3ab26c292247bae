//! Every request and output type of the agent operations, in one place:
//! the one request struct per operation that clap builds from the CLI's
//! flags, the HTTP endpoint and the MCP tools decode strictly from JSON,
//! and [`super::facade`] and [`super::ops`] take as it is
//! ([`OperationRequest`] and its variants), and what the operations
//! answer. It names no other file of the service, so every file of the
//! service may import it; the faces find the requests where they always
//! did, re-exported by [`super::facade`].

use crate::contract::{ActionClass, ReferenceFetchRequest, SCHEMA_VERSION, TaskResultAssertion};
use crate::wire::digest::Sha256Hex;
use crate::workflow::authority::change::ChangeSel;
use serde::{Deserialize, Serialize};

/// The lease a claim or heartbeat asks for when the caller names none.
pub fn default_lease() -> u64 {
    300_000
}
fn default_schema() -> u32 {
    SCHEMA_VERSION
}

/// One agent operation, as sent over HTTP (`{"operation": …, …}`) or as an
/// MCP tool call (tool name = operation, arguments = the other fields).
/// The CLI's `--endpoint` client serialises the same struct (a Change is
/// then named by id only).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(tag = "operation", rename_all = "snake_case", deny_unknown_fields)]
pub enum OperationRequest {
    /// Capability, schema versions and operation names.
    Capabilities {},
    /// The installed requirement of a Change's profile.
    Requirements(ChangeRequest),
    /// The typed next operation for a Change.
    Next(ChangeRequest),
    /// A task's instruction entrypoint (or a schema mismatch).
    Instructions(InstructionsRequest),
    /// One named reference of a task: the contract's request, decoded
    /// strictly, passed as it is to [`ops::reference`](super::ops::reference).
    Reference(ReferenceFetchRequest),
    /// Claim a pending task.
    Claim(ClaimRequest),
    /// Renew an attempt's lease.
    Heartbeat(MutationBody),
    /// Cancel an attempt.
    Cancel(MutationBody),
    /// Supersede an attempt's fence.
    Reconcile(MutationBody),
    /// Submit an assertion or a signed registered observation.
    Result(ResultRequest),
    /// Exact-attempt status.
    Status(StatusRequest),
    /// Claim a command task for the installed collector profile; the
    /// answer holds the authority-derived descriptor.
    CollectorClaim(CollectorClaimRequest),
    /// The authority-derived descriptor of a claimed collector attempt.
    CollectorDescriptor(CollectorDescriptorRequest),
    /// Create the v2 receipt of a Change's current subject from retained
    /// validated transfers.
    CollectorFinalize(ChangeRequest),
    /// Read-only exact-subject qualification.
    Qualification(ChangeRequest),
    /// Why the current subject does not qualify, from the signed evidence
    /// (read-only; never a field of qualification).
    Explain(ExplainRequest),
    /// Open a Change through the endpoint on the profile's repository and
    /// profile (the workspace is the client's and is never named).
    ChangeOpen(ChangeOpenRequest),
    /// The current subject of a Change (version, revision, context digest,
    /// base, workspace), read-only: what the Stop hook compares.
    ChangeSubject(ChangeRequest),
    /// The bearer's own open (not landed) Changes in scope, read-only:
    /// how the machine-wide Stop hook finds the Change of a workspace.
    ChangeList {},
    /// The overview of the bearer's own Changes in scope (read-only):
    /// subject, group, tasks, current attempts, receipts, landings and
    /// qualification of each.
    Overview(OverviewRequest),
    /// Commit a remote checkpoint whose manifest was posted and whose
    /// missing blobs were uploaded: a new Change version, exactly as a
    /// local checkpoint records it.
    CheckpointCommit(CheckpointCommitRequest),
    /// Recovery envelope.
    Recovery(RecoveryRequest),
}

/// Encodes a Change for the wire: by id only (a workspace path names a
/// Change only on the authority's own host).
fn change_as_id<S: serde::Serializer>(c: &ChangeSel, s: S) -> std::result::Result<S::Ok, S::Error> {
    match c {
        ChangeSel::Id(id) => s.serialize_str(id),
        ChangeSel::Workspace(_) => Err(serde::ser::Error::custom(
            "with --endpoint, name the Change with --change (the endpoint knows no workspace path)",
        )),
    }
}

/// Decodes the wire's `change_id` string: a remote caller names a Change
/// only by id, never by a path.
fn change_by_id<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> std::result::Result<ChangeSel, D::Error> {
    String::deserialize(d).map(ChangeSel::Id)
}

/// `requirements`, `next`, `collector_finalize`, `qualification` and
/// `change_subject`: the one request of the operations that name a Change
/// alone. Decoded strictly from JSON (a remote caller names the Change by
/// `change_id` only, never by a path); the CLI builds it from `--change` or
/// the workspace it runs in.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeRequest {
    /// The Change (`change_id` on the wire; the CLI may name it by workspace).
    #[serde(
        rename = "change_id",
        deserialize_with = "change_by_id",
        serialize_with = "change_as_id"
    )]
    pub change: ChangeSel,
}

/// `explain`: a Change, optionally narrowed to one task of its current
/// subject (read-only, qualification's authorisation).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainRequest {
    /// The Change (`change_id` on the wire; the CLI may name it by workspace).
    #[serde(
        rename = "change_id",
        deserialize_with = "change_by_id",
        serialize_with = "change_as_id"
    )]
    pub change: ChangeSel,
    /// Only this task of the current subject.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// `checkpoint_commit` (endpoint only): commit a remote checkpoint whose
/// manifest was posted and whose missing blobs were uploaded.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointCommitRequest {
    /// The Change (`change_id` on the wire).
    #[serde(
        rename = "change_id",
        deserialize_with = "change_by_id",
        serialize_with = "change_as_id"
    )]
    pub change: ChangeSel,
    /// The revision the manifest route answered.
    pub revision: Sha256Hex,
    /// Mint a new subject even for the current subject's tree
    /// (`checkpoint --new-subject`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_subject: bool,
    /// The Change's title (first line) and body (`checkpoint --message`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `change_open` (endpoint only): open a Change on the profile's
/// repository and profile.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeOpenRequest {
    /// Idempotency key: a retry returns the Change this request opened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The Change's title (the landed commit's subject).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The Change's body (the landed commit's message body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The Change's group: the Changes made for the same work (best-of-N),
    /// shown side by side by `overview`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// `result`: the assertion document (the CLI reads it from `--file`,
/// bounded, and decodes it strictly).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ResultRequest {
    /// The TaskResultAssertion document.
    pub assertion: Box<TaskResultAssertion>,
}

/// `collector_descriptor`: the authority-derived descriptor of a claimed
/// collector attempt.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorDescriptorRequest {
    /// Attempt id.
    pub attempt_id: String,
}

/// `claim`: the one request of the operation, decoded strictly from JSON
/// (HTTP, MCP: `OperationRequest::Claim`), built by clap from the CLI's
/// flags (`task claim`), and passed as it is to [`ops::claim`](super::ops::claim).
#[derive(Debug, Clone, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct ClaimRequest {
    /// Task id.
    #[arg(id = "task", value_name = "TASK")]
    pub task_id: String,
    /// Idempotency key (an identical retry returns the retained outcome).
    /// The CLI generates a fresh one when it is omitted and prints it as
    /// `request_id`, for a retry to reuse.
    #[arg(long, default_value = "", hide_default_value = true)]
    pub request_id: String,
    /// Requested lease.
    #[serde(default = "default_lease")]
    #[arg(long, default_value_t = default_lease())]
    pub lease_ms: u64,
    /// Executor registration that will run the task.
    #[serde(default)]
    #[arg(long)]
    pub executor: Option<String>,
}

/// `heartbeat`, `cancel` and `reconcile`: the one request of the three
/// operations, decoded strictly from JSON (HTTP, MCP), built by clap from
/// the CLI's flags and passed as it is to the journal's mutation.
#[derive(Debug, Clone, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct MutationBody {
    /// Attempt id.
    #[arg(long = "attempt", id = "attempt", value_name = "ATTEMPT")]
    pub attempt_id: String,
    /// The fence the caller holds.
    #[arg(long)]
    pub fence: u64,
    /// Idempotency key. The CLI generates a fresh one when it is omitted
    /// and prints it as `request_id`, for a retry to reuse.
    #[arg(long, default_value = "", hide_default_value = true)]
    pub request_id: String,
    /// Requested lease (heartbeat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub lease_ms: Option<u64>,
    /// Reason (cancel, reconcile).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[arg(long)]
    pub reason: Option<String>,
}

/// `instructions`: decoded from JSON, built by clap (`instructions TASK`),
/// passed as it is to [`ops::instructions`](super::ops::instructions).
#[derive(Debug, Clone, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct InstructionsRequest {
    /// Task id.
    #[arg(id = "task", value_name = "TASK")]
    pub task_id: String,
    /// Schema version the caller speaks.
    #[serde(default = "default_schema")]
    #[arg(long, default_value_t = SCHEMA_VERSION)]
    pub schema_version: u32,
}

/// `status`: decoded from JSON, built by clap (`status --task --attempt`),
/// passed as it is to [`ops::status`](super::ops::status).
#[derive(Debug, Clone, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct StatusRequest {
    /// Task id.
    #[arg(long = "task", id = "task", value_name = "TASK")]
    pub task_id: String,
    /// Attempt id.
    #[arg(long = "attempt", id = "attempt", value_name = "ATTEMPT")]
    pub attempt_id: String,
}

/// `recovery`: decoded from JSON, built by clap, passed as it is to
/// [`ops::recovery`](super::ops::recovery).
#[derive(Debug, Clone, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct RecoveryRequest {
    /// Task id.
    #[arg(long = "task", id = "task", value_name = "TASK")]
    pub task_id: String,
    /// Attempt id (default: the task's current attempt).
    #[serde(default)]
    #[arg(long = "attempt", id = "attempt", value_name = "ATTEMPT")]
    pub attempt_id: Option<String>,
    /// Request id to resolve.
    #[serde(default)]
    #[arg(long)]
    pub request_id: Option<String>,
}

/// `collector_claim`: decoded from JSON; the CLI builds it from
/// `collector-claim TASK [--request-id]` (a fresh idempotency key when none
/// is named) and it goes as it is to `service::collect::collector_claim`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorClaimRequest {
    /// Task id.
    pub task_id: String,
    /// Idempotency key.
    pub request_id: String,
}

impl OperationRequest {
    /// The operation name.
    pub fn name(&self) -> &'static str {
        match self {
            Self::Capabilities {} => "capabilities",
            Self::Requirements(_) => "requirements",
            Self::Next(_) => "next",
            Self::Instructions(_) => "instructions",
            Self::Reference(_) => "reference",
            Self::Claim { .. } => "claim",
            Self::Heartbeat(_) => "heartbeat",
            Self::Cancel(_) => "cancel",
            Self::Reconcile(_) => "reconcile",
            Self::Result(_) => "result",
            Self::Status(_) => "status",
            Self::Recovery(_) => "recovery",
            Self::CollectorClaim(_) => "collector_claim",
            Self::CollectorDescriptor(_) => "collector_descriptor",
            Self::CollectorFinalize(_) => "collector_finalize",
            Self::Qualification(_) => "qualification",
            Self::Explain(_) => "explain",
            Self::ChangeOpen(_) => "change_open",
            Self::ChangeSubject(_) => "change_subject",
            Self::ChangeList {} => "change_list",
            Self::Overview(_) => "overview",
            Self::CheckpointCommit(_) => "checkpoint_commit",
        }
    }
}

/// The output of `requirements`.
#[derive(Debug, serde::Serialize)]
pub struct RequirementsOutput {
    /// The capability this service speaks.
    pub capability: &'static str,
    /// The task contract's schema version.
    pub schema_version: u32,
    /// The Change's repository.
    pub repository: String,
    /// The Change's profile.
    pub profile: String,
    /// The Change.
    pub change_id: String,
    /// The installed requirement's digest.
    pub requirement_digest: String,
    /// The installed requirement, parsed.
    pub workflow: crate::contract::workflow::Workflow,
}

/// One task of `next`'s `tasks`.
#[derive(Debug, serde::Serialize)]
pub struct NextTask {
    /// The task.
    pub task_id: String,
    /// Its digest.
    pub task_digest: crate::wire::digest::Sha256Hex,
    /// Its step.
    pub step_id: String,
    /// Its action class.
    pub action_class: ActionClass,
    /// Whether the subject needs it.
    pub required: bool,
    /// Its state as `next` projects it.
    pub state: String,
    /// Its typed next operation.
    pub next: crate::contract::Next,
}

/// Most Changes one overview lists (`truncated` says when more matched).
pub const MAX_OVERVIEW_CHANGES: usize = 10_000;

/// The state of a Change as the overview names it: `open` (no checkpoint
/// yet), `working` (a subject that does not qualify), `qualified`,
/// `landed`, `stale` (another Change of its group and repository landed).
pub const CHANGE_STATES: &[&str] = &["open", "working", "qualified", "landed", "stale"];

/// The states of a task as qualification evaluates them.
pub const TASK_STATES: &[&str] = &[
    "pending",
    "claimed",
    "succeeded",
    "failed",
    "uncertain",
    "blocked",
];

/// The states of an attempt as the journal observes them.
pub const ATTEMPT_STATES: &[&str] = &["leased", "expired", "finished", "cancelled"];

/// What an overview lists: every filter given must hold.
#[derive(Debug, Clone, Default, Deserialize, Serialize, clap::Args)]
#[serde(deny_unknown_fields)]
pub struct OverviewRequest {
    /// Only Changes of this repository.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo: Option<String>,
    /// Only this Change (`not_found` when it does not exist or, through
    /// the endpoint, belongs to another profile).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<String>,
    /// Only Changes in this state, or with a task or a current attempt in
    /// it: a Change state (open, working, qualified, landed, stale), a
    /// task state (pending, claimed, succeeded, failed, uncertain,
    /// blocked) or an attempt state (leased, expired, finished,
    /// cancelled).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
    /// Only Changes opened by this agent id or with a current attempt it
    /// holds (`by_agent` on the wire: a body never names `agent`).
    #[arg(long = "agent", value_name = "AGENT")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub by_agent: Option<String>,
    /// Only Changes of this group (`change open --group`).
    #[arg(long)]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

impl OverviewRequest {
    pub(crate) fn check(&self) -> crate::error::Result<()> {
        for (field, v) in [
            ("repo", &self.repo),
            ("change_id", &self.change),
            ("by_agent", &self.by_agent),
            ("group", &self.group),
        ] {
            if let Some(v) = v {
                crate::contract::check_id(field, v)?;
            }
        }
        if let Some(s) = &self.state {
            let s = s.as_str();
            if !(CHANGE_STATES.contains(&s)
                || TASK_STATES.contains(&s)
                || ATTEMPT_STATES.contains(&s))
            {
                return Err(crate::error::Error::new(
                    crate::error::Code::InvalidInput,
                    format!("unknown state `{}`", s.chars().take(64).collect::<String>()),
                )
                .with("field", "state")
                .with("change_states", CHANGE_STATES.to_vec())
                .with("task_states", TASK_STATES.to_vec())
                .with("attempt_states", ATTEMPT_STATES.to_vec()));
            }
        }
        Ok(())
    }
}

/// The overview.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Overview {
    /// The authority clock's instant the overview was read at (Unix ms):
    /// every `lease_remaining_ms` is counted from it.
    pub now_ms: i64,
    /// The Changes, grouped ones first (by group, then age), then the
    /// others, oldest first.
    pub changes: Vec<ChangeView>,
    /// Whether more than [`MAX_OVERVIEW_CHANGES`] Changes matched.
    pub truncated: bool,
}

/// One Change of the overview.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChangeView {
    /// The Change.
    pub change_id: String,
    /// Its repository.
    pub repository: String,
    /// Its profile.
    pub profile: String,
    /// The owner of the agent that opened it.
    pub owner_id: String,
    /// The agent that opened it.
    pub agent_id: String,
    /// Its group (`change open --group`), `null` without one.
    pub group: Option<String>,
    /// Its title, `null` when never given.
    pub title: Option<String>,
    /// Its current version (0 before the first checkpoint).
    pub version: u64,
    /// Its current subject's revision (`null` before the first checkpoint).
    pub revision: Option<String>,
    /// open | working | qualified | landed | stale ([`CHANGE_STATES`]).
    pub state: String,
    /// Whether its current subject qualifies (`qualification.qualified`).
    pub qualified: bool,
    /// Whether its current subject is current (`qualification.subject_current`).
    pub subject_current: bool,
    /// The tasks of its current subject.
    pub tasks: Vec<TaskView>,
    /// Its receipts, by version.
    pub receipts: Vec<ReceiptView>,
    /// Its landings (pending, landed, abandoned), oldest first.
    pub landings: Vec<LandingView>,
}

/// One task of a Change's current subject.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskView {
    /// The task.
    pub task_id: String,
    /// Its step.
    pub step_id: String,
    /// Whether the subject needs it.
    pub required: bool,
    /// Its state as qualification evaluates it ([`TASK_STATES`]).
    pub state: String,
    /// Its current attempt, `null` when it has none.
    pub attempt: Option<AttemptView>,
}

/// A task's current attempt.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttemptView {
    /// The attempt.
    pub attempt_id: String,
    /// leased | expired | finished | cancelled ([`ATTEMPT_STATES`]).
    pub state: String,
    /// The owner of the holder.
    pub owner_id: String,
    /// The holder: the agent that claimed it.
    pub agent_id: String,
    /// The registered executor it was claimed for, if any.
    pub executor: Option<String>,
    /// Its fence.
    pub fence: u64,
    /// When its lease ends (Unix ms, the authority clock).
    pub lease_expires_ms: i64,
    /// Lease left at `now_ms` (0 once passed); `null` unless leased.
    pub lease_remaining_ms: Option<i64>,
}

/// A receipt of a Change.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptView {
    /// The version it covers.
    pub version: u64,
    /// Its digest.
    pub receipt_digest: String,
    /// When it was created.
    pub created_at: String,
}

/// A landing of a Change.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandingView {
    /// The landed version.
    pub version: u64,
    /// pending | landed | abandoned.
    pub state: String,
    /// The landed commit (git targets), `null` otherwise or before it lands.
    pub git_commit: Option<String>,
    /// When it landed, `null` unless landed.
    pub landed_at: Option<String>,
    /// Who landed it: `land`, or `forge_sync` (the forge merged a
    /// request whose tree is the qualified revision; docs/forge.md).
    pub landed_by: String,
}
