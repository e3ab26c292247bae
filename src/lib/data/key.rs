//! Record ids and content digests as the data schema stores them: the 32
//! bytes their hex names (schema 5), and the integer prefix its indexes
//! hold (schema 6, [`prefix`]). This is the one place the forms convert.
//!
//! Only the canonical text converts (`rec_` and 64 lowercase hex digits;
//! 64 lowercase hex digits), so an id written any other way, upper case
//! included, has no key and finds no row, as when the text itself was the
//! key. Keys always convert back to lowercase.

use crate::error::{Error, Result};
use crate::wire::digest::Sha256Hex;
use data_encoding::HEXLOWER;

/// The stored form of a record id or content digest.
pub type Key = [u8; 32];

/// The key of a canonical record id (`rec_` + 64 lowercase hex), or `None`
/// for any other text.
pub fn record_key(id: &str) -> Option<Key> {
    hex_key(id.strip_prefix("rec_")?)
}

/// The key of 64 lowercase hex digits, or `None` for any other text.
pub fn hex_key(hex: &str) -> Option<Key> {
    let mut key = [0u8; 32];
    // `HEXLOWER` (not the permissive table) refuses upper-case digits.
    if hex.len() != 64 || HEXLOWER.decode_mut(hex.as_bytes(), &mut key).is_err() {
        return None;
    }
    Some(key)
}

/// The record id a stored key names.
pub fn record_id(key: &[u8]) -> Result<String> {
    if key.len() != 32 {
        return Err(Error::internal("a stored record key is not 32 bytes"));
    }
    let mut id = String::with_capacity(68);
    id.push_str("rec_");
    HEXLOWER.encode_append(key, &mut id);
    Ok(id)
}

/// The index prefix of a key (data schema 6: `records.kp`,
/// `inline_blobs.sp`): its first 8 bytes, big-endian, as a signed
/// integer, which SQLite stores in at most 8 bytes. Not unique (two keys
/// may share their first 8 bytes), so every lookup names the prefix, to
/// use the index, and the full key, to match exactly that key.
pub fn prefix(key: &Key) -> i64 {
    let [a, b, c, d, e, f, g, h, ..] = *key;
    i64::from_be_bytes([a, b, c, d, e, f, g, h])
}

/// The digest a stored key names, or `None` if it is not 32 bytes.
pub fn digest(key: &[u8]) -> Option<Sha256Hex> {
    Key::try_from(key).ok().map(Sha256Hex::from_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_canonical_text_has_a_key() {
        let hex = "0123456789abcdef".repeat(4);
        let id = format!("rec_{hex}");
        let key = record_key(&id).expect("canonical");
        assert_eq!(key[..4], [0x01, 0x23, 0x45, 0x67]);
        assert_eq!(record_id(&key).expect("id"), id);
        assert_eq!(hex_key(&hex), Some(key));
        assert_eq!(digest(&key).expect("digest").as_str(), hex);
        for bad in [
            format!("rec_{}", hex.to_uppercase()),
            format!("REC_{hex}"),
            format!("rec_{}A", &hex[..63]),
            format!("rec_{}", &hex[..62]),
            format!("rec_{hex}00"),
            format!("rec_{}g", &hex[..63]),
            format!("rec_{}é", &hex[..62]),
            format!("rac_{hex}"),
            hex.clone(),
            String::new(),
        ] {
            assert_eq!(record_key(&bad), None, "{bad}");
        }
        assert_eq!(hex_key(&hex.to_uppercase()), None);
        assert_eq!(hex_key(&hex[..63]), None);
        assert!(record_id(&key[..31]).is_err());
        assert!(digest(&[0u8; 33]).is_none());
    }

    #[test]
    fn the_prefix_is_the_first_eight_bytes_signed() {
        let mut key = [0xa5u8; 32];
        key[..8].copy_from_slice(&[0x80, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(prefix(&key), i64::MIN);
        key[..8].copy_from_slice(&[0xff; 8]);
        assert_eq!(prefix(&key), -1);
        key[..8].copy_from_slice(&[0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(prefix(&key), i64::MAX);
        key[..8].copy_from_slice(&[0; 8]);
        assert_eq!(prefix(&key), 0);
        key[..8].copy_from_slice(&[0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef]);
        assert_eq!(prefix(&key), 0x0123_4567_89ab_cdef);
        // Only the first 8 bytes count.
        let mut other = key;
        other[8..].fill(0x11);
        assert_eq!(prefix(&other), prefix(&key));
    }
}
