//! MCP messages: the body of a `POST /mcp` decoded as the route decodes it
//! (`wire::json::from_slice`, the strict decoder, at the route's byte
//! limit), then `http::mcp_wire::classify` (JSON-RPC 2.0 with MCP's rules).
//! Checked: a request has `jsonrpc` "2.0", a string method and a string or
//! integer id; an accepted message is a notification (a method, no id) or
//! a response (an id, exactly one of `result`/`error`, no method); an
//! invalid one answers its own id only when that id is valid, else null;
//! and `params._meta` (MCP's reserved metadata, e.g. a progress token)
//! never changes what a message is.
#![no_main]
use agent_task::http::mcp_wire::{Kind, classify};
use agent_task::http::workspace::MAX_BODY;
use agent_task::wire::json::{Limits, from_slice};
use libfuzzer_sys::fuzz_target;
use serde_json::{Map, Value, json};

fn valid_id(v: Option<&Value>) -> bool {
    v.is_some_and(|v| v.is_string() || v.is_i64() || v.is_u64())
}

fn check(m: &Map<String, Value>) -> Kind {
    let k = classify(m);
    let v2 = m.get("jsonrpc").and_then(Value::as_str) == Some("2.0");
    match &k {
        Kind::Request => {
            assert!(v2);
            assert!(m.get("method").is_some_and(Value::is_string));
            assert!(valid_id(m.get("id")));
        }
        Kind::Accepted => {
            assert!(v2);
            let notification =
                m.get("method").is_some_and(Value::is_string) && !m.contains_key("id");
            let response = !m.contains_key("method")
                && m.contains_key("id")
                && (m.contains_key("result") != m.contains_key("error"));
            assert!(notification || response, "accepted {m:?}");
        }
        Kind::Invalid(id, why) => {
            assert!(!why.is_empty());
            if !id.is_null() {
                assert!(valid_id(Some(id)));
                assert_eq!(Some(id), m.get("id"));
            }
        }
    }
    k
}

fuzz_target!(|data: &[u8]| {
    let Ok(Value::Object(m)) = from_slice::<Value>(data, Limits::bytes(MAX_BODY as usize)) else {
        return;
    };
    let k = check(&m);
    // The same message with `_meta` set in its params (when they are an
    // object or absent) is the same kind of message.
    let mut with_meta = m.clone();
    match with_meta.get_mut("params") {
        None => {
            with_meta.insert("params".into(), json!({"_meta": {"progressToken": 1}}));
        }
        Some(Value::Object(p)) => {
            p.insert("_meta".into(), json!({"progressToken": "t"}));
        }
        Some(_) => return,
    }
    assert_eq!(check(&with_meta), k, "_meta changed the classification");
});
