//! Receipts (v2, from validated imported transfers), exact-subject
//! qualification and landing.

use super::change::{self, ChangeSel, StoredSubject};
use super::collector::{self as col, ImportedRow};
use super::schema::AuthorityWork;
use super::{admin, repo_git, repository};
use crate::clock::{rfc3339_millis, unix_millis};
use crate::collector::transfer::{self, MAX_TRANSFER_BYTES};
use crate::contract::{ActionClass, WorkflowTask, canonical_bytes};
use crate::error::{Code, Error, Result};
use crate::store::{
    Access, CommitOrder, Connection, DataDir, DirLock, OptionalExtension, Plan, Session, Work,
    params,
};
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::workflow::journal;
use crate::workflow::journal::JournalWork;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;

/// Domain of a receipt digest.
pub const DOMAIN_RECEIPT: &str = "agent-task.receipt.v2";
/// Most transfers a receipt names (finalization streams at most this many).
pub const MAX_RECEIPT_TRANSFERS: usize = 32;
/// Most failures reported.
pub const MAX_FAILURES: usize = 32;

/// One task's evaluation.
#[derive(Debug, Clone)]
pub struct TaskEval {
    /// The task.
    pub task: WorkflowTask,
    /// pending|claimed|succeeded|failed|uncertain|blocked
    pub state: &'static str,
    /// Failure code (required tasks not succeeded).
    pub code: Option<&'static str>,
    /// Typed next for this task.
    pub next: Option<Value>,
    /// The imported transfer of its current attempt.
    pub transfer: Option<ImportedRow>,
}

/// Evaluates every task of a subject from the journal and imported transfers.
pub fn evaluate(
    j: Option<&Connection>,
    a: &Connection,
    s: &StoredSubject,
    now_ms: i64,
) -> Result<Vec<TaskEval>> {
    let mut out = Vec::new();
    for t in &s.tasks {
        let (jstate, row) = journal::task_state(j, &t.task_id, now_ms)?;
        let transfer = match &row {
            Some(r) if jstate != "pending" => col::imported_for_attempt(a, &r.attempt.attempt_id)?,
            _ => None,
        };
        let reconcile = json!({"operation": "reconcile", "task_id": t.task_id});
        let collected = matches!(t.action_class, ActionClass::Command | ActionClass::Review);
        let (state, code, next) = match (t.action_class, jstate.as_str()) {
            // The one claimability decision, projected: an unresolved older
            // subject blocks; otherwise the task is pending (its
            // dependencies are not a qualify failure of their own).
            (_, "pending") => {
                match journal::claimability(j, &super::Rechecks::new(a), t, &s.tasks, now_ms)?
                    .prior_unresolved
                {
                    Some(p) => (
                        "blocked",
                        Some("prior_subject_unresolved"),
                        Some(json!({"operation": "reconcile", "task_id": p})),
                    ),
                    None if collected => (
                        "pending",
                        Some("task_pending"),
                        Some(json!({"operation": "collector_claim", "task_id": t.task_id})),
                    ),
                    None => ("pending", Some("task_pending"), None),
                }
            }
            (_, "leased") => ("claimed", Some("attempt_in_progress"), None),
            (_, "expired" | "cancelled") => {
                ("uncertain", Some("attempt_uncertain"), Some(reconcile))
            }
            (ActionClass::Command, "finished") => match &transfer {
                Some(x) if x.outcome == "passed" => ("succeeded", None, None),
                Some(_) => ("failed", Some("collector_not_passed"), None),
                None => ("failed", Some("result_failed"), None),
            },
            // A failed review is retained as failed evidence: the code says
            // why (the record's failure), and the way on is a new revision.
            (ActionClass::Review, "finished") => match &transfer {
                Some(x) if x.outcome == "passed" => ("succeeded", None, None),
                Some(x) => (
                    "failed",
                    Some(review_failure_code(&x.status)),
                    Some(json!({"operation": "checkpoint"})),
                ),
                None => ("failed", Some("result_failed"), None),
            },
            (_, "finished") => {
                if journal::dependency_complete(j, &super::Rechecks::new(a), t, now_ms)? {
                    ("succeeded", None, None)
                } else {
                    ("failed", Some("result_failed"), None)
                }
            }
            _ => ("blocked", Some("unknown_state"), None),
        };
        out.push(TaskEval {
            task: t.clone(),
            state,
            code,
            next,
            transfer,
        });
    }
    Ok(out)
}

/// The stable failure code of a failed review's retained status (the
/// record's `failure`), `review_not_passed` for anything else.
fn review_failure_code(status: &str) -> &'static str {
    use crate::collector::review::types::ReviewFailure as F;
    const ALL: [F; 12] = [
        F::ReviewNothingSelected,
        F::ReviewCoverageIncomplete,
        F::ReviewBudgetExceeded,
        F::ReviewCallUncertain,
        F::ReviewExecutableMismatch,
        F::ReviewCallFailed,
        F::ReviewCallTimedOut,
        F::ReviewOutputExceeded,
        F::ReviewErrorResult,
        F::ReviewAnswerMalformed,
        F::ReviewModelMismatch,
        F::ReviewCriteriaFailed,
    ];
    ALL.iter()
        .map(|f| f.as_str())
        .find(|c| *c == status)
        .unwrap_or("review_not_passed")
}

/// A transfer as a receipt names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReceiptTransfer {
    /// SHA-256 of the retained signed bytes.
    pub transfer_digest: String,
    /// Task.
    pub task_id: String,
    /// Task digest.
    pub task_digest: Sha256Hex,
    /// Attempt.
    pub attempt_id: String,
    /// Attempt digest.
    pub attempt_digest: Sha256Hex,
    /// Execution operation.
    pub execution_operation_id: String,
    /// Fence.
    pub fence: u64,
    /// Registration epoch and key.
    pub registration: transfer::RegistrationBinding,
    /// Collector profile.
    pub collector_profile_id: String,
    /// Its digest.
    pub collector_profile_digest: Sha256Hex,
    /// Originating actor and grant.
    pub origin: transfer::Origin,
}

/// A v2 receipt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    /// Always 2.
    pub version: u32,
    /// `imported`: built from operator-enrolled collector transfers.
    pub kind: String,
    /// Authority.
    pub audience: String,
    /// Repository.
    pub repository: String,
    /// Profile.
    pub profile: String,
    /// Change.
    pub change_id: String,
    /// Change version.
    pub change_version: u64,
    /// Revision.
    pub revision: Sha256Hex,
    /// Context digest.
    pub context_digest: Sha256Hex,
    /// Policy epoch.
    pub policy_epoch: u64,
    /// Installed requirement.
    pub requirement_digest: Sha256Hex,
    /// Every transfer (ordered by task id).
    pub transfers: Vec<ReceiptTransfer>,
    /// Optional tasks omitted from the graph.
    pub omitted: Vec<String>,
}

impl Receipt {
    /// `domain_digest(DOMAIN_RECEIPT, canonical bytes)`.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_RECEIPT, &canonical_bytes(self)?))
    }
}

/// Why a receipt cannot be built or admitted (task id, stable code).
#[derive(Debug, Clone)]
pub struct Refusal {
    /// Task.
    pub task_id: String,
    /// Code.
    pub code: &'static str,
}

