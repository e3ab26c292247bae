//! The workflow service, the only code that opens a `store::Session` and
//! the one door of the workflow half: outside `workflow`, code names
//! `workflow::service` (and `contract`) only. The agent operations
//! ([`ops`], [`facade`]: one request struct and one library call each,
//! run in one session; every request and output type of theirs lives in
//! [`requests`], and where and as whom they run, [`ctx::AgentCtx`], in
//! [`ctx`], both below every operation file), the operator writes
//! ([`admin`]: the authority checks and stages, the service runs the
//! write), receipts
//! ([`receipt`]), the overview of every Change ([`overview`]: `ls` and
//! the `overview` operation), the landing phase protocol ([`land`]), collection
//! ([`collect`]), the evidence outbox ([`evidence`]), the repositories' forges ([`forge`]), candidates as pull requests and forge-side merges ([`propose`]), the workspace endpoint ([`remote`]) and
//! whole-directory set-up ([`setup`]: `init`, `info`). The authority's
//! own types and reads that the faces use are re-exported where the
//! faces find them: [`admin`] (operator requests and outputs, token
//! files, the read-only authority), [`change`] (the Change selector,
//! checkpoint options, Change and subject reads), [`snapshot`]
//! (workspace scans), [`setup::AUTHORITY_SPEC`]; the git runner is
//! [`git`].

pub mod admin;
pub mod attest;
pub mod change;
pub mod collect;
pub mod ctx;
pub mod evidence;
pub mod explain;
pub mod facade;
pub mod forge;
pub mod git;
pub mod land;
pub mod ops;
pub mod overview;
pub mod propose;
pub mod receipt;
pub mod remote;
pub mod requests;
pub mod setup;
pub mod snapshot;

#[cfg(test)]
mod model_tests;
