//! The workspace walk under every scan: what git would track below a root
//! (regular files and symbolic links that no `.gitignore` or
//! `.git/info/exclude` excludes, never `.git`), with one `fstatat` per
//! file, in path-byte order.
//!
//! The rules are exactly those of the `ignore` crate's walker with the
//! options the scans used before this module (`git_ignore`,
//! `git_exclude`, no `.ignore` files, no global excludes, no rules from
//! above the root, git not required): each directory's `.gitignore`, and
//! for a directory holding a `.git` entry its repository's `info/exclude`
//! (a `.git` file's `gitdir:` and `commondir` followed as `ignore` does).
//! An entry is matched against its directory's rules and then each
//! parent's, the deepest `.gitignore` rule that matches deciding, the
//! excludes only when no `.gitignore` rule matches. Matching is the
//! crate's own ([`ignore::gitignore::Gitignore`]); a test walks random
//! trees both ways and compares.
//!
//! The walk itself is this module's, because the crate's parallel walker
//! cost twice the CPU of the system calls it makes on a tree of 10,000
//! files and kept the second core mostly idle (it polls for work with
//! 1 ms sleeps): `docs/hooks.md`, "Cost". Two threads share a stack of
//! directories; each directory is opened once (`O_NOFOLLOW`), read with
//! `getdents64` and its files stated relative to it. Each directory's
//! entries are sorted by name (a directory's name as if followed by `/`),
//! so the depth-first concatenation is the order of the whole paths'
//! bytes, without a sort of the whole list.

use crate::error::{Code, Error, Result};
use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};
use std::ffi::OsStr;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use super::snapshot::{MAX_FILES, MODE_EXEC, MODE_FILE, MODE_LINK};

/// One walked file: its absolute path (the `/`-separated relative path is
/// the suffix from `rel`), mode and stat key (inode, size, mtime ns,
/// ctime ns).
pub(super) struct Found {
    pub(super) full: String,
    pub(super) rel: usize,
    pub(super) mode: u32,
    pub(super) key: (u64, u64, i64, i64),
}

impl Found {
    pub(super) fn rel(&self) -> &str {
        self.full.get(self.rel..).unwrap_or_default()
    }
    pub(super) fn abs(&self) -> &Path {
        Path::new(&self.full)
    }
}

/// The rules in force inside one directory: its own, then its parent's.
///
/// Both matchers are rooted at `.` and given the path relative to their
/// directory (the bytes after its `dir_len`): what the crate's walker
/// hands them is the absolute path, which they strip of the same prefix
/// (a byte prefix) before matching, at about half the cost of the match
/// itself.
struct Rules {
    gitignore: Gitignore,
    exclude: Gitignore,
    /// Bytes of the directory's absolute path with its trailing `/`.
    dir_len: usize,
    parent: Option<Arc<Rules>>,
}

impl Rules {
    /// Whether `full` (an absolute path below every rule's directory;
    /// `is_dir` for a directory) is excluded: the deepest `.gitignore`
    /// that matches decides (an ignore or a negation), else the deepest
    /// exclude file that matches.
    fn ignored(&self, full: &[u8], is_dir: bool) -> bool {
        let mut exclude = Match::None;
        let mut node = Some(self);
        while let Some(r) = node {
            let rel = Path::new(OsStr::from_bytes(full.get(r.dir_len..).unwrap_or_default()));
            match r.gitignore.matched(rel, is_dir) {
                Match::Ignore(_) => return true,
                Match::Whitelist(_) => return false,
                Match::None => {}
            }
            if exclude.is_none() {
                exclude = r.exclude.matched(rel, is_dir).map(|_| ());
            }
            node = r.parent.as_deref();
        }
        exclude.is_ignore()
    }
}

