//! The sandbox launch: what the process of a `bwrap` run applies to
//! itself between the collector's `fork` and its `exec` of bubblewrap,
//! which bubblewrap cannot. Whoever starts the collector (the agent,
//! through sudo) chooses the process attributes it inherits; none of them
//! may reach candidate code, so the child sets every one to the value the
//! runtime identity pins ([`SandboxLimits`] and its
//! [`ProcessAttributes`](super::limits::ProcessAttributes)):
//!
//! 0. marks itself not dumpable: it holds a copy of the collector's
//!    memory until its `exec`, and no process of the sandbox's uid may
//!    read it once the uid is dropped (the `exec` resets the flag);
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
//! Every value is computed before the fork: the child only makes system
//! calls (no allocation, no lock: the collector has other threads, whose
//! locks a forked child may find held). A step that fails ends the child
//! before `exec`, and the spawn fails with a code naming the step and the
//! error number ([`spawn_error`] turns it into
//! `sandbox_limit_unavailable`, `details.step`): a pinned value that
//! cannot be applied refuses the run. (A non-root collector cannot raise
//! a lowered hard limit or lower a raised nice value;
//! `SandboxLimits::check_applicable` refuses those before anything is
//! reserved.) Until an earlier build, these steps ran in a re-executed
//! `agent-task sandbox-exec`: the same steps in the same order, for the
//! price of starting the whole binary again on every run.

use super::limits::SandboxLimits;
use crate::error::{Code, Error, Result};
use rustix::process::{Resource, Rlimit};
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
        format!("the sandbox launch could not {step}: {e}"),
    )
    .with("step", step)
}

/// Everything the child applies, computed before the fork.
struct Prepared {
    nice: i32,
    io_priority: libc::c_long,
    timer_slack: std::num::NonZeroU64,
    personality: u32,
    thp_disabled: bool,
    rlimits: Vec<(Resource, u64)>,
    ids: Option<(rustix::process::Uid, rustix::process::Gid)>,
    umask: rustix::fs::Mode,
    parent: rustix::process::Pid,
}

/// The steps of the child, in order: what a failure code names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Dumpable,
    Scheduler,
    Nice,
    IoPriority,
    Affinity,
    TimerSlack,
    Personality,
    Thp,
    /// The rlimit at this index of `SandboxLimits::rlimits`.
    Rlimit(u8),
    Groups,
    Gid,
    Uid,
    Umask,
    /// The disposition of this signal.
    Signal(u8),
    SignalMask,
    NoNewPrivs,
    ParentDeath,
    Parent,
    CloseOnExec,
}

impl Step {
    fn code(self) -> u32 {
        match self {
            Step::Scheduler => 0,
            Step::Nice => 1,
            Step::IoPriority => 2,
            Step::Affinity => 3,
            Step::TimerSlack => 4,
            Step::Personality => 5,
            Step::Thp => 6,
            Step::Groups => 7,
            Step::Gid => 8,
            Step::Uid => 9,
            Step::Umask => 10,
            Step::SignalMask => 11,
            Step::NoNewPrivs => 12,
            Step::ParentDeath => 13,
            Step::Parent => 14,
            Step::CloseOnExec => 15,
            Step::Dumpable => 16,
            Step::Rlimit(i) => 32 + u32::from(i),
            Step::Signal(s) => 64 + u32::from(s),
        }
    }

    fn from_code(c: u32) -> Option<Step> {
        Some(match c {
            0 => Step::Scheduler,
            1 => Step::Nice,
            2 => Step::IoPriority,
            3 => Step::Affinity,
            4 => Step::TimerSlack,
            5 => Step::Personality,
            6 => Step::Thp,
            7 => Step::Groups,
            8 => Step::Gid,
            9 => Step::Uid,
            10 => Step::Umask,
            11 => Step::SignalMask,
            12 => Step::NoNewPrivs,
            13 => Step::ParentDeath,
            14 => Step::Parent,
            15 => Step::CloseOnExec,
            16 => Step::Dumpable,
            32..64 => Step::Rlimit(u8::try_from(c - 32).ok()?),
            64..=128 => Step::Signal(u8::try_from(c - 64).ok()?),
            _ => return None,
        })
    }
}

