//! File collector roots, bulk JSON-lines ingest, group-committed
//! concurrent collects over HTTP, and crash safety under SIGKILL.

use crate::common::TestEnv;
use crate::common::data_core::{all_changes, data_env};
use crate::common::data_support::{TOKEN, get, post, serve};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::io::Write;

fn collect_file(env: &TestEnv, path: &str) -> crate::common::Output {
    env.run(&[
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "file",
        "--input",
        &json!({"path": path}).to_string(),
    ])
}

#[test]
fn file_collector_reads_only_under_configured_roots() {
    let env = data_env();
    let root = env.path("root");
    std::fs::create_dir_all(root.join("sub")).expect("mkdir");
    std::fs::write(root.join("sub/Note Å.md"), "# title\nbody").expect("w");
    let outside = env.path("secret.txt");
    std::fs::write(&outside, "secret").expect("w");
    let e = collect_file(&env, root.join("sub/Note Å.md").to_str().expect("p"))
        .error("invalid_file", 65);
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("no configured roots"),
        "{e}"
    );

    env.run(&["data", "init", "--file-root", root.to_str().expect("p")])
        .json();
    let ok = collect_file(&env, root.join("sub/Note Å.md").to_str().expect("p")).json();
    let rec = &ok["records"][0];
    let real = std::fs::canonicalize(root.join("sub/Note Å.md")).expect("canon");
    assert_eq!(rec["content"]["media_type"], "text/markdown");
    assert_eq!(rec["source"]["collector_id"], "file");
    assert_eq!(rec["source"]["external_id"], real.to_str().expect("p"));
    let uri = rec["source"]["uri"].as_str().expect("uri");
    assert!(
        uri.starts_with("file:///") && uri.ends_with("/sub/Note%20%C3%85.md"),
        "{uri}"
    );
    assert_eq!(rec["metadata"]["file_name"], "Note Å.md");
    assert_eq!(rec["metadata"]["file_size"], 12);
    assert_eq!(rec["metadata"]["file_modified_at"], rec["observed_at"]);
    assert!(rec["observed_at"].as_str().expect("t").ends_with('Z'));
    assert_eq!(
        env.run(&["data", "get", rec["id"].as_str().expect("id")])
            .json()["content"]["data"],
        "# title\nbody"
    );

    // Escapes are refused: outside path, `..`, a symlink pointing out, a directory, a missing file.
    collect_file(&env, outside.to_str().expect("p")).error("invalid_file", 65);
    collect_file(&env, root.join("sub/../../secret.txt").to_str().expect("p"))
        .error("invalid_file", 65);
    std::os::unix::fs::symlink(&outside, root.join("link.txt")).expect("symlink");
    let e =
        collect_file(&env, root.join("link.txt").to_str().expect("p")).error("invalid_file", 65);
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("beneath a configured file root"),
        "{e}"
    );
    collect_file(&env, root.join("sub").to_str().expect("p")).error("invalid_file", 65);
    collect_file(&env, root.join("missing.txt").to_str().expect("p")).error("invalid_file", 65);
    assert_eq!(all_changes(&env).len(), 1);
    // The config file records the root.
    let cfg: Value =
        serde_json::from_slice(&std::fs::read(env.data_dir.join("data/node.json")).expect("cfg"))
            .expect("json");
    assert_eq!(
        cfg["file_roots"][0],
        std::fs::canonicalize(&root)
            .expect("c")
            .to_str()
            .expect("p")
    );
}

#[test]
fn config_file_declares_collections() {
    let env = data_env();
    let cfg_path = env.data_dir.join("data/node.json");
    let mut cfg: Value =
        serde_json::from_slice(&std::fs::read(&cfg_path).expect("cfg")).expect("json");
    cfg["collections"] = json!([{"id": "research", "schema": {"version": "2"}, "policy": {"allowed_media_types": ["text/plain"]}}]);
    std::fs::write(&cfg_path, serde_json::to_vec(&cfg).expect("v")).expect("w");
    let out = env.run(&["data", "init"]).json();
    assert_eq!(out["collections"], json!(["default", "research"]));
    cfg["collections"][0]["schema"]["version"] = json!("3");
    std::fs::write(&cfg_path, serde_json::to_vec(&cfg).expect("v")).expect("w");
    env.run(&["data", "init"]).error("collection_conflict", 65);
    env.run(&["serve", "--bind", "127.0.0.1:0"])
        .error("collection_conflict", 65);
    cfg["bogus"] = json!(1);
    std::fs::write(&cfg_path, serde_json::to_vec(&cfg).expect("v")).expect("w");
    env.run(&["data", "init"]).error("config", 78);
}

