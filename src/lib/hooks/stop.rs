//! The read-only Stop hooks: `task-stop` (Claude Code) and
//! `task-codex-stop` (Codex). They decide whether the agent may finish:
//! only when the Change's current subject is qualified, the workspace is
//! clean at the qualified revision, and nothing moved while they looked.
//!
//! Read-only: the data directory is opened existing-only (a missing
//! directory or lock file blocks) with SQLite read-only flags and a schema
//! check (a schema that is not current blocks); the workspace is hashed in
//! memory; nothing is written except the hook's own continuation counter
//! ([`super::counter`]). The hook never runs what it suggests. Output
//! shapes and exit codes: `docs/hooks.md`.

use super::counter::{Counter, LIMIT, Reading};
use crate::clock::Clock;
use crate::contract::CAPABILITY;
use crate::error::Code;
use crate::workflow::service::change::{self, ChangeSel};
use crate::workflow::service::ops::AgentCtx;
use serde::Serialize;
use serde_json::{Map, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Largest stdin payload read.
pub const MAX_STDIN: u64 = 4 * 1024 * 1024;
/// Largest remote answer read.
pub const MAX_ANSWER: u64 = 256 * 1024;
/// Limit of the remote qualification call.
pub const REMOTE_TIMEOUT: Duration = Duration::from_secs(30);
/// Most failures accepted in an answer.
pub const MAX_FAILURES: usize = 32;
/// Most tasks accepted in an answer.
pub const MAX_TASKS: usize = 1024;

/// Which agent calls the hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Claude Code.
    Claude,
    /// Codex CLI.
    Codex,
}

/// The remote endpoint of a hook.
#[derive(Debug, Clone)]
pub struct Remote {
    /// Base URL (`http://host:port`).
    pub endpoint: String,
    /// Repository id of the workspace profile.
    pub repository: String,
    /// Profile id.
    pub profile: String,
}

/// One hook run.
pub struct StopRequest<'a> {
    /// Claude Code or Codex.
    pub flavor: Flavor,
    /// The guarded Change.
    pub change: String,
    /// The workspace the agent edits.
    pub workspace: PathBuf,
    /// The local data directory (the authority).
    pub data_dir: Option<PathBuf>,
    /// The agent's token file (absolute).
    pub token_file: Option<PathBuf>,
    /// The remote endpoint, when qualification is asked over HTTP.
    pub remote: Option<Remote>,
    /// The raw stdin payload.
    pub stdin: &'a [u8],
    /// Clock.
    pub clock: &'a dyn Clock,
    /// Lock wait (unused by reads, passed to the library context).
    pub timeout: Duration,
    /// Where the continuation counter lives (`None`: the default state dir).
    pub counter_dir: Option<PathBuf>,
}

/// What the hook prints and its exit code.
#[derive(Debug)]
pub struct StopOutcome {
    /// Exit code: 0 (pass or block) or 1 (malformed stdin, counter error).
    pub exit_code: u8,
    /// The JSON printed on stdout.
    pub stdout: StopOutput,
    /// A line for stderr (exit 1 only).
    pub stderr: Option<String>,
}

/// Whether the agent's `cwd` lies outside the guarded workspace (both
/// resolved; a workspace that cannot be resolved is not "outside": the
/// hook then blocks as usual).
fn outside_workspace(cwd: &str, workspace: &Path) -> bool {
    let Ok(ws) = std::fs::canonicalize(workspace) else {
        return false;
    };
    let cwd = std::fs::canonicalize(cwd).unwrap_or_else(|_| PathBuf::from(cwd));
    !cwd.starts_with(&ws)
}

/// Reads stdin with the size bound.
pub fn read_stdin() -> std::io::Result<Vec<u8>> {
    let mut b = Vec::new();
    std::io::stdin().take(MAX_STDIN + 1).read_to_end(&mut b)?;
    Ok(b)
}

/// The fields the hook uses from an agent's Stop payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Payload {
    /// Session id.
    pub session_id: String,
    /// The agent's working directory.
    pub cwd: String,
    /// Whether this stop follows a block by a Stop hook.
    pub stop_hook_active: bool,
}

fn string_field(m: &Map<String, Value>, k: &str, nullable: bool, max: usize) -> Result<(), String> {
    match m.get(k) {
        Some(Value::String(s)) if s.len() <= max => Ok(()),
        Some(Value::Null) if nullable => Ok(()),
        Some(_) => Err(format!("field {k} has the wrong type or is too long")),
        None => Err(format!("field {k} is missing")),
    }
}

/// Decodes a Stop payload. Claude Code: session_id, transcript_path, cwd,
/// hook_event_name "Stop", stop_hook_active (last_assistant_message
/// optional). Codex: session_id, turn_id, transcript_path (nullable), cwd,
/// hook_event_name "Stop", model, permission_mode, stop_hook_active,
/// last_assistant_message (nullable). Other fields are the agent's and are
/// ignored; the known ones are type- and size-checked.
pub fn decode_payload(flavor: Flavor, bytes: &[u8]) -> Result<Payload, String> {
    if bytes.len() as u64 > MAX_STDIN {
        return Err("stdin payload is over 4 MiB".into());
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|_| "stdin is not JSON".to_owned())?;
    let Value::Object(m) = v else {
        return Err("stdin is not a JSON object".into());
    };
    const PATH_MAX: usize = 4096;
    string_field(&m, "session_id", false, 256)?;
    string_field(&m, "cwd", false, PATH_MAX)?;
    string_field(&m, "hook_event_name", false, 64)?;
    match flavor {
        Flavor::Claude => {
            string_field(&m, "transcript_path", false, PATH_MAX)?;
            if m.contains_key("last_assistant_message") {
                string_field(&m, "last_assistant_message", true, MAX_STDIN as usize)?;
            }
        }
        Flavor::Codex => {
            string_field(&m, "turn_id", false, 256)?;
            string_field(&m, "transcript_path", true, PATH_MAX)?;
            string_field(&m, "model", false, 256)?;
            string_field(&m, "permission_mode", false, 64)?;
            string_field(&m, "last_assistant_message", true, MAX_STDIN as usize)?;
        }
    }
    if m.get("hook_event_name").and_then(Value::as_str) != Some("Stop") {
        return Err("hook_event_name is not Stop".into());
    }
    let session_id = m
        .get("session_id")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    if session_id.is_empty() {
        return Err("session_id is empty".into());
    }
    let stop_hook_active = m
        .get("stop_hook_active")
        .and_then(Value::as_bool)
        .ok_or_else(|| "field stop_hook_active is missing or not a boolean".to_owned())?;
    Ok(Payload {
        session_id,
        cwd: m
            .get("cwd")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        stop_hook_active,
    })
}

