//! `install-stop`: registers the Stop hook in `.claude/settings.json`
//! (Claude Code) or `.codex/hooks.json` (Codex), merging with what is
//! there. Other hooks and settings are kept; re-running replaces this
//! toolkit's own entry in place (idempotent).

use crate::error::{Code, Error, Result};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

/// Which agent the hook is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Agent {
    /// Claude Code: `.claude/settings.json`, `task-stop`.
    Claude,
    /// Codex CLI: `.codex/hooks.json`, `task-codex-stop`.
    Codex,
}

impl Agent {
    /// The settings file, relative to the workspace.
    pub fn settings_file(self) -> &'static str {
        match self {
            Agent::Claude => ".claude/settings.json",
            Agent::Codex => ".codex/hooks.json",
        }
    }

    /// The hook subcommand.
    pub fn subcommand(self) -> &'static str {
        match self {
            Agent::Claude => "task-stop",
            Agent::Codex => "task-codex-stop",
        }
    }
}

/// Seconds the agent waits for the hook (the remote call is capped at 30).
pub const HOOK_TIMEOUT_S: u64 = 60;

/// The remote part of a hook: all three or none.
#[derive(Debug, Clone)]
pub struct Remote {
    /// Endpoint base URL.
    pub endpoint: String,
    /// Repository id of the workspace profile.
    pub repository: String,
    /// Profile id.
    pub profile: String,
}

/// `install-stop` request.
#[derive(Debug, Clone)]
pub struct InstallStopRequest {
    /// The agent.
    pub agent: Agent,
    /// The workspace holding the settings file.
    pub workspace: PathBuf,
    /// The Change the hook guards.
    pub change: String,
    /// The local data directory (absolute).
    pub data_dir: PathBuf,
    /// The agent's token file (absolute).
    pub token_file: PathBuf,
    /// The remote endpoint, if any.
    pub remote: Option<Remote>,
    /// The `agent-task` executable the hook runs (absolute).
    pub executable: PathBuf,
}

/// `install-stop` output.
#[derive(Debug, Serialize)]
pub struct InstallStopOutput {
    /// The settings file, relative to the workspace.
    pub settings_file: &'static str,
    /// `added`, `replaced` or `unchanged`.
    pub action: &'static str,
    /// The exact command registered.
    pub command: String,
    /// Where the agent-facing guidance lives.
    pub instructions: &'static str,
}

/// Quotes one shell word (POSIX single quotes).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-=:,+@%".contains(&b))
    {
        return s.to_owned();
    }
    format!("'{}'", s.replace('\'', "'\\''"))
}

fn text(p: &Path, what: &str) -> Result<String> {
    if !p.is_absolute() {
        return Err(Error::new(
            Code::Usage,
            format!("{what} must be an absolute path"),
        ));
    }
    p.to_str()
        .map(str::to_owned)
        .ok_or_else(|| Error::new(Code::InvalidInput, format!("{what} is not UTF-8")))
}

/// The command line the hook runs.
pub fn hook_command(r: &InstallStopRequest) -> Result<String> {
    let exe = text(&r.executable, "the agent-task executable")?;
    let data = text(&r.data_dir, "--data-dir")?;
    let token = text(&r.token_file, "--token-file")?;
    let ws = text(&r.workspace, "--workspace")?;
    crate::task::contract::check_id("change", &r.change)?;
    let mut words = vec![
        exe,
        "--data-dir".into(),
        data,
        "--token-file".into(),
        token,
        r.agent.subcommand().into(),
        r.change.clone(),
        "--workspace".into(),
        ws,
    ];
    if let Some(rm) = &r.remote {
        words.extend([
            "--endpoint".into(),
            rm.endpoint.clone(),
            "--repository".into(),
            rm.repository.clone(),
            "--profile".into(),
            rm.profile.clone(),
        ]);
    }
    Ok(words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" "))
}

/// Whether a registered hook command is one of ours (same executable,
/// a `task-stop`/`task-codex-stop` subcommand).
fn is_ours(cmd: &str, exe_word: &str) -> bool {
    cmd.starts_with(&format!("{exe_word} "))
        && (cmd.contains(" task-stop ") || cmd.contains(" task-codex-stop "))
}

