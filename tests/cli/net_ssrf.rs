//! SSRF-safe fetcher (`agent_task::net`) against test origins on
//! 127.0.0.1. Only loopback traffic; refused destinations are refused before
//! any connection, so nothing leaves the machine.

use crate::common::origin::{Origin, Reply as Answer};
use agent_task::net::{FetchPolicy, FetchRequest, FetchResponse, fetch, fetch_exempting};
use agent_task::{Code, Error};
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the test server saw of one request.
#[derive(Debug, Clone)]
struct Seen {
    path: String,
    headers: Vec<(String, String)>,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A reply the handler chooses for a path.
enum Reply {
    Ok(&'static str, Vec<u8>),
    Chunked(Vec<u8>),
    Redirect(u16, String),
    RedirectNoLocation(u16),
    Status(u16),
}

type Handler = dyn Fn(&str) -> Reply + Send + Sync;

struct TestServer {
    _origin: Origin,
    seen: Arc<Mutex<Vec<Seen>>>,
    addr: SocketAddr,
}

impl TestServer {
    fn start(handler: Box<Handler>) -> TestServer {
        let mut origin = Origin::start();
        let addr = origin.addr;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (requests, seen2) = (origin.requests(), seen.clone());
        std::thread::spawn(move || {
            for rq in requests {
                seen2.lock().expect("lock").push(Seen {
                    path: rq.url.clone(),
                    headers: rq.headers.clone(),
                });
                let answer = match handler(&rq.url) {
                    Reply::Ok(ct, body) => Answer::new(200, body)
                        .header("Content-Type", ct)
                        .header("ETag", "\"v1\""),
                    Reply::Chunked(body) => Answer::new(200, body)
                        .header("Content-Type", "text/plain")
                        .chunked(),
                    Reply::Redirect(code, to) => Answer::new(code, "").header("Location", &to),
                    Reply::RedirectNoLocation(code) => Answer::new(code, ""),
                    Reply::Status(code) => Answer::new(code, "nope"),
                };
                rq.respond(answer);
            }
        });
        TestServer {
            _origin: origin,
            seen,
            addr,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().expect("lock").clone()
    }
}

fn policy(allow_private: bool) -> FetchPolicy {
    FetchPolicy {
        allow_private_networks: allow_private,
        max_redirects: 3,
        timeout: Duration::from_secs(20),
        max_bytes: 1024,
    }
}

fn get(url: &str) -> FetchRequest {
    FetchRequest {
        url: url.to_owned(),
        headers: vec![],
    }
}

fn err_code(r: Result<FetchResponse, Error>) -> Code {
    match r {
        Ok(resp) => panic!("expected an error, got status {}", resp.status),
        Err(e) => e.code(),
    }
}

fn hello() -> TestServer {
    TestServer::start(Box::new(|_| Reply::Ok("text/plain", b"hello".to_vec())))
}

#[test]
fn loopback_is_refused_by_default_and_no_request_is_made() {
    let s = hello();
    let e = fetch(&get(&s.url("/")), &policy(false)).expect_err("loopback must be refused");
    assert_eq!(e.code(), Code::HttpPrivateNetworkBlocked);
    assert_eq!(e.code().http_status(), 422);
    assert_eq!(
        e.details()
            .and_then(|d| d.get("range"))
            .and_then(|v| v.as_str()),
        Some("loopback")
    );
    assert!(s.seen().is_empty(), "no request may reach a refused target");
}

#[test]
fn opt_in_reaches_loopback_and_returns_the_response() {
    let s = hello();
    let r = fetch(&get(&s.url("/a#frag")), &policy(true)).expect("opted-in fetch");
    assert_eq!(r.status, 200);
    assert_eq!(r.body, b"hello");
    assert_eq!(r.redirects, 0);
    assert_eq!(r.final_url, s.url("/a"));
    assert_eq!(r.header("content-type"), Some("text/plain"));
    assert_eq!(r.header("ETag"), Some("\"v1\""));
    assert_eq!(s.seen().len(), 1);
    assert_eq!(s.seen()[0].path, "/a");
}

#[test]
fn private_mapped_and_named_local_targets_are_refused() {
    let s = hello();
    let port = s.addr.port();
    for url in [
        format!("http://[::ffff:127.0.0.1]:{port}/"),
        format!("http://[::ffff:7f00:1]:{port}/"),
        format!("http://[::1]:{port}/"),
        format!("http://[::127.0.0.1]:{port}/"),
        format!("http://[64:ff9b::7f00:1]:{port}/"),
        format!("http://[2002:7f00:1::1]:{port}/"),
        format!("http://[fe80::1]:{port}/"),
        format!("http://[fd00::1]:{port}/"),
        format!("http://localhost:{port}/"),
        format!("http://api.localhost:{port}/"),
        format!("http://0x7f.1:{port}/"),
        format!("http://2130706433:{port}/"),
        format!("http://127.1:{port}/"),
        format!("http://0.0.0.0:{port}/"),
        "http://10.0.0.1/".to_owned(),
        "http://172.16.5.4/".to_owned(),
        "http://192.168.1.1/".to_owned(),
        "http://100.64.0.1/".to_owned(),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://198.18.0.1/".to_owned(),
        "http://192.0.2.1/".to_owned(),
        "http://224.0.0.1/".to_owned(),
        "http://255.255.255.255/".to_owned(),
        "https://[2001:db8::1]/".to_owned(),
        "https://[2001::1]/".to_owned(),
    ] {
        assert_eq!(
            err_code(fetch(&get(&url), &policy(false))),
            Code::HttpPrivateNetworkBlocked,
            "{url}"
        );
    }
    assert!(s.seen().is_empty());
}

#[test]
fn url_syntax_scheme_and_credentials_are_checked_first() {
    let p = policy(true);
    assert_eq!(err_code(fetch(&get("not a url"), &p)), Code::InvalidUrl);
    assert_eq!(err_code(fetch(&get("/relative"), &p)), Code::InvalidUrl);
    assert_eq!(
        err_code(fetch(&get("ftp://127.0.0.1/"), &p)),
        Code::InvalidUrlScheme
    );
    assert_eq!(
        err_code(fetch(&get("file:///etc/passwd"), &p)),
        Code::InvalidUrlScheme
    );
    assert_eq!(
        err_code(fetch(&get("http://user:pw@127.0.0.1/"), &p)),
        Code::InvalidUrlCredentials
    );
    assert_eq!(
        err_code(fetch(&get("http://user@127.0.0.1/"), &p)),
        Code::InvalidUrlCredentials
    );
    for (code, status) in [
        (Code::InvalidUrl, 400),
        (Code::InvalidUrlScheme, 400),
        (Code::InvalidUrlCredentials, 400),
        (Code::HttpRedirectLimit, 422),
        (Code::HttpTimeout, 422),
        (Code::ContentTooLarge, 413),
        (Code::HttpRedirectInvalid, 502),
    ] {
        assert_eq!(code.http_status(), status, "{code}");
    }
}

#[test]
fn redirect_to_private_is_refused_on_the_hop() {
    // The first server plays a public origin (exempted by exact address);
    // its redirects point at loopback or private places that stay refused.
    let inner = hello();
    let target = inner.url("/secret");
    let port = inner.addr.port();
    let outer = TestServer::start(Box::new(move |path| match path {
        "/to-loopback" => Reply::Redirect(302, target.clone()),
        "/to-mapped" => Reply::Redirect(307, format!("http://[::ffff:127.0.0.1]:{port}/")),
        "/to-localhost" => Reply::Redirect(301, format!("http://localhost:{port}/")),
        "/to-metadata" => Reply::Redirect(308, "http://169.254.169.254/".into()),
        "/to-file" => Reply::Redirect(302, "file:///etc/passwd".into()),
        "/to-creds" => Reply::Redirect(302, format!("http://a:b@127.0.0.1:{port}/")),
        _ => Reply::Ok("text/plain", b"public".to_vec()),
    }));
    let exempt = [outer.addr];
    let p = policy(false);
    let ok = fetch_exempting(&get(&outer.url("/plain")), &p, &exempt).expect("exempt origin");
    assert_eq!(ok.body, b"public");
    for (path, want) in [
        ("/to-loopback", Code::HttpPrivateNetworkBlocked),
        ("/to-mapped", Code::HttpPrivateNetworkBlocked),
        ("/to-localhost", Code::HttpPrivateNetworkBlocked),
        ("/to-metadata", Code::HttpPrivateNetworkBlocked),
        ("/to-file", Code::InvalidUrlScheme),
        ("/to-creds", Code::InvalidUrlCredentials),
    ] {
        assert_eq!(
            err_code(fetch_exempting(&get(&outer.url(path)), &p, &exempt)),
            want,
            "{path}"
        );
    }
    assert!(
        inner.seen().is_empty(),
        "the private target was never contacted"
    );
}

#[test]
fn caller_headers_are_dropped_after_a_cross_origin_redirect() {
    let other = hello();
    let other_url = other.url("/landing");
    let same_abs = Arc::new(Mutex::new(String::new()));
    let b2 = same_abs.clone();
    let first = TestServer::start(Box::new(move |path| match path {
        "/same" => Reply::Redirect(302, "/same2".into()),
        "/cross" => Reply::Redirect(302, other_url.clone()),
        "/same-absolute" => Reply::Redirect(302, b2.lock().expect("lock").clone()),
        _ => Reply::Ok("text/plain", b"first".to_vec()),
    }));
    *same_abs.lock().expect("lock") = first.url("/final");
    let req = |path: &str| FetchRequest {
        url: first.url(path),
        headers: vec![("X-Secret".into(), "s3cr3t".into())],
    };
    let p = policy(true);

    let r = fetch(&req("/same"), &p).expect("same-origin redirect");
    assert_eq!(r.redirects, 1);
    let seen = first.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.header("x-secret") == Some("s3cr3t")));

