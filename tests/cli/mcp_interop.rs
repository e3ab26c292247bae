//! The official MCP SDK clients, unchanged, against `agent-task serve`:
//! the Python SDK (`tests/interop/python/agent_loop.py`) and the TypeScript
//! SDKs (`tests/interop/node/agent_loop.cjs`) each run the demo loop through
//! the SDK's streamable-HTTP client transport with the bearer header, in
//! each protocol era: the Python SDK 2.x in legacy mode (2025-11-25), in
//! its modern-only mode (pinned to 2026-07-28) and in its default auto mode
//! (which now settles on 2026-07-28); `@modelcontextprotocol/sdk` 1.x
//! (2025-11-25 only) and `@modelcontextprotocol/client` 2.x pinned to
//! 2026-07-28.
//!
//! `scripts/install-interop.sh` installs the pinned SDKs under
//! `target/interop/` and `scripts/test.sh` exports the interpreters:
//! `AGENT_TASK_INTEROP_PYTHON` (venv python) and `AGENT_TASK_INTEROP_NODE`
//! with `AGENT_TASK_INTEROP_NODE_PATH` (its node_modules). When a variable
//! is unset the test prints `SKIP: …` and returns, unless
//! `AGENT_TASK_REQUIRE_INTEROP=1`, where a missing interpreter fails.

use crate::common::collect_flow::Loop;
use crate::common::{bin, repo_root};
use serde_json::{Value, json};
use std::path::PathBuf;

/// The interpreter named by `var`, or `None` after printing a skip line
/// (a failure when interop is required).
fn interpreter(var: &str) -> Option<PathBuf> {
    match std::env::var_os(var) {
        Some(p) if !p.is_empty() => {
            let p = PathBuf::from(p);
            assert!(p.exists(), "{var} names a missing file: {}", p.display());
            Some(p)
        }
        _ => {
            assert!(
                std::env::var("AGENT_TASK_REQUIRE_INTEROP").as_deref() != Ok("1"),
                "{var} is unset but AGENT_TASK_REQUIRE_INTEROP=1 (run scripts/install-interop.sh)"
            );
            println!("SKIP: {var} is unset (scripts/install-interop.sh installs the SDK client)");
            None
        }
    }
}

/// Sets up the demo loop, serves it and writes the client's config.
fn prepare(l: &Loop, addr: &str, name: &str, extra: &Value) -> PathBuf {
    let task = l.checkpoint();
    let tok = std::fs::read_to_string(&l.token).expect("token");
    let s = |p: &std::path::Path| p.to_str().expect("utf8").to_owned();
    let cfg = json!({
        "url": format!("http://{addr}/v1/hub/workspace/mcp?repository=demo-basic&profile=default"),
        "token": tok.trim(),
        "change_id": l.change_id,
        "task_id": task,
        "descriptor": s(&l.env.path(&format!("{name}-descriptor.json"))),
        "collect": [
            s(bin()), "--data-dir", s(&l.env.data_dir), "--token-file", s(&l.token),
            "collect", "--collector-dir", s(&l.collector),
            "--endpoint", format!("http://{addr}"), "--repository", "demo-basic", "--profile", "default",
        ],
    });
    let mut cfg = cfg;
    for (k, v) in extra.as_object().expect("extra") {
        cfg[k] = v.clone();
    }
    let p = l.env.path(&format!("{name}-config.json"));
    std::fs::write(&p, cfg.to_string()).expect("config");
    p
}

/// Runs a client and returns its summary line, checking that it settled on
/// the revision `version`.
fn run_client(l: &Loop, mut c: std::process::Command, version: &str) -> Value {
    let out = c
        .env("HOME", l.env.tmp.path())
        .output()
        .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK client failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim()).expect("summary JSON");
    println!("SDK client summary: {summary}");
    assert_eq!(summary["protocol_version"], version, "{summary}");
    assert_eq!(summary["qualified"], true, "{summary}");
    assert_eq!(summary["unknown_tool_code"], -32602, "{summary}");
    assert_eq!(summary["capability"], "agentscm.agent-workflow-tasks/v1");
    // On the wire: every POST was answered 200 (202 for notifications),
    // including a newer SDK's server/discover probe (a -32601 body), and
    // the only other status is the 405 for an SDK's optional GET stream.
    for t in summary["trace"].as_array().expect("trace") {
        match (t["http"].as_str(), t["rpc"].as_str()) {
            (Some("POST"), Some(m)) if m.starts_with("notifications/") => {
                assert_eq!(t["status"], 202, "{t}")
            }
            (Some("POST"), _) => assert_eq!(t["status"], 200, "{t}"),
            (Some("GET"), _) => assert_eq!(t["status"], 405, "{t}"),
            _ => panic!("unexpected request {t}"),
        }
    }
    summary
}

