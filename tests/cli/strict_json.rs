//! Strict JSON where this project owns the format: a duplicate key at any
//! depth, or nesting past the bound, is refused with the format's own code
//! and changes nothing. The `/v1/data/*` routes keep the reference's
//! last-value-wins parsing (its conformance runner and SDK are the
//! contract there).

use crate::common::task_support::{Setup, assertion, attempt_id};
use crate::common::{TestEnv, repo_root};
use agent_task::contract::ResultOutcome;
use serde_json::Value;

/// Inserts `"key": value,` right after the first `{` found after `anchor`.
fn dup_after(doc: &str, anchor: &str, member: &str) -> String {
    let at = doc.find(anchor).expect("anchor") + anchor.len();
    let brace = at + doc[at..].find('{').expect("brace") + 1;
    format!("{}{member},{}", &doc[..brace], &doc[brace..])
}

fn reason(e: &Value) -> &str {
    e["details"]["reason"].as_str().unwrap_or("")
}

#[test]
fn workflow_files_refuse_duplicate_keys_and_deep_nesting() {
    let s = Setup::new();
    let basic = std::fs::read_to_string(repo_root().join("fixtures/workflows/basic.json"))
        .expect("fixture");
    let before = s.env.run(&["info"]).json();
    let install = |text: &str| {
        let f = s.env.path("wf.json");
        std::fs::write(&f, text).expect("write");
        s.env.run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--file",
            f.to_str().expect("p"),
        ])
    };
    // Top level: the last `name` would otherwise win silently.
    let top = basic.replacen("{", "{\"name\": \"other\",", 1);
    let e = install(&top).error("invalid_input", 65);
    assert_eq!(reason(&e), "duplicate_key", "{e}");
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .starts_with("workflow file:")
    );
    // Deep inside a step's recipe.
    let deep = dup_after(&basic, "\"recipe\":", "\"network\": true");
    let e = install(&deep).error("invalid_input", 65);
    assert_eq!(reason(&e), "duplicate_key", "{e}");
    // Nesting past the bound, inside a field that would be unknown anyway.
    let nested = basic.replacen(
        "{",
        &format!("{{\"x\": {}1{},", "[".repeat(100), "]".repeat(100)),
        1,
    );
    let e = install(&nested).error("invalid_input", 65);
    assert_eq!(reason(&e), "too_deep", "{e}");
    // Nothing changed: same counts, same policy epoch.
    assert_eq!(s.env.run(&["info"]).json(), before);
    // The file itself still installs.
    install(&basic).json();
}

#[test]
fn workspace_and_node_configs_refuse_duplicate_keys() {
    let s = Setup::new();
    let cfg = crate::common::workspace_http::write_config(&s);
    let text = std::fs::read_to_string(&cfg).expect("cfg");
    let dup = dup_after(
        &text,
        "\"agent_task_profiles\":",
        "\"profile_id\": \"default\"",
    );
    std::fs::write(&cfg, dup).expect("write");
    let mut c = s.env.cmd();
    c.args(["serve", "--bind", "127.0.0.1:0", "--workspace-config"])
        .arg(&cfg)
        .timeout(std::time::Duration::from_secs(120));
    let e = crate::common::run_cmd(&mut c).error("config", 78);
    assert_eq!(reason(&e), "duplicate_key", "{e}");

    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let node = env.data_dir.join("data/node.json");
    let text = std::fs::read_to_string(&node).expect("node.json");
    std::fs::write(&node, text.replacen("{", "{\"version\": 1,", 1)).expect("write");
    let e = env.run(&["data", "manifest"]).error("config", 78);
    assert_eq!(reason(&e), "duplicate_key", "{e}");
}

#[test]
fn assertions_descriptors_and_pin_files_refuse_duplicate_keys() {
    let s = Setup::new();
    let (_tests, notes) = s.checkpoint();
    let claim = s
        .agent(&["claim", &notes, "--request-id", "c1", "--lease-ms", "60000"])
        .json();
    let a = assertion(&claim, "r1", &["notes-written"], ResultOutcome::Passed);
    let text = serde_json::to_string(&a).expect("json");
    let journal_files = || {
        ["journal.sqlite", "journal.sqlite-wal"]
            .map(|f| std::fs::read(s.env.data_dir.join(f)).unwrap_or_default())
    };
    let journal = journal_files();
    for doc in [
        text.replacen("{", "{\"version\":1,", 1),
        dup_after(&text, "\"agent\":", "\"owner_id\":\"alice\""),
    ] {
        let f = s.env.path("dup-result.json");
        std::fs::write(&f, doc).expect("write");
        let e = s
            .agent(&["result", "--file", f.to_str().expect("p")])
            .error("invalid_input", 65);
        assert_eq!(reason(&e), "duplicate_key", "{e}");
    }
    let status = s
        .agent(&["status", "--task", &notes, "--attempt", &attempt_id(&claim)])
        .json();
    assert_eq!(status["state"], "leased", "{status}");
    assert_eq!(status["retained_outcome"], Value::Null, "{status}");
    assert!(journal_files() == journal, "the journal changed");

    let d = s.env.path("descriptor.json");
    std::fs::write(&d, r#"{"version": 1, "version": 1}"#).expect("write");
    let e = s
        .agent(&[
            "collect",
            "--descriptor",
            d.to_str().expect("p"),
            "--collector-dir",
            s.collector.to_str().expect("p"),
        ])
        .error("invalid_input", 65);
    assert_eq!(reason(&e), "duplicate_key", "{e}");
    assert!(!s.collector.join("executions").exists());

    let pin = s.env.path("pin.json");
    std::fs::write(&pin, r#"{"runtime": "bwrap", "runtime": "oci"}"#).expect("write");
    let e = s
        .env
        .run(&[
            "profile",
            "install",
            "--registration",
            s.registration["registration_id"].as_str().expect("id"),
            "--step",
            "notes",
            "--runtime",
            "bwrap",
            "--file",
            pin.to_str().expect("p"),
        ])
        .error("invalid_input", 65);
    assert_eq!(reason(&e), "duplicate_key", "{e}");
}

/// The data routes are the reference's: duplicate keys are accepted and the
/// last one wins, on the CLI and over HTTP.
#[test]
fn data_routes_keep_last_value_wins() {
    let env = crate::common::data_core::data_env();
    let s = crate::common::data_support::serve(&env, Some(crate::common::data_support::TOKEN));
    let body = r#"{"collection_id": "nope", "collection_id": "default", "collector_id": "text",
                   "input": {"text": "first", "text": "last wins"}}"#;
    let r = crate::common::data_support::req(
        &s.addr,
        "POST",
        "/v1/data/collect",
        Some(crate::common::data_support::TOKEN),
        Some(body),
    );
    let v = r.ok();
    assert_eq!(v["records"][0]["collection_id"], "default", "{v}");
    assert_eq!(v["records"][0]["content"]["size"], "last wins".len());
    let q = crate::common::data_support::req(
        &s.addr,
        "POST",
        "/v1/data/query",
        Some(crate::common::data_support::TOKEN),
        Some(r#"{"text": "nothing", "text": "wins", "limit": 1, "limit": 5}"#),
    )
    .ok();
    assert_eq!(q["records"].as_array().expect("records").len(), 1, "{q}");
    let cli = env
        .run(&["data", "query", r#"{"text": "nothing", "text": "wins"}"#])
        .json();
    assert_eq!(cli["records"].as_array().expect("records").len(), 1);
}
