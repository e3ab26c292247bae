//! `cas migrate`: moves every blob of a data directory between its local
//! CAS and an S3-compatible bucket, resumably (`docs/blob-store.md`).
//!
//! The order that keeps every blob readable and loses none, whatever
//! point a run is killed at:
//!
//! 1. **Copy, unlocked.** Every object of the source that the destination
//!    lacks (same name and size) is read from the source (verified),
//!    put into the destination (which verifies the digest on the way) and
//!    read back there (`verify`: size and SHA-256) before it counts as
//!    copied. The configured store is still the source, complete, so
//!    readers and writers go on meanwhile.
//! 2. **Copy again and switch, under the data-directory lock.** No unit of
//!    work can name a new object now: what appeared since the first pass
//!    is copied the same way, then the configuration is switched
//!    atomically (`--to s3`: `blob-store.json` written to a temp file,
//!    fsynced, renamed, directory fsynced; `--to local`: renamed to
//!    `blob-store.draining.json`, which keeps the bucket's coordinates for
//!    step 3, directory fsynced).
//! 3. **Drain the old store, still under the lock.** What the old store
//!    still holds that the destination lacks (a data collect stores its
//!    blobs before it takes the lock, so one may land in the old store
//!    around the switch) is copied first; an object of the old store is
//!    deleted only when the (now configured) destination holds it with the
//!    same size. Then the draining file (`--to local`) is removed.
//!
//! Killed in 1 or 2 before the switch: the configuration is unchanged
//! and a new run skips what is already copied. Killed after the switch:
//! a new run finds the configuration switched and only drains.

use super::blob::{BlobStore, ListedBlob};
use super::{CAS_DIR, DataDir, DirLock, private_fs, s3};
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use serde::Serialize;
use std::collections::HashMap;
use std::io::Seek;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// While a `--to local` migration drains the bucket it left: the old
/// `blob-store.json`, moved aside by the switch.
pub const DRAINING_FILE: &str = "blob-store.draining.json";

/// Where `cas migrate` moves the blobs.
#[derive(Debug, Clone, Copy)]
pub enum MigrateTo<'a> {
    /// Into the data directory's own `cas/` (the bucket is drained and the
    /// configuration removed).
    Local,
    /// Into the bucket a configuration file (the `blob-store.json` format)
    /// names; the file becomes the data directory's `blob-store.json`.
    S3 {
        /// The configuration file.
        config: &'a Path,
    },
}

/// What `cas migrate` reports.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct MigrateOutput {
    /// The store the data directory uses now (`local` or `s3`).
    pub to: &'static str,
    /// Objects this run copied (each verified in the destination).
    pub copied: u64,
    /// Objects already in the destination (an earlier, interrupted run).
    pub skipped: u64,
    /// Objects this run deleted from the old store after the switch.
    pub deleted: u64,
    /// Objects of the old store left there: their names are not SHA-256
    /// digests (`cas fsck` lists them as corrupt).
    pub left: u64,
    /// Bytes this run copied.
    pub bytes: u64,
    /// Whether this run switched the configuration (`false`: an earlier
    /// run had, or the directory already used the destination).
    pub switched: bool,
}

/// The steps a migration announces (for the crash tests' hooks).
#[derive(Debug, Clone, Copy)]
pub enum Step {
    /// The n-th object of this run was copied and verified.
    Copied(u64),
    /// The configuration was switched.
    Switched,
    /// The n-th object of this run was deleted from the old store.
    Deleted(u64),
}

pub(super) fn config_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    use std::io::Read;
    let Some(f) = private_fs::open_private_read(path)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    f.take(64 * 1024)
        .read_to_end(&mut bytes)
        .map_err(|e| Error::io("read", path, e))?;
    Ok(Some(bytes))
}

fn conflict(msg: impl Into<String>) -> Error {
    Error::new(Code::Conflict, msg.into())
}

