//! Sync page bodies as a destination decodes them from a source it does
//! not trust: the bytes the peer answered, decoded as `sync::client`
//! decodes them (UTF-8, then JSON), then `sync::apply::verify_page` (the
//! page's shape, the node id, every inline object's grant, bundle,
//! manifest, signature and AES-GCM frames, the page control binding the
//! routing, cursor continuity, each change against its record) with the
//! vectors' destination, clock and position. Nothing is imported.
//!
//! Mode byte: 0 = raw bytes as the page body (refusals are typed, never
//! `internal`); otherwise one edit (`patch`) of the reference page
//! `mode % pages`: an edited page that still verifies must verify to
//! exactly what the untouched page verifies to (the same feed, cursor,
//! flag and replica operations): no edit of the bytes a source sends
//! changes what the destination imports without breaking a signature.
#![no_main]
use agent_task::error::{Code, Result};
use agent_task::sync::apply::{Ask, Position, Reader, Verified, verify_page};
use agent_task::sync::wire::SyncLimits;
use agent_task_fuzz::sync_vectors::{dest, pages};
use agent_task_fuzz::{node, patch};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;

fn limits() -> &'static SyncLimits {
    static L: OnceLock<SyncLimits> = OnceLock::new();
    L.get_or_init(SyncLimits::default)
}

/// The page body as `sync::client::request_page` decodes it.
fn decode(body: &[u8]) -> Option<Value> {
    serde_json::from_str(std::str::from_utf8(body).ok()?).ok()
}

fn verify(body: &[u8], pos: &Position) -> Option<Result<Verified>> {
    let page = decode(body)?;
    let d = dest();
    let r = Reader {
        publisher: &d.publisher,
        expected_node_id: &d.node_id,
        reader_id: &d.id,
        reader_secret: &d.secret,
        limits: limits(),
    };
    // What the vectors' destination asked for (`request_body`).
    let ask = Ask {
        collection_id: "research",
        limit: 2,
        budget: limits().default_plaintext_bytes,
    };
    Some(verify_page(node(), &page, ask, pos, &r, d.now))
}

/// Each reference page's position (the one before it) and what it
/// verifies to, rendered.
fn reference() -> &'static [(Position, String)] {
    static R: OnceLock<Vec<(Position, String)>> = OnceLock::new();
    R.get_or_init(|| {
        let mut pos = Position::default();
        let mut out = Vec::new();
        for p in pages() {
            let v = verify(p, &pos)
                .expect("JSON")
                .expect("a reference page verifies");
            out.push((pos.clone(), format!("{v:?}")));
            pos = Position {
                feed_id: Some(v.feed_id.clone()),
                cursor: Some(v.cursor.clone()),
            };
        }
        out
    })
}

fn typed(r: &Result<Verified>) {
    if let Err(e) = r {
        assert_ne!(e.code(), Code::Internal, "an untyped refusal: {e}");
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    let refs = reference();
    if mode % 4 == 0 {
        let pos = &refs[usize::from(mode / 4) % refs.len()].0;
        if let Some(r) = verify(rest, pos) {
            typed(&r);
        }
        return;
    }
    let i = usize::from(*mode) % refs.len();
    let body = patch(&pages()[i], rest);
    let (pos, want) = &refs[i];
    if let Some(r) = verify(&body, pos) {
        typed(&r);
        if let Ok(v) = r {
            assert_eq!(
                &format!("{v:?}"),
                want,
                "an edited page verified to something else"
            );
        }
    }
});