/// A failed step in the child: its error number, or 0 when the call
/// succeeded and the value read back is not the one set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Failure {
    step: Step,
    errno: i32,
}

/// The tag of a spawn error that is a [`Failure`]: `TAG | step << 12 |
/// errno` (error numbers are below 4096), far above any error number.
const TAG: i32 = 0x4000_0000;

impl Failure {
    fn encode(self) -> i32 {
        let errno = u32::try_from(self.errno).unwrap_or(0).min(0xfff);
        // At most 128 << 12: well inside the 30 bits under the tag.
        TAG | i32::try_from((self.step.code() << 12) | errno).unwrap_or(0)
    }

    fn decode(code: i32) -> Option<Failure> {
        if code & TAG == 0 || code < 0 {
            return None;
        }
        let rest = u32::try_from(code & !TAG).ok()?;
        Some(Failure {
            step: Step::from_code(rest >> 12)?,
            errno: i32::try_from(rest & 0xfff).ok()?,
        })
    }
}

/// The step, and its error, as the refusal names them.
fn describe(f: Failure, l: &Launch, p: &Prepared) -> Error {
    let why: Box<dyn std::fmt::Display> = if f.errno == 0 {
        Box::new("the value read back is not the one set")
    } else {
        Box::new(std::io::Error::from_raw_os_error(f.errno))
    };
    let step = match f.step {
        Step::Dumpable => "make the process not dumpable".to_owned(),
        Step::Scheduler => "set the scheduling policy to SCHED_OTHER".to_owned(),
        Step::Nice => format!("set the nice value to {}", p.nice),
        Step::IoPriority => format!(
            "set the I/O priority to best-effort {}",
            p.io_priority & 0xff
        ),
        Step::Affinity => "set the CPU affinity to every CPU".to_owned(),
        Step::TimerSlack => format!("set the timer slack to {} ns", p.timer_slack),
        Step::Personality => format!("set the personality to {:#x}", p.personality),
        Step::Thp => "set the transparent huge page flag".to_owned(),
        Step::Rlimit(i) => {
            let names = l.limits.rlimits().unwrap_or_default();
            match (names.get(usize::from(i)), p.rlimits.get(usize::from(i))) {
                (Some((_, _, name)), Some((_, v))) => format!("set the {name} limit to {v}"),
                _ => "set an rlimit".to_owned(),
            }
        }
        Step::Groups => "clear groups".to_owned(),
        Step::Gid => "set the gid".to_owned(),
        Step::Uid => match l.limits.run_as_uid {
            Some(u) => format!("drop to uid {u}"),
            None => "set the uid".to_owned(),
        },
        Step::Umask => "set the umask".to_owned(),
        Step::Signal(s) => format!("reset the disposition of signal {s}"),
        Step::SignalMask => "empty the signal mask".to_owned(),
        Step::NoNewPrivs => "set no_new_privs".to_owned(),
        Step::ParentDeath => "set the parent-death signal".to_owned(),
        Step::Parent => "start (the collector is gone)".to_owned(),
        Step::CloseOnExec => "mark inherited descriptors close-on-exec".to_owned(),
    };
    refused(&step, why)
}

