//! `cas put`, `cas cat`, `cas fsck` and `cas migrate`: direct access to the data
//! directory's content-addressed store, for operators and scripts.

use crate::error::Result;
use crate::store::{DataDir, MigrateOutput, MigrateStep, MigrateTo, PutOutcome, Session};
use serde::Serialize;
use std::io::Read;
use std::path::Path;
use std::time::Duration;

/// Largest object `cas put` accepts (4 GiB).
pub const MAX_PUT_BYTES: u64 = 4 << 30;
/// Largest object `cas cat` returns (it is verified in memory first).
pub const MAX_CAT_BYTES: u64 = 1 << 30;

/// Stores the bytes of `reader` under the data-directory lock (one unit of
/// work on the store's engine).
pub fn put(root: &Path, timeout: Duration, reader: &mut dyn Read) -> Result<PutOutcome> {
    Session::run_locked(root, timeout, |w| {
        w.dir().blobs()?.put_stream(reader, MAX_PUT_BYTES)
    })
}

/// Returns an object's bytes after verifying them.
pub fn cat(root: &Path, digest: &crate::wire::digest::Sha256Hex) -> Result<Vec<u8>> {
    let dir = DataDir::open(root)?;
    let blobs = dir.blobs()?;
    if !blobs.verify(digest, None)? {
        return Err(crate::Error::new(
            crate::Code::NotFound,
            format!("no object {digest}"),
        ));
    }
    blobs.get(digest, None, MAX_CAT_BYTES)
}

/// What `cas fsck` reports.
#[derive(Debug, Serialize)]
pub struct FsckOutput {
    /// Objects checked.
    pub checked: u64,
    /// Digests whose object does not match (repair: put the original bytes again).
    pub corrupt: Vec<String>,
    /// Orphan temp files left by interrupted writes.
    pub temp_files: u64,
}

/// Verifies every object (read-only).
pub fn fsck(root: &Path) -> Result<FsckOutput> {
    let dir = DataDir::open(root)?;
    let blobs = dir.blobs()?;
    let (checked, corrupt) = blobs.fsck()?;
    Ok(FsckOutput {
        checked,
        corrupt,
        temp_files: blobs.stats()?.temp_files,
    })
}

/// Moves every blob between the local CAS and a bucket, resumably
/// (`store::migrate_blobs`). The crash tests stop it with the test hook
/// `AGENT_TASK_TEST_CRASH_AT` at `migrate_copied_<n>`, `migrate_switched`
/// or `migrate_deleted_<n>`.
pub fn migrate(root: &Path, timeout: Duration, to: MigrateTo<'_>) -> Result<MigrateOutput> {
    let dir = DataDir::open(root)?;
    crate::store::migrate_blobs(&dir, to, timeout, &mut |s| match s {
        MigrateStep::Copied(n) => crate::testhooks::crash_point(&format!("migrate_copied_{n}")),
        MigrateStep::Switched => crate::testhooks::crash_point("migrate_switched"),
        MigrateStep::Deleted(n) => crate::testhooks::crash_point(&format!("migrate_deleted_{n}")),
    })
}
