//! Collectors that run operator-pinned work on an exact revision: sandbox
//! runtimes, the signed transfer format and the command collector
//! (`collect`, `retry-upload`); and the finite review controller
//! ([`review`]), whose record will be the transfer's second kind.

pub mod binding;
pub mod collect;
mod execution;
pub mod review;
pub mod runtime;
pub mod sandbox;
pub mod state;
pub mod transfer;
pub mod wrapper;

/// Test-only crash injection: with the `test-hooks` feature, when
/// `AGENT_TASK_TEST_CRASH_AT` names `step`, the process SIGKILLs itself.
/// Without the feature this does nothing.
pub fn crash_point(step: &str) {
    #[cfg(feature = "test-hooks")]
    if crate::env::var("AGENT_TASK_TEST_CRASH_AT").is_some_and(|v| v == step) {
        #[allow(unsafe_code)]
        // SAFETY: kill(2) on our own pid; no memory is touched.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = step;
}

/// Test builds only: when `AGENT_TASK_TEST_RUN_LOG` names a file, appends
/// `line` to it. The collector calls it outside any sandbox as it starts a
/// recipe (`run <execution operation>`) or dispatches a review call
/// (`review-call <ticket>`): nothing inside the sandbox can write outside
/// it, so this is how the crash and race suites count executions.
/// Without the feature this does nothing.
pub(crate) fn test_run_log(line: &str) {
    #[cfg(feature = "test-hooks")]
    if let Some(p) = crate::env::var_os("AGENT_TASK_TEST_RUN_LOG") {
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
        {
            let _ = writeln!(f, "{line}");
        }
    }
    #[cfg(not(feature = "test-hooks"))]
    let _ = line;
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
