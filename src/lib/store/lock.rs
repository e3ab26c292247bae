//! The data-directory advisory lock.
//!
//! Every mutating command holds it for its whole critical section. The wait
//! is bounded: after the timeout the command fails with `busy` and does
//! nothing — it never hangs and never replays. The lock is a separate file
//! (`DATA_DIR/lock`), never a database file: SQLite's POSIX locks are lost
//! when a process closes any descriptor of the database.

use super::private_fs;
use crate::error::{Code, Error, Result};
use std::fs::{File, TryLockError};
use std::path::Path;
use std::time::{Duration, Instant};

/// Proof that the data-directory lock is held. Dropping it releases the lock.
#[derive(Debug)]
pub struct DirLock {
    _file: File,
}

/// Default bounded wait for the lock.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(5000);

/// Takes the exclusive lock on `path`, waiting at most `timeout`.
#[allow(clippy::disallowed_methods)] // `store::lock` owns file locks.
pub(crate) fn acquire(path: &Path, timeout: Duration) -> Result<DirLock> {
    let file = private_fs::open_private_rw(path)?;
    let start = Instant::now();
    let mut pause = Duration::from_micros(500);
    loop {
        match file.try_lock() {
            Ok(()) => return Ok(DirLock { _file: file }),
            Err(TryLockError::WouldBlock) => {}
            Err(TryLockError::Error(e)) => return Err(Error::io("lock", path, e)),
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(Error::new(
                Code::Busy,
                format!(
                    "another agent-task process holds the data-directory lock; gave up after {} ms",
                    timeout.as_millis()
                ),
            )
            .with("lock", path.display().to_string())
            .with("timeout_ms", timeout.as_millis() as u64));
        }
        std::thread::sleep(pause.min(timeout - waited));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}