/// The qualification the CLI computes must name the receipt the client saw.
fn agrees_with_cli(l: &Loop, summary: &Value) {
    let q = l.qualify();
    assert_eq!(q["qualified"], true, "{q}");
    assert_eq!(q["receipt_digest"], summary["receipt_digest"]);
}

#[test]
fn mcp_interop_python_sdk_runs_the_demo_loop() {
    let Some(py) = interpreter("AGENT_TASK_INTEROP_PYTHON") else {
        return;
    };
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let srv = crate::common::workspace_collect::serve(&l);
    let cfg = prepare(&l, &srv.addr, "py", &json!({"mode": "legacy"}));
    let mut c = std::process::Command::new(py);
    c.arg(repo_root().join("tests/interop/python/agent_loop.py"))
        .arg(&cfg);
    let summary = run_client(&l, c, "2025-11-25");
    agrees_with_cli(&l, &summary);
}

/// The Python SDK in its modern-only mode (pinned to 2026-07-28: no probe,
/// no fallback) and in its default auto mode (server/discover first), each
/// running the whole demo loop in the 2026-07-28 era.
#[test]
fn mcp_interop_python_sdk_runs_the_demo_loop_in_the_modern_era() {
    let Some(py) = interpreter("AGENT_TASK_INTEROP_PYTHON") else {
        return;
    };
    for mode in ["2026-07-28", "auto"] {
        let l = Loop::basic("bwrap");
        l.set_add("+");
        let srv = crate::common::workspace_collect::serve(&l);
        let cfg = prepare(
            &l,
            &srv.addr,
            "py-modern",
            &json!({"mode": mode, "expect": "2026-07-28"}),
        );
        let mut c = std::process::Command::new(py.clone());
        c.arg(repo_root().join("tests/interop/python/agent_loop.py"))
            .arg(&cfg);
        let summary = run_client(&l, c, "2026-07-28");
        // No initialize on the wire: every request carried the revision.
        for t in summary["trace"].as_array().expect("trace") {
            assert_ne!(t["rpc"], "initialize", "{mode}: {t}");
            assert_eq!(t["version_header"], "2026-07-28", "{mode}: {t}");
        }
        agrees_with_cli(&l, &summary);
    }
}

#[test]
fn mcp_interop_typescript_sdk_runs_the_demo_loop() {
    let Some(node) = interpreter("AGENT_TASK_INTEROP_NODE") else {
        return;
    };
    let Some(modules) = interpreter("AGENT_TASK_INTEROP_NODE_PATH") else {
        return;
    };
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let srv = crate::common::workspace_collect::serve(&l);
    let cfg = prepare(&l, &srv.addr, "node", &json!({}));
    let mut c = std::process::Command::new(node);
    c.env("NODE_PATH", modules)
        .arg(repo_root().join("tests/interop/node/agent_loop.cjs"))
        .arg(&cfg);
    let summary = run_client(&l, c, "2025-11-25");
    agrees_with_cli(&l, &summary);
}

/// `@modelcontextprotocol/client` 2.x pinned to 2026-07-28 runs the demo
/// loop in the modern era.
#[test]
fn mcp_interop_typescript_client_2_runs_the_demo_loop_in_the_modern_era() {
    let Some(node) = interpreter("AGENT_TASK_INTEROP_NODE") else {
        return;
    };
    let Some(modules) = interpreter("AGENT_TASK_INTEROP_NODE_PATH") else {
        return;
    };
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let srv = crate::common::workspace_collect::serve(&l);
    let cfg = prepare(
        &l,
        &srv.addr,
        "node2",
        &json!({"sdk": "client2", "mode": "2026-07-28", "expect": "2026-07-28"}),
    );
    let mut c = std::process::Command::new(node);
    c.env("NODE_PATH", modules)
        .arg(repo_root().join("tests/interop/node/agent_loop.cjs"))
        .arg(&cfg);
    let summary = run_client(&l, c, "2026-07-28");
    for t in summary["trace"].as_array().expect("trace") {
        assert_ne!(t["rpc"], "initialize", "{t}");
    }
    agrees_with_cli(&l, &summary);
}

