//! Every path that uses a collector profile checks its basis
//! (`CollectorProfile::check_basis`): install, claim, import, finalize,
//! qualify and land. A `fixture` basis is accepted in this (test-hooks)
//! build — its refusal outside test builds is unit-tested with
//! `check_basis_for(false)` — so these tests use an unknown basis, which
//! every build refuses: the stored profile is rewritten with a consistent
//! digest, so only the basis check can refuse it.

use crate::common::Output;
use crate::common::collect_flow::Loop;
use agent_task::collector::transfer::CollectorProfile;
use serde_json::{Value, json};

/// Rewrites every installed profile's basis, keeping its stored digest
/// consistent (the integrity check passes; only the basis is wrong).
/// Returns the previous basis.
fn set_basis(l: &Loop, basis: &str) -> String {
    let conn = rusqlite::Connection::open(l.env.data_dir.join("authority.sqlite")).expect("open");
    let rows: Vec<(String, Vec<u8>)> = conn
        .prepare("SELECT profile_id, profile_json FROM collector_profiles")
        .expect("prepare")
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(rows.len(), 1);
    let mut previous = String::new();
    for (id, bytes) in rows {
        let mut p: CollectorProfile = serde_json::from_slice(&bytes).expect("profile");
        previous = std::mem::replace(&mut p.basis, basis.into());
        let digest = p.digest().expect("digest");
        conn.execute(
            "UPDATE collector_profiles SET profile_json = ?2, profile_digest = ?3 WHERE profile_id = ?1",
            rusqlite::params![id, serde_json::to_vec(&p).expect("json"), digest.as_str()],
        )
        .expect("update");
    }
    previous
}

fn unknown_basis(o: &Output, what: &str) {
    let e = o.error("profile_invalid", 77);
    assert_eq!(e["message"], "unknown profile basis", "{what}: {e}");
}

#[test]
fn install_claim_import_finalize_and_land_refuse_an_unknown_basis() {
    // Import: a signed transfer retained but not uploaded, then the
    // profile's basis goes bad; retry-upload (the import) refuses it.
    let l = Loop::basic("bwrap");
    let (d, _, t) = crate::common::collect_faults::retained(&l);
    let original = set_basis(&l, "bogus");
    unknown_basis(&l.retry(&d), "import");
    // Claim: the same task again reaches the profile check first.
    unknown_basis(
        &l.agent(&["collector-claim", &t, "--descriptor-out", "/dev/null"]),
        "claim",
    );
    // With the basis restored, the same bytes import.
    set_basis(&l, &original);
    l.retry(&d).json();
    let q = l.qualify();
    assert_eq!(q["tasks"][0]["state"], "succeeded", "{q}");

    // Finalize, qualify and land: a qualified Change whose profile's basis
    // goes bad afterwards.
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let t = l.checkpoint();
    let (dp, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&dp).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    assert_eq!(l.qualify()["qualified"], true);
    set_basis(&l, "bogus");
    let failures = json!([{"task_id": t, "code": "profile_invalid"}]);
    let q = l.qualify();
    assert_eq!(q["qualified"], false, "{q}");
    assert_eq!(q["failures"], failures, "{q}");
    let e = l
        .agent(&["finalize", "--change", &l.change_id])
        .error("receipt_incomplete", 65);
    assert_eq!(e["details"]["failures"], failures, "{e}");
    let head = std::process::Command::new("git")
        .arg("-C")
        .arg(&l.source)
        .args(["rev-parse", "main"])
        .output()
        .expect("git")
        .stdout;
    let e = l
        .env
        .run(&[
            "land",
            "--update-worktree",
            "--repo",
            "demo/basic",
            "--change",
            &l.change_id,
        ])
        .error("not_qualified", 65);
    assert_eq!(e["details"]["failures"], failures, "{e}");
    let after = std::process::Command::new("git")
        .arg("-C")
        .arg(&l.source)
        .args(["rev-parse", "main"])
        .output()
        .expect("git")
        .stdout;
    assert_eq!(head, after, "nothing landed");

    // Install: a pinned file with an unknown basis is refused.
    let id: Value = crate::common::probe_bwrap(&l.env);
    let pin = l.env.path("pin.json");
    std::fs::write(
        &pin,
        serde_json::to_vec(&json!({"basis": "bogus", "identity": id})).expect("json"),
    )
    .expect("write");
    let e = l
        .env
        .run(&[
            "profile",
            "install",
            "--registration",
            &l.registration,
            "--step",
            "tests",
            "--runtime",
            "bwrap",
            "--file",
            pin.to_str().expect("utf8"),
        ])
        .error("profile_invalid", 77);
    assert!(e["message"].as_str().expect("msg").contains("basis"), "{e}");
}
