//! in-toto Statement v1 and the three predicates this toolkit writes, with
//! strict decoding for `verify`.
//!
//! Shapes follow the in-toto Attestation Framework (spec v1.1):
//!
//! - Statement: `{"_type": "https://in-toto.io/Statement/v1", "subject":
//!   [ResourceDescriptor…], "predicateType": URI, "predicate": {…}}`;
//! - ResourceDescriptor: `name`, `uri`, `digest` (DigestSet), `content`
//!   (base64), `downloadLocation`, `mediaType`, `annotations`; at least one
//!   of `name`, `uri`, `digest` (a subject: `digest` always);
//! - test-result v0.1: `result` (`PASSED|WARNED|FAILED`), `configuration`
//!   [ResourceDescriptor], `url`?, `passedTests`, `warnedTests`,
//!   `failedTests`;
//! - svr v0.2 (Simple Verification Result): `verifier: {id, policies:
//!   [ResourceDescriptor]}` (`policies` MUST be present, possibly empty),
//!   `timeCreated`, `properties` (the passing properties only);
//! - the agent-task receipt predicate (ours): the v2 receipt verbatim, its
//!   digest, the registration public keys and the landing (with the
//!   protected paths an operator's override let in; receipt and digest
//!   are null for such a landing, which has none).
//!
//! DigestSet algorithms beyond the registry's (`sha256`, `gitCommit`) are
//! named here and documented in `docs/attestations.md`: each is a
//! domain-separated SHA-256, 64 lowercase hex.

pub use crate::contract::protected::ProtectedChanges;
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use crate::workflow::authority::receipt::Receipt;
use serde::{Deserialize, Serialize, de::DeserializeOwned};
use serde_json::Value;
use std::collections::BTreeMap;

/// `_type` of a Statement v1.
pub const STATEMENT_V1: &str = "https://in-toto.io/Statement/v1";
/// The test-result predicate.
pub const TEST_RESULT_V0_1: &str = "https://in-toto.io/attestation/test-result/v0.1";
/// The Simple Verification Result predicate.
pub const SVR_V0_2: &str = "https://in-toto.io/attestation/svr/v0.2";
/// The agent-task receipt predicate.
pub const RECEIPT_V1: &str = "urn:agent-task:attestation:receipt:v1";
/// `verifier.id` of the qualification verdict.
pub const VERIFIER_ID: &str = "urn:agent-task:verifier:qualification:v1";

/// DigestSet algorithm of a revision id:
/// `domain_digest("agent-task.revision.v1", canonical manifest)`.
pub const ALG_REVISION: &str = "agentTaskRevisionV1";
/// DigestSet algorithm of an installed requirement digest.
pub const ALG_REQUIREMENT: &str = "agentTaskRequirementV1";
/// DigestSet algorithm of a collector profile digest.
pub const ALG_PROFILE: &str = "agentTaskCollectorProfileV1";
/// DigestSet algorithm of a runtime identity digest.
pub const ALG_RUNTIME: &str = "agentTaskRuntimeIdentityV1";
/// DigestSet algorithm of a task digest.
pub const ALG_TASK: &str = "agentTaskTaskV1";
/// Digest algorithm of a review record (`agent-task.review-record.v1`).
pub const ALG_REVIEW_RECORD: &str = "agentTaskReviewRecordV1";
/// The git commit algorithm of the in-toto DigestSet registry.
pub const ALG_GIT_COMMIT: &str = "gitCommit";

/// Subject name of the revision (its canonical manifest).
pub const SUBJECT_REVISION: &str = "revision";
/// Subject name of the landed git commit.
pub const SUBJECT_COMMIT: &str = "git-commit";

