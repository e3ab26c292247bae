//! The destination's operations (facts §12.5, §13.2, §14): pull, status
//! and reset of one (peer, collection). The CLI and `serve`'s routes call
//! these with the same request structs.

use super::apply::{Ask, Position, Reader, Verified, import, parse_page, verify_view};
use super::client::request_page;
use super::store::{Checkpoint, Peer, SyncStore, check_peer_id};
use super::wire::{PROTOCOL, PageRequest, PageView, SyncLimits, bounded};
use crate::clock::rfc3339_millis;
use crate::data::Node;
use crate::data::syntax::check_collection_id;
use crate::error::{Code, Error, Result};
use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::mpsc::sync_channel;

/// `POST /v1/data/sync/pull` and `sync pull`.
#[derive(Debug, Clone, Default)]
pub struct PullRequest {
    /// The configured peer alias.
    pub peer_id: String,
    /// The collection.
    pub collection_id: String,
    /// Changes per page (default 10, at most 100).
    pub limit: Option<u64>,
    /// Pages at most (default 10, at most 100).
    pub max_pages: Option<u64>,
    /// Record-content budget per page (default 1 MiB, at most 10 MiB).
    pub max_plaintext_bytes: Option<u64>,
}

impl PullRequest {
    /// From a request body: exact keys, `protocol` fixed; `null` numbers
    /// mean the default.
    pub fn from_json(body: &Map<String, Value>) -> Result<PullRequest> {
        const KEYS: &[&str] = &[
            "protocol",
            "peer_id",
            "collection_id",
            "limit",
            "max_pages",
            "max_plaintext_bytes",
        ];
        if let Some(k) = body.keys().find(|k| !KEYS.contains(&k.as_str())) {
            return Err(Error::new(
                Code::InvalidSyncRequest,
                format!("unknown pull request member {k:?}"),
            ));
        }
        if body.get("protocol").and_then(Value::as_str) != Some(PROTOCOL) {
            return Err(Error::new(
                Code::UnsupportedSyncProtocol,
                "protocol must be agent-data-sync/v1",
            ));
        }
        let s = |k: &str| body.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let n = |k: &str| match body.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => bounded(Some(v), 1, u64::MAX, k).map(Some),
        };
        Ok(PullRequest {
            peer_id: s("peer_id"),
            collection_id: s("collection_id"),
            limit: n("limit")?,
            max_pages: n("max_pages")?,
            max_plaintext_bytes: n("max_plaintext_bytes")?,
        })
    }
}

/// Status of one (peer, collection); never the raw cursor.
#[derive(Debug, Clone, Serialize)]
pub struct Status {
    /// `agent-data-sync/v1`.
    pub protocol: &'static str,
    /// Alias.
    pub peer_id: String,
    /// Collection.
    pub collection_id: String,
    /// Whether a checkpoint exists.
    pub cursor_present: bool,
    /// When the last page was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_applied_at: Option<String>,
    /// Cumulative counters.
    pub records_inserted: u64,
    /// Cumulative counters.
    pub records_existing: u64,
    /// Cumulative counters.
    pub tombstones_applied: u64,
}

/// What a pull did.
#[derive(Debug, Clone, Serialize)]
pub struct PullResult {
    /// `agent-data-sync/v1`.
    pub protocol: &'static str,
    /// Alias.
    pub peer_id: String,
    /// The peer's node id.
    pub origin_node_id: String,
    /// Collection.
    pub collection_id: String,
    /// Pages applied.
    pub pages_applied: u64,
    /// Changes on them.
    pub changes_applied: u64,
    /// New records.
    pub records_inserted: u64,
    /// Records already here.
    pub records_existing: u64,
    /// New tombstones.
    pub tombstones_applied: u64,
    /// The last page's flag.
    pub has_more: bool,
    /// The checkpoint's status after the pull.
    pub status: Status,
}

/// Progress after each applied page.
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Pages applied so far.
    pub pages: u64,
    /// Changes applied so far.
    pub changes: u64,
    /// New records so far.
    pub records: u64,
    /// Record content bytes so far.
    pub bytes: u64,
}

fn bound(peer: &Peer, cp: &Checkpoint) -> Result<()> {
    if cp.peer_base_url != peer.base_url
        || cp.origin_node_id != peer.expected_node_id
        || cp.publisher_id != peer.publisher.id
        || cp.publisher_ed25519_public_key != peer.publisher.ed25519_public_key
    {
        return Err(Error::new(
            Code::SyncCheckpointPeerMismatch,
            format!(
                "the checkpoint of peer {:?} was made for another origin, node id or publisher",
                peer.peer_id
            ),
        )
        .with(
            "fix",
            "verify the change, then `agent-task sync reset --peer P --collection C`",
        ));
    }
    Ok(())
}