/// Fixed failure categories (no paths, no server text).
pub mod category {
    /// The data directory, its lock file or a database is missing, unsafe or not current.
    pub const LOCAL_STORE: &str = "local_store_unavailable";
    /// The workspace cannot be read or is not the Change's workspace.
    pub const WORKSPACE: &str = "workspace_unavailable";
    /// The token file cannot be read.
    pub const TOKEN: &str = "token_unavailable";
    /// The service could not be reached or answered an unexpected status.
    pub const SERVICE: &str = "service_request_failed";
    /// The token was refused (401/403, revoked or unknown).
    pub const TOKEN_REJECTED: &str = "token_rejected";
    /// The answer failed strict validation.
    pub const MALFORMED: &str = "malformed_response";
    /// The workspace has edits that are not checkpointed.
    pub const DIRTY: &str = "workspace_not_checkpointed";
    /// The workspace or the Change moved while the hook ran.
    pub const CHANGED: &str = "changed_during_run";
    /// The Change has no checkpoint yet.
    pub const NO_CHECKPOINT: &str = "no_checkpoint";
    /// The Change has landed (it is closed) and the workspace is not the
    /// landed revision.
    pub const LANDED: &str = "change_landed";
}

/// The fixed sentence of a block on a landed Change.
pub const LANDED_ACTION: &str = "This change has landed and is closed: open a new Change (agent-task change open) for further work, checkpoint it there, then try to finish again.";

/// Whether a failure code is a task that finished and failed (its
/// signed record says why: `agent-task explain`).
fn is_failed_task(code: &str) -> bool {
    matches!(code, "collector_not_passed" | "result_failed") || code.starts_with("review_")
}

/// The fixed sentence of a block on a Change with a failed task: where to
/// read why (a documented departure from "one sentence per
/// `next.operation`", docs/security.md). The change id is an id
/// (`[A-Za-z0-9._-]`), never text of the agent's.
pub fn failed_action(change_id: &str) -> String {
    format!(
        "A task failed: read why with agent-task explain --change {change_id} (the exit status and output tails from the signed record), fix the work, checkpoint a new subject (agent-task checkpoint), then try to finish again."
    )
}

/// The fixed sentence for a next operation.
pub fn next_action(op: &str) -> &'static str {
    match op {
        "collector_claim" => {
            "Claim the named collector task (agent-task collector-claim), run agent-task collect with the descriptor, then agent-task finalize, and try to finish again."
        }
        "reconcile" => {
            "Reconcile the named task's attempt (agent-task reconcile), then follow agent-task next."
        }
        "collector_finalize" => {
            "Create the receipt with agent-task finalize, then try to finish again."
        }
        "checkpoint" => {
            "Checkpoint the workspace (agent-task checkpoint) to make a new subject, then follow agent-task next."
        }
        _ => {
            "No operation is available on this subject: fix the work and checkpoint a new subject (agent-task checkpoint), or ask the operator, then try to finish again."
        }
    }
}

/// What the hook prints on stdout (`docs/hooks.md`). The hook clients
/// read it as text: keys in the order they have always had (sorted).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum StopOutput {
    /// `{}`: no decision (pass, or a failure reported on stderr).
    Silent {},
    /// `{"systemMessage": ...}`: pass, with a message for the user.
    Message {
        /// The message.
        #[serde(rename = "systemMessage")]
        system_message: String,
    },
    /// `{"decision": "block", "reason": ...}`: the agent must continue.
    Block {
        /// Always `block`.
        decision: &'static str,
        /// The sentence and its `Details:` JSON.
        reason: String,
    },
}

/// One failure of a blocked verdict: `{code, task_id?}` (no `task_id`
/// for a subject-level failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The failure code (a task state's code or a hook category).
    pub code: String,
    /// The task it concerns, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// The typed next operation of a blocked verdict, `{operation,
/// task_id?}`: the workflow's own hint ([`Next`]), one of
/// `collector_claim`, `reconcile` (each with its task),
/// `collector_finalize`, `checkpoint` or `none`.
pub use crate::contract::Next;

/// The `Details:` JSON of a block's reason (fields in sorted order, as
/// the hook has always printed them).
#[derive(Serialize)]
struct Detail<'a> {
    failures: &'a [Failure],
    next: &'a Next,
    next_action: &'a str,
}

/// The hook's verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The agent may finish.
    Pass,
    /// The agent must continue: typed failures and the typed next.
    Block {
        /// `{task_id?, code}` rows.
        failures: Vec<Failure>,
        /// `{operation, task_id?}`.
        next: Next,
    },
}

fn block(code: &str, next: Next) -> Verdict {
    Verdict::Block {
        failures: vec![Failure {
            code: code.to_owned(),
            task_id: None,
        }],
        next,
    }
}

fn none() -> Next {
    Next::none()
}

/// The local subject is not the one qualification describes (no
/// checkpoint, uncheckpointed or moved bytes): the one rule's answer for
/// a subject that is not current. Every other `next` comes from the
/// qualification answer, which the same rule computed.
fn checkpoint() -> Next {
    crate::contract::decide_next(crate::contract::SubjectStanding::Superseded, [])
}

