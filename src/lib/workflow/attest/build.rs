//! Statements from authority state.
//!
//! One bundle per Change version: a test-result statement per command task
//! with retained evidence, one svr statement for the qualification verdict
//! and one agent-task receipt statement. A version the operator landed with
//! `--allow-protected-change` has no receipt and no tests ran on it: its
//! bundle holds no test result, an svr without `AGENT_TASK_QUALIFIED` that
//! says `AGENT_TASK_OPERATOR_OVERRIDE_WITHOUT_RECEIPT`, and a receipt
//! statement whose receipt is null and whose landing lists the protected
//! paths it changed. Every input is immutable once a
//! version landed (the landing row, its receipt, the retained transfers,
//! the installed requirement's bytes), and `timeCreated` is the landing's
//! intent time (when admission rechecked everything under the lock), so
//! the bundle of a landing — and with deterministic Ed25519 its envelopes —
//! is the same whenever it is built: `land` writes it as the note, a
//! re-run of `land` rebuilds it to finish a missing note, and `attest`
//! after landing prints the same bytes (as long as the key was not rotated).
//!
//! A review task (the finite review controller) with a retained review
//! transfer gets a test-result statement of its own, next to the command
//! tasks': its configuration names the review profile (basis, provider,
//! model, policy digest), the review record (its
//! `agent-task.review-record.v1` digest, outcome, failure and coverage),
//! the task and the transfer, so `verify` finds the one PASSED result each
//! receipt transfer needs. It says what the pinned reviewer answered, not
//! that the code is correct (`docs/review.md`).

use super::dsse::{self, Envelope};
use super::key::AuthorityKey;
use super::statement::{
    self, LandingFacts, ProtectedChanges, ReceiptPredicate, RegistrationKey, ResourceDescriptor,
    Statement, Svr, SvrVerifier, TestResult,
};
use crate::collector::transfer::{self, ExecutionOutcome, ExecutionRecord, ExecutionRequest};
use crate::contract::{ActionClass, WorkflowTask, canonical_bytes};
use crate::error::{Code, Error, Result};
use crate::store::{Connection, DataDir, OptionalExtension, params};
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::workflow::authority::change::{self, StoredSubject};
use crate::workflow::authority::receipt::{self, DOMAIN_RECEIPT, Receipt};
use serde_json::{Value, json};
use std::collections::BTreeMap;

/// What a statement is about, for file names and output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// test-result v0.1 of one command task.
    TestResult,
    /// svr v0.2: the qualification verdict.
    Svr,
    /// The agent-task receipt predicate.
    Receipt,
}

impl Kind {
    /// Short name.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TestResult => "test-result",
            Kind::Svr => "svr",
            Kind::Receipt => "receipt",
        }
    }
}

/// One statement, serialised.
#[derive(Debug, Clone)]
pub struct Payload {
    /// Its kind.
    pub kind: Kind,
    /// The step id (test results) or empty.
    pub label: String,
    /// The statement's compact JSON bytes.
    pub bytes: Vec<u8>,
}

/// Every statement of one Change version.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// Repository.
    pub repository: String,
    /// Change.
    pub change_id: String,
    /// Version.
    pub change_version: u64,
    /// Revision.
    pub revision: Sha256Hex,
    /// The landed commit, when landed on a git work tree.
    pub git_commit: Option<String>,
    /// Whether the version landed.
    pub landed: bool,
    /// The receipt digest (`None`: an override landing without a receipt).
    pub receipt_digest: Option<String>,
    /// Whether the operator's `--allow-protected-change` landed it (then
    /// there is no receipt and the statements do not claim qualification).
    pub allow_protected_change: bool,
    /// The statements: test results, then the verdict, then the receipt.
    pub payloads: Vec<Payload>,
}

impl Bundle {
    /// Signs every statement with the authority key.
    pub fn sign(&self, key: &AuthorityKey) -> Vec<Envelope> {
        self.payloads
            .iter()
            .map(|p| {
                Envelope::sign(
                    dsse::PAYLOAD_TYPE_IN_TOTO,
                    &p.bytes,
                    key.keypair(),
                    key.key_id(),
                )
            })
            .collect()
    }
}

