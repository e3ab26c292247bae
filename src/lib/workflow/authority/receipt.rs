//! Receipts (v2, from validated imported transfers), exact-subject
//! qualification and the landing's admission rechecks (the landing
//! protocol itself is `workflow::service::land`; its rows are
//! [`super::landing`]).

use super::change::{self, ChangeSel, StoredSubject};
use super::collector::{self as col, ImportedRow};
use super::evaluate::{TaskEval, evaluate};
use super::{auth, repository};
use crate::collector::transfer::{self, MAX_TRANSFER_BYTES};
use crate::contract::{Next, canonical_bytes};
use crate::contract::{ReceiptStanding, SubjectStanding, decide_next};
use crate::error::{Code, Error, Result};
use crate::store::{
    Access, CommitOrder, Connection, DataDir, OptionalExtension, Plan, Work, params,
};
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::workflow::authority::schema::AuthorityWork;
use crate::workflow::journal;
use crate::workflow::journal::JournalWork;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// Domain of a receipt digest.
pub const DOMAIN_RECEIPT: &str = "agent-task.receipt.v2";
/// Most transfers a receipt names (finalization streams at most this many).
pub const MAX_RECEIPT_TRANSFERS: usize = 32;
/// Most failures reported.
pub const MAX_FAILURES: usize = 32;

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
    // The blob store, opened (its configuration read) once for every
    // transfer of the receipt.
    let mut blobs = None;
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
        match revalidate(j, a, dir, &mut blobs, s, x) {
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

/// Re-validates one retained transfer of the subject `s` (loaded from `a`
/// in this transaction: the task lookups and the live checks' staleness
/// of its tasks use it rather than load it again).
fn revalidate(
    j: &Connection,
    a: &Connection,
    dir: &DataDir,
    blobs: &mut Option<std::sync::Arc<dyn crate::store::BlobStore>>,
    s: &StoredSubject,
    x: &ImportedRow,
) -> Result<ReceiptTransfer> {
    if x.size > MAX_TRANSFER_BYTES {
        return Err(Error::new(Code::TooLarge, "retained transfer over 16 MiB"));
    }
    let d = Sha256Hex::parse(&x.transfer_digest)?;
    let store = match blobs {
        Some(b) => b.clone(),
        None => blobs.insert(dir.blobs()?).clone(),
    };
    let bytes = store.get(&d, Some(x.size), MAX_TRANSFER_BYTES)?;
    let env = transfer::open(&bytes)?;
    let h = if env.header.kind == super::review::KIND {
        // A review is replayed again, under the current profile and basis.
        let v = super::review::validate_transfer(j, a, dir, &bytes)?;
        super::review::check_live(a, &v.descriptor)?;
        if v.record.outcome != crate::collector::review::types::ReviewOutcome::Passed {
            return Err(Error::new(Code::NotQualified, "the review did not pass"));
        }
        v.envelope.header
    } else {
        let r = super::Rechecks::knowing(a, s);
        let v = col::validate_opened_in(j, &r, &bytes, env)?;
        col::check_live_in(&r, &v.descriptor)?;
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
        .map(|x| Failure::new(&x.task_id, x.code).into())
        .collect();
    Error::new(code, msg).with("failures", failures)
}

fn stale_error() -> Error {
    Error::new(Code::SubjectStale, "the change's subject is not current")
        .with("next", Next::checkpoint())
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
    let who = auth::authenticate(at, token)?;
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
        // The evidence writer's outbox rows, in this same transaction.
        super::evidence::on_receipt(
            at,
            &ch.repository,
            digest.as_str(),
            receipt.transfers.iter().map(|t| t.transfer_digest.as_str()),
            &ts,
        )?;
        // The forge's `success` status, in this same transaction.
        super::forge::on_status(
            at,
            &ch.change_id,
            s.version,
            "success",
            &format!(
                "qualified: receipt {}",
                digest.as_str().get(..12).unwrap_or_default()
            ),
            &ts,
        )?;
    }
    Ok(serde_json::to_value(FinalizeOutput {
        created,
        receipt: &receipt,
        receipt_digest: &digest,
    })?)
}

/// The stored receipt of a subject, when its digest still matches.
fn stored_receipt(a: &Connection, s: &StoredSubject) -> Result<Option<String>> {
    Ok(a.prepare_cached("SELECT receipt_digest FROM receipts WHERE change_id = ?1 AND change_version = ?2 AND context_digest = ?3")?.query_row(params![s.change.change_id, s.version as i64, s.context_digest.as_str()],
        |r| r.get(0),
    )
    .optional()?)
}

/// Whether a receipt is stored for the subject (not rebuilt: the `next`
/// command's cheap reading of [`ReceiptStanding`]).
pub fn has_stored_receipt(a: &Connection, s: &StoredSubject) -> Result<bool> {
    Ok(stored_receipt(a, s)?.is_some())
}

/// `qualify`: read-only exact-subject qualification (the spec's shape).
pub fn qualify<'a>(
    root: &'a Path,
    sel: &'a ChangeSel,
    scope: Option<&'a change::Scope>,
) -> impl FnOnce(Option<&Connection>, &Connection, &auth::Authenticated, journal::Now) -> Result<Value>
+ 'a {
    move |j, a, who, now| {
        let ch = change::select_in(a, sel, scope)?;
        if !change::may_view(&ch, &who.actor) {
            return Err(Error::new(
                Code::Forbidden,
                "the change belongs to another owner",
            ));
        }
        let none_current = |revision: Option<&Sha256Hex>| {
            serde_json::to_value(Qualification {
                failures: Vec::new(),
                next: decide_next(SubjectStanding::Superseded, []).into(),
                qualified: false,
                receipt_digest: None,
                revision,
                subject_current: false,
                tasks: Vec::new(),
            })
        };
        if ch.version == 0 {
            return Ok(none_current(None)?);
        }
        let s = change::current_subject(a, &ch)?;
        if !subject_is_current(a, &s)? {
            return Ok(none_current(Some(&s.context.revision))?);
        }
        let evals = evaluate(j, a, &s, now.ms)?;
        // `evaluate` gives one evaluation per task of `s`, in order.
        let digests = s.task_digests()?;
        let tasks: Vec<QualifiedTask<'_>> = evals
            .iter()
            .enumerate()
            .map(|(i, e)| {
                Ok(QualifiedTask {
                    required: e.task.required,
                    state: e.state,
                    step_id: &e.task.subject.step_id,
                    task_digest: match digests.get(i) {
                        Some(d) if s.tasks.get(i).map(|t| &t.task_id) == Some(&e.task.task_id) => {
                            d.clone()
                        }
                        _ => e.task.digest()?,
                    },
                    task_id: &e.task.task_id,
                })
            })
            .collect::<Result<_>>()?;
        // A revision that changes a protected path never qualifies: one
        // typed failure per required task, and the way on is a checkpoint
        // of a revision that leaves the protected paths alone.
        if !change::stored_protected(a, &ch.change_id, s.version)?.is_empty() {
            let failures: Vec<Failure> = evals
                .iter()
                .filter(|e| e.task.required)
                .take(MAX_FAILURES)
                .map(|e| Failure::new(&e.task.task_id, "protected_path_changed"))
                .collect();
            return Ok(serde_json::to_value(Qualification {
                failures,
                next: decide_next(SubjectStanding::ProtectedPathChanged, [])
                    .without_reason()
                    .into(),
                qualified: false,
                receipt_digest: None,
                revision: Some(&s.context.revision),
                subject_current: true,
                tasks,
            })?);
        }
        let mut failures: Vec<Failure> = Vec::new();
        let mut all_ok = true;
        for e in evals.iter().filter(|e| e.task.required) {
            if e.state != "succeeded" {
                all_ok = false;
                if failures.len() < MAX_FAILURES {
                    failures.push(Failure::new(
                        &e.task.task_id,
                        e.code.unwrap_or("task_pending"),
                    ));
                }
            }
        }
        let mut receipt_digest = None;
        let mut qualified = false;
        // Read only once every required task succeeded (the rule ignores
        // it otherwise).
        let mut receipt = ReceiptStanding::Unbuildable;
        if all_ok {
            match (j, stored_receipt(a, &s)?) {
                // The directory is opened (and checked) only when a receipt
                // is to be rebuilt: the read that runs this already opened
                // and checked it.
                (Some(jc), Some(stored)) => {
                    match build_receipt(jc, a, &DataDir::open(root)?, &s, &evals) {
                        Ok(r) if r.digest()?.as_str() == stored => {
                            qualified = true;
                            receipt_digest = Some(stored);
                            receipt = ReceiptStanding::Current;
                        }
                        Ok(_) => {
                            receipt = ReceiptStanding::Missing;
                            receipt_failures(&mut failures, &evals, "receipt_outdated");
                        }
                        Err(r) => {
                            for x in r
                                .iter()
                                .filter(|x| !x.task_id.is_empty())
                                .take(MAX_FAILURES)
                            {
                                failures.push(Failure::new(&x.task_id, x.code));
                            }
                        }
                    }
                }
                _ => {
                    receipt = ReceiptStanding::Missing;
                    receipt_failures(&mut failures, &evals, "receipt_missing");
                }
            }
        }
        let next = decide_next(
            SubjectStanding::Current(receipt),
            evals
                .iter()
                .filter(|e| e.task.required)
                .map(|e| (e.task.task_id.as_str(), &e.standing)),
        );
        failures.truncate(MAX_FAILURES);
        Ok(serde_json::to_value(Qualification {
            failures,
            next: next.without_reason().into(),
            qualified,
            receipt_digest,
            revision: Some(&s.context.revision),
            subject_current: true,
            tasks,
        })?)
    }
}

