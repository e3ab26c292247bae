//! What people check out is what the sandbox ran (issue 28, items 2 and
//! 6), through the real binary: a candidate whose `.gitattributes` make a
//! git checkout differ from the tested bytes (an `ident` attribute, a
//! nested `eol=crlf`, a macro, `working-tree-encoding`, a target that
//! already has `*.sh ident`), or that carries a `filter`, `export-subst`
//! or a `.lfsconfig`, is listed by checkpoint and refused by
//! collector-claim, finalize and land; verify refuses a landed commit
//! whose checkout differs. Case and normalisation twins are refused at
//! checkpoint, and protected patterns see through letter case.

use crate::common::collect_flow::{Loop, git};
use crate::common::task_support::copy_dir;
use crate::common::{Output, run_cmd};
use serde_json::{Value, json};
use std::path::Path;

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

fn write(ws: &Path, rel: &str, body: &[u8]) {
    let p = ws.join(rel);
    std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
    std::fs::write(p, body).expect("write");
}

fn checkpoint(l: &Loop, ws: &Path) -> Output {
    l.agent(&["checkpoint", "--workspace", s(ws)])
}

fn tests_task(cp: &Value) -> String {
    crate::common::privsep::task_of(cp, "tests")
}

fn land(l: &Loop, change: &str, env: &[(&str, &str)]) -> Output {
    let mut c = l.env.cmd();
    for (k, v) in env {
        c.env(k, v);
    }
    c.args([
        "land",
        "--repo",
        "demo/basic",
        "--change",
        change,
        "--update-worktree",
    ]);
    run_cmd(&mut c)
}

/// add.sh as the fixture has it, with a `$Id$` keyword in a comment: the
/// sandbox runs it as it is; an `ident` checkout expands the keyword.
const ADD_WITH_ID: &str = "#!/bin/sh\n# Adds two integers. $Id$\necho $(($1 + $2))\n";

