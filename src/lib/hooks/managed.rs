//! `install-stop --managed`: one machine-wide Stop hook in the agents'
//! managed configuration, which no user or project setting can remove.
//!
//! - Claude Code reads managed settings from `/etc/claude-code/managed-settings.json`
//!   and every `*.json` of `/etc/claude-code/managed-settings.d/` (sorted by
//!   name, merged). The hook goes into a drop-in file of its own
//!   ([`CLAUDE_DROP_IN`]) by default, so no other byte of the operator's
//!   policy is touched. `--settings-file` names another file (a test's, or
//!   the base file): a JSON object in the form this module renders (2-space
//!   pretty, sorted keys) keeps every other key byte for byte; a file in
//!   another form, or not JSON, is refused and left as it is.
//! - Codex reads admin requirements from `/etc/codex/requirements.toml`:
//!   the hook is one `[[hooks.Stop]]` group between marker comments
//!   appended to the file; the rest of the file is not rewritten. The file
//!   is parsed before (not TOML: refused) and after the splice (the
//!   result must parse and hold the hook, else nothing is written).
//!
//! `--exclusive` also sets `allowManagedHooksOnly` /
//! `allow_managed_hooks_only`, which disables every non-managed hook of
//! every user of the machine (hence a warning). `--uninstall` removes the
//! hook (and, with `--exclusive`, that key); a file left empty is removed.
//! Every write is a temp file, fsync and rename.
//!
//! The hook runs `task-stop --managed` (`task-codex-stop --managed`): the
//! invoking user is found by real uid in the root-owned map ([`HOOKS_MAP`],
//! see [`super::stop::managed`]).

use super::install::{Agent, HOOK_TIMEOUT_S, Ours, merge, read_json, remove, render, shell_quote};
use crate::error::{Code, Error, Result};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

/// Claude Code's base managed settings file (Linux).
pub const CLAUDE_MANAGED: &str = "/etc/claude-code/managed-settings.json";
/// The drop-in file `install-stop --managed` writes by default.
pub const CLAUDE_DROP_IN: &str = "/etc/claude-code/managed-settings.d/agent-task.json";
/// Codex's system requirements file (Unix).
pub const CODEX_REQUIREMENTS: &str = "/etc/codex/requirements.toml";
/// The root-owned uid map the managed hook reads.
pub const HOOKS_MAP: &str = "/etc/agent-task/hooks.json";

/// Claude Code's managed-only key that ignores every non-managed hook.
pub const CLAUDE_EXCLUSIVE_KEY: &str = "allowManagedHooksOnly";
/// Codex's requirements-only key that ignores every non-managed hook.
pub const CODEX_EXCLUSIVE_KEY: &str = "allow_managed_hooks_only";

const BEGIN: &str = "# agent-task:managed-stop-hook:begin (written by `agent-task install-stop --managed`; replaced on reinstall)";
const END: &str = "# agent-task:managed-stop-hook:end";
const EXCLUSIVE_LINE: &str =
    "allow_managed_hooks_only = true # agent-task:managed-stop-hook:exclusive";

/// `install-stop --managed` request.
#[derive(Debug, Clone)]
pub struct ManagedRequest {
    /// The agents whose managed file is edited.
    pub agents: Vec<Agent>,
    /// The `agent-task` executable the hook runs (absolute).
    pub executable: PathBuf,
    /// A map other than [`HOOKS_MAP`] (absolute), written into the command.
    pub hooks_map: Option<PathBuf>,
    /// Claude Code's file (default [`CLAUDE_DROP_IN`]).
    pub settings_file: Option<PathBuf>,
    /// Codex's file (default [`CODEX_REQUIREMENTS`]).
    pub requirements_file: Option<PathBuf>,
    /// Also write (or, with `uninstall`, remove) the managed-only key.
    pub exclusive: bool,
    /// Remove the hook instead.
    pub uninstall: bool,
}

