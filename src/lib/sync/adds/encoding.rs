//! Byte encodings (facts §1): canonical unpadded base64url, lowercase hex
//! and the X25519 key id.

use super::{AResult, invalid};
use data_encoding::{BASE64URL_NOPAD, HEXLOWER};
use sha2::{Digest, Sha256};

/// Unpadded base64url.
pub fn b64u(bytes: &[u8]) -> String {
    BASE64URL_NOPAD.encode(bytes)
}

/// [`b64u`] of `bytes` appended to `out`.
pub fn b64u_append(bytes: &[u8], out: &mut Vec<u8>) {
    let at = out.len();
    out.resize(at + BASE64URL_NOPAD.encode_len(bytes.len()), 0);
    BASE64URL_NOPAD.encode_mut(bytes, &mut out[at..]);
}

/// Strict canonical base64url: no padding, only `A-Za-z0-9-_`, no length
/// ≡ 1 (mod 4), zero trailing bits (so re-encoding gives the input back).
/// `BASE64URL_NOPAD` itself refuses every other symbol (`=` included: the
/// specification has no padding), lengths ≡ 1 (mod 4) and non-zero trailing
/// bits (its `check_trailing_bits` is on), so neither a separate scan of
/// the symbols nor a re-encoding is needed; the unit test below pins all
/// three.
pub fn b64u_decode(s: &str) -> Option<Vec<u8>> {
    BASE64URL_NOPAD.decode(s.as_bytes()).ok()
}

/// Strict base64url of exactly `N` bytes.
pub fn b64u_fixed<const N: usize>(s: &str, what: &str) -> AResult<[u8; N]> {
    let v = b64u_decode(s).ok_or_else(|| invalid(format!("{what} is not canonical base64url")))?;
    v.try_into()
        .map_err(|_| invalid(format!("{what} must decode to {N} bytes")))
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    HEXLOWER.encode(bytes)
}

/// `"sha256:" ‖ b64u(SHA-256(raw X25519 public key))` (50 characters).
pub fn x25519_key_id(public_key: &[u8; 32]) -> String {
    format!("sha256:{}", b64u(&Sha256::digest(public_key)))
}

/// Whether `s` is exactly 43 characters of `[A-Za-z0-9_-]` that decode
/// canonically to 32 bytes (the page-authority parser's rule).
pub fn is_key_b64u(s: &str) -> bool {
    s.len() == 43 && b64u_decode(s).is_some_and(|v| v.len() == 32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_base64url() {
        assert_eq!(b64u_decode("AAECAwQFBgcICQoL").map(|v| v.len()), Some(12));
        assert!(b64u_decode("AAECAwQFBgcICQoL=").is_none());
        assert!(b64u_decode("A").is_none());
        assert!(b64u_decode("AB").is_none(), "non-zero trailing bits");
        assert!(b64u_decode("AA+/").is_none());
        assert_eq!(b64u_decode("AA").map(|v| v.len()), Some(1));
        assert!(b64u_decode("AAB").is_none(), "non-zero trailing bits");
        assert_eq!(b64u_decode("AAE").map(|v| v.len()), Some(2));
        assert!(b64u_decode("AAF").is_none(), "non-zero trailing bits");
        // Every decoded value re-encodes to its input (the canonical rule).
        for tail in ["A", "Q", "g", "w", "B", "R", "h", "x", "E", "F", "U", "_"] {
            for s in [
                format!("AA{tail}"),
                format!("AAAAA{tail}"),
                format!("A{tail}"),
            ] {
                if let Some(v) = b64u_decode(&s) {
                    assert_eq!(b64u(&v), s);
                }
            }
        }
        assert_eq!(b64u_decode(""), Some(vec![]));
        // Every byte outside the alphabet is refused in every position.
        for b in 0u8..=255 {
            if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
                continue;
            }
            let c = char::from(b);
            for s in [
                format!("{c}AAA"),
                format!("A{c}AA"),
                format!("AA{c}"),
                format!("AAAA{c}A"),
            ] {
                assert!(b64u_decode(&s).is_none(), "{b}");
            }
        }
        assert!(b64u_decode("AAAAA").is_none(), "length 1 mod 4");
        assert!(b64u_decode("AA==").is_none(), "padding");
        assert!(b64u_decode("AAé").is_none());
        assert_eq!(
            x25519_key_id(
                &b64u_fixed::<32>("hSDwCYkwp1R0i33ctD73Wg2_Og0mOBr066SpjqqbTmo", "k").expect("k")
            ),
            "sha256:MAyclgO5Kks57TlYv5JAEUgE20_TcwEsDKR0MtY0Ja4"
        );
    }
}
