//! Canonical JSON (RFC 8785 as the reference node applies it: UTF-16 key
//! order, ECMAScript number text, `-0` as `0`) and the JSON value rules of
//! the node (objects only, bounded depth, numbers are IEEE-754 doubles).

use crate::error::{Code, Error, Result};
use serde_json::{Map, Number, Value};

/// Maximum nesting depth of any JSON value the node accepts.
pub const MAX_DEPTH: usize = 64;

/// Whether serde_json's own compact text of `v` already is its RFC 8785
/// form: every number an integer of magnitude at most 2^53 (serde_json
/// and ECMAScript print those digit for digit; larger integers and
/// non-integers may differ), and no object key holding a character at or
/// above U+E000 (`serde_json::Map` is a `BTreeMap`, ordered by code point,
/// which equals UTF-16 code-unit order below U+E000). serde_json escapes
/// strings as `JSON.stringify` does (`\"`, `\\`, `\b\f\n\r\t`, other C0
/// controls as lowercase `\u00xx`, nothing else).
pub fn serde_text_is_canonical(v: &Value) -> bool {
    const SAFE: u64 = 1 << 53;
    match v {
        Value::Number(n) => {
            n.as_u64().is_some_and(|u| u <= SAFE)
                || n.as_i64().is_some_and(|i| i.unsigned_abs() <= SAFE)
        }
        Value::Array(a) => a.iter().all(serde_text_is_canonical),
        Value::Object(m) => m
            .iter()
            .all(|(k, x)| k.chars().all(|c| (c as u32) < 0xE000) && serde_text_is_canonical(x)),
        _ => true,
    }
}

/// The canonical JSON text of a value.
pub fn canonical_json(v: &Value) -> Result<String> {
    if serde_text_is_canonical(v) {
        // Stored envelopes and record cores take this path: it skips the
        // general canonicaliser's re-sorting.
        return serde_json::to_string(v).map_err(|e| {
            Error::new(
                Code::InvalidJson,
                format!("value cannot be canonicalised: {e}"),
            )
        });
    }
    serde_json_canonicalizer::to_string(v).map_err(|e| {
        Error::new(
            Code::InvalidJson,
            format!("value cannot be canonicalised: {e}"),
        )
    })
}

/// The ECMAScript `String(n)` text of a number (as in canonical JSON).
pub fn js_number_text(n: &Number) -> String {
    serde_json_canonicalizer::to_string(&Value::Number(n.clone())).unwrap_or_else(|_| n.to_string())
}

/// Re-reads a value through its canonical form: numbers become doubles
/// (integers beyond 2^53 lose precision exactly as in JavaScript, `-0`
/// becomes `0`), object keys come out sorted. Fails with `invalid_json` on a
/// value nested deeper than [`MAX_DEPTH`].
pub fn normalize(field: &str, v: &Value) -> Result<Value> {
    check_depth(field, v, 0)?;
    let text = canonical_json(v)?;
    serde_json::from_str(&text)
        .map_err(|e| Error::new(Code::InvalidJson, format!("{field} is not valid JSON: {e}")))
}

fn check_depth(field: &str, v: &Value, depth: usize) -> Result<()> {
    let too_deep = || {
        Error::new(
            Code::InvalidJson,
            format!("{field} exceeds the maximum JSON depth of {MAX_DEPTH}"),
        )
    };
    match v {
        Value::Array(a) => {
            if depth + 1 > MAX_DEPTH {
                return Err(too_deep());
            }
            a.iter().try_for_each(|c| check_depth(field, c, depth + 1))
        }
        Value::Object(o) => {
            if depth + 1 > MAX_DEPTH {
                return Err(too_deep());
            }
            o.values()
                .try_for_each(|c| check_depth(field, c, depth + 1))
        }
        _ => Ok(()),
    }
}

/// A field that must be a JSON object (absent means `{}`), re-read through
/// its canonical form.
pub fn clone_object(field: &str, v: Option<&Value>) -> Result<Map<String, Value>> {
    Ok(canonical_object(field, v)?.0)
}

/// [`clone_object`], with the canonical text it was re-read from.
pub fn canonical_object(field: &str, v: Option<&Value>) -> Result<(Map<String, Value>, String)> {
    match v {
        None => Ok((Map::new(), "{}".to_owned())),
        Some(o @ Value::Object(_)) => {
            check_depth(field, o, 0)?;
            let text = canonical_json(o)?;
            match serde_json::from_str(&text) {
                Ok(Value::Object(m)) => Ok((m, text)),
                Ok(_) => Err(not_object(field)),
                Err(e) => Err(Error::new(
                    Code::InvalidJson,
                    format!("{field} is not valid JSON: {e}"),
                )),
            }
        }
        Some(_) => Err(not_object(field)),
    }
}

