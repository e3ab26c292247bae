//! Owner-private files and directories: 0700 directories, 0600 files, no
//! symlinks where a path is trusted, and fsync of bytes and directories.

use crate::error::{Code, Error, Result};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Sets the process umask to 077 so that nothing the process creates is
/// readable by group or other, whatever a later call forgets.
#[allow(unsafe_code)]
pub fn set_private_umask() {
    // SAFETY: umask(2) only changes the calling process's file-mode mask; it
    // has no memory-safety preconditions.
    unsafe {
        libc::umask(0o077);
    }
}

/// Makes `cmd`'s child run under the file-mode mask `mask` instead of the
/// process's private one (077): what `land` uses for the git processes
/// that write into an operator's repository, so new refs, objects and
/// notes get the modes git would give them there.
#[allow(unsafe_code)]
pub fn child_umask(cmd: &mut std::process::Command, mask: u32) {
    use std::os::unix::process::CommandExt;
    let mask = (mask & 0o777) as libc::mode_t;
    // SAFETY: the closure runs in the child between fork and exec and calls
    // only umask(2), which is async-signal-safe, allocates nothing and
    // cannot fail.
    unsafe {
        cmd.pre_exec(move || {
            libc::umask(mask);
            Ok(())
        });
    }
}

/// The effective uid, asked once: this binary never changes it, and a
/// long-lived `serve` checks a file's owner on every read.
fn current_uid() -> u32 {
    static UID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *UID.get_or_init(|| {
        #[allow(unsafe_code)]
        // SAFETY: geteuid(2) cannot fail and touches no memory.
        unsafe {
            libc::geteuid()
        }
    })
}

/// What a trusted path must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A directory with mode 0700 (no group/other bits).
    Dir,
    /// A regular file with no group/other bits.
    File,
}

/// Checks that `path` exists, is not a symlink, is of `kind`, is owned by the
/// current user and has no group or other permission bits. Returns `Ok(false)`
/// when the path does not exist.
pub fn check_private(path: &Path, kind: Kind) -> Result<bool> {
    let md = match fs::symlink_metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(Error::io("stat", path, e)),
    };
    check_metadata(path, &md, kind)?;
    Ok(true)
}

/// The identity (device, inode) of a file under the rule of
/// [`check_private`]; `Ok(None)` when it does not exist. A long-lived
/// connection compares it with the identity it was opened on, so that a
/// database file replaced or removed behind it is reopened, never served
/// stale.
pub fn private_file_id(path: &Path) -> Result<Option<(u64, u64)>> {
    let md = match fs::symlink_metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("stat", path, e)),
    };
    check_metadata(path, &md, Kind::File)?;
    Ok(Some((md.dev(), md.ino())))
}

/// The checks of [`check_private`] on metadata already in hand (from
/// `lstat`, or from `fstat` on an open descriptor).
fn check_metadata(path: &Path, md: &fs::Metadata, kind: Kind) -> Result<()> {
    let ok_type = match kind {
        Kind::Dir => md.is_dir(),
        Kind::File => md.is_file(),
    };
    // The common case allocates nothing (a `serve` request checks a few
    // paths): the path is rendered only for a refusal.
    if ok_type && md.uid() == current_uid() && md.permissions().mode() & 0o077 == 0 {
        return Ok(());
    }
    let shown = path.display().to_string();
    if md.file_type().is_symlink() {
        return Err(Error::new(
            Code::SymlinkRefused,
            format!("{shown} is a symbolic link; agent-task refuses to follow links to its stores"),
        )
        .with("path", shown.clone())
        .with(
            "fix",
            format!("replace the link with a real {}", kind_word(kind)),
        ));
    }
    if !ok_type {
        return Err(Error::new(
            Code::Config,
            format!("{shown} is not a {}", kind_word(kind)),
        )
        .with("path", shown));
    }
    if md.uid() != current_uid() {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!(
                "{shown} is owned by uid {}, not by the current user",
                md.uid()
            ),
        )
        .with("path", shown.clone())
        .with("fix", format!("chown {} {shown}", current_uid())));
    }
    let mode = md.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        let want = if kind == Kind::Dir { "700" } else { "600" };
        return Err(Error::new(
            Code::InsecurePermissions,
            format!("{shown} has mode {mode:04o}; group and other must have no access"),
        )
        .with("path", shown.clone())
        .with("mode", format!("{mode:04o}"))
        .with("fix", format!("chmod {want} {shown}")));
    }
    Ok(())
}

