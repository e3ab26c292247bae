//! `agent-task serve` against a hostile client: real sockets on loopback
//! against a real server process with short limits (flags), one case at a
//! time. Every refusal must be one JSON error object with the documented
//! status (and `Connection: close` where the framing is broken); after
//! each case the server still answers the public manifest and nothing was
//! written (change-feed length and the data directory's files unchanged).
//! No assertion is on elapsed time: a deadline is shown by its 408, an
//! early answer by its status (a server that waited for the body would
//! answer 408, not 401).

use crate::common::data_support::TOKEN;
use crate::common::snapshot_files;
use crate::common::task_support::Setup;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// Long enough that no case here waits on it unless the server is stuck.
const SAFETY: Duration = Duration::from_secs(60);

const OPS: &str = "/v1/hub/workspace/repositories/demo-basic/profiles/default/agent-tasks";
const UPLOAD: &str =
    "/v1/hub/workspace/repositories/demo-basic/profiles/default/agent-tasks/collector-upload";
const MCP: &str = "/v1/hub/workspace/mcp?repository=demo-basic&profile=default";

struct Server {
    child: Child,
    addr: String,
    data_dir: PathBuf,
    agent: Option<String>,
    /// Keeps the temp dirs alive.
    _setup: Option<Setup>,
    _env: Option<crate::common::TestEnv>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(
    data_dir: &std::path::Path,
    workspace: Option<&std::path::Path>,
    flags: &[&str],
) -> (Child, String) {
    let mut c = Command::new(crate::common::bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_TASK_NODE_TOKEN", TOKEN)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(flags)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(w) = workspace {
        c.arg("--workspace-config").arg(w);
    }
    let mut child = c.spawn().expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"));
    let addr = v["listening"]
        .as_str()
        .expect("listening")
        .trim_start_matches("http://")
        .to_owned();
    (child, addr)
}

/// A data node only.
fn data_server(flags: &[&str]) -> Server {
    let env = crate::common::data_core::data_env();
    let (child, addr) = spawn(&env.data_dir, None, flags);
    Server {
        child,
        addr,
        data_dir: env.data_dir.clone(),
        agent: None,
        _setup: None,
        _env: Some(env),
    }
}

/// The data node and the workspace task routes (MCP, collector upload) in
/// one data directory.
fn full_server(flags: &[&str]) -> Server {
    let s = Setup::new();
    s.env.run(&["data", "init"]).json();
    let cfg = crate::common::workspace_http::write_config(&s);
    let (child, addr) = spawn(&s.env.data_dir, Some(&cfg), flags);
    let agent = crate::common::workspace_http::token(&s);
    Server {
        child,
        addr,
        data_dir: s.env.data_dir.clone(),
        agent: Some(agent),
        _setup: Some(s),
        _env: None,
    }
}

/// One parsed response.
#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }

    /// One JSON error object `{"error","message"}` with this status and code.
    fn refused(&self, status: u16, code: &str) -> &Resp {
        assert_eq!(
            self.status,
            status,
            "expected {status} {code}: {} {:?}",
            String::from_utf8_lossy(&self.body),
            self.headers
        );
        assert!(
            self.header("content-type")
                .is_some_and(|c| c.starts_with("application/json")),
            "{self:?}"
        );
        let v = self.json();
        assert_eq!(v["error"], code, "{v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        let keys: Vec<&String> = v.as_object().expect("object").keys().collect();
        assert!(
            keys.iter()
                .all(|k| ["error", "message", "details"].contains(&k.as_str())),
            "{v}"
        );
        self
    }

    /// The framing was broken: the server closes the connection.
    fn closes(&self) -> &Resp {
        assert_eq!(self.header("connection"), Some("close"), "{self:?}");
        self
    }
}

fn connect(addr: &str) -> TcpStream {
    let s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(SAFETY)).expect("timeout");
    s.set_write_timeout(Some(SAFETY)).expect("timeout");
    s
}

/// Reads one response (head, then `Content-Length` bytes); `None` if the
/// connection ended first.
fn read_response(s: &mut TcpStream) -> Option<Resp> {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        match s.read(&mut byte) {
            Ok(1) => buf.push(byte[0]),
            _ => return None,
        }
    }
    let head = String::from_utf8_lossy(&buf).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|x| x.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .map_or(0, |(_, v)| v.parse().expect("content-length"));
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).ok()?;
    Some(Resp {
        status,
        headers,
        body,
    })
}

/// Sends `bytes` on a fresh connection (then half-closes if asked) and
/// reads one response.
fn send(addr: &str, bytes: &[u8], half_close: bool) -> Resp {
    let mut s = connect(addr);
    s.write_all(bytes).expect("write");
    if half_close {
        s.shutdown(Shutdown::Write).expect("half-close");
    }
    read_response(&mut s).unwrap_or_else(|| {
        panic!(
            "no response to {:?}",
            String::from_utf8_lossy(&bytes[..bytes.len().min(200)])
        )
    })
}

/// Whether the server closes `s` (EOF or reset) without another byte.
fn closed(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 1];
    !matches!(s.read(&mut b), Ok(1))
}

fn manifest(addr: &str) -> Value {
    let r = send(
        addr,
        format!(
            "GET /.well-known/agent-data HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
        )
        .as_bytes(),
        false,
    );
    assert_eq!(r.status, 200, "{r:?}");
    let v = r.json();
    assert_eq!(v["protocol"], "agent-data/v1");
    v
}

