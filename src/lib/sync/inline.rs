//! `adds/0.1-inline` objects (facts §9–§10): a sync payload sealed as its
//! own ADDS object with a direct-recipient grant, and opened with every
//! check of the sheet, in its order.

use super::adds::encoding::b64u_fixed;
use super::adds::grant::{self, Grant, GrantParams, Recipient};
use super::adds::jcs::{canonical, strict_parse};
use super::adds::object::{self, Checked, Principal, SealParams};
use super::adds::{Draw, bundle, object_of};
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
    seal_many(&[payload], ctx)
        .pop()
        .unwrap_or_else(|| Err(Error::internal("nothing was sealed")))
}

/// The random bytes one object of one chunk takes: its [`SealParams`],
/// then its grant's id, ephemeral secret and wrap nonce.
const RANDOM_PER_OBJECT: usize = SealParams::RANDOM_BYTES + 16 + 32 + 12;

/// One object on its way to being sealed.
struct Prepared {
    bytes: Vec<u8>,
    params: SealParams,
    grant_id: String,
    ephemeral_secret: [u8; 32],
    nonce: [u8; 12],
}

/// Seals each payload as [`seal`] does, in order, one result each: their
/// random values come from one read of the OS source, and their grants'
/// X25519 keys are computed together ([`grant::ephemerals`]).
pub fn seal_many(payloads: &[&Value], ctx: &SealCtx<'_>) -> Vec<Result<(Value, String)>> {
    seal_many_as(payloads, ctx, |s| Ok(s.into_value()))
}

/// [`seal_many`] giving each inline object as its compact JSON text (what
/// `serde_json::to_vec` of [`seal_many`]'s value gives), rendered without
/// building the value: what a page carries.
pub fn seal_many_text(payloads: &[&Value], ctx: &SealCtx<'_>) -> Vec<Result<(Vec<u8>, String)>> {
    seal_many_as(payloads, ctx, |s| s.to_json())
}

/// One sealed object and its grant, before its wire form.
struct SealedInline {
    sealed: object::Sealed,
    grant: Value,
}

impl SealedInline {
    /// `{"profile", "bundle", "grant"}`.
    fn into_value(self) -> Value {
        object_of([
            ("profile", INLINE_PROFILE.into()),
            ("bundle", bundle::encode(&self.sealed)),
            ("grant", self.grant),
        ])
    }

    /// [`SealedInline::into_value`]'s compact text, members in key order.
    fn to_json(&self) -> Result<Vec<u8>> {
        let render = |e: serde_json::Error| Error::internal(format!("cannot render: {e}"));
        let blocks: usize = self.sealed.manifest_bytes.len()
            + self
                .sealed
                .frames
                .iter()
                .map(|(_, f)| f.len())
                .sum::<usize>();
        let mut out = Vec::with_capacity(blocks * 4 / 3 + 2048);
        out.extend_from_slice(b"{\"bundle\":");
        bundle::write_json(&self.sealed, &mut out).map_err(render)?;
        out.extend_from_slice(b",\"grant\":");
        serde_json::to_writer(&mut out, &self.grant).map_err(render)?;
        out.extend_from_slice(b",\"profile\":");
        serde_json::to_writer(&mut out, INLINE_PROFILE).map_err(render)?;
        out.push(b'}');
        Ok(out)
    }
}

