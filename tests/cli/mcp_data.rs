//! The data node's MCP endpoint (`/v1/node/mcp`, node bearer) through real
//! sockets: an agent stores notes and finds them again by a word, reads,
//! follows the feed and tombstones, in both MCP eras; every tool answers
//! what the HTTP data route answers for the same request; hostile calls
//! (paths outside the roots, private-range URLs, cursors of another
//! collection, ids of another shape, unknown arguments) come back typed
//! and change nothing, the manifest answering throughout.

use crate::common::TestEnv;
use crate::common::data_support::{Resp, TOKEN, get, post, raw, req, serve};
use serde_json::{Value, json};

const MCP: &str = "/v1/node/mcp";
const V: &str = "2026-07-28";

fn message(addr: &str, bearer: Option<&str>, body: &Value, headers: &[(&str, &str)]) -> Resp {
    let body = body.to_string();
    let mut r = format!(
        "POST {MCP} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(b) = bearer {
        r.push_str(&format!("Authorization: Bearer {b}\r\n"));
    }
    for (k, v) in headers {
        r.push_str(&format!("{k}: {v}\r\n"));
    }
    r.push_str("\r\n");
    r.push_str(&body);
    raw(addr, r.as_bytes())
}

/// A 2026-07-28 client of the data endpoint.
struct Agent<'a> {
    addr: &'a str,
    id: u64,
}