fn prepare(l: &Launch) -> Result<Prepared> {
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
    let timer_slack = std::num::NonZeroU64::new(p.timer_slack_ns)
        .ok_or_else(|| refused("set the timer slack", 0))?;
    let ids = match l.limits.run_as_uid {
        Some(uid) if uid == 0 || uid == u32::MAX => return Err(refused("drop to uid", uid)),
        Some(uid) => Some((
            rustix::process::Uid::from_raw(uid),
            rustix::process::Gid::from_raw(uid),
        )),
        None => None,
    };
    let umask =
        rustix::fs::Mode::from_bits(p.umask).ok_or_else(|| refused("set the umask", p.umask))?;
    let nofile = crate::testhooks::launch_nofile();
    let rlimits = l
        .limits
        .rlimits()?
        .into_iter()
        .map(|(r, v, _)| match (r, nofile) {
            (Resource::Nofile, Some(n)) => (r, n),
            _ => (r, v),
        })
        .collect();
    Ok(Prepared {
        nice: p.nice,
        io_priority: IOPRIO_BEST_EFFORT | libc::c_long::from(p.io_priority.level),
        timer_slack,
        personality: p.personality,
        thp_disabled: p.thp_disabled,
        rlimits,
        ids,
        umask,
        parent: rustix::process::getpid(),
    })
}

/// The command of a launch: `program` with `args`, an empty environment,
/// and every step above applied in the child before its `exec`. A spawn
/// error goes through [`spawn_error`].
pub fn command(l: &Launch) -> Result<std::process::Command> {
    let p = prepare(l)?;
    let mut cmd = std::process::Command::new(&l.program);
    cmd.args(&l.args).env_clear();
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before `exec`. It only
    // reads `p` (computed before the fork, never changed) and makes
    // system calls (raw ones, through rustix's linux_raw backend, or the
    // libc wrappers of single system calls): no allocation, no lock, no
    // other memory shared with the parent. Its error is a plain error
    // number, which std hands back through its own pipe.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, move || {
            apply(&p).map_err(|f| std::io::Error::from_raw_os_error(f.encode()))
        });
    }
    Ok(cmd)
}

/// The refusal a failed spawn of [`command`] stands for, if the child
/// failed one of its steps (`None`: the spawn failed otherwise, as a
/// missing program).
pub fn spawn_error(e: &std::io::Error, l: &Launch) -> Option<Error> {
    let f = Failure::decode(e.raw_os_error()?)?;
    let p = prepare(l).ok()?;
    Some(describe(f, l, &p))
}

fn fail(step: Step) -> impl Fn(rustix::io::Errno) -> Failure {
    move |e| Failure {
        step,
        errno: e.raw_os_error(),
    }
}

fn check(ok: bool, step: Step) -> std::result::Result<(), Failure> {
    if ok {
        Ok(())
    } else {
        Err(Failure { step, errno: 0 })
    }
}

