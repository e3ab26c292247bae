//! The review step of a workflow file (`docs/review.md`, "The review
//! step"): what a review must cover, its finite budgets and its criteria.
//! Pure types, decoded strictly; the review collector
//! (`collector::review`) derives its plan from them.

use super::coverage::CoverageSet;
use super::{MAX_CRITERIA, MAX_TEXT, canonical_bytes, check_id, check_text};
use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Domain of a review step digest.
pub const DOMAIN_STEP: &str = "agent-task.review-step.v1";

/// Most calls a budget may allow.
pub const MAX_CALLS: u32 = 256;
/// Largest per-call source budget.
pub const MAX_SOURCE_BYTES_PER_CALL: u64 = 1024 * 1024;
/// Smallest per-call source budget.
pub const MIN_SOURCE_BYTES_PER_CALL: u64 = 1024;
/// Largest per-call output budget (the response envelope).
pub const MAX_OUTPUT_BYTES_PER_CALL: u64 = 1024 * 1024;
/// Smallest per-call output budget.
pub const MIN_OUTPUT_BYTES_PER_CALL: u64 = 1024;
/// Most response bytes a whole review may retain (`max_calls` times the
/// per-call output budget): the envelopes travel base64url-encoded in the
/// record, inside the 16 MiB transfer.
pub const MAX_TOTAL_OUTPUT_BYTES: u64 = 8 * 1024 * 1024;
/// Longest total wall time a budget may allow (24 h).
pub const MAX_TOTAL_WALL_MS: u64 = 24 * 3_600_000;
/// Shortest total wall time a budget may allow.
pub const MIN_TOTAL_WALL_MS: u64 = 1_000;

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidInput, msg)
}

/// The finite budgets of a review step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewBudgets {
    /// Most calls of the executable (1..=256).
    pub max_calls: u32,
    /// Most bytes of source exposed in one call (1 KiB..=1 MiB).
    pub max_source_bytes_per_call: u64,
    /// Most bytes of one response envelope (1 KiB..=1 MiB).
    pub max_output_bytes_per_call: u64,
    /// Most wall time of all calls together, in milliseconds (1 s..=24 h).
    pub max_total_wall_ms: u64,
}

impl ReviewBudgets {
    /// Every bound of `docs/review.md`.
    pub fn validate(&self) -> Result<()> {
        if self.max_calls == 0 || self.max_calls > MAX_CALLS {
            return Err(invalid(format!("max_calls must be 1..={MAX_CALLS}")));
        }
        if !(MIN_SOURCE_BYTES_PER_CALL..=MAX_SOURCE_BYTES_PER_CALL)
            .contains(&self.max_source_bytes_per_call)
        {
            return Err(invalid(format!(
                "max_source_bytes_per_call must be {MIN_SOURCE_BYTES_PER_CALL}..={MAX_SOURCE_BYTES_PER_CALL}"
            )));
        }
        if !(MIN_OUTPUT_BYTES_PER_CALL..=MAX_OUTPUT_BYTES_PER_CALL)
            .contains(&self.max_output_bytes_per_call)
        {
            return Err(invalid(format!(
                "max_output_bytes_per_call must be {MIN_OUTPUT_BYTES_PER_CALL}..={MAX_OUTPUT_BYTES_PER_CALL}"
            )));
        }
        if u64::from(self.max_calls).saturating_mul(self.max_output_bytes_per_call)
            > MAX_TOTAL_OUTPUT_BYTES
        {
            return Err(invalid(format!(
                "max_calls x max_output_bytes_per_call must be at most {MAX_TOTAL_OUTPUT_BYTES} \
                 (every envelope travels in the transfer)"
            )));
        }
        if !(MIN_TOTAL_WALL_MS..=MAX_TOTAL_WALL_MS).contains(&self.max_total_wall_ms) {
            return Err(invalid(format!(
                "max_total_wall_ms must be {MIN_TOTAL_WALL_MS}..={MAX_TOTAL_WALL_MS}"
            )));
        }
        Ok(())
    }
}

/// The `review` member of a workflow step with `action_class: review`:
/// what must be reviewed and the budgets. The step's criteria (all
/// controller-only) are the step's own `criteria`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewStep {
    /// Gitignore-style patterns over the revision's paths (1..=256).
    pub coverage: Vec<String>,
    /// Finite budgets.
    pub budgets: ReviewBudgets,
}

impl ReviewStep {
    /// Validates the patterns (they must compile) and the budgets.
    pub fn validate(&self) -> Result<()> {
        CoverageSet::new(&self.coverage)?;
        self.budgets.validate()
    }

    /// Canonical bytes.
    pub fn canonical_bytes(&self) -> Result<Vec<u8>> {
        canonical_bytes(self)
    }

    /// `domain_digest(DOMAIN_STEP, canonical bytes)`.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_STEP, &self.canonical_bytes()?))
    }
}

/// One criterion of a review (always controller-only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewCriterion {
    /// Criterion id (unique in the step).
    pub id: String,
    /// Whether the review passes only if it passed.
    pub required: bool,
    /// What the model judges.
    pub text: String,
}

/// Validates a review's criteria: 1..=64, unique ids, at least one required.
pub fn validate_criteria(criteria: &[ReviewCriterion]) -> Result<()> {
    if criteria.is_empty() || criteria.len() > MAX_CRITERIA {
        return Err(invalid(format!("a review has 1..={MAX_CRITERIA} criteria")));
    }
    let mut ids = BTreeSet::new();
    for c in criteria {
        check_id("criterion id", &c.id)?;
        check_text("criterion text", &c.text, MAX_TEXT)?;
        if c.text.trim().is_empty() {
            return Err(invalid(format!("criterion {} has no text", c.id)));
        }
        if !ids.insert(c.id.as_str()) {
            return Err(invalid(format!("duplicate criterion {}", c.id)));
        }
    }
    if !criteria.iter().any(|c| c.required) {
        return Err(invalid(
            "a review needs at least one required criterion (otherwise it could pass having judged nothing)",
        ));
    }
    Ok(())
}
