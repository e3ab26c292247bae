//! Landing is crash-safe: a durable intent (phase 1), a compare-and-swap
//! branch move (phase 2) and the recorded head (phase 3). SIGKILL after
//! each phase, then `land` again; revocation, a policy change and a moved
//! branch while an intent is pending; the landed tree equals what
//! `git write-tree` makes of the same files.

use crate::common::collect_flow::Loop;
use crate::common::{Output, repo_root};
use serde_json::Value;
use std::path::Path;

const CRASH: &str = "AGENT_TASK_TEST_CRASH_AT";

fn git(dir: &Path, args: &[&str]) -> String {
    crate::common::collect_flow::git(dir, args)
        .trim()
        .to_owned()
}

/// A Change whose current subject is qualified (one passing transfer and
/// its receipt).
fn qualified() -> (Loop, String) {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    let f = l.agent(&["finalize", "--change", &l.change_id]).json();
    let receipt = f["receipt_digest"].as_str().expect("receipt").to_owned();
    assert_eq!(l.qualify()["qualified"], true);
    (l, receipt)
}

fn land(l: &Loop, crash: Option<&str>) -> Output {
    let mut c = l.env.cmd();
    if let Some(step) = crash {
        c.env(CRASH, step);
    }
    c.args([
        "land",
        "--update-worktree",
        "--repo",
        "demo/basic",
        "--change",
        &l.change_id,
    ]);
    crate::common::run_cmd(&mut c)
}

fn head_revision(l: &Loop) -> String {
    let v = l.env.run(&["repo", "list"]).json();
    v["repositories"]
        .as_array()
        .expect("repositories")
        .iter()
        .find(|r| r["repo_id"] == "demo/basic")
        .and_then(|r| r["head_revision"].as_str())
        .expect("head")
        .to_owned()
}

fn commits(l: &Loop) -> usize {
    git(&l.source, &["rev-list", "--count", "main"])
        .parse()
        .expect("count")
}

#[test]
fn sigkill_after_each_landing_phase_then_land_completes_once() {
    for step in [
        "land_after_intent",
        "land_after_ref",
        "land_before_worktree",
    ] {
        let (l, receipt) = qualified();
        let branch = git(&l.source, &["rev-parse", "main"]);
        let head = head_revision(&l);
        let out = land(&l, Some(step));
        assert_eq!(out.code, -1, "{step}: killed by SIGKILL: {out}");
        let after_crash = git(&l.source, &["rev-parse", "main"]);
        if step == "land_after_intent" {
            assert_eq!(after_crash, branch, "{step}: the branch has not moved yet");
        } else {
            assert_ne!(after_crash, branch, "{step}: the branch moved");
            let log = git(&l.source, &["log", "-1", "--format=%B", "main"]);
            assert!(log.contains(&receipt), "{step}: {log}");
        }
        if step == "land_before_worktree" {
            // Phase 3 is durable; only the work tree is behind.
            assert_ne!(head_revision(&l), head, "{step}");
        } else {
            // The authority has not recorded the landing yet.
            assert_eq!(head_revision(&l), head, "{step}");
        }
        let v = land(&l, None).json();
        assert_eq!(v["landed"], true, "{step}: {v}");
        // The rerun finishes what the crash left: the checked-out main
        // moves along, exactly once.
        assert_eq!(v["worktree_updated"], true, "{step}: {v}");
        assert_eq!(
            git(&l.source, &["status", "--porcelain"]),
            "",
            "{step}: the checked-out work tree is at the landed commit"
        );
        // With the modes git gives: the moved branch, the notes and the
        // objects are readable by others.
        for rel in ["refs/heads/main", "refs/notes/agent-task"] {
            let p = l.source.join(".git").join(rel);
            if let Ok(m) = std::fs::metadata(&p) {
                let mode = std::os::unix::fs::MetadataExt::mode(&m) & 0o777;
                assert_eq!(mode & 0o044, 0o044, "{step}: {rel} is {mode:o}");
            }
        }
        if step == "land_before_worktree" {
            assert_eq!(v["already_landed"], true, "{step}: {v}");
            assert_eq!(v["resumed"], false, "{step}: {v}");
        } else {
            assert_eq!(v["resumed"], true, "{step}: {v}");
        }
        assert_eq!(v["receipt_digest"], receipt.as_str());
        assert_eq!(v["old_head"], head.as_str());
        assert_ne!(
            v["revision"],
            head.as_str(),
            "{step}: the change changed files"
        );
        let commit = v["git_commit"].as_str().expect("commit");
        if step == "land_after_ref" {
            assert_eq!(commit, after_crash, "{step}: the commit the crash moved to");
        }
        // Exactly one landed commit on top of the operator's.
        assert_eq!(git(&l.source, &["rev-parse", "main"]), commit, "{step}");
        assert_eq!(git(&l.source, &["rev-parse", "main^"]), branch, "{step}");
        assert_eq!(commits(&l), 2, "{step}");
        let msg = git(&l.source, &["log", "-1", "--format=%B", "main"]);
        assert!(msg.contains(&receipt), "{step}: {msg}");
        assert!(
            msg.contains(v["revision"].as_str().expect("rev")),
            "{step}: {msg}"
        );
        assert_eq!(head_revision(&l), v["revision"].as_str().expect("rev"));
        // qualify agrees: the landed head made the subject stale.
        let q = l.qualify();
        assert_eq!(q["subject_current"], false, "{step}: {q}");
        assert_eq!(q["revision"], v["revision"], "{step}");
        // Landing again lands nothing more: it says it already landed.
        let again = land(&l, None).json();
        assert_eq!(again["already_landed"], true, "{step}: {again}");
        assert_eq!(again["git_commit"], commit, "{step}: {again}");
        assert_eq!(commits(&l), 2, "{step}");
    }
}

