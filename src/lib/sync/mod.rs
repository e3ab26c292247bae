//! `agent-data-sync/v1` (spec/agent-data-protocol.md §5.9, §13.1;
//! spec/agent-data-sync-facts.md): an explicit, encrypted pull of one
//! collection from an operator-configured peer, interoperable with the
//! reference byte for byte.
//!
//! - [`adds`]: the ADDS 0.1 object plane (canonical JSON, CIDs, chunked
//!   AES-256-GCM objects, signed manifests, direct-recipient grants,
//!   bundles);

pub mod adds;
pub mod apply;
pub mod inline;
pub mod wire;

#[cfg(test)]
mod page_vectors;
#[cfg(test)]
mod vectors;
