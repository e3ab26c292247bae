//! The gate: a validating reader between a client's socket and hyper.
//!
//! hyper parses HTTP/1.1 well, but the refusals it makes itself (a bad
//! header name, a malformed request line, conflicting `Content-Length`
//! headers, a head over its buffer) are bare statuses with an empty body,
//! and its header-read timeout closes the connection without a word. So
//! every request head passes through this gate first: it collects the head
//! on the raw stream (bounded in bytes, header count and time), parses it
//! with `httparse` (the parser hyper itself uses, with the same default
//! configuration, so anything the gate lets through hyper accepts), applies
//! the framing rules hyper is more lenient about, and only then hands the
//! head to hyper, followed by exactly `Content-Length` body bytes. A head it
//! refuses never reaches hyper: the gate records the typed error in the
//! connection's [`ConnState`] and hands hyper a fixed internal request
//! instead, which the service answers with that error as one JSON object
//! and `Connection: close` (so the answer goes out in order, after any
//! response still being written on the connection).
//!
//! The gate also owns the connection's clocks and its place in the head
//! budget. While it waits for a head (a connection's first one, from the
//! accept and through a TLS handshake, or the next one on a kept-alive
//! connection) the connection holds a [`Place`] in the server's
//! [`HeadBudget`] and no request slot; a newer connection may take the
//! place, and the gate then ends the connection without a word. The head's
//! clocks: its first byte within the first-byte deadline (the idle
//! keep-alive timeout between requests), then the rest at the minimum head
//! rate, within the head deadline overall (see [`HeadLimits`]). Once the
//! head is complete the place is given up and the service takes a request
//! slot, which the gate gives back when hyper next asks for a head. The
//! send timeout bounds a response the client does not read.
//!
//! A chunked request body is passed through without re-framing; the
//! connection then closes after its response ([`ConnState::close_after`]),
//! so the gate never has to find the end of a chunked body.

use super::budget::{HeadBudget, Place};
use crate::error::{Code, Error};
use bytes::{Buf, Bytes, BytesMut};
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::{Instant, Sleep};

/// The request the gate hands hyper in place of a refused head. The
/// service never routes it: it answers the refusal stored in [`ConnState`].
pub const REFUSAL_REQUEST: &[u8] = b"GET / HTTP/1.1\r\nhost: refused.invalid\r\n\r\n";

/// Longest request target hyper accepts (`http::Uri` stores lengths in a
/// `u16`); the gate refuses longer ones itself.
const MAX_TARGET: usize = 65_534;

/// Bytes read from the socket at a time.
const READ_CHUNK: usize = 16 * 1024;

/// After the server ends a connection it keeps reading (and dropping) what
/// the client still sends for at most this long and this many bytes, so
/// that closing with unread input does not reset the answer away (a client
/// still uploading a body that was refused with 401 or 413 reads the
/// refusal instead of "connection reset").
const LINGER: Duration = Duration::from_secs(1);
const LINGER_BYTES: usize = 1024 * 1024;