/// Runs (or resumes) a migration of `dir`'s blobs (see the module
/// documentation). `step` is told each step as it is done.
pub fn migrate(
    dir: &DataDir,
    to: MigrateTo<'_>,
    timeout: Duration,
    step: &mut dyn FnMut(Step),
) -> Result<MigrateOutput> {
    let root = dir.root();
    let config = root.join(s3::CONFIG_FILE);
    let draining = root.join(DRAINING_FILE);
    let spool = root.join(CAS_DIR).join("tmp");
    let local = dir.cas();
    let mut out = MigrateOutput::default();
    match to {
        MigrateTo::S3 { config: from } => {
            out.to = s3::KIND;
            let (bucket, bytes) = s3::load_file(from, spool.clone())?.ok_or_else(|| {
                Error::new(
                    Code::NotFound,
                    format!("no configuration file {}", from.display()),
                )
            })?;
            if config_bytes(&draining)?.is_some() {
                return Err(conflict(
                    "a migration to the local store is unfinished: run `cas migrate --to local` \
                     first",
                ));
            }
            match config_bytes(&config)? {
                Some(b) if b == bytes => {
                    // Switched by an earlier run: drain the local store.
                    let lock = dir.lock(timeout)?;
                    drain(&local, &bucket, &spool, &lock, &mut out, step)?;
                }
                Some(_) => {
                    return Err(conflict(
                        "the data directory already uses another bucket configuration: run \
                         `cas migrate --to local` first",
                    ));
                }
                None => {
                    copy_all(&local, &bucket, &spool, &mut out, true, step)?;
                    let lock = dir.lock(timeout)?;
                    if config_bytes(&config)?.is_some() || config_bytes(&draining)?.is_some() {
                        return Err(conflict(
                            "the blob-store configuration changed while the objects were copied",
                        ));
                    }
                    copy_all(&local, &bucket, &spool, &mut out, false, step)?;
                    private_fs::write_atomic(&config, &bytes)?;
                    out.switched = true;
                    step(Step::Switched);
                    drain(&local, &bucket, &spool, &lock, &mut out, step)?;
                }
            }
        }
        MigrateTo::Local => {
            out.to = super::blob::LOCAL_KIND;
            if let Some(bucket) = s3::load(root, spool.clone())? {
                if config_bytes(&draining)?.is_some() {
                    return Err(conflict(format!(
                        "both {} and {DRAINING_FILE} exist: remove the one that is not this \
                         directory's bucket",
                        s3::CONFIG_FILE
                    )));
                }
                let before = config_bytes(&config)?;
                copy_all(&bucket, &local, &spool, &mut out, true, step)?;
                let lock = dir.lock(timeout)?;
                if config_bytes(&config)? != before {
                    return Err(conflict(
                        "the blob-store configuration changed while the objects were copied",
                    ));
                }
                copy_all(&bucket, &local, &spool, &mut out, false, step)?;
                std::fs::rename(&config, &draining).map_err(|e| Error::io("rename", &config, e))?;
                private_fs::sync_dir(root)?;
                out.switched = true;
                step(Step::Switched);
                drain(&bucket, &local, &spool, &lock, &mut out, step)?;
                finish_draining(root, &draining)?;
            } else if let Some((bucket, _)) = s3::load_file(&draining, spool.clone())? {
                let lock = dir.lock(timeout)?;
                if config_bytes(&config)?.is_some() {
                    return Err(conflict(
                        "the blob-store configuration changed while the lock was awaited",
                    ));
                }
                drain(&bucket, &local, &spool, &lock, &mut out, step)?;
                finish_draining(root, &draining)?;
            }
        }
    }
    Ok(out)
}

fn finish_draining(root: &Path, draining: &Path) -> Result<()> {
    std::fs::remove_file(draining).map_err(|e| Error::io("remove", draining, e))?;
    private_fs::sync_dir(root)
}

fn listing(store: &dyn BlobStore) -> Result<Vec<ListedBlob>> {
    let mut all = Vec::new();
    store.list(&mut |b| {
        all.push(b);
        Ok(())
    })?;
    all.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(all)
}

fn index(store: &dyn BlobStore) -> Result<HashMap<String, u64>> {
    Ok(listing(store)?
        .into_iter()
        .map(|b| (b.name, b.size))
        .collect())
}

fn parse_name(b: &ListedBlob) -> Result<Sha256Hex> {
    Sha256Hex::parse(&b.name).map_err(|_| {
        Error::new(
            Code::IntegrityError,
            format!(
                "the source holds an object named {:?}, not a SHA-256: run `cas fsck`",
                b.name
            ),
        )
    })
}

