//! The client's stat cache of a workspace it checkpoints through an
//! endpoint: the same rows (inode, size, mtime, ctime, mode, digest per
//! path) and recorded state (revision, scan start) a local checkpoint keeps
//! in the authority, kept instead in the agent's own state directory,
//! outside every store and every workspace:
//! `$XDG_STATE_HOME/agent-task/workspace-cache/` (else
//! `$HOME/.local/state/agent-task/workspace-cache/`), directory 0700, one
//! 0600 JSON file per workspace named by
//! `domain_digest("agent-task.workspace-cache.v1", canonical path)`.
//!
//! It only spares re-reading unchanged files; it proves nothing. A
//! checkpoint writes it; the Stop hook reads it and never writes it. A
//! missing, unreadable or malformed file is an empty cache, and a row is
//! trusted only under the racy-clean rule of [`crate::workflow::service::snapshot`].

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::wire::digest::{Sha256Hex, domain_digest};
use crate::workflow::service::snapshot::{CacheRow, CacheState, StatCache};
use serde::{Deserialize, Serialize};
use std::io::Read;
use std::path::{Path, PathBuf};

const DOMAIN: &str = "agent-task.workspace-cache.v1";
/// Largest cache file read.
pub const MAX_CACHE_BYTES: u64 = 256 * 1024 * 1024;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    root: String,
    revision: Sha256Hex,
    scanned_at_ns: i64,
    /// `[path, ino, size, mtime_ns, ctime_ns, mode, sha256]`.
    rows: Vec<(String, u64, u64, i64, i64, u32, Sha256Hex)>,
}

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
    state_dir().map(|d| d.join(domain_digest(DOMAIN, root.as_bytes()).as_str()))
}

/// Loads a cache for `root`; anything wrong with the file (absent, not
/// private, too large, malformed, another root) is an empty cache.
pub fn load(path: &Path, root: &str) -> StatCache {
    let read = || -> Option<File> {
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
        serde_json::from_slice(&bytes).ok()
    };
    match read() {
        Some(f) if f.version == 1 && f.root == root => StatCache::new(
            f.rows
                .into_iter()
                .map(|(p, ino, size, mtime_ns, ctime_ns, mode, sha)| {
                    (
                        p,
                        CacheRow {
                            ino,
                            size,
                            mtime_ns,
                            ctime_ns,
                            mode,
                            sha256: sha.to_bytes(),
                        },
                    )
                })
                .collect(),
            Some(CacheState {
                revision: f.revision,
                scanned_at_ns: f.scanned_at_ns,
            }),
        ),
        _ => StatCache::default(),
    }
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
    let f = File {
        version: 1,
        root: root.to_owned(),
        revision: revision.clone(),
        scanned_at_ns,
        rows: rows
            .iter()
            .map(|(p, r)| {
                (
                    p.clone(),
                    r.ino,
                    r.size,
                    r.mtime_ns,
                    r.ctime_ns,
                    r.mode,
                    Sha256Hex::from_bytes(r.sha256),
                )
            })
            .collect(),
    };
    let bytes = serde_json::to_vec(&f)
        .map_err(|e| Error::new(Code::Internal, format!("cannot render the cache: {e}")))?;
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
