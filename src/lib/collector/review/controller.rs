//! The finite review controller: plan, reserve, dispatch, record, derive.
//!
//! [`run`] derives the plan, then for each planned call in order: prepares
//! it, reserves it durably in the journal, dispatches it through the
//! transport and records its outcome. It stops at the first call that did
//! not give a valid answer (no retry, no fallback, no other model) and when
//! the wall budget is spent. Rerunning resumes from the journal: a call with
//! a retained outcome is not dispatched again, and a reserved call without
//! one is never dispatched again either: its result is unknown, so the
//! review fails with `review_call_uncertain`.
//!
//! [`derive_record`] is a pure function of the plan and the trace; the
//! authority's replay runs the same code against retained envelopes.

use super::answer::{self, AnswerOutcome};
use super::journal::{CallOutcome, Reservation, ReviewJournal, TraceEntry};
use super::plan::{self, CallRequest, Plan, Snapshot};
use super::transport::{self, Dispatch, PreparedCall, Transport};
use super::types::{
    BudgetUse, CallStatus, CallSummary, CoverageResult, CriterionResult, Finding, ReviewFailure,
    ReviewOutcome, ReviewProfile, ReviewRecord, ReviewRequest, Severity, Verdict,
};
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use std::collections::BTreeMap;

/// Most findings a record lists (all are counted).
pub const MAX_RECORD_FINDINGS: usize = 256;
/// Most paths a coverage list shows (all are counted).
pub const MAX_LISTED_PATHS: usize = 32;

/// One review execution's inputs.
pub struct Review<'a> {
    /// The immutable revision.
    pub snapshot: &'a dyn Snapshot,
    /// The installed profile.
    pub profile: &'a ReviewProfile,
    /// The request (subject + profile).
    pub request: &'a ReviewRequest,
}

/// What one call came to.
struct Classified {
    status: CallStatus,
    detail: Option<String>,
    session_id: Option<String>,
    models: Vec<String>,
    input_tokens: u64,
    output_tokens: u64,
    answer: Option<answer::Answer>,
}

impl Classified {
    fn status(status: CallStatus, detail: impl Into<String>) -> Classified {
        Classified {
            status,
            detail: Some(answer::shorten(&detail.into())),
            session_id: None,
            models: Vec::new(),
            input_tokens: 0,
            output_tokens: 0,
            answer: None,
        }
    }
}

