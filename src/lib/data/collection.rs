//! Collection definitions: normalisation into the stored
//! `CollectionManifest` (spec/agent-data-facts.md §5).

use super::canon::{canonical_json, clone_object};
use super::syntax::{check_collection_id, normalize_media_type};
use crate::error::{Code, Error, Result};
use serde_json::{Map, Value};

/// Largest safe JavaScript integer.
pub const MAX_SAFE_INTEGER: f64 = 9_007_199_254_740_991.0;

fn invalid(msg: impl Into<String>) -> Error {
    Error::new(Code::InvalidCollection, msg)
}

/// Whether a JSON value is a positive safe integer.
pub fn positive_safe_integer(v: &Value) -> Option<u64> {
    let f = v.as_f64()?;
    (f.fract() == 0.0 && (1.0..=MAX_SAFE_INTEGER).contains(&f)).then_some(f as u64)
}

/// Normalises a collection definition (without `created_at`). Unknown
/// fields are dropped, as in the reference.
pub fn normalize(def: &Value) -> Result<Map<String, Value>> {
    let Value::Object(d) = def else {
        return Err(invalid("collection definition must be a JSON object"));
    };
    let id = match d.get("id") {
        Some(Value::String(s)) => s.clone(),
        _ => {
            return Err(Error::new(
                Code::InvalidCollectionId,
                "collection id must match ^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
            ));
        }
    };
    check_collection_id(&id)?;
    let mut out = Map::new();
    out.insert("protocol".into(), "agent-data/v1".into());
    out.insert("id".into(), Value::String(id));
    for f in ["name", "description"] {
        match d.get(f) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if s.is_empty() => {}
            Some(Value::String(s)) => {
                out.insert(f.into(), Value::String(s.clone()));
            }
            Some(_) => return Err(invalid(format!("{f} must be a string"))),
        }
    }
    let schema_in = match d.get("schema") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(invalid("schema must be an object")),
    };
    let mut schema = Map::new();
    match schema_in.get("version") {
        None => {
            schema.insert("version".into(), "1".into());
        }
        Some(Value::String(s)) if !s.is_empty() => {
            schema.insert("version".into(), Value::String(s.clone()));
        }
        Some(_) => return Err(invalid("schema.version must be a non-empty string")),
    }
    if let Some(js) = schema_in.get("json_schema") {
        schema.insert(
            "json_schema".into(),
            Value::Object(clone_object("schema.json_schema", Some(js))?),
        );
    }
    out.insert("schema".into(), Value::Object(schema));
    let policy_in = match d.get("policy") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return Err(invalid("policy must be an object")),
    };
    let mut policy = Map::new();
    match policy_in.get("visibility") {
        None => {
            policy.insert("visibility".into(), "private".into());
        }
        Some(Value::String(s)) if s == "private" || s == "public" => {
            policy.insert("visibility".into(), Value::String(s.clone()));
        }
        Some(_) => return Err(invalid("policy.visibility must be private or public")),
    }
    if let Some(v) = policy_in.get("max_record_bytes") {
        let n = positive_safe_integer(v).ok_or_else(|| {
            Error::new(
                Code::InvalidNumber,
                "policy.max_record_bytes must be a positive safe integer",
            )
        })?;
        policy.insert("max_record_bytes".into(), n.into());
    }
    if let Some(v) = policy_in.get("allowed_media_types") {
        let Value::Array(a) = v else {
            return Err(invalid("policy.allowed_media_types must be an array"));
        };
        let mut types = Vec::with_capacity(a.len());
        for t in a {
            let Value::String(s) = t else {
                return Err(invalid(
                    "policy.allowed_media_types entries must be strings",
                ));
            };
            types.push(normalize_media_type(s)?);
        }
        types.sort();
        types.dedup();
        policy.insert(
            "allowed_media_types".into(),
            Value::Array(types.into_iter().map(Value::String).collect()),
        );
    }
    if let Some(v) = policy_in.get("retention_days") {
        match v.as_f64() {
            Some(f) if f > 0.0 && f.is_finite() => {
                policy.insert("retention_days".into(), v.clone());
            }
            _ => return Err(invalid("policy.retention_days must be a positive number")),
        }
    }
    if let Some(v) = policy_in.get("ttl_seconds") {
        let n = positive_safe_integer(v)
            .ok_or_else(|| invalid("policy.ttl_seconds must be a positive safe integer"))?;
        policy.insert("ttl_seconds".into(), n.into());
    }
    if let Some(v) = policy_in.get("allowed_dids") {
        let Value::Array(a) = v else {
            return Err(invalid("policy.allowed_dids must be an array"));
        };
        let mut dids = Vec::with_capacity(a.len());
        for t in a {
            match t {
                Value::String(s) if s.starts_with("did:") => dids.push(s.clone()),
                _ => return Err(invalid("policy.allowed_dids entries must start with did:")),
            }
        }
        dids.sort();
        dids.dedup();
        policy.insert(
            "allowed_dids".into(),
            Value::Array(dids.into_iter().map(Value::String).collect()),
        );
    }
    out.insert("policy".into(), Value::Object(policy));
    // Re-read through canonical JSON so numbers and key order are stored
    // exactly as they will be compared.
    match super::canon::normalize("collection", &Value::Object(out))? {
        Value::Object(m) => Ok(m),
        _ => Err(Error::internal("collection normalised to a non-object")),
    }
}

/// The canonical comparison form of a definition (without `created_at`).
pub fn comparison_key(def: &Map<String, Value>) -> Result<String> {
    let mut d = def.clone();
    d.remove("created_at");
    canonical_json(&Value::Object(d))
}

/// The definition of the `default` collection the reference CLI asserts.
pub fn default_definition() -> Value {
    serde_json::json!({
        "id": "default",
        "name": "Default",
        "description": "Default local agent data collection",
        "schema": {"version": "1"},
        "policy": {"visibility": "private"}
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn normalises() {
        let m = normalize(&json!({"id":"notes","name":"","extra":1,"policy":{"allowed_media_types":["Text/Plain","text/plain; q=1","image/png"],"max_record_bytes":10}})).expect("ok");
        assert_eq!(
            Value::Object(m),
            json!({"protocol":"agent-data/v1","id":"notes","schema":{"version":"1"},"policy":{"visibility":"private","allowed_media_types":["image/png","text/plain"],"max_record_bytes":10}})
        );
        assert_eq!(
            normalize(&json!({"id":"x","policy":{"max_record_bytes":0}}))
                .err()
                .map(|e| e.code()),
            Some(Code::InvalidNumber)
        );
        assert_eq!(
            normalize(&json!({"id":"-x"})).err().map(|e| e.code()),
            Some(Code::InvalidCollectionId)
        );
        assert_eq!(
            normalize(&json!({"id":"x","schema":{"version":""}}))
                .err()
                .map(|e| e.code()),
            Some(Code::InvalidCollection)
        );
        let empty = normalize(&json!({"id":"x","policy":{"allowed_media_types":[]}})).expect("ok");
        assert_eq!(empty["policy"]["allowed_media_types"], json!([]));
    }
}
