//! The content-addressed store: `cas/sha256/ab/cdef…` (two hex digits of
//! fan-out, then the remaining 62).
//!
//! Writes stream bytes through SHA-256 into a 0600 temp file under
//! `cas/tmp/` (same file system), fsync it, rename it into place and fsync
//! the object's directory, so an object is either absent or complete: a
//! crash leaves at most an orphan temp file, never a partial object. Reads
//! verify size and digest and fail with `integrity_error` on a mismatch.
//! Putting bytes whose object exists but is corrupt repairs it atomically.
//!
//! Orphan temp files (a writer killed mid-put) are swept by writers: every
//! time a command takes the data-directory write lock it removes the
//! `cas/tmp/put-*` files whose last modification is older than
//! [`TEMP_SWEEP_AGE`] (one hour). A long-lived writer that takes the lock
//! once per batch (`serve`'s data writer, a bulk ingest: a
//! [`super::KeptDirLock`]) sweeps at its first batch and then at most
//! every [`super::TEMP_SWEEP_EVERY`] (ten minutes), so an orphan lives at
//! most about 70 minutes under it. A put still in progress keeps touching
//! its temp file, so only a put stalled for that long can lose it (its
//! rename then fails with `io_error`; nothing half-written is ever named).
//! Read commands and the Stop hook never take the lock and never sweep.

use super::private_fs;
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use sha2::{Digest, Sha256};
use std::fs;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

/// The outcome of a put (`cas put` prints it).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PutOutcome {
    /// SHA-256 of the bytes.
    pub digest: Sha256Hex,
    /// Length in bytes.
    pub size: u64,
    /// Whether a new object was written (false: it existed and was intact).
    pub created: bool,
    /// Whether a corrupt existing object was replaced.
    pub repaired: bool,
}

/// Counts for `info`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct CasStats {
    /// Number of objects.
    pub objects: u64,
    /// Total bytes of objects.
    pub bytes: u64,
    /// Orphan temp files left by interrupted writes.
    pub temp_files: u64,
}

/// Puts made durable together. Objects written by a batch are complete
/// files renamed into place but not yet fsynced; a crash before
/// [`CasBatch::commit`] can leave a torn object, which every read and put
/// detects by its digest (`integrity_error`, repaired by the next put).
/// Nothing may name a batch's objects durably before `commit` returns.
#[derive(Debug)]
pub struct CasBatch<'a> {
    cas: &'a Cas,
    dirs: std::collections::HashSet<PathBuf>,
    written: u64,
}

impl CasBatch<'_> {
    /// Streams bytes into the store without a per-object fsync.
    pub fn put_reader(&mut self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome> {
        let out = self
            .cas
            .put_inner(reader, max_bytes, None, Some(&mut self.dirs))?;
        if out.created || out.repaired {
            self.written += 1;
        }
        Ok(out)
    }

    /// Stores bytes without a per-object fsync.
    pub fn put_bytes(&mut self, bytes: &[u8]) -> Result<PutOutcome> {
        self.put_reader(&mut &bytes[..], u64::MAX)
    }

    /// Moves a staged file (already verified as `digest` of `size` bytes,
    /// [`super::Staging`]) into the store by renaming it, without a copy or
    /// a per-object fsync. An intact existing object wins and the staged
    /// file is removed; a corrupt one is replaced (repaired).
    pub fn adopt(&mut self, staged: &Path, digest: &Sha256Hex, size: u64) -> Result<PutOutcome> {
        let md = fs::symlink_metadata(staged).map_err(|e| Error::io("stat", staged, e))?;
        if !md.is_file() || md.len() != size {
            return Err(Error::new(
                Code::IntegrityError,
                format!("staged blob {digest} is not a {size}-byte file"),
            ));
        }
        let path = self.cas.object_path(digest);
        let mut repaired = false;
        match self.cas.verify_path(&path, digest, Some(size)) {
            Ok(true) => {
                fs::remove_file(staged).map_err(|e| Error::io("remove", staged, e))?;
                return Ok(PutOutcome {
                    digest: digest.clone(),
                    size,
                    created: false,
                    repaired: false,
                });
            }
            Ok(false) => {}
            Err(e) if e.code() == Code::IntegrityError => repaired = true,
            Err(e) => return Err(e),
        }
        let dir = path
            .parent()
            .ok_or_else(|| Error::internal("object path has no parent"))?;
        if !self.dirs.contains(dir) {
            private_fs::ensure_private_dir(dir)?;
            self.dirs.insert(dir.to_path_buf());
        }
        fs::rename(staged, &path).map_err(|e| Error::io("rename into", &path, e))?;
        self.written += 1;
        Ok(PutOutcome {
            digest: digest.clone(),
            size,
            created: !repaired,
            repaired,
        })
    }

    /// Makes every object of the batch durable: one `syncfs(2)` of the
    /// store's file system (file data, inodes and directory entries).
    pub fn commit(self) -> Result<()> {
        if self.written == 0 {
            return Ok(());
        }
        private_fs::sync_filesystem(&self.cas.root)
    }
}

