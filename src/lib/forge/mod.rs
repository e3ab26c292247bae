//! The repositories' forges, the face-level job (docs/forge.md): `repo
//! forge set` (its URLs and credential file checked here, the row written
//! through `workflow::service::forge`) and the credential every use of the
//! forge takes, read from the operator's file each time and checked again
//! (absolute, a regular file, not a symbolic link, owned by the operator,
//! no group or other bits, bounded). A GitHub App's installation token is
//! minted per use (a JWT signed RS256 with the app's key, exchanged at
//! `POST /app/installations/{id}/access_tokens`) and kept in memory for
//! the one command ([`Credentials`]). No secret is ever printed, put in an
//! error, in a child's argv or environment, or written anywhere.
//!
//! RS256 is `ring`'s `RSA_PKCS1_SHA256`: `ring` is already in the tree
//! (rustls' provider under `ureq` and `serve --tls-*`), builds with the
//! pinned toolchain and signs in constant time; the PEM is decoded by
//! `rustls-pki-types`, also already here. No JWT crate is needed for one
//! fixed header and three claims.

mod pulls;

pub use pulls::{
    ClosedRequest, ProposeOutput, SyncOutput, close_landed, fenced, propose, request_body,
    request_title, sync,
};

use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::workflow::service;
use crate::workflow::service::forge::{
    Forge, ForgeCredential, ForgeKind, ForgeSetRequest, MAX_URL,
};
use serde::Deserialize;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// The largest credential file read (a token or a PEM key), bytes.
pub const MAX_CREDENTIAL_FILE: u64 = 16 * 1024;
/// The largest answer body read from the forge's API.
pub const MAX_ANSWER: u64 = 64 * 1024;
/// One deadline per forge API request.
pub const API_TIMEOUT: Duration = Duration::from_secs(30);

/// A secret read from the operator's file or minted from it. Its `Debug`
/// prints nothing of it; [`Secret::expose`] is the one way to the bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// The secret's text, for the one header or helper answer that
    /// carries it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// Checks an API or remote URL: absolute, `https` (plain `http` only to a
/// loopback host, as the S3 store's endpoint), a host, no userinfo, query
/// or fragment, bounded. Returns it as parsed and re-serialised.
pub fn check_url(what: &str, raw: &str) -> Result<String> {
    let bad = |why: &str| {
        Error::new(Code::InvalidInput, format!("{what} {why}"))
            .with("fix", "an https:// URL without credentials, query or fragment (http:// only on a loopback host)")
    };
    if raw.len() > MAX_URL || raw.chars().any(char::is_control) {
        return Err(bad("is over 2048 bytes or holds control characters"));
    }
    // Not echoed: a URL with userinfo may carry a secret.
    let u = url::Url::parse(raw).map_err(|_| bad("is not an absolute URL"))?;
    if !u.username().is_empty() || u.password().is_some() {
        return Err(bad(
            "carries credentials; the forge credential is a file (--token-file or --app-key-file)",
        ));
    }
    let host = u.host_str().unwrap_or_default();
    let scheme_ok = match u.scheme() {
        "https" => true,
        "http" => crate::net::is_loopback_host(host),
        _ => false,
    };
    if host.is_empty() || !scheme_ok {
        return Err(bad("must be https:// (http:// only on a loopback host)"));
    }
    if u.query().is_some() || u.fragment().is_some() {
        return Err(bad("must have no query or fragment"));
    }
    Ok(u.as_str().trim_end_matches('/').to_owned())
}

/// `repo forge set`: checks the URLs and reads the credential file (a
/// token must be one line of visible ASCII; an app key must be an RSA
/// private key `ring` accepts), then writes the row.
pub fn set(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    req: &ForgeSetRequest,
) -> Result<Forge> {
    let req = ForgeSetRequest {
        api_url: check_url("--api-url", &req.api_url)?,
        remote_url: check_url("--remote-url", &req.remote_url)?,
        status_target_url: req
            .status_target_url
            .as_deref()
            .map(|u| check_url("--status-target-url", u))
            .transpose()?,
        ..req.clone()
    };
    service::forge::check_project(req.kind, &req.project)?;
    service::forge::check_credential(req.kind, &req.credential)?;
    check_credential_file(&req.credential)?;
    service::forge::set(root, timeout, clock, &req)
}

/// Reads and checks the credential file(s) a forge names (what `set`
/// does, and every use).
pub fn check_credential_file(c: &ForgeCredential) -> Result<()> {
    match c {
        ForgeCredential::TokenFile { path } => read_token(path).map(|_| ()),
        ForgeCredential::GithubApp { key_file, .. } => read_app_key(key_file).map(|_| ()),
    }
}

fn credential_error(path: &Path, why: &str) -> Error {
    // The path, never the content.
    Error::new(
        Code::Config,
        format!("the forge credential file {} {why}", path.display()),
    )
    .with("path", path.display().to_string())
}

