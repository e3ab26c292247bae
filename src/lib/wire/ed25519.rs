//! Strict Ed25519: key generation, signing and a verifier that refuses
//! everything a permissive verifier would let through.
//!
//! `ed25519-dalek`'s `verify_strict` refuses small-order `A` and `R` but
//! accepts mixed-order points (a prime-order point plus a torsion
//! component). This verifier additionally requires, for both the public key
//! `A` and the signature's `R`: the encoding decompresses, re-compresses to
//! exactly the same 32 bytes (canonical), is not of small order and is
//! torsion-free. `S` must be canonical (`S < ℓ`, checked by dalek).

use crate::error::{Code, Error, Result};
use curve25519_dalek::edwards::CompressedEdwardsY;
pub use ed25519_dalek::VerifyingKey;
use ed25519_dalek::{Signature, Signer, SigningKey};

/// Length of a public key in bytes.
pub const PUBLIC_KEY_LEN: usize = 32;
/// Length of a signature in bytes.
pub const SIGNATURE_LEN: usize = 64;

fn bad(msg: &str) -> Error {
    Error::new(Code::SignatureInvalid, msg.to_owned())
}

/// Checks that 32 bytes are a canonical, torsion-free, non-small-order
/// Edwards point encoding.
pub fn check_point(bytes: &[u8; 32]) -> Result<()> {
    let c = CompressedEdwardsY(*bytes);
    let p = c
        .decompress()
        .ok_or_else(|| bad("not a valid curve point encoding"))?;
    if p.compress().0 != *bytes {
        return Err(bad("non-canonical point encoding"));
    }
    if p.is_small_order() {
        return Err(bad("small-order point"));
    }
    if !p.is_torsion_free() {
        return Err(bad("point has a torsion component"));
    }
    Ok(())
}

/// Public keys that passed [`check_point`] in this process, decompressed,
/// at most [`CHECKED_KEPT`] (the oldest goes first). `check_point` is a
/// pure function of the 32 bytes, so a hit answers exactly what checking
/// again would: `qualify` re-verifies every transfer of a subject, most of
/// them signed by the same one or two enrolled keys, and each check is a
/// full scalar multiplication (the torsion check).
static CHECKED: std::sync::Mutex<std::collections::VecDeque<([u8; 32], VerifyingKey)>> =
    std::sync::Mutex::new(std::collections::VecDeque::new());

/// How many checked keys [`CHECKED`] keeps.
const CHECKED_KEPT: usize = 64;

/// [`check_point`] of a public key, remembered: the decompressed key of
/// 32 bytes that are a canonical, torsion-free, non-small-order point.
pub fn checked_key(bytes: &[u8; 32]) -> Result<VerifyingKey> {
    let hit = CHECKED
        .lock()
        .ok()
        .and_then(|c| c.iter().find(|(k, _)| k == bytes).map(|(_, vk)| *vk));
    if let Some(vk) = hit {
        return Ok(vk);
    }
    check_point(bytes)?;
    let vk = VerifyingKey::from_bytes(bytes).map_err(|_| bad("invalid public key"))?;
    if let Ok(mut c) = CHECKED.lock() {
        if c.len() >= CHECKED_KEPT {
            c.pop_front();
        }
        c.push_back((*bytes, vk));
    }
    Ok(vk)
}

/// Parses and checks a public key given as 64 lowercase hex characters.
pub fn parse_public_key_hex(hex: &str) -> Result<[u8; 32]> {
    let v = decode_hex(hex, PUBLIC_KEY_LEN).map_err(|_| {
        Error::new(
            Code::InvalidInput,
            "a public key is 64 lowercase hex characters",
        )
    })?;
    let mut k = [0u8; 32];
    k.copy_from_slice(&v);
    checked_key(&k).map_err(|e| {
        Error::new(
            Code::InvalidInput,
            format!("public key refused: {}", e.message()),
        )
    })?;
    Ok(k)
}

/// Decodes lowercase hex of an exact byte length.
pub fn decode_hex(hex: &str, len: usize) -> Result<Vec<u8>> {
    if hex.len() != len * 2 {
        return Err(bad("wrong hex length"));
    }
    data_encoding::HEXLOWER
        .decode(hex.as_bytes())
        .map_err(|_| bad("not lowercase hex"))
}

/// Verifies `sig` over `msg` under `public_key`, strictly: the key passes
/// [`check_point`] ([`checked_key`]: once per process and key), then
/// [`verify_strict_checked`], whose equation implies every point check of
/// `R` (they run only to name a failure's reason). The accepted set and the
/// reason given for each refusal are those of checking `A`, then `R`, then
/// the equation.
pub fn verify_strict(public_key: &[u8; 32], msg: &[u8], sig: &[u8; 64]) -> Result<()> {
    let vk = checked_key(public_key)?;
    verify_strict_checked(&vk, msg, sig)
}

/// [`verify_strict`] for a public key that has already passed
/// [`check_point`] (a pinned key checked once and then reused).
///
/// The equation runs first: dalek's `verify_strict` recomputes
/// `R' = [s]B − [k]A` and requires `R'`'s canonical encoding to equal the
/// signature's `R` bytes, refusing small-order `R` and non-canonical `S`.
/// With `A` torsion-free, `R'` lies in the prime-order subgroup, so a
/// passing equation already implies that `R` is canonical, not of small
/// order and torsion-free: the explicit point checks of `R` (a scalar
/// multiplication) are needed only to name the reason of a failure. The
/// accepted set is exactly [`verify_strict`]'s.
pub fn verify_strict_checked_key(public_key: &[u8; 32], msg: &[u8], sig: &[u8; 64]) -> Result<()> {
    let vk = VerifyingKey::from_bytes(public_key).map_err(|_| bad("invalid public key"))?;
    verify_strict_checked(&vk, msg, sig)
}

