//! Sandbox runtimes for command collectors: `bwrap`, `unshare` and `oci`.
//!
//! A runtime has an observed identity — its program's path, SHA-256 and
//! version, the fixed arguments it is run with and the isolation facts they
//! give — and a digest over those, which a collector profile pins. There is
//! no fallback: a runtime that is missing, or whose identity no longer
//! matches the pin, refuses to run (`runtime_unavailable`,
//! `runtime_identity_mismatch`).
//!
//! | runtime | network | snapshot | pid namespace | /tmp | user |
//! |---|---|---|---|---|---|
//! | `bwrap` | none (own netns) | read-only bind | yes | private sized tmpfs | uid 65534 in a user namespace, no capabilities, no nested user namespaces; a dedicated host uid when the collector is root |
//! | `oci` | none (`--network none`) | read-only volume | yes | private tmpfs | 65534, no capabilities |
//!
//! `unshare` (network namespace only, the host file system shared and
//! writable) let candidate code read the collector's key and write into
//! the data directory; it is refused (`runtime_not_isolating`) at probe,
//! profile install and collect, and kept only so that old profiles decode.
//!
//! A `bwrap` run goes through [`super::sandbox`] (the collector's own
//! binary, re-executed), which applies the pinned [`SandboxLimits`] that
//! bubblewrap cannot: every rlimit, the nice value, scheduling policy, I/O
//! priority, CPU affinity, umask, signal mask and dispositions, and, when
//! the collector is root, a dedicated unprivileged uid. The limits and
//! attributes are part of the runtime identity.
//!
//! The `oci` runtime runs one digest-pinned image (`NAME@sha256:<64 hex>`)
//! that must already be in the engine's local store: it is never pulled
//! (`--pull=never`). Its identity adds the image as the engine resolved it
//! (reference, image id, manifest digest), so the identity digest a profile
//! pins covers the image too. Scratch (`/scratch`, HOME) and `/tmp` are
//! tmpfs mounts private to the container; the container is named per run
//! and its removal is confirmed after the run (`cleanup_confirmed`).
//!
//! Every run has a wall-clock limit and a per-stream output cap; both stop
//! the whole process tree. Outputs are hashed in full (up to the cap) and a
//! bounded tail is kept.

use crate::clock::{Clock, rfc3339_millis};
use crate::error::{Code, Error, Result};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Domain string of the runtime identity digest.
pub const IDENTITY_DOMAIN: &str = "agent-task/runtime-identity/v1";

/// The runtimes a collector profile can pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuntimeKind {
    /// bubblewrap: read-only snapshot, no network, pid namespace, private /tmp.
    Bwrap,
    /// `unshare --net --pid`: network cut only; the file system is shared.
    /// Refused everywhere (`runtime_not_isolating`); decodes for old profiles.
    Unshare,
    /// podman or docker with `--network none` and a read-only snapshot volume.
    Oci,
}

impl RuntimeKind {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            RuntimeKind::Bwrap => "bwrap",
            RuntimeKind::Unshare => "unshare",
            RuntimeKind::Oci => "oci",
        }
    }
}

/// What the runtime's fixed arguments guarantee.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IsolationFacts {
    /// `none`: the command has its own network namespace with no route out.
    pub network: String,
    /// `read_only` (the snapshot cannot be written) or `shared_writable`.
    pub snapshot: String,
    /// Whether the command runs in its own pid namespace.
    pub pid_namespace: bool,
    /// Whether /tmp is private to the run.
    pub private_tmp: bool,
    /// `unprivileged` (uid 65534, no capabilities) or `invoking_user`.
    pub user: String,
}

/// The observed identity of a runtime on this host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimeIdentity {
    /// Which runtime.
    pub runtime: RuntimeKind,
    /// Absolute path of the program that is executed.
    pub program: String,
    /// SHA-256 of the program's bytes.
    pub program_sha256: Sha256Hex,
    /// The program's own version line (for OCI: client and server versions).
    pub version: String,
    /// The fixed arguments (mount plan and namespace flags) every run uses.
    pub pinned_args: Vec<String>,
    /// What those arguments guarantee.
    pub isolation: IsolationFacts,
    /// For `bwrap`: the limits every run is held to (left out otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<SandboxLimits>,
    /// For `oci` only: the pinned image as the engine resolved it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<OciImage>,
    /// `domain_digest(IDENTITY_DOMAIN, JSON of the fields above in this order)`
    /// (`limits` and `image` are left out of that JSON when absent).
    pub digest: Sha256Hex,
}

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

fn limit_error(msg: impl Into<String>) -> Error {
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
fn nice_allowed(nice: i32, allowed: u64) -> bool {
    u64::try_from(20 - i64::from(nice)).is_ok_and(|n| n <= allowed)
}

/// This process's effective capabilities (none when they cannot be read).
fn effective_capabilities() -> rustix::thread::CapabilitySet {
    rustix::thread::capabilities(None)
        .map(|c| c.effective)
        .unwrap_or(rustix::thread::CapabilitySet::empty())
}

/// This process's scheduling policy, reset-on-fork flag included.
fn current_scheduler() -> libc::c_int {
    #[allow(unsafe_code)]
    // SAFETY: sched_getscheduler(2) on the calling process reads no memory
    // of ours; it returns the policy or -1.
    unsafe {
        libc::sched_getscheduler(0)
    }
}

/// A digest-pinned OCI image, as present in the engine's local store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciImage {
    /// The reference the profile pins: `NAME@sha256:<64 hex>`.
    pub reference: String,
    /// The engine's image id (`sha256:<64 hex>`, the digest of the image config).
    pub id: String,
    /// The manifest digest of the reference (`sha256:<64 hex>`), found among
    /// the image's own digests.
    pub digest: String,
}

#[derive(Serialize)]
struct IdentityCore<'a> {
    runtime: RuntimeKind,
    program: &'a str,
    program_sha256: &'a Sha256Hex,
    version: &'a str,
    pinned_args: &'a [String],
    isolation: &'a IsolationFacts,
    #[serde(skip_serializing_if = "Option::is_none")]
    limits: Option<&'a SandboxLimits>,
    #[serde(skip_serializing_if = "Option::is_none")]
    image: Option<&'a OciImage>,
}

fn identity(
    runtime: RuntimeKind,
    program: PathBuf,
    version: String,
    pinned_args: Vec<String>,
    isolation: IsolationFacts,
    limits: Option<SandboxLimits>,
    image: Option<OciImage>,
) -> Result<RuntimeIdentity> {
    let bytes = std::fs::read(&program).map_err(|e| Error::io("read", &program, e))?;
    let program_sha256 = Sha256Hex::digest(&bytes);
    let program = program.display().to_string();
    let core = IdentityCore {
        runtime,
        program: &program,
        program_sha256: &program_sha256,
        version: &version,
        pinned_args: &pinned_args,
        isolation: &isolation,
        limits: limits.as_ref(),
        image: image.as_ref(),
    };
    let digest = domain_digest(IDENTITY_DOMAIN, &serde_json::to_vec(&core)?);
    Ok(RuntimeIdentity {
        runtime,
        program,
        program_sha256,
        version,
        pinned_args,
        isolation,
        limits,
        image,
        digest,
    })
}

