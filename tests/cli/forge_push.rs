//! `land --push` (issue 32, item 2) against a real git server on loopback
//! (`git http-backend` behind basic auth, `common::git_http`): the landed
//! commit goes to `agent-task/<change>`, then the target (fast-forward
//! only), then the attestation notes, with the credential handed to git
//! by `agent-task forge credential` alone; a fresh clone of the server
//! passes `verify`. A wrong credential pushes nothing; a target that is
//! not a fast-forward is `push_rejected`; the landing stays recorded, and
//! `land --push` again completes exactly once.

use crate::common::Output;
use crate::common::attest::{land_with, public_key_file, qualified, verify};
use crate::common::collect_flow::{Loop, git};
use crate::common::git_http::GitServer;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

pub const TOKEN: &str = "ghs_pushtoken0123456789abcdef";
pub const USER: &str = "x-access-token";

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

pub fn rev(dir: &Path, name: &str) -> Option<String> {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--verify", "-q", name])
        .output()
        .expect("git");
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A bare copy of the loop's source under a server root, the server, and
/// the repository's forge pointing at it with a token file holding `token`.
fn forge_for(l: &Loop, token: &str) -> (GitServer, PathBuf, PathBuf) {
    forge_with(l, token, "http://127.0.0.1:1", &[])
}

/// [`forge_for`] with the forge's API at `api_url` and more `repo forge
/// set` arguments.
pub fn forge_with(
    l: &Loop,
    token: &str,
    api_url: &str,
    extra: &[&str],
) -> (GitServer, PathBuf, PathBuf) {
    let root = l.env.path("git-server");
    std::fs::create_dir_all(&root).expect("mkdir");
    let bare = root.join("demo.git");
    let out = std::process::Command::new("git")
        .args(["clone", "-q", "--bare"])
        .arg(&l.source)
        .arg(&bare)
        .output()
        .expect("clone");
    assert!(out.status.success(), "{out:?}");
    let gitlab = extra.windows(2).any(|w| w == ["--kind", "gitlab"]);
    let server = GitServer::start(&root, if gitlab { "oauth2" } else { USER }, TOKEN);
    let tok = l.env.path("forge-token");
    std::fs::write(&tok, format!("{token}\n")).expect("write");
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let remote = server.url("demo.git");
    let mut args = vec![
        "repo",
        "forge",
        "set",
        "--repo",
        "demo/basic",
        "--kind",
        if gitlab { "gitlab" } else { "github" },
        "--api-url",
        api_url,
        "--project",
        "demo/basic",
        "--remote-url",
        &remote,
        "--token-file",
        s(&tok),
    ];
    // `--kind gitlab` in `extra` chose the kind above.
    let mut rest = extra.iter().peekable();
    while let Some(a) = rest.next() {
        if *a == "--kind" {
            rest.next();
            continue;
        }
        args.push(a);
    }
    l.env.run(&args).json();
    (server, bare, tok)
}

pub fn land_push(l: &Loop) -> Output {
    let o = land_with(l, None, &["--push"]);
    assert!(
        !o.stdout.contains(TOKEN) && !o.stderr.contains(TOKEN),
        "{o}"
    );
    o
}

#[test]
fn land_push_reaches_the_forge_in_order_and_a_fresh_clone_verifies() {
    let l = qualified();
    let (server, bare, _) = forge_for(&l, TOKEN);
    let old = rev(&bare, "refs/heads/main").expect("main");
    let v = land_push(&l).json();
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(v["push"]["pushed"], true, "{v}");
    assert_eq!(v["push"]["already_pushed"], false, "{v}");
    assert_eq!(v["push"]["attempts"], 1, "{v}");
    let branch = format!("refs/heads/agent-task/{}", l.change_id);
    assert_eq!(
        v["push"]["refs"],
        serde_json::json!([branch, "refs/heads/main", "refs/notes/agent-task"])
    );
    assert_ne!(old, commit);
    assert_eq!(
        rev(&bare, "refs/heads/main").as_deref(),
        Some(commit.as_str())
    );
    assert_eq!(rev(&bare, &branch).as_deref(), Some(commit.as_str()));
    assert!(rev(&bare, "refs/notes/agent-task").is_some());
    // Three pushes, each authenticated through the helper: every
    // receive-pack POST carried the user; none went unauthenticated.
    let reqs = server.requests();
    let posts: Vec<_> = reqs.iter().filter(|r| r.method == "POST").collect();
    assert_eq!(posts.len(), 3, "{reqs:?}");
    assert!(
        posts
            .iter()
            .all(|r| r.user.as_deref() == Some(USER) && r.status == 200)
    );
    assert!(reqs.iter().all(|r| !r.bad_auth), "{reqs:?}");

    // A fresh clone of the forge verifies on the target.
    let clone = l.env.path("fresh");
    let out = std::process::Command::new("git")
        .args(["clone", "-q", &server.url_with("demo.git", USER, TOKEN)])
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
    let key = public_key_file(&l.env, "hex");
    let head = rev(&clone, "HEAD").expect("head");
    assert_eq!(head, commit);
    let ok = verify(&l.env, &clone, &head, &key).json();
    assert_eq!(ok["verified"], true, "{ok}");

    // Again: nothing more is pushed.
    let before = server.requests().len();
    let again = land_push(&l).json();
    assert_eq!(again["already_landed"], true, "{again}");
    assert_eq!(again["push"]["pushed"], false, "{again}");
    assert_eq!(again["push"]["already_pushed"], true, "{again}");
    assert_eq!(server.requests().len(), before);
}

#[test]
fn a_refused_push_keeps_the_landing_and_completes_once_fixed() {
    let l = qualified();
    let (server, bare, tok) = forge_for(&l, "ghs_wrongtoken");
    let old = rev(&bare, "refs/heads/main").expect("main");

    // A credential file that fails its checks: refused before anything
    // lands.
    let local = rev(&l.source, "refs/heads/main");
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    land_push(&l).error("insecure_permissions", 77);
    assert_eq!(rev(&l.source, "refs/heads/main"), local, "nothing landed");
    std::fs::set_permissions(&tok, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    // A wrong credential: a typed error, nothing pushed, landed locally.
    let o = land_push(&l);
    let e = o.error("forge_unavailable", 69);
    assert_eq!(e["details"]["reason"], "authentication", "{e}");
    assert!(!o.stderr.contains("ghs_wrongtoken"), "{o}");
    let commit = e["details"]["landing"]["git_commit"]
        .as_str()
        .expect("the landing in details")
        .to_owned();
    assert_eq!(
        rev(&l.source, "refs/heads/main").as_deref(),
        Some(commit.as_str())
    );
    assert_eq!(rev(&bare, "refs/heads/main").as_deref(), Some(old.as_str()));
    assert!(rev(&bare, &format!("refs/heads/agent-task/{}", l.change_id)).is_none());
    assert!(server.requests().iter().all(|r| r.user.is_none()));

    // The right token, but the forge's target moved to a commit the
    // landed one does not descend from: push_rejected.
    std::fs::write(&tok, format!("{TOKEN}\n")).expect("write");
    let tree = git(&bare, &["rev-parse", "refs/heads/main^{tree}"])
        .trim()
        .to_owned();
    let other = std::process::Command::new("git")
        .arg("-C")
        .arg(&bare)
        .args(["commit-tree", &tree, "-m", "someone else"])
        .env("GIT_AUTHOR_NAME", "x")
        .env("GIT_AUTHOR_EMAIL", "x@example.invalid")
        .env("GIT_COMMITTER_NAME", "x")
        .env("GIT_COMMITTER_EMAIL", "x@example.invalid")
        .output()
        .expect("commit-tree");
    let other = String::from_utf8_lossy(&other.stdout).trim().to_owned();
    git(&bare, &["update-ref", "refs/heads/main", &other]);
    let o = land_push(&l);
    let e = o.error("push_rejected", 75);
    assert_eq!(e["details"]["ref"], "refs/heads/main", "{e}");
    assert_eq!(
        rev(&bare, "refs/heads/main").as_deref(),
        Some(other.as_str())
    );
    assert_eq!(
        rev(&bare, &format!("refs/heads/agent-task/{}", l.change_id)).as_deref(),
        Some(commit.as_str()),
        "the candidate branch goes first"
    );

    // The operator puts the forge's target back: the next run completes.
    git(&bare, &["update-ref", "refs/heads/main", &old]);
    let v = land_push(&l).json();
    assert_eq!(v["already_landed"], true, "{v}");
    assert_eq!(v["push"]["pushed"], true, "{v}");
    assert_eq!(v["push"]["attempts"], 3, "{v}");
    assert_eq!(
        rev(&bare, "refs/heads/main").as_deref(),
        Some(commit.as_str())
    );
    assert!(rev(&bare, "refs/notes/agent-task").is_some());
    let before = server.requests().len();
    let v = land_push(&l).json();
    assert_eq!(v["push"]["already_pushed"], true, "{v}");
    assert_eq!(server.requests().len(), before, "exactly once");
}
