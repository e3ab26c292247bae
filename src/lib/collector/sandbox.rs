//! The sandbox launch: what the process of a `bwrap` run applies to
//! itself between the collector's `clone` of it and its `exec` of
//! bubblewrap, which bubblewrap cannot. Whoever starts the collector (the agent,
//! through sudo) chooses the process attributes it inherits; none of them
//! may reach candidate code, so the child sets every one to the value the
//! runtime identity pins ([`SandboxLimits`] and its
//! [`ProcessAttributes`](super::limits::ProcessAttributes)):
//!
//! 0. marks itself not dumpable: it runs in the collector's memory until
//!    its `exec` ([`spawn`]), and no process of the sandbox's uid may read
//!    it once the uid is dropped (the `exec` resets the flag, and the
//!    collector sets its own back);
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
//! Every value is computed before the clone: the child only makes system
//! calls (no allocation, no lock: the collector has other threads, whose
//! locks the child may find held, and it shares their memory). A step that
//! fails ends the child before `exec`, and the spawn fails with a code
//! naming the step and the error number ([`SpawnError::Refused`]:
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

/// Everything the child applies, computed before the clone.
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

/// A started launch: its process (the leader of its own process group)
/// and the read ends of its standard output and error.
#[derive(Debug)]
pub struct Spawned {
    pid: rustix::process::Pid,
    /// The command's standard output (until taken).
    pub stdout: Option<std::fs::File>,
    /// The command's standard error (until taken).
    pub stderr: Option<std::fs::File>,
}

impl Spawned {
    /// The process id (and process group id).
    pub fn id(&self) -> u32 {
        self.pid.as_raw_nonzero().get().unsigned_abs()
    }

    /// Its exit status once it ended (it is reaped then), without waiting.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        use std::os::unix::process::ExitStatusExt;
        let r = rustix::process::waitpid(Some(self.pid), rustix::process::WaitOptions::NOHANG)?;
        Ok(r.map(|(_, st)| std::process::ExitStatus::from_raw(st.as_raw())))
    }
}

/// Why a launch did not start.
#[derive(Debug)]
pub enum SpawnError {
    /// A step of the launch was refused (`sandbox_limit_unavailable`,
    /// the step named), before or after the clone.
    Refused(Error),
    /// The process could not be made, or `program` not executed.
    Start(std::io::Error),
}

