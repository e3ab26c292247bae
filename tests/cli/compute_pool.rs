//! `serve`'s two pools (`docs/http.md`, "Two pools"), through the real
//! binary over the workspace task route:
//!
//! - reads and mutations on a one-thread compute pool answer alike under
//!   concurrency (every concurrent read byte-identical to the same read
//!   sent alone, every heartbeat its own durable outcome);
//! - an operation that may wait (`change_open`) is handed from the compute
//!   pool to the blocking pool and answers, the compute thread free
//!   meanwhile;
//! - a slow request holding the only blocking thread (`--workers 1`: a
//!   collector upload whose body trickles in) does not delay a compute
//!   route behind it: a qualification answers while the upload is still
//!   unanswered.
//!
//! No timed assertions: every wait is bounded only to turn a hang into a
//! failure.

use crate::common::task_support::Setup;
use crate::common::workspace_http::{OPS, serve_with, token};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::Duration;

/// One request on a fresh connection: status and JSON body.
fn post(addr: &str, tok: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    write!(
        s,
        "POST {OPS} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).expect("answer");
    parse(&buf).expect("a whole HTTP answer")
}

fn parse(buf: &[u8]) -> Option<(u16, Value)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let status: u16 = head.split(' ').nth(1)?.parse().ok()?;
    Some((status, serde_json::from_slice(&buf[end + 4..]).ok()?))
}

#[test]
fn compute_pool_answers_alike_under_concurrency() {
    let s = Setup::new();
    let (task, _) = s.checkpoint();
    let tok = token(&s);
    let srv = serve_with(&s, &[], &["--compute-threads", "1", "--workers", "1"]);
    let a = srv.addr.as_str();
    let (st, won) = post(
        a,
        &tok,
        &json!({"operation": "claim", "task_id": task, "request_id": "pool-claim", "lease_ms": 600000}),
    );
    assert_eq!(st, 200, "{won}");
    let attempt = won["result"]["attempt"]["attempt_id"].clone();
    let fence = won["result"]["attempt"]["fence"].clone();
    let reads = [
        json!({"operation": "next", "change_id": s.change_id}),
        json!({"operation": "qualification", "change_id": s.change_id}),
        json!({"operation": "status", "task_id": task, "attempt_id": attempt}),
        json!({"operation": "instructions", "task_id": task}),
    ];
    // Each read alone first: the reference answers.
    let alone: Vec<(u16, Value)> = reads.iter().map(|b| post(a, &tok, b)).collect();
    for ((st, v), b) in alone.iter().zip(&reads) {
        assert_eq!(*st, 200, "{b}: {v}");
    }
    // Then 8 of each and 16 heartbeats at once on the one compute thread.
    let mut calls: Vec<Value> = Vec::new();
    for _ in 0..8 {
        calls.extend(reads.iter().cloned());
    }
    for k in 0..16 {
        calls.push(
            json!({"operation": "heartbeat", "attempt_id": attempt, "fence": fence,
            "request_id": format!("pool-hb-{k}"), "lease_ms": 600000}),
        );
    }
    let barrier = Arc::new(Barrier::new(calls.len()));
    let hs: Vec<_> = calls
        .iter()
        .map(|body| {
            let (barrier, body, a, tok) =
                (barrier.clone(), body.clone(), a.to_owned(), tok.clone());
            std::thread::spawn(move || {
                barrier.wait();
                post(&a, &tok, &body)
            })
        })
        .collect();
    let answers: Vec<(u16, Value)> = hs.into_iter().map(|h| h.join().expect("caller")).collect();
    let status_of = |v: &Value| v["result"]["attempt"]["state"].clone();
    for (i, (body, (st, v))) in calls.iter().zip(&answers).enumerate() {
        assert_eq!(*st, 200, "{body}: {v}");
        assert_eq!(v["operation"], body["operation"], "{v}");
        if i < 32 {
            let (_, want) = &alone[i % reads.len()];
            if body["operation"] == "status" {
                // A heartbeat in between moves the lease, not the state.
                assert_eq!(status_of(v), status_of(want), "{v}");
            } else {
                assert_eq!(v, want, "{body}: a concurrent read answers as one alone");
            }
        } else {
            assert!(v["result"]["lease_expires_at"].is_string(), "{v}");
        }
    }
    // Every heartbeat is retained: its retry returns the same outcome.
    for (body, (_, v)) in calls.iter().zip(&answers).skip(32) {
        assert_eq!(&post(a, &tok, body), &(200, v.clone()), "retry of {body}");
    }
}