/// What happened to one file.
#[derive(Debug, Serialize)]
pub struct ManagedFile {
    /// `claude` or `codex`.
    pub agent: Agent,
    /// The file.
    pub file: String,
    /// `added`, `replaced`, `unchanged`, `removed` or `absent`.
    pub action: &'static str,
    /// Whether the file was created (install) or deleted (uninstall).
    pub file_created_or_deleted: bool,
    /// The command registered (install).
    pub command: Option<String>,
}

/// `install-stop --managed` output.
#[derive(Debug, Serialize)]
pub struct ManagedOutput {
    /// One row per file.
    pub files: Vec<ManagedFile>,
    /// The uid map the hook reads.
    pub hooks_map: String,
    /// What the operator should know.
    pub warnings: Vec<String>,
}

/// The command the managed hook runs.
pub fn managed_command(exe: &Path, agent: Agent, map: Option<&Path>) -> Result<String> {
    let text = |p: &Path, what: &str| {
        if !p.is_absolute() {
            return Err(Error::new(
                Code::Usage,
                format!("{what} must be an absolute path"),
            ));
        }
        p.to_str()
            .map(str::to_owned)
            .ok_or_else(|| Error::new(Code::InvalidInput, format!("{what} is not UTF-8")))
    };
    let mut words = vec![
        text(exe, "the agent-task executable")?,
        agent.subcommand().to_owned(),
        "--managed".to_owned(),
    ];
    if let Some(m) = map {
        words.extend(["--hooks-map".to_owned(), text(m, "--hooks-map")?]);
    }
    Ok(words
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" "))
}

fn invalid(path: &Path, msg: &str) -> Error {
    Error::new(
        Code::InvalidInput,
        format!("{}: {msg}; nothing was written", path.display()),
    )
    .with("file", path.display().to_string())
}

/// Writes `text` to `path` atomically (parents created 0755, a new file
/// 0644: every user's agent reads these files).
fn write(path: &Path, text: &str) -> Result<()> {
    let (dir, name) = match (path.parent(), path.file_name().and_then(|n| n.to_str())) {
        (Some(d), Some(n)) if d.is_absolute() => (d, n),
        _ => {
            return Err(Error::new(
                Code::Usage,
                format!("{} must be an absolute file path", path.display()),
            ));
        }
    };
    // Every user's agent reads these files: each directory created is
    // 0755 whatever the process umask (077).
    let missing: Vec<&Path> = dir
        .ancestors()
        .take_while(|d| std::fs::symlink_metadata(d).is_err())
        .collect();
    if !missing.is_empty() {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("create", dir, e))?;
        for d in missing {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o755))
                .map_err(|e| Error::io("chmod", d, e))?;
        }
    }
    super::write_project_file(dir, name, text)
}

fn delete(path: &Path) -> Result<()> {
    std::fs::remove_file(path).map_err(|e| Error::io("remove", path, e))?;
    match path.parent() {
        Some(d) => crate::store::private_fs::sync_dir(d),
        None => Ok(()),
    }
}

