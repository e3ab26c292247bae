//! The cryptography floor of one agent-data-sync/v1 object (the anchor of
//! `scripts/bench-sync.sh`): on one thread, per object, exactly the
//! cryptographic work the protocol requires (facts §4–§8, §13.1), with the
//! crates agent-task uses and nothing else (no JSON, no base64, no SQLite):
//!
//! - source: a fresh ephemeral X25519 key (its public key) and one key
//!   agreement with the recipient (agent-task's own X25519 functions, the
//!   fastest the tree has: `grant::ephemerals`, the pinned recipient's
//!   table built once and the Montgomery conversions of 50 objects' keys
//!   sharing one inversion, as the source does per thread; their random
//!   values read in one call, also as it does), HKDF-SHA256 of the KEK (salted with
//!   SHA-256 of the wrap AAD), AES-256-GCM seal of the DEK (the key wrap)
//!   and of the payload (one chunk), SHA-256 of the frame and of the
//!   manifest (their CIDs), Ed25519 signatures of the manifest and the grant;
//! - destination: strict Ed25519 verification (`verify_strict`, one by one)
//!   of the grant and the manifest under the pinned publisher key
//!   (decompressed and point-checked once, as agent-task does), one key
//!   agreement, the same HKDF, AES-256-GCM open of the key wrap and of the
//!   payload, SHA-256 of the manifest and the frame.
//!
//! The message sizes are those of a real sealed bench record: one is sealed
//! with agent-task's own code before timing starts. Prints CPU microseconds
//! per object (this thread's time on CPU) for the source, the destination
//! and both, and one JSON line with the same figures.
//! Usage: `sync-crypto-probe [OBJECTS]` (default 2000).
#![allow(clippy::print_stdout)]
#![allow(clippy::print_stderr)]

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use agent_task::sync::adds::Draw;
use agent_task::sync::adds::grant::{
    Ephemeral, Recipient, ephemerals, shared_secret, x25519_public,
};
use agent_task::sync::adds::object::block_aad;
use agent_task::sync::inline::{SealCtx, seal};
use agent_task::wire::ed25519::Keypair;
use ed25519_dalek::{Signature, Signer, SigningKey, VerifyingKey};
use hkdf::Hkdf;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::process::ExitCode;
use x25519_dalek::{PublicKey, StaticSecret};

/// Nanoseconds this thread has spent on a CPU (/proc/thread-self/schedstat).
fn thread_cpu_ns() -> Result<u64, String> {
    let s = std::fs::read_to_string("/proc/thread-self/schedstat").map_err(|e| e.to_string())?;
    s.split_whitespace()
        .next()
        .and_then(|x| x.parse().ok())
        .ok_or_else(|| "unreadable schedstat".to_owned())
}

/// The byte sizes the cryptography of one object works on.
struct Sizes {
    payload: usize,
    manifest_unsigned: usize,
    manifest: usize,
    grant_unsigned: usize,
    wrap_aad: usize,
    block_aad: usize,
}

/// Seals one record payload shaped like the benchmark's with agent-task's
/// code and reads the sizes off the result.
fn sizes() -> Result<Sizes, String> {
    let record = json!({
        "collection_id": "default",
        "content": {"blob_ref": format!("sha256:{}", "a".repeat(64)), "media_type": "text/plain; charset=utf-8",
                    "sha256": "a".repeat(64), "size": 58},
        "id": format!("rec_{}", "b".repeat(64)),
        "ingested_at": "2026-12-05T03:00:00.123Z",
        "metadata": {"i": 4242},
        "protocol": "agent-data/v1",
        "schema_version": "1",
        "source": {"collector_id": "text", "external_id": "e4242", "uri": "jsonl:records.jsonl#4243"},
    });
    let content = "record 4242 about sync benchmarks and shared words token4242";
    let payload = json!({"protocol": "agent-data-sync-object/v1", "kind": "record", "record": record,
        "content": {"encoding": "base64url", "data": data_encoding::BASE64URL_NOPAD.encode(content.as_bytes())}});
    let key = Keypair::from_seed(&[7; 32]);
    let rk = PublicKey::from(&StaticSecret::from([9u8; 32])).to_bytes();
    let recipient = Recipient::new("did:example:bench-dst", &rk);
    let ctx = SealCtx {
        key: &key,
        publisher_id: "did:example:bench-src",
        recipient: &recipient,
        issued_at: 1_796_000_000,
        ttl_seconds: 300,
    };
    let (obj, _) = seal(&payload, &ctx).map_err(|e| e.to_string())?;
    let b64 = |v: &Value| {
        v.as_str()
            .and_then(|s| data_encoding::BASE64URL_NOPAD.decode(s.as_bytes()).ok())
            .map(|b| b.len())
            .unwrap_or(0)
    };
    let manifest = b64(&obj["bundle"]["blocks"][0]["data"]);
    let frame = b64(&obj["bundle"]["blocks"][1]["data"]);
    let grant = serde_json::to_vec(&obj["grant"])
        .map_err(|e| e.to_string())?
        .len();
    let sig = serde_json::to_vec(&obj["grant"]["signature"])
        .map_err(|e| e.to_string())?
        .len()
        + ",\"signature\":".len();
    let msig = sig; // the same signature object shape
    let wrap_tail = serde_json::to_vec(&json!({"nonce": obj["grant"]["key_wrap"]["nonce"],
        "ciphertext": obj["grant"]["key_wrap"]["ciphertext"]}))
    .map_err(|e| e.to_string())?
    .len();
    Ok(Sizes {
        payload: frame - 12 - 16,
        manifest_unsigned: "adds-manifest/v1:".len() + manifest - msig,
        manifest,
        grant_unsigned: "adds-grant/v1:".len() + grant - sig,
        wrap_aad: "adds-grant-wrap/v1:".len() + grant - sig - wrap_tail,
        block_aad: block_aad(
            &"A".repeat(43),
            1,
            512,
            0,
            &format!("dek:{}", "k".repeat(22)),
            &format!("urn:uuid:{}", uuid_like()),
            512,
            512,
        )
        .map_err(|e| e.to_string())?
        .len(),
    })
}