/// Starts a launch: `program` with `args` and an empty environment, its
/// standard input `/dev/null`, its standard output and error pipes, in a
/// process group of its own, with every step above applied in the child
/// before its `exec`.
///
/// The child is made with `clone(CLONE_VM | CLONE_VFORK)`, as
/// `posix_spawn` makes its children: it runs on a stack of its own in the
/// collector's memory, and the calling thread waits until it executed
/// bubblewrap or exited. A `fork` would copy the page tables of the
/// collector's whole address space and then take a copy-on-write fault on
/// every page the collector writes again after it (its heap, SQLite's
/// page cache): about half a millisecond per run (`docs/transfer.md`,
/// "What collecting costs"). The child only reads what was computed
/// before the clone and makes system calls, and writes nothing of the
/// collector's memory but one result word. Two of its steps set flags of
/// the address space it shares with the collector (not dumpable, the
/// transparent-huge-page flag): the collector's own values are read before
/// the clone and set again after it.
pub fn spawn(l: &Launch) -> std::result::Result<Spawned, SpawnError> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let p = prepare(l).map_err(SpawnError::Refused)?;
    let start = |e: std::io::Error| SpawnError::Start(e);
    let c = |b: &[u8]| {
        CString::new(b).map_err(|_| start(std::io::Error::from_raw_os_error(libc::EINVAL)))
    };
    let program = c(l.program.as_os_str().as_bytes())?;
    let mut args = vec![program.clone()];
    for a in &l.args {
        args.push(c(a.as_bytes())?);
    }
    let mut argv: Vec<*const libc::c_char> = args.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let envp: [*const libc::c_char; 1] = [std::ptr::null()];
    // Every descriptor the child moves onto 0, 1 and 2 is above 2, so that
    // no move overwrites another's source (a collector started with a
    // standard descriptor closed gets its pipes there).
    let high = |fd: std::os::fd::OwnedFd| -> std::io::Result<std::os::fd::OwnedFd> {
        use std::os::fd::AsRawFd;
        if fd.as_raw_fd() > 2 {
            return Ok(fd);
        }
        Ok(rustix::io::fcntl_dupfd_cloexec(&fd, 3)?)
    };
    let null = std::fs::File::open("/dev/null").map_err(start)?;
    let null = high(null.into()).map_err(start)?;
    let (out_r, out_w) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| start(e.into()))?;
    let (err_r, err_w) =
        rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(|e| start(e.into()))?;
    let (out_w, err_w) = (high(out_w).map_err(start)?, high(err_w).map_err(start)?);
    let ctx = {
        use std::os::fd::AsRawFd;
        Child {
            p: &p,
            program: program.as_ptr(),
            argv: argv.as_ptr(),
            envp: envp.as_ptr(),
            stdio: [null.as_raw_fd(), out_w.as_raw_fd(), err_w.as_raw_fd()],
            failed: std::sync::atomic::AtomicI32::new(0),
        }
    };
    let stack = ChildStack::new().map_err(start)?;
    let dumpable = rustix::process::dumpable_behavior().map_err(|e| start(e.into()))?;
    let thp_disabled =
        rustix::thread::transparent_huge_pages_are_disabled().map_err(|e| start(e.into()))?;
    let pid = clone_vfork(&ctx, &stack);
    // The address space's flags the child set, back to the collector's.
    // Best effort: a value the kernel does not take back (`RootOnly` is
    // never settable) leaves the collector not dumpable, the stricter
    // state, and is no reason to lose the handle of a running child.
    if rustix::process::dumpable_behavior() != Ok(dumpable) {
        let _ = rustix::process::set_dumpable_behavior(dumpable);
    }
    if rustix::thread::transparent_huge_pages_are_disabled() != Ok(thp_disabled) {
        let _ = rustix::thread::disable_transparent_huge_pages(thp_disabled);
    }
    drop((null, out_w, err_w));
    let pid = pid.map_err(start)?;
    let failed = ctx.failed.load(std::sync::atomic::Ordering::SeqCst);
    if failed != 0 {
        // The child exited without executing: reap it (again when a
        // signal interrupts the wait).
        while let Err(rustix::io::Errno::INTR) =
            rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty())
        {}
        return Err(match Failure::decode(failed) {
            Some(f) => SpawnError::Refused(describe(f, l, &p)),
            None => SpawnError::Start(std::io::Error::from_raw_os_error(failed)),
        });
    }
    Ok(Spawned {
        pid,
        stdout: Some(std::fs::File::from(out_r)),
        stderr: Some(std::fs::File::from(err_r)),
    })
}

/// What the child of [`spawn`] reads, and the one word it writes.
struct Child<'a> {
    p: &'a Prepared,
    program: *const libc::c_char,
    argv: *const *const libc::c_char,
    envp: *const *const libc::c_char,
    /// The descriptors that become its 0, 1 and 2 (all above 2).
    stdio: [libc::c_int; 3],
    /// 0 while it runs; else a [`Failure::encode`]d step or the error
    /// number of a failed move or `execve`.
    failed: std::sync::atomic::AtomicI32,
}

/// The child's stack: its own mapping, with an inaccessible page below it.
struct ChildStack {
    base: *mut libc::c_void,
}

impl ChildStack {
    /// Stack bytes above the guard page (the steps use a few KiB).
    const SIZE: usize = 256 * 1024;
    const GUARD: usize = 4096;

    fn new() -> std::io::Result<ChildStack> {
        #[allow(unsafe_code)]
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // named or changed.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                Self::SIZE + Self::GUARD,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_STACK,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let stack = ChildStack { base };
        #[allow(unsafe_code)]
        // SAFETY: the lowest page of the mapping just made, which nothing
        // references yet.
        let rc = unsafe { libc::mprotect(base, Self::GUARD, libc::PROT_NONE) };
        if rc != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(stack)
    }

    /// The initial stack pointer: the mapping's end (page-aligned, so
    /// 16-byte aligned as the ABI wants).
    fn top(&self) -> *mut libc::c_void {
        self.base
            .cast::<u8>()
            .wrapping_add(Self::SIZE + Self::GUARD)
            .cast()
    }
}

impl Drop for ChildStack {
    fn drop(&mut self) {
        #[allow(unsafe_code)]
        // SAFETY: the mapping made in `new`, unused once `clone` returned
        // (the child executed or exited before that).
        unsafe {
            libc::munmap(self.base, Self::SIZE + Self::GUARD);
        }
    }
}

