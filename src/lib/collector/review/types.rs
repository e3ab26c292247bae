//! Wire types of the review collector: the review step as it appears in a
//! workflow file, the review profile an operator installs, the request and
//! the record that travel in a review transfer. Decoding is strict (unknown
//! fields fail, every string and collection is bounded); the canonical bytes
//! of each type are its compact serde_json serialisation in declared field
//! order (docs/wire.md), and each has a domain-separated digest
//! (`docs/review.md`).

use super::coverage::CoverageSet;
use crate::collector::transfer::RegistrationBinding;
pub use crate::contract::review::{
    DOMAIN_STEP, MAX_CALLS, MAX_OUTPUT_BYTES_PER_CALL, MAX_SOURCE_BYTES_PER_CALL,
    MAX_TOTAL_OUTPUT_BYTES, MAX_TOTAL_WALL_MS, MIN_OUTPUT_BYTES_PER_CALL,
    MIN_SOURCE_BYTES_PER_CALL, MIN_TOTAL_WALL_MS, ReviewBudgets, ReviewCriterion, ReviewStep,
    validate_criteria,
};
use crate::contract::{canonical_bytes, check_id};
use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};

/// Domain of a review profile digest (over the profile with `profile_id = ""`).
pub const DOMAIN_PROFILE: &str = "agent-task.review-profile.v1";
/// Domain of a review request digest.
pub const DOMAIN_REQUEST: &str = "agent-task.review-request.v1";
/// Domain of a review record digest.
pub const DOMAIN_RECORD: &str = "agent-task.review-record.v1";

/// Most credential or proxy variable names a profile passes through.
pub const MAX_ENV: usize = 8;
/// Longest absolute path of a pinned executable.
pub const MAX_PIN_PATH: usize = 4096;

/// The variables a `claude_code_cli` profile for provider `anthropic` may
/// pass to the executable (their values come from the operator, never from
/// the candidate or the descriptor). `ANTHROPIC_BASE_URL` and the other
/// provider switches are deliberately absent: they would change the provider.
pub const ALLOWED_ENV: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "NODE_EXTRA_CA_CERTS",
];

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidInput, msg)
}

/// How the review executable is reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// The concrete Claude Code CLI transport (print mode, JSON output).
    ClaudeCodeCli,
    /// Fabricated in-process envelopes: test builds only.
    Fixture,
}

impl Basis {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::ClaudeCodeCli => "claude_code_cli",
            Basis::Fixture => "fixture",
        }
    }
}

/// Whether `basis` may be used by a build that is (`test_build`) or is not
/// a test build: `claude_code_cli` always, `fixture` only in a test build.
/// Install, import and landing call [`check_basis`], which asks this with
/// the build's own answer.
pub fn check_basis_for(basis: Basis, test_build: bool) -> Result<()> {
    match basis {
        Basis::ClaudeCodeCli => Ok(()),
        Basis::Fixture if test_build => Ok(()),
        Basis::Fixture => Err(Error::new(
            Code::ProfileInvalid,
            "a fixture-basis review profile is refused outside test builds",
        )
        .with("basis", "fixture")),
    }
}

/// [`check_basis_for`] for this build: a test build is one made with the
/// `test-hooks` feature (or this crate's own unit tests).
pub fn check_basis(basis: Basis) -> Result<()> {
    check_basis_for(basis, cfg!(any(test, feature = "test-hooks")))
}

/// The provider scope of a review profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// Anthropic's API, reached by the pinned Claude Code executable.
    Anthropic,
}

/// One file pinned by absolute path and SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedFile {
    /// Absolute, canonical (symlink-free) path.
    pub path: String,
    /// SHA-256 of its bytes.
    pub sha256: Sha256Hex,
    /// Its size in bytes.
    pub size: u64,
}

/// The executable a review runs: `program` is what is executed; `script`,
/// when present, is the file `program` interprets (for an npm-installed
/// `claude`: the resolved `cli.js` and the `node` that runs it). The call is
/// `program [script] FLAGS…`, never through `PATH` or a shebang.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedExecutable {
    /// What is executed.
    pub program: PinnedFile,
    /// The script it runs, if any.
    pub script: Option<PinnedFile>,
}

