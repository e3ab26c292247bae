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
//! | `bwrap` | none (own netns) | read-only bind | yes | private tmpfs | uid 65534 in a user namespace, no capabilities |
//! | `unshare` | none (own netns) | shared file system, writable | yes | shared | the invoking user |
//! | `oci` | none (`--network none`) | read-only volume | yes | private tmpfs | 65534 |
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
    /// `domain_digest(IDENTITY_DOMAIN, JSON of the fields above in this order)`.
    pub digest: Sha256Hex,
}

#[derive(Serialize)]
struct IdentityCore<'a> {
    runtime: RuntimeKind,
    program: &'a str,
    program_sha256: &'a Sha256Hex,
    version: &'a str,
    pinned_args: &'a [String],
    isolation: &'a IsolationFacts,
}

fn identity(
    runtime: RuntimeKind,
    program: PathBuf,
    version: String,
    pinned_args: Vec<String>,
    isolation: IsolationFacts,
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
    };
    let digest = domain_digest(IDENTITY_DOMAIN, &serde_json::to_vec(&core)?);
    Ok(RuntimeIdentity {
        runtime,
        program,
        program_sha256,
        version,
        pinned_args,
        isolation,
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
        };
        Ok(domain_digest(IDENTITY_DOMAIN, &serde_json::to_vec(&core)?))
    }
}

/// Mount and namespace plan of the bwrap runtime. `{snapshot}` and
/// `{scratch}` are replaced per run; everything else is fixed.
const BWRAP_ARGS: &[&str] = &[
    "--unshare-all",
    "--unshare-user",
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
    "--tmpfs",
    "/tmp",
    "--ro-bind",
    "{snapshot}",
    "/work",
    "--bind",
    "{scratch}",
    "/scratch",
    "--chdir",
    "/work",
    "--clearenv",
];

const UNSHARE_ARGS: &[&str] = &["--net", "--pid", "--fork", "--kill-child", "--mount-proc"];

const OCI_ARGS: &[&str] = &[
    "run",
    "--rm",
    "--network",
    "none",
    "--read-only",
    "--user",
    "65534:65534",
    "--tmpfs",
    "/tmp",
    "--volume",
    "{snapshot}:/work:ro",
    "--volume",
    "{scratch}:/scratch",
    "--workdir",
    "/work",
];

fn find_program(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
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

/// Observes the identity of `kind` on this host, and checks that it can
/// actually isolate (a trial run), so that a later run does not discover
/// too late that it cannot.
pub fn probe(kind: RuntimeKind) -> Result<RuntimeIdentity> {
    let id = match kind {
        RuntimeKind::Bwrap => {
            let program =
                find_program("bwrap").ok_or_else(|| unavailable(kind, "bwrap is not installed"))?;
            let version = version_of(kind, &program, &["--version"])?;
            identity(
                kind,
                program,
                version,
                BWRAP_ARGS.iter().map(|s| s.to_string()).collect(),
                IsolationFacts {
                    network: "none".into(),
                    snapshot: "read_only".into(),
                    pid_namespace: true,
                    private_tmp: true,
                    user: "unprivileged".into(),
                },
            )?
        }
        RuntimeKind::Unshare => {
            let program = find_program("unshare")
                .ok_or_else(|| unavailable(kind, "unshare is not installed"))?;
            let version = version_of(kind, &program, &["--version"])?;
            let mut args: Vec<String> = UNSHARE_ARGS.iter().map(|s| s.to_string()).collect();
            if !is_root() {
                args.insert(0, "--map-root-user".into());
            }
            identity(
                kind,
                program,
                version,
                args,
                IsolationFacts {
                    network: "none".into(),
                    snapshot: "shared_writable".into(),
                    pid_namespace: true,
                    private_tmp: false,
                    user: "invoking_user".into(),
                },
            )?
        }
        RuntimeKind::Oci => {
            let program = find_program("podman")
                .or_else(|| find_program("docker"))
                .ok_or_else(|| unavailable(kind, "neither podman nor docker is installed"))?;
            // The server version proves an engine answers; the client alone is not a runtime.
            let version = version_of(
                kind,
                &program,
                &[
                    "version",
                    "--format",
                    "{{.Client.Version}}/{{.Server.Version}}",
                ],
            )?;
            identity(
                kind,
                program,
                version,
                OCI_ARGS.iter().map(|s| s.to_string()).collect(),
                IsolationFacts {
                    network: "none".into(),
                    snapshot: "read_only".into(),
                    pid_namespace: true,
                    private_tmp: true,
                    user: "unprivileged".into(),
                },
            )?
        }
    };
    if kind != RuntimeKind::Oci {
        trial(&id)?;
    }
    Ok(id)
}

/// Probes `kind` and requires its digest to equal the pinned one.
pub fn verify_pinned(kind: RuntimeKind, pinned: &Sha256Hex) -> Result<RuntimeIdentity> {
    let id = probe(kind)?;
    if id.digest != *pinned {
        return Err(Error::new(
            Code::RuntimeIdentityMismatch,
            format!(
                "the {} runtime on this host is not the one the profile pins",
                kind.as_str()
            ),
        )
        .with("pinned", pinned.to_string())
        .with("observed", id.digest.to_string()));
    }
    Ok(id)
}

fn trial(id: &RuntimeIdentity) -> Result<()> {
    let dir = tempfile::tempdir().map_err(|e| Error::new(Code::Io, format!("temp dir: {e}")))?;
    let snap = dir.path().join("s");
    let scratch = dir.path().join("t");
    for d in [&snap, &scratch] {
        std::fs::create_dir(d).map_err(|e| Error::io("create", d, e))?;
    }
    let spec = RunSpec {
        snapshot: &snap,
        scratch: &scratch,
        argv: &["true".to_string()],
        env: &[],
        timeout: Duration::from_secs(20),
        max_output_bytes: 4096,
        tail_bytes: 512,
        oci_image: None,
    };
    let out = run(id, &spec, &crate::clock::SystemClock)?;
    if out.exit_code != Some(0) {
        return Err(unavailable(
            id.runtime,
            format!(
                "a trial run of `true` failed (exit {:?}): {}",
                out.exit_code, out.stderr.tail
            ),
        ));
    }
    Ok(())
}

/// One run: where, what, and its bounds.
#[derive(Debug)]
pub struct RunSpec<'a> {
    /// The materialised snapshot (read-only inside bwrap and OCI).
    pub snapshot: &'a Path,
    /// A writable, owner-private scratch directory (HOME inside the sandbox).
    pub scratch: &'a Path,
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
    /// No process of the run is left and the scratch directory was removed.
    pub cleanup_confirmed: bool,
}

