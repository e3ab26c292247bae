//! The data node over real HTTP: discovery, the auth boundary, every
//! §12.3 error code this node can produce, and the slice1 fixture flow.

use crate::common::data_core::data_env;
use crate::common::data_support::{TOKEN, get, post, raw, req, req_ct, serve};
use serde_json::{Value, json};

fn feed_len(addr: &str) -> usize {
    get(addr, "/v1/data/changes?limit=1000").ok()["changes"]
        .as_array()
        .expect("a")
        .len()
}

#[test]
fn discovery_manifests_are_public_and_absolute() {
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let a = &s.addr;
    let wk = req(a, "GET", "/.well-known/agent-data", Some("wrong"), None).ok();
    let mf = req(a, "GET", "/v1/data/manifest", None, None).ok();
    assert_eq!(wk["protocol"], "agent-data/v1");
    assert_eq!(wk["base_url"], format!("http://{a}"));
    assert_eq!(
        wk["endpoints"]["record"],
        format!("http://{a}/v1/data/records/{{id}}")
    );
    assert_eq!(
        wk["endpoints"]["tombstone"],
        format!("http://{a}/v1/data/records/{{id}}/tombstone")
    );
    assert_eq!(
        wk["limits"],
        json!({"max_body_bytes":1048576,"max_record_bytes":10485760,"max_query_limit":100,"max_change_limit":1000,"max_collect_items":100,"default_query_limit":20,"default_change_limit":100})
    );
    let strip = |mut v: Value| {
        v.as_object_mut().expect("o").remove("generated_at");
        v
    };
    assert_eq!(strip(wk.clone()), strip(mf));
    let ids: Vec<&str> = wk["collectors"]
        .as_array()
        .expect("a")
        .iter()
        .map(|c| c["collector_id"].as_str().expect("id"))
        .collect();
    assert!(ids.contains(&"text") && ids.contains(&"file"), "{ids:?}");
    let mut sorted = ids.clone();
    sorted.sort();
    assert_eq!(ids, sorted);
    let mut no_endpoints = wk.clone();
    no_endpoints.as_object_mut().expect("o").remove("endpoints");
    let text = no_endpoints.to_string();
    assert!(!text.contains("\"collections\":") && !text.contains("blob_ref"));
    // The origin follows the Host header the client used, among the names
    // the server answers to (docs/http.md, "Host allow-list").
    let port = a.rsplit_once(':').expect("port").1;
    let other = raw(a, format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n").as_bytes()).ok();
    assert_eq!(other["base_url"], format!("http://localhost:{port}"));
    assert_eq!(
        other["endpoints"]["manifest"],
        format!("http://localhost:{port}/v1/data/manifest")
    );
    // Any other name is misdirected: 421, before any route runs.
    let r = raw(a, b"GET /.well-known/agent-data HTTP/1.1\r\nHost: example.test:9\r\nConnection: close\r\n\r\n");
    let e = r.error(421, "misdirected_request");
    assert!(
        e["details"]["allowed_hosts"]
            .as_array()
            .is_some_and(|h| h.len() >= 3),
        "{e}"
    );
    // Timestamps are …mmmZ.
    let g = wk["generated_at"].as_str().expect("t");
    assert!(
        g.len() == 24 && g.ends_with('Z') && g.as_bytes()[19] == b'.',
        "{g}"
    );
}

#[test]
fn auth_boundary_comes_before_everything() {
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let a = &s.addr;
    let hex = "0123456789abcdef0123456789abcdef";
    let probes: Vec<(&str, String, Option<&str>)> = vec![
        ("GET", "/v1/data/collections".into(), None),
        ("POST", "/v1/data/collect".into(), Some("{")),
        ("POST", "/v1/data/query".into(), Some("{")),
        (
            "GET",
            format!("/v1/data/records/invalid-conformance-{hex}"),
            None,
        ),
        ("GET", "/v1/data/changes".into(), None),
        (
            "POST",
            format!("/v1/data/records/invalid-conformance-{hex}/tombstone"),
            Some("{"),
        ),
        ("POST", "/v1/data/manifest".into(), None),
        ("GET", "/v1/data/nope".into(), None),
        ("HEAD", "/v1/data/collections".into(), None),
    ];
    for (m, p, body) in &probes {
        for bearer in [
            None,
            Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
            Some(&format!(" {TOKEN}") as &str),
        ] {
            let r = req(a, m, p, bearer, *body);
            if *m == "HEAD" {
                assert_eq!(r.status, 401, "{m} {p}");
            } else {
                r.error(401, "unauthorized");
            }
            assert_eq!(
                r.header("www-authenticate"),
                Some("Bearer realm=\"agent-data-node\""),
                "{m} {p}"
            );
        }
    }
    // The scheme word is case-insensitive.
    let r = raw(a, format!("GET /v1/data/collections HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: bEaReR {TOKEN}\r\n\r\n").as_bytes());
    assert_eq!(r.status, 200);
    // Authenticated: known path + wrong method is 405, unknown path 404,
    // trailing slash 404; the well-known path answers 405 without auth.
    get(a, "/v1/data/collect").error(405, "method_not_allowed");
    get(a, "/v1/data/nope").error(404, "not_found");
    get(a, "/v1/data/collections/").error(404, "not_found");
    req(a, "POST", "/.well-known/agent-data", None, Some("{}")).error(405, "method_not_allowed");
    req(a, "GET", "/elsewhere", None, None).error(404, "not_found");
}

#[test]
fn no_token_means_503_except_the_manifests() {
    let env = data_env();
    let s = serve(&env, None);
    let a = &s.addr;
    req(a, "GET", "/v1/data/manifest", None, None).ok();
    req(a, "GET", "/.well-known/agent-data", None, None).ok();
    for (m, p) in [
        ("GET", "/v1/data/collections"),
        ("POST", "/v1/data/query"),
        ("GET", "/v1/data/changes"),
        ("POST", "/v1/data/manifest"),
    ] {
        req(a, m, p, Some(TOKEN), Some("{}")).error(503, "data_auth_not_configured");
        req(a, m, p, None, Some("{")).error(503, "data_auth_not_configured");
    }
}

#[test]
fn non_loopback_bind_without_token_is_refused() {
    let env = data_env();
    let out = env.run(&["serve", "--bind", "0.0.0.0:0"]);
    out.error("unsafe_server_bind", 78);
}

#[test]
fn every_reachable_error_code_over_http_writes_nothing() {
    let env = data_env();
    env.run(&[
        "data",
        "collection",
        "create",
        "--id",
        "pics",
        "--allowed-media-type",
        "image/png",
        "--max-record-bytes",
        "8",
    ])
    .json();
    env.run(&["data", "collection", "create", "--id", "other"])
        .json();
    let s = serve(&env, Some(TOKEN));
    let a = &s.addr;
    let base = post(a, "/v1/data/collect", &json!({"collection_id": "default", "collector_id": "text", "input": {"text": "base record"}})).ok();
    let rid = base["records"][0]["id"].as_str().expect("id").to_owned();
    let feed0 = feed_len(a);
    let collect = |input: Value| {
        post(
            a,
            "/v1/data/collect",
            &json!({"collection_id": "default", "collector_id": "text", "input": input}),
        )
    };

    // Body reading.
    req_ct(
        a,
        "POST",
        "/v1/data/query",
        Some(TOKEN),
        Some("{}"),
        "text/plain",
    )
    .error(415, "unsupported_media_type");
    let r = raw(a, format!("POST /v1/data/query HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").as_bytes());
    r.error(415, "unsupported_media_type");
    req_ct(
        a,
        "POST",
        "/v1/data/query",
        Some(TOKEN),
        Some("{}"),
        "Application/JSON; charset=utf-8",
    )
    .ok();
    let big = format!("{{\"text\":\"{}\"}}", "x".repeat(1_048_577));
    post(
        a,
        "/v1/data/query",
        &serde_json::from_str::<Value>(&big).expect("json"),
    )
    .error(413, "request_too_large");
    // Chunked body over the cap (no Content-Length): streamed check.
    let mut chunked = format!("POST /v1/data/collect HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
    let chunk = vec![b' '; 65536];
    for _ in 0..17 {
        chunked.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        chunked.extend_from_slice(&chunk);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    raw(a, &chunked).error(413, "request_too_large");
    for cl in ["abc", "-1"] {
        let r = raw(a, format!("POST /v1/data/query HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {cl}\r\n\r\n{{}}").as_bytes());
        r.error(400, "invalid_content_length");
    }
    for body in ["{", "", "[]", "null", "\"x\""] {
        let r = req(a, "POST", "/v1/data/collect", Some(TOKEN), Some(body));
        r.error(400, "invalid_json");
    }
    let r = raw(a, &[format!("POST /v1/data/query HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 3\r\n\r\n").as_bytes(), b"\"\xff\""].concat());
    r.error(400, "invalid_json");

    // Collect validation.
    post(
        a,
        "/v1/data/collect",
        &json!({"collector_id": "text", "input": {"text": "x"}}),
    )
    .error(400, "invalid_collection_id");
    post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "default", "input": {"text": "x"}}),
    )
    .error(400, "invalid_request");
    post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "default", "collector_id": "text", "input": "x"}),
    )
    .error(400, "invalid_json");
    post(a, "/v1/data/collect", &json!({"collection_id": "default", "collector_id": "text", "input": {"text": "x"}, "cursor": 5})).error(400, "invalid_request");
    post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "nope", "collector_id": "text", "input": {"text": "x"}}),
    )
    .error(404, "collection_not_found");
    post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "default", "collector_id": "nope", "input": {}}),
    )
    .error(404, "collector_not_found");
    collect(json!({"text": ""})).error(400, "invalid_input");
    collect(json!({"text": "x", "metadata": 1})).error(400, "invalid_json");
    collect(json!({"text": "x", "media_type": "nope"})).error(400, "invalid_media_type");
    collect(json!({"text": "x", "observed_at": "2026-02-30T00:00:00Z"})).error(400, "invalid_date");
    collect(json!({"text": "x", "supersedes_id": "rec_x"})).error(400, "invalid_record_id");
    collect(json!({"text": "x", "supersedes_id": format!("rec_{}", "1".repeat(64))}))
        .error(422, "superseded_record_not_found");
    post(a, "/v1/data/collect", &json!({"collection_id": "other", "collector_id": "text", "input": {"text": "x", "supersedes_id": rid}})).error(422, "superseded_record_collection_mismatch");
    post(a, "/v1/data/collect", &json!({"collection_id": "pics", "collector_id": "text", "input": {"text": "123456789", "media_type": "image/png"}})).error(413, "content_too_large");
    post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "pics", "collector_id": "text", "input": {"text": "x"}}),
    )
    .error(422, "media_type_not_allowed");
    post(a, "/v1/data/collect", &json!({"collection_id": "default", "collector_id": "file", "input": {"path": "/etc/passwd"}})).error(400, "invalid_file");
    let mut deep = json!("x");
    for _ in 0..70 {
        deep = json!({"d": deep});
    }
    collect(json!({"text": "x", "metadata": deep})).error(400, "invalid_json");

    // Query validation.
    let q = |body: Value| post(a, "/v1/data/query", &body);
    q(json!({"collections": [], "limit": 101})).error(400, "limit_exceeded");
    q(json!({"limit": 0})).error(400, "invalid_number");
    q(json!({"limit": "1"})).error(400, "invalid_number");
    q(json!({"consistency": "eventual"})).error(400, "unsupported_consistency");
    q(json!({"consistency": null})).error(400, "unsupported_consistency");
    q(json!({"collections": "default"})).error(400, "invalid_request");
    q(json!({"collections": ["bad id"]})).error(400, "invalid_collection_id");
    q(json!({"collections": ["nope"]})).error(404, "collection_not_found");
    q(json!({"where": "x"})).error(400, "invalid_json");
    q(json!({"text": ["x"]})).error(400, "invalid_request");
    let empty = q(json!({"collections": [], "consistency": "local", "limit": 1})).ok();
    assert_eq!(empty, json!({"records": [], "consistency": "local"}));

    // Changes validation.
    for l in ["0", "abc", "+5", "-1", "1.5"] {
        get(a, &format!("/v1/data/changes?limit={l}")).error(400, "invalid_query");
    }
    get(a, "/v1/data/changes?limit=1001").error(400, "limit_exceeded");
    get(a, "/v1/data/changes?collection_id=").error(400, "invalid_collection_id");
    get(a, "/v1/data/changes?collection_id=nope").error(404, "collection_not_found");
    get(
        a,
        "/v1/data/changes?cursor=not-an-agent-data-cursor&limit=1",
    )
    .error(400, "invalid_cursor");
    let filtered = get(a, "/v1/data/changes?collection_id=default&limit=1").ok();
    let cur = filtered["cursor"].as_str().expect("c");
    get(a, &format!("/v1/data/changes?cursor={cur}&limit=1")).error(400, "invalid_cursor");
    get(
        a,
        &format!("/v1/data/changes?collection_id=other&cursor={cur}"),
    )
    .error(400, "invalid_cursor");
    assert_eq!(
        get(a, "/v1/data/changes?cursor=&limit=1").ok()["changes"][0]["id"],
        "change_1"
    );

    // Reads and tombstones.
    get(a, "/v1/data/records/rec_ZZ").error(400, "invalid_record_id");
    get(a, "/v1/data/records/%zz").error(400, "invalid_path");
    get(a, &format!("/v1/data/records/rec_{}", "2".repeat(64))).error(404, "record_not_found");
    let pct: String = rid.chars().map(|c| format!("%{:02X}", c as u32)).collect();
    assert_eq!(
        get(a, &format!("/v1/data/records/{pct}")).ok()["record"]["id"],
        rid.as_str()
    );
    let tpath = format!("/v1/data/records/{rid}/tombstone");
    req(a, "POST", &tpath, Some(TOKEN), None).error(415, "unsupported_media_type");
    req(a, "POST", &tpath, Some(TOKEN), Some("")).error(400, "invalid_json");
    post(a, &tpath, &json!({"reason": 5})).error(400, "invalid_request");
    post(a, &tpath, &json!({"reason": "x".repeat(1001)})).error(400, "invalid_request");
    post(a, "/v1/data/records/rec_1/tombstone", &json!({})).error(400, "invalid_record_id");
    post(a, "/v1/data/records/%zz/tombstone", &json!({})).error(400, "invalid_path");
    post(
        a,
        &format!("/v1/data/records/rec_{}/tombstone", "3".repeat(64)),
        &json!({}),
    )
    .error(404, "record_not_found");

    // None of the above wrote anything.
    assert_eq!(feed_len(a), feed0, "a rejected request must not write");
    get(a, &format!("/v1/data/records/{rid}")).ok();
    post(a, &tpath, &json!({})).ok();
    get(a, &format!("/v1/data/records/{rid}")).error(410, "record_tombstoned");
    assert_eq!(feed_len(a), feed0 + 1);
}

