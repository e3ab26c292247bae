//! A small router for the tiny_http shim.
//!
//! Routes are path patterns (literal segments and `{param}` segments that
//! match one non-empty segment) with one handler per method. Each handler
//! is public or guarded; guards are attached to path prefixes and run
//! *before* method checks, route matching, body reading and id parsing
//! (so `/v1/data/…` answers 401/503 to anything unauthenticated). Data
//! routes, workspace-task routes and MCP mount side by side, each with its
//! own prefix and guard.

use crate::error::{Code, Error, Result};
use std::io::Read;
use std::sync::Arc;

/// HTTP methods the router knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET.
    Get,
    /// POST.
    Post,
    /// Anything else (always 405 on a known path).
    Other,
}

/// One incoming request, as handlers see it.
pub struct Request<'a> {
    /// The method.
    pub method: Method,
    /// The raw path (no query string), still percent-encoded.
    pub path: String,
    /// The raw query string, without `?`.
    pub query: Option<String>,
    /// Header name/value pairs (names as sent).
    pub headers: Vec<(String, String)>,
    /// The origin the client used (`http://` + Host).
    pub origin: String,
    /// `Content-Length`, if the transport reported one.
    pub content_length: Option<usize>,
    /// The body stream.
    pub body: &'a mut dyn Read,
    /// Raw values of the `{param}` segments of the matched route.
    pub params: Vec<String>,
}

impl Request<'_> {
    /// The first header with this name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The first value of a query parameter, `application/x-www-form-urlencoded` decoded.
    pub fn query_param(&self, name: &str) -> Result<Option<String>> {
        let Some(q) = &self.query else {
            return Ok(None);
        };
        for pair in q.split('&') {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            let k = form_decode(k)?;
            if k == name {
                return form_decode(v).map(Some);
            }
        }
        Ok(None)
    }
}

/// A response.
#[derive(Debug)]
pub struct Response {
    /// Status code.
    pub status: u16,
    /// Extra headers.
    pub headers: Vec<(String, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
    /// Content type of the body.
    pub content_type: &'static str,
}

impl Response {
    /// A JSON response (rendered as canonical JSON: ECMAScript number text).
    pub fn json(status: u16, v: &serde_json::Value) -> Response {
        let body = serde_json_canonicalizer::to_vec(v)
            .or_else(|_| serde_json::to_vec(v))
            .unwrap_or_default();
        Response {
            status,
            headers: Vec::new(),
            body,
            content_type: "application/json; charset=utf-8",
        }
    }

    /// The flat error body with the code's HTTP status.
    pub fn error(e: &Error) -> Response {
        let mut r = Response::json(e.code().http_status(), &e.to_json());
        if e.code() == Code::Unauthorized {
            r.headers.push((
                "WWW-Authenticate".into(),
                "Bearer realm=\"agent-data-node\"".into(),
            ));
        }
        r
    }
}

/// A handler.
pub type Handler = Arc<dyn Fn(&mut Request<'_>) -> Result<Response> + Send + Sync>;
/// A guard: `Err` is answered as is.
pub type Guard = Arc<dyn Fn(&Request<'_>) -> Result<()> + Send + Sync>;

/// Whether a handler needs its prefix guard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Runs without any guard.
    Public,
    /// Runs after the guard of every matching prefix.
    Guarded,
}

enum Seg {
    Lit(String),
    Param,
}

struct Route {
    segs: Vec<Seg>,
    handlers: Vec<(Method, Access, Handler)>,
}

/// The router.
#[derive(Default)]
pub struct Router {
    routes: Vec<Route>,
    guards: Vec<(String, Guard)>,
}

impl Router {
    /// An empty router.
    pub fn new() -> Router {
        Router::default()
    }

    /// Adds a guard for every path starting with `prefix`.
    pub fn guard(&mut self, prefix: &str, g: Guard) {
        self.guards.push((prefix.to_owned(), g));
    }

    /// Adds a handler for `method` on `pattern` (`/a/{id}/b`).
    pub fn route(&mut self, method: Method, pattern: &str, access: Access, h: Handler) {
        let segs: Vec<Seg> = pattern
            .split('/')
            .skip(1)
            .map(|s| {
                if s.starts_with('{') && s.ends_with('}') {
                    Seg::Param
                } else {
                    Seg::Lit(s.to_owned())
                }
            })
            .collect();
        let key = pattern_key(&segs);
        if let Some(r) = self.routes.iter_mut().find(|r| pattern_key(&r.segs) == key) {
            r.handlers.push((method, access, h));
        } else {
            self.routes.push(Route {
                segs,
                handlers: vec![(method, access, h)],
            });
        }
    }

    fn find(&self, path: &str) -> Option<(&Route, Vec<String>)> {
        let parts: Vec<&str> = path.split('/').skip(1).collect();
        if !path.starts_with('/') {
            return None;
        }
        'routes: for r in &self.routes {
            if r.segs.len() != parts.len() {
                continue;
            }
            let mut params = Vec::new();
            for (s, p) in r.segs.iter().zip(&parts) {
                match s {
                    Seg::Lit(l) if l == p => {}
                    Seg::Param if !p.is_empty() => params.push((*p).to_owned()),
                    _ => continue 'routes,
                }
            }
            return Some((r, params));
        }
        None
    }

    /// Dispatches one request.
    pub fn dispatch(&self, req: &mut Request<'_>) -> Response {
        match self.try_dispatch(req) {
            Ok(r) => r,
            Err(e) => Response::error(&public_error(e)),
        }
    }

    fn try_dispatch(&self, req: &mut Request<'_>) -> Result<Response> {
        let found = self.find(&req.path);
        if let Some((route, params)) = &found
            && let Some((_, _, h)) = route
                .handlers
                .iter()
                .find(|(m, a, _)| *m == req.method && *a == Access::Public)
        {
            req.params = params.clone();
            return h(req);
        }
        for (prefix, g) in &self.guards {
            if req.path.starts_with(prefix.as_str()) {
                g(req)?;
            }
        }
        match found {
            Some((route, params)) => match route.handlers.iter().find(|(m, _, _)| *m == req.method)
            {
                Some((_, _, h)) => {
                    req.params = params;
                    h(req)
                }
                None => Err(Error::new(
                    Code::MethodNotAllowed,
                    "Method is not allowed for this endpoint",
                )),
            },
            None => Err(Error::new(Code::NotFound, "Endpoint was not found")),
        }
    }
}

/// Reads a request body of media type `media` (parameters ignored) of at
/// most `max` bytes: the declared `Content-Length` is checked before any
/// byte is read, and the streamed size again while reading. `wrong_media`
/// and `too_large` are the messages of the two refusals, so each route keeps
/// its own wording.
pub fn read_bounded_body(
    req: &mut Request<'_>,
    media: &str,
    max: u64,
    wrong_media: &str,
    too_large: &str,
) -> Result<Vec<u8>> {
    let ct = req.header("content-type").unwrap_or("");
    if !ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case(media)
    {
        return Err(Error::new(
            Code::UnsupportedMediaType,
            wrong_media.to_owned(),
        ));
    }
    let too_large = || Error::new(Code::RequestTooLarge, too_large.to_owned());
    if let Some(cl) = req.header("content-length") {
        match cl.trim().parse::<u64>() {
            Ok(n) if n > max => return Err(too_large()),
            Ok(_) => {}
            Err(_) => {
                return Err(Error::new(
                    Code::InvalidContentLength,
                    "Content-Length must be a non-negative integer",
                ));
            }
        }
    }
    let mut bytes = Vec::new();
    (&mut req.body)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            Error::new(
                Code::InvalidRequest,
                format!("cannot read the request body: {e}"),
            )
        })?;
    if bytes.len() as u64 > max {
        return Err(too_large());
    }
    Ok(bytes)
}

