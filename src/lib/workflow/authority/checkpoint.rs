//! Checkpoints: a Change's new version (its revision, context and the
//! compiled task set of the subject), or the current subject returned
//! again when it is reusable. Above the Change reads ([`super::change`]),
//! the protected-path check ([`super::checkout`]) and the task evaluation
//! ([`super::evaluate`]).

use super::change::*;
use super::snapshot;
use super::{installed_requirement, policy_epoch, repository};
use crate::contract::workflow::Workflow;
use crate::contract::{
    ActionClass, Criterion, DOMAIN_PLAN, DOMAIN_SKILL, NamedReference, SCHEMA_VERSION,
    WorkflowTask, WorkflowTaskSubject, canonical_bytes, task_id_for,
};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, params};
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::workflow::authority::schema::AuthorityWork;
use crate::workflow::journal::JournalWork;
use serde::Serialize;
use std::path::Path;

/// `checkpoint` output.
#[derive(Debug, Serialize)]
pub struct CheckpointOutput {
    /// Change id.
    pub change_id: String,
    /// New version.
    pub version: u64,
    /// Revision.
    pub revision: String,
    /// Context digest.
    pub context_digest: String,
    /// Files in the snapshot.
    pub files: usize,
    /// Files whose bytes were read (stat-cache misses).
    pub hashed: u64,
    /// The Change's base after this checkpoint: the target head now.
    pub base_revision: String,
    /// Protected paths this revision changes relative to the target head
    /// (at most [`crate::contract::protected::MAX_LISTED`]; empty when none). Such a
    /// subject never qualifies and no collector runs on it.
    pub protected_changes: Vec<crate::contract::protected::ProtectedChange>,
    /// How many protected paths changed in all.
    pub protected_changes_total: u64,
    /// The subject's tasks.
    pub tasks: Vec<TaskSummary>,
    /// `true`: the tree is the current subject's revision and that subject
    /// was returned (it still has live or pending tasks, or passed);
    /// `false`: a new subject with fresh task ids was minted.
    pub reused: bool,
}

/// A task in a listing.
#[derive(Debug, Clone, Serialize)]
pub struct TaskSummary {
    /// Task id.
    pub task_id: String,
    /// Task digest.
    pub task_digest: String,
    /// Step.
    pub step_id: String,
    /// Action class.
    pub action_class: ActionClass,
    /// Required.
    pub required: bool,
}

/// What a new Change version is built on, loaded before any byte of the
/// candidate is read: the repository, the installed requirement and its
/// protected patterns.
pub(crate) struct VersionBasis {
    repo: super::Repository,
    req_digest: Sha256Hex,
    wf: Workflow,
    protected: crate::contract::protected::Protected,
}

/// Loads the basis of a Change's next version.
pub(crate) fn version_basis(tx: &Connection, ch: &Change) -> Result<VersionBasis> {
    let repo = repository(tx, &ch.repository)?;
    let (req_digest, req_bytes) = installed_requirement(tx, &ch.repository, &ch.profile)?
        .ok_or_else(|| {
            Error::new(
                Code::NotFound,
                "the profile's requirement is no longer installed",
            )
        })?;
    let wf = Workflow::parse(&req_bytes)?;
    let protected = wf.protected_paths()?;
    Ok(VersionBasis {
        repo,
        req_digest: Sha256Hex::parse(&req_digest)?,
        wf,
        protected,
    })
}

/// What a checkpoint asks beyond the Change.
#[derive(Debug, Clone, Default)]
pub struct CheckpointOptions {
    /// `checkpoint --message`: the Change's title (first line) and body.
    pub message: Option<String>,
    /// `checkpoint --new-subject`: mint a new subject even for the current
    /// subject's tree.
    pub new_subject: bool,
}

