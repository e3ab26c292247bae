//! Transfer envelopes and their verifier. Mode 0: raw bytes. Otherwise the
//! valid sealed fixture with one edit: `open` then `verify_signature`
//! against the signing key; only the untouched envelope may verify.
#![no_main]
use agent_task::collector::transfer::{open, verify_signature};
use agent_task_fuzz::{key, patch, valid_transfer};
use libfuzzer_sys::fuzz_target;

fn verifies(bytes: &[u8]) -> bool {
    match open(bytes) {
        Ok(env) => verify_signature(bytes, &env, &key().public_key()).is_ok(),
        Err(_) => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 4 == 0 {
        verifies(rest);
    } else {
        let bytes = patch(valid_transfer(), rest);
        if verifies(&bytes) {
            assert_eq!(bytes, valid_transfer(), "an edited transfer verified");
        }
    }
});
