//! The snapshot manifest: entries, modes and the revision domain (the
//! scanning and storing is `workflow::authority::snapshot`).

use crate::wire::digest::Sha256Hex;
use serde::{Deserialize, Serialize};

/// Domain of a revision id.
pub const DOMAIN_REVISION: &str = "agent-task.revision.v1";
/// Most files in one snapshot.
pub const MAX_FILES: usize = 1_000_000;
/// Largest single file.
pub const MAX_FILE_BYTES: u64 = 1 << 32;

/// Mode of a regular file.
pub const MODE_FILE: u32 = 0o100644;
/// Mode of an executable file.
pub const MODE_EXEC: u32 = 0o100755;
/// Mode of a symbolic link.
pub const MODE_LINK: u32 = 0o120000;

/// One manifest entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Entry {
    /// `/`-separated relative path.
    pub path: String,
    /// 100644, 100755 or 120000 (as a number).
    pub mode: u32,
    /// Size in bytes (link: target length).
    pub size: u64,
    /// SHA-256 of the bytes (link: of the target).
    pub sha256: Sha256Hex,
}

/// A snapshot manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// Always 1.
    pub version: u32,
    /// Entries sorted by path bytes.
    pub entries: Vec<Entry>,
}

impl Manifest {
    /// The entry at `path`.
    pub fn get(&self, path: &str) -> Option<&Entry> {
        self.entries
            .binary_search_by(|e| e.path.as_bytes().cmp(path.as_bytes()))
            .ok()
            .and_then(|i| self.entries.get(i))
    }
}
