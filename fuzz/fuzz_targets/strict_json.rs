//! The strict decoder against serde_json: whatever it accepts, serde_json
//! parses, and re-encoding that value is accepted again; a refusal is
//! typed, never a panic.
#![no_main]
use agent_task::wire::json::{Limits, Refusal, check, from_slice};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::bytes(1 << 20);
    match check(data, limits) {
        Ok(()) => {
            let v: Value =
                serde_json::from_slice(data).expect("strict accepted, serde_json refused");
            let again = serde_json::to_vec(&v).expect("encode");
            assert_eq!(check(&again, limits), Ok(()), "re-encoded value refused");
            let typed: Value = from_slice(data, limits).expect("typed decode");
            assert_eq!(typed, v);
        }
        Err(Refusal::Invalid(_)) => {
            // serde_json may accept what is refused only through depth or
            // duplicates, which are their own refusals: an `Invalid` is
            // also invalid for serde_json (or deeper than its own limit).
            if let Ok(v) = serde_json::from_slice::<Value>(data) {
                panic!("strict said invalid, serde_json parsed {v}");
            }
        }
        Err(Refusal::TooDeep { .. } | Refusal::DuplicateKey(_) | Refusal::TooLarge { .. }) => {}
    }
});
