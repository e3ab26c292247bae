//! The workspace task endpoint:
//! `POST /v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks`
//! taking `{"operation": …, …}`. The actor is the workspace bearer (an
//! agent token), checked against the profile's authority; the body never
//! selects an actor or a path. Every operation runs through
//! [`crate::workflow::service::facade::execute`]. Wire format: `docs/workspace-http.md`.

use super::router::{Access, BodySpec, Guard, Method, Reply, Request, Response, RouteSpec, Router};
use crate::clock::Clock;
use crate::contract::{CAPABILITY, SCHEMA_VERSION};
use crate::error::{Code, Error, Result};
use crate::store::{Deferred, Writer, WriterConfig};
use crate::workflow::service::facade::{self, TaskProfile, WorkspaceConfig};
use crate::workflow::service::ops::AgentCtx;
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

pub use super::router::OPS_ROUTE;
pub use super::shared::{MAX_BODY, PREFIX, bearer};

/// The group-commit writers of `serve`, one per data directory the
/// profiles name (`store::Writer`): every workspace mutation of a profile
/// is queued to its directory's writer.
#[derive(Debug, Default)]
pub struct Writers(Vec<Writer>);

impl Writers {
    /// Starts one writer per distinct data directory of `config`.
    pub fn start(
        config: &WorkspaceConfig,
        clock: Arc<dyn Clock>,
        cfg: WriterConfig,
    ) -> Result<Writers> {
        let mut out: Vec<Writer> = Vec::new();
        for p in &config.agent_task_profiles {
            if out.iter().all(|w| w.root() != p.data_dir) {
                out.push(Writer::start(&p.data_dir, clock.clone(), cfg)?);
            }
        }
        Ok(Writers(out))
    }

    /// The writer of `root`, if one was started for it.
    pub fn get(&self, root: &Path) -> Option<&Writer> {
        self.0.iter().find(|w| w.root() == root)
    }

    /// Every writer's data directory and counters (for `serve
    /// --writer-stats-ms`).
    pub fn stats(&self) -> Vec<(std::path::PathBuf, Arc<crate::store::WriterStats>)> {
        self.0
            .iter()
            .map(|w| (w.root().to_owned(), w.stats_handle()))
            .collect()
    }
}

/// What the workspace routes share.
pub struct Workspace {
    /// The operator's profiles.
    pub config: WorkspaceConfig,
    /// The group-commit writers of the profiles' data directories.
    pub writers: Writers,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// Lock wait for mutations.
    pub lock_timeout: Duration,
    /// The server's host allow-list (MCP checks `Origin` against it).
    pub hosts: Arc<super::hosts::HostAllowList>,
    /// The operator's bounds on remote checkpoints.
    pub limits: crate::workflow::service::remote::RemoteLimits,
    /// The authorize step's recent admissions.
    pub gate: GateCache,
}

/// The bearers the authorize step admitted in the last [`GATE_TTL`], per
/// profile: an agent's next request within it is admitted without a read
/// of the authority. Only the gate is cached. Every operation still
/// authenticates the bearer inside its own unit of work (the revocation
/// guard: a token revoked meanwhile is refused there, `unauthorized`), so
/// the cache widens only the window in which a request already admitted
/// has its body read; the profile's pins (target, requirement) were
/// always checked at admission, before the operation's own transaction.
/// Keyed by the bearer's SHA-256, never the bearer; bounded.
#[derive(Debug, Default)]
pub struct GateCache {
    admitted: std::sync::Mutex<std::collections::HashMap<(usize, [u8; 32]), std::time::Instant>>,
}

/// How long an admission is reused.
pub const GATE_TTL: Duration = Duration::from_millis(500);
/// Most admissions kept (expired ones are dropped first, then all).
const GATE_MAX: usize = 4096;

impl GateCache {
    fn key(profile: &TaskProfile, bearer: &str) -> (usize, [u8; 32]) {
        use sha2::Digest;
        // The profile by address: the configuration lives as long as serve.
        let p = std::ptr::from_ref(profile) as usize;
        (p, sha2::Sha256::digest(bearer.as_bytes()).into())
    }

