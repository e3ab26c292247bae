//! Wire-level building blocks shared by both halves: digests and strict
//! decoding helpers. Nothing here touches the file system.

pub mod digest;
pub mod ed25519;
pub mod json;

use crate::error::{Error, Result};

/// A random identifier `PREFIX_` + 32 lowercase hex characters (128 bits
/// from the OS CSPRNG).
pub fn random_id(prefix: &str) -> Result<String> {
    let mut b = [0u8; 16];
    getrandom::fill(&mut b)
        .map_err(|e| Error::internal(format!("OS random source failed: {e}")))?;
    Ok(format!("{prefix}_{}", data_encoding::HEXLOWER.encode(&b)))
}
