//! The workflow service: the agent operations ([`ops`], [`facade`]: one
//! library call each, run in one `store::Session`) and whole-directory
//! set-up ([`setup`]: `init`, `info`).

pub mod collect;
pub mod facade;
pub mod ops;
pub mod receipt;
pub mod remote;
pub mod setup;

#[cfg(test)]
mod model_tests;