    fn fresh(&self, key: &(usize, [u8; 32])) -> bool {
        self.admitted
            .lock()
            .ok()
            .and_then(|m| m.get(key).copied())
            .is_some_and(|at| at.elapsed() < GATE_TTL)
    }

    fn admit(&self, key: (usize, [u8; 32])) {
        if let Ok(mut m) = self.admitted.lock() {
            if m.len() >= GATE_MAX {
                m.retain(|_, at| at.elapsed() < GATE_TTL);
                if m.len() >= GATE_MAX {
                    m.clear();
                }
            }
            m.insert(key, std::time::Instant::now());
        }
    }
}

impl Workspace {
    /// Checks the bearer against the profile's authority (and its pins),
    /// or finds it admitted within the last [`GATE_TTL`] ([`GateCache`]).
    pub fn authenticate(&self, profile: &TaskProfile, bearer: &str) -> Result<()> {
        let key = GateCache::key(profile, bearer);
        if self.gate.fresh(&key) {
            return Ok(());
        }
        let cx = self.ctx(profile, bearer);
        facade::check_scope(&cx, profile)?;
        self.gate.admit(key);
        Ok(())
    }

    /// Runs one decoded operation for `bearer` in `profile`.
    pub fn run(&self, profile: &TaskProfile, bearer: &str, body: Value) -> Result<Value> {
        self.run_deferred(profile, bearer, body)?.wait()
    }

    /// [`Workspace::run`], a mutation's outcome answered once its batch
    /// is durable (`facade::execute_deferred`).
    pub fn run_deferred(
        &self,
        profile: &TaskProfile,
        bearer: &str,
        body: Value,
    ) -> Result<Deferred<Value>> {
        let op = facade::decode(body)?;
        self.execute_deferred(profile, bearer, &op)
    }

    /// [`Workspace::run_deferred`] of an operation already decoded.
    pub fn execute_deferred(
        &self,
        profile: &TaskProfile,
        bearer: &str,
        op: &facade::OperationRequest,
    ) -> Result<Deferred<Value>> {
        let cx = self.ctx(profile, bearer);
        facade::execute_deferred(&cx, profile, op, &self.limits)
    }

    fn ctx<'a>(&'a self, profile: &'a TaskProfile, bearer: &'a str) -> AgentCtx<'a> {
        AgentCtx {
            root: &profile.data_dir,
            timeout: self.lock_timeout,
            clock: self.clock.as_ref(),
            token: bearer,
            writer: self.writers.get(&profile.data_dir),
            scope: Some(profile.scope()),
        }
    }
}

fn param(req: &Request<'_>, i: usize) -> Result<String> {
    let raw = req
        .params
        .get(i)
        .ok_or_else(|| Error::internal("route parameter missing"))?;
    super::router::percent_decode(raw)
}

/// Wraps an operation's result. The result is moved into the answer:
/// `json!` would serialize it into a copy of itself (every string and map
/// of it allocated again, the original dropped), on every answer.
pub fn envelope(operation: &str, result: Value) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("capability".into(), CAPABILITY.into());
    m.insert("schema_version".into(), SCHEMA_VERSION.into());
    m.insert("operation".into(), operation.into());
    m.insert("result".into(), result);
    Value::Object(m)
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

