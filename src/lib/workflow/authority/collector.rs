//! The authority's half of operator-enrolled collectors: immutable
//! collector profiles, the authority-derived descriptor of a claimed
//! execution, `collector-claim`, and the import of signed transfers (see
//! `docs/transfer.md`).

use super::auth::{self as admin, Authenticated};
use super::bump_epoch;
use super::change;
use super::kind::{
    Checked, CollectorKind, check_open, check_origin, claim, derive, live, recheck,
    registered_step, registration_binding, validated, verified,
};
pub use super::kind::{audience, live_grant};
use super::schema::AuthorityWork;
use crate::clock::Clock;
use crate::collector::BoundDescriptor;
use crate::collector::runtime::{self, RuntimeIdentity, RuntimeKind};
use crate::collector::transfer::{
    self, CollectorDescriptor, CollectorProfile, ExecutionRecord, ExecutionRequest,
    ExecutionStatus, Limits,
};
use crate::contract::{ActionClass, Next, canonical_bytes};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, Work, params};
use crate::wire::digest::Sha256Hex;
use crate::workflow::journal::JournalWork;
use crate::workflow::journal::{self, Now};
use serde::{Deserialize, Serialize};
use serde_json::Value;
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
            let plan = runtime::Plan {
                oci_image: req.oci_image.as_deref(),
                limits: limits.as_ref(),
                collector_dir: None,
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
            registration: registration_binding(&reg),
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
    let (p, digest) = parsed_profile(bytes)?;
    if digest.as_str() != d {
        return Err(Error::new(
            Code::IntegrityError,
            "stored profile does not match its digest",
        ));
    }
    Ok(Some(p))
}

/// Parsed profiles kept at most (the oldest goes first).
const PROFILES_KEPT: usize = 64;

/// Stored profile bytes, what they parse to and the parse's digest.
type ParsedProfile = (Vec<u8>, CollectorProfile, Sha256Hex);

static PROFILES: std::sync::Mutex<std::collections::VecDeque<std::sync::Arc<ParsedProfile>>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// The parse of a stored profile and its digest, remembered keyed by the
/// exact bytes (compared in full), so a hit is exactly what parsing and
/// hashing them again would give: validating one transfer reads its
/// profile three times (the descriptor, the transfer, the live check), and
/// qualify validates every transfer of a subject.
fn parsed_profile(bytes: Vec<u8>) -> Result<(CollectorProfile, Sha256Hex)> {
    let hit = PROFILES
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|p| p.0 == bytes).cloned());
    if let Some(p) = hit {
        return Ok((p.1.clone(), p.2.clone()));
    }
    let p: CollectorProfile = serde_json::from_slice(&bytes)?;
    let digest = p.digest()?;
    let out = (p.clone(), digest.clone());
    if let Ok(mut c) = PROFILES.lock() {
        if c.len() >= PROFILES_KEPT {
            c.pop_front();
        }
        c.push_back(std::sync::Arc::new((bytes, p, digest)));
    }
    Ok(out)
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
    Ok(derive::<Command>(j, r, attempt_id)?.0)
}

/// Every live check on a descriptor's registration, profile, origin and
/// subject (not the attempt state).
pub fn check_live(a: &Connection, d: &CollectorDescriptor) -> Result<()> {
    live::<Command>(a, d)
}

/// [`check_live`] with the request's task lookups (`r`).
pub fn check_live_in(r: &super::Rechecks<'_>, d: &CollectorDescriptor) -> Result<()> {
    super::kind::live_in::<Command>(r, d)
}

/// Evaluates `$body` with `$K` the [`CollectorKind`] of transfer kind
/// `$kind`: the one switch on a transfer's kind (any kind but `review` is
/// the command kind, whose validation refuses a kind it does not know).
macro_rules! by_kind {
    ($kind:expr, $K:ident => $body:expr) => {
        if $kind == super::review::KIND {
            type $K = super::review::Review;
            $body
        } else {
            type $K = Command;
            $body
        }
    };
}

/// The command collector: the operator's recipe in a pinned runtime.
pub(crate) struct Command;

