//! The agent operations, each one library call: reads open stores
//! read-only and never create the journal; mutations run one critical
//! section: data-dir lock → journal immediate transaction → authority read
//! transaction (actor, subject, enrollment rechecks) → journal commit.
//! Contention fails closed with `busy`; nothing is replayed and no lock is
//! held across external execution.

use super::requests::{
    ClaimRequest, InstructionsRequest, NextTask, RecoveryRequest, RequirementsOutput, StatusRequest,
};
use crate::contract::*;
use crate::error::{Code, Error, Result};
use crate::store::{Connection, Deferred};
use crate::workflow::authority::Rechecks;
use crate::workflow::authority::admin;
use crate::workflow::authority::change::{self, ChangeSel};
use crate::workflow::authority::checkpoint as ckpt;
use crate::workflow::journal;
use serde_json::{Value, json};
use std::path::Path;

/// Where and as whom an agent operation runs (defined below the
/// operations, in [`super::ctx`]; the faces name it here).
pub use super::ctx::AgentCtx;

/// `requirements`: the installed requirement of a Change's repository
/// profile and the current subject's tasks.
pub fn requirements(cx: &AgentCtx<'_>, sel: &ChangeSel) -> Result<Value> {
    cx.read(|_j, a, who, _now| {
        let ch = change::select_in(a, sel, cx.scope.as_ref())?;
        if !change::may_view(&ch, &who.actor) {
            return Err(Error::new(
                Code::Forbidden,
                "the change belongs to another owner",
            ));
        }
        let (digest, bytes) =
            crate::workflow::authority::installed_requirement(a, &ch.repository, &ch.profile)?
                .ok_or_else(|| Error::new(Code::NotFound, "no requirement installed"))?;
        let workflow = crate::contract::workflow::Workflow::parse(&bytes)?;
        Ok(serde_json::to_value(RequirementsOutput {
            capability: CAPABILITY,
            schema_version: SCHEMA_VERSION,
            repository: ch.repository,
            profile: ch.profile,
            change_id: ch.change_id,
            requirement_digest: digest,
            workflow,
        })?)
    })
}

/// The `next` command's reading of one task's operation: the one rule's
/// ([`task_next`]), refined where this CLI can do more than the
/// spec's five operations (a documented superset): a command step with no
/// installed collector profile is the agent's own `claim`, and so is a
/// claimable agent-owned step.
fn refine(a: &Connection, t: &WorkflowTask, standing: &Standing, op: Next) -> Result<Next> {
    if *standing == (Standing::Claimable { collected: false }) {
        return Ok(Next::task("claim", &t.task_id));
    }
    let s = &t.subject;
    if op.operation == "collector_claim"
        && t.action_class == ActionClass::Command
        && crate::workflow::authority::collector::current_profile(
            a,
            &s.repository,
            &s.profile,
            &s.step_id,
        )?
        .is_none()
    {
        return Ok(Next::task("claim", &t.task_id));
    }
    Ok(op)
}

/// `next`'s output (a JSON object: fields in key order). A Change with no
/// checkpoint has neither `subject_current` nor `revision`; only a
/// protected-path change has the `protected_changes` pair.
#[derive(serde::Serialize)]
struct NextOutput<'a> {
    change_id: &'a str,
    /// The command of the CLI to run for `next` (beside it, never inside
    /// it; null for `none`): `contract::next_hint`.
    hint: Option<String>,
    next: Next,
    #[serde(skip_serializing_if = "Option::is_none")]
    protected_changes: Option<&'a [crate::contract::protected::ProtectedChange]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protected_changes_total: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    revision: Option<&'a crate::wire::digest::Sha256Hex>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subject_current: Option<bool>,
    tasks: Vec<NextTask>,
    version: u64,
}

