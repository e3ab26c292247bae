//! Collectors that run operator-pinned work on an exact revision: sandbox
//! runtimes now; the command collector, signed transfers and the review
//! controller build on them.

pub mod runtime;