fn status_of(peer_id: &str, collection_id: &str, cp: Option<&Checkpoint>) -> Status {
    Status {
        protocol: PROTOCOL,
        peer_id: peer_id.to_owned(),
        collection_id: collection_id.to_owned(),
        cursor_present: cp.is_some(),
        last_applied_at: cp.map(|c| c.last_applied_at.clone()),
        records_inserted: cp.map_or(0, |c| c.records_inserted),
        records_existing: cp.map_or(0, |c| c.records_existing),
        tombstones_applied: cp.map_or(0, |c| c.tombstones_applied),
    }
}

/// Status of one (peer, collection).
pub fn status(node: &Node, peer_id: &str, collection_id: &str) -> Result<Status> {
    check_peer_id(peer_id)?;
    check_collection_id(collection_id)?;
    let store = SyncStore::new(node.data_dir(), node.lock_timeout);
    let peer = store.peer(peer_id)?;
    let cp = store.checkpoint(peer_id, collection_id)?;
    if let Some(c) = &cp {
        bound(&peer, c)?;
    }
    Ok(status_of(peer_id, collection_id, cp.as_ref()))
}

/// Deletes the checkpoint of (peer, collection); imported data stays.
pub fn reset(node: &Node, peer_id: &str, collection_id: &str) -> Result<bool> {
    check_peer_id(peer_id)?;
    check_collection_id(collection_id)?;
    let store = SyncStore::new(node.data_dir(), node.lock_timeout);
    store.peer(peer_id)?;
    let _lock = store.pull_lock(peer_id, collection_id)?;
    store.delete_checkpoint(peer_id, collection_id, &rfc3339_millis(node.clock.now()))
}

