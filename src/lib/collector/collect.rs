//! The command collector: `collect` and `retry-upload`.
//!
//! ```text
//! COLLECTOR_DIR/                      0700, never inside a candidate tree
//!   signing-key.ed25519               0600
//!   executions/<sha256(exec op)>/     one single-digest component per execution;
//!                                     locked (flock, non-blocking) for a whole collect
//!     reservation.sealed              created exclusively, fsynced before any external effect
//!     record.sealed                   the ExecutionRecord (after the run)
//!     transfer.sealed                 the signed transfer (retained before upload)
//!     upload.sealed                   the authority's answer
//!   snapshots/<snapshot digest>/      the run's materialised revision: a fresh directory
//!                                     created exclusively (removed after the run)
//! ```
//!
//! Every retained file is sealed with a MAC ([`super::state`]); resuming
//! accepts only what verifies (`collector_state_tampered` otherwise, and
//! nothing is signed). Reopening retained state never reruns the command: a
//! reservation without a record becomes a typed `interrupted` failed record.
//!
//! **One execution per execution operation.** A collect holds an exclusive
//! advisory lock on its execution's directory from before it reads any
//! retained state until it returns, taken without waiting; a second
//! collect of the same operation meanwhile touches nothing of it and
//! answers with the retained outcome when the transfer is already signed,
//! else `execution_in_progress`. Under the lock the reservation is created
//! exclusively (a link that never replaces), so whatever the timing and
//! whatever signal stops a collect, the command runs at most once. The
//! reservation names a random run id; the run's snapshot directory is
//! `snapshots/<domain digest of (execution, run id)>`, made with `mkdir`
//! (an existing one is never removed and reused). Only a later holder of
//! the same execution's lock removes what a killed run left there.
//!
//! Before anything is reserved, `collect` fails closed on a misconfigured
//! deployment: the collector directory, its key and its state must be the
//! caller's and private, and no directory above the collector directory or
//! the data directory may be a symlink or writable by others. A runtime that
//! does not keep candidate code in (`unshare`) is refused, and so is a
//! pinned sandbox limit this host cannot apply.

use super::binding::BoundDescriptor;
pub use super::execution::{Authority, CollectRequest, Uploader};
use super::execution::{CollectorKind, Execution, drive, open_collector};
use super::runtime::{self, RunSpec};
use super::state::StateKey;
use super::transfer::{
    self, CollectorDescriptor, CollectorIdentity, ExecutionOutcome, ExecutionRecord,
    ExecutionRequest, ExecutionStatus, MAX_TRANSFER_BYTES,
};
use crate::clock::rfc3339_millis;
use crate::contract::canonical_bytes;
use crate::contract::snapshot::{DOMAIN_REVISION, MODE_EXEC, MODE_LINK, Manifest};
use crate::error::{Code, Error, Result};
use crate::store::{DataDir, private_fs};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest descriptor file.
pub const MAX_DESCRIPTOR_BYTES: u64 = 64 * 1024;
/// Largest manifest materialised.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;
/// Longest symbolic link target materialised.
const MAX_LINK_TARGET: u64 = 4096;

/// The durable reservation of one execution.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reservation {
    version: u32,
    descriptor: CollectorDescriptor,
    request_digest: Sha256Hex,
    reserved_at: String,
    /// Random and unique to the run that made the reservation: it names
    /// that run's snapshot directory ([`snapshot_name`]). Absent in a
    /// reservation retained by an older agent-task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    run: Option<String>,
}

/// Domain of a snapshot directory's name.
const SNAPSHOT_DOMAIN: &str = "agent-task.collector-snapshot.v1";

/// The single digest component naming the snapshot directory of run `run`
/// of the execution tagged `tag` (`snapshots/<this>`).
fn snapshot_name(tag: &str, run: &str) -> Sha256Hex {
    domain_digest(SNAPSHOT_DOMAIN, format!("{tag}\0{run}").as_bytes())
}

