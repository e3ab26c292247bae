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

use super::runtime::{self, RunSpec};
use super::state::StateKey;
use super::transfer::{
    self, CollectorDescriptor, CollectorIdentity, ExecutionOutcome, ExecutionRecord,
    ExecutionRequest, ExecutionStatus, MAX_TRANSFER_BYTES, TransferHeader,
};
use crate::clock::{Clock, rfc3339_millis};
use crate::contract::canonical_bytes;
use crate::contract::snapshot::{DOMAIN_REVISION, MODE_EXEC, MODE_LINK, Manifest};
use crate::error::{Code, Error, Result};
use crate::store::{DataDir, private_fs};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest descriptor file.
pub const MAX_DESCRIPTOR_BYTES: u64 = 64 * 1024;
/// Largest manifest materialised.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;
/// Longest symbolic link target materialised.
const MAX_LINK_TARGET: u64 = 4096;

/// Where signed transfers go. Locally: the authority of `--data-dir`; an
/// HTTP upload endpoint implements the same trait.
pub trait Uploader {
    /// Sends the exact retained bytes; returns the authority's answer.
    fn upload(&self, bytes: &[u8]) -> Result<Value>;
}

/// What a collection needs from the authority it runs for, beyond the
/// upload: the workflow service implements it (locally,
/// `workflow::service::collect::LocalUpload`), so the collector never
/// names the service or its databases.
pub trait Authority {
    /// Rechecks a descriptor before the execution is reserved: it must
    /// equal what the authority derives now, its attempt open at its
    /// fence, every live check passing.
    fn recheck_descriptor(&self, d: &CollectorDescriptor) -> Result<()>;

    /// The same recheck for a review descriptor, before any call is
    /// reserved; returns the installed review profile it names (loaded and
    /// validated by the authority, basis included).
    fn recheck_review(
        &self,
        d: &super::review::wire::ReviewDescriptor,
    ) -> Result<super::review::ReviewProfile>;

    /// The installed review profile a review descriptor names (read-only,
    /// whatever the attempt's state: a finished review only re-signs).
    fn review_profile(
        &self,
        d: &super::review::wire::ReviewDescriptor,
    ) -> Result<super::review::ReviewProfile>;
}

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

/// `collect` request.
pub struct CollectRequest<'a> {
    /// Data directory of the authority (read for rechecks and the CAS).
    pub root: &'a Path,
    /// Clock.
    pub clock: &'a dyn Clock,
    /// The authority the descriptor is rechecked against.
    pub authority: &'a dyn Authority,
    /// Descriptor file bytes.
    pub descriptor: &'a [u8],
    /// Collector directory.
    pub collector_dir: &'a Path,
    /// The operator's review credential file (`docs/review.md`,
    /// "Credentials"): a review collect hands its values to the pinned
    /// reviewer instead of the environment's; a command collect never
    /// reads it.
    pub review_credential_file: Option<&'a Path>,
}

/// The retained files of one execution and the key that seals them.
pub(crate) struct Execution {
    pub(crate) dir: PathBuf,
    pub(crate) tag: String,
    state: StateKey,
}

impl Execution {
    pub(crate) fn new(collector_dir: &Path, op: &str, state: StateKey) -> Execution {
        let tag = Sha256Hex::digest(op.as_bytes()).to_string();
        Execution {
            dir: collector_dir.join("executions").join(&tag),
            tag,
            state,
        }
    }

    pub(crate) fn path(&self, kind: &str) -> PathBuf {
        self.dir.join(format!("{kind}.sealed"))
    }

    pub(crate) fn read(&self, kind: &str, max: u64) -> Result<Option<Vec<u8>>> {
        self.state.read(&self.path(kind), kind, &self.tag, max)
    }

    pub(crate) fn write(&self, kind: &str, body: &[u8]) -> Result<()> {
        self.state.write(&self.path(kind), kind, &self.tag, body)
    }

    /// Creates a retained file exclusively (never replacing one);
    /// `Ok(false)` when it already exists.
    pub(crate) fn create(&self, kind: &str, body: &[u8]) -> Result<bool> {
        self.state.create(&self.path(kind), kind, &self.tag, body)
    }

    /// Holds the execution for the rest of a collect: creates its
    /// directory (0700) when missing and takes an exclusive advisory lock
    /// on it without waiting. `Ok(None)`: another collect holds it.
    pub(crate) fn hold(&self) -> Result<Option<crate::store::DirLock>> {
        private_fs::ensure_private_dir(&self.dir)?;
        crate::store::try_lock_dir(&self.dir)
    }

    /// Refuses unsealed files of the layout before sealing
    /// (`reservation.json`, `record.json`, `transfer.bin`, `upload.json`):
    /// nothing proves who wrote them, and ignoring them could run the
    /// command a second time.
    pub(crate) fn refuse_unsealed(&self) -> Result<()> {
        for name in LEGACY_FILES {
            if std::fs::symlink_metadata(self.dir.join(name)).is_ok() {
                return Err(Error::new(
                    Code::CollectorStateTampered,
                    format!(
                        "the execution directory holds an unsealed {name} (planted, or retained by an \
                         older agent-task): it cannot be verified, so nothing is signed from it"
                    ),
                )
                .with("file", *name));
            }
        }
        Ok(())
    }
}

