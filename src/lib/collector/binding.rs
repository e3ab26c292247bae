//! The attempt binding: what every collector descriptor and transfer
//! header binds of the claimed attempt, whatever the kind (the audience,
//! the repository, workflow profile and step, the Change and its subject,
//! the task, the attempt, its execution operation and fence, the
//! originating actor and the registration). The authority derives it once
//! from the journal and its own rows (`workflow::authority::collector::
//! derive_binding`); each descriptor kind is that binding plus its
//! profile ([`BoundDescriptor`]), and a transfer header is built from it
//! ([`AttemptBinding::header`]) and checked against it
//! ([`AttemptBinding::check_header`]) here alone.
//!
//! The descriptors stay flat on the wire (their fields, their order and
//! their strict decoding are unchanged): the binding is how the code
//! handles them, not a new member.

use super::review::types::ReviewProfile;
use super::review::wire::{KIND as REVIEW_KIND, ReviewDescriptor};
use super::transfer::{
    CollectorDescriptor, CollectorIdentity, CollectorProfile, Origin, RegistrationBinding,
    TransferHeader,
};
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;

/// The claimed attempt a collector execution is bound to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptBinding {
    /// The authority's audience id.
    pub audience: String,
    /// Repository.
    pub repository: String,
    /// Workflow profile.
    pub profile: String,
    /// Step.
    pub step_id: String,
    /// Change.
    pub change_id: String,
    /// Change version of the subject.
    pub change_version: u64,
    /// The subject's revision.
    pub revision: Sha256Hex,
    /// Its manifest.
    pub manifest_sha256: Sha256Hex,
    /// Task.
    pub task_id: String,
    /// Task digest.
    pub task_digest: Sha256Hex,
    /// Attempt.
    pub attempt_id: String,
    /// Attempt digest.
    pub attempt_digest: Sha256Hex,
    /// The attempt's execution operation.
    pub execution_operation_id: String,
    /// The attempt's fence.
    pub fence: u64,
    /// The originating actor at its grant generation.
    pub origin: Origin,
    /// The registration the attempt was claimed for.
    pub registration: RegistrationBinding,
}

/// A descriptor kind: the attempt binding plus the kind's profile.
pub trait BoundDescriptor: Sized {
    /// The transfer kind (`command`, `review`).
    const KIND: &'static str;
    /// The installed profile a descriptor of this kind names.
    type Profile;
    /// The descriptor of `binding` under profile `p`.
    fn from_binding(binding: AttemptBinding, p: &Self::Profile) -> Result<Self>;
    /// The attempt binding of the descriptor.
    fn binding(&self) -> AttemptBinding;
    /// The profile id and digest the descriptor names.
    fn profile_ref(&self) -> (&str, &Sha256Hex);
}

impl BoundDescriptor for CollectorDescriptor {
    const KIND: &'static str = "command";
    type Profile = CollectorProfile;

    fn from_binding(b: AttemptBinding, p: &CollectorProfile) -> Result<CollectorDescriptor> {
        Ok(CollectorDescriptor {
            version: 1,
            audience: b.audience,
            repository: b.repository,
            profile: b.profile,
            step_id: b.step_id,
            change_id: b.change_id,
            change_version: b.change_version,
            revision: b.revision,
            manifest_sha256: b.manifest_sha256,
            task_id: b.task_id,
            task_digest: b.task_digest,
            attempt_id: b.attempt_id,
            attempt_digest: b.attempt_digest,
            execution_operation_id: b.execution_operation_id,
            fence: b.fence,
            origin: b.origin,
            registration: b.registration,
            collector_profile_id: p.profile_id.clone(),
            collector_profile_digest: p.digest()?,
            recipe: p.recipe.clone(),
            runtime: p.runtime,
            runtime_identity_digest: p.runtime_identity_digest.clone(),
            oci_image: p.oci_image.clone(),
            limits: p.limits.clone(),
        })
    }

    fn binding(&self) -> AttemptBinding {
        AttemptBinding {
            audience: self.audience.clone(),
            repository: self.repository.clone(),
            profile: self.profile.clone(),
            step_id: self.step_id.clone(),
            change_id: self.change_id.clone(),
            change_version: self.change_version,
            revision: self.revision.clone(),
            manifest_sha256: self.manifest_sha256.clone(),
            task_id: self.task_id.clone(),
            task_digest: self.task_digest.clone(),
            attempt_id: self.attempt_id.clone(),
            attempt_digest: self.attempt_digest.clone(),
            execution_operation_id: self.execution_operation_id.clone(),
            fence: self.fence,
            origin: self.origin.clone(),
            registration: self.registration.clone(),
        }
    }

