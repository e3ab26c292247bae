//! `install-stop`: registers the Stop hook where the agent keeps personal,
//! never-committed settings, merging with what is there. Other hooks and
//! settings are kept; re-running replaces this toolkit's own entry in
//! place (idempotent).
//!
//! - Claude Code: `.claude/settings.local.json` in the workspace (Claude
//!   Code's personal project settings). An entry an older `install-stop`
//!   left in the shared `.claude/settings.json` is removed.
//! - Codex: the user-level `$CODEX_HOME/hooks.json` (else
//!   `~/.codex/hooks.json`), or with `--repo-hooks` the repository's
//!   `.codex/hooks.json`. A user-level hook fires in every repository, so
//!   the hook passes silently when the agent's `cwd` is outside its
//!   workspace, and one entry per workspace is kept.
//!
//! The hook names the binary, the data directory and the token file by
//! absolute path: machine-local facts that must never reach a revision. A
//! settings file written inside a git workspace is added to the
//! repository's `info/exclude`, so checkpoints (which honour it) and the
//! clean-workspace scan leave it out and `land` never commits it.

use crate::error::{Code, Error, Result};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Which agent the hook is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Agent {
    /// Claude Code: `.claude/settings.local.json`, `task-stop`.
    Claude,
    /// Codex CLI: `~/.codex/hooks.json` (or the repository's with `--repo-hooks`), `task-codex-stop`.
    Codex,
}

impl Agent {
    /// The hook subcommand.
    pub fn subcommand(self) -> &'static str {
        match self {
            Agent::Claude => "task-stop",
            Agent::Codex => "task-codex-stop",
        }
    }
}

/// Claude Code's personal project settings, relative to the workspace.
pub const CLAUDE_LOCAL: &str = ".claude/settings.local.json";
/// Claude Code's shared (committed) project settings.
pub const CLAUDE_SHARED: &str = ".claude/settings.json";
/// Codex's repository hooks file, relative to the workspace.
pub const CODEX_REPO: &str = ".codex/hooks.json";

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
    /// The workspace the hook guards.
    pub workspace: PathBuf,
    /// The Change the hook guards.
    pub change: String,
    /// The local data directory (absolute); `None` for an agent that
    /// reaches its authority only through the endpoint.
    pub data_dir: Option<PathBuf>,
    /// The agent's token file (absolute).
    pub token_file: PathBuf,
    /// The remote endpoint, if any.
    pub remote: Option<Remote>,
    /// The `agent-task` executable the hook runs (absolute).
    pub executable: PathBuf,
    /// Codex only: write the repository's `.codex/hooks.json` instead of
    /// the user-level file.
    pub repo_hooks: bool,
    /// Codex only: the user-level configuration directory (`$CODEX_HOME`,
    /// else `~/.codex`), absolute.
    pub codex_home: Option<PathBuf>,
}

/// `install-stop` output.
#[derive(Debug, Serialize)]
pub struct InstallStopOutput {
    /// The settings file: relative to the workspace when inside it,
    /// absolute for the user-level Codex file.
    pub settings_file: String,
    /// `workspace_local` (Claude Code), `repository` or `user` (Codex).
    pub scope: &'static str,
    /// `added`, `replaced` or `unchanged`.
    pub action: &'static str,
    /// The exact command registered.
    pub command: String,
    /// The git exclude file that keeps the settings file out of revisions
    /// (`null` when it is outside the workspace or the workspace is not git).
    pub excluded_in: Option<String>,
    /// The shared settings file an older entry was removed from, if any.
    pub removed_from: Option<String>,
    /// What the caller should know (a non-git workspace cannot exclude the file).
    pub warnings: Vec<String>,
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
    let token = text(&r.token_file, "--token-file")?;
    let ws = text(&r.workspace, "--workspace")?;
    crate::contract::check_id("change", &r.change)?;
    let mut words = vec![exe];
    match (&r.data_dir, &r.remote) {
        (Some(d), _) => words.extend(["--data-dir".into(), text(d, "--data-dir")?]),
        (None, Some(_)) => {}
        (None, None) => {
            return Err(Error::new(
                Code::Usage,
                "the hook needs a data directory, or --endpoint to read its Change through",
            ));
        }
    }
    words.extend([
        "--token-file".into(),
        token,
        r.agent.subcommand().into(),
        r.change.clone(),
        "--workspace".into(),
        ws,
    ]);
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

/// Which registered commands are ours: the same executable and a
/// `task-stop`/`task-codex-stop` subcommand, and (for a file that serves
/// several workspaces) the same `--workspace`.
#[derive(Debug, Clone)]
pub struct Ours {
    exe_word: String,
    workspace_word: Option<String>,
}

impl Ours {
    /// Our entries for `exe_word`; with `workspace_word`, only that workspace's.
    pub fn new(exe_word: &str, workspace_word: Option<&str>) -> Ours {
        Ours {
            exe_word: exe_word.to_owned(),
            workspace_word: workspace_word.map(str::to_owned),
        }
    }

