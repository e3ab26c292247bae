//! The `file` collector as a hostile caller tries it: FIFOs that would
//! block a worker, links (symbolic and hard), `..`, a racing directory
//! swap, and the one
//! uniform refusal that says nothing about which host paths exist.

use crate::common::TestEnv;
use crate::common::data_support::{Served, TOKEN, get, post};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const INSIDE: &str = "inside the root";
const SECRET: &str = "SECRET outside the root";

struct Tree {
    env: TestEnv,
    root: PathBuf,
    outside: PathBuf,
}

/// A data dir whose one file root holds `d/f`, `fifo`, links in and out;
/// a sibling directory outside holds `f` and `d/f` with other bytes.
fn tree() -> Tree {
    let env = TestEnv::new();
    let base = std::fs::canonicalize(env.tmp.path()).expect("canon");
    let root = base.join("root");
    let outside = base.join("outside");
    std::fs::create_dir_all(root.join("d")).expect("mkdir");
    std::fs::create_dir_all(outside.join("d")).expect("mkdir");
    std::fs::write(root.join("d/f"), INSIDE).expect("w");
    std::fs::write(outside.join("f"), SECRET).expect("w");
    std::fs::write(outside.join("d/f"), SECRET).expect("w");
    std::os::unix::fs::symlink(outside.join("f"), root.join("out-link")).expect("symlink");
    std::os::unix::fs::symlink(&outside, root.join("out-dir")).expect("symlink");
    std::os::unix::fs::symlink(root.join("d/f"), root.join("in-link")).expect("symlink");
    let st = Command::new("mkfifo")
        .arg(root.join("fifo"))
        .status()
        .expect("mkfifo");
    assert!(st.success());
    env.run(&["data", "init", "--file-root", root.to_str().expect("p")])
        .json();
    Tree { env, root, outside }
}

fn collect_cli(env: &TestEnv, path: &str) -> crate::common::Output {
    let mut c = env.cmd();
    c.args(["data", "collect", "--collection", "default"])
        .args(["--collector", "file", "--input"])
        .arg(json!({"path": path}).to_string())
        // A safety net only: a blocking open would otherwise hang the suite.
        .timeout(std::time::Duration::from_secs(120));
    crate::common::run_cmd(&mut c)
}

fn collect_body(path: &str) -> Value {
    json!({"collection_id": "default", "collector_id": "file", "input": {"path": path}})
}

