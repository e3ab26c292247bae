//! `agent-data-sync/v1` (spec/agent-data-protocol.md §5.9, §13.1;
//! spec/agent-data-sync-facts.md): an explicit, encrypted pull of one
//! collection from an operator-configured peer, interoperable with the
//! reference byte for byte.
//!
//! - [`adds`]: the ADDS 0.1 object plane (canonical JSON, CIDs, chunked
//!   AES-256-GCM objects, signed manifests, direct-recipient grants,
//!   bundles);
//! - [`wire`]: limits, the page request and response shapes, payloads,
//!   timestamps; [`inline`]: sealing and opening one `adds/0.1-inline`
//!   object;
//! - [`source`]: building a page for a page authority; [`apply`]:
//!   verifying a page and importing it through the data node's writer;
//!   [`client`]: the page request to a peer; [`pull`]: pull, status and
//!   reset; [`store`]: identity, authorities, peers, checkpoints and the
//!   cross-process pull locks; [`service`]: what `serve` exposes.
//!
//! Layering: `sync` sits beside `data` in the domain and imports it (the
//! node's writer applies replicas); nothing in `data` imports `sync`.

pub mod adds;
pub mod apply;
pub mod client;
pub mod inline;
pub mod pull;
pub mod service;
pub mod source;
pub mod store;
pub mod wire;

#[cfg(test)]
mod page_vectors;
#[cfg(test)]
mod roundtrip;
#[cfg(test)]
mod vectors;
