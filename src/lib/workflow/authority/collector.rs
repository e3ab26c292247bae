//! The authority's half of operator-enrolled collectors: immutable
//! collector profiles, the authority-derived descriptor of a claimed
//! execution, `collector-claim`, and the import of signed transfers (see
//! `docs/transfer.md`).

use super::admin::{self, Authenticated};
use super::change;
use super::schema::AuthorityWork;
use super::{bump_epoch, installed_requirement};
use crate::clock::{Clock, unix_millis};
use crate::collector::runtime::{self, RuntimeIdentity, RuntimeKind};
use crate::collector::transfer::{
    self, CollectorDescriptor, CollectorProfile, ExecutionRecord, ExecutionRequest,
    ExecutionStatus, Limits, Origin, RegistrationBinding,
};
use crate::contract::workflow::Workflow;
use crate::contract::{ActionClass, SCHEMA_VERSION, TaskClaimRequest, canonical_bytes};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, TransactionBehavior, Work, params};
use crate::wire::digest::Sha256Hex;
use crate::workflow::journal::JournalWork;
use crate::workflow::journal::{self, Now};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::Path;

/// Cap on each output stream of a collected command.
pub const MAX_OUTPUT_BYTES: u64 = 64 * 1024 * 1024;
/// Tail kept of each stream.
pub const TAIL_BYTES: u64 = 4096;
/// Largest pinned-runtime file.
pub const MAX_PIN_FILE: u64 = 64 * 1024;

/// A pinned runtime identity read from a file (`profile install --file`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedRuntime {
    /// `pinned_file`, or `fixture` (test builds only).
    pub basis: String,
    /// The identity (as `runtime probe` prints it).
    pub identity: RuntimeIdentity,
}

/// `profile install` request.
#[derive(Debug, Clone)]
pub struct ProfileInstallRequest {
    /// Registration.
    pub registration_id: String,
    /// Step.
    pub step_id: String,
    /// Runtime.
    pub runtime: RuntimeKind,
    /// A pinned identity instead of probing now.
    pub pinned: Option<PinnedRuntime>,
    /// The digest-pinned image (`NAME@sha256:<64 hex>`): required for
    /// `oci`, refused for the other runtimes.
    pub oci_image: Option<String>,
    /// The sandbox limits a probed `bwrap` identity pins (a pinned file
    /// carries its own).
    pub limits: runtime::LimitRequest,
}

/// `profile install` output.
#[derive(Debug, Serialize)]
pub struct ProfileInstallOutput {
    /// The profile.
    pub profile: CollectorProfile,
    /// Its digest.
    pub profile_digest: Sha256Hex,
    /// False when this exact profile was already installed.
    pub created: bool,
    /// Policy epoch after the act.
    pub policy_epoch: u64,
    /// Live subjects (current before the act) the act made stale.
    pub stale_subjects: u64,
}

fn profile_err(msg: impl Into<String>) -> Error {
    Error::new(Code::ProfileInvalid, msg)
}

/// What a profile install pins to: the registration (current epoch,
/// not revoked, scoped to `step_id`), the installed requirement's digest
/// and the step as that requirement declares it.
pub(crate) fn registered_step(
    tx: &Connection,
    registration_id: &str,
    step_id: &str,
) -> Result<(
    crate::contract::ExecutorEnrollment,
    String,
    crate::contract::workflow::Step,
)> {
    let (reg, revoked) = admin::registration(tx, registration_id)?
        .ok_or_else(|| Error::new(Code::NotFound, format!("no registration {registration_id}")))?;
    if revoked || current_epoch(tx, &reg)? != reg.epoch {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the registration is revoked or not the current epoch",
        ));
    }
    if reg.step_id != step_id {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the registration is not scoped to this step",
        ));
    }
    let (rd, bytes) = installed_requirement(tx, &reg.repository, &reg.profile)?
        .ok_or_else(|| Error::new(Code::NotFound, "no requirement installed"))?;
    let step = Workflow::parse(&bytes)?
        .step(step_id)
        .cloned()
        .ok_or_else(|| Error::new(Code::NotFound, "the requirement has no such step"))?;
    Ok((reg, rd, step))
}

/// The current (highest) epoch of a registration's executor scope.
pub(crate) fn current_epoch(
    a: &Connection,
    reg: &crate::contract::ExecutorEnrollment,
) -> Result<u64> {
    let e: i64 = a.prepare_cached("SELECT max(epoch) FROM registrations WHERE repo_id = ?1 AND profile_id = ?2 AND step_id = ?3 AND executor_id = ?4")?.query_row(params![reg.repository, reg.profile, reg.step_id, reg.executor_id],
        |r| r.get(0),
    )?;
    Ok(e as u64)
}

