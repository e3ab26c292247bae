//! `serve --ui`: the operator's read-only dashboard on the server's own
//! listener (docs/dashboard.md).
//!
//! - Its own credential: the `--ui-token-file` token, sent once in a
//!   form POST to `/ui/login` and compared in constant time
//!   ([`super::shared::digest_matches`], as the node bearer), exchanged
//!   for a random 256-bit session cookie (`HttpOnly; SameSite=Strict;
//!   Path=/ui`, `Secure` over TLS) kept in memory with an expiry, at most
//!   [`MAX_SESSIONS`] at once. The token is never in a URL, and no
//!   `Authorization` header (an agent token, the node bearer) opens
//!   anything here: every page but the login form and the static files
//!   needs the cookie, else a redirect to the login form (a page) or 401
//!   (the JSON route).
//! - The two POSTs (login, logout) check that the request comes from a
//!   page of this server (`Origin`, or the browser's `Sec-Fetch-Site`
//!   when the referrer policy made `Origin` null); the Host check is the
//!   server's, before any route.
//! - Reads only: the overview and the explanations are the operator's
//!   local reads (`workflow::service::overview::operator`,
//!   `workflow::service::explain::operator`): read-only snapshots without
//!   the data-directory lock, so the dashboard never blocks an agent.
//! - Every value is HTML-escaped here, after control characters and
//!   bidirectional controls were made visible (`explain::inert`); the
//!   page's script renders the polled JSON with `textContent` only.
//! - Every `/ui` answer carries [`security_headers`] (CSP `default-src
//!   'self'`: no inline script or style; the CSS and JS are served from
//!   the binary under `/ui/static/`).

use super::hosts::HostAllowList;
use super::router::{
    Access, BodySpec, Method, Request, Response, RouteSpec, Router, form_decode, percent_decode,
    public_error,
};
use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use crate::workflow::service::change::ChangeSel;
use crate::workflow::service::explain::{self, ExplainRequest, Explanation};
use crate::workflow::service::overview::{self, ChangeView, Overview, OverviewRequest};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The path prefix of every dashboard route.
pub const PREFIX: &str = "/ui";
/// The session cookie's name.
pub const COOKIE: &str = "agent_task_ui";
/// Sessions kept at once; a login past it ends the oldest.
pub const MAX_SESSIONS: usize = 64;
/// How long a session lives after its login.
pub const SESSION_TTL: Duration = Duration::from_secs(8 * 3600);
/// The largest login form body.
pub const MAX_LOGIN_BODY: u64 = 2048;
/// The shortest dashboard credential accepted.
pub const MIN_TOKEN: usize = 16;
/// The longest dashboard credential accepted.
pub const MAX_TOKEN: usize = 512;
/// The longest `--ui-token-file` read (the token and a line ending).
const MAX_TOKEN_FILE: u64 = MAX_TOKEN as u64 + 2;

const SCRIPT: &str = include_str!("dashboard/dashboard.js");
const STYLE: &str = include_str!("dashboard/dashboard.css");

/// The headers of every `/ui` answer.
pub fn security_headers() -> Vec<(String, String)> {
    [
        (
            "Content-Security-Policy",
            "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
        ),
        ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
        ("Cache-Control", "no-store"),
        ("X-Frame-Options", "DENY"),
        ("Cross-Origin-Opener-Policy", "same-origin"),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect()
}

/// Reads the dashboard credential from `path`: owner-private (0600, owned
/// by the user running `serve`), not a symbolic link, at most
/// [`MAX_TOKEN`] printable ASCII characters and at least [`MIN_TOKEN`],
/// one optional line ending.
pub fn read_credential(path: &Path) -> Result<String> {
    let shown = path.display().to_string();
    let f = crate::store::private_fs::open_private_read(path)?.ok_or_else(|| {
        Error::new(
            Code::Config,
            format!("the dashboard token file {shown} does not exist"),
        )
        .with("path", shown.clone())
    })?;
    let mut raw = Vec::new();
    f.take(MAX_TOKEN_FILE + 1)
        .read_to_end(&mut raw)
        .map_err(|e| Error::io("read", path, e))?;
    let mut s = String::from_utf8(raw).map_err(|_| {
        Error::new(Code::Config, "the dashboard token file is not UTF-8")
            .with("path", shown.clone())
    })?;
    if s.ends_with('\n') {
        s.pop();
        if s.ends_with('\r') {
            s.pop();
        }
    }
    if s.len() < MIN_TOKEN || s.len() > MAX_TOKEN || !s.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(Error::new(
            Code::Config,
            format!(
                "the dashboard token must be {MIN_TOKEN}-{MAX_TOKEN} printable ASCII characters without spaces"
            ),
        )
        .with("path", shown)
        .with("fix", "write a fresh random token, e.g. `head -c 32 /dev/urandom | base64 > F; chmod 600 F`"));
    }
    Ok(s)
}