/// An operation body: `application/json` of at most [`MAX_BODY`] bytes,
/// decoded strictly (`docs/wire.md`, "Strict JSON"): malformed JSON, a
/// duplicate key at any depth (`{"operation":"nope","operation":"next"}`
/// would otherwise run `next`) or nesting past 64 levels is `invalid_json`
/// with `details.reason`; the typed decode then refuses unknown fields.
fn read_operation_body(req: &mut Request<'_>) -> Result<serde_json::Map<String, Value>> {
    use crate::wire::json::{Limits, decode};
    let bytes = super::router::read_json_bytes(req, MAX_BODY)?;
    match decode::<Value>(
        &bytes,
        Limits::bytes(MAX_BODY as usize),
        Code::InvalidJson,
        "request body",
    )? {
        Value::Object(m) => Ok(m),
        _ => Err(Error::new(
            Code::InvalidJson,
            "Request body must be a JSON object",
        )),
    }
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

/// The body of a remote checkpoint's manifest: the canonical manifest
/// bytes, `application/json`, bounded by the operator's manifest cap.
fn manifest_body(limits: &crate::workflow::service::remote::RemoteLimits) -> BodySpec {
    let max = limits.max_manifest_bytes;
    BodySpec {
        media: "application/json",
        max,
        wrong_media: "a checkpoint manifest must use application/json".into(),
        too_large: format!("a checkpoint manifest is at most {max} bytes"),
    }
}

/// The body of a blob pack: frames of `sha256 || u64be size || bytes`,
/// `application/octet-stream`, bounded by the operator's pack cap.
fn pack_body(limits: &crate::workflow::service::remote::RemoteLimits) -> BodySpec {
    let max = limits.max_pack_bytes;
    BodySpec {
        media: "application/octet-stream",
        max,
        wrong_media: "a blob pack must use application/octet-stream".into(),
        too_large: format!("a blob pack is at most {max} bytes"),
    }
}

/// The authorize step of the two remote-checkpoint routes: the bearer and
/// the Change's scope, on the head alone.
fn authorize_change(ws: Arc<Workspace>) -> Guard {
    Arc::new(move |req: &Request<'_>| {
        let tok = bearer(req)?;
        let profile = ws.config.profile(&param(req, 0)?, &param(req, 1)?)?;
        let change = param(req, 2)?;
        facade::check_change_scope(&ws.ctx(profile, &tok), profile, &change)
    })
}

/// Mounts the workspace routes and their bearer guard.
pub fn mount(router: &mut Router, ws: Arc<Workspace>) {
    router.guard(
        PREFIX,
        Arc::new(|req: &Request<'_>| bearer(req).map(|_| ())),
    );
    // The operation and the upload answer from the writer: a mutation's
    // handler thread returns once it is queued, and the server awaits the
    // batch's answer on its runtime.
    let w = ws.clone();
    router.route_deferred(
        Method::Post,
        OPS_ROUTE,
        RouteSpec::new(Access::Guarded)
            .authorize(authorize_path(ws.clone()))
            .body(BodySpec::json(MAX_BODY)),
        Arc::new(move |req: &mut Request<'_>| {
            let tok = bearer(req)?;
            let profile = w.config.profile(&param(req, 0)?, &param(req, 1)?)?.clone();
            let body = read_operation_body(req)?;
            let op = body
                .get("operation")
                .and_then(Value::as_str)
                .unwrap_or("")
                .chars()
                .take(64)
                .collect::<String>();
            let decoded = facade::decode(Value::Object(body))?;
            // The route's lane is by operation (router::COMPUTE_OPERATIONS):
            // one that may wait goes on to the blocking pool.
            let w = w.clone();
            Ok(Reply::on_lane(
                super::router::lane_of_operation(decoded.name()),
                move || {
                    let out = w.execute_deferred(&profile, &tok, &decoded)?;
                    Ok(Reply::deferred(out, move |v| {
                        Response::json(200, &envelope(&op, v))
                    }))
                },
            ))
        }),
    );
    let w = ws.clone();
    router.route_deferred(
        Method::Post,
        "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks/collector-upload",
        RouteSpec::new(Access::Guarded)
            .authorize(authorize_path(ws.clone()))
            .body(upload_body()),
        Arc::new(move |req: &mut Request<'_>| {
            let tok = bearer(req)?;
            let profile = w.config.profile(&param(req, 0)?, &param(req, 1)?)?.clone();
            let bytes = upload_body().read(req)?;
            let out = facade::collector_upload(&w.ctx(&profile, &tok), &profile, &bytes)?;
            Ok(Reply::deferred(out, |v| {
                Response::json(200, &envelope("collector_upload", v))
            }))
        }),
    );
    // The checkpoint's phases 1 and 2 stream their bodies on a handler
    // thread; their unit of work is then queued to the writer and
    // awaited on the runtime, like the operations'.
    let w = ws.clone();
    router.route_deferred(
        Method::Post,
        "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks/changes/{change}/manifest",
        RouteSpec::new(Access::Guarded)
            .authorize(authorize_change(ws.clone()))
            .body(manifest_body(&ws.limits)),
        Arc::new(move |req: &mut Request<'_>| {
            let tok = bearer(req)?;
            let profile = w.config.profile(&param(req, 0)?, &param(req, 1)?)?.clone();
            let change = param(req, 2)?;
            let spec = manifest_body(&w.limits);
            spec.check_head(req)?;
            let mut body = std::io::Read::take(&mut *req.body, spec.max + 1);
            let out = crate::workflow::service::remote::manifest(
                &w.ctx(&profile, &tok),
                &change,
                &mut body,
                &w.limits,
            )?;
            Ok(Reply::deferred(out, |v| {
                Response::json(200, &envelope("checkpoint_manifest", v))
            }))
        }),
    );
    let w = ws.clone();
    router.route_deferred(
        Method::Post,
        "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks/changes/{change}/blobs",
        RouteSpec::new(Access::Guarded)
            .authorize(authorize_change(ws.clone()))
            .body(pack_body(&ws.limits)),
        Arc::new(move |req: &mut Request<'_>| {
            let tok = bearer(req)?;
            let profile = w.config.profile(&param(req, 0)?, &param(req, 1)?)?.clone();
            let change = param(req, 2)?;
            let spec = pack_body(&w.limits);
            spec.check_head(req)?;
            let mut body = Capped {
                inner: &mut req.body,
                left: spec.max,
                too_large: spec.too_large.clone(),
            };
            let out = crate::workflow::service::remote::blobs(
                &w.ctx(&profile, &tok),
                &change,
                &mut body,
                &w.limits,
            )?;
            Ok(Reply::later(async move {
                let v = out.answer().await??;
                Ok(Response::json(200, &envelope("checkpoint_blobs", v)))
            }))
        }),
    );
}

