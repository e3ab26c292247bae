//! Bulk ingest (`data collect --jsonl`): acknowledgements, SIGKILL at
//! random points, per-line failures in the middle of a batch, superseding
//! records of the same batch.

use crate::common::TestEnv;
use crate::common::data_core::data_env;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};

fn bulk_args<'a>(env: &'a TestEnv, path: &'a str, batch: &'a str) -> Vec<&'a str> {
    vec![
        "--data-dir",
        env.data_dir.to_str().expect("p"),
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "text",
        "--jsonl",
        path,
        "--batch",
        batch,
    ]
}

/// The binary with `args`, its stdin a pipe this test writes to, its
/// stdout and stderr piped.
fn spawn_on_a_pipe(args: &[&str]) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = std::process::Command::new(crate::common::bin())
        .env_clear()
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let stdin = child.stdin.take().expect("stdin");
    (child, stdin)
}

/// Every stored record's text (its bytes, verified against the envelope's
/// digest and size), with how many records hold it; and the feed's
/// sequences. Also checks the database's integrity.
fn stored(env: &TestEnv) -> (BTreeMap<String, usize>, Vec<i64>) {
    let db = rusqlite::Connection::open_with_flags(
        env.data_dir.join("data/data.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("db");
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .expect("integrity_check");
    assert_eq!(check, "ok");
    let fts: String = db
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .expect("quick_check");
    assert_eq!(fts, "ok");
    let mut texts = BTreeMap::new();
    let mut st = db
        .prepare(
            "SELECT r.envelope_json, b.bytes FROM records r \
             LEFT JOIN inline_blobs b ON b.sha256 = r.content_sha256",
        )
        .expect("prepare");
    let rows = st
        .query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<Vec<u8>>>(1)?))
        })
        .expect("query");
    for row in rows {
        let (env_json, inline) = row.expect("row");
        let e: Value = serde_json::from_str(&env_json).expect("envelope");
        let h = e["content"]["sha256"].as_str().expect("sha");
        let bytes = match inline {
            Some(b) => b,
            None => std::fs::read(env.data_dir.join("cas/sha256").join(&h[..2]).join(&h[2..]))
                .expect("a record without inline content has a CAS object"),
        };
        assert_eq!(data_encoding::HEXLOWER.encode(&Sha256::digest(&bytes)), h);
        assert_eq!(
            bytes.len() as u64,
            e["content"]["size"].as_u64().expect("size")
        );
        *texts
            .entry(String::from_utf8(bytes).expect("utf8"))
            .or_insert(0) += 1;
    }
    let seqs: Vec<i64> = db
        .prepare("SELECT sequence FROM changes ORDER BY rowid")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<rusqlite::Result<_>>()
        .expect("seqs");
    (texts, seqs)
}

fn line_text(i: usize) -> String {
    // Every 997th line is large enough to live in the CAS.
    if i % 997 == 500 {
        format!("bulk kill line {i} {}", "x".repeat(20_000))
    } else {
        format!("bulk kill line {i}")
    }
}

