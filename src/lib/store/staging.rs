//! The staging area of remote checkpoints: `cas/staging/sha256/ab/cdef…`,
//! beside the CAS on the same file system.
//!
//! A blob an agent uploads through the workspace endpoint lands here, never
//! in the CAS: only a committed checkpoint moves (renames) the blobs its
//! revision references into the CAS ([`super::CasBatch::adopt`]). What is
//! staged and not yet referenced is accounted per actor by the authority
//! (quota) and removed when it expires, so an agent cannot fill the CAS with
//! bytes no revision names.
//!
//! Every staged file is written through a 0600 temp file under
//! `cas/staging/tmp/`, hashed while it streams and renamed into place only
//! when its digest and size are the expected ones. Files are made durable in
//! batches: [`Staging::sync`] (one `syncfs`) before any row names them.

use super::private_fs;
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

const BUF: usize = 64 * 1024;

/// A handle on the staging directory.
#[derive(Debug, Clone)]
pub struct Staging {
    root: PathBuf,
}

impl Staging {
    pub(crate) fn new(root: PathBuf) -> Staging {
        Staging { root }
    }

    /// Creates `staging/`, `staging/sha256/` and `staging/tmp/` when missing.
    pub fn ensure_dirs(&self) -> Result<()> {
        private_fs::ensure_private_dir(&self.root)?;
        private_fs::ensure_private_dir(&self.root.join("sha256"))?;
        private_fs::ensure_private_dir(&self.root.join("tmp"))
    }

    /// Where the staged blob with this digest lives.
    pub fn path(&self, digest: &Sha256Hex) -> PathBuf {
        let h = digest.as_str();
        self.root.join("sha256").join(&h[..2]).join(&h[2..])
    }

