//! The agent flow through the real binary: change open → checkpoint → next
//! → instructions → reference → claim → heartbeat → result → status →
//! recovery, on the fixture repository with the fixture workflow.

use crate::common::task_support::{Setup, assertion, attempt_id};
use agent_task::contract::{ResultOutcome, TrustClass};

#[test]
fn task_end_to_end_agent_flow() {
    let s = Setup::new();
    // Reads before any mutation never create the journal.
    let caps = s.agent(&["capabilities"]).json();
    assert_eq!(caps["capability"], "agentscm.agent-workflow-tasks/v1");
    assert_eq!(caps["supported_schema_versions"], serde_json::json!([1]));
    let n = s.agent(&["next", "--change", &s.change_id]).json();
    assert_eq!(n["next"]["operation"], "checkpoint");
    let (tests, notes) = s.checkpoint();
    let req = s.agent(&["requirements", "--change", &s.change_id]).json();
    assert_eq!(req["workflow"]["name"], "basic");
    let n = s.agent(&["next", "--workspace", s.ws()]).json();
    assert_eq!(
        n["next"],
        serde_json::json!({"operation": "claim", "task_id": tests})
    );
    let ins = s.agent(&["instructions", &tests]).json();
    assert_eq!(ins["status"], "entrypoint");
    let ep = &ins["entrypoint"];
    assert_eq!(ep["criteria"][0]["id"], "tests-pass");
    assert_eq!(ep["progression"]["operation"], "claim");
    let expected = ep["references"][0]["expected_sha256"]
        .as_str()
        .expect("sha")
        .to_owned();
    let r = s
        .agent(&[
            "reference",
            &tests,
            "testing-guide",
            "--expected-sha256",
            &expected,
        ])
        .json();
    assert_eq!(r["status"], "available");
    assert!(
        r["content"]
            .as_str()
            .expect("content")
            .contains("sh test.sh")
    );
    assert!(!s.journal_exists(), "reads must not create the journal");

    // Claim, heartbeat, status.
    let claim = s
        .agent(&[
            "claim",
            &tests,
            "--request-id",
            "claim-1",
            "--lease-ms",
            "60000",
        ])
        .json();
    assert!(s.journal_exists());
    assert_eq!(claim["attempt"]["fence"], 1);
    assert_eq!(claim["attempt"]["lease_ms"], 60000);
    let att = attempt_id(&claim);
    // An identical retry returns the retained outcome; changed bytes conflict.
    assert_eq!(
        s.agent(&[
            "claim",
            &tests,
            "--request-id",
            "claim-1",
            "--lease-ms",
            "60000"
        ])
        .json(),
        claim
    );
    s.agent(&[
        "claim",
        &tests,
        "--request-id",
        "claim-1",
        "--lease-ms",
        "50000",
    ])
    .error("idempotency_conflict", 65);
    s.agent(&["claim", &tests, "--request-id", "claim-2"])
        .error("task_not_claimable", 65);
    let hb = s
        .agent(&[
            "heartbeat",
            "--attempt",
            &att,
            "--fence",
            "1",
            "--request-id",
            "hb-1",
            "--lease-ms",
            "30000",
        ])
        .json();
    assert_eq!(hb["state"], "leased");
    s.agent(&[
        "heartbeat",
        "--attempt",
        &att,
        "--fence",
        "1",
        "--request-id",
        "claim-1",
    ])
    .error("idempotency_conflict", 65);
    let st = s
        .agent(&["status", "--task", &tests, "--attempt", &att])
        .json();
    assert_eq!(st["state"], "leased");
    assert_eq!(st["currently_applicable"], true);
    assert_eq!(st["retained_outcome"], serde_json::Value::Null);

    // Result: an agent assertion is retained as non-passing.
    let a = assertion(&claim, "result-1", &["tests-pass"], ResultOutcome::Passed);
    let res = s.submit(&a).json();
    assert_eq!(res["state"], "finished");
    assert_eq!(res["passing"], false);
    assert_eq!(res["completes_dependency"], false);
    assert_eq!(
        s.submit(&a).json(),
        res,
        "identical retry returns the retained outcome"
    );
    let st = s
        .agent(&["status", "--task", &tests, "--attempt", &att])
        .json();
    assert_eq!(st["state"], "finished");
    assert_eq!(st["currently_applicable"], false);
    assert_eq!(st["retained_outcome"]["trust_class"], "agent_assertion");
    let rec = s
        .agent(&[
            "recovery",
            "--task",
            &tests,
            "--attempt",
            &att,
            "--request-id",
            "result-1",
        ])
        .json();
    assert_eq!(rec["disposition"], "confirmed");
    assert_eq!(rec["confirmed_effects"], serde_json::json!(["result"]));
    let rec = s
        .agent(&[
            "recovery",
            "--task",
            &tests,
            "--attempt",
            &att,
            "--request-id",
            "never-sent",
        ])
        .json();
    assert_eq!(rec["disposition"], "conclusive_rejection");
    assert_eq!(rec["permitted"], serde_json::json!(["inspect", "stop"]));

    // The optional observation step with a signed registered observation.
    let c2 = s
        .agent(&[
            "claim",
            &notes,
            "--request-id",
            "claim-n",
            "--executor",
            s.registration["registration_id"].as_str().expect("reg"),
        ])
        .json();
    let mut obs = assertion(&c2, "result-n", &["notes-written"], ResultOutcome::Passed);
    obs.trust_class = TrustClass::RegisteredExecutorObservation;
    obs.executor = Some(s.executor_ref());
    s.sign(&mut obs);
    let res = s.submit(&obs).json();
    assert_eq!(res["trust_class"], "registered_executor_observation");
    assert_eq!(res["passing"], false);
    assert_eq!(res["completes_dependency"], true);
    let n = s.agent(&["next", "--change", &s.change_id]).json();
    assert_eq!(n["next"]["operation"], "none");
}

