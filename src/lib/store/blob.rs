//! The blob-store seam: every CAS object the product keeps (the data
//! node's file and large text content, the authority's revision snapshots,
//! retained transfers, sync's record content) is written and read through
//! [`BlobStore`], never by path.
//!
//! The local content-addressed store ([`super::Cas`], `DATA_DIR/cas`) is
//! the default implementation and its layout on disk is unchanged. A
//! store is chosen per data directory ([`super::DataDir::blobs`]); `info`
//! names it ([`BlobStore::kind`]).
//!
//! The contract every implementation keeps:
//! - objects are named by their SHA-256 alone; a put states the digest and
//!   length it expects, and bytes of another digest or length are refused
//!   (`integrity_error`) with nothing stored;
//! - a put returns only once the object is durable (a [`BlobBatch`]: once
//!   its `commit` returns), so metadata naming it may commit after it;
//! - a read verifies size and digest before any byte is handed out
//!   (`get`), or, streaming (`copy_to`), fails at the end so the caller
//!   discards what it received; a missing object is `integrity_error` too
//!   (`exists` tells the two apart);
//! - `delete` is for a migration only, under the data-directory lock.

use super::cas::{Cas, CasBatch, CasStats, PutOutcome};
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use std::io::{Read, Write};
use std::path::Path;

/// What a data directory's blob store is, for `info`.
pub const LOCAL_KIND: &str = "local";

/// One object a listing found: its name (the digest it claims to be, as
/// stored: a malformed name is corrupt) and its stored size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedBlob {
    /// The object's name.
    pub name: String,
    /// Its size in bytes.
    pub size: u64,
}

/// A content-addressed blob store (see the module documentation).
pub trait BlobStore: std::fmt::Debug + Send + Sync {
    /// The store's kind, as `info` shows it (`"local"`).
    fn kind(&self) -> &'static str;

    /// Stores exactly the object `digest` of `size` bytes read from
    /// `reader`, durably. Other bytes: `integrity_error`, nothing stored.
    fn put(&self, reader: &mut dyn Read, digest: &Sha256Hex, size: u64) -> Result<PutOutcome>;

    /// Stores `bytes`, all in memory, as the object `digest` (see
    /// [`BlobStore::put`]: other bytes are `integrity_error`, nothing
    /// stored). A store may send them without copying them.
    fn put_bytes_as(&self, bytes: &[u8], digest: &Sha256Hex) -> Result<PutOutcome> {
        self.put(&mut &bytes[..], digest, bytes.len() as u64)
    }

    /// Stores `bytes` under their own digest (see [`BlobStore::put`]).
    fn put_bytes(&self, bytes: &[u8]) -> Result<PutOutcome> {
        let digest = Sha256Hex::digest(bytes);
        self.put(&mut &bytes[..], &digest, bytes.len() as u64)
    }

    /// Stores a stream whose digest is not known in advance (`cas put`),
    /// refusing more than `max_bytes` (`too_large`, nothing stored).
    fn put_stream(&self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome>;

    /// A whole object of at most `max_bytes`, verified (size when given,
    /// and digest) before it is returned.
    fn get(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
    ) -> Result<Vec<u8>>;

    /// Streams an object of `size` bytes into `out` in bounded chunks;
    /// verified at the end: on `integrity_error` the caller discards what
    /// `out` received.
    fn copy_to(&self, digest: &Sha256Hex, size: u64, out: &mut dyn Write) -> Result<u64>;

    /// Whether an object of this digest (and this size, when given) is
    /// present, without reading it.
    fn exists(&self, digest: &Sha256Hex, size: Option<u64>) -> Result<bool>;

    /// Whether an intact object exists, by reading it (`Ok(false)`: absent;
    /// `integrity_error`: present but wrong).
    fn verify(&self, digest: &Sha256Hex, expected_size: Option<u64>) -> Result<bool>;

    /// Calls `each` for every stored object (for `cas fsck`).
    fn list(&self, each: &mut dyn FnMut(ListedBlob) -> Result<()>) -> Result<()>;

    /// Removes an object (absent: `Ok(false)`). Only a migration that has
    /// verified the destination's copy calls it, under the lock.
    fn delete(&self, digest: &Sha256Hex, lock: &super::DirLock) -> Result<bool>;

    /// Starts a batch of puts made durable together by
    /// [`BlobBatch::commit`]; nothing may name them before it returns.
    fn batch(&self) -> Box<dyn BlobBatch + '_>;

    /// Counts objects and bytes (and, locally, orphan temp files).
    fn stats(&self) -> Result<CasStats>;

    /// Verifies every object against its name (read-only): the number
    /// checked and the sorted names of corrupt ones.
    fn fsck(&self) -> Result<(u64, Vec<String>)> {
        let mut names = Vec::new();
        self.list(&mut |b| {
            names.push(b.name);
            Ok(())
        })?;
        let mut corrupt = Vec::new();
        for name in &names {
            match Sha256Hex::parse(name) {
                Ok(d) => match self.verify(&d, None) {
                    Ok(_) => {}
                    Err(e)
                        if e.code() == Code::IntegrityError || e.code() == Code::SymlinkRefused =>
                    {
                        corrupt.push(name.clone())
                    }
                    Err(e) => return Err(e),
                },
                Err(_) => corrupt.push(name.clone()),
            }
        }
        corrupt.sort();
        Ok((names.len() as u64, corrupt))
    }
}

/// Puts made durable together (see [`BlobStore::batch`]).
pub trait BlobBatch {
    /// Stores bytes under their own digest.
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<PutOutcome>;