/// [`verify_strict_checked_key`] with the key already decompressed (a
/// pinned key reused for many signatures).
pub fn verify_strict_checked(vk: &VerifyingKey, msg: &[u8], sig: &[u8; 64]) -> Result<()> {
    let s = Signature::from_bytes(sig);
    if vk.verify_strict(msg, &s).is_ok() {
        return Ok(());
    }
    let mut r = [0u8; 32];
    r.copy_from_slice(&sig[..32]);
    check_point(&r)?;
    Err(bad("signature does not verify"))
}

/// Verifies a signature given as 128 lowercase hex characters.
pub fn verify_strict_hex(public_key: &[u8; 32], msg: &[u8], sig_hex: &str) -> Result<()> {
    let v = decode_hex(sig_hex, SIGNATURE_LEN)?;
    let mut sig = [0u8; 64];
    sig.copy_from_slice(&v);
    verify_strict(public_key, msg, &sig)
}

/// A signing key from its 32-byte seed.
pub struct Keypair(SigningKey);

impl Keypair {
    /// From a 32-byte seed.
    pub fn from_seed(seed: &[u8; 32]) -> Keypair {
        Keypair(SigningKey::from_bytes(seed))
    }

    /// A fresh key from the OS CSPRNG.
    pub fn generate() -> Result<(Keypair, [u8; 32])> {
        let seed = super::random_bytes::<32>()?;
        Ok((Keypair::from_seed(&seed), seed))
    }

    /// The public key bytes.
    pub fn public_key(&self) -> [u8; 32] {
        self.0.verifying_key().to_bytes()
    }

    /// Signs `msg`; returns the 64 signature bytes.
    pub fn sign(&self, msg: &[u8]) -> [u8; 64] {
        self.0.sign(msg).to_bytes()
    }

    /// Signs `msg`; returns 128 lowercase hex characters.
    pub fn sign_hex(&self, msg: &[u8]) -> String {
        data_encoding::HEXLOWER.encode(&self.sign(msg))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use curve25519_dalek::constants::EIGHT_TORSION;

    #[test]
    fn the_checked_key_variant_accepts_exactly_what_verify_strict_accepts() {
        let k = Keypair::from_seed(&[9u8; 32]);
        let pk = k.public_key();
        let sig = k.sign(b"m");
        verify_strict(&pk, b"m", &sig).expect("ok");
        verify_strict_checked_key(&pk, b"m", &sig).expect("ok");
        // R replaced by a mixed-order point: both refuse.
        let r = CompressedEdwardsY(sig[..32].try_into().expect("32"))
            .decompress()
            .expect("R");
        let mut bad_sig = sig;
        bad_sig[..32].copy_from_slice(&(r + EIGHT_TORSION[1]).compress().0);
        assert!(verify_strict(&pk, b"m", &bad_sig).is_err());
        let e = verify_strict_checked_key(&pk, b"m", &bad_sig).expect_err("mixed R");
        assert!(e.message().contains("torsion"), "{e}");
    }

    #[test]
    fn a_remembered_key_answers_as_a_fresh_check_would() {
        let k = Keypair::from_seed(&[5u8; 32]);
        let pk = k.public_key();
        let a = CompressedEdwardsY(pk).decompress().expect("point");
        let mixed = (a + EIGHT_TORSION[1]).compress().0;
        let sig = k.sign(b"m");
        // The second round answers from the memo (a refused key is never kept).
        for _ in 0..2 {
            let e = checked_key(&mixed).expect_err("mixed key");
            assert!(e.message().contains("torsion"), "{e}");
            assert_eq!(checked_key(&pk).expect("ok").to_bytes(), pk);
            verify_strict(&pk, b"m", &sig).expect("ok");
            assert!(verify_strict(&pk, b"n", &sig).is_err());
            assert!(verify_strict(&mixed, b"m", &sig).is_err());
            assert!(parse_public_key_hex(&data_encoding::HEXLOWER.encode(&mixed)).is_err());
        }
    }

    #[test]
    fn sign_verify_and_refusals() {
        let k = Keypair::from_seed(&[7u8; 32]);
        let pk = k.public_key();
        let sig = k.sign_hex(b"hello");
        verify_strict_hex(&pk, b"hello", &sig).expect("verifies");
        assert!(verify_strict_hex(&pk, b"hellO", &sig).is_err());
        // Small-order key (identity).
        let mut ident = [0u8; 32];
        ident[0] = 1;
        assert!(check_point(&ident).is_err());
        // Mixed-order key: A + T (T of order 8) is refused.
        let a = CompressedEdwardsY(pk).decompress().expect("point");
        let mixed = (a + EIGHT_TORSION[1]).compress().0;
        assert!(check_point(&mixed).is_err());
        // Non-canonical encoding: y = p (≡ 0) is encoded non-canonically.
        let mut nc = [0xffu8; 32];
        nc[0] = 0xed;
        nc[31] = 0x7f;
        assert!(check_point(&nc).is_err());
        assert!(parse_public_key_hex(&"00".repeat(32)).is_err());
    }
}
