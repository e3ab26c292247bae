//! Every case of the shared ADDS 0.1 vector file
//! (`fixtures/sync/adds-0.1-vectors.json`, a copy of
//! spec/vectors/adds-0.1-vectors.json), data-driven.

use super::adds::bundle::{self, Bundle};
use super::adds::cid::cid_of;
use super::adds::encoding::{b64u, b64u_fixed};
use super::adds::grant::{self, GrantParams, Recipient};
use super::adds::jcs::{canonical, domain_message, strict_parse};
use super::adds::object::{self, SealParams};
use super::adds::{Class, grant::validate_grant};
use crate::wire::ed25519::Keypair;
use serde_json::Value;
use sha2::{Digest, Sha256};

fn doc() -> Value {
    serde_json::from_str(include_str!("../../../fixtures/sync/adds-0.1-vectors.json"))
        .expect("vector file")
}

fn hex(s: &Value) -> Vec<u8> {
    data_encoding::HEXLOWER
        .decode(s.as_str().expect("hex string").as_bytes())
        .expect("hex")
}

fn h32(s: &Value) -> [u8; 32] {
    hex(s).try_into().expect("32 bytes")
}

fn sha(b: &[u8]) -> String {
    data_encoding::HEXLOWER.encode(&Sha256::digest(b))
}

fn s(v: &Value) -> &str {
    v.as_str().expect("string")
}

#[test]
fn header_is_the_pinned_file() {
    let d = doc();
    assert_eq!(d["vector_version"], "adds-0.1-vectors/1");
    assert_eq!(d["protocol_version"], "0.1");
}

#[test]
fn jcs_vectors() {
    let d = doc();
    let cases = d["jcs_vectors"].as_array().expect("cases");
    assert_eq!(cases.len(), 3);
    for c in cases {
        let out = canonical(&c["value"]).expect("canonical");
        assert_eq!(
            std::str::from_utf8(&out).expect("utf8"),
            s(&c["canonical_json"]),
            "{}",
            c["name"]
        );
        assert_eq!(sha(&out), s(&c["canonical_sha256_hex"]), "{}", c["name"]);
        assert_eq!(strict_parse(&out).expect("strict"), c["value"]);
    }
}

