//! `deploy check`: the privilege-separated set-up of `docs/security.md`,
//! checked before anything relies on it. Each check is reported with its
//! outcome and the command that fixes it; nothing is changed.
//!
//! Trust rules: root reads only root's or the operator's files here, and
//! stats (never follows) every path. What is the agent's (its token file)
//! or what must be closed to the agent (the key, the data and collector
//! directories) is tried by a forked child that has become the agent's
//! user ([`super::probe`]); no file content is printed.

use super::probe::{self, Try};
use crate::collector::wrapper;
use crate::error::{Error, Result};
use crate::store::private_fs;
use serde::Serialize;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Where the managed Stop hook is looked for.
#[derive(Debug, Clone)]
pub struct HookPaths {
    /// Claude Code's managed settings.
    pub claude: PathBuf,
    /// Codex's requirements.
    pub codex: PathBuf,
    /// agent-task's uid → endpoint map of the managed hook.
    pub map: PathBuf,
}

impl Default for HookPaths {
    fn default() -> Self {
        HookPaths {
            claude: PathBuf::from("/etc/claude-code/managed-settings.json"),
            codex: PathBuf::from("/etc/codex/requirements.toml"),
            map: PathBuf::from("/etc/agent-task/hooks.json"),
        }
    }
}

/// The endpoint to try with the agent's token.
#[derive(Debug, Clone)]
pub struct EndpointCheck {
    /// Base URL.
    pub url: String,
    /// The endpoint's repository id.
    pub repository: String,
    /// Profile id.
    pub profile: String,
    /// The agent's token file (read as the agent when run as root).
    pub token_file: PathBuf,
}

/// `deploy check` request.
#[derive(Debug, Clone)]
pub struct CheckRequest {
    /// The operator's data directory.
    pub data_dir: PathBuf,
    /// The operator's collector directory.
    pub collector_dir: PathBuf,
    /// The operator's user.
    pub operator_user: String,
    /// The agent's user.
    pub agent_user: String,
    /// The collect wrapper.
    pub wrapper: PathBuf,
    /// The sudoers rule.
    pub sudoers: PathBuf,
    /// The workspace config of `serve`, if it should be checked.
    pub workspace_config: Option<PathBuf>,
    /// The endpoint, if it should be tried.
    pub endpoint: Option<EndpointCheck>,
    /// The managed hook files.
    pub hooks: HookPaths,
    /// Check names or groups not to run (reported `skipped`).
    pub skip: Vec<String>,
}

/// One check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Holds.
    Ok,
    /// Does not hold: see `fix`.
    Fail,
    /// Not run (`--skip`, or it needs root).
    Skipped,
}

/// One check.
#[derive(Debug, Clone, Serialize)]
pub struct Check {
    /// Stable name.
    pub name: &'static str,
    /// Its group (what `--skip` also takes).
    pub group: &'static str,
    /// Outcome.
    pub status: Status,
    /// What was found.
    pub detail: String,
    /// What to run or change (empty when it holds).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub fix: String,
}

/// `deploy check` output.
#[derive(Debug, Serialize)]
pub struct CheckReport {
    /// True when no check failed.
    pub ok: bool,
    /// Checks that failed.
    pub failed: usize,
    /// Checks not run.
    pub skipped: usize,
    /// Every check, in order.
    pub checks: Vec<Check>,
}

/// The groups, in report order.
pub const GROUPS: &[&str] = &[
    "users", "paths", "config", "wrapper", "sudoers", "agent", "endpoint", "hooks",
];

struct Out {
    skip: Vec<String>,
    checks: Vec<Check>,
}