/// The child's side: the steps, in order. System calls only.
fn apply(p: &Prepared) -> std::result::Result<(), Failure> {
    use rustix::process::{DumpableBehavior, Signal};
    // The child holds a copy of the collector's memory until its exec: no
    // process of the sandbox's uid may read it once the uid is dropped
    // (whatever `fs.suid_dumpable` says). The exec of bwrap resets it.
    rustix::process::set_dumpable_behavior(DumpableBehavior::NotDumpable)
        .map_err(fail(Step::Dumpable))?;
    check(
        rustix::process::dumpable_behavior() == Ok(DumpableBehavior::NotDumpable),
        Step::Dumpable,
    )?;
    set_scheduler()?;
    rustix::process::setpriority_process(None, p.nice).map_err(fail(Step::Nice))?;
    check(
        rustix::process::getpriority_process(None) == Ok(p.nice),
        Step::Nice,
    )?;
    set_io_priority(p.io_priority)?;
    set_all_cpus()?;
    rustix::thread::set_current_timer_slack(Some(p.timer_slack)).map_err(fail(Step::TimerSlack))?;
    check(
        rustix::thread::current_timer_slack() == Ok(p.timer_slack.get()),
        Step::TimerSlack,
    )?;
    set_personality(p.personality)?;
    rustix::thread::disable_transparent_huge_pages(p.thp_disabled).map_err(fail(Step::Thp))?;
    check(
        rustix::thread::transparent_huge_pages_are_disabled() == Ok(p.thp_disabled),
        Step::Thp,
    )?;
    for (i, (res, v)) in p.rlimits.iter().enumerate() {
        let step = Step::Rlimit(u8::try_from(i).unwrap_or(u8::MAX));
        rustix::process::setrlimit(
            *res,
            Rlimit {
                current: Some(*v),
                maximum: Some(*v),
            },
        )
        .map_err(fail(step))?;
    }
    if let Some((u, g)) = p.ids {
        // The child is the only thread of its process, so the thread's
        // credentials are the process's when it executes bwrap.
        rustix::thread::set_thread_groups(&[]).map_err(fail(Step::Groups))?;
        rustix::thread::set_thread_res_gid(g, g, g).map_err(fail(Step::Gid))?;
        rustix::thread::set_thread_res_uid(u, u, u).map_err(fail(Step::Uid))?;
        check(
            rustix::process::getuid() == u && rustix::process::geteuid() == u,
            Step::Uid,
        )?;
    }
    rustix::process::umask(p.umask);
    check(rustix::process::umask(p.umask) == p.umask, Step::Umask)?;
    reset_signals()?;
    rustix::thread::set_no_new_privs(true).map_err(fail(Step::NoNewPrivs))?;
    rustix::process::set_parent_process_death_signal(Some(Signal::KILL))
        .map_err(fail(Step::ParentDeath))?;
    check(rustix::process::getppid() == Some(p.parent), Step::Parent)?;
    close_inherited_on_exec()
}