/// The note bytes: one envelope per line (JSON Lines).
pub fn jsonl(envelopes: &[Envelope]) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for e in envelopes {
        out.extend_from_slice(e.to_line()?.as_bytes());
        out.push(b'\n');
    }
    Ok(out)
}

struct LandingRow {
    repo_id: String,
    receipt_digest: Option<String>,
    old_head: String,
    git_commit: Option<String>,
    intent_at: String,
    landed_at: String,
    allow_protected_change: bool,
    protected_changes: i64,
}

/// The bundle of a landed Change version (`None`: that version did not land).
pub fn for_landing(
    dir: &DataDir,
    a: &Connection,
    change_id: &str,
    version: u64,
) -> Result<Option<Bundle>> {
    let row = a
        .query_row(
            "SELECT repo_id, receipt_digest, old_head, git_commit, intent_at, landed_at, \
             allow_protected_change, protected_changes FROM landings \
             WHERE change_id = ?1 AND change_version = ?2 AND state = 'landed'",
            params![change_id, version as i64],
            |r| {
                Ok(LandingRow {
                    repo_id: r.get(0)?,
                    receipt_digest: r.get(1)?,
                    old_head: r.get(2)?,
                    git_commit: r.get(3)?,
                    intent_at: r.get(4)?,
                    landed_at: r.get::<_, Option<String>>(5)?.unwrap_or_default(),
                    allow_protected_change: r.get::<_, i64>(6)? == 1,
                    protected_changes: r.get(7)?,
                })
            },
        )
        .optional()?;
    let Some(row) = row else {
        return Ok(None);
    };
    let s = change::subject(a, change_id, version)?;
    let repo = crate::workflow::authority::repository(a, &row.repo_id)?;
    let old_head = Sha256Hex::parse(&row.old_head)?;
    // Exactly one of: a receipt, or the operator's override of protected
    // paths (whose count the landing row recorded and which the manifests
    // still show). Anything else is a damaged row, never a note.
    let (receipt, protected_changes) = match (&row.receipt_digest, row.allow_protected_change) {
        (Some(d), false) if row.protected_changes == 0 => (
            Some((load_receipt(a, d)?, d.clone())),
            ProtectedChanges::default(),
        ),
        (None, true) => {
            let p = protected_changes(dir, a, &s, &old_head)?;
            if p.is_empty() || i64::try_from(p.total).ok() != Some(row.protected_changes) {
                return Err(Error::new(
                    Code::IntegrityError,
                    "the landing's protected changes differ from the revision's",
                ));
            }
            (None, p)
        }
        _ => {
            return Err(Error::new(
                Code::IntegrityError,
                "a landing has neither a receipt nor an operator's override",
            ));
        }
    };
    let landing = LandingFacts {
        repository: row.repo_id.clone(),
        target: repo.target,
        change_id: change_id.to_owned(),
        change_version: version,
        git_commit: row.git_commit.clone(),
        old_head,
        landed_at: row.landed_at,
        allow_protected_change: row.allow_protected_change,
        protected_changes,
    };
    assemble(dir, a, &s, receipt, row.intent_at, Some(landing), None).map(Some)
}

/// The protected changes of a subject's revision relative to the head it
/// landed on, from the subject's requirement (the one installed when it
/// landed: a current subject names it) and both manifests, with the
/// revision's checkout findings.
fn protected_changes(
    dir: &DataDir,
    a: &Connection,
    s: &StoredSubject,
    old_head: &Sha256Hex,
) -> Result<ProtectedChanges> {
    let (_, bytes) = requirement(a, s)?;
    let patterns = crate::contract::workflow::Workflow::parse(&bytes)?.protected_paths()?;
    let candidate = change::load_manifest(a, dir, &s.context.revision)?;
    crate::workflow::authority::checkout::protected_changes(a, dir, &patterns, old_head, &candidate)
}

