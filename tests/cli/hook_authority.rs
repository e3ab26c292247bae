//! How the agent commands find their authority (flag, then `AGENT_TASK_*`
//! variable; a conflict names the variable), the Stop hooks reading no
//! variable at all, `install-stop` refusing a hook that can reach no
//! authority (and writing nothing), `init-repo --endpoint`, and the
//! machine-wide managed hook (`install-stop --managed`, `task-stop
//! --managed`): merging, refusals that keep the bytes, uninstall, and the
//! uid map.

use crate::common::collect_flow::Loop;
use crate::common::hook_stop::{blocked, passed, payload};
use crate::common::{Output, TestEnv, run_cmd};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// The agent's environment of a privilege-separated set-up.
fn endpoint_env(addr: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AGENT_TASK_ENDPOINT", format!("http://{addr}")),
        ("AGENT_TASK_REPOSITORY", "demo-basic".to_owned()),
        ("AGENT_TASK_PROFILE", "default".to_owned()),
    ]
}

/// The binary with a scrubbed environment, no `--data-dir`, and `env`.
fn bare(env: &TestEnv, vars: &[(&str, String)], args: &[&str]) -> Output {
    let mut c = env.bare_cmd();
    for (k, v) in vars {
        c.env(k, v);
    }
    run_cmd(c.args(args))
}

#[test]
fn hook_authority_conflicts_name_the_variable_and_change_nothing() {
    let l = Loop::basic("bwrap");
    // The README's local `change open`, with an endpoint exported.
    let mut c = l.env.cmd();
    c.env("AGENT_TASK_ENDPOINT", "http://127.0.0.1:9")
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "change",
            "open",
            "--repo",
            "demo/basic",
            "--profile",
            "default",
            "--workspace",
            s(&l.workspace),
        ]);
    let e = run_cmd(&mut c).error("env_conflict", 64);
    assert_eq!(e["details"]["variable"], "AGENT_TASK_ENDPOINT", "{e}");
    assert_eq!(e["details"]["flag"], "--repo", "{e}");
    assert!(
        e["message"]
            .as_str()
            .expect("m")
            .contains("AGENT_TASK_ENDPOINT")
    );
    // `next` by workspace while the variables choose the endpoint.
    let mut c = l.env.cmd();
    for (k, v) in endpoint_env("127.0.0.1:9") {
        c.env(k, v);
    }
    c.arg("--token-file")
        .arg(&l.token)
        .args(["next", "--workspace", s(&l.workspace)]);
    let e = run_cmd(&mut c).error("env_conflict", 64);
    assert_eq!(e["details"]["variable"], "AGENT_TASK_ENDPOINT");
    assert_eq!(e["details"]["flag"], "--change");
    // Without the variable, the same command is local and answers.
    assert_eq!(
        l.agent(&["next", "--workspace", s(&l.workspace)]).json()["next"]["operation"],
        "checkpoint"
    );
    // The profile comes from AGENT_TASK_PROFILE when --profile is absent.
    let ws2 = l.env.path("work2");
    crate::common::task_support::copy_dir(&l.workspace, &ws2);
    let mut c = l.env.cmd();
    c.env("AGENT_TASK_PROFILE", "default")
        .arg("--token-file")
        .arg(&l.token)
        .args([
            "change",
            "open",
            "--repo",
            "demo/basic",
            "--workspace",
            s(&ws2),
        ]);
    let opened = run_cmd(&mut c).json();
    assert!(opened["change_id"].is_string(), "{opened}");
    // --help names the variables.
    let help = l.env.run(&["next", "--help"]).stdout;
    for v in [
        "AGENT_TASK_ENDPOINT",
        "AGENT_TASK_REPOSITORY",
        "AGENT_TASK_PROFILE",
    ] {
        assert!(help.contains(v), "{v} missing from next --help");
    }
}

