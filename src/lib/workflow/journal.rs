//! `journal.sqlite`: logical tasks, attempts, retained assertions and
//! idempotency rows, and the attempt state machine of
//! `docs/state-machine.md`.
//!
//! Every mutation runs inside one critical section (see [`crate::workflow::service::ops`]):
//! data-dir lock → journal immediate transaction → authority read
//! transaction (rechecks) → journal commit. The functions here take that
//! journal transaction and authority connection; they never open files.

use crate::clock::rfc3339_millis;
use crate::contract::observation;
use crate::contract::*;
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DbSpec, Migration, OptionalExtension, params};
use serde::Serialize;
use serde_json::Value;

/// The journal database.
pub static SPEC: DbSpec = DbSpec {
    name: "journal",
    file: "journal.sqlite",
    migrations: MIGRATIONS,
    on_open: None,
};

/// The journal's connection in a unit of work (`store` names no
/// database; this is the workflow's name for it).
pub trait JournalWork<'s> {
    /// The journal, when the plan opened it and it exists (a read-only
    /// journal may be absent).
    fn journal(&self) -> Option<&'s Connection>;
    /// The journal of a plan that opens it for writing.
    fn journal_write(&self) -> Result<&'s Connection>;
}

impl<'s> JournalWork<'s> for crate::store::Work<'s> {
    fn journal(&self) -> Option<&'s Connection> {
        self.db(&SPEC)
    }

    fn journal_write(&self) -> Result<&'s Connection> {
        self.db(&SPEC)
            .ok_or_else(|| Error::internal("the session did not open the journal for writing"))
    }
}

static MIGRATIONS: &[Migration] = &[Migration {
    version: 1,
    description: "tasks, attempts, assertions, idempotency",
    sql: "
CREATE TABLE tasks (
    task_id TEXT PRIMARY KEY NOT NULL,
    task_digest TEXT NOT NULL,
    repo_id TEXT NOT NULL,
    profile_id TEXT NOT NULL,
    change_id TEXT NOT NULL,
    change_version INTEGER NOT NULL,
    step_id TEXT NOT NULL,
    task_json BLOB NOT NULL,
    last_fence INTEGER NOT NULL,
    current_attempt TEXT,
    created_at TEXT NOT NULL
) STRICT;
CREATE INDEX tasks_by_scope ON tasks(repo_id, change_id, profile_id, step_id, change_version);
CREATE TABLE attempts (
    attempt_id TEXT PRIMARY KEY NOT NULL,
    task_id TEXT NOT NULL REFERENCES tasks(task_id),
    attempt_digest TEXT NOT NULL,
    attempt_json BLOB NOT NULL,
    fence INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('leased', 'finished', 'cancelled', 'replaced')),
    lease_expires_ms INTEGER NOT NULL,
    superseded_by_fence INTEGER,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL
) STRICT;
CREATE TABLE assertions (
    attempt_id TEXT PRIMARY KEY NOT NULL REFERENCES attempts(attempt_id),
    request_id TEXT NOT NULL,
    trust_class TEXT NOT NULL,
    outcome TEXT NOT NULL,
    registration_id TEXT,
    observation_digest TEXT,
    assertion_json BLOB NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
CREATE TABLE idempotency (
    owner_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    kind TEXT NOT NULL,
    request_digest TEXT NOT NULL,
    outcome_json BLOB NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (owner_id, agent_id, request_id)
) STRICT;
",
}];

/// Most retained task identities scanned for unresolved older subjects.
pub const PRIOR_SCAN_LIMIT: i64 = 4096;

/// An attempt's observed state. `Expired` is a read-time observation of a
/// leased attempt whose lease has passed: not proof that work stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttemptState {
    /// Leased and within its lease.
    Leased,
    /// Leased, lease passed.
    Expired,
    /// A result was retained.
    Finished,
    /// Cancelled (execution may still run).
    Cancelled,
    /// Explicitly superseded by reconciliation.
    Replaced,
}

impl AttemptState {
    /// snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptState::Leased => "leased",
            AttemptState::Expired => "expired",
            AttemptState::Finished => "finished",
            AttemptState::Cancelled => "cancelled",
            AttemptState::Replaced => "replaced",
        }
    }
}

/// A stored attempt.
#[derive(Debug, Clone)]
pub struct AttemptRow {
    /// The attempt.
    pub attempt: WorkflowTaskAttempt,
    /// Its digest.
    pub digest: Sha256Hex,
    /// Stored state (`leased` before expiry is applied).
    pub stored_state: String,
    /// Lease end.
    pub lease_expires_ms: i64,
    /// Fence that superseded it.
    pub superseded_by_fence: Option<u64>,
}

use crate::wire::digest::Sha256Hex;

impl AttemptRow {
    /// The state observed at `now_ms`.
    pub fn state(&self, now_ms: i64) -> AttemptState {
        match self.stored_state.as_str() {
            "finished" => AttemptState::Finished,
            "cancelled" => AttemptState::Cancelled,
            "replaced" => AttemptState::Replaced,
            _ if now_ms >= self.lease_expires_ms => AttemptState::Expired,
            _ => AttemptState::Leased,
        }
    }
}

/// Loads an attempt.
pub fn attempt(j: &Connection, attempt_id: &str) -> Result<Option<AttemptRow>> {
    type Row = (String, Vec<u8>, String, i64, Option<i64>);
    let row: Option<Row> = j
        .prepare_cached("SELECT attempt_digest, attempt_json, state, lease_expires_ms, superseded_by_fence FROM attempts WHERE attempt_id = ?1")?.query_row(params![attempt_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?)),
        )
        .optional()?;
    let Some((d, json, state, exp, sup)) = row else {
        return Ok(None);
    };
    let parsed = parsed_attempt(attempt_id, &d, json)?;
    if parsed.digest.as_str() != d {
        return Err(Error::new(
            Code::IntegrityError,
            "stored attempt does not match its digest",
        ));
    }
    Ok(Some(AttemptRow {
        attempt: parsed.attempt.clone(),
        digest: parsed.digest.clone(),
        stored_state: state,
        lease_expires_ms: exp,
        superseded_by_fence: sup.map(|f| f as u64),
    }))
}

