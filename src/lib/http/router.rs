//! A small router for the HTTP shim.
//!
//! Routes are path patterns (literal segments and `{param}` segments that
//! match one non-empty segment) with one handler per method. Each handler
//! is public or guarded; guards are attached to path prefixes and run
//! *before* method checks, route matching, body reading and id parsing
//! (so `/v1/data/…` answers 401/503 to anything unauthenticated). Data
//! routes, workspace-task routes and MCP mount side by side, each with its
//! own prefix and guard.
//!
//! Dispatch has two phases so that no byte of a body is read before the
//! caller is authenticated: [`Router::admit`] runs the prefix guards, finds
//! the route, checks the method, runs the route's own `authorize` check and
//! the declared media type and `Content-Length` of its [`BodySpec`], all on
//! the head alone; only then does the server feed the body and
//! [`Router::run`] call the handler. A route registered without a
//! [`BodySpec`] never sees a body: the server hands it an empty reader.

use crate::error::{Code, Error, Result};
use std::future::Future;
use std::io::Read;
use std::pin::Pin;
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
        let body = if plain_is_canonical(v) {
            serde_json::to_vec(v).unwrap_or_default()
        } else {
            serde_json_canonicalizer::to_vec(v)
                .or_else(|_| serde_json::to_vec(v))
                .unwrap_or_default()
        };
        Response {
            status,
            headers: Vec::new(),
            body,
            content_type: "application/json; charset=utf-8",
        }
    }

    /// A JSON response whose body is already canonical JSON text.
    pub fn json_bytes(status: u16, body: Vec<u8>) -> Response {
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
        // A refusal that changed nothing because the server is momentarily
        // full (a writer's queue, a lock wait): say when to try again, as
        // the connection cap's `server_busy` does.
        if matches!(e.code(), Code::Busy | Code::ServerBusy) {
            r.headers.push(("Retry-After".into(), "1".into()));
        }
        r
    }
}

/// Whether serde_json's compact text of `v` is already its canonical JSON
/// (RFC 8785) text, so the canonicalizer's second rendering can be
/// skipped (most answers: the workflow's carry integers and ASCII keys).
/// It is when every number is an integer (ECMAScript number text differs
/// only for floats) and every object key is ASCII (serde_json's maps are
/// sorted by UTF-8 bytes, RFC 8785 sorts by UTF-16 code units; the two
/// orders agree on ASCII). Strings escape alike in both (the short
/// escapes, `\u00xx` in lower case for other control characters, nothing
/// else), and integers print alike up to 2^53; a larger one goes to the
/// canonicalizer, which prints it as ECMAScript does.
fn plain_is_canonical(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    const EXACT: u64 = 1 << 53;
    match v {
        Value::Null | Value::Bool(_) | Value::String(_) => true,
        Value::Number(n) => {
            n.as_u64().is_some_and(|u| u <= EXACT)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() <= EXACT)
        }
        Value::Array(a) => a.iter().all(plain_is_canonical),
        Value::Object(m) => m.iter().all(|(k, x)| k.is_ascii() && plain_is_canonical(x)),
    }
}

/// An answer to come: completed on the server's runtime (by a writer
/// thread's batch, for instance), never by a handler thread waiting.
pub type PendingResponse = Pin<Box<dyn Future<Output = Response> + Send + 'static>>;

/// What a handler answers: a response now, or one to come
/// ([`PendingResponse`]), which the server awaits without holding a
/// handler thread.
pub enum Reply {
    /// The response.
    Ready(Response),
    /// The response once it is known.
    Pending(PendingResponse),
    /// The rest of the handler, which may wait (on a lock, a batch, the
    /// disk): a handler on the compute pool hands it on, and the server
    /// runs it on the blocking pool ([`Reply::on_lane`]).
    Blocking(BlockingRest),
}

/// The rest of a handler that must run on the blocking pool.
pub type BlockingRest = Box<dyn FnOnce() -> Reply + Send + 'static>;

impl From<Response> for Reply {
    fn from(r: Response) -> Reply {
        Reply::Ready(r)
    }
}