#[test]
fn hook_authority_stop_hooks_read_no_variable() {
    let l = Loop::basic("bwrap");
    let p = payload("claude", false, &l.workspace);
    // Every value only in the environment: the hook sees no data directory
    // and no token (it blocks; it never follows the variables).
    let vars = vec![
        ("AGENT_TASK_DATA_DIR", s(&l.env.data_dir).to_owned()),
        ("AGENT_TASK_TOKEN_FILE", s(&l.token).to_owned()),
    ];
    let mut c = l.env.bare_cmd();
    for (k, v) in &vars {
        c.env(k, v);
    }
    c.args(["task-stop", &l.change_id, "--workspace", s(&l.workspace)])
        .write_stdin(p.clone());
    let d = blocked("claude", &run_cmd(&mut c));
    assert_eq!(
        d["failures"],
        json!([{"code": "local_store_unavailable"}]),
        "{d}"
    );
    // The same values on the command line reach the Change (no checkpoint yet).
    let mut c = l.env.cmd();
    c.arg("--token-file")
        .arg(&l.token)
        .args(["task-stop", &l.change_id, "--workspace", s(&l.workspace)])
        .write_stdin(p);
    let d = blocked("claude", &run_cmd(&mut c));
    assert_eq!(d["failures"], json!([{"code": "no_checkpoint"}]), "{d}");
}

fn settings(ws: &Path) -> PathBuf {
    ws.join(".claude/settings.local.json")
}

#[test]
fn hook_authority_install_stop_refuses_an_unreachable_authority_and_writes_nothing() {
    let l = Loop::basic("bwrap");
    let srv = crate::common::workspace_collect::serve(&l);
    let ws = l.workspace.clone();
    let base = |vars: &[(&str, String)], extra: &[&str], token: &Path| {
        let mut args = vec![
            "--token-file",
            s(token),
            "install-stop",
            "--agent",
            "claude",
            "--workspace",
            s(&ws),
            "--change",
            &l.change_id,
        ];
        args.extend_from_slice(extra);
        bare(&l.env, vars, &args)
    };
    // Local form with no readable data directory (the agent's default does not exist).
    let e = base(&[], &[], &l.token).error("hook_authority_unreachable", 78);
    assert_eq!(e["details"]["reason"], "data_dir_unreadable", "{e}");
    assert!(!settings(&ws).exists(), "nothing written");
    // A token the endpoint refuses.
    let bad = l.env.path("bad.token");
    std::fs::write(&bad, "at_0000000000000000000000000000000000000000000\n").expect("w");
    let mut perms = std::fs::metadata(&bad).expect("md").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o600);
    std::fs::set_permissions(&bad, perms).expect("chmod");
    let e = base(&endpoint_env(&srv.addr), &[], &bad).error("hook_authority_unreachable", 78);
    assert_eq!(e["details"]["reason"], "token_rejected", "{e}");
    assert!(!settings(&ws).exists());
    // Another profile of the same endpoint.
    let mut other = endpoint_env(&srv.addr);
    other[2].1 = "other".to_owned();
    let e = base(&other, &[], &l.token).error("hook_authority_unreachable", 78);
    assert!(
        ["change_not_found", "token_rejected"]
            .contains(&e["details"]["reason"].as_str().unwrap_or("")),
        "{e}"
    );
    assert!(!settings(&ws).exists());
    // The endpoint is down.
    let e =
        base(&endpoint_env("127.0.0.1:1"), &[], &l.token).error("hook_authority_unreachable", 78);
    assert_eq!(e["details"]["reason"], "endpoint_unreachable", "{e}");
    assert!(!settings(&ws).exists());

    // Through the variables: every value is written into the hook explicitly.
    let out = base(&endpoint_env(&srv.addr), &[], &l.token).json();
    let cmd = out["command"].as_str().expect("command");
    for w in [
        format!("--endpoint http://{}", srv.addr),
        "--repository demo-basic".to_owned(),
        "--profile default".to_owned(),
        format!("--token-file {}", s(&l.token)),
        format!("--workspace {}", s(&ws)),
        format!(" task-stop {} ", l.change_id),
    ] {
        assert!(cmd.contains(&w), "{w} not in {cmd}");
    }
    assert!(cmd.starts_with('/'), "absolute binary: {cmd}");
    assert!(
        !cmd.contains("--data-dir"),
        "the agent cannot read it: {cmd}"
    );
    let written = std::fs::read(settings(&ws)).expect("settings");
    // A refusal after that leaves the file byte for byte.
    let e =
        base(&endpoint_env("127.0.0.1:1"), &[], &l.token).error("hook_authority_unreachable", 78);
    assert_eq!(e["details"]["reason"], "endpoint_unreachable");
    assert_eq!(std::fs::read(settings(&ws)).expect("settings"), written);
    // The local form with the operator's data directory names it.
    let out = l
        .agent(&[
            "install-stop",
            "--agent",
            "claude",
            "--workspace",
            s(&ws),
            "--change",
            &l.change_id,
        ])
        .json();
    assert!(
        out["command"]
            .as_str()
            .expect("c")
            .contains(&format!("--data-dir {}", s(&l.env.data_dir)))
    );
}

