//! ADDS 0.1 envelopes as a destination decodes them out of a sync page:
//! canonical JSON (`jcs::strict_parse`, `jcs::canonical`), CIDs
//! (`cid::parse`), signed manifests (`object::validate_manifest`), signed
//! grants (`grant::validate_grant`) and bundles (`bundle::decode_wire`,
//! `bundle::validate`), seeded from the spec's ADDS and page vectors.
//!
//! Mode byte (mode % 8):
//! - 0: canonical JSON. What `strict_parse` accepts re-encodes to exactly
//!   its bytes; what serde_json parses canonicalises to bytes that
//!   `strict_parse` accepts and that re-encode to themselves.
//! - 1: CIDs. A CID that parses is the base32 of its own digest (it
//!   re-encodes to itself); the CID of any bytes parses to their SHA-256.
//! - 2/4: raw bytes as a manifest / grant (canonical JSON, then every
//!   rule and the signature).
//! - 3/5: one edit of the vectors' signed manifest / grant: an edited one
//!   that validates is byte for byte the original.
//! - 6: raw bytes as a bundle's wire JSON, decoded and validated.
//! - 7: one edit of a page vector's bundle: one that validates has the
//!   original's blocks and manifest.
#![no_main]
use agent_task::error::Code;
use agent_task::sync::adds::jcs::{canonical, strict_parse};
use agent_task::sync::adds::object::validate_manifest;
use agent_task::sync::adds::{bundle, cid, grant};
use agent_task::wire::digest::Sha256Hex;
use agent_task_fuzz::patch;
use agent_task_fuzz::sync_vectors::doc as page_doc;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::sync::OnceLock;

/// The plaintext ceiling the destination passes (`SyncLimits` default).
const MAX_BYTES: u64 = 33_554_432;

fn adds_doc() -> &'static Value {
    static D: OnceLock<Value> = OnceLock::new();
    D.get_or_init(|| {
        serde_json::from_str(include_str!("../../fixtures/sync/adds-0.1-vectors.json"))
            .expect("adds vectors")
    })
}

fn signed_manifest() -> &'static [u8] {
    adds_doc()["signature_vectors"][0]["signed_canonical_json"]
        .as_str()
        .expect("manifest")
        .as_bytes()
}

fn signed_grant() -> &'static [u8] {
    static G: OnceLock<Vec<u8>> = OnceLock::new();
    G.get_or_init(|| {
        canonical(&adds_doc()["grant_wrap_vectors"][0]["signed_grant"]).expect("grant")
    })
}

/// The bundles of the page vectors (collection, control, change objects)
/// as JSON text, with their decoded form rendered.
fn bundles() -> &'static [(Vec<u8>, String)] {
    static B: OnceLock<Vec<(Vec<u8>, String)>> = OnceLock::new();
    B.get_or_init(|| {
        let mut out = Vec::new();
        for p in page_doc()["pages"].as_array().expect("pages") {
            let page = &p["response_page"];
            let mut objs = vec![&page["collection_object"], &page["control_object"]];
            objs.extend(
                page["changes"]
                    .as_array()
                    .expect("changes")
                    .iter()
                    .map(|c| &c["object"]),
            );
            for o in objs {
                let text = serde_json::to_vec(&o["bundle"]).expect("bundle");
                let r = decode_bundle(&text)
                    .expect("JSON")
                    .expect("a vector bundle decodes");
                out.push((text, r));
            }
        }
        out
    })
}

/// Decodes and validates a bundle's wire JSON; renders blocks and manifest.
fn decode_bundle(text: &[u8]) -> Option<Result<String, String>> {
    let v: Value = serde_json::from_slice(text).ok()?;
    let mut budget = MAX_BYTES;
    let b = match bundle::decode_wire(&v, &mut budget) {
        Ok(b) => b,
        Err(e) => {
            assert_ne!(e.code(), Code::Internal, "untyped bundle refusal: {e}");
            return Some(Err(e.to_string()));
        }
    };
    Some(match bundle::validate(&b, MAX_BYTES) {
        Ok(m) => Ok(format!("{:?} {m:?}", b.blocks)),
        Err(e) => Err(e.message),
    })
}

fn manifest_ok(bytes: &[u8]) -> bool {
    strict_parse(bytes).is_ok_and(|v| validate_manifest(&v).is_ok())
}

fn grant_ok(bytes: &[u8]) -> bool {
    strict_parse(bytes).is_ok_and(|v| grant::validate_grant(&v).is_ok())
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 8 {
        0 => {
            if let Ok(v) = strict_parse(rest) {
                assert_eq!(canonical(&v).expect("accepted value"), rest);
            }
            if let Ok(v) = serde_json::from_slice::<Value>(rest)
                && let Ok(c) = canonical(&v)
            {
                let back = strict_parse(&c).expect("canonical bytes parse strictly");
                assert_eq!(
                    canonical(&back).expect("again"),
                    c,
                    "canonical is not stable"
                );
            }
        }
        1 => {
            let s = String::from_utf8_lossy(rest);
            if let Ok(d) = cid::parse(&s) {
                assert!(cid::is_cid(&s));
                assert_eq!(s.len(), 59);
                assert!(s.starts_with("bafkrei"));
                // Only one text names a digest: the CID of bytes with this
                // digest is unknown, but parsing is injective on the text.
                assert_eq!(cid::parse(&s).expect("again"), d);
            }
            let own = cid::cid_of(rest);
            let d = cid::parse(&own).expect("own CID parses");
            assert_eq!(d, Sha256Hex::digest(rest).to_bytes());
        }
        2 => {
            if manifest_ok(rest) {
                let v = strict_parse(rest).expect("parsed");
                assert_eq!(canonical(&v).expect("c"), rest);
            }
        }
        3 => {
            let bytes = patch(signed_manifest(), rest);
            if manifest_ok(&bytes) {
                assert_eq!(bytes, signed_manifest(), "an edited manifest validated");
            }
        }
        4 => {
            if grant_ok(rest) {
                let v = strict_parse(rest).expect("parsed");
                assert_eq!(canonical(&v).expect("c"), rest);
            }
        }
        5 => {
            let bytes = patch(signed_grant(), rest);
            if grant_ok(&bytes) {
                assert_eq!(bytes, signed_grant(), "an edited grant validated");
            }
        }
        6 => {
            let _ = decode_bundle(rest);
        }
        _ => {
            let bs = bundles();
            let Some((i, edit)) = rest.split_first() else {
                return;
            };
            let (text, want) = &bs[usize::from(*i) % bs.len()];
            let bytes = patch(text, edit);
            if let Some(Ok(got)) = decode_bundle(&bytes) {
                assert_eq!(&got, want, "an edited bundle validated to something else");
            }
        }
    }
});
