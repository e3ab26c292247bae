//! `explain` and the one next action (issue 31, items 2 and 3), through
//! the real binary: a failing test explained from its signed record (exit
//! code, stderr tail, runtime identity), hostile test output shown inert
//! in text and JSON, a task never collected says it has no record, a
//! qualified Change explains nothing; the agent reads its explanation
//! through the endpoint and MCP; `qualify`, `next` and the Stop hook name
//! the same next action in every state the spec lists, and the `hint`
//! names a command that exists.

use crate::common::collect_flow::Loop;
use crate::common::hook_stop;
use crate::common::mcp_client::Client;
use crate::common::workspace_collect::{serve, token};
use serde_json::{Value, json};

/// A test command whose output is hostile: an escape sequence, a bell,
/// invalid UTF-8 and HTML on stderr, and a wrong sum.
fn set_hostile(l: &Loop) {
    std::fs::write(
        l.workspace.join("add.sh"),
        "#!/bin/sh\nprintf '\\033[31mRED\\007 <script>alert(1)</script> \\377\\376 end\\n' >&2\necho $(($1 - $2))\n",
    )
    .expect("write");
}

fn explain_json(l: &Loop, extra: &[&str]) -> Value {
    let mut args = vec!["explain", "--change", &l.change_id, "--json"];
    args.extend(extra);
    let o = l.agent(&args);
    assert!(!o.stdout.contains('\u{1b}'), "raw escape in JSON: {o}");
    o.json()
}

fn explain_text(l: &Loop) -> String {
    let o = l.agent(&["explain", "--change", &l.change_id, "--text"]);
    assert_eq!(o.code, 0, "{o}");
    o.stdout
}

/// `(operation, task_id)` of a `next`.
fn op(n: &Value) -> (String, Option<String>) {
    (
        n["operation"].as_str().expect("operation").to_owned(),
        n["task_id"].as_str().map(str::to_owned),
    )
}

