//! Outbound networking: the shared client configuration
//! ([`client_builder`]), the loopback rule ([`is_loopback_host`]) and an
//! SSRF-safe blocking HTTP(S) fetcher for collectors.
//!
//! [`fetch`] does one `GET` and follows redirects by hand so that every hop
//! is validated again:
//!
//! 1. the URL must parse as an absolute WHATWG URL (`invalid_url`), use
//!    `http` or `https` (`invalid_url_scheme`) and carry no userinfo
//!    (`invalid_url_credentials`); the fragment is dropped;
//! 2. the host is resolved **once** (IP literals are taken as they are;
//!    `localhost` and `*.localhost` are refused without a lookup), and
//!    **every** address is checked with [`ranges::blocked_reason`]; one
//!    refused address refuses the hop (`http_private_network_blocked`)
//!    unless [`FetchPolicy::allow_private_networks`] is set;
//! 3. the connection goes to exactly the checked addresses: the ureq agent
//!    of the hop uses a resolver pinned to them, so there is no second DNS
//!    lookup that could rebind the name;
//! 4. the proxy environment (`*_PROXY`) is ignored;
//! 5. 301, 302, 303, 307 and 308 are redirects: `Location` is required
//!    (`http_redirect_invalid`), resolved against the current URL, and at
//!    most [`FetchPolicy::max_redirects`] are followed
//!    (`http_redirect_limit`); on the first hop to another origin the
//!    caller's headers are dropped for that hop and every later one;
//! 6. one deadline covers DNS, every hop and the body (`http_timeout`); the
//!    body is capped at [`FetchPolicy::max_bytes`], by `Content-Length` and
//!    while streaming (`content_too_large`).
//!
//! Any other failure is `http_collection_failed`. Non-2xx final statuses are
//! returned, not errors: judging them is the caller's business.

pub mod ranges;

use crate::error::{Code, Error, Result};
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};
use url::Url;

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

/// Bounds and permissions of one fetch.
#[derive(Debug, Clone)]
pub struct FetchPolicy {
    /// Allow loopback, private and reserved destinations (operator opt-in).
    pub allow_private_networks: bool,
    /// Redirects followed at most (the request count is this plus one).
    pub max_redirects: u32,
    /// One deadline for DNS, every hop and the body read.
    pub timeout: Duration,
    /// Cap on the response body.
    pub max_bytes: u64,
}

/// One `GET` to make.
#[derive(Debug, Clone)]
pub struct FetchRequest {
    /// Absolute `http` or `https` URL.
    pub url: String,
    /// Extra request headers (dropped after a cross-origin redirect).
    pub headers: Vec<(String, String)>,
}

/// The final response after redirects.
#[derive(Debug, Clone)]
pub struct FetchResponse {
    /// The URL of the final hop, without fragment.
    pub final_url: String,
    /// The final HTTP status (any; 3xx only for statuses that are not
    /// redirects, such as 300 or 304).
    pub status: u16,
    /// Response headers, names lowercased, in received order. Values that
    /// are not visible ASCII are decoded lossily.
    pub headers: Vec<(String, String)>,
    /// The body bytes (at most `max_bytes`).
    pub body: Vec<u8>,
    /// How many redirects were followed.
    pub redirects: u32,
}

impl FetchResponse {
    /// The first value of a header, by case-insensitive name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Header names a caller may not set (framing, routing and hop-by-hop).
const FORBIDDEN_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "upgrade",
    "te",
    "trailer",
    "proxy-authorization",
    "proxy-connection",
];

/// Bound on caller headers (count) and on one header's name plus value.
const MAX_HEADERS: usize = 64;
const MAX_HEADER_BYTES: usize = 8192;

/// Parses and checks a URL for fetching: absolute, `http`/`https`, no
/// userinfo, a host; the fragment is removed.
pub fn validate_url(raw: &str) -> Result<Url> {
    let mut url = Url::parse(raw)
        .map_err(|e| Error::new(Code::InvalidUrl, format!("URL cannot be parsed: {e}")))?;
    if url.scheme() != "http" && url.scheme() != "https" {
        return Err(
            Error::new(Code::InvalidUrlScheme, "URL scheme must be http or https")
                .with("scheme", url.scheme().to_owned()),
        );
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(Error::new(
            Code::InvalidUrlCredentials,
            "URL must not contain credentials",
        ));
    }
    if url.host().is_none() {
        return Err(Error::new(Code::InvalidUrl, "URL has no host"));
    }
    url.set_fragment(None);
    Ok(url)
}

