//! The workspace endpoint server (`Served`) and its configuration and calls.
//! Moved from `workspace_http.rs`, whose tests and others share it.

use crate::common::data_support::{Resp, req};
use crate::common::task_support::Setup;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

pub const OPS: &str = "/v1/hub/workspace/repositories/demo-basic/profiles/default/agent-tasks";

pub struct Served {
    pub child: Child,
    pub addr: String,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Writes the operator's workspace config for the fixture profile.
pub fn write_config(s: &Setup) -> std::path::PathBuf {
    let req = s.agent(&["requirements", "--change", &s.change_id]).json();
    let cfg = json!({
        "version": 1,
        "agent_task_profiles": [{
            "repository_id": "demo-basic",
            "profile_id": "default",
            "native_repository": "demo/basic",
            "data_dir": s.env.data_dir,
            "target": "main",
            "requirement_digest": req["requirement_digest"],
        }]
    });
    let p = s.env.path("workspace.json");
    std::fs::write(&p, cfg.to_string()).expect("write config");
    p
}

/// Starts `serve --workspace-config` on an ephemeral loopback port.
pub fn serve(s: &Setup) -> Served {
    serve_with(s, &[], &[])
}

/// [`serve`] with extra environment variables and `serve` flags.
pub fn serve_with(s: &Setup, envs: &[(&str, &str)], args: &[&str]) -> Served {
    let cfg = write_config(s);
    serve_config(s, &cfg, envs, args, 1)
}

pub fn token(s: &Setup) -> String {
    std::fs::read_to_string(&s.token)
        .expect("token")
        .trim()
        .to_owned()
}

pub fn op(addr: &str, tok: &str, body: Value) -> Resp {
    req(addr, "POST", OPS, Some(tok), Some(&body.to_string()))
}

/// Starts `serve` with the workspace config at `cfg` (of `profiles`
/// profiles).
pub fn serve_config(
    s: &Setup,
    cfg: &std::path::Path,
    envs: &[(&str, &str)],
    args: &[&str],
    profiles: u64,
) -> Served {
    let mut child = Command::new(crate::common::bin())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .envs(envs.iter().copied())
        .arg("--data-dir")
        .arg(&s.env.data_dir)
        .args(["serve", "--bind", "127.0.0.1:0", "--workspace-config"])
        .arg(cfg)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("listening line");
    let v: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad line {line:?}: {e}"));
    assert_eq!(v["workspace_profiles"], profiles, "{v}");
    Served {
        child,
        addr: v["listening"]
            .as_str()
            .expect("url")
            .trim_start_matches("http://")
            .to_owned(),
    }
}