/// A connection's byte stream: plain TCP, or TLS over TCP once the
/// handshake is done (the gate sees decrypted bytes either way).
pub enum Io {
    /// Plain HTTP.
    Plain(TcpStream),
    /// HTTPS (`serve --tls-cert/--tls-key`).
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl From<TcpStream> for Io {
    fn from(s: TcpStream) -> Io {
        Io::Plain(s)
    }
}

impl AsyncRead for Io {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Io {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_write(cx, b),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, b),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_flush(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Io::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The limits the gate enforces.
#[derive(Debug, Clone)]
pub struct HeadLimits {
    /// Largest request head (request line, headers, blank line) in bytes.
    pub max_header_bytes: usize,
    /// Most header lines in one head.
    pub max_headers: usize,
    /// Time to receive a whole head, from its first byte (a connection's
    /// first head: from the accept).
    pub head_timeout: Duration,
    /// Time to the first byte of a connection's first head, from the
    /// accept (a TLS handshake included); also the grace before
    /// `min_head_rate` applies.
    pub first_byte_timeout: Duration,
    /// Bytes per second a head must arrive at, on average, after its first
    /// byte and the grace (0: no rate, only `head_timeout`).
    pub min_head_rate: u64,
    /// Time a kept-alive connection may sit between requests (to the first
    /// byte of its next head).
    pub idle_timeout: Duration,
    /// Time a response write may make no progress.
    pub send_timeout: Duration,
}

/// What the gate and the service of one connection share.
#[derive(Default)]
pub struct ConnState {
    refusal: Mutex<Option<Error>>,
    close_after: AtomicBool,
    /// The request slot (`--max-connections`) held from a complete head
    /// until the gate is next asked for a head.
    slot: Mutex<Option<OwnedSemaphorePermit>>,
    /// A refusal answered without a request slot (a refused head, 503
    /// `server_busy`) lingers only while it holds one of a bounded number
    /// of permits; without one the connection closes right after it.
    linger: Mutex<Option<OwnedSemaphorePermit>>,
    no_linger: AtomicBool,
}

impl ConnState {
    /// The refusal the gate stored for the request hyper is now serving,
    /// if that request is the gate's [`REFUSAL_REQUEST`].
    pub fn take_refusal(&self) -> Option<Error> {
        self.refusal.lock().ok().and_then(|mut r| r.take())
    }

    fn refuse(&self, e: Error) {
        if let Ok(mut r) = self.refusal.lock() {
            *r = Some(e);
        }
    }

    /// Whether the connection must close after the current response (the
    /// request had a chunked body, which the gate does not re-frame).
    pub fn close_after(&self) -> bool {
        self.close_after.load(Ordering::Relaxed)
    }

    /// Whether the connection holds a request slot.
    pub fn has_slot(&self) -> bool {
        self.slot.lock().is_ok_and(|s| s.is_some())
    }

    /// Keeps `permit` (a request slot) until the next head is waited for.
    pub fn hold_slot(&self, permit: OwnedSemaphorePermit) {
        if let Ok(mut s) = self.slot.lock() {
            *s = Some(permit);
        }
    }

    /// The connection closes after a refusal that holds no request slot:
    /// it may linger only with `permit` (`None`: close at once).
    pub fn closing_without_slot(&self, permit: Option<OwnedSemaphorePermit>) {
        match permit {
            Some(p) => {
                if let Ok(mut l) = self.linger.lock() {
                    *l = Some(p);
                }
            }
            None => self.no_linger.store(true, Ordering::Relaxed),
        }
    }

    fn release_slot(&self) {
        let permit = self.slot.lock().ok().and_then(|mut s| s.take());
        drop(permit);
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    /// Waiting for (or collecting) a request head.
    Head,
    /// Passing this many more body bytes.
    Body(u64),
    /// A chunked body: everything passes until the connection closes.
    Rest,
    /// Reads end (EOF to hyper).
    Done,
}

/// The wait for one request head: its place in the head budget and its
/// clock.
struct HeadWait {
    /// `None` once given up (the head is complete).
    place: Option<Place>,
    /// The accept (a connection's first head) or the moment hyper asked
    /// for the next head.
    since: Instant,
    first: bool,
    first_byte: Option<Instant>,
    bytes: u64,
    deadline: Instant,
    sleep: Pin<Box<Sleep>>,
}

impl HeadWait {
    fn new(place: Place, since: Instant, first: bool, l: &HeadLimits) -> HeadWait {
        let wait = if first {
            l.first_byte_timeout.min(l.head_timeout)
        } else {
            l.idle_timeout
        };
        let deadline = since + wait;
        HeadWait {
            place: Some(place),
            since,
            first,
            first_byte: None,
            bytes: 0,
            deadline,
            sleep: Box::pin(tokio::time::sleep_until(deadline)),
        }
    }

    /// The head's deadline overall (`head_timeout`).
    fn cap(&self, first_byte: Instant, l: &HeadLimits) -> Instant {
        (if self.first { self.since } else { first_byte }) + l.head_timeout
    }

    /// `n` more bytes of the head arrived: the deadline moves to what the
    /// minimum rate allows for the bytes so far, never past the cap.
    fn got(&mut self, n: usize, l: &HeadLimits) {
        if n == 0 {
            return;
        }
        let first = *self.first_byte.get_or_insert_with(Instant::now);
        self.bytes = self.bytes.saturating_add(n as u64);
        let cap = self.cap(first, l);
        let deadline = match l.min_head_rate {
            0 => cap,
            rate => {
                let allowed = Duration::from_millis(self.bytes.saturating_mul(1000) / rate);
                (first + l.first_byte_timeout + allowed).min(cap)
            }
        };
        if deadline != self.deadline {
            self.deadline = deadline;
            self.sleep.as_mut().reset(deadline);
        }
    }

    /// Whether the deadline that ran out was the rate's, not the cap's.
    fn by_rate(&self, l: &HeadLimits) -> bool {
        self.first_byte
            .is_some_and(|first| self.deadline < self.cap(first, l))
    }
}

/// The framing of a validated head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BodyFraming {
    Length(u64),
    Chunked,
}

/// The validating reader/writer (see the module docs).
pub struct Gate {
    io: Io,
    limits: HeadLimits,
    conn: std::sync::Arc<ConnState>,
    buf: BytesMut,
    scanned: usize,
    ready: Bytes,
    framing: Framing,
    /// The head being waited for; `None` while a request is in progress.
    wait: Option<HeadWait>,
    budget: Arc<HeadBudget>,
    /// A newer connection took this one's place: it ends at once.
    dropped: bool,
    send_clock: Option<Pin<Box<Sleep>>>,
    /// Set once the sending side is shut down: the linger deadline.
    linger: Option<Pin<Box<Sleep>>>,
    lingered: usize,
}

impl Gate {
    /// A gate on a connection accepted at `accepted` (its TLS handshake,
    /// if any, done since), holding `place` in the head budget: the clocks
    /// of the first head run from the accept.
    pub fn new(
        io: Io,
        limits: HeadLimits,
        conn: std::sync::Arc<ConnState>,
        place: Place,
        accepted: Instant,
    ) -> Gate {
        let budget = place.budget().clone();
        let wait = HeadWait::new(place, accepted, true, &limits);
        Gate {
            io,
            limits,
            conn,
            buf: BytesMut::new(),
            scanned: 0,
            ready: Bytes::new(),
            framing: Framing::Head,
            wait: Some(wait),
            budget,
            dropped: false,
            send_clock: None,
            linger: None,
            lingered: 0,
        }
    }

    fn refuse(&mut self, e: Error) {
        self.conn.refuse(e);
        self.ready = Bytes::from_static(REFUSAL_REQUEST);
        self.framing = Framing::Done;
        self.wait = None;
        self.buf.clear();
    }

    /// A newer connection took this one's place: reads end (hyper closes
    /// the connection), and the shutdown does not linger.
    fn drop_conn(&mut self) -> bool {
        self.framing = Framing::Done;
        self.wait = None;
        self.dropped = true;
        self.buf.clear();
        false
    }

    /// Reads up to `max` bytes from the socket into `buf`.
    fn fill(&mut self, cx: &mut Context<'_>, max: usize) -> Poll<io::Result<usize>> {
        // Not zeroed first: `ReadBuf` tracks what the read initialised, and
        // only that (`filled`) is copied.
        let mut tmp = [const { std::mem::MaybeUninit::<u8>::uninit() }; READ_CHUNK];
        let n = max.clamp(1, READ_CHUNK);
        let mut rb = ReadBuf::uninit(&mut tmp[..n]);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut rb))?;
        let got = rb.filled().len();
        self.buf.extend_from_slice(rb.filled());
        Poll::Ready(Ok(got))
    }