/// Fetches `req.url` under `policy`. See the module documentation.
pub fn fetch(req: &FetchRequest, policy: &FetchPolicy) -> Result<FetchResponse> {
    fetch_inner(req, policy, &[])
}

/// Test builds only: [`fetch`], except that the exact socket addresses in
/// `exempt` pass the private-network check (so a loopback test server can
/// play a public first hop while everything else stays refused).
#[cfg(feature = "test-hooks")]
#[doc(hidden)]
pub fn fetch_exempting(
    req: &FetchRequest,
    policy: &FetchPolicy,
    exempt: &[SocketAddr],
) -> Result<FetchResponse> {
    fetch_inner(req, policy, exempt)
}

fn fetch_inner(
    req: &FetchRequest,
    policy: &FetchPolicy,
    exempt: &[SocketAddr],
) -> Result<FetchResponse> {
    let deadline = Instant::now() + policy.timeout;
    let headers = check_headers(&req.headers)?;
    let mut url = validate_url(&req.url)?;
    let first_origin = url.origin();
    let mut keep_headers = true;
    let mut redirects = 0u32;
    loop {
        if url.origin() != first_origin {
            keep_headers = false;
        }
        let addrs = resolve_checked(&url, policy, exempt, deadline)?;
        let sent: &[(String, String)] = if keep_headers { &headers } else { &[] };
        let hop = one_hop(&url, sent, addrs, policy, deadline)?;
        match hop {
            Hop::Redirect(location) => {
                if redirects >= policy.max_redirects {
                    return Err(Error::new(
                        Code::HttpRedirectLimit,
                        format!("more than {} redirects", policy.max_redirects),
                    )
                    .with("max_redirects", policy.max_redirects));
                }
                let next = url.join(&location).map_err(|e| {
                    Error::new(
                        Code::HttpRedirectInvalid,
                        format!("redirect Location cannot be resolved: {e}"),
                    )
                })?;
                url = validate_url(next.as_str())?;
                redirects += 1;
            }
            Hop::Final(mut resp) => {
                resp.redirects = redirects;
                return Ok(resp);
            }
        }
    }
}

fn check_headers(headers: &[(String, String)]) -> Result<Vec<(String, String)>> {
    if headers.len() > MAX_HEADERS {
        return Err(Error::new(
            Code::InvalidInput,
            format!("at most {MAX_HEADERS} request headers"),
        ));
    }
    let mut out = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        if name.len() + value.len() > MAX_HEADER_BYTES {
            return Err(Error::new(Code::InvalidInput, "request header too long"));
        }
        let n = ureq::http::HeaderName::from_bytes(name.as_bytes()).map_err(|_| {
            Error::new(Code::InvalidInput, "invalid request header name")
                .with("header", name.clone())
        })?;
        if FORBIDDEN_HEADERS.contains(&n.as_str()) {
            return Err(Error::new(
                Code::InvalidInput,
                format!("request header {} may not be set", n.as_str()),
            ));
        }
        ureq::http::HeaderValue::from_str(value).map_err(|_| {
            Error::new(Code::InvalidInput, "invalid request header value")
                .with("header", name.clone())
        })?;
        out.push((n.as_str().to_owned(), value.clone()));
    }
    Ok(out)
}

fn remaining(deadline: Instant) -> Result<Duration> {
    let left = deadline.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return Err(timeout_error());
    }
    Ok(left)
}

fn timeout_error() -> Error {
    Error::new(Code::HttpTimeout, "the fetch timed out")
}

fn blocked(what: &str, reason: &str) -> Error {
    Error::new(
        Code::HttpPrivateNetworkBlocked,
        "destination is a private, loopback or reserved address",
    )
    .with("destination", what.to_owned())
    .with("range", reason.to_owned())
}

