//! Opening one file beneath a trusted root directory without following a
//! link anywhere on the way, without blocking, and without a window
//! between "check" and "open" for a racing rename to exploit.
//!
//! The root itself is opened by its canonical path with
//! `RESOLVE_NO_SYMLINKS` (a root that turned into a link is refused); the
//! file is then opened *relative to the root's descriptor* with `openat2`
//! and `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`, so
//! the kernel resolves every component and refuses any link and any `..`
//! that would leave the root, atomically. Where `openat2` is missing
//! (Linux before 5.6, or a seccomp filter that answers `ENOSYS`/`EPERM`),
//! the same walk is done one component at a time with `O_NOFOLLOW`
//! descriptors. The final open uses `O_NONBLOCK | O_NOCTTY`, so a FIFO or
//! a device node never blocks the caller; the descriptor is then `fstat`ed
//! and must be a regular file with exactly one link. A hard link is the
//! file itself, not a pointer to it, so no name resolution can tell that
//! a name inside the root is also a name outside it: a file with a second
//! name anywhere is refused, counted on the opened descriptor (never by
//! name first, which a racing `link`/`rename` could change in between).
//!
//! Every failure is the same [`Refused`]: the caller turns it into one
//! uniform error, so nothing tells "missing" from "outside the root" from
//! "not a regular file" from "permission denied".

use rustix::fs::{Mode, OFlags, ResolveFlags};
use rustix::io::Errno;
use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path, PathBuf};

/// The one refusal: the path does not name a readable regular file beneath
/// the root without links (symbolic or hard). Deliberately carries no cause.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refused;

/// How many times an `EAGAIN` from `openat2` (a rename raced a `..`
/// check) is retried before refusing.
const EAGAIN_RETRIES: usize = 8;

/// Which resolution strategy to use (tests force the fallback).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// `openat2` when the kernel has it, else the component walk.
    Auto,
    /// Always the `O_NOFOLLOW` component walk.
    Walk,
}

/// An opened regular file and the path it was opened at (the root joined
/// with the lexically normalised relative path: exact, because no link
/// was followed and every `..` was resolved against a real directory).
#[derive(Debug)]
pub struct Opened {
    /// The open file (read-only, non-blocking).
    pub file: File,
    /// Its metadata, from `fstat` on the descriptor.
    pub metadata: std::fs::Metadata,
    /// The absolute path of the file.
    pub path: PathBuf,
}

/// Opens `rel` (a relative path) beneath the directory `root` (an
/// absolute, canonical path).
pub fn open_beneath(root: &Path, rel: &Path, strategy: Strategy) -> Result<Opened, Refused> {
    if !root.is_absolute() || rel.is_absolute() || !names_an_entry(rel) {
        return Err(Refused);
    }
    let normalised = normalise(rel).ok_or(Refused)?;
    let fd = match strategy {
        Strategy::Auto => match open_openat2(root, rel) {
            Ok(fd) => fd,
            Err(Fallback::Unsupported) => open_walk(root, rel)?,
            Err(Fallback::Refused) => return Err(Refused),
        },
        Strategy::Walk => open_walk(root, rel)?,
    };
    let file = File::from(fd);
    let metadata = file.metadata().map_err(|_| Refused)?;
    if !metadata.file_type().is_file() || std::os::unix::fs::MetadataExt::nlink(&metadata) != 1 {
        return Err(Refused);
    }
    Ok(Opened {
        file,
        metadata,
        path: root.join(normalised),
    })
}

/// Whether the last `/`-separated segment of `rel` is a name (not empty,
/// `.` or `..`): `Path::components` drops a trailing `/` or `/.`, which the
/// kernel would treat as "must be a directory".
pub fn names_an_entry(rel: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let last = rel.as_os_str().as_bytes().rsplit(|b| *b == b'/').next();
    !matches!(last, None | Some(b"" | b"." | b".."))
}

