//! `serve --tls-cert/--tls-key` on loopback with a CA and leaf the test
//! generates, a client that trusts only that CA; the plain-HTTP refusal
//! for non-loopback binds; the host allow-list (`Host` → 421, MCP
//! `Origin` → 403); and the dashboard's session cookie, `Secure` over TLS.

use crate::common::TestEnv;
use crate::common::data_core::data_env;
use crate::common::data_support::{Served, TOKEN, raw};
use crate::common::pki::pki;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::process::Stdio;
use std::sync::Arc;

/// Spawns `serve` with `args` and returns it with the listening URL.
fn spawn(env: &TestEnv, args: &[&str]) -> (Served, String) {
    let mut child = env
        .std_cmd()
        .env("AGENT_TASK_NODE_TOKEN", TOKEN)
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let url = v["listening"].as_str().expect("url").to_owned();
    let addr = url.split_once("://").expect("scheme").1.to_owned();
    (Served { child, addr }, url)
}

fn agent(ca_pem: Option<&str>) -> ureq::Agent {
    use ureq::tls::{Certificate, RootCerts, TlsConfig};
    let tls = match ca_pem {
        Some(pem) => TlsConfig::builder()
            .root_certs(RootCerts::Specific(Arc::new(vec![
                Certificate::from_pem(pem.as_bytes()).expect("ca pem"),
            ])))
            .build(),
        None => TlsConfig::builder().build(),
    };
    ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .tls_config(tls)
        .build()
        .into()
}

#[test]
fn tls_serves_the_node_to_a_client_that_trusts_only_the_test_ca() {
    let env = data_env();
    let p = pki(&env);
    let (s, url) = spawn(
        &env,
        &[
            "--bind",
            "127.0.0.1:0",
            "--tls-cert",
            p.cert.to_str().expect("p"),
            "--tls-key",
            p.key.to_str().expect("p"),
        ],
    );
    assert!(url.starts_with("https://127.0.0.1:"), "{url}");
    let port = s.addr.rsplit_once(':').expect("port").1.to_owned();
    let a = agent(Some(&p.ca_pem));
    for origin in [format!("https://localhost:{port}"), url.clone()] {
        let mut r = a
            .get(&format!("{origin}/.well-known/agent-data"))
            .call()
            .expect("manifest over TLS");
        assert_eq!(r.status().as_u16(), 200);
        let v: Value =
            serde_json::from_slice(&r.body_mut().read_to_vec().expect("body")).expect("json");
        // base_url stays the origin the client asked.
        assert_eq!(v["base_url"], origin.as_str());
    }
    let mut r = a
        .get(&format!("{url}/v1/data/collections"))
        .header("authorization", &format!("Bearer {TOKEN}"))
        .call()
        .expect("collections");
    assert_eq!(r.status().as_u16(), 200);
    let _ = r.body_mut().read_to_vec();
    // A client that does not trust the test CA refuses the server.
    assert!(
        agent(None)
            .get(&format!("{url}/.well-known/agent-data"))
            .call()
            .is_err()
    );
    // Plain HTTP to the TLS port gets no HTTP answer (the handshake fails).
    let mut c = std::net::TcpStream::connect(&s.addr).expect("connect");
    c.set_read_timeout(Some(std::time::Duration::from_secs(60)))
        .expect("timeout");
    c.write_all(
        format!(
            "GET /.well-known/agent-data HTTP/1.1\r\nHost: {}\r\n\r\n",
            s.addr
        )
        .as_bytes(),
    )
    .expect("write");
    let mut buf = Vec::new();
    let _ = c.read_to_end(&mut buf);
    assert!(
        !buf.starts_with(b"HTTP/"),
        "{:?}",
        String::from_utf8_lossy(&buf)
    );
    // A misdirected Host over TLS: 421.
    let mut r = a
        .get(&format!("{url}/.well-known/agent-data"))
        .header("host", "evil.example")
        .call()
        .expect("misdirected");
    assert_eq!(r.status().as_u16(), 421);
    let v: Value =
        serde_json::from_slice(&r.body_mut().read_to_vec().expect("body")).expect("json");
    assert_eq!(v["error"], "misdirected_request");
    // Still serving.
    assert_eq!(
        a.get(&format!("{url}/.well-known/agent-data"))
            .call()
            .expect("after")
            .status()
            .as_u16(),
        200
    );
}