/// The bytes of an owner-private credential file, bounded.
fn read_private(path: &Path) -> Result<Vec<u8>> {
    if !path.is_absolute() {
        return Err(credential_error(path, "is not an absolute path"));
    }
    let f = private_fs::open_private_read(path)?
        .ok_or_else(|| credential_error(path, "does not exist"))?;
    let mut bytes = Vec::new();
    f.take(MAX_CREDENTIAL_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    if bytes.len() as u64 > MAX_CREDENTIAL_FILE {
        return Err(credential_error(path, "is over 16 KiB"));
    }
    Ok(bytes)
}

/// A token file: one line of 1 to 4,096 visible ASCII characters (a
/// trailing newline is allowed).
pub fn read_token(path: &Path) -> Result<Secret> {
    let bytes = read_private(path)?;
    let t = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
    let t = t.strip_suffix(b"\r").unwrap_or(t);
    if t.is_empty() || t.len() > 4096 || !t.iter().all(|b| b.is_ascii_graphic()) {
        return Err(credential_error(
            path,
            "must hold one token: 1 to 4096 visible ASCII characters on one line",
        ));
    }
    Ok(Secret(String::from_utf8_lossy(t).into_owned()))
}

/// A GitHub App private key file: PEM, PKCS#1 (`BEGIN RSA PRIVATE KEY`,
/// what GitHub hands out) or PKCS#8, an RSA key of 2048 bits or more.
pub fn read_app_key(path: &Path) -> Result<ring::rsa::KeyPair> {
    use rustls_pki_types::PrivateKeyDer;
    use rustls_pki_types::pem::PemObject;
    let bytes = read_private(path)?;
    let bad = || credential_error(path, "is not a PEM RSA private key of 2048 bits or more");
    let der = PrivateKeyDer::from_pem_slice(&bytes).map_err(|_| bad())?;
    let key = match &der {
        PrivateKeyDer::Pkcs1(k) => ring::rsa::KeyPair::from_der(k.secret_pkcs1_der()),
        PrivateKeyDer::Pkcs8(k) => ring::rsa::KeyPair::from_pkcs8(k.secret_pkcs8_der()),
        _ => return Err(bad()),
    }
    .map_err(|_| bad())?;
    Ok(key)
}

/// The JWT a GitHub App authenticates with: RS256, issued 60 s in the
/// past (GitHub's advice against clock drift), valid 9 minutes (GitHub
/// refuses more than 10), `iss` the app id.
pub fn app_jwt(key: &ring::rsa::KeyPair, app_id: u64, now_unix: i64) -> Result<Secret> {
    use data_encoding::BASE64URL_NOPAD as B64;
    let header = B64.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = B64.encode(
        serde_json::json!({"iat": now_unix - 60, "exp": now_unix + 540, "iss": app_id.to_string()})
            .to_string()
            .as_bytes(),
    );
    let signing_input = format!("{header}.{claims}");
    let mut sig = vec![0; key.public().modulus_len()];
    key.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut sig,
    )
    .map_err(|_| Error::internal("RSA signing failed"))?;
    Ok(Secret(format!("{signing_input}.{}", B64.encode(&sig))))
}

/// `forge_unavailable` for `forge` (its status in details when it answered).
pub fn unavailable(forge: &Forge, what: &str, status: Option<u16>, why: &str) -> Error {
    let mut e = Error::new(
        Code::ForgeUnavailable,
        format!("the forge of {} could not {what}: {why}", forge.repo_id),
    )
    .with("repository", forge.repo_id.clone())
    .with("api_url", forge.api_url.clone());
    if let Some(s) = status {
        e = e.with("forge_status", s);
    }
    e
}

/// The forge's API client: no proxy, no redirects (a redirect is an
/// answer, refused: it never carries the credential to another host),
/// one deadline per request.
pub fn api_agent() -> ureq::Agent {
    let timeout = crate::testhooks::forge_timeout_ms()
        .map(Duration::from_millis)
        .unwrap_or(API_TIMEOUT);
    crate::net::client_builder(Some(timeout))
        .timeout_connect(Some(Duration::from_secs(10)))
        .user_agent(concat!("agent-task/", env!("CARGO_PKG_VERSION")))
        .build()
        .into()
}

/// Reads at most [`MAX_ANSWER`] bytes of an answer; `None` when it is
/// longer (the rest is never read) or the read fails.
pub fn bounded_body(resp: ureq::http::Response<ureq::Body>) -> Option<Vec<u8>> {
    bounded_body_max(resp, MAX_ANSWER)
}

/// [`bounded_body`] with another bound.
pub fn bounded_body_max(resp: ureq::http::Response<ureq::Body>, max: u64) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    resp.into_body()
        .into_reader()
        .take(max + 1)
        .read_to_end(&mut body)
        .ok()?;
    (body.len() as u64 <= max).then_some(body)
}

/// GitHub's answer to an installation token request (fields beyond these
/// are GitHub's and ignored).
#[derive(Deserialize)]
struct InstallationToken {
    token: String,
}

