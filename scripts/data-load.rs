//! Load generator for `scripts/bench-data.sh` (loopback only, bounded).
//!
//! ```text
//! data-load collect URL TOKEN_ENV CLIENTS RECORDS  -> durable collects/s over HTTP
//! data-load query   URL TOKEN_ENV BODY N [fresh]  -> query latency p50/p99 (ms); BODY is the
//!                                                    QueryRequest JSON; `fresh` opens a new
//!                                                    connection per request (else kept alive)
//! data-load jsonl   RECORDS [short|kb]            -> writes JSON lines to stdout
//! ```
//!
//! `collect` and `query` run on hyper's HTTP/1.1 client over one
//! current-thread tokio runtime (`scripts/load-conn.rs`): every collect
//! client a task with its own kept-alive connection. With `LOADGEN=threads`
//! they run the earlier generator instead, one OS thread per client with
//! ureq, kept so that one run can show what the instrument itself costs.
//! Both check every answer alike: a collect's must be a 200 collect result
//! of one record (`records`, `inserted` + `existing` = 1), a query's a 200
//! query result (`records` an array); any other answer is counted by its
//! `error` code (`http NNN: …` when it has none, `transport: …` when the
//! exchange failed). Both print their own CPU seconds (`load_cpu_s`).
//!
//! The corpora are `scripts/bench-corpus.rs` (shared with `ingest-probe`).
#![allow(clippy::print_stdout, clippy::print_stderr, missing_docs)]
#![allow(clippy::disallowed_methods)] // a load driver: it reads its token variable itself

#[path = "bench-corpus.rs"]
#[allow(dead_code)]
mod corpus;

#[path = "load-conn.rs"]
mod load_conn;

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// What a generator reads of a collect answer (nothing else is decoded).
#[derive(serde::Deserialize)]
struct CollectAnswer {
    records: Vec<serde::de::IgnoredAny>,
    inserted: u64,
    existing: u64,
}

/// What it reads of a query answer.
#[derive(serde::Deserialize)]
struct QueryAnswer {
    records: Vec<serde::de::IgnoredAny>,
}

/// A collect answer's verdict: Ok, or the error to count it under.
fn check_collect(status: u16, body: &[u8]) -> Result<(), String> {
    if status != 200 {
        return Err(load_conn::refusal_code(status, body));
    }
    match serde_json::from_slice::<CollectAnswer>(body) {
        Ok(a) if a.records.len() == 1 && a.inserted + a.existing == 1 => Ok(()),
        Ok(_) => Err("http 200: not one record's collect result".to_owned()),
        Err(_) => Err("http 200: not a collect result".to_owned()),
    }
}

/// A query answer's verdict: its hit count, or the error.
fn check_query(status: u16, body: &[u8]) -> Result<usize, String> {
    if status != 200 {
        return Err(load_conn::refusal_code(status, body));
    }
    serde_json::from_slice::<QueryAnswer>(body)
        .map(|a| a.records.len())
        .map_err(|_| "http 200: not a query result".to_owned())
}

fn collect_body(i: u64) -> Vec<u8> {
    format!(
        "{{\"collection_id\":\"default\",\"collector_id\":\"text\",\"input\":{{\"text\":\"http bench record {i}\"}}}}"
    )
    .into_bytes()
}

fn ureq_agent(idle: usize) -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .timeout_global(Some(Duration::from_secs(60)))
        .max_idle_connections(idle)
        .max_idle_connections_per_host(idle)
        .build()
        .into()
}

/// One POST with ureq: (status, body), or `transport: …`.
fn ureq_post(
    a: &ureq::Agent,
    url: &str,
    token: &str,
    body: &[u8],
) -> Result<(u16, Vec<u8>), String> {
    let mut r = a
        .post(url)
        .header("Authorization", format!("Bearer {token}"))
        .header("Content-Type", "application/json")
        .send(body)
        .map_err(|e| format!("transport: {e}"))?;
    let b = r
        .body_mut()
        .with_config()
        .limit(16 * 1024 * 1024)
        .read_to_vec()
        .map_err(|e| format!("transport: {e}"))?;
    Ok((r.status().as_u16(), b))
}

/// Successes and errors by code.
#[derive(Default)]
struct Tally {
    ok: u64,
    errors: BTreeMap<String, u64>,
}

impl Tally {
    fn count(&mut self, r: Result<(), String>) {
        match r {
            Ok(()) => self.ok += 1,
            Err(e) => *self.errors.entry(e).or_default() += 1,
        }
    }

    fn add(&mut self, t: Tally) {
        self.ok += t.ok;
        for (k, v) in t.errors {
            *self.errors.entry(k).or_default() += v;
        }
    }
}

/// Client `c` of `clients` sends records c, c + clients, … below `records`.
fn collect_threads(url: &str, token: &str, clients: u64, records: u64) -> Result<Tally, String> {
    let url = format!("{url}/v1/data/collect");
    let handles: Vec<_> = (0..clients)
        .map(|c| {
            let url = url.clone();
            let token = token.to_owned();
            std::thread::spawn(move || {
                let a = ureq_agent(1);
                let mut t = Tally::default();
                for i in (c..records).step_by(clients as usize) {
                    t.count(
                        ureq_post(&a, &url, &token, &collect_body(i))
                            .and_then(|(status, b)| check_collect(status, &b)),
                    );
                }
                t
            })
        })
        .collect();
    let mut all = Tally::default();
    for h in handles {
        all.add(
            h.join()
                .map_err(|_| "a client thread panicked".to_owned())?,
        );
    }
    Ok(all)
}

