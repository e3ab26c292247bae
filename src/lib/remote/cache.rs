//! The client's stat cache of a workspace it checkpoints through an
//! endpoint: the same rows (inode, size, mtime, ctime, mode, digest per
//! path) and recorded state (revision, scan start) a local checkpoint keeps
//! in the authority, kept instead in the agent's own state directory,
//! outside every store and every workspace:
//! `$XDG_STATE_HOME/agent-task/workspace-cache/` (else
//! `$HOME/.local/state/agent-task/workspace-cache/`), directory 0700, one
//! 0600 file per workspace named by
//! `domain_digest("agent-task.workspace-cache.v1", canonical path)`:
//! `atwc`, format 2 (one byte), the root's byte length (u32, big-endian)
//! and bytes, the revision (32 raw bytes), the scan's start in ns (i64),
//! then the rows packed as a local checkpoint packs them
//! ([`crate::workflow::service::snapshot::encode_cache`]), read in place
//! by the Stop hook. Format 1 was JSON; such a file reads as no cache.
//!
//! It only spares re-reading unchanged files; it proves nothing. A
//! checkpoint writes it; the Stop hook reads it and never writes it. A
//! missing, unreadable or malformed file is an empty cache, and a row is
//! trusted only under the racy-clean rule of [`crate::workflow::service::snapshot`].

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::workflow::service::snapshot::{CacheRow, CacheState, StatCache, encode_cache};
use std::io::Read;
use std::path::{Path, PathBuf};

const DOMAIN: &str = "agent-task.workspace-cache.v1";
/// Largest cache file read.
pub const MAX_CACHE_BYTES: u64 = 256 * 1024 * 1024;

/// The file's header: `atwc` and format 2.
const MAGIC: &[u8; 5] = b"atwc\x02";

fn state_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| {
        crate::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    nonempty("XDG_STATE_HOME")
        .or_else(|| nonempty("HOME").map(|h| h.join(".local/state")))
        .filter(|p| p.is_absolute())
        .map(|p| p.join("agent-task").join("workspace-cache"))
}

/// The cache file of the workspace whose canonical path is `root`, under
/// the default state directory (`None` without `XDG_STATE_HOME`/`HOME`).
pub fn path_for(root: &str) -> Option<PathBuf> {
    state_dir().map(|d| file_in(&d, root))
}

/// The cache file of `root` under the state directory `state_home` (what
/// `XDG_STATE_HOME` names).
pub fn path_for_in(state_home: &Path, root: &str) -> PathBuf {
    file_in(&state_home.join("agent-task").join("workspace-cache"), root)
}

fn file_in(dir: &Path, root: &str) -> PathBuf {
    dir.join(domain_digest(DOMAIN, root.as_bytes()).as_str())
}

/// Loads a cache for `root`; anything wrong with the file (absent, not
/// private, too large, malformed, another root) is an empty cache.
pub fn load(path: &Path, root: &str) -> StatCache {
    let read = || -> Option<StatCache> {
        if !private_fs::check_private(path, private_fs::Kind::File).ok()? {
            return None;
        }
        let mut bytes = Vec::new();
        private_fs::open_nofollow_read(path)
            .ok()?
            .take(MAX_CACHE_BYTES + 1)
            .read_to_end(&mut bytes)
            .ok()?;
        if bytes.len() as u64 > MAX_CACHE_BYTES {
            return None;
        }
        let rest = bytes.strip_prefix(MAGIC.as_slice())?;
        let (len, rest) = rest.split_at_checked(4)?;
        let len = usize::try_from(u32::from_be_bytes(len.try_into().ok()?)).ok()?;
        let (named, rest) = rest.split_at_checked(len)?;
        if named != root.as_bytes() {
            return None;
        }
        let (revision, rest) = rest.split_at_checked(32)?;
        let (at, rows) = rest.split_at_checked(8)?;
        let state = CacheState {
            revision: Sha256Hex::from_bytes(revision.try_into().ok()?),
            scanned_at_ns: i64::from_be_bytes(at.try_into().ok()?),
        };
        let header = bytes.len() - rows.len();
        bytes.drain(..header);
        StatCache::from_packed(bytes, Some(state))
    };
    read().unwrap_or_default()
}

/// Writes the cache of `root` (atomic, 0600, directory 0700).
pub fn store(
    path: &Path,
    root: &str,
    rows: &[(String, CacheRow)],
    revision: &Sha256Hex,
    scanned_at_ns: i64,
) -> Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::internal("cache path has no parent"))?;
    if let Some(p) = dir.parent() {
        std::fs::create_dir_all(p).map_err(|e| Error::io("create", p, e))?;
    }
    private_fs::ensure_private_dir(dir)?;
    let root_len = u32::try_from(root.len())
        .map_err(|_| Error::new(Code::InvalidInput, "the workspace path is too long"))?;
    let mut bytes = Vec::new();
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&root_len.to_be_bytes());
    bytes.extend_from_slice(root.as_bytes());
    bytes.extend_from_slice(&revision.to_bytes());
    bytes.extend_from_slice(&scanned_at_ns.to_be_bytes());
    bytes.extend_from_slice(&encode_cache(rows.iter().map(|(p, r)| (p.as_str(), r))));
    private_fs::write_atomic(path, &bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_refusals() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join("state/workspace-cache/x");
        let row = CacheRow {
            ino: 7,
            size: 3,
            mtime_ns: 11,
            ctime_ns: 12,
            mode: 0o100644,
            sha256: Sha256Hex::digest(b"abc").to_bytes(),
        };
        let rev = Sha256Hex::digest(b"rev");
        store(&p, "/w", &[("a".into(), row.clone())], &rev, 99).expect("store");
        let c = load(&p, "/w");
        assert_eq!(
            c.rows().map(|(p, r)| (p.to_owned(), r)).collect::<Vec<_>>(),
            [("a".to_owned(), row)]
        );
        assert_eq!(
            c.state(),
            Some(&CacheState {
                revision: rev,
                scanned_at_ns: 99
            })
        );
        assert!(load(&p, "/other").rows().next().is_none(), "another root");
        // Truncated anywhere, it is no cache.
        let whole = std::fs::read(&p).expect("read");
        for cut in [0, 5, 9, 10, 42, 50, whole.len() - 1] {
            private_fs::write_atomic(&p, &whole[..cut]).expect("write");
            assert!(load(&p, "/w").state().is_none(), "truncated at {cut}");
        }
        // A format 1 (JSON) file from an earlier build is no cache either.
        let v1 = format!(
            r#"{{"version":1,"root":"/w","revision":"{rev}","scanned_at_ns":99,"rows":[]}}"#,
            rev = Sha256Hex::digest(b"rev")
        );
        private_fs::write_atomic(&p, v1.as_bytes()).expect("write");
        assert!(load(&p, "/w").state().is_none(), "format 1");
        std::fs::write(&p, b"{").expect("garbage");
        assert!(load(&p, "/w").state().is_none(), "malformed is empty");
        assert!(
            load(&t.path().join("missing"), "/w")
                .rows()
                .next()
                .is_none()
        );
    }
}
