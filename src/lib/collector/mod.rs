//! Collectors that run operator-pinned work on an exact revision: sandbox
//! runtimes, the signed transfer format and the command collector
//! (`collect`, `retry-upload`); and the finite review controller
//! ([`review`]), whose record will be the transfer's second kind.

pub mod binding;
pub mod collect;
mod execution;
pub mod limits;
pub mod review;
pub mod runtime;
pub mod sandbox;
pub mod state;
pub mod transfer;
pub mod wrapper;

pub use binding::{AttemptBinding, BoundDescriptor};

/// Crash injection (the test hook [`crate::testhooks::crash_point`]; does
/// nothing without the `test-hooks` feature).
pub fn crash_point(step: &str) {
    crate::testhooks::crash_point(step);
}

/// Counts executions (the test hook [`crate::testhooks::run_log`]; does
/// nothing without the `test-hooks` feature).
pub(crate) fn test_run_log(line: &str) {
    crate::testhooks::run_log(line);
}

/// Loads the signing-key seed of a collector directory (the directory
/// 0700 and the key file 0600, both the caller's, neither a symlink).
pub fn load_signing_seed(collector_dir: &std::path::Path) -> crate::error::Result<[u8; 32]> {
    use crate::error::{Code, Error};
    use crate::store::private_fs;
    use std::io::Read as _;
    let path = collector_dir.join(crate::contract::KEY_FILE);
    if !private_fs::check_private(collector_dir, private_fs::Kind::Dir)?
        || !private_fs::check_private(&path, private_fs::Kind::File)?
    {
        return Err(Error::new(
            Code::NotFound,
            "no signing key in the collector directory",
        ));
    }
    let mut s = String::new();
    private_fs::open_nofollow_read(&path)?
        .take(200)
        .read_to_string(&mut s)
        .map_err(|e| Error::io("read", &path, e))?;
    let seed = data_encoding::HEXLOWER
        .decode(s.trim_end().as_bytes())
        .ok()
        .filter(|v| v.len() == 32)
        .ok_or_else(|| Error::new(Code::IntegrityError, "signing key file is malformed"))?;
    let mut b = [0u8; 32];
    b.copy_from_slice(&seed);
    Ok(b)
}