    /// Head state: collect, validate, then queue the head for hyper.
    /// `Ready(Ok(true))`: something changed (loop again); `Ready(Ok(false))`:
    /// reads are over (EOF to hyper).
    fn poll_head(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<bool>> {
        if self.wait.is_none() {
            // hyper asks for the next head of a kept-alive connection (the
            // previous answer is written): the request slot is free again,
            // and the connection waits in the head budget like a new one.
            self.conn.release_slot();
            let place = self.budget.enter();
            let mut wait = HeadWait::new(place, Instant::now(), false, &self.limits);
            wait.got(self.buf.len(), &self.limits);
            self.wait = Some(wait);
        }
        loop {
            let evicted = self
                .wait
                .as_ref()
                .and_then(|w| w.place.as_ref())
                .is_some_and(|p| p.poll_dropped(cx).is_ready());
            // An answer hyper has not flushed yet still goes out: hyper
            // flushes before it shuts the connection down.
            if evicted {
                return Poll::Ready(Ok(self.drop_conn()));
            }
            // Empty lines before a request line are ignored (RFC 9112 §2.2).
            let lead = self
                .buf
                .iter()
                .take_while(|b| **b == b'\r' || **b == b'\n')
                .count();
            if lead > 0 {
                self.buf.advance(lead);
                self.scanned = 0;
            }
            if let Some(end) = head_end(&self.buf, &mut self.scanned) {
                if end > self.limits.max_header_bytes {
                    self.refuse(too_large(&self.limits));
                    return Poll::Ready(Ok(true));
                }
                // The head is complete: its place goes back to the budget,
                // unless a newer connection took it first.
                let kept = self
                    .wait
                    .take()
                    .and_then(|mut w| w.place.take())
                    .is_none_or(Place::leave);
                if !kept {
                    return Poll::Ready(Ok(self.drop_conn()));
                }
                match validate(&self.buf[..end], &self.limits) {
                    Ok(framing) => {
                        self.ready = self.buf.split_to(end).freeze();
                        if self.buf.is_empty() && self.buf.capacity() > READ_CHUNK {
                            // Do not keep a large head's buffer for the
                            // rest of a kept-alive connection.
                            self.buf = BytesMut::new();
                        }
                        self.scanned = 0;
                        self.framing = match framing {
                            BodyFraming::Length(n) => Framing::Body(n),
                            BodyFraming::Chunked => {
                                self.conn.close_after.store(true, Ordering::Relaxed);
                                Framing::Rest
                            }
                        };
                    }
                    Err(e) => self.refuse(e),
                }
                return Poll::Ready(Ok(true));
            }
            if self.buf.len() > self.limits.max_header_bytes {
                self.refuse(too_large(&self.limits));
                return Poll::Ready(Ok(true));
            }
            let room = self.limits.max_header_bytes + 1 - self.buf.len();
            match self.fill(cx, room) {
                Poll::Ready(Ok(0)) => {
                    if self.buf.is_empty() {
                        self.framing = Framing::Done;
                        return Poll::Ready(Ok(false));
                    }
                    self.refuse(Error::new(
                        Code::InvalidRequest,
                        "the connection ended inside a request head",
                    ));
                    return Poll::Ready(Ok(true));
                }
                Poll::Ready(Ok(n)) => {
                    if let Some(w) = &mut self.wait {
                        w.got(n, &self.limits);
                    }
                    continue;
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => {}
            }
            let Some(w) = &mut self.wait else {
                return Poll::Pending;
            };
            ready!(w.sleep.as_mut().poll(cx));
            let by_rate = w.by_rate(&self.limits);
            if self.buf.is_empty() {
                // Nothing of a request arrived (or only empty lines): close
                // without an answer.
                self.framing = Framing::Done;
                self.wait = None;
                return Poll::Ready(Ok(false));
            }
            let msg = if by_rate {
                format!(
                    "the request head arrived slower than {} bytes per second",
                    self.limits.min_head_rate
                )
            } else {
                format!(
                    "the request head did not arrive within {} ms",
                    self.limits.head_timeout.as_millis()
                )
            };
            self.refuse(Error::new(Code::RequestTimeout, msg));
            return Poll::Ready(Ok(true));
        }
    }
}

/// The gate's head rules on one buffer, as [`Gate`] applies them (leading
/// empty lines skipped, the byte bound, then [`validate`]), for the fuzz
/// target and tests: `None` while `buf` holds no complete head; else the
/// offset where the body starts and the head's body framing (`Some(n)`:
/// `Content-Length` n, `None`: chunked), or the refusal the gate answers.
pub fn check_head(buf: &[u8], limits: &HeadLimits) -> Option<Result<(usize, Option<u64>), Error>> {
    let lead = buf
        .iter()
        .take_while(|b| **b == b'\r' || **b == b'\n')
        .count();
    let rest = &buf[lead..];
    let mut scanned = 0;
    let Some(end) = head_end(rest, &mut scanned) else {
        return (rest.len() > limits.max_header_bytes).then(|| Err(too_large(limits)));
    };
    if end > limits.max_header_bytes {
        return Some(Err(too_large(limits)));
    }
    Some(validate(&rest[..end], limits).map(|f| {
        (
            lead + end,
            match f {
                BodyFraming::Length(n) => Some(n),
                BodyFraming::Chunked => None,
            },
        )
    }))
}

fn too_large(l: &HeadLimits) -> Error {
    Error::new(
        Code::HeaderTooLarge,
        format!(
            "the request head exceeds the {}-byte limit",
            l.max_header_bytes
        ),
    )
}

/// The end (exclusive) of the head in `buf`: after the first empty line
/// (`\n\n` or `\n\r\n`). `scanned` remembers how far the search got so a
/// head arriving a byte at a time is scanned once, not once per byte.
fn head_end(buf: &[u8], scanned: &mut usize) -> Option<usize> {
    let mut i = *scanned;
    while i < buf.len() {
        if buf[i] == b'\n' {
            match (buf.get(i + 1), buf.get(i + 2)) {
                (Some(b'\n'), _) => return Some(i + 2),
                (Some(b'\r'), Some(b'\n')) => return Some(i + 3),
                (Some(b'\r'), None) | (None, _) => {
                    *scanned = i;
                    return None;
                }
                _ => {}
            }
        }
        i += 1;
    }
    *scanned = i;
    None
}

fn bad(msg: &str) -> Error {
    Error::new(Code::InvalidRequest, msg.to_owned())
}

fn bad_length(msg: &str) -> Error {
    Error::new(Code::InvalidContentLength, msg.to_owned())
}

/// Parses and checks one complete head; returns its body framing.
fn validate(head: &[u8], limits: &HeadLimits) -> Result<BodyFraming, Error> {
    let mut headers = vec![httparse::EMPTY_HEADER; limits.max_headers];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(bad("the request head is incomplete")),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(Error::new(
                Code::HeaderTooLarge,
                format!(
                    "the request has more than {} header lines",
                    limits.max_headers
                ),
            ));
        }
        Err(httparse::Error::HeaderName) => {
            return Err(bad("a header name is not a valid token"));
        }
        Err(httparse::Error::HeaderValue) => {
            return Err(bad("a header value contains a control character"));
        }
        Err(httparse::Error::Version) => {
            return Err(bad("the request line does not end in HTTP/1.0 or HTTP/1.1"));
        }
        Err(httparse::Error::Token) => {
            return Err(bad(
                "the request line's method or target contains an invalid byte",
            ));
        }
        Err(_) => return Err(bad("the request line or a header line is malformed")),
    }
    let method = req.method.unwrap_or("");
    if http::Method::from_bytes(method.as_bytes()).is_err() {
        return Err(bad("the request method is not a valid token"));
    }
    let target = req.path.unwrap_or("");
    if !target.is_ascii() {
        return Err(bad(
            "the request target must be ASCII (percent-encode other bytes)",
        ));
    }
    if target.len() > MAX_TARGET {
        return Err(bad("the request target is over 65534 bytes"));
    }
    if http::Uri::try_from(target).is_err() {
        return Err(bad("the request target is not a valid URI"));
    }
    let http11 = req.version == Some(1);
    let mut length: Option<u64> = None;
    let mut chunked = false;
    let (mut hosts, mut authorizations, mut content_types) = (0, 0, 0);
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            if length.is_some() {
                return Err(bad_length(
                    "the request has more than one Content-Length header",
                ));
            }
            length = Some(parse_length(h.value)?);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if chunked {
                return Err(bad(
                    "the request has more than one Transfer-Encoding header",
                ));
            }
            if !http11 {
                return Err(bad("an HTTP/1.0 request cannot use Transfer-Encoding"));
            }
            if !trim(h.value).eq_ignore_ascii_case(b"chunked") {
                return Err(bad("the only Transfer-Encoding accepted is chunked"));
            }
            chunked = true;
        } else if h.name.eq_ignore_ascii_case("host") {
            hosts += 1;
            if hosts > 1 {
                return Err(bad("the request has more than one Host header"));
            }
        } else if h.name.eq_ignore_ascii_case("authorization") {
            // Two credentials are ambiguous: a proxy in front may check
            // one while a route reads the other.
            authorizations += 1;
            if authorizations > 1 {
                return Err(bad("the request has more than one Authorization header"));
            }
        } else if h.name.eq_ignore_ascii_case("content-type") {
            content_types += 1;
            if content_types > 1 {
                return Err(bad("the request has more than one Content-Type header"));
            }
        }
    }
    let framing = match (length, chunked) {
        (Some(_), true) => {
            return Err(bad_length(
                "a request cannot carry both Content-Length and Transfer-Encoding",
            ));
        }
        (None, true) => BodyFraming::Chunked,
        (Some(n), false) => BodyFraming::Length(n),
        (None, false) => BodyFraming::Length(0),
    };
    // RFC 9112 section 3.2: an HTTP/1.1 request without Host is refused
    // (an HTTP/1.0 one names the listener's own address).
    if http11 && hosts == 0 {
        return Err(bad("an HTTP/1.1 request must carry a Host header"));
    }
    Ok(framing)
}

