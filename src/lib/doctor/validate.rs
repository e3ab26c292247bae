//! Pure validators for what a node returns (facts §15.3, §15.4).

use super::Outcome;
use serde_json::{Map, Value};

type Step<T = ()> = std::result::Result<T, Outcome>;

/// Largest integer a JSON number can carry exactly in JavaScript.
pub const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// The seven endpoint keys and their fixed paths.
pub const ENDPOINTS: &[(&str, &str)] = &[
    ("manifest", "/v1/data/manifest"),
    ("collections", "/v1/data/collections"),
    ("collect", "/v1/data/collect"),
    ("query", "/v1/data/query"),
    ("record", "/v1/data/records/{id}"),
    ("changes", "/v1/data/changes"),
    ("tombstone", "/v1/data/records/{id}/tombstone"),
];

/// The seven limit names.
pub const LIMITS: &[&str] = &[
    "max_body_bytes",
    "max_record_bytes",
    "max_query_limit",
    "max_change_limit",
    "max_collect_items",
    "default_query_limit",
    "default_change_limit",
];

/// A timestamp accepted by the reference rule (facts §1.2):
/// `YYYY-MM-DDTHH:MM:SS[.f{1,9}](Z|±HH:MM)`, calendar-checked, no leap second.
pub fn is_timestamp(s: &str) -> bool {
    // One implementation of the rule: the data node's own parser.
    crate::data::syntax::normalize_date("timestamp", s).is_ok()
}

/// A non-empty string without control characters.
pub fn is_clean_string(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::String(s)) if !s.is_empty() && !s.chars().any(char::is_control))
}

fn non_empty_str(v: Option<&Value>) -> bool {
    matches!(v, Some(Value::String(s)) if !s.is_empty())
}

/// A positive integer no larger than 2^53 - 1.
pub fn positive_safe_int(v: Option<&Value>) -> Option<u64> {
    v.and_then(Value::as_u64)
        .filter(|n| *n >= 1 && *n <= MAX_SAFE_INTEGER)
}

/// A normalised media type (`type/subtype`, lowercase token characters).
pub fn is_normalised_media_type(s: &str) -> bool {
    let tok = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"!#$&^_.+-".contains(&c))
    };
    match s.split_once('/') {
        Some((a, b)) => tok(a) && tok(b),
        None => false,
    }
}