#[test]
fn bulk_jsonl_ingest_shares_transactions_and_reports_per_line() {
    let env = data_env();
    let path = env.path("in.jsonl");
    let mut f = std::fs::File::create(&path).expect("create");
    for i in 0..3000 {
        writeln!(
            f,
            "{}",
            json!({"text": format!("bulk record {i}"), "metadata": {"i": i}})
        )
        .expect("w");
    }
    writeln!(f, "{}", json!({"text": "bulk record 7"})).expect("w");
    writeln!(f, "not json").expect("w");
    writeln!(f).expect("w");
    writeln!(f, "{}", json!({"text": ""})).expect("w");
    drop(f);
    let out = env.run(&[
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "text",
        "--jsonl",
        path.to_str().expect("p"),
        "--batch",
        "700",
    ]);
    assert_eq!(out.code, 65, "{out}");
    let s: Value = serde_json::from_str(&out.stdout).expect("summary");
    assert_eq!(s["lines"], 3003);
    assert_eq!(s["inserted"], 3000);
    assert_eq!(s["existing"], 1);
    assert_eq!(s["failed"], 2);
    assert_eq!(s["errors"][0]["line"], 3002);
    assert_eq!(s["errors"][0]["error"], "invalid_json");
    // Line numbers are the file's (the blank line 3003 counts).
    assert_eq!(s["errors"][1]["line"], 3004);
    assert_eq!(s["errors"][1]["error"], "invalid_input");
    // One acknowledgement per committed batch of 700 lines.
    let acks: Vec<Value> = out
        .stderr
        .lines()
        .map(|l| serde_json::from_str(l).expect("progress line"))
        .collect();
    assert_eq!(
        acks.iter()
            .map(|a| a["committed_through_line"].as_u64().expect("n"))
            .collect::<Vec<_>>(),
        [700, 1400, 2100, 2800, 3004]
    );
    assert_eq!(all_changes(&env).len(), 1000, "first page");
    let hit = env
        .run(&["data", "query", "--text", "bulk record 2999"])
        .json();
    assert_eq!(hit["records"][0]["record"]["metadata"]["i"], 2999);
    // stdin works too, and re-ingest is idempotent.
    let again = env
        .run_stdin(
            &[
                "data",
                "collect",
                "--collection",
                "default",
                "--collector",
                "text",
                "--jsonl",
                "-",
            ],
            b"{\"text\":\"bulk record 1\"}\n{\"text\":\"from stdin\"}\n",
        )
        .json();
    assert_eq!(
        (again["inserted"].as_i64(), again["existing"].as_i64()),
        (Some(1), Some(1))
    );
}

/// Every record in the feed has its verified bytes, inline in
/// `data.sqlite` (small content) or in the CAS.
fn assert_every_record_has_bytes(env: &TestEnv) -> usize {
    let db = rusqlite::Connection::open_with_flags(
        env.data_dir.join("data/data.sqlite"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("db");
    let mut cursor: Option<String> = None;
    let mut n = 0;
    loop {
        let mut args = vec!["data", "changes", "--limit", "1000"];
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let page = env.run(&args).json();
        for ev in page["changes"].as_array().expect("a") {
            if ev["type"] != "record.created" {
                continue;
            }
            let h = ev["record"]["content"]["sha256"].as_str().expect("h");
            let inline: Option<Vec<u8>> = db
                .query_row(
                    "SELECT bytes FROM inline_blobs WHERE sha256 = ?1",
                    [data_encoding::HEXLOWER.decode(h.as_bytes()).expect("key")],
                    |r| r.get(0),
                )
                .ok();
            let bytes = match inline {
                Some(b) => b,
                None => std::fs::read(env.data_dir.join("cas/sha256").join(&h[..2]).join(&h[2..]))
                    .expect("blob present"),
            };
            assert_eq!(data_encoding::HEXLOWER.encode(&Sha256::digest(&bytes)), h);
            assert_eq!(
                bytes.len() as u64,
                ev["record"]["content"]["size"].as_u64().expect("size")
            );
            n += 1;
        }
        cursor = Some(page["cursor"].as_str().expect("c").to_owned());
        if page["has_more"] == false {
            return n;
        }
    }
}

#[test]
fn sigkill_during_bulk_ingest_leaves_no_record_without_bytes() {
    let env = data_env();
    let path = env.path("big.jsonl");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).expect("create"));
    let total = 6_000;
    for i in 0..total {
        writeln!(f, "{}", json!({"text": format!("crash test record {i}")})).expect("w");
    }
    drop(f);
    let args = [
        "--data-dir",
        env.data_dir.to_str().expect("p"),
        "data",
        "collect",
        "--collection",
        "default",
        "--collector",
        "text",
        "--jsonl",
        path.to_str().expect("p"),
        "--batch",
        "200",
    ];
    let mut child = std::process::Command::new(crate::common::bin())
        .env_clear()
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    // Wait (bounded) until some batches committed, then SIGKILL.
    for _ in 0..2000 {
        let page = env.run(&["data", "changes", "--limit", "1"]).json();
        if page["has_more"] == true {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().expect("kill");
    let status = child.wait().expect("wait");
    let committed = assert_every_record_has_bytes(&env);
    if status.success() {
        assert_eq!(committed, total, "finished before the kill");
    }
    // Re-running completes the ingest exactly once per record.
    let out = env.run(&args[2..]);
    let s = out.json();
    assert_eq!(
        s["inserted"].as_u64().expect("n") + s["existing"].as_u64().expect("n"),
        total as u64
    );
    assert_eq!(s["existing"].as_u64(), Some(committed as u64));
    assert_eq!(assert_every_record_has_bytes(&env), total);
}

#[test]
fn concurrent_http_collects_share_group_commits() {
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let addr = s.addr.clone();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut ids = Vec::new();
                for i in 0..40 {
                    let r = post(&addr, "/v1/data/collect", &json!({"collection_id": "default", "collector_id": "text", "input": {"text": format!("t{t} r{i}")}})).ok();
                    ids.push(r["records"][0]["id"].as_str().expect("id").to_owned());
                }
                let same = post(&addr, "/v1/data/collect", &json!({"collection_id": "default", "collector_id": "text", "input": {"text": "identical from every client"}})).ok();
                (ids, same["inserted"].as_i64().expect("n"), same["records"][0]["id"].as_str().expect("id").to_owned())
            })
        })
        .collect();
    let mut all = std::collections::BTreeSet::new();
    let mut same_ids = std::collections::BTreeSet::new();
    let mut same_inserted = 0;
    for t in threads {
        let (ids, inserted, same) = t.join().expect("join");
        all.extend(ids);
        same_inserted += inserted;
        same_ids.insert(same);
    }
    assert_eq!(all.len(), 320);
    assert_eq!(same_ids.len(), 1);
    assert_eq!(same_inserted, 1);
    let feed = get(&addr, "/v1/data/changes?limit=1000").ok();
    assert_eq!(feed["changes"].as_array().expect("a").len(), 321);
    let seqs: Vec<i64> = feed["changes"]
        .as_array()
        .expect("a")
        .iter()
        .map(|e| e["sequence"].as_i64().expect("s"))
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
}