fn trim(v: &[u8]) -> &[u8] {
    let start = v
        .iter()
        .position(|b| *b != b' ' && *b != b'\t')
        .unwrap_or(v.len());
    let end = v
        .iter()
        .rposition(|b| *b != b' ' && *b != b'\t')
        .map_or(start, |p| p + 1);
    &v[start..end]
}

/// `Content-Length`: 1 to 15 ASCII digits and nothing else (no sign, no
/// list, no inner space). 15 digits is far above any body cap and below
/// every overflow.
fn parse_length(v: &[u8]) -> Result<u64, Error> {
    let v = trim(v);
    if v.is_empty() || v.len() > 15 || !v.iter().all(u8::is_ascii_digit) {
        return Err(bad_length(
            "Content-Length must be one non-negative decimal integer",
        ));
    }
    v.iter()
        .try_fold(0u64, |acc, d| {
            acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
        })
        .ok_or_else(|| bad_length("Content-Length is out of range"))
}

impl AsyncRead for Gate {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        out: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if out.remaining() == 0 {
            return Poll::Ready(Ok(()));
        }
        loop {
            if !this.ready.is_empty() {
                let n = this.ready.len().min(out.remaining());
                out.put_slice(&this.ready[..n]);
                this.ready.advance(n);
                return Poll::Ready(Ok(()));
            }
            match this.framing {
                Framing::Done => return Poll::Ready(Ok(())),
                Framing::Head => {
                    if !ready!(this.poll_head(cx))? {
                        return Poll::Ready(Ok(()));
                    }
                }
                Framing::Body(0) => this.framing = Framing::Head,
                Framing::Body(_) | Framing::Rest => {
                    let left = match this.framing {
                        Framing::Body(n) => usize::try_from(n).unwrap_or(usize::MAX),
                        _ => usize::MAX,
                    };
                    if this.buf.is_empty() {
                        let want = left.min(out.remaining()).min(READ_CHUNK);
                        if ready!(this.fill(cx, want))? == 0 {
                            // The client ended mid-body: hyper reports the
                            // truncation to the service.
                            this.framing = Framing::Done;
                            return Poll::Ready(Ok(()));
                        }
                    }
                    let n = this.buf.len().min(left).min(out.remaining());
                    out.put_slice(&this.buf[..n]);
                    this.buf.advance(n);
                    if let Framing::Body(left) = &mut this.framing {
                        *left -= n as u64;
                    }
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}

impl Gate {
    fn send_progress<T>(
        &mut self,
        cx: &mut Context<'_>,
        p: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match p {
            Poll::Ready(r) => {
                self.send_clock = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let limit = self.limits.send_timeout;
                let clock = self
                    .send_clock
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                if clock.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the client did not read the response in time",
                    )));
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for Gate {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let p = Pin::new(&mut this.io).poll_write(cx, b);
        this.send_progress(cx, p)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let p = Pin::new(&mut this.io).poll_flush(cx);
        this.send_progress(cx, p)
    }

    /// Shuts the sending side down, then lingers (see [`LINGER`]).
    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.dropped {
            // Dropped for a newer connection: nothing to say, and its
            // socket is closed at once rather than lingered on.
            return Poll::Ready(Ok(()));
        }
        if this.conn.no_linger.load(Ordering::Relaxed) {
            let p = Pin::new(&mut this.io).poll_shutdown(cx);
            return this.send_progress(cx, p);
        }
        if this.linger.is_none() {
            let p = Pin::new(&mut this.io).poll_shutdown(cx);
            ready!(this.send_progress(cx, p))?;
            this.linger = Some(Box::pin(tokio::time::sleep(LINGER)));
        }
        let mut tmp = [0u8; READ_CHUNK];
        while this.lingered < LINGER_BYTES {
            let mut rb = ReadBuf::new(&mut tmp);
            match Pin::new(&mut this.io).poll_read(cx, &mut rb) {
                Poll::Ready(Ok(())) if rb.filled().is_empty() => break,
                Poll::Ready(Ok(())) => this.lingered += rb.filled().len(),
                Poll::Ready(Err(_)) => break,
                Poll::Pending => {
                    let done = this
                        .linger
                        .as_mut()
                        .is_none_or(|l| l.as_mut().poll(cx).is_ready());
                    if done {
                        break;
                    }
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> HeadLimits {
        HeadLimits {
            max_header_bytes: 1024,
            max_headers: 4,
            head_timeout: Duration::from_secs(1),
            first_byte_timeout: Duration::from_secs(1),
            min_head_rate: 100,
            idle_timeout: Duration::from_secs(1),
            send_timeout: Duration::from_secs(1),
        }
    }

    fn check(head: &str) -> Result<BodyFraming, Code> {
        validate(head.as_bytes(), &limits()).map_err(|e| e.code())
    }

    #[test]
    fn head_end_is_found_once_across_pieces() {
        let mut scanned = 0;
        let whole = b"GET / HTTP/1.1\r\nHost: a\r\n\r\nrest";
        for cut in 1..whole.len() {
            scanned = scanned.min(cut);
            let got = head_end(&whole[..cut], &mut scanned);
            if cut >= 27 {
                assert_eq!(got, Some(27), "{cut}");
            } else {
                assert_eq!(got, None, "{cut}");
            }
        }
        let mut s = 0;
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nx", &mut s), Some(16));
    }

    #[test]
    fn check_head_applies_the_gate_rules_to_one_buffer() {
        let l = limits();
        assert_eq!(
            check_head(
                b"\r\n\r\nPOST / HTTP/1.1\r\nHost: a\r\nContent-Length: 2\r\n\r\nab",
                &l
            )
            .map(|r| r.map_err(|e| e.code())),
            Some(Ok((51, Some(2))))
        );
        assert!(check_head(b"GET / HTTP/1.1\r\nHost: a\r\n", &l).is_none());
        let big = format!("GET / HTTP/1.1\r\nX: {}\r\n", "a".repeat(2000));
        assert_eq!(
            check_head(big.as_bytes(), &l).map(|r| r.map_err(|e| e.code())),
            Some(Err(Code::HeaderTooLarge))
        );
        assert_eq!(
            check_head(
                b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
                &l
            )
            .map(|r| r.map_err(|e| e.code())),
            Some(Ok((56, None)))
        );
    }

    #[test]
    fn framing_rules() {
        assert_eq!(
            check("GET / HTTP/1.1\r\nHost: a\r\n\r\n"),
            Ok(BodyFraming::Length(0))
        );
        assert_eq!(check("GET / HTTP/1.0\r\n\r\n"), Ok(BodyFraming::Length(0)));
        assert_eq!(
            check("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n"),
            Ok(BodyFraming::Length(5))
        );
        assert_eq!(
            check("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked \r\n\r\n"),
            Ok(BodyFraming::Chunked)
        );
        for cl in [
            "+5",
            "-1",
            "5,5",
            "5 5",
            "0x5",
            "",
            "1234567890123456",
            "５",
        ] {
            assert_eq!(
                check(&format!("POST / HTTP/1.1\r\nContent-Length: {cl}\r\n\r\n")),
                Err(Code::InvalidContentLength),
                "{cl:?}"
            );
        }
        for dup in [
            "Content-Length: 5\r\nContent-Length: 5",
            "Content-Length: 5\r\nContent-Length: 6",
            "Content-Length: 5\r\nTransfer-Encoding: chunked",
            "Transfer-Encoding: chunked\r\nContent-Length: 5",
        ] {
            assert_eq!(
                check(&format!("POST / HTTP/1.1\r\n{dup}\r\n\r\n")),
                Err(Code::InvalidContentLength),
                "{dup}"
            );
        }
        for bad in [
            "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked, chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
            "GET / HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nX: y\r\n\r\n",
            "GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: a\r\nContent-Type: a/b\r\nContent-Type: c/d\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
            "GET / HTTP/1.1\r\nName: a\x01b\r\n\r\n",
            "GET /\x00 HTTP/1.1\r\n\r\n",
            "GET /\u{e9} HTTP/1.1\r\n\r\n",
            "GET / HTTP/2.0\r\n\r\n",
            "G(T / HTTP/1.1\r\n\r\n",
            "GET  HTTP/1.1\r\n\r\n",
        ] {
            assert_eq!(check(bad), Err(Code::InvalidRequest), "{bad:?}");
        }
        assert_eq!(
            check("GET / HTTP/1.1\r\na: 1\r\nb: 1\r\nc: 1\r\nd: 1\r\ne: 1\r\n\r\n"),
            Err(Code::HeaderTooLarge)
        );
    }
}