/// The dashboard's state: its credential (as a digest), the live
/// sessions, and what it reads.
pub struct Dashboard {
    credential: [u8; 32],
    sessions: Mutex<HashMap<[u8; 32], Instant>>,
    root: PathBuf,
    clock: Arc<dyn Clock>,
    secure: bool,
    hosts: Arc<HostAllowList>,
}

impl Dashboard {
    /// The dashboard of the workflow data directory at `root`, for the
    /// credential `token`, behind `hosts` (its scheme says whether the
    /// cookie is `Secure`).
    pub fn new(
        token: &str,
        root: PathBuf,
        clock: Arc<dyn Clock>,
        hosts: Arc<HostAllowList>,
    ) -> Dashboard {
        Dashboard {
            credential: Sha256::digest(token.as_bytes()).into(),
            sessions: Mutex::new(HashMap::new()),
            root,
            clock,
            secure: hosts.scheme() == "https",
            hosts,
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<[u8; 32], Instant>> {
        // A panic while holding the lock leaves a map that is still whole.
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// A new session: its cookie value (64 hex digits); the map keeps its
    /// digest only.
    fn open_session(&self) -> Result<String> {
        let id: [u8; 32] = crate::wire::random_bytes()?;
        let value = hex(&id);
        let digest: [u8; 32] = Sha256::digest(value.as_bytes()).into();
        let now = Instant::now();
        let mut s = self.sessions();
        s.retain(|_, until| *until > now);
        while s.len() >= MAX_SESSIONS {
            let oldest = s.iter().min_by_key(|(_, until)| **until).map(|(k, _)| *k);
            match oldest {
                Some(k) => {
                    s.remove(&k);
                }
                None => break,
            }
        }
        s.insert(digest, now + SESSION_TTL);
        Ok(value)
    }

    /// The digest of the request's session cookie when it names a live
    /// session.
    fn session(&self, req: &Request<'_>) -> Option<[u8; 32]> {
        let now = Instant::now();
        for (k, v) in &req.headers {
            if !k.eq_ignore_ascii_case("cookie") {
                continue;
            }
            for part in v.split(';') {
                let Some((name, value)) = part.trim().split_once('=') else {
                    continue;
                };
                if name != COOKIE
                    || value.len() != 64
                    || !value.bytes().all(|b| b.is_ascii_hexdigit())
                {
                    continue;
                }
                let digest: [u8; 32] = Sha256::digest(value.as_bytes()).into();
                let mut s = self.sessions();
                match s.get(&digest) {
                    Some(until) if *until > now => return Some(digest),
                    Some(_) => {
                        s.remove(&digest);
                    }
                    None => {}
                }
            }
        }
        None
    }

    fn cookie(&self, value: &str, max_age: u64) -> String {
        let secure = if self.secure { "; Secure" } else { "" };
        format!(
            "{COOKIE}={value}; Path={PREFIX}; Max-Age={max_age}; HttpOnly; SameSite=Strict{secure}"
        )
    }

    /// Whether a POST comes from a page of this server: its `Origin` is
    /// one of the server's (scheme and allowed host), or, when the
    /// browser sent `Origin: null` or none (the pages' `no-referrer`
    /// policy), its `Sec-Fetch-Site` says `same-origin`. A request with
    /// neither is refused (a script without a browser sends `Origin`).
    fn same_origin(&self, req: &Request<'_>) -> bool {
        let site = req.header("sec-fetch-site");
        if site.is_some_and(|s| s != "same-origin") {
            return false;
        }
        match req.header("origin") {
            Some(o) if o != "null" => self.hosts.allows_origin(o),
            _ => site == Some("same-origin"),
        }
    }
}

/// Lower-case hex.
fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// Text for HTML: control and bidirectional characters made visible
/// (`explain::inert`), then `&<>"'` escaped.
pub fn show(s: &str) -> String {
    let s = explain::inert(s);
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A class name from a state: only `[a-z_]`, else `unknown`.
fn class(s: &str) -> &str {
    if !s.is_empty() && s.len() <= 32 && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        s
    } else {
        "unknown"
    }
}

/// A URL path segment: percent-encodes everything but unreserved bytes.
fn segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

fn short(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

fn lease(ms: Option<i64>) -> String {
    match ms {
        None => "-".into(),
        Some(ms) if ms >= 60_000 => format!("{}m{:02}s", ms / 60_000, (ms % 60_000) / 1000),
        Some(ms) => format!("{}.{}s", ms / 1000, (ms % 1000) / 100),
    }
}

fn instant(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(crate::clock::rfc3339_millis)
        .unwrap_or_else(|_| ms.to_string())
}

fn html(status: u16, body: String) -> Response {
    Response {
        status,
        headers: Vec::new(),
        body: body.into_bytes(),
        content_type: "text/html; charset=utf-8",
    }
}

fn redirect(to: &str) -> Response {
    Response {
        status: 303,
        headers: vec![("Location".into(), to.into())],
        body: Vec::new(),
        content_type: "text/plain; charset=utf-8",
    }
}

/// A page: the shared head and header (with the logout button once
/// logged in), then `main`.
fn page(title: &str, logged_in: bool, script: bool, main: &str) -> String {
    let mut s = String::new();
    s.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    s.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = write!(s, "<title>{} · agent-task</title>", show(title));
    s.push_str("<link rel=\"stylesheet\" href=\"/ui/static/dashboard.css\">");
    if script {
        s.push_str("<script src=\"/ui/static/dashboard.js\" defer></script>");
    }
    s.push_str("</head><body><header><a class=\"brand\" href=\"/ui/\">agent-task</a>");
    s.push_str("<span class=\"muted\">operator dashboard · read-only</span>");
    if logged_in {
        s.push_str(
            "<form class=\"logout\" method=\"post\" action=\"/ui/logout\"><button type=\"submit\">Log out</button></form>",
        );
    }
    s.push_str("</header><main>");
    s.push_str(main);
    s.push_str("</main></body></html>\n");
    s
}

fn login_page(status: u16, message: Option<&str>) -> Response {
    let mut m = String::from("<h1>Log in</h1>");
    if let Some(msg) = message {
        let _ = write!(
            m,
            "<p class=\"notice\" id=\"login-error\">{}</p>",
            show(msg)
        );
    }
    m.push_str(
        "<form class=\"login\" method=\"post\" action=\"/ui/login\">\
         <label for=\"token\">Dashboard token (the content of <code>--ui-token-file</code>)</label>\
         <input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\" required maxlength=\"512\">\
         <button type=\"submit\">Log in</button></form>",
    );
    html(status, page("Log in", false, false, &m))
}

fn error_page(status: u16, title: &str, e: &Error) -> Response {
    let m = format!(
        "<h1>{}</h1><p class=\"notice\">{}: {}</p><p><a href=\"/ui/\">Back to the overview</a></p>",
        show(title),
        show(e.code().as_str()),
        show(&e.to_string())
    );
    html(status, page(title, true, false, &m))
}

/// The filters of the overview page and its JSON route, from the query
/// string (empty values ignored).
fn filters(req: &Request<'_>) -> Result<OverviewRequest> {
    let get =
        |k: &str| -> Result<Option<String>> { Ok(req.query_param(k)?.filter(|v| !v.is_empty())) };
    Ok(OverviewRequest {
        repo: get("repo")?,
        change: get("change")?,
        state: get("state")?,
        by_agent: get("agent")?,
        group: get("group")?,
    })
}

/// The overview as HTML: one section per group (its Changes side by
/// side), the Changes without a group last. The page's script builds the
/// same structure from the JSON route.
pub fn render_overview(o: &Overview) -> String {
    let mut s = String::new();
    if o.changes.is_empty() {
        s.push_str("<p class=\"empty\">No Changes.</p>");
        return s;
    }
    let mut i = 0;
    while i < o.changes.len() {
        let group = &o.changes[i].group;
        let mut j = i;
        while j < o.changes.len() && o.changes[j].group == *group {
            j += 1;
        }
        s.push_str("<section class=\"group\">");
        match group {
            Some(g) => {
                let _ = write!(
                    s,
                    "<h2>Group <span class=\"label\">{}</span> <span class=\"muted\">{} Change(s) for the same work</span></h2>",
                    show(g),
                    j - i
                );
            }
            None => s.push_str("<h2>Without a group</h2>"),
        }
        s.push_str("<div class=\"side\">");
        for c in &o.changes[i..j] {
            change_card(&mut s, c);
        }
        s.push_str("</div></section>");
        i = j;
    }
    if o.truncated {
        s.push_str(
            "<p class=\"notice\">More Changes matched than are shown: narrow the filters.</p>",
        );
    }
    s
}

fn change_card(s: &mut String, c: &ChangeView) {
    let _ = write!(
        s,
        "<article class=\"change state-{}\" data-change=\"{}\">",
        class(&c.state),
        show(&c.change_id)
    );
    let _ = write!(
        s,
        "<h3><a href=\"/ui/change/{}\">{}</a></h3>",
        segment(&c.change_id),
        show(c.title.as_deref().unwrap_or("(untitled)"))
    );
    let _ = write!(
        s,
        "<p class=\"badges\"><span class=\"badge state\">{}</span><span class=\"badge qualified-{}\">{}</span></p>",
        show(&c.state),
        c.qualified,
        if c.qualified {
            "qualified"
        } else {
            "not qualified"
        }
    );
    s.push_str("<dl>");
    let rev = c
        .revision
        .as_deref()
        .map(|r| short(r, 12))
        .unwrap_or_else(|| "-".into());
    for (k, v) in [
        ("Change", c.change_id.clone()),
        ("Repository", format!("{} / {}", c.repository, c.profile)),
        ("Agent", format!("{} ({})", c.agent_id, c.owner_id)),
        ("Version", format!("{} · revision {}", c.version, rev)),
    ] {
        let _ = write!(s, "<dt>{k}</dt><dd>{}</dd>", show(&v));
    }
    s.push_str("</dl>");
    if !c.tasks.is_empty() {
        s.push_str(
            "<table class=\"tasks\"><thead><tr><th>Step</th><th>Task</th><th>State</th>\
             <th>Attempt</th><th>Holder</th><th>Fence</th><th>Lease left</th></tr></thead><tbody>",
        );
        for t in &c.tasks {
            let _ = write!(
                s,
                "<tr><td>{}{}</td><td class=\"id\">{}</td><td class=\"task-state state-{}\">{}</td>",
                show(&t.step_id),
                if t.required {
                    ""
                } else {
                    " <span class=\"muted\">(optional)</span>"
                },
                show(&short(&t.task_id, 16)),
                class(&t.state),
                show(&t.state)
            );
            match &t.attempt {
                Some(a) => {
                    let _ = write!(
                        s,
                        "<td class=\"attempt-state state-{}\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        class(&a.state),
                        show(&a.state),
                        show(&a.agent_id),
                        a.fence,
                        lease(a.lease_remaining_ms)
                    );
                }
                None => s.push_str(
                    "<td class=\"attempt-state\">-</td><td>-</td><td>-</td><td>-</td></tr>",
                ),
            }
        }
        s.push_str("</tbody></table>");
    }
    if !c.receipts.is_empty() {
        s.push_str("<p class=\"receipts\">Receipts: ");
        for r in &c.receipts {
            let _ = write!(
                s,
                "<span class=\"badge\">v{} {}</span>",
                r.version,
                show(&short(&r.receipt_digest, 12))
            );
        }
        s.push_str("</p>");
    }
    if !c.landings.is_empty() {
        s.push_str("<p class=\"landings\">Landings: ");
        for l in &c.landings {
            let commit = l
                .git_commit
                .as_deref()
                .map(|c| short(c, 12))
                .unwrap_or_default();
            let _ = write!(
                s,
                "<span class=\"badge\">v{} {} {}</span>",
                l.version,
                show(&l.state),
                show(&commit)
            );
        }
        s.push_str("</p>");
    }
    s.push_str("</article>");
}

fn overview_page(o: std::result::Result<&Overview, &Error>, f: &OverviewRequest) -> String {
    let mut m = String::from("<h1>Changes</h1>");
    m.push_str("<form class=\"filters\" method=\"get\" action=\"/ui/\">");
    for (name, label, v) in [
        ("repo", "Repository", &f.repo),
        ("change", "Change", &f.change),
        ("state", "State", &f.state),
        ("agent", "Agent", &f.by_agent),
        ("group", "Group", &f.group),
    ] {
        let _ = write!(
            m,
            "<label>{label} <input name=\"{name}\" value=\"{}\" maxlength=\"128\"></label>",
            show(v.as_deref().unwrap_or(""))
        );
    }
    m.push_str("<button type=\"submit\">Filter</button></form>");
    match o {
        Ok(o) => {
            m.push_str("<p class=\"notice\" id=\"notice\" hidden></p>");
            let _ = write!(
                m,
                "<p class=\"muted\">Read at <span id=\"read-at\">{}</span>; refreshed every 2 s.</p>",
                instant(o.now_ms)
            );
            m.push_str("<div id=\"overview\">");
            m.push_str(&render_overview(o));
        }
        Err(e) => {
            let _ = write!(
                m,
                "<p class=\"notice\" id=\"notice\">Could not read the overview ({}: {}); retrying every 2 s.</p>",
                show(e.code().as_str()),
                show(&e.to_string())
            );
            m.push_str("<p class=\"muted\">Read at <span id=\"read-at\">never</span>.</p>");
            m.push_str("<div id=\"overview\">");
        }
    }
    m.push_str("</div>");
    page("Changes", true, true, &m)
}

fn explanation_page(e: &Explanation) -> String {
    let mut m = String::new();
    let _ = write!(
        m,
        "<p><a href=\"/ui/\">← All Changes</a></p><h1>Change <span class=\"id\">{}</span></h1>",
        show(&e.change_id)
    );
    let rev = e
        .revision
        .as_deref()
        .map(|r| short(r, 12))
        .unwrap_or_else(|| "-".into());
    let _ = write!(
        m,
        "<p class=\"badges\"><span class=\"badge\">version {}</span><span class=\"badge\">revision {}</span>\
         <span class=\"badge qualified-{}\">{}</span></p><p class=\"summary\" id=\"summary\">{}</p>",
        e.version,
        show(&rev),
        e.qualified,
        if e.qualified {
            "qualified"
        } else {
            "not qualified"
        },
        show(&e.summary)
    );
    let next = match &e.next.task_id {
        Some(t) => format!("{} (task {})", e.next.operation, t),
        None => e.next.operation.clone(),
    };
    let _ = write!(m, "<p>Next action: <code>{}</code>", show(&next));
    if let Some(h) = &e.hint {
        let _ = write!(m, " — run <code>{}</code>", show(h));
    }
    m.push_str("</p>");
    for (n, t) in e.tasks.iter().enumerate() {
        let _ = write!(
            m,
            "<section class=\"task state-{}\"><h2>{} <span class=\"id\">{}</span></h2>",
            class(&t.state),
            show(&t.step_id),
            show(&t.task_id)
        );
        let _ = write!(
            m,
            "<p><span class=\"badge\">{}</span> {} <span class=\"muted\">({})</span></p>",
            show(&t.state),
            show(&t.reason),
            show(&t.codes.join(", "))
        );
        let Some(r) = &t.record else {
            m.push_str(
                "<p class=\"muted\">No signed record was imported for this task.</p></section>",
            );
            continue;
        };
        m.push_str("<dl>");
        let mut row = |k: &str, v: String| {
            let _ = write!(m, "<dt>{k}</dt><dd>{}</dd>", show(&v));
        };
        row(
            "Record",
            format!("{} · {} · {}", r.kind, r.outcome, r.status),
        );
        row("Attempt", r.attempt_id.clone());
        row(
            "Runtime",
            format!(
                "{} {} (agent-task {})",
                r.runtime.runtime,
                r.runtime
                    .digest
                    .as_deref()
                    .map(|d| short(d, 19))
                    .unwrap_or_default(),
                r.runtime.agent_task_version
            ),
        );
        if let Some(run) = &r.run {
            let exit = match (run.exit_code, run.signal) {
                (Some(c), _) => format!("exit code {c}"),
                (None, Some(sig)) => format!("signal {sig}"),
                (None, None) => "no exit status".into(),
            };
            row("Exit", exit);
            if let Some(d) = run.duration_ms {
                row("Duration", format!("{d} ms"));
            }
            if run.timed_out == Some(true) {
                row("Timed out", "yes".into());
            }
            if run.output_capped == Some(true) {
                row("Output", "capped".into());
            }
            if let Some(d) = &run.detail {
                row("Detail", d.clone());
            }
        }
        m.push_str("</dl>");
        if let Some(run) = &r.run {
            for (name, tail) in [("stdout", &run.stdout_tail), ("stderr", &run.stderr_tail)] {
                if let Some(tail) = tail.as_deref().filter(|t| !t.is_empty()) {
                    let _ = write!(
                        m,
                        "<h3>{name} (last bytes)</h3><pre class=\"tail\" id=\"{name}-{n}\">{}</pre>",
                        show(tail)
                    );
                }
            }
        }
        if let Some(rv) = &r.review {
            if let Some(f) = &rv.failure {
                let _ = write!(m, "<p>Review failure: {}</p>", show(f));
            }
            if !rv.findings.is_empty() {
                m.push_str(
                    "<table class=\"findings\"><thead><tr><th>Criterion</th><th>Severity</th>\
                     <th>Where</th><th>Finding</th></tr></thead><tbody>",
                );
                for f in &rv.findings {
                    let at = match (&f.path, f.line) {
                        (Some(p), Some(l)) => format!("{p}:{l}"),
                        (Some(p), None) => p.clone(),
                        _ => String::new(),
                    };
                    let _ = write!(
                        m,
                        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        show(&f.criterion),
                        show(&f.severity),
                        show(&at),
                        show(&f.message)
                    );
                }
                m.push_str("</tbody></table>");
            }
        }
        m.push_str("</section>");
    }
    page(&format!("Change {}", e.change_id), true, false, &m)
}

/// Mounts the dashboard's routes and its headers on `router`.
pub fn mount(router: &mut Router, d: Arc<Dashboard>) {
    router.headers_under(PREFIX, security_headers());
    let get = |router: &mut Router, pattern: &str, h: super::router::Handler| {
        router.route(Method::Get, pattern, Access::Public, h);
    };
    get(
        router,
        "/ui",
        Arc::new(|_req: &mut Request<'_>| Ok(redirect("/ui/"))),
    );
    get(
        router,
        "/ui/static/dashboard.js",
        Arc::new(|_req: &mut Request<'_>| {
            Ok(Response {
                status: 200,
                headers: Vec::new(),
                body: SCRIPT.as_bytes().to_vec(),
                content_type: "text/javascript; charset=utf-8",
            })
        }),
    );
    get(
        router,
        "/ui/static/dashboard.css",
        Arc::new(|_req: &mut Request<'_>| {
            Ok(Response {
                status: 200,
                headers: Vec::new(),
                body: STYLE.as_bytes().to_vec(),
                content_type: "text/css; charset=utf-8",
            })
        }),
    );
    get(
        router,
        "/ui/login",
        Arc::new(|_req: &mut Request<'_>| Ok(login_page(200, None))),
    );
    let dl = d.clone();
    router.route_with(
        Method::Post,
        "/ui/login",
        RouteSpec::new(Access::Public).body(BodySpec {
            media: "application/x-www-form-urlencoded",
            max: MAX_LOGIN_BODY,
            wrong_media: "the login form must be application/x-www-form-urlencoded".into(),
            too_large: format!("the login form exceeds {MAX_LOGIN_BODY} bytes"),
        }),
        Arc::new(move |req: &mut Request<'_>| login(&dl, req)),
    );
    let dl = d.clone();
    router.route(
        Method::Post,
        "/ui/logout",
        Access::Public,
        Arc::new(move |req: &mut Request<'_>| {
            if !dl.same_origin(req) {
                return Ok(forbidden_origin());
            }
            if let Some(k) = dl.session(req) {
                dl.sessions().remove(&k);
            }
            let mut r = redirect("/ui/login");
            r.headers.push(("Set-Cookie".into(), dl.cookie("", 0)));
            Ok(r)
        }),
    );
    let dl = d.clone();
    get(
        router,
        "/ui/",
        Arc::new(move |req: &mut Request<'_>| {
            if dl.session(req).is_none() {
                return Ok(redirect("/ui/login"));
            }
            let f = match filters(req) {
                Ok(f) => f,
                Err(e) => return Ok(error_page(400, "Bad filter", &e)),
            };
            let o = overview::operator(&dl.root, dl.clock.as_ref(), &f).map_err(public_error);
            let status = match &o {
                Ok(_) => 200,
                Err(e) if e.code() == Code::InvalidInput => 400,
                Err(_) => 503,
            };
            Ok(html(status, overview_page(o.as_ref(), &f)))
        }),
    );
    let dl = d.clone();
    get(
        router,
        "/ui/api/overview",
        Arc::new(move |req: &mut Request<'_>| {
            if dl.session(req).is_none() {
                return Ok(Response::json(
                    401,
                    &Error::new(Code::Unauthorized, "log in at /ui/login").to_json(),
                ));
            }
            let o = overview::operator(&dl.root, dl.clock.as_ref(), &filters(req)?)?;
            Ok(Response::json(200, &serde_json::to_value(&o)?))
        }),
    );
    let dl = d;
    get(
        router,
        "/ui/change/{id}",
        Arc::new(move |req: &mut Request<'_>| {
            if dl.session(req).is_none() {
                return Ok(redirect("/ui/login"));
            }
            let id = req
                .params
                .first()
                .map(|p| percent_decode(p))
                .transpose()
                .ok()
                .flatten()
                .filter(|id| crate::contract::check_id("change_id", id).is_ok());
            let Some(id) = id else {
                return Ok(error_page(
                    404,
                    "No such Change",
                    &Error::new(Code::NotFound, "no such change"),
                ));
            };
            let r = explain::operator(
                &dl.root,
                dl.clock.as_ref(),
                &ExplainRequest {
                    change: ChangeSel::Id(id),
                    task_id: None,
                },
            )
            .map_err(public_error);
            Ok(match r {
                Ok(e) => html(200, explanation_page(&e)),
                Err(e) if e.code() == Code::NotFound => error_page(404, "No such Change", &e),
                Err(e) => error_page(503, "Could not explain the Change", &e),
            })
        }),
    );
}

fn forbidden_origin() -> Response {
    let e = Error::new(
        Code::Forbidden,
        "the form was not sent from a page of this server",
    );
    html(
        403,
        page(
            "Refused",
            false,
            false,
            &format!(
                "<h1>Refused</h1><p class=\"notice\">{}</p>",
                show(&e.to_string())
            ),
        ),
    )
}

/// `POST /ui/login`: the token from the form, compared in constant time;
/// a session cookie and a redirect to the overview, or the form again
/// with 401 and no cookie.
fn login(d: &Dashboard, req: &mut Request<'_>) -> Result<Response> {
    if !d.same_origin(req) {
        return Ok(forbidden_origin());
    }
    let spec = BodySpec {
        media: "application/x-www-form-urlencoded",
        max: MAX_LOGIN_BODY,
        wrong_media: "the login form must be application/x-www-form-urlencoded".into(),
        too_large: format!("the login form exceeds {MAX_LOGIN_BODY} bytes"),
    };
    let body = match spec.read(req) {
        Ok(b) => b,
        Err(e) => {
            let status = e.code().http_status();
            return Ok(login_page(status, Some(&e.to_string())));
        }
    };
    let body = String::from_utf8_lossy(&body);
    let mut token = None;
    for pair in body.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if form_decode(k)? == "token" {
            token = Some(form_decode(v)?);
            break;
        }
    }
    let ok = token
        .as_deref()
        .is_some_and(|t| t.len() <= MAX_TOKEN && super::shared::digest_matches(&d.credential, t));
    if !ok {
        return Ok(login_page(401, Some("That is not the dashboard token.")));
    }
    let value = d.open_session()?;
    let mut r = redirect("/ui/");
    r.headers
        .push(("Set-Cookie".into(), d.cookie(&value, SESSION_TTL.as_secs())));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_shown_inert_and_escaped() {
        assert_eq!(
            show("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
        assert_eq!(show("\u{1b}[31mRED\u{7}"), "\\x1b[31mRED\\x07");
        assert_eq!(show("a\u{202e}b"), "a\\u{202e}b");
        assert_eq!(class("leased"), "leased");
        assert_eq!(class("x\" onclick=\"y"), "unknown");
        assert_eq!(segment("ch_1/..?"), "ch_1%2F..%3F");
    }

    fn dashboard() -> Dashboard {
        let hosts = HostAllowList::new(
            "127.0.0.1",
            "127.0.0.1:7742".parse().expect("addr"),
            &[],
            false,
        )
        .expect("hosts");
        Dashboard::new(
            "a-dashboard-token-0123",
            PathBuf::from("/nonexistent"),
            Arc::new(crate::clock::SystemClock),
            Arc::new(hosts),
        )
    }

    fn with_headers<'a>(h: &[(&str, &str)], body: &'a mut dyn Read) -> Request<'a> {
        Request {
            method: Method::Post,
            path: "/ui/login".into(),
            query: None,
            headers: h
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            origin: "http://127.0.0.1:7742".into(),
            content_length: None,
            body,
            params: Vec::new(),
        }
    }

