//! `agent-task sync pull` against the reference's captured pages served
//! by a scripted loopback peer: the whole pull, resume, feed replacement,
//! reset, every tamper and binding failure of the sheet's checklist
//! (§16), transport faults, and SIGKILL between a page's import and its
//! checkpoint.

use crate::common::sync_support::{
    FakePeer, PUBLISHER_KEY, VECTOR_NOW, add_vector_peer, json_reply, reference_peer, run_at,
    secret_file, vector_destination, vectors,
};
use crate::common::{TestEnv, run_cmd};
use serde_json::{Value, json};

const ALPHA: &str = "rec_7bc80e84b466598be662f17a28ce59bc13c0dd926c888ea964177ce319f09164";
const GAMMA: &str = "rec_f13427c607c46821532ede5d4ffc55f82e0f0d545da501a38a97fc1f2c69e4e7";

fn pull(env: &TestEnv, now: &str) -> crate::common::Output {
    run_at(
        env,
        now,
        &[
            "sync",
            "pull",
            "--peer",
            "src",
            "--collection",
            "research",
            "--limit",
            "2",
        ],
    )
}

fn status(env: &TestEnv) -> Value {
    env.run(&[
        "sync",
        "status",
        "--peer",
        "src",
        "--collection",
        "research",
    ])
    .json()
}

fn feed_len(env: &TestEnv) -> usize {
    env.run(&["data", "changes", "--limit", "1000"]).json()["changes"]
        .as_array()
        .expect("changes")
        .len()
}

#[test]
fn reference_pages_pull_resume_and_reset() {
    let env = vector_destination("did:example:sync-destination");
    let peer = reference_peer(|_, _| {});
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    let out = pull(&env, VECTOR_NOW).json();
    assert_eq!(out["pages_applied"], 2, "{out}");
    assert_eq!(out["changes_applied"], 4);
    assert_eq!(out["records_inserted"], 3);
    assert_eq!(out["tombstones_applied"], 1);
    assert_eq!(out["has_more"], false);
    assert_eq!(out["origin_node_id"], "node_source");
    assert!(!out.to_string().contains("cursor\":\"") && out["status"]["cursor_present"] == true);
    // The exact request bodies of the vector file (plus our explicit budget).
    let d = vectors();
    for (i, seen) in peer.requests().iter().enumerate() {
        assert_eq!(seen.path, "/v1/data/sync/page");
        assert_eq!(seen.header("authorization"), Some("Bearer dest-page-token"));
        assert_eq!(seen.header("accept"), Some("application/json"));
        let mut want = d["pages"][i]["request_body"].clone();
        want["max_plaintext_bytes"] = json!(1_048_576);
        assert_eq!(seen.body, want, "request {i}");
    }
    // Offline reads.
    let got = env.run(&["data", "get", ALPHA]).json();
    assert_eq!(got["content"]["data"], "alpha: local-first sync works");
    env.run(&["data", "get", GAMMA])
        .error("record_tombstoned", 66);
    let q = env.run(&["data", "query", "--text", "encrypted"]).json();
    assert_eq!(q["records"].as_array().map(Vec::len), Some(1), "{q}");
    let st = status(&env);
    assert_eq!(
        st,
        json!({"protocol":"agent-data-sync/v1","peer_id":"src","collection_id":"research",
        "cursor_present":true,"last_applied_at":"2026-07-11T00:00:00.000Z",
        "records_inserted":3,"records_existing":0,"tombstones_applied":1})
    );
    // Feed replaced at the source: it answers 409 sync_feed_mismatch; the
    // destination reports it and keeps its checkpoint.
    let replaced = FakePeer::start(|_| {
        json_reply(
            409,
            &json!({"error":"sync_feed_mismatch","message":"feed changed"}),
        )
    });
    env.run(&["sync", "peer", "remove", "--peer", "src"]).json();
    add_vector_peer(&env, &replaced.origin, PUBLISHER_KEY);
    // (a new origin is a different binding: stopped before any request)
    let e = pull(&env, VECTOR_NOW).error("sync_checkpoint_peer_mismatch", 78);
    assert!(replaced.requests().is_empty(), "{e}");
    status_fails(&env);
    env.run(&["sync", "reset", "--peer", "src", "--collection", "research"])
        .json();
    // With no checkpoint the request carries no cursor; answer it as a
    // replaced feed would for a stale one, to see the report.
    let e = pull(&env, VECTOR_NOW).error("peer_response_error", 76);
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("HTTP 409 (sync_feed_mismatch)"),
        "{e}"
    );
    assert_eq!(status(&env)["cursor_present"], false);
    // Back to the reference peer: a replay from the start is idempotent.
    env.run(&["sync", "peer", "remove", "--peer", "src"]).json();
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    let n = feed_len(&env);
    let out = pull(&env, VECTOR_NOW).json();
    assert_eq!(
        (
            out["records_inserted"].as_u64(),
            out["records_existing"].as_u64(),
            out["tombstones_applied"].as_u64()
        ),
        (Some(0), Some(3), Some(0))
    );
    assert_eq!(feed_len(&env), n, "a replay appends nothing to the feed");
}