/// A body reader that fails with `request_too_large` once more than the
/// cap would be read (a streamed body the declared length did not bound).
struct Capped<'a, 'b> {
    inner: &'a mut &'b mut dyn std::io::Read,
    left: u64,
    too_large: String,
}

impl std::io::Read for Capped<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left.saturating_add(1)).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            return Err(std::io::Error::other(Error::new(
                Code::RequestTooLarge,
                self.too_large.clone(),
            )));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::super::router::{COMPUTE_OPERATIONS, Lane, lane_of_operation, lane_of_route};
    use crate::workflow::service::facade::OPERATIONS;
    use serde_json::json;

    #[test]
    fn the_envelope_is_the_capability_version_operation_and_the_result_as_it_was() {
        let result = json!({"next": {"operation": "none"}, "tasks": [{"task_id": "t", "n": 1}]});
        let v = super::envelope("next", result.clone());
        assert_eq!(
            v,
            json!({
                "capability": "agentscm.agent-workflow-tasks/v1",
                "schema_version": 1,
                "operation": "next",
                "result": result,
            })
        );
        assert_eq!(
            serde_json::to_string(&v).expect("text"),
            r#"{"capability":"agentscm.agent-workflow-tasks/v1","operation":"next","result":{"next":{"operation":"none"},"tasks":[{"n":1,"task_id":"t"}]},"schema_version":1}"#
        );
    }

    #[test]
    fn the_lane_table_names_real_operations_and_keeps_the_waiting_ones_off_compute() {
        assert_eq!(lane_of_route(super::OPS_ROUTE), Lane::ByOperation);
        for op in COMPUTE_OPERATIONS {
            assert!(OPERATIONS.contains(op), "{op} is not an operation");
        }
        // The three whose handler may wait (a staged file's checks and CAS
        // moves in the commit, the finalize, a Change's opening) and any
        // unknown name run on the blocking pool.
        let blocking: Vec<&str> = OPERATIONS
            .iter()
            .copied()
            .filter(|op| lane_of_operation(op) == Lane::Blocking)
            .collect();
        assert_eq!(
            blocking,
            ["change_open", "checkpoint_commit", "collector_finalize"]
        );
        assert_eq!(lane_of_operation("nope"), Lane::Blocking);
        assert_eq!(
            lane_of_route(
                "/v1/hub/workspace/repositories/{repository}/profiles/{profile}/agent-tasks/collector-upload"
            ),
            Lane::Blocking
        );
    }
}