/// Clones the child of [`spawn`] and returns once it executed or exited.
/// Every signal is blocked in this thread around the clone (the child
/// inherits that mask), so that no handler of the collector runs on the
/// child's stack before its steps reset every disposition and the mask.
fn clone_vfork(ctx: &Child<'_>, stack: &ChildStack) -> std::io::Result<rustix::process::Pid> {
    let old = set_signal_mask(Some(u64::MAX)).map_err(std::io::Error::from_raw_os_error)?;
    #[allow(unsafe_code)]
    // SAFETY: CLONE_VM | CLONE_VFORK: the child runs `child_main` on
    // `stack` (a mapping of its own, alive until after this returns) in
    // this process's memory while this thread is suspended, until the
    // child executes or exits. `ctx` outlives the call; the child reads it
    // and writes only `ctx.failed` (an atomic). No CLONE_FILES, CLONE_FS,
    // CLONE_SIGHAND or CLONE_THREAD: the child's descriptors, umask,
    // dispositions, credentials and limits are its own.
    let pid = unsafe {
        libc::clone(
            child_main,
            stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            std::ptr::from_ref(ctx).cast_mut().cast(),
        )
    };
    let clone_error = std::io::Error::last_os_error();
    // Setting back a mask this thread just had cannot fail.
    let _ = set_signal_mask(Some(old));
    if pid <= 0 {
        return Err(clone_error);
    }
    rustix::process::Pid::from_raw(pid).ok_or(clone_error)
}

