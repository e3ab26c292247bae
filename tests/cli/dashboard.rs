//! `serve --ui`, the operator's read-only dashboard (issue 31, item 7),
//! through the real binary.
//!
//! Plain HTTP (no browser): no page and no data without the session
//! cookie; a wrong token, an agent's token or the node bearer (as a form
//! value or an `Authorization` bearer) opens nothing; a hostile `Host` and
//! a cross-origin form are refused; the security headers on every `/ui`
//! answer; the token never in a URL or a redirect; the login body bound;
//! logout ends the session; the credential file's rules at start-up.
//!
//! In a real browser: `tests/browser/dashboard.cjs` (pinned
//! `puppeteer-core` driving Debian's `chromium`) loads the dashboard
//! without a cookie (the login form), logs in, sees the overview, sees a
//! claim this test makes through the endpoint appear without a reload,
//! opens the explanation of a failing test and finds its `<script>` and
//! escape sequence shown as text (no dialog, no element), and saves
//! screenshots. `scripts/install-interop.sh` installs puppeteer-core and
//! prints `AGENT_TASK_INTEROP_BROWSER_NODE_PATH` and
//! `AGENT_TASK_INTEROP_CHROMIUM`; without them the browser test is skipped
//! unless `AGENT_TASK_REQUIRE_INTEROP=1` (scripts/test.sh), where it fails.

use crate::common::collect_flow::{Loop, s};
use crate::common::task_support::copy_dir;
use crate::common::workspace_collect::{op, token};
use crate::common::{bin, repo_root};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The dashboard server: killed on drop.
struct Dash {
    child: Child,
    addr: String,
}

impl Drop for Dash {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A response: status, headers (names lower-cased), body.
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl std::fmt::Display for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}\n{}", self.status, self.headers, self.body)
    }
}

/// One HTTP/1.1 request on its own connection; `host` defaults to the
/// server's address.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&[u8]>,
) -> Resp {
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if let Some(b) = body {
        head.push_str(&format!("Content-Length: {}\r\n", b.len()));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).expect("write head");
    if let Some(b) = body {
        // The server may answer (413) before reading it all.
        let _ = s.write_all(b);
    }
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").expect("a response head");
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .expect("status");
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Resp {
        status,
        headers,
        body: body.to_owned(),
    }
}

/// Writes an owner-private file.
fn private_file(p: &Path, content: &str) {
    std::fs::write(p, content).expect("write");
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// The operator's workspace config for the loop's profile.
fn workspace_config(l: &Loop) -> PathBuf {
    let r = l.agent(&["requirements", "--change", &l.change_id]).json();
    let cfg = json!({"version": 1, "agent_task_profiles": [{
        "repository_id": "demo-basic", "profile_id": "default", "native_repository": "demo/basic",
        "data_dir": l.env.data_dir, "target": "main", "requirement_digest": r["requirement_digest"]}]});
    let p = l.env.path("workspace.json");
    std::fs::write(&p, cfg.to_string()).expect("cfg");
    p
}

fn serve_cmd(l: &Loop, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg("--data-dir")
        .arg(&l.env.data_dir)
        .args(["serve", "--bind", "127.0.0.1:0"])
        .args(args);
    c
}

/// Starts `serve --ui` (and the workspace endpoint) with `args` added.
fn serve_ui(l: &Loop, ui_token: &Path, args: &[&str]) -> Dash {
    let cfg = workspace_config(l);
    let mut c = serve_cmd(l, args);
    c.arg("--workspace-config")
        .arg(&cfg)
        .arg("--ui")
        .arg("--ui-token-file")
        .arg(ui_token)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut child = c.spawn().expect("serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"));
    assert_eq!(v["ui"], true, "{v}");
    Dash {
        child,
        addr: v["listening"]
            .as_str()
            .expect("url")
            .trim_start_matches("http://")
            .to_owned(),
    }
}

