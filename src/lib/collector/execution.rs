//! What every collector kind shares (`collect` of a command and of a
//! review): the request and the authority it answers to, the uploader,
//! the retained sealed files of one execution, the deployment checks, and
//! the one durable driver ([`drive`]) over a [`CollectorKind`]: hold the
//! execution, reserve or resume, run or reuse the record, sign, retain,
//! upload. The kinds are impls (`collect::Command`,
//! `review::collect::ReviewKind`); the layout is in `collect`'s module docs.

use super::state::StateKey;
use super::transfer::{CollectorDescriptor, MAX_TRANSFER_BYTES};
use crate::clock::Clock;
use crate::error::{Code, Error, Result};
use crate::store::private_fs;
use crate::wire::digest::Sha256Hex;
use serde_json::Value;
use std::path::{Path, PathBuf};

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
    ) -> Result<super::review::types::ReviewProfile>;

    /// The installed review profile a review descriptor names (read-only,
    /// whatever the attempt's state: a finished review only re-signs).
    fn review_profile(
        &self,
        d: &super::review::wire::ReviewDescriptor,
    ) -> Result<super::review::types::ReviewProfile>;
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
    /// Every writer of the directory holds this lock, so a temp file found
    /// there once it is held is a killed writer's orphan, and is removed.
    pub(crate) fn hold(&self) -> Result<Option<crate::store::DirLock>> {
        private_fs::ensure_private_dir(&self.dir)?;
        let held = crate::store::try_lock_dir(&self.dir)?;
        if held.is_some() {
            // Best effort: what cannot be removed stays, harmless.
            let _ = private_fs::sweep_temp_files(
                &self.dir,
                private_fs::TEMP_PREFIX,
                std::time::SystemTime::now(),
                std::time::Duration::ZERO,
            );
        }
        Ok(held)
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

/// One kind of collector execution (a command, a review): what
/// [`drive`] asks of it. Everything else (the collector directory, the
/// key, the execution's lock, the order of the retained files, signing,
/// retaining before upload) is the driver's, the same for every kind.
pub(crate) trait CollectorKind {
    /// The descriptor the authority derived for the claimed attempt.
    type Descriptor;
    /// What the execution settled under its lock before any record: the
    /// reservation (retained or made now) and what the record answers.
    type Started;
    /// The record the execution signs.
    type Record;
    /// Read-only work a fresh execution will need, started before the
    /// execution is held (see [`CollectorKind::prepare`]).
    type Prepared;

    /// The descriptor's execution operation.
    fn operation(d: &Self::Descriptor) -> &str;
    /// The registration key the descriptor names.
    fn key_id(d: &Self::Descriptor) -> &str;
    /// Refusals once the collector directory is open, before the
    /// execution is; then the read-only work a fresh execution will need,
    /// started now so that it overlaps opening and holding the execution
    /// and the authority's recheck (whatever [`CollectorKind::start`]
    /// does not use is dropped, and nothing of it stays behind).
    fn prepare(cdir: &Path, d: &Self::Descriptor) -> Result<Self::Prepared>;
    /// What a collect answers while another one holds the execution and
    /// its transfer is already signed (reads only).
    fn in_progress(
        req: &CollectRequest<'_>,
        ex: &Execution,
        d: &Self::Descriptor,
        transfer: Vec<u8>,
        record: Vec<u8>,
    ) -> Result<Value>;
    /// Under the held execution: resumes its retained reservation, or
    /// rechecks the descriptor with the authority and reserves it.
    fn start(
        req: &CollectRequest<'_>,
        cdir: &Path,
        ex: &Execution,
        d: &Self::Descriptor,
        prepared: Self::Prepared,
    ) -> Result<Self::Started>;
    /// Decodes a retained record, which must answer what was started.
    fn decode_record(s: &Self::Started, bytes: &[u8]) -> Result<Self::Record>;
    /// Makes the record: the execution proper (or, for a reservation
    /// retained without one, whatever the kind makes of it).
    fn run(
        req: &CollectRequest<'_>,
        cdir: &Path,
        seed: &[u8; 32],
        ex: &Execution,
        d: &Self::Descriptor,
        s: &Self::Started,
    ) -> Result<Self::Record>;
    /// The record's retained (canonical) bytes.
    fn record_bytes(r: &Self::Record) -> Result<Vec<u8>>;
    /// The signed transfer of a record.
    fn seal(
        d: &Self::Descriptor,
        s: &Self::Started,
        r: &Self::Record,
        key: &crate::wire::ed25519::Keypair,
    ) -> Result<Vec<u8>>;
    /// What `collect` prints.
    fn answer(
        d: &Self::Descriptor,
        s: &Self::Started,
        r: &Self::Record,
        transfer: &[u8],
        ex: &Execution,
        upload: Value,
    ) -> Result<Value>;
}

/// Runs (or resumes) one execution of kind `K` durably: open the
/// collector directory and the execution, hold it, reserve or resume,
/// reuse or make the record, sign and retain the transfer, upload it.
pub(crate) fn drive<K: CollectorKind>(
    req: &CollectRequest<'_>,
    up: &dyn Uploader,
    d: &K::Descriptor,
) -> Result<Value> {
    let (cdir, seed) = open_collector(req.root, req.collector_dir)?;
    let prepared = K::prepare(&cdir, d)?;
    let (key, ex) = open_execution(&cdir, &seed, K::key_id(d), K::operation(d))?;
    // Held until this function returns (upload included): a second collect
    // of the same execution meanwhile touches nothing of it.
    let Some(_held) = ex.hold()? else {
        return held_elsewhere(&ex, K::operation(d), |bytes, record| {
            K::in_progress(req, &ex, d, bytes, record)
        });
    };
    // The collector directory's own files (the runtime digest cache, the
    // key) are written by every collect and `keygen` without a common
    // lock: only an orphan old enough that no write can still be in
    // progress is removed.
    let _ = private_fs::sweep_temp_files(
        &cdir,
        private_fs::TEMP_PREFIX,
        std::time::SystemTime::now(),
        crate::store::TEMP_SWEEP_AGE,
    );
    // Progress only between the calls below, each of which takes and
    // releases the data directory's lock and transactions itself: nothing
    // is drawn while one is held (only this execution's own hold, which no
    // other command waits on).
    crate::progress::phase("rechecking and reserving", None);
    let started = K::start(req, &cdir, &ex, d, prepared)?;
    let (bytes, record) = match ex.read("transfer", MAX_TRANSFER_BYTES)? {
        Some(bytes) => {
            let record = ex.read("record", MAX_TRANSFER_BYTES)?.ok_or_else(|| {
                Error::new(
                    Code::CollectorStateTampered,
                    "a retained transfer without its record",
                )
            })?;
            (bytes, K::decode_record(&started, &record)?)
        }
        None => {
            let record = match ex.read("record", MAX_TRANSFER_BYTES)? {
                Some(b) => K::decode_record(&started, &b)?,
                None => {
                    crate::progress::phase("running", None);
                    let record = K::run(req, &cdir, &seed, &ex, d, &started)?;
                    ex.write("record", &K::record_bytes(&record)?)?;
                    crate::collector::crash_point("after_run");
                    record
                }
            };
            crate::progress::phase("signing and retaining", None);
            let bytes = K::seal(d, &started, &record, &key)?;
            ex.write("transfer", &bytes)?;
            crate::collector::crash_point("after_sign");
            (bytes, record)
        }
    };
    crate::progress::phase("importing the evidence", None);
    let uploaded = up.upload(&bytes)?;
    ex.write("upload", &serde_json::to_vec(&uploaded)?)?;
    K::answer(d, &started, &record, &bytes, &ex, uploaded)
}
