//! A data write that panics inside `serve`'s group-commit writer fails its
//! batch alone: its client gets a typed `internal_error` answer (not a
//! hang, not "the writer stopped"), nothing of it is stored, and the next
//! writes on the same `serve` succeed. The panic is injected with the
//! `test-hooks` build's `AGENT_TASK_TEST_DATA_WRITE_PANIC` (a collect whose
//! text equals it panics in the writer).

use crate::common::data_core::data_env;
use crate::common::data_support::{Served, TOKEN, get, post};
use serde_json::{Value, json};
use std::io::BufRead;
use std::process::{Command, Stdio};

const BOOM: &str = "this write panics in the writer";

/// `serve` with the panic hook armed.
fn serve_with_panic(env: &crate::common::TestEnv) -> Served {
    let mut child = Command::new(crate::common::bin())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("AGENT_TASK_NODE_TOKEN", TOKEN)
        .env("AGENT_TASK_TEST_DATA_WRITE_PANIC", BOOM)
        .args([
            "--data-dir",
            env.data_dir.to_str().expect("utf-8 path"),
            "serve",
            "--bind",
            "127.0.0.1:0",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("read the listening line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"));
    let addr = v["listening"]
        .as_str()
        .expect("listening")
        .trim_start_matches("http://")
        .to_owned();
    Served { child, addr }
}

fn collect_text(text: &str) -> Value {
    json!({"collection_id": "default", "collector_id": "text", "input": {"text": text}})
}

#[test]
fn a_panicking_data_write_fails_alone_and_the_next_write_succeeds() {
    let env = data_env();
    let s = serve_with_panic(&env);
    let a = &s.addr;
    // A write before it, so the writer has its connection kept.
    let before = post(a, "/v1/data/collect", &collect_text("written before")).ok();
    let before_id = before["records"][0]["id"].as_str().expect("id").to_owned();
    for round in 0..2 {
        post(a, "/v1/data/collect", &collect_text(BOOM)).error(500, "internal_error");
        // The same serve goes on writing, on the writer it kept.
        let text = format!("written after the panic {round}");
        let after = post(a, "/v1/data/collect", &collect_text(&text)).ok();
        assert_eq!(after["inserted"], 1, "round {round}: {after}");
        let id = after["records"][0]["id"].as_str().expect("id");
        let got = get(a, &format!("/v1/data/records/{id}")).ok();
        assert_eq!(got["record"]["id"], id, "{got}");
    }
    // Nothing of the panicking write is stored; the earlier write is.
    let q = post(a, "/v1/data/query", &json!({"text": "panics", "limit": 10})).ok();
    assert_eq!(q["records"], json!([]), "{q}");
    let feed = get(a, "/v1/data/changes?limit=1000").ok();
    let ids: Vec<&str> = feed["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter_map(|c| c["record"]["id"].as_str())
        .collect();
    assert_eq!(ids.len(), 3, "{feed}");
    assert!(ids.contains(&before_id.as_str()), "{feed}");
}
