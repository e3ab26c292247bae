//! Workspace MCP: `POST /v1/hub/workspace/mcp?repository=R&profile=P`, the
//! Streamable HTTP transport answered with plain `application/json` (no
//! SSE, no session id). Tools are the facade's operations with JSON Schema
//! inputs; `tools/call` runs [`crate::workflow::service::facade::execute_deferred`], the same
//! library call as the HTTP endpoint and the CLI. See `docs/mcp.md`.

use super::router::{Access, BodySpec, Method, Reply, Request, Response, RouteSpec, Router};
use super::workspace::{Workspace, bearer};
use crate::error::{Code, Error, Result};
use crate::workflow::service::facade::TaskProfile;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The protocol revision this server speaks.
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// The MCP route.
pub const PATH: &str = "/v1/hub/workspace/mcp";

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
const METHOD_NOT_FOUND: i64 = -32601;
const INVALID_PARAMS: i64 = -32602;

fn obj(props: &[(&str, Value)], required: &[&str]) -> Value {
    let mut p = Map::new();
    for (k, v) in props {
        p.insert((*k).to_owned(), v.clone());
    }
    json!({"type": "object", "properties": p, "required": required, "additionalProperties": false})
}

fn id_schema(desc: &str) -> Value {
    json!({"type": "string", "minLength": 1, "maxLength": 128, "pattern": "^[A-Za-z0-9._:@/-]+$", "description": desc})
}

fn hex_schema(desc: &str) -> Value {
    json!({"type": "string", "pattern": "^[0-9a-f]{64}$", "description": desc})
}

fn u64_schema(desc: &str) -> Value {
    json!({"type": "integer", "minimum": 0, "description": desc})
}

fn mutation_schema() -> Value {
    obj(
        &[
            ("attempt_id", id_schema("attempt id")),
            ("fence", u64_schema("the fence the caller holds")),
            ("request_id", id_schema("idempotency key")),
            ("lease_ms", u64_schema("requested lease (heartbeat)")),
            ("reason", json!({"type": "string", "maxLength": 4096})),
        ],
        &["attempt_id", "fence", "request_id"],
    )
}

