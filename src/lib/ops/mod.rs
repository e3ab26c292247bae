//! Operations that span the whole data directory: `init`, `info` and the
//! `cas` commands.

pub mod admin;
pub mod cas;
