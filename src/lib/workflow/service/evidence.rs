//! The evidence outbox for the face-level evidence writer
//! (`crate::evidence`): configure a repository's target, read the pending
//! rows, mark them done. The rows themselves are written by the import
//! and receipt transactions (`workflow::authority::evidence`).

use super::admin::with_write;
use crate::clock::Clock;
use crate::error::Result;
use crate::workflow::authority::{auth, evidence};
use serde_json::Value;
use std::path::Path;
use std::time::Duration;

pub use crate::workflow::authority::evidence::{MAX_TAIL_BYTES, OutboxRow, RECORD_SCHEMA, Target};

/// Fails with `not_found` unless `repo_id` is a registered repository
/// (read-only: the check before anything is created).
pub fn check_repository(root: &Path, repo_id: &str) -> Result<()> {
    let (_dir, at) = auth::open_read(root)?;
    crate::workflow::authority::repository(&at, repo_id).map(|_| ())
}

/// `evidence configure`'s write: `repo_id`'s target.
pub fn configure(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    repo_id: &str,
    evidence_dir: &Path,
    collection_id: &str,
) -> Result<Target> {
    let staged = evidence::configure(repo_id, evidence_dir, collection_id)?;
    with_write(root, timeout, clock, staged)
}

/// Up to `limit` pending outbox rows after `after_seq`, oldest first.
pub fn pending(root: &Path, after_seq: i64, limit: u32) -> Result<Vec<OutboxRow>> {
    let (_dir, at) = auth::open_read(root)?;
    evidence::pending(&at, after_seq, limit)
}

/// Whether any evidence target is configured.
pub fn has_targets(root: &Path) -> Result<bool> {
    let (_dir, at) = auth::open_read(root)?;
    Ok(!evidence::targets(&at)?.is_empty())
}

/// Marks rows done, each with the record id it became.
pub fn mark_done(
    root: &Path,
    timeout: Duration,
    clock: &dyn Clock,
    done: Vec<(i64, String)>,
) -> Result<u64> {
    if done.is_empty() {
        return Ok(0);
    }
    with_write(root, timeout, clock, evidence::mark_done(done))
}

/// The targets and the outbox's pending and done counts.
pub fn status(root: &Path) -> Result<Value> {
    let (_dir, at) = auth::open_read(root)?;
    evidence::status(&at)
}
