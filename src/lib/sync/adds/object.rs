//! ADDS objects (facts §5–§7): chunked AES-256-GCM encryption, the block
//! AAD, the signed manifest, its validation in the sheet's order, and the
//! per-chunk read checks.

use super::cid::{cid_of, parse as parse_cid};
use super::encoding::{b64u, b64u_fixed};
use super::jcs::{canonical, domain_message, domain_message_of, utf16_len};
use super::{
    ADDS_VERSION, AResult, MAX_CHUNK_SIZE, MAX_CHUNKS, MAX_ID_LEN, MAX_TIME, integrity, invalid,
};
use crate::wire::ed25519::{self, Keypair};
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use serde_json::{Map, Value, json};
use std::collections::HashSet;

/// Manifest signing domain.
pub const MANIFEST_DOMAIN: &str = "adds-manifest/v1";
/// Block AAD domain.
pub const BLOCK_DOMAIN: &str = "adds-block/v1";
/// The only cipher.
pub const ALGORITHM: &str = "AES-256-GCM";

const REQUIRED: &[&str] = &[
    "adds_version",
    "kind",
    "object_id",
    "created_at",
    "plaintext",
    "encryption",
    "chunks",
    "publisher",
    "signature",
];
const OPTIONAL: &[&str] = &[
    "media_type",
    "schema",
    "metadata",
    "provenance",
    "extensions",
];

/// A signer or publisher: `{id, ed25519_public_key}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    /// Opaque id, 1–2048 characters.
    pub id: String,
    /// b64u of the 32-byte Ed25519 public key.
    pub ed25519_public_key: String,
}

impl Principal {
    /// The JSON object.
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "ed25519_public_key": self.ed25519_public_key})
    }

    /// Parses `{id, ed25519_public_key}` exactly.
    pub fn from_json(v: &Value, what: &str) -> AResult<Principal> {
        let m = exact(v, &["id", "ed25519_public_key"], &[], what)?;
        let id = id_string(m.get("id"), &format!("{what}.id"))?;
        let key = string(
            m.get("ed25519_public_key"),
            &format!("{what}.ed25519_public_key"),
        )?;
        b64u_fixed::<32>(key, &format!("{what}.ed25519_public_key"))?;
        Ok(Principal {
            id: id.to_owned(),
            ed25519_public_key: key.to_owned(),
        })
    }
}

/// One chunk descriptor.
#[derive(Debug, Clone)]
pub struct Chunk {
    /// Block CID.
    pub cid: String,
    /// Nonce.
    pub nonce: [u8; 12],
    /// Plaintext length.
    pub plaintext_size: u64,
    /// Ciphertext plus tag length.
    pub ciphertext_size: u64,
}

/// A validated manifest.
#[derive(Debug, Clone)]
pub struct Manifest {
    /// `object_id`.
    pub object_id: String,
    /// `plaintext.size`.
    pub size: u64,
    /// `encryption.chunk_size`.
    pub chunk_size: u64,
    /// `encryption.key_id`.
    pub key_id: String,
    /// `encryption.aad_context` as sent.
    pub aad_context: String,
    /// Chunks in order.
    pub chunks: Vec<Chunk>,
    /// `publisher`.
    pub publisher: Principal,
    /// `media_type`.
    pub media_type: Option<String>,
    /// `schema`.
    pub schema: Option<String>,
}

pub(crate) fn exact<'a>(
    v: &'a Value,
    required: &[&str],
    optional: &[&str],
    what: &str,
) -> AResult<&'a Map<String, Value>> {
    let Value::Object(m) = v else {
        return Err(invalid(format!("{what} must be a JSON object")));
    };
    for k in m.keys() {
        if !required.contains(&k.as_str()) && !optional.contains(&k.as_str()) {
            return Err(invalid(format!("{what} has an unknown member {k:?}")));
        }
    }
    for k in required {
        if !m.contains_key(*k) {
            return Err(invalid(format!("{what} lacks {k}")));
        }
    }
    Ok(m)
}

pub(crate) fn string<'a>(v: Option<&'a Value>, what: &str) -> AResult<&'a str> {
    match v {
        Some(Value::String(s)) => Ok(s),
        _ => Err(invalid(format!("{what} must be a string"))),
    }
}

pub(crate) fn id_string<'a>(v: Option<&'a Value>, what: &str) -> AResult<&'a str> {
    let s = string(v, what)?;
    let n = utf16_len(s);
    if n == 0 || n > MAX_ID_LEN {
        return Err(invalid(format!("{what} must be 1-{MAX_ID_LEN} characters")));
    }
    Ok(s)
}

