//! The blob benchmark's driver (scripts/bench-blobs.sh; not part of the
//! test command). Two modes, one loop, one process each:
//!
//! - `store DATA_DIR SIZE COUNT`: puts COUNT distinct objects of SIZE bytes
//!   through the data directory's blob store (`DataDir::blobs`: the local
//!   CAS, or the bucket its `blob-store.json` names), from memory with
//!   their digest as the data node stores content (`put_bytes_as`), and
//!   reads each back
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
//! - `pair DATA_DIR CONFIG SIZE COUNT`: `store` and `anchor` (plain, and
//!   with the checksum header) object by object in one process, one
//!   after the other, so each ratio compares runs under the same load
//!   (on a shared machine the load moves between separate runs): prints
//!   the medians of the per-object ratios ours / anchor as well.
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
            .put_bytes_as(&bytes, &digest)
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

struct Anchor {
    bucket: Bucket,
    creds: Credentials,
    prefix: String,
    agent: ureq::Agent,
}

impl Anchor {
    fn new(config: &str) -> Anchor {
        let read = |p: &str| std::fs::read(p).unwrap_or_else(|e| die(&format!("{p}: {e}")));
        let c: Config =
            serde_json::from_slice(&read(config)).unwrap_or_else(|e| die(&e.to_string()));
        let k: Creds = serde_json::from_slice(&read(&c.credentials_file))
            .unwrap_or_else(|e| die(&e.to_string()));
        let style = if c.path_style {
            UrlStyle::Path
        } else {
            UrlStyle::VirtualHost
        };
        let endpoint = url::Url::parse(&c.endpoint).unwrap_or_else(|e| die(&e.to_string()));
        let bucket = Bucket::new(endpoint, style, c.bucket, c.region)
            .unwrap_or_else(|e| die(&e.to_string()));
        let creds = Credentials::new(k.access_key_id, k.secret_access_key);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        Anchor {
            bucket,
            creds,
            prefix: c.prefix,
            agent,
        }
    }