/// Refuses, before anything is reserved, a descriptor whose runtime does
/// not keep candidate code in or whose pinned limits this host cannot apply.
fn check_runtime(d: &CollectorDescriptor) -> Result<()> {
    match d.runtime {
        runtime::RuntimeKind::Unshare => Err(runtime::not_isolating(d.runtime)),
        runtime::RuntimeKind::Bwrap => match &d.limits.sandbox {
            None => Err(Error::new(
                Code::ProfileInvalid,
                "the collector profile pins no sandbox limits (it predates them): \
                 re-enroll and install a new bwrap profile",
            )),
            Some(l) if l.process.is_none() => Err(Error::new(
                Code::ProfileInvalid,
                "the collector profile pins no sandbox process attributes (it predates them): \
                 install a new bwrap profile",
            )),
            Some(l) => l.check_applicable(),
        },
        runtime::RuntimeKind::Oci => Ok(()),
    }
}

/// Runs the recipe of a claimed descriptor once, durably: reserve, run,
/// record, sign, retain, upload. Exits successfully whatever the test said.
pub fn collect(req: &CollectRequest<'_>, up: &dyn Uploader) -> Result<Value> {
    if req.descriptor.len() as u64 > MAX_DESCRIPTOR_BYTES {
        return Err(Error::new(Code::TooLarge, "descriptor is over 64 KiB"));
    }
    // A review descriptor names its kind; a command descriptor has none.
    let peek: Value = crate::wire::json::decode(
        req.descriptor,
        crate::wire::json::Limits::bytes(MAX_DESCRIPTOR_BYTES as usize),
        Code::InvalidInput,
        "collector descriptor",
    )?;
    if peek.get("kind").is_some() {
        return super::review::collect::collect(req, up, peek);
    }
    let d: CollectorDescriptor = crate::wire::json::decode(
        req.descriptor,
        crate::wire::json::Limits::bytes(MAX_DESCRIPTOR_BYTES as usize),
        Code::InvalidInput,
        "collector descriptor",
    )?;
    drive::<Command>(req, up, &d)
}

/// The command kind of collector execution: the operator's recipe run
/// once in the pinned runtime on a materialised snapshot.
pub(crate) struct Command;

/// What a command execution settled before its record.
pub(crate) struct Started {
    /// The regenerated request's digest (what the record answers).
    request_digest: Sha256Hex,
    /// Whether the reservation was retained (a resumed collect).
    resumed: bool,
    /// The run id of the reservation made now; `None` when resumed
    /// (a reservation without a record is never run again).
    fresh_run: Option<String>,
    /// The runtime's identity, observed on a thread started as soon as
    /// the runtime was checked ([`CollectorKind::prepare`], before the
    /// execution is opened): the version query and the program's digest
    /// overlap holding the execution, the recheck and the reservation
    /// instead of following them. A fresh run waits for it and compares
    /// it with the pin as before; a resumed one never uses it.
    observed: std::sync::Mutex<Option<Observation>>,
}

/// The runtime identity being observed on its own thread. Dropped
/// unused (a resumed execution, one another collect holds, a refusal
/// before the run), it waits for the thread, so no `--version` child of
/// it outlives the collect.
pub(crate) struct Observation(Option<std::thread::JoinHandle<Result<runtime::RuntimeIdentity>>>);

impl Observation {
    /// Starts observing the descriptor's runtime (it only reads: the
    /// program, its version, for `oci` the engine and the image).
    fn start(cdir: &Path, d: &CollectorDescriptor) -> Result<Observation> {
        let (kind, image, limits) = (d.runtime, d.oci_image.clone(), d.limits.sandbox.clone());
        let cdir = cdir.to_path_buf();
        std::thread::Builder::new()
            .name("observe-runtime".into())
            .spawn(move || {
                runtime::observe(
                    kind,
                    &runtime::Plan {
                        oci_image: image.as_deref(),
                        limits: limits.as_ref(),
                        collector_dir: Some(&cdir),
                    },
                )
            })
            .map(|h| Observation(Some(h)))
            .map_err(|e| Error::new(Code::Io, format!("cannot start a thread: {e}")))
    }

