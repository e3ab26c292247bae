//! `agent-task verify`: checks the agent-task note of a commit with only
//! the repository and the authority's public key (no data directory).
//!
//! For every envelope (one per line of the note), in order: strict
//! envelope shape; payload type `application/vnd.in-toto+json`; a
//! signature whose key id is the given key's; strict Ed25519 over the PAE;
//! a Statement v1 with a known predicate type and a strictly shaped
//! predicate; the `revision` subject equal to the revision recomputed from
//! the commit's tree (and its `sha256` to the canonical manifest's) and the
//! `git-commit` subject equal to the commit. Then the set: exactly one
//! qualification verdict (svr, with `AGENT_TASK_QUALIFIED` and
//! `AGENT_TASK_LANDED`) and one receipt statement whose receipt re-digests
//! to its `receiptDigest`, names the same revision, and lands this commit;
//! every receipt transfer has exactly one PASSED test result and no
//! test result outside the receipt passed.

use super::dsse::{self, Envelope};
use super::git;
use super::statement::{self, Parsed, ResourceDescriptor};
use crate::error::{Code, Error, Result};
use serde_json::{Value, json};
use std::path::Path;

/// Most envelopes one note may hold.
pub const MAX_ENVELOPES: usize = 256;

/// `verify` request.
#[derive(Debug, Clone)]
pub struct VerifyRequest<'a> {
    /// The repository (any git directory or work tree).
    pub repo: &'a Path,
    /// The commit (any name git resolves to a commit).
    pub commit: &'a str,
    /// The authority's public key.
    pub public_key: [u8; 32],
}

fn at_line(e: Error, line: usize) -> Error {
    e.with("line", line)
}

fn check_subjects(
    subject: &[ResourceDescriptor],
    tree: &git::TreeRevision,
    commit: &str,
) -> Result<()> {
    let rev = subject
        .iter()
        .find(|d| d.digest.contains_key(statement::ALG_REVISION))
        .ok_or_else(|| {
            Error::new(
                Code::AttestationInvalid,
                "the statement names no agent-task revision",
            )
        })?;
    let claimed = rev
        .digest
        .get(statement::ALG_REVISION)
        .cloned()
        .unwrap_or_default();
    let manifest_ok = rev
        .digest
        .get("sha256")
        .is_none_or(|d| d == tree.manifest_sha256.as_str());
    if claimed != tree.revision.as_str() || !manifest_ok {
        return Err(Error::new(
            Code::AttestationRevisionMismatch,
            "the attested revision is not the revision of the commit's tree",
        )
        .with("attested", claimed)
        .with("tree_revision", tree.revision.as_str()));
    }
    let commits: Vec<&String> = subject
        .iter()
        .filter_map(|d| d.digest.get(statement::ALG_GIT_COMMIT))
        .collect();
    match commits.as_slice() {
        [c] if c.as_str() == commit => {}
        [] => {
            return Err(Error::new(
                Code::AttestationCommitMismatch,
                "the statement names no git commit (attested before landing?)",
            )
            .with("commit", commit));
        }
        _ => {
            return Err(Error::new(
                Code::AttestationCommitMismatch,
                "the statement attests another commit (the note was moved)",
            )
            .with(
                "attested",
                commits.iter().map(|c| c.as_str()).collect::<Vec<_>>(),
            )
            .with("commit", commit));
        }
    }
    if subject.len() != 2 {
        return Err(Error::new(
            Code::AttestationInvalid,
            "a landed statement names exactly the revision and the commit",
        ));
    }
    Ok(())
}

fn incomplete(msg: impl Into<String>) -> Error {
    Error::new(Code::AttestationInvalid, msg)
}

