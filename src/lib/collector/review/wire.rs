//! What the wiring adds around the controller: the authority-derived
//! descriptor of a claimed review execution, the snapshot of a revision
//! read from the authority's content-addressed store, and the record kinds
//! of a review transfer (`docs/transfer.md`).

use super::plan::{EntryKind, Snapshot, SnapshotEntry};
use super::types::{Basis, ReviewProfile, ReviewRequest, ReviewSubject};
use crate::collector::transfer::{Origin, RegistrationBinding};
use crate::contract::snapshot::{DOMAIN_REVISION, MODE_LINK, Manifest};
use crate::error::{Code, Error, Result};
use crate::store::BlobStore;
use crate::wire::digest::{Sha256Hex, domain_digest};
use serde::{Deserialize, Serialize};

/// The `kind` of a review descriptor and of a review transfer header.
pub const KIND: &str = "review";
/// Record kinds of a review transfer, in order.
pub const REVIEW_RECORDS: [&str; 2] = ["review_request", "review_record"];
/// Domain of a review descriptor digest.
pub const DOMAIN_DESCRIPTOR: &str = "agent-task.review-descriptor.v1";
/// Largest manifest a review reads.
const MAX_MANIFEST_BYTES: u64 = 256 * 1024 * 1024;
/// Largest single file a review reads (the plan refuses more selected
/// bytes than `max_calls × max_source_bytes_per_call` = 256 MiB anyway).
const MAX_FILE_BYTES: u64 = 256 * 1024 * 1024;

/// The authority-derived descriptor of one claimed review execution: the
/// exact subject and the installed review profile it runs under, by id and
/// digest. It names no executable, model choice, credential or budget the
/// collector would take from it: `collect` loads the profile itself from
/// the authority and requires this digest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewDescriptor {
    /// Always 1.
    pub version: u32,
    /// Always `review`.
    pub kind: String,
    /// The authority (data directory id).
    pub audience: String,
    /// Repository.
    pub repository: String,
    /// Workflow profile.
    pub profile: String,
    /// Step.
    pub step_id: String,
    /// Change.
    pub change_id: String,
    /// Change version.
    pub change_version: u64,
    /// Revision reviewed.
    pub revision: Sha256Hex,
    /// CAS digest of its manifest bytes.
    pub manifest_sha256: Sha256Hex,
    /// Task.
    pub task_id: String,
    /// Task digest.
    pub task_digest: Sha256Hex,
    /// Attempt.
    pub attempt_id: String,
    /// Attempt digest.
    pub attempt_digest: Sha256Hex,
    /// Execution operation id.
    pub execution_operation_id: String,
    /// Fence.
    pub fence: u64,
    /// Originating actor and grant.
    pub origin: Origin,
    /// Registration.
    pub registration: RegistrationBinding,
    /// Installed review profile.
    pub review_profile_id: String,
    /// Its digest.
    pub review_profile_digest: Sha256Hex,
    /// The profile's basis (informational; the profile decides).
    pub basis: Basis,
    /// The profile's model (informational; the profile decides).
    pub model: String,
}

impl ReviewDescriptor {
    /// The exact subject of the review request.
    pub fn subject(&self) -> ReviewSubject {
        ReviewSubject {
            repository: self.repository.clone(),
            task_id: self.task_id.clone(),
            task_digest: self.task_digest.clone(),
            attempt_id: self.attempt_id.clone(),
            attempt_digest: self.attempt_digest.clone(),
            execution_operation_id: self.execution_operation_id.clone(),
            fence: self.fence,
            revision: self.revision.clone(),
            manifest_sha256: self.manifest_sha256.clone(),
        }
    }

    /// The request this descriptor implies under `profile` (which must be
    /// the one it names).
    pub fn request(&self, profile: &ReviewProfile) -> Result<ReviewRequest> {
        if profile.profile_id != self.review_profile_id
            || profile.digest()? != self.review_profile_digest
        {
            return Err(Error::new(
                Code::ProfileInvalid,
                "the review profile is not the one the descriptor names",
            ));
        }
        ReviewRequest::new(self.subject(), profile)
    }

    /// `domain_digest(DOMAIN_DESCRIPTOR, canonical bytes)`.
    pub fn digest(&self) -> Result<Sha256Hex> {
        Ok(domain_digest(
            DOMAIN_DESCRIPTOR,
            &crate::contract::canonical_bytes(self)?,
        ))
    }
}

/// The immutable revision as the authority's CAS holds it: the manifest
/// (checked against the revision digest) and each entry read and verified
/// on demand.
pub struct CasSnapshot {
    cas: std::sync::Arc<dyn BlobStore>,
    manifest: Manifest,
}

impl CasSnapshot {
    /// Loads the manifest `manifest_sha256` and checks that it is `revision`.
    pub fn open(
        cas: std::sync::Arc<dyn BlobStore>,
        revision: &Sha256Hex,
        manifest_sha256: &Sha256Hex,
    ) -> Result<CasSnapshot> {
        let bytes = cas.get(manifest_sha256, None, MAX_MANIFEST_BYTES)?;
        if domain_digest(DOMAIN_REVISION, &bytes) != *revision {
            return Err(Error::new(
                Code::IntegrityError,
                "the manifest is not the descriptor's revision",
            ));
        }
        let manifest: Manifest = serde_json::from_slice(&bytes)
            .map_err(|e| Error::new(Code::IntegrityError, format!("manifest: {e}")))?;
        Ok(CasSnapshot { cas, manifest })
    }
}

impl Snapshot for CasSnapshot {
    fn entries(&self) -> Result<Vec<SnapshotEntry>> {
        let mut out: Vec<SnapshotEntry> = self
            .manifest
            .entries
            .iter()
            .map(|e| SnapshotEntry {
                path: e.path.clone(),
                kind: if e.mode == MODE_LINK {
                    EntryKind::Link
                } else {
                    EntryKind::File
                },
                size: e.size,
                sha256: e.sha256.clone(),
            })
            .collect();
        out.sort_by(|a, b| a.path.as_bytes().cmp(b.path.as_bytes()));
        out.dedup_by(|a, b| a.path == b.path);
        Ok(out)
    }

    fn read(&self, entry: &SnapshotEntry) -> Result<Vec<u8>> {
        if entry.size > MAX_FILE_BYTES {
            return Err(Error::new(
                Code::TooLarge,
                format!("{} is over {MAX_FILE_BYTES} bytes", entry.path),
            ));
        }
        self.cas
            .get(&entry.sha256, Some(entry.size), MAX_FILE_BYTES)
    }
}