impl CollectorKind for Command {
    type Profile = CollectorProfile;
    type Descriptor = CollectorDescriptor;
    const CLASS: ActionClass = ActionClass::Command;
    const PROFILE: &'static str = "collector profile";
    const WRONG_CLASS: &'static str = "collector descriptors exist for command tasks only";

    fn profile_for(
        a: &Connection,
        registration_id: &str,
        step_id: &str,
    ) -> Result<Option<CollectorProfile>> {
        profile_for(a, registration_id, step_id)
    }

    fn current_profile(
        a: &Connection,
        repo: &str,
        profile: &str,
        step: &str,
    ) -> Result<Option<CollectorProfile>> {
        current_profile(a, repo, profile, step)
    }

    fn check_basis(p: &CollectorProfile) -> Result<()> {
        p.check_basis()
    }

    fn profile_ref(p: &CollectorProfile) -> Result<(&str, Sha256Hex)> {
        Ok((&p.profile_id, p.digest()?))
    }

    fn registration_id(p: &CollectorProfile) -> &str {
        &p.registration.registration_id
    }

    fn lease_ms(p: &CollectorProfile) -> u64 {
        (p.recipe.timeout_ms + 120_000).min(crate::contract::MAX_LEASE_MS)
    }

    fn request_digest(d: &CollectorDescriptor, _p: &CollectorProfile) -> Result<Sha256Hex> {
        ExecutionRequest::from_descriptor(d).digest()
    }

    fn descriptor_digest(d: &CollectorDescriptor) -> Result<Sha256Hex> {
        transfer::descriptor_digest(d)
    }