impl Out {
    fn wanted(&self, group: &str, name: &str) -> bool {
        !self.skip.iter().any(|s| s == group || s == name)
    }
    fn push(
        &mut self,
        group: &'static str,
        name: &'static str,
        r: std::result::Result<String, (String, String)>,
    ) {
        let c = match r {
            Ok(detail) => Check {
                name,
                group,
                status: Status::Ok,
                detail,
                fix: String::new(),
            },
            Err((detail, fix)) => Check {
                name,
                group,
                status: Status::Fail,
                detail,
                fix,
            },
        };
        self.checks.push(c);
    }
    fn skipped(&mut self, group: &'static str, name: &'static str, why: &str) {
        self.checks.push(Check {
            name,
            group,
            status: Status::Skipped,
            detail: why.to_owned(),
            fix: String::new(),
        });
    }
    /// Runs `f` unless skipped.
    fn run(
        &mut self,
        group: &'static str,
        name: &'static str,
        f: impl FnOnce() -> std::result::Result<String, (String, String)>,
    ) {
        if self.wanted(group, name) {
            let r = f();
            self.push(group, name, r);
        } else {
            self.skipped(group, name, "skipped (--skip)");
        }
    }
}

type Verdict = std::result::Result<String, (String, String)>;

fn fail(detail: impl Into<String>, fix: impl Into<String>) -> Verdict {
    Err((detail.into(), fix.into()))
}

fn err_text(e: &Error) -> String {
    e.message().to_owned()
}

fn shown(p: &Path) -> String {
    p.display().to_string()
}

/// A root-owned regular file no one else can write, in directories only
/// root can change.
/// `missing_fix` is the fix when it does not exist.
fn root_file(p: &Path, mode_exact: Option<u32>, missing_fix: &str) -> Verdict {
    let md = match std::fs::symlink_metadata(p) {
        Ok(md) => md,
        Err(e) => return fail(format!("{}: {e}", shown(p)), missing_fix),
    };
    let mode = md.permissions().mode() & 0o7777;
    if !md.is_file() || md.uid() != 0 || mode & 0o022 != 0 {
        return fail(
            format!(
                "{} must be a regular file owned by root, writable by no one else (uid {}, mode {mode:04o})",
                shown(p),
                md.uid()
            ),
            format!("chown root:root {0} && chmod go-w {0}", shown(p)),
        );
    }
    if let Some(want) = mode_exact
        && mode != want
    {
        return fail(
            format!("{} has mode {mode:04o}, not {want:04o}", shown(p)),
            format!("chmod {want:04o} {}", shown(p)),
        );
    }
    if let Some(dir) = p.parent()
        && let Err(e) = wrapper::check_ancestry(dir, 0)
    {
        return fail(
            err_text(&e),
            "keep it in directories owned by root and writable only by root",
        );
    }
    Ok(format!("{} root:{mode:04o}", shown(p)))
}

/// Reads a small root-owned file (already checked by [`root_file`]).
fn read_root_file(p: &Path) -> std::result::Result<String, String> {
    use std::io::Read;
    let mut s = String::new();
    private_fs::open_nofollow_read(p)
        .map_err(|e| err_text(&e))?
        .take(1 << 20)
        .read_to_string(&mut s)
        .map_err(|e| format!("{}: {e}", shown(p)))?;
    Ok(s)
}

/// Whether a Claude Code settings document registers an agent-task Stop
/// hook (`hooks.Stop[].hooks[].command` running `task-stop`).
pub fn claude_has_stop_hook(doc: &serde_json::Value) -> bool {
    doc.pointer("/hooks/Stop")
        .and_then(|v| v.as_array())
        .is_some_and(|groups| {
            groups.iter().any(|g| {
                g.get("hooks").and_then(|h| h.as_array()).is_some_and(|hs| {
                    hs.iter().any(|h| {
                        h.get("command")
                            .and_then(|c| c.as_str())
                            .is_some_and(runs_stop_hook)
                    })
                })
            })
        })
}

/// Whether a Codex `requirements.toml` registers an agent-task Stop hook:
/// a `command` line running `task-codex-stop` or `task-stop` inside a
/// `[[hooks.Stop]]` table or one below it.
pub fn codex_has_stop_hook(text: &str) -> bool {
    let mut in_stop = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            let name = line.trim_matches(|c| c == '[' || c == ']').trim();
            in_stop = name == "hooks.Stop" || name.starts_with("hooks.Stop.");
        } else if in_stop
            && let Some((key, value)) = line.split_once('=')
            && key.trim() == "command"
            && runs_stop_hook(value)
        {
            return true;
        }
    }
    false
}