/// The change qualified: exact subject current, every required task
/// succeeded, the stored receipt equals the one rebuilt from re-verified
/// transfers under live registrations, profiles and grants.
pub const PROP_QUALIFIED: &str = "AGENT_TASK_QUALIFIED";
/// The operator's `land` moved the target to this revision (and commit).
pub const PROP_LANDED: &str = "AGENT_TASK_LANDED";
/// The revision leaves every path the installed workflow protects exactly
/// as the target head has it (recomputed by admission, under the lock for
/// a landing).
pub const PROP_PROTECTED_UNCHANGED: &str = "AGENT_TASK_PROTECTED_PATHS_UNCHANGED";
/// The operator's `land --allow-protected-change` landed a revision that
/// changes protected paths: no receipt exists and no test ran on it. Never
/// together with [`PROP_QUALIFIED`] or [`PROP_PROTECTED_UNCHANGED`].
pub const PROP_OVERRIDE: &str = "AGENT_TASK_OPERATOR_OVERRIDE_WITHOUT_RECEIPT";

/// Most subjects a statement may name.
pub const MAX_SUBJECTS: usize = 8;
/// Most configuration entries, policies or properties.
pub const MAX_ITEMS: usize = 64;

/// A Statement v1 with a typed (building) or untyped (parsing) predicate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Statement<P> {
    /// Always [`STATEMENT_V1`].
    #[serde(rename = "_type")]
    pub statement_type: String,
    /// The artifacts the statement is about.
    pub subject: Vec<ResourceDescriptor>,
    /// What the predicate is.
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    /// The predicate.
    pub predicate: P,
}

/// An in-toto ResourceDescriptor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourceDescriptor {
    /// Name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// DigestSet: algorithm → lowercase hex.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub digest: BTreeMap<String, String>,
    /// The bytes themselves, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// Where the bytes can be fetched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub download_location: Option<String>,
    /// Media type of the bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// Extra facts about the resource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, Value>>,
}

impl ResourceDescriptor {
    /// A descriptor with a name and a digest set.
    pub fn named(name: &str, digest: &[(&str, &str)]) -> ResourceDescriptor {
        ResourceDescriptor {
            name: Some(name.to_owned()),
            digest: digest
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..ResourceDescriptor::default()
        }
    }

    fn check(&self, what: &str) -> Result<()> {
        if self.name.is_none() && self.uri.is_none() && self.digest.is_empty() {
            return Err(invalid(format!(
                "{what}: a resource descriptor needs a name, a uri or a digest"
            )));
        }
        if self.digest.len() > MAX_ITEMS {
            return Err(invalid(format!("{what}: too many digests")));
        }
        for (alg, v) in &self.digest {
            let hex_len = match alg.as_str() {
                "sha256" | ALG_REVISION | ALG_REQUIREMENT | ALG_PROFILE | ALG_RUNTIME
                | ALG_TASK | ALG_REVIEW_RECORD => Some(&[64usize][..]),
                ALG_GIT_COMMIT | "gitTree" | "gitBlob" => Some(&[40usize, 64][..]),
                _ => None,
            };
            let lower_hex = v
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if v.is_empty()
                || v.len() > 256
                || hex_len.is_some_and(|l| !l.contains(&v.len()) || !lower_hex)
            {
                return Err(invalid(format!(
                    "{what}: digest {alg} is not {} lowercase hex",
                    hex_len.map_or("valid".into(), |l| format!("{l:?}-character"))
                )));
            }
        }
        Ok(())
    }
}

/// The test-result v0.1 predicate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TestResult {
    /// `PASSED`, `WARNED` or `FAILED`.
    pub result: String,
    /// The configuration of the run: recipe, runtime identity, profile, transfer.
    pub configuration: Vec<ResourceDescriptor>,
    /// A link to the run (never set: the run is local).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Tests that passed (the step, when the command passed).
    #[serde(default)]
    pub passed_tests: Vec<String>,
    /// Tests with warnings (never set).
    #[serde(default)]
    pub warned_tests: Vec<String>,
    /// Tests that failed (the step, when the command failed).
    #[serde(default)]
    pub failed_tests: Vec<String>,
}

/// The svr v0.2 verifier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SvrVerifier {
    /// [`VERIFIER_ID`].
    pub id: String,
    /// The policies applied: the installed workflow requirement.
    pub policies: Vec<ResourceDescriptor>,
}

