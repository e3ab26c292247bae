//! Strict JSON for the formats this project owns (workflow files, the
//! workspace and node configs, assertions, descriptors, transfers, the
//! workspace endpoint, MCP, collector upload): a size bound, then one pass
//! over the bytes that refuses a duplicate object key at any depth and a
//! value nested deeper than the bound, then the typed decode (whose types
//! carry `deny_unknown_fields`).
//!
//! serde_json keeps the last of duplicate keys and has no switch to refuse
//! them, so the first pass is a serde [`Visitor`] driven by serde_json's own
//! parser: keys are compared after unescaping (`"a"` and `"\u0061"` are
//! the same key), nothing is hand-parsed. The `/v1/data/*` routes do not
//! use this module: there the reference's last-value-wins parsing is the
//! contract.

use crate::error::{Code, Error, Result};
use serde::de::{self, DeserializeOwned, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

/// Default nesting bound (arrays and objects), the data node's as well.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// The bounds of one decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest input in bytes.
    pub max_bytes: usize,
    /// Deepest nesting of arrays and objects (a scalar is depth 0).
    pub max_depth: usize,
}

impl Limits {
    /// `max_bytes` with the default depth bound.
    pub const fn bytes(max_bytes: usize) -> Limits {
        Limits {
            max_bytes,
            max_depth: DEFAULT_MAX_DEPTH,
        }
    }
}

/// Why strict decoding refused the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Over `max_bytes`.
    TooLarge {
        /// The bound.
        max_bytes: usize,
    },
    /// Nested deeper than `max_depth`.
    TooDeep {
        /// The bound.
        max_depth: usize,
    },
    /// An object names the same key twice (the key, shortened).
    DuplicateKey(String),
    /// Not JSON, not UTF-8, trailing bytes, or the wrong shape for the type.
    Invalid(String),
}

impl Refusal {
    /// A short machine word for `details.reason`.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::TooLarge { .. } => "too_large",
            Refusal::TooDeep { .. } => "too_deep",
            Refusal::DuplicateKey(_) => "duplicate_key",
            Refusal::Invalid(_) => "invalid",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::TooLarge { max_bytes } => write!(f, "over {max_bytes} bytes"),
            Refusal::TooDeep { max_depth } => {
                write!(f, "nested deeper than {max_depth} arrays/objects")
            }
            Refusal::DuplicateKey(k) => write!(f, "duplicate object key {k:?}"),
            Refusal::Invalid(m) => f.write_str(m),
        }
    }
}

/// Decodes `bytes` strictly into `T`.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8], limits: Limits) -> Result<T, Refusal> {
    check(bytes, limits)?;
    serde_json::from_slice(bytes).map_err(|e| Refusal::Invalid(e.to_string()))
}

/// [`from_slice`] with the refusal as an [`Error`] of `code`, its message
/// prefixed by `what` (`"workflow file"`), `details.reason` the refusal's
/// word.
pub fn decode<T: DeserializeOwned>(
    bytes: &[u8],
    limits: Limits,
    code: Code,
    what: &str,
) -> Result<T> {
    from_slice(bytes, limits).map_err(|r| refusal_error(&r, code, what))
}

/// The [`Error`] for a refusal.
pub fn refusal_error(r: &Refusal, code: Code, what: &str) -> Error {
    Error::new(code, format!("{what}: {r}")).with("reason", r.reason())
}

/// The structural pass alone: size, syntax, UTF-8, depth, duplicate keys
/// and trailing bytes.
pub fn check(bytes: &[u8], limits: Limits) -> Result<(), Refusal> {
    if bytes.len() > limits.max_bytes {
        return Err(Refusal::TooLarge {
            max_bytes: limits.max_bytes,
        });
    }
    let found = Cell::new(None);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let seed = Check {
        depth: 0,
        max_depth: limits.max_depth,
        found: &found,
    };
    let out = seed.deserialize(&mut de).and_then(|()| de.end());
    match (out, found.take()) {
        (Ok(()), _) => Ok(()),
        (Err(_), Some(r)) => Err(r),
        (Err(e), None) => Err(Refusal::Invalid(e.to_string())),
    }
}

/// Keys of an object compared one by one before a set is used.
const FEW_KEYS: usize = 16;

/// Longest key quoted back in a refusal.
const KEY_SHOWN: usize = 64;

#[derive(Clone, Copy)]
struct Check<'a> {
    depth: usize,
    max_depth: usize,
    found: &'a Cell<Option<Refusal>>,
}

impl<'a> Check<'a> {
    fn enter<E: de::Error>(self) -> Result<Check<'a>, E> {
        if self.depth >= self.max_depth {
            return Err(self.refuse(Refusal::TooDeep {
                max_depth: self.max_depth,
            }));
        }
        Ok(Check {
            depth: self.depth + 1,
            ..self
        })
    }

    fn refuse<E: de::Error>(self, r: Refusal) -> E {
        let msg = r.to_string();
        self.found.set(Some(r));
        E::custom(msg)
    }
}