    fn matches(&self, cmd: &str) -> bool {
        cmd.starts_with(&format!("{} ", self.exe_word))
            && (cmd.contains(" task-stop ") || cmd.contains(" task-codex-stop "))
            && self.workspace_word.as_ref().is_none_or(|w| {
                cmd.ends_with(&format!(" --workspace {w}"))
                    || cmd.contains(&format!(" --workspace {w} "))
            })
    }
}

fn shape_error(what: &str) -> Error {
    Error::new(
        Code::InvalidInput,
        format!("the settings file's {what} has an unexpected shape; fix it by hand"),
    )
}

/// Our entry in a settings file's `hooks.Stop[].hooks` list. It is merged
/// into the user's document (a JSON map), so its keys are written sorted.
#[derive(Serialize)]
struct StopHookEntry<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    command: &'a str,
    timeout: u64,
}

/// Merges the hook into a settings document. Returns the new document and
/// what happened.
pub fn merge(doc: Value, command: &str, ours: &Ours) -> Result<(Value, &'static str)> {
    let mut root = match doc {
        Value::Object(m) => m,
        _ => return Err(shape_error("top level")),
    };
    let hooks = root
        .entry("hooks")
        .or_insert_with(|| Value::Object(Map::new()));
    let hooks = hooks
        .as_object_mut()
        .ok_or_else(|| shape_error("\"hooks\""))?;
    let stop = hooks
        .entry("Stop")
        .or_insert_with(|| Value::Array(Vec::new()));
    let stop = stop
        .as_array_mut()
        .ok_or_else(|| shape_error("\"hooks.Stop\""))?;
    let entry = serde_json::to_value(StopHookEntry {
        kind: "command",
        command,
        timeout: HOOK_TIMEOUT_S,
    })
    .map_err(|e| Error::internal(format!("hook entry: {e}")))?;
    let mut action = "added";
    let mut placed = false;
    for group in stop.iter_mut() {
        let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) else {
            continue;
        };
        let mut i = 0;
        while i < list.len() {
            let is_ours = list[i]
                .get("command")
                .and_then(Value::as_str)
                .is_some_and(|c| ours.matches(c));
            if is_ours {
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
        let mut group = Map::new();
        group.insert("hooks".into(), Value::Array(vec![entry]));
        stop.push(Value::Object(group));
    }
    Ok((Value::Object(root), action))
}

/// Removes our entries from a settings document; `None` when there were
/// none (the document is then left exactly as it was).
pub fn remove(doc: &Value, ours: &Ours) -> Option<Value> {
    let mut doc = doc.clone();
    let stop = doc.get_mut("hooks")?.get_mut("Stop")?.as_array_mut()?;
    let mut removed = false;
    for group in stop.iter_mut() {
        if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
            let before = list.len();
            list.retain(|h| {
                !h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| ours.matches(c))
            });
            removed |= list.len() != before;
        }
    }
    if !removed {
        return None;
    }
    stop.retain(|g| {
        g.get("hooks")
            .and_then(Value::as_array)
            .is_none_or(|l| !l.is_empty())
    });
    Some(doc)
}