/// Builds the receipt of a current subject from retained validated
/// transfers (re-read one at a time, each length checked against 16 MiB
/// first, re-verified under current registrations, profiles and grants).
pub fn build_receipt(
    j: &Connection,
    a: &Connection,
    dir: &DataDir,
    s: &StoredSubject,
    evals: &[TaskEval],
) -> std::result::Result<Receipt, Vec<Refusal>> {
    let mut refusals = Vec::new();
    let mut transfers = Vec::new();
    let mut omitted = Vec::new();
    for e in evals {
        if e.state != "succeeded" {
            if e.task.required {
                refusals.push(Refusal {
                    task_id: e.task.task_id.clone(),
                    code: e.code.unwrap_or("task_pending"),
                });
            } else {
                omitted.push(e.task.task_id.clone());
            }
            continue;
        }
        let Some(x) = &e.transfer else { continue };
        if transfers.len() >= MAX_RECEIPT_TRANSFERS {
            refusals.push(Refusal {
                task_id: e.task.task_id.clone(),
                code: "too_many_transfers",
            });
            continue;
        }
        match revalidate(j, a, dir, x) {
            Ok(t) => transfers.push(t),
            Err(err) => refusals.push(Refusal {
                task_id: e.task.task_id.clone(),
                code: match err.code() {
                    Code::SubjectStale => "subject_stale",
                    Code::IntegrityError | Code::TooLarge => "transfer_unavailable",
                    Code::ProfileInvalid => "profile_invalid",
                    _ => "authorization_changed",
                },
            }),
        }
    }
    if !refusals.is_empty() {
        return Err(refusals);
    }
    transfers.sort_by(|x, y| x.task_id.cmp(&y.task_id));
    let audience = col::audience(a).map_err(|_| {
        vec![Refusal {
            task_id: String::new(),
            code: "authority_unavailable",
        }]
    })?;
    Ok(Receipt {
        version: 2,
        kind: "imported".into(),
        audience,
        repository: s.context.repository.clone(),
        profile: s.context.profile.clone(),
        change_id: s.change.change_id.clone(),
        change_version: s.version,
        revision: s.context.revision.clone(),
        context_digest: s.context_digest.clone(),
        policy_epoch: s.context.policy_epoch,
        requirement_digest: s.context.requirement_digest.clone(),
        transfers,
        omitted,
    })
}

fn revalidate(
    j: &Connection,
    a: &Connection,
    dir: &DataDir,
    x: &ImportedRow,
) -> Result<ReceiptTransfer> {
    if x.size > MAX_TRANSFER_BYTES {
        return Err(Error::new(Code::TooLarge, "retained transfer over 16 MiB"));
    }
    let d = Sha256Hex::parse(&x.transfer_digest)?;
    let bytes = dir.cas().read(&d, Some(x.size), MAX_TRANSFER_BYTES)?;
    let h = if transfer::open(&bytes)?.header.kind == super::review::KIND {
        // A review is replayed again, under the current profile and basis.
        let v = super::review::validate_transfer(j, a, dir, &bytes)?;
        super::review::check_live(a, &v.descriptor)?;
        if v.record.outcome != crate::collector::review::types::ReviewOutcome::Passed {
            return Err(Error::new(Code::NotQualified, "the review did not pass"));
        }
        v.envelope.header
    } else {
        let v = col::validate_transfer(j, a, &bytes)?;
        col::check_live(a, &v.descriptor)?;
        if v.record.outcome != transfer::ExecutionOutcome::Passed {
            return Err(Error::new(Code::NotQualified, "the transfer did not pass"));
        }
        v.envelope.header
    };
    Ok(ReceiptTransfer {
        transfer_digest: x.transfer_digest.clone(),
        task_id: h.task_id,
        task_digest: h.task_digest,
        attempt_id: h.attempt_id,
        attempt_digest: h.attempt_digest,
        execution_operation_id: h.execution_operation_id,
        fence: h.fence,
        registration: h.registration,
        collector_profile_id: h.collector_profile_id,
        collector_profile_digest: h.collector_profile_digest,
        origin: h.origin,
    })
}

fn refusal_error(code: Code, msg: &str, r: &[Refusal]) -> Error {
    let failures: Vec<Value> = r
        .iter()
        .take(MAX_FAILURES)
        .map(|x| json!({"task_id": x.task_id, "code": x.code}))
        .collect();
    Error::new(code, msg).with("failures", failures)
}

fn stale_error() -> Error {
    Error::new(Code::SubjectStale, "the change's subject is not current")
        .with("next", json!({"operation": "checkpoint"}))
}

fn subject_is_current(a: &Connection, s: &StoredSubject) -> Result<bool> {
    Ok(change::subject_staleness(a, s)?.is_none())
}

/// The session of a receipt or a landing: the authority written, the
/// journal read (never created) under the same lock.
pub const RECEIPT_PLAN: Plan = Plan {
    dbs: &[
        (&journal::SPEC, Access::ReadOnly),
        (&super::schema::SPEC, Access::Write),
    ],
    order: CommitOrder::Listed,
};

/// `finalize`: creates (or returns) the v2 receipt of a Change's current
/// subject from retained validated transfers; never collects. Runs inside
/// the caller's session (`workflow::service::receipt::finalize`).
pub fn finalize_in(
    w: &Work<'_>,
    token: &str,
    sel: &ChangeSel,
    scope: Option<&change::Scope>,
) -> Result<Value> {
    let (j, at, dir) = (w.journal(), w.authority()?, w.dir());
    let (ts, now_ms) = (w.now_text(), w.now_ms());
    let who = admin::authenticate(at, token)?;
    let ch = change::select_in(at, sel, scope)?;
    if !change::may_view(&ch, &who.actor) {
        return Err(Error::new(
            Code::Forbidden,
            "the change belongs to another owner",
        ));
    }
    let s = change::current_subject(at, &ch)?;
    if !subject_is_current(at, &s)? {
        return Err(stale_error());
    }
    let protected = change::stored_protected(at, &ch.change_id, s.version)?;
    if !protected.is_empty() {
        return Err(protected.error("no receipt for this subject"));
    }
    let j = j.ok_or_else(|| Error::new(Code::ReceiptIncomplete, "nothing was collected yet"))?;
    let evals = evaluate(Some(j), at, &s, now_ms)?;
    let receipt = build_receipt(j, at, dir, &s, &evals).map_err(|r| {
        refusal_error(
            Code::ReceiptIncomplete,
            "the receipt graph is not complete",
            &r,
        )
    })?;
    let digest = receipt.digest()?;
    let existing: Option<String> = at
        .prepare_cached(
            "SELECT receipt_digest FROM receipts WHERE change_id = ?1 AND change_version = ?2",
        )?
        .query_row(params![ch.change_id, s.version as i64], |r| r.get(0))
        .optional()?;
    let created = existing.as_deref() != Some(digest.as_str());
    if created {
        at.prepare_cached("DELETE FROM receipts WHERE change_id = ?1 AND change_version = ?2")?
            .execute(params![ch.change_id, s.version as i64])?;
        at.prepare_cached("INSERT INTO receipts(receipt_digest, change_id, change_version, context_digest, receipt_json, created_at) VALUES (?1,?2,?3,?4,?5,?6)")?.execute(params![digest.as_str(), ch.change_id, s.version as i64, s.context_digest.as_str(), canonical_bytes(&receipt)?, ts],
        )?;
    }
    Ok(json!({"receipt_digest": digest, "created": created, "receipt": receipt}))
}

/// The stored receipt of a subject, when its digest still matches.
fn stored_receipt(a: &Connection, s: &StoredSubject) -> Result<Option<String>> {
    Ok(a.prepare_cached("SELECT receipt_digest FROM receipts WHERE change_id = ?1 AND change_version = ?2 AND context_digest = ?3")?.query_row(params![s.change.change_id, s.version as i64, s.context_digest.as_str()],
        |r| r.get(0),
    )
    .optional()?)
}