/// The credentials of one command: each forge's secret read (or minted)
/// once and kept in memory only until the command ends.
#[derive(Default)]
pub struct Credentials {
    cache: std::collections::BTreeMap<String, Secret>,
}

impl Credentials {
    /// The secret for `forge`: a token file's token, or a fresh GitHub App
    /// installation token (minted on the first use in this command).
    pub fn secret(&mut self, forge: &Forge, clock: &dyn Clock) -> Result<Secret> {
        if let Some(s) = self.cache.get(&forge.repo_id) {
            return Ok(s.clone());
        }
        let s = match &forge.credential {
            ForgeCredential::TokenFile { path } => read_token(path)?,
            ForgeCredential::GithubApp {
                app_id,
                key_file,
                installation_id,
            } => {
                let key = read_app_key(key_file)?;
                let now = clock.now().as_second();
                let jwt = app_jwt(&key, *app_id, now)?;
                mint_installation_token(forge, &jwt, *installation_id)?
            }
        };
        self.cache.insert(forge.repo_id.clone(), s.clone());
        Ok(s)
    }
}

/// `POST {api}/app/installations/{id}/access_tokens` with the app's JWT.
fn mint_installation_token(forge: &Forge, jwt: &Secret, installation_id: u64) -> Result<Secret> {
    let what = "mint a GitHub App installation token";
    let url = format!(
        "{}/app/installations/{installation_id}/access_tokens",
        forge.api_url
    );
    // Minting again is safe (an unused token expires by itself): a
    // transport failure or a 5xx is retried, boundedly.
    let agent = api_agent();
    let mut attempt = 0;
    let resp = loop {
        if attempt > 0 {
            std::thread::sleep(BACKOFF * 4u32.pow(attempt - 1));
        }
        attempt += 1;
        let sent = agent
            .post(&url)
            .header("authorization", &format!("Bearer {}", jwt.expose()))
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .send_empty();
        match sent {
            Ok(r) if r.status().as_u16() >= 500 && attempt < ATTEMPTS => continue,
            Ok(r) => break r,
            Err(_) if attempt < ATTEMPTS => continue,
            Err(e) => return Err(unavailable(forge, what, None, &transport(&e))),
        }
    };
    let status = resp.status().as_u16();
    if status != 201 {
        return Err(unavailable(forge, what, Some(status), "the forge refused"));
    }
    let body = bounded_body(resp)
        .ok_or_else(|| unavailable(forge, what, Some(status), "answer too long"))?;
    let t: InstallationToken = serde_json::from_slice(&body)
        .map_err(|_| unavailable(forge, what, Some(status), "the answer is not a token"))?;
    if t.token.is_empty() || t.token.len() > 4096 || !t.token.bytes().all(|b| b.is_ascii_graphic())
    {
        return Err(unavailable(
            forge,
            what,
            Some(status),
            "the answer is not a token",
        ));
    }
    Ok(Secret(t.token))
}

/// A transport failure's kind, never its URL's secrets (the URL holds
/// none) nor a header.
pub fn transport(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => "timed out".into(),
        ureq::Error::Io(io) => format!("I/O error: {}", io.kind()),
        ureq::Error::HostNotFound => "host not found".into(),
        ureq::Error::ConnectionFailed => "connection failed".into(),
        _ => "transport error".into(),
    }
}

/// The branch a landed or proposed commit is pushed to before the target.
pub fn candidate_branch(change_id: &str) -> String {
    format!("refs/heads/agent-task/{change_id}")
}

/// The notes ref the attestations live in.
pub const NOTES_REF: &str = "refs/notes/agent-task";

/// `land --push`'s report.
#[derive(Debug, serde::Serialize)]
pub struct PushOutput {
    /// Whether this run pushed (false: an earlier `land --push` had).
    pub pushed: bool,
    /// Whether the landing was already pushed before this run.
    pub already_pushed: bool,
    /// Push attempts recorded for this landing.
    pub attempts: u64,
    /// The remote.
    pub remote_url: String,
    /// The commit pushed.
    pub git_commit: String,
    /// The refs, in the order they were pushed.
    pub refs: Vec<String>,
    /// The commit status published on the candidate commit before the
    /// target was pushed (`success`), when the forge publishes statuses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<StatusState>,
    /// The Change's pull or merge request (`propose`), closed once the
    /// landing is pushed.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub closed_requests: Vec<ClosedRequest>,
}

