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
use crate::workflow::authority::snapshot::Manifest;
use serde_json::Value;
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
    /// Accept a landing the operator's `--allow-protected-change` let in
    /// (no receipt, no tests) as verified, reported `qualified: false`;
    /// without it such a commit is `attestation_unqualified`.
    pub allow_override: bool,
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
    // One `git cat-file --batch-command` session answers the commit, the
    // note blob and every blob of the tree.
    let mut objects = git::Objects::open(req.repo)?;
    let git::Commit {
        id: commit,
        tree: tree_id,
    } = objects.resolve_commit(req.repo, req.commit)?;
    // The tree is listed (a git process of its own) while the note is
    // looked up and read; each answer is then taken in the order the
    // checks always had, the note's first.
    let (note, listed) = std::thread::scope(|s| {
        let listing = s.spawn(|| git::list_tree(req.repo, &tree_id));
        let note = objects.note(req.repo, &commit);
        let listed = listing
            .join()
            .unwrap_or_else(|_| Err(Error::internal("the tree listing panicked")));
        (note, listed)
    });
    let note = note?.ok_or_else(|| {
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
    let (manifest, oids) = objects.manifest_of(listed?)?;
    objects.finish()?;
    let tree = git::TreeRevision::of(&manifest)?;
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
    if svr.verifier.id != statement::VERIFIER_ID {
        return Err(incomplete("the verdict names another verifier"));
    }
    let landing = rp.landing.as_ref().ok_or_else(|| {
        incomplete(
            "the receipt statement records no landing: the note attests a proposed candidate \
             (agent-task propose), which has not landed",
        )
        .with("landed", false)
        .with("commit", commit.clone())
        .with(
            "fix",
            "verify the target once it has landed: after a forge-side merge, `agent-task forge \
             sync` writes the landing's note on the merged commit",
        )
    })?;
    if landing.git_commit.as_deref() != Some(commit.as_str()) {
        return Err(Error::new(
            Code::AttestationCommitMismatch,
            "the receipt statement records the landing of another commit",
        ));
    }
    let has = |p: &str| svr.properties.iter().filter(|x| x.as_str() == p).count();
    if svr.properties.iter().any(|p| has(p) > 1) {
        return Err(incomplete("the verdict repeats a property"));
    }
    let results = if landing.allow_protected_change {
        check_override(svr, rp, landing, &tests)?
    } else {
        check_qualified(svr, rp, landing, &tree, &tests)?
    };
    if !landing.allow_protected_change {
        refuse_checkout_findings(req.repo, &manifest, &oids)?;
    }
    let pc = &landing.protected_changes;
    if landing.allow_protected_change && !req.allow_override {
        return Err(Error::new(
            Code::AttestationUnqualified,
            "the operator landed this commit with --allow-protected-change: it changes protected \
             paths, has no receipt and no test ran on it; the signatures verify, but it is not \
             qualified",
        )
        .with("commit", commit.clone())
        .with("allow_protected_change", true)
        .with("protected_changes_total", pc.total)
        .with(
            "protected_changes",
            serde_json::to_value(&pc.paths).unwrap_or_default(),
        )
        .with("properties", svr.properties.clone())
        .with(
            "fix",
            "accept operator overrides explicitly with verify --allow-override",
        ));
    }
    Ok(serde_json::to_value(Verified {
        allow_protected_change: landing.allow_protected_change,
        authority: &rp.authority,
        change_id: &landing.change_id,
        change_version: landing.change_version,
        commit: &commit,
        envelopes: lines.len(),
        files: tree.files,
        key_id: &keyid,
        notes_ref: git::NOTES_REF,
        properties: &svr.properties,
        protected_changes: pc,
        qualified: !landing.allow_protected_change,
        receipt_digest: rp.receipt_digest.as_ref(),
        repository: &landing.repository,
        revision: &tree.revision,
        test_results: results,
        time_created: &svr.time_created,
        tree: &tree_id,
        verified: true,
        verifier: &svr.verifier.id,
    })?)
}

/// A qualified landing whose checkout would not reproduce the tested
/// bytes (`workflow::authority::checkout`) is refused
/// (`protected_path_changed`, the paths in `details`).
fn refuse_checkout_findings(repo: &Path, m: &Manifest, oids: &[String]) -> Result<()> {
    let found =
        crate::workflow::authority::checkout::tree_findings(|| git::objects_dir(repo), m, oids)?;
    if found.is_empty() {
        return Ok(());
    }
    Err(found.error("verify refused: a checkout of this commit is not the tested revision"))
}

/// The set of a qualified landing: the verdict asserts qualification,
/// unchanged protected paths and the landing and nothing of an override;
/// the receipt re-digests, names this revision and its authority; every
/// receipt transfer has exactly one PASSED test result and no test result
/// outside the receipt passed. Returns the test results for the verdict.
fn check_qualified(
    svr: &statement::Svr,
    rp: &statement::ReceiptPredicate,
    landing: &statement::LandingFacts,
    tree: &git::TreeRevision,
    tests: &[(usize, statement::TestResult)],
) -> Result<Vec<Value>> {
    let want = [
        statement::PROP_QUALIFIED,
        statement::PROP_PROTECTED_UNCHANGED,
        statement::PROP_LANDED,
    ];
    for p in want {
        if !svr.properties.iter().any(|x| x == p) {
            return Err(incomplete(format!("the verdict does not assert {p}")));
        }
    }
    if svr.properties.iter().any(|x| x == statement::PROP_OVERRIDE) {
        return Err(incomplete(
            "the verdict claims an operator override of a landing that records none",
        ));
    }
    if !landing.protected_changes.is_empty() || !landing.protected_changes.paths.is_empty() {
        return Err(incomplete(
            "a landing without the operator's override lists protected changes",
        ));
    }
    let (Some(receipt), Some(receipt_digest)) = (&rp.receipt, &rp.receipt_digest) else {
        return Err(incomplete(
            "a qualified landing's receipt statement carries no receipt",
        ));
    };
    if &receipt.digest()? != receipt_digest {
        return Err(incomplete(
            "the receipt statement's receipt does not match its digest",
        ));
    }
    if receipt.revision != tree.revision {
        return Err(Error::new(
            Code::AttestationRevisionMismatch,
            "the receipt is for another revision",
        ));
    }
    if rp.authority != receipt.audience {
        return Err(incomplete("the receipt statement names another authority"));
    }
    if receipt.repository != landing.repository
        || receipt.change_id != landing.change_id
        || receipt.change_version != landing.change_version
    {
        return Err(incomplete(
            "the receipt and the landing name another repository or Change version",
        ));
    }
    // Test results against the receipt's transfers.
    let transfer_of = |t: &statement::TestResult| -> Option<String> {
        t.configuration
            .iter()
            .find(|c| c.name.as_deref() == Some("transfer"))
            .and_then(|c| c.digest.get("sha256").cloned())
    };
    for x in &receipt.transfers {
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
    let mut results = Vec::new();
    for (n, t) in tests {
        let d = transfer_of(t)
            .ok_or_else(|| at_line(incomplete("a test result names no transfer"), *n))?;
        let in_receipt = receipt.transfers.iter().any(|x| x.transfer_digest == d);
        if t.result == "PASSED" && !in_receipt {
            return Err(at_line(
                incomplete("a passing test result is not part of the receipt"),
                *n,
            ));
        }
        results.push(serde_json::to_value(TestResultOutput {
            in_receipt,
            line: *n,
            result: &t.result,
            tests: t
                .passed_tests
                .iter()
                .chain(&t.failed_tests)
                .chain(&t.warned_tests)
                .collect(),
            transfer_digest: &d,
        })?);
    }
    Ok(results)
}

/// The set of an operator's override landing: the verdict asserts the
/// landing and the override and nothing of qualification; the receipt
/// statement carries no receipt, digest or registration key and lists at
/// least one protected change; there is no test result at all.
fn check_override(
    svr: &statement::Svr,
    rp: &statement::ReceiptPredicate,
    landing: &statement::LandingFacts,
    tests: &[(usize, statement::TestResult)],
) -> Result<Vec<Value>> {
    for p in [statement::PROP_LANDED, statement::PROP_OVERRIDE] {
        if !svr.properties.iter().any(|x| x == p) {
            return Err(incomplete(format!(
                "the verdict of an override landing does not assert {p}"
            )));
        }
    }
    for p in [
        statement::PROP_QUALIFIED,
        statement::PROP_PROTECTED_UNCHANGED,
    ] {
        if svr.properties.iter().any(|x| x == p) {
            return Err(incomplete(format!(
                "the verdict of an override landing asserts {p}"
            )));
        }
    }
    if rp.receipt.is_some() || rp.receipt_digest.is_some() || !rp.registration_keys.is_empty() {
        return Err(incomplete(
            "an override landing's receipt statement names a receipt",
        ));
    }
    let pc = &landing.protected_changes;
    let listed = u64::try_from(pc.paths.len()).unwrap_or(u64::MAX);
    let max = crate::contract::protected::MAX_LISTED as u64;
    if pc.is_empty() || listed != pc.total.min(max) {
        return Err(incomplete(
            "an override landing lists 1..=100 protected changes, as many as its total allows",
        ));
    }
    if let Some((n, _)) = tests.first() {
        return Err(at_line(
            incomplete("an override landing has a test result (no test ran on it)"),
            *n,
        ));
    }
    Ok(Vec::new())
}

// The outputs below are JSON objects: their fields are in key order, the
// order the `Value` they become has.

/// `verify`'s output.
#[derive(serde::Serialize)]
struct Verified<'a> {
    allow_protected_change: bool,
    authority: &'a str,
    change_id: &'a str,
    change_version: u64,
    commit: &'a str,
    envelopes: usize,
    files: usize,
    key_id: &'a str,
    notes_ref: &'static str,
    properties: &'a [String],
    protected_changes: &'a crate::contract::protected::ProtectedChanges,
    qualified: bool,
    receipt_digest: Option<&'a crate::wire::digest::Sha256Hex>,
    repository: &'a str,
    revision: &'a crate::wire::digest::Sha256Hex,
    test_results: Vec<Value>,
    time_created: &'a str,
    tree: &'a str,
    verified: bool,
    verifier: &'a str,
}

/// One test result statement as `verify` reports it.
#[derive(serde::Serialize)]
struct TestResultOutput<'a, D: serde::Serialize> {
    in_receipt: bool,
    line: usize,
    result: &'a str,
    tests: Vec<&'a String>,
    transfer_digest: &'a D,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::protected::{ChangeKind, ProtectedChange};
    use crate::wire::digest::Sha256Hex;
    use statement::{LandingFacts, ProtectedChanges, ReceiptPredicate, Svr, SvrVerifier};

    fn svr(props: &[&str]) -> Svr {
        Svr {
            verifier: SvrVerifier {
                id: statement::VERIFIER_ID.into(),
                policies: Vec::new(),
            },
            time_created: "2026-01-01T00:00:00.000Z".into(),
            properties: props.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    fn landing(total: u64) -> LandingFacts {
        LandingFacts {
            repository: "demo/basic".into(),
            target: "main".into(),
            change_id: "chg_1".into(),
            change_version: 1,
            git_commit: Some("a".repeat(40)),
            old_head: Sha256Hex::digest(b"head"),
            landed_at: "2026-01-01T00:00:00.000Z".into(),
            allow_protected_change: total > 0,
            protected_changes: ProtectedChanges {
                total,
                paths: (0..total.min(100))
                    .map(|i| ProtectedChange {
                        path: format!("tests/{i}"),
                        change: ChangeKind::Content,
                    })
                    .collect(),
            },
        }
    }

    fn no_receipt(l: &LandingFacts) -> ReceiptPredicate {
        ReceiptPredicate {
            authority: "dd_1".into(),
            receipt_digest: None,
            receipt: None,
            registration_keys: Vec::new(),
            landing: Some(l.clone()),
        }
    }

    fn test_result() -> (usize, statement::TestResult) {
        (
            1,
            statement::TestResult {
                result: "FAILED".into(),
                configuration: Vec::new(),
                url: None,
                passed_tests: Vec::new(),
                warned_tests: Vec::new(),
                failed_tests: vec!["tests".into()],
            },
        )
    }

    const LANDED: &str = statement::PROP_LANDED;
    const OVERRIDE: &str = statement::PROP_OVERRIDE;
    const QUALIFIED: &str = statement::PROP_QUALIFIED;
    const UNCHANGED: &str = statement::PROP_PROTECTED_UNCHANGED;

    #[test]
    fn an_override_set_says_exactly_that_and_nothing_of_qualification() {
        let l = landing(3);
        let ok = check_override(&svr(&[LANDED, OVERRIDE]), &no_receipt(&l), &l, &[]);
        assert!(ok.is_ok(), "{ok:?}");
        let l150 = landing(150);
        assert!(check_override(&svr(&[LANDED, OVERRIDE]), &no_receipt(&l150), &l150, &[]).is_ok());
        let invalid = |s: Svr, rp: ReceiptPredicate, l: &LandingFacts, t: &[_]| {
            let e = check_override(&s, &rp, l, t).expect_err("refused");
            assert_eq!(e.code(), Code::AttestationInvalid, "{e:?}");
        };
        // The verdict claims qualification, or omits the override or the landing.
        invalid(svr(&[QUALIFIED, LANDED, OVERRIDE]), no_receipt(&l), &l, &[]);
        invalid(svr(&[UNCHANGED, LANDED, OVERRIDE]), no_receipt(&l), &l, &[]);
        invalid(svr(&[LANDED]), no_receipt(&l), &l, &[]);
        invalid(svr(&[OVERRIDE]), no_receipt(&l), &l, &[]);
        // A receipt digest, or a registration key, beside the override.
        let mut rp = no_receipt(&l);
        rp.receipt_digest = Some(Sha256Hex::digest(b"r"));
        invalid(svr(&[LANDED, OVERRIDE]), rp, &l, &[]);
        let mut rp = no_receipt(&l);
        rp.registration_keys.push(statement::RegistrationKey {
            registration_id: "reg".into(),
            executor_id: "ex".into(),
            epoch: 1,
            key_id: "k".into(),
            public_key: "00".repeat(32),
        });
        invalid(svr(&[LANDED, OVERRIDE]), rp, &l, &[]);
        // A test result: no test ran on an override's revision.
        invalid(
            svr(&[LANDED, OVERRIDE]),
            no_receipt(&l),
            &l,
            &[test_result()],
        );
        // No protected change, or a list that does not match its total.
        let mut none = landing(0);
        none.allow_protected_change = true;
        invalid(svr(&[LANDED, OVERRIDE]), no_receipt(&none), &none, &[]);
        let mut short = landing(3);
        short.protected_changes.paths.pop();
        invalid(svr(&[LANDED, OVERRIDE]), no_receipt(&short), &short, &[]);
    }

    #[test]
    fn a_qualified_set_never_carries_an_override() {
        let l = landing(0);
        let tree = git::TreeRevision {
            revision: Sha256Hex::digest(b"rev"),
            manifest_sha256: Sha256Hex::digest(b"m"),
            files: 1,
        };
        let refused = |s: Svr, l: &LandingFacts| {
            let e = check_qualified(&s, &no_receipt(l), l, &tree, &[]).expect_err("refused");
            assert_eq!(e.code(), Code::AttestationInvalid, "{e:?}");
            e
        };
        refused(svr(&[QUALIFIED, UNCHANGED, LANDED, OVERRIDE]), &l);
        refused(svr(&[QUALIFIED, LANDED]), &l);
        // Protected changes listed on a landing that records no override.
        let mut listed = landing(1);
        listed.allow_protected_change = false;
        refused(svr(&[QUALIFIED, UNCHANGED, LANDED]), &listed);
        // Every property right, but no receipt.
        let e = refused(svr(&[QUALIFIED, UNCHANGED, LANDED]), &l);
        assert!(e.to_string().contains("no receipt"), "{e}");
    }
}
