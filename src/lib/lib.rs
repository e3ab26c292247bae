//! agent-task: workflow tasks for coding agents under operator rules, and an
//! `agent-data/v1` node.
//!
//! Module map, bottom to top (the allowed import graph, and the one cycle
//! the workflow half still holds, are in `docs/architecture.md`; the
//! `layering` test enforces them):
//!
//! - [`error`], [`clock`], [`wire`]: the one error type, time, digests,
//!   canonical bytes and strict JSON;
//! - [`store`]: the only module that opens SQLite, takes the advisory lock or
//!   touches blob files (data directory, migrations, CAS);
//! - [`net`]: outbound HTTP (the shared client configuration, the loopback
//!   rule, the SSRF-safe collector fetcher);
//! - the data half: [`data`] (the `agent-data/v1` node) and [`sync`] (peer
//!   replication);
//! - the workflow half: [`task`] (contract types, journal, agent
//!   operations), [`authority`] (operator state, snapshots, receipts,
//!   landing), [`collector`] (runtimes, sandboxes, transfers, the review
//!   controller), [`attest`] (in-toto attestations of landed commits),
//!   [`remote`] (the workspace endpoint client), [`ops`] (whole-directory
//!   set-up and CAS maintenance);
//! - the faces: [`cli`], [`http`] (server, routes, MCP), [`hooks`] (agent
//!   hooks) and [`doctor`] (the conformance prober), which parse, call
//!   library operations and render.

pub mod cli;
pub mod clock;
pub mod collector;
pub mod contract;
pub mod data;
pub mod doctor;
pub mod env;
pub mod error;
pub mod hooks;
pub mod http;
#[cfg(test)]
mod layering;
pub mod net;
pub mod ops;
pub mod remote;
pub mod store;
pub mod sync;
pub mod wire;
pub mod workflow;

pub use error::{Code, Error, Result};