impl Agent<'_> {
    fn request(&mut self, method: &str, mut params: Value) -> Value {
        self.id += 1;
        params["_meta"] = json!({
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let body = json!({"jsonrpc": "2.0", "id": self.id, "method": method, "params": params});
        let name = params["name"].as_str().unwrap_or("").to_owned();
        let mut h = vec![("MCP-Protocol-Version", V), ("Mcp-Method", method)];
        if method == "tools/call" {
            h.push(("Mcp-Name", name.as_str()));
        }
        let r = message(self.addr, Some(TOKEN), &body, &h);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        let v = r.json();
        assert_eq!(v["id"], self.id);
        assert_eq!(v["result"]["resultType"], "complete", "{v}");
        v["result"].clone()
    }

    /// A tool call's result (`isError` and `structuredContent`, checked
    /// against its text copy).
    fn call(&mut self, tool: &str, args: Value) -> (bool, Value) {
        let r = self.request("tools/call", json!({"name": tool, "arguments": args}));
        let text: Value =
            serde_json::from_str(r["content"][0]["text"].as_str().expect("text")).expect("json");
        assert_eq!(text, r["structuredContent"]);
        (
            r["isError"].as_bool().expect("isError"),
            r["structuredContent"].clone(),
        )
    }

    fn ok(&mut self, tool: &str, args: Value) -> Value {
        let (err, v) = self.call(tool, args);
        assert!(!err, "{tool}: {v}");
        v
    }

    /// A typed tool error: its code.
    fn fails(&mut self, tool: &str, args: Value) -> String {
        let (err, v) = self.call(tool, args);
        assert!(err, "{tool} should fail: {v}");
        v["error"].as_str().expect("code").to_owned()
    }
}

fn feed(addr: &str) -> Value {
    get(addr, "/v1/data/changes?limit=1000").ok()
}

fn env_with_root() -> (TestEnv, std::path::PathBuf) {
    let env = TestEnv::new();
    let root = env.tmp.path().join("notes");
    std::fs::create_dir_all(&root).expect("mkdir");
    std::fs::write(root.join("plan.md"), "# plan\nship the kestrel release\n").expect("write");
    std::fs::write(env.tmp.path().join("secret.txt"), "outside the root").expect("write");
    env.run(&["data", "init", "--file-root", root.to_str().expect("p")])
        .json();
    (env, root)
}

#[test]
fn mcp_data_endpoint_is_an_agents_memory() {
    let (env, root) = env_with_root();
    let s = serve(&env, Some(TOKEN));
    let a = s.addr.as_str();
    let mut agent = Agent { addr: a, id: 0 };

    let d = agent.request("server/discover", json!({}));
    assert_eq!(
        d["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "agent-task-data"
    );
    let tools = agent.request("tools/list", json!({}));
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "changes",
            "collect_file",
            "collect_http",
            "collect_text",
            "collections",
            "query",
            "read_record",
            "tombstone"
        ]
    );

    // Three notes, stored with stable keys; a repeat stores nothing new.
    let notes = [
        (
            "n1",
            "the flaky test is test_kestrel_timeout; raise its budget",
        ),
        ("n2", "release train leaves on Thursday"),
        ("n3", "kestrel builds need the vendored openssl"),
    ];
    let mut ids = Vec::new();
    for (key, text) in notes {
        let r = agent.ok(
            "collect_text",
            json!({"collection_id": "default", "text": text, "key": key, "metadata": {"topic": "memory"}}),
        );
        assert_eq!(r["inserted"], 1, "{r}");
        ids.push(r["records"][0]["id"].as_str().expect("id").to_owned());
    }
    let again = agent.ok(
        "collect_text",
        json!({"collection_id": "default", "text": notes[0].1, "key": "n1", "metadata": {"topic": "memory"}}),
    );
    assert_eq!(again["inserted"], 0);
    assert_eq!(again["existing"], 1);

    // Found again by a word; the answer is the HTTP route's answer.
    let q = agent.ok("query", json!({"text": "kestrel", "limit": 10}));
    let mut found: Vec<&str> = q["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["record"]["id"].as_str().expect("id"))
        .collect();
    found.sort_unstable();
    let mut want = vec![ids[0].as_str(), ids[2].as_str()];
    want.sort_unstable();
    assert_eq!(found, want, "{q}");
    let http = post(
        a,
        "/v1/data/query",
        &json!({"text": "kestrel", "limit": 10}),
    )
    .ok();
    assert_eq!(q, http);
    let w = agent.ok("query", json!({"where": {"metadata": {"topic": "memory"}}}));
    assert_eq!(w["records"].as_array().expect("r").len(), 3, "{w}");

    // Read one record; the same as GET /v1/data/records/{id}.
    let rec = agent.ok("read_record", json!({"record_id": ids[1]}));
    assert_eq!(rec["content"]["data"], notes[1].1);
    assert_eq!(rec, get(a, &format!("/v1/data/records/{}", ids[1])).ok());

    // A file beneath the root.
    let f = agent.ok(
        "collect_file",
        json!({"collection_id": "default", "path": root.join("plan.md")}),
    );
    assert_eq!(f["inserted"], 1, "{f}");

    // The feed, paged by its cursor, as over HTTP.
    let first = agent.ok("changes", json!({"limit": 2}));
    assert_eq!(first, get(a, "/v1/data/changes?limit=2").ok());
    let cursor = first["cursor"].as_str().expect("cursor").to_owned();
    let rest = agent.ok("changes", json!({"cursor": cursor}));
    assert_eq!(rest["changes"].as_array().expect("c").len(), 2, "{rest}");

    // Tombstone one note: the feed says so.
    let t = agent.ok("tombstone", json!({"record_id": ids[1], "reason": "stale"}));
    assert!(t.is_object(), "{t}");
    let after = feed(a);
    assert_eq!(after["changes"].as_array().expect("c").len(), 5);

    // The legacy era serves the same tools after `initialize`.
    let init = message(
        a,
        Some(TOKEN),
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}),
        &[],
    )
    .ok();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["result"]["serverInfo"]["name"], "agent-task-data");
    let r = message(
        a,
        Some(TOKEN),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "query", "arguments": {"text": "thursday"}}}),
        &[("MCP-Protocol-Version", "2025-11-25")],
    )
    .ok();
    assert_eq!(r["result"]["isError"], false);
    assert!(r["result"].get("resultType").is_none());
}