/// `qualify`: read-only exact-subject qualification (the spec's shape).
pub fn qualify<'a>(
    root: &'a Path,
    sel: &'a ChangeSel,
    scope: Option<&'a change::Scope>,
) -> impl FnOnce(Option<&Connection>, &Connection, &admin::Authenticated, journal::Now) -> Result<Value>
+ 'a {
    move |j, a, who, now| {
        let ch = change::select_in(a, sel, scope)?;
        if !change::may_view(&ch, &who.actor) {
            return Err(Error::new(
                Code::Forbidden,
                "the change belongs to another owner",
            ));
        }
        let none_current = |rev: Value| {
            json!({"qualified": false, "subject_current": false, "receipt_digest": null,
                   "revision": rev, "tasks": [], "failures": [], "next": {"operation": "checkpoint"}})
        };
        if ch.version == 0 {
            return Ok(none_current(Value::Null));
        }
        let s = change::current_subject(a, &ch)?;
        if !subject_is_current(a, &s)? {
            return Ok(none_current(json!(s.context.revision)));
        }
        let evals = evaluate(j, a, &s, now.ms)?;
        let tasks: Vec<Value> = evals
            .iter()
            .map(|e| {
                Ok(json!({"task_id": e.task.task_id, "task_digest": e.task.digest()?,
                          "step_id": e.task.subject.step_id, "required": e.task.required, "state": e.state}))
            })
            .collect::<Result<_>>()?;
        // A revision that changes a protected path never qualifies: one
        // typed failure per required task, and the way on is a checkpoint
        // of a revision that leaves the protected paths alone.
        if !change::stored_protected(a, &ch.change_id, s.version)?.is_empty() {
            let failures: Vec<Value> = evals
                .iter()
                .filter(|e| e.task.required)
                .take(MAX_FAILURES)
                .map(|e| json!({"task_id": e.task.task_id, "code": "protected_path_changed"}))
                .collect();
            return Ok(json!({
                "qualified": false, "subject_current": true, "receipt_digest": null,
                "revision": s.context.revision, "tasks": tasks, "failures": failures,
                "next": {"operation": "checkpoint"},
            }));
        }
        let mut failures: Vec<Value> = Vec::new();
        let mut next: Option<Value> = None;
        let mut all_ok = true;
        for e in evals.iter().filter(|e| e.task.required) {
            if e.state != "succeeded" {
                all_ok = false;
                if failures.len() < MAX_FAILURES {
                    failures.push(json!({"task_id": e.task.task_id, "code": e.code.unwrap_or("task_pending")}));
                }
                if next.is_none() {
                    next = e.next.clone();
                }
            }
        }
        let mut receipt_digest = Value::Null;
        let mut qualified = false;
        if all_ok {
            match (j, stored_receipt(a, &s)?) {
                // The directory is opened (and checked) only when a receipt
                // is to be rebuilt: the read that runs this already opened
                // and checked it.
                (Some(jc), Some(stored)) => {
                    match build_receipt(jc, a, &DataDir::open(root)?, &s, &evals) {
                        Ok(r) if r.digest()?.as_str() == stored => {
                            qualified = true;
                            receipt_digest = json!(stored);
                        }
                        Ok(_) => {
                            next = Some(json!({"operation": "collector_finalize"}));
                            receipt_failures(&mut failures, &evals, "receipt_outdated");
                        }
                        Err(r) => {
                            for x in r
                                .iter()
                                .filter(|x| !x.task_id.is_empty())
                                .take(MAX_FAILURES)
                            {
                                failures.push(json!({"task_id": x.task_id, "code": x.code}));
                            }
                        }
                    }
                }
                _ => {
                    next = Some(json!({"operation": "collector_finalize"}));
                    receipt_failures(&mut failures, &evals, "receipt_missing");
                }
            }
        }
        failures.truncate(MAX_FAILURES);
        Ok(json!({
            "qualified": qualified, "subject_current": true, "receipt_digest": receipt_digest,
            "revision": s.context.revision, "tasks": tasks, "failures": failures,
            "next": next.unwrap_or(json!({"operation": "none"})),
        }))
    }
}

/// A receipt-level failure, reported against every required task (ids stay non-empty).
fn receipt_failures(failures: &mut Vec<Value>, evals: &[TaskEval], code: &str) {
    for e in evals.iter().filter(|e| e.task.required) {
        if failures.len() < MAX_FAILURES {
            failures.push(json!({"task_id": e.task.task_id, "code": code}));
        }
    }
}

/// `land` request.
#[derive(Debug, Clone)]
pub struct LandRequest {
    /// Repository.
    pub repo_id: String,
    /// Change.
    pub change_id: String,
    /// The operator's explicit acceptance of a revision that changes
    /// protected paths (`--allow-protected-change`). Such a revision has
    /// no receipt (its tests are not the operator's, so none is collected);
    /// the landing row and the commit message record the override.
    pub allow_protected_change: bool,
    /// `--update-worktree`: when the target branch is checked out in the
    /// source's (non-bare) work tree, move its index and files along as
    /// `git merge --ff-only` would (clean only). Without it such a landing
    /// is refused before any ref moves (`worktree_checked_out`).
    pub update_worktree: bool,
    /// `--author "Name <email>"`: the commit's author and committer
    /// instead of the operator's git identity in the repository.
    pub author: Option<String>,
}

/// A landing as its durable row records it.
#[derive(Debug, Clone)]
struct Landing {
    landing_id: String,
    repo_id: String,
    change_id: String,
    change_version: u64,
    revision: String,
    /// `None` only for a landing the operator allowed with protected changes.
    receipt_digest: Option<String>,
    old_head: String,
    git: Option<GitIntent>,
    /// Whether the operator's `--allow-protected-change` let it land.
    allow_protected_change: bool,
    /// How many protected paths it changes (0 unless allowed).
    protected_changes: u64,
}

/// What phase 2 needs: the branch, its value when the intent was made
/// (all zeros: absent) and the commit it must move to.
#[derive(Debug, Clone)]
struct GitIntent {
    ref_name: String,
    expected_old: String,
    commit: String,
}

/// How resolving a pending landing ended.
enum Resolution {
    /// Phase 3 done: the output of `land`.
    Landed(Value),
    /// Marked `abandoned`; the typed refusal to return.
    Abandoned(Error),
}

/// The attestation side of landing, which sits above the authority
/// (`workflow::attest`): the service passes it in.
pub trait Attestations {
    /// Makes sure the authority's signing key exists (the lock held).
    fn ensure_key(&self, dir: &DataDir, lock: &DirLock, now: &str) -> Result<()>;
    /// Writes (unless present) the signed note of a landed change version
    /// on its commit and returns the attestation summary.
    fn ensure_landing_note(
        &self,
        dir: &DataDir,
        a: &Connection,
        source: &Path,
        change_id: &str,
        version: u64,
    ) -> Result<Value>;
    /// Whether the landed commit still lacks its note.
    fn note_missing(&self, source: &Path, commit: &str) -> Result<bool>;
}