/// Installs an immutable collector profile for one exact current
/// registration epoch, repository, workflow profile and step.
pub fn profile_install(
    req: &ProfileInstallRequest,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<ProfileInstallOutput>> {
    runtime::check_image_flag(req.runtime, req.oci_image.as_deref())?;
    if req.runtime == RuntimeKind::Unshare {
        return Err(runtime::not_isolating(req.runtime));
    }
    let (identity, basis) = match &req.pinned {
        Some(p) => {
            if p.identity.computed_digest()? != p.identity.digest {
                return Err(profile_err(
                    "the pinned runtime identity does not match its digest",
                ));
            }
            if p.basis != "pinned_file" && p.basis != "fixture" {
                return Err(profile_err("basis must be pinned_file or fixture"));
            }
            (p.identity.clone(), p.basis.clone())
        }
        None => {
            let limits = match req.runtime {
                RuntimeKind::Bwrap => Some(req.limits.resolve()?),
                _ => None,
            };
            let launcher = std::env::current_exe()
                .map_err(|e| Error::new(Code::Io, format!("cannot locate agent-task: {e}")))?;
            let plan = runtime::Plan {
                oci_image: req.oci_image.as_deref(),
                limits: limits.as_ref(),
                launcher: &launcher,
            };
            (runtime::probe(req.runtime, &plan)?, "observed".to_owned())
        }
    };
    // Whatever its source, the identity must keep candidate code in, and
    // its limits must be ones this collector can apply.
    identity.check_isolating()?;
    if let Some(l) = &identity.limits {
        l.check_applicable()?;
    }
    if identity.runtime != req.runtime {
        return Err(profile_err(
            "the pinned identity is for another runtime kind",
        ));
    }
    if identity.image.as_ref().map(|i| i.reference.as_str()) != req.oci_image.as_deref() {
        return Err(profile_err(
            "the runtime identity's image is not the --oci-image the profile pins",
        ));
    }
    Ok(move |tx: &Connection, _dir: &DataDir, now: &str| {
        let (reg, rd, step) = registered_step(tx, &req.registration_id, &req.step_id)?;
        let recipe = match (step.action_class, &step.recipe) {
            (ActionClass::Command, Some(r)) => r.clone(),
            _ => return Err(profile_err("collector profiles pin command steps only")),
        };
        if recipe.network {
            return Err(profile_err(
                "the recipe asks for network; collector runtimes have none and there is no fallback",
            ));
        }
        let mut profile = CollectorProfile {
            version: 1,
            profile_id: String::new(),
            repository: reg.repository.clone(),
            profile: reg.profile.clone(),
            step_id: reg.step_id.clone(),
            registration: RegistrationBinding {
                registration_id: reg.registration_id.clone(),
                executor_id: reg.executor_id.clone(),
                epoch: reg.epoch,
                key_id: reg.verification_key_id.clone(),
            },
            requirement_digest: Sha256Hex::parse(&rd)?,
            limits: Limits {
                timeout_ms: recipe.timeout_ms,
                max_output_bytes: MAX_OUTPUT_BYTES,
                tail_bytes: TAIL_BYTES,
                sandbox: identity.limits.clone(),
            },
            recipe,
            runtime: req.runtime,
            runtime_identity_digest: identity.digest.clone(),
            oci_image: req.oci_image.clone(),
            basis,
        };
        profile.check_basis()?;
        let digest = profile.digest()?;
        profile.profile_id = format!("cp_{}", &digest.as_str()[..32]);
        let existing: Option<String> = tx
            .prepare_cached("SELECT profile_digest FROM collector_profiles WHERE registration_id = ?1 AND step_id = ?2")?.query_row(params![reg.registration_id, reg.step_id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(d) = existing {
            if d == digest.as_str() {
                return Ok(ProfileInstallOutput {
                    profile,
                    profile_digest: digest,
                    created: false,
                    policy_epoch: super::policy_epoch(tx)?,
                    stale_subjects: 0,
                });
            }
            return Err(Error::new(
                Code::Conflict,
                "profiles are immutable: this registration already has another profile (re-enroll for a new epoch)",
            ));
        }
        let (pe, stale_subjects) = bump_epoch(tx, "profile_install", &profile.profile_id, now)?;
        tx.prepare_cached("INSERT INTO collector_profiles(profile_id, profile_digest, registration_id, repo_id, profile_name, step_id, profile_json, policy_epoch, installed_at) \
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)")?.execute(params![profile.profile_id, digest.as_str(), reg.registration_id, reg.repository, reg.profile, reg.step_id, canonical_bytes(&profile)?, pe as i64, now],
        )?;
        Ok(ProfileInstallOutput {
            profile,
            profile_digest: digest,
            created: true,
            policy_epoch: pe,
            stale_subjects,
        })
    })
}

/// The profile installed for a registration and step.
pub fn profile_for(
    a: &Connection,
    registration_id: &str,
    step_id: &str,
) -> Result<Option<CollectorProfile>> {
    let row: Option<(String, Vec<u8>)> = a
        .prepare_cached("SELECT profile_digest, profile_json FROM collector_profiles WHERE registration_id = ?1 AND step_id = ?2")?.query_row(params![registration_id, step_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let Some((d, bytes)) = row else {
        return Ok(None);
    };
    let p: CollectorProfile = serde_json::from_slice(&bytes)?;
    if p.digest()?.as_str() != d {
        return Err(Error::new(
            Code::IntegrityError,
            "stored profile does not match its digest",
        ));
    }
    Ok(Some(p))
}

/// The profile of the current, unrevoked registration for a step (highest epoch).
pub fn current_profile(
    a: &Connection,
    repo: &str,
    profile: &str,
    step: &str,
) -> Result<Option<CollectorProfile>> {
    let reg: Option<String> = a
        .prepare_cached("SELECT p.registration_id FROM collector_profiles p JOIN registrations g USING (registration_id) \
             LEFT JOIN revocations v USING (registration_id) \
             WHERE p.repo_id = ?1 AND p.profile_name = ?2 AND p.step_id = ?3 AND v.registration_id IS NULL \
             ORDER BY g.epoch DESC LIMIT 1")?.query_row(params![repo, profile, step],
            |r| r.get(0),
        )
        .optional()?;
    match reg {
        Some(r) => profile_for(a, &r, step),
        None => Ok(None),
    }
}

/// The authority's audience id (the data directory id).
pub fn audience(a: &Connection) -> Result<String> {
    a.prepare_cached("SELECT value FROM meta WHERE key = 'data_dir_id'")?
        .query_row([], |r| r.get(0))
        .map_err(Error::from)
}

/// The live grant generation of an actor (`None` when revoked or unknown).
pub fn live_grant(a: &Connection, owner: &str, agent: &str) -> Result<Option<u64>> {
    Ok(a.prepare_cached("SELECT grant_generation FROM actors WHERE owner_id = ?1 AND agent_id = ?2 AND revoked_at IS NULL AND token_hash IS NOT NULL")?.query_row(params![owner, agent],
        |r| r.get::<_, i64>(0),
    )
    .optional()?
    .map(|g| g as u64))
}

fn mismatch(msg: impl Into<String>) -> Error {
    Error::new(Code::DescriptorMismatch, msg)
}

/// Derives the descriptor of a claimed collector attempt from the
/// authority and journal alone.
pub fn derive_descriptor(
    j: &Connection,
    a: &Connection,
    attempt_id: &str,
) -> Result<CollectorDescriptor> {
    derive_descriptor_in(j, &super::Rechecks::new(a), attempt_id)
}

/// [`derive_descriptor`] with the request's task lookups (`r`): a task
/// the request has looked up already is not looked up again.
pub fn derive_descriptor_in(
    j: &Connection,
    r: &super::Rechecks<'_>,
    attempt_id: &str,
) -> Result<CollectorDescriptor> {
    let a = r.conn();
    let row = journal::attempt(j, attempt_id)?
        .ok_or_else(|| Error::new(Code::NotFound, format!("no attempt {attempt_id}")))?;
    let at = &row.attempt;
    let reg_id = at
        .executor
        .as_deref()
        .ok_or_else(|| mismatch("the attempt was not claimed for a collector"))?;
    let (t, s) = r.task(&at.task_id)?;
    if t.action_class != ActionClass::Command {
        return Err(mismatch(
            "collector descriptors exist for command tasks only",
        ));
    }
    let (reg, _) = admin::registration(a, reg_id)?
        .ok_or_else(|| Error::new(Code::EnrollmentInvalid, "unknown registration"))?;
    let p = profile_for(a, reg_id, &t.subject.step_id)?
        .ok_or_else(|| profile_err("no collector profile for the attempt's registration"))?;
    let manifest: String = a
        .prepare_cached("SELECT manifest_sha256 FROM revisions WHERE revision = ?1")?
        .query_row(params![t.subject.revision.as_str()], |r| r.get(0))?;
    let grant: i64 = a
        .prepare_cached(
            "SELECT grant_generation FROM actors WHERE owner_id = ?1 AND agent_id = ?2",
        )?
        .query_row(params![at.agent.owner_id, at.agent.agent_id], |r| r.get(0))
        .optional()?
        .unwrap_or(0);
    Ok(CollectorDescriptor {
        version: 1,
        audience: audience(a)?,
        repository: t.subject.repository.clone(),
        profile: t.subject.profile.clone(),
        step_id: t.subject.step_id.clone(),
        change_id: s.change.change_id.clone(),
        change_version: t.subject.change_version,
        revision: t.subject.revision.clone(),
        manifest_sha256: Sha256Hex::parse(&manifest)?,
        task_id: t.task_id.clone(),
        task_digest: t.digest()?,
        attempt_id: at.attempt_id.clone(),
        attempt_digest: row.digest.clone(),
        execution_operation_id: at.execution_operation_id.clone(),
        fence: at.fence,
        origin: Origin {
            owner_id: at.agent.owner_id.clone(),
            agent_id: at.agent.agent_id.clone(),
            grant_generation: grant as u64,
        },
        registration: RegistrationBinding {
            registration_id: reg.registration_id.clone(),
            executor_id: reg.executor_id.clone(),
            epoch: reg.epoch,
            key_id: reg.verification_key_id.clone(),
        },
        collector_profile_id: p.profile_id.clone(),
        collector_profile_digest: p.digest()?,
        recipe: p.recipe.clone(),
        runtime: p.runtime,
        runtime_identity_digest: p.runtime_identity_digest.clone(),
        oci_image: p.oci_image.clone(),
        limits: p.limits.clone(),
    })
}

/// Every live check on a descriptor's registration, profile, origin and
/// subject (not the attempt state).
pub fn check_live(a: &Connection, d: &CollectorDescriptor) -> Result<()> {
    let (reg, revoked) = admin::registration(a, &d.registration.registration_id)?
        .ok_or_else(|| Error::new(Code::EnrollmentInvalid, "unknown registration"))?;
    if revoked {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the registration is revoked",
        ));
    }
    if current_epoch(a, &reg)? != reg.epoch
        || reg.epoch != d.registration.epoch
        || reg.verification_key_id != d.registration.key_id
    {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the registration is not the current epoch and key",
        ));
    }
    let p = profile_for(a, &reg.registration_id, &d.step_id)?
        .ok_or_else(|| profile_err("the collector profile is gone"))?;
    p.check_basis()?;
    if p.digest()? != d.collector_profile_digest || p.profile_id != d.collector_profile_id {
        return Err(profile_err("the collector profile changed"));
    }
    if live_grant(a, &d.origin.owner_id, &d.origin.agent_id)? != Some(d.origin.grant_generation) {
        return Err(Error::new(
            Code::AuthorizationChanged,
            "the originating actor's grant is revoked or was reissued",
        ));
    }
    let (t, _) = change::find_task(a, &d.task_id)?;
    if let Some(r) = change::staleness(a, &t)? {
        return Err(Error::new(
            Code::SubjectStale,
            format!("the task's subject is no longer current ({r})"),
        )
        .with("reason", r)
        .with("next", json!({"operation": "checkpoint"})));
    }
    Ok(())
}

/// Checks that an attempt is still open at its fence.
fn check_attempt_open(j: &Connection, d: &CollectorDescriptor, now_ms: i64) -> Result<()> {
    check_open(j, &d.attempt_id, &d.task_id, d.fence, now_ms)
}

/// Checks that an attempt (of any collector kind) is still open at `fence`.
pub(crate) fn check_open(
    j: &Connection,
    attempt_id: &str,
    task_id: &str,
    fence: u64,
    now_ms: i64,
) -> Result<()> {
    let row = journal::attempt(j, attempt_id)?
        .ok_or_else(|| Error::new(Code::NotFound, "no such attempt"))?;
    let (last, _) = journal::task_row(j, task_id)?
        .ok_or_else(|| Error::new(Code::NotFound, "no such task in the journal"))?;
    if row.stored_state == "replaced" || last != fence || row.attempt.fence != fence {
        return Err(Error::new(
            Code::StaleFence,
            "the fence is not the attempt's current fence",
        )
        .with("fence", fence));
    }
    match row.state(now_ms) {
        journal::AttemptState::Leased | journal::AttemptState::Expired => Ok(()),
        s => Err(Error::new(
            Code::AttemptClosed,
            format!("the attempt is {}", s.as_str()),
        )
        .with("state", s.as_str())),
    }
}

/// `collector-claim`: claims a command task for the current collector
/// profile's registration and returns the authority-derived descriptor.
pub fn collector_claim<'a>(
    task_id: &'a str,
    request_id: &'a str,
    scope: Option<&'a change::Scope>,
) -> impl FnOnce(&Connection, &Connection, &Authenticated, Now) -> Result<Value> + 'a {
    move |j, a, who, now| {
        // The request's one lookup of its task (checked against the scope).
        let rechecks = super::Rechecks::scoped(a, scope);
        let (t, s) = rechecks.task(task_id)?;
        if t.action_class != ActionClass::Command && t.action_class != ActionClass::Review {
            return Err(Error::new(
                Code::InvalidInput,
                "collector-claim is for command and review steps",
            ));
        }
        // Before any attempt exists: a revision that changes a protected
        // path is never collected (its tests are not the operator's).
        let protected =
            change::stored_protected(a, &t.subject.change_id, t.subject.change_version)?;
        if !protected.is_empty() {
            return Err(protected.error("collector-claim refused"));
        }
        if t.action_class == ActionClass::Review {
            return super::review::claim(j, &rechecks, who, now, (t, s), request_id);
        }
        let p = current_profile(
            a,
            &t.subject.repository,
            &t.subject.profile,
            &t.subject.step_id,
        )?
        .ok_or_else(|| profile_err("no collector profile is installed for this step"))?;
        p.check_basis()?;
        let lease = (p.recipe.timeout_ms + 120_000).min(crate::contract::MAX_LEASE_MS);
        let req = TaskClaimRequest {
            version: SCHEMA_VERSION,
            request_id: request_id.into(),
            task_id: task_id.into(),
            task_digest: t.digest()?,
            requested_lease_ms: lease,
            executor: Some(p.registration.registration_id.clone()),
        };
        // The task as looked up above: the claim does not look it up again.
        let visible = change::may_view(&s.change, &who.actor);
        let found = (t, visible, s.tasks);
        let mut out = journal::claim(j, &rechecks, &who.actor, &req, Some(found), now)?;
        let attempt_id = out["attempt"]["attempt_id"]
            .as_str()
            .ok_or_else(|| Error::internal("claim output lacks the attempt id"))?
            .to_owned();
        let d = derive_descriptor_in(j, &rechecks, &attempt_id)?;
        out["descriptor"] = serde_json::to_value(&d)?;
        out["descriptor_digest"] = json!(transfer::descriptor_digest(&d)?);
        Ok(out)
    }
}