#[test]
fn hook_authority_init_repo_endpoint_writes_the_endpoint_agents_instructions() {
    let env = TestEnv::new();
    let ws = env.path("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    let out = bare(
        &env,
        &[("AGENT_TASK_ENDPOINT", "http://10.0.0.5:8080".to_owned())],
        &["init-repo", "--workspace", s(&ws)],
    )
    .json();
    assert_eq!(out["files"][0]["action"], "created");
    let agents = std::fs::read_to_string(ws.join("AGENTS.md")).expect("AGENTS.md");
    assert!(agents.contains("http://10.0.0.5:8080"));
    assert!(agents.contains("sudo -n -u OPERATOR /usr/local/sbin/agent-task-collect"));
    assert!(!agents.contains("--collector-dir"), "{agents}");
    assert!(agents.contains("--change CHANGE"));
    // The local form replaces the block in place.
    let out = bare(&env, &[], &["init-repo", "--workspace", s(&ws)]).json();
    assert_eq!(out["files"][0]["action"], "replaced");
    assert!(
        std::fs::read_to_string(ws.join("AGENTS.md"))
            .expect("AGENTS.md")
            .contains("--collector-dir")
    );
}

fn managed(env: &TestEnv, args: &[&str]) -> Output {
    let mut a = vec!["install-stop", "--managed"];
    a.extend_from_slice(args);
    bare(env, &[], &a)
}

