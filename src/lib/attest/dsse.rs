//! DSSE (Dead Simple Signing Envelope) v1: the pre-authentication encoding,
//! the JSON envelope, Ed25519 signing and strict verification.
//!
//! `PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body`,
//! where `LEN` is the ASCII decimal byte length without leading zeros. The
//! signature covers the PAE of the UTF-8 payload type and the exact payload
//! bytes; nothing is canonicalised. Envelopes are written with standard
//! base64 (padded); both standard and URL-safe base64 are accepted when
//! reading, as the protocol requires.

use crate::error::{Code, Error, Result};
use crate::wire::ed25519::{self, Keypair};
use serde::{Deserialize, Serialize};

/// The payload type of an in-toto Statement.
pub const PAYLOAD_TYPE_IN_TOTO: &str = "application/vnd.in-toto+json";
/// Largest envelope accepted (JSON text).
pub const MAX_ENVELOPE_BYTES: usize = 4 << 20;
/// Most signatures one envelope may carry.
pub const MAX_SIGNATURES: usize = 16;
/// Longest key id accepted.
pub const MAX_KEYID: usize = 256;

/// The pre-authentication encoding of a payload type and body.
pub fn pae(payload_type: &str, body: &[u8]) -> Vec<u8> {
    let t = payload_type.as_bytes();
    let mut out = Vec::with_capacity(t.len() + body.len() + 32);
    out.extend_from_slice(b"DSSEv1 ");
    out.extend_from_slice(t.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(t);
    out.push(b' ');
    out.extend_from_slice(body.len().to_string().as_bytes());
    out.push(b' ');
    out.extend_from_slice(body);
    out
}

/// One signature of an envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Signature {
    /// Key id (this toolkit always sets it: hex SHA-256 of the raw public key).
    #[serde(default)]
    pub keyid: String,
    /// Base64 of the 64-byte Ed25519 signature over the PAE.
    pub sig: String,
}

/// The DSSE JSON envelope, members in the order the specification lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Envelope {
    /// Base64 of the serialized body.
    pub payload: String,
    /// How to interpret the payload.
    #[serde(rename = "payloadType")]
    pub payload_type: String,
    /// Signatures over the PAE.
    pub signatures: Vec<Signature>,
}

/// Decodes base64, standard or URL-safe, padded or not (strict: no
/// whitespace, canonical trailing bits).
pub fn decode_b64(s: &str) -> Result<Vec<u8>> {
    use data_encoding::{BASE64, BASE64_NOPAD, BASE64URL, BASE64URL_NOPAD};
    for enc in [&BASE64, &BASE64URL, &BASE64_NOPAD, &BASE64URL_NOPAD] {
        if let Ok(v) = enc.decode(s.as_bytes()) {
            return Ok(v);
        }
    }
    Err(Error::new(Code::AttestationInvalid, "not valid base64"))
}

/// Standard, padded base64.
pub fn encode_b64(b: &[u8]) -> String {
    data_encoding::BASE64.encode(b)
}

impl Envelope {
    /// Signs `body` as `payload_type` with one Ed25519 key.
    pub fn sign(payload_type: &str, body: &[u8], key: &Keypair, keyid: &str) -> Envelope {
        let sig = key.sign(&pae(payload_type, body));
        Envelope {
            payload: encode_b64(body),
            payload_type: payload_type.to_owned(),
            signatures: vec![Signature {
                keyid: keyid.to_owned(),
                sig: encode_b64(&sig),
            }],
        }
    }

    /// Parses one envelope strictly (unknown members, oversized input and
    /// more than [`MAX_SIGNATURES`] signatures are refused).
    pub fn parse(bytes: &[u8]) -> Result<Envelope> {
        if bytes.len() > MAX_ENVELOPE_BYTES {
            return Err(Error::new(
                Code::TooLarge,
                format!("an envelope is over {MAX_ENVELOPE_BYTES} bytes"),
            ));
        }
        let e: Envelope = serde_json::from_slice(bytes).map_err(|e| {
            Error::new(
                Code::AttestationInvalid,
                format!("not a DSSE envelope: {e}"),
            )
        })?;
        if e.signatures.is_empty() || e.signatures.len() > MAX_SIGNATURES {
            return Err(Error::new(
                Code::AttestationInvalid,
                format!("an envelope carries 1..={MAX_SIGNATURES} signatures"),
            ));
        }
        if e.signatures.iter().any(|s| s.keyid.len() > MAX_KEYID) {
            return Err(Error::new(Code::AttestationInvalid, "a key id is too long"));
        }
        Ok(e)
    }

    /// The compact JSON line of this envelope.
    pub fn to_line(&self) -> Result<String> {
        serde_json::to_string(self)
            .map_err(|e| Error::internal(format!("cannot serialise an envelope: {e}")))
    }

