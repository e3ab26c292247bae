//! The destination's page apply (facts §13.2 steps 3–4): every check runs
//! before anything is written; the verified objects are then imported in
//! one write of the node's writer. A failure anywhere leaves the node and
//! the checkpoint as they were.

use super::adds::encoding::b64u_decode;
use super::adds::jcs::canonical;
use super::adds::object::Principal;
use super::inline::{OpenCtx, Opened, open, open_expecting, open_many};
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

/// Threads that open a page's objects: every core, at most 8.
fn verify_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(8)
}

/// Opens many objects on `threads` threads; the results come back in page
/// order, one per object, each exactly what [`open`] gives for that object
/// alone (the caller takes the first failure in page order).
fn open_all(
    objs: &[&Inline],
    ctx: &OpenCtx<'_>,
    threads: usize,
) -> Vec<Result<(Value, &'static str)>> {
    if objs.len() < 4 || threads < 2 {
        return open_many(objs, ctx);
    }
    let chunk = objs.len().div_ceil(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = objs
            .chunks(chunk)
            .map(|c| s.spawn(move || open_many(c, ctx)))
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
/// It copies the page; the pull hands its page to [`parse_page`], which
/// moves the grants out instead.
pub fn verify_page(
    node: &Node,
    page: &Value,
    ask: Ask<'_>,
    pos: &Position,
    r: &Reader<'_>,
    now: i64,
) -> Result<Verified> {
    let view = parse_page(page.clone(), ask.limit, r)?;
    verify_view(node, view, ask, pos, r, now)
}

/// Step 3 alone (facts §13.2): the page's shape and its node id. Nothing
/// in the result is trusted yet: the pull uses its cursor only to request
/// the next page early, and [`verify_view`] decides.
pub fn parse_page(page: Value, limit: u64, r: &Reader<'_>) -> Result<PageView> {
    let view: PageView = validate_page(page, limit, r.limits)?;
    if view.origin_node_id != r.expected_node_id {
        return Err(Error::new(
            Code::UnexpectedPeerNode,
            "the page's origin_node_id is not the configured peer node",
        ));
    }
    Ok(view)
}

/// Steps 4a–4f (facts §13.2) on a page that passed [`parse_page`].
pub fn verify_view(
    node: &Node,
    view: PageView,
    ask: Ask<'_>,
    pos: &Position,
    r: &Reader<'_>,
    now: i64,
) -> Result<Verified> {
    verify_view_on(node, view, ask, pos, r, now, verify_threads())
}

/// [`verify_view`] opening the changes' objects on `threads` threads: the
/// result (the page's ops, or its first failure in page order) is the
/// same for every count, one included.
fn verify_view_on(
    node: &Node,
    view: PageView,
    ask: Ask<'_>,
    pos: &Position,
    r: &Reader<'_>,
    now: i64,
    threads: usize,
) -> Result<Verified> {
    let Ask {
        collection_id,
        limit: _,
        budget,
    } = ask;
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
    // c. control: its plaintext must be the canonical text of the payload
    // this page implies. A plaintext that is not fails as `open` fails on
    // it (not canonical JSON, or not a payload's shape), and otherwise
    // does not bind the page: it is canonical, so it is the rebuilt text
    // only if it is that text byte for byte.
    let rebuilt = canonical(&view.rebuilt_control()).map_err(|e| e.into_error(Code::Internal))?;
    match open_expecting(&view.control_object, &ctx, &rebuilt)? {
        Opened::Expected => {}
        Opened::Parsed(..) => {
            return Err(Error::new(
                Code::SyncPageControlInvalid,
                "the page-control object does not bind this page",
            ));
        }
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
    let opened = open_all(&objs, &ctx, threads);
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

#[cfg(test)]
mod tests {
    //! The first failure in page order wins, whatever the thread count:
    //! pages whose change objects fail at chosen positions (the tests hold
    //! the publisher's key, so they reseal the page-control object and the
    //! failure is the change's own).

    use super::super::adds::grant::{self, GrantParams};
    use super::super::adds::{encoding, object_of, random_urn_uuid};
    use super::super::inline::{SealCtx, seal};
    use super::super::roundtrip::{NOW, Pair, collect, pair, request};
    use super::super::source;
    use super::super::wire::validate_page;
    use super::*;
    use crate::wire::ed25519::Keypair;

    const LIMIT: u64 = 100;
    const BUDGET: u64 = 1 << 20;

    #[derive(Debug, Clone, Copy)]
    enum Fault {
        /// The object's grant is another issuer's: it fails while opening.
        ForeignGrant,
        /// A valid object of the wrong kind: it fails after opening.
        WrongKind,
        /// A valid record whose content bytes are not its digest's: it
        /// fails when the record is prepared for import.
        BadContent,
    }

    impl Fault {
        fn code(self) -> Code {
            match self {
                Fault::ForeignGrant => Code::UnexpectedSyncPublisher,
                Fault::WrongKind => Code::SyncChangeMismatch,
                Fault::BadContent => Code::ReplicaContentHashMismatch,
            }
        }
    }

    struct Fixture {
        p: Pair,
        ids: Vec<String>,
        page: Value,
    }

    impl Fixture {
        /// Runs `go` as the destination opening this page's objects.
        fn as_reader<R>(&self, max_bytes: u64, go: impl FnOnce(&OpenCtx<'_>) -> R) -> R {
            let reader_public = encoding::b64u(&grant::x25519_public(&self.p.dst_id.x25519_secret));
            let publisher = self.p.src_id.publisher();
            go(&OpenCtx {
                publisher: &publisher,
                reader_id: &self.p.dst_id.id,
                reader_secret: &self.p.dst_id.x25519_secret,
                reader_public: &reader_public,
                now: NOW,
                max_bytes,
            })
        }
    }

    /// A source with `n` records and the page of all of them.
    fn fixture(n: usize) -> Fixture {
        let p = pair();
        let ids = (0..n)
            .map(|i| {
                collect(
                    &p.src,
                    "default",
                    &format!("record number {i}"),
                    &format!("e{i}"),
                )
            })
            .collect();
        let body = request(&p.dst_id.recipient(), &Position::default(), LIMIT, BUDGET);
        let page =
            source::page(&p.src, &p.src_id, &p.auth, &body, &SyncLimits::default()).expect("page");
        Fixture { p, ids, page }
    }

    fn seal_ctx<'a>(p: &'a Pair, rcpt: &'a Recipient) -> SealCtx<'a> {
        SealCtx {
            key: &p.src_id.signing,
            publisher_id: &p.src_id.id,
            recipient: rcpt,
            issued_at: NOW,
            ttl_seconds: 300,
        }
    }

    use super::super::adds::grant::Recipient;

    /// The inline object `obj` (wire-decoded as `inline`) with its grant
    /// replaced by another issuer's grant for the same root.
    fn foreign_grant(obj: &Value, inline: &Inline, rcpt: &Recipient) -> Value {
        let mut obj = obj.clone();
        let params = GrantParams {
            grant_id: random_urn_uuid().expect("uuid"),
            manifest_cid: inline.bundle.root.clone(),
            issuer_id: "did:example:mallory".into(),
            audience: rcpt.clone(),
            issued_at: NOW,
            expires_at: NOW + 300,
            not_before: None,
            ephemeral_secret: [3u8; 32],
            nonce: [4u8; 12],
        };
        obj["grant"] =
            grant::issue(&[1u8; 32], &params, &Keypair::from_seed(&[5u8; 32])).expect("grant");
        obj
    }

    /// Puts `fault` into change `k` of the page.
    fn inject(f: &mut Fixture, k: usize, fault: Fault) {
        let rcpt = f.p.dst_id.recipient();
        let limits = SyncLimits::default();
        let view = validate_page(f.page.clone(), LIMIT, &limits).expect("shape");
        let h = &view.changes[k];
        let sealed = |payload: Value| seal(&payload, &seal_ctx(&f.p, &rcpt)).expect("seal").0;
        let obj = match fault {
            Fault::ForeignGrant => foreign_grant(&f.page["changes"][k]["object"], &h.object, &rcpt),
            Fault::WrongKind => sealed(object_of([
                ("protocol", super::super::wire::OBJECT_PROTOCOL.into()),
                ("kind", "tombstone".into()),
                (
                    "tombstone",
                    object_of([
                        ("record_id", h.record_id.as_str().into()),
                        ("collection_id", "default".into()),
                        ("tombstoned_at", h.occurred_at.as_str().into()),
                    ]),
                ),
            ])),
            Fault::BadContent => {
                let (mut payload, _) = f
                    .as_reader(limits.max_response_bytes, |ctx| open(&h.object, ctx))
                    .expect("open");
                let data = payload["content"]["data"].as_str().expect("data");
                let mut bytes = b64u_decode(data).expect("b64u");
                bytes[0] ^= 1;
                payload["content"]["data"] = encoding::b64u(&bytes).into();
                sealed(payload)
            }
        };
        f.page["changes"][k]["object"] = obj;
        // The control object binds the objects' roots: reseal it.
        let view = validate_page(f.page.clone(), LIMIT, &limits).expect("shape");
        f.page["control_object"] = sealed(view.rebuilt_control());
    }

    /// Verifies the page with `threads` opening threads and imports it
    /// when it passes.
    fn apply(f: &Fixture, threads: usize) -> Result<ReplicaOutcome> {
        let limits = SyncLimits::default();
        let publisher = f.p.src_id.publisher();
        let r = Reader {
            publisher: &publisher,
            expected_node_id: f.p.src.node_id(),
            reader_id: &f.p.dst_id.id,
            reader_secret: &f.p.dst_id.x25519_secret,
            limits: &limits,
        };
        let ask = Ask {
            collection_id: "default",
            limit: LIMIT,
            budget: BUDGET,
        };
        let view = parse_page(f.page.clone(), LIMIT, &r)?;
        let v = verify_view_on(&f.p.dst, view, ask, &Position::default(), &r, NOW, threads)?;
        import(&f.p.dst, v).map(|(out, _)| out)
    }

    fn imported(f: &Fixture) -> Vec<bool> {
        f.ids
            .iter()
            .map(|id| f.p.dst.read_record(id).is_ok())
            .collect()
    }

    /// With `faults` in the page, every thread count reports the same
    /// failure, the first in page order, and nothing of the page is
    /// imported (the page is verified whole before its one import).
    fn first_fault_wins(n: usize, faults: &[(usize, Fault)]) {
        let mut f = fixture(n);
        for &(k, fault) in faults {
            inject(&mut f, k, fault);
        }
        let (_, first) = faults
            .iter()
            .min_by_key(|(k, _)| *k)
            .copied()
            .expect("a fault");
        let mut seen: Option<(Code, String)> = None;
        for threads in [1, 2, 3] {
            let e = apply(&f, threads).expect_err("a fault");
            assert_eq!(e.code(), first.code(), "{faults:?}, {threads} threads: {e}");
            let got = (e.code(), e.message().to_owned());
            if let Some(s) = &seen {
                assert_eq!(&got, s, "{faults:?}, {threads} threads");
            }
            seen = Some(got);
            assert_eq!(imported(&f), vec![false; n], "{faults:?}");
        }
    }

    #[test]
    fn after_a_failed_page_a_clean_page_of_the_same_changes_imports_whole() {
        let n = 9;
        let mut clean = fixture(n);
        inject(&mut clean, 4, Fault::BadContent);
        assert!(apply(&clean, 2).is_err());
        clean.page = {
            let body = request(
                &clean.p.dst_id.recipient(),
                &Position::default(),
                LIMIT,
                BUDGET,
            );
            source::page(
                &clean.p.src,
                &clean.p.src_id,
                &clean.p.auth,
                &body,
                &SyncLimits::default(),
            )
            .expect("page")
        };
        let out = apply(&clean, 2).expect("clean page");
        assert_eq!(out.records_inserted, n as u64);
        assert_eq!(imported(&clean), vec![true; n]);
    }

    #[test]
    fn one_failing_change_first_middle_or_last_is_the_error() {
        let n = 9;
        for k in [0, n / 2, n - 1] {
            first_fault_wins(n, &[(k, Fault::ForeignGrant)]);
        }
        first_fault_wins(n, &[(0, Fault::WrongKind)]);
        first_fault_wins(n, &[(n - 1, Fault::WrongKind)]);
        first_fault_wins(n, &[(0, Fault::BadContent)]);
        first_fault_wins(n, &[(n / 2, Fault::BadContent)]);
    }

    #[test]
    fn of_several_failing_changes_the_first_in_page_order_wins() {
        let n = 9;
        // A later change that fails while opening does not hide an earlier
        // one that fails after opening, nor the reverse; the chunk
        // boundaries of 2, 3 and 4 threads fall between them or not.
        first_fault_wins(n, &[(1, Fault::BadContent), (7, Fault::ForeignGrant)]);
        first_fault_wins(n, &[(1, Fault::ForeignGrant), (7, Fault::WrongKind)]);
        first_fault_wins(n, &[(0, Fault::WrongKind), (8, Fault::ForeignGrant)]);
        first_fault_wins(
            n,
            &[
                (2, Fault::WrongKind),
                (3, Fault::ForeignGrant),
                (6, Fault::BadContent),
                (8, Fault::ForeignGrant),
            ],
        );
    }

    #[test]
    fn open_all_gives_each_objects_own_result_in_page_order() {
        let mut f = fixture(9);
        inject(&mut f, 2, Fault::ForeignGrant);
        inject(&mut f, 6, Fault::ForeignGrant);
        let limits = SyncLimits::default();
        let view = validate_page(f.page.clone(), LIMIT, &limits).expect("shape");
        let objs: Vec<&Inline> = view.changes.iter().map(|h| &h.object).collect();
        f.as_reader(limits.max_response_bytes, |ctx| {
            let one: Vec<Result<(Value, &str)>> = objs.iter().map(|o| open(o, ctx)).collect();
            for threads in [1, 2, 3, 4, 8] {
                let all = open_all(&objs, ctx, threads);
                assert_eq!(all.len(), one.len());
                for (i, (a, b)) in all.iter().zip(&one).enumerate() {
                    match (a, b) {
                        (Ok(x), Ok(y)) => assert_eq!(x, y, "object {i}, {threads} threads"),
                        (Err(x), Err(y)) => assert_eq!(
                            (x.code(), x.message()),
                            (y.code(), y.message()),
                            "object {i}"
                        ),
                        _ => panic!("object {i}, {threads} threads: {a:?} vs {b:?}"),
                    }
                    assert_eq!(a.is_err(), i == 2 || i == 6, "object {i}");
                }
            }
        });
    }

    /// The page-control object opened expecting its text: the page's own
    /// control is that text (and is what `open` parses to a page payload
    /// of that text); any other plaintext is what `open` gives, a failure
    /// included.
    #[test]
    fn open_expecting_is_open_unless_the_plaintext_is_the_expected_text() {
        let f = fixture(3);
        let limits = SyncLimits::default();
        let view = validate_page(f.page.clone(), LIMIT, &limits).expect("shape");
        let rebuilt = canonical(&view.rebuilt_control()).expect("canonical");
        let rcpt = f.p.dst_id.recipient();
        let sealed = |payload: Value| seal(&payload, &seal_ctx(&f.p, &rcpt)).expect("seal").0;
        let mut other = view.rebuilt_control();
        other["has_more"] = true.into();
        let foreign = foreign_grant(&f.page["control_object"], &view.control_object, &rcpt);
        let bad_shape = sealed(object_of([
            ("protocol", super::super::wire::OBJECT_PROTOCOL.into()),
            ("kind", "page".into()),
        ]));
        let wire = |obj: Value| {
            let mut page = f.page.clone();
            page["control_object"] = obj;
            validate_page(page, LIMIT, &limits)
                .expect("shape")
                .control_object
        };
        f.as_reader(limits.max_response_bytes, |ctx| {
            // The page's own control object.
            let (v, kind) = open(&view.control_object, ctx).expect("open");
            assert_eq!(
                (kind, canonical(&v).expect("canonical")),
                ("page", rebuilt.clone())
            );
            assert!(matches!(
                open_expecting(&view.control_object, ctx, &rebuilt),
                Ok(Opened::Expected)
            ));
            // Another page payload, a failing grant, a payload of no shape.
            for obj in [
                wire(sealed(other.clone())),
                wire(foreign.clone()),
                wire(bad_shape.clone()),
            ] {
                let want = open(&obj, ctx);
                match (open_expecting(&obj, ctx, &rebuilt), want) {
                    (Ok(Opened::Parsed(v, kind)), Ok((w, wkind))) => {
                        assert_eq!((v, kind), (w, wkind));
                        assert_eq!(kind, "page");
                    }
                    (Err(e), Err(w)) => {
                        assert_eq!((e.code(), e.message()), (w.code(), w.message()));
                    }
                    (got, want) => panic!("{got:?} against {want:?}"),
                }
            }
            assert_eq!(
                open(&wire(foreign.clone()), ctx)
                    .map(|_| ())
                    .map_err(|e| e.code()),
                Err(Code::UnexpectedSyncPublisher)
            );
            assert_eq!(
                open(&wire(bad_shape.clone()), ctx)
                    .map(|_| ())
                    .map_err(|e| e.code()),
                Err(Code::SyncObjectInvalid)
            );
        });
    }
}
