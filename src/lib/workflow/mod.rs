//! The workflow half, in one direction of imports (docs/architecture.md):
//! [`journal`] (the only SQL on `journal.sqlite`) and [`authority`] (the
//! only SQL on `authority.sqlite`: operator state, snapshots, receipts,
//! landing), [`attest`] (in-toto attestations of landed commits), and
//! [`service`] on top (the agent operations, requests, scope checks and
//! set-up: the code that opens a `store::Session`). The pure types live in
//! [`crate::contract`].

pub mod attest;
pub mod authority;
pub mod git;
pub mod journal;
pub mod service;