#[test]
fn strict_rejection_vectors() {
    let d = doc();
    let cases = d["strict_rejection_vectors"].as_array().expect("cases");
    assert_eq!(cases.len(), 7);
    for c in cases {
        let name = s(&c["name"]);
        let input = s(&c["input"]);
        match name {
            "negative-zero" => assert!(canonical(&serde_json::json!(-0.0)).is_err()),
            "unsafe-integer" => {
                let v: Value = serde_json::from_str(input).expect("number");
                assert!(canonical(&v).is_err());
            }
            // Rust strings cannot hold a lone surrogate; the only way one
            // arrives is as a JSON escape, which the strict parser refuses.
            "lone-high-surrogate" => assert!(strict_parse(br#"["\ud800"]"#).is_err()),
            "duplicate-object-key" | "noncanonical-whitespace" | "noncanonical-number-spelling" => {
                assert!(strict_parse(input.as_bytes()).is_err(), "{name}");
            }
            "higher-layer-agent-data-message" => {
                let v: Value = serde_json::from_str(input).expect("json");
                assert_eq!(
                    object::validate_manifest(&v).expect_err("manifest").class,
                    Class::InvalidInput
                );
                assert_eq!(
                    validate_grant(&v).expect_err("grant").class,
                    Class::InvalidInput
                );
            }
            other => panic!("unknown strict rejection vector {other}"),
        }
    }
}

#[test]
fn cid_vectors() {
    let d = doc();
    for c in d["cid_vectors"].as_array().expect("cases") {
        let bytes = hex(&c["input_hex"]);
        assert_eq!(sha(&bytes), s(&c["sha256_hex"]));
        assert_eq!(cid_of(&bytes), s(&c["cid"]));
        assert!(super::adds::cid::is_cid(s(&c["cid"])));
    }
}

#[test]
fn canonical_vectors() {
    let d = doc();
    let cases = d["canonical_vectors"].as_array().expect("cases");
    assert_eq!(cases.len(), 2);
    for c in cases {
        let out = canonical(&c["unsigned_object"]).expect("canonical");
        assert_eq!(
            std::str::from_utf8(&out).expect("utf8"),
            s(&c["canonical_json"])
        );
        assert_eq!(sha(&out), s(&c["canonical_sha256_hex"]));
        let msg = domain_message(s(&c["signing_domain"]), &c["unsigned_object"]).expect("msg");
        assert_eq!(sha(&msg), s(&c["signing_input_sha256_hex"]));
    }
}

fn signature_case(d: &Value) -> &Value {
    &d["signature_vectors"][0]
}

#[test]
fn manifest_signature_vector() {
    let d = doc();
    let c = signature_case(&d);
    let key = Keypair::from_seed(&h32(&c["ed25519_private_key_hex"]));
    assert_eq!(key.public_key().to_vec(), hex(&c["ed25519_public_key_hex"]));
    assert_eq!(
        b64u(&key.public_key()),
        s(&c["ed25519_public_key_base64url"])
    );
    let unsigned = canonical(&c["unsigned_object"]).expect("canonical");
    assert_eq!(
        std::str::from_utf8(&unsigned).expect("utf8"),
        s(&c["canonical_json"])
    );
    assert_eq!(sha(&unsigned), s(&c["canonical_sha256_hex"]));
    let msg = domain_message(object::MANIFEST_DOMAIN, &c["unsigned_object"]).expect("msg");
    assert_eq!(msg, hex(&c["signing_input_hex"]));
    assert_eq!(sha(&msg), s(&c["signing_input_sha256_hex"]));
    let sig = key.sign(&msg);
    assert_eq!(sig.to_vec(), hex(&c["signature_hex"]));
    assert_eq!(b64u(&sig), s(&c["signature_base64url"]));
    let signed = canonical(&c["signed_object"]).expect("signed");
    assert_eq!(
        std::str::from_utf8(&signed).expect("utf8"),
        s(&c["signed_canonical_json"])
    );
    assert_eq!(signed, hex(&c["signed_jcs_hex"]));
    assert_eq!(cid_of(&signed), s(&c["signed_object_cid"]));
    let m = object::validate_manifest(&c["signed_object"]).expect("valid manifest");
    assert_eq!(m.size, 20);
    assert_eq!(m.chunks.len(), 2);
}

fn seal_vector(d: &Value) -> (object::Sealed, Keypair) {
    let b = &d["block_encryption_vectors"][0];
    let sv = signature_case(d);
    let key = Keypair::from_seed(&h32(&sv["ed25519_private_key_hex"]));
    let mb = &b["manifest_binding"];
    let p = SealParams {
        object_id: s(&mb["object_id"]).into(),
        key_id: s(&mb["key_id"]).into(),
        aad_context: h32(&mb["aad_context_hex"]),
        chunk_size: mb["chunk_size"].as_u64().expect("n"),
        nonces: b["chunks"]
            .as_array()
            .expect("chunks")
            .iter()
            .map(|c| hex(&c["nonce_hex"]).try_into().expect("12"))
            .collect(),
        dek: h32(&b["dek_hex"]),
        created_at: sv["unsigned_object"]["created_at"].as_i64().expect("t"),
        media_type: Some(s(&sv["unsigned_object"]["media_type"]).into()),
        schema: None,
    };
    let sealed = object::seal(
        &hex(&b["plaintext_hex"]),
        &p,
        s(&sv["unsigned_object"]["publisher"]["id"]),
        &key,
    )
    .expect("seal");
    (sealed, key)
}

#[test]
fn block_encryption_vector() {
    let d = doc();
    let b = &d["block_encryption_vectors"][0];
    let mb = &b["manifest_binding"];
    assert_eq!(b64u(&h32(&mb["aad_context_hex"])), s(&mb["aad_context"]));
    let (sealed, _) = seal_vector(&d);
    for (i, c) in b["chunks"].as_array().expect("chunks").iter().enumerate() {
        let aad = object::block_aad(
            s(&mb["aad_context"]),
            mb["block_count"].as_u64().expect("n"),
            mb["chunk_size"].as_u64().expect("n"),
            i as u64,
            s(&mb["key_id"]),
            s(&mb["object_id"]),
            c["plaintext_size"].as_u64().expect("n"),
            mb["total_plaintext_size"].as_u64().expect("n"),
        )
        .expect("aad");
        assert_eq!(
            canonical(&c["aad_value"]).expect("aad json"),
            s(&c["aad_canonical_json"]).as_bytes()
        );
        assert_eq!(aad, hex(&c["block_aad_hex"]));
        assert_eq!(sha(&aad), s(&c["block_aad_sha256_hex"]));
        let (cid, frame) = &sealed.frames[i];
        assert_eq!(*frame, hex(&c["block_frame_hex"]));
        assert_eq!(
            frame.len() as u64,
            c["block_frame_size"].as_u64().expect("n")
        );
        assert_eq!(frame[12..], hex(&c["ciphertext_and_tag_hex"])[..]);
        assert_eq!(cid, s(&c["block_cid"]));
    }
    // The sealed manifest is the signed manifest vector, byte for byte.
    let sv = signature_case(&d);
    assert_eq!(sealed.manifest_bytes, hex(&sv["signed_jcs_hex"]));
    assert_eq!(sealed.root, s(&sv["signed_object_cid"]));
    // And it opens again.
    let bundle = Bundle {
        root: sealed.root.clone(),
        blocks: std::iter::once((sealed.root.clone(), sealed.manifest_bytes.clone()))
            .chain(sealed.frames.iter().cloned())
            .collect(),
    };
    let checked = bundle::validate(&bundle, 1 << 20).expect("bundle");
    let frames: Vec<&[u8]> = bundle.blocks[1..]
        .iter()
        .map(|(_, f)| f.as_slice())
        .collect();
    let dek = h32(&b["dek_hex"]);
    assert_eq!(
        object::open_frames(checked.manifest(), &frames, &dek).expect("open"),
        hex(&b["plaintext_hex"])
    );
    assert_eq!(
        checked.decrypt(&dek).expect("open"),
        hex(&b["plaintext_hex"])
    );
}

#[test]
fn grant_wrap_vector() {
    let d = doc();
    let g = &d["grant_wrap_vectors"][0];
    let audience_sk = h32(&g["audience_x25519_private_key_hex"]);
    let audience_pk = grant::x25519_public(&audience_sk);
    assert_eq!(
        audience_pk.to_vec(),
        hex(&g["audience_x25519_public_key_hex"])
    );
    assert_eq!(
        b64u(&audience_pk),
        s(&g["audience_x25519_public_key_base64url"])
    );
    assert_eq!(
        super::adds::encoding::x25519_key_id(&audience_pk),
        s(&g["audience_x25519_key_id"])
    );
    let eph_sk = h32(&g["ephemeral_x25519_private_key_hex"]);
    let eph_pk = grant::x25519_public(&eph_sk);
    assert_eq!(eph_pk.to_vec(), hex(&g["ephemeral_x25519_public_key_hex"]));
    assert_eq!(
        b64u(&eph_pk),
        s(&g["ephemeral_x25519_public_key_base64url"])
    );
    let shared = grant::shared_secret(&eph_sk, &audience_pk).expect("shared");
    assert_eq!(shared.to_vec(), hex(&g["x25519_shared_secret_hex"]));
    assert_eq!(
        grant::shared_secret(&audience_sk, &eph_pk).expect("shared"),
        shared
    );
    let header = canonical(&g["wrap_header"]).expect("header");
    assert_eq!(
        std::str::from_utf8(&header).expect("utf8"),
        s(&g["wrap_header_canonical_json"])
    );
    let ctx = domain_message(grant::WRAP_DOMAIN, &g["wrap_header"]).expect("ctx");
    assert_eq!(ctx, hex(&g["wrap_context_hex"]));
    assert_eq!(sha(&ctx), s(&g["wrap_context_sha256_hex"]));
    assert_eq!(s(&g["hkdf"]["salt_hex"]), sha(&ctx));
    assert_eq!(
        g["hkdf"]["info_utf8"].as_str().map(str::as_bytes),
        Some(grant::KEK_INFO)
    );
    let mut kek = [0u8; 32];
    hkdf::Hkdf::<Sha256>::new(Some(&Sha256::digest(&ctx)), &shared)
        .expand(grant::KEK_INFO, &mut kek)
        .expect("hkdf");
    assert_eq!(kek.to_vec(), hex(&g["hkdf"]["kek_hex"]));
    // Issue with the vector's ephemeral key and nonce: the exact signed grant.
    let sv = signature_case(&d);
    let signer = Keypair::from_seed(&h32(&sv["ed25519_private_key_hex"]));
    let sg = &g["signed_grant"];
    let p = GrantParams {
        grant_id: s(&sg["grant_id"]).into(),
        manifest_cid: s(&sg["manifest_cid"]).into(),
        issuer_id: s(&sg["issuer"]["id"]).into(),
        audience: Recipient::new(s(&sg["audience"]), &audience_pk),
        issued_at: sg["issued_at"].as_i64().expect("t"),
        expires_at: sg["expires_at"].as_i64().expect("t"),
        not_before: None,
        ephemeral_secret: eph_sk,
        nonce: hex(&g["wrap_nonce_hex"]).try_into().expect("12"),
    };
    assert_eq!(b64u(&p.nonce), s(&g["wrap_nonce_base64url"]));
    let issued = grant::issue(&h32(&g["dek_hex"]), &p, &signer).expect("issue");
    assert_eq!(issued, *sg);
    assert_eq!(issued["key_wrap"]["ciphertext"], g["wrapped_dek_base64url"]);
    assert_eq!(
        b64u_fixed::<48>(s(&g["wrapped_dek_base64url"]), "w")
            .expect("48")
            .to_vec(),
        hex(&g["wrapped_dek_hex"])
    );
    let mut unsigned = sg.clone();
    unsigned.as_object_mut().expect("o").remove("signature");
    assert_eq!(unsigned, g["unsigned_grant"]);
    let msg = domain_message(grant::GRANT_DOMAIN, &unsigned).expect("msg");
    assert_eq!(msg, hex(&g["grant_signing_input_hex"]));
    assert_eq!(signer.sign(&msg).to_vec(), hex(&g["grant_signature_hex"]));
    assert_eq!(sg["signature"]["value"], g["grant_signature_base64url"]);
    let jcs = canonical(sg).expect("jcs");
    assert_eq!(jcs, hex(&g["signed_grant_jcs_hex"]));
    assert_eq!(cid_of(&jcs), s(&g["signed_grant_cid"]));
    // The recipient validates, authorises and unwraps.
    let v = validate_grant(sg).expect("valid grant");
    grant::authorize(&v, s(&sg["manifest_cid"]), "did:example:bob", 1_783_728_000)
        .expect("authorized");
    let m = object::validate_manifest(&sv["signed_object"]).expect("manifest");
    grant::check_direct_issuer(&v, &m).expect("direct issuer");
    let dek = grant::unwrap(&v, "did:example:bob", &audience_sk).expect("unwrap");
    assert_eq!(dek.to_vec(), hex(&g["recipient_unwrap_expected_dek_hex"]));
    // Another reader id or key cannot unwrap.
    assert!(grant::unwrap(&v, "did:example:eve", &audience_sk).is_err());
    assert!(grant::unwrap(&v, "did:example:bob", &eph_sk).is_err());
}

fn tamper<'a>(d: &'a Value, name: &str) -> &'a Value {
    d["tamper_vectors"]
        .as_array()
        .expect("tampers")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("tamper vector {name}"))
}