impl RuntimeIdentity {
    /// Recomputes the digest from the other fields (a pinned identity read
    /// from a file or a transfer must be self-consistent).
    pub fn computed_digest(&self) -> Result<Sha256Hex> {
        let core = IdentityCore {
            runtime: self.runtime,
            program: &self.program,
            program_sha256: &self.program_sha256,
            version: &self.version,
            pinned_args: &self.pinned_args,
            isolation: &self.isolation,
            limits: self.limits.as_ref(),
            image: self.image.as_ref(),
        };
        Ok(domain_digest(IDENTITY_DOMAIN, &serde_json::to_vec(&core)?))
    }

    /// Refuses (`runtime_not_isolating`) an identity under which candidate
    /// code could reach the collector's key or state or write outside its
    /// scratch: its facts must be no network, a read-only snapshot, a pid
    /// namespace, a private /tmp and an unprivileged user, and a `bwrap`
    /// identity must pin its limits and process attributes.
    pub fn check_isolating(&self) -> Result<()> {
        let i = &self.isolation;
        let facts = i.network == "none"
            && i.snapshot == "read_only"
            && i.pid_namespace
            && i.private_tmp
            && i.user == "unprivileged";
        let ok = match self.runtime {
            RuntimeKind::Unshare => false,
            RuntimeKind::Bwrap => {
                facts && self.limits.as_ref().is_some_and(|l| l.process.is_some())
            }
            RuntimeKind::Oci => facts,
        };
        if ok {
            Ok(())
        } else {
            Err(not_isolating(self.runtime))
        }
    }
}

/// The refusal of a runtime that does not keep candidate code in.
pub fn not_isolating(kind: RuntimeKind) -> Error {
    let why = match kind {
        RuntimeKind::Unshare => {
            "unshare cuts the network only: candidate code shares the host file system, so it \
             could read the collector's key and state and write into the data directory; use bwrap"
        }
        _ => {
            "its isolation facts do not keep candidate code away from the collector's key, state and files"
        }
    };
    Error::new(
        Code::RuntimeNotIsolating,
        format!("the {} runtime is refused: {why}", kind.as_str()),
    )
    .with("runtime", kind.as_str())
}

/// Mount and namespace plan of the bwrap runtime, with the pinned tmpfs
/// size. `{snapshot}` is replaced per run; everything else is fixed. The root, `/dev` and the snapshot are
/// read-only; the only writable places are three sized tmpfs mounts.
fn bwrap_args(limits: &SandboxLimits) -> Vec<String> {
    let size = limits.tmpfs_bytes.to_string();
    let mut v: Vec<&str> = vec![
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        "65534",
        "--gid",
        "65534",
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--ro-bind",
        "/usr",
        "/usr",
        "--symlink",
        "usr/bin",
        "/bin",
        "--symlink",
        "usr/lib",
        "/lib",
        "--symlink",
        "usr/lib64",
        "/lib64",
        "--symlink",
        "usr/sbin",
        "/sbin",
        "--ro-bind-try",
        "/etc/passwd",
        "/etc/passwd",
        "--ro-bind-try",
        "/etc/group",
        "/etc/group",
        "--ro-bind-try",
        "/etc/ld.so.cache",
        "/etc/ld.so.cache",
        "--ro-bind-try",
        "/etc/alternatives",
        "/etc/alternatives",
        "--ro-bind-try",
        "/etc/hosts",
        "/etc/hosts",
        "--proc",
        "/proc",
        "--dev",
        "/dev",
    ];
    for dir in ["/dev/shm", "/tmp", "/scratch"] {
        v.extend(["--size", size.as_str(), "--tmpfs", dir]);
    }
    v.extend([
        "--ro-bind",
        "{snapshot}",
        "/work",
        "--remount-ro",
        "/dev",
        "--remount-ro",
        "/",
        "--chdir",
        "/work",
        "--clearenv",
    ]);
    v.into_iter().map(str::to_owned).collect()
}

/// Run plan of the `oci` runtime under podman. `/tmp` and `/scratch` are
/// tmpfs mounts owned by the container user (`U`), so a rootful engine
/// never needs a host directory writable by uid 65534.
const PODMAN_ARGS: &[&str] = &[
    "run",
    "--rm",
    "--pull=never",
    "--network",
    "none",
    "--read-only",
    "--user",
    "65534:65534",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--tmpfs",
    "/tmp:rw,nosuid,nodev,U",
    "--tmpfs",
    "/scratch:rw,nosuid,nodev,exec,U",
    "--volume",
    "{snapshot}:/work:ro",
    "--workdir",
    "/work",
];

/// Run plan of the `oci` runtime under docker (same guarantees; docker's
/// tmpfs takes a mode instead of podman's `U`).
const DOCKER_ARGS: &[&str] = &[
    "run",
    "--rm",
    "--pull=never",
    "--network",
    "none",
    "--read-only",
    "--user",
    "65534:65534",
    "--cap-drop",
    "ALL",
    "--security-opt",
    "no-new-privileges",
    "--tmpfs",
    "/tmp:rw,nosuid,nodev,mode=1777",
    "--tmpfs",
    "/scratch:rw,nosuid,nodev,exec,mode=1777",
    "--volume",
    "{snapshot}:/work:ro",
    "--workdir",
    "/work",
];

/// Environment variables that tell an OCI client where its engine and
/// configuration are; nothing else from the collector's environment
/// reaches the engine (and none of it reaches the container).
const ENGINE_ENV: &[&str] = &[
    "PATH",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "CONTAINER_HOST",
    "CONTAINERS_CONF",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "XDG_RUNTIME_DIR",
];

/// Longest OCI image reference accepted.
pub const MAX_OCI_REFERENCE: usize = 512;

/// Checks that `r` is a digest-pinned image reference
/// `NAME[:TAG]@sha256:<64 lowercase hex>` and returns the digest part
/// (`sha256:<hex>`). A tag alone, another algorithm, or anything that could
/// be read as an option is refused with `oci_image_reference_invalid`.
pub fn parse_oci_reference(r: &str) -> Result<&str> {
    let bad = |why: &str| {
        Error::new(
            Code::OciImageReferenceInvalid,
            format!("OCI image reference {r:?}: {why}; pin it as NAME@sha256:<64 hex>"),
        )
    };
    if r.len() > MAX_OCI_REFERENCE {
        return Err(bad("too long"));
    }
    let Some((name, digest)) = r.rsplit_once('@') else {
        return Err(bad("not pinned by digest (a tag alone can move)"));
    };
    let hex = digest
        .strip_prefix("sha256:")
        .ok_or_else(|| bad("the digest is not sha256"))?;
    if hex.len() != 64 || !hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return Err(bad("the digest is not 64 lowercase hex digits"));
    }
    let first_ok = name
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    let chars_ok = name.bytes().all(|b| {
        b.is_ascii_lowercase()
            || b.is_ascii_uppercase()
            || b.is_ascii_digit()
            || matches!(b, b'.' | b'_' | b'-' | b'/' | b':')
    });
    if !first_ok || !chars_ok {
        return Err(bad(
            "the name is empty or has characters outside [A-Za-z0-9._/:-]",
        ));
    }
    Ok(digest)
}

/// Which OCI client a program is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Engine {
    Podman,
    Docker,
}

fn engine_of(program: &str) -> Engine {
    let name = Path::new(program)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    if name.starts_with("podman") {
        Engine::Podman
    } else {
        Engine::Docker
    }
}

/// A command for the OCI client with a scrubbed environment.
fn engine_command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear();
    for k in ENGINE_ENV {
        if let Some(v) = crate::env::var_os(k) {
            cmd.env(k, v);
        }
    }
    cmd.stdin(Stdio::null());
    cmd
}

