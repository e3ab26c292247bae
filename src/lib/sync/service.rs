//! What `serve` does for sync, face-independent (facts §12.1–§12.6): page
//! bearer authentication against the page authorities (read on every
//! request, so `sync authority remove` takes effect at once), the page,
//! pull and status operations, the status query rule, and the manifest's
//! `sync` descriptor.

use super::pull::{self, PullRequest};
use super::source;
use super::store::{Authority, SyncStore};
use super::wire::{PROTOCOL, SyncLimits};
use crate::data::Node;
use crate::error::{Code, Error, Result};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

fn store(node: &Node) -> SyncStore {
    SyncStore::new(node.data_dir(), node.lock_timeout)
}

fn unauthorized() -> Error {
    Error::new(Code::Unauthorized, "A valid page bearer is required")
}

/// The page authority a request's `Authorization` header names. No
/// authority configured: `page_auth_not_configured` (503); a missing,
/// unknown or node bearer: `unauthorized` (401).
pub fn page_authority(
    node: &Node,
    authorization: Option<&str>,
    node_bearer_sha256: Option<&[u8; 32]>,
) -> Result<Authority> {
    let all = store(node).authorities()?;
    if all.is_empty() {
        return Err(Error::new(
            Code::PageAuthNotConfigured,
            "Sync page access is disabled until a page authority is configured",
        ));
    }
    let header = authorization.ok_or_else(unauthorized)?;
    let (scheme, token) = header.split_once(' ').ok_or_else(unauthorized)?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(unauthorized());
    }
    let got: [u8; 32] = Sha256::digest(token.as_bytes()).into();
    if node_bearer_sha256.is_some_and(|n| bool::from(n.ct_eq(&got))) {
        return Err(unauthorized());
    }
    let mut found = None;
    for a in all {
        if bool::from(a.bearer_sha256.ct_eq(&got)) {
            found = Some(a);
        }
    }
    found.ok_or_else(unauthorized)
}

/// `POST /v1/data/sync/page` for an authenticated authority: the page's
/// compact JSON text.
pub fn page(node: &Node, a: &Authority, body: &Map<String, Value>) -> Result<Vec<u8>> {
    let id = store(node).identity()?;
    source::page_bytes(node, &id, a, body, &SyncLimits::default())
}

/// `POST /v1/data/sync/pull`.
pub fn pull(node: &Node, body: &Map<String, Value>) -> Result<Value> {
    let req = PullRequest::from_json(body)?;
    let out = pull::pull(node, &req, &mut |_| {})?;
    serde_json::to_value(out).map_err(|e| Error::internal(format!("cannot render: {e}")))
}

/// `GET /v1/data/sync/status?peer_id=…&collection_id=…`: exactly these two
/// parameters, each once (decoded pairs as sent).
pub fn status(node: &Node, query: &[(String, String)]) -> Result<Value> {
    let bad = || {
        Error::new(
            Code::InvalidSyncRequest,
            "status takes exactly the query parameters peer_id and collection_id, each once",
        )
    };
    if query.len() != 2 {
        return Err(bad());
    }
    let one = |k: &str| {
        let mut it = query.iter().filter(|(n, _)| n == k);
        match (it.next(), it.next()) {
            (Some((_, v)), None) => Ok(v.clone()),
            _ => Err(bad()),
        }
    };
    let (p, c) = (one("peer_id")?, one("collection_id")?);
    serde_json::to_value(pull::status(node, &p, &c)?)
        .map_err(|e| Error::internal(format!("cannot render: {e}")))
}

/// Whether at least one page authority is configured.
pub fn has_page_authority(node: &Node) -> bool {
    store(node).authorities().is_ok_and(|a| !a.is_empty())
}

/// Whether sync is configured on this node: an identity and at least one
/// page authority or peer.
pub fn configured(node: &Node) -> bool {
    let s = store(node);
    s.identity().is_ok()
        && (s.authorities().is_ok_and(|a| !a.is_empty()) || s.peers().is_ok_and(|p| !p.is_empty()))
}

/// Adds `capabilities.peer_sync: true`, the `sync` descriptor and the sync
/// endpoints to a node manifest when sync is configured.
pub fn decorate_manifest(node: &Node, manifest: &mut Value, origin: Option<&str>) {
    if !configured(node) {
        return;
    }
    let Ok(id) = store(node).identity() else {
        return;
    };
    if let Some(c) = manifest.get_mut("capabilities") {
        c["peer_sync"] = true.into();
    }
    manifest["sync"] = json!({
        "protocol": PROTOCOL,
        "feed_id": node.feed_id(),
        "mode": "explicit_pull",
        "peer_discovery": false,
        "encrypted_profile": super::wire::INLINE_PROFILE,
        "recipient": id.recipient().to_json(),
        "publisher": id.publisher().to_json(),
        "limits": SyncLimits::default(),
    });
    let o = origin.unwrap_or("");
    if let Some(Value::Object(e)) = manifest.get_mut("endpoints") {
        e.insert("sync_page".into(), format!("{o}/v1/data/sync/page").into());
        e.insert("sync_pull".into(), format!("{o}/v1/data/sync/pull").into());
        e.insert(
            "sync_status".into(),
            format!("{o}/v1/data/sync/status").into(),
        );
    }
}

/// `serve`'s start-up checks (facts §12.2): the node bearer differs from
/// every page authority's bearer and every outbound peer bearer.
pub fn check_server_options(node: &Node, node_bearer: Option<&str>) -> Result<()> {
    let Some(t) = node_bearer else { return Ok(()) };
    let d: [u8; 32] = Sha256::digest(t.as_bytes()).into();
    let s = store(node);
    if s.authorities()?
        .iter()
        .any(|a| bool::from(a.bearer_sha256.ct_eq(&d)))
    {
        return Err(Error::new(
            Code::InvalidServerOption,
            "the node bearer must differ from every page authority's bearer",
        ));
    }
    if s.peers()?.iter().any(|p| p.bearer == t) {
        return Err(Error::new(
            Code::InvalidServerOption,
            "the node bearer must differ from every peer's page bearer",
        ));
    }
    Ok(())
}