#[test]
fn compute_pool_hands_a_waiting_operation_to_the_blocking_pool() {
    // `change_open` may wait (it is not in the compute table): from the
    // one compute thread it goes on to the blocking pool and answers, and a
    // retry with its request id returns the same Change.
    let s = Setup::new();
    let tok = token(&s);
    let srv = serve_with(&s, &[], &["--compute-threads", "1", "--workers", "1"]);
    let a = srv.addr.as_str();
    let open = json!({"operation": "change_open", "request_id": "pool-open"});
    let (st, v) = post(a, &tok, &open);
    assert_eq!(st, 200, "{v}");
    let id = v["result"]["change_id"]
        .as_str()
        .expect("change id")
        .to_owned();
    let (st, again) = post(a, &tok, &open);
    assert_eq!(
        (st, again["result"]["change_id"].as_str()),
        (200, Some(id.as_str()))
    );
    let (st, q) = post(
        a,
        &tok,
        &json!({"operation": "change_subject", "change_id": id}),
    );
    assert_eq!(st, 200, "{q}");
}

#[test]
fn a_slow_blocking_request_does_not_delay_a_compute_route() {
    // `--workers 1`: a collector upload whose body is past the read-ahead
    // window and still trickling holds the only blocking thread (its
    // handler reads the body there). A qualification goes to the compute
    // pool and answers while the upload is still unanswered; then the
    // upload's body ends and it gets its own typed refusal.
    let s = Setup::new();
    let tok = token(&s);
    let srv = serve_with(
        &s,
        &[],
        &[
            "--compute-threads",
            "1",
            "--workers",
            "1",
            "--body-timeout-ms",
            "120000",
        ],
    );
    let a = srv.addr.as_str();
    let total = 256 * 1024;
    let mut up = TcpStream::connect(a).expect("connect");
    write!(
        up,
        "POST {OPS}/collector-upload HTTP/1.1\r\nHost: {a}\r\nConnection: close\r\nAuthorization: Bearer {tok}\r\nContent-Type: application/octet-stream\r\nContent-Length: {total}\r\n\r\n"
    )
    .expect("head");
    let half = vec![b'x'; total / 2];
    up.write_all(&half).expect("half the body");
    // Let the server admit it and start its handler (if it has not yet, the
    // qualification below still goes first: the test cannot pass wrongly).
    std::thread::sleep(Duration::from_millis(300));
    let (st, v) = post(
        a,
        &tok,
        &json!({"operation": "qualification", "change_id": s.change_id}),
    );
    assert_eq!(st, 200, "{v}");
    // The upload has no answer yet: it still holds its thread.
    up.set_nonblocking(true).expect("nonblocking");
    let mut peek = [0u8; 1];
    match up.peek(&mut peek) {
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "{e}"),
        Ok(n) => panic!("the upload was answered ({n} bytes) before its body ended"),
    }
    up.set_nonblocking(false).expect("blocking");
    up.write_all(&half).expect("the rest");
    up.set_read_timeout(Some(Duration::from_secs(120)))
        .expect("timeout");
    let mut buf = Vec::new();
    up.read_to_end(&mut buf).expect("answer");
    let (st, v) = parse(&buf).expect("a whole answer");
    assert!((400..500).contains(&st), "{st} {v}");
    assert!(v["error"].is_string(), "{v}");
}
