//! Direct-recipient grants (facts §8): issuing with the
//! X25519-HKDF-SHA256-AES-256-GCM key wrap, validation in the sheet's
//! order, the reader's authorisation checks and the unwrap.

use super::cid::parse as parse_cid;
use super::encoding::{b64u, b64u_fixed, x25519_key_id};
use super::jcs::domain_message_of;
use super::object::{
    Manifest, Principal, check_extensions, exact, id_string, sign_into, signature_shape, string,
    time, verify,
};
use super::{ADDS_VERSION, AResult, AddsError, Class, integrity, invalid};
use crate::wire::ed25519::Keypair;
use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use curve25519_dalek::edwards::{EdwardsBasepointTable, EdwardsPoint};
use curve25519_dalek::montgomery::MontgomeryPoint;
use curve25519_dalek::traits::BasepointTable;
use hkdf::Hkdf;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use std::sync::{Arc, Mutex};
use x25519_dalek::{PublicKey, StaticSecret};

/// Grant signing domain.
pub const GRANT_DOMAIN: &str = "adds-grant/v1";
/// Wrap AAD domain.
pub const WRAP_DOMAIN: &str = "adds-grant-wrap/v1";
/// HKDF info.
pub const KEK_INFO: &[u8] = b"adds-grant-kek/v1";
/// The only wrap algorithm.
pub const WRAP_ALGORITHM: &str = "X25519-HKDF-SHA256-AES-256-GCM";
/// The reader's default lifetime policy (30 days).
pub const MAX_LIFETIME: i64 = 2_592_000;

const REQUIRED: &[&str] = &[
    "adds_version",
    "kind",
    "grant_id",
    "manifest_cid",
    "issuer",
    "audience",
    "audience_x25519_public_key",
    "audience_x25519_key_id",
    "rights",
    "issued_at",
    "expires_at",
    "key_wrap",
    "signature",
];
const OPTIONAL: &[&str] = &["not_before", "extensions", "scope", "parent_grant"];

/// A sync recipient: `{id, x25519_public_key, x25519_key_id}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recipient {
    /// Identity id.
    pub id: String,
    /// b64u of the X25519 public key.
    pub x25519_public_key: String,
    /// Its key id.
    pub x25519_key_id: String,
}

impl Recipient {
    /// From a raw public key.
    pub fn new(id: &str, public_key: &[u8; 32]) -> Recipient {
        Recipient {
            id: id.to_owned(),
            x25519_public_key: b64u(public_key),
            x25519_key_id: x25519_key_id(public_key),
        }
    }

    /// The JSON object.
    pub fn to_json(&self) -> Value {
        json!({"id": self.id, "x25519_public_key": self.x25519_public_key,
               "x25519_key_id": self.x25519_key_id})
    }
}

/// What a grant carries, for issuing.
#[derive(Debug, Clone)]
pub struct GrantParams {
    /// `grant_id`.
    pub grant_id: String,
    /// The root CID it opens.
    pub manifest_cid: String,
    /// Issuer id (the key is the signer's).
    pub issuer_id: String,
    /// The audience.
    pub audience: Recipient,
    /// `issued_at`.
    pub issued_at: i64,
    /// `expires_at`.
    pub expires_at: i64,
    /// `not_before`.
    pub not_before: Option<i64>,
    /// Ephemeral X25519 secret.
    pub ephemeral_secret: [u8; 32],
    /// Wrap nonce.
    pub nonce: [u8; 12],
}

/// A validated grant.
#[derive(Debug, Clone)]
pub struct Grant {
    /// The key wrap's AAD: `adds-grant-wrap/v1:` and the canonical wrap
    /// header ([`wrap_header`]), built once while validating.
    pub wrap_aad: Vec<u8>,
    /// `manifest_cid`.
    pub manifest_cid: String,
    /// `issuer`.
    pub issuer: Principal,
    /// `audience`.
    pub audience: String,
    /// `audience_x25519_public_key` as sent.
    pub audience_key: String,
    /// `issued_at`.
    pub issued_at: i64,
    /// `expires_at`.
    pub expires_at: i64,
    /// `not_before ?? issued_at`.
    pub effective_not_before: i64,
    /// Ephemeral public key.
    pub ephemeral: [u8; 32],
    /// Wrap nonce.
    pub nonce: [u8; 12],
    /// Wrapped DEK.
    pub ciphertext: [u8; 48],
}

