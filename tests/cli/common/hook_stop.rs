//! Stop hook payloads, runs and their pass/block verdicts. Moved from
//! `hook_stop.rs`, whose tests and others share it.

use crate::common::collect_flow::Loop;
use crate::common::{Output, repo_root, run_cmd};
use serde_json::{Value, json};
use std::path::Path;

pub fn payload(agent: &str, active: bool, cwd: &Path) -> Vec<u8> {
    let mut v: Value =
        serde_json::from_slice(&fixture(&format!("{agent}-stop.json"))).expect("json");
    v["stop_hook_active"] = json!(active);
    v["cwd"] = json!(cwd.to_str().expect("utf8"));
    let val = validator(&format!("{agent}-stop-input.schema.json"));
    assert!(val.is_valid(&v), "{agent} payload fails its schema: {v}");
    serde_json::to_vec(&v).expect("json")
}

/// Runs the hook for `agent` ("claude" | "codex") with extra args.
pub fn hook(l: &Loop, agent: &str, stdin: &[u8], extra: &[&str]) -> Output {
    let sub = if agent == "claude" {
        "task-stop"
    } else {
        "task-codex-stop"
    };
    let mut c = l.env.cmd();
    c.arg("--token-file")
        .arg(&l.token)
        .args([
            sub,
            &l.change_id,
            "--workspace",
            l.workspace.to_str().expect("utf8"),
        ])
        .args(extra)
        .write_stdin(stdin.to_vec());
    run_cmd(&mut c)
}

pub fn blocked(agent: &str, o: &Output) -> Value {
    let v = out(agent, o);
    assert_eq!(v["decision"], "block", "{v}");
    let reason = v["reason"].as_str().expect("reason");
    let details: Value = serde_json::from_str(reason.split_once("Details: ").expect("details").1)
        .expect("details json");
    assert!(
        details["next_action"]
            .as_str()
            .is_some_and(|s| !s.is_empty())
    );
    details
}

pub fn passed(agent: &str, o: &Output) {
    let v = out(agent, o);
    assert!(v.get("decision").is_none(), "{v}");
}

pub fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(repo_root().join("fixtures/hooks").join(name)).expect("fixture")
}

pub fn validator(name: &str) -> jsonschema::Validator {
    let s: Value = serde_json::from_slice(&fixture(name)).expect("schema json");
    jsonschema::validator_for(&s).expect("schema")
}

/// The hook's stdout, checked against the agent's output schema.
pub fn out(agent: &str, o: &Output) -> Value {
    assert_eq!(o.code, 0, "{o:?}");
    let v: Value = serde_json::from_str(o.stdout.trim()).expect("stdout JSON");
    let val = validator(&format!("{agent}-stop-output.schema.json"));
    assert!(val.is_valid(&v), "{agent} output fails its schema: {v}");
    v
}