fn runs_stop_hook(cmd: &str) -> bool {
    cmd.split(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == ',')
        .any(|w| w == "task-stop" || w == "task-codex-stop")
}

/// Whether the managed hook's map (`/etc/agent-task/hooks.json`) has an
/// entry for `uid`: a key equal to the uid, or an object whose `uid` is it.
pub fn map_has_uid(doc: &serde_json::Value, uid: u32) -> bool {
    match doc {
        serde_json::Value::Object(m) => {
            m.contains_key(&uid.to_string())
                || m.get("uid").and_then(|u| u.as_u64()) == Some(u64::from(uid))
                || m.values().any(|v| map_has_uid(v, uid))
        }
        serde_json::Value::Array(a) => a.iter().any(|v| map_has_uid(v, uid)),
        _ => false,
    }
}

/// Runs every check; never fails for what it finds (that is the report),
/// only for what stops it from checking at all.
pub fn run(r: &CheckRequest) -> Result<CheckReport> {
    for s in &r.skip {
        if !GROUPS.contains(&s.as_str()) && !CHECK_NAMES.contains(&s.as_str()) {
            return Err(Error::new(
                crate::error::Code::Usage,
                format!("--skip {s}: not a check or group ({})", GROUPS.join(", ")),
            ));
        }
    }
    let mut o = Out {
        skip: r.skip.clone(),
        checks: Vec::new(),
    };
    let is_root = rustix::process::geteuid().is_root();
    let op = &r.operator_user;
    let agent = &r.agent_user;
    let op_ids = wrapper::user_ids(op);
    let agent_ids = probe::identity(agent);
    let op_uid = op_ids.as_ref().ok().map(|i| i.0);

    o.run("users", "users", || match (&op_ids, &agent_ids) {
        (Err(e), _) | (_, Err(e)) => fail(err_text(e), "create the user (useradd), or name the right one"),
        (Ok((ou, _)), Ok(a)) if a.uid == 0 || a.uid == *ou => fail(
            format!("the agent's user {agent} (uid {}) must be unprivileged and not the operator (uid {ou})", a.uid),
            "run the agent as its own unprivileged user",
        ),
        (Ok((ou, _)), Ok(a)) => Ok(format!("operator {op} uid {ou}, agent {agent} uid {}", a.uid)),
    });

    let uid = op_uid.unwrap_or(u32::MAX);
    let (data, coll) = (&r.data_dir, &r.collector_dir);
    let key = coll.join(crate::contract::KEY_FILE);
    let private_dir = |what: &str, p: &Path| -> Verdict {
        match wrapper::operator_private_dir(what, p, uid) {
            Ok(()) => Ok(format!(
                "{} {op}:0700, parents root's or {op}'s, not writable by others",
                shown(p)
            )),
            Err(e) => fail(
                err_text(&e),
                format!(
                    "chown {op}: {0} && chmod 0700 {0}; chmod go-w on each parent",
                    shown(p)
                ),
            ),
        }
    };
    o.run("paths", "data_dir", || {
        private_dir("the data directory", data)
    });
    o.run("paths", "collector_dir", || {
        private_dir("the collector directory", coll)
    });
    o.run("paths", "signing_key", || {
        match std::fs::symlink_metadata(&key) {
            Ok(md) if md.is_file() && md.uid() == uid && md.permissions().mode() & 0o077 == 0 => {
                Ok(format!(
                    "{} {op}:{:04o}",
                    shown(&key),
                    md.permissions().mode() & 0o7777
                ))
            }
            Ok(md) => fail(
                format!(
                    "{} (uid {}, mode {:04o}) must be a regular file of {op}, mode 0600",
                    shown(&key),
                    md.uid(),
                    md.permissions().mode() & 0o7777
                ),
                format!("chown {op}: {0} && chmod 0600 {0}", shown(&key)),
            ),
            Err(e) => fail(
                format!("{}: {e}", shown(&key)),
                format!("as {op}: agent-task keygen --collector-dir {}", shown(coll)),
            ),
        }
    });

    match &r.workspace_config {
        None => o.skipped("config", "workspace_config", "no --workspace-config"),
        Some(w) => o.run("config", "workspace_config", || {
            let md = match std::fs::symlink_metadata(w) {
                Ok(md) => md,
                Err(e) => {
                    return fail(
                        format!("{}: {e}", shown(w)),
                        format!(
                            "as {op}: agent-task --data-dir {} deploy config --out {}",
                            shown(data),
                            shown(w)
                        ),
                    );
                }
            };
            if !md.is_file() || md.uid() != uid || md.permissions().mode() & 0o077 != 0 {
                return fail(
                    format!(
                        "{} (uid {}, mode {:04o}) must be {op}'s regular file, mode 0600",
                        shown(w),
                        md.uid(),
                        md.permissions().mode() & 0o7777
                    ),
                    format!("chown {op}: {0} && chmod 0600 {0}", shown(w)),
                );
            }
            let c = match crate::workflow::service::facade::WorkspaceConfig::load(w) {
                Ok(c) => c,
                Err(e) => {
                    return fail(
                        err_text(&e),
                        format!(
                            "as {op}: agent-task --data-dir {} deploy config --out {} --force",
                            shown(data),
                            shown(w)
                        ),
                    );
                }
            };
            if let Some(p) = c.agent_task_profiles.iter().find(|p| p.data_dir != *data) {
                return fail(
                    format!(
                        "profile {}/{} serves {}, not {}",
                        p.repository_id,
                        p.profile_id,
                        p.data_dir.display(),
                        shown(data)
                    ),
                    format!(
                        "as {op}: agent-task --data-dir {} deploy config --out {} --force",
                        shown(data),
                        shown(w)
                    ),
                );
            }
            Ok(format!(
                "{} {op}:0600, {} profile(s) on {}",
                shown(w),
                c.agent_task_profiles.len(),
                shown(data)
            ))
        }),
    }

    // The wrapper: root's, and exactly the script `collector wrapper` writes for these pins.
    let mut binary: Option<String> = None;
    let wrapper_fix = format!(
        "as root: agent-task --data-dir {} collector wrapper --out {} --collector-dir {} --binary BINARY --operator-user {op} --agent-user {agent} --sudoers-out {} --endpoint URL --repository R --profile P",
        shown(data),
        shown(&r.wrapper),
        shown(coll),
        shown(&r.sudoers)
    );
    o.run("wrapper", "wrapper", || {
        root_file(&r.wrapper, None, &wrapper_fix)?;
        let text = read_root_file(&r.wrapper).map_err(|d| (d, wrapper_fix.clone()))?;
        let Some(pins) = wrapper::parse_pins(&text) else {
            return fail(
                format!(
                    "{} is not a script `collector wrapper` writes (edited, or another version)",
                    shown(&r.wrapper)
                ),
                wrapper_fix.clone(),
            );
        };
        binary = Some(pins.binary.clone());
        let mut want = vec![
            ("data directory", pins.data_dir.as_str(), shown(data)),
            (
                "collector directory",
                pins.collector_dir.as_str(),
                shown(coll),
            ),
            ("operator", pins.operator.as_str(), op.clone()),
        ];
        // The serve the wrapper's collect uploads to must be the one the
        // agent is told to use, for the same workspace route.
        if let Some(ep) = &r.endpoint {
            want.push((
                "endpoint",
                pins.endpoint.as_str(),
                ep.url.trim_end_matches('/').to_owned(),
            ));
            want.push(("repository", pins.repository.as_str(), ep.repository.clone()));
            want.push(("profile", pins.profile.as_str(), ep.profile.clone()));
        }
        for (what, got, want) in want {
            if got != want {
                return fail(
                    format!("the wrapper pins the {what} {got}, not {want}"),
                    wrapper_fix.clone(),
                );
            }
        }
        Ok(format!(
            "{} pins {} --data-dir {} --collector-dir {} --endpoint {} --repository {} --profile {} for {op}",
            shown(&r.wrapper),
            pins.binary,
            pins.data_dir,
            pins.collector_dir,
            pins.endpoint,
            pins.repository,
            pins.profile
        ))
    });
    o.run("wrapper", "binary", || match &binary {
        None => fail(
            "no binary: the wrapper's pins could not be read",
            wrapper_fix.clone(),
        ),
        Some(b) => {
            let p = Path::new(b);
            root_file(p, None, &wrapper_fix)?;
            Ok(format!("{b} is root's and writable only by root"))
        }
    });

    let rule_fix = wrapper_fix.clone();
    o.run("sudoers", "sudoers", || {
        root_file(&r.sudoers, Some(0o440), &rule_fix)?;
        let name = r
            .sudoers
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.contains('.') || name.ends_with('~') {
            return fail(
                format!(
                    "sudo ignores {}: its name has a dot or ends with ~",
                    shown(&r.sudoers)
                ),
                rule_fix.clone(),
            );
        }
        let text = read_root_file(&r.sudoers).map_err(|d| (d, rule_fix.clone()))?;
        let want = wrapper::sudoers_rule(&shown(&r.wrapper), agent, op);
        if text != want {
            return fail(
                format!(
                    "{} is not exactly the rule for {agent} → {op} running {}",
                    shown(&r.sudoers),
                    shown(&r.wrapper)
                ),
                rule_fix.clone(),
            );
        }
        let Some(v) = wrapper::find_visudo() else {
            return fail(
                "visudo is not installed: the rule cannot be checked",
                "install sudo",
            );
        };
        match std::process::Command::new(&v)
            .arg("-c")
            .arg("-f")
            .arg(&r.sudoers)
            .stdin(std::process::Stdio::null())
            .output()
        {
            Ok(out) if out.status.success() => Ok(format!(
                "{} is the exact rule; visudo -c -f passed",
                shown(&r.sudoers)
            )),
            Ok(out) => fail(
                format!(
                    "visudo -c -f refused {}: {}",
                    shown(&r.sudoers),
                    String::from_utf8_lossy(&out.stdout).trim()
                ),
                rule_fix.clone(),
            ),
            Err(e) => fail(format!("running {}: {e}", v.display()), "install sudo"),
        }
    });

    // As the agent: the key and the stores stay closed; the token is read there.
    let authority = data.join(crate::workflow::authority::schema::SPEC.file);
    let attempts: [(&'static str, &Path, Try); 4] = [
        ("agent_cannot_read_key", &key, Try::ReadFile),
        ("agent_cannot_list_data_dir", data, Try::ListDir),
        ("agent_cannot_read_authority", &authority, Try::ReadFile),
        ("agent_cannot_list_collector_dir", coll, Try::ListDir),
    ];
    let wanted: Vec<bool> = attempts
        .iter()
        .map(|(n, _, _)| o.wanted("agent", n))
        .collect();
    let token_wanted = r.endpoint.is_some() && o.wanted("endpoint", "endpoint");
    let mut token: Option<std::result::Result<Vec<u8>, String>> = None;
    let probe_report = match (&agent_ids, is_root) {
        (Ok(id), true) if wanted.iter().any(|w| *w) || token_wanted => {
            let tries: Vec<(&Path, Try)> = attempts.iter().map(|(_, p, t)| (*p, *t)).collect();
            let tf = if token_wanted {
                r.endpoint.as_ref().map(|e| e.token_file.as_path())
            } else {
                None
            };
            Some(probe::run(id, &tries, tf))
        }
        _ => None,
    };
    for (i, (name, path, _)) in attempts.iter().enumerate() {
        if !wanted[i] {
            o.skipped("agent", name, "skipped (--skip)");
            continue;
        }
        match &probe_report {
            None if !is_root => o.skipped("agent", name, "needs root (to try as the agent's user)"),
            None => o.push(
                "agent",
                name,
                fail(
                    format!("no agent user {agent} to try as"),
                    "name the agent's user",
                ),
            ),
            Some(Err(e)) => o.push("agent", name, fail(err_text(e), "run deploy check as root")),
            Some(Ok(rep)) => {
                let v = match rep.outcomes.get(i).copied().flatten() {
                    Some(e) => Ok(format!(
                        "as {agent}: {}: {}",
                        shown(path),
                        probe::errno_text(e)
                    )),
                    None => fail(
                        format!("as {agent}: {} OPENED: the agent can read it", shown(path)),
                        format!(
                            "chown {op}: {0} && chmod go-rwx {0}; chmod go-rwx its parents up to a directory {agent} cannot search",
                            shown(path)
                        ),
                    ),
                };
                o.push("agent", name, v);
            }
        }
    }
    if let Some(Ok(rep)) = &probe_report
        && let Some(t) = &rep.token
    {
        token = Some(
            t.clone()
                .map_err(|e| format!("as {agent}: the token file: {}", probe::errno_text(e))),
        );
    }

    match &r.endpoint {
        None => o.skipped("endpoint", "endpoint", "no --endpoint"),
        Some(ep) => o.run("endpoint", "endpoint", || {
            let bytes = match token.take() {
                Some(Ok(b)) => b,
                Some(Err(d)) => return fail(d, format!("give the agent's token file to {agent}, mode 0600 (not a symlink)")),
                None if is_root => return fail("the token file was not read", "run deploy check as root"),
                // Not root: only a token file of the caller's own is read.
                None => match crate::workflow::authority::admin::read_token_file(&ep.token_file) {
                    Ok(t) => t.into_bytes(),
                    Err(e) => return fail(err_text(&e), "pass a token file you own (0600), or run as root"),
                },
            };
            let text = String::from_utf8_lossy(&bytes);
            let token = text.lines().next().unwrap_or_default().trim_end_matches('\r').to_owned();
            let client = crate::remote::Client::new(
                crate::remote::Endpoint {
                    base: ep.url.clone(),
                    repository: ep.repository.clone(),
                    profile: ep.profile.clone(),
                },
                token,
            )
            .map_err(|e| (err_text(&e), "pass --endpoint http://HOST:PORT".to_owned()))?;
            match client.op(&crate::workflow::service::facade::OperationRequest::Capabilities {}) {
                Ok(_) => Ok(format!("{} answered capabilities for {}/{} with the agent's token", ep.url, ep.repository, ep.profile)),
                Err(e) => fail(
                    format!("{}: {} ({})", ep.url, err_text(&e), e.code().as_str()),
                    format!("as {op}: agent-task --data-dir {} serve --workspace-config W (deploy config writes W); token issue for the agent if it is revoked", shown(data)),
                ),
            }
        }),
    }

    let hook_fix = "as root: agent-task install-stop --managed (docs/hooks.md)";
    o.run("hooks", "hook_claude_managed", || {
        root_file(&r.hooks.claude, None, hook_fix)?;
        let text = read_root_file(&r.hooks.claude).map_err(|d| (d, hook_fix.to_owned()))?;
        let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            (
                format!("{} is not JSON: {e}", shown(&r.hooks.claude)),
                hook_fix.to_owned(),
            )
        })?;
        if claude_has_stop_hook(&doc) {
            Ok(format!(
                "{} registers the task-stop hook",
                shown(&r.hooks.claude)
            ))
        } else {
            fail(
                format!("{} has no task-stop Stop hook", shown(&r.hooks.claude)),
                hook_fix,
            )
        }
    });
    o.run("hooks", "hook_codex_managed", || {
        root_file(&r.hooks.codex, None, hook_fix)?;
        let text = read_root_file(&r.hooks.codex).map_err(|d| (d, hook_fix.to_owned()))?;
        if codex_has_stop_hook(&text) {
            Ok(format!("{} registers the Stop hook", shown(&r.hooks.codex)))
        } else {
            fail(
                format!("{} has no task-stop Stop hook", shown(&r.hooks.codex)),
                hook_fix,
            )
        }
    });
    o.run("hooks", "hook_map", || {
        root_file(&r.hooks.map, None, hook_fix)?;
        let text = read_root_file(&r.hooks.map).map_err(|d| (d, hook_fix.to_owned()))?;
        let doc: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
            (
                format!("{} is not JSON: {e}", shown(&r.hooks.map)),
                hook_fix.to_owned(),
            )
        })?;
        match &agent_ids {
            Ok(a) if map_has_uid(&doc, a.uid) => Ok(format!(
                "{} maps {agent} (uid {})",
                shown(&r.hooks.map),
                a.uid
            )),
            Ok(a) => fail(
                format!(
                    "{} has no entry for {agent} (uid {})",
                    shown(&r.hooks.map),
                    a.uid
                ),
                hook_fix,
            ),
            Err(e) => fail(err_text(e), "name the agent's user"),
        }
    });

    let failed = o.checks.iter().filter(|c| c.status == Status::Fail).count();
    let skipped = o
        .checks
        .iter()
        .filter(|c| c.status == Status::Skipped)
        .count();
    Ok(CheckReport {
        ok: failed == 0,
        failed,
        skipped,
        checks: o.checks,
    })
}

