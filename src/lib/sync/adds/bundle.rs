//! `adds-bundle/v1` (facts §9): the keyless inline bundle, its wire
//! decoding (sync wire codec, step 1) and its validation (step 3).

use super::cid::{cid_of, is_cid};
use super::encoding::{b64u, b64u_append, b64u_decode};
use super::jcs::strict_parse;
use super::object::{Checked, Sealed, check_frame, validate_manifest};
use super::{AResult, MAX_MANIFEST_BYTES, integrity, invalid, object_of};
use crate::error::{Code, Error, Result};
use serde_json::Value;
use std::collections::HashSet;

/// The protocol name.
pub const PROTOCOL: &str = "adds-bundle/v1";
/// Most blocks on the wire.
pub const MAX_WIRE_BLOCKS: usize = 10_001;
/// Most chunks the reader accepts.
pub const MAX_BLOCKS: usize = 10_000;

/// A decoded bundle.
#[derive(Debug, Clone)]
pub struct Bundle {
    /// `root.cid`.
    pub root: String,
    /// `(cid, bytes)` in wire order.
    pub blocks: Vec<(String, Vec<u8>)>,
}

/// The wire form of a sealed object.
pub fn encode(s: &Sealed) -> Value {
    let block =
        |cid: &str, bytes: &[u8]| object_of([("cid", cid.into()), ("data", b64u(bytes).into())]);
    let mut blocks = Vec::with_capacity(s.frames.len() + 1);
    blocks.push(block(&s.root, &s.manifest_bytes));
    for (cid, f) in &s.frames {
        blocks.push(block(cid, f));
    }
    object_of([
        ("protocol", PROTOCOL.into()),
        ("root", object_of([("cid", s.root.as_str().into())])),
        ("blocks", Value::Array(blocks)),
    ])
}

/// [`encode`]'s compact JSON text (what `serde_json::to_vec` of it gives:
/// members in key order), appended to `out` without building the value:
/// the blocks' base64url is written straight into `out` (its alphabet
/// needs no escaping).
pub fn write_json(s: &Sealed, out: &mut Vec<u8>) -> serde_json::Result<()> {
    let block = |out: &mut Vec<u8>, cid: &str, bytes: &[u8]| -> serde_json::Result<()> {
        out.extend_from_slice(b"{\"cid\":");
        serde_json::to_writer(&mut *out, cid)?;
        out.extend_from_slice(b",\"data\":\"");
        b64u_append(bytes, out);
        out.extend_from_slice(b"\"}");
        Ok(())
    };
    out.extend_from_slice(b"{\"blocks\":[");
    block(out, &s.root, &s.manifest_bytes)?;
    for (cid, f) in &s.frames {
        out.push(b',');
        block(out, cid, f)?;
    }
    out.extend_from_slice(b"],\"protocol\":");
    serde_json::to_writer(&mut *out, PROTOCOL)?;
    out.extend_from_slice(b",\"root\":{\"cid\":");
    serde_json::to_writer(&mut *out, &s.root)?;
    out.extend_from_slice(b"}}");
    Ok(())
}

fn page_err(msg: &str) -> Error {
    Error::new(Code::InvalidSyncPage, format!("invalid sync page: {msg}"))
}

fn keys_exact(v: &Value, keys: &[&str]) -> bool {
    matches!(v, Value::Object(m) if m.len() == keys.len() && keys.iter().all(|k| m.contains_key(*k)))
}

/// Decodes a bundle's wire form: exact keys, fixed protocol, valid CIDs,
/// 1..=10,001 blocks, canonical base64url data; the decoded bytes count
/// against `budget` (the response ceiling), `sync_response_too_large`
/// when it runs out.
pub fn decode_wire(v: &Value, budget: &mut u64) -> Result<Bundle> {
    if !keys_exact(v, &["protocol", "root", "blocks"]) {
        return Err(page_err("bundle keys"));
    }
    if v["protocol"] != PROTOCOL {
        return Err(page_err("bundle protocol"));
    }
    if !keys_exact(&v["root"], &["cid"]) {
        return Err(page_err("bundle root"));
    }
    let root = match v["root"]["cid"].as_str() {
        Some(c) if is_cid(c) => c.to_owned(),
        _ => return Err(page_err("bundle root cid")),
    };
    let Some(arr) = v["blocks"].as_array() else {
        return Err(page_err("bundle blocks"));
    };
    if arr.is_empty() || arr.len() > MAX_WIRE_BLOCKS {
        return Err(page_err("bundle block count"));
    }
    let mut blocks = Vec::with_capacity(arr.len());
    for b in arr {
        if !keys_exact(b, &["cid", "data"]) {
            return Err(page_err("bundle block keys"));
        }
        let cid = match b["cid"].as_str() {
            Some(c) if is_cid(c) => c.to_owned(),
            _ => return Err(page_err("bundle block cid")),
        };
        let data = b["data"]
            .as_str()
            .and_then(b64u_decode)
            .ok_or_else(|| page_err("bundle block data"))?;
        let n = data.len() as u64;
        if n > *budget {
            return Err(Error::new(
                Code::PeerSyncResponseTooLarge,
                "sync page objects exceed the response ceiling",
            ));
        }
        *budget -= n;
        blocks.push((cid, data));
    }
    Ok(Bundle { root, blocks })
}

/// Validates a bundle (facts §9 step 3) with a plaintext ceiling of
/// `max_bytes`; returns the manifest with its checked frames.
pub fn validate(b: &Bundle, max_bytes: u64) -> AResult<Checked<'_>> {
    if b.blocks.is_empty() || b.blocks.len() - 1 > MAX_BLOCKS {
        return Err(invalid("bundle block count out of range"));
    }
    if b.blocks[0].0 != b.root {
        return Err(integrity("first block is not the root"));
    }
    let manifest_bytes = &b.blocks[0].1;
    if manifest_bytes.len() > MAX_MANIFEST_BYTES {
        return Err(invalid("manifest exceeds 8 MiB"));
    }
    let total: u64 = b.blocks.iter().map(|(_, d)| d.len() as u64).sum();
    if total > max_bytes + MAX_MANIFEST_BYTES as u64 + 28 * MAX_BLOCKS as u64 {
        return Err(invalid("bundle exceeds its byte ceiling"));
    }
    if cid_of(manifest_bytes) != b.root {
        return Err(integrity("manifest bytes do not hash to the root CID"));
    }
    let mv = strict_parse(manifest_bytes)?;
    let m = validate_manifest(&mv)?;
    if m.size > max_bytes {
        return Err(invalid("object plaintext exceeds the reader's ceiling"));
    }
    if b.blocks.len() != m.chunks.len() + 1 {
        return Err(integrity("bundle block count differs from the manifest"));
    }
    let mut seen = HashSet::new();
    seen.insert(b.root.as_str());
    for (i, c) in m.chunks.iter().enumerate() {
        let (cid, frame) = &b.blocks[i + 1];
        if *cid != c.cid {
            return Err(integrity(format!("block {} is not chunk {i}", i + 1)));
        }
        if !seen.insert(cid.as_str()) {
            return Err(integrity("bundle repeats a CID"));
        }
        check_frame(i, c, frame)?;
    }
    let frames = b.blocks[1..].iter().map(|(_, f)| f.as_slice()).collect();
    Ok(Checked::new(m, frames))
}
