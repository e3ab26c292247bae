//! `install-stop` and `init-repo` on workspaces that already hold other
//! hooks and other text.

use crate::common::TestEnv;
use serde_json::{Value, json};

fn install(
    env: &TestEnv,
    agent: &str,
    ws: &std::path::Path,
    token: &std::path::Path,
    extra: &[&str],
) -> Value {
    let mut args = vec![
        "--token-file",
        token.to_str().expect("utf8"),
        "install-stop",
        "--agent",
        agent,
        "--workspace",
        ws.to_str().expect("utf8"),
        "--change",
        "ch_1",
    ];
    args.extend_from_slice(extra);
    env.run(&args).json()
}

#[test]
fn hook_install_stop_merges_with_other_hooks_and_is_idempotent() {
    let env = TestEnv::init();
    let ws = env.path("ws");
    std::fs::create_dir_all(ws.join(".claude")).expect("mkdir");
    std::fs::create_dir_all(ws.join(".codex")).expect("mkdir");
    let claude_before = json!({
        "permissions": {"allow": ["Bash(ls)"]},
        "hooks": {
            "Stop": [{"hooks": [{"type": "command", "command": "echo other-stop"}]}],
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "guard.sh"}]}]
        }
    });
    std::fs::write(
        ws.join(".claude/settings.local.json"),
        claude_before.to_string(),
    )
    .expect("w");
    // The shared settings file holds an entry an older install-stop wrote.
    let legacy = json!({"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command",
        "command": format!("{} --data-dir /d task-stop ch_0 --workspace /w", crate::common::bin().display())}]}]}});
    std::fs::write(ws.join(".claude/settings.json"), legacy.to_string()).expect("w");
    let codex_before =
        json!({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "hi.sh"}]}]}});
    std::fs::write(ws.join(".codex/hooks.json"), codex_before.to_string()).expect("w");
    let token = env.path("alice.token");

    let out = install(&env, "claude", &ws, &token, &[]);
    assert_eq!(out["action"], "added");
    assert_eq!(out["settings_file"], ".claude/settings.local.json");
    assert_eq!(out["scope"], "workspace_local");
    assert!(
        out["removed_from"]
            .as_str()
            .expect("removed")
            .ends_with(".claude/settings.json")
    );
    let shared: Value =
        serde_json::from_slice(&std::fs::read(ws.join(".claude/settings.json")).expect("r"))
            .expect("json");
    assert_eq!(
        shared,
        json!({"model": "x", "hooks": {"Stop": []}}),
        "legacy entry removed"
    );
    assert!(
        out["warnings"][0]
            .as_str()
            .expect("warning")
            .contains("not the top of a git work tree"),
        "{out}"
    );
    let cmd = out["command"].as_str().expect("command").to_owned();
    assert!(cmd.contains(" task-stop ch_1 --workspace "), "{cmd}");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(ws.join(".claude/settings.local.json")).expect("r"))
            .expect("json");
    assert_eq!(doc["permissions"], claude_before["permissions"]);
    assert_eq!(
        doc["hooks"]["PreToolUse"],
        claude_before["hooks"]["PreToolUse"]
    );
    let stop = doc["hooks"]["Stop"].as_array().expect("Stop");
    assert_eq!(stop.len(), 2);
    assert_eq!(stop[0], claude_before["hooks"]["Stop"][0]);
    assert_eq!(stop[1]["hooks"][0]["command"], cmd.as_str());
    assert_eq!(stop[1]["hooks"][0]["type"], "command");

    // Idempotent: same file bytes on a second run.
    let bytes = std::fs::read(ws.join(".claude/settings.local.json")).expect("r");
    assert_eq!(
        install(&env, "claude", &ws, &token, &[])["action"],
        "unchanged"
    );
    assert_eq!(
        std::fs::read(ws.join(".claude/settings.local.json")).expect("r"),
        bytes
    );

    // Re-installing with an endpoint that does not answer is refused
    // (the hook could reach no authority) and the file keeps its bytes;
    // the replacement in place through a live endpoint is in hook_authority.
    let mut c = env.cmd();
    c.args([
        "--token-file",
        token.to_str().expect("utf8"),
        "install-stop",
        "--agent",
        "claude",
        "--workspace",
        ws.to_str().expect("utf8"),
        "--change",
        "ch_1",
        "--endpoint",
        "http://127.0.0.1:7742",
        "--repository",
        "demo/basic",
        "--profile",
        "default",
    ]);
    let e = crate::common::run_cmd(&mut c).error("hook_authority_unreachable", 78);
    assert_eq!(e["details"]["reason"], "token_unavailable", "{e}");
    assert_eq!(
        std::fs::read(ws.join(".claude/settings.local.json")).expect("r"),
        bytes
    );

    // Codex with --repo-hooks: the same merge in the repository's
    // .codex/hooks.json with task-codex-stop.
    let out = install(&env, "codex", &ws, &token, &["--repo-hooks"]);
    assert_eq!(out["settings_file"], ".codex/hooks.json");
    assert_eq!(out["scope"], "repository");
    let doc: Value =
        serde_json::from_slice(&std::fs::read(ws.join(".codex/hooks.json")).expect("r"))
            .expect("json");
    assert_eq!(
        doc["hooks"]["SessionStart"],
        codex_before["hooks"]["SessionStart"]
    );
    assert!(
        doc["hooks"]["Stop"][0]["hooks"][0]["command"]
            .as_str()
            .expect("c")
            .contains(" task-codex-stop ch_1 ")
    );

    // A relative token file is refused and nothing is written.
    let before = std::fs::read(ws.join(".codex/hooks.json")).expect("r");
    let e = env.run(&[
        "--token-file",
        "rel.token",
        "install-stop",
        "--agent",
        "codex",
        "--workspace",
        ws.to_str().expect("utf8"),
        "--change",
        "ch_1",
    ]);
    e.error("usage", 64);
    assert_eq!(
        std::fs::read(ws.join(".codex/hooks.json")).expect("r"),
        before
    );

    // A settings file that is not JSON is refused, not overwritten.
    std::fs::write(ws.join(".claude/settings.local.json"), "{ not json").expect("w");
    install_err(&env, &ws, &token);
    assert_eq!(
        std::fs::read(ws.join(".claude/settings.local.json")).expect("r"),
        b"{ not json"
    );
}