/// Resolves the hop's host once and checks every address.
fn resolve_checked(
    url: &Url,
    policy: &FetchPolicy,
    exempt: &[SocketAddr],
    deadline: Instant,
) -> Result<Vec<SocketAddr>> {
    let port = url
        .port_or_known_default()
        .ok_or_else(|| Error::new(Code::InvalidUrl, "URL has no port"))?;
    let ips: Vec<IpAddr> = match url.host() {
        Some(url::Host::Ipv4(a)) => vec![IpAddr::V4(a)],
        Some(url::Host::Ipv6(a)) => vec![IpAddr::V6(a)],
        Some(url::Host::Domain(name)) => {
            if !policy.allow_private_networks && ranges::is_localhost_name(name) {
                return Err(blocked(name, "localhost_name"));
            }
            lookup(name, port, deadline)?
        }
        None => return Err(Error::new(Code::InvalidUrl, "URL has no host")),
    };
    if ips.is_empty() {
        return Err(Error::new(
            Code::HttpDnsFailed,
            "DNS lookup found no address",
        ));
    }
    if !policy.allow_private_networks {
        for ip in &ips {
            if exempt.contains(&SocketAddr::new(*ip, port)) {
                continue;
            }
            if let Some(reason) = ranges::blocked_reason(*ip) {
                return Err(blocked(&ip.to_string(), reason));
            }
        }
    }
    let mut addrs: Vec<SocketAddr> = ips
        .into_iter()
        .map(|ip| SocketAddr::new(ip, port))
        .collect();
    addrs.dedup();
    Ok(addrs)
}

/// One DNS lookup bounded by the deadline (the std resolver has no timeout,
/// so it runs on a helper thread that is abandoned on timeout).
fn lookup(name: &str, port: u16, deadline: Instant) -> Result<Vec<IpAddr>> {
    let left = remaining(deadline)?;
    let (tx, rx) = mpsc::channel();
    let host = name.to_owned();
    std::thread::Builder::new()
        .name("net-dns".into())
        .spawn(move || {
            let res = (host.as_str(), port)
                .to_socket_addrs()
                .map(|it| it.map(|a| a.ip()).collect::<Vec<_>>());
            let _ = tx.send(res);
        })
        .map_err(|e| Error::internal(format!("cannot start DNS thread: {e}")))?;
    match rx.recv_timeout(left) {
        Ok(Ok(ips)) => Ok(ips),
        Ok(Err(e)) => Err(
            Error::new(Code::HttpDnsFailed, format!("DNS lookup failed: {e}"))
                .with("host", name.to_owned()),
        ),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(timeout_error()),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(Error::new(Code::HttpDnsFailed, "DNS lookup failed"))
        }
    }
}

/// A ureq resolver that answers only for the checked host, with exactly the
/// checked addresses.
#[derive(Debug)]
struct PinnedResolver {
    host: String,
    addrs: Vec<SocketAddr>,
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> std::result::Result<ResolvedSocketAddrs, ureq::Error> {
        let asked = uri.host().unwrap_or_default();
        if !asked.eq_ignore_ascii_case(&self.host) {
            return Err(ureq::Error::HostNotFound);
        }
        let mut out = self.empty();
        for a in self.addrs.iter().take(16) {
            out.push(*a);
        }
        if out.is_empty() {
            return Err(ureq::Error::HostNotFound);
        }
        Ok(out)
    }
}

enum Hop {
    Redirect(String),
    Final(FetchResponse),
}

fn is_redirect(status: u16) -> bool {
    matches!(status, 301 | 302 | 303 | 307 | 308)
}

