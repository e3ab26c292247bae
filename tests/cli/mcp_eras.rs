//! Both MCP eras on the workspace endpoint, through real sockets: a
//! request with 2026-07-28 `_meta` is served statelessly (server/discover,
//! tools/list, tools/call with `resultType` and the server's `_meta`), with
//! that revision's transport rules (version header equal to `_meta`,
//! `Mcp-Method` always, `Mcp-Name` on tools/call, -32022 with the supported
//! list, HTTP 404 for a method it lacks, no initialize or ping), while
//! `initialize` still opens a 2025-11-25 conversation on the same endpoint.
//! Every refused message changes nothing.

use crate::common::data_support::Resp;
use crate::common::mcp_client::Client;
use crate::common::task_support::Setup;
use crate::common::workspace_http::{serve, token};
use serde_json::{Value, json};

const V: &str = "2026-07-28";

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": V,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "0"},
    })
}

/// A 2026-07-28 request body (`params._meta` added to `params`).
fn modern(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = meta();
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// The headers a conforming 2026-07-28 client sends with `body`.
fn headers_of(body: &Value) -> Vec<(&'static str, String)> {
    let mut h = vec![
        ("MCP-Protocol-Version", V.to_owned()),
        (
            "Mcp-Method",
            body["method"].as_str().unwrap_or("").to_owned(),
        ),
    ];
    if body["method"] == "tools/call" {
        h.push((
            "Mcp-Name",
            body["params"]["name"].as_str().unwrap_or("").to_owned(),
        ));
    }
    h
}

fn send(c: &Client<'_>, body: &Value, headers: &[(&'static str, String)]) -> Resp {
    let h: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    c.post(body, &h)
}

/// A conforming modern request, answered 200 with a `complete` result
/// that names the server.
fn ok(c: &Client<'_>, body: &Value) -> Value {
    let r = send(c, body, &headers_of(body));
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert!(r.header("mcp-session-id").is_none());
    let v = r.json();
    assert_eq!(v["id"], body["id"]);
    let res = &v["result"];
    assert_eq!(res["resultType"], "complete", "{v}");
    assert_eq!(
        res["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "agent-task"
    );
    res.clone()
}

/// A refused message: HTTP `status`, JSON-RPC `code`, the request's id.
fn refused(r: &Resp, status: u16, code: i64, id: &Value) -> Value {
    assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.body));
    let v = r.json();
    assert_eq!(v["jsonrpc"], "2.0");
    assert_eq!(v["error"]["code"], code, "{v}");
    assert_eq!(&v["id"], id, "{v}");
    v
}