/// `next`: typed next operation for a Change (never a command).
pub fn next(cx: &AgentCtx<'_>, sel: &ChangeSel) -> Result<Value> {
    cx.read(|j, a, who, now| {
        let ch = change::select_in(a, sel, cx.scope.as_ref())?;
        if !change::may_view(&ch, &who.actor) {
            return Err(Error::new(
                Code::Forbidden,
                "the change belongs to another owner",
            ));
        }
        let out = NextOutput {
            change_id: &ch.change_id,
            hint: next_hint(&Next::checkpoint(), &ch.change_id),
            next: decide_next(SubjectStanding::NoCheckpoint, []),
            protected_changes: None,
            protected_changes_total: None,
            revision: None,
            subject_current: None,
            tasks: Vec::new(),
            version: ch.version,
        };
        if ch.version == 0 {
            return Ok(serde_json::to_value(out)?);
        }
        let s = change::current_subject(a, &ch)?;
        if let Some(first) = s.tasks.first()
            && change::staleness(a, first)?.is_some()
        {
            return Ok(serde_json::to_value(NextOutput {
                next: decide_next(SubjectStanding::Superseded, []),
                subject_current: Some(false),
                ..out
            })?);
        }
        let out = NextOutput {
            subject_current: Some(true),
            revision: Some(&s.context.revision),
            ..out
        };
        let protected = change::stored_protected(a, &ch.change_id, s.version)?;
        if !protected.is_empty() {
            return Ok(serde_json::to_value(NextOutput {
                next: decide_next(SubjectStanding::ProtectedPathChanged, []),
                protected_changes: Some(&protected.paths),
                protected_changes_total: Some(protected.total),
                ..out
            })?);
        }
        // The one rule over the required tasks; when it names nothing,
        // the first task (required, then optional) this CLI can act on.
        let evals = crate::workflow::authority::evaluate::evaluate(j, a, &s, now.ms)?;
        let receipt = if crate::workflow::authority::receipt::has_stored_receipt(a, &s)? {
            ReceiptStanding::Current
        } else {
            ReceiptStanding::Missing
        };
        let decided = decide_next(
            SubjectStanding::Current(receipt),
            evals
                .iter()
                .filter(|e| e.task.required)
                .map(|e| (e.task.task_id.as_str(), &e.standing)),
        );
        let mut chosen: Option<Next> = match decided.task_id.as_deref() {
            Some(id) => match evals.iter().find(|e| e.task.task_id == id) {
                Some(e) => Some(refine(a, e.task, &e.standing, decided.clone())?),
                None => Some(decided.clone()),
            },
            None => (!decided.is_none()).then(|| decided.clone()),
        };
        let mut rows = Vec::new();
        let mut order: Vec<&crate::workflow::authority::evaluate::TaskEval> =
            evals.iter().filter(|e| e.task.required).collect();
        order.extend(evals.iter().filter(|e| !e.task.required));
        for e in order {
            let t = &e.task;
            let op = refine(a, t, &e.standing, task_next(&t.task_id, &e.standing))?;
            if chosen.is_none() && !op.is_none() {
                chosen = Some(op.clone());
            }
            rows.push(NextTask {
                task_id: t.task_id.clone(),
                task_digest: t.digest()?,
                step_id: t.subject.step_id.clone(),
                action_class: t.action_class,
                required: t.required,
                state: e.journal_state.clone(),
                next: op,
            });
        }
        let chosen = chosen.unwrap_or_else(Next::none);
        Ok(serde_json::to_value(NextOutput {
            hint: next_hint(&chosen, &ch.change_id),
            next: chosen,
            tasks: rows,
            ..out
        })?)
    })
}

/// `instructions`: an entrypoint or an explicit schema mismatch.
pub fn instructions(
    cx: &AgentCtx<'_>,
    req: &InstructionsRequest,
) -> Result<InstructionEntrypointResponse> {
    let (task_id, schema_version) = (req.task_id.as_str(), req.schema_version);
    if !SUPPORTED_SCHEMA_VERSIONS.contains(&schema_version) {
        return Ok(InstructionEntrypointResponse::SchemaMismatch(
            SchemaMismatch::for_version(schema_version),
        ));
    }
    cx.read(|j, a, who, now| {
        let (t, s) = change::find_task_in(a, task_id, cx.scope.as_ref())?;
        if !change::may_view(&s.change, &who.actor) {
            return Err(Error::new(
                Code::Forbidden,
                "the task belongs to another owner",
            ));
        }
        let evals = crate::workflow::authority::evaluate::evaluate(j, a, &s, now.ms)?;
        let op = match evals.iter().find(|e| e.task.task_id == t.task_id) {
            Some(e) => refine(a, &t, &e.standing, task_next(&t.task_id, &e.standing))?,
            None => Next::none(),
        };
        let policy = crate::wire::digest::domain_digest(
            DOMAIN_POLICY,
            &canonical_bytes(&json!([
                t.subject.repository,
                t.subject.profile,
                t.subject.policy_epoch,
                t.subject.requirement_digest
            ]))?,
        );
        Ok(InstructionEntrypointResponse::Entrypoint {
            entrypoint: Box::new(InstructionEntrypoint {
                capability: CAPABILITY.into(),
                schema_version: SCHEMA_VERSION,
                task_id: t.task_id.clone(),
                task_digest: t.digest()?,
                step_id: t.subject.step_id.clone(),
                action_class: t.action_class,
                required: t.required,
                workflow_digest: t.subject.requirement_digest.clone(),
                policy_digest: policy,
                criteria: t.criteria.clone(),
                references: t.references.clone(),
                instructions: t.instructions.clone(),
                progression: Progression {
                    operation: op.operation.to_owned(),
                    task_id: op.task_id,
                },
            }),
        })
    })
}

