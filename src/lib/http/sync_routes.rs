//! The agent-data-sync/v1 routes (spec/agent-data-sync-facts.md §12.1):
//! `POST /v1/data/sync/page` behind a page bearer, `POST
//! /v1/data/sync/pull` and `GET /v1/data/sync/status` behind the node
//! bearer (the `/v1/data/` guard of [`super::data_routes`]). Behaviour
//! lives in [`crate::sync::service`].

use super::router::{Access, BodySpec, Guard, Method, Request, Response, RouteSpec, Router};
use crate::data::Node;
use crate::error::{Code, Error, Result};
use crate::sync::service;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// Page and pull request bodies are at most this long.
const MAX_BODY: u64 = 1_048_576;

/// Mounts the sync routes. `node_bearer` is `serve`'s node bearer (never
/// accepted on the page path).
pub fn mount(router: &mut Router, node: Arc<Node>, node_bearer: Option<&str>) {
    let digest: Option<[u8; 32]> = node_bearer.map(|t| Sha256::digest(t.as_bytes()).into());
    let n = node.clone();
    let page_auth: Guard = Arc::new(move |req: &Request<'_>| {
        service::page_authority(&n, req.header("authorization"), digest.as_ref()).map(|_| ())
    });
    let n = node.clone();
    router.route_with(
        Method::Post,
        "/v1/data/sync/page",
        RouteSpec::new(Access::Public)
            .authorize(page_auth.clone())
            .body(BodySpec::json(MAX_BODY)),
        Arc::new(move |req: &mut Request<'_>| {
            let a = service::page_authority(&n, req.header("authorization"), digest.as_ref())?;
            let body = json_object(req)?;
            // A page has only strings, booleans and integers: plain JSON
            // (member order is free on the wire), without re-sorting the
            // whole page as canonical JSON.
            let bytes = service::page(&n, &a, &body)?;
            Ok(Response {
                status: 200,
                headers: Vec::new(),
                body: bytes,
                content_type: "application/json; charset=utf-8",
            })
        }),
    );
    // A wrong method on the page path is 405, but only after page auth.
    for m in [Method::Get, Method::Other] {
        router.route_with(
            m,
            "/v1/data/sync/page",
            RouteSpec::new(Access::Public).authorize(page_auth.clone()),
            Arc::new(|_req: &mut Request<'_>| {
                Err(Error::new(
                    Code::MethodNotAllowed,
                    "Method is not allowed for this endpoint",
                ))
            }),
        );
    }
    let n = node.clone();
    router.route_with(
        Method::Post,
        "/v1/data/sync/pull",
        RouteSpec::new(Access::Guarded).body(BodySpec::json(MAX_BODY)),
        Arc::new(move |req: &mut Request<'_>| {
            let body = json_object(req)?;
            Ok(Response::json(200, &service::pull(&n, &body)?))
        }),
    );
    let n = node;
    router.route(
        Method::Get,
        "/v1/data/sync/status",
        Access::Guarded,
        Arc::new(move |req: &mut Request<'_>| {
            let pairs = query_pairs(req.query.as_deref().unwrap_or(""));
            Ok(Response::json(200, &service::status(&n, &pairs)?))
        }),
    );
}

/// The body as one JSON object, decoded strictly (`docs/wire.md`,
/// "Strict JSON"): malformed JSON, invalid UTF-8, a duplicate key at any
/// depth or nesting past 64 levels is `invalid_json` with
/// `details.reason`, like a body that is not an object.
fn json_object(req: &mut Request<'_>) -> Result<Map<String, Value>> {
    use crate::wire::json::{Limits, Refusal, from_slice, refusal_error};
    let bytes = super::router::read_json_bytes(req, MAX_BODY)?;
    match from_slice::<Value>(&bytes, Limits::bytes(MAX_BODY as usize)) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(Error::new(
            Code::InvalidJson,
            "Request body must be a JSON object",
        )),
        Err(r @ Refusal::Invalid(_)) => Err(Error::new(
            Code::InvalidJson,
            "Request body must contain valid UTF-8 JSON",
        )
        .with("reason", r.reason())),
        Err(r) => Err(refusal_error(&r, Code::InvalidJson, "request body")),
    }
}

/// `URLSearchParams` pairs: `+` is a space, bad escapes stay literal,
/// invalid UTF-8 becomes U+FFFD; an empty query has no pairs.
fn query_pairs(q: &str) -> Vec<(String, String)> {
    let dec = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (dec(k), dec(v))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pairs() {
        assert!(query_pairs("").is_empty());
        assert_eq!(
            query_pairs("peer_id=a+b&collection_id=c%3Ad"),
            vec![
                ("peer_id".into(), "a b".into()),
                ("collection_id".into(), "c:d".into())
            ]
        );
        assert_eq!(query_pairs("x"), vec![("x".into(), "".into())]);
    }
}
