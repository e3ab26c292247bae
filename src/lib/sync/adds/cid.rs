//! CIDv1, raw codec, sha2-256, base32 lowercase with a `b` multibase
//! prefix (facts §4): always 59 characters starting `bafkrei`.

use super::{AResult, integrity};
use data_encoding::{Encoding, Specification};
use sha2::{Digest, Sha256};
use std::sync::LazyLock;

const PREFIX: [u8; 4] = [0x01, 0x55, 0x12, 0x20];

static BASE32LOWER: LazyLock<Encoding> = LazyLock::new(|| {
    let mut spec = Specification::new();
    spec.symbols.push_str("abcdefghijklmnopqrstuvwxyz234567");
    spec.check_trailing_bits = true;
    // A fixed, valid specification: building it cannot fail.
    spec.encoding()
        .unwrap_or_else(|_| data_encoding::BASE32_NOPAD.clone())
});

/// The CID of exactly these bytes.
pub fn cid_of(bytes: &[u8]) -> String {
    let mut raw = Vec::with_capacity(36);
    raw.extend_from_slice(&PREFIX);
    raw.extend_from_slice(&Sha256::digest(bytes));
    format!("b{}", BASE32LOWER.encode(&raw))
}

/// Parses a CID strictly; returns its SHA-256 digest.
pub fn parse(s: &str) -> AResult<[u8; 32]> {
    let bad = || integrity("not a CIDv1 raw sha2-256 base32lower string");
    let body = s.strip_prefix('b').ok_or_else(bad)?;
    if s.len() != 59
        || !body
            .bytes()
            .all(|b| b.is_ascii_lowercase() || (b'2'..=b'7').contains(&b))
    {
        return Err(bad());
    }
    let raw = BASE32LOWER.decode(body.as_bytes()).map_err(|_| bad())?;
    if raw.len() != 36 || raw[..4] != PREFIX || BASE32LOWER.encode(&raw) != body {
        return Err(bad());
    }
    let mut d = [0u8; 32];
    d.copy_from_slice(&raw[4..]);
    Ok(d)
}

/// Whether `s` is a valid CID.
pub fn is_cid(s: &str) -> bool {
    parse(s).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_and_strictness() {
        assert_eq!(
            cid_of(&[]),
            "bafkreihdwdcefgh4dqkjv67uzcmw7ojee6xedzdetojuzjevtenxquvyku"
        );
        let c = "bafkreiclvvhvqrs2yje7qij7qd4bpqq5vhksjcxgbozntam5lelbiaax6m";
        assert!(is_cid(c));
        assert!(!is_cid(&c.to_uppercase()));
        assert!(!is_cid(&c[..58]));
        assert!(!is_cid(&format!("B{}", &c[1..])));
        // Non-zero trailing bits in the last character.
        assert!(!is_cid(&format!("{}n", &c[..58])));
    }
}