/// Runs the OCI client to completion; `Err(stderr)` when it fails.
fn engine_output(program: &Path, args: &[&str]) -> std::result::Result<String, String> {
    let out = engine_command(program)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", program.display()))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
    } else {
        let err: String = String::from_utf8_lossy(&out.stderr)
            .trim()
            .chars()
            .take(400)
            .collect();
        Err(format!("{} {}: {err}", program.display(), args.join(" ")))
    }
}

/// The engine's version line: proves the engine (not just the client)
/// answers, and names the OCI runtime underneath for podman.
fn engine_version(program: &Path) -> Result<String> {
    let kind = RuntimeKind::Oci;
    let line = |s: String| -> String {
        s.lines()
            .next()
            .unwrap_or_default()
            .chars()
            .take(120)
            .collect()
    };
    let v = match engine_of(&program.display().to_string()) {
        Engine::Podman => {
            let client =
                engine_output(program, &["--version"]).map_err(|e| unavailable(kind, e))?;
            let rt = engine_output(
                program,
                &[
                    "info",
                    "--format",
                    "{{.Host.OCIRuntime.Name}} {{.Host.OCIRuntime.Version}}",
                ],
            )
            .map_err(|e| unavailable(kind, e))?;
            format!("{}; {}", line(client), line(rt))
        }
        Engine::Docker => line(
            engine_output(
                program,
                &[
                    "version",
                    "--format",
                    "{{.Client.Version}}/{{.Server.Version}}",
                ],
            )
            .map_err(|e| unavailable(kind, e))?,
        ),
    };
    Ok(v)
}

fn sha256_id(s: &str) -> Option<String> {
    let hex = s.strip_prefix("sha256:").unwrap_or(s);
    (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| format!("sha256:{hex}"))
}

/// Resolves the pinned reference in the engine's local store (never
/// pulling) and checks that the image really carries the pinned digest.
fn inspect_image(program: &Path, reference: &str) -> Result<OciImage> {
    let digest = parse_oci_reference(reference)?;
    let absent = |why: String| {
        Error::new(
            Code::OciImageUnavailable,
            format!("the pinned image {reference} is not in the engine's local store (it is never pulled): {why}"),
        )
        .with("image", reference)
    };
    let out = engine_output(
        program,
        &[
            "image",
            "inspect",
            "--format",
            "{{.Id}} {{json .RepoDigests}}",
            "--",
            reference,
        ],
    )
    .map_err(absent)?;
    let (id, digests) = out
        .split_once(' ')
        .ok_or_else(|| absent(format!("unexpected inspect output {out:?}")))?;
    let id = sha256_id(id).ok_or_else(|| absent(format!("unexpected image id {id:?}")))?;
    let digests: Vec<String> = serde_json::from_str::<Option<Vec<String>>>(digests)
        .map_err(|e| absent(format!("unexpected repo digests: {e}")))?
        .unwrap_or_default();
    if !digests
        .iter()
        .any(|d| d.rsplit_once('@').is_some_and(|(_, h)| h == digest))
    {
        return Err(absent(format!(
            "the local image {id} does not carry the pinned digest {digest}"
        )));
    }
    Ok(OciImage {
        reference: reference.to_owned(),
        id,
        digest: digest.to_owned(),
    })
}

/// Whether the named container no longer exists (`Err` when the engine
/// cannot tell).
fn container_gone(program: &Path, name: &str) -> std::result::Result<bool, String> {
    match engine_output(
        program,
        &["container", "inspect", "--format", "{{.Id}}", "--", name],
    ) {
        Ok(_) => Ok(false),
        Err(e) if e.to_ascii_lowercase().contains("no such") => Ok(true),
        Err(e) => Err(e),
    }
}

/// Confirms the run's container is gone, force-removing it first when the
/// client was stopped (timeout, output cap) before `--rm` could act.
fn remove_container(program: &Path, name: &str) -> bool {
    match container_gone(program, name) {
        Ok(true) => true,
        Ok(false) | Err(_) => {
            let _ = engine_output(program, &["rm", "--force", "--", name]);
            container_gone(program, name).unwrap_or(false)
        }
    }
}

/// uid 65534 must read the snapshot through the bind mount: its directories
/// become 0755 (its files already are 0644/0755). The snapshot's parent
/// stays owner-private, so nobody outside the container can reach it.
fn open_snapshot_for_container(snapshot: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mut dirs = vec![snapshot.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let meta = std::fs::symlink_metadata(&d).map_err(|e| Error::io("stat", &d, e))?;
        if !meta.is_dir() {
            continue;
        }
        std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o755))
            .map_err(|e| Error::io("chmod", &d, e))?;
        for e in std::fs::read_dir(&d).map_err(|e| Error::io("read", &d, e))? {
            let e = e.map_err(|x| Error::io("read", &d, x))?;
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.push(e.path());
            }
        }
    }
    Ok(())
}

fn find_program(name: &str) -> Option<PathBuf> {
    let path = crate::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .and_then(|p| p.canonicalize().ok())
}

fn unavailable(kind: RuntimeKind, why: impl Into<String>) -> Error {
    Error::new(
        Code::RuntimeUnavailable,
        format!("runtime {} cannot run here: {}", kind.as_str(), why.into()),
    )
    .with("runtime", kind.as_str())
}

fn version_of(kind: RuntimeKind, program: &Path, args: &[&str]) -> Result<String> {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| unavailable(kind, format!("{}: {e}", program.display())))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(unavailable(
            kind,
            format!(
                "{} {} failed: {}",
                program.display(),
                args.join(" "),
                err.trim()
            ),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .trim()
        .chars()
        .take(200)
        .collect())
}

fn is_root() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    unsafe {
        libc::geteuid() == 0
    }
}

/// Checks that an image is named exactly when the runtime is `oci`.
pub fn check_image_flag(kind: RuntimeKind, oci_image: Option<&str>) -> Result<()> {
    match (kind, oci_image) {
        (RuntimeKind::Oci, Some(r)) => parse_oci_reference(r).map(|_| ()),
        (RuntimeKind::Oci, None) => Err(Error::new(
            Code::InvalidInput,
            "the oci runtime needs a pinned image: --oci-image NAME@sha256:<64 hex>",
        )),
        (_, Some(_)) => Err(Error::new(
            Code::InvalidInput,
            format!(
                "--oci-image applies to the oci runtime only, not {}",
                kind.as_str()
            ),
        )),
        (_, None) => Ok(()),
    }
}

/// What a probe or a run needs besides the runtime kind: for `oci` the
/// digest-pinned image, for `bwrap` the pinned limits and the launcher
/// (this binary, re-executed as `sandbox-exec`).
#[derive(Debug, Clone, Copy)]
pub struct Plan<'a> {
    /// The pinned image (`oci` only; refused for the other runtimes).
    pub oci_image: Option<&'a str>,
    /// The sandbox limits (`bwrap` only).
    pub limits: Option<&'a SandboxLimits>,
    /// The launcher executable: an `agent-task` binary.
    pub launcher: &'a Path,
}