/// An attempt's stored bytes and what they parse and hash to.
struct ParsedAttempt {
    stored_digest: String,
    json: Vec<u8>,
    attempt: WorkflowTaskAttempt,
    digest: Sha256Hex,
}

/// Parsed attempts kept at most (by attempt id; the map is emptied when
/// full). Under `serve` every heartbeat and qualification of an agent loads
/// its attempt two or three times.
const ATTEMPTS_KEPT: usize = 4096;

static ATTEMPTS: std::sync::LazyLock<
    std::sync::Mutex<std::collections::HashMap<String, std::sync::Arc<ParsedAttempt>>>,
> = std::sync::LazyLock::new(Default::default);

/// The parse and digest of an attempt's stored bytes, remembered: a hit is
/// only ever the same stored digest and the same bytes byte for byte
/// (compared in full), so it is exactly what parsing and hashing them
/// again would give; the caller still compares the digest with the row's.
fn parsed_attempt(
    attempt_id: &str,
    stored_digest: &str,
    json: Vec<u8>,
) -> Result<std::sync::Arc<ParsedAttempt>> {
    let hit = ATTEMPTS.lock().ok().and_then(|c| {
        c.get(attempt_id)
            .filter(|p| p.stored_digest == stored_digest && p.json == json)
            .cloned()
    });
    if let Some(p) = hit {
        return Ok(p);
    }
    let attempt: WorkflowTaskAttempt = serde_json::from_slice(&json)?;
    let digest = attempt.digest()?;
    let p = std::sync::Arc::new(ParsedAttempt {
        stored_digest: stored_digest.to_owned(),
        json,
        attempt,
        digest,
    });
    if let Ok(mut c) = ATTEMPTS.lock() {
        if c.len() >= ATTEMPTS_KEPT {
            c.clear();
        }
        c.insert(attempt_id.to_owned(), p.clone());
    }
    Ok(p)
}

/// The task an attempt belongs to (no digest check: a scope lookup).
pub fn attempt_task(j: &Connection, attempt_id: &str) -> Result<Option<String>> {
    Ok(
        j.prepare_cached("SELECT task_id FROM attempts WHERE attempt_id = ?1")?
            .query_row(params![attempt_id], |r| r.get(0))
            .optional()?,
    )
}

/// A task's journal row: last fence and current attempt.
pub fn task_row(j: &Connection, task_id: &str) -> Result<Option<(u64, Option<String>)>> {
    Ok(
        j.prepare_cached("SELECT last_fence, current_attempt FROM tasks WHERE task_id = ?1")?
            .query_row(params![task_id], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?))
            })
            .optional()?,
    )
}

/// The observed task state: `pending` (no attempt or replaced), else the
/// current attempt's state.
pub fn task_state(
    j: Option<&Connection>,
    task_id: &str,
    now_ms: i64,
) -> Result<(String, Option<AttemptRow>)> {
    let Some(j) = j else {
        return Ok(("pending".into(), None));
    };
    let Some((_, cur)) = task_row(j, task_id)? else {
        return Ok(("pending".into(), None));
    };
    let Some(cur) = cur else {
        return Ok(("pending".into(), None));
    };
    let a = attempt(j, &cur)?
        .ok_or_else(|| Error::new(Code::IntegrityError, "task names a missing attempt"))?;
    let s = a.state(now_ms);
    if s == AttemptState::Replaced {
        return Ok(("pending".into(), Some(a)));
    }
    Ok((s.as_str().into(), Some(a)))
}

/// The retained assertion of an attempt: (trust_class, outcome).
pub fn retained(j: &Connection, attempt_id: &str) -> Result<Option<(String, String)>> {
    Ok(
        j.prepare_cached("SELECT trust_class, outcome FROM assertions WHERE attempt_id = ?1")?
            .query_row(params![attempt_id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?,
    )
}

/// Whether a task's retained result completes it as a dependency: only a
/// task-bound registered observation that passed completes an observation
/// step; an agent assertion that passed completes an assertion step;
/// command and review steps complete only through controller receipts.
pub fn completes_dependency(task: &WorkflowTask, trust: &str, outcome: &str) -> bool {
    outcome == "passed"
        && match task.action_class {
            ActionClass::Observation => trust == "registered_executor_observation",
            ActionClass::Assertion => trust == "agent_assertion",
            ActionClass::Command | ActionClass::Review => false,
        }
}

/// Whether the task is complete as a dependency: an observation or
/// assertion step by its retained passing result in the journal; a command
/// or review step only by the authority's imported, validated transfer of
/// its finished attempt whose outcome passed, from a registration that is
/// not revoked ([`Authority::controller_passed`]).
pub fn dependency_complete(
    j: Option<&Connection>,
    a: &dyn Authority,
    dep: &WorkflowTask,
    now_ms: i64,
) -> Result<bool> {
    let Some(jc) = j else { return Ok(false) };
    let (state, row) = task_state(Some(jc), &dep.task_id, now_ms)?;
    if state != "finished" {
        return Ok(false);
    }
    let Some(row) = row else { return Ok(false) };
    match dep.action_class {
        ActionClass::Command | ActionClass::Review => {
            a.controller_passed(&dep.task_id, &row.attempt.attempt_id)
        }
        ActionClass::Observation | ActionClass::Assertion => {
            Ok(retained(jc, &row.attempt.attempt_id)?
                .is_some_and(|(t, o)| completes_dependency(dep, &t, &o)))
        }
    }
}

/// The first unresolved older subject's task for the same repository,
/// Change, profile and step (bounded scan).
fn prior_unresolved(
    j: Option<&Connection>,
    t: &WorkflowTask,
    now_ms: i64,
) -> Result<Option<String>> {
    let Some(j) = j else { return Ok(None) };
    let s = &t.subject;
    let mut st = j.prepare_cached(
        "SELECT task_id FROM tasks WHERE repo_id = ?1 AND change_id = ?2 AND profile_id = ?3 AND step_id = ?4 \
         AND change_version < ?5 ORDER BY change_version DESC LIMIT ?6",
    )?;
    let ids: Vec<String> = st
        .query_map(
            params![
                s.repository,
                s.change_id,
                s.profile,
                s.step_id,
                s.change_version as i64,
                PRIOR_SCAN_LIMIT
            ],
            |r| r.get(0),
        )?
        .collect::<rusqlite::Result<_>>()?;
    for id in ids {
        let (state, _) = task_state(Some(j), &id, now_ms)?;
        if matches!(state.as_str(), "leased" | "expired" | "cancelled") {
            return Ok(Some(id));
        }
    }
    Ok(None)
}

/// Why a task cannot be claimed now, in the documented order
/// (docs/state-machine.md, step 8): it is not pending, a dependency is not
/// complete, or an older subject of its step is unresolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unclaimable {
    /// The task's state (`leased`, `expired`, `finished`, `cancelled`).
    NotPending(String),
    /// The first incomplete dependency.
    DependencyIncomplete {
        /// Its task id.
        task_id: String,
        /// Its step.
        step_id: String,
    },
    /// The unresolved older subject's task id (reconcile it).
    PriorUnresolved(String),
}

/// The one claimability decision: everything the journal says about
/// whether `task` may be claimed now. `claim` and `next` project it with
/// [`Claimability::unclaimable`] (the documented order); `qualify`
/// projects the same decision onto its per-task states (an unresolved
/// older subject blocks; a pending task is otherwise `task_pending`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claimability {
    /// The task's state (`pending`, `leased`, `expired`, `finished`,
    /// `cancelled`).
    pub state: String,
    /// The first incomplete dependency (pending tasks only).
    pub dependency: Option<Unclaimable>,
    /// The unresolved older subject's task id (pending tasks only).
    pub prior_unresolved: Option<String>,
}

