//! The MCP protocol of both endpoints (the workspace's and the data
//! node's): one JSON-RPC message per POST, read strictly, classified, its
//! era picked per request as revision 2026-07-28 says (a request whose
//! `params._meta` carries `io.modelcontextprotocol/protocolVersion` is
//! served statelessly by 2026-07-28; anything else, `initialize` first, by
//! 2025-11-25), each era's transport rules checked, and the answer
//! rendered from typed structs. The endpoints supply their tools and run
//! the calls. See `docs/mcp.md`.

use super::router::{Access, Method, Reply, Request, Response, Router};
use crate::error::{Code, Error, Result};
use serde::Serialize;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;

/// The legacy revision (an `initialize` handshake).
pub const LEGACY_VERSION: &str = "2025-11-25";
/// The modern revision (per-request `_meta`, no handshake).
pub const MODERN_VERSION: &str = "2026-07-28";
/// Every revision served, newest first (the `-32022` answer's list and
/// `server/discover`'s `supportedVersions`).
pub const SUPPORTED_VERSIONS: [&str; 2] = [MODERN_VERSION, LEGACY_VERSION];

const PARSE_ERROR: i64 = -32700;
const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC "method not found".
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC "invalid params".
pub const INVALID_PARAMS: i64 = -32602;
/// 2026-07-28 `HeaderMismatch`.
pub const HEADER_MISMATCH: i64 = -32020;
/// 2026-07-28 `UnsupportedProtocolVersion`.
pub const UNSUPPORTED_VERSION: i64 = -32022;

const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// How long a modern client may cache `tools/list` and `server/discover`
/// (the tool set changes only with the binary).
const TTL_MS: u64 = 3_600_000;

/// One tool of `tools/list`.
#[derive(Debug, Clone, Serialize)]
pub struct Tool {
    /// Its name.
    pub name: String,
    /// What it does.
    pub description: String,
    /// Its arguments (JSON Schema, `additionalProperties: false`).
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
}

/// What an endpoint tells a client about itself.
#[derive(Debug, Clone, Copy)]
pub struct ServerSpec {
    /// `serverInfo.name`.
    pub name: &'static str,
    /// The `instructions` of `initialize` and `server/discover`.
    pub instructions: &'static str,
}

/// A future answer of a tool.
pub type PendingCall = Pin<Box<dyn Future<Output = Result<Value>> + Send + 'static>>;

/// The outcome of a tool call as the endpoint runs it.
pub enum Call {
    /// Answered now: a value, or a typed error (a result with `isError`).
    Now(Result<Value>),
    /// Answered once a write is durable (awaited on the server's runtime).
    Later(PendingCall),
    /// A protocol error (`-32602`: an unknown tool, arguments that are no
    /// object …), not a tool result.
    Refused(i64, String),
}

