//! Workspace MCP: `POST /v1/hub/workspace/mcp?repository=R&profile=P`, the
//! Streamable HTTP transport answered with plain `application/json` (no
//! SSE, no session id), revisions 2026-07-28 and 2025-11-25 picked per
//! request ([`super::mcp_wire`]). Tools are the facade's operations with
//! JSON Schema inputs; `tools/call` runs
//! [`crate::workflow::service::facade::execute_deferred`], the same library
//! call as the HTTP endpoint and the CLI. See `docs/mcp.md`.

use super::mcp_wire::{self, Call, INVALID_PARAMS, ServerSpec, Tool};
use super::router::{Access, BodySpec, Method, Reply, Request, RouteSpec, Router};
use super::shared::{MAX_BODY, bearer};
use super::workspace::Workspace;
use crate::error::{Code, Error, Result};
use crate::workflow::service::facade::TaskProfile;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// The legacy protocol revision this server negotiates in `initialize`.
pub const PROTOCOL_VERSION: &str = mcp_wire::LEGACY_VERSION;
/// The MCP route.
pub const PATH: &str = "/v1/hub/workspace/mcp";

const SPEC: ServerSpec = ServerSpec {
    name: "agent-task",
    instructions: "Workflow tasks: call capabilities, follow next, read instructions (required criteria are inline), fetch a reference only when needed.",
};

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
pub fn tools() -> Vec<Tool> {
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
                    (
                        "group",
                        id_schema(
                            "the Change's group: Changes made for the same work share one label",
                        ),
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
        (
            "explain",
            "Why the Change's current subject does not qualify, from the signed evidence the authority imported: per task the reason, and for a command step its exit status, duration, bounded output tails and runtime identity; for a review its findings. Read-only; never what an agent said.",
            obj(
                &[
                    ("change_id", id_schema("Change id")),
                    (
                        "task_id",
                        id_schema("only this task of the current subject"),
                    ),
                ],
                &["change_id"],
            ),
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
            "overview",
            "The bearer's own Changes on this profile: subject, group, state, tasks with their current attempts (holder, fence, lease remaining), receipts, landings and qualification (read-only).",
            obj(
                &[
                    ("repo", id_schema("only Changes of this repository")),
                    ("change", id_schema("only this Change")),
                    (
                        "state",
                        json!({"type": "string", "maxLength": 64, "description": "only Changes in this state or with a task or current attempt in it (docs/overview.md)"}),
                    ),
                    (
                        "by_agent",
                        id_schema("only Changes opened by this agent or with an attempt it holds"),
                    ),
                    ("group", id_schema("only Changes of this group")),
                ],
                &[],
            ),
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
        .map(|(name, description, schema)| Tool {
            name: name.to_owned(),
            description: description.to_owned(),
            input_schema: schema,
        })
        .collect()
}

/// The caller and profile of an MCP request, from its head: the `Origin`
/// check, the bearer and the `repository`/`profile` query parameters.
fn target(ws: &Workspace, req: &Request<'_>) -> Result<(String, TaskProfile)> {
    mcp_wire::check_origin(&ws.hosts, req)?;
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
/// ([`Call::Later`]): no handler thread waits for the batch, exactly as
/// on the workspace task route.
fn handle(ws: &Workspace, tools: &[Tool], req: &mut Request<'_>) -> Result<Reply> {
    let (tok, profile) = target(ws, req)?;
    mcp_wire::answer(req, MAX_BODY, SPEC, tools, |name, mut args| {
        if args.contains_key("operation") {
            return Call::Refused(INVALID_PARAMS, "arguments may not name an operation".into());
        }
        args.insert("operation".into(), json!(name));
        match ws.run_deferred(&profile, &tok, Value::Object(args)) {
            Ok(pending) => Call::Later(Box::pin(async move { pending.answer().await })),
            Err(e) => Call::Now(Err(e)),
        }
    })
}

/// Mounts the MCP route (guarded by the workspace bearer check).
pub fn mount(router: &mut Router, ws: Arc<Workspace>) {
    let w = ws.clone();
    let tools = Arc::new(tools());
    router.route_deferred(
        Method::Post,
        PATH,
        RouteSpec::new(Access::Guarded)
            .authorize(Arc::new(move |req: &Request<'_>| authorize(&w, req)))
            .body(BodySpec::json(MAX_BODY)),
        Arc::new(move |req: &mut Request<'_>| handle(&ws, &tools, req)),
    );
    mcp_wire::refuse_other_methods(router, PATH);
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, crate::workflow::service::facade::OPERATIONS);
        for t in &tools {
            let name = t.name.as_str();
            let schema = &t.input_schema;
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