/// A receipt-level failure, reported against every required task (ids stay non-empty).
fn receipt_failures(failures: &mut Vec<Failure>, evals: &[TaskEval], code: &'static str) {
    for e in evals.iter().filter(|e| e.task.required) {
        if failures.len() < MAX_FAILURES {
            failures.push(Failure::new(&e.task.task_id, code));
        }
    }
}

// The outputs below are JSON objects: their fields are in key order, the
// order the `Value` they become has.

/// `finalize`'s output.
#[derive(Serialize)]
struct FinalizeOutput<'a> {
    created: bool,
    receipt: &'a Receipt,
    receipt_digest: &'a Sha256Hex,
}

/// `qualification`'s output (the spec's shape): `revision` and
/// `receipt_digest` are null when there is none.
#[derive(Serialize)]
struct Qualification<'a> {
    failures: Vec<Failure>,
    next: Value,
    qualified: bool,
    receipt_digest: Option<String>,
    revision: Option<&'a Sha256Hex>,
    subject_current: bool,
    tasks: Vec<QualifiedTask<'a>>,
}

/// One task of a qualification.
#[derive(Serialize)]
struct QualifiedTask<'a> {
    required: bool,
    state: &'static str,
    step_id: &'a str,
    task_digest: Sha256Hex,
    task_id: &'a str,
}