#[test]
fn mcp_data_endpoint_refuses_hostile_calls_and_changes_nothing() {
    let (env, root) = env_with_root();
    let s = serve(&env, Some(TOKEN));
    let a = s.addr.as_str();
    let mut agent = Agent { addr: a, id: 0 };
    agent.ok(
        "collect_text",
        json!({"collection_id": "default", "text": "a note"}),
    );
    env.run(&["data", "collection", "create", "--id", "other"])
        .json();
    let before = feed(a);
    let manifest = || {
        assert_eq!(
            req(a, "GET", "/.well-known/agent-data", None, None).ok()["protocol"],
            "agent-data/v1"
        )
    };

    // The head: bearer, Origin, method.
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    message(a, None, &list, &[]).error(401, "unauthorized");
    message(a, Some("wrong-token"), &list, &[]).error(401, "unauthorized");
    message(a, Some(TOKEN), &list, &[("Origin", "http://evil.example")]).error(403, "forbidden");
    for m in ["GET", "DELETE"] {
        let r = raw(
            a,
            format!("{m} {MCP} HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n").as_bytes(),
        );
        assert_eq!(r.header("allow"), Some("POST"));
        r.error(405, "method_not_allowed");
    }
    manifest();

    // Paths outside the roots (absolute, `..`, a file next to the root).
    let outside = env.tmp.path().join("secret.txt");
    for p in [
        outside.to_str().expect("p").to_owned(),
        format!("{}/../secret.txt", root.display()),
        "/etc/passwd".to_owned(),
    ] {
        assert_eq!(
            agent.fails(
                "collect_file",
                json!({"collection_id": "default", "path": p})
            ),
            "invalid_file"
        );
    }
    // Private-range and loopback URLs, credentials, other schemes.
    for (u, code) in [
        (
            format!("http://{a}/v1/data/manifest"),
            "http_private_network_blocked",
        ),
        (
            "http://10.0.0.1/".to_owned(),
            "http_private_network_blocked",
        ),
        ("http://[::1]/".to_owned(), "http_private_network_blocked"),
        (
            "http://localhost/".to_owned(),
            "http_private_network_blocked",
        ),
        (
            "http://u:p@example.com/".to_owned(),
            "invalid_url_credentials",
        ),
        ("file:///etc/passwd".to_owned(), "invalid_url_scheme"),
    ] {
        assert_eq!(
            agent.fails(
                "collect_http",
                json!({"collection_id": "default", "url": u})
            ),
            code,
            "{u}"
        );
    }
    manifest();
    // A cursor of another collection's feed.
    let other = agent.ok("changes", json!({"collection_id": "other"}));
    let c = other["cursor"].as_str().expect("cursor").to_owned();
    assert_eq!(
        agent.fails("changes", json!({"collection_id": "default", "cursor": c})),
        "invalid_cursor"
    );
    assert_eq!(
        agent.fails("changes", json!({"cursor": "adc1.nope"})),
        "invalid_cursor"
    );
    // Ids of another shape: the HTTP route's code.
    for id in ["nope", "rec_", "../x", ""] {
        let code = agent.fails("read_record", json!({"record_id": id}));
        if !id.is_empty() && !id.contains('/') {
            let http = get(a, &format!("/v1/data/records/{id}"));
            assert_eq!(http.json()["error"], code.as_str(), "{id}");
        }
        assert_eq!(
            agent.fails("tombstone", json!({"record_id": id})),
            code,
            "{id}"
        );
    }
    // Ill-typed or unknown arguments, bad limits, an unknown collection.
    for (tool, args, code) in [
        (
            "collect_text",
            json!({"collection_id": "default", "text": "x", "nope": 1}),
            "invalid_input",
        ),
        (
            "collect_text",
            json!({"collection_id": "default", "text": ""}),
            "invalid_input",
        ),
        (
            "collect_text",
            json!({"collection_id": "nope", "text": "x"}),
            "collection_not_found",
        ),
        ("changes", json!({"limit": 0}), "invalid_query"),
        ("changes", json!({"limit": "5"}), "invalid_query"),
        ("changes", json!({"limit": 5000}), "limit_exceeded"),
        ("read_record", json!({"record_id": 5}), "invalid_input"),
        (
            "tombstone",
            json!({"record_id": "rec_x", "reason": 5}),
            "invalid_request",
        ),
        ("query", json!({"limit": -1}), "invalid_number"),
        ("query", json!({"where": [1]}), "invalid_json"),
    ] {
        assert_eq!(agent.fails(tool, args.clone()), code, "{tool} {args}");
        if tool == "query" {
            // The HTTP route's code for the same request.
            let http = post(a, "/v1/data/query", &args);
            assert_eq!(http.json()["error"], code, "{args}");
        }
    }
    manifest();
    // Nothing of it reached the node.
    assert_eq!(feed(a), before);
}

#[test]
fn mcp_data_endpoint_is_closed_without_a_node_bearer() {
    let env = TestEnv::new();
    env.run(&["data", "init"]).json();
    let s = serve(&env, None);
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    message(&s.addr, Some(TOKEN), &list, &[]).error(503, "data_auth_not_configured");
}