fn status_fails(env: &TestEnv) {
    env.run(&[
        "sync",
        "status",
        "--peer",
        "src",
        "--collection",
        "research",
    ])
    .error("sync_checkpoint_peer_mismatch", 78);
}

#[test]
fn a_stale_checkpoint_feed_is_reported_and_kept() {
    let env = vector_destination("did:example:sync-destination");
    let flip = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let f = flip.clone();
    let d = vectors();
    let peer = FakePeer::start(move |s| {
        if f.load(std::sync::atomic::Ordering::SeqCst) {
            return json_reply(409, &json!({"error":"sync_feed_mismatch","message":"x"}));
        }
        let idx = if s.body.get("cursor").is_some() { 1 } else { 0 };
        json_reply(200, &d["pages"][idx]["response_page"])
    });
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    run_at(
        &env,
        VECTOR_NOW,
        &[
            "sync",
            "pull",
            "--peer",
            "src",
            "--collection",
            "research",
            "--limit",
            "2",
            "--max-pages",
            "1",
        ],
    )
    .json();
    let before = status(&env);
    flip.store(true, std::sync::atomic::Ordering::SeqCst);
    let e = pull(&env, VECTOR_NOW).error("peer_response_error", 76);
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("(sync_feed_mismatch)")
    );
    assert_eq!(status(&env), before, "the checkpoint is kept");
    let last = peer.requests().pop().expect("request");
    assert_eq!(
        last.body["expected_feed_id"],
        "feed_c282b92e-7dc0-45b5-83dc-bfb39d002bc6"
    );
}

/// One tampered copy of page 1 and the code it must produce.
fn refused(edit: impl Fn(&mut Value) + Send + 'static, code: &str, exit: i32) {
    let env = vector_destination("did:example:sync-destination");
    let peer = reference_peer(move |i, p| {
        if i == 0 {
            edit(p)
        }
    });
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    let n = feed_len(&env);
    pull(&env, VECTOR_NOW).error(code, exit);
    assert_eq!(feed_len(&env), n, "nothing was written for {code}");
    env.run(&["data", "get", ALPHA])
        .error("record_not_found", 66);
    assert_eq!(status(&env)["cursor_present"], false);
}