/// A handle on a CAS directory.
#[derive(Debug, Clone)]
pub struct Cas {
    root: PathBuf,
}

const BUF: usize = 64 * 1024;

/// Age past which a writer removes an orphan CAS temp file.
pub const TEMP_SWEEP_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Prefix of the temp files of a put.
const TEMP_PREFIX: &str = "put-";

impl Cas {
    pub(crate) fn new(root: PathBuf) -> Self {
        Cas { root }
    }

    /// Creates the directory skeleton (called under the lock by `init`).
    pub(crate) fn ensure_dirs(&self) -> Result<()> {
        private_fs::ensure_private_dir(&self.root)?;
        private_fs::ensure_private_dir(&self.root.join("sha256"))?;
        private_fs::ensure_private_dir(&self.root.join("tmp"))
    }

    /// Where the object with this digest lives.
    pub fn object_path(&self, digest: &Sha256Hex) -> PathBuf {
        let h = digest.as_str();
        self.root.join("sha256").join(&h[..2]).join(&h[2..])
    }

    /// Stores bytes. See [`Cas::put_reader`].
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<PutOutcome> {
        self.put_reader(&mut &bytes[..], u64::MAX)
    }

    /// Streams bytes from `reader` into the store, refusing more than
    /// `max_bytes` (`too_large`, nothing stored).
    pub fn put_reader(&self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome> {
        self.put_inner(reader, max_bytes, None, None)
    }

    /// Streams exactly the object `digest` of `size` bytes from `reader`:
    /// bytes of another digest or length are `integrity_error` and nothing
    /// is stored.
    pub fn put_expected(
        &self,
        reader: &mut dyn Read,
        digest: &Sha256Hex,
        size: u64,
    ) -> Result<PutOutcome> {
        self.put_inner(reader, size, Some((digest, size)), None)
    }

    /// Starts a batch of puts made durable together by [`CasBatch::commit`]
    /// (one `syncfs` instead of two fsyncs per object). Use it for many
    /// small objects (a snapshot); commit before any row names them.
    pub fn batch(&self) -> CasBatch<'_> {
        CasBatch {
            cas: self,
            dirs: std::collections::HashSet::new(),
            written: 0,
        }
    }

    fn put_inner(
        &self,
        reader: &mut dyn Read,
        max_bytes: u64,
        expect: Option<(&Sha256Hex, u64)>,
        mut batch: Option<&mut std::collections::HashSet<PathBuf>>,
    ) -> Result<PutOutcome> {
        let tmp_dir = self.root.join("tmp");
        let mut tmp = tempfile::Builder::new()
            .prefix(TEMP_PREFIX)
            .tempfile_in(&tmp_dir)
            .map_err(|e| Error::io("create temp file in", &tmp_dir, e))?;
        let (digest, size) = super::hashed::copy_hashed(
            reader,
            &mut tmp,
            max_bytes,
            || match expect {
                Some((d, n)) => mismatch(d, n, "more bytes than its length"),
                None => Error::new(Code::TooLarge, format!("content exceeds {max_bytes} bytes")),
            },
            |e| Error::new(Code::Io, format!("reading input: {e}")),
        )?;
        if let Some((d, n)) = expect
            && (digest != *d || size != n)
        {
            // The temp file is removed when `tmp` drops: nothing is stored.
            return Err(mismatch(d, n, &format!("{size} bytes hashing to {digest}")));
        }
        let path = self.object_path(&digest);
        let mut repaired = false;
        match self.verify_path(&path, &digest, Some(size)) {
            Ok(true) => {
                return Ok(PutOutcome {
                    digest,
                    size,
                    created: false,
                    repaired: false,
                });
            }
            Ok(false) => {}
            Err(e) if e.code() == Code::IntegrityError => repaired = true,
            Err(e) => return Err(e),
        }
        if batch.is_none() {
            tmp.as_file()
                .sync_all()
                .map_err(|e| Error::io("fsync", tmp.path(), e))?;
        }
        let dir = path
            .parent()
            .ok_or_else(|| Error::internal("object path has no parent"))?;
        match batch.as_deref_mut() {
            Some(seen) if seen.contains(dir) => {}
            Some(seen) => {
                private_fs::ensure_private_dir(dir)?;
                seen.insert(dir.to_path_buf());
            }
            None => private_fs::ensure_private_dir(dir)?,
        }
        tmp.persist(&path)
            .map_err(|e| Error::io("rename into", &path, e.error))?;
        if batch.is_none() {
            private_fs::sync_dir(dir)?;
        }
        Ok(PutOutcome {
            digest,
            size,
            created: !repaired,
            repaired,
        })
    }

