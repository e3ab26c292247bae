//! `agent-task ls` (the overview) through the real binary: an empty data
//! directory; best-of-N Changes of one group side by side with their
//! qualification (the answer `qualify` gives), stale once one lands; a
//! live attempt's holder, fence and lease; each filter; the JSON shape and
//! piped output; the agent's view through the endpoint (its own profile's
//! Changes only); `--watch` refreshing across a missing and a locked data
//! directory.

use crate::common::collect_flow::{Loop, s};
use crate::common::task_support::copy_dir;
use crate::common::{TestEnv, bin, repo_root};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

const OVERVIEW_KEYS: &[&str] = &["changes", "now_ms", "truncated"];
const CHANGE_KEYS: &[&str] = &[
    "agent_id",
    "change_id",
    "group",
    "landings",
    "owner_id",
    "profile",
    "qualified",
    "receipts",
    "repository",
    "revision",
    "state",
    "subject_current",
    "tasks",
    "title",
    "version",
];

fn keys(v: &Value) -> Vec<String> {
    let mut k: Vec<String> = v.as_object().expect("object").keys().cloned().collect();
    k.sort();
    k
}

/// `ls` (piped, so JSON) with `args`, as the operator.
fn ls(env: &TestEnv, args: &[&str]) -> Value {
    let mut a = vec!["ls"];
    a.extend(args);
    env.run(&a).json()
}

/// The Change ids of an overview, in order.
fn ids(o: &Value) -> Vec<String> {
    o["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| c["change_id"].as_str().expect("id").to_owned())
        .collect()
}

fn find<'a>(o: &'a Value, id: &str) -> &'a Value {
    o["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .find(|c| c["change_id"] == id)
        .unwrap_or_else(|| panic!("{id} not in {o}"))
}

/// A fresh workspace (a copy of the fixture) whose add.sh uses `op`.
fn workspace(l: &Loop, name: &str, op: &str) -> PathBuf {
    let ws = l.env.path(name);
    copy_dir(&repo_root().join("fixtures/repos/basic"), &ws);
    std::fs::write(
        ws.join("add.sh"),
        format!("#!/bin/sh\n# Adds two integers (agent edit).\necho $(($1 {op} $2))\n"),
    )
    .expect("write");
    ws
}

/// Opens a Change on `ws` (profile `profile`), in `group` when given.
fn open(l: &Loop, ws: &Path, profile: &str, group: Option<&str>, title: &str) -> String {
    let mut a = vec![
        "change",
        "open",
        "--repo",
        "demo/basic",
        "--profile",
        profile,
        "--workspace",
        s(ws),
        "--title",
        title,
    ];
    if let Some(g) = group {
        a.extend(["--group", g]);
    }
    let v = l.agent(&a).json();
    assert_eq!(v["group"].as_str(), group, "{v}");
    v["change_id"].as_str().expect("id").to_owned()
}