/// Before the lock: reads (without writing) who the token is and which
/// Change is meant, and when it is the caller's open local Change, scans
/// its workspace and stores the snapshot's blobs (uploads to a bucket
/// included), so that the unit of work only records rows. `pause` runs
/// just before the first byte is stored (a test hook). `Ok(None)`: nothing
/// was prepared (no authority yet, a refusal the unit of work will give
/// with its own answer); the unit of work then scans under the lock as
/// before. A store failure here (`blob_store_unavailable`) is the
/// command's answer, with no lock taken and nothing committed.
pub fn prestore(
    root: &Path,
    token: &str,
    sel: &ChangeSel,
    max_revision_bytes: u64,
    pause: &dyn Fn(),
) -> Result<Option<Prestored>> {
    let Ok(dir) = DataDir::open(root) else {
        return Ok(None);
    };
    let Ok(Some(conn)) = dir.open_read(&crate::workflow::authority::schema::SPEC) else {
        return Ok(None);
    };
    let Ok(who) = super::auth::authenticate(&conn, token) else {
        return Ok(None);
    };
    let Ok(ch) = select(&conn, sel) else {
        return Ok(None);
    };
    if check_owner(&ch, &who).is_err() || ch.via_endpoint() || check_open(&conn, &ch).is_err() {
        return Ok(None);
    }
    pause();
    prestore_snapshot(&conn, &dir, Path::new(&ch.workspace), max_revision_bytes).map(Some)
}

/// Snapshots the workspace into a new Change version with exact context
/// bytes and a freshly compiled task set, or, for the current subject's
/// tree while that subject is not on the retry path, returns it
/// ([`reusable`]). A landed Change is closed ([`check_open`]).
pub fn checkpoint(
    token: &str,
    sel: &ChangeSel,
    max_revision_bytes: u64,
    opts: &CheckpointOptions,
    pre: Option<Prestored>,
) -> Result<impl FnOnce(&crate::store::Work<'_>) -> Result<CheckpointOutput>> {
    let message = opts.message.as_deref().map(split_message).transpose()?;
    let new_subject = opts.new_subject;
    Ok(move |w: &crate::store::Work<'_>| {
        let (tx, dir, now, now_ms) = (w.authority()?, w.dir(), w.now_text(), w.now_ms());
        let now = now.as_str();
        let who = super::auth::authenticate(tx, token)?;
        let ch = select(tx, sel)?;
        check_owner(&ch, &who)?;
        if ch.via_endpoint() {
            return Err(Error::new(
                Code::Conflict,
                "this change was opened through the workspace endpoint: its workspace is the \
                 client's, so checkpoint it there (checkpoint --endpoint)",
            )
            .with("change_id", ch.change_id.clone()));
        }
        check_open(tx, &ch)?;
        let basis = version_basis(tx, &ch)?;
        let snap = store_snapshot_from(
            tx,
            dir,
            Path::new(&ch.workspace),
            now,
            max_revision_bytes,
            pre,
        )?;
        if let Some((title, body)) = &message {
            set_message(tx, &ch.change_id, Some(title), Some(body))?;
        }
        if let Some(s) = reusable(w.journal(), tx, &ch, &snap.revision, now_ms, new_subject)? {
            return reused_output(tx, &s, snap.files, snap.hashed);
        }
        // An unchanged rescan built no manifest; a new version of the
        // same revision reads the stored one.
        let manifest = match &snap.manifest {
            Some(m) => std::borrow::Cow::Borrowed(m),
            None => std::borrow::Cow::Owned(super::change::load_manifest(tx, dir, &snap.revision)?),
        };
        record_version(
            tx,
            dir,
            now,
            &ch,
            &basis,
            &snap.revision,
            &manifest,
            snap.hashed,
        )
    })
}

