//! Evidence as data (issue 33, item 5), through the real binary: the
//! operator names an evidence data node; each imported collector run
//! becomes a record there that `data query` finds by a word of its
//! output; a receipt's digest arrives as a superseding version; a
//! repeated drain, or one after a crash between the write and the mark,
//! stores nothing new; `serve` drains on its own; bad input is typed and
//! changes nothing.

use crate::common::collect_flow::{Loop, s};
use crate::common::{Output, run_cmd};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Stdio;

/// `agent-task --data-dir <evidence dir> data …`.
fn data(l: &Loop, dir: &Path, args: &[&str]) -> Output {
    let mut c = l.env.bare_cmd();
    c.arg("--data-dir").arg(dir).arg("data").args(args);
    run_cmd(&mut c)
}

/// The records of the evidence node `data query --text word` finds.
fn query(l: &Loop, dir: &Path, word: &str) -> Vec<Value> {
    data(l, dir, &["query", "--text", word]).json()["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["record"].clone())
        .collect()
}

/// The JSON content of a record.
fn content(l: &Loop, dir: &Path, id: &str) -> Value {
    let g = data(l, dir, &["get", id]).json();
    serde_json::from_str(g["content"]["data"].as_str().expect("utf8 content")).expect("json")
}

fn configure(l: &Loop) -> PathBuf {
    let dir = l.env.path("evidence");
    let c = l
        .env
        .run(&[
            "evidence",
            "configure",
            "--repo",
            "demo/basic",
            "--evidence-dir",
            s(&dir),
        ])
        .json();
    assert_eq!(c["target"]["collection_id"], "evidence", "{c}");
    assert_eq!(c["node_created"], true, "{c}");
    dir
}

fn sync(l: &Loop) -> Value {
    l.env.run(&["evidence", "sync"]).json()
}

fn status(l: &Loop) -> Value {
    l.env.run(&["evidence", "status"]).json()
}

/// A failing run of the `tests` step, collected and imported; returns the
/// transfer digest.
fn failing_run(l: &Loop) -> String {
    l.set_add("-");
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d1.json");
    let c = l.collect(&d).json();
    assert_eq!(c["outcome"], "failed", "{c}");
    c["upload"]["transfer_digest"]
        .as_str()
        .expect("digest")
        .to_owned()
}

fn outbox_rows(l: &Loop) -> i64 {
    let conn = rusqlite::Connection::open(l.env.data_dir.join("authority.sqlite")).expect("open");
    conn.query_row("SELECT COUNT(*) FROM evidence_outbox", [], |r| r.get(0))
        .expect("count")
}

#[test]
fn a_failing_run_is_found_by_a_word_of_its_output_and_a_receipt_supersedes_the_passing_run() {
    let l = Loop::basic("bwrap");
    let dir = configure(&l);
    let mode = std::fs::metadata(&dir).expect("dir").permissions().mode();
    assert_eq!(mode & 0o777, 0o700, "the evidence node is owner-private");
    let digest = failing_run(&l);
    let st = status(&l);
    assert_eq!(
        (st["pending"].clone(), st["done"].clone()),
        (json!(1), json!(0)),
        "{st}"
    );
    assert_eq!(st["targets"][0]["repo_id"], "demo/basic", "{st}");
    let r = sync(&l);
    assert_eq!(r["done"], 1, "{r}");
    assert_eq!(r["inserted"], 1, "{r}");
    assert_eq!(r["failed"], 0, "{r}");
    // "FAIL: 2 + 3 gave -1" is the failing test's stderr.
    let hits = query(&l, &dir, "gave");
    assert_eq!(hits.len(), 1, "{hits:?}");
    let rec = &hits[0];
    assert_eq!(rec["collection_id"], "evidence");
    assert_eq!(rec["metadata"]["outcome"], "failed");
    assert_eq!(rec["metadata"]["change_id"], l.change_id.as_str());
    assert_eq!(rec["key"], digest.as_str());
    let c = content(&l, &dir, rec["id"].as_str().expect("id"));
    assert_eq!(c["schema"], "agent-task.evidence.v1");
    assert_eq!(c["repository"], "demo/basic");
    assert_eq!(c["step_id"], "tests");
    assert_eq!(c["collector_kind"], "command");
    assert_eq!(c["outcome"], "failed");
    assert_eq!(c["status"], "completed");
    assert_eq!(c["exit_code"], 1);
    assert!(c["duration_ms"].is_u64(), "{c}");
    assert!(c["revision"].is_string(), "{c}");
    assert_eq!(c["transfer_digest"], digest.as_str());
    assert!(
        c["stderr_tail"]
            .as_str()
            .expect("tail")
            .contains("FAIL: 2 + 3 gave -1"),
        "{c}"
    );
    assert!(c.get("receipt_digest").is_none(), "{c}");
    // A repeated drain writes nothing new.
    let again = sync(&l);
    assert_eq!(
        (again["done"].clone(), again["inserted"].clone()),
        (json!(0), json!(0)),
        "{again}"
    );
    assert_eq!(query(&l, &dir, "gave").len(), 1);

    // Fix, collect a passing run, finalize: the receipt digest arrives as
    // a version that supersedes the passing run's record.
    l.set_add("+");
    let t2 = l.checkpoint();
    let (d2, _) = l.claim(&t2, "d2.json");
    let c2 = l.collect(&d2).json();
    assert_eq!(c2["outcome"], "passed", "{c2}");
    let passing = c2["upload"]["transfer_digest"]
        .as_str()
        .expect("d")
        .to_owned();
    assert_eq!(sync(&l)["done"], 1);
    let f = l.agent(&["finalize", "--change", &l.change_id]).json();
    let receipt = f["receipt_digest"].as_str().expect("receipt").to_owned();
    assert_eq!(status(&l)["pending"], 1);
    let r = sync(&l);
    assert_eq!(r["done"], 1, "{r}");
    assert_eq!(r["inserted"], 1, "the superseding version: {r}");
    assert_eq!(r["existing"], 1, "the run's own version: {r}");
    let hits = data(
        &l,
        &dir,
        &[
            "query",
            "--where",
            &json!({"metadata": {"receipt_digest": receipt}}).to_string(),
        ],
    )
    .json();
    let hits = hits["records"].as_array().expect("records").clone();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let fin = &hits[0]["record"];
    assert_eq!(fin["key"], passing.as_str());
    assert_eq!(fin["version"], "finalized");
    let run_hits = data(
        &l,
        &dir,
        &[
            "query",
            "--where",
            &json!({"key": passing, "version": "imported"}).to_string(),
        ],
    )
    .json();
    let run_id = run_hits["records"][0]["record"]["id"].clone();
    assert!(run_id.is_string(), "{run_hits}");
    assert_eq!(fin["supersedes_id"], run_id);
    let c = content(&l, &dir, fin["id"].as_str().expect("id"));
    assert_eq!(c["receipt_digest"], receipt.as_str());
    assert_eq!(c["outcome"], "passed");
    // finalize again: the same receipt, no new outbox row.
    l.agent(&["finalize", "--change", &l.change_id]).json();
    assert_eq!(status(&l)["pending"], 0);
    assert_eq!(sync(&l)["inserted"], 0);
}

#[test]
fn a_crash_between_the_write_and_the_mark_is_repaired_without_a_duplicate() {
    let l = Loop::basic("bwrap");
    let dir = configure(&l);
    failing_run(&l);
    let mut c = l.env.cmd();
    c.env("AGENT_TASK_TEST_CRASH_AT", "evidence_after_write")
        .args(["evidence", "sync"]);
    let crashed = run_cmd(&mut c);
    assert_eq!(crashed.code, -1, "killed at the crash point: {crashed}");
    assert_eq!(status(&l)["pending"], 1, "the row is still pending");
    assert_eq!(query(&l, &dir, "gave").len(), 1, "the record was written");
    let r = sync(&l);
    assert_eq!(r["done"], 1, "{r}");
    assert_eq!(r["inserted"], 0, "{r}");
    assert_eq!(r["existing"], 1, "{r}");
    assert_eq!(query(&l, &dir, "gave").len(), 1, "no duplicate");
    let changes = data(&l, &dir, &["changes"]).json();
    let created = changes["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|e| e["type"] == "record.created")
        .count();
    assert_eq!(created, 1, "{changes}");
    assert_eq!(status(&l)["pending"], 0);
}

#[test]
fn no_target_writes_no_outbox_row() {
    let l = Loop::basic("bwrap");
    failing_run(&l);
    assert_eq!(outbox_rows(&l), 0);
    let st = status(&l);
    assert_eq!(st, json!({"targets": [], "pending": 0, "done": 0}));
    let r = sync(&l);
    assert_eq!(
        (r["done"].clone(), r["failed"].clone()),
        (json!(0), json!(0))
    );
    // A target configured later publishes what is imported from then on.
    let dir = configure(&l);
    assert_eq!(sync(&l)["done"], 0);
    assert!(query(&l, &dir, "gave").is_empty());
}

#[test]
fn bad_input_is_typed_and_changes_nothing() {
    let l = Loop::basic("bwrap");
    let dir = l.env.path("evidence");
    let before = crate::common::snapshot_files(&l.env.data_dir);
    let run = |args: &[&str]| l.env.run(&[&["evidence", "configure"][..], args].concat());
    let e = run(&["--repo", "no/such", "--evidence-dir", s(&dir)]).error("not_found", 66);
    assert!(e["message"].as_str().expect("m").contains("no/such"), "{e}");
    assert!(!dir.exists(), "an unknown repository creates nothing");
    // A symbolic link, even to a good directory.
    let real = l.env.path("real");
    std::fs::create_dir(&real).expect("mkdir");
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    let link = l.env.path("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    run(&["--repo", "demo/basic", "--evidence-dir", s(&link)]).error("symlink_refused", 77);
    assert_eq!(std::fs::read_dir(&real).expect("ls").count(), 0);
    // The workflow's own data directory.
    run(&["--repo", "demo/basic", "--evidence-dir", s(&l.env.data_dir)]).error("invalid_input", 65);
    // A collection id the data protocol refuses.
    run(&[
        "--repo",
        "demo/basic",
        "--evidence-dir",
        s(&dir),
        "--collection",
        "../x",
    ])
    .error("invalid_collection_id", 65);
    assert!(!dir.exists());
    assert_eq!(crate::common::snapshot_files(&l.env.data_dir), before);
    assert_eq!(status(&l)["targets"], json!([]));
}

#[test]
fn serve_drains_the_outbox_on_its_own() {
    let l = Loop::basic("bwrap");
    let dir = configure(&l);
    // `serve` needs a data node of its own in the workflow directory.
    l.env.run(&["data", "init"]).json();
    let mut child = l
        .env
        .std_cmd()
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--evidence-sync-ms",
            "100",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening");
    let v: Value = serde_json::from_str(&line).expect("json");
    assert_eq!(v["evidence_sync_ms"], 100, "{v}");
    failing_run(&l);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    let st = loop {
        let st = status(&l);
        if st["done"] == 1 || std::time::Instant::now() > deadline {
            break st;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(st["done"], 1, "serve drained the run: {st}");
    assert_eq!(query(&l, &dir, "gave").len(), 1);
}
