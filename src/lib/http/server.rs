//! The HTTP/1.1 server: hyper's HTTP/1 connection driver on a small tokio
//! runtime, behind the validating [`Gate`], with the blocking handlers on a
//! bounded pool.
//!
//! - Threads: two runtime threads do all socket work (accept, heads,
//!   bodies, writes) for every connection; handlers run on one of two
//!   pools, chosen per route by the router's table ([`Lane`]): the compute
//!   pool ([`ComputePool`], `--compute-threads`, one per core by default)
//!   for handlers that never wait and have their body whole, tokio's
//!   blocking pool capped at `--workers` threads for the rest. No thread
//!   is ever spent per connection.
//! - Connections: every connection is accepted (the accept loop never
//!   stops, so the listen backlog drains). One still reading a request
//!   head (the first from the accept, TLS handshake included, or the next
//!   on a kept-alive connection) holds a place in the head budget
//!   ([`HeadBudget`], `--head-budget`) and no request slot; when the
//!   budget is full the connection that has waited longest is dropped,
//!   never the newcomer. A complete head takes one of `--max-connections`
//!   request slots, held until the answer is written; past the cap up to
//!   `--accept-backlog` requests wait at most `--accept-backlog-ms` for
//!   one, the rest, and those whose wait runs out, get one
//!   `503 server_busy` JSON answer and are closed.
//! - A request: the gate validates its head; the router's first phase
//!   ([`Router::admit`]: guards, route, method, authorize, body spec) runs
//!   *before any of the body is waited for*: on the runtime thread when it
//!   is pure CPU ([`Router::admit_inline`]: the data routes), else on the
//!   pool (an agent token looked up in the authority). Then up to
//!   [`BODY_WINDOW`] bytes of the body are read without holding a worker
//!   (under the body deadline), and the handler runs on the pool reading
//!   the rest through a small bounded channel. A small body that arrived
//!   with its head is taken from memory first, so that pool admission and
//!   the handler share one pool job.
//! - An answer: the handler's [`Reply`] is a response, or one to come (a
//!   mutation queued to its writer), awaited here on the runtime: no
//!   handler thread waits for a batch to become durable.
//! - Responses are written by hyper with head and body in one buffer
//!   (`writev(false)`) on a socket with `TCP_NODELAY`.
//!
//! Limits and what the client sees for each refusal: `docs/http.md`.

use super::budget::{HeadBudget, Place};
use super::gate::{ConnState, Gate, HeadLimits, Io};
use super::hosts::HostAllowList;
use super::pool::ComputePool;
use super::router::{Lane, Method, Reply, Request, Response, Router, public_error};
use crate::error::{Code, Error, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::io::Read;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

/// Body bytes read ahead of the handler without holding a worker: a body
/// this small (most requests) never pins a worker while it trickles in.
pub const BODY_WINDOW: usize = 64 * 1024;

/// Chunks buffered between the connection and a handler reading a larger
/// body (each at most hyper's read buffer).
const BODY_CHANNEL: usize = 2;

/// Connections that may linger after a refusal answered without a request
/// slot (a refused head, `server_busy`); past it such a connection closes
/// right after its answer. Refused heads hold neither a slot nor a place
/// in the head budget, so this bounds them.
const LINGERING_REFUSALS: usize = 1024;

/// Every server limit (the `serve` flags; defaults in [`Limits::default`]).
#[derive(Debug, Clone)]
pub struct Limits {
    /// Head size and count, head deadlines and rate, idle and send timeouts.
    pub head: HeadLimits,
    /// Time to receive a request's body, from its admission.
    pub body_timeout: Duration,
    /// Connections still reading a request head at once (the oldest is
    /// dropped for a newcomer).
    pub head_budget: usize,
    /// Requests in progress at once (a complete head to a written answer).
    pub max_connections: usize,
    /// Over-cap requests that may wait for a slot.
    pub accept_backlog: usize,
    /// How long one of them waits before its 503.
    pub accept_backlog_wait: Duration,
    /// Handler threads (the blocking pool).
    pub workers: usize,
    /// Compute-pool threads (the handlers of [`Lane::Compute`] routes).
    pub compute_threads: usize,
}

/// The compute pool's default size: one thread per core.
pub fn default_compute_threads() -> usize {
    std::thread::available_parallelism().map_or(2, std::num::NonZeroUsize::get)
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            head: HeadLimits {
                max_header_bytes: 64 * 1024,
                max_headers: 100,
                head_timeout: Duration::from_secs(10),
                first_byte_timeout: Duration::from_secs(5),
                min_head_rate: 512,
                idle_timeout: Duration::from_secs(15),
                send_timeout: Duration::from_secs(30),
            },
            body_timeout: Duration::from_secs(60),
            head_budget: 256,
            max_connections: 256,
            accept_backlog: 64,
            accept_backlog_wait: Duration::from_millis(250),
            workers: 8,
            compute_threads: default_compute_threads(),
        }
    }
}