impl Reply {
    /// Runs `f` here unless it belongs on the blocking pool and this is a
    /// compute-pool thread: then it is handed on ([`Reply::Blocking`]), so
    /// that no compute-pool thread ever waits.
    pub fn on_lane(lane: Lane, f: impl FnOnce() -> Result<Reply> + Send + 'static) -> Reply {
        let run = move || match f() {
            Ok(r) => r,
            Err(e) => Reply::Ready(Response::error(&public_error(e))),
        };
        if lane == Lane::Blocking && super::pool::on_compute_thread() {
            Reply::Blocking(Box::new(run))
        } else {
            run()
        }
    }

    /// The answer to `d` once it is known: `render` of its outcome, or the
    /// typed error (an internal one made public) with its status.
    pub fn deferred<T: Send + 'static>(
        d: crate::store::Deferred<T>,
        render: impl FnOnce(T) -> Response + Send + 'static,
    ) -> Reply {
        Reply::later(async move { d.answer().await.map(render) })
    }

    /// The response `f` yields, or its typed error (an internal one made
    /// public) with its status. `f` runs on the server's runtime: it must
    /// only await and render, never block.
    pub fn later(f: impl Future<Output = Result<Response>> + Send + 'static) -> Reply {
        Reply::Pending(Box::pin(async move {
            match f.await {
                Ok(r) => r,
                Err(e) => Response::error(&public_error(e)),
            }
        }))
    }
}

/// Which pool runs a route's admission and handler (see
/// [`lane_of_route`], the one table).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// The compute pool (`--compute-threads`, one per core by default):
    /// handlers that neither stream a body nor wait on a lock, a batch or
    /// a peer, run in arrival order, each to its end
    /// ([`super::pool::ComputePool`]). A body is handed to them whole;
    /// one that has not arrived with its head streams on the blocking pool.
    Compute,
    /// The compute pool for admission and decoding, then the operation
    /// named in the JSON body decides ([`lane_of_operation`]): the
    /// workspace task route.
    ByOperation,
    /// The blocking pool (`--workers` threads): everything else.
    Blocking,
}

/// The route pattern of the workspace operations (the one compute route).
pub const OPS_ROUTE: &str =
    "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks";

/// The one table of which pool runs what: every route pattern not named
/// here runs on the blocking pool. A compute route's handler and its
/// `authorize` step only read WAL snapshots, check files and queue to a
/// group-commit writer without waiting (`docs/http.md`, "Two pools").
const COMPUTE_ROUTES: &[(&str, Lane)] = &[(OPS_ROUTE, Lane::ByOperation)];

/// The operations of a [`Lane::ByOperation`] route that stay on the compute
/// pool: reads of a snapshot, and mutations whose handler only queues
/// to the writer (their unit of work runs on the writer thread). The
/// others (change open, checkpoint commit, collector finalize, and any
/// name not listed) go on to the blocking pool.
pub const COMPUTE_OPERATIONS: &[&str] = &[
    "capabilities",
    "requirements",
    "next",
    "instructions",
    "reference",
    "status",
    "recovery",
    "qualification",
    "explain",
    "change_subject",
    "change_list",
    "overview",
    "collector_descriptor",
    "claim",
    "heartbeat",
    "cancel",
    "reconcile",
    "result",
    "collector_claim",
];

/// The lane of a route pattern ([`COMPUTE_ROUTES`]).
pub fn lane_of_route(pattern: &str) -> Lane {
    COMPUTE_ROUTES
        .iter()
        .find(|(p, _)| *p == pattern)
        .map_or(Lane::Blocking, |(_, l)| *l)
}

/// The lane of an operation of a [`Lane::ByOperation`] route
/// ([`COMPUTE_OPERATIONS`]).
pub fn lane_of_operation(operation: &str) -> Lane {
    if COMPUTE_OPERATIONS.contains(&operation) {
        Lane::Compute
    } else {
        Lane::Blocking
    }
}

