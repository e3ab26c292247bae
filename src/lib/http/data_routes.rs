//! The `agent-data/v1` routes (spec/agent-data-facts.md §12): discovery
//! manifests, collections, collect, query, exact reads, changes and
//! tombstones, behind the dedicated node bearer.

use super::router::{
    Access, BodySpec, Method, Reply, Request, Response, RouteSpec, Router, percent_decode,
    read_json_bytes,
};
use super::shared::check_bearer;
use crate::data::{ChangesRequest, CollectRequest, Node, QueryRequest, TombstoneRequest};
use crate::error::{Code, Error, Result};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Mounts the data routes and the `/v1/data/` bearer guard.
pub fn mount(router: &mut Router, node: Arc<Node>, token: Option<String>) {
    let token_digest: Option<[u8; 32]> = token.map(|t| Sha256::digest(t.as_bytes()).into());
    // Every POST route declares its body so the server reads none of it
    // before the bearer guard and the media/length checks pass.
    let max_body = node.limits().max_body_bytes;
    let json_body = || RouteSpec::new(Access::Guarded).body(BodySpec::json(max_body));
    router.guard(
        "/v1/data/",
        Arc::new(move |req: &Request<'_>| check_bearer(token_digest.as_ref(), req)),
    );
    for path in ["/.well-known/agent-data", "/v1/data/manifest"] {
        let n = node.clone();
        router.route(
            Method::Get,
            path,
            Access::Public,
            Arc::new(move |req: &mut Request<'_>| {
                let mut m = n.manifest(Some(&req.origin));
                crate::sync::service::decorate_manifest(&n, &mut m, Some(&req.origin));
                Ok(Response::json(200, &m))
            }),
        );
    }
    let n = node.clone();
    router.route(
        Method::Get,
        "/v1/data/collections",
        Access::Guarded,
        Arc::new(move |_req: &mut Request<'_>| Ok(Response::json(200, &n.collections()?))),
    );
    // Collect and tombstone answer from the writer: the handler thread
    // validates, runs the collector and stores the bytes, queues the write
    // and returns; the server awaits the batch's answer on its runtime.
    let n = node.clone();
    router.route_deferred(
        Method::Post,
        "/v1/data/collect",
        json_body(),
        Arc::new(move |req: &mut Request<'_>| {
            let body = read_json_body(req, n.limits().max_body_bytes)?;
            // The canonical JSON of the response, written from the
            // envelopes' canonical text (the bytes `Response::json` would
            // render from the response's JSON tree).
            let later = n.collect_later(&CollectRequest::from_json(&body))?;
            Ok(Reply::later(async move {
                Ok(Response::json_bytes(200, later.await?))
            }))
        }),
    );
    let n = node.clone();
    router.route_with(
        Method::Post,
        "/v1/data/query",
        json_body(),
        Arc::new(move |req: &mut Request<'_>| {
            let body = read_json_body(req, n.limits().max_body_bytes)?;
            Ok(Response::json(
                200,
                &n.query(&QueryRequest::from_json(&body))?,
            ))
        }),
    );
    let n = node.clone();
    router.route(
        Method::Get,
        "/v1/data/records/{id}",
        Access::Guarded,
        Arc::new(move |req: &mut Request<'_>| {
            let id = percent_decode(req.params.first().map_or("", String::as_str))?;
            Ok(Response::json(200, &n.read_record(&id)?.to_wire()))
        }),
    );
    let n = node.clone();
    router.route(
        Method::Get,
        "/v1/data/changes",
        Access::Guarded,
        Arc::new(move |req: &mut Request<'_>| {
            let limit = match req.query_param("limit")? {
                None => None,
                Some(l) => Some(parse_limit(&l)?),
            };
            let r = ChangesRequest {
                collection_id: req.query_param("collection_id")?,
                cursor: req.query_param("cursor")?,
                limit,
            };
            Ok(Response::json(200, &n.changes(&r)?))
        }),
    );
    let n = node;
    router.route_deferred(
        Method::Post,
        "/v1/data/records/{id}/tombstone",
        json_body(),
        Arc::new(move |req: &mut Request<'_>| {
            let body = read_json_body(req, n.limits().max_body_bytes)?;
            let reason = match body.get("reason") {
                None => None,
                Some(Value::String(s)) => Some(s.clone()),
                Some(_) => {
                    return Err(Error::new(Code::InvalidRequest, "reason must be a string"));
                }
            };
            let id = percent_decode(req.params.first().map_or("", String::as_str))?;
            let later = n.tombstone_later(&TombstoneRequest {
                record_id: id,
                reason,
            })?;
            Ok(Reply::later(async move {
                Ok(Response::json(200, &later.await?))
            }))
        }),
    );
}

/// `^\d+$` and a positive safe integer, else `invalid_query`.
fn parse_limit(s: &str) -> Result<u64> {
    let bad = || Error::new(Code::InvalidQuery, "limit must be a positive integer");
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match s.parse::<u64>() {
        Ok(n) if (1..=9_007_199_254_740_991).contains(&n) => Ok(n),
        _ => Err(bad()),
    }
}

/// Reads a JSON object body: media type, declared and streamed size, UTF-8
/// JSON, object.
pub fn read_json_body(req: &mut Request<'_>, max: u64) -> Result<Map<String, Value>> {
    let bytes = read_json_bytes(req, max)?;
    let invalid = || {
        Error::new(
            Code::InvalidJson,
            "Request body must contain valid UTF-8 JSON",
        )
    };
    let text = std::str::from_utf8(&bytes).map_err(|_| invalid())?;
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::new(
            Code::InvalidJson,
            "Request body must be a JSON object",
        )),
        Err(_) => Err(invalid()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits() {
        assert_eq!(parse_limit("5").expect("ok"), 5);
        for bad in ["0", "abc", "+5", "-1", "", "9007199254740992", "1.5"] {
            assert!(parse_limit(bad).is_err(), "{bad}");
        }
    }
}
