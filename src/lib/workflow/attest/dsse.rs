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

    // ---- fixtures/dsse/vectors.json: DSSE vectors under RFC 8032 §7.1 keys ----

    const RFC8032_TEST1_SEED: &str =
        "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const RFC8032_TEST1_PUBLIC: &str =
        "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
    const RFC8032_TEST1_SIG_EMPTY: &str = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065\
        224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
    const RFC8032_TEST2_SEED: &str =
        "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb";

    fn seed(hex: &str) -> [u8; 32] {
        let v = data_encoding::HEXLOWER.decode(hex.as_bytes()).expect("hex");
        v.try_into().expect("32 bytes")
    }

    fn env_json(e: &Envelope) -> serde_json::Value {
        serde_json::to_value(e).expect("json")
    }

    /// Builds every case from the two RFC keys (deterministic Ed25519).
    fn generate() -> serde_json::Value {
        use serde_json::json;
        let k1 = Keypair::from_seed(&seed(RFC8032_TEST1_SEED));
        let k2 = Keypair::from_seed(&seed(RFC8032_TEST2_SEED));
        let (pk1, pk2) = (k1.public_key(), k2.public_key());
        let (kid1, kid2) = (
            super::super::key::key_id(&pk1),
            super::super::key::key_id(&pk2),
        );
        let hex = |b: &[u8]| data_encoding::HEXLOWER.encode(b);
        let statement = br#"{"_type":"https://in-toto.io/Statement/v1","subject":[{"name":"revision","digest":{"agentTaskRevisionV1":"6136942f7f9eaa4f1ee4e254a38a9172eb5e12fae477d3fd858441a92ad0dba2"}}],"predicateType":"https://in-toto.io/attestation/svr/v0.2","predicate":{"verifier":{"id":"urn:agent-task:verifier:qualification:v1","policies":[]},"timeCreated":"2026-01-01T00:00:00.000Z","properties":["AGENT_TASK_QUALIFIED"]}}"#;
        let mut cases = Vec::new();
        let mut accept = |name: &str, note: &str, t: &str, body: &[u8]| {
            let e = Envelope::sign(t, body, &k1, &kid1);
            cases.push(json!({
                "name": name, "note": note, "expect": "accept",
                "payload_type": t, "payload_hex": hex(body), "pae_hex": hex(&pae(t, body)),
                "envelope": env_json(&e),
            }));
            e
        };
        accept(
            "hello-world",
            "the DSSE protocol's example type and body: PAE = DSSEv1 29 http://example.com/HelloWorld 11 hello world",
            "http://example.com/HelloWorld",
            b"hello world",
        );
        let st = accept(
            "in-toto-statement",
            "an in-toto Statement v1 with the in-toto payload type",
            PAYLOAD_TYPE_IN_TOTO,
            statement,
        );
        accept("empty-body", "LEN(body) = 0", PAYLOAD_TYPE_IN_TOTO, b"");
        accept(
            "multibyte-type",
            "LEN counts bytes: a 2-byte character in the type",
            "application/vnd.exämple+json",
            b"{}",
        );
        let mut url = st.clone();
        url.payload = data_encoding::BASE64URL.encode(statement);
        url.signatures[0].sig =
            data_encoding::BASE64URL.encode(&decode_b64(&st.signatures[0].sig).expect("sig"));
        let mut reject = |name: &str, note: &str, code: Code, e: &Envelope, key: &str| {
            cases.push(json!({
                "name": name, "note": note, "expect": "reject", "code": code.as_str(),
                "verify_with": key, "payload_type": PAYLOAD_TYPE_IN_TOTO, "envelope": env_json(e),
            }));
        };
        let mut body = statement.to_vec();
        body[20] ^= 0x01;
        let mut t = st.clone();
        t.payload = encode_b64(&body);
        reject(
            "payload-byte-flipped",
            "one bit of one payload byte flipped after signing",
            Code::SignatureInvalid,
            &t,
            "test1",
        );
        let mut sig = decode_b64(&st.signatures[0].sig).expect("sig");
        sig[5] ^= 0x80;
        let mut t = st.clone();
        t.signatures[0].sig = encode_b64(&sig);
        reject(
            "signature-byte-flipped",
            "one bit of the signature's R flipped",
            Code::SignatureInvalid,
            &t,
            "test1",
        );
        let mut sig = decode_b64(&st.signatures[0].sig).expect("sig");
        sig[40] ^= 0x01;
        let mut t = st.clone();
        t.signatures[0].sig = encode_b64(&sig);
        reject(
            "signature-s-flipped",
            "one bit of the signature's S flipped",
            Code::SignatureInvalid,
            &t,
            "test1",
        );
        let mut t = st.clone();
        t.payload_type = "application/json".into();
        reject(
            "payload-type-changed",
            "the payload type changed after signing (it is part of the PAE)",
            Code::AttestationPayloadTypeUnsupported,
            &t,
            "test1",
        );
        let t = Envelope::sign(PAYLOAD_TYPE_IN_TOTO, statement, &k2, &kid2);
        reject(
            "signed-by-test2",
            "signed by RFC 8032 test 2's key, verified with test 1's",
            Code::AttestationKeyMismatch,
            &t,
            "test1",
        );
        let t = Envelope::sign(PAYLOAD_TYPE_IN_TOTO, statement, &k2, &kid1);
        reject(
            "test2-under-test1-keyid",
            "signed by test 2's key but naming test 1's key id",
            Code::SignatureInvalid,
            &t,
            "test1",
        );
        let good_sig = decode_b64(&st.signatures[0].sig).expect("sig");
        let mut t = st.clone();
        t.signatures[0].sig = encode_b64(&good_sig[..63]);
        reject(
            "signature-truncated",
            "63 signature bytes",
            Code::SignatureInvalid,
            &t,
            "test1",
        );
        let mut t = st.clone();
        t.payload = encode_b64(b"{}");
        reject(
            "payload-replaced",
            "another payload under the original signature",
            Code::SignatureInvalid,
            &t,
            "test1",
        );
        cases.push(json!({
            "name": "url-safe-base64", "note": "payload and signature in URL-safe base64 (padded), which verifiers must accept",
            "expect": "accept", "payload_type": PAYLOAD_TYPE_IN_TOTO, "payload_hex": hex(statement),
            "pae_hex": hex(&pae(PAYLOAD_TYPE_IN_TOTO, statement)), "envelope": env_json(&url),
        }));
        let empty_sig = k1.sign(b"");
        json!({
            "description": "DSSE v1 vectors generated by agent-task (src/lib/attest/dsse.rs, UPDATE_FIXTURES=1 cargo test --lib dsse) from the RFC 8032 section 7.1 TEST 1 key; TEST 2's key signs the wrong-key cases. Ed25519 is deterministic, so the signatures are reproducible. key_id = lowercase hex SHA-256 of the raw public key. Checked by the unit test and by securesystemslib (tests/interop/attest/verify.py).",
            "keys": {
                "test1": {"seed": RFC8032_TEST1_SEED, "public_key": hex(&pk1), "key_id": kid1,
                          "public_key_pem": super::super::key::public_key_pem(&pk1).expect("pem"),
                          "rfc8032_empty_message_signature": hex(&empty_sig)},
                "test2": {"seed": RFC8032_TEST2_SEED, "public_key": hex(&pk2), "key_id": kid2},
            },
            "cases": cases,
        })
    }

    #[test]
    fn dsse_vectors_from_rfc8032_test_key_1() {
        let k1 = Keypair::from_seed(&seed(RFC8032_TEST1_SEED));
        let pk1 = k1.public_key();
        assert_eq!(data_encoding::HEXLOWER.encode(&pk1), RFC8032_TEST1_PUBLIC);
        let want_sig: String = RFC8032_TEST1_SIG_EMPTY.split_whitespace().collect();
        assert_eq!(
            data_encoding::HEXLOWER.encode(&k1.sign(b"")),
            want_sig,
            "RFC 8032 TEST 1"
        );
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/fixtures/dsse/vectors.json");
        let generated = generate();
        if crate::env::var_os("UPDATE_FIXTURES").is_some() {
            let mut text = serde_json::to_string_pretty(&generated).expect("json");
            text.push('\n');
            std::fs::write(path, text).expect("write fixtures/dsse/vectors.json");
        }
        let stored: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).expect("fixtures/dsse/vectors.json"))
                .expect("json");
        assert!(
            stored == generated,
            "fixtures/dsse/vectors.json is stale: UPDATE_FIXTURES=1 cargo test --lib dsse"
        );
        // Every case through the verifier.
        let key = |name: &str| {
            let pk = stored["keys"][name]["public_key"].as_str().expect("pk");
            let pk: [u8; 32] = data_encoding::HEXLOWER
                .decode(pk.as_bytes())
                .expect("hex")
                .try_into()
                .expect("32");
            (
                pk,
                stored["keys"][name]["key_id"]
                    .as_str()
                    .expect("kid")
                    .to_owned(),
            )
        };
        let cases = stored["cases"].as_array().expect("cases");
        assert!(cases.len() >= 12);
        for c in cases {
            let e: Envelope = serde_json::from_value(c["envelope"].clone()).expect("envelope");
            let t = c["payload_type"].as_str().expect("type");
            let (pk, kid) = key(c["verify_with"].as_str().unwrap_or("test1"));
            let r = e.verify(t, &pk, &kid);
            match c["expect"].as_str() {
                Some("accept") => {
                    let body = r.unwrap_or_else(|e| panic!("{}: {e}", c["name"]));
                    assert_eq!(
                        data_encoding::HEXLOWER.encode(&body),
                        c["payload_hex"],
                        "{}",
                        c["name"]
                    );
                    assert_eq!(
                        data_encoding::HEXLOWER.encode(&pae(t, &body)),
                        c["pae_hex"],
                        "{}",
                        c["name"]
                    );
                }
                _ => {
                    let err = r.expect_err(c["name"].as_str().expect("name"));
                    assert_eq!(err.code().as_str(), c["code"], "{}", c["name"]);
                }
            }
        }
    }
}
