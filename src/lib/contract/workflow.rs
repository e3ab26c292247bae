//! The operator-authored workflow file (`agent-task.workflow/v1`), see
//! `docs/workflow-file.md`. Decoding is strict; the installed form is the
//! file re-serialised compactly in declared field order, and its
//! requirement digest is `domain_digest(DOMAIN_REQUIREMENT, bytes)`.

use super::{
    ActionClass, MAX_CRITERIA, MAX_DEPENDS, MAX_REFERENCES, MAX_SKILL_TEXT, MAX_TEXT,
    canonical_bytes, check_id, check_relative_path, check_text,
};
use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// The schema name of a workflow file.
pub const WORKFLOW_SCHEMA: &str = "agent-task.workflow/v1";
/// Domain of the requirement digest.
pub const DOMAIN_REQUIREMENT: &str = "agent-task.workflow-requirement.v1";
/// Largest workflow file.
pub const MAX_WORKFLOW_BYTES: u64 = 1024 * 1024;
/// Most steps.
pub const MAX_STEPS: usize = 64;
/// Longest argv of a command recipe.
pub const MAX_ARGV: usize = 64;

/// A workflow file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Workflow {
    /// Always `agent-task.workflow/v1`.
    pub schema: String,
    /// A name.
    pub name: String,
    /// Gitignore-style patterns of paths a candidate must leave exactly as
    /// the target head has them (optional; left out of the installed bytes
    /// when empty, so older requirement digests are unchanged).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    /// The steps.
    pub steps: Vec<Step>,
}

/// One step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Step id.
    pub id: String,
    /// Action class.
    pub action_class: ActionClass,
    /// Required or optional.
    pub required: bool,
    /// Step ids this step depends on.
    #[serde(default)]
    pub depends_on: Vec<String>,
    /// Skill text.
    #[serde(default)]
    pub instructions: String,
    /// Criteria (at least one).
    pub criteria: Vec<StepCriterion>,
    /// Named references.
    #[serde(default)]
    pub references: Vec<StepReference>,
    /// Command recipe (command steps only, required there).
    #[serde(default)]
    pub recipe: Option<Recipe>,
    /// What a review must cover and its budgets (review steps only,
    /// required there; left out of the installed bytes when absent, so the
    /// digests of files without one are unchanged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<super::review::ReviewStep>,
}

impl Step {
    /// The step's criteria as a review judges them (every one controller-only).
    pub fn review_criteria(&self) -> Vec<super::review::ReviewCriterion> {
        self.criteria
            .iter()
            .map(|c| super::review::ReviewCriterion {
                id: c.id.clone(),
                required: c.required,
                text: c.text.clone(),
            })
            .collect()
    }
}

/// A criterion of a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepCriterion {
    /// Criterion id.
    pub id: String,
    /// Required.
    pub required: bool,
    /// Text.
    pub text: String,
    /// Only the controller may claim it (always true on review steps).
    #[serde(default)]
    pub controller_only: bool,
}

/// A named reference of a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepReference {
    /// Name.
    pub name: String,
    /// Canonical relative path in the revision.
    pub path: String,
}

/// A command recipe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Recipe {
    /// argv (no shell unless argv names one).
    pub argv: Vec<String>,
    /// Timeout.
    pub timeout_ms: u64,
    /// Whether the command may use the network.
    pub network: bool,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidInput, msg)
}

impl Workflow {
    /// Parses and validates a workflow file.
    pub fn parse(bytes: &[u8]) -> Result<Workflow> {
        if bytes.len() as u64 > MAX_WORKFLOW_BYTES {
            return Err(Error::new(Code::TooLarge, "workflow file is over 1 MiB"));
        }
        let w: Workflow = crate::wire::json::decode(
            bytes,
            crate::wire::json::Limits::bytes(MAX_WORKFLOW_BYTES as usize),
            Code::InvalidInput,
            "workflow file",
        )?;
        w.validate()?;
        Ok(w)
    }