fn last_errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `SCHED_OTHER` at static priority 0 without reset-on-fork (an
/// inherited `SCHED_IDLE` or `SCHED_BATCH` is undone), read back.
fn set_scheduler() -> std::result::Result<(), Failure> {
    let param = libc::sched_param { sched_priority: 0 };
    #[allow(unsafe_code)]
    // SAFETY: sched_setscheduler(2) on the calling process reads the one
    // sched_param it is given, which lives on this stack frame for the
    // whole call.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &param) };
    if rc != 0 {
        return Err(Failure {
            step: Step::Scheduler,
            errno: last_errno(),
        });
    }
    #[allow(unsafe_code)]
    // SAFETY: sched_getscheduler(2) reads no memory of ours.
    let now = unsafe { libc::sched_getscheduler(0) };
    check(now == libc::SCHED_OTHER, Step::Scheduler)
}

/// The execution domain, read back (`0xffffffff` only queries it).
fn set_personality(want: u32) -> std::result::Result<(), Failure> {
    let arg = libc::c_ulong::from(want);
    #[allow(unsafe_code)]
    // SAFETY: personality(2) takes one integer and touches no memory.
    let rc = unsafe { libc::personality(arg) };
    if rc == -1 {
        return Err(Failure {
            step: Step::Personality,
            errno: last_errno(),
        });
    }
    #[allow(unsafe_code)]
    // SAFETY: as above; 0xffffffff queries without changing anything.
    let now = unsafe { libc::personality(0xffff_ffff) };
    check(u32::try_from(now).ok() == Some(want), Step::Personality)
}

/// `IOPRIO_WHO_PROCESS` of `ioprio_set(2)`.
const IOPRIO_WHO_PROCESS: libc::c_long = 1;
/// `IOPRIO_CLASS_BE << IOPRIO_CLASS_SHIFT`.
const IOPRIO_BEST_EFFORT: libc::c_long = 2 << 13;

/// The I/O priority `want` (the best-effort class at the pinned level),
/// read back.
fn set_io_priority(want: libc::c_long) -> std::result::Result<(), Failure> {
    #[allow(unsafe_code)]
    // SAFETY: ioprio_set(2) on the calling process takes three integers
    // and touches no memory.
    let rc = unsafe { libc::syscall(libc::SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, want) };
    if rc != 0 {
        return Err(Failure {
            step: Step::IoPriority,
            errno: last_errno(),
        });
    }
    #[allow(unsafe_code)]
    // SAFETY: ioprio_get(2) takes two integers and touches no memory.
    let now = unsafe { libc::syscall(libc::SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0) };
    check(now == want, Step::IoPriority)
}

/// Every CPU in the mask: the kernel keeps those of the process's cpuset
/// (what `taskset` narrowed is widened again), and at least one must be.
/// The set lives on the stack.
fn set_all_cpus() -> std::result::Result<(), Failure> {
    use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
    let mut all = CpuSet::new();
    for cpu in 0..CpuSet::MAX_CPU {
        all.set(cpu);
    }
    sched_setaffinity(None, &all).map_err(fail(Step::Affinity))?;
    let now = sched_getaffinity(None).map_err(fail(Step::Affinity))?;
    check(now.count() > 0, Step::Affinity)
}

/// Highest signal number on Linux.
const SIGNAL_MAX: u8 = 64;

/// Every signal to its default action and none blocked, read back. Raw
/// `rt_sigaction` and `rt_sigprocmask`, because the C library refuses the
/// signals it reserves for itself (32, 33), which an inherited mask or
/// disposition may still name. A `struct sigaction` of zeros is
/// `SIG_DFL`, no flags, an empty mask, whatever the architecture's layout.
fn reset_signals() -> std::result::Result<(), Failure> {
    let zero = [0u64; 8];
    for sig in 1..=SIGNAL_MAX {
        if i32::from(sig) == libc::SIGKILL || i32::from(sig) == libc::SIGSTOP {
            continue;
        }
        let step = Step::Signal(sig);
        #[allow(unsafe_code)]
        // SAFETY: rt_sigaction(2) reads one kernel `struct sigaction`
        // (at most 32 bytes on Linux) from `zero` (64 bytes, alive for the
        // call) and writes nothing (a null old action).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                libc::c_long::from(sig),
                zero.as_ptr(),
                std::ptr::null_mut::<u64>(),
                8usize,
            )
        };
        if rc != 0 {
            return Err(Failure {
                step,
                errno: last_errno(),
            });
        }
        let mut old = [u64::MAX; 8];
        #[allow(unsafe_code)]
        // SAFETY: as above, with no new action; the old one is written
        // into `old` (64 bytes, more than the kernel's struct).
        let rc = unsafe {
            libc::syscall(
                libc::SYS_rt_sigaction,
                libc::c_long::from(sig),
                std::ptr::null::<u64>(),
                old.as_mut_ptr(),
                8usize,
            )
        };
        // The handler is the struct's first member: 0 is SIG_DFL.
        check(rc == 0 && old[0] == 0, step)?;
    }
    let empty: u64 = 0;
    let mut now: u64 = u64::MAX;
    #[allow(unsafe_code)]
    // SAFETY: rt_sigprocmask(2) reads the 8-byte set `empty`, on this
    // stack frame.
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
    // SAFETY: as above, reading the mask only (a null new set) into
    // `now`, on this stack frame.
    let rc2 = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            std::ptr::null::<u64>(),
            &mut now as *mut u64,
            8usize,
        )
    };
    check(rc == 0 && rc2 == 0 && now == 0, Step::SignalMask)
}