fn collect_hyper(url: &str, token: &str, clients: u64, records: u64) -> Result<Tally, String> {
    let target = load_conn::Target::parse(&format!("{url}/v1/data/collect"))?;
    runtime()?.block_on(async move {
        let mut conns = Vec::with_capacity(clients as usize);
        for _ in 0..clients {
            conns.push(load_conn::Conn::open(&target, token).await?);
        }
        let mut tasks = tokio::task::JoinSet::new();
        for (c, mut conn) in (0..clients).zip(conns) {
            tasks.spawn(async move {
                let mut t = Tally::default();
                for i in (c..records).step_by(clients as usize) {
                    t.count(match conn.post(collect_body(i)).await {
                        Ok((status, b)) => check_collect(status, &b),
                        Err(e) => Err(e),
                    });
                }
                t
            });
        }
        let mut all = Tally::default();
        while let Some(t) = tasks.join_next().await {
            all.add(t.map_err(|_| "a client task panicked".to_owned())?);
        }
        Ok(all)
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))
}

fn collect(
    url: &str,
    token: &str,
    clients: u64,
    records: u64,
    threads: bool,
) -> Result<(), String> {
    let start = Instant::now();
    let t = if threads {
        collect_threads(url, token, clients, records)?
    } else {
        collect_hyper(url, token, clients, records)?
    };
    let secs = start.elapsed().as_secs_f64();
    let out = serde_json::json!({
        "loadgen": if threads { "threads" } else { "hyper" },
        "clients": clients,
        "records": t.ok,
        "errors": t.errors,
        "seconds": (secs * 1e3).round() / 1e3,
        "records_per_s": (t.ok as f64 / secs * 10.0).round() / 10.0,
        "load_cpu_s": load_conn::own_cpu_seconds()?,
    });
    println!("{out}");
    Ok(())
}

/// `n` timed queries after a warm-up; every answer must be a query result.
fn query(
    url: &str,
    token: &str,
    body: &str,
    n: usize,
    fresh: bool,
    threads: bool,
) -> Result<(), String> {
    let url = format!("{url}/v1/data/query");
    let warmup = (n / 10).min(50);
    let mut lat = Vec::with_capacity(n);
    let mut hits = 0usize;
    let mut keep = |k: usize, el: Duration, r: Result<usize, String>| -> Result<(), String> {
        hits = r.map_err(|e| format!("query: {e}"))?;
        if k >= warmup {
            lat.push(el.as_secs_f64() * 1000.0);
        }
        Ok(())
    };
    if threads {
        // No idle connections kept when fresh: every request opens (and
        // closes) its own.
        let a = ureq_agent(if fresh { 0 } else { 1 });
        for k in 0..n + warmup {
            let t = Instant::now();
            let r = ureq_post(&a, &url, token, body.as_bytes());
            let el = t.elapsed();
            keep(k, el, r.and_then(|(status, b)| check_query(status, &b)))?;
        }
    } else {
        let target = load_conn::Target::parse(&url)?;
        runtime()?.block_on(async {
            let mut conn = None;
            for k in 0..n + warmup {
                let t = Instant::now();
                // A fresh connection is opened inside the timed span, as
                // ureq's is.
                if fresh || conn.is_none() {
                    conn = Some(load_conn::Conn::open(&target, token).await?);
                }
                let c = conn.as_mut().ok_or("no connection")?;
                let r = c.post(body.as_bytes().to_vec()).await;
                let el = t.elapsed();
                keep(k, el, r.and_then(|(status, b)| check_query(status, &b)))?;
            }
            Ok::<_, String>(())
        })?;
    }
    lat.sort_by(|x, y| x.total_cmp(y));
    let p = |q: f64| lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)];
    println!(
        "{{\"hits\":{hits},\"n\":{n},\"p50_ms\":{:.3},\"p99_ms\":{:.3}}}",
        p(0.5),
        p(0.99)
    );
    Ok(())
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).cloned().unwrap_or_default();
    let threads = std::env::var("LOADGEN").is_ok_and(|v| v == "threads");
    let r = match arg(1).as_str() {
        "jsonl" => {
            let n: u64 = arg(2).parse().unwrap_or(100_000).min(10_000_000);
            match corpus::Kind::parse(args.get(3).map_or("short", String::as_str)) {
                None => Err("usage: data-load jsonl RECORDS [short|kb]".to_owned()),
                Some(kind) => {
                    let out = std::io::stdout();
                    let mut out = std::io::BufWriter::new(out.lock());
                    (0..n)
                        .try_for_each(|i| writeln!(out, "{}", corpus::input_line(kind, i)))
                        .and_then(|()| out.flush())
                        .map_err(|e| format!("stdout: {e}"))
                }
            }
        }
        mode @ ("collect" | "query") => {
            let url = arg(2);
            let token = std::env::var(arg(3)).unwrap_or_default();
            load_conn::Target::parse(&url).and_then(|_| {
                if mode == "collect" {
                    collect(
                        &url,
                        &token,
                        arg(4).parse().unwrap_or(8).clamp(1, 64),
                        arg(5).parse().unwrap_or(10_000).min(1_000_000),
                        threads,
                    )
                } else {
                    query(
                        &url,
                        &token,
                        &arg(4),
                        arg(5).parse().unwrap_or(2000).clamp(10, 100_000),
                        arg(6) == "fresh",
                        threads,
                    )
                }
            })
        }
        _ => Err("usage: data-load collect|query|jsonl …".to_owned()),
    };
    match r {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("data-load: {e}");
            std::process::ExitCode::from(1)
        }
    }
}