    fn profile_ref(&self) -> (&str, &Sha256Hex) {
        (&self.collector_profile_id, &self.collector_profile_digest)
    }
}

impl BoundDescriptor for ReviewDescriptor {
    const KIND: &'static str = REVIEW_KIND;
    type Profile = ReviewProfile;

    fn from_binding(b: AttemptBinding, p: &ReviewProfile) -> Result<ReviewDescriptor> {
        Ok(ReviewDescriptor {
            version: 1,
            kind: REVIEW_KIND.into(),
            audience: b.audience,
            repository: b.repository,
            profile: b.profile,
            step_id: b.step_id,
            change_id: b.change_id,
            change_version: b.change_version,
            revision: b.revision,
            manifest_sha256: b.manifest_sha256,
            task_id: b.task_id,
            task_digest: b.task_digest,
            attempt_id: b.attempt_id,
            attempt_digest: b.attempt_digest,
            execution_operation_id: b.execution_operation_id,
            fence: b.fence,
            origin: b.origin,
            registration: b.registration,
            review_profile_id: p.profile_id.clone(),
            review_profile_digest: p.digest()?,
            basis: p.basis,
            model: p.model.clone(),
        })
    }

    fn binding(&self) -> AttemptBinding {
        AttemptBinding {
            audience: self.audience.clone(),
            repository: self.repository.clone(),
            profile: self.profile.clone(),
            step_id: self.step_id.clone(),
            change_id: self.change_id.clone(),
            change_version: self.change_version,
            revision: self.revision.clone(),
            manifest_sha256: self.manifest_sha256.clone(),
            task_id: self.task_id.clone(),
            task_digest: self.task_digest.clone(),
            attempt_id: self.attempt_id.clone(),
            attempt_digest: self.attempt_digest.clone(),
            execution_operation_id: self.execution_operation_id.clone(),
            fence: self.fence,
            origin: self.origin.clone(),
            registration: self.registration.clone(),
        }
    }

    fn profile_ref(&self) -> (&str, &Sha256Hex) {
        (&self.review_profile_id, &self.review_profile_digest)
    }
}

impl AttemptBinding {
    /// The unsigned header of a transfer of kind `kind` for this attempt
    /// under profile (`profile_id`, `profile_digest`), answering the
    /// request `request_digest`; a fresh upload request id.
    pub fn header(
        &self,
        kind: &str,
        (profile_id, profile_digest): (&str, &Sha256Hex),
        request_digest: Sha256Hex,
        collector_identity: CollectorIdentity,
    ) -> Result<TransferHeader> {
        Ok(TransferHeader {
            version: 1,
            kind: kind.into(),
            audience: self.audience.clone(),
            repository: self.repository.clone(),
            profile: self.profile.clone(),
            step_id: self.step_id.clone(),
            collector_profile_id: profile_id.into(),
            collector_profile_digest: profile_digest.clone(),
            task_id: self.task_id.clone(),
            task_digest: self.task_digest.clone(),
            attempt_id: self.attempt_id.clone(),
            attempt_digest: self.attempt_digest.clone(),
            execution_operation_id: self.execution_operation_id.clone(),
            fence: self.fence,
            origin: self.origin.clone(),
            registration: self.registration.clone(),
            request_digest,
            collector_identity,
            upload_request_id: crate::wire::random_id("up")?,
            records: vec![],
        })
    }

    /// Refuses a header naming another profile than (`profile_id`,
    /// `profile_digest`) (`profile_invalid`, naming `profile_kind`, e.g.
    /// "review profile") or not binding exactly this task, attempt,
    /// origin and registration (`transfer_invalid`).
    pub fn check_header(
        &self,
        h: &TransferHeader,
        (profile_id, profile_digest): (&str, &Sha256Hex),
        profile_kind: &str,
    ) -> Result<()> {
        if h.collector_profile_id != profile_id || &h.collector_profile_digest != profile_digest {
            return Err(Error::new(
                Code::ProfileInvalid,
                format!("the transfer names another {profile_kind}"),
            ));
        }
        if h.repository != self.repository
            || h.profile != self.profile
            || h.step_id != self.step_id
            || h.task_id != self.task_id
            || h.task_digest != self.task_digest
            || h.attempt_digest != self.attempt_digest
            || h.execution_operation_id != self.execution_operation_id
            || h.fence != self.fence
            || h.origin != self.origin
            || h.registration != self.registration
        {
            return Err(Error::new(
                Code::TransferInvalid,
                "the header does not bind this exact task, attempt, origin and registration",
            ));
        }
        Ok(())
    }
}
