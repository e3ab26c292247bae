//! Change-feed cursors: deterministic, opaque strings bound to the node's
//! feed id and to the collection filter they were made under.
//!
//! Format: `adc1.` + base64url (no padding) of the canonical JSON
//! `{"c": <collection id or null>, "f": <feed id>, "s": <sequence>}`.

use super::canon::canonical_json;
use crate::error::{Code, Error, Result};
use serde_json::{Value, json};

const PREFIX: &str = "adc1.";
const MAX_LEN: usize = 1024;

/// Largest sequence a cursor carries exactly: the canonical JSON number is
/// an IEEE-754 double, as in the reference, so positions are JavaScript
/// safe integers (a feed never gets near it).
pub const MAX_SEQUENCE: i64 = (1 << 53) - 1;

/// Encodes a position (`0..=MAX_SEQUENCE`; beyond it the number loses
/// precision and the cursor would not decode).
pub fn encode(feed_id: &str, filter: Option<&str>, sequence: i64) -> String {
    let v = json!({"c": filter, "f": feed_id, "s": sequence});
    let text = canonical_json(&v).unwrap_or_default();
    format!(
        "{PREFIX}{}",
        data_encoding::BASE64URL_NOPAD.encode(text.as_bytes())
    )
}

fn invalid() -> Error {
    Error::new(
        Code::InvalidCursor,
        "cursor is invalid or belongs to a different collection filter",
    )
}

/// Decodes a cursor made by this node under the same filter.
pub fn decode(cursor: &str, feed_id: &str, filter: Option<&str>) -> Result<i64> {
    if cursor.len() > MAX_LEN {
        return Err(invalid());
    }
    let body = cursor.strip_prefix(PREFIX).ok_or_else(invalid)?;
    let bytes = data_encoding::BASE64URL_NOPAD
        .decode(body.as_bytes())
        .map_err(|_| invalid())?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
    let obj = v.as_object().ok_or_else(invalid)?;
    if obj.len() != 3 {
        return Err(invalid());
    }
    let seq = obj
        .get("s")
        .and_then(Value::as_i64)
        .filter(|s| *s >= 0)
        .ok_or_else(invalid)?;
    let same_filter = match (obj.get("c"), filter) {
        (Some(Value::Null), None) => true,
        (Some(Value::String(c)), Some(f)) => c == f,
        _ => false,
    };
    if !same_filter || obj.get("f").and_then(Value::as_str) != Some(feed_id) {
        return Err(invalid());
    }
    // Only the exact encoding this node produces is accepted.
    if encode(feed_id, filter, seq) != cursor {
        return Err(invalid());
    }
    Ok(seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_binding() {
        let f = "feed_x";
        let c = encode(f, Some("notes"), 42);
        assert_eq!(c, encode(f, Some("notes"), 42));
        assert_eq!(decode(&c, f, Some("notes")).expect("ok"), 42);
        assert_eq!(
            decode(&c, f, None).err().map(|e| e.code()),
            Some(Code::InvalidCursor)
        );
        assert_eq!(
            decode(&c, f, Some("other")).err().map(|e| e.code()),
            Some(Code::InvalidCursor)
        );
        assert_eq!(
            decode(&c, "feed_y", Some("notes")).err().map(|e| e.code()),
            Some(Code::InvalidCursor)
        );
        let u = encode(f, None, 0);
        assert_eq!(decode(&u, f, None).expect("ok"), 0);
        assert!(decode("not-an-agent-data-cursor", f, None).is_err());
        assert!(decode("adc1.!!", f, None).is_err());
    }

    /// Found by `fuzz/fuzz_targets/cursor.rs`: a sequence past 2^53 − 1
    /// does not survive the canonical (double) number, so its cursor names
    /// another position or none; every safe integer round-trips.
    #[test]
    fn sequences_are_safe_integers() {
        let f = "feed_x";
        for s in [0, 1, 42, MAX_SEQUENCE - 1, MAX_SEQUENCE] {
            assert_eq!(decode(&encode(f, None, s), f, None).expect("safe"), s);
        }
        for s in [MAX_SEQUENCE + 2, 0x6164_6331_2e65_794a, i64::MAX] {
            assert_ne!(decode(&encode(f, None, s), f, None).ok(), Some(s));
        }
    }
}