/// The child: its descriptors, its process group, the steps, `execve`.
/// Only system calls, on its own stack; any failure is written to
/// `failed` and the child exits with 127 (the parent reaps it).
extern "C" fn child_main(arg: *mut libc::c_void) -> libc::c_int {
    #[allow(unsafe_code)]
    // SAFETY: `arg` is the `Child` that `clone_vfork` passed, alive (the
    // parent is suspended in `clone` until this process executes or
    // exits).
    let ctx = unsafe { &*arg.cast_const().cast::<Child<'_>>() };
    let code = match child_steps(ctx) {
        Ok(Ok(())) => {
            #[allow(unsafe_code)]
            // SAFETY: a NUL-terminated path and NULL-terminated arrays of
            // NUL-terminated strings, made before the clone and alive.
            unsafe {
                libc::execve(ctx.program, ctx.argv, ctx.envp);
            }
            last_errno().max(1)
        }
        Ok(Err(f)) => f.encode(),
        Err(errno) => errno.max(1),
    };
    ctx.failed.store(code, std::sync::atomic::Ordering::SeqCst);
    #[allow(unsafe_code)]
    // SAFETY: _exit(2) ends this process at once, running nothing of the
    // collector's (no atexit handler, no destructor, no stdio flush).
    unsafe {
        libc::_exit(127)
    }
}

/// The child's descriptors and process group (a failure is its error
/// number, as a failed `execve`'s), then [`apply`].
fn child_steps(ctx: &Child<'_>) -> std::result::Result<std::result::Result<(), Failure>, i32> {
    for (target, fd) in (0..).zip(ctx.stdio) {
        #[allow(unsafe_code)]
        // SAFETY: dup2(2) on descriptors the parent keeps open until the
        // child executed; `fd` is above 2, so it is never `target`.
        if unsafe { libc::dup2(fd, target) } < 0 {
            return Err(last_errno());
        }
    }
    rustix::process::setpgid(None, None).map_err(|e| e.raw_os_error())?;
    Ok(apply(ctx.p))
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

/// Raw `rt_sigprocmask(SIG_SETMASK)` of this thread: sets the mask to
/// `new` (when given) and returns the one before, as the kernel's 64-bit
/// set. Raw because the C library's wrappers refuse to block or unblock
/// the two signals it reserves for itself (32, 33). Only a system call:
/// the launch's child may make it.
fn set_signal_mask(new: Option<u64>) -> std::result::Result<u64, i32> {
    let mut old: u64 = 0;
    let new_ptr = new.as_ref().map_or(std::ptr::null(), std::ptr::from_ref);
    #[allow(unsafe_code)]
    // SAFETY: rt_sigprocmask(2) reads the 8-byte set behind `new_ptr`
    // (`new`, on this frame) unless it is null, and writes the previous
    // mask into `old`, on this frame.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_rt_sigprocmask,
            libc::SIG_SETMASK,
            new_ptr,
            &mut old as *mut u64,
            8usize,
        )
    };
    if rc != 0 {
        return Err(last_errno());
    }
    Ok(old)
}

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
    let fail_mask = |errno| Failure {
        step: Step::SignalMask,
        errno,
    };
    set_signal_mask(Some(0)).map_err(fail_mask)?;
    let now = set_signal_mask(None).map_err(fail_mask)?;
    check(now == 0, Step::SignalMask)
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

    /// Waits for a spawned launch; returns its exit status and output.
    fn finish(mut c: Spawned) -> (std::process::ExitStatus, String, String) {
        use std::io::Read;
        let (mut out, mut err) = (String::new(), String::new());
        let mut o = c.stdout.take().expect("stdout");
        let mut e = c.stderr.take().expect("stderr");
        let t = std::thread::spawn(move || {
            let mut s = String::new();
            e.read_to_string(&mut s).map(|_| s)
        });
        o.read_to_string(&mut out).expect("stdout");
        err.push_str(&t.join().expect("thread").expect("stderr"));
        loop {
            if let Some(st) = c.try_wait().expect("wait") {
                return (st, out, err);
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
    }

    fn refusal(e: SpawnError) -> Error {
        match e {
            SpawnError::Refused(e) => e,
            SpawnError::Start(e) => panic!("not a refusal: {e}"),
        }
    }

    /// The launch runs its program with the pinned attributes, its output
    /// on the pipes, `/dev/null` as its input, in a process group of its
    /// own and with an empty environment; the collector's own address
    /// space flags (shared with the child until its exec) and its signal
    /// mask (all blocked around the clone) are as before.
    #[test]
    fn a_launch_runs_in_its_own_group_and_leaves_the_collector_as_it_was() {
        let signal_mask = || set_signal_mask(None).expect("mask");
        let mask = signal_mask();
        let dumpable = rustix::process::dumpable_behavior().expect("dumpable");
        let thp = rustix::thread::transparent_huge_pages_are_disabled().expect("thp");
        let mut l = launch(pinned());
        l.args = vec![
            "-c".into(),
            "read -r x || printf 'eof '; printf \"$$ \"; cut -d' ' -f5 /proc/$$/stat; \
             printf 'env:%s' \"$(env | grep -v '^PWD=')\" >&2; exit 3"
                .into(),
        ];
        let c = spawn(&l).map_err(refusal).expect("spawned");
        let pid = c.id();
        let (st, out, err) = finish(c);
        assert_eq!(st.code(), Some(3), "{out} {err}");
        assert_eq!(out, format!("eof {pid} {pid}\n"), "input, pid and group");
        assert_eq!(err, "env:", "the environment is empty");
        assert_eq!(signal_mask(), mask, "the collector's signal mask");
        assert_eq!(rustix::process::dumpable_behavior().ok(), Some(dumpable));
        assert_eq!(
            rustix::thread::transparent_huge_pages_are_disabled().ok(),
            Some(thp)
        );
    }

    /// A step the kernel refuses in the child (an open-files limit over
    /// the system's ceiling, which not even root may set) fails the spawn
    /// with that step named; a program that cannot be executed fails it
    /// with the error number.
    #[test]
    fn a_refused_step_is_named_and_a_missing_program_is_an_error() {
        let mut limits = pinned();
        if let Some(p) = limits.process.as_mut() {
            p.rlimits.open_files = 1 << 40;
        }
        let e = refusal(spawn(&launch(limits)).expect_err("the child refuses"));
        assert_eq!(e.code(), Code::SandboxLimitUnavailable);
        assert!(
            e.message()
                .contains("set the open_files limit to 1099511627776"),
            "{}",
            e.message()
        );
        let mut l = launch(pinned());
        l.program = "/nonexistent/agent-task-test-program".into();
        match spawn(&l) {
            Err(SpawnError::Start(e)) => assert_eq!(e.raw_os_error(), Some(libc::ENOENT)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_launch_is_refused_before_the_clone_when_it_cannot_be_applied() {
        let mut l = launch(pinned());
        l.program = "sh".into();
        let code = |l: &Launch| spawn(l).map(|_| ()).map_err(refusal).map_err(|e| e.code());
        assert_eq!(code(&l), Err(Code::SandboxLimitUnavailable), "relative");
        let mut limits = pinned();
        limits.run_as_uid = Some(0);
        assert_eq!(
            code(&launch(limits)),
            Err(Code::SandboxLimitUnavailable),
            "uid 0"
        );
        let mut limits = pinned();
        limits.process = None;
        assert_eq!(
            code(&launch(limits)),
            Err(Code::SandboxLimitUnavailable),
            "no attributes"
        );
    }
}