/// The svr v0.2 predicate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Svr {
    /// Who verified.
    pub verifier: SvrVerifier,
    /// When the verification happened (RFC 3339 UTC).
    pub time_created: String,
    /// The passing properties.
    pub properties: Vec<String>,
}

/// An executor registration's public key, as enrolled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RegistrationKey {
    /// Registration.
    pub registration_id: String,
    /// Executor.
    pub executor_id: String,
    /// Epoch.
    pub epoch: u64,
    /// Key id as the receipt names it.
    pub key_id: String,
    /// The enrolled Ed25519 public key, hex.
    pub public_key: String,
}

/// The landing the statements are about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LandingFacts {
    /// Repository.
    pub repository: String,
    /// Target name.
    pub target: String,
    /// The Change that landed.
    pub change_id: String,
    /// Its version.
    pub change_version: u64,
    /// The landed commit (null for a source that is not a git work tree).
    #[serde(deserialize_with = "Option::deserialize")]
    pub git_commit: Option<String>,
    /// The target head the landing replaced.
    pub old_head: Sha256Hex,
    /// When the landing was recorded.
    pub landed_at: String,
    /// Whether the operator's `--allow-protected-change` let a revision
    /// that changes protected paths land (without a receipt).
    pub allow_protected_change: bool,
    /// The protected paths it changes relative to `oldHead`: the total and
    /// the first [`crate::contract::protected::MAX_LISTED`] in path order
    /// (`{"total": 0, "paths": []}` unless allowed).
    pub protected_changes: ProtectedChanges,
}

/// The agent-task receipt predicate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReceiptPredicate {
    /// The authority (data directory id) that made the receipt.
    pub authority: String,
    /// `domain_digest("agent-task.receipt.v2", canonical receipt)`; null
    /// only for an operator's override landing, which has no receipt.
    #[serde(deserialize_with = "Option::deserialize")]
    pub receipt_digest: Option<Sha256Hex>,
    /// The v2 receipt, verbatim; null only for an override landing.
    #[serde(deserialize_with = "Option::deserialize")]
    pub receipt: Option<Receipt>,
    /// The public key of every registration the receipt names.
    pub registration_keys: Vec<RegistrationKey>,
    /// The landing (null: attested before landing).
    #[serde(deserialize_with = "Option::deserialize")]
    pub landing: Option<LandingFacts>,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::AttestationInvalid, msg)
}

/// A parsed, shape-checked statement.
#[derive(Debug, Clone)]
pub enum Parsed {
    /// test-result v0.1.
    TestResult(TestResult),
    /// svr v0.2.
    Svr(Svr),
    /// The agent-task receipt predicate.
    Receipt(Box<ReceiptPredicate>),
}

fn typed<T: DeserializeOwned>(v: Value, what: &str) -> Result<T> {
    serde_json::from_value(v).map_err(|e| invalid(format!("{what} predicate: {e}")))
}