/// What the server answers as: TLS or plain, and the host names it
/// accepts (`Host`, and MCP's `Origin`).
#[derive(Clone)]
pub struct Front {
    /// `serve --tls-cert/--tls-key`: every connection is TLS.
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// The allow-list; a request naming another host gets 421.
    pub hosts: Arc<HostAllowList>,
}

struct Shared {
    router: Arc<Router>,
    limits: Limits,
    fallback_host: String,
    http: http1::Builder,
    tls: Option<tokio_rustls::TlsAcceptor>,
    hosts: Arc<HostAllowList>,
    compute: ComputePool,
    /// Request slots (`--max-connections`) and places to wait for one.
    slots: Arc<Semaphore>,
    backlog: Arc<Semaphore>,
    budget: Arc<HeadBudget>,
    lingering: Arc<Semaphore>,
}

/// Serves `listener` forever.
pub fn serve(
    listener: std::net::TcpListener,
    router: Arc<Router>,
    limits: Limits,
    front: Front,
) -> Result<()> {
    let local = listener
        .local_addr()
        .map_err(|e| Error::new(Code::ServerBindFailed, format!("bound address: {e}")))?;
    let mut http = http1::Builder::new();
    http.keep_alive(true)
        // A client may shut down its sending side after a request and
        // still read the answer; hyper then does not read while a request
        // is in flight, which the gate's clocks rely on.
        .half_close(true)
        .writev(false)
        .max_buf_size((limits.head.max_header_bytes + 8192).max(8192))
        .max_headers(limits.head.max_headers)
        .header_read_timeout(None);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(limits.workers.max(1))
        // Handler threads stay, like a fixed pool: each keeps its own
        // read-only SQLite connection (the data node's thread-local reader).
        .thread_keep_alive(Duration::from_secs(24 * 3600))
        .thread_name("agent-task-http")
        .enable_all()
        .build()
        .map_err(|e| Error::internal(format!("cannot start the server runtime: {e}")))?;
    let compute = ComputePool::start(limits.compute_threads, "agent-task-compute")
        .map_err(|e| Error::internal(format!("cannot start the compute pool: {e}")))?;
    let shared = Arc::new(Shared {
        compute,
        router,
        fallback_host: local.to_string(),
        http,
        tls: front.tls.map(tokio_rustls::TlsAcceptor::from),
        hosts: front.hosts,
        slots: Arc::new(Semaphore::new(limits.max_connections.max(1))),
        backlog: Arc::new(Semaphore::new(limits.accept_backlog)),
        budget: HeadBudget::new(limits.head_budget),
        lingering: Arc::new(Semaphore::new(LINGERING_REFUSALS)),
        limits,
    });
    rt.block_on(accept_loop(listener, shared))
}

async fn accept_loop(listener: std::net::TcpListener, shared: Arc<Shared>) -> Result<()> {
    let setup = |e: std::io::Error| Error::new(Code::ServerBindFailed, format!("listener: {e}"));
    listener.set_nonblocking(true).map_err(setup)?;
    let listener = tokio::net::TcpListener::from_std(listener).map_err(setup)?;
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                // Out of descriptors or memory: drop the connection that
                // has waited longest for its head, and give connections a
                // moment to close, instead of spinning on accept.
                if matches!(
                    e.raw_os_error(),
                    Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
                ) {
                    shared.budget.drop_oldest();
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                continue;
            }
        };
        let accepted = Instant::now();
        let _ = stream.set_nodelay(true);
        // Never refused for want of a place: a full budget drops its
        // oldest waiting connection instead.
        let place = shared.budget.enter();
        tokio::spawn(serve_conn(stream, place, accepted, shared.clone()));
    }
}

/// The connection's stream: a TLS handshake first when the server speaks
/// TLS, bounded by `deadline` (a client that never finishes it is closed
/// without an answer and without holding anything longer).
async fn open_io(stream: TcpStream, shared: &Shared, deadline: Instant) -> Option<Io> {
    match &shared.tls {
        None => Some(Io::Plain(stream)),
        Some(acceptor) => match tokio::time::timeout_at(deadline, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => Some(Io::Tls(Box::new(tls))),
            _ => None,
        },
    }
}

