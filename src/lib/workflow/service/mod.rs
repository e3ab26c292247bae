//! The workflow service, the only code that opens a `store::Session`: the
//! agent operations ([`ops`], [`facade`]: one request struct and one
//! library call each, run in one session), the operator writes
//! ([`admin`]: the authority checks and stages, the service runs the
//! write), receipts and landing ([`receipt`]), collection ([`collect`]),
//! the workspace endpoint ([`remote`]) and whole-directory set-up
//! ([`setup`]: `init`, `info`).

pub mod admin;
pub mod collect;
pub mod facade;
pub mod land;
pub mod ops;
pub mod receipt;
pub mod remote;
pub mod setup;

/// The one git runner (`workflow::git`), for the faces that run git.
pub use crate::workflow::git;

#[cfg(test)]
mod model_tests;