/// Verifies the agent-task note of a commit; returns the verdict.
pub fn verify(req: &VerifyRequest<'_>) -> Result<Value> {
    let commit = git::resolve_commit(req.repo, req.commit)?;
    let note = git::read_note(req.repo, &commit)?.ok_or_else(|| {
        Error::new(
            Code::NotFound,
            format!("commit {commit} has no {} note", git::NOTES_REF),
        )
        .with("commit", commit.clone())
        .with(
            "fix",
            format!("fetch the notes: git fetch origin {0}:{0}", git::NOTES_REF),
        )
    })?;
    let text = std::str::from_utf8(&note).map_err(|_| incomplete("the note is not UTF-8 text"))?;
    let lines: Vec<&str> = text
        .strip_suffix('\n')
        .unwrap_or(text)
        .split('\n')
        .collect();
    if lines.len() > MAX_ENVELOPES {
        return Err(Error::new(
            Code::TooLarge,
            format!("the note holds more than {MAX_ENVELOPES} envelopes"),
        ));
    }
    let tree_id = git::tree_of(req.repo, &commit)?;
    let tree = git::revision_of_tree(req.repo, &tree_id)?;
    let keyid = super::key::key_id(&req.public_key);
    let mut tests = Vec::new();
    let mut svrs = Vec::new();
    let mut receipts = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let n = i + 1;
        if line.is_empty() {
            return Err(at_line(incomplete("an empty line in the note"), n));
        }
        let env = Envelope::parse(line.as_bytes()).map_err(|e| at_line(e, n))?;
        let payload = env
            .verify(dsse::PAYLOAD_TYPE_IN_TOTO, &req.public_key, &keyid)
            .map_err(|e| at_line(e, n))?;
        let (subject, parsed) = statement::parse(&payload).map_err(|e| at_line(e, n))?;
        check_subjects(&subject, &tree, &commit).map_err(|e| at_line(e, n))?;
        match parsed {
            Parsed::TestResult(t) => tests.push((n, t)),
            Parsed::Svr(s) => svrs.push((n, s)),
            Parsed::Receipt(r) => receipts.push((n, r)),
        }
    }
    let ([(_, svr)], [(_, rp)]) = (svrs.as_slice(), receipts.as_slice()) else {
        return Err(incomplete(format!(
            "a landing note holds exactly one verdict and one receipt statement (found {} and {})",
            svrs.len(),
            receipts.len()
        )));
    };
    for p in [statement::PROP_QUALIFIED, statement::PROP_LANDED] {
        if !svr.properties.iter().any(|x| x == p) {
            return Err(incomplete(format!("the verdict does not assert {p}")));
        }
    }
    if svr.verifier.id != statement::VERIFIER_ID {
        return Err(incomplete("the verdict names another verifier"));
    }
    let digest = rp.receipt.digest()?;
    if digest != rp.receipt_digest {
        return Err(incomplete(
            "the receipt statement's receipt does not match its digest",
        ));
    }
    if rp.receipt.revision != tree.revision {
        return Err(Error::new(
            Code::AttestationRevisionMismatch,
            "the receipt is for another revision",
        ));
    }
    let landing = rp
        .landing
        .as_ref()
        .ok_or_else(|| incomplete("the receipt statement records no landing"))?;
    if landing.git_commit.as_deref() != Some(commit.as_str()) {
        return Err(Error::new(
            Code::AttestationCommitMismatch,
            "the receipt statement records the landing of another commit",
        ));
    }
    if rp.authority != rp.receipt.audience {
        return Err(incomplete("the receipt statement names another authority"));
    }
    // Test results against the receipt's transfers.
    let transfer_of = |t: &statement::TestResult| -> Option<String> {
        t.configuration
            .iter()
            .find(|c| c.name.as_deref() == Some("transfer"))
            .and_then(|c| c.digest.get("sha256").cloned())
    };
    let mut results = Vec::new();
    for x in &rp.receipt.transfers {
        let hits: Vec<&(usize, statement::TestResult)> = tests
            .iter()
            .filter(|(_, t)| transfer_of(t).as_deref() == Some(x.transfer_digest.as_str()))
            .collect();
        match hits.as_slice() {
            [(_, t)] if t.result == "PASSED" => {}
            _ => {
                return Err(incomplete(format!(
                    "the receipt's transfer for task {} has no single PASSED test result",
                    x.task_id
                )));
            }
        }
    }
    for (n, t) in &tests {
        let d = transfer_of(t)
            .ok_or_else(|| at_line(incomplete("a test result names no transfer"), *n))?;
        let in_receipt = rp.receipt.transfers.iter().any(|x| x.transfer_digest == d);
        if t.result == "PASSED" && !in_receipt {
            return Err(at_line(
                incomplete("a passing test result is not part of the receipt"),
                *n,
            ));
        }
        results.push(json!({
            "line": n,
            "result": t.result,
            "tests": t.passed_tests.iter().chain(&t.failed_tests).chain(&t.warned_tests).collect::<Vec<_>>(),
            "transfer_digest": d,
            "in_receipt": in_receipt,
        }));
    }
    Ok(json!({
        "verified": true,
        "commit": commit,
        "tree": tree_id,
        "revision": tree.revision,
        "files": tree.files,
        "key_id": keyid,
        "notes_ref": git::NOTES_REF,
        "envelopes": lines.len(),
        "authority": rp.authority,
        "repository": rp.receipt.repository,
        "change_id": rp.receipt.change_id,
        "change_version": rp.receipt.change_version,
        "receipt_digest": rp.receipt_digest,
        "verifier": svr.verifier.id,
        "time_created": svr.time_created,
        "properties": svr.properties,
        "allow_protected_change": landing.allow_protected_change,
        "test_results": results,
    }))
}
