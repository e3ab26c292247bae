//! Independent verifiers from registry packages accept what agent-task
//! signs and refuse the tampered cases: `tests/interop/attest/verify.py`
//! (securesystemslib for DSSE, the in-toto-attestation bindings for the
//! Statement and test-result, jsonschema for svr v0.2; the revision and
//! receipt digests recomputed in Python) on the DSSE vectors of
//! `fixtures/dsse/` and on a landed commit's note.
//!
//! `scripts/install-interop.sh` installs the pinned packages under
//! `target/interop/attest-venv` and prints `AGENT_TASK_INTEROP_ATTEST_PYTHON`;
//! `scripts/test.sh` sets `AGENT_TASK_REQUIRE_INTEROP=1`, where a missing
//! interpreter fails instead of skipping.

use crate::common::attest::{clone_with_notes, land, land_with, protected_change, qualified};
use crate::common::repo_root;
use serde_json::Value;
use std::path::{Path, PathBuf};

fn python() -> Option<PathBuf> {
    const VAR: &str = "AGENT_TASK_INTEROP_ATTEST_PYTHON";
    match std::env::var_os(VAR) {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(p.exists(), "{VAR} names a missing file: {}", p.display());
            Some(p)
        }
        _ => {
            assert!(
                std::env::var("AGENT_TASK_REQUIRE_INTEROP").as_deref() != Ok("1"),
                "{VAR} is unset but AGENT_TASK_REQUIRE_INTEROP=1 (run scripts/install-interop.sh)"
            );
            println!("SKIP: {VAR} is unset (scripts/install-interop.sh installs the verifiers)");
            None
        }
    }
}

/// Runs the verifier; returns (exit code, its JSON summary).
fn run(py: &Path, args: &[&str]) -> (i32, Value) {
    let out = std::process::Command::new(py)
        .arg(repo_root().join("tests/interop/attest/verify.py"))
        .args(args)
        .output()
        .expect("run verify.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let v: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| {
        panic!(
            "verify.py printed no JSON ({e}):\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn securesystemslib_checks_the_rfc8032_dsse_vectors() {
    let Some(py) = python() else { return };
    let f = repo_root().join("fixtures/dsse/vectors.json");
    let (code, v) = run(&py, &["vectors", f.to_str().expect("utf8")]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["verified"], true);
    let results = v["results"].as_array().expect("results");
    let accepted = results.iter().filter(|r| r["outcome"] == "accept").count();
    let rejected = results
        .iter()
        .filter(|r| {
            r["outcome"]
                .as_str()
                .is_some_and(|o| o.starts_with("reject"))
        })
        .count();
    assert!(accepted >= 5 && rejected >= 8, "{v}");
}

#[test]
fn independent_verifiers_accept_the_landed_note_and_refuse_tampering() {
    let Some(py) = python() else { return };
    let l = qualified();
    // Before landing, `attest --out` writes what the verifiers accept too.
    let out = l.env.path("pre");
    let pre = l
        .env
        .run(&[
            "attest",
            "--change",
            &l.change_id,
            "--out",
            out.to_str().expect("utf8"),
        ])
        .json();
    let pre_key = l.env.run(&["authority", "key"]).json();
    let jsonl = out.join("attestations.jsonl");
    let (code, r) = run(
        &py,
        &[
            "files",
            "--file",
            jsonl.to_str().expect("utf8"),
            "--key-hex",
            pre_key["public_key"].as_str().expect("hex"),
            "--revision",
            pre["revision"].as_str().expect("revision"),
        ],
    );
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["envelopes"], 3, "{r}");
    let v = land(&l, None).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    let key = l.env.run(&["authority", "key"]).json();
    let key_hex = key["public_key"].as_str().expect("hex").to_owned();
    let clone = clone_with_notes(&l, "clone");
    let repo = clone.to_str().expect("utf8").to_owned();
    let check = |commit: &str, key: &str| {
        run(
            &py,
            &[
                "note",
                "--repo",
                &repo,
                "--commit",
                commit,
                "--key-hex",
                key,
            ],
        )
    };
    let (code, ok) = check(&commit, &key_hex);
    assert_eq!(code, 0, "{ok}");
    assert_eq!(ok["verified"], true);
    assert_eq!(
        ok["revision"], v["revision"],
        "Python recomputed the same revision"
    );
    assert_eq!(ok["envelopes"], 3);
    let git = |args: &[&str]| {
        crate::common::collect_flow::git(&clone, args)
            .trim()
            .to_owned()
    };
    let good = git(&["notes", "--ref=refs/notes/agent-task", "show", &commit]) + "\n";
    let set_note = |text: &str| {
        let f = l.env.path("note.tmp");
        std::fs::write(&f, text).expect("note");
        let blob = git(&["hash-object", "-w", f.to_str().expect("utf8")]);
        git(&[
            "notes",
            "--ref=refs/notes/agent-task",
            "add",
            "-f",
            "-C",
            &blob,
            &commit,
        ]);
    };
    let tampered = |n: usize, f: &dyn Fn(&mut Value)| -> String {
        good.lines()
            .enumerate()
            .map(|(i, line)| {
                let mut e: Value = serde_json::from_str(line).expect("envelope");
                if i == n {
                    f(&mut e);
                }
                serde_json::to_string(&e).expect("json") + "\n"
            })
            .collect()
    };
    let flip = |v: &mut Value, at: usize| {
        let mut b = v.as_str().expect("b64").as_bytes().to_vec();
        b[at] = if b[at] == b'A' { b'B' } else { b'A' };
        *v = Value::String(String::from_utf8(b).expect("ascii"));
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "payload byte",
            tampered(1, &|e| flip(&mut e["payload"], 40)),
            "signature",
        ),
        (
            "signature byte",
            tampered(0, &|e| flip(&mut e["signatures"][0]["sig"], 10)),
            "signature",
        ),
        (
            "payload type",
            tampered(2, &|e| e["payloadType"] = "application/json".into()),
            "payload_type",
        ),
    ];
    for (what, text, stage) in cases {
        set_note(&text);
        let (code, r) = check(&commit, &key_hex);
        assert_eq!(code, 1, "{what}: {r}");
        assert_eq!(r["verified"], false, "{what}");
        assert_eq!(r["stage"], stage, "{what}: {r}");
    }
    set_note(&good);
    // The wrong key: RFC 8032 §7.1 test 2's public key.
    let (code, r) = check(
        &commit,
        "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c",
    );
    assert_eq!((code, r["stage"].as_str()), (1, Some("signature")), "{r}");
    // Moved to a commit with the same tree, and to one with another tree.
    let tree = git(&["rev-parse", &format!("{commit}^{{tree}}")]);
    let twin = git(&["commit-tree", &tree, "-p", &commit, "-m", "same tree"]);
    git(&[
        "notes",
        "--ref=refs/notes/agent-task",
        "copy",
        &commit,
        &twin,
    ]);
    let (code, r) = check(&twin, &key_hex);
    assert_eq!((code, r["stage"].as_str()), (1, Some("subject")), "{r}");
    std::fs::write(clone.join("add.sh"), "#!/bin/sh\necho 4\n").expect("edit");
    git(&["commit", "-q", "-am", "other tree"]);
    let other = git(&["rev-parse", "HEAD"]);
    git(&[
        "notes",
        "--ref=refs/notes/agent-task",
        "copy",
        &commit,
        &other,
    ]);
    let (code, r) = check(&other, &key_hex);
    assert_eq!((code, r["stage"].as_str()), (1, Some("subject")), "{r}");
    assert!(
        r["error"].as_str().expect("error").contains("revision"),
        "{r}"
    );
    // The untouched note still verifies.
    assert_eq!(check(&commit, &key_hex).0, 0);
}