#[test]
fn every_tamper_vector_is_covered() {
    let d = doc();
    let names: Vec<&str> = d["tamper_vectors"]
        .as_array()
        .expect("tampers")
        .iter()
        .map(|t| s(&t["name"]))
        .collect();
    assert_eq!(
        names,
        [
            "cid_byte_flip",
            "block_nonce_flip",
            "block_reorder",
            "manifest_size_change",
            "grant_audience_change",
            "recipient_regrant_omits_parent",
            "grant_expiry_boundary",
            "principal_signature_key_mismatch",
            "ed25519_zip215_non_rfc8032_encoding",
            "ed25519_small_order_r",
            "ed25519_mixed_order_r",
            "x25519_all_zero_shared_secret",
        ]
    );
}

fn signed_bundle(frames: Vec<(String, Vec<u8>)>, manifest: &Value) -> Bundle {
    let bytes = canonical(manifest).expect("manifest bytes");
    let root = cid_of(&bytes);
    Bundle {
        root: root.clone(),
        blocks: std::iter::once((root, bytes)).chain(frames).collect(),
    }
}

fn sealed_nonce(d: &Value) -> Vec<u8> {
    seal_vector(d).0.frames[0].1[..12].to_vec()
}

#[test]
fn tamper_cid_byte_flip() {
    let d = doc();
    let t = tamper(&d, "cid_byte_flip");
    let (sealed, _) = seal_vector(&d);
    let mut frame = sealed.frames[0].1.clone();
    let off = t["mutation"]["byte_offset"].as_u64().expect("n") as usize;
    frame[off] ^= hex(&t["mutation"]["xor_hex"])[0];
    assert_eq!(frame, hex(&t["mutation"]["mutated_block_frame_hex"]));
    assert_eq!(cid_of(&frame), s(&t["mutated_bytes_cid"]));
    assert_eq!(sealed.frames[0].0, s(&t["original_cid"]));
    let mut frames = sealed.frames.clone();
    frames[0].1 = frame;
    let b = signed_bundle(frames, &signature_case(&d)["signed_object"]);
    let e = bundle::validate(&b, 1 << 20).expect_err("refused");
    assert_eq!(e.class, Class::Integrity);
    assert!(e.message.contains("hash"), "{e}");
}

