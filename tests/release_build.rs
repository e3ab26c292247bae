//! What a build WITHOUT the `test-hooks` feature refuses: the `fixture`
//! transport basis of a review profile, at every place a stored profile is
//! loaded (install, claim, collect, import, finalize, qualify and land all
//! go through `ReviewProfile::validate` and `check_basis`); and every
//! `AGENT_TASK_TEST_*` hook of `src/lib/testhooks.rs`, which such a build
//! never reads (the binary is run with all of them set). The rest of the
//! suite runs with `test-hooks`, where `fixture` is allowed and the hooks
//! work, so `scripts/test.sh` also runs this target in a build without the
//! feature; in a `test-hooks` build it holds no tests.

#![cfg(not(feature = "test-hooks"))]

use agent_task::Code;
use agent_task::collector::review::types::{Basis, ReviewProfile, check_basis};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

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

/// The hook variables `src/lib/testhooks.rs` names (its text is the list,
/// so a hook added there is set here without anyone remembering to).
fn hook_names() -> Vec<String> {
    let text = include_str!("../src/lib/testhooks.rs");
    let mut out = std::collections::BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("AGENT_TASK_TEST_") {
        let tail = &rest[i..];
        let end = tail
            .find(|c: char| !(c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_'))
            .unwrap_or(tail.len());
        out.insert(tail[..end].to_owned());
        rest = &tail[end..];
    }
    out.remove("AGENT_TASK_TEST_");
    out.into_iter().collect()
}

/// The instant the clock hook is set to (far from the real time).
const HOOKED_NOW: &str = "2030-01-02T03:04:05Z";

/// A value for each hook that would change what a `test-hooks` build does:
/// the clock far off, a crash at a step, paths (which must stay absent),
/// and "1" for the rest (a page number, a gather count, the skip switches).
fn hook_env(dir: &Path) -> Vec<(String, std::ffi::OsString)> {
    hook_names()
        .into_iter()
        .map(|n| {
            let v: std::ffi::OsString = if n == "AGENT_TASK_TEST_NOW" {
                HOOKED_NOW.into()
            } else if n == "AGENT_TASK_TEST_CRASH_AT" {
                "before_reserve".into()
            } else if n.ends_with("_FILE") || n.ends_with("_LOG") || n.ends_with("_FIFO") {
                dir.join(n.to_ascii_lowercase()).into_os_string()
            } else {
                "1".into()
            };
            (n, v)
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let p = to.join(e.file_name());
        if e.file_type().expect("type").is_dir() {
            copy_dir(&e.path(), &p);
        } else {
            std::fs::copy(e.path(), &p).expect("copy");
        }
    }
}

/// Runs the binary of this build (no `test-hooks`) with `hooks` set and
/// returns its stdout JSON (panics with the output on a failure).
fn run(data_dir: &Path, hooks: &[(String, std::ffi::OsString)], args: &[&str]) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_agent-task"))
        .env_clear()
        .env("PATH", agent_task::env::var_os("PATH").unwrap_or_default())
        .env("HOME", data_dir.parent().expect("parent"))
        .envs(hooks.iter().map(|(k, v)| (k, v)))
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .output()
        .expect("run agent-task");
    assert!(
        out.status.success(),
        "{args:?}: {out:?} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("stdout JSON")
}

fn instant(v: &Value) -> jiff::Timestamp {
    v.as_str().expect("an instant").parse().expect("RFC 3339")
}

#[test]
fn the_hook_list_is_the_test_hook_module() {
    let names = hook_names();
    assert!(names.len() >= 9, "{names:?}");
    for n in [
        "AGENT_TASK_TEST_NOW",
        "AGENT_TASK_TEST_CRASH_AT",
        "AGENT_TASK_TEST_SKIP_CHECKOUT_CHECK",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} in {names:?}");
    }
}

#[test]
fn a_build_without_test_hooks_names_no_hook_variable() {
    // A variable can be read only by its name: no `AGENT_TASK_TEST_` text
    // in the binary means no hook is read, whatever code path runs.
    let bin = std::fs::read(env!("CARGO_BIN_EXE_agent-task")).expect("read the binary");
    let needle = b"AGENT_TASK_TEST_";
    let at = bin.windows(needle.len()).position(|w| w == needle);
    assert_eq!(
        at.map(|i| String::from_utf8_lossy(&bin[i..(i + 48).min(bin.len())]).into_owned()),
        None,
        "the release binary names a test hook"
    );
}

#[test]
fn a_build_without_test_hooks_ignores_every_hook_and_keeps_the_real_clock() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let hooks = hook_env(tmp.path());
    let d: PathBuf = tmp.path().join("data");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (src, work) = (tmp.path().join("source"), tmp.path().join("work"));
    copy_dir(&root.join("fixtures/repos/basic"), &src);
    copy_dir(&root.join("fixtures/repos/basic"), &work);
    let s = |p: &Path| p.to_str().expect("utf8").to_owned();
    let token = tmp.path().join("alice.token");
    let workflow = root.join("fixtures/workflows/basic.json");

    // Whole milliseconds, as the store records them.
    let before =
        jiff::Timestamp::from_millisecond(jiff::Timestamp::now().as_millisecond()).expect("now");
    run(&d, &hooks, &["init"]);
    run(
        &d,
        &hooks,
        &["repo", "add", "demo/basic", "--source", &s(&src)],
    );
    run(
        &d,
        &hooks,
        &[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            &s(&workflow),
        ],
    );
    run(
        &d,
        &hooks,
        &[
            "token",
            "issue",
            "--owner",
            "alice",
            "--agent",
            "claude-1",
            "--out",
            &s(&token),
        ],
    );
    let agent = |args: &[&str]| {
        let mut a = vec!["--token-file", token.to_str().expect("utf8")];
        a.extend_from_slice(args);
        run(&d, &hooks, &a)
    };
    let w = s(&work);
    agent(&[
        "change",
        "open",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--workspace",
        &w,
    ]);
    let cp = agent(&["checkpoint", "--workspace", &w, "--new-subject"]);
    let tests = cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == "tests")
        .and_then(|t| t["task_id"].as_str())
        .expect("tests task")
        .to_owned();
    let claim = agent(&[
        "claim",
        &tests,
        "--request-id",
        "claim-1",
        "--lease-ms",
        "60000",
    ]);
    let after = jiff::Timestamp::now();

    // The clock hook: init recorded the real instant and the lease runs
    // from the real instant, not from the hooked one.
    let hooked: jiff::Timestamp = HOOKED_NOW.parse().expect("hooked");
    let info = run(&d, &hooks, &["info"]);
    let created = instant(&info["created_at"]);
    assert!(
        before <= created && created <= after,
        "created_at {created} is not the real time ({before} .. {after}; hooked {hooked})"
    );
    let lease = instant(&claim["lease_expires_at"]);
    let minute = jiff::SignedDuration::from_secs(60);
    assert!(
        before + minute <= lease && lease <= after + minute,
        "lease_expires_at {lease} is not the real time + 60 s ({before} .. {after})"
    );
    // A test build refuses a clock hook that is not RFC 3339
    // (`invalid_input`); this one never reads it.
    let bad: Vec<_> = hooks
        .iter()
        .map(|(k, v)| {
            let v = if k == "AGENT_TASK_TEST_NOW" {
                "yesterday".into()
            } else {
                v.clone()
            };
            (k.clone(), v)
        })
        .collect();
    assert_eq!(run(&d, &bad, &["info"])["created_at"], info["created_at"]);
    // No hook wrote the files it names (run log, pause announcements).
    for (k, v) in &hooks {
        if k != "AGENT_TASK_TEST_NOW" && Path::new(v).is_absolute() {
            assert!(!Path::new(v).exists(), "{k} wrote {v:?}");
        }
    }
}
