//! CAS maintenance: the `cas` commands.

pub mod cas;
