//! Library-level round trips: this project's source pages verify and
//! apply at this project's destination (paging, budgets, tombstones,
//! resume, replays, conflicts, feed replacement).

use super::adds::grant::Recipient;
use super::apply::{Ask, Position, Reader, import, verify_page};
use super::source;
use super::store::{Authority, SyncStore};
use super::wire::{PROTOCOL, SyncLimits};
use crate::clock::FixedClock;
use crate::data::node::{InitRequest, init};
use crate::data::{CollectRequest, Node, TombstoneRequest};
use crate::error::Code;
use serde_json::{Map, Value, json};
use std::sync::Arc;
use std::time::Duration;

pub(super) const NOW: i64 = 1_796_083_200;

pub(super) fn node(root: &std::path::Path) -> Node {
    let clock = FixedClock(jiff::Timestamp::from_second(NOW).expect("t"));
    init(
        root,
        &InitRequest::default(),
        &clock,
        Duration::from_secs(5),
    )
    .expect("init");
    Node::open(root, Arc::new(clock), Duration::from_secs(5)).expect("open")
}

pub(super) fn collect(n: &Node, coll: &str, text: &str, ext: &str) -> String {
    let r = n
        .collect(&CollectRequest {
            collection_id: Some(coll.into()),
            collector_id: Some("text".into()),
            input: Some(json!({"text": text, "external_id": ext, "metadata": {"k": ext}})),
            cursor: None,
        })
        .expect("collect");
    r.records[0]["id"].as_str().expect("id").to_owned()
}

pub(super) struct Pair {
    pub(super) _t: tempfile::TempDir,
    pub(super) src: Node,
    pub(super) dst: Node,
    pub(super) auth: Authority,
    pub(super) src_id: super::store::Identity,
    pub(super) dst_id: super::store::Identity,
}

pub(super) fn pair() -> Pair {
    let t = tempfile::tempdir().expect("tmp");
    let src = node(&t.path().join("src"));
    let dst = node(&t.path().join("dst"));
    let ss = SyncStore::new(src.data_dir(), Duration::from_secs(5));
    let ds = SyncStore::new(dst.data_dir(), Duration::from_secs(5));
    let src_id = ss
        .keygen("did:example:src", "2026-12-01T00:00:00.000Z")
        .expect("keygen");
    let dst_id = ds
        .keygen("did:example:dst", "2026-12-01T00:00:00.000Z")
        .expect("keygen");
    let auth = Authority {
        peer_id: "dst".into(),
        bearer_sha256: [7u8; 32],
        collection_ids: vec!["default".into()],
        recipient: dst_id.recipient(),
    };
    Pair {
        _t: t,
        src,
        dst,
        auth,
        src_id,
        dst_id,
    }
}

pub(super) fn request(
    rcpt: &Recipient,
    pos: &Position,
    limit: u64,
    budget: u64,
) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("protocol".into(), PROTOCOL.into());
    m.insert("collection_id".into(), "default".into());
    if let (Some(c), Some(f)) = (&pos.cursor, &pos.feed_id) {
        m.insert("cursor".into(), c.clone().into());
        m.insert("expected_feed_id".into(), f.clone().into());
    }
    m.insert("limit".into(), limit.into());
    m.insert("max_plaintext_bytes".into(), budget.into());
    m.insert("recipient".into(), rcpt.to_json());
    m
}

impl Pair {
    fn step(
        &self,
        pos: &Position,
        limit: u64,
        budget: u64,
    ) -> crate::error::Result<(crate::data::replica::ReplicaOutcome, Position, bool)> {
        let limits = SyncLimits::default();
        let page = source::page(
            &self.src,
            &self.src_id,
            &self.auth,
            &request(&self.dst_id.recipient(), pos, limit, budget),
            &limits,
        )?;
        let publisher = self.src_id.publisher();
        let r = Reader {
            publisher: &publisher,
            expected_node_id: self.src.node_id(),
            reader_id: &self.dst_id.id,
            reader_secret: &self.dst_id.x25519_secret,
            limits: &limits,
        };
        let v = verify_page(
            &self.dst,
            &page,
            Ask {
                collection_id: "default",
                limit,
                budget,
            },
            pos,
            &r,
            NOW,
        )?;
        let (out, v) = import(&self.dst, v)?;
        Ok((
            out,
            Position {
                feed_id: Some(v.feed_id),
                cursor: Some(v.cursor),
            },
            v.has_more,
        ))
    }
}