async fn serve_conn(stream: TcpStream, place: Place, accepted: Instant, shared: Arc<Shared>) {
    // The TLS handshake counts as part of the first head: bounded by its
    // first-byte deadline, and the connection keeps its place in the head
    // budget (and can lose it) meanwhile.
    let head = &shared.limits.head;
    let deadline = accepted + head.first_byte_timeout.min(head.head_timeout);
    let io = tokio::select! {
        biased;
        () = std::future::poll_fn(|cx| place.poll_dropped(cx)) => return,
        io = open_io(stream, &shared, deadline) => io,
    };
    let Some(io) = io else {
        return;
    };
    let conn = Arc::new(ConnState::default());
    let gate = Gate::new(io, head.clone(), conn.clone(), place, accepted);
    let s = shared.clone();
    let svc = service_fn(move |req| {
        let (s, c) = (s.clone(), conn.clone());
        async move { Ok::<_, Infallible>(handle(s, c, req).await) }
    });
    let _ = shared.http.serve_connection(TokioIo::new(gate), svc).await;
}

/// A request slot for the connection of a complete head, held (in its
/// [`ConnState`]) until the gate next waits for a head. Past the cap, up to
/// `--accept-backlog` requests wait at most `--accept-backlog-ms` for one;
/// the others, and those whose wait runs out, are refused `server_busy`.
async fn take_slot(shared: &Shared, conn: &ConnState) -> Result<()> {
    if conn.has_slot() {
        return Ok(());
    }
    let busy = || {
        Error::new(
            Code::ServerBusy,
            format!(
                "the server is at its limit of {} requests in progress; retry shortly",
                shared.limits.max_connections
            ),
        )
    };
    let permit = match shared.slots.clone().try_acquire_owned() {
        Ok(p) => p,
        Err(_) => {
            let place = shared
                .backlog
                .clone()
                .try_acquire_owned()
                .map_err(|_| busy())?;
            let wait = shared.limits.accept_backlog_wait;
            let got = tokio::time::timeout(wait, shared.slots.clone().acquire_owned()).await;
            drop(place);
            match got {
                Ok(Ok(p)) => p,
                _ => return Err(busy()),
            }
        }
    };
    conn.hold_slot(permit);
    Ok(())
}

/// The head of a request, owned, so each phase can build a [`Request`].
#[derive(Clone)]
struct Head {
    method: Method,
    path: String,
    query: Option<String>,
    headers: Vec<(String, String)>,
    origin: String,
    content_length: Option<usize>,
}

impl Head {
    fn new(parts: &http::request::Parts, fallback_host: &str, scheme: &str) -> Head {
        let method = match parts.method {
            http::Method::GET => Method::Get,
            http::Method::POST => Method::Post,
            _ => Method::Other,
        };
        let headers: Vec<(String, String)> = parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let host = parts
            .headers
            .get(http::header::HOST)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_else(|| fallback_host.to_owned());
        let content_length = parts
            .headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok());
        Head {
            method,
            path: parts.uri.path().to_owned(),
            query: parts.uri.query().map(str::to_owned),
            headers,
            origin: format!("{scheme}://{host}"),
            content_length,
        }
    }

    /// The request of this head, for its last use (the handler's run):
    /// the head's strings are moved into it, not copied.
    fn into_request(self, body: &mut dyn Read) -> Request<'_> {
        Request {
            method: self.method,
            path: self.path,
            query: self.query,
            headers: self.headers,
            origin: self.origin,
            content_length: self.content_length,
            body,
            params: Vec::new(),
        }
    }

    /// Runs `f` (admission, before the handler's run) on a request made
    /// of this head, with no body, and takes the head back from it: its
    /// strings are lent, not copied. Nothing in admission changes them (a
    /// route's parameters are set again for the handler's run).
    fn lend<R>(self, f: impl FnOnce(&mut Request<'_>) -> R) -> (Head, R) {
        let mut none = std::io::empty();
        let mut rq = self.into_request(&mut none);
        let r = f(&mut rq);
        let Request {
            method,
            path,
            query,
            headers,
            origin,
            content_length,
            ..
        } = rq;
        let head = Head {
            method,
            path,
            query,
            headers,
            origin,
            content_length,
        };
        (head, r)
    }
}