impl PinnedExecutable {
    /// The pinned files, program first.
    pub fn files(&self) -> Vec<&PinnedFile> {
        std::iter::once(&self.program)
            .chain(self.script.as_ref())
            .collect()
    }

    /// Bounds and shape.
    pub fn validate(&self) -> Result<()> {
        for f in self.files() {
            if !f.path.starts_with('/') || f.path.len() > MAX_PIN_PATH || f.path.contains('\0') {
                return Err(invalid(
                    "a pinned executable path must be absolute, at most 4096 bytes, without NUL",
                ));
            }
        }
        Ok(())
    }
}

/// An installed review profile (immutable): for one registration epoch,
/// repository, workflow profile and review step, the step's criteria,
/// coverage and budgets copied in, and the pinned executable, transport
/// basis, provider scope, model and controller policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewProfile {
    /// Always 1.
    pub version: u32,
    /// `rp_` + the first 32 hex characters of the profile digest.
    pub profile_id: String,
    /// Repository.
    pub repository: String,
    /// Workflow profile.
    pub profile: String,
    /// Review step.
    pub step_id: String,
    /// The registration (exact epoch and key).
    pub registration: RegistrationBinding,
    /// The installed requirement the step was taken from.
    pub requirement_digest: Sha256Hex,
    /// The controller policy this profile was made for ([`super::policy::policy_digest`]).
    pub policy_digest: Sha256Hex,
    /// The step's criteria.
    pub criteria: Vec<ReviewCriterion>,
    /// The step's coverage patterns.
    pub coverage: Vec<String>,
    /// The step's budgets.
    pub budgets: ReviewBudgets,
    /// Transport basis.
    pub basis: Basis,
    /// The pinned executable.
    pub executable: PinnedExecutable,
    /// Provider scope.
    pub provider: Provider,
    /// Model id passed to `--model` (a full id: an alias would let the
    /// provider change the model under the same profile).
    pub model: String,
    /// Names of the operator-supplied variables passed to the executable
    /// (a subset of [`ALLOWED_ENV`], sorted, unique).
    pub env: Vec<String>,
}

/// What an operator pins; [`ReviewProfile::new`] derives the rest.
pub struct ProfileParts {
    /// Repository.
    pub repository: String,
    /// Workflow profile.
    pub profile: String,
    /// Review step id.
    pub step_id: String,
    /// Registration.
    pub registration: RegistrationBinding,
    /// Requirement digest.
    pub requirement_digest: Sha256Hex,
    /// The step's criteria.
    pub criteria: Vec<ReviewCriterion>,
    /// The step's `review` member.
    pub step: ReviewStep,
    /// Basis.
    pub basis: Basis,
    /// The pinned executable ([`super::transport::pin_executable`]).
    pub executable: PinnedExecutable,
    /// Provider.
    pub provider: Provider,
    /// Model id.
    pub model: String,
    /// Variable names to pass through.
    pub env: Vec<String>,
}

impl ReviewProfile {
    /// Builds, validates and names a profile. Refuses a basis this build
    /// does not allow.
    pub fn new(p: ProfileParts) -> Result<ReviewProfile> {
        let mut env = p.env;
        env.sort();
        env.dedup();
        let mut out = ReviewProfile {
            version: 1,
            profile_id: String::new(),
            repository: p.repository,
            profile: p.profile,
            step_id: p.step_id,
            registration: p.registration,
            requirement_digest: p.requirement_digest,
            policy_digest: super::policy::policy_digest(),
            criteria: p.criteria,
            coverage: p.step.coverage,
            budgets: p.step.budgets,
            basis: p.basis,
            executable: p.executable,
            provider: p.provider,
            model: p.model,
            env,
        };
        out.profile_id = out.expected_id()?;
        out.validate()?;
        Ok(out)
    }

    fn expected_id(&self) -> Result<String> {
        Ok(format!("rp_{}", &self.digest()?.as_str()[..32]))
    }