    /// Whether a staged file of this digest and size is present (a stat, no
    /// read: staged files were verified when they were written).
    pub fn present(&self, digest: &Sha256Hex, size: u64) -> Result<bool> {
        let p = self.path(digest);
        match std::fs::symlink_metadata(&p) {
            Ok(md) => Ok(md.is_file() && md.len() == size),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io("stat", &p, e)),
        }
    }

    fn temp(&self) -> Result<tempfile::NamedTempFile> {
        self.ensure_dirs()?;
        let tmp_dir = self.root.join("tmp");
        tempfile::Builder::new()
            .prefix("stage-")
            .tempfile_in(&tmp_dir)
            .map_err(|e| Error::io("create temp file in", &tmp_dir, e))
    }

    fn place(&self, tmp: tempfile::NamedTempFile, digest: &Sha256Hex) -> Result<()> {
        let path = self.path(digest);
        let dir = path
            .parent()
            .ok_or_else(|| Error::internal("staged path has no parent"))?;
        private_fs::ensure_private_dir(dir)?;
        tmp.persist(&path)
            .map_err(|e| Error::io("rename into", &path, e.error))?;
        Ok(())
    }

    /// Streams exactly `size` bytes from `reader` and stages them as
    /// `expected` when they hash to it: a body that ends early is
    /// `invalid_request`, bytes of another digest `blob_digest_mismatch`;
    /// either way nothing of the blob is kept. The file is not fsynced
    /// here: call [`Staging::sync`] before a row names it.
    pub fn put_exact(&self, reader: &mut dyn Read, expected: &Sha256Hex, size: u64) -> Result<()> {
        let mut tmp = self.temp()?;
        let mut hasher = Sha256::new();
        let mut left = size;
        let mut buf = vec![0u8; BUF];
        while left > 0 {
            let want = usize::try_from(left.min(BUF as u64)).unwrap_or(BUF);
            let n = match reader.read(&mut buf[..want]) {
                Ok(0) => {
                    return Err(Error::new(
                        Code::InvalidRequest,
                        format!(
                            "the body ended inside blob {expected} ({} of {size} bytes)",
                            size - left
                        ),
                    )
                    .with("sha256", expected.to_string()));
                }
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(read_error(e)),
            };
            hasher.update(&buf[..n]);
            tmp.write_all(&buf[..n])
                .map_err(|e| Error::io("write", tmp.path(), e))?;
            left -= n as u64;
        }
        let got = Sha256Hex::from_bytes(hasher.finalize().into());
        if got != *expected {
            return Err(Error::new(
                Code::BlobDigestMismatch,
                format!(
                    "the {size} bytes sent as blob {expected} hash to {got}; nothing was stored"
                ),
            )
            .with("sha256", expected.to_string())
            .with("actual_sha256", got.to_string()));
        }
        self.place(tmp, expected)
    }

    /// Streams `reader` to its end (at most `max_bytes`, else
    /// `request_too_large` and nothing kept) and stages it under its own
    /// digest, which it returns with the size. Not fsynced (see
    /// [`Staging::sync`]).
    pub fn put_any(&self, reader: &mut dyn Read, max_bytes: u64) -> Result<(Sha256Hex, u64)> {
        let mut tmp = self.temp()?;
        let (digest, size) = super::hashed::copy_hashed(
            reader,
            &mut tmp,
            max_bytes,
            || {
                Error::new(
                    Code::RequestTooLarge,
                    format!("the body exceeds {max_bytes} bytes"),
                )
            },
            read_error,
        )?;
        self.place(tmp, &digest)?;
        Ok((digest, size))
    }

    /// Reads a whole staged file of at most `max_bytes`, verifying its
    /// digest and size.
    pub fn read(&self, digest: &Sha256Hex, size: u64, max_bytes: u64) -> Result<Vec<u8>> {
        let p = self.path(digest);
        if size > max_bytes {
            return Err(Error::new(
                Code::TooLarge,
                format!("staged blob {digest} is {size} bytes, over {max_bytes}"),
            ));
        }
        let f = private_fs::open_nofollow_read(&p)?;
        let mut bytes = Vec::new();
        f.take(max_bytes.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io("read", &p, e))?;
        if bytes.len() as u64 != size || Sha256Hex::digest(&bytes) != *digest {
            return Err(Error::new(
                Code::IntegrityError,
                format!("staged blob {digest} does not match its digest or size"),
            ));
        }
        Ok(bytes)
    }

    /// Removes a staged file (absent is fine).
    pub fn remove(&self, digest: &Sha256Hex) -> Result<()> {
        let p = self.path(digest);
        match std::fs::remove_file(&p) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io("remove", &p, e)),
        }
    }

    /// Makes every staged file durable: one `syncfs(2)` of the file system.
    pub fn sync(&self) -> Result<()> {
        private_fs::sync_filesystem(&self.root)
    }

    /// Removes staged files and temp files last modified before `cutoff`
    /// whose digest `keep` does not claim (files a crash left without a
    /// row). Returns how many were removed.
    pub fn sweep(
        &self,
        cutoff: std::time::SystemTime,
        keep: &mut dyn FnMut(&Sha256Hex) -> Result<bool>,
    ) -> Result<u64> {
        let mut removed = 0u64;
        let old = |p: &Path| -> bool {
            std::fs::symlink_metadata(p)
                .and_then(|m| m.modified())
                .is_ok_and(|t| t < cutoff)
        };
        for e in read_dir(&self.root.join("tmp"))? {
            let p = e.map_err(|e| Error::io("list", &self.root, e))?.path();
            if old(&p) && std::fs::remove_file(&p).is_ok() {
                removed += 1;
            }
        }
        let objects = self.root.join("sha256");
        for fan in read_dir(&objects)? {
            let fan = fan.map_err(|e| Error::io("list", &objects, e))?;
            for obj in read_dir(&fan.path())? {
                let obj = obj.map_err(|e| Error::io("list", &fan.path(), e))?;
                let name = format!(
                    "{}{}",
                    fan.file_name().to_string_lossy(),
                    obj.file_name().to_string_lossy()
                );
                let p = obj.path();
                if !old(&p) {
                    continue;
                }
                let claimed = match Sha256Hex::parse(&name) {
                    Ok(d) => keep(&d)?,
                    Err(_) => false,
                };
                if !claimed && std::fs::remove_file(&p).is_ok() {
                    removed += 1;
                }
            }
        }
        Ok(removed)
    }

    /// Number of staged files and their bytes (for `info` and tests).
    pub fn stats(&self) -> Result<(u64, u64)> {
        let (mut n, mut bytes) = (0u64, 0u64);
        let objects = self.root.join("sha256");
        for fan in read_dir(&objects)? {
            let fan = fan.map_err(|e| Error::io("list", &objects, e))?;
            for obj in read_dir(&fan.path())? {
                let obj = obj.map_err(|e| Error::io("list", &fan.path(), e))?;
                let md = obj
                    .metadata()
                    .map_err(|e| Error::io("stat", &obj.path(), e))?;
                if md.is_file() {
                    n += 1;
                    bytes += md.len();
                }
            }
        }
        Ok((n, bytes))
    }
}