/// The subject of a Change, as the hook compares it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Subject {
    version: u64,
    revision: String,
    context_digest: String,
    workspace: String,
    /// The landed revision, when the Change has landed (it is closed).
    landed: Option<String>,
}

impl Subject {
    /// Whether `named` (canonical) is the Change's workspace. A Change
    /// opened through the endpoint records no path (the authority never
    /// sees the client's): any workspace may be checked against its
    /// revision, and one that is not the checkpointed tree blocks as not
    /// checkpointed.
    fn is_workspace(&self, named: &str) -> bool {
        self.workspace
            .starts_with(change::ENDPOINT_WORKSPACE_PREFIX)
            || self.workspace == named
    }
}

/// Reads the local subject of a Change and, when `with_cache`, the stat
/// cache of its workspace (one read-only connection).
fn read_subject(
    data_dir: &Path,
    change_id: &str,
    with_cache: bool,
) -> Result<(Subject, Option<change::StatCache>), &'static str> {
    let (_dir, conn) =
        crate::workflow::service::admin::open_read(data_dir).map_err(|_| category::LOCAL_STORE)?;
    let ch = change::change(&conn, change_id).map_err(|_| category::LOCAL_STORE)?;
    if ch.version == 0 {
        return Err(category::NO_CHECKPOINT);
    }
    let s = change::current_subject(&conn, &ch).map_err(|_| category::LOCAL_STORE)?;
    let landed = change::landed(&conn, &ch.change_id)
        .map_err(|_| category::LOCAL_STORE)?
        .map(|l| l.revision);
    let cache = if with_cache {
        Some(change::load_stat_cache(&conn, &ch.workspace).map_err(|_| category::LOCAL_STORE)?)
    } else {
        None
    };
    Ok((
        Subject {
            version: ch.version,
            revision: s.context.revision.to_string(),
            context_digest: s.context_digest.to_string(),
            workspace: ch.workspace,
            landed,
        },
        cache,
    ))
}

fn is_hex64(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

fn is_code(s: &str) -> bool {
    (1..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn exact_keys(m: &Map<String, Value>, required: &[&str], optional: &[&str]) -> bool {
    required.iter().all(|k| m.contains_key(*k))
        && m.keys()
            .all(|k| required.contains(&k.as_str()) || optional.contains(&k.as_str()))
}

/// Strictly validates a qualification answer against the local subject
/// revision. Returns (qualified && subject_current, failures, next).
pub fn validate_answer(v: &Value, local_revision: &str) -> Option<(bool, Vec<Failure>, Next)> {
    let m = v.as_object()?;
    if !exact_keys(
        m,
        &[
            "qualified",
            "subject_current",
            "receipt_digest",
            "revision",
            "tasks",
            "failures",
            "next",
        ],
        &[],
    ) {
        return None;
    }
    let qualified = m.get("qualified")?.as_bool()?;
    let current = m.get("subject_current")?.as_bool()?;
    let receipt = m.get("receipt_digest")?;
    if !(receipt.is_null() || is_hex64(receipt)) || (qualified && receipt.is_null()) {
        return None;
    }
    if !is_hex64(m.get("revision")?) || m.get("revision")?.as_str()? != local_revision {
        return None;
    }
    let tasks = m.get("tasks")?.as_array()?;
    if tasks.len() > MAX_TASKS {
        return None;
    }
    for t in tasks {
        let t = t.as_object()?;
        if !exact_keys(
            t,
            &["task_id", "task_digest", "step_id", "required", "state"],
            &[],
        ) || !is_code(t.get("task_id")?.as_str()?)
            || !is_hex64(t.get("task_digest")?)
            || !is_code(t.get("step_id")?.as_str()?)
            || !t.get("required")?.is_boolean()
            || !matches!(
                t.get("state")?.as_str()?,
                "pending" | "claimed" | "succeeded" | "failed" | "uncertain" | "blocked"
            )
        {
            return None;
        }
    }
    let failures = m.get("failures")?.as_array()?;
    if failures.len() > MAX_FAILURES {
        return None;
    }
    let mut out = Vec::new();
    for f in failures {
        let f = f.as_object()?;
        if !exact_keys(f, &["task_id", "code"], &[]) {
            return None;
        }
        let tid = f.get("task_id")?.as_str()?;
        let code = f.get("code")?.as_str()?;
        // A subject-level failure (no task) carries an empty task_id.
        if !(tid.is_empty() || is_code(tid)) || !is_code(code) {
            return None;
        }
        out.push(Failure {
            code: code.to_owned(),
            task_id: (!tid.is_empty()).then(|| tid.to_owned()),
        });
    }
    let next = m.get("next")?.as_object()?;
    let op: &'static str = match next.get("operation")?.as_str()? {
        "collector_claim" => "collector_claim",
        "reconcile" => "reconcile",
        "collector_finalize" => "collector_finalize",
        "checkpoint" => "checkpoint",
        "none" => "none",
        _ => return None,
    };
    let with_task = matches!(op, "collector_claim" | "reconcile");
    if with_task {
        if !exact_keys(next, &["operation", "task_id"], &[])
            || !is_code(next.get("task_id")?.as_str()?)
        {
            return None;
        }
    } else if !exact_keys(next, &["operation"], &[]) {
        return None;
    }
    let next = if with_task {
        Next::task(op, next.get("task_id")?.as_str()?)
    } else {
        Next::op(op)
    };
    Some((qualified && current, out, next))
}

/// The body of an operation the hook asks the endpoint (fields in key
/// order, as the hook has always sent them).
#[derive(Serialize)]
struct Call<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    change_id: Option<&'a str>,
    operation: &'static str,
}

/// One operation on the endpoint's task route (30 s limit, no proxy, no
/// redirects, answer at most [`MAX_ANSWER`]), validated as its envelope;
/// failures are the fixed categories.
fn remote_call(
    r: &Remote,
    token: &str,
    body: &Call<'_>,
    operation: &str,
) -> Result<Value, &'static str> {
    let base = r.endpoint.trim_end_matches('/');
    let seg = |s: &str| {
        percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
    };
    let url = format!(
        "{base}/v1/hub/workspace/repositories/{}/profiles/{}/agent-tasks",
        seg(&r.repository),
        seg(&r.profile)
    );
    let agent: ureq::Agent = crate::net::client_builder(Some(REMOTE_TIMEOUT))
        .user_agent(concat!("agent-task-stop-hook/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let body = serde_json::to_string(body).map_err(|_| category::SERVICE)?;
    let mut resp = agent
        .post(&url)
        .header("authorization", &format!("Bearer {token}"))
        .header("content-type", "application/json")
        .header("accept", "application/json")
        .send(body.as_bytes())
        .map_err(|_| category::SERVICE)?;
    let status = resp.status().as_u16();
    if status == 401 || status == 403 {
        return Err(category::TOKEN_REJECTED);
    }
    if status != 200 {
        return Err(category::SERVICE);
    }
    let declared = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > MAX_ANSWER) {
        return Err(category::MALFORMED);
    }
    let bytes = resp
        .body_mut()
        .with_config()
        .limit(MAX_ANSWER)
        .read_to_vec()
        .map_err(|e| match e {
            ureq::Error::BodyExceedsLimit(_) => category::MALFORMED,
            _ => category::SERVICE,
        })?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| category::MALFORMED)?;
    let m = v.as_object().ok_or(category::MALFORMED)?;
    if !exact_keys(
        m,
        &["capability", "schema_version", "operation", "result"],
        &[],
    ) || m.get("capability").and_then(Value::as_str) != Some(CAPABILITY)
        || m.get("schema_version").and_then(Value::as_u64) != Some(1)
        || m.get("operation").and_then(Value::as_str) != Some(operation)
    {
        return Err(category::MALFORMED);
    }
    m.get("result").cloned().ok_or(category::MALFORMED)
}