#[test]
fn task_schema_mismatch_is_explicit() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    for out in [
        s.agent(&["instructions", &tests, "--schema-version", "2"])
            .json(),
        s.agent(&[
            "reference",
            &tests,
            "testing-guide",
            "--schema-version",
            "2",
        ])
        .json(),
    ] {
        assert_eq!(out["status"], "schema_mismatch");
        assert_eq!(out["server_schema_versions"], serde_json::json!([1]));
        assert_eq!(out["supported_schema_versions"], serde_json::json!([2]));
        assert!(out["action"].is_string());
    }
}

#[test]
fn task_reference_outcomes_are_distinct() {
    let wf = serde_json::json!({
        "schema": "agent-task.workflow/v1", "name": "refs",
        "steps": [
            {"id": "tests", "action_class": "command", "required": true,
             "criteria": [{"id": "c", "required": true, "text": "t"}],
             "references": [{"name": "big", "path": "big.txt"}, {"name": "gone", "path": "docs/none.md"},
                            {"name": "guide", "path": "docs/TESTING.md"}],
             "recipe": {"argv": ["sh", "test.sh"], "timeout_ms": 1000, "network": false}},
            {"id": "notes", "action_class": "observation", "required": false,
             "criteria": [{"id": "n", "required": true, "text": "t"}]}
        ]
    });
    let tmp = tempfile::tempdir().expect("tmp");
    let f = tmp.path().join("wf.json");
    std::fs::write(&f, serde_json::to_vec(&wf).expect("json")).expect("write");
    let s = Setup::with_workflow(&f);
    std::fs::write(s.workspace.join("big.txt"), "x".repeat(200 * 1024)).expect("big");
    let (tests, _) = s.checkpoint();
    assert_eq!(
        s.agent(&["reference", &tests, "big"]).json()["status"],
        "limit"
    );
    assert_eq!(
        s.agent(&["reference", &tests, "gone"]).json()["status"],
        "missing"
    );
    assert_eq!(
        s.agent(&[
            "reference",
            &tests,
            "guide",
            "--expected-sha256",
            &"0".repeat(64)
        ])
        .json()["status"],
        "uncertain"
    );
    assert_eq!(
        s.agent(&["reference", &tests, "guide"]).json()["status"],
        "available"
    );
    s.agent(&["reference", &tests, "nope"])
        .error("not_found", 66);
    // Another owner is denied.
    let bob = s.env.path("bob.token");
    s.env
        .run(&[
            "token",
            "issue",
            "--owner",
            "bob",
            "--agent",
            "x",
            "--out",
            bob.to_str().expect("utf8"),
        ])
        .json();
    let mut c = s.env.cmd();
    c.arg("--token-file")
        .arg(&bob)
        .args(["reference", &tests, "guide"]);
    assert_eq!(crate::common::run_cmd(&mut c).json()["status"], "denied");
    assert!(!s.journal_exists());
}

