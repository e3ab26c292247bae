//! A landing others can use, and repeats that destroy nothing (issue 29,
//! items 3 and 4), through the real binary: the refs, objects and notes a
//! landing adds get the modes git gives them (another Unix user can fetch
//! and clone afterwards, when run as root); a checked-out target is
//! refused before any ref moves, or, with `--update-worktree`, moved along
//! when clean and refused when dirty; the commit's author, message and
//! trailers; a second `land` answers `already_landed`; a landed Change is
//! closed; an unchanged requirement changes nothing; an unchanged tree
//! returns the current subject until the retry path; policy acts report
//! the subjects they make stale.

use crate::common::Output;
use crate::common::collect_flow::{Loop, git};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// Checkpoints the loop's workspace (with `--message` when given), runs
/// its `tests` task to a pass and finalizes: a qualified Change; returns
/// the receipt digest.
fn qualify(l: &Loop, message: Option<&str>) -> String {
    let mut args = vec!["checkpoint", "--workspace", s(&l.workspace)];
    if let Some(m) = message {
        args.extend(["--message", m]);
    }
    let cp = l.agent(&args).json();
    let t = cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == "tests")
        .and_then(|t| t["task_id"].as_str())
        .expect("tests task")
        .to_owned();
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "passed");
    let f = l.agent(&["finalize", "--change", &l.change_id]).json();
    assert_eq!(l.qualify()["qualified"], true);
    f["receipt_digest"].as_str().expect("receipt").to_owned()
}

fn land(l: &Loop, extra: &[&str]) -> Output {
    let mut args = vec!["land", "--repo", "demo/basic", "--change", &l.change_id];
    args.extend(extra);
    l.env.run(&args)
}

fn rev(dir: &Path, name: &str) -> String {
    git(dir, &["rev-parse", name]).trim().to_owned()
}

fn has_notes(dir: &Path) -> bool {
    std::process::Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "-q", "--verify", "refs/notes/agent-task"])
        .output()
        .expect("git")
        .status
        .success()
}

/// Mode of every file and directory under the repository's refs, logs
/// and objects (and `packed-refs`).
fn git_modes(src: &Path) -> BTreeMap<PathBuf, u32> {
    let mut out = BTreeMap::new();
    let git_dir = src.join(".git");
    let mut stack: Vec<PathBuf> = ["refs", "logs", "objects", "packed-refs"]
        .iter()
        .map(|d| git_dir.join(d))
        .filter(|p| p.exists())
        .collect();
    while let Some(p) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).expect("stat");
        out.insert(p.clone(), m.mode() & 0o7777);
        if m.is_dir() {
            for e in std::fs::read_dir(&p).expect("read dir") {
                stack.push(e.expect("entry").path());
            }
        }
    }
    out
}

/// Every path the landing added or rewrote is as readable as git makes it
/// under umask 022: directories 0755 (at least o+rx), files at least o+r.
fn assert_git_modes(before: &BTreeMap<PathBuf, u32>, src: &Path) {
    let after = git_modes(src);
    let mut checked = 0;
    for (p, mode) in &after {
        let inode_new = before.get(p) != Some(mode) || !before.contains_key(p);
        let rewritten = p.ends_with("refs/heads/main") || p.ends_with("refs/notes/agent-task");
        if !inode_new && !rewritten {
            continue;
        }
        checked += 1;
        if p.is_dir() {
            assert_eq!(mode & 0o055, 0o055, "{} is {mode:o}", p.display());
        } else {
            assert_eq!(mode & 0o044, 0o044, "{} is {mode:o}", p.display());
        }
    }
    assert!(checked > 0, "the landing added nothing under .git");
}

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| m.uid() == 0)
        .unwrap_or(false)
}

/// Runs git as uid/gid 65534 (another Unix user), `-c safe.directory=*`
/// (the repository is someone else's), HOME in `home`.
fn git_as_nobody(home: &Path, cwd: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("setpriv")
        .args([
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            "--",
            "git",
            "-c",
            "safe.directory=*",
            "-C",
        ])
        .arg(cwd)
        .args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", home)
        .output()
        .expect("setpriv git")
}