/// Lands a qualified Change (see docs/transfer.md, "Landing protocol").
///
/// Under the lock: first resolves a `pending` landing of the repository
/// left by an interrupted `land`; then rechecks the exact current subject,
/// installed policy and requirement, the retained signed transfers and
/// every live registration, profile and grant check. For a git work tree
/// source it writes the git objects, durably records a `pending` intent
/// (phase 1), moves the branch with compare-and-swap (phase 2) and then
/// records the new head and marks the landing `landed` (phase 3). A
/// source that is not a git work tree has no external effect, so the head
/// moves in one transaction.
///
/// `s` is the one session (opened by the service with [`RECEIPT_PLAN`])
/// for every phase: each phase is a batch of its own, committed before
/// the external effect that follows it.
pub fn land(s: &mut Session, req: &LandRequest, notes: &dyn Attestations) -> Result<Value> {
    // Bad input changes nothing: the identity is checked before anything.
    if let Some(a) = &req.author {
        repo_git::Ident::parse(a)?;
    }
    let (ts, now_ms) = (rfc3339_millis(s.now()), unix_millis(s.now()));
    s.apply(|w| repository(w.authority()?, &req.repo_id).map(drop))?;
    // The signing key exists before anything lands (docs/attestations.md).
    notes.ensure_key(s.dir(), s.lock(), &ts)?;
    let mut resolved_other = None;
    if let Some(p) = s.apply(|w| pending_landing(w.authority()?, &req.repo_id))? {
        let r = resolve(s, &p, true, req.update_worktree, &ts, now_ms)?;
        if p.change_id == req.change_id {
            return match r {
                Resolution::Landed(v) => {
                    let v = with_note(s, notes, v)?;
                    after_landing(s, req, v)
                }
                Resolution::Abandoned(e) => Err(e),
            };
        }
        resolved_other = Some(match r {
            Resolution::Landed(v) => {
                let v = with_note(s, notes, v)?;
                // Its work tree moves along too (the flag is the operator's
                // for this repository).
                if let (true, Some(g)) = (req.update_worktree, &p.git) {
                    let repo = s.apply(|w| repository(w.authority()?, &p.repo_id))?;
                    s.rollback();
                    sync_worktree(Path::new(&repo.source), g)?;
                }
                v
            }
            Resolution::Abandoned(e) => json!({
                "landed": false, "change_id": p.change_id, "change_version": p.change_version,
                "abandoned": e.code().as_str(),
            }),
        });
    }
    if let Some(v) = s.apply(|w| finish_missing_note(w.dir(), w.authority()?, notes, req))? {
        s.commit()?;
        return after_landing(s, req, v);
    }
    let with_other = |e: Error| match &resolved_other {
        Some(v) => e.with("resolved_pending", v.clone()),
        None => e,
    };
    let (repo, landing, stale) = s.apply(|w| {
        let (at, dir) = (w.authority()?, w.dir());
        let a = admit(
            w.journal(),
            at,
            dir,
            &req.repo_id,
            &req.change_id,
            now_ms,
            req.allow_protected_change,
        )
        .map_err(with_other)?;
        let git = git_prepare(dir, at, &a, req).map_err(with_other)?;
        let (repo, s) = (&a.repo, &a.subject);
        let landing = Landing {
            landing_id: crate::wire::random_id("land")?,
            repo_id: repo.repo_id.clone(),
            change_id: s.change.change_id.clone(),
            change_version: s.version,
            revision: s.context.revision.as_str().to_owned(),
            receipt_digest: a.receipt.clone(),
            old_head: repo.head_revision.clone(),
            git,
            allow_protected_change: !a.protected.is_empty(),
            protected_changes: a.protected.total,
        };
        let state = if landing.git.is_some() {
            "pending"
        } else {
            "landed"
        };
        insert_landing(at, &landing, state, &ts)?;
        let stale = if landing.git.is_none() {
            set_head(at, &landing)?
        } else {
            0
        };
        Ok((a.repo, landing, stale))
    })?;
    // Without git this is the landing; with git, phase 1 is durable: the
    // intent names everything a resume needs.
    s.commit()?;
    let out = if landing.git.is_none() {
        with_stale(landed_output(&repo, &landing, false), stale)
    } else {
        crate::collector::crash_point("land_after_intent");
        match resolve(s, &landing, false, req.update_worktree, &ts, now_ms)? {
            Resolution::Landed(v) => v,
            Resolution::Abandoned(e) => return Err(with_other(e)),
        }
    };
    let out = with_note(s, notes, out).map_err(with_other)?;
    let mut out = after_landing(s, req, out)?;
    if let (Some(v), Some(o)) = (resolved_other, out.as_object_mut()) {
        o.insert("resolved_pending".into(), v);
    }
    Ok(out)
}

/// After a landing of `req`'s Change is durable (now, resumed, or
/// earlier): with `--update-worktree`, brings the source's checked-out
/// work tree to the landed commit when it still is at the old one and
/// clean (idempotent: a rerun after a crash finishes it), and says so
/// (`worktree_updated`).
fn after_landing(s: &mut Session, req: &LandRequest, mut v: Value) -> Result<Value> {
    crate::collector::crash_point("land_before_worktree");
    let mut updated = false;
    if req.update_worktree
        && !v["git_commit"].is_null()
        && let Some(l) = s.apply(|w| landed_landing(w.authority()?, &req.change_id))?
    {
        s.rollback();
        let repo = s.apply(|w| repository(w.authority()?, &l.repo_id))?;
        s.rollback();
        if let Some(g) = &l.git {
            updated = sync_worktree(Path::new(&repo.source), g)?;
        }
    }
    if let Some(o) = v.as_object_mut() {
        o.entry("already_landed").or_insert(json!(false));
        o.entry("stale_subjects").or_insert(json!(0));
        o.insert("worktree_updated".into(), json!(updated));
    }
    Ok(v)
}

/// The work tree half of `--update-worktree` once the branch is at
/// `g.commit`: `true` when it moved the index and files from the old
/// commit; `false` when nothing is checked out there, it is already at
/// the landed commit, or it is no longer clean at the old one (then it is
/// left as it is: nothing of the operator's is overwritten).
fn sync_worktree(src: &Path, g: &GitIntent) -> Result<bool> {
    let zeros = "0".repeat(g.commit.len());
    if g.expected_old == zeros || !checked_out_here(src, &g.ref_name)? {
        return Ok(false);
    }
    if repo_git::index_is(src, &g.commit)? {
        return Ok(false);
    }
    if !repo_git::index_is(src, &g.expected_old)?
        || repo_git::dirty(src, &g.expected_old, None)?.is_some()
    {
        return Ok(false);
    }
    repo_git::fast_forward(src, &g.expected_old, &g.commit)?;
    Ok(true)
}

/// Whether `ref_name` is checked out in the source's own work tree.
fn checked_out_here(src: &Path, ref_name: &str) -> Result<bool> {
    let here = std::fs::canonicalize(src).ok();
    Ok(repo_git::checked_out(src, ref_name)?
        .iter()
        .any(|w| std::fs::canonicalize(w).ok() == here))
}