/// One candidate: what it is, the files it writes, the findings
/// checkpoint lists for it.
type Case = (&'static str, Vec<(&'static str, &'static [u8])>, Value);

fn cases() -> Vec<Case> {
    vec![
        (
            "an ident attribute",
            vec![
                (".gitattributes", b"add.sh ident\n"),
                ("add.sh", ADD_WITH_ID.as_bytes()),
            ],
            json!([{"path": "add.sh", "change": "checkout"}]),
        ),
        (
            "eol=crlf in a nested .gitattributes",
            vec![
                ("docs/.gitattributes", b"*.txt eol=crlf\n"),
                ("docs/notes.txt", b"one\ntwo\n"),
            ],
            json!([{"path": "docs/notes.txt", "change": "checkout"}]),
        ),
        (
            "a macro attribute",
            vec![
                (".gitattributes", b"[attr]keep ident\nadd.sh keep\n"),
                ("add.sh", ADD_WITH_ID.as_bytes()),
            ],
            json!([{"path": "add.sh", "change": "checkout"}]),
        ),
        (
            "working-tree-encoding",
            vec![
                (
                    ".gitattributes",
                    b"notes.txt working-tree-encoding=UTF-16\n",
                ),
                ("notes.txt", b"hello\n"),
            ],
            json!([{"path": "notes.txt", "change": "checkout"}]),
        ),
        (
            "a filter=lfs attribute",
            vec![
                (
                    ".gitattributes",
                    b"*.bin filter=lfs diff=lfs merge=lfs -text\n",
                ),
                ("data.bin", b"not a pointer\n"),
            ],
            json!([{"path": "data.bin", "change": "filter"}]),
        ),
        (
            "a .lfsconfig",
            vec![(
                ".lfsconfig",
                b"[lfs]\n\turl = https://example.invalid/lfs\n",
            )],
            json!([{"path": ".lfsconfig", "change": "lfsconfig"}]),
        ),
        (
            "export-subst",
            vec![(".gitattributes", b"add.sh export-subst\n")],
            json!([{"path": "add.sh", "change": "export"}]),
        ),
    ]
}

/// Each candidate is listed by checkpoint (code and path), refused by
/// collector-claim (before any attempt), finalize and land; nothing
/// lands. Removing the attributes makes the same code qualify.
#[test]
fn checkout_changing_attributes_are_listed_and_refused() {
    for (what, files, want) in cases() {
        let l = Loop::basic("bwrap");
        for (p, body) in &files {
            write(&l.workspace, p, body);
        }
        let head = git(&l.source, &["rev-parse", "main"]);
        let cp = checkpoint(&l, &l.workspace).json();
        assert_eq!(cp["protected_changes"], want, "{what}: {cp}");
        assert_eq!(cp["protected_changes_total"], 1, "{what}");
        let t = tests_task(&cp);
        let d = l.env.path("d.json");
        let e = l
            .agent(&["collector-claim", &t, "--descriptor-out", s(&d)])
            .error("protected_path_changed", 65);
        assert_eq!(e["details"]["protected_changes"], want, "{what}: {e}");
        assert!(!d.exists(), "{what}: no descriptor");
        l.agent(&["finalize", "--change", &l.change_id])
            .error("protected_path_changed", 65);
        let e = land(&l, &l.change_id, &[]).error("protected_path_changed", 65);
        assert_eq!(e["details"]["protected_changes"], want, "{what}: {e}");
        assert_eq!(git(&l.source, &["rev-parse", "main"]), head, "{what}");
        // Without the attributes the same files are fine.
        for name in [".gitattributes", "docs/.gitattributes", ".lfsconfig"] {
            std::fs::remove_file(l.workspace.join(name)).ok();
        }
        let cp = checkpoint(&l, &l.workspace).json();
        assert_eq!(cp["protected_changes"], json!([]), "{what}: {cp}");
    }
}

/// Attributes that leave every file's bytes alone are not findings, and
/// such a revision lands; then the target has `*.sh ident`, and a
/// candidate that only adds a `$Id$` keyword (no attribute of its own)
/// is listed and refused.
#[test]
fn an_attribute_the_target_already_has_is_caught() {
    let l = Loop::basic("bwrap");
    write(
        &l.workspace,
        ".gitattributes",
        b"*.sh ident text eol=lf\n*.png binary\n",
    );
    let cp = checkpoint(&l, &l.workspace).json();
    assert_eq!(cp["protected_changes"], json!([]), "{cp}");
    let (d, _) = l.claim(&tests_task(&cp), "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let out = land(&l, &l.change_id, &[]).json();
    assert_eq!(out["landed"], true, "{out}");
    assert_eq!(
        git(&l.source, &["show", "main:.gitattributes"]),
        "*.sh ident text eol=lf\n*.png binary\n"
    );
    // A second Change on the landed tree adds only the keyword.
    let ws = l.env.path("work-b");
    copy_dir(&l.workspace, &ws);
    let ch = l
        .agent(&[
            "change",
            "open",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--workspace",
            s(&ws),
        ])
        .json();
    let b = ch["change_id"].as_str().expect("change").to_owned();
    write(&ws, "add.sh", ADD_WITH_ID.as_bytes());
    let head = git(&l.source, &["rev-parse", "main"]);
    let cp = checkpoint(&l, &ws).json();
    let want = json!([{"path": "add.sh", "change": "checkout"}]);
    assert_eq!(cp["protected_changes"], want, "{cp}");
    let e = l
        .agent(&[
            "collector-claim",
            &tests_task(&cp),
            "--descriptor-out",
            s(&l.env.path("d2.json")),
        ])
        .error("protected_path_changed", 65);
    assert_eq!(e["details"]["protected_changes"], want, "{e}");
    land(&l, &b, &[]).error("protected_path_changed", 65);
    assert_eq!(git(&l.source, &["rev-parse", "main"]), head);
}

/// verify recomputes the check on the commit itself: a landing made
/// while the check was skipped (the test-hooks seam, standing in for a
/// commit landed by an older release) has a valid note, and verify still
/// refuses it because a checkout of it is not the tested revision.
#[test]
fn verify_refuses_a_landed_commit_whose_checkout_differs() {
    let skip = [("AGENT_TASK_TEST_SKIP_CHECKOUT_CHECK", "1")];
    let l = Loop::basic("bwrap");
    write(&l.workspace, ".gitattributes", b"add.sh ident\n");
    write(&l.workspace, "add.sh", ADD_WITH_ID.as_bytes());
    let cp = l
        .agent_env(&skip, &["checkpoint", "--workspace", s(&l.workspace)])
        .json();
    assert_eq!(
        cp["protected_changes"],
        json!([]),
        "the seam skipped the check"
    );
    let (d, _) = l.claim(&tests_task(&cp), "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let out = land(&l, &l.change_id, &skip).json();
    let commit = out["git_commit"].as_str().expect("commit").to_owned();
    // What a clone checks out is not what ran.
    let clone = crate::common::attest::clone_with_notes(&l, "clone");
    let checked_out = std::fs::read_to_string(clone.join("add.sh")).expect("read");
    assert_ne!(checked_out, ADD_WITH_ID, "git expanded $Id$");
    let key = crate::common::attest::public_key_file(&l.env, "hex");
    let e = crate::common::attest::verify(&l.env, &clone, &commit, &key)
        .error("protected_path_changed", 65);
    assert_eq!(
        e["details"]["protected_changes"],
        json!([{"path": "add.sh", "change": "checkout"}]),
        "{e}"
    );
    // The same note on a commit without the attribute verifies (the
    // refusal is the checkout, not the note).
    let l2 = crate::common::attest::qualified();
    let out = land(&l2, &l2.change_id, &[]).json();
    let c2 = out["git_commit"].as_str().expect("commit").to_owned();
    let key2 = crate::common::attest::public_key_file(&l2.env, "hex");
    let v = crate::common::attest::verify(&l2.env, &l2.source, &c2, &key2).json();
    assert_eq!(v["verified"], true, "{v}");
}

/// `Test.sh` beside the protected `test.sh`, `TESTS/cases.txt` beside the
/// protected `tests/cases.txt`, and a name in NFC beside the same name in
/// NFD: checkpoint refuses each with both paths; no new subject.
#[test]
fn case_and_normalisation_twins_are_refused_at_checkpoint() {
    let l = Loop::basic("bwrap");
    let base = checkpoint(&l, &l.workspace).json()["version"].clone();
    for (twin, of) in [
        ("Test.sh", "test.sh"),
        ("TESTS/cases.txt", "tests/cases.txt"),
        ("docs/caf\u{e9}.txt", "docs/cafe\u{301}.txt"),
    ] {
        write(&l.workspace, twin, b"exit 0\n");
        write(&l.workspace, of, b"exit 0\n");
        let e = checkpoint(&l, &l.workspace).error("path_not_representable", 65);
        let mut got: Vec<String> = e["details"]["paths"]
            .as_array()
            .expect("paths")
            .iter()
            .map(|p| p.as_str().expect("path").to_owned())
            .collect();
        got.sort();
        let mut want = vec![twin.to_owned(), of.to_owned()];
        want.sort();
        assert_eq!(got, want, "{e}");
        std::fs::remove_file(l.workspace.join(twin)).expect("rm");
        if twin.starts_with("TESTS/") {
            std::fs::remove_dir(l.workspace.join("TESTS")).expect("rmdir");
        }
        if of.starts_with("docs/") {
            std::fs::remove_file(l.workspace.join(of)).expect("rm");
        }
        let n = l.agent(&["next", "--change", &l.change_id]).json();
        assert_eq!(n["version"], base, "{twin}: no new subject");
    }
}

/// Without a twin, a protected path renamed to another letter case is
/// still protected: both the deleted and the added spelling are listed.
#[test]
fn protected_patterns_match_whatever_the_letter_case() {
    let l = Loop::basic("bwrap");
    std::fs::rename(l.workspace.join("test.sh"), l.workspace.join("Test.sh")).expect("mv");
    std::fs::rename(l.workspace.join("tests"), l.workspace.join("TESTS")).expect("mv");
    let cp = checkpoint(&l, &l.workspace).json();
    assert_eq!(
        cp["protected_changes"],
        json!([
            {"path": "TESTS/cases.txt", "change": "added"},
            {"path": "Test.sh", "change": "added"},
            {"path": "test.sh", "change": "deleted"},
            {"path": "tests/cases.txt", "change": "deleted"},
        ]),
        "{cp}"
    );
    l.agent(&[
        "collector-claim",
        &tests_task(&cp),
        "--descriptor-out",
        s(&l.env.path("d.json")),
    ])
    .error("protected_path_changed", 65);
}

/// The operator's override lets a checkout-changing attribute land, but
/// never into a checked-out work tree: `land --allow-protected-change
/// --update-worktree` of an `ident` candidate is refused before any ref
/// moves, and nothing is written to the work tree.
#[test]
fn an_override_never_updates_a_checked_out_work_tree_with_a_finding() {
    let l = Loop::basic("bwrap");
    write(&l.workspace, "add.sh", ADD_WITH_ID.as_bytes());
    write(&l.workspace, ".gitattributes", b"add.sh ident\n");
    let head = git(&l.source, &["rev-parse", "main"]);
    let cp = checkpoint(&l, &l.workspace).json();
    assert_eq!(cp["protected_changes_total"], 1, "{cp}");
    let mut c = l.env.cmd();
    c.args([
        "land",
        "--repo",
        "demo/basic",
        "--change",
        &l.change_id,
        "--allow-protected-change",
        "--update-worktree",
    ]);
    let e = run_cmd(&mut c).error("protected_path_changed", 65);
    assert_eq!(e["details"]["protected_changes"], 1, "{e}");
    assert_eq!(e["details"]["paths"][0]["path"], "add.sh", "{e}");
    assert_eq!(git(&l.source, &["rev-parse", "main"]), head);
    assert!(
        !l.source.join(".gitattributes").exists(),
        "the work tree was not touched"
    );
}
