//! A small in-test agent-data/v1 node on the test origin, written from the facts
//! sheet (§12, §13, §9–§11), with just enough behaviour for the doctor's
//! three profiles. `Faults` switch on specific deviations so that tests can
//! show the runner catches them.

use crate::common::origin::{Exchange as Request, Origin, Reply};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};

type Header = (String, String);

/// Deliberate deviations from the reference behaviour.
#[derive(Debug, Clone, Copy, Default)]
pub struct Faults {
    /// 401 without a `WWW-Authenticate` header.
    pub no_challenge: bool,
    /// POST routes parse the body before the auth check.
    pub parse_before_auth: bool,
    /// Manifest endpoints are relative paths.
    pub relative_endpoints: bool,
    /// The manifest lists the collections.
    pub expose_collections: bool,
    /// Query limits above the maximum are clamped instead of refused.
    pub clamp_limits: bool,
    /// `/v1/data/manifest` redirects to the well-known path.
    pub redirect_manifest: bool,
    /// A re-collect returns a fresh envelope (new metadata) instead of the first.
    pub recollect_replaces: bool,
    /// A tombstone reason over 1000 characters is accepted.
    pub unbounded_reason: bool,
    /// Serve every response as text/plain.
    pub text_plain_responses: bool,
    /// `/v1/data/manifest` advertises a different max_query_limit.
    pub versioned_differs: bool,
    /// `/v1/data/*` requests stall for 8 s before the answer (far past any
    /// client timeout the tests use, so a loaded machine cannot blur it).
    pub stall_data_routes: bool,
}

/// Fake node configuration.
#[derive(Debug, Clone)]
pub struct FakeConfig {
    /// The node bearer; `None` answers 503 `data_auth_not_configured`.
    pub token: Option<String>,
    /// The node id.
    pub node_id: String,
    /// Deviations.
    pub faults: Faults,
}

impl FakeConfig {
    pub fn conforming(token: &str) -> FakeConfig {
        FakeConfig {
            token: Some(token.to_owned()),
            node_id: "node_fake-1".into(),
            faults: Faults::default(),
        }
    }
}

#[derive(Default)]
struct Record {
    envelope: Value,
    text: String,
    tombstone_response: Option<Value>,
}

#[derive(Default)]
struct State {
    records: Vec<Record>,
    events: Vec<Value>,
    clock: u64,
}

/// A running fake node; stops when dropped.
pub struct FakeNode {
    _server: Origin,
    state: Arc<Mutex<State>>,
    pub origin: String,
}

const MAX_QUERY: u64 = 100;
const MAX_CHANGE: u64 = 1000;
const COLLECTIONS: &[&str] = &["default", "scratch"];

impl FakeNode {
    pub fn start(cfg: FakeConfig) -> FakeNode {
        let mut server = Origin::start();
        let origin = server.url();
        let state = Arc::new(Mutex::new(State::default()));
        let (requests, st2) = (server.requests(), state.clone());
        std::thread::spawn(move || {
            for rq in requests {
                handle(rq, &cfg, &st2);
            }
        });
        FakeNode {
            _server: server,
            state,
            origin,
        }
    }

    /// (events, active records) in the scratch collection.
    pub fn scratch_counts(&self) -> (usize, usize) {
        let st = self.state.lock().expect("lock");
        let events = st
            .events
            .iter()
            .filter(|e| e["collection_id"] == "scratch")
            .count();
        let active = st
            .records
            .iter()
            .filter(|r| r.envelope["collection_id"] == "scratch" && r.tombstone_response.is_none())
            .count();
        (events, active)
    }
}

fn hdr(k: &str, v: &str) -> Header {
    (k.to_owned(), v.to_owned())
}

fn reply(rq: Request, status: u16, body: Value, cfg: &FakeConfig, extra: Vec<Header>) {
    let ct = if cfg.faults.text_plain_responses {
        "text/plain"
    } else {
        "application/json; charset=utf-8"
    };
    let mut resp = Reply::new(status, body.to_string())
        .header("Content-Type", ct)
        .header("Cache-Control", "no-store");
    for (k, v) in extra {
        resp = resp.header(&k, &v);
    }
    rq.respond(resp);
}