#[test]
fn pages_resume_and_replay() {
    let p = pair();
    let mut ids = Vec::new();
    for i in 0..25 {
        ids.push(collect(
            &p.src,
            "default",
            &format!("record number {i}"),
            &format!("e{i}"),
        ));
    }
    for id in &ids[..3] {
        p.src
            .tombstone(&TombstoneRequest {
                record_id: id.clone(),
                reason: Some("gone".into()),
            })
            .expect("tomb");
    }
    let mut pos = Position::default();
    let mut pages = 0;
    let mut totals = (0, 0, 0);
    loop {
        let (o, next, more) = p.step(&pos, 10, 1 << 20).expect("page");
        totals.0 += o.records_inserted;
        totals.1 += o.records_existing;
        totals.2 += o.tombstones_applied;
        pages += 1;
        pos = next;
        if !more {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(totals, (25, 0, 3));
    for id in &ids[3..] {
        assert_eq!(
            p.dst.read_record(id).expect("copied").record,
            p.src.read_record(id).expect("src").record
        );
    }
    assert_eq!(
        p.dst.read_record(&ids[0]).expect_err("tomb").code(),
        Code::RecordTombstoned
    );
    // At the end: an empty page with cursor == previous_cursor.
    let (o, again, more) = p.step(&pos, 10, 1 << 20).expect("empty page");
    assert_eq!((o.records_inserted, more), (0, false));
    assert_eq!(again.cursor, pos.cursor);
    // New data on the source is picked up from the checkpoint.
    let late = collect(&p.src, "default", "a late record", "late");
    let (o, _, _) = p.step(&pos, 10, 1 << 20).expect("resume");
    assert_eq!(o.records_inserted, 1);
    assert!(p.dst.read_record(&late).is_ok());
    // A replay from the start is idempotent.
    let (o, _, _) = p.step(&Position::default(), 100, 10 << 20).expect("replay");
    assert_eq!(
        (o.records_inserted, o.records_existing, o.tombstones_applied),
        (0, 26, 0)
    );
}

#[test]
fn budget_and_scope() {
    let p = pair();
    collect(&p.src, "default", &"x".repeat(100), "a");
    collect(&p.src, "default", &"y".repeat(100), "b");
    // A budget that fits one record ends the page early with has_more.
    let (o, pos, more) = p.step(&Position::default(), 10, 150).expect("page");
    assert_eq!((o.records_inserted, more), (1, true));
    let (o, _, more) = p.step(&pos, 10, 150).expect("page 2");
    assert_eq!((o.records_inserted, more), (1, false));
    // The next record alone over the budget is 413 at the source.
    let e = p
        .step(&Position::default(), 10, 50)
        .map(|_| ())
        .expect_err("too large");
    assert_eq!(e.code(), Code::SyncRecordTooLarge);
    // Another collection or another recipient is outside the scope.
    let limits = SyncLimits::default();
    let mut body = request(&p.dst_id.recipient(), &Position::default(), 10, 100);
    body.insert("collection_id".into(), "other".into());
    let e = source::page(&p.src, &p.src_id, &p.auth, &body, &limits).expect_err("scope");
    assert_eq!(e.code(), Code::PageScopeDenied);
    let eve = Recipient::new("did:example:eve", &[9u8; 32]);
    let body = request(&eve, &Position::default(), 10, 100);
    let e = source::page(&p.src, &p.src_id, &p.auth, &body, &limits).expect_err("scope");
    assert_eq!(e.code(), Code::PageScopeDenied);
    // A stale feed id is refused by the source.
    let stale = Position {
        feed_id: Some("feed_00000000-0000-4000-8000-000000000000".into()),
        cursor: pos.cursor.clone(),
    };
    let body = request(&p.dst_id.recipient(), &stale, 10, 100);
    let e = source::page(&p.src, &p.src_id, &p.auth, &body, &limits).expect_err("feed");
    assert_eq!(e.code(), Code::SyncFeedMismatch);
}

#[test]
fn conflicting_bytes_for_an_existing_record_fail_closed() {
    let p = pair();
    // The destination already holds a record with the same id but other
    // metadata (same identity subset: same id, different envelope).
    let id = collect(&p.src, "default", "same content", "same");
    let mut env = p.src.read_record(&id).expect("r").record;
    env["metadata"] = json!({"k": "tampered"});
    let def = crate::data::collection::normalize(&crate::data::collection::default_definition())
        .expect("def");
    let prepared = p
        .dst
        .prepare_replica_record(&def, &env, b"same content".to_vec())
        .expect("prep");
    p.dst
        .apply_replica(vec![crate::data::replica::ReplicaOp::Record(prepared)])
        .expect("seed");
    let e = p
        .step(&Position::default(), 10, 1 << 20)
        .map(|_| ())
        .expect_err("conflict");
    assert_eq!(e.code(), Code::ReplicaRecordConflict);
}

#[test]
fn the_source_keeps_pages_under_the_response_ceiling() {
    let p = pair();
    for i in 0..12 {
        collect(
            &p.src,
            "default",
            &format!("{i}:{}", "z".repeat(3000)),
            &format!("big{i}"),
        );
    }
    // A source with a small response ceiling: each page stops (or drops
    // changes from its end and rewinds its cursor) to fit it.
    let small = SyncLimits {
        max_response_bytes: 60_000,
        ..SyncLimits::default()
    };
    let big = SyncLimits::default();
    let publisher = p.src_id.publisher();
    let r = Reader {
        publisher: &publisher,
        expected_node_id: p.src.node_id(),
        reader_id: &p.dst_id.id,
        reader_secret: &p.dst_id.x25519_secret,
        limits: &big,
    };
    let mut pos = Position::default();
    let mut got = 0;
    let mut pages = 0;
    loop {
        let body = request(&p.dst_id.recipient(), &pos, 100, 1 << 20);
        let page = source::page(&p.src, &p.src_id, &p.auth, &body, &small).expect("page");
        assert!(page.to_string().len() <= 60_000);
        let ask = Ask {
            collection_id: "default",
            limit: 100,
            budget: 1 << 20,
        };
        let v = verify_page(&p.dst, &page, ask, &pos, &r, NOW).expect("verify");
        let (out, v) = import(&p.dst, v).expect("import");
        got += out.records_inserted;
        pages += 1;
        pos = Position {
            feed_id: Some(v.feed_id),
            cursor: Some(v.cursor),
        };
        if !v.has_more {
            break;
        }
    }
    assert_eq!(got, 12);
    assert!(pages >= 3, "{pages} pages");
    // A ceiling no single change fits: 413.
    let tiny = SyncLimits {
        max_response_bytes: 9_000,
        ..SyncLimits::default()
    };
    let body = request(&p.dst_id.recipient(), &Position::default(), 100, 1 << 20);
    let e = source::page(&p.src, &p.src_id, &p.auth, &body, &tiny).expect_err("too large");
    assert!(
        matches!(
            e.code(),
            Code::SyncResponseTooLarge | Code::SyncObjectTooLarge
        ),
        "{e}"
    );
}

#[test]
fn replica_records_are_rechecked_field_by_field() {
    let p = pair();
    let id = collect(&p.src, "default", "checked content", "chk");
    let env = p.src.read_record(&id).expect("r").record;
    let def = crate::data::collection::normalize(&crate::data::collection::default_definition())
        .expect("def");
    let prep = |e: &Value, b: &[u8]| {
        p.dst
            .prepare_replica_record(&def, e, b.to_vec())
            .map(|_| ())
            .map_err(|e| e.code())
    };
    assert_eq!(prep(&env, b"checked content"), Ok(()));
    assert_eq!(
        prep(&env, b"checked contenT"),
        Err(Code::ReplicaContentHashMismatch)
    );
    assert_eq!(
        prep(&env, b"checked"),
        Err(Code::ReplicaContentSizeMismatch)
    );
    let mut e = env.clone();
    e["source"]["uri"] = json!("urn:other");
    assert_eq!(
        prep(&e, b"checked content"),
        Err(Code::ReplicaRecordIdMismatch)
    );
    let mut e = env.clone();
    e["unknown"] = json!(1);
    assert_eq!(prep(&e, b"checked content"), Err(Code::InvalidRequest));
    let mut e = env.clone();
    e["ingested_at"] = json!("2026-02-30T00:00:00Z");
    assert_eq!(prep(&e, b"checked content"), Err(Code::InvalidDate));
    let mut other = def.clone();
    other.insert("schema".into(), json!({"version": "2"}));
    assert_eq!(
        p.dst
            .prepare_replica_record(&other, &env, b"checked content".to_vec())
            .map(|_| ())
            .map_err(|e| e.code()),
        Err(Code::ReplicaSchemaMismatch)
    );
    let mut tight = def.clone();
    tight.insert(
        "policy".into(),
        json!({"visibility": "private", "allowed_media_types": ["image/png"]}),
    );
    assert_eq!(
        p.dst
            .prepare_replica_record(&tight, &env, b"checked content".to_vec())
            .map(|_| ())
            .map_err(|e| e.code()),
        Err(Code::MediaTypeNotAllowed)
    );
}

#[test]
fn a_batched_page_import_reports_the_first_conflict_in_page_order_and_keeps_nothing() {
    use crate::data::replica::{ReplicaOp, prepare_tombstone};
    let p = pair();
    let def = crate::data::collection::normalize(&crate::data::collection::default_definition())
        .expect("def");
    let texts: Vec<String> = (0..5).map(|i| format!("batched record {i}")).collect();
    let ids: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| collect(&p.src, "default", t, &format!("b{i}")))
        .collect();
    let env = |i: usize| p.src.read_record(&ids[i]).expect("r").record;
    let op = |i: usize, e: &Value| {
        ReplicaOp::Record(
            p.dst
                .prepare_replica_record(&def, e, texts[i].as_bytes().to_vec())
                .expect("prep"),
        )
    };
    let tampered = |i: usize| {
        let mut e = env(i);
        e["metadata"] = json!({"k": "tampered"});
        e
    };
    // Records 1 and 3 are already here with other envelopes: a page of
    // 0..5 fails at 1 (not 3), and nothing of it stays.
    p.dst
        .apply_replica(vec![op(1, &tampered(1)), op(3, &tampered(3))])
        .expect("seed");
    let e = p
        .dst
        .apply_replica((0..5).map(|i| op(i, &env(i))).collect())
        .expect_err("conflict");
    assert_eq!(e.code(), Code::ReplicaRecordConflict);
    assert!(e.message().contains(&ids[1]), "{e}");
    for i in [0, 2, 4] {
        assert_eq!(
            p.dst.read_record(&ids[i]).expect_err("absent").code(),
            Code::RecordNotFound
        );
    }
    // The same records in a fresh node, one of them twice, then a
    // tombstone of one of them on the same page: in order.
    let q = pair();
    let mut ops: Vec<ReplicaOp> = (0..5).map(|i| op(i, &env(i))).collect();
    ops.push(op(2, &env(2)));
    let tomb = prepare_tombstone(&json!({
        "record_id": ids[4], "collection_id": "default",
        "tombstoned_at": "2026-12-01T00:00:01.000Z"
    }))
    .expect("tomb");
    ops.push(ReplicaOp::Tombstone(tomb));
    ops.push(op(0, &env(0)));
    let out = q.dst.apply_replica(ops).expect("apply");
    assert_eq!(
        (
            out.records_inserted,
            out.records_existing,
            out.tombstones_applied
        ),
        (5, 2, 1)
    );
    assert_eq!(
        q.dst.read_record(&ids[4]).expect_err("tomb").code(),
        Code::RecordTombstoned
    );
    for i in [0, 1, 2, 3] {
        assert_eq!(q.dst.read_record(&ids[i]).expect("r").record, env(i));
    }
}

#[test]
fn page_text_is_serde_jsons_own_rendering_of_the_page() {
    let p = pair();
    for i in 0..3 {
        collect(&p.src, "default", &format!("text {i}"), &format!("t{i}"));
    }
    let limits = SyncLimits::default();
    let mut pos = Position::default();
    // A first page (no previous cursor), a resumed one with changes, and
    // the empty last page.
    for limit in [2, 2, 2] {
        let body = request(&p.dst_id.recipient(), &pos, limit, 1 << 20);
        let text = source::page_bytes(&p.src, &p.src_id, &p.auth, &body, &limits).expect("page");
        let v: Value = serde_json::from_slice(&text).expect("json");
        assert_eq!(serde_json::to_vec(&v).expect("render"), text);
        pos = Position {
            feed_id: v["feed_id"].as_str().map(str::to_owned),
            cursor: v["cursor"].as_str().map(str::to_owned),
        };
    }
    // A page dropped to fit a small ceiling is spliced the same way.
    for i in 0..3 {
        collect(
            &p.src,
            "default",
            &format!("{i}:{}", "w".repeat(3000)),
            &format!("w{i}"),
        );
    }
    let small = SyncLimits {
        max_response_bytes: 30_000,
        ..SyncLimits::default()
    };
    let body = request(&p.dst_id.recipient(), &pos, 100, 1 << 20);
    let text = source::page_bytes(&p.src, &p.src_id, &p.auth, &body, &small).expect("page");
    assert!(text.len() <= 30_000);
    let v: Value = serde_json::from_slice(&text).expect("json");
    assert_eq!(serde_json::to_vec(&v).expect("render"), text);
    assert_eq!(v["has_more"], true);
}

#[test]
fn a_pulls_checkpoint_writer_saves_each_page_as_save_checkpoint_does() {
    use super::store::Checkpoint;
    let p = pair();
    let store = SyncStore::new(p.dst.data_dir(), Duration::from_secs(5));
    let cp = |cursor: &str, n: u64| Checkpoint {
        peer_base_url: "http://127.0.0.1:7742".into(),
        origin_node_id: "node_src".into(),
        feed_id: "feed_00000000-0000-4000-8000-000000000000".into(),
        publisher_id: "did:example:src".into(),
        publisher_ed25519_public_key: p.src_id.publisher().ed25519_public_key,
        cursor: cursor.into(),
        last_applied_at: "2026-12-01T00:00:00.000Z".into(),
        records_inserted: n,
        records_existing: 1,
        tombstones_applied: 2,
    };
    let mut w = store.checkpoint_writer();
    for (i, c) in ["c1", "c2", "c3"].iter().enumerate() {
        w.save(
            "src",
            "default",
            &cp(c, i as u64),
            "2026-12-01T00:00:00.000Z",
        )
        .expect("save");
        // Each save is committed at once: a fresh read sees it.
        let got = store
            .checkpoint("src", "default")
            .expect("read")
            .expect("row");
        assert_eq!((got.cursor.as_str(), got.records_inserted), (*c, i as u64));
    }
    drop(w);
    store
        .save_checkpoint("src", "default", &cp("c4", 9), "2026-12-01T00:00:00.000Z")
        .expect("save");
    let got = store
        .checkpoint("src", "default")
        .expect("read")
        .expect("row");
    assert_eq!((got.cursor.as_str(), got.records_inserted), ("c4", 9));
}

#[test]
fn contents_read_together_are_each_records_own_and_checked_in_order() {
    use crate::wire::digest::Sha256Hex;
    let p = pair();
    let items: Vec<(Sha256Hex, u64)> = (0..3)
        .map(|i| {
            let id = collect(&p.src, "default", &format!("content {i}"), &format!("c{i}"));
            let env = p.src.read_record(&id).expect("r").record;
            let sha =
                Sha256Hex::parse(env["content"]["sha256"].as_str().expect("sha")).expect("hex");
            (sha, env["content"]["size"].as_u64().expect("size"))
        })
        .collect();
    let many = p.src.content_bytes_many(&items).expect("many");
    for ((sha, size), bytes) in items.iter().zip(&many) {
        assert_eq!(bytes, &p.src.content_bytes(sha, *size).expect("one"));
    }
    assert_eq!(many[1], b"content 1");
    // A wrong size (the second) is the failure reported, as alone.
    let mut bad = items.clone();
    bad[1].1 += 1;
    bad[2].1 += 1;
    let e = p.src.content_bytes_many(&bad).expect_err("size");
    let alone = p.src.content_bytes(&bad[1].0, bad[1].1).expect_err("size");
    assert_eq!((e.code(), e.message()), (alone.code(), alone.message()));
}