    /// The profile digest (over every field but `profile_id`).
    pub fn digest(&self) -> Result<Sha256Hex> {
        let mut c = self.clone();
        c.profile_id = String::new();
        Ok(domain_digest(DOMAIN_PROFILE, &canonical_bytes(&c)?))
    }

    /// Every rule: version, ids, criteria, coverage, budgets, pins, model,
    /// variable names, the id derived from the digest, the basis allowed in
    /// this build and the policy of this controller. Install, claim,
    /// collect, import, finalize, qualify and land all load a stored
    /// profile through this (`authority::review::profile_for`).
    pub fn validate(&self) -> Result<()> {
        self.validate_for(cfg!(any(test, feature = "test-hooks")))
    }

    /// [`Self::validate`] for a build that is (`test_build`) or is not a
    /// test build: the basis is checked with [`check_basis_for`].
    pub fn validate_for(&self, test_build: bool) -> Result<()> {
        if self.version != 1 {
            return Err(invalid(format!(
                "unsupported review profile version {}",
                self.version
            )));
        }
        check_id("repository", &self.repository)?;
        check_id("profile", &self.profile)?;
        check_id("step_id", &self.step_id)?;
        check_id("model", &self.model)?;
        validate_criteria(&self.criteria)?;
        CoverageSet::new(&self.coverage)?;
        self.budgets.validate()?;
        self.executable.validate()?;
        if self.env.len() > MAX_ENV {
            return Err(invalid("a review profile passes at most 8 variables"));
        }
        let mut prev: Option<&str> = None;
        for name in &self.env {
            if !ALLOWED_ENV.contains(&name.as_str()) {
                return Err(invalid(format!(
                    "variable {name:?} may not be passed to the review executable (allowed: {})",
                    ALLOWED_ENV.join(", ")
                )));
            }
            if prev.is_some_and(|p| p >= name.as_str()) {
                return Err(invalid("profile variable names must be sorted and unique"));
            }
            prev = Some(name);
        }
        if self.profile_id != self.expected_id()? {
            return Err(Error::new(
                Code::ProfileInvalid,
                "the review profile id is not derived from its digest",
            ));
        }
        if self.policy_digest != super::policy::policy_digest() {
            return Err(Error::new(
                Code::ProfileInvalid,
                "the review profile was made for another controller policy: install a new profile",
            ));
        }
        check_basis_for(self.basis, test_build)
    }
}

/// The exact subject of one review execution (filled by the authority from
/// the claimed attempt; never chosen by the candidate).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewSubject {
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
    /// Execution operation.
    pub execution_operation_id: String,
    /// Fence.
    pub fence: u64,
    /// The revision reviewed.
    pub revision: Sha256Hex,
    /// The CAS digest of its manifest.
    pub manifest_sha256: Sha256Hex,
}

/// The original request of one review execution: the subject and the
/// profile it runs under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRequest {
    /// Always 1.
    pub version: u32,
    /// The subject.
    pub subject: ReviewSubject,
    /// Review profile id.
    pub review_profile_id: String,
    /// Review profile digest.
    pub review_profile_digest: Sha256Hex,
    /// The profile's step.
    pub step_id: String,
    /// The profile's basis.
    pub basis: Basis,
    /// The profile's provider.
    pub provider: Provider,
    /// The profile's model.
    pub model: String,
    /// The profile's controller policy.
    pub policy_digest: Sha256Hex,
}

impl ReviewRequest {
    /// The request for `subject` under `profile`.
    pub fn new(subject: ReviewSubject, profile: &ReviewProfile) -> Result<ReviewRequest> {
        let r = ReviewRequest {
            version: 1,
            subject,
            review_profile_id: profile.profile_id.clone(),
            review_profile_digest: profile.digest()?,
            step_id: profile.step_id.clone(),
            basis: profile.basis,
            provider: profile.provider,
            model: profile.model.clone(),
            policy_digest: profile.policy_digest.clone(),
        };
        r.check_profile(profile)?;
        Ok(r)
    }