/// A gitignore matcher rooted at `dir` of the file `file`, when it
/// exists. Lines that do not parse are skipped, as the crate's walker
/// skips them (its partial errors were never fatal to a scan).
fn matcher(file: &Path) -> Gitignore {
    if !file.exists() {
        return Gitignore::empty();
    }
    let mut b = GitignoreBuilder::new(".");
    let _partial = b.add(file);
    b.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The directory whose `info/exclude` applies to a directory holding a
/// `.git` entry: `.git` itself unless it is a file; for a file (a linked
/// worktree), the common directory its `gitdir:` line's `commondir`
/// names, and none when either cannot be read.
fn git_common_dir(dir: &Path) -> Option<PathBuf> {
    use std::io::BufRead as _;
    let dot_git = dir.join(".git");
    let is_file = std::fs::metadata(&dot_git).is_ok_and(|m| m.is_file());
    if !is_file {
        return Some(dot_git);
    }
    let first_line = |p: &Path| -> Option<String> {
        std::io::BufReader::new(std::fs::File::open(p).ok()?)
            .lines()
            .next()?
            .ok()
    };
    let line = first_line(&dot_git)?;
    let real = PathBuf::from(line.strip_prefix("gitdir: ")?);
    let common = first_line(&real.join("commondir"))?;
    Some(if common.starts_with('.') {
        real.join(common)
    } else {
        PathBuf::from(common)
    })
}

/// The rules inside `dir` (whose path with a trailing `/` is `dir_len`
/// bytes), given which rule files its listing showed.
fn rules_for(
    dir: &Path,
    dir_len: usize,
    has_gitignore: bool,
    has_git: bool,
    parent: Option<Arc<Rules>>,
) -> Option<Arc<Rules>> {
    let gitignore = if has_gitignore {
        matcher(&dir.join(".gitignore"))
    } else {
        Gitignore::empty()
    };
    let exclude = match has_git.then(|| git_common_dir(dir)).flatten() {
        Some(common) => matcher(&common.join("info/exclude")),
        None => Gitignore::empty(),
    };
    if gitignore.is_empty() && exclude.is_empty() {
        return parent;
    }
    Some(Arc::new(Rules {
        gitignore,
        exclude,
        dir_len,
        parent,
    }))
}

/// A directory to read.
struct Job {
    /// Its absolute path.
    path: PathBuf,
    /// The rules of the directory it is in.
    rules: Option<Arc<Rules>>,
    /// Its slot in the results.
    id: usize,
}

/// What one directory held: its files, and its subdirectories with their
/// slots (both unsorted).
#[derive(Default)]
struct Listing {
    files: Vec<Found>,
    dirs: Vec<(Vec<u8>, usize)>,
}

struct Queue {
    jobs: Vec<Job>,
    /// Directories being read.
    active: usize,
    /// Set when the walk is over (finished or failed).
    done: bool,
}

struct Shared<'a> {
    queue: Mutex<Queue>,
    wake: Condvar,
    ids: AtomicUsize,
    files: AtomicUsize,
    err: Mutex<Option<Error>>,
    root: &'a [u8],
    stop: &'a AtomicBool,
}

impl Shared<'_> {
    fn fail(&self, e: Error) {
        if let Ok(mut g) = self.err.lock() {
            g.get_or_insert(e);
        }
        if let Ok(mut q) = self.queue.lock() {
            q.done = true;
        }
        self.wake.notify_all();
    }

    fn push(&self, jobs: Vec<Job>) {
        if jobs.is_empty() {
            return;
        }
        let n = jobs.len();
        if let Ok(mut q) = self.queue.lock() {
            q.jobs.extend(jobs);
        }
        if n > 1 {
            self.wake.notify_all();
        } else {
            self.wake.notify_one();
        }
    }

    /// The next directory, or `None` when the walk is over.
    fn next(&self) -> Option<Job> {
        let mut q = self.queue.lock().ok()?;
        loop {
            if q.done {
                return None;
            }
            if let Some(j) = q.jobs.pop() {
                q.active += 1;
                return Some(j);
            }
            if q.active == 0 {
                q.done = true;
                self.wake.notify_all();
                return None;
            }
            q = self.wake.wait(q).ok()?;
        }
    }

    fn finished_one(&self) {
        if let Ok(mut q) = self.queue.lock() {
            q.active = q.active.saturating_sub(1);
            if q.active == 0 && q.jobs.is_empty() {
                q.done = true;
                self.wake.notify_all();
            }
        }
    }
}

fn walk_io(e: impl std::fmt::Display) -> Error {
    Error::new(Code::Io, format!("walking the workspace: {e}"))
}