#[test]
fn edited_routing_is_refused() {
    refused(
        |p| p["has_more"] = json!(false),
        "sync_page_control_invalid",
        76,
    );
    refused(
        |p| p["cursor"] = json!("eyJ2IjoxLCJzZXF1ZW5jZSI6OSwiY29sbGVjdGlvbl9pZCI6InJlc2VhcmNoIn0"),
        "sync_page_control_invalid",
        76,
    );
    refused(
        |p| p["changes"][0]["occurred_at"] = json!("2026-12-01T00:17:49.027Z"),
        "sync_page_control_invalid",
        76,
    );
    refused(
        |p| p["origin_node_id"] = json!("node_other"),
        "unexpected_peer_node",
        76,
    );
    refused(
        |p| p["collection_id"] = json!("other"),
        "invalid_sync_page",
        76,
    );
    refused(|p| p["extra"] = json!(1), "invalid_sync_page", 76);
    refused(
        |p| p["previous_cursor"] = json!(null),
        "invalid_sync_page",
        76,
    );
}

#[test]
fn skipped_reordered_and_swapped_changes_are_refused() {
    refused(
        |p| {
            let c = p["changes"].as_array_mut().expect("a");
            c.remove(0);
        },
        "sync_page_control_invalid",
        76,
    );
    refused(
        |p| p["changes"].as_array_mut().expect("a").swap(0, 1),
        "invalid_sync_page",
        76,
    );
    refused(
        |p| {
            let a = p["changes"][0]["object"].clone();
            p["changes"][0]["object"] = p["changes"][1]["object"].clone();
            p["changes"][1]["object"] = a;
        },
        "sync_page_control_invalid",
        76,
    );
    refused(
        |p| {
            let a = p["collection_object"].clone();
            p["collection_object"] = p["control_object"].clone();
            p["control_object"] = a;
        },
        "sync_page_control_invalid",
        76,
    );
    // A flipped ciphertext byte: the frame no longer hashes to its CID.
    refused(
        |p| {
            let d = p["changes"][0]["object"]["bundle"]["blocks"][1]["data"]
                .as_str()
                .expect("d")
                .to_owned();
            let mut b: Vec<char> = d.chars().collect();
            b[20] = if b[20] == 'A' { 'B' } else { 'A' };
            p["changes"][0]["object"]["bundle"]["blocks"][1]["data"] =
                json!(b.into_iter().collect::<String>());
        },
        "sync_object_invalid",
        76,
    );
}

#[test]
fn wrong_publisher_expiry_and_recipient_are_refused() {
    // Another pinned key.
    let env = vector_destination("did:example:sync-destination");
    let peer = reference_peer(|_, _| {});
    add_vector_peer(
        &env,
        &peer.origin,
        "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo",
    )
    .json();
    pull(&env, VECTOR_NOW).error("unexpected_sync_publisher", 76);
    // Expired (exclusive expiry, no skew) and not yet valid.
    let env = vector_destination("did:example:sync-destination");
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    pull(&env, "2026-07-11T00:05:00Z").error("sync_object_invalid", 76);
    pull(&env, "2026-07-10T23:59:59Z").error("sync_object_invalid", 76);
    pull(&env, "2026-07-11T00:04:59Z").json();
    // Another recipient id with the same key: the grants are not for it.
    let env = vector_destination("did:example:someone-else");
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    pull(&env, VECTOR_NOW).error("sync_object_invalid", 76);
}

