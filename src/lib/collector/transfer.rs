//! The signed collector transfer: wire types and the envelope codec (see
//! `docs/transfer.md`).
//!
//! ```text
//! envelope = MAGIC (8 bytes "ATXFER1\n")
//!          || u32be(header_len) || header (canonical JSON)
//!          || record_0 || record_1 || …       (lengths and digests in the header)
//!          || signature (64 bytes, Ed25519 over SIGN_DOMAIN || 0x00 || everything before it)
//! ```
//!
//! A command transfer carries exactly two records: the original
//! `ExecutionRequest` and the `ExecutionRecord`. A review transfer carries
//! `ReviewRequest` + `ReviewRecord` (whose trace holds every reservation and
//! retained envelope the authority replays) under the same header with
//! `kind: "review"`.

use super::runtime::{RunOutcome, RuntimeIdentity, RuntimeKind};
use crate::contract::workflow::Recipe;
use crate::contract::{canonical_bytes, check_id};
use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::wire::ed25519::{Keypair, verify_strict};
use serde::{Deserialize, Serialize};

/// Envelope magic.
pub const MAGIC: &[u8; 8] = b"ATXFER1\n";
/// Largest envelope.
pub const MAX_TRANSFER_BYTES: u64 = 16 * 1024 * 1024;
/// Largest header.
pub const MAX_HEADER_BYTES: usize = 64 * 1024;
/// Domain prefixed to the signed bytes.
pub const SIGN_DOMAIN: &str = "agent-task.collector-transfer.v1";
/// Domain of an execution request digest.
pub const DOMAIN_EXECUTION_REQUEST: &str = "agent-task.execution-request.v1";
/// Domain of a collector profile digest.
pub const DOMAIN_PROFILE: &str = "agent-task.collector-profile.v1";
/// Domain of a collector descriptor digest.
pub const DOMAIN_DESCRIPTOR: &str = "agent-task.collector-descriptor.v1";
/// Record kind names in a command transfer, in order.
pub const COMMAND_RECORDS: [&str; 2] = ["execution_request", "execution_record"];
/// Record kind names in a review transfer, in order.
pub const REVIEW_RECORDS: [&str; 2] = ["review_request", "review_record"];
/// Runtime names a header's collector identity may carry: the command
/// runtimes, and `review` for a review transfer.
pub const IDENTITY_RUNTIMES: [&str; 4] = ["bwrap", "unshare", "oci", "review"];

/// The record kinds of a transfer kind (`None`: an unsupported kind).
pub fn record_kinds(kind: &str) -> Option<[&'static str; 2]> {
    match kind {
        "command" => Some(COMMAND_RECORDS),
        "review" => Some(REVIEW_RECORDS),
        _ => None,
    }
}

/// Per-run output bounds pinned by a profile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Wall-clock limit (the recipe's).
    pub timeout_ms: u64,
    /// Cap on each output stream.
    pub max_output_bytes: u64,
    /// Tail kept of each stream.
    pub tail_bytes: u64,
    /// `bwrap` only: the sandbox limits the runtime identity pins (left out
    /// for the other runtimes, whose profile bytes are as before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<super::runtime::SandboxLimits>,
}

/// The originating actor and its grant generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Origin {
    /// Owner.
    pub owner_id: String,
    /// Agent.
    pub agent_id: String,
    /// Grant generation at claim.
    pub grant_generation: u64,
}

/// The executor registration a transfer is signed under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegistrationBinding {
    /// Registration id.
    pub registration_id: String,
    /// Executor name.
    pub executor_id: String,
    /// Registration epoch.
    pub epoch: u64,
    /// Key id.
    pub key_id: String,
}

/// Profile digests kept at most (the oldest goes first).
const PROFILE_DIGESTS_KEPT: usize = 64;

/// Profiles whose digest was computed in this process, with it: the
/// digest is a function of the profile's value alone (its canonical
/// serialization), and a profile equal to a kept one in every field
/// (`profile_id` included) serializes to the same bytes, so the kept
/// digest is the one hashing it again gives. Validating one transfer
/// asks for its profile's digest three times (the stored row's check,
/// the descriptor, the live check).
static PROFILE_DIGESTS: std::sync::Mutex<
    std::collections::VecDeque<(CollectorProfile, Sha256Hex)>,