/// Merges the hook into a settings document. Returns the new document and
/// what happened.
pub fn merge(doc: Value, command: &str, exe_word: &str) -> Result<(Value, &'static str)> {
    let bad = |what: &str| {
        Error::new(
            Code::InvalidInput,
            format!("the settings file's {what} has an unexpected shape; fix it by hand"),
        )
    };
    let mut root = match doc {
        Value::Object(m) => m,
        _ => return Err(bad("top level")),
    };
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let hooks = hooks.as_object_mut().ok_or_else(|| bad("\"hooks\""))?;
    let stop = hooks
        .entry("Stop")
        .or_insert_with(|| Value::Array(Vec::new()));
    let stop = stop.as_array_mut().ok_or_else(|| bad("\"hooks.Stop\""))?;
    let entry = json!({"type": "command", "command": command, "timeout": HOOK_TIMEOUT_S});
    let mut action = "added";
    let mut placed = false;
    for group in stop.iter_mut() {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            continue;
        };
        let mut i = 0;
        while i < list.len() {
            let ours = list[i]
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| is_ours(c, exe_word));
            if ours {
                if placed {
                    list.remove(i);
                    action = "replaced";
                    continue;
                }
                if list[i] == entry {
                    action = "unchanged";
                } else {
                    list[i] = entry.clone();
                    action = "replaced";
                }
                placed = true;
            }
            i += 1;
        }
    }
    stop.retain(|g| {
        g.get("hooks")
            .and_then(Value::as_array)
            .is_none_or(|l| !l.is_empty())
    });
    if !placed {
        stop.push(json!({"hooks": [entry]}));
    }
    Ok((Value::Object(root), action))
}

/// `install-stop`.
pub fn install_stop(r: &InstallStopRequest) -> Result<InstallStopOutput> {
    super::check_workspace(&r.workspace)?;
    let command = hook_command(r)?;
    let exe_word = shell_quote(&text(&r.executable, "the agent-task executable")?);
    let rel = r.agent.settings_file();
    let path = r.workspace.join(rel);
    let doc = match super::read_project_file(&path)? {
        Some(t) if t.trim().is_empty() => Value::Object(Map::new()),
        Some(t) => serde_json::from_str(&t).map_err(|e| {
            Error::new(
                Code::InvalidInput,
                format!("{rel} is not valid JSON ({e}); fix it by hand"),
            )
        })?,
        None => Value::Object(Map::new()),
    };
    let (doc, action) = merge(doc, &command, &exe_word)?;
    if action != "unchanged" {
        let mut text = serde_json::to_string_pretty(&doc)?;
        text.push('\n');
        super::write_project_file(&r.workspace, rel, &text)?;
    }
    Ok(InstallStopOutput {
        settings_file: rel,
        action,
        command,
        instructions: "Agent guidance: the \"Workflow tasks\" block that `agent-task init-repo` writes into AGENTS.md and CLAUDE.md",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/a/b-c.d"), "/a/b-c.d");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn merge_keeps_other_hooks_and_is_idempotent() {
        let doc = json!({"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "other"}]}],
                          "PreToolUse": [{"matcher": "Bash", "hooks": []}]}});
        let (d1, a1) = merge(
            doc,
            "/bin/at --data-dir /d task-stop C --workspace /w",
            "/bin/at",
        )
        .expect("m");
        assert_eq!(a1, "added");
        assert_eq!(d1["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        assert_eq!(d1["model"], "x");
        let (d2, a2) = merge(
            d1.clone(),
            "/bin/at --data-dir /d task-stop C --workspace /w",
            "/bin/at",
        )
        .expect("m");
        assert_eq!((a2, &d2), ("unchanged", &d1));
        let (d3, a3) = merge(
            d2,
            "/bin/at --data-dir /e task-stop C --workspace /w",
            "/bin/at",
        )
        .expect("m");
        assert_eq!(a3, "replaced");
        assert_eq!(d3["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        assert!(merge(json!([]), "x", "y").is_err());
        assert!(merge(json!({"hooks": {"Stop": {}}}), "x", "y").is_err());
    }
}