/// Opens an owner-private regular file read-only under the rule of
/// [`check_private`] (not a symlink, owned by the current user, no group
/// or other bits), checked on the open descriptor itself so that nothing
/// can be swapped between the check and the open. `O_NONBLOCK`: a FIFO
/// in its place is refused, never waited on. `Ok(None)`: no such file.
pub fn open_private_read(path: &Path) -> Result<Option<File>> {
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            let shown = path.display().to_string();
            return Err(Error::new(
                Code::SymlinkRefused,
                format!(
                    "{shown} is a symbolic link; agent-task refuses to follow links to its secrets"
                ),
            )
            .with("path", shown)
            .with("fix", "replace the link with a real file (mode 0600)"));
        }
        Err(e) => return Err(Error::io("open", path, e)),
    };
    let md = f.metadata().map_err(|e| Error::io("stat", path, e))?;
    check_metadata(path, &md, Kind::File)?;
    Ok(Some(f))
}

/// Checks every directory above `path` (not `path` itself): none may be a
/// symbolic link, each must be owned by root or the current user, and none
/// may be writable by group or other unless it is root-owned with the
/// sticky bit (as `/tmp` is: others cannot rename or remove what they do
/// not own there). Anyone who could replace a parent could swap a store or
/// key underneath; refusing fails closed on a misconfigured deployment.
pub fn check_trusted_ancestors(path: &Path) -> Result<()> {
    let abs = std::path::absolute(path).map_err(|e| Error::io("resolve", path, e))?;
    let me = current_uid();
    let mut cur = abs.parent();
    while let Some(dir) = cur {
        let md = fs::symlink_metadata(dir).map_err(|e| Error::io("stat", dir, e))?;
        let shown = dir.display().to_string();
        if md.file_type().is_symlink() {
            return Err(Error::new(
                Code::SymlinkRefused,
                format!(
                    "{shown}, a parent of {}, is a symbolic link; name the real path",
                    abs.display()
                ),
            )
            .with("path", shown));
        }
        if !md.is_dir() {
            return Err(
                Error::new(Code::Config, format!("{shown} is not a directory")).with("path", shown),
            );
        }
        if md.uid() != 0 && md.uid() != me {
            return Err(Error::new(
                Code::InsecurePermissions,
                format!(
                    "{shown}, a parent of {}, is owned by uid {}: that user could replace what is below it",
                    abs.display(),
                    md.uid()
                ),
            )
            .with("path", shown)
            .with("fix", "keep the collector and data directories under directories owned by root or by you"));
        }
        let mode = md.permissions().mode() & 0o7777;
        let sticky_root = mode & 0o1000 != 0 && md.uid() == 0;
        if mode & 0o022 != 0 && !sticky_root {
            return Err(Error::new(
                Code::InsecurePermissions,
                format!(
                    "{shown}, a parent of {}, has mode {mode:04o}: others could replace what is below it",
                    abs.display()
                ),
            )
            .with("path", shown.clone())
            .with("mode", format!("{mode:04o}"))
            .with("fix", format!("chmod go-w {shown}")));
        }
        cur = dir.parent();
    }
    Ok(())
}

fn kind_word(kind: Kind) -> &'static str {
    match kind {
        Kind::Dir => "directory",
        Kind::File => "file",
    }
}

/// Creates `path` as a 0700 directory if it is missing (its parent must
/// exist), then checks it.
pub fn ensure_private_dir(path: &Path) -> Result<()> {
    if !check_private(path, Kind::Dir)? {
        match fs::DirBuilder::new().mode(0o700).create(path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(Error::io("create directory", path, e)),
        }
        check_private(path, Kind::Dir)?;
        if let Some(parent) = path.parent() {
            sync_dir(parent)?;
        }
    }
    Ok(())
}

/// Opens (creating if missing) a 0600 file for reading and writing without
/// following a symlink, and checks its permissions.
pub fn open_private_rw(path: &Path) -> Result<File> {
    check_private(path, Kind::File)?;
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io("open", path, e))?;
    check_private(path, Kind::File)?;
    Ok(f)
}