    /// Refuses a request that does not name `profile` exactly, or whose
    /// subject is not the profile's repository.
    pub fn check_profile(&self, profile: &ReviewProfile) -> Result<()> {
        let s = &self.subject;
        check_id("repository", &s.repository)?;
        check_id("task_id", &s.task_id)?;
        check_id("attempt_id", &s.attempt_id)?;
        check_id("execution_operation_id", &s.execution_operation_id)?;
        let same = self.version == 1
            && s.repository == profile.repository
            && self.review_profile_id == profile.profile_id
            && self.review_profile_digest == profile.digest()?
            && self.step_id == profile.step_id
            && self.basis == profile.basis
            && self.provider == profile.provider
            && self.model == profile.model
            && self.policy_digest == profile.policy_digest;
        if !same {
            return Err(Error::new(
                Code::ProfileInvalid,
                "the review request does not name this review profile",
            ));
        }
        Ok(())
    }

    /// Canonical bytes.
    pub fn bytes(&self) -> Result<Vec<u8>> {
        canonical_bytes(self)
    }

    /// `domain_digest(DOMAIN_REQUEST, canonical bytes)`.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_REQUEST, &self.bytes()?))
    }
}

/// The whole review's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewOutcome {
    /// Every required criterion passed and coverage is complete.
    Passed,
    /// Anything else.
    Failed,
}

/// Why a review failed (the first reason, in the order of `docs/review.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewFailure {
    /// The coverage patterns select no file of the revision.
    ReviewNothingSelected,
    /// A selected file cannot be shown to the model (not UTF-8, or NUL).
    ReviewCoverageIncomplete,
    /// The plan needs more calls than the budget, or the wall budget ran out.
    ReviewBudgetExceeded,
    /// A reserved call's outcome is unknown (the collector stopped during
    /// it); it is never called again.
    ReviewCallUncertain,
    /// The pinned executable's bytes changed before or after a call.
    ReviewExecutableMismatch,
    /// The executable could not be started, or exited non-zero.
    ReviewCallFailed,
    /// A call ran past its time.
    ReviewCallTimedOut,
    /// A response exceeded the per-call output budget.
    ReviewOutputExceeded,
    /// The response reports an error (`is_error`, or a non-success subtype).
    ReviewErrorResult,
    /// The response or its answer does not follow the contract.
    ReviewAnswerMalformed,
    /// The response does not report the pinned model.
    ReviewModelMismatch,
    /// A required criterion failed.
    ReviewCriteriaFailed,
}

impl ReviewFailure {
    /// The wire name (the stable code qualify reports).
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewFailure::ReviewNothingSelected => "review_nothing_selected",
            ReviewFailure::ReviewCoverageIncomplete => "review_coverage_incomplete",
            ReviewFailure::ReviewBudgetExceeded => "review_budget_exceeded",
            ReviewFailure::ReviewCallUncertain => "review_call_uncertain",
            ReviewFailure::ReviewExecutableMismatch => "review_executable_mismatch",
            ReviewFailure::ReviewCallFailed => "review_call_failed",
            ReviewFailure::ReviewCallTimedOut => "review_call_timed_out",
            ReviewFailure::ReviewOutputExceeded => "review_output_exceeded",
            ReviewFailure::ReviewErrorResult => "review_error_result",
            ReviewFailure::ReviewAnswerMalformed => "review_answer_malformed",
            ReviewFailure::ReviewModelMismatch => "review_model_mismatch",
            ReviewFailure::ReviewCriteriaFailed => "review_criteria_failed",
        }
    }
}

/// One criterion's result over the whole review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Every call answered it passed, with no blocking finding.
    Passed,
    /// Some call answered it failed, or gave a blocking finding.
    Failed,
    /// Not every planned call answered.
    NotReviewed,
}

/// A criterion row of the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CriterionResult {
    /// Criterion id.
    pub id: String,
    /// Required.
    pub required: bool,
    /// Verdict.
    pub verdict: Verdict,
}

/// Severity of a finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// Must be fixed: the criterion fails.
    Blocking,
    /// Worth knowing; does not fail the criterion.
    Advisory,
}