    /// Every rule of `docs/workflow-file.md`.
    pub fn validate(&self) -> Result<()> {
        if self.schema != WORKFLOW_SCHEMA {
            return Err(invalid(format!("schema must be {WORKFLOW_SCHEMA}")));
        }
        check_id("name", &self.name)?;
        self.protected_paths()?;
        if self.steps.is_empty() || self.steps.len() > MAX_STEPS {
            return Err(invalid(format!("a workflow has 1..={MAX_STEPS} steps")));
        }
        let mut ids = BTreeSet::new();
        for s in &self.steps {
            check_id("step id", &s.id)?;
            if !ids.insert(s.id.as_str()) {
                return Err(invalid(format!("duplicate step {}", s.id)));
            }
            check_text("instructions", &s.instructions, MAX_SKILL_TEXT)?;
            if s.criteria.is_empty() || s.criteria.len() > MAX_CRITERIA {
                return Err(invalid(format!(
                    "step {} needs 1..={MAX_CRITERIA} criteria",
                    s.id
                )));
            }
            let mut cids = BTreeSet::new();
            for c in &s.criteria {
                check_id("criterion id", &c.id)?;
                check_text("criterion text", &c.text, MAX_TEXT)?;
                if !cids.insert(c.id.as_str()) {
                    return Err(invalid(format!(
                        "duplicate criterion {} in step {}",
                        c.id, s.id
                    )));
                }
            }
            if s.references.len() > MAX_REFERENCES {
                return Err(invalid(format!(
                    "step {} has over {MAX_REFERENCES} references",
                    s.id
                )));
            }
            let mut names = BTreeSet::new();
            for r in &s.references {
                check_id("reference name", &r.name)?;
                check_relative_path(&r.path)?;
                if !names.insert(r.name.as_str()) {
                    return Err(invalid(format!(
                        "duplicate reference {} in step {}",
                        r.name, s.id
                    )));
                }
            }
            if s.depends_on.len() > MAX_DEPENDS {
                return Err(invalid("too many dependencies"));
            }
            match (s.action_class, &s.recipe) {
                (ActionClass::Command, None) => {
                    return Err(invalid(format!("command step {} needs a recipe", s.id)));
                }
                (ActionClass::Command, Some(r)) => {
                    if r.argv.is_empty() || r.argv.len() > MAX_ARGV {
                        return Err(invalid("recipe argv needs 1..=64 entries"));
                    }
                    for a in &r.argv {
                        check_text("argv entry", a, MAX_TEXT)?;
                    }
                    if r.timeout_ms == 0 || r.timeout_ms > 24 * 3_600_000 {
                        return Err(invalid("recipe timeout_ms must be 1..=86400000"));
                    }
                }
                (_, Some(_)) => {
                    return Err(invalid(format!(
                        "only command steps have a recipe ({})",
                        s.id
                    )));
                }
                (_, None) => {}
            }
            match (s.action_class, &s.review) {
                (ActionClass::Review, None) => {
                    return Err(invalid(format!(
                        "review step {} needs a review member (coverage and budgets)",
                        s.id
                    )));
                }
                (ActionClass::Review, Some(r)) => {
                    r.validate()?;
                    super::review::validate_criteria(&s.review_criteria())?;
                }
                (_, Some(_)) => {
                    return Err(invalid(format!(
                        "only review steps have a review member ({})",
                        s.id
                    )));
                }
                (_, None) => {}
            }
        }
        // Dependencies name earlier steps: acyclic by construction.
        let mut earlier = BTreeSet::new();
        for s in &self.steps {
            for d in &s.depends_on {
                if !earlier.contains(d.as_str()) {
                    return Err(invalid(format!(
                        "step {} depends on {d}, which is not an earlier step",
                        s.id
                    )));
                }
            }
            earlier.insert(s.id.as_str());
        }
        Ok(())
    }

