//! What every kind of operator-enrolled collector shares on the
//! authority's side: the [`CollectorKind`] trait (the command kind in
//! `collector`, the review kind in `review`), the generic functions over
//! it (derive, the live checks, the claim, the recheck before dispatch)
//! and the helpers both kinds use (the registration and attempt
//! bindings, the audience, the live grant, the open attempt, the
//! verified envelope). Below both kinds: it names neither.

use super::auth::{self as admin, Authenticated};
use super::change;
use super::installed_requirement;
use crate::clock::{Clock, unix_millis};
use crate::collector::transfer::{self, Origin, RegistrationBinding};
use crate::collector::{AttemptBinding, BoundDescriptor};
use crate::contract::workflow::Workflow;
use crate::contract::{ActionClass, SCHEMA_VERSION, TaskClaimRequest};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, TransactionBehavior, params};
use crate::wire::digest::Sha256Hex;
use crate::workflow::journal::{self, Now};
use serde::Serialize;
use serde_json::Value;
use std::path::Path;

fn profile_err(msg: impl Into<String>) -> Error {
    Error::new(Code::ProfileInvalid, msg)
}

fn tinv(msg: impl Into<String>) -> Error {
    Error::new(Code::TransferInvalid, msg)
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

/// One kind of operator-enrolled collector as the authority sees it (the
/// command collector, `collector::Command`; the review collector,
/// `review::Review`): its profiles, the descriptor it derives, the
/// request a descriptor regenerates and the full validation of its
/// transfers. Everything else (the attempt binding, the live checks,
/// the claim, the recheck before dispatch, the import) is one generic
/// function over it.
pub(crate) trait CollectorKind {
    /// The installed profile.
    type Profile;
    /// The descriptor of a claimed attempt.
    type Descriptor: BoundDescriptor<Profile = Self::Profile> + PartialEq + Serialize;
    /// The action class of the steps this kind collects.
    const CLASS: ActionClass;
    /// What its profile is called in messages.
    const PROFILE: &'static str;
    /// The refusal of a descriptor for a task of another class.
    const WRONG_CLASS: &'static str;
    /// The profile installed for a registration and step.
    fn profile_for(
        a: &Connection,
        registration_id: &str,
        step_id: &str,
    ) -> Result<Option<Self::Profile>>;
    /// The profile of the current, unrevoked registration for a step.
    fn current_profile(
        a: &Connection,
        repo: &str,
        profile: &str,
        step: &str,
    ) -> Result<Option<Self::Profile>>;
    /// Refuses a profile whose basis this build does not accept.
    fn check_basis(p: &Self::Profile) -> Result<()>;
    /// The profile's id and digest.
    fn profile_ref(p: &Self::Profile) -> Result<(&str, Sha256Hex)>;
    /// The registration a profile pins.
    fn registration_id(p: &Self::Profile) -> &str;
    /// The lease a claim under profile `p` asks for.
    fn lease_ms(p: &Self::Profile) -> u64;
    /// The digest of the request a descriptor regenerates.
    fn request_digest(d: &Self::Descriptor, p: &Self::Profile) -> Result<Sha256Hex>;
    /// The digest of a descriptor (what a claim prints beside it).
    fn descriptor_digest(d: &Self::Descriptor) -> Result<Sha256Hex>;
    /// Validates transfer bytes of this kind in full (every check but the
    /// attempt's state and the live checks): what the import retains.
    fn validate(
        j: &Connection,
        a: &Connection,
        dir: &DataDir,
        bytes: &[u8],
    ) -> Result<Checked<Self::Descriptor>>;
}

/// What a fully validated transfer of any kind gives the import.
pub(crate) struct Checked<D> {
    /// The descriptor the authority derives for it.
    pub descriptor: D,
    /// The record's outcome.
    pub outcome: Value,
    /// The record's status (a command record's status; a review's
    /// failure, or `completed`).
    pub status: Value,
}

/// The attempt binding of a claimed collector attempt, built here alone
/// from the journal's attempt row, the stored task and subject, and the
/// registration: the subject's manifest, the origin's grant generation
/// (0 when the actor is gone) and the audience are read from `a`.
pub(crate) fn attempt_binding(
    a: &Connection,
    row: &journal::AttemptRow,
    t: &crate::contract::WorkflowTask,
    s: &change::StoredSubject,
    reg: &crate::contract::ExecutorEnrollment,
) -> Result<AttemptBinding> {
    let at = &row.attempt;
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
    Ok(AttemptBinding {
        audience: audience(a)?,
        repository: t.subject.repository.clone(),
        profile: t.subject.profile.clone(),
        step_id: t.subject.step_id.clone(),
        change_id: s.change.change_id.clone(),
        change_version: t.subject.change_version,
        revision: t.subject.revision.clone(),
        manifest_sha256: Sha256Hex::parse(&manifest)?,
        task_id: t.task_id.clone(),
        // A qualification has computed its subject's task digests already.
        task_digest: match s.kept_task_digest(t) {
            Some(d) => d,
            None => t.digest()?,
        },
        attempt_id: at.attempt_id.clone(),
        attempt_digest: row.digest.clone(),
        execution_operation_id: at.execution_operation_id.clone(),
        fence: at.fence,
        origin: Origin {
            owner_id: at.agent.owner_id.clone(),
            agent_id: at.agent.agent_id.clone(),
            grant_generation: grant as u64,
        },
        registration: registration_binding(reg),
    })
}

/// What a profile and a descriptor pin of a registration.
pub(crate) fn registration_binding(
    reg: &crate::contract::ExecutorEnrollment,
) -> RegistrationBinding {
    RegistrationBinding {
        registration_id: reg.registration_id.clone(),
        executor_id: reg.executor_id.clone(),
        epoch: reg.epoch,
        key_id: reg.verification_key_id.clone(),
    }
}

/// Derives the descriptor of a claimed attempt of kind `K` (and the
/// profile it names) from the authority and journal alone.
pub(crate) fn derive<K: CollectorKind>(
    j: &Connection,
    r: &super::Rechecks<'_>,
    attempt_id: &str,
) -> Result<(K::Descriptor, K::Profile)> {
    let a = r.conn();
    let row = journal::attempt(j, attempt_id)?
        .ok_or_else(|| Error::new(Code::NotFound, format!("no attempt {attempt_id}")))?;
    let reg_id = row
        .attempt
        .executor
        .as_deref()
        .ok_or_else(|| mismatch("the attempt was not claimed for a collector"))?;
    let found = r.task(&row.attempt.task_id)?;
    let (t, s) = (found.task(), found.subject());
    if t.action_class != K::CLASS {
        return Err(mismatch(K::WRONG_CLASS));
    }
    let (reg, _) = admin::registration(a, reg_id)?
        .ok_or_else(|| Error::new(Code::EnrollmentInvalid, "unknown registration"))?;
    let p = K::profile_for(a, reg_id, &t.subject.step_id)?
        .ok_or_else(|| profile_err(format!("no {} for the attempt's registration", K::PROFILE)))?;
    let b = attempt_binding(a, &row, t, s, &reg)?;
    Ok((K::Descriptor::from_binding(b, &p)?, p))
}

/// Every live check on a descriptor of kind `K`: its registration (known,
/// not revoked, the current epoch and key), its profile (still installed,
/// its basis accepted, unchanged), its origin's grant and its task's
/// subject (not the attempt state).
pub(crate) fn live<K: CollectorKind>(a: &Connection, d: &K::Descriptor) -> Result<()> {
    live_in::<K>(&super::Rechecks::new(a), d)
}

/// [`live`] with the request's task lookups (`r`): a task (or a subject,
/// [`super::Rechecks::knowing`]) already looked up is not loaded again.
pub(crate) fn live_in<K: CollectorKind>(r: &super::Rechecks<'_>, d: &K::Descriptor) -> Result<()> {
    let a = r.conn();
    let b = d.binding();
    let (reg, revoked) = admin::registration(a, &b.registration.registration_id)?
        .ok_or_else(|| Error::new(Code::EnrollmentInvalid, "unknown registration"))?;
    if revoked {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the registration is revoked",
        ));
    }
    if current_epoch(a, &reg)? != reg.epoch
        || reg.epoch != b.registration.epoch
        || reg.verification_key_id != b.registration.key_id
    {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the registration is not the current epoch and key",
        ));
    }
    let p = K::profile_for(a, &reg.registration_id, &b.step_id)?
        .ok_or_else(|| profile_err(format!("the {} is gone", K::PROFILE)))?;
    K::check_basis(&p)?;
    let (id, digest) = K::profile_ref(&p)?;
    let (d_id, d_digest) = d.profile_ref();
    if &digest != d_digest || id != d_id {
        return Err(profile_err(format!("the {} changed", K::PROFILE)));
    }
    if live_grant(a, &b.origin.owner_id, &b.origin.agent_id)? != Some(b.origin.grant_generation) {
        return Err(Error::new(
            Code::AuthorizationChanged,
            "the originating actor's grant is revoked or was reissued",
        ));
    }
    let found = r.task(&b.task_id)?;
    let t = found.task();
    if let Some(r) = change::staleness_knowing(a, t, r.known())? {
        return Err(Error::new(
            Code::SubjectStale,
            format!("the task's subject is no longer current ({r})"),
        )
        .with("reason", r)
        .with("next", crate::contract::Next::checkpoint()));
    }
    Ok(())
}

