//! The finite review collector wired end to end through the real binary:
//! a workflow with a test step and a review step (`fixtures/workflows/review.json`),
//! the review profile pinning the stand-in reviewer
//! (`fixtures/review/stand-in-claude.py`) under `claude_code_cli` by its own
//! digest, collector-claim, collect, import by replay, finalize, qualify and
//! land; the tamper and crash suites.

use crate::collect_flow::Loop;
use crate::common::{Output, TestEnv, repo_root};
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/review/stand-in-claude.py"
);
const CRASH: &str = "AGENT_TASK_TEST_CRASH_AT";
const MODEL: &str = "claude-sonnet-4-6";

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

pub struct Review {
    pub l: Loop,
    pub registration: String,
    pub exe: PathBuf,
}

/// The operator's set-up: the review workflow, the `tests` profile (bwrap),
/// an enrollment of the same collector key for `review` and a review
/// profile pinning a private copy of the stand-in.
pub fn setup() -> Review {
    let l = Loop::setup(
        TestEnv::init(),
        &repo_root().join("fixtures/workflows/review.json"),
        "bwrap",
        &[],
    );
    let key = l
        .env
        .run(&["keygen", "--collector-dir", s(&l.collector)])
        .json();
    let reg = l
        .env
        .run(&[
            "enroll",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--step",
            "review",
            "--executor",
            "laptop-review",
            "--public-key",
            key["public_key"].as_str().expect("pk"),
        ])
        .json();
    let registration = reg["registration_id"].as_str().expect("reg").to_owned();
    let bin = l.env.path("reviewer");
    std::fs::create_dir(&bin).expect("mkdir");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let exe = bin.join("claude");
    std::fs::copy(STAND_IN, &exe).expect("copy");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let out = install(&l, &registration, &exe).json();
    assert_eq!(out["created"], true, "{out}");
    assert_eq!(out["review_profile"]["basis"], "claude_code_cli");
    Review {
        l,
        registration,
        exe,
    }
}

fn install(l: &Loop, registration: &str, exe: &Path) -> Output {
    l.env.run(&[
        "profile",
        "install",
        "--registration",
        registration,
        "--step",
        "review",
        "--runtime",
        "review",
        "--executable",
        s(exe),
        "--model",
        MODEL,
    ])
}

impl Review {
    /// Checkpoints; returns (tests task, review task).
    pub fn checkpoint(&self) -> (String, String) {
        let cp = self
            .l
            .agent(&["checkpoint", "--workspace", s(&self.l.workspace)])
            .json();
        let id = |step: &str| {
            cp["tasks"]
                .as_array()
                .expect("tasks")
                .iter()
                .find(|t| t["step_id"] == step)
                .and_then(|t| t["task_id"].as_str())
                .expect("task")
                .to_owned()
        };
        (id("tests"), id("review"))
    }

    /// Collects the tests task (it must pass).
    pub fn pass_tests(&self, t: &str) {
        let (d, _) = self.l.claim(t, &format!("{t}.json"));
        let c = self.l.collect(&d).json();
        assert_eq!(c["outcome"], "passed", "{c}");
    }

    pub fn collect_env(&self, d: &Path, env: &[(&str, &str)]) -> Output {
        self.l.agent_env(
            env,
            &[
                "collect",
                "--descriptor",
                s(d),
                "--collector-dir",
                s(&self.l.collector),
            ],
        )
    }

    /// Appends `text` to the workspace's add.sh (a file the review covers).
    pub fn write_add(&self, text: &str) {
        let p = self.l.workspace.join("add.sh");
        let mut b = std::fs::read_to_string(&p).expect("read");
        b.push_str(text);
        std::fs::write(&p, b).expect("write");
    }

    /// The review journal files of an execution.
    pub fn journal_file(&self, d: &Value, name: &str) -> PathBuf {
        self.l
            .retained_path(d, "reservation")
            .parent()
            .expect("dir")
            .join("review")
            .join(name)
    }
}

