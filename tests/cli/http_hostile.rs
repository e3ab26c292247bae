//! `agent-task serve` against a hostile client: real sockets on loopback
//! against a real server process with short limits (flags), one case at a
//! time. Every refusal must be one JSON error object with the documented
//! status (and `Connection: close` where the framing is broken); after
//! each case the server still answers the public manifest and nothing was
//! written (change-feed length and the data directory's files unchanged).
//! No assertion is on elapsed time: a deadline is shown by its 408, an
//! early answer by its status (a server that waited for the body would
//! answer 408, not 401).

use crate::common::snapshot_files;
use crate::data_support::TOKEN;
use crate::task_support::Setup;
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
    let env = crate::data_core::data_env();
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
    let cfg = crate::workspace_http::write_config(&s);
    let (child, addr) = spawn(&s.env.data_dir, Some(&cfg), flags);
    let agent = crate::workspace_http::token(&s);
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
        b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n",
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
        "--body-timeout-ms",
        "120000",
    ]);
    let a = s.addr.as_str();
    let before = state(&s);
    let mut slow_head = connect(a);
    slow_head
        .write_all(b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n")
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
    c.write_all(b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n")
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
    kept.write_all(b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n\r\n")
        .expect("write");
    let r = read_response(&mut kept).expect("manifest");
    assert_eq!((r.status, r.header("connection")), (200, None));
    assert!(closed(&mut kept));
    intact(&s, &before, "silent connections");
}

#[test]
fn past_the_connection_cap_new_connections_get_503_server_busy() {
    let s = data_server(&[
        "--max-connections",
        "2",
        "--accept-backlog",
        "1",
        "--accept-backlog-ms",
        "200",
        "--head-timeout-ms",
        "120000",
    ]);
    let a = s.addr.as_str();
    let before = state(&s);
    // Two connections hold both slots (a partial head keeps them open).
    let mut held: Vec<TcpStream> = (0..2)
        .map(|_| {
            let mut c = connect(a);
            c.write_all(b"GET /.well-known/agent-data HTTP/1.1\r\n")
                .expect("write");
            c
        })
        .collect();
    // Keep-alive on a held slot is unaffected: finish one held request.
    held[0].write_all(b"Host: x\r\n\r\n").expect("write");
    assert_eq!(read_response(&mut held[0]).expect("manifest").status, 200);
    for _ in 0..3 {
        let r = send(
            a,
            b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\n\r\n",
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
            b"GET /.well-known/agent-data HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
            false,
        );
        r.status == 200
    });
    assert!(served, "no connection was served after a slot freed");
    drop(held);
    let served = (0..50).any(|_| {
        let get = format!("GET /v1/data/changes HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
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