/// The wrap header: the grant without `signature`, `key_wrap` cut to
/// `{algorithm, ephemeral_public_key}`.
pub fn wrap_header(grant: &Map<String, Value>) -> Map<String, Value> {
    let mut h = grant.clone();
    h.remove("signature");
    if let Some(Value::Object(kw)) = grant.get("key_wrap") {
        let mut cut = Map::new();
        for k in ["algorithm", "ephemeral_public_key"] {
            if let Some(v) = kw.get(k) {
                cut.insert(k.into(), v.clone());
            }
        }
        h.insert("key_wrap".into(), Value::Object(cut));
    }
    h
}

fn kek(shared: &[u8; 32], aad: &[u8]) -> AResult<[u8; 32]> {
    let salt = Sha256::digest(aad);
    let mut out = [0u8; 32];
    Hkdf::<Sha256>::new(Some(&salt), shared)
        .expand(KEK_INFO, &mut out)
        .map_err(|_| invalid("HKDF expansion failed"))?;
    Ok(out)
}

/// The X25519 shared secret (RFC 7748 `X25519(secret, public)`), refusing
/// an all-zero result.
///
/// X25519 is the u-coordinate of `[clamp(secret)]P` for either point `P`
/// of the curve with u-coordinate `public` (`P` and `−P` give the same u).
/// When `public` is on the curve (every honest key), the product is taken
/// on the Edwards form with curve25519-dalek's constant-time variable-base
/// multiplication, which uses the AVX2 backend where the CPU has it and
/// costs about two thirds of the Montgomery ladder; a `public` on the twist
/// (no such `P`) takes the ladder. Only the public u-coordinate decides the
/// path; the scalar is handled in constant time on both. Both give the same
/// bytes for every input (the unit test compares them with x25519-dalek on
/// random, small-order, twist and non-canonical inputs).
pub fn shared_secret(secret: &[u8; 32], public: &[u8; 32]) -> AResult<[u8; 32]> {
    let u = MontgomeryPoint(*public);
    let s = match u.to_edwards(0) {
        Some(p) => p.mul_clamped(*secret).to_montgomery(),
        None => u.mul_clamped(*secret),
    };
    agreement(s)
}

/// An agreement's bytes, refusing the all-zero result (a small-order
/// peer key).
fn agreement(s: MontgomeryPoint) -> AResult<[u8; 32]> {
    if s.0 == [0u8; 32] {
        return Err(integrity("X25519 shared secret is all zero"));
    }
    Ok(s.0)
}

/// [`shared_secret`] of one secret with many public keys, in order: the
/// same result for each, but the Edwards products' conversions to
/// Montgomery `u` share one field inversion (curve25519-dalek's
/// `to_montgomery_batch`, constant time). A key on the twist takes the
/// ladder, as there.
pub fn shared_secrets(secret: &[u8; 32], publics: &[[u8; 32]]) -> Vec<AResult<[u8; 32]>> {
    let points: Vec<Option<EdwardsPoint>> = publics
        .iter()
        .map(|u| {
            MontgomeryPoint(*u)
                .to_edwards(0)
                .map(|p| p.mul_clamped(*secret))
        })
        .collect();
    let on_curve: Vec<EdwardsPoint> = points.iter().flatten().copied().collect();
    let mut us = EdwardsPoint::to_montgomery_batch(&on_curve).into_iter();
    publics
        .iter()
        .zip(&points)
        .map(|(u, p)| {
            agreement(match p {
                Some(_) => us
                    .next()
                    .ok_or_else(|| integrity("a batch conversion is missing"))?,
                None => MontgomeryPoint(*u).mul_clamped(*secret),
            })
        })
        .collect()
}

