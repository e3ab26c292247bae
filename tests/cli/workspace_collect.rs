//! The demo's whole agent loop against `agent-task serve`: discovery,
//! collector claim, local collection uploaded over HTTP (and an identical
//! retry), finalization and qualification — once through the workspace
//! HTTP endpoint and once through MCP tools.

use crate::common::collect_flow::Loop;
use crate::common::data_support::{raw, req};
use crate::common::mcp_client::Client;
use crate::common::workspace_collect::*;
use serde_json::json;

#[test]
fn workspace_collect_demo_loop_over_http() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let task = l.checkpoint();
    let srv = serve(&l);
    let tok = token(&l);
    let a = srv.addr.as_str();
    let caps = op(a, &tok, json!({"operation": "capabilities"}));
    for o in [
        "collector_claim",
        "collector_descriptor",
        "collector_finalize",
        "qualification",
    ] {
        assert!(
            caps["operations"]
                .as_array()
                .expect("ops")
                .contains(&json!(o)),
            "{o}"
        );
    }
    let q = op(
        a,
        &tok,
        json!({"operation": "qualification", "change_id": l.change_id}),
    );
    assert_eq!(
        q["next"],
        json!({"operation": "collector_claim", "task_id": task})
    );
    let claim = op(
        a,
        &tok,
        json!({"operation": "collector_claim", "task_id": task, "request_id": "h-claim"}),
    );
    let desc = claim["descriptor"].clone();
    let att = claim["attempt"]["attempt_id"]
        .as_str()
        .expect("att")
        .to_owned();
    let again = op(
        a,
        &tok,
        json!({"operation": "collector_descriptor", "attempt_id": att}),
    );
    assert_eq!(again["descriptor"], desc);
    assert_eq!(again["descriptor_digest"], claim["descriptor_digest"]);

    let c = collect_http(&l, a, &desc, false);
    assert_eq!(c["outcome"], "passed", "{c}");
    let r = collect_http(&l, a, &desc, true);
    assert!(r.is_object(), "identical retry answered: {r}");

    let q = op(
        a,
        &tok,
        json!({"operation": "qualification", "change_id": l.change_id}),
    );
    assert_eq!(q["next"], json!({"operation": "collector_finalize"}));
    let f = op(
        a,
        &tok,
        json!({"operation": "collector_finalize", "change_id": l.change_id}),
    );
    let receipt = f["receipt_digest"].clone();
    let q = op(
        a,
        &tok,
        json!({"operation": "qualification", "change_id": l.change_id}),
    );
    assert_eq!(q["qualified"], true, "{q}");
    assert_eq!(q["receipt_digest"], receipt);
    assert_eq!(q, l.qualify(), "HTTP and CLI qualification agree");

    // Upload route errors: no bearer, wrong type, oversized.
    let up = format!("{OPS}/collector-upload");
    req(a, "POST", &up, None, Some("x")).error(401, "unauthorized");
    crate::common::data_support::req_ct(a, "POST", &up, Some(&tok), Some("{}"), "application/json")
        .error(415, "unsupported_media_type");
    let head = format!(
        "POST {up} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/octet-stream\r\nContent-Length: {}\r\n\r\n",
        17 * 1024 * 1024
    );
    raw(a, head.as_bytes()).error(413, "request_too_large");
    crate::common::data_support::req_ct(
        a,
        "POST",
        &up,
        Some(&tok),
        Some("garbage"),
        "application/octet-stream",
    )
    .error(400, "transfer_invalid");
}

#[test]
fn workspace_collect_demo_loop_over_mcp() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let task = l.checkpoint();
    let srv = serve(&l);
    let mut c = Client {
        addr: &srv.addr,
        token: token(&l),
        next_id: 0,
        version: None,
    };
    let init = c.call("initialize", json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    c.version = Some("2025-11-25".into());
    let tools = c.call("tools/list", json!({}));
    let names: Vec<&str> = tools["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("n"))
        .collect();
    assert!(names.contains(&"qualification") && names.contains(&"collector_claim"));
    let q = c.tool("qualification", json!({"change_id": l.change_id}));
    assert_eq!(
        q["next"],
        json!({"operation": "collector_claim", "task_id": task})
    );
    let claim = c.tool(
        "collector_claim",
        json!({"task_id": task, "request_id": "m-claim"}),
    );
    let out = collect_http(&l, &srv.addr, &claim["descriptor"], false);
    assert_eq!(out["outcome"], "passed", "{out}");
    c.tool("collector_finalize", json!({"change_id": l.change_id}));
    let q = c.tool("qualification", json!({"change_id": l.change_id}));
    assert_eq!(q["qualified"], true, "{q}");
}