/// Rechecks a descriptor before dispatch: it must equal what the
/// authority derives now, the attempt must be open at its fence and every
/// live check must pass. Read-only.
pub fn recheck_descriptor(
    root: &Path,
    clock: &dyn Clock,
    token: &str,
    d: &CollectorDescriptor,
) -> Result<()> {
    let (dir, mut ac) = admin::open_read(root)?;
    let at = ac.transaction_with_behavior(TransactionBehavior::Deferred)?;
    let who = admin::authenticate(&at, token)?;
    check_origin(&who, &d.origin)?;
    let j = dir
        .open_read_cached(&journal::SPEC)?
        .ok_or_else(|| Error::new(Code::NotFound, "no journal: nothing was claimed"))?;
    let derived = derive_descriptor(&j, &at, &d.attempt_id)?;
    if &derived != d {
        return Err(mismatch(
            "the descriptor does not match what the authority derives now",
        ));
    }
    check_attempt_open(&j, d, unix_millis(clock.now()))?;
    check_live(&at, d)
}

pub(crate) fn check_origin(who: &Authenticated, o: &Origin) -> Result<()> {
    if who.actor.owner_id != o.owner_id
        || who.actor.agent_id != o.agent_id
        || who.grant_generation != o.grant_generation
    {
        return Err(Error::new(
            Code::AuthorizationChanged,
            "the caller is not the originating actor at its grant generation",
        ));
    }
    Ok(())
}