    /// One plain PUT from memory (with `sum`, S3's checksum header computed
    /// beforehand) and one GET read to the end: their times.
    fn put_get(&self, key: &str, bytes: &[u8], sum: Option<&str>) -> (Duration, Duration) {
        let signed = Duration::from_secs(3600);
        let key = format!("{}anchor/{key}", self.prefix);
        let t = Instant::now();
        let url = self.bucket.put_object(Some(&self.creds), &key).sign(signed);
        let mut put = self.agent.put(url.as_str());
        if let Some(sum) = sum {
            put = put.header("x-amz-checksum-sha256", sum);
        }
        let r = put.send(bytes).unwrap_or_else(|e| die(&e.to_string()));
        if r.status() != 200 {
            die(&format!("PUT: HTTP {}", r.status()));
        }
        let put_t = t.elapsed();
        let t = Instant::now();
        let url = self.bucket.get_object(Some(&self.creds), &key).sign(signed);
        let r = self
            .agent
            .get(url.as_str())
            .call()
            .unwrap_or_else(|e| die(&e.to_string()));
        if r.status() != 200 {
            die(&format!("GET: HTTP {}", r.status()));
        }
        let mut body = r.into_body().into_reader();
        let mut buf = vec![0u8; 64 * 1024];
        let mut n = 0usize;
        loop {
            match body.read(&mut buf) {
                Ok(0) => break,
                Ok(m) => n += m,
                Err(e) => die(&e.to_string()),
            }
        }
        let get_t = t.elapsed();
        assert_eq!(n, bytes.len());
        (put_t, get_t)
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn median_f(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

fn pair(dir: &str, config: &str, size: usize, count: u64, seed: u64) {
    let dir = DataDir::open(std::path::Path::new(dir)).unwrap_or_else(|e| die(&e.to_string()));
    let blobs = dir.blobs().unwrap_or_else(|e| die(&e.to_string()));
    let anchor = Anchor::new(config);
    let mut rows: Vec<[Duration; 5]> = Vec::new();
    for i in 0..count {
        let bytes = object(seed, i, size);
        let digest = Sha256Hex::digest(&bytes);
        let sum = data_encoding::BASE64.encode(&digest.to_bytes());
        let mut row = [Duration::ZERO; 5];
        // The three take turns going first: a server writing one large
        // object after another slows down as its dirty pages pile up.
        for turn in 0..3 {
            match (turn + i) % 3 {
                0 => {
                    (row[2], row[3]) = anchor.put_get(&format!("{seed}-{i}"), &bytes, None);
                }
                1 => {
                    (row[4], _) = anchor.put_get(&format!("{seed}-{i}-sum"), &bytes, Some(&sum));
                }
                _ => {
                    let t = Instant::now();
                    blobs
                        .put_bytes_as(&bytes, &digest)
                        .unwrap_or_else(|e| die(&e.to_string()));
                    row[0] = t.elapsed();
                    let t = Instant::now();
                    let n = blobs
                        .copy_to(&digest, size as u64, &mut std::io::sink())
                        .unwrap_or_else(|e| die(&e.to_string()));
                    row[1] = t.elapsed();
                    assert_eq!(n, size as u64);
                }
            }
        }
        rows.push(row);
    }
    let col = |k: usize| median_f(rows.iter().map(|r| ms(r[k])).collect());
    let ratio = |a: usize, b: usize| median_f(rows.iter().map(|r| ms(r[a]) / ms(r[b])).collect());
    println!(
        "{{\"count\":{count},\"size\":{size},\"put_ms\":{:.3},\"get_ms\":{:.3},\"anchor_put_ms\":{:.3},\"anchor_get_ms\":{:.3},\"anchor_checksum_put_ms\":{:.3},\"put_ratio\":{:.3},\"get_ratio\":{:.3},\"put_ratio_checksum\":{:.3}}}",
        col(0),
        col(1),
        col(2),
        col(3),
        col(4),
        ratio(0, 2),
        ratio(1, 3),
        ratio(0, 4)
    );
}

fn anchor(config: &str, size: usize, count: u64, seed: u64, checksum: bool) {
    let anchor = Anchor::new(config);
    let (mut puts, mut gets) = (Vec::new(), Vec::new());
    for i in 0..count {
        let bytes = object(seed, i, size);
        // With `checksum`, S3's header, computed before the clock starts:
        // the server's own verification of it is in the time, ours is not.
        let sum =
            checksum.then(|| data_encoding::BASE64.encode(&Sha256Hex::digest(&bytes).to_bytes()));
        let (p, g) = anchor.put_get(&format!("{seed}-{i}"), &bytes, sum.as_deref());
        puts.push(p);
        gets.push(g);
    }
    report(size, puts, gets);
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    if args.len() == 6 && args[1] == "pair" {
        let size: usize = args[4].parse().unwrap_or_else(|_| die("SIZE"));
        let count: u64 = args[5].parse().unwrap_or_else(|_| die("COUNT"));
        return pair(&args[2], &args[3], size, count, seed);
    }
    if args.len() != 5 {
        die(
            "usage: s3-probe store DATA_DIR SIZE COUNT | anchor[-checksum] CONFIG SIZE COUNT | pair \
             DATA_DIR CONFIG SIZE COUNT",
        );
    }
    let size: usize = args[3].parse().unwrap_or_else(|_| die("SIZE"));
    let count: u64 = args[4].parse().unwrap_or_else(|_| die("COUNT"));
    match args[1].as_str() {
        "store" => store(&args[2], size, count, seed),
        "anchor" => anchor(&args[2], size, count, seed, false),
        "anchor-checksum" => anchor(&args[2], size, count, seed, true),
        _ => die("mode: store, anchor or anchor-checksum"),
    }
}