    /// Waits for the observation: what it observed (or why it could
    /// not), an error only when the thread itself failed.
    fn finish(mut self) -> Result<Result<runtime::RuntimeIdentity>> {
        self.0
            .take()
            .ok_or_else(|| Error::internal("the runtime observation was taken twice"))?
            .join()
            .map_err(|_| Error::internal("the runtime observation panicked"))
    }
}

impl Drop for Observation {
    fn drop(&mut self) {
        if let Some(h) = self.0.take() {
            let _ = h.join();
        }
    }
}

impl Command {
    /// The retained reservation, which must name this descriptor and request.
    fn retained_reservation(
        ex: &Execution,
        d: &CollectorDescriptor,
        request_digest: &Sha256Hex,
    ) -> Result<Option<Reservation>> {
        let Some(b) = ex.read("reservation", MAX_DESCRIPTOR_BYTES * 2)? else {
            return Ok(None);
        };
        let r: Reservation = serde_json::from_slice(&b)
            .map_err(|e| Error::internal(format!("a sealed reservation does not decode: {e}")))?;
        if r.descriptor != *d || r.request_digest != *request_digest {
            return Err(Error::new(
                Code::DescriptorMismatch,
                "this execution was reserved under another descriptor",
            ));
        }
        Ok(Some(r))
    }

    /// A retained record, which must answer `request_digest`.
    fn retained_record(b: &[u8], request_digest: &Sha256Hex) -> Result<ExecutionRecord> {
        let r: ExecutionRecord = serde_json::from_slice(b)
            .map_err(|e| Error::internal(format!("a sealed record does not decode: {e}")))?;
        if r.request_digest != *request_digest {
            return Err(Error::new(
                Code::CollectorStateTampered,
                "the retained record answers another request",
            ));
        }
        Ok(r)
    }
}

impl CollectorKind for Command {
    type Descriptor = CollectorDescriptor;
    type Started = Started;
    type Record = ExecutionRecord;
    type Prepared = Observation;

    fn operation(d: &CollectorDescriptor) -> &str {
        &d.execution_operation_id
    }

    fn key_id(d: &CollectorDescriptor) -> &str {
        &d.registration.key_id
    }

    fn prepare(cdir: &Path, d: &CollectorDescriptor) -> Result<Observation> {
        check_runtime(d)?;
        Observation::start(cdir, d)
    }

    fn in_progress(
        _req: &CollectRequest<'_>,
        ex: &Execution,
        d: &CollectorDescriptor,
        transfer: Vec<u8>,
        record: Vec<u8>,
    ) -> Result<Value> {
        let request_digest = ExecutionRequest::from_descriptor(d).digest()?;
        Command::retained_reservation(ex, d, &request_digest)?;
        let record = Command::retained_record(&record, &request_digest)?;
        let mut v = answer(d, true, &record, &transfer, ex, Value::Null)?;
        v["in_progress"] = Value::Bool(true);
        Ok(v)
    }