> = std::sync::Mutex::new(std::collections::VecDeque::new());

/// An installed collector profile (immutable).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorProfile {
    /// Always 1.
    pub version: u32,
    /// `cp_` + 32 hex of the profile digest.
    pub profile_id: String,
    /// Repository.
    pub repository: String,
    /// Workflow profile.
    pub profile: String,
    /// Step.
    pub step_id: String,
    /// The registration (exact epoch and key).
    pub registration: RegistrationBinding,
    /// Requirement the recipe was taken from.
    pub requirement_digest: Sha256Hex,
    /// The complete command recipe.
    pub recipe: Recipe,
    /// Runtime kind.
    pub runtime: RuntimeKind,
    /// SHA-256 of the observed runtime identity.
    pub runtime_identity_digest: Sha256Hex,
    /// For `oci` only: the digest-pinned image (`NAME@sha256:<64 hex>`) the
    /// runtime identity resolved; absent for the other runtimes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_image: Option<String>,
    /// `observed` (probed at install) or `pinned_file`; `fixture` only in test builds.
    pub basis: String,
    /// Output bounds.
    pub limits: Limits,
}

impl CollectorProfile {
    /// The profile digest (over every field but `profile_id`, which derives from it).
    pub fn digest(&self) -> Result<Sha256Hex> {
        let hit = PROFILE_DIGESTS
            .lock()
            .ok()
            .and_then(|c| c.iter().find(|(p, _)| p == self).map(|(_, d)| d.clone()));
        if let Some(d) = hit {
            return Ok(d);
        }
        let d = self.digest_now()?;
        if let Ok(mut c) = PROFILE_DIGESTS.lock() {
            if c.len() >= PROFILE_DIGESTS_KEPT {
                c.pop_front();
            }
            c.push_back((self.clone(), d.clone()));
        }
        Ok(d)
    }

    /// [`Self::digest`], computed (serialized and hashed) every time.
    fn digest_now(&self) -> Result<Sha256Hex> {
        let mut c = self.clone();
        c.profile_id = String::new();
        Ok(domain_digest(DOMAIN_PROFILE, &canonical_bytes(&c)?))
    }

    /// Whether this build may use this profile: a fixture basis only with
    /// `test-hooks`. Installing, claiming, importing, finalizing and
    /// landing all call it.
    pub fn check_basis(&self) -> Result<()> {
        self.check_basis_for(cfg!(feature = "test-hooks"))
    }

    /// [`Self::check_basis`] for a build that is (`test_build`) or is not a
    /// test build: `observed` and `pinned_file` always pass, `fixture` only
    /// in a test build, anything else never.
    pub fn check_basis_for(&self, test_build: bool) -> Result<()> {
        match self.basis.as_str() {
            "observed" | "pinned_file" => Ok(()),
            "fixture" if test_build => Ok(()),
            "fixture" => Err(Error::new(
                Code::ProfileInvalid,
                "a fixture-basis collector profile is refused outside test builds",
            )),
            _ => Err(Error::new(Code::ProfileInvalid, "unknown profile basis")),
        }
    }
}

/// The authority-derived descriptor of one claimed collector execution.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorDescriptor {
    /// Always 1.
    pub version: u32,
    /// The authority (data directory id).
    pub audience: String,
    /// Repository.
    pub repository: String,
    /// Workflow profile.
    pub profile: String,
    /// Step.
    pub step_id: String,
    /// Change.
    pub change_id: String,
    /// Change version.
    pub change_version: u64,
    /// Revision to run on.
    pub revision: Sha256Hex,
    /// SHA-256 of the revision's manifest bytes.
    pub manifest_sha256: Sha256Hex,
    /// Task.
    pub task_id: String,
    /// Task digest.
    pub task_digest: Sha256Hex,
    /// Attempt.
    pub attempt_id: String,
    /// Attempt digest.
    pub attempt_digest: Sha256Hex,
    /// Execution operation id.
    pub execution_operation_id: String,
    /// Fence.
    pub fence: u64,
    /// Originating actor and grant.
    pub origin: Origin,
    /// Registration.
    pub registration: RegistrationBinding,
    /// Installed collector profile.
    pub collector_profile_id: String,
    /// Its digest.
    pub collector_profile_digest: Sha256Hex,
    /// Recipe.
    pub recipe: Recipe,
    /// Runtime kind.
    pub runtime: RuntimeKind,
    /// Pinned runtime identity digest.
    pub runtime_identity_digest: Sha256Hex,
    /// The profile's pinned OCI image (`oci` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_image: Option<String>,
    /// Output bounds.
    pub limits: Limits,
}

