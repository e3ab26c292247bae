//! The read-only Stop hooks through the real binary, fed the recorded
//! Claude Code and Codex payloads (`fixtures/hooks/`), their outputs
//! validated against the agents' output schemas; every store byte for
//! byte unchanged by the hook.

use crate::common::collect_flow::Loop;
use crate::common::hook_stop::*;
use crate::common::workspace_collect::serve;
use crate::common::{run_cmd, snapshot_files};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpListener;

/// The fixtures follow the agents' published shapes (fixtures/hooks/README.md),
/// and the output schemas refuse what the agents refuse, so validating the
/// hook's outputs against them means something.
#[test]
fn hook_fixtures_follow_the_agents_schemas() {
    for agent in ["claude", "codex"] {
        let p: Value =
            serde_json::from_slice(&fixture(&format!("{agent}-stop.json"))).expect("json");
        let input = validator(&format!("{agent}-stop-input.schema.json"));
        assert!(input.is_valid(&p), "{agent} fixture");
        let mut no_active = p.clone();
        no_active
            .as_object_mut()
            .expect("object")
            .remove("stop_hook_active");
        assert!(
            !input.is_valid(&no_active),
            "{agent}: stop_hook_active is required"
        );

        let output = validator(&format!("{agent}-stop-output.schema.json"));
        for ok in [
            json!({}),
            json!({"decision": "block", "reason": "run the tests"}),
            json!({"systemMessage": "note"}),
            json!({"continue": false, "stopReason": "done"}),
        ] {
            assert!(output.is_valid(&ok), "{agent} accepts {ok}");
        }
        for bad in [
            json!({"decision": "block"}),
            json!({"decision": "block", "reason": ""}),
            json!({"decision": "block", "reason": " \n\t"}),
            json!({"decision": "deny", "reason": "x"}),
            json!({"decision": "block", "reason": "x", "extra": 1}),
            json!({"continue": "no"}),
            json!([]),
        ] {
            assert!(!output.is_valid(&bad), "{agent} refuses {bad}");
        }
    }
    // Codex: a closed input with Codex's five permission modes, nullable
    // transcript and message, and nullable output strings.
    let codex_in = validator("codex-stop-input.schema.json");
    let mut p: Value = serde_json::from_slice(&fixture("codex-stop.json")).expect("json");
    p["permission_mode"] = json!("workspace-write");
    assert!(
        !codex_in.is_valid(&p),
        "a sandbox mode is not a permission mode"
    );
    p["permission_mode"] = json!("bypassPermissions");
    p["last_assistant_message"] = json!("done");
    p["transcript_path"] = json!("/tmp/rollout.jsonl");
    assert!(codex_in.is_valid(&p));
    p["extra"] = json!(1);
    assert!(!codex_in.is_valid(&p), "Codex's payload is closed");
    let codex_out = validator("codex-stop-output.schema.json");
    assert!(codex_out.is_valid(
        &json!({"decision": null, "reason": null, "stopReason": null, "systemMessage": null})
    ));
    assert!(!codex_out.is_valid(&json!({"terminalSequence": "\u{7}"})));
    // Claude Code: an open input (it keeps adding fields) and the fields
    // its output type adds.
    let claude_in = validator("claude-stop-input.schema.json");
    let mut p: Value = serde_json::from_slice(&fixture("claude-stop.json")).expect("json");
    p["a_field_from_a_newer_claude_code"] = json!(true);
    assert!(claude_in.is_valid(&p));
    let claude_out = validator("claude-stop-output.schema.json");
    assert!(claude_out.is_valid(
        &json!({"hookSpecificOutput": {"hookEventName": "Stop", "additionalContext": "x"}})
    ));
    assert!(!claude_out.is_valid(&json!({"hookSpecificOutput": {"hookEventName": "PreToolUse"}})));
}

fn remote(addr: &str) -> Vec<String> {
    vec![
        "--endpoint".into(),
        format!("http://{addr}"),
        "--repository".into(),
        "demo-basic".into(),
        "--profile".into(),
        "default".into(),
    ]
}

