//! The command collector: `collect` and `retry-upload`.
//!
//! ```text
//! COLLECTOR_DIR/                      0700, never inside a candidate tree
//!   signing-key.ed25519               0600
//!   executions/<sha256(exec op)>/     one single-digest component per execution
//!     reservation.json                written and fsynced before any external effect
//!     record.json                     the ExecutionRecord (after the run)
//!     transfer.bin                    the signed transfer (retained before upload)
//!     upload.json                     the authority's answer
//!   snapshots/<sha256(attempt digest)>/   the materialised revision (removed after the run)
//!   scratch/<sha256(attempt digest)>/     HOME inside the sandbox (removed by the runtime)
//! ```
//!
//! Reopening retained state never reruns the command: a reservation
//! without a record becomes a typed `interrupted` failed record.

use super::runtime::{self, RunSpec};
use super::transfer::{
    self, CollectorDescriptor, CollectorIdentity, ExecutionOutcome, ExecutionRecord,
    ExecutionRequest, ExecutionStatus, MAX_TRANSFER_BYTES, TransferHeader,
};
use crate::authority::admin;
use crate::authority::snapshot::{DOMAIN_REVISION, MODE_EXEC, MODE_LINK, Manifest};
use crate::clock::{Clock, rfc3339_millis};
use crate::error::{Code, Error, Result};
use crate::store::{DataDir, private_fs};
use crate::task::contract::{canonical_bytes, check_relative_path};
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest descriptor file.
pub const MAX_DESCRIPTOR_BYTES: u64 = 64 * 1024;
/// Largest manifest materialised.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;

/// Where signed transfers go. Locally: the authority of `--data-dir`; an
/// HTTP upload endpoint implements the same trait.
pub trait Uploader {
    /// Sends the exact retained bytes; returns the authority's answer.
    fn upload(&self, bytes: &[u8]) -> Result<Value>;
}

/// Uploads by importing into a local authority.
pub struct LocalUpload<'a> {
    /// Data directory.
    pub root: &'a Path,
    /// Lock wait.
    pub timeout: Duration,
    /// Clock.
    pub clock: &'a dyn Clock,
    /// Token text.
    pub token: &'a str,
}

impl Uploader for LocalUpload<'_> {
    fn upload(&self, bytes: &[u8]) -> Result<Value> {
        crate::authority::collector::import(self.root, self.timeout, self.clock, self.token, bytes)
    }
}

/// The durable reservation of one execution.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Reservation {
    version: u32,
    descriptor: CollectorDescriptor,
    request_digest: Sha256Hex,
    reserved_at: String,
}

/// `collect` request.
pub struct CollectRequest<'a> {
    /// Data directory of the authority (read for rechecks and the CAS).
    pub root: &'a Path,
    /// Clock.
    pub clock: &'a dyn Clock,
    /// Token text.
    pub token: &'a str,
    /// Descriptor file bytes.
    pub descriptor: &'a [u8],
    /// Collector directory.
    pub collector_dir: &'a Path,
}

fn exec_dir(collector_dir: &Path, op: &str) -> PathBuf {
    collector_dir
        .join("executions")
        .join(Sha256Hex::digest(op.as_bytes()).as_str())
}

fn read_bounded(path: &Path, max: u64) -> Result<Vec<u8>> {
    let f = private_fs::open_nofollow_read(path)?;
    let len = f.metadata().map_err(|e| Error::io("stat", path, e))?.len();
    if len > max {
        return Err(Error::new(
            Code::TooLarge,
            format!("{} is over {max} bytes", path.display()),
        ));
    }
    let mut b = Vec::new();
    f.take(max + 1)
        .read_to_end(&mut b)
        .map_err(|e| Error::io("read", path, e))?;
    Ok(b)
}

fn exists_private(p: &Path) -> Result<bool> {
    private_fs::check_private(p, private_fs::Kind::File)
}