    let r = fetch(&req("/cross"), &p).expect("cross-origin redirect");
    assert_eq!(r.final_url, other.url("/landing"));
    assert_eq!(r.body, b"hello");
    assert_eq!(first.seen()[2].header("x-secret"), Some("s3cr3t"));
    let landed = other.seen();
    assert_eq!(landed.len(), 1);
    assert_eq!(landed[0].header("x-secret"), None, "stripped cross-origin");

    // An absolute Location on the same origin keeps the headers.
    let r = fetch(&req("/same-absolute"), &p).expect("redirect to the same origin");
    assert_eq!(r.redirects, 1);
    assert_eq!(
        first.seen().last().and_then(|s| s.header("x-secret")),
        Some("s3cr3t")
    );
}

#[test]
fn headers_stay_dropped_when_the_chain_returns_to_the_first_origin() {
    let first_url = Arc::new(Mutex::new(String::new()));
    let f2 = first_url.clone();
    let other = TestServer::start(Box::new(move |_| {
        Reply::Redirect(302, f2.lock().expect("lock").clone())
    }));
    let other_url = other.url("/bounce");
    let first = TestServer::start(Box::new(move |path| match path {
        "/start" => Reply::Redirect(302, other_url.clone()),
        _ => Reply::Ok("text/plain", b"home".to_vec()),
    }));
    *first_url.lock().expect("lock") = first.url("/home");
    let req = FetchRequest {
        url: first.url("/start"),
        headers: vec![("Authorization".into(), "Bearer caller-token".into())],
    };
    let r = fetch(&req, &policy(true)).expect("A -> B -> A");
    assert_eq!(r.redirects, 2);
    assert_eq!(r.body, b"home");
    let seen = first.seen();
    assert_eq!(seen[0].header("authorization"), Some("Bearer caller-token"));
    assert_eq!(seen[1].path, "/home");
    assert_eq!(seen[1].header("authorization"), None);
    assert_eq!(other.seen()[0].header("authorization"), None);
}

#[test]
fn redirects_are_capped() {
    let s = TestServer::start(Box::new(|path| {
        let n: u32 = path.trim_start_matches('/').parse().unwrap_or(0);
        if n < 10 {
            Reply::Redirect(302, format!("/{}", n + 1))
        } else {
            Reply::Ok("text/plain", b"end".to_vec())
        }
    }));
    let p = policy(true);
    // Exactly max_redirects redirects is fine.
    let r = fetch(&get(&s.url("/7")), &p).expect("3 redirects");
    assert_eq!(r.redirects, 3);
    assert_eq!(r.final_url, s.url("/10"));
    let before = s.seen().len();
    assert_eq!(
        err_code(fetch(&get(&s.url("/0")), &p)),
        Code::HttpRedirectLimit
    );
    assert_eq!(
        s.seen().len() - before,
        4,
        "1 request + 3 followed redirects"
    );
    let zero = FetchPolicy {
        max_redirects: 0,
        ..policy(true)
    };
    assert_eq!(
        err_code(fetch(&get(&s.url("/9")), &zero)),
        Code::HttpRedirectLimit
    );
}

#[test]
fn redirect_without_location_and_non_redirect_statuses() {
    let s = TestServer::start(Box::new(|path| match path {
        "/noloc" => Reply::RedirectNoLocation(302),
        "/missing" => Reply::Status(404),
        "/multiple" => Reply::Status(300),
        _ => Reply::Status(500),
    }));
    let p = policy(true);
    assert_eq!(
        err_code(fetch(&get(&s.url("/noloc")), &p)),
        Code::HttpRedirectInvalid
    );
    assert_eq!(
        fetch(&get(&s.url("/missing")), &p).expect("404").status,
        404
    );
    assert_eq!(
        fetch(&get(&s.url("/multiple")), &p).expect("300").status,
        300
    );
    assert_eq!(fetch(&get(&s.url("/x")), &p).expect("500").status, 500);
}

#[test]
fn bodies_are_capped_by_length_and_while_streaming() {
    let s = TestServer::start(Box::new(|path| match path {
        "/exact" => Reply::Ok("application/octet-stream", vec![7u8; 1024]),
        "/big" => Reply::Ok("application/octet-stream", vec![7u8; 1025]),
        "/stream-ok" => Reply::Chunked(vec![1u8; 1000]),
        _ => Reply::Chunked(vec![1u8; 5000]),
    }));
    let p = policy(true);
    assert_eq!(
        fetch(&get(&s.url("/exact")), &p)
            .expect("at cap")
            .body
            .len(),
        1024
    );
    assert_eq!(
        err_code(fetch(&get(&s.url("/big")), &p)),
        Code::ContentTooLarge
    );
    assert_eq!(
        fetch(&get(&s.url("/stream-ok")), &p)
            .expect("chunked")
            .body
            .len(),
        1000
    );
    assert_eq!(
        err_code(fetch(&get(&s.url("/stream-big")), &p)),
        Code::ContentTooLarge
    );
}

#[test]
fn a_silent_server_times_out() {
    // Accepts the connection and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let hold = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().expect("accept");
        let mut buf = [0u8; 1024];
        // Read until the client gives up and closes.
        while matches!(conn.read(&mut buf), Ok(n) if n > 0) {}
    });
    let p = FetchPolicy {
        timeout: Duration::from_millis(300),
        ..policy(true)
    };
    assert_eq!(
        err_code(fetch(&get(&format!("http://{addr}/")), &p)),
        Code::HttpTimeout
    );
    hold.join().expect("holder thread");
}