/// A non-negative safe integer.
pub(crate) fn uint(v: Option<&Value>, what: &str) -> AResult<u64> {
    match v.and_then(Value::as_u64) {
        Some(n) if n as f64 <= super::jcs::MAX_SAFE => Ok(n),
        _ => Err(invalid(format!(
            "{what} must be a non-negative safe integer"
        ))),
    }
}

/// An ADDS time (epoch seconds, 0..=253402300799).
pub(crate) fn time(v: Option<&Value>, what: &str) -> AResult<i64> {
    match v.and_then(Value::as_u64) {
        Some(n) if n as i64 <= MAX_TIME => Ok(n as i64),
        _ => Err(invalid(format!(
            "{what} must be an ADDS time in epoch seconds"
        ))),
    }
}

/// Whether an extensions key matches `^[A-Za-z][A-Za-z0-9+.-]*:`.
pub(crate) fn valid_extension_key(k: &str) -> bool {
    let Some((scheme, _)) = k.split_once(':') else {
        return false;
    };
    let b = scheme.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphabetic()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'.' | b'-'))
}

/// The expected chunk count of a size.
pub fn chunk_count(size: u64, chunk_size: u64) -> u64 {
    if size == 0 {
        1
    } else {
        size.div_ceil(chunk_size)
    }
}