/// Runs the recipe of a claimed descriptor once, durably: reserve, run,
/// record, sign, retain, upload. Exits successfully whatever the test said.
pub fn collect(req: &CollectRequest<'_>, up: &dyn Uploader) -> Result<Value> {
    if req.descriptor.len() as u64 > MAX_DESCRIPTOR_BYTES {
        return Err(Error::new(Code::TooLarge, "descriptor is over 64 KiB"));
    }
    let d: CollectorDescriptor = crate::wire::json::decode(
        req.descriptor,
        crate::wire::json::Limits::bytes(MAX_DESCRIPTOR_BYTES as usize),
        Code::InvalidInput,
        "collector descriptor",
    )?;
    let cdir = std::path::absolute(req.collector_dir)
        .map_err(|e| Error::io("resolve", req.collector_dir, e))?;
    let key = admin::load_signing_key(&cdir)?;
    if crate::task::contract::key_id(&key.public_key()) != d.registration.key_id {
        return Err(Error::new(
            Code::EnrollmentInvalid,
            "the collector directory's key is not the registration's key",
        ));
    }
    private_fs::ensure_private_dir(&cdir.join("executions"))?;
    let edir = exec_dir(&cdir, &d.execution_operation_id);
    let rpath = edir.join("reservation.json");
    let resumed = exists_private(&rpath)?;
    if resumed {
        let r: Reservation =
            serde_json::from_slice(&read_bounded(&rpath, MAX_DESCRIPTOR_BYTES * 2)?)?;
        if r.descriptor != d {
            return Err(Error::new(
                Code::DescriptorMismatch,
                "this execution was reserved under another descriptor",
            ));
        }
    } else {
        crate::authority::collector::recheck_descriptor(req.root, req.clock, req.token, &d)?;
        crate::collector::crash_point("before_reserve");
        private_fs::ensure_private_dir(&edir)?;
        let res = Reservation {
            version: 1,
            request_digest: ExecutionRequest::from_descriptor(&d).digest()?,
            descriptor: d.clone(),
            reserved_at: rfc3339_millis(req.clock.now()),
        };
        private_fs::write_atomic(&rpath, &canonical_bytes(&res)?)?;
        crate::collector::crash_point("after_reserve");
    }
    let tpath = edir.join("transfer.bin");
    let recpath = edir.join("record.json");
    let bytes = if exists_private(&tpath)? {
        read_bounded(&tpath, MAX_TRANSFER_BYTES)?
    } else {
        let record = if exists_private(&recpath)? {
            serde_json::from_slice(&read_bounded(&recpath, MAX_TRANSFER_BYTES)?)?
        } else {
            let record = if resumed {
                interrupted(&d)?
            } else {
                execute(req, &cdir, &d)?
            };
            private_fs::write_atomic(&recpath, &canonical_bytes(&record)?)?;
            crate::collector::crash_point("after_run");
            record
        };
        let bytes = seal(&d, &record, &key)?;
        private_fs::write_atomic(&tpath, &bytes)?;
        crate::collector::crash_point("after_sign");
        bytes
    };
    let record: ExecutionRecord =
        serde_json::from_slice(&read_bounded(&recpath, MAX_TRANSFER_BYTES)?)?;
    let answer = up.upload(&bytes)?;
    private_fs::write_atomic(&edir.join("upload.json"), &serde_json::to_vec(&answer)?)?;
    Ok(json!({
        "execution_operation_id": d.execution_operation_id, "task_id": d.task_id, "attempt_id": d.attempt_id,
        "resumed": resumed, "status": record.status, "outcome": record.outcome, "detail": record.detail,
        "exit_code": record.run.as_ref().and_then(|r| r.exit_code),
        "duration_ms": record.run.as_ref().map(|r| r.duration_ms),
        "stdout_tail": record.run.as_ref().map(|r| r.stdout.tail.clone()),
        "stderr_tail": record.run.as_ref().map(|r| r.stderr.tail.clone()),
        "transfer_digest": transfer::transfer_digest(&bytes), "transfer_size": bytes.len(),
        "retained": tpath.display().to_string(), "upload": answer,
    }))
}