fn post(addr: &str, path: &str, bearer: &str, ct: &str, body: &str) -> Resp {
    send(
        addr,
        format!("POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {bearer}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes(),
        false,
    )
}

fn feed_len(addr: &str) -> usize {
    let r = send(
        addr,
        format!("GET /v1/data/changes?limit=1000 HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").as_bytes(),
        false,
    );
    assert_eq!(r.status, 200, "{r:?}");
    r.json()["changes"].as_array().expect("changes").len()
}

/// What a hostile request must not change.
#[derive(Debug, PartialEq)]
struct State {
    feed: usize,
    files: BTreeMap<String, String>,
}

fn state(s: &Server) -> State {
    State {
        feed: feed_len(&s.addr),
        files: snapshot_files(&s.data_dir),
    }
}

/// After a case: the manifest answers and nothing changed.
fn intact(s: &Server, before: &State, case: &str) {
    manifest(&s.addr);
    assert_eq!(&state(s), before, "state changed by {case}");
}

const COLLECT: &str =
    r#"{"collection_id":"default","collector_id":"text","input":{"text":"smuggled"}}"#;

#[test]
fn framing_refusals_are_typed_json_and_change_nothing() {
    let s = full_server(&["--max-header-bytes", "4096", "--max-headers", "20"]);
    let a = s.addr.as_str();
    let before = state(&s);
    let head = |extra: &str, body: &str| {
        format!(
            "POST /v1/data/collect HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n{extra}\r\n{body}"
        )
    };
    let n = COLLECT.len();
    // Content-Length: exactly one, digits only; never with Transfer-Encoding.
    let length_cases = [
        format!("Content-Length: {n}\r\nContent-Length: {}\r\n", n + 5),
        format!("Content-Length: {n}\r\nContent-Length: {n}\r\n"),
        format!("Content-Length: +{n}\r\n"),
        "Content-Length: -1\r\n".to_owned(),
        format!("Content-Length: {n},{n}\r\n"),
        format!("Content-Length: {n} {n}\r\n"),
        "Content-Length: 0x10\r\n".to_owned(),
        "Content-Length: \r\n".to_owned(),
        "Content-Length: 99999999999999999999\r\n".to_owned(),
        format!("Content-Length: {n}\r\nTransfer-Encoding: chunked\r\n"),
        format!("Transfer-Encoding: chunked\r\nContent-Length: {n}\r\n"),
    ];
    for extra in &length_cases {
        let r = send(a, head(extra, COLLECT).as_bytes(), false);
        r.refused(400, "invalid_content_length").closes();
        intact(&s, &before, extra);
    }
    // The leftover bytes of a refused head never run as a request.
    let smuggle = head(
        "Content-Length: 0\r\nContent-Length: 140\r\n",
        &format!(
            "GET /v1/data/collections HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
        ),
    );
    let mut c = connect(a);
    c.write_all(smuggle.as_bytes()).expect("write");
    read_response(&mut c)
        .expect("refusal")
        .refused(400, "invalid_content_length")
        .closes();
    assert!(closed(&mut c), "a second response followed the refusal");
    intact(&s, &before, "smuggled request");

    // Transfer-Encoding other than one plain `chunked`.
    for extra in [
        "Transfer-Encoding: gzip\r\n",
        "Transfer-Encoding: chunked, chunked\r\n",
        "Transfer-Encoding: gzip, chunked\r\n",
        "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n",
    ] {
        let r = send(a, head(extra, "0\r\n\r\n").as_bytes(), false);
        r.refused(400, "invalid_request").closes();
        intact(&s, &before, extra);
    }
    // A malformed chunked body.
    let r = send(
        a,
        head("Transfer-Encoding: chunked\r\n", "zz\r\n{}\r\n0\r\n\r\n").as_bytes(),
        false,
    );
    r.refused(400, "invalid_request").closes();
    intact(&s, &before, "bad chunk size");

    // Malformed heads: bad header names and values, request lines, NUL and
    // invalid UTF-8 in the path, duplicate Host.
    let heads: Vec<Vec<u8>> = vec![
        b"GET /.well-known/agent-data HTTP/1.1\r\nBad Name: x\r\n\r\n".to_vec(),
        b"GET /.well-known/agent-data HTTP/1.1\r\nX(y): x\r\n\r\n".to_vec(),
        b"GET /.well-known/agent-data HTTP/1.1\r\n: x\r\n\r\n".to_vec(),
        b"GET /.well-known/agent-data HTTP/1.1\r\nX-A: a\x01b\r\n\r\n".to_vec(),
        b"GET /.well-known/agent-data HTTP/1.1\r\nno colon here\r\n\r\n".to_vec(),
        b"GARBAGE\r\n\r\n".to_vec(),
        b"GET /.well-known/agent-data HTTP/9.9\r\n\r\n".to_vec(),
        b"GET /.well-known/agent-data\r\n\r\n".to_vec(),
        b"GET  /.well-known/agent-data HTTP/1.1\r\n\r\n".to_vec(),
        b"G\x00T / HTTP/1.1\r\n\r\n".to_vec(),
        b"GET /v1/data/records/\x00 HTTP/1.1\r\n\r\n".to_vec(),
        b"GET /v1/data/records/\xff\xfe HTTP/1.1\r\n\r\n".to_vec(),
        "GET /v1/data/records/\u{e9} HTTP/1.1\r\n\r\n"
            .as_bytes()
            .to_vec(),
        b"GET /.well-known/agent-data HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n".to_vec(),
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
        // An HTTP/1.1 request without Host (RFC 9112 section 3.2), and two
        // credentials or two media types a proxy and a route could read
        // differently.
        b"GET /.well-known/agent-data HTTP/1.1\r\nX-A: b\r\n\r\n".to_vec(),
        format!("GET /v1/data/collections HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nAuthorization: Bearer other\r\n\r\n").into_bytes(),
        format!("POST /v1/data/query HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 2\r\n\r\n{{}}").into_bytes(),
    ];
    for h in &heads {
        let r = send(a, h, false);
        r.refused(400, "invalid_request").closes();
        intact(&s, &before, &String::from_utf8_lossy(h));
    }
    // Percent-encoded invalid UTF-8 reaches the router, which refuses it.
    let r = send(a, format!("GET /v1/data/records/rec_%ff%fe HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").as_bytes(), false);
    r.refused(400, "invalid_path");
    intact(&s, &before, "percent-encoded invalid UTF-8");

    // Oversize head (over --max-header-bytes) and too many header lines.
    let big = format!(
        "GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\nX-Pad: {}\r\n\r\n",
        "p".repeat(5000)
    );
    send(a, big.as_bytes(), false)
        .refused(431, "header_too_large")
        .closes();
    let unterminated = format!(
        "GET /.well-known/agent-data HTTP/1.1\r\nX-Pad: {}",
        "p".repeat(5000)
    );
    send(a, unterminated.as_bytes(), false)
        .refused(431, "header_too_large")
        .closes();
    let many: String = (0..21).map(|i| format!("X-H{i}: v\r\n")).collect();
    let r = send(
        a,
        format!("GET /.well-known/agent-data HTTP/1.1\r\n{many}\r\n").as_bytes(),
        false,
    );
    r.refused(431, "header_too_large").closes();
    intact(&s, &before, "oversize heads");

    // A truncated body, then half-close: typed, nothing committed.
    let r = send(
        a,
        head(&format!("Content-Length: {n}\r\n"), &COLLECT[..n / 2]).as_bytes(),
        true,
    );
    r.refused(400, "invalid_request").closes();
    intact(&s, &before, "truncated body");
    // A head cut short by a half-close.
    let r = send(
        a,
        format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n").as_bytes(),
        true,
    );
    r.refused(400, "invalid_request").closes();
    intact(&s, &before, "truncated head");

    // Wrong methods: 405 once authenticated, 401 before.
    for (m, p) in [
        ("PUT", "/v1/data/collect"),
        ("DELETE", "/v1/data/records/x"),
        ("PATCH", "/v1/data/query"),
    ] {
        let r = send(a, format!("{m} {p} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 0\r\n\r\n").as_bytes(), false);
        r.refused(405, "method_not_allowed");
        let r = send(
            a,
            format!("{m} {p} HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes(),
            false,
        );
        r.refused(401, "unauthorized");
    }
    let r = send(
        a,
        format!("DELETE {MCP} HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes(),
        false,
    );
    r.refused(405, "method_not_allowed");
    let r = send(
        a,
        format!(
            "PUT {OPS} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {}\r\n\r\n",
            s.agent.as_deref().expect("agent")
        )
        .as_bytes(),
        false,
    );
    r.refused(405, "method_not_allowed");
    // Wrong media types and oversize declared bodies, on every body route.
    let agent = s.agent.clone().expect("agent");
    for (p, bearer) in [
        ("/v1/data/query", TOKEN),
        (OPS, agent.as_str()),
        (MCP, agent.as_str()),
    ] {
        post(a, p, bearer, "text/plain", "{}")
            .refused(415, "unsupported_media_type")
            .closes();
        let r = send(a, format!("POST {p} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {bearer}\r\nContent-Type: application/json\r\nContent-Length: 99999999\r\n\r\n").as_bytes(), false);
        r.refused(413, "request_too_large").closes();
    }
    post(a, UPLOAD, &agent, "application/json", "{}").refused(415, "unsupported_media_type");
    intact(&s, &before, "methods and media types");

    // A valid request after all of it, and the agent's token still works.
    let r = post(
        a,
        OPS,
        &agent,
        "application/json",
        r#"{"operation":"capabilities"}"#,
    );
    assert_eq!(r.status, 200, "{r:?}");
    intact(&s, &before, "capabilities");
}

#[test]
fn the_bearer_is_checked_before_a_byte_of_the_body() {
    // One worker and a long body deadline: a server that read (or waited
    // for) the body before the bearer would answer 408 after a minute,
    // not 401, and would hold its only worker meanwhile.
    let s = full_server(&["--workers", "1", "--body-timeout-ms", "60000"]);
    let a = s.addr.as_str();
    let agent = s.agent.clone().expect("agent");
    let before = state(&s);
    let routes = [
        ("/v1/data/collect", "application/json"),
        ("/v1/data/query", "application/json"),
        ("/v1/data/records/rec_0/tombstone", "application/json"),
        (OPS, "application/json"),
        (UPLOAD, "application/octet-stream"),
        (MCP, "application/json"),
    ];
    // Twelve at once, each declaring a 1,000,000-byte body and sending none.
    let mut open = Vec::new();
    for i in 0..12 {
        let (p, ct) = routes[i % routes.len()];
        let mut c = connect(a);
        c.write_all(format!("POST {p} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer bogus-{i}\r\nContent-Type: {ct}\r\nContent-Length: 1000000\r\n\r\n").as_bytes()).expect("write");
        open.push((p, c));
    }
    for (p, c) in &mut open {
        let r = read_response(c).unwrap_or_else(|| panic!("no answer on {p}"));
        r.refused(401, "unauthorized").closes();
    }
    manifest(a);
    // With Expect: 100-continue the refusal comes instead of `100 Continue`.
    let mut c = connect(a);
    c.write_all(format!("POST {OPS} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer bogus\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nContent-Length: 1000000\r\n\r\n").as_bytes()).expect("write");
    read_response(&mut c)
        .expect("answer")
        .refused(401, "unauthorized");
    // A workspace body is not decoded before the token: invalid JSON with a
    // bogus token is 401, not invalid_json.
    post(a, OPS, "bogus", "application/json", "{not json").refused(401, "unauthorized");
    post(a, MCP, "bogus", "application/json", "{not json").refused(401, "unauthorized");
    post(a, UPLOAD, "bogus", "application/octet-stream", "xx").refused(401, "unauthorized");
    // Missing bearer and a body: the prefix guard refuses first.
    let r = send(a, format!("POST {OPS} HTTP/1.1\r\nHost: {a}\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\n\r\n").as_bytes(), false);
    r.refused(401, "unauthorized");
    // A client that does send its refused body still reads the refusal
    // (the server lingers instead of resetting the connection).
    let mut c = connect(a);
    c.write_all(format!("POST {UPLOAD} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer bogus\r\nContent-Type: application/octet-stream\r\nContent-Length: 300000\r\n\r\n").as_bytes()).expect("write");
    let _ = c.write_all(&vec![0u8; 300_000]);
    read_response(&mut c)
        .expect("answer")
        .refused(401, "unauthorized");
    // The real token still passes, on the same routes.
    let r = post(
        a,
        OPS,
        &agent,
        "application/json",
        r#"{"operation":"capabilities"}"#,
    );
    assert_eq!(r.status, 200, "{r:?}");
    intact(&s, &before, "bogus bearers");
}

/// Writes `bytes` one at a time, `gap` apart (over and over if `repeat`,
/// at most 600 bytes), from a second handle of the connection, until the
/// server closes it.
fn trickle(
    c: &TcpStream,
    bytes: Vec<u8>,
    repeat: bool,
    gap: Duration,
) -> std::thread::JoinHandle<()> {
    let mut w = c.try_clone().expect("clone");
    std::thread::spawn(move || {
        let n = if repeat { 600 } else { bytes.len().min(600) };
        for b in bytes.iter().cycle().take(n) {
            if w.write_all(&[*b]).is_err() {
                return;
            }
            std::thread::sleep(gap);
        }
    })
}

#[test]
fn slow_heads_and_bodies_get_408_and_the_manifest_keeps_answering() {
    // Meanwhile: one worker and long deadlines, so the manifest has to be
    // answered while both slow requests are still in progress.
    let s = data_server(&[
        "--workers",
        "1",
        "--head-timeout-ms",
        "120000",
        "--min-head-rate",
        "0",
        "--body-timeout-ms",
        "120000",
    ]);
    let a = s.addr.as_str();
    let before = state(&s);
    let mut slow_head = connect(a);
    slow_head
        .write_all(format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n").as_bytes())
        .expect("write");
    let t1 = trickle(
        &slow_head,
        b"X-Slow: 1\r\n".to_vec(),
        true,
        Duration::from_millis(100),
    );
    let mut slow_body = connect(a);
    slow_body.write_all(format!("POST /v1/data/collect HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 200000\r\n\r\n").as_bytes()).expect("write");
    let t2 = trickle(&slow_body, b" ".to_vec(), true, Duration::from_millis(100));
    for _ in 0..3 {
        manifest(a);
        assert_eq!(feed_len(a), before.feed);
    }
    for c in [&slow_head, &slow_body] {
        c.set_nonblocking(true).expect("nonblocking");
        let mut b = [0u8; 1];
        let pending =
            matches!(c.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        assert!(pending, "a slow request was answered before the manifest");
        c.set_nonblocking(false).expect("blocking");
    }
    for c in [&slow_head, &slow_body] {
        let _ = c.shutdown(Shutdown::Both);
    }
    let _ = (t1.join(), t2.join());
    drop(s);

    // The deadlines: short, and the clients keep trickling past them.
    let s = data_server(&[
        "--workers",
        "1",
        "--head-timeout-ms",
        "600",
        "--body-timeout-ms",
        "600",
    ]);
    let a = s.addr.as_str();
    let before = state(&s);
    let mut c = connect(a);
    c.write_all(format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n").as_bytes())
        .expect("write");
    let t = trickle(
        &c,
        b"X-Slow: 1\r\n".to_vec(),
        true,
        Duration::from_millis(50),
    );
    read_response(&mut c)
        .expect("408")
        .refused(408, "request_timeout")
        .closes();
    let _ = t.join();
    intact(&s, &before, "slow head");
    // The body deadline, with the body trickling and with nothing sent.
    for trickling in [true, false] {
        let mut c = connect(a);
        c.write_all(format!("POST /v1/data/collect HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n", COLLECT.len()).as_bytes()).expect("write");
        // Never the whole body: it cannot complete, whatever the timing.
        let part = COLLECT.as_bytes()[..COLLECT.len() - 1].to_vec();
        let t = trickling.then(|| trickle(&c, part, false, Duration::from_millis(50)));
        read_response(&mut c)
            .expect("408")
            .refused(408, "request_timeout")
            .closes();
        if let Some(t) = t {
            let _ = t.join();
        }
        intact(&s, &before, "slow body");
    }
    // A connection that never sends a byte is closed without an answer,
    // and so is a kept-alive one after its idle timeout.
    let mut idle = connect(a);
    assert!(closed(&mut idle));
    let mut kept = connect(a);
    kept.write_all(format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes())
        .expect("write");
    let r = read_response(&mut kept).expect("manifest");
    assert_eq!((r.status, r.header("connection")), (200, None));
    assert!(closed(&mut kept));
    intact(&s, &before, "silent connections");
}

#[test]
fn past_the_request_cap_new_requests_get_503_server_busy() {
    let s = data_server(&[
        "--max-connections",
        "2",
        "--accept-backlog",
        "1",
        "--accept-backlog-ms",
        "200",
        "--body-timeout-ms",
        "120000",
        "--head-timeout-ms",
        "120000",
        "--min-head-rate",
        "0",
    ]);
    let a = s.addr.as_str();
    let before = state(&s);
    // Half-sent heads hold no request slot: with ten of them open, a
    // complete request is still served.
    let heads: Vec<TcpStream> = (0..10)
        .map(|_| {
            let mut c = connect(a);
            c.write_all(b"GET /.well-known/agent-data HTTP/1.1\r\n")
                .expect("write");
            c
        })
        .collect();
    manifest(a);
    drop(heads);
    // A request in progress holds one: a query whose body has not come.
    // `100 Continue` is sent when the body is first read, after the slot
    // was taken, so both slots are held once it is read.
    let q = r#"{"text":"hello"}"#;
    let hold = |c: &mut TcpStream| {
        c.write_all(format!("POST /v1/data/query HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n", q.len()).as_bytes())
            .expect("write");
        let r = read_response(c).expect("100 Continue");
        assert_eq!(r.status, 100, "{r:?}");
    };
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = connect(a);
            hold(&mut c);
            c
        })
        .collect();
    // Keep-alive on a held slot is unaffected: finish one held request,
    // then hold the slot again with the next one.
    held[0].write_all(q.as_bytes()).expect("write");
    let r = read_response(&mut held[0]).expect("query");
    assert_eq!((r.status, r.header("connection")), (200, None), "{r:?}");
    hold(&mut held[0]);
    for _ in 0..3 {
        let r = send(
            a,
            format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes(),
            false,
        );
        r.refused(503, "server_busy").closes();
        assert!(r.header("retry-after").is_some());
    }
    // A slot frees when a held connection closes; the next one is served
    // (the close is noticed asynchronously: a few tries, no clock).
    drop(held.remove(0));
    let served = (0..50).any(|_| {
        let r = send(
            a,
            format!(
                "GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\n\r\n"
            )
            .as_bytes(),
            false,
        );
        r.status == 200
    });
    assert!(served, "no connection was served after a slot freed");
    drop(held);
    let served = (0..50).any(|_| {
        let get = format!("GET /v1/data/changes HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
        send(a, get.as_bytes(), false).status == 200
    });
    assert!(served);
    intact(&s, &before, "connection cap");
}

#[test]
fn valid_requests_keep_alive_pipeline_and_stream_as_before() {
    let s = data_server(&[]);
    let a = s.addr.as_str();
    // Several requests on one connection, two of them pipelined, one with a
    // body: each answered in order, the connection stays open.
    let mut c = connect(a);
    let q = r#"{"text":"hello"}"#;
    let one = format!(
        "POST /v1/data/query HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{q}",
        q.len()
    );
    let two = format!(
        "GET /v1/data/collections HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
    );
    c.write_all(format!("{one}{two}").as_bytes())
        .expect("write");
    for _ in 0..2 {
        let r = read_response(&mut c).expect("answer");
        assert_eq!(r.status, 200, "{r:?}");
        assert_eq!(r.header("connection"), None);
        assert_eq!(r.header("cache-control"), Some("no-store"));
    }
    c.write_all(two.as_bytes()).expect("write");
    assert_eq!(read_response(&mut c).expect("third").status, 200);
    // A chunked body is accepted; its connection closes after the answer.
    let body = r#"{"collection_id":"default","collector_id":"text","input":{"text":"chunked"}}"#;
    let (x, y) = body.split_at(10);
    let chunked = format!(
        "POST /v1/data/collect HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{x}\r\n{:x};ext=1\r\n{y}\r\n0\r\n\r\n",
        x.len(),
        y.len()
    );
    let mut c = connect(a);
    c.write_all(chunked.as_bytes()).expect("write");
    let r = read_response(&mut c).expect("answer");
    assert_eq!(r.status, 200, "{r:?}");
    assert_eq!(r.json()["records"][0]["collection_id"], "default");
    assert_eq!(r.header("connection"), Some("close"));
    // A body larger than the read-ahead window streams to the handler.
    let big = format!(
        r#"{{"collection_id":"default","collector_id":"text","input":{{"text":"{}"}}}}"#,
        "w ".repeat(200_000)
    );
    let r = post(a, "/v1/data/collect", TOKEN, "application/json", &big);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(json!(feed_len(a)), json!(2));
}

#[test]
fn a_client_that_never_reads_its_answers_is_dropped() {
    // Pipelined manifest requests, none of the answers read: once the
    // socket buffers are full the server's write makes no progress, and
    // after --send-timeout-ms it drops the connection (a reset, since our
    // requests sit unread), so a write here fails. A server that held the
    // connection would leave this write blocked until SAFETY (TimedOut).
    let s = data_server(&["--send-timeout-ms", "300"]);
    let a = s.addr.as_str();
    let before = state(&s);
    let mut c = connect(a);
    let one = format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n\r\n");
    let batch = one.repeat(64);
    let mut failed = None;
    for _ in 0..100_000 {
        if let Err(e) = c.write_all(batch.as_bytes()) {
            failed = Some(e);
            break;
        }
    }
    let e = failed.expect("the server never dropped the connection");
    assert!(
        matches!(
            e.kind(),
            std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::BrokenPipe
        ),
        "{e:?}"
    );
    intact(&s, &before, "a client that never reads");
}

/// Hostile bodies, ids and cursors on every route family (issue #11, part
/// 2): deep nesting, invalid UTF-8, NUL, overlong strings, encoded
/// traversal in record ids, garbage cursors, duplicate keys per route and
/// wrong media types. Each is one typed JSON error with the documented
/// status (or, on the `/v1/data/*` routes, the reference's last-value-wins
/// for duplicate keys); the manifest keeps answering and nothing changes.
mod bodies {
    use super::*;

    fn raw_post(addr: &str, path: &str, bearer: &str, ct: &str, body: &[u8]) -> Resp {
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {bearer}\r\nContent-Type: {ct}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        send(addr, &req, false)
    }

    fn get(addr: &str, target: &str) -> Resp {
        send(
            addr,
            format!("GET {target} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n").as_bytes(),
            false,
        )
    }

    fn nested(depth: usize) -> String {
        format!("{}1{}", "[".repeat(depth), "]".repeat(depth))
    }

    #[test]
    fn data_routes_refuse_hostile_bodies_ids_and_cursors() {
        let s = full_server(&[]);
        let a = s.addr.as_str();
        let before = state(&s);
        let json = "application/json";
        let collect = |input: &str| {
            format!(r#"{{"collection_id":"default","collector_id":"text","input":{input}}}"#)
        };
        let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
            // Deep nesting (the node's bound is 64).
            (
                "collect deep",
                "/v1/data/collect",
                collect(&format!(
                    r#"{{"text":"x","metadata":{{"a":{}}}}}"#,
                    nested(80)
                ))
                .into_bytes(),
                400,
                "invalid_json",
            ),
            (
                "query deep",
                "/v1/data/query",
                format!(r#"{{"where":{{"metadata":{{"a":{}}}}}}}"#, nested(80)).into_bytes(),
                400,
                "invalid_json",
            ),
            // Invalid UTF-8 and a raw NUL (JSON forbids raw control bytes).
            (
                "collect utf8",
                "/v1/data/collect",
                [collect(r#"{"text":""#).as_bytes(), b"\xff\xfe\"}}"].concat(),
                400,
                "invalid_json",
            ),
            (
                "query nul",
                "/v1/data/query",
                b"{\"text\":\"a\x00b\"}".to_vec(),
                400,
                "invalid_json",
            ),
            (
                "collection nul",
                "/v1/data/collect",
                br#"{"collection_id":"def\u0000ault","collector_id":"text","input":{"text":"x"}}"#
                    .to_vec(),
                400,
                "invalid_collection_id",
            ),
            // Overlong strings.
            (
                "collection overlong",
                "/v1/data/collect",
                format!(
                    r#"{{"collection_id":"{}","collector_id":"text","input":{{"text":"x"}}}}"#,
                    "c".repeat(10_000)
                )
                .into_bytes(),
                400,
                "invalid_collection_id",
            ),
            (
                "collector overlong",
                "/v1/data/collect",
                format!(
                    r#"{{"collection_id":"default","collector_id":"{}","input":{{}}}}"#,
                    "t".repeat(10_000)
                )
                .into_bytes(),
                404,
                "collector_not_found",
            ),
            (
                "query overlong",
                "/v1/data/query",
                format!(r#"{{"text":"{}"}}"#, "q".repeat(1_100_000)).into_bytes(),
                413,
                "request_too_large",
            ),
            (
                "tombstone bad id",
                "/v1/data/records/..%2F..%2Fetc%2Fpasswd/tombstone",
                b"{}".to_vec(),
                400,
                "invalid_record_id",
            ),
        ];
        for (name, path, body, status, code) in &cases {
            let r = raw_post(a, path, TOKEN, json, body);
            r.refused(*status, code);
            intact(&s, &before, name);
        }
        // Wrong media types on each JSON route.
        for path in [
            "/v1/data/collect",
            "/v1/data/query",
            &format!("/v1/data/records/rec_{}/tombstone", "a".repeat(64)),
        ] {
            for ct in [
                "text/plain",
                "application/x-www-form-urlencoded",
                "application/jsonx",
                "",
            ] {
                raw_post(a, path, TOKEN, ct, br#"{}"#).refused(415, "unsupported_media_type");
            }
            intact(&s, &before, "media type");
        }
        // Encoded traversal and junk in record ids.
        for id in [
            "..%2F..%2Fetc%2Fpasswd",
            "%2e%2e",
            "rec_%2e%2e%2f",
            &format!("rec_{}%00", "a".repeat(64)),
            &format!("rec_{}", "A".repeat(64)),
            &format!("rec_{}", "a".repeat(10_000)),
            "rec_%C0%AE%C0%AE",
        ] {
            let r = get(a, &format!("/v1/data/records/{id}"));
            assert!(
                matches!(r.status, 400 | 404),
                "{id}: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
            let code = r.json()["error"].as_str().expect("code").to_owned();
            assert!(
                ["invalid_record_id", "invalid_path", "not_found"].contains(&code.as_str()),
                "{id}: {code}"
            );
            r.refused(r.status, &code);
        }
        intact(&s, &before, "record ids");
        // Garbage cursors.
        // A well-formed cursor of another node's feed.
        let other_feed = format!(
            "adc1.{}",
            data_b64(br#"{"c":null,"f":"feed_00000000-0000-4000-8000-000000000000","s":1}"#)
        );
        for cursor in [
            "garbage".to_owned(),
            "adc1.".to_owned(),
            "adc1.!!!!".to_owned(),
            other_feed,
            format!("adc1.{}", "A".repeat(5000)),
            "adc1.%00".to_owned(),
        ] {
            get(a, &format!("/v1/data/changes?cursor={cursor}")).refused(400, "invalid_cursor");
        }
        get(a, "/v1/data/changes?limit=0").refused(400, "invalid_query");
        intact(&s, &before, "cursors");
    }

    /// Base64url without padding (the cursor alphabet).
    fn data_b64(bytes: &[u8]) -> String {
        const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n = chunk.iter().fold(0u32, |acc, b| (acc << 8) | u32::from(*b))
                << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
            }
        }
        out
    }

    #[test]
    fn workspace_mcp_and_upload_refuse_duplicate_keys_and_hostile_bodies() {
        let s = full_server(&[]);
        let a = s.addr.as_str();
        let tok = s.agent.clone().expect("agent token");
        let before = state(&s);
        let json = "application/json";
        // The issue's example: the last `operation` would have run.
        let r = raw_post(
            a,
            OPS,
            &tok,
            json,
            br#"{"operation":"nope","operation":"capabilities"}"#,
        );
        let v = r.refused(400, "invalid_json").json();
        assert_eq!(v["details"]["reason"], "duplicate_key", "{v}");
        for (name, body, code, reason) in [
            (
                "nested dup",
                br#"{"operation":"claim","task_id":"t","request_id":"r","executor":{"a":1,"a":2}}"#
                    .to_vec(),
                "invalid_json",
                Some("duplicate_key"),
            ),
            (
                "escaped dup",
                br#"{"operation":"capabilities","\u006fperation":"next"}"#.to_vec(),
                "invalid_json",
                Some("duplicate_key"),
            ),
            (
                "deep",
                format!(r#"{{"operation":"capabilities","x":{}}}"#, nested(100)).into_bytes(),
                "invalid_json",
                Some("too_deep"),
            ),
            (
                "utf8",
                b"{\"operation\":\"capabilities\xff\"}".to_vec(),
                "invalid_json",
                Some("invalid"),
            ),
            (
                "nul",
                b"{\"operation\":\"cap\x00abilities\"}".to_vec(),
                "invalid_json",
                Some("invalid"),
            ),
            (
                "escaped nul",
                br#"{"operation":"capabilities\u0000"}"#.to_vec(),
                "invalid_request",
                None,
            ),
            ("not an object", b"[1,2]".to_vec(), "invalid_json", None),
            (
                "unknown field",
                br#"{"operation":"capabilities","x":1}"#.to_vec(),
                "invalid_request",
                None,
            ),
            (
                "overlong",
                format!(
                    r#"{{"operation":"next","change_id":"{}"}}"#,
                    "c".repeat(100_000)
                )
                .into_bytes(),
                "invalid_input",
                None,
            ),
        ] {
            let r = raw_post(a, OPS, &tok, json, &body);
            let got = r.json()["error"].as_str().unwrap_or("").to_owned();
            assert_eq!(got, code, "{name}: {}", String::from_utf8_lossy(&r.body));
            let v = r.refused(r.status, code).json();
            if let Some(reason) = reason {
                assert_eq!(v["details"]["reason"], reason, "{name}: {v}");
            }
            intact(&s, &before, name);
        }
        raw_post(
            a,
            OPS,
            &tok,
            "text/plain",
            br#"{"operation":"capabilities"}"#,
        )
        .refused(415, "unsupported_media_type");
        // MCP: a duplicate key or deep nesting is a -32600 with id null
        // (HTTP 400); invalid requests with an id get -32600 with that id.
        for body in [
            br#"{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}"#.to_vec(),
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"next","arguments":{"change_id":"a","change_id":"b"}}}"#.to_vec(),
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":{}}}}}"#, nested(100)).into_bytes(),
        ] {
            let r = raw_post(a, MCP, &tok, json, &body);
            assert_eq!(r.status, 400, "{}", String::from_utf8_lossy(&r.body));
            let v = r.json();
            assert_eq!((v["id"].clone(), v["error"]["code"].clone()), (Value::Null, json!(-32600)), "{v}");
        }
        for (body, id) in [
            (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, json!(1)),
            (r#"{"jsonrpc":"2.0","id":"x","method":null}"#, json!("x")),
            (r#"{"jsonrpc":"1.0","id":2,"method":"ping"}"#, json!(2)),
            (r#"{"jsonrpc":"2.0","id":3}"#, json!(3)),
            (
                r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":"p"}"#,
                json!(4),
            ),
        ] {
            let r = raw_post(a, MCP, &tok, json, body.as_bytes());
            assert_eq!(
                r.status,
                200,
                "{body}: {}",
                String::from_utf8_lossy(&r.body)
            );
            let v = r.json();
            assert_eq!(v["jsonrpc"], "2.0");
            assert_eq!(v["id"], id, "{body}: {v}");
            assert_eq!(v["error"]["code"], -32600, "{body}: {v}");
        }
        for body in [
            r#"{"jsonrpc":"2.0","id":1.5,"method":"ping"}"#,
            r#"{"jsonrpc":"2.0","method":7}"#,
        ] {
            let r = raw_post(a, MCP, &tok, json, body.as_bytes());
            assert_eq!(r.status, 400, "{body}");
            assert_eq!(r.json()["id"], Value::Null);
        }
        raw_post(a, MCP, &tok, "text/plain", b"{}").refused(415, "unsupported_media_type");
        intact(&s, &before, "mcp");
        // Collector upload: a transfer whose header repeats a key is
        // refused before anything else (its signature is never looked at).
        let header = br#"{"version":1,"version":1}"#;
        let mut t = b"ATXFER1\n".to_vec();
        t.extend_from_slice(&(header.len() as u32).to_be_bytes());
        t.extend_from_slice(header);
        t.extend_from_slice(&[0u8; 64]);
        let v = raw_post(a, UPLOAD, &tok, "application/octet-stream", &t)
            .refused(400, "transfer_invalid")
            .json();
        assert_eq!(v["details"]["reason"], "duplicate_key", "{v}");
        raw_post(a, UPLOAD, &tok, json, &t).refused(415, "unsupported_media_type");
        intact(&s, &before, "upload");
    }

    /// A Host outside the allow-list (DNS rebinding, a misrouted proxy) is
    /// 421 before any route runs, on every route family, with a valid
    /// bearer and body; encoded traversal in the workspace path segments
    /// and MCP query is a typed refusal. Nothing runs, nothing changes.
    #[test]
    fn misdirected_hosts_and_traversal_in_workspace_paths_run_nothing() {
        let s = full_server(&[]);
        let a = s.addr.as_str();
        let port = a.rsplit_once(':').expect("port").1;
        let tok = s.agent.clone().expect("agent token");
        let before = state(&s);
        let json = "application/json";
        let with_host = |host: &str, path: &str, bearer: &str, body: &str| {
            send(
                a,
                format!("POST {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nAuthorization: Bearer {bearer}\r\nContent-Type: {json}\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes(),
                false,
            )
        };
        let mcp_call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let claim = r#"{"operation":"capabilities"}"#;
        for host in [
            format!("evil.test:{port}"),
            "127.0.0.1".to_owned(),
            format!("127.0.0.1:{}", port.parse::<u32>().expect("p") + 1),
            format!("127.0.0.2:{port}"),
            format!("localhost.evil.test:{port}"),
            format!("[::2]:{port}"),
            "".to_owned(),
        ] {
            for (path, bearer, body) in [
                ("/v1/data/collect", TOKEN, COLLECT),
                (OPS, tok.as_str(), claim),
                (MCP, tok.as_str(), mcp_call),
            ] {
                let e = with_host(&host, path, bearer, body)
                    .refused(421, "misdirected_request")
                    .json();
                assert_eq!(e["details"]["allowed_hosts"][0], a, "{e}");
            }
            intact(&s, &before, &format!("host {host:?}"));
        }
        // Encoded traversal in the workspace repository and profile: no
        // such profile (the names are compared, never joined to a path),
        // or a path that does not decode to UTF-8.
        for (repo, profile, path_code) in [
            ("..%2F..%2Fetc", "default", (404, "not_found")),
            ("%2e%2e", "default", (404, "not_found")),
            ("demo-basic", "..%2Fdefault", (404, "not_found")),
            ("demo-basic%00", "default", (404, "not_found")),
            ("demo-basic", "%C0%AE%C0%AE", (400, "invalid_path")),
        ] {
            let path =
                format!("/v1/hub/workspace/repositories/{repo}/profiles/{profile}/agent-tasks");
            post(a, &path, &tok, json, claim).refused(path_code.0, path_code.1);
            let q = format!("/v1/hub/workspace/mcp?repository={repo}&profile={profile}");
            post(a, &q, &tok, json, mcp_call).refused(404, "not_found");
            intact(&s, &before, &path);
        }
    }
}

/// A fair share of connection slots (issue 28, item 5): every agent, the
/// hostile one included, connects from 127.0.0.1, so no per-address cap
/// can help. Connections still reading a head hold a place in the head
/// budget, apart from the request slots; a full budget drops its oldest
/// connection, never the newcomer; a head must start within the
/// first-byte deadline and arrive at the minimum rate.
mod slots {
    use super::*;

    /// Deadlines out of the way: only the head budget can protect anyone.
    const NO_DEADLINES: [&str; 6] = [
        "--head-timeout-ms",
        "120000",
        "--first-byte-timeout-ms",
        "120000",
        "--min-head-rate",
        "0",
    ];

    /// Whether the server ended `s` (EOF or reset) without sending a byte;
    /// `false` if nothing happened within [`SAFETY`] (the connection is
    /// still held).
    fn dropped_silently(s: &mut TcpStream) -> bool {
        let mut b = [0u8; 1];
        match s.read(&mut b) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionReset | std::io::ErrorKind::ConnectionAborted
            ),
        }
    }

    /// Whether `s` is still open with nothing to read (the server neither
    /// answered nor closed it), looked at now without waiting.
    fn still_waiting(s: &TcpStream) -> bool {
        s.set_nonblocking(true).expect("nonblocking");
        let mut b = [0u8; 1];
        let open = matches!(s.peek(&mut b), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        s.set_nonblocking(false).expect("blocking");
        open
    }

    /// A half-sent head: the first `n` bytes of a POST to `path` with a
    /// bogus bearer, without the blank line that ends it.
    fn half_head(a: &str, path: &str, n: usize) -> Vec<u8> {
        let full = format!(
            "POST {path} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer not-a-token\r\nContent-Type: application/json\r\nContent-Length: 30\r\n"
        );
        full.as_bytes()[..n.clamp(1, full.len())].to_vec()
    }

    fn result(r: &Resp) -> Value {
        assert_eq!(r.status, 200, "the agent was refused: {r:?}");
        r.json()["result"].clone()
    }

    #[test]
    fn four_hundred_half_sent_heads_never_keep_an_authenticated_agent_out() {
        let setup = Setup::new();
        let (tests, _notes) = setup.checkpoint();
        setup.env.run(&["data", "init"]).json();
        let cfg = crate::common::workspace_http::write_config(&setup);
        let (child, addr) = spawn(&setup.env.data_dir, Some(&cfg), &NO_DEADLINES);
        let agent = crate::common::workspace_http::token(&setup);
        let s = Server {
            child,
            addr,
            data_dir: setup.env.data_dir.clone(),
            agent: Some(agent.clone()),
            _setup: None,
            _env: None,
        };
        let a = s.addr.as_str();
        // 400 connections from 127.0.0.1, as the agent's own: a third
        // send nothing, the rest a head cut short; all stay open.
        let mut hostile: Vec<TcpStream> = (0..400)
            .map(|i| {
                let mut c = connect(a);
                if i % 3 != 0 {
                    c.write_all(&half_head(a, OPS, 20 + i)).expect("write");
                }
                c
            })
            .collect();
        // The agent works meanwhile, each request on a new connection:
        // every one is answered, none with 503 server_busy.
        let op = |body: Value| post(a, OPS, &agent, "application/json", &body.to_string());
        for _ in 0..3 {
            let caps = result(&op(json!({"operation": "capabilities"})));
            assert!(caps["operations"].as_array().is_some_and(|o| !o.is_empty()));
        }
        let next = result(&op(
            json!({"operation": "next", "change_id": setup.change_id}),
        ));
        assert_eq!(
            next["next"],
            json!({"operation": "claim", "task_id": tests})
        );
        let claim = result(&op(
            json!({"operation": "claim", "task_id": tests, "request_id": "c-1", "lease_ms": 60000}),
        ));
        let att = claim["attempt"]["attempt_id"]
            .as_str()
            .expect("attempt")
            .to_owned();
        for i in 0..3 {
            let hb = result(&op(
                json!({"operation": "heartbeat", "attempt_id": att, "fence": 1, "request_id": format!("hb-{i}")}),
            ));
            assert_eq!(hb["state"], "leased");
        }
        // Meanwhile the flood kept only its newest heads: the oldest was
        // dropped without a word, the newest is still waiting.
        let newest = hostile.pop().expect("newest");
        assert!(
            still_waiting(&newest),
            "the newest half-sent head was dropped"
        );
        assert!(
            dropped_silently(&mut hostile[0]),
            "the oldest half-sent head still holds its connection"
        );
        // And a keep-alive agent: several requests on one connection.
        let mut kept = connect(a);
        for i in 0..3 {
            let body = json!({"operation": "heartbeat", "attempt_id": att, "fence": 1, "request_id": format!("hb-kept-{i}")}).to_string();
            kept.write_all(
                format!("POST {OPS} HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {agent}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len())
                    .as_bytes(),
            )
            .expect("write");
            let r = read_response(&mut kept).expect("answer");
            assert_eq!(result(&r)["state"], "leased");
        }
        drop(hostile);
        manifest(a);
    }

    #[test]
    fn a_full_head_budget_drops_its_oldest_connection_never_the_newcomer() {
        // One request slot, and a request past it waits for the slot: a
        // request on another connection is served only once the kept-alive
        // one below has given its slot back.
        let mut flags = vec![
            "--head-budget",
            "4",
            "--idle-timeout-ms",
            "120000",
            "--max-connections",
            "1",
            "--accept-backlog",
            "1",
            "--accept-backlog-ms",
            "60000",
        ];
        flags.extend(NO_DEADLINES);
        let s = data_server(&flags);
        let a = s.addr.as_str();
        let before = state(&s);
        // A kept-alive connection between two requests waits for a head
        // like a new connection: it holds a place, and can lose it.
        let mut kept = connect(a);
        kept.write_all(
            format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n\r\n").as_bytes(),
        )
        .expect("write");
        let r = read_response(&mut kept).expect("manifest");
        assert_eq!((r.status, r.header("connection")), (200, None));
        // The server takes the kept-alive connection's place when hyper
        // asks for its next head, which may come after the client has read
        // the answer; the gate gives the request slot back in that same
        // step, just before. So once this request is served, the kept-alive
        // connection holds the oldest place in the budget.
        manifest(a);
        // Eight half-sent heads after it: five entries too many for four
        // places, so the kept-alive one and the four oldest heads go.
        let mut heads: Vec<TcpStream> = (0..8)
            .map(|i| {
                let mut c = connect(a);
                c.write_all(&half_head(a, "/v1/data/collect", 10 + i))
                    .expect("write");
                c
            })
            .collect();
        assert!(
            dropped_silently(&mut kept),
            "the idle kept-alive connection"
        );
        for (i, c) in heads.iter_mut().enumerate().take(4) {
            assert!(dropped_silently(c), "half-sent head {i} still held");
        }
        // The newest heads are still there and can finish.
        for c in &heads[4..] {
            assert!(still_waiting(c));
        }
        let last = heads.last_mut().expect("last");
        let mut rest = half_head(a, "/v1/data/collect", usize::MAX)[10 + 7..].to_vec();
        rest.extend_from_slice(b"\r\n");
        // A bogus bearer: answered 401 at once (the body is never waited
        // for), which shows the head arrived whole.
        last.write_all(&rest).expect("write");
        read_response(last)
            .expect("answer")
            .refused(401, "unauthorized");
        // A client that sends its head at once is always served, the
        // budget still full of half-sent heads.
        for _ in 0..3 {
            manifest(a);
        }
        drop(heads);
        intact(&s, &before, "head budget");
    }

    #[test]
    fn a_head_that_does_not_start_or_crawls_is_dropped() {
        let s = data_server(&[
            "--first-byte-timeout-ms",
            "300",
            "--min-head-rate",
            "1000",
            "--head-timeout-ms",
            "120000",
        ]);
        let a = s.addr.as_str();
        let before = state(&s);
        // Nothing sent: closed without an answer at the first-byte
        // deadline, long before the head deadline (past SAFETY).
        let mut silent = connect(a);
        assert!(dropped_silently(&mut silent), "a silent connection is held");
        // A head crawling at 10 bytes a second, far under 1000: 408.
        let mut c = connect(a);
        c.write_all(format!("GET /.well-known/agent-data HTTP/1.1\r\nHost: {a}\r\n").as_bytes())
            .expect("write");
        let t = trickle(
            &c,
            b"X-Slow: 1\r\n".to_vec(),
            true,
            Duration::from_millis(100),
        );
        let r = read_response(&mut c).expect("408");
        r.refused(408, "request_timeout").closes();
        assert!(
            r.json()["message"]
                .as_str()
                .is_some_and(|m| m.contains("1000 bytes per second")),
            "{r:?}"
        );
        let _ = t.join();
        // A head sent at once is served as before.
        manifest(a);
        intact(&s, &before, "slow heads");
    }
}