/// Lexical normalisation of a relative path (`.` dropped, `..` pops);
/// `None` when a `..` would climb above the start.
fn normalise(rel: &Path) -> Option<PathBuf> {
    let mut out: Vec<&std::ffi::OsStr> = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(s) => out.push(s),
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    if out.is_empty() {
        return None;
    }
    Some(out.iter().collect())
}

enum Fallback {
    Unsupported,
    Refused,
}

fn final_flags() -> OFlags {
    OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC
}

fn dir_flags() -> OFlags {
    OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC
}

fn unsupported(e: Errno) -> bool {
    e == Errno::NOSYS || e == Errno::PERM || e == Errno::OPNOTSUPP || e == Errno::TOOBIG
}

fn openat2_retry(
    dir: impl AsFd,
    path: &Path,
    flags: OFlags,
    resolve: ResolveFlags,
) -> Result<OwnedFd, Errno> {
    let dir = dir.as_fd();
    let mut tries = 0;
    loop {
        match rustix::fs::openat2(dir, path, flags, Mode::empty(), resolve) {
            Err(Errno::AGAIN | Errno::INTR) if tries < EAGAIN_RETRIES => tries += 1,
            other => return other,
        }
    }
}

fn open_openat2(root: &Path, rel: &Path) -> Result<OwnedFd, Fallback> {
    let no_links = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let root_fd = match openat2_retry(rustix::fs::CWD, root, dir_flags(), no_links) {
        Ok(fd) => fd,
        Err(e) if unsupported(e) => return Err(Fallback::Unsupported),
        Err(_) => return Err(Fallback::Refused),
    };
    match openat2_retry(
        &root_fd,
        rel,
        final_flags(),
        no_links | ResolveFlags::BENEATH,
    ) {
        Ok(fd) => Ok(fd),
        Err(e) if unsupported(e) => Err(Fallback::Unsupported),
        Err(_) => Err(Fallback::Refused),
    }
}