/// Every check name, in report order.
pub const CHECK_NAMES: &[&str] = &[
    "users",
    "data_dir",
    "collector_dir",
    "signing_key",
    "workspace_config",
    "wrapper",
    "binary",
    "sudoers",
    "agent_cannot_read_key",
    "agent_cannot_list_data_dir",
    "agent_cannot_read_authority",
    "agent_cannot_list_collector_dir",
    "endpoint",
    "hook_claude_managed",
    "hook_codex_managed",
    "hook_map",
];

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn managed_hooks_are_found_by_their_stop_command() {
        let claude = json!({"allowManagedHooksOnly": true, "hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "/usr/local/bin/agent-task task-stop --managed"}]}]}});
        assert!(claude_has_stop_hook(&claude));
        assert!(!claude_has_stop_hook(
            &json!({"hooks": {"Stop": [{"hooks": [
            {"type": "command", "command": "/bin/echo task-stopped"}]}]}})
        ));
        assert!(!claude_has_stop_hook(
            &json!({"hooks": {"PreToolUse": [{"hooks": [
            {"type": "command", "command": "agent-task task-stop"}]}]}})
        ));
        let codex = "model = \"x\"\n[[hooks.Stop]]\n[[hooks.Stop.hooks]]\ntype = \"command\"\ncommand = \"/usr/local/bin/agent-task task-codex-stop --managed\"\n";
        assert!(codex_has_stop_hook(codex));
        assert!(!codex_has_stop_hook(
            "[other]\ncommand = \"agent-task task-codex-stop\"\n"
        ));
        assert!(map_has_uid(
            &json!({"users": {"1001": {"endpoint": "http://x"}}}),
            1001
        ));
        assert!(map_has_uid(&json!([{"uid": 1001}]), 1001));
        assert!(!map_has_uid(&json!({"users": {"1002": {}}}), 1001));
    }

    #[test]
    fn every_check_name_is_listed_once() {
        let r = CheckRequest {
            data_dir: "/nonexistent/d".into(),
            collector_dir: "/nonexistent/c".into(),
            operator_user: "root".into(),
            agent_user: "no-such-user-agent-task".into(),
            wrapper: "/nonexistent/w".into(),
            sudoers: "/nonexistent/s".into(),
            workspace_config: None,
            endpoint: None,
            hooks: HookPaths {
                claude: "/nonexistent/a".into(),
                codex: "/nonexistent/b".into(),
                map: "/nonexistent/m".into(),
            },
            skip: vec!["agent".into()],
        };
        let rep = run(&r).expect("report");
        let names: Vec<&str> = rep.checks.iter().map(|c| c.name).collect();
        assert_eq!(names, CHECK_NAMES);
        assert!(!rep.ok);
        assert!(
            rep.checks
                .iter()
                .all(|c| c.status != Status::Fail || !c.fix.is_empty())
        );
        let mut bad = r.clone();
        bad.skip = vec!["nope".into()];
        assert!(run(&bad).is_err());
    }
}