#[derive(Serialize)]
struct Implementation {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct ToolsCapability {
    #[serde(rename = "listChanged")]
    list_changed: bool,
}

#[derive(Serialize)]
struct Capabilities {
    tools: ToolsCapability,
}

const CAPABILITIES: Capabilities = Capabilities {
    tools: ToolsCapability {
        list_changed: false,
    },
};

#[derive(Serialize)]
struct InitializeResult {
    #[serde(rename = "protocolVersion")]
    protocol_version: &'static str,
    capabilities: Capabilities,
    #[serde(rename = "serverInfo")]
    server_info: Implementation,
    instructions: &'static str,
}

#[derive(Serialize)]
struct DiscoverResult {
    #[serde(rename = "supportedVersions")]
    supported_versions: [&'static str; 2],
    capabilities: Capabilities,
    instructions: &'static str,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct ToolsList<'a> {
    tools: &'a [Tool],
}

#[derive(Serialize)]
struct TextContent {
    #[serde(rename = "type")]
    kind: &'static str,
    text: String,
}

/// A `tools/call` result: `structuredContent` plus its text copy.
#[derive(Serialize)]
pub struct ToolResult {
    content: Vec<TextContent>,
    #[serde(rename = "structuredContent")]
    structured_content: Value,
    #[serde(rename = "isError")]
    is_error: bool,
}

impl ToolResult {
    /// The result of a value (an object, else wrapped as `{"value": v}`).
    pub fn new(v: Value, is_error: bool) -> ToolResult {
        let text = serde_json::to_string(&v).unwrap_or_default();
        let structured_content = if v.is_object() {
            v
        } else {
            let mut m = Map::new();
            m.insert("value".into(), v);
            Value::Object(m)
        };
        ToolResult {
            content: vec![TextContent { kind: "text", text }],
            structured_content,
            is_error,
        }
    }

    /// The result of a tool's outcome: a typed error is `isError` with the
    /// flat error object.
    pub fn of(r: Result<Value>) -> ToolResult {
        match r {
            Ok(v) => ToolResult::new(v, false),
            Err(e) => ToolResult::new(e.to_json(), true),
        }
    }
}

#[derive(Serialize)]
struct ServerMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    server_info: Implementation,
}

/// A 2026-07-28 result: the era's fields around the result's own.
#[derive(Serialize)]
struct Modern<T> {
    #[serde(flatten)]
    inner: T,
    #[serde(rename = "resultType")]
    result_type: &'static str,
    #[serde(rename = "_meta")]
    meta: ServerMeta,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    cache_scope: Option<&'static str>,
}

#[derive(Serialize)]
struct RpcError {
    code: i64,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

#[derive(Serialize)]
struct ErrorEnvelope<'a> {
    jsonrpc: &'static str,
    id: &'a Value,
    error: RpcError,
}

#[derive(Serialize)]
struct ResultEnvelope<'a, T> {
    jsonrpc: &'static str,
    id: &'a Value,
    result: T,
}

#[derive(Serialize)]
struct UnsupportedData<'a> {
    supported: [&'static str; 2],
    requested: &'a str,
}

/// A JSON-RPC error answer with HTTP `status`.
fn rpc_error(status: u16, id: &Value, code: i64, message: &str, data: Option<Value>) -> Response {
    let e = ErrorEnvelope {
        jsonrpc: "2.0",
        id,
        error: RpcError {
            code,
            message: message.to_owned(),
            data,
        },
    };
    Response::json(status, &serde_json::to_value(e).unwrap_or_default())
}

fn rpc_result<T: Serialize>(id: &Value, result: T) -> Response {
    let r = ResultEnvelope {
        jsonrpc: "2.0",
        id,
        result,
    };
    Response::json(200, &serde_json::to_value(r).unwrap_or_default())
}

fn accepted() -> Response {
    Response {
        status: 202,
        headers: Vec::new(),
        body: Vec::new(),
        content_type: "application/json",
    }
}

/// Which protocol era serves a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2025-11-25: `initialize`, then the negotiated header.
    Legacy,
    /// 2026-07-28: per-request `_meta`, stateless.
    Modern,
}