    fn start(
        req: &CollectRequest<'_>,
        cdir: &Path,
        ex: &Execution,
        d: &CollectorDescriptor,
        observed: Observation,
    ) -> Result<Started> {
        let request_digest = ExecutionRequest::from_descriptor(d).digest()?;
        match Command::retained_reservation(ex, d, &request_digest)? {
            Some(r) => {
                // A run killed before removing its snapshot left it behind; we
                // hold the execution, so that run is gone.
                if let Some(run) = &r.run {
                    runtime::remove_leftover(
                        &cdir
                            .join("snapshots")
                            .join(snapshot_name(&ex.tag, run).as_str()),
                    );
                }
                Ok(Started {
                    request_digest,
                    resumed: true,
                    fresh_run: None,
                    // Unused; dropped (its thread waited for) when the
                    // collect ends, by which time it has usually finished.
                    observed: std::sync::Mutex::new(Some(observed)),
                })
            }
            None => {
                req.authority.recheck_descriptor(d)?;
                crate::collector::crash_point("before_reserve");
                let run = crate::wire::random_id("run")?;
                let res = Reservation {
                    version: 1,
                    request_digest: request_digest.clone(),
                    descriptor: d.clone(),
                    reserved_at: rfc3339_millis(req.clock.now()),
                    run: Some(run.clone()),
                };
                if !ex.create("reservation", &canonical_bytes(&res)?)? {
                    return Err(Error::new(
                        Code::ExecutionInProgress,
                        "another collect reserved this execution meanwhile; nothing was run",
                    )
                    .with("execution_operation_id", d.execution_operation_id.as_str()));
                }
                crate::collector::crash_point("after_reserve");
                Ok(Started {
                    request_digest,
                    resumed: false,
                    fresh_run: Some(run),
                    observed: std::sync::Mutex::new(Some(observed)),
                })
            }
        }
    }

    fn decode_record(s: &Started, bytes: &[u8]) -> Result<ExecutionRecord> {
        Command::retained_record(bytes, &s.request_digest)
    }

    fn run(
        req: &CollectRequest<'_>,
        cdir: &Path,
        _seed: &[u8; 32],
        ex: &Execution,
        d: &CollectorDescriptor,
        s: &Started,
    ) -> Result<ExecutionRecord> {
        match &s.fresh_run {
            Some(run) => {
                let snapshots = cdir.join("snapshots");
                let snap = snapshots.join(snapshot_name(&ex.tag, run).as_str());
                let started = s.observed.lock().ok().and_then(|mut o| o.take());
                let observed = match started {
                    Some(o) => o.finish()?,
                    None => return Err(Error::internal("a fresh run without its observation")),
                };
                execute(req, &snapshots, &snap, d, observed)
            }
            None => interrupted(d),
        }
    }

    fn record_bytes(r: &ExecutionRecord) -> Result<Vec<u8>> {
        canonical_bytes(r)
    }

    fn seal(
        d: &CollectorDescriptor,
        _s: &Started,
        r: &ExecutionRecord,
        key: &crate::wire::ed25519::Keypair,
    ) -> Result<Vec<u8>> {
        seal(d, r, key)
    }

    fn answer(
        d: &CollectorDescriptor,
        s: &Started,
        r: &ExecutionRecord,
        transfer: &[u8],
        ex: &Execution,
        upload: Value,
    ) -> Result<Value> {
        answer(d, s.resumed, r, transfer, ex, upload)
    }
}

/// What `collect` prints for a command execution.
fn answer(
    d: &CollectorDescriptor,
    resumed: bool,
    record: &ExecutionRecord,
    bytes: &[u8],
    ex: &Execution,
    upload: Value,
) -> Result<Value> {
    let run = record.run.as_ref();
    Ok(serde_json::to_value(Answer {
        attempt_id: &d.attempt_id,
        detail: record.detail.as_deref(),
        duration_ms: run.map(|r| r.duration_ms),
        execution_operation_id: &d.execution_operation_id,
        exit_code: run.and_then(|r| r.exit_code),
        outcome: &record.outcome,
        resumed,
        retained: ex.path("transfer").display().to_string(),
        status: &record.status,
        stderr_tail: run.map(|r| r.stderr.tail.as_str()),
        stdout_tail: run.map(|r| r.stdout.tail.as_str()),
        task_id: &d.task_id,
        transfer_digest: transfer::transfer_digest(bytes),
        transfer_size: bytes.len(),
        upload,
    })?)
}

// The outputs below are JSON objects: their fields are in key order, the
// order the `Value` they become has.