/// Claude Code: the document after installing `command`, or after
/// removing it; `None` for the file's deletion.
fn claude_edit(
    path: &Path,
    command: &str,
    ours: &Ours,
    exclusive: bool,
    uninstall: bool,
) -> Result<(Option<Option<String>>, &'static str, bool)> {
    let current = super::read_project_file(path)?;
    let doc = match current.as_deref() {
        None => None,
        Some(t) if t.trim().is_empty() => Some(Value::Object(Map::new())),
        Some(t) => Some(
            serde_json::from_str::<Value>(t)
                .map_err(|e| invalid(path, &format!("not valid JSON ({e})")))?,
        ),
    };
    if let (Some(text), Some(d)) = (&current, &doc)
        && !text.trim().is_empty()
        && render(d)? != *text
    {
        return Err(invalid(
            path,
            "this JSON is not in the form install-stop rewrites byte for byte (2-space pretty, \
             sorted keys, one trailing newline); leave it as it is and let the hook go into its \
             own drop-in file (the default), or reformat it",
        ));
    }
    if doc.as_ref().is_some_and(|d| !d.is_object()) {
        return Err(invalid(path, "the top level is not a JSON object"));
    }
    if uninstall {
        let Some(d) = doc else {
            return Ok((None, "absent", false));
        };
        let mut next = remove(&d, ours);
        if exclusive {
            let mut base = next.clone().unwrap_or_else(|| d.clone());
            if let Some(m) = base.as_object_mut()
                && m.remove(CLAUDE_EXCLUSIVE_KEY).is_some()
            {
                next = Some(base);
            }
        }
        let Some(mut n) = next else {
            return Ok((None, "absent", false));
        };
        prune(&mut n);
        if n.as_object().is_some_and(Map::is_empty) {
            return Ok((Some(None), "removed", true));
        }
        return Ok((Some(Some(render(&n)?)), "removed", false));
    }
    let created = doc.is_none();
    let (mut n, mut action) = merge(
        doc.unwrap_or_else(|| Value::Object(Map::new())),
        command,
        ours,
    )?;
    if exclusive
        && let Some(m) = n.as_object_mut()
        && m.get(CLAUDE_EXCLUSIVE_KEY) != Some(&Value::Bool(true))
    {
        m.insert(CLAUDE_EXCLUSIVE_KEY.to_owned(), Value::Bool(true));
        if action == "unchanged" {
            action = "replaced";
        }
    }
    if action == "unchanged" {
        return Ok((None, action, false));
    }
    Ok((Some(Some(render(&n)?)), action, created))
}

/// Drops a `hooks.Stop` left empty, then a `hooks` left empty.
fn prune(doc: &mut Value) {
    let Some(m) = doc.as_object_mut() else { return };
    if let Some(h) = m.get_mut("hooks").and_then(Value::as_object_mut) {
        if h.get("Stop")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            h.remove("Stop");
        }
        if h.is_empty() {
            m.remove("hooks");
        }
    }
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\u{:04X}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn parse_toml(path: &Path, text: &str) -> Result<toml_edit::Document<String>> {
    toml_edit::Document::parse(text.to_owned())
        .map_err(|e| invalid(path, &format!("not valid TOML ({})", e.message())))
}

/// The commands of the `Stop` hooks of a parsed requirements document.
fn toml_stop_commands(doc: &toml_edit::Document<String>) -> Vec<String> {
    fn tables(item: &toml_edit::Item) -> Vec<&dyn toml_edit::TableLike> {
        if let Some(a) = item.as_array_of_tables() {
            return a.iter().map(|t| t as &dyn toml_edit::TableLike).collect();
        }
        item.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_inline_table())
                    .map(|t| t as &dyn toml_edit::TableLike)
                    .collect()
            })
            .unwrap_or_default()
    }
    let Some(stop) = doc.as_item().get("hooks").and_then(|h| h.get("Stop")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for group in tables(stop) {
        if let Some(hooks) = group.get("hooks") {
            for h in tables(hooks) {
                if let Some(c) = h.get("command").and_then(toml_edit::Item::as_str) {
                    out.push(c.to_owned());
                }
            }
        }
    }
    out
}

/// Removes the marked block (and the exclusive line, when asked) from
/// `text`. Refuses a half or doubled block.
fn strip_block(path: &Path, text: &str, exclusive_line: bool) -> Result<(String, bool)> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let begins = lines.iter().filter(|l| l.trim_end() == BEGIN).count();
    let ends = lines.iter().filter(|l| l.trim_end() == END).count();
    if begins != ends || begins > 1 {
        return Err(invalid(
            path,
            "the agent-task block's markers are incomplete or repeated; fix them by hand",
        ));
    }
    let mut out = String::with_capacity(text.len());
    let mut inside = false;
    let mut changed = false;
    for l in lines {
        let t = l.trim_end();
        if t == BEGIN {
            inside = true;
            changed = true;
            continue;
        }
        if t == END {
            inside = false;
            continue;
        }
        if inside || (exclusive_line && t == EXCLUSIVE_LINE) {
            changed |= !inside;
            continue;
        }
        out.push_str(l);
    }
    Ok((out, changed))
}

