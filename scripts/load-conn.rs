//! The lean HTTP/1.1 client of the load drivers (`scripts/authority-load.rs`,
//! `scripts/data-load.rs`): one hyper connection over tokio, kept alive,
//! its request head built once. The drivers run every client as a task
//! of one current-thread runtime, so the generator costs little of the
//! CPU the server it measures shares with it (a thread per client with
//! ureq cost about eight times as much per request).

/// A loopback `http://` URL split into what a connection needs.
pub struct Target {
    /// The address to connect to (`host:port`; an IPv6 host keeps its
    /// brackets, so this is also the Host header).
    pub authority: String,
    /// The URL's path.
    pub path: String,
}

impl Target {
    /// Parses `url`; only loopback hosts are accepted.
    pub fn parse(url: &str) -> Result<Target, String> {
        if !(url.starts_with("http://127.")
            || url.starts_with("http://localhost")
            || url.starts_with("http://[::1]"))
        {
            return Err(format!("{url}: loopback URLs only"));
        }
        let parsed = url::Url::parse(url).map_err(|e| format!("{url}: {e}"))?;
        let host = parsed.host_str().ok_or_else(|| format!("{url}: no host"))?;
        let port = parsed
            .port_or_known_default()
            .ok_or_else(|| format!("{url}: no port"))?;
        Ok(Target {
            authority: format!("{host}:{port}"),
            path: parsed.path().to_owned(),
        })
    }
}

/// One kept-alive HTTP/1.1 connection that POSTs JSON to one path with
/// one bearer token.
pub struct Conn {
    send: hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    host: String,
    path: String,
    auth: String,
}

impl Conn {
    /// Connects (inside a tokio runtime: the connection's task is spawned
    /// on it).
    pub async fn open(target: &Target, token: &str) -> Result<Conn, String> {
        let addr = target.authority.as_str();
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| format!("connect {addr}: {e}"))?;
        tcp.set_nodelay(true).map_err(|e| format!("nodelay: {e}"))?;
        let (send, conn) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        tokio::spawn(conn);
        Ok(Conn {
            send,
            host: target.authority.clone(),
            path: target.path.clone(),
            auth: format!("Bearer {token}"),
        })
    }

    /// POSTs `body`: the answer's status and body (at most 16 MiB), or
    /// `transport: …` when the exchange itself failed.
    pub async fn post(&mut self, body: Vec<u8>) -> Result<(u16, bytes::Bytes), String> {
        use http_body_util::BodyExt;
        let req = http::Request::post(self.path.as_str())
            .header(http::header::HOST, self.host.as_str())
            .header(http::header::AUTHORIZATION, self.auth.as_str())
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from(body)))
            .map_err(|e| format!("request: {e}"))?;
        self.send
            .ready()
            .await
            .map_err(|e| format!("transport: {e}"))?;
        let resp = self
            .send
            .send_request(req)
            .await
            .map_err(|e| format!("transport: {e}"))?;
        let status = resp.status().as_u16();
        let bytes = http_body_util::Limited::new(resp.into_body(), 16 * 1024 * 1024)
            .collect()
            .await
            .map_err(|e| format!("transport: {e}"))?
            .to_bytes();
        Ok((status, bytes))
    }
}

/// What the drivers read of an answer that is not a 200: its error code.
#[derive(serde::Deserialize)]
struct Refusal<'a> {
    #[serde(borrow)]
    error: Option<std::borrow::Cow<'a, str>>,
}

/// The error code of a refused answer (`http NNN: not JSON` when its body
/// is not a JSON object, `no_code` when it has no `error`).
pub fn refusal_code(status: u16, body: &[u8]) -> String {
    match serde_json::from_slice::<Refusal<'_>>(body) {
        Ok(r) => r.error.as_deref().unwrap_or("no_code").to_owned(),
        Err(_) => format!("http {status}: not JSON"),
    }
}

/// This process's CPU time so far (user + system), in seconds, from
/// `/proc/self/stat` (clock ticks of 1/100 s: Linux's fixed USER_HZ).
pub fn own_cpu_seconds() -> Result<f64, String> {
    let stat =
        std::fs::read_to_string("/proc/self/stat").map_err(|e| format!("/proc/self/stat: {e}"))?;
    // The command name may hold spaces; the fields after it do not.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime: fields 14 and 15 of the line, 11 and 12 after `)`.
    let tick = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    match (tick(11), tick(12)) {
        (Some(u), Some(s)) => Ok((u + s) as f64 / 100.0),
        _ => Err("/proc/self/stat: no utime/stime".to_owned()),
    }
}