/// The tool list: one tool per facade operation, sorted by name.
pub fn tools() -> Vec<Value> {
    let change = || obj(&[("change_id", id_schema("Change id"))], &["change_id"]);
    let defs: Vec<(&str, &str, Value)> = vec![
        (
            "cancel",
            "Cancel an attempt (execution may still run; reconcile next).",
            mutation_schema(),
        ),
        (
            "capabilities",
            "Capability, supported schema versions and operation names.",
            obj(&[], &[]),
        ),
        (
            "change_list",
            "The bearer's own open (not landed) Changes on this profile: id, version, current revision, workspace (read-only).",
            obj(&[], &[]),
        ),
        (
            "change_open",
            "Open a Change on this profile's repository for the bearer's agent (the workspace stays on the client; checkpoints arrive through the manifest and blob routes).",
            obj(
                &[
                    (
                        "request_id",
                        id_schema(
                            "idempotency key: a retry returns the Change this request opened",
                        ),
                    ),
                    (
                        "title",
                        json!({"type": "string", "maxLength": 4096, "description": "the Change's title: the landed commit's subject (cleaned, at most 200 characters)"}),
                    ),
                    (
                        "body",
                        json!({"type": "string", "maxLength": 65536, "description": "the Change's body: the landed commit's message body (cleaned, at most 16 KiB)"}),
                    ),
                ],
                &[],
            ),
        ),
        (
            "change_subject",
            "The current subject of a Change: version, revision, context digest, base (read-only).",
            change(),
        ),
        (
            "checkpoint_commit",
            "Commit a remote checkpoint after its manifest was posted and its missing blobs uploaded over HTTP: a new Change version (a new subject), or the current subject when the tree is its revision and it is still live (reused: true).",
            obj(
                &[
                    ("change_id", id_schema("Change id")),
                    (
                        "revision",
                        hex_schema("the revision the manifest route answered"),
                    ),
                    (
                        "new_subject",
                        json!({"type": "boolean", "description": "mint a new subject even for the current subject's tree"}),
                    ),
                    (
                        "message",
                        json!({"type": "string", "maxLength": 65536, "description": "the Change's title (first line) and body: the landed commit's message"}),
                    ),
                ],
                &["change_id", "revision"],
            ),
        ),
        (
            "claim",
            "Claim a pending task: fresh attempt, bounded lease, new fence.",
            obj(
                &[
                    ("task_id", id_schema("task id")),
                    ("request_id", id_schema("idempotency key")),
                    (
                        "lease_ms",
                        u64_schema("requested lease in ms (default 300000)"),
                    ),
                    ("executor", id_schema("executor registration")),
                ],
                &["task_id", "request_id"],
            ),
        ),
        (
            "collector_claim",
            "Claim a command task for the installed collector profile; returns the authority-derived descriptor for `agent-task collect`.",
            obj(
                &[
                    ("task_id", id_schema("task id")),
                    ("request_id", id_schema("idempotency key")),
                ],
                &["task_id", "request_id"],
            ),
        ),
        (
            "collector_descriptor",
            "The authority-derived descriptor of a claimed collector attempt.",
            obj(&[("attempt_id", id_schema("attempt id"))], &["attempt_id"]),
        ),
        (
            "collector_finalize",
            "Create the v2 receipt of a Change's current subject from retained validated transfers.",
            change(),
        ),
        ("heartbeat", "Renew an attempt's lease.", mutation_schema()),
        (
            "instructions",
            "A task's instruction entrypoint (required criteria inline) or a schema mismatch.",
            obj(
                &[
                    ("task_id", id_schema("task id")),
                    (
                        "schema_version",
                        u64_schema("schema version spoken (default 1)"),
                    ),
                ],
                &["task_id"],
            ),
        ),
        (
            "next",
            "The typed next operation for a Change (data, never a command).",
            change(),
        ),
        (
            "qualification",
            "Read-only exact-subject qualification: qualified, subject_current, receipt, tasks, failures, next.",
            change(),
        ),
        (
            "reconcile",
            "Explicitly supersede an attempt's fence.",
            mutation_schema(),
        ),
        (
            "recovery",
            "Recovery envelope for a task, attempt or request (side-effect free).",
            obj(
                &[
                    ("task_id", id_schema("task id")),
                    ("attempt_id", id_schema("attempt id")),
                    ("request_id", id_schema("request id")),
                ],
                &["task_id"],
            ),
        ),
        (
            "reference",
            "One named reference of a task, only when needed.",
            obj(
                &[
                    ("task_id", id_schema("task id")),
                    ("name", id_schema("reference name")),
                    (
                        "expected_schema_version",
                        u64_schema("schema version expected (default 1)"),
                    ),
                    ("task_digest", hex_schema("task digest held by the caller")),
                    (
                        "expected_sha256",
                        hex_schema("expected body SHA-256 (from instructions)"),
                    ),
                ],
                &["task_id", "name"],
            ),
        ),
        (
            "requirements",
            "The installed requirement of a Change's profile.",
            change(),
        ),
        (
            "result",
            "Submit a TaskResultAssertion (agent assertion or signed registered observation).",
            obj(
                &[(
                    "assertion",
                    json!({"type": "object", "description": "TaskResultAssertion document"}),
                )],
                &["assertion"],
            ),
        ),
        (
            "status",
            "Exact-attempt status (side-effect free).",
            obj(
                &[
                    ("task_id", id_schema("task id")),
                    ("attempt_id", id_schema("attempt id")),
                ],
                &["task_id", "attempt_id"],
            ),
        ),
    ];
    defs.into_iter()
        .filter(|(n, _, _)| crate::workflow::service::facade::OPERATIONS.contains(n))
        .map(|(name, description, schema)| json!({"name": name, "description": description, "inputSchema": schema}))
        .collect()
}

fn rpc_error(id: Value, code: i64, message: &str) -> Response {
    Response::json(
        200,
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}),
    )
}