/// `serve` with a bearer and one worker, so a blocked worker would stop
/// the whole server.
fn serve_one_worker(env: &TestEnv) -> Served {
    let mut child = Command::new(crate::common::bin())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_TASK_NODE_TOKEN", TOKEN)
        .arg("--data-dir")
        .arg(&env.data_dir)
        .args(["serve", "--bind", "127.0.0.1:0", "--workers", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening line");
    let v: Value = serde_json::from_str(&line).expect("listening json");
    Served {
        child,
        addr: v["listening"]
            .as_str()
            .expect("url")
            .trim_start_matches("http://")
            .to_owned(),
    }
}

fn refused_paths(t: &Tree) -> Vec<String> {
    let r = |p: &str| t.root.join(p).to_str().expect("p").to_owned();
    vec![
        t.outside.join("f").to_str().expect("p").to_owned(),
        "/etc/passwd".into(),
        "/nonexistent/at/all".into(),
        r("missing"),
        r("d"),
        r("fifo"),
        r("out-link"),
        r("out-dir/f"),
        r("in-link"),
        r("d/../../outside/f"),
        r("d/f/"),
        r("d/f/x"),
        format!("/proc/self/root{}", r("d/f")),
        format!("{}/../root/d/f", t.root.display()),
    ]
}

/// Outside the roots, missing, a directory, a FIFO, a link (pointing out or
/// in), an escaping `..`: one error, byte for byte, on the CLI and over
/// HTTP, and nothing is stored.
#[test]
fn every_refusal_is_the_same_error() {
    let t = tree();
    let first = collect_cli(&t.env, &t.root.join("missing").display().to_string())
        .error("invalid_file", 65);
    assert!(first.get("details").is_none(), "{first}");
    for p in refused_paths(&t) {
        let e = collect_cli(&t.env, &p).error("invalid_file", 65);
        assert_eq!(e, first, "{p}");
    }
    let s = serve_one_worker(&t.env);
    let mut http_first = None;
    for p in refused_paths(&t) {
        let v = post(&s.addr, "/v1/data/collect", &collect_body(&p)).error(400, "invalid_file");
        assert_eq!(v, first, "{p}");
        assert_eq!(http_first.get_or_insert_with(|| v.clone()), &v);
    }
    // The real file inside still collects, at its path beneath the root.
    let ok = post(
        &s.addr,
        "/v1/data/collect",
        &collect_body(t.root.join("d/./f").to_str().expect("p")),
    )
    .ok();
    let rec = &ok["records"][0];
    assert_eq!(
        rec["source"]["external_id"],
        t.root.join("d/f").to_str().expect("p")
    );
    assert_eq!(rec["content"]["size"], INSIDE.len());
    drop(s);
    assert_eq!(crate::common::data_core::all_changes(&t.env).len(), 1);
}

/// A FIFO inside a root does not block: the one worker answers
/// `invalid_file` and then keeps serving the public manifest.
#[test]
fn a_fifo_in_a_root_never_blocks_the_server() {
    let t = tree();
    let s = serve_one_worker(&t.env);
    let fifo = t.root.join("fifo").display().to_string();
    for _ in 0..3 {
        post(&s.addr, "/v1/data/collect", &collect_body(&fifo)).error(400, "invalid_file");
        let m = crate::common::data_support::req(&s.addr, "GET", "/v1/data/manifest", None, None);
        assert_eq!(m.status, 200, "{m:?}");
        get(&s.addr, "/v1/data/collections").ok();
    }
    collect_cli(&t.env, &fifo).error("invalid_file", 65);
}

/// A hard link planted in a root is the outside file itself (`openat2`
/// resolves names, and the name is inside): refused like a FIFO, on the
/// CLI and over HTTP, with the uniform error, and nothing of the outside
/// file is stored. Two names of one file that are both inside are refused
/// too (the collector cannot know where a second name is); the same file
/// with one name again collects.
#[test]
fn a_hard_link_in_a_root_is_refused() {
    let t = tree();
    let hard = t.root.join("hard");
    std::fs::hard_link(t.outside.join("f"), &hard).expect("hard link");
    let twin = t.root.join("d/twin");
    std::fs::hard_link(t.root.join("d/f"), &twin).expect("hard link");
    let uniform =
        collect_cli(&t.env, &t.root.join("fifo").display().to_string()).error("invalid_file", 65);
    for p in [&hard, &twin, &t.root.join("d/f")] {
        let e = collect_cli(&t.env, &p.display().to_string()).error("invalid_file", 65);
        assert_eq!(e, uniform, "{}", p.display());
    }
    let s = serve_one_worker(&t.env);
    for p in [&hard, &twin] {
        let body = collect_body(&p.display().to_string());
        let r = post(&s.addr, "/v1/data/collect", &body);
        assert!(
            !String::from_utf8_lossy(&r.body).contains(&sha256_hex(SECRET.as_bytes())),
            "{r:?}"
        );
        assert_eq!(r.error(400, "invalid_file"), uniform);
    }
    assert!(crate::common::data_core::all_changes(&t.env).is_empty());
    // One name again: the file inside is the root's own and collects.
    std::fs::remove_file(&twin).expect("unlink");
    let ok = post(
        &s.addr,
        "/v1/data/collect",
        &collect_body(&t.root.join("d/f").display().to_string()),
    )
    .ok();
    assert_eq!(
        ok["records"][0]["content"]["sha256"],
        sha256_hex(INSIDE.as_bytes())
    );
}

fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// While a thread exchanges `root/d` (a real directory) with `root/swap`
/// (a link to a directory outside) with `renameat2(RENAME_EXCHANGE)` as
/// fast as it can, collects of `root/d/f` over HTTP either read the file
/// inside or get the uniform refusal: not one byte from outside.
#[test]
fn a_racing_directory_swap_never_reads_outside() {
    let t = tree();
    std::os::unix::fs::symlink(t.outside.join("d"), t.root.join("swap")).expect("symlink");
    let s = serve_one_worker(&t.env);
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let (root, stop, swaps) = (t.root.clone(), stop.clone(), swaps.clone());
        std::thread::spawn(move || {
            let dir = std::fs::File::open(&root).expect("open root");
            while !stop.load(Ordering::Relaxed) {
                rustix::fs::renameat_with(
                    &dir,
                    Path::new("d"),
                    &dir,
                    Path::new("swap"),
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .expect("renameat2 exchange");
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let path = t.root.join("d/f").display().to_string();
    let secret = sha256_hex(SECRET.as_bytes());
    let (mut inside, mut refused) = (0u32, 0u32);
    for _ in 0..600 {
        let r = post(&s.addr, "/v1/data/collect", &collect_body(&path));
        let text = String::from_utf8_lossy(&r.body).into_owned();
        assert!(!text.contains(&secret), "read outside the root: {text}");
        match r.status {
            200 => {
                let v = r.json();
                assert_eq!(
                    v["records"][0]["content"]["sha256"],
                    sha256_hex(INSIDE.as_bytes()),
                    "{v}"
                );
                inside += 1;
            }
            _ => {
                r.error(400, "invalid_file");
                refused += 1;
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().expect("swapper");
    assert_eq!(inside + refused, 600);
    assert!(swaps.load(Ordering::Relaxed) > 0);
    drop(s);
    // Nothing from outside was ever stored: one record, the inside file's.
    let q = t.env.run(&["data", "query", r#"{"limit": 100}"#]).json();
    let recs = q["records"].as_array().expect("records");
    assert!(recs.len() <= 1, "{q}");
    for r in recs {
        assert_eq!(
            r["record"]["content"]["sha256"],
            sha256_hex(INSIDE.as_bytes())
        );
    }
}
