//! What a build WITHOUT the `test-hooks` feature refuses: the `fixture`
//! transport basis of a review profile, at every place a stored profile is
//! loaded (install, claim, collect, import, finalize, qualify and land all
//! go through `ReviewProfile::validate` and `check_basis`). The rest of the
//! suite runs with `test-hooks`, where `fixture` is allowed, so
//! `scripts/test.sh` also runs this target in a build without the feature;
//! in a `test-hooks` build it holds no tests.

#![cfg(not(feature = "test-hooks"))]

use agent_task::Code;
use agent_task::collector::review::types::{Basis, ReviewProfile, check_basis};
use serde_json::Value;

/// The golden review profile (basis `claude_code_cli`).
fn golden_profile() -> ReviewProfile {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/review/vectors.json");
    let doc: Value = serde_json::from_slice(&std::fs::read(path).expect("vectors")).expect("json");
    let canonical = doc["vectors"]
        .as_array()
        .expect("vectors")
        .iter()
        .find(|v| v["name"] == "review_profile")
        .and_then(|v| v["canonical"].as_str())
        .expect("review_profile vector");
    serde_json::from_str(canonical).expect("profile")
}

#[test]
fn a_build_without_test_hooks_accepts_claude_code_cli_and_refuses_a_fixture_review_profile() {
    let p = golden_profile();
    assert_eq!(p.basis, Basis::ClaudeCodeCli);
    p.validate()
        .expect("a claude_code_cli profile is valid in this build");
    check_basis(Basis::ClaudeCodeCli).expect("claude_code_cli");

    let e = check_basis(Basis::Fixture).expect_err("fixture refused");
    assert_eq!(e.code(), Code::ProfileInvalid);
    let mut f = p.clone();
    f.basis = Basis::Fixture;
    // Planted consistently (its id derived from its digest, as install
    // derives it): only the basis is wrong for this build.
    f.profile_id = format!("rp_{}", &f.digest().expect("digest").as_str()[..32]);
    let e = f
        .validate()
        .expect_err("a stored fixture profile is refused");
    assert_eq!(e.code(), Code::ProfileInvalid);
    assert_eq!(e.details().expect("details")["basis"], "fixture", "{e}");
}
