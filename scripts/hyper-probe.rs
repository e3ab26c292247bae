//! What plain hyper (the version and builder settings `agent-task serve`
//! uses, without its gate) answers to malformed and ambiguous requests, on a
//! raw loopback socket. docs/http.md states which of these the gate takes
//! over and why. Not part of the test command:
//! `cargo run --example hyper-probe`.

#![allow(clippy::print_stdout, clippy::unwrap_used)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

fn main() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.set_nonblocking(true).expect("nonblocking");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::from_std(listener).expect("listener");
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(
                        |req: http::Request<hyper::body::Incoming>| async move {
                            let te = req.headers().contains_key(http::header::TRANSFER_ENCODING);
                            let cl = req
                                .headers()
                                .get_all(http::header::CONTENT_LENGTH)
                                .iter()
                                .count();
                            let body = req.into_body().collect().await.map(|b| b.to_bytes().len());
                            let text = format!(
                                "served: body {body:?}, te {te}, content-length headers {cl}"
                            );
                            Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                                Bytes::from(text),
                            )))
                        },
                    );
                    let mut b = hyper::server::conn::http1::Builder::new();
                    b.keep_alive(true)
                        .half_close(true)
                        .writev(false)
                        .max_buf_size(64 * 1024 + 8192)
                        .max_headers(100)
                        .header_read_timeout(None);
                    let _ = b
                        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
    });
    let post = |extra: &str, body: &str| {
        format!("POST / HTTP/1.1\r\nHost: x\r\n{extra}\r\n{body}").into_bytes()
    };
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "two differing Content-Length",
            post("Content-Length: 2\r\nContent-Length: 3\r\n", "{}x"),
        ),
        (
            "two equal Content-Length",
            post("Content-Length: 2\r\nContent-Length: 2\r\n", "{}"),
        ),
        ("Content-Length: +2", post("Content-Length: +2\r\n", "{}")),
        ("Content-Length: -1", post("Content-Length: -1\r\n", "{}")),
        ("Content-Length: 2,2", post("Content-Length: 2,2\r\n", "{}")),
        (
            "Content-Length + chunked",
            post(
                "Content-Length: 7\r\nTransfer-Encoding: chunked\r\n",
                "2\r\n{}\r\n0\r\n\r\n",
            ),
        ),
        (
            "Transfer-Encoding: gzip",
            post("Transfer-Encoding: gzip\r\n", ""),
        ),
        (
            "bad header name",
            b"GET / HTTP/1.1\r\nBad Name: x\r\n\r\n".to_vec(),
        ),
        ("malformed request line", b"GARBAGE\r\n\r\n".to_vec()),
        ("NUL in the target", b"GET /\x00 HTTP/1.1\r\n\r\n".to_vec()),
        ("101 header lines", {
            let mut h = b"GET / HTTP/1.1\r\n".to_vec();
            for i in 0..101 {
                h.extend_from_slice(format!("X-{i}: v\r\n").as_bytes());
            }
            h.extend_from_slice(b"\r\n");
            h
        }),
        (
            "an 80 KiB header",
            format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(80 * 1024)).into_bytes(),
        ),
        (
            "a partial head, then nothing (1 s)",
            b"GET / HTTP/1.1\r\nHost: x\r\n".to_vec(),
        ),
        (
            "a body cut short, then half-close",
            post("Content-Length: 10\r\n", "{}"),
        ),
    ];
    println!("plain hyper 1.x (server, http1) without the gate, raw loopback socket:");
    for (name, bytes) in cases {
        let mut s = TcpStream::connect(addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(1)))
            .expect("timeout");
        s.write_all(&bytes).expect("write");
        if name.contains("half-close") {
            s.shutdown(std::net::Shutdown::Write).expect("shutdown");
        }
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        let outcome = loop {
            match s.read(&mut buf) {
                Ok(0) => break "then closed",
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(_) => break "then no more bytes within 1 s",
            }
        };
        let text = String::from_utf8_lossy(&out);
        let status = text.lines().next().unwrap_or("(no answer)");
        let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        println!(
            "  {name:36} -> {status:42} body {:>3} bytes {body:?} {outcome}",
            body.len()
        );
    }
}
