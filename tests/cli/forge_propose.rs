//! Candidates as pull requests (issue 32, item 3): `propose` writes the
//! commit `land` would write on `agent-task/<change>` without moving the
//! target, pushes it with its note to a real git server on loopback, and
//! opens a pull request on a fake GitHub that validates every request
//! against GitHub's OpenAPI description (or a merge request on a fake
//! GitLab checking its documented endpoints); a new subject updates the
//! same request; `land --push` closes it. The statuses of a version that
//! failed and then of one that qualified reach the forge on their
//! candidate commits. A lost answer is found by its head branch, never
//! opened twice. `forge sync` records a squash and a merge commit whose
//! trees are qualified revisions as landings, writes and pushes their
//! notes so a fresh clone verifies the target, and writes none for a tree
//! no revision qualified.

use crate::common::Output;
use crate::common::attest::{land_with, public_key_file, qualified, verify};
use crate::common::collect_flow::{Loop, git};
use crate::common::fake_github::{Answer, FakeGithub, Spec, spec_path};
use crate::common::fake_gitlab::FakeGitlab;
use crate::forge_push::{TOKEN, USER, forge_with, land_push, rev};
use serde_json::Value;
use std::path::{Path, PathBuf};

fn propose(l: &Loop, extra: &[&str]) -> Output {
    let mut args = vec!["propose", "--repo", "demo/basic", "--change", &l.change_id];
    args.extend(extra);
    let mut c = l.env.cmd();
    c.args(&args);
    let o = crate::common::run_cmd(&mut c);
    assert!(
        !o.stdout.contains(TOKEN) && !o.stderr.contains(TOKEN),
        "{o}"
    );
    o
}

fn sync(l: &Loop) -> Value {
    let o = l.env.run(&["forge", "sync", "--repo", "demo/basic"]);
    assert!(
        !o.stdout.contains(TOKEN) && !o.stderr.contains(TOKEN),
        "{o}"
    );
    o.json()
}

/// The revision of `commit`'s tree, as the authority recomputes it (the
/// `git_commit` of `attest` is checked the same way by `verify`).
fn tree(dir: &Path, commit: &str) -> String {
    git(dir, &["rev-parse", &format!("{commit}^{{tree}}")])
        .trim()
        .to_owned()
}

/// A fresh clone of the forge's repository with the notes fetched.
fn fresh_clone(
    l: &Loop,
    server: &crate::common::git_http::GitServer,
    user: &str,
    name: &str,
) -> PathBuf {
    let clone = l.env.path(name);
    let out = std::process::Command::new("git")
        .args(["clone", "-q", &server.url_with("demo.git", user, TOKEN)])
        .arg(&clone)
        .output()
        .expect("clone");
    assert!(out.status.success(), "{out:?}");
    git(
        &clone,
        &[
            "fetch",
            "-q",
            "origin",
            "refs/notes/agent-task:refs/notes/agent-task",
        ],
    );
    clone
}

/// A commit made on the forge's side (as a merge button would), with
/// `tree` and `parents`, moving the bare repository's main to it.
fn forge_commit(bare: &Path, tree: &str, parents: &[&str], msg: &str) -> String {
    let mut c = std::process::Command::new("git");
    c.arg("-C").arg(bare).args(["commit-tree", tree, "-m", msg]);
    for p in parents {
        c.args(["-p", p]);
    }
    let out = c
        .env("GIT_AUTHOR_NAME", "forge")
        .env("GIT_AUTHOR_EMAIL", "forge@example.invalid")
        .env("GIT_COMMITTER_NAME", "forge")
        .env("GIT_COMMITTER_EMAIL", "forge@example.invalid")
        .output()
        .expect("commit-tree");
    assert!(out.status.success(), "{out:?}");
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    git(bare, &["update-ref", "refs/heads/main", &commit]);
    commit
}