/// Refuses, before any ref moves, a landing onto a branch checked out in a
/// non-bare work tree: without `--update-worktree` always
/// (`worktree_checked_out`, the fix in `details`); with it, when the branch
/// is checked out in another work tree than the source's, when the branch
/// is unborn, or when the work tree is not clean (`worktree_dirty`).
fn check_worktree(src: &Path, g: &GitIntent, update: bool) -> Result<()> {
    let wts = repo_git::checked_out(src, &g.ref_name)?;
    let Some(first) = wts.first() else {
        return Ok(());
    };
    let shown = |p: &Path| p.display().to_string();
    if !update {
        return Err(Error::new(
            Code::WorktreeCheckedOut,
            format!(
                "{} is checked out in {}: moving it would leave that index and work tree \
                 looking like the landing reverted; nothing was landed",
                g.ref_name,
                first.display()
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(first))
        .with(
            "fix",
            "land --update-worktree (moves that clean index and work tree along as git merge \
             --ff-only would), or check another branch out there (git switch --detach), or \
             land into a bare repository",
        ));
    }
    let here = std::fs::canonicalize(src).ok();
    if let Some(other) = wts.iter().find(|w| std::fs::canonicalize(w).ok() != here) {
        return Err(Error::new(
            Code::WorktreeCheckedOut,
            format!(
                "{} is checked out in another work tree ({}): --update-worktree updates only \
                 the repository's own; nothing was landed",
                g.ref_name,
                other.display()
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(other))
        .with(
            "fix",
            "check another branch out in that work tree (git switch --detach)",
        ));
    }
    if g.expected_old == "0".repeat(g.commit.len()) {
        return Err(Error::new(
            Code::WorktreeCheckedOut,
            format!(
                "{} is checked out but has no commit yet; nothing was landed",
                g.ref_name
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(first))
        .with(
            "fix",
            "commit once on the branch, or check another branch out there",
        ));
    }
    if let Some(why) = repo_git::dirty(src, &g.expected_old, Some(&g.commit))? {
        return Err(Error::new(
            Code::WorktreeDirty,
            format!(
                "the checked-out work tree of {} is not clean ({why}); nothing was landed",
                g.ref_name
            ),
        )
        .with("ref", g.ref_name.clone())
        .with("worktree", shown(first))
        .with("reason", why)
        .with(
            "fix",
            "commit, stash or discard the changes there (git status), then land again",
        ));
    }
    Ok(())
}

/// Attaches a landing's attestations (the lock held): for a git landing the
/// signed statements become the note on the landed commit (written now
/// unless one is there) and the output gains `attestation`; `null`
/// otherwise. The branch and the landed mark are already durable, so a
/// failure here says `landing: "landed"` and `next: land`, whose re-run
/// finishes the note (see docs/attestations.md, "Landing").
fn with_note(s: &mut Session, notes: &dyn Attestations, v: Value) -> Result<Value> {
    let out = s.apply(|w| note_into(w.dir(), w.authority()?, notes, v))?;
    s.commit()?;
    Ok(out)
}

fn note_into(
    dir: &DataDir,
    a: &Connection,
    notes: &dyn Attestations,
    mut v: Value,
) -> Result<Value> {
    let att = if v["git_commit"].is_null() {
        Value::Null
    } else {
        let change_id = v["change_id"].as_str().unwrap_or_default().to_owned();
        let version = v["change_version"].as_u64().unwrap_or_default();
        let repo = repository(a, v["repository"].as_str().unwrap_or_default())?;
        notes
            .ensure_landing_note(dir, a, Path::new(&repo.source), &change_id, version)
            .map_err(|e| {
                e.with("landing", "landed")
                    .with("change_id", change_id.clone())
                    .with("next", json!({"operation": "land", "change_id": change_id}))
            })?
    };
    if let Some(o) = v.as_object_mut() {
        o.insert("attestation".into(), att);
    }
    Ok(v)
}

/// A re-run of `land` for a Change that has landed: when its commit has
/// no note yet (a crash after phase 3, or a failed note write) writes the
/// note and answers as the landing did, `resumed: true`; otherwise answers
/// `already_landed: true` with the commit (a landed Change is closed, so
/// there is nothing more to land). `None` when the Change has not landed
/// (admission then answers).
fn finish_missing_note(
    dir: &DataDir,
    a: &Connection,
    notes: &dyn Attestations,
    req: &LandRequest,
) -> Result<Option<Value>> {
    let ch = match change::change(a, &req.change_id) {
        Ok(ch) => ch,
        Err(e) if e.code() == Code::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    if ch.repository != req.repo_id {
        return Ok(None);
    }
    let Some(p) = landed_landing(a, &ch.change_id)? else {
        return Ok(None);
    };
    let repo = repository(a, &req.repo_id)?;
    let missing = match &p.git {
        Some(g) => notes.note_missing(Path::new(&repo.source), &g.commit)?,
        None => false,
    };
    let mut v = note_into(dir, a, notes, landed_output(&repo, &p, missing))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("already_landed".into(), json!(!missing));
    }
    Ok(Some(v))
}

/// The landed landing of a Change (its latest version that landed).
fn landed_landing(a: &Connection, change_id: &str) -> Result<Option<Landing>> {
    let row = a
        .prepare_cached(
            "SELECT landing_id, repo_id, change_version, revision, receipt_digest, old_head, \
             git_commit, ref_name, expected_old, allow_protected_change, protected_changes \
             FROM landings WHERE change_id = ?1 AND state = 'landed' \
             ORDER BY change_version DESC LIMIT 1",
        )?
        .query_row(params![change_id], |r| {
            Ok((
                (
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, String>(5)?,
                ),
                (
                    r.get::<_, Option<String>>(6)?,
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, Option<String>>(8)?,
                ),
                (r.get::<_, i64>(9)?, r.get::<_, i64>(10)?),
            ))
        })
        .optional()?;
    let Some((
        (landing_id, repo_id, version, revision, receipt_digest, old_head),
        (commit, ref_name, expected_old),
        (allowed, protected_changes),
    )) = row
    else {
        return Ok(None);
    };
    Ok(Some(Landing {
        landing_id,
        repo_id,
        change_id: change_id.to_owned(),
        change_version: u64::try_from(version)
            .map_err(|_| Error::new(Code::IntegrityError, "negative change version"))?,
        revision,
        receipt_digest,
        old_head,
        git: commit.map(|commit| GitIntent {
            ref_name: ref_name.unwrap_or_default(),
            expected_old: expected_old.unwrap_or_default(),
            commit,
        }),
        allow_protected_change: allowed == 1,
        protected_changes: u64::try_from(protected_changes)
            .map_err(|_| Error::new(Code::IntegrityError, "negative protected change count"))?,
    }))
}

/// What admission found: the repository, the current subject, its
/// stored receipt (`None` only when protected changes were allowed) and
/// the protected changes (empty unless allowed).
pub(crate) struct Admitted {
    pub(crate) repo: super::Repository,
    pub(crate) subject: StoredSubject,
    pub(crate) receipt: Option<String>,
    pub(crate) protected: crate::contract::protected::ProtectedChanges,
}

/// The protected changes of a subject, recomputed from the installed
/// requirement and the manifests of the target head and the revision,
/// with the revision's checkout findings.
fn protected_now(
    at: &Connection,
    dir: &DataDir,
    repo: &super::Repository,
    s: &StoredSubject,
) -> Result<crate::contract::protected::ProtectedChanges> {
    let (_, bytes) = super::installed_requirement(at, &repo.repo_id, &s.change.profile)?
        .ok_or_else(|| Error::new(Code::NotQualified, "no requirement is installed"))?;
    let protected = crate::contract::workflow::Workflow::parse(&bytes)?.protected_paths()?;
    let candidate = change::load_manifest(at, dir, &s.context.revision)?;
    let head = Sha256Hex::parse(&repo.head_revision)?;
    super::checkout::protected_changes(at, dir, &protected, &head, &candidate)
}

/// Every admission recheck. A revision that changes protected paths
/// (recomputed now, not trusted from the checkpoint) is refused unless
/// the operator allows it, and then needs no receipt.
pub(crate) fn admit(
    j: Option<&Connection>,
    at: &Connection,
    dir: &DataDir,
    repo_id: &str,
    change_id: &str,
    now_ms: i64,
    allow_protected_change: bool,
) -> Result<Admitted> {
    let ch = change::change(at, change_id)?;
    if ch.repository != repo_id {
        return Err(Error::new(
            Code::InvalidInput,
            "the change belongs to another repository",
        ));
    }
    let repo = repository(at, repo_id)?;
    let s = change::current_subject(at, &ch)?;
    if !subject_is_current(at, &s)? {
        return Err(stale_error());
    }
    let protected = protected_now(at, dir, &repo, &s)?;
    if !protected.is_empty() {
        if !allow_protected_change {
            return Err(protected.error("land refused"));
        }
        return Ok(Admitted {
            repo,
            subject: s,
            receipt: None,
            protected,
        });
    }
    let j = j.ok_or_else(|| Error::new(Code::NotQualified, "nothing was collected"))?;
    let stored = stored_receipt(at, &s)?.ok_or_else(|| {
        Error::new(Code::NotQualified, "the current subject has no receipt")
            .with("next", json!({"operation": "collector_finalize"}))
    })?;
    let evals = evaluate(Some(j), at, &s, now_ms)?;
    let receipt = build_receipt(j, at, dir, &s, &evals)
        .map_err(|r| refusal_error(Code::NotQualified, "admission rechecks refused", &r))?;
    let digest = receipt.digest()?;
    if digest.as_str() != stored {
        return Err(Error::new(
            Code::NotQualified,
            "the retained receipt is not the one the current evidence derives",
        ));
    }
    if receipt.transfers.is_empty() {
        return Err(Error::new(
            Code::NotQualified,
            "a receipt without any collector transfer cannot land",
        ));
    }
    Ok(Admitted {
        repo,
        subject: s,
        receipt: Some(stored),
        protected,
    })
}

/// Resolves a `pending` landing (the lock is held). The git branch is the
/// truth: at the new commit, phase 3 finishes whatever changed since; at
/// the expected old value, the admission rechecks run again (when
/// `recheck`) and phases 2 and 3 follow, or the landing is abandoned with
/// the refusal; anything else abandons it with `conflict`. A git failure
/// that leaves the branch at its old value keeps the landing pending.
fn resolve(
    s: &mut Session,
    p: &Landing,
    recheck: bool,
    update_worktree: bool,
    ts: &str,
    now_ms: i64,
) -> Result<Resolution> {
    let repo = s.apply(|w| repository(w.authority()?, &p.repo_id))?;
    let Some(g) = &p.git else {
        return Err(Error::new(
            Code::IntegrityError,
            "a pending landing without a git intent",
        ));
    };
    let src = Path::new(&repo.source);
    let zeros = "0".repeat(g.commit.len());
    let current = git_ref_value(src, &g.ref_name)?.unwrap_or_else(|| zeros.clone());
    if current == g.commit {
        return finish(s, &repo, p, recheck, ts);
    }
    if current != g.expected_old {
        return moved(s, p, &current);
    }
    if recheck {
        let refusal = s.apply(|w| {
            let admitted = admit(
                w.journal(),
                w.authority()?,
                w.dir(),
                &p.repo_id,
                &p.change_id,
                now_ms,
                p.allow_protected_change,
            );
            Ok(match admitted {
                Ok(a) => {
                    let same = a.subject.version == p.change_version
                        && a.subject.context.revision.as_str() == p.revision
                        && a.receipt == p.receipt_digest
                        && a.protected.total == p.protected_changes
                        && a.repo.head_revision == p.old_head;
                    (!same).then(|| {
                        Error::new(
                            Code::NotQualified,
                            "the subject or receipt changed since the landing intent",
                        )
                    })
                }
                Err(e) if is_refusal(&e) => Some(e),
                Err(e) => return Err(e),
            })
        })?;
        if let Some(e) = refusal {
            s.apply(|w| abandon(w.authority()?, p, e.code().as_str()))?;
            s.commit()?;
            return Ok(Resolution::Abandoned(abandoned_error(e, p)));
        }
        // The recheck only read: nothing of it is kept.
        s.rollback();
    }
    // A checked-out branch: refused, or its work tree must be clean, right
    // before the ref moves (what phase 1 checked may have changed since).
    match check_worktree(src, g, update_worktree) {
        Ok(()) => {}
        Err(e) if is_refusal(&e) => {
            s.apply(|w| abandon(w.authority()?, p, e.code().as_str()))?;
            s.commit()?;
            return Ok(Resolution::Abandoned(abandoned_error(e, p)));
        }
        Err(e) => return Err(e),
    }
    let moved_ok = git(
        src,
        None,
        &[
            "update-ref",
            "-m",
            "agent-task land",
            &g.ref_name,
            &g.commit,
            &g.expected_old,
        ],
        None,
    );
    if let Err(e) = moved_ok {
        let now = git_ref_value(src, &g.ref_name)?.unwrap_or(zeros);
        if now == g.commit {
            return finish(s, &repo, p, recheck, ts);
        }
        if now != g.expected_old {
            return moved(s, p, &now);
        }
        return Err(e
            .with("landing", "pending")
            .with("next", json!({"operation": "land"})));
    }
    crate::collector::crash_point("land_after_ref");
    finish(s, &repo, p, recheck, ts)
}

/// Errors that are the admission's answer (abandon), as opposed to a
/// failure to evaluate it (keep the landing pending).
fn is_refusal(e: &Error) -> bool {
    !matches!(
        e.code(),
        Code::Io | Code::Busy | Code::Internal | Code::IntegrityError
    )
}

fn abandoned_error(e: Error, p: &Landing) -> Error {
    e.with("landing", "abandoned")
        .with("change_id", p.change_id.clone())
        .with("change_version", p.change_version)
}

/// The branch is neither where the intent found it nor at the new commit.
fn moved(s: &mut Session, p: &Landing, found: &str) -> Result<Resolution> {
    s.apply(|w| abandon(w.authority()?, p, "branch_moved"))?;
    s.commit()?;
    let (ref_name, expected) = p
        .git
        .as_ref()
        .map(|g| (g.ref_name.clone(), g.expected_old.clone()))
        .unwrap_or_default();
    Ok(Resolution::Abandoned(abandoned_error(
        Error::new(
            Code::Conflict,
            "the target branch moved since the landing intent; nothing was landed",
        )
        .with("ref", ref_name)
        .with("expected", expected)
        .with("found", found),
        p,
    )))
}

/// Phase 3: the new head and the landed state, in one transaction.
fn finish(
    s: &mut Session,
    repo: &super::Repository,
    p: &Landing,
    resumed: bool,
    ts: &str,
) -> Result<Resolution> {
    let stale = s.apply(|w| {
        let at = w.authority()?;
        let stale = set_head(at, p)?;
        let n = at.prepare_cached("UPDATE landings SET state = 'landed', landed_at = ?2 WHERE landing_id = ?1 AND state = 'pending'")?.execute(params![p.landing_id, ts],
        )?;
        if n != 1 {
            return Err(Error::new(
                Code::IntegrityError,
                "the landing is no longer pending",
            ));
        }
        Ok(stale)
    })?;
    s.commit()?;
    Ok(Resolution::Landed(with_stale(
        landed_output(repo, p, resumed),
        stale,
    )))
}

/// Moves the authority's head to the landed revision; returns how many
/// live subjects of other Changes that made stale (their target moved).
fn set_head(at: &Connection, p: &Landing) -> Result<u64> {
    let before = super::live_subjects_except(at, Some(&p.change_id))?;
    at.prepare_cached("UPDATE repositories SET head_revision = ?2 WHERE repo_id = ?1")?
        .execute(params![p.repo_id, p.revision])?;
    let after = super::live_subjects_except(at, Some(&p.change_id))?;
    Ok(before.saturating_sub(after))
}

/// `v` with the count of live subjects the landing made stale.
fn with_stale(mut v: Value, stale: u64) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.insert("stale_subjects".into(), json!(stale));
    }
    v
}

fn abandon(at: &Connection, p: &Landing, reason: &str) -> Result<()> {
    at.prepare_cached("UPDATE landings SET state = 'abandoned', reason = ?2 WHERE landing_id = ?1 AND state = 'pending'")?.execute(params![p.landing_id, reason],
    )?;
    Ok(())
}

fn insert_landing(at: &Connection, p: &Landing, state: &str, ts: &str) -> Result<()> {
    let landed_at = (state == "landed").then_some(ts);
    let g = p.git.as_ref();
    at.prepare_cached("INSERT INTO landings(landing_id, repo_id, change_id, change_version, revision, receipt_digest, old_head, \
         git_commit, ref_name, expected_old, state, reason, intent_at, landed_at, allow_protected_change, protected_changes) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,NULL,?12,?13,?14,?15)")?.execute(params![
            p.landing_id,
            p.repo_id,
            p.change_id,
            p.change_version as i64,
            p.revision,
            p.receipt_digest,
            p.old_head,
            g.map(|g| g.commit.as_str()),
            g.map(|g| g.ref_name.as_str()),
            g.map(|g| g.expected_old.as_str()),
            state,
            ts,
            landed_at,
            i64::from(p.allow_protected_change),
            p.protected_changes as i64
        ],
    )?;
    Ok(())
}

/// The pending landing of a repository (at most one: a unique index).
fn pending_landing(a: &Connection, repo_id: &str) -> Result<Option<Landing>> {
    let row = a
        .prepare_cached("SELECT landing_id, repo_id, change_id, change_version, revision, receipt_digest, old_head, \
             git_commit, ref_name, expected_old, allow_protected_change, protected_changes \
             FROM landings WHERE repo_id = ?1 AND state = 'pending'")?.query_row(params![repo_id],
            |r| {
                Ok((
                    Landing {
                        landing_id: r.get(0)?,
                        repo_id: r.get(1)?,
                        change_id: r.get(2)?,
                        change_version: 0,
                        revision: r.get(4)?,
                        receipt_digest: r.get(5)?,
                        old_head: r.get(6)?,
                        git: None,
                        allow_protected_change: r.get::<_, i64>(10)? == 1,
                        protected_changes: u64::try_from(r.get::<_, i64>(11)?).unwrap_or(0),
                    },
                    r.get::<_, i64>(3)?,
                    r.get::<_, Option<String>>(7)?,
                    r.get::<_, Option<String>>(8)?,
                    r.get::<_, Option<String>>(9)?,
                ))
            },
        )
        .optional()?;
    let Some((mut l, version, commit, ref_name, expected_old)) = row else {
        return Ok(None);
    };
    l.change_version = u64::try_from(version)
        .map_err(|_| Error::new(Code::IntegrityError, "negative change version"))?;
    l.git = match (commit, ref_name, expected_old) {
        (Some(commit), Some(ref_name), Some(expected_old)) => Some(GitIntent {
            ref_name,
            expected_old,
            commit,
        }),
        _ => None,
    };
    Ok(Some(l))
}

fn landed_output(repo: &super::Repository, p: &Landing, resumed: bool) -> Value {
    json!({
        "landed": true, "repository": p.repo_id, "target": repo.target, "change_id": p.change_id,
        "change_version": p.change_version, "revision": p.revision, "old_head": p.old_head,
        "receipt_digest": p.receipt_digest,
        "git_commit": p.git.as_ref().map(|g| g.commit.clone()), "resumed": resumed,
        "allow_protected_change": p.allow_protected_change, "protected_changes": p.protected_changes,
    })
}

fn git(src: &Path, index: Option<&Path>, args: &[&str], stdin: Option<&[u8]>) -> Result<String> {
    git_env(src, index, args, &[], stdin)
}

/// Runs git in the repository (`repo_git`'s environment and mask) with
/// `envs` added; requires success and returns trimmed stdout.
fn git_env(
    src: &Path,
    index: Option<&Path>,
    args: &[&str],
    envs: &[(&str, &str)],
    stdin: Option<&[u8]>,
) -> Result<String> {
    let index_env;
    let mut all: Vec<(&str, &str)> = envs.to_vec();
    if let Some(i) = index {
        index_env = i.to_string_lossy().into_owned();
        all.push(("GIT_INDEX_FILE", index_env.as_str()));
    }
    let (code, out, err) = repo_git::run(src, args, &all, stdin)?;
    if code != 0 {
        return Err(Error::new(
            Code::Io,
            format!(
                "git {} failed: {err}",
                args.first().copied().unwrap_or_default()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out).trim().to_owned())
}

/// Runs git and returns its raw stdout (for `-z` output).
fn git_bytes(src: &Path, args: &[&str]) -> Result<Vec<u8>> {
    let (code, out, err) = repo_git::run(src, args, &[], None)?;
    if code != 0 {
        return Err(Error::new(
            Code::Io,
            format!(
                "git {} failed: {err}",
                args.first().copied().unwrap_or_default()
            ),
        ));
    }
    Ok(out)
}

/// The value of `ref_name` (`None`: absent). A git failure is an error.
fn git_ref_value(src: &Path, ref_name: &str) -> Result<Option<String>> {
    let out = git(
        src,
        None,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            ref_name,
        ],
        None,
    )?;
    Ok(out.lines().find_map(|l| {
        l.strip_prefix(ref_name)
            .and_then(|rest| rest.strip_prefix(' '))
            .map(str::to_owned)
    }))
}

/// Phase 1's git part when the repository's source is the top of a git
/// work tree: writes the revision's blobs (one `git fast-import` process),
/// its tree (a temporary index, never the operator's), checks that tree
/// entry by entry against the manifest (git silently drops paths it
/// refuses; a difference is `landed_tree_mismatch`), and writes a commit
/// whose parent is the branch's current value; nothing references them
/// yet. `None` when the source is not a git work tree.
fn git_prepare(
    dir: &DataDir,
    a: &Connection,
    ad: &Admitted,
    req: &LandRequest,
) -> Result<Option<GitIntent>> {
    let (repo, s) = (&ad.repo, &ad.subject);
    let src = Path::new(&repo.source);
    let top = match git(src, None, &["rev-parse", "--show-toplevel"], None) {
        Ok(t) => t,
        Err(_) => return Ok(None),
    };
    let same = std::fs::canonicalize(&top).ok() == std::fs::canonicalize(src).ok();
    if !same {
        return Ok(None);
    }
    let manifest = change::load_manifest(a, dir, &s.context.revision)?;
    let tmp = tempfile::tempdir_in(dir.root())
        .map_err(|e| Error::new(Code::Io, format!("temp dir: {e}")))?;
    let oids = write_blobs(src, tmp.path(), dir, &manifest)?;
    let index = tmp.path().join("index");
    let mut info = Vec::new();
    for (i, (e, oid)) in manifest.entries.iter().zip(&oids).enumerate() {
        if i == 0 && tamper_tree() {
            continue;
        }
        info.extend_from_slice(format!("{:o} {oid}\t{}", e.mode, e.path).as_bytes());
        info.push(0);
    }
    git(
        src,
        Some(&index),
        &["update-index", "--add", "-z", "--index-info"],
        Some(&info),
    )?;
    let tree = git(src, Some(&index), &["write-tree"], None)?;
    verify_tree(src, &tree, &manifest, &oids)?;
    let ref_name = format!("refs/heads/{}", repo.target);
    let old = git_ref_value(src, &ref_name)?;
    let (author, committer) = repo_git::operator_idents(src, req.author.as_deref())?;
    let (title, body) = change::change_message(a, &s.change.change_id)?;
    let msg = commit_message(ad, title.as_deref(), body.as_deref());
    // The message goes in on stdin: never an argument git could parse.
    let mut args = vec!["commit-tree", tree.as_str()];
    if let Some(o) = &old {
        args.extend(["-p", o.as_str()]);
    }
    let commit = git_env(
        src,
        None,
        &args,
        &[
            ("GIT_AUTHOR_NAME", author.name.as_str()),
            ("GIT_AUTHOR_EMAIL", author.email.as_str()),
            ("GIT_COMMITTER_NAME", committer.name.as_str()),
            ("GIT_COMMITTER_EMAIL", committer.email.as_str()),
        ],
        Some(msg.as_bytes()),
    )?;
    let expected_old = old.unwrap_or_else(|| "0".repeat(commit.len()));
    let intent = GitIntent {
        ref_name,
        expected_old,
        commit,
    };
    check_worktree(src, &intent, req.update_worktree)?;
    // A checked-out work tree is updated only for a revision whose checkout
    // is its bytes: an operator's override of protected paths may let in a
    // checkout-changing attribute, and the work tree is never where it acts.
    if req.update_worktree && ad.protected.total > 0 {
        let findings = super::checkout::revision_findings(dir, &manifest)?;
        if !findings.is_empty() {
            return Err(Error::new(
                Code::ProtectedPathChanged,
                "land --update-worktree never checks out a revision whose checkout would not be its bytes (a .gitattributes or .lfsconfig finding); land it without a checked-out target",
            )
            .with("protected_changes", findings.total)
            .with("paths", json!(findings.paths)));
        }
    }
    Ok(Some(intent))
}

/// The landing commit's message: the Change's title and body (cleaned
/// and bounded when they were given; trailer-shaped lines indented), an
/// operator's override of protected paths with the paths it let in, then
/// one blank line and the product's trailers (agent, Change, revision,
/// receipt), which `git interpret-trailers --parse` reads and nothing the
/// agent wrote can add to.
fn commit_message(ad: &Admitted, title: Option<&str>, body: Option<&str>) -> String {
    let s = &ad.subject;
    let fallback = format!("Land change {} v{}", s.change.change_id, s.version);
    let title = title.filter(|t| !t.is_empty()).unwrap_or(&fallback);
    let mut msg = guard_line(title);
    msg.push_str("\n\n");
    if let Some(b) = body.filter(|b| !b.is_empty()) {
        for line in b.lines() {
            msg.push_str(&guard_line(line));
            msg.push('\n');
        }
        msg.push('\n');
    }
    if !ad.protected.is_empty() {
        msg.push_str(&format!(
            "protected-paths-changed: {} (allowed by the operator: land --allow-protected-change)\n",
            ad.protected.total
        ));
        for c in &ad.protected.paths {
            let kind = serde_json::to_value(c.change)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            msg.push_str(&format!("  {kind}: {}\n", c.path.escape_debug()));
        }
        if ad.protected.total > ad.protected.paths.len() as u64 {
            msg.push_str("  …\n");
        }
        msg.push('\n');
    }
    let clean = |v: &str| -> String { v.chars().filter(|c| !c.is_control()).collect() };
    msg.push_str(&format!(
        "Agent-Task-Agent: {}/{}\n",
        clean(&s.change.owner_id),
        clean(&s.change.agent_id)
    ));
    msg.push_str(&format!(
        "Agent-Task-Change: {} v{}\n",
        s.change.change_id, s.version
    ));
    msg.push_str(&format!("Agent-Task-Revision: {}\n", s.context.revision));
    msg.push_str(&format!(
        "Agent-Task-Receipt: {}\n",
        ad.receipt.as_deref().unwrap_or("none")
    ));
    msg
}

/// A line of the agent's title or body, indented by two spaces when git
/// could read it as a trailer (`Token: …`, `Token = …`, any token followed
/// by a separator), a patch divider (`---`) that would end the message
/// for `git interpret-trailers`, or one of git's own trailer lines.
fn guard_line(line: &str) -> String {
    let token_len = line
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'-')
        .count();
    let after = line[token_len..].trim_start_matches([' ', '\t']);
    let trailer_shaped = token_len > 0
        && after
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_punctuation() && c != '-');
    if trailer_shaped || line.starts_with("---") || line.starts_with("(cherry picked from") {
        format!("  {line}")
    } else {
        line.to_owned()
    }
}

