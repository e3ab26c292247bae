//! Workspace snapshots: what git would track (tracked + untracked, not
//! ignored: `.gitignore`, `.git/info/exclude`, via the `ignore` crate),
//! regular files with their executable bit, symlinks recorded as links
//! (target bytes, never followed). The manifest is canonical JSON sorted by
//! path bytes; the revision is `domain_digest(DOMAIN_REVISION, manifest)`.
//!
//! A stat cache keyed by (inode, size, mtime ns, ctime ns) lets a rescan of
//! an unchanged tree skip reading file bytes; any difference re-hashes.
//! New objects are written as one CAS batch made durable by a single
//! `syncfs` before the revision row commits.

use crate::error::{Code, Error, Result};
use crate::store::Cas;
use crate::task::contract::canonical_bytes;
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

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

/// A cached stat of one path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheRow {
    /// Inode.
    pub ino: u64,
    /// Size.
    pub size: u64,
    /// mtime in ns.
    pub mtime_ns: i64,
    /// ctime in ns.
    pub ctime_ns: i64,
    /// Mode recorded.
    pub mode: u32,
    /// Digest.
    pub sha256: Sha256Hex,
}

/// The result of a scan.
#[derive(Debug)]
pub struct Snapshot {
    /// The revision id.
    pub revision: Sha256Hex,
    /// The manifest.
    pub manifest: Manifest,
    /// Its canonical bytes.
    pub manifest_bytes: Vec<u8>,
    /// The cache after the scan (only rows that changed).
    pub cache_updates: Vec<(String, CacheRow)>,
    /// Paths in the old cache that are gone.
    pub cache_removals: Vec<String>,
    /// Files whose bytes were read (cache misses).
    pub hashed: u64,
}

fn ns(sec: i64, nsec: i64) -> i64 {
    sec.saturating_mul(1_000_000_000).saturating_add(nsec)
}

struct Found {
    path: String,
    abs: std::path::PathBuf,
    mode: u32,
    row_key: (u64, u64, i64, i64),
}

/// Lists what git would track under `root`, with stats, sorted by path
/// bytes. Runs the `ignore` crate's parallel walker.
fn walk(root: &Path) -> Result<Vec<Found>> {
    use std::sync::Mutex;
    let out: Mutex<Vec<Found>> = Mutex::new(Vec::new());
    let err: Mutex<Option<Error>> = Mutex::new(None);
    ignore::WalkBuilder::new(root)
        .hidden(false)
        .parents(false)
        .ignore(false)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .follow_links(false)
        .filter_entry(|e| e.file_name() != ".git")
        .threads(2)
        .build_parallel()
        .run(|| {
            Box::new(|item| {
                use ignore::WalkState;
                let fail = |e: Error| {
                    if let Ok(mut g) = err.lock() {
                        g.get_or_insert(e);
                    }
                    WalkState::Quit
                };
                let item = match item {
                    Ok(i) => i,
                    Err(e) => {
                        return fail(Error::new(Code::Io, format!("walking the workspace: {e}")));
                    }
                };
                if item.depth() == 0 {
                    return WalkState::Continue;
                }
                let Some(ft) = item.file_type() else {
                    return WalkState::Continue;
                };
                if ft.is_dir() || !(ft.is_file() || ft.is_symlink()) {
                    // Directories are implied; sockets, fifos and devices are not content.
                    return WalkState::Continue;
                }
                let Ok(rel) = item.path().strip_prefix(root) else {
                    return fail(Error::internal("walker left the workspace"));
                };
                let Some(path) = rel.to_str() else {
                    return fail(
                        Error::new(Code::InvalidInput, "workspace path is not UTF-8")
                            .with("path", rel.display().to_string()),
                    );
                };
                let md = match std::fs::symlink_metadata(item.path()) {
                    Ok(m) => m,
                    Err(e) => return fail(Error::io("stat", item.path(), e)),
                };
                let mode = if ft.is_symlink() {
                    MODE_LINK
                } else if md.mode() & 0o111 != 0 {
                    MODE_EXEC
                } else {
                    MODE_FILE
                };
                let f = Found {
                    path: path.to_owned(),
                    abs: item.path().to_path_buf(),
                    mode,
                    row_key: (
                        md.ino(),
                        md.size(),
                        ns(md.mtime(), md.mtime_nsec()),
                        ns(md.ctime(), md.ctime_nsec()),
                    ),
                };
                match out.lock() {
                    Ok(mut g) if g.len() < MAX_FILES => {
                        g.push(f);
                        WalkState::Continue
                    }
                    Ok(_) => fail(Error::new(Code::TooLarge, "workspace has too many files")),
                    Err(_) => WalkState::Quit,
                }
            })
        });
    if let Some(e) = err
        .into_inner()
        .map_err(|_| Error::internal("walker panicked"))?
    {
        return Err(e);
    }
    let mut v = out
        .into_inner()
        .map_err(|_| Error::internal("walker panicked"))?;
    v.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
    Ok(v)
}

