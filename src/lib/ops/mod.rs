//! Set-up operations that span the whole data directory: `init` and `info`.

pub mod admin;