/// Largest manifest read for a reference lookup.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// `reference`: one named reference of a stored task; the service derives
/// repository, revision and path from the task.
pub fn reference(cx: &AgentCtx<'_>, req: &ReferenceFetchRequest) -> Result<ReferenceFetchResponse> {
    if !SUPPORTED_SCHEMA_VERSIONS.contains(&req.expected_schema_version) {
        return Ok(ReferenceFetchResponse::SchemaMismatch(
            SchemaMismatch::for_version(req.expected_schema_version),
        ));
    }
    check_id("task_id", &req.task_id)?;
    check_id("name", &req.name)?;
    let (dir, _) = admin::open_read(cx.root)?;
    cx.read(|_j, a, who, _now| {
        let (t, s) = change::find_task_in(a, &req.task_id, cx.scope.as_ref())?;
        let name = req.name.clone();
        let r = t
            .references
            .iter()
            .find(|r| r.name == req.name)
            .ok_or_else(|| {
                Error::new(
                    Code::NotFound,
                    format!("task has no reference named {}", req.name),
                )
            })?;
        if !change::may_view(&s.change, &who.actor) {
            return Ok(ReferenceFetchResponse::Denied { name });
        }
        if req
            .task_digest
            .as_ref()
            .is_some_and(|d| *d != t.digest().unwrap_or_else(|_| d.clone()))
        {
            return Ok(ReferenceFetchResponse::Uncertain {
                name,
                reason: "task_digest_mismatch".into(),
            });
        }
        let Some(expected) = &r.expected_sha256 else {
            return Ok(ReferenceFetchResponse::Missing { name });
        };
        if req.expected_sha256.as_ref().is_some_and(|d| d != expected) {
            return Ok(ReferenceFetchResponse::Uncertain {
                name,
                reason: "commitment_mismatch".into(),
            });
        }
        let (msha, msize): (String, i64) = a.query_row(
            "SELECT manifest_sha256, manifest_size FROM revisions WHERE revision = ?1",
            [t.subject.revision.as_str()],
            |x| Ok((x.get(0)?, x.get(1)?)),
        )?;
        let cas = dir.blobs()?;
        let manifest_bytes = match cas.get(
            &crate::wire::digest::Sha256Hex::parse(&msha)?,
            Some(msize as u64),
            MAX_MANIFEST_BYTES,
        ) {
            Ok(b) => b,
            // An unreachable bucket is not a wrong object: said as itself.
            Err(e) if e.code() == Code::BlobStoreUnavailable => return Err(e),
            Err(_) => {
                return Ok(ReferenceFetchResponse::Uncertain {
                    name,
                    reason: "store_integrity".into(),
                });
            }
        };
        let manifest: crate::workflow::authority::snapshot::Manifest =
            serde_json::from_slice(&manifest_bytes)?;
        let Some(e) = manifest.get(&r.path) else {
            return Ok(ReferenceFetchResponse::Uncertain {
                name,
                reason: "revision_mismatch".into(),
            });
        };
        if &e.sha256 != expected || e.mode == crate::workflow::authority::snapshot::MODE_LINK {
            return Ok(ReferenceFetchResponse::Uncertain {
                name,
                reason: "commitment_mismatch".into(),
            });
        }
        if e.size > MAX_REFERENCE_BYTES {
            return Ok(ReferenceFetchResponse::Limit {
                name,
                size: e.size,
                limit: MAX_REFERENCE_BYTES,
            });
        }
        let body = match cas.get(&e.sha256, Some(e.size), MAX_REFERENCE_BYTES) {
            Ok(b) => b,
            // An unreachable bucket is not a wrong object: said as itself.
            Err(e) if e.code() == Code::BlobStoreUnavailable => return Err(e),
            Err(_) => {
                return Ok(ReferenceFetchResponse::Uncertain {
                    name,
                    reason: "store_integrity".into(),
                });
            }
        };
        match String::from_utf8(body) {
            Ok(content) => Ok(ReferenceFetchResponse::Available {
                name,
                path: r.path.clone(),
                sha256: e.sha256.clone(),
                size: e.size,
                content,
            }),
            Err(_) => Ok(ReferenceFetchResponse::Uncertain {
                name,
                reason: "not_utf8".into(),
            }),
        }
    })
}