/// Retained files of the unsealed layout.
const LEGACY_FILES: &[&str] = &[
    "reservation.json",
    "record.json",
    "transfer.bin",
    "upload.json",
];

/// Fails closed on a misconfigured deployment: the collector directory
/// must exist, be the caller's and private; no directory above it or above
/// the data directory may be a symlink or replaceable by others.
fn check_deployment(root: &Path, cdir: &Path) -> Result<()> {
    private_fs::check_trusted_ancestors(cdir)?;
    private_fs::check_trusted_ancestors(root)?;
    if !private_fs::check_private(cdir, private_fs::Kind::Dir)? {
        return Err(Error::new(
            Code::NotFound,
            format!(
                "no collector directory at {} (create it with keygen)",
                cdir.display()
            ),
        ));
    }
    Ok(())
}

/// The collector directory's key and state key, after the deployment checks.
/// The signing key and the retained state of one execution in an opened
/// collector directory,
/// once its key is the registration's (`key_id`) and nothing unsealed lies
/// there.
pub(crate) fn open_execution(
    cdir: &Path,
    seed: &[u8; 32],
    key_id: &str,
    execution_operation_id: &str,
) -> Result<(crate::wire::ed25519::Keypair, Execution)> {
    let key = crate::wire::ed25519::Keypair::from_seed(seed);
    if crate::contract::key_id(&key.public_key()) != key_id {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the collector directory's key is not the registration's key",
        ));
    }
    private_fs::ensure_private_dir(&cdir.join("executions"))?;
    let ex = Execution::new(cdir, execution_operation_id, StateKey::derive(seed)?);
    ex.refuse_unsealed()?;
    Ok((key, ex))
}

