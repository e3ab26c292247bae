//! The sandbox launcher: `agent-task sandbox-exec`, which the collector
//! re-executes (its own binary) between itself and `bwrap` to apply what
//! bubblewrap cannot. Whoever starts the collector (the agent, through
//! sudo) chooses the process attributes it inherits; none of them may
//! reach candidate code, so the launcher sets every one to the value the
//! runtime identity pins ([`SandboxLimits`] and its
//! [`ProcessAttributes`](super::limits::ProcessAttributes)):
//!
//! 1. the scheduling policy (`SCHED_OTHER`, priority 0, reset-on-fork
//!    off), the nice value, the I/O priority, the CPU affinity (every
//!    CPU; the kernel keeps it within the cpuset), the timer slack, the
//!    execution domain (`personality`) and the transparent-huge-page
//!    flag, each read back;
//! 2. every rlimit, soft and hard (this host's cgroup v1 has no
//!    delegation, so these are the caps there are), after the nice value,
//!    which `RLIMIT_NICE` 0 would otherwise forbid lowering;
//! 3. when the collector runs as root, drops to the pinned dedicated uid
//!    and gid with no supplementary groups (so `RLIMIT_NPROC` counts only
//!    the sandbox's own processes, and nothing of root's is reachable by
//!    permission);
//! 4. the umask, every signal's disposition back to its default (an
//!    ignored signal survives `exec`) and an empty signal mask, each read
//!    back;
//! 5. sets `no_new_privs` and a parent-death `SIGKILL` (re-checking that
//!    the collector is still its parent), marks every inherited descriptor
//!    above 2 close-on-exec, and executes `bwrap` with an empty
//!    environment.
//!
//! Any step that fails stops the launch with `sandbox_limit_unavailable`:
//! a pinned value that cannot be applied refuses the run. (A non-root
//! collector cannot raise a lowered hard limit or lower a raised nice
//! value; `SandboxLimits::check_applicable` refuses those before anything
//! is reserved.)

use super::limits::SandboxLimits;
use crate::error::{Code, Error, Result};
use std::path::PathBuf;

/// What one launch applies before executing `program`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The pinned limits and process attributes (and the dedicated uid).
    pub limits: SandboxLimits,
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

/// The command-line words of a launch (`sandbox-exec` and its options):
/// the limits travel as one JSON argument.
pub fn argv(l: &Launch) -> Result<Vec<String>> {
    let mut v = vec![
        "sandbox-exec".to_owned(),
        "--limits".to_owned(),
        serde_json::to_string(&l.limits)?,
    ];
    v.push("--".to_owned());
    v.push(l.program.display().to_string());
    v.extend(l.args.iter().cloned());
    Ok(v)
}

/// Applies everything and executes the program; returns only on failure.
pub fn exec(l: &Launch) -> Error {
    match launch(l) {
        Ok(e) => e,
        Err(e) => e,
    }
}

fn launch(l: &Launch) -> Result<Error> {
    use rustix::process::{Rlimit, Signal};
    let parent = rustix::process::getppid();
    if !l.program.is_absolute() {
        return Err(refused(
            "run a program that is not an absolute path",
            l.program.display(),
        ));
    }
    let p = l
        .limits
        .process
        .as_ref()
        .ok_or_else(|| refused("start", "the limits pin no process attributes"))?;
    set_scheduler()?;
    rustix::process::setpriority_process(None, p.nice)
        .map_err(|e| refused(&format!("set the nice value to {}", p.nice), e))?;
    match rustix::process::getpriority_process(None) {
        Ok(n) if n == p.nice => {}
        other => return Err(refused("set the nice value", format!("{other:?}"))),
    }
    set_io_priority(p.io_priority.level)?;
    set_all_cpus()?;
    let slack = std::num::NonZeroU64::new(p.timer_slack_ns)
        .ok_or_else(|| refused("set the timer slack", 0))?;
    rustix::thread::set_current_timer_slack(Some(slack))
        .map_err(|e| refused(&format!("set the timer slack to {slack} ns"), e))?;
    match rustix::thread::current_timer_slack() {
        Ok(n) if n == p.timer_slack_ns => {}
        other => return Err(refused("set the timer slack", format!("{other:?}"))),
    }
    set_personality(p.personality)?;
    rustix::thread::disable_transparent_huge_pages(p.thp_disabled)
        .map_err(|e| refused("set the transparent huge page flag", e))?;
    match rustix::thread::transparent_huge_pages_are_disabled() {
        Ok(d) if d == p.thp_disabled => {}
        other => {
            return Err(refused(
                "set the transparent huge page flag",
                format!("{other:?}"),
            ));
        }
    }
    for (res, v, name) in l.limits.rlimits()? {
        rustix::process::setrlimit(
            res,
            Rlimit {
                current: Some(v),
                maximum: Some(v),
            },
        )
        .map_err(|e| refused(&format!("set the {name} limit to {v}"), e))?;
    }
    if let Some(uid) = l.limits.run_as_uid {
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
    let mask =
        rustix::fs::Mode::from_bits(p.umask).ok_or_else(|| refused("set the umask", p.umask))?;
    rustix::process::umask(mask);
    if rustix::process::umask(mask) != mask {
        return Err(refused("set the umask", p.umask));
    }
    reset_signals()?;
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

/// `SCHED_OTHER` at static priority 0 without reset-on-fork (an
/// inherited `SCHED_IDLE` or `SCHED_BATCH` is undone), read back.
fn set_scheduler() -> Result<()> {
    let param = libc::sched_param { sched_priority: 0 };
    #[allow(unsafe_code)]
    // SAFETY: sched_setscheduler(2) on the calling process reads the one
    // sched_param it is given, which lives on this stack frame for the
    // whole call.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    if rc != 0 {
        return Err(refused(
            "set the scheduling policy to SCHED_OTHER",
            std::io::Error::last_os_error(),
        ));
    }
    #[allow(unsafe_code)]
    // SAFETY: sched_getscheduler(2) reads no memory of ours.
    let now = unsafe { libc::sched_getscheduler(0) };
    if now != libc::SCHED_OTHER {
        return Err(refused("set the scheduling policy", now));
    }
    Ok(())
}

/// The execution domain, read back (`0xffffffff` only queries it).
fn set_personality(want: u32) -> Result<()> {
    let arg = libc::c_ulong::from(want);
    #[allow(unsafe_code)]
    // SAFETY: personality(2) takes one integer and touches no memory.
    let rc = unsafe { libc::personality(arg) };
    #[allow(unsafe_code)]
    // SAFETY: as above; 0xffffffff queries without changing anything.
    let now = unsafe { libc::personality(0xffff_ffff) };
    if rc == -1 || u32::try_from(now).ok() != Some(want) {
        return Err(refused(&format!("set the personality to {want:#x}"), now));
    }
    Ok(())
}

/// `IOPRIO_WHO_PROCESS` of `ioprio_set(2)`.
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
/// `IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT`.
const IOPRIO_BEST_EFFORT: libc::c_long = 2 << 13;

/// The best-effort I/O class at `level`, read back.
fn set_io_priority(level: u8) -> Result<()> {
    let want = IOPRIO_BEST_EFFORT | libc::c_long::from(level);
    #[allow(unsafe_code)]
    // SAFETY: ioprio_set(2) on the calling process takes three integers
    // and touches no memory.
    let rc = unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, want) };
    if rc != 0 {
        return Err(refused(
            &format!("set the I/O priority to best-effort {level}"),
            std::io::Error::last_os_error(),
        ));
    }
    #[allow(unsafe_code)]
    // SAFETY: ioprio_get(2) takes two integers and touches no memory.
    let now = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
    if now != want {
        return Err(refused("set the I/O priority", now));
    }
    Ok(())
}