/// `claim`.
pub fn claim(cx: &AgentCtx<'_>, r: &ClaimRequest) -> Result<Deferred<Value>> {
    let (r, scope) = (r.clone(), cx.scope.clone());
    cx.mutate_deferred(move |j, a, who, now| {
        // The task is looked up once (and checked against the scope):
        // the claim takes it as found here.
        let rechecks = Rechecks::scoped(a, scope.as_ref());
        let found = journal::Authority::find_task(&rechecks, &r.task_id, &who.actor)?;
        let t = found.task();
        // A review step is claimed only by `collector-claim`, for the
        // installed review profile's registration (whatever executor a
        // plain claim names).
        if t.action_class == ActionClass::Review {
            return Err(Error::new(
                Code::Forbidden,
                "review steps are controller_only and cannot be claimed (the enrolled review collector uses collector-claim)",
            ));
        }
        let req = TaskClaimRequest {
            version: SCHEMA_VERSION,
            request_id: r.request_id.clone(),
            task_id: r.task_id.clone(),
            task_digest: t.digest()?,
            requested_lease_ms: r.lease_ms,
            executor: r.executor.clone(),
        };
        journal::claim(j, &rechecks, &who.actor, &req, Some(found), now)
    })
}

/// `heartbeat`, `cancel`, `reconcile` by attempt id and fence.
pub fn mutate(cx: &AgentCtx<'_>, m: &journal::MutationArgs) -> Result<Deferred<Value>> {
    check_id("attempt_id", &m.attempt_id)?;
    let (m, scope) = (m.clone(), cx.scope.clone());
    cx.mutate_deferred(move |j, a, who, now| {
        let (req, row) = journal::mutation_request(j, &who.actor, &m)?;
        // The attempt's task, looked up once and checked against the
        // scope before anything else (a retry's retained outcome too);
        // the attempt as read above.
        let rechecks = Rechecks::scoped(a, scope.as_ref());
        rechecks.task(&req.task_id)?;
        journal::mutate(j, &rechecks, &who.actor, &req, Some(row), now)
    })
}

/// `result` from a TaskResultAssertion document.
pub fn result(cx: &AgentCtx<'_>, assertion: &TaskResultAssertion) -> Result<Deferred<Value>> {
    let (assertion, scope) = (assertion.clone(), cx.scope.clone());
    cx.mutate_deferred(move |j, a, who, now| {
        let rechecks = Rechecks::scoped(a, scope.as_ref());
        journal::Authority::find_task(&rechecks, &assertion.task_id, &who.actor)?;
        journal::result(j, &rechecks, &who.actor, &assertion, now)
    })
}

/// `status`.
pub fn status(cx: &AgentCtx<'_>, req: &StatusRequest) -> Result<Value> {
    cx.read(|j, a, who, now| {
        let rechecks = cx.rechecks(a);
        journal::Authority::find_task(&rechecks, &req.task_id, &who.actor)?;
        journal::status(
            j,
            &rechecks,
            &who.actor,
            &TaskStatusRequest {
                version: 1,
                task_id: req.task_id.clone(),
                attempt_id: req.attempt_id.clone(),
            },
            now,
        )
    })
}

