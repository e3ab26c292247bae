//! The sandbox launcher: `agent-task sandbox-exec`, which the collector
//! re-executes (its own binary) between itself and `bwrap` to apply what
//! bubblewrap cannot, without `unsafe` code for any of it:
//!
//! 1. sets the pinned rlimits, soft and hard: address space, processes,
//!    file size, CPU time (this host's cgroup v1 has no delegation, so
//!    these are the caps there are); core dumps off;
//! 2. when the collector runs as root, drops to the pinned dedicated uid
//!    and gid with no supplementary groups (so `RLIMIT_NPROC` counts only
//!    the sandbox's own processes, and nothing of root's is reachable by
//!    permission);
//! 3. sets `no_new_privs` and a parent-death `SIGKILL` (re-checking that
//!    the collector is still its parent), marks every inherited descriptor
//!    above 2 close-on-exec, and executes `bwrap` with an empty
//!    environment.
//!
//! Any step that fails stops the launch with `sandbox_limit_unavailable`:
//! a pinned limit that cannot be applied refuses the run.

use crate::error::{Code, Error, Result};
use std::path::PathBuf;

/// What one launch applies before executing `program`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// `RLIMIT_AS` in bytes.
    pub address_space_bytes: u64,
    /// `RLIMIT_NPROC`.
    pub processes: u64,
    /// `RLIMIT_FSIZE` in bytes.
    pub file_size_bytes: u64,
    /// `RLIMIT_CPU` in seconds.
    pub cpu_seconds: u64,
    /// The dedicated uid/gid to drop to (root only).
    pub run_as_uid: Option<u32>,
    /// The program (bwrap, absolute).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
}

fn refused(step: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        Code::SandboxLimitUnavailable,
        format!("the sandbox launcher could not {step}: {e}"),
    )
    .with("step", step)
}

/// The command-line words of a launch (`sandbox-exec` and its options).
pub fn argv(l: &Launch) -> Vec<String> {
    let mut v = vec![
        "sandbox-exec".to_owned(),
        "--rlimit-as".to_owned(),
        l.address_space_bytes.to_string(),
        "--rlimit-nproc".to_owned(),
        l.processes.to_string(),
        "--rlimit-fsize".to_owned(),
        l.file_size_bytes.to_string(),
        "--rlimit-cpu".to_owned(),
        l.cpu_seconds.to_string(),
    ];
    if let Some(u) = l.run_as_uid {
        v.extend(["--run-as-uid".to_owned(), u.to_string()]);
    }
    v.push("--".to_owned());
    v.push(l.program.display().to_string());
    v.extend(l.args.iter().cloned());
    v
}

/// Applies everything and executes the program; returns only on failure.
pub fn exec(l: &Launch) -> Error {
    match launch(l) {
        Ok(e) => e,
        Err(e) => e,
    }
}

fn launch(l: &Launch) -> Result<Error> {
    use rustix::process::{Resource, Rlimit, Signal};
    let parent = rustix::process::getppid();
    if !l.program.is_absolute() {
        return Err(refused(
            "run a program that is not an absolute path",
            l.program.display(),
        ));
    }
    for (res, v, name) in [
        (Resource::As, l.address_space_bytes, "address space"),
        (Resource::Nproc, l.processes, "processes"),
        (Resource::Fsize, l.file_size_bytes, "file size"),
        (Resource::Cpu, l.cpu_seconds, "CPU time"),
        (Resource::Core, 0, "core dumps"),
    ] {
        rustix::process::setrlimit(
            res,
            Rlimit {
                current: Some(v),
                maximum: Some(v),
            },
        )
        .map_err(|e| refused(&format!("set the {name} limit to {v}"), e))?;
    }
    if let Some(uid) = l.run_as_uid {
        if uid == 0 || uid == u32::MAX {
            return Err(refused("drop to uid", uid));
        }
        let (u, g) = (
            rustix::process::Uid::from_raw(uid),
            rustix::process::Gid::from_raw(uid),
        );
        // One thread runs here (the launcher does nothing else), so the
        // thread's credentials are the process's when it executes bwrap.
        rustix::thread::set_thread_groups(&[]).map_err(|e| refused("clear groups", e))?;
        rustix::thread::set_thread_res_gid(g, g, g).map_err(|e| refused("set the gid", e))?;
        rustix::thread::set_thread_res_uid(u, u, u).map_err(|e| refused("set the uid", e))?;
        if rustix::process::getuid() != u || rustix::process::geteuid() != u {
            return Err(refused("drop to uid", uid));
        }
    }
    rustix::thread::set_no_new_privs(true).map_err(|e| refused("set no_new_privs", e))?;
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(|e| refused("set the parent-death signal", e))?;
    if rustix::process::getppid() != parent {
        return Err(refused("start", "the collector is gone"));
    }
    close_inherited_on_exec()?;
    let e = std::os::unix::process::CommandExt::exec(
        std::process::Command::new(&l.program)
            .args(&l.args)
            .env_clear(),
    );
    Ok(refused("execute bwrap", e))
}

/// Marks every descriptor above 2 close-on-exec, so nothing the collector
/// inherited (an open pipe, a file of a store) reaches the sandbox: bwrap
/// passes descriptors through.
fn close_inherited_on_exec() -> Result<()> {
    #[allow(unsafe_code)]
    // SAFETY: close_range(2) with CLOSE_RANGE_CLOEXEC only sets the
    // close-on-exec flag: no descriptor is closed or reused, so no
    // descriptor this process owns becomes invalid. It reads no memory.
    let rc = unsafe { libc::close_range(3, u32::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_int) };
    if rc != 0 {
        return Err(refused(
            "mark inherited descriptors close-on-exec",
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}