/// `retry-upload`: resends the identical retained bytes of an execution.
pub fn retry_upload(collector_dir: &Path, operation: &str, up: &dyn Uploader) -> Result<Value> {
    crate::task::contract::check_id("operation", operation)?;
    let cdir =
        std::path::absolute(collector_dir).map_err(|e| Error::io("resolve", collector_dir, e))?;
    if !private_fs::check_private(&cdir, private_fs::Kind::Dir)? {
        return Err(Error::new(Code::NotFound, "no collector directory"));
    }
    let edir = exec_dir(&cdir, operation);
    let tpath = edir.join("transfer.bin");
    if !exists_private(&tpath)? {
        return Err(Error::new(
            Code::NotFound,
            "no retained transfer for this execution (rerun collect to finish it)",
        ));
    }
    let bytes = read_bounded(&tpath, MAX_TRANSFER_BYTES)?;
    let answer = up.upload(&bytes)?;
    private_fs::write_atomic(&edir.join("upload.json"), &serde_json::to_vec(&answer)?)?;
    Ok(
        json!({"execution_operation_id": operation, "transfer_digest": transfer::transfer_digest(&bytes),
              "transfer_size": bytes.len(), "upload": answer}),
    )
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

fn execute(
    req: &CollectRequest<'_>,
    cdir: &Path,
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
    let identity = match runtime::probe(d.runtime, d.oci_image.as_deref()) {
        Ok(id) if id.digest == d.runtime_identity_digest => id,
        Ok(id) => {
            return Ok(failed(
                ExecutionStatus::RuntimeIdentityMismatch,
                Some(id),
                "the runtime on this host is not the pinned one".into(),
            ));
        }
        Err(e) => {
            let status = if e.code() == Code::OciImageUnavailable {
                ExecutionStatus::ImageUnavailable
            } else {
                ExecutionStatus::RuntimeUnavailable
            };
            return Ok(failed(
                status,
                None,
                e.message().chars().take(512).collect(),
            ));
        }
    };
    let tag = Sha256Hex::digest(d.attempt_digest.as_str().as_bytes());
    for p in ["snapshots", "scratch"] {
        private_fs::ensure_private_dir(&cdir.join(p))?;
    }
    let snap = cdir.join("snapshots").join(tag.as_str());
    let scratch = cdir.join("scratch").join(tag.as_str());
    for p in [&snap, &scratch] {
        if std::fs::symlink_metadata(p).is_ok() {
            std::fs::remove_dir_all(p).map_err(|e| Error::io("remove", p, e))?;
        }
        private_fs::ensure_private_dir(p)?;
    }
    if let Err(e) = materialise(req.root, d, &snap) {
        let _ = std::fs::remove_dir_all(&snap);
        let _ = std::fs::remove_dir_all(&scratch);
        return Ok(failed(
            ExecutionStatus::SnapshotUnavailable,
            Some(identity),
            e.message().chars().take(512).collect(),
        ));
    }
    let spec = RunSpec {
        snapshot: &snap,
        scratch: &scratch,
        argv: &d.recipe.argv,
        env: &[],
        timeout: Duration::from_millis(d.recipe.timeout_ms),
        max_output_bytes: d.limits.max_output_bytes,
        tail_bytes: usize::try_from(d.limits.tail_bytes).unwrap_or(4096),
        oci_image: d.oci_image.as_deref(),
    };
    let run = runtime::run(&identity, &spec, req.clock);
    let snap_removed = make_writable_and_remove(&snap);
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

fn make_writable_and_remove(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    for e in ignore_walk(p) {
        if let Ok(m) = std::fs::symlink_metadata(&e)
            && m.is_dir()
        {
            let _ = std::fs::set_permissions(&e, std::fs::Permissions::from_mode(0o700));
        }
    }
    match std::fs::remove_dir_all(p) {
        Ok(()) => true,
        Err(e) => e.kind() == std::io::ErrorKind::NotFound,
    }
}

fn ignore_walk(p: &Path) -> Vec<PathBuf> {
    let mut out = vec![p.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = std::fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}

/// Writes the exact revision from the CAS into `snap` (which exists, empty).
fn materialise(root: &Path, d: &CollectorDescriptor, snap: &Path) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
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
    for e in &m.entries {
        check_relative_path(&e.path)?;
        let target = snap.join(&e.path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|x| Error::io("create", parent, x))?;
        }
        let bytes = cas.read(
            &e.sha256,
            Some(e.size),
            crate::authority::snapshot::MAX_FILE_BYTES,
        )?;
        if e.mode == MODE_LINK {
            let t = String::from_utf8(bytes)
                .map_err(|_| Error::new(Code::InvalidInput, "link target is not UTF-8"))?;
            std::os::unix::fs::symlink(&t, &target)
                .map_err(|x| Error::io("symlink", &target, x))?;
            continue;
        }
        std::fs::write(&target, &bytes).map_err(|x| Error::io("write", &target, x))?;
        let mode = if e.mode == MODE_EXEC { 0o755 } else { 0o644 };
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode))
            .map_err(|x| Error::io("chmod", &target, x))?;
    }
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
            runtime: d.runtime,
            runtime_identity_digest: record.runtime_identity.as_ref().map(|i| i.digest.clone()),
            agent_task_version: env!("CARGO_PKG_VERSION").into(),
        },
        upload_request_id: crate::wire::random_id("up")?,
        records: vec![],
    };
    transfer::seal(header, &[request.bytes()?, canonical_bytes(record)?], key)
}
