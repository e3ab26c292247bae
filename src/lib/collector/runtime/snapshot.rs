//! The per-run snapshot directory: created exclusively, removed after the
//! run, leftovers of a crashed run removed.

use super::*;

/// Where a snapshot is materialised for one run. Dropping it (or
/// [`SnapshotDir::remove`]) removes the snapshot and its run directory.
pub struct SnapshotDir {
    run_dir: Option<PathBuf>,
    path: PathBuf,
    removed: bool,
}

impl SnapshotDir {
    /// The snapshot directory (it exists, empty, owner-private).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes it (and its run directory).
    pub fn remove(mut self) -> bool {
        self.removed = true;
        self.remove_now()
    }

    fn remove_now(&self) -> bool {
        let gone = remove_tree(&self.path);
        match &self.run_dir {
            Some(d) => remove_tree(d) && gone,
            None => gone,
        }
    }
}

impl Drop for SnapshotDir {
    fn drop(&mut self) {
        if !self.removed {
            self.remove_now();
        }
    }
}

/// Prefix of a run directory in the system temp directory.
pub(super) const RUN_DIR_PREFIX: &str = "agent-task-run-";

/// The run directory in the system temp directory of the snapshot that
/// `private` names (a dedicated sandbox uid's run).
pub(super) fn run_dir_of(private: &Path) -> Option<PathBuf> {
    let name = private.file_name()?.to_str()?;
    Some(std::env::temp_dir().join(format!("{RUN_DIR_PREFIX}{name}")))
}

/// Removes what a killed run left of the snapshot `private` would name:
/// `private` itself, or its run directory in the system temp directory
/// when that is a directory of ours (never a link, never another user's).
/// Only the holder of the execution's lock calls it.
pub fn remove_leftover(private: &Path) {
    use std::os::unix::fs::MetadataExt;
    if std::fs::symlink_metadata(private).is_ok_and(|m| m.is_dir()) {
        remove_tree(private);
    }
    if let Some(d) = run_dir_of(private)
        && std::fs::symlink_metadata(&d)
            .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::geteuid().as_raw())
    {
        remove_tree(&d);
    }
}

/// Makes a tree writable by its owner again and removes it.
pub fn remove_tree(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mut dirs = vec![p.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        let d = dirs[i].clone();
        if std::fs::symlink_metadata(&d).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700));
            if let Ok(rd) = std::fs::read_dir(&d) {
                for e in rd.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        dirs.push(e.path());
                    }
                }
            }
        }
        i += 1;
    }
    match std::fs::remove_dir_all(p) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// A fresh directory for a run's snapshot, created exclusively: an
/// existing directory is never removed and reused (it may be another
/// run's bind source); one in the way refuses the run. Without a
/// dedicated sandbox uid it is `private` itself (inside the collector
/// directory, in a parent the caller checked), made 0700 with `mkdir`.
/// Under a dedicated uid (a root collector) bubblewrap runs as that uid
/// and must reach the snapshot by path, which the owner-private collector
/// directory forbids: the snapshot then goes into a run directory made
/// with `mkdir` in the system temp directory (whose ancestors must be
/// trusted: root's or ours, not replaceable by others), traverse-only
/// (0711), named after `private`'s last component (one digest over the
/// execution and a random run id, so unguessable), the snapshot itself
/// under another random name.
pub fn snapshot_dir(limits: Option<&SandboxLimits>, private: &Path) -> Result<SnapshotDir> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let Some(run_dir) = limits
        .and_then(|l| l.run_as_uid)
        .and_then(|_| run_dir_of(private))
    else {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(private)
            .map_err(|e| Error::io("create the snapshot directory", private, e))?;
        let made = SnapshotDir {
            run_dir: None,
            path: private.to_path_buf(),
            removed: false,
        };
        crate::store::private_fs::check_private(private, crate::store::private_fs::Kind::Dir)?;
        return Ok(made);
    };
    crate::store::private_fs::check_trusted_ancestors(&run_dir)?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&run_dir)
        .map_err(|e| Error::io("create a run directory", &run_dir, e))?;
    let path = run_dir.join(crate::wire::random_id("s")?.replace(['_', '-'], ""));
    let made = SnapshotDir {
        run_dir: Some(run_dir.clone()),
        path: path.clone(),
        removed: false,
    };
    let md = std::fs::symlink_metadata(&run_dir).map_err(|e| Error::io("stat", &run_dir, e))?;
    if !md.is_dir() || md.uid() != rustix::process::geteuid().as_raw() {
        return Err(Error::internal("the run directory just made is not ours"));
    }
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o711))
        .map_err(|e| Error::io("chmod", &run_dir, e))?;
    // Made exclusively like the run directory, and not fsynced: the
    // snapshot is removed after the run and nothing durable names it.
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&path)
        .map_err(|e| Error::io("create the snapshot directory", &path, e))?;
    crate::store::private_fs::check_private(&path, crate::store::private_fs::Kind::Dir)?;
    Ok(made)
}