#[test]
fn land_into_a_checked_out_main_refuses_then_moves_it_and_another_user_can_pull() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let receipt = qualify(&l, None);
    let old = rev(&l.source, "main");
    let head_before = l.env.run(&["repo", "list"]).json();

    // Another Unix user's clone, made before the landing (root only).
    let other = if is_root() {
        let home = l.env.path("other");
        std::fs::create_dir(&home).expect("mkdir");
        std::os::unix::fs::chown(&home, Some(65534), Some(65534)).expect("chown");
        // The repository is someone else's: that user trusts it (as the
        // deployment's agent does, docs/security.md).
        let cfg = home.join(".gitconfig");
        std::fs::write(&cfg, "[safe]\n\tdirectory = *\n").expect("gitconfig");
        std::os::unix::fs::chown(&cfg, Some(65534), Some(65534)).expect("chown");
        // The path to the source must be traversable by that user.
        let mut p = l.source.clone();
        while let Some(parent) = p.parent() {
            if parent == Path::new("/") {
                break;
            }
            let m = std::fs::metadata(parent).expect("stat").mode();
            std::fs::set_permissions(
                parent,
                std::fs::Permissions::from_mode((m | 0o055) & 0o7777),
            )
            .expect("chmod");
            p = parent.to_path_buf();
        }
        let o = git_as_nobody(&home, &home, &["clone", "-q", s(&l.source), "clone"]);
        assert!(o.status.success(), "clone: {o:?}");
        Some(home)
    } else {
        println!(
            "SKIP: another user's clone and pull need root (setpriv); modes are still checked"
        );
        None
    };

    // main is checked out in the (non-bare) source: refused before any
    // ref moves, the fix named, nothing in the notes.
    let e = land(&l, &[]).error("worktree_checked_out", 65);
    assert!(
        e["details"]["fix"]
            .as_str()
            .is_some_and(|f| f.contains("--update-worktree")),
        "{e}"
    );
    assert_eq!(e["details"]["ref"], "refs/heads/main", "{e}");
    assert_eq!(rev(&l.source, "main"), old);
    assert!(!has_notes(&l.source));
    assert_eq!(l.env.run(&["repo", "list"]).json(), head_before);

    // With --update-worktree: landed, the index and files moved along,
    // authored by --author.
    let before = git_modes(&l.source);
    let v = land(
        &l,
        &[
            "--update-worktree",
            "--author",
            "Ada Lovelace <ada@example.org>",
        ],
    )
    .json();
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(v["already_landed"], false, "{v}");
    assert_eq!(v["worktree_updated"], true, "{v}");
    assert_eq!(v["stale_subjects"], 0, "no other Change was live: {v}");
    assert_eq!(v["receipt_digest"], receipt.as_str());
    let commit = v["git_commit"].as_str().expect("commit").to_owned();
    assert_eq!(rev(&l.source, "HEAD"), commit);
    assert_eq!(
        git(
            &l.source,
            &["status", "--porcelain", "--untracked-files=all"]
        ),
        "",
        "the checked-out main is clean at the landed commit"
    );
    assert_eq!(
        std::fs::read(l.source.join("add.sh")).expect("read"),
        std::fs::read(l.workspace.join("add.sh")).expect("read"),
        "the work tree has the landed files"
    );
    let who = git(
        &l.source,
        &["log", "-1", "--format=%an|%ae|%cn|%ce", "main"],
    );
    assert_eq!(
        who.trim(),
        "Ada Lovelace|ada@example.org|Ada Lovelace|ada@example.org"
    );
    assert!(has_notes(&l.source));
    assert_git_modes(&before, &l.source);

    // The other user fetches the landed commit and its notes, and clones.
    if let Some(home) = other {
        let clone = home.join("clone");
        let o = git_as_nobody(&home, &clone, &["pull", "-q", "--ff-only"]);
        assert!(o.status.success(), "pull: {o:?}");
        let head = |dir: &Path| {
            let o = git_as_nobody(&home, dir, &["rev-parse", "HEAD"]);
            assert!(o.status.success(), "rev-parse: {o:?}");
            String::from_utf8_lossy(&o.stdout).trim().to_owned()
        };
        assert_eq!(head(&clone), commit);
        let o = git_as_nobody(
            &home,
            &clone,
            &[
                "fetch",
                "-q",
                "origin",
                "refs/notes/agent-task:refs/notes/agent-task",
            ],
        );
        assert!(o.status.success(), "fetch notes: {o:?}");
        let o = git_as_nobody(&home, &home, &["clone", "-q", s(&l.source), "fresh"]);
        assert!(o.status.success(), "fresh clone: {o:?}");
        assert_eq!(head(&home.join("fresh")), commit);
    }

    // A second land: exit 0, already landed, the same commit, nothing new.
    let again = land(&l, &["--update-worktree"]).json();
    assert_eq!(again["already_landed"], true, "{again}");
    assert_eq!(again["git_commit"], commit.as_str(), "{again}");
    assert_eq!(rev(&l.source, "main"), commit);
    assert_eq!(rev(&l.source, "main^"), old);
}