fn codex_edit(
    path: &Path,
    command: &str,
    exclusive: bool,
    uninstall: bool,
) -> Result<(Option<Option<String>>, &'static str, bool)> {
    let current = super::read_project_file(path)?;
    let text = current.clone().unwrap_or_default();
    let doc = parse_toml(path, &text)?;
    if uninstall {
        if current.is_none() {
            return Ok((None, "absent", false));
        }
        let (rest, changed) = strip_block(path, &text, exclusive)?;
        if !changed {
            return Ok((None, "absent", false));
        }
        parse_toml(path, &rest)?;
        // The block was appended after a blank line: take that back too.
        let rest = rest.strip_suffix('\n').map_or(rest.clone(), |r| {
            if r.ends_with('\n') || r.is_empty() {
                r.to_owned()
            } else {
                rest.clone()
            }
        });
        if rest.trim().is_empty() {
            return Ok((Some(None), "removed", true));
        }
        return Ok((Some(Some(rest)), "removed", false));
    }
    let top_level = doc.as_item().get(CODEX_EXCLUSIVE_KEY);
    let has_our_exclusive = text.lines().any(|l| l.trim_end() == EXCLUSIVE_LINE);
    if exclusive && !has_our_exclusive && top_level.is_some() {
        return Err(invalid(
            path,
            "allow_managed_hooks_only is already set in this file; set it by hand (or drop --exclusive)",
        ));
    }
    let (mut rest, had_block) = strip_block(path, &text, false)?;
    // Without a block the file ends where the operator left it.
    if had_block
        && let Some(r) = rest.strip_suffix('\n')
        && (r.ends_with('\n') || r.is_empty())
    {
        rest = r.to_owned();
    }
    let mut next = String::with_capacity(rest.len() + 512);
    if exclusive && !has_our_exclusive {
        next.push_str(EXCLUSIVE_LINE);
        next.push('\n');
    }
    next.push_str(&rest);
    if !next.is_empty() {
        if !next.ends_with('\n') {
            next.push('\n');
        }
        next.push('\n');
    }
    next.push_str(&format!(
        "{BEGIN}\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = {}\ntimeout = {HOOK_TIMEOUT_S}\n{END}\n",
        toml_string(command)
    ));
    let after = toml_edit::Document::parse(next.clone()).map_err(|e| {
        invalid(
            path,
            &format!(
                "the hook block cannot be added to this file's `hooks` as it stands ({}); \
                 fix it by hand",
                e.message()
            ),
        )
    })?;
    if !toml_stop_commands(&after).iter().any(|c| c == command)
        || (exclusive
            && after
                .as_item()
                .get(CODEX_EXCLUSIVE_KEY)
                .and_then(toml_edit::Item::as_bool)
                != Some(true))
    {
        return Err(invalid(
            path,
            "the file's `hooks` table does not take the hook block as it stands; fix it by hand",
        ));
    }
    if current.as_deref() == Some(next.as_str()) {
        return Ok((None, "unchanged", false));
    }
    let action = if had_block { "replaced" } else { "added" };
    Ok((Some(Some(next)), action, current.is_none()))
}