impl<'de> DeserializeSeed<'de> for Check<'_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Check<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let inner = self.enter()?;
        // The keys seen so far: a list while the object is small (most
        // are: comparing a few short keys is cheaper than hashing each
        // with a fresh SipHash state), a set once it is not.
        let mut few: Vec<Cow<'de, str>> = Vec::new();
        let mut many: HashSet<Cow<'de, str>> = HashSet::new();
        while let Some(key) = map.next_key_seed(Key)? {
            if few.contains(&key) || many.contains(&key) {
                let shown: String = key.chars().take(KEY_SHOWN).collect();
                return Err(self.refuse(Refusal::DuplicateKey(shown)));
            }
            map.next_value_seed(inner)?;
            if few.len() < FEW_KEYS {
                few.push(key);
            } else {
                many.insert(key);
            }
        }
        Ok(())
    }
}

/// An object key, borrowed from the input when it has no escapes.
struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::Value;

    const L: Limits = Limits::bytes(1 << 20);

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct T {
        a: u32,
        #[serde(default)]
        b: Vec<Value>,
    }

    #[test]
    fn accepts_ordinary_json() {
        let t: T = from_slice(
            br#" {"a": 1, "b": [{"x": 1, "y": {"x": 2}}, {"x": 3}]} "#,
            L,
        )
        .expect("ok");
        assert_eq!(t.a, 1);
        // The same key in sibling and nested objects is not a duplicate.
        check(br#"[{"k":1},{"k":2},{"k":{"k":3}}]"#, L).expect("ok");
        check(b"\"scalar\"", L).expect("ok");
    }

    #[test]
    fn refuses_duplicate_keys_at_any_depth() {
        for (doc, key) in [
            (r#"{"a":1,"a":2}"#, "a"),
            (r#"{"a":1,"b":[{"c":{"d":1,"d":1}}]}"#, "d"),
            (r#"{"a":1,"\u0061":2}"#, "a"),
            (r#"[[[{"x":null,"y":0,"x":null}]]]"#, "x"),
        ] {
            assert_eq!(
                check(doc.as_bytes(), L),
                Err(Refusal::DuplicateKey(key.into())),
                "{doc}"
            );
            assert!(from_slice::<Value>(doc.as_bytes(), L).is_err(), "{doc}");
        }
        // Past the keys compared one by one: the set finds a duplicate of
        // an early key and of a late one alike.
        let keys: Vec<String> = (0..40).map(|i| format!("\"k{i}\":{i}")).collect();
        for dup in ["k3", "k39"] {
            let doc = format!("{{{},\"{dup}\":0}}", keys.join(","));
            assert_eq!(
                check(doc.as_bytes(), L),
                Err(Refusal::DuplicateKey(dup.into())),
                "{dup}"
            );
        }
        check(format!("{{{}}}", keys.join(",")).as_bytes(), L).expect("40 keys");
        let long = "k".repeat(500);
        let doc = format!(r#"{{"{long}":1,"{long}":2}}"#);
        match check(doc.as_bytes(), L) {
            Err(Refusal::DuplicateKey(k)) => assert_eq!(k.len(), KEY_SHOWN),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn bounds_depth_and_size() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        check(deep(64).as_bytes(), L).expect("64 is allowed");
        assert_eq!(
            check(deep(65).as_bytes(), L),
            Err(Refusal::TooDeep { max_depth: 64 })
        );
        // Far beyond serde_json's own recursion limit: still our refusal.
        assert_eq!(
            check(deep(100_000).as_bytes(), L),
            Err(Refusal::TooDeep { max_depth: 64 })
        );
        let objs = format!("{}1{}", r#"{"a":"#.repeat(65), "}".repeat(65));
        assert_eq!(
            check(objs.as_bytes(), L),
            Err(Refusal::TooDeep { max_depth: 64 })
        );
        assert_eq!(
            check(b"[1,2,3]", Limits::bytes(6)),
            Err(Refusal::TooLarge { max_bytes: 6 })
        );
    }

    #[test]
    fn refuses_garbage_unknown_fields_and_bad_text() {
        for doc in [
            &b""[..],
            b"{",
            b"{\"a\":1} x",
            b"{\"a\":1}{\"a\":1}",
            b"{\"a\":\"\xff\"}",
            b"{\"a\":\"\\ud800\"}",
            b"{'a':1}",
            b"{\"a\":1,}",
            b"[1,]",
            b"NaN",
        ] {
            assert!(
                matches!(check(doc, L), Err(Refusal::Invalid(_))),
                "{}",
                String::from_utf8_lossy(doc)
            );
        }
        assert!(matches!(
            from_slice::<T>(br#"{"a":1,"c":2}"#, L),
            Err(Refusal::Invalid(m)) if m.contains("unknown field")
        ));
        let e = decode::<T>(br#"{"a":1,"a":1}"#, L, Code::Config, "config").expect_err("dup");
        assert_eq!(e.code(), Code::Config);
        assert!(e.message().starts_with("config: duplicate"), "{e}");
        assert_eq!(e.details().expect("d")["reason"], "duplicate_key");
    }
}
