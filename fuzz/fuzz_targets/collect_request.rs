//! Collect requests as the data route decodes them, validated and prepared
//! by the node (collection, collector input, common fields, media types,
//! dates, the file collector's root checks) without writing. The `http`
//! collector is skipped: it would reach the network.
#![no_main]
use agent_task::data::CollectRequest;
use agent_task_fuzz::{data_body, node};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let n = node();
    let Some(body) = data_body(data) else {
        return;
    };
    if body.get("collector_id").and_then(|v| v.as_str()) == Some("http") {
        return;
    }
    let _ = n.prepare_collect(&CollectRequest::from_json(&body));
});