fn remote_qualification(r: &Remote, token: &str, change_id: &str) -> Result<Value, &'static str> {
    remote_call(
        r,
        token,
        &Call {
            change_id: Some(change_id),
            operation: "qualification",
        },
        "qualification",
    )
}

/// The subject of a Change read through the endpoint (`change_subject`),
/// validated strictly: exactly `{change_id, version, revision,
/// context_digest, base_revision, workspace}`, the Change asked about,
/// digests 64 lowercase hex (null before the first checkpoint).
fn remote_subject(r: &Remote, token: &str, change_id: &str) -> Result<Subject, &'static str> {
    let v = remote_call(
        r,
        token,
        &Call {
            change_id: Some(change_id),
            operation: "change_subject",
        },
        "change_subject",
    )?;
    let m = v.as_object().ok_or(category::MALFORMED)?;
    if !exact_keys(
        m,
        &[
            "change_id",
            "version",
            "revision",
            "context_digest",
            "base_revision",
            "workspace",
        ],
        &["landed_revision"],
    ) || m.get("change_id").and_then(Value::as_str) != Some(change_id)
        || !is_hex64(m.get("base_revision").ok_or(category::MALFORMED)?)
    {
        return Err(category::MALFORMED);
    }
    let version = m
        .get("version")
        .and_then(Value::as_u64)
        .ok_or(category::MALFORMED)?;
    let workspace = m
        .get("workspace")
        .and_then(Value::as_str)
        .filter(|w| w.len() <= 4096)
        .ok_or(category::MALFORMED)?;
    let (rev, ctx) = (
        m.get("revision").ok_or(category::MALFORMED)?,
        m.get("context_digest").ok_or(category::MALFORMED)?,
    );
    if version == 0 {
        if !rev.is_null() || !ctx.is_null() {
            return Err(category::MALFORMED);
        }
        return Err(category::NO_CHECKPOINT);
    }
    if !is_hex64(rev) || !is_hex64(ctx) {
        return Err(category::MALFORMED);
    }
    let landed = match m.get("landed_revision") {
        None | Some(Value::Null) => None,
        Some(v) if is_hex64(v) => v.as_str().map(str::to_owned),
        Some(_) => return Err(category::MALFORMED),
    };
    Ok(Subject {
        version,
        revision: rev.as_str().unwrap_or_default().to_owned(),
        context_digest: ctx.as_str().unwrap_or_default().to_owned(),
        workspace: workspace.to_owned(),
        landed,
    })
}

/// Where the hook reads the subject: the local authority (the spec's
/// hook), or the endpoint when the local authority is not readable
/// (a privilege-separated agent holds only its token; `docs/security.md`).
enum Source<'a> {
    Local(&'a Path),
    Remote(&'a Remote),
}

impl Source<'_> {
    /// The subject, and with `with_cache` the stat cache of `named` (the
    /// checkpoint's, locally; the client's own for an endpoint).
    fn subject(
        &self,
        change_id: &str,
        token: &str,
        with_cache: Option<&str>,
    ) -> Result<(Subject, Option<change::StatCache>), &'static str> {
        match self {
            Source::Local(d) => read_subject(d, change_id, with_cache.is_some()),
            Source::Remote(r) => {
                let s = remote_subject(r, token, change_id)?;
                let cache = with_cache.map(|named| {
                    crate::remote::cache::path_for(named)
                        .map(|p| crate::remote::cache::load(&p, named))
                        .unwrap_or_default()
                });
                Ok((s, cache))
            }
        }
    }
}

/// Decides pass or block (read-only).
pub fn evaluate(r: &StopRequest<'_>) -> Verdict {
    evaluate_with(r, &|| {})
}

