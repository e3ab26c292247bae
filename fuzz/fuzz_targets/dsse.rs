//! DSSE envelopes and in-toto statements as `verify` decodes them from a
//! git note anyone with push access can write: `dsse::Envelope::parse`
//! (strict shape), `Envelope::verify` (payload type, key id, strict
//! Ed25519 over the PAE) and `statement::parse` (Statement v1, a known
//! predicate, its strict shape), seeded from a real landed note.
//!
//! Mode byte (mode % 4):
//! - 0: raw bytes as one note line. Refusals are typed (never
//!   `internal`); an envelope that parses renders to a line that parses
//!   to the same envelope.
//! - 1: one edit of a landed statement signed by the fuzz key: an edited
//!   line that verifies carries exactly the signed payload, and still
//!   verifies after a round trip (render, parse).
//! - 2: raw bytes as a statement payload, signed by the fuzz key: the
//!   envelope verifies after a round trip to exactly those bytes; the
//!   statement parse is typed.
//! - 3: raw bytes as the statement alone.
#![no_main]
use agent_task::error::{Code, Result};
use agent_task::workflow::attest::dsse::{Envelope, PAYLOAD_TYPE_IN_TOTO};
use agent_task::workflow::attest::statement;
use agent_task_fuzz::note::{keyid, payloads, signed_lines};
use agent_task_fuzz::{key, patch};
use libfuzzer_sys::fuzz_target;

fn typed<T>(r: &Result<T>) {
    if let Err(e) = r {
        assert_ne!(e.code(), Code::Internal, "an untyped refusal: {e}");
    }
}

/// What `verify` does with one line; the payload when it verifies.
fn line(bytes: &[u8]) -> Option<Vec<u8>> {
    let env = Envelope::parse(bytes);
    typed(&env);
    let env = env.ok()?;
    let again = Envelope::parse(env.to_line().expect("render").as_bytes())
        .expect("a rendered envelope parses");
    assert_eq!(again, env, "an envelope changed in a round trip");
    let payload = env.verify(PAYLOAD_TYPE_IN_TOTO, &key().public_key(), keyid());
    typed(&payload);
    let payload = payload.ok()?;
    assert_eq!(
        again
            .verify(PAYLOAD_TYPE_IN_TOTO, &key().public_key(), keyid())
            .expect("verifies after a round trip"),
        payload
    );
    typed(&statement::parse(&payload));
    Some(payload)
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => {
            line(rest);
        }
        1 => {
            let Some((i, edit)) = rest.split_first() else {
                return;
            };
            let i = usize::from(*i) % signed_lines().len();
            let bytes = patch(signed_lines()[i].as_bytes(), edit);
            if let Some(p) = line(&bytes) {
                assert_eq!(
                    p,
                    payloads()[i],
                    "an edited envelope verified another payload"
                );
            }
        }
        2 => {
            let env = Envelope::sign(PAYLOAD_TYPE_IN_TOTO, rest, key(), keyid());
            let text = env.to_line().expect("render");
            let p = line(text.as_bytes()).expect("a signed envelope verifies");
            assert_eq!(p, rest);
        }
        _ => {
            let r = statement::parse(rest);
            typed(&r);
        }
    }
});