#[test]
fn task_token_is_required_and_revocable() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    s.env
        .run(&["claim", &tests, "--request-id", "r"])
        .error("unauthorized", 77);
    let md = std::fs::metadata(&s.token).expect("token");
    assert_eq!(
        std::os::unix::fs::PermissionsExt::mode(&md.permissions()) & 0o777,
        0o600
    );
    let text = std::fs::read_to_string(&s.token).expect("token");
    let authority = std::fs::read(s.env.data_dir.join("authority.sqlite")).expect("db");
    assert!(
        !authority
            .windows(text.trim().len())
            .any(|w| w == text.trim().as_bytes()),
        "token stored in clear"
    );
    let r = s
        .env
        .run(&["token", "revoke", "--owner", "alice", "--agent", "claude-1"])
        .json();
    assert_eq!(r["grant_generation"], 2);
    s.agent(&["claim", &tests, "--request-id", "r"])
        .error("unauthorized", 77);
}

#[test]
fn task_keygen_keeps_the_private_key_private_and_enroll_checks_keys() {
    let s = Setup::new();
    let key = std::fs::read_to_string(s.collector.join("signing-key.ed25519")).expect("key");
    let again = s.env.run(&[
        "keygen",
        "--collector-dir",
        s.collector.to_str().expect("utf8"),
    ]);
    assert!(
        !again.stdout.contains(key.trim()),
        "the private key must never be printed"
    );
    assert_eq!(again.json()["created"], false);
    let mode = |p: &std::path::Path| {
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(p).expect("meta").permissions())
            & 0o777
    };
    assert_eq!(mode(&s.collector), 0o700);
    assert_eq!(mode(&s.collector.join("signing-key.ed25519")), 0o600);
    // Small-order and non-hex keys are refused; nothing is enrolled.
    let mut ident = "01".to_owned();
    ident.push_str(&"00".repeat(31));
    for bad in [ident.as_str(), "zz", &"00".repeat(32)] {
        s.env
            .run(&[
                "enroll",
                "--repo",
                "demo/basic",
                "--profile",
                "default",
                "--step",
                "notes",
                "--executor",
                "x",
                "--public-key",
                bad,
            ])
            .error("invalid_input", 65);
    }
    // Assertion-free steps only: an unknown step is refused.
    let pk = s.registration["public_key"].as_str().expect("pk");
    s.env
        .run(&[
            "enroll",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--step",
            "nope",
            "--executor",
            "x",
            "--public-key",
            pk,
        ])
        .error("not_found", 66);
    // Re-enrollment is a new epoch.
    let re = s
        .env
        .run(&[
            "enroll",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--step",
            "notes",
            "--executor",
            "laptop",
            "--public-key",
            pk,
        ])
        .json();
    assert_eq!(re["epoch"], 2);
    assert!(
        re["policy_epoch"].as_u64().expect("epoch")
            > s.registration["policy_epoch"].as_u64().expect("epoch")
    );
}

#[test]
fn task_checkpoint_records_links_modes_and_ignores() {
    let s = Setup::new();
    std::os::unix::fs::symlink("/etc/passwd", s.workspace.join("link")).expect("symlink");
    std::fs::create_dir_all(s.workspace.join("build")).expect("mkdir");
    std::fs::write(s.workspace.join("build/out.bin"), "ignored").expect("w");
    std::fs::write(s.workspace.join("x.log"), "ignored").expect("w");
    // Older than the racy-clean margin when the checkpoint begins, so the
    // rescan below may trust every stat (a file changed just before a
    // checkpoint is read again by the next scan).
    std::thread::sleep(std::time::Duration::from_millis(300));
    let cp = s.agent(&["checkpoint", "--workspace", s.ws()]).json();
    assert_eq!(cp["version"], 1);
    assert_eq!(
        cp["files"], 7,
        "6 fixture files + the link; ignored files left out: {cp}"
    );
    let again = s
        .agent(&["checkpoint", "--workspace", s.ws(), "--new-subject"])
        .json();
    assert_eq!(again["version"], 2);
    assert_eq!(
        again["hashed"], 0,
        "an unchanged rescan reads no file bytes"
    );
    assert_eq!(again["revision"], cp["revision"]);
    assert_ne!(again["context_digest"], cp["context_digest"]);
    assert_ne!(
        again["tasks"][0]["task_id"], cp["tasks"][0]["task_id"],
        "a new subject has fresh task ids"
    );
}
