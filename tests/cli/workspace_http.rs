//! The workspace task endpoint of `agent-task serve --workspace-config`:
//! the agent loop over HTTP with the agent token as bearer, and the typed
//! errors for missing/wrong bearers, bodies naming an actor or a path,
//! unknown operations and oversized bodies.

use crate::common::data_support::{Resp, req, req_ct};
use crate::common::task_support::{Setup, assertion};
use crate::common::workspace_http::*;
use agent_task::contract::ResultOutcome;
use serde_json::{Value, json};

/// The operation's result, after checking the envelope.
pub fn ok(r: Resp) -> Value {
    let v = r.ok();
    assert_eq!(v["capability"], "agentscm.agent-workflow-tasks/v1");
    assert_eq!(v["schema_version"], 1);
    v["result"].clone()
}

#[test]
fn workspace_http_agent_loop_with_the_agent_bearer() {
    let s = Setup::new();
    let (tests, _notes) = s.checkpoint();
    let srv = serve(&s);
    let tok = token(&s);
    let a = srv.addr.as_str();

    let caps = ok(op(a, &tok, json!({"operation": "capabilities"})));
    let mut ops: Vec<String> = caps["operations"]
        .as_array()
        .expect("ops")
        .iter()
        .map(|o| o.as_str().expect("s").to_owned())
        .collect();
    assert!(ops.contains(&"next".to_owned()) && ops.contains(&"claim".to_owned()));
    let sorted = {
        let mut x = ops.clone();
        x.sort();
        x
    };
    assert_eq!(ops, sorted);
    ops.clear();
    assert_eq!(caps["supported_schema_versions"], json!([1]));

    let n = ok(op(
        a,
        &tok,
        json!({"operation": "next", "change_id": s.change_id}),
    ));
    assert_eq!(n["next"], json!({"operation": "claim", "task_id": tests}));
    // The same library call as the CLI: identical answers.
    assert_eq!(n, s.agent(&["next", "--change", &s.change_id]).json());

    let ins = ok(op(
        a,
        &tok,
        json!({"operation": "instructions", "task_id": tests}),
    ));
    assert_eq!(ins["status"], "entrypoint");
    let sha = ins["entrypoint"]["references"][0]["expected_sha256"].clone();
    let mm = ok(op(
        a,
        &tok,
        json!({"operation": "instructions", "task_id": tests, "schema_version": 7}),
    ));
    assert_eq!(mm["status"], "schema_mismatch");
    let mm = ok(op(
        a,
        &tok,
        json!({"operation": "reference", "task_id": tests, "name": "testing-guide", "expected_schema_version": 9}),
    ));
    assert_eq!(mm["status"], "schema_mismatch");
    assert_eq!(mm["required_schema_version"], 9);
    assert_eq!(mm["supported_schema_versions"], json!([9]));
    assert_eq!(mm["server_schema_versions"], json!([1]));
    assert!(mm["action"].as_str().is_some_and(|x| !x.is_empty()));
    let r = ok(op(
        a,
        &tok,
        json!({"operation": "reference", "task_id": tests, "name": "testing-guide", "expected_sha256": sha}),
    ));
    assert_eq!(r["status"], "available");

    let claim = ok(op(
        a,
        &tok,
        json!({"operation": "claim", "task_id": tests, "request_id": "c-1", "lease_ms": 60000}),
    ));
    assert_eq!(claim["attempt"]["fence"], 1);
    let att = claim["attempt"]["attempt_id"]
        .as_str()
        .expect("att")
        .to_owned();
    // An identical retry returns the retained outcome.
    assert_eq!(
        ok(op(
            a,
            &tok,
            json!({"operation": "claim", "task_id": tests, "request_id": "c-1", "lease_ms": 60000})
        )),
        claim
    );
    let hb = ok(op(
        a,
        &tok,
        json!({"operation": "heartbeat", "attempt_id": att, "fence": 1, "request_id": "hb-1"}),
    ));
    assert_eq!(hb["state"], "leased");
    let st = ok(op(
        a,
        &tok,
        json!({"operation": "status", "task_id": tests, "attempt_id": att}),
    ));
    assert_eq!(st["state"], "leased");
    let asr = assertion(&claim, "r-1", &["tests-pass"], ResultOutcome::Passed);
    let res = ok(op(
        a,
        &tok,
        json!({"operation": "result", "assertion": asr}),
    ));
    assert_eq!(res["state"], "finished");
    assert_eq!(res["passing"], false);
    let rec = ok(op(
        a,
        &tok,
        json!({"operation": "recovery", "task_id": tests, "attempt_id": att}),
    ));
    assert!(rec.is_object());
    let st = s
        .agent(&["status", "--task", &tests, "--attempt", &att])
        .json();
    assert_eq!(
        st["state"], "finished",
        "the HTTP result is the CLI's state"
    );
}