/// The `collector-claim` of a task of kind `K` (inside the caller's
/// mutation): claims it for the current profile's registration and
/// returns the claim output with the authority-derived descriptor.
pub(crate) fn claim<K: CollectorKind>(
    j: &Connection,
    r: &super::Rechecks<'_>,
    who: &Authenticated,
    now: Now,
    found: &change::FoundAt,
    request_id: &str,
) -> Result<Value> {
    let a = r.conn();
    let (t, s) = (found.task(), found.subject());
    let p = K::current_profile(
        a,
        &t.subject.repository,
        &t.subject.profile,
        &t.subject.step_id,
    )?
    .ok_or_else(|| profile_err(format!("no {} is installed for this step", K::PROFILE)))?;
    K::check_basis(&p)?;
    let req = TaskClaimRequest {
        version: SCHEMA_VERSION,
        request_id: request_id.into(),
        task_id: t.task_id.clone(),
        task_digest: t.digest()?,
        requested_lease_ms: K::lease_ms(&p),
        executor: Some(K::registration_id(&p).to_owned()),
    };
    // The task as the caller looked it up: the claim does not look it up again.
    let visible = change::may_view(&s.change, &who.actor);
    let found = journal::FoundTask::new(s.tasks.clone(), found.index(), visible)?;
    let mut out = journal::claim(j, r, &who.actor, &req, Some(found), now)?;
    let attempt_id = out["attempt"]["attempt_id"]
        .as_str()
        .ok_or_else(|| Error::internal("claim output lacks the attempt id"))?
        .to_owned();
    let (d, _) = derive::<K>(j, r, &attempt_id)?;
    out["descriptor"] = serde_json::to_value(&d)?;
    out["descriptor_digest"] = serde_json::to_value(K::descriptor_digest(&d)?)?;
    Ok(out)
}

