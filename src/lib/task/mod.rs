//! Workflow tasks: the typed contract, observation signing, task
//! derivation and the journal state machine.

pub mod contract;
pub mod facade;
pub mod journal;
pub mod observation;
pub mod ops;

#[cfg(test)]
mod model_tests;
