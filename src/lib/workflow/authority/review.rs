//! The authority's half of the finite review collector (`docs/review.md`):
//! installing a review profile, the descriptor of a claimed review
//! execution, the live checks, and validating a review transfer by replay.
//!
//! Review profiles live in `collector_profiles` next to command profiles
//! (one profile per registration and step, immutable); their id starts
//! with `rp_` and their bytes are a canonical [`ReviewProfile`].

use super::auth as admin;
use super::bump_epoch;
use super::kind;
use crate::clock::Clock;
use crate::collector::BoundDescriptor;
use crate::collector::review::types::{ProfileParts, Provider, ReviewRecord};
pub use crate::collector::review::wire::KIND;
use crate::collector::review::wire::{CasSnapshot, ReviewDescriptor};
use crate::collector::review::{
    Basis, ReviewProfile, ReviewRequest, check_basis, pin_executable, validate_replay,
};
use crate::collector::transfer::{self, Envelope};
use crate::contract::{ActionClass, canonical_bytes};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, params};
use crate::wire::digest::Sha256Hex;
use serde::Serialize;

use std::path::{Path, PathBuf};

fn profile_err(msg: impl Into<String>) -> Error {
    Error::new(Code::ProfileInvalid, msg)
}

fn tinv(msg: impl Into<String>) -> Error {
    Error::new(Code::TransferInvalid, msg)
}

/// `profile install --runtime review` request.
#[derive(Debug, Clone)]
pub struct ReviewInstallRequest {
    /// Registration (enrolled for the review step).
    pub registration_id: String,
    /// The review step.
    pub step_id: String,
    /// The executable to pin (for an npm-installed `claude`, its bin link
    /// or `cli.js`: the script and the `node` that runs it are pinned).
    pub executable: PathBuf,
    /// Model id passed to `--model`.
    pub model: String,
    /// Provider scope.
    pub provider: Provider,
    /// Names of operator variables passed to the executable.
    pub env: Vec<String>,
}

/// `profile install --runtime review` output.
#[derive(Debug, Serialize)]
pub struct ReviewInstallOutput {
    /// The profile.
    pub review_profile: ReviewProfile,
    /// Its digest.
    pub profile_digest: Sha256Hex,
    /// False when this exact profile was already installed.
    pub created: bool,
    /// Policy epoch after the act.
    pub policy_epoch: u64,
    /// Live subjects (current before the act) the act made stale.
    pub stale_subjects: u64,
}