/// A retained imported transfer row.
#[derive(Debug, Clone, Serialize)]
pub struct ImportedRow {
    /// Execution operation.
    pub execution_operation_id: String,
    /// SHA-256 of the envelope.
    pub transfer_digest: String,
    /// Size.
    pub size: u64,
    /// Task.
    pub task_id: String,
    /// Attempt.
    pub attempt_id: String,
    /// Outcome.
    pub outcome: String,
    /// Record status.
    pub status: String,
}

/// The imported transfer of an attempt.
pub fn imported_for_attempt(a: &Connection, attempt_id: &str) -> Result<Option<ImportedRow>> {
    imported_where(a, "attempt_id", attempt_id)
}

fn imported_where(a: &Connection, col: &str, v: &str) -> Result<Option<ImportedRow>> {
    let sql = format!(
        "SELECT execution_operation_id, transfer_digest, size, task_id, attempt_id, outcome, status FROM imported_transfers WHERE {col} = ?1"
    );
    // Cached: asked on hot paths (every qualification's evidence lookup,
    // prevalidation, the import).
    Ok(a.prepare_cached(&sql)?
        .query_row(params![v], |r| {
            Ok(ImportedRow {
                execution_operation_id: r.get(0)?,
                transfer_digest: r.get(1)?,
                size: r.get::<_, i64>(2)? as u64,
                task_id: r.get(3)?,
                attempt_id: r.get(4)?,
                outcome: r.get(5)?,
                status: r.get(6)?,
            })
        })
        .optional()?)
}

