//! The review controller's real Claude Code transport, through the
//! library's public API (the `collect` wiring is a later part): against the
//! stand-in reviewer (`fixtures/review/stand-in-claude.py`, pinned like any
//! executable) and, when npm can install it, against the real `claude` CLI
//! with no provider credentials.

use agent_task::collector::review::journal::FileJournal;
use agent_task::collector::review::plan::MemorySnapshot;
use agent_task::collector::review::types::{
    Basis, CallStatus, ProfileParts, Provider, ReviewBudgets, ReviewCriterion, ReviewFailure,
    ReviewOutcome, ReviewProfile, ReviewRecord, ReviewRequest, ReviewStep, ReviewSubject, Severity,
};
use agent_task::collector::review::{
    ClaudeCodeTransport, Review, pin_executable, run, validate_replay,
};
use agent_task::collector::state::StateKey;
use agent_task::collector::transfer::RegistrationBinding;
use agent_task::wire::digest::Sha256Hex;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

const STAND_IN: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/fixtures/review/stand-in-claude.py"
);

struct Ctx {
    dir: tempfile::TempDir,
    exe: PathBuf,
    profile: ReviewProfile,
    request: ReviewRequest,
}

fn budgets(wall_ms: u64) -> ReviewBudgets {
    ReviewBudgets {
        max_calls: 4,
        max_source_bytes_per_call: 64 * 1024,
        max_output_bytes_per_call: 64 * 1024,
        max_total_wall_ms: wall_ms,
    }
}

fn profile_for(exe: &Path, budgets: ReviewBudgets) -> ReviewProfile {
    let search = std::env::var_os("PATH");
    ReviewProfile::new(ProfileParts {
        repository: "demo/review".into(),
        profile: "default".into(),
        step_id: "review".into(),
        registration: RegistrationBinding {
            registration_id: "reg_0123456789abcdef0123456789abcdef".into(),
            executor_id: "laptop-review".into(),
            epoch: 1,
            key_id: "kid_0123456789abcdef0123456789abcdef".into(),
        },
        requirement_digest: Sha256Hex::digest(b"requirement"),
        criteria: vec![
            ReviewCriterion {
                id: "no-blockers".into(),
                required: true,
                text: "Nothing must block landing.".into(),
            },
            ReviewCriterion {
                id: "clarity".into(),
                required: false,
                text: "The code is clear.".into(),
            },
        ],
        step: ReviewStep {
            coverage: vec!["src/**".into()],
            budgets,
        },
        basis: Basis::ClaudeCodeCli,
        executable: pin_executable(exe, search.as_deref()).expect("pin"),
        provider: Provider::Anthropic,
        model: "claude-sonnet-4-6".into(),
        env: vec!["ANTHROPIC_API_KEY".into()],
    })
    .expect("profile")
}

fn request_for(p: &ReviewProfile) -> ReviewRequest {
    ReviewRequest::new(
        ReviewSubject {
            repository: "demo/review".into(),
            task_id: "task_0123456789abcdef0123456789abcdef".into(),
            task_digest: Sha256Hex::digest(b"task"),
            attempt_id: "att_0123456789abcdef0123456789abcdef".into(),
            attempt_digest: Sha256Hex::digest(b"attempt"),
            execution_operation_id: "exec_0123456789abcdef0123456789abcdef".into(),
            fence: 1,
            revision: Sha256Hex::digest(b"revision"),
            manifest_sha256: Sha256Hex::digest(b"manifest"),
        },
        p,
    )
    .expect("request")
}

/// A private copy of the stand-in (so a test may change its bytes), pinned.
fn stand_in(wall_ms: u64) -> Ctx {
    let dir = tempfile::tempdir().expect("tmp");
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).expect("mkdir");
    let exe = bin.join("claude");
    std::fs::copy(STAND_IN, &exe).expect("copy");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let profile = profile_for(&exe, budgets(wall_ms));
    let request = request_for(&profile);
    Ctx {
        dir,
        exe,
        profile,
        request,
    }
}

fn snapshot(extra: &str) -> MemorySnapshot {
    MemorySnapshot::new(vec![
        ("README.md".into(), b"not covered\n".to_vec()),
        (
            "src/lib.rs".into(),
            b"pub fn add(a: u32, b: u32) -> u32 {\n    a + b\n}\n".to_vec(),
        ),
        (
            "src/util.rs".into(),
            format!("pub fn id(x: u32) -> u32 {{\n    x\n}}\n{extra}").into_bytes(),
        ),
    ])
}

fn review(c: &Ctx, s: &MemorySnapshot, creds: Vec<(String, String)>) -> ReviewRecord {
    let work = c.dir.path().join("work");
    let mut t = ClaudeCodeTransport::new(&c.profile, &work, creds).expect("transport");
    let key = StateKey::derive(&[5u8; 32]).expect("key");
    let mut j = FileJournal::open(&c.dir.path().join("journal"), "exec", key).expect("journal");
    let rec = run(
        &Review {
            snapshot: s,
            profile: &c.profile,
            request: &c.request,
        },
        &mut j,
        &mut t,
    )
    .expect("run");
    // Whatever the call did, its private directories are gone.
    assert_eq!(
        std::fs::read_dir(&work).expect("work").count(),
        0,
        "per-call directories removed"
    );
    validate_replay(s, &c.profile, &c.request, &rec).expect("every record replays");
    rec
}