/// [`shared_secret`] for a peer key used again and again: the source
/// wraps every object's key for its page authority's one pinned
/// recipient, so the recipient's point is turned into a table of its
/// multiples once per process (radix 16, 30 KB, about 1 ms; the last
/// [`PEER_TABLES`] keys are kept) and each agreement is a constant-time
/// fixed-base multiplication: 16 µs instead of 40 µs with the point's
/// decompression, on the same integer `clamp(secret)` (the table method
/// is exact for every point, torsion included), so the bytes are
/// X25519's. A key on the twist takes [`shared_secret`]'s ladder.
pub fn shared_secret_to(secret: &[u8; 32], public: &[u8; 32]) -> AResult<[u8; 32]> {
    let Some(table) = peer_table(public) else {
        return shared_secret(secret, public);
    };
    agreement(table.mul_base_clamped(*secret).to_montgomery())
}

/// How many peer tables [`shared_secret_to`] keeps.
pub const PEER_TABLES: usize = 8;

/// The multiples table of the curve point with u-coordinate `public`
/// (`None` for a key on the twist). Public data only.
fn peer_table(public: &[u8; 32]) -> Option<Arc<EdwardsBasepointTable>> {
    static TABLES: Mutex<Vec<([u8; 32], Arc<EdwardsBasepointTable>)>> = Mutex::new(Vec::new());
    // A panic elsewhere cannot leave a half-written entry: entries are
    // pushed whole.
    let mut tables = TABLES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, t)) = tables.iter().find(|(k, _)| k == public) {
        return Some(t.clone());
    }
    let point = MontgomeryPoint(*public).to_edwards(0)?;
    let table = Arc::new(EdwardsBasepointTable::create(&point));
    if tables.len() >= PEER_TABLES {
        tables.remove(0);
    }
    tables.push((*public, table.clone()));
    Some(table)
}

/// The X25519 public key of a secret.
pub fn x25519_public(secret: &[u8; 32]) -> [u8; 32] {
    PublicKey::from(&StaticSecret::from(*secret)).to_bytes()
}

/// An ephemeral X25519 key's public key and its agreement with an
/// audience key.
#[derive(Clone, Copy)]
pub struct Ephemeral {
    /// [`x25519_public`] of the ephemeral secret.
    pub public: [u8; 32],
    /// [`shared_secret_to`] of the secret and the audience key.
    pub shared: [u8; 32],
}

/// [`Ephemeral`]s of many secrets with one audience key (`audience`, raw),
/// in order: what [`x25519_public`] and [`shared_secret_to`] give for each
/// secret alone, but their Edwards points' conversions to Montgomery `u`
/// share one field inversion (curve25519-dalek's `to_montgomery_batch`,
/// Montgomery's trick in constant time) instead of two inversions per
/// secret. A key on the twist takes the single path.
pub fn ephemerals(secrets: &[[u8; 32]], audience: &[u8; 32]) -> Vec<AResult<Ephemeral>> {
    let one = |s: &[u8; 32]| {
        Ok(Ephemeral {
            public: x25519_public(s),
            shared: shared_secret(s, audience)?,
        })
    };
    let Some(table) = peer_table(audience) else {
        return secrets.iter().map(one).collect();
    };
    let mut points = Vec::with_capacity(2 * secrets.len());
    points.extend(secrets.iter().map(|s| EdwardsPoint::mul_base_clamped(*s)));
    points.extend(secrets.iter().map(|s| table.mul_base_clamped(*s)));
    let us = EdwardsPoint::to_montgomery_batch(&points);
    let (publics, shared) = us.split_at(secrets.len());
    publics
        .iter()
        .zip(shared)
        .map(|(p, s)| {
            Ok(Ephemeral {
                public: p.0,
                shared: agreement(*s)?,
            })
        })
        .collect()
}

/// Issues a signed grant wrapping `dek` for `p.audience`.
pub fn issue(dek: &[u8; 32], p: &GrantParams, signer: &Keypair) -> AResult<Value> {
    let audience_pub = b64u_fixed::<32>(&p.audience.x25519_public_key, "audience key")?;
    let eph = Ephemeral {
        public: x25519_public(&p.ephemeral_secret),
        shared: shared_secret_to(&p.ephemeral_secret, &audience_pub)?,
    };
    issue_with(dek, p, &eph, signer)
}