/// The subject's installed requirement: its digest and canonical bytes,
/// checked against each other.
fn requirement(a: &Connection, s: &StoredSubject) -> Result<(String, Vec<u8>)> {
    let (req_digest, req_bytes): (String, Vec<u8>) = a
        .query_row(
            "SELECT requirement_digest, bytes FROM requirements WHERE requirement_digest = ?1",
            params![s.context.requirement_digest.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?
        .ok_or_else(|| Error::new(Code::IntegrityError, "the subject's requirement is missing"))?;
    if domain_digest(crate::contract::workflow::DOMAIN_REQUIREMENT, &req_bytes).as_str()
        != req_digest
    {
        return Err(Error::new(
            Code::IntegrityError,
            "a stored requirement does not match its digest",
        ));
    }
    Ok((req_digest, req_bytes))
}

/// The bundle of a Change whose current subject qualifies now (every
/// admission recheck `land` makes; `not_qualified` otherwise).
pub fn for_qualified(
    dir: &DataDir,
    j: Option<&Connection>,
    a: &Connection,
    change_id: &str,
    now: &str,
    now_ms: i64,
) -> Result<Bundle> {
    qualified_bundle(dir, j, a, change_id, now, now_ms, None)
}

/// The bundle of a proposed candidate commit (`propose`): the statements
/// of a Change whose current subject qualifies now, as
/// [`for_qualified`], with the candidate commit as their second subject,
/// and no landing (no `AGENT_TASK_LANDED`, the receipt statement records
/// none: `verify` refuses it as not landed). `time_created` is the
/// proposal's, so a rerun builds the same bytes.
pub fn for_proposal(
    dir: &DataDir,
    j: Option<&Connection>,
    a: &Connection,
    change_id: &str,
    commit: &str,
    time_created: &str,
    now_ms: i64,
) -> Result<Bundle> {
    qualified_bundle(dir, j, a, change_id, time_created, now_ms, Some(commit))
}

/// The statements of a Change whose current subject qualifies now (the
/// admission recheck `land` makes, without the operator's override), with
/// `commit` as their second subject when given.
fn qualified_bundle(
    dir: &DataDir,
    j: Option<&Connection>,
    a: &Connection,
    change_id: &str,
    time_created: &str,
    now_ms: i64,
    commit: Option<&str>,
) -> Result<Bundle> {
    let ch = change::change(a, change_id)?;
    // Without the operator's override, admission needs a receipt and a
    // revision that leaves the protected paths alone.
    let ad = receipt::admit(j, a, dir, &ch.repository, change_id, now_ms, false)?;
    let stored = ad
        .receipt
        .ok_or_else(|| Error::internal("admission without the override returned no receipt"))?;
    let r = load_receipt(a, &stored)?;
    assemble(
        dir,
        a,
        &ad.subject,
        Some((r, stored)),
        time_created.to_owned(),
        None,
        commit,
    )
}

fn load_receipt(a: &Connection, digest: &str) -> Result<Receipt> {
    let bytes: Vec<u8> = a
        .query_row(
            "SELECT receipt_json FROM receipts WHERE receipt_digest = ?1",
            params![digest],
            |r| r.get(0),
        )
        .optional()?
        .ok_or_else(|| Error::new(Code::IntegrityError, "the landing's receipt is missing"))?;
    let r: Receipt = serde_json::from_slice(&bytes).map_err(|e| {
        Error::new(
            Code::IntegrityError,
            format!("a stored receipt is malformed: {e}"),
        )
    })?;
    if r.digest()?.as_str() != digest {
        return Err(Error::new(
            Code::IntegrityError,
            "a stored receipt does not match its digest",
        ));
    }
    Ok(r)
}

/// A retained transfer, opened.
struct Evidence {
    transfer_digest: String,
    header: transfer::TransferHeader,
    request: ExecutionRequest,
    record: ExecutionRecord,
}

fn load_evidence(
    dir: &DataDir,
    a: &Connection,
    sql_where: &str,
    v: &str,
) -> Result<Option<Evidence>> {
    let sql = format!(
        "SELECT transfer_digest, size FROM imported_transfers WHERE {sql_where} \
         ORDER BY imported_at DESC, rowid DESC LIMIT 1"
    );
    let row: Option<(String, i64)> = a
        .query_row(&sql, params![v], |r| Ok((r.get(0)?, r.get(1)?)))
        .optional()?;
    let Some((digest, size)) = row else {
        return Ok(None);
    };
    let size =
        u64::try_from(size).map_err(|_| Error::new(Code::IntegrityError, "negative size"))?;
    let bytes = dir.blobs()?.get(
        &Sha256Hex::parse(&digest)?,
        Some(size),
        transfer::MAX_TRANSFER_BYTES,
    )?;
    let env = transfer::open(&bytes)?;
    let (Some(req), Some(rec), 2) = (env.records.first(), env.records.get(1), env.records.len())
    else {
        return Err(Error::new(
            Code::IntegrityError,
            "a retained transfer does not hold two records",
        ));
    };
    Ok(Some(Evidence {
        transfer_digest: digest,
        request: serde_json::from_slice(req)?,
        record: serde_json::from_slice(rec)?,
        header: env.header,
    }))
}

fn annotations(v: Value) -> Option<BTreeMap<String, Value>> {
    match v {
        Value::Object(m) => Some(m.into_iter().filter(|(_, v)| !v.is_null()).collect()),
        _ => None,
    }
}

fn test_result(
    subject: &[ResourceDescriptor],
    profile: &str,
    t: &WorkflowTask,
    ev: &Evidence,
) -> Result<Statement<TestResult>> {
    let recipe = canonical_bytes(&ev.request.recipe)?;
    let observed = ev.record.runtime_identity.as_ref();
    let h = &ev.header;
    let run = ev.record.run.as_ref();
    let configuration = vec![
        ResourceDescriptor {
            name: Some("recipe".into()),
            digest: [("sha256".into(), Sha256Hex::digest(&recipe).to_string())].into(),
            content: Some(dsse::encode_b64(&recipe)),
            media_type: Some("application/json".into()),
            ..ResourceDescriptor::default()
        },
        ResourceDescriptor {
            name: Some("runtime-identity".into()),
            digest: [(
                statement::ALG_RUNTIME.into(),
                ev.request.runtime_identity_digest.to_string(),
            )]
            .into(),
            annotations: annotations(json!({
                "runtime": ev.request.runtime.as_str(),
                "ociImage": ev.request.oci_image,
                "program": observed.map(|i| i.program.clone()),
                "programSha256": observed.map(|i| i.program_sha256.to_string()),
                "version": observed.map(|i| i.version.clone()),
                "observedDigest": observed.map(|i| i.digest.to_string()),
            })),
            ..ResourceDescriptor::default()
        },
        ResourceDescriptor {
            name: Some("collector-profile".into()),
            uri: Some(format!(
                "urn:agent-task:collector-profile:{}",
                h.collector_profile_id
            )),
            digest: [(
                statement::ALG_PROFILE.into(),
                h.collector_profile_digest.to_string(),
            )]
            .into(),
            annotations: annotations(json!({
                "profile": profile,
                "registrationId": h.registration.registration_id,
                "executorId": h.registration.executor_id,
                "registrationEpoch": h.registration.epoch,
                "keyId": h.registration.key_id,
            })),
            ..ResourceDescriptor::default()
        },
        ResourceDescriptor {
            name: Some("task".into()),
            uri: Some(format!("urn:agent-task:task:{}", t.task_id)),
            digest: [(statement::ALG_TASK.into(), t.digest()?.to_string())].into(),
            annotations: annotations(json!({
                "stepId": t.subject.step_id,
                "required": t.required,
                "attemptId": h.attempt_id,
                "fence": h.fence,
            })),
            ..ResourceDescriptor::default()
        },
        ResourceDescriptor {
            name: Some("transfer".into()),
            digest: [("sha256".into(), ev.transfer_digest.clone())].into(),
            annotations: annotations(json!({
                "status": ev.record.status,
                "exitCode": run.and_then(|r| r.exit_code),
                "signal": run.and_then(|r| r.signal),
                "timedOut": run.map(|r| r.timed_out),
                "startedAt": run.map(|r| r.started_at.clone()),
                "durationMs": run.map(|r| r.duration_ms),
            })),
            ..ResourceDescriptor::default()
        },
    ];
    let passed = ev.record.outcome == ExecutionOutcome::Passed;
    let step = vec![t.subject.step_id.clone()];
    Ok(Statement {
        statement_type: statement::STATEMENT_V1.into(),
        subject: subject.to_vec(),
        predicate_type: statement::TEST_RESULT_V0_1.into(),
        predicate: TestResult {
            result: if passed { "PASSED" } else { "FAILED" }.into(),
            configuration,
            url: None,
            passed_tests: if passed { step.clone() } else { Vec::new() },
            warned_tests: Vec::new(),
            failed_tests: if passed { Vec::new() } else { step },
        },
    })
}

/// The digest of a task's most recently imported transfer.
fn latest_transfer(a: &Connection, task_id: &str) -> Result<Option<String>> {
    Ok(a.query_row(
        "SELECT transfer_digest FROM imported_transfers WHERE task_id = ?1 \
         ORDER BY imported_at DESC, rowid DESC LIMIT 1",
        params![task_id],
        |r| r.get(0),
    )
    .optional()?)
}

/// The test-result statement of a review task's retained review transfer.
fn review_result(
    dir: &DataDir,
    a: &Connection,
    subject: &[ResourceDescriptor],
    profile: &str,
    t: &WorkflowTask,
    transfer_digest: &str,
) -> Result<Statement<TestResult>> {
    use crate::collector::review::{ReviewRecord, ReviewRequest, types::ReviewOutcome};
    let size: i64 = a.query_row(
        "SELECT size FROM imported_transfers WHERE transfer_digest = ?1",
        params![transfer_digest],
        |r| r.get(0),
    )?;
    let size =
        u64::try_from(size).map_err(|_| Error::new(Code::IntegrityError, "negative size"))?;
    let bytes = dir.blobs()?.get(
        &Sha256Hex::parse(transfer_digest)?,
        Some(size),
        transfer::MAX_TRANSFER_BYTES,
    )?;
    let env = transfer::open(&bytes)?;
    let (Some(req), Some(rec), 2) = (env.records.first(), env.records.get(1), env.records.len())
    else {
        return Err(Error::new(
            Code::IntegrityError,
            "a retained transfer does not hold two records",
        ));
    };
    if env.header.kind != crate::collector::review::wire::KIND {
        return Err(Error::new(
            Code::IntegrityError,
            "a review task's retained transfer is not a review transfer",
        ));
    }
    let request: ReviewRequest = serde_json::from_slice(req)?;
    let record: ReviewRecord = serde_json::from_slice(rec)?;
    let h = &env.header;
    let configuration = vec![
        ResourceDescriptor {
            name: Some("review-profile".into()),
            uri: Some(format!(
                "urn:agent-task:review-profile:{}",
                h.collector_profile_id
            )),
            digest: [(
                statement::ALG_PROFILE.into(),
                h.collector_profile_digest.to_string(),
            )]
            .into(),
            annotations: annotations(json!({
                "profile": profile,
                "basis": request.basis.as_str(),
                "provider": request.provider,
                "model": request.model,
                "policyDigest": request.policy_digest.to_string(),
                "registrationId": h.registration.registration_id,
                "executorId": h.registration.executor_id,
                "registrationEpoch": h.registration.epoch,
                "keyId": h.registration.key_id,
            })),
            ..ResourceDescriptor::default()
        },
        ResourceDescriptor {
            name: Some("review-record".into()),
            digest: [(
                statement::ALG_REVIEW_RECORD.into(),
                record.digest()?.to_string(),
            )]
            .into(),
            annotations: annotations(json!({
                "outcome": record.outcome,
                "failure": record.failure,
                "calls": record.calls.len(),
                "filesSelected": record.coverage.selected,
                "filesReviewed": record.coverage.reviewed,
                "coverageComplete": record.coverage.complete,
                "findings": record.findings_total,
            })),
            ..ResourceDescriptor::default()
        },
        ResourceDescriptor {
            name: Some("task".into()),
            uri: Some(format!("urn:agent-task:task:{}", t.task_id)),
            digest: [(statement::ALG_TASK.into(), t.digest()?.to_string())].into(),
            annotations: annotations(json!({
                "stepId": t.subject.step_id,
                "required": t.required,
                "actionClass": "review",
                "attemptId": h.attempt_id,
                "fence": h.fence,
            })),
            ..ResourceDescriptor::default()
        },
        ResourceDescriptor {
            name: Some("transfer".into()),
            digest: [("sha256".into(), transfer_digest.to_owned())].into(),
            annotations: annotations(json!({"kind": h.kind})),
            ..ResourceDescriptor::default()
        },
    ];
    let passed = record.outcome == ReviewOutcome::Passed;
    let step = vec![t.subject.step_id.clone()];
    Ok(Statement {
        statement_type: statement::STATEMENT_V1.into(),
        subject: subject.to_vec(),
        predicate_type: statement::TEST_RESULT_V0_1.into(),
        predicate: TestResult {
            result: if passed { "PASSED" } else { "FAILED" }.into(),
            configuration,
            url: None,
            passed_tests: if passed { step.clone() } else { Vec::new() },
            warned_tests: Vec::new(),
            failed_tests: if passed { Vec::new() } else { step },
        },
    })
}

/// The statements of one subject. `receipt` is `None` only for a landing
/// the operator's override let in (`landing.allow_protected_change`).
fn assemble(
    dir: &DataDir,
    a: &Connection,
    s: &StoredSubject,
    receipt: Option<(Receipt, String)>,
    time_created: String,
    landing: Option<LandingFacts>,
    proposed_commit: Option<&str>,
) -> Result<Bundle> {
    let overridden = landing.as_ref().is_some_and(|l| l.allow_protected_change);
    if overridden == receipt.is_some() {
        return Err(Error::internal(
            "statements need a receipt unless the operator's override landed them",
        ));
    }
    let rev = s.context.revision.as_str();
    let manifest_sha: String = a.query_row(
        "SELECT manifest_sha256 FROM revisions WHERE revision = ?1",
        params![rev],
        |r| r.get(0),
    )?;
    let mut subject = vec![ResourceDescriptor::named(
        statement::SUBJECT_REVISION,
        &[(statement::ALG_REVISION, rev), ("sha256", &manifest_sha)],
    )];
    if let Some(c) = landing
        .as_ref()
        .and_then(|l| l.git_commit.as_deref())
        .or(proposed_commit)
    {
        subject.push(ResourceDescriptor::named(
            statement::SUBJECT_COMMIT,
            &[(statement::ALG_GIT_COMMIT, c)],
        ));
    }
    let mut payloads = Vec::new();
    // An override landing has no receipt and no test ran on its revision
    // (collector-claim refuses it): it gets no test result at all.
    let tested = receipt.as_ref().map(|(r, _)| r);
    for t in s.tasks.iter().filter(|_| tested.is_some()) {
        match t.action_class {
            ActionClass::Command => {
                let ev = match tested
                    .and_then(|r| r.transfers.iter().find(|x| x.task_id == t.task_id))
                {
                    Some(x) => load_evidence(dir, a, "transfer_digest = ?1", &x.transfer_digest)?,
                    None => load_evidence(dir, a, "task_id = ?1", &t.task_id)?,
                };
                let Some(ev) = ev else { continue };
                let st = test_result(&subject, &s.context.profile, t, &ev)?;
                payloads.push(Payload {
                    kind: Kind::TestResult,
                    label: t.subject.step_id.clone(),
                    bytes: statement::to_payload(&st)?,
                });
            }
            ActionClass::Review => {
                let digest = match tested
                    .and_then(|r| r.transfers.iter().find(|x| x.task_id == t.task_id))
                {
                    Some(x) => Some(x.transfer_digest.clone()),
                    None => latest_transfer(a, &t.task_id)?,
                };
                let Some(digest) = digest else { continue };
                let st = review_result(dir, a, &subject, &s.context.profile, t, &digest)?;
                payloads.push(Payload {
                    kind: Kind::TestResult,
                    label: t.subject.step_id.clone(),
                    bytes: statement::to_payload(&st)?,
                });
            }
            // Assertions and observations are never evidence.
            ActionClass::Assertion | ActionClass::Observation => {}
        }
    }
    let (req_digest, req_bytes) = requirement(a, s)?;
    let mut properties = Vec::new();
    if !overridden {
        properties.push(statement::PROP_QUALIFIED.to_owned());
        properties.push(statement::PROP_PROTECTED_UNCHANGED.to_owned());
    }
    if landing.is_some() {
        properties.push(statement::PROP_LANDED.to_owned());
    }
    if overridden {
        properties.push(statement::PROP_OVERRIDE.to_owned());
    }
    let svr = Statement {
        statement_type: statement::STATEMENT_V1.into(),
        subject: subject.clone(),
        predicate_type: statement::SVR_V0_2.into(),
        predicate: Svr {
            verifier: SvrVerifier {
                id: statement::VERIFIER_ID.into(),
                policies: vec![ResourceDescriptor {
                    name: Some("workflow-requirement".into()),
                    uri: Some(format!(
                        "urn:agent-task:requirement:{}:{}",
                        s.context.repository, s.context.profile
                    )),
                    digest: [
                        (statement::ALG_REQUIREMENT.into(), req_digest.clone()),
                        ("sha256".into(), Sha256Hex::digest(&req_bytes).to_string()),
                    ]
                    .into(),
                    media_type: Some("application/json".into()),
                    annotations: annotations(json!({
                        "repository": s.context.repository,
                        "profile": s.context.profile,
                        "policyEpoch": s.context.policy_epoch,
                    })),
                    ..ResourceDescriptor::default()
                }],
            },
            time_created,
            properties,
        },
    };
    payloads.push(Payload {
        kind: Kind::Svr,
        label: String::new(),
        bytes: statement::to_payload(&svr)?,
    });
    let mut registration_keys = Vec::new();
    for x in tested.map(|r| r.transfers.as_slice()).unwrap_or_default() {
        let r = &x.registration;
        if registration_keys
            .iter()
            .any(|k: &RegistrationKey| k.registration_id == r.registration_id)
        {
            continue;
        }
        let public_key: String = a
            .query_row(
                "SELECT public_key FROM registrations WHERE registration_id = ?1",
                params![r.registration_id],
                |row| row.get(0),
            )
            .optional()?
            .ok_or_else(|| {
                Error::new(
                    Code::IntegrityError,
                    "a receipt names a missing registration",
                )
            })?;
        registration_keys.push(RegistrationKey {
            registration_id: r.registration_id.clone(),
            executor_id: r.executor_id.clone(),
            epoch: r.epoch,
            key_id: r.key_id.clone(),
            public_key,
        });
    }
    let git_commit = landing
        .as_ref()
        .and_then(|l| l.git_commit.clone())
        .or(proposed_commit.map(str::to_owned));
    let landed = landing.is_some();
    let (receipt, receipt_digest) = match receipt {
        Some((r, d)) => (Some(r), Some(d)),
        None => (None, None),
    };
    let authority = match &receipt {
        Some(r) => r.audience.clone(),
        None => crate::workflow::authority::collector::audience(a)?,
    };
    let rs = Statement {
        statement_type: statement::STATEMENT_V1.into(),
        subject,
        predicate_type: statement::RECEIPT_V1.into(),
        predicate: ReceiptPredicate {
            authority,
            receipt_digest: receipt_digest
                .as_deref()
                .map(Sha256Hex::parse)
                .transpose()?,
            receipt,
            registration_keys,
            landing,
        },
    };
    if let (Some(r), Some(d)) = (&rs.predicate.receipt, &receipt_digest) {
        debug_assert_eq!(
            domain_digest(DOMAIN_RECEIPT, &canonical_bytes(r)?).as_str(),
            d
        );
    }
    payloads.push(Payload {
        kind: Kind::Receipt,
        label: String::new(),
        bytes: statement::to_payload(&rs)?,
    });
    Ok(Bundle {
        repository: s.context.repository.clone(),
        change_id: s.change.change_id.clone(),
        change_version: s.version,
        revision: s.context.revision.clone(),
        git_commit,
        landed,
        receipt_digest,
        allow_protected_change: overridden,
        payloads,
    })
}