#[test]
fn mcp_modern_era_is_served_statelessly_with_its_transport_rules() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let srv = serve(&s);
    let c = Client {
        addr: &srv.addr,
        token: token(&s),
        next_id: 0,
        version: None,
    };

    // server/discover: both revisions, the tools capability, cacheable.
    let d = ok(&c, &modern(1, "server/discover", json!({})));
    assert_eq!(d["supportedVersions"], json!(["2026-07-28", "2025-11-25"]));
    assert!(d["capabilities"]["tools"].is_object());
    assert!(d["instructions"].is_string());
    assert!(d["ttlMs"].as_u64().is_some());
    assert_eq!(d["cacheScope"], "private");

    // tools/list: the same tools as 2025-11-25, cacheable.
    let l = ok(&c, &modern(2, "tools/list", json!({})));
    assert!(l["ttlMs"].as_u64().is_some());
    let names: Vec<String> = l["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name").to_owned())
        .collect();
    assert!(names.iter().any(|n| n == "claim"), "{names:?}");

    // tools/call: a `complete` result with structuredContent and its text.
    let call = |id: u64, name: &str, args: Value| {
        modern(id, "tools/call", json!({"name": name, "arguments": args}))
    };
    let caps = ok(&c, &call(3, "capabilities", json!({})));
    assert_eq!(caps["isError"], false);
    let ops: Vec<String> = caps["structuredContent"]["operations"]
        .as_array()
        .expect("ops")
        .iter()
        .map(|o| o.as_str().expect("s").to_owned())
        .collect();
    assert_eq!(ops, names);
    let text: Value =
        serde_json::from_str(caps["content"][0]["text"].as_str().expect("text")).expect("json");
    assert_eq!(text, caps["structuredContent"]);
    let next = ok(&c, &call(4, "next", json!({"change_id": s.change_id})));
    assert_eq!(
        next["structuredContent"]["next"],
        json!({"operation": "claim", "task_id": tests})
    );
    // A tool failure is still a result with isError.
    let bad = ok(
        &c,
        &call(
            5,
            "next",
            json!({"change_id": s.change_id, "owner_id": "x"}),
        ),
    );
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["structuredContent"]["error"], "forbidden");
    // An Mcp-Name outside the plain-ASCII set may come Base64-encoded.
    let body = call(6, "capabilities", json!({}));
    let r = send(
        &c,
        &body,
        &[
            ("MCP-Protocol-Version", V.into()),
            ("Mcp-Method", "tools/call".into()),
            ("Mcp-Name", "=?base64?Y2FwYWJpbGl0aWVz?=".into()),
        ],
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));

    // The claim, refused for each header fault in turn, never runs.
    let claim = call(
        7,
        "claim",
        json!({"task_id": tests, "request_id": "era-claim"}),
    );
    let id = json!(7);
    let good = headers_of(&claim);
    let without = |name: &str| -> Vec<(&'static str, String)> {
        good.iter().filter(|(k, _)| *k != name).cloned().collect()
    };
    let with = |name: &'static str, v: &str| -> Vec<(&'static str, String)> {
        let mut h = without(name);
        h.push((name, v.to_owned()));
        h
    };
    for (why, h) in [
        (
            "version header differs from _meta",
            with("MCP-Protocol-Version", "2025-11-25"),
        ),
        ("no version header", without("MCP-Protocol-Version")),
        ("no Mcp-Method", without("Mcp-Method")),
        ("Mcp-Method differs", with("Mcp-Method", "tools/list")),
        ("no Mcp-Name", without("Mcp-Name")),
        ("Mcp-Name differs", with("Mcp-Name", "next")),
        ("Mcp-Name bad base64", with("Mcp-Name", "=?base64?***?=")),
    ] {
        let v = refused(&send(&c, &claim, &h), 400, -32020, &id);
        assert!(v["error"]["message"].is_string(), "{why}");
    }
    // An unsupported version in `_meta` (with a header that matches it):
    // -32022 with the supported list.
    let mut old = claim.clone();
    old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
    let v = refused(
        &send(&c, &old, &with("MCP-Protocol-Version", "1900-01-01")),
        400,
        -32022,
        &id,
    );
    assert_eq!(
        v["error"]["data"],
        json!({"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"})
    );
    // `_meta` without client capabilities, or with a non-string version.
    let mut nocaps = claim.clone();
    nocaps["params"]["_meta"]
        .as_object_mut()
        .expect("meta")
        .remove("io.modelcontextprotocol/clientCapabilities");
    refused(&send(&c, &nocaps, &good), 400, -32602, &id);
    let mut badver = claim.clone();
    badver["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(2026);
    refused(&send(&c, &badver, &good), 400, -32602, &id);
    // The claim never ran: `next` still offers it.
    let next = ok(&c, &call(8, "next", json!({"change_id": s.change_id})));
    assert_eq!(
        next["structuredContent"]["next"],
        json!({"operation": "claim", "task_id": tests})
    );

    // No handshake and no ping in 2026-07-28; any method it lacks is 404.
    for (i, m) in ["initialize", "ping", "resources/list", "nope/nope"]
        .iter()
        .enumerate()
    {
        let id = 20 + i as u64;
        let body = modern(id, m, json!({}));
        refused(
            &send(&c, &body, &headers_of(&body)),
            404,
            -32601,
            &json!(id),
        );
    }
    // A modern unknown tool or non-object arguments: -32602 (HTTP 200).
    let body = call(30, "no_such_tool", json!({}));
    refused(
        &send(&c, &body, &headers_of(&body)),
        200,
        -32602,
        &json!(30),
    );
    let mut body = call(31, "next", json!({}));
    body["params"]["arguments"] = json!([1]);
    refused(
        &send(&c, &body, &headers_of(&body)),
        200,
        -32602,
        &json!(31),
    );
    // A batch of modern requests: refused whole, nothing runs.
    let batch = json!([claim, modern(32, "tools/list", json!({}))]);
    refused(&send(&c, &batch, &good), 400, -32600, &Value::Null);
    // Oversized params: the body bound (1 MiB) is a typed 413.
    let mut big = call(33, "capabilities", json!({}));
    big["params"]["_meta"]["pad"] = json!("x".repeat(1024 * 1024));
    send(&c, &big, &headers_of(&big)).error(413, "request_too_large");
    // A modern notification is accepted and answered with nothing.
    let n = send(
        &c,
        &json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"_meta": meta()}}),
        &[],
    );
    assert_eq!(n.status, 202);
    assert!(n.body.is_empty());
    // Still nothing ran.
    let next = ok(&c, &call(34, "next", json!({"change_id": s.change_id})));
    assert_eq!(
        next["structuredContent"]["next"],
        json!({"operation": "claim", "task_id": tests})
    );
    // And the claim, sent as the revision says, runs.
    let claimed = ok(&c, &claim);
    assert_eq!(claimed["isError"], false, "{claimed}");
    assert!(claimed["structuredContent"]["attempt"]["attempt_id"].is_string());
}

#[test]
fn mcp_legacy_era_still_negotiates_on_the_same_endpoint() {
    let s = Setup::new();
    let _ = s.checkpoint();
    let srv = serve(&s);
    let mut c = Client {
        addr: &srv.addr,
        token: token(&s),
        next_id: 0,
        version: None,
    };
    // A legacy `initialize` (no `_meta`) opens 2025-11-25, whose results
    // carry no 2026-07-28 fields.
    let init = c.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    c.version = Some("2025-11-25".into());
    assert_eq!(c.call("ping", json!({}))["result"], json!({}));
    let list = c.call("tools/list", json!({}));
    assert!(list["result"].get("resultType").is_none());
    assert!(list["result"].get("ttlMs").is_none());
    let caps = c.call(
        "tools/call",
        json!({"name": "capabilities", "arguments": {}}),
    );
    assert_eq!(caps["result"]["isError"], false);
    assert!(caps["result"].get("resultType").is_none());
    // A legacy method unknown to the server: -32601 with HTTP 200.
    assert_eq!(c.call("resources/list", json!({}))["error"]["code"], -32601);
    // Interleaved on the same endpoint, a modern request is still served
    // statelessly (the era is per request).
    let body = modern(50, "tools/list", json!({}));
    let h = headers_of(&body);
    let h: Vec<(&str, &str)> = h.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let no_version = Client {
        addr: c.addr,
        token: c.token.clone(),
        next_id: 0,
        version: None,
    };
    let r = no_version.post(&body, &h);
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["result"]["resultType"], "complete");
    // The legacy client's header with modern `_meta` is a header mismatch.
    let r = c.post(&body, &[("Mcp-Method", "tools/list")]);
    refused(&r, 400, -32020, &json!(50));
}