fn read_error(e: std::io::Error) -> Error {
    let msg = e.to_string();
    // The server's typed transport failures (a missed deadline, a body
    // over the route's cap) come back as themselves.
    match e.into_inner().map(|inner| inner.downcast::<Error>()) {
        Some(Ok(typed)) => *typed,
        _ => Error::new(
            Code::InvalidRequest,
            format!("cannot read the request body: {msg}"),
        ),
    }
}

fn read_dir(p: &Path) -> Result<Box<dyn Iterator<Item = std::io::Result<std::fs::DirEntry>>>> {
    match std::fs::read_dir(p) {
        Ok(it) => Ok(Box::new(it)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Box::new(std::iter::empty())),
        Err(e) => Err(Error::io("list", p, e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staging() -> (tempfile::TempDir, Staging) {
        let t = tempfile::tempdir().expect("tempdir");
        let s = Staging::new(t.path().join("staging"));
        (t, s)
    }

    #[test]
    fn exact_puts_verify_digest_and_length() {
        let (_t, s) = staging();
        let d = Sha256Hex::digest(b"hello");
        s.put_exact(&mut &b"hello"[..], &d, 5).expect("put");
        assert!(s.present(&d, 5).expect("present"));
        assert!(!s.present(&d, 4).expect("size differs"));
        assert_eq!(s.read(&d, 5, 10).expect("read"), b"hello");
        let other = Sha256Hex::digest(b"world");
        let e = s
            .put_exact(&mut &b"hellx"[..], &other, 5)
            .expect_err("mismatch");
        assert_eq!(e.code(), Code::BlobDigestMismatch);
        assert!(!s.present(&other, 5).expect("nothing kept"));
        let e = s.put_exact(&mut &b"wor"[..], &other, 5).expect_err("short");
        assert_eq!(e.code(), Code::InvalidRequest);
        // Only the exact size is read: the rest of the stream is the next frame's.
        let mut r = &b"worldNEXT"[..];
        s.put_exact(&mut r, &other, 5).expect("put");
        assert_eq!(r, b"NEXT");
        assert_eq!(s.stats().expect("stats"), (2, 10));
        // Only the two placed blobs exist; the refused ones left no temp file.
        let tmp: Vec<_> = std::fs::read_dir(s.root.join("tmp"))
            .expect("tmp")
            .collect();
        assert!(tmp.is_empty(), "{tmp:?}");
    }

    #[test]
    fn any_puts_are_bounded_and_sweeps_keep_claimed_files() {
        let (_t, s) = staging();
        let e = s
            .put_any(&mut &b"0123456789"[..], 4)
            .expect_err("too large");
        assert_eq!(e.code(), Code::RequestTooLarge);
        let (a, n) = s.put_any(&mut &b"abc"[..], 4).expect("put");
        assert_eq!((a.clone(), n), (Sha256Hex::digest(b"abc"), 3));
        let b = Sha256Hex::digest(b"b");
        s.put_exact(&mut &b"b"[..], &b, 1).expect("put");
        let future = std::time::SystemTime::now() + std::time::Duration::from_secs(3600);
        let removed = s.sweep(future, &mut |d| Ok(*d == a)).expect("sweep");
        assert_eq!(removed, 1);
        assert!(s.present(&a, 3).expect("kept"));
        assert!(!s.present(&b, 1).expect("swept"));
        let past = std::time::SystemTime::UNIX_EPOCH;
        assert_eq!(s.sweep(past, &mut |_| Ok(false)).expect("sweep"), 0);
        s.remove(&a).expect("remove");
        s.remove(&a).expect("absent is fine");
        assert_eq!(s.stats().expect("stats"), (0, 0));
    }
}