#[test]
fn a_closed_port_is_a_collection_failure() {
    let addr = {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr")
    };
    assert_eq!(
        err_code(fetch(&get(&format!("http://{addr}/")), &policy(true))),
        Code::HttpCollectionFailed
    );
}

#[test]
fn bad_or_framing_caller_headers_are_refused() {
    let s = hello();
    for (k, v) in [
        ("Host", "evil.example"),
        ("Bad Name", "x"),
        ("X-Ok", "a\nb"),
    ] {
        let req = FetchRequest {
            url: s.url("/"),
            headers: vec![(k.into(), v.into())],
        };
        assert_eq!(
            err_code(fetch(&req, &policy(true))),
            Code::InvalidInput,
            "{k}"
        );
    }
    assert!(s.seen().is_empty());
}

#[test]
fn opt_in_resolves_a_name_and_connects_to_the_resolved_address() {
    // `localhost` resolves from the hosts file (no network). Refused by
    // name by default; with the opt-in it is looked up once and the pinned
    // addresses are used for the connection.
    let s = hello();
    let url = format!("http://localhost:{}/named", s.addr.port());
    assert_eq!(
        err_code(fetch(&get(&url), &policy(false))),
        Code::HttpPrivateNetworkBlocked
    );
    let r = fetch(&get(&url), &policy(true)).expect("opted-in named fetch");
    assert_eq!(r.body, b"hello");
    assert_eq!(r.final_url, url);
    let seen = s.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("host"),
        Some(format!("localhost:{}", s.addr.port()).as_str()),
        "the Host header keeps the name while the socket goes to the checked address"
    );
}

#[test]
fn trailing_dot_and_odd_ipv4_spellings_are_normalised_before_the_check() {
    let s = hello();
    let port = s.addr.port();
    for url in [
        format!("http://127.0.0.1.:{port}/"),
        format!("http://localhost.:{port}/"),
        format!("http://0177.0.0.1:{port}/"),
        format!("http://[0:0:0:0:0:ffff:127.0.0.1]:{port}/"),
    ] {
        assert_eq!(
            err_code(fetch(&get(&url), &policy(false))),
            Code::HttpPrivateNetworkBlocked,
            "{url}"
        );
    }
    assert!(s.seen().is_empty());
}