/// Rechecks a descriptor of kind `K` before dispatch: it must equal what
/// the authority derives now, the attempt must be open at its fence and
/// every live check must pass. Read-only. Returns the installed profile.
pub(crate) fn recheck<K: CollectorKind>(
    root: &Path,
    clock: &dyn Clock,
    token: &str,
    d: &K::Descriptor,
) -> Result<K::Profile> {
    let b = d.binding();
    let (dir, mut ac) = admin::open_read(root)?;
    let at = ac.transaction_with_behavior(TransactionBehavior::Deferred)?;
    let who = admin::authenticate(&at, token)?;
    check_origin(&who, &b.origin)?;
    let j = dir
        .open_read_cached(&journal::SPEC)?
        .ok_or_else(|| Error::new(Code::NotFound, "no journal: nothing was claimed"))?;
    let (derived, p) = derive::<K>(&j, &super::Rechecks::new(&at), &b.attempt_id)?;
    if &derived != d {
        return Err(mismatch(
            "the descriptor does not match what the authority derives now",
        ));
    }
    check_open(
        &j,
        &b.attempt_id,
        &b.task_id,
        b.fence,
        unix_millis(clock.now()),
    )?;
    live::<K>(&at, d)?;
    Ok(p)
}

/// A transfer of kind `K` validated in full, its attempt still open at
/// its fence and every live check passing: what the import retains.
pub(crate) fn validated<K: CollectorKind>(
    j: &Connection,
    a: &Connection,
    dir: &DataDir,
    bytes: &[u8],
    now_ms: i64,
) -> Result<Checked<K::Descriptor>> {
    let v = K::validate(j, a, dir, bytes)?;
    let b = v.descriptor.binding();
    check_open(j, &b.attempt_id, &b.task_id, b.fence, now_ms)?;
    live::<K>(a, &v.descriptor)?;
    Ok(v)
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
    verified(j, a, bytes, transfer::open(bytes)?, kind)
}

/// [`open_verified`] of a transfer the caller has already opened (`env`
/// is `transfer::open(bytes)`).
pub(crate) fn verified(
    j: &Connection,
    a: &Connection,
    bytes: &[u8],
    env: transfer::Envelope,
    kind: &str,
) -> Result<(transfer::Envelope, crate::contract::ExecutorEnrollment)> {
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
