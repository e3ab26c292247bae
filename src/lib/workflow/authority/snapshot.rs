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

use crate::contract::canonical_bytes;
use crate::error::{Code, Error, Result};
use crate::store::BlobStore;
use crate::wire::digest::{Sha256Hex, domain_digest};
use std::path::Path;

pub use crate::contract::snapshot::{
    DOMAIN_REVISION, Entry, MAX_FILE_BYTES, MAX_FILES, MODE_EXEC, MODE_FILE, MODE_LINK, Manifest,
};

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
    /// Digest, raw: a hook's check of an unchanged tree never renders it,
    /// so loading the cache allocates nothing per digest.
    pub sha256: [u8; 32],
}

pub use crate::clock::{COARSE_RACY_MARGIN_NS, RACY_MARGIN_NS, racy_clean};

/// What the stat cache of one root describes as a whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheState {
    /// The revision whose manifest the rows are (path, mode, size, digest).
    pub revision: Sha256Hex,
    /// Wall-clock ns when the scan that last wrote the rows began.
    pub scanned_at_ns: i64,
}

/// The stat cache of one scanned root.
#[derive(Debug, Clone, Default)]
pub struct StatCache {
    rows: Rows,
    state: Option<CacheState>,
}

/// A cache's rows: decoded, or the packed value itself (checked whole
/// when it was taken), read in place.
#[derive(Debug, Clone)]
enum Rows {
    Owned(Vec<(String, CacheRow)>),
    Packed(Vec<u8>),
}

impl Default for Rows {
    fn default() -> Rows {
        Rows::Owned(Vec::new())
    }
}

/// The rows of a [`StatCache`], in path-byte order.
pub struct CacheRows<'a> {
    inner: CacheRowsInner<'a>,
}

enum CacheRowsInner<'a> {
    Owned(std::slice::Iter<'a, (String, CacheRow)>),
    Packed(&'a [u8]),
}

impl<'a> Iterator for CacheRows<'a> {
    type Item = (&'a str, CacheRow);
    fn next(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            CacheRowsInner::Owned(it) => it.next().map(|(p, r)| (p.as_str(), r.clone())),
            CacheRowsInner::Packed(b) => packed_row(b),
        }
    }
}

impl StatCache {
    /// A cache from its rows (any order; sorted here by path bytes) and
    /// its recorded state.
    pub fn new(mut rows: Vec<(String, CacheRow)>, state: Option<CacheState>) -> StatCache {
        if !rows.is_sorted_by(|a, b| a.0.as_bytes() < b.0.as_bytes()) {
            rows.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            rows.dedup_by(|a, b| a.0 == b.0);
        }
        StatCache {
            rows: Rows::Owned(rows),
            state,
        }
    }

    /// A cache read in place from its packed value ([`encode_cache`]), or
    /// `None` when the bytes are not exactly one: the header and count,
    /// every row whole, each path UTF-8 and strictly after the previous
    /// one, nothing after the last (checked without building a row).
    pub fn from_packed(bytes: Vec<u8>, state: Option<CacheState>) -> Option<StatCache> {
        check_packed(&bytes)?;
        Some(StatCache {
            rows: Rows::Packed(bytes),
            state,
        })
    }

    /// Rows in path-byte order.
    pub fn rows(&self) -> CacheRows<'_> {
        CacheRows {
            inner: match &self.rows {
                Rows::Owned(v) => CacheRowsInner::Owned(v.iter()),
                Rows::Packed(b) => {
                    CacheRowsInner::Packed(b.get(CACHE_MAGIC.len() + 4..).unwrap_or_default())
                }
            },
        }
    }

    /// The recorded state, if any.
    pub fn state(&self) -> Option<&CacheState> {
        self.state.as_ref()
    }

    /// Whether a row whose stat still matches may be trusted without
    /// reading the file (git's racy-clean rule, on the change time, which
    /// no user call can set): any write after the recording scan began
    /// gives the file a change time later than `scanned_at - margin`, so a
    /// row whose change time is older than that cannot hide a write. A row
    /// written without a recorded state is never trusted.
    fn trusted(&self, row: &CacheRow) -> bool {
        self.state
            .as_ref()
            .is_some_and(|s| racy_clean(row.ctime_ns, s.scanned_at_ns))
    }
}

/// The packed stat cache's header: `atsc` and format 1.
const CACHE_MAGIC: &[u8; 5] = b"atsc\x01";
/// Bytes of a packed row after its path: inode, size, mtime, ctime, mode
/// and digest.
const CACHE_ROW_TAIL: usize = 8 * 4 + 4 + 32;
/// Longest path a packed row may carry (a tree path is far shorter).
const CACHE_MAX_PATH: usize = 64 * 1024;

/// The stat cache of one root as one value: what a reader decodes in one
/// pass instead of stepping a database row per file (the Stop hook reads
/// it on every turn). [`CACHE_MAGIC`], the row count (u32), then each row
/// in strictly increasing path-byte order: the path's length (u32) and
/// bytes, the inode, size, mtime and ctime in ns (u64 each, times as two's
/// complement), the mode (u32) and the raw SHA-256. Big-endian, so that
/// the schema migration that packed the earlier row-per-file table could
/// build the same bytes in SQL (`docs/architecture.md`, "The stat cache").
pub fn encode_cache<'a>(rows: impl ExactSizeIterator<Item = (&'a str, &'a CacheRow)>) -> Vec<u8> {
    let n = rows.len();
    let mut out = Vec::with_capacity(9 + n * (CACHE_ROW_TAIL + 4 + 48));
    out.extend_from_slice(CACHE_MAGIC);
    out.extend_from_slice(&u32::try_from(n).unwrap_or(u32::MAX).to_be_bytes());
    for (path, r) in rows {
        out.extend_from_slice(&u32::try_from(path.len()).unwrap_or(u32::MAX).to_be_bytes());
        out.extend_from_slice(path.as_bytes());
        out.extend_from_slice(&r.ino.to_be_bytes());
        out.extend_from_slice(&r.size.to_be_bytes());
        out.extend_from_slice(&r.mtime_ns.to_be_bytes());
        out.extend_from_slice(&r.ctime_ns.to_be_bytes());
        out.extend_from_slice(&r.mode.to_be_bytes());
        out.extend_from_slice(&r.sha256);
    }
    out
}

