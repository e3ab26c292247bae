//! Load generator for `scripts/bench-data.sh` (loopback only, bounded).
//!
//! ```text
//! data-load collect URL TOKEN_ENV CLIENTS RECORDS   -> durable collects/s over HTTP
//! data-load query   URL TOKEN_ENV BODY N [fresh]   -> query latency p50/p99 (ms); BODY is the
//!                                                     QueryRequest JSON; `fresh` opens a new
//!                                                     connection per request (else kept alive)
//! data-load jsonl   RECORDS [short|kb]             -> writes JSON lines to stdout
//! ```
//!
//! The corpora are `scripts/bench-corpus.rs` (shared with `ingest-probe`).
#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]
#![allow(clippy::disallowed_methods)] // a load driver: it reads its token variable itself

#[path = "bench-corpus.rs"]
#[allow(dead_code)]
mod corpus;

use std::io::Write;
use std::time::{Duration, Instant};

fn agent() -> ureq::Agent {
    agent_with(64)
}

fn agent_with(idle: usize) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .max_idle_connections(idle)
        .max_idle_connections_per_host(idle)
        .build()
        .into()
}

fn loopback(url: &str) -> bool {
    url.starts_with("http://127.")
        || url.starts_with("http://localhost")
        || url.starts_with("http://[::1]")
}

fn collect(url: &str, token: &str, clients: u64, records: u64) {
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let url = url.to_owned();
            let token = token.to_owned();
            std::thread::spawn(move || {
                let a = agent();
                let mut ok = 0u64;
                let mut i = c;
                while i < records {
                    let body = format!(
                        "{{\"collection_id\":\"default\",\"collector_id\":\"text\",\"input\":{{\"text\":\"http bench record {i}\"}}}}"
                    );
                    let r = a
                        .post(format!("{url}/v1/data/collect"))
                        .header("Authorization", format!("Bearer {token}"))
                        .header("Content-Type", "application/json")
                        .send(body.as_bytes());
                    if let Ok(mut r) = r {
                        let _ = r.body_mut().read_to_vec();
                        if r.status() == 200 {
                            ok += 1;
                        }
                    }
                    i += clients;
                }
                ok
            })
        })
        .collect();
    let ok: u64 = handles.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{{\"records\":{ok},\"seconds\":{secs:.3},\"records_per_s\":{:.1}}}",
        ok as f64 / secs
    );
}

fn query(url: &str, token: &str, body: &str, n: usize, fresh: bool) {
    // No idle connections kept: every request opens (and closes) its own.
    let a = if fresh { agent_with(0) } else { agent() };
    let mut lat = Vec::with_capacity(n);
    let mut hits = 0usize;
    let warmup = (n / 10).min(50);
    for k in 0..n + warmup {
        let t = Instant::now();
        let Ok(mut r) = a
            .post(format!("{url}/v1/data/query"))
            .header("Authorization", format!("Bearer {token}"))
            .header("Content-Type", "application/json")
            .send(body.as_bytes())
        else {
            eprintln!("query failed");
            std::process::exit(1);
        };
        let b = r.body_mut().read_to_vec().unwrap_or_default();
        let el = t.elapsed();
        if r.status() != 200 {
            eprintln!(
                "query status {}: {}",
                r.status(),
                String::from_utf8_lossy(&b)
            );
            std::process::exit(1);
        }
        if k >= warmup {
            lat.push(el.as_secs_f64() * 1000.0);
        }
        hits = b.windows(9).filter(|w| w == b"\"record\":").count();
    }
    lat.sort_by(|x, y| x.total_cmp(y));
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "{{\"hits\":{hits},\"n\":{n},\"p50_ms\":{:.3},\"p99_ms\":{:.3}}}",
        p(0.5),
        p(0.99)
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    match arg(1).as_str() {
        "jsonl" => {
            let n: u64 = arg(2).parse().unwrap_or(100_000).min(10_000_000);
            let Some(kind) = corpus::Kind::parse(args.get(3).map_or("short", String::as_str))
            else {
                eprintln!("usage: data-load jsonl RECORDS [short|kb]");
                std::process::exit(64);
            };
            let out = std::io::stdout();
            let mut out = std::io::BufWriter::new(out.lock());
            for i in 0..n {
                let _ = writeln!(out, "{}", corpus::input_line(kind, i));
            }
        }
        mode @ ("collect" | "query") => {
            let url = arg(2);
            if !loopback(&url) {
                eprintln!("loopback URLs only");
                std::process::exit(64);
            }
            let token = std::env::var(arg(3)).unwrap_or_default();
            if mode == "collect" {
                collect(
                    &url,
                    &token,
                    arg(4).parse().unwrap_or(8).clamp(1, 64),
                    arg(5).parse().unwrap_or(10_000).min(1_000_000),
                );
            } else {
                query(
                    &url,
                    &token,
                    &arg(4),
                    arg(5).parse().unwrap_or(2000).clamp(10, 100_000),
                    arg(6) == "fresh",
                );
            }
        }
        _ => {
            eprintln!("usage: data-load collect|query|jsonl …");
            std::process::exit(64);
        }
    }
}