/// A fully validated transfer.
pub struct Validated {
    /// The envelope.
    pub envelope: transfer::Envelope,
    /// The execution record.
    pub record: ExecutionRecord,
    /// The descriptor the authority derives for it.
    pub descriptor: CollectorDescriptor,
}

fn tinv(msg: impl Into<String>) -> Error {
    Error::new(Code::TransferInvalid, msg)
}

/// What a transfer header must bind: the fields of the descriptor the
/// authority derives for the attempt that every transfer kind shares.
pub(crate) struct Binding<'a> {
    pub repository: &'a str,
    pub profile: &'a str,
    pub step_id: &'a str,
    pub task_id: &'a str,
    pub task_digest: &'a Sha256Hex,
    pub attempt_digest: &'a Sha256Hex,
    pub execution_operation_id: &'a str,
    pub fence: u64,
    pub origin: &'a Origin,
    pub registration: &'a RegistrationBinding,
    pub profile_id: &'a str,
    pub profile_digest: &'a Sha256Hex,
}

impl<'a> Binding<'a> {
    /// What a command transfer's header must bind: its descriptor's fields.
    pub(crate) fn command(d: &'a CollectorDescriptor) -> Binding<'a> {
        Binding {
            repository: &d.repository,
            profile: &d.profile,
            step_id: &d.step_id,
            task_id: &d.task_id,
            task_digest: &d.task_digest,
            attempt_digest: &d.attempt_digest,
            execution_operation_id: &d.execution_operation_id,
            fence: d.fence,
            origin: &d.origin,
            registration: &d.registration,
            profile_id: &d.collector_profile_id,
            profile_digest: &d.collector_profile_digest,
        }
    }

    /// What a review transfer's header must bind: its descriptor's fields.
    pub(crate) fn review(d: &'a crate::collector::review::wire::ReviewDescriptor) -> Binding<'a> {
        Binding {
            repository: &d.repository,
            profile: &d.profile,
            step_id: &d.step_id,
            task_id: &d.task_id,
            task_digest: &d.task_digest,
            attempt_digest: &d.attempt_digest,
            execution_operation_id: &d.execution_operation_id,
            fence: d.fence,
            origin: &d.origin,
            registration: &d.registration,
            profile_id: &d.review_profile_id,
            profile_digest: &d.review_profile_digest,
        }
    }

    /// Refuses a header naming another profile (`profile_kind`, e.g.
    /// "review profile") or not binding exactly this task, attempt, origin
    /// and registration.
    pub(crate) fn check(&self, h: &transfer::TransferHeader, profile_kind: &str) -> Result<()> {
        if h.collector_profile_id != self.profile_id
            || &h.collector_profile_digest != self.profile_digest
        {
            return Err(profile_err(format!(
                "the transfer names another {profile_kind}"
            )));
        }
        if h.repository != self.repository
            || h.profile != self.profile
            || h.step_id != self.step_id
            || h.task_id != self.task_id
            || &h.task_digest != self.task_digest
            || &h.attempt_digest != self.attempt_digest
            || h.execution_operation_id != self.execution_operation_id
            || h.fence != self.fence
            || &h.origin != self.origin
            || &h.registration != self.registration
        {
            return Err(tinv(
                "the header does not bind this exact task, attempt, origin and registration",
            ));
        }
        Ok(())
    }
}

/// Opens transfer bytes of `kind` and checks what every kind shares: the
/// audience, the registration (known, not revoked, its epoch, key and
/// executor current), the signature under its key, and the attempt's
/// current fence. Returns the envelope and the registration.
pub(crate) fn open_verified(
    j: &Connection,
    a: &Connection,
    bytes: &[u8],
    kind: &str,
) -> Result<(transfer::Envelope, crate::contract::ExecutorEnrollment)> {
    let env = transfer::open(bytes)?;
    let h = &env.header;
    if h.kind != kind {
        return Err(tinv(format!("not a {kind} transfer")));
    }
    if h.audience != audience(a)? {
        return Err(tinv("the transfer is for another authority"));
    }
    let (reg, revoked) = admin::registration(a, &h.registration.registration_id)?
        .ok_or_else(|| Error::new(Code::EnrollmentInvalid, "unknown registration"))?;
    if revoked {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the registration is revoked",
        ));
    }
    if reg.epoch != h.registration.epoch
        || reg.verification_key_id != h.registration.key_id
        || reg.executor_id != h.registration.executor_id
        || current_epoch(a, &reg)? != reg.epoch
    {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the transfer's registration epoch or key is not current",
        ));
    }
    let pk = crate::wire::ed25519::parse_public_key_hex(&reg.public_key)?;
    transfer::verify_signature(bytes, &env, &pk)?;
    let row = journal::attempt(j, &h.attempt_id)?
        .ok_or_else(|| Error::new(Code::NotFound, "no such attempt"))?;
    if row.stored_state == "replaced" || row.attempt.fence != h.fence {
        return Err(Error::new(
            Code::StaleFence,
            "the transfer's fence is not the attempt's current fence",
        )
        .with("fence", h.fence));
    }
    Ok((env, reg))
}