#[test]
fn dirty_checked_out_main_is_refused_with_nothing_moved_then_lands_once_cleaned() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    std::fs::write(l.workspace.join("NEW.md"), "from the agent\n").expect("write");
    qualify(&l, None);
    let old = rev(&l.source, "main");
    let refused = |why: &str| {
        let e = land(&l, &["--update-worktree"]).error("worktree_dirty", 65);
        assert!(
            e["details"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains(why)),
            "{why}: {e}"
        );
        assert_eq!(rev(&l.source, "main"), old, "{why}: no ref moved");
        assert!(!has_notes(&l.source), "{why}: nothing in the notes");
    };
    // An unstaged edit of a tracked file.
    std::fs::write(l.source.join("CHANGELOG.md"), "operator's edit\n").expect("edit");
    refused("not committed");
    assert_eq!(
        std::fs::read_to_string(l.source.join("CHANGELOG.md")).expect("read"),
        "operator's edit\n",
        "the operator's edit is kept"
    );
    // A staged one.
    git(&l.source, &["add", "CHANGELOG.md"]);
    refused("staged");
    git(&l.source, &["reset", "-q", "--hard"]);
    // An untracked file the landing would overwrite.
    std::fs::write(l.source.join("NEW.md"), "the operator's own\n").expect("write");
    refused("untracked");
    std::fs::remove_file(l.source.join("NEW.md")).expect("rm");
    // Clean: it lands, exactly once.
    let v = land(&l, &["--update-worktree"]).json();
    assert_eq!(v["landed"], true, "{v}");
    assert_eq!(v["worktree_updated"], true, "{v}");
    assert_eq!(rev(&l.source, "main^"), old);
    assert_eq!(
        std::fs::read_to_string(l.source.join("NEW.md")).expect("read"),
        "from the agent\n"
    );
    assert_eq!(git(&l.source, &["status", "--porcelain"]), "");
}

