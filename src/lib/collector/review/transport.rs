//! Transports: how a prepared call reaches the model.
//!
//! - [`ClaudeCodeTransport`] runs the pinned executable in Claude Code's
//!   print mode (`-p --output-format json --json-schema …`), with no tools,
//!   no settings, hooks, skills or MCP servers, a private `HOME` and
//!   `CLAUDE_CONFIG_DIR`, a private working directory outside the snapshot
//!   (the sources travel in the prompt, on stdin), only the operator's
//!   allowed variables, a timeout and an output cap. It hashes the pinned
//!   files before and after every call; a mismatch before means the call is
//!   not dispatched, after means its answer is not used.
//! - [`ReplayTransport`] feeds retained outcomes back, refusing any request
//!   that differs from the retained reservation (the authority's import
//!   check).
//! - `FixtureTransport` (test builds only) fabricates envelopes in-process
//!   for the `fixture` basis.
//!
//! [`pin_executable`] computes what a profile pins: for a script (an
//! npm-installed `claude` is `cli.js` with `#!/usr/bin/env node`) the
//! resolved script and the interpreter that runs it, each by canonical path
//! and SHA-256; for a native executable, the executable.

use super::journal::{CallOutcome, MAX_STDERR_TAIL, Observation, TraceEntry};
use super::plan::FIXED_ENV;
use super::types::{Basis, PinnedExecutable, PinnedFile, ReviewProfile};
use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::wire::digest::Sha256Hex;
use sha2::{Digest, Sha256};
use std::ffi::OsStr;
use std::io::{Read, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// One call, ready to dispatch: its durable reservation and the prompt.
#[derive(Debug, Clone)]
pub struct PreparedCall {
    /// The reservation (already durable when a transport sees it).
    pub reservation: super::journal::Reservation,
    /// The exact prompt bytes (stdin).
    pub prompt: Vec<u8>,
}

/// What a transport reports.
#[derive(Debug, Clone)]
pub enum Dispatch {
    /// The call's outcome.
    Done(Box<CallOutcome>),
    /// No outcome is known (a replayed call whose collector stopped during it).
    Unknown,
}

/// How prepared calls reach the model.
pub trait Transport {
    /// The basis this transport implements (must be the profile's).
    fn basis(&self) -> Basis;
    /// Performs one call. Errors only when the transport itself cannot
    /// proceed; everything the executable did is an outcome.
    fn call(&mut self, call: &PreparedCall) -> Result<Dispatch>;
}

fn exe_invalid(msg: impl Into<String>, path: &Path) -> Error {
    Error::new(Code::InvalidInput, msg).with("path", path.display().to_string())
}

fn current_uid() -> u32 {
    rustix::process::geteuid().as_raw()
}

fn hash_file(path: &Path) -> Option<(Sha256Hex, u64)> {
    let mut f = private_fs::open_nofollow_read(path).ok()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut n = 0u64;
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(k) => {
                h.update(&buf[..k]);
                n += k as u64;
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        }
    }
    Some((Sha256Hex::from_bytes(h.finalize().into()), n))
}

/// Pins one file: canonical path (links resolved), a regular file owned by
/// root or the caller, not writable by group or other, under directories
/// nobody else can replace; executable when `exec`.
fn pin_file(path: &Path, exec: bool) -> Result<PinnedFile> {
    let canonical = std::fs::canonicalize(path).map_err(|e| {
        Error::new(
            Code::NotFound,
            format!("cannot resolve {}: {e}", path.display()),
        )
        .with("path", path.display().to_string())
    })?;
    let md = std::fs::symlink_metadata(&canonical).map_err(|e| Error::io("stat", &canonical, e))?;
    if !md.is_file() {
        return Err(exe_invalid(
            format!("{} is not a regular file", canonical.display()),
            &canonical,
        ));
    }
    if md.uid() != 0 && md.uid() != current_uid() {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!(
                "{} is owned by uid {}: that user could change what is pinned",
                canonical.display(),
                md.uid()
            ),
        )
        .with("path", canonical.display().to_string()));
    }
    let mode = md.permissions().mode();
    if mode & 0o022 != 0 {
        return Err(Error::new(
            Code::InsecurePermissions,
            format!(
                "{} is writable by group or other (mode {:04o})",
                canonical.display(),
                mode & 0o7777
            ),
        )
        .with("path", canonical.display().to_string()));
    }
    if exec && mode & 0o111 == 0 {
        return Err(exe_invalid(
            format!("{} is not executable", canonical.display()),
            &canonical,
        ));
    }
    private_fs::check_trusted_ancestors(&canonical)?;
    let shown = canonical
        .to_str()
        .ok_or_else(|| exe_invalid("a pinned path must be UTF-8", &canonical))?
        .to_owned();
    let (sha256, size) = hash_file(&canonical)
        .ok_or_else(|| exe_invalid(format!("cannot read {}", canonical.display()), &canonical))?;
    Ok(PinnedFile {
        path: shown,
        sha256,
        size,
    })
}

