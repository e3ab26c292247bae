//! agent-task: workflow tasks for coding agents under operator rules, and an
//! `agent-data/v1` node.
//!
//! Layering, bottom to top (nothing imports upward):
//!
//! - [`error`], [`clock`], [`wire`]: the one error type, time, digests and
//!   canonical bytes;
//! - [`store`]: the only module that opens SQLite, takes the advisory lock or
//!   touches blob files (data directory, migrations, CAS);
//! - the domain: [`authority`] (and, as they land, tasks, collectors, the data
//!   node and sync), plus [`ops`] for whole-directory set-up; [`attest`]
//!   reads authority state to sign in-toto attestations, and `land` calls
//!   it to attach them to the landed commit;
//! - the faces: [`cli`] (and the HTTP shim), which parse, call one library
//!   operation and render.

pub mod attest;
pub mod authority;
pub mod cli;
pub mod clock;
pub mod collector;
pub mod data;
pub mod doctor;
pub mod error;
pub mod hooks;
pub mod http;
pub mod net;
pub mod ops;
pub mod remote;
pub mod store;
pub mod sync;
pub mod task;
pub mod wire;

pub use error::{Code, Error, Result};