    /// The installed bytes.
    pub fn canonical_bytes(&self) -> Result<Vec<u8>> {
        canonical_bytes(self)
    }

    /// The requirement digest.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(DOMAIN_REQUIREMENT, &self.canonical_bytes()?))
    }

    /// The compiled protected patterns.
    pub fn protected_paths(&self) -> Result<super::protected::Protected> {
        super::protected::Protected::new(&self.protected)
    }

    /// A step by id.
    pub fn step(&self, id: &str) -> Option<&Step> {
        self.steps.iter().find(|s| s.id == id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_parses_and_rules_hold() {
        let p = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/workflows/basic.json");
        let w = Workflow::parse(&std::fs::read(p).expect("fixture")).expect("valid");
        assert_eq!(w.steps.len(), 2);
        let mut bad = w.clone();
        bad.steps[0].criteria.clear();
        assert!(bad.validate().is_err());
        let mut bad = w.clone();
        bad.steps[0].depends_on = vec!["notes".into()];
        assert!(bad.validate().is_err());
        let mut bad = w.clone();
        bad.steps[0].recipe = None;
        assert!(bad.validate().is_err());
        let mut other = w.clone();
        other.steps[0].instructions.push('!');
        assert_ne!(w.digest().expect("d"), other.digest().expect("d"));
        assert!(
            Workflow::parse(br#"{"schema":"agent-task.workflow/v1","name":"x","steps":[],"x":1}"#)
                .is_err()
        );
        // Protected patterns: validated, part of the digest, left out when empty.
        assert!(w.protected_paths().expect("patterns").covers("test.sh"));
        let mut bad = w.clone();
        bad.protected.push("# a comment".into());
        assert!(bad.validate().is_err());
        let mut none = w.clone();
        none.protected.clear();
        assert_ne!(none.digest().expect("d"), w.digest().expect("d"));
        assert!(
            !String::from_utf8(none.canonical_bytes().expect("bytes"))
                .expect("utf8")
                .contains("protected")
        );
        // No step has a review member: none is in the installed bytes.
        assert!(
            !String::from_utf8(w.canonical_bytes().expect("bytes"))
                .expect("utf8")
                .contains("\"review\"")
        );
    }

    #[test]
    fn a_review_member_is_required_on_review_steps_and_only_there() {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/workflows/review.json"
        );
        let w = Workflow::parse(&std::fs::read(p).expect("fixture")).expect("valid");
        let review = w.step("review").expect("review step");
        assert_eq!(review.action_class, ActionClass::Review);
        assert!(review.review.is_some());
        // Part of the installed bytes and of the digest.
        let mut other = w.clone();
        if let Some(r) = other.steps[1].review.as_mut() {
            r.budgets.max_calls = 3;
        }
        assert_ne!(w.digest().expect("d"), other.digest().expect("d"));
        // Missing on a review step; present on a command step.
        let mut bad = w.clone();
        bad.steps[1].review = None;
        assert!(bad.validate().is_err());
        let mut bad = w.clone();
        bad.steps[0].review = review.review.clone();
        assert!(bad.validate().is_err());
        // Its budgets and patterns are validated; a review needs a required criterion.
        let mut bad = w.clone();
        if let Some(r) = bad.steps[1].review.as_mut() {
            r.budgets.max_calls = 0;
        }
        assert!(bad.validate().is_err());
        let mut bad = w.clone();
        for c in &mut bad.steps[1].criteria {
            c.required = false;
        }
        assert!(bad.validate().is_err());
        // Strict: an unknown member of `review` (a model choice) fails.
        let text = String::from_utf8(std::fs::read(p).expect("fixture")).expect("utf8");
        let sneaky = text.replacen("\"coverage\"", "\"model\": \"x\", \"coverage\"", 1);
        assert!(Workflow::parse(sneaky.as_bytes()).is_err());
    }
}
