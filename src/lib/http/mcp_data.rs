//! The data node's MCP endpoint: `POST /v1/node/mcp` on `serve` with the
//! node bearer, outside `/v1/data/` (the `agent-data/v1` facts fix that
//! prefix). Both MCP revisions ([`super::mcp_wire`]). Its tools call the
//! data half's public API exactly as the HTTP data routes
//! (`super::data_routes`) do: the same request structs
//! ([`CollectRequest`], [`QueryRequest`], [`ChangesRequest`],
//! [`TombstoneRequest`]), the node's limits and its typed errors, which
//! come back as tool results with `isError`. See `docs/mcp.md`.

use super::mcp_wire::{self, Call, ServerSpec, Tool};
use super::router::{Access, BodySpec, Method, Reply, Request, RouteSpec, Router};
use crate::data::{ChangesRequest, CollectRequest, Node, QueryRequest, TombstoneRequest};
use crate::error::{Code, Error, Result};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// The data MCP route.
pub const PATH: &str = "/v1/node/mcp";

const SPEC: ServerSpec = ServerSpec {
    name: "agent-task-data",
    instructions: "An agent-data/v1 node used as memory. Store a note with collect_text (collection `default` exists on every node; a stable `key` makes a re-store of the same note a no-op), a file under the node's file roots with collect_file, a public web page with collect_http. Find records again with query (words in `text`; `where` matches a subset of the record envelope, e.g. {\"metadata\": {\"topic\": \"build\"}}; `limit`), read one with read_record, follow new records with changes (pass each page's `cursor` back), and forget one with tombstone.",
};

/// The fields every built-in collector reads from its input (facts §14.A).
const COMMON: &[&str] = &[
    "external_id",
    "key",
    "version",
    "observed_at",
    "supersedes_id",
    "metadata",
    "provenance",
    "signature",
];

fn str_prop(desc: &str) -> Value {
    json!({"type": "string", "minLength": 1, "description": desc})
}

fn common_props() -> Map<String, Value> {
    let mut p = Map::new();
    p.insert(
        "collection_id".into(),
        str_prop("the collection to store into (`default` always exists)"),
    );
    p.insert(
        "external_id".into(),
        str_prop("the caller's own id of the item (source.external_id)"),
    );
    p.insert(
        "key".into(),
        str_prop("a stable key: part of the record id, so the same key and content store once"),
    );
    p.insert(
        "version".into(),
        str_prop("a version label: part of the record id"),
    );
    p.insert(
        "observed_at".into(),
        str_prop("when the content was observed (RFC 3339)"),
    );
    p.insert(
        "supersedes_id".into(),
        str_prop("the id of a record of the same collection this one replaces"),
    );
    p.insert(
        "metadata".into(),
        json!({"type": "object", "description": "free metadata, stored canonicalised and searchable with `where`"}),
    );
    p.insert(
        "provenance".into(),
        json!({"type": "array", "items": {"type": "object"}, "description": "[{activity, at, actor?, input_ids?}]"}),
    );
    p.insert(
        "signature".into(),
        json!({"type": "object", "description": "{algorithm, signer, value}"}),
    );
    p
}

fn schema(props: Map<String, Value>, required: &[&str]) -> Value {
    json!({"type": "object", "properties": props, "required": required, "additionalProperties": false})
}

fn collect_schema(own: &[(&str, Value)], required: &str) -> Value {
    let mut p = common_props();
    for (k, v) in own {
        p.insert((*k).to_owned(), v.clone());
    }
    schema(p, &["collection_id", required])
}