/// [`seal_many`] with each sealed object put in its wire form by `wire`.
fn seal_many_as<T>(
    payloads: &[&Value],
    ctx: &SealCtx<'_>,
    wire: impl Fn(SealedInline) -> Result<T>,
) -> Vec<Result<(T, String)>> {
    let internal = |e: super::adds::AddsError| e.into_error(Code::Internal);
    let audience = match b64u_fixed::<32>(&ctx.recipient.x25519_public_key, "audience key") {
        Ok(a) => a,
        Err(e) => return payloads.iter().map(|_| Err(internal(e.clone()))).collect(),
    };
    let mut draw = match Draw::new(payloads.len() * RANDOM_PER_OBJECT) {
        Ok(d) => d,
        Err(e) => return payloads.iter().map(|_| Err(e.clone())).collect(),
    };
    let prepared: Vec<Result<Prepared>> = payloads
        .iter()
        .map(|payload| {
            let bytes = canonical(payload).map_err(internal)?;
            let params =
                SealParams::random_from(&mut draw, bytes.len(), ctx.issued_at, MEDIA_TYPE, SCHEMA)?;
            Ok(Prepared {
                bytes,
                params,
                grant_id: draw.urn_uuid()?,
                ephemeral_secret: draw.take::<32>()?,
                nonce: draw.take::<12>()?,
            })
        })
        .collect();
    drop(draw);
    let secrets: Vec<[u8; 32]> = prepared
        .iter()
        .flatten()
        .map(|p| p.ephemeral_secret)
        .collect();
    let mut ephemerals = grant::ephemerals(&secrets, &audience).into_iter();
    prepared
        .into_iter()
        .map(|p| {
            let p = p?;
            let eph = ephemerals
                .next()
                .ok_or_else(|| Error::internal("an ephemeral key is missing"))?
                .map_err(internal)?;
            let (s, root) = seal_prepared(p, &eph, ctx)?;
            Ok((wire(s)?, root))
        })
        .collect()
}

fn seal_prepared(
    p: Prepared,
    eph: &grant::Ephemeral,
    ctx: &SealCtx<'_>,
) -> Result<(SealedInline, String)> {
    let internal = |e: super::adds::AddsError| e.into_error(Code::Internal);
    let sealed = object::seal(&p.bytes, &p.params, ctx.publisher_id, ctx.key).map_err(internal)?;
    let gp = GrantParams {
        grant_id: p.grant_id,
        manifest_cid: sealed.root.clone(),
        issuer_id: ctx.publisher_id.to_owned(),
        audience: ctx.recipient.clone(),
        issued_at: ctx.issued_at,
        expires_at: ctx.issued_at + ctx.ttl_seconds,
        not_before: None,
        ephemeral_secret: p.ephemeral_secret,
        nonce: p.nonce,
    };
    let grant = grant::issue_with(&p.params.dek, &gp, eph, ctx.key).map_err(internal)?;
    let root = sealed.root.clone();
    Ok((SealedInline { sealed, grant }, root))
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
    open_many(&[obj], ctx)
        .pop()
        .unwrap_or_else(|| Err(Error::internal("nothing was opened")))
}

/// Opens each object as [`open`] does, in order, one result each (the
/// first failure of each object's own checks, in the sheet's order): the
/// key agreements of the objects that reach step 5 are computed together
/// ([`grant::shared_secrets`]).
pub fn open_many(objs: &[&Inline], ctx: &OpenCtx<'_>) -> Vec<Result<(Value, &'static str)>> {
    plaintexts(objs, ctx)
        .into_iter()
        .map(|p| parse_payload(&p?))
        .collect()
}