#[test]
fn hook_authority_managed_install_merges_refuses_and_uninstalls() {
    let env = TestEnv::new();
    if !is_root() {
        let e = managed(&env, &["--settings-file", "/tmp/x.json"]).error("forbidden", 77);
        assert!(e["message"].as_str().expect("m").contains("root"));
        println!("SKIP: install-stop --managed writes machine-wide files and needs root");
        return;
    }
    let dir = env.path("etc");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let claude = dir.join("claude-code/managed-settings.json");
    let codex = dir.join("codex/requirements.toml");
    std::fs::create_dir_all(codex.parent().expect("p")).expect("mkdir");
    let toml_before = "# site policy\nallowed_sandbox_modes = [\"read-only\"]\n\n[hooks]\nmanaged_dir = \"/opt/site-hooks\"\n\n[[hooks.PreToolUse]]\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"/opt/site-hooks/guard\"\n";
    std::fs::write(&codex, toml_before).expect("w");
    let files = [
        "--settings-file",
        s(&claude),
        "--requirements-file",
        s(&codex),
    ];
    let out = managed(&env, &files).json();
    assert_eq!(out["files"][0]["action"], "added", "{out}");
    assert_eq!(out["files"][0]["file_created_or_deleted"], true);
    assert_eq!(out["files"][1]["action"], "added");
    let cmd = out["files"][0]["command"].as_str().expect("cmd");
    assert!(cmd.ends_with(" task-stop --managed"), "{cmd}");
    // Every user's agent reads them: a new file 0644 and a new directory
    // 0755 (not the process umask's 0600/0700); an existing file's mode kept.
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o7777;
        assert_eq!(mode(&claude), 0o644);
        assert_eq!(mode(claude.parent().expect("p")), 0o755);
        assert_eq!(mode(&codex), 0o644);
    }
    let c: Value = serde_json::from_slice(&std::fs::read(&claude).expect("r")).expect("json");
    assert_eq!(c["hooks"]["Stop"][0]["hooks"][0]["command"], cmd);
    assert!(c.get("allowManagedHooksOnly").is_none());
    let t = std::fs::read_to_string(&codex).expect("r");
    assert!(
        t.starts_with(toml_before),
        "the operator's bytes come first, unchanged"
    );
    assert!(t.contains("task-codex-stop --managed"));
    // Idempotent.
    let again = managed(&env, &files).json();
    assert_eq!(again["files"][0]["action"], "unchanged");
    assert_eq!(again["files"][1]["action"], "unchanged");
    // The library function deploy check uses.
    assert_eq!(
        agent_task::hooks::managed::managed_hook_installed(
            agent_task::hooks::install::Agent::Codex,
            &codex
        )
        .expect("installed")
        .len(),
        1
    );
    // --exclusive: the keys, with a warning.
    let ex = managed(&env, &[&files[..], &["--exclusive"]].concat()).json();
    assert!(
        ex["warnings"][0]
            .as_str()
            .expect("w")
            .contains("every non-managed hook")
    );
    let c: Value = serde_json::from_slice(&std::fs::read(&claude).expect("r")).expect("json");
    assert_eq!(c["allowManagedHooksOnly"], true);
    assert!(
        std::fs::read_to_string(&codex)
            .expect("r")
            .starts_with("allow_managed_hooks_only = true")
    );
    // A Claude file in another form, or not JSON: refused, bytes kept.
    let other = dir.join("other.json");
    for text in ["{\"zeta\": 1, \"alpha\": 2}", "{ not json"] {
        std::fs::write(&other, text).expect("w");
        let e = managed(&env, &["--agent", "claude", "--settings-file", s(&other)])
            .error("invalid_input", 65);
        assert!(
            e["message"]
                .as_str()
                .expect("m")
                .contains("nothing was written")
        );
        assert_eq!(std::fs::read_to_string(&other).expect("r"), text);
    }
    // A requirements file that is not TOML: refused, bytes kept.
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[[[").expect("w");
    managed(&env, &["--agent", "codex", "--requirements-file", s(&bad)]).error("invalid_input", 65);
    assert_eq!(std::fs::read_to_string(&bad).expect("r"), "[[[");
    // Uninstall (with --exclusive) restores the operator's file and removes ours.
    let un = managed(
        &env,
        &[&files[..], &["--uninstall", "--exclusive"]].concat(),
    )
    .json();
    assert_eq!(un["files"][0]["action"], "removed", "{un}");
    assert!(!claude.exists(), "the file we created is gone");
    assert_eq!(std::fs::read_to_string(&codex).expect("r"), toml_before);
    let un = managed(&env, &[&files[..], &["--uninstall"]].concat()).json();
    assert_eq!(un["files"][1]["action"], "absent");

    // The machine's own files, only in CI, with their bytes restored.
    if std::env::var_os("CI").is_some() {
        let keep = |p: &str| std::fs::read(p).ok();
        let (c0, r0) = (
            keep(agent_task::hooks::managed::CLAUDE_DROP_IN),
            keep(agent_task::hooks::managed::CODEX_REQUIREMENTS),
        );
        managed(&env, &[]).json();
        assert_eq!(
            agent_task::hooks::managed::managed_hook_installed(
                agent_task::hooks::install::Agent::Claude,
                Path::new(agent_task::hooks::managed::CLAUDE_DROP_IN)
            )
            .expect("installed")
            .len(),
            1
        );
        managed(&env, &["--uninstall"]).json();
        assert_eq!(keep(agent_task::hooks::managed::CLAUDE_DROP_IN), c0);
        assert_eq!(keep(agent_task::hooks::managed::CODEX_REQUIREMENTS), r0);
    }
}

/// `task-stop --managed` with `map`, as this (root) user, with the agent's
/// variables pointing somewhere else (they must not matter).
fn managed_hook(l: &Loop, agent: &str, map: &Path, cwd: &Path) -> Output {
    let sub = if agent == "claude" {
        "task-stop"
    } else {
        "task-codex-stop"
    };
    let mut c = l.env.bare_cmd();
    c.env("AGENT_TASK_ENDPOINT", "http://127.0.0.1:1")
        .env("AGENT_TASK_DATA_DIR", "/nonexistent")
        .args([sub, "--managed", "--hooks-map", s(map)])
        .write_stdin(payload(agent, false, cwd));
    run_cmd(&mut c)
}

#[test]
fn hook_authority_managed_stop_finds_the_users_change_by_uid() {
    if !is_root() {
        println!("SKIP: the managed hook's map must be root-owned; this test needs root");
        return;
    }
    let l = Loop::basic("bwrap");
    l.set_add("+");
    let task = l.checkpoint();
    let srv = crate::common::workspace_collect::serve(&l);
    let etc = tempfile::tempdir().expect("tmp");
    let map = etc.path().join("hooks.json");
    let write_map = |uid: u32| {
        let v = json!({"users": {uid.to_string(): {
            "endpoint": format!("http://{}", srv.addr), "repository": "demo-basic",
            "profile": "default", "token_file": s(&l.token)}}});
        std::fs::write(&map, v.to_string()).expect("map");
    };
    // No map: nobody is guarded.
    passed("claude", &managed_hook(&l, "claude", &map, &l.workspace));
    // A map that does not list this uid: a silent pass.
    write_map(4_000_000);
    let o = managed_hook(&l, "claude", &map, &l.workspace);
    assert_eq!(o.stdout.trim(), "{}", "{o:?}");
    // This uid: the Change of this workspace, found through the endpoint.
    write_map(0);
    for agent in ["claude", "codex"] {
        let d = blocked(agent, &managed_hook(&l, agent, &map, &l.workspace));
        assert_eq!(
            d["next"],
            json!({"operation": "collector_claim", "task_id": task}),
            "{d}"
        );
    }
    // A directory holding none of the user's Changes passes.
    let elsewhere = l.env.path("elsewhere");
    std::fs::create_dir_all(&elsewhere).expect("mkdir");
    passed("claude", &managed_hook(&l, "claude", &map, &elsewhere));
    // The work done, the hook passes.
    let (d1, _) = l.claim(&task, "d1.json");
    assert_eq!(l.collect(&d1).json()["outcome"], "passed");
    l.agent(&["finalize", "--change", &l.change_id]).json();
    for agent in ["claude", "codex"] {
        passed(agent, &managed_hook(&l, agent, &map, &l.workspace));
    }
    // A map others can write, or a symlink, blocks every stop.
    let mut perms = std::fs::metadata(&map).expect("md").permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o666);
    std::fs::set_permissions(&map, perms).expect("chmod");
    let d = blocked("claude", &managed_hook(&l, "claude", &map, &l.workspace));
    assert_eq!(d["failures"], json!([{"code": "hook_map_unsafe"}]));
    let link = etc.path().join("link.json");
    std::os::unix::fs::symlink(&map, &link).expect("symlink");
    let d = blocked("claude", &managed_hook(&l, "claude", &link, &l.workspace));
    assert_eq!(d["failures"], json!([{"code": "hook_map_unsafe"}]));
}