fn install_err(env: &TestEnv, ws: &std::path::Path, token: &std::path::Path) {
    let out = env.run(&[
        "--token-file",
        token.to_str().expect("utf8"),
        "install-stop",
        "--agent",
        "claude",
        "--workspace",
        ws.to_str().expect("utf8"),
        "--change",
        "ch_1",
    ]);
    out.error("invalid_input", 65);
}

#[test]
fn hook_init_repo_replaces_its_block_and_keeps_other_text() {
    let env = TestEnv::new();
    let ws = env.path("ws");
    std::fs::create_dir_all(&ws).expect("mkdir");
    std::fs::write(ws.join("AGENTS.md"), "# Project\n\nOwn guidance.\n").expect("w");
    let out = env
        .run(&["init-repo", "--workspace", ws.to_str().expect("utf8")])
        .json();
    let actions: Vec<(String, String)> = out["files"]
        .as_array()
        .expect("files")
        .iter()
        .map(|f| {
            (
                f["path"].as_str().expect("p").to_owned(),
                f["action"].as_str().expect("a").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        vec![
            ("AGENTS.md".into(), "appended".into()),
            ("CLAUDE.md".into(), "created".into()),
            (".cursor/rules/agent-task.mdc".into(), "created".into()),
            (".github/copilot-instructions.md".into(), "created".into()),
        ]
    );
    let agents = std::fs::read_to_string(ws.join("AGENTS.md")).expect("r");
    assert!(
        agents.starts_with("# Project\n\nOwn guidance.\n\n<!-- agent-task:workflow-tasks:begin")
    );
    for needle in [
        "capabilities",
        "next",
        "instructions",
        "reference",
        "collector-claim",
        "collect",
        "qualify",
    ] {
        assert!(agents.contains(needle), "{needle}");
    }
    let mdc = std::fs::read_to_string(ws.join(".cursor/rules/agent-task.mdc")).expect("r");
    assert!(mdc.starts_with("---\n") && mdc.contains("alwaysApply: true"));

    // Other text added around the block survives; an edited block is replaced in place.
    let edited = agents.replace("Discover, then fetch", "STALE") + "\n## Later section\nkept\n";
    std::fs::write(ws.join("AGENTS.md"), &edited).expect("w");
    let out = env
        .run(&["init-repo", "--workspace", ws.to_str().expect("utf8")])
        .json();
    assert_eq!(out["files"][0]["action"], "replaced");
    assert_eq!(out["files"][1]["action"], "unchanged");
    let now = std::fs::read_to_string(ws.join("AGENTS.md")).expect("r");
    assert_eq!(now, format!("{agents}\n## Later section\nkept\n"));

    // Idempotent.
    let out = env
        .run(&["init-repo", "--workspace", ws.to_str().expect("utf8")])
        .json();
    assert!(
        out["files"]
            .as_array()
            .expect("f")
            .iter()
            .all(|f| f["action"] == "unchanged")
    );

    // A doubled block is refused and nothing is rewritten.
    let doubled = format!("{now}{now}");
    std::fs::write(ws.join("CLAUDE.md"), &doubled).expect("w");
    env.run(&["init-repo", "--workspace", ws.to_str().expect("utf8")])
        .error("conflict", 65);
    assert_eq!(
        std::fs::read_to_string(ws.join("CLAUDE.md")).expect("r"),
        doubled
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("AGENTS.md")).expect("r"),
        now
    );
}