#[test]
fn the_commit_carries_the_operators_identity_the_changes_message_and_only_our_trailers() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let message = "Make add.sh add\tproperly\u{1}\n\n\
        The adder subtracted.\u{7}\u{1b}[31m\n\
        Signed-off-by: Mallory <m@example.invalid>\n\
        Agent-Task-Receipt: forged\n\
        ---\n\
        Reviewed-by: nobody\n";
    let receipt = qualify(&l, Some(message));
    let v = land(&l, &["--update-worktree"]).json();
    let commit = v["git_commit"].as_str().expect("commit");
    let who = git(
        &l.source,
        &["log", "-1", "--format=%an|%ae|%cn|%ce", commit],
    );
    assert_eq!(
        who.trim(),
        "op|op@example.invalid|op|op@example.invalid",
        "the repository's user.name and user.email"
    );
    let subject = git(&l.source, &["log", "-1", "--format=%s", commit]);
    assert_eq!(subject.trim(), "Make add.sh add properly");
    let body = git(&l.source, &["log", "-1", "--format=%B", commit]);
    assert!(
        !body.chars().any(|c| c.is_control() && c != '\n'),
        "control characters stripped: {body:?}"
    );
    assert!(body.contains("The adder subtracted."), "{body}");
    // git reads exactly the product's trailers, none of the agent's lines.
    let mut c = std::process::Command::new("git");
    c.args(["interpret-trailers", "--parse"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped());
    let mut child = c.spawn().expect("git");
    std::io::Write::write_all(&mut child.stdin.take().expect("stdin"), body.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("git");
    let trailers = String::from_utf8(out.stdout).expect("utf8");
    let revision = v["revision"].as_str().expect("revision");
    assert_eq!(
        trailers,
        format!(
            "Agent-Task-Agent: alice/claude-1\n\
             Agent-Task-Change: {} v1\n\
             Agent-Task-Revision: {revision}\n\
             Agent-Task-Receipt: {receipt}\n",
            l.change_id
        ),
        "{body}"
    );
}

#[test]
fn a_landed_change_is_closed_and_the_stop_hook_passes_only_at_the_landed_revision() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    qualify(&l, None);
    let v = land(&l, &["--update-worktree"]).json();
    // checkpoint (changed or not) is refused with the way on.
    for edit in [false, true] {
        if edit {
            std::fs::write(l.workspace.join("more.txt"), "more\n").expect("edit");
        }
        let e = l
            .agent(&["checkpoint", "--workspace", s(&l.workspace)])
            .error("change_closed", 65);
        assert_eq!(
            e["details"]["next"],
            json!({"command": "change open"}),
            "{e}"
        );
        assert_eq!(e["details"]["git_commit"], v["git_commit"], "{e}");
    }
    // The Stop hook: blocks on the edit with the fixed sentence, passes at
    // the landed revision.
    let p = crate::common::hook_stop::payload("claude", false, &l.workspace);
    let d = crate::common::hook_stop::blocked(
        "claude",
        &crate::common::hook_stop::hook(&l, "claude", &p, &[]),
    );
    assert_eq!(d["failures"], json!([{"code": "change_landed"}]), "{d}");
    assert_eq!(d["next"], json!({"operation": "none"}), "{d}");
    assert!(
        d["next_action"]
            .as_str()
            .is_some_and(|t| t.contains("open a new Change")),
        "{d}"
    );
    std::fs::remove_file(l.workspace.join("more.txt")).expect("rm");
    crate::common::hook_stop::passed(
        "claude",
        &crate::common::hook_stop::hook(&l, "claude", &p, &[]),
    );
}

fn tests_task(cp: &Value) -> String {
    crate::common::privsep::task_of(cp, "tests")
}

