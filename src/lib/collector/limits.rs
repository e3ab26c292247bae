//! The limits and process attributes a sandboxed run is held to: shared
//! by the runtimes (which pin them in the identity) and the sandbox
//! launcher (which applies them), below both.

use crate::error::{Code, Error, Result};
use serde::{Deserialize, Serialize};

/// The limits a `bwrap` run is held to: pinned in the runtime identity
/// (so in the profile's identity digest) and applied to every run; one
/// that cannot be applied refuses the run (`sandbox_limit_unavailable`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SandboxLimits {
    /// Size of each writable tmpfs (`/tmp`, `/scratch`, `/dev/shm`): bwrap `--size`.
    pub tmpfs_bytes: u64,
    /// `RLIMIT_AS` per process.
    pub address_space_bytes: u64,
    /// `RLIMIT_NPROC`: processes and threads of the sandbox's uid.
    pub processes: u64,
    /// `RLIMIT_FSIZE`: largest file a process may write.
    pub file_size_bytes: u64,
    /// `RLIMIT_CPU` per process, in seconds.
    pub cpu_seconds: u64,
    /// The dedicated host uid (and gid) candidate code runs as when the
    /// collector runs as root; `null` when it does not (the sandbox then
    /// maps the collector's own uid to 65534).
    pub run_as_uid: Option<u32>,
    /// Every other process attribute the sandbox starts with, whatever the
    /// collector inherited from whoever started it (the agent, through
    /// sudo). Absent in identities pinned before it existed: such a
    /// profile is refused (`profile_invalid` at `collect`,
    /// `runtime_not_isolating` at `profile install`), never run with
    /// inherited attributes. Left out of the JSON when absent, so an old
    /// identity's digest is unchanged and still verifies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process: Option<ProcessAttributes>,
}

/// The process attributes every `bwrap` run starts with, pinned in the
/// runtime identity (`limits.process`) and applied by the launcher before
/// `bwrap` (`src/lib/collector/sandbox.rs`). Without them an agent's
/// `ulimit`, `nice`, `chrt`, `ionice`, `taskset`, `umask` or ignored
/// signals, set before it starts the collector, would reach candidate code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProcessAttributes {
    /// The rlimits [`SandboxLimits`]' own fields do not cover, each set
    /// soft = hard.
    pub rlimits: PinnedRlimits,
    /// The nice value (`setpriority`).
    pub nice: i32,
    /// The scheduling policy (`sched_setscheduler`, static priority 0,
    /// reset-on-fork off).
    pub scheduler: SchedulerPolicy,
    /// The I/O priority (`ioprio_set`).
    pub io_priority: IoPriority,
    /// Which CPUs the sandbox may run on (`sched_setaffinity`).
    pub cpus: CpuPolicy,
    /// The file mode creation mask (18 is octal 022).
    pub umask: u32,
    /// The blocked-signal mask.
    pub signal_mask: SignalMaskPolicy,
    /// The disposition of every signal (ignored ones survive `exec`).
    pub signal_dispositions: DispositionPolicy,
    /// The timer slack in nanoseconds (`PR_SET_TIMERSLACK`): how late the
    /// kernel may wake a sleeping or polling process. It survives `fork`,
    /// `exec` and sudo, so an inherited 10 s slack would stretch every
    /// sleep and timeout of a test.
    pub timer_slack_ns: u64,
    /// Whether transparent huge pages are disabled (`PR_SET_THP_DISABLE`,
    /// inherited the same way): pinned off.
    pub thp_disabled: bool,
    /// The execution domain (`personality(2)`): 0 is `PER_LINUX` with no
    /// flags, so `setarch -R` (address-space randomisation off) and its
    /// like do not reach the sandbox.
    pub personality: u32,
}

/// Rlimits pinned soft = hard, besides address space, processes, file size
/// and CPU time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedRlimits {
    /// `RLIMIT_NOFILE`.
    pub open_files: u64,
    /// `RLIMIT_STACK`, bytes.
    pub stack_bytes: u64,
    /// `RLIMIT_CORE`, bytes (0: no core dumps).
    pub core_bytes: u64,
    /// `RLIMIT_MEMLOCK`, bytes.
    pub locked_memory_bytes: u64,
    /// `RLIMIT_MSGQUEUE`, bytes.
    pub message_queue_bytes: u64,
    /// `RLIMIT_NICE` (0: the nice value can never be lowered below 20 - 0).
    pub nice_ceiling: u64,
    /// `RLIMIT_RTPRIO` (0: no realtime scheduling).
    pub realtime_priority: u64,
    /// `RLIMIT_RTTIME`, microseconds (no realtime task can exist).
    pub realtime_timeout_us: u64,
    /// `RLIMIT_SIGPENDING`.
    pub pending_signals: u64,
    /// `RLIMIT_LOCKS`.
    pub file_locks: u64,
    /// `RLIMIT_DATA`, bytes.
    pub data_bytes: u64,
    /// `RLIMIT_RSS`, bytes.
    pub resident_bytes: u64,
}

