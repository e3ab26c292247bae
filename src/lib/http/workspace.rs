//! The workspace task endpoint:
//! `POST /v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks`
//! taking `{"operation": …, …}`. The actor is the workspace bearer (an
//! agent token), checked against the profile's authority; the body never
//! selects an actor or a path. Every operation runs through
//! [`crate::task::facade::execute`]. Wire format: `docs/workspace-http.md`.

use super::router::{Access, BodySpec, Guard, Method, Request, Response, RouteSpec, Router};
use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use crate::task::contract::{CAPABILITY, SCHEMA_VERSION};
use crate::task::facade::{self, TaskProfile, WorkspaceConfig};
use crate::task::ops::AgentCtx;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

/// Path prefix of every workspace route (guarded by the bearer check).
pub const PREFIX: &str = "/v1/hub/workspace/";
/// Largest operation body.
pub const MAX_BODY: u64 = 1024 * 1024;
/// Longest bearer accepted.
const MAX_BEARER: usize = 512;

/// What the workspace routes share.
pub struct Workspace {
    /// The operator's profiles.
    pub config: WorkspaceConfig,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Lock wait for mutations.
    pub lock_timeout: Duration,
}

impl Workspace {
    /// Checks the bearer against the profile's authority (and its pins).
    pub fn authenticate(&self, profile: &TaskProfile, bearer: &str) -> Result<()> {
        let cx = AgentCtx {
            root: &profile.data_dir,
            timeout: self.lock_timeout,
            clock: self.clock.as_ref(),
            token: bearer,
        };
        facade::check_scope(&cx, profile, &facade::OperationRequest::Capabilities {})
    }

    /// Runs one decoded operation for `bearer` in `profile`.
    pub fn run(&self, profile: &TaskProfile, bearer: &str, body: Value) -> Result<Value> {
        let op = facade::decode(body)?;
        let cx = AgentCtx {
            root: &profile.data_dir,
            timeout: self.lock_timeout,
            clock: self.clock.as_ref(),
            token: bearer,
        };
        facade::execute(&cx, profile, &op)
    }
}

/// The bearer of a request: `Authorization: Bearer <token>` with a token
/// of 1-512 printable ASCII characters, else `unauthorized`.
pub fn bearer(req: &Request<'_>) -> Result<String> {
    let missing = || {
        Error::new(
            Code::Unauthorized,
            "a workspace bearer (agent token) is required",
        )
    };
    let h = req.header("authorization").ok_or_else(missing)?;
    let (scheme, tok) = h.split_once(' ').ok_or_else(missing)?;
    let tok = tok.trim();
    if !scheme.eq_ignore_ascii_case("bearer")
        || tok.is_empty()
        || tok.len() > MAX_BEARER
        || !tok.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(missing());
    }
    Ok(tok.to_owned())
}

fn param(req: &Request<'_>, i: usize) -> Result<String> {
    let raw = req
        .params
        .get(i)
        .ok_or_else(|| Error::internal("route parameter missing"))?;
    super::router::percent_decode(raw)
}

/// Wraps an operation's result.
pub fn envelope(operation: &str, result: Value) -> Value {
    json!({
        "capability": CAPABILITY,
        "schema_version": SCHEMA_VERSION,
        "operation": operation,
        "result": result,
    })
}

/// The authorize step of the two task routes: the bearer against the
/// authority of the profile the path names, on the head alone, so that no
/// body byte is read for a caller who holds no valid agent token.
fn authorize_path(ws: Arc<Workspace>) -> Guard {
    Arc::new(move |req: &Request<'_>| {
        let tok = bearer(req)?;
        let profile = ws.config.profile(&param(req, 0)?, &param(req, 1)?)?;
        ws.authenticate(profile, &tok)
    })
}

/// The body of a collector upload: `application/octet-stream`, bounded by
/// the transfer limit.
fn upload_body() -> BodySpec {
    let max = crate::collector::transfer::MAX_TRANSFER_BYTES;
    BodySpec {
        media: "application/octet-stream",
        max,
        wrong_media: "a collector upload must use application/octet-stream".into(),
        too_large: format!("a collector transfer is at most {max} bytes"),
    }
}