impl Claimability {
    /// Why the task cannot be claimed, in the documented order
    /// (docs/state-machine.md, step 8); `None` when it can.
    pub fn unclaimable(self) -> Option<Unclaimable> {
        if self.state != "pending" {
            return Some(Unclaimable::NotPending(self.state));
        }
        self.dependency
            .or(self.prior_unresolved.map(Unclaimable::PriorUnresolved))
    }
}

/// Decides [`Claimability`] for `task`; `subject_tasks` are the tasks of
/// its subject (its dependencies). A task that is not pending is decided
/// by its state alone. The caller's own checks (controller-only steps,
/// subject currency, the executor registration) come first.
pub fn claimability(
    j: Option<&Connection>,
    a: &dyn Authority,
    task: &WorkflowTask,
    subject_tasks: &[WorkflowTask],
    now_ms: i64,
) -> Result<Claimability> {
    let (state, _) = task_state(j, &task.task_id, now_ms)?;
    if state != "pending" {
        return Ok(Claimability {
            state,
            dependency: None,
            prior_unresolved: None,
        });
    }
    let mut dependency = None;
    for dep_id in &task.depends_on {
        let dep = subject_tasks
            .iter()
            .find(|t| &t.task_id == dep_id)
            .ok_or_else(|| {
                Error::new(Code::IntegrityError, "dependency missing from its subject")
            })?;
        if !dependency_complete(j, a, dep, now_ms)? {
            dependency = Some(Unclaimable::DependencyIncomplete {
                task_id: dep_id.clone(),
                step_id: dep.subject.step_id.clone(),
            });
            break;
        }
    }
    Ok(Claimability {
        state,
        dependency,
        prior_unresolved: prior_unresolved(j, task, now_ms)?,
    })
}

/// The claimability check of `claim` (which refuses with the matching
/// code) and `next` (which offers the way on): `None` when the journal
/// lets `task` be claimed ([`claimability`] in the documented order).
pub fn unclaimable(
    j: Option<&Connection>,
    a: &dyn Authority,
    task: &WorkflowTask,
    subject_tasks: &[WorkflowTask],
    now_ms: i64,
) -> Result<Option<Unclaimable>> {
    Ok(claimability(j, a, task, subject_tasks, now_ms)?.unclaimable())
}

