//! The destination's page apply (facts §13.2 steps 3–4): every check runs
//! before anything is written; the verified objects are then imported in
//! one write of the node's writer. A failure anywhere leaves the node and
//! the checkpoint as they were.

use super::adds::encoding::b64u_decode;
use super::adds::jcs::canonical;
use super::adds::object::Principal;
use super::inline::{OpenCtx, open};
use super::wire::{Inline, PageView, SyncLimits, same_instant, validate_page};
use crate::data::Node;
use crate::data::replica::{ReplicaOp, ReplicaOutcome, prepare_collection, prepare_tombstone};
use crate::error::{Code, Error, Result};
use serde_json::Value;

/// Who the destination is and whom it trusts.
pub struct Reader<'a> {
    /// The pinned publisher.
    pub publisher: &'a Principal,
    /// The peer's configured node id.
    pub expected_node_id: &'a str,
    /// The destination identity id (grant audience).
    pub reader_id: &'a str,
    /// The destination's X25519 secret.
    pub reader_secret: &'a [u8; 32],
    /// Limits.
    pub limits: &'a SyncLimits,
}

/// Where the destination stands for this (peer, collection).
#[derive(Debug, Clone, Default)]
pub struct Position {
    /// The checkpoint's feed id, when there is a checkpoint.
    pub feed_id: Option<String>,
    /// The checkpoint's cursor.
    pub cursor: Option<String>,
}

/// A page that passed every check, ready to import.
#[derive(Debug)]
pub struct Verified {
    /// The page's feed id.
    pub feed_id: String,
    /// The page's next cursor.
    pub cursor: String,
    /// The page's flag.
    pub has_more: bool,
    /// Changes on the page.
    pub changes: usize,
    /// Record content bytes on the page.
    pub content_bytes: u64,
    /// The objects, in page order (collection first).
    pub ops: Vec<ReplicaOp>,
}

fn mismatch(msg: &str) -> Error {
    Error::new(Code::SyncChangeMismatch, msg.to_owned())
}

/// Opens many objects, on every core, keeping page order.
fn open_all(objs: &[&Inline], ctx: &OpenCtx<'_>) -> Vec<Result<(Value, &'static str)>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if objs.len() < 4 || threads < 2 {
        return objs.iter().map(|o| open(o, ctx)).collect();
    }
    let chunk = objs.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = objs
            .chunks(chunk)
            .map(|c| s.spawn(move || c.iter().map(|o| open(o, ctx)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec![Err(Error::internal("a verifier thread panicked"))])
            })
            .collect()
    })
}

/// What the destination asked for.
#[derive(Debug, Clone, Copy)]
pub struct Ask<'a> {
    /// The collection.
    pub collection_id: &'a str,
    /// The page limit sent.
    pub limit: u64,
    /// The plaintext budget sent.
    pub budget: u64,
}