/// Why a required task keeps a Change from qualifying (a qualification's
/// and a refusal's `failures`).
#[derive(Serialize)]
struct Failure {
    code: &'static str,
    task_id: String,
}

impl Failure {
    fn new(task_id: &str, code: &'static str) -> Failure {
        Failure {
            code,
            task_id: task_id.to_owned(),
        }
    }
}

impl From<Failure> for Value {
    fn from(f: Failure) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("code".into(), f.code.into());
        m.insert("task_id".into(), f.task_id.into());
        Value::Object(m)
    }
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

/// What `propose` admits: the Change's current subject with every
/// admission recheck passed (its receipt in the answer, no refusal), or,
/// with `allow_unqualified`, a current subject whose revision leaves the
/// protected paths alone but that does not qualify (yet): then the
/// receipt is `None` and the refusal (`not_qualified`) is returned
/// beside it. A stale subject or a protected change is refused either
/// way.
pub(crate) fn admit_candidate(
    j: Option<&Connection>,
    at: &Connection,
    dir: &DataDir,
    repo_id: &str,
    change_id: &str,
    now_ms: i64,
    allow_unqualified: bool,
) -> Result<(Admitted, Option<Error>)> {
    match admit(j, at, dir, repo_id, change_id, now_ms, false) {
        Ok(a) => Ok((a, None)),
        Err(e) if allow_unqualified && e.code() == Code::NotQualified => {
            let ch = change::change(at, change_id)?;
            let repo = repository(at, repo_id)?;
            let s = change::current_subject(at, &ch)?;
            if !subject_is_current(at, &s)? {
                return Err(stale_error());
            }
            let protected = protected_now(at, dir, &repo, &s)?;
            if !protected.is_empty() {
                return Err(protected.error("propose refused"));
            }
            Ok((
                Admitted {
                    repo,
                    subject: s,
                    receipt: None,
                    protected,
                },
                Some(e),
            ))
        }
        Err(e) => Err(e),
    }
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
            .with("next", Next::op("collector_finalize"))
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