/// Reads one directory: its rules, its entries (each matched), a stat of
/// each file; its subdirectories become jobs.
fn read_dir(sh: &Shared<'_>, job: Job, buf: &mut [std::mem::MaybeUninit<u8>]) -> Result<Listing> {
    use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, open, statat};
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd: OwnedFd = open(&job.path, flags, Mode::empty())
        .map_err(|e| walk_io(format!("{}: {e}", job.path.display())))?;
    // The names first: the rule files a listing holds apply to all of it.
    let mut names: Vec<u8> = Vec::with_capacity(4096);
    let mut entries: Vec<(usize, usize, FileType)> = Vec::with_capacity(64);
    let (mut has_gitignore, mut has_git) = (false, false);
    let mut it = RawDir::new(fd.as_fd(), buf);
    while let Some(e) = it.next() {
        let e = e.map_err(|e| walk_io(format!("{}: {e}", job.path.display())))?;
        let name = e.file_name().to_bytes();
        match name {
            b"." | b".." => continue,
            b".gitignore" => has_gitignore = true,
            b".git" => has_git = true,
            _ => {}
        }
        entries.push((names.len(), name.len(), e.file_type()));
        names.extend_from_slice(name);
    }
    let dir_len =
        job.path.as_os_str().len() + usize::from(!job.path.as_os_str().as_bytes().ends_with(b"/"));
    let rules = rules_for(&job.path, dir_len, has_gitignore, has_git, job.rules);
    let mut out = Listing::default();
    out.files.reserve(entries.len());
    let mut jobs = Vec::new();
    let mut prefix = job.path.into_os_string().into_vec();
    if prefix.last() != Some(&b'/') {
        prefix.push(b'/');
    }
    for (start, len, mut ft) in entries {
        if sh.stop.load(Ordering::Relaxed) {
            return Err(Error::internal("the walk was abandoned"));
        }
        let name = names.get(start..start + len).unwrap_or_default();
        let os = OsStr::from_bytes(name);
        let mut full = Vec::with_capacity(prefix.len() + name.len());
        full.extend_from_slice(&prefix);
        full.extend_from_slice(name);
        let path = Path::new(OsStr::from_bytes(&full));
        // A type the listing does not give is asked of the entry itself.
        let mut st = None;
        if ft == FileType::Unknown {
            let s = statat(&fd, os, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| Error::io("stat", path, e.into()))?;
            ft = FileType::from_raw_mode(s.st_mode);
            st = Some(s);
        }
        let is_dir = ft == FileType::Directory;
        if rules.as_deref().is_some_and(|r| r.ignored(&full, is_dir)) {
            continue;
        }
        // Never `.git` (a directory or a file), at any depth.
        if name == b".git".as_slice() {
            continue;
        }
        if is_dir {
            let id = sh.ids.fetch_add(1, Ordering::Relaxed);
            out.dirs.push((name.to_vec(), id));
            jobs.push(Job {
                path: PathBuf::from(std::ffi::OsString::from_vec(full)),
                rules: rules.clone(),
                id,
            });
            continue;
        }
        if !matches!(ft, FileType::RegularFile | FileType::Symlink) {
            // Sockets, fifos and devices are not content.
            continue;
        }
        let s = match st {
            Some(s) => s,
            None => statat(&fd, os, AtFlags::SYMLINK_NOFOLLOW)
                .map_err(|e| Error::io("stat", path, e.into()))?,
        };
        // Field widths differ between targets; the values fit these types.
        #[allow(clippy::unnecessary_cast, clippy::cast_sign_loss)]
        let key = (
            s.st_ino as u64,
            s.st_size as u64,
            ns(s.st_mtime as i64, s.st_mtime_nsec as i64),
            ns(s.st_ctime as i64, s.st_ctime_nsec as i64),
        );
        #[allow(clippy::unnecessary_cast)]
        let perm = s.st_mode as u32;
        let mode = if FileType::from_raw_mode(s.st_mode) == FileType::Symlink {
            MODE_LINK
        } else if perm & 0o111 != 0 {
            MODE_EXEC
        } else {
            MODE_FILE
        };
        let mut rel = sh.root.len();
        if full.get(rel) == Some(&b'/') {
            rel += 1;
        }
        let full = String::from_utf8(full).map_err(|e| {
            let b = e.into_bytes();
            let shown = String::from_utf8_lossy(b.get(rel..).unwrap_or_default()).into_owned();
            Error::new(Code::InvalidInput, "workspace path is not UTF-8").with("path", shown)
        })?;
        if sh.files.fetch_add(1, Ordering::Relaxed) >= MAX_FILES {
            return Err(Error::new(Code::TooLarge, "workspace has too many files"));
        }
        out.files.push(Found {
            full,
            rel,
            mode,
            key,
        });
    }
    sh.push(jobs);
    Ok(out)
}

