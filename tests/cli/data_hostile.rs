//! Hostile requests against the data node that this product bounds beyond
//! the reference: text queries with too many terms, ids forged to share a
//! stored record's index prefix.

use crate::common::data_core::{all_changes, collect, data_env};
use crate::common::data_support::{TOKEN, req, serve};
use serde_json::json;

fn terms(n: usize) -> String {
    (0..n)
        .map(|i| format!("t{i}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// 1,024 terms are a query; one more is `query_too_complex` (400), on the
/// CLI and over HTTP, also for a 120,000-term body just under 1 MiB that
/// used to take 25 s; the server keeps answering and nothing changes.
#[test]
fn text_queries_are_capped_at_1024_terms() {
    let env = data_env();
    collect(&env, "default", &json!({"text": "t1 t2 t3"}));
    let before = all_changes(&env);
    let hit = env.run(&["data", "query", "--text", "t1 t2 t3"]).json();
    assert_eq!(hit["records"].as_array().expect("r").len(), 1);
    env.run(&["data", "query", "--text", &terms(1024)]).json();
    let e = env
        .run(&["data", "query", "--text", &terms(1025)])
        .error("query_too_complex", 65);
    assert_eq!(e["details"]["max_terms"], 1024);

    let s = serve(&env, Some(TOKEN));
    let q = |text: &str| {
        req(
            &s.addr,
            "POST",
            "/v1/data/query",
            Some(TOKEN),
            Some(&json!({"text": text}).to_string()),
        )
    };
    q(&terms(1024)).ok();
    let huge = terms(120_000);
    assert!(huge.len() < 1024 * 1024);
    for text in [terms(1025), huge] {
        let v = q(&text).error(400, "query_too_complex");
        assert_eq!(v["details"]["max_terms"], 1024);
        let m = req(&s.addr, "GET", "/v1/data/manifest", None, None);
        assert_eq!(m.status, 200);
    }
    // Operator characters and extra spaces are not terms.
    q(&format!("{} - * ( ) \"", terms(1024))).ok();
    drop(s);
    assert_eq!(all_changes(&env), before);
}

/// The node bearer file is held to the agent token files' rule: 0600, not
/// a symbolic link, not a FIFO; otherwise `serve` refuses to start with a
/// typed error and a fix hint.
#[test]
fn the_node_bearer_file_must_be_owner_private_and_not_a_link() {
    use std::os::unix::fs::PermissionsExt;
    let env = data_env();
    let f = env.path("node.token");
    std::fs::write(&f, format!("{TOKEN}\n")).expect("write");
    let serve_with = |file: &std::path::Path| {
        let mut c = env.cmd();
        c.args(["serve", "--bind", "127.0.0.1:0", "--data-token-file"])
            .arg(file)
            .timeout(std::time::Duration::from_secs(120));
        crate::common::run_cmd(&mut c)
    };
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let e = serve_with(&f).error("insecure_permissions", 77);
    assert!(
        e["details"]["fix"]
            .as_str()
            .expect("fix")
            .starts_with("chmod 600"),
        "{e}"
    );
    std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = env.path("link.token");
    std::os::unix::fs::symlink(&f, &link).expect("symlink");
    let e = serve_with(&link).error("symlink_refused", 77);
    assert!(e["details"]["fix"].is_string(), "{e}");
    let fifo = env.path("fifo.token");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo")
            .success()
    );
    std::fs::set_permissions(&fifo, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    serve_with(&fifo).error("config", 78);
    serve_with(&env.path("missing.token")).error("config", 78);

    // A 0600 regular file serves, and its bearer is the one accepted.
    let mut child = env
        .std_cmd()
        .args(["serve", "--bind", "127.0.0.1:0", "--data-token-file"])
        .arg(&f)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout")),
        &mut line,
    )
    .expect("line");
    let served = crate::common::data_support::Served {
        child,
        addr: serde_json::from_str::<serde_json::Value>(&line).expect("json")["listening"]
            .as_str()
            .expect("url")
            .trim_start_matches("http://")
            .to_owned(),
    };
    crate::common::data_support::get(&served.addr, "/v1/data/collections").ok();
    req(
        &served.addr,
        "GET",
        "/v1/data/collections",
        Some("wrong"),
        None,
    )
    .error(401, "unauthorized");
}

/// Records and inline content are indexed by the first 8 bytes of their
/// key (data schema 6), which anyone can make two ids share: an id that
/// shares a stored record's first 8 bytes (or all but its last bit) is
/// not that record, on the CLI and over HTTP, for reads and tombstones,
/// and nothing changes.
#[test]
fn an_id_sharing_a_stored_records_prefix_finds_nothing() {
    let env = data_env();
    let stored = collect(&env, "default", &json!({"text": "the collided record"}));
    let id = stored["records"][0]["id"].as_str().expect("id").to_string();
    let hex = &id["rec_".len()..];
    let last = u8::from_str_radix(&hex[63..], 16).expect("hex digit") ^ 1;
    let forged = [
        format!("rec_{}{}", &hex[..16], "0".repeat(48)),
        format!("rec_{}{last:x}", &hex[..63]),
    ];
    let before = all_changes(&env);
    for f in &forged {
        assert_ne!(f, &id);
        env.run(&["data", "get", f]).error("record_not_found", 66);
        env.run(&["data", "tombstone", f])
            .error("record_not_found", 66);
    }
    let s = serve(&env, Some(TOKEN));
    for f in &forged {
        req(
            &s.addr,
            "GET",
            &format!("/v1/data/records/{f}"),
            Some(TOKEN),
            None,
        )
        .error(404, "record_not_found");
        req(
            &s.addr,
            "POST",
            &format!("/v1/data/records/{f}/tombstone"),
            Some(TOKEN),
            Some("{}"),
        )
        .error(404, "record_not_found");
    }
    let got = req(
        &s.addr,
        "GET",
        &format!("/v1/data/records/{id}"),
        Some(TOKEN),
        None,
    )
    .ok();
    assert_eq!(got["content"]["data"], "the collided record");
    drop(s);
    assert_eq!(all_changes(&env), before);
}