/// Observes the identity of `kind` on this host, and checks that it can
/// actually isolate (a trial run through the launcher with the pinned
/// limits), so that a later run does not discover too late that it cannot.
/// For `oci`, the plan's image is required (and refused for the other
/// runtimes); the engine must answer and the image must be in its local
/// store. An image may hold no `true`, so `oci` has no trial run; its
/// first run is the collection. `unshare` is refused.
pub fn probe(kind: RuntimeKind, plan: &Plan<'_>) -> Result<RuntimeIdentity> {
    check_image_flag(kind, plan.oci_image)?;
    let id = match kind {
        RuntimeKind::Bwrap => {
            let limits = plan.limits.ok_or_else(|| {
                Error::new(
                    Code::InvalidInput,
                    "the bwrap runtime needs its sandbox limits",
                )
            })?;
            limits.check_applicable()?;
            let program =
                find_program("bwrap").ok_or_else(|| unavailable(kind, "bwrap is not installed"))?;
            let version = version_of(kind, &program, &["--version"])?;
            identity(
                kind,
                program,
                version,
                bwrap_args(limits),
                IsolationFacts {
                    network: "none".into(),
                    snapshot: "read_only".into(),
                    pid_namespace: true,
                    private_tmp: true,
                    user: "unprivileged".into(),
                },
                Some(limits.clone()),
                None,
            )?
        }
        RuntimeKind::Unshare => return Err(not_isolating(kind)),
        RuntimeKind::Oci => {
            let reference = plan
                .oci_image
                .ok_or_else(|| Error::internal("checked above"))?;
            let program = find_program("podman")
                .or_else(|| find_program("docker"))
                .ok_or_else(|| unavailable(kind, "neither podman nor docker is installed"))?;
            // The engine (not just the client) must answer.
            let version = engine_version(&program)?;
            let image = inspect_image(&program, reference)?;
            let args = match engine_of(&program.display().to_string()) {
                Engine::Podman => PODMAN_ARGS,
                Engine::Docker => DOCKER_ARGS,
            };
            identity(
                kind,
                program,
                version,
                args.iter().map(|s| s.to_string()).collect(),
                IsolationFacts {
                    network: "none".into(),
                    snapshot: "read_only".into(),
                    pid_namespace: true,
                    private_tmp: true,
                    user: "unprivileged".into(),
                },
                None,
                Some(image),
            )?
        }
    };
    id.check_isolating()?;
    if kind != RuntimeKind::Oci {
        trial(&id, plan)?;
    }
    Ok(id)
}

/// Where a snapshot is materialised for one run. Dropping it (or
/// [`SnapshotDir::remove`]) removes the snapshot and its run directory.
pub struct SnapshotDir {
    run_dir: Option<PathBuf>,
    path: PathBuf,
    removed: bool,
}

impl SnapshotDir {
    /// The snapshot directory (it exists, empty, owner-private).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes it (and its run directory).
    pub fn remove(mut self) -> bool {
        self.removed = true;
        self.remove_now()
    }

    fn remove_now(&self) -> bool {
        let gone = remove_tree(&self.path);
        match &self.run_dir {
            Some(d) => remove_tree(d) && gone,
            None => gone,
        }
    }
}

impl Drop for SnapshotDir {
    fn drop(&mut self) {
        if !self.removed {
            self.remove_now();
        }
    }
}

/// Prefix of a run directory in the system temp directory.
const RUN_DIR_PREFIX: &str = "agent-task-run-";

/// The run directory in the system temp directory of the snapshot that
/// `private` names (a dedicated sandbox uid's run).
fn run_dir_of(private: &Path) -> Option<PathBuf> {
    let name = private.file_name()?.to_str()?;
    Some(std::env::temp_dir().join(format!("{RUN_DIR_PREFIX}{name}")))
}

/// Removes what a killed run left of the snapshot `private` would name:
/// `private` itself, or its run directory in the system temp directory
/// when that is a directory of ours (never a link, never another user's).
/// Only the holder of the execution's lock calls it.
pub fn remove_leftover(private: &Path) {
    use std::os::unix::fs::MetadataExt;
    if std::fs::symlink_metadata(private).is_ok_and(|m| m.is_dir()) {
        remove_tree(private);
    }
    if let Some(d) = run_dir_of(private)
        && std::fs::symlink_metadata(&d)
            .is_ok_and(|m| m.is_dir() && m.uid() == rustix::process::geteuid().as_raw())
    {
        remove_tree(&d);
    }
}

/// Makes a tree writable by its owner again and removes it.
pub fn remove_tree(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let mut dirs = vec![p.to_path_buf()];
    let mut i = 0;
    while i < dirs.len() {
        let d = dirs[i].clone();
        if std::fs::symlink_metadata(&d).is_ok_and(|m| m.is_dir()) {
            let _ = std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700));
            if let Ok(rd) = std::fs::read_dir(&d) {
                for e in rd.flatten() {
                    if e.file_type().is_ok_and(|t| t.is_dir()) {
                        dirs.push(e.path());
                    }
                }
            }
        }
        i += 1;
    }
    match std::fs::remove_dir_all(p) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

/// A fresh directory for a run's snapshot, created exclusively: an
/// existing directory is never removed and reused (it may be another
/// run's bind source); one in the way refuses the run. Without a
/// dedicated sandbox uid it is `private` itself (inside the collector
/// directory, in a parent the caller checked), made 0700 with `mkdir`.
/// Under a dedicated uid (a root collector) bubblewrap runs as that uid
/// and must reach the snapshot by path, which the owner-private collector
/// directory forbids: the snapshot then goes into a run directory made
/// with `mkdir` in the system temp directory (whose ancestors must be
/// trusted: root's or ours, not replaceable by others), traverse-only
/// (0711), named after `private`'s last component (one digest over the
/// execution and a random run id, so unguessable), the snapshot itself
/// under another random name.
pub fn snapshot_dir(limits: Option<&SandboxLimits>, private: &Path) -> Result<SnapshotDir> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let Some(run_dir) = limits
        .and_then(|l| l.run_as_uid)
        .and_then(|_| run_dir_of(private))
    else {
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(private)
            .map_err(|e| Error::io("create the snapshot directory", private, e))?;
        let made = SnapshotDir {
            run_dir: None,
            path: private.to_path_buf(),
            removed: false,
        };
        crate::store::private_fs::check_private(private, crate::store::private_fs::Kind::Dir)?;
        return Ok(made);
    };
    crate::store::private_fs::check_trusted_ancestors(&run_dir)?;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&run_dir)
        .map_err(|e| Error::io("create a run directory", &run_dir, e))?;
    let path = run_dir.join(crate::wire::random_id("s")?.replace(['_', '-'], ""));
    let made = SnapshotDir {
        run_dir: Some(run_dir.clone()),
        path: path.clone(),
        removed: false,
    };
    let md = std::fs::symlink_metadata(&run_dir).map_err(|e| Error::io("stat", &run_dir, e))?;
    if !md.is_dir() || md.uid() != rustix::process::geteuid().as_raw() {
        return Err(Error::internal("the run directory just made is not ours"));
    }
    std::fs::set_permissions(&run_dir, std::fs::Permissions::from_mode(0o711))
        .map_err(|e| Error::io("chmod", &run_dir, e))?;
    crate::store::private_fs::ensure_private_dir(&path)?;
    Ok(made)
}