/// The era of a request: `_meta` carrying a protocol version is modern,
/// anything else (an `initialize` first of all) legacy.
pub fn era_of(params: Option<&Value>) -> Era {
    match params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
    {
        Some(m) if m.contains_key(META_VERSION) => Era::Modern,
        _ => Era::Legacy,
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

/// Classifies one message.
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
pub fn invalid_request(id: Value, message: &str) -> Response {
    let status = if id.is_null() { 400 } else { 200 };
    rpc_error(status, &id, INVALID_REQUEST, message, None)
}

/// Reads one JSON-RPC message of at most `max` bytes: `Ok(Ok(object))`,
/// or `Ok(Err(answer))` with the JSON-RPC error for a body that is not one
/// message — `-32700` for bytes that are not JSON (or not UTF-8), `-32600`
/// for a duplicate key at any depth or nesting deeper than 64 (strict
/// JSON, `docs/wire.md`: which of two values would count is ambiguous, so
/// the message is refused whole, `id: null`), for a JSON array (a batch:
/// neither revision has them) or any other non-object. Media type and
/// size refusals stay typed errors.
pub fn read_message(
    req: &mut Request<'_>,
    max: u64,
) -> Result<std::result::Result<Map<String, Value>, Response>> {
    use crate::wire::json::{Limits, Refusal, from_slice};
    let bytes = super::router::read_json_bytes(req, max)?;
    let refuse = |code: i64, message: &str| rpc_error(400, &Value::Null, code, message, None);
    Ok(
        match from_slice::<Value>(&bytes, Limits::bytes(max as usize)) {
            Ok(Value::Object(m)) => Ok(m),
            Ok(Value::Array(_)) => Err(refuse(
                INVALID_REQUEST,
                "JSON-RPC batches are not supported: MCP carries one message per POST",
            )),
            Ok(_) => Err(refuse(INVALID_REQUEST, "not a JSON-RPC message object")),
            Err(r @ (Refusal::DuplicateKey(_) | Refusal::TooDeep { .. })) => {
                Err(refuse(INVALID_REQUEST, &format!("invalid request: {r}")))
            }
            Err(_) => Err(refuse(PARSE_ERROR, "parse error")),
        },
    )
}

/// Decodes a header value that may use the 2026-07-28 Base64 sentinel
/// (`=?base64?…?=`, UTF-8 inside); `None` when the sentinel's payload is
/// not Base64 of UTF-8.
fn decode_header_value(v: &str) -> Option<String> {
    match v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        Some(b64) => data_encoding::BASE64
            .decode(b64.as_bytes())
            .ok()
            .and_then(|b| String::from_utf8(b).ok()),
        None => Some(v.to_owned()),
    }
}

/// The 2026-07-28 checks of a request before its method runs, in the
/// order of the specification's ladder: the `_meta` fields (`-32602`), the
/// headers against the body (`-32020`), the version (`-32022`); each
/// HTTP 400 with the request's id.
fn modern_checks(req: &Request<'_>, id: &Value, method: &str, params: &Value) -> Option<Response> {
    let bad = |code: i64, message: &str, data: Option<Value>| {
        Some(rpc_error(400, id, code, message, data))
    };
    let meta = params.get("_meta").and_then(Value::as_object)?;
    let Some(version) = meta.get(META_VERSION).and_then(Value::as_str) else {
        return bad(
            INVALID_PARAMS,
            "params._meta io.modelcontextprotocol/protocolVersion must be a string",
            None,
        );
    };
    if !meta.get(META_CAPABILITIES).is_some_and(Value::is_object) {
        return bad(
            INVALID_PARAMS,
            "params._meta must carry io.modelcontextprotocol/clientCapabilities (an object)",
            None,
        );
    }
    match req.header("mcp-protocol-version") {
        Some(h) if h == version => {}
        Some(_) => {
            return bad(
                HEADER_MISMATCH,
                "Header mismatch: MCP-Protocol-Version differs from params._meta's protocol version",
                None,
            );
        }
        None => {
            return bad(
                HEADER_MISMATCH,
                "Header mismatch: the MCP-Protocol-Version header is required",
                None,
            );
        }
    }
    match req.header("mcp-method") {
        Some(h) if h == method => {}
        Some(_) => {
            return bad(
                HEADER_MISMATCH,
                "Header mismatch: Mcp-Method differs from the body's method",
                None,
            );
        }
        None => {
            return bad(
                HEADER_MISMATCH,
                "Header mismatch: the Mcp-Method header is required",
                None,
            );
        }
    }
    if method == "tools/call" {
        let body = params.get("name").and_then(Value::as_str);
        let header = req.header("mcp-name").map(decode_header_value);
        match (header, body) {
            (Some(Some(h)), Some(b)) if h == b => {}
            (None, _) => {
                return bad(
                    HEADER_MISMATCH,
                    "Header mismatch: the Mcp-Name header is required on tools/call",
                    None,
                );
            }
            _ => {
                return bad(
                    HEADER_MISMATCH,
                    "Header mismatch: Mcp-Name differs from the body's params.name",
                    None,
                );
            }
        }
    }
    if version != MODERN_VERSION {
        let data = UnsupportedData {
            supported: SUPPORTED_VERSIONS,
            requested: version,
        };
        return bad(
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            serde_json::to_value(data).ok(),
        );
    }
    None
}

fn server_meta(spec: &ServerSpec) -> ServerMeta {
    ServerMeta {
        server_info: Implementation {
            name: spec.name,
            version: env!("CARGO_PKG_VERSION"),
        },
    }
}

fn modern<T>(spec: &ServerSpec, inner: T, cacheable: bool) -> Modern<T> {
    Modern {
        inner,
        result_type: "complete",
        meta: server_meta(spec),
        ttl_ms: cacheable.then_some(TTL_MS),
        cache_scope: cacheable.then_some("private"),
    }
}

/// Answers one POSTed message (its caller already checked `Origin` and
/// the bearer): `tools` is the endpoint's tool list, `call` runs a tool by
/// name with its arguments (an object; `{}` when absent).
pub fn answer(
    req: &mut Request<'_>,
    max_body: u64,
    spec: ServerSpec,
    tools: &[Tool],
    call: impl FnOnce(&str, Map<String, Value>) -> Call,
) -> Result<Reply> {
    let msg = match read_message(req, max_body)? {
        Ok(m) => m,
        Err(refusal) => return Ok(refusal.into()),
    };
    let id = match classify(&msg) {
        Kind::Request => msg.get("id").cloned().unwrap_or(Value::Null),
        Kind::Accepted => return Ok(accepted().into()),
        Kind::Invalid(id, why) => return Ok(invalid_request(id, why).into()),
    };
    let method = msg.get("method").and_then(Value::as_str).unwrap_or("");
    let params = msg
        .get("params")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()));
    let era = era_of(Some(&params));
    if era == Era::Modern {
        if let Some(refusal) = modern_checks(req, &id, method, &params) {
            return Ok(refusal.into());
        }
    } else if method == "server/discover" {
        // Only 2026-07-28 has it, and a 2026-07-28 request carries `_meta`.
        return Ok(rpc_error(
            400,
            &id,
            INVALID_PARAMS,
            "server/discover is a 2026-07-28 request: params._meta must carry io.modelcontextprotocol/protocolVersion and clientCapabilities",
            None,
        )
        .into());
    } else if method != "initialize"
        && let Some(v) = req.header("mcp-protocol-version")
        && v.trim() != LEGACY_VERSION
    {
        // After `initialize` the header names the negotiated revision;
        // `initialize` itself negotiates in its body.
        return Err(Error::new(
            Code::InvalidRequest,
            format!(
                "unsupported MCP-Protocol-Version {:?} for a request without 2026-07-28 _meta (this server speaks {LEGACY_VERSION} after initialize, {MODERN_VERSION} with _meta)",
                v.chars().take(64).collect::<String>()
            ),
        ));
    }
    match (era, method) {
        (Era::Legacy, "initialize") => Ok(rpc_result(
            &id,
            InitializeResult {
                protocol_version: LEGACY_VERSION,
                capabilities: CAPABILITIES,
                server_info: Implementation {
                    name: spec.name,
                    version: env!("CARGO_PKG_VERSION"),
                },
                instructions: spec.instructions,
            },
        )
        .into()),
        (Era::Legacy, "ping") => Ok(rpc_result(&id, Empty {}).into()),
        (Era::Legacy, "tools/list") => Ok(rpc_result(&id, ToolsList { tools }).into()),
        (Era::Modern, "server/discover") => Ok(rpc_result(
            &id,
            modern(
                &spec,
                DiscoverResult {
                    supported_versions: SUPPORTED_VERSIONS,
                    capabilities: CAPABILITIES,
                    instructions: spec.instructions,
                },
                true,
            ),
        )
        .into()),
        (Era::Modern, "tools/list") => {
            Ok(rpc_result(&id, modern(&spec, ToolsList { tools }, true)).into())
        }
        (_, "tools/call") => {
            let name = params.get("name").and_then(Value::as_str).unwrap_or("");
            if !tools.iter().any(|t| t.name == name) {
                return Ok(rpc_error(200, &id, INVALID_PARAMS, "unknown tool", None).into());
            }
            let args = match params.get("arguments") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(m)) => m.clone(),
                Some(_) => {
                    return Ok(rpc_error(
                        200,
                        &id,
                        INVALID_PARAMS,
                        "arguments must be an object",
                        None,
                    )
                    .into());
                }
            };
            let render = move |r: Result<Value>| match era {
                Era::Legacy => rpc_result(&id, ToolResult::of(r)),
                Era::Modern => rpc_result(&id, modern(&spec, ToolResult::of(r), false)),
            };
            match call(name, args) {
                Call::Now(r) => Ok(render(r).into()),
                Call::Refused(code, message) => {
                    Ok(rpc_error(200, &msg_id(&msg), code, &message, None).into())
                }
                // Awaited on the server's runtime; a tool error (its own
                // typed error, or its batch's) is a result with `isError`.
                Call::Later(pending) => Ok(Reply::later(async move { Ok(render(pending.await)) })),
            }
        }
        // The modern era has no handshake and no ping: a method this
        // server does not implement is HTTP 404 with -32601 there; the
        // legacy era answers -32601 with HTTP 200, as before.
        (Era::Modern, _) => {
            Ok(rpc_error(404, &id, METHOD_NOT_FOUND, "method not found", None).into())
        }
        (Era::Legacy, _) => {
            Ok(rpc_error(200, &id, METHOD_NOT_FOUND, "method not found", None).into())
        }
    }
}