/// Mounts the workspace routes and their bearer guard.
pub fn mount(router: &mut Router, ws: Arc<Workspace>) {
    router.guard(
        PREFIX,
        Arc::new(|req: &Request<'_>| bearer(req).map(|_| ())),
    );
    let w = ws.clone();
    router.route_with(
        Method::Post,
        "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks",
        RouteSpec::new(Access::Guarded)
            .authorize(authorize_path(ws.clone()))
            .body(BodySpec::json(MAX_BODY)),
        Arc::new(move |req: &mut Request<'_>| {
            let tok = bearer(req)?;
            let profile = w.config.profile(&param(req, 0)?, &param(req, 1)?)?.clone();
            let body = super::data_routes::read_json_body(req, MAX_BODY)?;
            let op = body
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(64)
                .collect::<String>();
            let out = w.run(&profile, &tok, Value::Object(body))?;
            Ok(Response::json(200, &envelope(&op, out)))
        }),
    );
    let w = ws.clone();
    router.route_with(
        Method::Post,
        "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks/collector-upload",
        RouteSpec::new(Access::Guarded)
            .authorize(authorize_path(ws.clone()))
            .body(upload_body()),
        Arc::new(move |req: &mut Request<'_>| {
            let tok = bearer(req)?;
            let profile = w.config.profile(&param(req, 0)?, &param(req, 1)?)?.clone();
            let bytes = upload_body().read(req)?;
            let cx = AgentCtx {
                root: &profile.data_dir,
                timeout: w.lock_timeout,
                clock: w.clock.as_ref(),
                token: &tok,
            };
            let out = facade::collector_upload(&cx, &profile, &bytes)?;
            Ok(Response::json(200, &envelope("collector_upload", out)))
        }),
    );
    super::mcp::mount(router, ws);
}

/// Uploads retained transfers to a workspace endpoint (the HTTP side of
/// `collect --endpoint` and `retry-upload --endpoint`): the exact bytes,
/// bearer = the agent token, answer = the authority's import result.
pub struct HttpUpload {
    /// Full URL of the collector-upload route.
    pub url: String,
    /// The agent token.
    pub token: String,
}

impl HttpUpload {
    /// The upload route of `endpoint` for `repository`/`profile`.
    pub fn new(endpoint: &str, repository: &str, profile: &str, token: String) -> HttpUpload {
        let seg = |s: &str| {
            percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
        };
        HttpUpload {
            url: format!(
                "{}/v1/hub/workspace/repositories/{}/profiles/{}/agent-tasks/collector-upload",
                endpoint.trim_end_matches('/'),
                seg(repository),
                seg(profile)
            ),
            token,
        }
    }
}

/// Largest upload answer read.
const MAX_UPLOAD_ANSWER: u64 = 1024 * 1024;

impl crate::collector::collect::Uploader for HttpUpload {
    fn upload(&self, bytes: &[u8]) -> Result<Value> {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .proxy(None)
            .max_redirects(0)
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(120)))
            .build()
            .into();
        let failed = |m: String| Error::new(Code::UploadFailed, m);
        let mut resp = agent
            .post(&self.url)
            .header("authorization", &format!("Bearer {}", self.token))
            .header("content-type", "application/octet-stream")
            .send(bytes)
            .map_err(|e| failed(format!("the upload request failed: {e}")))?;
        let status = resp.status().as_u16();
        let body = resp
            .body_mut()
            .with_config()
            .limit(MAX_UPLOAD_ANSWER)
            .read_to_vec()
            .map_err(|e| failed(format!("reading the upload answer failed: {e}")))?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|_| failed(format!("the upload answer (HTTP {status}) is not JSON")))?;
        if status != 200 {
            let remote = v.get("error").and_then(Value::as_str).unwrap_or("unknown");
            let code = match status {
                401 => Code::Unauthorized,
                403 => Code::Forbidden,
                _ => Code::UploadFailed,
            };
            return Err(Error::new(
                code,
                format!("the endpoint refused the upload (HTTP {status}, {remote})"),
            )
            .with("remote_error", remote.chars().take(64).collect::<String>()));
        }
        match v.get("result") {
            Some(r) if v.get("operation").and_then(Value::as_str) == Some("collector_upload") => {
                Ok(r.clone())
            }
            _ => Err(failed(
                "the upload answer is not a collector_upload envelope".into(),
            )),
        }
    }
}