/// Idempotency: `Some(retained)` for an identical retry, an
/// `idempotency_conflict` for the same id with other bytes or kind, `None`
/// for a new request.
fn idem_check(
    j: &Connection,
    actor: &Actor,
    request_id: &str,
    kind: &str,
    digest: &Sha256Hex,
) -> Result<Option<Value>> {
    let row: Option<(String, String, Vec<u8>)> = j
        .prepare_cached("SELECT kind, request_digest, outcome_json FROM idempotency WHERE owner_id = ?1 AND agent_id = ?2 AND request_id = ?3")?.query_row(params![actor.owner_id, actor.agent_id, request_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    match row {
        None => Ok(None),
        Some((k, d, out)) if k == kind && d == digest.as_str() => {
            Ok(Some(serde_json::from_slice(&out)?))
        }
        Some((k, _, _)) => Err(Error::new(
            Code::IdempotencyConflict,
            format!("request id {request_id} was already used for a different {k} request"),
        )
        .with("request_id", request_id)
        .with("retained_kind", k)),
    }
}

fn idem_store(
    j: &Connection,
    actor: &Actor,
    request_id: &str,
    kind: &str,
    digest: &Sha256Hex,
    out: &Value,
    now: &str,
) -> Result<()> {
    j.prepare_cached("INSERT INTO idempotency(owner_id, agent_id, request_id, kind, request_digest, outcome_json, created_at) VALUES (?1,?2,?3,?4,?5,?6,?7)")?.execute(params![actor.owner_id, actor.agent_id, request_id, kind, digest.as_str(), serde_json::to_vec(out)?, now],
    )?;
    Ok(())
}

/// Time of a transition.
#[derive(Debug, Clone, Copy)]
pub struct Now {
    /// Milliseconds since the epoch.
    pub ms: i64,
}

impl Now {
    fn text(self) -> String {
        jiff::Timestamp::from_millisecond(self.ms)
            .map(rfc3339_millis)
            .unwrap_or_default()
    }
}

/// A task as the authority stores it (see [`Authority::find_task`]): the
/// task, left among every task of its subject (for dependencies), and
/// whether the actor may act on its Change.
#[derive(Debug, Clone)]
pub struct FoundTask {
    tasks: std::sync::Arc<[WorkflowTask]>,
    index: usize,
    /// Whether the actor may act on the task's Change.
    pub visible: bool,
}

impl FoundTask {
    /// The task at `index` of its subject's `tasks`; an index outside
    /// them is an integrity error.
    pub fn new(
        tasks: std::sync::Arc<[WorkflowTask]>,
        index: usize,
        visible: bool,
    ) -> Result<FoundTask> {
        if index >= tasks.len() {
            return Err(Error::new(
                Code::IntegrityError,
                "a found task is not among its subject's tasks",
            ));
        }
        Ok(FoundTask {
            tasks,
            index,
            visible,
        })
    }

    /// The task.
    pub fn task(&self) -> &WorkflowTask {
        // `new` checked the index; neither field changes after.
        &self.tasks[self.index]
    }

    /// Every task of its subject.
    pub fn tasks(&self) -> &std::sync::Arc<[WorkflowTask]> {
        &self.tasks
    }
}

/// What the journal's transitions recheck in the authority, under the
/// same session (`workflow::authority::Rechecks` implements it over the
/// authority connection): the journal never reads the authority's tables.
pub trait Authority {
    /// The stored task, whether `actor` may act on its Change, and every
    /// task of its subject (for dependencies).
    fn find_task(&self, task_id: &str, actor: &Actor) -> Result<FoundTask>;
    /// Why the task's subject is no longer current, when it is not.
    fn staleness(&self, task: &WorkflowTask) -> Result<Option<&'static str>>;
    /// An executor registration and whether it is revoked.
    fn registration(&self, registration_id: &str) -> Result<Option<(ExecutorEnrollment, bool)>>;
    /// Whether the authority holds an imported, validated transfer of
    /// `attempt_id` (of task `task_id`) whose outcome passed, from a
    /// registration that is not revoked: how a command or review step
    /// completes as a dependency.
    fn controller_passed(&self, task_id: &str, attempt_id: &str) -> Result<bool>;
}

fn stale(reason: &str) -> Error {
    Error::new(
        Code::SubjectStale,
        format!("the task's subject is no longer current ({reason})"),
    )
    .with("reason", reason)
    .with("next", Next::checkpoint())
}

fn closed(state: AttemptState) -> Error {
    Error::new(
        Code::AttemptClosed,
        format!("the attempt is {}", state.as_str()),
    )
    .with("state", state.as_str())
}

/// Loads the task from the authority and checks the caller's digest.
fn load_task(
    a: &dyn Authority,
    task_id: &str,
    digest: &Sha256Hex,
    actor: &Actor,
    found: Option<FoundTask>,
) -> Result<FoundTask> {
    let found = match found {
        Some(f) if f.task().task_id == task_id => f,
        _ => a.find_task(task_id, actor)?,
    };
    if &found.task().digest()? != digest {
        return Err(Error::new(
            Code::InvalidInput,
            "task_digest does not match the stored task",
        )
        .with("task_id", task_id));
    }
    Ok(found)
}

/// Claims a pending task: fresh attempt, bounded lease, next fence.
/// `found` is the task as the caller already looked it up in this session
/// (for `actor`), so a request looks its task up once.
pub fn claim(
    j: &Connection,
    a: &dyn Authority,
    actor: &Actor,
    req: &TaskClaimRequest,
    found: Option<FoundTask>,
    now: Now,
) -> Result<Value> {
    req.validate()?;
    let digest = req.request_digest()?;
    if let Some(v) = idem_check(j, actor, &req.request_id, "claim", &digest)? {
        return Ok(v);
    }
    let found = load_task(a, &req.task_id, &req.task_digest, actor, found)?;
    let (task, subject_tasks) = (found.task(), found.tasks());
    if !found.visible {
        return Err(Error::new(
            Code::Forbidden,
            "the task belongs to another owner",
        ));
    }
    // A review step is claimed only for its enrolled review collector
    // (`collector-claim`, which names the registration of the installed
    // review profile); its result comes only from an imported transfer.
    if task.action_class == ActionClass::Review && req.executor.is_none() {
        return Err(Error::new(
            Code::Forbidden,
            "review steps are controller_only and cannot be claimed",
        ));
    }
    if let Some(r) = a.staleness(task)? {
        return Err(stale(r));
    }
    if let Some(reg) = &req.executor {
        let (e, revoked) = a
            .registration(reg)?
            .ok_or_else(|| Error::new(Code::EnrollmentInvalid, format!("no registration {reg}")))?;
        if revoked
            || e.repository != task.subject.repository
            || e.profile != task.subject.profile
            || e.step_id != task.subject.step_id
        {
            return Err(Error::new(
                Code::EnrollmentInvalid,
                "the registration is revoked or not scoped to this step",
            ));
        }
    }
    match unclaimable(Some(j), a, task, subject_tasks, now.ms)? {
        None => {}
        Some(Unclaimable::NotPending(state)) => {
            return Err(Error::new(
                Code::TaskNotClaimable,
                format!("the task is {state}, not pending"),
            )
            .with("state", state)
            .with("task_id", task.task_id.clone()));
        }
        Some(Unclaimable::DependencyIncomplete { task_id, step_id }) => {
            return Err(Error::new(
                Code::DependencyIncomplete,
                format!("dependency {step_id} is not complete"),
            )
            .with("task_id", task_id));
        }
        Some(Unclaimable::PriorUnresolved(prior)) => {
            return Err(Error::new(
                Code::PriorSubjectUnresolved,
                "an older subject of this change and step is unresolved",
            )
            .with("task_id", prior.clone())
            .with("next", Next::task("reconcile", prior)));
        }
    }
    let ts = now.text();
    let task_digest = task.digest()?;
    j.prepare_cached("INSERT OR IGNORE INTO tasks(task_id, task_digest, repo_id, profile_id, change_id, change_version, step_id, task_json, last_fence, current_attempt, created_at) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,0,NULL,?9)")?.execute(params![
            task.task_id, task_digest.as_str(), task.subject.repository, task.subject.profile, task.subject.change_id,
            task.subject.change_version as i64, task.subject.step_id, canonical_bytes(&task)?, ts
        ],
    )?;
    let (last_fence, _) =
        task_row(j, &task.task_id)?.ok_or_else(|| Error::internal("task row vanished"))?;
    let at = WorkflowTaskAttempt {
        version: SCHEMA_VERSION,
        task_id: task.task_id.clone(),
        task_digest: task_digest.clone(),
        attempt_id: crate::wire::random_id("att")?,
        claim_request_id: req.request_id.clone(),
        execution_operation_id: crate::wire::random_id("exec")?,
        agent: actor.clone(),
        executor: req.executor.clone(),
        lease_ms: req.requested_lease_ms.min(MAX_LEASE_MS),
        fence: last_fence + 1,
    };
    at.validate_for_claim(req)?;
    let ad = at.digest()?;
    let expires = now.ms.saturating_add(at.lease_ms as i64);
    j.prepare_cached("INSERT INTO attempts(attempt_id, task_id, attempt_digest, attempt_json, fence, state, lease_expires_ms, superseded_by_fence, created_at, updated_at) \
         VALUES (?1,?2,?3,?4,?5,'leased',?6,NULL,?7,?7)")?.execute(params![at.attempt_id, at.task_id, ad.as_str(), canonical_bytes(&at)?, at.fence as i64, expires, ts],
    )?;
    j.prepare_cached("UPDATE tasks SET last_fence = ?2, current_attempt = ?3 WHERE task_id = ?1")?
        .execute(params![at.task_id, at.fence as i64, at.attempt_id])?;
    let out = serde_json::to_value(ClaimOutput {
        task_id: &at.task_id,
        task_digest: &task_digest,
        attempt: &at,
        attempt_digest: &ad,
        lease_expires_at: lease_text(expires),
    })?;
    idem_store(j, actor, &req.request_id, "claim", &digest, &out, &ts)?;
    Ok(out)
}

/// A lease end as the outputs spell it.
fn lease_text(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(rfc3339_millis)
        .unwrap_or_default()
}

// The outputs below are JSON objects: their fields are in key order, the
// order the stored and printed `Value` has.

/// `claim`'s output.
#[derive(Serialize)]
struct ClaimOutput<'a> {
    attempt: &'a WorkflowTaskAttempt,
    attempt_digest: &'a Sha256Hex,
    lease_expires_at: String,
    task_digest: &'a Sha256Hex,
    task_id: &'a str,
}

/// A heartbeat's, cancel's or reconcile's output.
#[derive(Serialize, Default)]
struct MutationOutput<'a> {
    attempt_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    fence: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lease_expires_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    next: Option<Next>,
    state: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    supersession: Option<Supersession>,
    #[serde(skip_serializing_if = "Option::is_none")]
    unresolved_effects: Option<&'static [&'static str]>,
}