fn trial(id: &RuntimeIdentity, plan: &Plan<'_>) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let private =
        tempfile::tempdir().map_err(|e| Error::new(Code::Io, format!("temp dir: {e}")))?;
    let dir = snapshot_dir(
        id.limits.as_ref(),
        &private.path().join(crate::wire::random_id("trial")?),
    )?;
    let snap = dir.path().to_path_buf();
    // A dedicated uid must be able to enter it.
    std::fs::set_permissions(&snap, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| Error::io("chmod", &snap, e))?;
    let spec = RunSpec {
        snapshot: &snap,
        argv: &["true".to_string()],
        env: &[],
        timeout: Duration::from_secs(20),
        max_output_bytes: 4096,
        tail_bytes: 512,
        oci_image: None,
        launcher: plan.launcher,
    };
    let out = run(id, &spec, &crate::clock::SystemClock);
    dir.remove();
    let out = out?;
    if out.exit_code != Some(0) {
        // The launcher reports a limit it cannot apply as a typed error.
        let code = if out.stderr.tail.contains("\"sandbox_limit_unavailable\"") {
            Code::SandboxLimitUnavailable
        } else {
            Code::RuntimeUnavailable
        };
        return Err(Error::new(
            code,
            format!(
                "runtime {} cannot run here: a trial run of `true` failed (exit {:?}): {}",
                id.runtime.as_str(),
                out.exit_code,
                out.stderr.tail
            ),
        )
        .with("runtime", id.runtime.as_str()));
    }
    Ok(())
}

/// One run: where, what, and its bounds.
#[derive(Debug)]
pub struct RunSpec<'a> {
    /// The materialised snapshot (read-only inside bwrap and OCI; its
    /// directories must be enterable by the sandbox's uid).
    pub snapshot: &'a Path,
    /// The command (argv[0] is looked up on the sandbox's PATH).
    pub argv: &'a [String],
    /// Extra environment (the sandbox starts from an empty environment).
    pub env: &'a [(String, String)],
    /// Wall-clock limit; the whole process tree is killed after it.
    pub timeout: Duration,
    /// Cap on each of stdout and stderr; exceeding it kills the run.
    pub max_output_bytes: u64,
    /// How many trailing bytes of each stream to keep.
    pub tail_bytes: usize,
    /// The pinned image, for `oci` only.
    pub oci_image: Option<&'a str>,
    /// The launcher (`bwrap` runs): an `agent-task` binary.
    pub launcher: &'a Path,
}

/// Digest, size and bounded tail of one output stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StreamSummary {
    /// Bytes read (at most the cap + one read buffer).
    pub bytes: u64,
    /// SHA-256 of the bytes read.
    pub sha256: Sha256Hex,
    /// The last `tail_bytes` bytes, as UTF-8 with replacement characters.
    pub tail: String,
    /// Whether the stream hit the output cap.
    pub capped: bool,
}

/// What happened in one run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunOutcome {
    /// Exit code, when the command exited.
    pub exit_code: Option<i32>,
    /// Signal, when it was killed by one.
    pub signal: Option<i32>,
    /// Whether the wall-clock limit stopped it.
    pub timed_out: bool,
    /// Whether an output cap stopped it.
    pub output_capped: bool,
    /// When it started (RFC 3339 UTC, ms).
    pub started_at: String,
    /// Wall time in milliseconds.
    pub duration_ms: u64,
    /// Standard output.
    pub stdout: StreamSummary,
    /// Standard error.
    pub stderr: StreamSummary,
    /// No process of the run is left and (for `oci`) the container no
    /// longer exists (scratch is a tmpfs that goes with the sandbox).
    pub cleanup_confirmed: bool,
}

fn substitute(args: &[String], snapshot: &Path) -> Vec<String> {
    let s = snapshot.display().to_string();
    args.iter().map(|a| a.replace("{snapshot}", &s)).collect()
}

const SANDBOX_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The exact client arguments of one `oci` run: the pinned plan, the
/// per-run container name and environment, then the image and the recipe.
fn oci_argv(id: &RuntimeIdentity, spec: &RunSpec<'_>, name: &str) -> Result<Vec<String>> {
    let image = spec
        .oci_image
        .ok_or_else(|| Error::new(Code::InvalidInput, "the oci runtime needs a pinned image"))?;
    if id.image.as_ref().map(|i| i.reference.as_str()) != Some(image) {
        return Err(Error::new(
            Code::InvalidInput,
            "the run's image is not the one the runtime identity resolved",
        ));
    }
    let snap = spec.snapshot.display().to_string();
    if snap.contains([':', ',']) || !spec.snapshot.is_absolute() {
        return Err(Error::new(
            Code::InvalidInput,
            "the snapshot path must be absolute and free of ':' and ','",
        ));
    }
    let mut argv = substitute(&id.pinned_args, spec.snapshot);
    argv.extend(["--name".to_owned(), name.to_owned()]);
    if engine_of(&id.program) == Engine::Podman {
        // Should the collector itself die, conmon still stops the container.
        let secs = spec.timeout.as_secs().saturating_add(5).to_string();
        argv.extend(["--timeout".to_owned(), secs]);
    }
    for (k, v) in [
        ("PATH", SANDBOX_PATH),
        ("HOME", "/scratch"),
        ("TMPDIR", "/tmp"),
    ] {
        argv.extend(["--env".to_owned(), format!("{k}={v}")]);
    }
    for (k, v) in spec.env {
        argv.extend(["--env".to_owned(), format!("{k}={v}")]);
    }
    argv.push("--".to_owned());
    argv.push(image.to_owned());
    argv.extend(spec.argv.iter().cloned());
    Ok(argv)
}

fn build_command(
    id: &RuntimeIdentity,
    spec: &RunSpec<'_>,
    container: Option<&str>,
) -> Result<Command> {
    if spec.argv.is_empty() {
        return Err(Error::new(
            Code::InvalidInput,
            "the command recipe has an empty argv",
        ));
    }
    let mut cmd = match id.runtime {
        RuntimeKind::Bwrap => {
            // The launcher applies the limits, then executes bwrap with the
            // pinned plan and the recipe. It sets its own parent-death
            // signal after any uid change (a uid change clears it).
            let limits = id
                .limits
                .as_ref()
                .ok_or_else(|| not_isolating(id.runtime))?;
            let mut args = substitute(&id.pinned_args, spec.snapshot);
            args.extend(
                [
                    "--setenv",
                    "PATH",
                    SANDBOX_PATH,
                    "--setenv",
                    "HOME",
                    "/scratch",
                    "--setenv",
                    "TMPDIR",
                    "/tmp",
                ]
                .map(str::to_owned),
            );
            for (k, v) in spec.env {
                args.extend(["--setenv".to_owned(), k.clone(), v.clone()]);
            }
            args.push("--".to_owned());
            args.extend(spec.argv.iter().cloned());
            if limits.process.is_none() {
                return Err(not_isolating(id.runtime));
            }
            let launch = super::sandbox::Launch {
                limits: limits.clone(),
                program: PathBuf::from(&id.program),
                args,
            };
            let mut cmd = Command::new(spec.launcher);
            cmd.env_clear().args(super::sandbox::argv(&launch)?);
            cmd.stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped());
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            return Ok(cmd);
        }
        RuntimeKind::Unshare => return Err(not_isolating(id.runtime)),
        RuntimeKind::Oci => {
            let name = container.ok_or_else(|| Error::internal("an oci run needs a name"))?;
            let argv = oci_argv(id, spec, name)?;
            let mut cmd = engine_command(Path::new(&id.program));
            cmd.args(argv);
            cmd
        }
    };
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // If the collector itself dies (SIGKILL), the OCI client dies too. An
    // OCI container is not the client's child: podman's --timeout bounds it
    // (docker has no such flag), and the rerun records `interrupted`
    // without running anything. (A bwrap run's launcher sets the same
    // signal itself; bwrap --die-with-parent takes the command with it.)
    #[allow(unsafe_code)]
    // SAFETY: the closure runs in the forked child before exec and only
    // calls prctl(2), which is async-signal-safe; no memory is shared.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(&mut cmd, || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(cmd)
}