/// Derives a call's status from its reservation and retained outcome, in
/// the order of `docs/review.md` ("Call statuses").
fn classify(
    profile: &ReviewProfile,
    req: &CallRequest,
    outcome: Option<&CallOutcome>,
) -> Classified {
    let Some(o) = outcome else {
        return Classified::status(
            CallStatus::Uncertain,
            "the call was reserved and its outcome is unknown (the collector stopped during it); \
             it is never dispatched again",
        );
    };
    let obs = &o.observation;
    if o.version != 1 || o.index != req.index || o.ticket != req.ticket {
        return Classified::status(
            CallStatus::Malformed,
            "the outcome does not answer its reservation",
        );
    }
    let env = match o.envelope_bytes() {
        Ok(b) => b,
        Err(e) => return Classified::status(CallStatus::Malformed, e),
    };
    if env.len() as u64 != obs.envelope_bytes || Sha256Hex::digest(&env) != obs.envelope_sha256 {
        return Classified::status(
            CallStatus::Malformed,
            "the retained envelope is not the one observed (length or SHA-256 differ)",
        );
    }
    let want = transport::pinned(&profile.executable);
    if obs.executable_before != want {
        return Classified::status(
            CallStatus::ExecutableMismatch,
            "the pinned executable's bytes were not the pinned ones before the call; it was not used",
        );
    }
    if !obs.dispatched {
        return Classified::status(
            CallStatus::Unavailable,
            obs.spawn_error
                .clone()
                .unwrap_or_else(|| "the executable was not started".into()),
        );
    }
    if obs.executable_after != want {
        return Classified::status(
            CallStatus::ExecutableMismatch,
            "the pinned executable's bytes changed during the call; its answer is not used",
        );
    }
    if obs.timed_out {
        return Classified::status(
            CallStatus::TimedOut,
            format!("no answer within {} ms", req.timeout_ms),
        );
    }
    if obs.stdout_capped || obs.envelope_bytes > req.max_output_bytes {
        return Classified::status(
            CallStatus::OutputExceeded,
            format!("the response exceeded {} bytes", req.max_output_bytes),
        );
    }
    let exited_ok = obs.exit_code == Some(0) && obs.signal.is_none();
    let e = match answer::parse_envelope(&env) {
        Ok(e) => e,
        Err(why) if exited_ok => return Classified::status(CallStatus::Malformed, why),
        Err(_) => {
            let tail = obs.stderr_tail.trim();
            return Classified::status(
                CallStatus::ExitFailure,
                format!(
                    "the executable exited with {} and no result object{}{}",
                    obs.exit_code.map_or_else(
                        || format!("signal {}", obs.signal.unwrap_or(0)),
                        |c| format!("code {c}")
                    ),
                    if tail.is_empty() { "" } else { ": " },
                    tail
                ),
            );
        }
    };
    let mut c = Classified {
        status: CallStatus::Answered,
        detail: None,
        session_id: Some(e.session_id.clone()),
        models: e.models.clone(),
        input_tokens: e.input_tokens,
        output_tokens: e.output_tokens,
        answer: None,
    };
    let fail = |mut c: Classified, status, detail: String| {
        c.status = status;
        c.detail = Some(answer::shorten(&detail));
        c
    };
    if e.is_error || e.subtype != "success" {
        let d = format!(
            "the response reports an error (subtype {}, is_error {}): {}",
            e.subtype,
            e.is_error,
            e.detail.as_deref().unwrap_or("")
        );
        return fail(c, CallStatus::ErrorResult, d);
    }
    if !exited_ok {
        return fail(
            c,
            CallStatus::ExitFailure,
            "the executable exited non-zero after a success result".into(),
        );
    }
    if e.session_id != req.session_id {
        return fail(
            c,
            CallStatus::Malformed,
            format!(
                "the response reports session {}, not this call's {}",
                e.session_id, req.session_id
            ),
        );
    }
    if !e.models.is_empty() && !e.models.contains(&profile.model) {
        return fail(
            c,
            CallStatus::ModelMismatch,
            format!(
                "the response reports models {:?}, not the pinned {}",
                e.models, profile.model
            ),
        );
    }
    let Some(so) = &e.structured_output else {
        return fail(
            c,
            CallStatus::Malformed,
            "the response has no structured_output".into(),
        );
    };
    match answer::check_answer(so, &profile.criteria, req) {
        Ok(a) => {
            c.answer = Some(a);
            c
        }
        Err(why) => fail(c, CallStatus::Malformed, why),
    }
}

fn stop_after(c: &Classified) -> bool {
    c.status != CallStatus::Answered
}

fn remaining(profile: &ReviewProfile, wall: u64) -> u64 {
    profile.budgets.max_total_wall_ms.saturating_sub(wall)
}

/// Runs (or resumes) one review. See the module docs.
pub fn run(
    r: &Review<'_>,
    journal: &mut dyn ReviewJournal,
    transport: &mut dyn Transport,
) -> Result<ReviewRecord> {
    r.profile.validate()?;
    r.request.check_profile(r.profile)?;
    if transport.basis() != r.profile.basis {
        return Err(Error::new(
            Code::ProfileInvalid,
            format!(
                "the transport serves basis {}, the profile pins {}",
                transport.basis().as_str(),
                r.profile.basis.as_str()
            ),
        ));
    }
    let plan = plan::derive(r.snapshot, r.profile)?;
    let mut trace: Vec<TraceEntry> = Vec::new();
    if plan.early.is_none() {
        let mut wall = 0u64;
        for i in 0..plan.calls.len() as u32 {
            let left = remaining(r.profile, wall);
            let retained = journal.reservation(i)?;
            if retained.is_none() && left == 0 {
                break;
            }
            let (req, prompt) = plan::prepare(r.snapshot, r.profile, r.request, &plan, i, left)?;
            let reservation = Reservation::new(req)?;
            let outcome = match retained {
                Some(have) => {
                    if have != reservation {
                        return Err(Error::new(
                            Code::CollectorStateTampered,
                            format!(
                                "the retained reservation of call {i} is not the request the controller prepares"
                            ),
                        ));
                    }
                    journal.outcome(i)?
                }
                None => {
                    journal.reserve(&reservation)?;
                    crate::collector::crash_point("review_after_reserve");
                    let call = PreparedCall {
                        reservation: reservation.clone(),
                        prompt,
                    };
                    match transport.call(&call)? {
                        Dispatch::Done(o) => {
                            if o.index != i || o.ticket != reservation.request.ticket {
                                return Err(transport::mismatch(format!(
                                    "the outcome given for call {i} answers another reservation"
                                )));
                            }
                            journal.record(&o)?;
                            crate::collector::crash_point("review_after_outcome");
                            Some(*o)
                        }
                        Dispatch::Unknown => None,
                    }
                }
            };
            let c = classify(r.profile, &reservation.request, outcome.as_ref());
            let stop = outcome.is_none() || stop_after(&c);
            if let Some(o) = &outcome {
                wall = wall.saturating_add(o.observation.duration_ms);
            }
            trace.push(TraceEntry {
                reservation,
                outcome,
            });
            if stop {
                break;
            }
        }
    }
    derive_record(&plan, r.profile, r.request, trace)
}