/// The component walk: from `/` through every component of `root`, then
/// of `rel`, each opened relative to its parent's descriptor with
/// `O_NOFOLLOW` (a link anywhere is refused). `..` inside `rel` returns to
/// the parent's kept descriptor and may not climb above the root.
fn open_walk(root: &Path, rel: &Path) -> Result<OwnedFd, Refused> {
    let open_dir = |parent: &OwnedFd, name: &std::ffi::OsStr| {
        rustix::fs::openat(parent, name, dir_flags() | OFlags::NOFOLLOW, Mode::empty())
            .map_err(|_| Refused)
    };
    let mut cur = rustix::fs::open("/", dir_flags(), Mode::empty()).map_err(|_| Refused)?;
    for c in root.components() {
        match c {
            Component::RootDir => {}
            Component::Normal(name) => cur = open_dir(&cur, name)?,
            // A canonical root has neither `.` nor `..`.
            _ => return Err(Refused),
        }
    }
    let parts: Vec<Component<'_>> = rel.components().collect();
    let (last, dirs) = parts.split_last().ok_or(Refused)?;
    let mut stack: Vec<OwnedFd> = Vec::new();
    for c in dirs {
        match c {
            Component::Normal(name) => {
                let next = open_dir(&cur, name)?;
                stack.push(std::mem::replace(&mut cur, next));
            }
            Component::CurDir => {}
            Component::ParentDir => cur = stack.pop().ok_or(Refused)?,
            _ => return Err(Refused),
        }
    }
    let Component::Normal(name) = last else {
        return Err(Refused);
    };
    rustix::fs::openat(&cur, *name, final_flags() | OFlags::NOFOLLOW, Mode::empty())
        .map_err(|_| Refused)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    fn read(o: Opened) -> String {
        let mut s = String::new();
        let mut f = o.file;
        f.read_to_string(&mut s).expect("read");
        s
    }

    struct Tree {
        _t: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn tree() -> Tree {
        let t = tempfile::tempdir().expect("tempdir");
        let base = std::fs::canonicalize(t.path()).expect("canon");
        let root = base.join("root");
        let outside = base.join("outside");
        std::fs::create_dir_all(root.join("d/e")).expect("mkdir");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::write(root.join("d/f"), "inside").expect("w");
        std::fs::write(root.join("d/e/g"), "deep").expect("w");
        std::fs::write(outside.join("f"), "SECRET").expect("w");
        Tree {
            _t: t,
            root,
            outside,
        }
    }

    #[test]
    fn opens_regular_files_and_normalises_the_path() {
        let t = tree();
        for s in [Strategy::Auto, Strategy::Walk] {
            let o = open_beneath(&t.root, Path::new("d/f"), s).expect("open");
            assert_eq!(o.path, t.root.join("d/f"));
            assert_eq!(read(o), "inside");
            let o = open_beneath(&t.root, Path::new("d/./e/../e/g"), s).expect("open");
            assert_eq!(o.path, t.root.join("d/e/g"));
            assert_eq!(read(o), "deep");
        }
    }

    #[test]
    fn refuses_links_escapes_and_non_files() {
        let t = tree();
        symlink(t.outside.join("f"), t.root.join("out-link")).expect("symlink");
        symlink(&t.outside, t.root.join("out-dir")).expect("symlink");
        symlink(t.root.join("d/f"), t.root.join("in-link")).expect("symlink");
        symlink(t.root.join("d"), t.root.join("in-dir")).expect("symlink");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            t.root.join("fifo").as_path(),
            rustix::fs::FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .expect("mkfifo");
        let root_link = t.root.with_file_name("root-link");
        symlink(&t.root, &root_link).expect("symlink");
        // Hard links: one to a file outside, and two names of one file
        // inside (the second name could as well have been outside).
        std::fs::hard_link(t.outside.join("f"), t.root.join("hard-out")).expect("link");
        std::fs::write(t.root.join("twin-a"), "twin").expect("w");
        std::fs::hard_link(t.root.join("twin-a"), t.root.join("d/twin-b")).expect("link");
        for s in [Strategy::Auto, Strategy::Walk] {
            for rel in [
                "out-link",
                "out-dir/f",
                "hard-out",
                "twin-a",
                "d/twin-b",
                "in-link",
                "in-dir/f",
                "fifo",
                "d",
                "d/e",
                ".",
                "..",
                "../outside/f",
                "d/../../outside/f",
                "missing",
                "d/f/",
                "d/f/x",
                "/etc/passwd",
                "",
                "/proc/self/root/etc/passwd",
            ] {
                assert_eq!(
                    open_beneath(&t.root, Path::new(rel), s).err(),
                    Some(Refused),
                    "{rel} with {s:?}"
                );
            }
            // A root that became a link is refused too.
            assert_eq!(
                open_beneath(&root_link, Path::new("d/f"), s).err(),
                Some(Refused)
            );
        }
    }

    /// A racing `renameat2(RENAME_EXCHANGE)` swaps a real directory with a
    /// link to the outside while files are opened through it: never one
    /// byte from outside.
    #[test]
    fn a_racing_directory_swap_never_reads_outside() {
        let t = tree();
        symlink(&t.outside, t.root.join("swap")).expect("symlink");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let swaps = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let root = t.root.clone();
        let (st, sw) = (stop.clone(), swaps.clone());
        let swapper = std::thread::spawn(move || {
            let dir = rustix::fs::open(&root, OFlags::DIRECTORY | OFlags::RDONLY, Mode::empty())
                .expect("open root");
            while !st.load(std::sync::atomic::Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    &dir,
                    "d",
                    &dir,
                    "swap",
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("exchange");
                sw.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let (mut inside, mut refused) = (0u32, 0u32);
        for i in 0..20_000 {
            let s = if i % 2 == 0 {
                Strategy::Auto
            } else {
                Strategy::Walk
            };
            match open_beneath(&t.root, Path::new("d/f"), s) {
                Ok(o) => {
                    let text = read(o);
                    assert_eq!(text, "inside", "read outside the root");
                    inside += 1;
                }
                Err(Refused) => refused += 1,
            }
        }
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        swapper.join().expect("swapper");
        assert_eq!(inside + refused, 20_000);
        assert!(swaps.load(std::sync::atomic::Ordering::Relaxed) > 0);
    }
}