/// Validates transfer bytes against the authority: signature under the
/// current registration, every header binding, the regenerated request
/// and the record's outcome, identity and cleanup rules. Attempt state is
/// checked by the caller (import needs it open; finalize needs it done).
pub fn validate_transfer(j: &Connection, a: &Connection, bytes: &[u8]) -> Result<Validated> {
    let (env, reg) = open_verified(j, a, bytes, "command")?;
    let h = &env.header;
    let d = derive_descriptor(j, a, &h.attempt_id)?;
    let p = profile_for(a, &reg.registration_id, &h.step_id)?
        .ok_or_else(|| profile_err("no collector profile for this registration and step"))?;
    p.check_basis()?;
    Binding::command(&d).check(h, "collector profile")?;
    let request = ExecutionRequest::from_descriptor(&d);
    if request.bytes()? != env.records[0] {
        return Err(tinv(
            "the execution request is not the one the authority regenerates",
        ));
    }
    if h.request_digest != request.digest()? {
        return Err(tinv("the header's request digest is wrong"));
    }
    let record: ExecutionRecord = crate::wire::json::decode(
        &env.records[1],
        crate::wire::json::Limits::bytes(crate::collector::transfer::MAX_TRANSFER_BYTES as usize),
        Code::TransferInvalid,
        "execution record",
    )?;
    if canonical_bytes(&record)? != env.records[1] {
        return Err(tinv("the execution record is not canonical"));
    }
    if record.version != 1 || record.request_digest != h.request_digest {
        return Err(tinv("the record does not answer this request"));
    }
    if let Some(id) = &record.runtime_identity
        && (id.computed_digest()? != id.digest || id.runtime != p.runtime)
    {
        return Err(tinv("the record's runtime identity is inconsistent"));
    }
    if h.collector_identity.runtime != p.runtime.as_str()
        || h.collector_identity.runtime_identity_digest
            != record.runtime_identity.as_ref().map(|i| i.digest.clone())
    {
        return Err(tinv(
            "the header's collector identity does not match the record",
        ));
    }
    match record.status {
        ExecutionStatus::Completed => {
            if record.run.is_none()
                || record.runtime_identity.as_ref().map(|i| &i.digest)
                    != Some(&p.runtime_identity_digest)
            {
                return Err(tinv(
                    "a completed record must carry the run under the pinned runtime identity",
                ));
            }
        }
        _ => {
            if record.run.is_some() {
                return Err(tinv("only a completed record carries a run"));
            }
        }
    }
    if record.derived_outcome(&p.runtime_identity_digest) != record.outcome {
        return Err(tinv("the record's outcome is not the one its facts derive"));
    }
    Ok(Validated {
        envelope: env,
        record,
        descriptor: d,
    })
}