/// The rows of a packed stat cache ([`encode_cache`]), or `None` when the
/// bytes are not exactly one (tests; scans read it in place with
/// [`StatCache::from_packed`]).
#[cfg(test)]
pub(crate) fn decode_cache(b: &[u8]) -> Option<Vec<(String, CacheRow)>> {
    let c = StatCache::from_packed(b.to_vec(), None)?;
    Some(c.rows().map(|(p, r)| (p.to_owned(), r)).collect())
}

/// The next row of a packed cache's body, advancing `b`; `None` at its
/// end or at bytes that are not a row.
fn packed_row<'a>(b: &mut &'a [u8]) -> Option<(&'a str, CacheRow)> {
    fn take<'a>(b: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
        let (head, rest) = b.split_at_checked(n)?;
        *b = rest;
        Some(head)
    }
    fn u32_at(b: &mut &[u8]) -> Option<u32> {
        Some(u32::from_be_bytes(take(b, 4)?.try_into().ok()?))
    }
    fn u64_at(b: &mut &[u8]) -> Option<u64> {
        Some(u64::from_be_bytes(take(b, 8)?.try_into().ok()?))
    }
    let len = usize::try_from(u32_at(b)?).ok()?;
    if len > CACHE_MAX_PATH {
        return None;
    }
    let path = std::str::from_utf8(take(b, len)?).ok()?;
    let ino = u64_at(b)?;
    let size = u64_at(b)?;
    #[allow(clippy::cast_possible_wrap)] // two's complement, as written
    let mtime_ns = u64_at(b)? as i64;
    #[allow(clippy::cast_possible_wrap)]
    let ctime_ns = u64_at(b)? as i64;
    let mode = u32_at(b)?;
    let sha256: [u8; 32] = take(b, 32)?.try_into().ok()?;
    Some((
        path,
        CacheRow {
            ino,
            size,
            mtime_ns,
            ctime_ns,
            mode,
            sha256,
        },
    ))
}

/// The row count of a packed cache when its bytes are exactly one: the
/// header and count, every row whole, each path UTF-8 and strictly after
/// the previous one, nothing after the last.
fn check_packed(b: &[u8]) -> Option<usize> {
    let (magic, rest) = b.split_at_checked(CACHE_MAGIC.len())?;
    if magic != CACHE_MAGIC {
        return None;
    }
    let (count, mut rest) = rest.split_at_checked(4)?;
    let n = usize::try_from(u32::from_be_bytes(count.try_into().ok()?)).ok()?;
    if n > MAX_FILES || n > rest.len() / (CACHE_ROW_TAIL + 4) {
        return None;
    }
    let mut prev: Option<&str> = None;
    for _ in 0..n {
        let (p, _) = packed_row(&mut rest)?;
        if prev.is_some_and(|q| q.as_bytes() >= p.as_bytes()) {
            return None;
        }
        prev = Some(p);
    }
    rest.is_empty().then_some(n)
}

/// The result of a scan.
#[derive(Debug)]
pub struct Snapshot {
    /// The revision id.
    pub revision: Sha256Hex,
    /// The manifest; `None` when every file matched the stat cache and
    /// the revision is the cache's recorded one, whose manifest is stored
    /// ([`super::change::load_manifest`] reads it; an unchanged rescan
    /// builds none).
    pub manifest: Option<Manifest>,
    /// Files in the revision.
    pub files: usize,
    /// The manifest's canonical bytes; `None` when every file matched the
    /// stat cache and the revision is the cache's recorded one (already
    /// stored).
    pub manifest_bytes: Option<Vec<u8>>,
    /// The plain SHA-256 of `manifest_bytes` (its name in the store), with
    /// them: hashed once, by the put or, for a recorded revision, here.
    pub manifest_sha256: Option<Sha256Hex>,
    /// The cache after the scan (only rows that changed or were re-read).
    pub cache_updates: Vec<(String, CacheRow)>,
    /// Paths in the old cache that are gone.
    pub cache_removals: Vec<String>,
    /// The whole stat cache after the scan, packed ([`encode_cache`]);
    /// `None` when it is the cache the scan read (nothing to write).
    pub cache_packed: Option<Vec<u8>>,
    /// Files whose bytes were read (cache misses and racily clean rows).
    pub hashed: u64,
    /// Wall-clock ns when the walk began (the new cache state's time).
    pub scanned_at_ns: i64,
}

/// The result of a read-only check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// The revision id of the workspace as it is.
    pub revision: Sha256Hex,
    /// Files whose bytes were read.
    pub hashed: u64,
}