#[test]
fn workspace_http_bad_input_is_typed() {
    let s = Setup::new();
    s.checkpoint();
    let srv = serve(&s);
    let tok = token(&s);
    let a = srv.addr.as_str();
    let body = json!({"operation": "next", "change_id": s.change_id}).to_string();
    let before = crate::common::snapshot_files(&s.env.data_dir);

    req(a, "POST", OPS, None, Some(&body)).error(401, "unauthorized");
    req(a, "POST", OPS, Some("wrong-token-0000"), Some(&body)).error(401, "unauthorized");
    op(
        a,
        &tok,
        json!({"operation": "next", "change_id": s.change_id, "owner_id": "mallory"}),
    )
    .error(403, "forbidden");
    op(
        a,
        &tok,
        json!({"operation": "next", "change_id": s.change_id, "workspace": "/etc"}),
    )
    .error(403, "forbidden");
    op(a, &tok, json!({"operation": "launch_rockets"})).error(400, "invalid_request");
    op(
        a,
        &tok,
        json!({"operation": "next", "change_id": s.change_id, "extra": 1}),
    )
    .error(400, "invalid_request");
    op(
        a,
        &tok,
        json!({"operation": "next", "change_id": "ch_unknown"}),
    )
    .error(404, "not_found");
    req(
        a,
        "POST",
        "/v1/hub/workspace/repositories/nope/profiles/default/agent-tasks",
        Some(&tok),
        Some(&body),
    )
    .error(404, "not_found");
    let big = format!(
        "{{\"operation\":\"capabilities\",\"pad\":\"{}\"}}",
        "x".repeat(1024 * 1024 + 10)
    );
    req(a, "POST", OPS, Some(&tok), Some(&big)).error(413, "request_too_large");

    assert_eq!(
        crate::common::snapshot_files(&s.env.data_dir),
        before,
        "refused requests change nothing"
    );

    // A revoked token is refused like an unknown one.
    s.env
        .run(&["token", "revoke", "--owner", "alice", "--agent", "claude-1"])
        .json();
    let after_revoke = crate::common::snapshot_files(&s.env.data_dir);
    op(a, &tok, json!({"operation": "capabilities"})).error(401, "unauthorized");
    assert_eq!(crate::common::snapshot_files(&s.env.data_dir), after_revoke);
}

/// Every operation through one profile's route that names another
/// profile's Change, task or attempt (same data directory, same token) is
/// `not_found`, before anything else it would check (a retry of a retained
/// request too), and changes nothing; the same requests through the right
/// profile work.
#[test]
fn workspace_http_requests_naming_another_profile_are_not_found() {
    let s = Setup::new();
    let fixture = crate::common::repo_root().join("fixtures/workflows/basic.json");
    s.env
        .run(&[
            "requirement",
            "install",
            "--repo",
            "demo/basic",
            "--profile",
            "other",
            "--file",
            fixture.to_str().expect("utf8"),
        ])
        .json();
    // Checkpointed after the install (which moves the policy epoch).
    let (tests, notes) = s.checkpoint();
    let digest =
        s.agent(&["requirements", "--change", &s.change_id]).json()["requirement_digest"].clone();
    let profile = |id: &str| {
        json!({"repository_id": "demo-basic", "profile_id": id, "native_repository": "demo/basic",
               "data_dir": s.env.data_dir, "target": "main", "requirement_digest": digest})
    };
    let cfg = s.env.path("two-profiles.json");
    std::fs::write(
        &cfg,
        json!({"version": 1, "agent_task_profiles": [profile("default"), profile("other")]})
            .to_string(),
    )
    .expect("write config");
    let srv = serve_config(&s, &cfg, &[], &[], 2);
    let a = srv.addr.as_str();
    let tok = token(&s);
    const OTHER: &str = "/v1/hub/workspace/repositories/demo-basic/profiles/other/agent-tasks";
    let other = |body: Value| req(a, "POST", OTHER, Some(&tok), Some(&body.to_string()));

    // Through its own profile: a claim and a heartbeat.
    let claim = ok(op(
        a,
        &tok,
        json!({"operation": "claim", "task_id": tests, "request_id": "c-1", "lease_ms": 60000}),
    ));
    let att = claim["attempt"]["attempt_id"]
        .as_str()
        .expect("att")
        .to_owned();
    let hb = json!({"operation": "heartbeat", "attempt_id": att, "fence": 1, "request_id": "hb-1"});
    ok(op(a, &tok, hb.clone()));
    // A manifest route request, refused on its head.
    let manifest = format!("{OTHER}/changes/{}/manifest", s.change_id);

    let before = crate::common::snapshot_files(&s.env.data_dir);
    let change = json!(s.change_id);
    let asr = assertion(&claim, "r-1", &["tests-pass"], ResultOutcome::Passed);
    let refused = [
        json!({"operation": "next", "change_id": change}),
        json!({"operation": "requirements", "change_id": change}),
        json!({"operation": "qualification", "change_id": change}),
        json!({"operation": "explain", "change_id": change}),
        json!({"operation": "collector_finalize", "change_id": change}),
        json!({"operation": "change_subject", "change_id": change}),
        json!({"operation": "checkpoint_commit", "change_id": change, "revision": "0".repeat(64)}),
        json!({"operation": "instructions", "task_id": tests}),
        json!({"operation": "reference", "task_id": tests, "name": "testing-guide"}),
        json!({"operation": "claim", "task_id": notes, "request_id": "c-2"}),
        // A retry of a retained request is refused like a new one.
        json!({"operation": "claim", "task_id": tests, "request_id": "c-1", "lease_ms": 60000}),
        hb.clone(),
        json!({"operation": "heartbeat", "attempt_id": att, "fence": 1, "request_id": "hb-2"}),
        json!({"operation": "cancel", "attempt_id": att, "fence": 1, "request_id": "x-1"}),
        json!({"operation": "reconcile", "attempt_id": att, "fence": 1, "request_id": "x-2"}),
        json!({"operation": "result", "assertion": asr}),
        json!({"operation": "status", "task_id": tests, "attempt_id": att}),
        json!({"operation": "recovery", "task_id": tests, "attempt_id": att}),
        json!({"operation": "collector_claim", "task_id": notes, "request_id": "cc-1"}),
        json!({"operation": "collector_descriptor", "attempt_id": att}),
    ];
    for body in &refused {
        let e = other(body.clone()).error(404, "not_found");
        assert_eq!(
            e["message"], "the change or task is not part of this workspace profile",
            "{body}: {e}"
        );
    }
    req_ct(
        a,
        "POST",
        &manifest,
        Some(&tok),
        Some("{}"),
        "application/json",
    )
    .error(404, "not_found");
    assert_eq!(
        crate::common::snapshot_files(&s.env.data_dir),
        before,
        "refused requests change nothing"
    );

    // The same requests through the right profile are answered.
    assert_eq!(ok(op(a, &tok, hb))["state"], "leased");
    let st = ok(op(
        a,
        &tok,
        json!({"operation": "status", "task_id": tests, "attempt_id": att}),
    ));
    assert_eq!(st["state"], "leased");
    let n = ok(op(
        a,
        &tok,
        json!({"operation": "next", "change_id": change}),
    ));
    assert_eq!(n["change_id"], change);
}