fn rpc_result(id: Value, result: Value) -> Response {
    Response::json(200, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

/// The `Origin` check (DNS-rebinding defence): absent (not a browser), or
/// an origin on the server's host allow-list with the server's scheme,
/// else `forbidden`. It is not compared with `Host`: a rebinding page
/// controls both, but not the allow-list.
fn check_origin(ws: &Workspace, req: &Request<'_>) -> Result<()> {
    match req.header("origin") {
        None => Ok(()),
        Some(o) if ws.hosts.allows_origin(o) => Ok(()),
        Some(_) => Err(Error::new(Code::Forbidden, "foreign Origin refused")),
    }
}

/// The caller and profile of an MCP request, from its head: the `Origin`
/// check, the bearer and the `repository`/`profile` query parameters.
fn target(ws: &Workspace, req: &Request<'_>) -> Result<(String, TaskProfile)> {
    check_origin(ws, req)?;
    let tok = bearer(req)?;
    let repository = req.query_param("repository")?.ok_or_else(|| {
        Error::new(
            Code::InvalidQuery,
            "the repository query parameter is required",
        )
    })?;
    let profile_id = req.query_param("profile")?.ok_or_else(|| {
        Error::new(
            Code::InvalidQuery,
            "the profile query parameter is required",
        )
    })?;
    let profile = ws.config.profile(&repository, &profile_id)?.clone();
    Ok((tok, profile))
}

/// The authorize step (run by the router before any body byte is read):
/// [`target`], then the bearer against the profile's authority.
fn authorize(ws: &Workspace, req: &Request<'_>) -> Result<()> {
    let (tok, profile) = target(ws, req)?;
    ws.authenticate(&profile, &tok)
}

/// One JSON-RPC message. A `tools/call` of a mutation is queued to the
/// profile's writer and answered once its batch is durable
/// ([`Reply::Pending`]): no handler thread waits for the batch, exactly as
/// on the workspace task route.
fn handle(ws: &Workspace, req: &mut Request<'_>) -> Result<Reply> {
    let (tok, profile) = target(ws, req)?;
    let msg = match read_message(req)? {
        Ok(m) => m,
        Err(refusal) => return Ok(refusal.into()),
    };
    let id = msg.get("id").cloned();
    let method = msg.get("method").and_then(Value::as_str);
    // The header names the revision of every message after `initialize`.
    // The negotiation messages are exempt: `initialize` negotiates in its
    // body, and a newer client's `server/discover` probe carries the newer
    // revision by design and must reach the -32601 answer below (the
    // official Python SDK 2.x sends `2026-07-28` there, then falls back).
    if !matches!(method, Some("initialize" | "server/discover"))
        && let Some(v) = req.header("mcp-protocol-version")
        && v.trim() != PROTOCOL_VERSION
    {
        return Err(Error::new(
            Code::InvalidRequest,
            format!("unsupported MCP-Protocol-Version (this server speaks {PROTOCOL_VERSION})"),
        ));
    }
    let (id, method) = match classify(&msg) {
        Kind::Request => match (id, method) {
            (Some(id), Some(method)) => (id, method),
            _ => return Ok(invalid_request(Value::Null, "invalid JSON-RPC request").into()),
        },
        // Notifications and responses: accepted, no body.
        Kind::Accepted => {
            return Ok(Response {
                status: 202,
                headers: Vec::new(),
                body: Vec::new(),
                content_type: "application/json",
            }
            .into());
        }
        Kind::Invalid(id, why) => return Ok(invalid_request(id, why).into()),
    };
    let params = msg.get("params").cloned().unwrap_or(json!({}));
    match method {
        "initialize" => Ok(rpc_result(
            id,
            json!({
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "agent-task", "version": env!("CARGO_PKG_VERSION")},
                "instructions": "Workflow tasks: call capabilities, follow next, read instructions (required criteria are inline), fetch a reference only when needed.",
            }),
        )
        .into()),
        "ping" => Ok(rpc_result(id, json!({})).into()),
        "tools/list" => Ok(rpc_result(id, json!({"tools": tools()})).into()),
        "tools/call" => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            if !crate::workflow::service::facade::OPERATIONS.contains(&name) {
                return Ok(rpc_error(id, INVALID_PARAMS, "unknown tool").into());
            }
            let mut args = match params.get("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(m)) => m.clone(),
                Some(_) => {
                    return Ok(rpc_error(id, INVALID_PARAMS, "arguments must be an object").into());
                }
            };
            if args.contains_key("operation") {
                return Ok(rpc_error(
                    id,
                    INVALID_PARAMS,
                    "arguments may not name an operation",
                )
                .into());
            }
            args.insert("operation".into(), json!(name));
            let pending = match ws.run_deferred(&profile, &tok, Value::Object(args)) {
                Ok(d) => d,
                Err(e) => return Ok(rpc_result(id, tool_result(e.to_json(), true)).into()),
            };
            // Awaited on the server's runtime; a tool error (its own typed
            // error, or its batch's) is a result with `isError`, as above.
            Ok(Reply::later(async move {
                let result = match pending.answer().await {
                    Ok(v) => tool_result(v, false),
                    Err(e) => tool_result(e.to_json(), true),
                };
                Ok(rpc_result(id, result))
            }))
        }
        _ => Ok(rpc_error(id, METHOD_NOT_FOUND, "method not found").into()),
    }
}