/// A tiny deterministic generator, seeded from the clock (the seed is in
/// every failure message).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[test]
fn sigkill_at_random_points_keeps_every_acknowledged_line_exactly_once() {
    let env = data_env();
    let path = env.path("kill.jsonl");
    let total = 12_000;
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    for i in 1..=total {
        writeln!(
            f,
            "{}",
            json!({"text": line_text(i), "metadata": {"line": i}})
        )
        .expect("w");
    }
    drop(f);
    let path_s = path.to_str().expect("p").to_owned();
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64)
        | 1;
    let mut rng = Rng(seed);
    let mut acked_overall = 0u64;
    for round in 0..4 {
        let mut child = std::process::Command::new(crate::common::bin())
            .env_clear()
            .args(bulk_args(&env, &path_s, "400"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let stderr = child.stderr.take().expect("stderr");
        // Kill after a random number of acknowledgements (0 included; later
        // rounds reach past the lines earlier rounds stored), then a random
        // extra pause so the kill lands inside a batch.
        let wait_acks = round as u64 * 7 + rng.next() % 7;
        let mut acked = 0u64;
        let mut lines = std::io::BufReader::new(stderr).lines();
        let mut seen = 0;
        while seen < wait_acks {
            match lines.next() {
                Some(Ok(l)) => {
                    let v: Value = serde_json::from_str(&l).expect("ack is JSON");
                    acked = v["committed_through_line"].as_u64().expect("line");
                    seen += 1;
                }
                _ => break,
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(rng.next() % 40));
        child.kill().expect("sigkill");
        // Acknowledgements already written before the kill count too.
        for l in lines.map_while(|l| l.ok()) {
            if let Ok(v) = serde_json::from_str::<Value>(&l)
                && let Some(n) = v["committed_through_line"].as_u64()
            {
                acked = n;
            }
        }
        let _ = child.wait();
        acked_overall = acked_overall.max(acked);
        let (texts, seqs) = stored(&env);
        for i in 1..=acked_overall as usize {
            assert_eq!(
                texts.get(&line_text(i)),
                Some(&1),
                "seed {seed} round {round}: acknowledged line {i} (of {acked_overall}) missing or duplicated"
            );
        }
        assert!(
            texts.values().all(|&n| n == 1),
            "seed {seed} round {round}: a record is stored twice"
        );
        assert!(
            seqs.windows(2).all(|w| w[0] < w[1]),
            "seed {seed} round {round}: the feed is not strictly increasing"
        );
        assert_eq!(seqs.len(), texts.len(), "one change event per record");
    }
    // The same file again: every line exactly once.
    let out = env.run(&bulk_args(&env, &path_s, "400")[2..]);
    let s = out.json();
    assert_eq!(
        s["inserted"].as_u64().expect("n") + s["existing"].as_u64().expect("n"),
        total as u64,
        "seed {seed}"
    );
    let (texts, seqs) = stored(&env);
    assert_eq!(texts.len(), total, "seed {seed}");
    assert!(texts.values().all(|&n| n == 1), "seed {seed}");
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "seed {seed}");
    // Every record is findable (its FTS row committed with it).
    let hit = env
        .run(&["data", "query", "--text", &line_text(total / 2)])
        .json();
    assert_eq!(
        hit["records"][0]["record"]["metadata"]["line"],
        total / 2,
        "seed {seed}"
    );
}

#[test]
fn malformed_lines_mid_batch_fail_alone_and_name_their_line() {
    let env = data_env();
    let path = env.path("mixed.jsonl");
    let lines = [
        json!({"text": "line one"}).to_string(),
        json!({"text": "line two"}).to_string(),
        "{\"text\": \"truncated".to_owned(),
        "[1, 2, 3]".to_owned(),
        json!({"text": 5}).to_string(),
        String::new(),
        json!({"text": "line seven", "metadata": []}).to_string(),
        json!({"text": "line eight"}).to_string(),
        "\u{feff}{\"text\": \"bom\"}".to_owned(),
        json!({"text": "line ten"}).to_string(),
    ];
    std::fs::write(&path, lines.join("\n")).expect("write");
    let path_s = path.to_str().expect("p").to_owned();
    let out = env.run(&bulk_args(&env, &path_s, "100")[2..]);
    assert_eq!(out.code, 65, "{out}");
    let s: Value = serde_json::from_str(&out.stdout).expect("summary");
    let errors: Vec<(u64, String)> = s["errors"]
        .as_array()
        .expect("errors")
        .iter()
        .map(|e| {
            assert!(e["message"].is_string(), "{e}");
            (
                e["line"].as_u64().expect("line"),
                e["error"].as_str().expect("code").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        errors,
        [
            (3, "invalid_json".to_owned()),
            (4, "invalid_json".to_owned()),
            (5, "invalid_input".to_owned()),
            (7, "invalid_json".to_owned()),
            (9, "invalid_json".to_owned()),
        ]
    );
    assert_eq!(
        (&s["lines"], &s["last_line"], &s["inserted"], &s["failed"]),
        (&json!(9), &json!(10), &json!(4), &json!(5))
    );
    // The lines around the failures, in the same batch, committed.
    let (texts, _) = stored(&env);
    let got: Vec<&str> = texts.keys().map(String::as_str).collect();
    assert_eq!(got, ["line eight", "line one", "line ten", "line two"]);
    // One batch, one acknowledgement, covering the whole file.
    let ack: Value = serde_json::from_str(out.stderr.trim()).expect("one ack line");
    assert_eq!(
        ack,
        json!({"committed_through_line": 10, "lines": 9, "inserted": 4, "existing": 0, "failed": 5})
    );
}

#[test]
fn a_line_may_supersede_a_record_of_its_own_batch() {
    // Record ids do not depend on time: learn the first line's id on a
    // scratch node.
    let scratch = data_env();
    let first = json!({"text": "version one", "key": "doc/1"});
    let id = crate::common::data_core::collect(&scratch, "default", &first)["records"][0]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let env = data_env();
    let path = env.path("sup.jsonl");
    let missing = format!("rec_{}", "0".repeat(64));
    let lines = [
        first.to_string(),
        json!({"text": "version two", "key": "doc/1", "supersedes_id": id}).to_string(),
        json!({"text": "orphan", "supersedes_id": missing}).to_string(),
    ];
    std::fs::write(&path, lines.join("\n")).expect("write");
    let path_s = path.to_str().expect("p").to_owned();
    let out = env.run(&bulk_args(&env, &path_s, "10")[2..]);
    assert_eq!(out.code, 65, "{out}");
    let s: Value = serde_json::from_str(&out.stdout).expect("summary");
    assert_eq!(s["inserted"], 2);
    assert_eq!(s["errors"][0]["line"], 3);
    assert_eq!(s["errors"][0]["error"], "superseded_record_not_found");
    let q = env.run(&["data", "query", "--text", "version two"]).json();
    assert_eq!(q["records"][0]["record"]["supersedes_id"], id.as_str());
}

/// A bulk ingest keeps its lock file open across batches but holds the
/// lock only while it commits one: between two batches (here it waits for
/// more input on stdin) another writer takes the lock and collects, and
/// the next batch commits after it. Its CAS temp sweep runs once, at its
/// first batch: an orphan temp file an hour old is removed, a young one
/// (a put in progress) is kept, and one that becomes old while the
/// ingest runs is left for a later sweep.
#[test]
fn a_bulk_ingest_releases_the_lock_between_batches_and_sweeps_once() {
    let env = data_env();
    let tmp = env.data_dir.join("cas/tmp");
    let plant = |name: &str, age_s: u64| {
        let p = tmp.join(name);
        let f = std::fs::File::create(&p).expect("create");
        f.set_modified(std::time::SystemTime::now() - std::time::Duration::from_secs(age_s))
            .expect("mtime");
        p
    };
    let orphan = plant("put-orphan", 7200);
    let young = plant("put-young", 1);
    let (mut child, mut stdin) = spawn_on_a_pipe(&bulk_args(&env, "-", "1"));
    let mut acks = std::io::BufReader::new(child.stderr.take().expect("stderr")).lines();
    let mut ack = |want: u64| {
        let l = acks.next().expect("an ack").expect("read");
        let v: Value = serde_json::from_str(&l).expect("ack is JSON");
        assert_eq!(v["committed_through_line"], want, "{l}");
    };
    writeln!(stdin, "{}", json!({"text": "first batch"})).expect("w");
    stdin.flush().expect("flush");
    ack(1);
    assert!(!orphan.exists(), "swept at the first batch");
    assert!(young.exists(), "a young temp file is never swept");
    // Between batches the lock is free (that writer sweeps too).
    let r = crate::common::data_core::collect(&env, "default", &json!({"text": "another writer"}));
    assert_eq!(r["records"].as_array().map(Vec::len), Some(1), "{r}");
    let later = plant("put-later", 7200);
    writeln!(stdin, "{}", json!({"text": "second batch"})).expect("w");
    stdin.flush().expect("flush");
    ack(2);
    assert!(later.exists(), "one sweep per interval, not one per batch");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{out:?}");
    let s: Value = serde_json::from_slice(&out.stdout).expect("summary");
    assert_eq!(s["inserted"], 2, "{s}");
    let (texts, seqs) = stored(&env);
    let got: Vec<&str> = texts.keys().map(String::as_str).collect();
    assert_eq!(got, ["another writer", "first batch", "second batch"]);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

/// A slow producer (a pipe that writes a few lines and then waits) has
/// its lines acknowledged while it is still open, once the batch's first
/// line has waited `--flush-ms`, not only when `--batch` lines have come
/// or the input ends; the acknowledged lines are stored, and the next
/// ones go on into later batches.
#[test]
fn a_slow_producer_is_acknowledged_before_its_batch_fills() {
    let env = data_env();
    let mut args = bulk_args(&env, "-", "1000");
    args.extend(["--flush-ms", "50"]);
    let (mut child, mut stdin) = spawn_on_a_pipe(&args);
    let stderr = child.stderr.take().expect("stderr");
    let (acks_tx, acks) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for l in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str::<Value>(&l)
                && acks_tx.send(v).is_err()
            {
                return;
            }
        }
    });
    // A liveness bound only (a broken flush would otherwise hang here).
    let ack_through = |want: u64| loop {
        let v = acks
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("an acknowledgement while the input is still open");
        let n = v["committed_through_line"].as_u64().expect("line");
        assert!(n <= want, "{v}");
        if n == want {
            return v;
        }
    };
    for i in 1..=3 {
        writeln!(stdin, "{}", json!({"text": format!("slow {i}")})).expect("w");
    }
    stdin.flush().expect("flush");
    let v = ack_through(3);
    assert_eq!(v["inserted"], 3, "{v}");
    let (texts, _) = stored(&env);
    assert_eq!(texts.len(), 3, "acknowledged lines are stored: {texts:?}");
    writeln!(stdin).expect("blank line");
    writeln!(stdin, "{}", json!({"text": "slow 5"})).expect("w");
    stdin.flush().expect("flush");
    let v = ack_through(5);
    assert_eq!(v["lines"], 4, "{v}");
    drop(stdin);
    let out = child.wait_with_output().expect("wait");
    assert!(out.status.success(), "{out:?}");
    let s: Value = serde_json::from_slice(&out.stdout).expect("summary");
    assert_eq!(
        (s["lines"].as_u64(), s["inserted"].as_u64()),
        (Some(4), Some(4)),
        "{s}"
    );
    let (texts, seqs) = stored(&env);
    let got: Vec<&str> = texts.keys().map(String::as_str).collect();
    assert_eq!(got, ["slow 1", "slow 2", "slow 3", "slow 5"]);
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

/// Batches grow: the first has 1,024 lines, the next four times as many, up
/// to `--batch`; the acknowledgements say so, and every line is stored
/// once.
#[test]
fn batches_grow_from_a_small_first_one_to_the_batch_size() {
    let env = data_env();
    let path = env.path("grow.jsonl");
    let mut f = std::fs::File::create(&path).expect("create");
    for i in 1..=5000 {
        writeln!(f, "{}", json!({"text": line_text(i)})).expect("w");
    }
    drop(f);
    let path_s = path.to_str().expect("p").to_owned();
    let mut args = bulk_args(&env, &path_s, "2500");
    // No batch is cut by time here, however slow the machine.
    args.extend(["--flush-ms", "3600000"]);
    let out = std::process::Command::new(crate::common::bin())
        .env_clear()
        .args(&args)
        .output()
        .expect("run");
    assert!(out.status.success(), "{out:?}");
    let acks: Vec<u64> = String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("ack is JSON");
            v["committed_through_line"].as_u64().expect("line")
        })
        .collect();
    assert_eq!(acks, [1024, 1024 + 2500, 5000]);
    let (texts, seqs) = stored(&env);
    assert_eq!(texts.len(), 5000);
    assert!(texts.values().all(|n| *n == 1));
    assert_eq!(seqs.len(), 5000);
}
