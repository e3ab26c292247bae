//! Wire-level building blocks shared by both halves: digests and strict
//! decoding helpers. Nothing here touches the file system.

pub mod digest;
pub mod ed25519;
pub mod json;

use crate::error::{Error, Result};

/// A random identifier `PREFIX_` + 32 lowercase hex characters (128 bits
/// from the OS CSPRNG).
pub fn random_id(prefix: &str) -> Result<String> {
    let b = random_bytes::<16>()?;
    Ok(format!("{prefix}_{}", data_encoding::HEXLOWER.encode(&b)))
}

/// `N` bytes from the OS CSPRNG (ids, tokens, keys, nonces).
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut b = [0u8; N];
    random_fill(&mut b)?;
    Ok(b)
}

/// Fills `buf` from the OS CSPRNG: the one caller of `getrandom`
/// (`clippy.toml` refuses it anywhere else).
#[allow(clippy::disallowed_methods)]
pub fn random_fill(buf: &mut [u8]) -> Result<()> {
    getrandom::fill(buf).map_err(|e| Error::internal(format!("OS random source failed: {e}")))
}