struct Drain {
    hasher: Sha256,
    bytes: u64,
    tail: Vec<u8>,
    capped: bool,
}

fn drain(mut r: impl Read, cap: u64, tail_bytes: usize, stop: Arc<AtomicBool>) -> Drain {
    let mut d = Drain {
        hasher: Sha256::new(),
        bytes: 0,
        tail: Vec::new(),
        capped: false,
    };
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        if d.capped {
            continue; // keep draining so the child is never blocked on a full pipe
        }
        let take = (cap - d.bytes).min(n as u64) as usize;
        d.hasher.update(&buf[..take]);
        d.bytes += take as u64;
        d.tail.extend_from_slice(&buf[..take]);
        if d.tail.len() > tail_bytes {
            let cut = d.tail.len() - tail_bytes;
            d.tail.drain(..cut);
        }
        if take < n {
            d.capped = true;
            stop.store(true, Ordering::SeqCst);
        }
    }
    d
}

impl Drain {
    fn summary(self) -> StreamSummary {
        StreamSummary {
            bytes: self.bytes,
            sha256: Sha256Hex::from_bytes(self.hasher.finalize().into()),
            tail: String::from_utf8_lossy(&self.tail).into_owned(),
            capped: self.capped,
        }
    }
}

fn kill_group(pgid: u32, signal: i32) -> bool {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return false;
    };
    #[allow(unsafe_code)]
    // SAFETY: kill(2) on a negative pid signals a process group; no memory is touched.
    let rc = unsafe { libc::kill(-pgid, signal) };
    rc == 0
}

