//! A served workspace endpoint and collects through it. Moved from
//! `workspace_collect.rs`, whose tests and others share it.

use crate::common::collect_flow::Loop;
use crate::common::data_support::req;
use crate::common::run_cmd;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};

/// Serves `serve --workspace-config` for the loop's data dir (shared with
/// the Stop hook tests).
pub fn serve(l: &Loop) -> crate::common::workspace_http::Served {
    let r = l.agent(&["requirements", "--change", &l.change_id]).json();
    let cfg = json!({"version": 1, "agent_task_profiles": [{
        "repository_id": "demo-basic", "profile_id": "default", "native_repository": "demo/basic",
        "data_dir": l.env.data_dir, "target": "main", "requirement_digest": r["requirement_digest"]}]});
    let p = l.env.path("workspace.json");
    std::fs::write(&p, cfg.to_string()).expect("cfg");
    let mut child = std::process::Command::new(crate::common::bin())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .arg("--data-dir")
        .arg(&l.env.data_dir)
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace-config"])
        .arg(&p)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("line");
    let v: Value = serde_json::from_str(&line).expect("json");
    crate::common::workspace_http::Served {
        child,
        addr: v["listening"]
            .as_str()
            .expect("url")
            .trim_start_matches("http://")
            .to_owned(),
    }
}

pub fn token(l: &Loop) -> String {
    std::fs::read_to_string(&l.token)
        .expect("token")
        .trim()
        .to_owned()
}

pub fn op(addr: &str, tok: &str, body: Value) -> Value {
    let r = req(addr, "POST", OPS, Some(tok), Some(&body.to_string())).ok();
    assert_eq!(r["capability"], "agentscm.agent-workflow-tasks/v1");
    r["result"].clone()
}

/// `collect` with the HTTP upload; returns its output.
pub fn collect_http(l: &Loop, addr: &str, descriptor: &Value, retry: bool) -> Value {
    let d = l.env.path("descriptor.json");
    if !retry {
        std::fs::write(&d, serde_json::to_vec(descriptor).expect("json")).expect("write");
    }
    let url = format!("http://{addr}");
    let mut c = l.env.cmd();
    c.arg("--token-file").arg(&l.token);
    if retry {
        c.args([
            "retry-upload",
            "--operation",
            descriptor["execution_operation_id"].as_str().expect("op"),
        ]);
    } else {
        c.args(["collect", "--descriptor", d.to_str().expect("utf8")]);
    }
    c.arg("--collector-dir").arg(&l.collector).args([
        "--endpoint",
        &url,
        "--repository",
        "demo-basic",
        "--profile",
        "default",
    ]);
    run_cmd(&mut c).json()
}

pub const OPS: &str = "/v1/hub/workspace/repositories/demo-basic/profiles/default/agent-tasks";