fn err(code: &str, msg: &str) -> Value {
    json!({"error": code, "message": msg})
}

fn now(st: &mut State) -> String {
    st.clock += 1;
    format!(
        "2026-12-01T00:00:{:02}.{:03}Z",
        (st.clock / 1000) % 60,
        st.clock % 1000
    )
}

fn manifest(origin: &str, cfg: &FakeConfig) -> Value {
    let ep = |p: &str| {
        if cfg.faults.relative_endpoints {
            p.to_owned()
        } else {
            format!("{origin}{p}")
        }
    };
    let mut m = json!({
        "protocol": "agent-data/v1",
        "node_id": cfg.node_id,
        "generated_at": "2026-12-01T00:00:00.000Z",
        "base_url": origin,
        "capabilities": {
            "consistency": ["local"], "immutable_records": true, "content_addressed_blobs": true,
            "full_text_search": true, "opaque_change_cursors": true, "tombstones": true,
            "peer_sync": false, "signature_verification": false, "schema_validation": false,
            "http_data_auth": "dedicated_node_bearer",
            "policy_enforcement": {"max_record_bytes": true, "allowed_media_types": true,
                "visibility": false, "ttl": false, "allowed_dids": false, "retention": false}
        },
        "collectors": [
            {"collector_id": "text", "description": "Collect caller-supplied UTF-8 text",
             "input_schema": {"type": "object", "required": ["text"],
                "properties": {"text": {"type": "string"}}}}
        ],
        "endpoints": {
            "manifest": ep("/v1/data/manifest"), "collections": ep("/v1/data/collections"),
            "collect": ep("/v1/data/collect"), "query": ep("/v1/data/query"),
            "record": ep("/v1/data/records/{id}"), "changes": ep("/v1/data/changes"),
            "tombstone": ep("/v1/data/records/{id}/tombstone")
        },
        "limits": {"max_body_bytes": 1048576, "max_record_bytes": 10485760,
            "max_query_limit": MAX_QUERY, "max_change_limit": MAX_CHANGE, "max_collect_items": 100,
            "default_query_limit": 20, "default_change_limit": 100}
    });
    if cfg.faults.expose_collections {
        m["collections"] = json!(COLLECTIONS);
    }
    m
}

fn split_query(url: &str) -> (String, Vec<(String, String)>) {
    let (path, q) = url.split_once('?').unwrap_or((url, ""));
    let params = q
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k), decode(v))
        })
        .collect();
    (path.to_owned(), params)
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

fn read_json(rq: &mut Request) -> Result<Map<String, Value>, (u16, Value)> {
    let ct = rq.header("Content-Type").unwrap_or_default().to_owned();
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    if essence != "application/json" {
        return Err((
            415,
            err(
                "unsupported_media_type",
                "Content-Type must be application/json",
            ),
        ));
    }
    let Ok(body) = String::from_utf8(rq.body.clone()) else {
        return Err((
            400,
            err("invalid_json", "Request body must contain valid UTF-8 JSON"),
        ));
    };
    match serde_json::from_str::<Value>(&body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err((
            400,
            err("invalid_json", "Request body must be a JSON object"),
        )),
        Err(_) => Err((
            400,
            err("invalid_json", "Request body must contain valid UTF-8 JSON"),
        )),
    }
}

fn cursor_encode(filter: &str, seq: u64) -> String {
    data_encoding::BASE64URL_NOPAD.encode(format!("v1|{filter}|{seq}").as_bytes())
}

fn cursor_decode(c: &str, filter: &str) -> Option<u64> {
    if c.is_empty() {
        return Some(0);
    }
    let raw = data_encoding::BASE64URL_NOPAD.decode(c.as_bytes()).ok()?;
    let s = String::from_utf8(raw).ok()?;
    let mut parts = s.splitn(3, '|');
    if parts.next()? != "v1" || parts.next()? != filter {
        return None;
    }
    parts.next()?.parse().ok()
}