#[test]
fn hook_stop_blocks_until_qualified_then_passes_local_and_remote() {
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let task = l.checkpoint();
    let srv = serve(&l);
    let rargs = remote(&srv.addr);
    let rargs: Vec<&str> = rargs.iter().map(String::as_str).collect();
    let before = snapshot_files(&l.env.data_dir);
    for agent in ["claude", "codex"] {
        let p = payload(agent, false, &l.workspace);
        let d = blocked(agent, &hook(&l, agent, &p, &[]));
        assert_eq!(
            d["next"],
            json!({"operation": "collector_claim", "task_id": task})
        );
        assert_eq!(d["failures"][0]["task_id"], task.as_str());
        let d = blocked(agent, &hook(&l, agent, &p, &rargs));
        assert_eq!(
            d["next"],
            json!({"operation": "collector_claim", "task_id": task})
        );
    }
    assert_eq!(
        snapshot_files(&l.env.data_dir),
        before,
        "the hook wrote nothing to the stores"
    );

    // The agent does the work the hook named; the hook never does it.
    let (d1, _) = l.claim(&task, "d1.json");
    assert_eq!(l.collect(&d1).json()["outcome"], "passed");
    let d = blocked(
        "claude",
        &hook(&l, "claude", &payload("claude", true, &l.workspace), &[]),
    );
    assert_eq!(d["next"], json!({"operation": "collector_finalize"}));
    l.agent(&["finalize", "--change", &l.change_id]).json();
    let before = snapshot_files(&l.env.data_dir);
    for agent in ["claude", "codex"] {
        passed(
            agent,
            &hook(&l, agent, &payload(agent, true, &l.workspace), &[]),
        );
        passed(
            agent,
            &hook(&l, agent, &payload(agent, false, &l.workspace), &rargs),
        );
    }
    assert_eq!(snapshot_files(&l.env.data_dir), before);

    // Uncheckpointed edits block with checkpoint, locally and remotely.
    std::fs::write(l.workspace.join("notes.txt"), "late edit\n").expect("edit");
    for args in [&[][..], &rargs[..]] {
        let d = blocked(
            "codex",
            &hook(&l, "codex", &payload("codex", false, &l.workspace), args),
        );
        assert_eq!(d["next"], json!({"operation": "checkpoint"}));
        assert_eq!(
            d["failures"],
            json!([{"code": "workspace_not_checkpointed"}])
        );
    }
    std::fs::remove_file(l.workspace.join("notes.txt")).expect("rm");
    passed(
        "claude",
        &hook(&l, "claude", &payload("claude", false, &l.workspace), &[]),
    );

    // A revoked token: 401 remotely, refused locally; both block.
    l.env
        .run(&["token", "revoke", "--owner", "alice", "--agent", "claude-1"])
        .json();
    let before = snapshot_files(&l.env.data_dir);
    for args in [&[][..], &rargs[..]] {
        let d = blocked(
            "claude",
            &hook(&l, "claude", &payload("claude", false, &l.workspace), args),
        );
        assert_eq!(d["failures"], json!([{"code": "token_rejected"}]));
        assert_eq!(d["next"], json!({"operation": "none"}));
    }
    assert_eq!(snapshot_files(&l.env.data_dir), before);
    drop(srv);
    // Offline endpoint.
    let d = blocked(
        "claude",
        &hook(
            &l,
            "claude",
            &payload("claude", false, &l.workspace),
            &rargs,
        ),
    );
    assert_eq!(d["failures"], json!([{"code": "service_request_failed"}]));
}