#[test]
fn mcp_interop_python_sdk_claims_heartbeats_and_submits() {
    let Some(py) = interpreter("AGENT_TASK_INTEROP_PYTHON") else {
        return;
    };
    let s = crate::common::task_support::Setup::new();
    let (tests, _) = s.checkpoint();
    let srv = crate::common::workspace_http::serve(&s);
    let cfg = json!({
        "url": format!("http://{}/v1/hub/workspace/mcp?repository=demo-basic&profile=default", srv.addr),
        "token": crate::common::workspace_http::token(&s),
        "change_id": s.change_id,
        "task_id": tests,
        "criteria": ["tests-pass"],
        "reference": "testing-guide",
        "owner_id": "alice",
        "agent_id": "claude-1",
        "mode": "legacy",
    });
    let p = s.env.path("claim-config.json");
    std::fs::write(&p, cfg.to_string()).expect("config");
    let out = std::process::Command::new(py)
        .env("HOME", s.env.tmp.path())
        .arg(repo_root().join("tests/interop/python/agent_claim.py"))
        .arg(&p)
        .output()
        .expect("run the SDK client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the SDK client failed:\n--- stdout\n{stdout}\n--- stderr\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary: Value = serde_json::from_str(stdout.trim()).expect("summary JSON");
    assert_eq!(summary["protocol_version"], "2025-11-25");
    assert_eq!(summary["tool_error"], "idempotency_conflict");
    assert_eq!(summary["state"], "finished");
    // The CLI sees the attempt the SDK client finished.
    let st = s
        .agent(&[
            "status",
            "--task",
            &tests,
            "--attempt",
            summary["attempt_id"].as_str().expect("attempt"),
        ])
        .json();
    assert_eq!(st["state"], "finished", "{st}");
}

/// An agent's memory session through the Python SDK against the data
/// node's MCP endpoint, in each era: three notes stored, found again by a
/// word, read back, the feed followed, a path outside the roots refused.
#[test]
fn mcp_interop_python_sdk_uses_the_data_endpoint_as_memory() {
    let Some(py) = interpreter("AGENT_TASK_INTEROP_PYTHON") else {
        return;
    };
    for (mode, version) in [
        ("2026-07-28", "2026-07-28"),
        ("auto", "2026-07-28"),
        ("legacy", "2025-11-25"),
    ] {
        let env = crate::common::TestEnv::new();
        env.run(&["data", "init"]).json();
        let srv =
            crate::common::data_support::serve(&env, Some(crate::common::data_support::TOKEN));
        let cfg = json!({
            "url": format!("http://{}/v1/node/mcp", srv.addr),
            "token": crate::common::data_support::TOKEN,
            "mode": mode,
            "expect": version,
        });
        let p = env.tmp.path().join("memory-config.json");
        std::fs::write(&p, cfg.to_string()).expect("config");
        let out = std::process::Command::new(&py)
            .env("HOME", env.tmp.path())
            .arg(repo_root().join("tests/interop/python/data_memory.py"))
            .arg(&p)
            .output()
            .expect("run the SDK client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{mode}: the SDK client failed:\n--- stdout\n{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: Value = serde_json::from_str(stdout.trim()).expect("summary JSON");
        println!("data memory session ({mode}): {summary}");
        assert_eq!(summary["protocol_version"], version);
        assert_eq!(summary["stored"], 3);
        assert_eq!(summary["found_by_word"], 2);
        // The CLI finds what the agent stored.
        let q = env.run(&["data", "query", "--text", "osprey"]).json();
        assert_eq!(q["records"].as_array().expect("records").len(), 2, "{q}");
    }
}

/// The same memory session through both TypeScript SDKs against the data
/// node's MCP endpoint: `@modelcontextprotocol/sdk` 1.x (2025-11-25) and
/// `@modelcontextprotocol/client` 2.x pinned to 2026-07-28.
#[test]
fn mcp_interop_typescript_sdks_use_the_data_endpoint_as_memory() {
    let Some(node) = interpreter("AGENT_TASK_INTEROP_NODE") else {
        return;
    };
    let Some(modules) = interpreter("AGENT_TASK_INTEROP_NODE_PATH") else {
        return;
    };
    for (sdk, mode, version) in [
        ("sdk1", "", "2025-11-25"),
        ("client2", "2026-07-28", "2026-07-28"),
    ] {
        let env = crate::common::TestEnv::new();
        env.run(&["data", "init"]).json();
        let srv =
            crate::common::data_support::serve(&env, Some(crate::common::data_support::TOKEN));
        let cfg = json!({
            "url": format!("http://{}/v1/node/mcp", srv.addr),
            "token": crate::common::data_support::TOKEN,
            "sdk": sdk,
            "mode": mode,
            "expect": version,
        });
        let p = env.tmp.path().join("memory-config.json");
        std::fs::write(&p, cfg.to_string()).expect("config");
        let out = std::process::Command::new(&node)
            .env("NODE_PATH", &modules)
            .arg(repo_root().join("tests/interop/node/data_memory.cjs"))
            .arg(&p)
            .output()
            .expect("run the SDK client");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{sdk}: the SDK client failed:\n--- stdout\n{stdout}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: Value = serde_json::from_str(stdout.trim()).expect("summary JSON");
        assert_eq!(summary["protocol_version"], version, "{sdk}");
        assert_eq!(summary["stored"], 3);
        assert_eq!(summary["found_by_word"], 2);
        let q = env.run(&["data", "query", "--text", "osprey"]).json();
        assert_eq!(q["records"].as_array().expect("records").len(), 2, "{q}");
    }
}
