//! Test support for the data node over HTTP: a served node (real binary,
//! killed on drop) and a raw HTTP/1.1 client that can also send malformed
//! requests.

use crate::common::TestEnv;
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

pub const TOKEN: &str = "test-node-bearer-0123456789";

/// A running `agent-task serve`.
pub struct Served {
    pub child: Child,
    pub addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `serve` on an ephemeral loopback port.
pub fn serve(env: &TestEnv, token: Option<&str>) -> Served {
    let mut c = Command::new(crate::common::bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args([
            "--data-dir",
            env.data_dir.to_str().expect("p"),
            "serve",
            "--bind",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if let Some(t) = token {
        c.env("AGENT_TASK_NODE_TOKEN", t);
    }
    let mut child = c.spawn().expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read listening line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"));
    let url = v["listening"].as_str().expect("listening");
    Served {
        child,
        addr: url.trim_start_matches("http://").to_owned(),
    }
}

/// One HTTP response.
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Asserts a flat error with this status and code.
    pub fn error(&self, status: u16, code: &str) -> Value {
        assert_eq!(
            self.status,
            status,
            "expected {status} {code}: {}",
            String::from_utf8_lossy(&self.body)
        );
        assert!(
            self.header("content-type")
                .unwrap_or("")
                .starts_with("application/json"),
            "{self:?}"
        );
        let v = self.json();
        assert_eq!(v["error"], code, "{v}");
        assert!(v["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
        assert!(v.get("details").is_none_or(Value::is_object), "{v}");
        v
    }

    pub fn ok(&self) -> Value {
        assert_eq!(self.status, 200, "{}", String::from_utf8_lossy(&self.body));
        assert_eq!(self.header("cache-control"), Some("no-store"));
        self.json()
    }
}

/// Sends raw request bytes and reads the whole response (Connection: close).
pub fn raw(addr: &str, request: &[u8]) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.write_all(request).expect("write");
    let mut buf = Vec::new();
    let _ = s.read_to_end(&mut buf);
    parse(&buf)
}

fn parse(buf: &[u8]) -> Resp {
    let end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end: {:?}", String::from_utf8_lossy(buf)));
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status");
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let mut body = buf[end + 4..].to_vec();
    if let Some(cl) = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
    {
        let n: usize = cl.1.parse().expect("content-length");
        body.truncate(n);
    }
    Resp {
        status,
        headers,
        body,
    }
}

/// A request with optional bearer and JSON body.
pub fn req(addr: &str, method: &str, path: &str, bearer: Option<&str>, body: Option<&str>) -> Resp {
    req_ct(addr, method, path, bearer, body, "application/json")
}

/// As [`req`] with an explicit content type.
pub fn req_ct(
    addr: &str,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<&str>,
    ct: &str,
) -> Resp {
    let mut r = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\n"
    );
    if let Some(b) = bearer {
        r.push_str(&format!("Authorization: Bearer {b}\r\n"));
    }
    if let Some(body) = body {
        r.push_str(&format!(
            "Content-Type: {ct}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        ));
    } else {
        r.push_str("\r\n");
    }
    raw(addr, r.as_bytes())
}

/// Authenticated GET.
pub fn get(addr: &str, path: &str) -> Resp {
    req(addr, "GET", path, Some(TOKEN), None)
}

/// Authenticated JSON POST.
pub fn post(addr: &str, path: &str, body: &Value) -> Resp {
    req(addr, "POST", path, Some(TOKEN), Some(&body.to_string()))
}