fn uuid_like() -> String {
    "0b7c5d2e-1f3a-4c5b-8d6e-7f8091a2b3c4".to_owned()
}

fn kek(shared: &[u8; 32], aad: &[u8]) -> Result<[u8; 32], String> {
    let salt = Sha256::digest(aad);
    let mut out = [0u8; 32];
    Hkdf::<Sha256>::new(Some(&salt), shared)
        .expand(b"adds-grant-kek/v1", &mut out)
        .map_err(|_| "hkdf".to_owned())?;
    Ok(out)
}

fn random<const N: usize>() -> Result<[u8; N], String> {
    agent_task::wire::random_bytes().map_err(|e| e.to_string())
}

/// What the source hands the destination for one object.
struct Sent {
    manifest_unsigned: Vec<u8>,
    manifest_sig: [u8; 64],
    manifest: Vec<u8>,
    grant_unsigned: Vec<u8>,
    grant_sig: [u8; 64],
    wrap_aad: Vec<u8>,
    eph_pub: [u8; 32],
    wrap_nonce: [u8; 12],
    wrapped: Vec<u8>,
    frame: Vec<u8>,
}

/// How many objects share one random draw and one batch of X25519
/// conversions: agent-task's source seals a 100-change page on two cores,
/// 50 objects per thread.
const BATCH: usize = 50;

/// Seals `n` objects' cryptography (at most [`BATCH`]) as agent-task's
/// source does: one read of the OS random source for them all, and their
/// ephemeral keys' public keys and agreements computed together.
fn source_batch(
    z: &Sizes,
    signer: &SigningKey,
    recipient: &[u8; 32],
    payload: &[u8],
    n: usize,
) -> Result<Vec<Sent>, String> {
    let mut draw = Draw::new(n * (32 + 12 + 32 + 12)).map_err(|e| e.to_string())?;
    let mut secrets = Vec::with_capacity(n);
    let mut rest = Vec::with_capacity(n);
    for _ in 0..n {
        let take = |d: &mut Draw| d.take::<32>().map_err(|e| e.to_string());
        let dek = take(&mut draw)?;
        let nonce = draw.take::<12>().map_err(|e| e.to_string())?;
        secrets.push(take(&mut draw)?);
        let wrap_nonce = draw.take::<12>().map_err(|e| e.to_string())?;
        rest.push((dek, nonce, wrap_nonce));
    }
    ephemerals(&secrets, recipient)
        .into_iter()
        .zip(rest)
        .map(|(e, (dek, nonce, wrap_nonce))| {
            source(
                z,
                signer,
                payload,
                dek,
                nonce,
                &e.map_err(|e| e.to_string())?,
                wrap_nonce,
            )
        })
        .collect()
}