/// Opens an existing file read-only without following a symlink.
pub fn open_nofollow_read(path: &Path) -> Result<File> {
    OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                Error::new(
                    Code::SymlinkRefused,
                    format!("{} is a symbolic link", path.display()),
                )
                .with("path", path.display().to_string())
            } else if e.kind() == std::io::ErrorKind::NotFound {
                Error::new(Code::NotFound, format!("{} does not exist", path.display()))
                    .with("path", path.display().to_string())
            } else {
                Error::io("open", path, e)
            }
        })
}

/// fsyncs a directory so that entries created or renamed in it are durable.
pub fn sync_dir(path: &Path) -> Result<()> {
    let d = File::open(path).map_err(|e| Error::io("open directory", path, e))?;
    d.sync_all()
        .map_err(|e| Error::io("fsync directory", path, e))
}

/// Flushes the whole file system holding `path` (`syncfs(2)`): every dirty
/// file, inode and directory entry on it becomes durable.
pub fn sync_filesystem(path: &Path) -> Result<()> {
    use std::os::fd::AsRawFd;
    let d = File::open(path).map_err(|e| Error::io("open directory", path, e))?;
    #[allow(unsafe_code)]
    // SAFETY: syncfs(2) takes a valid open descriptor (borrowed from `d`,
    // alive for the call) and touches no memory of this process.
    let rc = unsafe { libc::syncfs(d.as_raw_fd()) };
    if rc != 0 {
        return Err(Error::io("syncfs", path, std::io::Error::last_os_error()));
    }
    Ok(())
}

/// Opens an owner-private directory (the rule of [`check_private`],
/// checked on the open descriptor: never a symlink, the caller's, no group
/// or other bits), e.g. to hold an advisory lock on it.
pub fn open_private_dir(path: &Path) -> Result<File> {
    let f = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| {
            if matches!(e.raw_os_error(), Some(libc::ELOOP) | Some(libc::ENOTDIR)) {
                // Report what is there (a link, a file) as `check_private` does.
                match check_private(path, Kind::Dir) {
                    Err(c) => c,
                    Ok(_) => Error::io("open directory", path, e),
                }
            } else {
                Error::io("open directory", path, e)
            }
        })?;
    let md = f.metadata().map_err(|e| Error::io("stat", path, e))?;
    check_metadata(path, &md, Kind::Dir)?;
    Ok(f)
}

/// The name prefix of the temp files this module's writers create next to
/// their target ([`create_exclusive`], [`write_atomic`],
/// [`replace_unsynced`]). A writer killed between creating one and
/// renaming it leaves it behind: [`sweep_temp_files`] removes such orphans.
pub const TEMP_PREFIX: &str = ".tmp-";

/// Removes orphaned temp files from `dir`: the regular files whose names
/// start with `prefix` (never a link, a directory or another name) last
/// modified at least `min_age` before `now` (a modification time after
/// `now` counts as no age). `Duration::ZERO` removes every one, which is
/// right only where the caller excludes every writer of `dir` (it holds
/// the lock they all take); otherwise the age spares a write in progress.
/// A missing `dir`, or a file that vanished meanwhile, is not an error.
/// Returns how many were removed. Used for this module's writers
/// ([`TEMP_PREFIX`]) and the CAS's puts.
pub fn sweep_temp_files(
    dir: &Path,
    prefix: &str,
    now: std::time::SystemTime,
    min_age: std::time::Duration,
) -> Result<u64> {
    let entries = match fs::read_dir(dir) {
        Ok(it) => it,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io("list", dir, e)),
    };
    let mut removed = 0;
    for e in entries {
        let e = e.map_err(|e| Error::io("list", dir, e))?;
        if !e
            .file_name()
            .as_encoded_bytes()
            .starts_with(prefix.as_bytes())
        {
            continue;
        }
        // `DirEntry::metadata` does not follow a link.
        let md = match e.metadata() {
            Ok(md) => md,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => continue,
            Err(err) => return Err(Error::io("stat", &e.path(), err)),
        };
        let age = md
            .modified()
            .ok()
            .and_then(|m| now.duration_since(m).ok())
            .unwrap_or_default();
        if md.file_type().is_file() && age >= min_age {
            match fs::remove_file(e.path()) {
                Ok(()) => removed += 1,
                Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
                Err(err) => return Err(Error::io("remove", &e.path(), err)),
            }
        }
    }
    Ok(removed)
}