#[test]
fn tamper_block_nonce_flip() {
    let d = doc();
    let t = tamper(&d, "block_nonce_flip");
    let resigned = &t["mutation"]["resigned_object"];
    assert_eq!(resigned["chunks"][0]["nonce"], t["mutation"]["to"]);
    let bytes = canonical(resigned).expect("c");
    assert_eq!(cid_of(&bytes), s(&t["mutation"]["resigned_object_cid"]));
    assert_eq!(bytes, hex(&t["mutation"]["resigned_jcs_hex"]));
    assert_eq!(
        hex(&t["unchanged_block_frame_nonce_hex"])[..],
        sealed_nonce(&d)[..]
    );
    object::validate_manifest(resigned).expect("re-signed manifest is valid on its own");
    let (sealed, _) = seal_vector(&d);
    let b = signed_bundle(sealed.frames.clone(), resigned);
    let e = bundle::validate(&b, 1 << 20).expect_err("refused");
    assert_eq!(e.class, Class::Integrity);
    assert!(e.message.contains("nonce"), "{e}");
}

#[test]
fn tamper_block_reorder_and_size_change() {
    let d = doc();
    for (name, needle) in [
        ("block_reorder", "index"),
        ("manifest_size_change", "chunks"),
    ] {
        let t = tamper(&d, name);
        let resigned = &t["mutation"]["resigned_object"];
        let bytes = canonical(resigned).expect("c");
        assert_eq!(
            cid_of(&bytes),
            s(&t["mutation"]["resigned_object_cid"]),
            "{name}"
        );
        assert_eq!(bytes, hex(&t["mutation"]["resigned_jcs_hex"]), "{name}");
        let e = object::validate_manifest(resigned).expect_err(name);
        assert_eq!(e.class, Class::Integrity, "{name}");
        assert!(e.message.contains(needle), "{name}: {e}");
    }
}

