//! Query requests as the data route decodes them, run against a small node
//! (validation, the FTS5 expression and term cap, `where` matching, limits).
#![no_main]
use agent_task::data::QueryRequest;
use agent_task_fuzz::{data_body, node};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let n = node();
    if let Some(body) = data_body(data) {
        if let Ok(v) = n.query(&QueryRequest::from_json(&body)) {
            let recs = v["records"].as_array().expect("records");
            assert!(recs.len() <= 1000);
        }
    }
    // The text alone, as a query's `text`.
    if let Ok(text) = std::str::from_utf8(data) {
        let body = serde_json::json!({"text": text});
        let _ = n.query(&QueryRequest::from_json(body.as_object().expect("o")));
    }
});