pub(crate) fn read_json(path: &Path, shown: &str) -> Result<Option<Value>> {
    match super::read_project_file(path)? {
        Some(t) if t.trim().is_empty() => Ok(Some(Value::Object(Map::new()))),
        Some(t) => serde_json::from_str(&t).map(Some).map_err(|e| {
            Error::new(
                Code::InvalidInput,
                format!("{shown} is not valid JSON ({e}); fix it by hand"),
            )
        }),
        None => Ok(None),
    }
}

pub(crate) fn render(doc: &Value) -> Result<String> {
    let mut text = serde_json::to_string_pretty(doc)?;
    text.push('\n');
    Ok(text)
}

/// The git exclude file of a workspace that is the top of a git work tree
/// (`None` when it is not one).
fn git_exclude_file(workspace: &Path) -> Option<PathBuf> {
    if std::fs::symlink_metadata(workspace.join(".git")).is_err() {
        return None;
    }
    let out = crate::workflow::service::git::plain(workspace)
        .args([
            "rev-parse",
            "--path-format=absolute",
            "--git-path",
            "info/exclude",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let p = PathBuf::from(String::from_utf8(out.stdout).ok()?.trim_end_matches('\n'));
    p.is_absolute().then_some(p)
}

/// Adds `/<rel>` to a git exclude file unless a line already says so.
fn exclude(file: &Path, rel: &str) -> Result<()> {
    let line = format!("/{rel}");
    let current = match std::fs::read(file) {
        Ok(b) => String::from_utf8(b).map_err(|_| {
            Error::new(
                Code::InvalidInput,
                format!("{} is not UTF-8", file.display()),
            )
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(Error::io("read", file, e)),
    };
    if current
        .lines()
        .any(|l| l.trim_end() == line || l.trim_end() == rel)
    {
        return Ok(());
    }
    let mut next = current;
    if !next.is_empty() && !next.ends_with('\n') {
        next.push('\n');
    }
    next.push_str("# agent-task: machine-local hook settings (absolute paths), never committed\n");
    next.push_str(&line);
    next.push('\n');
    let (dir, name) = match (file.parent(), file.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) => (d, n),
        _ => return Err(Error::internal("exclude file without a parent")),
    };
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
    super::write_project_file(dir, name, &next)
}

fn unreachable(reason: &str, msg: String) -> Error {
    Error::new(
        Code::HookAuthorityUnreachable,
        format!("install-stop wrote nothing: {msg}"),
    )
    .with("reason", reason)
}

/// Checks that the hook `r` describes can reach its authority: a readable
/// data directory, or (with an endpoint, always asked when named) an
/// endpoint that accepts the token and answers `change_subject` for the
/// Change on the named repository and profile. `hook_authority_unreachable`
/// otherwise (`details.reason`, the endpoint's error code in
/// `details.cause`).
pub fn check_reachable(r: &InstallStopRequest) -> Result<()> {
    if let Some(d) = &r.data_dir
        && let Err(e) = crate::workflow::service::admin::open_read(d)
    {
        return Err(unreachable(
            "data_dir_unreadable",
            format!(
                "the data directory {} cannot be read ({}): pass the operator's --data-dir, or \
                 --endpoint (or AGENT_TASK_ENDPOINT) for an agent that reaches its authority \
                 only through the endpoint",
                d.display(),
                e.message()
            ),
        )
        .with("cause", e.code().as_str()));
    }
    let Some(rm) = &r.remote else {
        return if r.data_dir.is_some() {
            Ok(())
        } else {
            Err(unreachable(
                "data_dir_unreadable",
                "no readable data directory and no endpoint".to_owned(),
            ))
        };
    };
    let token = crate::workflow::service::admin::read_token_file(&r.token_file).map_err(|e| {
        unreachable(
            "token_unavailable",
            format!(
                "the token file {} cannot be read: {}",
                r.token_file.display(),
                e.message()
            ),
        )
    })?;
    let client = crate::remote::Client::new(
        crate::remote::Endpoint {
            base: rm.endpoint.clone(),
            repository: rm.repository.clone(),
            profile: rm.profile.clone(),
        },
        token,
    )?;
    let req = crate::workflow::service::facade::OperationRequest::ChangeSubject(
        crate::workflow::service::facade::ChangeRequest {
            change: crate::workflow::service::change::ChangeSel::Id(r.change.clone()),
        },
    );
    let answer = client.op(&req).map_err(|e| {
        let reason = match e.code() {
            Code::Unauthorized | Code::Forbidden => "token_rejected",
            Code::EndpointUnreachable => "endpoint_unreachable",
            Code::NotFound => "change_not_found",
            _ => "endpoint_response_invalid",
        };
        unreachable(
            reason,
            format!(
                "the endpoint {} (repository {}, profile {}) did not answer for Change {} with \
                 this token: {}",
                rm.endpoint,
                rm.repository,
                rm.profile,
                r.change,
                e.message()
            ),
        )
        .with("cause", e.code().as_str())
    })?;
    if answer.get("change_id").and_then(Value::as_str) != Some(r.change.as_str()) {
        return Err(unreachable(
            "endpoint_response_invalid",
            format!("the endpoint {} answered for another Change", rm.endpoint),
        ));
    }
    Ok(())
}

/// `install-stop`: checks the hook can reach its authority
/// ([`check_reachable`]), then writes it. Nothing is written on a refusal.
pub fn install_stop(r: &InstallStopRequest) -> Result<InstallStopOutput> {
    check_reachable(r)?;
    super::check_workspace(&r.workspace)?;
    let command = hook_command(r)?;
    let exe_word = shell_quote(&text(&r.executable, "the agent-task executable")?);
    let ws_word = shell_quote(&text(&r.workspace, "--workspace")?);
    if r.repo_hooks && r.agent != Agent::Codex {
        return Err(Error::new(
            Code::Usage,
            "--repo-hooks is for Codex; Claude Code's hook goes into .claude/settings.local.json",
        ));
    }
    // (directory, file relative to it, inside the workspace, scope, ours)
    let (base, rel, in_workspace, scope, ours) = match (r.agent, r.repo_hooks) {
        (Agent::Claude, _) => (
            r.workspace.clone(),
            CLAUDE_LOCAL.to_owned(),
            true,
            "workspace_local",
            Ours::new(&exe_word, None),
        ),
        (Agent::Codex, true) => (
            r.workspace.clone(),
            CODEX_REPO.to_owned(),
            true,
            "repository",
            Ours::new(&exe_word, None),
        ),
        (Agent::Codex, false) => {
            let home = r.codex_home.clone().ok_or_else(|| {
                Error::new(
                    Code::Config,
                    "no Codex home: set CODEX_HOME or HOME (or pass --repo-hooks)",
                )
            })?;
            text(&home, "the Codex home")?;
            if std::fs::symlink_metadata(&home).is_err() {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(&home)
                    .map_err(|e| Error::io("create", &home, e))?;
            }
            (
                home,
                "hooks.json".to_owned(),
                false,
                "user",
                Ours::new(&exe_word, Some(&ws_word)),
            )
        }
    };
    let path = base.join(&rel);
    let shown = if in_workspace {
        rel.clone()
    } else {
        path.display().to_string()
    };
    let doc = read_json(&path, &shown)?.unwrap_or_else(|| Value::Object(Map::new()));
    // Refuse before writing anything: the legacy shared file must be readable.
    let legacy = if r.agent == Agent::Claude {
        let p = r.workspace.join(CLAUDE_SHARED);
        read_json(&p, CLAUDE_SHARED)?
            .and_then(|d| remove(&d, &Ours::new(&exe_word, None)))
            .map(|d| (p, d))
    } else {
        None
    };
    let (doc, action) = merge(doc, &command, &ours)?;
    let mut warnings = Vec::new();
    let mut excluded_in = None;
    if in_workspace {
        match git_exclude_file(&r.workspace) {
            Some(f) => {
                exclude(&f, &rel)?;
                excluded_in = Some(f.display().to_string());
            }
            None => warnings.push(format!(
                "the workspace is not the top of a git work tree, so {rel} cannot be excluded and \
                 every checkpoint would include it: add it to .gitignore"
            )),
        }
    }
    if action != "unchanged" {
        super::write_project_file(&base, &rel, &render(&doc)?)?;
    }
    let mut removed_from = None;
    if let Some((p, d)) = legacy {
        super::write_project_file(&r.workspace, CLAUDE_SHARED, &render(&d)?)?;
        removed_from = Some(p.display().to_string());
    }
    Ok(InstallStopOutput {
        settings_file: shown,
        scope,
        action,
        command,
        excluded_in,
        removed_from,
        warnings,
        instructions: "Agent guidance: the \"Workflow tasks\" block that `agent-task init-repo` writes into AGENTS.md and CLAUDE.md",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("/a/b-c.d"), "/a/b-c.d");
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn merge_keeps_other_hooks_and_is_idempotent() {
        let ours = Ours::new("/bin/at", None);
        let doc = json!({"model": "x", "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "other"}]}],
                          "PreToolUse": [{"matcher": "Bash", "hooks": []}]}});
        let (d1, a1) = merge(
            doc,
            "/bin/at --data-dir /d task-stop C --workspace /w",
            &ours,
        )
        .expect("m");
        assert_eq!(a1, "added");
        assert_eq!(d1["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        assert_eq!(d1["model"], "x");
        let (d2, a2) = merge(
            d1.clone(),
            "/bin/at --data-dir /d task-stop C --workspace /w",
            &ours,
        )
        .expect("m");
        assert_eq!((a2, &d2), ("unchanged", &d1));
        let (d3, a3) = merge(
            d2,
            "/bin/at --data-dir /e task-stop C --workspace /w",
            &ours,
        )
        .expect("m");
        assert_eq!(a3, "replaced");
        assert_eq!(d3["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        assert!(merge(json!([]), "x", &ours).is_err());
        assert!(merge(json!({"hooks": {"Stop": {}}}), "x", &ours).is_err());
        // Removing ours leaves the other hook.
        let left = remove(&d3, &ours).expect("removed");
        assert_eq!(
            left["hooks"]["Stop"],
            json!([{"hooks": [{"type": "command", "command": "other"}]}])
        );
        assert!(remove(&left, &ours).is_none());
    }

    #[test]
    fn a_user_level_file_keeps_one_entry_per_workspace() {
        let a = Ours::new("/bin/at", Some("/w/a"));
        let b = Ours::new("/bin/at", Some("/w/b"));
        let (d, _) = merge(
            json!({}),
            "/bin/at --data-dir /d task-codex-stop C --workspace /w/a",
            &a,
        )
        .expect("a");
        let (d, act) = merge(
            d,
            "/bin/at --data-dir /d task-codex-stop D --workspace /w/b",
            &b,
        )
        .expect("b");
        assert_eq!(act, "added");
        assert_eq!(d["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        let (d, act) = merge(
            d,
            "/bin/at --data-dir /e task-codex-stop C --workspace /w/a",
            &a,
        )
        .expect("a again");
        assert_eq!(act, "replaced");
        assert_eq!(d["hooks"]["Stop"].as_array().map(Vec::len), Some(2));
        // A workspace that is a prefix of another is not the other.
        assert!(
            !Ours::new("/bin/at", Some("/w/a"))
                .matches("/bin/at x task-codex-stop C --workspace /w/ab")
        );
    }
}