/// Pushes `change_id`'s landed commit to `repo_id`'s forge with git
/// itself, in the order a protected branch needs: the commit to
/// `refs/heads/agent-task/<change>`, then the target branch (never
/// forced: a fast-forward or a `push_rejected`), then the attestation
/// notes. The push state is recorded with the landing (`pending` before,
/// `pushed` after), so a rerun after a failure pushes again (each step is
/// idempotent on the remote) and a rerun after success pushes nothing.
pub fn push(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    repo_id: &str,
    change_id: &str,
) -> Result<PushOutput> {
    let plan = service::forge::push_plan(root, repo_id, change_id)?;
    let refs = vec![
        candidate_branch(&plan.change_id),
        plan.ref_name.clone(),
        NOTES_REF.to_owned(),
    ];
    if let Some(("pushed", attempts)) = plan.state.as_ref().map(|(s, a)| (s.as_str(), *a)) {
        // A request left open by a run that failed to close it.
        let closed_requests = close_landed(root, timeout, clock, repo_id, Some(change_id))?;
        return Ok(PushOutput {
            pushed: false,
            already_pushed: true,
            attempts,
            remote_url: plan.forge.remote_url.clone(),
            git_commit: plan.commit.clone(),
            refs,
            status: None,
            closed_requests,
        });
    }
    // Checked again at every use, before anything leaves the machine.
    check_url("the forge's remote URL", &plan.forge.remote_url)?;
    check_credential_file(&plan.forge.credential)?;
    service::forge::record_push(root, timeout, clock, &plan, false)?;
    let helper = helper_command(root, repo_id)?;
    let specs = [
        format!("+{}:{}", plan.commit, refs[0]),
        format!("{}:{}", plan.commit, refs[1]),
        format!("{NOTES_REF}:{NOTES_REF}"),
    ];
    git_push(&plan, &helper, &specs[0])?;
    service::forge::mark_candidate(root, timeout, clock, &plan)?;
    let status = if plan.forge.publish_status {
        publish_landed(&plan, clock)?;
        service::forge::finish_version(root, timeout, clock, &plan)?;
        Some(StatusState::Success)
    } else {
        None
    };
    for spec in &specs[1..] {
        git_push(&plan, &helper, spec)?;
    }
    let (_, attempts) = service::forge::record_push(root, timeout, clock, &plan, true)?;
    // Then the Change's request, if `propose` opened one: closed.
    let closed_requests = close_landed(root, timeout, clock, repo_id, Some(change_id))?;
    Ok(PushOutput {
        pushed: true,
        already_pushed: false,
        attempts,
        remote_url: plan.forge.remote_url.clone(),
        git_commit: plan.commit.clone(),
        refs,
        status,
        closed_requests,
    })
}

/// The success status of a landed commit, published between the
/// candidate branch and the target (a protected target requires it):
/// only when the commit's tree, recomputed as `verify` does, is the
/// qualified revision.
fn publish_landed(plan: &service::forge::PushPlan, clock: &dyn Clock) -> Result<()> {
    let found = service::forge::commit_revision(&plan.source, &plan.commit)?;
    if found != plan.revision {
        return Err(Error::new(
            Code::IntegrityError,
            "the landed commit's tree is not the qualified revision; no success status is published",
        )
        .with("git_commit", plan.commit.clone())
        .with("revision", plan.revision.clone())
        .with("tree_revision", found));
    }
    let secret = Credentials::default().secret(&plan.forge, clock)?;
    let short = plan.revision.get(..12).unwrap_or(&plan.revision);
    post_status(
        &plan.forge,
        &secret,
        &StatusRequest {
            sha: &plan.commit,
            state: StatusState::Success,
            description: &format!(
                "qualified: revision {short}, version {} of {}",
                plan.change_version, plan.change_id
            ),
            context: &format!("agent-task/{}", plan.profile),
        },
    )
}

/// `forge publish`'s report.
#[derive(Debug, Default, serde::Serialize)]
pub struct PublishOutput {
    /// Statuses the forge accepted in this pass.
    pub published: u64,
    /// Rows a later state of the same Change version replaced (never
    /// published after it).
    pub superseded: u64,
    /// Rows whose candidate commit is not on the forge yet (they wait for
    /// `land --push`).
    pub waiting: u64,
    /// Success rows refused because the commit's tree is not the
    /// qualified revision (never published).
    pub refused: u64,
    /// Rows the forge did not accept; they stay pending.
    pub failed: u64,
    /// The errors of the failed rows (codes and the forge's status).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<serde_json::Value>,
}

