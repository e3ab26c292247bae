//! `collect` of a review task: the controller run under the collector's
//! retained, sealed state, then signed and uploaded like a command
//! collection (`docs/review.md`, "Collecting a review").
//!
//! ```text
//! COLLECTOR_DIR/executions/<sha256(exec op)>/   locked (flock, non-blocking) for a whole collect
//!   reservation.sealed         the descriptor and request digest (before any call), created exclusively
//!   review/call-NNNN.reservation.sealed, call-NNNN.outcome.sealed   the controller's journal
//!   record.sealed              the ReviewRecord
//!   transfer.sealed            the signed transfer (retained before upload)
//!   upload.sealed              the authority's answer
//! COLLECTOR_DIR/review-work/<sha256(exec op)>/<ticket>/   per-call private HOME, TMPDIR and cwd
//! ```
//!
//! The executable never sees the snapshot: the sources travel in the
//! prompt, read from the authority's CAS and bound by digest in every
//! reservation. Rerunning resumes from the journal and never dispatches a
//! call that was reserved (an outcome-less reservation is
//! `review_call_uncertain`).

use super::types::{ReviewProfile, ReviewRecord, ReviewRequest};
use super::wire::{CasSnapshot, KIND, ReviewDescriptor};
use super::{ClaudeCodeTransport, FileJournal, Review};
use crate::clock::rfc3339_millis;
use crate::collector::binding::BoundDescriptor;
use crate::collector::execution::{CollectRequest, CollectorKind, Execution, Uploader, drive};
use crate::collector::state::StateKey;
use crate::collector::transfer::{self, CollectorIdentity, MAX_TRANSFER_BYTES};
use crate::contract::canonical_bytes;
use crate::error::{Code, Error, Result};
use crate::store::{DataDir, private_fs};
use crate::wire::digest::Sha256Hex;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;

/// The durable reservation of one review execution.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reservation {
    version: u32,
    descriptor: ReviewDescriptor,
    request_digest: Sha256Hex,
    reserved_at: String,
}

/// Runs (or resumes) the review of a claimed review descriptor, signs the
/// record, retains the transfer and uploads it. Exits successfully with a
/// failed record as well as with a passed one.
pub fn collect(req: &CollectRequest<'_>, up: &dyn Uploader, descriptor: Value) -> Result<Value> {
    let d: ReviewDescriptor = serde_json::from_value(descriptor).map_err(|e| {
        Error::new(
            Code::InvalidInput,
            format!("review descriptor does not decode: {e}"),
        )
    })?;
    if d.version != 1 || d.kind != KIND {
        return Err(Error::new(
            Code::InvalidInput,
            "unsupported descriptor kind or version",
        ));
    }
    crate::contract::check_id("execution_operation_id", &d.execution_operation_id)?;
    drive::<ReviewKind>(req, up, &d)
}

/// The review kind of collector execution: the finite controller's calls
/// to the pinned reviewer, each reserved in the execution's own journal.
/// The driver's hold of the execution matters here as well: a second
/// collect running the same calls concurrently would dispatch a call
/// twice.
pub(crate) struct ReviewKind;

/// What a review execution settled before its record.
pub(crate) struct Started {
    /// Whether the reservation was retained (a resumed collect).
    resumed: bool,
    /// The installed profile the descriptor names.
    profile: ReviewProfile,
    /// The request regenerated from the descriptor and profile.
    request: ReviewRequest,
    /// Its digest (what the record answers).
    request_digest: Sha256Hex,
}

/// The retained reservation, which must name this descriptor.
fn retained_reservation(ex: &Execution, d: &ReviewDescriptor) -> Result<Option<Reservation>> {
    let Some(b) = ex.read("reservation", 64 * 1024)? else {
        return Ok(None);
    };
    let r: Reservation = serde_json::from_slice(&b).map_err(|e| {
        Error::new(
            Code::CollectorStateTampered,
            format!("a sealed review reservation does not decode: {e}"),
        )
    })?;
    if r.descriptor != *d {
        return Err(Error::new(
            Code::DescriptorMismatch,
            "this execution was reserved under another descriptor",
        ));
    }
    Ok(Some(r))
}

impl CollectorKind for ReviewKind {
    type Descriptor = ReviewDescriptor;
    type Started = Started;
    type Record = ReviewRecord;
    type Prepared = ();