/// Marks every descriptor above 2 close-on-exec, so nothing the collector
/// inherited (an open pipe, a file of a store) reaches the sandbox: bwrap
/// passes descriptors through.
fn close_inherited_on_exec() -> std::result::Result<(), Failure> {
    #[allow(unsafe_code)]
    // SAFETY: close_range(2) with CLOSE_RANGE_CLOEXEC only sets the
    // close-on-exec flag: no descriptor is closed or reused, so no
    // descriptor this process owns becomes invalid. It reads no memory.
    let rc = unsafe { libc::close_range(3, u32::MAX, libc::CLOSE_RANGE_CLOEXEC as libc::c_int) };
    if rc != 0 {
        return Err(Failure {
            step: Step::CloseOnExec,
            errno: last_errno(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(limits: SandboxLimits) -> Launch {
        Launch {
            limits,
            program: "/bin/sh".into(),
            args: vec!["-c".into(), "exit 0".into()],
        }
    }

    fn pinned() -> SandboxLimits {
        let uid = rustix::process::getuid().is_root().then_some(2_000_000_000);
        SandboxLimits {
            tmpfs_bytes: 1 << 30,
            address_space_bytes: 1 << 33,
            processes: 512,
            file_size_bytes: 1 << 30,
            cpu_seconds: 600,
            run_as_uid: uid,
            process: Some(super::super::limits::ProcessAttributes::pinned(1 << 33)),
        }
    }

    #[test]
    fn every_step_code_round_trips() {
        let mut steps = vec![
            Step::Dumpable,
            Step::Scheduler,
            Step::Nice,
            Step::IoPriority,
            Step::Affinity,
            Step::TimerSlack,
            Step::Personality,
            Step::Thp,
            Step::Groups,
            Step::Gid,
            Step::Uid,
            Step::Umask,
            Step::SignalMask,
            Step::NoNewPrivs,
            Step::ParentDeath,
            Step::Parent,
            Step::CloseOnExec,
        ];
        steps.extend((0..16).map(Step::Rlimit));
        steps.extend((1..=SIGNAL_MAX).map(Step::Signal));
        let mut codes = std::collections::BTreeSet::new();
        for s in steps {
            assert!(codes.insert(s.code()), "{s:?} has its own code");
            for errno in [0, 1, libc::EPERM, libc::EINVAL, 4095] {
                let f = Failure { step: s, errno };
                let c = f.encode();
                assert!(c > 0 && c & TAG != 0);
                assert_eq!(Failure::decode(c), Some(f));
            }
        }
        // A plain error number is no step's failure.
        for errno in [0, libc::ENOENT, libc::EACCES, 4095, -1] {
            assert_eq!(Failure::decode(errno), None);
        }
    }

    /// The launch runs its program with the pinned attributes, and a step
    /// the kernel refuses in the child (an open-files limit over the
    /// system's ceiling, which not even root may set) fails the spawn with
    /// that step named.
    #[test]
    fn a_launch_runs_and_a_refused_step_is_named() {
        let l = launch(pinned());
        let mut c = command(&l).expect("command");
        let st = c.status().expect("runs");
        assert!(st.success(), "{st:?}");
        let mut limits = pinned();
        if let Some(p) = limits.process.as_mut() {
            p.rlimits.open_files = 1 << 40;
        }
        let l = launch(limits);
        let e = command(&l)
            .expect("command")
            .spawn()
            .expect_err("the child refuses");
        let e = spawn_error(&e, &l).expect("a step's failure");
        assert_eq!(e.code(), Code::SandboxLimitUnavailable);
        assert!(
            e.message()
                .contains("set the open_files limit to 1099511627776"),
            "{}",
            e.message()
        );
        // Anything else is no step's failure.
        let other = std::io::Error::from_raw_os_error(libc::ENOENT);
        assert!(spawn_error(&other, &l).is_none());
    }

    #[test]
    fn a_launch_is_refused_before_the_fork_when_it_cannot_be_applied() {
        let mut l = launch(pinned());
        l.program = "sh".into();
        assert_eq!(
            command(&l).expect_err("relative").code(),
            Code::SandboxLimitUnavailable
        );
        let mut limits = pinned();
        limits.run_as_uid = Some(0);
        assert_eq!(
            command(&launch(limits)).expect_err("uid 0").code(),
            Code::SandboxLimitUnavailable
        );
        let mut limits = pinned();
        limits.process = None;
        assert_eq!(
            command(&launch(limits)).expect_err("no attributes").code(),
            Code::SandboxLimitUnavailable
        );
    }
}
