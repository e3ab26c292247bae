//! agent-task: workflow tasks for coding agents under operator rules, and an
//! `agent-data/v1` node.
//!
//! Module map, bottom to top (the allowed import graph, which holds no
//! cycle, is in `docs/architecture.md`; the `layering` test enforces it):
//!
//! - [`env`], [`error`], [`clock`], [`wire`]: the environment, the one
//!   error type, time, digests, canonical bytes and strict JSON;
//!   [`testhooks`]: the `AGENT_TASK_TEST_*` hooks, read only by a
//!   `test-hooks` build; [`progress`]: progress on stderr at a terminal;
//! - [`store`]: the only module that opens SQLite, takes the advisory lock or
//!   touches blob files (data directory, migrations, CAS), and the
//!   [`store::Session`] every workflow mutation runs in;
//! - [`net`]: outbound HTTP (the shared client configuration, the loopback
//!   rule, the SSRF-safe collector fetcher);
//! - [`contract`]: the workflow half's pure types (task contract,
//!   observations, workflow file, tree paths, protected paths, the
//!   snapshot manifest): no I/O, no SQL;
//! - the data half: [`data`] (the `agent-data/v1` node) and [`sync`] (peer
//!   replication);
//! - [`collector`] (runtimes, sandboxes, transfers, the review controller),
//!   which reaches the authority only through the traits it defines;
//! - [`workflow`]: `journal` (the only journal SQL), `authority` (operator
//!   state, snapshots, receipts, landing), `attest` (in-toto attestations
//!   of landed commits) and `service` (the agent operations, one request
//!   struct each, the operator writes and set-up: the only code that opens
//!   a [`store::Session`]);
//! - [`ops`] (CAS maintenance), [`remote`] (the workspace endpoint client),
//!   [`forge`] (the repositories' forges: their credentials and API);
//! - [`deploy`]: checking the privilege-separated deployment and writing
//!   `serve`'s workspace configuration from the authority;
//! - the faces: [`cli`], [`http`] (server, routes, MCP), [`hooks`] (agent
//!   hooks) and [`doctor`] (the conformance prober), which parse, call
//!   library operations and render.

pub mod cli;
pub mod clock;
pub mod collector;
pub mod contract;
pub mod data;
pub mod deploy;
pub mod doctor;
pub mod env;
pub mod error;
pub mod evidence;
pub mod forge;
pub mod hooks;
pub mod http;
#[cfg(test)]
mod layering;
pub mod net;
pub mod ops;
pub mod progress;
pub mod remote;
pub mod store;
pub mod sync;
pub mod testhooks;
pub mod wire;
pub mod workflow;

pub use error::{Code, Error, Result};
