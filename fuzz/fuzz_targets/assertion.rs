//! Assertions and the observation verifier. Mode 0: raw bytes through the
//! strict decoder, validation, signing bytes and verification. Mode 1: the
//! signed fixture assertion with a fuzzed signature (reaches strict
//! Ed25519 on arbitrary signatures). Mode 2: the signed assertion's JSON
//! patched, then decoded and verified: only the untouched bytes verify.
#![no_main]
use agent_task::contract::TaskResultAssertion;
use agent_task::contract::observation;
use agent_task::wire::json::{Limits, from_slice};
use agent_task_fuzz::{key, patch, signed_assertion};
use libfuzzer_sys::fuzz_target;

fn check(bytes: &[u8]) -> bool {
    let Ok(a) = from_slice::<TaskResultAssertion>(bytes, Limits::bytes(1 << 20)) else {
        return false;
    };
    let _ = a.validate();
    let _ = observation::signing_bytes(&a);
    observation::verify(&a, &key().public_key()).is_ok()
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            check(rest);
        }
        1 => {
            let mut a = signed_assertion().clone();
            let sig = String::from_utf8_lossy(rest).into_owned();
            let same = signed_assertion()
                .executor_provenance
                .as_ref()
                .is_some_and(|p| p.signature == sig);
            if let Some(p) = a.executor_provenance.as_mut() {
                p.signature = sig;
            }
            let ok = observation::verify(&a, &key().public_key()).is_ok();
            assert_eq!(
                ok, same,
                "a changed signature verified (or the original did not)"
            );
        }
        _ => {
            let base = serde_json::to_vec(signed_assertion()).expect("json");
            let bytes = patch(&base, rest);
            let ok = check(&bytes);
            if ok {
                let a: TaskResultAssertion = serde_json::from_slice(&bytes).expect("decoded");
                assert_eq!(&a, signed_assertion(), "a changed assertion verified");
            }
        }
    }
});