/// Appends the canonical JSON text of a string (JSON.stringify's escaping,
/// which is serde_json's: `"`, `\\`, the short escapes and `\u00xx` for
/// the other control characters, everything else literal).
pub fn push_json_string(out: &mut Vec<u8>, s: &str) {
    // Writing a &str into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut *out, s);
}

fn not_object(field: &str) -> Error {
    Error::new(Code::InvalidJson, format!("{field} must be a JSON object"))
}

/// JavaScript `Object.is` on JSON primitives, and the recursive subset
/// match of a query's `where` (arrays exact, objects subset, `null` only
/// matches a stored `null`).
pub fn subset_match(expected: &Value, actual: Option<&Value>) -> bool {
    match expected {
        Value::Object(e) => match actual {
            Some(Value::Object(a)) => e.iter().all(|(k, ev)| subset_match(ev, a.get(k))),
            _ => false,
        },
        Value::Array(e) => match actual {
            Some(Value::Array(a)) => {
                a.len() == e.len() && e.iter().zip(a).all(|(ev, av)| subset_match(ev, Some(av)))
            }
            _ => false,
        },
        Value::Null => matches!(actual, Some(Value::Null)),
        Value::Bool(b) => matches!(actual, Some(Value::Bool(x)) if x == b),
        Value::String(s) => matches!(actual, Some(Value::String(x)) if x == s),
        Value::Number(n) => match actual {
            Some(Value::Number(x)) => match (n.as_f64(), x.as_f64()) {
                (Some(p), Some(q)) => p == q && p.is_sign_negative() == q.is_sign_negative(),
                _ => false,
            },
            _ => false,
        },
    }
}

/// Text every stored envelope a `where` filter matches must contain: for
/// each object member of the filter (at any depth, outside arrays) whose
/// expected value is a primitive, the canonical JSON of `"key":value`.
/// Envelopes are stored as canonical JSON, and [`subset_match`] requires
/// that member with that value (`Object.is`: the same canonical text;
/// `-0` and `0` share one) somewhere in the envelope, so a missing needle
/// proves no match, while a present one proves nothing: it only spares
/// parsing envelopes that cannot match.
pub fn where_needles(filter: &Value) -> Vec<String> {
    let mut out = Vec::new();
    needles_into(filter, &mut out);
    out
}

fn needles_into(v: &Value, out: &mut Vec<String>) {
    let Value::Object(m) = v else { return };
    for (k, ev) in m {
        match ev {
            Value::Object(_) => needles_into(ev, out),
            Value::Array(_) => {}
            prim => {
                if let (Ok(key), Ok(val)) = (
                    canonical_json(&Value::String(k.clone())),
                    canonical_json(prim),
                ) {
                    out.push(format!("{key}:{val}"));
                }
            }
        }
    }
}