/// A reconcile's fences.
#[derive(Serialize)]
struct Supersession {
    new_fence: u64,
    old_fence: u64,
}

/// `result`'s output.
#[derive(Serialize)]
struct ResultOutput<'a> {
    attempt_id: &'a str,
    completes_dependency: bool,
    fence: u64,
    outcome: Value,
    passing: bool,
    retained: bool,
    state: &'static str,
    task_id: &'a str,
    trust_class: Value,
}

/// `status`'s output.
#[derive(Serialize)]
struct StatusOutput<'a> {
    attempt_digest: &'a Sha256Hex,
    attempt_id: &'a str,
    currently_applicable: bool,
    execution_operation_id: &'a str,
    fence: u64,
    lease_expires_at: String,
    retained_outcome: Option<RetainedOutcome>,
    stale_reason: Option<&'static str>,
    state: &'static str,
    subject_current: bool,
    superseded_by_fence: Option<u64>,
    task_digest: &'a Sha256Hex,
    task_id: &'a str,
}

/// A retained assertion's outcome in `status`.
#[derive(Serialize)]
struct RetainedOutcome {
    outcome: String,
    passing: bool,
    trust_class: String,
}

/// Checks a request's exact binding to the stored attempt.
fn check_binding(
    row: &AttemptRow,
    task_id: &str,
    task_digest: &Sha256Hex,
    attempt_digest: &Sha256Hex,
    exec_op: &str,
    fence: u64,
) -> Result<()> {
    let at = &row.attempt;
    if at.task_id != task_id
        || &at.task_digest != task_digest
        || &row.digest != attempt_digest
        || at.execution_operation_id != exec_op
    {
        return Err(Error::new(
            Code::InvalidInput,
            "the request does not bind this exact task and attempt",
        ));
    }
    if fence != at.fence || row.stored_state == "replaced" {
        return Err(Error::new(
            Code::StaleFence,
            "the fence is not the attempt's current fence",
        )
        .with("fence", fence)
        .with("superseded_by_fence", row.superseded_by_fence));
    }
    Ok(())
}

/// What a caller names for heartbeat, cancel or reconcile.
#[derive(Debug, Clone)]
pub struct MutationArgs {
    /// The action.
    pub action: MutationAction,
    /// The attempt.
    pub attempt_id: String,
    /// The fence the caller holds.
    pub fence: u64,
    /// Idempotency key.
    pub request_id: String,
    /// Requested lease (heartbeat).
    pub lease_ms: Option<u64>,
    /// Reason (cancel, reconcile).
    pub reason: Option<String>,
}

/// Builds the canonical mutation request for an attempt from its stored
/// identity (the CLI's flags name only ids, fence and lease), and returns
/// the attempt as read (for [`mutate`] in the same unit of work).
pub fn mutation_request(
    j: &Connection,
    actor: &Actor,
    m: &MutationArgs,
) -> Result<(TaskMutationRequest, AttemptRow)> {
    let (action, attempt_id, fence, request_id, lease_ms, reason) = (
        m.action,
        m.attempt_id.as_str(),
        m.fence,
        m.request_id.as_str(),
        m.lease_ms,
        m.reason.clone(),
    );
    let row = attempt(j, attempt_id)?
        .ok_or_else(|| Error::new(Code::NotFound, format!("no attempt {attempt_id}")))?;
    let req = TaskMutationRequest {
        version: SCHEMA_VERSION,
        request_id: request_id.into(),
        action,
        task_id: row.attempt.task_id.clone(),
        task_digest: row.attempt.task_digest.clone(),
        attempt_id: attempt_id.into(),
        attempt_digest: row.digest.clone(),
        execution_operation_id: row.attempt.execution_operation_id.clone(),
        agent: actor.clone(),
        executor: row.attempt.executor.clone(),
        fence,
        requested_lease_ms: lease_ms,
        reason,
    };
    Ok((req, row))
}