/// The immutable request of one command execution (record 0). The
/// authority regenerates it from its own state and compares bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionRequest {
    /// Always 1.
    pub version: u32,
    /// Repository.
    pub repository: String,
    /// Task.
    pub task_id: String,
    /// Task digest.
    pub task_digest: Sha256Hex,
    /// Attempt.
    pub attempt_id: String,
    /// Attempt digest.
    pub attempt_digest: Sha256Hex,
    /// Execution operation id.
    pub execution_operation_id: String,
    /// Fence.
    pub fence: u64,
    /// Revision.
    pub revision: Sha256Hex,
    /// Manifest bytes digest.
    pub manifest_sha256: Sha256Hex,
    /// Collector profile.
    pub collector_profile_id: String,
    /// Recipe.
    pub recipe: Recipe,
    /// Runtime.
    pub runtime: RuntimeKind,
    /// Pinned runtime identity digest.
    pub runtime_identity_digest: Sha256Hex,
    /// The pinned OCI image (`oci` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oci_image: Option<String>,
    /// Bounds.
    pub limits: Limits,
}

impl ExecutionRequest {
    /// The request a descriptor implies.
    pub fn from_descriptor(d: &CollectorDescriptor) -> ExecutionRequest {
        ExecutionRequest {
            version: 1,
            repository: d.repository.clone(),
            task_id: d.task_id.clone(),
            task_digest: d.task_digest.clone(),
            attempt_id: d.attempt_id.clone(),
            attempt_digest: d.attempt_digest.clone(),
            execution_operation_id: d.execution_operation_id.clone(),
            fence: d.fence,
            revision: d.revision.clone(),
            manifest_sha256: d.manifest_sha256.clone(),
            collector_profile_id: d.collector_profile_id.clone(),
            recipe: d.recipe.clone(),
            runtime: d.runtime,
            runtime_identity_digest: d.runtime_identity_digest.clone(),
            oci_image: d.oci_image.clone(),
            limits: d.limits.clone(),
        }
    }

    /// Canonical bytes.
    pub fn bytes(&self) -> Result<Vec<u8>> {
        canonical_bytes(self)
    }

    /// `domain_digest(DOMAIN_EXECUTION_REQUEST, bytes)`.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_EXECUTION_REQUEST, &self.bytes()?))
    }
}

/// How a collection ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionStatus {
    /// The command ran (whatever it exited with).
    Completed,
    /// The pinned runtime is missing or cannot isolate.
    RuntimeUnavailable,
    /// The runtime on the host is not the pinned one.
    RuntimeIdentityMismatch,
    /// The reservation exists but the run's outcome was lost (crash); never rerun.
    Interrupted,
    /// The snapshot could not be materialised from the store.
    SnapshotUnavailable,
    /// The profile's pinned OCI image is not in the engine's local store
    /// (it is never pulled).
    ImageUnavailable,
    /// A sandbox limit the profile pins cannot be applied on this host.
    LimitUnavailable,
}

/// Pass or fail, derived by a fixed rule (see [`ExecutionRecord::derived_outcome`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExecutionOutcome {
    /// Completed, exit 0, no timeout, no cap, cleanup confirmed.
    Passed,
    /// Anything else.
    Failed,
}

/// What happened (record 1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExecutionRecord {
    /// Always 1.
    pub version: u32,
    /// Digest of the request this answers.
    pub request_digest: Sha256Hex,
    /// How it ended.
    pub status: ExecutionStatus,
    /// Derived outcome.
    pub outcome: ExecutionOutcome,
    /// The observed runtime identity (absent when none could be observed).
    pub runtime_identity: Option<RuntimeIdentity>,
    /// The run (exit status, durations, output digests and tails, cleanup).
    pub run: Option<RunOutcome>,
    /// A short typed detail for a non-completed status.
    pub detail: Option<String>,
}