/// One finding of the model, with path and line where it gave one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Call index it came from.
    pub call: u32,
    /// Criterion.
    pub criterion: String,
    /// Severity.
    pub severity: Severity,
    /// Path (one of the call's files), if given.
    pub path: Option<String>,
    /// Line (within the part shown), if given.
    pub line: Option<u64>,
    /// The model's words (at most 2000 bytes).
    pub message: String,
}

/// Coverage actually achieved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CoverageResult {
    /// Files the patterns select.
    pub selected: u64,
    /// Files every part of which an answered call confirmed.
    pub reviewed: u64,
    /// `reviewed == selected` and nothing unreviewable.
    pub complete: bool,
    /// Selected files that cannot be shown (first 32).
    pub unreviewable: Vec<String>,
    /// How many.
    pub unreviewable_total: u64,
    /// Selected files not reviewed (first 32).
    pub missing: Vec<String>,
    /// How many.
    pub missing_total: u64,
}

/// Budget use.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetUse {
    /// The budgets.
    pub budgets: ReviewBudgets,
    /// Calls the plan needs.
    pub calls_planned: u32,
    /// Calls reserved.
    pub calls_reserved: u32,
    /// Source bytes exposed in reserved calls.
    pub source_bytes: u64,
    /// Largest one call's source bytes.
    pub largest_call_source_bytes: u64,
    /// Response bytes retained.
    pub output_bytes: u64,
    /// Largest one response.
    pub largest_output_bytes: u64,
    /// Wall time of all calls.
    pub wall_ms: u64,
    /// Input tokens the responses report.
    pub input_tokens: u64,
    /// Output tokens the responses report.
    pub output_tokens: u64,
}

/// What one call came to (derived from its retained observation and envelope).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// A valid answer.
    Answered,
    /// Reserved, outcome unknown.
    Uncertain,
    /// The executable's bytes were not the pinned ones.
    ExecutableMismatch,
    /// It could not be started.
    Unavailable,
    /// It ran out of time.
    TimedOut,
    /// Its response was over the output budget.
    OutputExceeded,
    /// It exited non-zero (or by a signal) without an error result.
    ExitFailure,
    /// It reported an error result.
    ErrorResult,
    /// Its response or answer does not follow the contract.
    Malformed,
    /// Its response does not report the pinned model.
    ModelMismatch,
}

impl CallStatus {
    /// The record failure this status causes (none for `answered`).
    pub fn failure(self) -> Option<ReviewFailure> {
        Some(match self {
            CallStatus::Answered => return None,
            CallStatus::Uncertain => ReviewFailure::ReviewCallUncertain,
            CallStatus::ExecutableMismatch => ReviewFailure::ReviewExecutableMismatch,
            CallStatus::Unavailable | CallStatus::ExitFailure => ReviewFailure::ReviewCallFailed,
            CallStatus::TimedOut => ReviewFailure::ReviewCallTimedOut,
            CallStatus::OutputExceeded => ReviewFailure::ReviewOutputExceeded,
            CallStatus::ErrorResult => ReviewFailure::ReviewErrorResult,
            CallStatus::Malformed => ReviewFailure::ReviewAnswerMalformed,
            CallStatus::ModelMismatch => ReviewFailure::ReviewModelMismatch,
        })
    }
}

/// A call row of the record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CallSummary {
    /// Index.
    pub index: u32,
    /// Ticket of its reservation.
    pub ticket: String,
    /// Derived status.
    pub status: CallStatus,
    /// Exit code, if it exited.
    pub exit_code: Option<i32>,
    /// Wall time.
    pub duration_ms: u64,
    /// Response bytes.
    pub envelope_bytes: u64,
    /// Session id the response reports.
    pub session_id: Option<String>,
    /// Model ids the response reports (sorted).
    pub models: Vec<String>,
    /// A short reason when not answered (at most 512 bytes).
    pub detail: Option<String>,
}

