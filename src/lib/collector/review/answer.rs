//! Reading a response envelope: Claude Code's print-mode result object
//! (`--output-format json`) and the structured answer inside it.
//!
//! The envelope is read leniently where the CLI evolves (unknown members
//! are ignored: newer versions add fields) and strictly where the
//! controller depends on it: `type` must be `result`, `subtype` `success`,
//! `is_error` false, `session_id` the call's own, and `structured_output`
//! an answer that follows the call's schema exactly, names only the call's
//! files and confirms every one of them (`docs/review.md`, "The answer").

use super::plan::{CallRequest, MAX_ANSWER_PATH, MAX_FINDING_MESSAGE, MAX_FINDINGS_PER_CRITERION};
use super::types::{ReviewCriterion, Severity};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Longest `detail` kept from an envelope.
pub const MAX_DETAIL: usize = 512;

#[derive(Deserialize)]
struct RawUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
}

#[derive(Deserialize)]
struct RawEnvelope {
    #[serde(rename = "type")]
    kind: String,
    subtype: String,
    is_error: bool,
    session_id: String,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    structured_output: Option<Value>,
    #[serde(default)]
    usage: Option<RawUsage>,
    #[serde(default, rename = "modelUsage")]
    model_usage: Option<BTreeMap<String, Value>>,
    #[serde(default)]
    errors: Option<Vec<String>>,
}

/// The facts of an envelope the controller uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// `is_error`.
    pub is_error: bool,
    /// `subtype`.
    pub subtype: String,
    /// `session_id`.
    pub session_id: String,
    /// `result` or `errors`, shortened.
    pub detail: Option<String>,
    /// `structured_output`.
    pub structured_output: Option<Value>,
    /// `usage.input_tokens`.
    pub input_tokens: u64,
    /// `usage.output_tokens`.
    pub output_tokens: u64,
    /// Keys of `modelUsage`, sorted.
    pub models: Vec<String>,
}

/// Shortens `s` to at most [`MAX_DETAIL`] bytes on a character boundary.
pub fn shorten(s: &str) -> String {
    let mut end = s.len().min(MAX_DETAIL);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_owned()
}

/// Parses an envelope; `Err` is a one-line reason.
pub fn parse_envelope(bytes: &[u8]) -> Result<Envelope, String> {
    let raw: RawEnvelope = serde_json::from_slice(bytes).map_err(|e| {
        shorten(&format!(
            "the response is not a Claude Code result object: {e}"
        ))
    })?;
    if raw.kind != "result" {
        return Err(shorten(&format!(
            "the response has type {:?}, not \"result\"",
            raw.kind
        )));
    }
    if raw.session_id.len() > 128 {
        return Err("the response's session_id is over 128 bytes".into());
    }
    let detail = match (&raw.errors, &raw.result) {
        (Some(e), _) if !e.is_empty() => Some(shorten(&e.join("; "))),
        (_, Some(r)) => Some(shorten(r)),
        _ => None,
    };
    let usage = raw.usage.unwrap_or(RawUsage {
        input_tokens: None,
        output_tokens: None,
    });
    let mut models: Vec<String> = raw
        .model_usage
        .unwrap_or_default()
        .into_keys()
        .take(16)
        .map(|k| shorten(&k))
        .collect();
    models.sort();
    Ok(Envelope {
        is_error: raw.is_error,
        subtype: shorten(&raw.subtype),
        session_id: raw.session_id,
        detail,
        structured_output: raw.structured_output,
        input_tokens: usage.input_tokens.unwrap_or(0),
        output_tokens: usage.output_tokens.unwrap_or(0),
        models,
    })
}

/// An answer's finding.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerFinding {
    /// Severity.
    pub severity: Severity,
    /// Path, if given.
    #[serde(default)]
    pub path: Option<String>,
    /// Line, if given.
    #[serde(default)]
    pub line: Option<u64>,
    /// Message.
    pub message: String,
}

/// An answer's criterion row.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnswerCriterion {
    /// Criterion id.
    pub id: String,
    /// `passed` or `failed`.
    pub outcome: AnswerOutcome,
    /// Findings.
    pub findings: Vec<AnswerFinding>,
}