fn now_ns() -> Result<i64> {
    let d = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_err(|_| Error::internal("the system clock is before 1970"))?;
    Ok(i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

use super::walk::{Found, walk};

/// Default cap on a revision's total size (the sum of its file sizes,
/// link targets included): 2 GiB.
pub const DEFAULT_MAX_REVISION_BYTES: u64 = 2 << 30;

fn too_large(total: u64, max: u64) -> Error {
    Error::new(
        Code::RevisionTooLarge,
        format!(
            "the workspace's files add up to {total} bytes, over the revision cap of {max} bytes \
             (--max-revision-bytes); remove or ignore large files"
        ),
    )
    .with("total_bytes", total)
    .with("max_revision_bytes", max)
}

/// Refuses a manifest over `max_revision_bytes` in all: files that grew
/// while they were read count with what was read.
fn check_total(manifest: &Manifest, max_revision_bytes: u64) -> Result<()> {
    let total = manifest
        .entries
        .iter()
        .fold(0u64, |n, e| n.saturating_add(e.size));
    if total > max_revision_bytes {
        return Err(too_large(total, max_revision_bytes));
    }
    Ok(())
}

/// Refuses a walked tree before any file is read: a path git would refuse
/// or alias, or two paths that are one file on a case-insensitive
/// checkout (`path_not_representable`), or a total size over
/// `max_revision_bytes` from the stats alone (`revision_too_large`; a
/// sparse file counts its apparent size, which is what a snapshot would
/// materialise).
fn admit_walked(walked: &Walked, max_revision_bytes: u64) -> Result<()> {
    admit_paths(&walked.found)?;
    check_walked_size(walked, max_revision_bytes)
}

/// The path half of [`admit_walked`].
fn admit_paths(found: &[Found]) -> Result<()> {
    for f in found {
        crate::contract::tree_path::check(f.rel(), f.mode == MODE_LINK)?;
    }
    crate::contract::tree_path::check_twins(found.iter().map(Found::rel))
}

/// The size half of [`admit_walked`].
fn check_walked_size(walked: &Walked, max_revision_bytes: u64) -> Result<()> {
    let total = walked
        .found
        .iter()
        .fold(0u64, |n, f| n.saturating_add(f.key.1));
    if total > max_revision_bytes {
        return Err(too_large(total, max_revision_bytes));
    }
    Ok(())
}

/// Scans `root` and stores every file's bytes (and the manifest) in `cas`.
/// `known` says whether a revision is already recorded (its manifest is
/// then durably stored and is not written again). A path git would refuse
/// or alias, or a tree over `max_revision_bytes`, is refused before any
/// byte is read; bytes are streamed into the store, never held whole.
pub fn scan(
    root: &Path,
    cas: &dyn BlobStore,
    cache: &StatCache,
    known: &dyn Fn(&Sha256Hex) -> Result<bool>,
    max_revision_bytes: u64,
) -> Result<Snapshot> {
    scan_loading(root, cas, || Ok(cache), known, max_revision_bytes).map(|(s, _)| s)
}

/// [`scan`], loading the stat cache with `load` on the calling thread
/// while the walk runs on others (a checkpoint reads the cache from the
/// authority, which the walk does not need); returns what `load` gave
/// with the snapshot. A failed load abandons the walk.
pub fn scan_loading<C: std::borrow::Borrow<StatCache>>(
    root: &Path,
    cas: &dyn BlobStore,
    load: impl FnOnce() -> Result<C>,
    known: &dyn Fn(&Sha256Hex) -> Result<bool>,
    max_revision_bytes: u64,
) -> Result<(Snapshot, C)> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (walked, loaded) = std::thread::scope(|s| {
        let walk = s.spawn(|| walk_tree(root, &stop));
        let loaded = load();
        if loaded.is_err() {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
        let walked = walk
            .join()
            .map_err(|_| Error::internal("walker panicked"))
            .and_then(|w| w);
        (walked, loaded)
    });
    let loaded = loaded?;
    let cache = loaded.borrow();
    let walked = walked?;
    // The size is checked on every scan (the cap may have been lowered
    // since a revision was recorded). The paths are admitted unless the
    // tree is, stat for stat, the cache's recorded revision: the cache is
    // the authority's own, written only by a scan that admitted exactly
    // those paths, and refusing them now would refuse nothing new.
    check_walked_size(&walked, max_revision_bytes)?;
    let per_file = MAX_FILE_BYTES.min(max_revision_bytes);
    let mut batch = cas.batch();
    // A tree that turns out to be the cache's recorded revision needs no
    // manifest built; one whose revision is not recorded (a cache from
    // before its revision's row) does.
    let want = match cache.state() {
        Some(s) if known(&s.revision)? => Want::PackedUnlessUnchanged,
        _ => Want::Packed,
    };
    let t = compare_tree(walked, cache, want, &admit_paths, &mut |c| match c {
        Content::Bytes(b) => batch.put_bytes(b).map(|p| (p.digest, p.size)),
        Content::Reader(r) => batch.put_reader(r, per_file).map(|p| (p.digest, p.size)),
    })?;
    let files = t.files;
    let (revision, manifest, stored) = match (t.revision, t.entries) {
        (Some(r), None) => (r, None, None),
        (cached, entries) => {
            let manifest = Manifest {
                version: 1,
                entries: entries.unwrap_or_default(),
            };
            check_total(&manifest, max_revision_bytes)?;
            match cached {
                // Unchanged: the cache's revision, when it is still recorded.
                Some(r) if known(&r)? => (r, Some(manifest), None),
                _ => {
                    let bytes = canonical_bytes(&manifest)?;
                    let r = domain_digest(DOMAIN_REVISION, &bytes);
                    let sha = if known(&r)? {
                        Sha256Hex::digest(&bytes)
                    } else {
                        batch.put_bytes(&bytes)?.digest
                    };
                    (r, Some(manifest), Some((bytes, sha)))
                }
            }
        }
    };
    // Every object is durable before the caller commits a row naming them.
    batch.commit()?;
    let snap = Snapshot {
        revision,
        manifest,
        files,
        manifest_sha256: stored.as_ref().map(|(_, sha)| sha.clone()),
        manifest_bytes: stored.map(|(bytes, _)| bytes),
        cache_updates: t.updates,
        cache_removals: t.removals,
        cache_packed: t.packed,
        hashed: t.hashed,
        scanned_at_ns: t.scanned_at_ns,
    };
    Ok((snap, loaded))
}

/// Computes the revision of `root` exactly as [`scan`] would, writing
/// nothing (the Stop hook's read-only workspace check). When every file's
/// stat matches a trusted cache row and no path came or went, the result
/// is the cache's recorded revision without reading a file or building a
/// manifest; otherwise the misses are hashed in memory and the manifest
/// digested.
pub fn check_readonly(root: &Path, cache: &StatCache) -> Result<Check> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    check_walked(walk_tree(root, &stop)?, cache)
}

/// [`check_readonly`] of a tree already walked by [`walk_tree`].
pub fn check_walked(walked: Walked, cache: &StatCache) -> Result<Check> {
    let t = compare_tree(
        walked,
        cache,
        Want::Revision,
        &|_| Ok(()),
        &mut hash_content,
    )?;
    let revision = match (t.revision, t.entries) {
        (Some(r), _) => r,
        (None, entries) => {
            let manifest = Manifest {
                version: 1,
                entries: entries.unwrap_or_default(),
            };
            domain_digest(DOMAIN_REVISION, &canonical_bytes(&manifest)?)
        }
    };
    Ok(Check {
        revision,
        hashed: t.hashed,
    })
}

/// Hashes content in memory (bounded reads), storing nothing.
fn hash_content(c: Content<'_>) -> Result<(Sha256Hex, u64)> {
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
}

/// What a client of a remote authority computes of its workspace: the
/// manifest, its canonical bytes and revision exactly as [`scan`] would
/// record them, and the stat cache rows after the scan. Nothing is
/// written anywhere.
#[derive(Debug)]
pub struct ClientScan {
    /// The manifest.
    pub manifest: Manifest,
    /// Its canonical bytes (what the manifest route receives).
    pub manifest_bytes: Vec<u8>,
    /// The revision id.
    pub revision: Sha256Hex,
    /// Every row of the stat cache after this scan, sorted by path bytes.
    pub cache_rows: Vec<(String, CacheRow)>,
    /// Files whose bytes were read (cache misses and racily clean rows).
    pub hashed: u64,
    /// Wall-clock ns when the walk began.
    pub scanned_at_ns: i64,
}

/// Walks and hashes `root` the way [`scan`] does (same walker, same path
/// and size refusals before any byte is read, same canonical manifest),
/// storing nothing: the client side of a remote checkpoint. `cache` lets
/// an unchanged file be taken from its stat without reading it.
pub fn scan_client(root: &Path, cache: &StatCache, max_revision_bytes: u64) -> Result<ClientScan> {
    let stop = std::sync::atomic::AtomicBool::new(false);
    let walked = walk_tree(root, &stop)?;
    admit_walked(&walked, max_revision_bytes)?;
    let mut t = compare_tree(walked, cache, Want::Entries, &|_| Ok(()), &mut hash_content)?;
    let manifest = Manifest {
        version: 1,
        entries: t.entries.take().unwrap_or_default(),
    };
    check_total(&manifest, max_revision_bytes)?;
    let manifest_bytes = canonical_bytes(&manifest)?;
    let revision = domain_digest(DOMAIN_REVISION, &manifest_bytes);
    let gone: std::collections::HashSet<&str> = t.removals.iter().map(String::as_str).collect();
    let changed: std::collections::HashSet<&str> =
        t.updates.iter().map(|(p, _)| p.as_str()).collect();
    let mut rows: Vec<(String, CacheRow)> = cache
        .rows()
        .filter(|(p, _)| !gone.contains(p) && !changed.contains(p))
        .map(|(p, r)| (p.to_owned(), r))
        .collect();
    rows.extend(t.updates.iter().cloned());
    rows.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(ClientScan {
        manifest,
        manifest_bytes,
        revision,
        cache_rows: rows,
        hashed: t.hashed,
        scanned_at_ns: t.scanned_at_ns,
    })
}

/// Longest symbolic link target a revision may hold (what a snapshot can
/// materialise).
pub const MAX_LINK_TARGET: u64 = 4096;

/// A manifest a remote client sent, admitted.
#[derive(Debug)]
pub struct Admitted {
    /// The manifest.
    pub manifest: Manifest,
    /// Its revision id.
    pub revision: Sha256Hex,
    /// The sum of its sizes.
    pub total_bytes: u64,
}

fn invalid_manifest(msg: impl Into<String>) -> Error {
    Error::new(Code::ManifestInvalid, msg)
}

/// Admits the manifest bytes a remote client sent for a checkpoint, with
/// the same refusals a local [`scan`] applies to a walked tree plus what a
/// walk cannot produce: the bytes must be exactly the canonical manifest
/// (`{"version":1,"entries":[…]}`, entries strictly sorted by path bytes,
/// so the revision is the one a local checkpoint of the same tree
/// records), every mode one of the three, every path one git stores as is
/// (`path_not_representable`), no two paths that fold to one name
/// (`path_not_representable`, [`crate::contract::tree_path::check_twins`]),
/// no path both a file and a directory, sizes
/// within the per-file and link bounds, at most [`MAX_FILES`] entries and
/// at most `max_revision_bytes` in all (`revision_too_large`).
pub fn admit_manifest(bytes: &[u8], max_revision_bytes: u64) -> Result<Admitted> {
    let manifest: Manifest = serde_json::from_slice(bytes)
        .map_err(|e| invalid_manifest(format!("the manifest is not a revision manifest: {e}")))?;
    if manifest.version != 1 {
        return Err(invalid_manifest(format!(
            "manifest version {} is not supported (1)",
            manifest.version
        )));
    }
    if manifest.entries.len() > MAX_FILES {
        return Err(invalid_manifest(format!(
            "the manifest has more than {MAX_FILES} entries"
        )));
    }
    let mut total = 0u64;
    let mut dirs: std::collections::HashSet<&str> = std::collections::HashSet::new();
    let mut prev: Option<&str> = None;
    for (i, e) in manifest.entries.iter().enumerate() {
        if prev.is_some_and(|p| p.as_bytes() >= e.path.as_bytes()) {
            return Err(invalid_manifest(format!(
                "manifest entry {i} is not strictly after the previous one in path byte order"
            ))
            .with("index", i));
        }
        prev = Some(&e.path);
        let link = match e.mode {
            MODE_FILE | MODE_EXEC => false,
            MODE_LINK => true,
            m => {
                return Err(invalid_manifest(format!(
                    "manifest entry {i} has mode {m:o} (100644, 100755 or 120000)"
                ))
                .with("index", i));
            }
        };
        crate::contract::tree_path::check(&e.path, link)?;
        if e.size > MAX_FILE_BYTES || (link && !(1..=MAX_LINK_TARGET).contains(&e.size)) {
            return Err(invalid_manifest(format!(
                "manifest entry {i} has size {} (files at most {MAX_FILE_BYTES}, link targets 1-{MAX_LINK_TARGET})",
                e.size
            ))
            .with("index", i));
        }
        total = total.saturating_add(e.size);
        let mut cut = 0;
        while let Some(k) = e.path.get(cut..).and_then(|r| r.find('/')) {
            dirs.insert(&e.path[..cut + k]);
            cut += k + 1;
        }
    }
    if let Some(e) = manifest
        .entries
        .iter()
        .find(|e| dirs.contains(e.path.as_str()))
    {
        return Err(Error::new(
            Code::PathNotRepresentable,
            format!(
                "the manifest names {:?} both as a file and as a directory",
                e.path.chars().take(200).collect::<String>()
            ),
        )
        .with("path", e.path.chars().take(200).collect::<String>())
        .with("reason", "a file and a directory of the same name"));
    }
    crate::contract::tree_path::check_twins(manifest.entries.iter().map(|e| e.path.as_str()))?;
    if total > max_revision_bytes {
        return Err(too_large(total, max_revision_bytes));
    }
    if canonical_bytes(&manifest)? != bytes {
        return Err(invalid_manifest(
            "the manifest is not in canonical form (agent-task's compact JSON of {version, entries})",
        ));
    }
    Ok(Admitted {
        revision: domain_digest(DOMAIN_REVISION, bytes),
        manifest,
        total_bytes: total,
    })
}

/// Content handed to a scan's sink.
enum Content<'a> {
    Bytes(&'a [u8]),
    Reader(&'a mut dyn std::io::Read),
}

type Sink<'a> = dyn FnMut(Content<'_>) -> Result<(Sha256Hex, u64)> + 'a;

/// What a walk compared with the cache found.
struct Tree {
    /// The cache's recorded revision, when nothing differs from it.
    revision: Option<Sha256Hex>,
    /// Files walked.
    files: usize,
    /// Manifest entries (sorted): always when something differs, else
    /// only when asked for.
    entries: Option<Vec<Entry>>,
    updates: Vec<(String, CacheRow)>,
    removals: Vec<String>,
    /// The packed cache after the scan, when asked for and it changed.
    packed: Option<Vec<u8>>,
    hashed: u64,
    scanned_at_ns: i64,
}

/// What a comparison must produce beyond the revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// The revision only (the hook's read-only check).
    Revision,
    /// The manifest entries too.
    Entries,
    /// The entries and, when it changed, the packed cache after the scan.
    Packed,
    /// [`Want::Packed`], without entries when nothing differs from the
    /// cache (its revision is recorded).
    PackedUnlessUnchanged,
}