/// The next action as `qualify`, the `next` command and the Stop hook
/// each name it; asserts they agree and returns it with the `next`
/// command's output (its `hint`).
fn agree(l: &Loop, state: &str) -> ((String, Option<String>), Value) {
    let q = l.qualify();
    let n = l.agent(&["next", "--change", &l.change_id]).json();
    let p = hook_stop::payload("claude", false, &l.workspace);
    let h = hook_stop::hook(l, "claude", &p, &[]);
    let hv: Value = serde_json::from_str(&h.stdout).expect("hook json");
    let hook_next = if hv.get("decision").is_some() {
        let d = hook_stop::blocked("claude", &h);
        op(&d["next"])
    } else {
        ("none".to_owned(), None)
    };
    let want = op(&q["next"]);
    let got = op(&n["next"]);
    if want.0 == "none" && got.0 == "claim" {
        // The `next` command's documented superset: where the rule names
        // nothing, the first optional task the agent can claim itself.
        let t = n["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["task_id"].as_str() == got.1.as_deref())
            .expect("the named task");
        assert_eq!(t["required"], false, "{state}: {n}");
    } else {
        assert_eq!(got, want, "{state}: next vs qualify: {n} / {q}");
    }
    assert_eq!(hook_next, want, "{state}: hook vs qualify: {hv} / {q}");
    // hint: beside next, never inside it; a command of this CLI.
    assert!(n["next"].get("hint").is_none(), "{n}");
    match n["hint"].as_str() {
        Some(hint) => {
            let mut c = l.env.cmd();
            c.args(hint.split_whitespace().skip(1)).arg("--help");
            let o = crate::common::run_cmd(&mut c);
            assert_eq!(
                o.code, 0,
                "{state}: the hint {hint:?} is not a command: {o}"
            );
        }
        None => assert_eq!(got.0, "none", "{state}: {n}"),
    }
    (want, n)
}

#[test]
fn qualify_next_and_the_stop_hook_agree_in_every_state_and_explain_reads_the_signed_record() {
    let l = Loop::basic("bwrap");
    let some = |t: &str| Some(t.to_owned());

    // No checkpoint: checkpoint.
    let (a, _) = agree(&l, "no checkpoint");
    assert_eq!(a, ("checkpoint".into(), None));
    let e = explain_json(&l, &[]);
    assert_eq!(e["version"], 0, "{e}");
    assert_eq!(e["tasks"], json!([]), "{e}");

    // Pending: collector_claim; explain says no record was imported.
    let t1 = l.checkpoint();
    let (a, n) = agree(&l, "pending");
    assert_eq!(a, ("collector_claim".into(), some(&t1)));
    assert_eq!(n["hint"], format!("agent-task collector-claim {t1}"), "{n}");
    let e = explain_json(&l, &[]);
    let t = &e["tasks"][0];
    assert_eq!(t["task_id"], t1.as_str(), "{e}");
    assert_eq!(t["codes"], json!(["task_pending"]), "{e}");
    assert_eq!(t["record_imported"], false, "{e}");
    assert_eq!(t["record"], Value::Null, "{e}");
    assert!(
        explain_text(&l).contains("no signed record was imported"),
        "{e}"
    );

    // Claimed under a live lease: none (the attempt is in progress).
    let (_, d1) = l.claim(&t1, "d1.json");
    let (a, n) = agree(&l, "claimed");
    assert_eq!(a, ("none".into(), None));
    assert_eq!(
        n["tasks"][0]["next"]["reason"], "attempt_in_progress",
        "{n}"
    );

    // Cancelled: uncertain until reconciled.
    let att = d1["attempt_id"].as_str().expect("attempt").to_owned();
    let fence = d1["fence"].to_string();
    l.agent(&[
        "cancel",
        "--attempt",
        &att,
        "--fence",
        &fence,
        "--request-id",
        "x-cancel",
    ])
    .json();
    let (a, _) = agree(&l, "uncertain");
    assert_eq!(a, ("reconcile".into(), some(&t1)));

    // A new subject while the older attempt is unresolved: reconcile the
    // older task, not a claim the claim path would refuse.
    set_hostile(&l);
    let t2 = l.checkpoint();
    assert_ne!(t2, t1);
    let (a, _) = agree(&l, "prior unresolved");
    assert_eq!(a, ("reconcile".into(), some(&t1)));
    l.agent(&[
        "reconcile",
        "--attempt",
        &att,
        "--fence",
        &fence,
        "--request-id",
        "x-reconcile",
    ])
    .json();
    let (a, _) = agree(&l, "pending again");
    assert_eq!(a, ("collector_claim".into(), some(&t2)));

    // A failing run: none, and explain shows the signed record.
    let (d2, _) = l.claim(&t2, "d2.json");
    let c = l.collect(&d2).json();
    assert_eq!(c["outcome"], "failed", "{c}");
    let (a, _) = agree(&l, "failed");
    assert_eq!(a, ("none".into(), None));
    let e = explain_json(&l, &[]);
    assert_eq!(e["qualified"], false, "{e}");
    assert_eq!(e["next"], json!({"operation": "none"}), "{e}");
    assert_eq!(e["hint"], Value::Null, "{e}");
    let t = &e["tasks"][0];
    assert_eq!(t["task_id"], t2.as_str(), "{e}");
    assert_eq!(t["state"], "failed", "{e}");
    assert_eq!(t["codes"], json!(["collector_not_passed"]), "{e}");
    assert_eq!(t["record_imported"], true, "{e}");
    let r = &t["record"];
    assert_eq!(r["kind"], "command", "{e}");
    assert_eq!(r["outcome"], "failed", "{e}");
    assert_eq!(r["run"]["exit_code"], 1, "{e}");
    assert_eq!(r["run"]["timed_out"], false, "{e}");
    assert!(r["run"]["duration_ms"].is_u64(), "{e}");
    assert_eq!(r["runtime"]["runtime"], "bwrap", "{e}");
    assert!(r["runtime"]["digest"].is_string(), "{e}");
    assert_eq!(
        r["runtime"]["agent_task_version"],
        env!("CARGO_PKG_VERSION"),
        "{e}"
    );
    assert_eq!(r["review"], Value::Null, "{e}");
    let tail = r["run"]["stderr_tail"].as_str().expect("tail");
    assert!(tail.contains("FAIL: 2 + 3 gave -1"), "{tail:?}");
    // The JSON carries the bytes as escaped data: the escape is a JSON
    // escape, the invalid UTF-8 replaced, the HTML a string.
    assert!(tail.contains("\u{1b}[31mRED\u{7}"), "{tail:?}");
    assert!(tail.contains("<script>alert(1)</script>"), "{tail:?}");
    assert!(
        tail.contains('\u{fffd}'),
        "invalid UTF-8 replaced: {tail:?}"
    );
    // Narrowed to the task: the same entry; an unknown task is not_found.
    let one = explain_json(&l, &["--task", &t2]);
    assert_eq!(one["tasks"], e["tasks"], "{one}");
    let o = l.agent(&["explain", "--change", &l.change_id, "--task", "nope"]);
    o.error("not_found", 66);
    // The operator, locally and without a token, reads the same
    // explanation, naming the Change and the task by unique prefixes.
    let short_change = &l.change_id["ch_".len().."ch_".len() + 8];
    let short_task = &t2[.."task_".len() + 8];
    let op_e = l
        .env
        .run(&["explain", "--change", short_change, "--json"])
        .json();
    assert_eq!(op_e, e, "{op_e}");
    let op_one = l
        .env
        .run(&[
            "explain",
            "--change",
            short_change,
            "--task",
            short_task,
            "--json",
        ])
        .json();
    assert_eq!(op_one["tasks"], e["tasks"], "{op_one}");
    l.env
        .run(&["explain", "--change", "ch_ffffffff", "--json"])
        .error("not_found", 66);
    // The text block: exit code and tail, every control character inert.
    let text = explain_text(&l);
    assert!(text.contains("exit code 1"), "{text}");
    assert!(text.contains("FAIL: 2 + 3 gave -1"), "{text}");
    assert!(text.contains("\\x1b[31mRED\\x07"), "{text}");
    assert!(text.contains("<script>alert(1)</script>"), "{text}");
    assert!(
        !text
            .chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{text:?}"
    );
    assert!(text.contains("runtime bwrap"), "{text}");
    // The Stop hook's sentence points to explain.
    let p = hook_stop::payload("claude", false, &l.workspace);
    let d = hook_stop::blocked("claude", &hook_stop::hook(&l, "claude", &p, &[]));
    assert!(
        d["next_action"]
            .as_str()
            .is_some_and(|s| s.contains(&format!("agent-task explain --change {}", l.change_id))),
        "{d}"
    );

    // Fixed and passing: collector_finalize until the receipt, then the
    // Change qualifies and explain has nothing to explain.
    l.set_add("+");
    let t3 = l.checkpoint();
    let (d3, _) = l.claim(&t3, "d3.json");
    assert_eq!(l.collect(&d3).json()["outcome"], "passed");
    let (a, n) = agree(&l, "passed, no receipt");
    assert_eq!(a, ("collector_finalize".into(), None));
    assert_eq!(
        n["hint"],
        format!("agent-task finalize --change {}", l.change_id),
        "{n}"
    );
    let e = explain_json(&l, &[]);
    assert_eq!(e["tasks"][0]["codes"], json!(["receipt_missing"]), "{e}");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let (a, _) = agree(&l, "qualified");
    assert_eq!(a, ("none".into(), None));
    let e = explain_json(&l, &[]);
    assert_eq!(e["qualified"], true, "{e}");
    assert_eq!(e["tasks"], json!([]), "{e}");
    assert!(explain_text(&l).contains("qualifies"), "{e}");
}

#[test]
fn the_agent_reads_its_explanation_through_the_endpoint_and_mcp() {
    let l = Loop::basic("bwrap");
    set_hostile(&l);
    let t = l.checkpoint();
    let (d, _) = l.claim(&t, "d.json");
    assert_eq!(l.collect(&d).json()["outcome"], "failed");
    let local = explain_json(&l, &[]);
    let srv = serve(&l);
    let url = format!("http://{}", srv.addr);
    let o = l.agent(&[
        "explain",
        "--endpoint",
        &url,
        "--repository",
        "demo-basic",
        "--profile",
        "default",
        "--change",
        &l.change_id,
        "--json",
    ]);
    assert!(!o.stdout.contains('\u{1b}'), "{o}");
    assert_eq!(o.json(), local, "the endpoint and the local read agree");
    // Another profile's route: not_found, as qualification.
    let other = l.agent(&[
        "explain",
        "--endpoint",
        &url,
        "--repository",
        "demo-basic",
        "--profile",
        "other",
        "--change",
        &l.change_id,
        "--json",
    ]);
    assert_ne!(other.code, 0, "{other}");
    assert!(other.stderr.contains("not_found"), "{other}");

    let mut c = Client {
        addr: &srv.addr,
        token: token(&l),
        next_id: 0,
        version: None,
    };
    c.call(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}),
    );
    c.version = Some("2025-11-25".into());
    let tools = c.call("tools/list", json!({}));
    assert!(
        tools["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .any(|t| t["name"] == "explain"),
        "{tools}"
    );
    let m = c.tool("explain", json!({"change_id": l.change_id}));
    assert_eq!(m, local, "MCP and the local read agree");
    let one = c.tool("explain", json!({"change_id": l.change_id, "task_id": t}));
    assert_eq!(one["tasks"][0]["record"]["run"]["exit_code"], 1, "{one}");
}