/// Creates `path` with `bytes`, exclusively: a 0600 temp file in the same
/// directory, fsync, then a link that fails if `path` exists (never
/// replacing it), fsync the directory. `Ok(false)`: `path` already
/// existed and nothing was written.
pub fn create_exclusive(path: &Path, bytes: &[u8]) -> Result<bool> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::internal(format!("{} has no parent", path.display())))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|e| Error::io("create temp file in", dir, e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io("write", tmp.path(), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io("fsync", tmp.path(), e))?;
    match tmp.persist_noclobber(path) {
        Ok(_) => {}
        Err(e) if e.error.kind() == std::io::ErrorKind::AlreadyExists => return Ok(false),
        Err(e) => return Err(Error::io("create", path, e.error)),
    }
    sync_dir(dir)?;
    Ok(true)
}

/// Writes `bytes` to `path` atomically: a 0600 temp file in the same
/// directory, fsync, rename over the target, fsync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = replace_unsynced(path, bytes)?;
    sync_dir(dir)
}

/// [`write_atomic`] without the directory fsync: the bytes are durable
/// before the rename, so a crash leaves the old file or the new one,
/// never a torn one, but the rename itself may be lost. Only for state
/// whose previous value is an acceptable outcome of a crash (the Stop
/// hook's continuation counter). Returns the parent directory.
pub fn replace_unsynced<'p>(path: &'p Path, bytes: &[u8]) -> Result<&'p Path> {
    let dir = path
        .parent()
        .ok_or_else(|| Error::internal(format!("{} has no parent", path.display())))?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMP_PREFIX)
        .permissions(fs::Permissions::from_mode(0o600))
        .tempfile_in(dir)
        .map_err(|e| Error::io("create temp file in", dir, e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io("write", tmp.path(), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io("fsync", tmp.path(), e))?;
    tmp.persist(path)
        .map_err(|e| Error::io("rename into", path, e.error))?;
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_removes_only_old_temp_files_of_the_writers() {
        let t = tempfile::tempdir().expect("tempdir");
        let d = t.path();
        let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        let plant = |name: &str, old: bool| {
            let p = d.join(name);
            let f = File::create(&p).expect("create");
            if old {
                f.set_modified(hour_ago).expect("mtime");
            }
            p
        };
        let old = plant(".tmp-old", true);
        let young = plant(".tmp-young", false);
        let other = plant("kept", true);
        let near = plant(".tmpx", true);
        fs::create_dir(d.join(".tmp-dir")).expect("dir");
        std::os::unix::fs::symlink(&other, d.join(".tmp-link")).expect("symlink");
        let sweep = |age| {
            sweep_temp_files(d, TEMP_PREFIX, std::time::SystemTime::now(), age).expect("sweep")
        };
        let age = std::time::Duration::from_secs(600);
        assert_eq!(sweep(age), 1);
        assert!(!old.exists());
        assert!(young.exists() && other.exists() && near.exists());
        assert!(d.join(".tmp-dir").is_dir());
        assert!(fs::symlink_metadata(d.join(".tmp-link")).is_ok());
        // With no age (the caller excludes every writer), the young one too;
        // never the link, the directory or another name.
        assert_eq!(sweep(std::time::Duration::ZERO), 1);
        assert!(!young.exists());
        assert!(other.exists() && near.exists() && d.join(".tmp-dir").is_dir());
        assert!(fs::symlink_metadata(d.join(".tmp-link")).is_ok());
        let now = std::time::SystemTime::now();
        assert_eq!(
            sweep_temp_files(&d.join("missing"), TEMP_PREFIX, now, age).expect("missing"),
            0
        );
    }

    #[test]
    fn create_exclusive_never_replaces_and_private_dirs_open_checked() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("f");
        assert!(create_exclusive(&p, b"first").expect("create"));
        assert!(!create_exclusive(&p, b"second").expect("exists"));
        assert_eq!(fs::read(&p).expect("read"), b"first");
        assert_eq!(
            fs::metadata(&p).expect("md").permissions().mode() & 0o777,
            0o600
        );
        let d = t.path().join("d");
        ensure_private_dir(&d).expect("dir");
        open_private_dir(&d).expect("open");
        let l = t.path().join("l");
        std::os::unix::fs::symlink(&d, &l).expect("symlink");
        assert_eq!(
            open_private_dir(&l).expect_err("link").code(),
            Code::SymlinkRefused
        );
        assert_eq!(open_private_dir(&p).expect_err("file").code(), Code::Config);
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755)).expect("chmod");
        assert_eq!(
            open_private_dir(&d).expect_err("0755").code(),
            Code::InsecurePermissions
        );
    }

    #[test]
    fn detects_symlink_and_loose_modes() {
        let t = tempfile::tempdir().expect("tempdir");
        let d = t.path().join("d");
        ensure_private_dir(&d).expect("create");
        assert!(check_private(&d, Kind::Dir).expect("ok"));
        fs::set_permissions(&d, fs::Permissions::from_mode(0o750)).expect("chmod");
        assert_eq!(
            check_private(&d, Kind::Dir).map_err(|e| e.code()).err(),
            Some(Code::InsecurePermissions)
        );
        let l = t.path().join("l");
        std::os::unix::fs::symlink(&d, &l).expect("symlink");
        assert_eq!(
            check_private(&l, Kind::Dir).map_err(|e| e.code()).err(),
            Some(Code::SymlinkRefused)
        );
        assert!(!check_private(&t.path().join("missing"), Kind::File).expect("ok"));
    }

    #[test]
    fn open_private_read_refuses_links_loose_modes_and_fifos() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("secret");
        write_atomic(&p, b"s").expect("write");
        assert!(open_private_read(&p).expect("ok").is_some());
        assert!(
            open_private_read(&t.path().join("missing"))
                .expect("ok")
                .is_none()
        );
        fs::set_permissions(&p, fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = open_private_read(&p).expect_err("0644");
        assert_eq!(e.code(), Code::InsecurePermissions);
        assert!(
            e.details().expect("d")["fix"]
                .as_str()
                .expect("fix")
                .starts_with("chmod 600")
        );
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).expect("chmod");
        let l = t.path().join("link");
        std::os::unix::fs::symlink(&p, &l).expect("symlink");
        let e = open_private_read(&l).expect_err("link");
        assert_eq!(e.code(), Code::SymlinkRefused);
        assert!(e.details().expect("d").contains_key("fix"));
        let fifo = t.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        assert_eq!(
            open_private_read(&fifo).expect_err("fifo").code(),
            Code::Config
        );
    }

    #[test]
    fn ancestors_must_not_be_writable_by_others_or_links() {
        let t = tempfile::tempdir().expect("tempdir");
        let d = t.path().join("a/b");
        fs::create_dir_all(&d).expect("mkdir");
        check_trusted_ancestors(&d.join("c")).expect("a private tree under /tmp is fine");
        fs::set_permissions(t.path().join("a"), fs::Permissions::from_mode(0o777)).expect("chmod");
        assert_eq!(
            check_trusted_ancestors(&d.join("c"))
                .map_err(|e| e.code())
                .err(),
            Some(Code::InsecurePermissions)
        );
        fs::set_permissions(t.path().join("a"), fs::Permissions::from_mode(0o1777)).expect("chmod");
        // Sticky and world-writable is trusted only when root owns it.
        let sticky = check_trusted_ancestors(&d.join("c"))
            .map_err(|e| e.code())
            .err();
        if current_uid() == 0 {
            assert_eq!(sticky, None);
        } else {
            assert_eq!(sticky, Some(Code::InsecurePermissions));
        }
        fs::set_permissions(t.path().join("a"), fs::Permissions::from_mode(0o700)).expect("chmod");
        std::os::unix::fs::symlink(&d, t.path().join("l")).expect("symlink");
        assert_eq!(
            check_trusted_ancestors(&t.path().join("l/c"))
                .map_err(|e| e.code())
                .err(),
            Some(Code::SymlinkRefused)
        );
    }

    #[test]
    fn atomic_write_is_private() {
        let t = tempfile::tempdir().expect("tempdir");
        let p = t.path().join("f");
        write_atomic(&p, b"hello").expect("write");
        assert_eq!(fs::read(&p).expect("read"), b"hello");
        assert_eq!(
            fs::metadata(&p).expect("md").permissions().mode() & 0o777,
            0o600
        );
    }
}