/// Validates a manifest (facts §7, steps 1–8, signature included).
pub fn validate_manifest(v: &Value) -> AResult<Manifest> {
    // 1. Key set.
    let m = exact(v, REQUIRED, OPTIONAL, "manifest")?;
    // 2. Fixed values, object_id, created_at.
    if m.get("adds_version").and_then(Value::as_str) != Some(ADDS_VERSION) {
        return Err(invalid("manifest adds_version must be \"0.1\""));
    }
    if m.get("kind").and_then(Value::as_str) != Some("manifest") {
        return Err(invalid("manifest kind must be \"manifest\""));
    }
    let object_id = id_string(m.get("object_id"), "manifest.object_id")?.to_owned();
    time(m.get("created_at"), "manifest.created_at")?;
    // 3. plaintext, encryption.
    let pt = exact(&m["plaintext"], &["size"], &[], "manifest.plaintext")?;
    let size = uint(pt.get("size"), "plaintext.size")?;
    let enc = exact(
        &m["encryption"],
        &[
            "algorithm",
            "chunk_size",
            "block_aad",
            "key_id",
            "aad_context",
        ],
        &[],
        "manifest.encryption",
    )?;
    if enc.get("algorithm").and_then(Value::as_str) != Some(ALGORITHM) {
        return Err(invalid("encryption.algorithm must be AES-256-GCM"));
    }
    if enc.get("block_aad").and_then(Value::as_str) != Some(BLOCK_DOMAIN) {
        return Err(invalid("encryption.block_aad must be adds-block/v1"));
    }
    let chunk_size = uint(enc.get("chunk_size"), "encryption.chunk_size")?;
    if !(1..=MAX_CHUNK_SIZE).contains(&chunk_size) {
        return Err(invalid("encryption.chunk_size must be 1..16777216"));
    }
    let key_id = id_string(enc.get("key_id"), "encryption.key_id")?.to_owned();
    let aad_context = string(enc.get("aad_context"), "encryption.aad_context")?.to_owned();
    b64u_fixed::<32>(&aad_context, "encryption.aad_context")?;
    // 4. Chunk count.
    let Some(Value::Array(chunks_v)) = m.get("chunks") else {
        return Err(invalid("manifest.chunks must be an array"));
    };
    let expected = chunk_count(size, chunk_size);
    if expected > MAX_CHUNKS || chunks_v.len() as u64 != expected {
        return Err(integrity(format!(
            "manifest declares {} chunks; its size needs {expected}",
            chunks_v.len()
        )));
    }
    // 5. Each chunk.
    let mut cids = HashSet::new();
    let mut nonces = HashSet::new();
    let mut chunks = Vec::with_capacity(chunks_v.len());
    for (i, c) in chunks_v.iter().enumerate() {
        let what = format!("chunks[{i}]");
        let cm = exact(
            c,
            &["index", "cid", "nonce", "plaintext_size", "ciphertext_size"],
            &[],
            &what,
        )?;
        if uint(cm.get("index"), &format!("{what}.index"))? != i as u64 {
            return Err(integrity(format!("{what}.index is not its position")));
        }
        let cid = string(cm.get("cid"), &format!("{what}.cid"))?;
        parse_cid(cid).map_err(|_| integrity(format!("{what}.cid is not a valid CID")))?;
        if !cids.insert(cid.to_owned()) {
            return Err(integrity(format!("{what}.cid repeats")));
        }
        let nonce = b64u_fixed::<12>(string(cm.get("nonce"), &format!("{what}.nonce"))?, &what)
            .map_err(|_| integrity(format!("{what}.nonce is not 12 bytes")))?;
        if !nonces.insert(nonce) {
            return Err(integrity(format!("{what}.nonce repeats")));
        }
        let ps = uint(cm.get("plaintext_size"), &format!("{what}.plaintext_size"))?;
        let cs = uint(
            cm.get("ciphertext_size"),
            &format!("{what}.ciphertext_size"),
        )?;
        let want = if size == 0 {
            0
        } else {
            chunk_size.min(size - (i as u64) * chunk_size)
        };
        if ps != want || cs != ps + 16 {
            return Err(integrity(format!("{what} sizes do not match the manifest")));
        }
        chunks.push(Chunk {
            cid: cid.to_owned(),
            nonce,
            plaintext_size: ps,
            ciphertext_size: cs,
        });
    }
    // 6. Publisher and signature shape.
    let publisher = Principal::from_json(&m["publisher"], "manifest.publisher")?;
    let (sig_key, sig) = signature_shape(&m["signature"])?;
    if sig_key != publisher.ed25519_public_key {
        return Err(integrity("signature.public_key is not the publisher's key"));
    }
    // 7. Optional members.
    let media_type = opt_label(m.get("media_type"), "media_type")?;
    let schema = opt_label(m.get("schema"), "schema")?;
    if let Some(md) = m.get("metadata")
        && !md.is_object()
    {
        return Err(invalid("manifest.metadata must be an object"));
    }
    if let Some(p) = m.get("provenance") {
        let pm = exact(
            p,
            &[],
            &["parents", "transformation", "generated_by"],
            "provenance",
        )?;
        if let Some(parents) = pm.get("parents") {
            let Value::Array(a) = parents else {
                return Err(invalid("provenance.parents must be an array"));
            };
            let mut seen = HashSet::new();
            for x in a {
                let s = string(Some(x), "provenance.parents[]")?;
                parse_cid(s).map_err(|_| invalid("provenance.parents holds a non-CID"))?;
                if !seen.insert(s) {
                    return Err(invalid("provenance.parents repeats a CID"));
                }
            }
        }
        for k in ["transformation", "generated_by"] {
            if pm.contains_key(k) {
                string(pm.get(k), k)?;
            }
        }
    }
    check_extensions(m.get("extensions"))?;
    // 8. The signature.
    let msg = domain_message_of(MANIFEST_DOMAIN, m, "signature", None)?;
    verify(&publisher.ed25519_public_key, &msg, &sig)?;
    Ok(Manifest {
        object_id,
        size,
        chunk_size,
        key_id,
        aad_context,
        chunks,
        publisher,
        media_type,
        schema,
    })
}