impl ExecutionRecord {
    /// The fixed rule: passed only when completed under the pinned identity
    /// with exit 0, no timeout, no output cap and confirmed cleanup.
    pub fn derived_outcome(&self, pinned: &Sha256Hex) -> ExecutionOutcome {
        let ok = self.status == ExecutionStatus::Completed
            && self
                .runtime_identity
                .as_ref()
                .is_some_and(|i| &i.digest == pinned)
            && self.run.as_ref().is_some_and(|r| {
                r.exit_code == Some(0)
                    && r.signal.is_none()
                    && !r.timed_out
                    && !r.output_capped
                    && r.cleanup_confirmed
            });
        if ok {
            ExecutionOutcome::Passed
        } else {
            ExecutionOutcome::Failed
        }
    }
}

/// The observed collector identity in a header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CollectorIdentity {
    /// Runtime kind (`bwrap`, `oci`, …; `review` in a review transfer).
    pub runtime: String,
    /// Observed runtime identity digest (null when none was observed).
    pub runtime_identity_digest: Option<Sha256Hex>,
    /// agent-task version that collected.
    pub agent_task_version: String,
}

/// Length and digest of one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordRef {
    /// Record kind.
    pub kind: String,
    /// Byte length.
    pub length: u64,
    /// SHA-256 of the bytes.
    pub sha256: Sha256Hex,
}

/// The signed header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TransferHeader {
    /// Always 1.
    pub version: u32,
    /// `command` or `review`.
    pub kind: String,
    /// Authority audience (data directory id).
    pub audience: String,
    /// Repository.
    pub repository: String,
    /// Workflow profile.
    pub profile: String,
    /// Step.
    pub step_id: String,
    /// Collector profile.
    pub collector_profile_id: String,
    /// Its digest.
    pub collector_profile_digest: Sha256Hex,
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
    /// Originating actor and grant generation.
    pub origin: Origin,
    /// Registration epoch and key.
    pub registration: RegistrationBinding,
    /// Digest of record 0 (the immutable request).
    pub request_digest: Sha256Hex,
    /// Observed collector identity.
    pub collector_identity: CollectorIdentity,
    /// Fresh upload request id.
    pub upload_request_id: String,
    /// Ordered records.
    pub records: Vec<RecordRef>,
}

/// A decoded, signature-checked-later envelope.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// Header.
    pub header: TransferHeader,
    /// Record bytes, in order.
    pub records: Vec<Vec<u8>>,
    /// Bytes the signature covers (everything before it).
    pub signed_len: usize,
    /// Signature.
    pub signature: [u8; 64],
}

fn bad(msg: impl Into<String>) -> Error {
    Error::new(Code::TransferInvalid, msg)
}

fn signing_message(body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(SIGN_DOMAIN.len() + 1 + body.len());
    m.extend_from_slice(SIGN_DOMAIN.as_bytes());
    m.push(0);
    m.extend_from_slice(body);
    m
}

/// Builds and signs an envelope. The header's `records` are filled in here.
pub fn seal(mut header: TransferHeader, records: &[Vec<u8>], key: &Keypair) -> Result<Vec<u8>> {
    let kinds = record_kinds(&header.kind)
        .ok_or_else(|| bad(format!("unsupported transfer kind {}", header.kind)))?;
    header.records = records
        .iter()
        .zip(kinds)
        .map(|(r, k)| RecordRef {
            kind: k.to_owned(),
            length: r.len() as u64,
            sha256: Sha256Hex::digest(r),
        })
        .collect();
    let h = canonical_bytes(&header)?;
    let mut out = Vec::new();
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(
        &u32::try_from(h.len())
            .map_err(|_| bad("header too large"))?
            .to_be_bytes(),
    );
    out.extend_from_slice(&h);
    for r in records {
        out.extend_from_slice(r);
    }
    // The cap is checked before anything is signed: an oversized transfer
    // is never a signed artifact.
    if out.len() as u64 + 64 > MAX_TRANSFER_BYTES {
        return Err(Error::new(
            Code::TooLarge,
            "the transfer is over the 16 MiB envelope limit",
        ));
    }
    let sig = key.sign_hex(&signing_message(&out));
    let sig = crate::wire::ed25519::decode_hex(&sig, 64)?;
    out.extend_from_slice(&sig);
    if out.len() as u64 > MAX_TRANSFER_BYTES {
        return Err(Error::new(
            Code::TooLarge,
            "the transfer is over the 16 MiB envelope limit",
        ));
    }
    Ok(out)
}

