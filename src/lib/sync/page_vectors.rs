//! The reference-produced pages of `fixtures/sync/agent-data-sync-page-vectors.json`
//! (a copy of spec/vectors/agent-data-sync-page-vectors.json) verify and
//! apply through the destination code with the clock pinned.

use super::adds::jcs::canonical;
use super::adds::object::Principal;
use super::apply::{Ask, Position, Reader, import, verify_page};
use super::inline::{OpenCtx, open};
use super::wire::{SyncLimits, validate_page};
use crate::clock::FixedClock;
use crate::data::node::{InitRequest, init};
use crate::data::{Node, QueryRequest};
use crate::error::Code;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;

fn doc() -> Value {
    serde_json::from_str(include_str!(
        "../../../fixtures/sync/agent-data-sync-page-vectors.json"
    ))
    .expect("vector file")
}

fn node_at(root: &std::path::Path, epoch: i64) -> Node {
    let t = jiff::Timestamp::from_second(epoch).expect("time");
    let clock = FixedClock(t);
    init(
        root,
        &InitRequest::default(),
        &clock,
        Duration::from_secs(5),
    )
    .expect("init");
    Node::open(root, Arc::new(clock), Duration::from_secs(5)).expect("open")
}

struct Dest {
    publisher: Principal,
    secret: [u8; 32],
    id: String,
    node_id: String,
}

fn dest(d: &Value) -> Dest {
    let sk = data_encoding::HEXLOWER
        .decode(
            d["destination"]["x25519_private_key_hex"]
                .as_str()
                .expect("hex")
                .as_bytes(),
        )
        .expect("hex");
    Dest {
        publisher: Principal {
            id: d["pinned_publisher"]["id"].as_str().expect("id").into(),
            ed25519_public_key: d["pinned_publisher"]["ed25519_public_key_base64url"]
                .as_str()
                .expect("key")
                .into(),
        },
        secret: sk.try_into().expect("32"),
        id: d["destination"]["id"].as_str().expect("id").into(),
        node_id: d["source_node_id"].as_str().expect("node").into(),
    }
}

#[test]
fn destination_key_matches_the_vector() {
    let d = doc();
    let x = dest(&d);
    let r =
        super::adds::grant::Recipient::new(&x.id, &super::adds::grant::x25519_public(&x.secret));
    assert_eq!(r.to_json(), d["destination"]["recipient_object"]);
    let seed = [0x11u8; 32];
    let k = crate::wire::ed25519::Keypair::from_seed(&seed);
    assert_eq!(
        super::adds::encoding::b64u(&k.public_key()),
        x.publisher.ed25519_public_key
    );
}

#[test]
fn captured_plaintexts_decrypt_exactly() {
    let d = doc();
    let x = dest(&d);
    let limits = SyncLimits::default();
    let now = d["grant_validity"]["issued_at"].as_i64().expect("t");
    let reader_public = super::adds::encoding::b64u(&super::adds::grant::x25519_public(&x.secret));
    let ctx = OpenCtx {
        publisher: &x.publisher,
        reader_id: &x.id,
        reader_secret: &x.secret,
        reader_public: &reader_public,
        now,
        max_bytes: limits.max_response_bytes,
    };
    for p in d["pages"].as_array().expect("pages") {
        let view = validate_page(p["response_page"].clone(), 2, &limits).expect("shape");
        let text = |o| {
            let (v, _) = open(o, &ctx).expect("opens");
            String::from_utf8(canonical(&v).expect("c")).expect("utf8")
        };
        assert_eq!(
            text(&view.control_object),
            p["expected"]["control_object_plaintext"]
        );
        assert_eq!(
            text(&view.collection_object),
            p["expected"]["collection_object_plaintext"]
        );
        for (h, want) in view.changes.iter().zip(
            p["expected"]["change_object_plaintexts"]
                .as_array()
                .expect("a"),
        ) {
            assert_eq!(text(&h.object), *want);
        }
        // The rebuilt control equals the decrypted one byte for byte.
        assert_eq!(
            String::from_utf8(canonical(&view.rebuilt_control()).expect("c")).expect("utf8"),
            p["expected"]["control_object_plaintext"]
        );
    }
}

fn pull_both(d: &Value, root: &std::path::Path, now: i64) -> crate::error::Result<Node> {
    let x = dest(d);
    let node = node_at(root, now);
    let limits = SyncLimits::default();
    let r = Reader {
        publisher: &x.publisher,
        expected_node_id: &x.node_id,
        reader_id: &x.id,
        reader_secret: &x.secret,
        limits: &limits,
    };
    let mut pos = Position::default();
    let mut totals = (0, 0, 0);
    for p in d["pages"].as_array().expect("pages") {
        let req = &p["request_body"];
        assert_eq!(
            req.get("cursor").and_then(Value::as_str),
            pos.cursor.as_deref()
        );
        let v = verify_page(
            &node,
            &p["response_page"],
            Ask {
                collection_id: "research",
                limit: 2,
                budget: 1 << 20,
            },
            &pos,
            &r,
            now,
        )?;
        let (out, v) = import(&node, v)?;
        totals.0 += out.records_inserted;
        totals.1 += out.records_existing;
        totals.2 += out.tombstones_applied;
        pos = Position {
            feed_id: Some(v.feed_id),
            cursor: Some(v.cursor),
        };
    }
    assert_eq!(totals, (3, 0, 1));
    Ok(node)
}