fn is_record_id(s: &str) -> bool {
    s.len() == 68
        && s.starts_with("rec_")
        && s[4..]
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn handle(mut rq: Request, cfg: &FakeConfig, state: &Mutex<State>) {
    let host = rq.header("Host").unwrap_or_default().to_owned();
    let origin = format!("http://{host}");
    let (path, params) = split_query(&rq.url.clone());
    let method = rq.method.clone();
    let get = method == "GET";

    if path == "/.well-known/agent-data" && get {
        return reply(rq, 200, manifest(&origin, cfg), cfg, vec![]);
    }
    if path == "/v1/data/manifest" && get {
        if cfg.faults.redirect_manifest {
            rq.respond(Reply::new(302, "").header("Location", "/.well-known/agent-data"));
            return;
        }
        let mut m = manifest(&origin, cfg);
        if cfg.faults.versioned_differs {
            m["limits"]["max_query_limit"] = json!(MAX_QUERY - 1);
        }
        return reply(rq, 200, m, cfg, vec![]);
    }
    if !path.starts_with("/v1/data/") {
        return reply(
            rq,
            404,
            err("not_found", "Endpoint was not found"),
            cfg,
            vec![],
        );
    }
    if cfg.faults.stall_data_routes {
        std::thread::sleep(std::time::Duration::from_millis(8000));
    }
    if cfg.faults.parse_before_auth
        && method == "POST"
        && let Err((s, b)) = read_json(&mut rq)
    {
        return reply(rq, s, b, cfg, vec![]);
    }
    let Some(token) = &cfg.token else {
        return reply(
            rq,
            503,
            err(
                "data_auth_not_configured",
                "HTTP data access is disabled until a dedicated node bearer is configured",
            ),
            cfg,
            vec![],
        );
    };
    let authz = rq.header("Authorization").map(str::to_owned);
    if authz.as_deref() != Some(&format!("Bearer {token}")) {
        let extra = if cfg.faults.no_challenge {
            vec![]
        } else {
            vec![hdr("WWW-Authenticate", "Bearer realm=\"agent-data-node\"")]
        };
        return reply(
            rq,
            401,
            err("unauthorized", "A valid node bearer is required"),
            cfg,
            extra,
        );
    }
    let segs: Vec<&str> = path.trim_start_matches("/v1/data/").split('/').collect();
    let post = method == "POST";
    let (status, body) = match (segs.as_slice(), get, post) {
        (["collections"], true, _) => (200, collections()),
        (["collect"], _, true) => match read_json(&mut rq) {
            Err(e) => e,
            Ok(b) => collect(&b, cfg, &mut state.lock().expect("lock")),
        },
        (["query"], _, true) => match read_json(&mut rq) {
            Err(e) => e,
            Ok(b) => query(&b, cfg, &state.lock().expect("lock")),
        },
        (["changes"], true, _) => changes(&params, &state.lock().expect("lock")),
        (["records", id], true, _) => read_record(&decode(id), &state.lock().expect("lock")),
        (["records", id, "tombstone"], _, true) => match read_json(&mut rq) {
            Err(e) => e,
            Ok(b) => tombstone(&decode(id), &b, cfg, &mut state.lock().expect("lock")),
        },
        (["collections"] | ["collect"] | ["query"] | ["changes"], _, _)
        | (["records", _], _, _)
        | (["records", _, "tombstone"], _, _) => {
            (405, err("method_not_allowed", "Method not allowed"))
        }
        _ => (404, err("not_found", "Endpoint was not found")),
    };
    reply(rq, status, body, cfg, vec![])
}

fn collections() -> Value {
    let cs: Vec<Value> = COLLECTIONS
        .iter()
        .map(|id| {
            json!({"protocol": "agent-data/v1", "id": id, "schema": {"version": "1"},
                "policy": {"allowed_media_types": ["text/plain", "application/json"],
                    "max_record_bytes": 65536},
                "created_at": "2026-12-01T00:00:00.000Z"})
        })
        .collect();
    json!({ "collections": cs })
}

fn sha_hex(b: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(b))
}

