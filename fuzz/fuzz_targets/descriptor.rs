//! Collector descriptors: strict decode, then the derived execution
//! request and digests (what `collect` computes before anything runs).
#![no_main]
use agent_task::collector::transfer::{CollectorDescriptor, ExecutionRequest, descriptor_digest};
use agent_task::wire::json::{Limits, from_slice};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(d) = from_slice::<CollectorDescriptor>(data, Limits::bytes(64 * 1024)) {
        let _ = descriptor_digest(&d);
        let r = ExecutionRequest::from_descriptor(&d);
        if let Ok(b) = r.bytes() {
            let back: ExecutionRequest = serde_json::from_slice(&b).expect("request bytes");
            assert_eq!(back, r);
        }
    }
});
