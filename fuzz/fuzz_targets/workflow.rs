//! Workflow files: parse (strict JSON, then every rule), and the installed
//! canonical bytes of an accepted file parse back to the same workflow.
#![no_main]
use agent_task::contract::workflow::Workflow;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(w) = Workflow::parse(data) {
        let bytes = w.canonical_bytes().expect("canonical bytes");
        let back = Workflow::parse(&bytes).expect("installed bytes parse");
        assert_eq!(back, w);
    }
});