    fn operation(d: &ReviewDescriptor) -> &str {
        &d.execution_operation_id
    }

    fn key_id(d: &ReviewDescriptor) -> &str {
        &d.registration.key_id
    }

    fn prepare(_cdir: &Path, _d: &ReviewDescriptor) -> Result<()> {
        Ok(())
    }

    fn in_progress(
        req: &CollectRequest<'_>,
        ex: &Execution,
        d: &ReviewDescriptor,
        transfer: Vec<u8>,
        record: Vec<u8>,
    ) -> Result<Value> {
        let reserved = retained_reservation(ex, d)?.ok_or_else(|| {
            Error::new(
                Code::CollectorStateTampered,
                "a retained review record without its reservation",
            )
        })?;
        let profile = req.authority.review_profile(d)?;
        let record = decode_record(&record, &reserved.request_digest)?;
        let mut v = answer(d, true, &profile, &record, &transfer, ex, Value::Null)?;
        v["in_progress"] = Value::Bool(true);
        Ok(v)
    }

    fn start(
        req: &CollectRequest<'_>,
        _cdir: &Path,
        ex: &Execution,
        d: &ReviewDescriptor,
        (): (),
    ) -> Result<Started> {
        let retained = retained_reservation(ex, d)?;
        let resumed = retained.is_some();
        // Read (and verified) before the authority is asked; the driver
        // reads them again under the same lock.
        let record_bytes = ex.read("record", MAX_TRANSFER_BYTES)?;
        ex.read("transfer", MAX_TRANSFER_BYTES)?;
        // Before any new call: the authority must still derive this exact
        // descriptor for an open attempt (a finished review needs no call and
        // only reads the profile).
        let profile = if record_bytes.is_none() {
            req.authority.recheck_review(d)?
        } else {
            req.authority.review_profile(d)?
        };
        let request = d.request(&profile)?;
        let request_digest = request.digest()?;
        match &retained {
            Some(r) if r.request_digest != request_digest => {
                return Err(Error::new(
                    Code::CollectorStateTampered,
                    "the retained reservation names another review request",
                ));
            }
            Some(_) => {}
            None => {
                crate::collector::crash_point("before_reserve");
                let res = Reservation {
                    version: 1,
                    descriptor: d.clone(),
                    request_digest: request_digest.clone(),
                    reserved_at: rfc3339_millis(req.clock.now()),
                };
                if !ex.create("reservation", &canonical_bytes(&res)?)? {
                    return Err(Error::new(
                        Code::ExecutionInProgress,
                        "another collect reserved this review execution meanwhile; nothing was called",
                    )
                    .with("execution_operation_id", d.execution_operation_id.as_str()));
                }
                crate::collector::crash_point("after_reserve");
            }
        }
        Ok(Started {
            resumed,
            profile,
            request,
            request_digest,
        })
    }

    fn decode_record(s: &Started, bytes: &[u8]) -> Result<ReviewRecord> {
        decode_record(bytes, &s.request_digest)
    }

    fn run(
        req: &CollectRequest<'_>,
        cdir: &Path,
        seed: &[u8; 32],
        ex: &Execution,
        d: &ReviewDescriptor,
        s: &Started,
    ) -> Result<ReviewRecord> {
        run(req, cdir, ex, seed, d, &s.profile, &s.request)
    }

    fn record_bytes(r: &ReviewRecord) -> Result<Vec<u8>> {
        r.bytes()
    }

    fn seal(
        d: &ReviewDescriptor,
        s: &Started,
        r: &ReviewRecord,
        key: &crate::wire::ed25519::Keypair,
    ) -> Result<Vec<u8>> {
        seal(d, &s.request, r, key)
    }

    fn answer(
        d: &ReviewDescriptor,
        s: &Started,
        r: &ReviewRecord,
        transfer: &[u8],
        ex: &Execution,
        upload: Value,
    ) -> Result<Value> {
        answer(d, s.resumed, &s.profile, r, transfer, ex, upload)
    }
}