/// Steps 2–5 of each object up to its plaintext, in order, one result
/// each; the key agreements together.
fn plaintexts(objs: &[&Inline], ctx: &OpenCtx<'_>) -> Vec<Result<Vec<u8>>> {
    let checked: Vec<Result<(Grant, Checked<'_>)>> = objs.iter().map(|o| check(o, ctx)).collect();
    let ephemerals: Vec<[u8; 32]> = checked.iter().flatten().map(|(g, _)| g.ephemeral).collect();
    let mut shared = grant::shared_secrets(ctx.reader_secret, &ephemerals).into_iter();
    checked
        .into_iter()
        .map(|c| {
            let (g, m) = c?;
            let s = shared
                .next()
                .ok_or_else(|| Error::internal("a key agreement is missing"))?
                .map_err(invalid)?;
            let dek = grant::unwrap_shared(&g, &s).map_err(invalid)?;
            // The frames were checked in step 3; here they are decrypted.
            m.decrypt(&dek).map_err(invalid)
        })
        .collect()
}

/// What [`open_expecting`] found in an object.
#[derive(Debug)]
pub enum Opened {
    /// The plaintext is byte for byte the canonical text the caller
    /// expected, so it is that payload: nothing is parsed.
    Expected,
    /// Any other plaintext, strictly parsed, with its kind (as [`open`]).
    Parsed(Value, &'static str),
}

/// Opens an object whose payload the caller already knows, as the
/// canonical text `expected` (the page-control object, which binds the
/// page around it): every check of [`open`] up to the plaintext runs, in
/// its order; a plaintext equal to `expected` is that payload without
/// being parsed, and any other plaintext takes [`open`]'s strict parse and
/// shape check, so a malformed payload fails as it does there.
///
/// `expected` must be the canonical text ([`canonical`]) of a payload
/// whose shape [`payload_kind`] accepts; then a plaintext equal to it
/// would pass the strict parse and the shape check, and skipping them
/// changes no answer.
pub fn open_expecting(obj: &Inline, ctx: &OpenCtx<'_>, expected: &[u8]) -> Result<Opened> {
    let plaintext = plaintexts(&[obj], ctx)
        .pop()
        .unwrap_or_else(|| Err(Error::internal("nothing was opened")))?;
    if plaintext == expected {
        return Ok(Opened::Expected);
    }
    let (v, kind) = parse_payload(&plaintext)?;
    Ok(Opened::Parsed(v, kind))
}

/// Steps 2–5 up to the key agreement.
fn check<'a>(obj: &'a Inline, ctx: &OpenCtx<'_>) -> Result<(Grant, Checked<'a>)> {
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
    let checked = bundle::validate(&obj.bundle, ctx.max_bytes).map_err(invalid)?;
    let m = checked.manifest();
    // 4. Labels.
    if m.media_type.as_deref() != Some(MEDIA_TYPE) || m.schema.as_deref() != Some(SCHEMA) {
        return Err(Error::new(
            Code::SyncObjectInvalid,
            "unexpected Manifest labels",
        ));
    }
    // 5. Read with the grant.
    grant::authorize(&g, &obj.bundle.root, ctx.reader_id, ctx.now).map_err(invalid)?;
    grant::check_direct_issuer(&g, m).map_err(invalid)?;
    grant::unwrap_checks(&g, ctx.reader_id, ctx.reader_public).map_err(invalid)?;
    Ok((g, checked))
}

/// Step 5's end: the payload's strict parse and its shape.
fn parse_payload(plaintext: &[u8]) -> Result<(Value, &'static str)> {
    let v = strict_parse(plaintext).map_err(invalid)?;
    let kind = payload_kind(&v).ok_or_else(|| {
        Error::new(
            Code::SyncObjectInvalid,
            "sync payload does not have the agent-data-sync-object/v1 shape",
        )
    })?;
    Ok((v, kind))
}

#[cfg(test)]
mod tests {
    use super::super::roundtrip::{NOW, pair};
    use super::*;
    use serde_json::json;

    /// The text a page carries is the value's rendering, for one frame and
    /// for two (a payload over one 256 KiB chunk).
    #[test]
    fn an_inline_objects_text_is_the_rendering_of_its_value() {
        let p = pair();
        let rcpt = p.dst_id.recipient();
        let ctx = SealCtx {
            key: &p.src_id.signing,
            publisher_id: &p.src_id.id,
            recipient: &rcpt,
            issued_at: NOW,
            ttl_seconds: 300,
        };
        let small = json!({"protocol": "x", "kind": "tombstone", "tombstone": {"a": "\"\u{1}é"}});
        let large = json!({"protocol": "x", "kind": "record", "data": "y".repeat(300_000)});
        let both = seal_many_as(&[&small, &large], &ctx, |s| {
            Ok((s.to_json()?, s.into_value()))
        });
        let mut frames = Vec::new();
        for r in both {
            let ((text, value), root) = r.expect("sealed");
            assert_eq!(text, serde_json::to_vec(&value).expect("json"));
            assert_eq!(value["bundle"]["root"]["cid"], root.as_str());
            frames.push(value["bundle"]["blocks"].as_array().map_or(0, Vec::len) - 1);
        }
        assert_eq!(frames, [1, 2]);
    }
}