/// Scans `root` and stores every file's bytes (and the manifest) in `cas`.
/// `known` says whether a revision is already recorded (its manifest is
/// then durably stored and is not written again).
pub fn scan(
    root: &Path,
    cas: &Cas,
    cache: &HashMap<String, CacheRow>,
    known: &dyn Fn(&Sha256Hex) -> Result<bool>,
) -> Result<Snapshot> {
    let mut batch = cas.batch();
    let snap = hash_tree(root, cache, &mut |c| match c {
        Content::Bytes(b) => batch.put_bytes(b).map(|p| (p.digest, p.size)),
        Content::Reader(r) => batch
            .put_reader(r, MAX_FILE_BYTES)
            .map(|p| (p.digest, p.size)),
    })?;
    if !known(&snap.revision)? {
        batch.put_bytes(&snap.manifest_bytes)?;
    }
    // Every object is durable before the caller commits a row naming them.
    batch.commit()?;
    Ok(snap)
}

/// Computes the revision of `root` exactly as [`scan`] would, hashing in
/// memory and writing nothing (the Stop hook's read-only workspace check).
pub fn scan_readonly(root: &Path, cache: &HashMap<String, CacheRow>) -> Result<Snapshot> {
    hash_tree(root, cache, &mut |c| {
        use sha2::Digest;
        let mut h = sha2::Sha256::new();
        let size = match c {
            Content::Bytes(b) => {
                h.update(b);
                b.len() as u64
            }
            Content::Reader(r) => {
                let mut buf = vec![0u8; 64 * 1024];
                let mut n = 0u64;
                loop {
                    let k = std::io::Read::read(r, &mut buf)
                        .map_err(|e| Error::new(Code::Io, format!("reading the workspace: {e}")))?;
                    if k == 0 {
                        break;
                    }
                    n += k as u64;
                    if n > MAX_FILE_BYTES {
                        return Err(Error::new(Code::TooLarge, "workspace file is too large"));
                    }
                    h.update(&buf[..k]);
                }
                n
            }
        };
        Ok((Sha256Hex::from_bytes(h.finalize().into()), size))
    })
}

/// Content handed to a scan's sink.
enum Content<'a> {
    Bytes(&'a [u8]),
    Reader(&'a mut dyn std::io::Read),
}

type Sink<'a> = dyn FnMut(Content<'_>) -> Result<(Sha256Hex, u64)> + 'a;