fn one_hop(
    url: &Url,
    headers: &[(String, String)],
    addrs: Vec<SocketAddr>,
    policy: &FetchPolicy,
    deadline: Instant,
) -> Result<Hop> {
    let left = remaining(deadline)?;
    let host = match url.host() {
        Some(url::Host::Ipv6(a)) => format!("[{a}]"),
        Some(h) => h.to_string(),
        None => return Err(Error::new(Code::InvalidUrl, "URL has no host")),
    };
    let agent = ureq::Agent::with_parts(
        hop_config(left),
        DefaultConnector::default(),
        PinnedResolver { host, addrs },
    );
    let mut builder = agent.get(url.as_str());
    for (k, v) in headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let mut resp = builder.call().map_err(|e| map_ureq(e, deadline))?;
    let status = resp.status().as_u16();
    if is_redirect(status) {
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .filter(|s| !s.trim().is_empty())
            .map(str::to_owned);
        return match location {
            Some(l) => Ok(Hop::Redirect(l)),
            None => Err(Error::new(
                Code::HttpRedirectInvalid,
                format!("HTTP {status} redirect without a usable Location header"),
            )),
        };
    }
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    if let Some(len) = resp.body().content_length()
        && len > policy.max_bytes
    {
        return Err(too_large(policy.max_bytes));
    }
    let body = resp
        .body_mut()
        .with_config()
        .limit(policy.max_bytes)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => too_large(policy.max_bytes),
            other => map_ureq(other, deadline),
        })?;
    let mut final_url = url.clone();
    final_url.set_fragment(None);
    Ok(Hop::Final(FetchResponse {
        final_url: final_url.into(),
        status,
        headers,
        body,
        redirects: 0,
    }))
}

/// One `POST` with a body to an operator-configured endpoint (sync page
/// requests): the same pinned single DNS resolution, no proxy, one
/// deadline and body cap as [`fetch`], but **no redirect is followed**
/// (a 3xx is returned for the caller to refuse), and HTTPS trusts only
/// `ca_pem`'s certificates when given (else the compiled-in web roots).
#[derive(Debug, Clone)]
pub struct PostRequest {
    /// Absolute `http` or `https` URL.
    pub url: String,
    /// Request headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
    /// PEM certificates to trust instead of the web roots.
    pub ca_pem: Option<Vec<u8>>,
}

/// Sends a [`PostRequest`] under `policy` (`max_redirects` is ignored: none
/// is followed).
pub fn post(req: &PostRequest, policy: &FetchPolicy) -> Result<FetchResponse> {
    let deadline = Instant::now() + policy.timeout;
    let headers = check_headers(&req.headers)?;
    let url = validate_url(&req.url)?;
    let addrs = resolve_checked(&url, policy, &[], deadline)?;
    let left = remaining(deadline)?;
    let host = match url.host() {
        Some(url::Host::Ipv6(a)) => format!("[{a}]"),
        Some(h) => h.to_string(),
        None => return Err(Error::new(Code::InvalidUrl, "URL has no host")),
    };
    let mut config = hop_builder(left);
    if let Some(pem) = &req.ca_pem {
        let mut certs = Vec::new();
        for item in ureq::tls::parse_pem(pem) {
            match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => certs.push(c),
                Ok(_) => {}
                Err(e) => {
                    return Err(Error::new(Code::Config, format!("CA file is not PEM: {e}")));
                }
            }
        }
        if certs.is_empty() {
            return Err(Error::new(Code::Config, "CA file holds no certificate"));
        }
        config = config.tls_config(
            ureq::tls::TlsConfig::builder()
                .root_certs(ureq::tls::RootCerts::Specific(std::sync::Arc::new(certs)))
                .build(),
        );
    }
    let agent = ureq::Agent::with_parts(
        config.build(),
        DefaultConnector::default(),
        PinnedResolver { host, addrs },
    );
    let mut builder = agent.post(url.as_str());
    for (k, v) in &headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let mut resp = builder
        .send(&req.body[..])
        .map_err(|e| map_ureq(e, deadline))?;
    let status = resp.status().as_u16();
    let headers: Vec<(String, String)> = resp
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_ascii_lowercase(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    if let Some(len) = resp.body().content_length()
        && len > policy.max_bytes
    {
        return Err(too_large(policy.max_bytes));
    }
    let body = resp
        .body_mut()
        .with_config()
        .limit(policy.max_bytes)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => too_large(policy.max_bytes),
            other => map_ureq(other, deadline),
        })?;
    Ok(FetchResponse {
        final_url: url.into(),
        status,
        headers,
        body,
        redirects: 0,
    })
}