#[test]
fn a_change_that_failed_then_qualified_reaches_github_as_one_pull_request() {
    let Some(spec) = spec_path() else { return };
    let l = Loop::basic("bwrap");
    let fake = FakeGithub::start(Spec::load(&spec), |_| {});
    let (server, bare, _) = forge_with(&l, TOKEN, &fake.origin_url, &["--forge-status"]);
    let main = rev(&bare, "refs/heads/main").expect("main");
    let branch = format!("refs/heads/agent-task/{}", l.change_id);
    // Version 1 fails its test; the agent's message tries every way to
    // render or notify.
    l.set_add("-");
    let cp = l
        .agent(&[
            "checkpoint",
            "--workspace",
            l.workspace.to_str().expect("utf8"),
            "-m",
            "Fix add @octocat ![x](https://e.invalid/p.png)\n\nsee [here](https://e.invalid)\n```\nbreak out\n```\n<img src=x>",
        ])
        .json();
    let t = cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == "tests")
        .and_then(|t| t["task_id"].as_str())
        .expect("tests task")
        .to_owned();
    let (d, _) = l.claim(&t, "d1.json");
    assert_eq!(l.collect(&d).json()["outcome"], "failed");
    // Not qualified: refused without --unqualified, nothing pushed.
    propose(&l, &[]).error("not_qualified", 65);
    assert!(rev(&bare, &branch).is_none());
    assert!(fake.received().is_empty());
    let v1 = propose(&l, &["--unqualified"]).json();
    assert_eq!(v1["qualified"], false, "{v1}");
    assert_eq!(v1["pushed"], true, "{v1}");
    assert_eq!(v1["request"]["action"], "opened", "{v1}");
    assert_eq!(v1["request"]["number"], 1, "{v1}");
    assert!(v1["attestation"].is_null(), "{v1}");
    let c1 = v1["git_commit"].as_str().expect("commit").to_owned();
    assert_eq!(rev(&bare, &branch).as_deref(), Some(c1.as_str()));
    // The target does not move, locally or on the forge; no landing.
    assert_eq!(
        rev(&bare, "refs/heads/main").as_deref(),
        Some(main.as_str())
    );
    assert_eq!(
        rev(&l.source, "refs/heads/main").as_deref(),
        Some(main.as_str())
    );
    // The commit land would write: its parent the target, its trailers.
    let msg = git(&l.source, &["log", "-1", "--format=%B", &c1]);
    assert!(
        msg.contains(&format!("Agent-Task-Change: {} v1", l.change_id)),
        "{msg}"
    );
    assert!(msg.contains("Agent-Task-Receipt: none"), "{msg}");
    assert_eq!(
        git(&l.source, &["rev-parse", &format!("{c1}^1")]).trim(),
        main
    );
    // The publisher now has a commit for version 1: its latest state.
    let p = l.env.run(&["forge", "publish"]).json();
    assert_eq!(
        (p["published"].as_u64(), p["superseded"].as_u64()),
        (Some(1), Some(1)),
        "{p}"
    );

    // Version 2 passes and is finalized: the same request, updated.
    l.set_add("+");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d2.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let v2 = propose(&l, &[]).json();
    assert_eq!(v2["qualified"], true, "{v2}");
    assert_eq!(v2["change_version"], 2, "{v2}");
    assert_eq!(v2["request"]["action"], "updated", "{v2}");
    assert_eq!(v2["request"]["number"], 1, "{v2}");
    assert_eq!(v2["attestation"]["written"], true, "{v2}");
    let c2 = v2["git_commit"].as_str().expect("commit").to_owned();
    assert_ne!(c1, c2);
    assert_eq!(
        rev(&bare, &branch).as_deref(),
        Some(c2.as_str()),
        "force-updated"
    );
    assert_eq!(tree(&bare, &c2), tree(&l.source, &c2));
    let p = l.env.run(&["forge", "publish"]).json();
    assert_eq!(p["published"], 1, "{p}");
    // Again: nothing new is pushed or opened.
    let n = fake.received().len();
    let again = propose(&l, &[]).json();
    assert_eq!(again["pushed"], false, "{again}");
    assert_eq!(again["request"]["action"], "unchanged", "{again}");
    assert_eq!(fake.received().len(), n);
    assert_eq!(fake.pulls().len(), 1, "one pull request, ever");

    // The candidate commit's note says it has not landed.
    let clone = fresh_clone(&l, &server, USER, "candidate");
    let key = public_key_file(&l.env, "hex");
    let e = verify(&l.env, &clone, &c2, &key).error("attestation_invalid", 65);
    assert_eq!(e["details"]["landed"], false, "{e}");

    // The body: qualification, tasks, receipt, key, how to verify; the
    // agent's text quoted in a fence nothing inside can close.
    let pull = &fake.pulls()[&1];
    let body = pull["body"].as_str().expect("body");
    assert!(
        body.contains(v2["receipt_digest"].as_str().expect("receipt")),
        "{body}"
    );
    assert!(body.contains("agent-task verify"), "{body}");
    assert!(body.contains("| `tests` |"), "{body}");
    let fence_at = body.find("````text\n").expect("a four-backtick fence");
    assert!(body[fence_at..].contains("@octocat"), "{body}");
    assert!(
        !pull["title"].as_str().expect("title").contains('@'),
        "{pull}"
    );

    // land --push lands, pushes and closes the request.
    let v = land_push(&l).json();
    assert_eq!(v["push"]["pushed"], true, "{v}");
    let landed = v["git_commit"].as_str().expect("landed").to_owned();
    assert_eq!(v["push"]["closed_requests"][0]["number"], 1, "{v}");
    assert_eq!(v["push"]["closed_requests"][0]["reason"], "landed", "{v}");
    assert_eq!(fake.pulls()[&1]["state"], "closed");
    // The landed commit verifies from a fresh clone of the forge (had the
    // landing written the very commit proposed, its note is the landing's).
    let clone = fresh_clone(&l, &server, USER, "landed");
    let ok = verify(&l.env, &clone, "origin/main", &key).json();
    assert_eq!(ok["verified"], true, "{ok}");
    assert_eq!(ok["commit"], landed.as_str(), "{ok}");
    let again = land_push(&l).json();
    assert!(again["push"].get("closed_requests").is_none(), "{again}");
    propose(&l, &[]).error("change_closed", 65);

    for r in fake.received() {
        assert!(r.problems.is_empty(), "GitHub's description refuses {r:?}");
        assert_eq!(
            r.authorization.as_deref(),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }
    // The statuses: failure on version 1's candidate commit, success on
    // version 2's, then (land --push) on the landed commit.
    let statuses: Vec<(String, String)> = fake
        .received()
        .iter()
        .filter(|r| r.url.contains("/statuses/"))
        .map(|r| {
            (
                r.url.rsplit('/').next().unwrap_or_default().to_owned(),
                r.body["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        vec![
            (c1, "failure".into()),
            (c2, "success".into()),
            (landed, "success".into())
        ]
    );
    eprintln!(
        "the requests the fake GitHub received:\n{}",
        fake.transcript()
    );
}

#[test]
fn a_lost_answer_is_found_by_its_head_branch_and_never_opened_twice() {
    let Some(spec) = spec_path() else { return };
    let l = qualified();
    let fake = FakeGithub::start(Spec::load(&spec), |_| {});
    let (_server, bare, _) = forge_with(&l, TOKEN, &fake.origin_url, &[]);
    let branch = format!("refs/heads/agent-task/{}", l.change_id);
    // Refused: typed, the forge's status in details, the branch pushed
    // and kept.
    fake.queue(Answer::Status(401));
    let e = propose(&l, &[]).error("forge_unavailable", 69);
    assert_eq!(e["details"]["forge_status"], 401, "{e}");
    let commit = rev(&bare, &branch).expect("pushed before the request");
    // A redirect on the lookup the rerun makes: typed, never followed.
    fake.queue(Answer::Redirect);
    let e = propose(&l, &[]).error("forge_unavailable", 69);
    assert_eq!(e["details"]["forge_status"], 307, "{e}");
    // The forge opens it but its answer (10 MiB) is lost.
    fake.queue(Answer::Normal);
    fake.queue(Answer::Huge);
    let e = propose(&l, &[]).error("forge_unavailable", 69);
    assert_eq!(e["details"]["forge_status"], 201, "{e}");
    assert_eq!(fake.pulls().len(), 1);
    // A 500 on the lookup is retried; it is found, not opened again.
    fake.queue(Answer::Status(500));
    let v = propose(&l, &[]).json();
    assert_eq!(v["request"]["action"], "found", "{v}");
    assert_eq!(v["request"]["number"], 1, "{v}");
    assert_eq!(v["pushed"], false, "{v}");
    assert_eq!(v["git_commit"], commit.as_str(), "the same commit");
    assert_eq!(fake.pulls().len(), 1, "never a second pull request");
    let creates = fake
        .received()
        .iter()
        .filter(|r| r.method == "POST" && r.url.ends_with("/pulls"))
        .count();
    assert_eq!(creates, 2, "{}", fake.transcript());
    for r in fake.received() {
        assert!(r.problems.is_empty(), "{r:?}");
    }
}

#[test]
fn gitlab_merge_requests_are_opened_and_closed_on_its_documented_endpoints() {
    let l = qualified();
    let fake = FakeGitlab::start(TOKEN);
    let (_server, bare, _) = forge_with(&l, TOKEN, &fake.api_url, &["--kind", "gitlab"]);
    let v = propose(&l, &[]).json();
    assert_eq!(v["request"]["kind"], "merge_request", "{v}");
    assert_eq!(v["request"]["number"], 1, "{v}");
    let commit = v["git_commit"].as_str().expect("commit");
    assert_eq!(
        rev(&bare, &format!("refs/heads/agent-task/{}", l.change_id)).as_deref(),
        Some(commit)
    );
    let v = land_push(&l).json();
    assert_eq!(v["push"]["closed_requests"][0]["reason"], "landed", "{v}");
    assert_eq!(fake.mrs.lock().expect("mrs")[&1]["state"], "closed");
    let got = fake.received();
    for r in &got {
        assert!(r.problems.is_empty(), "{r:?}");
    }
    let calls: Vec<(String, String)> = got
        .iter()
        .map(|r| (r.method.clone(), r.url.clone()))
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                "POST".into(),
                "/api/v4/projects/demo%2Fbasic/merge_requests".into()
            ),
            (
                "PUT".into(),
                "/api/v4/projects/demo%2Fbasic/merge_requests/1".into()
            ),
        ]
    );
    assert_eq!(got[1].body["state_event"], "close");
}