/// What `collect` prints for a command execution (`in_progress` is added
/// for one still running).
#[derive(Serialize)]
struct Answer<'a> {
    attempt_id: &'a str,
    detail: Option<&'a str>,
    duration_ms: Option<u64>,
    execution_operation_id: &'a str,
    exit_code: Option<i32>,
    outcome: &'a ExecutionOutcome,
    resumed: bool,
    retained: String,
    status: &'a ExecutionStatus,
    stderr_tail: Option<&'a str>,
    stdout_tail: Option<&'a str>,
    task_id: &'a str,
    transfer_digest: Sha256Hex,
    transfer_size: usize,
    upload: Value,
}

/// What `retry-upload` prints.
#[derive(Serialize)]
struct Retried<'a> {
    execution_operation_id: &'a str,
    transfer_digest: Sha256Hex,
    transfer_size: usize,
    upload: Value,
}

/// `retry-upload`: resends the identical retained bytes of an execution
/// (which must verify as this collector's own).
pub fn retry_upload(
    root: &Path,
    collector_dir: &Path,
    operation: &str,
    up: &dyn Uploader,
) -> Result<Value> {
    crate::contract::check_id("operation", operation)?;
    let (cdir, seed) = open_collector(root, collector_dir)?;
    let ex = Execution::new(&cdir, operation, StateKey::derive(&seed)?);
    ex.refuse_unsealed()?;
    // The upload answer is the running collect's to write.
    let _held = if private_fs::check_private(&ex.dir, private_fs::Kind::Dir)? {
        Some(crate::store::try_lock_dir(&ex.dir)?.ok_or_else(|| {
            Error::new(
                Code::ExecutionInProgress,
                "a collect of this execution operation is running; it uploads itself",
            )
            .with("execution_operation_id", operation)
        })?)
    } else {
        None
    };
    let bytes = ex.read("transfer", MAX_TRANSFER_BYTES)?.ok_or_else(|| {
        Error::new(
            Code::NotFound,
            "no retained transfer for this execution (rerun collect to finish it)",
        )
    })?;
    let answer = up.upload(&bytes)?;
    ex.write("upload", &serde_json::to_vec(&answer)?)?;
    Ok(serde_json::to_value(Retried {
        execution_operation_id: operation,
        transfer_digest: transfer::transfer_digest(&bytes),
        transfer_size: bytes.len(),
        upload: answer,
    })?)
}

/// Reads one retained file of an execution, verifying its MAC with the
/// collector directory's key (for tools and tests that inspect state).
pub fn read_retained(collector_dir: &Path, operation: &str, kind: &str) -> Result<Option<Vec<u8>>> {
    let seed = super::load_signing_seed(collector_dir)?;
    Execution::new(collector_dir, operation, StateKey::derive(&seed)?)
        .read(kind, MAX_TRANSFER_BYTES)
}

/// Writes one retained file of an execution sealed with the collector
/// directory's key: what a holder of the signing key can always do
/// (tests use it to hand the authority re-signed transfers).
pub fn write_retained(
    collector_dir: &Path,
    operation: &str,
    kind: &str,
    body: &[u8],
) -> Result<()> {
    let seed = super::load_signing_seed(collector_dir)?;
    Execution::new(collector_dir, operation, StateKey::derive(&seed)?).write(kind, body)
}

/// The path of one retained file of an execution.
pub fn retained_path(collector_dir: &Path, operation: &str, kind: &str) -> PathBuf {
    collector_dir
        .join("executions")
        .join(Sha256Hex::digest(operation.as_bytes()).as_str())
        .join(format!("{kind}.sealed"))
}

fn interrupted(d: &CollectorDescriptor) -> Result<ExecutionRecord> {
    Ok(ExecutionRecord {
        version: 1,
        request_digest: ExecutionRequest::from_descriptor(d).digest()?,
        status: ExecutionStatus::Interrupted,
        outcome: ExecutionOutcome::Failed,
        runtime_identity: None,
        run: None,
        detail: Some("the collector stopped after reserving; the command is never rerun".into()),
    })
}