/// Copies every object of `from` that `to` lacks; `first`: the unlocked
/// pass (it counts what it skips; the locked pass only what it copies).
fn copy_all(
    from: &dyn BlobStore,
    to: &dyn BlobStore,
    spool: &Path,
    out: &mut MigrateOutput,
    first: bool,
    step: &mut dyn FnMut(Step),
) -> Result<()> {
    let have = index(to)?;
    for b in listing(from)? {
        let digest = parse_name(&b)?;
        if have.get(&b.name) == Some(&b.size) {
            if first {
                out.skipped += 1;
            }
            continue;
        }
        copy_one(from, to, spool, &digest, b.size)?;
        out.copied += 1;
        out.bytes += b.size;
        step(Step::Copied(out.copied));
    }
    Ok(())
}

/// One object: read from `from` (verified) into a private temp file, put
/// into `to` (which checks the digest), read back from `to`.
fn copy_one(
    from: &dyn BlobStore,
    to: &dyn BlobStore,
    spool: &Path,
    digest: &Sha256Hex,
    size: u64,
) -> Result<()> {
    private_fs::ensure_private_dir(spool)?;
    let mut tmp = tempfile::Builder::new()
        .prefix("put-migrate-")
        .tempfile_in(spool)
        .map_err(|e| Error::io("create temp file in", spool, e))?;
    let path: PathBuf = tmp.path().to_owned();
    from.copy_to(digest, size, tmp.as_file_mut())?;
    tmp.as_file_mut()
        .rewind()
        .map_err(|e| Error::io("rewind", &path, e))?;
    to.put(tmp.as_file_mut(), digest, size)?;
    if !to.verify(digest, Some(size))? {
        return Err(Error::new(
            Code::IntegrityError,
            format!("object {digest} is not in the destination after its copy"),
        )
        .with("digest", digest.to_string()));
    }
    Ok(())
}

/// Copies into `now` (the configured store) what `old` still holds that
/// `now` lacks (a put that raced the switch: a data collect stores its
/// blobs before it takes the lock), then deletes from `old` every object
/// `now` holds with the same size.
fn drain(
    old: &dyn BlobStore,
    now: &dyn BlobStore,
    spool: &Path,
    lock: &DirLock,
    out: &mut MigrateOutput,
    step: &mut dyn FnMut(Step),
) -> Result<()> {
    copy_all(old, now, spool, out, false, step)?;
    let have = index(now)?;
    for b in listing(old)? {
        let Ok(digest) = Sha256Hex::parse(&b.name) else {
            out.left += 1;
            continue;
        };
        if have.get(&b.name) != Some(&b.size) {
            out.left += 1;
            continue;
        }
        if old.delete(&digest, lock)? {
            out.deleted += 1;
            step(Step::Deleted(out.deleted));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> (tempfile::TempDir, DataDir) {
        let t = tempfile::tempdir().expect("tempdir");
        let (dir, lock) =
            DataDir::create(&t.path().join("d"), Duration::from_secs(5)).expect("dir");
        drop(lock);
        (t, dir)
    }

    #[test]
    fn a_local_directory_migrated_to_local_is_left_as_it_is() {
        let (_t, dir) = dir();
        dir.blobs().expect("store").put_bytes(b"kept").expect("put");
        let mut steps = 0;
        let out = migrate(&dir, MigrateTo::Local, Duration::from_secs(5), &mut |_| {
            steps += 1
        })
        .expect("migrate");
        assert_eq!(
            out,
            MigrateOutput {
                to: "local",
                ..MigrateOutput::default()
            }
        );
        assert_eq!(steps, 0);
        assert_eq!(dir.cas().stats().expect("stats").objects, 1);
    }

    #[test]
    fn a_missing_or_broken_bucket_configuration_moves_nothing() {
        let (t, dir) = dir();
        dir.blobs().expect("store").put_bytes(b"kept").expect("put");
        let missing = t.path().join("none.json");
        let e = migrate(
            &dir,
            MigrateTo::S3 { config: &missing },
            Duration::from_secs(5),
            &mut |_| {},
        )
        .expect_err("no file");
        assert_eq!(e.code(), Code::NotFound);
        let broken = t.path().join("broken.json");
        private_fs::write_atomic(&broken, b"{\"kind\":\"s3\"}").expect("write");
        let e = migrate(
            &dir,
            MigrateTo::S3 { config: &broken },
            Duration::from_secs(5),
            &mut |_| {},
        )
        .expect_err("broken");
        assert_eq!(e.code(), Code::Config);
        assert!(dir.blob_config().expect("config").is_none());
        assert_eq!(dir.cas().stats().expect("stats").objects, 1);
    }
}