/// Validates a manifest against the target origin (facts §15.3).
pub fn manifest(m: &Map<String, Value>, origin: &str) -> Step {
    let fail = Outcome::fail;
    if m.get("protocol").and_then(Value::as_str) != Some("agent-data/v1") {
        return Err(fail("manifest_protocol_mismatch"));
    }
    if !is_clean_string(m.get("node_id")) {
        return Err(fail("manifest_node_id_invalid"));
    }
    if !m
        .get("generated_at")
        .and_then(Value::as_str)
        .is_some_and(is_timestamp)
    {
        return Err(fail("manifest_generated_at_invalid"));
    }
    if let Some(b) = m.get("base_url")
        && b.as_str() != Some(origin)
    {
        return Err(fail("manifest_base_url_mismatch"));
    }
    let Some(endpoints) = m.get("endpoints").and_then(Value::as_object) else {
        return Err(fail("manifest_endpoint_missing"));
    };
    for (key, path) in ENDPOINTS {
        match endpoints.get(*key) {
            None => return Err(fail("manifest_endpoint_missing")),
            Some(v) if v.as_str() != Some(&format!("{origin}{path}")) => {
                return Err(fail("manifest_endpoint_mismatch"));
            }
            Some(_) => {}
        }
    }
    let Some(caps) = m.get("capabilities").and_then(Value::as_object) else {
        return Err(fail("manifest_capability_invalid"));
    };
    let consistency_ok = caps
        .get("consistency")
        .and_then(Value::as_array)
        .is_some_and(|a| {
            let mut seen = std::collections::HashSet::new();
            a.iter()
                .all(|v| non_empty_str(Some(v)) && seen.insert(v.as_str()))
                && a.iter().any(|v| v.as_str() == Some("local"))
        });
    if !consistency_ok {
        return Err(fail("manifest_consistency_invalid"));
    }
    for k in [
        "immutable_records",
        "content_addressed_blobs",
        "full_text_search",
        "opaque_change_cursors",
        "tombstones",
        "peer_sync",
        "signature_verification",
        "schema_validation",
    ] {
        if !caps.get(k).is_some_and(Value::is_boolean) {
            return Err(fail("manifest_capability_invalid"));
        }
    }
    for k in [
        "immutable_records",
        "content_addressed_blobs",
        "opaque_change_cursors",
        "tombstones",
    ] {
        if caps.get(k) != Some(&Value::Bool(true)) {
            return Err(fail("manifest_capability_invalid"));
        }
    }
    if caps.get("http_data_auth").and_then(Value::as_str) != Some("dedicated_node_bearer") {
        return Err(fail("manifest_capability_invalid"));
    }
    let pe_ok = caps
        .get("policy_enforcement")
        .and_then(Value::as_object)
        .is_some_and(|pe| {
            [
                "max_record_bytes",
                "allowed_media_types",
                "visibility",
                "ttl",
                "allowed_dids",
                "retention",
            ]
            .iter()
            .all(|k| pe.get(*k).is_some_and(Value::is_boolean))
        });
    if !pe_ok {
        return Err(fail("manifest_capability_invalid"));
    }
    let Some(collectors) = m.get("collectors").and_then(Value::as_array) else {
        return Err(fail("manifest_collectors_invalid"));
    };
    let mut ids = std::collections::HashSet::new();
    for c in collectors {
        let Some(c) = c.as_object() else {
            return Err(fail("manifest_collectors_invalid"));
        };
        let Some(id) = c
            .get("collector_id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
        else {
            return Err(fail("manifest_collectors_invalid"));
        };
        if id.chars().count() > 256 {
            return Err(Outcome::inconclusive("manifest_collector_id_too_long"));
        }
        if !non_empty_str(c.get("description")) {
            return Err(fail("manifest_collectors_invalid"));
        }
        if c.get("input_schema").is_some_and(|s| !s.is_object()) {
            return Err(fail("manifest_collectors_invalid"));
        }
        if !ids.insert(id.to_owned()) {
            return Err(fail("manifest_collectors_invalid"));
        }
    }
    let Some(limits) = m.get("limits").and_then(Value::as_object) else {
        return Err(fail("manifest_limits_invalid"));
    };
    for k in LIMITS {
        if positive_safe_int(limits.get(*k)).is_none() {
            return Err(fail("manifest_limits_invalid"));
        }
    }
    let lim = |k: &str| positive_safe_int(limits.get(k)).unwrap_or(0);
    if lim("default_query_limit") > lim("max_query_limit")
        || lim("default_change_limit") > lim("max_change_limit")
    {
        return Err(fail("manifest_limits_invalid"));
    }
    Ok(())
}

/// The projection compared by `discovery.manifest_equivalence`.
pub fn manifest_projection(m: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    for k in [
        "protocol",
        "node_id",
        "base_url",
        "endpoints",
        "capabilities",
        "collectors",
        "limits",
    ] {
        if let Some(v) = m.get(k) {
            out.insert(k.to_owned(), v.clone());
        }
    }
    if let Some(Value::Array(cs)) = out.get_mut("collectors") {
        cs.sort_by(|a, b| {
            let id = |v: &Value| {
                v.get("collector_id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            id(a).cmp(&id(b))
        });
    }
    if let Some(Value::Array(cons)) = out
        .get_mut("capabilities")
        .and_then(|c| c.get_mut("consistency"))
    {
        cons.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    Value::Object(out)
}

/// The first forbidden key (`collections` or `blob_ref`) found outside the
/// `endpoints`, `input_schema` and `json_schema` subtrees.
pub fn manifest_privacy(v: &Value) -> Option<&'static str> {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                match k.as_str() {
                    "collections" => return Some("manifest_exposes_collections"),
                    "blob_ref" => return Some("manifest_exposes_blob_ref"),
                    "endpoints" | "input_schema" | "json_schema" => continue,
                    _ => {}
                }
                if let Some(r) = manifest_privacy(child) {
                    return Some(r);
                }
            }
            None
        }
        Value::Array(a) => a.iter().find_map(manifest_privacy),
        _ => None,
    }
}