    /// Whether an object of this digest and size exists, by a stat alone
    /// (no read): what a remote checkpoint's negotiation counts as present.
    /// A file of another size counts as absent, so it is sent again and the
    /// adoption repairs it.
    pub fn has(&self, digest: &Sha256Hex, size: u64) -> Result<bool> {
        let p = self.object_path(digest);
        match fs::symlink_metadata(&p) {
            Ok(md) => Ok(md.is_file() && md.len() == size),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io("stat", &p, e)),
        }
    }

    /// The staging area of remote checkpoints, beside the objects.
    pub fn staging(&self) -> super::Staging {
        super::Staging::new(self.root.join("staging"))
    }

    /// Whether an intact object exists (`Ok(false)`: absent; `integrity_error`:
    /// present but wrong).
    pub fn verify(&self, digest: &Sha256Hex, expected_size: Option<u64>) -> Result<bool> {
        self.verify_path(&self.object_path(digest), digest, expected_size)
    }

    fn verify_path(
        &self,
        path: &Path,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
    ) -> Result<bool> {
        let mut f = match private_fs::open_nofollow_read(path) {
            Ok(f) => f,
            Err(e) if e.code() == Code::NotFound => return Ok(false),
            Err(e) => return Err(e),
        };
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; BUF];
        loop {
            let n = f.read(&mut buf).map_err(|e| Error::io("read", path, e))?;
            if n == 0 {
                break;
            }
            size += n as u64;
            hasher.update(&buf[..n]);
        }
        let got = Sha256Hex::from_bytes(hasher.finalize().into());
        if got != *digest || expected_size.is_some_and(|s| s != size) {
            return Err(integrity(digest, path));
        }
        Ok(true)
    }

    /// Reads a whole object, verifying its digest (and size when given)
    /// before returning any byte. Objects over `max_bytes` are refused.
    pub fn read(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
    ) -> Result<Vec<u8>> {
        let path = self.object_path(digest);
        let f = private_fs::open_nofollow_read(&path).map_err(|e| {
            if e.code() == Code::NotFound {
                Error::new(
                    Code::IntegrityError,
                    format!("object {digest} is missing from the store"),
                )
                .with("digest", digest.to_string())
            } else {
                e
            }
        })?;
        let len = f.metadata().map_err(|e| Error::io("stat", &path, e))?.len();
        if expected_size.is_some_and(|s| s != len) {
            return Err(integrity(digest, &path));
        }
        if len > max_bytes {
            return Err(Error::new(
                Code::TooLarge,
                format!("object {digest} is {len} bytes, over {max_bytes}"),
            ));
        }
        let mut bytes = Vec::with_capacity(len as usize);
        f.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", &path, e))?;
        if bytes.len() as u64 != len || Sha256Hex::digest(&bytes) != *digest {
            return Err(integrity(digest, &path));
        }
        Ok(bytes)
    }

    /// Streams an object into `out` in bounded chunks (never the whole
    /// object in memory) and verifies its size first and its digest at the
    /// end. On `integrity_error` the bytes already written are wrong: the
    /// caller must discard what `out` received.
    pub fn copy_to(
        &self,
        digest: &Sha256Hex,
        expected_size: u64,
        out: &mut dyn Write,
    ) -> Result<u64> {
        let path = self.object_path(digest);
        let mut f = private_fs::open_nofollow_read(&path).map_err(|e| {
            if e.code() == Code::NotFound {
                Error::new(
                    Code::IntegrityError,
                    format!("object {digest} is missing from the store"),
                )
                .with("digest", digest.to_string())
            } else {
                e
            }
        })?;
        let len = f.metadata().map_err(|e| Error::io("stat", &path, e))?.len();
        if len != expected_size {
            return Err(integrity(digest, &path));
        }
        let mut hasher = Sha256::new();
        let mut size = 0u64;
        let mut buf = vec![0u8; BUF];
        loop {
            let n = match f.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read", &path, e)),
            };
            size += n as u64;
            if size > expected_size {
                return Err(integrity(digest, &path));
            }
            hasher.update(&buf[..n]);
            out.write_all(&buf[..n])
                .map_err(|e| Error::new(Code::Io, format!("writing object {digest}: {e}")))?;
        }
        if size != expected_size || Sha256Hex::from_bytes(hasher.finalize().into()) != *digest {
            return Err(integrity(digest, &path));
        }
        Ok(size)
    }

    /// Verifies every object against its name (read-only). Returns the
    /// number checked and the digests of corrupt objects.
    pub fn fsck(&self) -> Result<(u64, Vec<String>)> {
        let mut checked = 0u64;
        let mut corrupt = Vec::new();
        let objects = self.root.join("sha256");
        for fan in read_dir_if_exists(&objects)? {
            let fan = fan.map_err(|e| Error::io("list", &objects, e))?;
            for obj in read_dir_if_exists(&fan.path())? {
                let obj = obj.map_err(|e| Error::io("list", &fan.path(), e))?;
                let name = format!(
                    "{}{}",
                    fan.file_name().to_string_lossy(),
                    obj.file_name().to_string_lossy()
                );
                checked += 1;
                match Sha256Hex::parse(&name) {
                    Ok(d) => match self.verify_path(&obj.path(), &d, None) {
                        Ok(_) => {}
                        Err(e)
                            if e.code() == Code::IntegrityError
                                || e.code() == Code::SymlinkRefused =>
                        {
                            corrupt.push(name)
                        }
                        Err(e) => return Err(e),
                    },
                    Err(_) => corrupt.push(name),
                }
            }
        }
        corrupt.sort();
        Ok((checked, corrupt))
    }

    /// Calls `each` with the name (the 64 characters a digest would be)
    /// and size of every object file, in no particular order (read-only).
    pub fn list(&self, each: &mut dyn FnMut(&str, u64) -> Result<()>) -> Result<()> {
        let objects = self.root.join("sha256");
        for fan in read_dir_if_exists(&objects)? {
            let fan = fan.map_err(|e| Error::io("list", &objects, e))?;
            for obj in read_dir_if_exists(&fan.path())? {
                let obj = obj.map_err(|e| Error::io("list", &fan.path(), e))?;
                let md = fs::symlink_metadata(obj.path())
                    .map_err(|e| Error::io("stat", &obj.path(), e))?;
                let name = format!(
                    "{}{}",
                    fan.file_name().to_string_lossy(),
                    obj.file_name().to_string_lossy()
                );
                each(&name, md.len())?;
            }
        }
        Ok(())
    }

    /// Removes an object (absent: `Ok(false)`) under the write lock (the
    /// `DirLock` is the proof), durably. Only a migration that verified the
    /// destination's copy may call it: nothing else ever deletes a blob.
    pub fn delete(&self, digest: &Sha256Hex, _lock: &super::DirLock) -> Result<bool> {
        let path = self.object_path(digest);
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(Error::io("remove", &path, e)),
        }
        if let Some(dir) = path.parent() {
            private_fs::sync_dir(dir)?;
        }
        Ok(true)
    }

    /// Removes the orphan temp files (`cas/tmp/put-*`, regular files) last
    /// modified at least `age` before `now`, under the write lock (the
    /// `DirLock` is the proof; [`private_fs::sweep_temp_files`]). Returns
    /// how many were removed. A file that vanished meanwhile is not an
    /// error.
    pub fn sweep_temp(
        &self,
        _lock: &super::DirLock,
        now: std::time::SystemTime,
        age: std::time::Duration,
    ) -> Result<u64> {
        private_fs::sweep_temp_files(&self.root.join("tmp"), TEMP_PREFIX, now, age)
    }

    /// Counts objects, their bytes and orphan temp files (read-only).
    pub fn stats(&self) -> Result<CasStats> {
        let mut s = CasStats::default();
        let objects = self.root.join("sha256");
        for fan in read_dir_if_exists(&objects)? {
            let fan = fan.map_err(|e| Error::io("list", &objects, e))?;
            if !fan
                .file_type()
                .map_err(|e| Error::io("stat", &fan.path(), e))?
                .is_dir()
            {
                continue;
            }
            for obj in read_dir_if_exists(&fan.path())? {
                let obj = obj.map_err(|e| Error::io("list", &fan.path(), e))?;
                let md = obj
                    .metadata()
                    .map_err(|e| Error::io("stat", &obj.path(), e))?;
                if md.is_file() {
                    s.objects += 1;
                    s.bytes += md.len();
                }
            }
        }
        s.temp_files = read_dir_if_exists(&self.root.join("tmp"))?.count() as u64;
        Ok(s)
    }
}

