//! Workspace MCP through a small JSON-RPC client (the Streamable HTTP
//! transport as the official SDK clients use it: POST with
//! `Accept: application/json, text/event-stream`, `MCP-Protocol-Version`
//! after initialize): initialize, tools/list and the agent loop through
//! tools/call, plus the protocol's error paths.

use crate::common::data_support::raw;
use crate::common::mcp_client::*;
use crate::common::task_support::{Setup, assertion};
use crate::common::workspace_http::{serve, token};
use agent_task::contract::ResultOutcome;
use serde_json::{Value, json};

#[test]
fn mcp_agent_loop_through_tools() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let srv = serve(&s);
    let mut c = Client {
        addr: &srv.addr,
        token: token(&s),
        next_id: 0,
        version: None,
    };

    // server/discover is a 2026-07-28 request: without its `_meta` it is
    // malformed (HTTP 400, -32602); with it, see tests/cli/mcp_eras.rs.
    let d = c.post(
        &json!({"jsonrpc": "2.0", "id": 99, "method": "server/discover", "params": {}}),
        &[],
    );
    assert_eq!(d.status, 400);
    assert_eq!(d.json()["error"]["code"], -32602);
    // Asked for another revision, the server counters with its own.
    let init = c.call("initialize", json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}));
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    assert_eq!(init["result"]["serverInfo"]["name"], "agent-task");
    c.version = Some("2025-11-25".into());
    let n = c.post(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &[],
    );
    assert_eq!(n.status, 202);
    assert!(n.body.is_empty());

    let list = c.call("tools/list", json!({}));
    let tools = list["result"]["tools"].as_array().expect("tools");
    let names: Vec<&str> = tools
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    let caps = c.tool("capabilities", json!({}));
    let ops: Vec<&str> = caps["operations"]
        .as_array()
        .expect("ops")
        .iter()
        .map(|o| o.as_str().expect("s"))
        .collect();
    assert_eq!(names, ops, "one tool per operation");
    for t in tools {
        assert_eq!(t["inputSchema"]["type"], "object");
        assert_eq!(t["inputSchema"]["additionalProperties"], false);
    }

    let next = c.tool("next", json!({"change_id": s.change_id}));
    assert_eq!(
        next["next"],
        json!({"operation": "claim", "task_id": tests})
    );
    let ins = c.tool("instructions", json!({"task_id": tests}));
    assert_eq!(ins["entrypoint"]["criteria"][0]["id"], "tests-pass");
    let r = c.tool(
        "reference",
        json!({"task_id": tests, "name": "testing-guide"}),
    );
    assert_eq!(r["status"], "available");
    let claim = c.tool(
        "claim",
        json!({"task_id": tests, "request_id": "m-claim", "lease_ms": 60000}),
    );
    let att = claim["attempt"]["attempt_id"]
        .as_str()
        .expect("att")
        .to_owned();
    assert_eq!(
        c.tool(
            "heartbeat",
            json!({"attempt_id": att, "fence": 1, "request_id": "m-hb"})
        )["state"],
        "leased"
    );
    let asr = assertion(&claim, "m-res", &["tests-pass"], ResultOutcome::Passed);
    assert_eq!(
        c.tool("result", json!({"assertion": asr}))["state"],
        "finished"
    );
    assert_eq!(
        c.tool("status", json!({"task_id": tests, "attempt_id": att}))["state"],
        "finished"
    );

    // A tool failure is a result with isError, not a protocol error.
    let bad = c.call("tools/call", json!({"name": "claim", "arguments": {"task_id": tests, "request_id": "m-claim", "lease_ms": 50000}}));
    assert_eq!(bad["result"]["isError"], true);
    assert_eq!(
        bad["result"]["structuredContent"]["error"],
        "idempotency_conflict"
    );
    let bad = c.call(
        "tools/call",
        json!({"name": "next", "arguments": {"change_id": s.change_id, "owner_id": "mallory"}}),
    );
    assert_eq!(bad["result"]["structuredContent"]["error"], "forbidden");
    // Protocol errors are JSON-RPC errors.
    assert_eq!(
        c.call("tools/call", json!({"name": "rm_rf", "arguments": {}}))["error"]["code"],
        -32602
    );
    assert_eq!(c.call("resources/list", json!({}))["error"]["code"], -32601);
}