#[test]
fn captured_pages_apply_and_the_expected_records_come_out() {
    let d = doc();
    let t = tempfile::tempdir().expect("tmp");
    let root = t.path().join("dest");
    let now = d["grant_validity"]["accept_now_from_inclusive"]
        .as_i64()
        .expect("t");
    let node = pull_both(&d, &root, now).expect("pull");
    let ids: Vec<&str> = d["expected_record_ids"]
        .as_array()
        .expect("ids")
        .iter()
        .map(|v| v.as_str().expect("id"))
        .collect();
    assert_eq!(
        node.read_record(ids[0]).expect("alpha").bytes,
        b"alpha: local-first sync works"
    );
    assert_eq!(
        node.read_record(ids[1]).expect("beta").bytes,
        b"beta: encrypted pages"
    );
    assert_eq!(
        node.read_record(ids[2])
            .expect_err("gamma is tombstoned")
            .code(),
        Code::RecordTombstoned
    );
    let q = node
        .query(&QueryRequest {
            collections: Some(json!(["research"])),
            ..QueryRequest::default()
        })
        .expect("query");
    let mut got: Vec<&str> = q["records"]
        .as_array()
        .expect("a")
        .iter()
        .map(|h| h["record"]["id"].as_str().expect("id"))
        .collect();
    got.sort();
    assert_eq!(got, vec![ids[0], ids[1]]);
    let coll = node.collections().expect("collections");
    let research = coll["collections"]
        .as_array()
        .expect("a")
        .iter()
        .find(|c| c["id"] == "research")
        .expect("research imported");
    assert_eq!(research["created_at"], "2026-12-01T00:17:49.010Z");
    // Replaying both pages from the start is idempotent.
    let x = dest(&d);
    let limits = SyncLimits::default();
    let r = Reader {
        publisher: &x.publisher,
        expected_node_id: &x.node_id,
        reader_id: &x.id,
        reader_secret: &x.secret,
        limits: &limits,
    };
    let p1 = &d["pages"][0]["response_page"];
    let v = verify_page(
        &node,
        p1,
        Ask {
            collection_id: "research",
            limit: 2,
            budget: 1 << 20,
        },
        &Position::default(),
        &r,
        now,
    )
    .expect("replay");
    let (out, _) = import(&node, v).expect("import");
    assert_eq!((out.records_inserted, out.records_existing), (0, 2));
}

#[test]
fn the_grant_window_is_exact() {
    let d = doc();
    let last_ok = d["grant_validity"]["reject_now_from"].as_i64().expect("t") - 1;
    let t = tempfile::tempdir().expect("tmp");
    pull_both(&d, &t.path().join("a"), last_ok).expect("last second accepted");
    for now in [
        d["grant_validity"]["reject_now_from"].as_i64().expect("t"),
        d["grant_validity"]["issued_at"].as_i64().expect("t") - 1,
    ] {
        let e = pull_both(&d, &t.path().join(format!("n{now}")), now)
            .map(|_| ())
            .expect_err("outside the window");
        assert_eq!(e.code(), Code::SyncObjectInvalid, "{now}: {e}");
    }
}

#[test]
fn a_wrong_pin_or_node_is_refused_before_writing() {
    let d = doc();
    let x = dest(&d);
    let t = tempfile::tempdir().expect("tmp");
    let now = d["grant_validity"]["issued_at"].as_i64().expect("t");
    let node = node_at(&t.path().join("d"), now);
    let limits = SyncLimits::default();
    let other = Principal {
        id: x.publisher.id.clone(),
        ed25519_public_key: "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo".into(),
    };
    let page = &d["pages"][0]["response_page"];
    let mk = |p: &Principal, node_id: &str| {
        let r = Reader {
            publisher: p,
            expected_node_id: node_id,
            reader_id: &x.id,
            reader_secret: &x.secret,
            limits: &limits,
        };
        verify_page(
            &node,
            page,
            Ask {
                collection_id: "research",
                limit: 2,
                budget: 1 << 20,
            },
            &Position::default(),
            &r,
            now,
        )
        .map(|_| ())
        .expect_err("refused")
        .code()
    };
    assert_eq!(mk(&other, &x.node_id), Code::UnexpectedSyncPublisher);
    assert_eq!(mk(&x.publisher, "node_other"), Code::UnexpectedPeerNode);
    // A page beyond the requested limit is malformed.
    let r = Reader {
        publisher: &x.publisher,
        expected_node_id: &x.node_id,
        reader_id: &x.id,
        reader_secret: &x.secret,
        limits: &limits,
    };
    let e = verify_page(
        &node,
        page,
        Ask {
            collection_id: "research",
            limit: 1,
            budget: 1 << 20,
        },
        &Position::default(),
        &r,
        now,
    )
    .map(|_| ())
    .expect_err("over limit");
    assert_eq!(e.code(), Code::InvalidSyncPage);
    // The plaintext budget is enforced even if the peer ignored it.
    let e = verify_page(
        &node,
        page,
        Ask {
            collection_id: "research",
            limit: 2,
            budget: 30,
        },
        &Position::default(),
        &r,
        now,
    )
    .map(|_| ())
    .expect_err("over budget");
    assert_eq!(e.code(), Code::PeerSyncResponseTooLarge);
    // Page 2 without its checkpoint does not continue.
    let e = verify_page(
        &node,
        &d["pages"][1]["response_page"],
        Ask {
            collection_id: "research",
            limit: 2,
            budget: 1 << 20,
        },
        &Position::default(),
        &r,
        now,
    )
    .map(|_| ())
    .expect_err("no checkpoint");
    assert_eq!(e.code(), Code::SyncCursorConflict);
    assert!(
        node.read_record(d["expected_record_ids"][0].as_str().expect("id"))
            .is_err()
    );
}