/// [`evaluate`], calling `idle` once on the calling thread while the
/// workspace walk runs (after the subject and the stat cache are loaded):
/// the hook writes a block's continuation count there.
fn evaluate_with(r: &StopRequest<'_>, idle: &dyn Fn()) -> Verdict {
    // The first scan's walk (stat only) starts first and runs while the
    // data directory opens, the token is read and the subject and the stat
    // cache load; it is abandoned unless the named workspace is the
    // change's. Every later step follows the loaded subject.
    let named = std::fs::canonicalize(&r.workspace)
        .ok()
        .and_then(|p| p.to_str().map(str::to_owned));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let started = std::thread::scope(|s| {
        let walk = named.as_deref().map(|p| {
            s.spawn(|| crate::workflow::service::snapshot::walk_tree(Path::new(p), &stop))
        });
        let abandon = |v: Verdict| {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            Err(v)
        };
        let local = r
            .data_dir
            .as_deref()
            .filter(|d| crate::workflow::service::admin::open_read(d).is_ok());
        let source = match (local, &r.remote) {
            (Some(d), _) => Source::Local(d),
            (None, Some(rm)) => Source::Remote(rm),
            (None, None) => return abandon(block(category::LOCAL_STORE, none())),
        };
        let token = match r.token_file.as_deref() {
            Some(p) if p.is_absolute() => {
                match crate::workflow::service::admin::read_token_file(p) {
                    Ok(t) => t,
                    Err(_) => return abandon(block(category::TOKEN, none())),
                }
            }
            _ => return abandon(block(category::TOKEN, none())),
        };
        let loaded = match named.as_deref() {
            Some(n) => source.subject(&r.change, &token, Some(n)),
            None => Err(category::WORKSPACE),
        };
        let mine = matches!((&loaded, &named), (Ok((b, _)), Some(p)) if b.is_workspace(p));
        if !mine {
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        } else {
            idle();
        }
        let walked = walk.and_then(|h| h.join().ok()).and_then(Result::ok);
        Ok((source, token, loaded, walked.filter(|_| mine)))
    });
    let (source, token, loaded, walked) = match started {
        Ok(s) => s,
        Err(v) => return v,
    };
    let (before, cache) = match loaded {
        Ok((s, Some(c))) => (s, c),
        Ok((_, None)) => return block(category::LOCAL_STORE, none()),
        Err(c) if c == category::NO_CHECKPOINT => return block(c, checkpoint()),
        Err(c) => return block(c, none()),
    };
    let Some(ws) = named.as_deref().filter(|n| before.is_workspace(n)) else {
        return block(category::WORKSPACE, none());
    };
    let ws = PathBuf::from(ws);
    // Stat-only against the checkpoint's cache; files read only on a miss.
    let Some(Ok(scan1)) =
        walked.map(|w| crate::workflow::service::snapshot::check_walked(w, &cache))
    else {
        return block(category::WORKSPACE, none());
    };
    // A landed Change is closed: its work is done when the workspace is
    // the landed revision; anything else belongs in a new Change.
    if let Some(landed) = &before.landed {
        if scan1.revision.as_str() == landed {
            return Verdict::Pass;
        }
        return block(category::LANDED, none());
    }
    // Uncheckpointed edits block whatever qualification would say: the
    // subject it would judge is not the workspace.
    if scan1.revision.as_str() != before.revision {
        return block(category::DIRTY, checkpoint());
    }
    let answer = match (&r.remote, &source) {
        (Some(rm), _) => remote_qualification(rm, &token, &r.change),
        (None, Source::Remote(_)) => Err(category::SERVICE),
        (None, Source::Local(data_dir)) => {
            let cx = AgentCtx {
                root: data_dir,
                timeout: r.timeout,
                clock: r.clock,
                token: &token,
                writer: None,
                scope: None,
            };
            crate::workflow::service::receipt::qualify(&cx, &ChangeSel::Id(r.change.clone()))
                .map_err(|e| match e.code() {
                    Code::Unauthorized | Code::Forbidden => category::TOKEN_REJECTED,
                    _ => category::LOCAL_STORE,
                })
        }
    };
    // The reads after the call. The subject is read again on every path
    // (one indexed read). The workspace is scanned again only when the
    // answer would let the agent stop: a block stays a block whatever a
    // second scan finds, and the agent's next attempt scans first.
    let after = source.subject(&r.change, &token, None).map(|(s, _)| s);
    let answer = match answer {
        Ok(a) => a,
        Err(c) => return block(c, none()),
    };
    match after {
        Ok(after) if after == before => {}
        _ => return block(category::CHANGED, checkpoint()),
    }
    let Some((ok, failures, next)) = validate_answer(&answer, &before.revision) else {
        return block(category::MALFORMED, none());
    };
    if !ok {
        return Verdict::Block { failures, next };
    }
    match crate::workflow::service::snapshot::check_readonly(&ws, &cache) {
        Ok(scan2) if scan2.revision == scan1.revision => Verdict::Pass,
        _ => block(category::CHANGED, checkpoint()),
    }
}

fn reason(failures: &[Failure], next: &Next, change_id: &str) -> String {
    let op = next.operation;
    let landed = failures.iter().any(|f| f.code == category::LANDED);
    let failed = matches!(op, "none" | "checkpoint")
        && failures
            .iter()
            .any(|f| f.task_id.is_some() && is_failed_task(&f.code));
    let failed_sentence;
    let action = if landed {
        LANDED_ACTION
    } else if failed && is_code(change_id) {
        failed_sentence = failed_action(change_id);
        failed_sentence.as_str()
    } else {
        next_action(op)
    };
    let detail = serde_json::to_string(&Detail {
        failures,
        next,
        next_action: action,
    })
    .unwrap_or_default();
    if landed {
        return format!(
            "agent-task: this change has landed, and the workspace is not the landed revision. {action} Details: {detail}"
        );
    }
    format!(
        "agent-task: this change is not qualified yet, so it cannot finish. {action} Details: {detail}"
    )
}

fn pass(message: Option<&str>) -> StopOutput {
    match message {
        Some(m) => StopOutput::Message {
            system_message: m.to_owned(),
        },
        None => StopOutput::Silent {},
    }
}

fn silent() -> StopOutcome {
    StopOutcome {
        exit_code: 0,
        stdout: StopOutput::Silent {},
        stderr: None,
    }
}

fn fail(msg: String) -> StopOutcome {
    StopOutcome {
        exit_code: 1,
        stdout: StopOutput::Silent {},
        stderr: Some(format!("agent-task stop hook: {msg}")),
    }
}