/// A transfer [`prevalidate`] found valid on a read snapshot, its bytes
/// stored in the CAS: what the import retains of its record.
#[derive(Debug)]
pub struct Prevalidated {
    outcome: Value,
    status: Value,
}

/// The checks of [`import_in`] that need no lock, on a read snapshot
/// (run before the unit of work; under `serve`, before the writer):
/// `Ok(Some(_))` when the transfer is valid (signature, bindings, the
/// regenerated request, the record; a review's replay) and its bytes are
/// now in the CAS, `Ok(None)` when the unit of work must decide (a retry
/// of a retained transfer, or no journal yet), else the refusal.
pub fn prevalidate(
    root: &Path,
    token: &str,
    now_ms: i64,
    bytes: &[u8],
    env: &transfer::Envelope,
    digest: &Sha256Hex,
) -> Result<Option<Prevalidated>> {
    let (dir, at) = admin::open_read(root)?;
    let Some(jt) = dir.open_read_cached(&journal::SPEC)? else {
        return Ok(None);
    };
    // The same checks in the same order as `import_in`, so a refusal is
    // the same typed error either way.
    let who = admin::authenticate(&at, token)?;
    if who.actor.owner_id != env.header.origin.owner_id {
        return Err(Error::new(
            Code::Forbidden,
            "the transfer belongs to another owner",
        ));
    }
    let h = &env.header;
    if imported_where(&at, "execution_operation_id", &h.execution_operation_id)?.is_some() {
        return Ok(None);
    }
    check_origin(&who, &h.origin)?;
    let pre = if h.kind == super::review::KIND {
        // A review is validated by replaying its trace.
        let v = super::review::validate_transfer(&jt, &at, &dir, bytes)?;
        let d = &v.descriptor;
        check_open(&jt, &d.attempt_id, &d.task_id, d.fence, now_ms)?;
        super::review::check_live(&at, d)?;
        Prevalidated {
            outcome: serde_json::to_value(v.record.outcome)?,
            status: match v.record.failure {
                Some(f) => serde_json::to_value(f)?,
                None => json!("completed"),
            },
        }
    } else {
        let v = validate_transfer(&jt, &at, bytes)?;
        check_attempt_open(&jt, &v.descriptor, now_ms)?;
        check_live(&at, &v.descriptor)?;
        Prevalidated {
            outcome: serde_json::to_value(v.record.outcome)?,
            status: serde_json::to_value(v.record.status)?,
        }
    };
    let put = dir.cas().put_bytes(bytes)?;
    if put.digest != *digest {
        return Err(Error::internal(
            "CAS digest differs from the transfer digest",
        ));
    }
    Ok(Some(pre))
}

/// What can change between [`prevalidate`]'s snapshot and the unit of
/// work, checked again under the lock (the signature, the record and a
/// review's replay are facts of the bytes and are not repeated): the
/// attempt's descriptor as the authority derives it now still binds the
/// header and regenerates its request digest (a profile reinstalled, a
/// new registration epoch), the attempt is still open at the header's
/// fence, and the registration, profile, grant and subject are still live
/// (a registration revoked in between refuses the import). Returns the
/// Change and version the import is retained under.
fn recheck_prevalidated(
    jt: &Connection,
    at: &Connection,
    h: &transfer::TransferHeader,
    now_ms: i64,
) -> Result<(String, u64)> {
    if h.kind == super::review::KIND {
        let (d, p) = super::review::derive_descriptor(jt, at, &h.attempt_id)?;
        Binding::review(&d).check(h, "review profile")?;
        if h.request_digest != d.request(&p)?.digest()? {
            return Err(tinv("the header's request digest is wrong"));
        }
        check_open(jt, &d.attempt_id, &d.task_id, d.fence, now_ms)?;
        super::review::check_live(at, &d)?;
        return Ok((d.change_id.clone(), d.change_version));
    }
    let d = derive_descriptor(jt, at, &h.attempt_id)?;
    Binding::command(&d).check(h, "collector profile")?;
    if h.request_digest != ExecutionRequest::from_descriptor(&d).digest()? {
        return Err(tinv("the header's request digest is wrong"));
    }
    check_attempt_open(jt, &d, now_ms)?;
    check_live(at, &d)?;
    Ok((d.change_id.clone(), d.change_version))
}