/// Checkpoints `ws`, claims its `tests` task and collects it; returns the
/// collect outcome.
fn checkpoint_and_collect(l: &Loop, ws: &Path, name: &str) -> String {
    let cp = l.agent(&["checkpoint", "--workspace", s(ws)]).json();
    let task = cp["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["step_id"] == "tests")
        .and_then(|t| t["task_id"].as_str())
        .expect("tests task")
        .to_owned();
    let (d, _) = l.claim(&task, name);
    l.collect(&d).json()["outcome"]
        .as_str()
        .expect("outcome")
        .to_owned()
}

/// Runs the binary under a pty (`script -qec`), so its stdout is a
/// terminal; `None` where `script` is not installed.
fn on_a_terminal(env: &TestEnv, args: &[&str]) -> Option<String> {
    let quote = |a: &str| format!("'{}'", a.replace('\'', "'\\''"));
    let mut line = vec![
        quote(bin().to_str().expect("utf8")),
        "--data-dir".into(),
        quote(s(&env.data_dir)),
    ];
    line.extend(args.iter().map(|a| quote(a)));
    let out = std::process::Command::new("script")
        .args(["-qec", &line.join(" "), "/dev/null"])
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("TERM", "dumb")
        .output()
        .ok()?;
    assert!(out.status.success(), "{out:?}");
    Some(String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n"))
}

#[test]
fn ls_of_an_empty_data_dir_is_an_empty_list_and_an_unknown_state_is_refused() {
    let env = TestEnv::init();
    let o = ls(&env, &[]);
    assert_eq!(keys(&o), OVERVIEW_KEYS, "{o}");
    assert_eq!(o["changes"], json!([]));
    assert_eq!(o["truncated"], false);
    assert!(o["now_ms"].as_i64().expect("now") > 0);
    assert_eq!(ls(&env, &["--json"])["changes"], json!([]));
    if let Some(t) = on_a_terminal(&env, &["ls"]) {
        assert_eq!(t.trim(), "no changes");
    }
    if let Some(t) = on_a_terminal(&env, &["ls", "--json"]) {
        let v: Value = serde_json::from_str(t.trim()).expect("--json on a terminal");
        assert_eq!(v["changes"], json!([]));
    }
    let e = env
        .run(&["ls", "--state", "bogus"])
        .error("invalid_input", 65);
    assert_eq!(e["details"]["field"], "state", "{e}");
    env.run(&["ls", "--group", "a b"])
        .error("invalid_input", 65);
    env.run(&["ls", "--interval-ms", "100"]).error("usage", 64);
}

#[test]
fn best_of_n_side_by_side_with_qualification_then_stale_after_one_lands() {
    let l = Loop::basic("bwrap");
    // The Change of the loop (no group): checkpointed and claimed, its
    // attempt still leased.
    l.set_add("+");
    let t0 = l.checkpoint();
    l.claim(&t0, "d0.json");
    // Two Changes made for the same work: one passes, one fails.
    let (ws1, ws2) = (workspace(&l, "ws1", "+"), workspace(&l, "ws2", "-"));
    let c1 = open(&l, &ws1, "default", Some("fix-add"), "Fix add (first try)");
    let c2 = open(&l, &ws2, "default", Some("fix-add"), "Fix add (second try)");
    assert_eq!(checkpoint_and_collect(&l, &ws1, "d1.json"), "passed");
    assert_eq!(checkpoint_and_collect(&l, &ws2, "d2.json"), "failed");
    l.agent(&["finalize", "--change", &c1]).json();

    let o = ls(&l.env, &[]);
    assert_eq!(keys(&o), OVERVIEW_KEYS);
    // The group first, side by side, then the Change without one.
    assert_eq!(ids(&o), [c1.as_str(), c2.as_str(), l.change_id.as_str()]);
    for c in o["changes"].as_array().expect("changes") {
        assert_eq!(keys(c), CHANGE_KEYS, "{c}");
        let id = c["change_id"].as_str().expect("id");
        // The same answer `qualify` gives.
        let q = l.agent(&["qualify", "--change", id]).json();
        assert_eq!(c["qualified"], q["qualified"], "{id}");
        assert_eq!(c["revision"], q["revision"], "{id}");
        assert_eq!(c["repository"], "demo/basic");
        assert_eq!(c["agent_id"], "claude-1");
        assert_eq!(c["version"], 1);
    }
    let (v1, v2, v0) = (find(&o, &c1), find(&o, &c2), find(&o, &l.change_id));
    assert_eq!(
        (v1["state"].as_str(), v1["qualified"].as_bool()),
        (Some("qualified"), Some(true))
    );
    assert_eq!(
        (v2["state"].as_str(), v2["qualified"].as_bool()),
        (Some("working"), Some(false))
    );
    assert_eq!(v1["group"], "fix-add");
    assert_eq!(v1["title"], "Fix add (first try)");
    assert_eq!(v0["group"], Value::Null);
    assert_eq!(v1["receipts"].as_array().expect("receipts").len(), 1);
    assert_eq!(v2["receipts"], json!([]));
    let tests = |v: &Value| {
        v["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["step_id"] == "tests")
            .expect("tests")
            .clone()
    };
    assert_eq!(tests(v2)["state"], "failed");
    assert_eq!(tests(v2)["attempt"]["state"], "finished");
    // The live attempt: holder, fence, lease remaining (authority clock).
    let live = tests(v0);
    assert_eq!(live["task_id"], t0.as_str());
    assert_eq!(live["state"], "claimed");
    let at = &live["attempt"];
    assert_eq!(at["state"], "leased", "{live}");
    assert_eq!(at["agent_id"], "claude-1");
    assert_eq!(at["owner_id"], "alice");
    assert_eq!(at["fence"], 1);
    let left = at["lease_remaining_ms"].as_i64().expect("lease left");
    assert!(left > 0, "{at}");
    assert_eq!(
        left,
        at["lease_expires_ms"].as_i64().expect("expires") - o["now_ms"].as_i64().expect("now")
    );
    // Each filter.
    let only = |args: &[&str]| ids(&ls(&l.env, args));
    assert_eq!(only(&["--group", "fix-add"]), [c1.as_str(), c2.as_str()]);
    assert_eq!(only(&["--group", "other"]), Vec::<String>::new());
    assert_eq!(only(&["--change", &c2]), [c2.as_str()]);
    // A unique prefix, with or without `ch_`, names the same Change.
    assert_eq!(only(&["--change", &c2[..12]]), [c2.as_str()]);
    assert_eq!(only(&["--change", &c2[3..12]]), [c2.as_str()]);
    assert_eq!(only(&["--state", "failed"]), [c2.as_str()]);
    assert_eq!(only(&["--state", "qualified"]), [c1.as_str()]);
    assert_eq!(only(&["--state", "leased"]), [l.change_id.as_str()]);
    assert_eq!(only(&["--repo", "demo/basic"]).len(), 3);
    assert_eq!(only(&["--repo", "demo/other"]), Vec::<String>::new());
    assert_eq!(only(&["--agent", "claude-1"]).len(), 3);
    assert_eq!(only(&["--agent", "nobody"]), Vec::<String>::new());
    assert_eq!(
        only(&["--group", "fix-add", "--state", "working"]),
        [c2.as_str()]
    );
    l.env
        .run(&["ls", "--change", "ch_missing"])
        .error("not_found", 66);

    // One of the group lands (named by a prefix, as the operator may): the
    // other is stale. A prefix every Change shares is ambiguous.
    l.env
        .run(&["land", "--repo", "demo/basic", "--change", "ch_"])
        .error("ambiguous_id", 65);
    l.env
        .run(&[
            "land",
            "--update-worktree",
            "--repo",
            "demo/basic",
            "--change",
            &c1[..12],
        ])
        .json();
    let o = ls(&l.env, &["--group", "fix-add"]);
    let (v1, v2) = (find(&o, &c1), find(&o, &c2));
    assert_eq!(v1["state"], "landed", "{v1}");
    assert_eq!(v1["landings"][0]["state"], "landed");
    assert!(v1["landings"][0]["git_commit"].is_string(), "{v1}");
    assert_eq!(v2["state"], "stale", "{v2}");
    assert_eq!(only(&["--state", "stale"]), [c2.as_str()]);
    // On a terminal (a pty from util-linux `script`): the table, not JSON.
    if let Some(table) = on_a_terminal(&l.env, &["ls", "--group", "fix-add"]) {
        assert!(table.contains("GROUP"), "{table}");
        assert!(table.contains("fix-add"), "{table}");
        assert!(table.contains("stale"), "{table}");
        assert!(table.contains("landing v1 landed"), "{table}");
        assert!(!table.trim_start().starts_with('{'), "{table}");
    }
    // A Change of no group is never stale.
    assert_ne!(find(&ls(&l.env, &[]), &l.change_id)["state"], "stale");
}

#[test]
fn the_agent_sees_only_its_own_profile_s_changes_through_the_endpoint() {
    let l = Loop::basic("bwrap");
    // A second profile of the same repository, and a Change on it.
    l.env
        .run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "other",
            "--file",
            s(&repo_root().join("fixtures/workflows/basic.json")),
        ])
        .json();
    let ws = workspace(&l, "ws-other", "+");
    let elsewhere = open(&l, &ws, "other", Some("g"), "elsewhere");
    // Another owner's Change on the same profile.
    let bob = l.env.path("bob.token");
    l.env
        .run(&[
            "token",
            "issue",
            "--owner",
            "bob",
            "--agent",
            "b-1",
            "--out",
            s(&bob),
        ])
        .json();
    let ws_bob = workspace(&l, "ws-bob", "+");
    let mut c = l.env.cmd();
    c.arg("--token-file").arg(&bob).args([
        "change",
        "open",
        "--repo",
        "demo/basic",
        "--profile",
        "default",
        "--workspace",
        s(&ws_bob),
    ]);
    let bobs = crate::common::run_cmd(&mut c).json()["change_id"]
        .as_str()
        .expect("id")
        .to_owned();
    // The operator sees all three.
    assert_eq!(ids(&ls(&l.env, &[])).len(), 3);

    let srv = crate::common::workspace_collect::serve(&l);
    let url = format!("http://{}", srv.addr);
    let remote = |extra: &[&str]| {
        let mut a = vec![
            "ls",
            "--endpoint",
            &url,
            "--repository",
            "demo-basic",
            "--profile",
            "default",
        ];
        a.extend(extra);
        l.agent(&a)
    };
    let o = remote(&[]).json();
    assert_eq!(keys(&o), OVERVIEW_KEYS);
    assert_eq!(ids(&o), [l.change_id.as_str()], "{o}");
    assert_eq!(keys(&o["changes"][0]), CHANGE_KEYS);
    // Named, another profile's Change is not_found (404), as for qualify;
    // another owner's is refused as qualify refuses it.
    remote(&["--change", &elsewhere]).error("not_found", 66);
    let q = l.agent(&[
        "qualify",
        "--endpoint",
        &url,
        "--repository",
        "demo-basic",
        "--profile",
        "default",
        "--change",
        &bobs,
    ]);
    let code = serde_json::from_str::<Value>(q.stderr.trim()).expect("error")["error"].clone();
    let e = remote(&["--change", &bobs]);
    assert_eq!(e.code, q.code, "{e}");
    assert_eq!(
        serde_json::from_str::<Value>(e.stderr.trim()).expect("error")["error"],
        code
    );
    // A Change opened through the endpoint carries its group too.
    let via = |extra: &[&str]| {
        let mut a = vec![
            "change",
            "open",
            "--endpoint",
            &url,
            "--repository",
            "demo-basic",
            "--profile",
            "default",
        ];
        a.extend(extra);
        l.agent(&a)
    };
    let opened = via(&["--group", "remote-g"]).json();
    assert_eq!(opened["group"], "remote-g", "{opened}");
    via(&["--group", "no spaces"]).error("invalid_input", 65);
    let o = remote(&["--group", "remote-g"]).json();
    assert_eq!(ids(&o), [opened["change_id"].as_str().expect("id")]);
    assert_eq!(o["changes"][0]["state"], "open");
    // The wire operation itself.
    let tok = crate::common::workspace_collect::token(&l);
    let v = crate::common::workspace_collect::op(
        &srv.addr,
        &tok,
        json!({"operation": "overview", "group": "g"}),
    );
    assert_eq!(v["changes"], json!([]), "{v}");
    let r = crate::common::workspace_http::op(
        &srv.addr,
        &tok,
        json!({"operation": "overview", "limt": 3}),
    );
    assert_eq!(r.status, 400, "unknown member refused");
}

#[test]
fn watch_prints_a_json_line_per_refresh_and_survives_a_missing_and_locked_data_dir() {
    let env = TestEnv::new();
    let child = std::process::Command::new("timeout")
        .arg("4")
        .arg(bin())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg("--data-dir")
        .arg(&env.data_dir)
        .args(["ls", "--watch", "--interval-ms", "100"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // No data directory yet: each refresh is a typed error on stderr.
    std::thread::sleep(std::time::Duration::from_millis(600));
    env.run(&["init"]).json();
    // The data-dir lock held for a moment: the reads go on.
    let lock = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(env.data_dir.join("lock"))
        .expect("lock file");
    lock.lock().expect("hold the data-dir lock");
    std::thread::sleep(std::time::Duration::from_millis(800));
    drop(lock);
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(124), "ended by timeout only");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(lines.len() >= 2, "{stdout}");
    for v in &lines {
        assert_eq!(keys(v), OVERVIEW_KEYS);
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let errors: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert!(
        errors.iter().any(|e| e["error"] == "not_initialized"),
        "a missing data dir is reported: {stderr}"
    );
    // Caught mid-`init`, a refresh may see the authority being migrated.
    assert!(
        errors
            .iter()
            .all(|e| e["error"] == "not_initialized" || e["error"] == "schema_outdated"),
        "{stderr}"
    );
}