/// Records a new version of `ch` whose revision (already recorded, its
/// objects durable) is `revision` with `manifest`: the target head now
/// becomes the Change's base, the protected paths are compared with it,
/// and the context and task set are derived. What a local and a remote
/// checkpoint share, inside the caller's transaction.
#[allow(clippy::too_many_arguments)]
pub(crate) fn record_version(
    tx: &Connection,
    dir: &DataDir,
    now: &str,
    ch: &Change,
    basis: &VersionBasis,
    revision: &Sha256Hex,
    manifest: &snapshot::Manifest,
    hashed: u64,
) -> Result<CheckpointOutput> {
    let VersionBasis {
        repo,
        req_digest,
        wf,
        protected,
    } = basis;
    let version = ch.version + 1;
    // The target head now is the Change's new base: an agent brings its
    // workspace up to date with a moved head and checkpoints again.
    let base = Sha256Hex::parse(&repo.head_revision)?;
    let changes = super::checkout::protected_changes(tx, dir, protected, &base, manifest)?;
    let ctx = ChangeContext {
        version: 1,
        repository: ch.repository.clone(),
        profile: ch.profile.clone(),
        change_id: ch.change_id.clone(),
        change_version: version,
        base_revision: base.clone(),
        revision: revision.clone(),
        target: repo.target.clone(),
        target_head: base.clone(),
        requirement_digest: req_digest.clone(),
        policy_epoch: policy_epoch(tx)?,
    };
    let ctx_bytes = canonical_bytes(&ctx)?;
    let ctx_digest = domain_digest(DOMAIN_CONTEXT, &ctx_bytes);
    let tasks = compile(&ctx, &ctx_digest, wf, manifest)?;
    let tasks_json = canonical_bytes(&tasks)?;
    let protected_json = if changes.is_empty() {
        None
    } else {
        Some(canonical_bytes(&changes)?)
    };
    tx.prepare_cached("INSERT INTO change_versions(change_id, version, revision, context_digest, context_bytes, tasks_json, created_at, protected_changes) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?.execute(params![ch.change_id, version as i64, revision.as_str(), ctx_digest.as_str(), ctx_bytes, tasks_json, now, protected_json],
    )?;
    for t in &tasks {
        tx.prepare_cached("INSERT INTO subject_tasks(task_id, change_id, version, step_id) VALUES (?1, ?2, ?3, ?4)")?.execute(params![t.task_id, ch.change_id, version as i64, t.subject.step_id],
        )?;
    }
    // The forge's `pending` status, in this same transaction.
    super::forge::on_status(
        tx,
        &ch.change_id,
        version,
        "pending",
        &format!("checkpointed: {} tasks to qualify", tasks.len()),
        now,
    )?;
    tx.prepare_cached(
        "UPDATE changes SET current_version = ?2, base_revision = ?3 WHERE change_id = ?1",
    )?
    .execute(params![ch.change_id, version as i64, base.as_str()])?;
    Ok(CheckpointOutput {
        change_id: ch.change_id.clone(),
        version,
        revision: revision.to_string(),
        context_digest: ctx_digest.to_string(),
        files: manifest.entries.len(),
        hashed,
        base_revision: base.to_string(),
        protected_changes_total: changes.total,
        protected_changes: changes.paths,
        tasks: tasks.iter().map(summary).collect::<Result<_>>()?,
        reused: false,
    })
}

/// A task's listing row.
pub fn summary(t: &WorkflowTask) -> Result<TaskSummary> {
    Ok(TaskSummary {
        task_id: t.task_id.clone(),
        task_digest: t.digest()?.to_string(),
        step_id: t.subject.step_id.clone(),
        action_class: t.action_class,
        required: t.required,
    })
}

/// Compiled plan bytes (for the plan digest).
#[derive(Serialize)]
struct Plan<'a> {
    requirement_digest: &'a Sha256Hex,
    revision: &'a Sha256Hex,
    steps: Vec<(&'a str, Vec<NamedReference>)>,
}