/// [`issue`] with `p.ephemeral_secret`'s public key and agreement with
/// the audience key already computed (by [`ephemerals`]).
pub fn issue_with(
    dek: &[u8; 32],
    p: &GrantParams,
    eph: &Ephemeral,
    signer: &Keypair,
) -> AResult<Value> {
    let eph_pub = eph.public;
    let mut g = Map::new();
    g.insert("adds_version".into(), ADDS_VERSION.into());
    g.insert("kind".into(), "grant".into());
    g.insert("grant_id".into(), p.grant_id.clone().into());
    g.insert("manifest_cid".into(), p.manifest_cid.clone().into());
    g.insert(
        "issuer".into(),
        json!({"id": p.issuer_id, "ed25519_public_key": b64u(&signer.public_key())}),
    );
    g.insert("audience".into(), p.audience.id.clone().into());
    g.insert(
        "audience_x25519_public_key".into(),
        p.audience.x25519_public_key.clone().into(),
    );
    g.insert(
        "audience_x25519_key_id".into(),
        p.audience.x25519_key_id.clone().into(),
    );
    g.insert("rights".into(), json!(["read"]));
    g.insert("issued_at".into(), p.issued_at.into());
    if let Some(nb) = p.not_before {
        g.insert("not_before".into(), nb.into());
    }
    g.insert("expires_at".into(), p.expires_at.into());
    g.insert(
        "key_wrap".into(),
        json!({"algorithm": WRAP_ALGORITHM, "ephemeral_public_key": b64u(&eph_pub)}),
    );
    // No signature yet and `key_wrap` already cut: `g` is its own wrap
    // header.
    let aad = domain_message_of(WRAP_DOMAIN, &g, "signature", None)?;
    let kek = kek(&eph.shared, &aad)?;
    let ct = Aes256Gcm::new_from_slice(&kek)
        .map_err(|_| invalid("bad KEK length"))?
        .encrypt(
            &Nonce::from(p.nonce),
            Payload {
                msg: dek,
                aad: &aad,
            },
        )
        .map_err(|_| integrity("key wrap failed"))?;
    g.insert(
        "key_wrap".into(),
        json!({"algorithm": WRAP_ALGORITHM, "ephemeral_public_key": b64u(&eph_pub),
               "nonce": b64u(&p.nonce), "ciphertext": b64u(&ct)}),
    );
    sign_into(GRANT_DOMAIN, &mut g, signer)?;
    Ok(Value::Object(g))
}