/// One pass of the commit-status publisher (`agent-task forge publish`):
/// drains the outbox the workflow's transactions wrote. Per Change
/// version only its latest row is published (earlier ones are
/// `superseded`, so an earlier state never follows a later one); a row
/// whose candidate commit is not on the forge yet waits; success is
/// published only on a commit whose tree, recomputed as `verify` does, is
/// the qualified revision. At least once: a row is marked done after the
/// forge accepted it, and a repeat posts the same state again.
pub fn publish(root: &Path, timeout: Duration, clock: &dyn Clock) -> Result<PublishOutput> {
    let rows = service::forge::pending_statuses(root)?;
    let mut out = PublishOutput::default();
    let mut latest = std::collections::BTreeMap::new();
    for r in &rows {
        latest.insert((r.change_id.clone(), r.change_version), r.seq);
    }
    let mut done = Vec::new();
    let mut creds = Credentials::default();
    for r in &rows {
        if latest.get(&(r.change_id.clone(), r.change_version)) != Some(&r.seq) {
            done.push((r.seq, "superseded", r.git_commit.clone()));
            out.superseded += 1;
            continue;
        }
        let Some(sha) = &r.git_commit else {
            out.waiting += 1;
            continue;
        };
        let state = match r.state.as_str() {
            "pending" => StatusState::Pending,
            "success" => StatusState::Success,
            "failure" => StatusState::Failure,
            _ => StatusState::Error,
        };
        if state == StatusState::Success
            && service::forge::commit_revision(&r.source, sha)
                .ok()
                .as_deref()
                != Some(r.revision.as_str())
        {
            done.push((r.seq, "refused", Some(sha.clone())));
            out.refused += 1;
            continue;
        }
        let sent = service::forge::forge_of(root, &r.repo_id).and_then(|f| {
            let f = f.ok_or_else(|| service::forge::no_forge(&r.repo_id))?;
            let secret = creds.secret(&f, clock)?;
            post_status(
                &f,
                &secret,
                &StatusRequest {
                    sha,
                    state,
                    description: &r.description,
                    context: &format!("agent-task/{}", r.profile),
                },
            )
        });
        match sent {
            Ok(()) => {
                done.push((r.seq, "published", Some(sha.clone())));
                out.published += 1;
            }
            Err(e) => {
                out.failed += 1;
                out.errors.push(serde_json::json!({
                    "seq": r.seq, "change_id": r.change_id, "error": e.code().as_str(),
                    "forge_status": e.details().and_then(|d| d.get("forge_status")).cloned(),
                }));
            }
        }
    }
    service::forge::finish_statuses(root, timeout, clock, done)?;
    Ok(out)
}

/// A commit status's state, in GitHub's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StatusState {
    /// Checkpointed, not yet qualified.
    Pending,
    /// Qualified (a receipt), the tree checked.
    Success,
    /// A required step's imported record failed.
    Failure,
    /// The subject went stale (a policy or enrollment act).
    Error,
}

impl StatusState {
    /// GitHub's state (`pending|success|failure|error`).
    pub fn github(self) -> &'static str {
        match self {
            StatusState::Pending => "pending",
            StatusState::Success => "success",
            StatusState::Failure => "failure",
            StatusState::Error => "error",
        }
    }

    /// GitLab's state (`pending|running|success|failed|canceled`): GitLab
    /// has no `error`; a stale subject is `failed` too, its description
    /// says why.
    pub fn gitlab(self) -> &'static str {
        match self {
            StatusState::Pending => "pending",
            StatusState::Success => "success",
            StatusState::Failure | StatusState::Error => "failed",
        }
    }
}

/// GitHub refuses a description over 140 characters (422).
pub const MAX_DESCRIPTION: usize = 140;

/// `d` cut to [`MAX_DESCRIPTION`] characters (an ellipsis marks the cut)
/// and stripped of control characters.
pub fn status_description(d: &str) -> String {
    let clean: String = d
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if clean.chars().count() <= MAX_DESCRIPTION {
        return clean;
    }
    let mut out: String = clean.chars().take(MAX_DESCRIPTION - 1).collect();
    out.push('…');
    out
}

/// One commit status to publish.
#[derive(Debug)]
pub struct StatusRequest<'a> {
    /// The commit (40 or 64 hex).
    pub sha: &'a str,
    /// Its state.
    pub state: StatusState,
    /// Why (cut to 140 characters).
    pub description: &'a str,
    /// `agent-task/<profile>`.
    pub context: &'a str,
}

/// Attempts at a status request: transport failures and 5xx answers are
/// retried (a status posted twice with the same state changes nothing a
/// reader sees); 4xx answers are not.
const ATTEMPTS: u32 = 3;
/// The first pause between attempts (then four times longer each).
const BACKOFF: Duration = Duration::from_millis(200);

/// Posts one commit status: GitHub `POST
/// /repos/{owner}/{repo}/statuses/{sha}`, GitLab `POST
/// /projects/:id/statuses/:sha`. `forge_unavailable` with
/// `details.forge_status` on any other answer than 201; the token is in
/// the one header and never in an error.
pub fn post_status(forge: &Forge, secret: &Secret, req: &StatusRequest<'_>) -> Result<()> {
    let what = "publish a commit status";
    if !(req.sha.len() == 40 || req.sha.len() == 64)
        || !req.sha.bytes().all(|b| b.is_ascii_hexdigit())
    {
        return Err(Error::new(
            Code::InvalidInput,
            "a status needs a full commit id",
        ));
    }
    let description = status_description(req.description);
    let (url, body) = match forge.kind {
        ForgeKind::Github => {
            let mut b = serde_json::json!({
                "state": req.state.github(),
                "description": description,
                "context": req.context,
            });
            if let Some(t) = &forge.status_target_url {
                b["target_url"] = t.clone().into();
            }
            (
                format!(
                    "{}/repos/{}/statuses/{}",
                    forge.api_url, forge.project, req.sha
                ),
                b,
            )
        }
        ForgeKind::Gitlab => {
            let mut b = serde_json::json!({
                "state": req.state.gitlab(),
                "name": req.context,
                "description": description,
            });
            if let Some(t) = &forge.status_target_url {
                b["target_url"] = t.clone().into();
            }
            let id: String =
                url::form_urlencoded::byte_serialize(forge.project.as_bytes()).collect();
            (
                format!("{}/projects/{id}/statuses/{}", forge.api_url, req.sha),
                b,
            )
        }
    };
    api_request(
        forge,
        secret,
        Method::Post,
        &url,
        Some(&body),
        &[201],
        true,
        what,
        MAX_ANSWER,
    )
    .and_then(|(status, answer)| {
        if answer.is_object() {
            Ok(())
        } else {
            Err(unavailable(
                forge,
                what,
                Some(status),
                "the answer is not a status",
            ))
        }
    })
    .map_err(|e| e.with("sha", req.sha).with("state", req.state.github()))
}

