//! The `http` collector through the real binary, against a loopback
//! origin (allowed only by the node config's explicit opt-in).

use crate::common::data_core::data_env;
use crate::common::origin::Reply;
use serde_json::{Value, json};

/// A loopback origin: `/doc` (text with ETag and Last-Modified),
/// `/redirect` (→ /doc), `/missing` (404), `/bin` (no content type).
fn origin() -> String {
    let mut o = crate::common::origin::Origin::start();
    let requests = o.requests();
    std::thread::spawn(move || {
        for rq in requests.take(64) {
            let resp = match rq.url.as_str() {
                "/doc" => Reply::new(200, "hello from the origin")
                    .header("Content-Type", "Text/Plain; charset=utf-8")
                    .header("ETag", "\"v1\"")
                    .header("Last-Modified", "Tue, 15 Nov 1994 08:12:31 GMT"),
                "/redirect" => Reply::new(302, "").header("Location", "/doc#frag"),
                "/bin" => Reply::new(200, vec![0u8, 159, 146, 150]),
                _ => Reply::new(404, "no"),
            };
            rq.respond(resp);
        }
    });
    let url = o.url();
    o.leak();
    url
}

fn http_collect(env: &crate::common::TestEnv, input: Value) -> crate::common::Output {
    env.run(&[
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "http",
        "--input",
        &input.to_string(),
    ])
}

#[test]
fn http_collector_records_the_final_url_and_headers() {
    let env = data_env();
    let o = origin();
    // Private destinations are refused by default.
    http_collect(&env, json!({"url": format!("{o}/doc")}))
        .error("http_private_network_blocked", 77);
    let cfg_path = env.data_dir.join("data/node.json");
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(&cfg_path).expect("cfg")).expect("json");
    cfg["http_allow_private_networks"] = json!(true);
    std::fs::write(&cfg_path, serde_json::to_vec(&cfg).expect("v")).expect("w");

    let r = http_collect(
        &env,
        json!({"url": format!("{o}/redirect"), "metadata": {"k": "v"}, "external_id": "doc-1"}),
    )
    .json();
    let rec = &r["records"][0];
    assert_eq!(rec["source"]["collector_id"], "http");
    assert_eq!(rec["source"]["uri"], format!("{o}/doc"));
    assert_eq!(rec["source"]["external_id"], "doc-1");
    assert_eq!(rec["content"]["media_type"], "text/plain");
    assert_eq!(
        rec["metadata"],
        json!({"k": "v", "http_status": 200, "final_url": format!("{o}/doc"), "etag": "\"v1\"", "last_modified": "Tue, 15 Nov 1994 08:12:31 GMT"})
    );
    assert_eq!(rec["observed_at"], "1994-11-15T08:12:31.000Z");
    let got = env
        .run(&["data", "get", rec["id"].as_str().expect("id")])
        .json();
    assert_eq!(
        got["content"],
        json!({"encoding": "utf8", "data": "hello from the origin"})
    );

    let bin = http_collect(&env, json!({"url": format!("{o}/bin")})).json();
    assert!(
        bin["records"][0]["content"]["media_type"]
            .as_str()
            .is_some()
    );
    assert!(bin["records"][0].get("observed_at").is_none());

    http_collect(&env, json!({"url": format!("{o}/missing")})).error("http_status_error", 69);
    http_collect(&env, json!({"url": "ftp://example.com/x"})).error("invalid_url_scheme", 65);
    http_collect(&env, json!({"url": "http://user:pw@example.com/"}))
        .error("invalid_url_credentials", 65);
    http_collect(&env, json!({"url": "not a url"})).error("invalid_url", 65);
    http_collect(
        &env,
        json!({"url": format!("{o}/doc"), "headers": {"x": 1}}),
    )
    .error("invalid_input", 65);
    http_collect(&env, json!({})).error("invalid_input", 65);
    let m = env.run(&["data", "manifest"]).json();
    assert_eq!(m["collectors"][1]["collector_id"], "http");
}

/// An origin whose `/loop` redirects to itself and whose `/nolocation`
/// answers 302 without a Location header.
fn bad_origin() -> String {
    let mut o = crate::common::origin::Origin::start();
    let requests = o.requests();
    std::thread::spawn(move || {
        for rq in requests.take(64) {
            let resp = match rq.url.as_str() {
                "/loop" => Reply::new(302, "").header("Location", "/loop"),
                "/nolocation" => Reply::new(302, ""),
                _ => Reply::new(410, "gone"),
            };
            rq.respond(resp);
        }
    });
    let url = o.url();
    o.leak();
    url
}

#[test]
fn http_collector_errors_over_http() {
    use crate::common::data_support::{TOKEN, post, serve};
    let env = data_env();
    let o = bad_origin();
    let body = |url: String| json!({"collection_id": "default", "collector_id": "http", "input": {"url": url}});
    {
        let s = serve(&env, Some(TOKEN));
        post(&s.addr, "/v1/data/collect", &body(format!("{o}/loop")))
            .error(422, "http_private_network_blocked");
        post(&s.addr, "/v1/data/collect", &body("http://[::1]:9/".into()))
            .error(422, "http_private_network_blocked");
    }
    let cfg_path = env.data_dir.join("data/node.json");
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(&cfg_path).expect("cfg")).expect("json");
    cfg["http_allow_private_networks"] = json!(true);
    std::fs::write(&cfg_path, serde_json::to_vec(&cfg).expect("v")).expect("w");
    let s = serve(&env, Some(TOKEN));
    let a = &s.addr;
    post(a, "/v1/data/collect", &body("::not a url".into())).error(400, "invalid_url");
    post(a, "/v1/data/collect", &body("file:///etc/passwd".into()))
        .error(400, "invalid_url_scheme");
    post(a, "/v1/data/collect", &body("http://u:p@127.0.0.1/".into()))
        .error(400, "invalid_url_credentials");
    post(a, "/v1/data/collect", &body(format!("{o}/other"))).error(422, "http_status_error");
    post(a, "/v1/data/collect", &body(format!("{o}/loop"))).error(422, "http_redirect_limit");
    post(a, "/v1/data/collect", &body(format!("{o}/nolocation")))
        .error(502, "http_redirect_invalid");
    // A closed loopback port: the connection is refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    post(a, "/v1/data/collect", &body(format!("http://{closed}/")))
        .error(422, "http_collection_failed");
    let feed = crate::common::data_support::get(a, "/v1/data/changes").ok();
    assert_eq!(
        feed["changes"],
        json!([]),
        "failed collections write nothing"
    );
}

#[test]
fn record_integrity_error_when_the_envelope_and_bytes_disagree() {
    use crate::common::data_support::{TOKEN, get, post, serve};
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let r = post(&s.addr, "/v1/data/collect", &json!({"collection_id": "default", "collector_id": "text", "input": {"text": "integrity"}})).ok();
    let id = r["records"][0]["id"].as_str().expect("id").to_owned();
    let db = rusqlite::Connection::open(env.data_dir.join("data/data.sqlite")).expect("open");
    db.execute(
        "UPDATE records SET envelope_json = replace(envelope_json, '\"size\":9', '\"size\":10') WHERE key = ?1",
        [data_encoding::HEXLOWER.decode(&id.as_bytes()[4..]).expect("key")],
    )
    .expect("tamper");
    drop(db);
    get(&s.addr, &format!("/v1/data/records/{id}")).error(500, "record_integrity_error");
}
