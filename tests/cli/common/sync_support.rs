//! Sync test support: a scripted loopback peer (a raw HTTP/1.1 server in
//! the test process that answers page requests with a closure, used to
//! replay the reference's captured pages and their tampered copies), and
//! destination set-up with the vector file's keys.

use crate::common::{Output, TestEnv, run_cmd};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::sync::{Arc, Mutex};

/// The page vectors.
pub fn vectors() -> Value {
    serde_json::from_str(include_str!(
        "../../../fixtures/sync/agent-data-sync-page-vectors.json"
    ))
    .expect("page vectors")
}

/// `issued_at` of every captured grant, as RFC 3339.
pub const VECTOR_NOW: &str = "2026-07-11T00:00:00Z";

/// One request the fake peer saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A reply: status, content type, body.
pub type Reply = (u16, String, Vec<u8>);

/// A scripted peer on an ephemeral loopback port.
pub struct FakePeer {
    pub origin: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
}

impl FakePeer {
    pub fn start(answer: impl Fn(&Seen) -> Reply + Send + 'static) -> FakePeer {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let origin = format!("http://{}", l.local_addr().expect("addr"));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for s in l.incoming() {
                let Ok(mut s) = s else { continue };
                let mut r = BufReader::new(s.try_clone().expect("clone"));
                let mut line = String::new();
                if r.read_line(&mut line).is_err() {
                    continue;
                }
                let path = line.split(' ').nth(1).unwrap_or("").to_owned();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if r.read_line(&mut h).is_err() || h == "\r\n" || h.is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.trim_end().split_once(':') {
                        headers.push((k.trim().to_owned(), v.trim().to_owned()));
                    }
                }
                let n: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0u8; n];
                if r.read_exact(&mut body).is_err() {
                    continue;
                }
                let seen = Seen {
                    path,
                    headers,
                    body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                };
                let (status, ct, out) = answer(&seen);
                log.lock().expect("log").push(seen);
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: {ct}\r\nContent-Length: {}\r\nConnection: close\r\n{}\r\n",
                    out.len(),
                    if (300..400).contains(&status) {
                        "Location: http://127.0.0.1:1/\r\n"
                    } else {
                        ""
                    }
                );
                let _ = s.write_all(head.as_bytes());
                let _ = s.write_all(&out);
            }
        });
        FakePeer { origin, seen }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().expect("log").clone()
    }
}

/// A JSON reply.
pub fn json_reply(status: u16, v: &Value) -> Reply {
    (
        status,
        "application/json; charset=utf-8".into(),
        v.to_string().into_bytes(),
    )
}

/// Serves the captured reference pages (page 1 without a cursor, page 2
/// for page 1's cursor), each passed through `edit` first.
pub fn reference_peer(edit: impl Fn(usize, &mut Value) + Send + 'static) -> FakePeer {
    let d = vectors();
    FakePeer::start(move |s| {
        let idx = if s.body.get("cursor").is_some() { 1 } else { 0 };
        let mut page = d["pages"][idx]["response_page"].clone();
        edit(idx, &mut page);
        json_reply(200, &page)
    })
}

/// Writes an owner-only file.
pub fn secret_file(env: &TestEnv, name: &str, text: &str) -> std::path::PathBuf {
    let p = env.path(name);
    std::fs::write(&p, text).expect("write");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    p
}

/// Runs with the clock pinned.
pub fn run_at(env: &TestEnv, now: &str, args: &[&str]) -> Output {
    run_cmd(env.cmd().env("AGENT_TASK_TEST_NOW", now).args(args))
}

/// A destination node holding the vector's destination keys.
pub fn vector_destination(id: &str) -> TestEnv {
    let env = TestEnv::init();
    env.run(&["data", "init"]).json();
    let keys = secret_file(
        &env,
        "dest-keys.json",
        r#"{"ed25519_seed":"MzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM","x25519_secret":"IiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiIiI"}"#,
    );
    let v = env
        .run(&[
            "sync",
            "keygen",
            "--id",
            id,
            "--import",
            keys.to_str().expect("p"),
        ])
        .json();
    if id == "did:example:sync-destination" {
        assert_eq!(v["recipient"], vectors()["destination"]["recipient_object"]);
    }
    env
}

/// Adds the vector's source as peer `src` at `origin` with `publisher_key`.
pub fn add_vector_peer(env: &TestEnv, origin: &str, publisher_key: &str) -> Output {
    let tok = secret_file(env, "page.token", "dest-page-token\n");
    env.run(&[
        "sync",
        "peer",
        "add",
        "--peer",
        "src",
        "--origin",
        origin,
        "--node-id",
        "node_source",
        "--publisher-id",
        "did:example:sync-source",
        "--publisher-key",
        publisher_key,
        "--page-token-file",
        tok.to_str().expect("p"),
    ])
}

/// The vector's publisher key.
pub const PUBLISHER_KEY: &str = "0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzc";