/// Where a record's content lives: the CAS (over 16 KiB) or inline in
/// `data.sqlite` (small content, committed with its row).
#[derive(Clone, Copy, Debug)]
enum Store {
    Cas,
    Inline,
}

fn damaged_blobs_are_reported_not_returned(store: Store) {
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let a = &s.addr;
    let text = |name: &str| match store {
        Store::Cas => format!("{name} {}", "x".repeat(20_000)),
        Store::Inline => format!("{name} blob"),
    };
    let collect = |name: &str| {
        post(
            a,
            "/v1/data/collect",
            &json!({"collection_id": "default", "collector_id": "text", "input": {"text": text(name)}}),
        )
        .ok()
    };
    let one = collect("one");
    let two = collect("two");
    let sha = |v: &Value| {
        v["records"][0]["content"]["sha256"]
            .as_str()
            .expect("h")
            .to_owned()
    };
    let record = |v: &Value| {
        format!(
            "/v1/data/records/{}",
            v["records"][0]["id"].as_str().expect("id")
        )
    };
    let object = |h: &str| env.data_dir.join("cas/sha256").join(&h[..2]).join(&h[2..]);
    match store {
        Store::Cas => {
            std::fs::remove_file(object(&sha(&one))).expect("rm");
            std::fs::write(object(&sha(&two)), b"tampered").expect("write");
        }
        Store::Inline => {
            assert!(
                !object(&sha(&one)).exists(),
                "small content is not a CAS object"
            );
            let db = rusqlite::Connection::open(env.data_dir.join("data/data.sqlite")).expect("db");
            // Data schema 5 keys the blob by the digest's 32 bytes.
            let key = |h: String| data_encoding::HEXLOWER.decode(h.as_bytes()).expect("key");
            db.execute(
                "DELETE FROM inline_blobs WHERE sha256 = ?1",
                [key(sha(&one))],
            )
            .expect("delete");
            db.execute(
                "UPDATE inline_blobs SET bytes = X'74616d7065726564' WHERE sha256 = ?1",
                [key(sha(&two))],
            )
            .expect("update");
        }
    }
    get(a, &record(&one)).error(404, "blob_not_found");
    get(a, &record(&two)).error(500, "blob_integrity_error");
    // Re-collecting the same content repairs the blob.
    collect("one");
    collect("two");
    assert_eq!(get(a, &record(&one)).ok()["content"]["data"], text("one"));
    assert_eq!(get(a, &record(&two)).ok()["content"]["data"], text("two"));
}

