//! Agent integration: the read-only Stop hooks (`task-stop`,
//! `task-codex-stop`), their continuation counter, `install-stop` (hook
//! registration in `.claude/settings.local.json` / Codex's `hooks.json`) and
//! `install-stop --managed` (the machine-wide hook in the agents' managed
//! configuration) and `init-repo` (the managed "Workflow tasks" instruction block).
//! See `docs/hooks.md`.

pub mod counter;
pub mod init_repo;
pub mod install;
pub mod managed;
pub mod stop;

use crate::error::{Code, Error, Result};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// Largest project file (settings, instructions) read or rewritten.
pub const MAX_PROJECT_FILE: u64 = 1024 * 1024;

/// Reads a project file that may be absent; refuses symlinks and files
/// over [`MAX_PROJECT_FILE`].
pub(crate) fn read_project_file(path: &Path) -> Result<Option<String>> {
    let md = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("stat", path, e)),
    };
    if md.file_type().is_symlink() {
        return Err(Error::new(
            Code::SymlinkRefused,
            format!("{} is a symbolic link", path.display()),
        ));
    }
    if !md.is_file() {
        return Err(Error::new(
            Code::InvalidInput,
            format!("{} is not a regular file", path.display()),
        ));
    }
    if md.len() > MAX_PROJECT_FILE {
        return Err(Error::new(
            Code::TooLarge,
            format!("{} is over 1 MiB", path.display()),
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    String::from_utf8(bytes).map(Some).map_err(|_| {
        Error::new(
            Code::InvalidInput,
            format!("{} is not UTF-8", path.display()),
        )
    })
}

/// Writes a project file atomically (temp file in the same directory,
/// fsync, rename), keeping an existing file's mode; a new file is 0644
/// (project files are shared, unlike the data directory). Parent
/// directories are created; a symlinked parent is refused.
pub(crate) fn write_project_file(workspace: &Path, rel: &str, text: &str) -> Result<()> {
    let path = workspace.join(rel);
    let mut cur = workspace.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for p in &parts[..parts.len().saturating_sub(1)] {
        cur.push(p);
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(Error::new(
                    Code::SymlinkRefused,
                    format!("{} is a symbolic link", cur.display()),
                ));
            }
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::new(
                    Code::InvalidInput,
                    format!("{} is not a directory", cur.display()),
                ));
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&cur).map_err(|e| Error::io("create", &cur, e))?;
                std::fs::set_permissions(&cur, std::fs::Permissions::from_mode(0o755))
                    .map_err(|e| Error::io("chmod", &cur, e))?;
            }
            Err(e) => return Err(Error::io("stat", &cur, e)),
        }
    }
    let mode = match std::fs::symlink_metadata(&path) {
        Ok(m) => m.permissions().mode() & 0o7777,
        Err(_) => 0o644,
    };
    let dir = path
        .parent()
        .ok_or_else(|| Error::internal("project file has no parent"))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(".agent-task-")
        .permissions(std::fs::Permissions::from_mode(mode))
        .tempfile_in(dir)
        .map_err(|e| Error::io("create temp file in", dir, e))?;
    tmp.write_all(text.as_bytes())
        .map_err(|e| Error::io("write", tmp.path(), e))?;
    // The mode asked for, whatever the process umask (077) took from it.
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .map_err(|e| Error::io("chmod", tmp.path(), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io("fsync", tmp.path(), e))?;
    tmp.persist(&path)
        .map_err(|e| Error::io("rename into", &path, e.error))?;
    crate::store::private_fs::sync_dir(dir)
}

/// Checks that `workspace` is an existing directory (not a symlink).
pub(crate) fn check_workspace(workspace: &Path) -> Result<()> {
    match std::fs::symlink_metadata(workspace) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(m) if m.file_type().is_symlink() => Err(Error::new(
            Code::SymlinkRefused,
            format!("workspace {} is a symbolic link", workspace.display()),
        )),
        Ok(_) => Err(Error::new(
            Code::InvalidInput,
            format!("workspace {} is not a directory", workspace.display()),
        )),
        Err(e) => Err(Error::io("stat", workspace, e)),
    }
}