fn substitute(args: &[String], snapshot: &Path, scratch: &Path) -> Vec<String> {
    let (s, t) = (
        snapshot.display().to_string(),
        scratch.display().to_string(),
    );
    args.iter()
        .map(|a| a.replace("{snapshot}", &s).replace("{scratch}", &t))
        .collect()
}

const SANDBOX_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

fn build_command(id: &RuntimeIdentity, spec: &RunSpec<'_>) -> Result<Command> {
    if spec.argv.is_empty() {
        return Err(Error::new(
            Code::InvalidInput,
            "the command recipe has an empty argv",
        ));
    }
    let mut cmd = Command::new(&id.program);
    cmd.env_clear();
    match id.runtime {
        RuntimeKind::Bwrap => {
            cmd.args(substitute(&id.pinned_args, spec.snapshot, spec.scratch));
            cmd.args([
                "--setenv",
                "PATH",
                SANDBOX_PATH,
                "--setenv",
                "HOME",
                "/scratch",
                "--setenv",
                "TMPDIR",
                "/tmp",
            ]);
            for (k, v) in spec.env {
                cmd.args(["--setenv", k, v]);
            }
            cmd.arg("--").args(spec.argv);
        }
        RuntimeKind::Unshare => {
            cmd.args(&id.pinned_args).arg("--").args(spec.argv);
            cmd.current_dir(spec.snapshot);
            cmd.env("PATH", SANDBOX_PATH).env("HOME", spec.scratch);
            cmd.envs(spec.env.iter().map(|(k, v)| (k, v)));
        }
        RuntimeKind::Oci => {
            let image = spec.oci_image.ok_or_else(|| {
                Error::new(Code::InvalidInput, "the oci runtime needs a pinned image")
            })?;
            cmd.args(substitute(&id.pinned_args, spec.snapshot, spec.scratch));
            cmd.args([
                "--env",
                &format!("PATH={SANDBOX_PATH}"),
                "--env",
                "HOME=/scratch",
            ]);
            for (k, v) in spec.env {
                cmd.args(["--env", &format!("{k}={v}")]);
            }
            cmd.arg("--").arg(image).args(spec.argv);
            // The client needs to find its engine; nothing else is passed.
            for k in ["DOCKER_HOST", "CONTAINER_HOST", "XDG_RUNTIME_DIR"] {
                if let Some(v) = std::env::var_os(k) {
                    cmd.env(k, v);
                }
            }
        }
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    // If the collector itself dies (SIGKILL), the runtime process dies too
    // (bwrap --die-with-parent and unshare --kill-child take the command
    // with them), so a rerun never races a command left running.
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
    let mut cmd = build_command(id, spec)?;
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
    let scratch_removed = match std::fs::remove_dir_all(spec.scratch) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
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
        cleanup_confirmed: group_gone && scratch_removed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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

    fn sandbox(kind: RuntimeKind, script: &str, timeout: Duration, cap: u64) -> RunOutcome {
        let id = probe(kind).unwrap_or_else(|e| {
            panic!(
                "{} must be available (scripts/install-deps.sh installs it): {e}",
                kind.as_str()
            )
        });
        let dir = tempfile::tempdir().expect("tempdir");
        let snap = dir.path().join("snap");
        let scratch = dir.path().join("scratch");
        std::fs::create_dir(&snap).expect("snap");
        std::fs::create_dir(&scratch).expect("scratch");
        std::fs::write(snap.join("t.sh"), script).expect("script");
        let argv = ["bash".to_string(), "t.sh".to_string()];
        let spec = RunSpec {
            snapshot: &snap,
            scratch: &scratch,
            argv: &argv,
            env: &[("GREETING".into(), "hi".into())],
            timeout,
            max_output_bytes: cap,
            tail_bytes: 256,
            oci_image: None,
        };
        let out = run(&id, &spec, &crate::clock::SystemClock).expect("run");
        assert!(!scratch.exists(), "scratch must be removed");
        out
    }

    #[test]
    fn bwrap_has_no_network_and_a_read_only_snapshot() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("addr").port();
        let script = format!(
            "echo \"$GREETING from $(id -u)\"\n\
             if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo LOOPBACK_REACHED; fi\n\
             if (exec 3<>/dev/tcp/192.0.2.1/80) 2>/dev/null; then echo OUTSIDE_REACHED; fi\n\
             if touch /work/new 2>/dev/null; then echo SNAPSHOT_WRITTEN; fi\n\
             if echo x > /scratch/ok; then echo SCRATCH_OK; fi\n"
        );
        let out = sandbox(
            RuntimeKind::Bwrap,
            &script,
            Duration::from_secs(30),
            1 << 20,
        );
        assert_eq!(out.exit_code, Some(0), "{out:?}");
        assert!(out.stdout.tail.contains("hi from 65534"), "{out:?}");
        assert!(!out.stdout.tail.contains("LOOPBACK_REACHED"), "{out:?}");
        assert!(!out.stdout.tail.contains("OUTSIDE_REACHED"), "{out:?}");
        assert!(!out.stdout.tail.contains("SNAPSHOT_WRITTEN"), "{out:?}");
        assert!(out.stdout.tail.contains("SCRATCH_OK"), "{out:?}");
        assert!(out.cleanup_confirmed);
        drop(listener);
    }

    #[test]
    fn unshare_cuts_the_network() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("listen");
        let port = listener.local_addr().expect("addr").port();
        let script = format!(
            "if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo LOOPBACK_REACHED; fi\necho done\n"
        );
        let out = sandbox(
            RuntimeKind::Unshare,
            &script,
            Duration::from_secs(30),
            1 << 20,
        );
        assert_eq!(out.exit_code, Some(0), "{out:?}");
        assert_eq!(out.stdout.tail, "done\n", "{out:?}");
        assert!(out.cleanup_confirmed);
        drop(listener);
    }

    #[test]
    fn failing_command_is_an_outcome_not_an_error() {
        let out = sandbox(
            RuntimeKind::Bwrap,
            "echo oops >&2; exit 3\n",
            Duration::from_secs(30),
            1 << 20,
        );
        assert_eq!(out.exit_code, Some(3));
        assert_eq!(out.stderr.tail, "oops\n");
        assert!(!out.timed_out && !out.output_capped);
    }

    #[test]
    fn timeout_kills_the_whole_tree() {
        let out = sandbox(
            RuntimeKind::Bwrap,
            "sleep 60 & sleep 60\n",
            Duration::from_millis(300),
            1 << 20,
        );
        assert!(out.timed_out, "{out:?}");
        assert_eq!(out.exit_code, None);
        assert!(out.cleanup_confirmed, "{out:?}");
    }

    #[test]
    fn output_cap_stops_the_run() {
        let out = sandbox(
            RuntimeKind::Bwrap,
            "yes\n",
            Duration::from_secs(30),
            64 * 1024,
        );
        assert!(out.output_capped, "{out:?}");
        assert_eq!(out.stdout.bytes, 64 * 1024);
        assert!(!out.timed_out);
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
        )
        .expect("id");
        let b = identity(
            RuntimeKind::Bwrap,
            exe.clone(),
            "v2".into(),
            vec!["--x".into()],
            iso.clone(),
        )
        .expect("id");
        let c = identity(
            RuntimeKind::Bwrap,
            exe.clone(),
            "v1".into(),
            vec!["--y".into()],
            iso.clone(),
        )
        .expect("id");
        let d = identity(
            RuntimeKind::Unshare,
            exe,
            "v1".into(),
            vec!["--x".into()],
            iso,
        )
        .expect("id");
        assert_ne!(a.digest, b.digest);
        assert_ne!(a.digest, c.digest);
        assert_ne!(a.digest, d.digest);
    }
}
