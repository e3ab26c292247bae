//! ADDS 0.1 (spec/agent-data-sync-facts.md §1–§9): the encrypted object
//! plane sync carries. Strict base64url, the ADDS canonical-JSON profile,
//! CIDv1 raw sha2-256, chunked AES-256-GCM objects with signed manifests,
//! direct-recipient grants with the X25519-HKDF-SHA256-AES-256-GCM key wrap,
//! and the keyless `adds-bundle/v1` wire form.
//!
//! Every check runs in the order the facts sheet gives and stops at the
//! first failure. Failures are [`AddsError`]s carrying the reference's
//! failure class; the sync layer reports all of them as
//! `sync_object_invalid` and keeps the class and message in the details.

pub mod bundle;
pub mod cid;
pub mod encoding;
pub mod grant;
pub mod jcs;
pub mod object;

use crate::error::{Code, Error};
use std::fmt;

/// The reference's failure classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Malformed input (wrong keys, types, lengths).
    InvalidInput,
    /// Bytes that do not match what binds them (CIDs, signatures, sizes, tags).
    Integrity,
    /// A well-formed grant that does not authorise this reader now.
    Unauthorized,
    /// A feature ADDS 0.1 recognises and refuses (delegation).
    Unsupported,
    /// Over a size ceiling.
    TooLarge,
}

impl Class {
    /// Snake-case name for details.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::InvalidInput => "invalid_input",
            Class::Integrity => "integrity_failure",
            Class::Unauthorized => "unauthorized",
            Class::Unsupported => "unsupported",
            Class::TooLarge => "too_large",
        }
    }
}

/// One ADDS failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddsError {
    /// The class.
    pub class: Class,
    /// What failed.
    pub message: String,
}

impl AddsError {
    /// A new failure.
    pub fn new(class: Class, message: impl Into<String>) -> AddsError {
        AddsError {
            class,
            message: message.into(),
        }
    }

    /// As a crate error with `code`, keeping the class in the details.
    pub fn into_error(self, code: Code) -> Error {
        Error::new(code, self.message).with("adds_class", self.class.as_str())
    }
}

impl fmt::Display for AddsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.class.as_str(), self.message)
    }
}

/// Result alias of the ADDS layer.
pub type AResult<T> = std::result::Result<T, AddsError>;

pub(crate) fn invalid(msg: impl Into<String>) -> AddsError {
    AddsError::new(Class::InvalidInput, msg)
}

pub(crate) fn integrity(msg: impl Into<String>) -> AddsError {
    AddsError::new(Class::Integrity, msg)
}

/// `"0.1"`.
pub const ADDS_VERSION: &str = "0.1";
/// Largest ADDS epoch-seconds time (9999-12-31T23:59:59Z).
pub const MAX_TIME: i64 = 253_402_300_799;
/// Manifest bytes ceiling.
pub const MAX_MANIFEST_BYTES: usize = 8 * 1024 * 1024;
/// Largest chunk size.
pub const MAX_CHUNK_SIZE: u64 = 16 * 1024 * 1024;
/// Most chunks a manifest may declare.
pub const MAX_CHUNKS: u64 = 1_048_576;
/// Largest id strings (UTF-16 code units).
pub const MAX_ID_LEN: usize = 2048;

/// A JSON object of `members`, moved in. `serde_json::json!` copies every
/// interpolated value (it serialises it through `to_value`), which for a
/// sealed object's base64url blocks and grant was a deep copy of the
/// whole object, more than once per object on the way to the page.
pub fn object_of<const N: usize>(members: [(&str, serde_json::Value); N]) -> serde_json::Value {
    serde_json::Value::Object(
        members
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}

/// Random bytes from the OS CSPRNG.
pub fn random<const N: usize>() -> crate::error::Result<[u8; N]> {
    crate::wire::random_bytes()
}

/// `urn:uuid:` + a random UUIDv4.
pub fn random_urn_uuid() -> crate::error::Result<String> {
    Ok(urn_uuid(random::<16>()?))
}

fn urn_uuid(bytes: [u8; 16]) -> String {
    format!(
        "urn:uuid:{}",
        uuid::Builder::from_random_bytes(bytes)
            .into_uuid()
            .hyphenated()
    )
}

/// Bytes of the OS CSPRNG read in one call and handed out in order, each
/// byte once: sealing a page's objects needs eight random values per
/// object, which were eight `getrandom` calls each. A draw that runs out
/// reads the OS source again for what it lacks. The bytes left over are
/// zeroed on drop.
pub struct Draw {
    buf: Vec<u8>,
    at: usize,
}

impl Draw {
    /// `n` bytes, read now.
    pub fn new(n: usize) -> crate::error::Result<Draw> {
        let mut buf = vec![0u8; n];
        crate::wire::random_fill(&mut buf)?;
        Ok(Draw { buf, at: 0 })
    }

    /// The next `N` bytes.
    pub fn take<const N: usize>(&mut self) -> crate::error::Result<[u8; N]> {
        let Some(src) = self.buf.get(self.at..self.at + N) else {
            return random::<N>();
        };
        let mut out = [0u8; N];
        out.copy_from_slice(src);
        self.buf[self.at..self.at + N].fill(0);
        self.at += N;
        Ok(out)
    }

    /// `urn:uuid:` + a UUIDv4 from the next 16 bytes.
    pub fn urn_uuid(&mut self) -> crate::error::Result<String> {
        Ok(urn_uuid(self.take::<16>()?))
    }
}

impl Drop for Draw {
    fn drop(&mut self) {
        self.buf.fill(0);
        std::hint::black_box(&self.buf);
    }
}

#[cfg(test)]
mod tests {
    use super::Draw;

    #[test]
    fn a_draw_hands_out_each_byte_once_then_reads_the_os_source_again() {
        let mut d = Draw::new(40).expect("draw");
        let kept = d.buf.clone();
        let a = d.take::<16>().expect("a");
        let b = d.take::<16>().expect("b");
        assert_eq!(a[..], kept[..16]);
        assert_eq!(b[..], kept[16..32]);
        assert!(
            d.buf[..32].iter().all(|&x| x == 0),
            "handed-out bytes are zeroed"
        );
        // 8 bytes left: a take of 16 reads the OS source for all 16.
        let c = d.take::<16>().expect("c");
        assert_ne!(c[..8], kept[32..40], "not the draw's bytes (2^-64 chance)");
        assert_eq!(d.buf[32..], kept[32..], "left as it was");
        let u = Draw::new(16).expect("draw").urn_uuid().expect("uuid");
        assert!(u.starts_with("urn:uuid:") && u.len() == 45, "{u}");
        assert_eq!(&u[23..24], "4", "version 4: {u}");
    }
}