/// The forge's authentication and API headers.
fn with_auth<B>(
    rb: ureq::RequestBuilder<B>,
    forge: &Forge,
    secret: &Secret,
) -> ureq::RequestBuilder<B> {
    match forge.kind {
        ForgeKind::Github => rb
            .header("authorization", &format!("Bearer {}", secret.expose()))
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28"),
        ForgeKind::Gitlab => rb.header("private-token", secret.expose()),
    }
}

/// An API request's method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET (a read).
    Get,
    /// POST (a status; a request opened).
    Post,
    /// PATCH (GitHub: a pull request updated or closed).
    Patch,
    /// PUT (GitLab: a merge request updated or closed).
    Put,
}

/// One request to the forge's API with the forge's authentication
/// header: `forge_unavailable` with `details.forge_status` for any answer
/// not in `ok`, a redirect (never followed: it would carry the token
/// elsewhere), an answer over `max_answer` bytes or not JSON. With
/// `retry`, a transport failure or a 5xx is retried twice (0.2 s, then
/// 0.8 s): only for requests whose repeat changes nothing (a status, a
/// read, an update to the same values); opening a request is never
/// retried. The token is in the one header and never in an error.
#[allow(clippy::too_many_arguments)]
pub fn api_request(
    forge: &Forge,
    secret: &Secret,
    method: Method,
    url: &str,
    body: Option<&serde_json::Value>,
    ok: &[u16],
    retry: bool,
    what: &str,
    max_answer: u64,
) -> Result<(u16, serde_json::Value)> {
    let body = body.map(|b| b.to_string());
    let agent = api_agent();
    let attempts = if retry { ATTEMPTS } else { 1 };
    let mut last = (None, String::new());
    for attempt in 0..attempts {
        if attempt > 0 {
            std::thread::sleep(BACKOFF * 4u32.pow(attempt - 1));
        }
        let sent = match (method, &body) {
            (Method::Get, _) => with_auth(agent.get(url), forge, secret).call(),
            (m, b) => {
                let rb = match m {
                    Method::Post => agent.post(url),
                    Method::Patch => agent.patch(url),
                    _ => agent.put(url),
                };
                let rb = with_auth(rb, forge, secret);
                match b {
                    Some(b) => rb
                        .header("content-type", "application/json")
                        .send(b.as_bytes()),
                    None => rb.send_empty(),
                }
            }
        };
        let resp = match sent {
            Ok(r) => r,
            Err(e) => {
                last = (None, transport(&e));
                continue;
            }
        };
        let status = resp.status().as_u16();
        if status >= 500 {
            last = (Some(status), "the forge failed".into());
            continue;
        }
        if !ok.contains(&status) {
            let why = match status {
                401 => "the credential was refused",
                403 => "the credential may not do this here",
                404 => "no such project, commit or request (or no access to it)",
                409 | 422 => "the forge refused the request as invalid",
                300..=399 => "a redirect (never followed)",
                _ => "an unexpected answer",
            };
            return Err(unavailable(forge, what, Some(status), why));
        }
        let answer = bounded_body_max(resp, max_answer)
            .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
            .ok_or_else(|| {
                unavailable(
                    forge,
                    what,
                    Some(status),
                    "the answer is not JSON or is too long",
                )
            })?;
        return Ok((status, answer));
    }
    let (status, why) = last;
    Err(unavailable(
        forge,
        what,
        status,
        &format!("{why} (after {attempts} attempts)"),
    ))
}

/// Quotes `s` for the shell git runs a `!` credential helper with.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The credential helper git is given: this very binary, with the data
/// directory and the repository, answering `get` from the operator's file
/// (`agent-task forge credential`). No secret is in it.
fn helper_command(root: &Path, repo_id: &str) -> Result<String> {
    let exe =
        std::env::current_exe().map_err(|e| Error::io("locate", Path::new("agent-task"), e))?;
    let root = std::path::absolute(root).map_err(|e| Error::io("resolve", root, e))?;
    let text = |p: &Path| {
        p.to_str()
            .map(str::to_owned)
            .ok_or_else(|| Error::new(Code::Config, format!("{} is not UTF-8", p.display())))
    };
    Ok(format!(
        "!{} --data-dir {} forge credential --repo {}",
        shell_quote(&text(&exe)?),
        shell_quote(&text(&root)?),
        shell_quote(repo_id)
    ))
}