#[test]
fn damaged_cas_blobs_are_reported_not_returned() {
    damaged_blobs_are_reported_not_returned(Store::Cas);
}

#[test]
fn damaged_inline_blobs_are_reported_not_returned() {
    damaged_blobs_are_reported_not_returned(Store::Inline);
}

#[test]
fn slice1_fixture_flow_over_http() {
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let a = &s.addr;
    let run = "5f0c1c9e-1111-4222-8333-444455556666";
    let input = |role: &str| {
        json!({
        "text": format!("agent data conformance sentinel {run} {role}"), "media_type": "text/plain",
        "source_uri": format!("urn:agent-data:conformance:{run}:{role}"), "external_id": format!("{run}:{role}"),
        "key": format!("conformance-{run}-{role}"), "version": "1",
        "metadata": {"agent_data_conformance": {"suite": "agent-data-conformance/v1", "run_id": run, "role": role}}})
    };
    let baseline = get(a, "/v1/data/changes?collection_id=default&limit=1000").ok();
    assert_eq!(baseline["has_more"], false);
    let base_cur = baseline["cursor"].as_str().expect("c").to_owned();
    let c1 = post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "default", "collector_id": "text", "input": input("doomed")}),
    )
    .ok();
    assert_eq!(
        (c1["inserted"].as_i64(), c1["existing"].as_i64()),
        (Some(1), Some(0))
    );
    assert!(c1.get("cursor").is_none());
    let mut again_input = input("doomed");
    again_input["metadata"]["agent_data_conformance"]["refresh_marker"] =
        json!("must_not_replace_first_envelope");
    let c2 = post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "default", "collector_id": "text", "input": again_input}),
    )
    .ok();
    assert_eq!(
        (c2["inserted"].as_i64(), c2["existing"].as_i64()),
        (Some(0), Some(1))
    );
    assert_eq!(c2["records"][0], c1["records"][0]);
    let ctl = post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "default", "collector_id": "text", "input": input("control")}),
    )
    .ok();
    let doomed = c1["records"][0]["id"].as_str().expect("id").to_owned();
    let p1 = get(
        a,
        &format!("/v1/data/changes?collection_id=default&limit=1&cursor={base_cur}"),
    )
    .ok();
    assert_eq!(
        p1,
        get(
            a,
            &format!("/v1/data/changes?collection_id=default&limit=1&cursor={base_cur}")
        )
        .ok()
    );
    assert_eq!(p1["changes"][0]["record"], c1["records"][0]);
    assert_eq!(p1["has_more"], true);
    let p2 = get(
        a,
        &format!(
            "/v1/data/changes?collection_id=default&limit=1&cursor={}",
            p1["cursor"].as_str().expect("c")
        ),
    )
    .ok();
    assert_eq!(p2["changes"][0]["record"], ctl["records"][0]);
    let p3 = get(
        a,
        &format!(
            "/v1/data/changes?collection_id=default&limit=1&cursor={}",
            p2["cursor"].as_str().expect("c")
        ),
    )
    .ok();
    assert_eq!(
        (p3["changes"].as_array().map(Vec::len), &p3["has_more"]),
        (Some(0), &json!(false))
    );
    let rd = get(a, &format!("/v1/data/records/{doomed}")).ok();
    assert_eq!(
        rd["content"]["data"],
        format!("agent data conformance sentinel {run} doomed")
    );
    let hits = post(a, "/v1/data/query", &json!({"collections": ["default"], "where": {"id": doomed}, "consistency": "local", "limit": 1})).ok();
    assert_eq!(hits["records"][0]["record"], c1["records"][0]);
    let t1 = post(
        a,
        &format!("/v1/data/records/{doomed}/tombstone"),
        &json!({"reason": format!("agent-data conformance {run}")}),
    )
    .ok();
    let t2 = post(
        a,
        &format!("/v1/data/records/{doomed}/tombstone"),
        &json!({"reason": "a later reason must not rewrite the first"}),
    )
    .ok();
    assert_eq!(t1, t2);
    let ev = get(
        a,
        &format!(
            "/v1/data/changes?collection_id=default&limit=1&cursor={}",
            p2["cursor"].as_str().expect("c")
        ),
    )
    .ok();
    assert_eq!(ev["changes"][0]["tombstone"], t1["tombstone"]);
    let last = get(
        a,
        &format!(
            "/v1/data/changes?collection_id=default&limit=1&cursor={}",
            ev["cursor"].as_str().expect("c")
        ),
    )
    .ok();
    assert_eq!(last["changes"], json!([]));
    assert_eq!(last["has_more"], false);
}