#[test]
fn a_test_step_and_a_review_step_qualify_and_land() {
    let r = setup();
    let l = &r.l;
    let (tt, rt) = r.checkpoint();
    let q = l.qualify();
    assert_eq!(q["qualified"], false);
    assert!(
        q["failures"]
            .as_array()
            .expect("failures")
            .contains(&json!({"task_id": rt, "code": "task_pending"})),
        "{q}"
    );
    // The agent cannot claim the controller-only review itself.
    l.agent(&[
        "claim",
        &rt,
        "--request-id",
        "c1",
        "--lease-ms",
        "60000",
    ])
    .error("forbidden", 77);
    r.pass_tests(&tt);
    let n = l.agent(&["next", "--change", &l.change_id]).json();
    assert_eq!(
        n["next"],
        json!({"operation": "collector_claim", "task_id": rt}),
        "{n}"
    );
    let (dp, d) = l.claim(&rt, "review.json");
    assert_eq!(d["kind"], "review");
    assert_eq!(d["model"], MODEL);
    assert!(
        d.get("executable").is_none() && d.get("budgets").is_none(),
        "the descriptor selects no executable or budget: {d}"
    );
    let c = l.collect(&dp).json();
    assert_eq!(c["kind"], "review");
    assert_eq!(c["outcome"], "passed", "{c}");
    assert_eq!(c["failure"], Value::Null);
    assert_eq!(c["coverage"]["complete"], true);
    assert_eq!(c["coverage"]["selected"], 3, "add.sh, test.sh, CHANGELOG.md");
    assert_eq!(c["calls"], 1);
    assert_eq!(c["upload"]["retained"], true);
    assert_eq!(c["upload"]["outcome"], "passed");
    assert_eq!(c["upload"]["next"]["operation"], "collector_finalize");
    // The executable ran in a private directory, never in the snapshot,
    // and left nothing behind.
    let work = l.collector.join("review-work");
    assert!(work.is_dir());
    // Collect again: the retained transfer is re-sent, nothing is called.
    let again = l.collect(&dp).json();
    assert_eq!(again["resumed"], true);
    assert_eq!(again["upload"]["replay"], true);
    assert_eq!(again["transfer_digest"], c["transfer_digest"]);
    let q = l.qualify();
    assert_eq!(q["next"], json!({"operation": "collector_finalize"}), "{q}");
    let f = l.agent(&["finalize", "--change", &l.change_id]).json();
    let transfers = f["receipt"]["transfers"].as_array().expect("transfers");
    assert_eq!(transfers.len(), 2, "{f}");
    assert!(transfers.iter().any(|t| t["task_id"] == rt.as_str()));
    let q = l.qualify();
    assert_eq!(q["qualified"], true, "{q}");
    let states: Vec<&Value> = q["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| &t["state"])
        .collect();
    assert_eq!(states, [&json!("succeeded"), &json!("succeeded")]);
    let land = l
        .env
        .run(&["land", "--repo", "demo/basic", "--change", &l.change_id])
        .json();
    assert_eq!(land["landed"], true, "{land}");
}

#[test]
fn a_blocking_finding_is_retained_as_a_failed_review_and_never_qualifies() {
    let r = setup();
    let l = &r.l;
    r.write_add("# STAND-IN:BLOCKING\n");
    let (tt, rt) = r.checkpoint();
    r.pass_tests(&tt);
    let (dp, _) = l.claim(&rt, "review.json");
    let c = l.collect(&dp).json();
    assert_eq!(c["outcome"], "failed", "{c}");
    assert_eq!(c["failure"], "review_criteria_failed");
    let f = &c["findings"][0];
    assert_eq!(f["severity"], "blocking", "{c}");
    assert_eq!(f["path"], "add.sh");
    assert_eq!(c["upload"]["retained"], true);
    assert_eq!(c["upload"]["eligible_for_receipt"], false);
    let q = l.qualify();
    assert_eq!(q["qualified"], false);
    assert_eq!(
        q["failures"],
        json!([{"task_id": rt, "code": "review_criteria_failed"}]),
        "{q}"
    );
    assert_eq!(q["next"], json!({"operation": "checkpoint"}));
    l.agent(&["finalize", "--change", &l.change_id])
        .error("receipt_incomplete", 65);
    l.env
        .run(&["land", "--repo", "demo/basic", "--change", &l.change_id])
        .error("not_qualified", 65);
}

#[test]
fn a_review_profile_pins_the_executable_and_refuses_a_command_step_or_a_bad_variable() {
    let r = setup();
    let l = &r.l;
    // The same profile again: nothing changes.
    let again = install(l, &r.registration, &r.exe).json();
    assert_eq!(again["created"], false);
    let p = &again["review_profile"];
    let sha = {
        use sha2::Digest;
        hex(&sha2::Sha256::digest(std::fs::read(&r.exe).expect("read")))
    };
    assert_eq!(p["executable"]["script"]["sha256"], sha.as_str(), "{p}");
    assert!(
        p["executable"]["program"]["path"]
            .as_str()
            .expect("program")
            .contains("python3"),
        "the script's interpreter is pinned: {p}"
    );
    assert_eq!(p["coverage"], json!(["*.sh", "CHANGELOG.md"]));
    assert_eq!(p["budgets"]["max_calls"], 4);
    // Another executable under the same registration: profiles are immutable.
    let other = l.env.path("reviewer/other");
    std::fs::write(&other, "#!/usr/bin/python3\nprint('x')\n").expect("write");
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    install(l, &r.registration, &other).error("conflict", 65);
    // The tests registration is a command step.
    l.env
        .run(&[
            "profile",
            "install",
            "--registration",
            &l.registration,
            "--step",
            "tests",
            "--runtime",
            "review",
            "--executable",
            s(&r.exe),
            "--model",
            MODEL,
        ])
        .error("profile_invalid", 77);
    // A provider switch cannot be passed through.
    l.env
        .run(&[
            "profile",
            "install",
            "--registration",
            &r.registration,
            "--step",
            "review",
            "--runtime",
            "review",
            "--executable",
            s(&r.exe),
            "--model",
            MODEL,
            "--env",
            "ANTHROPIC_BASE_URL",
        ])
        .error("invalid_input", 65);
    // A review without its executable is a usage error.
    l.env
        .run(&[
            "profile",
            "install",
            "--registration",
            &r.registration,
            "--step",
            "review",
            "--runtime",
            "review",
        ])
        .error("usage", 64);
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