/// A handler.
pub type Handler = Arc<dyn Fn(&mut Request<'_>) -> Result<Response> + Send + Sync>;
/// A handler that may answer later ([`Reply::Pending`]).
pub type DeferredHandler = Arc<dyn Fn(&mut Request<'_>) -> Result<Reply> + Send + Sync>;
/// A guard: `Err` is answered as is. It sees the head only (a shared
/// `&Request` cannot read the body).
pub type Guard = Arc<dyn Fn(&Request<'_>) -> Result<()> + Send + Sync>;

/// The body a route accepts: checked on the head (media type, declared
/// length) before a byte is read, and bounded again while streaming.
#[derive(Clone, Debug)]
pub struct BodySpec {
    /// The media type (parameters ignored, case-insensitive).
    pub media: &'static str,
    /// The largest body in bytes.
    pub max: u64,
    /// The message of the `unsupported_media_type` refusal.
    pub wrong_media: String,
    /// The message of the `request_too_large` refusal.
    pub too_large: String,
}

impl BodySpec {
    /// An `application/json` body of at most `max` bytes with the
    /// reference's refusal messages (the data routes, MCP and the
    /// workspace endpoint).
    pub fn json(max: u64) -> BodySpec {
        BodySpec {
            media: "application/json",
            max,
            wrong_media: "Request body must use application/json".into(),
            too_large: format!("Request body exceeds the {max}-byte limit"),
        }
    }

    fn too_large(&self) -> Error {
        Error::new(Code::RequestTooLarge, self.too_large.clone())
    }

    /// The checks on the head alone: media type, then the declared
    /// `Content-Length` against the cap.
    pub fn check_head(&self, req: &Request<'_>) -> Result<()> {
        let ct = req.header("content-type").unwrap_or("");
        if !ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .eq_ignore_ascii_case(self.media)
        {
            return Err(Error::new(
                Code::UnsupportedMediaType,
                self.wrong_media.clone(),
            ));
        }
        if let Some(cl) = req.header("content-length") {
            let cl = cl.trim();
            // Digits only: Rust's integer parse would take a sign.
            let digits = !cl.is_empty() && cl.bytes().all(|b| b.is_ascii_digit());
            match cl.parse::<u64>() {
                Ok(n) if digits && n > self.max => return Err(self.too_large()),
                Ok(_) if digits => {}
                _ => {
                    return Err(Error::new(
                        Code::InvalidContentLength,
                        "Content-Length must be a non-negative integer",
                    ));
                }
            }
        }
        Ok(())
    }

    /// [`BodySpec::check_head`], then reads at most `max` bytes (one more
    /// is read to tell an oversize streamed body). A transport failure the
    /// server typed (deadline, truncation) comes back as that error.
    pub fn read(&self, req: &mut Request<'_>) -> Result<Vec<u8>> {
        self.check_head(req)?;
        let mut bytes = Vec::new();
        (&mut req.body)
            .take(self.max + 1)
            .read_to_end(&mut bytes)
            .map_err(body_read_error)?;
        if bytes.len() as u64 > self.max {
            return Err(self.too_large());
        }
        Ok(bytes)
    }
}

/// A body read failure: the server's typed error when it made one (a
/// missed deadline, a truncated body), else `invalid_request`.
fn body_read_error(e: std::io::Error) -> Error {
    let msg = e.to_string();
    match e.into_inner().map(|inner| inner.downcast::<Error>()) {
        Some(Ok(typed)) => *typed,
        _ => Error::new(
            Code::InvalidRequest,
            format!("cannot read the request body: {msg}"),
        ),
    }
}

/// What a route adds to its handler: who may call it, and what body it
/// takes.
#[derive(Clone)]
pub struct RouteSpec {
    /// Public or guarded.
    pub access: Access,
    /// A check of the caller on the head alone (for instance the agent
    /// token against the profile's authority), run after the prefix
    /// guards and the method check, before the body spec.
    pub authorize: Option<Guard>,
    /// The body the route reads; `None`: the handler gets no body.
    pub body: Option<BodySpec>,
    /// Whether `authorize` touches a database or a file (the agent token
    /// against the authority): then admission runs on a handler thread.
    /// Without an `authorize` step, or with one that is pure CPU (a
    /// constant-time compare), admission runs on the runtime thread that
    /// read the head ([`Router::admit_inline`]).
    pub authorize_io: bool,
}

impl RouteSpec {
    /// No authorize step, no body.
    pub fn new(access: Access) -> RouteSpec {
        RouteSpec {
            access,
            authorize: None,
            body: None,
            authorize_io: false,
        }
    }

    /// With this body.
    pub fn body(mut self, body: BodySpec) -> RouteSpec {
        self.body = Some(body);
        self
    }

    /// With this authorize step, which reads the authority (a database):
    /// admission runs on a handler thread.
    pub fn authorize(mut self, g: Guard) -> RouteSpec {
        self.authorize = Some(g);
        self.authorize_io = true;
        self
    }

    /// With this authorize step, pure CPU on the head (no database, no
    /// file, no lock): admission may run on a runtime thread.
    pub fn authorize_cpu(mut self, g: Guard) -> RouteSpec {
        self.authorize = Some(g);
        self.authorize_io = false;
        self
    }
}

/// A request that passed [`Router::admit`]: the handler to run and the
/// body it may read.
pub struct Admitted {
    handler: DeferredHandler,
    params: Vec<String>,
    body: Option<BodySpec>,
}

impl Admitted {
    /// How many body bytes the server may read for this handler: the cap
    /// plus one (so an oversize streamed body is seen), 0 without a body.
    pub fn body_limit(&self) -> u64 {
        self.body.as_ref().map_or(0, |b| b.max.saturating_add(1))
    }
}

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
    lane: Lane,
    handlers: Vec<(Method, RouteSpec, DeferredHandler)>,
}

/// Path segments [`Router::find`] splits on the stack.
const FIND_SEGS: usize = 16;

/// The router.
#[derive(Default)]
pub struct Router {
    routes: Vec<Route>,
    guards: Vec<(String, Guard)>,
    prefix_headers: Vec<(String, Vec<(String, String)>)>,
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

    /// Adds `headers` to every response to a path under `prefix` (`/ui`:
    /// `/ui` itself and every path below `/ui/`), refusals of the router
    /// and the server included (the dashboard's security headers).
    pub fn headers_under(&mut self, prefix: &str, headers: Vec<(String, String)>) {
        self.prefix_headers.push((prefix.to_owned(), headers));
    }

    /// The headers [`Router::headers_under`] adds for `path`.
    pub fn headers_for(&self, path: &str) -> Vec<(String, String)> {
        self.prefix_headers
            .iter()
            .filter(|(p, _)| {
                path == p
                    || path
                        .strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .flat_map(|(_, h)| h.iter().cloned())
            .collect()
    }

    /// Adds a handler for `method` on `pattern` (`/a/{id}/b`) that takes
    /// no body and has no authorize step.
    pub fn route(&mut self, method: Method, pattern: &str, access: Access, h: Handler) {
        self.route_with(method, pattern, RouteSpec::new(access), h);
    }

    /// Adds a handler for `method` on `pattern` with its [`RouteSpec`].
    pub fn route_with(&mut self, method: Method, pattern: &str, spec: RouteSpec, h: Handler) {
        let h: DeferredHandler = Arc::new(move |req: &mut Request<'_>| h(req).map(Reply::Ready));
        self.route_deferred(method, pattern, spec, h);
    }

    /// Adds a handler that may answer later ([`Reply::Pending`]).
    pub fn route_deferred(
        &mut self,
        method: Method,
        pattern: &str,
        spec: RouteSpec,
        h: DeferredHandler,
    ) {
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
            r.handlers.push((method, spec, h));
        } else {
            self.routes.push(Route {
                segs,
                lane: lane_of_route(pattern),
                handlers: vec![(method, spec, h)],
            });
        }
    }

    fn find(&self, path: &str) -> Option<(&Route, Vec<String>)> {
        let rest = path.strip_prefix('/')?;
        // The path's segments, split once into a buffer on the stack (a
        // request's path is looked up for its lane and admission); one
        // with more segments than that is split into a vector.
        let mut buf = [""; FIND_SEGS];
        let mut n = 0;
        let mut split = rest.split('/');
        for p in split.by_ref() {
            if n == FIND_SEGS {
                let long: Vec<&str> = buf.into_iter().chain([p]).chain(split).collect();
                return self.find_in(&long);
            }
            buf[n] = p;
            n += 1;
        }
        self.find_in(&buf[..n])
    }

    fn find_in(&self, parts: &[&str]) -> Option<(&Route, Vec<String>)> {
        'routes: for r in &self.routes {
            if r.segs.len() != parts.len() {
                continue;
            }
            let mut params = Vec::new();
            for (s, p) in r.segs.iter().zip(parts) {
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

    /// The pool a request to `path` starts on: its route's lane (a path no
    /// route matches is refused at once, on the compute pool).
    pub fn lane(&self, path: &str) -> Lane {
        self.find(path).map_or(Lane::Compute, |(r, _)| r.lane)
    }

    /// Admits then runs one request (the body, if any, is read from
    /// `req.body` by the handler), waiting for an answer to come on this
    /// thread (tests and tools; the server uses [`Router::dispatch_reply`]).
    pub fn dispatch(&self, req: &mut Request<'_>) -> Response {
        wait_here(self.dispatch_reply(req))
    }

    /// Admits then runs one request, its answer possibly to come.
    pub fn dispatch_reply(&self, req: &mut Request<'_>) -> Reply {
        match self.admit(req) {
            Ok(a) => self.run_reply(a, req),
            Err(e) => Reply::Ready(Response::error(&public_error(e))),
        }
    }

    /// [`Router::admit`] when it is pure CPU for this request: the prefix
    /// guards (always CPU: bearer forms and constant-time compares), route,
    /// method, a route `authorize` step declared CPU-only, the body spec.
    /// `None` when the matched route's `authorize` reads a database
    /// ([`RouteSpec::authorize_io`]): admit it on a handler thread.
    pub fn admit_inline(&self, req: &mut Request<'_>) -> Option<Result<Admitted>> {
        if let Some((route, _)) = self.find(&req.path) {
            let public = route
                .handlers
                .iter()
                .find(|(m, s, _)| *m == req.method && s.access == Access::Public);
            let chosen =
                public.or_else(|| route.handlers.iter().find(|(m, _, _)| *m == req.method));
            if let Some((_, spec, _)) = chosen
                && spec.authorize.is_some()
                && spec.authorize_io
            {
                // The prefix guards first, so that a missing or malformed
                // bearer is refused here without a handler thread.
                if spec.access == Access::Guarded {
                    for (prefix, g) in &self.guards {
                        if req.path.starts_with(prefix.as_str())
                            && let Err(e) = g(req)
                        {
                            return Some(Err(e));
                        }
                    }
                }
                return None;
            }
        }
        Some(self.admit(req))
    }

    /// The first phase, on the head alone: prefix guards (unless the
    /// route is public), route, method, the route's authorize step, then
    /// its body spec's media type and declared length. Nothing here reads
    /// `req.body`.
    pub fn admit(&self, req: &mut Request<'_>) -> Result<Admitted> {
        let found = self.find(&req.path);
        if let Some((route, params)) = &found
            && let Some((_, spec, h)) = route
                .handlers
                .iter()
                .find(|(m, s, _)| *m == req.method && s.access == Access::Public)
        {
            req.params = params.clone();
            return Self::admit_route(spec, h, params.clone(), req);
        }
        for (prefix, g) in &self.guards {
            if req.path.starts_with(prefix.as_str()) {
                g(req)?;
            }
        }
        match found {
            Some((route, params)) => match route.handlers.iter().find(|(m, _, _)| *m == req.method)
            {
                Some((_, spec, h)) => {
                    req.params = params.clone();
                    Self::admit_route(spec, h, params, req)
                }
                None => Err(Error::new(
                    Code::MethodNotAllowed,
                    "Method is not allowed for this endpoint",
                )),
            },
            None => Err(Error::new(Code::NotFound, "Endpoint was not found")),
        }
    }

    fn admit_route(
        spec: &RouteSpec,
        h: &DeferredHandler,
        params: Vec<String>,
        req: &Request<'_>,
    ) -> Result<Admitted> {
        if let Some(auth) = &spec.authorize {
            auth(req)?;
        }
        if let Some(body) = &spec.body {
            body.check_head(req)?;
        }
        Ok(Admitted {
            handler: h.clone(),
            params,
            body: spec.body.clone(),
        })
    }

    /// The second phase: the admitted handler, with the body now readable
    /// (an answer to come is waited for on this thread: tests and tools).
    pub fn run(&self, a: Admitted, req: &mut Request<'_>) -> Response {
        wait_here(self.run_reply(a, req))
    }

    /// The second phase, its answer possibly to come (the server awaits a
    /// [`Reply::Pending`] on its runtime).
    pub fn run_reply(&self, a: Admitted, req: &mut Request<'_>) -> Reply {
        req.params = a.params;
        match (a.handler)(req) {
            Ok(r) => r,
            Err(e) => Reply::Ready(Response::error(&public_error(e))),
        }
    }
}

/// A reply's response, waited for on this thread (outside the server's
/// runtime: a router driven directly).
fn wait_here(mut reply: Reply) -> Response {
    loop {
        match reply {
            Reply::Ready(r) => return r,
            Reply::Pending(f) => return block_on(f),
            Reply::Blocking(rest) => reply = rest(),
        }
    }
}

/// Waits for an answer to come on this thread (outside the server's
/// runtime: a router driven directly).
fn block_on(f: PendingResponse) -> Response {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt.block_on(f),
        Err(e) => Response::error(&public_error(Error::internal(format!(
            "cannot wait for the answer: {e}"
        )))),
    }
}

/// Reads an `application/json` body of at most `max` bytes with the
/// reference's refusal messages (shared by the data routes and MCP).
pub fn read_json_bytes(req: &mut Request<'_>, max: u64) -> Result<Vec<u8>> {
    BodySpec::json(max).read(req)
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
pub fn public_error(e: Error) -> Error {
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
            Error::internal_error("The data node could not complete the request")
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

/// Query-string (and form body) decoding is lenient like
/// `URLSearchParams`: a bad escape stays literal and invalid UTF-8
/// becomes U+FFFD.
pub fn form_decode(s: &str) -> Result<String> {
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
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A body that counts every read.
    struct Counted<'a>(&'a AtomicUsize, &'a [u8]);

    impl Read for Counted<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            self.0.fetch_add(1, Ordering::SeqCst);
            self.1.read(out)
        }
    }

    fn request<'a>(
        method: Method,
        path: &str,
        headers: &[(&str, &str)],
        body: &'a mut dyn Read,
    ) -> Request<'a> {
        Request {
            method,
            path: path.into(),
            query: None,
            headers: headers
                .iter()
                .map(|(k, v)| ((*k).into(), (*v).into()))
                .collect(),
            origin: "http://t".into(),
            content_length: None,
            body,
            params: Vec::new(),
        }
    }

    fn router() -> Router {
        let mut r = Router::new();
        r.guard(
            "/g/",
            Arc::new(|req: &Request<'_>| match req.header("authorization") {
                Some("ok") | Some("ok-but-not-here") => Ok(()),
                _ => Err(Error::new(Code::Unauthorized, "no")),
            }),
        );
        r.route_with(
            Method::Post,
            "/g/{id}/body",
            RouteSpec::new(Access::Guarded)
                .authorize(Arc::new(|req: &Request<'_>| {
                    if req.header("authorization") == Some("ok") && req.params == ["x"] {
                        Ok(())
                    } else {
                        Err(Error::new(Code::Forbidden, "not this one"))
                    }
                }))
                .body(BodySpec::json(8)),
            Arc::new(|req: &mut Request<'_>| {
                let b = BodySpec::json(8).read(req)?;
                Ok(Response::json(200, &serde_json::json!({"len": b.len()})))
            }),
        );
        r.route(
            Method::Post,
            "/g/nobody",
            Access::Guarded,
            Arc::new(|req: &mut Request<'_>| {
                let mut b = Vec::new();
                let _ = req.body.read_to_end(&mut b);
                Ok(Response::json(200, &serde_json::json!({"len": b.len()})))
            }),
        );
        r
    }

    #[test]
    fn a_path_is_matched_the_same_whether_its_segments_fit_the_stack_buffer_or_not() {
        let ok = || -> Handler {
            Arc::new(|_: &mut Request<'_>| Ok(Response::json(200, &serde_json::json!(0))))
        };
        let mut r = Router::new();
        // Patterns of FIND_SEGS - 1, FIND_SEGS and FIND_SEGS + 2 segments,
        // each ending in a parameter.
        let pattern = |n: usize| {
            let mut p: String = (1..n).map(|i| format!("/s{i}")).collect();
            p.push_str("/{last}");
            p
        };
        for n in [FIND_SEGS - 1, FIND_SEGS, FIND_SEGS + 2] {
            r.route(Method::Get, &pattern(n), Access::Public, ok());
        }
        r.route(Method::Get, "/", Access::Public, ok());
        r.route(Method::Get, "/a//{x}", Access::Public, ok());
        let path = |n: usize, last: &str| {
            let mut p: String = (1..n).map(|i| format!("/s{i}")).collect();
            p.push('/');
            p.push_str(last);
            p
        };
        for n in [FIND_SEGS - 1, FIND_SEGS, FIND_SEGS + 2] {
            let (route, params) = r.find(&path(n, "v")).expect("found");
            assert_eq!(route.segs.len(), n);
            assert_eq!(params, ["v"]);
            // An empty parameter, one segment more or fewer: no route.
            assert!(r.find(&path(n, "")).is_none(), "{n}");
            assert!(r.find(&format!("{}/x", path(n, "v"))).is_none(), "{n}");
        }
        assert!(r.find(&path(FIND_SEGS + 1, "v")).is_none());
        assert!(r.find(&path(FIND_SEGS * 4, "v")).is_none());
        assert_eq!(r.find("/").expect("root").0.segs.len(), 1);
        assert_eq!(r.find("/a//y").expect("empty literal").1, ["y"]);
        for no in ["", "s1/v", "//", "/a/y", "/a//"] {
            assert!(r.find(no).is_none(), "{no:?}");
        }
    }

    #[test]
    fn admission_never_reads_the_body() {
        let r = router();
        type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16);
        let cases: &[Case<'_>] = &[
            ("/g/x/body", &[], 401),
            ("/g/x/body", &[("authorization", "bad")], 401),
            ("/g/x/body", &[("authorization", "ok-but-not-here")], 403),
            ("/g/y/body", &[("authorization", "ok")], 403),
            (
                "/g/x/body",
                &[("authorization", "ok"), ("content-type", "text/plain")],
                415,
            ),
            (
                "/g/x/body",
                &[
                    ("authorization", "ok"),
                    ("content-type", "application/json"),
                    ("content-length", "9"),
                ],
                413,
            ),
            (
                "/g/x/body",
                &[
                    ("authorization", "ok"),
                    ("content-type", "application/json"),
                    ("content-length", "+1"),
                ],
                400,
            ),
            ("/g/missing", &[("authorization", "ok")], 404),
        ];
        for (path, headers, status) in cases {
            let reads = AtomicUsize::new(0);
            let mut body = Counted(&reads, b"{}");
            let mut req = request(Method::Post, path, headers, &mut body);
            let got = r.dispatch(&mut req);
            assert_eq!(got.status, *status, "{path} {headers:?}");
            assert_eq!(
                reads.load(Ordering::SeqCst),
                0,
                "{path} {headers:?} read the body"
            );
        }
        // Admitted: the handler reads, bounded by the spec.
        let reads = AtomicUsize::new(0);
        let mut body = Counted(&reads, b"{\"a\":1}");
        let h = [
            ("authorization", "ok"),
            ("content-type", "application/json"),
        ];
        let mut req = request(Method::Post, "/g/x/body", &h, &mut body);
        let a = r.admit(&mut req).expect("admitted");
        assert_eq!(a.body_limit(), 9);
        assert_eq!(reads.load(Ordering::SeqCst), 0);
        let got = r.run(a, &mut req);
        assert_eq!(got.status, 200);
        assert!(reads.load(Ordering::SeqCst) > 0);
        // Streamed over the cap.
        let reads = AtomicUsize::new(0);
        let mut body = Counted(&reads, b"{\"a\":12345}");
        let mut req = request(Method::Post, "/g/x/body", &h, &mut body);
        assert_eq!(r.dispatch(&mut req).status, 413);
        // A route without a body spec may take no body.
        let mut none = std::io::empty();
        let mut req = request(
            Method::Post,
            "/g/nobody",
            &[("authorization", "ok")],
            &mut none,
        );
        assert_eq!(r.admit(&mut req).expect("admitted").body_limit(), 0);
    }

    #[test]
    fn a_transport_error_comes_back_typed() {
        struct Late;
        impl Read for Late {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other(Error::new(
                    Code::RequestTimeout,
                    "late",
                )))
            }
        }
        let mut body = Late;
        let h = [("content-type", "application/json")];
        let mut req = request(Method::Post, "/", &h, &mut body);
        let e = BodySpec::json(8).read(&mut req).expect_err("timeout");
        assert_eq!(e.code(), Code::RequestTimeout);
        struct Broken;
        impl Read for Broken {
            fn read(&mut self, _: &mut [u8]) -> std::io::Result<usize> {
                Err(std::io::Error::new(
                    std::io::ErrorKind::ConnectionReset,
                    "reset",
                ))
            }
        }
        let mut body = Broken;
        let mut req = request(Method::Post, "/", &h, &mut body);
        let e = BodySpec::json(8).read(&mut req).expect_err("reset");
        assert_eq!(e.code(), Code::InvalidRequest);
    }

    #[test]
    fn a_busy_refusal_says_when_to_retry() {
        let retry = |r: &Response| {
            r.headers
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case("retry-after"))
                .map(|(_, v)| v.clone())
        };
        let busy = Response::error(&Error::new(Code::Busy, "the queue is full"));
        assert_eq!(busy.status, 503);
        assert_eq!(retry(&busy).as_deref(), Some("1"));
        let bad = Response::error(&Error::new(Code::InvalidRequest, "no"));
        assert_eq!(retry(&bad), None);
        // A 503 that waiting does not cure says nothing of retrying.
        let off = Response::error(&Error::new(Code::DataAuthNotConfigured, "off"));
        assert_eq!((off.status, retry(&off)), (503, None));
    }

    #[test]
    fn plain_json_is_used_only_where_it_is_the_canonical_text() {
        use serde_json::json;
        let canonical = |v: &serde_json::Value| serde_json_canonicalizer::to_vec(v).expect("jcs");
        // The fast path's answer is byte for byte the canonicalizer's.
        for v in [
            json!({"b": 1, "a": [true, null, -7, "x\u{1}\n\"\\\u{7f}é😀"], "c": {"z": 9007199254740992u64}}),
            json!({"operation": "heartbeat", "result": {"fence": 3, "lease_expires_at": "2026-12-01T00:00:00.000Z"}}),
            json!([]),
            json!("plain"),
        ] {
            assert!(plain_is_canonical(&v), "{v}");
            assert_eq!(Response::json(200, &v).body, canonical(&v), "{v}");
        }
        // Floats, huge integers and non-ASCII keys take the canonicalizer.
        for v in [
            json!({"x": 1.5}),
            json!({"x": 1e21}),
            json!({"x": 9007199254740993u64}),
            json!({"\u{e000}": 1, "\u{10000}": 2}),
        ] {
            assert!(!plain_is_canonical(&v), "{v}");
            assert_eq!(Response::json(200, &v).body, canonical(&v), "{v}");
        }
        // The fast path relies on serde_json's sorted maps (no
        // `preserve_order` feature anywhere in the build).
        let m: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(r#"{"b":1,"a":2}"#).expect("map");
        assert_eq!(m.keys().collect::<Vec<_>>(), ["a", "b"]);
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("rec_%61b").expect("ok"), "rec_ab");
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%ff").is_err());
        assert_eq!(form_decode("a+b%20c").expect("ok"), "a b c");
        assert_eq!(form_decode("%zz").expect("ok"), "%zz");
    }
}