#[test]
fn conformance_runner_slice1_passes_against_this_node() {
    let env = data_env();
    let node_id = env.run(&["data", "manifest"]).json()["node_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let s = serve(&env, Some(TOKEN));
    for (profile, extra) in [
        ("public", vec![]),
        ("read", vec!["--token-env", "NODE_TOKEN"]),
        (
            "slice1",
            vec![
                "--token-env",
                "NODE_TOKEN",
                "--scratch-collection",
                "default",
                "--expected-node-id",
                node_id.as_str(),
                "--allow-mutations",
            ],
        ),
    ] {
        let origin = format!("http://{}", s.addr);
        let mut args = vec![
            "data",
            "doctor",
            origin.as_str(),
            "--profile",
            profile,
            "--format",
            "json",
        ];
        args.extend(extra.iter().copied());
        let out = crate::common::run_cmd(env.bare_cmd().env("NODE_TOKEN", TOKEN).args(&args));
        let report = out.json();
        assert_eq!(report["verdict"], "pass", "{profile}: {report}");
        assert_eq!(report["summary"]["failed"], 0);
        assert_eq!(report["summary"]["inconclusive"], 0);
    }
}

#[test]
fn small_content_written_to_the_cas_before_inline_storage_still_reads() {
    // A node made before content was stored inline holds small content as
    // CAS objects only; reads fall back to the CAS.
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let a = &s.addr;
    let v = post(
        a,
        "/v1/data/collect",
        &json!({"collection_id": "default", "collector_id": "text", "input": {"text": "older blob"}}),
    )
    .ok();
    let sha = v["records"][0]["content"]["sha256"]
        .as_str()
        .expect("h")
        .to_owned();
    let put = env
        .cmd()
        .args(["cas", "put", "-"])
        .write_stdin("older blob")
        .output()
        .expect("cas put");
    assert!(put.status.success(), "{put:?}");
    let db = rusqlite::Connection::open(env.data_dir.join("data/data.sqlite")).expect("db");
    let key = data_encoding::HEXLOWER.decode(sha.as_bytes()).expect("key");
    db.execute("DELETE FROM inline_blobs WHERE sha256 = ?1", [key])
        .expect("delete");
    let rec = format!(
        "/v1/data/records/{}",
        v["records"][0]["id"].as_str().expect("id")
    );
    assert_eq!(get(a, &rec).ok()["content"]["data"], "older blob");
}