/// An answer row's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AnswerOutcome {
    /// Holds for every file of the call.
    Passed,
    /// Does not.
    Failed,
}

/// The structured answer of one call.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    /// One row per criterion, in any order.
    pub criteria: Vec<AnswerCriterion>,
    /// The paths the model reviewed.
    pub reviewed: Vec<String>,
}

/// Decodes and checks `structured_output` against the call: exactly one row
/// per criterion; findings bounded, each path one of the call's and each
/// line within the part shown of that path; `reviewed` exactly the call's
/// paths, each once. Returns the answer with rows in the profile's order.
pub fn check_answer(
    value: &Value,
    criteria: &[ReviewCriterion],
    call: &CallRequest,
) -> Result<Answer, String> {
    let mut a: Answer = serde_json::from_value(value.clone())
        .map_err(|e| shorten(&format!("the answer does not follow the schema: {e}")))?;
    if a.criteria.len() != criteria.len() {
        return Err(format!(
            "the answer has {} criterion rows; the review has {}",
            a.criteria.len(),
            criteria.len()
        ));
    }
    let mut rows = Vec::with_capacity(criteria.len());
    for c in criteria {
        let mut it = a.criteria.iter().filter(|r| r.id == c.id);
        let row = it
            .next()
            .ok_or_else(|| shorten(&format!("the answer has no row for {:?}", c.id)))?;
        if it.next().is_some() {
            return Err(shorten(&format!("the answer has two rows for {:?}", c.id)));
        }
        rows.push(row.clone());
    }
    // Line ranges shown per path (a chunked file may appear in several parts).
    let mut shown: BTreeMap<&str, Vec<(u64, u64)>> = BTreeMap::new();
    for p in &call.parts {
        shown
            .entry(p.path.as_str())
            .or_default()
            .push((p.first_line, p.last_line));
    }
    for r in &rows {
        if r.findings.len() > MAX_FINDINGS_PER_CRITERION {
            return Err(format!(
                "criterion {:?} has over {MAX_FINDINGS_PER_CRITERION} findings",
                r.id
            ));
        }
        for f in &r.findings {
            if f.message.is_empty()
                || f.message.len() > MAX_FINDING_MESSAGE
                || f.message.contains('\0')
            {
                return Err("a finding's message is empty, over 2000 bytes or holds NUL".into());
            }
            match (&f.path, f.line) {
                (None, Some(_)) => return Err("a finding gives a line without a path".into()),
                (None, None) => {}
                (Some(p), line) => {
                    let ranges = shown.get(p.as_str()).ok_or_else(|| {
                        shorten(&format!(
                            "a finding names {p:?}, which this call did not show"
                        ))
                    })?;
                    if let Some(l) = line
                        && !ranges.iter().any(|&(a, b)| a <= l && l <= b)
                    {
                        return Err(shorten(&format!(
                            "a finding names line {l} of {p:?}, which this call did not show"
                        )));
                    }
                }
            }
        }
    }
    let mut seen = BTreeSet::new();
    for p in &a.reviewed {
        if p.len() > MAX_ANSWER_PATH || !shown.contains_key(p.as_str()) {
            return Err(shorten(&format!(
                "the answer claims to have reviewed {p:?}, which this call did not show"
            )));
        }
        if !seen.insert(p.as_str()) {
            return Err(shorten(&format!(
                "the answer lists {p:?} twice in reviewed"
            )));
        }
    }
    if seen.len() != shown.len() {
        let missing: Vec<&str> = shown
            .keys()
            .filter(|k| !seen.contains(*k))
            .copied()
            .collect();
        return Err(shorten(&format!(
            "the answer does not confirm reviewing {} of this call's files: {missing:?}",
            missing.len()
        )));
    }
    a.criteria = rows;
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collector::review::plan::{EntryKind, ExposedPart};
    use crate::wire::digest::Sha256Hex;
    use serde_json::json;

    fn call() -> CallRequest {
        let part = |path: &str, a, b| ExposedPart {
            path: path.into(),
            kind: EntryKind::File,
            file_sha256: Sha256Hex::digest(b"f"),
            file_bytes: 10,
            part: 1,
            parts: 1,
            offset: 0,
            length: 10,
            sha256: Sha256Hex::digest(b"p"),
            first_line: a,
            last_line: b,
        };
        CallRequest {
            version: 1,
            review_request_digest: Sha256Hex::digest(b"r"),
            index: 0,
            calls: 1,
            ticket: "rt_x".into(),
            session_id: "s".into(),
            executable: vec![],
            flags: vec![],
            env: vec![],
            timeout_ms: 1000,
            max_output_bytes: 4096,
            prompt_sha256: Sha256Hex::digest(b"p"),
            prompt_bytes: 1,
            source_bytes: 10,
            parts: vec![part("a.rs", 1, 10), part("b.rs", 1, 3)],
        }
    }

    fn crit() -> Vec<ReviewCriterion> {
        vec![
            ReviewCriterion {
                id: "x".into(),
                required: true,
                text: "t".into(),
            },
            ReviewCriterion {
                id: "y".into(),
                required: false,
                text: "t".into(),
            },
        ]
    }

    fn good() -> Value {
        json!({"criteria": [
            {"id": "y", "outcome": "passed", "findings": []},
            {"id": "x", "outcome": "failed", "findings": [
                {"severity": "blocking", "path": "a.rs", "line": 4, "message": "bad"}]}],
            "reviewed": ["b.rs", "a.rs"]})
    }

    #[test]
    fn a_good_answer_is_reordered_to_the_profile() {
        let a = check_answer(&good(), &crit(), &call()).expect("ok");
        assert_eq!(a.criteria[0].id, "x");
        assert_eq!(a.criteria[0].findings[0].line, Some(4));
    }

    #[test]
    fn answers_off_the_contract_are_malformed() {
        let mut cases = Vec::new();
        let mut v = good();
        v["reviewed"] = json!(["a.rs", "b.rs", "c.rs"]);
        cases.push(v); // claims coverage it did not get
        let mut v = good();
        v["reviewed"] = json!(["a.rs"]);
        cases.push(v); // does not confirm a file
        let mut v = good();
        v["reviewed"] = json!(["a.rs", "a.rs", "b.rs"]);
        cases.push(v);
        let mut v = good();
        v["criteria"][1]["findings"][0]["line"] = json!(11);
        cases.push(v); // line not shown
        let mut v = good();
        v["criteria"][1]["findings"][0]["path"] = json!("z.rs");
        cases.push(v);
        let mut v = good();
        v["criteria"][0]["id"] = json!("x");
        cases.push(v); // duplicate row, missing y
        let mut v = good();
        v["extra"] = json!(1);
        cases.push(v);
        let mut v = good();
        v["criteria"][0]["outcome"] = json!("maybe");
        cases.push(v);
        let mut v = good();
        v["criteria"][1]["findings"][0]["message"] = json!("");
        cases.push(v);
        for v in cases {
            assert!(check_answer(&v, &crit(), &call()).is_err(), "{v}");
        }
    }

    #[test]
    fn envelopes_are_read_as_claude_code_prints_them() {
        // The shape Claude Code 2.1.112 printed here without credentials.
        let real = br#"{"type":"result","subtype":"success","is_error":true,"api_error_status":null,"duration_ms":298,"duration_api_ms":0,"num_turns":1,"result":"Not logged in \u00b7 Please run /login","stop_reason":"stop_sequence","session_id":"dd214486-bda4-4cf2-b5ab-dfd12bc05a5e","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"permission_denials":[],"terminal_reason":"completed","fast_mode_state":"off","uuid":"d5a17275-1542-4ced-86ad-698a1f5616c0"}"#;
        let e = parse_envelope(real).expect("parses");
        assert!(e.is_error);
        assert_eq!(
            e.detail.as_deref(),
            Some("Not logged in · Please run /login")
        );
        assert!(parse_envelope(b"{\"type\":\"assistant\",\"subtype\":\"x\",\"is_error\":false,\"session_id\":\"s\"}").is_err());
        assert!(parse_envelope(b"not json").is_err());
        let dup = br#"{"type":"result","type":"result","subtype":"success","is_error":false,"session_id":"s"}"#;
        assert!(parse_envelope(dup).is_err());
    }
}