/// `serve` with these flags must refuse to start: its error object.
fn refused(l: &Loop, args: &[&str]) -> Value {
    let out = serve_cmd(l, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("serve");
    assert!(!out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    serde_json::from_str(err.lines().last().unwrap_or("")).unwrap_or_else(|e| panic!("{e}: {err}"))
}

const UI_TOKEN: &str = "ui-0123456789abcdef-operator-only";

/// The headers every `/ui` answer carries.
fn assert_security_headers(r: &Resp, what: &str) {
    let csp = r.header("content-security-policy").unwrap_or("");
    assert!(csp.starts_with("default-src 'self'"), "{what}: {r}");
    assert!(!csp.contains("unsafe-inline"), "{what}: {r}");
    for (k, v) in [
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
        ("x-frame-options", "DENY"),
    ] {
        assert_eq!(r.header(k), Some(v), "{what}: {k}: {r}");
    }
}

/// Logs in with `tok`; the session cookie (`name=value`), if one was set.
fn login(addr: &str, tok: &str) -> (Resp, Option<String>) {
    let body = format!("token={}", tok.replace('+', "%2B"));
    let origin = format!("http://{addr}");
    let r = http(
        addr,
        "POST",
        "/ui/login",
        &[
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(body.as_bytes()),
    );
    let cookie = r
        .header("set-cookie")
        .and_then(|c| c.split(';').next())
        .filter(|c| c.len() > "agent_task_ui=".len())
        .map(str::to_owned);
    (r, cookie)
}

/// Opens a Change on a fresh copy of the fixture whose add.sh uses `op`.
fn open(l: &Loop, name: &str, op: &str, group: &str, title: &str) -> (PathBuf, String) {
    let ws = l.env.path(name);
    copy_dir(&repo_root().join("fixtures/repos/basic"), &ws);
    std::fs::write(
        ws.join("add.sh"),
        format!("#!/bin/sh\n# Adds two integers (agent edit).\necho $(($1 {op} $2))\n"),
    )
    .expect("write");
    let v = l
        .agent(&[
            "change",
            "open",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--workspace",
            s(&ws),
            "--title",
            title,
            "--group",
            group,
        ])
        .json();
    (ws, v["change_id"].as_str().expect("id").to_owned())
}

/// Checkpoints `ws`; its `tests` task.
fn checkpoint(l: &Loop, ws: &Path) -> String {
    let cp = l.agent(&["checkpoint", "--workspace", s(ws)]).json();
    cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == "tests")
        .and_then(|t| t["task_id"].as_str())
        .expect("tests task")
        .to_owned()
}

/// The loop's Change fails its test with hostile output (an escape
/// sequence, a bell, HTML, invalid UTF-8).
fn failing(l: &Loop) {
    std::fs::write(
        l.workspace.join("add.sh"),
        "#!/bin/sh\nprintf '\\033[31mRED\\007 <script>alert(1)</script> \\377\\376 end\\n' >&2\necho $(($1 - $2))\n",
    )
    .expect("write");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d-fail.json");
    assert_eq!(l.collect(&d).json()["outcome"], "failed");
}

#[test]
fn the_dashboard_gives_nothing_without_its_own_credential_and_sends_its_headers() {
    let l = Loop::basic("bwrap");
    failing(&l);
    let ui = l.env.path("ui-token");
    private_file(&ui, &format!("{UI_TOKEN}\n"));
    let node = l.env.path("node-token");
    private_file(&node, "node-bearer-0123456789abcdef\n");
    let srv = serve_ui(&l, &ui, &["--data-token-file", s(&node)]);
    let a = srv.addr.as_str();
    let agent = token(&l);
    let change = format!("/ui/change/{}", l.change_id);

    // No cookie: every page redirects to the login form, the JSON route
    // is 401; no data in any of them.
    for path in ["/ui/", change.as_str(), "/ui/?state=failed"] {
        let r = http(a, "GET", path, &[], None);
        assert_eq!(
            (r.status, r.header("location")),
            (303, Some("/ui/login")),
            "{path}: {r}"
        );
        assert!(!r.body.contains(&l.change_id), "{path}: {r}");
        assert_security_headers(&r, path);
    }
    let r = http(a, "GET", "/ui/api/overview", &[], None);
    assert_eq!(r.status, 401, "{r}");
    assert!(!r.body.contains(&l.change_id), "{r}");
    assert_security_headers(&r, "api");
    // The login form: posted, never a GET form (the token never in a URL).
    let r = http(a, "GET", "/ui/login", &[], None);
    assert_eq!(r.status, 200, "{r}");
    assert!(
        r.body.contains("method=\"post\" action=\"/ui/login\""),
        "{r}"
    );
    assert!(
        !r.body.contains("<script"),
        "no script on the login page: {r}"
    );
    assert_security_headers(&r, "login");
    // A token in the query string logs nobody in.
    let r = http(a, "GET", &format!("/ui/login?token={UI_TOKEN}"), &[], None);
    assert_eq!(r.header("set-cookie"), None, "{r}");
    let r = http(a, "GET", &format!("/ui/?token={UI_TOKEN}"), &[], None);
    assert_eq!(r.status, 303, "{r}");

    // An agent's token or the node bearer as a bearer: nothing.
    for bearer in [agent.as_str(), "node-bearer-0123456789abcdef", UI_TOKEN] {
        let auth = format!("Bearer {bearer}");
        let r = http(a, "GET", "/ui/", &[("Authorization", &auth)], None);
        assert_eq!(r.status, 303, "{r}");
        let r = http(
            a,
            "GET",
            "/ui/api/overview",
            &[("Authorization", &auth)],
            None,
        );
        assert_eq!(r.status, 401, "{r}");
        assert!(!r.body.contains(&l.change_id), "{r}");
    }
    // Wrong tokens in the form (an agent's, the node bearer, a guess):
    // 401, the form again, no cookie.
    for wrong in [agent.as_str(), "node-bearer-0123456789abcdef", "guess", ""] {
        let (r, cookie) = login(a, wrong);
        assert_eq!(r.status, 401, "{r}");
        assert_eq!(cookie, None, "{r}");
        assert_eq!(r.header("set-cookie"), None, "{r}");
        assert!(r.body.contains("login-error"), "{r}");
        assert_security_headers(&r, "wrong token");
    }
    // A form from another origin, or with no origin at all: refused.
    let body = format!("token={UI_TOKEN}");
    for headers in [
        vec![("Origin", "http://evil.example")],
        vec![("Origin", "null"), ("Sec-Fetch-Site", "cross-site")],
        vec![("Sec-Fetch-Site", "same-site")],
        vec![],
    ] {
        let mut h = headers.clone();
        h.push(("Content-Type", "application/x-www-form-urlencoded"));
        let r = http(a, "POST", "/ui/login", &h, Some(body.as_bytes()));
        assert_eq!(r.status, 403, "{headers:?}: {r}");
        assert_eq!(r.header("set-cookie"), None, "{r}");
    }
    // The login body bound: a larger form is refused before it is read.
    let big = format!("token={UI_TOKEN}&pad={}", "x".repeat(4096));
    let origin = format!("http://{a}");
    let r = http(
        a,
        "POST",
        "/ui/login",
        &[
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        Some(big.as_bytes()),
    );
    assert_eq!(r.status, 413, "{r}");
    assert_eq!(r.header("set-cookie"), None, "{r}");
    // Another media type: refused.
    let r = http(
        a,
        "POST",
        "/ui/login",
        &[("Origin", &origin), ("Content-Type", "application/json")],
        Some(b"{}"),
    );
    assert_eq!(r.status, 415, "{r}");

    // A hostile Host: refused before any route, headers still sent.
    let r = http(a, "GET", "/ui/login", &[("Host", "evil.example")], None);
    assert_eq!(r.status, 421, "{r}");
    assert_security_headers(&r, "hostile host");

    // The right token: a session cookie, HttpOnly, SameSite=Strict,
    // Path=/ui, not Secure over plain HTTP; the redirect names no token.
    let (r, cookie) = login(a, UI_TOKEN);
    assert_eq!((r.status, r.header("location")), (303, Some("/ui/")), "{r}");
    let set = r.header("set-cookie").expect("cookie");
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(set.contains(attr), "{set}");
    }
    assert!(!set.contains("Secure"), "{set}");
    assert!(!set.contains(UI_TOKEN), "{set}");
    let cookie = cookie.expect("cookie");
    let value = cookie.trim_start_matches("agent_task_ui=");
    assert_eq!(value.len(), 64, "256 random bits: {cookie}");
    // The same login again: another session.
    let (_, other) = login(a, UI_TOKEN);
    assert_ne!(other.as_deref(), Some(cookie.as_str()));

    // With the cookie: the overview, its JSON, the explanation.
    let c = [("Cookie", cookie.as_str())];
    let r = http(a, "GET", "/ui/", &c, None);
    assert_eq!(r.status, 200, "{r}");
    assert_security_headers(&r, "overview");
    assert!(r.body.contains(&l.change_id), "{r}");
    assert!(
        r.body
            .contains("<script src=\"/ui/static/dashboard.js\" defer></script>"),
        "{r}"
    );
    assert!(!r.body.contains("style="), "no inline style: {r}");
    assert_eq!(r.body.matches("<script").count(), 1, "{r}");
    assert!(!r.body.contains(UI_TOKEN), "{r}");
    let o: Value =
        serde_json::from_str(&http(a, "GET", "/ui/api/overview", &c, None).body).expect("json");
    let local = l.env.run(&["ls", "--json"]).json();
    assert_eq!(o["changes"], local["changes"], "the same data as ls");
    // Filters as query parameters; a bad one is a 400 page, not a crash.
    let r = http(a, "GET", "/ui/api/overview?state=landed", &c, None);
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).expect("json")["changes"],
        json!([])
    );
    let r = http(a, "GET", "/ui/?state=bogus", &c, None);
    assert_eq!(r.status, 400, "{r}");
    let r = http(a, "GET", &change, &c, None);
    assert_eq!(r.status, 200, "{r}");
    assert_security_headers(&r, "explanation");
    // The failing test's tail, inert and escaped: no raw escape, no tag.
    assert!(
        r.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{r}"
    );
    assert!(r.body.contains("\\x1b[31mRED\\x07"), "{r}");
    assert!(!r.body.contains("<script"), "{r}");
    assert!(!r.body.contains('\u{1b}'), "{r}");
    assert!(r.body.contains("exit code 1"), "{r}");
    // An unknown Change: 404 page.
    let r = http(a, "GET", "/ui/change/ch_nope", &c, None);
    assert_eq!(r.status, 404, "{r}");
    // The static files: served from the binary, with their types.
    let js = http(a, "GET", "/ui/static/dashboard.js", &[], None);
    assert_eq!(js.status, 200);
    assert!(
        js.header("content-type")
            .unwrap_or("")
            .starts_with("text/javascript")
    );
    for sink in [
        ".innerHTML",
        ".outerHTML",
        "insertAdjacentHTML",
        "document.write",
        "eval(",
    ] {
        assert!(!js.body.contains(sink), "textContent only: {sink}");
    }
    assert_security_headers(&js, "js");
    // An unknown /ui path: 404, with the headers.
    let r = http(a, "GET", "/ui/nope", &c, None);
    assert_eq!(r.status, 404, "{r}");
    assert_security_headers(&r, "404");

    // Reads only: the data-dir lock held for long blocks nothing here;
    // a data directory gone (moved away mid-migration) is a notice on the
    // page and a typed error on the JSON route, then the data again.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(l.env.data_dir.join("lock"))
        .expect("lock file");
    lock.lock().expect("hold the data-dir lock");
    let t0 = std::time::Instant::now();
    let r = http(a, "GET", "/ui/api/overview", &c, None);
    assert_eq!(r.status, 200, "{r}");
    assert_eq!(http(a, "GET", &change, &c, None).status, 200);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    drop(lock);
    let away = l.env.path("data-away");
    std::fs::rename(&l.env.data_dir, &away).expect("move away");
    let r = http(a, "GET", "/ui/", &c, None);
    let gone = (
        r.status,
        r.body.contains("id=\"notice\">Could not read the overview"),
    );
    let api = http(a, "GET", "/ui/api/overview", &c, None);
    std::fs::rename(&away, &l.env.data_dir).expect("move back");
    assert_eq!(gone, (503, true), "{r}");
    assert!(api.status >= 400, "{api}");
    assert!(
        serde_json::from_str::<Value>(&api.body).expect("json")["error"].is_string(),
        "{api}"
    );
    assert_eq!(http(a, "GET", "/ui/api/overview", &c, None).status, 200);

    // Logout: from another origin refused; from ours, the session ends.
    let r = http(
        a,
        "POST",
        "/ui/logout",
        &[c[0], ("Origin", "http://evil.example")],
        None,
    );
    assert_eq!(r.status, 403, "{r}");
    assert_eq!(http(a, "GET", "/ui/", &c, None).status, 200);
    let r = http(a, "POST", "/ui/logout", &[c[0], ("Origin", &origin)], None);
    assert_eq!(
        (r.status, r.header("location")),
        (303, Some("/ui/login")),
        "{r}"
    );
    assert!(
        r.header("set-cookie")
            .is_some_and(|s| s.contains("Max-Age=0")),
        "{r}"
    );
    assert_eq!(
        http(a, "GET", "/ui/", &c, None).status,
        303,
        "the session is gone"
    );
    assert_eq!(http(a, "GET", "/ui/api/overview", &c, None).status, 401);
    // A forged cookie: nothing.
    let forged = format!("agent_task_ui={}", "0".repeat(64));
    assert_eq!(
        http(a, "GET", "/ui/", &[("Cookie", &forged)], None).status,
        303
    );
    drop(srv);

    // Without --ui the routes do not exist.
    let cfg = workspace_config(&l);
    let mut plain = serve_cmd(&l, &["--workspace-config", s(&cfg)])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    BufReader::new(plain.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("line");
    let v: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(v["ui"], false, "{v}");
    let pa = v["listening"]
        .as_str()
        .expect("url")
        .trim_start_matches("http://");
    for path in ["/ui/", "/ui/login", "/ui/static/dashboard.js"] {
        let r = http(pa, "GET", path, &[], None);
        assert_eq!(r.status, 404, "{path}: {r}");
        assert_eq!(r.header("content-security-policy"), None, "{r}");
    }
    let _ = plain.kill();
    let _ = plain.wait();
}

#[test]
fn serve_refuses_a_dashboard_credential_that_is_not_its_own_or_not_private() {
    let l = Loop::basic("bwrap");
    let node = l.env.path("node-token");
    private_file(&node, "node-bearer-0123456789abcdef\n");
    let p = l.env.path("ui");
    let ui = |content: &str| {
        let _ = std::fs::remove_file(&p);
        private_file(&p, content);
    };
    // The node bearer, an agent token: config, before binding.
    ui("node-bearer-0123456789abcdef\n");
    let e = refused(
        &l,
        &[
            "--ui",
            "--ui-token-file",
            s(&p),
            "--data-token-file",
            s(&node),
        ],
    );
    assert_eq!(e["error"], "config", "{e}");
    assert!(
        e["message"].as_str().unwrap_or("").contains("node bearer"),
        "{e}"
    );
    ui(&format!("{}\n", token(&l)));
    let e = refused(&l, &["--ui", "--ui-token-file", s(&p)]);
    assert_eq!(e["error"], "config", "{e}");
    assert!(
        e["message"].as_str().unwrap_or("").contains("agent token"),
        "{e}"
    );
    // Too short, not printable, too long.
    for bad in ["short\n", "with a space in it here\n", &"x".repeat(600)] {
        ui(bad);
        let e = refused(&l, &["--ui", "--ui-token-file", s(&p)]);
        assert_eq!(e["error"], "config", "{bad:?}: {e}");
    }
    // Readable by others; a symbolic link; missing.
    ui(&format!("{UI_TOKEN}\n"));
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let e = refused(&l, &["--ui", "--ui-token-file", s(&p)]);
    assert_eq!(e["error"], "insecure_permissions", "{e}");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let link = l.env.path("ui-link");
    std::os::unix::fs::symlink(&p, &link).expect("symlink");
    let e = refused(&l, &["--ui", "--ui-token-file", s(&link)]);
    assert_eq!(e["error"], "symlink_refused", "{e}");
    let e = refused(&l, &["--ui", "--ui-token-file", s(&l.env.path("missing"))]);
    assert_eq!(e["error"], "config", "{e}");
    // --ui needs its file, and the file needs --ui.
    let e = refused(&l, &["--ui"]);
    assert_eq!(e["error"], "usage", "{e}");
    let e = refused(&l, &["--ui-token-file", s(&p)]);
    assert_eq!(e["error"], "usage", "{e}");
}

/// The browser's tools: node, puppeteer-core's node_modules, chromium.
fn browser_tools() -> Option<(PathBuf, PathBuf, PathBuf)> {
    let need = |var: &str| -> Option<PathBuf> {
        match std::env::var_os(var) {
            Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
            _ => {
                assert!(
                    std::env::var("AGENT_TASK_REQUIRE_INTEROP").as_deref() != Ok("1"),
                    "{var} is unset but AGENT_TASK_REQUIRE_INTEROP=1 (run scripts/install-deps.sh and scripts/install-interop.sh)"
                );
                println!(
                    "SKIP: {var} is unset (scripts/install-interop.sh installs puppeteer-core; chromium comes from scripts/install-deps.sh)"
                );
                None
            }
        }
    };
    let modules = need("AGENT_TASK_INTEROP_BROWSER_NODE_PATH")?;
    let chromium = need("AGENT_TASK_INTEROP_CHROMIUM")?;
    let node = need("AGENT_TASK_INTEROP_NODE")?;
    Some((node, modules, chromium))
}

#[test]
fn in_a_real_browser_a_claim_appears_without_a_reload_and_test_output_stays_text() {
    let Some((node, modules, chromium)) = browser_tools() else {
        return;
    };
    let l = Loop::basic("bwrap");
    failing(&l);
    // Best-of-N: two more Changes for the same work; one passes and is
    // finalized, the other is checkpointed and waits for its claim. Its
    // title is hostile.
    let (ws1, c1) = open(&l, "ws1", "+", "fix-add", "Fix add: carry the sign");
    let t1 = checkpoint(&l, &ws1);
    let (d1, _) = l.claim(&t1, "d1.json");
    assert_eq!(l.collect(&d1).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &c1]).json();
    let (ws2, c2) = open(
        &l,
        "ws2",
        "+",
        "fix-add",
        "<img src=x onerror=alert(2)> \u{202e}evil title",
    );
    let t2 = checkpoint(&l, &ws2);

    let ui = l.env.path("ui-token");
    private_file(&ui, &format!("{UI_TOKEN}\n"));
    let srv = serve_ui(&l, &ui, &[]);
    let shots = l.env.path("screenshots");
    std::fs::create_dir_all(&shots).expect("mkdir");
    let mut child = Command::new(&node)
        .arg(repo_root().join("tests/browser/dashboard.cjs"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", l.env.path("home"))
        .env("NODE_PATH", &modules)
        .env("DASHBOARD_CHROMIUM", &chromium)
        .env("DASHBOARD_URL", format!("http://{}", srv.addr))
        .env("DASHBOARD_TOKEN_FILE", &ui)
        .env("DASHBOARD_FAILING_CHANGE", &l.change_id)
        .env("DASHBOARD_CLAIMED_CHANGE", &c2)
        .env("DASHBOARD_SCREENSHOTS", &shots)
        .env("DASHBOARD_PROFILE_DIR", l.env.path("chromium-profile"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("node");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut stderr = child.stderr.take().expect("stderr");
    let mut next = |what: &str| -> Value {
        let mut line = String::new();
        out.read_line(&mut line).expect("read");
        if line.is_empty() {
            let mut e = String::new();
            let _ = stderr.read_to_string(&mut e);
            panic!("the browser script ended before {what}: {e}");
        }
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    // The script has seen the login form, logged in and read the overview
    // with the pending task unclaimed.
    let ready = next("the overview");
    assert_eq!(ready["step"], "overview", "{ready}");
    // A claim through the endpoint while the page is open.
    let claimed = op(
        &srv.addr,
        &token(&l),
        json!({"operation": "collector_claim", "task_id": t2, "request_id": "dash-claim"}),
    );
    assert!(claimed["attempt"]["attempt_id"].is_string(), "{claimed}");
    writeln!(stdin, "claimed").expect("signal");
    stdin.flush().expect("flush");
    let done = next("the end");
    let status = child.wait().expect("wait");
    assert_eq!(done["step"], "done", "{done}");
    assert!(status.success(), "{done}");
    assert_eq!(done["dialogs"], json!([]), "{done}");
    assert_eq!(done["console_errors"], json!([]), "{done}");
    for shot in ["overview.png", "explanation.png"] {
        let md = std::fs::metadata(shots.join(shot)).expect(shot);
        assert!(md.len() > 1000, "{shot}");
    }
    // Keep the screenshot for docs/ when asked (scripts do it by hand).
    if let Some(dir) = std::env::var_os("AGENT_TASK_DASHBOARD_SHOTS") {
        for shot in ["overview.png", "explanation.png"] {
            let _ = std::fs::copy(shots.join(shot), Path::new(&dir).join(shot));
        }
    }
}