fn shebang(path: &Path) -> Result<Option<Vec<String>>> {
    let mut f = private_fs::open_nofollow_read(path)?;
    let mut head = [0u8; 512];
    let mut n = 0;
    while n < head.len() {
        match f.read(&mut head[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(Error::io("read", path, e)),
        }
    }
    let head = &head[..n];
    let Some(rest) = head.strip_prefix(b"#!") else {
        return Ok(None);
    };
    let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
    let line =
        std::str::from_utf8(line).map_err(|_| exe_invalid("the #! line is not UTF-8", path))?;
    Ok(Some(line.split_whitespace().map(str::to_owned).collect()))
}

fn search(name: &str, search_path: Option<&OsStr>) -> Option<PathBuf> {
    let sp = search_path?;
    std::env::split_paths(sp)
        .filter(|d| d.is_absolute())
        .map(|d| d.join(name))
        .find(|p| {
            std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// What a profile pins for the executable at `path`. A script (`#!` line)
/// pins the resolved script and its interpreter: `#!/abs/interpreter` or
/// `#!/usr/bin/env NAME`, NAME looked up in `search_path` (the operator's
/// `PATH` at install); interpreter arguments and an interpreter that is
/// itself a script are refused. Anything else is pinned as a native
/// executable. Either way every pinned file must be a regular file owned by
/// root or the caller, not group/other-writable, under trusted directories.
pub fn pin_executable(path: &Path, search_path: Option<&OsStr>) -> Result<PinnedExecutable> {
    let first = pin_file(path, false)?;
    let Some(words) = shebang(Path::new(&first.path))? else {
        let program = pin_file(path, true)?;
        return Ok(PinnedExecutable {
            program,
            script: None,
        });
    };
    let interp = match words.as_slice() {
        [env, name] if env.ends_with("/env") && !name.starts_with('-') && !name.contains('/') => {
            search(name, search_path).ok_or_else(|| {
                exe_invalid(
                    format!("{name} (from the #! line) is not on the given PATH"),
                    path,
                )
            })?
        }
        [abs] if abs.starts_with('/') => PathBuf::from(abs),
        _ => {
            return Err(exe_invalid(
                "the #! line must be `#!/abs/interpreter` or `#!/usr/bin/env NAME` without arguments",
                path,
            ));
        }
    };
    let program = pin_file(&interp, true)?;
    if shebang(Path::new(&program.path))?.is_some() {
        return Err(exe_invalid(
            format!(
                "the interpreter {} is itself a script: pin the real interpreter",
                program.path
            ),
            Path::new(&program.path),
        ));
    }
    Ok(PinnedExecutable {
        program,
        script: Some(first),
    })
}

/// SHA-256 of each pinned file now (`None`: unreadable or a link).
pub fn observe(exe: &PinnedExecutable) -> Vec<Option<Sha256Hex>> {
    exe.files()
        .iter()
        .map(|f| hash_file(Path::new(&f.path)).map(|(d, _)| d))
        .collect()
}

/// The pinned digests, as [`observe`] reports matching files.
pub fn pinned(exe: &PinnedExecutable) -> Vec<Option<Sha256Hex>> {
    exe.files().iter().map(|f| Some(f.sha256.clone())).collect()
}

/// The result of running a process.
struct Ran {
    spawn_error: Option<String>,
    exit_code: Option<i32>,
    signal: Option<i32>,
    timed_out: bool,
    capped: bool,
    duration_ms: u64,
    stdout: Vec<u8>,
    stderr_tail: String,
}

fn kill_group(pid: u32) {
    if let Some(p) = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
    {
        let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
    }
}

/// Runs `cmd` with `input` on stdin: stdout kept up to `cap` bytes (one more
/// kills the run), a stderr tail, killed (the whole process group) at
/// `timeout`.
/// Every `secrets` value is scrubbed out of both outputs
/// ([`super::credential::redact`]) before anything else sees them.
fn run(mut cmd: Command, input: Vec<u8>, timeout: Duration, cap: u64, secrets: &[&[u8]]) -> Ran {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
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
    let start = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            return Ran {
                spawn_error: Some(super::answer::shorten(&format!(
                    "cannot start the executable: {e}"
                ))),
                exit_code: None,
                signal: None,
                timed_out: false,
                capped: false,
                duration_ms: 0,
                stdout: Vec::new(),
                stderr_tail: String::new(),
            };
        }
    };
    let pid = child.id();
    let stop = Arc::new(AtomicBool::new(false));
    let out_buf = Arc::new(Mutex::new(Vec::<u8>::new()));
    let err_buf = Arc::new(Mutex::new(Vec::<u8>::new()));
    let capped = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicBool::new(false));
    if let Some(mut stdin) = child.stdin.take() {
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    if let Some(mut out) = child.stdout.take() {
        let (buf, stop, capped, done) =
            (out_buf.clone(), stop.clone(), capped.clone(), done.clone());
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 64 * 1024];
            loop {
                match out.read(&mut chunk) {
                    Ok(0) => break,
                    Ok(n) => {
                        let Ok(mut b) = buf.lock() else { break };
                        let room = usize::try_from(cap)
                            .unwrap_or(usize::MAX)
                            .saturating_sub(b.len());
                        b.extend_from_slice(&chunk[..n.min(room)]);
                        if n > room {
                            capped.store(true, Ordering::SeqCst);
                            stop.store(true, Ordering::SeqCst);
                            break;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(_) => break,
                }
            }
            done.store(true, Ordering::SeqCst);
        });
    } else {
        done.store(true, Ordering::SeqCst);
    }
    let err_done = Arc::new(AtomicBool::new(false));
    if let Some(mut err) = child.stderr.take() {
        let (buf, err_done) = (err_buf.clone(), err_done.clone());
        std::thread::spawn(move || {
            let mut chunk = vec![0u8; 16 * 1024];
            loop {
                match err.read(&mut chunk) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        let Ok(mut b) = buf.lock() else { break };
                        b.extend_from_slice(&chunk[..n]);
                        if b.len() > MAX_STDERR_TAIL {
                            let cut = b.len() - MAX_STDERR_TAIL;
                            b.drain(..cut);
                        }
                    }
                }
            }
            err_done.store(true, Ordering::SeqCst);
        });
    } else {
        err_done.store(true, Ordering::SeqCst);
    }
    let mut timed_out = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(_) => break None,
        }
        if start.elapsed() >= timeout {
            timed_out = true;
            kill_group(pid);
        } else if stop.load(Ordering::SeqCst) {
            kill_group(pid);
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let duration_ms = u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    // Whatever the executable left in its group goes too; then give the
    // readers a bounded moment to see the end of both pipes (an exit can be
    // seen before the last stderr bytes are read).
    kill_group(pid);
    let grace = Instant::now();
    while !(done.load(Ordering::SeqCst) && err_done.load(Ordering::SeqCst))
        && grace.elapsed() < Duration::from_secs(5)
    {
        std::thread::sleep(Duration::from_millis(5));
    }
    use std::os::unix::process::ExitStatusExt;
    let stdout = out_buf.lock().map(|b| b.clone()).unwrap_or_default();
    let tail = err_buf.lock().map(|b| b.clone()).unwrap_or_default();
    let (stdout, tail) = if secrets.is_empty() {
        (stdout, tail)
    } else {
        (
            super::credential::redact(&stdout, secrets),
            super::credential::redact(&tail, secrets),
        )
    };
    Ran {
        spawn_error: None,
        exit_code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
        timed_out,
        capped: capped.load(Ordering::SeqCst),
        duration_ms,
        stdout,
        stderr_tail: super::answer::shorten(&String::from_utf8_lossy(&tail)),
    }
}

