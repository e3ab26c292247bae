//! The Stop hook's continuation counter: how many consecutive times the
//! hook has blocked one agent session on one Change. It lives outside
//! every store, owner-private: `$XDG_STATE_HOME/agent-task/stop-hooks/`
//! (else `$HOME/.local/state/agent-task/stop-hooks/`), directory 0700,
//! one 0600 file per (session, change) named by
//! `domain_digest("agent-task.stop-counter.v1", session || 0x00 || change)`
//! holding the count as decimal text. After [`LIMIT`] consecutive blocks
//! the hook ends continuation without running qualification.

use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use std::path::{Path, PathBuf};

/// Consecutive blocks after which the hook lets the agent stop.
pub const LIMIT: u32 = 8;
const DOMAIN: &str = "agent-task.stop-counter.v1";

/// What reading the counter found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// Blocks so far (0 when absent).
    Count(u32),
    /// The file exists but does not hold a count.
    Unreadable,
}

/// The counter of one session and Change.
#[derive(Debug)]
pub struct Counter {
    path: PathBuf,
}

fn state_dir() -> Result<PathBuf> {
    let nonempty = |k: &str| {
        crate::env::var_os(k)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    nonempty("XDG_STATE_HOME")
        .or_else(|| nonempty("HOME").map(|h| h.join(".local/state")))
        .map(|p| p.join("agent-task").join("stop-hooks"))
        .ok_or_else(|| Error::new(Code::Config, "neither XDG_STATE_HOME nor HOME is set"))
}

impl Counter {
    /// The counter for `session` and `change` under the default state dir.
    pub fn for_session(session: &str, change: &str) -> Result<Counter> {
        Self::in_dir(&state_dir()?, session, change)
    }

    /// The counter under `dir`.
    pub fn in_dir(dir: &Path, session: &str, change: &str) -> Result<Counter> {
        let mut key = Vec::with_capacity(session.len() + change.len() + 1);
        key.extend_from_slice(session.as_bytes());
        key.push(0);
        key.extend_from_slice(change.as_bytes());
        let name = crate::wire::digest::domain_digest(DOMAIN, &key);
        Ok(Counter {
            path: dir.join(name.as_str()),
        })
    }

    /// Reads the count. A missing file is 0; an unreadable one is
    /// [`Reading::Unreadable`]; an I/O error or an unsafe directory is an
    /// error.
    pub fn read(&self) -> Result<Reading> {
        let Some(dir) = self.path.parent() else {
            return Err(Error::internal("counter path has no parent"));
        };
        if !private_fs::check_private(dir, private_fs::Kind::Dir)? {
            return Ok(Reading::Count(0));
        }
        match private_fs::check_private(&self.path, private_fs::Kind::File) {
            Ok(false) => return Ok(Reading::Count(0)),
            Ok(true) => {}
            Err(_) => return Ok(Reading::Unreadable),
        }
        let text = match std::fs::read(&self.path) {
            Ok(b) if b.len() <= 16 => b,
            Ok(_) => return Ok(Reading::Unreadable),
            Err(e) => return Err(Error::io("read", &self.path, e)),
        };
        match std::str::from_utf8(&text)
            .ok()
            .and_then(|t| t.trim().parse::<u32>().ok())
        {
            Some(n) => Ok(Reading::Count(n)),
            None => Ok(Reading::Unreadable),
        }
    }

    /// Writes the count (atomic, 0600, directory 0700). The new file's
    /// bytes are fsynced before the rename, so a crash never leaves an
    /// unreadable counter; the directory is not, so a crash may keep the
    /// previous count, which only grants one more continuation. Every
    /// block writes the counter: a directory fsync would be a journal
    /// commit on each of the agent's stops. A hook killed between the
    /// temp file and the rename leaves the temp file: the next write
    /// removes those an hour old (hooks of other sessions write here
    /// without a common lock, so a younger one may be in progress).
    pub fn write(&self, n: u32) -> Result<()> {
        let Some(dir) = self.path.parent() else {
            return Err(Error::internal("counter path has no parent"));
        };
        if let Some(p) = dir.parent() {
            std::fs::create_dir_all(p).map_err(|e| Error::io("create", p, e))?;
        }
        private_fs::ensure_private_dir(dir)?;
        // Best effort: an orphan that cannot be removed is harmless.
        let _ = private_fs::sweep_temp_files(
            dir,
            private_fs::TEMP_PREFIX,
            std::time::SystemTime::now(),
            crate::store::TEMP_SWEEP_AGE,
        );
        private_fs::replace_unsynced(&self.path, n.to_string().as_bytes()).map(|_| ())
    }

    /// Forgets the count (a passing stop).
    pub fn reset(&self) -> Result<()> {
        match std::fs::remove_file(&self.path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("remove", &self.path, e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_removes_the_hour_old_temp_files_of_killed_writes() {
        let t = tempfile::tempdir().expect("tmp");
        let dir = t.path().join("stop-hooks");
        let c = Counter::in_dir(&dir, "s1", "ch").expect("c");
        c.write(1).expect("w");
        let old = dir.join(".tmp-k1ll3d");
        let young = dir.join(".tmp-w0rk1n");
        std::fs::File::create(&old)
            .expect("create")
            .set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(7200))
            .expect("mtime");
        std::fs::File::create(&young).expect("create");
        c.write(2).expect("w");
        assert!(!old.exists() && young.exists());
        assert_eq!(c.read().expect("r"), Reading::Count(2));
    }

    #[test]
    fn counts_resets_and_detects_garbage() {
        let t = tempfile::tempdir().expect("tmp");
        let dir = t.path().join("state/stop-hooks");
        let c = Counter::in_dir(&dir, "s1", "ch").expect("c");
        assert_eq!(c.read().expect("r"), Reading::Count(0));
        c.write(3).expect("w");
        assert_eq!(c.read().expect("r"), Reading::Count(3));
        let other = Counter::in_dir(&dir, "s2", "ch").expect("c");
        assert_eq!(other.read().expect("r"), Reading::Count(0));
        std::fs::write(&c.path, "x").expect("w");
        assert_eq!(c.read().expect("r"), Reading::Unreadable);
        c.reset().expect("reset");
        assert_eq!(c.read().expect("r"), Reading::Count(0));
    }
}