/// Validates a grant (facts §8.3, steps 1–8, signature included).
pub fn validate_grant(v: &Value) -> AResult<Grant> {
    // 1.
    let m = exact(v, REQUIRED, OPTIONAL, "grant")?;
    if m.get("adds_version").and_then(Value::as_str) != Some(ADDS_VERSION) {
        return Err(invalid("grant adds_version must be \"0.1\""));
    }
    if m.get("kind").and_then(Value::as_str) != Some("grant") {
        return Err(invalid("grant kind must be \"grant\""));
    }
    id_string(m.get("grant_id"), "grant.grant_id")?;
    // 2.
    let manifest_cid = string(m.get("manifest_cid"), "grant.manifest_cid")?;
    parse_cid(manifest_cid).map_err(|_| invalid("grant.manifest_cid is not a CID"))?;
    let issuer = Principal::from_json(&m["issuer"], "grant.issuer")?;
    let audience = id_string(m.get("audience"), "grant.audience")?.to_owned();
    // 3.
    let audience_key = string(
        m.get("audience_x25519_public_key"),
        "grant.audience_x25519_public_key",
    )?;
    let ak = b64u_fixed::<32>(audience_key, "grant.audience_x25519_public_key")?;
    let key_id = string(
        m.get("audience_x25519_key_id"),
        "grant.audience_x25519_key_id",
    )?;
    if key_id != x25519_key_id(&ak) {
        return Err(integrity(
            "audience_x25519_key_id is not the audience key's fingerprint",
        ));
    }
    // 4.
    if m.get("rights") != Some(&json!(["read"])) {
        return Err(invalid("grant.rights must be exactly [\"read\"]"));
    }
    // 5.
    let issued_at = time(m.get("issued_at"), "grant.issued_at")?;
    let expires_at = time(m.get("expires_at"), "grant.expires_at")?;
    let not_before = match m.get("not_before") {
        None => None,
        v => Some(time(v, "grant.not_before")?),
    };
    let nb = not_before.unwrap_or(issued_at);
    if !(issued_at <= nb && nb < expires_at) {
        return Err(invalid(
            "grant times must satisfy issued_at <= not_before < expires_at",
        ));
    }
    // 6.
    if m.contains_key("parent_grant") {
        return Err(AddsError::new(
            Class::Unsupported,
            "delegated grants (parent_grant) are not supported",
        ));
    }
    if m.contains_key("scope") {
        return Err(AddsError::new(
            Class::Unsupported,
            "scoped grants are not supported",
        ));
    }
    check_extensions(m.get("extensions"))?;
    // 7.
    let kw = exact(
        &m["key_wrap"],
        &["algorithm", "ephemeral_public_key", "nonce", "ciphertext"],
        &[],
        "grant.key_wrap",
    )?;
    if kw.get("algorithm").and_then(Value::as_str) != Some(WRAP_ALGORITHM) {
        return Err(invalid(
            "key_wrap.algorithm is not X25519-HKDF-SHA256-AES-256-GCM",
        ));
    }
    let ephemeral = b64u_fixed::<32>(
        string(
            kw.get("ephemeral_public_key"),
            "key_wrap.ephemeral_public_key",
        )?,
        "key_wrap.ephemeral_public_key",
    )?;
    let nonce = b64u_fixed::<12>(string(kw.get("nonce"), "key_wrap.nonce")?, "key_wrap.nonce")?;
    let ciphertext = b64u_fixed::<48>(
        string(kw.get("ciphertext"), "key_wrap.ciphertext")?,
        "key_wrap.ciphertext",
    )?;
    // 8.
    let (sig_key, sig) = signature_shape(&m["signature"])?;
    if sig_key != issuer.ed25519_public_key {
        return Err(integrity("signature.public_key is not the issuer's key"));
    }
    let msg = domain_message_of(GRANT_DOMAIN, m, "signature", None)?;
    verify(&issuer.ed25519_public_key, &msg, &sig)?;
    // The wrap header is the signed object with `key_wrap` cut: it cannot
    // fail where the whole object did not.
    let cut =
        json!({"algorithm": kw["algorithm"], "ephemeral_public_key": kw["ephemeral_public_key"]});
    let wrap_aad = domain_message_of(WRAP_DOMAIN, m, "signature", Some(("key_wrap", &cut)))?;
    Ok(Grant {
        wrap_aad,
        manifest_cid: manifest_cid.to_owned(),
        issuer,
        audience,
        audience_key: audience_key.to_owned(),
        issued_at,
        expires_at,
        effective_not_before: nb,
        ephemeral,
        nonce,
        ciphertext,
    })
}

fn unauthorized(msg: impl Into<String>) -> AddsError {
    AddsError::new(Class::Unauthorized, msg)
}

/// The reader's checks before reading (facts §8.4 steps 1–4): CID,
/// audience, lifetime policy, time window (no skew; `expires_at`
/// exclusive).
pub fn authorize(g: &Grant, cid: &str, reader_id: &str, now: i64) -> AResult<()> {
    if g.manifest_cid != cid {
        return Err(unauthorized("grant is for another object"));
    }
    if g.audience != reader_id {
        return Err(unauthorized("grant audience is not this reader"));
    }
    if g.expires_at - g.issued_at > MAX_LIFETIME {
        return Err(unauthorized(
            "grant lifetime exceeds the reader's 30-day policy",
        ));
    }
    if now < g.effective_not_before {
        return Err(unauthorized("grant is not active yet"));
    }
    if now >= g.expires_at {
        return Err(unauthorized("grant has expired"));
    }
    Ok(())
}

/// Direct issuer (facts §8.4 step 6): the manifest's publisher is the
/// grant's issuer, id and key.
pub fn check_direct_issuer(g: &Grant, m: &Manifest) -> AResult<()> {
    if m.publisher != g.issuer {
        return Err(integrity("grant issuer is not the manifest publisher"));
    }
    Ok(())
}

/// Unwraps the DEK (facts §8.4 step 7).
pub fn unwrap(g: &Grant, reader_id: &str, reader_secret: &[u8; 32]) -> AResult<[u8; 32]> {
    unwrap_with(
        g,
        reader_id,
        reader_secret,
        &b64u(&x25519_public(reader_secret)),
    )
}