fn internal() -> Response {
    Response::error(&Error::internal_error(
        "The data node could not complete the request",
    ))
}

/// Runs `f` on the blocking pool; `None` if it panicked.
async fn on_pool<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

/// Runs `f` on the pool of `lane` (the router's table): the compute pool,
/// or the blocking pool; `None` if it panicked.
async fn on_lane<T: Send + 'static>(
    shared: &Shared,
    lane: Lane,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    match lane {
        Lane::Compute | Lane::ByOperation => shared.compute.run(f).await,
        Lane::Blocking => on_pool(f).await,
    }
}

/// One request's answer, with the headers the router adds under the
/// request's path prefix ([`Router::headers_for`]: the dashboard's
/// security headers on every `/ui` answer, refusals included).
async fn handle(
    shared: Arc<Shared>,
    conn: Arc<ConnState>,
    req: http::Request<Incoming>,
) -> http::Response<Full<Bytes>> {
    use http::header::{HeaderName, HeaderValue};
    let extra = shared.router.headers_for(req.uri().path());
    let mut resp = handle_request(shared, conn, req).await;
    for (k, v) in extra {
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(&v),
        ) {
            resp.headers_mut().insert(k, v);
        }
    }
    resp
}

async fn handle_request(
    shared: Arc<Shared>,
    conn: Arc<ConnState>,
    req: http::Request<Incoming>,
) -> http::Response<Full<Bytes>> {
    if let Some(e) = conn.take_refusal() {
        conn.closing_without_slot(shared.lingering.clone().try_acquire_owned().ok());
        return render(Response::error(&e), true);
    }
    if let Err(e) = take_slot(&shared, &conn).await {
        conn.closing_without_slot(shared.lingering.clone().try_acquire_owned().ok());
        return render(Response::error(&e), true);
    }
    let close_after = conn.close_after();
    let (parts, body) = req.into_parts();
    // The allow-list, before any route: a request naming another host (a
    // DNS-rebinding page, a misdirected client) is refused with 421.
    let host = parts
        .headers
        .get(http::header::HOST)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
    if !shared
        .hosts
        .allows_host(host.as_deref().unwrap_or(&shared.fallback_host))
    {
        let e = shared.hosts.refusal(host.as_deref());
        return render(Response::error(&e), true);
    }
    let head = Head::new(&parts, &shared.fallback_host, shared.hosts.scheme());
    let chunked = parts.headers.contains_key(http::header::TRANSFER_ENCODING);
    let router = shared.router.clone();
    let lane = router.lane(&head.path);
    if !chunked && head.content_length.unwrap_or(0) == 0 {
        let r = on_lane(&shared, lane, move || {
            router.dispatch_reply(&mut head.into_request(&mut std::io::empty()))
        });
        let r = match r.await {
            Some(reply) => answer(reply).await,
            None => internal(),
        };
        return render(r, close_after);
    }
    // Phase one on the head alone: nothing of the body has been waited
    // for. Pure CPU admission (guards, a constant-time bearer compare,
    // route, body spec) runs here on the runtime thread; an authorize step
    // that reads the authority runs on the pool.
    let (head, inline) = head.lend(|rq| router.admit_inline(rq));
    let mut pump = Pump {
        body,
        deadline: Instant::now() + shared.limits.body_timeout,
        timeout_ms: shared.limits.body_timeout.as_millis(),
        limit: BODY_WINDOW as u64 + 1,
        read: 0,
        ended: false,
        failed: false,
    };
    let mut pre = VecDeque::new();
    let mut pre_len = 0usize;
    let mut early: Option<Error> = None;
    let expects = parts.headers.contains_key(http::header::EXPECT);
    if inline.is_none()
        && !chunked
        && !expects
        && head.content_length.is_some_and(|n| n <= BODY_WINDOW)
    {
        // A small body that arrived with its head is taken from memory
        // without waiting for a byte, so that admission and the handler
        // share one pool hop. Anything not here yet is read only after
        // admission, as below.
        early = already_here(&mut pump, &mut pre, &mut pre_len).await;
        if pump.ended && early.is_none() {
            let router = shared.router.clone();
            let r = on_lane(&shared, lane, move || {
                let (head, admitted) = head.lend(|rq| router.admit(rq));
                let a = match admitted {
                    Ok(a) => a,
                    Err(e) => return (Reply::Ready(Response::error(&public_error(e))), true),
                };
                // A route without a body spec still gets no body.
                if a.body_limit() == 0 {
                    pre.clear();
                }
                let mut reader = BodyReader {
                    pre,
                    cur: Bytes::new(),
                    rx: None,
                };
                let mut rq = head.into_request(&mut reader);
                (router.run_reply(a, &mut rq), false)
            })
            .await;
            return match r {
                Some((reply, refused)) => render(answer(reply).await, close_after || refused),
                None => render(internal(), true),
            };
        }
    }
    let admitted = match inline {
        Some(a) => Some(a.map(|a| (head, a))),
        None => {
            on_lane(&shared, lane, move || {
                let (head, admitted) = head.lend(|rq| router.admit(rq));
                admitted.map(|a| (head, a))
            })
            .await
        }
    };
    let (head, admitted) = match admitted {
        Some(Ok(x)) => x,
        Some(Err(e)) => return render(Response::error(&public_error(e)), true),
        None => return render(internal(), true),
    };
    if let Some(e) = early {
        return render(Response::error(&e), true);
    }
    // The body's deadline starts at admission; its cap is the route's.
    pump.deadline = Instant::now() + shared.limits.body_timeout;
    pump.limit = admitted.body_limit();
    // Read ahead up to the window without holding a worker.
    while pre_len < BODY_WINDOW && !pump.finished() {
        match pump.next().await {
            Some(Ok(b)) => {
                pre_len += b.len();
                pre.push_back(b);
            }
            Some(Err(e)) => return render(Response::error(&e), true),
            None => break,
        }
    }
    let router = shared.router.clone();
    if pump.finished() && lane != Lane::Blocking {
        // The whole body is here: a compute route's handler reads it from
        // memory and never waits.
        let r = shared
            .compute
            .run(move || {
                let mut reader = BodyReader {
                    pre,
                    cur: Bytes::new(),
                    rx: None,
                };
                let mut rq = head.into_request(&mut reader);
                router.run_reply(admitted, &mut rq)
            })
            .await;
        let consumed = pump.complete();
        let resp = match r {
            Some(reply) => answer(reply).await,
            None => internal(),
        };
        return render(resp, close_after || !consumed);
    }
    let (tx, rx) = mpsc::channel(BODY_CHANNEL);
    let mut tx = (!pump.finished()).then_some(tx);
    let job = tokio::task::spawn_blocking(move || {
        let mut reader = BodyReader {
            pre,
            cur: Bytes::new(),
            rx: Some(rx),
        };
        let mut rq = head.into_request(&mut reader);
        router.run_reply(admitted, &mut rq)
    });
    tokio::pin!(job);
    let resp = loop {
        if tx.is_none() {
            break (&mut job).await;
        }
        let item = tokio::select! {
            r = &mut job => break r,
            item = pump.next() => item,
        };
        let mut stop = true;
        if let (Some(t), Some(x)) = (&tx, item) {
            let failed = x.is_err();
            stop = t.send(x).await.is_err() || failed || pump.finished();
        }
        if stop {
            tx = None;
        }
    };
    let consumed = pump.complete();
    let resp = match resp {
        Ok(reply) => answer(reply).await,
        Err(_) => internal(),
    };
    render(resp, close_after || !consumed)
}