/// The tool list, sorted by name.
pub fn tools() -> Vec<Tool> {
    let tool = |name: &str, description: &str, input_schema: Value| Tool {
        name: name.to_owned(),
        description: description.to_owned(),
        input_schema,
    };
    vec![
        tool(
            "changes",
            "One page of the change feed (new records and tombstones, in commit order) after `cursor`; pass the answer's `cursor` back to follow it.",
            schema(
                Map::from_iter([
                    (
                        "collection_id".to_owned(),
                        str_prop("follow one collection only"),
                    ),
                    (
                        "cursor".to_owned(),
                        json!({"type": "string", "description": "the `cursor` of the previous page (absent or empty: from the start); a cursor of another filter is invalid_cursor"}),
                    ),
                    (
                        "limit".to_owned(),
                        json!({"type": "integer", "minimum": 1, "description": "page size"}),
                    ),
                ]),
                &[],
            ),
        ),
        tool(
            "collect_file",
            "Store a file beneath the node's configured file roots (no links, no other path) as a record.",
            collect_schema(
                &[
                    ("path", str_prop("the file's path beneath a file root")),
                    ("media_type", str_prop("media type (default: by extension)")),
                    (
                        "source_uri",
                        str_prop("source URI (default: the file:// URL)"),
                    ),
                ],
                "path",
            ),
        ),
        tool(
            "collect_http",
            "Fetch a public http(s) URL (GET, at most 3 redirects, private and loopback addresses refused) and store the body as a record.",
            collect_schema(
                &[
                    ("url", str_prop("an absolute http or https URL")),
                    (
                        "headers",
                        json!({"type": "object", "additionalProperties": {"type": "string"}, "description": "request headers (dropped on a cross-origin redirect)"}),
                    ),
                ],
                "url",
            ),
        ),
        tool(
            "collect_text",
            "Store a text (a note, a finding, a decision) as a record; the answer names its record id.",
            collect_schema(
                &[
                    ("text", str_prop("the text to store")),
                    ("media_type", str_prop("media type (default text/plain)")),
                    (
                        "source_uri",
                        str_prop("source URI (default: a urn of the text's SHA-256)"),
                    ),
                ],
                "text",
            ),
        ),
        tool(
            "collections",
            "The node's collections (ids, names, policies).",
            schema(Map::new(), &[]),
        ),
        tool(
            "query",
            "Search records: words in `text` (full text, BM25-ranked), exact matches in `where`, at most `limit` results.",
            schema(
                Map::from_iter([
                    (
                        "collections".to_owned(),
                        json!({"type": "array", "items": {"type": "string"}, "description": "collection ids (default: all)"}),
                    ),
                    (
                        "text".to_owned(),
                        json!({"type": "string", "description": "words to find"}),
                    ),
                    (
                        "where".to_owned(),
                        json!({"type": "object", "description": "exact field matches, subset match on the whole envelope, e.g. {\"metadata\": {\"topic\": \"build\"}}"}),
                    ),
                    (
                        "limit".to_owned(),
                        json!({"type": "integer", "minimum": 1, "description": "at most this many results"}),
                    ),
                    (
                        "consistency".to_owned(),
                        json!({"type": "string", "enum": ["local"]}),
                    ),
                ]),
                &[],
            ),
        ),
        tool(
            "read_record",
            "One record by id: its envelope and its content, verified against the envelope's digest.",
            schema(
                Map::from_iter([("record_id".to_owned(), str_prop("the record id"))]),
                &["record_id"],
            ),
        ),
        tool(
            "tombstone",
            "Tombstone (forget) a record: its content is no longer served; the change feed records it.",
            schema(
                Map::from_iter([
                    ("record_id".to_owned(), str_prop("the record id")),
                    (
                        "reason".to_owned(),
                        json!({"type": "string", "description": "why"}),
                    ),
                ]),
                &["record_id"],
            ),
        ),
    ]
}

/// Unknown arguments are refused (`invalid_input`), as the schemas'
/// `additionalProperties: false` says.
fn only(args: &Map<String, Value>, allowed: &[&str], tool: &str) -> Result<()> {
    match args.keys().find(|k| !allowed.contains(&k.as_str())) {
        None => Ok(()),
        Some(k) => Err(Error::new(
            Code::InvalidInput,
            format!(
                "{tool} takes no argument {:?}",
                k.chars().take(64).collect::<String>()
            ),
        )),
    }
}

/// A `collect_*` call as the `CollectRequest` of `POST /v1/data/collect`:
/// the collection id, the collector, and every other argument as the
/// collector's input.
fn collect_request(
    collector: &str,
    own: &[&str],
    mut args: Map<String, Value>,
    tool: &str,
) -> Result<CollectRequest> {
    let allowed: Vec<&str> = own
        .iter()
        .chain(COMMON)
        .copied()
        .chain(["collection_id"])
        .collect();
    only(&args, &allowed, tool)?;
    let collection_id = args.remove("collection_id");
    Ok(CollectRequest {
        collection_id,
        collector_id: Some(Value::String(collector.to_owned())),
        input: Some(Value::Object(args)),
        cursor: None,
    })
}

fn string_arg(args: &Map<String, Value>, name: &str, code: Code) -> Result<Option<String>> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(Error::new(code, format!("{name} must be a string"))),
    }
}

/// `limit` of `changes`: a positive safe integer, else `invalid_query`
/// (the HTTP route's rule for its query parameter).
fn changes_limit(args: &Map<String, Value>) -> Result<Option<u64>> {
    match args.get("limit") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => match v.as_u64() {
            Some(n) if (1..=9_007_199_254_740_991).contains(&n) => Ok(Some(n)),
            _ => Err(Error::new(
                Code::InvalidQuery,
                "limit must be a positive integer",
            )),
        },
    }
}