/// Installs an immutable review profile for one exact current registration
/// epoch, repository, workflow profile and review step: the step's
/// criteria, coverage and budgets are copied in from the installed
/// requirement; the executable is pinned now from the operator's own
/// `PATH`.
pub fn profile_install(
    req: &ReviewInstallRequest,
) -> Result<impl FnOnce(&Connection, &DataDir, &str) -> Result<ReviewInstallOutput>> {
    let search = crate::env::var_os("PATH");
    let executable = pin_executable(&req.executable, search.as_deref())?;
    Ok(move |tx: &Connection, _dir: &DataDir, now: &str| {
        let (reg, rd, step) = kind::registered_step(tx, &req.registration_id, &req.step_id)?;
        let review = match (step.action_class, &step.review) {
            (ActionClass::Review, Some(r)) => r.clone(),
            _ => {
                return Err(profile_err(
                    "a review profile pins a review step (use a command runtime for command steps)",
                ));
            }
        };
        let profile = ReviewProfile::new(ProfileParts {
            repository: reg.repository.clone(),
            profile: reg.profile.clone(),
            step_id: reg.step_id.clone(),
            registration: kind::registration_binding(&reg),
            requirement_digest: Sha256Hex::parse(&rd)?,
            criteria: step.review_criteria(),
            step: review,
            basis: Basis::ClaudeCodeCli,
            executable: executable.clone(),
            provider: req.provider,
            model: req.model.clone(),
            env: req.env.clone(),
        })?;
        check_basis(profile.basis)?;
        let digest = profile.digest()?;
        let existing: Option<String> = tx
            .query_row(
                "SELECT profile_digest FROM collector_profiles WHERE registration_id = ?1 AND step_id = ?2",
                params![reg.registration_id, reg.step_id],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(d) = existing {
            if d == digest.as_str() {
                return Ok(ReviewInstallOutput {
                    review_profile: profile,
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
        tx.execute(
            "INSERT INTO collector_profiles(profile_id, profile_digest, registration_id, repo_id, profile_name, step_id, profile_json, policy_epoch, installed_at) \
             VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
            params![profile.profile_id, digest.as_str(), reg.registration_id, reg.repository, reg.profile, reg.step_id, canonical_bytes(&profile)?, pe as i64, now],
        )?;
        Ok(ReviewInstallOutput {
            review_profile: profile,
            profile_digest: digest,
            created: true,
            policy_epoch: pe,
            stale_subjects,
        })
    })
}

/// The review profile installed for a registration and step (checked
/// against its stored digest and fully validated, basis included).
pub fn profile_for(
    a: &Connection,
    registration_id: &str,
    step_id: &str,
) -> Result<Option<ReviewProfile>> {
    let row: Option<(String, String, Vec<u8>)> = a
        .query_row(
            "SELECT profile_id, profile_digest, profile_json FROM collector_profiles WHERE registration_id = ?1 AND step_id = ?2",
            params![registration_id, step_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((id, d, bytes)) = row else {
        return Ok(None);
    };
    if !id.starts_with("rp_") {
        return Err(profile_err(
            "the registration's profile is a command profile, not a review profile",
        ));
    }
    let p: ReviewProfile = serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(
            Code::IntegrityError,
            format!("stored review profile does not decode: {e}"),
        )
    })?;
    if p.digest()?.as_str() != d || p.profile_id != id {
        return Err(Error::new(
            Code::IntegrityError,
            "stored review profile does not match its digest",
        ));
    }
    p.validate()?;
    Ok(Some(p))
}

/// The review profile of the current, unrevoked registration for a step.
pub fn current_profile(
    a: &Connection,
    repo: &str,
    profile: &str,
    step: &str,
) -> Result<Option<ReviewProfile>> {
    let reg: Option<String> = a
        .query_row(
            "SELECT p.registration_id FROM collector_profiles p JOIN registrations g USING (registration_id) \
             LEFT JOIN revocations v USING (registration_id) \
             WHERE p.repo_id = ?1 AND p.profile_name = ?2 AND p.step_id = ?3 AND v.registration_id IS NULL \
             ORDER BY g.epoch DESC LIMIT 1",
            params![repo, profile, step],
            |r| r.get(0),
        )
        .optional()?;
    match reg {
        Some(r) => profile_for(a, &r, step),
        None => Ok(None),
    }
}

/// Derives the descriptor of a claimed review attempt from the authority
/// and journal alone.
pub fn derive_descriptor(
    j: &Connection,
    a: &Connection,
    attempt_id: &str,
) -> Result<(ReviewDescriptor, ReviewProfile)> {
    derive_descriptor_in(j, &super::Rechecks::new(a), attempt_id)
}

/// [`derive_descriptor`] with the request's task lookups (`r`): a task
/// the request has looked up already is not looked up again.
pub fn derive_descriptor_in(
    j: &Connection,
    r: &super::Rechecks<'_>,
    attempt_id: &str,
) -> Result<(ReviewDescriptor, ReviewProfile)> {
    kind::derive::<Review>(j, r, attempt_id)
}

/// Every live check on a review descriptor's registration, profile
/// (basis included), origin and subject (not the attempt state).
pub fn check_live(a: &Connection, d: &ReviewDescriptor) -> Result<()> {
    kind::live::<Review>(a, d)
}

/// The review collector: the finite controller over the pinned reviewer,
/// validated by replay.
pub(crate) struct Review;

impl kind::CollectorKind for Review {
    type Profile = ReviewProfile;
    type Descriptor = ReviewDescriptor;
    const CLASS: ActionClass = ActionClass::Review;
    const PROFILE: &'static str = "review profile";
    const WRONG_CLASS: &'static str = "review descriptors exist for review tasks only";

    fn profile_for(
        a: &Connection,
        registration_id: &str,
        step_id: &str,
    ) -> Result<Option<ReviewProfile>> {
        profile_for(a, registration_id, step_id)
    }

    fn current_profile(
        a: &Connection,
        repo: &str,
        profile: &str,
        step: &str,
    ) -> Result<Option<ReviewProfile>> {
        current_profile(a, repo, profile, step)
    }

    fn check_basis(p: &ReviewProfile) -> Result<()> {
        check_basis(p.basis)
    }

    fn profile_ref(p: &ReviewProfile) -> Result<(&str, Sha256Hex)> {
        Ok((&p.profile_id, p.digest()?))
    }

    fn registration_id(p: &ReviewProfile) -> &str {
        &p.registration.registration_id
    }

    fn lease_ms(p: &ReviewProfile) -> u64 {
        p.budgets
            .max_total_wall_ms
            .saturating_add(120_000)
            .min(crate::contract::MAX_LEASE_MS)
    }

    fn request_digest(d: &ReviewDescriptor, p: &ReviewProfile) -> Result<Sha256Hex> {
        d.request(p)?.digest()
    }

    fn descriptor_digest(d: &ReviewDescriptor) -> Result<Sha256Hex> {
        d.digest()
    }

    fn validate(
        j: &Connection,
        a: &Connection,
        dir: &DataDir,
        bytes: &[u8],
    ) -> Result<kind::Checked<ReviewDescriptor>> {
        let v = validate_transfer(j, a, dir, bytes)?;
        Ok(kind::Checked {
            outcome: serde_json::to_value(v.record.outcome)?,
            status: match v.record.failure {
                Some(f) => serde_json::to_value(f)?,
                None => serde_json::Value::from("completed"),
            },
            descriptor: v.descriptor,
        })
    }
}

/// Rechecks a review descriptor before any call: it must equal what the
/// authority derives now, the attempt must be open at its fence and every
/// live check must pass. Read-only. Returns the installed profile.
pub fn recheck_descriptor(
    root: &Path,
    clock: &dyn Clock,
    token: &str,
    d: &ReviewDescriptor,
) -> Result<ReviewProfile> {
    kind::recheck::<Review>(root, clock, token, d)
}

/// The installed profile of a descriptor, read-only (what a resumed
/// `collect` replays under, whatever the attempt's state now).
pub fn descriptor_profile(root: &Path, d: &ReviewDescriptor) -> Result<ReviewProfile> {
    let (_dir, conn) = admin::open_read(root)?;
    let p = profile_for(&conn, &d.registration.registration_id, &d.step_id)?
        .ok_or_else(|| profile_err("the review profile is gone"))?;
    if p.profile_id != d.review_profile_id || p.digest()? != d.review_profile_digest {
        return Err(profile_err("the review profile changed"));
    }
    Ok(p)
}

/// A fully validated review transfer.
pub struct Validated {
    /// The envelope.
    pub envelope: Envelope,
    /// The regenerated request.
    pub request: ReviewRequest,
    /// The replayed record.
    pub record: ReviewRecord,
    /// The descriptor the authority derives for it.
    pub descriptor: ReviewDescriptor,
    /// The installed profile it ran under.
    pub profile: ReviewProfile,
}

/// Validates review transfer bytes against the authority: the signature
/// under the current registration, every header binding, the request
/// regenerated from the authority's own state, and the record by replay
/// (the same controller over the immutable snapshot and the installed
/// profile, fed the record's retained trace; any difference is
/// `review_replay_mismatch`). Attempt state is checked by the caller.
pub fn validate_transfer(
    j: &Connection,
    a: &Connection,
    dir: &DataDir,
    bytes: &[u8],
) -> Result<Validated> {
    let (env, _reg) = kind::open_verified(j, a, bytes, KIND)?;
    let h = &env.header;
    let (d, p) = derive_descriptor(j, a, &h.attempt_id)?;
    check_basis(p.basis)?;
    d.binding()
        .check_header(h, d.profile_ref(), <Review as kind::CollectorKind>::PROFILE)?;
    if h.collector_identity.runtime != KIND
        || h.collector_identity.runtime_identity_digest.is_some()
    {
        return Err(tinv(
            "a review header's collector identity is `review` with no runtime digest",
        ));
    }
    let request = d.request(&p)?;
    if request.bytes()? != env.records[0] {
        return Err(tinv(
            "the review request is not the one the authority regenerates",
        ));
    }
    if h.request_digest != request.digest()? {
        return Err(tinv("the header's request digest is wrong"));
    }
    let record: ReviewRecord = crate::wire::json::decode(
        &env.records[1],
        crate::wire::json::Limits::bytes(transfer::MAX_TRANSFER_BYTES as usize),
        Code::TransferInvalid,
        "review record",
    )?;
    if record.bytes()? != env.records[1] {
        return Err(tinv("the review record is not canonical"));
    }
    let snapshot = CasSnapshot::open(dir.blobs()?, &d.revision, &d.manifest_sha256)?;
    validate_replay(&snapshot, &p, &request, &record)?;
    Ok(Validated {
        envelope: env,
        request,
        record,
        descriptor: d,
        profile: p,
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixture::{self, fixture};
    use super::*;

    #[test]
    fn a_command_profile_is_not_a_review_profile() {
        let f = fixture();
        let e = profile_for(&f.a, fixture::REG, fixture::COMMAND_STEP).expect_err("a cp_ profile");
        assert_eq!(e.code(), Code::ProfileInvalid);
        assert_eq!(
            profile_for(&f.a, fixture::REG, fixture::REVIEW_STEP).expect("read"),
            None
        );
        assert!(
            current_profile(&f.a, fixture::REPO, fixture::PROFILE, fixture::REVIEW_STEP)
                .expect("read")
                .is_none()
        );
    }
}