fn first<T: Clone>(v: &[T]) -> Vec<T> {
    v.iter().take(MAX_LISTED_PATHS).cloned().collect()
}

/// The record of a review: a pure function of the plan and the trace
/// (`docs/review.md`, "The record").
pub fn derive_record(
    plan: &Plan,
    profile: &ReviewProfile,
    request: &ReviewRequest,
    trace: Vec<TraceEntry>,
) -> Result<ReviewRecord> {
    let mut failure: Option<ReviewFailure> = plan.early.as_ref().map(|(f, _)| *f);
    let mut detail: Option<String> = plan.early.as_ref().map(|(_, d)| answer::shorten(d));
    let mut calls = Vec::with_capacity(trace.len());
    let mut findings = Vec::new();
    let mut findings_total = 0u64;
    let mut crit_failed = vec![false; profile.criteria.len()];
    let mut confirmed: BTreeMap<String, u32> = BTreeMap::new();
    let mut answered = 0usize;
    let mut budget = BudgetUse {
        budgets: profile.budgets.clone(),
        calls_planned: plan.calls.len() as u32,
        calls_reserved: trace.len() as u32,
        source_bytes: 0,
        largest_call_source_bytes: 0,
        output_bytes: 0,
        largest_output_bytes: 0,
        wall_ms: 0,
        input_tokens: 0,
        output_tokens: 0,
    };
    for e in &trace {
        let req = &e.reservation.request;
        let c = classify(profile, req, e.outcome.as_ref());
        budget.source_bytes = budget.source_bytes.saturating_add(req.source_bytes);
        budget.largest_call_source_bytes = budget.largest_call_source_bytes.max(req.source_bytes);
        if let Some(o) = &e.outcome {
            let ob = &o.observation;
            budget.output_bytes = budget.output_bytes.saturating_add(ob.envelope_bytes);
            budget.largest_output_bytes = budget.largest_output_bytes.max(ob.envelope_bytes);
            budget.wall_ms = budget.wall_ms.saturating_add(ob.duration_ms);
        }
        budget.input_tokens = budget.input_tokens.saturating_add(c.input_tokens);
        budget.output_tokens = budget.output_tokens.saturating_add(c.output_tokens);
        if let Some(a) = &c.answer {
            answered += 1;
            for p in &req.parts {
                *confirmed.entry(p.path.clone()).or_default() += 1;
            }
            for (k, row) in a.criteria.iter().enumerate() {
                let mut failed = row.outcome == AnswerOutcome::Failed;
                for f in &row.findings {
                    failed |= f.severity == Severity::Blocking;
                    findings_total += 1;
                    if findings.len() < MAX_RECORD_FINDINGS {
                        findings.push(Finding {
                            call: req.index,
                            criterion: row.id.clone(),
                            severity: f.severity,
                            path: f.path.clone(),
                            line: f.line,
                            message: f.message.clone(),
                        });
                    }
                }
                if failed {
                    crit_failed[k] = true;
                }
            }
        } else if failure.is_none() {
            failure = c.status.failure();
            detail = c
                .detail
                .clone()
                .map(|d| answer::shorten(&format!("call {}: {d}", req.index)));
        }
        calls.push(CallSummary {
            index: req.index,
            ticket: req.ticket.clone(),
            status: c.status,
            exit_code: e.outcome.as_ref().and_then(|o| o.observation.exit_code),
            duration_ms: e.outcome.as_ref().map_or(0, |o| o.observation.duration_ms),
            envelope_bytes: e
                .outcome
                .as_ref()
                .map_or(0, |o| o.observation.envelope_bytes),
            session_id: c.session_id,
            models: c.models,
            detail: c.detail,
        });
    }
    if failure.is_none()
        && (budget.wall_ms > profile.budgets.max_total_wall_ms
            || trace.len() > profile.budgets.max_calls as usize
            || budget.largest_call_source_bytes > profile.budgets.max_source_bytes_per_call
            || budget.largest_output_bytes > profile.budgets.max_output_bytes_per_call)
    {
        failure = Some(ReviewFailure::ReviewBudgetExceeded);
        detail = Some("the retained calls exceed the review's budgets".into());
    }
    if failure.is_none() && trace.len() < plan.calls.len() {
        // A legitimate run stops early without a failing call only when the
        // wall budget is spent.
        failure = Some(ReviewFailure::ReviewBudgetExceeded);
        detail = Some(format!(
            "the wall budget of {} ms was spent after {} of {} calls",
            profile.budgets.max_total_wall_ms,
            trace.len(),
            plan.calls.len()
        ));
    }
    // Coverage: a file is reviewed when every one of its parts was in an
    // answered call (whose answer confirmed it).
    let mut parts_of: BTreeMap<&str, u32> = BTreeMap::new();
    for call in &plan.calls {
        for p in call {
            parts_of.insert(p.path.as_str(), p.parts);
        }
    }
    let mut reviewed = 0u64;
    let mut missing: Vec<String> = Vec::new();
    for e in &plan.selected {
        if plan.unreviewable.contains(&e.path) {
            continue;
        }
        let want = parts_of.get(e.path.as_str()).copied().unwrap_or(u32::MAX);
        if confirmed.get(&e.path).copied() == Some(want) {
            reviewed += 1;
        } else {
            missing.push(e.path.clone());
        }
    }
    let selected = plan.selected.len() as u64;
    let complete = reviewed == selected && plan.unreviewable.is_empty();
    let all_answered = !plan.calls.is_empty() && answered == plan.calls.len();
    let criteria: Vec<CriterionResult> = profile
        .criteria
        .iter()
        .zip(&crit_failed)
        .map(|(c, &failed)| CriterionResult {
            id: c.id.clone(),
            required: c.required,
            verdict: if failed {
                Verdict::Failed
            } else if all_answered {
                Verdict::Passed
            } else {
                Verdict::NotReviewed
            },
        })
        .collect();
    if failure.is_none() && !complete {
        failure = Some(ReviewFailure::ReviewCoverageIncomplete);
        detail = Some(format!(
            "{} selected file(s) were not reviewed",
            missing.len()
        ));
    }
    let failed_required: Vec<&str> = criteria
        .iter()
        .filter(|c| c.required && c.verdict != Verdict::Passed)
        .map(|c| c.id.as_str())
        .collect();
    if failure.is_none() && !failed_required.is_empty() {
        failure = Some(ReviewFailure::ReviewCriteriaFailed);
        detail = Some(answer::shorten(&format!(
            "required criteria failed: {failed_required:?}"
        )));
    }
    Ok(ReviewRecord {
        version: 1,
        request_digest: request.digest()?,
        outcome: if failure.is_none() {
            ReviewOutcome::Passed
        } else {
            ReviewOutcome::Failed
        },
        failure,
        detail,
        criteria,
        findings,
        findings_total,
        coverage: CoverageResult {
            selected,
            reviewed,
            complete,
            unreviewable: first(&plan.unreviewable),
            unreviewable_total: plan.unreviewable.len() as u64,
            missing_total: missing.len() as u64,
            missing: first(&missing),
        },
        budget,
        calls,
        trace,
    })
}
