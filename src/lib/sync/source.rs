//! The source side (facts §13.1, §15): one page of a collection's change
//! feed for the page authority that asked, every object sealed for its
//! pinned recipient.

use super::adds::encoding::b64u;
use super::adds::object_of;
use super::inline::{SealCtx, seal, seal_many_text};
use super::store::{Authority, Identity};
use super::wire::{OBJECT_PROTOCOL, PROTOCOL, SyncLimits, control_payload, parse_page_request};
use crate::data::{ChangesRequest, Node, cursor};
use crate::error::{Code, Error, Result};
use crate::wire::digest::Sha256Hex;
use serde_json::{Map, Value};

/// The scope check (facts §12.2): it runs on the parsed body before any
/// other field validation.
pub fn check_scope(a: &Authority, body: &Map<String, Value>) -> Result<()> {
    let denied = || {
        Error::new(
            Code::PageScopeDenied,
            "this page bearer may not page that collection for that recipient",
        )
    };
    let coll = body
        .get("collection_id")
        .and_then(Value::as_str)
        .ok_or_else(denied)?;
    if !a.collection_ids.iter().any(|c| c == coll) {
        return Err(denied());
    }
    let r = body.get("recipient").ok_or_else(denied)?;
    let eq = |k: &str, want: &str| r.get(k).and_then(Value::as_str) == Some(want);
    if !(eq("id", &a.recipient.id)
        && eq("x25519_public_key", &a.recipient.x25519_public_key)
        && eq("x25519_key_id", &a.recipient.x25519_key_id))
    {
        return Err(denied());
    }
    Ok(())
}

struct Built {
    root: String,
    more_after: bool,
    seq: u64,
    kind: &'static str,
    record_id: String,
    occurred_at: String,
}

/// The length of `v`'s compact JSON encoding (what the response carries),
/// counted without building the text.
fn json_len(v: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0 += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    match serde_json::to_writer(&mut c, v) {
        Ok(()) => c.0,
        Err(_) => u64::MAX,
    }
}

/// Seals many payloads on every core, keeping their order; each inline
/// object comes as its compact JSON text.
fn seal_all(payloads: &[&Value], ctx: &SealCtx<'_>) -> Vec<Result<(Vec<u8>, String)>> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8);
    if payloads.len() < 4 || threads < 2 {
        return seal_many_text(payloads, ctx);
    }
    let chunk = payloads.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = payloads
            .chunks(chunk)
            .map(|c| s.spawn(move || seal_many_text(c, ctx)))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| {
                h.join()
                    .unwrap_or_else(|_| vec![Err(Error::internal("a sealing thread panicked"))])
            })
            .collect()
    })
}

/// Builds one page for `body` (already scope-checked), as a JSON value
/// (the page route sends [`page_bytes`]).
pub fn page(
    node: &Node,
    id: &Identity,
    a: &Authority,
    body: &Map<String, Value>,
    limits: &SyncLimits,
) -> Result<Value> {
    let bytes = page_bytes(node, id, a, body, limits)?;
    serde_json::from_slice(&bytes).map_err(|e| Error::internal(format!("page text: {e}")))
}

/// `{"changes":[` headers `],` and the page's other members: serde_json
/// writes an object's members in key order, and every other member's key
/// sorts after `changes`, so this is its own rendering of the page (a test
/// parses and renders it again).
fn splice_page(headers: &[Vec<u8>], rest: &[u8]) -> Vec<u8> {
    let body: usize = headers.iter().map(Vec::len).sum::<usize>() + headers.len();
    let mut out = Vec::with_capacity(CHANGES_OPEN.len() + body + 1 + rest.len());
    out.extend_from_slice(CHANGES_OPEN);
    for (i, h) in headers.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(h);
    }
    out.extend_from_slice(b"],");
    out.extend_from_slice(rest.get(1..).unwrap_or_default());
    out
}

const CHANGES_OPEN: &[u8] = b"{\"changes\":[";