/// Verifies one page (facts §13.2 steps 3–4f) against what was asked.
pub fn verify_page(
    node: &Node,
    page: &Value,
    ask: Ask<'_>,
    pos: &Position,
    r: &Reader<'_>,
    now: i64,
) -> Result<Verified> {
    let Ask {
        collection_id,
        limit,
        budget,
    } = ask;
    let view: PageView = validate_page(page, limit, r.limits)?;
    if view.origin_node_id != r.expected_node_id {
        return Err(Error::new(
            Code::UnexpectedPeerNode,
            "the page's origin_node_id is not the configured peer node",
        ));
    }
    // a. collection.
    if view.collection_id != collection_id {
        return Err(Error::new(
            Code::SyncCollectionMismatch,
            "the page is for another collection",
        ));
    }
    // b. feed.
    if let Some(f) = &pos.feed_id
        && *f != view.feed_id
    {
        return Err(Error::new(
            Code::SyncFeedMismatch,
            "the peer's feed is not the one this checkpoint follows",
        ));
    }
    let reader_public =
        super::adds::encoding::b64u(&super::adds::grant::x25519_public(r.reader_secret));
    let ctx = OpenCtx {
        publisher: r.publisher,
        reader_id: r.reader_id,
        reader_secret: r.reader_secret,
        reader_public: &reader_public,
        now,
        max_bytes: r.limits.max_response_bytes,
    };
    // c. control.
    let (control, kind) = open(&view.control_object, &ctx)?;
    let rebuilt = canonical(&view.rebuilt_control()).map_err(|e| e.into_error(Code::Internal))?;
    if kind != "page" || canonical(&control).ok().as_deref() != Some(rebuilt.as_slice()) {
        return Err(Error::new(
            Code::SyncPageControlInvalid,
            "the page-control object does not bind this page",
        ));
    }
    // d. cursor continuity.
    let continues = match (&pos.cursor, &view.previous_cursor) {
        (Some(c), Some(p)) => c == p,
        (None, None) => pos.feed_id.is_none(),
        _ => false,
    };
    if !continues {
        return Err(Error::new(
            Code::SyncCursorConflict,
            "the page does not continue from this checkpoint's cursor",
        ));
    }
    if !view.changes.is_empty() && view.previous_cursor.as_deref() == Some(view.cursor.as_str()) {
        return Err(Error::new(
            Code::SyncCursorStalled,
            "the page has changes but did not advance its cursor",
        ));
    }
    // e. collection object.
    let (cv, kind) = open(&view.collection_object, &ctx)?;
    let coll = &cv["collection"];
    if kind != "collection" || coll.get("id").and_then(Value::as_str) != Some(collection_id) {
        return Err(Error::new(
            Code::SyncCollectionMismatch,
            "the collection object is for another collection",
        ));
    }
    let (def, created_at) = prepare_collection(coll)?;
    // f. changes, opened in parallel, checked and prepared in order.
    let objs: Vec<&Inline> = view.changes.iter().map(|h| &h.object).collect();
    let opened = open_all(&objs, &ctx);
    let mut ops = Vec::with_capacity(view.changes.len() + 1);
    ops.push(ReplicaOp::Collection(def.clone(), created_at));
    let mut left = budget;
    let mut content_bytes = 0u64;
    for (h, res) in view.changes.iter().zip(opened) {
        let (v, kind) = res?;
        match h.kind.as_str() {
            "record.created" => {
                if kind != "record" {
                    return Err(mismatch("a record.created change does not carry a record"));
                }
                let rec = &v["record"];
                if rec.get("id").and_then(Value::as_str) != Some(h.record_id.as_str())
                    || rec.get("collection_id").and_then(Value::as_str)
                        != Some(h.collection_id.as_str())
                    || !rec
                        .get("ingested_at")
                        .and_then(Value::as_str)
                        .is_some_and(|t| same_instant(t, &h.occurred_at))
                {
                    return Err(mismatch("a change header does not match its record"));
                }
                let data = v["content"]["data"].as_str().unwrap_or("");
                // Within the remaining budget before decoding.
                if (data.len() as u64) * 3 / 4 > left {
                    return Err(Error::new(
                        Code::PeerSyncResponseTooLarge,
                        "the page's record content exceeds the requested plaintext budget",
                    ));
                }
                let bytes = b64u_decode(data).ok_or_else(|| {
                    Error::new(
                        Code::SyncObjectInvalid,
                        "record content is not canonical base64url",
                    )
                })?;
                left -= bytes.len() as u64;
                content_bytes += bytes.len() as u64;
                ops.push(ReplicaOp::Record(
                    node.prepare_replica_record(&def, rec, bytes)?,
                ));
            }
            _ => {
                if kind != "tombstone" {
                    return Err(mismatch(
                        "a record.tombstoned change does not carry a tombstone",
                    ));
                }
                let t = &v["tombstone"];
                if t.get("record_id").and_then(Value::as_str) != Some(h.record_id.as_str())
                    || t.get("collection_id").and_then(Value::as_str)
                        != Some(h.collection_id.as_str())
                    || !t
                        .get("tombstoned_at")
                        .and_then(Value::as_str)
                        .is_some_and(|x| same_instant(x, &h.occurred_at))
                {
                    return Err(mismatch("a change header does not match its tombstone"));
                }
                ops.push(ReplicaOp::Tombstone(prepare_tombstone(t)?));
            }
        }
    }
    Ok(Verified {
        feed_id: view.feed_id,
        cursor: view.cursor,
        has_more: view.has_more,
        changes: view.changes.len(),
        content_bytes,
        ops,
    })
}

/// Imports a verified page through the node's writer.
pub fn import(node: &Node, v: Verified) -> Result<(ReplicaOutcome, Verified)> {
    let mut v = v;
    let ops = std::mem::take(&mut v.ops);
    let out = node.apply_replica(ops)?;
    Ok((out, v))
}