fn opt_label(v: Option<&Value>, what: &str) -> AResult<Option<String>> {
    match v {
        None => Ok(None),
        Some(Value::String(s)) if (1..=1024).contains(&utf16_len(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(format!(
            "manifest.{what} must be a 1-1024 character string"
        ))),
    }
}

pub(crate) fn check_extensions(v: Option<&Value>) -> AResult<()> {
    match v {
        None => Ok(()),
        Some(Value::Object(m)) => {
            if m.keys().all(|k| valid_extension_key(k)) {
                Ok(())
            } else {
                Err(invalid("extensions keys must look like scheme:name"))
            }
        }
        Some(_) => Err(invalid("extensions must be an object")),
    }
}

/// `{algorithm:"Ed25519", public_key, value}` → (key string, 64 bytes).
pub(crate) fn signature_shape(v: &Value) -> AResult<(String, [u8; 64])> {
    let m = exact(v, &["algorithm", "public_key", "value"], &[], "signature")?;
    if m.get("algorithm").and_then(Value::as_str) != Some("Ed25519") {
        return Err(invalid("signature.algorithm must be Ed25519"));
    }
    let key = string(m.get("public_key"), "signature.public_key")?;
    b64u_fixed::<32>(key, "signature.public_key")?;
    let sig = b64u_fixed::<64>(
        string(m.get("value"), "signature.value")?,
        "signature.value",
    )?;
    Ok((key.to_owned(), sig))
}

/// Strict Ed25519 verification (canonical, torsion-free, not small-order
/// A and R; S < ℓ), as an integrity failure.
pub fn verify(public_key_b64u: &str, msg: &[u8], sig: &[u8; 64]) -> AResult<()> {
    let pk = b64u_fixed::<32>(public_key_b64u, "public key")?;
    let refused =
        |e: crate::error::Error| integrity(format!("Ed25519 signature refused: {}", e.message()));
    // A page carries two signatures per object by the same publisher key:
    // its point checks (a scalar multiplication for torsion) and its
    // decompression run once per process and key.
    let vk = match checked_key(&pk) {
        Some(vk) => vk,
        None => {
            ed25519::check_point(&pk).map_err(refused)?;
            let vk = ed25519::VerifyingKey::from_bytes(&pk)
                .map_err(|_| integrity("Ed25519 public key does not decompress"))?;
            remember_key(pk, vk);
            vk
        }
    };
    ed25519::verify_strict_checked(&vk, msg, sig).map_err(refused)
}

type KeyCache = Vec<([u8; 32], ed25519::VerifyingKey)>;
static CHECKED_KEYS: std::sync::Mutex<KeyCache> = std::sync::Mutex::new(Vec::new());

fn checked_key(pk: &[u8; 32]) -> Option<ed25519::VerifyingKey> {
    CHECKED_KEYS
        .lock()
        .ok()
        .and_then(|v| v.iter().find(|(k, _)| k == pk).map(|(_, vk)| *vk))
}

fn remember_key(pk: [u8; 32], vk: ed25519::VerifyingKey) {
    if let Ok(mut v) = CHECKED_KEYS.lock() {
        if v.len() >= 64 {
            v.remove(0);
        }
        v.push((pk, vk));
    }
}

/// The signature object over `domain:JCS(value)`.
pub fn sign(domain: &str, value: &Value, key: &Keypair) -> AResult<Value> {
    Ok(signature_of(&domain_message(domain, value)?, key))
}

/// Signs `m` (which has no `signature` member yet) and adds the signature
/// object to it, without copying the object.
pub(crate) fn sign_into(domain: &str, m: &mut Map<String, Value>, key: &Keypair) -> AResult<()> {
    let msg = domain_message_of(domain, m, "signature", None)?;
    m.insert("signature".into(), signature_of(&msg, key));
    Ok(())
}

fn signature_of(msg: &[u8], key: &Keypair) -> Value {
    json!({
        "algorithm": "Ed25519",
        "public_key": b64u(&key.public_key()),
        "value": b64u(&key.sign(msg)),
    })
}

/// The block AAD of chunk `index` (facts §6): 11 members.
#[allow(clippy::too_many_arguments)] // one argument per AAD member
pub fn block_aad(
    aad_context: &str,
    block_count: u64,
    chunk_size: u64,
    index: u64,
    key_id: &str,
    object_id: &str,
    plaintext_size: u64,
    total_plaintext_size: u64,
) -> AResult<Vec<u8>> {
    domain_message(
        BLOCK_DOMAIN,
        &json!({
            "aad_context": aad_context,
            "adds_version": ADDS_VERSION,
            "algorithm": ALGORITHM,
            "block_count": block_count,
            "chunk_size": chunk_size,
            "index": index,
            "key_id": key_id,
            "kind": "block",
            "object_id": object_id,
            "plaintext_size": plaintext_size,
            "total_plaintext_size": total_plaintext_size,
        }),
    )
}

/// Everything chosen per object (random in production, fixed in vectors).
#[derive(Debug, Clone)]
pub struct SealParams {
    /// `object_id`.
    pub object_id: String,
    /// `encryption.key_id`.
    pub key_id: String,
    /// `encryption.aad_context` (32 bytes).
    pub aad_context: [u8; 32],
    /// `encryption.chunk_size`.
    pub chunk_size: u64,
    /// One nonce per chunk (distinct).
    pub nonces: Vec<[u8; 12]>,
    /// The DEK.
    pub dek: [u8; 32],
    /// `created_at`.
    pub created_at: i64,
    /// `media_type`.
    pub media_type: Option<String>,
    /// `schema`.
    pub schema: Option<String>,
}

impl SealParams {
    /// Fresh random parameters for `len` plaintext bytes, chunked as the
    /// sync source does: `min(262144, max(1, len))`.
    pub fn random(
        len: usize,
        created_at: i64,
        media_type: &str,
        schema: &str,
    ) -> crate::error::Result<SealParams> {
        let mut draw = super::Draw::new(Self::RANDOM_BYTES)?;
        Self::random_from(&mut draw, len, created_at, media_type, schema)
    }

    /// The random bytes [`SealParams::random_from`] takes for an object of
    /// one chunk.
    pub const RANDOM_BYTES: usize = 12 + 16 + 16 + 32 + 32;

    /// [`SealParams::random`] with its random values taken from `draw`.
    pub fn random_from(
        draw: &mut super::Draw,
        len: usize,
        created_at: i64,
        media_type: &str,
        schema: &str,
    ) -> crate::error::Result<SealParams> {
        let chunk_size = len.clamp(1, 262_144) as u64;
        let n = chunk_count(len as u64, chunk_size);
        let mut nonces: Vec<[u8; 12]> = Vec::with_capacity(n as usize);
        while (nonces.len() as u64) < n {
            let x = draw.take::<12>()?;
            if !nonces.contains(&x) {
                nonces.push(x);
            }
        }
        Ok(SealParams {
            object_id: draw.urn_uuid()?,
            key_id: format!("dek:{}", b64u(&draw.take::<16>()?)),
            aad_context: draw.take::<32>()?,
            chunk_size,
            nonces,
            dek: draw.take::<32>()?,
            created_at,
            media_type: Some(media_type.to_owned()),
            schema: Some(schema.to_owned()),
        })
    }
}

/// A sealed object: the signed manifest's canonical bytes, its CID (the
/// root) and the block frames in chunk order.
#[derive(Debug, Clone)]
pub struct Sealed {
    /// Canonical manifest bytes (block 0).
    pub manifest_bytes: Vec<u8>,
    /// Root CID.
    pub root: String,
    /// `(cid, frame)` per chunk.
    pub frames: Vec<(String, Vec<u8>)>,
}

/// Encrypts `plaintext` into an ADDS object published by `publisher_id`.
pub fn seal(
    plaintext: &[u8],
    p: &SealParams,
    publisher_id: &str,
    key: &Keypair,
) -> AResult<Sealed> {
    let size = plaintext.len() as u64;
    let count = chunk_count(size, p.chunk_size);
    if p.nonces.len() as u64 != count {
        return Err(invalid("one nonce per chunk is required"));
    }
    let aad_context = b64u(&p.aad_context);
    let cipher = Aes256Gcm::new_from_slice(&p.dek).map_err(|_| invalid("bad DEK length"))?;
    let mut frames = Vec::with_capacity(count as usize);
    let mut chunks = Vec::with_capacity(count as usize);
    for i in 0..count {
        let start = (i * p.chunk_size) as usize;
        let end = ((i + 1) * p.chunk_size).min(size) as usize;
        let piece = &plaintext[start.min(plaintext.len())..end.max(start).min(plaintext.len())];
        let aad = block_aad(
            &aad_context,
            count,
            p.chunk_size,
            i,
            &p.key_id,
            &p.object_id,
            piece.len() as u64,
            size,
        )?;
        let nonce = p.nonces[i as usize];
        let ct = cipher
            .encrypt(
                &Nonce::from(nonce),
                Payload {
                    msg: piece,
                    aad: &aad,
                },
            )
            .map_err(|_| integrity("AES-GCM encryption failed"))?;
        let mut frame = Vec::with_capacity(12 + ct.len());
        frame.extend_from_slice(&nonce);
        frame.extend_from_slice(&ct);
        let cid = cid_of(&frame);
        chunks.push(json!({
            "index": i, "cid": cid, "nonce": b64u(&nonce),
            "plaintext_size": piece.len(), "ciphertext_size": ct.len(),
        }));
        frames.push((cid, frame));
    }
    let mut m = Map::new();
    m.insert("adds_version".into(), ADDS_VERSION.into());
    m.insert("kind".into(), "manifest".into());
    m.insert("object_id".into(), p.object_id.clone().into());
    m.insert("created_at".into(), p.created_at.into());
    m.insert("plaintext".into(), json!({"size": size}));
    m.insert(
        "encryption".into(),
        json!({"algorithm": ALGORITHM, "chunk_size": p.chunk_size, "block_aad": BLOCK_DOMAIN,
               "key_id": p.key_id, "aad_context": aad_context}),
    );
    m.insert("chunks".into(), Value::Array(chunks));
    m.insert(
        "publisher".into(),
        json!({"id": publisher_id, "ed25519_public_key": b64u(&key.public_key())}),
    );
    if let Some(t) = &p.media_type {
        m.insert("media_type".into(), t.clone().into());
    }
    if let Some(s) = &p.schema {
        m.insert("schema".into(), s.clone().into());
    }
    sign_into(MANIFEST_DOMAIN, &mut m, key)?;
    let manifest_bytes = canonical(&Value::Object(m))?;
    let root = cid_of(&manifest_bytes);
    Ok(Sealed {
        manifest_bytes,
        root,
        frames,
    })
}

/// Decrypts a validated manifest's frames with its DEK (facts §8.4 step
/// 8): frame length, frame CID, nonce prefix, GCM under the block AAD,
/// plaintext sizes.
pub fn open_frames(m: &Manifest, frames: &[&[u8]], dek: &[u8; 32]) -> AResult<Vec<u8>> {
    if frames.len() != m.chunks.len() {
        return Err(integrity("frame count differs from the manifest"));
    }
    for (i, (c, frame)) in m.chunks.iter().zip(frames).enumerate() {
        check_frame(i, c, frame)?;
    }
    decrypt_frames(m, frames, dek)
}

/// One frame against its chunk: its length, its CID, its nonce prefix.
pub(super) fn check_frame(i: usize, c: &Chunk, frame: &[u8]) -> AResult<()> {
    if frame.len() as u64 != 12 + c.ciphertext_size {
        return Err(integrity(format!("frame {i} has the wrong length")));
    }
    if cid_of(frame) != c.cid {
        return Err(integrity(format!("frame {i} does not hash to its CID")));
    }
    if frame[..12] != c.nonce {
        return Err(integrity(format!(
            "frame {i} nonce differs from the manifest"
        )));
    }
    Ok(())
}

/// A manifest and its object's frames, every frame checked against its
/// chunk ([`check_frame`]): made only where that check ran, so opening it
/// does not hash the frames again.
#[derive(Debug)]
pub struct Checked<'a> {
    manifest: Manifest,
    frames: Vec<&'a [u8]>,
}