/// Runs the recipe once on a snapshot materialised into `snap`, a fresh
/// directory of this run's own under `snapshots` (the owner-private,
/// non-symlink parent; under a dedicated sandbox uid the snapshot goes
/// into a fresh run directory in the system temp directory instead).
/// `observed` is the runtime identity observed on this host (or why it
/// could not be), compared here with the pin before anything runs.
fn execute(
    req: &CollectRequest<'_>,
    snapshots: &Path,
    snap: &Path,
    d: &CollectorDescriptor,
    observed: Result<runtime::RuntimeIdentity>,
) -> Result<ExecutionRecord> {
    let request_digest = ExecutionRequest::from_descriptor(d).digest()?;
    let failed = |status, id, detail: String| ExecutionRecord {
        version: 1,
        request_digest: request_digest.clone(),
        status,
        outcome: ExecutionOutcome::Failed,
        runtime_identity: id,
        run: None,
        detail: Some(detail),
    };
    let identity = match observed {
        Ok(id) if id.digest == d.runtime_identity_digest => id,
        Ok(id) => {
            return Ok(failed(
                ExecutionStatus::RuntimeIdentityMismatch,
                Some(id),
                "the runtime on this host is not the pinned one".into(),
            ));
        }
        Err(e) => {
            let status = match e.code() {
                Code::OciImageUnavailable => ExecutionStatus::ImageUnavailable,
                Code::SandboxLimitUnavailable => ExecutionStatus::LimitUnavailable,
                _ => ExecutionStatus::RuntimeUnavailable,
            };
            return Ok(failed(
                status,
                None,
                e.message().chars().take(512).collect(),
            ));
        }
    };
    private_fs::ensure_private_dir(snapshots)?;
    let sdir = match runtime::snapshot_dir(identity.limits.as_ref(), snap) {
        Ok(s) => s,
        Err(e) => {
            return Ok(failed(
                ExecutionStatus::SnapshotUnavailable,
                Some(identity),
                e.message().chars().take(512).collect(),
            ));
        }
    };
    let snap = sdir.path().to_path_buf();
    if let Err(e) = materialise(req.root, d, &snap) {
        sdir.remove();
        return Ok(failed(
            ExecutionStatus::SnapshotUnavailable,
            Some(identity),
            e.message().chars().take(512).collect(),
        ));
    }
    let spec = RunSpec {
        snapshot: &snap,
        argv: &d.recipe.argv,
        env: &[],
        timeout: Duration::from_millis(d.recipe.timeout_ms),
        max_output_bytes: d.limits.max_output_bytes,
        tail_bytes: usize::try_from(d.limits.tail_bytes).unwrap_or(4096),
        oci_image: d.oci_image.as_deref(),
    };
    crate::collector::test_run_log(&format!("run {}", d.execution_operation_id));
    let run = runtime::run(&identity, &spec, req.clock);
    let snap_removed = sdir.remove();
    let mut out = match run {
        Ok(o) => o,
        Err(e) => {
            let status = match e.code() {
                Code::SandboxLimitUnavailable => ExecutionStatus::LimitUnavailable,
                _ => ExecutionStatus::RuntimeUnavailable,
            };
            return Ok(failed(
                status,
                Some(identity),
                e.message().chars().take(512).collect(),
            ));
        }
    };
    out.cleanup_confirmed &= snap_removed;
    let mut rec = ExecutionRecord {
        version: 1,
        request_digest,
        status: ExecutionStatus::Completed,
        outcome: ExecutionOutcome::Failed,
        runtime_identity: Some(identity),
        run: Some(out),
        detail: None,
    };
    rec.outcome = rec.derived_outcome(&d.runtime_identity_digest);
    Ok(rec)
}

