//! Two real `agent-task serve` nodes: node A is the source (page
//! authority), node B the destination (peer, pull and status routes). A
//! collection with tombstones syncs across, resumes after the destination
//! server is killed between pulls, and both nodes answer the same queries;
//! the routes' auth, request and exclusion rules.

use crate::common::data_support::{Served, TOKEN, req};
use crate::common::sync_support::secret_file;
use crate::common::{TestEnv, run_cmd};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

const TOKEN_A: &str = "node-a-bearer-0123456789";
const PAGE: &str = "page-bearer-for-b-0123456789";

fn serve(env: &TestEnv, token: &str) -> Served {
    let mut c = Command::new(crate::common::bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_TASK_NODE_TOKEN", token)
        .args([
            "--data-dir",
            env.data_dir.to_str().expect("p"),
            "serve",
            "--bind",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    Served {
        child,
        addr: v["listening"]
            .as_str()
            .expect("l")
            .trim_start_matches("http://")
            .to_owned(),
    }
}

struct Nodes {
    a: TestEnv,
    b: TestEnv,
    sa: Served,
    ids: Vec<String>,
}

fn nodes(records: usize, tombstones: usize) -> Nodes {
    let a = TestEnv::init();
    a.run(&["data", "init", "--node-id", "node_a"]).json();
    let lines: String = (0..records)
        .map(|i| format!("{}\n", json!({"text": format!("record {i} shared words token{i}"), "external_id": format!("e{i}"), "metadata": {"i": i}})))
        .collect();
    let f = a.path("r.jsonl");
    std::fs::write(&f, lines).expect("w");
    let s = a
        .run(&[
            "data",
            "collect",
            "--collection",
            "default",
            "--collector",
            "text",
            "--jsonl",
            f.to_str().expect("p"),
        ])
        .json();
    assert_eq!(s["inserted"], records as u64);
    let ch = a.run(&["data", "changes", "--limit", "1000"]).json();
    let ids: Vec<String> = ch["changes"]
        .as_array()
        .expect("a")
        .iter()
        .map(|c| c["record_id"].as_str().expect("id").to_owned())
        .collect();
    for id in &ids[..tombstones] {
        a.run(&["data", "tombstone", id, "--reason", "gone"]).json();
    }
    let b = TestEnv::init();
    b.run(&["data", "init", "--node-id", "node_b"]).json();
    let pa = a.run(&["sync", "keygen", "--id", "did:example:a"]).json();
    let pb = b.run(&["sync", "keygen", "--id", "did:example:b"]).json();
    let tok = secret_file(&a, "page.token", PAGE);
    a.run(&[
        "sync",
        "authority",
        "add",
        "--peer",
        "b",
        "--bearer-file",
        tok.to_str().expect("p"),
        "--collection",
        "default",
        "--recipient-id",
        "did:example:b",
        "--recipient-key",
        pb["recipient"]["x25519_public_key"].as_str().expect("k"),
        "--recipient-key-id",
        pb["recipient"]["x25519_key_id"].as_str().expect("k"),
    ])
    .json();
    let sa = serve(&a, TOKEN_A);
    let btok = secret_file(&b, "page.token", PAGE);
    b.run(&[
        "sync",
        "peer",
        "add",
        "--peer",
        "a",
        "--origin",
        &format!("http://{}", sa.addr),
        "--node-id",
        "node_a",
        "--publisher-id",
        "did:example:a",
        "--publisher-key",
        pa["publisher"]["ed25519_public_key"].as_str().expect("k"),
        "--page-token-file",
        btok.to_str().expect("p"),
    ])
    .json();
    Nodes { a, b, sa, ids }
}

fn pull_body(limit: u64, max_pages: u64) -> String {
    json!({"protocol":"agent-data-sync/v1","peer_id":"a","collection_id":"default","limit":limit,"max_pages":max_pages}).to_string()
}

fn query(addr: &str, token: &str, body: &Value) -> Vec<String> {
    req(
        addr,
        "POST",
        "/v1/data/query",
        Some(token),
        Some(&body.to_string()),
    )
    .ok()["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|h| {
            format!(
                "{}:{}",
                h["record"]["id"].as_str().expect("id"),
                h.get("score").map(Value::to_string).unwrap_or_default()
            )
        })
        .collect()
}

#[test]
fn two_served_nodes_sync_resume_and_answer_the_same_queries() {
    let n = nodes(240, 15);
    let mut sb = serve(&n.b, TOKEN);
    // An interrupted pull: two pages of 50, then the destination server dies.
    let r = req(
        &sb.addr,
        "POST",
        "/v1/data/sync/pull",
        Some(TOKEN),
        Some(&pull_body(50, 2)),
    )
    .ok();
    assert_eq!(
        (
            r["pages_applied"].as_u64(),
            r["records_inserted"].as_u64(),
            r["has_more"].as_bool()
        ),
        (Some(2), Some(100), Some(true)),
        "{r}"
    );
    assert!(!r.to_string().contains("\"cursor\""), "{r}");
    let _ = sb.child.kill();
    let _ = sb.child.wait();
    drop(sb);
    let sb = serve(&n.b, TOKEN);
    let st = req(
        &sb.addr,
        "GET",
        "/v1/data/sync/status?peer_id=a&collection_id=default",
        Some(TOKEN),
        None,
    )
    .ok();
    assert_eq!(st["cursor_present"], true);
    assert_eq!(st["records_inserted"], 100);
    // Resume to the end.
    let mut total = 100;
    let mut tombs = 0;
    loop {
        let r = req(
            &sb.addr,
            "POST",
            "/v1/data/sync/pull",
            Some(TOKEN),
            Some(&pull_body(100, 1)),
        )
        .ok();
        total += r["records_inserted"].as_u64().expect("n");
        tombs += r["tombstones_applied"].as_u64().expect("n");
        if r["has_more"] == false {
            break;
        }
    }
    assert_eq!((total, tombs), (240, 15));
    for body in [
        json!({"text": "token77", "limit": 10}),
        json!({"text": "shared words", "limit": 50}),
        json!({"where": {"metadata": {"i": 42}}}),
        json!({"limit": 100}),
        json!({"collections": ["default"], "text": "record", "limit": 100}),
    ] {
        assert_eq!(
            query(&n.sa.addr, TOKEN_A, &body),
            query(&sb.addr, TOKEN, &body),
            "{body}"
        );
    }
    // Tombstoned on both; the source can stop and the destination still answers.
    n.b.run(&["data", "get", &n.ids[0]])
        .error("record_tombstoned", 66);
    n.b.run(&["data", "get", &n.ids[100]]).json();
    // A reverse pull settles without duplicating anything.
    let pub_b = n.b.run(&["sync", "identity"]).json();
    let tok = secret_file(&n.b, "rev.token", "reverse-page-bearer-01234");
    let pa = n.a.run(&["sync", "identity"]).json();
    n.b.run(&[
        "sync",
        "authority",
        "add",
        "--peer",
        "a",
        "--bearer-file",
        tok.to_str().expect("p"),
        "--collection",
        "default",
        "--recipient-id",
        "did:example:a",
        "--recipient-key",
        pa["recipient"]["x25519_public_key"].as_str().expect("k"),
    ])
    .json();
    let atok = secret_file(&n.a, "rev.token", "reverse-page-bearer-01234");
    n.a.run(&[
        "sync",
        "peer",
        "add",
        "--peer",
        "b",
        "--origin",
        &format!("http://{}", sb.addr),
        "--node-id",
        "node_b",
        "--publisher-id",
        "did:example:b",
        "--publisher-key",
        pub_b["publisher"]["ed25519_public_key"]
            .as_str()
            .expect("k"),
        "--page-token-file",
        atok.to_str().expect("p"),
    ])
    .json();
    let r =
        n.a.run(&[
            "sync",
            "pull",
            "--peer",
            "b",
            "--collection",
            "default",
            "--limit",
            "100",
            "--max-pages",
            "10",
        ])
        .json();
    assert_eq!(r["records_inserted"], 0, "{r}");
    assert_eq!(r["records_existing"], 240);
}

#[test]
fn sync_routes_auth_and_request_rules() {
    let n = nodes(3, 1);
    let a = &n.sa.addr;
    let page_body = |rcpt: &Value| {
        json!({"protocol":"agent-data-sync/v1","collection_id":"default","recipient": rcpt})
            .to_string()
    };
    let rb = n.b.run(&["sync", "identity"]).json()["recipient"].clone();
    // The page route: page bearer only.
    let ok = req(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some(&page_body(&rb)),
    )
    .ok();
    assert_eq!(ok["changes"].as_array().map(Vec::len), Some(4));
    assert_eq!(ok["origin_node_id"], "node_a");
    req(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(TOKEN_A),
        Some(&page_body(&rb)),
    )
    .error(401, "unauthorized");
    let r = req(a, "POST", "/v1/data/sync/page", None, Some(&page_body(&rb)));
    r.error(401, "unauthorized");
    assert_eq!(
        r.header("www-authenticate"),
        Some("Bearer realm=\"agent-data-node\"")
    );
    req(a, "POST", "/v1/data/sync/page", Some(PAGE), Some("[1]")).error(400, "invalid_json");
    // Strict JSON (docs/wire.md): a duplicate key is refused, not last-wins.
    let dup = format!(
        r#"{{"protocol":"agent-data-sync/v1","collection_id":"nope","collection_id":"default","recipient":{rb}}}"#
    );
    let e = req(a, "POST", "/v1/data/sync/page", Some(PAGE), Some(&dup)).error(400, "invalid_json");
    assert_eq!(e["details"]["reason"], "duplicate_key", "{e}");
    let e = req(
        a,
        "POST",
        "/v1/data/sync/pull",
        Some(TOKEN_A),
        Some(r#"{"peer_id":"b","collection_id":"default","collection_id":"x"}"#),
    )
    .error(400, "invalid_json");
    assert_eq!(e["details"]["reason"], "duplicate_key", "{e}");
    crate::common::data_support::req_ct(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some("{}"),
        "text/plain",
    )
    .error(415, "unsupported_media_type");
    let other = json!({"id":"did:example:eve","x25519_public_key": rb["x25519_public_key"],"x25519_key_id": rb["x25519_key_id"]});
    req(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some(&page_body(&other)),
    )
    .error(403, "page_scope_denied");
    let mut bad = serde_json::from_str::<Value>(&page_body(&rb)).expect("j");
    bad["limit"] = json!(101);
    req(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some(&bad.to_string()),
    )
    .error(400, "sync_limit_exceeded");
    bad["limit"] = json!(1);
    bad["cursor"] = json!("x");
    bad["expected_feed_id"] = json!("feed_00000000-0000-4000-8000-000000000000");
    req(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some(&bad.to_string()),
    )
    .error(409, "sync_feed_mismatch");
    req(a, "GET", "/v1/data/sync/page", Some(PAGE), None).error(405, "method_not_allowed");
    // The page bearer opens nothing else; the node bearer still works there.
    req(a, "GET", "/v1/data/collections", Some(PAGE), None).error(401, "unauthorized");
    req(
        a,
        "POST",
        "/v1/data/sync/pull",
        Some(PAGE),
        Some(&pull_body(1, 1)),
    )
    .error(401, "unauthorized");
    // B has no page authority: its page route is off.
    let sb = serve(&n.b, TOKEN);
    let b = &sb.addr;
    req(
        b,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some(&page_body(&rb)),
    )
    .error(503, "page_auth_not_configured");
    // Pull and status rules.
    let mut p: Value = serde_json::from_str(&pull_body(1, 1)).expect("j");
    p["cursor"] = json!("x");
    req(
        b,
        "POST",
        "/v1/data/sync/pull",
        Some(TOKEN),
        Some(&p.to_string()),
    )
    .error(400, "invalid_sync_request");
    p = json!({"protocol":"agent-data-sync/v1","peer_id":"zz","collection_id":"default"});
    req(
        b,
        "POST",
        "/v1/data/sync/pull",
        Some(TOKEN),
        Some(&p.to_string()),
    )
    .error(404, "peer_not_configured");
    p = json!({"protocol":"agent-data-sync/v2","peer_id":"a","collection_id":"default"});
    req(
        b,
        "POST",
        "/v1/data/sync/pull",
        Some(TOKEN),
        Some(&p.to_string()),
    )
    .error(400, "unsupported_sync_protocol");
    for q in [
        "peer_id=a",
        "peer_id=a&collection_id=default&x=1",
        "peer_id=a&peer_id=a&collection_id=default",
        "",
    ] {
        req(
            b,
            "GET",
            &format!("/v1/data/sync/status?{q}"),
            Some(TOKEN),
            None,
        )
        .error(400, "invalid_sync_request");
    }
    let st = req(
        b,
        "GET",
        "/v1/data/sync/status?collection_id=default&peer_id=a",
        Some(TOKEN),
        None,
    )
    .ok();
    assert_eq!(st["cursor_present"], false);
    // Manifests: sync only where configured.
    let m = req(a, "GET", "/.well-known/agent-data", None, None).ok();
    assert_eq!(m["capabilities"]["peer_sync"], true);
    assert_eq!(m["sync"]["mode"], "explicit_pull");
    assert_eq!(m["sync"]["publisher"]["id"], "did:example:a");
    assert_eq!(m["sync"]["limits"]["max_page_changes"], 100);
    assert_eq!(
        m["endpoints"]["sync_page"],
        format!("http://{a}/v1/data/sync/page")
    );
    let plain = TestEnv::init();
    plain.run(&["data", "init"]).json();
    let sp = serve(&plain, TOKEN);
    let m = req(&sp.addr, "GET", "/.well-known/agent-data", None, None).ok();
    assert_eq!(m["capabilities"]["peer_sync"], false);
    assert!(m.get("sync").is_none());
    // Removing the authority revokes its bearer at once.
    n.a.run(&["sync", "authority", "remove", "--peer", "b"])
        .json();
    req(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some(&page_body(&rb)),
    )
    .error(503, "page_auth_not_configured");
}

#[test]
fn a_cli_pull_and_the_pull_route_exclude_each_other() {
    let n = nodes(5, 0);
    let sb = serve(&n.b, TOKEN);
    let mark = n.b.path("paused");
    let mut child =
        n.b.std_cmd()
            .env("AGENT_TASK_TEST_SYNC_PAUSE_PAGE", "1")
            .env("AGENT_TASK_TEST_SYNC_PAUSE_FILE", &mark)
            .args([
                "sync",
                "pull",
                "--peer",
                "a",
                "--collection",
                "default",
                "--limit",
                "2",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
    while !mark.exists() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the pull ended before pausing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    req(
        &sb.addr,
        "POST",
        "/v1/data/sync/pull",
        Some(TOKEN),
        Some(&pull_body(2, 1)),
    )
    .error(409, "sync_in_progress");
    child.kill().expect("kill");
    child.wait().expect("wait");
    let r = req(
        &sb.addr,
        "POST",
        "/v1/data/sync/pull",
        Some(TOKEN),
        Some(&pull_body(2, 10)),
    )
    .ok();
    assert_eq!(r["records_inserted"], 3, "{r}");
    assert_eq!(r["records_existing"], 2);
    let _ = run_cmd;
}

#[test]
fn a_locally_collected_copy_with_another_envelope_is_a_conflict() {
    let n = nodes(3, 0);
    // B collects the same identity (same text, collector and external id)
    // with other metadata: the same record id, another envelope.
    let mine = n
        .b
        .run(&["data", "collect", "--collection", "default", "--collector", "text", "--input",
            r#"{"text":"record 1 shared words token1","external_id":"e1","metadata":{"i":"local"}}"#])
        .json();
    assert!(
        n.ids
            .contains(&mine["records"][0]["id"].as_str().expect("id").to_owned())
    );
    let e =
        n.b.run(&["sync", "pull", "--peer", "a", "--collection", "default"])
            .error("replica_record_conflict", 65);
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("different envelope"),
        "{e}"
    );
    // Nothing of the page stayed and the cursor did not move.
    let st =
        n.b.run(&["sync", "status", "--peer", "a", "--collection", "default"])
            .json();
    assert_eq!(st["cursor_present"], false);
    n.b.run(&["data", "get", &n.ids[0]])
        .error("record_not_found", 66);
}

/// Hostile bodies on the sync routes (issue #11, part 2): deep nesting,
/// invalid UTF-8, a raw NUL, overlong strings and garbage cursors each get
/// one typed JSON error; neither node's data directory changes and both
/// keep answering their manifests.
#[test]
fn sync_routes_refuse_hostile_bodies_and_change_nothing() {
    use crate::common::snapshot_files;
    let n = nodes(2, 0);
    let a = &n.sa.addr;
    let sb = serve(&n.b, TOKEN);
    let b = &sb.addr;
    let rb = n.b.run(&["sync", "identity"]).json()["recipient"].to_string();
    let feed = req(
        a,
        "POST",
        "/v1/data/sync/page",
        Some(PAGE),
        Some(&format!(
            r#"{{"protocol":"agent-data-sync/v1","collection_id":"default","recipient":{rb}}}"#
        )),
    )
    .ok()["feed_id"]
        .as_str()
        .expect("feed id")
        .to_owned();
    let (before_a, before_b) = (snapshot_files(&n.a.data_dir), snapshot_files(&n.b.data_dir));
    let nested = |d: usize| format!("{}1{}", "[".repeat(d), "]".repeat(d));
    let page = |extra: &str| {
        format!(
            r#"{{"protocol":"agent-data-sync/v1","collection_id":"default","recipient":{rb}{extra}}}"#
        )
    };
    let pull = |extra: &str| {
        format!(
            r#"{{"protocol":"agent-data-sync/v1","peer_id":"a","collection_id":"default"{extra}}}"#
        )
    };
    let send = |addr: &str, path: &str, bearer: &str, body: &[u8]| {
        let mut r = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        r.extend_from_slice(body);
        crate::common::data_support::raw(addr, &r)
    };
    // Invalid UTF-8: each \u{1} becomes a lone 0xff byte.
    let ff = |s: String| -> Vec<u8> { s.bytes().map(|c| if c == 1 { 0xff } else { c }).collect() };
    // (case, server, route, body, status, code)
    type Case<'a> = (&'a str, &'a str, &'a str, Vec<u8>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "page deep",
            a,
            "/v1/data/sync/page",
            page(&format!(r#","x":{}"#, nested(100))).into_bytes(),
            400,
            "invalid_json",
        ),
        (
            "pull deep",
            b,
            "/v1/data/sync/pull",
            pull(&format!(r#","x":{}"#, nested(100))).into_bytes(),
            400,
            "invalid_json",
        ),
        (
            "page utf8",
            a,
            "/v1/data/sync/page",
            ff(page("").replace("default", "def\u{1}")),
            400,
            "invalid_json",
        ),
        (
            "pull utf8",
            b,
            "/v1/data/sync/pull",
            ff(pull("").replace("\"a\"", "\"a\u{1}\"")),
            400,
            "invalid_json",
        ),
        (
            "page nul",
            a,
            "/v1/data/sync/page",
            page("").replace("default", "def\u{0}ault").into_bytes(),
            400,
            "invalid_json",
        ),
        (
            "pull nul",
            b,
            "/v1/data/sync/pull",
            pull("").replace("\"a\"", "\"a\u{0}\"").into_bytes(),
            400,
            "invalid_json",
        ),
        (
            "pull escaped nul",
            b,
            "/v1/data/sync/pull",
            pull("").replace("\"a\"", r#""a\u0000""#).into_bytes(),
            400,
            "invalid_peer_id",
        ),
        (
            "page overlong collection",
            a,
            "/v1/data/sync/page",
            page("")
                .replace("\"default\"", &format!("\"{}\"", "c".repeat(100_000)))
                .into_bytes(),
            403,
            "page_scope_denied",
        ),
        (
            "pull overlong peer",
            b,
            "/v1/data/sync/pull",
            pull("")
                .replace("\"a\"", &format!("\"{}\"", "p".repeat(100_000)))
                .into_bytes(),
            400,
            "invalid_peer_id",
        ),
        (
            "page garbage cursor",
            a,
            "/v1/data/sync/page",
            page(&format!(
                r#","cursor":"adc1.!!!!","expected_feed_id":"{feed}""#
            ))
            .into_bytes(),
            400,
            "invalid_cursor",
        ),
        (
            "page overlong cursor",
            a,
            "/v1/data/sync/page",
            page(&format!(
                r#","cursor":"{}","expected_feed_id":"{feed}""#,
                "A".repeat(100_000)
            ))
            .into_bytes(),
            400,
            "invalid_sync_cursor",
        ),
    ];
    for (name, addr, path, body, status, code) in &cases {
        let bearer = if *addr == a.as_str() { PAGE } else { TOKEN };
        let r = send(addr, path, bearer, body);
        let e = r.error(*status, code);
        assert!(
            e["message"].as_str().is_some_and(|m| !m.is_empty()),
            "{name}: {e}"
        );
        req(a, "GET", "/.well-known/agent-data", None, None).ok();
        req(b, "GET", "/.well-known/agent-data", None, None).ok();
        assert_eq!(snapshot_files(&n.a.data_dir), before_a, "{name} changed A");
        assert_eq!(snapshot_files(&n.b.data_dir), before_b, "{name} changed B");
    }
}