/// The shortest operator value scrubbed out of the reviewer's output
/// (every value of a credential file is at least
/// [`super::credential::MIN_VALUE`] long; a shorter value from the
/// environment, such as `NO_PROXY=localhost`, is not a credential).
const MIN_SECRET: usize = 8;

/// The concrete Claude Code CLI transport.
pub struct ClaudeCodeTransport {
    exe: PinnedExecutable,
    work_root: PathBuf,
    env: Vec<(String, String)>,
}

impl ClaudeCodeTransport {
    /// A transport for `profile` (basis `claude_code_cli`), with private
    /// per-call directories under `work_root` (created 0700; it must lie
    /// outside any candidate tree, under trusted directories) and the
    /// operator's `credentials` (names among the profile's `env`).
    pub fn new(
        profile: &ReviewProfile,
        work_root: &Path,
        credentials: Vec<(String, String)>,
    ) -> Result<ClaudeCodeTransport> {
        if profile.basis != Basis::ClaudeCodeCli {
            return Err(Error::new(
                Code::ProfileInvalid,
                "the Claude Code transport serves claude_code_cli profiles only",
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for (k, v) in &credentials {
            if !profile.env.contains(k) || !names.insert(k.clone()) {
                return Err(Error::new(
                    Code::InvalidInput,
                    format!("variable {k} is not one the profile passes (or is given twice)"),
                ));
            }
            if v.len() > 16 * 1024 || v.contains('\0') {
                return Err(Error::new(
                    Code::InvalidInput,
                    format!("the value of {k} is over 16 KiB or holds NUL"),
                ));
            }
        }
        private_fs::check_trusted_ancestors(work_root)?;
        private_fs::ensure_private_dir(work_root)?;
        Ok(ClaudeCodeTransport {
            exe: profile.executable.clone(),
            work_root: work_root.to_path_buf(),
            env: credentials,
        })
    }
}

impl Transport for ClaudeCodeTransport {
    fn basis(&self) -> Basis {
        Basis::ClaudeCodeCli
    }

    fn call(&mut self, call: &PreparedCall) -> Result<Dispatch> {
        let req = &call.reservation.request;
        let before = observe(&self.exe);
        if before != pinned(&self.exe) {
            let obs = Observation {
                dispatched: false,
                spawn_error: None,
                exit_code: None,
                signal: None,
                timed_out: false,
                stdout_capped: false,
                duration_ms: 0,
                envelope_bytes: 0,
                envelope_sha256: Sha256Hex::digest(b""),
                stderr_tail: String::new(),
                executable_before: before,
                executable_after: Vec::new(),
            };
            return Ok(Dispatch::Done(Box::new(CallOutcome::new(
                req.index,
                req.ticket.clone(),
                obs,
                b"",
            ))));
        }
        let dir = self.work_root.join(&req.ticket);
        if std::fs::symlink_metadata(&dir).is_ok() {
            super::super::runtime::remove_tree(&dir);
        }
        private_fs::ensure_private_dir(&dir)?;
        let (home, work, tmp) = (dir.join("home"), dir.join("work"), dir.join("tmp"));
        for d in [&home, &work, &tmp, &home.join(".claude")] {
            private_fs::ensure_private_dir(d)?;
        }
        let mut cmd = Command::new(&self.exe.program.path);
        if let Some(s) = &self.exe.script {
            cmd.arg(&s.path);
        }
        cmd.args(&req.flags).env_clear().current_dir(&work);
        for (k, v) in FIXED_ENV {
            let value = match *k {
                "HOME" => home.display().to_string(),
                "CLAUDE_CONFIG_DIR" => home.join(".claude").display().to_string(),
                "TMPDIR" => tmp.display().to_string(),
                _ => (*v).to_owned(),
            };
            cmd.env(k, value);
        }
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        crate::collector::test_run_log(&format!("review-call {}", req.ticket));
        let secrets: Vec<&[u8]> = self
            .env
            .iter()
            .map(|(_, v)| v.as_bytes())
            .filter(|v| v.len() >= MIN_SECRET)
            .collect();
        let ran = run(
            cmd,
            call.prompt.clone(),
            Duration::from_millis(req.timeout_ms),
            req.max_output_bytes,
            &secrets,
        );
        let after = if ran.spawn_error.is_some() {
            Vec::new()
        } else {
            observe(&self.exe)
        };
        super::super::runtime::remove_tree(&dir);
        let obs = Observation {
            dispatched: ran.spawn_error.is_none(),
            spawn_error: ran.spawn_error,
            exit_code: ran.exit_code,
            signal: ran.signal,
            timed_out: ran.timed_out,
            stdout_capped: ran.capped,
            duration_ms: ran.duration_ms,
            envelope_bytes: ran.stdout.len() as u64,
            envelope_sha256: Sha256Hex::digest(&ran.stdout),
            stderr_tail: ran.stderr_tail,
            executable_before: before,
            executable_after: after,
        };
        Ok(Dispatch::Done(Box::new(CallOutcome::new(
            req.index,
            req.ticket.clone(),
            obs,
            &ran.stdout,
        ))))
    }
}

/// Feeds a retained trace back: call `i` must be asked with exactly the
/// retained reservation `i` (request bytes and ticket), and gets exactly the
/// retained outcome (or `Unknown` when none was retained).
pub struct ReplayTransport {
    basis: Basis,
    trace: Vec<TraceEntry>,
    next: usize,
}

impl ReplayTransport {
    /// A replay of `trace` under `basis`.
    pub fn new(basis: Basis, trace: Vec<TraceEntry>) -> ReplayTransport {
        ReplayTransport {
            basis,
            trace,
            next: 0,
        }
    }

    /// How many retained calls were asked for.
    pub fn consumed(&self) -> usize {
        self.next
    }

    /// How many calls were retained.
    pub fn retained(&self) -> usize {
        self.trace.len()
    }
}

/// A replay refusal.
pub fn mismatch(msg: impl Into<String>) -> Error {
    Error::new(Code::ReviewReplayMismatch, msg)
}

impl Transport for ReplayTransport {
    fn basis(&self) -> Basis {
        self.basis
    }

    fn call(&mut self, call: &PreparedCall) -> Result<Dispatch> {
        let i = call.reservation.request.index as usize;
        if i != self.next {
            return Err(mismatch("the controller asked for calls out of order"));
        }
        let entry = self.trace.get(i).ok_or_else(|| {
            mismatch(format!(
                "the controller makes call {i}, which the retained trace does not hold (a dropped call)"
            ))
        })?;
        if entry.reservation != call.reservation {
            return Err(mismatch(format!(
                "call {i}: the retained reservation is not the request the controller prepares \
                 (edited, reordered or from another review)"
            ))
            .with("call", i as u64));
        }
        self.next += 1;
        Ok(match &entry.outcome {
            Some(o) => Dispatch::Done(Box::new(o.clone())),
            None => Dispatch::Unknown,
        })
    }
}

/// The in-process `fixture` basis (test builds only): `answer` maps each
/// prepared call to `(exit code, envelope bytes)`.
#[cfg(any(test, feature = "test-hooks"))]
pub struct FixtureTransport<F: FnMut(&PreparedCall) -> (i32, Vec<u8>)> {
    exe: PinnedExecutable,
    answer: F,
    /// How many calls were dispatched.
    pub dispatched: u32,
}

#[cfg(any(test, feature = "test-hooks"))]
impl<F: FnMut(&PreparedCall) -> (i32, Vec<u8>)> FixtureTransport<F> {
    /// A fixture transport for `profile`.
    pub fn new(profile: &ReviewProfile, answer: F) -> FixtureTransport<F> {
        FixtureTransport {
            exe: profile.executable.clone(),
            answer,
            dispatched: 0,
        }
    }
}

#[cfg(any(test, feature = "test-hooks"))]
impl<F: FnMut(&PreparedCall) -> (i32, Vec<u8>)> Transport for FixtureTransport<F> {
    fn basis(&self) -> Basis {
        Basis::Fixture
    }

    fn call(&mut self, call: &PreparedCall) -> Result<Dispatch> {
        let req = &call.reservation.request;
        let before = observe(&self.exe);
        self.dispatched += 1;
        let (code, env) = (self.answer)(call);
        let obs = Observation {
            dispatched: true,
            spawn_error: None,
            exit_code: Some(code),
            signal: None,
            timed_out: false,
            stdout_capped: env.len() as u64 > req.max_output_bytes,
            duration_ms: 7,
            envelope_bytes: env.len() as u64,
            envelope_sha256: Sha256Hex::digest(&env),
            stderr_tail: String::new(),
            executable_before: before,
            executable_after: observe(&self.exe),
        };
        Ok(Dispatch::Done(Box::new(CallOutcome::new(
            req.index,
            req.ticket.clone(),
            obs,
            &env,
        ))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn write_exec(p: &Path, body: &str) {
        std::fs::write(p, body).expect("write");
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    #[test]
    fn scripts_pin_script_and_interpreter() {
        let t = tempfile::tempdir().expect("tmp");
        let bin = t.path().join("bin");
        std::fs::create_dir(&bin).expect("mkdir");
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        std::fs::set_permissions(t.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let interp = bin.join("interp");
        std::fs::copy("/bin/sh", &interp).expect("copy");
        std::fs::set_permissions(&interp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let script = t.path().join("cli.js");
        write_exec(&script, "#!/usr/bin/env interp\necho\n");
        let link = t.path().join("claude");
        std::os::unix::fs::symlink(&script, &link).expect("link");
        let p = pin_executable(&link, Some(bin.as_os_str())).expect("pin");
        let s = p.script.as_ref().expect("script");
        assert_eq!(
            s.path,
            std::fs::canonicalize(&script)
                .expect("c")
                .to_str()
                .expect("u")
        );
        assert_eq!(
            s.sha256,
            Sha256Hex::digest(b"#!/usr/bin/env interp\necho\n")
        );
        assert_eq!(
            p.program.path,
            std::fs::canonicalize(&interp)
                .expect("c")
                .to_str()
                .expect("u")
        );
        assert_eq!(observe(&p), pinned(&p));
        // Not on PATH, arguments, a script interpreter: refused.
        assert!(pin_executable(&link, Some(OsStr::new("/nonexistent"))).is_err());
        write_exec(&script, "#!/usr/bin/env -S interp -x\n");
        assert!(pin_executable(&script, Some(bin.as_os_str())).is_err());
        write_exec(&script, "#!/bin/sh -e\n");
        assert!(pin_executable(&script, None).is_err());
        let wrapper = bin.join("wrapper");
        write_exec(&wrapper, "#!/bin/sh\nexec interp\n");
        write_exec(&script, "#!/usr/bin/env wrapper\n");
        assert!(pin_executable(&script, Some(bin.as_os_str())).is_err());
        // A native executable pins itself.
        let n = pin_executable(&interp, None).expect("native");
        assert!(n.script.is_none());
        // Group-writable: refused.
        std::fs::set_permissions(&interp, std::fs::Permissions::from_mode(0o775)).expect("chmod");
        assert_eq!(
            pin_executable(&interp, None).expect_err("gw").code(),
            Code::InsecurePermissions
        );
        // Changed bytes are observed.
        std::fs::set_permissions(&interp, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        write_exec(&interp, "changed");
        assert_ne!(observe(&n), pinned(&n));
    }

    #[test]
    fn run_caps_output_and_times_out() {
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "cat; head -c 100000 /dev/zero"]);
        let r = run(c, b"hello".to_vec(), Duration::from_secs(60), 1000, &[]);
        assert!(r.capped);
        assert_eq!(r.stdout.len(), 1000);
        assert!(r.stdout.starts_with(b"hello"));
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "sleep 30"]);
        let r = run(c, Vec::new(), Duration::from_millis(50), 1000, &[]);
        assert!(r.timed_out);
        assert_eq!(r.exit_code, None);
        let r = run(
            Command::new("/nonexistent/exe"),
            Vec::new(),
            Duration::from_secs(1),
            10,
            &[],
        );
        assert!(r.spawn_error.is_some());
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "echo oops >&2; exit 3"]);
        let r = run(c, Vec::new(), Duration::from_secs(60), 10, &[]);
        assert_eq!((r.exit_code, r.stderr_tail.as_str()), (Some(3), "oops\n"));
        // A secret the executable prints, whole or cut by the cap, is gone.
        let key: &[u8] = b"sk-test-secret-0123456789";
        let mut c = Command::new("/bin/sh");
        c.args(["-c", "echo \"k=$1\" >&2; printf 'x%s' \"$1\"", "sh"])
            .arg(std::str::from_utf8(key).expect("utf8"));
        let r = run(c, Vec::new(), Duration::from_secs(60), 12, &[key]);
        assert!(r.capped);
        assert_eq!(r.stdout, b"x[redacted]");
        assert_eq!(r.stderr_tail, "k=[redacted]\n");
    }
}