/// Derives the tasks of a subject from the installed requirement, the
/// context and fixed action-class rules: review-step criteria are always
/// controller-only; every task has at least one criterion (checked at
/// install); reference hashes come from the revision's manifest.
pub fn compile(
    ctx: &ChangeContext,
    ctx_digest: &Sha256Hex,
    wf: &Workflow,
    manifest: &snapshot::Manifest,
) -> Result<Vec<WorkflowTask>> {
    let refs_of = |s: &crate::contract::workflow::Step| -> Vec<NamedReference> {
        s.references
            .iter()
            .map(|r| NamedReference {
                name: r.name.clone(),
                expected_sha256: manifest.get(&r.path).map(|e| e.sha256.clone()),
                path: r.path.clone(),
            })
            .collect()
    };
    let plan = Plan {
        requirement_digest: &ctx.requirement_digest,
        revision: &ctx.revision,
        steps: wf
            .steps
            .iter()
            .map(|s| (s.id.as_str(), refs_of(s)))
            .collect(),
    };
    let plan_digest = domain_digest(DOMAIN_PLAN, &canonical_bytes(&plan)?);
    let mut out = Vec::new();
    for s in &wf.steps {
        let task_id = task_id_for(ctx_digest, &s.id);
        let t = WorkflowTask {
            version: SCHEMA_VERSION,
            task_id,
            subject: WorkflowTaskSubject {
                repository: ctx.repository.clone(),
                profile: ctx.profile.clone(),
                target: ctx.target.clone(),
                target_head: Some(ctx.target_head.clone()),
                revision: ctx.revision.clone(),
                change_id: ctx.change_id.clone(),
                change_version: ctx.change_version,
                context_digest: ctx_digest.clone(),
                policy_epoch: ctx.policy_epoch,
                requirement_digest: ctx.requirement_digest.clone(),
                plan_digest: plan_digest.clone(),
                skill_digest: domain_digest(DOMAIN_SKILL, s.instructions.as_bytes()),
                step_id: s.id.clone(),
            },
            action_class: s.action_class,
            required: s.required,
            depends_on: s
                .depends_on
                .iter()
                .map(|d| task_id_for(ctx_digest, d))
                .collect(),
            criteria: s
                .criteria
                .iter()
                .map(|c| Criterion {
                    id: c.id.clone(),
                    required: c.required,
                    controller_only: c.controller_only || s.action_class == ActionClass::Review,
                    text: c.text.clone(),
                })
                .collect(),
            references: refs_of(s),
            instructions: s.instructions.clone(),
        };
        t.validate()?;
        out.push(t);
    }
    Ok(out)
}

/// The session of a checkpoint: the authority written, the journal read
/// (never created), to decide whether the current subject is reused.
pub const CHECKPOINT_PLAN: crate::store::Plan = crate::store::Plan {
    dbs: &[
        (
            &crate::workflow::journal::SPEC,
            crate::store::Access::ReadOnly,
        ),
        (&super::schema::SPEC, crate::store::Access::Write),
    ],
    order: crate::store::CommitOrder::Listed,
};

/// The current subject a checkpoint of `revision` returns instead of
/// minting a new one: the same revision, still current, and not on the
/// spec's retry path (every required task finished and one failed, which
/// needs a new subject with fresh task ids). `new_subject` forces a new
/// one. `None`: mint.
pub(crate) fn reusable(
    j: Option<&Connection>,
    tx: &Connection,
    ch: &Change,
    revision: &Sha256Hex,
    now_ms: i64,
    new_subject: bool,
) -> Result<Option<StoredSubject>> {
    if new_subject || ch.version == 0 {
        return Ok(None);
    }
    let s = current_subject(tx, ch)?;
    if s.context.revision != *revision || subject_staleness(tx, &s)?.is_some() {
        return Ok(None);
    }
    let evals = super::evaluate::evaluate(j, tx, &s, now_ms)?;
    let required: Vec<_> = evals.iter().filter(|e| e.task.required).collect();
    let finished = required
        .iter()
        .all(|e| matches!(e.state, "succeeded" | "failed"));
    let failed = required.iter().any(|e| e.state == "failed");
    Ok((!(finished && failed)).then_some(s))
}

/// The output of a checkpoint that returned the current subject.
pub(crate) fn reused_output(
    tx: &Connection,
    s: &StoredSubject,
    files: usize,
    hashed: u64,
) -> Result<CheckpointOutput> {
    let changes = stored_protected(tx, &s.change.change_id, s.version)?;
    Ok(CheckpointOutput {
        change_id: s.change.change_id.clone(),
        version: s.version,
        revision: s.context.revision.to_string(),
        context_digest: s.context_digest.to_string(),
        files,
        hashed,
        base_revision: s.context.base_revision.to_string(),
        protected_changes_total: changes.total,
        protected_changes: changes.paths,
        tasks: s.tasks.iter().map(summary).collect::<Result<_>>()?,
        reused: true,
    })
}