#[test]
fn mcp_transport_rules() {
    let s = Setup::new();
    let srv = serve(&s);
    let tok = token(&s);
    let a = srv.addr.as_str();
    let c = Client {
        addr: a,
        token: tok.clone(),
        next_id: 0,
        version: None,
    };
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    assert_eq!(c.post(&ping, &[]).json()["result"], json!({}));
    // GET (SSE stream) and DELETE (session end) are not offered: 405 with
    // `Allow: POST`, with or without a bearer (the method is checked first).
    for method in ["GET", "DELETE", "PUT"] {
        for auth in [format!("Authorization: Bearer {tok}\r\n"), String::new()] {
            let r = raw(a, format!("{method} {MCP} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAccept: text/event-stream\r\n{auth}\r\n").as_bytes());
            assert_eq!(r.header("allow"), Some("POST"), "{method} {auth:?}");
            r.error(405, "method_not_allowed");
        }
    }
    // Foreign Origin, unsupported protocol revision, no or wrong bearer.
    c.post(&ping, &[("Origin", "http://evil.example")])
        .error(403, "forbidden");
    assert_eq!(
        c.post(&ping, &[("Origin", &format!("http://{a}"))]).status,
        200
    );
    c.post(&ping, &[("MCP-Protocol-Version", "1999-01-01")])
        .error(400, "invalid_request");
    Client {
        addr: a,
        token: "nope-nope-nope".into(),
        next_id: 0,
        version: None,
    }
    .post(&ping, &[])
    .error(401, "unauthorized");
    let noauth = raw(a, format!("POST {MCP} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}").as_bytes());
    noauth.error(401, "unauthorized");
    // Not JSON: a JSON-RPC parse error.
    let pe = raw(a, format!("POST {MCP} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nContent-Type: application/json\r\nAuthorization: Bearer {tok}\r\nContent-Length: 3\r\n\r\n{{x:").as_bytes());
    assert_eq!(pe.status, 400);
    assert_eq!(pe.json()["error"]["code"], -32700);
    // A JSON-RPC batch (2025-11-25 has none) and a non-object are invalid
    // requests, answered with a JSON-RPC error; nothing in them runs.
    let batch = json!([ping, {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}]);
    for body in [batch, json!("ping"), json!(7)] {
        let r = c.post(&body, &[]);
        assert_eq!(r.status, 400, "{body}");
        let v = r.json();
        assert_eq!(v["jsonrpc"], "2.0");
        assert_eq!(v["id"], Value::Null);
        assert_eq!(v["error"]["code"], -32600, "{body}");
    }
    // A server/discover without 2026-07-28 `_meta` (legacy params) is a
    // malformed modern request: 400 with -32602, whatever the header. A
    // legacy `initialize` still negotiates 2025-11-25; any other method
    // with the modern header and no `_meta` is refused with 400.
    let discover = json!({"jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {}});
    let d = c.post(&discover, &[("MCP-Protocol-Version", "2026-07-28")]);
    assert_eq!(d.status, 400);
    assert_eq!(d.json()["error"]["code"], -32602);
    assert_eq!(d.json()["id"], 3);
    let init = json!({"jsonrpc": "2.0", "id": 4, "method": "initialize", "params": {"protocolVersion": "2026-07-28", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let i = c.post(&init, &[("MCP-Protocol-Version", "2026-07-28")]);
    assert_eq!(i.json()["result"]["protocolVersion"], "2025-11-25");
    c.post(
        &json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}),
        &[("MCP-Protocol-Version", "2026-07-28")],
    )
    .error(400, "invalid_request");
}