/// A one-shot fake endpoint answering `status` and `body`; `on_request`
/// runs before it answers.
fn fake(status: u16, body: Vec<u8>, on_request: impl FnOnce() + Send + 'static) -> String {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("addr").to_string();
    std::thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let mut buf = [0u8; 65536];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                match s.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
            on_request();
            let head = format!(
                "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    addr
}

#[test]
fn hook_stop_bad_input_blocks_or_exits_1_and_changes_nothing() {
    let l = Loop::basic("bwrap");
    let task = l.checkpoint();
    let q = l.qualify();
    let rev = q["revision"].as_str().expect("rev").to_owned();
    let before = snapshot_files(&l.env.data_dir);
    let p = payload("claude", false, &l.workspace);

    // Malformed stdin: exit 1, nothing on stdout that blocks.
    for bad in [&b"not json"[..], b"[]", br#"{"session_id":"s"}"#] {
        let o = hook(&l, "claude", bad, &[]);
        assert_eq!(o.code, 1, "{o:?}");
        assert!(!o.stdout.contains("block"));
    }
    // Codex fields are required for the Codex hook.
    assert_eq!(hook(&l, "codex", &fixture("claude-stop.json"), &[]).code, 1);

    // A well-formed answer with the wrong revision, a malformed one, an
    // oversized one: malformed_response.
    let good = |revision: &str| {
        json!({"capability": "agentscm.agent-workflow-tasks/v1", "schema_version": 1, "operation": "qualification",
        "result": {"qualified": true, "subject_current": true, "receipt_digest": rev, "revision": revision, "tasks": [], "failures": [], "next": {"operation": "none"}}})
    };
    let wrong = "0".repeat(64);
    let cases: Vec<(u16, Vec<u8>, &str)> = vec![
        (200, good(&wrong).to_string().into_bytes(), "malformed_response"),
        (200, b"{\"capability\":1}".to_vec(), "malformed_response"),
        (200, format!("{{\"pad\":\"{}\"}}", "x".repeat(300 * 1024)).into_bytes(), "malformed_response"),
        (200, json!({"capability": "agentscm.agent-workflow-tasks/v1", "schema_version": 1, "operation": "qualification",
                     "result": {"qualified": false, "subject_current": true, "receipt_digest": null, "revision": rev, "tasks": [], "failures": [],
                                "next": {"operation": "run_shell", "task_id": task}}}).to_string().into_bytes(), "malformed_response"),
        (403, b"{\"error\":\"forbidden\",\"message\":\"/secret/path leaked\"}".to_vec(), "token_rejected"),
        (500, b"{}".to_vec(), "service_request_failed"),
    ];
    for (status, body, code) in cases {
        let addr = fake(status, body, || {});
        let o = hook(
            &l,
            "claude",
            &p,
            &remote(&addr).iter().map(String::as_str).collect::<Vec<_>>(),
        );
        let d = blocked("claude", &o);
        assert_eq!(
            d["failures"],
            json!([{"code": code}]),
            "status {status}: {o:?}"
        );
        assert!(
            !o.stdout.contains("/secret/path"),
            "no server text in the feedback"
        );
    }
    // A valid qualified answer passes only when nothing moved meanwhile.
    let addr = fake(200, good(&rev).to_string().into_bytes(), || {});
    passed(
        "claude",
        &hook(
            &l,
            "claude",
            &p,
            &remote(&addr).iter().map(String::as_str).collect::<Vec<_>>(),
        ),
    );
    let ws = l.workspace.clone();
    let addr = fake(200, good(&rev).to_string().into_bytes(), move || {
        std::fs::write(ws.join("during.txt"), "x").expect("write during");
    });
    let d = blocked(
        "claude",
        &hook(
            &l,
            "claude",
            &p,
            &remote(&addr).iter().map(String::as_str).collect::<Vec<_>>(),
        ),
    );
    assert_eq!(d["failures"], json!([{"code": "changed_during_run"}]));
    assert_eq!(d["next"], json!({"operation": "checkpoint"}));
    std::fs::remove_file(l.workspace.join("during.txt")).expect("rm");
    // A block is a block whatever moved meanwhile: the workspace is not
    // scanned again, and the answer's own failures are the feedback (the
    // agent's next attempt scans first and asks for a checkpoint).
    let not_yet = json!({"capability": "agentscm.agent-workflow-tasks/v1", "schema_version": 1, "operation": "qualification",
        "result": {"qualified": false, "subject_current": true, "receipt_digest": null, "revision": rev, "tasks": [],
                   "failures": [{"task_id": task, "code": "task_pending"}],
                   "next": {"operation": "collector_claim", "task_id": task}}});
    let ws = l.workspace.clone();
    let addr = fake(200, not_yet.to_string().into_bytes(), move || {
        std::fs::write(ws.join("during.txt"), "x").expect("write during");
    });
    let remote_args = remote(&addr);
    let args: Vec<&str> = remote_args.iter().map(String::as_str).collect();
    let d = blocked("claude", &hook(&l, "claude", &p, &args));
    assert_eq!(
        d["failures"],
        json!([{"task_id": task, "code": "task_pending"}])
    );
    assert_eq!(
        d["next"],
        json!({"operation": "collector_claim", "task_id": task})
    );
    let d = blocked("claude", &hook(&l, "claude", &p, &args));
    assert_eq!(
        d["failures"],
        json!([{"code": "workspace_not_checkpointed"}])
    );
    assert_eq!(d["next"], json!({"operation": "checkpoint"}));
    std::fs::remove_file(l.workspace.join("during.txt")).expect("rm");
    assert_eq!(
        snapshot_files(&l.env.data_dir),
        before,
        "no store byte changed"
    );

    // Missing stores block and create nothing.
    let missing = l.env.path("no-such-data");
    let mut c = l.env.bare_cmd();
    c.arg("--data-dir")
        .arg(&missing)
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "task-stop",
            &l.change_id,
            "--workspace",
            l.workspace.to_str().expect("utf8"),
        ])
        .write_stdin(p.clone());
    let d = blocked("claude", &run_cmd(&mut c));
    assert_eq!(d["failures"], json!([{"code": "local_store_unavailable"}]));
    assert!(!missing.exists());

    // A token file that is absent, relative or not private blocks as
    // `token_unavailable`, though the workspace walk has already started
    // (it is abandoned), and changes nothing; so does naming the whole
    // file system as the workspace.
    let loose = l.env.path("loose-token");
    std::fs::copy(&l.token, &loose).expect("copy token");
    std::fs::set_permissions(&loose, std::os::unix::fs::PermissionsExt::from_mode(0o644))
        .expect("chmod");
    for (token, workspace) in [
        (l.env.path("no-such-token"), l.workspace.clone()),
        (
            std::path::PathBuf::from("relative-token"),
            l.workspace.clone(),
        ),
        (loose.clone(), l.workspace.clone()),
        (l.env.path("no-such-token"), std::path::PathBuf::from("/")),
    ] {
        let mut c = l.env.bare_cmd();
        c.arg("--data-dir")
            .arg(&l.env.data_dir)
            .arg("--token-file")
            .arg(&token)
            .args(["task-stop", &l.change_id, "--workspace"])
            .arg(&workspace)
            .write_stdin(p.clone());
        let d = blocked("claude", &run_cmd(&mut c));
        assert_eq!(
            d["failures"],
            json!([{"code": "token_unavailable"}]),
            "{token:?} {workspace:?}"
        );
    }
    assert_eq!(
        snapshot_files(&l.env.data_dir),
        before,
        "no store byte changed"
    );

    // Eight consecutive continuations, then the hook lets the agent stop
    // without running qualification.
    let active = payload("claude", true, &l.workspace);
    blocked("claude", &hook(&l, "claude", &p, &[]));
    for _ in 1..8 {
        blocked("claude", &hook(&l, "claude", &active, &[]));
    }
    let v = out("claude", &hook(&l, "claude", &active, &[]));
    assert!(v.get("decision").is_none(), "{v}");
    assert!(
        v["systemMessage"]
            .as_str()
            .is_some_and(|m| m.contains("8 continuations"))
    );
    // A fresh stop (stop_hook_active false) starts counting again.
    blocked("claude", &hook(&l, "claude", &p, &[]));
    // An unreadable counter ends continuation without qualification.
    let dir = l.env.path(".local/state/agent-task/stop-hooks");
    for e in std::fs::read_dir(&dir).expect("counter dir") {
        std::fs::write(e.expect("entry").path(), "garbage").expect("w");
    }
    let v = out("claude", &hook(&l, "claude", &active, &[]));
    assert!(v.get("decision").is_none(), "{v}");
    assert_eq!(snapshot_files(&l.env.data_dir), before);
}
