//! The hashing copy the CAS and the staging area share: a stream copied
//! into a temp file, hashed as it goes, bounded.

use crate::error::{Error, Result};
use crate::wire::digest::Sha256Hex;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};

/// Copy buffer size.
const BUF: usize = 64 * 1024;

/// Streams `reader` to its end into `tmp`, hashing as it goes, and returns
/// the digest and size. More than `max_bytes` is `too_large()` (with
/// `max_bytes` in its details) as soon as the bound is passed; a read
/// failure is `read_error(e)`. The caller decides what happens to `tmp`.
pub(crate) fn copy_hashed(
    reader: &mut dyn Read,
    tmp: &mut tempfile::NamedTempFile,
    max_bytes: u64,
    too_large: impl FnOnce() -> Error,
    read_error: impl Fn(std::io::Error) -> Error,
) -> Result<(Sha256Hex, u64)> {
    let mut hasher = Sha256::new();
    let mut size: u64 = 0;
    let mut buf = vec![0u8; BUF];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e)),
        };
        size += n as u64;
        if size > max_bytes {
            return Err(too_large().with("max_bytes", max_bytes));
        }
        hasher.update(&buf[..n]);
        tmp.write_all(&buf[..n])
            .map_err(|e| Error::io("write", tmp.path(), e))?;
    }
    Ok((Sha256Hex::from_bytes(hasher.finalize().into()), size))
}