#[test]
fn tamper_grant_audience_change() {
    let d = doc();
    let t = tamper(&d, "grant_audience_change");
    let mut g = d["grant_wrap_vectors"][0]["signed_grant"].clone();
    assert_eq!(g["audience"], t["mutation"]["from"]);
    g["audience"] = t["mutation"]["to"].clone();
    let e = validate_grant(&g).expect_err("refused");
    assert_eq!(e.class, Class::Integrity);
    assert!(e.message.contains("signature"), "{e}");
}

#[test]
fn tamper_recipient_regrant_omits_parent() {
    let d = doc();
    let t = tamper(&d, "recipient_regrant_omits_parent");
    let c = &t["construction"];
    let bob = Keypair::from_seed(&h32(&c["bob_ed25519_private_key_hex"]));
    assert_eq!(
        bob.public_key().to_vec(),
        hex(&c["bob_ed25519_public_key_hex"])
    );
    let charlie_sk = h32(&c["charlie_x25519_private_key_hex"]);
    let charlie_pk = grant::x25519_public(&charlie_sk);
    assert_eq!(
        charlie_pk.to_vec(),
        hex(&c["charlie_x25519_public_key_hex"])
    );
    let eph = h32(&c["regrant_ephemeral_x25519_private_key_hex"]);
    assert_eq!(
        grant::x25519_public(&eph).to_vec(),
        hex(&c["regrant_ephemeral_x25519_public_key_hex"])
    );
    assert_eq!(
        grant::shared_secret(&eph, &charlie_pk)
            .expect("shared")
            .to_vec(),
        hex(&c["x25519_shared_secret_hex"])
    );
    let so = &c["signed_object"];
    let dek = h32(&d["grant_wrap_vectors"][0]["dek_hex"]);
    let p = GrantParams {
        grant_id: s(&so["grant_id"]).into(),
        manifest_cid: s(&so["manifest_cid"]).into(),
        issuer_id: s(&so["issuer"]["id"]).into(),
        audience: Recipient::new(s(&so["audience"]), &charlie_pk),
        issued_at: so["issued_at"].as_i64().expect("t"),
        expires_at: so["expires_at"].as_i64().expect("t"),
        not_before: None,
        ephemeral_secret: eph,
        nonce: hex(&c["wrap_nonce_hex"]).try_into().expect("12"),
    };
    let issued = grant::issue(&dek, &p, &bob).expect("issue");
    assert_eq!(issued, *so);
    let mut header = so.as_object().expect("o").clone();
    header = grant::wrap_header(&header);
    assert_eq!(
        domain_message(grant::WRAP_DOMAIN, &Value::Object(header)).expect("ctx"),
        hex(&c["wrap_context_hex"])
    );
    let mut unsigned = so.clone();
    unsigned.as_object_mut().expect("o").remove("signature");
    let msg = domain_message(grant::GRANT_DOMAIN, &unsigned).expect("msg");
    assert_eq!(msg, hex(&c["signing_input_hex"]));
    assert_eq!(bob.sign(&msg).to_vec(), hex(&c["signature_hex"]));
    let jcs = canonical(so).expect("jcs");
    assert_eq!(jcs, hex(&c["signed_jcs_hex"]));
    assert_eq!(cid_of(&jcs), s(&c["signed_object_cid"]));
    assert_eq!(
        so["key_wrap"]["ciphertext"]
            .as_str()
            .map(|x| b64u_fixed::<48>(x, "w").expect("48").to_vec()),
        Some(hex(&c["wrapped_dek_hex"]))
    );
    assert_eq!(c["parent_grant_member_present"], false);
    assert_eq!(c["cryptographic_signature_valid"], true);
    assert_eq!(
        hex(&c["key_wrap_unwraps_to_dek_hex_if_policy_is_bypassed"]),
        dek.to_vec()
    );
    // Schema-valid and correctly signed on its own ...
    let v = validate_grant(so).expect("valid grant");
    assert_eq!(
        grant::unwrap(&v, "did:example:charlie", &charlie_sk).expect("unwrap"),
        dek
    );
    // ... but Bob is not the manifest's publisher: the direct-issuer rule refuses it.
    let m = object::validate_manifest(&signature_case(&d)["signed_object"]).expect("manifest");
    let e = grant::check_direct_issuer(&v, &m).expect_err("refused");
    assert_eq!(e.class, Class::Integrity);
}

