//! The ADDS canonical-JSON profile (facts §2): RFC 8785 output (UTF-16
//! key order, ECMAScript number text, `JSON.stringify` string escapes)
//! with the ADDS refusals: `-0`, integers outside ±(2^53−1) (which also
//! catches `1e21`), nesting deeper than 64 and more than 100,000 values.
//! Stored or received documents must be byte-identical to their own
//! canonical form ([`strict_parse`]).

use super::{AResult, invalid};
use serde_json::{Map, Value};

/// Deepest allowed nesting (the root is depth 0).
pub const MAX_DEPTH: usize = 64;
/// Most values (containers included) in one document.
pub const MAX_VALUES: usize = 100_000;
/// Largest safe integer.
pub const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

fn check(v: &Value, depth: usize, count: &mut usize) -> AResult<()> {
    if depth > MAX_DEPTH {
        return Err(invalid("JSON nesting exceeds the canonical depth limit"));
    }
    *count += 1;
    if *count > MAX_VALUES {
        return Err(invalid("JSON document has more than 100000 values"));
    }
    match v {
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                if u as f64 > MAX_SAFE {
                    return Err(invalid("integer outside the safe range"));
                }
            } else if let Some(i) = n.as_i64() {
                if (i as f64) < -MAX_SAFE {
                    return Err(invalid("integer outside the safe range"));
                }
            } else {
                let f = n
                    .as_f64()
                    .ok_or_else(|| invalid("number is not representable"))?;
                if !f.is_finite() {
                    return Err(invalid("non-finite number"));
                }
                if f == 0.0 && f.is_sign_negative() {
                    return Err(invalid("negative zero"));
                }
                if f.fract() == 0.0 && f.abs() > MAX_SAFE {
                    return Err(invalid("integer outside the safe range"));
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                check(x, depth + 1, count)?;
            }
        }
        Value::Object(m) => {
            for x in m.values() {
                check(x, depth + 1, count)?;
            }
        }
        _ => {}
    }
    Ok(())
}

/// Whether serde_json's own compact output of `v` already is its RFC 8785
/// form: every number an integer (serde_json and ECMAScript print safe
/// integers alike; only non-integers differ), and no object key holding a
/// character at or above U+E000 (`serde_json::Map` is a `BTreeMap`, ordered
/// by code point, which equals UTF-16 code-unit order below U+E000).
/// serde_json escapes strings as `JSON.stringify` does (`\"`, `\\`,
/// `\b\f\n\r\t`, other C0 controls as lowercase `\u00xx`, nothing else).
fn serde_order_is_canonical(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_u64() || n.is_i64(),
        Value::Array(a) => a.iter().all(serde_order_is_canonical),
        Value::Object(m) => m
            .iter()
            .all(|(k, x)| k.chars().all(|c| (c as u32) < 0xE000) && serde_order_is_canonical(x)),
        _ => true,
    }
}

/// The canonical bytes of a value under the ADDS profile.
pub fn canonical(v: &Value) -> AResult<Vec<u8>> {
    let mut count = 0;
    check(v, 0, &mut count)?;
    if serde_order_is_canonical(v) {
        // The ADDS control documents (manifests, grants, AADs, page
        // controls) always take this path; it skips the general
        // canonicaliser's re-sorting, which dominated a page's cost.
        return serde_json::to_vec(v)
            .map_err(|e| invalid(format!("value cannot be serialised: {e}")));
    }
    serde_json_canonicalizer::to_vec(v)
        .map_err(|e| invalid(format!("value cannot be canonicalised: {e}")))
}

/// `UTF8(domain) ‖ ":" ‖ JCS(value)`.
pub fn domain_message(domain: &str, v: &Value) -> AResult<Vec<u8>> {
    let body = canonical(v)?;
    let mut out = Vec::with_capacity(domain.len() + 1 + body.len());
    out.extend_from_slice(domain.as_bytes());
    out.push(b':');
    out.extend_from_slice(&body);
    Ok(out)
}

/// `UTF8(domain) ‖ ":" ‖ JCS(o)` where `o` is the object `m` without the
/// member `skip` and with the member `replace.0` (when present in `m`)
/// replaced by `replace.1`: the signed forms of manifests and grants and
/// the grant's wrap header, built without copying the object. The bytes,
/// and every refusal, are those of [`domain_message`] on that object.
pub fn domain_message_of(
    domain: &str,
    m: &Map<String, Value>,
    skip: &str,
    replace: Option<(&str, &Value)>,
) -> AResult<Vec<u8>> {
    fn pick<'a>(
        k: &str,
        v: &'a Value,
        skip: &str,
        r: Option<(&str, &'a Value)>,
    ) -> Option<&'a Value> {
        match r {
            _ if k == skip => None,
            Some((rk, rv)) if rk == k => Some(rv),
            _ => Some(v),
        }
    }
    let member = |k: &str, v| pick(k, v, skip, replace);
    let mut count = 1;
    let mut fast = true;
    for (k, v) in m {
        if let Some(x) = member(k, v) {
            check(x, 1, &mut count)?;
            fast = fast && k.chars().all(|c| (c as u32) < 0xE000) && serde_order_is_canonical(x);
        }
    }
    if !fast {
        let mut o = Map::new();
        for (k, v) in m {
            if let Some(x) = member(k, v) {
                o.insert(k.clone(), x.clone());
            }
        }
        return domain_message(domain, &Value::Object(o));
    }
    let mut out = Vec::with_capacity(domain.len() + 1024);
    out.extend_from_slice(domain.as_bytes());
    out.push(b':');
    out.push(b'{');
    let mut first = true;
    for (k, v) in m {
        if let Some(x) = member(k, v) {
            if !first {
                out.push(b',');
            }
            first = false;
            serde_json::to_writer(&mut out, k)
                .and_then(|()| {
                    out.push(b':');
                    serde_json::to_writer(&mut out, x)
                })
                .map_err(|e| invalid(format!("value cannot be serialised: {e}")))?;
        }
    }
    out.push(b'}');
    Ok(out)
}