/// The operator's override landing (no receipt, no tests): the independent
/// verifier accepts every envelope and statement but rejects the set at
/// stage `unqualified` by default, and accepts it as `qualified: false`
/// with `--allow-override`; the qualified landing is `qualified: true`.
#[test]
fn independent_verifiers_fail_closed_on_an_override_landing_unless_allowed() {
    let Some(py) = python() else { return };
    let l = protected_change();
    let v = land_with(&l, None, &["--allow-protected-change"]).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    let key = l.env.run(&["authority", "key"]).json();
    let key_hex = key["public_key"].as_str().expect("hex").to_owned();
    let clone = clone_with_notes(&l, "clone");
    let repo = clone.to_str().expect("utf8").to_owned();
    let mut args = vec![
        "note",
        "--repo",
        &repo,
        "--commit",
        &commit,
        "--key-hex",
        &key_hex,
    ];
    let (code, r) = run(&py, &args);
    assert_eq!((code, r["stage"].as_str()), (1, Some("unqualified")), "{r}");
    args.push("--allow-override");
    let (code, r) = run(&py, &args);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["verified"], true, "{r}");
    assert_eq!(r["qualified"], false, "{r}");
    assert_eq!(r["envelopes"], 2, "{r}");
    assert_eq!(r["revision"], v["revision"], "{r}");
    // And a qualified landing is qualified with or without the flag.
    let q = qualified();
    let v = land(&q, None).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    let key = q.env.run(&["authority", "key"]).json();
    let key_hex = key["public_key"].as_str().expect("hex").to_owned();
    let clone = clone_with_notes(&q, "clone");
    let repo = clone.to_str().expect("utf8").to_owned();
    for extra in [None, Some("--allow-override")] {
        let mut args = vec![
            "note",
            "--repo",
            &repo,
            "--commit",
            &commit,
            "--key-hex",
            &key_hex,
        ];
        args.extend(extra);
        let (code, r) = run(&py, &args);
        assert_eq!(code, 0, "{r}");
        assert_eq!(r["qualified"], true, "{r}");
    }
}