/// The variables a push never passes on to git (tracing that could write
/// a request's headers somewhere, programs that could prompt).
const PUSH_SCRUB: &[&str] = &[
    "GIT_TRACE",
    "GIT_TRACE_CURL",
    "GIT_TRACE_CURL_NO_DATA",
    "GIT_TRACE_PACKET",
    "GIT_TRACE_PACK_ACCESS",
    "GIT_TRACE_PERFORMANCE",
    "GIT_TRACE_SETUP",
    "GIT_TRACE2",
    "GIT_TRACE2_EVENT",
    "GIT_TRACE2_PERF",
    "GIT_TRACE_REDACT",
    "GIT_CURL_VERBOSE",
    "GIT_REDACT_COOKIES",
    "GIT_SSL_NO_VERIFY",
    "SSH_ASKPASS",
    "GIT_HTTP_PROXY_AUTHMETHOD",
];

/// The last `max` characters of git's stderr, as a detail.
fn tail(s: &str, max: usize) -> String {
    let n = s.chars().count();
    s.chars().skip(n.saturating_sub(max)).collect()
}

/// git in the repository's source, set up to talk to the forge's remote:
/// the credential from `helper` alone, no prompt, no redirect, no tracing.
fn forge_git(source: &Path, helper: &str) -> std::process::Command {
    let mut c = service::git::command(source);
    for v in PUSH_SCRUB {
        c.env_remove(v);
    }
    c.env("GIT_TERMINAL_PROMPT", "0")
        .args(["-c", "credential.helper="])
        .args(["-c", &format!("credential.helper={helper}")])
        .args(["-c", "credential.useHttpPath=true"])
        .args(["-c", "credential.interactive=false"])
        .args(["-c", "core.askPass="])
        .args(["-c", "http.followRedirects=false"])
        .args(["-c", "http.sslVerify=true"])
        .args(["-c", "push.gpgSign=false"]);
    c
}

/// One `git fetch URL SPEC` into the repository's source (`forge sync`).
fn git_fetch(source: &Path, forge: &Forge, helper: &str, spec: &str) -> Result<()> {
    let mut c = forge_git(source, helper);
    c.args(["fetch", "--no-tags", "--quiet", "--"])
        .arg(&forge.remote_url)
        .arg(spec);
    let (code, _, stderr) = service::git::output(c, None)?;
    if code == 0 {
        return Ok(());
    }
    let auth = stderr_says_auth(&stderr);
    Err(Error::new(
        Code::ForgeUnavailable,
        format!(
            "git could not fetch from the forge{}",
            if auth {
                " (the credential was refused)"
            } else {
                ""
            }
        ),
    )
    .with("git_exit", code)
    .with("reason", if auth { "authentication" } else { "transport" })
    .with("git_stderr", tail(&stderr, 1000))
    .with("remote_url", forge.remote_url.clone()))
}

fn stderr_says_auth(stderr: &str) -> bool {
    [
        "Authentication failed",
        "could not read Username",
        "could not read Password",
        "403",
    ]
    .iter()
    .any(|m| stderr.contains(m))
}

/// One `git push --porcelain URL SPEC` from the repository's source.
fn git_push(plan: &service::forge::PushPlan, helper: &str, spec: &str) -> Result<()> {
    git_push_to(&plan.source, &plan.forge, helper, spec)
}

fn git_push_to(source: &Path, forge: &Forge, helper: &str, spec: &str) -> Result<()> {
    let mut c = forge_git(source, helper);
    c.args(["push", "--porcelain", "--no-verify", "--"])
        .arg(&forge.remote_url)
        .arg(spec);
    let (code, stdout, stderr) = service::git::output(c, None)?;
    if code == 0 {
        return Ok(());
    }
    let stdout = String::from_utf8_lossy(&stdout);
    let dst = spec.rsplit(':').next().unwrap_or(spec).to_owned();
    if let Some(line) = stdout.lines().find(|l| l.starts_with('!')) {
        let reason = line.split('\t').nth(2).unwrap_or("rejected").to_owned();
        return Err(Error::new(
            Code::PushRejected,
            format!(
                "the forge's remote refused {dst}: {reason}; nothing recorded locally is lost, \
                 and the same command again pushes once the remote is fixed"
            ),
        )
        .with("ref", dst)
        .with("reason", tail(&reason, 200))
        .with("git_stderr", tail(&stderr, 1000))
        .with("remote_url", forge.remote_url.clone()));
    }
    let auth = stderr_says_auth(&stderr);
    Err(Error::new(
        Code::ForgeUnavailable,
        format!(
            "git could not push {dst} to the forge{}; nothing recorded locally is lost",
            if auth {
                " (the credential was refused)"
            } else {
                ""
            }
        ),
    )
    .with("ref", dst)
    .with("git_exit", code)
    .with("reason", if auth { "authentication" } else { "transport" })
    .with("git_stderr", tail(&stderr, 1000))
    .with("remote_url", forge.remote_url.clone()))
}