/// The scheduling policy of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerPolicy {
    /// `SCHED_OTHER` with static priority 0 and reset-on-fork off.
    Other,
}

/// The I/O priority of a run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IoPriority {
    /// The class.
    pub class: IoClass,
    /// The level within the class, 0 (highest) to 7.
    pub level: u8,
}

/// An I/O scheduling class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IoClass {
    /// `IOPRIO_CLASS_BE`.
    BestEffort,
}

/// The CPU affinity of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CpuPolicy {
    /// Every CPU: the affinity mask is set to all CPUs, which the kernel
    /// narrows to the CPUs of the collector's cpuset (set by whoever
    /// controls its cgroup, not by `sched_setaffinity`).
    AllInCpuset,
}

/// The signal mask of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SignalMaskPolicy {
    /// No signal blocked.
    Empty,
}

/// The signal dispositions of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DispositionPolicy {
    /// Every signal at its default action (none ignored).
    Default,
}

/// Open files per process: the long-standing default soft limit.
pub const PINNED_OPEN_FILES: u64 = 1024;
/// Stack: the usual 8 MiB.
pub const PINNED_STACK_BYTES: u64 = 8 << 20;
/// Locked memory: 64 KiB, the smallest default hard limit in use.
pub const PINNED_LOCKED_MEMORY_BYTES: u64 = 64 << 10;
/// POSIX message queues: the kernel's default.
pub const PINNED_MESSAGE_QUEUE_BYTES: u64 = 819_200;
/// Queued signals of the sandbox's uid.
pub const PINNED_PENDING_SIGNALS: u64 = 1024;
/// File locks (the kernel no longer enforces it; pinned so it is known).
pub const PINNED_FILE_LOCKS: u64 = 1024;
/// The umask: 022.
pub const PINNED_UMASK: u32 = 0o022;
/// Timer slack: the kernel's default, 50 µs.
pub const PINNED_TIMER_SLACK_NS: u64 = 50_000;

impl ProcessAttributes {
    /// The attributes this version pins, for a run whose address space is
    /// `address_space_bytes` (the data and resident-set limits are that
    /// too, so they never bind first).
    pub fn pinned(address_space_bytes: u64) -> ProcessAttributes {
        ProcessAttributes {
            rlimits: PinnedRlimits {
                open_files: PINNED_OPEN_FILES,
                stack_bytes: PINNED_STACK_BYTES,
                core_bytes: 0,
                locked_memory_bytes: PINNED_LOCKED_MEMORY_BYTES,
                message_queue_bytes: PINNED_MESSAGE_QUEUE_BYTES,
                nice_ceiling: 0,
                realtime_priority: 0,
                realtime_timeout_us: 0,
                pending_signals: PINNED_PENDING_SIGNALS,
                file_locks: PINNED_FILE_LOCKS,
                data_bytes: address_space_bytes,
                resident_bytes: address_space_bytes,
            },
            nice: 0,
            scheduler: SchedulerPolicy::Other,
            io_priority: IoPriority {
                class: IoClass::BestEffort,
                level: 4,
            },
            cpus: CpuPolicy::AllInCpuset,
            umask: PINNED_UMASK,
            signal_mask: SignalMaskPolicy::Empty,
            signal_dispositions: DispositionPolicy::Default,
            timer_slack_ns: PINNED_TIMER_SLACK_NS,
            thp_disabled: false,
            personality: 0,
        }
    }
}

/// Default tmpfs size: 1 GiB each.
pub const DEFAULT_TMPFS_BYTES: u64 = 1 << 30;
/// Default address space per process: 8 GiB.
pub const DEFAULT_ADDRESS_SPACE_BYTES: u64 = 8 << 30;
/// Default process (and thread) count of the sandbox uid.
pub const DEFAULT_PROCESSES: u64 = 1024;
/// Default largest written file: 2 GiB.
pub const DEFAULT_FILE_SIZE_BYTES: u64 = 2 << 30;
/// Default CPU time per process: one hour.
pub const DEFAULT_CPU_SECONDS: u64 = 3600;
/// Default dedicated uid and gid when the collector runs as root: outside
/// the ranges distributions allocate (system and login users, systemd
/// dynamic users, `nobody`, the usual subordinate-id blocks).
pub const DEFAULT_SANDBOX_UID: u32 = 2_000_000_000;