    #[test]
    fn sessions_are_bounded_expire_and_are_kept_as_digests() {
        let d = dashboard();
        let first = d.open_session().expect("session");
        assert_eq!(first.len(), 64);
        let mut last = String::new();
        for _ in 0..MAX_SESSIONS + 5 {
            last = d.open_session().expect("session");
        }
        assert_eq!(d.sessions().len(), MAX_SESSIONS);
        let cookie = |v: &str| format!("other=1; {COOKIE}={v}");
        let mut none = std::io::empty();
        let c = cookie(&first);
        assert_eq!(
            d.session(&with_headers(&[("Cookie", &c)], &mut none)),
            None,
            "the oldest ended"
        );
        let c = cookie(&last);
        assert!(
            d.session(&with_headers(&[("Cookie", &c)], &mut none))
                .is_some()
        );
        // The map holds digests, never a cookie value.
        let digest: [u8; 32] = Sha256::digest(last.as_bytes()).into();
        assert!(d.sessions().contains_key(&digest));
        // An expired session opens nothing and is dropped.
        d.sessions().insert(digest, Instant::now());
        assert_eq!(d.session(&with_headers(&[("Cookie", &c)], &mut none)), None);
        assert!(!d.sessions().contains_key(&digest));
        // Not hex, not 64 digits: ignored.
        for bad in ["zz", &"g".repeat(64), ""] {
            let c = cookie(bad);
            assert_eq!(d.session(&with_headers(&[("Cookie", &c)], &mut none)), None);
        }
    }