/// A handler's answer: at once, or awaited here on the runtime (a
/// mutation's batch becoming durable) without holding a handler thread.
/// If the client goes away meanwhile this future is dropped: the queued
/// mutation is still applied, only its answer is lost.
async fn answer(mut reply: Reply) -> Response {
    loop {
        match reply {
            Reply::Ready(r) => return r,
            Reply::Pending(f) => return f.await,
            // The rest of a compute-pool handler that may wait.
            Reply::Blocking(rest) => match on_pool(rest).await {
                Some(r) => reply = r,
                None => return internal(),
            },
        }
    }
}

/// Takes the body frames that are already here (in hyper's buffer or the
/// socket's), never waiting for one: each frame is polled once, and after a
/// few polls that found nothing the body is left for later. A body error
/// (a truncated body) is returned for the caller to answer after admission.
async fn already_here(
    pump: &mut Pump,
    pre: &mut VecDeque<Bytes>,
    pre_len: &mut usize,
) -> Option<Error> {
    // hyper reads the socket for the body when the connection task runs
    // again: a yield lets it, without waiting for the network.
    const POLLS: usize = 3;
    let mut idle = 0;
    while !pump.finished() && idle < POLLS {
        match tokio::time::timeout(Duration::ZERO, pump.next()).await {
            Ok(Some(Ok(b))) => {
                *pre_len += b.len();
                pre.push_back(b);
            }
            Ok(Some(Err(e))) => return Some(e),
            Ok(None) => break,
            Err(_) => {
                idle += 1;
                tokio::task::yield_now().await;
            }
        }
    }
    None
}