fn collect(b: &Map<String, Value>, cfg: &FakeConfig, st: &mut State) -> (u16, Value) {
    let Some(col) = b.get("collection_id").and_then(Value::as_str) else {
        return (
            400,
            err("invalid_collection_id", "collection_id is required"),
        );
    };
    if !COLLECTIONS.contains(&col) {
        return (404, err("collection_not_found", "Collection was not found"));
    }
    if b.get("collector_id").and_then(Value::as_str) != Some("text") {
        return (404, err("collector_not_found", "Collector was not found"));
    }
    let input = b.get("input").cloned().unwrap_or(json!({}));
    let Some(text) = input
        .get("text")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
    else {
        return (400, err("invalid_input", "text must be a non-empty string"));
    };
    let sha = sha_hex(text.as_bytes());
    let uri = input
        .get("source_uri")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("urn:agent-data:text:sha256:{sha}"));
    let identity = json!([
        col,
        "text",
        uri,
        input.get("external_id"),
        input.get("key"),
        input.get("version"),
        sha
    ]);
    let id = format!("rec_{}", sha_hex(identity.to_string().as_bytes()));
    if let Some(i) = st
        .records
        .iter()
        .position(|r| r.envelope["id"] == id.as_str())
    {
        if cfg.faults.recollect_replaces {
            let at = now(st);
            let rec = &mut st.records[i];
            rec.envelope["metadata"] = input.get("metadata").cloned().unwrap_or(json!({}));
            rec.envelope["ingested_at"] = json!(at);
        }
        return (
            200,
            json!({"records": [st.records[i].envelope.clone()], "inserted": 0, "existing": 1}),
        );
    }
    let mut env = json!({
        "protocol": "agent-data/v1", "id": id, "collection_id": col, "schema_version": "1",
        "source": {"collector_id": "text", "uri": uri},
        "content": {"sha256": sha, "size": text.len(), "media_type": "text/plain",
            "blob_ref": format!("sha256:{sha}")},
        "metadata": input.get("metadata").cloned().unwrap_or(json!({})),
        "ingested_at": now(st),
    });
    for k in ["external_id"] {
        if let Some(v) = input.get(k) {
            env["source"][k] = v.clone();
        }
    }
    for k in ["key", "version"] {
        if let Some(v) = input.get(k) {
            env[k] = v.clone();
        }
    }
    let seq = st.events.len() as u64 + 1;
    let at = now(st);
    st.events.push(
        json!({"id": format!("change_{seq}"), "type": "record.created",
        "sequence": seq, "collection_id": col, "record_id": id, "occurred_at": at,
        "record": env}),
    );
    st.records.push(Record {
        envelope: env.clone(),
        text: text.to_owned(),
        tombstone_response: None,
    });
    (200, json!({"records": [env], "inserted": 1, "existing": 0}))
}

fn query(b: &Map<String, Value>, cfg: &FakeConfig, st: &State) -> (u16, Value) {
    let mut limit = 20;
    if let Some(l) = b.get("limit").filter(|l| !l.is_null()) {
        match l.as_u64().filter(|n| *n >= 1) {
            None => {
                return (
                    400,
                    err("invalid_number", "limit must be a positive integer"),
                );
            }
            Some(n) if n > MAX_QUERY && !cfg.faults.clamp_limits => {
                return (400, err("limit_exceeded", "limit exceeds max_query_limit"));
            }
            Some(n) => limit = n.min(MAX_QUERY),
        }
    }
    if let Some(c) = b.get("consistency")
        && c.as_str() != Some("local")
    {
        return (
            400,
            err(
                "unsupported_consistency",
                "Only local consistency is supported",
            ),
        );
    }
    let cols: Vec<&str> = match b.get("collections") {
        None => COLLECTIONS.to_vec(),
        Some(Value::Array(a)) => a.iter().filter_map(Value::as_str).collect(),
        Some(_) => return (400, err("invalid_request", "collections must be an array")),
    };
    let wanted_id = b.get("where").and_then(|w| w.get("id"));
    let hits: Vec<Value> = st
        .records
        .iter()
        .rev()
        .filter(|r| r.tombstone_response.is_none())
        .filter(|r| cols.iter().any(|c| r.envelope["collection_id"] == *c))
        .filter(|r| wanted_id.is_none_or(|id| r.envelope.get("id") == Some(id)))
        .take(limit as usize)
        .map(|r| json!({"record": r.envelope, "score": 0}))
        .collect();
    (200, json!({"records": hits, "consistency": "local"}))
}