#[test]
fn transport_faults_are_classified() {
    for (reply, code) in [
        (
            (302u16, "text/plain".to_owned(), Vec::new()),
            "peer_unreachable",
        ),
        (
            (200, "text/html".to_owned(), b"{}".to_vec()),
            "peer_response_invalid",
        ),
        (
            (200, "application/json".to_owned(), b"{not json".to_vec()),
            "peer_response_invalid",
        ),
        (
            (200, "application/json".to_owned(), b"\xff\xfe".to_vec()),
            "peer_response_invalid",
        ),
        (
            (
                500,
                "application/json".to_owned(),
                br#"{"error":"boom_1","message":"secret detail"}"#.to_vec(),
            ),
            "peer_response_error",
        ),
        (
            (
                401,
                "application/json".to_owned(),
                br#"{"error":"Not A Code"}"#.to_vec(),
            ),
            "peer_response_error",
        ),
    ] {
        let env = vector_destination("did:example:sync-destination");
        let r = reply.clone();
        let peer = FakePeer::start(move |_| r.clone());
        add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
        let e =
            pull(&env, VECTOR_NOW).error(code, if code == "peer_unreachable" { 69 } else { 76 });
        let m = e["message"].as_str().expect("m");
        assert!(!m.contains("secret detail"), "{m}");
        if reply.0 == 500 {
            assert!(m.contains("HTTP 500 (boom_1)"), "{m}");
        }
        if reply.0 == 401 {
            assert!(m.contains("HTTP 401 (unknown)"), "{m}");
        }
    }
    // Nothing listening.
    let env = vector_destination("did:example:sync-destination");
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let origin = format!("http://{}", l.local_addr().expect("a"));
    drop(l);
    add_vector_peer(&env, &origin, PUBLISHER_KEY).json();
    pull(&env, VECTOR_NOW).error("peer_unreachable", 69);
}

#[test]
fn peer_configuration_is_strict() {
    let env = vector_destination("did:example:sync-destination");
    for bad in [
        "http://example.com",
        "https://example.com/v1",
        "https://u@example.com",
        "https://example.com?x=1",
        "ftp://x",
    ] {
        add_vector_peer(&env, bad, PUBLISHER_KEY).error("invalid_peer", 65);
    }
    add_vector_peer(&env, "https://example.com", "AAAA").error("invalid_peer", 65);
    let loose = env.path("loose.token");
    std::fs::write(&loose, "tok").expect("w");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&loose, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let args = |f: &str| {
        vec![
            "sync".to_owned(),
            "peer".into(),
            "add".into(),
            "--peer".into(),
            "p".into(),
            "--origin".into(),
            "https://example.com".into(),
            "--node-id".into(),
            "n".into(),
            "--publisher-id".into(),
            "did:x".into(),
            "--publisher-key".into(),
            PUBLISHER_KEY.into(),
            "--page-token-file".into(),
            f.to_owned(),
        ]
    };
    let run = |a: Vec<String>| run_cmd(env.cmd().args(a));
    run(args(loose.to_str().expect("p"))).error("insecure_permissions", 77);
    let real = secret_file(&env, "real.token", "tok");
    let link = env.path("link.token");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    run(args(link.to_str().expect("p"))).error("symlink_refused", 77);
    run(args(real.to_str().expect("p"))).json();
    run(args(real.to_str().expect("p"))).error("duplicate_peer", 65);
    let list = env.run(&["sync", "peer", "list"]).json();
    assert!(
        !list.to_string().contains("tok\""),
        "bearers are never listed: {list}"
    );
    assert_eq!(list["peers"][0]["base_url"], "https://example.com");
    // An unknown alias: no network at all.
    env.run(&["sync", "pull", "--peer", "nope", "--collection", "research"])
        .error("peer_not_configured", 66);
    env.run(&[
        "sync",
        "pull",
        "--peer",
        "p",
        "--collection",
        "research",
        "--limit",
        "101",
    ])
    .error("sync_limit_exceeded", 65);
    env.run(&[
        "sync",
        "pull",
        "--peer",
        "p",
        "--collection",
        "research",
        "--max-pages",
        "0",
    ])
    .error("invalid_sync_request", 65);
}