fn ns(sec: i64, nsec: i64) -> i64 {
    sec.saturating_mul(1_000_000_000).saturating_add(nsec)
}

/// One walker thread: reads directories until the walk is over; returns
/// its listings by slot.
fn worker(sh: &Shared<'_>) -> Vec<(usize, Listing)> {
    let mut buf = vec![std::mem::MaybeUninit::<u8>::uninit(); 64 * 1024];
    let mut mine = Vec::new();
    while let Some(job) = sh.next() {
        let id = job.id;
        let _active = Active(sh);
        match read_dir(sh, job, &mut buf) {
            Ok(l) => mine.push((id, l)),
            Err(e) => sh.fail(e),
        }
    }
    mine
}

/// One directory being read: done when dropped, also by a panic (which
/// ends the walk with an error), so that the other thread never waits
/// for it.
struct Active<'a, 'b>(&'a Shared<'b>);

impl Drop for Active<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.fail(Error::internal("a walker thread panicked"));
        }
        self.0.finished_one();
    }
}

/// Threads a walk uses: the two cores the figures were taken on; more
/// only contend for the same directory and inode caches.
const THREADS: usize = 2;

/// Lists what git would track under `root` (a directory), with stats,
/// sorted by path bytes. Setting `stop` abandons the walk (an error).
pub(super) fn walk(root: &Path, stop: &AtomicBool) -> Result<Vec<Found>> {
    let sh = Shared {
        queue: Mutex::new(Queue {
            jobs: vec![Job {
                path: root.to_path_buf(),
                rules: None,
                id: 0,
            }],
            active: 0,
            done: false,
        }),
        wake: Condvar::new(),
        ids: AtomicUsize::new(1),
        files: AtomicUsize::new(0),
        err: Mutex::new(None),
        root: root.as_os_str().as_bytes(),
        stop,
    };
    let parts: Vec<Vec<(usize, Listing)>> = std::thread::scope(|s| {
        let helpers: Vec<_> = (1..THREADS).map(|_| s.spawn(|| worker(&sh))).collect();
        let mut parts = vec![worker(&sh)];
        for h in helpers {
            match h.join() {
                Ok(p) => parts.push(p),
                Err(_) => sh.fail(Error::internal("a walker thread panicked")),
            }
        }
        parts
    });
    if let Some(e) = sh
        .err
        .into_inner()
        .map_err(|_| Error::internal("walker panicked"))?
    {
        return Err(e);
    }
    let mut slots: Vec<Option<Listing>> = Vec::new();
    slots.resize_with(sh.ids.load(Ordering::Relaxed), || None);
    for (id, l) in parts.into_iter().flatten() {
        if let Some(s) = slots.get_mut(id) {
            *s = Some(l);
        }
    }
    let mut out = Vec::with_capacity(sh.files.load(Ordering::Relaxed));
    emit(&mut slots, 0, &mut out)?;
    Ok(out)
}