#[test]
fn repeats_keep_the_subject_and_the_epoch_until_asked_and_policy_acts_count_what_they_stale() {
    let l = Loop::basic("bwrap");
    l.set_add("-");
    let wf = crate::common::repo_root().join("fixtures/workflows/basic.json");
    let install = |extra: &[&str]| {
        let mut a = vec![
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            s(&wf),
        ];
        a.extend(extra);
        l.env.run(&a).json()
    };
    let checkpoint = |extra: &[&str]| {
        let mut a = vec!["checkpoint", "--workspace", s(&l.workspace)];
        a.extend(extra);
        l.agent(&a).json()
    };
    let cp1 = checkpoint(&[]);
    assert_eq!(cp1["reused"], false, "{cp1}");
    let t1 = tests_task(&cp1);

    // The same requirement again: nothing changes.
    let epoch = l
        .env
        .run(&[
            "requirement",
            "show",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
        ])
        .json()["policy_epoch"]
        .clone();
    let r = install(&[]);
    assert_eq!(r["unchanged"], true, "{r}");
    assert_eq!(r["stale_subjects"], 0, "{r}");
    assert_eq!(r["policy_epoch"], epoch, "{r}");
    assert_eq!(l.qualify()["subject_current"], true);

    // An unchanged tree while the task is pending, then claimed: the same
    // subject and task ids (the claim is not orphaned).
    let cp = checkpoint(&[]);
    assert_eq!(cp["reused"], true, "{cp}");
    assert_eq!(cp["version"], cp1["version"], "{cp}");
    assert_eq!(tests_task(&cp), t1);
    let (d, _) = l.claim(&t1, "d1.json");
    let cp = checkpoint(&[]);
    assert_eq!(cp["reused"], true, "{cp}");
    assert_eq!(tests_task(&cp), t1);

    // The required task finished and failed: the spec's retry path mints.
    assert_eq!(l.collect(&d).json()["outcome"], "failed");
    let cp2 = checkpoint(&[]);
    assert_eq!(cp2["reused"], false, "{cp2}");
    let t2 = tests_task(&cp2);
    assert_ne!(t2, t1);
    assert_eq!(checkpoint(&[])["reused"], true);
    // --new-subject forces one.
    let cp3 = checkpoint(&["--new-subject"]);
    assert_eq!(cp3["reused"], false, "{cp3}");
    assert_ne!(tests_task(&cp3), t2);

    // --bump-epoch: a policy act, which says how many live subjects it staled.
    let r = install(&["--bump-epoch"]);
    assert_eq!(r["unchanged"], false, "{r}");
    assert_eq!(r["stale_subjects"], 1, "{r}");
    assert_eq!(r["policy_epoch"], epoch.as_u64().expect("epoch") + 1, "{r}");
    assert_eq!(l.qualify()["subject_current"], false);
    // The stale subject is not reused.
    let cp4 = checkpoint(&[]);
    assert_eq!(cp4["reused"], false, "{cp4}");
    let rv = l
        .env
        .run(&["enrollment", "revoke", "--registration", &l.registration])
        .json();
    assert_eq!(rv["stale_subjects"], 1, "{rv}");
    let rv = l
        .env
        .run(&["enrollment", "revoke", "--registration", &l.registration])
        .json();
    assert_eq!(rv["already_revoked"], true, "{rv}");
    assert_eq!(rv["stale_subjects"], 0, "{rv}");
}

#[test]
fn bad_titles_and_authors_are_refused_and_change_nothing() {
    let l = Loop::basic("bwrap");
    let long = "x".repeat(201);
    let e = l
        .agent(&[
            "checkpoint",
            "--workspace",
            s(&l.workspace),
            "--message",
            &long,
        ])
        .error("invalid_input", 65);
    assert!(
        e["message"].as_str().is_some_and(|m| m.contains("200")),
        "{e}"
    );
    let cp = l
        .agent(&["checkpoint", "--workspace", s(&l.workspace)])
        .json();
    assert_eq!(
        cp["version"], 1,
        "the refused checkpoint made no version: {cp}"
    );
    let ws2 = l.env.path("work2");
    std::fs::create_dir(&ws2).expect("mkdir");
    l.agent(&[
        "change",
        "open",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--workspace",
        s(&ws2),
        "--body",
        &"y".repeat(20_000),
    ])
    .error("invalid_input", 65);
    // Nothing was opened on ws2: the next open succeeds.
    l.agent(&[
        "change",
        "open",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--workspace",
        s(&ws2),
        "--title",
        "ok",
    ])
    .json();
    for bad in ["no email", "A <a@b> <c@d>", "A\n<a@b>", "<a@b>"] {
        land(&l, &["--update-worktree", "--author", bad]).error("invalid_input", 65);
    }
}