    fn validate(
        j: &Connection,
        a: &Connection,
        _dir: &DataDir,
        bytes: &[u8],
    ) -> Result<Checked<CollectorDescriptor>> {
        let v = validate_transfer(j, a, bytes)?;
        Ok(Checked {
            outcome: serde_json::to_value(v.record.outcome)?,
            status: serde_json::to_value(v.record.status)?,
            descriptor: v.descriptor,
        })
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
        let found = rechecks.task(task_id)?;
        let t = found.task();
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
            return claim::<super::review::Review>(j, &rechecks, who, now, &found, request_id);
        }
        claim::<Command>(j, &rechecks, who, now, &found, request_id)
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
    recheck::<Command>(root, clock, token, d).map(|_| ())
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

/// Validates transfer bytes against the authority: signature under the
/// current registration, every header binding, the regenerated request
/// and the record's outcome, identity and cleanup rules. Attempt state is
/// checked by the caller (import needs it open; finalize needs it done).
pub fn validate_transfer(j: &Connection, a: &Connection, bytes: &[u8]) -> Result<Validated> {
    validate_opened(j, a, bytes, transfer::open(bytes)?)
}

/// [`validate_transfer`] of a transfer the caller has already opened
/// (`env` is `transfer::open(bytes)`; it is not parsed again).
pub fn validate_opened(
    j: &Connection,
    a: &Connection,
    bytes: &[u8],
    env: transfer::Envelope,
) -> Result<Validated> {
    validate_opened_in(j, &super::Rechecks::new(a), bytes, env)
}

/// [`validate_opened`] with the request's task lookups (`r`): the
/// attempt's task (and a subject `r` knows) is not loaded again.
pub fn validate_opened_in(
    j: &Connection,
    r: &super::Rechecks<'_>,
    bytes: &[u8],
    env: transfer::Envelope,
) -> Result<Validated> {
    let a = r.conn();
    let (env, reg) = verified(j, a, bytes, env, "command")?;
    let h = &env.header;
    let d = derive_descriptor_in(j, r, &h.attempt_id)?;
    let p = profile_for(a, &reg.registration_id, &h.step_id)?
        .ok_or_else(|| profile_err("no collector profile for this registration and step"))?;
    p.check_basis()?;
    d.binding()
        .check_header(h, d.profile_ref(), Command::PROFILE)?;
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
    // A review is validated by replaying its trace.
    let v = by_kind!(h.kind, K => validated::<K>(&jt, &at, &dir, bytes, now_ms)?.forget());
    let pre = Prevalidated {
        outcome: v.outcome,
        status: v.status,
    };
    let put = dir.blobs()?.put_bytes(bytes)?;
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
    by_kind!(h.kind, K => recheck_kind::<K>(jt, at, h, now_ms))
}

/// [`recheck_prevalidated`] of a transfer of kind `K`.
fn recheck_kind<K: CollectorKind>(
    jt: &Connection,
    at: &Connection,
    h: &transfer::TransferHeader,
    now_ms: i64,
) -> Result<(String, u64)> {
    let (d, p) = derive::<K>(jt, &super::Rechecks::new(at), &h.attempt_id)?;
    let b = d.binding();
    b.check_header(h, d.profile_ref(), K::PROFILE)?;
    if h.request_digest != K::request_digest(&d, &p)? {
        return Err(tinv("the header's request digest is wrong"));
    }
    check_open(jt, &b.attempt_id, &b.task_id, b.fence, now_ms)?;
    live::<K>(at, &d)?;
    Ok((b.change_id, b.change_version))
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
        let applicable = by_kind!(h.kind, K => applicable::<K>(jt, at, &prev.attempt_id));
        return Ok(serde_json::to_value(ReplayedImport {
            applicability: Applicability {
                currently_applicable: applicable,
            },
            attempt_id: &prev.attempt_id,
            execution_operation_id: &prev.execution_operation_id,
            outcome: &prev.outcome,
            replay: true,
            retained: true,
            status: &prev.status,
            task_id: &prev.task_id,
            transfer_digest: &digest,
        })?);
    }
    check_origin(&who, &h.origin)?;
    let prestored = pre.is_some();
    // Prevalidated: only what can have changed since is checked again.
    // Otherwise each kind is validated in full by its own rules (a review
    // by replay); what is retained is the same either way.
    let (outcome, status, change_id, change_version) = if let Some(pre) = pre {
        let (change_id, version) = recheck_prevalidated(jt, at, h, now.ms)?;
        (pre.outcome, pre.status, change_id, version)
    } else {
        let v = by_kind!(h.kind, K => validated::<K>(jt, at, dir, bytes, now.ms)?.forget());
        (v.outcome, v.status, v.change_id, v.change_version)
    };
    if !prestored {
        let put = dir.blobs()?.put_bytes(bytes)?;
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
    // The evidence writer's outbox row, in this same transaction (only
    // when the repository has an evidence target).
    if let Some(record) = env.records.get(1) {
        super::evidence::on_import(
            at,
            &super::evidence::Imported {
                header: h,
                record,
                transfer_digest: digest.as_str(),
                change_id: &change_id,
                change_version,
                outcome: &outcome_s,
                status: &status_s,
            },
            &ts,
        )?;
    }
    // A failing record of a required step: the forge's `failure` status,
    // in this same transaction (an optional step's failure keeps nothing
    // from qualifying, so it changes no status).
    if outcome_s != "passed" && super::change::find_task(at, &h.task_id)?.0.required {
        super::forge::on_status(
            at,
            &change_id,
            change_version,
            "failure",
            &format!("step {} failed ({status_s})", h.step_id),
            &ts,
        )?;
    }
    journal::finish_attempt(jt, &h.attempt_id, &ts)?;
    crate::collector::crash_point("during_upload");
    let passed = outcome_s == "passed";
    Ok(serde_json::to_value(Import {
        attempt_id: &h.attempt_id,
        eligible_for_receipt: passed,
        execution_operation_id: &h.execution_operation_id,
        fence: h.fence,
        next: if passed {
            Next::op("collector_finalize")
        } else {
            Next::none()
        },
        outcome,
        passing: false,
        replay: false,
        retained: true,
        size: bytes.len(),
        status,
        task_id: &h.task_id,
        transfer_digest: &digest,
    })?)
}

// An import's outputs are JSON objects: their fields are in key order,
// the order the `Value` they become has.

/// A new import's output.
#[derive(Serialize)]
struct Import<'a> {
    attempt_id: &'a str,
    eligible_for_receipt: bool,
    execution_operation_id: &'a str,
    fence: u64,
    next: Next,
    outcome: Value,
    passing: bool,
    replay: bool,
    retained: bool,
    size: usize,
    status: Value,
    task_id: &'a str,
    transfer_digest: &'a Sha256Hex,
}

