//! The HTTP request gate and router on raw request bytes: the gate's head
//! rules (`http::gate::check_head`: httparse, the Content-Length /
//! Transfer-Encoding / Host rules, the byte and line bounds), then the
//! router's two phases (guards, routes, methods, the authorize step, body
//! specs, percent-decoding, query parameters) and the handlers, with the
//! body the head declares. Every answer is a status in 200-599 with a JSON
//! body; every refusal of the gate is a 4xx.
//!
//! Mode byte: even = as sent (unauthenticated, the hostile surface);
//! odd = with the node bearer added, except to the routes that write.
#![no_main]
use agent_task::http::gate::{HeadLimits, check_head};
use agent_task::http::router::{Method, Request};
use agent_task_fuzz::{TOKEN, router};
use libfuzzer_sys::fuzz_target;
use std::time::Duration;

fn limits() -> HeadLimits {
    HeadLimits {
        max_header_bytes: 8192,
        max_headers: 32,
        head_timeout: Duration::from_secs(10),
        first_byte_timeout: Duration::from_secs(5),
        min_head_rate: 512,
        idle_timeout: Duration::from_secs(10),
        send_timeout: Duration::from_secs(10),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((mode, buf)) = data.split_first() else {
        return;
    };
    let (end, framing) = match check_head(buf, &limits()) {
        None => return,
        Some(Err(e)) => {
            let s = e.code().http_status();
            assert!((400..500).contains(&s), "gate refusal {s}: {e}");
            return;
        }
        Some(Ok(x)) => x,
    };
    // What the gate accepted, hyper parses: the same parser, the same types.
    let lead = buf
        .iter()
        .take_while(|b| **b == b'\r' || **b == b'\n')
        .count();
    let mut hs = vec![httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut hs);
    let parsed = req.parse(&buf[lead..end]);
    assert!(
        matches!(parsed, Ok(httparse::Status::Complete(_))),
        "the gate let through a head httparse refuses"
    );
    let uri: http::Uri = req
        .path
        .unwrap_or("")
        .parse()
        .expect("gate checked the URI");
    let method = match req.method.unwrap_or("") {
        "GET" => Method::Get,
        "POST" => Method::Post,
        _ => Method::Other,
    };
    let path = uri.path().to_owned();
    let writes = path.ends_with("/tombstone") || path == "/v1/data/collect";
    let mut headers: Vec<(String, String)> = req
        .headers
        .iter()
        .map(|h| {
            (
                h.name.to_owned(),
                String::from_utf8_lossy(h.value).into_owned(),
            )
        })
        .collect();
    if mode % 2 == 1 && !writes {
        headers.retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
        headers.push(("Authorization".into(), format!("Bearer {TOKEN}")));
    }
    let body_bytes = &buf[end..];
    let body_len = match framing {
        Some(n) => usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(body_bytes.len()),
        None => body_bytes.len(),
    };
    let mut body: &[u8] = &body_bytes[..body_len];
    let mut rq = Request {
        method,
        path,
        query: uri.query().map(str::to_owned),
        headers,
        origin: "http://127.0.0.1:7742".into(),
        content_length: framing.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
        body: &mut body,
        params: Vec::new(),
    };
    let resp = router().dispatch(&mut rq);
    assert!((200..600).contains(&resp.status), "status {}", resp.status);
    if resp.status != 202 {
        assert!(resp.content_type.starts_with("application/json"));
        let v: serde_json::Value =
            serde_json::from_slice(&resp.body).expect("every answer is JSON");
        if resp.status >= 400 && v.get("jsonrpc").is_none() {
            assert!(v["error"].is_string(), "{v}");
            assert!(v["message"].is_string(), "{v}");
        }
    }
});