/// [`unwrap`] with the reader's public key (b64u) computed once by the
/// caller for many grants.
pub fn unwrap_with(
    g: &Grant,
    reader_id: &str,
    reader_secret: &[u8; 32],
    reader_public_b64u: &str,
) -> AResult<[u8; 32]> {
    unwrap_checks(g, reader_id, reader_public_b64u)?;
    unwrap_shared(g, &shared_secret(reader_secret, &g.ephemeral)?)
}

/// [`unwrap_with`]'s checks before its key agreement: the grant is for
/// this reader and its key.
pub fn unwrap_checks(g: &Grant, reader_id: &str, reader_public_b64u: &str) -> AResult<()> {
    if g.audience != reader_id {
        return Err(unauthorized("grant audience is not this reader"));
    }
    if reader_public_b64u != g.audience_key {
        return Err(unauthorized("grant is wrapped for another X25519 key"));
    }
    Ok(())
}

/// [`unwrap_with`] after its checks and its key agreement (`shared`, the
/// reader's secret with `g.ephemeral`): the KEK, then the DEK.
pub fn unwrap_shared(g: &Grant, shared: &[u8; 32]) -> AResult<[u8; 32]> {
    let aad = &g.wrap_aad;
    let kek = kek(shared, aad)?;
    let dek = Aes256Gcm::new_from_slice(&kek)
        .map_err(|_| invalid("bad KEK length"))?
        .decrypt(
            &Nonce::from(g.nonce),
            Payload {
                msg: &g.ciphertext,
                aad,
            },
        )
        .map_err(|_| integrity("key wrap does not open"))?;
    dek.try_into()
        .map_err(|_| integrity("unwrapped DEK is not 32 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ladder(secret: &[u8; 32], public: &[u8; 32]) -> [u8; 32] {
        StaticSecret::from(*secret)
            .diffie_hellman(&PublicKey::from(*public))
            .to_bytes()
    }

    fn same(secret: &[u8; 32], public: &[u8; 32]) {
        check(secret, public, &[shared_secret]);
    }

    /// Both paths, the peer table's too.
    fn same_to(secret: &[u8; 32], public: &[u8; 32]) {
        check(secret, public, &[shared_secret, shared_secret_to]);
    }

    type Dh = fn(&[u8; 32], &[u8; 32]) -> AResult<[u8; 32]>;

    fn check(secret: &[u8; 32], public: &[u8; 32], paths: &[Dh]) {
        let want = ladder(secret, public);
        for f in paths {
            match f(secret, public) {
                Ok(got) => assert_eq!(got, want, "{public:?}"),
                Err(_) => assert_eq!(want, [0u8; 32], "{public:?}"),
            }
        }
    }

    #[test]
    fn the_peer_table_path_equals_the_ladder_for_more_peers_than_it_keeps() {
        // Every key is new to the table cache at first, then found again;
        // more keys than it keeps, so entries are also evicted.
        let peers: Vec<[u8; 32]> = (0..PEER_TABLES + 3)
            .map(|_| x25519_public(&crate::wire::random_bytes().expect("random")))
            .collect();
        for _ in 0..2 {
            for p in &peers {
                let secret: [u8; 32] = crate::wire::random_bytes().expect("random");
                same_to(&secret, p);
                // The clamped integer is not reduced: the top bits set.
                same_to(&[0xff; 32], p);
            }
        }
    }

    #[test]
    fn the_edwards_path_equals_the_ladder() {
        // RFC 7748 §5.2, the first test vector.
        let k = super::super::encoding::b64u_decode("pUbja_BSfJ07FhVLgkZe3WIUTArB_FoYUGoiRLpEmsQ")
            .expect("k");
        let u = super::super::encoding::b64u_decode("5ttoZ1gwMNs1lMGkJLFffHJmJOwmszU7EKkDptCrHEw")
            .expect("u");
        let (k, u): ([u8; 32], [u8; 32]) = (k.try_into().expect("32"), u.try_into().expect("32"));
        assert_eq!(
            super::super::encoding::b64u(&shared_secret(&k, &u).expect("dh")),
            "w9pVN53pxpCOlOpN8o0ITzLszwNJHHH3VLQHVXeihVI"
        );
        let mut special: Vec<[u8; 32]> = Vec::new();
        // Small-order u (0, 1, the order-8 points, p-1, p, p+1), twist points,
        // non-canonical encodings and the high bit set.
        let p_minus = |d: u8| {
            let mut b = [0xffu8; 32];
            b[0] = 0xed - d;
            b[31] = 0x7f;
            b
        };
        for x in [0u8, 1, 2, 3, 9] {
            let mut b = [0u8; 32];
            b[0] = x;
            special.push(b);
            b[31] |= 0x80;
            special.push(b);
        }
        for d in [0u8, 1, 2] {
            special.push(p_minus(d));
        }
        let mut p_plus_one = p_minus(0);
        p_plus_one[0] = 0xee;
        special.push(p_plus_one);
        special.push([0xff; 32]);
        for h in [
            "4Ot6fDtBuK4WVuP68Z_EatoJjeucMrH9hmIFFl9JuAA",
            "X5yVvKNQjCSx0LFVnIPvWwREXMRYHI6G2CJO3dCfEVc",
        ] {
            let v = super::super::encoding::b64u_decode(h).expect("order-8 point");
            special.push(v.try_into().expect("32"));
        }
        for _ in 0..20 {
            let secret: [u8; 32] = crate::wire::random_bytes().expect("random");
            let public: [u8; 32] = crate::wire::random_bytes().expect("random");
            // Half of random strings are on the twist: both paths run.
            same(&secret, &public);
            same(
                &secret,
                &x25519_public(&crate::wire::random_bytes().expect("random")),
            );
            for s in &special {
                same(&secret, s);
            }
        }
        // The peer table on the same points (one table each).
        let secret: [u8; 32] = crate::wire::random_bytes().expect("random");
        for s in &special {
            same_to(&secret, s);
            same_to(&[0xff; 32], s);
        }
        // The batch, on the same points.
        for s in &special {
            batch_equals_one_by_one(s);
        }
    }

    /// [`ephemerals`] gives, for each secret, the single path's public key
    /// and the ladder's agreement (an error exactly where it is zero).
    fn batch_equals_one_by_one(audience: &[u8; 32]) {
        let mut secrets: Vec<[u8; 32]> = (0..6)
            .map(|_| crate::wire::random_bytes().expect("random"))
            .collect();
        secrets.push([0xff; 32]);
        secrets.push([0; 32]);
        // One secret with many keys: this key among random curve points,
        // twist strings and small-order points.
        let mut publics: Vec<[u8; 32]> = (0..3)
            .map(|_| x25519_public(&crate::wire::random_bytes().expect("random")))
            .collect();
        publics.push(crate::wire::random_bytes().expect("random"));
        publics.push([0; 32]);
        publics.insert(2, *audience);
        for s in &secrets {
            let got = shared_secrets(s, &publics);
            assert_eq!(got.len(), publics.len());
            for (u, r) in publics.iter().zip(got) {
                let want = ladder(s, u);
                match r {
                    Ok(r) => assert_eq!(r, want, "{u:?}"),
                    Err(_) => assert_eq!(want, [0u8; 32], "{u:?}"),
                }
            }
        }
        for n in [0, 1, secrets.len()] {
            let got = ephemerals(&secrets[..n], audience);
            assert_eq!(got.len(), n);
            for (s, e) in secrets.iter().zip(got) {
                let want = ladder(s, audience);
                match e {
                    Ok(e) => {
                        assert_eq!(e.public, x25519_public(s));
                        assert_eq!(e.shared, want, "{audience:?}");
                    }
                    Err(_) => assert_eq!(want, [0u8; 32], "{audience:?}"),
                }
            }
        }
    }

    #[test]
    fn a_batch_of_ephemeral_keys_equals_the_keys_one_by_one() {
        for _ in 0..4 {
            // A curve point (the peer table's batch) and a random string
            // (on the twist half the time: the single path).
            batch_equals_one_by_one(&x25519_public(
                &crate::wire::random_bytes().expect("random"),
            ));
            batch_equals_one_by_one(&crate::wire::random_bytes().expect("random"));
        }
    }
}
