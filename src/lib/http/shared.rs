//! What the workspace routes, the MCP endpoints and the router share,
//! below all three so that none of them imports another for it (the
//! router names the operations route in its lane table; MCP reads the
//! workspace bearer and body bound; the workspace mounts its routes).

use super::router::Request;
use crate::error::{Code, Error, Result};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Path prefix of every workspace route (guarded by the bearer check).
pub const PREFIX: &str = "/v1/hub/workspace/";
/// Largest operation body.
pub const MAX_BODY: u64 = 1024 * 1024;
/// Longest bearer accepted.
const MAX_BEARER: usize = 512;

/// The bearer of a request: `Authorization: Bearer <token>` with a token
/// of 1-512 printable ASCII characters, else `unauthorized`.
pub fn bearer(req: &Request<'_>) -> Result<String> {
    let missing = || {
        Error::new(
            Code::Unauthorized,
            "a workspace bearer (agent token) is required",
        )
    };
    let h = req.header("authorization").ok_or_else(missing)?;
    let (scheme, tok) = h.split_once(' ').ok_or_else(missing)?;
    let tok = tok.trim();
    if !scheme.eq_ignore_ascii_case("bearer")
        || tok.is_empty()
        || tok.len() > MAX_BEARER
        || !tok.bytes().all(|b| (0x21..=0x7e).contains(&b))
    {
        return Err(missing());
    }
    Ok(tok.to_owned())
}

/// The node bearer check of the data routes and the data MCP endpoint:
/// `Authorization: Bearer <token>` whose SHA-256 equals `expected`
/// (compared in constant time), else `unauthorized`;
/// `data_auth_not_configured` when no node bearer is configured.
pub fn check_bearer(expected: Option<&[u8; 32]>, req: &Request<'_>) -> Result<()> {
    let Some(expected) = expected else {
        return Err(Error::new(
            Code::DataAuthNotConfigured,
            "HTTP data access is disabled until a dedicated node bearer is configured",
        ));
    };
    let unauthorized = || Error::new(Code::Unauthorized, "A valid node bearer is required");
    let header = req.header("authorization").ok_or_else(unauthorized)?;
    let (scheme, token) = header.split_once(' ').ok_or_else(unauthorized)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(unauthorized());
    }
    if digest_matches(expected, token) {
        Ok(())
    } else {
        Err(unauthorized())
    }
}

/// Whether the SHA-256 of `presented` equals `expected`, compared in
/// constant time (the node bearer here, the dashboard's credential in
/// the login form).
pub fn digest_matches(expected: &[u8; 32], presented: &str) -> bool {
    let got: [u8; 32] = Sha256::digest(presented.as_bytes()).into();
    bool::from(got.ct_eq(expected))
}