/// Decodes an envelope strictly (size, magic, header, record lengths and
/// digests). The signature is checked by [`verify_signature`] against the
/// authority's registration key.
pub fn open(bytes: &[u8]) -> Result<Envelope> {
    if bytes.len() as u64 > MAX_TRANSFER_BYTES {
        return Err(Error::new(
            Code::TooLarge,
            "the transfer is over the 16 MiB envelope limit",
        ));
    }
    if bytes.len() < MAGIC.len() + 4 + 64 || &bytes[..8] != MAGIC {
        return Err(bad("not a collector transfer (magic)"));
    }
    let mut lb = [0u8; 4];
    lb.copy_from_slice(&bytes[8..12]);
    let hlen = u32::from_be_bytes(lb) as usize;
    if hlen > MAX_HEADER_BYTES || 12 + hlen + 64 > bytes.len() {
        return Err(bad("header length out of bounds"));
    }
    let hbytes = &bytes[12..12 + hlen];
    let header: TransferHeader = crate::wire::json::decode(
        hbytes,
        crate::wire::json::Limits::bytes(MAX_HEADER_BYTES),
        Code::TransferInvalid,
        "transfer header",
    )?;
    if canonical_bytes(&header)? != hbytes {
        return Err(bad("header is not in canonical form"));
    }
    validate_header(&header)?;
    let signed_len = bytes.len() - 64;
    let mut at = 12 + hlen;
    let mut records = Vec::new();
    for r in &header.records {
        let len = usize::try_from(r.length).map_err(|_| bad("record length"))?;
        let end = at
            .checked_add(len)
            .filter(|e| *e <= signed_len)
            .ok_or_else(|| bad("record lengths exceed the envelope"))?;
        let rec = &bytes[at..end];
        if Sha256Hex::digest(rec) != r.sha256 {
            return Err(bad(format!("record {} does not match its digest", r.kind)));
        }
        records.push(rec.to_vec());
        at = end;
    }
    if at != signed_len {
        return Err(bad("bytes between the records and the signature"));
    }
    let mut signature = [0u8; 64];
    signature.copy_from_slice(&bytes[signed_len..]);
    Ok(Envelope {
        header,
        records,
        signed_len,
        signature,
    })
}

fn validate_header(h: &TransferHeader) -> Result<()> {
    if h.version != 1 {
        return Err(bad("unsupported transfer version"));
    }
    let Some(want) = record_kinds(&h.kind) else {
        return Err(bad(format!("unsupported transfer kind {}", h.kind)));
    };
    if !IDENTITY_RUNTIMES.contains(&h.collector_identity.runtime.as_str())
        || (h.kind == "review") != (h.collector_identity.runtime == "review")
    {
        return Err(bad(
            "the header's collector identity names no runtime of its kind",
        ));
    }
    crate::contract::check_text(
        "agent_task_version",
        &h.collector_identity.agent_task_version,
        crate::contract::MAX_ID,
    )
    .map_err(|e| bad(e.message().to_owned()))?;
    for (f, v) in [
        ("audience", &h.audience),
        ("repository", &h.repository),
        ("profile", &h.profile),
        ("step_id", &h.step_id),
        ("collector_profile_id", &h.collector_profile_id),
        ("task_id", &h.task_id),
        ("attempt_id", &h.attempt_id),
        ("execution_operation_id", &h.execution_operation_id),
        ("owner_id", &h.origin.owner_id),
        ("agent_id", &h.origin.agent_id),
        ("registration_id", &h.registration.registration_id),
        ("executor_id", &h.registration.executor_id),
        ("key_id", &h.registration.key_id),
        ("upload_request_id", &h.upload_request_id),
    ] {
        if f == "repository" {
            crate::contract::check_text(f, v, crate::contract::MAX_ID)?;
        } else {
            check_id(f, v).map_err(|e| bad(e.message().to_owned()))?;
        }
    }
    let kinds: Vec<&str> = h.records.iter().map(|r| r.kind.as_str()).collect();
    if kinds != want {
        return Err(bad(format!(
            "a {} transfer carries exactly {} then {}",
            h.kind, want[0], want[1]
        )));
    }
    Ok(())
}