    /// Verifies the envelope under one trusted key and returns the payload.
    ///
    /// Order: the payload type must be `expected_type`
    /// (`attestation_payload_type_unsupported`); a signature must name
    /// `keyid` (`attestation_key_mismatch`: signed by another key); the
    /// payload and that signature must decode (`attestation_invalid`) and the
    /// signature must verify strictly over the PAE (`signature_invalid`).
    pub fn verify(
        &self,
        expected_type: &str,
        public_key: &[u8; 32],
        keyid: &str,
    ) -> Result<Vec<u8>> {
        if self.payload_type != expected_type {
            return Err(Error::new(
                Code::AttestationPayloadTypeUnsupported,
                format!(
                    "payload type {:?} is not supported (expected {expected_type})",
                    self.payload_type.chars().take(100).collect::<String>()
                ),
            )
            .with(
                "payload_type",
                self.payload_type.chars().take(100).collect::<String>(),
            ));
        }
        let Some(s) = self.signatures.iter().find(|s| s.keyid == keyid) else {
            return Err(Error::new(
                Code::AttestationKeyMismatch,
                "no signature of the envelope is by the given key",
            )
            .with("key_id", keyid)
            .with(
                "signed_by",
                self.signatures
                    .iter()
                    .map(|s| s.keyid.chars().take(100).collect::<String>())
                    .collect::<Vec<_>>(),
            ));
        };
        let body = decode_b64(&self.payload)
            .map_err(|_| Error::new(Code::AttestationInvalid, "the payload is not valid base64"))?;
        let sig = decode_b64(&s.sig).map_err(|_| {
            Error::new(
                Code::AttestationInvalid,
                "the signature is not valid base64",
            )
        })?;
        let sig: [u8; 64] = sig
            .try_into()
            .map_err(|_| Error::new(Code::SignatureInvalid, "an Ed25519 signature is 64 bytes"))?;
        ed25519::verify_strict(public_key, &pae(&self.payload_type, &body), &sig).map_err(|e| {
            Error::new(
                Code::SignatureInvalid,
                format!("the envelope's signature does not verify: {}", e.message()),
            )
            .with("key_id", keyid)
        })?;
        Ok(body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_matches_the_protocol_example() {
        assert_eq!(
            pae("http://example.com/HelloWorld", b"hello world"),
            b"DSSEv1 29 http://example.com/HelloWorld 11 hello world".to_vec()
        );
        // Lengths are bytes, not characters; empty parts stay explicit.
        assert_eq!(pae("é", b""), "DSSEv1 2 é 0 ".as_bytes().to_vec());
    }

    #[test]
    fn sign_verify_and_every_refusal() {
        let k = Keypair::from_seed(&[3u8; 32]);
        let pk = k.public_key();
        let e = Envelope::sign(PAYLOAD_TYPE_IN_TOTO, b"{}", &k, "kid");
        assert_eq!(
            e.verify(PAYLOAD_TYPE_IN_TOTO, &pk, "kid").expect("ok"),
            b"{}"
        );
        let line = e.to_line().expect("line");
        assert_eq!(Envelope::parse(line.as_bytes()).expect("parse"), e);
        let code = |r: Result<Vec<u8>>| r.err().map(|e| e.code());
        assert_eq!(
            code(e.verify("application/json", &pk, "kid")),
            Some(Code::AttestationPayloadTypeUnsupported)
        );
        assert_eq!(
            code(e.verify(PAYLOAD_TYPE_IN_TOTO, &pk, "other")),
            Some(Code::AttestationKeyMismatch)
        );
        let other = Keypair::from_seed(&[4u8; 32]).public_key();
        assert_eq!(
            code(e.verify(PAYLOAD_TYPE_IN_TOTO, &other, "kid")),
            Some(Code::SignatureInvalid)
        );
        let mut t = e.clone();
        t.payload = encode_b64(b"{ }");
        assert_eq!(
            code(t.verify(PAYLOAD_TYPE_IN_TOTO, &pk, "kid")),
            Some(Code::SignatureInvalid)
        );
        let mut t = e.clone();
        t.payload_type = "application/vnd.in-toto+jsoN".into();
        assert_eq!(
            code(t.verify(PAYLOAD_TYPE_IN_TOTO, &pk, "kid")),
            Some(Code::AttestationPayloadTypeUnsupported)
        );
        // URL-safe base64 of the same bytes is accepted.
        let mut t = e.clone();
        let sig = decode_b64(&e.signatures[0].sig).expect("sig");
        t.signatures[0].sig = data_encoding::BASE64URL_NOPAD.encode(&sig);
        assert!(t.verify(PAYLOAD_TYPE_IN_TOTO, &pk, "kid").is_ok());
        // Unknown members, no signature, garbage.
        assert!(
            Envelope::parse(br#"{"payload":"","payloadType":"x","signatures":[{"sig":""}],"x":1}"#)
                .is_err()
        );
        assert!(Envelope::parse(br#"{"payload":"","payloadType":"x","signatures":[]}"#).is_err());
        assert!(Envelope::parse(b"[]").is_err());
    }
}
