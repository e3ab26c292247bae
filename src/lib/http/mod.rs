//! The HTTP shim: hyper's HTTP/1 server on a small tokio runtime
//! ([`server`]), behind a validating head reader ([`gate`]), serving a
//! [`router::Router`] whose blocking handlers run on a bounded pool. The
//! data routes live in [`data_routes`]; the workspace task routes and MCP
//! mount their own routes and guards on the same router. See
//! `docs/http.md`.

pub mod budget;
pub mod dashboard;
pub mod data_routes;
pub mod gate;
pub mod hosts;
pub mod mcp;
pub mod mcp_data;
pub mod mcp_wire;
pub mod pool;
pub mod router;
pub mod server;
pub mod shared;
pub mod sync_routes;
pub mod tls;
pub mod workspace;

use crate::error::{Code, Error, Result};
use router::Router;
use std::sync::Arc;

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

/// Mounts the workspace routes and the workspace MCP endpoint (the two
/// modules do not import each other: MCP calls into the workspace).
pub fn mount_workspace(router: &mut Router, ws: Arc<workspace::Workspace>) {
    workspace::mount(router, ws.clone());
    mcp::mount(router, ws);
}

/// A bound server.
pub struct Server {
    listener: std::net::TcpListener,
    /// The local address actually bound.
    pub local_addr: std::net::SocketAddr,
}

impl Server {
    /// Binds `bind` (`host:port`).
    pub fn bind(bind: &str) -> Result<Server> {
        let listener = std::net::TcpListener::bind(bind)
            .map_err(|e| Error::new(Code::ServerBindFailed, format!("cannot bind {bind}: {e}")))?;
        let local_addr = listener.local_addr().map_err(|e| {
            Error::new(
                Code::ServerBindFailed,
                format!("bound address unknown: {e}"),
            )
        })?;
        Ok(Server {
            listener,
            local_addr,
        })
    }

    /// Serves forever within `limits` (`limits.workers` handler threads),
    /// as `front` says (TLS or not, the host allow-list).
    pub fn run(
        self,
        router: Arc<Router>,
        limits: server::Limits,
        front: server::Front,
    ) -> Result<()> {
        server::serve(self.listener, router, limits, front)
    }
}