impl<'a> Checked<'a> {
    /// `frames` passed [`check_frame`] against `manifest`'s chunks, one
    /// each, in order.
    pub(super) fn new(manifest: Manifest, frames: Vec<&'a [u8]>) -> Checked<'a> {
        Checked { manifest, frames }
    }

    /// The manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The plaintext with the object's DEK ([`open_frames`] without the
    /// checks that already ran).
    pub fn decrypt(&self, dek: &[u8; 32]) -> AResult<Vec<u8>> {
        decrypt_frames(&self.manifest, &self.frames, dek)
    }
}

/// GCM under the block AAD and the plaintext sizes, of frames whose count,
/// lengths, CIDs and nonces match `m`.
fn decrypt_frames(m: &Manifest, frames: &[&[u8]], dek: &[u8; 32]) -> AResult<Vec<u8>> {
    let cipher = Aes256Gcm::new_from_slice(dek).map_err(|_| invalid("bad DEK length"))?;
    let count = m.chunks.len() as u64;
    let mut out = Vec::with_capacity(m.size as usize);
    for (i, (c, frame)) in m.chunks.iter().zip(frames).enumerate() {
        let aad = block_aad(
            &m.aad_context,
            count,
            m.chunk_size,
            i as u64,
            &m.key_id,
            &m.object_id,
            c.plaintext_size,
            m.size,
        )?;
        let (nonce, body) = frame
            .split_first_chunk::<12>()
            .ok_or_else(|| integrity(format!("frame {i} has the wrong length")))?;
        let pt = cipher
            .decrypt(
                &Nonce::from(*nonce),
                Payload {
                    msg: body,
                    aad: &aad,
                },
            )
            .map_err(|_| integrity(format!("frame {i} does not decrypt")))?;
        if pt.len() as u64 != c.plaintext_size {
            return Err(integrity(format!("frame {i} plaintext has the wrong size")));
        }
        out.extend_from_slice(&pt);
    }
    if out.len() as u64 != m.size {
        return Err(integrity("plaintext size differs from the manifest"));
    }
    Ok(out)
}