/// Checks the signature of an opened envelope with a registered key.
pub fn verify_signature(bytes: &[u8], env: &Envelope, public_key: &[u8; 32]) -> Result<()> {
    verify_strict(
        public_key,
        &signing_message(&bytes[..env.signed_len]),
        &env.signature,
    )
}

/// The digest a transfer is known by: plain SHA-256 of the envelope bytes.
pub fn transfer_digest(bytes: &[u8]) -> Sha256Hex {
    Sha256Hex::digest(bytes)
}

/// Domain digest of a descriptor (for display and comparison).
pub fn descriptor_digest(d: &CollectorDescriptor) -> Result<Sha256Hex> {
    Ok(domain_digest(DOMAIN_DESCRIPTOR, &canonical_bytes(d)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_digest_is_the_digest_of_its_value_kept_or_not() {
        let mut p = profile("observed");
        let d = p.digest().expect("digest");
        assert_eq!(d, p.digest_now().expect("computed"));
        assert_eq!(p.digest().expect("kept"), d);
        // Any change to a field is a different digest, never the kept one.
        p.recipe.argv.push("--changed".into());
        let changed = p.digest().expect("changed");
        assert_ne!(changed, d);
        assert_eq!(changed, p.digest_now().expect("computed"));
        p.limits = Limits {
            max_output_bytes: p.limits.max_output_bytes + 1,
            ..p.limits.clone()
        };
        assert_eq!(
            p.digest().expect("limits"),
            p.digest_now().expect("computed")
        );
        assert_ne!(p.digest().expect("limits"), changed);
        // The profile id is not part of the digest (it derives from it).
        let mut q = profile("observed");
        q.profile_id = "cp_other".into();
        assert_eq!(q.digest().expect("other id"), d);
    }

    fn profile(basis: &str) -> CollectorProfile {
        let d = Sha256Hex::digest(b"x");
        CollectorProfile {
            version: 1,
            profile_id: "cp_1".into(),
            repository: "demo/basic".into(),
            profile: "default".into(),
            step_id: "tests".into(),
            registration: RegistrationBinding {
                registration_id: "reg_1".into(),
                executor_id: "ci".into(),
                epoch: 1,
                key_id: "kid_1".into(),
            },
            requirement_digest: d.clone(),
            recipe: crate::contract::workflow::Recipe {
                argv: vec!["true".into()],
                timeout_ms: 1000,
                network: false,
            },
            runtime: RuntimeKind::Bwrap,
            runtime_identity_digest: d,
            oci_image: None,
            basis: basis.into(),
            limits: Limits {
                timeout_ms: 1000,
                max_output_bytes: 1024,
                tail_bytes: 64,
                sandbox: None,
            },
        }
    }

    #[test]
    fn fixture_basis_is_refused_outside_test_builds() {
        let e = profile("fixture")
            .check_basis_for(false)
            .expect_err("a release build refuses a fixture basis");
        assert_eq!(e.code(), Code::ProfileInvalid);
        assert!(e.message().contains("outside test builds"), "{e:?}");
        profile("fixture")
            .check_basis_for(true)
            .expect("a test build accepts a fixture basis");
    }

    #[test]
    fn observed_and_pinned_bases_pass_and_unknown_never_does() {
        for test_build in [false, true] {
            for ok in ["observed", "pinned_file"] {
                profile(ok).check_basis_for(test_build).expect(ok);
            }
            for bad in ["", "Fixture", "observed ", "bogus"] {
                let e = profile(bad)
                    .check_basis_for(test_build)
                    .expect_err("refused");
                assert_eq!(e.code(), Code::ProfileInvalid, "{bad:?}");
            }
        }
        // This build's own answer is the flag's.
        assert_eq!(
            profile("fixture").check_basis().is_ok(),
            cfg!(feature = "test-hooks")
        );
    }

    fn header() -> TransferHeader {
        let d = Sha256Hex::digest(b"x");
        TransferHeader {
            version: 1,
            kind: "command".into(),
            audience: "dd_1".into(),
            repository: "demo/basic".into(),
            profile: "default".into(),
            step_id: "tests".into(),
            collector_profile_id: "cp_1".into(),
            collector_profile_digest: d.clone(),
            task_id: "task_1".into(),
            task_digest: d.clone(),
            attempt_id: "att_1".into(),
            attempt_digest: d.clone(),
            execution_operation_id: "exec_1".into(),
            fence: 1,
            origin: Origin {
                owner_id: "alice".into(),
                agent_id: "a".into(),
                grant_generation: 1,
            },
            registration: RegistrationBinding {
                registration_id: "reg_1".into(),
                executor_id: "ci".into(),
                epoch: 1,
                key_id: "kid_1".into(),
            },
            request_digest: d,
            collector_identity: CollectorIdentity {
                runtime: "bwrap".into(),
                runtime_identity_digest: None,
                agent_task_version: "0".into(),
            },
            upload_request_id: "up_1".into(),
            records: vec![],
        }
    }

    #[test]
    fn seal_open_round_trip_and_every_flip_is_caught() {
        let key = Keypair::from_seed(&[7u8; 32]);
        let recs = vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()];
        let bytes = seal(header(), &recs, &key).expect("seal");
        let env = open(&bytes).expect("open");
        assert_eq!(env.records, recs);
        verify_signature(&bytes, &env, &key.public_key()).expect("verify");
        for i in 0..bytes.len() {
            let mut b = bytes.clone();
            b[i] ^= 0x80;
            let ok = open(&b).and_then(|e| verify_signature(&b, &e, &key.public_key()));
            assert!(ok.is_err(), "flip at {i} accepted");
        }
        let other = Keypair::from_seed(&[8u8; 32]);
        assert!(verify_signature(&bytes, &env, &other.public_key()).is_err());
        // A trailing byte before the signature, or a missing record.
        let mut b = bytes.clone();
        b.insert(bytes.len() - 64, 0);
        assert!(open(&b).is_err());
        assert!(open(&bytes[..bytes.len() - 1]).is_err());
        assert_eq!(
            open(&vec![0u8; MAX_TRANSFER_BYTES as usize + 1])
                .map(|_| ())
                .map_err(|e| e.code())
                .err(),
            Some(Code::TooLarge)
        );
    }

    #[test]
    fn a_header_with_a_duplicate_key_is_refused_before_anything_else() {
        let key = Keypair::from_seed(&[7u8; 32]);
        let bytes = seal(header(), &[], &key).expect("seal");
        let hlen = u32::from_be_bytes(bytes[8..12].try_into().expect("len")) as usize;
        let h = std::str::from_utf8(&bytes[12..12 + hlen]).expect("utf8");
        let dup = h.replacen('{', "{\"fence\":2,", 1);
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&(dup.len() as u32).to_be_bytes());
        b.extend_from_slice(dup.as_bytes());
        b.extend_from_slice(&bytes[12 + hlen..]);
        let e = open(&b).map(|_| ()).expect_err("refused");
        assert_eq!(e.code(), Code::TransferInvalid);
        assert_eq!(e.details().expect("details")["reason"], "duplicate_key");
    }

    #[test]
    fn only_a_clean_completed_run_under_the_pin_passes() {
        let pin = Sha256Hex::digest(b"pin");
        let rec = ExecutionRecord {
            version: 1,
            request_digest: pin.clone(),
            status: ExecutionStatus::Interrupted,
            outcome: ExecutionOutcome::Failed,
            runtime_identity: None,
            run: None,
            detail: None,
        };
        assert_eq!(rec.derived_outcome(&pin), ExecutionOutcome::Failed);
    }
}