fn changes(params: &[(String, String)], st: &State) -> (u16, Value) {
    let p = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let limit = match p("limit") {
        None => 100,
        Some(l) => match l
            .parse::<u64>()
            .ok()
            .filter(|n| *n >= 1 && !l.starts_with('0'))
        {
            None => {
                return (
                    400,
                    err("invalid_query", "limit must be a positive integer"),
                );
            }
            Some(n) if n > MAX_CHANGE => {
                return (400, err("limit_exceeded", "limit exceeds max_change_limit"));
            }
            Some(n) => n,
        },
    };
    let filter = p("collection_id").unwrap_or("*");
    if filter != "*" && !COLLECTIONS.contains(&filter) {
        return (404, err("collection_not_found", "Collection was not found"));
    }
    let Some(after) = cursor_decode(p("cursor").unwrap_or(""), filter) else {
        return (400, err("invalid_cursor", "Cursor is invalid"));
    };
    let matching: Vec<&Value> = st
        .events
        .iter()
        .filter(|e| e["sequence"].as_u64().unwrap_or(0) > after)
        .filter(|e| filter == "*" || e["collection_id"] == filter)
        .collect();
    let page: Vec<Value> = matching
        .iter()
        .take(limit as usize)
        .map(|e| (*e).clone())
        .collect();
    let last = page
        .last()
        .and_then(|e| e["sequence"].as_u64())
        .unwrap_or(after);
    (
        200,
        json!({"changes": page, "cursor": cursor_encode(filter, last),
            "has_more": matching.len() > page.len()}),
    )
}

fn read_record(id: &str, st: &State) -> (u16, Value) {
    if !is_record_id(id) {
        return (400, err("invalid_record_id", "Record id is invalid"));
    }
    match st.records.iter().find(|r| r.envelope["id"] == id) {
        None => (404, err("record_not_found", "Record was not found")),
        Some(r) if r.tombstone_response.is_some() => {
            (410, err("record_tombstoned", "Record was tombstoned"))
        }
        Some(r) => (
            200,
            json!({"record": r.envelope, "content": {"encoding": "utf8", "data": r.text}}),
        ),
    }
}

fn tombstone(id: &str, b: &Map<String, Value>, cfg: &FakeConfig, st: &mut State) -> (u16, Value) {
    let reason = match b.get("reason") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return (400, err("invalid_request", "reason must be a string")),
    };
    if !is_record_id(id) {
        return (400, err("invalid_record_id", "Record id is invalid"));
    }
    if reason.as_ref().is_some_and(|r| r.chars().count() > 1000) && !cfg.faults.unbounded_reason {
        return (
            400,
            err("invalid_request", "reason must be at most 1000 characters"),
        );
    }
    let Some(i) = st.records.iter().position(|r| r.envelope["id"] == id) else {
        return (404, err("record_not_found", "Record was not found"));
    };
    if let Some(first) = &st.records[i].tombstone_response {
        return (200, first.clone());
    }
    let col = st.records[i].envelope["collection_id"].clone();
    let at = now(st);
    let mut t = json!({"record_id": id, "collection_id": col, "tombstoned_at": at});
    if let Some(r) = reason.filter(|r| !r.is_empty()) {
        t["reason"] = json!(r);
    }
    let seq = st.events.len() as u64 + 1;
    st.events.push(
        json!({"id": format!("change_{seq}"), "type": "record.tombstoned",
        "sequence": seq, "collection_id": col, "record_id": id, "occurred_at": at,
        "tombstone": t}),
    );
    let resp = json!({"record_id": id, "tombstoned": true, "tombstone": t});
    st.records[i].tombstone_response = Some(resp.clone());
    (200, resp)
}
