//! The git runner, as the faces reach it: a plain git command for a
//! directory, under the workflow's one environment policy
//! ([`crate::workflow::git`]).

pub use crate::workflow::git::{command, output, plain};
