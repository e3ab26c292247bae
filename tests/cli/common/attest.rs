//! Landing and attestation helpers: qualify and land a Change, clone with
//! notes, verify with the public key, read a statement. Moved from `attest.rs`,
//! whose tests and others share it.

use crate::common::collect_flow::Loop;
use crate::common::{Output, TestEnv, run_cmd};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// A Change whose current subject is qualified.
pub fn qualified() -> Loop {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    assert_eq!(l.qualify()["qualified"], true);
    l
}

pub fn land(l: &Loop, crash: Option<&str>) -> Output {
    land_with(l, crash, &[])
}

pub fn land_with(l: &Loop, crash: Option<&str>, extra: &[&str]) -> Output {
    let mut c = l.env.cmd();
    if let Some(step) = crash {
        c.env("AGENT_TASK_TEST_CRASH_AT", step);
    }
    c.args([
        "land",
        "--update-worktree",
        "--repo",
        "demo/basic",
        "--change",
        &l.change_id,
    ]);
    c.args(extra);
    run_cmd(&mut c)
}

/// A Change whose revision edits the protected test data, checkpointed
/// (it never qualifies and nothing was collected for it).
pub fn protected_change() -> Loop {
    let l = Loop::basic("bwrap");
    std::fs::write(l.workspace.join("tests/cases.txt"), "2 3 5\n4 4 8\n").expect("w");
    let cp = l
        .agent(&["checkpoint", "--workspace", s(&l.workspace)])
        .json();
    assert_eq!(cp["protected_changes_total"], 1, "{cp}");
    l
}

/// The Statement inside the envelope of one note line.
pub fn statement_of(line: &str) -> Value {
    let e: Value = serde_json::from_str(line).expect("envelope");
    let payload = data_encoding::BASE64
        .decode(e["payload"].as_str().expect("payload").as_bytes())
        .expect("base64");
    serde_json::from_slice(&payload).expect("statement")
}

/// Writes the authority's public key (`hex` or `pem`) to a file.
pub fn public_key_file(env: &TestEnv, format: &str) -> PathBuf {
    let k = env.run(&["authority", "key", "--format", format]).json();
    let p = env.path(&format!("authority.{format}"));
    std::fs::write(&p, k["public_key"].as_str().expect("public key")).expect("write key");
    p
}

/// A fresh clone of the source that fetched the notes.
pub fn clone_with_notes(l: &Loop, name: &str) -> PathBuf {
    let dst = l.env.path(name);
    let out = std::process::Command::new("git")
        .args(["clone", "-q", "--no-local"])
        .arg(&l.source)
        .arg(&dst)
        .output()
        .expect("git clone");
    assert!(out.status.success(), "clone: {out:?}");
    git(
        &dst,
        &[
            "fetch",
            "-q",
            "origin",
            "refs/notes/agent-task:refs/notes/agent-task",
        ],
    );
    dst
}

pub fn verify(env: &TestEnv, repo: &Path, commit: &str, key: &Path) -> Output {
    run_cmd(env.bare_cmd().args([
        "verify",
        "--repo",
        s(repo),
        "--commit",
        commit,
        "--key",
        s(key),
    ]))
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    crate::common::collect_flow::git(dir, args)
        .trim()
        .to_owned()
}

pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}