/// Imports a signed transfer under the data-directory lock (inside the
/// caller's session, `workflow::service::collect::import`): an exact
/// committed retry returns the historical view; changed bytes under the
/// same operation conflict; anything else is validated in full, its bytes
/// retained in the CAS and the attempt finished.
pub fn import_in(
    w: &Work<'_>,
    token: &str,
    bytes: &[u8],
    env: &transfer::Envelope,
    digest: Sha256Hex,
    pre: Option<Prevalidated>,
) -> Result<Value> {
    let (jt, at, dir) = (w.journal_write()?, w.authority()?, w.dir());
    let ts = w.now_text();
    let now = Now { ms: w.now_ms() };
    let who = admin::authenticate(at, token)?;
    if who.actor.owner_id != env.header.origin.owner_id {
        return Err(Error::new(
            Code::Forbidden,
            "the transfer belongs to another owner",
        ));
    }
    let h = &env.header;
    if let Some(prev) = imported_where(at, "execution_operation_id", &h.execution_operation_id)? {
        if prev.transfer_digest != digest.as_str() {
            return Err(Error::new(
                Code::Conflict,
                "other bytes were already imported under this execution operation",
            )
            .with("execution_operation_id", h.execution_operation_id.clone())
            .with("retained_transfer_digest", prev.transfer_digest));
        }
        // Repair a crash between the authority and journal commits.
        journal::repair_finished(jt, &prev.attempt_id, &ts)?;
        let applicable = if h.kind == super::review::KIND {
            super::review::derive_descriptor(jt, at, &prev.attempt_id)
                .and_then(|(d, _)| super::review::check_live(at, &d))
                .is_ok()
        } else {
            derive_descriptor(jt, at, &prev.attempt_id)
                .and_then(|d| check_live(at, &d))
                .is_ok()
        };
        return Ok(json!({
            "replay": true, "retained": true, "transfer_digest": digest,
            "execution_operation_id": prev.execution_operation_id, "task_id": prev.task_id,
            "attempt_id": prev.attempt_id, "outcome": prev.outcome, "status": prev.status,
            "applicability": {"currently_applicable": applicable},
        }));
    }
    check_origin(&who, &h.origin)?;
    let prestored = pre.is_some();
    // Prevalidated: only what can have changed since is checked again.
    // Otherwise each kind is validated in full by its own rules (a review
    // by replay); what is retained is the same either way.
    let (outcome, status, change_id, change_version) = if let Some(pre) = pre {
        let (change_id, version) = recheck_prevalidated(jt, at, h, now.ms)?;
        (pre.outcome, pre.status, change_id, version)
    } else if h.kind == super::review::KIND {
        let v = super::review::validate_transfer(jt, at, dir, bytes)?;
        let d = &v.descriptor;
        check_open(jt, &d.attempt_id, &d.task_id, d.fence, now.ms)?;
        super::review::check_live(at, d)?;
        let status = match v.record.failure {
            Some(f) => serde_json::to_value(f)?,
            None => json!("completed"),
        };
        (
            serde_json::to_value(v.record.outcome)?,
            status,
            d.change_id.clone(),
            d.change_version,
        )
    } else {
        let v = validate_transfer(jt, at, bytes)?;
        check_attempt_open(jt, &v.descriptor, now.ms)?;
        check_live(at, &v.descriptor)?;
        (
            serde_json::to_value(v.record.outcome)?,
            serde_json::to_value(v.record.status)?,
            v.descriptor.change_id.clone(),
            v.descriptor.change_version,
        )
    };
    if !prestored {
        let put = dir.cas().put_bytes(bytes)?;
        if put.digest != digest {
            return Err(Error::internal(
                "CAS digest differs from the transfer digest",
            ));
        }
    }
    let (outcome_s, status_s) = (
        outcome.as_str().unwrap_or_default().to_owned(),
        status.as_str().unwrap_or_default().to_owned(),
    );
    at.prepare_cached("INSERT INTO imported_transfers(execution_operation_id, transfer_digest, size, upload_request_id, task_id, attempt_id, fence, change_id, change_version, registration_id, profile_id, owner_id, agent_id, grant_generation, outcome, status, header_json, imported_at) \
         VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18)")?.execute(params![
            h.execution_operation_id, digest.as_str(), bytes.len() as i64, h.upload_request_id, h.task_id, h.attempt_id,
            h.fence as i64, change_id, change_version as i64, h.registration.registration_id,
            h.collector_profile_id, h.origin.owner_id, h.origin.agent_id, h.origin.grant_generation as i64,
            outcome_s, status_s, canonical_bytes(h)?, ts
        ],
    )?;
    journal::finish_attempt(jt, &h.attempt_id, &ts)?;
    crate::collector::crash_point("during_upload");
    let passed = outcome_s == "passed";
    Ok(json!({
        "replay": false, "retained": true, "transfer_digest": digest, "size": bytes.len(),
        "execution_operation_id": h.execution_operation_id, "task_id": h.task_id, "attempt_id": h.attempt_id,
        "fence": h.fence, "outcome": outcome, "status": status,
        "passing": false,
        "eligible_for_receipt": passed,
        "next": if passed { json!({"operation": "collector_finalize"}) } else { json!({"operation": "none"}) },
    }))
}
