//! The allow-list of the names this server answers to: the `Host` of
//! every request and the `Origin` of an MCP request must name one of them,
//! so that a DNS-rebinding page (whose requests carry the attacker's name)
//! or a misdirected request is refused before any route runs.
//!
//! Built from the bound address and the operator's `--public-name` values;
//! a loopback bind also allows `localhost`, `127.0.0.1` and `[::1]`. Every
//! entry is a (host, port) pair; a name given without a port gets the bound
//! port. The manifest's `base_url` stays the origin the client addressed
//! (the reference runner checks it equals the origin it asked), which is
//! safe because that origin is now always one of these names.

use crate::error::{Code, Error, Result};
use std::net::{IpAddr, SocketAddr};

/// The names a server answers to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostAllowList {
    entries: Vec<(String, u16)>,
    scheme: &'static str,
}

/// Lowercased, trailing dot removed, IPv6 literals without brackets.
fn normalise_host(h: &str) -> String {
    let h = h.trim().to_ascii_lowercase();
    let h = h.strip_suffix('.').unwrap_or(&h);
    h.trim_start_matches('[').trim_end_matches(']').to_owned()
}

/// Splits `host[:port]` / `[v6][:port]`; `None` when malformed.
fn split_authority(s: &str) -> Option<(String, Option<u16>)> {
    let s = s.trim();
    if s.is_empty() || s.bytes().any(|b| b <= b' ' || b == b'/' || b == b'@') {
        return None;
    }
    let (host, port) = if let Some(rest) = s.strip_prefix('[') {
        let (h, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (h.to_owned(), port)
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) if !h.contains(':') => (h.to_owned(), Some(p)),
            Some(_) => return None,
            None => (s.to_owned(), None),
        }
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.len() <= 5 && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse().ok()?)
        }
        Some(_) => return None,
    };
    let host = normalise_host(&host);
    if host.is_empty() {
        return None;
    }
    Some((host, port))
}

impl HostAllowList {
    /// The list for a server bound at `local` (the address actually bound,
    /// so an ephemeral port is known) from `bind_host` as the operator wrote
    /// it, with `public_names` (`NAME` or `NAME:PORT`), serving `https`
    /// when `tls`. A wildcard bind (`0.0.0.0`, `::`) names no host, so it
    /// needs at least one public name.
    pub fn new(
        bind_host: &str,
        local: SocketAddr,
        public_names: &[String],
        tls: bool,
    ) -> Result<HostAllowList> {
        let port = local.port();
        let mut entries: Vec<(String, u16)> = Vec::new();
        let mut add = |h: String, p: u16| {
            if !entries.iter().any(|(eh, ep)| *eh == h && *ep == p) {
                entries.push((h, p));
            }
        };
        let wildcard = local.ip().is_unspecified();
        if !wildcard {
            add(normalise_host(bind_host), port);
            add(normalise_host(&local.ip().to_string()), port);
        }
        if crate::net::is_loopback_host(bind_host) || local.ip().is_loopback() {
            for h in ["localhost", "127.0.0.1", "::1"] {
                add(h.to_owned(), port);
            }
        }
        for n in public_names {
            let (h, p) = split_authority(n).ok_or_else(|| {
                Error::new(
                    Code::Usage,
                    format!("--public-name must be NAME or NAME:PORT, got {n:?}"),
                )
            })?;
            add(h, p.unwrap_or(port));
        }
        if wildcard && public_names.is_empty() {
            return Err(Error::new(
                Code::Config,
                format!(
                    "a wildcard bind ({}) names no host: pass --public-name for every name clients use",
                    local.ip()
                ),
            )
            .with("fix", "add --public-name NAME (repeatable)"));
        }
        Ok(HostAllowList {
            entries,
            scheme: if tls { "https" } else { "http" },
        })
    }