/// Runs `spec` under the runtime `id`. Returns the outcome whatever the
/// command did; errors only when the runtime itself could not be started.
pub fn run(id: &RuntimeIdentity, spec: &RunSpec<'_>, clock: &dyn Clock) -> Result<RunOutcome> {
    let container = match id.runtime {
        RuntimeKind::Oci => {
            open_snapshot_for_container(spec.snapshot)?;
            Some(crate::wire::random_id("agent-task")?)
        }
        _ => None,
    };
    let mut cmd = build_command(id, spec, container.as_deref())?;
    let started_at = rfc3339_millis(clock.now());
    let start = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| unavailable(id.runtime, format!("cannot start {}: {e}", id.program)))?;
    let pgid = child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let (out, err) = match (child.stdout.take(), child.stderr.take()) {
        (Some(o), Some(e)) => (o, e),
        _ => return Err(Error::internal("child pipes missing")),
    };
    let (cap, tail) = (spec.max_output_bytes, spec.tail_bytes);
    let (s1, s2) = (stop.clone(), stop.clone());
    let t_out = std::thread::spawn(move || drain(out, cap, tail, s1));
    let t_err = std::thread::spawn(move || drain(err, cap, tail, s2));
    let mut timed_out = false;
    let status = loop {
        if let Some(st) = child
            .try_wait()
            .map_err(|e| Error::new(Code::Io, format!("wait: {e}")))?
        {
            break st;
        }
        if start.elapsed() >= spec.timeout {
            timed_out = true;
            kill_group(pgid, libc::SIGKILL);
        } else if stop.load(Ordering::SeqCst) {
            kill_group(pgid, libc::SIGKILL);
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let duration_ms = start.elapsed().as_millis() as u64;
    // Anything the command left behind in its group goes too.
    kill_group(pgid, libc::SIGKILL);
    let stdout = t_out
        .join()
        .map_err(|_| Error::internal("stdout reader panicked"))?
        .summary();
    let stderr = t_err
        .join()
        .map_err(|_| Error::internal("stderr reader panicked"))?
        .summary();
    let group_gone = !kill_group(pgid, 0);
    // The container outlives a killed client: remove it and confirm.
    let container_removed = match &container {
        Some(name) => remove_container(Path::new(&id.program), name),
        None => true,
    };
    use std::os::unix::process::ExitStatusExt;
    Ok(RunOutcome {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        output_capped: stdout.capped || stderr.capped,
        started_at,
        duration_ms,
        stdout,
        stderr,
        cleanup_confirmed: group_gone && container_removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_directory_is_created_exclusively_and_never_reused() {
        let t = tempfile::tempdir().expect("tmp");
        let p = t.path().join("s");
        let first = snapshot_dir(None, &p).expect("fresh");
        std::fs::write(p.join("test.sh"), b"exit 0\n").expect("write");
        // Another run naming the same directory is refused; the first
        // run's files stay.
        assert!(snapshot_dir(None, &p).is_err());
        assert_eq!(std::fs::read(p.join("test.sh")).expect("kept"), b"exit 0\n");
        assert!(first.remove());
        assert!(!p.exists());
    }

    #[test]
    fn drain_caps_hashes_and_keeps_tail() {
        let data = b"0123456789".repeat(10);
        let d = drain(&data[..], 25, 4, Arc::new(AtomicBool::new(false)));
        let s = d.summary();
        assert_eq!(s.bytes, 25);
        assert!(s.capped);
        assert_eq!(s.tail, "1234");
        assert_eq!(s.sha256, Sha256Hex::digest(&data[..25]));
        let s = drain(&b"abc"[..], 25, 4, Arc::new(AtomicBool::new(false))).summary();
        assert!(!s.capped);
        assert_eq!(s.tail, "abc");
    }

    #[test]
    fn identity_digest_binds_every_field() {
        let iso = IsolationFacts {
            network: "none".into(),
            snapshot: "read_only".into(),
            pid_namespace: true,
            private_tmp: true,
            user: "unprivileged".into(),
        };
        let exe = std::env::current_exe().expect("exe");
        let a = identity(
            RuntimeKind::Bwrap,
            exe.clone(),
            "v1".into(),
            vec!["--x".into()],
            iso.clone(),
            None,
            None,
        )
        .expect("id");
        let b = identity(
            RuntimeKind::Bwrap,
            exe.clone(),
            "v2".into(),
            vec!["--x".into()],
            iso.clone(),
            None,
            None,
        )
        .expect("id");
        let c = identity(
            RuntimeKind::Bwrap,
            exe.clone(),
            "v1".into(),
            vec!["--y".into()],
            iso.clone(),
            None,
            None,
        )
        .expect("id");
        let d = identity(
            RuntimeKind::Unshare,
            exe,
            "v1".into(),
            vec!["--x".into()],
            iso,
            None,
            None,
        )
        .expect("id");
        assert_ne!(a.digest, b.digest);
        assert_ne!(a.digest, c.digest);
        assert_ne!(a.digest, d.digest);
    }

    #[test]
    fn unshare_and_unpinned_bwrap_identities_are_refused() {
        let facts = IsolationFacts {
            network: "none".into(),
            snapshot: "read_only".into(),
            pid_namespace: true,
            private_tmp: true,
            user: "unprivileged".into(),
        };
        let exe = std::env::current_exe().expect("exe");
        let limits = SandboxLimits {
            tmpfs_bytes: 1 << 20,
            address_space_bytes: 1 << 30,
            processes: 64,
            file_size_bytes: 1 << 20,
            cpu_seconds: 60,
            run_as_uid: None,
            process: Some(ProcessAttributes::pinned(1 << 30)),
        };
        let mk = |kind, iso: IsolationFacts, l: Option<SandboxLimits>| {
            identity(kind, exe.clone(), "v".into(), vec![], iso, l, None).expect("id")
        };
        assert!(
            mk(RuntimeKind::Bwrap, facts.clone(), Some(limits.clone()))
                .check_isolating()
                .is_ok()
        );
        let refused = |id: RuntimeIdentity| {
            assert_eq!(
                id.check_isolating().expect_err("refused").code(),
                Code::RuntimeNotIsolating
            )
        };
        refused(mk(RuntimeKind::Bwrap, facts.clone(), None));
        // An identity pinned before the process attributes existed.
        let old = SandboxLimits {
            process: None,
            ..limits.clone()
        };
        refused(mk(RuntimeKind::Bwrap, facts.clone(), Some(old.clone())));
        assert_eq!(
            old.check_applicable().expect_err("old").code(),
            Code::SandboxLimitUnavailable
        );
        refused(mk(
            RuntimeKind::Unshare,
            facts.clone(),
            Some(limits.clone()),
        ));
        let shared = IsolationFacts {
            snapshot: "shared_writable".into(),
            private_tmp: false,
            user: "invoking_user".into(),
            ..facts.clone()
        };
        refused(mk(RuntimeKind::Oci, shared, None));
        let plan = Plan {
            oci_image: None,
            limits: None,
            launcher: Path::new("/nonexistent"),
        };
        assert_eq!(
            probe(RuntimeKind::Unshare, &plan)
                .expect_err("refused")
                .code(),
            Code::RuntimeNotIsolating
        );
        // The limits are part of the identity digest.
        let a = mk(RuntimeKind::Bwrap, facts.clone(), Some(limits.clone()));
        let b = mk(
            RuntimeKind::Bwrap,
            facts.clone(),
            Some(SandboxLimits {
                processes: 65,
                ..limits.clone()
            }),
        );
        assert_ne!(a.digest, b.digest);
        // So are the process attributes, every one of them.
        let base = ProcessAttributes::pinned(1 << 30);
        let mut variants = vec![];
        for f in 0..8 {
            let mut p = base.clone();
            match f {
                0 => p.rlimits.open_files += 1,
                1 => p.rlimits.stack_bytes += 1,
                2 => p.nice = 1,
                3 => p.io_priority.level = 7,
                4 => p.umask = 0o077,
                5 => p.timer_slack_ns = 1,
                6 => p.personality = 0x0040000,
                _ => p.rlimits.realtime_timeout_us = 1,
            }
            variants.push(p);
        }
        for p in variants {
            let c = mk(
                RuntimeKind::Bwrap,
                facts.clone(),
                Some(SandboxLimits {
                    process: Some(p),
                    ..limits.clone()
                }),
            );
            assert_ne!(a.digest, c.digest);
        }
        // An old identity (no `process`) keeps the digest it was pinned
        // with: the member is left out, not written as null.
        let json = serde_json::to_value(&old).expect("json");
        assert!(json.get("process").is_none(), "{json}");
    }

    #[test]
    fn the_pinned_attributes_cover_every_rlimit_once() {
        let l = LimitRequest::default().resolve().expect("defaults apply");
        let r = l.rlimits().expect("pinned");
        assert_eq!(r.len(), 16, "every Linux rlimit");
        let mut names: Vec<_> = r.iter().map(|(res, _, _)| format!("{res:?}")).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 16);
        let p = l.process.clone().expect("pinned");
        assert_eq!(p.nice, 0);
        assert_eq!(p.umask, 0o022);
        assert_eq!(p.rlimits.data_bytes, l.address_space_bytes);
        // Out-of-range values are refused before any run.
        for bad in [
            ProcessAttributes {
                nice: 20,
                ..p.clone()
            },
            ProcessAttributes {
                umask: 0o1000,
                ..p.clone()
            },
            ProcessAttributes {
                io_priority: IoPriority {
                    class: IoClass::BestEffort,
                    level: 8,
                },
                ..p.clone()
            },
        ] {
            let l = SandboxLimits {
                process: Some(bad),
                ..l.clone()
            };
            assert_eq!(
                l.check_applicable().expect_err("bad").code(),
                Code::SandboxLimitUnavailable
            );
        }
    }

    #[test]
    fn the_bwrap_plan_caps_every_writable_mount_and_nested_namespaces() {
        let l = SandboxLimits {
            tmpfs_bytes: 12345,
            address_space_bytes: 1,
            processes: 1,
            file_size_bytes: 1,
            cpu_seconds: 1,
            run_as_uid: None,
            process: None,
        };
        let args = bwrap_args(&l);
        let s = args.join(" ");
        for want in [
            "--unshare-all --unshare-user --disable-userns",
            "--size 12345 --tmpfs /dev/shm",
            "--size 12345 --tmpfs /tmp",
            "--size 12345 --tmpfs /scratch",
            "--ro-bind {snapshot} /work",
            "--remount-ro /dev --remount-ro /",
            "--cap-drop ALL",
        ] {
            assert!(s.contains(want), "{want} in {s}");
        }
        assert!(
            !s.contains("--bind "),
            "nothing of the host is writable: {s}"
        );
    }

    #[test]
    fn limits_resolve_to_a_dedicated_uid_exactly_as_root() {
        let r = LimitRequest::default().resolve().expect("defaults apply");
        assert_eq!(r.run_as_uid.is_some(), is_root());
        if is_root() {
            assert_eq!(r.run_as_uid, Some(DEFAULT_SANDBOX_UID));
            let e = LimitRequest {
                sandbox_uid: Some(0),
                ..LimitRequest::default()
            }
            .resolve()
            .expect_err("uid 0");
            assert_eq!(e.code(), Code::SandboxLimitUnavailable);
            let pinned_none = SandboxLimits {
                run_as_uid: None,
                ..r
            };
            assert_eq!(
                pinned_none
                    .check_applicable()
                    .expect_err("root without a uid")
                    .code(),
                Code::SandboxLimitUnavailable
            );
        } else {
            let e = LimitRequest {
                sandbox_uid: Some(4242),
                ..LimitRequest::default()
            }
            .resolve()
            .expect_err("only root switches uid");
            assert_eq!(e.code(), Code::SandboxLimitUnavailable);
        }
        let zero = LimitRequest {
            processes: 0,
            ..LimitRequest::default()
        };
        assert_eq!(
            zero.resolve().expect_err("zero").code(),
            Code::SandboxLimitUnavailable
        );
    }

    const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

    fn oci_identity(program: &str, args: &[&str], reference: &str) -> RuntimeIdentity {
        RuntimeIdentity {
            runtime: RuntimeKind::Oci,
            program: program.into(),
            program_sha256: Sha256Hex::digest(b"engine"),
            version: "test".into(),
            pinned_args: args.iter().map(|s| s.to_string()).collect(),
            isolation: IsolationFacts {
                network: "none".into(),
                snapshot: "read_only".into(),
                pid_namespace: true,
                private_tmp: true,
                user: "unprivileged".into(),
            },
            limits: None,
            image: Some(OciImage {
                reference: reference.into(),
                id: format!("sha256:{HEX}"),
                digest: format!("sha256:{HEX}"),
            }),
            digest: Sha256Hex::digest(b"x"),
        }
    }

    #[test]
    fn oci_references_must_be_pinned_by_digest() {
        let good = format!("localhost/agent-task-test@sha256:{HEX}");
        assert_eq!(
            parse_oci_reference(&good).expect("pinned"),
            format!("sha256:{HEX}")
        );
        let tagged = format!("registry.example:5000/team/img:1.2@sha256:{HEX}");
        assert!(parse_oci_reference(&tagged).is_ok());
        let upper = format!("img@sha256:{}", HEX.to_uppercase());
        let long = format!("{}@sha256:{HEX}", "a".repeat(MAX_OCI_REFERENCE));
        let refused = [
            "busybox".to_string(),
            "busybox:latest".to_string(),
            "docker.io/library/busybox:1.36".to_string(),
            format!("img@sha512:{HEX}"),
            format!("img@sha256:{}", &HEX[..63]),
            format!("img@sha256:{HEX}0"),
            upper,
            format!("@sha256:{HEX}"),
            format!("--privileged@sha256:{HEX}"),
            format!("img name@sha256:{HEX}"),
            format!("img\n@sha256:{HEX}"),
            long,
        ];
        for r in refused {
            let e = parse_oci_reference(&r).expect_err(&r);
            assert_eq!(e.code(), Code::OciImageReferenceInvalid, "{r}");
        }
    }

    #[test]
    fn the_image_flag_goes_with_oci_only() {
        let good = format!("img@sha256:{HEX}");
        assert!(check_image_flag(RuntimeKind::Oci, Some(&good)).is_ok());
        assert!(check_image_flag(RuntimeKind::Bwrap, None).is_ok());
        for (kind, image, code) in [
            (RuntimeKind::Oci, None, Code::InvalidInput),
            (
                RuntimeKind::Oci,
                Some("busybox:latest"),
                Code::OciImageReferenceInvalid,
            ),
            (RuntimeKind::Bwrap, Some(good.as_str()), Code::InvalidInput),
            (
                RuntimeKind::Unshare,
                Some(good.as_str()),
                Code::InvalidInput,
            ),
        ] {
            assert_eq!(
                check_image_flag(kind, image).expect_err("refused").code(),
                code
            );
            // probe refuses before looking at the host.
            let plan = Plan {
                oci_image: image,
                limits: None,
                launcher: Path::new("/nonexistent"),
            };
            assert_eq!(probe(kind, &plan).expect_err("refused").code(), code);
        }
    }

    #[test]
    fn oci_argv_is_the_pinned_plan_then_name_env_image_and_recipe() {
        let reference = format!("localhost/img@sha256:{HEX}");
        let argv = vec!["sh".to_string(), "test.sh".to_string()];
        let env = [("GREETING".to_string(), "hi".to_string())];
        let spec = RunSpec {
            snapshot: Path::new("/c/snapshots/s1"),
            argv: &argv,
            env: &env,
            timeout: Duration::from_millis(600_000),
            max_output_bytes: 1024,
            tail_bytes: 16,
            oci_image: Some(&reference),
            launcher: Path::new("/nonexistent"),
        };
        let podman = oci_identity("/usr/bin/podman", PODMAN_ARGS, &reference);
        let got = oci_argv(&podman, &spec, "agent-task_1").expect("argv");
        let want: Vec<String> = [
            "run",
            "--rm",
            "--pull=never",
            "--network",
            "none",
            "--read-only",
            "--user",
            "65534:65534",
            "--cap-drop",
            "ALL",
            "--security-opt",
            "no-new-privileges",
            "--tmpfs",
            "/tmp:rw,nosuid,nodev,U",
            "--tmpfs",
            "/scratch:rw,nosuid,nodev,exec,U",
            "--volume",
            "/c/snapshots/s1:/work:ro",
            "--workdir",
            "/work",
            "--name",
            "agent-task_1",
            "--timeout",
            "605",
            "--env",
            "PATH=/usr/local/bin:/usr/bin:/bin",
            "--env",
            "HOME=/scratch",
            "--env",
            "TMPDIR=/tmp",
            "--env",
            "GREETING=hi",
            "--",
            &reference,
            "sh",
            "test.sh",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(got, want);
        let docker = oci_identity("/usr/bin/docker", DOCKER_ARGS, &reference);
        let got = oci_argv(&docker, &spec, "agent-task_1").expect("argv");
        assert!(!got.contains(&"--timeout".to_string()), "{got:?}");
        assert!(got.contains(&"/tmp:rw,nosuid,nodev,mode=1777".to_string()));
        assert!(got.contains(&"/c/snapshots/s1:/work:ro".to_string()));
        assert_eq!(
            &got[got.len() - 3..],
            &[reference.clone(), "sh".into(), "test.sh".into()]
        );

        // The run's image must be the one the identity resolved; a snapshot
        // path that would change the volume syntax is refused.
        let other = format!("localhost/other@sha256:{HEX}");
        let e = oci_argv(
            &podman,
            &RunSpec {
                oci_image: Some(&other),
                ..spec_clone(&spec)
            },
            "n",
        )
        .expect_err("other image");
        assert_eq!(e.code(), Code::InvalidInput);
        let e = oci_argv(
            &podman,
            &RunSpec {
                oci_image: None,
                ..spec_clone(&spec)
            },
            "n",
        )
        .expect_err("no image");
        assert_eq!(e.code(), Code::InvalidInput);
        let e = oci_argv(
            &podman,
            &RunSpec {
                snapshot: Path::new("/c/a:b"),
                ..spec_clone(&spec)
            },
            "n",
        )
        .expect_err("colon");
        assert_eq!(e.code(), Code::InvalidInput);
    }

    fn spec_clone<'a>(s: &RunSpec<'a>) -> RunSpec<'a> {
        RunSpec {
            snapshot: s.snapshot,
            argv: s.argv,
            env: s.env,
            timeout: s.timeout,
            max_output_bytes: s.max_output_bytes,
            tail_bytes: s.tail_bytes,
            oci_image: s.oci_image,
            launcher: s.launcher,
        }
    }

    #[test]
    fn identity_digest_covers_the_image_and_omits_it_when_absent() {
        let iso = IsolationFacts {
            network: "none".into(),
            snapshot: "read_only".into(),
            pid_namespace: true,
            private_tmp: true,
            user: "unprivileged".into(),
        };
        let exe = std::env::current_exe().expect("exe");
        let image = |id: &str| OciImage {
            reference: format!("img@sha256:{HEX}"),
            id: format!("sha256:{id}"),
            digest: format!("sha256:{HEX}"),
        };
        let mk = |img: Option<OciImage>| {
            identity(
                RuntimeKind::Oci,
                exe.clone(),
                "v".into(),
                vec![],
                iso.clone(),
                None,
                img,
            )
            .expect("id")
        };
        let none = mk(None);
        let a = mk(Some(image(HEX)));
        let b = mk(Some(image(&HEX.replace('0', "1"))));
        assert_ne!(none.digest, a.digest);
        assert_ne!(a.digest, b.digest);
        assert_eq!(a.computed_digest().expect("digest"), a.digest);
        // Without an image the JSON (and so every bwrap/unshare digest) is unchanged.
        let v = serde_json::to_value(&none).expect("json");
        assert!(v.get("image").is_none(), "{v}");
        let back: RuntimeIdentity = serde_json::from_value(v).expect("decode");
        assert_eq!(back.computed_digest().expect("digest"), none.digest);
    }
}