#[test]
fn tls_files_are_checked_before_serving() {
    let env = data_env();
    let p = pki(&env);
    let run = |args: &[&str]| {
        let mut c = env.cmd();
        c.env("AGENT_TASK_NODE_TOKEN", TOKEN)
            .arg("serve")
            .args(args)
            .timeout(std::time::Duration::from_secs(120));
        crate::common::run_cmd(&mut c)
    };
    let (cert, key) = (p.cert.to_str().expect("p"), p.key.to_str().expect("p"));
    std::fs::set_permissions(&p.key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let e = run(&[
        "--bind",
        "127.0.0.1:0",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
    ])
    .error("insecure_permissions", 77);
    assert!(
        e["details"]["fix"]
            .as_str()
            .expect("fix")
            .contains("chmod 600")
    );
    std::fs::set_permissions(&p.key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    // The key of another certificate, a certificate that is not PEM, one flag alone.
    let other = env.path("other.key");
    std::fs::write(
        &other,
        rcgen::KeyPair::generate().expect("key").serialize_pem(),
    )
    .expect("write");
    std::fs::set_permissions(&other, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    run(&[
        "--bind",
        "127.0.0.1:0",
        "--tls-cert",
        cert,
        "--tls-key",
        other.to_str().expect("p"),
    ])
    .error("config", 78);
    run(&["--bind", "127.0.0.1:0", "--tls-cert", key, "--tls-key", key]).error("config", 78);
    run(&["--bind", "127.0.0.1:0", "--tls-cert", cert]).error("usage", 64);
    run(&[
        "--bind",
        "127.0.0.1:0",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--insecure-http",
    ])
    .error("usage", 64);
}

#[test]
fn non_loopback_plain_http_needs_insecure_http_and_wildcards_need_public_names() {
    let env = data_env();
    let run = |args: &[&str]| {
        let mut c = env.cmd();
        c.env("AGENT_TASK_NODE_TOKEN", TOKEN)
            .arg("serve")
            .args(args)
            .timeout(std::time::Duration::from_secs(120));
        crate::common::run_cmd(&mut c)
    };
    let e = run(&["--bind", "0.0.0.0:0"]).error("unsafe_server_bind", 78);
    assert!(e["message"].as_str().expect("m").contains("clear"), "{e}");
    assert!(
        e["details"]["fix"]
            .as_str()
            .expect("fix")
            .contains("--tls-cert")
    );
    let e = run(&["--bind", "0.0.0.0:0", "--insecure-http"]).error("config", 78);
    assert!(
        e["message"].as_str().expect("m").contains("--public-name"),
        "{e}"
    );
    run(&["--bind", "127.0.0.1:0", "--public-name", "a b"]).error("usage", 64);

    // With both, it serves, and only to the names it was given.
    let (s, _url) = spawn(
        &env,
        &[
            "--bind",
            "0.0.0.0:0",
            "--insecure-http",
            "--public-name",
            "node.test",
        ],
    );
    let port = s.addr.rsplit_once(':').expect("port").1.to_owned();
    let a = format!("127.0.0.1:{port}");
    let get = |host: &str| {
        raw(
            &a,
            format!(
                "GET /.well-known/agent-data HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
        )
    };
    let v = get(&format!("node.test:{port}")).ok();
    assert_eq!(v["base_url"], format!("http://node.test:{port}"));
    for bad in [
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        "node.test".to_owned(),
        format!("evil.test:{port}"),
    ] {
        get(&bad).error(421, "misdirected_request");
    }
}

/// The MCP `Origin` is checked against the allow-list, not against `Host`
/// (which a DNS-rebinding page controls): an attacker's name in both
/// headers is refused; the server's own names are accepted.
#[test]
fn mcp_origin_is_checked_against_the_allow_list() {
    use crate::common::task_support::Setup;
    let s = Setup::new();
    let srv = crate::common::workspace_http::serve(&s);
    let tok = crate::common::workspace_http::token(&s);
    let a = srv.addr.as_str();
    let port = a.rsplit_once(':').expect("port").1;
    let path = "/v1/hub/workspace/mcp?repository=demo-basic&profile=default";
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let post = |host: &str, origin: &str| {
        raw(
            a,
            format!(
                "POST {path} HTTP/1.1\r\nHost: {host}\r\nOrigin: {origin}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{ping}",
                ping.len()
            )
            .as_bytes(),
        )
    };
    // Rebinding: the attacker's name in Host and Origin alike.
    post(
        &format!("evil.test:{port}"),
        &format!("http://evil.test:{port}"),
    )
    .error(421, "misdirected_request");
    post(a, &format!("http://evil.test:{port}")).error(403, "forbidden");
    post(a, &format!("https://{a}")).error(403, "forbidden");
    post(
        a,
        &format!("http://localhost:{}", port.parse::<u32>().expect("p") + 1),
    )
    .error(403, "forbidden");
    for origin in [
        format!("http://{a}"),
        format!("http://localhost:{port}"),
        format!("http://[::1]:{port}"),
    ] {
        let r = post(&format!("localhost:{port}"), &origin);
        assert_eq!(r.status, 200, "{origin}: {r:?}");
        assert_eq!(r.json()["result"], serde_json::json!({}));
    }
}

#[test]
fn stalled_tls_handshakes_wait_in_the_head_budget_and_never_keep_a_client_out() {
    // A handshake in progress is a head not yet read: it holds a place in
    // the head budget (here 16), and a full budget drops the oldest. The
    // deadlines are out of the way, so only the budget can help.
    let env = data_env();
    let p = pki(&env);
    let (s, url) = spawn(
        &env,
        &[
            "--bind",
            "127.0.0.1:0",
            "--tls-cert",
            p.cert.to_str().expect("p"),
            "--tls-key",
            p.key.to_str().expect("p"),
            "--head-budget",
            "16",
            "--first-byte-timeout-ms",
            "120000",
            "--head-timeout-ms",
            "120000",
            "--min-head-rate",
            "0",
        ],
    );
    // 40 stalled handshakes: half send nothing, half the first bytes of a
    // TLS handshake record and no more.
    let mut stalled: Vec<std::net::TcpStream> = (0..40)
        .map(|i| {
            let mut c = std::net::TcpStream::connect(&s.addr).expect("connect");
            c.set_read_timeout(Some(std::time::Duration::from_secs(60)))
                .expect("timeout");
            if i % 2 == 1 {
                c.write_all(&[0x16, 0x03, 0x01, 0x02, 0x00, 0x01])
                    .expect("write");
            }
            c
        })
        .collect();
    let a = agent(Some(&p.ca_pem));
    for _ in 0..5 {
        let mut r = a
            .get(&format!("{url}/.well-known/agent-data"))
            .call()
            .expect("manifest over TLS");
        assert_eq!(r.status().as_u16(), 200);
        let _ = r.body_mut().read_to_vec();
    }
    // The oldest stalled handshake was closed without a byte; the newest
    // is still waiting.
    let mut b = [0u8; 1];
    let oldest = stalled[0].read(&mut b);
    assert!(
        matches!(&oldest, Ok(0))
            || matches!(&oldest, Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset),
        "{oldest:?}"
    );
    let newest = stalled.pop().expect("newest");
    newest.set_nonblocking(true).expect("nonblocking");
    assert!(
        matches!(newest.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "the newest stalled handshake was dropped"
    );
}

#[test]
fn the_dashboard_session_cookie_is_secure_over_tls() {
    use ureq::tls::{Certificate, RootCerts, TlsConfig};
    let env = data_env();
    let p = pki(&env);
    let ui = env.path("ui-token");
    std::fs::write(&ui, "ui-token-over-tls-0123456789\n").expect("write");
    std::fs::set_permissions(&ui, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let (s, url) = spawn(
        &env,
        &[
            "--bind",
            "127.0.0.1:0",
            "--tls-cert",
            p.cert.to_str().expect("p"),
            "--tls-key",
            p.key.to_str().expect("p"),
            "--ui",
            "--ui-token-file",
            ui.to_str().expect("p"),
        ],
    );
    let tls = TlsConfig::builder()
        .root_certs(RootCerts::Specific(Arc::new(vec![
            Certificate::from_pem(p.ca_pem.as_bytes()).expect("ca pem"),
        ])))
        .build();
    let a: ureq::Agent = ureq::Agent::config_builder()
        .proxy(None)
        .http_status_as_error(false)
        .max_redirects(0)
        .tls_config(tls)
        .build()
        .into();
    let r = a
        .post(&format!("{url}/ui/login"))
        .header("origin", &url)
        .header("content-type", "application/x-www-form-urlencoded")
        .send("token=ui-token-over-tls-0123456789")
        .expect("login over TLS");
    assert_eq!(r.status().as_u16(), 303);
    let cookie = r
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .expect("cookie")
        .to_owned();
    assert!(cookie.ends_with("; Secure"), "{cookie}");
    assert!(cookie.contains("HttpOnly; SameSite=Strict"), "{cookie}");
    // An http:// origin is another origin: refused.
    let plain = url.replacen("https://", "http://", 1);
    let r = a
        .post(&format!("{url}/ui/login"))
        .header("origin", &plain)
        .header("content-type", "application/x-www-form-urlencoded")
        .send("token=ui-token-over-tls-0123456789")
        .expect("cross-origin login");
    assert_eq!(r.status().as_u16(), 403);
    assert!(r.headers().get("set-cookie").is_none());
    drop(s);
}