/// Whether the managed hook is installed in `file` for `agent`: the
/// commands of its `Stop` hooks that run `task-stop --managed`
/// (`task-codex-stop --managed`), empty when none (or no file). A file
/// that cannot be read or parsed is an error. For `deploy check`.
pub fn managed_hook_installed(agent: Agent, file: &Path) -> Result<Vec<String>> {
    let needle = format!(" {} --managed", agent.subcommand());
    let cmds = match agent {
        Agent::Claude => {
            let Some(doc) = read_json(file, &file.display().to_string())? else {
                return Ok(Vec::new());
            };
            doc.get("hooks")
                .and_then(|h| h.get("Stop"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|g| g.get("hooks").and_then(Value::as_array))
                .flatten()
                .filter_map(|h| h.get("command").and_then(Value::as_str))
                .map(str::to_owned)
                .collect::<Vec<_>>()
        }
        Agent::Codex => match super::read_project_file(file)? {
            None => Vec::new(),
            Some(t) => toml_stop_commands(&parse_toml(file, &t)?),
        },
    };
    Ok(cmds
        .into_iter()
        .filter(|c| c.contains(&needle) && (c.ends_with(" --managed") || c.contains(" --managed ")))
        .collect())
}

/// `install-stop --managed` (and `--uninstall`). Root only. Every file is
/// checked (and its new text computed) before any is written.
pub fn install(r: &ManagedRequest) -> Result<ManagedOutput> {
    if !rustix::process::geteuid().is_root() {
        return Err(Error::new(
            Code::Forbidden,
            "install-stop --managed writes the machine's managed agent settings: run it as root",
        ));
    }
    if let Some(m) = &r.hooks_map
        && !m.is_absolute()
    {
        return Err(Error::new(
            Code::Usage,
            "--hooks-map must be an absolute path",
        ));
    }
    let exe_word =
        shell_quote(r.executable.to_str().ok_or_else(|| {
            Error::new(Code::InvalidInput, "the agent-task executable is not UTF-8")
        })?);
    let ours = Ours::new(&exe_word, None);
    let mut plans = Vec::new();
    for agent in &r.agents {
        let command = managed_command(&r.executable, *agent, r.hooks_map.as_deref())?;
        let path = match agent {
            Agent::Claude => r
                .settings_file
                .clone()
                .unwrap_or_else(|| PathBuf::from(CLAUDE_DROP_IN)),
            Agent::Codex => r
                .requirements_file
                .clone()
                .unwrap_or_else(|| PathBuf::from(CODEX_REQUIREMENTS)),
        };
        if !path.is_absolute() {
            return Err(Error::new(
                Code::Usage,
                format!("{} must be an absolute path", path.display()),
            ));
        }
        let (text, action, created) = match agent {
            Agent::Claude => claude_edit(&path, &command, &ours, r.exclusive, r.uninstall)?,
            Agent::Codex => codex_edit(&path, &command, r.exclusive, r.uninstall)?,
        };
        plans.push((*agent, path, text, action, created, command));
    }
    let mut files = Vec::new();
    for (agent, path, text, action, created, command) in plans {
        match &text {
            Some(Some(t)) => write(&path, t)?,
            Some(None) => delete(&path)?,
            None => {}
        }
        files.push(ManagedFile {
            agent,
            file: path.display().to_string(),
            action,
            file_created_or_deleted: created,
            command: (!r.uninstall).then_some(command),
        });
    }
    let mut warnings = Vec::new();
    if r.exclusive && !r.uninstall {
        warnings.push(format!(
            "--exclusive set {CLAUDE_EXCLUSIVE_KEY} / {CODEX_EXCLUSIVE_KEY}: every non-managed \
             hook of every user of this machine (their own settings' and projects' hooks) is now \
             ignored"
        ));
    }
    if !r.uninstall {
        warnings.extend(executable_warning(&r.executable));
    }
    Ok(ManagedOutput {
        files,
        hooks_map: r
            .hooks_map
            .as_deref()
            .unwrap_or(Path::new(HOOKS_MAP))
            .display()
            .to_string(),
        warnings,
    })
}

/// A warning when the hook's executable is not root-owned or others can
/// write it (the hook runs it for every user).
fn executable_warning(exe: &Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let md = std::fs::metadata(exe).ok()?;
    (md.uid() != 0 || md.mode() & 0o022 != 0).then(|| {
        format!(
            "{} is not root-owned or is writable by others: the machine-wide hook runs it for \
             every user; install a root-owned copy (e.g. /usr/local/bin/agent-task) and run \
             install-stop --managed from it",
            exe.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const CMD: &str = "/usr/local/bin/agent-task task-codex-stop --managed";

    #[test]
    fn toml_splice_keeps_other_bytes_and_is_idempotent() {
        let before = "# operator's policy\nallowed_approval_policies = [\"untrusted\"]\n\n[hooks]\nmanaged_dir = \"/opt/hooks\"\n\n[[hooks.PreToolUse]]\nmatcher = \"Bash\"\n[[hooks.PreToolUse.hooks]]\ntype = \"command\"\ncommand = \"/opt/hooks/guard\"\n";
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("requirements.toml");
        std::fs::write(&f, before).expect("w");
        let (next, action, created) = codex_edit(&f, CMD, false, false).expect("edit");
        assert_eq!((action, created), ("added", false));
        let next = next.flatten().expect("text");
        assert!(next.starts_with(before), "{next}");
        std::fs::write(&f, &next).expect("w");
        let parsed = parse_toml(&f, &next).expect("parse");
        assert_eq!(toml_stop_commands(&parsed), vec![CMD.to_owned()]);
        let (again, action, _) = codex_edit(&f, CMD, false, false).expect("again");
        assert_eq!((again, action), (None, "unchanged"));
        // --exclusive adds the top-level key above every table.
        let (ex, action, _) = codex_edit(&f, CMD, true, false).expect("exclusive");
        assert_eq!(action, "replaced");
        let ex = ex.flatten().expect("text");
        assert!(ex.starts_with(EXCLUSIVE_LINE));
        std::fs::write(&f, &ex).expect("w");
        // Uninstall with --exclusive restores the original bytes.
        let (back, action, deleted) = codex_edit(&f, CMD, true, true).expect("uninstall");
        assert_eq!((action, deleted), ("removed", false));
        assert_eq!(back.flatten().as_deref(), Some(before));
        // Not TOML: refused.
        std::fs::write(&f, "[[[ nope").expect("w");
        assert_eq!(
            codex_edit(&f, CMD, false, false).err().map(|e| e.code()),
            Some(Code::InvalidInput)
        );
        // A static `Stop` array the block cannot extend: refused.
        std::fs::write(&f, "[hooks]\nStop = []\n").expect("w");
        assert!(codex_edit(&f, CMD, false, false).is_err());
        // A command that needs escaping round-trips.
        std::fs::write(&f, "").expect("w");
        let odd = "/opt/a \"b\"\\c task-codex-stop --managed";
        let (t, _, created) = codex_edit(&f, odd, false, false).expect("odd");
        assert!(created || t.is_some());
        let t = t.flatten().expect("text");
        assert_eq!(
            toml_stop_commands(&parse_toml(&f, &t).expect("p")),
            vec![odd.to_owned()]
        );
    }

    #[test]
    fn claude_json_in_another_form_is_refused_and_canonical_json_keeps_other_keys() {
        let dir = tempfile::tempdir().expect("tmp");
        let f = dir.path().join("managed-settings.json");
        let ours = Ours::new("/usr/local/bin/agent-task", None);
        let cmd = "/usr/local/bin/agent-task task-stop --managed";
        std::fs::write(&f, "{\"zeta\":1,\"alpha\":{\"b\":2}}").expect("w");
        assert_eq!(
            claude_edit(&f, cmd, &ours, false, false)
                .err()
                .map(|e| e.code()),
            Some(Code::InvalidInput)
        );
        std::fs::write(&f, "not json").expect("w");
        assert!(claude_edit(&f, cmd, &ours, false, false).is_err());
        let canonical = render(&serde_json::json!({"zeta": 1, "permissions": {"deny": ["x"]}}))
            .expect("render");
        std::fs::write(&f, &canonical).expect("w");
        let (t, action, _) = claude_edit(&f, cmd, &ours, true, false).expect("edit");
        assert_eq!(action, "added");
        let t = t.flatten().expect("text");
        let v: Value = serde_json::from_str(&t).expect("json");
        assert_eq!(v["zeta"], 1);
        assert_eq!(v[CLAUDE_EXCLUSIVE_KEY], true);
        std::fs::write(&f, &t).expect("w");
        let (back, action, deleted) = claude_edit(&f, cmd, &ours, true, true).expect("un");
        assert_eq!((action, deleted), ("removed", false));
        assert_eq!(back.flatten().as_deref(), Some(canonical.as_str()));
    }
}