/// What one JSON-RPC message is (JSON-RPC 2.0 §4-5 with MCP's rules: a
/// request id is a string or an integer, never null).
#[derive(Debug, PartialEq)]
pub enum Kind {
    /// A request with a valid id and a string method: answered.
    Request,
    /// A notification (a method, no id) or a response (an id and exactly
    /// one of `result`/`error`, no method): HTTP 202, no body.
    Accepted,
    /// Anything else: `-32600`, with the message's id when it has a valid
    /// one (else `null`).
    Invalid(Value, &'static str),
}

/// Classifies one decoded JSON-RPC message (public for the fuzz target).
pub fn classify(msg: &Map<String, Value>) -> Kind {
    let id = msg.get("id");
    let valid_id = id.filter(|v| v.is_string() || v.is_i64() || v.is_u64());
    let answer_id = valid_id.cloned().unwrap_or(Value::Null);
    if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Kind::Invalid(
            answer_id,
            "not a JSON-RPC 2.0 message (jsonrpc must be \"2.0\")",
        );
    }
    match msg.get("method") {
        Some(Value::String(_)) => {
            if msg
                .get("params")
                .is_some_and(|p| !(p.is_object() || p.is_array()))
            {
                return Kind::Invalid(answer_id, "params must be an object");
            }
            match (id, valid_id) {
                (None, _) => Kind::Accepted,
                (Some(_), None) => {
                    Kind::Invalid(Value::Null, "a request id must be a string or an integer")
                }
                (Some(_), Some(_)) => Kind::Request,
            }
        }
        Some(_) => Kind::Invalid(answer_id, "method must be a string"),
        None => {
            let has_result = msg.contains_key("result");
            let has_error = msg.contains_key("error");
            if id.is_some() && has_result != has_error {
                Kind::Accepted
            } else {
                Kind::Invalid(
                    answer_id,
                    "neither a request, a notification nor a response",
                )
            }
        }
    }
}

/// The `-32600` answer: HTTP 200 when it carries the request's id (like
/// every other JSON-RPC error with an id), 400 when the id is `null`.
fn invalid_request(id: Value, message: &str) -> Response {
    let status = if id.is_null() { 400 } else { 200 };
    Response::json(
        status,
        &json!({"jsonrpc": "2.0", "id": id, "error": {"code": INVALID_REQUEST, "message": message}}),
    )
}

