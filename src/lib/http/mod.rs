//! The HTTP shim (tiny_http): a worker pool serving a [`router::Router`].
//! The data routes live in [`data_routes`]; later faces (workspace tasks,
//! MCP) mount their own routes and guards on the same router.

pub mod data_routes;
pub mod mcp;
pub mod router;
pub mod workspace;

use crate::error::{Code, Error, Result};
use router::{Method, Request, Router};
use std::sync::Arc;

/// Whether a bind host is loopback (`localhost`, `::1`, `127.x.y.z`),
/// after lowercasing and stripping brackets and a trailing dot.
pub fn is_loopback_host(host: &str) -> bool {
    let h = host
        .to_ascii_lowercase()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_owned();
    if h == "localhost" || h == "::1" {
        return true;
    }
    let parts: Vec<&str> = h.split('.').collect();
    parts.len() == 4
        && parts[0] == "127"
        && parts[1..]
            .iter()
            .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
}

/// Splits `host:port` (IPv6 in brackets).
pub fn split_bind(bind: &str) -> Result<(String, u16)> {
    let bad = || {
        Error::new(
            Code::Usage,
            format!("--bind must be HOST:PORT, got {bind:?}"),
        )
    };
    let (host, port) = bind.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    if host.is_empty() {
        return Err(bad());
    }
    Ok((host.to_owned(), port))
}

/// A bound server.
pub struct Server {
    inner: Arc<tiny_http::Server>,
    /// The local address actually bound.
    pub local_addr: std::net::SocketAddr,
}

impl Server {
    /// Binds `bind` (`host:port`).
    pub fn bind(bind: &str) -> Result<Server> {
        let inner = tiny_http::Server::http(bind)
            .map_err(|e| Error::new(Code::ServerBindFailed, format!("cannot bind {bind}: {e}")))?;
        let local_addr = inner.server_addr().to_ip().ok_or_else(|| {
            Error::new(Code::ServerBindFailed, "bound address is not an IP socket")
        })?;
        Ok(Server {
            inner: Arc::new(inner),
            local_addr,
        })
    }

    /// Serves forever with `workers` threads.
    pub fn run(self, router: Arc<Router>, workers: usize) -> Result<()> {
        let mut handles = Vec::new();
        for i in 0..workers.max(1) {
            let server = self.inner.clone();
            let router = router.clone();
            let fallback_host = self.local_addr.to_string();
            let h = std::thread::Builder::new()
                .name(format!("http-{i}"))
                .spawn(move || {
                    while let Ok(rq) = server.recv() {
                        handle(&router, rq, &fallback_host);
                    }
                })
                .map_err(|e| Error::internal(format!("cannot start a worker: {e}")))?;
            handles.push(h);
        }
        for h in handles {
            let _ = h.join();
        }
        Ok(())
    }
}

fn handle(router: &Router, mut rq: tiny_http::Request, fallback_host: &str) {
    let method = match rq.method() {
        tiny_http::Method::Get => Method::Get,
        tiny_http::Method::Post => Method::Post,
        _ => Method::Other,
    };
    let url = rq.url().to_owned();
    let (path, query) = match url.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (url.clone(), None),
    };
    let headers: Vec<(String, String)> = rq
        .headers()
        .iter()
        .map(|h| {
            (
                h.field.as_str().as_str().to_owned(),
                h.value.as_str().to_owned(),
            )
        })
        .collect();
    let host = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("host"))
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| fallback_host.to_owned());
    let content_length = rq.body_length();
    let resp = {
        let mut req = Request {
            method,
            path,
            query,
            headers,
            origin: format!("http://{host}"),
            content_length,
            body: rq.as_reader(),
            params: Vec::new(),
        };
        router.dispatch(&mut req)
    };
    let mut out = tiny_http::Response::from_data(resp.body)
        .with_status_code(resp.status)
        .with_chunked_threshold(usize::MAX);
    let mut add = |k: &str, v: &str| {
        if let Ok(h) = tiny_http::Header::from_bytes(k.as_bytes(), v.as_bytes()) {
            out.add_header(h);
        }
    };
    add("Content-Type", resp.content_type);
    add("Cache-Control", "no-store");
    for (k, v) in &resp.headers {
        add(k, v);
    }
    let _ = rq.respond(out);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback() {
        for h in ["localhost", "LOCALHOST.", "[::1]", "127.0.0.1", "127.1.2.3"] {
            assert!(is_loopback_host(h), "{h}");
        }
        for h in ["0.0.0.0", "::", "10.0.0.1", "127.0.0.1.5", "example.com"] {
            assert!(!is_loopback_host(h), "{h}");
        }
    }
}