#[test]
fn tamper_grant_expiry_boundary() {
    let d = doc();
    let t = tamper(&d, "grant_expiry_boundary");
    let sg = &d["grant_wrap_vectors"][0]["signed_grant"];
    let v = validate_grant(sg).expect("valid");
    assert_eq!(
        v.effective_not_before,
        t["effective_not_before"].as_i64().expect("t")
    );
    assert_eq!(v.expires_at, t["expires_at"].as_i64().expect("t"));
    let cases = t["authorization_cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 4);
    for c in cases {
        let now = c["now"].as_i64().expect("now");
        let got = grant::authorize(&v, s(&sg["manifest_cid"]), "did:example:bob", now);
        assert_eq!(
            got.is_ok(),
            c["expect_authorized"].as_bool().expect("b"),
            "now={now}: {got:?}"
        );
    }
}

#[test]
fn tamper_principal_signature_key_mismatch() {
    let d = doc();
    let t = tamper(&d, "principal_signature_key_mismatch");
    let mut m = signature_case(&d)["signed_object"].clone();
    m["signature"]["public_key"] = t["mutation"]["to"].clone();
    let e = object::validate_manifest(&m).expect_err("refused");
    assert_eq!(e.class, Class::Integrity);
    assert!(e.message.contains("publisher's key"), "{e}");
}

#[test]
fn tamper_strict_ed25519() {
    let d = doc();
    let msg = hex(&signature_case(&d)["signing_input_hex"]);
    for name in [
        "ed25519_zip215_non_rfc8032_encoding",
        "ed25519_small_order_r",
    ] {
        let t = tamper(&d, name);
        let sig: [u8; 64] = hex(&t["signature_hex"]).try_into().expect("64");
        assert_eq!(b64u(&sig), s(&t["signature_base64url"]));
        let e = object::verify(s(&t["public_key_base64url"]), &msg, &sig).expect_err(name);
        assert_eq!(e.class, Class::Integrity, "{name}");
    }
    let t = tamper(&d, "ed25519_mixed_order_r");
    let sig: [u8; 64] = hex(&t["signature_hex"]).try_into().expect("64");
    assert_eq!(
        sha(s(&t["message_utf8"]).as_bytes()),
        s(&t["message_sha256_hex"])
    );
    let e = object::verify(
        s(&t["public_key_base64url"]),
        s(&t["message_utf8"]).as_bytes(),
        &sig,
    )
    .expect_err("mixed-order R");
    assert!(e.message.contains("torsion"), "{e}");
    // A signature of the real key over the same input still verifies.
    let key = Keypair::from_seed(&h32(&signature_case(&d)["ed25519_private_key_hex"]));
    object::verify(&b64u(&key.public_key()), &msg, &key.sign(&msg)).expect("honest signature");
}

#[test]
fn tamper_x25519_all_zero_shared_secret() {
    let d = doc();
    let t = tamper(&d, "x25519_all_zero_shared_secret");
    let sk = h32(&t["recipient_x25519_private_key_hex"]);
    let e = grant::shared_secret(&sk, &h32(&t["low_order_ephemeral_public_key_hex"]))
        .expect_err("zero");
    assert_eq!(e.class, Class::Integrity);
    assert_eq!(hex(&t["mathematical_shared_secret_hex"]), vec![0u8; 32]);
}
