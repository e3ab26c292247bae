//! Reads and refused mutations never create a database: a refused
//! workspace `claim` (unknown task, revoked token, bad fence) leaves no
//! `journal.sqlite`, on the CLI and over HTTP; data reads leave no
//! `data.sqlite`.

use crate::common::TestEnv;
use crate::common::task_support::Setup;
use crate::common::workspace_http::{op, serve, token};
use serde_json::json;

fn journal_files(s: &Setup) -> Vec<String> {
    std::fs::read_dir(&s.env.data_dir)
        .expect("data dir")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("journal"))
        .collect()
}

#[test]
fn refused_claims_and_reads_create_no_journal() {
    let s = Setup::new();
    let (tests, _notes) = s.checkpoint();
    let unknown = format!("task_{}", "0".repeat(32));

    // CLI: an unknown task, a heartbeat of an unknown attempt, a revoked token.
    s.agent(&[
        "claim",
        &unknown,
        "--request-id",
        "c0",
        "--lease-ms",
        "60000",
    ])
    .error("not_found", 66);
    let att = format!("att_{}", "0".repeat(32));
    let hb = s.agent(&[
        "heartbeat",
        "--attempt",
        &att,
        "--fence",
        "1",
        "--request-id",
        "h0",
    ]);
    assert_ne!(hb.code, 0, "{hb}");
    let bob = s.env.path("bob.token");
    s.env
        .run(&[
            "token",
            "issue",
            "--owner",
            "bob",
            "--agent",
            "b",
            "--out",
            bob.to_str().expect("p"),
        ])
        .json();
    s.env
        .run(&["token", "revoke", "--owner", "bob", "--agent", "b"])
        .json();
    let mut c = s.env.cmd();
    c.arg("--token-file").arg(&bob).args([
        "claim",
        &tests,
        "--request-id",
        "c1",
        "--lease-ms",
        "60000",
    ]);
    crate::common::run_cmd(&mut c).error("unauthorized", 77);
    // Reads.
    s.agent(&["next", "--change", &s.change_id]).json();
    s.agent(&["status", "--task", &tests, "--attempt", &att]);
    s.agent(&["qualify", "--workspace", s.ws()]);
    assert_eq!(journal_files(&s), Vec::<String>::new());

    // HTTP: the same refusals through the workspace endpoint.
    let srv = serve(&s);
    let tok = token(&s);
    let r = op(
        &srv.addr,
        &tok,
        json!({"operation": "claim", "task_id": unknown, "request_id": "c2", "lease_ms": 60000}),
    );
    assert_eq!(r.status, 404, "{r:?}");
    let bob_tok = std::fs::read_to_string(&bob)
        .expect("bob")
        .trim()
        .to_owned();
    let r = op(
        &srv.addr,
        &bob_tok,
        json!({"operation": "claim", "task_id": tests, "request_id": "c3", "lease_ms": 60000}),
    );
    assert_eq!(r.status, 401, "{r:?}");
    let r = op(
        &srv.addr,
        &tok,
        json!({"operation": "heartbeat", "attempt_id": att, "fence": 1, "request_id": "h1"}),
    );
    assert!(r.status >= 400, "{r:?}");
    assert_eq!(journal_files(&s), Vec::<String>::new());

    // The first successful mutation creates it.
    let r = op(
        &srv.addr,
        &tok,
        json!({"operation": "claim", "task_id": tests, "request_id": "c4", "lease_ms": 60000}),
    );
    assert_eq!(r.status, 200, "{r:?}");
    assert!(journal_files(&s).contains(&"journal.sqlite".to_owned()));
}

#[test]
fn data_reads_create_no_data_database() {
    let env = TestEnv::init();
    env.run(&["data", "query", "{}"])
        .error("not_initialized", 66);
    env.run(&["data", "changes"]).error("not_initialized", 66);
    env.run(&["data", "manifest"]).error("not_initialized", 66);
    env.run(&["info"]).json();
    assert!(!env.data_dir.join("data/data.sqlite").exists());
}