/// Test builds only: `AGENT_TASK_TEST_LAND_TAMPER_TREE=1` leaves the first
/// manifest entry out of the index, as git does with a path it refuses,
/// so that the tree check's refusal can be tested.
fn tamper_tree() -> bool {
    #[cfg(feature = "test-hooks")]
    {
        crate::env::var_os("AGENT_TASK_TEST_LAND_TAMPER_TREE").is_some()
    }
    #[cfg(not(feature = "test-hooks"))]
    {
        false
    }
}

/// `git ls-tree -r -z` of the written tree must be exactly the manifest:
/// the same paths, each with the manifest's mode and the blob id that
/// fast-import gave the manifest's bytes.
fn verify_tree(
    src: &Path,
    tree: &str,
    manifest: &super::snapshot::Manifest,
    oids: &[String],
) -> Result<()> {
    let listing = git_bytes(src, &["ls-tree", "-r", "-z", "--full-tree", tree])?;
    /// (mode, type, object id) of one `ls-tree` line.
    type Listed<'a> = (&'a [u8], &'a [u8], &'a [u8]);
    let mut got: std::collections::HashMap<&[u8], Listed<'_>> = std::collections::HashMap::new();
    for rec in listing.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let parsed = rec
            .iter()
            .position(|&b| b == b'\t')
            .and_then(|tab| {
                let (meta, path) = (&rec[..tab], &rec[tab + 1..]);
                let mut it = meta.split(|&b| b == b' ');
                Some((path, (it.next()?, it.next()?, it.next()?)))
            })
            .ok_or_else(|| Error::new(Code::Io, "git ls-tree printed an unexpected line"))?;
        got.insert(parsed.0, parsed.1);
    }
    let mismatch = |path: &str, why: &str| {
        Error::new(
            Code::LandedTreeMismatch,
            format!(
                "the tree git wrote is not the tested revision ({why}: {}); nothing was landed",
                path.escape_debug()
            ),
        )
        .with("path", path)
        .with("tree", tree)
    };
    for (e, oid) in manifest.entries.iter().zip(oids) {
        let Some((mode, kind, id)) = got.remove(e.path.as_bytes()) else {
            return Err(mismatch(&e.path, "missing from the tree"));
        };
        let want_mode = format!("{:06o}", e.mode);
        if mode != want_mode.as_bytes() || kind != b"blob" {
            return Err(mismatch(&e.path, "another mode or type"));
        }
        if id != oid.as_bytes() {
            return Err(mismatch(&e.path, "another blob"));
        }
    }
    if let Some(extra) = got.keys().next() {
        return Err(mismatch(
            &String::from_utf8_lossy(extra),
            "in the tree but not in the revision",
        ));
    }
    Ok(())
}