fn source(
    z: &Sizes,
    signer: &SigningKey,
    payload: &[u8],
    dek: [u8; 32],
    nonce: [u8; 12],
    e: &Ephemeral,
    wrap_nonce: [u8; 12],
) -> Result<Sent, String> {
    // The payload, one chunk, and its CID.
    let block_aad = vec![b'b'; z.block_aad];
    let ct = Aes256Gcm::new_from_slice(&dek)
        .map_err(|_| "dek")?
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: payload,
                aad: &block_aad,
            },
        )
        .map_err(|_| "seal")?;
    let mut frame = Vec::with_capacity(12 + ct.len());
    frame.extend_from_slice(&nonce);
    frame.extend_from_slice(&ct);
    let frame_cid = Sha256::digest(&frame);
    // The manifest (its bytes carry the frame CID), signed, and its CID.
    let mut manifest_unsigned = vec![b'm'; z.manifest_unsigned];
    manifest_unsigned[..32].copy_from_slice(&frame_cid);
    let manifest_sig = signer.sign(&manifest_unsigned).to_bytes();
    let mut manifest = manifest_unsigned.clone();
    manifest.resize(z.manifest, b's');
    manifest[..64].copy_from_slice(&manifest_sig);
    let root = Sha256::digest(&manifest);
    // The grant: the fresh ephemeral key, the key agreement, the wrap.
    let (eph_pub, shared) = (e.public, e.shared);
    let mut wrap_aad = vec![b'g'; z.wrap_aad];
    wrap_aad[..32].copy_from_slice(&root);
    wrap_aad[32..64].copy_from_slice(&eph_pub);
    let k = kek(&shared, &wrap_aad)?;
    let wrapped = Aes256Gcm::new_from_slice(&k)
        .map_err(|_| "kek")?
        .encrypt(
            &Nonce::from(wrap_nonce),
            Payload {
                msg: &dek,
                aad: &wrap_aad,
            },
        )
        .map_err(|_| "wrap")?;
    let mut grant_unsigned = wrap_aad.clone();
    grant_unsigned.resize(z.grant_unsigned, b'w');
    grant_unsigned[64..112].copy_from_slice(&wrapped);
    let grant_sig = signer.sign(&grant_unsigned).to_bytes();
    Ok(Sent {
        manifest_unsigned,
        manifest_sig,
        manifest,
        grant_unsigned,
        grant_sig,
        wrap_aad,
        eph_pub,
        wrap_nonce,
        wrapped,
        frame,
    })
}

fn destination(
    z: &Sizes,
    s: &Sent,
    publisher: &VerifyingKey,
    reader: &[u8; 32],
) -> Result<Vec<u8>, String> {
    publisher
        .verify_strict(&s.grant_unsigned, &Signature::from_bytes(&s.grant_sig))
        .map_err(|_| "grant signature")?;
    let root = Sha256::digest(&s.manifest);
    if root.len() != 32 {
        return Err("root".into());
    }
    publisher
        .verify_strict(
            &s.manifest_unsigned,
            &Signature::from_bytes(&s.manifest_sig),
        )
        .map_err(|_| "manifest signature")?;
    let frame_cid = Sha256::digest(&s.frame);
    if frame_cid[..] != s.manifest_unsigned[..32] {
        return Err("frame cid".into());
    }
    let shared = shared_secret(reader, &s.eph_pub).map_err(|e| e.to_string())?;
    let k = kek(&shared, &s.wrap_aad)?;
    let dek = Aes256Gcm::new_from_slice(&k)
        .map_err(|_| "kek")?
        .decrypt(
            &Nonce::from(s.wrap_nonce),
            Payload {
                msg: &s.wrapped,
                aad: &s.wrap_aad,
            },
        )
        .map_err(|_| "unwrap")?;
    let block_aad = vec![b'b'; z.block_aad];
    let mut nonce = [0u8; 12];
    nonce.copy_from_slice(&s.frame[..12]);
    Aes256Gcm::new_from_slice(&dek)
        .map_err(|_| "dek")?
        .decrypt(
            &Nonce::from(nonce),
            Payload {
                msg: &s.frame[12..],
                aad: &block_aad,
            },
        )
        .map_err(|_| "open".into())
}

fn run(n: usize) -> Result<(), String> {
    let z = sizes()?;
    let signer = SigningKey::from_bytes(&random::<32>()?);
    let publisher = signer.verifying_key();
    let reader = random::<32>()?;
    let recipient = x25519_public(&reader);
    let payload = vec![b'p'; z.payload];
    // Warm up (caches, lazy tables), untimed.
    for s in source_batch(&z, &signer, &recipient, &payload, 20)? {
        destination(&z, &s, &publisher, &reader)?;
    }
    let mut sent = Vec::with_capacity(n);
    let t0 = thread_cpu_ns()?;
    while sent.len() < n {
        let k = (n - sent.len()).min(BATCH);
        sent.extend(source_batch(&z, &signer, &recipient, &payload, k)?);
    }
    let t1 = thread_cpu_ns()?;
    for s in &sent {
        if destination(&z, s, &publisher, &reader)? != payload {
            return Err("payload differs".into());
        }
    }
    let t2 = thread_cpu_ns()?;
    let us = |a: u64, b: u64| (b - a) as f64 / 1000.0 / n as f64;
    let (src, dst) = (us(t0, t1), us(t1, t2));
    println!(
        "sync crypto floor, {n} objects, one thread (payload {} B, manifest {} B signed over {} B, grant signed over {} B, wrap AAD {} B):",
        z.payload, z.manifest, z.manifest_unsigned, z.grant_unsigned, z.wrap_aad
    );
    println!(
        "  source {src:.1} us, destination {dst:.1} us, both {:.1} us of CPU per object",
        src + dst
    );
    println!(
        "{}",
        json!({"objects": n, "source_us": src, "destination_us": dst, "total_us": src + dst})
    );
    Ok(())
}

fn main() -> ExitCode {
    let n = match std::env::args().nth(1).map(|a| a.parse::<usize>()) {
        None => 2000,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("usage: sync-crypto-probe [OBJECTS]");
            return ExitCode::from(2);
        }
    };
    match run(n) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sync-crypto-probe: {e}");
            ExitCode::FAILURE
        }
    }
}