/// Every CPU in the mask: the kernel keeps those of the process's cpuset
/// (what `taskset` narrowed is widened again), and at least one must be.
fn set_all_cpus() -> Result<()> {
    use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
    let mut all = CpuSet::new();
    for cpu in 0..CpuSet::MAX_CPU {
        all.set(cpu);
    }
    sched_setaffinity(None, &all).map_err(|e| refused("set the CPU affinity to every CPU", e))?;
    let now = sched_getaffinity(None).map_err(|e| refused("read the CPU affinity", e))?;
    if now.count() == 0 {
        return Err(refused("set the CPU affinity", "no CPU is allowed"));
    }
    Ok(())
}

/// Highest signal number on Linux.
const SIGNAL_MAX: libc::c_long = 64;

/// Every signal to its default action and none blocked, read back. Raw
/// `rt_sigaction` and `rt_sigprocmask`, because the C library refuses the
/// signals it reserves for itself (32, 33), which an inherited mask or
/// disposition may still name. A `struct sigaction` of zeros is
/// `SIG_DFL`, no flags, an empty mask, whatever the architecture's layout.
fn reset_signals() -> Result<()> {
    let zero = [0u64; 8];
    for sig in 1..=SIGNAL_MAX {
        if sig == libc::c_long::from(libc::SIGKILL) || sig == libc::c_long::from(libc::SIGSTOP) {
            continue;
        }
        #[allow(unsafe_code)]
        // SAFETY: rt_sigaction(2) reads one kernel `struct sigaction`
        // (at most 32 bytes on Linux) from `zero` (64 bytes, alive for the
        // call) and writes nothing (a null old action).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                zero.as_ptr(),
                std::ptr::null_mut::<u64>(),
                8usize,
            )
        };
        if rc != 0 {
            return Err(refused(
                &format!("reset the disposition of signal {sig}"),
                std::io::Error::last_os_error(),
            ));
        }
        let mut old = [u64::MAX; 8];
        #[allow(unsafe_code)]
        // SAFETY: as above, with no new action; the old one is written
        // into `old` (64 bytes, more than the kernel's struct).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                sig,
                std::ptr::null::<u64>(),
                old.as_mut_ptr(),
                8usize,
            )
        };
        // The handler is the struct's first member: 0 is SIG_DFL.
        if rc != 0 || old[0] != 0 {
            return Err(refused(
                &format!("reset the disposition of signal {sig}"),
                old[0],
            ));
        }
    }
    let empty: u64 = 0;
    let mut now: u64 = u64::MAX;
    #[allow(unsafe_code)]
    // SAFETY: rt_sigprocmask(2) reads the 8-byte set `empty` and writes
    // the previous one into `now`, both on this stack frame.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            &empty as *const u64,
            std::ptr::null_mut::<u64>(),
            8usize,
        )
    };
    #[allow(unsafe_code)]
    // SAFETY: as above, reading the mask only (a null new set).
    let rc2 = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            std::ptr::null::<u64>(),
            &mut now as *mut u64,
            8usize,
        )
    };
    if rc != 0 || rc2 != 0 || now != 0 {
        return Err(refused("empty the signal mask", now));
    }
    Ok(())
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