/// One change header's compact JSON text around its inline object's text
/// `obj`: what `serde_json::to_vec` gives for the header as a value
/// (members in key order), written without building it.
fn header_json(
    seq: u64,
    kind: &str,
    collection_id: &str,
    record_id: &str,
    occurred_at: &str,
    obj: &[u8],
) -> serde_json::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(obj.len() + 256);
    out.extend_from_slice(b"{\"collection_id\":");
    serde_json::to_writer(&mut out, collection_id)?;
    out.extend_from_slice(format!(",\"id\":\"change_{seq}\",\"object\":").as_bytes());
    out.extend_from_slice(obj);
    out.extend_from_slice(b",\"occurred_at\":");
    serde_json::to_writer(&mut out, occurred_at)?;
    out.extend_from_slice(b",\"record_id\":");
    serde_json::to_writer(&mut out, record_id)?;
    out.extend_from_slice(format!(",\"sequence\":{seq},\"type\":").as_bytes());
    serde_json::to_writer(&mut out, kind)?;
    out.push(b'}');
    Ok(out)
}

/// [`page`] as the compact JSON text the route sends: each change header is
/// rendered once, and its length is what the response ceiling counts.
pub fn page_bytes(
    node: &Node,
    id: &Identity,
    a: &Authority,
    body: &Map<String, Value>,
    limits: &SyncLimits,
) -> Result<Vec<u8>> {
    check_scope(a, body)?;
    let req = parse_page_request(body, limits)?;
    if let Some(f) = &req.expected_feed_id
        && f != node.feed_id()
    {
        return Err(Error::new(
            Code::SyncFeedMismatch,
            "expected_feed_id is not this node's current feed",
        ));
    }
    let collections = node.collections()?;
    let collection = collections["collections"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["id"] == req.collection_id.as_str()))
        .cloned()
        .ok_or_else(|| {
            Error::new(
                Code::CollectionNotFound,
                format!("Collection {} was not found", req.collection_id),
            )
        })?;
    let now = node.clock.now().as_second();
    let publisher = id.publisher();
    let ctx = SealCtx {
        key: &id.signing,
        publisher_id: &publisher.id,
        recipient: &req.recipient,
        issued_at: now,
        ttl_seconds: limits.grant_ttl_seconds as i64,
    };
    let max = limits.max_response_bytes;
    let (mut coll_obj, coll_root) = seal(
        &object_of([
            ("protocol", OBJECT_PROTOCOL.into()),
            ("kind", "collection".into()),
            ("collection", collection),
        ]),
        &ctx,
    )?;
    let coll_size = json_len(&coll_obj);
    if coll_size >= max {
        return Err(Error::new(
            Code::SyncObjectTooLarge,
            "the collection object exceeds the response ceiling",
        ));
    }
    let mut feed = node.changes(&ChangesRequest {
        collection_id: Some(req.collection_id.clone()),
        cursor: req.cursor.clone(),
        limit: Some(req.limit),
    })?;
    let rows = match feed.get_mut("changes").map(Value::take) {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let row_count = rows.len();
    let feed_more = feed["has_more"].as_bool().unwrap_or(false);
    let mut cursor_now = feed["cursor"].as_str().unwrap_or_default().to_owned();
    if req.cursor.is_none() && rows.is_empty() {
        cursor_now = cursor::encode(node.feed_id(), Some(&req.collection_id), 0);
    }
    let mut built: Vec<Built> = Vec::new();
    // Every accepted header's compact JSON text, in order: the page is
    // spliced from them, and its size is theirs, the commas between them
    // and the rest of the page.
    let mut headers: Vec<Vec<u8>> = Vec::new();
    let mut plaintext = 0u64;
    let mut projected = coll_size + 1024;
    // 1. The changes the plaintext budget admits, their payloads.
    struct Cand {
        i: usize,
        seq: u64,
        kind: &'static str,
        record_id: String,
        occurred_at: String,
        payload: Value,
    }
    let mut cands: Vec<Cand> = Vec::new();
    // The records' contents, read together once the budget is known: their
    // candidates, digests and sizes.
    let mut content_of: Vec<usize> = Vec::new();
    let mut contents: Vec<(Sha256Hex, u64)> = Vec::new();
    let mut budget_stop = false;
    for (i, mut ch) in rows.into_iter().enumerate() {
        let seq = ch["sequence"].as_u64().unwrap_or(0);
        let kind: &'static str = if ch["type"] == "record.created" {
            "record.created"
        } else {
            "record.tombstoned"
        };
        let payload = if kind == "record.created" {
            let env = &ch["record"];
            let size = env
                .pointer("/content/size")
                .and_then(Value::as_u64)
                .unwrap_or(0);
            if plaintext + size > req.max_plaintext_bytes {
                if cands.is_empty() {
                    return Err(Error::new(
                        Code::SyncRecordTooLarge,
                        "the next record exceeds the page's plaintext budget",
                    ));
                }
                budget_stop = true;
                break;
            }
            plaintext += size;
            let sha = env
                .pointer("/content/sha256")
                .and_then(Value::as_str)
                .and_then(|s| Sha256Hex::parse(s).ok())
                .ok_or_else(|| Error::internal("stored envelope has no content digest"))?;
            content_of.push(cands.len());
            contents.push((sha, size));
            object_of([
                ("protocol", OBJECT_PROTOCOL.into()),
                ("kind", "record".into()),
                ("record", ch["record"].take()),
            ])
        } else {
            object_of([
                ("protocol", OBJECT_PROTOCOL.into()),
                ("kind", "tombstone".into()),
                ("tombstone", ch["tombstone"].take()),
            ])
        };
        cands.push(Cand {
            i,
            seq,
            kind,
            record_id: ch["record_id"].as_str().unwrap_or_default().to_owned(),
            occurred_at: ch["occurred_at"].as_str().unwrap_or_default().to_owned(),
            payload,
        });
    }
    // Their contents, in order.
    let bytes = node.content_bytes_many(&contents)?;
    for (c, bytes) in content_of.iter().zip(bytes) {
        let content = object_of([
            ("encoding", "base64url".into()),
            ("data", b64u(&bytes).into()),
        ]);
        if let Value::Object(m) = &mut cands[*c].payload {
            m.insert("content".into(), content);
        }
    }
    // 2. Sealed on every core (each object has its own keys and nonces).
    let payloads: Vec<&Value> = cands.iter().map(|c| &c.payload).collect();
    let sealed = seal_all(&payloads, &ctx);
    // 3. Accepted in order while the projected page fits.
    let mut stopped = false;
    for (c, res) in cands.iter().zip(sealed) {
        let (obj, root) = res?;
        let text = header_json(
            c.seq,
            c.kind,
            &req.collection_id,
            &c.record_id,
            &c.occurred_at,
            &obj,
        )
        .map_err(|e| Error::internal(format!("cannot render: {e}")))?;
        drop(obj);
        let hsize = text.len() as u64;
        if hsize >= max {
            return Err(Error::new(
                Code::SyncObjectTooLarge,
                "one sync object exceeds the response ceiling",
            ));
        }
        if projected + hsize > max {
            if built.is_empty() {
                return Err(Error::new(
                    Code::SyncResponseTooLarge,
                    "the page cannot fit the response ceiling",
                ));
            }
            stopped = true;
            break;
        }
        projected += hsize;
        headers.push(text);
        built.push(Built {
            root,
            more_after: c.i + 1 < row_count || feed_more,
            seq: c.seq,
            kind: c.kind,
            record_id: c.record_id.clone(),
            occurred_at: c.occurred_at.clone(),
        });
    }
    let mut has_more = stopped || budget_stop || built.last().is_some_and(|b| b.more_after);
    // The cursor after a change (only the page's last one is sent).
    let cursor_after =
        |b: &Built| cursor::encode(node.feed_id(), Some(&req.collection_id), b.seq as i64);
    if let Some(last) = built.last() {
        cursor_now = cursor_after(last);
    }
    loop {
        let changes: Vec<(u64, &str, &str, &str, &str)> = built
            .iter()
            .map(|b| {
                (
                    b.seq,
                    b.kind,
                    b.record_id.as_str(),
                    b.occurred_at.as_str(),
                    b.root.as_str(),
                )
            })
            .collect();
        let control = control_payload(
            node.node_id(),
            node.feed_id(),
            &req.collection_id,
            req.cursor.as_deref(),
            &cursor_now,
            has_more,
            &coll_root,
            &changes,
        );
        let (control_obj, _) = seal(&control, &ctx)?;
        let mut m = Map::new();
        m.insert("protocol".into(), PROTOCOL.into());
        m.insert("origin_node_id".into(), node.node_id().into());
        m.insert("feed_id".into(), node.feed_id().into());
        m.insert("collection_id".into(), req.collection_id.clone().into());
        if let Some(c) = &req.cursor {
            m.insert("previous_cursor".into(), c.clone().into());
        }
        m.insert("cursor".into(), cursor_now.clone().into());
        m.insert("has_more".into(), has_more.into());
        m.insert("collection_object".into(), coll_obj.take());
        m.insert("control_object".into(), control_obj);
        let rest =
            serde_json::to_vec(&m).map_err(|e| Error::internal(format!("cannot render: {e}")))?;
        let n = headers.len() as u64;
        let size = CHANGES_OPEN.len() as u64
            + headers.iter().map(|h| h.len() as u64).sum::<u64>()
            + n.saturating_sub(1)
            + 2
            + (rest.len() as u64).saturating_sub(1);
        if size <= max {
            return Ok(splice_page(&headers, &rest));
        }
        // Too large: drop the last change.
        coll_obj = m.remove("collection_object").unwrap_or_default();
        if built.len() <= 1 {
            return Err(Error::new(
                Code::SyncResponseTooLarge,
                "the page cannot fit the response ceiling",
            ));
        }
        built.pop();
        headers.pop();
        cursor_now = built.last().map(cursor_after).unwrap_or_default();
        has_more = true;
    }
}

