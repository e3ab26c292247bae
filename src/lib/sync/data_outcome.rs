//! Test helper: a named wrapper for replica outcomes.
#![cfg(test)]

/// A replica outcome.
pub struct Outcome(pub crate::data::replica::ReplicaOutcome);