fn envelope(rec: &ReviewRecord, i: usize) -> serde_json::Value {
    let o = rec.trace[i].outcome.as_ref().expect("outcome");
    serde_json::from_slice(&o.envelope_bytes().expect("b64")).expect("json")
}

#[test]
fn review_stand_in_passes_a_clean_revision() {
    let c = stand_in(120_000);
    assert_eq!(
        c.profile.executable.program.path,
        std::fs::canonicalize("/usr/bin/python3")
            .expect("py")
            .to_str()
            .expect("utf8")
    );
    assert!(
        c.profile
            .executable
            .script
            .as_ref()
            .is_some_and(|s| s.path.ends_with("/bin/claude"))
    );
    let rec = review(&c, &snapshot(""), vec![]);
    assert_eq!(rec.outcome, ReviewOutcome::Passed, "{rec:#?}");
    assert!(rec.coverage.complete);
    assert_eq!(rec.coverage.selected, 2);
    assert_eq!(rec.calls.len(), 1);
    let e = envelope(&rec, 0);
    assert_eq!(e["type"], "result");
    assert_eq!(
        e["session_id"],
        rec.trace[0].reservation.request.session_id.as_str()
    );
    assert_eq!(
        e["structured_output"]["reviewed"],
        serde_json::json!(["src/lib.rs", "src/util.rs"])
    );
}

#[test]
fn review_stand_in_blocking_finding_fails_with_path_and_line() {
    let c = stand_in(120_000);
    let rec = review(&c, &snapshot("// STAND-IN:BLOCKING\n"), vec![]);
    assert_eq!(
        rec.failure,
        Some(ReviewFailure::ReviewCriteriaFailed),
        "{rec:#?}"
    );
    let f = &rec.findings[0];
    assert_eq!(
        (f.path.as_deref(), f.line, f.severity),
        (Some("src/util.rs"), Some(4), Severity::Blocking)
    );
}

#[test]
fn review_stand_in_faults_are_typed_failed_records() {
    let cases = [
        (
            "// STAND-IN:MALFORMED\n",
            ReviewFailure::ReviewAnswerMalformed,
            CallStatus::Malformed,
        ),
        (
            "// STAND-IN:ERROR\n",
            ReviewFailure::ReviewErrorResult,
            CallStatus::ErrorResult,
        ),
        (
            "// STAND-IN:OVERCLAIM\n",
            ReviewFailure::ReviewAnswerMalformed,
            CallStatus::Malformed,
        ),
        (
            "// STAND-IN:HUGE\n",
            ReviewFailure::ReviewOutputExceeded,
            CallStatus::OutputExceeded,
        ),
        (
            "// STAND-IN:SWAP\n",
            ReviewFailure::ReviewExecutableMismatch,
            CallStatus::ExecutableMismatch,
        ),
    ];
    for (marker, failure, status) in cases {
        let c = stand_in(120_000);
        let rec = review(&c, &snapshot(marker), vec![]);
        assert_eq!(rec.failure, Some(failure), "{marker}: {rec:#?}");
        assert_eq!(rec.calls[0].status, status, "{marker}");
        assert_eq!(rec.outcome, ReviewOutcome::Failed);
    }
}

#[test]
fn review_stand_in_timeout_is_killed_and_recorded() {
    // A 2 s wall budget: the stand-in sleeps for an hour and is killed.
    let c = stand_in(2_000);
    let rec = review(&c, &snapshot("// STAND-IN:TIMEOUT\n"), vec![]);
    assert_eq!(
        rec.failure,
        Some(ReviewFailure::ReviewCallTimedOut),
        "{rec:#?}"
    );
    assert_eq!(rec.calls[0].status, CallStatus::TimedOut);
    assert_eq!(rec.calls[0].exit_code, None);
}

#[test]
fn review_stand_in_swapped_before_the_call_is_not_dispatched() {
    let c = stand_in(120_000);
    let mut b = std::fs::read(&c.exe).expect("read");
    b.extend_from_slice(b"\n# another reviewer\n");
    std::fs::write(&c.exe, b).expect("swap");
    let rec = review(&c, &snapshot(""), vec![]);
    assert_eq!(rec.failure, Some(ReviewFailure::ReviewExecutableMismatch));
    let o = rec.trace[0].outcome.as_ref().expect("o");
    assert!(!o.observation.dispatched);
    assert!(o.observation.executable_after.is_empty());
}

