//! One run under a pinned runtime: its spec, its outcome, and the run
//! itself with its wall-clock limit and output caps.

use super::*;

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
    let launcher = build_launcher(id, spec, container.as_deref())?;
    let started_at = rfc3339_millis(clock.now());
    let start = Instant::now();
    let cannot_start =
        |e: std::io::Error| unavailable(id.runtime, format!("cannot start {}: {e}", id.program));
    let mut child = match launcher {
        // A step of the sandbox launch the child could not apply is its
        // own refusal (`sandbox_limit_unavailable`, the step named).
        Launcher::Sandbox(l) => {
            use crate::collector::sandbox::{SpawnError, spawn};
            RunChild::Sandbox(spawn(&l).map_err(|e| match e {
                SpawnError::Refused(e) => e,
                SpawnError::Start(e) => cannot_start(e),
            })?)
        }
        Launcher::Command(mut cmd) => RunChild::Engine(cmd.spawn().map_err(cannot_start)?),
    };
    let pgid = child.id();
    // Not yet waited for, so the pid cannot name another process.
    let exit_fd = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .and_then(|p| rustix::process::pidfd_open(p, rustix::process::PidfdFlags::empty()).ok());
    let stop = Arc::new(AtomicBool::new(false));
    let (out, err) = child.pipes()?;
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
        let elapsed = start.elapsed();
        if elapsed >= spec.timeout {
            timed_out = true;
            kill_group(pgid, libc::SIGKILL);
        } else if stop.load(Ordering::SeqCst) {
            kill_group(pgid, libc::SIGKILL);
        }
        // Wake when the child exits (its pidfd turns readable), at the
        // latest after a short slice, to look at the limit and the output
        // caps again. Without a pidfd (a kernel before 5.3), poll every 2 ms.
        match &exit_fd {
            Some(fd) => wait_readable(fd, spec.timeout.saturating_sub(elapsed).min(SLICE)),
            None => std::thread::sleep(Duration::from_millis(2)),
        }
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

/// The process of a run: bubblewrap's, started by the sandbox launch, or
/// the OCI engine's client.
enum RunChild {
    Sandbox(crate::collector::sandbox::Spawned),
    Engine(std::process::Child),
}

/// One end of a run's output pipe.
type Pipe = Box<dyn Read + Send>;

impl RunChild {
    fn id(&self) -> u32 {
        match self {
            RunChild::Sandbox(c) => c.id(),
            RunChild::Engine(c) => c.id(),
        }
    }

    /// Its standard output and error, taken once.
    fn pipes(&mut self) -> Result<(Pipe, Pipe)> {
        let pipes: (Option<Pipe>, Option<Pipe>) = match self {
            RunChild::Sandbox(c) => (
                c.stdout.take().map(|o| Box::new(o) as Pipe),
                c.stderr.take().map(|e| Box::new(e) as Pipe),
            ),
            RunChild::Engine(c) => (
                c.stdout.take().map(|o| Box::new(o) as Pipe),
                c.stderr.take().map(|e| Box::new(e) as Pipe),
            ),
        };
        match pipes {
            (Some(o), Some(e)) => Ok((o, e)),
            _ => Err(Error::internal("child pipes missing")),
        }
    }

    fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        match self {
            RunChild::Sandbox(c) => c.try_wait(),
            RunChild::Engine(c) => c.try_wait(),
        }
    }
}

/// Longest wait between two looks at a run's wall-clock limit and output caps.
const SLICE: Duration = Duration::from_millis(10);

/// Blocks until `fd` is readable (a pidfd: its process exited) or `max` passed.
fn wait_readable(fd: &std::os::fd::OwnedFd, max: Duration) {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let t = Timespec {
        tv_sec: 0,
        tv_nsec: i64::from(max.subsec_nanos()),
    };
    let mut fds = [PollFd::new(fd, PollFlags::IN)];
    // An interrupted or failed poll only shortens the wait: the loop looks again.
    let _ = rustix::event::poll(&mut fds, Some(&t));
}
