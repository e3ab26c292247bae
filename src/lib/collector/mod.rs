//! Collectors that run operator-pinned work on an exact revision: sandbox
//! runtimes, the signed transfer format and the command collector
//! (`collect`, `retry-upload`); and the finite review controller
//! ([`review`]), whose record will be the transfer's second kind.

pub mod collect;
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