fn read_dir_if_exists(p: &Path) -> Result<Box<dyn Iterator<Item = std::io::Result<fs::DirEntry>>>> {
    match fs::read_dir(p) {
        Ok(it) => Ok(Box::new(it)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Box::new(std::iter::empty())),
        Err(e) => Err(Error::io("list", p, e)),
    }
}

fn mismatch(digest: &Sha256Hex, size: u64, got: &str) -> Error {
    Error::new(
        Code::IntegrityError,
        format!("the bytes put as object {digest} of {size} bytes were {got}; nothing was stored"),
    )
    .with("digest", digest.to_string())
    .with("size", size)
}

fn integrity(digest: &Sha256Hex, path: &Path) -> Error {
    Error::new(
        Code::IntegrityError,
        format!("object {digest} does not match its digest or size"),
    )
    .with("digest", digest.to_string())
    .with("path", path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cas() -> (tempfile::TempDir, Cas) {
        let t = tempfile::tempdir().expect("tempdir");
        let c = Cas::new(t.path().join("cas"));
        c.ensure_dirs().expect("dirs");
        (t, c)
    }

    #[test]
    fn put_read_dedupe_repair() {
        let (_t, c) = cas();
        let a = c.put_bytes(b"hello").expect("put");
        assert!(a.created);
        assert_eq!(
            a.digest.as_str(),
            "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"
        );
        assert_eq!(c.read(&a.digest, Some(5), 100).expect("read"), b"hello");
        let b = c.put_bytes(b"hello").expect("put");
        assert!(!b.created && !b.repaired);
        fs::write(c.object_path(&a.digest), b"HELLO").expect("corrupt");
        assert_eq!(
            c.read(&a.digest, None, 100).map_err(|e| e.code()).err(),
            Some(Code::IntegrityError)
        );
        let mut out = Vec::new();
        assert_eq!(
            c.copy_to(&a.digest, 5, &mut out)
                .map_err(|e| e.code())
                .err(),
            Some(Code::IntegrityError),
            "a streamed copy verifies too"
        );
        let r = c.put_bytes(b"hello").expect("repair");
        let mut out = Vec::new();
        assert_eq!(c.copy_to(&r.digest, 5, &mut out).expect("copy"), 5);
        assert_eq!(out, b"hello");
        assert!(
            c.copy_to(&r.digest, 4, &mut Vec::new()).is_err(),
            "size is checked"
        );
        assert!(r.repaired);
        assert_eq!(c.read(&a.digest, Some(5), 100).expect("read"), b"hello");
        assert_eq!(c.stats().expect("stats").objects, 1);
    }

    #[test]
    fn sweep_removes_only_old_put_temp_files() {
        let (t, c) = cas();
        let tmp = t.path().join("cas/tmp");
        let now = std::time::SystemTime::now();
        let plant = |name: &str, age_s: u64| {
            let p = tmp.join(name);
            let f = fs::File::create(&p).expect("create");
            f.set_modified(now - std::time::Duration::from_secs(age_s))
                .expect("mtime");
            p
        };
        let old = plant("put-old", 7200);
        let young = plant("put-young", 60);
        let other = plant("keep-other", 7200);
        fs::create_dir(tmp.join("put-dir")).expect("mkdir");
        let lock =
            super::super::lock::acquire(&t.path().join("lock"), std::time::Duration::from_secs(1))
                .expect("lock");
        assert_eq!(c.sweep_temp(&lock, now, TEMP_SWEEP_AGE).expect("sweep"), 1);
        assert!(!old.exists());
        assert!(young.exists() && other.exists() && tmp.join("put-dir").exists());
        // Later, the young one is old too.
        let later = now + std::time::Duration::from_secs(3600);
        assert_eq!(
            c.sweep_temp(&lock, later, TEMP_SWEEP_AGE).expect("sweep"),
            1
        );
        assert!(!young.exists());
    }

    #[test]
    fn too_large_stores_nothing() {
        let (_t, c) = cas();
        let e = c
            .put_reader(&mut &b"0123456789"[..], 4)
            .expect_err("refused");
        assert_eq!(e.code(), Code::TooLarge);
        assert_eq!(c.stats().expect("stats"), CasStats::default());
    }
}