/// Pulls up to `max_pages` pages of a collection from a configured peer.
pub fn pull(
    node: &Node,
    req: &PullRequest,
    progress: &mut dyn FnMut(&Progress),
) -> Result<PullResult> {
    let limits = SyncLimits::default();
    check_peer_id(&req.peer_id)?;
    check_collection_id(&req.collection_id)?;
    let over = |v: Option<u64>, d: u64, m: u64, name: &str| match v {
        None => Ok(d),
        Some(n) => bounded(Some(&Value::from(n)), d, m, name),
    };
    let limit = over(
        req.limit,
        limits.default_page_changes,
        limits.max_page_changes,
        "limit",
    )?;
    let max_pages = over(
        req.max_pages,
        limits.default_pull_pages,
        limits.max_pull_pages,
        "max_pages",
    )?;
    let budget = over(
        req.max_plaintext_bytes,
        limits.default_plaintext_bytes,
        limits.max_plaintext_bytes,
        "max_plaintext_bytes",
    )?;
    let store = SyncStore::new(node.data_dir(), node.lock_timeout);
    let peer = store.peer(&req.peer_id)?;
    let identity = store.identity()?;
    let _lock = store.pull_lock(&req.peer_id, &req.collection_id)?;
    let recipient = identity.recipient();
    let reader = Reader {
        publisher: &peer.publisher,
        expected_node_id: &peer.expected_node_id,
        reader_id: &identity.id,
        reader_secret: &identity.x25519_secret,
        limits: &limits,
    };
    let mut p = Progress::default();
    let mut totals = (0u64, 0u64, 0u64);
    let mut has_more = false;
    let ask = Ask {
        collection_id: &req.collection_id,
        limit,
        budget,
    };
    // One page at `pos`: the request and the shape checks (step 3).
    let fetch = |pos: &Position| -> Result<PageView> {
        let page_req = PageRequest {
            collection_id: req.collection_id.clone(),
            cursor: pos.cursor.clone(),
            expected_feed_id: pos.feed_id.clone(),
            limit,
            max_plaintext_bytes: budget,
            recipient: recipient.clone(),
        };
        let page = request_page(&peer, &page_req, &limits)?;
        parse_page(page, limit, &reader)
    };
    let cp = store.checkpoint(&req.peer_id, &req.collection_id)?;
    if let Some(c) = &cp {
        bound(&peer, c)?;
    }
    let mut base = cp;
    let mut checkpoints = store.checkpoint_writer();
    let first = Position {
        feed_id: base.as_ref().map(|c| c.feed_id.clone()),
        cursor: base.as_ref().map(|c| c.cursor.clone()),
    };
    let (fetch, reader) = (&fetch, &reader);
    std::thread::scope(|scope| -> Result<()> {
        // A three-stage pipeline, every stage in page order, handing pages
        // on through rendezvous channels (at most three pages in memory):
        // 1. requests: page N+1 is requested as soon as page N's cursor is
        //    known, before page N is verified (the cursor is the peer's own
        //    opaque value; nothing of page N+1 counts until page N passed);
        // 2. verification (every check of step 4, on every core), each page
        //    against its verified predecessor;
        // 3. here: import, then the checkpoint, then the next page. A page
        //    is imported only after its predecessor's checkpoint is written,
        //    and the first failure in page order ends the pull.
        let (raw_tx, raw_rx) = sync_channel::<Result<PageView>>(0);
        let (ver_tx, ver_rx) = sync_channel::<Result<Verified>>(0);
        let at = first.clone();
        let requests = scope.spawn(move || {
            let mut pos = at;
            for _ in 0..max_pages {
                let res = fetch(&pos);
                let next = match &res {
                    Ok(v) if v.has_more => Some(Position {
                        feed_id: Some(v.feed_id.clone()),
                        cursor: Some(v.cursor.clone()),
                    }),
                    _ => None,
                };
                if raw_tx.send(res).is_err() {
                    return;
                }
                match next {
                    Some(p) => pos = p,
                    None => return,
                }
            }
        });
        let verifier = scope.spawn(move || {
            let mut pos = first;
            for res in raw_rx {
                let res = res.and_then(|view| {
                    verify_view(node, view, ask, &pos, reader, node.clock.now().as_second())
                });
                let next = res.as_ref().ok().map(|v| Position {
                    feed_id: Some(v.feed_id.clone()),
                    cursor: Some(v.cursor.clone()),
                });
                if ver_tx.send(res).is_err() {
                    return;
                }
                match next {
                    Some(p) => pos = p,
                    None => return,
                }
            }
        });
        let mut apply = || -> Result<()> {
            for verified in ver_rx.iter() {
                let (out, v) = import(node, verified?)?;
                p.pages += 1;
                crate::testhooks::sync_pause_after_import(p.pages);
                let now = node.clock.now();
                let prev = base.take().unwrap_or(Checkpoint {
                    peer_base_url: peer.base_url.clone(),
                    origin_node_id: peer.expected_node_id.clone(),
                    feed_id: v.feed_id.clone(),
                    publisher_id: peer.publisher.id.clone(),
                    publisher_ed25519_public_key: peer.publisher.ed25519_public_key.clone(),
                    cursor: String::new(),
                    last_applied_at: String::new(),
                    records_inserted: 0,
                    records_existing: 0,
                    tombstones_applied: 0,
                });
                let cp = Checkpoint {
                    feed_id: v.feed_id.clone(),
                    cursor: v.cursor.clone(),
                    last_applied_at: rfc3339_millis(now),
                    records_inserted: prev.records_inserted + out.records_inserted,
                    records_existing: prev.records_existing + out.records_existing,
                    tombstones_applied: prev.tombstones_applied + out.tombstones_applied,
                    ..prev
                };
                checkpoints.save(&req.peer_id, &req.collection_id, &cp, &rfc3339_millis(now))?;
                base = Some(cp);
                totals.0 += out.records_inserted;
                totals.1 += out.records_existing;
                totals.2 += out.tombstones_applied;
                p.changes += v.changes as u64;
                p.records += out.records_inserted;
                p.bytes += v.content_bytes;
                progress(&p);
                has_more = v.has_more;
                if !has_more || p.pages >= max_pages {
                    break;
                }
            }
            Ok(())
        };
        let res = apply();
        // The stages stop when their receiver is gone.
        drop(ver_rx);
        let stages = (verifier.join(), requests.join());
        if stages.0.is_err() || stages.1.is_err() {
            return Err(Error::internal("a pull stage panicked"));
        }
        res
    })?;
    let cp = store.checkpoint(&req.peer_id, &req.collection_id)?;
    Ok(PullResult {
        protocol: PROTOCOL,
        peer_id: req.peer_id.clone(),
        origin_node_id: peer.expected_node_id.clone(),
        collection_id: req.collection_id.clone(),
        pages_applied: p.pages,
        changes_applied: p.changes,
        records_inserted: totals.0,
        records_existing: totals.1,
        tombstones_applied: totals.2,
        has_more,
        status: status_of(&req.peer_id, &req.collection_id, cp.as_ref()),
    })
}