/// Length of a string in UTF-16 code units (JavaScript `length`).
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_serde_text_fast_path_equals_the_canonicaliser() {
        let cases = [
            r#"{"b":1,"a":[true,null,-5,9007199254740992,-9007199254740992],"c":{"z":"x","é":"\u0001\u007f\u2028/\"\\\n"}}"#,
            r#"{"\ud800\udc00":1,"\uffff":2,"\ue000":3,"\ud7ff":4}"#,
            r#"{"k":9007199254740993,"j":-9007199254740993,"i":18446744073709551615}"#,
            r#"[{"€":"Euro","\r":"cr","1":"one","\u0080":"ctl","ö":"o"}]"#,
            r#""\u0000\u001f \udbff\udfff""#,
            r#"{"a":-0,"b":0}"#,
        ];
        for c in cases {
            let v: Value = serde_json::from_str(c).expect("json");
            let want = serde_json_canonicalizer::to_string(&v).expect("canon");
            assert_eq!(canonical_json(&v).expect("ours"), want, "{c}");
        }
        assert!(serde_text_is_canonical(&json!([9_007_199_254_740_992u64])));
        assert!(!serde_text_is_canonical(&json!([9_007_199_254_740_993u64])));
        assert!(!serde_text_is_canonical(&json!({"\u{E000}": 1})));
        assert!(!serde_text_is_canonical(&json!([1.5])));
    }

    #[test]
    fn numbers_and_key_order_follow_ecmascript() {
        let v: Value = serde_json::from_str(
            r#"{"b":1,"a":-0,"é":1e21,"\uFFFF":1e-7,"\ud800\udc00":0.1,"n":123456789012345680000,"m":5e-324,"k":9007199254740992}"#,
        )
        .expect("json");
        assert_eq!(
            canonical_json(&v).expect("canon"),
            "{\"a\":0,\"b\":1,\"k\":9007199254740992,\"m\":5e-324,\"n\":123456789012345680000,\"é\":1e+21,\"\u{10000}\":0.1,\"\u{FFFF}\":1e-7}"
        );
    }

    #[test]
    fn escaping_matches_json_stringify() {
        let v = json!({"s": "\u{8}\u{c}\n\r\t/\"\\\u{1}\u{1f}\u{7f}é\u{2028}"});
        assert_eq!(
            canonical_json(&v).expect("canon"),
            "{\"s\":\"\\b\\f\\n\\r\\t/\\\"\\\\\\u0001\\u001f\u{7f}é\u{2028}\"}"
        );
    }

    #[test]
    fn depth_and_objects() {
        let mut v = json!(1);
        for _ in 0..MAX_DEPTH {
            v = json!([v]);
        }
        assert!(normalize("x", &v).is_ok());
        let deeper = json!([v]);
        assert_eq!(
            normalize("x", &deeper).err().map(|e| e.code()),
            Some(Code::InvalidJson)
        );
        assert_eq!(
            clone_object("metadata", Some(&json!([])))
                .err()
                .map(|e| e.code()),
            Some(Code::InvalidJson)
        );
        assert!(clone_object("metadata", None).expect("empty").is_empty());
    }

    #[test]
    fn where_semantics() {
        let rec = json!({"id":"r","metadata":{"tags":["x","y"],"n":1.0},"key":null});
        assert!(subset_match(&json!({}), Some(&rec)));
        assert!(subset_match(&json!({"metadata":{"n":1}}), Some(&rec)));
        assert!(!subset_match(
            &json!({"metadata":{"tags":["y","x"]}}),
            Some(&rec)
        ));
        assert!(!subset_match(
            &json!({"metadata":{"tags":["x"]}}),
            Some(&rec)
        ));
        assert!(!subset_match(&json!({"version":null}), Some(&rec)));
        assert!(subset_match(&json!({"key":null}), Some(&rec)));
        assert!(!subset_match(&json!({"metadata":{"n":"1"}}), Some(&rec)));
    }

    /// A filter that matches an envelope finds every needle in its
    /// canonical text (the needles never reject a match).
    mod needles {
        use super::super::*;
        use proptest::prelude::*;
        use serde_json::json;

        fn value() -> impl Strategy<Value = Value> {
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::Bool),
                (-3i64..3).prop_map(|n| json!(n)),
                prop_oneof![Just(1.0f64), Just(-0.0), Just(0.5), Just(1e21)].prop_map(|f| json!(f)),
                "[ab\"\\\\\u{1}é😀]{0,3}".prop_map(Value::String),
            ];
            leaf.prop_recursive(3, 16, 3, |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                    prop::collection::btree_map("[ab\"é]{0,2}", inner, 0..3)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        /// A random sub-filter of `v` (it matches `v`).
        fn sub(v: &Value, pick: &mut impl FnMut() -> bool) -> Value {
            match v {
                Value::Object(m) => {
                    let mut out = Map::new();
                    for (k, x) in m {
                        if pick() {
                            out.insert(k.clone(), sub(x, pick));
                        }
                    }
                    Value::Object(out)
                }
                other => other.clone(),
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(512))]
            #[test]
            fn never_reject_a_match(env in prop::collection::btree_map("[ab\"é]{0,2}", value(), 0..4),
                                    other in value(), bits in any::<u64>()) {
                let env = normalize("env", &Value::Object(env.into_iter().collect())).expect("env");
                let text = canonical_json(&env).expect("text");
                let mut b = bits;
                let mut pick = move || { b = b.rotate_left(1); b & 1 == 1 };
                for filter in [sub(&env, &mut pick), other] {
                    if subset_match(&filter, Some(&env)) {
                        for n in where_needles(&filter) {
                            prop_assert!(text.contains(&n), "{n} not in {text} for {filter}");
                        }
                    }
                }
            }
        }
    }
}