#[test]
fn sigkill_between_import_and_checkpoint_then_rerun() {
    let env = vector_destination("did:example:sync-destination");
    let peer = reference_peer(|_, _| {});
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    let mark = env.path("paused");
    let mut child = env
        .std_cmd()
        .env("AGENT_TASK_TEST_NOW", VECTOR_NOW)
        .env("AGENT_TASK_TEST_SYNC_PAUSE_PAGE", "1")
        .env("AGENT_TASK_TEST_SYNC_PAUSE_FILE", &mark)
        .args([
            "sync",
            "pull",
            "--peer",
            "src",
            "--collection",
            "research",
            "--limit",
            "2",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    while !mark.exists() {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "the pull ended before pausing"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The paused pull holds the (peer, collection) lock across processes.
    pull(&env, VECTOR_NOW).error("sync_in_progress", 75);
    env.run(&["sync", "reset", "--peer", "src", "--collection", "research"])
        .error("sync_in_progress", 75);
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    // Page 1 is imported, its checkpoint was never written: the cursor is
    // not ahead of what was applied.
    env.run(&["data", "get", ALPHA]).json();
    assert_eq!(status(&env)["cursor_present"], false);
    let out = pull(&env, VECTOR_NOW).json();
    assert_eq!(out["pages_applied"], 2);
    assert_eq!(out["records_inserted"], 1, "{out}");
    assert_eq!(out["records_existing"], 2);
    assert_eq!(out["tombstones_applied"], 1);
    // No duplicate, no gap: three record changes and one tombstone here.
    let ch = env
        .run(&[
            "data",
            "changes",
            "--collection",
            "research",
            "--limit",
            "100",
        ])
        .json();
    let kinds: Vec<&str> = ch["changes"]
        .as_array()
        .expect("a")
        .iter()
        .map(|c| c["type"].as_str().expect("t"))
        .collect();
    assert_eq!(
        kinds,
        [
            "record.created",
            "record.created",
            "record.created",
            "record.tombstoned"
        ]
    );
}

#[test]
fn progress_goes_to_stderr_only_on_a_terminal() {
    let env = vector_destination("did:example:sync-destination");
    let peer = reference_peer(|_, _| {});
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    // Not a terminal: stderr stays empty.
    let out = pull(&env, VECTOR_NOW);
    out.json();
    assert!(out.stderr.is_empty(), "{out}");
    env.run(&["sync", "reset", "--peer", "src", "--collection", "research"])
        .json();
    // Under a pseudo-terminal (util-linux `script`): pages, changes, records, bytes.
    if std::process::Command::new("script")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipping the terminal half: util-linux `script` is not installed");
        return;
    }
    let cmdline = format!(
        "{} --data-dir {} sync pull --peer src --collection research --limit 2 2>&1 >/dev/null",
        crate::common::bin().display(),
        env.data_dir.display()
    );
    let o = std::process::Command::new("script")
        .args(["-qec", &cmdline, "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", env.tmp.path())
        .env("AGENT_TASK_TEST_NOW", VECTOR_NOW)
        .output()
        .expect("script");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{text}");
    assert!(
        text.contains("sync pull: 2 pages, 4 changes, 0 new records, 73 bytes"),
        "{text}"
    );
}

/// A one-connection HTTPS peer (`openssl s_server`) that answers `reply`.
fn tls_peer(dir: &std::path::Path, reply: &[u8]) -> Option<(String, std::process::Child)> {
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").ok()?;
        l.local_addr().ok()?.port()
    };
    let mut child = std::process::Command::new("openssl")
        .args([
            "s_server",
            "-quiet",
            "-naccept",
            "1",
            "-accept",
            &format!("127.0.0.1:{port}"),
        ])
        .arg("-cert")
        .arg(dir.join("leaf.pem"))
        .arg("-key")
        .arg(dir.join("leaf.key"))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .ok()?;
    use std::io::Write;
    child.stdin.take()?.write_all(reply).ok()?;
    // Wait for the socket to listen (a probe connection would use up the
    // single accept): 127.0.0.1:PORT in state LISTEN in /proc/net/tcp.
    let want = format!("0100007F:{port:04X}");
    for _ in 0..250 {
        let tcp = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
        if tcp.lines().any(|l| {
            l.split_whitespace().nth(1) == Some(want.as_str())
                && l.split_whitespace().nth(3) == Some("0A")
        }) {
            return Some((format!("https://127.0.0.1:{port}"), child));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

#[test]
fn https_peers_are_trusted_through_the_operator_ca_file() {
    let env = vector_destination("did:example:sync-destination");
    let dir = env.path("tls");
    std::fs::create_dir(&dir).expect("mkdir");
    let sh = r#"set -e
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem -subj /CN=sync-test-ca -days 2 -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout leaf.key -out leaf.csr -subj /CN=127.0.0.1
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > ext
openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out leaf.pem -days 2 -extfile ext"#;
    let made = std::process::Command::new("sh")
        .args(["-c", sh])
        .current_dir(&dir)
        .output();
    if !made.as_ref().is_ok_and(|o| o.status.success()) {
        eprintln!("skipping: openssl cannot make a test CA here ({made:?})");
        return;
    }
    let page = vectors()["pages"][0]["response_page"].to_string();
    let reply = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
    // Without the CA file the web roots do not trust the test CA.
    let Some((origin, mut s1)) = tls_peer(&dir, reply.as_bytes()) else {
        eprintln!("skipping: openssl s_server is unavailable");
        return;
    };
    add_vector_peer(&env, &origin, PUBLISHER_KEY).json();
    let e = pull(&env, VECTOR_NOW).error("peer_unreachable", 69);
    let _ = s1.kill();
    let _ = s1.wait();
    let m = e["message"].as_str().expect("m");
    assert!(
        m.to_ascii_lowercase().contains("certificate") || m.contains("issuer"),
        "{m}"
    );
    // With --ca-file the same kind of peer is pulled from over HTTPS.
    let Some((origin, mut s2)) = tls_peer(&dir, reply.as_bytes()) else {
        panic!("second s_server")
    };
    env.run(&["sync", "peer", "remove", "--peer", "src"]).json();
    let tok = secret_file(&env, "tls.token", "dest-page-token");
    env.run(&[
        "sync",
        "peer",
        "add",
        "--peer",
        "src",
        "--origin",
        &origin,
        "--node-id",
        "node_source",
        "--publisher-id",
        "did:example:sync-source",
        "--publisher-key",
        PUBLISHER_KEY,
        "--page-token-file",
        tok.to_str().expect("p"),
        "--ca-file",
        dir.join("ca.pem").to_str().expect("p"),
    ])
    .json();
    let out = run_at(
        &env,
        VECTOR_NOW,
        &[
            "sync",
            "pull",
            "--peer",
            "src",
            "--collection",
            "research",
            "--limit",
            "2",
            "--max-pages",
            "1",
        ],
    )
    .json();
    let _ = s2.kill();
    let _ = s2.wait();
    assert_eq!(out["records_inserted"], 2, "{out}");
    assert_eq!(
        env.run(&["sync", "peer", "list"]).json()["peers"][0]["ca_file"],
        true
    );
}

/// The pull requests page N+1 as soon as page N's cursor is known, before
/// page N is verified: a page that fails verification still stops the
/// pull in page order, with nothing of it or of the page after it
/// written, and the checkpoint names exactly the pages that were applied.
#[test]
fn a_failing_page_stops_the_pipeline_in_page_order() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    // Page 1 passes the shape checks (its cursor is used for the early
    // request of page 2) but not the page-control binding.
    let env = vector_destination("did:example:sync-destination");
    let peer = reference_peer(|i, p| {
        if i == 0 {
            p["changes"][1]["occurred_at"] = json!("2026-12-01T00:17:49.035Z");
        }
    });
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    let n = feed_len(&env);
    pull(&env, VECTOR_NOW).error("sync_page_control_invalid", 76);
    assert_eq!(feed_len(&env), n, "nothing of page 1 or page 2 was written");
    assert!(peer.requests().len() <= 2, "at most one page ahead");
    assert_eq!(status(&env)["cursor_present"], false);
    env.run(&[
        "data",
        "get",
        "rec_dbbead309a4a6dad87386c5f0cb1fcb0f3ac37616470aa34f51fe172fa160615",
    ])
    .error("record_not_found", 66);

    // Page 2 fails: page 1 is applied and checkpointed, page 2 is not; the
    // rerun against the repaired peer resumes at page 1's cursor.
    let env = vector_destination("did:example:sync-destination");
    let broken = Arc::new(AtomicBool::new(true));
    let b = broken.clone();
    let peer = reference_peer(move |i, p| {
        if i == 1 && b.load(Ordering::SeqCst) {
            p["changes"][0]["occurred_at"] = json!("2026-12-01T00:17:49.037Z");
        }
    });
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    pull(&env, VECTOR_NOW).error("sync_page_control_invalid", 76);
    let st = status(&env);
    assert_eq!(st["cursor_present"], true, "{st}");
    assert_eq!(
        (
            st["records_inserted"].as_u64(),
            st["tombstones_applied"].as_u64()
        ),
        (Some(2), Some(0)),
        "{st}"
    );
    assert_eq!(
        env.run(&["data", "get", ALPHA]).json()["content"]["data"],
        "alpha: local-first sync works"
    );
    env.run(&["data", "get", GAMMA])
        .error("record_not_found", 66);
    broken.store(false, Ordering::SeqCst);
    let out = pull(&env, VECTOR_NOW).json();
    assert_eq!(
        (
            out["pages_applied"].as_u64(),
            out["records_inserted"].as_u64(),
            out["tombstones_applied"].as_u64(),
            out["has_more"].as_bool()
        ),
        (Some(1), Some(1), Some(1), Some(false)),
        "{out}"
    );
    let last = peer.requests().pop().expect("request");
    assert_eq!(
        last.body["cursor"],
        vectors()["pages"][1]["request_body"]["cursor"],
        "the rerun starts after page 1"
    );
    env.run(&["data", "get", GAMMA])
        .error("record_tombstoned", 66);
}

/// A publisher (it holds the pinned key) whose grant for change 1 carries a
/// small-order ephemeral key, re-signed so that every check before the key
/// agreement passes: the agreement is all zero and refused, in the batch
/// the destination computes with change 0's valid one, and nothing of the
/// page is written.
#[test]
fn a_signed_grant_with_a_small_order_ephemeral_key_is_refused_mid_page() {
    use agent_task::sync::adds::encoding::b64u;
    use agent_task::sync::adds::jcs::domain_message_of;
    use agent_task::wire::ed25519::Keypair;
    let env = vector_destination("did:example:sync-destination");
    let seed = vectors()["pinned_publisher"]["ed25519_seed_hex"]
        .as_str()
        .expect("seed")
        .to_owned();
    let peer = reference_peer(move |i, p| {
        if i != 0 {
            return;
        }
        let mut s = [0u8; 32];
        for (k, b) in s.iter_mut().enumerate() {
            *b = u8::from_str_radix(&seed[2 * k..2 * k + 2], 16).expect("hex");
        }
        let key = Keypair::from_seed(&s);
        let g = p["changes"][1]["object"]["grant"]
            .as_object_mut()
            .expect("grant");
        g["key_wrap"]["ephemeral_public_key"] = json!(b64u(&[0u8; 32]));
        g.remove("signature");
        let msg = domain_message_of("adds-grant/v1", g, "signature", None).expect("message");
        g.insert(
            "signature".into(),
            json!({"algorithm": "Ed25519", "public_key": b64u(&key.public_key()),
                   "value": b64u(&key.sign(&msg))}),
        );
    });
    add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
    let n = feed_len(&env);
    let e = pull(&env, VECTOR_NOW).error("sync_object_invalid", 76);
    assert!(
        e["message"]
            .as_str()
            .is_some_and(|m| m.contains("shared secret is all zero")),
        "{e}"
    );
    assert_eq!(feed_len(&env), n, "nothing of the page was written");
    env.run(&["data", "get", ALPHA])
        .error("record_not_found", 66);
    assert_eq!(status(&env)["cursor_present"], false);
}

/// The destination takes the page-control plaintext without parsing it
/// only when it is byte for byte the canonical text the page implies. A
/// publisher holding the pinned key re-seals page 1's control object with
/// that text plus one space (the same JSON, not canonical): the pull is
/// refused as not canonical, and nothing is written. The same re-seal of
/// the exact text pulls the page, so the refusal is the space's.
#[test]
fn a_resealed_control_object_one_space_off_its_canonical_text_is_refused() {
    use agent_task::sync::adds::grant::{self, GrantParams, Recipient};
    use agent_task::sync::adds::jcs::canonical;
    use agent_task::sync::adds::object::{self, SealParams};
    use agent_task::sync::adds::{bundle, encoding, random_urn_uuid};
    use agent_task::sync::wire::{INLINE_PROFILE, MEDIA_TYPE, SCHEMA, SyncLimits, validate_page};
    use agent_task::wire::ed25519::Keypair;

    fn reseal(p: &mut Value, space: bool) {
        let v = vectors();
        let seed = v["pinned_publisher"]["ed25519_seed_hex"]
            .as_str()
            .expect("seed");
        let mut s = [0u8; 32];
        for (k, b) in s.iter_mut().enumerate() {
            *b = u8::from_str_radix(&seed[2 * k..2 * k + 2], 16).expect("hex");
        }
        let key = Keypair::from_seed(&s);
        let publisher_id = v["pinned_publisher"]["id"].as_str().expect("id");
        let view = validate_page(p.clone(), 100, &SyncLimits::default()).expect("shape");
        let mut text = canonical(&view.rebuilt_control()).expect("canonical");
        if space {
            text.insert(1, b' ');
        }
        let old = &p["control_object"]["grant"];
        let (issued_at, expires_at) = (
            old["issued_at"].as_i64().expect("issued_at"),
            old["expires_at"].as_i64().expect("expires_at"),
        );
        let params = SealParams::random(text.len(), issued_at, MEDIA_TYPE, SCHEMA).expect("params");
        let sealed = object::seal(&text, &params, publisher_id, &key).expect("seal");
        let reader_public = grant::x25519_public(&[0x22; 32]);
        let g = grant::issue(
            &params.dek,
            &GrantParams {
                grant_id: random_urn_uuid().expect("uuid"),
                manifest_cid: sealed.root.clone(),
                issuer_id: publisher_id.to_owned(),
                audience: Recipient {
                    id: "did:example:sync-destination".into(),
                    x25519_public_key: encoding::b64u(&reader_public),
                    x25519_key_id: encoding::x25519_key_id(&reader_public),
                },
                issued_at,
                expires_at,
                not_before: None,
                ephemeral_secret: [7u8; 32],
                nonce: [8u8; 12],
            },
            &key,
        )
        .expect("grant");
        p["control_object"] =
            json!({"profile": INLINE_PROFILE, "bundle": bundle::encode(&sealed), "grant": g});
    }

    for space in [true, false] {
        let env = vector_destination("did:example:sync-destination");
        let peer = reference_peer(move |i, p| {
            if i == 0 {
                reseal(p, space);
            }
        });
        add_vector_peer(&env, &peer.origin, PUBLISHER_KEY).json();
        let n = feed_len(&env);
        if space {
            let e = pull(&env, VECTOR_NOW).error("sync_object_invalid", 76);
            assert!(
                e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("not in canonical form")),
                "{e}"
            );
            assert_eq!(feed_len(&env), n, "nothing of the page was written");
            assert_eq!(status(&env)["cursor_present"], false);
        } else {
            pull(&env, VECTOR_NOW).json();
            assert_eq!(
                env.run(&["data", "get", ALPHA]).json()["content"]["data"],
                "alpha: local-first sync works"
            );
        }
    }
}