/// Heartbeat, cancel or reconcile. `known` is the attempt as the caller
/// already read it from `j` in this unit of work ([`mutation_request`]),
/// so a request reads its attempt once; any other attempt is read here.
pub fn mutate(
    j: &Connection,
    a: &dyn Authority,
    actor: &Actor,
    req: &TaskMutationRequest,
    known: Option<AttemptRow>,
    now: Now,
) -> Result<Value> {
    req.validate()?;
    if &req.agent != actor {
        return Err(Error::new(
            Code::Forbidden,
            "the request's actor is not the authenticated actor",
        ));
    }
    let kind = req.action.as_str();
    let digest = req.request_digest()?;
    if let Some(v) = idem_check(j, actor, &req.request_id, kind, &digest)? {
        return Ok(v);
    }
    let row = match known {
        Some(row) if row.attempt.attempt_id == req.attempt_id => row,
        _ => attempt(j, &req.attempt_id)?
            .ok_or_else(|| Error::new(Code::NotFound, format!("no attempt {}", req.attempt_id)))?,
    };
    check_binding(
        &row,
        &req.task_id,
        &req.task_digest,
        &req.attempt_digest,
        &req.execution_operation_id,
        req.fence,
    )?;
    if row.attempt.executor != req.executor {
        return Err(Error::new(
            Code::InvalidInput,
            "the request does not bind the attempt's executor",
        ));
    }
    let same_actor = row.attempt.agent == *actor;
    let same_owner = row.attempt.agent.owner_id == actor.owner_id;
    let state = row.state(now.ms);
    let found = a.find_task(&req.task_id, actor)?;
    let task = found.task();
    let ts = now.text();
    let out = match req.action {
        MutationAction::Heartbeat => {
            if !same_actor {
                return Err(Error::new(
                    Code::Forbidden,
                    "only the attempt's actor may heartbeat it",
                ));
            }
            match state {
                AttemptState::Leased => {}
                AttemptState::Expired => {
                    return Err(Error::new(
                        Code::LeaseExpired,
                        "the lease has expired; reconcile before new work",
                    )
                    .with("next", Next::task("reconcile", &req.task_id)));
                }
                s => return Err(closed(s)),
            }
            if let Some(r) = a.staleness(task)? {
                return Err(stale(r));
            }
            let lease = req
                .requested_lease_ms
                .unwrap_or(MIN_LEASE_MS)
                .min(row.attempt.lease_ms);
            let expires = now.ms.saturating_add(lease as i64);
            j.prepare_cached(
                "UPDATE attempts SET lease_expires_ms = ?2, updated_at = ?3 WHERE attempt_id = ?1",
            )?
            .execute(params![req.attempt_id, expires, ts])?;
            serde_json::to_value(MutationOutput {
                attempt_id: &req.attempt_id,
                fence: Some(req.fence),
                state: "leased",
                lease_expires_at: Some(lease_text(expires)),
                ..MutationOutput::default()
            })?
        }
        MutationAction::Cancel => {
            if !same_actor {
                return Err(Error::new(
                    Code::Forbidden,
                    "only the attempt's actor may cancel it",
                ));
            }
            if !matches!(state, AttemptState::Leased | AttemptState::Expired) {
                return Err(closed(state));
            }
            j.prepare_cached(
                "UPDATE attempts SET state = 'cancelled', updated_at = ?2 WHERE attempt_id = ?1",
            )?
            .execute(params![req.attempt_id, ts])?;
            serde_json::to_value(MutationOutput {
                attempt_id: &req.attempt_id,
                fence: Some(req.fence),
                state: "cancelled",
                unresolved_effects: Some(&["execution_may_still_run"]),
                next: Some(Next::task("reconcile", &req.task_id)),
                ..MutationOutput::default()
            })?
        }
        MutationAction::Reconcile => {
            if !same_owner {
                return Err(Error::new(
                    Code::Forbidden,
                    "only the attempt's owner may reconcile it",
                ));
            }
            if !matches!(
                state,
                AttemptState::Leased | AttemptState::Expired | AttemptState::Cancelled
            ) {
                return Err(closed(state));
            }
            let (last, _) =
                task_row(j, &req.task_id)?.ok_or_else(|| Error::internal("task row missing"))?;
            let new_fence = last + 1;
            j.prepare_cached("UPDATE attempts SET state = 'replaced', superseded_by_fence = ?2, updated_at = ?3 WHERE attempt_id = ?1")?.execute(params![req.attempt_id, new_fence as i64, ts],
            )?;
            j.prepare_cached("UPDATE tasks SET last_fence = ?2 WHERE task_id = ?1")?
                .execute(params![req.task_id, new_fence as i64])?;
            serde_json::to_value(MutationOutput {
                attempt_id: &req.attempt_id,
                state: "replaced",
                supersession: Some(Supersession {
                    new_fence,
                    old_fence: req.fence,
                }),
                unresolved_effects: Some(&["execution_may_still_run"]),
                next: Some(Next::task("claim", &req.task_id)),
                ..MutationOutput::default()
            })?
        }
    };
    idem_store(j, actor, &req.request_id, kind, &digest, &out, &ts)?;
    Ok(out)
}