    /// The scheme the server speaks (`http` or `https`).
    pub fn scheme(&self) -> &'static str {
        self.scheme
    }

    fn default_port(&self) -> u16 {
        if self.scheme == "https" { 443 } else { 80 }
    }

    fn allows(&self, host: &str, port: u16) -> bool {
        self.entries.iter().any(|(h, p)| *h == host && *p == port)
    }

    /// Whether a `Host` header value names this server (a missing port is
    /// the scheme's default, as RFC 9110 says).
    pub fn allows_host(&self, host_header: &str) -> bool {
        match split_authority(host_header) {
            Some((h, p)) => self.allows(&h, p.unwrap_or(self.default_port())),
            None => false,
        }
    }

    /// Whether an `Origin` header value is this server: same scheme and an
    /// allowed (host, port).
    pub fn allows_origin(&self, origin: &str) -> bool {
        let Some(rest) = origin
            .strip_prefix(self.scheme)
            .and_then(|r| r.strip_prefix("://"))
        else {
            return false;
        };
        self.allows_host(rest)
    }

    /// The `misdirected_request` refusal (421).
    pub fn refusal(&self, host_header: Option<&str>) -> Error {
        let shown: String = host_header
            .unwrap_or("")
            .chars()
            .take(128)
            .collect::<String>();
        Error::new(
            Code::MisdirectedRequest,
            format!("this server does not answer to the host {shown:?}"),
        )
        .with(
            "allowed_hosts",
            self.entries
                .iter()
                .map(|(h, p)| {
                    if h.parse::<IpAddr>().is_ok_and(|ip| ip.is_ipv6()) {
                        format!("[{h}]:{p}")
                    } else {
                        format!("{h}:{p}")
                    }
                })
                .collect::<Vec<_>>(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(bind: &str, addr: &str, names: &[&str], tls: bool) -> Result<HostAllowList> {
        let names: Vec<String> = names.iter().map(|s| (*s).to_owned()).collect();
        HostAllowList::new(bind, addr.parse().expect("addr"), &names, tls)
    }

    #[test]
    fn loopback_binds_allow_the_loopback_names_on_the_port() {
        let l = list("127.0.0.1", "127.0.0.1:7742", &[], false).expect("list");
        for h in [
            "127.0.0.1:7742",
            "localhost:7742",
            "LOCALHOST.:7742",
            "[::1]:7742",
        ] {
            assert!(l.allows_host(h), "{h}");
        }
        for h in [
            "127.0.0.1:7743",
            "localhost",
            "evil.example:7742",
            "evil.example",
            "127.0.0.1:7742:1",
            "[::1",
            "user@localhost:7742",
            "localhost:+7742",
            "localhost:07742x",
            "",
            "localhost:7742/x",
        ] {
            assert!(!l.allows_host(h), "{h}");
        }
        assert!(l.allows_origin("http://localhost:7742"));
        assert!(l.allows_origin("http://[::1]:7742"));
        assert!(!l.allows_origin("https://localhost:7742"));
        assert!(!l.allows_origin("http://evil.example:7742"));
        assert!(!l.allows_origin("null"));
    }

    #[test]
    fn public_names_and_default_ports() {
        let l = list(
            "0.0.0.0",
            "0.0.0.0:8443",
            &["node.example.com", "Alias.Example.com:443"],
            true,
        )
        .expect("list");
        assert_eq!(l.scheme(), "https");
        assert!(l.allows_host("node.example.com:8443"));
        assert!(l.allows_host("alias.example.com"));
        assert!(l.allows_host("alias.example.com:443"));
        assert!(!l.allows_host("node.example.com"));
        assert!(!l.allows_host("0.0.0.0:8443"));
        assert!(!l.allows_host("localhost:8443"));
        assert!(l.allows_origin("https://alias.example.com"));
        let e = list("0.0.0.0", "0.0.0.0:8443", &[], true).expect_err("wildcard");
        assert_eq!(e.code(), Code::Config);
        let e = list("127.0.0.1", "127.0.0.1:1", &["a b"], false).expect_err("bad name");
        assert_eq!(e.code(), Code::Usage);
        let r = l.refusal(Some("evil"));
        assert_eq!(r.code(), Code::MisdirectedRequest);
        assert_eq!(r.code().http_status(), 421);
    }

    #[test]
    fn a_named_bind_allows_its_name_and_address() {
        let l = list("10.1.2.3", "10.1.2.3:80", &[], false).expect("list");
        assert!(l.allows_host("10.1.2.3"));
        assert!(l.allows_host("10.1.2.3:80"));
        assert!(!l.allows_host("localhost:80"));
        let v6 = list("[::1]", "[::1]:9000", &[], false).expect("list");
        assert!(v6.allows_host("[::1]:9000"));
        assert!(v6.allows_host("localhost:9000"));
    }
}