/// Runs one tool on the node.
fn call(node: &Node, name: &str, args: Map<String, Value>) -> Call {
    let later_bytes = |r: Result<CollectRequest>| -> Call {
        let req = match r {
            Ok(req) => req,
            Err(e) => return Call::Now(Err(e)),
        };
        match node.collect_later(&req) {
            Ok(f) => Call::Later(Box::pin(async move {
                let bytes = f.await?;
                serde_json::from_slice(&bytes)
                    .map_err(|e| Error::internal(format!("collect answer: {e}")))
            })),
            Err(e) => Call::Now(Err(e)),
        }
    };
    match name {
        "collect_text" => later_bytes(collect_request(
            "text",
            &["text", "media_type", "source_uri"],
            args,
            name,
        )),
        "collect_file" => later_bytes(collect_request(
            "file",
            &["path", "media_type", "source_uri"],
            args,
            name,
        )),
        "collect_http" => later_bytes(collect_request("http", &["url", "headers"], args, name)),
        "collections" => Call::Now(only(&args, &[], name).and_then(|()| node.collections())),
        "query" => Call::Now(
            only(
                &args,
                &["collections", "text", "where", "limit", "consistency"],
                name,
            )
            .and_then(|()| node.query(&QueryRequest::from_json(&args))),
        ),
        "read_record" => Call::Now(
            only(&args, &["record_id"], name)
                .and_then(|()| string_arg(&args, "record_id", Code::InvalidInput))
                .and_then(|id| node.read_record(&id.unwrap_or_default()))
                .map(|r| r.to_wire()),
        ),
        "changes" => Call::Now((|| {
            only(&args, &["collection_id", "cursor", "limit"], name)?;
            let req = ChangesRequest {
                collection_id: string_arg(&args, "collection_id", Code::InvalidQuery)?,
                cursor: string_arg(&args, "cursor", Code::InvalidQuery)?,
                limit: changes_limit(&args)?,
            };
            node.changes(&req)
        })()),
        "tombstone" => {
            let req = (|| {
                only(&args, &["record_id", "reason"], name)?;
                Ok(TombstoneRequest {
                    record_id: string_arg(&args, "record_id", Code::InvalidInput)?
                        .unwrap_or_default(),
                    reason: string_arg(&args, "reason", Code::InvalidRequest)?,
                })
            })();
            let req = match req {
                Ok(r) => r,
                Err(e) => return Call::Now(Err(e)),
            };
            match node.tombstone_later(&req) {
                Ok(f) => Call::Later(Box::pin(f)),
                Err(e) => Call::Now(Err(e)),
            }
        }
        _ => Call::Refused(mcp_wire::INVALID_PARAMS, "unknown tool".into()),
    }
}

/// Mounts the data MCP route: the `Origin` check and the node bearer on
/// the head (no body byte is read before both pass), then one message.
pub fn mount(
    router: &mut Router,
    node: Arc<Node>,
    token: Option<String>,
    hosts: Arc<super::hosts::HostAllowList>,
) {
    let digest: Option<[u8; 32]> = token.map(|t| Sha256::digest(t.as_bytes()).into());
    let max = node.limits().max_body_bytes;
    let tools = Arc::new(tools());
    router.route_deferred(
        Method::Post,
        PATH,
        RouteSpec::new(Access::Guarded)
            .authorize(Arc::new(move |req: &Request<'_>| {
                mcp_wire::check_origin(&hosts, req)?;
                super::shared::check_bearer(digest.as_ref(), req)
            }))
            .body(BodySpec::json(max)),
        Arc::new(move |req: &mut Request<'_>| -> Result<Reply> {
            let n = node.clone();
            mcp_wire::answer(req, max, SPEC, &tools, move |name, args| {
                call(&n, name, args)
            })
        }),
    );
    mcp_wire::refuse_other_methods(router, PATH);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tools_are_sorted_and_their_schemas_name_what_the_calls_accept() {
        let tools = tools();
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted);
        for t in &tools {
            let s = &t.input_schema;
            assert_eq!(s["additionalProperties"], false, "{}", t.name);
            for r in s["required"].as_array().expect("required") {
                let r = r.as_str().expect("name");
                assert!(s["properties"].get(r).is_some(), "{}: {r}", t.name);
            }
        }
        // Every schema property of a collect tool is accepted, an extra
        // one refused.
        for (tool, collector, own) in [
            (
                "collect_text",
                "text",
                &["text", "media_type", "source_uri"][..],
            ),
            (
                "collect_file",
                "file",
                &["path", "media_type", "source_uri"][..],
            ),
            ("collect_http", "http", &["url", "headers"][..]),
        ] {
            let t = tools.iter().find(|t| t.name == tool).expect("tool");
            let props = t.input_schema["properties"].as_object().expect("props");
            let args: Map<String, Value> = props.keys().map(|k| (k.clone(), json!("x"))).collect();
            let req = collect_request(collector, own, args.clone(), tool).expect("accepted");
            assert_eq!(req.collection_id, Some(json!("x")));
            assert_eq!(req.collector_id, Some(json!(collector)));
            assert!(req.input.expect("input").get("collection_id").is_none());
            let mut extra = args;
            extra.insert("nope".into(), json!(1));
            let e = collect_request(collector, own, extra, tool).expect_err("refused");
            assert_eq!(e.code(), Code::InvalidInput);
        }
    }

    #[test]
    fn changes_limits_follow_the_http_route() {
        let lim = |v: Value| changes_limit(&Map::from_iter([("limit".to_owned(), v)]));
        assert_eq!(lim(json!(5)).expect("ok"), Some(5));
        for bad in [
            json!(0),
            json!(-1),
            json!(1.5),
            json!("5"),
            json!(9_007_199_254_740_992u64),
        ] {
            assert_eq!(
                lim(bad.clone()).expect_err("bad").code(),
                Code::InvalidQuery,
                "{bad}"
            );
        }
    }
}