#[cfg(test)]
mod tests {
    use super::{header_json, json_len, splice_page};
    use serde_json::{Value, json};

    #[test]
    fn a_spliced_page_is_the_rendering_of_the_page_with_its_headers() {
        let headers = [
            json!({"id": "change_1", "object": {"a": "x\"y\u{1}", "n": [1, 2]}}),
            json!({"id": "change_2", "é": "\u{2028}"}),
            json!({"id": "change_3"}),
        ];
        for n in 0..=headers.len() {
            let h = headers[..n].to_vec();
            let texts: Vec<Vec<u8>> = h
                .iter()
                .map(|v| serde_json::to_vec(v).expect("json"))
                .collect();
            let rest = json!({"protocol": "p", "z": {"k": true}, "control_object": {}});
            let rest = serde_json::to_vec(&rest).expect("json");
            let mut page =
                json!({"protocol": "p", "changes": [], "z": {"k": true}, "control_object": {}});
            page["changes"] = Value::Array(h.clone());
            let want = serde_json::to_vec(&page).expect("json");
            assert_eq!(splice_page(&texts, &rest), want, "{n} headers");
            let lens: u64 = texts.iter().map(|t| t.len() as u64).sum();
            assert_eq!(lens, h.iter().map(json_len).sum::<u64>());
        }
    }

    #[test]
    fn a_header_is_rendered_as_its_value() {
        let obj = json!({"profile": "p", "bundle": {"blocks": []}, "grant": {"k": [1, "x"]}});
        let obj_text = serde_json::to_vec(&obj).expect("json");
        for (coll, rid, at) in [
            ("default", "rec_00", "2026-12-06T00:00:00.000Z"),
            ("c\"\\\u{1}", "r\u{2028}é", "t\n"),
        ] {
            for (seq, kind) in [
                (1, "record.created"),
                (9_007_199_254_740_991, "record.tombstoned"),
            ] {
                let want = json!({
                    "id": format!("change_{seq}"), "type": kind, "sequence": seq,
                    "collection_id": coll, "record_id": rid, "occurred_at": at, "object": obj,
                });
                assert_eq!(
                    header_json(seq, kind, coll, rid, at, &obj_text).expect("text"),
                    serde_json::to_vec(&want).expect("json")
                );
            }
        }
    }
}