/// What [`scan`] and [`scan_readonly`] share: which files, their modes,
/// the stat cache, the manifest and the revision; `sink` stores or hashes
/// the bytes of a cache miss.
fn hash_tree(
    root: &Path,
    cache: &HashMap<String, CacheRow>,
    sink: &mut Sink<'_>,
) -> Result<Snapshot> {
    let meta = std::fs::symlink_metadata(root).map_err(|e| Error::io("stat", root, e))?;
    if !meta.is_dir() {
        return Err(Error::new(
            Code::InvalidInput,
            format!("workspace {} is not a directory", root.display()),
        ));
    }
    // Walk and stat in parallel (both cores); hash misses sequentially.
    let found = walk(root)?;
    let mut entries = Vec::new();
    let mut updates = Vec::new();
    let mut hashed = 0u64;
    for f in found {
        let Found {
            path,
            abs,
            mode,
            row_key,
        } = f;
        let cached = cache
            .get(&path)
            .filter(|c| (c.ino, c.size, c.mtime_ns, c.ctime_ns) == row_key && c.mode == mode);
        let (sha, size) = match cached {
            Some(c) => (c.sha256.clone(), c.size),
            None => {
                hashed += 1;
                let (digest, size) = if mode == MODE_LINK {
                    let t = std::fs::read_link(abs.as_path())
                        .map_err(|e| Error::io("readlink", abs.as_path(), e))?;
                    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(t.as_os_str()).to_vec();
                    sink(Content::Bytes(&bytes))?
                } else {
                    let mut f = crate::store::private_fs::open_nofollow_read(abs.as_path())?;
                    sink(Content::Reader(&mut f))?
                };
                // A file that changed while read is caught by the next scan:
                // the row keeps the stat taken before reading.
                updates.push((
                    path.clone(),
                    CacheRow {
                        ino: row_key.0,
                        size,
                        mtime_ns: row_key.2,
                        ctime_ns: row_key.3,
                        mode,
                        sha256: digest.clone(),
                    },
                ));
                (digest, size)
            }
        };
        entries.push(Entry {
            path,
            mode,
            size,
            sha256: sha,
        });
    }
    let manifest = Manifest {
        version: 1,
        entries,
    };
    let manifest_bytes = canonical_bytes(&manifest)?;
    let revision = domain_digest(DOMAIN_REVISION, &manifest_bytes);
    let cache_removals = cache
        .keys()
        .filter(|k| manifest.get(k).is_none())
        .cloned()
        .collect();
    Ok(Snapshot {
        revision,
        manifest,
        manifest_bytes,
        cache_updates: updates,
        cache_removals,
        hashed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignores_links_modes_and_cache() {
        let t = tempfile::tempdir().expect("tmp");
        let data = t.path().join("d");
        let (dir, _lock) =
            crate::store::DataDir::create(&data, std::time::Duration::from_secs(1)).expect("dd");
        let ws = t.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
        std::fs::write(ws.join(".gitignore"), "*.log\nbuild/\n").expect("w");
        std::fs::write(ws.join("a.txt"), "a").expect("w");
        std::fs::write(ws.join("x.log"), "ignored").expect("w");
        std::fs::create_dir_all(ws.join("build")).expect("mkdir");
        std::fs::write(ws.join("build/out"), "ignored").expect("w");
        std::fs::write(ws.join("sub/run.sh"), "#!/bin/sh\n").expect("w");
        std::fs::set_permissions(
            ws.join("sub/run.sh"),
            std::os::unix::fs::PermissionsExt::from_mode(0o755),
        )
        .expect("chmod");
        std::os::unix::fs::symlink("/etc/passwd", ws.join("link")).expect("symlink");
        let s = scan(&ws, &dir.cas(), &HashMap::new(), &|_| Ok(false)).expect("scan");
        let paths: Vec<_> = s
            .manifest
            .entries
            .iter()
            .map(|e| (e.path.as_str(), e.mode))
            .collect();
        assert_eq!(
            paths,
            vec![
                (".gitignore", MODE_FILE),
                ("a.txt", MODE_FILE),
                ("link", MODE_LINK),
                ("sub/run.sh", MODE_EXEC)
            ]
        );
        assert_eq!(
            s.manifest.get("link").expect("link").size,
            "/etc/passwd".len() as u64
        );
        assert_eq!(s.hashed, 4);
        let cache: HashMap<_, _> = s.cache_updates.into_iter().collect();
        let s2 = scan(&ws, &dir.cas(), &cache, &|_| Ok(false)).expect("rescan");
        assert_eq!(s2.hashed, 0);
        assert_eq!(s2.revision, s.revision);
        std::fs::write(ws.join("a.txt"), "b").expect("w");
        let s3 = scan(&ws, &dir.cas(), &cache, &|_| Ok(false)).expect("rescan");
        assert_eq!(s3.hashed, 1);
        assert_ne!(s3.revision, s.revision);
        // The read-only scan computes the same revision and writes nothing.
        let before = dir.cas().stats().expect("stats");
        std::fs::write(ws.join("new.txt"), "n").expect("w");
        let r = scan_readonly(&ws, &cache).expect("ro");
        assert_eq!(dir.cas().stats().expect("stats"), before);
        let s4 = scan(&ws, &dir.cas(), &cache, &|_| Ok(false)).expect("rescan");
        assert_eq!(r.revision, s4.revision);
    }
}
