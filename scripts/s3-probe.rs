//! The blob benchmark's driver (scripts/bench-blobs.sh; not part of the
//! test command). Two modes, one loop, one process each:
//!
//! - `store DATA_DIR SIZE COUNT`: puts COUNT distinct objects of SIZE bytes
//!   through the data directory's blob store (`DataDir::blobs`: the local
//!   CAS, or the bucket its `blob-store.json` names) and reads each back
//!   (`copy_to` into a sink: spooled, size and SHA-256 verified), exactly
//!   as agent-task does.
//! - `anchor CONFIG SIZE COUNT`: the same objects to the same bucket through
//!   a plain client on the same crates (rusty-s3 presigning, ureq sending):
//!   one PUT from memory, one GET read to the end, no hashing, no spool, no
//!   HEAD. `CONFIG` is a `blob-store.json`.
//! - `anchor-checksum CONFIG SIZE COUNT`: the anchor with S3's
//!   `x-amz-checksum-sha256` on each PUT (computed before the clock
//!   starts), which the blob store always sends: the server's own
//!   verification of it, without ours.
//!
//! Prints one JSON line: put and get latency (median, ms) and throughput
//! (MiB/s over the whole run). An example (a program of its own) rather
//! than a hidden subcommand, so the anchor is not inside the binary it
//! measures and ships no benchmark code in it.

#![allow(clippy::print_stdout, clippy::print_stderr)]

use agent_task::store::DataDir;
use agent_task::wire::digest::Sha256Hex;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use std::io::Read;
use std::time::{Duration, Instant};

fn die(msg: &str) -> ! {
    eprintln!("s3-probe: {msg}");
    std::process::exit(2)
}

/// Object `i` of a run: SIZE bytes, distinct per run and index.
fn object(seed: u64, i: u64, size: usize) -> Vec<u8> {
    let mut v = vec![0u8; size];
    let mut x = seed ^ i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x2545_F491_4F6C_DD1D;
    for chunk in v.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let b = x.to_le_bytes();
        chunk.copy_from_slice(&b[..chunk.len()]);
    }
    v
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v.get(v.len() / 2).map_or(0.0, |d| d.as_secs_f64() * 1000.0)
}

fn report(size: usize, puts: Vec<Duration>, gets: Vec<Duration>) {
    let mib = |n: usize, t: &[Duration]| {
        let total: f64 = t.iter().map(Duration::as_secs_f64).sum();
        (size * n) as f64 / (1 << 20) as f64 / total.max(1e-9)
    };
    let n = puts.len();
    let (pt, gt) = (mib(n, &puts), mib(n, &gets));
    println!(
        "{{\"count\":{n},\"size\":{size},\"put_ms\":{:.3},\"get_ms\":{:.3},\"put_mib_s\":{pt:.2},\"get_mib_s\":{gt:.2}}}",
        median(puts),
        median(gets)
    );
}

fn store(dir: &str, size: usize, count: u64, seed: u64) {
    let dir = DataDir::open(std::path::Path::new(dir)).unwrap_or_else(|e| die(&e.to_string()));
    let blobs = dir.blobs().unwrap_or_else(|e| die(&e.to_string()));
    let (mut puts, mut gets) = (Vec::new(), Vec::new());
    for i in 0..count {
        let bytes = object(seed, i, size);
        let digest = Sha256Hex::digest(&bytes);
        let t = Instant::now();
        blobs
            .put(&mut &bytes[..], &digest, size as u64)
            .unwrap_or_else(|e| die(&e.to_string()));
        puts.push(t.elapsed());
        let t = Instant::now();
        let n = blobs
            .copy_to(&digest, size as u64, &mut std::io::sink())
            .unwrap_or_else(|e| die(&e.to_string()));
        gets.push(t.elapsed());
        assert_eq!(n, size as u64);
    }
    report(size, puts, gets);
}

#[derive(serde::Deserialize)]
struct Config {
    endpoint: String,
    region: String,
    bucket: String,
    #[serde(default)]
    prefix: String,
    #[serde(default)]
    path_style: bool,
    credentials_file: String,
}

#[derive(serde::Deserialize)]
struct Creds {
    access_key_id: String,
    secret_access_key: String,
}

fn anchor(config: &str, size: usize, count: u64, seed: u64, checksum: bool) {
    let read = |p: &str| std::fs::read(p).unwrap_or_else(|e| die(&format!("{p}: {e}")));
    let c: Config = serde_json::from_slice(&read(config)).unwrap_or_else(|e| die(&e.to_string()));
    let k: Creds =
        serde_json::from_slice(&read(&c.credentials_file)).unwrap_or_else(|e| die(&e.to_string()));
    let style = if c.path_style {
        UrlStyle::Path
    } else {
        UrlStyle::VirtualHost
    };
    let endpoint = url::Url::parse(&c.endpoint).unwrap_or_else(|e| die(&e.to_string()));
    let bucket =
        Bucket::new(endpoint, style, c.bucket, c.region).unwrap_or_else(|e| die(&e.to_string()));
    let creds = Credentials::new(k.access_key_id, k.secret_access_key);
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .into();
    let signed = Duration::from_secs(3600);
    let (mut puts, mut gets) = (Vec::new(), Vec::new());
    let mut buf = vec![0u8; 64 * 1024];
    for i in 0..count {
        let bytes = object(seed, i, size);
        let key = format!("{}anchor/{seed}-{i}", c.prefix);
        // With `checksum`, S3's header, computed before the clock starts:
        // the server's own verification of it is in the time, ours is not.
        let sum =
            checksum.then(|| data_encoding::BASE64.encode(&Sha256Hex::digest(&bytes).to_bytes()));
        let t = Instant::now();
        let url = bucket.put_object(Some(&creds), &key).sign(signed);
        let mut put = agent.put(url.as_str());
        if let Some(sum) = &sum {
            put = put.header("x-amz-checksum-sha256", sum);
        }
        let r = put.send(&bytes[..]).unwrap_or_else(|e| die(&e.to_string()));
        if r.status() != 200 {
            die(&format!("PUT: HTTP {}", r.status()));
        }
        puts.push(t.elapsed());
        let t = Instant::now();
        let url = bucket.get_object(Some(&creds), &key).sign(signed);
        let r = agent
            .get(url.as_str())
            .call()
            .unwrap_or_else(|e| die(&e.to_string()));
        if r.status() != 200 {
            die(&format!("GET: HTTP {}", r.status()));
        }
        let mut body = r.into_body().into_reader();
        let mut n = 0usize;
        loop {
            match body.read(&mut buf) {
                Ok(0) => break,
                Ok(m) => n += m,
                Err(e) => die(&e.to_string()),
            }
        }
        gets.push(t.elapsed());
        assert_eq!(n, size);
    }
    report(size, puts, gets);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 5 {
        die("usage: s3-probe store DATA_DIR SIZE COUNT | anchor[-checksum] CONFIG SIZE COUNT");
    }
    let size: usize = args[3].parse().unwrap_or_else(|_| die("SIZE"));
    let count: u64 = args[4].parse().unwrap_or_else(|_| die("COUNT"));
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    match args[1].as_str() {
        "store" => store(&args[2], size, count, seed),
        "anchor" => anchor(&args[2], size, count, seed, false),
        "anchor-checksum" => anchor(&args[2], size, count, seed, true),
        _ => die("mode: store, anchor or anchor-checksum"),
    }
}