/// Reads an `application/json` body of at most `max` bytes with the
/// reference's refusal messages (shared by the data routes and MCP).
pub fn read_json_bytes(req: &mut Request<'_>, max: u64) -> Result<Vec<u8>> {
    read_bounded_body(
        req,
        "application/json",
        max,
        "Request body must use application/json",
        &format!("Request body exceeds the {max}-byte limit"),
    )
}

fn pattern_key(segs: &[Seg]) -> String {
    segs.iter()
        .map(|s| match s {
            Seg::Lit(l) => l.as_str(),
            Seg::Param => "{}",
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Errors from inside the node that must not leak details over HTTP
/// (paths, SQL) become the reference's generic `internal_error`.
fn public_error(e: Error) -> Error {
    match e.code() {
        Code::Internal
        | Code::Io
        | Code::InsecurePermissions
        | Code::SymlinkRefused
        | Code::Config
        | Code::SchemaTooNew
        | Code::SchemaOutdated
        | Code::IntegrityError => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("agent-task serve: internal error: {e}");
            }
            Error::new(
                Code::InternalError,
                "The data node could not complete the request",
            )
        }
        _ => e,
    }
}

fn hex_val(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// Percent-decodes a path segment (`invalid_path` on bad escapes or
/// non-UTF-8 results).
pub fn percent_decode(s: &str) -> Result<String> {
    decode(s, false)
        .map_err(|_| Error::new(Code::InvalidPath, "Path contains invalid percent-encoding"))
}

/// Query-string decoding is lenient like `URLSearchParams`: a bad escape
/// stays literal and invalid UTF-8 becomes U+FFFD.
fn form_decode(s: &str) -> Result<String> {
    decode(s, true).map_err(|_| Error::new(Code::InvalidQuery, "Query string is not decodable"))
}

fn decode(s: &str, form: bool) -> std::result::Result<String, ()> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hi = b.get(i + 1).copied().and_then(hex_val);
                let lo = b.get(i + 2).copied().and_then(hex_val);
                match (hi, lo) {
                    (Some(h), Some(l)) => {
                        out.push(h * 16 + l);
                        i += 3;
                    }
                    _ if form => {
                        out.push(b'%');
                        i += 1;
                    }
                    _ => return Err(()),
                }
            }
            b'+' if form => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    if form {
        Ok(String::from_utf8_lossy(&out).into_owned())
    } else {
        String::from_utf8(out).map_err(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("rec_%61b").expect("ok"), "rec_ab");
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%ff").is_err());
        assert_eq!(form_decode("a+b%20c").expect("ok"), "a b c");
        assert_eq!(form_decode("%zz").expect("ok"), "%zz");
    }
}
