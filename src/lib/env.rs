//! The one reader of the process environment. Every environment variable
//! the library consults goes through [`var_os`], so that the set is
//! greppable in one place; `clippy.toml` refuses `std::env::var*` anywhere
//! else. The variables: the data-dir defaults (`XDG_DATA_HOME`,
//! `XDG_STATE_HOME`, `HOME`, `CODEX_HOME`), `PATH` and the OCI client's
//! pass-through list (`collector::runtime`), `AGENT_TASK_NODE_TOKEN`
//! (`serve`), the doctor's `--token-env VAR`, the agent's authority
//! (`AGENT_TASK_ENDPOINT`, `AGENT_TASK_REPOSITORY`, `AGENT_TASK_PROFILE`,
//! `AGENT_TASK_TOKEN_FILE`, `AGENT_TASK_DATA_DIR`: read only through
//! `cli::authority` and `cli::ctx`, each after its flag, and never for the
//! Stop hooks), and the `AGENT_TASK_TEST_*` hooks that only a
//! `test-hooks` build reads (all in `testhooks`).

use std::ffi::OsString;

/// The value of `name`, if it is set (not necessarily UTF-8).
#[allow(clippy::disallowed_methods)]
pub fn var_os(name: &str) -> Option<OsString> {
    std::env::var_os(name)
}

/// The value of `name` as UTF-8; `None` when unset or not UTF-8 (the
/// behaviour of `std::env::var(name).ok()`).
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|v| v.into_string().ok())
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    #[test]
    fn reads_the_process_environment() {
        // PATH is set in every test environment this suite runs in.
        assert!(super::var_os("PATH").is_some());
        assert_eq!(
            super::var("PATH").map(OsString::from),
            super::var_os("PATH")
        );
        assert!(super::var_os("AGENT_TASK_SURELY_UNSET_0f3a").is_none());
    }
}
