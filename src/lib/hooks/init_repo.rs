//! `init-repo`: writes the managed "Workflow tasks" block into the agent
//! instruction files of a workspace, between stable markers: the local
//! agent's commands, or (with `--endpoint`) the endpoint agent's. Re-running
//! replaces the block in place and leaves every other byte alone.

use crate::error::{Code, Error, Result};
use serde::Serialize;
use std::path::Path;

/// First line of the managed block.
pub const BEGIN: &str = "<!-- agent-task:workflow-tasks:begin (managed by `agent-task init-repo`; edits inside are replaced) -->";
/// Last line of the managed block.
pub const END: &str = "<!-- agent-task:workflow-tasks:end -->";
const BEGIN_PREFIX: &str = "<!-- agent-task:workflow-tasks:begin";

/// The files the block is written into, relative to the workspace.
pub const FILES: [&str; 4] = [
    "AGENTS.md",
    "CLAUDE.md",
    ".cursor/rules/agent-task.mdc",
    ".github/copilot-instructions.md",
];

/// Front matter of a new Cursor rule file (always applied).
const MDC_FRONT: &str =
    "---\ndescription: Workflow tasks with agent-task\nglobs:\nalwaysApply: true\n---\n\n";

/// Which agent the instructions are for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Form {
    /// An agent with the data directory on its own host (the single-user
    /// set-up): local `collect --collector-dir`.
    Local,
    /// A privilege-separated agent that reaches its authority only through
    /// `endpoint` and collects through the operator's sudo wrapper.
    Endpoint {
        /// The endpoint's base URL (shown; the agent's commands read it
        /// from `AGENT_TASK_ENDPOINT`).
        endpoint: String,
        /// The wrapper (absolute).
        collect_wrapper: std::path::PathBuf,
    },
}

/// The block's text for the local form (markers included, trailing newline).
pub fn block() -> String {
    block_for(&Form::Local)
}