    #[test]
    fn a_form_must_come_from_this_server() {
        let d = dashboard();
        let mut none = std::io::empty();
        let mut ok = |h: &[(&str, &str)]| d.same_origin(&with_headers(h, &mut none));
        assert!(ok(&[("Origin", "http://127.0.0.1:7742")]));
        assert!(ok(&[("Origin", "http://localhost:7742")]));
        assert!(ok(&[("Origin", "null"), ("Sec-Fetch-Site", "same-origin")]));
        assert!(ok(&[("Sec-Fetch-Site", "same-origin")]));
        assert!(!ok(&[]));
        assert!(!ok(&[("Origin", "null")]));
        assert!(!ok(&[("Origin", "http://evil.example")]));
        assert!(!ok(&[("Origin", "https://127.0.0.1:7742")]));
        assert!(!ok(&[("Origin", "http://127.0.0.1:7743")]));
        assert!(!ok(&[
            ("Origin", "http://127.0.0.1:7742"),
            ("Sec-Fetch-Site", "cross-site")
        ]));
        assert!(!ok(&[("Sec-Fetch-Site", "same-site")]));
    }

    #[test]
    fn only_the_prefix_gets_the_headers() {
        let mut r = Router::new();
        r.headers_under(PREFIX, security_headers());
        assert!(!r.headers_for("/ui").is_empty());
        assert!(!r.headers_for("/ui/x").is_empty());
        assert!(r.headers_for("/uix").is_empty());
        assert!(r.headers_for("/v1/data/x").is_empty());
    }
}