/// A replayed import's output (the bytes were imported before).
#[derive(Serialize)]
struct ReplayedImport<'a> {
    applicability: Applicability,
    attempt_id: &'a str,
    execution_operation_id: &'a str,
    outcome: &'a str,
    replay: bool,
    retained: bool,
    status: &'a str,
    task_id: &'a str,
    transfer_digest: &'a Sha256Hex,
}

/// Whether a replayed import still counts.
#[derive(Serialize)]
struct Applicability {
    currently_applicable: bool,
}

/// Whether a retained import of kind `K` is still applicable: its
/// attempt's descriptor derives and passes every live check.
fn applicable<K: CollectorKind>(jt: &Connection, at: &Connection, attempt_id: &str) -> bool {
    derive::<K>(jt, &super::Rechecks::new(at), attempt_id)
        .and_then(|(d, _)| live::<K>(at, &d))
        .is_ok()
}

/// What the import keeps of a validated transfer, whatever its kind.
struct Retained {
    outcome: Value,
    status: Value,
    change_id: String,
    change_version: u64,
}

impl<D: BoundDescriptor> Checked<D> {
    /// The kind-free part the import keeps.
    fn forget(self) -> Retained {
        let b = self.descriptor.binding();
        Retained {
            outcome: self.outcome,
            status: self.status,
            change_id: b.change_id,
            change_version: b.change_version,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, AGENT, COMMAND_STEP, NOW_MS, OWNER, REG, fixture};
    use super::super::kind::current_epoch;
    use super::*;
    use crate::collector::transfer::Origin;
    use serde_json::json;

    fn who(grant: u64) -> Authenticated {
        Authenticated {
            actor: fixture::actor(),
            grant_generation: grant,
        }
    }

    /// Claims the fixture's command task through `collector-claim`;
    /// returns the claim output.
    fn claimed(f: &fixture::Fixture) -> Value {
        collector_claim(&f.command.task_id, "req_1", None)(&f.j, &f.a, &who(1), Now { ms: NOW_MS })
            .expect("collector-claim")
    }

    fn attempt_id(out: &Value) -> String {
        out["attempt"]["attempt_id"]
            .as_str()
            .expect("attempt id")
            .to_owned()
    }

    #[test]
    fn the_kinds_name_their_class_and_profile() {
        use super::super::review::Review;
        use crate::collector::review::wire::ReviewDescriptor;
        assert_eq!(Review::CLASS, ActionClass::Review);
        assert_eq!(Command::CLASS, ActionClass::Command);
        assert_eq!(
            <ReviewDescriptor as BoundDescriptor>::KIND,
            crate::collector::review::wire::KIND
        );
        assert_eq!(
            <crate::collector::transfer::CollectorDescriptor as BoundDescriptor>::KIND,
            "command"
        );
        assert_ne!(Review::PROFILE, Command::PROFILE);
    }

    #[test]
    fn a_claim_carries_the_descriptor_the_authority_derives_again_identically() {
        let f = fixture();
        let out = claimed(&f);
        let id = attempt_id(&out);
        let d = derive_descriptor(&f.j, &f.a, &id).expect("derive");
        let again = derive_descriptor(&f.j, &f.a, &id).expect("derive again");
        assert_eq!(d, again);
        assert_eq!(out["descriptor"], serde_json::to_value(&d).expect("json"));
        assert_eq!(
            out["descriptor_digest"],
            json!(transfer::descriptor_digest(&d).expect("digest"))
        );
        // The binding is the attempt's, the profile the installed one.
        let p = fixture::command_profile();
        assert_eq!(d.audience, "dd_fixture");
        assert_eq!(d.task_id, f.command.task_id);
        assert_eq!(d.task_digest, f.command.digest().expect("task digest"));
        assert_eq!(d.change_id, fixture::CHANGE);
        assert_eq!(d.manifest_sha256, Sha256Hex::digest(b"manifest"));
        assert_eq!(d.fence, 1);
        assert_eq!(d.origin.grant_generation, 1);
        assert_eq!(d.registration.registration_id, REG);
        assert_eq!(d.collector_profile_id, p.profile_id);
        assert_eq!(d.collector_profile_digest, p.digest().expect("p digest"));
        // The lease asked for is the recipe's timeout plus two minutes.
        assert_eq!(Command::lease_ms(&p), 180_000);
        // Projecting the binding back out and building the descriptor
        // from it gives the same descriptor.
        let rebuilt = CollectorDescriptor::from_binding(d.binding(), &p).expect("rebuild");
        assert_eq!(rebuilt, d);
    }

    #[test]
    fn a_descriptor_of_the_other_kind_or_an_unclaimed_attempt_is_a_mismatch() {
        let f = fixture();
        let id = attempt_id(&claimed(&f));
        let e =
            derive::<super::super::review::Review>(&f.j, &super::super::Rechecks::new(&f.a), &id)
                .expect_err("a command attempt has no review descriptor");
        assert_eq!(e.code(), Code::DescriptorMismatch);
        assert_eq!(
            e.message(),
            "review descriptors exist for review tasks only"
        );
        let e = derive_descriptor(&f.j, &f.a, "att_nothing").expect_err("unknown attempt");
        assert_eq!(e.code(), Code::NotFound);
    }

    #[test]
    fn a_descriptor_is_live_until_its_registration_grant_profile_or_subject_changes() {
        let f = fixture();
        let id = attempt_id(&claimed(&f));
        let d = derive_descriptor(&f.j, &f.a, &id).expect("derive");
        check_live(&f.a, &d).expect("live");

        // The originating actor's grant reissued.
        f.a.execute("UPDATE actors SET grant_generation = 2", [])
            .expect("reissue");
        assert_eq!(
            check_live(&f.a, &d).expect_err("grant").code(),
            Code::AuthorizationChanged
        );
        f.a.execute("UPDATE actors SET grant_generation = 1", [])
            .expect("restore");

        // Another descriptor's profile: `profile_invalid`, "changed".
        let mut other = d.clone();
        other.collector_profile_digest = Sha256Hex::digest(b"other");
        let e = check_live(&f.a, &other).expect_err("profile");
        assert_eq!(e.code(), Code::ProfileInvalid);
        assert_eq!(e.message(), "the collector profile changed");

        // A registration epoch the descriptor does not name.
        let mut old = d.clone();
        old.registration.epoch = 0;
        assert_eq!(
            check_live(&f.a, &old).expect_err("epoch").code(),
            Code::EnrollmentInvalid
        );

        // A policy act makes the subject stale.
        super::super::bump_epoch(&f.a, "test", "x", "t").expect("bump");
        let e = check_live(&f.a, &d).expect_err("stale");
        assert_eq!(e.code(), Code::SubjectStale);
        assert_eq!(
            e.message(),
            "the task's subject is no longer current (policy_changed)"
        );

        // A revoked registration comes first of all.
        f.a.execute("INSERT INTO revocations VALUES (?1, 0, 't')", params![REG])
            .expect("revoke");
        let e = check_live(&f.a, &d).expect_err("revoked");
        assert_eq!(e.code(), Code::EnrollmentInvalid);
        assert_eq!(e.message(), "the registration is revoked");
    }

    #[test]
    fn knowing_the_subject_derives_and_checks_as_loading_it_does() {
        use super::super::Rechecks;
        let f = fixture();
        let id = attempt_id(&claimed(&f));
        let (_, s) = change::find_task(&f.a, &f.command.task_id).expect("task");
        let d = derive_descriptor(&f.j, &f.a, &id).expect("derive");
        let knowing = Rechecks::knowing(&f.a, &s);
        assert_eq!(
            derive_descriptor_in(&f.j, &knowing, &id).expect("knowing"),
            d
        );
        check_live_in(&knowing, &d).expect("live");
        // A subject of another version is not taken for the task's: the
        // task's own is loaded.
        let mut other = s.clone();
        other.version += 1;
        other.tasks = Vec::new().into();
        let r = Rechecks::knowing(&f.a, &other);
        assert_eq!(derive_descriptor_in(&f.j, &r, &id).expect("other"), d);
        check_live_in(&Rechecks::knowing(&f.a, &other), &d).expect("live");
        // The same refusals, in the same order.
        f.a.execute("UPDATE actors SET grant_generation = 2", [])
            .expect("reissue");
        assert_eq!(
            check_live_in(&Rechecks::knowing(&f.a, &s), &d)
                .expect_err("grant")
                .code(),
            Code::AuthorizationChanged
        );
        f.a.execute("UPDATE actors SET grant_generation = 1", [])
            .expect("restore");
        super::super::bump_epoch(&f.a, "test", "x", "t").expect("bump");
        for r in [Rechecks::knowing(&f.a, &s), Rechecks::new(&f.a)] {
            let e = check_live_in(&r, &d).expect_err("stale");
            assert_eq!(e.code(), Code::SubjectStale);
            assert_eq!(
                e.message(),
                "the task's subject is no longer current (policy_changed)"
            );
        }
    }

    #[test]
    fn an_attempt_is_open_only_at_its_current_fence_while_leased() {
        let f = fixture();
        let id = attempt_id(&claimed(&f));
        let t = &f.command.task_id;
        check_open(&f.j, &id, t, 1, NOW_MS).expect("open at its fence");
        // An expired lease is still open (the import decides on it).
        check_open(&f.j, &id, t, 1, NOW_MS + 10 * 3_600_000).expect("expired is open");
        let e = check_open(&f.j, &id, t, 2, NOW_MS).expect_err("other fence");
        assert_eq!(e.code(), Code::StaleFence);
        assert_eq!(
            check_open(&f.j, "att_none", t, 1, NOW_MS)
                .expect_err("no attempt")
                .code(),
            Code::NotFound
        );
        journal::finish_attempt(&f.j, &id, "t").expect("finish");
        let e = check_open(&f.j, &id, t, 1, NOW_MS).expect_err("finished");
        assert_eq!(e.code(), Code::AttemptClosed);
        assert_eq!(e.message(), "the attempt is finished");
    }

    #[test]
    fn only_the_originating_actor_at_its_grant_generation_may_act() {
        let o = Origin {
            owner_id: OWNER.into(),
            agent_id: AGENT.into(),
            grant_generation: 3,
        };
        check_origin(&who(3), &o).expect("the origin itself");
        assert_eq!(
            check_origin(&who(4), &o).expect_err("reissued").code(),
            Code::AuthorizationChanged
        );
        let other_agent = Authenticated {
            actor: crate::contract::Actor {
                owner_id: OWNER.into(),
                agent_id: "a2".into(),
            },
            grant_generation: 3,
        };
        assert_eq!(
            check_origin(&other_agent, &o)
                .expect_err("other agent")
                .code(),
            Code::AuthorizationChanged
        );
    }

    #[test]
    fn a_header_binds_every_field_of_the_attempt_and_names_the_profile() {
        let f = fixture();
        let id = attempt_id(&claimed(&f));
        let d = derive_descriptor(&f.j, &f.a, &id).expect("derive");
        let b = d.binding();
        let identity = transfer::CollectorIdentity {
            runtime: "bwrap".into(),
            runtime_identity_digest: None,
            agent_task_version: "0".into(),
        };
        let h = b
            .header(
                "command",
                d.profile_ref(),
                Sha256Hex::digest(b"req"),
                identity,
            )
            .expect("header");
        assert_eq!(h.attempt_id, d.attempt_id);
        assert_eq!(h.audience, d.audience);
        b.check_header(&h, d.profile_ref(), "collector profile")
            .expect("its own header");
        type Bend = fn(&mut transfer::TransferHeader);
        let bends: [(&str, Bend); 10] = [
            ("repository", |h| h.repository.push('x')),
            ("profile", |h| h.profile.push('x')),
            ("step", |h| h.step_id.push('x')),
            ("task", |h| h.task_id.push('x')),
            ("task digest", |h| h.task_digest = Sha256Hex::digest(b"t")),
            ("attempt digest", |h| {
                h.attempt_digest = Sha256Hex::digest(b"a")
            }),
            ("operation", |h| h.execution_operation_id.push('x')),
            ("fence", |h| h.fence += 1),
            ("origin", |h| h.origin.grant_generation += 1),
            ("registration", |h| h.registration.epoch += 1),
        ];
        for (what, bend) in bends {
            let mut bent = h.clone();
            bend(&mut bent);
            let e = b
                .check_header(&bent, d.profile_ref(), "collector profile")
                .expect_err(what);
            assert_eq!(e.code(), Code::TransferInvalid, "{what}");
        }
        // Another profile is named before anything else is compared.
        let mut bent = h.clone();
        bent.fence += 1;
        bent.collector_profile_id.push('x');
        let e = b
            .check_header(&bent, d.profile_ref(), "collector profile")
            .expect_err("profile");
        assert_eq!(e.code(), Code::ProfileInvalid);
        assert_eq!(e.message(), "the transfer names another collector profile");
    }

    #[test]
    fn the_current_epoch_and_the_live_grant_are_the_rows_now() {
        let f = fixture();
        let (reg, revoked) = admin::registration(&f.a, REG)
            .expect("read")
            .expect("registration");
        assert!(!revoked);
        assert_eq!(current_epoch(&f.a, &reg).expect("epoch"), 1);
        f.a.execute(
            "INSERT INTO registrations VALUES ('reg_2', ?1, ?2, ?3, 'exec1', 'pk', 'key2', 2, 0, 't')",
            params![fixture::REPO, fixture::PROFILE, COMMAND_STEP],
        )
        .expect("re-enroll");
        assert_eq!(current_epoch(&f.a, &reg).expect("epoch"), 2);
        assert_eq!(live_grant(&f.a, OWNER, AGENT).expect("grant"), Some(1));
        assert_eq!(live_grant(&f.a, OWNER, "a9").expect("grant"), None);
        f.a.execute("UPDATE actors SET revoked_at = 't'", [])
            .expect("revoke");
        assert_eq!(live_grant(&f.a, OWNER, AGENT).expect("grant"), None);
    }

    #[test]
    fn a_stored_profile_that_does_not_match_its_digest_is_an_integrity_error() {
        let f = fixture();
        let p = profile_for(&f.a, REG, COMMAND_STEP)
            .expect("read")
            .expect("installed");
        assert_eq!(p, fixture::command_profile());
        assert_eq!(
            current_profile(&f.a, fixture::REPO, fixture::PROFILE, COMMAND_STEP)
                .expect("read")
                .map(|p| p.profile_id),
            Some(p.profile_id.clone())
        );
        f.a.execute(
            "UPDATE collector_profiles SET profile_digest = ?1",
            params![Sha256Hex::digest(b"x").as_str()],
        )
        .expect("tamper");
        assert_eq!(
            profile_for(&f.a, REG, COMMAND_STEP)
                .expect_err("tampered")
                .code(),
            Code::IntegrityError
        );
    }

    #[test]
    fn a_claim_without_an_installed_profile_names_the_kind() {
        let f = fixture();
        f.a.execute("DELETE FROM collector_profiles", [])
            .expect("uninstall");
        let e = collector_claim(&f.command.task_id, "req_1", None)(
            &f.j,
            &f.a,
            &who(1),
            Now { ms: NOW_MS },
        )
        .expect_err("no profile");
        assert_eq!(e.code(), Code::ProfileInvalid);
        assert_eq!(
            e.message(),
            "no collector profile is installed for this step"
        );
        let e = collector_claim(&f.review.task_id, "req_2", None)(
            &f.j,
            &f.a,
            &who(1),
            Now { ms: NOW_MS },
        )
        .expect_err("no review profile");
        assert_eq!(e.message(), "no review profile is installed for this step");
        // Nothing was claimed.
        assert_eq!(
            journal::task_row(&f.j, &f.command.task_id).expect("read"),
            None
        );
    }

    /// A command transfer for `d` signed with `key`, its header bent by
    /// `bend` before signing.
    fn sealed(
        d: &CollectorDescriptor,
        record: &ExecutionRecord,
        key: &crate::wire::ed25519::Keypair,
        bend: impl FnOnce(&mut transfer::TransferHeader),
    ) -> Vec<u8> {
        let request = ExecutionRequest::from_descriptor(d);
        let mut h = d
            .binding()
            .header(
                "command",
                d.profile_ref(),
                request.digest().expect("request digest"),
                transfer::CollectorIdentity {
                    runtime: "bwrap".into(),
                    runtime_identity_digest: None,
                    agent_task_version: "0".into(),
                },
            )
            .expect("header");
        bend(&mut h);
        transfer::seal(
            h,
            &[
                request.bytes().expect("request bytes"),
                canonical_bytes(record).expect("record bytes"),
            ],
            key,
        )
        .expect("seal")
    }

    fn unavailable(d: &CollectorDescriptor) -> ExecutionRecord {
        ExecutionRecord {
            version: 1,
            request_digest: ExecutionRequest::from_descriptor(d)
                .digest()
                .expect("digest"),
            status: ExecutionStatus::RuntimeUnavailable,
            outcome: transfer::ExecutionOutcome::Failed,
            runtime_identity: None,
            run: None,
            detail: Some("no runtime".into()),
        }
    }

    #[test]
    fn a_signed_transfer_validates_and_each_mismatch_has_its_refusal() {
        let f = fixture();
        let id = attempt_id(&claimed(&f));
        let d = derive_descriptor(&f.j, &f.a, &id).expect("derive");
        let key = fixture::keypair();
        let record = unavailable(&d);
        let good = sealed(&d, &record, &key, |_| {});
        let v = validate_transfer(&f.j, &f.a, &good).expect("valid");
        assert_eq!(v.descriptor, d);
        assert_eq!(v.record, record);

        let refused = |bytes: &[u8]| validate_transfer(&f.j, &f.a, bytes).err().expect("refused");
        let e = refused(&sealed(&d, &record, &key, |h| {
            h.audience = "dd_other".into()
        }));
        assert_eq!(e.code(), Code::TransferInvalid);
        assert_eq!(e.message(), "the transfer is for another authority");

        let e = refused(&sealed(&d, &record, &key, |h| h.fence += 1));
        assert_eq!(e.code(), Code::StaleFence);

        let e = refused(&sealed(&d, &record, &key, |h| h.task_id.push('x')));
        assert_eq!(e.code(), Code::TransferInvalid);
        assert_eq!(
            e.message(),
            "the header does not bind this exact task, attempt, origin and registration"
        );

        let e = refused(&sealed(&d, &record, &key, |h| {
            h.request_digest = Sha256Hex::digest(b"another request")
        }));
        assert_eq!(e.message(), "the header's request digest is wrong");

        let e = refused(&sealed(
            &d,
            &record,
            &crate::wire::ed25519::Keypair::from_seed(&[9; 32]),
            |_| {},
        ));
        assert_eq!(e.code(), Code::SignatureInvalid);

        // A record whose outcome its facts do not give.
        let mut boasting = record.clone();
        boasting.outcome = transfer::ExecutionOutcome::Passed;
        let e = refused(&sealed(&d, &boasting, &key, |_| {}));
        assert_eq!(e.code(), Code::TransferInvalid);
        assert_eq!(
            e.message(),
            "the record's outcome is not the one its facts derive"
        );

        // Only a completed record carries a run, and it must be under the
        // pinned runtime identity.
        let mut completed = record.clone();
        completed.status = ExecutionStatus::Completed;
        let e = refused(&sealed(&d, &completed, &key, |_| {}));
        assert_eq!(
            e.message(),
            "a completed record must carry the run under the pinned runtime identity"
        );

        // The same bytes once the registration is revoked.
        f.a.execute("INSERT INTO revocations VALUES (?1, 0, 't')", params![REG])
            .expect("revoke");
        let e = refused(&good);
        assert_eq!(e.code(), Code::EnrollmentInvalid);
        assert_eq!(e.message(), "the registration is revoked");
    }
}