pub(crate) fn open_collector(root: &Path, collector_dir: &Path) -> Result<(PathBuf, [u8; 32])> {
    let cdir =
        std::path::absolute(collector_dir).map_err(|e| Error::io("resolve", collector_dir, e))?;
    check_deployment(root, &cdir)?;
    let seed = super::load_signing_seed(&cdir)?;
    Ok((cdir, seed))
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

/// The answer to a collect of an execution that another collect holds:
/// the retained outcome when its transfer is already signed (read only,
/// nothing uploaded or written), else `execution_in_progress`.
pub(crate) fn held_elsewhere(
    ex: &Execution,
    operation: &str,
    retained: impl FnOnce(Vec<u8>, Vec<u8>) -> Result<Value>,
) -> Result<Value> {
    if let Some(bytes) = ex.read("transfer", MAX_TRANSFER_BYTES)?
        && let Some(record) = ex.read("record", MAX_TRANSFER_BYTES)?
    {
        return retained(bytes, record);
    }
    Err(Error::new(
        Code::ExecutionInProgress,
        "another collect of this execution operation is running; this one ran, reserved \
         and wrote nothing (rerun it for the retained outcome once that one has finished)",
    )
    .with("execution_operation_id", operation))
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
    let (cdir, seed) = open_collector(req.root, req.collector_dir)?;
    check_runtime(&d)?;
    let (key, ex) = open_execution(
        &cdir,
        &seed,
        &d.registration.key_id,
        &d.execution_operation_id,
    )?;
    let request_digest = ExecutionRequest::from_descriptor(&d).digest()?;
    let retained_reservation = || -> Result<Option<Reservation>> {
        let Some(b) = ex.read("reservation", MAX_DESCRIPTOR_BYTES * 2)? else {
            return Ok(None);
        };
        let r: Reservation = serde_json::from_slice(&b)
            .map_err(|e| Error::internal(format!("a sealed reservation does not decode: {e}")))?;
        if r.descriptor != d || r.request_digest != request_digest {
            return Err(Error::new(
                Code::DescriptorMismatch,
                "this execution was reserved under another descriptor",
            ));
        }
        Ok(Some(r))
    };
    let retained_record = |b: Vec<u8>| -> Result<ExecutionRecord> {
        let r: ExecutionRecord = serde_json::from_slice(&b)
            .map_err(|e| Error::internal(format!("a sealed record does not decode: {e}")))?;
        if r.request_digest != request_digest {
            return Err(Error::new(
                Code::CollectorStateTampered,
                "the retained record answers another request",
            ));
        }
        Ok(r)
    };
    // Held until this function returns (upload included).
    let Some(_held) = ex.hold()? else {
        return held_elsewhere(&ex, &d.execution_operation_id, |bytes, record| {
            retained_reservation()?;
            let record = retained_record(record)?;
            let mut v = answer(&d, true, &record, &bytes, &ex, Value::Null);
            v["in_progress"] = json!(true);
            Ok(v)
        });
    };
    let snapshots = cdir.join("snapshots");
    let (resumed, run) = match retained_reservation()? {
        Some(r) => {
            // A run killed before removing its snapshot left it behind; we
            // hold the execution, so that run is gone.
            if let Some(run) = &r.run {
                runtime::remove_leftover(&snapshots.join(snapshot_name(&ex.tag, run).as_str()));
            }
            (true, r.run)
        }
        None => {
            req.authority.recheck_descriptor(&d)?;
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
            (false, Some(run))
        }
    };
    let (bytes, record) = match ex.read("transfer", MAX_TRANSFER_BYTES)? {
        Some(bytes) => {
            let record = ex.read("record", MAX_TRANSFER_BYTES)?.ok_or_else(|| {
                Error::new(
                    Code::CollectorStateTampered,
                    "a retained transfer without its record",
                )
            })?;
            (bytes, retained_record(record)?)
        }
        None => {
            let record = match ex.read("record", MAX_TRANSFER_BYTES)? {
                Some(b) => retained_record(b)?,
                None => {
                    let record = match (resumed, &run) {
                        (false, Some(run)) => {
                            let snap = snapshots.join(snapshot_name(&ex.tag, run).as_str());
                            execute(req, &snapshots, &snap, &d)?
                        }
                        _ => interrupted(&d)?,
                    };
                    ex.write("record", &canonical_bytes(&record)?)?;
                    crate::collector::crash_point("after_run");
                    record
                }
            };
            let bytes = seal(&d, &record, &key)?;
            ex.write("transfer", &bytes)?;
            crate::collector::crash_point("after_sign");
            (bytes, record)
        }
    };
    let uploaded = up.upload(&bytes)?;
    ex.write("upload", &serde_json::to_vec(&uploaded)?)?;
    Ok(answer(&d, resumed, &record, &bytes, &ex, uploaded))
}

/// What `collect` prints for a command execution.
fn answer(
    d: &CollectorDescriptor,
    resumed: bool,
    record: &ExecutionRecord,
    bytes: &[u8],
    ex: &Execution,
    upload: Value,
) -> Value {
    json!({
        "execution_operation_id": d.execution_operation_id, "task_id": d.task_id, "attempt_id": d.attempt_id,
        "resumed": resumed, "status": record.status, "outcome": record.outcome, "detail": record.detail,
        "exit_code": record.run.as_ref().and_then(|r| r.exit_code),
        "duration_ms": record.run.as_ref().map(|r| r.duration_ms),
        "stdout_tail": record.run.as_ref().map(|r| r.stdout.tail.clone()),
        "stderr_tail": record.run.as_ref().map(|r| r.stderr.tail.clone()),
        "transfer_digest": transfer::transfer_digest(bytes), "transfer_size": bytes.len(),
        "retained": ex.path("transfer").display().to_string(), "upload": upload,
    })
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
    Ok(
        json!({"execution_operation_id": operation, "transfer_digest": transfer::transfer_digest(&bytes),
              "transfer_size": bytes.len(), "upload": answer}),
    )
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
fn execute(
    req: &CollectRequest<'_>,
    snapshots: &Path,
    snap: &Path,
    d: &CollectorDescriptor,
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
    let launcher = std::env::current_exe()
        .map_err(|e| Error::new(Code::Io, format!("cannot locate agent-task: {e}")))?;
    let plan = runtime::Plan {
        oci_image: d.oci_image.as_deref(),
        limits: d.limits.sandbox.as_ref(),
        launcher: &launcher,
    };
    let identity = match runtime::probe(d.runtime, &plan) {
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
        launcher: &launcher,
    };
    crate::collector::test_run_log(&format!("run {}", d.execution_operation_id));
    let run = runtime::run(&identity, &spec, req.clock);
    let snap_removed = sdir.remove();
    let mut out = match run {
        Ok(o) => o,
        Err(e) => {
            return Ok(failed(
                ExecutionStatus::RuntimeUnavailable,
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
    let cas = dir.cas();
    let mbytes = cas.read(&d.manifest_sha256, None, MAX_MANIFEST_BYTES)?;
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
            let bytes = cas.read(&e.sha256, Some(e.size), MAX_LINK_TARGET)?;
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
    let header = TransferHeader {
        version: 1,
        kind: "command".into(),
        audience: d.audience.clone(),
        repository: d.repository.clone(),
        profile: d.profile.clone(),
        step_id: d.step_id.clone(),
        collector_profile_id: d.collector_profile_id.clone(),
        collector_profile_digest: d.collector_profile_digest.clone(),
        task_id: d.task_id.clone(),
        task_digest: d.task_digest.clone(),
        attempt_id: d.attempt_id.clone(),
        attempt_digest: d.attempt_digest.clone(),
        execution_operation_id: d.execution_operation_id.clone(),
        fence: d.fence,
        origin: d.origin.clone(),
        registration: d.registration.clone(),
        request_digest: request.digest()?,
        collector_identity: CollectorIdentity {
            runtime: d.runtime.as_str().into(),
            runtime_identity_digest: record.runtime_identity.as_ref().map(|i| i.digest.clone()),
            agent_task_version: env!("CARGO_PKG_VERSION").into(),
        },
        upload_request_id: crate::wire::random_id("up")?,
        records: vec![],
    };
    transfer::seal(header, &[request.bytes()?, canonical_bytes(record)?], key)
}