#[test]
fn uninterrupted_land_says_not_resumed() {
    let (l, _) = qualified();
    let v = land(&l, None).json();
    assert_eq!(v["landed"], true);
    assert_eq!(v["resumed"], false);
    assert_eq!(commits(&l), 2);
    assert_eq!(head_revision(&l), v["revision"].as_str().expect("rev"));
}

#[test]
fn revocation_or_policy_change_after_intent_abandons_the_landing() {
    for case in ["token", "policy"] {
        let (l, _) = qualified();
        let branch = git(&l.source, &["rev-parse", "main"]);
        let head = head_revision(&l);
        assert_eq!(land(&l, Some("land_after_intent")).code, -1, "{case}");
        l.invalidate(case);
        let out = land(&l, None);
        assert_ne!(out.code, 0, "{case}: {out}");
        let e: Value = serde_json::from_str(out.stderr.trim()).expect("error json");
        let expected = if case == "token" {
            "not_qualified"
        } else {
            "subject_stale"
        };
        assert_eq!(e["error"], expected, "{case}: {e}");
        assert_eq!(e["details"]["landing"], "abandoned", "{case}: {e}");
        assert_eq!(e["details"]["change_id"], l.change_id.as_str(), "{case}");
        assert_eq!(git(&l.source, &["rev-parse", "main"]), branch, "{case}");
        assert_eq!(head_revision(&l), head, "{case}");
        // Abandoned is final: the next land rechecks from scratch, refuses
        // the same way and makes no new intent.
        let again = land(&l, None);
        let e2: Value = serde_json::from_str(again.stderr.trim()).expect("error json");
        assert_eq!(e2["error"], expected, "{case}: {again}");
        assert!(e2["details"].get("landing").is_none(), "{case}: {e2}");
        assert_eq!(git(&l.source, &["rev-parse", "main"]), branch, "{case}");
        assert_eq!(commits(&l), 1, "{case}");
    }
}

#[test]
fn branch_moved_after_intent_is_a_conflict_and_leaves_the_branch() {
    let (l, _) = qualified();
    assert_eq!(land(&l, Some("land_after_intent")).code, -1);
    git(
        &l.source,
        &["commit", "-q", "--allow-empty", "-m", "operator work"],
    );
    let moved = git(&l.source, &["rev-parse", "main"]);
    let head = head_revision(&l);
    let e = land(&l, None).error("conflict", 65);
    assert_eq!(e["details"]["landing"], "abandoned", "{e}");
    assert_eq!(e["details"]["found"], moved.as_str(), "{e}");
    assert_eq!(e["details"]["ref"], "refs/heads/main", "{e}");
    assert_eq!(git(&l.source, &["rev-parse", "main"]), moved);
    assert_eq!(head_revision(&l), head);
    // The operator's approval again: a fresh landing on top of the moved
    // branch (the authority's subject did not change).
    let v = land(&l, None).json();
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(v["resumed"], false, "{v}");
    assert_eq!(git(&l.source, &["rev-parse", "main^"]), moved);
    assert_eq!(commits(&l), 3);
}