/// Reads one JSON-RPC message: `Ok(Ok(object))`, or `Ok(Err(answer))`
/// with the JSON-RPC error for a body that is not one message — `-32700`
/// for bytes that are not JSON (or not UTF-8), `-32600` for a duplicate
/// key at any depth or nesting deeper than 64 (strict JSON,
/// `docs/wire.md`: which of two values would count is ambiguous, so the
/// message is refused whole, `id: null`), for a JSON array (a batch: MCP
/// 2025-06-18 removed JSON-RPC batching and 2025-11-25 has none) or any
/// other non-object. Media type and size refusals stay typed errors.
fn read_message(
    req: &mut Request<'_>,
) -> Result<std::result::Result<Map<String, Value>, Response>> {
    use crate::wire::json::{Limits, Refusal, from_slice};
    let max = super::workspace::MAX_BODY;
    let bytes = super::router::read_json_bytes(req, max)?;
    let refuse = |code: i64, message: &str| {
        Response::json(
            400,
            &json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}}),
        )
    };
    Ok(
        match from_slice::<Value>(&bytes, Limits::bytes(max as usize)) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(Value::Array(_)) => Err(refuse(
                INVALID_REQUEST,
                "JSON-RPC batches are not supported: MCP 2025-11-25 carries one message per POST",
            )),
            Ok(_) => Err(refuse(INVALID_REQUEST, "not a JSON-RPC message object")),
            Err(r @ (Refusal::DuplicateKey(_) | Refusal::TooDeep { .. })) => {
                Err(refuse(INVALID_REQUEST, &format!("invalid request: {r}")))
            }
            Err(_) => Err(refuse(PARSE_ERROR, "parse error")),
        },
    )
}

/// A `tools/call` result: `structuredContent` plus a text copy.
pub fn tool_result(v: Value, is_error: bool) -> Value {
    let text = serde_json::to_string(&v).unwrap_or_default();
    let structured = if v.is_object() {
        v
    } else {
        json!({"value": v})
    };
    json!({
        "content": [{"type": "text", "text": text}],
        "structuredContent": structured,
        "isError": is_error,
    })
}

