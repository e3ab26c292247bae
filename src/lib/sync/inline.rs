//! `adds/0.1-inline` objects (facts §9–§10): a sync payload sealed as its
//! own ADDS object with a direct-recipient grant, and opened with every
//! check of the sheet, in its order.

use super::adds::grant::{self, GrantParams, Recipient};
use super::adds::jcs::{canonical, strict_parse};
use super::adds::object::{self, Principal, SealParams};
use super::adds::{bundle, object_of, random, random_urn_uuid};
use super::wire::{INLINE_PROFILE, Inline, MEDIA_TYPE, SCHEMA, payload_kind};
use crate::error::{Code, Error, Result};
use crate::wire::ed25519::Keypair;
use serde_json::Value;

/// The source's side: who signs and for whom.
pub struct SealCtx<'a> {
    /// The publisher's signing key.
    pub key: &'a Keypair,
    /// The publisher id.
    pub publisher_id: &'a str,
    /// The pinned recipient.
    pub recipient: &'a Recipient,
    /// `floor(now)`.
    pub issued_at: i64,
    /// Grant lifetime.
    pub ttl_seconds: i64,
}

/// Seals one payload; returns the inline object and its root CID.
pub fn seal(payload: &Value, ctx: &SealCtx<'_>) -> Result<(Value, String)> {
    let bytes = canonical(payload).map_err(|e| e.into_error(Code::Internal))?;
    let p = SealParams::random(bytes.len(), ctx.issued_at, MEDIA_TYPE, SCHEMA)?;
    let sealed = object::seal(&bytes, &p, ctx.publisher_id, ctx.key)
        .map_err(|e| e.into_error(Code::Internal))?;
    let gp = GrantParams {
        grant_id: random_urn_uuid()?,
        manifest_cid: sealed.root.clone(),
        issuer_id: ctx.publisher_id.to_owned(),
        audience: ctx.recipient.clone(),
        issued_at: ctx.issued_at,
        expires_at: ctx.issued_at + ctx.ttl_seconds,
        not_before: None,
        ephemeral_secret: random::<32>()?,
        nonce: random::<12>()?,
    };
    let g = grant::issue(&p.dek, &gp, ctx.key).map_err(|e| e.into_error(Code::Internal))?;
    let obj = object_of([
        ("profile", INLINE_PROFILE.into()),
        ("bundle", bundle::encode(&sealed)),
        ("grant", g),
    ]);
    Ok((obj, sealed.root))
}

/// The destination's side: the pin and the reader's identity.
pub struct OpenCtx<'a> {
    /// The operator-pinned publisher.
    pub publisher: &'a Principal,
    /// The reader's identity id (the grant audience).
    pub reader_id: &'a str,
    /// The reader's X25519 secret.
    pub reader_secret: &'a [u8; 32],
    /// Its public key, base64url (computed once per pull).
    pub reader_public: &'a str,
    /// The reader's clock, epoch seconds.
    pub now: i64,
    /// Plaintext ceiling of one object.
    pub max_bytes: u64,
}

fn invalid(e: super::adds::AddsError) -> Error {
    e.into_error(Code::SyncObjectInvalid)
}

/// Opens an inline object (facts §9 steps 2–5); returns the payload and
/// its kind (`collection`, `record`, `tombstone`, `page`).
pub fn open(obj: &Inline, ctx: &OpenCtx<'_>) -> Result<(Value, &'static str)> {
    // 2. Grant, pinned publisher, grant ↔ root.
    let g = grant::validate_grant(&obj.grant).map_err(invalid)?;
    if g.issuer != *ctx.publisher {
        return Err(Error::new(
            Code::UnexpectedSyncPublisher,
            "sync object grant was not issued by the pinned publisher",
        ));
    }
    if g.manifest_cid != obj.bundle.root {
        return Err(Error::new(
            Code::SyncObjectInvalid,
            "sync object grant is for another object",
        ));
    }
    // 3. The bundle.
    let m = bundle::validate(&obj.bundle, ctx.max_bytes).map_err(invalid)?;
    // 4. Labels.
    if m.media_type.as_deref() != Some(MEDIA_TYPE) || m.schema.as_deref() != Some(SCHEMA) {
        return Err(Error::new(
            Code::SyncObjectInvalid,
            "unexpected Manifest labels",
        ));
    }
    // 5. Read with the grant.
    grant::authorize(&g, &obj.bundle.root, ctx.reader_id, ctx.now).map_err(invalid)?;
    grant::check_direct_issuer(&g, &m).map_err(invalid)?;
    let dek = grant::unwrap_with(&g, ctx.reader_id, ctx.reader_secret, ctx.reader_public)
        .map_err(invalid)?;
    let frames: Vec<&[u8]> = obj.bundle.blocks[1..]
        .iter()
        .map(|(_, f)| f.as_slice())
        .collect();
    let plaintext = object::open_frames(&m, &frames, &dek).map_err(invalid)?;
    let v = strict_parse(&plaintext).map_err(invalid)?;
    let kind = payload_kind(&v).ok_or_else(|| {
        Error::new(
            Code::SyncObjectInvalid,
            "sync payload does not have the agent-data-sync-object/v1 shape",
        )
    })?;
    Ok((v, kind))
}