/// Retains an agent assertion or a signed registered observation.
pub fn result(
    j: &Connection,
    a: &dyn Authority,
    actor: &Actor,
    r: &TaskResultAssertion,
    now: Now,
) -> Result<Value> {
    r.validate()?;
    if &r.agent != actor {
        return Err(Error::new(
            Code::Forbidden,
            "the result's agent is not the authenticated actor",
        ));
    }
    let digest = r.request_digest()?;
    if let Some(v) = idem_check(j, actor, &r.request_id, "result", &digest)? {
        return Ok(v);
    }
    let row = attempt(j, &r.attempt_id)?
        .ok_or_else(|| Error::new(Code::NotFound, format!("no attempt {}", r.attempt_id)))?;
    check_binding(
        &row,
        &r.task_id,
        &r.task_digest,
        &r.attempt_digest,
        &r.execution_operation_id,
        r.fence,
    )?;
    if row.attempt.agent != *actor {
        return Err(Error::new(
            Code::Forbidden,
            "only the attempt's actor may submit its result",
        ));
    }
    match row.state(now.ms) {
        AttemptState::Leased => {}
        AttemptState::Expired => {
            return Err(Error::new(
                Code::LeaseExpired,
                "the lease has expired; the result was not retained",
            ));
        }
        s => return Err(closed(s)),
    }
    let found = a.find_task(&r.task_id, actor)?;
    let task = found.task();
    if let Some(reason) = a.staleness(task)? {
        return Err(stale(reason));
    }
    r.validate_for_task(task)?;
    let mut registration_id = None;
    let mut obs_digest = None;
    if r.trust_class == TrustClass::RegisteredExecutorObservation {
        if task.action_class == ActionClass::Review {
            return Err(Error::new(
                Code::Forbidden,
                "an observation cannot claim a controller-only step",
            ));
        }
        let ex = r
            .executor
            .as_ref()
            .ok_or_else(|| Error::internal("validated observation lacks executor"))?;
        let (e, revoked) = a
            .registration(&ex.registration_id)?
            .ok_or_else(|| Error::new(Code::EnrollmentInvalid, "unknown registration"))?;
        if revoked {
            return Err(Error::new(
                Code::EnrollmentInvalid,
                "the registration is revoked",
            ));
        }
        if !e.validate_scope_and_binding(
            &task.subject.repository,
            &task.subject.profile,
            &task.subject.step_id,
            ex,
        ) {
            return Err(Error::new(
                Code::EnrollmentInvalid,
                "the executor binding is not the current enrollment for this step",
            ));
        }
        if row
            .attempt
            .executor
            .as_ref()
            .is_some_and(|x| x != &ex.registration_id)
        {
            return Err(Error::new(
                Code::EnrollmentInvalid,
                "the attempt was claimed for another executor",
            ));
        }
        let pk = crate::wire::ed25519::parse_public_key_hex(&e.public_key)?;
        observation::verify(r, &pk)?;
        registration_id = Some(e.registration_id.clone());
        obs_digest = r
            .executor_provenance
            .as_ref()
            .map(|p| p.observation_digest.to_string());
    }
    let ts = now.text();
    let trust = serde_json::to_value(r.trust_class)?;
    let outcome = serde_json::to_value(r.outcome)?;
    let trust_s = trust.as_str().unwrap_or_default().to_owned();
    let outcome_s = outcome.as_str().unwrap_or_default().to_owned();
    j.prepare_cached("INSERT INTO assertions(attempt_id, request_id, trust_class, outcome, registration_id, observation_digest, assertion_json, created_at) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8)")?.execute(params![r.attempt_id, r.request_id, trust_s, outcome_s, registration_id, obs_digest, canonical_bytes(r)?, ts],
    )?;
    finish_attempt(j, &r.attempt_id, &ts)?;
    let out = serde_json::to_value(ResultOutput {
        attempt_id: &r.attempt_id,
        completes_dependency: completes_dependency(task, &trust_s, &outcome_s),
        fence: r.fence,
        outcome,
        passing: false,
        retained: true,
        state: "finished",
        task_id: &r.task_id,
        trust_class: trust,
    })?;
    idem_store(j, actor, &r.request_id, "result", &digest, &out, &ts)?;
    Ok(out)
}

/// Marks an attempt finished: its result is retained (an assertion here,
/// or an imported transfer in the authority).
pub fn finish_attempt(j: &Connection, attempt_id: &str, ts: &str) -> Result<()> {
    j.prepare_cached(
        "UPDATE attempts SET state = 'finished', updated_at = ?2 WHERE attempt_id = ?1",
    )?
    .execute(params![attempt_id, ts])?;
    Ok(())
}

/// Marks a still-leased attempt finished whose transfer the authority
/// already retained: the repair of a crash between the authority and
/// journal commits of an import (an attempt in any other state stays).
pub fn repair_finished(j: &Connection, attempt_id: &str, ts: &str) -> Result<()> {
    j.prepare_cached("UPDATE attempts SET state = 'finished', updated_at = ?2 WHERE attempt_id = ?1 AND state = 'leased'")?.execute(params![attempt_id, ts],
    )?;
    Ok(())
}

/// Side-effect-free exact-attempt view.
pub fn status(
    j: Option<&Connection>,
    a: &dyn Authority,
    actor: &Actor,
    req: &TaskStatusRequest,
    now: Now,
) -> Result<Value> {
    check_version(req.version)?;
    check_id("task_id", &req.task_id)?;
    check_id("attempt_id", &req.attempt_id)?;
    let row = j
        .map(|j| attempt(j, &req.attempt_id))
        .transpose()?
        .flatten()
        .filter(|r| r.attempt.task_id == req.task_id)
        .ok_or_else(|| {
            Error::new(
                Code::NotFound,
                format!("no attempt {} of task {}", req.attempt_id, req.task_id),
            )
        })?;
    let found = a.find_task(&req.task_id, actor)?;
    let task = found.task();
    if !found.visible {
        return Err(Error::new(
            Code::Forbidden,
            "the task belongs to another owner",
        ));
    }
    let state = row.state(now.ms);
    let staleness = a.staleness(task)?;
    let retained_outcome = match j {
        Some(j) => retained(j, &req.attempt_id)?.map(|(trust_class, outcome)| RetainedOutcome {
            outcome,
            passing: false,
            trust_class,
        }),
        None => None,
    };
    Ok(serde_json::to_value(StatusOutput {
        attempt_digest: &row.digest,
        attempt_id: &req.attempt_id,
        currently_applicable: state == AttemptState::Leased && staleness.is_none(),
        execution_operation_id: &row.attempt.execution_operation_id,
        fence: row.attempt.fence,
        lease_expires_at: lease_text(row.lease_expires_ms),
        retained_outcome,
        stale_reason: staleness,
        state: state.as_str(),
        subject_current: staleness.is_none(),
        superseded_by_fence: row.superseded_by_fence,
        task_digest: &row.attempt.task_digest,
        task_id: &req.task_id,
    })?)
}