/// Writes every manifest entry's bytes (read and verified from the CAS) as
/// a git blob with ONE `git fast-import` process (blobs and marks only: no
/// ref, no commit) and returns their object ids in manifest order. A link
/// entry's bytes are its target, which is exactly git's 120000 blob.
fn write_blobs(
    src: &Path,
    tmp: &Path,
    dir: &DataDir,
    manifest: &super::snapshot::Manifest,
) -> Result<Vec<String>> {
    use std::io::Write;
    let marks = tmp.join("marks");
    let err_path = tmp.join("fast-import.err");
    let err_file =
        std::fs::File::create(&err_path).map_err(|e| Error::io("create", &err_path, e))?;
    let mut child = repo_git::command(src)
        .args(["fast-import", "--quiet", "--done"])
        .arg(format!("--export-marks={}", marks.display()))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(err_file)
        .spawn()
        .map_err(|e| Error::new(Code::Io, format!("cannot run git fast-import: {e}")))?;
    let cas = dir.cas();
    let fed = match child.stdin.take() {
        Some(stdin) => (|| -> Result<()> {
            let mut w = std::io::BufWriter::with_capacity(1 << 20, stdin);
            let pipe = |e: std::io::Error| Error::new(Code::Io, format!("git fast-import: {e}"));
            for (i, e) in manifest.entries.iter().enumerate() {
                // Streamed from the CAS (verified at the end of each
                // object); a bad object stops the feed before `done`.
                write!(w, "blob\nmark :{}\ndata {}\n", i + 1, e.size).map_err(pipe)?;
                cas.copy_to(&e.sha256, e.size, &mut w)?;
                w.write_all(b"\n").map_err(pipe)?;
            }
            w.write_all(b"done\n").map_err(pipe)?;
            w.flush().map_err(pipe)
        })(),
        None => Err(Error::internal("git fast-import has no stdin")),
    };
    // Closing stdin without `done` makes fast-import fail (and write no
    // marks), so an interrupted feed never looks complete.
    let status = child
        .wait()
        .map_err(|e| Error::new(Code::Io, format!("git fast-import: {e}")))?;
    fed?;
    if !status.success() {
        let err = std::fs::read_to_string(&err_path).unwrap_or_default();
        return Err(Error::new(
            Code::Io,
            format!("git fast-import failed: {}", err.trim()),
        ));
    }
    let text = std::fs::read_to_string(&marks).map_err(|e| Error::io("read", &marks, e))?;
    let mut oids = vec![String::new(); manifest.entries.len()];
    for line in text.lines() {
        let parsed = line
            .strip_prefix(':')
            .and_then(|l| l.split_once(' '))
            .and_then(|(n, oid)| Some((n.parse::<usize>().ok()?, oid)));
        match parsed {
            Some((n, oid)) if n >= 1 && n <= oids.len() => oid.clone_into(&mut oids[n - 1]),
            _ => {
                return Err(Error::new(
                    Code::Io,
                    format!("git fast-import wrote an unexpected mark line: {line}"),
                ));
            }
        }
    }
    if oids.iter().any(String::is_empty) {
        return Err(Error::new(
            Code::Io,
            "git fast-import did not mark every blob",
        ));
    }
    Ok(oids)
}