/// Writes the exact revision from the CAS into `snap` (which exists,
/// empty, owner-private), streaming every file (never whole in memory;
/// each verified against its digest). Paths follow git's rules, and no
/// entry may sit below another entry (a link cannot redirect a write).
/// Directories become 0755 and files 0644/0755, so that a dedicated
/// sandbox uid can read them; the snapshot's parent stays private.
fn materialise(root: &Path, d: &CollectorDescriptor, snap: &Path) -> Result<()> {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
    let dir = DataDir::open(root)?;
    let cas = dir.blobs()?;
    let mbytes = cas.get(&d.manifest_sha256, None, MAX_MANIFEST_BYTES)?;
    if domain_digest(DOMAIN_REVISION, &mbytes) != d.revision {
        return Err(Error::new(
            Code::IntegrityError,
            "the manifest is not the descriptor's revision",
        ));
    }
    let m: Manifest = serde_json::from_slice(&mbytes)?;
    let paths: std::collections::HashSet<&str> =
        m.entries.iter().map(|e| e.path.as_str()).collect();
    for e in &m.entries {
        crate::contract::tree_path::check(&e.path, e.mode == MODE_LINK)?;
        let mut parent = Path::new(&e.path).parent();
        while let Some(p) = parent.filter(|p| !p.as_os_str().is_empty()) {
            if p.to_str().is_some_and(|s| paths.contains(s)) {
                return Err(Error::new(
                    Code::IntegrityError,
                    "a manifest entry lies below another entry",
                ));
            }
            parent = p.parent();
        }
    }
    let mut mkdir = std::fs::DirBuilder::new();
    mkdir.mode(0o755);
    for e in &m.entries {
        let target = snap.join(&e.path);
        if let Some(parent) = Path::new(&e.path).parent() {
            let mut cur = snap.to_path_buf();
            for c in parent.components() {
                cur.push(c);
                match std::fs::symlink_metadata(&cur) {
                    Ok(md) if md.is_dir() => {}
                    Ok(_) => {
                        return Err(Error::new(
                            Code::IntegrityError,
                            format!("{} is not a directory", cur.display()),
                        ));
                    }
                    Err(_) => {
                        mkdir
                            .create(&cur)
                            .map_err(|x| Error::io("create", &cur, x))?;
                        std::fs::set_permissions(&cur, std::fs::Permissions::from_mode(0o755))
                            .map_err(|x| Error::io("chmod", &cur, x))?;
                    }
                }
            }
        }
        if e.mode == MODE_LINK {
            let bytes = cas.get(&e.sha256, Some(e.size), MAX_LINK_TARGET)?;
            let t = String::from_utf8(bytes)
                .map_err(|_| Error::new(Code::InvalidInput, "link target is not UTF-8"))?;
            std::os::unix::fs::symlink(&t, &target)
                .map_err(|x| Error::io("symlink", &target, x))?;
            continue;
        }
        let mode = if e.mode == MODE_EXEC { 0o755 } else { 0o644 };
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&target)
            .map_err(|x| Error::io("create", &target, x))?;
        cas.copy_to(&e.sha256, e.size, &mut f)?;
        f.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|x| Error::io("chmod", &target, x))?;
    }
    std::fs::set_permissions(snap, std::fs::Permissions::from_mode(0o755))
        .map_err(|x| Error::io("chmod", snap, x))?;
    Ok(())
}

fn seal(
    d: &CollectorDescriptor,
    record: &ExecutionRecord,
    key: &crate::wire::ed25519::Keypair,
) -> Result<Vec<u8>> {
    let request = ExecutionRequest::from_descriptor(d);
    let header = d.binding().header(
        CollectorDescriptor::KIND,
        d.profile_ref(),
        request.digest()?,
        CollectorIdentity {
            runtime: d.runtime.as_str().into(),
            runtime_identity_digest: record.runtime_identity.as_ref().map(|i| i.digest.clone()),
            agent_task_version: env!("CARGO_PKG_VERSION").into(),
        },
    )?;
    transfer::seal(header, &[request.bytes()?, canonical_bytes(record)?], key)
}