#[test]
fn landed_tree_equals_git_write_tree_of_the_same_files() {
    let l = Loop::basic("bwrap");
    let ws = &l.workspace;
    std::fs::create_dir_all(ws.join("tools/deep dir")).expect("mkdir");
    let exe = ws.join("tools/run.sh");
    std::fs::write(&exe, "#!/bin/sh\necho run\n").expect("write");
    std::fs::set_permissions(&exe, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    std::fs::write(ws.join("tools/deep dir/a file.txt"), "spaces\n").expect("write");
    std::fs::write(ws.join("empty"), "").expect("write");
    std::os::unix::fs::symlink("../add.sh", ws.join("tools/add-link")).expect("symlink");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let v = land(&l, None).json();
    let commit = v["git_commit"].as_str().expect("commit");
    let landed_tree = git(&l.source, &["rev-parse", &format!("{commit}^{{tree}}")]);
    // The anchor: git's own index of a copy of the same workspace.
    let mirror = l.env.path("mirror");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(ws)
        .arg(&mirror)
        .status()
        .expect("cp");
    assert!(cp.success());
    git(&mirror, &["init", "-q"]);
    git(&mirror, &["add", "-A"]);
    assert_eq!(git(&mirror, &["write-tree"]), landed_tree);
    let ls = git(&l.source, &["ls-tree", "-r", commit]);
    assert!(ls.contains("100755 blob"), "{ls}");
    assert!(ls.contains("120000 blob"), "{ls}");
    assert_eq!(
        git(
            &l.source,
            &["cat-file", "-p", &format!("{commit}:tools/add-link")]
        ),
        "../add.sh"
    );
}

#[test]
fn landing_another_change_first_resolves_the_pending_one() {
    let (l, receipt) = qualified();
    // A second qualified Change on the same repository.
    let ws2 = l.env.path("work2");
    crate::common::task_support::copy_dir(&repo_root().join("fixtures/repos/basic"), &ws2);
    std::fs::write(ws2.join("NOTES.md"), "second change\n").expect("write");
    let ws2s = ws2.to_str().expect("utf8");
    let ch2 = l
        .agent(&[
            "change",
            "open",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--workspace",
            ws2s,
        ])
        .json()["change_id"]
        .as_str()
        .expect("change")
        .to_owned();
    let cp = l.agent(&["checkpoint", "--workspace", ws2s]).json();
    let t2 = cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == "tests")
        .and_then(|t| t["task_id"].as_str())
        .expect("tests task")
        .to_owned();
    let (d2, _) = l.claim(&t2, "d2.json");
    assert_eq!(l.collect(&d2).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &ch2]).json();
    // The first Change's landing is interrupted after its intent.
    assert_eq!(land(&l, Some("land_after_intent")).code, -1);
    // Landing the second resolves the first (it lands), which moves the
    // head: the second is now stale, and its refusal reports the first.
    let e = l
        .env
        .run(&[
            "land",
            "--update-worktree",
            "--repo",
            "demo/basic",
            "--change",
            &ch2,
        ])
        .error("subject_stale", 65);
    let r = &e["details"]["resolved_pending"];
    assert_eq!(r["landed"], true, "{e}");
    assert_eq!(r["resumed"], true, "{e}");
    assert_eq!(r["change_id"], l.change_id.as_str(), "{e}");
    assert_eq!(r["receipt_digest"], receipt.as_str(), "{e}");
    // It says what it made stale: the second Change's live subject.
    assert_eq!(r["stale_subjects"], 1, "{e}");
    assert_eq!(
        git(&l.source, &["rev-parse", "main"]),
        r["git_commit"].as_str().expect("commit")
    );
    assert_eq!(commits(&l), 2);
    assert_eq!(head_revision(&l), r["revision"].as_str().expect("rev"));
    // Nothing is pending any more: landing the first again says it landed.
    let v = land(&l, None).json();
    assert_eq!(v["already_landed"], true, "{v}");
    assert!(v.get("resolved_pending").is_none(), "{v}");
    assert_eq!(commits(&l), 2);
}