/// What an operator asks for (`profile install` / `runtime probe` flags);
/// [`LimitRequest::resolve`] turns it into the pinned [`SandboxLimits`]
/// for this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitRequest {
    /// See [`SandboxLimits::tmpfs_bytes`].
    pub tmpfs_bytes: u64,
    /// See [`SandboxLimits::address_space_bytes`].
    pub address_space_bytes: u64,
    /// See [`SandboxLimits::processes`].
    pub processes: u64,
    /// See [`SandboxLimits::file_size_bytes`].
    pub file_size_bytes: u64,
    /// See [`SandboxLimits::cpu_seconds`].
    pub cpu_seconds: u64,
    /// The dedicated uid (root only; default [`DEFAULT_SANDBOX_UID`]).
    pub sandbox_uid: Option<u32>,
}

impl Default for LimitRequest {
    fn default() -> Self {
        LimitRequest {
            tmpfs_bytes: DEFAULT_TMPFS_BYTES,
            address_space_bytes: DEFAULT_ADDRESS_SPACE_BYTES,
            processes: DEFAULT_PROCESSES,
            file_size_bytes: DEFAULT_FILE_SIZE_BYTES,
            cpu_seconds: DEFAULT_CPU_SECONDS,
            sandbox_uid: None,
        }
    }
}

pub(super) fn limit_error(msg: impl Into<String>) -> Error {
    Error::new(Code::SandboxLimitUnavailable, msg)
}

impl LimitRequest {
    /// The limits for a collector running as this process's user: a
    /// dedicated uid exactly when it is root.
    pub fn resolve(&self) -> Result<SandboxLimits> {
        let run_as_uid = match (is_root(), self.sandbox_uid) {
            (true, u) => Some(u.unwrap_or(DEFAULT_SANDBOX_UID)),
            (false, None) => None,
            (false, Some(_)) => {
                return Err(limit_error(
                    "--sandbox-uid needs a collector running as root (only root can switch to it)",
                ));
            }
        };
        let l = SandboxLimits {
            tmpfs_bytes: self.tmpfs_bytes,
            address_space_bytes: self.address_space_bytes,
            processes: self.processes,
            file_size_bytes: self.file_size_bytes,
            cpu_seconds: self.cpu_seconds,
            run_as_uid,
            process: Some(ProcessAttributes::pinned(self.address_space_bytes)),
        };
        l.check_applicable()?;
        Ok(l)
    }
}

impl SandboxLimits {
    /// Whether this process can apply every limit and attribute: values in
    /// range, a dedicated uid exactly when running as root (never 0),
    /// rlimits within hard limits it cannot raise, and a nice value and
    /// scheduling policy it can return to the pinned ones. A profile
    /// pinned before the process attributes existed is refused.
    pub fn check_applicable(&self) -> Result<()> {
        use rustix::process::{Resource, getrlimit};
        for (v, name) in [
            (self.tmpfs_bytes, "tmpfs size"),
            (self.address_space_bytes, "address space"),
            (self.processes, "process count"),
            (self.file_size_bytes, "file size"),
            (self.cpu_seconds, "CPU time"),
        ] {
            if v == 0 {
                return Err(limit_error(format!("the {name} limit must be positive")));
            }
        }
        match (is_root(), self.run_as_uid) {
            (_, Some(0)) | (_, Some(u32::MAX)) => {
                return Err(limit_error("the sandbox uid must be an unprivileged uid"));
            }
            (true, None) => {
                return Err(limit_error(
                    "the collector runs as root but the profile pins no dedicated sandbox uid; \
                     install the profile as the collector's user",
                ));
            }
            (false, Some(u)) => {
                return Err(limit_error(format!(
                    "the profile pins sandbox uid {u}, which only a root collector can switch to"
                )));
            }
            _ => {}
        }
        let Some(p) = &self.process else {
            return Err(limit_error(
                "the profile pins no process attributes (it predates them): install a new bwrap profile",
            ));
        };
        if p.rlimits.open_files == 0 || p.rlimits.stack_bytes == 0 || p.timer_slack_ns == 0 {
            return Err(limit_error(
                "the open-file and stack limits and the timer slack must be positive",
            ));
        }
        if !(-20..=19).contains(&p.nice) || p.io_priority.level > 7 || p.umask > 0o777 {
            return Err(limit_error(
                "the nice value must be -20 to 19, the I/O level 0 to 7 and the umask at most 0777",
            ));
        }
        // Raising a hard limit takes CAP_SYS_RESOURCE, which root may
        // lack too (a container's bounding set); lowering the nice value or
        // leaving SCHED_IDLE takes CAP_SYS_NICE or an RLIMIT_NICE allowing
        // it (20 - nice).
        let caps = effective_capabilities();
        if !caps.contains(rustix::thread::CapabilitySet::SYS_RESOURCE) {
            for (res, v, name) in self.rlimits()? {
                if let Some(hard) = getrlimit(res).maximum
                    && v > hard
                {
                    return Err(limit_error(format!(
                        "the {name} limit {v} is over this process's hard limit {hard}, which \
                         it cannot raise (CAP_SYS_RESOURCE)"
                    ))
                    .with("limit", name));
                }
            }
        }
        if !caps.contains(rustix::thread::CapabilitySet::SYS_NICE) {
            let now = rustix::process::getpriority_process(None)
                .map_err(|e| limit_error(format!("cannot read the nice value: {e}")))?;
            let allowed = getrlimit(Resource::Nice).current.unwrap_or(u64::MAX);
            if p.nice < now && !nice_allowed(p.nice, allowed) {
                return Err(limit_error(format!(
                    "this process runs at nice {now} and the profile pins {}, which it cannot \
                     lower to (CAP_SYS_NICE)",
                    p.nice
                ))
                .with("limit", "nice"));
            }
            let policy = current_scheduler();
            if policy & libc::SCHED_RESET_ON_FORK != 0 {
                return Err(limit_error(
                    "this process has the scheduler's reset-on-fork flag, which it cannot clear \
                     (CAP_SYS_NICE)",
                )
                .with("limit", "scheduler"));
            }
            if policy == libc::SCHED_IDLE && !nice_allowed(now, allowed) {
                return Err(limit_error(
                    "this process runs under SCHED_IDLE, which it cannot leave (CAP_SYS_NICE)",
                )
                .with("limit", "scheduler"));
            }
        }
        Ok(())
    }