/// Validates a `GET /v1/data/collections` body; returns the collections.
pub fn collections(body: &Map<String, Value>) -> Step<Vec<Map<String, Value>>> {
    let fail = || Outcome::fail("collections_wrapper_invalid");
    let bad = || Outcome::fail("collection_invalid");
    let list = body
        .get("collections")
        .and_then(Value::as_array)
        .ok_or_else(fail)?;
    let mut ids = std::collections::HashSet::new();
    let mut out = Vec::with_capacity(list.len());
    for c in list {
        let c = c.as_object().ok_or_else(bad)?;
        if c.get("protocol").and_then(Value::as_str) != Some("agent-data/v1") {
            return Err(bad());
        }
        let id = c
            .get("id")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(bad)?;
        if id.chars().count() > 512 {
            return Err(Outcome::inconclusive("collection_id_too_long"));
        }
        for k in ["name", "description"] {
            if c.get(k).is_some() && !non_empty_str(c.get(k)) {
                return Err(bad());
            }
        }
        let schema_ok = c
            .get("schema")
            .and_then(Value::as_object)
            .is_some_and(|s| non_empty_str(s.get("version")));
        if !schema_ok {
            return Err(bad());
        }
        if c.get("json_schema").is_some_and(|s| !s.is_object()) {
            return Err(bad());
        }
        if let Some(p) = c.get("policy") {
            let p = p.as_object().ok_or_else(bad)?;
            if let Some(v) = p.get("visibility")
                && !matches!(v.as_str(), Some("private" | "public"))
            {
                return Err(bad());
            }
            if p.get("max_record_bytes").is_some()
                && positive_safe_int(p.get("max_record_bytes")).is_none()
            {
                return Err(bad());
            }
            if let Some(a) = p.get("allowed_media_types") {
                let ok = a.as_array().is_some_and(|a| {
                    a.iter()
                        .all(|t| t.as_str().is_some_and(is_normalised_media_type))
                });
                if !ok {
                    return Err(bad());
                }
            }
            if let Some(r) = p.get("retention_days")
                && !r.as_f64().is_some_and(|f| f.is_finite() && f > 0.0)
            {
                return Err(bad());
            }
            if p.get("ttl_seconds").is_some() && positive_safe_int(p.get("ttl_seconds")).is_none() {
                return Err(bad());
            }
            if let Some(d) = p.get("allowed_dids") {
                let ok = d.as_array().is_some_and(|a| {
                    a.iter()
                        .all(|t| t.as_str().is_some_and(|s| s.starts_with("did:")))
                });
                if !ok {
                    return Err(bad());
                }
            }
        }
        if !c
            .get("created_at")
            .and_then(Value::as_str)
            .is_some_and(is_timestamp)
        {
            return Err(bad());
        }
        if !ids.insert(id.to_owned()) {
            return Err(bad());
        }
        out.push(c.clone());
    }
    Ok(out)
}

/// A validated change page.
#[derive(Debug, Clone)]
pub struct ChangePage {
    /// The events.
    pub changes: Vec<Map<String, Value>>,
    /// The cursor after this page.
    pub cursor: String,
    /// Whether more events follow.
    pub has_more: bool,
}