/// The `Origin` check (DNS-rebinding defence): absent (not a browser), or
/// an origin on the server's host allow-list with the server's scheme,
/// else `forbidden`. It is not compared with `Host`: a rebinding page
/// controls both, but not the allow-list.
pub fn check_origin(hosts: &super::hosts::HostAllowList, req: &Request<'_>) -> Result<()> {
    match req.header("origin") {
        None => Ok(()),
        Some(o) if hosts.allows_origin(o) => Ok(()),
        Some(_) => Err(Error::new(Code::Forbidden, "foreign Origin refused")),
    }
}

/// GET (an SSE stream) and DELETE (a session end) are not offered on an
/// MCP endpoint: 405 with `Allow: POST`, before any bearer check, as both
/// revisions say for a server without a stream or sessions.
/// `Method::Other` is every method but GET/POST.
pub fn refuse_other_methods(router: &mut Router, path: &'static str) {
    for method in [Method::Get, Method::Other] {
        router.route(
            method,
            path,
            Access::Public,
            std::sync::Arc::new(|_req: &mut Request<'_>| {
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

fn msg_id(msg: &Map<String, Value>) -> Value {
    msg.get("id").cloned().unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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

    #[test]
    fn era_is_modern_only_with_a_protocol_version_in_meta() {
        let m = json!({"_meta": {META_VERSION: "2026-07-28"}});
        assert_eq!(era_of(Some(&m)), Era::Modern);
        // Even an unsupported or ill-typed version selects the modern
        // ladder, which then refuses it with its own code.
        assert_eq!(
            era_of(Some(&json!({"_meta": {META_VERSION: 5}}))),
            Era::Modern
        );
        for legacy in [
            json!({}),
            json!({"_meta": {}}),
            json!({"_meta": {"progressToken": 1}}),
            json!({"_meta": "x"}),
            json!([1]),
        ] {
            assert_eq!(era_of(Some(&legacy)), Era::Legacy, "{legacy}");
        }
        assert_eq!(era_of(None), Era::Legacy);
    }

    #[test]
    fn header_values_decode_the_base64_sentinel() {
        assert_eq!(decode_header_value("next").as_deref(), Some("next"));
        // "Hello, 世界"
        assert_eq!(
            decode_header_value("=?base64?SGVsbG8sIOS4lueVjA==?=").as_deref(),
            Some("Hello, 世界")
        );
        assert_eq!(decode_header_value("=?base64?!!?="), None);
        assert_eq!(decode_header_value("=?base64?/w==?="), None);
    }

    /// The typed results render the bytes the `json!` literals did.
    #[test]
    fn typed_results_render_the_wire_shapes() {
        let spec = ServerSpec {
            name: "agent-task",
            instructions: "i",
        };
        let id = json!(3);
        let r = rpc_result(&id, ToolResult::new(json!({"a": 1}), false));
        let v: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "{\"a\":1}"}], "structuredContent": {"a": 1}, "isError": false}})
        );
        let r = rpc_result(&id, ToolResult::new(json!([1]), true));
        let v: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(v["result"]["structuredContent"], json!({"value": [1]}));
        let r = rpc_result(&id, modern(&spec, ToolsList { tools: &[] }, true));
        let v: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(
            v["result"],
            json!({"tools": [], "resultType": "complete", "ttlMs": TTL_MS, "cacheScope": "private",
                   "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "agent-task", "version": env!("CARGO_PKG_VERSION")}}})
        );
        let r = rpc_error(
            400,
            &id,
            UNSUPPORTED_VERSION,
            "Unsupported protocol version",
            serde_json::to_value(UnsupportedData {
                supported: SUPPORTED_VERSIONS,
                requested: "1900-01-01",
            })
            .ok(),
        );
        let v: Value = serde_json::from_slice(&r.body).expect("json");
        assert_eq!(
            v,
            json!({"jsonrpc": "2.0", "id": 3, "error": {"code": -32022, "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28", "2025-11-25"], "requested": "1900-01-01"}}})
        );
        // The plain error has no `data` member.
        let r = rpc_error(
            200,
            &Value::Null,
            METHOD_NOT_FOUND,
            "method not found",
            None,
        );
        assert_eq!(
            String::from_utf8(r.body).expect("utf8"),
            r#"{"error":{"code":-32601,"message":"method not found"},"id":null,"jsonrpc":"2.0"}"#
        );
    }
}