    /// Streams a reader (at most `max_bytes`, else `too_large`) under its
    /// own digest.
    fn put_reader(&mut self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome>;

    /// Moves a staged file (already verified as `digest` of `size` bytes,
    /// [`super::Staging`]) into the store; the staged file is gone after.
    fn adopt(&mut self, staged: &Path, digest: &Sha256Hex, size: u64) -> Result<PutOutcome>;

    /// Makes every object of the batch durable.
    fn commit(self: Box<Self>) -> Result<()>;
}

impl BlobStore for Cas {
    fn kind(&self) -> &'static str {
        LOCAL_KIND
    }

    fn put(&self, reader: &mut dyn Read, digest: &Sha256Hex, size: u64) -> Result<PutOutcome> {
        self.put_expected(reader, digest, size)
    }

    fn put_stream(&self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome> {
        self.put_reader(reader, max_bytes)
    }

    fn get(
        &self,
        digest: &Sha256Hex,
        expected_size: Option<u64>,
        max_bytes: u64,
    ) -> Result<Vec<u8>> {
        self.read(digest, expected_size, max_bytes)
    }

    fn copy_to(&self, digest: &Sha256Hex, size: u64, out: &mut dyn Write) -> Result<u64> {
        Cas::copy_to(self, digest, size, out)
    }

    fn exists(&self, digest: &Sha256Hex, size: Option<u64>) -> Result<bool> {
        match size {
            Some(n) => self.has(digest, n),
            None => {
                let p = self.object_path(digest);
                match std::fs::symlink_metadata(&p) {
                    Ok(_) => Ok(true),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
                    Err(e) => Err(Error::io("stat", &p, e)),
                }
            }
        }
    }

    fn verify(&self, digest: &Sha256Hex, expected_size: Option<u64>) -> Result<bool> {
        Cas::verify(self, digest, expected_size)
    }

    fn list(&self, each: &mut dyn FnMut(ListedBlob) -> Result<()>) -> Result<()> {
        Cas::list(self, &mut |name, size| {
            each(ListedBlob {
                name: name.to_owned(),
                size,
            })
        })
    }

    fn delete(&self, digest: &Sha256Hex, lock: &super::DirLock) -> Result<bool> {
        Cas::delete(self, digest, lock)
    }

    fn batch(&self) -> Box<dyn BlobBatch + '_> {
        Box::new(Cas::batch(self))
    }

    fn stats(&self) -> Result<CasStats> {
        Cas::stats(self)
    }

    fn fsck(&self) -> Result<(u64, Vec<String>)> {
        Cas::fsck(self)
    }
}

impl BlobBatch for CasBatch<'_> {
    fn put_bytes(&mut self, bytes: &[u8]) -> Result<PutOutcome> {
        CasBatch::put_bytes(self, bytes)
    }

    fn put_reader(&mut self, reader: &mut dyn Read, max_bytes: u64) -> Result<PutOutcome> {
        CasBatch::put_reader(self, reader, max_bytes)
    }

    fn adopt(&mut self, staged: &Path, digest: &Sha256Hex, size: u64) -> Result<PutOutcome> {
        CasBatch::adopt(self, staged, digest, size)
    }