/// A side-effect-free recovery projection (see `docs/state-machine.md`).
pub fn recovery(
    j: Option<&Connection>,
    a: &dyn Authority,
    actor: &Actor,
    task_id: &str,
    attempt_id: Option<&str>,
    request_id: Option<&str>,
    now: Now,
) -> Result<TaskRecoveryEnvelope> {
    let found = a.find_task(task_id, actor)?;
    let task = found.task();
    if !found.visible {
        return Err(Error::new(
            Code::Forbidden,
            "the task belongs to another owner",
        ));
    }
    if let Some(r) = request_id {
        check_id("request_id", r)?;
    }
    let row = match (j, attempt_id) {
        (Some(j), Some(id)) => attempt(j, id)?.filter(|r| r.attempt.task_id == task_id),
        (_, Some(id)) => return Err(Error::new(Code::NotFound, format!("no attempt {id}"))),
        (Some(j), None) => match task_row(j, task_id)? {
            Some((_, Some(cur))) => attempt(j, &cur)?,
            _ => None,
        },
        (None, None) => None,
    };
    if attempt_id.is_some() && row.is_none() {
        return Err(Error::new(Code::NotFound, "no such attempt of this task"));
    }
    let confirmed_kind = match (j, request_id) {
        (Some(j), Some(r)) => j
            .prepare_cached("SELECT kind FROM idempotency WHERE owner_id = ?1 AND agent_id = ?2 AND request_id = ?3")?.query_row(params![actor.owner_id, actor.agent_id, r],
                |x| x.get::<_, String>(0),
            )
            .optional()?,
        _ => None,
    };
    let state = row.as_ref().map(|r| r.state(now.ms));
    let observed = state.map_or("pending", AttemptState::as_str).to_owned();
    let mut env = TaskRecoveryEnvelope {
        version: SCHEMA_VERSION,
        request_id: request_id.map(str::to_owned),
        task_id: task_id.into(),
        task_digest: task.digest()?,
        attempt_id: row.as_ref().map(|r| r.attempt.attempt_id.clone()),
        attempt_digest: row.as_ref().map(|r| r.digest.clone()),
        execution_operation_id: row
            .as_ref()
            .map(|r| r.attempt.execution_operation_id.clone()),
        fence: row.as_ref().map(|r| r.attempt.fence),
        disposition: Disposition::ConclusiveRejection,
        observed_state: observed,
        confirmed_effects: vec![],
        unresolved_effects: vec![],
        supersession: None,
        permitted: vec![RecoveryAction::Inspect, RecoveryAction::Stop],
    };
    if let Some(k) = confirmed_kind {
        env.disposition = Disposition::Confirmed;
        env.confirmed_effects = vec![k];
        return Ok(env);
    }
    match state {
        None => env.permitted.push(RecoveryAction::RetryIdentical),
        Some(AttemptState::Finished) => {}
        Some(AttemptState::Replaced) => {
            env.disposition = Disposition::UncertainEffect;
            env.unresolved_effects = vec![UnresolvedEffect::ExecutionMayStillRun];
            if let Some(r) = &row {
                env.supersession = r.superseded_by_fence.map(|n| FenceSupersession {
                    old_fence: r.attempt.fence,
                    new_fence: n,
                });
            }
            if env
                .supersession
                .as_ref()
                .is_some_and(|s| s.new_fence > s.old_fence)
            {
                env.permitted.push(RecoveryAction::PrepareFreshAttempt);
            }
        }
        Some(AttemptState::Leased | AttemptState::Expired | AttemptState::Cancelled) => {
            env.disposition = Disposition::UncertainEffect;
            env.unresolved_effects = vec![UnresolvedEffect::ExecutionMayStillRun];
            env.permitted.push(RecoveryAction::Reconcile);
        }
    }
    Ok(env)
}

/// The attempt ids starting with `prefix` whose task `visible` accepts, in
/// id order, at most `max` (the journal knows no owner: the authority says
/// which tasks the caller may view).
pub fn attempt_ids_with_prefix(
    j: &Connection,
    prefix: &str,
    mut visible: impl FnMut(&str) -> Result<bool>,
    max: usize,
) -> Result<Vec<String>> {
    let mut st = j.prepare_cached(
        "SELECT attempt_id, task_id FROM attempts WHERE substr(attempt_id, 1, ?1) = ?2 \
         ORDER BY attempt_id",
    )?;
    let mut rows = st.query(params![prefix.chars().count() as i64, prefix])?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        let (attempt, task): (String, String) = (r.get(0)?, r.get(1)?);
        if visible(&task)? {
            out.push(attempt);
            if out.len() == max {
                break;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::{Claimability, Unclaimable};

    fn decided(state: &str, dep: bool, prior: bool) -> Claimability {
        Claimability {
            state: state.into(),
            dependency: dep.then(|| Unclaimable::DependencyIncomplete {
                task_id: "t-dep".into(),
                step_id: "build".into(),
            }),
            prior_unresolved: prior.then(|| "t-old".into()),
        }
    }

    #[test]
    fn claim_and_next_see_the_documented_order() {
        assert_eq!(decided("pending", false, false).unclaimable(), None);
        assert_eq!(
            decided("leased", true, true).unclaimable(),
            Some(Unclaimable::NotPending("leased".into()))
        );
        // A dependency is refused before an unresolved older subject …
        assert!(matches!(
            decided("pending", true, true).unclaimable(),
            Some(Unclaimable::DependencyIncomplete { .. })
        ));
        assert_eq!(
            decided("pending", false, true).unclaimable(),
            Some(Unclaimable::PriorUnresolved("t-old".into()))
        );
        // … while qualify's projection still sees the older subject that
        // blocks (its documented `prior_subject_unresolved`).
        assert_eq!(
            decided("pending", true, true).prior_unresolved.as_deref(),
            Some("t-old")
        );
    }
}