/// The record of one review execution, derived by the controller from the
/// plan and the retained trace (and re-derived by the authority on import).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewRecord {
    /// Always 1.
    pub version: u32,
    /// The request answered.
    pub request_digest: Sha256Hex,
    /// Derived outcome.
    pub outcome: ReviewOutcome,
    /// The first reason it failed.
    pub failure: Option<ReviewFailure>,
    /// What the failure was, in words (at most 512 bytes).
    pub detail: Option<String>,
    /// Per-criterion results, in the profile's order.
    pub criteria: Vec<CriterionResult>,
    /// Findings in call order (first 256).
    pub findings: Vec<Finding>,
    /// How many findings the answers gave.
    pub findings_total: u64,
    /// Coverage achieved.
    pub coverage: CoverageResult,
    /// Budget use.
    pub budget: BudgetUse,
    /// One row per reserved call.
    pub calls: Vec<CallSummary>,
    /// The retained trace: every reservation and outcome, envelopes as received.
    pub trace: Vec<super::journal::TraceEntry>,
}

impl ReviewRecord {
    /// Canonical bytes.
    pub fn bytes(&self) -> Result<Vec<u8>> {
        canonical_bytes(self)
    }

    /// `domain_digest(DOMAIN_RECORD, canonical bytes)`.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_RECORD, &self.bytes()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(crate) fn budgets() -> ReviewBudgets {
        ReviewBudgets {
            max_calls: 4,
            max_source_bytes_per_call: 4096,
            max_output_bytes_per_call: 65536,
            max_total_wall_ms: 600_000,
        }
    }

    #[test]
    fn fixture_basis_is_refused_outside_test_builds() {
        assert!(check_basis_for(Basis::ClaudeCodeCli, false).is_ok());
        assert!(check_basis_for(Basis::ClaudeCodeCli, true).is_ok());
        assert!(check_basis_for(Basis::Fixture, true).is_ok());
        let e = check_basis_for(Basis::Fixture, false).expect_err("refused");
        assert_eq!(e.code(), Code::ProfileInvalid);
        assert!(serde_json::from_str::<Basis>("\"http\"").is_err());
    }

    #[test]
    fn budgets_are_bounded() {
        assert!(budgets().validate().is_ok());
        let bad = [
            ReviewBudgets {
                max_calls: 0,
                ..budgets()
            },
            ReviewBudgets {
                max_calls: 257,
                ..budgets()
            },
            ReviewBudgets {
                max_source_bytes_per_call: 10,
                ..budgets()
            },
            ReviewBudgets {
                max_output_bytes_per_call: 2 << 20,
                ..budgets()
            },
            ReviewBudgets {
                max_calls: 256,
                max_output_bytes_per_call: 1 << 20,
                ..budgets()
            },
            ReviewBudgets {
                max_total_wall_ms: 0,
                ..budgets()
            },
        ];
        for b in bad {
            assert_eq!(
                b.validate().expect_err("bad").code(),
                Code::InvalidInput,
                "{b:?}"
            );
        }
    }

    #[test]
    fn step_decoding_is_strict() {
        let ok = r#"{"coverage":["src/**"],"budgets":{"max_calls":2,"max_source_bytes_per_call":2048,
            "max_output_bytes_per_call":4096,"max_total_wall_ms":60000}}"#;
        let s: ReviewStep = serde_json::from_str(ok).expect("decodes");
        s.validate().expect("valid");
        let extra = ok.replacen("\"coverage\"", "\"model\":\"x\",\"coverage\"", 1);
        assert!(serde_json::from_str::<ReviewStep>(&extra).is_err());
        let empty = ReviewStep {
            coverage: vec![],
            budgets: s.budgets.clone(),
        };
        assert!(empty.validate().is_err());
    }

    #[test]
    fn criteria_need_a_required_row_and_unique_ids() {
        let c = |id: &str, required| ReviewCriterion {
            id: id.into(),
            required,
            text: "t".into(),
        };
        assert!(validate_criteria(&[c("a", true)]).is_ok());
        assert!(validate_criteria(&[]).is_err());
        assert!(validate_criteria(&[c("a", false)]).is_err());
        assert!(validate_criteria(&[c("a", true), c("a", false)]).is_err());
        assert!(
            validate_criteria(&[ReviewCriterion {
                text: " ".into(),
                ..c("a", true)
            }])
            .is_err()
        );
    }
}