/// A workspace walked (what git would track, with stats) and not yet
/// compared with a stat cache: lets a caller walk while it loads the
/// cache.
pub struct Walked {
    found: Vec<Found>,
    scanned_at_ns: i64,
}

/// Walks `root` exactly as [`scan`] and [`check_readonly`] do, reading no
/// file; [`check_walked`] finishes the check. Setting `stop` abandons the
/// walk (an error).
pub fn walk_tree(root: &Path, stop: &std::sync::atomic::AtomicBool) -> Result<Walked> {
    let meta = std::fs::symlink_metadata(root).map_err(|e| Error::io("stat", root, e))?;
    if !meta.is_dir() {
        return Err(Error::new(
            Code::InvalidInput,
            format!("workspace {} is not a directory", root.display()),
        ));
    }
    // Taken before any stat: the racy-clean rule is relative to it.
    let scanned_at_ns = now_ns()?;
    let found = walk(root, stop)?;
    Ok(Walked {
        found,
        scanned_at_ns,
    })
}

/// What [`scan`] and [`check_readonly`] share: which files, their modes,
/// the comparison with the stat cache; `sink` stores or hashes the bytes
/// of a miss. `admit` runs on the walked files before any byte is read,
/// unless the tree is the cache's recorded revision and `want` returns
/// early for it ([`Want::Revision`], [`Want::PackedUnlessUnchanged`]).
fn compare_tree(
    walked: Walked,
    cache: &StatCache,
    want: Want,
    admit: &dyn Fn(&[Found]) -> Result<()>,
    sink: &mut Sink<'_>,
) -> Result<Tree> {
    let Walked {
        found,
        scanned_at_ns,
    } = walked;
    // Merge the sorted walk with the sorted cache rows: a trusted hit per
    // file, or `None` (new, changed or racily clean: read it). A first
    // pass only asks whether anything differs (what the Stop hook and an
    // unchanged rescan need); the hits are kept only for a tree that does.
    let merge = |on_hit: &mut dyn FnMut(Option<CacheRow>), removals: &mut Vec<String>| {
        let mut rows = cache.rows().peekable();
        for f in &found {
            let p = f.rel().as_bytes();
            while let Some((rp, _)) = rows.next_if(|(rp, _)| rp.as_bytes() < p) {
                removals.push(rp.to_owned());
            }
            on_hit(
                rows.next_if(|(rp, _)| rp.as_bytes() == p)
                    .and_then(|(_, c)| {
                        ((c.ino, c.size, c.mtime_ns, c.ctime_ns) == f.key
                            && c.mode == f.mode
                            && cache.trusted(&c))
                        .then_some(c)
                    }),
            );
        }
        removals.extend(rows.map(|(p, _)| p.to_owned()));
    };
    let mut removals = Vec::new();
    let mut all_hit = true;
    merge(&mut |h| all_hit &= h.is_some(), &mut removals);
    let unchanged = removals.is_empty() && all_hit;
    let revision = match cache.state() {
        Some(s) if unchanged => Some(s.revision.clone()),
        _ => None,
    };
    if revision.is_some() && matches!(want, Want::Revision | Want::PackedUnlessUnchanged) {
        return Ok(Tree {
            revision,
            files: found.len(),
            entries: None,
            updates: Vec::new(),
            removals,
            packed: None,
            hashed: 0,
            scanned_at_ns,
        });
    }
    admit(&found)?;
    let mut hits: Vec<Option<CacheRow>> = Vec::with_capacity(found.len());
    merge(&mut |h| hits.push(h), &mut Vec::new());
    let mut entries = Vec::with_capacity(found.len());
    let mut updates = Vec::new();
    let mut hashed = 0u64;
    let misses = hits.iter().filter(|h| h.is_none()).count() as u64;
    crate::progress::phase("hashing files", Some(misses));
    for (f, hit) in found.iter().zip(hits) {
        let (sha, size) = match hit {
            Some(c) => (Sha256Hex::from_bytes(c.sha256), c.size),
            None => {
                hashed += 1;
                crate::progress::inc(1);
                let abs = f.abs();
                let (digest, size) = if f.mode == MODE_LINK {
                    let t = std::fs::read_link(abs).map_err(|e| Error::io("readlink", abs, e))?;
                    let bytes = std::os::unix::ffi::OsStrExt::as_bytes(t.as_os_str()).to_vec();
                    sink(Content::Bytes(&bytes))?
                } else {
                    let mut file = crate::store::private_fs::open_nofollow_read(abs)?;
                    sink(Content::Reader(&mut file))?
                };
                // A file that changed while read is caught by the next scan:
                // the row keeps the stat taken before reading.
                updates.push((
                    f.rel().to_owned(),
                    CacheRow {
                        ino: f.key.0,
                        size,
                        mtime_ns: f.key.2,
                        ctime_ns: f.key.3,
                        mode: f.mode,
                        sha256: digest.to_bytes(),
                    },
                ));
                (digest, size)
            }
        };
        entries.push(Entry {
            path: f.rel().to_owned(),
            mode: f.mode,
            size,
            sha256: sha,
        });
    }
    // Every row after the scan is a walked file's stat (a hit's row
    // matched it) with the digest and size its entry records.
    let changed = revision.is_none() || !updates.is_empty() || !removals.is_empty();
    let packed =
        (matches!(want, Want::Packed | Want::PackedUnlessUnchanged) && changed).then(|| {
            let rows: Vec<CacheRow> = found
                .iter()
                .zip(&entries)
                .map(|(f, e)| CacheRow {
                    ino: f.key.0,
                    size: e.size,
                    mtime_ns: f.key.2,
                    ctime_ns: f.key.3,
                    mode: f.mode,
                    sha256: e.sha256.to_bytes(),
                })
                .collect();
            encode_cache(entries.iter().map(|e| e.path.as_str()).zip(&rows))
        });
    Ok(Tree {
        revision,
        files: found.len(),
        entries: Some(entries),
        updates,
        removals,
        packed,
        hashed,
        scanned_at_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`scan`] of `ws` into `dir`'s store under the default size cap,
    /// `known` answering for every revision.
    fn scan_in(
        ws: &Path,
        dir: &crate::store::DataDir,
        cache: &StatCache,
        known: bool,
    ) -> Result<Snapshot> {
        scan(
            ws,
            &dir.cas(),
            cache,
            &|_| Ok(known),
            DEFAULT_MAX_REVISION_BYTES,
        )
    }

    /// A temporary data directory and a workspace `ws` with a `sub`
    /// directory (the directory, the data directory and its lock).
    fn data_dir_and_workspace() -> (
        tempfile::TempDir,
        crate::store::DataDir,
        crate::store::DirLock,
        std::path::PathBuf,
    ) {
        let t = tempfile::tempdir().expect("tmp");
        let (dir, lock) =
            crate::store::DataDir::create(&t.path().join("d"), std::time::Duration::from_secs(1))
                .expect("dd");
        let ws = t.path().join("ws");
        std::fs::create_dir_all(ws.join("sub")).expect("mkdir");
        (t, dir, lock, ws)
    }

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
        let s = scan_in(&ws, &dir, &StatCache::default(), false).expect("scan");
        let manifest = s.manifest.clone().expect("a new tree's manifest");
        let paths: Vec<_> = manifest
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
            manifest.get("link").expect("link").size,
            "/etc/passwd".len() as u64
        );
        assert_eq!(s.hashed, 4);
        assert_eq!(
            s.manifest_sha256,
            s.manifest_bytes.as_deref().map(Sha256Hex::digest),
            "the manifest's name in the store is its bytes' digest"
        );
        assert!(s.manifest_bytes.is_some());
        let rows = s.cache_updates.clone();
        // Recorded as written: the files changed right before the scan
        // began, so every row is racily clean and is read again.
        let racy = StatCache::new(
            rows.clone(),
            Some(CacheState {
                revision: s.revision.clone(),
                scanned_at_ns: s.scanned_at_ns,
            }),
        );
        let r = check_readonly(&ws, &racy).expect("ro");
        assert_eq!((r.revision.clone(), r.hashed), (s.revision.clone(), 4));
        // Recorded as if the scan had begun well after the last write: the
        // stat matches are trusted and nothing is read or digested.
        let cache = StatCache::new(
            rows.into_iter().rev().collect(),
            Some(CacheState {
                revision: s.revision.clone(),
                scanned_at_ns: s.scanned_at_ns + 10 * COARSE_RACY_MARGIN_NS,
            }),
        );
        let s2 = scan_in(&ws, &dir, &cache, true).expect("rescan");
        assert_eq!((s2.hashed, s2.revision.clone()), (0, s.revision.clone()));
        assert!(s2.manifest_bytes.is_none() && s2.cache_updates.is_empty());
        // The cache's recorded revision: no manifest built.
        assert_eq!((s2.manifest.as_ref(), s2.files), (None, 4));
        // The same revision, unknown to the store: recomputed and stored.
        let s2b = scan_in(&ws, &dir, &cache, false).expect("rescan");
        assert_eq!(s2b.revision, s.revision);
        assert_eq!(s2b.manifest_bytes, s.manifest_bytes);
        assert_eq!(
            s2b.manifest_sha256, s.manifest_sha256,
            "a recorded revision's too"
        );
        assert_eq!(s2b.manifest.as_ref(), Some(&manifest));
        std::fs::write(ws.join("a.txt"), "bb").expect("w");
        let s3 = scan_in(&ws, &dir, &cache, false).expect("rescan");
        assert_eq!(s3.hashed, 1);
        assert_ne!(s3.revision, s.revision);
        // The read-only check computes the same revision and writes nothing.
        let before = dir.cas().stats().expect("stats");
        std::fs::write(ws.join("new.txt"), "n").expect("w");
        let r = check_readonly(&ws, &cache).expect("ro");
        assert_eq!(r.hashed, 2);
        assert_eq!(dir.cas().stats().expect("stats"), before);
        let s4 = scan_in(&ws, &dir, &cache, false).expect("rescan");
        assert_eq!(r.revision, s4.revision);
        // A removed file is a change even when every other stat matches.
        std::fs::remove_file(ws.join("new.txt")).expect("rm");
        std::fs::write(ws.join("a.txt"), "a").expect("w");
        std::fs::remove_file(ws.join("link")).expect("rm");
        let r = check_readonly(&ws, &cache).expect("ro");
        assert_ne!(r.revision, s.revision);
    }

    #[test]
    fn unrepresentable_paths_and_oversized_trees_are_refused_before_reading() {
        let t = tempfile::tempdir().expect("tmp");
        let (dir, _lock) =
            crate::store::DataDir::create(&t.path().join("d"), std::time::Duration::from_secs(1))
                .expect("dd");
        let ws = t.path().join("ws");
        std::fs::create_dir_all(ws.join(".Git")).expect("mkdir");
        std::fs::write(ws.join(".Git/x"), "x").expect("w");
        let e = scan_in(&ws, &dir, &StatCache::default(), false).expect_err("refused");
        assert_eq!(e.code(), Code::PathNotRepresentable);
        std::fs::remove_dir_all(ws.join(".Git")).expect("rm");
        // A sparse file: its apparent size counts, nothing is read.
        let f = std::fs::File::create(ws.join("sparse")).expect("create");
        f.set_len(1 << 30).expect("sparse");
        let before = dir.cas().stats().expect("stats");
        let e = scan(
            &ws,
            &dir.cas(),
            &StatCache::default(),
            &|_| Ok(false),
            1 << 20,
        )
        .expect_err("refused");
        assert_eq!(e.code(), Code::RevisionTooLarge);
        assert_eq!(
            dir.cas().stats().expect("stats"),
            before,
            "nothing was stored"
        );
    }

    #[test]
    fn a_rescan_admits_every_path_unless_the_tree_is_the_recorded_revision() {
        let (_t, dir, _lock, ws) = data_dir_and_workspace();
        std::fs::write(ws.join("a.txt"), "a").expect("w");
        std::fs::write(ws.join("sub/b.txt"), "b").expect("w");
        let s = scan_in(&ws, &dir, &StatCache::default(), false).expect("scan");
        let cache = StatCache::new(
            s.cache_updates.clone(),
            Some(CacheState {
                revision: s.revision.clone(),
                scanned_at_ns: s.scanned_at_ns + 10 * COARSE_RACY_MARGIN_NS,
            }),
        );
        let again = scan(&ws, &dir.cas(), &cache, &|_| Ok(true), 2).expect("unchanged");
        assert_eq!((again.revision, again.hashed), (s.revision.clone(), 0));
        // The size is checked on every scan, the recorded revision's too.
        let e = scan(&ws, &dir.cas(), &cache, &|_| Ok(true), 1).expect_err("cap");
        assert_eq!(e.code(), Code::RevisionTooLarge);
        // A twin beside cached rows, a path git refuses beside them, and a
        // twin of a cached directory: each is a changed tree, admitted
        // whole and refused before anything is read or stored.
        let before = dir.cas().stats().expect("stats");
        for (add, gone) in [("A.txt", "A.txt"), (".GIT/x", ".GIT"), ("SUB/c.txt", "SUB")] {
            let path = ws.join(add);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(&path, "new").expect("w");
            for known in [true, false] {
                let e = scan_in(&ws, &dir, &cache, known).expect_err(add);
                assert_eq!(e.code(), Code::PathNotRepresentable, "{add}");
            }
            let g = ws.join(gone);
            if g.is_dir() {
                std::fs::remove_dir_all(&g).expect("rm");
            } else {
                std::fs::remove_file(&g).expect("rm");
            }
        }
        assert_eq!(dir.cas().stats().expect("stats"), before, "nothing stored");
        // A cached row whose file is replaced by a twin spelling: the
        // tree differs (a path came and one went), so it is admitted; the
        // twin alone is representable.
        std::fs::remove_file(ws.join("a.txt")).expect("rm");
        std::fs::write(ws.join("A.txt"), "a").expect("w");
        let moved = scan_in(&ws, &dir, &cache, true).expect("a rename is a new tree");
        assert_ne!(moved.revision, s.revision);
    }

    #[test]
    fn remote_manifests_are_admitted_only_canonical_sorted_and_representable() {
        let e = |p: &str, mode: u32, size: u64| Entry {
            path: p.into(),
            mode,
            size,
            sha256: Sha256Hex::digest(p.as_bytes()),
        };
        let bytes = |entries: Vec<Entry>| {
            canonical_bytes(&Manifest {
                version: 1,
                entries,
            })
            .expect("bytes")
        };
        let code = |b: &[u8], cap: u64| admit_manifest(b, cap).map_err(|e| e.code()).err();
        let ok = bytes(vec![
            e("a", MODE_FILE, 1),
            e("b/c", MODE_EXEC, 2),
            e("l", MODE_LINK, 3),
        ]);
        let adm = admit_manifest(&ok, 100).expect("admitted");
        assert_eq!(adm.revision, domain_digest(DOMAIN_REVISION, &ok));
        assert_eq!(adm.total_bytes, 6);
        assert_eq!(code(&bytes(vec![]), 0), None, "an empty tree is a tree");
        // Not canonical: whitespace, another key order, unknown fields, version.
        let spaced = String::from_utf8(ok.clone())
            .expect("utf8")
            .replacen(':', ": ", 1);
        assert_eq!(code(spaced.as_bytes(), 100), Some(Code::ManifestInvalid));
        let reordered = br#"{"entries":[],"version":1}"#;
        assert_eq!(code(reordered, 100), Some(Code::ManifestInvalid));
        assert_eq!(
            code(br#"{"version":1,"entries":[],"x":1}"#, 100),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(
            code(br#"{"version":2,"entries":[]}"#, 100),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(code(b"[]", 100), Some(Code::ManifestInvalid));
        // Unsorted, duplicate, bad mode, bad sizes.
        assert_eq!(
            code(
                &bytes(vec![e("b", MODE_FILE, 1), e("a", MODE_FILE, 1)]),
                100
            ),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(
            code(
                &bytes(vec![e("a", MODE_FILE, 1), e("a", MODE_FILE, 1)]),
                100
            ),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(
            code(&bytes(vec![e("a", 0o100600, 1)]), 100),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(
            code(&bytes(vec![e("a", 0o040000, 1)]), 100),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(
            code(&bytes(vec![e("l", MODE_LINK, 0)]), 100),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(
            code(&bytes(vec![e("l", MODE_LINK, 4097)]), 10_000),
            Some(Code::ManifestInvalid)
        );
        assert_eq!(
            code(
                &bytes(vec![e("a", MODE_FILE, MAX_FILE_BYTES + 1)]),
                u64::MAX
            ),
            Some(Code::ManifestInvalid)
        );
        // Paths git would refuse or alias, and a file that is also a directory.
        for p in [
            ".git/config",
            ".GIT/x",
            "a/../b",
            "/abs",
            "a//b",
            "git~1/x",
            ".git /x",
        ] {
            assert_eq!(
                code(&bytes(vec![e(p, MODE_FILE, 1)]), 100),
                Some(Code::PathNotRepresentable),
                "{p}"
            );
        }
        assert_eq!(
            code(&bytes(vec![e(".gitmodules", MODE_LINK, 1)]), 100),
            Some(Code::PathNotRepresentable)
        );
        assert_eq!(
            code(
                &bytes(vec![
                    e("a", MODE_FILE, 1),
                    e("a-x", MODE_FILE, 1),
                    e("a/b", MODE_FILE, 1)
                ]),
                100
            ),
            Some(Code::PathNotRepresentable)
        );
        // Case and normalisation twins (a remote checkpoint too).
        for (a, b) in [("Test.sh", "test.sh"), ("caf\u{e9}", "cafe\u{301}")] {
            let mut v = vec![e(a, MODE_FILE, 1), e(b, MODE_FILE, 1)];
            v.sort_by(|x, y| x.path.as_bytes().cmp(y.path.as_bytes()));
            assert_eq!(
                code(&bytes(v), 100),
                Some(Code::PathNotRepresentable),
                "{a:?} {b:?}"
            );
        }
        // The revision cap counts every size.
        assert_eq!(code(&ok, 5), Some(Code::RevisionTooLarge));
    }

    #[test]
    fn a_client_scan_is_the_local_scan() {
        let (_t, dir, _lock, ws) = data_dir_and_workspace();
        std::fs::write(ws.join(".gitignore"), "*.log\n").expect("w");
        std::fs::write(ws.join("a.txt"), "a").expect("w");
        std::fs::write(ws.join("x.log"), "ignored").expect("w");
        std::fs::write(ws.join("sub/b"), "b").expect("w");
        std::os::unix::fs::symlink("a.txt", ws.join("link")).expect("symlink");
        let before = dir.cas().stats().expect("stats");
        let c =
            scan_client(&ws, &StatCache::default(), DEFAULT_MAX_REVISION_BYTES).expect("client");
        assert_eq!(
            dir.cas().stats().expect("stats"),
            before,
            "a client scan stores nothing"
        );
        let s = scan_in(&ws, &dir, &StatCache::default(), false).expect("scan");
        assert_eq!(c.revision, s.revision);
        assert_eq!(Some(&c.manifest_bytes), s.manifest_bytes.as_ref());
        assert_eq!(c.cache_rows.len(), 4);
        let adm = admit_manifest(&c.manifest_bytes, DEFAULT_MAX_REVISION_BYTES).expect("admit");
        assert_eq!(adm.revision, s.revision);
        // With its own rows trusted, a rescan reads nothing.
        let cache = StatCache::new(
            c.cache_rows.clone(),
            Some(CacheState {
                revision: c.revision.clone(),
                scanned_at_ns: c.scanned_at_ns + 10 * COARSE_RACY_MARGIN_NS,
            }),
        );
        let again = scan_client(&ws, &cache, DEFAULT_MAX_REVISION_BYTES).expect("again");
        assert_eq!((again.hashed, again.revision), (0, s.revision.clone()));
        let e = scan_client(&ws, &StatCache::default(), 1).expect_err("cap");
        assert_eq!(e.code(), Code::RevisionTooLarge);
    }

    #[test]
    fn the_packed_cache_is_the_rows_after_a_scan_and_damage_is_no_cache() {
        let (_t, dir, _lock, ws) = data_dir_and_workspace();
        std::fs::write(ws.join("a.txt"), "a").expect("w");
        std::fs::write(ws.join("sub/b"), "b").expect("w");
        std::os::unix::fs::symlink("a.txt", ws.join("link")).expect("symlink");
        let scan_with = |cache: &StatCache| {
            scan(
                &ws,
                &dir.cas(),
                cache,
                &|_| Ok(true),
                DEFAULT_MAX_REVISION_BYTES,
            )
            .expect("scan")
        };
        let first = scan_with(&StatCache::default());
        let packed = first.cache_packed.clone().expect("a new cache is packed");
        let client =
            scan_client(&ws, &StatCache::default(), DEFAULT_MAX_REVISION_BYTES).expect("client");
        let rows = decode_cache(&packed).expect("decodes");
        assert_eq!(
            rows, client.cache_rows,
            "one row per file, as a client keeps them"
        );
        // Trusted and unchanged: nothing to write.
        let cache = StatCache::new(
            rows,
            Some(CacheState {
                revision: first.revision.clone(),
                scanned_at_ns: first.scanned_at_ns + 10 * COARSE_RACY_MARGIN_NS,
            }),
        );
        let same = scan_with(&cache);
        assert_eq!((same.hashed, same.cache_packed), (0, None));
        // Read in place, the packed value is the same cache.
        let in_place =
            StatCache::from_packed(packed.clone(), cache.state().cloned()).expect("checks");
        assert!(in_place.rows().eq(cache.rows()));
        assert_eq!(scan_with(&in_place).hashed, 0);
        assert_eq!(
            check_readonly(&ws, &in_place).expect("check").revision,
            first.revision,
            "the hook's check reads it in place too"
        );
        // One file changed: the whole cache is packed again, that row new.
        std::fs::write(ws.join("sub/b"), "bb").expect("w");
        let changed = scan_with(&cache).cache_packed.expect("changed");
        let after = decode_cache(&changed).expect("decodes");
        assert_eq!(after.len(), 3);
        assert_eq!(after[2].0, "sub/b");
        assert_eq!(after[2].1.size, 2);
        // Damage of any kind decodes as no cache.
        let unsorted = encode_cache(after.iter().rev().map(|(p, r)| (p.as_str(), r)));
        assert!(decode_cache(&unsorted).is_none(), "out of order");
        assert!(StatCache::from_packed(unsorted.clone(), None).is_none());
        let twice = [after[0].clone(), after[0].clone()];
        assert!(decode_cache(&encode_cache(twice.iter().map(|(p, r)| (p.as_str(), r)))).is_none());
        for cut in [0, 4, 8, 9, 12, changed.len() - 1] {
            assert!(
                decode_cache(&changed[..cut]).is_none(),
                "truncated at {cut}"
            );
            assert!(StatCache::from_packed(changed[..cut].to_vec(), None).is_none());
        }
        let mut trailing = changed.clone();
        trailing.push(0);
        assert!(decode_cache(&trailing).is_none(), "trailing byte");
        let mut magic = changed.clone();
        magic[4] = 2;
        assert!(decode_cache(&magic).is_none(), "another format");
        let mut count = changed.clone();
        count[8] = 4;
        assert!(decode_cache(&count).is_none(), "count beyond the rows");
        let mut utf8 = changed.clone();
        utf8[13] = 0xff;
        assert!(decode_cache(&utf8).is_none(), "path not UTF-8");
        assert_eq!(
            decode_cache(&encode_cache(std::iter::empty())),
            Some(Vec::new())
        );
    }

    #[test]
    fn racy_rule() {
        let row = |ctime_ns| CacheRow {
            ino: 1,
            size: 1,
            mtime_ns: ctime_ns,
            ctime_ns,
            mode: MODE_FILE,
            sha256: Sha256Hex::digest(b"x").to_bytes(),
        };
        let at = 1_700_000_000_123_456_789;
        let c = |state: Option<i64>| {
            StatCache::new(
                Vec::new(),
                state.map(|scanned_at_ns| CacheState {
                    revision: Sha256Hex::digest(b"r"),
                    scanned_at_ns,
                }),
            )
        };
        let old = at - RACY_MARGIN_NS - 1;
        assert!(c(Some(at)).trusted(&row(old)));
        assert!(!c(Some(at)).trusted(&row(at - RACY_MARGIN_NS)));
        assert!(!c(Some(at)).trusted(&row(at + 5)));
        assert!(!c(None).trusted(&row(old)));
        // Whole-second change times get the coarse margin.
        let whole = (at / 1_000_000_000 - 1) * 1_000_000_000;
        assert!(!c(Some(at)).trusted(&row(whole)));
        assert!(c(Some(at)).trusted(&row(whole - COARSE_RACY_MARGIN_NS)));
    }
}