/// Validates one change page (facts §15.4 D1).
pub fn change_page(body: &Map<String, Value>, limit: u64) -> Step<ChangePage> {
    let bad = || Outcome::fail("change_page_invalid");
    let changes = body
        .get("changes")
        .and_then(Value::as_array)
        .ok_or_else(bad)?;
    if changes.len() as u64 > limit {
        return Err(bad());
    }
    if !is_clean_string(body.get("cursor")) {
        return Err(bad());
    }
    let has_more = body
        .get("has_more")
        .and_then(Value::as_bool)
        .ok_or_else(bad)?;
    let mut out = Vec::with_capacity(changes.len());
    for e in changes {
        let e = e.as_object().ok_or_else(bad)?;
        let ok = non_empty_str(e.get("id"))
            && matches!(
                e.get("type").and_then(Value::as_str),
                Some("record.created" | "record.tombstoned")
            )
            && positive_safe_int(e.get("sequence")).is_some()
            && non_empty_str(e.get("collection_id"))
            && non_empty_str(e.get("record_id"))
            && e.get("occurred_at")
                .and_then(Value::as_str)
                .is_some_and(is_timestamp);
        if !ok {
            return Err(bad());
        }
        out.push(e.clone());
    }
    Ok(ChangePage {
        changes: out,
        cursor: body
            .get("cursor")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        has_more,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn timestamps_follow_the_reference_rule() {
        for ok in [
            "2026-07-11T09:00:00.000Z",
            "2026-07-11T09:00:00Z",
            "2026-07-11T10:00:00+01:00",
            "2024-02-29T23:59:59.123456789-23:59",
        ] {
            assert!(is_timestamp(ok), "{ok}");
        }
        for bad in [
            "2026-07-11t09:00:00Z",
            "2026-07-11T09:00:00z",
            "2026-07-11T09:00:00",
            "2026-07-11 09:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-00-01T00:00:00Z",
            "2026-01-00T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:60:00Z",
            "2026-01-01T00:00:60Z",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00.1234567890Z",
            "2026-01-01T00:00:00+24:00",
            "2026-01-01T00:00:00+01:60",
            "2026-01-01T00:00:00+0100",
            "",
        ] {
            assert!(!is_timestamp(bad), "{bad}");
        }
    }

    pub(crate) fn good_manifest(origin: &str) -> Map<String, Value> {
        let ep: Map<String, Value> = ENDPOINTS
            .iter()
            .map(|(k, p)| ((*k).to_owned(), Value::String(format!("{origin}{p}"))))
            .collect();
        json!({
            "protocol": "agent-data/v1", "node_id": "node_x",
            "generated_at": "2026-12-01T00:00:00.000Z", "base_url": origin,
            "capabilities": {"consistency": ["local"], "immutable_records": true,
                "content_addressed_blobs": true, "full_text_search": true,
                "opaque_change_cursors": true, "tombstones": true, "peer_sync": false,
                "signature_verification": false, "schema_validation": false,
                "http_data_auth": "dedicated_node_bearer",
                "policy_enforcement": {"max_record_bytes": true, "allowed_media_types": true,
                    "visibility": false, "ttl": false, "allowed_dids": false, "retention": false}},
            "collectors": [{"collector_id": "text", "description": "d",
                "input_schema": {"type": "object", "properties": {"collections": {}}}}],
            "endpoints": ep,
            "limits": {"max_body_bytes": 1048576, "max_record_bytes": 10485760,
                "max_query_limit": 100, "max_change_limit": 1000, "max_collect_items": 100,
                "default_query_limit": 20, "default_change_limit": 100}
        })
        .as_object()
        .cloned()
        .expect("object")
    }

    fn reason(r: Step) -> String {
        r.expect_err("fails").reason.unwrap_or_default()
    }

    #[test]
    fn manifest_rules() {
        let o = "http://127.0.0.1:7742";
        let m = good_manifest(o);
        assert!(manifest(&m, o).is_ok());
        let with = |k: &str, v: Value| {
            let mut m = good_manifest(o);
            m.insert(k.to_owned(), v);
            m
        };
        assert_eq!(
            reason(manifest(&with("protocol", json!("x")), o)),
            "manifest_protocol_mismatch"
        );
        assert_eq!(
            reason(manifest(&with("node_id", json!("a\nb")), o)),
            "manifest_node_id_invalid"
        );
        assert_eq!(
            reason(manifest(&with("generated_at", json!("yesterday")), o)),
            "manifest_generated_at_invalid"
        );
        assert_eq!(
            reason(manifest(&with("base_url", json!("http://other")), o)),
            "manifest_base_url_mismatch"
        );
        let mut no_base = good_manifest(o);
        no_base.remove("base_url");
        assert!(manifest(&no_base, o).is_ok());
        let mut rel = good_manifest(o);
        rel["endpoints"]["query"] = json!("/v1/data/query");
        assert_eq!(reason(manifest(&rel, o)), "manifest_endpoint_mismatch");
        let mut missing = good_manifest(o);
        missing["endpoints"]
            .as_object_mut()
            .expect("obj")
            .remove("changes");
        assert_eq!(reason(manifest(&missing, o)), "manifest_endpoint_missing");
        let mut cons = good_manifest(o);
        cons["capabilities"]["consistency"] = json!(["local", "local"]);
        assert_eq!(reason(manifest(&cons, o)), "manifest_consistency_invalid");
        let mut cap = good_manifest(o);
        cap["capabilities"]["tombstones"] = json!(false);
        assert_eq!(reason(manifest(&cap, o)), "manifest_capability_invalid");
        let mut lim = good_manifest(o);
        lim["limits"]["default_query_limit"] = json!(101);
        assert_eq!(reason(manifest(&lim, o)), "manifest_limits_invalid");
        let mut dup = good_manifest(o);
        dup["collectors"] =
            json!([{"collector_id":"a","description":"d"},{"collector_id":"a","description":"d"}]);
        assert_eq!(reason(manifest(&dup, o)), "manifest_collectors_invalid");
    }

    #[test]
    fn privacy_walk_skips_schema_subtrees() {
        let o = "http://127.0.0.1:1";
        assert_eq!(manifest_privacy(&Value::Object(good_manifest(o))), None);
        let mut m = good_manifest(o);
        m.insert("collections".into(), json!([]));
        assert_eq!(
            manifest_privacy(&Value::Object(m)),
            Some("manifest_exposes_collections")
        );
        let mut m = good_manifest(o);
        m["capabilities"]["x"] = json!([{"blob_ref": "sha256:00"}]);
        assert_eq!(
            manifest_privacy(&Value::Object(m)),
            Some("manifest_exposes_blob_ref")
        );
    }

    #[test]
    fn projection_ignores_generated_at_and_orders() {
        let o = "http://127.0.0.1:1";
        let mut a = good_manifest(o);
        let mut b = good_manifest(o);
        b["generated_at"] = json!("2026-12-01T00:00:01.000Z");
        a["collectors"] =
            json!([{"collector_id":"b","description":"d"},{"collector_id":"a","description":"d"}]);
        b["collectors"] =
            json!([{"collector_id":"a","description":"d"},{"collector_id":"b","description":"d"}]);
        assert_eq!(manifest_projection(&a), manifest_projection(&b));
        b["limits"]["max_query_limit"] = json!(99);
        assert_ne!(manifest_projection(&a), manifest_projection(&b));
    }

    #[test]
    fn collections_and_pages() {
        let body = json!({"collections":[{"protocol":"agent-data/v1","id":"default",
            "schema":{"version":"1"},"created_at":"2026-12-01T00:00:00.000Z",
            "policy":{"allowed_media_types":["text/plain"],"visibility":"private"}}]});
        assert_eq!(
            collections(body.as_object().expect("o"))
                .expect("valid")
                .len(),
            1
        );
        let bad = json!({"collections":{}});
        assert_eq!(
            collections(bad.as_object().expect("o"))
                .expect_err("bad")
                .reason
                .as_deref(),
            Some("collections_wrapper_invalid")
        );
        let page = json!({"changes":[{"id":"change_1","type":"record.created","sequence":1,
            "collection_id":"c","record_id":"r","occurred_at":"2026-12-01T00:00:00.000Z"}],
            "cursor":"abc","has_more":false});
        assert_eq!(
            change_page(page.as_object().expect("o"), 1)
                .expect("ok")
                .changes
                .len(),
            1
        );
        assert!(change_page(page.as_object().expect("o"), 0).is_err());
    }
}