#[test]
fn forge_sync_notes_a_squash_merge_and_a_fresh_clone_verifies_it() {
    let l = qualified();
    let fake = FakeGitlab::start(TOKEN);
    let (server, bare, _) = forge_with(&l, TOKEN, &fake.api_url, &["--kind", "gitlab"]);
    let main = rev(&bare, "refs/heads/main").expect("main");
    let c = propose(&l, &[]).json()["git_commit"]
        .as_str()
        .expect("commit")
        .to_owned();
    // The forge squashes: a new commit, the candidate's tree, main's parent.
    let squash = forge_commit(&bare, &tree(&bare, &c), &[&main], "Squashed (#1)");
    let v = sync(&l);
    assert_eq!(v["walked"], 1, "{v}");
    assert_eq!(v["landed"][0]["git_commit"], squash.as_str(), "{v}");
    assert_eq!(v["landed"][0]["change_id"], l.change_id.as_str(), "{v}");
    assert_eq!(v["landed"][0]["attestation"]["written"], true, "{v}");
    assert_eq!(v["notes_pushed"], true, "{v}");
    assert_eq!(v["local_target"], "fast_forwarded", "{v}");
    assert_eq!(
        rev(&l.source, "refs/heads/main").as_deref(),
        Some(squash.as_str())
    );
    // The forge merged it: recorded, no call to close it.
    assert!(fake.received().iter().all(|r| r.method != "PUT"));
    // A fresh clone of the forge verifies the target.
    let clone = fresh_clone(&l, &server, "oauth2", "fresh");
    let key = public_key_file(&l.env, "hex");
    let ok = verify(&l.env, &clone, &squash, &key).json();
    assert_eq!(ok["verified"], true, "{ok}");
    assert_eq!(ok["change_id"], l.change_id.as_str(), "{ok}");
    // ls shows it landed, by forge sync.
    let ls = l.env.run(&["ls"]).json();
    let ch = ls["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["change_id"] == l.change_id.as_str())
        .expect("the change")
        .clone();
    assert_eq!(ch["state"], "landed", "{ch}");
    assert_eq!(ch["landings"][0]["landed_by"], "forge_sync", "{ch}");
    assert_eq!(ch["landings"][0]["git_commit"], squash.as_str(), "{ch}");

    // Someone pushes a tree no revision qualified: walked, no note.
    let t = tree(&bare, &squash);
    let other = forge_commit(&bare, &t, &[&squash], "an empty-change commit");
    let v = sync(&l);
    assert_eq!(v["walked"], 1, "{v}");
    // Same tree as the landed commit: the Change has landed already, so
    // no qualified revision is left to match; it gets no note.
    assert_eq!(v["landed"].as_array().map(Vec::len), Some(0), "{v}");
    assert_eq!(v["unmatched"][0]["git_commit"], other.as_str(), "{v}");
    assert_eq!(v["notes_pushed"], false, "{v}");
    let again = sync(&l);
    assert_eq!(again["walked"], 0, "{again}");
}

#[test]
fn forge_sync_notes_a_merge_commit_and_closes_what_land_landed_without_a_push() {
    // A merge commit whose tree is the (up-to-date) candidate's.
    let l = qualified();
    let fake = FakeGitlab::start(TOKEN);
    let (server, bare, _) = forge_with(&l, TOKEN, &fake.api_url, &["--kind", "gitlab"]);
    let main = rev(&bare, "refs/heads/main").expect("main");
    let c = propose(&l, &[]).json()["git_commit"]
        .as_str()
        .expect("commit")
        .to_owned();
    let merge = forge_commit(
        &bare,
        &tree(&bare, &c),
        &[&main, &c],
        "Merge branch 'agent-task/…'",
    );
    let v = sync(&l);
    assert_eq!(v["landed"][0]["git_commit"], merge.as_str(), "{v}");
    let clone = fresh_clone(&l, &server, "oauth2", "fresh");
    let key = public_key_file(&l.env, "hex");
    let ok = verify(&l.env, &clone, "origin/main", &key).json();
    assert_eq!(ok["verified"], true, "{ok}");
    assert_eq!(ok["commit"], merge.as_str(), "{ok}");

    // Another Change, proposed, then landed locally without a push: the
    // next sync closes its request.
    let l2 = qualified();
    let fake2 = FakeGitlab::start(TOKEN);
    let (_server2, _bare2, _) = forge_with(&l2, TOKEN, &fake2.api_url, &["--kind", "gitlab"]);
    propose(&l2, &[]).json();
    land_with(&l2, None, &[]).json();
    let v = sync(&l2);
    assert_eq!(v["closed_requests"][0]["reason"], "landed", "{v}");
    assert_eq!(v["closed_requests"][0]["number"], 1, "{v}");
    assert_eq!(v["local_target"], "ahead", "{v}");
    assert_eq!(fake2.mrs.lock().expect("mrs")[&1]["state"], "closed");
}