/// The largest credential request read from git.
pub const MAX_HELPER_INPUT: u64 = 64 * 1024;

/// `agent-task forge credential --repo R ACTION`: git's credential helper
/// protocol (gitcredentials(7)). `get` answers the forge's credential
/// when git asks for exactly the forge's remote (scheme, host and port,
/// path: `credential.useHttpPath`); `store` and `erase` do nothing
/// (nothing is stored). The answer is the protocol's text, never JSON.
pub fn credential_helper(
    root: &Path,
    clock: &dyn Clock,
    repo_id: &str,
    action: &str,
    input: &mut dyn Read,
) -> Result<String> {
    let mut bytes = Vec::new();
    input
        .take(MAX_HELPER_INPUT)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", Path::new("stdin"), e))?;
    if action != "get" {
        return Ok(String::new());
    }
    let text = String::from_utf8_lossy(&bytes);
    let mut asked = std::collections::BTreeMap::new();
    for line in text.lines() {
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once('=') {
            asked.insert(k.to_owned(), v.to_owned());
        }
    }
    let forge = service::forge::forge_of(root, repo_id)?
        .ok_or_else(|| service::forge::no_forge(repo_id))?;
    let remote = url::Url::parse(&check_url("the forge's remote URL", &forge.remote_url)?)
        .map_err(|_| Error::internal("a checked URL does not parse"))?;
    let host = match remote.port() {
        Some(p) => format!("{}:{p}", remote.host_str().unwrap_or_default()),
        None => remote.host_str().unwrap_or_default().to_owned(),
    };
    let path = remote.path().trim_start_matches('/');
    let get = |k: &str| asked.get(k).map(String::as_str);
    if get("protocol") != Some(remote.scheme())
        || get("host").map(str::to_ascii_lowercase) != Some(host.to_ascii_lowercase())
        || get("path").map(|p| p.trim_start_matches('/')) != Some(path)
    {
        return Err(Error::new(
            Code::Forbidden,
            format!(
                "git asked for a credential for another place than {}'s forge remote; none given",
                repo_id
            ),
        )
        .with("remote_url", forge.remote_url.clone()));
    }
    let secret = Credentials::default().secret(&forge, clock)?;
    let user = match forge.kind {
        ForgeKind::Github => "x-access-token",
        ForgeKind::Gitlab => "oauth2",
    };
    Ok(format!("username={user}\npassword={}\n", secret.expose()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workflow::service::forge as service;

    #[test]
    fn urls_are_https_or_loopback_http_without_secrets() {
        assert_eq!(
            check_url("u", "https://api.github.com/").expect("ok"),
            "https://api.github.com"
        );
        check_url("u", "http://127.0.0.1:8080/git/r.git").expect("loopback http");
        check_url("u", "http://localhost/x").expect("localhost");
        for bad in [
            "http://example.com/x",
            "ftp://127.0.0.1/x",
            "https://user:secret@github.com/o/r.git",
            "https://tok@github.com/o/r.git",
            "https://github.com/o/r?x=1",
            "https://github.com/o/r#f",
            "github.com/o/r",
            "file:///tmp/r.git",
        ] {
            let e = check_url("u", bad).expect_err(bad);
            assert_eq!(e.code(), Code::InvalidInput, "{bad}");
            assert!(!e.to_string().contains("secret"), "{bad}: {e}");
        }
        assert!(
            check_url(
                "u",
                &format!("https://a.example/{}", "x".repeat(service::MAX_URL))
            )
            .is_err()
        );
    }

    #[test]
    fn a_secret_debugs_to_nothing() {
        let s = Secret("ghs_topsecret".into());
        assert!(!format!("{s:?}").contains("topsecret"));
    }

    #[test]
    fn descriptions_fit_githubs_limit_and_states_map_explicitly() {
        let long = "é".repeat(500);
        let d = status_description(&long);
        assert_eq!(d.chars().count(), MAX_DESCRIPTION);
        assert!(d.ends_with('…'));
        assert_eq!(status_description("a\nb\u{7}"), "a b ");
        assert_eq!(status_description("short"), "short");
        let gh: Vec<_> = [
            StatusState::Pending,
            StatusState::Success,
            StatusState::Failure,
            StatusState::Error,
        ]
        .iter()
        .map(|s| (s.github(), s.gitlab()))
        .collect();
        assert_eq!(
            gh,
            vec![
                ("pending", "pending"),
                ("success", "success"),
                ("failure", "failed"),
                ("error", "failed")
            ]
        );
    }
}