/// Reads a request body frame by frame under its deadline and cap.
struct Pump {
    body: Incoming,
    deadline: Instant,
    timeout_ms: u128,
    limit: u64,
    read: u64,
    ended: bool,
    failed: bool,
}

impl Pump {
    /// Nothing more will be read: the body ended, failed, or reached the
    /// route's cap plus one byte.
    fn finished(&self) -> bool {
        self.ended || self.failed || self.read >= self.limit
    }

    /// The whole body was read, so the connection can carry another request.
    fn complete(&self) -> bool {
        use hyper::body::Body;
        self.ended || (!self.failed && self.body.is_end_stream())
    }

    async fn next(&mut self) -> Option<std::result::Result<Bytes, Error>> {
        loop {
            if self.finished() {
                return None;
            }
            match tokio::time::timeout_at(self.deadline, self.body.frame()).await {
                Err(_) => {
                    self.failed = true;
                    return Some(Err(Error::new(
                        Code::RequestTimeout,
                        format!(
                            "the request body did not arrive within {} ms",
                            self.timeout_ms
                        ),
                    )));
                }
                Ok(None) => {
                    self.ended = true;
                    return None;
                }
                Ok(Some(Err(e))) => {
                    self.failed = true;
                    let msg = if truncated(&e) {
                        "the request body ended before its declared length".to_owned()
                    } else {
                        "the request body is malformed (chunked framing)".to_owned()
                    };
                    return Some(Err(Error::new(Code::InvalidRequest, msg)));
                }
                Ok(Some(Ok(frame))) => {
                    if let Ok(d) = frame.into_data()
                        && !d.is_empty()
                    {
                        self.read += d.len() as u64;
                        return Some(Ok(d));
                    }
                }
            }
        }
    }
}

/// Whether a body error is the connection ending early (hyper reports it
/// as an I/O `UnexpectedEof` under its body error, or as an incomplete
/// message).
fn truncated(e: &hyper::Error) -> bool {
    if e.is_incomplete_message() {
        return true;
    }
    let mut src = std::error::Error::source(e);
    while let Some(s) = src {
        if s.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
        {
            return true;
        }
        src = s.source();
    }
    false
}

/// The handler's view of the body: the read-ahead chunks, then the channel
/// the connection task feeds. A typed transport error (deadline,
/// truncation) surfaces as an `io::Error` wrapping the [`Error`], which
/// [`super::router::BodySpec::read`] unwraps.
struct BodyReader {
    pre: VecDeque<Bytes>,
    cur: Bytes,
    rx: Option<mpsc::Receiver<std::result::Result<Bytes, Error>>>,
}

impl Read for BodyReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if !self.cur.is_empty() || out.is_empty() {
                let n = self.cur.len().min(out.len());
                out[..n].copy_from_slice(&self.cur[..n]);
                bytes::Buf::advance(&mut self.cur, n);
                return Ok(n);
            }
            if let Some(b) = self.pre.pop_front() {
                self.cur = b;
                continue;
            }
            let Some(rx) = &mut self.rx else {
                return Ok(0);
            };
            match rx.blocking_recv() {
                Some(Ok(b)) => self.cur = b,
                Some(Err(e)) => {
                    self.rx = None;
                    return Err(std::io::Error::other(e));
                }
                None => {
                    self.rx = None;
                    return Ok(0);
                }
            }
        }
    }
}

fn render(r: Response, close: bool) -> http::Response<Full<Bytes>> {
    use http::header::{CACHE_CONTROL, CONNECTION, CONTENT_TYPE, HeaderName, HeaderValue};
    let mut b = http::Response::builder()
        .status(r.status)
        .header(CONTENT_TYPE, r.content_type)
        .header(CACHE_CONTROL, "no-store");
    for (k, v) in &r.headers {
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(v),
        ) {
            b = b.header(k, v);
        }
    }
    if close {
        b = b.header(CONNECTION, "close");
    }
    b.body(Full::new(Bytes::from(r.body))).unwrap_or_else(|_| {
        let mut fallback = http::Response::new(Full::new(Bytes::new()));
        *fallback.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
        fallback
    })
}
