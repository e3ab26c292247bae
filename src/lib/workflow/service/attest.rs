//! Attestations of landed commits and their verification, as the faces
//! reach them (`authority key`, `attest`, `verify`): the attestation
//! module's operations and request types, re-exported.

pub use crate::workflow::attest::key::{Format as KeyFormat, read_public_key_file};
pub use crate::workflow::attest::verify::{VerifyRequest, verify};
pub use crate::workflow::attest::{AttestRequest, attest, show_key};