/// The block's text (markers included, trailing newline).
pub fn block_for(form: &Form) -> String {
    let body = match form {
        Form::Local => "\
## Workflow tasks

This repository's changes are checked by operator-installed workflow tasks
(`agent-task`). Discover, then fetch only what you need:

1. `agent-task capabilities` — the capability and supported schema versions.
2. `agent-task next --workspace .` — the typed next operation (data, not a command).
3. `agent-task instructions TASK` — the task's entrypoint; every required criterion is inline.
4. `agent-task reference TASK NAME` — one named reference, only when you need it.
5. Collector tasks: `agent-task collector-claim TASK`, then
   `agent-task collect --descriptor FILE --collector-dir DIR`
   (`agent-task retry-upload` resends the identical retained bytes), then
   `agent-task finalize --workspace .`.
6. `agent-task qualify --workspace .` — finish only when `qualified` is true.

After editing files, `agent-task checkpoint --workspace .` makes a new subject
with fresh task ids. A `schema_mismatch` answer names the server's schema
versions and a fixed hint; it never contains a command to run. The Stop hook
(`agent-task install-stop`) blocks finishing until the change is qualified.
"
        .to_owned(),
        Form::Endpoint {
            endpoint,
            collect_wrapper,
        } => format!(
            "\
## Workflow tasks

This repository's changes are checked by operator-installed workflow tasks
(`agent-task`), through the workspace endpoint {endpoint}. Your commands read
`AGENT_TASK_ENDPOINT`, `AGENT_TASK_REPOSITORY`, `AGENT_TASK_PROFILE` and
`AGENT_TASK_TOKEN_FILE` from your environment (or take `--endpoint`,
`--repository`, `--profile`, `--token-file`); there is no data directory on
this host. Name your Change with `--change CHANGE` (the endpoint knows no
workspace path). Discover, then fetch only what you need:

1. `agent-task change open` — once: opens your Change (prints its id).
2. `agent-task checkpoint --change CHANGE --workspace .` — after editing
   files: uploads what the endpoint lacks and makes a new subject with fresh
   task ids.
3. `agent-task next --change CHANGE` — the typed next operation (data, not a command).
4. `agent-task instructions TASK` — the task's entrypoint; every required criterion is inline.
5. `agent-task reference TASK NAME` — one named reference, only when you need it.
6. Collector tasks: `agent-task collector-claim TASK --descriptor-out D`, then
   `cat \"$AGENT_TASK_TOKEN_FILE\" D | sudo -n -u OPERATOR {wrapper}`
   (the operator's collector; it takes nothing else), then
   `agent-task finalize --change CHANGE`.
7. `agent-task qualify --change CHANGE` — finish only when `qualified` is true.

A `schema_mismatch` answer names the server's schema versions and a fixed
hint; it never contains a command to run. The Stop hook blocks finishing
until the change is qualified; the operator lands it.
",
            wrapper = collect_wrapper.display()
        ),
    };
    format!("{BEGIN}\n{body}{END}\n")
}

/// What happened to one file.
#[derive(Debug, Serialize)]
pub struct FileOutcome {
    /// Path relative to the workspace.
    pub path: String,
    /// `created`, `replaced`, `appended` or `unchanged`.
    pub action: &'static str,
}

/// `init-repo` output.
#[derive(Debug, Serialize)]
pub struct InitRepoOutput {
    /// One row per instruction file.
    pub files: Vec<FileOutcome>,
}

/// Places the block in `text`: replaces the one existing block, or
/// appends after the current content. Refuses a half or doubled block.
pub fn place(text: &str, block: &str) -> Result<(String, &'static str)> {
    let begins: Vec<usize> = text.match_indices(BEGIN_PREFIX).map(|(i, _)| i).collect();
    let ends: Vec<usize> = text.match_indices(END).map(|(i, _)| i).collect();
    match (begins.as_slice(), ends.as_slice()) {
        ([], []) => {
            let mut out = text.to_owned();
            if !out.is_empty() {
                if !out.ends_with('\n') {
                    out.push('\n');
                }
                out.push('\n');
            }
            out.push_str(block);
            Ok((out, "appended"))
        }
        ([b], [e]) if b < e => {
            let b = *b;
            // The block ends after the END marker line (and its newline).
            let mut end = e + END.len();
            if text[end..].starts_with('\n') {
                end += 1;
            }
            // A block starts at the beginning of its line.
            if b != 0 && !text[..b].ends_with('\n') {
                return Err(broken());
            }
            let mut out = String::with_capacity(text.len() + block.len());
            out.push_str(&text[..b]);
            out.push_str(block);
            out.push_str(&text[end..]);
            let action = if out == text { "unchanged" } else { "replaced" };
            Ok((out, action))
        }
        _ => Err(broken()),
    }
}

fn broken() -> Error {
    Error::new(
        Code::Conflict,
        "the file holds an incomplete or repeated agent-task block; fix its markers by hand",
    )
}

/// Writes the block into every file of [`FILES`] under `workspace`.
/// Every file is checked before any is written.
pub fn init_repo(workspace: &Path, form: &Form) -> Result<InitRepoOutput> {
    super::check_workspace(workspace)?;
    if let Form::Endpoint { endpoint, .. } = form
        && (endpoint.chars().any(char::is_control) || endpoint.len() > 2048)
    {
        return Err(Error::new(
            Code::InvalidInput,
            "the endpoint URL is not printable",
        ));
    }
    let block = block_for(form);
    let mut plans = Vec::new();
    for rel in FILES {
        let path = workspace.join(rel);
        let (text, action) = match super::read_project_file(&path)? {
            Some(cur) => place(&cur, &block)?,
            None if rel.ends_with(".mdc") => (format!("{MDC_FRONT}{block}"), "created"),
            None => (block.clone(), "created"),
        };
        plans.push((rel, text, action));
    }
    let mut files = Vec::new();
    for (rel, text, action) in plans {
        if action != "unchanged" {
            super::write_project_file(workspace, rel, &text)?;
        }
        files.push(FileOutcome {
            path: rel.to_owned(),
            action,
        });
    }
    Ok(InitRepoOutput { files })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn place_appends_replaces_and_is_idempotent() {
        let b = block();
        let (t1, a1) = place("# Title\n\nown text", &b).expect("append");
        assert_eq!(a1, "appended");
        assert!(t1.starts_with("# Title\n\nown text\n\n"));
        let (t2, a2) = place(&t1, &b).expect("again");
        assert_eq!((t2.as_str(), a2), (t1.as_str(), "unchanged"));
        let old = t1.replace("Discover, then fetch", "OLD TEXT");
        let edited = format!("{old}\n## After\nmore\n");
        let (t3, a3) = place(&edited, &b).expect("replace");
        assert_eq!(a3, "replaced");
        assert_eq!(t3, format!("{t1}\n## After\nmore\n"));
    }

    #[test]
    fn broken_markers_are_refused() {
        let b = block();
        assert!(place(&format!("x\n{BEGIN}\nno end\n"), &b).is_err());
        assert!(place(&format!("{b}{b}"), &b).is_err());
        assert!(place(&format!("{END}\n{BEGIN}\n"), &b).is_err());
    }
}