/// Parses a statement payload strictly: Statement v1, known predicate type,
/// every field of the predicate's schema and nothing else.
pub fn parse(payload: &[u8]) -> Result<(Vec<ResourceDescriptor>, Parsed)> {
    let s: Statement<Value> = serde_json::from_slice(payload)
        .map_err(|e| invalid(format!("the payload is not an in-toto Statement: {e}")))?;
    if s.statement_type != STATEMENT_V1 {
        return Err(invalid(format!(
            "unsupported statement type {:?}",
            s.statement_type.chars().take(100).collect::<String>()
        )));
    }
    if s.subject.is_empty() || s.subject.len() > MAX_SUBJECTS {
        return Err(invalid(format!(
            "a statement names 1..={MAX_SUBJECTS} subjects"
        )));
    }
    for d in &s.subject {
        d.check("subject")?;
        if d.digest.is_empty() {
            return Err(invalid("every subject must carry a digest"));
        }
    }
    let parsed = match s.predicate_type.as_str() {
        TEST_RESULT_V0_1 => {
            let t: TestResult = typed(s.predicate, "test-result")?;
            if !matches!(t.result.as_str(), "PASSED" | "WARNED" | "FAILED") {
                return Err(invalid("test-result: result is PASSED, WARNED or FAILED"));
            }
            if t.configuration.is_empty() || t.configuration.len() > MAX_ITEMS {
                return Err(invalid("test-result: 1..=64 configuration entries"));
            }
            for c in &t.configuration {
                c.check("test-result configuration")?;
            }
            if t.passed_tests.len() + t.warned_tests.len() + t.failed_tests.len() > MAX_ITEMS {
                return Err(invalid("test-result: too many test names"));
            }
            Parsed::TestResult(t)
        }
        SVR_V0_2 => {
            let v: Svr = typed(s.predicate, "svr")?;
            if v.verifier.id.is_empty() {
                return Err(invalid("svr: verifier.id is required"));
            }
            if v.verifier.policies.len() > MAX_ITEMS || v.properties.len() > MAX_ITEMS {
                return Err(invalid("svr: too many policies or properties"));
            }
            for p in &v.verifier.policies {
                p.check("svr policy")?;
            }
            crate::clock::parse_rfc3339(&v.time_created)
                .map_err(|_| invalid("svr: timeCreated is not an RFC 3339 timestamp"))?;
            Parsed::Svr(v)
        }
        RECEIPT_V1 => Parsed::Receipt(Box::new(typed(s.predicate, "receipt")?)),
        other => {
            return Err(invalid(format!(
                "unsupported predicate type {:?}",
                other.chars().take(100).collect::<String>()
            ))
            .with(
                "predicate_type",
                other.chars().take(100).collect::<String>(),
            ));
        }
    };
    Ok((s.subject, parsed))
}

/// The compact JSON bytes of a statement (the DSSE payload).
pub fn to_payload<P: Serialize>(s: &Statement<P>) -> Result<Vec<u8>> {
    serde_json::to_vec(s).map_err(|e| Error::internal(format!("cannot serialise a statement: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stmt(pt: &str, predicate: Value) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "_type": STATEMENT_V1,
            "subject": [{"name": "revision", "digest": {ALG_REVISION: "a".repeat(64)}}],
            "predicateType": pt,
            "predicate": predicate,
        }))
        .expect("json")
    }

    #[test]
    fn strict_parsing() {
        let ok = serde_json::json!({"result": "PASSED", "configuration": [{"name": "recipe"}],
                                    "passedTests": ["tests"], "warnedTests": [], "failedTests": []});
        assert!(parse(&stmt(TEST_RESULT_V0_1, ok.clone())).is_ok());
        let mut bad = ok.clone();
        bad["result"] = "OK".into();
        assert!(parse(&stmt(TEST_RESULT_V0_1, bad)).is_err());
        let mut bad = ok.clone();
        bad["extra"] = 1.into();
        assert!(parse(&stmt(TEST_RESULT_V0_1, bad)).is_err());
        assert!(parse(&stmt("https://example.com/x", ok)).is_err());
        let svr = serde_json::json!({"verifier": {"id": VERIFIER_ID, "policies": []},
                                     "timeCreated": "2026-01-01T00:00:00.000Z", "properties": []});
        assert!(parse(&stmt(SVR_V0_2, svr.clone())).is_ok());
        let mut bad = svr.clone();
        bad["verifier"] = serde_json::json!({"id": VERIFIER_ID});
        assert!(
            parse(&stmt(SVR_V0_2, bad)).is_err(),
            "policies is required in v0.2"
        );
        let mut bad = svr;
        bad["timeCreated"] = "yesterday".into();
        assert!(parse(&stmt(SVR_V0_2, bad)).is_err());
        // A subject digest must be lowercase hex of the right length.
        let mut v: Value = serde_json::from_slice(&stmt(SVR_V0_2, Value::Null)).expect("v");
        v["subject"][0]["digest"][ALG_REVISION] = "A".repeat(64).into();
        assert!(parse(&serde_json::to_vec(&v).expect("j")).is_err());
        assert!(parse(b"{}").is_err());
    }
}