/// The ureq configuration of one hop: no proxy (the `*_PROXY` environment
/// is ignored), no automatic redirects, statuses returned rather than
/// raised, no pooled connection kept, and the remaining deadline.
fn hop_config(left: Duration) -> ureq::config::Config {
    hop_builder(left).build()
}

fn hop_builder(left: Duration) -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    client_builder(Some(left))
        .max_idle_connections(0)
        .user_agent(concat!("agent-task/", env!("CARGO_PKG_VERSION")))
}

/// The one configuration every outbound HTTP client of the toolkit starts
/// from (the collector fetcher above, the workspace endpoint client, the
/// Stop hook, the collector upload, the doctor's probes): the proxy
/// environment is ignored, no redirect is followed (a 3xx is returned and
/// judged by the caller), statuses are returned rather than raised, and
/// `timeout` bounds each whole request. Callers add their user agent and
/// finer timeouts.
pub fn client_builder(
    timeout: Option<Duration>,
) -> ureq::config::ConfigBuilder<ureq::typestate::AgentScope> {
    ureq::Agent::config_builder()
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .save_redirect_history(false)
        .timeout_global(timeout)
}

fn too_large(max: u64) -> Error {
    Error::new(
        Code::ContentTooLarge,
        format!("Collected content exceeds the {max}-byte limit"),
    )
    .with("max_bytes", max)
}

fn map_ureq(e: ureq::Error, deadline: Instant) -> Error {
    let timed_out = match &e {
        ureq::Error::Timeout(_) => true,
        ureq::Error::Io(io) => matches!(
            io.kind(),
            std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
        ),
        _ => false,
    };
    if timed_out || Instant::now() >= deadline {
        return timeout_error();
    }
    Error::new(Code::HttpCollectionFailed, format!("fetch failed: {e}"))
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

    #[test]
    fn the_shared_client_ignores_proxies_and_never_follows_redirects() {
        let c = client_builder(None).build();
        assert!(c.proxy().is_none());
        assert_eq!(c.max_redirects(), 0);
        assert!(!c.http_status_as_error());
        assert!(c.timeouts().global.is_none());
        let c = client_builder(Some(Duration::from_secs(7))).build();
        assert_eq!(c.timeouts().global, Some(Duration::from_secs(7)));
    }

    #[test]
    fn hop_config_ignores_proxies_and_never_follows_redirects() {
        let c = hop_config(Duration::from_secs(3));
        assert!(c.proxy().is_none());
        assert_eq!(c.max_redirects(), 0);
        assert!(!c.http_status_as_error());
        assert_eq!(c.max_idle_connections(), 0);
    }

    #[test]
    fn url_validation() {
        let u = validate_url("HTTP://Example.COM:80/a?b#frag").expect("valid");
        assert_eq!(u.as_str(), "http://example.com/a?b");
        assert_eq!(
            validate_url("mailto:x@y").expect_err("scheme").code(),
            Code::InvalidUrlScheme
        );
        assert_eq!(
            validate_url("http://:pw@h/").expect_err("creds").code(),
            Code::InvalidUrlCredentials
        );
        assert_eq!(
            validate_url("http://").expect_err("no host").code(),
            Code::InvalidUrl
        );
    }

    #[test]
    fn pinned_resolver_answers_only_for_its_host() {
        let r = PinnedResolver {
            host: "example.com".into(),
            addrs: vec!["93.184.215.14:80".parse().expect("addr")],
        };
        let cfg = ureq::config::Config::default();
        let t = NextTimeout {
            after: ureq::unversioned::transport::time::Duration::from_secs(1),
            reason: ureq::Timeout::Resolve,
            per_read: None,
            per_write: None,
        };
        let ok: ureq::http::Uri = "http://EXAMPLE.com/x".parse().expect("uri");
        let got = r.resolve(&ok, &cfg, t).expect("pinned");
        assert_eq!(got.len(), 1);
        assert_eq!(got[0], r.addrs[0]);
        let other: ureq::http::Uri = "http://evil.example/x".parse().expect("uri");
        assert!(r.resolve(&other, &cfg, t).is_err());
    }
}
