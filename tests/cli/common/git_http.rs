//! A real git server on loopback for `land --push`: `git http-backend`
//! (git's own smart-HTTP CGI program) behind a small HTTP/1.1 to CGI
//! bridge that requires HTTP basic auth, so the push goes through git's
//! credential machinery (and `agent-task forge credential`) as it would
//! against a forge. Every request is logged (method, path, user, status).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// One request the server answered.
#[derive(Debug, Clone)]
pub struct Logged {
    pub method: String,
    pub path: String,
    pub query: String,
    /// The user of a valid Authorization header.
    pub user: Option<String>,
    /// Whether an Authorization header was sent and refused.
    pub bad_auth: bool,
    pub status: u16,
}

pub struct GitServer {
    pub addr: String,
    pub root: PathBuf,
    log: Arc<Mutex<Vec<Logged>>>,
    stop: Arc<AtomicBool>,
}

impl Drop for GitServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.addr);
    }
}

impl GitServer {
    /// Serves the bare repositories under `root`, for `user`:`password`.
    pub fn start(root: &Path, user: &str, password: &str) -> GitServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr").to_string();
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let want = format!("{user}:{password}");
        let (root2, log2, stop2) = (root.to_path_buf(), log.clone(), stop.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (root, log, want) = (root2.clone(), log2.clone(), want.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &root, &want, &log);
                });
            }
        });
        GitServer {
            addr,
            root: root.to_path_buf(),
            log,
            stop,
        }
    }

    /// The URL of the bare repository `name` (e.g. `demo.git`).
    pub fn url(&self, name: &str) -> String {
        format!("http://{}/{name}", self.addr)
    }

    /// The URL with the credential in it (for the test's own clones).
    pub fn url_with(&self, name: &str, user: &str, password: &str) -> String {
        format!("http://{user}:{password}@{}/{name}", self.addr)
    }

    pub fn requests(&self) -> Vec<Logged> {
        self.log.lock().expect("log").clone()
    }
}

fn read_body(
    r: &mut BufReader<TcpStream>,
    headers: &BTreeMap<String, String>,
) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    if headers
        .get("transfer-encoding")
        .map(|v| v.to_ascii_lowercase())
        == Some("chunked".into())
    {
        loop {
            let mut line = String::new();
            r.read_line(&mut line)?;
            let n = usize::from_str_radix(line.trim().split(';').next().unwrap_or("0"), 16)
                .unwrap_or(0);
            if n == 0 {
                let mut end = String::new();
                r.read_line(&mut end)?;
                break;
            }
            let mut chunk = vec![0; n];
            r.read_exact(&mut chunk)?;
            body.extend_from_slice(&chunk);
            let mut crlf = [0u8; 2];
            r.read_exact(&mut crlf)?;
        }
    } else if let Some(n) = headers.get("content-length") {
        let n: usize = n.trim().parse().unwrap_or(0);
        body.resize(n, 0);
        r.read_exact(&mut body)?;
    }
    Ok(body)
}

fn serve(
    conn: TcpStream,
    root: &Path,
    want: &str,
    log: &Mutex<Vec<Logged>>,
) -> std::io::Result<()> {
    let mut w = conn.try_clone()?;
    let mut r = BufReader::new(conn);
    let mut first = String::new();
    r.read_line(&mut first)?;
    let mut parts = first.split_whitespace();
    let method = parts.next().unwrap_or("").to_owned();
    let target = parts.next().unwrap_or("").to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut line = String::new();
        if r.read_line(&mut line)? == 0 {
            break;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    if headers
        .get("expect")
        .map(|v| v.eq_ignore_ascii_case("100-continue"))
        == Some(true)
    {
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    let body = read_body(&mut r, &headers)?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let sent = headers.get("authorization").and_then(|a| {
        let b64 = a.strip_prefix("Basic ")?;
        let raw = data_encoding::BASE64.decode(b64.trim().as_bytes()).ok()?;
        String::from_utf8(raw).ok()
    });
    let user = sent
        .as_deref()
        .filter(|s| *s == want)
        .and_then(|s| s.split_once(':').map(|(u, _)| u.to_owned()));
    let mut entry = Logged {
        method: method.clone(),
        path: path.to_owned(),
        query: query.to_owned(),
        user: user.clone(),
        bad_auth: sent.is_some() && user.is_none(),
        status: 401,
    };
    let Some(user) = user else {
        log.lock().expect("log").push(entry);
        w.write_all(
            b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic realm=\"git\"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
        )?;
        return Ok(());
    };
    let mut c = std::process::Command::new("git");
    c.arg("http-backend")
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", &method)
        .env("PATH_INFO", path)
        .env("QUERY_STRING", query)
        .env("REMOTE_USER", &user)
        .env("REMOTE_ADDR", "127.0.0.1")
        .env("CONTENT_LENGTH", body.len().to_string())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    for (h, var) in [
        ("content-type", "CONTENT_TYPE"),
        ("content-encoding", "HTTP_CONTENT_ENCODING"),
        ("git-protocol", "HTTP_GIT_PROTOCOL"),
    ] {
        if let Some(v) = headers.get(h) {
            c.env(var, v);
        }
    }
    let mut child = c.spawn()?;
    let mut stdin = child.stdin.take().expect("stdin");
    let feeder = std::thread::spawn(move || {
        let _ = stdin.write_all(&body);
    });
    let mut out = Vec::new();
    child.stdout.take().expect("stdout").read_to_end(&mut out)?;
    let _ = feeder.join();
    let _ = child.wait();
    let split = out
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| out.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2)));
    let (head, payload) = match split {
        Some((i, n)) => (
            String::from_utf8_lossy(&out[..i]).into_owned(),
            &out[i + n..],
        ),
        None => (String::new(), &out[..]),
    };
    let mut status = "200 OK".to_owned();
    let mut resp = Vec::new();
    let mut hdrs = String::new();
    for line in head.lines() {
        if let Some(s) = line.strip_prefix("Status:") {
            status = s.trim().to_owned();
        } else if !line.is_empty() {
            hdrs.push_str(line.trim_end());
            hdrs.push_str("\r\n");
        }
    }
    entry.status = status
        .split_whitespace()
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200);
    log.lock().expect("log").push(entry);
    resp.extend_from_slice(
        format!(
            "HTTP/1.1 {status}\r\n{hdrs}Content-Length: {}\r\nConnection: close\r\n\r\n",
            payload.len()
        )
        .as_bytes(),
    );
    resp.extend_from_slice(payload);
    w.write_all(&resp)?;
    w.flush()
}
