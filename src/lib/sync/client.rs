//! The destination's page request to its peer (facts §12.4 transport
//! rules), on [`crate::net::post`]: the peer's exact origin, no redirect,
//! one deadline, the response ceiling, and the reference's error
//! classification.

use super::store::Peer;
use super::wire::{PageRequest, SyncLimits};
use crate::error::{Code, Error, Result};
use crate::net::{FetchPolicy, PostRequest, post};
use serde_json::Value;
use std::time::Duration;

/// Sends one page request; returns the page JSON.
pub fn request_page(peer: &Peer, req: &PageRequest, limits: &SyncLimits) -> Result<Value> {
    let body = serde_json::to_vec(&req.to_json())
        .map_err(|e| Error::internal(format!("cannot render: {e}")))?;
    let policy = FetchPolicy {
        // The origin is the operator's own configuration (often loopback
        // or a LAN host); the address checks are for untrusted URLs.
        allow_private_networks: true,
        max_redirects: 0,
        timeout: Duration::from_millis(limits.request_timeout_ms),
        max_bytes: limits.max_response_bytes,
    };
    let resp = post(
        &PostRequest {
            url: format!("{}/v1/data/sync/page", peer.base_url),
            headers: vec![
                ("authorization".into(), format!("Bearer {}", peer.bearer)),
                ("accept".into(), "application/json".into()),
                ("content-type".into(), "application/json".into()),
            ],
            body,
            ca_pem: peer.ca_pem.clone(),
        },
        &policy,
    )
    .map_err(|e| match e.code() {
        Code::ContentTooLarge => Error::new(
            Code::PeerSyncResponseTooLarge,
            "the peer's page exceeds the response ceiling",
        ),
        Code::Config => e,
        _ => Error::new(
            Code::PeerUnreachable,
            format!("Configured peer could not be reached: {}", e.message()),
        ),
    })?;
    if (300..400).contains(&resp.status) {
        return Err(Error::new(
            Code::PeerUnreachable,
            format!(
                "Configured peer answered a redirect (HTTP {}); redirects are refused",
                resp.status
            ),
        ));
    }
    if !(200..300).contains(&resp.status) {
        let code = (resp.body.len() <= 16 * 1024)
            .then(|| serde_json::from_slice::<Value>(&resp.body).ok())
            .flatten()
            .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
            .filter(|c| is_error_code(c))
            .unwrap_or_else(|| "unknown".into());
        return Err(Error::new(
            Code::PeerResponseError,
            format!("Configured peer returned HTTP {} ({code})", resp.status),
        )
        .with("peer_status", resp.status)
        .with("peer_error", code));
    }
    let ct = resp.header("content-type").unwrap_or("");
    if !ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .eq_ignore_ascii_case("application/json")
    {
        return Err(Error::new(
            Code::PeerResponseInvalid,
            "Configured peer did not answer application/json",
        ));
    }
    let text = std::str::from_utf8(&resp.body).map_err(|_| {
        Error::new(
            Code::PeerResponseInvalid,
            "Configured peer answered invalid UTF-8",
        )
    })?;
    serde_json::from_str(text).map_err(|_| {
        Error::new(
            Code::PeerResponseInvalid,
            "Configured peer answered invalid JSON",
        )
    })
}

/// `^[a-z][a-z0-9_]{0,63}$`.
fn is_error_code(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_')
}