/// A retained review record, which must answer `request_digest`.
fn decode_record(b: &[u8], request_digest: &Sha256Hex) -> Result<ReviewRecord> {
    let r: ReviewRecord = serde_json::from_slice(b).map_err(|e| {
        Error::new(
            Code::CollectorStateTampered,
            format!("a sealed review record does not decode: {e}"),
        )
    })?;
    if r.request_digest != *request_digest {
        return Err(Error::new(
            Code::CollectorStateTampered,
            "the retained review record answers another request",
        ));
    }
    Ok(r)
}

/// What `collect` prints for a review execution.
fn answer(
    d: &ReviewDescriptor,
    resumed: bool,
    profile: &super::ReviewProfile,
    record: &ReviewRecord,
    bytes: &[u8],
    ex: &Execution,
    upload: Value,
) -> Result<Value> {
    Ok(serde_json::to_value(Answer {
        attempt_id: &d.attempt_id,
        calls: record.calls.len(),
        coverage: &record.coverage,
        criteria: &record.criteria,
        detail: record.detail.as_deref(),
        execution_operation_id: &d.execution_operation_id,
        failure: record.failure.as_ref(),
        findings: &record.findings,
        findings_total: record.findings_total,
        kind: KIND,
        model: &profile.model,
        outcome: &record.outcome,
        record_digest: record.digest()?,
        resumed,
        retained: ex.path("transfer").display().to_string(),
        task_id: &d.task_id,
        transfer_digest: transfer::transfer_digest(bytes),
        transfer_size: bytes.len(),
        upload,
    })?)
}

/// What `collect` prints for a review execution (a JSON object: fields
/// in key order; `in_progress` is added for one still running).
#[derive(Serialize)]
struct Answer<'a> {
    attempt_id: &'a str,
    calls: usize,
    coverage: &'a super::types::CoverageResult,
    criteria: &'a [super::types::CriterionResult],
    detail: Option<&'a str>,
    execution_operation_id: &'a str,
    failure: Option<&'a super::types::ReviewFailure>,
    findings: &'a [super::types::Finding],
    findings_total: u64,
    kind: &'static str,
    model: &'a str,
    outcome: &'a super::types::ReviewOutcome,
    record_digest: Sha256Hex,
    resumed: bool,
    retained: String,
    task_id: &'a str,
    transfer_digest: Sha256Hex,
    transfer_size: usize,
    upload: Value,
}

/// The controller over the CAS snapshot, the sealed file journal and the
/// Claude Code transport with its private per-call directories.
fn run(
    req: &CollectRequest<'_>,
    cdir: &std::path::Path,
    ex: &Execution,
    seed: &[u8; 32],
    d: &ReviewDescriptor,
    profile: &super::ReviewProfile,
    request: &super::ReviewRequest,
) -> Result<ReviewRecord> {
    let dir = DataDir::open(req.root)?;
    let snapshot = CasSnapshot::open(dir.blobs()?, &d.revision, &d.manifest_sha256)?;
    let mut journal = FileJournal::open(&ex.dir.join("review"), &ex.tag, StateKey::derive(seed)?)?;
    let work = cdir.join("review-work");
    private_fs::ensure_private_dir(&work)?;
    // The operator's variables: from the pinned credential file when there
    // is one (the sudo wrapper clears the environment), else from the
    // environment. Either way only the reviewer's environment gets them.
    let credentials: Vec<(String, String)> = match req.review_credential_file {
        Some(f) => super::credential::load(f)?.into_vars(),
        None => profile
            .env
            .iter()
            .filter_map(|k| crate::env::var(k).map(|v| (k.clone(), v)))
            .collect(),
    };
    let mut transport = ClaudeCodeTransport::new(profile, &work.join(&ex.tag), credentials)?;
    super::run(
        &Review {
            snapshot: &snapshot,
            profile,
            request,
        },
        &mut journal,
        &mut transport,
    )
}

fn seal(
    d: &ReviewDescriptor,
    request: &super::ReviewRequest,
    record: &ReviewRecord,
    key: &crate::wire::ed25519::Keypair,
) -> Result<Vec<u8>> {
    let header = d.binding().header(
        KIND,
        d.profile_ref(),
        request.digest()?,
        CollectorIdentity {
            runtime: KIND.into(),
            runtime_identity_digest: None,
            agent_task_version: env!("CARGO_PKG_VERSION").into(),
        },
    )?;
    transfer::seal(header, &[request.bytes()?, record.bytes()?], key)
}