/// The server's writer keeps its lock file open but holds the lock only
/// while it commits a batch: CLI writes run between its batches, and its
/// next batch takes the lock again after them.
#[test]
fn cli_writes_run_between_the_server_writers_batches() {
    let env = data_env();
    let s = serve(&env, Some(TOKEN));
    let mut want = Vec::new();
    for i in 0..3 {
        let text = format!("over http {i}");
        let r = post(
            &s.addr,
            "/v1/data/collect",
            &json!({"collection_id": "default", "collector_id": "text", "input": {"text": text}}),
        )
        .ok();
        assert_eq!(r["inserted"], 1, "{r}");
        want.push(text);
        let text = format!("from the cli {i}");
        let r = crate::common::data_core::collect(&env, "default", &json!({"text": text}));
        assert_eq!(r["records"].as_array().map(Vec::len), Some(1), "{r}");
        want.push(text);
    }
    let feed = get(&s.addr, "/v1/data/changes?limit=100").ok();
    let changes = feed["changes"].as_array().expect("changes");
    assert_eq!(changes.len(), 6, "{feed}");
    let seqs: Vec<i64> = changes
        .iter()
        .map(|e| e["sequence"].as_i64().expect("s"))
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]));
    for text in &want {
        let q = post(&s.addr, "/v1/data/query", &json!({"text": text})).ok();
        assert_eq!(
            q["records"].as_array().map(Vec::len),
            Some(1),
            "{text}: {q}"
        );
    }
}

#[test]
fn sigkill_of_the_server_loses_no_acknowledged_collect() {
    let env = data_env();
    let mut s = serve(&env, Some(TOKEN));
    let addr = s.addr.clone();
    let acks = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let addr = addr.clone();
            let acks = acks.clone();
            std::thread::spawn(move || {
                let mut acked = Vec::new();
                for i in 0..2000 {
                    let body = json!({"collection_id": "default", "collector_id": "text", "input": {"text": format!("kill t{t} r{i}")}}).to_string();
                    // A request cut by the kill panics inside the raw client.
                    let r = std::panic::catch_unwind(|| crate::common::data_support::req(&addr, "POST", "/v1/data/collect", Some(TOKEN), Some(&body)));
                    match r {
                        Ok(resp) if resp.status == 200 => {
                            acked.push(resp.json()["records"][0]["id"].as_str().expect("id").to_owned());
                            acks.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        }
                        _ => break,
                    }
                }
                acked
            })
        })
        .collect();
    // Kill while collects are in flight, once some were acknowledged
    // (bounded wait).
    for _ in 0..6000 {
        if acks.load(std::sync::atomic::Ordering::SeqCst) >= 30 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    s.child.kill().expect("sigkill");
    let _ = s.child.wait();
    let mut acked = Vec::new();
    for t in threads {
        acked.extend(t.join().expect("join"));
    }
    assert!(
        !acked.is_empty(),
        "some collects were acknowledged before the kill"
    );
    let n = assert_every_record_has_bytes(&env);
    assert!(n >= acked.len());
    let s2 = serve(&env, Some(TOKEN));
    for id in &acked {
        let r = get(&s2.addr, &format!("/v1/data/records/{id}")).ok();
        assert_eq!(r["record"]["id"], id.as_str());
    }
}