    fn commit(self: Box<Self>) -> Result<()> {
        CasBatch::commit(*self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn local() -> (tempfile::TempDir, crate::store::DataDir) {
        let t = tempfile::tempdir().expect("tempdir");
        let (dir, lock) =
            crate::store::DataDir::create(&t.path().join("d"), std::time::Duration::from_secs(5))
                .expect("dir");
        drop(lock);
        (t, dir)
    }

    fn names(s: &dyn BlobStore) -> Vec<ListedBlob> {
        let mut out = Vec::new();
        s.list(&mut |b| {
            out.push(b);
            Ok(())
        })
        .expect("list");
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    #[test]
    fn the_local_store_puts_gets_lists_and_deletes_through_the_seam() {
        let (_t, dir) = local();
        let s = dir.blobs().expect("store");
        assert_eq!(s.kind(), "local");
        let d = Sha256Hex::digest(b"hello");
        let out = s.put(&mut &b"hello"[..], &d, 5).expect("put");
        assert!(out.created && !out.repaired);
        assert_eq!((out.digest.clone(), out.size), (d.clone(), 5));
        let again = s.put_bytes(b"hello").expect("put again");
        assert!(!again.created && !again.repaired, "deduplicated");
        assert!(s.exists(&d, Some(5)).expect("exists"));
        assert!(s.exists(&d, None).expect("exists"));
        assert!(!s.exists(&d, Some(4)).expect("another size is absent"));
        assert_eq!(s.get(&d, Some(5), 100).expect("get"), b"hello");
        let mut out = Vec::new();
        assert_eq!(s.copy_to(&d, 5, &mut out).expect("copy"), 5);
        assert_eq!(out, b"hello");
        assert!(s.verify(&d, Some(5)).expect("verify"));
        let big = s.put_stream(&mut &b"world!"[..], 100).expect("stream");
        assert_eq!(names(s.as_ref()), {
            let mut v = vec![
                ListedBlob {
                    name: d.to_string(),
                    size: 5,
                },
                ListedBlob {
                    name: big.digest.to_string(),
                    size: 6,
                },
            ];
            v.sort_by(|a, b| a.name.cmp(&b.name));
            v
        });
        assert_eq!(s.fsck().expect("fsck"), (2, vec![]));
        let lock = dir.lock(std::time::Duration::from_secs(5)).expect("lock");
        assert!(s.delete(&d, &lock).expect("delete"));
        assert!(!s.delete(&d, &lock).expect("absent"));
        assert!(!s.exists(&d, None).expect("gone"));
        assert_eq!(
            s.get(&d, Some(5), 100).map_err(|e| e.code()).err(),
            Some(Code::IntegrityError),
            "a missing object reads as integrity_error"
        );
        assert_eq!(s.stats().expect("stats").objects, 1);
    }

    #[test]
    fn a_put_of_other_bytes_than_announced_is_refused_and_stores_nothing() {
        let (_t, dir) = local();
        let s = dir.blobs().expect("store");
        let d = Sha256Hex::digest(b"hello");
        for (bytes, size) in [
            (&b"hellx"[..], 5),
            (&b"hello!"[..], 5),
            (&b"hell"[..], 5),
            (&b"hello"[..], 4),
            (&b"hello"[..], 6),
        ] {
            let e = s.put(&mut &bytes[..], &d, size).expect_err("refused");
            assert_eq!(e.code(), Code::IntegrityError, "{bytes:?} as {size}");
            assert!(!s.exists(&d, None).expect("nothing stored"));
        }
        let stats = s.stats().expect("stats");
        assert_eq!((stats.objects, stats.temp_files), (0, 0), "no temp left");
        assert!(names(s.as_ref()).is_empty());
    }

    #[test]
    fn a_batch_adopts_a_staged_file_through_the_seam() {
        let (_t, dir) = local();
        let s = dir.blobs().expect("store");
        let staging = dir.staging();
        let d = Sha256Hex::digest(b"staged");
        staging
            .put_exact(&mut &b"staged"[..], &d, 6)
            .expect("stage");
        let mut batch = s.batch();
        let out = batch.adopt(&staging.path(&d), &d, 6).expect("adopt");
        assert!(out.created);
        let inline = batch.put_bytes(b"inline").expect("put");
        batch.commit().expect("commit");
        assert!(!staging.present(&d, 6).expect("moved"));
        assert_eq!(s.get(&d, Some(6), 10).expect("get"), b"staged");
        assert_eq!(s.get(&inline.digest, Some(6), 10).expect("get"), b"inline");
    }
}
