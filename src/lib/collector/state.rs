//! Retained collector state, authenticated: every file `collect` keeps in
//! an execution directory (reservation, record, signed transfer, upload
//! answer) is sealed with an HMAC-SHA256 made when it is written, and is
//! accepted on resume only when the MAC verifies. A planted or edited file
//! is `collector_state_tampered` and nothing is signed from it.
//!
//! ```text
//! sealed file = MAGIC "ATSEAL1\n" || u64be(len) || body || tag (32 bytes)
//! tag         = HMAC-SHA256(state key, DOMAIN || 0x00 || lp(kind) || lp(execution) || lp(body))
//! lp(x)       = u64be(len(x)) || x
//! state key   = HMAC-SHA256(signing-key seed, KEY_DOMAIN)
//! ```
//!
//! `kind` names the file's role (`reservation`, `record`, `transfer`,
//! `upload`) and `execution` its execution directory, so a genuine file
//! moved to another role or execution does not verify either. The key is
//! derived from the collector's signing key and never stored: whoever can
//! read the signing key can forge this state too (docs/security.md).

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use hmac::{KeyInit, Mac};
use std::io::Read;
use std::path::Path;

/// Magic of a sealed file.
pub const MAGIC: &[u8; 8] = b"ATSEAL1\n";
/// Domain of a state MAC.
pub const DOMAIN: &str = "agent-task.collector-state.v1";
/// Domain of the state key derivation.
pub const KEY_DOMAIN: &str = "agent-task.collector-state-key.v1";

type HmacSha256 = hmac::Hmac<sha2::Sha256>;

/// The key that seals one collector directory's state.
pub struct StateKey([u8; 32]);

impl StateKey {
    /// Derives the state key from the collector's signing-key seed.
    pub fn derive(seed: &[u8; 32]) -> Result<StateKey> {
        let mut m = HmacSha256::new_from_slice(seed)
            .map_err(|_| Error::internal("HMAC refused a 32-byte key"))?;
        m.update(KEY_DOMAIN.as_bytes());
        let mut k = [0u8; 32];
        k.copy_from_slice(&m.finalize().into_bytes());
        Ok(StateKey(k))
    }

    fn mac(&self, kind: &str, execution: &str, body: &[u8]) -> Result<HmacSha256> {
        let mut m = HmacSha256::new_from_slice(&self.0)
            .map_err(|_| Error::internal("HMAC refused a 32-byte key"))?;
        m.update(DOMAIN.as_bytes());
        m.update(&[0]);
        for part in [kind.as_bytes(), execution.as_bytes(), body] {
            m.update(&(part.len() as u64).to_be_bytes());
            m.update(part);
        }
        Ok(m)
    }

    /// The sealed bytes of `body`.
    pub fn seal(&self, kind: &str, execution: &str, body: &[u8]) -> Result<Vec<u8>> {
        let tag = self.mac(kind, execution, body)?.finalize().into_bytes();
        let mut out = Vec::with_capacity(MAGIC.len() + 8 + body.len() + tag.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(body.len() as u64).to_be_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(&tag);
        Ok(out)
    }

    /// The body of sealed bytes, when their MAC verifies (constant time).
    pub fn open(&self, kind: &str, execution: &str, sealed: &[u8]) -> Result<Vec<u8>> {
        let tampered = || {
            Error::new(
                Code::CollectorStateTampered,
                format!(
                    "the retained {kind} of this execution was not written by this collector \
                     (its MAC does not verify); nothing is signed from it"
                ),
            )
            .with("file", kind)
        };
        let rest = sealed.strip_prefix(MAGIC).ok_or_else(tampered)?;
        let (len, rest) = rest.split_at_checked(8).ok_or_else(tampered)?;
        let len = u64::from_be_bytes(len.try_into().map_err(|_| tampered())?);
        let len = usize::try_from(len).map_err(|_| tampered())?;
        if rest.len() != len.checked_add(32).ok_or_else(tampered)? {
            return Err(tampered());
        }
        let (body, tag) = rest.split_at(len);
        self.mac(kind, execution, body)?
            .verify_slice(tag)
            .map_err(|_| tampered())?;
        Ok(body.to_vec())
    }

    /// Writes `body` sealed to `path` (atomically, 0600, fsynced).
    pub fn write(&self, path: &Path, kind: &str, execution: &str, body: &[u8]) -> Result<()> {
        private_fs::write_atomic(path, &self.seal(kind, execution, body)?)
    }

    /// Creates `path` with `body` sealed, exclusively (0600, fsynced, never
    /// replacing a file there); `Ok(false)` when `path` already exists.
    pub fn create(&self, path: &Path, kind: &str, execution: &str, body: &[u8]) -> Result<bool> {
        private_fs::create_exclusive(path, &self.seal(kind, execution, body)?)
    }

    /// Reads and opens a sealed file: it must be owner-private, not a
    /// symlink, at most `max` body bytes, and verify. `None` when absent.
    pub fn read(
        &self,
        path: &Path,
        kind: &str,
        execution: &str,
        max: u64,
    ) -> Result<Option<Vec<u8>>> {
        if !private_fs::check_private(path, private_fs::Kind::File)? {
            return Ok(None);
        }
        let f = private_fs::open_nofollow_read(path)?;
        let limit = max.saturating_add(MAGIC.len() as u64 + 8 + 32);
        let mut b = Vec::new();
        f.take(limit + 1)
            .read_to_end(&mut b)
            .map_err(|e| Error::io("read", path, e))?;
        if b.len() as u64 > limit {
            return Err(Error::new(
                Code::CollectorStateTampered,
                format!("the retained {kind} of this execution is over its size bound"),
            )
            .with("file", kind));
        }
        self.open(kind, execution, &b).map(Some)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_bind_key_kind_execution_and_bytes() {
        let k = StateKey::derive(&[7u8; 32]).expect("key");
        let s = k.seal("record", "e1", b"{\"ok\":true}").expect("seal");
        assert_eq!(k.open("record", "e1", &s).expect("open"), b"{\"ok\":true}");
        let refused = |r: Result<Vec<u8>>| {
            assert_eq!(r.expect_err("refused").code(), Code::CollectorStateTampered)
        };
        refused(k.open("transfer", "e1", &s));
        refused(k.open("record", "e2", &s));
        let other = StateKey::derive(&[8u8; 32]).expect("key");
        refused(other.open("record", "e1", &s));
        for i in [0, 9, 12, s.len() - 1] {
            let mut t = s.clone();
            t[i] ^= 1;
            refused(k.open("record", "e1", &t));
        }
        refused(k.open("record", "e1", &s[..s.len() - 1]));
        refused(k.open("record", "e1", b"{\"planted\":true}"));
        refused(k.open("record", "e1", b""));
    }

    #[test]
    fn files_round_trip_and_a_plain_file_is_tampered() {
        let t = tempfile::tempdir().expect("tmp");
        let k = StateKey::derive(&[1u8; 32]).expect("key");
        let p = t.path().join("record.json");
        assert!(k.read(&p, "record", "e", 1024).expect("absent").is_none());
        k.write(&p, "record", "e", b"body").expect("write");
        assert_eq!(
            k.read(&p, "record", "e", 1024).expect("read"),
            Some(b"body".to_vec())
        );
        std::fs::write(&p, b"{\"status\":\"completed\"}").expect("plant");
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .expect("chmod");
        assert_eq!(
            k.read(&p, "record", "e", 1024).expect_err("planted").code(),
            Code::CollectorStateTampered
        );
    }
}