/// `recovery`.
pub fn recovery(cx: &AgentCtx<'_>, req: &RecoveryRequest) -> Result<TaskRecoveryEnvelope> {
    cx.read(|j, a, who, now| {
        let rechecks = cx.rechecks(a);
        journal::Authority::find_task(&rechecks, &req.task_id, &who.actor)?;
        journal::recovery(
            j,
            &rechecks,
            &who.actor,
            &req.task_id,
            req.attempt_id.as_deref(),
            req.request_id.as_deref(),
            now,
        )
    })
}

/// `checkpoint` (the authority act, for the agent's actor): the authority
/// written and the journal read, in one session.
pub fn checkpoint(
    cx: &AgentCtx<'_>,
    sel: &ChangeSel,
    max_revision_bytes: u64,
    opts: &ckpt::CheckpointOptions,
) -> Result<ckpt::CheckpointOutput> {
    // The snapshot's blobs are stored before the lock is taken.
    let pre = ckpt::prestore(
        cx.root,
        cx.token,
        sel,
        max_revision_bytes,
        &crate::testhooks::upload_pause,
    )?;
    let staged = ckpt::checkpoint(cx.token, sel, max_revision_bytes, opts, pre)?;
    let mut session =
        crate::store::Session::open(cx.root, cx.timeout, cx.clock, ckpt::CHECKPOINT_PLAN)?;
    let out = session.apply(staged)?;
    session.commit()?;
    session.close();
    Ok(out)
}

/// `change open`.
pub fn change_open(
    cx: &AgentCtx<'_>,
    repo: &str,
    profile: &str,
    workspace: &Path,
    (title, body, group): (Option<&str>, Option<&str>, Option<&str>),
) -> Result<change::ChangeOpenOutput> {
    let staged = change::change_open(cx.token, repo, profile, workspace, title, body, group)?;
    super::admin::with_write(cx.root, cx.timeout, cx.clock, staged)
}

/// The agent assertion for one attempt of the caller from its criterion
/// rows alone (`result --criterion NAME=OUTCOME`): the task and attempt
/// digests, the execution operation id and the fence come from the
/// attempt's status as the authority reads it, the agent is the
/// authenticated actor, and the overall outcome follows the rows (failed
/// if any row failed, passed if every claimed row passed, else uncertain).
/// Submitting it goes through `result` as any other assertion.
pub fn agent_assertion(
    cx: &AgentCtx<'_>,
    at: &StatusRequest,
    request_id: &str,
    criteria: Vec<CriterionResult>,
) -> Result<TaskResultAssertion> {
    let (status, actor) = cx.read(|j, a, who, now| {
        let rechecks = cx.rechecks(a);
        journal::Authority::find_task(&rechecks, &at.task_id, &who.actor)?;
        let status = journal::status(
            j,
            &rechecks,
            &who.actor,
            &TaskStatusRequest {
                version: 1,
                task_id: at.task_id.clone(),
                attempt_id: at.attempt_id.clone(),
            },
            now,
        )?;
        Ok((status, who.actor.clone()))
    })?;
    let field = |k: &str| {
        status
            .get(k)
            .cloned()
            .ok_or_else(|| Error::internal(format!("status has no {k}")))
    };
    let digest = |k: &str| -> Result<crate::wire::digest::Sha256Hex> {
        serde_json::from_value(field(k)?).map_err(|e| Error::internal(format!("status {k}: {e}")))
    };
    let rows = criteria.iter().map(|r| r.outcome);
    let outcome = if rows.clone().any(|o| o == CriterionOutcome::Failed) {
        ResultOutcome::Failed
    } else if rows.clone().any(|o| o == CriterionOutcome::Passed)
        && rows
            .clone()
            .all(|o| matches!(o, CriterionOutcome::Passed | CriterionOutcome::NotClaimed))
    {
        ResultOutcome::Passed
    } else {
        ResultOutcome::Uncertain
    };
    let assertion = TaskResultAssertion {
        version: SCHEMA_VERSION,
        task_id: at.task_id.clone(),
        task_digest: digest("task_digest")?,
        attempt_id: at.attempt_id.clone(),
        attempt_digest: digest("attempt_digest")?,
        request_id: request_id.to_owned(),
        execution_operation_id: field("execution_operation_id")?
            .as_str()
            .ok_or_else(|| Error::internal("status execution_operation_id"))?
            .to_owned(),
        agent: actor,
        executor: None,
        fence: field("fence")?
            .as_u64()
            .ok_or_else(|| Error::internal("status fence"))?,
        trust_class: TrustClass::AgentAssertion,
        outcome,
        criteria,
        executor_provenance: None,
    };
    assertion.validate()?;
    Ok(assertion)
}