/// Mounts the MCP route (guarded by the workspace bearer check).
pub fn mount(router: &mut Router, ws: Arc<Workspace>) {
    let w = ws.clone();
    router.route_deferred(
        Method::Post,
        PATH,
        RouteSpec::new(Access::Guarded)
            .authorize(Arc::new(move |req: &Request<'_>| authorize(&w, req)))
            .body(BodySpec::json(super::workspace::MAX_BODY)),
        Arc::new(move |req: &mut Request<'_>| handle(&ws, req)),
    );
    // GET (an SSE stream) and DELETE (a session end) are not offered: 405
    // before any bearer check, like the spec's answer for a server without
    // a stream or sessions. `Method::Other` is every method but GET/POST.
    for method in [Method::Get, Method::Other] {
        router.route(
            method,
            PATH,
            Access::Public,
            Arc::new(|_req: &mut Request<'_>| {
                let mut r = Response::error(&Error::new(
                    Code::MethodNotAllowed,
                    "this MCP endpoint answers POST only (no SSE stream, no session)",
                ));
                r.headers.push(("Allow".into(), "POST".into()));
                Ok(r)
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(v: Value) -> Kind {
        classify(v.as_object().expect("object"))
    }

    #[test]
    fn classification() {
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"})),
            Kind::Request
        );
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "id": "a", "method": "ping", "params": {}})),
            Kind::Request
        );
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})),
            Kind::Accepted
        );
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "id": 1, "result": {}})),
            Kind::Accepted
        );
        assert_eq!(
            kind(json!({"jsonrpc": "2.0", "id": null, "error": {"code": 1, "message": "x"}})),
            Kind::Accepted
        );
        for (msg, id) in [
            (json!({"jsonrpc": "2.0", "id": 1, "method": 5}), json!(1)),
            (
                json!({"jsonrpc": "2.0", "id": "x", "method": null}),
                json!("x"),
            ),
            (json!({"jsonrpc": "2.0", "id": 7}), json!(7)),
            (
                json!({"jsonrpc": "2.0", "id": 7, "result": 1, "error": {}}),
                json!(7),
            ),
            (
                json!({"jsonrpc": "1.0", "id": 2, "method": "ping"}),
                json!(2),
            ),
            (json!({"id": 3, "method": "ping"}), json!(3)),
            (
                json!({"jsonrpc": "2.0", "id": 4, "method": "ping", "params": 1}),
                json!(4),
            ),
            (
                json!({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
                Value::Null,
            ),
            (
                json!({"jsonrpc": "2.0", "id": null, "method": "ping"}),
                Value::Null,
            ),
            (
                json!({"jsonrpc": "2.0", "id": {}, "method": "ping"}),
                Value::Null,
            ),
            (json!({"jsonrpc": "2.0", "method": 5}), Value::Null),
            (json!({"jsonrpc": "2.0"}), Value::Null),
        ] {
            match kind(msg.clone()) {
                Kind::Invalid(got, _) => assert_eq!(got, id, "{msg}"),
                other => panic!("{msg}: {other:?}"),
            }
        }
        let r = invalid_request(json!(1), "x");
        assert_eq!(r.status, 200);
        assert_eq!(invalid_request(Value::Null, "x").status, 400);
    }

    /// A value of a property schema's type that its pattern accepts, or
    /// `None` for a nested document (an `object`).
    fn sample(schema: &Value) -> Option<Value> {
        match schema["type"].as_str()? {
            "string" if schema["pattern"] == "^[0-9a-f]{64}$" => Some(json!("a".repeat(64))),
            "string" => Some(json!("t1")),
            "integer" => Some(json!(1)),
            "boolean" => Some(json!(true)),
            _ => None,
        }
    }

    /// The MCP tool schemas are checked against the one request type
    /// (`facade::OperationRequest`, decoded by `facade::decode` as the
    /// HTTP and MCP faces do): one tool per operation; every schema
    /// property is a field the request accepts; the required properties
    /// alone decode; every field the request carries is in the schema;
    /// an extra property is refused as the schema's
    /// `additionalProperties: false` says.
    #[test]
    fn every_tool_schema_matches_its_operation_request() {
        let tools = tools();
        let names: Vec<&str> = tools
            .iter()
            .map(|t| t["name"].as_str().expect("name"))
            .collect();
        assert_eq!(names, crate::workflow::service::facade::OPERATIONS);
        for t in &tools {
            let name = t["name"].as_str().expect("name");
            let schema = &t["inputSchema"];
            assert_eq!(schema["additionalProperties"], false, "{name}");
            let props = schema["properties"].as_object().expect("properties");
            let mut full = Map::new();
            let mut nested = false;
            for (k, p) in props {
                match sample(p) {
                    Some(v) => {
                        full.insert(k.clone(), v);
                    }
                    None => nested = true,
                }
            }
            if nested {
                // Only `result` carries a nested document (the assertion,
                // with its own strict decoder and tests).
                assert_eq!(name, "result", "{name}: a property without a sample");
                continue;
            }
            let required: Vec<&str> = schema["required"]
                .as_array()
                .expect("required")
                .iter()
                .map(|r| r.as_str().expect("name"))
                .collect();
            let with_op = |m: &Map<String, Value>| {
                let mut m = m.clone();
                m.insert("operation".into(), json!(name));
                Value::Object(m)
            };
            let req = crate::workflow::service::facade::decode(with_op(&full))
                .unwrap_or_else(|e| panic!("{name}: every schema property: {e}"));
            let back = serde_json::to_value(&req).expect("serialise");
            for k in back.as_object().expect("object").keys() {
                assert!(
                    k == "operation" || props.contains_key(k),
                    "{name}: the request field `{k}` is missing from the MCP schema"
                );
            }
            let min: Map<String, Value> = full
                .iter()
                .filter(|(k, _)| required.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            crate::workflow::service::facade::decode(with_op(&min))
                .unwrap_or_else(|e| panic!("{name}: the required properties alone: {e}"));
            for r in &required {
                let mut less = min.clone();
                less.remove(*r);
                assert!(
                    crate::workflow::service::facade::decode(with_op(&less)).is_err(),
                    "{name}: `{r}` is required by the schema but not by the request"
                );
            }
            let mut extra = full.clone();
            extra.insert("not_a_field".into(), json!(1));
            assert!(
                crate::workflow::service::facade::decode(with_op(&extra)).is_err(),
                "{name}: an unknown property must be refused"
            );
        }
    }
}