    /// Every rlimit the launcher sets, soft = hard, with its name: the four
    /// of the limits themselves and the pinned process attributes' others.
    pub fn rlimits(&self) -> Result<Vec<(rustix::process::Resource, u64, &'static str)>> {
        use rustix::process::Resource as R;
        let p = self
            .process
            .as_ref()
            .ok_or_else(|| limit_error("the profile pins no process attributes"))?;
        let r = &p.rlimits;
        Ok(vec![
            (R::As, self.address_space_bytes, "address_space"),
            (R::Nproc, self.processes, "processes"),
            (R::Fsize, self.file_size_bytes, "file_size"),
            (R::Cpu, self.cpu_seconds, "cpu_time"),
            (R::Nofile, r.open_files, "open_files"),
            (R::Stack, r.stack_bytes, "stack"),
            (R::Core, r.core_bytes, "core"),
            (R::Memlock, r.locked_memory_bytes, "locked_memory"),
            (R::Msgqueue, r.message_queue_bytes, "message_queue"),
            (R::Nice, r.nice_ceiling, "nice_ceiling"),
            (R::Rtprio, r.realtime_priority, "realtime_priority"),
            (R::Rttime, r.realtime_timeout_us, "realtime_timeout"),
            (R::Sigpending, r.pending_signals, "pending_signals"),
            (R::Locks, r.file_locks, "file_locks"),
            (R::Data, r.data_bytes, "data"),
            (R::Rss, r.resident_bytes, "resident_set"),
        ])
    }
}

/// Whether RLIMIT_NICE (`allowed`) lets an unprivileged process have the
/// nice value `nice` (as a lowered nice value, or as the current one when
/// it leaves `SCHED_IDLE`): `20 - nice` must be within it.
pub(super) fn nice_allowed(nice: i32, allowed: u64) -> bool {
    u64::try_from(20 - i64::from(nice)).is_ok_and(|n| n <= allowed)
}

/// This process's effective capabilities (none when they cannot be read).
pub(super) fn effective_capabilities() -> rustix::thread::CapabilitySet {
    rustix::thread::capabilities(None)
        .map(|c| c.effective)
        .unwrap_or(rustix::thread::CapabilitySet::empty())
}

/// This process's scheduling policy, reset-on-fork flag included.
pub(super) fn current_scheduler() -> libc::c_int {
    #[allow(unsafe_code)]
    // SAFETY: sched_getscheduler(2) on the calling process reads no memory
    // of ours; it returns the policy or -1.
    unsafe {
        libc::sched_getscheduler(0)
    }
}

pub(super) fn is_root() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe {
        libc::geteuid() == 0
    }
}