/// The authorize step reuses an admission for a moment (`GateCache`);
/// the check inside each operation's unit of work is the revocation
/// guard. Heartbeats race a `token revoke`: every heartbeat sent after the
/// revocation returned is `unauthorized`, at once, though the gate
/// admitted the same bearer a moment before; none changes the attempt.
#[test]
fn a_revocation_racing_heartbeats_refuses_every_later_one() {
    let s = Setup::new();
    let (tests, _) = s.checkpoint();
    let srv = serve(&s);
    let tok = token(&s);
    let a = srv.addr.clone();
    let claim = ok(op(
        &a,
        &tok,
        json!({"operation": "claim", "task_id": tests, "request_id": "c-1", "lease_ms": 60000}),
    ));
    let att = claim["attempt"]["attempt_id"]
        .as_str()
        .expect("attempt")
        .to_owned();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let racer = {
        let (a, tok, att, stop) = (a.clone(), tok.clone(), att.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                n += 1;
                let r = op(
                    &a,
                    &tok,
                    json!({"operation": "heartbeat", "attempt_id": att, "fence": 1,
                           "request_id": format!("hb-race-{n}")}),
                );
                assert!(r.status == 200 || r.status == 401, "{:?}", r.status);
            }
        })
    };
    // Let the gate admit the bearer (and keep admitting it) first.
    std::thread::sleep(std::time::Duration::from_millis(200));
    s.env
        .run(&["token", "revoke", "--owner", "alice", "--agent", "claude-1"])
        .json();
    // Sent right after the revocation, inside the gate's reuse window.
    for i in 0..20 {
        op(
            &a,
            &tok,
            json!({"operation": "heartbeat", "attempt_id": att, "fence": 1,
                   "request_id": format!("hb-after-{i}")}),
        )
        .error(401, "unauthorized");
        op(&a, &tok, json!({"operation": "capabilities"})).error(401, "unauthorized");
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    racer.join().expect("racer");
    // The attempt's lease is where the last admitted heartbeat left it:
    // the refused ones extended nothing.
    let lease = || {
        s.env.run(&["ls", "--json"]).json()["changes"][0]["tasks"][0]["attempt"]["lease_expires_ms"]
            .clone()
    };
    let before = lease();
    assert!(before.is_u64(), "{before}");
    std::thread::sleep(std::time::Duration::from_millis(20));
    op(
        &a,
        &tok,
        json!({"operation": "heartbeat", "attempt_id": att, "fence": 1, "request_id": "hb-last"}),
    )
    .error(401, "unauthorized");
    assert_eq!(lease(), before);
}