/// Appends directory `id`'s files and subdirectories' files in path-byte
/// order: its entries sorted by name, a directory's name compared as if
/// followed by `/` (iteratively: a tree may be deep).
fn emit(slots: &mut [Option<Listing>], id: usize, out: &mut Vec<Found>) -> Result<()> {
    enum Item {
        File(Found),
        Dir(usize),
    }
    /// Name order, a directory's name as if followed by `/` (no name
    /// holds one, so the first difference or end decides).
    fn key_cmp(a: &[u8], a_dir: bool, b: &[u8], b_dir: bool) -> std::cmp::Ordering {
        let n = a.len().min(b.len());
        let (ha, hb) = (
            a.get(..n).unwrap_or_default(),
            b.get(..n).unwrap_or_default(),
        );
        match ha.cmp(hb) {
            std::cmp::Ordering::Equal => {}
            o => return o,
        }
        let next = |s: &[u8], dir: bool| s.get(n).copied().or(dir.then_some(b'/'));
        next(a, a_dir).cmp(&next(b, b_dir))
    }
    fn file_name(f: &Found) -> &[u8] {
        let b = f.full.as_bytes();
        let cut = b.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1);
        b.get(cut..).unwrap_or_default()
    }
    let mut stack: Vec<std::vec::IntoIter<Item>> = Vec::new();
    let mut open = |id: usize| -> Result<std::vec::IntoIter<Item>> {
        let Listing { files, dirs } = slots
            .get_mut(id)
            .and_then(Option::take)
            .ok_or_else(|| Error::internal("a walked directory has no listing"))?;
        // Names with their positions, sorted; then each entry moved once.
        let nf = files.len();
        let mut order: Vec<(&[u8], bool, usize)> = Vec::with_capacity(nf + dirs.len());
        order.extend(
            files
                .iter()
                .enumerate()
                .map(|(i, f)| (file_name(f), false, i)),
        );
        order.extend(
            dirs.iter()
                .enumerate()
                .map(|(i, d)| (d.0.as_slice(), true, nf + i)),
        );
        order.sort_unstable_by(|x, y| key_cmp(x.0, x.1, y.0, y.1));
        let order: Vec<usize> = order.into_iter().map(|(_, _, i)| i).collect();
        let mut files: Vec<Option<Found>> = files.into_iter().map(Some).collect();
        let items: Vec<Item> = order
            .into_iter()
            .filter_map(|i| match files.get_mut(i) {
                Some(f) => f.take().map(Item::File),
                None => dirs.get(i - nf).map(|d| Item::Dir(d.1)),
            })
            .collect();
        Ok(items.into_iter())
    };
    stack.push(open(id)?);
    while let Some(top) = stack.last_mut() {
        match top.next() {
            Some(Item::File(f)) => out.push(f),
            Some(Item::Dir(d)) => {
                let next = open(d)?;
                stack.push(next);
            }
            None => {
                stack.pop();
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// What the `ignore` crate's walker lists with the options the scans
    /// used before this module: the oracle.
    fn oracle(root: &Path) -> Vec<(String, u32)> {
        let mut v: Vec<(String, u32)> = ignore::WalkBuilder::new(root)
            .hidden(false)
            .parents(false)
            .ignore(false)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(true)
            .require_git(false)
            .follow_links(false)
            .filter_entry(|e| e.file_name() != ".git")
            .build()
            .filter_map(|e| {
                let e = e.expect("oracle walk");
                let ft = e.file_type()?;
                if e.depth() == 0 || !(ft.is_file() || ft.is_symlink()) {
                    return None;
                }
                let rel = e.path().strip_prefix(root).expect("under root");
                let meta = e.path().symlink_metadata().expect("lstat");
                let mode = if ft.is_symlink() {
                    MODE_LINK
                } else if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0
                {
                    MODE_EXEC
                } else {
                    MODE_FILE
                };
                Some((rel.to_str().expect("utf-8").to_owned(), mode))
            })
            .collect();
        v.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        v
    }

    fn ours(root: &Path) -> Vec<(String, u32)> {
        walk(root, &AtomicBool::new(false))
            .expect("walk")
            .iter()
            .map(|f| (f.rel().to_owned(), f.mode))
            .collect()
    }

    const NAMES: &[&str] = &[
        "a", "a.txt", "a-b", "a.log", "b", "build", "Build", "x y", "é", "target", "keep.log",
        "sub", ".hidden", "deep",
    ];
    const RULES: &[&str] = &[
        "*.log",
        "!keep.log",
        "build/",
        "/a",
        "a/",
        "sub/*.txt",
        "**/deep",
        "!deep",
        "target",
        "x\\ y",
        "[ab]",
        "# comment",
        "",
        "/sub/",
        "!/sub/b",
        "*",
        "!*/",
        "!a.txt",
        "[",
        "é",
        "deep/**",
        "a-*",
    ];

    #[derive(Debug, Clone)]
    enum Node {
        File(usize, bool),
        Link(usize),
        Dir(usize, Vec<Node>),
        Gitignore(Vec<usize>),
        /// A `.git` directory with an `info/exclude`.
        Git(Vec<usize>),
    }

    fn node() -> impl Strategy<Value = Node> {
        let name = 0..NAMES.len();
        let rules = prop::collection::vec(0..RULES.len(), 0..4);
        let leaf = prop_oneof![
            4 => (name.clone(), any::<bool>()).prop_map(|(n, x)| Node::File(n, x)),
            1 => name.clone().prop_map(Node::Link),
            2 => rules.clone().prop_map(Node::Gitignore),
            1 => rules.prop_map(Node::Git),
        ];
        leaf.prop_recursive(4, 48, 6, move |inner| {
            (0..NAMES.len(), prop::collection::vec(inner, 0..6))
                .prop_map(|(n, kids)| Node::Dir(n, kids))
        })
    }

    fn build(dir: &Path, nodes: &[Node]) {
        for n in nodes {
            let write_rules = |p: &Path, rules: &[usize]| {
                let text: String = rules.iter().map(|&r| format!("{}\n", RULES[r])).collect();
                std::fs::write(p, text).expect("rules");
            };
            match n {
                Node::File(i, exec) => {
                    let p = dir.join(NAMES[*i]);
                    if p.symlink_metadata().is_err() {
                        std::fs::write(&p, "x").expect("file");
                        if *exec {
                            std::fs::set_permissions(
                                &p,
                                std::os::unix::fs::PermissionsExt::from_mode(0o755),
                            )
                            .expect("chmod");
                        }
                    }
                }
                Node::Link(i) => {
                    let p = dir.join(NAMES[*i]);
                    if p.symlink_metadata().is_err() {
                        std::os::unix::fs::symlink("a", &p).expect("link");
                    }
                }
                Node::Dir(i, kids) => {
                    let p = dir.join(NAMES[*i]);
                    if p.symlink_metadata().is_err() {
                        std::fs::create_dir(&p).expect("dir");
                    }
                    if p.symlink_metadata().is_ok_and(|m| m.is_dir()) {
                        build(&p, kids);
                    }
                }
                Node::Gitignore(rules) => write_rules(&dir.join(".gitignore"), rules),
                Node::Git(rules) => {
                    let info = dir.join(".git/info");
                    std::fs::create_dir_all(&info).expect("git dir");
                    write_rules(&info.join("exclude"), rules);
                }
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 160, ..ProptestConfig::default() })]
        #[test]
        fn lists_what_the_ignore_crates_walker_lists(tree in prop::collection::vec(node(), 0..10)) {
            let t = tempfile::tempdir().expect("tmp");
            let root = t.path().join("ws");
            std::fs::create_dir(&root).expect("root");
            build(&root, &tree);
            prop_assert_eq!(ours(&root), oracle(&root));
        }
    }

    #[test]
    fn a_worktrees_common_exclude_and_odd_entries() {
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path().join("ws");
        let common = t.path().join("main.git");
        std::fs::create_dir_all(common.join("info")).expect("common");
        std::fs::create_dir_all(common.join("worktrees/w")).expect("gitdir");
        std::fs::write(common.join("info/exclude"), "*.tmp\n").expect("exclude");
        std::fs::write(common.join("worktrees/w/commondir"), "../..\n").expect("commondir");
        std::fs::create_dir_all(root.join("nested/.git/info")).expect("nested");
        std::fs::write(root.join("nested/.git/info/exclude"), "n*\n").expect("nested exclude");
        std::fs::write(
            root.join(".git"),
            format!("gitdir: {}\n", common.join("worktrees/w").display()),
        )
        .expect(".git file");
        for f in ["a.tmp", "b.txt", "nested/n1", "nested/m1", "nested/x.tmp"] {
            std::fs::write(root.join(f), "x").expect("file");
        }
        // A fifo is not content; a dangling link is.
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .expect("fifo");
        std::os::unix::fs::symlink("nowhere", root.join("dangling")).expect("link");
        let got = ours(&root);
        assert_eq!(got, oracle(&root));
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(paths, ["b.txt", "dangling", "nested/m1"]);
    }

    #[test]
    fn a_large_flat_tree_is_in_byte_order_and_abandoned_on_stop() {
        let t = tempfile::tempdir().expect("tmp");
        let root = t.path().join("ws");
        for d in ["a", "a-b", "a.b", "a/b", "b"] {
            std::fs::create_dir_all(root.join(d)).expect("dir");
        }
        for i in 0..300 {
            for d in ["a", "a-b", "a/b", "b", ""] {
                std::fs::write(root.join(d).join(format!("f{i}")), "x").expect("file");
            }
        }
        std::fs::write(root.join("a.b/z"), "x").expect("file");
        let got = ours(&root);
        assert_eq!(got.len(), 1501);
        assert!(
            got.windows(2)
                .all(|w| w[0].0.as_bytes() < w[1].0.as_bytes())
        );
        assert_eq!(got, oracle(&root));
        let stop = AtomicBool::new(true);
        let e = walk(&root, &stop).err().expect("abandoned");
        assert_eq!(e.code(), Code::Internal);
    }
}
