//! The finite review collector (the REVIEW controller of the spec's
//! operator-enrolled collector transfer), as a self-contained module: the
//! review step and profile types, the deterministic controller, the Claude
//! Code and replay transports, the durable call journal, record derivation
//! and replay validation. `docs/review.md` is the reference.
//!
//! ```text
//! profile + snapshot ──plan::derive──▶ ordered calls (parts, prompt bytes, schema, flags)
//!        for each call: journal.reserve (durable) ─▶ transport.call ─▶ journal.record
//!        controller::derive_record(plan, trace) ─▶ ReviewRecord (outcome, findings, coverage, budget, trace)
//! import: replay::validate_replay(snapshot, profile, request, record) re-runs the same controller
//!         against ReplayTransport(record.trace) and requires byte-identical results
//! ```
//!
//! The wiring into `profile install`, `collect`, the transfer and the
//! authority's import is a later part; nothing here touches the authority,
//! the journal database or the command collector.

pub mod answer;
pub mod collect;
pub mod controller;
pub mod credential;
pub use crate::contract::coverage;
pub mod journal;
pub mod plan;
pub mod policy;
pub mod replay;
pub mod transport;
pub mod types;
pub mod wire;

pub use controller::{Review, run};
pub use journal::{FileJournal, MemoryJournal, ReviewJournal};
pub use plan::{MemorySnapshot, Snapshot, SnapshotEntry};
pub use replay::validate_replay;
pub use transport::{ClaudeCodeTransport, ReplayTransport, Transport, pin_executable};
pub use types::{
    Basis, ReviewBudgets, ReviewCriterion, ReviewProfile, ReviewRecord, ReviewRequest, ReviewStep,
    ReviewSubject, check_basis, check_basis_for,
};

#[cfg(test)]
mod tests;