/// Runs the hook: payload, counter, verdict, output.
pub fn run(r: &StopRequest<'_>) -> StopOutcome {
    let payload = match decode_payload(r.flavor, r.stdin) {
        Ok(p) => p,
        Err(e) => return fail(format!("malformed stdin: {e}")),
    };
    // A user-level hook fires in every repository: outside its workspace
    // it is none of this hook's business, so it passes silently (no
    // decision, no counter, nothing read).
    if outside_workspace(&payload.cwd, &r.workspace) {
        return silent();
    }
    with_counter(&payload, r.counter_dir.as_deref(), &r.change, |ahead| {
        evaluate_with(r, ahead)
    })
}

/// The continuation counter around a verdict: after [`LIMIT`] blocks in
/// a row the agent may stop. `verdict` is given a callback that writes a
/// block's count ahead of the verdict (the hook calls it while its walk
/// runs, so that the write's fsync overlaps the walk): a pass then removes
/// the counter as it would have anyway, and a crash in between leaves a
/// count one higher, which only takes one continuation away.
fn with_counter(
    payload: &Payload,
    counter_dir: Option<&Path>,
    key: &str,
    verdict: impl FnOnce(&dyn Fn()) -> Verdict,
) -> StopOutcome {
    let counter = match counter_dir {
        Some(d) => Counter::in_dir(d, &payload.session_id, key),
        None => Counter::for_session(&payload.session_id, key),
    };
    let counter = match counter {
        Ok(c) => c,
        Err(_) => return fail("counter unavailable".into()),
    };
    let count = match counter.read() {
        Ok(Reading::Count(n)) => {
            if payload.stop_hook_active {
                n
            } else {
                0
            }
        }
        Ok(Reading::Unreadable) => {
            return StopOutcome {
                exit_code: 0,
                stdout: pass(Some(
                    "agent-task stop hook: continuation counter unreadable; not continuing",
                )),
                stderr: None,
            };
        }
        Err(_) => return fail("counter unreadable".into()),
    };
    if count >= LIMIT {
        if counter.reset().is_err() {
            return fail("counter error".into());
        }
        return StopOutcome {
            exit_code: 0,
            stdout: pass(Some(
                "agent-task stop hook: 8 continuations used; not continuing",
            )),
            stderr: None,
        };
    }
    let ahead: std::cell::Cell<Option<bool>> = std::cell::Cell::new(None);
    let write_ahead = || {
        if ahead.get().is_none() {
            ahead.set(Some(counter.write(count + 1).is_ok()));
        }
    };
    match verdict(&write_ahead) {
        Verdict::Pass => {
            if counter.reset().is_err() {
                return fail("counter error".into());
            }
            StopOutcome {
                exit_code: 0,
                stdout: pass(None),
                stderr: None,
            }
        }
        Verdict::Block { failures, next } => {
            let written = match ahead.get() {
                Some(ok) => ok,
                None => counter.write(count + 1).is_ok(),
            };
            if !written {
                return fail("counter error".into());
            }
            StopOutcome {
                exit_code: 0,
                stdout: StopOutput::Block {
                    decision: "block",
                    reason: reason(&failures, &next, key),
                },
                stderr: None,
            }
        }
    }
}

/// The machine-wide hook (`task-stop --managed`): the root-owned uid map,
/// the user's open Changes through its endpoint, then the per-Change
/// verdict. See [`managed`].
pub struct ManagedStopRequest<'a> {
    /// Claude Code or Codex.
    pub flavor: Flavor,
    /// The root-owned map (`/etc/agent-task/hooks.json`).
    pub map: PathBuf,
    /// The invoking user's real uid.
    pub uid: u32,
    /// The raw stdin payload.
    pub stdin: &'a [u8],
    /// Clock.
    pub clock: &'a dyn Clock,
    /// Lock wait.
    pub timeout: Duration,
    /// Where the continuation counter lives (`None`: the default state dir).
    pub counter_dir: Option<PathBuf>,
}

pub mod managed {
    //! The machine-wide Stop hook. The managed settings apply to every
    //! user, so the hook names no Change: it takes the invoking user's
    //! real uid (never the cwd or the environment, which the agent
    //! shapes), looks it up in a root-owned map, passes silently for a uid
    //! the map does not list, lists the user's open Changes through the
    //! endpoint the map names (`change_list`, with the token file the map
    //! names), and judges the Changes whose workspace holds the payload's
    //! cwd (then the endpoint's Changes, against the work tree around cwd)
    //! as the per-Change hook does (through the endpoint only: no data
    //! directory). A pass of any candidate passes.
    //!
    //! The map: `{"users": {"<uid>": {"endpoint", "repository", "profile",
    //! "token_file"}}}`; owned by root, not writable by group or others,
    //! in a directory of the same kind, not a symbolic link. A missing map
    //! guards nobody (silent pass); an unsafe or invalid one blocks every
    //! stop with `hook_map_unsafe` until the operator fixes it.

    use super::*;
    use serde::Deserialize;
    use std::collections::BTreeMap;

    /// Largest map read.
    pub const MAX_MAP: u64 = 1024 * 1024;
    /// Category: the map is not root-owned, writable by others, a
    /// symbolic link, or not a valid map.
    pub const MAP_UNSAFE: &str = "hook_map_unsafe";

    /// One user's entry.
    #[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
    #[serde(deny_unknown_fields)]
    pub struct MapEntry {
        /// Endpoint base URL.
        pub endpoint: String,
        /// Repository id of the workspace profile.
        pub repository: String,
        /// Profile id.
        pub profile: String,
        /// The user's token file (absolute).
        pub token_file: PathBuf,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct HooksMap {
        users: BTreeMap<String, MapEntry>,
    }

    fn safe(md: &std::fs::Metadata) -> bool {
        use std::os::unix::fs::MetadataExt;
        md.uid() == 0 && md.mode() & 0o022 == 0
    }