/// Most candidates an `ambiguous_id` error lists.
pub const MAX_ID_CANDIDATES: usize = 20;

/// The whole id a command-line id names: the id itself when it has the
/// kind's whole form, else the one id of the kind the caller may view that
/// starts with it (`ch_` and the like may be left out: `3fa9` is `ch_3fa9`
/// for a Change). None: `not_found`; several: `ambiguous_id` listing those
/// (only ids the caller may view, never another owner's).
pub fn resolve_id(cx: &AgentCtx<'_>, kind: change::IdKind, given: &str) -> Result<String> {
    choose_id(kind, given, |prefix, max| {
        visible_ids(cx, kind, prefix, max)
    })
}

/// [`resolve_id`] for the operator, who may view every id of the data
/// directory at `root` (no token: the directory is the operator's).
pub fn resolve_id_operator(root: &Path, kind: change::IdKind, given: &str) -> Result<String> {
    choose_id(kind, given, |prefix, max| {
        operator_ids(root, kind, prefix, max)
    })
}

fn choose_id(
    kind: change::IdKind,
    given: &str,
    list: impl FnOnce(&str, usize) -> Result<Vec<String>>,
) -> Result<String> {
    if given.is_empty() || kind.is_full(given) {
        return Ok(given.to_owned());
    }
    let prefix = if given.starts_with(kind.id_prefix()) {
        given.to_owned()
    } else {
        format!("{}{given}", kind.id_prefix())
    };
    let mut ids = list(&prefix, MAX_ID_CANDIDATES + 1)?;
    match ids.len() {
        1 => Ok(ids.remove(0)),
        0 => Err(Error::new(
            Code::NotFound,
            format!("no {} id starts with {given}", kind.as_str()),
        )
        .with("kind", kind.as_str())
        .with("prefix", given)),
        n => {
            let more = n > MAX_ID_CANDIDATES;
            ids.truncate(MAX_ID_CANDIDATES);
            Err(Error::new(
                Code::AmbiguousId,
                format!(
                    "{given} names {}{} {} ids: {}",
                    if more { "more than " } else { "" },
                    ids.len(),
                    kind.as_str(),
                    ids.join(", ")
                ),
            )
            .with("kind", kind.as_str())
            .with("prefix", given)
            .with("candidates", ids)
            .with("more", more))
        }
    }
}

/// Every id of `kind` in the data directory at `root` that starts with
/// `prefix`, in id order, at most `max`: the operator's candidates.
pub fn operator_ids(
    root: &Path,
    kind: change::IdKind,
    prefix: &str,
    max: usize,
) -> Result<Vec<String>> {
    check_id(kind.as_str(), prefix)?;
    let clock = crate::clock::SystemClock;
    super::ctx::operator_read(root, &clock, |j, a, _now| match kind {
        change::IdKind::Attempt => match j {
            None => Ok(Vec::new()),
            Some(j) => journal::attempt_ids_with_prefix(j, prefix, |_| Ok(true), max),
        },
        _ => change::ids_with_prefix(a, kind, None, None, prefix, max),
    })
}

/// The ids of `kind` the caller may view that start with `prefix` (whole,
/// with the kind's `ch_`/`task_`/`att_`), in id order, at most `max`: what
/// [`resolve_id`] chooses among and what shell completion offers.
pub fn visible_ids(
    cx: &AgentCtx<'_>,
    kind: change::IdKind,
    prefix: &str,
    max: usize,
) -> Result<Vec<String>> {
    check_id(kind.as_str(), prefix)?;
    cx.read(|j, a, who, _now| {
        let owner = who.actor.owner_id.as_str();
        let scope = cx.scope.as_ref();
        match kind {
            change::IdKind::Attempt => match j {
                None => Ok(Vec::new()),
                Some(j) => journal::attempt_ids_with_prefix(
                    j,
                    prefix,
                    |task| change::task_visible(a, task, owner, scope),
                    max,
                ),
            },
            _ => change::ids_with_prefix(a, kind, Some(owner), scope, prefix, max),
        }
    })
}
