//! SHA-256 digests as 64 lowercase hex characters, and the domain-separated
//! digest every identity of this toolkit uses:
//! `SHA-256(domain || 0x00 || u64be(len(bytes)) || bytes)`.

use crate::error::{Code, Error, Result};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest, Sha256};
use std::fmt;

/// A SHA-256 digest, always 64 lowercase hex characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sha256Hex(String);

impl Sha256Hex {
    /// From raw digest bytes.
    pub fn from_bytes(b: [u8; 32]) -> Self {
        Sha256Hex(data_encoding::HEXLOWER.encode(&b))
    }

    /// The plain SHA-256 of `bytes`.
    pub fn digest(bytes: &[u8]) -> Self {
        Self::from_bytes(Sha256::digest(bytes).into())
    }

    /// Parses 64 lowercase hex characters; anything else is `invalid_input`.
    pub fn parse(s: &str) -> Result<Self> {
        if s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            Ok(Sha256Hex(s.to_owned()))
        } else {
            Err(Error::new(
                Code::InvalidInput,
                "a digest must be 64 lowercase hex characters",
            )
            .with("value", s.chars().take(80).collect::<String>()))
        }
    }

    /// The hex string.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The raw 32 bytes.
    pub fn to_bytes(&self) -> [u8; 32] {
        let mut out = [0u8; 32];
        // Invariant: the string is 64 validated hex characters.
        if let Ok(v) = data_encoding::HEXLOWER.decode(self.0.as_bytes()) {
            out.copy_from_slice(&v);
        }
        out
    }
}

impl fmt::Display for Sha256Hex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Sha256Hex {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Sha256Hex {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Sha256Hex::parse(&s).map_err(|e| serde::de::Error::custom(e.message().to_owned()))
    }
}

/// A domain-separated SHA-256 over one byte string:
/// `SHA-256(domain || 0x00 || u64be(len) || bytes)`.
pub fn domain_digest(domain: &str, bytes: &[u8]) -> Sha256Hex {
    let mut h = Sha256::new();
    h.update(domain.as_bytes());
    h.update([0u8]);
    h.update((bytes.len() as u64).to_be_bytes());
    h.update(bytes);
    Sha256Hex::from_bytes(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_is_strict() {
        assert!(Sha256Hex::parse(&"a".repeat(64)).is_ok());
        assert!(Sha256Hex::parse(&"A".repeat(64)).is_err());
        assert!(Sha256Hex::parse(&"a".repeat(63)).is_err());
        assert!(Sha256Hex::parse(&"g".repeat(64)).is_err());
    }

    #[test]
    fn domain_separation_changes_digest() {
        assert_ne!(domain_digest("a", b"x"), domain_digest("b", b"x"));
        assert_ne!(domain_digest("a", b"x"), domain_digest("a", b"y"));
        let d = Sha256Hex::digest(b"abc");
        assert_eq!(Sha256Hex::from_bytes(d.to_bytes()), d);
    }
}