#[test]
fn review_stand_in_sees_only_private_dirs_and_the_allowed_env() {
    let c = stand_in(120_000);
    let rec = review(
        &c,
        &snapshot("// STAND-IN:REPORT\n// STAND-IN:WRITE\n"),
        vec![("ANTHROPIC_API_KEY".into(), "sk-test-not-a-key".into())],
    );
    assert_eq!(rec.outcome, ReviewOutcome::Passed, "{rec:#?}");
    let e = envelope(&rec, 0);
    let seen: serde_json::Value =
        serde_json::from_str(e["result"].as_str().expect("result")).expect("report");
    let work = c.dir.path().join("work");
    let cwd = seen["cwd"].as_str().expect("cwd");
    let home = seen["home"].as_str().expect("home");
    assert!(
        cwd.starts_with(work.to_str().expect("utf8")) && cwd.ends_with("/work"),
        "{cwd}"
    );
    assert!(home.starts_with(work.to_str().expect("utf8")), "{home}");
    let mut want = vec![
        "ANTHROPIC_API_KEY",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC",
        "CLAUDE_CONFIG_DIR",
        "DISABLE_AUTOUPDATER",
        "HOME",
        "LANG",
        "PATH",
        "TMPDIR",
    ];
    want.sort();
    assert_eq!(seen["env"], serde_json::json!(want));
    let argv: Vec<String> = serde_json::from_value(seen["argv"].clone()).expect("argv");
    for f in [
        "-p",
        "--bare",
        "--no-session-persistence",
        "--strict-mcp-config",
        "--disable-slash-commands",
    ] {
        assert!(argv.iter().any(|a| a == f), "{f} in {argv:?}");
    }
    let tools = argv.iter().position(|a| a == "--tools").expect("--tools");
    assert_eq!(argv[tools + 1], "", "no tools");
    // The write next to the executable lands in the test's own copy (the
    // operator's files are the operator's problem); the call's cwd and HOME
    // were private and are gone. The snapshot is never given to it.
    assert!(!Path::new(cwd).exists() && !Path::new(home).exists());
    // The credential's value is not in the record.
    assert!(
        !String::from_utf8(rec.bytes().expect("b"))
            .expect("utf8")
            .contains("sk-test-not-a-key")
    );
    // The plan's bytes did not change (the MemorySnapshot is immutable, and
    // every part's SHA-256 is in the reservation).
    assert!(rec.coverage.complete);
}

#[test]
fn review_transport_refuses_credentials_the_profile_does_not_pass() {
    let c = stand_in(120_000);
    let e = ClaudeCodeTransport::new(
        &c.profile,
        &c.dir.path().join("w"),
        vec![("ANTHROPIC_BASE_URL".into(), "http://x".into())],
    )
    .err()
    .expect("refused");
    assert_eq!(e.code(), agent_task::Code::InvalidInput);
}

/// The real `claude` CLI (npm `@anthropic-ai/claude-code`, pinned by
/// scripts/install-claude.sh): the pinning function pins the resolved
/// cli.js and the node that runs it, and a review with no provider
/// credentials gives a typed failed record (an error result), without
/// hanging and without any fallback.
#[test]
fn review_real_claude_without_credentials_is_a_typed_failed_record() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/install-claude.sh");
    let out = std::process::Command::new(script)
        .output()
        .expect("run install-claude.sh");
    if !out.status.success() {
        println!("SKIP: {}", String::from_utf8_lossy(&out.stderr).trim());
        return;
    }
    let bin = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim().to_owned());
    let dir = tempfile::tempdir().expect("tmp");
    let profile = profile_for(&bin, budgets(120_000));
    let exe = &profile.executable;
    let cli = exe.script.as_ref().expect("a script is pinned");
    assert!(
        cli.path.ends_with("/@anthropic-ai/claude-code/cli.js"),
        "{}",
        cli.path
    );
    assert_eq!(
        cli.sha256,
        Sha256Hex::digest(&std::fs::read(&cli.path).expect("cli.js"))
    );
    let node = std::fs::canonicalize(
        std::env::split_paths(&std::env::var_os("PATH").expect("PATH"))
            .map(|d| d.join("node"))
            .find(|p| p.is_file())
            .expect("node on PATH"),
    )
    .expect("canonical");
    assert_eq!(Path::new(&exe.program.path), node.as_path());
    assert_eq!(
        exe.program.sha256,
        Sha256Hex::digest(&std::fs::read(&node).expect("node"))
    );
    let request = request_for(&profile);
    let c = Ctx {
        dir,
        exe: bin,
        profile,
        request,
    };
    let rec = review(&c, &snapshot(""), vec![]);
    assert_eq!(rec.outcome, ReviewOutcome::Failed, "{rec:#?}");
    assert_eq!(
        rec.failure,
        Some(ReviewFailure::ReviewErrorResult),
        "{rec:#?}"
    );
    assert_eq!(rec.calls.len(), 1, "no retry, no fallback");
    assert_eq!(rec.calls[0].status, CallStatus::ErrorResult);
    let e = envelope(&rec, 0);
    assert_eq!(e["type"], "result");
    assert_eq!(e["is_error"], true);
    assert_eq!(
        e["session_id"],
        rec.trace[0].reservation.request.session_id.as_str(),
        "--session-id is honoured"
    );
    println!(
        "claude without credentials: {}",
        rec.calls[0].detail.as_deref().unwrap_or("")
    );
}