/// Parses stored or received canonical bytes: fatal UTF-8, JSON (a lone
/// surrogate escape is refused by the parser), then the re-serialisation
/// must be byte-identical, which refuses whitespace, duplicate keys (the
/// last one wins in the parse), `1.0`, non-minimal escapes and unsorted
/// keys.
pub fn strict_parse(bytes: &[u8]) -> AResult<Value> {
    let text = std::str::from_utf8(bytes).map_err(|_| invalid("canonical JSON is not UTF-8"))?;
    let v: Value =
        serde_json::from_str(text).map_err(|e| invalid(format!("not valid JSON: {e}")))?;
    let mut count = 0;
    check(&v, 0, &mut count)?;
    let same = if serde_order_is_canonical(&v) {
        // Compared while serialising, without building the text.
        let mut cmp = Compare { rest: bytes };
        serde_json::to_writer(&mut cmp, &v).is_ok() && cmp.rest.is_empty()
    } else {
        canonical(&v)? == bytes
    };
    if !same {
        return Err(invalid("JSON is not in canonical form"));
    }
    Ok(v)
}

/// A writer that consumes `rest` while what is written equals it, and
/// fails at the first difference.
struct Compare<'a> {
    rest: &'a [u8],
}

impl std::io::Write for Compare<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self.rest.strip_prefix(b) {
            Some(r) => {
                self.rest = r;
                Ok(b.len())
            }
            None => Err(std::io::Error::other("differs")),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// JavaScript `length`: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_integer_fast_path_equals_the_canonicaliser() {
        let cases = [
            json!({"b": 1, "a": [true, null, -5, 9_007_199_254_740_991u64], "c": {"z": "x", "é": "\u{1}\u{7f}\u{2028}/\"\\\n"}}),
            json!({"\u{10000}": 1, "\u{FFFF}": 2, "\u{E000}": 3, "\u{D7FF}": 4}),
            json!({"k": 1.5, "j": 100.0, "i": 1e-7}),
            json!([{"€": "Euro", "\r": "cr", "1": "one", "\u{80}": "ctl", "ö": "o"}]),
            json!("\u{0}\u{1f} \u{10FFFF}"),
        ];
        for v in cases {
            let want = serde_json_canonicalizer::to_vec(&v).expect("canon");
            assert_eq!(canonical(&v).expect("ours"), want, "{v}");
        }
        // Keys at or above U+E000 and non-integers take the general path.
        assert!(!serde_order_is_canonical(&json!({"\u{E000}": 1})));
        assert!(!serde_order_is_canonical(&json!([1.5])));
        assert!(serde_order_is_canonical(
            &json!({"\u{D7FF}": [1, "\u{FFFF}"]})
        ));
    }

    #[test]
    fn domain_message_of_equals_the_copied_object() {
        let cases = [
            json!({"b": 1, "signature": {"x": 1}, "a": [true, null], "key_wrap": {"algorithm": "A", "nonce": "n"}}),
            json!({"signature": 1}),
            json!({"z": "\u{E000}", "\u{E000}": 1, "signature": 2, "key_wrap": 3}),
            json!({"k": 1.5, "key_wrap": {"a": 1}}),
            json!({"a": -0.0, "signature": 1}),
            json!({"a": 9_007_199_254_740_992u64}),
        ];
        let cut = json!({"algorithm": "A"});
        for v in cases {
            let m = v.as_object().expect("object");
            for replace in [None, Some(("key_wrap", &cut))] {
                let mut o = m.clone();
                o.remove("signature");
                if let Some((k, r)) = replace
                    && o.contains_key(k)
                {
                    o.insert(k.into(), r.clone());
                }
                let want = domain_message("d", &Value::Object(o)).map_err(|e| e.class);
                let got = domain_message_of("d", m, "signature", replace).map_err(|e| e.class);
                assert_eq!(got, want, "{v}");
            }
        }
    }

    #[test]
    fn refusals() {
        assert!(canonical(&json!(-0.0)).is_err());
        assert!(canonical(&json!(9_007_199_254_740_992u64)).is_err());
        assert!(canonical(&json!(-9_007_199_254_740_992i64)).is_err());
        assert!(canonical(&json!(1e21)).is_err());
        assert!(canonical(&json!(9_007_199_254_740_991u64)).is_ok());
        assert!(canonical(&json!(4.5)).is_ok());
        let mut v = json!(1);
        for _ in 0..MAX_DEPTH {
            v = json!([v]);
        }
        assert!(canonical(&v).is_ok());
        assert!(canonical(&json!([v])).is_err());
        let many = Value::Array(vec![json!(1); MAX_VALUES - 1]);
        assert!(canonical(&many).is_ok());
        let too_many = Value::Array(vec![json!(1); MAX_VALUES]);
        assert!(canonical(&too_many).is_err());
        for bad in [
            r#"{"a":1,"a":2}"#,
            r#"{"a": 1}"#,
            r#"{"a":1.0}"#,
            r#"{"b":1,"a":2}"#,
            r#"["\u0041"]"#,
            r#"["\ud800"]"#,
            "-0",
        ] {
            assert!(strict_parse(bad.as_bytes()).is_err(), "{bad}");
        }
        assert!(strict_parse(br#"{"a":[1,"x",null]}"#).is_ok());
        assert!(strict_parse(b"\xff").is_err());
    }
}