    /// The entry of `uid` in the map at `path`: `Ok(None)` when there is no
    /// map or it does not list `uid`; `Err(MAP_UNSAFE)` when the map (or
    /// its directory) is not root-owned, is writable by others, is a
    /// symbolic link, or does not parse.
    pub fn lookup(path: &Path, uid: u32) -> Result<Option<MapEntry>, &'static str> {
        let dir = path.parent().ok_or(MAP_UNSAFE)?;
        match std::fs::symlink_metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(_) => return Err(MAP_UNSAFE),
            Ok(m) if !m.is_file() => return Err(MAP_UNSAFE),
            Ok(_) => {}
        }
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.is_dir() && safe(&m) => {}
            _ => return Err(MAP_UNSAFE),
        }
        // The checks that count are on the opened file (no symlink followed).
        let f = crate::store::private_fs::open_nofollow_read(path).map_err(|_| MAP_UNSAFE)?;
        let md = f.metadata().map_err(|_| MAP_UNSAFE)?;
        if !md.is_file() || !safe(&md) {
            return Err(MAP_UNSAFE);
        }
        let mut bytes = Vec::new();
        f.take(MAX_MAP + 1)
            .read_to_end(&mut bytes)
            .map_err(|_| MAP_UNSAFE)?;
        if bytes.len() as u64 > MAX_MAP {
            return Err(MAP_UNSAFE);
        }
        let map: HooksMap = serde_json::from_slice(&bytes).map_err(|_| MAP_UNSAFE)?;
        if map.users.values().any(|e| !e.token_file.is_absolute()) {
            return Err(MAP_UNSAFE);
        }
        Ok(map.users.get(&uid.to_string()).cloned())
    }

    /// One open Change as `change_list` answers it.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Listed {
        /// Id.
        pub change_id: String,
        /// Workspace column (a path, or `endpoint:<id>`).
        pub workspace: String,
    }

    /// Strictly validates a `change_list` answer.
    pub fn validate_list(v: &Value) -> Option<Vec<Listed>> {
        let m = v.as_object()?;
        if !exact_keys(m, &["changes"], &[]) {
            return None;
        }
        let list = m.get("changes")?.as_array()?;
        if list.len() > crate::workflow::service::change::MAX_LISTED_CHANGES {
            return None;
        }
        let mut out = Vec::with_capacity(list.len());
        for c in list {
            let c = c.as_object()?;
            if !exact_keys(c, &["change_id", "version", "revision", "workspace"], &[]) {
                return None;
            }
            let id = c.get("change_id")?.as_str()?;
            let rev = c.get("revision")?;
            let ws = c.get("workspace")?.as_str()?;
            c.get("version")?.as_u64()?;
            if !is_code(id) || !(rev.is_null() || is_hex64(rev)) || ws.len() > 4096 {
                return None;
            }
            out.push(Listed {
                change_id: id.to_owned(),
                workspace: ws.to_owned(),
            });
        }
        Some(out)
    }

    /// The top of the work tree holding `cwd`: the nearest directory with
    /// a `.git` entry, else `cwd` itself (canonical).
    pub fn workspace_top(cwd: &str) -> Option<PathBuf> {
        let start = std::fs::canonicalize(cwd).ok()?;
        let mut cur = start.as_path();
        loop {
            if std::fs::symlink_metadata(cur.join(".git")).is_ok() {
                return Some(cur.to_path_buf());
            }
            match cur.parent() {
                Some(p) => cur = p,
                None => return Some(start),
            }
        }
    }

    /// Runs the machine-wide hook.
    pub fn run(r: &ManagedStopRequest<'_>) -> StopOutcome {
        let payload = match decode_payload(r.flavor, r.stdin) {
            Ok(p) => p,
            Err(e) => return fail(format!("malformed stdin: {e}")),
        };
        let counter_dir = r.counter_dir.as_deref();
        let key = "managed";
        let entry = match lookup(&r.map, r.uid) {
            Ok(Some(e)) => e,
            Ok(None) => return silent(),
            Err(c) => return with_counter(&payload, counter_dir, key, |_| block(c, none())),
        };
        let remote = Remote {
            endpoint: entry.endpoint.clone(),
            repository: entry.repository.clone(),
            profile: entry.profile.clone(),
        };
        let token = match crate::workflow::service::admin::read_token_file(&entry.token_file) {
            Ok(t) => t,
            Err(_) => {
                return with_counter(&payload, counter_dir, key, |_| {
                    block(category::TOKEN, none())
                });
            }
        };
        let listed = remote_call(
            &remote,
            &token,
            &Call {
                change_id: None,
                operation: "change_list",
            },
            "change_list",
        )
        .and_then(|v| validate_list(&v).ok_or(category::MALFORMED));
        let listed = match listed {
            Ok(l) => l,
            Err(c) => return with_counter(&payload, counter_dir, key, |_| block(c, none())),
        };
        let Some(top) = workspace_top(&payload.cwd) else {
            return silent();
        };
        let cwd = std::fs::canonicalize(&payload.cwd).unwrap_or_else(|_| top.clone());
        // The user's Changes whose workspace holds the payload's cwd
        // (innermost first), then the endpoint's Changes (which record no
        // path: the work tree around cwd is judged against them).
        let mut candidates: Vec<(&Listed, PathBuf)> = listed
            .iter()
            .filter(|c| Path::new(&c.workspace).is_absolute() && cwd.starts_with(&c.workspace))
            .map(|c| (c, PathBuf::from(&c.workspace)))
            .collect();
        candidates.sort_by_key(|(c, _)| std::cmp::Reverse(c.workspace.len()));
        candidates.extend(
            listed
                .iter()
                .filter(|c| {
                    c.workspace
                        .starts_with(crate::workflow::service::change::ENDPOINT_WORKSPACE_PREFIX)
                })
                .map(|c| (c, top.clone())),
        );
        if candidates.is_empty() {
            return silent();
        }
        with_counter(&payload, counter_dir, key, |_| {
            let mut first = None;
            for (c, workspace) in candidates {
                let req = StopRequest {
                    flavor: r.flavor,
                    change: c.change_id.clone(),
                    workspace,
                    data_dir: None,
                    token_file: Some(entry.token_file.clone()),
                    remote: Some(remote.clone()),
                    stdin: r.stdin,
                    clock: r.clock,
                    timeout: r.timeout,
                    counter_dir: None,
                };
                match evaluate(&req) {
                    Verdict::Pass => return Verdict::Pass,
                    b => {
                        first.get_or_insert(b);
                    }
                }
            }
            first.unwrap_or_else(|| block(category::WORKSPACE, none()))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const REV: &str = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";

    fn answer() -> Value {
        json!({"qualified": true, "subject_current": true, "receipt_digest": REV, "revision": REV,
               "tasks": [{"task_id": "t1", "task_digest": REV, "step_id": "tests", "required": true, "state": "succeeded"}],
               "failures": [], "next": {"operation": "none"}})
    }

    #[test]
    fn strict_answer_validation() {
        assert_eq!(validate_answer(&answer(), REV).map(|x| x.0), Some(true));
        let bad = |f: &dyn Fn(&mut Value)| {
            let mut a = answer();
            f(&mut a);
            validate_answer(&a, REV).is_none()
        };
        assert!(bad(&|a| a["revision"] = json!("b".repeat(64))));
        assert!(bad(&|a| a["revision"] = json!("A".repeat(64))));
        assert!(bad(&|a| a["extra"] = json!(1)));
        assert!(bad(&|a| a["next"] = json!({"operation": "rm -rf"})));
        assert!(bad(&|a| a["next"] = json!({"operation": "reconcile"})));
        assert!(bad(
            &|a| a["next"] = json!({"operation": "none", "task_id": "t"})
        ));
        assert!(bad(
            &|a| a["failures"] = json!(vec![json!({"task_id": "t", "code": "x"}); 33])
        ));
        assert!(bad(
            &|a| a["failures"] = json!([{"task_id": "t", "code": "has space"}])
        ));
        assert!(bad(&|a| a["receipt_digest"] = json!(null)));
        assert!(bad(&|a| a["tasks"][0]["state"] = json!("done")));
        let mut a = answer();
        a["qualified"] = json!(false);
        a["receipt_digest"] = json!(null);
        a["next"] = json!({"operation": "collector_claim", "task_id": "t1"});
        a["failures"] = json!([{"task_id": "t1", "code": "task_pending"}, {"task_id": "", "code": "receipt_missing"}]);
        let (ok, f, n) = validate_answer(&a, REV).expect("valid");
        assert!(!ok);
        assert_eq!(
            serde_json::to_value(&f[1]).expect("json"),
            json!({"code": "receipt_missing"})
        );
        assert_eq!(serde_json::to_value(&n).expect("json")["task_id"], "t1");
    }

    #[test]
    fn change_lists_are_validated_strictly() {
        let ok = json!({"changes": [
            {"change_id": "ch_1", "version": 0, "revision": null, "workspace": "/w"},
            {"change_id": "ch_2", "version": 3, "revision": REV, "workspace": "endpoint:ch_2"}]});
        let l = managed::validate_list(&ok).expect("valid");
        assert_eq!(l[1].workspace, "endpoint:ch_2");
        let bad = |f: &dyn Fn(&mut Value)| {
            let mut v = ok.clone();
            f(&mut v);
            managed::validate_list(&v).is_none()
        };
        assert!(bad(&|v| v["extra"] = json!(1)));
        assert!(bad(&|v| v["changes"][0]["owner_id"] = json!("bob")));
        assert!(bad(&|v| v["changes"][0]["change_id"] = json!("has space")));
        assert!(bad(&|v| v["changes"][1]["revision"] = json!("A".repeat(64))));
        assert!(bad(&|v| v["changes"][0]["version"] = json!(-1)));
        assert!(bad(
            &|v| v["changes"][0]["workspace"] = json!("x".repeat(4097))
        ));
        assert!(bad(
            &|v| v["changes"] = json!(vec![ok["changes"][0].clone(); 257])
        ));
    }

    #[test]
    fn payloads() {
        let claude = br#"{"session_id":"s","transcript_path":"/t","cwd":"/w","hook_event_name":"Stop","stop_hook_active":false}"#;
        assert!(decode_payload(Flavor::Claude, claude).is_ok());
        assert!(decode_payload(Flavor::Codex, claude).is_err());
        assert!(decode_payload(Flavor::Claude, b"nope").is_err());
        let wrong = br#"{"session_id":"s","transcript_path":"/t","cwd":"/w","hook_event_name":"PreToolUse","stop_hook_active":false}"#;
        assert!(decode_payload(Flavor::Claude, wrong).is_err());
    }

    #[test]
    fn a_count_written_ahead_is_the_blocks_and_a_pass_removes_it() {
        let t = tempfile::tempdir().expect("tmp");
        let dir = t.path().join("stop-hooks");
        let payload = Payload {
            session_id: "s".into(),
            cwd: "/w".into(),
            stop_hook_active: true,
        };
        let counter = Counter::in_dir(&dir, "s", "ch").expect("counter");
        let count = || counter.read().expect("read");
        let blocked = |ahead: &dyn Fn()| {
            ahead();
            // Asked twice, written once.
            ahead();
            block(category::DIRTY, checkpoint())
        };
        with_counter(&payload, Some(&dir), "ch", blocked);
        assert_eq!(count(), Reading::Count(1));
        // A verdict that never asks still counts its block once.
        with_counter(&payload, Some(&dir), "ch", |_| {
            block(category::DIRTY, checkpoint())
        });
        assert_eq!(count(), Reading::Count(2));
        // A pass after a count written ahead removes it.
        let o = with_counter(&payload, Some(&dir), "ch", |ahead| {
            ahead();
            Verdict::Pass
        });
        assert_eq!(o.exit_code, 0);
        assert_eq!(count(), Reading::Count(0));
    }
}
